/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stage 3: write-out.  At request completion (block_rq_complete, where the
 * kernel also adds the request's bytes to /sys/block/DEV/stat) walk the
 * request's bios and bvecs page by page, find each page's file and index,
 * and charge the bytes to the entry that dirtied that folio.  Bytes no
 * entry owns go to the metadata, journal or other class, so the classes
 * always sum to what the device counted.  A write that failed (the
 * request's error, or a dm or md device's own bio: on_bio_failed) is all
 * class failed, and its folios' owners settle with it as failed bytes.
 */
#ifndef AMPTRACE_BLOCK_BPF_H
#define AMPTRACE_BLOCK_BPF_H

/* A bio a dm target or md made of another (end_io: the clone's). */
static __always_inline bool bio_is_stack_clone(__u64 end_io)
{
	return (dm_clone_end_io && end_io == dm_clone_end_io) ||
	       (dm_crypt_end_io && end_io == dm_crypt_end_io) ||
	       (md_raid1_end_io && end_io == md_raid1_end_io) ||
	       (md_clone_end_io && end_io == md_clone_end_io);
}

static __always_inline bool comm_is_jbd2(void)
{
	char comm[8];

	bpf_get_current_comm(comm, sizeof(comm));
	return comm[0] == 'j' && comm[1] == 'b' && comm[2] == 'd' &&
	       comm[3] == '2' && comm[4] == '/';
}

/* Remember bios that the ext4 journal thread submits, and the transaction
 * it is committing: at completion their bytes are that commit's.  Also
 * btrfs's superblocks (btrfs.bpf.h). */
SEC("tp_btf/block_bio_queue")
int BPF_PROG(on_bio_queue, struct bio *bio)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct amp_fs_bio fb = { .fs = AMP_FS_JBD2 };
	struct amp_txn_key *txn;
	__u64 key = (__u64)bio;
	bool btrfs_super = btrfs_super_bio(bio, &fb);

	/* (A direct load: bio is the tracepoint's own argument.) */
	bool xlog = xfs_traced && (__u64)bio->bi_end_io == xfs_log_end_io;
	bool xbuf = xfs_traced && xfs_buf_end_io && (__u64)bio->bi_end_io == xfs_buf_end_io;

	if (!xlog && !xbuf && !btrfs_super && !comm_is_jbd2())
		return 0;
	/* A dm or md clone of a bio queued before it (jbd2's to an LVM
	 * volume or a RAID1, submitted in jbd2's own context): the walk looks
	 * the bio it came from up (dm_origin), never the clone, whose entry
	 * would stay and, its address reused by a bio of another disk or a
	 * later write, make that one a commit's (entries carried 28 KB more
	 * than a RAID1's legs wrote). */
	if (bio_is_stack_clone((__u64)bio->bi_end_io))
		return 0;
	/* Nor a bio with no data (an empty flush, md's to each leg among
	 * them): no write of it is ever walked, so its entry would stay. */
	if (!bio->bi_iter.bi_size)
		return 0;
	/* Only bios whose completion we will walk: a bio of another disk would
	 * stay here and, its address reused, mark a later bio as journal. */
	if (filter_dev || xlog || xbuf) {
		struct gendisk *disk = BPF_CORE_READ(bio, bi_bdev, bd_disk);
		__u32 dev = disk ? (BPF_CORE_READ(disk, major) << 20) |
				   BPF_CORE_READ(disk, first_minor) : 0;

		if (!disk || !disk_is_target(dev))
			return 0;
		if (xlog) {
			/* Keyed by its partition, as the commits are by s_dev. */
			xfs_log_bio_queued(bio, BPF_CORE_READ(bio, bi_bdev, bd_dev));
			return 0;
		}
		if (xbuf) {
			xfs_buf_bio_queued(bio);
			return 0;
		}
	}
	txn = btrfs_super ? NULL : bpf_map_lookup_elem(&jbd2_committing, &tid);
	if (txn)
		fb.txn = *txn;
	if (bpf_map_update_elem(&fs_bios, &key, &fb, BPF_ANY))
		STAT_INC(jbd2_bios_full);
	return 0;
}

/*
 * The walk reads kernel memory through raw pointers (a bio's vectors,
 * their pages, a page's folio, mapping, inode and superblock).  With cast
 * (the loader's choice where the kernel has bpf_rdonly_cast, 6.2+) each
 * field is a fault-safe typed load; without, a bpf_probe_read_kernel call,
 * ~25-30 ns each on this PVM guest, about a dozen per folio.  cast is a
 * constant: each program is built with one path only (see fd_ident).
 */
