/* SPDX-License-Identifier: GPL-2.0 */
/* What is traced: the task filters (-p, -c, --cgroup) and the disk (--dev). */
#ifndef AMPTRACE_TARGET_BPF_H
#define AMPTRACE_TARGET_BPF_H

/* Is comm the target name?  Read by loads (a constant offset each: the
 * loop unrolls) rather than by bpf_get_current_comm, a helper call. */
static __always_inline bool comm_is_target(const char *comm)
{
#pragma unroll
	for (int i = 0; i < AMP_COMM_LEN; i++) {
		if (comm[i] != target_comm[i])
			return false;
		if (!comm[i])
			break;
	}
	return true;
}

/* -c names a thread or its process: a process's threads may name
 * themselves (journald 257's "journal-offline" syncs and truncates the
 * file it archives; rsyslog's "rs:main Q:Reg" writes), and they are that
 * process's work.  The thread-group leader's name is the process's. */
static __always_inline bool comm_matches(void)
{
	struct task_struct *task = bpf_get_current_task_btf();

	return comm_is_target(task->comm) || comm_is_target(task->group_leader->comm);
}

static __always_inline bool task_is_target(__u64 pid_tgid)
{
	__u32 tgid = pid_tgid >> 32;

	if (tgid == self_tgid)
		return false;
	if (filter_pid && !bpf_map_lookup_elem(&target_pids, &tgid))
		return false;
	if (filter_comm && !comm_matches())
		return false;
	if (filter_cgroup && bpf_current_task_under_cgroup(&target_cgroup, 0) != 1)
		return false;
	return true;
}

/* Is this device (a disk, or a filesystem's partition, dm or md device)
 * in the stack given by --dev?  A page written through dm-linear is
 * dirtied on dm-0 and written by a request of the disk below, and a
 * partition's journal handles carry the partition's number: all of them
 * are the stack's. */
static __always_inline bool disk_is_target(__u32 dev)
{
	if (!filter_dev || dev == target_devs[0])
		return true;
#pragma unroll
	for (int i = 1; i < AMP_MAX_TARGET_DEVS; i++) {
		if (i >= nr_target_devs)
			break;
		if (dev == target_devs[i])
			return true;
	}
	return false;
}

#endif /* AMPTRACE_TARGET_BPF_H */
