/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Who sent a received record.  journald's native, syslog and stdout
 * sockets all pass SO_PASSCRED, so each receive brings an SCM_CREDENTIALS
 * message naming the sending process: a datagram's sender, or the process
 * that wrote these bytes of a stream.  When recvmsg returns it sits in the
 * receiver's own control buffer, user memory the kernel has just written:
 * read from there (a few small reads, no lock, no map).  Ids only: no
 * payload byte is read.
 *
 * A sender may exit before user space names it (logger does at once), so
 * while receives are traced the exits of processes are kept by pid
 * (exited_procs): name, cgroup and start time, which tells a pid reused
 * since from the sender.
 */
#ifndef AMPTRACE_SENDER_BPF_H
#define AMPTRACE_SENDER_BPF_H

/* include/uapi/asm-generic/socket.h (x86, arm64: not alpha, mips, parisc
 * or sparc, whose SOL_SOCKET is 0xffff) and linux/socket.h. */
#define AMP_SOL_SOCKET		1
#define AMP_SCM_CREDENTIALS	2
#define AMP_AF_NETLINK		16
/* Control messages looked at before giving up: the kernel puts at most a
 * timestamp before the credentials, then a security label and fds. */
#define AMP_CMSG_MAX		4

/* The syscall's argument n (0 or 1) at its exit: from the registers the
 * task entered with.  The syscall leaves them as they were (arm64's x0
 * holds the return value by then; PARM1 is orig_x0 there). */
static __always_inline __u64 exit_syscall_arg(int n)
{
	struct pt_regs *regs;

	if (!bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs))
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	return n == 0 ? PT_REGS_PARM1_CORE_SYSCALL(regs) : PT_REGS_PARM2_CORE_SYSCALL(regs);
}

/* Who sent a record, as enum amp_sender_how says. */
struct sender_id {
	__u32 pid;
	__u32 uid;
	__u8 how;
};

/* An entry's sender, as who says. */
static __always_inline void entry_sender(struct amp_entry *e, const struct sender_id *who)
{
	e->sender_pid = who->pid;
	e->sender_uid = who->uid;
	e->sender_how = who->how;
}

/* The SCM_CREDENTIALS in the control buffer of the msghdr at user
 * address msg, into who; nothing if there is none. */
static __always_inline void sender_from_msghdr(struct sender_id *who, __u64 msg)
{
	struct { __u64 control, controllen; } ctl;
	__u64 off = 0;

	if (!msg || bpf_probe_read_user(&ctl, sizeof(ctl),
					(void *)(msg + offsetof(struct user_msghdr, msg_control))))
		return;
	for (int i = 0; i < AMP_CMSG_MAX; i++) {
		struct cmsghdr h;
		struct ucred uc;

		if (off + sizeof(h) > ctl.controllen ||
		    bpf_probe_read_user(&h, sizeof(h), (void *)(ctl.control + off)))
			return;
		if (h.cmsg_level == AMP_SOL_SOCKET && h.cmsg_type == AMP_SCM_CREDENTIALS) {
			if (bpf_probe_read_user(&uc, sizeof(uc), (void *)(ctl.control + off + sizeof(h))))
				return;
			who->pid = uc.pid;
			who->uid = uc.uid;
			/* pid 0: sent by the kernel (audit over netlink). */
			who->how = uc.pid ? AMP_SENDER_CREDS : AMP_SENDER_KERNEL;
			return;
		}
		if (h.cmsg_len < sizeof(h))
			return;
		off += (h.cmsg_len + sizeof(long) - 1) & ~(sizeof(long) - 1);	/* CMSG_ALIGN */
	}
}

/* Whether fd of the current task is a netlink socket (audit's): then the
 * kernel sent what came in on it.  Only asked when no credentials came. */
static __always_inline bool fd_is_netlink(int fd)
{
	struct fdtable *fdt = BPF_CORE_READ(bpf_get_current_task_btf(), files, fdt);
	struct file *file = NULL;
	struct socket *sock;

	if (!fdt || fd < 0 || fd >= BPF_CORE_READ(fdt, max_fds) ||
	    bpf_probe_read_kernel(&file, sizeof(file), BPF_CORE_READ(fdt, fd) + fd) || !file)
		return false;
	sock = BPF_CORE_READ(file, private_data);
	return sock && BPF_CORE_READ(sock, sk, __sk_common.skc_family) == AMP_AF_NETLINK;
}

/* The sender of the record just received, at the receive's exit: kind
 * and msgvec as the receive gave them (recvmmsg: its first message's). */
static __always_inline void receive_sender(struct sender_id *who, __u8 kind, __u64 msgvec,
					   bool kmsg)
{
	if (kmsg) {
		who->how = AMP_SENDER_KERNEL;
		return;
	}
	if (kind == AMP_SYS_RECVMMSG)
		sender_from_msghdr(who, msgvec);	/* mmsghdr starts with its msghdr */
	else if (kind == AMP_SYS_RECVMSG)
		sender_from_msghdr(who, exit_syscall_arg(1));
	if (who->how == AMP_SENDER_NONE && fd_is_netlink((int)exit_syscall_arg(0)))
		who->how = AMP_SENDER_KERNEL;
}

/* kernfs_node's parent: `__parent` since 6.15 (RCU), `parent` before. */
struct kernfs_node___parent_old {
	struct kernfs_node *parent;
} __attribute__((preserve_access_index));
struct kernfs_node___parent_new {
	struct kernfs_node *__parent;
} __attribute__((preserve_access_index));

static __always_inline struct kernfs_node *kn_parent(struct kernfs_node *kn)
{
	struct kernfs_node___parent_old *o = (void *)kn;
	struct kernfs_node___parent_new *n = (void *)kn;

	if (bpf_core_field_exists(o->parent))
		return BPF_CORE_READ(o, parent);
	return BPF_CORE_READ(n, __parent);
}

/*
 * A process exits: keep its name and its cgroup v2 path (the leaf first,
 * up to AMP_CG_DEPTH components) while receives are traced: a service's
 * last process exits, then systemd removes its cgroup, all before user
 * space names the records it sent.  Threads other than the group leader
 * are not senders (credentials carry the tgid).  Once per process exit,
 * a few reads per path component.
 */
static __always_inline void sender_exit(struct task_struct *task)
{
	struct kernfs_node *kn, *up;
	struct amp_exited_proc *x;
	__u32 pid = task->tgid, zero = 0;

	if (!track_senders || task->pid != task->tgid)
		return;
	x = bpf_map_lookup_elem(&exited_scratch, &zero);
	if (!x)
		return;
	x->start_ns = task->start_boottime;
	x->exit_ns = bpf_ktime_get_boot_ns();
	x->cgroup_id = bpf_get_current_cgroup_id();
	__builtin_memcpy(x->comm, task->comm, sizeof(x->comm));
	x->cg_depth = 0;
	x->cg_deeper = 0;
	kn = BPF_CORE_READ(task, cgroups, dfl_cgrp, kn);
	for (int i = 0; i < AMP_CG_DEPTH && kn; i++) {
		up = kn_parent(kn);
		if (!up)
			break;		/* the root: no name of its own */
		bpf_probe_read_kernel_str(x->cg_names[i], AMP_CG_NAME_LEN, BPF_CORE_READ(kn, name));
		x->cg_depth = i + 1;
		kn = up;
	}
	if (kn && x->cg_depth == AMP_CG_DEPTH && kn_parent(kn))
		x->cg_deeper = 1;
	bpf_map_update_elem(&exited_procs, &pid, x, BPF_ANY);
}

#endif /* AMPTRACE_SENDER_BPF_H */
