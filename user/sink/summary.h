/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A run's totals besides its entries: per device (the kernel's classes,
 * the device's own counter, the ledger's shares), per file, losses.  Made
 * by the tracer (trace/summarize.c) or read back from a record; rendered
 * by the outputs.
 */
#ifndef AMPTRACE_SUMMARY_H
#define AMPTRACE_SUMMARY_H

#include <linux/types.h>
#include <stdbool.h>
#include "amptrace.h"
#include "ledger/ledger.h"
#include "sys/devstat.h"
#include "sys/wallclock.h"

/* What a device row is: a disk's requests are walked; a partition's row
 * is the requests for it (also in its disk's row); a dm or md device takes
 * bios, written by the requests of the disks below it. */
enum dev_layer { DEV_DISK, DEV_PARTITION, DEV_DM, DEV_MD };

struct summary_dev {
	char name[AMP_DISK_NAME_LEN];
	__u32 kdev;
	enum dev_layer layer;
	__u32 disk;		/* a partition's disk */
	struct amp_dev_stats st;
	struct disk_counter delta;
	bool have_counter;
	bool gone;		/* went away during the run: counter as last read */
	/* Failed writes of a dm or md device its counter never counted (see
	 * summarize.c's failed_counted): not in its classes. */
	__u64 failed_uncounted;
	struct ledger_disk ledger;	/* journal by cause, by window */
};

struct summary_file {
	struct amp_file_key key;
	struct amp_file_stats st;
};

/* --ringbuf-kb's upper bound (1 GiB): the parser's, and the summary's
 * hint never names more. */
#define AMP_RINGBUF_KB_MAX (1u << 20)

struct summary {
	double duration_s;
	struct summary_dev *devs;
	int nr_devs;
	struct summary_file *files;
	int nr_files;
	struct amp_stats losses;
	__u64 entries_timed_out;
	__u64 late_records;
	__u32 ringbuf_kb;	/* the events ring's size, for the hint on its drops; 0: unknown */
	/* Which programs the kernel skipped (losses.prog_runs_missed), the
	 * first few by name; not in record files. */
	struct summary_missed {
		char prog[32];
		__u64 runs;
	} missed[4];
	int nr_missed;
	/* The run's wall clock and its steps (a record's: from its header
	 * and CLOCK records); NULL: not known. */
	const struct wall_clock *clock;
};

#endif /* AMPTRACE_SUMMARY_H */
