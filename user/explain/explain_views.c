// SPDX-License-Identifier: GPL-2.0
/*
 * The journal reader's own views, without a trace: a file's header, its
 * objects, its entries (journalctl's export format), the objects on a
 * byte range, a full check, read statistics.
 *
 * No log payload is printed unless --show-values: field names, sizes and
 * offsets only.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "explain/explain_views.h"
#include "journal/journal_export.h"
#include "journal/journal_show.h"

#define ADD(o, k, v) json_object_object_add(o, k, v)
#define U64(v) json_object_new_uint64(v)

static void emit_json(FILE *out, json_object *j)
{
	fprintf(out, "%s\n", json_object_to_json_string_ext(j,
		JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(j);
}

/* -------------------------------------------------------------- views --- */

static void view_header(struct explain_opts *opt, struct xfile *x)
{
	static const char *const states[] = { "offline", "online", "archived" };
	const struct jf_header *h = &x->jf.h;
	char fid[33], mid[33], bid[33], sid[33];
	const char *state = h->state < 3 ? states[h->state] : "unknown";
	json_object *j;

	jf_hex128(h->file_id, fid);
	jf_hex128(h->machine_id, mid);
	jf_hex128(h->boot_id, bid);
	jf_hex128(h->seqnum_id, sid);
	if (!opt->json) {
		fprintf(opt->out,
			"%s: %llu bytes, header %llu B, %s%s%s%s%s, state %s\n"
			"  file_id %s  machine_id %s\n  boot_id %s  seqnum_id %s\n"
			"  arena %llu B, tail object @0x%llx, %llu objects\n"
			"  %llu entries (seqnum %llu..%llu), %llu data, %llu fields, "
			"%llu entry arrays, %llu tags\n"
			"  data hash table @0x%llx: %llu buckets; field hash table @0x%llx: "
			"%llu buckets; global entry array @0x%llx\n",
			x->path, (unsigned long long)x->jf.size,
			(unsigned long long)h->header_size, x->jf.compact ? "compact" : "regular",
			x->jf.keyed ? " keyed-hash" : " jenkins-hash",
			h->incompatible_flags & JF_COMPRESSED_ZSTD ? " zstd" : "",
			h->incompatible_flags & JF_COMPRESSED_XZ ? " xz" : "",
			h->incompatible_flags & JF_COMPRESSED_LZ4 ? " lz4" : "", state,
			fid, mid, bid, sid, (unsigned long long)h->arena_size,
			(unsigned long long)h->tail_object_offset, (unsigned long long)h->n_objects,
			(unsigned long long)h->n_entries, (unsigned long long)h->head_entry_seqnum,
			(unsigned long long)h->tail_entry_seqnum, (unsigned long long)h->n_data,
			(unsigned long long)h->n_fields, (unsigned long long)h->n_entry_arrays,
			(unsigned long long)h->n_tags,
			(unsigned long long)h->data_hash_table_offset,
			(unsigned long long)x->jf.data_buckets,
			(unsigned long long)h->field_hash_table_offset,
			(unsigned long long)x->jf.field_buckets,
			(unsigned long long)h->entry_array_offset);
		return;
	}
	j = json_object_new_object();
	ADD(j, "type", json_object_new_string("header"));
	ADD(j, "file", json_object_new_string(x->path));
	ADD(j, "size", U64(x->jf.size));
	ADD(j, "header_size", U64(h->header_size));
	ADD(j, "compatible_flags", U64(h->compatible_flags));
	ADD(j, "incompatible_flags", U64(h->incompatible_flags));
	ADD(j, "compact", json_object_new_boolean(x->jf.compact));
	ADD(j, "keyed_hash", json_object_new_boolean(x->jf.keyed));
	ADD(j, "state", json_object_new_string(state));
	ADD(j, "file_id", json_object_new_string(fid));
	ADD(j, "seqnum_id", json_object_new_string(sid));
	ADD(j, "arena_size", U64(h->arena_size));
	ADD(j, "tail_object_offset", U64(h->tail_object_offset));
	ADD(j, "n_objects", U64(h->n_objects));
	ADD(j, "n_entries", U64(h->n_entries));
	ADD(j, "n_data", U64(h->n_data));
	ADD(j, "n_fields", U64(h->n_fields));
	ADD(j, "n_entry_arrays", U64(h->n_entry_arrays));
	ADD(j, "data_hash_table_offset", U64(h->data_hash_table_offset));
	ADD(j, "data_buckets", U64(x->jf.data_buckets));
	ADD(j, "field_hash_table_offset", U64(h->field_hash_table_offset));
	ADD(j, "field_buckets", U64(x->jf.field_buckets));
	ADD(j, "entry_array_offset", U64(h->entry_array_offset));
	emit_json(opt->out, j);
}

