/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The traced entries explain explains, in the loader's own model: each is
 * the struct amp_entry the tracer delivered and its ledger costs, read
 * back from `trace -j` output or from a record (or handed over by
 * `amptrace report --journal`, as a sink), with where its page runs lie
 * among the journal files given.
 */
#ifndef AMPTRACE_EXPLAIN_ENTRIES_H
#define AMPTRACE_EXPLAIN_ENTRIES_H

#include <linux/types.h>
#include <stdbool.h>
#include "amptrace.h"
#include "explain/explain.h"
#include "ledger/ledger.h"
#include "sink/sink.h"
#include "sys/paths.h"
#include "sys/senders.h"
#include "sys/wallclock.h"

struct xentry {
	__u64 realtime_us;	/* when it opened, µs since the epoch (its "time") */
	__u64 at_us;		/* the same on the trace's start clock, which no step
				 * moves: what the journal's stamps are matched to */
	bool writer;		/* its process dirtied a given journal file */
	struct entry_costs c;	/* c.sender: &sender, or NULL */
	struct sender sender;
	__s16 file[AMP_SCATTER_MAX];	/* runs[i] lies in opt->files[file[i]]; -1: none */
	struct amp_entry e;	/* last: allocated only as far as its runs go */
};

struct xtrace {
	struct xentry **v;
	size_t n, cap;
	/* The trace's clock at its start (matching), and while entries come
	 * from a record, its clock with the steps so far (their times). */
	struct wall_clock clock;
	bool have_clock;	/* a JSON trace from before the summary's "clock": none */
	const struct wall_clock *src;
	amp_path_fn path;
	void *path_ctx;
};

/* An entry's runs: metadata or not. */
static inline bool xrun_meta(const struct amp_page_run *r)
{
	return r->kind != AMP_PAGE_FILE;
}

/* FILE: `amptrace trace -j` lines, or a record (`amptrace record`).  The
 * journal files must be open (explain_open).  0, or <0 after a one-line
 * error. */
int xtrace_load(struct xtrace *tr, const struct explain_opts *opt, const char *path);
/* Entries of a record being read: a sink that keeps them, with the
 * record's clock and paths.  xtrace_locate() then finds their files. */
struct sink xtrace_sink(struct xtrace *tr, const struct wall_clock *clock, amp_path_fn path,
		       void *ctx);
void xtrace_locate(struct xtrace *tr, const struct explain_opts *opt);
/* "2024-05-01T15:00:58.580123Z" */
void xentry_time(const struct xentry *x, char *buf, size_t len);
void xtrace_free(struct xtrace *tr);

#endif /* AMPTRACE_EXPLAIN_ENTRIES_H */
