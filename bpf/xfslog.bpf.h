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

struct xfs_mount___amp;

struct xlog___amp {
	struct xfs_cil___amp *l_cilp;
	struct xfs_mount___amp *l_mp;
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

/*
 * A permanent transaction rolls: an allocation's deferred work (the
 * reverse-map btree's update, where mkfs.xfs enables rmapbt, its default
 * from xfsprogs 6.5; refcount and free-extent items) commits once per roll,
 * and the file tag the first commit takes (txn_add_file_handle) would leave
 * the rest untagged.  So a kernel thread's tag stays with its chain (the
 * transaction it allocated and every roll of it: rolls duplicate theirs,
 * not allocate) until it allocates its next transaction.  Not keyed by the
 * log ticket the rolls share: read at xfs_trans_commit (at
 * xfs_trans_commit_items it is let go), that worked on 6.18 only; 6.1 and
 * 5.15 stayed at 89-90 %.  Set by the loader where xfs_trans_alloc, which
 * ends a chain, is attached: without it a tag would never end.
 */
const volatile bool xfs_chains = false;

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);	/* as kthread_tags */
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct kthread_tag);
} xfs_chain_tags SEC(".maps");

SEC("tp_btf/xfs_trans_alloc")
int BPF_PROG(on_xfs_trans_alloc, void *trans)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	/* Looked up first: the delete takes a bucket lock, and most
	 * kernel threads' transactions have no chain. */
	if (current_is_kthread() && bpf_map_lookup_elem(&xfs_chain_tags, &tid))
		bpf_map_delete_elem(&xfs_chain_tags, &tid);
	return 0;
}

/* Before a kernel thread's commit takes its tag: keep the tag for the
 * chain's next commits, or give this one the chain's. */
static __always_inline void xfs_chain_tag(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct kthread_tag *tag = bpf_map_lookup_elem(&kthread_tags, &tid);

	if (tag) {
		bpf_map_update_elem(&xfs_chain_tags, &tid, tag, BPF_ANY);
		return;
	}
	tag = bpf_map_lookup_elem(&xfs_chain_tags, &tid);
	if (tag)
		bpf_map_update_elem(&kthread_tags, &tid, tag, BPF_ANY);
}

/* A transaction committed into the CIL: a handle of its sequence.  (Its
 * argument may be NULL to the verifier, which then refuses any arithmetic
 * on it before a check: 6.12's does.) */
SEC("tp_btf/xfs_trans_commit_items")
int BPF_PROG(on_xfs_commit_items, void *trans)
{
	struct xfs_trans___amp *tp = trans;
	struct xfs_mount___amp *mp;
	struct amp_txn_key key;

	if (!tp)
		return 0;
	mp = BPF_CORE_READ(tp, t_mountp);
	if (!mp)
		return 0;
	key.dev = BPF_CORE_READ(mp, m_super, s_dev);
	if (!disk_is_target(key.dev))
		return 0;
	key.tid = (__u32)BPF_CORE_READ(mp, m_log, l_cilp, xc_current_sequence);
	if (xfs_chains && current_is_kthread())
		xfs_chain_tag();
	txn_add_handle(&key, AMP_FS_XFS);
	return 0;
}

/* A kernel thread names the traced file its next transaction is for:
 * ioend work before it (the kworker that converts unwritten extents or
 * sets the size after the data I/O), the flusher inside it. */
static __always_inline void xfs_tag_file(struct xfs_inode___amp *ip)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct kthread_tag tag = {};
	struct amp_file_stats *fs;
	struct inode *inode;

	if (!ip || !current_is_kthread())	/* ip first: see on_xfs_commit_items */
		return;
	inode = (struct inode *)((void *)ip + bpf_core_field_offset(struct xfs_inode___amp, i_vnode));
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

/* A change to a file's extent map by a kernel thread, inside its
 * transaction: the flusher allocating a traced file's delayed blocks at
 * write-back (xfs_bmapi_convert_delalloc) names no file otherwise, and each
 * such transaction's log and, once the AIL pushes them, its inode and
 * btree buffers would go by window.  Also blockgc trimming a file's
 * preallocation and inodegc freeing an unlinked file's blocks: that
 * file's work too.  (A change outside a transaction, a copy-on-write
 * fork's conversion or a failed write-back's delalloc punched, leaves its
 * tag to the thread's next commit: current->journal_info does not tell,
 * as 6.18's xfs leaves it unset inside a transaction; checked, it took
 * every one of the flusher's tags away.) */
SEC("tp_btf/xfs_bmap_pre_update")
int BPF_PROG(on_xfs_bmap_pre_update, void *ip)
{
	xfs_tag_file(ip);
	return 0;
}

