// SPDX-License-Identifier: GPL-2.0
/*
 * Block devices by what users type, and the stacks they are in.  sysfs
 * says it all: /sys/dev/block/M:m is a device's folder, a partition's
 * holds a `partition` file and sits in its disk's folder, and a dm or md
 * device lists the devices it is built on in slaves/ (they list it in
 * holders/).
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util.h"
#include "sys/blockdev.h"
#include "sys/devstat.h"
#include "sys/mounts.h"

static int read_devno(const char *path, __u32 *kdev)
{
	unsigned major, minor;
	FILE *f = fopen(path, "r");
	int n;

	if (!f)
		return -1;
	n = fscanf(f, "%u:%u", &major, &minor);
	fclose(f);
	if (n != 2)
		return -1;
	*kdev = (major << 20) | minor;
	return 0;
}

/* /sys/dev/block/M:m, resolved: the device's own folder. */
static int sysfs_dir(__u32 kdev, char *real)
{
	char path[64];

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", kdev_major(kdev), kdev_minor(kdev));
	return realpath(path, real) ? 0 : -1;
}

__u32 blockdev_devno(const char *name)
{
	char path[PATH_MAX];
	__u32 kdev;

	snprintf(path, sizeof(path), "/sys/class/block/%s/dev", name);
	return read_devno(path, &kdev) ? 0 : kdev;
}

int blockdev_name(__u32 kdev, char *buf, size_t len)
{
	char real[PATH_MAX], *base;

	if (sysfs_dir(kdev, real) || !(base = strrchr(real, '/')) || strlen(base + 1) >= len)
		return -1;
	memcpy(buf, base + 1, strlen(base + 1) + 1);
	return 0;
}

__u32 blockdev_partition_disk(__u32 kdev)
{
	char real[PATH_MAX + 16], *slash;
	__u32 disk;

	if (sysfs_dir(kdev, real))
		return 0;
	slash = real + strlen(real);
	snprintf(slash, sizeof(real) - (slash - real), "/partition");
	if (access(real, F_OK))
		return 0;
	*slash = 0;
	if (!(slash = strrchr(real, '/')))
		return 0;
	snprintf(slash, sizeof(real) - (slash - real), "/dev");
	return read_devno(real, &disk) ? 0 : disk;
}

const char *blockdev_bio_layer(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/class/block/%s/dm", name);
	if (!access(path, F_OK))
		return "dm";
	snprintf(path, sizeof(path), "/sys/class/block/%s/md", name);
	if (!access(path, F_OK))
		return "md";
	return NULL;
}

__u32 blockdev_disk_of_sb(__u32 sb_dev)
{
	__u32 dev = fs_source_dev(sb_dev);

	return dev ? blockdev_partition_disk(dev) ?: dev : 0;
}

int blockdev_md_level(const char *name, char *buf, size_t len)
{
	char path[128];
	FILE *f;
	int rc = -1;

	snprintf(path, sizeof(path), "/sys/class/block/%s/md/level", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (len && fgets(buf, len, f)) {
		buf[strcspn(buf, "\n")] = 0;
		rc = 0;
	}
	fclose(f);
	return rc;
}

int blockdev_md_disks(const char *name, __u32 *disks, int max)
{
	char path[PATH_MAX];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/sys/class/block/%s/slaves", name);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)) && n < max) {
		__u32 kdev;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/block/%s/dev", de->d_name);
		if (read_devno(path, &kdev))
			continue;
		/* A leg on a dm device (RAID1 of LUKS volumes): its disk. */
		disks[n++] = blockdev_bottom_disk(de->d_name) ?: blockdev_partition_disk(kdev) ?: kdev;
	}
	closedir(d);
	return n;
}

/* The first (by name) of a device's slaves into out: 0, or -1 if none. */
static int first_slave(const char *name, char *out, size_t len)
{
	char path[PATH_MAX];
	struct dirent *de;
	int found = -1;
	DIR *d;

	snprintf(path, sizeof(path), "/sys/class/block/%s/slaves", name);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || strlen(de->d_name) >= len)
			continue;
		if (found < 0 || strcmp(de->d_name, out) < 0)
			snprintf(out, len, "%s", de->d_name);
		found = 0;
	}
	closedir(d);
	return found;
}

__u32 blockdev_bottom_disk(const char *name)
{
	char cur[NAME_MAX + 1], below[NAME_MAX + 1];
	__u32 kdev;

	snprintf(cur, sizeof(cur), "%s", name);
	for (int depth = 0; depth < 8 && !first_slave(cur, below, sizeof(below)); depth++)
		snprintf(cur, sizeof(cur), "%s", below);
	if (!strcmp(cur, name) || !(kdev = blockdev_devno(cur)))
		return 0;
	return blockdev_partition_disk(kdev) ?: kdev;
}

