// SPDX-License-Identifier: GPL-2.0
/* `amptrace trace`, `record` and `top` command lines: argp, with one-line
 * errors of our own.  The three share the tracing options; each has its own
 * doc, and a few options of its own. */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util.h"
#include "cli/cli.h"
#include "cli/defaults.h"
#include "sink/metrics.h"
#include "sink/summary.h"
#include "sink/top.h"
#include "trace/trace.h"

static const char trace_doc[] =
"Charge dirtied pages and written sectors to the logging syscall that caused them.\v"
"An entry is one logging syscall and everything its thread dirties until its\n"
"next one. Presets choose the syscalls: journald (receives on sockets),\n"
"write (write-family syscalls on regular files; fits rsyslog), all, or auto\n"
"(journald when -c systemd-journal, else write).\n"
"\n"
"EXAMPLES:\n"
"  amptrace trace -c systemd-journal --dev loop0   # journald, one device\n"
"  amptrace trace -p 1234 --preset write -d 30     # one process, 30 s\n"
"  amptrace trace --cgroup /sys/fs/cgroup/app -j   # a cgroup, JSON lines\n"
"  amptrace trace -c systemd-journal --metrics 127.0.0.1:9464   # + Prometheus\n";

static const char record_doc[] =
"Trace as `amptrace trace` does, into a record file; `amptrace report FILE`\n"
"renders it later.\v"
"Every entry is written as it is finished (one write each), so a recorder\n"
"killed at any moment leaves a readable record.  Prints the summary at exit\n"
"(as trace -q; -j for JSON).\n"
"\n"
"EXAMPLES:\n"
"  amptrace record -o journald.amp -c systemd-journal -d 60\n"
"  amptrace report journald.amp\n"
"  amptrace report journald.amp --svg journald.svg\n";

static const char top_doc[] =
"Live view: per process and per file, the rates of the entries finished in\n"
"each interval; per device, bytes written by class.\v"
"INTERVAL is in seconds (default " AMP_STR(DEF_INTERVAL) "), COUNT the screens before exiting\n"
"(default: until q or Ctrl-C).  An entry counts once its pages are written,\n"
"so rates follow write-back.  ENTRIES and AMP are totals since the start.\n"
"On a terminal: full screen, keys q (quit) and s (next sort key); otherwise\n"
"time-stamped lines per interval, active rows only.\n"
"Sort keys (-s): dev (device bytes/s, default), entries, bytes, pages, ios,\n"
"amp, name.\n"
"\n"
"EXAMPLES:\n"
"  amptrace top -c systemd-journal          # journald, every second\n"
"  amptrace top --preset write -s bytes 2 5 # every 2 s, 5 times, by logged B/s\n";

enum {
	OPT_CGROUP = 256,
	OPT_DEV,
	OPT_PRESET,
	OPT_MAX_ENTRIES,
	OPT_MAX_PAGES,
	OPT_MAX_FILES,
	OPT_RINGBUF_KB,
	OPT_SETTLE,
	OPT_RAW_SYSCALLS,
	OPT_NO_BTRFS_RESERVATIONS,
	OPT_BTF,
	OPT_METRICS,
	OPT_METRICS_FILE,
	OPT_BY,
	OPT_METRICS_SENDERS,
};

