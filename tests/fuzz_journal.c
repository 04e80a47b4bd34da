// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the journal reader (user/journal/journal_*.c): every entry
 * point explain uses, on arbitrary bytes.  Built with
 * -fsanitize=fuzzer,address,undefined, so any out-of-bounds read, leak or
 * undefined behaviour is a crash.  Two properties are also asserted:
 *  - every format error names an offset (the promise made to users);
 *  - every write jf_entry_writes() reports lies inside the file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "journal_file.h"

#define MAX_ENTRIES 32		/* entries whose writes are modelled per input */

struct seen {
	uint64_t entry[MAX_ENTRIES], prev[MAX_ENTRIES];
	int n;
	uint64_t last_entry;
	uint64_t sum;		/* keeps the reads from being optimised away */
};

static void require(int cond)
{
	if (!cond)
		__builtin_trap();
}

/* A failed call must explain itself with an offset. */
static void check_err(const struct jf *f, int r)
{
	if (r == -EBADMSG)
		require(strstr(f->err, "offset") != NULL);
}

static int object_cb(struct jf *f, const struct jf_object *o, void *ctx)
{
	struct seen *s = ctx;
	const uint8_t *name, *p;
	uint8_t *buf;
	uint64_t len;
	size_t n;

	s->sum += o->size;
	if (o->type == JF_ENTRY) {
		if (s->n < MAX_ENTRIES) {
			s->entry[s->n] = o->offset;
			s->prev[s->n++] = s->last_entry;
		}
		s->last_entry = o->offset;
	} else if (o->type == JF_DATA) {
		if (!jf_data_field(f, o, &name, &n))
			s->sum += n + name[0] * !!n;
		if (!jf_data_payload(f, o, &p, &len, &buf))
			s->sum += jf_hash(f, p, len);
		free(buf);
	}
	return 0;
}

static int entry_cb(struct jf *f, const struct jf_object *e, void *ctx)
{
	struct seen *s = ctx;
	struct jf_object d;

	for (uint64_t i = 0; i < e->entry.n_items && i < 64; i++)
		if (!jf_object(f, jf_entry_item(f, e, i), JF_DATA, &d))
			s->sum += d.data.hash;
	return 0;
}

static int range_cb(struct jf *f, const struct jf_object *o, void *ctx)
{
	(void)f;
	((struct seen *)ctx)->sum += o->offset;
	return 0;
}

static int write_cb(struct jf *f, const struct jf_write *w, void *ctx)
{
	(void)ctx;
	require(w->offset + w->len <= f->size && w->offset + w->len >= w->offset);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jf f;
	struct jf_check_stats st;
	struct seen s = { 0 };
	int r;

	r = jf_open_mem(&f, data, size);
	check_err(&f, r);
	if (r) {
		jf_close(&f);
		return 0;
	}
	f.max_value = 1 << 20;	/* decompression bombs stay small */
	r = jf_build_index(&f, object_cb, &s);
	check_err(&f, r);
	check_err(&f, jf_entries(&f, entry_cb, &s));
	check_err(&f, jf_check(&f, &st));
	/* Ranges: the header, the first page of objects, the tail, all. */
	check_err(&f, jf_objects_in(&f, 0, 4096, range_cb, &s));
	check_err(&f, jf_objects_in(&f, f.h.header_size, f.h.header_size + 4096, range_cb, &s));
	check_err(&f, jf_objects_in(&f, f.h.tail_object_offset, f.h.tail_object_offset + 1,
				    range_cb, &s));
	check_err(&f, jf_objects_in(&f, 0, size, range_cb, &s));
	for (int i = 0; i < s.n; i++) {
		uint64_t field;

		check_err(&f, jf_entry_writes(&f, s.entry[i], s.prev[i], write_cb, NULL));
		check_err(&f, jf_find_field(&f, "MESSAGE", 7, &field));
	}
	jf_close(&f);
	return s.sum == 42;	/* libFuzzer ignores the value; the read is kept */
}
