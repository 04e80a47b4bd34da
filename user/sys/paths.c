// SPDX-License-Identifier: GPL-2.0
/*
 * (dev, ino) -> path.  The kernel side only knows inodes; a writer that
 * dirtied the file most often still has it open or mapped, so look in its
 * /proc/PID/fd and /proc/PID/map_files first (the name it has now, after
 * a rename too).  A writer that closed it already (a short-lived one, or
 * one that rotated the file away) leaves the path the kernel side took
 * from the dentry chain when it first saw the file, with the mount point
 * put in front (mounts.c); failing that, the dentry basename.  Results
 * are cached: one look-up a file.
 *
 * The kernel's dev is the file's st_dev (inode_dev() in compat.bpf.h: on
 * btrfs, the subvolume's device, not the superblock's), so a plain stat()
 * of a /proc link matches it.
 */
#include <bpf/bpf.h>
#include <dirent.h>
#include <limits.h>
#include <linux/types.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "amptrace.h"
#include "util.h"
#include "sys/devstat.h"
#include "sys/mounts.h"
#include "sys/paths.h"

struct path_entry {
	__u32 kdev;
	__u64 ino;
	char *path;
};

static struct path_entry *cache;
static size_t cache_len, cache_cap;
static int files_map_fd = -1, paths_map_fd = -1;
static const volatile __u32 *bdevfs_dev;

/* The kernel's per-file maps: its paths and basenames are the last resort. */
void paths_use_maps(int files_fd, int paths_fd)
{
	files_map_fd = files_fd;
	paths_map_fd = paths_fd;
}

/* The kernel side's note of the block-device pseudo-filesystem's s_dev
 * (0 until it sees one of its folios). */
void paths_use_bdevfs(const volatile __u32 *dev)
{
	bdevfs_dev = dev;
}

/* The names in order, after the mount point; ".../" in front of a walk
 * that stopped short of the root, " (deleted)" after an unlinked file. */
static char *file_path_str(const struct amp_file_path *p)
{
	const char *name[AMP_PATH_DEPTH];
	unsigned len = p->len < AMP_PATH_LEN ? p->len : AMP_PATH_LEN, n = 0;
	char rel[AMP_PATH_LEN + 1], *full = NULL, *del;
	size_t at = 0;

	/* Leaf first, each name ending in its NUL. */
	for (unsigned off = 0; off < len && n < AMP_PATH_DEPTH; n++) {
		const char *end = memchr(p->rev + off, 0, len - off);

		if (!end)
			break;
		name[n] = p->rev + off;
		off = end - p->rev + 1;
	}
	if (!n)
		return NULL;
	for (unsigned i = n; i-- > 0;)
		at += snprintf(rel + at, sizeof(rel) - at, "/%s", name[i]);
	if (p->flags & AMP_PATH_ROOT) {
		full = mount_path(p->sb_dev, rel);
		if (!full && asprintf(&full, "%u:%u:%s", kdev_major(p->sb_dev),
				      kdev_minor(p->sb_dev), rel) < 0)
			return NULL;
	} else if (asprintf(&full, "...%s", rel) < 0) {
		return NULL;
	}
	if ((p->flags & AMP_PATH_DELETED) && asprintf(&del, "%s (deleted)", full) >= 0) {
		free(full);
		full = del;
	}
	return full;
}

/*
 * A block device's own inode: the kernel's block-device pseudo-filesystem
 * has an anonymous device (major 0) and numbers each inode by the dev_t
 * of the device it stands for.  Its pages are the metadata blocks of the
 * filesystem on that device (ext4 without a journal): "/dev/NAME (block
 * device)", or NULL if ino names no block device here.  Only on that
 * pseudo-filesystem's own device, as the kernel side saw it: any major-0
 * device (tmpfs, overlay, a btrfs subvolume) has inode numbers that may
 * equal some disk's dev_t.
 */
static char *bdev_name(__u32 kdev, __u64 ino)
{
	char path[64], line[128], out[160], *name = NULL;
	FILE *f;

	if (!bdevfs_dev || !*bdevfs_dev || kdev != *bdevfs_dev || !ino || ino >> 32)
		return NULL;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent",
		 kdev_major((__u32)ino), kdev_minor((__u32)ino));
	f = fopen(path, "r");
	if (!f)
		return NULL;
	while (!name && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "DEVNAME=", 8))
			continue;
		line[strcspn(line, "\n")] = 0;
		snprintf(out, sizeof(out), "/dev/%s (block device)", line + 8);
		name = strdup(out);
	}
	fclose(f);
	return name;
}

/* The path the kernel took, else its basename, else a block device's
 * name, else "major:minor:ino". */
static char *kernel_name(__u32 kdev, __u64 ino)
{
	struct amp_file_key key = { .dev = kdev, .ino = ino };
	struct amp_file_stats st;
	struct amp_file_path fp;
	char buf[AMP_FILE_NAME_LEN + 32], *p;

	if (paths_map_fd >= 0 && !bpf_map_lookup_elem(paths_map_fd, &key, &fp) &&
	    (p = file_path_str(&fp)))
		return p;
	if (files_map_fd >= 0 && !bpf_map_lookup_elem(files_map_fd, &key, &st) && st.name[0]) {
		st.name[AMP_FILE_NAME_LEN - 1] = 0;
		return strdup(st.name);
	}
	p = bdev_name(kdev, ino);
	if (p)
		return p;
	snprintf(buf, sizeof(buf), "%u:%u:%llu", kdev_major(kdev), kdev_minor(kdev),
		 (unsigned long long)ino);
	return strdup(buf);
}

static char *scan_dir(const char *dir, __u32 kdev, __u64 ino)
{
	char link[PATH_MAX], target[PATH_MAX];
	struct dirent *d;
	struct stat st;
	char *found = NULL;
	DIR *dp = opendir(dir);
	ssize_t n;

	if (!dp)
		return NULL;
	while (!found && (d = readdir(dp))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", dir, d->d_name);
		if (stat(link, &st) || st.st_ino != ino || kdev_from_user(st.st_dev) != kdev)
			continue;
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = 0;
		found = strdup(target);
	}
	closedir(dp);
	return found;
}

const char *path_of(__u32 kdev, __u64 ino, __u32 pid)
{
	char dir[64];
	char *p;

	for (size_t i = 0; i < cache_len; i++)
		if (cache[i].kdev == kdev && cache[i].ino == ino)
			return cache[i].path;

	snprintf(dir, sizeof(dir), "/proc/%u/fd", pid);
	p = scan_dir(dir, kdev, ino);
	if (!p) {
		snprintf(dir, sizeof(dir), "/proc/%u/map_files", pid);
		p = scan_dir(dir, kdev, ino);
	}
	if (!p) {
		/* Closed and unmapped since: what the kernel saw. */
		p = kernel_name(kdev, ino);
		if (!p)
			return "?";
	}
	if (amp_grow(&cache, &cache_cap, cache_len + 1, sizeof(*cache))) {
		free(p);
		return "?";
	}
	cache[cache_len++] = (struct path_entry){ kdev, ino, p };
	return p;
}

const char *path_of_fn(void *ctx, __u32 kdev, __u64 ino, __u32 pid)
{
	return path_of(kdev, ino, pid);
}
