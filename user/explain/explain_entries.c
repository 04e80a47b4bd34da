// SPDX-License-Identifier: GPL-2.0
/*
 * The traced entries, read into the loader's own model (struct amp_entry
 * and struct entry_costs): from `amptrace trace -j` lines, from a record
 * file, or from `amptrace report` as it reads its record.  Each keeps only
 * the page runs it uses, as the ledger holds entries.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util.h"
#include "explain/explain_entries.h"
#include "sink/bill.h"
#include "sink/record.h"
#include "sys/devstat.h"
#include "sys/presets.h"

/* ------------------------------------------------------------ the list --- */

static struct xentry *xtrace_add(struct xtrace *tr, const struct amp_entry *e,
				 const struct entry_costs *c, __u64 realtime_us)
{
	__u32 runs = e->nr_runs < AMP_SCATTER_MAX ? e->nr_runs : AMP_SCATTER_MAX;
	size_t len = offsetof(struct amp_entry, runs) + runs * sizeof(struct amp_page_run);
	struct xentry *x;

	if (amp_grow(&tr->v, &tr->cap, tr->n + 1, sizeof(*tr->v)))
		return NULL;
	x = calloc(1, offsetof(struct xentry, e) + len);
	if (!x)
		return NULL;
	memcpy(&x->e, e, len);
	x->e.nr_runs = runs;
	x->c = *c;
	if (c->sender) {	/* a copy: the caller's is gone after this entry */
		x->sender = *c->sender;
		x->c.sender = &x->sender;
	}
	x->realtime_us = realtime_us;
	for (int i = 0; i < AMP_SCATTER_MAX; i++)
		x->file[i] = -1;
	tr->v[tr->n++] = x;
	return x;
}

void xtrace_free(struct xtrace *tr)
{
	for (size_t i = 0; i < tr->n; i++)
		free(tr->v[i]);
	free(tr->v);
	memset(tr, 0, sizeof(*tr));
}

