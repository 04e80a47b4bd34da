/* SPDX-License-Identifier: GPL-2.0 */
/* A tracing run: `amptrace trace`, `record` and `top`, from their options. */
#ifndef AMPTRACE_TRACE_H
#define AMPTRACE_TRACE_H

#include <linux/types.h>
#include <stdbool.h>
#include <sys/types.h>
#include "sys/blockdev.h"

#define AMP_MAX_PIDS 64

/* What a tracing run does with the entries: the command that started it. */
enum amp_mode {
	AMP_MODE_TRACE,		/* print them (table or JSON lines) */
	AMP_MODE_RECORD,	/* write them to a record file (out/record.c) */
	AMP_MODE_TOP,		/* live per-interval view (out/top.c) */
};

/* The command line, parsed (cli/trace_cli.c; defaults in cli/defaults.h). */
struct trace_opts {
	enum amp_mode mode;
	pid_t pids[AMP_MAX_PIDS];
	int nr_pids;
	const char *comm;
	const char *cgroup;
	const char *dev;	/* --dev as given, NULL without: then dev_stack is empty */
	struct blockdev_stack dev_stack;	/* what it names, and the stack it is in */
	const char *preset;	/* journald | write | all | auto */
	const char *output;	/* -o FILE, default stdout */
	const char *btf_path;
	double duration;	/* seconds, 0 = until a signal */
	int settle_timeout;	/* seconds before a closed, unwritten entry is reported */
	__u32 max_entries;
	__u32 max_pages;
	__u32 max_files;
	__u32 ringbuf_kb;
	bool json;
	bool verbose;
	bool quiet;		/* summary only */
	bool raw_syscalls;	/* raw sys_enter/sys_exit even where syscall events exist */
	bool no_btrfs_reservations;	/* btrfs: no space-reservation hook (cheaper, coarser split) */
	const char *record_path;	/* record: -o FILE */
	const char *metrics_addr;	/* --metrics HOST:PORT */
	const char *metrics_file;	/* --metrics-file PATH (node_exporter textfile) */
	unsigned metrics_senders;	/* --metrics-senders N: labels of their own */
	const char *sort_key;	/* top: -s KEY */
	int top_by;		/* top: --by (enum top_by) */
	bool top_by_set;
	double interval;	/* top: seconds between screens */
	unsigned long count;	/* top: screens before exiting, 0 = until stopped */
	int argc;		/* the command line, kept in a record's header */
	char **argv;
};

/* Load, attach, deliver entries until stopped, print the summary: 0, or
 * -1 after a one-line error. */
int trace_run(const struct trace_opts *opts);

#endif /* AMPTRACE_TRACE_H */