#define WALK_FIELD(cast, type, ptr, field)					\
	((cast) ? ((type *)bpf_rdonly_cast((void *)(ptr),			\
					   bpf_core_type_id_kernel(type)))->field \
		: BPF_CORE_READ((type *)(ptr), field))

/* A pointer field, as an integer (see kernel_word_cast): as a typed
 * pointer, the walk could do no arithmetic on it, nor hand it to a global
 * function. */
#define WALK_PTR(cast, type, ptr, field)					\
	((cast) ? kernel_word_cast((void *)(ptr) + bpf_core_field_offset(type, field)) \
		: (unsigned long)BPF_CORE_READ((type *)(ptr), field))

struct walk {
	__u32 dev;		/* the row's key in devs (walk_step_global) */
	struct bio *bio;
	struct bio_vec *vecs;
	__u64 last_entry;	/* to count each entry once per request */
	__u32 idx;		/* bvec index in the current bio */
	__u32 done;		/* bytes consumed in that bvec */
	__u32 bio_left;		/* bytes left in the current bio */
	__u32 rq_left;		/* bytes left in the request */
	bool bio_walkable;	/* REQ_OP_WRITE: pages to look at */
	bool failed;		/* a failed write: all its bytes are class failed */
	bool of_bio;		/* on_bio_failed's walk: walk_acc's slot 1 */
	bool bio_jbd2;		/* fs journal: jbd2 thread's, or an xfs log write */
	bool bio_meta;
	/* An fs_bios bio: the transaction it belongs to ({0, 0} if none).
	 * Handed to fs_bio_bytes() by address: a copy on the stack at every
	 * call would multiply the verifier's states. */
	struct amp_fs_bio fb;
};

static __always_inline void walk_load_bio(struct walk *w, struct walk_acc *acc,
					  struct bio *bio, const bool cast)
{
	__u32 opf = WALK_FIELD(cast, struct bio, bio, bi_opf);
	struct amp_fs_bio *fb;
	__u64 end_io = WALK_PTR(cast, struct bio, bio, bi_end_io), key = (__u64)bio;
	int meta = bpf_core_enum_value(enum req_flag_bits, __REQ_META);

	w->bio = bio;
	w->vecs = (struct bio_vec *)WALK_PTR(cast, struct bio, bio, bi_io_vec);
	w->idx = WALK_FIELD(cast, struct bio, bio, bi_iter.bi_idx);
	w->done = WALK_FIELD(cast, struct bio, bio, bi_iter.bi_bvec_done);
	w->bio_left = WALK_FIELD(cast, struct bio, bio, bi_iter.bi_size);
	w->bio_walkable = (opf & AMP_REQ_OP_MASK) == REQ_OP_WRITE && w->vecs;
	w->bio_meta = (opf & (1u << meta)) || (md_super_end_io && end_io == md_super_end_io);
	/* A dm target's or md's bio: the filesystem's tags are on the one it
	 * came from, and a dm-crypt write's pages are that one's plaintext. */
	if ((dm_clone_end_io || dm_crypt_end_io || md_raid1_end_io) && acc) {
		/* key: the bio the filesystem tagged */
		key = (__u64)dm_origin(bio, end_io, acc);
		if (key != (__u64)bio)
			end_io = (__u64)BPF_CORE_READ((struct bio *)key, bi_end_io);
		if (acc->plain_vecs) {
			w->vecs = acc->plain_vecs;
			w->idx = acc->plain_idx;
			w->done = acc->plain_done;
		}
	}
	fb = bpf_map_lookup_elem(&fs_bios, &key);
	w->bio_jbd2 = (fb && !fb->meta) || (xfs_log_end_io && end_io_is_xfs_log(end_io));
	if (fb) {
		w->fb = *fb;
		/* A RAID1's legs each walk it: the last one deletes it. */
		if (!acc || acc->copies <= 1 ||
		    __sync_fetch_and_add(&fb->copies_seen, 1) + 1 >= acc->copies) {
			bpf_map_delete_elem(&fs_bios, &key);
			if (acc && key != (__u64)bio && w->fb.fs == AMP_FS_XFS)
				acc->xfs_origin = key;
		}
	} else {
		__builtin_memset(&w->fb, 0, sizeof(w->fb));
	}
}

