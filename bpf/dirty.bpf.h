/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stage 2: dirtying.  writeback_dirty_folio fires once per clean->dirty
 * transition, in the task that made the folio dirty (write(), or a write
 * fault on a shared file mapping), so the first dirtier pays for the
 * folio's write-out; later writers to an already-dirty folio ride free.
 */
#ifndef AMPTRACE_DIRTY_BPF_H
#define AMPTRACE_DIRTY_BPF_H

/* A well-mixed hash of a page key, for meta_untraced_bits. */
static __always_inline __u64 page_key_hash(const struct amp_page_key *key)
{
	__u64 h = (key->ino * 0x9E3779B97F4A7C15ULL) ^ (key->index * 0xC2B2AE3D27D4EB4FULL) ^
		  ((__u64)key->dev << 32);

	return h ^ (h >> 29);
}

/* The word and bit of meta_untraced_bits for one page. */
static __always_inline __u64 *meta_untraced_word(const struct amp_page_key *key, __u64 *bit)
{
	__u64 h = page_key_hash(key) * 0xD6E8FEB86659FD93ULL;

	*bit = 1ULL << (h >> 58);
	return &meta_untraced_bits[(h >> 20) & (AMP_META_WORDS - 1)];
}

/* The disk under the last superblock seen on this CPU: sb_disk() loads
 * from three more structures (block device, gendisk) per folio.  Keyed
 * by the superblock's address and s_dev: a superblock freed and made again
 * at the same address with the same s_dev is on the same device. */
struct sb_disk_memo {
	__u64 sb;
	__u32 dev;
	__u32 disk;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sb_disk_memo);
} sb_memo SEC(".maps");

/* sb_disk(sb), dev: its s_dev.  Dirtying events run with interrupts off
 * (under the mapping's i_pages lock), so none interleaves on one CPU. */
static __always_inline __u32 sb_disk_memo(struct super_block *sb, __u32 dev)
{
	__u32 zero = 0, disk;
	struct sb_disk_memo *m = bpf_map_lookup_elem(&sb_memo, &zero);

	if (m && m->sb == (__u64)sb && m->dev == dev)
		return m->disk;
	disk = sb_disk(sb);
	if (m) {
		m->sb = (__u64)sb;
		m->dev = dev;
		m->disk = disk;
	}
	return disk;
}

/* The disk under a folio's inode: its superblock's, or for a block
 * device's own inode (bdev: see bdev_inode_disk) the device's.  Not
 * memoised by superblock there: every block device shares bdevfs's. */
static __always_inline __u32 host_disk(struct inode *host, struct super_block *sb, __u32 dev,
				       bool bdev)
{
	return bdev ? bdev_inode_disk(host) : sb_disk_memo(sb, dev);
}

/* Is this folio in the file the thread's write() targets?  Then it was
 * named and checked for exclusion at enter, and is counted at exit. */
static __always_inline bool folio_of_write_target(const struct amp_thread *t,
						  const struct amp_page_key *key)
{
	return t->p.kind == AMP_SYS_WRITE && t->p.fd_ino == key->ino &&
	       t->p.fd_dev == key->dev;
}

/* The key of mapping's folio at index; its inode, or NULL (no mapping or
 * no inode).  All tp_btf pointers: direct loads, no helper call per
 * field.  (dropped.bpf.h finds a folio leaving the cache by it too.) */
static __always_inline struct inode *folio_key_of(struct address_space *mapping, __u64 index,
						  struct amp_page_key *key)
{
	struct super_block *sb;
	struct inode *host;

	if (!mapping)
		return NULL;
	host = mapping->host;
	if (!host)
		return NULL;
	sb = host->i_sb;
	key->dev = inode_dev(host, sb->s_dev, sb->s_magic);
	key->ino = host->i_ino;
	key->index = index;
	return host;
}

/* One folio of mapping, at index, npages long, went clean -> dirty; flags:
 * its flags word (read only if the folio has an owner). */
