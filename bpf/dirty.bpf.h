/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stage 2: dirtying.  writeback_dirty_folio fires once per clean->dirty
 * transition, in the task that made the folio dirty (write(), or a write
 * fault on a shared file mapping), so the first dirtier pays for the
 * folio's write-out; later writers to an already-dirty folio ride free.
 */
#ifndef AMPTRACE_DIRTY_BPF_H
#define AMPTRACE_DIRTY_BPF_H

/* A well-mixed hash of a page key, for the bitmaps below. */
static __always_inline __u64 page_key_hash(const struct amp_page_key *key)
{
	__u64 h = (key->ino * 0x9E3779B97F4A7C15ULL) ^ (key->index * 0xC2B2AE3D27D4EB4FULL) ^
		  ((__u64)key->dev << 32);

	return h ^ (h >> 29);
}

/* The word and bit of dirtied_bits for one folio. */
static __always_inline __u64 *dirtied_word(const struct amp_page_key *key, __u64 *bit)
{
	__u64 h = page_key_hash(key);

	*bit = 1ULL << (h & 63);
	return &dirtied_bits[(h >> 6) & (AMP_DIRTIED_WORDS - 1)];
}

/* The word and bit of meta_untraced_bits for one page. */
static __always_inline __u64 *meta_untraced_word(const struct amp_page_key *key, __u64 *bit)
{
	__u64 h = page_key_hash(key) * 0xD6E8FEB86659FD93ULL;

	*bit = 1ULL << (h >> 58);
	return &meta_untraced_bits[(h >> 20) & (AMP_META_WORDS - 1)];
}

/* Mark a folio dirtied since the start (a store only the first time). */
static __always_inline void mark_dirtied(const struct amp_page_key *key)
{
	__u64 bit, *w = dirtied_word(key, &bit);

	if (!(*w & bit))
		__sync_fetch_and_or(w, bit);
}

/* Was this folio (maybe) dirtied since the start? */
static __always_inline bool dirtied_since_start(const struct amp_page_key *key)
{
	__u64 bit, *w = dirtied_word(key, &bit);

	return *w & bit;
}

/* A folio that will never be written as its owner expects: release it. */
static __always_inline void page_owner_cancel(struct amp_page_key *key)
{
	struct amp_page_owner *o = bpf_map_lookup_elem(&page_owners, key);
	struct amp_settle *s;

	if (!o)
		return;
	if (!o->bytes_written) {
		STAT_INC(pages_cancelled);
		s = settle_lookup(o->settle_slot, o->entry_id);
		if (s)
			settle_put(s);
	}
	bpf_map_delete_elem(&page_owners, key);
}

/* Is this folio in the file the thread's write() targets?  Then it was
 * named and checked for exclusion at enter, and is counted at exit. */
static __always_inline bool folio_of_write_target(const struct amp_thread *t,
						  const struct amp_page_key *key)
{
	return t->p.kind == AMP_SYS_WRITE && t->p.fd_ino == key->ino &&
	       t->p.fd_dev == key->dev;
}

/* One folio of mapping, at index, npages long, went clean -> dirty. */
static __always_inline int folio_dirtied(struct address_space *mapping, __u64 index,
					 __u32 npages)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct amp_page_key key = {};
	struct amp_page_owner owner = {};
	struct amp_file_stats *fs = NULL;
	struct amp_thread *t;
	struct inode *host;
	struct super_block *sb;
	struct amp_entry *e;
	__u32 slot, disk;
	bool own_file, last_file;

	/* All tp_btf pointers: direct loads, no helper call per field. */
	if (!mapping)
		return 0;
	host = mapping->host;
	if (!host)
		return 0;
	sb = host->i_sb;
	key.dev = inode_dev(host, sb->s_dev, sb->s_magic);
	key.ino = host->i_ino;
	key.index = index;
	/* Any writer's folio on the traced disk: dirtied since the start.
	 * (Not other disks': their bits would only blur this one's.) */
	disk = filter_dev ? sb_disk(sb) : 0;
	if (!filter_dev || disk_is_target(disk))
		mark_dirtied(&key);
	if (btrfs_btree_host(key.ino, sb))
		return 0;	/* charged by its tree block: btrfs.bpf.h */

	t = thread_state(false);
	e = thread_entry(t);
	if (!e && task_is_target(pid_tgid) && (t || (t = thread_state(true)))) {
		/* A traced thread dirtying before its first logging syscall
		 * (journald creating its file): an entry of its own, with no
		 * syscall, rather than bytes nobody pays for. */
		struct pending_syscall start = { .nr = -1 };

		e = entry_open(t, pid_tgid, &start, bpf_ktime_get_boot_ns());
	}
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
		}
		goto not_owned;
	}
	if (!filter_dev)
		disk = sb_disk(sb);
	if (!disk_is_target(disk))
		goto not_owned;
	own_file = folio_of_write_target(t, &key);
	/* The thread's last file keeps its totals in the thread: known, and
	 * not excluded. */
	last_file = !own_file && file_is_last(t, key.dev, key.ino);
	if (!own_file && !last_file) {
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
	/* Most folios have no owner yet: one insert.  An owned one starts a
	 * new dirtying episode: its owner is done with it first. */
	if (bpf_map_update_elem(&page_owners, &key, &owner, BPF_NOEXIST)) {
		page_owner_cancel(&key);
		if (bpf_map_update_elem(&page_owners, &key, &owner, BPF_NOEXIST)) {
			STAT_INC(pages_full);
			return 0;
		}
	}

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
	/* A new dirtying episode all the same: whoever owned the folio is done. */
	page_owner_cancel(&key);
	return 0;
}

SEC("tp_btf/writeback_dirty_folio")
int BPF_PROG(on_dirty_folio, struct folio *folio, struct address_space *mapping)
{
	return folio_dirtied(mapping, folio->index, folio_npages(folio));
}

/* Before 5.17 the event was per page (writeback_dirty_page), and page-cache
 * pages of regular files were single pages.  The loader picks one of the
 * two programs. */
SEC("tp_btf/writeback_dirty_page")
int BPF_PROG(on_dirty_page, struct page *page, struct address_space *mapping)
{
	return folio_dirtied(mapping, BPF_CORE_READ((struct page___pre_folio *)page, index), 1);
}

#endif /* AMPTRACE_DIRTY_BPF_H */
