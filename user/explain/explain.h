/* SPDX-License-Identifier: GPL-2.0 */
/*
 * `amptrace explain` (and `report --journal`): which journal objects and
 * which log fields each traced journald entry wrote.  The flow, one file a
 * step: cli/explain_cmd.c (options) -> explain_trace.c (per entry, per
 * page) -> explain_match.c (traced entries to journal entries, by time)
 * -> journal/ (the reader).  Entries come in through explain_entries.c;
 * the reader's own views are explain_views.c.  This header: the options
 * and the journal files they name.
 */
#ifndef AMPTRACE_EXPLAIN_H
#define AMPTRACE_EXPLAIN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "journal/journal_file.h"

struct xfile {
	const char *path;
	const char *base;	/* basename, for display */
	unsigned dev_major, dev_minor;	/* as stat() has them: the trace's */
	ino_t ino;
	struct jf jf;
};

struct explain_opts {
	FILE *out;
	bool json;
	bool show_values;	/* print payloads; otherwise names and sizes only */
	bool all_objects;	/* every object on a page, not just those written */
	bool header, objects, entries, check, stats;	/* the reader's views */
	bool range;
	uint64_t range_a, range_b;
	double window;		/* farthest a journal entry's stamp may be from its syscall */
	unsigned long long *ids;	/* --id: only these trace entries */
	int nr_ids;
	struct xfile *files;
	int nr_files;
};

/* Another journal file to read (not opened yet): -1 if out of memory. */
int explain_add_file(struct explain_opts *opt, const char *path);
/* Open them all (t_open: the seconds each took, or NULL): 0, or <0 after
 * a one-line error. */
int explain_open(struct explain_opts *opt, double *t_open);
/* Close them, free the options' lists. */
void explain_close(struct explain_opts *opt);
/* The file's reader error as one line ("amptrace: FILE: ..."); returns err. */
int xfile_error(struct xfile *x, int err);
/* The index of the journal file that is (dev, ino) or has this path; -1. */
int explain_file_of(const struct explain_opts *opt, unsigned maj, unsigned min, uint64_t ino,
		    const char *path);

#endif /* AMPTRACE_EXPLAIN_H */
