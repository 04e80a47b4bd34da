/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stacked block devices (dm-linear as LVM makes it, dm-crypt): a request
 * of the disk below carries bios a dm target made, not the filesystem's.
 * Back from such a bio to the one that came to the dm device: its tags
 * (fs_bios, the xfs log's end_io) say what the bytes are, its device is
 * a layer whose row gets the request's classes, and a dm-crypt write's
 * bounce pages stand for the plaintext pages of the bio it encrypted.
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

/* clone, crypt, clone: LUKS over LVM, or LVM over LUKS. */
#define AMP_DM_STEPS 4

/* The layers whose rows mirror a request's classes: its partition
 * (rq->part), then the dm devices its first bio came through. */
#define AMP_LAYERS 3

struct layers {
	__u32 dev[AMP_LAYERS];
	__u64 name[AMP_LAYERS];	/* kernel address of each one's name */
	__u32 nr;
};

/* One request's classes and charged bytes as its walk adds them to the
 * disk's row, for the rows of the layers above (stack.bpf.h) at its end.
 * Per CPU: a program does not nest on a CPU. */
struct walk_acc {
	__u64 bytes[AMP_NR_CLASSES];
	__u64 charged;
	struct layers layers;	/* its partition, its first bio's dm devices */
	bool first_bio_seen;
	/* A dm-crypt write's plaintext, for the bio dm_origin() was given:
	 * where its bvecs are (plain_vecs 0: none). */
	struct bio_vec *plain_vecs;
	__u32 plain_idx, plain_done;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct walk_acc);
} walk_acc SEC(".maps");

static __always_inline void layer_add(struct layers *l, __u32 dev, const void *name)
{
	__u32 i = l->nr;

	if (i < AMP_LAYERS) {
		l->dev[i] = dev;
		l->name[i] = (__u64)name;
		l->nr = i + 1;
	}
}

/* The bio whose tags say what bio's bytes are (bio itself if no dm target
 * made it); the dm devices it came through to acc->layers (its request's
 * first bio only), and for a dm-crypt write the plaintext bvecs to
 * acc->plain_*.  A subprogram of its own: the walk's frames are near the
 * 512 bytes the verifier allows three of them (5.15 counts them so). */
static __noinline struct bio *dm_origin(struct bio *bio, __u64 end_io, struct walk_acc *acc)
{
	bool plain = false;

	if (!acc)
		return bio;
	acc->plain_vecs = NULL;
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
			struct block_device *bdev;

			if (!orig)
				break;
			bdev = BPF_CORE_READ(orig, bi_bdev);
			if (!acc->first_bio_seen && bdev) {
				struct gendisk *gd = BPF_CORE_READ(bdev, bd_disk);

				layer_add(&acc->layers, BPF_CORE_READ(bdev, bd_dev), gd ? (void *)gd +
					  bpf_core_field_offset(struct gendisk, disk_name) : NULL);
			}
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
