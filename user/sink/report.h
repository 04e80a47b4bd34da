/* SPDX-License-Identifier: GPL-2.0 */
/* The table or JSON lines: one line per entry, then the run's summary. */
#ifndef AMPTRACE_REPORT_H
#define AMPTRACE_REPORT_H

#include <linux/types.h>
#include <stdbool.h>
#include <stdio.h>
#include "amptrace.h"
#include "ledger/ledger.h"
#include "sink/sink.h"
#include "sink/summary.h"
#include "sys/paths.h"
#include "sys/wallclock.h"

struct report;
/* quiet: the summary only.  Paths live (path_of).  Times print on clock,
 * following its steps (kept by the caller: live, the tracer's; offline,
 * the record's). */
struct report *report_new(FILE *out, bool json, bool quiet, const struct wall_clock *clock);
/* For rendering a record offline: its paths. */
void report_set_paths(struct report *r, amp_path_fn fn, void *ctx);
void report_entry(struct report *r, const struct amp_entry *e, const struct entry_costs *c);
void report_summary(struct report *r, const struct summary *s);
void report_free(struct report *r);
/* As a sink: entries, and the final summary. */
struct sink report_sink(struct report *r);

#endif /* AMPTRACE_REPORT_H */
