// SPDX-License-Identifier: GPL-2.0
/*
 * The scatter map: x = entry sequence (syscall order), y = page offset in
 * the file, one band per file, one mark per dirtied folio, coloured by
 * what its write-out was (data, metadata, or never written).  Below, each
 * entry's device bytes stacked by class.  An appending logger draws a
 * rising line; journald's hash-table and array updates draw a scatter.
 *
 * Self-contained SVG (no script, font or image to fetch), optionally
 * wrapped in an HTML page.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "sink/bill.h"
#include "sink/svg.h"

#define MAX_MARKS	400000	/* a browser still draws this many rects */
#define MAX_BANDS	8

#define W		1200
#define PL		200	/* left margin: tick labels */
#define PR		24
#define PW		(W - PL - PR)
#define STRIP_H		80

static const char *const col_data = "#3b73b9";
static const char *const col_meta = "#e8833a";
static const char *const col_unwritten = "#b4b4b4";
static const char *const col_journal = "#4a9c5d";
static const char *const col_window = "#8e6bbf";

struct sentry {
	__u64 id;
	double cost[NR_BILL];	/* its bill, by class */
};

struct mark {
	__u32 entry;		/* index in entries[] (arrival order) */
	__u32 file;
	__u64 page;
	__u32 npages;
	__u8 kind, written;
};

struct sfile {
	__u32 dev;
	__u64 ino;
	char *name;
	__u64 end;		/* highest page + 1 */
	__u64 first_id;		/* bands in order of their first entry */
	__u64 pages;
	int band;		/* -1: not drawn */
};

struct svg {
	amp_path_fn path;
	void *path_ctx;
	struct sentry *entries;
	size_t nr_entries, cap_entries;
	struct mark *marks;
	size_t nr_marks, cap_marks;
	__u64 marks_dropped;
	struct sfile *files;
	size_t nr_files, cap_files;
};

struct svg *svg_new(amp_path_fn path, void *path_ctx)
{
	struct svg *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->path = path;
	s->path_ctx = path_ctx;
	return s;
}

void svg_free(struct svg *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nr_files; i++)
		free(s->files[i].name);
	free(s->files);
	free(s->entries);
	free(s->marks);
	free(s);
}

static int file_index(struct svg *s, const struct amp_entry *e, const struct amp_page_run *run)
{
	struct sfile *f;

	for (size_t i = 0; i < s->nr_files; i++)
		if (s->files[i].dev == run->dev && s->files[i].ino == run->ino)
			return i;
	if (amp_grow(&s->files, &s->cap_files, s->nr_files + 1, sizeof(*f)))
		return -1;
	f = &s->files[s->nr_files];
	memset(f, 0, sizeof(*f));
	f->dev = run->dev;
	f->ino = run->ino;
	f->first_id = e->id;
	f->name = strdup(s->path(s->path_ctx, run->dev, run->ino, e->pid));
	if (!f->name)
		return -1;
	return s->nr_files++;
}

void svg_entry(struct svg *s, const struct amp_entry *e, const struct entry_costs *c)
{
	struct bill b = entry_bill(e, c);
	struct sentry *se;

	if (amp_grow(&s->entries, &s->cap_entries, s->nr_entries + 1, sizeof(*se)))
		return;
	se = &s->entries[s->nr_entries];
	se->id = e->id;
	for (int k = 0; k < NR_BILL; k++)
		se->cost[k] = b.cost[k];
	for (__u32 i = 0; i < e->nr_runs && i < AMP_SCATTER_MAX; i++) {
		const struct amp_page_run *run = &e->runs[i];
		int fi = file_index(s, e, run);
		struct sfile *f;
		struct mark *m;

		if (fi < 0)
			continue;
		f = &s->files[fi];
		if (f->first_id > e->id)
			f->first_id = e->id;
		if (f->end < run->index + run->npages)
			f->end = run->index + run->npages;
		f->pages += run->npages;
		if (s->nr_marks >= MAX_MARKS ||
		    amp_grow(&s->marks, &s->cap_marks, s->nr_marks + 1, sizeof(*m))) {
			s->marks_dropped++;
			continue;
		}
		m = &s->marks[s->nr_marks++];
		*m = (struct mark){ .entry = s->nr_entries, .file = fi, .page = run->index,
				    .npages = run->npages, .kind = run->kind,
				    .written = run->written };
	}
	s->nr_entries++;
}

/* ---------------------------------------------------------------- render --- */

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			fputc((unsigned char)*s < 0x20 ? '?' : *s, f);
		}
	}
}

static const struct sentry *sort_base;

static int by_id(const void *a, const void *b)
{
	__u64 x = sort_base[*(const __u32 *)a].id, y = sort_base[*(const __u32 *)b].id;

	return x < y ? -1 : x > y;
}

static int by_first(const void *a, const void *b)
{
	const struct sfile *x = *(struct sfile *const *)a, *y = *(struct sfile *const *)b;

	return x->first_id < y->first_id ? -1 : x->first_id > y->first_id;
}

