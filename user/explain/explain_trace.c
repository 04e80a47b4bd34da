// SPDX-License-Identifier: GPL-2.0
/*
 * `amptrace explain --trace FILE`, `report --journal`: traced entries,
 * explained against the journal files.
 *
 *  1. The traced entries (explain_entries.c: `trace -j` lines or a record).
 *  2. One indexed walk per journal file; keep the ENTRY objects whose
 *     realtime falls within the trace, with their predecessors.
 *  3. Match them to traced entries by time (2-3: explain_match.c).
 *  4. For each matched journal entry, jf_entry_writes() says which bytes
 *     its append stored and for which field or structure.
 *  5. Each dirtied page of the trace entry is split among the owners of
 *     the writes that fall on it, 1/k each (any one of the k would have
 *     dirtied the page alone), and so are its device bytes.
 *  6. Sum per owner over entries; compare with the export (plain append)
 *     size of each field.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util.h"
#include "explain/explain_match.h"
#include "explain/explain_trace.h"
#include "journal/journal_export.h"
#include "journal/journal_show.h"
#include "sink/bill.h"
#include "sink/by_sender.h"
#include "sys/presets.h"

#define ADD(o, k, v)	json_object_object_add(o, k, v)
#define U64(v)		json_object_new_uint64(v)
#define STR(v)		json_object_new_string(v)

/* ------------------------------------------------------------ owners --- */

/* Fixed owners first; fields are interned after them. */
enum {
	OWN_HEADER, OWN_ENTRY, OWN_GLOBAL, OWN_TAG,
	OWN_UNEXPLAINED, OWN_METADATA, OWN_FS_JOURNAL, OWN_WINDOW, OWN_UNLISTED,
	OWN_OTHER_FILE, OWN_FOLIO_REST,
	OWN_BTRFS,	/* AMP_BTRFS_TREES rows, in enum amp_btrfs_tree order */
	OWN_FIXED = OWN_BTRFS + AMP_BTRFS_TREES,
};
static const char *const fixed_owner[OWN_FIXED] = {
	"(header)", "(entry object)", "(global entry array)", "(tag)",
	"(unexplained)", "(fs metadata)", "(fs journal)", "(write-out window)",
	"(not in scatter list)", "(other files)", "(rest of a large folio)",
	/* btrfs metadata by tree: what the fs metadata of a btrfs entry is. */
	"(btrfs fs tree)", "(btrfs extent tree)", "(btrfs csum tree)",
	"(btrfs free-space tree)", "(btrfs root tree)", "(btrfs log tree)",
	"(btrfs chunk tree)", "(btrfs dev tree)", "(btrfs block-group tree)",
	"(btrfs other trees)", "(btrfs superblock)", "(btrfs tree, before start)",
};

struct agg {
	char name[64];
	uint64_t uses, new_values, repeats;	/* items (fields) or journal entries */
	double pages, pages_new, dev, dev_new;
	uint64_t arrays, array_bytes;		/* entry arrays allocated */
	uint64_t export_bytes;
	uint64_t free_pages;			/* wrote on pages already dirty */
};

struct owners {
	struct agg *a;
	int n, cap;
};

