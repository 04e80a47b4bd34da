/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ext4 without a journal: metadata kernel threads dirty for a traced file.
 * With no jbd2, the flusher allocating a file's delayed blocks (mballoc's
 * bitmaps and group descriptors, the inode's table block) and the worker
 * converting its unwritten extents after the data I/O mark those buffers
 * dirty in the block device's page cache, in their own context: no entry
 * to own them, and no transaction whose record could share them.  The file
 * they work for is known (kthread_files): such a folio is filed under a
 * stand-in transaction for that file, one per file, whose record (sent
 * once, committed, all its handles the file's) says so.  When the folio is
 * written its bytes go to user space as that transaction's late bytes
 * (txn_page_written), which the ledger splits over the entries that
 * dirtied the file by their pages of it, as it does a kernel thread's
 * handle for a file in a jbd2 transaction (those still settling too; with
 * none, by window).
 */
#ifndef AMPTRACE_NOJOURNAL_BPF_H
#define AMPTRACE_NOJOURNAL_BPF_H

/* Stand-in transaction ids: the high bit, apart from jbd2's (a filesystem
 * without a journal has no jbd2 transactions on its device anyway). */
#define AMP_NJ_TID_BIT 0x80000000u

__u32 nj_next_tid = 0;

/* Traced file -> its stand-in transaction (the ledger knows it by its
 * record).  LRU: a file evicted gets a new one, with a record of its own. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct amp_file_key);
	__type(value, struct amp_txn_key);
} nj_owners SEC(".maps");

/* The stand-in transaction of tag's file: found, or made and announced.
 * false: none (no room in the ring: by window). */
static __always_inline bool nj_owner(const struct kthread_tag *tag, struct inode *host,
				     struct amp_txn_key *key)
{
	struct amp_txn_key *p = bpf_map_lookup_elem(&nj_owners, &tag->file);
	struct amp_txn_rec *rec;

	if (p) {
		*key = *p;
		return true;
	}
	key->dev = tag->sb_dev;
	key->tid = AMP_NJ_TID_BIT | (__sync_fetch_and_add(&nj_next_tid, 1) & ~AMP_NJ_TID_BIT);
	/* Reserved, not on the stack: the dirtying program's frame is large. */
	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (!rec) {
		STAT_INC(ringbuf_drops);
		return false;
	}
	__builtin_memset(rec, 0, sizeof(*rec));
	rec->type = AMP_REC_TXN;
	rec->committed = 1;
	rec->dev = key->dev;
	rec->tid = key->tid;
	rec->st.fs = AMP_FS_EXT4NJ;
	rec->st.disk = bdev_inode_disk(host);
	rec->st.handles_file = 1;
	rec->st.files[0].ino = tag->file.ino;
	rec->st.files[0].dev = tag->file.dev;
	rec->st.files[0].handles = 1;
	if (bpf_map_update_elem(&nj_owners, &tag->file, key, BPF_NOEXIST)) {
		/* Another CPU made one meanwhile (or no room): use that. */
		bpf_ringbuf_discard(rec, 0);
		p = bpf_map_lookup_elem(&nj_owners, &tag->file);
		if (!p)
			return false;
		*key = *p;
		return true;
	}
	bpf_ringbuf_submit(rec, ringbuf_wakeup_flag(sizeof(*rec)));
	return true;
}

/* A block-device folio a kernel thread dirtied with no entry and outside
 * a jbd2 commit: its traced file's, if it works for one on this device. */
static __always_inline void nj_page_dirtied(struct amp_page_key *key, struct inode *host,
					    const void *flags)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct kthread_tag *p = bpf_map_lookup_elem(&kthread_files, &tid), tag;
	struct amp_txn_key txn;

	if (!p)
		return;
	tag = *p;
	/* The device the folio is of (its bdev inode's i_rdev) must be the
	 * filesystem's. */
	if (tag.sb_dev != host->i_rdev || !nj_owner(&tag, host, &txn))
		return;
	txn_page_file(key, &txn, flags);
}

/*
 * A kernel thread's handle that names no inode: what it dirties next is
 * for no file, until a block mapping names one.  6.5+ has
 * ext4_journal_start_sb for those; before, ext4_journal_start fires for
 * every handle, ahead of the handle's block mapping (the flusher's, the
 * extent conversion's), which names the file again.  The loader keeps the
 * one the kernel has.
 *
 * Only an outermost handle: one started inside another (current's
 * journal_info is set: jbd2's handle, or without a journal ext4's nesting
 * count) is part of the outer one's work.  Before 6.5 the flusher's block
 * mapping opens such handles in the middle of its file's work: a new
 * extent-tree block's quota charge dirties the inode (ext4_dirty_inode),
 * and the block itself is dirtied just after; forgotten there, it went by
 * window.
 */
static __always_inline int kthread_file_forget(void)
{
	if (current_is_kthread() && !bpf_get_current_task_btf()->journal_info)
		kthread_file_note((__u32)bpf_get_current_pid_tgid(), NULL);
	return 0;
}

SEC("tp_btf/ext4_journal_start_sb")
int BPF_PROG(on_ext4_journal_start_sb)
{
	return kthread_file_forget();
}

SEC("tp_btf/ext4_journal_start")
int BPF_PROG(on_ext4_journal_start)
{
	return kthread_file_forget();
}

/*
 * The end of a kernel thread's work on its file, as the kernel says it:
 * else kthread_files outlives it, cleared only by the thread's next ext4
 * handle or block mapping.  The flusher that wrote a traced file's pages
 * then writes the block device's own inode and, redirtying a folio it
 * cannot write now (folio_redirty_for_writepage, writeback_dirty_folio in
 * the flusher), filed it under that file's stand-in, disowning the entry
 * that dirtied it; and a worker's tid, reused by a new kworker, passed the
 * file on.  Both tracepoints fire often: one lookup, a delete only when the
 * thread has a file.
 */
static __always_inline int kthread_file_done(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	if (bpf_map_lookup_elem(&kthread_files, &tid))
		bpf_map_delete_elem(&kthread_files, &tid);
	return 0;
}

/* One inode's write-back done (__writeback_single_inode's end): the
 * flusher's mapping and allocation for a file happen within its own, so
 * whatever inode this was, a file named before is no longer worked for. */
SEC("tp_btf/writeback_single_inode")
int BPF_PROG(on_writeback_single_inode)
{
	return kthread_file_done();
}

/* A work item done: a kworker's next one (or the next kworker with its
 * tid) works for a file only once it names it. */
SEC("tp_btf/workqueue_execute_end")
int BPF_PROG(on_workqueue_execute_end)
{
	return kthread_file_done();
}

#endif /* AMPTRACE_NOJOURNAL_BPF_H */
