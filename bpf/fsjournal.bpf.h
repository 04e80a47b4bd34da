/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stage 4: filesystem journal (ext4's jbd2).  A task opens handles in the
 * running transaction (jbd2_handle_start, in its own context): the entry
 * it has open is one of the causes of that transaction.  The jbd2 thread
 * later commits it (jbd2_start_commit .. jbd2_end_commit); the bios it
 * submits meanwhile are that commit's journal blocks.  At the end of the
 * commit one record goes to user space, which splits the bytes over the
 * entries by their share of handles.
 */
#ifndef AMPTRACE_FSJOURNAL_BPF_H
#define AMPTRACE_FSJOURNAL_BPF_H

static __always_inline struct amp_txn_stats *txn_stats(struct amp_txn_key *key, __u32 fs)
{
	struct amp_txn_stats *ts = bpf_map_lookup_elem(&txns, key), *zero;
	__u32 z = 0;

	if (ts)
		return ts;
	zero = bpf_map_lookup_elem(&txn_zero, &z);
	if (!zero)
		return NULL;
	if (bpf_map_update_elem(&txns, key, zero, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&txns, key)) {
		STAT_INC(txns_full);
		return NULL;
	}
	ts = bpf_map_lookup_elem(&txns, key);
	if (ts)
		ts->fs = fs;	/* whoever inserted: the same filesystem */
	return ts;
}

/* Device bytes that belong to a transaction: its journal blocks, or
 * metadata it writes in place (meta).  The path every filesystem's
 * transaction-owned bytes take, at write-out; disk: the key of ds. */
static __always_inline void charge_txn_bytes(struct amp_dev_stats *ds, __u32 disk,
					     struct amp_txn_key *key, __u32 fs, bool meta,
					     __u32 tree, __u32 bytes)
{
	struct amp_txn_stats *ts = txn_stats(key, fs);

	if (!ts)
		return;
	ts->disk = disk;
	if (meta) {
		/* tree: a btrfs block's (enum amp_btrfs_tree), else
		 * AMP_BTRFS_TREES. */
		if (tree < AMP_BTRFS_TREES)
			__sync_fetch_and_add(&ts->tree_bytes[tree & 15], bytes);
		__sync_fetch_and_add(&ts->meta_bytes, bytes);
		__sync_fetch_and_add(&ds->meta_txn, bytes);
	} else {
		__sync_fetch_and_add(&ts->journal_bytes, bytes);
		__sync_fetch_and_add(&ds->journal_txn, bytes);
	}
}

static __always_inline void entry_add_txn(struct amp_entry *e, struct amp_txn_key *key)
{
	__u32 n = e->nr_txns;

	for (int i = 0; i < AMP_ENTRY_TXNS; i++) {
		if (i >= n)
			break;
		if (e->txns[i].tid == key->tid && e->txns[i].dev == key->dev) {
			e->txns[i].handles++;
			return;
		}
	}
	if (n < AMP_ENTRY_TXNS) {
		e->txns[n].dev = key->dev;
		e->txns[n].tid = key->tid;
		e->txns[n].handles = 1;
		e->nr_txns = n + 1;
	} else {
		e->txns_dropped++;
		STAT_INC(entry_txns_dropped);
	}
}

/*
 * Kernel threads that work for one file (ext4's unwritten-extent
 * conversion after the data I/O, the flusher allocating delayed blocks)
 * name its inode just before they open their handle (6.5+): the file
 * their next handle is for, if it is a traced file.  Keyed by tid; the
 * handle consumes it.
 */
struct kthread_tag {
	struct amp_file_key file;
	__u32 sb_dev;		/* the filesystem's s_dev: the handle's journal must match */
	__u32 __pad;
};

/* LRU: kernel worker threads come and go, their last tags with them. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct kthread_tag);
} kthread_tags SEC(".maps");

/*
 * The traced file a kernel thread last worked for in ext4 (named by its
 * handle or its block mapping), not consumed by a handle: without a
 * journal no jbd2 handle follows, and the metadata the thread then marks
 * dirty in the block device's page cache (mballoc's bitmaps and group
 * descriptors, the inode table) is that file's work (nojournal.bpf.h).
 * Cleared when the thread next works for an untraced file or for none.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);	/* as kthread_tags */
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct kthread_tag);
} kthread_files SEC(".maps");

