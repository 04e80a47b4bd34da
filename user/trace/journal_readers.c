// SPDX-License-Identifier: GPL-2.0
/*
 * Where a relay reads the journal (rsyslog's imjournal), the entries it
 * reads name its lines' senders: uprobes on libsystemd's sd_journal_next
 * and field enumeration (bpf/journal_reader.bpf.h).
 *
 * A uprobe traps in every process that maps the library, traced or not,
 * and a reader that goes through every field of every entry would pay a
 * trap per field.  So each traced process that runs now is probed on its
 * own (the kernel then puts the breakpoints in its memory only), through
 * its own view of the file (/proc/PID/root: a container's libsystemd is
 * its own).  Only where no traced process is
 * known is the library probed for all.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "util.h"
#include "trace/journal_readers.h"
#include "trace/targets.h"
#include "trace/trace.h"

#if defined(__x86_64__)
#define MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define MULTIARCH "aarch64-linux-gnu"
#else
#define MULTIARCH "unknown"
#endif

/* Where distributions keep libsystemd (Debian's multiarch, Fedora's lib64). */
static const char *const lib_dirs[] = {
	"/usr/lib/" MULTIARCH, "/lib/" MULTIARCH, "/usr/lib64", "/lib64", "/usr/lib",
};

/* The libsystemd that pid maps, as a path amptrace can open; false if none. */
static bool proc_libsystemd(pid_t pid, char *out, size_t len)
{
	char path[64], line[4096];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/'), *base;

		if (!file)
			continue;
		file[strcspn(file, "\n")] = '\0';
		base = strrchr(file, '/') + 1;
		if (!strncmp(base, "libsystemd.so.", 14) &&
		    (size_t)snprintf(out, len, "/proc/%d/root%s", pid, file) < len)
			found = true;
	}
	fclose(f);
	return found;
}

static bool system_libsystemd(char *out, size_t len)
{
	for (size_t i = 0; i < sizeof(lib_dirs) / sizeof(lib_dirs[0]); i++) {
		snprintf(out, len, "%s/libsystemd.so.0", lib_dirs[i]);
		if (!access(out, R_OK))
			return true;
	}
	return false;
}

static bool attach_one(struct reader_proc *rp, struct bpf_program *prog, const char *lib,
		       const char *func, bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = func, .retprobe = ret);
	struct bpf_link *link;

	if (rp->nr_links >= READER_LINKS)
		return false;
	link = bpf_program__attach_uprobe_opts(prog, rp->pid, lib, 0, &uo);
	if (!link)
		return false;
	rp->links[rp->nr_links++] = link;
	return true;
}

static void proc_detach(struct reader_proc *rp)
{
	while (rp->nr_links > 0)
		bpf_link__destroy(rp->links[--rp->nr_links]);
}

/* The probes on lib for pid (-1: every process) into a free slot:
 * sd_journal_next is needed; enumerate_available_data is systemd 246's,
 * either will do; the time call ends an entry sooner (else the next
 * sd_journal_next does). */
static int attach_lib(struct reader_probes *rps, int pid, const char *lib)
{
	static const char *const enumerate[] = {
		"sd_journal_enumerate_data", "sd_journal_enumerate_available_data",
	};
	const struct reader_progs *p = &rps->progs;
	struct reader_proc *rp;
	int fields = 0, err;

	if (rps->nr_procs >= READER_MAX_PROCS)
		return -E2BIG;
	rp = &rps->procs[rps->nr_procs];
	*rp = (struct reader_proc){ .pid = pid };
	if (!attach_one(rp, p->next_ret, lib, "sd_journal_next", true)) {
		err = -errno;
		goto fail;
	}
	for (int i = 0; i < 2; i++)
		if (attach_one(rp, p->enumerate, lib, enumerate[i], false))
			fields++;
	if (fields) {
		attach_one(rp, p->timestamp, lib, "sd_journal_get_realtime_usec", false);
		rps->nr_procs++;
		return 0;
	}
	err = -errno;
fail:
	proc_detach(rp);
	return err ? err : -ENOENT;
}

