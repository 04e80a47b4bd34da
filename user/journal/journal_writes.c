// SPDX-License-Identifier: GPL-2.0
/*
 * jf_entry_writes(): the stores journald made to append one entry,
 * located in the file as it is now (journal-format.md §4, "What one
 * journal_file_append_entry() with N fields writes").  Modelled on, and
 * checked against byte diffs of single appends by, journald 252 and 257;
 * what 254+ stores beyond 252 is told by the file's header (header_size,
 * compatible_flags), not by guessing a version.
 *
 * Everything is recovered from links that are written once and never
 * moved, so the answer holds however much was appended since:
 *  - a DATA object is a new value for entry E iff its entry_offset is E
 *    (the first entry to use it is stored inline); it was appended with E
 *    iff it lies between E's predecessor and E;
 *  - a FIELD object is new with E iff it lies between them too;
 *  - E's slot in an entry-array chain is found by bisection; slot 0 of an
 *    array means E's append allocated that array and linked it;
 *  - the hash-chain link written for a new object is the next_hash_offset
 *    of the object before it in its bucket.
 */
#include <errno.h>
#include <string.h>
#include "journal/journal_file.h"

static const char *const write_names[JF_W__MAX] = {
	[JF_W_HEADER] = "header counters",
	[JF_W_ENTRY] = "new ENTRY",
	[JF_W_DATA_NEW] = "new DATA",
	[JF_W_DATA_FIRST_USE] = "DATA first use",
	[JF_W_DATA_COUNT] = "DATA n_entries",
	[JF_W_DATA_BUCKET] = "data hash bucket",
	[JF_W_DATA_CHAIN] = "data hash chain link",
	[JF_W_FIELD_NEW] = "new FIELD",
	[JF_W_FIELD_HEAD] = "FIELD head_data_offset",
	[JF_W_FIELD_BUCKET] = "field hash bucket",
	[JF_W_FIELD_CHAIN] = "field hash chain link",
	[JF_W_ARRAY_NEW] = "new ENTRY_ARRAY",
	[JF_W_ARRAY_SLOT] = "entry-array slot",
	[JF_W_ARRAY_LINK] = "entry-array link",
	[JF_W_TAG] = "TAG",
	[JF_W_HEADER_BOOT_ID] = "header tail_entry_boot_id",
};

const char *jf_write_name(enum jf_write_what w)
{
	return w < JF_W__MAX && write_names[w] ? write_names[w] : "?";
}

struct emitter {
	struct jf *f;
	jf_write_cb cb;
	void *ctx;
	struct jf_write w;	/* owner, item, new_value preset by the caller */
};

static int emit(struct emitter *em, enum jf_write_what what, uint64_t object,
		uint64_t off, uint64_t len)
{
	em->w.what = what;
	em->w.object = object;
	em->w.offset = off;
	em->w.len = len;
	return em->cb(em->f, &em->w, em->ctx);
}

/* The bucket and chain link that made a new DATA or FIELD object findable. */
static int emit_hash_link(struct emitter *em, int table, uint64_t hash, uint64_t obj)
{
	bool data = table == JF_DATA_HASH_TABLE;
	uint64_t n = data ? em->f->data_buckets : em->f->field_buckets;
	uint64_t items = data ? em->f->h.data_hash_table_offset : em->f->h.field_hash_table_offset;
	uint64_t head, tail, prev, b = n ? hash % n : 0;
	int r;

	r = jf_bucket(em->f, table, b, &head, &tail);
	if (r)
		return r;
	/* Head and tail when it started the chain, else just the tail. */
	r = emit(em, data ? JF_W_DATA_BUCKET : JF_W_FIELD_BUCKET, items - 16,
		 items + 16 * b + (head == obj ? 0 : 8), head == obj ? 16 : 8);
	if (r)
		return r;
	r = jf_hash_prev(em->f, table, hash, obj, &prev);
	if (r < 0)
		return r;
	if (r == 0 && prev)
		return emit(em, data ? JF_W_DATA_CHAIN : JF_W_FIELD_CHAIN, prev, prev + 24, 8);
	return 0;
}

/* E's slot in a chain: a new array (header + item 0, and the link to it)
 * or one item.  LINK_FIRST is where the chain's head pointer lives. */
static int emit_slot(struct emitter *em, uint64_t head, uint64_t e, uint64_t link_first,
		     uint64_t link_object)
{
	unsigned isz = em->f->array_item_size;
	struct jf_slot s;
	int r = jf_chain_find(em->f, head, e, &s);

	if (r)
		return r < 0 ? r : 0;	/* not in the chain: nothing to show */
	if (s.index) {
		em->w.array_capacity = 0;
		return emit(em, JF_W_ARRAY_SLOT, s.array, s.array + 24 + s.index * isz, isz);
	}
	em->w.array_capacity = s.capacity;
	r = emit(em, JF_W_ARRAY_NEW, s.array, s.array, 24 + isz);
	em->w.array_capacity = 0;
	if (r)
		return r;
	if (s.prev_array)
		return emit(em, JF_W_ARRAY_LINK, s.prev_array, s.prev_array + 16, 8);
	return emit(em, JF_W_ARRAY_LINK, link_object, link_first, 8);
}

