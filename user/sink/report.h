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
/* quiet: the summary only.  Paths live (path_of), times by this host's clock. */
struct report *report_new(FILE *out, bool json, bool quiet);
/* For rendering a record offline: its paths and its wall clock. */
void report_set_paths(struct report *r, amp_path_fn fn, void *ctx);
/* The clock entry times are printed on (kept by the caller). */
void report_use_clock(struct report *r, const struct wall_clock *c);
void report_entry(struct report *r, const struct amp_entry *e, const struct entry_costs *c);
void report_summary(struct report *r, const struct summary *s);
void report_free(struct report *r);
/* As a sink: entries, and the final summary. */
struct sink report_sink(struct report *r);

#endif /* AMPTRACE_REPORT_H */
