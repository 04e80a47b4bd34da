// SPDX-License-Identifier: GPL-2.0
/*
 * Which superblock and which disk a file is on, as the kernel side names
 * them (dev_t in the kernel's encoding, major << 20 | minor).
 *
 * stat()'s st_dev is not always the superblock's s_dev: a btrfs file
 * reports its subvolume's anonymous device.  /proc/PID/fdinfo gives the
 * fd's mount id, and /proc/PID/mountinfo that mount's superblock device
 * and source.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "loader.h"

/* The mountinfo line of mount id mnt_id (or, mnt_id < 0, of superblock
 * kdev) as seen by pid: its superblock dev and source. */
static int mount_lookup(int pid, int mnt_id, __u32 kdev, __u32 *sb_dev, char *src, size_t len)
{
	char path[64], line[4096];
	int found = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/mountinfo", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (found && fgets(line, sizeof(line), f)) {
		unsigned major, minor;
		char *sep = strstr(line, " - ");
		int id;

		if (!sep || sscanf(line, "%d %*d %u:%u", &id, &major, &minor) != 3)
			continue;
		if (mnt_id >= 0 ? id != mnt_id : ((major << 20) | minor) != kdev)
			continue;
		*sb_dev = (major << 20) | minor;
		if (src && sscanf(sep + 3, "%*s %4095s", line) == 1)
			snprintf(src, len, "%s", line);
		found = 0;
	}
	fclose(f);
	return found;
}

__u32 fd_superblock_dev(int pid, int fd, dev_t st_dev)
{
	char path[64], line[256];
	int mnt_id = -1;
	__u32 sb_dev;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", pid, fd);
	f = fopen(path, "r");
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "mnt_id: %d", &mnt_id) == 1)
				break;
		fclose(f);
	}
	if (mnt_id >= 0 && !mount_lookup(pid, mnt_id, 0, &sb_dev, NULL, 0))
		return sb_dev;
	return kdev_from_user(st_dev);
}

/* A partition's disk: /sys/dev/block/M:m/partition exists, and its parent
 * folder is the disk. */
static __u32 whole_disk(unsigned major, unsigned minor)
{
	char path[PATH_MAX], real[PATH_MAX], *slash;
	unsigned dmaj, dmin;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/partition", major, minor);
	if (access(path, F_OK))
		return (major << 20) | minor;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", major, minor);
	if (!realpath(path, real) || !(slash = strrchr(real, '/')))
		return (major << 20) | minor;
	snprintf(slash, sizeof(real) - (slash - real), "/dev");
	f = fopen(real, "r");
	if (f && fscanf(f, "%u:%u", &dmaj, &dmin) == 2) {
		fclose(f);
		return (dmaj << 20) | dmin;
	}
	if (f)
		fclose(f);
	return (major << 20) | minor;
}

__u32 disk_of_dev(__u32 sb_dev)
{
	char src[PATH_MAX];
	struct stat st;
	__u32 dev;

	if (kdev_major(sb_dev))
		return whole_disk(kdev_major(sb_dev), kdev_minor(sb_dev));
	/* An anonymous superblock (btrfs): the device it was mounted from. */
	if (mount_lookup(getpid(), -1, sb_dev, &dev, src, sizeof(src)) ||
	    stat(src, &st) || !S_ISBLK(st.st_mode))
		return 0;
	return whole_disk(major(st.st_rdev), minor(st.st_rdev));
}

bool dev_on_disk(__u32 sb_dev, const char *disk)
{
	unsigned major, minor;

	return !disk_lookup(disk, &major, &minor) && disk_of_dev(sb_dev) == ((major << 20) | minor);
}
