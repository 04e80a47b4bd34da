/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CO-RE shims: every place where the kernel's layout changed under us,
 * decided from BTF at load time, never from a version number.
 *
 * Helpers that take a tp_btf argument (a folio or superblock the kernel
 * handed us) load its fields directly: a verified load, not a helper call
 * per field.  Pointers computed from raw values (the block walk's pages)
 * are read with bpf_probe_read_kernel (BPF_CORE_READ), or, where a helper
 * takes cast (6.2+), as typed loads through bpf_rdonly_cast.
 */
#ifndef AMPTRACE_COMPAT_BPF_H
#define AMPTRACE_COMPAT_BPF_H

#define AMP_S_IFMT   00170000
#define AMP_S_IFSOCK 0140000
#define AMP_S_IFREG  0100000
#define AMP_S_IFCHR  0020000
#define AMP_KMSG_RDEV ((1u << 20) | 11)	/* /dev/kmsg, kernel dev_t encoding */
#define AMP_PF_KTHREAD 0x00200000	/* include/linux/sched.h, stable since 2.6 */

/* Since 6.2: a raw pointer as a read-only typed one, whose fields are
 * fault-safe loads (fd_ident, the block walk).  Each program that calls it
 * has a twin without, for older kernels: their verifiers reject a call to
 * a missing kfunc even where it is dead code. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

static __always_inline bool current_is_kthread(void)
{
	return bpf_get_current_task_btf()->flags & AMP_PF_KTHREAD;
}

/*
 * folio_nr_pages(): 6.13+ keeps the count in folio->_nr_pages
 * (commit "mm: rename _folio_nr_pages to _nr_pages"); before that it was
 * _folio_nr_pages; kernels before either only had the order.
 */
struct folio___nr_pages {
	unsigned int _nr_pages;
} __attribute__((preserve_access_index));

struct folio___folio_nr_pages {
	unsigned int _folio_nr_pages;
} __attribute__((preserve_access_index));

struct folio___order {
	unsigned char _folio_order;
} __attribute__((preserve_access_index));

/*
 * folio->flags is an unsigned long before 6.17 and a memdesc_flags_t (a
 * struct around one) since; CO-RE matches field types too, so ask for each
 * flavour and read the word raw from whichever exists.
 */
struct folio___flags_ulong {
	unsigned long flags;
} __attribute__((preserve_access_index));

/*
 * Kernels before struct folio (5.16 and older) keep a page's mapping and
 * index in struct page itself; 6.16+ renamed page->index, so ask for this
 * flavour only where there is no folio type.
 */
struct page___pre_folio {
	struct address_space *mapping;
	unsigned long index;
} __attribute__((preserve_access_index));

/* folio: a tp_btf argument (direct loads). */
static __always_inline bool folio_is_large(struct folio *folio)
{
	int head = bpf_core_enum_value(enum pageflags, PG_head);
	unsigned long flags;

	if (bpf_core_field_exists(struct folio___flags_ulong, flags))
		flags = ((struct folio___flags_ulong *)folio)->flags;
	else
		flags = *(unsigned long *)((void *)folio +
					   bpf_core_field_offset(struct folio, flags));
	return flags & (1UL << head);
}

/* folio: a tp_btf argument (direct loads). */
static __always_inline __u32 folio_npages(struct folio *folio)
{
	if (!folio_is_large(folio))
		return 1;
	if (bpf_core_field_exists(struct folio___nr_pages, _nr_pages))
		return ((struct folio___nr_pages *)folio)->_nr_pages;
	if (bpf_core_field_exists(struct folio___folio_nr_pages, _folio_nr_pages))
		return ((struct folio___folio_nr_pages *)folio)->_folio_nr_pages;
	if (bpf_core_field_exists(struct folio___order, _folio_order))
		return 1u << ((struct folio___order *)folio)->_folio_order;
	return 1;
}

/*
 * A word of kernel memory at a raw address, as one fault-safe load (6.2+,
 * see bpf_rdonly_cast): through struct rb_node, whose first member is an
 * unsigned long in every kernel.  For words a typed load would turn into a
 * pointer: a pointer field, or one in a union with a pointer (the verifier
 * types a union's bytes by its first member), whose bits are then tested.
 */
static __always_inline unsigned long kernel_word_cast(const void *addr)
{
	struct rb_node *w = bpf_rdonly_cast(addr, bpf_core_type_id_kernel(struct rb_node));

	return w->__rb_parent_color;
}

/* folio_npages() of a folio known by a raw pointer (the block walk's):
 * the same fields, read with bpf_probe_read_kernel, or with cast (6.2+)
 * as typed loads.  Before struct folio, page-cache pages of regular files
 * were single pages. */
static __always_inline __u32 folio_npages_raw(struct folio *folio, const bool cast)
{
	int head = bpf_core_enum_value(enum pageflags, PG_head);
	unsigned long flags = 0;
	__u32 off;

	if (cast)
		return folio_npages(bpf_rdonly_cast(folio, bpf_core_type_id_kernel(struct folio)));
	if (!bpf_core_type_exists(struct folio))
		return 1;
	/* The flags word of either flavour (see folio_is_large). */
	if (bpf_core_field_exists(struct folio___flags_ulong, flags))
		off = bpf_core_field_offset(struct folio___flags_ulong, flags);
	else
		off = bpf_core_field_offset(struct folio, flags);
	bpf_probe_read_kernel(&flags, sizeof(flags), (void *)folio + off);
	if (!(flags & (1UL << head)))
		return 1;
	if (bpf_core_field_exists(struct folio___nr_pages, _nr_pages))
		return BPF_CORE_READ((struct folio___nr_pages *)folio, _nr_pages);
	if (bpf_core_field_exists(struct folio___folio_nr_pages, _folio_nr_pages))
		return BPF_CORE_READ((struct folio___folio_nr_pages *)folio, _folio_nr_pages);
	if (bpf_core_field_exists(struct folio___order, _folio_order))
		return 1u << BPF_CORE_READ((struct folio___order *)folio, _folio_order);
	return 1;
}

/* page_folio(): a tail page points at its head with bit 0 set.  cast:
 * by a typed load (6.2+), as a word: compound_head shares its bytes with
 * lru.next. */
static __always_inline struct folio *page_to_folio(struct page *page, const bool cast)
{
	unsigned long head = cast ? kernel_word_cast((void *)page +
						     bpf_core_field_offset(struct page, compound_head)) :
				    BPF_CORE_READ(page, compound_head);

	if (head & 1)
		return (struct folio *)(head - 1);
	return (struct folio *)page;
}

/* The page-cache index of a head page (see folio_file_mapping). */
static __always_inline __u64 folio_index(struct folio *folio, const bool cast)
{
	if (cast)
		return ((struct folio *)bpf_rdonly_cast(folio, bpf_core_type_id_kernel(struct folio)))->index;
	if (bpf_core_type_exists(struct folio))
		return BPF_CORE_READ(folio, index);
	return BPF_CORE_READ((struct page___pre_folio *)folio, index);
}

/* A file's address_space, or NULL for anonymous/movable/KSM pages.  folio:
 * a head page, read as struct page where the kernel has no folio type.
 * cast: by a typed load (6.2+), as a word, whose bits are tested. */
static __always_inline struct address_space *folio_file_mapping(struct folio *folio, const bool cast)
{
	unsigned long mapping;

	if (cast)
		mapping = kernel_word_cast((void *)folio + bpf_core_field_offset(struct folio, mapping));
	else if (bpf_core_type_exists(struct folio))
		mapping = (unsigned long)BPF_CORE_READ(folio, mapping);
	else
		mapping = (unsigned long)BPF_CORE_READ((struct page___pre_folio *)folio, mapping);

	if (mapping & 3)	/* PAGE_MAPPING_ANON / _MOVABLE / KSM */
		return NULL;
	return (struct address_space *)mapping;
}

/*
 * The block device under a superblock.  btrfs leaves sb->s_bdev NULL (it
 * can span devices); its latest device is the one it writes to here.  The
 * btrfs types only resolve where btrfs is in vmlinux BTF; elsewhere the
 * branch is dead and libbpf poisons it.
 */
#define AMP_BTRFS_SUPER_MAGIC 0x9123683E

/* The disk (kernel dev_t) under a superblock, 0 for none (tmpfs, proc).
 * sb: from a tp_btf argument (direct loads but for btrfs's private info). */
static __always_inline __u32 sb_disk(struct super_block *sb)
{
	struct block_device *bdev = sb->s_bdev;
	struct gendisk *disk;

	if (bdev) {
		disk = bdev->bd_disk;
		return disk ? (disk->major << 20) | disk->first_minor : 0;
	}
	if (bpf_core_type_exists(struct btrfs_fs_info) && sb->s_magic == AMP_BTRFS_SUPER_MAGIC) {
		struct btrfs_fs_info *fs_info = sb->s_fs_info;	/* void *: raw from here */

		disk = BPF_CORE_READ(fs_info, fs_devices, latest_dev, bdev, bd_disk);
		if (disk)
			return (BPF_CORE_READ(disk, major) << 20) | BPF_CORE_READ(disk, first_minor);
	}
	return 0;
}

/*
 * A block device's own inode (bdevfs, BDEVFS_MAGIC): its page cache holds
 * the buffers a filesystem reads and writes through the device, ext4's
 * metadata blocks when it has no journal (inode table, bitmaps, group
 * descriptors, dirtied in the writer's context).  Its superblock is the
 * pseudo-filesystem's, with no s_bdev: the disk is that of the device the
 * inode stands for, I_BDEV(inode)->bd_disk (struct bdev_inode since 2.6).
 */
#define AMP_BDEVFS_MAGIC 0x62646576

/* The disk (kernel dev_t) of a bdevfs inode, 0 if unknown.  inode: a
 * tp_btf pointer, the bdev_inode around it read raw. */
static __always_inline __u32 bdev_inode_disk(struct inode *inode)
{
	struct bdev_inode *bi;
	struct gendisk *disk;

	if (!bpf_core_type_exists(struct bdev_inode))
		return 0;
	bi = (void *)inode - bpf_core_field_offset(struct bdev_inode, vfs_inode);
	disk = BPF_CORE_READ(bi, bdev.bd_disk);
	return disk ? (BPF_CORE_READ(disk, major) << 20) | BPF_CORE_READ(disk, first_minor) : 0;
}

/*
 * The disk a request is for: request_queue->disk since 5.15 (commit
 * "block: add a struct gendisk pointer to the request_queue"), before that
 * request->rq_disk.
 */
struct request___rq_disk {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

struct request_queue___disk {
	struct gendisk *disk;
} __attribute__((preserve_access_index));

static __always_inline struct gendisk *request_disk(struct request *rq)
{
	if (bpf_core_field_exists(struct request_queue___disk, disk)) {
		struct request_queue___disk *q = (void *)BPF_CORE_READ(rq, q);

		return BPF_CORE_READ(q, disk);
	}
	return BPF_CORE_READ((struct request___rq_disk *)rq, rq_disk);
}

/*
 * The device a file is known by: the one stat() reports as st_dev, which
 * is the superblock's s_dev everywhere but on btrfs.  There every
 * subvolume (the top level too) is a tree with inode numbers of its own
 * (inode 257 is in each of them) and an anonymous device of its own,
 * root->anon_dev, which btrfs_getattr() reports; the superblock's s_dev
 * is yet another anonymous device that stat() never shows (only
 * /proc/self/mountinfo does).  Keyed by the subvolume's device, files of
 * two subvolumes never share a key, and user space matches a file by a
 * plain stat() (paths, explain, the loader's own output) with no mount
 * table.  A root without one (the tree root, whose btree inode holds the
 * metadata pages) keeps s_dev.  Read as s_magic only elsewhere: the cost
 * on other filesystems is that one load.
 */
static __always_inline __u32 inode_dev(struct inode *inode, __u32 s_dev, unsigned long s_magic)
{
	if (bpf_core_field_exists(struct btrfs_root, anon_dev) &&
	    s_magic == AMP_BTRFS_SUPER_MAGIC) {
		struct btrfs_inode *bi = (void *)inode -
					 bpf_core_field_offset(struct btrfs_inode, vfs_inode);
		__u32 anon = BPF_CORE_READ(bi, root, anon_dev);

		if (anon)
			return anon;
	}
	return s_dev;
}

/*
 * Does this inode hold file data?  Regular files do, except btrfs's btree
 * inode (objectid 1), a regular-looking inode whose pages are metadata.
 */
#define AMP_BTRFS_BTREE_INO 1

static __always_inline bool inode_holds_data(__u16 mode, __u64 ino, struct super_block *sb)
{
	if ((mode & AMP_S_IFMT) != AMP_S_IFREG)
		return false;
	return !(ino == AMP_BTRFS_BTREE_INO && BPF_CORE_READ(sb, s_magic) == AMP_BTRFS_SUPER_MAGIC);
}


#endif /* AMPTRACE_COMPAT_BPF_H */