static int owner_id(struct owners *o, const char *name)
{
	for (int i = 0; i < o->n; i++)
		if (!strcmp(o->a[i].name, name))
			return i;
	if (o->n == o->cap) {
		int cap = o->cap ? 2 * o->cap : 64;
		struct agg *a = realloc(o->a, cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		o->a = a;
		o->cap = cap;
	}
	memset(&o->a[o->n], 0, sizeof(o->a[0]));
	snprintf(o->a[o->n].name, sizeof(o->a[0].name), "%s", name);
	return o->n++;
}

static int owners_init(struct owners *o)
{
	memset(o, 0, sizeof(*o));
	for (int i = 0; i < OWN_FIXED; i++)
		if (owner_id(o, fixed_owner[i]) < 0)
			return -ENOMEM;
	return 0;
}

/* ----------------------------------------------- one entry, explained --- */

struct item {
	int owner;
	bool new_value;
	uint64_t data, data_size, export_bytes;
};

struct jentry {
	const struct cand *c;
	struct jf_object e;
	struct item *items;
	uint64_t export_bytes;
};

struct wrec {
	int file, owner;
	struct jf_write w;
};

struct explain_ctx {
	struct explain_opts *opt;
	struct owners own;
	struct agg *local;	/* this trace entry's per-owner sums, own.n long */
	int local_cap;
	struct jentry *je;
	int nje;
	struct wrec *w;
	size_t nw, capw;
	int cur_file, cur_je;
	uint64_t page_size;
	/* totals */
	uint64_t explained, skipped, journal_entries, unmatched;
	uint64_t pages_total, dev_total;
	/* Per sender; and matched journal entries whose _PID was (not) the
	 * traced entry's sender. */
	struct by_sender senders;
	uint64_t pid_same, pid_other;
};

static int write_cb(struct jf *f, const struct jf_write *w, void *ctx)
{
	struct explain_ctx *x = ctx;
	struct jentry *je = &x->je[x->cur_je];
	int owner;

	(void)f;
	switch (w->owner) {
	case JF_OWN_FIELD:
		owner = w->item < je->e.entry.n_items ? je->items[w->item].owner : OWN_UNEXPLAINED;
		break;
	case JF_OWN_HEADER: owner = OWN_HEADER; break;
	case JF_OWN_ENTRY: owner = OWN_ENTRY; break;
	case JF_OWN_GLOBAL_ARRAY: owner = OWN_GLOBAL; break;
	default: owner = OWN_TAG; break;
	}
	if (amp_grow(&x->w, &x->capw, x->nw + 1, sizeof(*x->w)))
		return -ENOMEM;
	x->w[x->nw++] = (struct wrec){ x->cur_file, owner, *w };
	return 0;
}

static const char *field_name(struct jf *f, const struct jf_object *d, char *buf, size_t len)
{
	const uint8_t *p;
	size_t n;

	if (jf_data_field(f, d, &p, &n))
		return NULL;
	return jf_clean_name(p, n, buf, len);
}

/* The journal entry's fields: owner, new or repeated, export size. */
static int load_jentry(struct explain_ctx *x, const struct cand *c, struct jentry *je)
{
	struct xfile *xf = &x->opt->files[c->file];
	struct jf *f = &xf->jf;
	int r;

	je->c = c;
	r = jf_object(f, c->off, JF_ENTRY, &je->e);
	if (r)
		return xfile_error(xf, r);
	je->items = calloc(je->e.entry.n_items ? je->e.entry.n_items : 1, sizeof(*je->items));
	if (!je->items)
		return -ENOMEM;
	je->export_bytes = jf_export_entry_overhead(f, &je->e);
	for (uint64_t i = 0; i < je->e.entry.n_items; i++) {
		struct item *it = &je->items[i];
		struct jf_object d;
		const uint8_t *p;
		uint64_t len;
		uint8_t *buf = NULL;
		char name[64];

		r = jf_object(f, jf_entry_item(f, &je->e, i), JF_DATA, &d);
		if (r || !field_name(f, &d, name, sizeof(name)))
			return xfile_error(xf, r ? r : -EBADMSG);
		it->owner = owner_id(&x->own, name);
		if (it->owner < 0)
			return it->owner;
		it->new_value = d.data.entry_offset == c->off;
		it->data = d.offset;
		it->data_size = d.size;
		/* The plain-append cost: this field's export line.  _BOOT_ID's
		 * is the "_BOOT_ID=<32 hex>" line journalctl prints first. */
		if (!strcmp(name, "_BOOT_ID"))
			it->export_bytes = 9 + 32 + 1;
		else if (!jf_data_payload(f, &d, &p, &len, &buf))
			it->export_bytes = jf_export_field_size(p, len);
		else	/* undecodable compressed value: its stored size */
			it->export_bytes = d.data.payload_size + 1;
		free(buf);
		je->export_bytes += it->export_bytes;
	}
	return 0;
}

static struct agg *local_agg(struct explain_ctx *x, int owner)
{
	if (owner >= x->local_cap) {
		int cap = x->own.cap > owner ? x->own.cap : owner + 64;
		struct agg *a = realloc(x->local, cap * sizeof(*a));

		if (!a)
			return NULL;
		memset(a + x->local_cap, 0, (cap - x->local_cap) * sizeof(*a));
		x->local = a;
		x->local_cap = cap;
	}
	return &x->local[owner];
}

static bool overlaps(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	return a0 < b1 && b0 < a1;
}

/* Owners writing on [a, b) of FILE, each once; new_value if any write of
 * the owner there came from a new value. */
static int page_owners(struct explain_ctx *x, int file, uint64_t a, uint64_t b,
		       int *owners, bool *fresh, int max)
{
	int n = 0;

	for (size_t i = 0; i < x->nw; i++) {
		const struct wrec *w = &x->w[i];
		int k;

		if (w->file != file || !overlaps(w->w.offset, w->w.offset + w->w.len, a, b))
			continue;
		for (k = 0; k < n && owners[k] != w->owner; k++)
			;
		if (k == n) {
			if (n == max)
				continue;
			owners[n] = w->owner;
			fresh[n++] = false;
		}
		if (w->w.new_value)
			fresh[k] = true;
	}
	return n;
}

/* ---- output of one page ---- */

struct page_view {
	struct explain_ctx *x;
	struct xfile *xf;
	int file;
	uint64_t a, b;
	json_object *objects;	/* JSON mode */
	uint64_t others, other_by_type[8];
};

static void describe_write(struct explain_ctx *x, struct xfile *xf, const struct wrec *w,
			   char *buf, size_t len)
{
	const struct jf *f = &xf->jf;
	int n = snprintf(buf, len, "%s", jf_write_name(w->w.what));

	if (w->w.what == JF_W_DATA_BUCKET)
		n += snprintf(buf + n, len - n, " %llu", (unsigned long long)
			      ((w->w.offset - f->h.data_hash_table_offset) / 16));
	else if (w->w.what == JF_W_FIELD_BUCKET)
		n += snprintf(buf + n, len - n, " %llu", (unsigned long long)
			      ((w->w.offset - f->h.field_hash_table_offset) / 16));
	else if (w->w.what == JF_W_ARRAY_SLOT)
		n += snprintf(buf + n, len - n, " %llu", (unsigned long long)
			      ((w->w.offset - w->w.object - 24) / f->array_item_size));
	else if (w->w.what == JF_W_ARRAY_NEW)
		n += snprintf(buf + n, len - n, " (capacity %llu)",
			      (unsigned long long)w->w.array_capacity);
	/* fields in parentheses; structures are named "(...)" already */
	if (n < (int)len)
		snprintf(buf + n, len - n, x->own.a[w->owner].name[0] == '(' ? " %s" : " (%s)",
			 x->own.a[w->owner].name);
}

static int page_object_cb(struct jf *f, const struct jf_object *o, void *ctx)
{
	struct page_view *pv = ctx;
	struct explain_ctx *x = pv->x;
	uint64_t o0 = o->offset, o1 = o->offset + o->size;
	json_object *writes = NULL;
	char mark[768] = "", desc[160];
	size_t m = 0;

	(void)f;
	for (size_t i = 0; i < x->nw; i++) {
		const struct wrec *w = &x->w[i];
		uint64_t w0 = w->w.offset, w1 = w->w.offset + w->w.len;

		if (w->file != pv->file || !overlaps(w0, w1, o0, o1) ||
		    !overlaps(w0, w1, pv->a, pv->b))
			continue;
		describe_write(x, pv->xf, w, desc, sizeof(desc));
		if (x->opt->json) {
			json_object *wj = json_object_new_object();

			if (!writes)
				writes = json_object_new_array();
			ADD(wj, "what", STR(jf_write_name(w->w.what)));
			ADD(wj, "owner", STR(x->own.a[w->owner].name));
			ADD(wj, "offset", U64(w0));
			ADD(wj, "len", U64(w->w.len));
			ADD(wj, "new_value", json_object_new_boolean(w->w.new_value));
			json_object_array_add(writes, wj);
		} else if (m < sizeof(mark)) {
			m += snprintf(mark + m, sizeof(mark) - m, "%s%s", m ? "; " : "  <- ", desc);
		}
	}
	if (!writes && !mark[0] && !x->opt->all_objects) {
		pv->others++;
		pv->other_by_type[o->type & 7]++;
		return 0;
	}
	if (x->opt->json) {
		json_object *oj = jf_object_json(&pv->xf->jf, o, x->opt->show_values);

		ADD(oj, "writes", writes ? writes : json_object_new_array());
		json_object_array_add(pv->objects, oj);
	} else {
		jf_print_object(x->opt->out, &pv->xf->jf, o, x->opt->show_values, "      ", mark);
	}
	return 0;
}

/* Dev bytes per written data page: the entry's data bytes over the pages
 * that can have been written (listed and written, or not listed). */
static double per_page_bytes(const struct xentry *t, uint64_t *unlisted)
{
	uint64_t listed = 0, written = 0;

	for (__u32 i = 0; i < t->e.nr_runs; i++) {
		listed += t->e.runs[i].npages;
		if (!xrun_meta(&t->e.runs[i]) && t->e.runs[i].written)
			written += t->e.runs[i].npages;
	}
	*unlisted = t->e.pages_dirtied > listed ? t->e.pages_dirtied - listed : 0;
	return written + *unlisted ?
	       (double)t->e.dev_bytes[AMP_CLASS_DATA] / (written + *unlisted) : 0;
}

static void charge(struct explain_ctx *x, int owner, double pages, double dev, bool fresh)
{
	struct agg *a = local_agg(x, owner);

	if (!a)
		return;
	a->pages += pages;
	a->dev += dev;
	if (fresh) {
		a->pages_new += pages;
		a->dev_new += dev;
	}
}

/* One dirtied page of journal file `file`, to its owners.  folio_written:
 * the page is one of a large folio (a run of several pages: the kernel
 * dirties and writes it whole) on another page of which this entry wrote;
 * a page with no write of its own goes to (rest of a large folio). */
static int explain_page(struct explain_ctx *x, int file, uint64_t page, double dev,
			bool folio_written, json_object *pages)
{
	struct xfile *xf = &x->opt->files[file];
	int owners[64];
	bool fresh[64];
	uint64_t a = page * x->page_size, b = a + x->page_size;
	int n = page_owners(x, file, a, b, owners, fresh, 64);
	struct page_view pv = { .x = x, .xf = xf, .file = file, .a = a, .b = b };
	json_object *pj = NULL, *oj;
	int r;

	if (!n && folio_written) {
		owners[n] = OWN_FOLIO_REST;
		fresh[n++] = false;
	}
	if (!n)
		charge(x, OWN_UNEXPLAINED, 1, dev, false);
	for (int i = 0; i < n; i++)
		charge(x, owners[i], 1.0 / n, dev / n, fresh[i]);
	if (x->opt->json) {
		pj = json_object_new_object();
		pv.objects = json_object_new_array();
		ADD(pj, "file", STR(xf->base));
		ADD(pj, "page", U64(page));
		ADD(pj, "dev_bytes", json_object_new_double(dev));
		oj = json_object_new_array();
		for (int i = 0; i < n; i++) {
			json_object *s = json_object_new_object();

			ADD(s, "owner", STR(x->own.a[owners[i]].name));
			ADD(s, "share", json_object_new_double(1.0 / n));
			ADD(s, "new_value", json_object_new_boolean(fresh[i]));
			json_object_array_add(oj, s);
		}
		ADD(pj, "owners", oj);
	} else {
		fprintf(x->opt->out, "    page %s:%llu  %.0f B  ", xf->base,
			(unsigned long long)page, dev);
		if (!n)
			fputs("(unexplained: nothing this entry wrote lies here)", x->opt->out);
		for (int i = 0; i < n; i++)
			fprintf(x->opt->out, "%s%s", i ? ", " : "", x->own.a[owners[i]].name);
		if (n > 1)
			fprintf(x->opt->out, " (1/%d each)", n);
		fputc('\n', x->opt->out);
	}
	r = jf_objects_in(&xf->jf, a, b, page_object_cb, &pv);
	if (r) {
		if (pj)
			json_object_put(pj);
		json_object_put(pv.objects);
		return xfile_error(xf, r);
	}
	if (pj) {
		ADD(pj, "objects", pv.objects);
		ADD(pj, "other_objects", U64(pv.others));
		json_object_array_add(pages, pj);
	} else if (pv.others) {
		fprintf(x->opt->out, "      + %llu other object%s on this page, not written by "
			"this entry:", (unsigned long long)pv.others, pv.others > 1 ? "s" : "");
		for (int ty = 0; ty < 8; ty++)
			if (pv.other_by_type[ty])
				fprintf(x->opt->out, " %s %llu", jf_type_name(ty),
					(unsigned long long)pv.other_by_type[ty]);
		fputc('\n', x->opt->out);
	}
	return 0;
}

/* Pages the model says were written but the entry was not charged for:
 * already dirty from an earlier entry (the first dirtier pays). */
static void free_rides(struct explain_ctx *x, const struct xentry *t, json_object *jo)
{
	json_object *arr = jo ? json_object_new_array() : NULL;
	uint64_t shown = 0;

	for (size_t i = 0; i < x->nw; i++) {
		const struct wrec *w = &x->w[i];
		uint64_t p0 = w->w.offset / x->page_size;
		uint64_t p1 = (w->w.offset + w->w.len - 1) / x->page_size;

		for (uint64_t p = p0; p <= p1; p++) {
			bool charged = false, seen = false;

			for (__u32 k = 0; k < t->e.nr_runs && !charged; k++)
				charged = t->file[k] == w->file && p >= t->e.runs[k].index &&
					  p < t->e.runs[k].index + t->e.runs[k].npages;
			/* count each (file, page) once: only at its first write */
			for (size_t j = 0; j < i && !seen; j++)
				seen = x->w[j].file == w->file &&
				       x->w[j].w.offset / x->page_size <= p &&
				       (x->w[j].w.offset + x->w[j].w.len - 1) / x->page_size >= p;
			if (charged || seen)
				continue;
			local_agg(x, w->owner)->free_pages++;
			if (arr) {
				json_object *o = json_object_new_object();

				ADD(o, "file", STR(x->opt->files[w->file].base));
				ADD(o, "page", U64(p));
				ADD(o, "owner", STR(x->own.a[w->owner].name));
				json_object_array_add(arr, o);
			} else if (shown < 12) {
				fprintf(x->opt->out, "%s%s:%llu (%s)", shown ? ", " :
					"    written but already dirty, so not charged: ",
					x->opt->files[w->file].base, (unsigned long long)p,
					x->own.a[w->owner].name);
			}
			shown++;
		}
	}
	if (arr)
		ADD(jo, "already_dirty", arr);
	else if (shown > 12)
		fprintf(x->opt->out, " and %llu more\n", (unsigned long long)(shown - 12));
	else if (shown)
		fputc('\n', x->opt->out);
}

static void field_rows_text(struct explain_ctx *x)
{
	FILE *out = x->opt->out;

	fprintf(out, "    %-28s %-8s %9s %7s %10s %7s %5s\n", "FIELD", "VALUE", "EXPORT_B", "PAGES",
		"DEV_BYTES", "ARRAYS", "FREE");
	for (int i = 0; i < x->own.n; i++) {
		const struct agg *a = i < x->local_cap ? &x->local[i] : NULL;

		if (!a || (!a->uses && a->pages == 0 && !a->arrays && !a->free_pages))
			continue;
		fprintf(out, "    %-28s %-8s %9llu %7.2f %10.0f %7llu %5llu\n", x->own.a[i].name,
			i < OWN_FIXED ? "" : a->new_values && a->repeats ? "new+rep" :
			a->new_values ? "new" : a->repeats ? "repeat" : "",
			(unsigned long long)a->export_bytes, a->pages, a->dev,
			(unsigned long long)a->arrays, (unsigned long long)a->free_pages);
	}
}

static json_object *agg_json(const char *name, const struct agg *a)
{
	json_object *j = json_object_new_object();

	ADD(j, "owner", STR(name));
	ADD(j, "uses", U64(a->uses));
	ADD(j, "new_values", U64(a->new_values));
	ADD(j, "repeated_values", U64(a->repeats));
	ADD(j, "pages", json_object_new_double(a->pages));
	ADD(j, "pages_new_value", json_object_new_double(a->pages_new));
	ADD(j, "dev_bytes", json_object_new_double(a->dev));
	ADD(j, "dev_bytes_new_value", json_object_new_double(a->dev_new));
	ADD(j, "dev_bytes_repeated_value", json_object_new_double(a->dev - a->dev_new));
	ADD(j, "entry_arrays_new", U64(a->arrays));
	ADD(j, "entry_array_bytes", U64(a->array_bytes));
	ADD(j, "export_bytes", U64(a->export_bytes));
	ADD(j, "already_dirty_pages", U64(a->free_pages));
	return j;
}

static void add_into(struct agg *to, const struct agg *a)
{
	to->uses += a->uses;
	to->new_values += a->new_values;
	to->repeats += a->repeats;
	to->pages += a->pages;
	to->pages_new += a->pages_new;
	to->dev += a->dev;
	to->dev_new += a->dev_new;
	to->arrays += a->arrays;
	to->array_bytes += a->array_bytes;
	to->export_bytes += a->export_bytes;
	to->free_pages += a->free_pages;
}

static bool touches_files(const struct xentry *t)
{
	for (__u32 i = 0; i < t->e.nr_runs; i++)
		if (t->file[i] >= 0)
			return true;
	return false;
}

static uint64_t dev_total(const struct xentry *t)
{
	return entry_bill(&t->e, &t->c).total;
}

static void print_entry_head(struct explain_ctx *x, const struct xentry *t, json_object *j)
{
	const struct amp_entry *e = &t->e;
	bool settled = e->folios_written >= e->folios_dirtied;
	char time[40], comm[AMP_COMM_LEN];
	FILE *out = x->opt->out;

	xentry_time(t, time, sizeof(time));
	snprintf(comm, sizeof(comm), "%.*s", AMP_COMM_LEN, e->comm);
	if (j) {
		ADD(j, "type", STR("explain"));
		ADD(j, "id", U64(e->id));
		ADD(j, "time", STR(time));
		ADD(j, "pid", json_object_new_int64(e->pid));
		ADD(j, "tid", json_object_new_int64(e->tid));
		ADD(j, "comm", STR(comm));
		ADD(j, "syscall", STR(syscall_name(e->syscall_nr)));
		ADD(j, "bytes", json_object_new_int64(e->bytes));
		ADD(j, "pages_dirtied", U64(e->pages_dirtied));
		ADD(j, "dev_bytes_total", U64(dev_total(t)));
		ADD(j, "settled", json_object_new_boolean(settled));
		if (t->c.sender)
			ADD(j, "sender", sender_json(t->c.sender));
		return;
	}
	fprintf(out, "\nentry %llu: %s %lld B at %s, %s[%lld], %llu pages, %llu device bytes%s\n",
		(unsigned long long)e->id, syscall_name(e->syscall_nr), (long long)e->bytes, time,
		comm, (long long)e->tid, (unsigned long long)e->pages_dirtied,
		(unsigned long long)dev_total(t), settled ? "" : " (not all written yet)");
	if (t->c.sender) {
		char who[SENDER_UNIT_LEN];

		fprintf(out, "  sent by %s", sender_label(t->c.sender, who, sizeof(who)));
		if (t->c.sender->pid)
			fprintf(out, " (%s[%u], %s)", t->c.sender->comm[0] ? t->c.sender->comm : "?",
				t->c.sender->pid, sender_state_names[t->c.sender->state]);
		fputc('\n', out);
	}
}

static int explain_one(struct explain_ctx *x, const struct xentry *t, const struct cands *cs)
{
	struct explain_opts *opt = x->opt;
	json_object *j = opt->json ? json_object_new_object() : NULL, *ja = NULL, *pages = NULL;
	uint64_t unlisted, lo = 0, hi = cs->n;
	double ppb = per_page_bytes(t, &unlisted);
	int r = 0;

	/* The journal entries assign() gave it. */
	while (lo < hi) {
		uint64_t mid = (lo + hi) / 2;

		if (cs->c[mid].owner < t->e.id)
			lo = mid + 1;
		else
			hi = mid;
	}
	x->nje = 0;
	for (hi = lo; hi < cs->n && cs->c[hi].owner == t->e.id; hi++)
		x->nje++;
	if (!x->nje && !touches_files(t)) {
		x->skipped++;
		json_object_put(j);
		return 0;
	}
	x->explained++;
	x->je = calloc(x->nje ? x->nje : 1, sizeof(*x->je));
	if (!x->je)
		return -ENOMEM;
	x->nw = 0;
	if (x->local)
		memset(x->local, 0, x->local_cap * sizeof(*x->local));

	print_entry_head(x, t, j);
	if (!x->nje) {
		x->unmatched++;
		if (!j)
			fprintf(opt->out, "  no journal entry matched (not a journald receive, or "
				"nothing written)\n");
	}
	if (j)
		ja = json_object_new_array();
	for (int k = 0; k < x->nje && !r; k++) {
		struct jentry *je = &x->je[k];
		struct xfile *xf;

		r = load_jentry(x, &cs->c[lo + k], je);
		/* Room for every owner known so far: local_agg() cannot fail below. */
		if (!r && !local_agg(x, x->own.n - 1))
			r = -ENOMEM;
		if (r)
			break;
		xf = &opt->files[je->c->file];
		x->cur_file = je->c->file;
		x->cur_je = k;
		r = jf_entry_writes(&xf->jf, je->c->off, je->c->prev, write_cb, x);
		if (r) {
			r = xfile_error(xf, r);
			break;
		}
		x->journal_entries++;
		/* Only a journal entry this receive brought: others written in
		 * its wake-up (journald's own, audit's) have senders of their own. */
		if (t->c.sender && t->c.sender->pid && je->c->pid && je->c->received) {
			if (je->c->pid == t->c.sender->pid)
				x->pid_same++;
			else
				x->pid_other++;
		}
		/* Uses, new/repeated values, export size, per owner. */
		local_agg(x, OWN_ENTRY)->uses++;
		local_agg(x, OWN_HEADER)->uses++;
		local_agg(x, OWN_GLOBAL)->uses++;
		local_agg(x, OWN_ENTRY)->export_bytes += jf_export_entry_overhead(&xf->jf, &je->e);
		for (uint64_t i = 0; i < je->e.entry.n_items; i++) {
			struct agg *a = local_agg(x, je->items[i].owner);

			a->uses++;
			a->export_bytes += je->items[i].export_bytes;
			if (je->items[i].new_value)
				a->new_values++;
			else
				a->repeats++;
		}
		if (j) {
			json_object *e = json_object_new_object(), *fa = json_object_new_array();

			ADD(e, "file", STR(xf->base));
			ADD(e, "offset", U64(je->c->off));
			ADD(e, "seqnum", U64(je->e.entry.seqnum));
			ADD(e, "realtime", U64(je->e.entry.realtime));
			ADD(e, "export_bytes", U64(je->export_bytes));
			ADD(e, "received", json_object_new_boolean(je->c->received));
			ADD(e, "transport", STR(je->c->transport));
			for (uint64_t i = 0; i < je->e.entry.n_items; i++) {
				json_object *fj = json_object_new_object();

				ADD(fj, "name", STR(x->own.a[je->items[i].owner].name));
				ADD(fj, "data", U64(je->items[i].data));
				ADD(fj, "data_size", U64(je->items[i].data_size));
				ADD(fj, "new", json_object_new_boolean(je->items[i].new_value));
				ADD(fj, "export_bytes", U64(je->items[i].export_bytes));
				json_object_array_add(fa, fj);
			}
			ADD(e, "fields", fa);
			json_object_array_add(ja, e);
		} else {
			uint64_t nnew = 0;

			for (uint64_t i = 0; i < je->e.entry.n_items; i++)
				nnew += je->items[i].new_value;
			fprintf(opt->out, "  wrote %s entry seqnum %llu @0x%llx (%s%s): %llu fields, "
				"%llu new value%s; plain append (export) %llu B\n", xf->base,
				(unsigned long long)je->e.entry.seqnum, (unsigned long long)je->c->off,
				je->c->transport[0] ? je->c->transport : "no _TRANSPORT",
				je->c->received ? "" : ", no syscall of its own",
				(unsigned long long)je->e.entry.n_items, (unsigned long long)nnew,
				nnew == 1 ? "" : "s", (unsigned long long)je->export_bytes);
		}
	}
	for (size_t i = 0; i < x->nw && !r; i++)
		if (x->w[i].w.what == JF_W_ARRAY_NEW) {
			struct agg *a = local_agg(x, x->w[i].owner);

			a->arrays++;
			a->array_bytes += 24 + x->w[i].w.array_capacity *
				opt->files[x->w[i].file].jf.array_item_size;
		}
	if (j) {
		ADD(j, "journal_entries", ja);
		pages = json_object_new_array();
	} else if (!r) {
		fprintf(opt->out, "  pages (a page written by k owners counts 1/k to each):\n");
	}
	/* Each dirtied page, to its owners. */
	for (__u32 i = 0; i < t->e.nr_runs && !r; i++) {
		const struct amp_page_run *run = &t->e.runs[i];
		double dev = run->written ? ppb : 0;
		bool folio_written = false;

		if (xrun_meta(run)) {
			double md = 0;
			uint64_t mp = 0;

			for (__u32 k = 0; k < t->e.nr_runs; k++)
				mp += xrun_meta(&t->e.runs[k]) ? t->e.runs[k].npages : 0;
			md = mp ? (double)t->e.dev_bytes[AMP_CLASS_METADATA] * run->npages / mp : 0;
			charge(x, OWN_METADATA, run->npages, md, false);
			continue;
		}
		if (t->file[i] < 0) {
			charge(x, OWN_OTHER_FILE, run->npages, dev * run->npages, false);
			continue;
		}
		for (unsigned p = 0; p < run->npages && run->npages > 1 && !folio_written; p++) {
			uint64_t a = (run->index + p) * x->page_size;
			int own[64];
			bool fr[64];

			folio_written = page_owners(x, t->file[i], a, a + x->page_size, own, fr, 64) > 0;
		}
		for (unsigned p = 0; p < run->npages && !r; p++)
			r = explain_page(x, t->file[i], run->index + p, dev, folio_written, pages);
	}
	if (!r) {
		__u64 btrfs = btrfs_trees_sum(t->c.btrfs_tree, AMP_BTRFS_TREES), meta;
		bool any_meta = false;

		for (__u32 k = 0; k < t->e.nr_runs; k++)
			any_meta |= xrun_meta(&t->e.runs[k]);
		/* On btrfs, the metadata by tree; (fs metadata) keeps the rest. */
		for (int k = 0; k < AMP_BTRFS_TREES; k++)
			if (t->c.btrfs_tree[k])
				charge(x, OWN_BTRFS + k, 0, t->c.btrfs_tree[k], false);
		/* A transaction's metadata share (from a record; a JSON trace has
		 * it in its metadata already). */
		meta = (any_meta ? 0 : t->e.dev_bytes[AMP_CLASS_METADATA]) + t->c.meta;
		if (meta > btrfs)
			charge(x, OWN_METADATA, 0, meta - btrfs, false);
		if (t->c.journal)
			charge(x, OWN_FS_JOURNAL, 0, t->c.journal, false);
		if (t->c.window)
			charge(x, OWN_WINDOW, 0, t->c.window, false);
		if (unlisted)
			charge(x, OWN_UNLISTED, unlisted, ppb * unlisted, false);
		else if (ppb == 0 && t->e.dev_bytes[AMP_CLASS_DATA])
			charge(x, OWN_UNEXPLAINED, 0, t->e.dev_bytes[AMP_CLASS_DATA], false);
		if (j) {
			json_object *fa = json_object_new_array();

			ADD(j, "pages", pages);
			free_rides(x, t, j);
			for (int i = 0; i < x->own.n && i < x->local_cap; i++) {
				const struct agg *a = &x->local[i];

				if (a->uses || a->pages > 0 || a->dev > 0 || a->free_pages)
					json_object_array_add(fa, agg_json(x->own.a[i].name, a));
			}
			ADD(j, "fields", fa);
			fprintf(opt->out, "%s\n", json_object_to_json_string_ext(j,
				JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
		} else {
			free_rides(x, t, NULL);
			field_rows_text(x);
		}
		for (int i = 0; i < x->own.n && i < x->local_cap; i++)
			add_into(&x->own.a[i], &x->local[i]);
		x->pages_total += t->e.pages_dirtied;
		x->dev_total += dev_total(t);
		if (t->c.sender) {
			struct bill b = entry_bill(&t->e, &t->c);

			by_sender_add(&x->senders, &t->e, &t->c, &b);
		}
	} else if (pages) {
		json_object_put(pages);
	}
	json_object_put(j);
	for (int k = 0; k < x->nje; k++)
		free(x->je[k].items);
	free(x->je);
	x->je = NULL;
	return r;
}

/* ----------------------------------------------------------- summary --- */

static int by_dev_desc(const void *a, const void *b)
{
	const struct agg *x = *(struct agg *const *)a, *y = *(struct agg *const *)b;

	return x->dev < y->dev ? 1 : x->dev > y->dev ? -1 : strcmp(x->name, y->name);
}

static void summary(struct explain_ctx *x)
{
	const struct summary no_disks = {};	/* explain has no device counters */
	struct explain_opts *opt = x->opt;
	struct agg **rows = malloc(x->own.n * sizeof(*rows)), tot = { .name = "TOTAL" };
	int n = 0;

	if (!rows)
		return;
	for (int i = 0; i < x->own.n; i++) {
		const struct agg *a = &x->own.a[i];

		if (a->uses || a->pages > 0 || a->dev > 0 || a->free_pages) {
			rows[n++] = &x->own.a[i];
			add_into(&tot, a);
		}
	}
	qsort(rows, n, sizeof(*rows), by_dev_desc);
	if (opt->json) {
		json_object *j = json_object_new_object(), *fa = json_object_new_array();

		ADD(j, "type", STR("explain_summary"));
		ADD(j, "trace_entries", U64(x->explained));
		ADD(j, "trace_entries_skipped", U64(x->skipped));
		ADD(j, "trace_entries_unmatched", U64(x->unmatched));
		ADD(j, "journal_entries", U64(x->journal_entries));
		ADD(j, "pages_dirtied", U64(x->pages_total));
		ADD(j, "dev_bytes", U64(x->dev_total));
		for (int i = 0; i < n; i++)
			json_object_array_add(fa, agg_json(rows[i]->name, rows[i]));
		ADD(j, "fields", fa);
		ADD(j, "total", agg_json("TOTAL", &tot));
		if (x->senders.nr) {
			by_sender_sort(&x->senders);
			ADD(j, "senders", by_sender_json(&x->senders, &no_disks));
			ADD(j, "sender_pid_agrees", U64(x->pid_same));
			ADD(j, "sender_pid_differs", U64(x->pid_other));
		}
		fprintf(opt->out, "%s\n", json_object_to_json_string_ext(j,
			JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(j);
		free(rows);
		return;
	}
	fprintf(opt->out,
		"\nPer field and structure: %llu traced entries wrote %llu journal entries "
		"(%llu traced entries touched no given file; %llu matched no journal entry).\n"
		"PAGES and DEV_BYTES: each dirtied page, and its device bytes, split evenly among "
		"the owners that wrote on it.\nNEW_DEV: part of DEV_BYTES from entries whose value "
		"was new.  EXPORT_B: the plain-append cost (journalctl -o export size).\n",
		(unsigned long long)x->explained, (unsigned long long)x->journal_entries,
		(unsigned long long)x->skipped, (unsigned long long)x->unmatched);
	fprintf(opt->out, "%-28s %6s %5s %6s %8s %10s %10s %6s %8s %9s %5s %8s\n", "FIELD", "USES",
		"NEW", "REPEAT", "PAGES", "DEV_BYTES", "NEW_DEV", "ARRAYS", "ARRAY_B", "EXPORT_B",
		"FREE", "AMP");
	for (int i = 0; i <= n; i++) {
		const struct agg *a = i < n ? rows[i] : &tot;
		bool field = i < n && a - x->own.a >= OWN_FIXED;
		char amp[16] = "-", nv[24] = "-", rv[24] = "-";

		if (a->export_bytes)
			snprintf(amp, sizeof(amp), "%.1fx", a->dev / a->export_bytes);
		if (field || i == n) {
			snprintf(nv, sizeof(nv), "%llu", (unsigned long long)a->new_values);
			snprintf(rv, sizeof(rv), "%llu", (unsigned long long)a->repeats);
		}
		fprintf(opt->out, "%-28s %6llu %5s %6s %8.2f %10.0f %10.0f %6llu %8llu %9llu %5llu %8s\n",
			a->name, (unsigned long long)a->uses, nv, rv, a->pages, a->dev, a->dev_new,
			(unsigned long long)a->arrays, (unsigned long long)a->array_bytes,
			(unsigned long long)a->export_bytes, (unsigned long long)a->free_pages, amp);
	}
	fprintf(opt->out, "Traced: %llu pages dirtied, %llu device bytes.\n",
		(unsigned long long)x->pages_total, (unsigned long long)x->dev_total);
	if (x->senders.nr) {
		by_sender_sort(&x->senders);
		by_sender_text(&x->senders, &no_disks, opt->out);
		fprintf(opt->out, "Senders: of the journal entries a receive brought with a _PID, %llu were sent by the "
			"traced entry's sender, %llu by another process.\n",
			(unsigned long long)x->pid_same, (unsigned long long)x->pid_other);
	}
	free(rows);
}

static int by_id(const void *a, const void *b)
{
	const struct xentry *x = *(struct xentry *const *)a, *y = *(struct xentry *const *)b;

	return x->e.id < y->e.id ? -1 : x->e.id > y->e.id;
}

int explain_trace(struct explain_opts *opt, struct xtrace *tr)
{
	struct explain_ctx x = { .opt = opt, .page_size = sysconf(_SC_PAGESIZE) };
	struct cands cs = { 0 };
	int r;

	mark_writers(tr);
	r = owners_init(&x.own);
	if (!r)
		r = find_candidates(opt, tr, &cs);
	if (!r)
		r = assign(opt, tr, &cs);
	if (tr->n)
		qsort(tr->v, tr->n, sizeof(*tr->v), by_id);
	for (size_t i = 0; i < tr->n && !r; i++)
		if (wanted(opt, tr->v[i]->e.id))
			r = explain_one(&x, tr->v[i], &cs);
	if (!r)
		summary(&x);
	free(cs.c);
	by_sender_free(&x.senders);
	free(x.own.a);
	free(x.local);
	free(x.w);
	return r;
}