/* ds: the disk's row; acc: the request's own classes, or NULL. */
static __always_inline void add_class(struct amp_dev_stats *ds, struct walk_acc *acc,
				      int cls, __u32 bytes)
{
	if (cls >= 0 && cls < AMP_NR_CLASSES) {
		__sync_fetch_and_add(&ds->bytes[cls], bytes);
		if (acc)
			acc->bytes[cls] += bytes;
	}
}

/* The class of a walk's bytes: a failed write's are all failed. */
static __always_inline int walk_class(const struct walk *w, int cls)
{
	return w->failed ? AMP_CLASS_FAILED : cls;
}

/* Unowned bytes: their class, and the transaction of a fs_bios bio. */
static __always_inline void charge_class(struct walk *w, struct amp_dev_stats *ds,
					 struct walk_acc *acc, int cls, __u32 bytes)
{
	add_class(ds, acc, walk_class(w, cls), bytes);
	/* Journal blocks of a known commit, or metadata a transaction wrote
	 * in place: that transaction's cost (a failed write is nobody's). */
	if (w->fb.txn.dev && !w->failed &&
	    cls == (w->fb.meta ? AMP_CLASS_METADATA : AMP_CLASS_JOURNAL))
		fs_bio_bytes(w->dev, &w->fb, bytes);
}

/* Bytes of a folio owned by an entry (c: from its owner): charge the
 * entry, and settle it if this was the last folio it waited for.  leg: a
 * RAID1 leg's copy (else NULL), counted into its slot once charged. */
static __always_inline void charge_owner(struct walk *w, struct amp_dev_stats *ds,
					 struct walk_acc *acc, struct amp_page_key *key,
					 struct folio_charge *c, __u32 bytes, struct folio_io *leg)
{
	int cls = c->kind == AMP_PAGE_FILE ? AMP_CLASS_DATA : AMP_CLASS_METADATA;
	struct amp_file_key fk = { .dev = key->dev, .ino = key->ino };
	struct amp_file_stats *fs;
	struct amp_settle *s;

	add_class(ds, acc, walk_class(w, cls), bytes);
	fs = w->failed ? NULL : bpf_map_lookup_elem(&files, &fk);
	if (fs)
		__sync_fetch_and_add(&fs->dev_bytes, bytes);

	s = settle_lookup(c->settle_slot, c->entry_id);
	if (s) {
		if (w->failed) {
			/* Sent, never stored: the entry's, not as written. */
			__sync_fetch_and_add(&s->failed_bytes, bytes);
		} else {
			__sync_fetch_and_add(&ds->charged_bytes, bytes);
			if (acc)
				acc->charged += bytes;
			if (cls == AMP_CLASS_METADATA)
				__sync_fetch_and_add(&ds->meta_owned, bytes);
			__sync_fetch_and_add(&s->dev_bytes[cls & 1], bytes);
		}
		if (w->last_entry != c->entry_id) {
			__sync_fetch_and_add(&s->ios, 1);
			w->last_entry = c->entry_id;
		}
	} else {
		__sync_fetch_and_add(&ds->late_bytes, bytes);
	}
	/* After the charge: the copy that completes the folio settles it. */
	if (leg && c->leg)
		c->settles = leg_copy_charged_global(leg, bytes) > 0;
	if (!s)
		return;
	if (c->settles) {
		__u16 run = c->run;

		/* (A failed write's folio was not written.) */
		if (run < AMP_SCATTER_MAX && !w->failed)
			__sync_fetch_and_or(&s->runs_written, 1ULL << run);
		__sync_fetch_and_add(&s->folios_written, 1);
		settle_put(s);
	}
}

/* Bytes nobody owns: classify by what the page is. */
static __always_inline int classify_unowned(struct walk *w, struct inode *host,
					    struct super_block *sb,
					    const struct amp_page_key *key,
					    const struct folio_pos *fp, const bool cast)
{
	if (!host)	/* anonymous, bounce or frozen-copy page */
		return w->bio_jbd2 ? AMP_CLASS_JOURNAL :
		       w->bio_meta ? AMP_CLASS_METADATA : AMP_CLASS_OTHER;
	if (inode_holds_data(WALK_FIELD(cast, struct inode, host, i_mode), key->ino, sb))
		/* File data: an untraced writer's, or dirty since before we began. */
		return dirtied_since_start(fp) ? AMP_CLASS_OTHER : AMP_CLASS_BEFORE_START;
	return w->bio_jbd2 ? AMP_CLASS_JOURNAL : AMP_CLASS_METADATA;
}

