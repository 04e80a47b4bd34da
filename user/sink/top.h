/* SPDX-License-Identifier: GPL-2.0 */
/* `amptrace top`: per-interval rates of the entries delivered. */
#ifndef AMPTRACE_TOP_H
#define AMPTRACE_TOP_H

#include <linux/types.h>
#include <stdbool.h>
#include "amptrace.h"
#include "ledger/ledger.h"
#include "sink/sink.h"
#include "sink/summary.h"

#define TOP_SORT_KEYS "dev, entries, bytes, pages, ios, amp, name"
int top_sort_key(const char *key);	/* index, or -1 if not one of TOP_SORT_KEYS */

/* What the rows are: who sent the entries' records (their pid, comm or
 * systemd unit), or the files they wrote (then the only table). */
enum top_by { TOP_BY_PID, TOP_BY_COMM, TOP_BY_UNIT, TOP_BY_FILE };
#define TOP_BY_KEYS "pid, comm, unit, file"
int top_by_key(const char *key);	/* enum top_by, or -1 if not one of TOP_BY_KEYS */

struct top;
/* A screen (or block of lines) every `interval` s; done after `count`
 * (0: never); sort_key one of TOP_SORT_KEYS, NULL for the first; rows by. */
struct top *top_new(double interval, unsigned long count, const char *sort_key,
		    enum top_by by);
void top_entry(struct top *t, const struct amp_entry *e, const struct entry_costs *c);
/* One screen from this interval; true once `count` were shown. */
bool top_tick(struct top *t, const struct summary *now);
bool top_keys(struct top *t);	/* interactive keys; true on 'q' */
void top_free(struct top *t);	/* gives the terminal back */
/* As a sink: entries, and a screen per summary while the run goes on. */
struct sink top_sink(struct top *t);

#endif /* AMPTRACE_TOP_H */