/* Set by the loader where a traced disk holds xfs: its log by cause. */
const volatile bool xfs_traced = false;

/* A bio whose completion function (bi_end_io) is this: an xfs log write. */
static __always_inline bool end_io_is_xfs_log(__u64 end_io)
{
	return xfs_log_end_io && end_io == xfs_log_end_io;
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

/*
 * Metadata buffers written back in place, after their checkpoint: xfsaild
 * pushing the AIL (inode cluster buffers, AGF/AGI/AGFL, btree blocks), the
 * log worker covering an idle log, unmount.  Each bio of a buffer has the
 * buffer as bi_private; each log item attached to it (the buffer's own, if
 * the buffer was logged; the inode items of an inode cluster) names the
 * checkpoint that last logged it (xfs_item_charge_seq, 5.14+).  The bytes
 * go to the latest of those checkpoints, which the ledger splits like its
 * log bytes (a late record if its own went already).  A buffer none of
 * whose items names one (never logged while traced) stays by window.
 */
struct xfs_log_item___amp {
	struct list_head li_bio_list;
	__u64 li_seq;			/* xfs_csn_t */
} __attribute__((preserve_access_index));

struct xfs_buf_log_item___amp {
	struct xfs_log_item___amp bli_item;
} __attribute__((preserve_access_index));

struct xfs_buf___amp {
	struct xfs_mount___amp *b_mount;
	struct xfs_buf_log_item___amp *b_log_item;
	struct list_head b_li_list;
} __attribute__((preserve_access_index));

#define AMP_XFS_BUF_ITEMS 8

/*
 * The checkpoint an item was last committed in: what its write-back is
 * charged to.  li_seq is set at an item's first commit only (what
 * xfs_log_item_in_current_chkpt needs), and an inode's item lives as long
 * as the inode is cached: journald's file would charge every write-back of
 * its inode cluster to the checkpoint that first logged it.  An inode item
 * keeps its latest one in ili_commit_seq (5.14+, as li_seq); a buffer's
 * item is freed once the buffer is clean, so its li_seq is the first
 * checkpoint since its last write-back.
 */
#define AMP_XFS_LI_INODE 0x123b

struct xfs_log_item___seq {
	unsigned int li_type;
	__u64 li_seq;
} __attribute__((preserve_access_index));

struct xfs_inode_log_item___amp {
	__u64 ili_commit_seq;		/* xfs_csn_t */
} __attribute__((preserve_access_index));

/* Log items in the AIL -> the checkpoint that last logged them, as read
 * when it put them there (xfs_ail_event: an inode item's ili_commit_seq is
 * cleared when the inode is flushed, before its buffer's bio is queued). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);	/* a lost item only holds longer */
	__uint(max_entries, 65536);
	__type(key, __u64);			/* the log item */
	__type(value, struct amp_txn_key);	/* its checkpoint, counted there */
} xfs_ail_items SEC(".maps");

static __always_inline __u64 xfs_item_seq(void *item)
{
	struct xfs_log_item___seq *lip = item;
	struct xfs_inode_log_item___amp *iip = item;	/* ili_item is first */
	__u64 seq;

	if (bpf_core_field_exists(iip->ili_commit_seq) &&
	    BPF_CORE_READ(lip, li_type) == AMP_XFS_LI_INODE) {
		seq = BPF_CORE_READ(iip, ili_commit_seq);
		if (seq)
			return seq;
	}
	return BPF_CORE_READ(lip, li_seq);
}

/* A buffer write queued: to fs_bios as metadata of its checkpoint. */
/* The checkpoint an item's write-back is charged to. */
static __always_inline __u64 xfs_item_charge_seq(void *item)
{
	__u64 ikey = (__u64)item;
	struct amp_txn_key *k = bpf_map_lookup_elem(&xfs_ail_items, &ikey);

	return k ? k->tid : xfs_item_seq(item);
}