struct pid_list {
	pid_t *pids;
	int n, max;
};

static void add_pid(void *ctx, const char *pid)
{
	struct pid_list *l = ctx;

	if (l->n < l->max)
		l->pids[l->n++] = atoi(pid);
}

/* The traced processes running now, if -p or -c names them (--cgroup:
 * none, the library is probed for all). */
static int traced_now(const struct trace_opts *o, pid_t *pids, int max)
{
	struct pid_list l = { pids, 0, max };

	if (o->nr_pids || (o->comm && !o->cgroup))
		for_each_target(o, add_pid, &l);
	return l.n;
}

static bool probed(const struct reader_probes *rps, pid_t pid)
{
	for (int i = 0; i < rps->nr_procs; i++)
		if (rps->procs[i].pid == pid)
			return true;
	return false;
}

/* Probe each traced process running now that maps libsystemd. */
static void attach_procs(struct reader_probes *rps, const pid_t *pids, int n)
{
	char lib[4200];
	int err;

	for (int i = 0; i < n; i++) {
		if (probed(rps, pids[i]) || !proc_libsystemd(pids[i], lib, sizeof(lib)))
			continue;	/* done, or reads no journal */
		err = attach_lib(rps, pids[i], lib);
		if (err == -E2BIG && rps->full_said)
			continue;	/* said once, not at every look */
		if (err == -E2BIG) {
			fprintf(stderr, "amptrace: %d processes probed already: the journal "
				"entries that pid %d and later ones read stay unnamed\n",
				READER_MAX_PROCS, pids[i]);
			rps->full_said = true;
			continue;
		}
		if (err) {
			fprintf(stderr, "amptrace: cannot probe %s in pid %d (%s): the journal "
				"entries it reads stay unnamed\n", lib, pids[i], strerror(-err));
			continue;
		}
		if (rps->opts->verbose)
			fprintf(stderr, "amptrace: journal reading probed in pid %d (%s)\n",
				pids[i], lib);
	}
}

int reader_probes_attach(struct reader_probes *rps, const struct reader_progs *progs,
			 const struct trace_opts *o)
{
	pid_t pids[AMP_MAX_PIDS];
	char lib[4200];
	int n = traced_now(o, pids, AMP_MAX_PIDS), err;

	rps->progs = *progs;
	rps->opts = o;
	rps->next_look = now_s() + 2;
	if (n) {
		rps->per_proc = true;
		attach_procs(rps, pids, n);
		return rps->nr_procs;
	}
	/* None known: every process's libsystemd, if there is one. */
	if (!system_libsystemd(lib, sizeof(lib)))
		return 0;
	err = attach_lib(rps, -1, lib);
	if (err)
		fprintf(stderr, "amptrace: cannot probe %s (%s): the journal entries a traced "
			"process reads stay unnamed\n", lib, strerror(-err));
	else if (o->verbose)
		fprintf(stderr, "amptrace: journal reading probed in %s, every process\n", lib);
	return rps->nr_procs;
}

void reader_probes_look(struct reader_probes *rps)
{
	pid_t pids[AMP_MAX_PIDS];
	char path[32];
	int n;

	if (!rps->per_proc || !rps->opts->comm || now_s() < rps->next_look)
		return;
	rps->next_look = now_s() + 2;
	for (int i = 0; i < rps->nr_procs; i++) {
		snprintf(path, sizeof(path), "/proc/%d", rps->procs[i].pid);
		if (!access(path, F_OK))
			continue;
		proc_detach(&rps->procs[i]);	/* gone: its slot for another */
		rps->procs[i--] = rps->procs[--rps->nr_procs];
	}
	n = traced_now(rps->opts, pids, AMP_MAX_PIDS);
	attach_procs(rps, pids, n);
}

void reader_probes_detach(struct reader_probes *rps)
{
	while (rps->nr_procs > 0)
		proc_detach(&rps->procs[--rps->nr_procs]);
}
