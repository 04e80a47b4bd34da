// SPDX-License-Identifier: GPL-2.0
/*
 * `amptrace top`: per-interval rates of the entries delivered in that
 * interval, grouped by who sent their records (--by: the sender's pid,
 * comm or systemd unit) and per file, and per device of the bytes written
 * by class (from the kernel's counters, so real time).  Every grouping is
 * kept all the time, so that the b key switches at once.
 *
 * An entry counts in the interval in which its bill is complete (its pages
 * written, its window closed), not when its syscall ran: rates lag the
 * writer by the write-back delay.  The ENTRIES and AMP columns are totals
 * since the start, so a row stays meaningful between bursts.
 *
 * A terminal gets a full-screen redraw (plain ANSI: cursor home, erase to
 * end of line/screen) and keys q (quit), s (next sort key) and b (next
 * grouping); anything
 * else gets time-stamped lines per interval, rows with activity only, like
 * pidstat.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include "util.h"
#include "sink/bill.h"
#include "sink/by_sender.h"
#include "sink/top.h"
#include "sys/paths.h"
#include "sys/senders.h"

struct agg {
	double entries, bytes, pages, cost[NR_BILL], ios;
};

struct row {
	__u32 pid;		/* first, the row's key: a sender (pid), or */
	__u32 dev;		/* a file (dev, ino), or */
	__u64 ino;
	char name[SENDER_UNIT_LEN];	/* a sender's comm or unit */
	char comm[AMP_COMM_LEN];
	const char *path;	/* path_of()'s cached string */
	struct agg cur, total, rate;
};

struct table {
	struct row *rows;
	size_t n, cap;
};

struct devrow {
	__u32 kdev;		/* first, the row's key */
	char name[AMP_DISK_NAME_LEN];
	double bytes[AMP_NR_CLASSES], counter, ios;	/* cumulative at the last tick */
	double rate[AMP_NR_CLASSES], rate_counter, rate_ios;
	bool have_counter;
};

static const char *const sort_keys[] = { "dev", "entries", "bytes", "pages", "ios", "amp", "name" };
#define NR_SORT_KEYS (sizeof(sort_keys) / sizeof(sort_keys[0]))
/* enum top_by's names, in order. */
static const char *const by_names[] = { "pid", "comm", "unit", "file" };

struct top {
	FILE *out;
	bool tty, keys;
	double interval;
	unsigned long count, shown;
	unsigned sort;
	enum top_by by;
	struct table by_table[TOP_BY_FILE + 1];	/* by_table[TOP_BY_FILE]: files */
	struct devrow *devs;
	size_t nr_devs, cap_devs;
	__u64 entries, entries_cur, losses;
	double last;
	double real0;		/* CLOCK_REALTIME at start: stamps on the interval grid */
	time_t stamp;
	struct termios saved;
};

static double real_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int top_by_key(const char *key)
{
	for (unsigned i = 0; i < ARRAY_SIZE(by_names); i++)
		if (!strcmp(key, by_names[i]))
			return i;
	return -1;
}

int top_sort_key(const char *key)
{
	for (unsigned i = 0; i < NR_SORT_KEYS; i++)
		if (!strcmp(key, sort_keys[i]))
			return i;
	return -1;
}

struct top *top_new(double interval, unsigned long count, const char *sort_key,
		    enum top_by by)
{
	struct top *t = calloc(1, sizeof(*t));
	struct termios raw;