/* One step: at most one folio's bytes within one bvec. */
static __always_inline long walk_step_on(struct walk *w, struct amp_dev_stats *ds,
					 struct walk_acc *acc, const bool cast)
{
	/* The folio's key, place and charge, in folio_written_global()'s
	 * arguments: one copy on a stack three calls deep before 5.17. */
	struct folio_io io = {};
	struct amp_page_key *key = &io.key;
	struct amp_page_owner *o;
	struct address_space *mapping;
	struct super_block *sb = NULL;
	struct inode *host = NULL;
	struct folio *folio;
	struct page *page;
	struct bio_vec bv;
	__u32 pos, chunk, in_page, page_nr;
	__u64 sub = 0;
	int cls;

	if (!w->rq_left || !ds)
		return 1;
	if (!w->bio_left) {
		struct bio *cur = w->bio;	/* a local: CO-RE must not relocate w-> */
		struct bio *next = cur ? (struct bio *)WALK_PTR(cast, struct bio, cur, bi_next) : NULL;

		if (!next) {
			/* Request bytes beyond its bios: count, do not lose. */
			charge_class(w, ds, acc, AMP_CLASS_OTHER, w->rq_left);
			w->rq_left = 0;
			return 1;
		}
		walk_load_bio(w, acc, next, cast);
		return 0;
	}
	if (!w->bio_walkable) {
		chunk = w->bio_left < w->rq_left ? w->bio_left : w->rq_left;
		charge_class(w, ds, acc, w->bio_meta ? AMP_CLASS_METADATA : AMP_CLASS_OTHER, chunk);
		w->bio_left -= chunk;
		w->rq_left -= chunk;
		return 0;
	}

	if (cast) {
		struct bio_vec *v = &w->vecs[w->idx & 0xffff];

		bv.bv_page = (struct page *)WALK_PTR(cast, struct bio_vec, v, bv_page);
		bv.bv_len = WALK_FIELD(cast, struct bio_vec, v, bv_len);
		bv.bv_offset = WALK_FIELD(cast, struct bio_vec, v, bv_offset);
	} else if (bpf_probe_read_kernel(&bv, sizeof(bv), &w->vecs[w->idx & 0xffff])) {
		return 1;
	}
	if (w->done >= bv.bv_len) {
		w->idx++;
		w->done = 0;
		return 0;
	}
	pos = bv.bv_offset + w->done;
	page_nr = pos / page_size;
	in_page = pos % page_size;
	chunk = bv.bv_len - w->done;
	if (chunk > w->bio_left)
		chunk = w->bio_left;
	if (chunk > w->rq_left)
		chunk = w->rq_left;

