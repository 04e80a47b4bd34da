// SPDX-License-Identifier: GPL-2.0
/*
 * Senders named: a pid at a moment (the record's receive) -> comm, cgroup,
 * unit, container.
 *
 * A sender still running is read from /proc/PID; one that exited was kept
 * by the kernel side at its exit (exited_procs: comm, cgroup path, start).
 * Each is checked against the record's time: a pid whose process started
 * after the record was reused, and the record's sender is the exited one,
 * if its exit was kept.  Cached per pid; a cached process is taken as the
 * sender of records up to when it was last seen alive, and for
 * CHECK_EVERY_S after that without looking again (a pid reused or a
 * process renamed by an exec within that is not told).
 */
#include <bpf/bpf.h>
#include <ctype.h>
#include <fcntl.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util.h"
#include "sys/senders.h"

#define CHECK_EVERY_S	0.1	/* a live sender's /proc looked at again */

const char *const sender_state_names[SENDER_NR_STATES] = {
	[SENDER_SELF] = "self", [SENDER_LIVE] = "live", [SENDER_EXITED] = "exited",
	[SENDER_GONE] = "gone", [SENDER_REUSED] = "reused", [SENDER_KERNEL] = "kernel",
	[SENDER_NOCREDS] = "no_credentials", [SENDER_SEVERAL] = "several",
};

struct live_proc {
	__u32 pid;		/* first: the key */
	__u64 start_ns;		/* CLOCK_BOOTTIME, to the clock tick */
	__u64 seen_ns;		/* last seen alive, CLOCK_BOOTTIME */
	double checked;		/* now_s() then */
	struct sender who;
};

struct senders {
	int exited_fd;
	void *procs;		/* tsearch tree of struct live_proc */
	long tick_hz;
	struct sender out;
};

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

struct senders *senders_new(int exited_fd)
{
	struct senders *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->exited_fd = exited_fd;
	s->tick_hz = sysconf(_SC_CLK_TCK);
	if (s->tick_hz <= 0)
		s->tick_hz = 100;
	return s;
}

void senders_free(struct senders *s)
{
	if (!s)
		return;
	tdestroy(s->procs, free);
	free(s);
}

void sender_parse_cgroup(const char *path, char *unit, size_t unit_len,
			 char *container, size_t container_len)
{
	static const char *const types[] = { ".service", ".scope", ".socket", ".mount",
		".swap", ".target", ".timer", ".path", ".device", ".automount" };
	const char *p = path, *hex = NULL;
	size_t run = 0;

	unit[0] = container[0] = '\0';
	/* A container runtime names its cgroup by the container's id: 64 hex
	 * digits (docker-ID.scope, cri-containerd-ID.scope, /docker/ID). */
	for (const char *c = path; *c; c++) {
		run = isxdigit((unsigned char)*c) && !isupper((unsigned char)*c) ? run + 1 : 0;
		if (run == 64 && !isxdigit((unsigned char)c[1])) {
			hex = c - 63;
			break;
		}
	}
	if (hex && container_len > 64)
		snprintf(container, container_len, "%.64s", hex);
	/* systemd's unit: the first component that is not a slice. */
	while (*p) {
		size_t n;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (!n)
			break;
		if (n > 6 && !strncmp(p + n - 6, ".slice", 6)) {
			p += n;
			continue;
		}
		for (size_t i = 0; i < ARRAY_SIZE(types); i++) {
			size_t t = strlen(types[i]);

			if (n > t && !strncmp(p + n - t, types[i], t) && n < unit_len) {
				snprintf(unit, unit_len, "%.*s", (int)n, p);
				break;
			}
		}
		break;
	}
}

/* Read a small /proc file into buf (NUL-ended); false if none. */
static bool read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return false;
	buf[n] = '\0';
	return true;
}

/* A process's start, CLOCK_BOOTTIME ns to the tick: /proc/PID/stat's
 * 22nd field.  0 if it is gone; *dead: it exited, not yet reaped (a
 * zombie's /proc has lost its cgroup: its kept exit has it). */
static __u64 proc_start_ns(const struct senders *s, __u32 pid, bool *dead)
{
	char path[64], buf[1024], *p, state;
	unsigned long long ticks;

	*dead = false;
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	if (!read_small(path, buf, sizeof(buf)))
		return 0;
	p = strrchr(buf, ')');	/* comm may hold spaces and parentheses */
	if (!p || sscanf(p + 2, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u "
			 "%*d %*d %*d %*d %*d %*d %llu", &state, &ticks) != 2)
		return 0;
	*dead = state == 'Z' || state == 'X';
	return ticks * (1000000000ULL / s->tick_hz);
}

/* The cgroup v2 path in /proc/PID/cgroup ("0::PATH"), where the kernel
 * side's bpf_get_current_cgroup_id looks too. */
