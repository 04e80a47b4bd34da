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

struct unsettled {
	void *tree;		/* tsearch tree of struct held_entry *, by id */
	size_t count;
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
	return 0;
}

/* The kernel-side totals into the entry they belong to. */
static void settle_into(struct amp_entry *e, const struct amp_settle *s)
{
	e->dev_bytes[AMP_CLASS_DATA] = s->dev_bytes[0];
	e->dev_bytes[AMP_CLASS_METADATA] = s->dev_bytes[1];
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