	/* Multi-page bvecs: pages are consecutive in the memmap. */
	page = (struct page *)((void *)bv.bv_page +
			       page_nr * bpf_core_type_size(struct page));
	folio = page_to_folio(page, cast);
	io.copies = acc && acc->copies > 1 ? acc->copies : 1;
	mapping = folio_file_mapping(folio, cast);
	if (mapping)
		host = (struct inode *)WALK_PTR(cast, struct address_space, mapping, host);
	if (host) {
		sb = (struct super_block *)WALK_PTR(cast, struct inode, host, i_sb);
		sub = ((__u64)page - (__u64)folio) / bpf_core_type_size(struct page);
		key->dev = inode_dev(host, WALK_FIELD(cast, struct super_block, sb, s_dev),
				     WALK_FIELD(cast, struct super_block, sb, s_magic));
		key->ino = WALK_FIELD(cast, struct inode, host, i_ino);
		key->index = folio_index(folio, cast);
		if (btrfs_cause && !w->failed &&
		    btrfs_btree_page(w->dev, key->ino, (__u64)sb, (__u64)folio,
				     chunk < page_size - in_page ? chunk : page_size - in_page)) {
			if (chunk > page_size - in_page)
				chunk = page_size - in_page;
			/* In the disk's row (btrfs.bpf.h); its layers' too. */
			if (acc)
				acc->bytes[AMP_CLASS_METADATA] += chunk;
			goto advance;
		}
		folio_pos(key, folio_npages_raw(folio, cast), &io.pos);
		io.sub = sub;
		io.in_page = in_page;
		io.chunk = chunk;
		io.jbd2 = w->bio_jbd2;
		if (folio_written_global(&io)) {
			chunk = io.chunk;
			charge_owner(w, ds, acc, key, &io.c, chunk, &io);
			goto advance;
		}
	}
	if (chunk > page_size - in_page)
		chunk = page_size - in_page;
	cls = classify_unowned(w, host, sb, key, &io.pos, cast);
	if (cls == AMP_CLASS_BEFORE_START) {
		/* Dirtied before the start: while amptrace itself started? */
		key->index += sub;
		o = bpf_map_lookup_elem(&startup_pages, key);
		if (o) {
			hashed_owner_written(&startup_pages, key, o, 0, in_page, io.copies, &chunk, &io.c);
			charge_owner(w, ds, acc, key, &io.c, chunk, NULL);
			goto advance;
		}
	}
	/* Metadata a transaction filed and writes back in place: its own. */
	if (cls == AMP_CLASS_METADATA && host) {
		/* (A failed write ends the filing, charging nobody.) */
		int filed = txn_page_written(w->dev, key, sub * page_size + in_page,
					     w->failed ? 0 : chunk, io.copies);

		if (filed) {
			add_class(ds, acc, walk_class(w, cls), chunk);
			/* An entry that dirtied it during this write owns it now. */
			if (filed == 2)
				txn_next_owner_take(&io);
			goto advance;
		}
	}
	if (cls == AMP_CLASS_METADATA && host) {
		/* Metadata an untraced process dirtied itself: not for sharing. */
		__u64 bit, *mw = meta_untraced_word(key, &bit);

		if (*mw & bit) {
			if (copy_is_last(key, sub * page_size + in_page, io.copies))
				__sync_fetch_and_and(mw, ~bit);
			if (!w->failed)	/* (stored nowhere: not theirs to pay) */
				__sync_fetch_and_add(&ds->meta_untraced, chunk);
		}
	}
	charge_class(w, ds, acc, cls, chunk);
advance:
	w->done += chunk;
	w->bio_left -= chunk;
	w->rq_left -= chunk;
	return 0;
}

/* One step of the walk, in a global function.  A global function is
 * verified once, on its own, and sees *w as plain memory, so it looks ds
 * and acc up again (two lookups a step, one of them per-CPU).  Where the
 * step was verified inline in bpf_loop's callback, loading it took the
 * kernel ~580 MB (6.18: the verifier's states, charged to amptrace's
 * memory cgroup); now ~100 MB in all.  The walk calls it from a bounded
 * loop: bpf_loop's callback would be one frame more on a chain that has
 * none to spare (6.1 counts 544 of its 512 bytes of stack). */
static __always_inline long walk_step_looked_up(struct walk *w, const bool cast)
{
	struct amp_dev_stats *ds;
	struct walk_acc *acc;
	__u32 key;

	if (!w)
		return 1;
	/* Map keys on the stack, for older verifiers: one slot for both, as
	 * 5.15's verifier has no room to spare on this path (512 bytes over
	 * three frames). */
	key = w->dev;
	ds = bpf_map_lookup_elem(&devs, &key);
	key = w->of_bio;	/* walk_acc's slot */
	acc = bpf_map_lookup_elem(&walk_acc, &key);
	return walk_step_on(w, ds, acc, cast);
}

__noinline long walk_step_global(struct walk *w)
{
	return walk_step_looked_up(w, false);
}

/* With typed loads (6.2+). */
__noinline long walk_step_global_cast(struct walk *w)
{
	return walk_step_looked_up(w, true);
}

static __always_inline bool op_counts_as_write(__u32 op)
{
	/* /sys/block stat groups: odd ops write, discards are their own. */
	return (op & 1) && op != REQ_OP_DISCARD && op != REQ_OP_SECURE_ERASE;
}

/* The walk's loop, which the verifier walks through iteration by
 * iteration, each one a call (walk_step_looked_up); bytes beyond it are
 * counted as unwalked, never dropped. */
#define AMP_WALK_BOUNDED_STEPS 4096

