/* SPDX-License-Identifier: GPL-2.0 */
/*
 * btrfs metadata by cause.  btrfs has no journal: it copies each b-tree
 * block it changes (copy on write) and writes the copies at the commit of
 * the transaction, or, for fsync, the blocks of the per-subvolume log tree
 * at once (btrfs_sync_log), then a superblock.  The kernel tells:
 *
 *  - btrfs_cow_block, in the task that changes a tree: which tree (the
 *    root's objectid) and which new block (cow->start, its bytenr), and in
 *    current->journal_info the transaction handle (->transid).  A block is
 *    copied once per transaction, so one record per written block.
 *  - btrfs_space_reservation("transaction" | "delayed_inode" |
 *    "delayed_item", reserve = 1): a task opening or joining transaction
 *    `transid` for its own work (journald's ftruncate, sqlite's writes).
 *  - btrfs_transaction_commit: transaction fs_info->generation is on disk.
 *
 * A written b-tree page (btree inode, ino 1) has the extent buffer as its
 * folio's private, whose ->start keys the record.  Log-tree blocks copied
 * by a thread with an open entry, and the superblocks its log sync writes,
 * are that entry's own metadata; an untraced process's are its own; all
 * the rest (the commit's fs, extent, csum, free-space and root tree blocks
 * and superblocks) goes to the transaction, which the ledger splits over
 * the entries by their handles in it, as a jbd2 commit's journal blocks.
 *
 * Only loaded (btrfs_cause) when a traced disk holds a btrfs filesystem;
 * btrfs is a module on most distributions, hence the ___amp flavours: the
 * build needs no btrfs types in vmlinux.h, CO-RE finds them in its BTF.
 */
#ifndef AMPTRACE_BTRFS_BPF_H
#define AMPTRACE_BTRFS_BPF_H

/* Set by the loader: a traced disk holds btrfs, and its tracepoints exist. */
const volatile bool btrfs_cause = false;
/* btrfs_end_super_write (kallsyms): completion of a superblock bio. */
const volatile __u64 btrfs_super_end_io = 0;

struct btrfs_key___amp {
	__u64 objectid;
} __attribute__((preserve_access_index));

struct btrfs_device___amp {
	struct block_device *bdev;
} __attribute__((preserve_access_index));

struct btrfs_fs_devices___amp {
	struct btrfs_device___amp *latest_dev;
} __attribute__((preserve_access_index));

struct btrfs_fs_info___amp {
	struct super_block *sb;
	__u64 generation;
	struct btrfs_fs_devices___amp *fs_devices;
} __attribute__((preserve_access_index));

struct btrfs_root___amp {
	struct btrfs_key___amp root_key;
	struct btrfs_fs_info___amp *fs_info;
} __attribute__((preserve_access_index));

struct extent_buffer___amp {
	__u64 start;
} __attribute__((preserve_access_index));

/* RUNNING is 0 in every kernel; any other state is a commit under way. */
enum btrfs_trans_state___amp { AMP_BTRFS_TRANS_RUNNING = 0 };

struct btrfs_transaction___amp {
	enum btrfs_trans_state___amp state;
} __attribute__((preserve_access_index));

struct btrfs_trans_handle___amp {
	__u64 transid;
	struct btrfs_transaction___amp *transaction;
	struct btrfs_fs_info___amp *fs_info;
} __attribute__((preserve_access_index));

/* Root objectids (include/uapi/linux/btrfs_tree.h). */
#define AMP_BTRFS_ROOT_TREE	 1
#define AMP_BTRFS_EXTENT_TREE	 2
#define AMP_BTRFS_CHUNK_TREE	 3
#define AMP_BTRFS_DEV_TREE	 4
#define AMP_BTRFS_FS_TREE	 5
#define AMP_BTRFS_CSUM_TREE	 7
#define AMP_BTRFS_FREE_SPACE_TREE 10
#define AMP_BTRFS_BLOCK_GROUP_TREE 11
#define AMP_BTRFS_FIRST_FREE	 256
#define AMP_BTRFS_LAST_FREE	 (-256LL)
#define AMP_BTRFS_TREE_LOG	 (-6LL)
#define AMP_BTRFS_TREE_LOG_FIXUP (-7LL)

