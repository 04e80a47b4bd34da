// SPDX-License-Identifier: GPL-2.0
/*
 * `amptrace explain`: options, then the journal files opened, the reader's
 * views (explain/explain_views.c) and, with --trace, the trace explained
 * (explain/explain_trace.c).
 */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "cli/cli.h"
#include "cli/defaults.h"
#include "explain/explain.h"
#include "explain/explain_entries.h"
#include "explain/explain_trace.h"
#include "explain/explain_views.h"

/* The options: explain's own, and the command line's. */
struct explain_cmd {
	struct explain_opts x;
	const char *trace;	/* -t: trace -j output or a record */
	const char *output;	/* -o */
};

static const char explain_doc[] =
"Explain which journal objects and which log fields each journald entry wrote.\v"
"With --trace, every entry of a recorded `amptrace trace -j` run is matched to\n"
"the journal entries journald wrote during it (by time), and each page it\n"
"dirtied to the objects that lie there and the field or structure that\n"
"wrote them; a per-field table sums pages and device bytes over entries and\n"
"puts them next to the plain-append (export) size.  The journal files are\n"
"read as they are now: later appends do not move earlier objects.\n"
"\n"
"Without --trace, the reader's own views: --header, --objects, --entries\n"
"(like journalctl -o export), --range, --check, --stats.\n"
"\n"
"EXAMPLES:\n"
"  amptrace trace -c systemd-journal -j -o trace.json -d 30\n"
"  amptrace explain -t trace.json /var/log/journal/*/system.journal\n"
"  amptrace explain --entries --show-values F.journal  # = journalctl -o export\n"
"  amptrace explain --range 0x2c000-0x2d000 F.journal  # objects on a page\n";

enum {
	OPT_SHOW_VALUES = 256,
	OPT_ALL_OBJECTS,
	OPT_HEADER,
	OPT_OBJECTS,
	OPT_ENTRIES,
	OPT_RANGE,
	OPT_CHECK,
	OPT_STATS,
	OPT_WINDOW,
	OPT_ID,
};

static const struct argp_option explain_options[] = {
	{ "trace", 't', "FILE", 0, "Recorded trace (amptrace trace -j -o FILE) to explain", 0 },
	{ "json", 'j', NULL, 0, "JSON lines instead of tables", 0 },
	{ "output", 'o', "FILE", 0, "Write there instead of stdout", 0 },
	{ "show-values", OPT_SHOW_VALUES, NULL, 0, "Print log payloads, not just names and sizes", 0 },
	{ "all-objects", OPT_ALL_OBJECTS, NULL, 0, "List every object on a dirtied page, not only those written", 0 },
	{ "id", OPT_ID, "N", 0, "Only trace entry N (repeatable)", 0 },
	{ "window", OPT_WINDOW, "SECONDS", 0,
	  "Farthest a journal entry's time stamp may be from its traced syscall ("
	  AMP_STR(DEF_WINDOW) ")", 0 },
	{ "header", OPT_HEADER, NULL, 0, "Print each file's header", 1 },
	{ "objects", OPT_OBJECTS, NULL, 0, "List every object: offset, type, size, owner", 1 },
	{ "entries", OPT_ENTRIES, NULL, 0, "List entries in journalctl's export format", 1 },
	{ "range", OPT_RANGE, "A-B", 0, "Objects overlapping the bytes [A, B)", 1 },
	{ "check", OPT_CHECK, NULL, 0, "Verify objects, hashes, chains and entries", 1 },
	{ "stats", OPT_STATS, NULL, 0, "Read as explain does; print time and memory", 1 },
	{},
};

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || end == s || *s == '-' ? -1 : (int)(end - s);
}

