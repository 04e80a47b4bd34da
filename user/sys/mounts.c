// SPDX-License-Identifier: GPL-2.0
/*
 * Mounts and disks, from mountinfo (read with util-linux's libmount):
 * where a filesystem is mounted here, for paths the kernel side took from
 * the dentry chain (they run from the root of their filesystem, named by
 * the superblock's device); a file's superblock device; the disk under a
 * superblock.
 */
#include <libmount.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "sys/devstat.h"
#include "sys/mounts.h"

static struct libmnt_table *table;	/* kept for the run, like paths' cache */

/* Length of root if the path rel lies under it ("/" holds everything, as
 * 0), else -1. */
static int under_root(const char *root, const char *rel)
{
	size_t n;

	if (!root || !strcmp(root, "/"))
		return 0;
	n = strlen(root);
	if (strncmp(root, rel, n) || (rel[n] && rel[n] != '/'))
		return -1;
	return n;
}

/* The best mount of the filesystem on sb_kdev for rel in table t: the one
 * whose root holds the most of rel (a btrfs subvolume mounted on its own,
 * root "/@home", rather than the top level, root "/"), else the first. */
static struct libmnt_fs *best_mount(struct libmnt_table *t, __u32 sb_kdev, const char *rel,
				    int *root_len)
{
	struct libmnt_iter *it = mnt_new_iter(MNT_ITER_FORWARD);
	struct libmnt_fs *fs, *best = NULL;

	*root_len = -1;
	if (!it)
		return NULL;
	while (mnt_table_next_fs(t, it, &fs) == 0) {
		int n;

		if (kdev_from_user(mnt_fs_get_devno(fs)) != sb_kdev || !mnt_fs_get_target(fs))
			continue;
		n = under_root(mnt_fs_get_root(fs), rel);
		if (n > *root_len) {
			best = fs;
			*root_len = n;
		}
	}
	mnt_free_iter(it);
	return best;
}

char *mount_path(__u32 sb_kdev, const char *rel)
{
	struct libmnt_fs *fs = NULL;
	const char *target, *rest;
	char *out;
	int n = -1;

	/* The table as first read, then once more if a mount came since. */
	for (int pass = 0; pass < 2 && !fs; pass++) {
		if (pass || !table) {
			mnt_unref_table(table);
			table = mnt_new_table_from_file("/proc/self/mountinfo");
		}
		if (table)
			fs = best_mount(table, sb_kdev, rel, &n);
	}
	if (!fs)
		return NULL;
	target = mnt_fs_get_target(fs);
	rest = rel + n;		/* "" or "/..." */
	if (!strcmp(target, "/") && *rest)
		target = "";
	if (asprintf(&out, "%s%s", target, rest) < 0)
		return NULL;
	return out;
}

/*
 * The superblock device of pid's fd (kernel encoding).  stat()'s st_dev is
 * not always it: a btrfs file reports its subvolume's.  fdinfo gives the
 * fd's mount id, the pid's own mountinfo that mount's device.
 */
__u32 fd_superblock_dev(int pid, int fd, dev_t st_dev)
{
	char path[64], line[256];
	struct libmnt_table *t;
	struct libmnt_iter *it;
	struct libmnt_fs *fs;
	__u32 dev = kdev_from_user(st_dev);
	int mnt_id = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", pid, fd);
	f = fopen(path, "r");
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "mnt_id: %d", &mnt_id) == 1)
				break;
		fclose(f);
	}
	if (mnt_id < 0)
		return dev;
	snprintf(path, sizeof(path), "/proc/%d/mountinfo", pid);
	t = mnt_new_table_from_file(path);
	it = mnt_new_iter(MNT_ITER_FORWARD);
	while (t && it && mnt_table_next_fs(t, it, &fs) == 0)
		if (mnt_fs_get_id(fs) == mnt_id) {
			dev = kdev_from_user(mnt_fs_get_devno(fs));
			break;
		}
	mnt_free_iter(it);
	mnt_unref_table(t);
	return dev;
}

/* The block device under a superblock: its own, or, for an anonymous one
 * (btrfs), the device it was mounted from; 0 if unknown. */
__u32 fs_source_dev(__u32 sb_dev)
{
	struct libmnt_table *t;
	struct libmnt_fs *fs;
	struct stat st;
	__u32 dev = 0;

	if (kdev_major(sb_dev))
		return sb_dev;
	t = mnt_new_table_from_file("/proc/self/mountinfo");
	fs = t ? mnt_table_find_devno(t, makedev(kdev_major(sb_dev), kdev_minor(sb_dev)),
				      MNT_ITER_FORWARD) : NULL;
	if (fs && mnt_fs_get_source(fs) && !stat(mnt_fs_get_source(fs), &st) &&
	    S_ISBLK(st.st_mode))
		dev = kdev_from_user(st.st_rdev);
	mnt_unref_table(t);
	return dev;
}

bool fstype_on_devs(const char *fstype, const __u32 *devs, int nr_devs)
{
	struct libmnt_table *t = mnt_new_table_from_file("/proc/self/mountinfo");
	struct libmnt_iter *it = mnt_new_iter(MNT_ITER_FORWARD);
	struct libmnt_fs *fs;
	struct stat st;
	bool found = false;

	while (t && it && !found && mnt_table_next_fs(t, it, &fs) == 0) {
		const char *src = mnt_fs_get_source(fs);

		if (!mnt_fs_match_fstype(fs, fstype))
			continue;
		if (!devs) {
			found = true;
		} else if (src && !stat(src, &st) && S_ISBLK(st.st_mode)) {
			for (int i = 0; i < nr_devs; i++)
				found |= devs[i] == kdev_from_user(st.st_rdev);
		}
	}
	mnt_free_iter(it);
	mnt_unref_table(t);
	return found;
}
