// SPDX-License-Identifier: GPL-2.0
/*
 * Entries the kernel reported before their folios were written.
 *
 * The kernel sends an entry when its thread moves on; if the entry dirtied
 * folios, their device bytes come later, in one struct amp_settle, when
 * the last of them is written.  Held here, compact (only the scatter slots
 * in use), until then: at 100k entries/s tens of thousands wait at once.
 */
#include <search.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "ledger/unsettled.h"

struct held_entry {
	__u64 id;		/* first: the tree compares ids */
	size_t len;		/* bytes of e in use */
	struct amp_entry e;	/* header + len's worth of runs[] */
};

/*
 * A file whose pages among the held entries the ledger asked for
 * (unsettled_file_pages): kept up to date from then on by each hold and
 * take, so that asking again costs no walk.  A few at a time, the oldest
 * replaced: the files kernel threads work for while their writers settle.
 */
#define WATCHED_FILES 8

struct watched_file {
	__u32 dev;
	__u64 ino;
	__u64 pages;		/* of the entries held now */
	__u64 last_id;		/* highest id of one with pages, held since */
};

struct unsettled {
	void *tree;		/* tsearch tree of struct held_entry *, by id */
	size_t count;
	struct watched_file watched[WATCHED_FILES];
	unsigned int nr_watched, next_watched;
};

static int cmp_id(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

struct unsettled *unsettled_new(void)
{
	return calloc(1, sizeof(struct unsettled));
}

/* Pages of file (dev, ino) in the first n of e's scatter slots. */
static __u64 runs_file_pages(const struct amp_entry *e, __u32 n, __u32 dev, __u64 ino)
{
	__u64 pages = 0;

	for (__u32 i = 0; i < n; i++)
		if (e->runs[i].ino == ino && e->runs[i].dev == dev &&
		    e->runs[i].kind == AMP_PAGE_FILE)
			pages += e->runs[i].npages;
	return pages;
}

__u64 entry_file_pages(const struct amp_entry *e, __u32 dev, __u64 ino)
{
	return runs_file_pages(e, e->nr_runs < AMP_SCATTER_MAX ? e->nr_runs : AMP_SCATTER_MAX,
			       dev, ino);
}

/* The scatter slots h holds: as many as the kernel sent, whatever nr_runs
 * says. */
static __u32 held_runs(const struct held_entry *h)
{
	size_t sent = (h->len - offsetof(struct amp_entry, runs)) / sizeof(h->e.runs[0]);
	__u32 n = h->e.nr_runs < AMP_SCATTER_MAX ? h->e.nr_runs : AMP_SCATTER_MAX;

	return n < sent ? n : sent;
}

/* h's pages of w's file, into w's count (sign 1) or out of it (-1). */
static void watched_add(struct watched_file *w, const struct held_entry *h, int sign)
{
	__u64 pages = runs_file_pages(&h->e, held_runs(h), w->dev, w->ino);

	if (!pages)
		return;
	if (sign > 0) {
		w->pages += pages;
		if (h->id > w->last_id)
			w->last_id = h->id;
	} else {
		w->pages -= pages < w->pages ? pages : w->pages;
	}
}

/* Keep e (len bytes, as the kernel sent it) until its settlement. */
int unsettled_hold(struct unsettled *u, const struct amp_entry *e, size_t len)
{
	struct held_entry *h = malloc(offsetof(struct held_entry, e) + len);
	void *node;

	if (!h)
		return -1;
	h->id = e->id;
	h->len = len;
	memcpy(&h->e, e, len);
	node = tsearch(h, &u->tree, cmp_id);
	if (!node) {
		free(h);
		return -1;
	}
	if (*(struct held_entry **)node != h) {	/* the same id twice: keep the first */
		free(h);
		return 0;
	}
	u->count++;
	for (unsigned int i = 0; i < u->nr_watched; i++)
		watched_add(&u->watched[i], h, 1);
	return 0;
}

/* The kernel-side totals into the entry they belong to. */
static void settle_into(struct amp_entry *e, const struct amp_settle *s)
{
	e->dev_bytes[AMP_CLASS_DATA] = s->dev_bytes[0];
	e->dev_bytes[AMP_CLASS_METADATA] = s->dev_bytes[1];
	e->dev_bytes[AMP_ENTRY_FAILED_SLOT] = s->failed_bytes;
	e->ios = s->ios;
	e->folios_written = s->folios_written;
	e->outstanding = s->outstanding;
	for (__u32 i = 0; i < e->nr_runs && i < AMP_SCATTER_MAX; i++)
		e->runs[i].written = (s->runs_written >> i) & 1;
	e->flags &= ~AMP_ENTRY_UNSETTLED;
}

/* Take one held entry out, widened to a whole struct amp_entry. */
static void take(struct unsettled *u, struct held_entry *h, struct amp_entry *out)
{
	tdelete(h, &u->tree, cmp_id);
	u->count--;
	for (unsigned int i = 0; i < u->nr_watched; i++)
		watched_add(&u->watched[i], h, -1);
	memset(out, 0, sizeof(*out));
	memcpy(out, &h->e, h->len);
	free(h);
}

/* The entry s settles, completed into out; false if none is held (its
 * record was lost, or the settle-timeout sweep reported it already). */
bool unsettled_settle(struct unsettled *u, const struct amp_settle *s, struct amp_entry *out)
{
	void *node = tfind(&s->id, &u->tree, cmp_id);

	if (!node)
		return false;
	take(u, *(struct held_entry **)node, out);
	settle_into(out, s);
	return true;
}

size_t unsettled_count(const struct unsettled *u)
{
	return u->count;
}

static void walk_file_pages(const void *node, VISIT which, void *arg)
{
	if (which == postorder || which == leaf)	/* each node once */
		watched_add(arg, *(struct held_entry *const *)node, 1);
}

/* Watched: read off.  Else one walk of every held entry (~12 ms for
 * 300,000 of them here), and watched from then on, in place of the oldest. */
__u64 unsettled_file_pages(struct unsettled *u, __u32 dev, __u64 ino, __u64 *last_id)
{
	struct watched_file *w = NULL;

	for (unsigned int i = 0; i < u->nr_watched && !w; i++)
		if (u->watched[i].dev == dev && u->watched[i].ino == ino)
			w = &u->watched[i];
	if (!w) {
		if (u->nr_watched < WATCHED_FILES)
			u->nr_watched++;
		w = &u->watched[u->next_watched];
		u->next_watched = (u->next_watched + 1) % WATCHED_FILES;
		*w = (struct watched_file){ .dev = dev, .ino = ino };
		twalk_r(u->tree, walk_file_pages, w);
	}
	*last_id = w->last_id;
	return w->pages;
}

/* Any one held entry, taken out as it stands (its settlement never came);
 * false when none is left. */
bool unsettled_take_any(struct unsettled *u, struct amp_entry *out)
{
	struct held_entry *h;

	if (!u->tree)
		return false;
	h = *(struct held_entry **)u->tree;	/* the root */
	take(u, h, out);
	out->flags &= ~AMP_ENTRY_UNSETTLED;
	return true;
}

void unsettled_free(struct unsettled *u)
{
	if (!u)
		return;
	tdestroy(u->tree, free);
	free(u);
}
