/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stage 1: the logging syscall.  Write-family syscalls on regular files
 * open their entry at enter, because the write itself dirties pages;
 * receives on sockets open theirs at exit, once they returned data.
 *
 * Two ways in, the same code behind them: the per-syscall tracepoints
 * (syscalls:sys_enter_write, ...), attached by the loader to the preset's
 * syscalls only, so that no other syscall of the system runs a program;
 * or, where those do not exist (no CONFIG_FTRACE_SYSCALLS, no tracefs),
 * the raw sys_enter/sys_exit, which see every syscall.
 */
#ifndef AMPTRACE_SYSCALL_BPF_H
#define AMPTRACE_SYSCALL_BPF_H

#define AMP_RECVMMSG_MAX 64	/* messages summed per recvmmsg */

/* What a syscall's enter needs of the file behind its fd. */
struct fd_ident {
	struct inode *inode;
	struct amp_file_key fk;	/* a regular file's (dev, ino) */
	__u16 mode;		/* i_mode & S_IFMT */
};

/*
 * The file behind fd in the current task, into *id; false if none.
 *
 * Direct loads down to the fd array; its slots are raw pointers.  From
 * there, with cast (the loader's choice, where the kernel has
 * bpf_rdonly_cast), the slot, the file, inode and superblock are typed
 * pointers whose fields are plain loads, fault-safe like the tp_btf
 * programs' (PROBE_MEM); without, each is a bpf_probe_read_kernel call.  On
 * this PVM guest a probe read costs ~25-30 ns: the six of the chain were a
 * quarter of the enter (scripts/bench/README.md, "Per syscall: helper
 * calls").  cast is a constant: each program is built with one path only.
 */
static __always_inline bool fd_ident(int fd, struct fd_ident *id, const bool cast)
{
	struct fdtable *fdt = bpf_get_current_task_btf()->files->fdt;
	struct file **fds, *file = NULL;
	struct super_block *sb;
	struct inode *inode;
	__u32 s_dev;
	unsigned long s_magic;
	__u64 ino;
	__u16 mode;

	if (!fdt || fd < 0 || fd >= fdt->max_fds)
		return false;
	fds = fdt->fd;
	if (cast) {
		/* The slot as a struct holding one pointer (llist_node: a
		 * pointer and nothing else, in every kernel): a fault-safe load,
		 * not a helper call. */
		struct llist_node *slot = bpf_rdonly_cast(&fds[fd],
							  bpf_core_type_id_kernel(struct llist_node));

		file = (struct file *)slot->next;
		if (!file)
			return false;
		file = bpf_rdonly_cast(file, bpf_core_type_id_kernel(struct file));
		inode = bpf_rdonly_cast(file->f_inode, bpf_core_type_id_kernel(struct inode));
		if (!inode)
			return false;
		mode = inode->i_mode;
	} else {
		if (bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]) || !file)
			return false;
		inode = BPF_CORE_READ(file, f_inode);
		if (!inode)
			return false;
		mode = BPF_CORE_READ(inode, i_mode);
	}
	id->inode = inode;
	id->mode = mode & AMP_S_IFMT;
	if (id->mode != AMP_S_IFREG)
		return true;	/* (dev, ino): regular files' only */
	if (cast) {
		sb = bpf_rdonly_cast(inode->i_sb, bpf_core_type_id_kernel(struct super_block));
		s_dev = sb->s_dev;
		s_magic = sb->s_magic;
		ino = inode->i_ino;
	} else {
		sb = BPF_CORE_READ(inode, i_sb);
		s_dev = BPF_CORE_READ(sb, s_dev);
		s_magic = BPF_CORE_READ(sb, s_magic);
		ino = BPF_CORE_READ(inode, i_ino);
	}
	id->fk.dev = inode_dev(inode, s_dev, s_magic);
	id->fk.ino = ino;
	return true;
}

/* The syscall's first two arguments: from the saved registers on the raw
 * tracepoint (read only for a syscall we want), else as the tracepoint's
 * record gave them (arg0, arg1). */
#define SYSCALL_ARG(n) (!regs ? arg##n : (n) == 0 ? PT_REGS_PARM1_CORE_SYSCALL(regs) : \
					      PT_REGS_PARM2_CORE_SYSCALL(regs))

static __always_inline int logging_syscall_enter(long nr, struct pt_regs *regs,
						 __u64 arg0, __u64 arg1, const bool cast)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct pending_syscall p = {};
	struct fd_ident id = {};
	struct amp_file_stats *fs;
	struct amp_thread *t;
	struct amp_entry *e;
	__u32 key = nr;
	struct inode *inode;
	__u8 *kind;
	__u16 mode;

	kind = bpf_map_lookup_elem(&syscall_kinds, &key);
	if (!kind || *kind == AMP_SYS_NONE || !task_is_target(pid_tgid))
		return 0;
	if (*kind == AMP_SYS_SOCKRECV || *kind == AMP_SYS_RECVMSG) {
		/* Raw tracepoint only (its exit has no syscall number): keep it
		 * pending; the per-syscall hook skips this enter altogether. */
		t = thread_state(true);
		if (t) {
			t->p = p;
			t->p.nr = nr;
			t->p.kind = *kind;
		}
		return 0;
	}

	if (!fd_ident((int)SYSCALL_ARG(0), &id, cast))
		return 0;
	inode = id.inode;
	mode = id.mode;
	p.nr = nr;
	p.kind = *kind;

	if (p.kind == AMP_SYS_WRITE) {
		struct amp_file_key fk = id.fk;

		if (mode != AMP_S_IFREG)
			return 0;
		t = thread_state(true);
		if (!t)
			return 0;
		if (t->last_file.ino != fk.ino || t->last_file.dev != fk.dev) {
			/* Named while we hold the inode (a full map: traced, counted). */
			fs = file_stats(&fk, inode, pid_tgid >> 32);
			if (fs && fs->excluded)
				return 0;
			if (fs) {
				file_delta_flush(t, pid_tgid >> 32);
				t->last_file = fk;
			}
		}
		p.fd_dev = fk.dev;
		p.fd_ino = fk.ino;
		e = entry_open(t, pid_tgid, &p, bpf_ktime_get_boot_ns());
		if (!e)
			return 0;
		if (relay_links && relays_seen)
			relay_link_write(e, pid_tgid >> 32, &fk);
	} else {
		/* Receives on sockets, and journald's reads of kernel messages
		 * (/dev/kmsg, char 1:11): each one a log record. */
		p.kmsg = mode == AMP_S_IFCHR && BPF_CORE_READ(inode, i_rdev) == AMP_KMSG_RDEV;
		if (mode != AMP_S_IFSOCK && !p.kmsg)
			return 0;
		p.arg_ptr = SYSCALL_ARG(1);
		t = thread_state(true);
		if (!t)
			return 0;
	}
	t->p = p;
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(on_sys_enter, struct pt_regs *regs, long nr)
{
	return logging_syscall_enter(nr, regs, 0, 0, false);
}

