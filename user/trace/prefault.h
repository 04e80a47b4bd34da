/* SPDX-License-Identifier: GPL-2.0 */
/* Touch the large maps' pages once, from the kernel, before attaching. */
#ifndef AMPTRACE_PREFAULT_H
#define AMPTRACE_PREFAULT_H

#include <linux/types.h>

/*
 * Read one element per page of the array map fd (a lookup from user space
 * copies it through the kernel's own mapping of the map), so that the
 * programs do not pay each page's first touch while tracing.  Returns the
 * number of lookups, or -errno (not an array map, or a lookup failed).
 */
int prefault_array_map(int fd);

struct ring_buffer;
/*
 * Run prefault_events (prog_fd) until the ring of ring_size bytes is
 * full, then consume its discarded records from rb.  Before attaching:
 * nothing else writes the ring then.  Returns the records reserved, or
 * -errno.
 */
int prefault_ring(int prog_fd, struct ring_buffer *rb, __u32 ring_size);

#endif /* AMPTRACE_PREFAULT_H */
