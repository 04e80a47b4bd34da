// SPDX-License-Identifier: GPL-2.0
/*
 * jf_check(): read a whole journal file the way a careful reader must —
 * every object in file order, every DATA and FIELD hash recomputed and
 * found again through its hash-table bucket, every entry reached through
 * the global entry array, with its items resolved and its xor_hash
 * recomputed.  Stops at the first inconsistency, naming its offset.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "journal/journal_file.h"

/* "<what> is GOT, expected WANT at offset N (0xN)", like jf_object()'s. */
static int bad(struct jf *f, uint64_t off, const char *what, uint64_t got, uint64_t want)
{
	snprintf(f->err, sizeof(f->err), "%s is %llu, expected %llu at offset %llu (0x%llx)",
		 what, (unsigned long long)got, (unsigned long long)want,
		 (unsigned long long)off, (unsigned long long)off);
	return -EBADMSG;
}

static int check_hashed(struct jf *f, const struct jf_object *o, struct jf_check_stats *st)
{
	int table = o->type == JF_DATA ? JF_DATA_HASH_TABLE : JF_FIELD_HASH_TABLE;
	uint64_t hash = o->type == JF_DATA ? o->data.hash : o->field.hash, prev;
	const uint8_t *p;
	uint64_t len;
	uint8_t *buf = NULL;
	int r;

	if (o->type == JF_DATA) {
		const uint8_t *name;
		size_t nlen;

		r = jf_data_payload(f, o, &p, &len, &buf);
		if (r == -EOPNOTSUPP) {
			st->hashes_skipped++;
			p = NULL;
		} else if (r) {
			return r;
		} else if (!memchr(p, '=', len)) {
			free(buf);
			snprintf(f->err, sizeof(f->err), "DATA payload has no '=' at offset "
				 "%llu (0x%llx)", (unsigned long long)o->offset,
				 (unsigned long long)o->offset);
			return -EBADMSG;
		}
		if (o->flags)
			st->compressed++;
		/* Also proves the field name resolves (compressed: via chains). */
		if (!r) {
			r = jf_data_field(f, o, &name, &nlen);
			if (r) {
				free(buf);
				return r;
			}
		}
	} else {
		p = f->map + o->field.name_offset;
		len = o->field.name_size;
	}
	if (p) {
		uint64_t h = jf_hash(f, p, len);

		free(buf);
		if (h != hash)
			return bad(f, o->offset, o->type == JF_DATA ? "stored DATA hash" :
				   "stored FIELD hash", hash, h);
		st->hashes_checked++;
	}
	/* Reachable from its bucket, as a lookup would need. */
	r = jf_hash_prev(f, table, hash, o->offset, &prev);
	if (r < 0)
		return r;
	if (r) {
		snprintf(f->err, sizeof(f->err), "%s object not in its hash bucket's chain at "
			 "offset %llu (0x%llx)", jf_type_name(o->type),
			 (unsigned long long)o->offset, (unsigned long long)o->offset);
		return -EBADMSG;
	}
	return 0;
}

static int object_cb(struct jf *f, const struct jf_object *o, void *ctx)
{
	struct jf_check_stats *st = ctx;

	st->objects++;
	st->by_type[o->type & 7]++;
	if (o->type == JF_DATA || o->type == JF_FIELD)
		return check_hashed(f, o, st);
	return 0;
}

struct entry_ctx {
	struct jf_check_stats *st;
	uint64_t last_seqnum;
};

static int entry_cb(struct jf *f, const struct jf_object *e, void *ctx)
{
	struct entry_ctx *c = ctx;
	uint64_t xor = 0;
	bool xor_known = true;
	struct jf_object d;
	int r;

	if (c->st->entries && e->entry.seqnum <= c->last_seqnum)
		return bad(f, e->offset, "ENTRY seqnum (not increasing)", e->entry.seqnum,
			   c->last_seqnum + 1);
	c->last_seqnum = e->entry.seqnum;
	c->st->entries++;
	for (uint64_t i = 0; i < e->entry.n_items; i++) {
		uint64_t off = jf_entry_item(f, e, i);
		const uint8_t *p;
		uint64_t len;
		uint8_t *buf;

		r = jf_follow(f, e->offset, "an item of ENTRY", off, JF_DATA, &d);
		if (r)
			return r;
		if (!f->compact && jf_entry_item_hash(f, e, i) != d.data.hash)
			return bad(f, e->offset, "ENTRY item hash", jf_entry_item_hash(f, e, i),
				   d.data.hash);
		c->st->items++;
		r = jf_data_payload(f, &d, &p, &len, &buf);
		if (r == -EOPNOTSUPP) {
			xor_known = false;
			continue;
		}
		if (r)
			return r;
		xor ^= jf_jenkins64(p, len);	/* Jenkins even in keyed files */
		free(buf);
	}
	if (xor_known && xor != e->entry.xor_hash)
		return bad(f, e->offset, "ENTRY xor_hash", e->entry.xor_hash, xor);
	return 0;
}

int jf_check(struct jf *f, struct jf_check_stats *st)
{
	struct entry_ctx ec = { .st = st };
	bool drop = f->drop_behind;
	int r;

	memset(st, 0, sizeof(*st));
	/* Every object's bucket is looked up: keep the hash tables mapped
	 * rather than releasing pages behind the walk. */
	f->drop_behind = false;
	r = jf_walk(f, object_cb, st);
	f->drop_behind = drop;
	if (r)
		return r;
	if (st->objects != f->h.n_objects)
		return bad(f, 144, "header n_objects (vs. objects walked)", f->h.n_objects,
			   st->objects);
	r = jf_entries(f, entry_cb, &ec);
	if (r)
		return r;
	if (st->entries != f->h.n_entries)
		return bad(f, 152, "header n_entries (vs. entries in the entry array)",
			   f->h.n_entries, st->entries);
	if (st->by_type[JF_ENTRY] != f->h.n_entries)
		return bad(f, 152, "header n_entries (vs. ENTRY objects)",
			   f->h.n_entries, st->by_type[JF_ENTRY]);
	return 0;
}
