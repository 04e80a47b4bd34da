// SPDX-License-Identifier: GPL-2.0
/*
 * `amptrace explain`: options, the journal files, and the reader's own
 * views of them (header, objects, entries, a byte range, a full check,
 * read statistics).  Explaining a recorded trace is explain_trace.c.
 *
 * No log payload is printed unless --show-values: field names, sizes and
 * offsets only.
 */
#include <argp.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include "explain.h"
#include "loader.h"

static const char explain_doc[] =
"Explain which journal objects and which log fields each journald entry wrote.\v"
"With --trace, every entry of a recorded `amptrace trace -j` run is matched to\n"
"the journal entries journald wrote during it (by time), and each page it\n"
"dirtied to the objects that lie there and the field or structure that\n"
"wrote them; a per-field table sums pages and device bytes over entries and\n"
"puts them next to the plain-append (export) size.  The journal files are\n"
"read as they are now: later appends do not move earlier objects.\n"
"\n"
"Without --trace, the reader's own views: --header, --objects, --entries\n"
"(like journalctl -o export), --range, --check, --stats.\n"
"\n"
"EXAMPLES:\n"
"  amptrace trace -c systemd-journal -j -o trace.json -d 30\n"
"  amptrace explain -t trace.json /var/log/journal/*/system.journal\n"
"  amptrace explain --entries --show-values F.journal  # = journalctl -o export\n"
"  amptrace explain --range 0x2c000-0x2d000 F.journal  # objects on a page\n";

enum {
	OPT_SHOW_VALUES = 256,
	OPT_ALL_OBJECTS,
	OPT_HEADER,
	OPT_OBJECTS,
	OPT_ENTRIES,
	OPT_RANGE,
	OPT_CHECK,
	OPT_STATS,
	OPT_WINDOW,
	OPT_ID,
};

static const struct argp_option explain_options[] = {
	{ "trace", 't', "FILE", 0, "Recorded trace (amptrace trace -j -o FILE) to explain", 0 },
	{ "json", 'j', NULL, 0, "JSON lines instead of tables", 0 },
	{ "output", 'o', "FILE", 0, "Write there instead of stdout", 0 },
	{ "show-values", OPT_SHOW_VALUES, NULL, 0, "Print log payloads, not just names and sizes", 0 },
	{ "all-objects", OPT_ALL_OBJECTS, NULL, 0, "List every object on a dirtied page, not only those written", 0 },
	{ "id", OPT_ID, "N", 0, "Only trace entry N (repeatable)", 0 },
	{ "window", OPT_WINDOW, "SECONDS", 0,
	  "Farthest a journal entry's time stamp may be from its traced syscall (1)", 0 },
	{ "header", OPT_HEADER, NULL, 0, "Print each file's header", 1 },
	{ "objects", OPT_OBJECTS, NULL, 0, "List every object: offset, type, size, owner", 1 },
	{ "entries", OPT_ENTRIES, NULL, 0, "List entries in journalctl's export format", 1 },
	{ "range", OPT_RANGE, "A-B", 0, "Objects overlapping the bytes [A, B)", 1 },
	{ "check", OPT_CHECK, NULL, 0, "Verify objects, hashes, chains and entries", 1 },
	{ "stats", OPT_STATS, NULL, 0, "Read as explain does; print time and memory", 1 },
	{},
};

int xfile_error(struct xfile *x, int err)
{
	amp_err("%s: %s", x->path, x->jf.err[0] ? x->jf.err : strerror(-err));
	return err;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || end == s || *s == '-' ? -1 : (int)(end - s);
}