static __always_inline int folio_dirtied(struct address_space *mapping, __u64 index,
					 __u32 npages, const void *flags)
{
	__u64 pid_tgid;
	struct amp_page_key key = {};
	struct folio_pos pos;
	struct amp_page_owner owner = {};
	struct amp_file_stats *fs = NULL;
	struct amp_thread *t;
	struct inode *host;
	struct super_block *sb;
	struct amp_entry *e;
	__u32 slot, disk;
	enum txn_queue queued;
	bool own_file, last_file, bdev, maybe_owned = false;

	host = folio_key_of(mapping, index, &key);
	if (!host)
		return 0;
	sb = host->i_sb;
	bdev = sb->s_magic == AMP_BDEVFS_MAGIC;
	if (bdev && !bdevfs_dev)
		bdevfs_dev = sb->s_dev;	/* one superblock: the first is it */
	/* Any writer's folio on the traced disk: dirtied since the start.
	 * (Not other disks': their bits would only blur this one's.) */
	disk = filter_dev ? host_disk(host, sb, key.dev, bdev) : 0;
	folio_pos(&key, npages, &pos);
	if (!filter_dev || disk_is_target(disk))
		maybe_owned = mark_dirtied(&pos);
	if (btrfs_btree_host(key.ino, sb))
		return 0;	/* charged by its tree block: btrfs.bpf.h */

	pid_tgid = bpf_get_current_pid_tgid();
	e = current_entry_or_own(&t, pid_tgid);
	if (!e || !t) {
		if (t) {
			STAT_INC(pages_untracked);
		} else if (!current_is_kthread() &&
			   !inode_holds_data(host->i_mode, key.ino, sb) &&
			   sb->s_magic != AMP_BTRFS_SUPER_MAGIC) {
			/* An untraced process's own metadata (see the map).  Not
			 * btrfs's btree blocks: whoever commits a transaction
			 * (a `sync` too) copies them for everyone. */
			__u64 bit, *w = meta_untraced_word(&key, &bit);

			if (!(*w & bit))
				__sync_fetch_and_or(w, bit);
		} else if (current_is_kthread() &&
			   (host->i_mode & AMP_S_IFMT) == AMP_S_IFBLK &&
			   !txn_page_dirtied(&key, flags)) {
			nj_page_dirtied(&key, host, flags);
		}
		goto not_owned;
	}
	if (!filter_dev)
		disk = host_disk(host, sb, key.dev, bdev);
	if (!disk_is_target(disk))
		goto not_owned;
	own_file = folio_of_write_target(t, &key);
	/* The thread's last file keeps its totals in the thread: known, and
	 * not excluded. */
	last_file = !own_file && file_is_last(t, key.dev, key.ino);
	/* A block device's own inode is no file of the summary's: its folios
	 * are the metadata of the filesystem on it, the entry's own. */
	if (!own_file && !last_file && !bdev) {
		struct amp_file_key fk = { .dev = key.dev, .ino = key.ino };

		fs = file_stats(&fk, host, pid_tgid >> 32);
		if (fs && fs->excluded)
			goto not_owned;
	}
	/* What the block layer will charge, by the entry's id. */
	if (!entry_settle(t))
		goto not_owned;

	owner.entry_id = e->id;
	owner.settle_slot = t->settle_slot;
	owner.npages = npages;
	owner.kind = own_file || inode_holds_data(host->i_mode, key.ino, sb) ?
		     AMP_PAGE_FILE : AMP_PAGE_META;
	slot = e->nr_runs;
	owner.run = slot < AMP_SCATTER_MAX ? slot : 0xffff;
	/* An owned folio starts a new dirtying episode: its owner is done
	 * with it.  (No room, or a lost race: counted there.)  A block
	 * device's folio whose in-flight write a transaction filed is that
	 * transaction's until it completes: the entry is next in line. */
	queued = bdev && maybe_owned ? txn_page_queue_owner(&key, &owner, flags) : TXN_QUEUE_NO;
	if (queued == TXN_QUEUE_FULL ||
	    (queued == TXN_QUEUE_NO && !folio_own(&key, &pos, &owner, maybe_owned, flags)))
		return 0;

	/* Owned: from here the entry's close counts it in its settlement. */
	e->folios_dirtied++;
	e->pages_dirtied += owner.npages;
	if (!e->disk)
		e->disk = disk;
	/* Dirtied outside a write syscall: a write fault on a shared mapping.
	 * (Counted here, not at page_fault_user: bpf_find_vma on every user
	 * fault of the system cost more than the whole chain.) */
	if (t->p.kind == AMP_SYS_NONE)
		e->write_faults++;
	if (slot < AMP_SCATTER_MAX) {
		struct amp_page_run *run = &e->runs[slot];

		run->dev = key.dev;
		run->ino = key.ino;
		run->index = key.index;
		run->npages = owner.npages;
		run->kind = owner.kind;
		run->written = 0;
		e->nr_runs = slot + 1;
	} else {
		e->runs_dropped++;
	}
	if (own_file) {
		t->p.folios_dirtied++;
		t->p.pages_dirtied += owner.npages;
	} else if (last_file) {
		file_delta_add(t, e->id, 0, 1, owner.npages);
	} else {
		file_account(fs, pid_tgid >> 32, e->id, 1, owner.npages);
	}
	return 0;

not_owned:
	/* A new dirtying episode all the same: whoever owned the folio is done.
	 * (Folios of other disks were never marked, nor owned.) */
	folio_disown(&key, &pos, maybe_owned, flags);
	return 0;
}

SEC("tp_btf/writeback_dirty_folio")
int BPF_PROG(on_dirty_folio, struct folio *folio, struct address_space *mapping)
{
	/* flags is the first word of a folio and of a page in every kernel (an
	 * unsigned long, since 6.18 a struct around one): its address is the
	 * folio's.  (A CO-RE access to it cannot match both types.) */
	return folio_dirtied(mapping, folio->index, folio_npages(folio), (const void *)folio);
}

/* Before 5.17 the event was per page (writeback_dirty_page), and page-cache
 * pages of regular files were single pages.  The loader picks one of the
 * two programs. */
SEC("tp_btf/writeback_dirty_page")
int BPF_PROG(on_dirty_page, struct page *page, struct address_space *mapping)
{
	return folio_dirtied(mapping, BPF_CORE_READ((struct page___pre_folio *)page, index), 1,
			     (const void *)page);
}

#endif /* AMPTRACE_DIRTY_BPF_H */
