// SPDX-License-Identifier: GPL-2.0
/*
 * `amptrace report FILE`: a record from `amptrace record`, rendered
 * offline by the same code as a live trace (out/report.c), so a complete
 * record prints what `amptrace trace` printed; or drawn (out/svg.c); or,
 * with the journal files, explained per log field (explain/).  Each is a
 * sink (out/sink.h) the record's entries are handed to.
 *
 * Two passes over the file: the first checks every record, so damage is
 * one error line naming its offset before anything is printed, and finds
 * how the record ends; the second renders.  A record cut short (recorder
 * killed) is rendered as far as it goes: its entries, per-file totals
 * summed from them, and devices and losses from its last checkpoint.
 */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util.h"
#include "cli/cli.h"
#include "cli/defaults.h"
#include "explain/explain.h"
#include "explain/explain_entries.h"
#include "explain/explain_trace.h"
#include "sink/record.h"
#include "sink/report.h"
#include "sink/sink.h"
#include "sink/svg.h"

static const char report_doc[] =
"Render a record written by `amptrace record -o FILE`.\v"
"Without options, what `amptrace trace` printed live: one line per entry,\n"
"then the summary (per process, per file, per device).  A record whose\n"
"recorder was killed is read up to its last whole record and said to be\n"
"truncated; a damaged one is an error naming the offset.\n"
"\n"
"EXAMPLES:\n"
"  amptrace report run.amp                 # entries and summary, as a table\n"
"  amptrace report run.amp -j              # as JSON lines (like trace -j)\n"
"  amptrace report run.amp --svg run.svg   # scatter map: entry x page offset\n"
"  amptrace report run.amp --journal /var/log/journal/*/system.journal\n"
"                                          # per journal field (amptrace explain)\n";

enum { OPT_SVG = 256, OPT_HTML, OPT_JOURNAL, OPT_INFO };

static const struct argp_option report_options[] = {
	{ "json", 'j', NULL, 0, "JSON lines instead of a table", 0 },
	{ "quiet", 'q', NULL, 0, "Print the summary only", 0 },
	{ "svg", OPT_SVG, "FILE", 0, "Draw the scatter map as SVG into FILE (no table)", 0 },
	{ "html", OPT_HTML, "FILE", 0, "The same picture in an HTML page", 0 },
	{ "journal", OPT_JOURNAL, "FILE", 0,
	  "Explain per journal field against this journald file (repeatable)", 0 },
	{ "info", OPT_INFO, NULL, 0, "Print the record's header and state only", 0 },
	{},
};

struct report_opts {
	const char *record;
	bool json, quiet, info;
	const char *svg, *html;
	char **journals;
	int nr_journals;
};