struct view_ctx {
	struct explain_opts *opt;
	struct xfile *x;
};

static int object_view_cb(struct jf *f, const struct jf_object *o, void *ctx)
{
	struct view_ctx *v = ctx;
	json_object *j;

	(void)f;
	if (!v->opt->json) {
		jf_print_object(v->opt->out, &v->x->jf, o, v->opt->show_values, "", NULL);
		return 0;
	}
	j = jf_object_json(&v->x->jf, o, v->opt->show_values);
	ADD(j, "file", json_object_new_string(v->x->base));
	emit_json(v->opt->out, j);
	return 0;
}

static void object_view_title(struct explain_opts *opt, struct xfile *x)
{
	if (!opt->json)
		fprintf(opt->out, "%s:\n%-11s %-16s %8s  %-26s %s\n", x->path, "OFFSET", "TYPE",
			"SIZE", "OWNER", "DETAIL");
}

static int view_objects(struct explain_opts *opt, struct xfile *x)
{
	struct view_ctx v = { opt, x };

	object_view_title(opt, x);
	return jf_walk(&x->jf, object_view_cb, &v);
}

static int view_range(struct explain_opts *opt, struct xfile *x)
{
	struct view_ctx v = { opt, x };

	object_view_title(opt, x);
	return jf_objects_in(&x->jf, opt->range_a, opt->range_b, object_view_cb, &v);
}

/* One entry: journalctl's export record with --show-values, else the same
 * shape with "NAME: N bytes" in place of each field line. */
static int entry_text(struct explain_opts *opt, struct xfile *x, const struct jf_object *e)
{
	char head[512], bid[33];
	struct jf_object d;
	int r;

	jf_export_header(&x->jf, e, head, sizeof(head));
	jf_hex128(e->entry.boot_id, bid);
	fprintf(opt->out, "%s_BOOT_ID=%s\n", head, bid);
	for (uint64_t i = 0; i < e->entry.n_items; i++) {
		const uint8_t *p, *name;
		uint64_t len;
		size_t nlen;
		uint8_t *buf = NULL;
		char nb[128];

		r = jf_follow(&x->jf, e->offset, "an item of ENTRY", jf_entry_item(&x->jf, e, i),
			      JF_DATA, &d);
		if (!r)
			r = jf_data_field(&x->jf, &d, &name, &nlen);
		if (r)
			return r;
		if (nlen == 8 && !memcmp(name, "_BOOT_ID", 8))
			continue;	/* printed from the ENTRY header, as journalctl does */
		if (!opt->show_values) {
			fprintf(opt->out, "%s: %llu bytes\n", jf_clean_name(name, nlen, nb, sizeof(nb)),
				(unsigned long long)(d.data.payload_size - nlen - 1));
			continue;
		}
		r = jf_data_payload(&x->jf, &d, &p, &len, &buf);
		if (r)
			return r;
		jf_export_field(opt->out, p, len);
		free(buf);
	}
	fputc('\n', opt->out);
	return 0;
}

