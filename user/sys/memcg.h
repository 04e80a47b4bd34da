/* SPDX-License-Identifier: GPL-2.0 */
/* This process's memory cgroup limit (cgroup v2 memory.max, v1
 * memory.limit_in_bytes): the kernel charges amptrace's maps, and the
 * verifier's work while it loads the programs, to it. */
#ifndef AMPTRACE_MEMCG_H
#define AMPTRACE_MEMCG_H

#include <linux/types.h>
#include <stddef.h>

/* The lowest limit on the way from this process's memory cgroup to the
 * root, in bytes, and (path) the cgroup that sets it; 0 if none is set or
 * none can be read. */
__u64 memcg_limit(char *path, size_t len);

#endif /* AMPTRACE_MEMCG_H */
