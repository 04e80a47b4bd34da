// SPDX-License-Identifier: GPL-2.0
/*
 * amptrace's own start-up cost.
 *
 * Where kernel audit is on (journald 257 turns it on by default), every BPF
 * program amptrace loads is an audit record (BPF, SYSCALL, PROCTITLE), and
 * journald stores each one: on one traced log line, several hundred KB
 * that are written out while the trace runs.  The records are made by the
 * load, before any program can be attached, so no program sees journald
 * store them.  What amptrace can do is find the pages and say whose they
 * are:
 *
 *   1. before loading anything, note which pages of the traced processes'
 *      open files are dirty (cachestat(2), page by page where a range has
 *      dirty pages): those were dirty before amptrace began;
 *   2. load and attach, with `startup_own` set: entries opened meanwhile
 *      are amptrace's own (AMP_ENTRY_OWN);
 *   3. wait until the traced processes have read their audit sockets dry
 *      and gone back to sleep;
 *   4. note the dirty pages again: those dirty now and not before were
 *      dirtied while amptrace started.  They go to one entry of amptrace's
 *      own, through the kernel's startup_pages map, so that their write-out
 *      is charged to it (by cause), never to a user's entry and never left
 *      as `other`; the pages dirty before the start are class before_start.
 *
 * Only where audit is on (or cannot be asked, and a traced process
 * listens to audit): otherwise a program load costs no write, and a page
 * dirtied during the start is simply dirtied before the start.  On
 * kernels without cachestat (before 6.5) the start-up pages stay in
 * before_start, and -v says so.
 */
#include <bpf/bpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "util.h"
#include "ledger/unsettled.h"
#include "sys/blockdev.h"
#include "sys/devstat.h"
#include "sys/mounts.h"
#include "trace/startup.h"
#include "trace/targets.h"

#ifndef __NR_cachestat
#define __NR_cachestat 451	/* the same number on every architecture */
#endif

/* include/uapi/linux/mman.h, 6.5+ (not in older headers). */
struct amp_cachestat_range {
	__u64 off;
	__u64 len;
};

