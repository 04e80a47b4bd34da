// SPDX-License-Identifier: GPL-2.0
/*
 * `amptrace explain --trace`: load a recorded trace and match its entries
 * to the journal entries journald wrote during them.
 *
 * journald stamps an entry with the time its event loop woke up
 * (sd_event_now), before the receive or read that brought the message, and
 * handles one event per wake-up.  So journal entries stamped t belong to
 * the first traced syscall that starts in [t, t'), t' being the next stamp
 * seen: the one that brought them.  If none does, they came with no traced
 * syscall (journald's own messages, or kernel ones when /dev/kmsg reads are
 * not traced) and their pages went to the entry open at t: the last traced
 * syscall before t.
 */
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "explain.h"
#include "loader.h"

static bool get_u64(json_object *o, const char *k, uint64_t *v)
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
static bool parse_time(const char *s, uint64_t *us)
{
	struct tm tm = { 0 };
	const char *p = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	uint64_t frac = 0;
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
	*us = (uint64_t)t * 1000000 + frac;
	return true;
}

static int file_of(const struct explain_opts *opt, unsigned maj, unsigned min, uint64_t ino,
		   const char *path)
{
	for (int i = 0; i < opt->nr_files; i++) {
		const struct xfile *x = &opt->files[i];
		char real[PATH_MAX];

		if (x->ino == ino && x->dev_major == maj && x->dev_minor == min)
			return i;
		if (path && (!strcmp(path, x->path) ||
			     (realpath(x->path, real) && !strcmp(path, real))))
			return i;
	}
	return -1;
}

static int parse_entry(const struct explain_opts *opt, json_object *o, struct tentry *t)
{
	json_object *sc, *db;
	const char *s;

	memset(t, 0, sizeof(*t));
	if (!get_u64(o, "id", &t->id) || !get_u64(o, "boot_ns", &t->boot_ns) ||
	    !(s = get_str(o, "time")) || !parse_time(s, &t->realtime_us) ||
	    !get_u64(o, "pages_dirtied", &t->pages_dirtied) ||
	    !json_object_object_get_ex(o, "dev_bytes", &db) ||
	    !get_u64(db, "data", &t->dev_data) || !get_u64(db, "metadata", &t->dev_meta) ||
	    !json_object_object_get_ex(o, "scatter", &sc) ||
	    !json_object_is_type(sc, json_type_array))
		return -1;
	snprintf(t->time, sizeof(t->time), "%s", s);
	snprintf(t->comm, sizeof(t->comm), "%s", get_str(o, "comm") ?: "?");
	snprintf(t->syscall, sizeof(t->syscall), "%s", get_str(o, "syscall") ?: "?");
	get_i64(o, "pid", &t->pid);
	get_i64(o, "tid", &t->tid);
	get_i64(o, "bytes", &t->bytes);
	get_u64(o, "scatter_dropped", &t->dropped);
	get_u64(db, "journal", &t->dev_journal);	/* absent in older traces */
	get_u64(db, "window", &t->dev_window);
	if (json_object_object_get_ex(o, "settled", &db))
		t->settled = json_object_get_boolean(db);
	t->nr_runs = json_object_array_length(sc);
	t->runs = calloc(t->nr_runs ? t->nr_runs : 1, sizeof(*t->runs));
	if (!t->runs)
		return -1;
	for (int i = 0; i < t->nr_runs; i++) {
		json_object *r = json_object_array_get_idx(sc, i), *w;
		struct run *run = &t->runs[i];
		const char *dev = get_str(r, "dev"), *kind = get_str(r, "kind");
		uint64_t np;

		if (!dev || sscanf(dev, "%u:%u", &run->maj, &run->min) != 2 ||
		    !get_u64(r, "ino", &run->ino) || !get_u64(r, "page", &run->page) ||
		    !get_u64(r, "npages", &np) || np > 1u << 20)
			return -1;
		run->npages = np;
		run->meta = kind && !strcmp(kind, "metadata");
		run->written = json_object_object_get_ex(r, "written", &w) &&
			       json_object_get_boolean(w);
		run->file = run->meta ? -1 : file_of(opt, run->maj, run->min, run->ino,
						     get_str(r, "path"));
	}
	return 0;
}

