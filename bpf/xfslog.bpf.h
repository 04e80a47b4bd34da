/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stage 4 for xfs: its log, charged by cause like jbd2's.  xfs has no
 * handles but transactions that commit into the CIL (the committed item
 * list), one checkpoint per sequence N.  A task's dirty transaction
 * commits into the CIL's current sequence (xfs_trans_commit_items, in its
 * own context): its entry is one cause of checkpoint N.  Pushing N writes
 * the log: each log bio's iclog carries the sequence being pushed
 * (xc_push_seq), read when the bio is queued.  At completion those bytes
 * are N's journal bytes, on jbd2's path; the checkpoint's last iclog (its
 * commit record) goes out FUA, and its completion sends N's record.  (No
 * tracepoint marks a finished checkpoint.)  A sequence whose FUA bio was
 * never seen is sent at drain.
 *
 * xfs is a module on most distributions: its types may be missing from the
 * vmlinux BTF the build sees, so the few fields used are declared here, as
 * CO-RE flavours that libbpf relocates against the module's BTF.  The
 * loader attaches these programs only where a traced disk holds xfs.
 */
#ifndef AMPTRACE_XFSLOG_BPF_H
#define AMPTRACE_XFSLOG_BPF_H

struct xfs_cil___amp {
	__u64 xc_current_sequence;	/* xfs_csn_t */
	__u64 xc_push_seq;
} __attribute__((preserve_access_index));

struct xlog___amp {
	struct xfs_cil___amp *l_cilp;
} __attribute__((preserve_access_index));

struct xfs_mount___amp {
	struct xlog___amp *m_log;
	struct super_block *m_super;
} __attribute__((preserve_access_index));

struct xfs_trans___amp {
	struct xfs_mount___amp *t_mountp;
} __attribute__((preserve_access_index));

struct xlog_in_core___amp {
	struct xlog___amp *ic_log;
} __attribute__((preserve_access_index));

struct xfs_inode___amp {
	struct inode i_vnode;
} __attribute__((preserve_access_index));

/* A transaction committed into the CIL: a handle of its sequence. */
SEC("tp_btf/xfs_trans_commit_items")
int BPF_PROG(on_xfs_commit_items, void *trans)
{
	struct xfs_trans___amp *tp = trans;
	struct xfs_mount___amp *mp = BPF_CORE_READ(tp, t_mountp);
	struct amp_txn_key key;

	if (!mp)
		return 0;
	key.dev = BPF_CORE_READ(mp, m_super, s_dev);
	if (!disk_is_target(key.dev))
		return 0;
	key.tid = (__u32)BPF_CORE_READ(mp, m_log, l_cilp, xc_current_sequence);
	txn_add_handle(&key, AMP_FS_XFS);
	return 0;
}

/* ioend work names the file before its transaction (the kworker that
 * converts unwritten extents or sets the size after the data I/O). */
static __always_inline void xfs_tag_file(struct xfs_inode___amp *ip)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct inode *inode = (struct inode *)((void *)ip +
					       bpf_core_field_offset(struct xfs_inode___amp, i_vnode));
	struct kthread_tag tag = {};
	struct amp_file_stats *fs;

	if (!current_is_kthread() || !ip)
		return;
	tag.sb_dev = BPF_CORE_READ(inode, i_sb, s_dev);
	tag.file.dev = tag.sb_dev;	/* inode_dev(): only btrfs differs */
	tag.file.ino = BPF_CORE_READ(inode, i_ino);
	fs = bpf_map_lookup_elem(&files, &tag.file);
	if (!fs || fs->excluded || !disk_is_target(tag.sb_dev)) {
		bpf_map_delete_elem(&kthread_tags, &tid);
		return;
	}
	bpf_map_update_elem(&kthread_tags, &tid, &tag, BPF_ANY);
}

SEC("tp_btf/xfs_unwritten_convert")
int BPF_PROG(on_xfs_unwritten_convert, void *ip)
{
	xfs_tag_file(ip);
	return 0;
}

SEC("tp_btf/xfs_setfilesize")
int BPF_PROG(on_xfs_setfilesize, void *ip)
{
	xfs_tag_file(ip);
	return 0;
}

/* Set by the loader where a traced disk holds xfs: its log by cause. */
const volatile bool xfs_traced = false;

static __always_inline bool bio_is_xfs_log(struct bio *bio)
{
	return xfs_log_end_io && (__u64)BPF_CORE_READ(bio, bi_end_io) == xfs_log_end_io;
}

/* FUA log bios (a checkpoint's commit record) from queue to completion:
 * the checkpoint to send once the request is walked. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct amp_txn_key);
} xfs_fua_bios SEC(".maps");

/* A log bio queued: the sequence its iclog is pushing. */
static __always_inline void xfs_log_bio_queued(struct bio *bio, __u32 dev)
{
	struct xlog_in_core___amp *ic = BPF_CORE_READ(bio, bi_private);
	struct amp_fs_bio fb = { .txn.dev = dev, .fs = AMP_FS_XFS };
	__u64 bkey = (__u64)bio;

	if (!ic)
		return;
	fb.txn.tid = (__u32)BPF_CORE_READ(ic, ic_log, l_cilp, xc_push_seq);
	if (bpf_map_update_elem(&fs_bios, &bkey, &fb, BPF_ANY))
		STAT_INC(jbd2_bios_full);
	/* The checkpoint's last iclog, its commit record, goes out FUA. */
	if (bio->bi_opf & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_FUA)))
		bpf_map_update_elem(&xfs_fua_bios, &bkey, &fb.txn, BPF_ANY);
}

/* The checkpoint's commit record written: its record to user space. */
static __always_inline void xfs_txn_done(struct amp_txn_key *key)
{
	struct amp_txn_stats *ts = bpf_map_lookup_elem(&txns, key);
	struct amp_txn_rec *rec;

	if (!ts)
		return;
	/* Reserved, not built on the stack: this runs a call deep in the
	 * request's program, whose frames together may not pass 512 bytes. */
	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (rec) {
		rec->type = AMP_REC_TXN;
		rec->committed = 1;
		rec->dev = key->dev;
		rec->tid = key->tid;
		rec->st = *ts;
		bpf_ringbuf_submit(rec, ringbuf_wakeup_flag(sizeof(*rec)));
	} else {
		STAT_INC(ringbuf_drops);
	}
	bpf_map_delete_elem(&txns, key);
}

/* The request walked (its bytes now in the checkpoint's journal_bytes):
 * if it carried a commit record, send that checkpoint.  A global function
 * after the walk: nothing of xfs in the walk's own state, whose verifying
 * is near its limits. */
#define AMP_XFS_RQ_BIOS 4

__noinline int xfs_walk_end(__u64 first_bio)
{
	struct bio *bio = (struct bio *)first_bio;

	for (int i = 0; i < AMP_XFS_RQ_BIOS && bio; i++) {
		__u64 bkey = (__u64)bio;
		struct amp_txn_key *p = bpf_map_lookup_elem(&xfs_fua_bios, &bkey), key;

		if (p) {
			key = *p;
			bpf_map_delete_elem(&xfs_fua_bios, &bkey);
			xfs_txn_done(&key);
		}
		bio = BPF_CORE_READ(bio, bi_next);
	}
	return 0;
}

#endif /* AMPTRACE_XFSLOG_BPF_H */
