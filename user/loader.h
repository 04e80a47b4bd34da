/* SPDX-License-Identifier: GPL-2.0 */
/* Loader-side interfaces between the small files in user/. */
#ifndef AMPTRACE_LOADER_H
#define AMPTRACE_LOADER_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <linux/types.h>
#include "amptrace.h"

#define AMP_MAX_PIDS 64

/* What a tracing run does with the entries: the command that started it. */
enum amp_mode {
	AMP_MODE_TRACE,		/* print them (table or JSON lines) */
	AMP_MODE_RECORD,	/* write them to a record file (record.c) */
	AMP_MODE_TOP,		/* live per-interval view (top.c) */
};

struct trace_opts {
	enum amp_mode mode;
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
	__u32 max_files;
	__u32 ringbuf_kb;
	bool json;
	bool verbose;
	bool quiet;		/* summary only */
	bool raw_syscalls;	/* raw sys_enter/sys_exit even where syscall events exist */
	const char *record_path;	/* record: -o FILE */
	const char *metrics_addr;	/* --metrics HOST:PORT */
	const char *metrics_file;	/* --metrics-file PATH (node_exporter textfile) */
	const char *sort_key;	/* top: -s KEY */
	double interval;	/* top: seconds between screens */
	unsigned long count;	/* top: screens before exiting, 0 = until stopped */
	int argc;		/* the command line, kept in a record's header */
	char **argv;
};

/* main.c */
extern const char *amp_prog;
extern int amp_errors;	/* one-line errors printed so far */
void amp_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* version.c: `amptrace --version` (no BPF program is loaded for it) */
int cmd_version(void);

/* explain.c: `amptrace explain` (journal objects and fields per entry) */
int cmd_explain(int argc, char **argv);

/* trace_cli.c */
struct argp;
struct argp_state;
bool amp_help(const struct argp *argp, int argc, char **argv, const char *name);
void amp_argp_error(const struct argp_state *state);
int trace_parse_args(int argc, char **argv, enum amp_mode mode, struct trace_opts *opts);

/* tracer.c */
int trace_run(const struct trace_opts *opts);

/* preflight.c */
int preflight_check(const char *btf_path);
bool kernel_has_tracepoint(const char *tp);
bool kernel_has_enum_value(const char *enum_name, const char *value);
struct btf;
struct btf *kernel_btf(void);	/* vmlinux BTF, parsed once; NULL if absent */
void kernel_btf_release(void);

/* presets.c */
#define AMP_MAX_PRESET_SYSCALLS 16	/* syscalls a preset may name */
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

/* paths.c: (dev, ino) -> a path, looked up in /proc/PID of a writer, else
 * the path the kernel side recorded. */
const char *path_of(__u32 kdev, __u64 ino, __u32 pid);
void paths_use_maps(int files_fd, int paths_fd);
/* A struct amp_file_path as a path here (malloc'd), NULL if it holds none. */
char *file_path_str(const struct amp_file_path *p);

/* mounts.c: where rel (from the root of the filesystem on the superblock
 * device sb_kdev) is in this mount namespace (malloc'd), NULL if that
 * filesystem is not mounted here. */
char *mount_path(__u32 sb_kdev, const char *rel);
/* The superblock device of pid's fd, the disk under a superblock (kernel
 * dev_t; 0 if unknown), and whether a disk is the one named (e.g. loop0). */
__u32 fd_superblock_dev(int pid, int fd, dev_t st_dev);
__u32 disk_of_dev(__u32 sb_dev);
bool disk_is_named(__u32 disk, const char *name);

/* Costs settled in user space (ledger.c), on top of the kernel's. */
struct entry_costs {
	__u64 journal;		/* fs journal, by cause: share of its commits */
	__u64 window;		/* unclaimed metadata/journal, by window */
};