static __always_inline __u8 btrfs_tree_of(__s64 objectid)
{
	switch (objectid) {
	case AMP_BTRFS_ROOT_TREE: return AMP_BTRFS_T_ROOT;
	case AMP_BTRFS_EXTENT_TREE: return AMP_BTRFS_T_EXTENT;
	case AMP_BTRFS_CHUNK_TREE: return AMP_BTRFS_T_CHUNK;
	case AMP_BTRFS_DEV_TREE: return AMP_BTRFS_T_DEV;
	case AMP_BTRFS_FS_TREE: return AMP_BTRFS_T_FS;
	case AMP_BTRFS_CSUM_TREE: return AMP_BTRFS_T_CSUM;
	case AMP_BTRFS_FREE_SPACE_TREE: return AMP_BTRFS_T_FREE_SPACE;
	case AMP_BTRFS_BLOCK_GROUP_TREE: return AMP_BTRFS_T_BLOCK_GROUP;
	case AMP_BTRFS_TREE_LOG:
	case AMP_BTRFS_TREE_LOG_FIXUP: return AMP_BTRFS_T_LOG;
	}
	if (objectid >= AMP_BTRFS_FIRST_FREE && objectid <= AMP_BTRFS_LAST_FREE)
		return AMP_BTRFS_T_FS;	/* a subvolume or snapshot */
	return AMP_BTRFS_T_OTHER;	/* uuid, quota, reloc, raid stripe */
}

/* Who pays for a block: its transaction, an entry, or an untraced process. */
enum { BTRFS_PAY_TXN = 0, BTRFS_PAY_ENTRY = 1, BTRFS_PAY_UNTRACED = 2 };

struct btrfs_block_key {
	__u32 sb_dev;		/* the filesystem's s_dev (anonymous) */
	__u32 __pad;
	__u64 bytenr;		/* the block's logical address, eb->start */
};

struct btrfs_block {
	__u32 transid;
	__u8 tree;		/* enum amp_btrfs_tree */
	__u8 pay;		/* BTRFS_PAY_* */
	__u16 __pad;
	__u64 entry_id;		/* BTRFS_PAY_ENTRY: the entry, and its settlement */
	__u32 settle_slot;
	__u32 __pad2;
};

/* The block copied last at each bytenr: its record serves both copies of
 * a DUP write, so none is deleted at write-out; the next copy overwrites
 * it.  A record lost to the LRU leaves its block to the latest transaction. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct btrfs_block_key);
	__type(value, struct btrfs_block);
} btrfs_blocks SEC(".maps");

/* Entry id -> its own btrfs metadata by tree (log blocks, log-sync
 * superblocks), for the entry's per-tree split; made at its first such
 * charge, read and deleted by user space (ledger.c) when the entry comes.
 * Only fsyncing entries have one. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct amp_btrfs_own);
} btrfs_entry_own SEC(".maps");

/* Per btrfs filesystem (s_dev): its disk, and its latest transaction. */
struct btrfs_fs {
	__u32 disk;
	__u32 latest;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct btrfs_fs);
} btrfs_fss SEC(".maps");

/* The btrfs transaction handle the current task holds, or NULL.
 * journal_info may be btrfs's direct-I/O stub, (void *)1: not a handle.
 * Read in btrfs tracepoints only, where it is btrfs's. */
static __always_inline struct btrfs_trans_handle___amp *btrfs_handle(void)
{
	void *h = bpf_get_current_task_btf()->journal_info;

	return (__u64)h < 4096 ? NULL : h;
}

static __always_inline bool btrfs_txn_running(struct btrfs_trans_handle___amp *h)
{
	return BPF_CORE_READ(h, transaction, state) == AMP_BTRFS_TRANS_RUNNING;
}

/* The filesystem's entry in btrfs_fss, made at its first event. */
static __always_inline struct btrfs_fs *btrfs_fs_of(struct btrfs_fs_info___amp *fi,
						    __u32 sb_dev)
{
	struct btrfs_fs *f = bpf_map_lookup_elem(&btrfs_fss, &sb_dev);
	struct btrfs_fs init = {};
	struct gendisk *disk;

	if (f)
		return f;
	/* A btrfs superblock's s_bdev is set since 6.x; else its latest device. */
	disk = BPF_CORE_READ(fi, sb, s_bdev, bd_disk);
	if (!disk)
		disk = BPF_CORE_READ(fi, fs_devices, latest_dev, bdev, bd_disk);
	if (disk)
		init.disk = (BPF_CORE_READ(disk, major) << 20) | BPF_CORE_READ(disk, first_minor);
	bpf_map_update_elem(&btrfs_fss, &sb_dev, &init, BPF_NOEXIST);
	return bpf_map_lookup_elem(&btrfs_fss, &sb_dev);
}

