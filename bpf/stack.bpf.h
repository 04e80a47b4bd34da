/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stacked block devices (dm-linear as LVM makes it, dm-crypt, md RAID1):
 * a request of the disk below carries bios a dm target or md made, not
 * the filesystem's.  Back from such a bio to the one that came to the dm
 * or md device: its tags (fs_bios, the xfs log's end_io) say what the
 * bytes are, its device is a layer whose row gets the request's classes,
 * a dm-crypt write's bounce pages stand for the plaintext pages of the
 * bio it encrypted, and a RAID1 leg's write is one of the copies of the
 * same pages that each leg writes (the folio's owner pays each one).
 *
 * dm's structs are the dm_mod and dm_crypt modules' (or vmlinux's, where
 * dm is built in): the loader reads their members' offsets from BTF
 * (maps.bpf.h, dm_*_off), not CO-RE, which would have libbpf open every
 * module's BTF by id, a CAP_SYS_ADMIN call.  Kernels or hosts without
 * them (no BTF, no kallsyms) leave the end_io addresses 0 and all this
 * unreachable.
 */
#ifndef AMPTRACE_STACK_BPF_H
#define AMPTRACE_STACK_BPF_H

/* A kernel pointer at an offset into a kernel object (0 if unreadable). */
static __always_inline void *read_ptr_at(const void *obj, __u32 off)
{
	void *p = NULL;

	if (obj)
		bpf_probe_read_kernel(&p, sizeof(p), obj + off);
	return p;
}

/* clone, crypt, clone: LUKS over LVM, or LVM over LUKS; RAID1's leg and
 * md's accounting clone below them. */
#define AMP_DM_STEPS 6

/* The layers whose rows mirror a request's classes: its partition
 * (rq->part), then the md and dm devices its first bio came through. */
#define AMP_LAYERS 4

/* A RAID1's copies counted: up to this many mirrors. */
#define AMP_MD_MAX_COPIES 8

struct layers {
	__u32 dev[AMP_LAYERS];
	__u64 name[AMP_LAYERS];	/* kernel address of each one's name */
	/* Of the request's bytes, each layer's row gets 1/share: a layer above
	 * a RAID1 counts each of its bios once, and each leg writes a copy. */
	__u32 share[AMP_LAYERS];
	__u32 nr;
};

/* One request's classes and charged bytes as its walk adds them to the
 * disk's row, for the rows of the layers above (stack.bpf.h) at its end.
 * Per CPU: a program does not nest on a CPU. */
struct walk_acc {
	__u64 bytes[AMP_NR_CLASSES];
	__u64 charged;
	struct layers layers;	/* its partition, its first bio's dm devices */
	bool part_layer;	/* layers[0] is its partition (rq->part) */
	bool first_bio_seen;
	/* A dm-crypt write's plaintext, for the bio dm_origin() was given:
	 * where its bvecs are (plain_vecs 0: none). */
	struct bio_vec *plain_vecs;
	__u32 plain_idx, plain_done;
	/* The copies of the bio's pages written (RAID1: one per leg; 0 or 1:
	 * one): a folio's owner pays each, and settles at the last. */
	__u32 copies;
	/* An xfs log bio this request carried the last copy of, as xfs
	 * tagged it (the bio that came to the stack): its checkpoint's
	 * commit record, if FUA, is then written (xfs_walk_end). */
	__u64 xfs_origin;
};

/* [0] a request's walk; [1] on_bio_failed's, which may run over a
 * request's walk on the same CPU (a completion in an interrupt), or under
 * one. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct walk_acc);
} walk_acc SEC(".maps");

static __always_inline void layer_add(struct layers *l, __u32 dev, const void *name, __u32 share)
{
	__u32 i = l->nr;

	if (i < AMP_LAYERS) {
		l->dev[i] = dev;
		l->name[i] = (__u64)name;
		l->share[i] = share;
		l->nr = i + 1;
	}
}

/* The device a bio came to, as the next layer of acc (its request's first
 * bio only).  A partition of a dm or md device (md0p1): the device's row
 * and the partition's, as both their counters count the bio. */
static __always_inline void layer_add_bio(struct walk_acc *acc, struct bio *bio)
{
	struct block_device *bdev = BPF_CORE_READ(bio, bi_bdev);
	struct gendisk *gd;
	__u32 dev, disk_dev;

	if (acc->first_bio_seen || !bdev)
		return;
	gd = BPF_CORE_READ(bdev, bd_disk);
	dev = BPF_CORE_READ(bdev, bd_dev);
	if (!gd) {
		layer_add(&acc->layers, dev, NULL, acc->copies);
		return;
	}
	disk_dev = (BPF_CORE_READ(gd, major) << 20) | BPF_CORE_READ(gd, first_minor);
	layer_add(&acc->layers, disk_dev,
		  (void *)gd + bpf_core_field_offset(struct gendisk, disk_name), acc->copies);
	if (disk_dev != dev)
		layer_add(&acc->layers, dev, BPF_CORE_READ(bdev, bd_device.kobj.name),
			  acc->copies);
}

/*
 * The copies a RAID1 (r1bio r1) writes of each page: one per mirror in
 * use, mddev's raid_disks less its degraded ones (each leg's completion
 * takes its bio out of r1->bios[], so those say only which legs are still
 * out).  A replacement being rebuilt writes one more: its entry's folios
 * then wait for a copy that never comes (unsettled, counted).
 */
static __always_inline __u32 raid1_copies(void *r1)
{
	void *mddev = read_ptr_at(r1, r1bio_mddev_off);
	int disks = 0, degraded = 0;

	if (!mddev)
		return 1;
	bpf_probe_read_kernel(&disks, sizeof(disks), mddev + mddev_raid_disks_off);
	bpf_probe_read_kernel(&degraded, sizeof(degraded), mddev + mddev_degraded_off);
	disks -= degraded;
	return disks < 1 ? 1 : disks > AMP_MD_MAX_COPIES ? AMP_MD_MAX_COPIES : disks;
}

/* The bio whose tags say what bio's bytes are (bio itself if no dm target
 * or md made it); the md and dm devices it came through to acc->layers
 * (its request's first bio only), for a dm-crypt write the plaintext
 * bvecs to acc->plain_*, and for a RAID1 leg's the number of copies to
 * acc->copies.  A subprogram of its own: the
 * walk's frames are near the 512 bytes the verifier allows three of them
 * (5.15 counts them so). */
static __noinline struct bio *dm_origin(struct bio *bio, __u64 end_io, struct walk_acc *acc)
{
	bool plain = false;

	if (!acc)
		return bio;
	acc->plain_vecs = NULL;
	acc->copies = 1;
#pragma unroll
	for (int step = 0; step < AMP_DM_STEPS; step++) {
		if (dm_crypt_end_io && end_io == dm_crypt_end_io) {
			/* bi_private: its struct dm_crypt_io */
			struct bio *base = read_ptr_at(BPF_CORE_READ(bio, bi_private),
						       dm_crypt_io_base_bio_off);

			if (!base)
				break;
			if (!plain) {
				acc->plain_vecs = BPF_CORE_READ(base, bi_io_vec);
				acc->plain_idx = BPF_CORE_READ(base, bi_iter.bi_idx);
				acc->plain_done = BPF_CORE_READ(base, bi_iter.bi_bvec_done);
				plain = true;
			}
			bio = base;
		} else if (dm_clone_end_io && end_io == dm_clone_end_io) {
			/* The clone is a member of its struct dm_target_io, whose
			 * io (struct dm_io) holds the bio that came to the device. */
			void *tio = (void *)bio - dm_tio_clone_off;
			struct bio *orig = read_ptr_at(read_ptr_at(tio, dm_tio_io_off),
						       dm_io_orig_bio_off);

			if (!orig)
				break;
			layer_add_bio(acc, orig);
			bio = orig;
		} else if (md_raid1_end_io && end_io == md_raid1_end_io) {
			/* bi_private: its struct r1bio, whose master_bio came to md */
			void *r1 = BPF_CORE_READ(bio, bi_private);
			struct bio *master = read_ptr_at(r1, r1bio_master_bio_off);

			if (!master)
				break;
			/* The md device's row, and those above it, get 1/copies
			 * of each leg's: their counters count the bio once. */
			acc->copies *= raid1_copies(r1);
			layer_add_bio(acc, master);
			bio = master;
		} else if (md_clone_end_io && end_io == md_clone_end_io) {
			/* md's accounting clone (6.5+): a member of its struct
			 * md_io_clone, whose orig_bio came to md. */
			struct bio *orig = read_ptr_at((void *)bio - md_io_clone_bio_off,
						       md_io_clone_orig_off);

			if (!orig)
				break;
			bio = orig;
		} else {
			break;
		}
		end_io = (__u64)BPF_CORE_READ(bio, bi_end_io);
	}
	acc->first_bio_seen = true;
	return bio;
}

#endif /* AMPTRACE_STACK_BPF_H */