static const struct argp_option trace_options[] = {
	{ "pid", 'p', "PID", 0, "Trace this process (repeatable)", 0 },
	{ "comm", 'c', "COMM", 0, "Trace processes with this name", 0 },
	{ "cgroup", OPT_CGROUP, "PATH", 0, "Trace processes in this cgroup v2 (and below)", 0 },
	{ "dev", OPT_DEV, "DEVICE", 0,
	  "Limit the device side to this device's stack: a disk, partition, dm or md "
	  "device, /dev path or mount point (e.g. loop0, sda2, /dev/mapper/root, /var/log)", 0 },
	{ "preset", OPT_PRESET, "NAME", 0,
	  "journald | write | all | auto (default " AMP_STR(DEF_PRESET) ")", 0 },
	{ "duration", 'd', "SECONDS", 0, "Stop after this long (default: Ctrl-C)", 0 },
	{ "json", 'j', NULL, 0, "JSON lines instead of a table", 0 },
	{ "output", 'o', "FILE", 0,
	  "Write the report here instead of stdout (record: the record file)", 0 },
	{ "quiet", 'q', NULL, 0, "Print the summary only", 0 },
	{ "verbose", 'v', NULL, 0, "Show libbpf's log and probe decisions", 0 },
	{ "sort", 's', "KEY", 0, "top: sort rows by KEY (" TOP_SORT_KEYS ")", 0 },
	{ "by", OPT_BY, "WHAT", 0, "top: a row per sender's WHAT (" TOP_BY_KEYS "; default pid)", 0 },
	{ "metrics", OPT_METRICS, "ADDR:PORT", 0,
	  "Serve Prometheus/OpenMetrics counters at http://ADDR:PORT/metrics", 0 },
	{ "metrics-file", OPT_METRICS_FILE, "PATH", 0,
	  "Write the counters to PATH (node_exporter textfile), every second and at exit", 0 },
	{ "metrics-senders", OPT_METRICS_SENDERS, "N", 0, "Metrics: the first N senders get a "
	  "label of their own, later ones are summed as \"other\" (" AMP_STR(DEF_METRICS_SENDERS) ")", 0 },
	{ "max-entries", OPT_MAX_ENTRIES, "N", 0, "Entries awaiting the write-out of their folios ("
	  AMP_STR(DEF_MAX_ENTRIES) "; rounded up to a power of 2)", 1 },
	{ "max-pages", OPT_MAX_PAGES, "N", 0,
	  "Dirty folios awaiting write-out (" AMP_STR(DEF_MAX_PAGES) ")", 1 },
	{ "max-files", OPT_MAX_FILES, "N", 0,
	  "Files in the per-file summary (" AMP_STR(DEF_MAX_FILES) ")", 1 },
	{ "ringbuf-kb", OPT_RINGBUF_KB, "KB", 0,
	  "Ring buffer size, power of 2 (" AMP_STR(DEF_RINGBUF_KB) ")", 1 },
	{ "settle-timeout", OPT_SETTLE, "SECONDS", 0,
	  "Report a closed entry whose pages are still unwritten after this long ("
	  AMP_STR(DEF_SETTLE_TIMEOUT) ")", 1 },
	{ "btf", OPT_BTF, "FILE", 0, "Kernel BTF to use instead of /sys/kernel/btf/vmlinux", 1 },
	{ "raw-syscalls", OPT_RAW_SYSCALLS, NULL, 0,
	  "Hook every syscall (raw sys_enter/sys_exit), not only the preset's own tracepoints", 1 },
	{ "no-btrfs-reservations", OPT_NO_BTRFS_RESERVATIONS, NULL, 0,
	  "btrfs: do not hook space reservations (dozens per write): cheaper, but a transaction's "
	  "shared blocks go only to traced entries that copied blocks in it (else by window)", 1 },
	{},
};

