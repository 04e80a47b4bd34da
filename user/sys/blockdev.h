/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Block devices as users name them (loop0, sda2, dm-0, /dev/mapper/NAME,
 * /dev/VG/LV, /dev/md0, a mount point or a file), and the stack a device
 * is in: the disks below it, the partitions, dm and md devices on them,
 * from sysfs (partition, slaves/, holders/).
 */
#ifndef AMPTRACE_BLOCKDEV_H
#define AMPTRACE_BLOCKDEV_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include "amptrace.h"

struct blockdev_stack {
	char name[AMP_DISK_NAME_LEN];	/* the named device, as sysfs names it: loop0p1, dm-0 */
	__u32 kdev;			/* the named device (kernel dev_t) */
	/* Every device of the stack; devs[0] is the named device's disk. */
	__u32 devs[AMP_MAX_TARGET_DEVS];
	int nr_devs;
};

/* The device arg names and its stack: 0, or -1 after a one-line error. */
int blockdev_resolve(const char *arg, struct blockdev_stack *s);
bool blockdev_in_stack(const struct blockdev_stack *s, __u32 kdev);

/* A device's number by its sysfs name; 0 if unknown. */
__u32 blockdev_devno(const char *name);
/* A device's sysfs name (dm-0, loop0p1) into buf: 0, or -1. */
int blockdev_name(__u32 kdev, char *buf, size_t len);
/* The disk a partition is on; 0 for anything else. */
__u32 blockdev_partition_disk(__u32 kdev);
/* The disk under a superblock (a partition's disk); 0 if unknown. */
__u32 blockdev_disk_of_sb(__u32 sb_dev);
/* dm and md devices take bios, not requests: their bytes are written by
 * the requests of the disks below them.  Which of the two, or NULL. */
const char *blockdev_bio_layer(const char *name);
/* An md device's RAID level ("raid1") into buf: 0, or -1 (not md). */
int blockdev_md_level(const char *name, char *buf, size_t len);
/* The disks an md device's members are on (a partition's disk, the disk
 * under a dm member): how many into disks (at most max), or -1. */
int blockdev_md_disks(const char *name, __u32 *disks, int max);
/* The first disk below a dm or md device (its slaves followed down, a
 * partition's disk); 0 if none. */
__u32 blockdev_bottom_disk(const char *name);

#endif /* AMPTRACE_BLOCKDEV_H */
