// SPDX-License-Identifier: GPL-2.0
/* Journal objects for people: see journal_show.h. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "journal/journal_export.h"
#include "journal/journal_show.h"

#define ADD(o, k, v) json_object_object_add(o, k, v)
#define U64(v) json_object_new_uint64(v)

/* Field names are [A-Z0-9_] in valid files; show anything else as '?'. */
const char *jf_clean_name(const uint8_t *p, size_t n, char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < n && i + 1 < len; i++)
		buf[i] = p[i] > 0x20 && p[i] < 0x7f ? p[i] : '?';
	buf[i] = 0;
	return buf;
}

static const char *array_owner(struct jf *f, const struct jf_object *a, char *buf, size_t len)
{
	uint64_t first = jf_array_item(f, a, 0);
	struct jf_object e, d;
	struct jf_slot s;
	const uint8_t *name;
	size_t n;

	if (!first)
		return "(empty entry array)";
	if (jf_chain_find(f, f->h.entry_array_offset, first, &s) == 0 && s.array == a->offset)
		return "(global entry array)";
	/* Its first entry holds the DATA whose chain it belongs to. */
	if (jf_object(f, first, JF_ENTRY, &e))
		return "(entry array)";
	for (uint64_t i = 0; i < e.entry.n_items; i++) {
		if (jf_object(f, jf_entry_item(f, &e, i), JF_DATA, &d) ||
		    !d.data.entry_array_offset)
			continue;
		if (jf_chain_find(f, d.data.entry_array_offset, first, &s) == 0 &&
		    s.array == a->offset && !jf_data_field(f, &d, &name, &n))
			return jf_clean_name(name, n, buf, len);
	}
	return "(entry array)";
}

const char *jf_object_owner(struct jf *f, const struct jf_object *o, char *buf, size_t len)
{
	const uint8_t *name;
	size_t n;

	switch (o->type) {
	case JF_HEADER: return "(header)";
	case JF_DATA:
		if (jf_data_field(f, o, &name, &n))
			return "(unreadable)";
		return jf_clean_name(name, n, buf, len);
	case JF_FIELD:
		jf_field_name(f, o, &name, &n);
		return jf_clean_name(name, n, buf, len);
	case JF_ENTRY: return "(entry)";
	case JF_DATA_HASH_TABLE: return "(data hash table)";
	case JF_FIELD_HASH_TABLE: return "(field hash table)";
	case JF_ENTRY_ARRAY: return array_owner(f, o, buf, len);
	case JF_TAG: return "(tag)";
	}
	return "(unknown)";
}

static void print_escaped(FILE *out, const uint8_t *p, uint64_t len, uint64_t max)
{
	for (uint64_t i = 0; i < len && i < max; i++) {
		if (p[i] == '\n')
			fputs("\\n", out);
		else if (p[i] == '\\')
			fputs("\\\\", out);
		else if (p[i] >= 0x20 && p[i] < 0x7f)
			fputc(p[i], out);
		else
			fprintf(out, "\\x%02x", p[i]);
	}
	if (len > max)
		fputs("...", out);
}

const char *jf_compression(uint8_t flags)
{
	return flags == JF_OBJ_ZSTD ? "zstd" : flags == JF_OBJ_XZ ? "xz" :
	       flags == JF_OBJ_LZ4 ? "lz4" : NULL;
}


/* The payload of DATA object O, for --show-values: decompressed if need be.
 * Returns NULL (and says why in *why) when it cannot be had. */
static const uint8_t *value_of(struct jf *f, const struct jf_object *o, uint64_t *len,
			       uint8_t **buf)
{
	const uint8_t *p;

	if (jf_data_payload(f, o, &p, len, buf))
		return NULL;
	return p;
}