static int parse_opt(int key, char *arg, struct argp_state *state)
{
	struct explain_opts *o = state->input;
	unsigned long long *ids;
	uint64_t v;
	char *end;
	int n;

	switch (key) {
	case 't': o->trace = arg; break;
	case 'j': o->json = true; break;
	case 'o': o->output = arg; break;
	case OPT_SHOW_VALUES: o->show_values = true; break;
	case OPT_ALL_OBJECTS: o->all_objects = true; break;
	case OPT_HEADER: o->header = true; break;
	case OPT_OBJECTS: o->objects = true; break;
	case OPT_ENTRIES: o->entries = true; break;
	case OPT_CHECK: o->check = true; break;
	case OPT_STATS: o->stats = true; break;
	case OPT_RANGE:
		n = parse_u64(arg, &o->range_a);
		if (n < 0 || arg[n] != '-' || parse_u64(arg + n + 1, &o->range_b) < 0 ||
		    arg[n + 1 + parse_u64(arg + n + 1, &v)] || o->range_b <= o->range_a) {
			amp_err("invalid --range '%s' (expected A-B with A < B, e.g. 0x2000-0x3000)", arg);
			return EINVAL;
		}
		o->range = true;
		break;
	case OPT_WINDOW:
		errno = 0;
		o->window = strtod(arg, &end);
		if (errno || end == arg || *end || !(o->window >= 0) || o->window > 3600) {
			amp_err("invalid --window '%s' (seconds, 0 to 3600)", arg);
			return EINVAL;
		}
		break;
	case OPT_ID:
		n = parse_u64(arg, &v);
		if (n < 0 || arg[n]) {
			amp_err("invalid --id '%s' (an entry number)", arg);
			return EINVAL;
		}
		ids = realloc(o->ids, (o->nr_ids + 1) * sizeof(*ids));
		if (!ids)
			return ENOMEM;
		o->ids = ids;
		o->ids[o->nr_ids++] = v;
		break;
	case ARGP_KEY_ARG: {
		struct xfile *f = realloc(o->files, (o->nr_files + 1) * sizeof(*f));

		if (!f)
			return ENOMEM;
		o->files = f;
		f = &o->files[o->nr_files++];
		memset(f, 0, sizeof(*f));
		f->path = arg;
		f->base = strrchr(arg, '/') ? strrchr(arg, '/') + 1 : arg;
		break;
	}
	case ARGP_KEY_ERROR:
		amp_argp_error(state);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* 0: run; 1: --help printed; -1: error, already reported. */
static int explain_parse_args(int argc, char **argv, struct explain_opts *o)
{
	static const struct argp argp = {
		.options = explain_options,
		.parser = parse_opt,
		.args_doc = "JOURNAL...",
		.doc = explain_doc,
	};

	memset(o, 0, sizeof(*o));
	o->window = 1.0;
	if (amp_help(&argp, argc, argv, "amptrace explain"))
		return 1;
	if (argp_parse(&argp, argc, argv, ARGP_NO_EXIT | ARGP_NO_ERRS, NULL, o))
		return -1;
	if (!o->nr_files) {
		amp_err("no journal file given (amptrace explain [-t TRACE] FILE.journal...)");
		return -1;
	}
	if (!o->trace && !o->header && !o->objects && !o->entries && !o->range &&
	    !o->check && !o->stats) {
		amp_err("nothing to do: give --trace FILE, or --header, --objects, --entries, "
			"--range, --check or --stats");
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ helpers --- */

/* Field names are [A-Z0-9_] in valid files; show anything else as '?'. */
static const char *clean_name(const uint8_t *p, size_t n, char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < n && i + 1 < len; i++)
		buf[i] = p[i] > 0x20 && p[i] < 0x7f ? p[i] : '?';
	buf[i] = 0;
	return buf;
}

static const char *array_owner(struct xfile *x, const struct jf_object *a, char *buf, size_t len)
{
	struct jf *f = &x->jf;
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
			return clean_name(name, n, buf, len);
	}
	return "(entry array)";
}

const char *object_owner(struct xfile *x, const struct jf_object *o, char *buf, size_t len)
{
	const uint8_t *name;
	size_t n;

	switch (o->type) {
	case JF_HEADER: return "(header)";
	case JF_DATA:
		if (jf_data_field(&x->jf, o, &name, &n))
			return "(unreadable)";
		return clean_name(name, n, buf, len);
	case JF_FIELD:
		jf_field_name(&x->jf, o, &name, &n);
		return clean_name(name, n, buf, len);
	case JF_ENTRY: return "(entry)";
	case JF_DATA_HASH_TABLE: return "(data hash table)";
	case JF_FIELD_HASH_TABLE: return "(field hash table)";
	case JF_ENTRY_ARRAY: return array_owner(x, o, buf, len);
	case JF_TAG: return "(tag)";
	}
	return "(unknown)";
}

/* journalctl's rule for a text line: valid UTF-8, no control characters
 * but tab, no newline.  Anything else is exported in binary form. */
static bool export_printable(const uint8_t *p, uint64_t len)
{
	uint64_t i = 0;

	while (i < len) {
		uint32_t c = p[i];
		unsigned n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 :
			     (c & 0xf8) == 0xf0 ? 4 : 0;

		if (!n || i + n > len)
			return false;
		if (n > 1)
			c &= 0x7f >> n;
		for (unsigned k = 1; k < n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			c = c << 6 | (p[i + k] & 0x3f);
		}
		if ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && c < 0x10000) ||
		    c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff) ||
		    (c >= 0xfdd0 && c <= 0xfdef) || (c & 0xfffe) == 0xfffe ||
		    (c < 0x20 && c != '\t') || (c >= 0x7f && c <= 0x9f))
			return false;
		i += n;
	}
	return true;
}