static int parse_opt(int key, char *arg, struct argp_state *state)
{
	struct explain_cmd *c = state->input;
	struct explain_opts *o = &c->x;
	unsigned long long *ids;
	uint64_t v;
	char *end;
	int n;

	switch (key) {
	case 't': c->trace = arg; break;
	case 'j': o->json = true; break;
	case 'o': c->output = arg; break;
	case OPT_SHOW_VALUES: o->show_values = true; break;
	case OPT_ALL_OBJECTS: o->all_objects = true; break;
	case OPT_HEADER: o->header = true; break;
	case OPT_OBJECTS: o->objects = true; break;
	case OPT_ENTRIES: o->entries = true; break;
	case OPT_CHECK: o->check = true; break;
	case OPT_STATS: o->stats = true; break;
	case OPT_RANGE:
		n = parse_u64(arg, &o->range_a);
		if (n < 0 || arg[n] != '-' || parse_u64(arg + n + 1, &o->range_b) < 0 ||
		    arg[n + 1 + parse_u64(arg + n + 1, &v)] || o->range_b <= o->range_a) {
			amp_err("invalid --range '%s' (expected A-B with A < B, e.g. 0x2000-0x3000)", arg);
			return EINVAL;
		}
		o->range = true;
		break;
	case OPT_WINDOW:
		errno = 0;
		o->window = strtod(arg, &end);
		if (errno || end == arg || *end || !(o->window >= 0) || o->window > 3600) {
			amp_err("invalid --window '%s' (seconds, 0 to 3600)", arg);
			return EINVAL;
		}
		break;
	case OPT_ID:
		n = parse_u64(arg, &v);
		if (n < 0 || arg[n]) {
			amp_err("invalid --id '%s' (an entry number)", arg);
			return EINVAL;
		}
		ids = realloc(o->ids, (o->nr_ids + 1) * sizeof(*ids));
		if (!ids)
			return ENOMEM;
		o->ids = ids;
		o->ids[o->nr_ids++] = v;
		break;
	case ARGP_KEY_ARG:
		if (explain_add_file(o, arg))
			return ENOMEM;
		break;
	case ARGP_KEY_ERROR:
		amp_argp_error(state);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* 0: run; 1: --help printed; -1: error, already reported. */
static int explain_parse_args(int argc, char **argv, struct explain_cmd *c)
{
	static const struct argp argp = {
		.options = explain_options,
		.parser = parse_opt,
		.args_doc = "JOURNAL...",
		.doc = explain_doc,
	};
	struct explain_opts *o = &c->x;
	int r;

	memset(c, 0, sizeof(*c));
	o->window = DEF_WINDOW;
	r = amp_argp_parse(&argp, argc, argv, "amptrace explain", c);
	if (r)
		return r;
	if (!o->nr_files) {
		amp_err("no journal file given (amptrace explain [-t TRACE] FILE.journal...)");
		return -1;
	}
	if (!c->trace && !o->header && !o->objects && !o->entries && !o->range &&
	    !o->check && !o->stats) {
		amp_err("nothing to do: give --trace FILE, or --header, --objects, --entries, "
			"--range, --check or --stats");
		return -1;
	}
	return 0;
}


int cmd_explain(int argc, char **argv)
{
	struct explain_cmd c;
	struct explain_opts *opt = &c.x;
	struct xtrace tr = { 0 };
	double *t_open = NULL;
	int r = explain_parse_args(argc, argv, &c);

	if (r)
		goto out;
	opt->out = stdout;
	if (c.output && !(opt->out = fopen(c.output, "w"))) {
		amp_err("cannot write %s: %s", c.output, strerror(errno));
		r = -1;
		goto out;
	}
	t_open = calloc(opt->nr_files, sizeof(*t_open));
	r = t_open ? explain_open(opt, t_open) : -ENOMEM;
	if (!r)
		r = explain_views(opt, t_open);
	if (!r && c.trace)
		r = xtrace_load(&tr, opt, c.trace);
	if (!r && c.trace)
		r = explain_trace(opt, &tr);
	if (opt->out != stdout && fclose(opt->out) && !r) {
		amp_err("writing %s: %s", c.output, strerror(errno));
		r = -1;
	}
out:
	xtrace_free(&tr);
	explain_close(opt);
	free(t_open);
	return r < 0 ? 1 : 0;
}