static void proc_cgroup(__u32 pid, char *out, size_t len)
{
	char path[64], buf[4096], *line;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	if (!read_small(path, buf, sizeof(buf)))
		return;
	for (line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
		if (!strncmp(line, "0::", 3)) {
			snprintf(out, len, "%s", line + 3);
			return;
		}
}

static void fill_names(struct sender *w)
{
	sender_parse_cgroup(w->cgroup, w->unit, sizeof(w->unit), w->container,
			    sizeof(w->container));
}

/* The cgroup path kept at a process's exit: its components, leaf first,
 * joined from the root ("/..." where the path was deeper). */
static void exited_cgroup(const struct amp_exited_proc *x, char *out, size_t len)
{
	size_t n = 0;

	out[0] = '\0';
	if (x->cg_deeper)
		n += snprintf(out, len, "/...");
	for (int i = (int)x->cg_depth - 1; i >= 0 && i < AMP_CG_DEPTH && n < len; i--)
		n += snprintf(out + n, len - n, "/%.*s", AMP_CG_NAME_LEN, x->cg_names[i]);
	if (!x->cg_depth && !x->cg_deeper)
		snprintf(out, len, "/");
}

/* ---------------------------------------------------------- the lookup --- */

/* pid as the sender of a record at `at` (CLOCK_BOOTTIME). */
static void resolve(struct senders *s, __u32 pid, __u64 at, struct sender *w)
{
	struct live_proc key = { .pid = pid }, *lp, **found;
	struct amp_exited_proc x;
	char path[64];
	__u64 start;
	bool dead;

	found = tfind(&key, &s->procs, cmp_u32);
	lp = found ? *found : NULL;
	if (lp && lp->start_ns <= at &&
	    (at <= lp->seen_ns || now_s() - lp->checked < CHECK_EVERY_S)) {
		*w = lp->who;
		return;
	}
	start = proc_start_ns(s, pid, &dead);
	if (start && start <= at && !dead) {
		if (!lp) {
			lp = calloc(1, sizeof(*lp));
			if (!lp)
				goto exited;
			lp->pid = pid;
			if (!tsearch(lp, &s->procs, cmp_u32)) {
				free(lp);
				goto exited;
			}
		}
		/*
		 * Named again at each look, not only when the pid is new: an
		 * exec renames a process (systemd's "(sh)" child, which writes
		 * a stream's header, becomes "sh") and a process may move to
		 * another cgroup.
		 */
		lp->start_ns = start;
		memset(&lp->who, 0, sizeof(lp->who));
		lp->who.state = SENDER_LIVE;
		lp->who.pid = pid;
		snprintf(path, sizeof(path), "/proc/%u/comm", pid);
		if (read_small(path, lp->who.comm, sizeof(lp->who.comm)))
			lp->who.comm[strcspn(lp->who.comm, "\n")] = '\0';
		proc_cgroup(pid, lp->who.cgroup, sizeof(lp->who.cgroup));
		fill_names(&lp->who);
		lp->seen_ns = clock_ns(CLOCK_BOOTTIME);
		lp->checked = now_s();
		*w = lp->who;
		return;
	}
exited:
	memset(w, 0, sizeof(*w));
	w->pid = pid;
	if (s->exited_fd >= 0 && !bpf_map_lookup_elem(s->exited_fd, &pid, &x) &&
	    x.start_ns <= at) {
		w->state = SENDER_EXITED;
		memcpy(w->comm, x.comm, sizeof(w->comm));
		w->comm[sizeof(w->comm) - 1] = '\0';
		exited_cgroup(&x, w->cgroup, sizeof(w->cgroup));
		fill_names(w);
		return;
	}
	w->state = start && !dead ? SENDER_REUSED : SENDER_GONE;
}

/* A receive's entry: a syscall, and no file (a write has its file). */
static bool entry_is_receive(const struct amp_entry *e)
{
	return e->syscall_nr >= 0 && !e->fd_ino;
}

/* Who sent the record received (how, pid, uid as the kernel side read
 * them), at t_ns: into w. */
static void sender_named(struct senders *s, __u8 how, __u32 pid, __u32 uid, __u64 t_ns,
			 struct sender *w)
{
	switch (how) {
	case AMP_SENDER_CREDS:
		resolve(s, pid, t_ns, w);
		w->uid = uid;
		return;
	case AMP_SENDER_KERNEL:
		memset(w, 0, sizeof(*w));
		w->state = SENDER_KERNEL;
		w->uid = 0;
		return;
	case AMP_SENDER_SEVERAL:
		memset(w, 0, sizeof(*w));
		w->state = SENDER_SEVERAL;
		w->uid = (__u32)-1;
		return;
	default:
		memset(w, 0, sizeof(*w));
		w->state = SENDER_NOCREDS;
		w->uid = (__u32)-1;
		return;
	}
}

const struct sender *senders_of(struct senders *s, const struct amp_entry *e)
{
	struct sender *w = &s->out;

	if (!entry_is_receive(e) && e->sender_how != AMP_SENDER_NONE) {
		/* A relay's write: the sender of the receives it links to. */
		sender_named(s, e->sender_how, e->sender_pid, e->sender_uid, e->start_ns, w);
		w->relay = true;
		w->relayed = e->sender_links;
		return w;
	}
	if (!entry_is_receive(e)) {
		resolve(s, e->pid, e->start_ns, w);
		if (w->state != SENDER_LIVE && w->state != SENDER_EXITED) {
			/* Its own name at least: the kernel side's. */
			memset(w, 0, sizeof(*w));
			w->pid = e->pid;
			memcpy(w->comm, e->comm, sizeof(w->comm));
			w->comm[sizeof(w->comm) - 1] = '\0';
		}
		w->state = SENDER_SELF;
		w->uid = (__u32)-1;
		return w;
	}
	sender_named(s, e->sender_how, e->sender_pid, e->sender_uid, e->start_ns, w);
	return w;
}

const char *sender_label(const struct sender *s, char *buf, size_t len)
{
	switch (s->state) {
	case SENDER_KERNEL:
		return "kernel";
	case SENDER_NOCREDS:
		return "(no credentials)";
	case SENDER_SEVERAL:
		return "(several senders)";
	case SENDER_GONE:
		return "(exited unnamed)";
	case SENDER_REUSED:
		return "(pid reused)";
	default:
		break;
	}
	snprintf(buf, len, "%s", s->unit[0] ? s->unit : s->comm[0] ? s->comm : "?");
	return buf;
}