/*
 * A task opened or joined transaction key (cow: it copied a tree block):
 * whose work is it?  A thread with an entry: that entry's (one handle); an
 * untraced process's reservation: its own; kernel threads (ordered-extent completion, the commit itself) do
 * work the entries' handles stand for, and count nothing.
 */
static __always_inline void btrfs_handle_event(struct amp_txn_key *key, bool cow)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct amp_txn_stats *ts;
	struct amp_thread *t;
	struct amp_entry *e;

	if (current_is_kthread())
		return;
	ts = txn_stats(key, AMP_FS_BTRFS);
	if (!ts)
		return;
	e = current_entry_or_own(&t, pid_tgid);
	if (e) {
		__sync_fetch_and_add(&ts->handles_traced, 1);
		entry_add_txn(e, key);
	} else if (!cow) {
		/* Not a copy: `sync` copies the extent tree for everyone
		 * before its commit's state leaves RUNNING. */
		__sync_fetch_and_add(&ts->handles_user, 1);
	}
}

SEC("tp_btf/btrfs_cow_block")
int BPF_PROG(on_btrfs_cow_block, void *root_, void *buf, void *cow_)
{
	struct btrfs_root___amp *root = root_;
	struct extent_buffer___amp *cow = cow_;
	struct btrfs_trans_handle___amp *h = btrfs_handle();
	struct btrfs_block_key key = {};
	struct btrfs_block blk = {};
	struct btrfs_fs_info___amp *fi;
	struct amp_txn_key txn;
	struct btrfs_fs *f;
	struct amp_thread *t;
	struct amp_entry *e;

	/* The arguments first: 6.12's verifier gives them as maybe NULL and
	 * refuses any arithmetic (a CO-RE read's address) before a check. */
	if (!h || !root || !cow)
		return 0;
	fi = BPF_CORE_READ(root, fs_info);
	if (!fi)
		return 0;
	key.sb_dev = BPF_CORE_READ(fi, sb, s_dev);
	f = btrfs_fs_of(fi, key.sb_dev);
	if (!f || !disk_is_target(f->disk))
		return 0;
	key.bytenr = BPF_CORE_READ(cow, start);
	blk.transid = BPF_CORE_READ(h, transid);
	blk.tree = btrfs_tree_of(BPF_CORE_READ(root, root_key.objectid));
	if (f->latest != blk.transid)
		f->latest = blk.transid;

	if (btrfs_txn_running(h)) {
		txn.dev = key.sb_dev;
		txn.tid = blk.transid;
		btrfs_handle_event(&txn, true);
		/* A log-tree block: the fsync of the thread that copies it. */
		if (blk.tree == AMP_BTRFS_T_LOG && !current_is_kthread()) {
			t = thread_state(false);
			e = thread_entry(t);
			if (e && entry_settle(t)) {
				blk.pay = BTRFS_PAY_ENTRY;
				blk.entry_id = e->id;
				blk.settle_slot = t->settle_slot;
			} else if (!e) {
				blk.pay = BTRFS_PAY_UNTRACED;
			}
		}
	}
	bpf_map_update_elem(&btrfs_blocks, &key, &blk, BPF_ANY);
	return 0;
}

/* Which reservations are a task's handle: 1 "transaction" (val is its
 * transid), 2 "delayed_inode" or "delayed_item" (the handle in
 * journal_info), 0 the rest (space_info, delalloc, delayed_refs_rsv...). */
static __always_inline int btrfs_handle_type(const char *type)
{
	char s[10];

	if (bpf_probe_read_kernel(s, sizeof(s), type))
		return 0;
	if (s[0] == 't' && s[1] == 'r' && s[2] == 'a' && s[3] == 'n' && s[4] == 's')
		return 1;
	if (s[0] == 'd' && s[1] == 'e' && s[2] == 'l' && s[3] == 'a' && s[4] == 'y' &&
	    s[5] == 'e' && s[6] == 'd' && s[7] == '_' && s[8] == 'i')
		return 2;
	return 0;
}

