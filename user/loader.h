/* SPDX-License-Identifier: GPL-2.0 */
/* Loader-side interfaces between the small files in user/. */
#ifndef AMPTRACE_LOADER_H
#define AMPTRACE_LOADER_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>
#include "amptrace.h"

#define AMP_MAX_PIDS 64

struct trace_opts {
	pid_t pids[AMP_MAX_PIDS];
	int nr_pids;
	const char *comm;
	const char *cgroup;
	const char *dev;	/* disk name, e.g. loop0 */
	const char *preset;	/* journald | write | all | auto */
	const char *output;	/* -o FILE, default stdout */
	const char *btf_path;
	double duration;	/* seconds, 0 = until a signal */
	int settle_timeout;	/* seconds before a closed, unwritten entry is reported */
	__u32 max_entries;
	__u32 max_pages;
	__u32 max_threads;
	__u32 max_files;
	__u32 ringbuf_kb;
	bool json;
	bool verbose;
	bool quiet;		/* summary only */
};

/* main.c */
extern const char *amp_prog;
extern int amp_errors;	/* one-line errors printed so far */
void amp_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* explain.c: `amptrace explain` (journal objects and fields per entry) */
int cmd_explain(int argc, char **argv);

/* trace_cli.c */
int trace_parse_args(int argc, char **argv, struct trace_opts *opts);

/* tracer.c */
int trace_run(const struct trace_opts *opts);

/* preflight.c */
int preflight_check(const char *btf_path);

/* presets.c */
struct preset_syscall {
	const char *name;
	int nr;
	enum amp_syscall_kind kind;
};
int preset_resolve(const char *preset, const struct trace_opts *opts,
		   const struct preset_syscall **list, int *n);
const char *syscall_name(int nr);

/* devstat.c */
struct disk_counter {
	__u64 sectors_written;
	__u64 write_ios;
};
int disk_lookup(const char *name, unsigned *major, unsigned *minor);
int disk_read_counter(const char *name, struct disk_counter *c);
static inline unsigned kdev_major(__u32 kdev) { return kdev >> 20; }
static inline unsigned kdev_minor(__u32 kdev) { return kdev & 0xfffff; }

/* paths.c: (dev, ino) -> a path, looked up in /proc/PID of a writer. */
const char *path_of(__u32 kdev, __u64 ino, __u32 pid);
void paths_use_files_map(int fd);

/* Costs settled in user space (ledger.c), on top of the kernel's. */
struct entry_costs {
	__u64 journal;		/* fs journal, by cause: share of its commits */
	__u64 window;		/* unclaimed metadata/journal, by window */
};

/* ledger.c */
struct ledger_disk {
	__u32 disk;
	__u64 journal_by_cause;
	__u64 by_window;
	__u64 left_over;	/* unclaimed in windows with no entry, at exit */
};
struct report;
struct ledger;
/* Called once per entry, with its bill complete. */
typedef void (*ledger_emit_fn)(void *ctx, const struct amp_entry *e,
			       const struct entry_costs *c);
struct ledger *ledger_new(ledger_emit_fn emit, void *ctx, int devs_fd);
void ledger_entry(struct ledger *l, const struct amp_entry *e);
void ledger_txn(struct ledger *l, const struct amp_txn_rec *rec);
void ledger_tick(struct ledger *l, bool force);
void ledger_flush(struct ledger *l, int txns_fd);
const struct ledger_disk *ledger_disk(struct ledger *l, __u32 disk);
void ledger_free(struct ledger *l);

/* report.c */
struct report *report_new(FILE *out, bool json, bool quiet);
void report_entry(struct report *r, const struct amp_entry *e, const struct entry_costs *c);
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
struct summary {
	double duration_s;
	struct summary_dev *devs;
	int nr_devs;
	struct summary_file *files;
	int nr_files;
	struct amp_stats losses;
	__u64 entries_timed_out;
	__u64 late_records;
};
void report_summary(struct report *r, const struct summary *s);
void report_free(struct report *r);

#include <sys/sysmacros.h>
static inline __u32 kdev_from_user(dev_t d)
{
	return (major(d) << 20) | minor(d);
}

#endif /* AMPTRACE_LOADER_H */