bool wanted(const struct explain_opts *opt, uint64_t id)
{
	if (!opt->nr_ids)
		return true;
	for (int i = 0; i < opt->nr_ids; i++)
		if (opt->ids[i] == id)
			return true;
	return false;
}

int load_trace(const struct explain_opts *opt, struct trace *tr)
{
	FILE *f = fopen(opt->trace, "r");
	char *line = NULL;
	size_t cap = 0;
	int lineno = 0, err = 0;

	if (!f) {
		amp_err("cannot read trace %s: %s", opt->trace, strerror(errno));
		return -1;
	}
	memset(tr, 0, sizeof(*tr));
	while (!err && getline(&line, &cap, f) > 0) {
		json_object *o;
		const char *type;

		lineno++;
		if (line[0] == '\n')
			continue;
		o = json_tokener_parse(line);
		if (!o || !json_object_is_type(o, json_type_object)) {
			amp_err("%s:%d: not a JSON object (expected `amptrace trace -j` output)",
				opt->trace, lineno);
			err = -1;
		} else if ((type = get_str(o, "type")) && !strcmp(type, "entry")) {
			if (tr->n == tr->cap) {
				int c = tr->cap ? 2 * tr->cap : 256;
				struct tentry *e = realloc(tr->e, c * sizeof(*e));

				if (!e) {
					err = -ENOMEM;
					json_object_put(o);
					break;
				}
				tr->e = e;
				tr->cap = c;
			}
			if (parse_entry(opt, o, &tr->e[tr->n])) {
				free(tr->e[tr->n].runs);
				amp_err("%s:%d: entry record lacks id, time, boot_ns, pages_dirtied, "
					"dev_bytes or a valid scatter list", opt->trace, lineno);
				err = -1;
			} else {
				tr->n++;
			}
		}
		json_object_put(o);
	}
	free(line);
	fclose(f);
	if (!err && !tr->n) {
		amp_err("%s: no entry records", opt->trace);
		err = -1;
	}
	return err;
}

int trace_by_id(const void *a, const void *b)
{
	const struct tentry *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* The journald processes: those whose entries dirtied a given file (all
 * entries, if none did).  Only their entries are matched to journal ones. */
void mark_writers(struct trace *tr)
{
	int64_t pids[64];
	int np = 0;

	/* The pids that dirtied a given file: journald instances, a few. */
	for (int i = 0; i < tr->n; i++)
		for (int k = 0; k < tr->e[i].nr_runs; k++) {
			int p = 0;

			if (tr->e[i].runs[k].file < 0)
				continue;
			while (p < np && pids[p] != tr->e[i].pid)
				p++;
			if (p == np && np < 64)
				pids[np++] = tr->e[i].pid;
			break;
		}
	for (int i = 0; i < tr->n; i++) {
		tr->e[i].writer = !np;
		for (int p = 0; p < np && !tr->e[i].writer; p++)
			tr->e[i].writer = tr->e[i].pid == pids[p];
	}
}

/* -------------------------------------------------------- candidates --- */

static int cand_cb(struct jf *f, const struct jf_object *o, void *ctx)
{
	struct cands *cs = ctx;

	(void)f;
	if (o->type != JF_ENTRY)
		return 0;
	if (o->entry.realtime >= cs->lo && o->entry.realtime < cs->hi) {
		if (cs->n == cs->cap) {
			size_t cap = cs->cap ? 2 * cs->cap : 256;
			struct cand *c = realloc(cs->c, cap * sizeof(*c));

			if (!c)
				return -ENOMEM;
			cs->c = c;
			cs->cap = cap;
		}
		cs->c[cs->n++] = (struct cand){ cs->file, o->offset, cs->last_entry,
						o->entry.realtime, o->entry.seqnum, UINT64_MAX,
						false, "" };
	}
	cs->last_entry = o->offset;
	return 0;
}

static int by_realtime(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->realtime != y->realtime)
		return x->realtime < y->realtime ? -1 : 1;
	if (x->file != y->file)
		return x->file - y->file;
	return x->seqnum < y->seqnum ? -1 : x->seqnum > y->seqnum;
}