/* tag: the file, or NULL for none.  Written only when it changes: the
 * flusher maps one file's extents in a row. */
static __always_inline void kthread_file_note(__u32 tid, const struct kthread_tag *tag)
{
	struct kthread_tag *p = bpf_map_lookup_elem(&kthread_files, &tid);

	if (!tag) {
		if (p)
			bpf_map_delete_elem(&kthread_files, &tid);
		return;
	}
	if (p && p->file.ino == tag->file.ino && p->file.dev == tag->file.dev &&
	    p->sb_dev == tag->sb_dev)
		return;
	bpf_map_update_elem(&kthread_files, &tid, tag, BPF_ANY);
}

SEC("tp_btf/ext4_journal_start_inode")
int BPF_PROG(on_ext4_journal_start_inode, struct inode *inode)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct kthread_tag tag = {};
	struct amp_file_stats *fs;
	struct super_block *sb;

	if (!current_is_kthread() || !inode)
		return 0;
	sb = inode->i_sb;
	tag.sb_dev = sb->s_dev;
	tag.file.dev = inode_dev(inode, tag.sb_dev, sb->s_magic);
	tag.file.ino = inode->i_ino;
	fs = bpf_map_lookup_elem(&files, &tag.file);
	if (!fs || fs->excluded || !disk_is_target(tag.sb_dev)) {
		/* A stale tag must not name the next handle. */
		bpf_map_delete_elem(&kthread_tags, &tid);
		kthread_file_note(tid, NULL);
		return 0;
	}
	bpf_map_update_elem(&kthread_tags, &tid, &tag, BPF_ANY);
	kthread_file_note(tid, &tag);
	return 0;
}

/* One more kernel-thread handle for traced file f in the transaction. */
static __always_inline bool txn_file_add(struct amp_txn_stats *ts, struct amp_file_key *f)
{
	for (int i = 0; i < AMP_TXN_FILES; i++) {
		struct amp_txn_file *s = &ts->files[i];

		if (s->ino == 0)
			__sync_val_compare_and_swap(&s->ino, 0, f->ino);
		if (s->ino == f->ino && s->dev == 0)
			__sync_val_compare_and_swap(&s->dev, 0, f->dev);
		if (s->ino == f->ino && s->dev == f->dev) {
			__sync_fetch_and_add(&s->handles, 1);
			__sync_fetch_and_add(&ts->handles_file, 1);
			return true;
		}
	}
	return false;	/* a fifth file: by window */
}

/* Kernel thread (tid) -> the transaction of its last handle that named no
 * traced file (see on_ext4_map_blocks). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);	/* as kthread_tags */
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct amp_txn_key);
} kthread_pending SEC(".maps");

/* A kernel thread's handle for a traced file: into the txn's files[]. */
static __always_inline bool txn_add_file_handle(struct amp_txn_stats *ts, __u32 dev)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct kthread_tag *p = bpf_map_lookup_elem(&kthread_tags, &tid), tag;
	struct amp_file_key f;

	if (!p)
		return false;
	tag = *p;
	f = tag.file;
	bpf_map_delete_elem(&kthread_tags, &tid);
	if (tag.sb_dev != dev)
		return false;
	return txn_file_add(ts, &f);
}

/* One handle (a jbd2 handle, an xfs transaction) opened in the current
 * task's context in the transaction key: who caused it. */