static int entry_json(struct explain_opts *opt, struct xfile *x, const struct jf_object *e)
{
	json_object *j = json_object_new_object(), *fields = json_object_new_array();
	char bid[33], nb[128];
	struct jf_object d;
	int r = 0;

	jf_hex128(e->entry.boot_id, bid);
	ADD(j, "type", json_object_new_string("entry"));
	ADD(j, "file", json_object_new_string(x->base));
	ADD(j, "offset", U64(e->offset));
	ADD(j, "size", U64(e->size));
	ADD(j, "seqnum", U64(e->entry.seqnum));
	ADD(j, "realtime", U64(e->entry.realtime));
	ADD(j, "monotonic", U64(e->entry.monotonic));
	ADD(j, "boot_id", json_object_new_string(bid));
	for (uint64_t i = 0; i < e->entry.n_items && !r; i++) {
		json_object *fj;
		const uint8_t *p, *name;
		uint64_t len;
		size_t nlen;
		uint8_t *buf = NULL;

		r = jf_follow(&x->jf, e->offset, "an item of ENTRY", jf_entry_item(&x->jf, e, i),
			      JF_DATA, &d);
		if (!r)
			r = jf_data_field(&x->jf, &d, &name, &nlen);
		if (r)
			break;
		fj = json_object_new_object();
		ADD(fj, "name", json_object_new_string(jf_clean_name(name, nlen, nb, sizeof(nb))));
		ADD(fj, "data", U64(d.offset));
		ADD(fj, "data_size", U64(d.size));
		ADD(fj, "new", json_object_new_boolean(d.data.entry_offset == e->offset));
		if (d.flags)
			ADD(fj, "compressed", json_object_new_string(jf_compression(d.flags)));
		if (opt->show_values) {
			r = jf_data_payload(&x->jf, &d, &p, &len, &buf);
			if (!r)
				ADD(fj, "value", jf_value_json(p + nlen + 1, len - nlen - 1));
			free(buf);
		}
		json_object_array_add(fields, fj);
	}
	ADD(j, "fields", fields);
	if (r) {
		json_object_put(j);
		return r;
	}
	emit_json(opt->out, j);
	return 0;
}

static int entry_view_cb(struct jf *f, const struct jf_object *e, void *ctx)
{
	struct view_ctx *v = ctx;

	(void)f;
	return v->opt->json ? entry_json(v->opt, v->x, e) : entry_text(v->opt, v->x, e);
}

static int view_check(struct explain_opts *opt, struct xfile *x)
{
	struct jf_check_stats st;
	json_object *j;
	int r = jf_check(&x->jf, &st);

	if (r)
		return r;
	if (!opt->json) {
		fprintf(opt->out, "%s: ok: %llu objects (DATA %llu, FIELD %llu, ENTRY %llu, "
			"ENTRY_ARRAY %llu, TAG %llu), %llu entries with %llu items, "
			"%llu hashes checked, %llu compressed, %llu not decodable\n",
			x->path, (unsigned long long)st.objects,
			(unsigned long long)st.by_type[JF_DATA], (unsigned long long)st.by_type[JF_FIELD],
			(unsigned long long)st.by_type[JF_ENTRY],
			(unsigned long long)st.by_type[JF_ENTRY_ARRAY],
			(unsigned long long)st.by_type[JF_TAG], (unsigned long long)st.entries,
			(unsigned long long)st.items, (unsigned long long)st.hashes_checked,
			(unsigned long long)st.compressed, (unsigned long long)st.hashes_skipped);
		return 0;
	}
	j = json_object_new_object();
	ADD(j, "type", json_object_new_string("check"));
	ADD(j, "file", json_object_new_string(x->path));
	ADD(j, "ok", json_object_new_boolean(1));
	ADD(j, "objects", U64(st.objects));
	ADD(j, "data", U64(st.by_type[JF_DATA]));
	ADD(j, "fields", U64(st.by_type[JF_FIELD]));
	ADD(j, "entries", U64(st.entries));
	ADD(j, "entry_arrays", U64(st.by_type[JF_ENTRY_ARRAY]));
	ADD(j, "items", U64(st.items));
	ADD(j, "hashes_checked", U64(st.hashes_checked));
	ADD(j, "compressed", U64(st.compressed));
	emit_json(opt->out, j);
	return 0;
}

/* --stats: what explain needs from a file (index walk, then every entry
 * through the entry array with each item's DATA object and field name),
 * timed, with the memory it took. */
struct stats_ctx {
	uint64_t objects, entries, items;
};

static int stats_object_cb(struct jf *f, const struct jf_object *o, void *ctx)
{
	(void)f;
	(void)o;
	((struct stats_ctx *)ctx)->objects++;
	return 0;
}