void xentry_time(const struct xentry *x, char *buf, size_t len)
{
	time_t sec = x->realtime_us / 1000000;
	struct tm tm;
	size_t n;

	gmtime_r(&sec, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%06lluZ", (unsigned long long)(x->realtime_us % 1000000));
}

/* Which journal file run i lies in: by (dev, ino) as stat() has them, or
 * by path (the trace's name for the file, or NULL). */
static void locate(struct xentry *x, __u32 i, const struct explain_opts *opt, const char *path)
{
	const struct amp_page_run *r = &x->e.runs[i];

	x->file[i] = xrun_meta(r) ? -1 :
		explain_file_of(opt, kdev_major(r->dev), kdev_minor(r->dev), r->ino, path);
}

void xtrace_locate(struct xtrace *tr, const struct explain_opts *opt)
{
	for (size_t i = 0; i < tr->n; i++) {
		struct xentry *x = tr->v[i];

		for (__u32 k = 0; k < x->e.nr_runs; k++)
			locate(x, k, opt, tr->path ? tr->path(tr->path_ctx, x->e.runs[k].dev,
							      x->e.runs[k].ino, x->e.pid) : NULL);
	}
}

/* ---------------------------------------------------- from a record --- */

/* On the trace's start clock (µs): boot time and the offset at the start. */
static __u64 start_clock_us(const struct xtrace *tr, __u64 boot_ns)
{
	return ((__s64)boot_ns + tr->clock.boot_to_real_ns) / 1000;
}

static void sink_entry_cb(void *self, const struct amp_entry *e, const struct entry_costs *c)
{
	struct xtrace *tr = self;
	struct xentry *x = xtrace_add(tr, e, c, wall_clock_real_ns(tr->src, e->start_ns) / 1000);

	if (!x)
		amp_err("explain: out of memory");
	else
		x->at_us = start_clock_us(tr, e->start_ns);
}

/* clock: the record's, valid while its entries come. */
struct sink xtrace_sink(struct xtrace *tr, const struct wall_clock *clock, amp_path_fn path,
		       void *ctx)
{
	static const struct sink_ops ops = { .entry = sink_entry_cb };

	tr->src = clock;
	tr->clock = *clock;	/* the start: the header's */
	tr->have_clock = true;
	tr->path = path;
	tr->path_ctx = ctx;
	return (struct sink){ .ops = &ops, .self = tr };
}

static int load_record(struct xtrace *tr, const struct explain_opts *opt, const char *path)
{
	struct record_reader *rr = record_open(path);
	struct record_item it;
	enum record_status st;
	struct sink k;

	if (!rr)
		return -1;
	k = xtrace_sink(tr, record_clock(rr), record_path, rr);
	while ((st = record_next(rr, &it)) == RECORD_MORE)
		if (it.type == RECORD_ENTRY)
			sink_entry(&k, &it.entry, &it.costs);
	if (st == RECORD_CORRUPT)
		amp_err("%s: corrupt record %s", path, record_problem(rr));
	else if (st == RECORD_TRUNCATED)
		fprintf(stderr, "%s: %s: truncated %s: %zu entries read\n", amp_prog, path,
			record_problem(rr), tr->n);
	if (st != RECORD_CORRUPT)
		xtrace_locate(tr, opt);
	record_close(rr);
	return st == RECORD_CORRUPT ? -1 : 0;
}

/* -------------------------------------------------- from trace -j lines --- */

static bool get_u64(json_object *o, const char *k, __u64 *v)
{
	json_object *x;

	if (!json_object_object_get_ex(o, k, &x) ||
	    !(json_object_is_type(x, json_type_int) || json_object_is_type(x, json_type_double)))
		return false;
	*v = json_object_get_uint64(x);
	return true;
}

static bool get_i64(json_object *o, const char *k, int64_t *v)
{
	json_object *x;

	if (!json_object_object_get_ex(o, k, &x) || !json_object_is_type(x, json_type_int))
		return false;
	*v = json_object_get_int64(x);
	return true;
}

static const char *get_str(json_object *o, const char *k)
{
	json_object *x;

	if (!json_object_object_get_ex(o, k, &x) || !json_object_is_type(x, json_type_string))
		return NULL;
	return json_object_get_string(x);
}

/* "2024-05-01T15:00:58.580123Z" -> microseconds since the epoch. */
static bool parse_time(const char *s, __u64 *us)
{
	struct tm tm = { 0 };
	const char *p = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	__u64 frac = 0;
	int digits = 0;
	time_t t;

	if (!p)
		return false;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (digits < 6) {
				frac = frac * 10 + (*p - '0');
				digits++;
			}
	for (; digits < 6; digits++)
		frac *= 10;
	if (*p != 'Z' || p[1])
		return false;
	t = timegm(&tm);
	if (t < 0)
		return false;
	*us = (__u64)t * 1000000 + frac;
	return true;
}

/* One "entry" line into e and c, its run paths into paths[]: 0 or -1. */
/* An entry's "sender" object (report.c's sender_json), if it has one. */
static void parse_sender(json_object *o, struct entry_costs *c, struct sender *w)
{
	json_object *j;
	const char *how;
	__u64 v;

	if (!json_object_object_get_ex(o, "sender", &j) || !(how = get_str(j, "how")))
		return;
	memset(w, 0, sizeof(*w));
	w->state = SENDER_NR_STATES;
	for (int k = 0; k < SENDER_NR_STATES; k++)
		if (!strcmp(how, sender_state_names[k]))
			w->state = k;
	if (w->state == SENDER_NR_STATES)
		return;		/* from a newer amptrace: not known here */
	w->pid = get_u64(j, "pid", &v) ? v : 0;
	w->uid = get_u64(j, "uid", &v) ? v : (__u32)-1;
	snprintf(w->comm, sizeof(w->comm), "%s", get_str(j, "comm") ?: "");
	snprintf(w->cgroup, sizeof(w->cgroup), "%s", get_str(j, "cgroup") ?: "");
	snprintf(w->unit, sizeof(w->unit), "%s", get_str(j, "unit") ?: "");
	snprintf(w->container, sizeof(w->container), "%s", get_str(j, "container") ?: "");
	c->sender = w;
}

static int parse_entry(json_object *o, struct amp_entry *e, struct entry_costs *c,
		       __u64 *rt, const char **paths)
{
	static struct sender parsed_sender;	/* xtrace_add() keeps a copy */
	__u64 v, dirtied, written;
	json_object *sc, *db, *x;
	const char *s;
	bool settled;
	int64_t i64;
	size_t n;

	memset(e, 0, sizeof(*e));
	memset(c, 0, sizeof(*c));
	e->type = AMP_REC_ENTRY;
	if (!get_u64(o, "id", &v))
		return -1;
	e->id = v;
	if (!get_u64(o, "boot_ns", &v) || !(s = get_str(o, "time")) || !parse_time(s, rt) ||
	    !get_u64(o, "pages_dirtied", &v) ||
	    !json_object_object_get_ex(o, "dev_bytes", &db) ||
	    !json_object_object_get_ex(o, "scatter", &sc) ||
	    !json_object_is_type(sc, json_type_array))
		return -1;
	e->pages_dirtied = v;
	get_u64(o, "boot_ns", &v);
	e->start_ns = v;
	if (!get_u64(db, "data", &v))
		return -1;
	e->dev_bytes[AMP_CLASS_DATA] = v;
	if (!get_u64(db, "metadata", &v))
		return -1;
	e->dev_bytes[AMP_CLASS_METADATA] = v;
	snprintf(e->comm, sizeof(e->comm), "%s", get_str(o, "comm") ?: "?");
	e->syscall_nr = syscall_nr(get_str(o, "syscall") ?: "?");
	if (get_i64(o, "pid", &i64))
		e->pid = i64;
	if (get_i64(o, "tid", &i64))
		e->tid = i64;
	if (get_i64(o, "bytes", &i64))
		e->bytes = i64;
	if (get_u64(o, "scatter_dropped", &v))
		e->runs_dropped = v;
	if (get_u64(o, "ios", &v))
		e->ios = v;
	parse_sender(o, c, &parsed_sender);	/* absent in older traces */
	get_u64(db, "journal", &c->journal);	/* absent in older traces */
	get_u64(db, "window", &c->window);
	/* btrfs entries only (part of metadata above). */
	if (json_object_object_get_ex(o, "btrfs_trees", &x))
		for (int k = 0; k < AMP_BTRFS_TREES; k++)
			get_u64(x, btrfs_tree_names[k], &c->btrfs_tree[k]);
	/* Settled is every dirtied folio written; a trace has both counts
	 * (older ones only "settled"). */
	settled = json_object_object_get_ex(o, "settled", &x) && json_object_get_boolean(x);
	if (get_u64(o, "folios_dirtied", &dirtied) && get_u64(o, "folios_written", &written)) {
		e->folios_dirtied = dirtied;
		e->folios_written = written;
	} else {
		e->folios_dirtied = !settled;
	}
	n = json_object_array_length(sc);
	if (n > AMP_SCATTER_MAX)
		return -1;
	e->nr_runs = n;
	for (size_t i = 0; i < n; i++) {
		json_object *r = json_object_array_get_idx(sc, i), *w;
		struct amp_page_run *run = &e->runs[i];
		const char *dev = get_str(r, "dev"), *kind = get_str(r, "kind");
		unsigned maj, min;
		__u64 np;

		if (!dev || sscanf(dev, "%u:%u", &maj, &min) != 2 ||
		    !get_u64(r, "ino", &run->ino) || !get_u64(r, "page", &v) ||
		    !get_u64(r, "npages", &np) || np > 0xffff)
			return -1;
		run->dev = (maj << 20) | min;
		run->index = v;
		run->npages = np;
		run->kind = kind && !strcmp(kind, "metadata") ? AMP_PAGE_META : AMP_PAGE_FILE;
		run->written = json_object_object_get_ex(r, "written", &w) &&
			       json_object_get_boolean(w);
		paths[i] = get_str(r, "path");
	}
	return 0;
}

/* The summary's "clock": the start's offset, and the boot's identity for
 * the journal's monotonic stamps. */
static void parse_clock(struct xtrace *tr, json_object *summary)
{
	json_object *c, *x;
	__s64 real, mono = 0;
	__u8 id[16];
	const char *hex;
	bool boot = false;

	if (!json_object_object_get_ex(summary, "clock", &c) ||
	    !json_object_object_get_ex(c, "boot_to_real_ns", &x))
		return;
	real = json_object_get_int64(x);
	if (json_object_object_get_ex(c, "boot_to_mono_ns", &x) && (hex = get_str(c, "boot_id")) &&
	    strlen(hex) == 32) {
		mono = json_object_get_int64(x);
		boot = true;
		for (int i = 0; i < 16 && boot; i++)
			boot = sscanf(hex + 2 * i, "%2hhx", &id[i]) == 1;
	}
	wall_clock_set(&tr->clock, real, mono, boot ? id : NULL);
	tr->have_clock = true;
}

static int load_json(struct xtrace *tr, const struct explain_opts *opt, const char *path, FILE *f)
{
	static struct amp_entry e;
	const char *paths[AMP_SCATTER_MAX];
	struct entry_costs c;
	char *line = NULL;
	size_t cap = 0;
	int lineno = 0, err = 0;
	__u64 rt;

	while (!err && getline(&line, &cap, f) > 0) {
		json_object *o;
		const char *type;

		lineno++;
		if (line[0] == '\n')
			continue;
		o = json_tokener_parse(line);
		if (!o || !json_object_is_type(o, json_type_object)) {
			amp_err("%s:%d: not a JSON object (expected `amptrace trace -j` output)",
				path, lineno);
			err = -1;
		} else if ((type = get_str(o, "type")) && !strcmp(type, "entry")) {
			struct xentry *x;

			if (parse_entry(o, &e, &c, &rt, paths)) {
				amp_err("%s:%d: entry record lacks id, time, boot_ns, pages_dirtied, "
					"dev_bytes or a valid scatter list", path, lineno);
				err = -1;
			} else if (!(x = xtrace_add(tr, &e, &c, rt))) {
				err = -ENOMEM;
			} else {
				/* The paths live in o: find the files now. */
				for (__u32 i = 0; i < x->e.nr_runs; i++)
					locate(x, i, opt, paths[i]);
			}
		} else if (type && !strcmp(type, "summary")) {
			parse_clock(tr, o);
		}
		json_object_put(o);
	}
	free(line);
	/* Matched on the start clock where the summary gave it, else on the
	 * times printed (a trace from before it). */
	for (size_t i = 0; i < tr->n; i++)
		tr->v[i]->at_us = tr->have_clock ? start_clock_us(tr, tr->v[i]->e.start_ns)
						 : tr->v[i]->realtime_us;
	return err;
}

int xtrace_load(struct xtrace *tr, const struct explain_opts *opt, const char *path)
{
	FILE *f = fopen(path, "r");
	char magic[8];
	int err;

	memset(tr, 0, sizeof(*tr));
	if (!f) {
		amp_err("cannot read trace %s: %s", path, strerror(errno));
		return -1;
	}
	if (fread(magic, 1, sizeof(magic), f) == sizeof(magic) &&
	    !memcmp(magic, RECORD_MAGIC, sizeof(magic))) {
		fclose(f);
		err = load_record(tr, opt, path);
	} else {
		rewind(f);
		err = load_json(tr, opt, path, f);
		fclose(f);
	}
	if (!err && !tr->n) {
		amp_err("%s: no entry records", path);
		err = -1;
	}
	return err;
}