	if (!t)
		return NULL;
	t->out = stdout;
	t->tty = isatty(STDOUT_FILENO);
	t->interval = interval;
	t->count = count;
	t->sort = sort_key ? top_sort_key(sort_key) : 0;
	t->by = by;
	t->last = now_s();
	t->real0 = real_s();
	/* Keys without Enter: no canonical mode, no echo; ^C still signals. */
	if (t->tty && isatty(STDIN_FILENO) && !tcgetattr(STDIN_FILENO, &t->saved)) {
		raw = t->saved;
		raw.c_lflag &= ~(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		t->keys = !tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	setvbuf(t->out, NULL, _IOFBF, 1 << 16);	/* one write per screen */
	if (t->tty)
		/* Clear; hide the cursor; cut long lines at the edge, don't wrap. */
		fputs("\033[H\033[2J\033[?25l\033[?7l", t->out);
	return t;
}

void top_free(struct top *t)
{
	if (!t)
		return;
	if (t->keys)
		tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
	if (t->tty)
		fputs("\033[?25h\033[?7h", t->out);
	fflush(t->out);
	for (int i = 0; i <= TOP_BY_FILE; i++)
		free(t->by_table[i].rows);
	free(t->devs);
	free(t);
}

static struct row *table_get(struct table *tb, __u32 pid, __u32 dev, __u64 ino,
			     const char *name)
{
	struct { __u32 pid, dev; __u64 ino; char name[SENDER_UNIT_LEN]; } key = {
		.pid = pid, .dev = dev, .ino = ino,
	};

	if (name)
		snprintf(key.name, sizeof(key.name), "%s", name);
	return amp_row(&tb->rows, &tb->n, &tb->cap, sizeof(*tb->rows), &key, sizeof(key));
}

/* Entry e counts in row r with these pages and logged bytes, and `share`
 * of its device costs c. */
static void add_share(struct row *r, const struct amp_entry *e, const struct entry_costs *c,
		      double pages, double bytes, double share)
{
	struct agg *a[2] = { &r->cur, &r->total };
	struct bill b = entry_bill(e, c);

	for (int i = 0; i < 2; i++) {
		a[i]->entries += 1;
		a[i]->bytes += bytes;
		a[i]->pages += pages;
		for (int k = 0; k < NR_BILL; k++)
			a[i]->cost[k] += b.cost[k] * share;
		a[i]->ios += e->ios * share;
	}
}

/*
 * Per file: an entry's device bytes are shared over the files it dirtied,
 * by pages (its scatter list); its logged bytes go to the file it wrote
 * to, or, for a receive (no target file), are shared the same way.
 */
static void files_entry(struct top *t, const struct amp_entry *e, const struct entry_costs *c)
{
	struct { __u32 dev; __u64 ino; double pages; } f[AMP_SCATTER_MAX + 1];
	double total = 0, bytes = e->bytes > 0 ? e->bytes : 0;
	int nf = 0;

	for (__u32 i = 0; i < e->nr_runs && i < AMP_SCATTER_MAX; i++) {
		const struct amp_page_run *run = &e->runs[i];
		int k;

		for (k = 0; k < nf && (f[k].dev != run->dev || f[k].ino != run->ino); k++)
			;
		if (k == nf)
			f[nf++] = (typeof(f[0])){ run->dev, run->ino, 0 };
		f[k].pages += run->npages;
		total += run->npages;
	}
	if (e->fd_ino) {
		int k;

		for (k = 0; k < nf && (f[k].dev != e->fd_dev || f[k].ino != e->fd_ino); k++)
			;
		if (k == nf)
			f[nf++] = (typeof(f[0])){ e->fd_dev, e->fd_ino, 0 };
	}
	for (int k = 0; k < nf; k++) {
		struct row *r = table_get(&t->by_table[TOP_BY_FILE], 0, f[k].dev, f[k].ino, NULL);
		bool target = e->fd_ino && f[k].dev == e->fd_dev && f[k].ino == e->fd_ino;
		double share = total ? f[k].pages / total : target ? 1.0 : 0.0;

		if (!r)
			continue;
		if (!r->path)
			r->path = path_of(f[k].dev, f[k].ino, e->pid);
		add_share(r, e, c, f[k].pages, e->fd_ino ? (target ? bytes : 0) : bytes * share,
			  share);
	}
}

/*
 * By sender: its pid, comm or unit.  An entry with no sender (none known)
 * is its process's own; amptrace's own cost is a row of its own.
 */
void top_entry(struct top *t, const struct amp_entry *e, const struct entry_costs *c)
{
	const struct sender *s = c->sender;
	char label[SENDER_UNIT_LEN], kind[SENDER_UNIT_LEN];
	bool own = e->flags & AMP_ENTRY_OWN;
	const char *comm = own ? "(amptrace-own)" : !s ? e->comm : s->comm[0] ? s->comm :
			   sender_label(s, kind, sizeof(kind));	/* kernel, ... */
	struct row *r[3];

	r[TOP_BY_PID] = table_get(&t->by_table[TOP_BY_PID], own ? 0 : s ? s->pid : e->pid, 0, 0,
				  own || (s && !s->pid) ? comm : NULL);
	r[TOP_BY_COMM] = table_get(&t->by_table[TOP_BY_COMM], 0, 0, 0, comm);
	r[TOP_BY_UNIT] = table_get(&t->by_table[TOP_BY_UNIT], 0, 0, 0,
				   entry_sender_row(e, s, label, sizeof(label)) ?: e->comm);
	t->entries++;
	t->entries_cur++;
	for (int i = TOP_BY_PID; i <= TOP_BY_UNIT; i++) {
		if (!r[i])
			continue;
		snprintf(r[i]->comm, sizeof(r[i]->comm), "%s", comm);	/* the latest name */
		add_share(r[i], e, c, e->pages_dirtied, e->bytes > 0 ? e->bytes : 0, 1.0);
	}
	files_entry(t, e, c);
}

static double dev_cost(const struct agg *a)
{
	return a->cost[BILL_DATA] + a->cost[BILL_METADATA] + a->cost[BILL_JOURNAL] +
	       a->cost[BILL_WINDOW];
}

static double amp_of(const struct row *r)
{
	return r->total.bytes > 0 ? dev_cost(&r->total) / r->total.bytes : 0;
}

static unsigned cur_sort;	/* qsort has no context argument */

static int cmp_rows(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	double kx, ky;

	switch (cur_sort) {
	case 1: kx = x->rate.entries; ky = y->rate.entries; break;
	case 2: kx = x->rate.bytes; ky = y->rate.bytes; break;
	case 3: kx = x->rate.pages; ky = y->rate.pages; break;
	case 4: kx = x->rate.ios; ky = y->rate.ios; break;
	case 5: kx = amp_of(x); ky = amp_of(y); break;
	case 6:
		if (x->path || y->path)
			return strcmp(x->path ? x->path : "", y->path ? y->path : "");
		return strcmp(x->name, y->name) ?: strncmp(x->comm, y->comm, AMP_COMM_LEN) ?:
		       (x->pid > y->pid) - (x->pid < y->pid);
	default: kx = dev_cost(&x->rate); ky = dev_cost(&y->rate); break;
	}
	if (kx != ky)
		return kx < ky ? 1 : -1;
	/* Ties (idle rows): the biggest spenders since the start first. */
	kx = dev_cost(&x->total);
	ky = dev_cost(&y->total);
	return kx < ky ? 1 : kx > ky ? -1 : 0;
}

/* "12.3K", "1.5", "0": 1024-based past 9999, in at most 7 characters. */
static const char *human(double v, char *buf)
{
	static const char units[] = " KMGTP";
	int u = 0;

	while (v >= 9999.5 && u < 5) {
		v /= 1024;
		u++;
	}
	if (!u)
		snprintf(buf, 16, v && v < 99.95 ? "%.1f" : "%.0f", v);
	else
		snprintf(buf, 16, "%.1f%c", v, units[u]);
	return buf;
}

/* Numbers: humanised on a terminal, plain with one decimal in lines. */
static const char *num(const struct top *t, double v, char *buf)
{
	if (t->tty)
		return human(v, buf);
	snprintf(buf, 32, "%.1f", v);
	return buf;
}

static void line_start(struct top *t, FILE *f)
{
	char ts[16];
	struct tm tm;

	if (t->tty)
		return;
	localtime_r(&t->stamp, &tm);
	strftime(ts, sizeof(ts), "%H:%M:%S", &tm);
	fprintf(f, "%s ", ts);
}

static void rate_cols(struct top *t, FILE *f, const struct row *r)
{
	char b[10][32];

	if (r->total.bytes > 0)
		snprintf(b[9], sizeof(b[9]), "%.1fx", amp_of(r));
	else
		snprintf(b[9], sizeof(b[9]), "-");	/* nothing logged to it: no ratio */
	fprintf(f, " %8llu %7s %8s %7s %8s %8s %8s %8s %8s %6s %8s",
		(unsigned long long)r->total.entries, num(t, r->rate.entries, b[0]),
		num(t, r->rate.bytes, b[1]), num(t, r->rate.pages, b[2]),
		num(t, r->rate.cost[BILL_DATA], b[3]), num(t, r->rate.cost[BILL_METADATA], b[4]),
		num(t, r->rate.cost[BILL_JOURNAL], b[5]), num(t, r->rate.cost[BILL_WINDOW], b[6]),
		num(t, dev_cost(&r->rate), b[7]), num(t, r->rate.ios, b[8]), b[9]);
}

static const char rate_hdr[] =
	" %8s %7s %8s %7s %8s %8s %8s %8s %8s %6s %8s";
#define RATE_HDR_ARGS "ENTRIES", "ENT/s", "LOG_B/s", "PAGES/s", "DATA/s", "META/s", \
	"JRNL/s", "WIN/s", "DEV_B/s", "IOS/s", "AMP"

static bool active(const struct row *r)
{
	return r->rate.entries > 0;
}

/* Lines left on the screen below `used`; lines mode: unlimited. */
static int room(struct top *t, int used)
{
	struct winsize ws;

	if (!t->tty)
		return 1 << 30;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) || !ws.ws_row)
		ws.ws_row = 24;
	return ws.ws_row - used - 1;
}