/*
 * A traced process's thread opened a handle with no entry open: the work
 * of its next entry (journald creating, sizing and stamping its file
 * before the write fault that opens its start-up entry; a writer creating
 * its file before its first write), which takes it as one of its own
 * (entry_open).  One transaction is kept: a handle in another one sends
 * the kept ones by window.  Counted traced at once, so the ledger holds
 * the commit's share for the entry to come.
 */
static __always_inline void txn_add_early(struct amp_thread *t, struct amp_txn_key *key,
					  struct amp_txn_stats *ts)
{
	struct amp_entry_txn *k = &t->early_txn;

	if (k->dev != key->dev || k->tid != key->tid)
		early_txn_drop(t);
	k->dev = key->dev;
	k->tid = key->tid;
	k->handles++;
	__sync_fetch_and_add(&ts->handles_traced, 1);
}

static __always_inline void txn_add_handle(struct amp_txn_key *key, __u32 fs)
{
	struct amp_txn_stats *ts = txn_stats(key, fs);
	struct amp_thread *t;
	struct amp_entry *e;

	if (!ts)
		return;
	t = thread_state(false);
	e = thread_entry(t);
	if (!e) {
		/* A kernel thread's handle is shared by the entries that dirtied
		 * the traced file it names, else by window; an untraced
		 * process's is its own business, never charged to an entry.  A
		 * traced process's thread outside any logging syscall (a writer
		 * creating its file, journald's "journal-offline" thread syncing
		 * and truncating the file it archives) handles for its next
		 * entry, or by window if none comes. */
		if (!current_is_kthread() && task_is_target(bpf_get_current_pid_tgid())) {
			if (!t)
				t = thread_state(true);
			if (t)
				txn_add_early(t, key, ts);
			else
				__sync_fetch_and_add(&ts->handles_untraced, 1);
		} else if (!current_is_kthread()) {
			__sync_fetch_and_add(&ts->handles_user, 1);
		} else if (!txn_add_file_handle(ts, key->dev)) {
			__u32 tid = (__u32)bpf_get_current_pid_tgid();

			__sync_fetch_and_add(&ts->handles_untraced, 1);
			if (fs == AMP_FS_JBD2)
				bpf_map_update_elem(&kthread_pending, &tid, key, BPF_ANY);
		}
		return;
	}
	__sync_fetch_and_add(&ts->handles_traced, 1);
	entry_add_txn(e, key);
}

/*
 * ext4 starts the handle that converts extents after the data I/O from a
 * reservation, naming no file (ext4_journal_start_reserved); the file
 * comes after, as the kworker maps its blocks.  (Before 6.5 no handle
 * names one at start.)  So a kernel thread's handle that named no traced
 * file waits here for the thread's next block mapping: if that is a traced
 * file's, the handle moves to it from the window's share.  Every kernel
 * thread's mapping also notes its file (kthread_file_note).
 */
SEC("tp_btf/ext4_ext_map_blocks_enter")
int BPF_PROG(on_ext4_map_blocks, struct inode *inode)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct amp_txn_key *p, key;
	struct amp_txn_stats *ts;
	struct amp_file_stats *fs;
	struct amp_file_key f = {};
	struct super_block *sb;

	if (!current_is_kthread() || !inode)
		return 0;
	sb = inode->i_sb;
	f.dev = inode_dev(inode, sb->s_dev, sb->s_magic);
	f.ino = inode->i_ino;
	fs = disk_is_target(sb->s_dev) ? bpf_map_lookup_elem(&files, &f) : NULL;
	if (fs && !fs->excluded) {
		/* Every kernel: the flusher allocating delayed blocks and the
		 * extent conversion both map the file's blocks before they
		 * dirty its metadata (before 6.5 no handle names it). */
		struct kthread_tag tag = { .file = f, .sb_dev = sb->s_dev };

		kthread_file_note(tid, &tag);
	} else {
		kthread_file_note(tid, NULL);
		fs = NULL;
	}
	p = bpf_map_lookup_elem(&kthread_pending, &tid);
	if (!p)
		return 0;
	key = *p;
	bpf_map_delete_elem(&kthread_pending, &tid);
	if (sb->s_dev != key.dev || !fs)
		return 0;
	ts = bpf_map_lookup_elem(&txns, &key);
	if (ts && txn_file_add(ts, &f))
		__sync_fetch_and_sub(&ts->handles_untraced, 1);
	return 0;
}

