/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where finished entries go: the table or JSON lines (report.c), a record
 * file (record.c), top's screen (top.c), the metrics (metrics.c), the
 * scatter map (svg.c), explain's list.  The tracer and `amptrace report`
 * hand every entry, and the run's totals, to each of their sinks in turn.
 */
#ifndef AMPTRACE_SINK_H
#define AMPTRACE_SINK_H

#include <linux/types.h>
#include <stdbool.h>
#include "amptrace.h"
#include "ledger/ledger.h"
#include "sink/summary.h"

struct sink_ops {
	/* A finished entry, its bill complete. */
	void (*entry)(void *self, const struct amp_entry *e, const struct entry_costs *c);
	/* The run's totals: every `period` seconds while it runs (final
	 * false), and at its end (final true).  <0: failed (reported); 1:
	 * the sink is done and the run may stop (top's COUNT); else 0.
	 * NULL: none wanted. */
	int (*summary)(void *self, const struct summary *s, bool final);
	/* ok: the run succeeded.  Frees the sink; <0 if its output failed. */
	int (*close)(void *self, bool ok);
};

struct sink {
	const struct sink_ops *ops;
	void *self;
	double period;		/* s between summaries while running; 0: at the end only */
	bool at_start;		/* the first summary at once, not after a period */
	double next;		/* when the next one is due (the tracer's clock) */
};

static inline void sink_entry(const struct sink *s, const struct amp_entry *e,
			      const struct entry_costs *c)
{
	if (s->ops->entry)
		s->ops->entry(s->self, e, c);
}

static inline int sink_summary(const struct sink *s, const struct summary *sum, bool final)
{
	return s->ops->summary ? s->ops->summary(s->self, sum, final) : 0;
}

static inline int sink_close(const struct sink *s, bool ok)
{
	return s->ops->close ? s->ops->close(s->self, ok) : 0;
}

#endif /* AMPTRACE_SINK_H */