bool blockdev_in_stack(const struct blockdev_stack *s, __u32 kdev)
{
	for (int i = 0; i < s->nr_devs; i++)
		if (s->devs[i] == kdev)
			return true;
	return false;
}

/* Adds kdev to the stack once: 0, or -1 if the stack is full. */
static int stack_add(struct blockdev_stack *s, __u32 kdev)
{
	if (blockdev_in_stack(s, kdev))
		return 0;
	if (s->nr_devs >= AMP_MAX_TARGET_DEVS)
		return -1;
	s->devs[s->nr_devs++] = kdev;
	return 0;
}

/* Adds the devices of sysfs folder dir/sub that are block devices (each
 * entry's dev file: slaves/ and holders/ list names, a disk's folder its
 * partitions among other things). */
static int stack_add_dir(struct blockdev_stack *s, const char *dir, const char *sub,
			 bool partitions_only)
{
	char path[PATH_MAX + 64];
	struct dirent *d;
	DIR *dp;
	__u32 kdev;
	int err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	dp = opendir(path);
	if (!dp)
		return 0;
	while (!err && (d = readdir(dp))) {
		if (d->d_name[0] == '.')
			continue;
		if (partitions_only) {
			snprintf(path, sizeof(path), "%s/%s/partition", dir, d->d_name);
			if (access(path, F_OK))
				continue;
			snprintf(path, sizeof(path), "%s/%s/dev", dir, d->d_name);
		} else {
			snprintf(path, sizeof(path), "/sys/class/block/%s/dev", d->d_name);
		}
		if (!read_devno(path, &kdev))
			err = stack_add(s, kdev);
	}
	closedir(dp);
	return err;
}

/* Everything connected to s->kdev through partition, slave and holder
 * links: the disks a layer is on, the layers on a disk. */
static int stack_walk(struct blockdev_stack *s)
{
	__u32 disk = blockdev_partition_disk(s->kdev);

	s->nr_devs = 0;
	if (stack_add(s, disk ? disk : s->kdev) || stack_add(s, s->kdev))
		return -1;
	for (int i = 0; i < s->nr_devs; i++) {
		char dir[PATH_MAX];
		__u32 under;

		if (sysfs_dir(s->devs[i], dir))
			continue;
		under = blockdev_partition_disk(s->devs[i]);
		if ((under && stack_add(s, under)) ||
		    stack_add_dir(s, dir, ".", true) ||
		    stack_add_dir(s, dir, "slaves", false) ||
		    stack_add_dir(s, dir, "holders", false))
			return -1;
	}
	return 0;
}

/* The device arg stands for, or 0: a sysfs name, a /dev/mapper name, a
 * block special file, or the device a path's filesystem is on. */
static __u32 resolve_kdev(const char *arg)
{
	char path[PATH_MAX];
	struct stat st;
	__u32 kdev;

	if (!*arg)
		return 0;
	if (!strchr(arg, '/')) {
		snprintf(path, sizeof(path), "/sys/class/block/%s/dev", arg);
		if (!read_devno(path, &kdev))
			return kdev;
		snprintf(path, sizeof(path), "/dev/mapper/%s", arg);
		if (!stat(path, &st) && S_ISBLK(st.st_mode))
			return kdev_from_user(st.st_rdev);
		return 0;
	}
	/* A path: relative ones only as names go (no ../loop0 into /sys). */
	if (arg[0] != '/' || stat(arg, &st))
		return 0;
	if (S_ISBLK(st.st_mode))
		return kdev_from_user(st.st_rdev);
	/* A mount point or a file: its filesystem's device (btrfs's anonymous
	 * one through the mount's source). */
	return fs_source_dev(kdev_from_user(st.st_dev));
}

int blockdev_resolve(const char *arg, struct blockdev_stack *s)
{
	struct stat st;

	memset(s, 0, sizeof(*s));
	s->kdev = resolve_kdev(arg);
	if (!s->kdev && arg[0] == '/' && !stat(arg, &st) && !S_ISBLK(st.st_mode)) {
		amp_err("%s is on no block device (a virtual filesystem, or not a block "
			"special file)", arg);
		return -1;
	}
	if (!s->kdev || blockdev_name(s->kdev, s->name, sizeof(s->name))) {
		amp_err("no such block device: %s (a disk, partition, dm or md name, "
			"a /dev path or a mount point; see /sys/class/block)", arg);
		return -1;
	}
	if (stack_walk(s)) {
		amp_err("%s is in a stack of more than %d block devices", arg, AMP_MAX_TARGET_DEVS);
		return -1;
	}
	return 0;
}
