/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Record files: written by `amptrace record` (recorder), read by
 * `amptrace report` (reader).  The format is described in record.c.
 */
#ifndef AMPTRACE_RECORD_H
#define AMPTRACE_RECORD_H

#include <linux/types.h>
#include <stdbool.h>
#include "amptrace.h"
#include "ledger/ledger.h"
#include "sink/sink.h"
#include "sink/summary.h"
#include "sys/senders.h"
#include "sys/wallclock.h"

#define RECORD_MAGIC	"AMPTRACE"	/* 8 bytes, no NUL */
#define RECORD_VERSION	1

enum record_type {
	RECORD_HEADER = 1,	/* once, first */
	RECORD_PATH = 2,	/* (dev, ino) -> path, before the first record using it */
	RECORD_ENTRY = 3,	/* one finished entry, with its ledger costs */
	RECORD_FILE = 4,	/* the kernel's per-file totals, before the final summary */
	RECORD_SUMMARY = 5,	/* a checkpoint (every 2 s) or the final summary */
	RECORD_CLOCK = 6,	/* the wall clock stepped (absorbed by the reader) */
};

/* Writing. */
struct recorder;
/* argc, argv: the command line, kept in the header. */
/* clock: the tracer's, kept by it; its steps are written as they come. */
struct recorder *recorder_new(const char *path, int argc, char **argv,
			      const struct wall_clock *clock);
int recorder_fd(const struct recorder *r);
void recorder_entry(struct recorder *r, const struct amp_entry *e, const struct entry_costs *c);
/* final: the end-of-run summary, with its per-file totals; else a checkpoint. */
void recorder_summary(struct recorder *r, const struct summary *s, bool final);
/* say: the run went well, print what was recorded; else a record without
 * entries is removed.  0, or -1 if a write failed (already reported). */
int recorder_close(struct recorder *r, bool say);
/* As a sink: entries, a checkpoint every `period` s, the final summary. */
struct sink recorder_sink(struct recorder *r, double period);

/* Reading. */
struct record_header {
	__u32 version;
	__u32 page_size;
	__s64 boot_to_real_ns;
	__u64 start_boot_ns, start_real_ns;
	char host[256], kernel[256], cmdline[1024];
	__s64 boot_to_mono_ns;	/* 0 and no boot id in a record from before */
	bool have_boot_id;
	__u8 boot_id[16];
};

struct record_item {
	enum record_type type;
	__u64 offset;			/* of the record in the file */
	struct amp_entry entry;		/* RECORD_ENTRY */
	struct entry_costs costs;	/* costs.sender: &sender, or NULL */
	struct sender sender;
	struct summary summary;		/* RECORD_SUMMARY; files from the FILE records before it */
	bool final;
	__u64 entries;			/* entries the recorder had written when it wrote this summary */
};

enum record_status {
	RECORD_MORE,		/* an item was read */
	RECORD_END,		/* clean end of file */
	RECORD_TRUNCATED,	/* a partial record at the end: recorder killed mid-write */
	RECORD_CORRUPT,		/* see record_problem() */
};

struct record_reader;
/* NULL after a one-line error (not a record, newer version, unreadable). */
struct record_reader *record_open(const char *path);
const struct record_header *record_header(const struct record_reader *r);
/* The item is valid until the next call; PATH records are absorbed into the
 * reader's path table (record_path()) and not returned. */
enum record_status record_next(struct record_reader *r, struct record_item *it);
const char *record_problem(const struct record_reader *r);	/* "at offset N: ..." */
__u64 record_offset(const struct record_reader *r);
/* The recording's wall clock: the header's, with the steps read so far. */
const struct wall_clock *record_clock(const struct record_reader *r);
int record_rewind(struct record_reader *r);
void record_close(struct record_reader *r);
/* An amp_path_fn (sys/paths.h) over the record's path table (ctx = the reader). */
const char *record_path(void *reader, __u32 kdev, __u64 ino, __u32 pid);

#endif /* AMPTRACE_RECORD_H */