SEC("tracepoint")	/* attached by the loader: syscalls:sys_enter_<name> */
int on_syscall_enter(struct trace_event_raw_sys_enter *ctx)
{
	return logging_syscall_enter(ctx->id, NULL, ctx->args[0], ctx->args[1], false);
}

/* The same where the kernel has bpf_rdonly_cast (6.2+): the loader loads
 * one of the two. */
SEC("tracepoint")
int on_syscall_enter_cast(struct trace_event_raw_sys_enter *ctx)
{
	return logging_syscall_enter(ctx->id, NULL, ctx->args[0], ctx->args[1], true);
}

/* recvmmsg returns a message count; the bytes are in each msg_len. */
static __always_inline __s64 recvmmsg_bytes(__u64 vec, long n)
{
	__s64 bytes = 0;

	for (int i = 0; i < AMP_RECVMMSG_MAX && i < n; i++) {
		unsigned int len = 0;

		bpf_probe_read_user(&len, sizeof(len),
				    (void *)(vec + i * sizeof(struct mmsghdr) +
					     offsetof(struct mmsghdr, msg_len)));
		bytes += len;
	}
	return bytes;
}

/* A receive returned ret bytes (or messages): the entry of one log record,
 * and who sent it. */
static __always_inline void receive_done(struct amp_thread *t, __u32 nr, __u8 kind,
					 __u64 arg_ptr, bool kmsg, long ret)
{
	struct pending_syscall p = { .nr = nr, .kind = kind };
	struct sender_id who = {};
	struct amp_entry *e;

	if (ret <= 0)
		return;
	if (relay_links) {	/* --preset write: a relay's receive, no entry */
		relay_receive(kind);
		return;
	}
	e = entry_open(t, bpf_get_current_pid_tgid(), &p, bpf_ktime_get_boot_ns());
	if (!e)
		return;
	e->bytes = kind == AMP_SYS_RECVMMSG ? recvmmsg_bytes(arg_ptr, ret) : ret;
	receive_sender(&who, kind, arg_ptr, kmsg);
	entry_sender(e, &who);
}

/* nr: the syscall, or -1 where the hook does not say (raw sys_exit). */
static __always_inline int logging_syscall_exit(long nr, long ret)
{
	struct amp_thread *t;
	struct pending_syscall *p;
	struct amp_entry *e;

	if (nr >= 0) {
		__u32 key = nr;
		__u8 *kind = bpf_map_lookup_elem(&syscall_kinds, &key);

		/* recvmsg, recvfrom: everything is known here, at exit. */
		if (kind && (*kind == AMP_SYS_SOCKRECV || *kind == AMP_SYS_RECVMSG)) {
			if (ret > 0 && task_is_target(bpf_get_current_pid_tgid()) &&
			    (t = thread_state(true)))
				receive_done(t, nr, *kind, 0, false, ret);
			return 0;
		}
	}
	t = thread_state(false);
	if (!t || t->p.kind == AMP_SYS_NONE)
		return 0;
	p = &t->p;
	if (p->kind == AMP_SYS_WRITE) {
		e = thread_entry(t);
		if (e) {
			e->bytes = ret;
			if (ret <= 0)
				e->flags |= AMP_ENTRY_FAILED;
			file_account_write(t, p, e->id, ret);
		}
	} else {
		receive_done(t, p->nr, p->kind, p->arg_ptr, p->kmsg, ret);
	}
	p->kind = AMP_SYS_NONE;
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs *regs, long ret)
{
	return logging_syscall_exit(-1, ret);
}

SEC("tracepoint")	/* attached by the loader: syscalls:sys_exit_<name> */
int on_syscall_exit(struct trace_event_raw_sys_exit *ctx)
{
	return logging_syscall_exit(ctx->id, ctx->ret);
}

/* A thread that exits ends its entry: nothing else can be charged to it.
 * A process that exits may have sent records still to be named. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_thread_exit)
{
	struct amp_thread *t = thread_state(false);

	sender_exit(bpf_get_current_task_btf());
	if (t) {
		entry_close(t, bpf_ktime_get_boot_ns(), 0);
		early_txn_drop(t);
		file_delta_flush(t, bpf_get_current_pid_tgid() >> 32);
	}
	return 0;
}

#endif /* AMPTRACE_SYSCALL_BPF_H */