static __always_inline void xfs_buf_bio_queued(struct bio *bio)
{
	struct xfs_buf___amp *bp = BPF_CORE_READ(bio, bi_private);
	struct amp_fs_bio fb = { .fs = AMP_FS_XFS, .meta = 1 };
	struct xfs_buf_log_item___amp *bli;
	struct list_head *pos;
	void *head;
	__u64 bkey = (__u64)bio, seq = 0, s;

	if (!bp || !bpf_core_field_exists(struct xfs_log_item___amp, li_seq) ||
	    (BPF_CORE_READ(bio, bi_opf) & AMP_REQ_OP_MASK) != REQ_OP_WRITE)
		return;
	bli = BPF_CORE_READ(bp, b_log_item);
	if (bli)
		seq = xfs_item_charge_seq(bli);	/* bli_item is first */
	/* The inode items of a cluster, from the last attached back: the
	 * newest sequence among the first few (one inode relogged later than
	 * the others is the common case: the logger's file). */
	head = (void *)bp + bpf_core_field_offset(struct xfs_buf___amp, b_li_list);
	pos = BPF_CORE_READ(bp, b_li_list.prev);
	for (int i = 0; i < AMP_XFS_BUF_ITEMS && pos && (void *)pos != head; i++) {
		struct xfs_log_item___amp *lip = (void *)pos -
			bpf_core_field_offset(struct xfs_log_item___amp, li_bio_list);

		s = xfs_item_charge_seq(lip);
		if (s > seq)
			seq = s;
		pos = BPF_CORE_READ(pos, prev);
	}
	if (!seq)
		return;
	fb.txn.dev = BPF_CORE_READ(bp, b_mount, m_super, s_dev);
	fb.txn.tid = (__u32)seq;
	if (bpf_map_update_elem(&fs_bios, &bkey, &fb, BPF_ANY))
		STAT_INC(jbd2_bios_full);
}

/*
 * A checkpoint's log items still in the AIL, waiting to be written back in
 * place: while any is, its buffers' late bytes may still come, so user
 * space holds the checkpoint's entries (up to a limit, see the ledger)
 * rather than print them and send those bytes by window.  The AIL events
 * (xfs_ail_insert, _move, _delete) name the item; the checkpoint that
 * last logged it (xfs_item_seq) is the one its write-back will charge
 * (xfs_buf_bio_queued reads it back from xfs_ail_items), so an item
 * relogged in a later checkpoint moves to that one's count.
 */
struct xfs_log_item___ail {
	__u64 li_seq;			/* xfs_csn_t */
	struct xlog___amp *li_log;	/* 5.19+ */
	struct xfs_mount___amp *li_mountp;	/* before */
} __attribute__((preserve_access_index));

/* Checkpoints the AIL has counted (0: all written back), the oldest
 * evicted first: the ledger takes a checkpoint it does not find for one
 * with nothing to wait for, once the AIL had time to count it. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct amp_txn_key);
	__type(value, __s64);			/* its items in the AIL */
} xfs_ail_seqs SEC(".maps");

static __always_inline void xfs_ail_count(const struct amp_txn_key *key, __s64 n)
{
	__s64 *c = bpf_map_lookup_elem(&xfs_ail_seqs, key), one = 1;

	if (c) {
		__sync_fetch_and_add(c, n);
		return;
	}
	/* An LRU map: no room only if another CPU made it meanwhile. */
	if (n > 0 && bpf_map_update_elem(&xfs_ail_seqs, key, &one, BPF_NOEXIST) &&
	    (c = bpf_map_lookup_elem(&xfs_ail_seqs, key)))
		__sync_fetch_and_add(c, n);
}

/* The item's checkpoint leaves the AIL count (delete), or moves to the one
 * it was logged in now (insert, move). */
static __always_inline int xfs_ail_event(void *item, bool gone)
{
	struct xfs_log_item___ail *lip = item;
	struct amp_txn_key key, *old;
	__u64 ikey = (__u64)item;

	if (!lip || !bpf_core_field_exists(lip->li_seq))
		return 0;
	old = bpf_map_lookup_elem(&xfs_ail_items, &ikey);
	if (gone) {
		if (old) {
			key = *old;
			bpf_map_delete_elem(&xfs_ail_items, &ikey);
			xfs_ail_count(&key, -1);
		}
		return 0;
	}
	if (bpf_core_field_exists(lip->li_log))
		key.dev = BPF_CORE_READ(lip, li_log, l_mp, m_super, s_dev);
	else
		key.dev = BPF_CORE_READ(lip, li_mountp, m_super, s_dev);
	if (!disk_is_target(key.dev))
		return 0;
	key.tid = (__u32)xfs_item_seq(lip);
	if (old && old->dev == key.dev && old->tid == key.tid)
		return 0;
	if (old)
		xfs_ail_count(old, -1);
	if (bpf_map_update_elem(&xfs_ail_items, &ikey, &key, BPF_ANY))
		return 0;
	xfs_ail_count(&key, 1);
	return 0;
}

SEC("tp_btf/xfs_ail_insert")
int BPF_PROG(on_xfs_ail_insert, void *lip)
{
	return xfs_ail_event(lip, false);
}

SEC("tp_btf/xfs_ail_move")
int BPF_PROG(on_xfs_ail_move, void *lip)
{
	return xfs_ail_event(lip, false);
}

SEC("tp_btf/xfs_ail_delete")
int BPF_PROG(on_xfs_ail_delete, void *lip)
{
	return xfs_ail_event(lip, true);
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