struct amp_cachestat {
	__u64 nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

#define AUDIT_GET_MSG 1000	/* linux/audit.h */
#define NETLINK_AUDIT_PROTO 9
#define STARTUP_MAX_PAGES 16384	/* the kernel's startup_pages map */
#define SETTLE_WAIT_MAX_MS 2000
#define SETTLE_POLL_MS 20

struct page_ref {
	__u32 kdev;		/* the file's st_dev, as the kernel side keys it */
	__u64 ino, index;
	__u32 disk;		/* the disk under its superblock */
};

struct page_set {
	struct page_ref *v;
	size_t n, cap;
	bool truncated;		/* more dirty pages than STARTUP_MAX_PAGES */
};

struct startup {
	const struct trace_opts *opts;
	struct page_set before;	/* dirty before any program was loaded */
	bool no_cachestat;
	__u64 start_ns;
};

/* ------------------------------------------------------------- audit --- */

/*
 * 1 if kernel audit is on, 0 if off, -1 if we may not ask (no
 * CAP_AUDIT_CONTROL, or not in the initial pid namespace).
 */
static int audit_enabled(void)
{
	struct {
		struct nlmsghdr h;
		__u32 status[8];	/* struct audit_status: mask, enabled, ... */
	} req = { .h = { .nlmsg_len = sizeof(struct nlmsghdr), .nlmsg_type = AUDIT_GET_MSG,
			 .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = 1 } };
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	char buf[512];
	int fd, ret = -1;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT_PROTO);
	if (fd < 0)
		return -1;
	if (sendto(fd, &req, req.h.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		goto out;
	for (int tries = 0; tries < 4; tries++) {
		struct timeval tv = { .tv_sec = 1 };
		struct nlmsghdr *h = (struct nlmsghdr *)buf;
		ssize_t n;

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < (ssize_t)sizeof(*h))
			break;
		if (h->nlmsg_type == NLMSG_ERROR)
			break;	/* EPERM */
		if (h->nlmsg_type == AUDIT_GET_MSG && n >= (ssize_t)(sizeof(*h) + 8)) {
			__u32 enabled;

			memcpy(&enabled, buf + sizeof(*h) + 4, sizeof(enabled));
			ret = enabled != 0;
			break;
		}
	}
out:
	close(fd);
	return ret;
}

/* ------------------------------------------------------- dirty pages --- */

static int page_set_add(struct page_set *s, __u32 kdev, __u64 ino, __u64 index, __u32 disk)
{
	if (s->n == STARTUP_MAX_PAGES) {
		s->truncated = true;
		return -1;
	}
	if (amp_grow(&s->v, &s->cap, s->n + 1, sizeof(*s->v)))
		return -1;
	s->v[s->n++] = (struct page_ref){ kdev, ino, index, disk };
	return 0;
}

static int cmp_page(const void *a, const void *b)
{
	const struct page_ref *x = a, *y = b;

	if (x->kdev != y->kdev)
		return x->kdev < y->kdev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* Dirty pages of fd in [first, first + count): halve every range that
 * has some, down to single pages.  -1 once cachestat is known missing. */
static int dirty_pages(int fd, __u64 first, __u64 count, const struct page_ref *file,
		       struct page_set *out, long page)
{
	struct amp_cachestat_range r = { first * page, count * page };
	struct amp_cachestat cs;

	if (syscall(__NR_cachestat, fd, &r, &cs, 0))
		return errno == ENOSYS ? -1 : 0;
	if (!cs.nr_dirty)
		return 0;
	if (count == 1)
		return page_set_add(out, file->kdev, file->ino, first, file->disk) &&
		       !out->truncated ? -1 : 0;
	if (dirty_pages(fd, first, count / 2, file, out, page) < 0)
		return -1;
	return dirty_pages(fd, first + count / 2, count - count / 2, file, out, page);
}

struct scan {
	struct startup *su;
	struct page_set *out;
	struct page_ref *seen;	/* files already scanned: (kdev, ino) */
	size_t nr_seen, cap_seen;
	bool no_cachestat;
};

/* Every regular file pid has open, once per file. */
static void scan_pid(void *ctx, const char *pid)
{
	struct scan *sc = ctx;
	const struct trace_opts *o = sc->su->opts;
	long page = sysconf(_SC_PAGESIZE);
	char dir[64], path[330];
	struct dirent *d;
	DIR *dp;

	snprintf(dir, sizeof(dir), "/proc/%s/fd", pid);
	dp = opendir(dir);
	if (!dp)
		return;
	while ((d = readdir(dp)) && !sc->no_cachestat && !sc->out->truncated) {
		struct page_ref file;
		struct stat st;
		bool seen = false;
		int fd;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		if (stat(path, &st) || !S_ISREG(st.st_mode) || !st.st_size)
			continue;
		/* Keyed as the kernel side keys pages (stat's device: on btrfs
		 * the subvolume's); the disk is the superblock's. */
		file = (struct page_ref){ .kdev = kdev_from_user(st.st_dev), .ino = st.st_ino,
			.disk = blockdev_disk_of_sb(fd_superblock_dev(atoi(pid), atoi(d->d_name), st.st_dev)) };
		if (o->dev && !blockdev_in_stack(&o->dev_stack, file.disk))
			continue;
		for (size_t i = 0; i < sc->nr_seen && !seen; i++)
			seen = sc->seen[i].kdev == file.kdev && sc->seen[i].ino == file.ino;
		if (seen)
			continue;
		if (amp_grow(&sc->seen, &sc->cap_seen, sc->nr_seen + 1, sizeof(*sc->seen)))
			break;
		sc->seen[sc->nr_seen++] = file;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOATIME);
		if (fd < 0)
			fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (dirty_pages(fd, 0, (st.st_size + page - 1) / page, &file, sc->out, page) < 0 &&
		    !sc->out->truncated)
			sc->no_cachestat = true;
		close(fd);
	}
	closedir(dp);
}

/* The traced processes' dirty file pages now, sorted; false without cachestat. */
static bool snapshot(struct startup *su, struct page_set *out)
{
	struct scan sc = { .su = su, .out = out };

	for_each_target(su->opts, scan_pid, &sc);
	free(sc.seen);
	if (out->n)
		qsort(out->v, out->n, sizeof(*out->v), cmp_page);
	return !sc.no_cachestat;
}

/* ------------------------------------------------- the audit backlog --- */

struct backlog {
	__u64 *inodes;		/* the targets' socket inodes */
	size_t n, cap;
	bool asleep;		/* every target thread sleeping */
	bool audit_socket;	/* some target has an audit socket */
	unsigned long long queued;	/* bytes waiting in their audit sockets */
	const char *pid;
};

static void collect_sockets(void *ctx, const char *pid)
{
	struct backlog *b = ctx;
	char dir[64], path[330], link[64];
	struct dirent *d;
	DIR *dp;

	snprintf(dir, sizeof(dir), "/proc/%s/fd", pid);
	dp = opendir(dir);
	if (!dp)
		return;
	while ((d = readdir(dp))) {
		unsigned long long ino;
		ssize_t n;

		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (sscanf(link, "socket:[%llu]", &ino) != 1)
			continue;
		if (amp_grow(&b->inodes, &b->cap, b->n + 1, sizeof(*b->inodes)))
			break;
		b->inodes[b->n++] = ino;
	}
	closedir(dp);
	if (!b->pid)
		b->pid = strdup(pid);
}

/* A thread's stat line says it sleeps (state S). */
static bool stat_sleeping(const char *line, const void *unused)
{
	const char *rp = strrchr(line, ')');

	return rp && rp[1] == ' ' && rp[2] == 'S';
}

/* Are all of pid's threads asleep? */
static void check_asleep(void *ctx, const char *pid)
{
	struct backlog *b = ctx;

	if (!threads_match(pid, "stat", false, stat_sleeping, NULL))
		b->asleep = false;
}

/* Bytes queued in the targets' audit netlink sockets (/proc/PID/net/netlink:
 * sk Eth Pid Groups Rmem Wmem Dump Locks Drops Inode). */
static void read_backlog(struct backlog *b)
{
	char path[64], line[256];
	FILE *f;

	b->queued = 0;
	if (!b->pid)
		return;
	snprintf(path, sizeof(path), "/proc/%s/net/netlink", b->pid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long rmem, ino;
		int proto;

		if (sscanf(line, "%*x %d %*u %*x %llu %*u %*u %*d %*d %llu",
			   &proto, &rmem, &ino) != 3 || proto != NETLINK_AUDIT_PROTO)
			continue;
		for (size_t i = 0; i < b->n; i++)
			if (b->inodes[i] == ino) {
				b->audit_socket = true;
				b->queued += rmem;
			}
	}
	fclose(f);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Until the targets have read their audit sockets dry and sleep, twice in
 * a row (they store what they read before sleeping again); at most 2 s. */
static int wait_backlog(const struct trace_opts *o, bool *audit_socket)
{
	struct backlog b = {};
	int calm = 0, waited = 0;

	for_each_target(o, collect_sockets, &b);
	while (waited < SETTLE_WAIT_MAX_MS && calm < 2) {
		sleep_ms(SETTLE_POLL_MS);
		waited += SETTLE_POLL_MS;
		read_backlog(&b);
		b.asleep = true;
		for_each_target(o, check_asleep, &b);
		calm = b.queued == 0 && b.asleep ? calm + 1 : 0;
	}
	*audit_socket = b.audit_socket;
	free(b.inodes);
	free((void *)b.pid);
	return waited;
}

/* ------------------------------------------------------------ the API --- */

struct startup *startup_begin(const struct trace_opts *o)
{
	struct startup *su;
	int audit = audit_enabled();

	if (audit == 0) {
		if (o->verbose)
			fprintf(stderr, "amptrace: kernel audit is off: loading programs writes nothing\n");
		return NULL;
	}
	su = calloc(1, sizeof(*su));
	if (!su)
		return NULL;
	su->opts = o;
	su->start_ns = clock_ns(CLOCK_BOOTTIME);
	su->no_cachestat = !snapshot(su, &su->before);
	if (o->verbose)
		fprintf(stderr, "amptrace: kernel audit is %s: %zu dirty pages of the traced "
			"processes before loading%s\n", audit > 0 ? "on" : "unknown (no "
			"CAP_AUDIT_CONTROL)", su->before.n,
			su->no_cachestat ? " (no cachestat: start-up pages not told apart)" : "");
	return su;
}

/* Claim a free settlement slot for the start-up entry (id 0 marks free);
 * the kernel's own claims use the same compare-and-swap. */
static struct amp_settle *claim_slot(const struct startup_target *tg, __u64 id, __u32 *slot)
{
	for (size_t i = 0; i < tg->nr_slots; i++) {
		struct amp_settle *s = &tg->slots[i];
		__u64 free_id = 0;

		if (!__atomic_compare_exchange_n(&s->id, &free_id, id, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
			continue;
		s->outstanding = AMP_STARTUP_BIAS;
		s->closed_ns = 0;
		memset(s->dev_bytes, 0, sizeof(s->dev_bytes));
		s->failed_bytes = 0;
		s->runs_written = 0;
		s->ios = 0;
		s->folios_written = 0;
		*slot = i;
		return s;
	}
	return NULL;
}

/* The pid and comm the start-up entry is shown under: a traced process's. */
static void first_target(void *ctx, const char *pid)
{
	struct amp_entry *e = ctx;
	char path[64];
	FILE *f;

	if (e->pid)
		return;
	e->pid = e->tid = atoi(pid);
	snprintf(path, sizeof(path), "/proc/%s/comm", pid);
	f = fopen(path, "r");
	if (f) {
		if (fgets(e->comm, sizeof(e->comm), f))
			e->comm[strcspn(e->comm, "\n")] = 0;
		fclose(f);
	}
}

int startup_finish(struct startup *su, const struct startup_target *tg,
		   struct amp_settle *settled_now)
{
	const struct trace_opts *o;
	struct page_set after = {};
	struct amp_page_owner owner = { .npages = 1, .kind = AMP_PAGE_FILE };
	static struct amp_entry e;
	struct amp_settle *s;
	bool audit_socket = false;
	__u32 nr = 0, slot;
	size_t j = 0;
	int waited, ret = 0;

	if (!su)
		return 0;
	o = su->opts;
	waited = wait_backlog(o, &audit_socket);
	__atomic_store_n(tg->startup_own, 0, __ATOMIC_RELEASE);
	if (su->no_cachestat || (!audit_socket && audit_enabled() < 0))
		goto out;
	snapshot(su, &after);

	memset(&e, 0, sizeof(e));
	e.type = AMP_REC_ENTRY;
	e.id = __atomic_fetch_add(tg->next_entry_id, 1, __ATOMIC_RELAXED);
	e.start_ns = su->start_ns;
	e.end_ns = clock_ns(CLOCK_BOOTTIME);
	e.syscall_nr = -1;
	e.flags = AMP_ENTRY_CLOSED | AMP_ENTRY_OWN;
	for_each_target(o, first_target, &e);
	s = claim_slot(tg, e.id, &slot);
	if (!s) {
		ret = -1;	/* counted by the caller as entries_full */
		goto out;
	}
	owner.entry_id = e.id;
	owner.settle_slot = slot;
	/* Pages dirty now and not before the load: both lists are sorted. */
	for (size_t i = 0; i < after.n; i++) {
		const struct page_ref *p = &after.v[i];
		struct amp_page_key key = { .ino = p->ino, .index = p->index, .dev = p->kdev };

		while (j < su->before.n && cmp_page(&su->before.v[j], p) < 0)
			j++;
		if (j < su->before.n && !cmp_page(&su->before.v[j], p))
			continue;
		owner.run = e.nr_runs < AMP_SCATTER_MAX ? e.nr_runs : 0xffff;
		if (bpf_map_update_elem(tg->pages_fd, &key, &owner, BPF_NOEXIST))
			continue;
		nr++;
		if (!e.disk)
			e.disk = p->disk;
		if (e.nr_runs < AMP_SCATTER_MAX) {
			struct amp_page_run *run = &e.runs[e.nr_runs++];

			run->dev = p->kdev;
			run->ino = p->ino;
			run->index = p->index;
			run->npages = 1;
			run->kind = AMP_PAGE_FILE;
		} else {
			e.runs_dropped++;
		}
	}
	e.folios_dirtied = e.pages_dirtied = e.write_faults = nr;
	if (o->verbose)
		fprintf(stderr, "amptrace: start-up: waited %d ms for the audit backlog; %u pages "
			"dirtied meanwhile are amptrace's own (entry %llu)%s\n", waited, nr,
			(unsigned long long)e.id, after.truncated ? ", more not tracked" : "");
	/* Worth saying always: it changes what the next few lines cost. */
	if (nr)
		fprintf(stderr, "amptrace: kernel audit is on: %u dirty pages hold the audit records of "
			"amptrace's own program loads (reported as its own); entries that touch them "
			"before they are written ride free\n", nr);
	/* Hold it before the kernel can settle it: from the bias down to the
	 * pages it owns.  Whoever takes the count to zero sends it: the kernel
	 * as the last page is written, or here if all were written already. */
	e.flags |= AMP_ENTRY_UNSETTLED;
	if (unsettled_hold(tg->held, &e, offsetof(struct amp_entry, runs) +
			   e.nr_runs * sizeof(struct amp_page_run))) {
		ret = -1;
		goto out;
	}
	s->closed_ns = e.end_ns;
	if (__atomic_fetch_sub(&s->outstanding, AMP_STARTUP_BIAS - (__s32)nr,
			       __ATOMIC_ACQ_REL) == AMP_STARTUP_BIAS - (__s32)nr) {
		__u64 id = e.id;

		*settled_now = *s;
		settled_now->type = AMP_REC_SETTLED;
		__atomic_compare_exchange_n(&s->id, &id, 0, false, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE);
		ret = 1;
	}
out:
	free(after.v);
	return ret;
}

void startup_free(struct startup *su)
{
	if (!su)
		return;
	free(su->before.v);
	free(su);
}