static int stats_entry_cb(struct jf *f, const struct jf_object *e, void *ctx)
{
	struct stats_ctx *s = ctx;
	struct jf_object d;
	const uint8_t *name;
	size_t n;
	int r;

	s->entries++;
	for (uint64_t i = 0; i < e->entry.n_items; i++) {
		r = jf_follow(f, e->offset, "an item of ENTRY", jf_entry_item(f, e, i), JF_DATA, &d);
		if (!r)
			r = jf_data_field(f, &d, &name, &n);
		if (r)
			return r;
		s->items++;
	}
	return 0;
}

static long status_kb(const char *key)
{
	char line[256];
	long v = -1;
	size_t n = strlen(key);
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':')
			v = strtol(line + n + 1, NULL, 10);
	fclose(f);
	return v;
}

static int view_stats(struct explain_opts *opt, struct xfile *x, double t_open)
{
	struct stats_ctx s = { 0 };
	double t0 = now_s(), t1, t2;
	json_object *j;
	int r;

	r = jf_build_index(&x->jf, stats_object_cb, &s);
	if (r)
		return r;
	t1 = now_s();
	r = jf_entries(&x->jf, stats_entry_cb, &s);
	if (r)
		return r;
	t2 = now_s();
	j = json_object_new_object();
	ADD(j, "type", json_object_new_string("stats"));
	ADD(j, "file", json_object_new_string(x->path));
	ADD(j, "bytes", U64(x->jf.size));
	ADD(j, "objects", U64(s.objects));
	ADD(j, "entries", U64(s.entries));
	ADD(j, "items", U64(s.items));
	ADD(j, "index_bytes", U64(x->jf.index_pages * sizeof(uint64_t)));
	ADD(j, "field_map_bytes", U64(x->jf.field_map_len * 16));
	ADD(j, "open_s", json_object_new_double(t_open));
	ADD(j, "walk_s", json_object_new_double(t1 - t0));
	ADD(j, "entries_s", json_object_new_double(t2 - t1));
	ADD(j, "total_s", json_object_new_double(t_open + t2 - t0));
	ADD(j, "vm_hwm_kb", json_object_new_int64(status_kb("VmHWM")));
	ADD(j, "rss_anon_kb", json_object_new_int64(status_kb("RssAnon")));
	ADD(j, "rss_file_kb", json_object_new_int64(status_kb("RssFile")));
	if (opt->json) {
		emit_json(opt->out, j);
		return 0;
	}
	fprintf(opt->out, "%s: %.1f MiB, %llu objects, %llu entries, %llu items: "
		"open %.3f s, walk+index %.3f s, entries %.3f s, total %.3f s (%.0f MiB/s); "
		"index %llu KiB; peak RSS %ld KiB (anonymous %ld KiB, file pages %ld KiB)\n",
		x->path, x->jf.size / 1048576.0, (unsigned long long)s.objects,
		(unsigned long long)s.entries, (unsigned long long)s.items, t_open, t1 - t0,
		t2 - t1, t_open + t2 - t0, x->jf.size / 1048576.0 / (t_open + t2 - t0 + 1e-9),
		(unsigned long long)(x->jf.index_pages * sizeof(uint64_t) / 1024),
		status_kb("VmHWM"), status_kb("RssAnon"), status_kb("RssFile"));
	json_object_put(j);
	return 0;
}

int explain_views(struct explain_opts *opt, const double *t_open)
{
	for (int i = 0; i < opt->nr_files; i++) {
		struct xfile *x = &opt->files[i];
		struct view_ctx v = { opt, x };
		int r = 0;

		if (opt->header)
			view_header(opt, x);
		if (!r && opt->check)
			r = view_check(opt, x);
		if (!r && opt->objects)
			r = view_objects(opt, x);
		if (!r && opt->range)
			r = view_range(opt, x);
		if (!r && opt->entries)
			r = jf_entries(&x->jf, entry_view_cb, &v);
		if (!r && opt->stats)
			r = view_stats(opt, x, t_open[i]);
		if (r)
			return xfile_error(x, r);
	}
	return 0;
}
