// SPDX-License-Identifier: GPL-2.0
/*
 * `amptrace explain --trace`: match the traced entries to the journal
 * entries journald wrote during them.
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
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "explain/explain_match.h"

bool wanted(const struct explain_opts *opt, uint64_t id)
{
	if (!opt->nr_ids)
		return true;
	for (int i = 0; i < opt->nr_ids; i++)
		if (opt->ids[i] == id)
			return true;
	return false;
}

void mark_writers(struct xtrace *tr)
{
	__u32 pids[64];
	int np = 0;

	/* The pids that dirtied a given file: journald instances, a few. */
	for (size_t i = 0; i < tr->n; i++)
		for (__u32 k = 0; k < tr->v[i]->e.nr_runs; k++) {
			int p = 0;

			if (tr->v[i]->file[k] < 0)
				continue;
			while (p < np && pids[p] != tr->v[i]->e.pid)
				p++;
			if (p == np && np < 64)
				pids[np++] = tr->v[i]->e.pid;
			break;
		}
	for (size_t i = 0; i < tr->n; i++) {
		tr->v[i]->writer = !np;
		for (int p = 0; p < np && !tr->v[i]->writer; p++)
			tr->v[i]->writer = tr->v[i]->e.pid == pids[p];
	}
}

/* -------------------------------------------------------- candidates --- */

/*
 * A journal entry's stamp on the trace's start clock (µs).  journald takes
 * its realtime and monotonic stamps at the same wake-up; the monotonic one,
 * of the traced boot, is the boot clock less the time suspended, and no
 * step of the wall clock moves it.  An entry of another boot, or a trace
 * that did not keep its boot, is matched by its realtime stamp.
 */
static uint64_t cand_at(const struct xtrace *tr, const struct jf_object *o)
{
	const struct wall_clock *c = &tr->clock;

	if (!tr->have_clock || !c->have_boot ||
	    memcmp(o->entry.boot_id, c->boot_id, sizeof(c->boot_id)))
		return o->entry.realtime;
	return ((__s64)o->entry.monotonic * 1000 + c->boot_to_mono_ns + c->boot_to_real_ns) / 1000;
}

static int cand_cb(struct jf *f, const struct jf_object *o, void *ctx)
{
	struct cands *cs = ctx;
	uint64_t at;

	(void)f;
	if (o->type != JF_ENTRY)
		return 0;
	at = cand_at(cs->tr, o);
	if (at >= cs->lo && at < cs->hi) {
		if (amp_grow(&cs->c, &cs->cap, cs->n + 1, sizeof(*cs->c)))
			return -ENOMEM;
		cs->c[cs->n++] = (struct cand){ cs->file, o->offset, cs->last_entry,
						at, o->entry.seqnum, UINT64_MAX,
						false, "", 0 };
	}
	cs->last_entry = o->offset;
	return 0;
}

static int by_stamp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	if (x->file != y->file)
		return x->file - y->file;
	return x->seqnum < y->seqnum ? -1 : x->seqnum > y->seqnum;
}

int find_candidates(struct explain_opts *opt, const struct xtrace *tr, struct cands *cs)
{
	uint64_t win = opt->window * 1e6;

	memset(cs, 0, sizeof(*cs));
	cs->tr = tr;
	cs->lo = UINT64_MAX;
	for (size_t i = 0; i < tr->n; i++) {
		if (!tr->v[i]->writer)
			continue;
		if (tr->v[i]->at_us < cs->lo)
			cs->lo = tr->v[i]->at_us;
		if (tr->v[i]->at_us > cs->hi)
			cs->hi = tr->v[i]->at_us;
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
	qsort(cs->c, cs->n, sizeof(*cs->c), by_stamp);
	return 0;
}

/* The entry's _TRANSPORT value (journal, syslog, stdout, kernel, driver...)
 * and its _PID (0 if none): what journald knew of its sender. */
static int transport(struct jf *f, uint64_t off, struct cand *c)
{
	struct jf_object e, d;
	int r = jf_object(f, off, JF_ENTRY, &e);
	size_t len = sizeof(c->transport);

	c->transport[0] = 0;
	c->pid = 0;
	for (uint64_t i = 0; !r && i < e.entry.n_items; i++) {
		const uint8_t *p;
		size_t n;

		r = jf_follow(f, off, "an item of ENTRY", jf_entry_item(f, &e, i), JF_DATA, &d);
		if (r || d.flags || d.data.payload_size < 5)
			continue;
		p = f->map + d.data.payload_offset;
		if (!memcmp(p, "_PID=", 5)) {
			for (size_t k = 5; k < d.data.payload_size && k < 15 && p[k] >= '0' &&
			     p[k] <= '9'; k++)
				c->pid = c->pid * 10 + (p[k] - '0');
			continue;
		}
		if (d.data.payload_size < 11 || memcmp(p, "_TRANSPORT=", 11))
			continue;
		n = d.data.payload_size - 11 < len - 1 ? d.data.payload_size - 11 : len - 1;
		for (size_t k = 0; k < n; k++)
			c->transport[k] = p[11 + k] > 0x20 && p[11 + k] < 0x7f ? p[11 + k] : '?';
		c->transport[n] = 0;
	}
	return r;
}

static int by_start(const void *a, const void *b)
{
	const struct xentry *x = *(struct xentry *const *)a, *y = *(struct xentry *const *)b;

	if (x->at_us != y->at_us)
		return x->at_us < y->at_us ? -1 : 1;
	return x->e.start_ns < y->e.start_ns ? -1 : x->e.start_ns > y->e.start_ns;
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
int assign(struct explain_opts *opt, const struct xtrace *tr, struct cands *cs)
{
	uint64_t win = opt->window * 1e6;
	struct xentry **v = malloc((tr->n ? tr->n : 1) * sizeof(*v));
	int n = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < tr->n; i++)
		if (tr->v[i]->writer)
			v[n++] = tr->v[i];
	qsort(v, n, sizeof(*v), by_start);
	for (size_t i = 0, next = 0; i < cs->n; i++) {
		struct cand *c = &cs->c[i];
		int lo = 0, hi = n, r;
		uint64_t t_next;

		r = transport(&opt->files[c->file].jf, c->off, c);
		if (r) {
			free(v);
			return xfile_error(&opt->files[c->file], r);
		}
		/* The next wake-up seen: the first later stamp (cs->c is sorted). */
		if (next <= i)
			for (next = i + 1; next < cs->n && cs->c[next].at == c->at; next++)
				;
		t_next = next < cs->n ? cs->c[next].at : UINT64_MAX;
		/* lo = first traced syscall starting at or after the stamp */
		while (lo < hi) {
			int mid = (lo + hi) / 2;

			if (v[mid]->at_us < c->at)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < n && v[lo]->at_us < t_next && v[lo]->at_us - c->at <= win) {
			c->owner = v[lo]->e.id;
			c->received = true;
		} else if (lo > 0 && (lo < n || c->at - v[lo - 1]->at_us <= win)) {
			c->owner = v[lo - 1]->e.id;	/* written in the open entry */
		}
	}
	free(v);
	qsort(cs->c, cs->n, sizeof(*cs->c), by_owner);
	return 0;
}