/* unsettled.c: entries held until the kernel sends their device bytes. */
struct unsettled;
struct unsettled *unsettled_new(void);
int unsettled_hold(struct unsettled *u, const struct amp_entry *e, size_t len);
bool unsettled_settle(struct unsettled *u, const struct amp_settle *s, struct amp_entry *out);
bool unsettled_take_any(struct unsettled *u, struct amp_entry *out);
size_t unsettled_count(const struct unsettled *u);
void unsettled_free(struct unsettled *u);

/* startup.c: amptrace's own start-up cost (kernel audit records of its
 * program loads, stored by the traced processes). */
#define AMP_STARTUP_BIAS (1 << 30)	/* a settlement's count while it is filled */
struct startup;
struct startup_target {		/* what the loaded programs give it */
	int pages_fd;			/* startup_pages */
	struct amp_settle *slots;	/* unsettled, mapped */
	size_t nr_slots;
	__u64 *next_entry_id;		/* the kernel's id source */
	__u32 *startup_own;		/* the kernel's flag */
	struct unsettled *held;
};
/* Before loading any program: NULL where audit is off (nothing to do). */
struct startup *startup_begin(const struct trace_opts *o);
/* After attaching: 1 if the start-up entry settled at once (*settled_now),
 * 0 otherwise, -1 if it could not be made. */
int startup_finish(struct startup *su, const struct startup_target *tg,
		   struct amp_settle *settled_now);
void startup_free(struct startup *su);

/* ledger.c */
struct ledger_disk {
	__u32 disk;
	__u64 journal_by_cause;
	__u64 by_window;
	__u64 left_over;	/* unclaimed in windows with no entry, at exit */
	__u64 untraced;		/* commit shares of untraced processes' handles */
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

/* A (dev, ino) -> path resolver: path_of() live, a record's table offline. */
typedef const char *(*amp_path_fn)(void *ctx, __u32 kdev, __u64 ino, __u32 pid);

/* report.c */
struct report *report_new(FILE *out, bool json, bool quiet);
/* For rendering a record offline: its paths and its wall clock. */
void report_set_paths(struct report *r, amp_path_fn fn, void *ctx);
void report_set_clock(struct report *r, __s64 boot_to_real_ns);
__s64 report_clock(const struct report *r);
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

/* top.c: `amptrace top`, per-interval rates of delivered entries. */
struct top;
#define TOP_SORT_KEYS "dev, entries, bytes, pages, ios, amp, name"
int top_sort_key(const char *key);	/* index, or -1 if not one of TOP_SORT_KEYS */
struct top *top_new(const struct trace_opts *o);
void top_entry(struct top *t, const struct amp_entry *e, const struct entry_costs *c);
/* One screen (or block of lines) from this interval; true once `count` were shown. */
bool top_tick(struct top *t, const struct summary *now);
bool top_keys(struct top *t);	/* interactive keys; true on 'q' */
void top_free(struct top *t);

/* metrics.c: cumulative counters over HTTP (OpenMetrics) and/or a textfile. */
struct metrics;
struct metrics *metrics_new(const char *addr, const char *file);
void metrics_entry(struct metrics *m, const struct amp_entry *e, const struct entry_costs *c);
/* Device classes, counters and losses as of now; rewrites the textfile. */
int metrics_update(struct metrics *m, const struct summary *now);
void metrics_free(struct metrics *m);
/* "127.0.0.1:9464", "[::1]:9464", ":9464" (every address); -1 if not one. */
int metrics_parse_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *len);

/* svg.c: scatter map, x = entry sequence, y = page offset per file. */
struct svg;
struct svg *svg_new(amp_path_fn path, void *path_ctx);
void svg_entry(struct svg *s, const struct amp_entry *e, const struct entry_costs *c);
int svg_write(struct svg *s, const char *out_path, bool html, const char *title);
void svg_free(struct svg *s);

/* report_cmd.c: `amptrace report FILE` */
int cmd_report(int argc, char **argv);

#include <sys/sysmacros.h>
static inline __u32 kdev_from_user(dev_t d)
{
	return (major(d) << 20) | minor(d);
}

#endif /* AMPTRACE_LOADER_H */