uint64_t export_field_size(const uint8_t *p, uint64_t len)
{
	const uint8_t *eq = memchr(p, '=', len);

	if (export_printable(p, len) || !eq)
		return len + 1;
	return (eq - p) + 1 + 8 + (len - (eq - p) - 1) + 1;	/* NAME\n le64 value\n */
}

static void export_field(FILE *out, const uint8_t *p, uint64_t len)
{
	const uint8_t *eq = memchr(p, '=', len);
	uint64_t vlen, le;

	if (export_printable(p, len) || !eq) {
		fwrite(p, 1, len, out);
	} else {
		vlen = len - (eq - p) - 1;
		le = htole64(vlen);
		fwrite(p, 1, eq - p, out);
		fputc('\n', out);
		fwrite(&le, 1, 8, out);
		fwrite(eq + 1, 1, vlen, out);
	}
	fputc('\n', out);
}

static void hex128(const uint8_t id[16], char out[33])
{
	for (int i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
}

/* The record's head as the journalctl of the release that wrote the file
 * prints it: from 254 on (the 272-byte header) journalctl also exports
 * __SEQNUM and __SEQNUM_ID.  (The format is journalctl's, not the file's:
 * 252's journalctl prints a 257 file without them, 257's a 252 file with.) */
static int export_header(struct xfile *x, const struct jf_object *e, char *buf, size_t len)
{
	char sid[33], bid[33];
	int n;

	hex128(x->jf.h.seqnum_id, sid);
	hex128(e->entry.boot_id, bid);
	n = snprintf(buf, len,
		"__CURSOR=s=%s;i=%llx;b=%s;m=%llx;t=%llx;x=%llx\n"
		"__REALTIME_TIMESTAMP=%llu\n__MONOTONIC_TIMESTAMP=%llu\n",
		sid, (unsigned long long)e->entry.seqnum, bid,
		(unsigned long long)e->entry.monotonic, (unsigned long long)e->entry.realtime,
		(unsigned long long)e->entry.xor_hash, (unsigned long long)e->entry.realtime,
		(unsigned long long)e->entry.monotonic);
	if (x->jf.h.header_size >= JF_HEADER_SIZE_254 && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - n, "__SEQNUM=%llu\n__SEQNUM_ID=%s\n",
			      (unsigned long long)e->entry.seqnum, sid);
	return n;
}

uint64_t export_entry_overhead(struct xfile *x, const struct jf_object *e)
{
	char buf[512];

	/* Cursor and timestamps, then the blank line ending the record.  The
	 * _BOOT_ID line is the _BOOT_ID field's. */
	return export_header(x, e, buf, sizeof(buf)) + 1;
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

/* ------------------------------------------------------ object display --- */

static const char *compression(uint8_t flags)
{
	return flags == JF_OBJ_ZSTD ? "zstd" : flags == JF_OBJ_XZ ? "xz" :
	       flags == JF_OBJ_LZ4 ? "lz4" : NULL;
}


/* The payload of DATA object O, for --show-values: decompressed if need be.
 * Returns NULL (and says why in *why) when it cannot be had. */
static const uint8_t *value_of(struct xfile *x, const struct jf_object *o, uint64_t *len,
			       uint8_t **buf)
{
	const uint8_t *p;

	if (jf_data_payload(&x->jf, o, &p, len, buf))
		return NULL;
	return p;
}

static void object_detail(const struct explain_opts *opt, struct xfile *x,
			  const struct jf_object *o)
{
	FILE *out = opt->out;

	switch (o->type) {
	case JF_DATA: {
		const uint8_t *p, *eq;
		uint64_t len;
		uint8_t *buf;

		fprintf(out, "payload %llu B%s%s, %llu entries",
			(unsigned long long)o->data.payload_size, o->flags ? " " : "",
			o->flags ? compression(o->flags) : "", (unsigned long long)o->data.n_entries);
		if (!opt->show_values)
			break;
		p = value_of(x, o, &len, &buf);
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

void print_object_text(const struct explain_opts *opt, struct xfile *x,
		       const struct jf_object *o, const char *indent, const char *mark)
{
	char buf[128];

	fprintf(opt->out, "%s0x%-9llx %-16s %8llu  %-26s ", indent,
		(unsigned long long)o->offset, jf_type_name(o->type),
		(unsigned long long)o->size, object_owner(x, o, buf, sizeof(buf)));
	object_detail(opt, x, o);
	fprintf(opt->out, "%s\n", mark ? mark : "");
}

static json_object *value_json(const uint8_t *p, uint64_t len)
{
	json_object *a;

	if (export_printable(p, len))
		return json_object_new_string_len((const char *)p, len);
	a = json_object_new_array();	/* binary: bytes, as journalctl -o json */
	for (uint64_t i = 0; i < len; i++)
		json_object_array_add(a, json_object_new_int(p[i]));
	return a;
}

#define ADD(o, k, v) json_object_object_add(o, k, v)
#define U64(v) json_object_new_uint64(v)

json_object *object_json(const struct explain_opts *opt, struct xfile *x,
			 const struct jf_object *o)
{
	json_object *j = json_object_new_object();
	char buf[128];

	ADD(j, "offset", U64(o->offset));
	ADD(j, "type", json_object_new_string(jf_type_name(o->type)));
	ADD(j, "size", U64(o->size));
	ADD(j, "owner", json_object_new_string(object_owner(x, o, buf, sizeof(buf))));
	switch (o->type) {
	case JF_DATA:
		ADD(j, "payload_size", U64(o->data.payload_size));
		ADD(j, "n_entries", U64(o->data.n_entries));
		if (o->flags)
			ADD(j, "compressed", json_object_new_string(compression(o->flags)));
		if (opt->show_values) {
			const uint8_t *p, *eq;
			uint64_t len;
			uint8_t *vb;

			p = value_of(x, o, &len, &vb);
			eq = p ? memchr(p, '=', len) : NULL;
			if (eq)
				ADD(j, "value", value_json(eq + 1, len - (eq - p) - 1));
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

	hex128(h->file_id, fid);
	hex128(h->machine_id, mid);
	hex128(h->boot_id, bid);
	hex128(h->seqnum_id, sid);
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
		print_object_text(v->opt, v->x, o, "", NULL);
		return 0;
	}
	j = object_json(v->opt, v->x, o);
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

	export_header(x, e, head, sizeof(head));
	hex128(e->entry.boot_id, bid);
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
			fprintf(opt->out, "%s: %llu bytes\n", clean_name(name, nlen, nb, sizeof(nb)),
				(unsigned long long)(d.data.payload_size - nlen - 1));
			continue;
		}
		r = jf_data_payload(&x->jf, &d, &p, &len, &buf);
		if (r)
			return r;
		export_field(opt->out, p, len);
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

	hex128(e->entry.boot_id, bid);
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
		ADD(fj, "name", json_object_new_string(clean_name(name, nlen, nb, sizeof(nb))));
		ADD(fj, "data", U64(d.offset));
		ADD(fj, "data_size", U64(d.size));
		ADD(fj, "new", json_object_new_boolean(d.data.entry_offset == e->offset));
		if (d.flags)
			ADD(fj, "compressed", json_object_new_string(compression(d.flags)));
		if (opt->show_values) {
			r = jf_data_payload(&x->jf, &d, &p, &len, &buf);
			if (!r)
				ADD(fj, "value", value_json(p + nlen + 1, len - nlen - 1));
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

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
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

/* ---------------------------------------------------------- the command --- */

static int open_files(struct explain_opts *opt, double *t_open)
{
	for (int i = 0; i < opt->nr_files; i++) {
		struct xfile *x = &opt->files[i];
		double t0 = now_s();
		struct stat st;
		int r = jf_open(&x->jf, x->path);

		if (r)
			return xfile_error(x, r);
		t_open[i] = now_s() - t0;
		/* st_dev is what the trace has (on btrfs the subvolume's
		 * device: inode_dev() in compat.bpf.h). */
		if (stat(x->path, &st) == 0) {
			x->dev_major = major(st.st_dev);
			x->dev_minor = minor(st.st_dev);
			x->ino = st.st_ino;
		}
	}
	return 0;
}

static int run_views(struct explain_opts *opt, const double *t_open)
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

int cmd_explain(int argc, char **argv)
{
	struct explain_opts opt;
	double *t_open = NULL;
	int r = explain_parse_args(argc, argv, &opt);

	if (r)
		goto out;
	opt.out = stdout;
	if (opt.output && !(opt.out = fopen(opt.output, "w"))) {
		amp_err("cannot write %s: %s", opt.output, strerror(errno));
		r = -1;
		goto out;
	}
	t_open = calloc(opt.nr_files, sizeof(*t_open));
	r = t_open ? open_files(&opt, t_open) : -ENOMEM;
	if (!r)
		r = run_views(&opt, t_open);
	if (!r && opt.trace)
		r = explain_trace(&opt);
	if (opt.out != stdout && fclose(opt.out) && !r) {
		amp_err("writing %s: %s", opt.output, strerror(errno));
		r = -1;
	}
out:
	for (int i = 0; i < opt.nr_files; i++)
		jf_close(&opt.files[i].jf);
	free(opt.files);
	free(opt.ids);
	free(t_open);
	return r < 0 ? 1 : 0;
}