/* A blank line between blocks, on a terminal only.  Lines used. */
static int gap(struct top *t, FILE *f)
{
	if (!t->tty)
		return 0;
	fputc('\n', f);
	return 1;
}

static int title(struct top *t, FILE *f)
{
	char ts[16];
	struct tm tm;

	localtime_r(&t->stamp, &tm);
	strftime(ts, sizeof(ts), "%H:%M:%S", &tm);
	fprintf(f, "amptrace top  %s  every %.1f s  by: %s  sort: %s  entries: %llu (+%llu)  "
		"losses: %llu    keys: q quit, s sort, b by", ts, t->interval, by_names[t->by],
		sort_keys[t->sort],
		(unsigned long long)t->entries, (unsigned long long)t->entries_cur,
		(unsigned long long)t->losses);
	fputc('\n', f);
	return 1;
}

static int devices(struct top *t, FILE *f)
{
	char b[8][32];

	line_start(t, f);
	fprintf(f, "%-10s %9s %9s %9s %9s %9s %9s %9s %7s", "DEVICE", "DATA/s", "META/s",
		"JRNL/s", "BEFORE/s", "OTHER/s", "SUM/s", "COUNTER/s", "IOS/s");
	fputc('\n', f);
	for (size_t i = 0; i < t->nr_devs; i++) {
		const struct devrow *d = &t->devs[i];
		double sum = 0;

		for (int k = 0; k < AMP_NR_CLASSES; k++)
			sum += d->rate[k];
		line_start(t, f);
		fprintf(f, "%-10s %9s %9s %9s %9s %9s %9s %9s %7s", d->name,
			num(t, d->rate[AMP_CLASS_DATA], b[0]),
			num(t, d->rate[AMP_CLASS_METADATA], b[1]),
			num(t, d->rate[AMP_CLASS_JOURNAL], b[2]),
			num(t, d->rate[AMP_CLASS_BEFORE_START], b[3]),
			num(t, d->rate[AMP_CLASS_OTHER], b[4]), num(t, sum, b[5]),
			d->have_counter ? num(t, d->rate_counter, b[6]) : "-",
			num(t, d->rate_ios, b[7]));
		fputc('\n', f);
	}
	return 1 + t->nr_devs;
}

