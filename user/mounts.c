// SPDX-License-Identifier: GPL-2.0
/*
 * Mount points, for paths the kernel side took from the dentry chain: those
 * run from the root of their filesystem, named by the superblock's device;
 * /proc/self/mountinfo (read with util-linux's libmount) says where that
 * filesystem, or a part of it, is mounted here.
 */
#include <stdlib.h>
#include <string.h>
#include <libmount.h>
#include "loader.h"

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