static int parse_opt(int key, char *arg, struct argp_state *state)
{
	struct report_opts *o = state->input;
	char **j;

	switch (key) {
	case 'j': o->json = true; break;
	case 'q': o->quiet = true; break;
	case OPT_SVG: o->svg = arg; break;
	case OPT_HTML: o->html = arg; break;
	case OPT_INFO: o->info = true; break;
	case OPT_JOURNAL:
		j = realloc(o->journals, (o->nr_journals + 1) * sizeof(*j));
		if (!j)
			return ENOMEM;
		o->journals = j;
		o->journals[o->nr_journals++] = arg;
		break;
	case ARGP_KEY_ARG:
		if (o->record) {
			amp_err("one record file at a time ('%s' and '%s')", o->record, arg);
			return EINVAL;
		}
		o->record = arg;
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
static int report_parse_args(int argc, char **argv, struct report_opts *o)
{
	static const struct argp argp = {
		.options = report_options,
		.parser = parse_opt,
		.args_doc = "FILE",
		.doc = report_doc,
	};

	int r;

	memset(o, 0, sizeof(*o));
	r = amp_argp_parse(&argp, argc, argv, "amptrace report", o);
	if (r)
		return r;
	if (!o->record) {
		amp_err("no record file given (amptrace report FILE)");
		return -1;
	}
	if (o->nr_journals && (o->svg || o->html)) {
		amp_err("--journal explains entries, --svg/--html draw them: one at a time");
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------- pass 1 --- */

struct scan {
	__u64 entries;
	enum record_status end;		/* RECORD_END or RECORD_TRUNCATED */
	__u64 end_offset;
	bool final;			/* the final summary was read */
	bool have_checkpoint;
	struct summary last;		/* the last summary's devices and losses (copy) */
	__u64 last_ns;			/* latest entry time, for a truncated run's duration */
	char problem[160];
};

static int scan(struct record_reader *rr, const char *path, struct scan *sc)
{
	struct record_item it;
	enum record_status st;

	memset(sc, 0, sizeof(*sc));
	while ((st = record_next(rr, &it)) == RECORD_MORE) {
		if (it.type == RECORD_ENTRY) {
			sc->entries++;
			if (it.entry.start_ns > sc->last_ns)
				sc->last_ns = it.entry.start_ns;
			if (it.entry.end_ns > sc->last_ns)
				sc->last_ns = it.entry.end_ns;
			continue;
		}
		if (it.entries != sc->entries) {
			amp_err("%s: corrupt record at offset %llu: summary counts %llu entries "
				"before it, the file has %llu", path, (unsigned long long)it.offset,
				(unsigned long long)it.entries, (unsigned long long)sc->entries);
			return -1;
		}
		free(sc->last.devs);
		sc->last = it.summary;
		sc->last.files = NULL;
		sc->last.nr_files = 0;
		sc->last.devs = malloc((it.summary.nr_devs ? it.summary.nr_devs : 1) *
				       sizeof(*sc->last.devs));
		if (!sc->last.devs)
			return -1;
		memcpy(sc->last.devs, it.summary.devs, it.summary.nr_devs * sizeof(*sc->last.devs));
		sc->final = it.final;
		sc->have_checkpoint = true;
	}
	if (st == RECORD_CORRUPT) {
		amp_err("%s: corrupt record %s", path, record_problem(rr));
		return -1;
	}
	sc->end = st;
	sc->end_offset = record_offset(rr);
	snprintf(sc->problem, sizeof(sc->problem), "%s", record_problem(rr));
	return 0;
}

/* ------------------------------------------------------------- pass 2 --- */

/* Per file, summed from entries: for a record without its final summary. */
struct file_sums {
	struct summary_file *f;
	size_t n, cap;
	__u32 page_size;
};

static struct summary_file *file_sum(struct file_sums *fs, __u32 dev, __u64 ino, __u32 pid)
{
	struct amp_file_key key = { .dev = dev, .ino = ino };
	size_t n = fs->n;
	struct summary_file *f = amp_row(&fs->f, &fs->n, &fs->cap, sizeof(*f), &key, sizeof(key));

	if (f && fs->n > n) {
		f->st.last_pid = pid;
		f->st.last_entry = ~0ULL;
	}
	return f;
}

static void file_sums_entry(struct file_sums *fs, const struct amp_entry *e)
{
	struct summary_file *f;

	if (e->fd_ino && (f = file_sum(fs, e->fd_dev, e->fd_ino, e->pid))) {
		f->st.entries++;
		f->st.last_entry = e->id;
		f->st.syscall_bytes += e->bytes > 0 ? e->bytes : 0;
	}
	for (__u32 i = 0; i < e->nr_runs && i < AMP_SCATTER_MAX; i++) {
		const struct amp_page_run *run = &e->runs[i];

		f = file_sum(fs, run->dev, run->ino, e->pid);
		if (!f)
			continue;
		if (f->st.last_entry != e->id)
			f->st.entries++;
		f->st.last_entry = e->id;
		f->st.folios_dirtied++;
		f->st.pages_dirtied += run->npages;
		/* The kernel counts bytes as written; whole pages are what it writes. */
		if (run->written)
			f->st.dev_bytes += (__u64)run->npages * fs->page_size;
	}
}

/* Where the record's entries go: one of the table or JSON lines, the
 * scatter map, explain's list. */
struct consumers {
	struct sink sink;
	struct svg *svg;	/* drawing */
	struct xtrace trace;	/* --journal */
	struct file_sums files;
};

static int render(struct record_reader *rr, struct consumers *c)
{
	struct record_item it;
	enum record_status st;

	if (record_rewind(rr))
		return -1;
	while ((st = record_next(rr, &it)) == RECORD_MORE) {
		if (it.type == RECORD_SUMMARY) {
			if (it.final)
				sink_summary(&c->sink, &it.summary, true);
			continue;
		}
		sink_entry(&c->sink, &it.entry, &it.costs);
		file_sums_entry(&c->files, &it.entry);
	}
	return 0;
}

/* The summary of a record cut short: as far as it goes. */
static void truncated_summary(struct scan *sc, const struct record_header *h,
			      struct consumers *c, const char *path)
{
	struct summary s = sc->last;
	double upto = sc->last_ns > h->start_boot_ns ?
		      (sc->last_ns - h->start_boot_ns) / 1e9 : 0;

	if (upto > s.duration_s)
		s.duration_s = upto;
	s.files = c->files.f;
	s.nr_files = c->files.n;
	fprintf(stderr, "%s: %s: truncated %s: the recorder stopped before its final summary; "
		"%llu entries read, per-file totals summed from them, devices and losses %s\n",
		amp_prog, path, sc->end == RECORD_TRUNCATED ? sc->problem :
		"at the end of the file", (unsigned long long)sc->entries,
		sc->have_checkpoint ? "as of its last checkpoint" : "unknown (no checkpoint)");
	sink_summary(&c->sink, &s, true);
}

static void print_info(const char *path, const struct record_header *h, const struct scan *sc)
{
	time_t t = h->start_real_ns / 1000000000ULL;
	char when[64];
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	printf("record:   %s, format version %u, %llu bytes read\n", path, h->version,
	       (unsigned long long)sc->end_offset);
	printf("host:     %s, kernel %s, page size %u\n", h->host, h->kernel, h->page_size);
	printf("started:  %s\n", when);
	printf("command:  %s\n", h->cmdline);
	printf("entries:  %llu\n", (unsigned long long)sc->entries);
	if (sc->final)
		printf("state:    complete (final summary present)\n");
	else
		printf("state:    truncated %s\n", sc->end == RECORD_TRUNCATED ? sc->problem :
		       "at the end of the file (no final summary)");
}

/* The record's entries, explained against the journal files given. */
static int run_explain(struct consumers *c, const struct report_opts *o)
{
	struct explain_opts opt = { .out = stdout, .json = o->json, .window = DEF_WINDOW };
	int r = 0;

	for (int i = 0; i < o->nr_journals && !r; i++)
		r = explain_add_file(&opt, o->journals[i]) ? -ENOMEM : 0;
	if (!r)
		r = explain_open(&opt, NULL);
	if (!r && !c->trace.n) {
		amp_err("%s: no entry records", o->record);
		r = -1;
	}
	if (!r) {
		xtrace_locate(&c->trace, &opt);
		r = explain_trace(&opt, &c->trace);
	}
	explain_close(&opt);
	return r < 0 ? 1 : 0;
}

static int draw(struct consumers *c, const struct report_opts *o, const struct scan *sc)
{
	char title[256];
	const char *base = strrchr(o->record, '/');

	snprintf(title, sizeof(title), "amptrace: pages dirtied per entry, %s",
		 base ? base + 1 : o->record);
	if (o->svg && svg_write(c->svg, o->svg, false, title))
		return -1;
	if (o->html && svg_write(c->svg, o->html, true, title))
		return -1;
	fprintf(stderr, "%s: drew %llu entries into %s%s%s\n", amp_prog,
		(unsigned long long)sc->entries, o->svg ? o->svg : "",
		o->svg && o->html ? " and " : "", o->html ? o->html : "");
	return 0;
}

int cmd_report(int argc, char **argv)
{
	struct consumers c = {};
	struct record_reader *rr = NULL;
	const struct record_header *h;
	struct report *rep;
	struct report_opts o;
	struct scan sc = {};
	int rc = 1, r;

	r = report_parse_args(argc, argv, &o);
	if (r) {
		free(o.journals);
		return r < 0 ? 1 : 0;
	}
	rr = record_open(o.record);
	if (!rr)
		goto cleanup;
	h = record_header(rr);
	if (scan(rr, o.record, &sc))
		goto cleanup;
	if (o.info) {
		print_info(o.record, h, &sc);
		rc = 0;
		goto cleanup;
	}

	c.files.page_size = h->page_size;
	if (o.svg || o.html) {
		c.svg = svg_new(record_path, rr);
		if (!c.svg)
			goto cleanup;
		c.sink = svg_sink(c.svg);
	} else if (o.nr_journals) {
		c.sink = xtrace_sink(&c.trace, record_clock(rr), record_path, rr);
	} else {
		setvbuf(stdout, NULL, _IOLBF, 0);
		rep = report_new(stdout, o.json, o.quiet, record_clock(rr));
		if (!rep)
			goto cleanup;
		report_set_paths(rep, record_path, rr);
		c.sink = report_sink(rep);
	}
	if (render(rr, &c)) {
		amp_err("%s: cannot read it again: %s", o.record, strerror(errno));
		goto cleanup;
	}
	if (!sc.final)
		truncated_summary(&sc, h, &c, o.record);
	if (c.svg)
		rc = draw(&c, &o, &sc) ? 1 : 0;
	else if (o.nr_journals)
		rc = run_explain(&c, &o);
	else
		rc = 0;

cleanup:
	if (c.sink.ops)
		sink_close(&c.sink, !rc);
	xtrace_free(&c.trace);
	free(c.files.f);
	free(sc.last.devs);
	free(o.journals);
	record_close(rr);
	return rc;
}