int find_candidates(struct explain_opts *opt, const struct trace *tr, struct cands *cs)
{
	uint64_t win = opt->window * 1e6;

	memset(cs, 0, sizeof(*cs));
	cs->lo = UINT64_MAX;
	for (int i = 0; i < tr->n; i++) {
		if (!tr->e[i].writer)
			continue;
		if (tr->e[i].realtime_us < cs->lo)
			cs->lo = tr->e[i].realtime_us;
		if (tr->e[i].realtime_us > cs->hi)
			cs->hi = tr->e[i].realtime_us;
	}
	cs->lo = cs->lo > win ? cs->lo - win : 0;
	cs->hi += win + 1;
	for (int i = 0; i < opt->nr_files; i++) {
		int r;

		cs->file = i;
		cs->last_entry = 0;
		r = jf_build_index(&opt->files[i].jf, cand_cb, cs);
		if (r)
			return xfile_error(&opt->files[i], r);
	}
	qsort(cs->c, cs->n, sizeof(*cs->c), by_realtime);
	return 0;
}

/* The entry's _TRANSPORT value (journal, syslog, stdout, kernel, driver...). */
static int transport(struct jf *f, uint64_t off, char *buf, size_t len)
{
	struct jf_object e, d;
	int r = jf_object(f, off, JF_ENTRY, &e);

	buf[0] = 0;
	for (uint64_t i = 0; !r && i < e.entry.n_items; i++) {
		const uint8_t *p;
		size_t n;

		r = jf_follow(f, off, "an item of ENTRY", jf_entry_item(f, &e, i), JF_DATA, &d);
		if (r || d.flags || d.data.payload_size < 11)
			continue;
		p = f->map + d.data.payload_offset;
		if (memcmp(p, "_TRANSPORT=", 11))
			continue;
		n = d.data.payload_size - 11 < len - 1 ? d.data.payload_size - 11 : len - 1;
		for (size_t k = 0; k < n; k++)
			buf[k] = p[11 + k] > 0x20 && p[11 + k] < 0x7f ? p[11 + k] : '?';
		buf[n] = 0;
		break;
	}
	return r;
}

static int by_start(const void *a, const void *b)
{
	const struct tentry *x = *(struct tentry *const *)a, *y = *(struct tentry *const *)b;

	if (x->realtime_us != y->realtime_us)
		return x->realtime_us < y->realtime_us ? -1 : 1;
	return x->boot_ns < y->boot_ns ? -1 : x->boot_ns > y->boot_ns;
}

static int by_owner(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->owner != y->owner)
		return x->owner < y->owner ? -1 : 1;
	if (x->file != y->file)
		return x->file - y->file;
	return x->seqnum < y->seqnum ? -1 : x->seqnum > y->seqnum;
}

/* Give each journal entry to the traced entry whose pages it dirtied (see
 * the top of this file), then group them by trace entry id. */
int assign(struct explain_opts *opt, const struct trace *tr, struct cands *cs)
{
	uint64_t win = opt->window * 1e6;
	struct tentry **v = malloc((tr->n ? tr->n : 1) * sizeof(*v));
	int n = 0;

	if (!v)
		return -ENOMEM;
	for (int i = 0; i < tr->n; i++)
		if (tr->e[i].writer)
			v[n++] = &tr->e[i];
	qsort(v, n, sizeof(*v), by_start);
	for (size_t i = 0, next = 0; i < cs->n; i++) {
		struct cand *c = &cs->c[i];
		int lo = 0, hi = n, r;
		uint64_t t_next;

		r = transport(&opt->files[c->file].jf, c->off, c->transport, sizeof(c->transport));
		if (r) {
			free(v);
			return xfile_error(&opt->files[c->file], r);
		}
		/* The next wake-up seen: the first later stamp (cs->c is sorted). */
		if (next <= i)
			for (next = i + 1; next < cs->n && cs->c[next].realtime == c->realtime; next++)
				;
		t_next = next < cs->n ? cs->c[next].realtime : UINT64_MAX;
		/* lo = first traced syscall starting at or after the stamp */
		while (lo < hi) {
			int mid = (lo + hi) / 2;

			if (v[mid]->realtime_us < c->realtime)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < n && v[lo]->realtime_us < t_next && v[lo]->realtime_us - c->realtime <= win) {
			c->owner = v[lo]->id;
			c->received = true;
		} else if (lo > 0 && (lo < n || c->realtime - v[lo - 1]->realtime_us <= win)) {
			c->owner = v[lo - 1]->id;	/* written in the open entry */
		}
	}
	free(v);
	qsort(cs->c, cs->n, sizeof(*cs->c), by_owner);
	return 0;
}
