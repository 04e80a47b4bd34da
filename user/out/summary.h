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

struct summary_dev {
	char name[AMP_DISK_NAME_LEN];
	__u32 kdev;
	struct amp_dev_stats st;
	struct disk_counter delta;
	bool have_counter;
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
};

#endif /* AMPTRACE_SUMMARY_H */