/* A header and up to `left` rows of the table grouped by `by` (lines mode:
 * the active ones).  Lines used. */
static int rows(struct top *t, FILE *f, enum top_by by, int left)
{
	const struct table *tb = &t->by_table[by];
	bool files = by == TOP_BY_FILE;
	int used = 1;

	line_start(t, f);
	if (files)
		fprintf(f, "%-23s", "FILE");
	else if (by == TOP_BY_UNIT)
		fprintf(f, "%-23s", "UNIT");
	else
		fprintf(f, "%-7s %-15s", by == TOP_BY_PID ? "PID" : "", "COMM");
	fprintf(f, rate_hdr, RATE_HDR_ARGS);
	fputc('\n', f);
	for (size_t i = 0; i < tb->n && used < left; i++) {
		const struct row *r = &tb->rows[i];
		const char *p = r->path ? r->path : "?";
		size_t len = strlen(p);

		if (!t->tty && !active(r))
			continue;
		line_start(t, f);
		if (by == TOP_BY_UNIT)
			fprintf(f, "%-23.23s", r->name);
		else if (by == TOP_BY_PID && r->pid)
			fprintf(f, "%-7u %-15.15s", r->pid, r->comm);
		else if (!files)
			fprintf(f, "%-7s %-15.15s", "-", r->comm);
		else if (t->tty && len > 23)	/* keep the end: the file name tells */
			fprintf(f, "..%-21s", p + len - 21);
		else
			fprintf(f, "%-23s", p);
		rate_cols(t, f, r);
		fputc('\n', f);
		used++;
	}
	return used;
}

