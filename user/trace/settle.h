/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The settlement: entries the kernel sent before their folios were
 * written wait for their device bytes (AMP_REC_SETTLED); a sweep of the
 * kernel's `unsettled` slots reports those whose bytes never come.  Every
 * entry leaves here for the ledger.
 */
#ifndef AMPTRACE_SETTLE_H
#define AMPTRACE_SETTLE_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include "amptrace.h"
#include "ledger/ledger.h"
#include "ledger/unsettled.h"

struct settler;
/* slots: the kernel's `unsettled` array, mapped (nr_slots of them);
 * timeout_s: --settle-timeout.  NULL if out of memory. */
struct settler *settler_new(struct ledger *l, struct amp_settle *slots, size_t nr_slots,
			    int timeout_s);
/* An entry record from the ring (len bytes: only the scatter slots in use). */
void settler_entry(struct settler *st, const struct amp_entry *e, size_t len);
/* An entry's device bytes came; drained: taken from a slot by the sweep. */
void settler_settled(struct settler *st, const struct amp_settle *s, bool drained);
/* Report the entries closed more than the timeout ago whose folios never
 * all reached a device (all: every one left, at exit). */
void settler_sweep(struct settler *st, bool all);
/* At exit: held entries whose settlement never came (its record lost). */
void settler_drain(struct settler *st);
struct unsettled *settler_held(struct settler *st);
__u64 settler_timed_out(const struct settler *st);	/* reported by the sweep */
__u64 settler_late(const struct settler *st);		/* settled after that */
void settler_free(struct settler *st);

#endif /* AMPTRACE_SETTLE_H */