static double band_h(size_t bands)
{
	return bands <= 2 ? 240 : bands <= 4 ? 160 : 110;
}

static const char *mark_colour(const struct mark *m)
{
	if (!m->written)
		return col_unwritten;
	return m->kind == AMP_PAGE_FILE ? col_data : col_meta;
}

static void draw_marks(FILE *f, const struct svg *s, const __u32 *rank, const double *band_top,
		       double bh, const char *colour)
{
	double xw = (double)PW / (s->nr_entries ? s->nr_entries : 1);
	double mw = xw * 0.8 < 1 ? 1 : xw * 0.8 > 10 ? 10 : xw * 0.8;

	fprintf(f, "<g fill=\"%s\">\n", colour);
	for (size_t i = 0; i < s->nr_marks; i++) {
		const struct mark *m = &s->marks[i];
		const struct sfile *fl = &s->files[m->file];
		double ph, bottom, y, h, x;

		if (fl->band < 0 || strcmp(mark_colour(m), colour))
			continue;
		ph = bh / (fl->end ? fl->end : 1);
		bottom = band_top[fl->band] + bh;
		h = m->npages * ph;
		y = bottom - (m->page + m->npages) * ph;
		if (h < 2) {	/* at least 2 px, centred on the folio */
			y += h / 2 - 1;
			h = 2;
		}
		if (y < band_top[fl->band])
			y = band_top[fl->band];
		x = PL + (rank[m->entry] + 0.5) * xw - mw / 2;
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n",
			x, y, mw, h);
	}
	fputs("</g>\n", f);
}

static void legend_item(FILE *f, double *x, double y, const char *colour, const char *text)
{
	fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
		"<text x=\"%.0f\" y=\"%.0f\">%s</text>\n", *x, y - 10, colour, *x + 17, y, text);
	*x += 17 + 7.2 * strlen(text) + 22;
}