/* Step w until it is done or the limit is reached (w->rq_left: the rest). */
static __always_inline void walk_run(struct walk *w, const bool cast)
{
	for (__u32 i = 0; i < AMP_WALK_BOUNDED_STEPS && i < walk_max_steps; i++)
		if (cast ? walk_step_global_cast(w) : walk_step_global(w))
			break;
}

/* devs[dev], made on first use (named from name, a kernel string; layer:
 * a partition's or dm device's row, see struct amp_dev_stats). */
static __always_inline struct amp_dev_stats *dev_row(__u32 dev, const char *name, bool layer)
{
	struct amp_dev_stats *ds = bpf_map_lookup_elem(&devs, &dev), *init;
	__u32 zero = 0;

	if (ds)
		return ds;
	/* Too big for the stack beside the walk: a per-CPU scratch. */
	init = bpf_map_lookup_elem(&dev_scratch, &zero);
	if (!init)
		return NULL;
	__builtin_memset(init, 0, sizeof(*init));
	bpf_probe_read_kernel_str(&init->name, sizeof(init->name), name);
	init->layer = layer;
	if (bpf_map_update_elem(&devs, &dev, init, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&devs, &dev)) {
		STAT_INC(devs_full);
		return NULL;
	}
	return bpf_map_lookup_elem(&devs, &dev);
}

/* A request's own classes, empty; the partition it is for (rq->part,
 * whose own counter counts the whole request to it) its first layer. */
static __noinline void walk_acc_start(struct walk_acc *acc, struct request *rq, __u32 dev)
{
	struct block_device *part = BPF_CORE_READ(rq, part);
	__u32 part_dev = part ? BPF_CORE_READ(part, bd_dev) : 0;

	if (!acc)
		return;
	__builtin_memset(acc, 0, sizeof(*acc));
	acc->part_layer = part_dev && part_dev != dev;
	if (acc->part_layer)
		layer_add(&acc->layers, part_dev, BPF_CORE_READ(part, bd_device.kobj.name), 1);
}

/* The request's classes to each of its layers' rows, as each layer's own
 * counter counts the request (a partition's, rq->part) or the bio it came
 * as (a dm or md device's: above a RAID1, each leg's request is one copy
 * of that bio, and brings its share).  A failed request goes to its
 * partition only: the dm and md devices above count the bio that failed
 * with it, and on_bio_failed charges each of them. */
static __noinline void layers_charge(const struct walk_acc *acc, bool failed)
{
	const struct layers *l = &acc->layers;

#pragma unroll
	for (int i = 0; i < AMP_LAYERS; i++) {
		struct amp_dev_stats *row;
		__u64 share;

		if (i >= l->nr || (failed && (i || !acc->part_layer)))
			break;
		row = dev_row(l->dev[i], (const char *)l->name[i], true);
		share = l->share[i] > 1 ? l->share[i] : 1;
		if (!row)
			continue;
		__sync_fetch_and_add(&row->ios, 1);
		__sync_fetch_and_add(&row->charged_bytes, acc->charged / share);
#pragma unroll
		for (int k = 0; k < AMP_NR_CLASSES; k++)
			if (acc->bytes[k])
				__sync_fetch_and_add(&row->bytes[k], acc->bytes[k] / share);
	}
}