SEC("tp_btf/jbd2_handle_start")
int BPF_PROG(on_jbd2_handle_start, dev_t dev, tid_t tid, unsigned int type,
	     unsigned int line_no, int requested_blocks)
{
	struct amp_txn_key key = { .dev = dev, .tid = tid };

	if (disk_is_target(dev))
		txn_add_handle(&key, AMP_FS_JBD2);
	return 0;
}

/* The kernel may mark these arguments as possibly NULL (Debian 13's 6.12
 * does, for the jbd2 commit events): then the verifier takes no field
 * address of them (BPF_CORE_READ) before a NULL check. */
static __always_inline bool txn_key_of(journal_t *journal, transaction_t *t,
				       struct amp_txn_key *key)
{
	if (!journal || !t)
		return false;
	key->dev = BPF_CORE_READ(journal, j_fs_dev, bd_dev);
	key->tid = BPF_CORE_READ(t, t_tid);
	return true;
}

SEC("tp_btf/jbd2_start_commit")
int BPF_PROG(on_jbd2_start_commit, journal_t *journal, transaction_t *t)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct amp_txn_key key;

	if (!txn_key_of(journal, t, &key) || !disk_is_target(key.dev))
		return 0;
	if (bpf_map_update_elem(&jbd2_committing, &tid, &key, BPF_ANY))
		STAT_INC(commits_full);
	return 0;
}

/*
 * The first commit after mount (or after a journal flush: JBD2_FLUSHED)
 * writes the journal superblock before jbd2_start_commit, in the jbd2
 * thread, for the transaction still running: the one it is about to
 * commit.  So that bio is that commit's, not the window's.  (The thread
 * only ever commits; a superblock write inside a commit is already the
 * commit's, and a checkpointing task's is no jbd2 thread's bio.)
 */
SEC("tp_btf/jbd2_write_superblock")
int BPF_PROG(on_jbd2_write_superblock, journal_t *journal)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct amp_txn_key key;

	if (!journal || BPF_CORE_READ(journal, j_task, pid) != tid ||
	    bpf_map_lookup_elem(&jbd2_committing, &tid))
		return 0;
	if (!txn_key_of(journal, BPF_CORE_READ(journal, j_running_transaction), &key) ||
	    !disk_is_target(key.dev))
		return 0;
	/* jbd2_start_commit sets the same key; jbd2_end_commit clears it. */
	if (bpf_map_update_elem(&jbd2_committing, &tid, &key, BPF_ANY))
		STAT_INC(commits_full);
	return 0;
}

SEC("tp_btf/jbd2_end_commit")
int BPF_PROG(on_jbd2_end_commit, journal_t *journal, transaction_t *t)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct amp_txn_rec rec = { .type = AMP_REC_TXN, .committed = 1 };
	struct amp_txn_key key;
	struct amp_txn_stats *ts;

	bpf_map_delete_elem(&jbd2_committing, &tid);
	if (!txn_key_of(journal, t, &key))
		return 0;
	ts = bpf_map_lookup_elem(&txns, &key);
	if (!ts)
		return 0;
	rec.dev = key.dev;
	rec.tid = key.tid;
	rec.st = *ts;
	bpf_map_delete_elem(&txns, &key);
	if (bpf_ringbuf_output(&events, &rec, sizeof(rec), ringbuf_wakeup_flag(sizeof(rec))))
		STAT_INC(ringbuf_drops);
	return 0;
}

#endif /* AMPTRACE_FSJOURNAL_BPF_H */
