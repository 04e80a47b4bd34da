// SPDX-License-Identifier: GPL-2.0
/* Which syscalls open an entry.  Numbers come from the host's own headers. */
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include "sys/presets.h"

static const struct preset_syscall receive_syscalls[] = {
	{ "recvmsg", SYS_recvmsg, AMP_SYS_RECVMSG, false },
	{ "recvfrom", SYS_recvfrom, AMP_SYS_SOCKRECV, false },
	{ "recvmmsg", SYS_recvmmsg, AMP_SYS_RECVMMSG, false },
	{ "read", SYS_read, AMP_SYS_RECV, false },
	{ "readv", SYS_readv, AMP_SYS_RECV, false },
};

static const struct preset_syscall write_syscalls[] = {
	{ "write", SYS_write, AMP_SYS_WRITE, false },
	{ "writev", SYS_writev, AMP_SYS_WRITE, false },
	{ "pwrite64", SYS_pwrite64, AMP_SYS_WRITE, false },
	{ "pwritev", SYS_pwritev, AMP_SYS_WRITE, false },
	{ "pwritev2", SYS_pwritev2, AMP_SYS_WRITE, false },
};

/* A writer that receives what it writes (rsyslog's imuxsock): the
 * credentials of its receives name its writes' senders.  recvmsg only:
 * the one receive that carries them. */
static const struct preset_syscall relay_syscalls[] = {
	{ "recvmsg", SYS_recvmsg, AMP_SYS_RECVMSG, true },
};

#define N_RECV (sizeof(receive_syscalls) / sizeof(receive_syscalls[0]))
#define N_WRITE (sizeof(write_syscalls) / sizeof(write_syscalls[0]))
#define N_RELAY (sizeof(relay_syscalls) / sizeof(relay_syscalls[0]))

static struct preset_syscall chosen[N_RECV + N_WRITE];
_Static_assert(N_RECV + N_WRITE <= AMP_MAX_PRESET_SYSCALLS, "raise AMP_MAX_PRESET_SYSCALLS");
_Static_assert(N_RELAY <= N_RECV, "a relay's receives are some of the receives");

/* journald's comm as the kernel keeps it (15 characters). */
static bool is_journald(const char *comm)
{
	return comm && !strncmp(comm, "systemd-journald", 15);
}

/* Is the target journald: by comm, by its service's cgroup
 * (systemd-journald.service, systemd-journald@NS.service), or every pid
 * given one of journald's? */
static bool target_is_journald(const struct preset_target *o)
{
	const char *base;
	int n = 0;

	if (is_journald(o->comm))
		return true;
	if (o->cgroup) {
		size_t len = strlen(o->cgroup);

		while (len > 1 && o->cgroup[len - 1] == '/')
			len--;
		base = o->cgroup + len;
		while (base > o->cgroup && base[-1] != '/')
			base--;
		return !strncmp(base, "systemd-journald.service", 24) ||
		       !strncmp(base, "systemd-journald@", 17);
	}
	for (int i = 0; i < o->nr_pids; i++) {
		char path[64], comm[32] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/comm", o->pids[i]);
		f = fopen(path, "r");
		if (f) {
			if (!fgets(comm, sizeof(comm), f))
				comm[0] = 0;
			fclose(f);
		}
		n += is_journald(comm);
	}
	return o->nr_pids && n == o->nr_pids;
}

int preset_resolve(const char *preset, const struct preset_target *opts,
		   const struct preset_syscall **list, int *n)
{
	bool recv = false, write = false;
	int k = 0;

	if (!strcmp(preset, "auto")) {
		recv = target_is_journald(opts);
		write = !recv;
	} else if (!strcmp(preset, "journald")) {
		recv = true;
	} else if (!strcmp(preset, "write")) {
		write = true;
	} else if (!strcmp(preset, "all")) {
		recv = write = true;
	} else {
		return -1;
	}
	for (size_t i = 0; recv && i < N_RECV; i++)
		chosen[k++] = receive_syscalls[i];
	for (size_t i = 0; write && i < N_WRITE; i++)
		chosen[k++] = write_syscalls[i];
	/* Writes alone: a writer's receives name its writes' senders.  With
	 * receives traced (all) each receive is an entry of its own. */
	for (size_t i = 0; write && !recv && i < N_RELAY; i++)
		chosen[k++] = relay_syscalls[i];
	*list = chosen;
	*n = k;
	return 0;
}

const char *syscall_name(int nr)
{
	if (nr < 0)
		return "-";	/* outside any logging syscall: before the thread's
				 * first, or a thread that makes none */
	for (size_t i = 0; i < N_RECV; i++)
		if (receive_syscalls[i].nr == nr)
			return receive_syscalls[i].name;
	for (size_t i = 0; i < N_WRITE; i++)
		if (write_syscalls[i].nr == nr)
			return write_syscalls[i].name;
	return "?";
}

int syscall_nr(const char *name)
{
	if (!strcmp(name, "-"))
		return -1;
	for (size_t i = 0; i < N_RECV; i++)
		if (!strcmp(receive_syscalls[i].name, name))
			return receive_syscalls[i].nr;
	for (size_t i = 0; i < N_WRITE; i++)
		if (!strcmp(write_syscalls[i].name, name))
			return write_syscalls[i].nr;
	return AMP_MAX_SYSCALLS;	/* no preset's: "?" */
}
