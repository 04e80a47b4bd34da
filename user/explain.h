/* SPDX-License-Identifier: GPL-2.0 */
/* `amptrace explain`: interfaces between explain.c (options, journal files,
 * reader views), explain_match.c (a recorded trace, matched to journal
 * entries) and explain_trace.c (its pages, explained). */
#ifndef AMPTRACE_EXPLAIN_H
#define AMPTRACE_EXPLAIN_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include "journal_file.h"

struct xfile {
	const char *path;
	const char *base;	/* basename, for display */
	unsigned dev_major, dev_minor;
	ino_t ino;
	struct jf jf;
};

struct explain_opts {
	const char *trace;
	const char *output;
	FILE *out;
	bool json;
	bool show_values;	/* print payloads; otherwise names and sizes only */
	bool all_objects;	/* every object on a page, not just those written */
	bool header, objects, entries, check, stats;
	bool range;
	uint64_t range_a, range_b;
	double window;		/* farthest a journal entry's stamp may be from its syscall */
	unsigned long long *ids;
	int nr_ids;
	struct xfile *files;
	int nr_files;
};

/* explain.c */
/* Who owns object O: a field name or a "(structure)"; written into BUF. */
const char *object_owner(struct xfile *x, const struct jf_object *o, char *buf, size_t len);
/* One object as text ("0x1f08  DATA  83  MESSAGE ...") or as JSON. */
void print_object_text(const struct explain_opts *opt, struct xfile *x,
		       const struct jf_object *o, const char *indent, const char *mark);
struct json_object *object_json(const struct explain_opts *opt, struct xfile *x,
				const struct jf_object *o);
/* Bytes of one field in `journalctl -o export`, for the plain-append cost. */
uint64_t export_field_size(const uint8_t *payload, uint64_t len);
/* Bytes of the entry's export record, per-field lines excluded. */
uint64_t export_entry_overhead(struct xfile *x, const struct jf_object *e);
int xfile_error(struct xfile *x, int err);

/* explain_match.c: a recorded trace, and its entries matched to journal ones */
struct run {
	unsigned maj, min;
	uint64_t ino, page;
	unsigned npages;
	bool meta, written;
	int file;		/* index in opt->files, -1 if none */
};

struct tentry {
	uint64_t id, boot_ns, realtime_us;
	char time[40], comm[24], syscall[24];
	int64_t pid, tid, bytes;
	uint64_t pages_dirtied, dev_data, dev_meta, dropped;
	uint64_t dev_journal, dev_window;	/* fs journal share, unclaimed share */
	bool settled;
	bool writer;		/* its process dirtied a given journal file */
	struct run *runs;
	int nr_runs;
};

struct trace {
	struct tentry *e;
	int n, cap;
};

/* A journal entry stamped within the trace, and the traced entry it goes to. */
struct cand {
	int file;
	uint64_t off, prev, realtime, seqnum;
	uint64_t owner;		/* trace entry id; UINT64_MAX: none */
	bool received;		/* a traced syscall of its own brought it */
	char transport[16];	/* its _TRANSPORT, for display */
};

struct cands {
	struct cand *c;
	size_t n, cap;
	uint64_t lo, hi;	/* realtime range of interest */
	uint64_t last_entry;	/* walk state: previous ENTRY offset */
	int file;
};

int load_trace(const struct explain_opts *opt, struct trace *tr);
void mark_writers(struct trace *tr);
bool wanted(const struct explain_opts *opt, uint64_t id);
int trace_by_id(const void *a, const void *b);
/* One indexed walk per file, keeping ENTRY objects stamped near the trace. */
int find_candidates(struct explain_opts *opt, const struct trace *tr, struct cands *cs);
/* Give each to its traced entry; then sorted by owner id, file, seqnum. */
int assign(struct explain_opts *opt, const struct trace *tr, struct cands *cs);

/* explain_trace.c */
int explain_trace(struct explain_opts *opt);

#endif /* AMPTRACE_EXPLAIN_H */
