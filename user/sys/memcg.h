/* SPDX-License-Identifier: GPL-2.0 */
/* This process's memory cgroup limit (cgroup v2 memory.max, v1
 * memory.limit_in_bytes): the kernel charges amptrace's maps, and the
 * verifier's work while it loads the programs, to it. */
#ifndef AMPTRACE_MEMCG_H
#define AMPTRACE_MEMCG_H

#include <linux/types.h>
#include <stddef.h>

/* The cgroup on the way from this process's memory cgroup to the root
 * with the least room (its limit less what it uses), in path; its limit
 * and use in bytes.  0 if one was found, -1 if no limit is set or none
 * can be read. */
int memcg_room(__u64 *limit, __u64 *used, char *path, size_t len);

#endif /* AMPTRACE_MEMCG_H */
