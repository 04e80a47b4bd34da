/* SPDX-License-Identifier: GPL-2.0 */
/* Traced entries matched to the journal entries journald wrote, by time. */
#ifndef AMPTRACE_EXPLAIN_MATCH_H
#define AMPTRACE_EXPLAIN_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "explain/explain.h"
#include "explain/explain_entries.h"

/* A journal entry stamped within the trace, and the traced entry it goes to. */
struct cand {
	int file;
	uint64_t off, prev;
	uint64_t at;		/* its stamp on the trace's start clock (µs) */
	uint64_t seqnum;
	uint64_t owner;		/* trace entry id; UINT64_MAX: none */
	bool received;		/* a traced syscall of its own brought it */
	char transport[16];	/* its _TRANSPORT, for display */
	uint32_t pid;		/* its _PID (the sender journald saw), 0 if none */
};

struct cands {
	struct cand *c;
	size_t n, cap;
	uint64_t lo, hi;	/* range of interest, on the trace's start clock */
	const struct xtrace *tr;	/* its clock */
	uint64_t last_entry;	/* walk state: previous ENTRY offset */
	int file;
};

/* Is trace entry id one of --id (or is there no --id)? */
bool wanted(const struct explain_opts *opt, uint64_t id);
/* The journald processes: those whose entries dirtied a given file (all
 * entries, if none did).  Only their entries are matched. */
void mark_writers(struct xtrace *tr);
/* One indexed walk per file, keeping ENTRY objects stamped near the trace. */
int find_candidates(struct explain_opts *opt, const struct xtrace *tr, struct cands *cs);
/* Give each to its traced entry; then sorted by owner id, file, seqnum. */
int assign(struct explain_opts *opt, const struct xtrace *tr, struct cands *cs);

#endif /* AMPTRACE_EXPLAIN_MATCH_H */
