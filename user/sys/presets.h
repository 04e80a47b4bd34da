/* SPDX-License-Identifier: GPL-2.0 */
/* Presets: which syscalls open an entry, by the host's syscall numbers. */
#ifndef AMPTRACE_PRESETS_H
#define AMPTRACE_PRESETS_H

#include <linux/types.h>
#include <stdbool.h>
#include <sys/types.h>
#include "amptrace.h"

#define AMP_MAX_PRESET_SYSCALLS 16	/* syscalls a preset may name */

struct preset_syscall {
	const char *name;
	int nr;
	enum amp_syscall_kind kind;
	bool relay;	/* a writer's receive: names its writes' senders
			 * (bpf/relay.bpf.h), opens no entry */
};

/* What is traced, for the `auto` preset: journald or not. */
struct preset_target {
	const char *comm;
	const char *cgroup;
	const pid_t *pids;
	int nr_pids;
};

/* journald | write | all | auto: the list (static) and its length; -1 if
 * the preset is unknown. */
int preset_resolve(const char *preset, const struct preset_target *t,
		   const struct preset_syscall **list, int *n);
/* A preset syscall's name; "-" for -1 (before the first), "?" for others. */
const char *syscall_name(int nr);
/* The reverse, for entries read back from JSON: -1 for "-", and a number
 * that syscall_name() calls "?" for any name it does not know. */
int syscall_nr(const char *name);

#endif /* AMPTRACE_PRESETS_H */
