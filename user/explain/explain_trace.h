/* SPDX-License-Identifier: GPL-2.0 */
/* Traced entries, explained page by page against the journal files. */
#ifndef AMPTRACE_EXPLAIN_TRACE_H
#define AMPTRACE_EXPLAIN_TRACE_H

#include "explain/explain.h"
#include "explain/explain_entries.h"

/* The journal files open (explain_open), the entries loaded: per entry,
 * its journal entries, pages and owners, then the per-field table.  0, or
 * <0 after a one-line error.  Sorts tr by id. */
int explain_trace(struct explain_opts *opt, struct xtrace *tr);

#endif /* AMPTRACE_EXPLAIN_TRACE_H */
