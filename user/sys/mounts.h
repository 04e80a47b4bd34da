/* SPDX-License-Identifier: GPL-2.0 */
/* Mounts and disks from mountinfo (libmount). */
#ifndef AMPTRACE_MOUNTS_H
#define AMPTRACE_MOUNTS_H

#include <linux/types.h>
#include <stdbool.h>
#include <sys/types.h>

/* Where rel (from the root of the filesystem on the superblock device
 * sb_kdev) is in this mount namespace (malloc'd), NULL if that filesystem
 * is not mounted here. */
char *mount_path(__u32 sb_kdev, const char *rel);
/* The superblock device of pid's fd, the disk under a superblock (kernel
 * dev_t; 0 if unknown), and whether a disk is the one named (e.g. loop0). */
__u32 fd_superblock_dev(int pid, int fd, dev_t st_dev);
__u32 disk_of_dev(__u32 sb_dev);
bool disk_is_named(__u32 disk, const char *name);
/* Is a filesystem of this type (e.g. "btrfs") mounted from the disk named
 * (e.g. loop0), or from any disk if name is NULL? */
bool fstype_on_disk(const char *fstype, const char *name);

#endif /* AMPTRACE_MOUNTS_H */