/*
 * On a terminal: from the top left corner, each line erasing what a longer
 * one left there, cut to the screen's height, the last line without its
 * newline (which would scroll the title away), then erase the rest.
 */
static void present(struct top *t, const char *text)
{
	int lines = room(t, 0) + 1;

	if (!t->tty) {
		fputs(text, t->out);
		fputc('\n', t->out);	/* a blank line between intervals */
		return;
	}
	fputs("\033[H", t->out);
	for (int i = 0; i < lines && *text; i++) {
		size_t n = strcspn(text, "\n");

		fprintf(t->out, "%s%.*s\033[K", i ? "\n" : "", (int)n, text);
		text += n + (text[n] == '\n');
	}
	fputs("\033[J", t->out);
}

static void render(struct top *t)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int used = 0;

	if (!f)
		return;
	cur_sort = t->sort;
	for (int i = 0; i <= TOP_BY_FILE; i++)
		qsort(t->by_table[i].rows, t->by_table[i].n, sizeof(struct row), cmp_rows);
	if (t->tty)
		used += title(t, f) + gap(t, f);
	used += devices(t, f) + gap(t, f);
	/* Senders get the room first; files what is left, at least their header. */
	if (t->by != TOP_BY_FILE)
		used += rows(t, f, t->by, room(t, used + 2)) + gap(t, f);
	rows(t, f, TOP_BY_FILE, room(t, used));
	if (!fclose(f))
		present(t, text);
	free(text);
	fflush(t->out);
}

/*
 * A row's IOS/s: the disks' write requests shared as their bytes are (its
 * DEV_B/s times the disks' requests per byte since the start, which a
 * burst does not skew), as the trace's summary shares them; ipb 0 (no
 * disk wrote yet): the requests that carried its pages, each whole.
 */
static void rates(struct table *tb, double dt, double ipb)
{
	for (size_t i = 0; i < tb->n; i++) {
		struct row *r = &tb->rows[i];

		r->rate.entries = r->cur.entries / dt;
		r->rate.bytes = r->cur.bytes / dt;
		r->rate.pages = r->cur.pages / dt;
		r->rate.ios = ipb > 0 ? (r->cur.cost[BILL_DATA] + r->cur.cost[BILL_METADATA] +
					 r->cur.cost[BILL_JOURNAL] + r->cur.cost[BILL_WINDOW]) * ipb / dt :
			      r->cur.ios / dt;
		for (int k = 0; k < NR_BILL; k++)
			r->rate.cost[k] = r->cur.cost[k] / dt;
		memset(&r->cur, 0, sizeof(r->cur));
	}
}

