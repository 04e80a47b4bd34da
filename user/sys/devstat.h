/* SPDX-License-Identifier: GPL-2.0 */
/* Disks and their own counters (/sys/block), and the kernel's dev_t. */
#ifndef AMPTRACE_DEVSTAT_H
#define AMPTRACE_DEVSTAT_H

#include <linux/types.h>
#include <sys/sysmacros.h>
#include <sys/types.h>

struct disk_counter {
	__u64 sectors_written;
	__u64 write_ios;
};

/* /sys/block/NAME/dev: 0, or -1 if there is no such disk. */
int disk_lookup(const char *name, unsigned *major, unsigned *minor);
/* Fields 5 and 7 of /sys/block/NAME/stat: 0, or -1. */
int disk_read_counter(const char *name, struct disk_counter *c);
/* /sys/block/NAME/diskseq (a whole disk's, 5.15+), 0 if none. */
__u64 disk_read_seq(const char *name);

/* The kernel's dev_t (major << 20 | minor), as the BPF side keys devices. */
static inline unsigned kdev_major(__u32 kdev) { return kdev >> 20; }
static inline unsigned kdev_minor(__u32 kdev) { return kdev & 0xfffff; }
static inline __u32 kdev_from_user(dev_t d)
{
	return (major(d) << 20) | minor(d);
}

#endif /* AMPTRACE_DEVSTAT_H */
