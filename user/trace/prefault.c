// SPDX-License-Identifier: GPL-2.0
/*
 * A large array map (the folio table: 8 MiB by default) is allocated by
 * vmalloc in 4 KiB pages that nothing has touched through that mapping.
 * The first touch of each one costs far more than a cache miss on a
 * shadow-paged guest (measured: scripts/bench/README.md, "The first touch
 * of a fresh map"), and the programs would otherwise pay it inside the
 * traced writes.  A lookup from user space reads the element through the
 * same kernel mapping: one per page before attaching takes it off the
 * traced path.  Here that takes ~7 us a page: 30 ms at start for the
 * default sizes.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "amptrace.h"
#include "prefault.h"

int prefault_array_map(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), elem, step;
	long page = sysconf(_SC_PAGESIZE);
	void *value;
	int n = 0;

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (info.type != BPF_MAP_TYPE_ARRAY || !info.value_size)
		return -EINVAL;
	/* The kernel keeps elements 8-byte aligned. */
	elem = (info.value_size + 7) & ~7u;
	step = elem >= page ? 1 : page / elem;
	value = malloc(info.value_size);
	if (!value)
		return -ENOMEM;
	for (__u32 key = 0; key < info.max_entries; key += step, n++) {
		if (bpf_map_lookup_elem(fd, &key, value)) {
			n = -errno;
			break;
		}
	}
	free(value);
	return n;
}

int prefault_ring(int prog_fd, struct ring_buffer *rb, __u32 ring_size)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	__u32 runs = ring_size / (AMP_PREFAULT_RECS * AMP_PREFAULT_REC_SIZE) + 2;
	int recs = 0, err;

	for (__u32 i = 0; i < runs; i++) {
		if (bpf_prog_test_run_opts(prog_fd, &opts))
			return -errno;
		recs += opts.retval;
		if (opts.retval < AMP_PREFAULT_RECS)
			break;
	}
	/* Discarded records: the callback sees none, the space comes back. */
	err = ring_buffer__consume(rb);
	return err < 0 ? err : recs;
}
