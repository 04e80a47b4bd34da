// SPDX-License-Identifier: GPL-2.0
/* `amptrace trace` command line: argp, with one-line errors of our own. */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "loader.h"

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
"  amptrace trace --cgroup /sys/fs/cgroup/app -j   # a cgroup, JSON lines\n";

enum {
	OPT_CGROUP = 256,
	OPT_DEV,
	OPT_PRESET,
	OPT_MAX_ENTRIES,
	OPT_MAX_PAGES,
	OPT_MAX_THREADS,
	OPT_MAX_FILES,
	OPT_RINGBUF_KB,
	OPT_SETTLE,
	OPT_BTF,
};

static const struct argp_option trace_options[] = {
	{ "pid", 'p', "PID", 0, "Trace this process (repeatable)", 0 },
	{ "comm", 'c', "COMM", 0, "Trace processes with this name", 0 },
	{ "cgroup", OPT_CGROUP, "PATH", 0, "Trace processes in this cgroup v2 (and below)", 0 },
	{ "dev", OPT_DEV, "DISK", 0, "Limit the device side to this disk (e.g. loop0)", 0 },
	{ "preset", OPT_PRESET, "NAME", 0, "journald | write | all | auto (default auto)", 0 },
	{ "duration", 'd', "SECONDS", 0, "Stop after this long (default: Ctrl-C)", 0 },
	{ "json", 'j', NULL, 0, "JSON lines instead of a table", 0 },
	{ "output", 'o', "FILE", 0, "Write the report here instead of stdout", 0 },
	{ "quiet", 'q', NULL, 0, "Print the summary only", 0 },
	{ "verbose", 'v', NULL, 0, "Show libbpf's log and probe decisions", 0 },
	{ "max-entries", OPT_MAX_ENTRIES, "N", 0, "Open+unsettled entries kept (16384)", 1 },
	{ "max-pages", OPT_MAX_PAGES, "N", 0, "Dirty folios awaiting write-out (262144)", 1 },
	{ "max-threads", OPT_MAX_THREADS, "N", 0, "Traced threads (4096)", 1 },
	{ "max-files", OPT_MAX_FILES, "N", 0, "Files in the per-file summary (4096)", 1 },
	{ "ringbuf-kb", OPT_RINGBUF_KB, "KB", 0, "Ring buffer size, power of 2 (4096)", 1 },
	{ "settle-timeout", OPT_SETTLE, "SECONDS", 0,
	  "Report a closed entry whose pages are still unwritten after this long (120)", 1 },
	{ "btf", OPT_BTF, "FILE", 0, "Kernel BTF to use instead of /sys/kernel/btf/vmlinux", 1 },
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
		if (!strncmp(arg, "/dev/", 5))
			arg += 5;
		snprintf(path, sizeof(path), "/sys/block/%s/dev", arg);
		if (!*arg || strchr(arg, '/') || access(path, R_OK)) {
			amp_err("no such disk: %s (see /sys/block)", arg);
			return EINVAL;
		}
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
	case 'o': o->output = arg; break;
	case 'q': o->quiet = true; break;
	case 'v': o->verbose = true; break;
	case OPT_MAX_ENTRIES:
		return parse_u32("--max-entries", arg, 16, 1 << 22, &o->max_entries) ? EINVAL : 0;
	case OPT_MAX_PAGES:
		return parse_u32("--max-pages", arg, 16, 1 << 24, &o->max_pages) ? EINVAL : 0;
	case OPT_MAX_THREADS:
		return parse_u32("--max-threads", arg, 1, 1 << 20, &o->max_threads) ? EINVAL : 0;
	case OPT_MAX_FILES:
		return parse_u32("--max-files", arg, 1, 1 << 20, &o->max_files) ? EINVAL : 0;
	case OPT_RINGBUF_KB:
		if (parse_u32("--ringbuf-kb", arg, 4, 1 << 20, &o->ringbuf_kb))
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
	case OPT_BTF:
		if (access(arg, R_OK)) {
			amp_err("cannot read BTF file %s", arg);
			return EINVAL;
		}
		o->btf_path = arg;
		break;
	case ARGP_KEY_ARG:
		amp_err("unexpected argument '%s'", arg);
		return EINVAL;
	case ARGP_KEY_ERROR:
		/* getopt stays silent under ARGP_NO_ERRS: name the culprit,
		 * unless one of our checks already said what was wrong. */
		if (!amp_errors && state->next > 0 && state->next <= state->argc)
			amp_err("unknown option or missing value: '%s' (try --help)",
				state->argv[state->next - 1]);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* 0: run; 1: handled (--help); <0: error, already reported. */
int trace_parse_args(int argc, char **argv, struct trace_opts *o)
{
	static const struct argp argp = {
		.options = trace_options,
		.parser = parse_opt,
		.args_doc = "",
		.doc = trace_doc,
	};
	int err;

	memset(o, 0, sizeof(*o));
	o->preset = "auto";
	o->settle_timeout = 120;
	o->max_entries = 16384;
	o->max_pages = 262144;
	o->max_threads = 4096;
	o->max_files = 4096;
	o->ringbuf_kb = 4096;

	err = argp_parse(&argp, argc, argv, ARGP_NO_EXIT | ARGP_NO_ERRS, NULL, o);
	if (err)
		return -1;
	/* argp printed --help/--usage and, under ARGP_NO_EXIT, came back. */
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-?") ||
		    !strcmp(argv[i], "--usage"))
			return 1;
	if ((o->comm != NULL) + (o->nr_pids > 0) + (o->cgroup != NULL) > 1) {
		amp_err("choose one kind of target: -p, -c or --cgroup");
		return -1;
	}
	return 0;
}
