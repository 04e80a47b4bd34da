/* SPDX-License-Identifier: GPL-2.0 */
/* Touch a large array map's pages once, from the kernel, before attaching. */
#ifndef AMPTRACE_PREFAULT_H
#define AMPTRACE_PREFAULT_H

/*
 * Read one element per page of the array map fd (a lookup from user space
 * copies it through the kernel's own mapping of the map), so that the
 * programs do not pay each page's first touch while tracing.  Returns the
 * number of lookups, or -errno (not an array map, or a lookup failed).
 */
int prefault_array_map(int fd);

#endif /* AMPTRACE_PREFAULT_H */
