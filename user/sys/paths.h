/* SPDX-License-Identifier: GPL-2.0 */
/* File paths: (dev, ino) -> a path, for the entries' files. */
#ifndef AMPTRACE_PATHS_H
#define AMPTRACE_PATHS_H

#include <linux/types.h>

/* A (dev, ino) -> path resolver: path_of() live, a record's table offline. */
typedef const char *(*amp_path_fn)(void *ctx, __u32 kdev, __u64 ino, __u32 pid);

/* Looked up in /proc/PID of a writer, else the path the kernel side
 * recorded; cached for the run.  Never NULL ("?" at worst). */
const char *path_of(__u32 kdev, __u64 ino, __u32 pid);
/* path_of() as an amp_path_fn (ctx unused). */
const char *path_of_fn(void *ctx, __u32 kdev, __u64 ino, __u32 pid);
/* The kernel side's files and file_paths maps: the last resort. */
void paths_use_maps(int files_fd, int paths_fd);
/* The kernel side's bdevfs_dev (bpf/maps.bpf.h): where block devices'
 * own inodes are. */
void paths_use_bdevfs(const volatile __u32 *dev);

#endif /* AMPTRACE_PATHS_H */