static __always_inline int request_done(struct request *rq, unsigned int nr_bytes,
					blk_status_t error, const bool cast)
{
	struct gendisk *disk = request_disk(rq);
	struct amp_dev_stats *ds;
	struct walk_acc *acc = NULL;
	struct walk w = {};
	struct bio *bio;
	__u32 dev, zero = 0;

	if (!nr_bytes || !disk ||
	    !op_counts_as_write(BPF_CORE_READ(rq, cmd_flags) & AMP_REQ_OP_MASK))
		return 0;
	dev = (BPF_CORE_READ(disk, major) << 20) | BPF_CORE_READ(disk, first_minor);
	if (!disk_is_target(dev))
		return 0;

	ds = dev_row(dev, disk->disk_name, false);
	if (!ds)
		return 0;
	/* The request's own classes, for its layers' rows (the walk's steps
	 * look it up, as they do ds). */
	acc = bpf_map_lookup_elem(&walk_acc, &zero);
	if (acc)
		walk_acc_start(acc, rq, dev);
	__sync_fetch_and_add(&ds->ios, 1);
	w.failed = error != 0;
	w.dev = dev;

	w.rq_left = nr_bytes;
	bio = BPF_CORE_READ(rq, bio);
	if (bio)
		walk_load_bio(&w, acc, bio, cast);
	walk_run(&w, cast);
	if (w.rq_left) {
		/* Walk limit reached: the rest is counted, unattributed. */
		__sync_fetch_and_add(&ds->unwalked_bytes, w.rq_left);
		charge_class(&w, ds, acc, AMP_CLASS_OTHER, w.rq_left);
	}
	if (acc)
		layers_charge(acc, w.failed);
	/* On a dm or md stack, xfs tagged the bio that came to the stack (one
	 * per request: a FUA commit record is not merged with others). */
	if (xfs_traced)
		xfs_walk_end(acc && acc->xfs_origin ? acc->xfs_origin
						    : (__u64)bio);	/* a read value: a scalar to the verifier */
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(on_rq_complete, struct request *rq, blk_status_t error,
	     unsigned int nr_bytes)
{
	return request_done(rq, nr_bytes, error, false);
}

/* The same with typed loads where the kernel has bpf_rdonly_cast (6.2+):
 * the loader loads one of the two. */
SEC("tp_btf/block_rq_complete")
int BPF_PROG(on_rq_complete_cast, struct request *rq, blk_status_t error,
	     unsigned int nr_bytes)
{
	return request_done(rq, nr_bytes, error, true);
}

/*
 * A write a dm or md device failed.  Its counter counts the bio at its
 * end, failed or not, but no request below carried its bytes, or one that
 * failed with them (whose bytes went to the disk's row and its partition
 * only: layers_charge).  The bio's bytes are this device's class failed;
 * its folios' owners that no request below walked settle with them as
 * failed bytes.  Loaded only where the traced stack has a dm device dm's
 * symbols let amptrace walk (configure_dm).  md: its own failures are
 * rare (a RAID retries the other legs), and not charged.
 */
SEC("tp_btf/block_bio_complete")
int BPF_PROG(on_bio_failed, struct request_queue *q, struct bio *bio)
{
	struct block_device *bdev = BPF_CORE_READ(bio, bi_bdev);
	struct gendisk *disk = BPF_CORE_READ(bdev, bd_disk);
	struct amp_dev_stats *ds, *whole_ds;
	struct walk_acc *acc;
	struct walk w = {};
	__u32 dev, whole, key;

	if (!BPF_CORE_READ(bio, bi_status) || !disk || !BPF_CORE_READ(bio, bi_iter.bi_size) ||
	    !op_counts_as_write(BPF_CORE_READ(bio, bi_opf) & AMP_REQ_OP_MASK))
		return 0;
	/* A dm device's, where dm is walked: a request-based disk's failure
	 * was its request's (request_done); an md device's or another
	 * bio-based driver's row would show only these bytes against a
	 * counter of all it wrote. */
	if (!dm_major || BPF_CORE_READ(disk, major) != dm_major)
		return 0;
	whole = (BPF_CORE_READ(disk, major) << 20) | BPF_CORE_READ(disk, first_minor);
	dev = BPF_CORE_READ(bdev, bd_dev);
	if (!disk_is_target(whole) && !disk_is_target(dev))
		return 0;
	ds = dev_row(dev, BPF_CORE_READ(bdev, bd_device.kobj.name), true);
	if (!ds)
		return 0;
	__sync_fetch_and_add(&ds->ios, 1);
	w.failed = true;
	w.of_bio = true;
	w.dev = dev;
	w.rq_left = BPF_CORE_READ(bio, bi_iter.bi_size);
	/* A partition of a dm device: the whole one counts it too. */
	if (dev != whole && (whole_ds = dev_row(whole, disk->disk_name, true))) {
		__sync_fetch_and_add(&whole_ds->ios, 1);
		__sync_fetch_and_add(&whole_ds->bytes[AMP_CLASS_FAILED], w.rq_left);
	}
	walk_load_bio(&w, NULL, bio, false);
	/* The steps take the classes from the map: a walk's of before must
	 * not count here. */
	key = 1;	/* on_bio_failed's own slot */
	acc = bpf_map_lookup_elem(&walk_acc, &key);
	if (acc)
		__builtin_memset(acc, 0, sizeof(*acc));
	walk_run(&w, false);
	if (w.rq_left)
		charge_class(&w, ds, NULL, AMP_CLASS_OTHER, w.rq_left);
	return 0;
}

#endif /* AMPTRACE_BLOCK_BPF_H */
