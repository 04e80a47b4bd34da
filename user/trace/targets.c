// SPDX-License-Identifier: GPL-2.0
/*
 * The traced processes as /proc shows them (-p, -c, --cgroup), for what
 * the loader does outside the programs: amptrace's own start-up cost
 * (startup.c) and the journal readers' probes (journal_readers.c).  The
 * programs' own filter is bpf/target.bpf.h; -c names a process or any of
 * its threads, as there.
 */
#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/types.h>
#include "amptrace.h"
#include "trace/targets.h"

/*
 * The first line of /proc/PID/task/TID/FILE for pid's threads: true if it
 * matches for some thread (any), or for every thread (!any).
 */
bool threads_match(const char *pid, const char *file, bool any,
		   bool (*match)(const char *line, const void *arg), const void *arg)
{
	char path[330], line[512];
	struct dirent *d;
	bool result = !any;
	DIR *dp;

	snprintf(path, sizeof(path), "/proc/%s/task", pid);
	dp = opendir(path);
	if (!dp)
		return false;
	while (result != any && (d = readdir(dp))) {
		FILE *f;

		if (!isdigit((unsigned char)d->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/task/%s/%s", pid, d->d_name, file);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(line, sizeof(line), f) && match(line, arg) == any)
			result = any;
		fclose(f);
	}
	closedir(dp);
	return result;
}

static bool comm_is(const char *line, const void *comm)
{
	return !strncmp(line, comm, strcspn(line, "\n")) &&
	       strcspn(line, "\n") == strnlen(comm, AMP_COMM_LEN - 1);
}

static bool pid_has_comm(const char *pid, const char *comm)
{
	return threads_match(pid, "comm", true, comm_is, comm);
}

/* Is pid in the cgroup v2 directory cg or below it? */
static bool pid_in_cgroup(const char *pid, const char *cg)
{
	char path[300], line[4096], mnt[PATH_MAX] = "";
	bool in = false;
	FILE *f;

	/* The unified hierarchy's mount point, then the pid's path under it. */
	f = fopen("/proc/self/mountinfo", "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - cgroup2 "), root[PATH_MAX];

		if (sep && sscanf(line, "%*d %*d %*s %*s %4095s", root) == 1) {
			snprintf(mnt, sizeof(mnt), "%s", root);
			break;
		}
	}
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%s/cgroup", pid);
	f = fopen(path, "r");
	if (!f || !mnt[0]) {
		if (f)
			fclose(f);
		return false;
	}
	while (fgets(line, sizeof(line), f)) {
		char full[2 * PATH_MAX];
		size_t n;

		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = 0;
		snprintf(full, sizeof(full), "%s%s", mnt, line + 3);
		n = strlen(cg);
		while (n > 1 && cg[n - 1] == '/')
			n--;
		in = !strncmp(full, cg, n) && (full[n] == '/' || !full[n]);
	}
	fclose(f);
	return in;
}

static bool pid_is_target(const struct trace_opts *o, const char *pid)
{
	long p = atol(pid);

	if (p == getpid())
		return false;
	if (o->nr_pids) {
		bool listed = false;

		for (int i = 0; i < o->nr_pids; i++)
			listed |= o->pids[i] == p;
		if (!listed)
			return false;
	}
	if (o->comm && !pid_has_comm(pid, o->comm))
		return false;
	if (o->cgroup && !pid_in_cgroup(pid, o->cgroup))
		return false;
	return true;
}

/* Call fn(pid) for every traced process; the number of them. */
int for_each_target(const struct trace_opts *o, void (*fn)(void *, const char *),
		    void *ctx)
{
	DIR *dp = opendir("/proc");
	struct dirent *d;
	int n = 0;

	if (!dp)
		return 0;
	while ((d = readdir(dp)))
		if (isdigit((unsigned char)d->d_name[0]) && pid_is_target(o, d->d_name)) {
			fn(ctx, d->d_name);
			n++;
		}
	closedir(dp);
	return n;
}