static struct devrow *devrow_get(struct top *t, const struct summary_dev *d)
{
	struct devrow *p = amp_row(&t->devs, &t->nr_devs, &t->cap_devs, sizeof(*p),
				   &d->kdev, sizeof(d->kdev));

	if (p && !p->name[0])
		memcpy(p->name, d->name, sizeof(p->name));
	return p;
}

/* Device rates from the difference of two cumulative snapshots. */
static void dev_rates(struct top *t, const struct summary *s, double dt)
{
	for (size_t i = 0; i < t->nr_devs; i++) {
		memset(t->devs[i].rate, 0, sizeof(t->devs[i].rate));
		t->devs[i].rate_counter = t->devs[i].rate_ios = 0;
	}
	for (int i = 0; i < s->nr_devs; i++) {
		const struct summary_dev *d = &s->devs[i];
		struct devrow *r = devrow_get(t, d);
		double counter = d->delta.sectors_written * 512.0;

		if (!r)
			continue;
		for (int k = 0; k < AMP_NR_CLASSES; k++) {
			r->rate[k] = (d->st.bytes[k] - r->bytes[k]) / dt;
			r->bytes[k] = d->st.bytes[k];
		}
		r->have_counter = d->have_counter;
		r->rate_counter = (counter - r->counter) / dt;
		r->counter = counter;
		r->rate_ios = (d->st.ios - r->ios) / dt;
		r->ios = d->st.ios;
	}
}

bool top_tick(struct top *t, const struct summary *s)
{
	double now = now_s(), dt = now - t->last;
	const __u64 *loss = (const __u64 *)&s->losses;

	if (dt <= 0)
		dt = 1e-3;
	t->last = now;
	/* Where the tick was due, not where it ran: no repeated or skipped second. */
	t->stamp = t->real0 + (t->shown + 1) * t->interval + 0.5;
	for (int i = 0; i <= TOP_BY_FILE; i++)
		rates(&t->by_table[i], dt, disk_ios_per_byte(s));
	dev_rates(t, s, dt);
	/* Every counter but the first (entries opened) is a loss. */
	t->losses = s->entries_timed_out;
	for (size_t i = 1; i < sizeof(s->losses) / sizeof(__u64); i++)
		t->losses += loss[i];
	render(t);
	t->entries_cur = 0;
	t->shown++;
	return t->count && t->shown >= t->count;
}

bool top_keys(struct top *t)
{
	char c;

	if (!t->keys)
		return false;
	while (read(STDIN_FILENO, &c, 1) == 1) {
		if (c == 'q' || c == 'Q')
			return true;
		if (c == 's' || c == 'S') {
			t->sort = (t->sort + 1) % NR_SORT_KEYS;
			render(t);	/* at once, with the last interval's numbers */
		}
		if (c == 'b' || c == 'B') {
			t->by = (t->by + 1) % (TOP_BY_FILE + 1);
			render(t);
		}
	}
	return false;
}

static void sink_entry_cb(void *self, const struct amp_entry *e, const struct entry_costs *c)
{
	top_entry(self, e, c);
}

static int sink_summary_cb(void *self, const struct summary *s, bool final)
{
	return !final && top_tick(self, s) ? 1 : 0;
}

static int sink_close_cb(void *self, bool ok)
{
	top_free(self);
	return 0;
}

struct sink top_sink(struct top *t)
{
	static const struct sink_ops ops = {
		.entry = sink_entry_cb, .summary = sink_summary_cb, .close = sink_close_cb,
	};

	return (struct sink){ .ops = &ops, .self = t, .period = t->interval };
}
