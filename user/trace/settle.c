// SPDX-License-Identifier: GPL-2.0
/*
 * The settlement of entries, between the ring buffer and the ledger.
 *
 * The kernel sends an entry when its thread moves on.  If its folios are
 * not all written yet it comes marked AMP_ENTRY_UNSETTLED and waits here
 * (ledger/unsettled.c) for one struct amp_settle, sent when its last folio
 * is written.  An entry whose folios never come (its file deleted or
 * truncated before write-back) is found by sweeping the kernel's slots,
 * read in place through the mapping: a slot is taken by exchanging its id
 * for 0, as the kernel frees it, so exactly one of the two reports it.
 */
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util.h"
#include "trace/settle.h"

struct settler {
	struct ledger *ledger;
	struct unsettled *held;		/* entries awaiting their AMP_REC_SETTLED */
	struct amp_settle *slots;	/* the kernel's `unsettled` array, mapped */
	size_t nr_slots;
	__u64 timeout_ns;
	void *timed_out;	/* tsearch set of ids reported by the sweep */
	__u64 entries_timed_out, late_records;
};

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

struct settler *settler_new(struct ledger *l, struct amp_settle *slots, size_t nr_slots,
			    int timeout_s)
{
	struct settler *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->held = unsettled_new();
	if (!st->held) {
		free(st);
		return NULL;
	}
	st->ledger = l;
	st->slots = slots;
	st->nr_slots = nr_slots;
	st->timeout_ns = timeout_s * 1000000000ULL;
	return st;
}

void settler_entry(struct settler *st, const struct amp_entry *e, size_t len)
{
	if (e->flags & AMP_ENTRY_UNSETTLED) {
		if (unsettled_hold(st->held, e, len) == 0)
			return;
		/* No memory to wait: report it as it stands. */
	}
	/* The kernel sends only the scatter slots in use: widen to a whole entry. */
	if (len < sizeof(*e)) {
		static struct amp_entry full;

		memset(&full, 0, sizeof(full));
		memcpy(&full, e, len);
		full.flags &= ~AMP_ENTRY_UNSETTLED;
		e = &full;
	}
	ledger_entry(st->ledger, e);
}

/* An entry's device-side totals came (or, drained, were taken from the
 * map): the entry is complete, on to the ledger. */
void settler_settled(struct settler *st, const struct amp_settle *s, bool drained)
{
	static struct amp_entry e;

	if (!unsettled_settle(st->held, s, &e)) {
		/* Already reported by the settle-timeout sweep: count, don't
		 * repeat.  (Otherwise its entry record was lost: ringbuf_drops.) */
		if (st->timed_out && tfind(&s->id, &st->timed_out, cmp_u64))
			st->late_records++;
		return;
	}
	if (drained)
		e.flags |= AMP_ENTRY_DRAINED;
	ledger_entry(st->ledger, &e);
}

/* A settlement due for the sweep: its entry's id and slot. */
struct stale_slot {
	__u64 id;	/* first: sorted by id */
	__u32 slot;
};

/* Is the settlement in this slot due: any at all, or one whose entry
 * closed more than --settle-timeout ago?  Returns its id, 0 if not. */
static __u64 slot_due(const struct amp_settle *s, bool all, __u64 now_ns, __u64 timeout_ns)
{
	__u64 id = __atomic_load_n(&s->id, __ATOMIC_ACQUIRE);
	__u64 closed_ns = __atomic_load_n(&s->closed_ns, __ATOMIC_RELAXED);

	if (!id || all)
		return id;
	/* closed_ns may be after now_ns: closed since the clock was read. */
	if (!closed_ns || closed_ns > now_ns || now_ns - closed_ns < timeout_ns)
		return 0;
	return id;
}

void settler_sweep(struct settler *st, bool all)
{
	struct stale_slot *due = NULL;
	size_t n = 0, cap = 0;
	__u64 now_ns;

	if (!st->slots)
		return;
	now_ns = clock_ns(CLOCK_BOOTTIME);
	for (size_t i = 0; i < st->nr_slots; i++) {
		__u64 id = slot_due(&st->slots[i], all, now_ns, st->timeout_ns);

		if (!id)
			continue;
		if (amp_grow(&due, &cap, n + 1, sizeof(*due))) {
			amp_err("sweeping unsettled entries: out of memory");
			break;
		}
		due[n].id = id;
		due[n++].slot = i;
	}
	if (n)	/* qsort wants a non-NULL base even for 0 elements */
		qsort(due, n, sizeof(*due), cmp_u64);	/* report in id order */
	for (size_t i = 0; i < n; i++) {
		struct amp_settle *slot = &st->slots[due[i].slot], s;
		__u64 expect = due[i].id;

		/* Copied before taking it: once free, a new entry may claim it. */
		memcpy(&s, slot, sizeof(s));
		/* Gone meanwhile: its last folio was written, it came by ring. */
		if (!__atomic_compare_exchange_n(&slot->id, &expect, 0, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			continue;
		s.id = due[i].id;
		settler_settled(st, &s, true);
		if (!all) {
			__u64 *id = malloc(sizeof(*id));

			if (id) {
				*id = s.id;
				tsearch(id, &st->timed_out, cmp_u64);
			}
			st->entries_timed_out++;
		}
	}
	free(due);
}

void settler_drain(struct settler *st)
{
	static struct amp_entry e;

	while (unsettled_take_any(st->held, &e)) {
		e.flags |= AMP_ENTRY_DRAINED;
		ledger_entry(st->ledger, &e);
	}
}

struct unsettled *settler_held(struct settler *st)
{
	return st->held;
}

__u64 settler_timed_out(const struct settler *st)
{
	return st->entries_timed_out;
}

__u64 settler_late(const struct settler *st)
{
	return st->late_records;
}

void settler_free(struct settler *st)
{
	if (!st)
		return;
	unsettled_free(st->held);
	tdestroy(st->timed_out, free);
	free(st);
}
