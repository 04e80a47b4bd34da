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
/* The superblock device of pid's fd, the block device under a superblock
 * (btrfs's anonymous one: its mount's source), and the disk under it
 * (kernel dev_t; 0 if unknown). */
__u32 fd_superblock_dev(int pid, int fd, dev_t st_dev);
__u32 fs_source_dev(__u32 sb_dev);
/* Is a filesystem of this type (e.g. "btrfs") mounted from one of these
 * devices (--dev's stack), or from any device if devs is NULL? */
bool fstype_on_devs(const char *fstype, const __u32 *devs, int nr_devs);

#endif /* AMPTRACE_MOUNTS_H */