static void object_detail(FILE *out, struct jf *f, const struct jf_object *o, bool show_values)
{
	switch (o->type) {
	case JF_DATA: {
		const uint8_t *p, *eq;
		uint64_t len;
		uint8_t *buf;

		fprintf(out, "payload %llu B%s%s, %llu entries",
			(unsigned long long)o->data.payload_size, o->flags ? " " : "",
			o->flags ? jf_compression(o->flags) : "", (unsigned long long)o->data.n_entries);
		if (!show_values)
			break;
		p = value_of(f, o, &len, &buf);
		eq = p ? memchr(p, '=', len) : NULL;
		if (eq) {
			fputs(" = \"", out);
			print_escaped(out, eq + 1, len - (eq - p) - 1, 120);
			fputc('"', out);
		} else {
			fputs(" (value unreadable)", out);
		}
		free(buf);
		break;
	}
	case JF_ENTRY:
		fprintf(out, "seqnum %llu, %llu items", (unsigned long long)o->entry.seqnum,
			(unsigned long long)o->entry.n_items);
		break;
	case JF_ENTRY_ARRAY:
		fprintf(out, "capacity %llu", (unsigned long long)o->entry_array.capacity);
		break;
	case JF_DATA_HASH_TABLE:
	case JF_FIELD_HASH_TABLE:
		fprintf(out, "%llu buckets", (unsigned long long)o->hash_table.n_buckets);
		break;
	case JF_TAG:
		fprintf(out, "seqnum %llu, epoch %llu", (unsigned long long)o->tag.seqnum,
			(unsigned long long)o->tag.epoch);
		break;
	}
}

void jf_print_object(FILE *out, struct jf *f, const struct jf_object *o, bool show_values,
		     const char *indent, const char *mark)
{
	char buf[128];

	fprintf(out, "%s0x%-9llx %-16s %8llu  %-26s ", indent,
		(unsigned long long)o->offset, jf_type_name(o->type),
		(unsigned long long)o->size, jf_object_owner(f, o, buf, sizeof(buf)));
	object_detail(out, f, o, show_values);
	fprintf(out, "%s\n", mark ? mark : "");
}

json_object *jf_value_json(const uint8_t *p, uint64_t len)
{
	json_object *a;

	if (jf_export_printable(p, len))
		return json_object_new_string_len((const char *)p, len);
	a = json_object_new_array();	/* binary: bytes, as journalctl -o json */
	for (uint64_t i = 0; i < len; i++)
		json_object_array_add(a, json_object_new_int(p[i]));
	return a;
}

json_object *jf_object_json(struct jf *f, const struct jf_object *o, bool show_values)
{
	json_object *j = json_object_new_object();
	char buf[128];

	ADD(j, "offset", U64(o->offset));
	ADD(j, "type", json_object_new_string(jf_type_name(o->type)));
	ADD(j, "size", U64(o->size));
	ADD(j, "owner", json_object_new_string(jf_object_owner(f, o, buf, sizeof(buf))));
	switch (o->type) {
	case JF_DATA:
		ADD(j, "payload_size", U64(o->data.payload_size));
		ADD(j, "n_entries", U64(o->data.n_entries));
		if (o->flags)
			ADD(j, "compressed", json_object_new_string(jf_compression(o->flags)));
		if (show_values) {
			const uint8_t *p, *eq;
			uint64_t len;
			uint8_t *vb;

			p = value_of(f, o, &len, &vb);
			eq = p ? memchr(p, '=', len) : NULL;
			if (eq)
				ADD(j, "value", jf_value_json(eq + 1, len - (eq - p) - 1));
			free(vb);
		}
		break;
	case JF_ENTRY:
		ADD(j, "seqnum", U64(o->entry.seqnum));
		ADD(j, "realtime", U64(o->entry.realtime));
		ADD(j, "items", U64(o->entry.n_items));
		break;
	case JF_ENTRY_ARRAY:
		ADD(j, "capacity", U64(o->entry_array.capacity));
		ADD(j, "next", U64(o->entry_array.next_entry_array_offset));
		break;
	case JF_DATA_HASH_TABLE:
	case JF_FIELD_HASH_TABLE:
		ADD(j, "buckets", U64(o->hash_table.n_buckets));
		break;
	}
	return j;
}