static void render(FILE *f, struct svg *s, const char *title)
{
	size_t n = s->nr_entries, bands = 0, hidden_files = 0;
	__u32 *order = calloc(n ? n : 1, sizeof(*order));
	__u32 *rank = calloc(n ? n : 1, sizeof(*rank));
	struct sfile **byfirst = calloc(s->nr_files ? s->nr_files : 1, sizeof(*byfirst));
	double band_top[MAX_BANDS], bh, y, xw, max_cost = 0, total_pages = 0;
	__u64 hidden_pages = 0;
	int height;

	if (!order || !rank || !byfirst)
		goto out;
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	sort_base = s->entries;
	qsort(order, n, sizeof(*order), by_id);
	for (size_t i = 0; i < n; i++)
		rank[order[i]] = i;
	for (size_t i = 0; i < s->nr_files; i++)
		byfirst[i] = &s->files[i];
	qsort(byfirst, s->nr_files, sizeof(*byfirst), by_first);
	for (size_t i = 0; i < s->nr_files; i++) {
		byfirst[i]->band = i < MAX_BANDS ? (int)i : -1;
		if (i >= MAX_BANDS) {
			hidden_files++;
			hidden_pages += byfirst[i]->pages;
		}
		total_pages += byfirst[i]->pages;
	}
	bands = s->nr_files < MAX_BANDS ? s->nr_files : MAX_BANDS;
	bh = band_h(bands);
	y = 76;
	for (size_t b = 0; b < bands; b++) {
		band_top[b] = y + 20;
		y += 20 + bh + 14;
	}
	height = y + 30 + STRIP_H + 40 + 40;

	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n",
		W, height, W, height);
	fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", W, height);
	fputs("<text x=\"16\" y=\"28\" font-size=\"17\" font-weight=\"bold\">", f);
	xml_text(f, title);
	fputs("</text>\n", f);
	fprintf(f, "<text x=\"16\" y=\"50\" fill=\"#444\">%zu entries, %.0f pages dirtied in %zu "
		"file%s. x: entry, in syscall order; y: page offset in the file (one band per file); "
		"one mark per dirtied folio.</text>\n", n, total_pages, s->nr_files,
		s->nr_files == 1 ? "" : "s");
	if (hidden_files || s->marks_dropped)
		fprintf(f, "<text x=\"16\" y=\"68\" fill=\"#a33\">Not drawn: %zu more files "
			"(%llu pages), %llu folios past %d marks.</text>\n", hidden_files,
			(unsigned long long)hidden_pages, (unsigned long long)s->marks_dropped,
			MAX_MARKS);

	for (size_t i = 0; i < s->nr_files; i++) {
		const struct sfile *fl = &s->files[i];
		double top;

		if (fl->band < 0)
			continue;
		top = band_top[fl->band];
		fprintf(f, "<text x=\"%d\" y=\"%.0f\" font-weight=\"bold\">", PL, top - 6);
		xml_text(f, fl->name);
		fprintf(f, "</text><text x=\"%d\" y=\"%.0f\" text-anchor=\"end\" fill=\"#444\">"
			"%llu pages dirtied</text>\n", W - PR, top - 6,
			(unsigned long long)fl->pages);
		fprintf(f, "<rect x=\"%d\" y=\"%.0f\" width=\"%d\" height=\"%.0f\" fill=\"#f4f5f7\" "
			"stroke=\"#c8c8c8\"/>\n", PL, top, PW, bh);
		fprintf(f, "<text x=\"%d\" y=\"%.0f\" text-anchor=\"end\" fill=\"#444\">page %llu</text>"
			"<text x=\"%d\" y=\"%.0f\" text-anchor=\"end\" fill=\"#444\">page 0</text>\n",
			PL - 6, top + 10, (unsigned long long)(fl->end ? fl->end - 1 : 0),
			PL - 6, top + bh);
	}
	draw_marks(f, s, rank, band_top, bh, col_unwritten);
	draw_marks(f, s, rank, band_top, bh, col_meta);
	draw_marks(f, s, rank, band_top, bh, col_data);

	/* Device bytes per entry, stacked by class, on one scale. */
	y += 16;
	for (size_t i = 0; i < n; i++) {
		double sum = 0;

		for (int k = 0; k < NR_BILL; k++)
			sum += s->entries[i].cost[k];
		if (sum > max_cost)
			max_cost = sum;
	}
	fprintf(f, "<text x=\"%d\" y=\"%.0f\" font-weight=\"bold\">device bytes charged per entry"
		"</text><text x=\"%d\" y=\"%.0f\" text-anchor=\"end\" fill=\"#444\">max %.0f B</text>\n",
		PL, y - 6, W - PR, y - 6, max_cost);
	fprintf(f, "<rect x=\"%d\" y=\"%.0f\" width=\"%d\" height=\"%d\" fill=\"#f4f5f7\" "
		"stroke=\"#c8c8c8\"/>\n", PL, y, PW, STRIP_H);
	xw = (double)PW / (n ? n : 1);
	for (int k = 0; k < NR_BILL && max_cost > 0; k++) {
		const char *cols[NR_BILL] = { col_data, col_meta, col_journal, col_window };

		fprintf(f, "<g fill=\"%s\">\n", cols[k]);
		for (size_t i = 0; i < n; i++) {
			const struct sentry *se = &s->entries[i];
			double below = 0, h = se->cost[k] / max_cost * STRIP_H;
			double bw = xw * 0.8 < 1 ? 1 : xw * 0.8 > 10 ? 10 : xw * 0.8;

			if (h <= 0)
				continue;
			for (int j = 0; j < k; j++)
				below += se->cost[j] / max_cost * STRIP_H;
			fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n",
				PL + (rank[i] + 0.5) * xw - bw / 2, y + STRIP_H - below - h, bw, h);
		}
		fputs("</g>\n", f);
	}
	y += STRIP_H;

	/* x axis: entry ids at up to 6 ticks. */
	for (int t = 0; t < 6 && n; t++) {
		size_t r = n == 1 ? 0 : (n - 1) * t / 5;
		double x = PL + (r + 0.5) * xw;

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#666\"/>"
			"<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\" fill=\"#444\">%llu</text>\n",
			x, y, x, y + 5, x, y + 18, (unsigned long long)s->entries[order[r]].id);
		if (n == 1)
			break;
	}
	fprintf(f, "<text x=\"%d\" y=\"%.0f\" text-anchor=\"end\" fill=\"#444\">entry id</text>\n",
		PL - 6, y + 18);

	y += 46;
	{
		double x = PL;

		legend_item(f, &x, y, col_data, "data page (written)");
		legend_item(f, &x, y, col_meta, "metadata page (written)");
		legend_item(f, &x, y, col_unwritten, "not written when tracing stopped");
		legend_item(f, &x, y, col_journal, "fs journal share");
		legend_item(f, &x, y, col_window, "window share");
	}
	fputs("</svg>\n", f);
out:
	free(order);
	free(rank);
	free(byfirst);
}

int svg_write(struct svg *s, const char *out_path, bool html, const char *title)
{
	FILE *f = fopen(out_path, "w");

	if (!f) {
		amp_err("cannot write %s: %s", out_path, strerror(errno));
		return -1;
	}
	if (html) {
		fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>", f);
		xml_text(f, title);
		fputs("</title></head>\n<body style=\"margin:0;background:#fff\">\n", f);
	}
	render(f, s, title);
	if (html)
		fputs("</body></html>\n", f);
	if (fclose(f)) {
		amp_err("cannot write %s: %s", out_path, strerror(errno));
		return -1;
	}
	return 0;
}

static void sink_entry_cb(void *self, const struct amp_entry *e, const struct entry_costs *c)
{
	svg_entry(self, e, c);
}

static int sink_close_cb(void *self, bool ok)
{
	svg_free(self);
	return 0;
}

struct sink svg_sink(struct svg *s)
{
	static const struct sink_ops ops = { .entry = sink_entry_cb, .close = sink_close_cb };

	return (struct sink){ .ops = &ops, .self = s };
}