static int parse_ulong(const char *what, const char *s, unsigned long min,
		       unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max) {
		amp_err("invalid %s '%s' (expected an integer in %lu..%lu)", what, s, min, max);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int parse_u32(const char *what, const char *s, unsigned long min,
		     unsigned long max, __u32 *out)
{
	unsigned long v;
	int err = parse_ulong(what, s, min, max, &v);

	if (!err)
		*out = v;
	return err;
}

/* sysstat style: `top [INTERVAL [COUNT]]`. */
static int top_positional(struct trace_opts *o, unsigned n, const char *arg)
{
	unsigned long v;
	char *end;

	if (n == 0) {
		errno = 0;
		o->interval = strtod(arg, &end);
		if (errno || end == arg || *end || !(o->interval >= 0.1) || o->interval > 86400) {
			amp_err("invalid interval '%s' (seconds, 0.1 to 86400)", arg);
			return EINVAL;
		}
		return 0;
	}
	if (n == 1) {
		if (parse_ulong("count", arg, 1, ULONG_MAX, &v))
			return EINVAL;
		o->count = v;
		return 0;
	}
	amp_err("unexpected argument '%s' (top [INTERVAL [COUNT]])", arg);
	return EINVAL;
}

static int parse_opt(int key, char *arg, struct argp_state *state)
{
	struct trace_opts *o = state->input;
	unsigned long v;
	char *end;
	struct stat st;
	char path[PATH_MAX];

	switch (key) {
	case 'p':
		if (parse_ulong("pid", arg, 1, INT_MAX, &v))
			return EINVAL;
		if (o->nr_pids >= AMP_MAX_PIDS) {
			amp_err("too many -p (at most %d)", AMP_MAX_PIDS);
			return EINVAL;
		}
		snprintf(path, sizeof(path), "/proc/%lu", v);
		if (access(path, F_OK)) {
			amp_err("no such process: %lu", v);
			return EINVAL;
		}
		o->pids[o->nr_pids++] = v;
		break;
	case 'c':
		if (!*arg) {
			amp_err("empty --comm");
			return EINVAL;
		}
		o->comm = arg;	/* the kernel keeps 15 chars: matched on those */
		break;
	case OPT_CGROUP:
		if (stat(arg, &st) || !S_ISDIR(st.st_mode)) {
			amp_err("no such cgroup directory: %s", arg);
			return EINVAL;
		}
		o->cgroup = arg;
		break;
	case OPT_DEV:
		if (blockdev_resolve(arg, &o->dev_stack))
			return EINVAL;
		o->dev = arg;
		break;
	case OPT_PRESET:
		if (strcmp(arg, "journald") && strcmp(arg, "write") &&
		    strcmp(arg, "all") && strcmp(arg, "auto")) {
			amp_err("unknown preset '%s' (journald, write, all, auto)", arg);
			return EINVAL;
		}
		o->preset = arg;
		break;
	case 'd':
		errno = 0;
		o->duration = strtod(arg, &end);
		if (errno || end == arg || *end || !(o->duration > 0) ||
		    o->duration > 365 * 86400.0) {
			amp_err("invalid duration '%s' (seconds, > 0)", arg);
			return EINVAL;
		}
		break;
	case 'j': o->json = true; break;
	case 'o':
		if (o->mode == AMP_MODE_RECORD)
			o->record_path = arg;
		else
			o->output = arg;
		break;
	case 's':
		if (top_sort_key(arg) < 0) {
			amp_err("unknown sort key '%s' (%s)", arg, TOP_SORT_KEYS);
			return EINVAL;
		}
		o->sort_key = arg;
		break;
	case OPT_BY:
		o->top_by = top_by_key(arg);
		if (o->top_by < 0) {
			amp_err("unknown --by '%s' (%s)", arg, TOP_BY_KEYS);
			return EINVAL;
		}
		o->top_by_set = true;
		break;
	case OPT_METRICS: {
		struct sockaddr_storage ss;
		socklen_t len;

		if (metrics_parse_addr(arg, &ss, &len)) {
			amp_err("invalid --metrics address '%s' (numeric HOST:PORT, e.g. "
				"127.0.0.1:9464 or [::1]:9464)", arg);
			return EINVAL;
		}
		o->metrics_addr = arg;
		break;
	}
	case OPT_METRICS_FILE: {
		/* Renamed into place each time: its directory must be writable. */
		char dir[PATH_MAX];
		const char *slash = strrchr(arg, '/');

		if (!slash)
			snprintf(dir, sizeof(dir), ".");
		else
			snprintf(dir, sizeof(dir), "%.*s", slash == arg ? 1 : (int)(slash - arg), arg);
		if (!*arg || (slash && !slash[1])) {
			amp_err("--metrics-file '%s': no file name", arg);
			return EINVAL;
		}
		if (access(dir, W_OK)) {
			amp_err("cannot write metrics file %s: %s: %s", arg, dir, strerror(errno));
			return EINVAL;
		}
		o->metrics_file = arg;
		break;
	}
	case 'q': o->quiet = true; break;
	case 'v': o->verbose = true; break;
	case OPT_MAX_ENTRIES:
		return parse_u32("--max-entries", arg, 16, 1 << 22, &o->max_entries) ? EINVAL : 0;
	case OPT_MAX_PAGES:
		return parse_u32("--max-pages", arg, 16, 1 << 24, &o->max_pages) ? EINVAL : 0;
	case OPT_MAX_FILES:
		return parse_u32("--max-files", arg, 1, 1 << 20, &o->max_files) ? EINVAL : 0;
	case OPT_METRICS_SENDERS:
		return parse_u32("--metrics-senders", arg, 0, 10000, &o->metrics_senders) ? EINVAL : 0;
	case OPT_RINGBUF_KB:
		if (parse_u32("--ringbuf-kb", arg, 4, AMP_RINGBUF_KB_MAX, &o->ringbuf_kb))
			return EINVAL;
		if (o->ringbuf_kb & (o->ringbuf_kb - 1)) {
			amp_err("--ringbuf-kb must be a power of 2, got %u", o->ringbuf_kb);
			return EINVAL;
		}
		break;
	case OPT_SETTLE:
		if (parse_ulong("--settle-timeout", arg, 1, 86400, &v))
			return EINVAL;
		o->settle_timeout = v;
		break;
	case OPT_RAW_SYSCALLS:
		o->raw_syscalls = true;
		break;
	case OPT_NO_BTRFS_RESERVATIONS:
		o->no_btrfs_reservations = true;
		break;
	case OPT_BTF:
		if (access(arg, R_OK)) {
			amp_err("cannot read BTF file %s", arg);
			return EINVAL;
		}
		o->btf_path = arg;
		break;
	case ARGP_KEY_ARG:
		if (o->mode == AMP_MODE_TOP)
			return top_positional(o, state->arg_num, arg);
		amp_err("unexpected argument '%s'", arg);
		return EINVAL;
	case ARGP_KEY_ERROR:
		amp_argp_error(state);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* Options that make no sense for the command: one line, not silence. */
static int check_mode(const struct trace_opts *o)
{
	static const char *const names[] = { "trace", "record", "top" };
	const char *cmd = names[o->mode];

	if (o->sort_key && o->mode != AMP_MODE_TOP) {
		amp_err("%s: -s sorts `amptrace top` rows; not an option here", cmd);
		return -1;
	}
	if (o->top_by_set && o->mode != AMP_MODE_TOP) {
		amp_err("%s: --by groups `amptrace top` rows; not an option here", cmd);
		return -1;
	}
	if (o->mode == AMP_MODE_RECORD && !o->record_path) {
		amp_err("record: -o FILE is required (the record file)");
		return -1;
	}
	if (o->mode == AMP_MODE_TOP && (o->json || o->quiet || o->output)) {
		amp_err("top: draws on stdout; -j, -q and -o are for trace and record");
		return -1;
	}
	return 0;
}

/* 0: run; 1: handled (--help); <0: error, already reported. */
int trace_parse_args(int argc, char **argv, enum amp_mode mode, struct trace_opts *o)
{
	static const char *const docs[] = {
		[AMP_MODE_TRACE] = trace_doc, [AMP_MODE_RECORD] = record_doc, [AMP_MODE_TOP] = top_doc,
	};
	const struct argp argp = {
		.options = trace_options,
		.parser = parse_opt,
		.args_doc = mode == AMP_MODE_TOP ? "[INTERVAL [COUNT]]" :
			    mode == AMP_MODE_RECORD ? "-o FILE" : "",
		.doc = docs[mode],
	};
	int err;

	memset(o, 0, sizeof(*o));
	o->mode = mode;
	o->argc = argc;
	o->argv = argv;
	o->interval = DEF_INTERVAL;
	o->preset = AMP_STR(DEF_PRESET);
	o->settle_timeout = DEF_SETTLE_TIMEOUT;
	o->max_entries = DEF_MAX_ENTRIES;
	o->max_pages = DEF_MAX_PAGES;
	o->max_files = DEF_MAX_FILES;
	o->metrics_senders = DEF_METRICS_SENDERS;
	o->ringbuf_kb = DEF_RINGBUF_KB;

	err = amp_argp_parse(&argp, argc, argv, mode == AMP_MODE_TOP ? "amptrace top" :
			     mode == AMP_MODE_RECORD ? "amptrace record" : "amptrace trace", o);
	if (err)
		return err > 0 ? 1 : -1;
	if ((o->comm != NULL) + (o->nr_pids > 0) + (o->cgroup != NULL) > 1) {
		amp_err("choose one kind of target: -p, -c or --cgroup");
		return -1;
	}
	if (o->mode == AMP_MODE_RECORD)
		o->quiet = true;	/* the entries go to the record */
	return check_mode(o);
}