SEC("tp_btf/btrfs_space_reservation")
int BPF_PROG(on_btrfs_space_reservation, void *fs_info, const char *type, __u64 val,
	     __u64 bytes, int reserve)
{
	struct btrfs_fs_info___amp *fi = fs_info;
	struct btrfs_trans_handle___amp *h;
	struct amp_txn_key txn;
	struct btrfs_fs *f;
	int kind;

	/* ~65 per SQLite INSERT, most of them released or of other types. */
	if (!reserve || current_is_kthread())
		return 0;
	kind = btrfs_handle_type(type);
	if (!kind || !fi)
		return 0;
	txn.dev = BPF_CORE_READ(fi, sb, s_dev);
	f = btrfs_fs_of(fi, txn.dev);
	if (!f || !disk_is_target(f->disk))
		return 0;
	if (kind == 1) {
		txn.tid = val;
	} else {
		h = btrfs_handle();
		if (!h)
			return 0;
		txn.tid = BPF_CORE_READ(h, transid);
	}
	btrfs_handle_event(&txn, false);
	return 0;
}

/* Transaction generation is on disk: its blocks and superblocks were all
 * written and waited for.  Its record goes to the ledger. */
SEC("tp_btf/btrfs_transaction_commit")
int BPF_PROG(on_btrfs_transaction_commit, void *fs_info)
{
	struct btrfs_fs_info___amp *fi = fs_info;
	struct amp_txn_rec rec = { .type = AMP_REC_TXN, .committed = 1 };
	struct amp_txn_key key;
	struct amp_txn_stats *ts;

	if (!fi)
		return 0;
	key.dev = BPF_CORE_READ(fi, sb, s_dev);
	key.tid = BPF_CORE_READ(fi, generation);
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

/* Dirtying: btrfs's b-tree pages are charged by their blocks (above), so
 * they take no page owner. */
/* ino first: btrfs_cause is in .rodata, a page the folio path need not touch. */
static __always_inline bool btrfs_btree_host(__u64 ino, struct super_block *sb)
{
	return ino == AMP_BTRFS_BTREE_INO && btrfs_cause &&
	       BPF_CORE_READ(sb, s_magic) == AMP_BTRFS_SUPER_MAGIC;
}

/*
 * A superblock bio being queued: whose is it?  In a commit, the
 * transaction's; in a log sync (the transaction still running), the
 * fsyncing thread's entry, or an untraced process's own.  fb: filled in,
 * returns false if the bio is no btrfs superblock.
 */
static __always_inline bool btrfs_super_bio(struct bio *bio, struct amp_fs_bio *fb)
{
	struct btrfs_trans_handle___amp *h;
	struct amp_thread *t;
	struct amp_entry *e;

	if (!btrfs_cause || !btrfs_super_end_io ||
	    (__u64)BPF_CORE_READ(bio, bi_end_io) != btrfs_super_end_io)
		return false;
	h = btrfs_handle();
	if (!h)
		return false;	/* unmount, scrub: by window */
	fb->txn.dev = BPF_CORE_READ(h, fs_info, sb, s_dev);
	fb->txn.tid = BPF_CORE_READ(h, transid);
	fb->fs = AMP_FS_BTRFS;
	fb->meta = 1;
	if (btrfs_txn_running(h) && !current_is_kthread()) {
		t = thread_state(false);
		e = thread_entry(t);
		if (e && entry_settle(t)) {
			fb->entry_id = e->id;
			fb->settle_slot = t->settle_slot;
		} else if (!e) {
			fb->untraced = 1;
		}
	}
	return true;
}

/* An entry's own bytes of tree (LOG or SUPER), for its per-tree split. */
static __always_inline void btrfs_own_add(__u64 entry_id, __u32 tree, __u32 bytes)
{
	struct amp_btrfs_own *o = bpf_map_lookup_elem(&btrfs_entry_own, &entry_id);

	if (!o) {
		bpf_map_update_elem(&btrfs_entry_own, &entry_id, &btrfs_own_zero, BPF_NOEXIST);
		o = bpf_map_lookup_elem(&btrfs_entry_own, &entry_id);
		if (!o)
			return;	/* full: its bytes stay unsplit (the ledger's "unknown") */
	}
	if (tree == AMP_BTRFS_T_SUPER)
		__sync_fetch_and_add(&o->super, bytes);
	else
		__sync_fetch_and_add(&o->log, bytes);
}

/* Metadata bytes of tree that are an entry's own (slot, id) or an
 * untraced process's: false if the entry is gone (its bytes go to the
 * transaction). */
static __always_inline bool btrfs_charge_own(struct amp_dev_stats *ds, __u64 entry_id,
					     __u32 slot, bool untraced, __u32 tree, __u32 bytes)
{
	struct amp_settle *s;

	if (untraced) {
		__sync_fetch_and_add(&ds->meta_untraced, bytes);
		return true;
	}
	if (!entry_id)
		return false;
	s = settle_lookup(slot, entry_id);
	if (!s)
		return false;
	__sync_fetch_and_add(&ds->charged_bytes, bytes);
	__sync_fetch_and_add(&ds->meta_owned, bytes);
	__sync_fetch_and_add(&s->dev_bytes[AMP_CLASS_METADATA], bytes);
	btrfs_own_add(entry_id, tree, bytes);
	return true;
}

/*
 * Write-out of a page of inode ino: if it is a b-tree page, charge its
 * block's record.  false: not a btrfs b-tree page, or btrfs_cause is off.
 * bytes lie within the page.
 */
static __always_inline bool btrfs_btree_written(struct amp_dev_stats *ds, __u32 disk,
						__u64 ino, struct super_block *sb,
						struct folio *folio, __u32 bytes)
{
	struct extent_buffer___amp *eb;
	struct btrfs_block_key key = {};
	struct amp_txn_key txn;
	struct btrfs_block *b;
	struct btrfs_fs *f;
	__u32 tree;

	if (!btrfs_btree_host(ino, sb))
		return false;
	__sync_fetch_and_add(&ds->bytes[AMP_CLASS_METADATA], bytes);
	key.sb_dev = BPF_CORE_READ(sb, s_dev);
	eb = BPF_CORE_READ(folio, private);
	key.bytenr = eb ? BPF_CORE_READ(eb, start) : 0;
	b = eb ? bpf_map_lookup_elem(&btrfs_blocks, &key) : NULL;
	tree = b ? b->tree : AMP_BTRFS_T_UNKNOWN;
	__sync_fetch_and_add(&ds->btrfs_tree[tree & 15], bytes);
	if (b) {
		if (b->pay != BTRFS_PAY_TXN &&
		    btrfs_charge_own(ds, b->entry_id, b->settle_slot,
				     b->pay == BTRFS_PAY_UNTRACED, tree, bytes))
			return true;
		txn.tid = b->transid;
	} else {
		/* Copied before the start, or lost to the LRU: the latest
		 * transaction's, if one is known. */
		f = bpf_map_lookup_elem(&btrfs_fss, &key.sb_dev);
		if (!f || !f->latest)
			return true;	/* by window */
		txn.tid = f->latest;
	}
	txn.dev = key.sb_dev;
	charge_txn_bytes(ds, disk, &txn, AMP_FS_BTRFS, true, tree, bytes);
	return true;
}

/* The block walk's entry point (a global function: verified once, not
 * at every step of the walk).  Raw kernel pointers come as integers. */
__noinline int btrfs_btree_page(__u32 disk, __u64 ino, __u64 sb, __u64 folio, __u32 bytes)
{
	struct amp_dev_stats *ds = bpf_map_lookup_elem(&devs, &disk);

	if (!ds || !btrfs_cause)
		return 0;
	return btrfs_btree_written(ds, disk, ino, (struct super_block *)sb,
				   (struct folio *)folio, bytes);
}

/*
 * Bytes of a bio in fs_bios (block.bpf.h's charge_class): the
 * transaction's, or, for metadata one process wrote for itself (a btrfs
 * log sync's superblock), that entry's or that untraced process's.  A
 * global function, verified once: the walk calls it from several places.
 */
__noinline int fs_bio_bytes(__u32 disk, struct amp_fs_bio *fb, __u32 bytes)
{
	struct amp_dev_stats *ds = bpf_map_lookup_elem(&devs, &disk);
	struct amp_txn_key txn;
	__u32 tree;

	if (!ds || !fb)
		return 0;
	/* An xfs buffer written back after its checkpoint: that checkpoint's,
	 * in its record if still to come, else a late one (xfslog.bpf.h). */
	if (fb->fs == AMP_FS_XFS && fb->meta) {
		txn_late_bytes(disk, fb->txn.dev, fb->txn.tid, bytes);
		return 0;
	}
	/* btrfs's only metadata bios here are superblocks. */
	tree = fb->fs == AMP_FS_BTRFS && fb->meta ? AMP_BTRFS_T_SUPER : AMP_BTRFS_TREES;
	if (tree == AMP_BTRFS_T_SUPER)
		__sync_fetch_and_add(&ds->btrfs_tree[AMP_BTRFS_T_SUPER], bytes);
	if (fb->meta && btrfs_charge_own(ds, fb->entry_id, fb->settle_slot, fb->untraced,
					 tree, bytes))
		return 0;
	txn = fb->txn;
	charge_txn_bytes(ds, disk, &txn, fb->fs, fb->meta, tree, bytes);
	return 0;
}

#endif /* AMPTRACE_BTRFS_BPF_H */