static int item_writes(struct emitter *em, const struct jf_object *eo, uint64_t prev,
		       uint64_t i)
{
	struct jf *f = em->f;
	uint64_t d = jf_entry_item(f, eo, i), e = eo->offset, fo;
	bool appended;
	struct jf_object dob, fob;
	const uint8_t *name;
	size_t nlen;
	int r;

	r = jf_follow(f, e, "an item of ENTRY", d, JF_DATA, &dob);
	if (r)
		return r;
	em->w.owner = JF_OWN_FIELD;
	em->w.item = i;
	em->w.new_value = dob.data.entry_offset == e;
	if (!em->w.new_value) {
		/* Reused value: its counter (and compact tail cache), one slot. */
		r = emit(em, JF_W_DATA_COUNT, d, d + 56, f->compact ? 16 : 8);
		if (r)
			return r;
		return emit_slot(em, dob.data.entry_array_offset, e, d + 48, d);
	}
	appended = d > prev && d < e;
	if (!appended)	/* older object, first used now */
		return emit(em, JF_W_DATA_FIRST_USE, d, d + 40, 24);
	r = emit(em, JF_W_DATA_NEW, d, d, dob.size);
	if (r)
		return r;
	r = emit_hash_link(em, JF_DATA_HASH_TABLE, dob.data.hash, d);
	if (r)
		return r;
	/* Linked into its field's list of values, at the head. */
	r = jf_data_field(f, &dob, &name, &nlen);
	if (r)
		return r;
	r = jf_find_field(f, name, nlen, &fo);
	if (r || !fo)
		return r;
	r = jf_object(f, fo, JF_FIELD, &fob);
	if (r)
		return r;
	if (fo > prev && fo < e) {
		r = emit(em, JF_W_FIELD_NEW, fo, fo, fob.size);
		if (!r)
			r = emit_hash_link(em, JF_FIELD_HASH_TABLE, fob.field.hash, fo);
		if (r)
			return r;
	}
	return emit(em, JF_W_FIELD_HEAD, fo, fo + 32, 8);
}

/* TAG objects appended just before the entry (sealed files only). */
static int tag_writes(struct emitter *em, uint64_t prev, uint64_t e)
{
	struct jf_object o;
	uint64_t off = prev;
	int r;

	if (!prev || !(em->f->h.compatible_flags & JF_SEALED))
		return 0;
	em->w.owner = JF_OWN_TAG;
	r = jf_object(em->f, off, 0, &o);
	while (!r && (off += (o.size + 7) & ~7ull) < e) {
		r = jf_object(em->f, off, 0, &o);
		if (!r && o.type == JF_TAG)
			r = emit(em, JF_W_TAG, off, off, o.size);
	}
	return r;
}

int jf_entry_writes(struct jf *f, uint64_t e, uint64_t prev, jf_write_cb cb, void *ctx)
{
	struct emitter em = { .f = f, .cb = cb, .ctx = ctx };
	struct jf_object eo;
	int r;

	r = jf_object(f, e, JF_ENTRY, &eo);
	if (r)
		return r;
	if (prev >= e)
		prev = 0;
	/* tail_object_offset, n_objects, n_entries, tail_entry_*, n_data...,
	 * and from 254 on tail_entry_offset (the end of its larger header)
	 * and the tail entry's boot ID. */
	em.w.owner = JF_OWN_HEADER;
	r = emit(&em, JF_W_HEADER, 0, 136, f->h.header_size - 136);
	if (!r && (f->h.compatible_flags & JF_TAIL_ENTRY_BOOT_ID))
		r = emit(&em, JF_W_HEADER_BOOT_ID, 0, 56, 16);
	if (!r)
		r = tag_writes(&em, prev, e);
	if (r)
		return r;
	em.w.owner = JF_OWN_ENTRY;
	r = emit(&em, JF_W_ENTRY, e, e, eo.size);
	if (r)
		return r;
	for (uint64_t i = 0; i < eo.entry.n_items; i++) {
		r = item_writes(&em, &eo, prev, i);
		if (r)
			return r;
	}
	em.w.owner = JF_OWN_GLOBAL_ARRAY;
	em.w.item = 0;
	em.w.new_value = false;
	return emit_slot(&em, f->h.entry_array_offset, e, 176, 0);
}
