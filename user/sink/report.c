// SPDX-License-Identifier: GPL-2.0
/*
 * Rendering: one line per finished entry (table or JSON lines) and the
 * end-of-run summary.  Per-process totals are summed here from the
 * entries; per-file and per-device totals come from the kernel's maps.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util.h"
#include "sink/bill.h"
#include "sink/by_sender.h"
#include "sink/report.h"
#include "sys/devstat.h"
#include "sys/presets.h"

#define SCATTER_SHOWN 12	/* folio runs printed per entry in the table */

static const char *class_names[AMP_NR_CLASSES] = {
	"data", "metadata", "journal", "other", "before_start", "failed",
};

static __u64 btrfs_tree_sum(const struct amp_dev_stats *st)
{
	return btrfs_trees_sum(st->btrfs_tree, AMP_BTRFS_TREES);
}

/* {"fs": n, ...}: every tree, so that a reader's sums need no defaults. */
static json_object *btrfs_trees_json(const __u64 *tree)
{
	json_object *bt = json_object_new_object();

	for (int k = 0; k < AMP_BTRFS_TREES; k++)
		json_object_object_add(bt, btrfs_tree_names[k], json_object_new_uint64(tree[k]));
	return bt;
}

struct proc_total {
	__u32 pid;		/* first, the row's key: pid and own */
	__u32 own;		/* its entries are amptrace's own cost (AMP_ENTRY_OWN) */
	char comm[AMP_COMM_LEN];
	__u64 entries, bytes, pages, folios, write_faults, ios;
	struct bill bill;	/* its entries' bills, summed */
	__u64 scatter_dropped, unsettled;
};

struct report {
	FILE *out;
	bool json, quiet;
	const struct wall_clock *clock;	/* the tracer's, or a record's */
	amp_path_fn path;	/* path_of() live; a record's own table offline */
	void *path_ctx;
	struct proc_total *procs;
	size_t nr_procs, cap_procs;
	struct by_sender senders;	/* empty for a record from before senders */
	__u64 entries, unsettled;
	/* Entries some of whose folios' writes failed, and those bytes. */
	__u64 entries_failed_writes, failed_write_bytes;
	bool header_done;
	bool sender_column;	/* the table has one: its first entry had a sender */
};

struct report *report_new(FILE *out, bool json, bool quiet, const struct wall_clock *clock)
{
	struct report *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->out = out;
	r->json = json;
	r->quiet = quiet;
	r->clock = clock;
	r->path = path_of_fn;
	return r;
}

void report_set_paths(struct report *r, amp_path_fn fn, void *ctx)
{
	r->path = fn;
	r->path_ctx = ctx;
}

void report_free(struct report *r)
{
	if (!r)
		return;
	free(r->procs);
	by_sender_free(&r->senders);
	free(r);
}

/* A process's row; the entries that are amptrace's own cost get a row of
 * their own, so that they are never added to the process's bill. */
static struct proc_total *proc_get(struct report *r, const struct amp_entry *e)
{
	struct { __u32 pid, own; } key = { e->pid, !!(e->flags & AMP_ENTRY_OWN) };
	size_t n = r->nr_procs;
	struct proc_total *p = amp_row(&r->procs, &r->nr_procs, &r->cap_procs,
				       sizeof(*p), &key, sizeof(key));

	if (p && r->nr_procs > n)	/* a new row: the name of its first entry */
		memcpy(p->comm, e->comm, AMP_COMM_LEN);
	return p;
}

/* Device bytes per syscall byte; 0 when the syscall moved no bytes. */
static double amplification(__u64 dev, __s64 bytes)
{
	return bytes > 0 ? (double)dev / bytes : 0.0;
}

static void format_time(const struct report *r, __u64 boot_ns, char *buf, size_t len,
			bool iso)
{
	__s64 real = wall_clock_real_ns(r->clock, boot_ns);
	time_t sec = real / 1000000000LL;
	struct tm tm;
	size_t n;

	gmtime_r(&sec, &tm);
	n = strftime(buf, len, iso ? "%Y-%m-%dT%H:%M:%S" : "%H:%M:%S", &tm);
	snprintf(buf + n, len - n, iso ? ".%06lldZ" : ".%03lld",
		 iso ? (real % 1000000000LL) / 1000 : (real % 1000000000LL) / 1000000);
}

static bool entry_settled(const struct amp_entry *e)
{
	return e->folios_written >= e->folios_dirtied;
}

static char *dev_str(__u32 kdev, char *buf, size_t len)
{
	snprintf(buf, len, "%u:%u", kdev_major(kdev), kdev_minor(kdev));
	return buf;
}

static void entry_json(struct report *r, const struct amp_entry *e, const struct entry_costs *c)
{
	json_object *o = json_object_new_object(), *db, *sc;
	struct bill b = entry_bill(e, c);
	char buf[64];

	json_object_object_add(o, "type", json_object_new_string("entry"));
	json_object_object_add(o, "id", json_object_new_uint64(e->id));
	format_time(r, e->start_ns, buf, sizeof(buf), true);
	json_object_object_add(o, "time", json_object_new_string(buf));
	json_object_object_add(o, "boot_ns", json_object_new_uint64(e->start_ns));
	json_object_object_add(o, "pid", json_object_new_int(e->pid));
	json_object_object_add(o, "tid", json_object_new_int(e->tid));
	json_object_object_add(o, "comm", json_object_new_string_len(e->comm,
		strnlen(e->comm, AMP_COMM_LEN)));
	json_object_object_add(o, "syscall", json_object_new_string(syscall_name(e->syscall_nr)));
	json_object_object_add(o, "bytes", json_object_new_int64(e->bytes));
	if (c->sender)
		json_object_object_add(o, "sender", sender_json(c->sender));
	if (e->fd_ino) {
		json_object *f = json_object_new_object();

		json_object_object_add(f, "dev", json_object_new_string(dev_str(e->fd_dev, buf, sizeof(buf))));
		json_object_object_add(f, "ino", json_object_new_uint64(e->fd_ino));
		json_object_object_add(f, "path", json_object_new_string(r->path(r->path_ctx, e->fd_dev, e->fd_ino, e->pid)));
		json_object_object_add(o, "file", f);
	}
	json_object_object_add(o, "pages_dirtied", json_object_new_uint64(e->pages_dirtied));
	json_object_object_add(o, "folios_dirtied", json_object_new_uint64(e->folios_dirtied));
	json_object_object_add(o, "folios_written", json_object_new_uint64(e->folios_written));
	json_object_object_add(o, "write_faults", json_object_new_uint64(e->write_faults));
	db = json_object_new_object();
	for (int k = 0; k < NR_BILL; k++)
		json_object_object_add(db, bill_names[k], json_object_new_uint64(b.cost[k]));
	json_object_object_add(o, "dev_bytes", db);
	json_object_object_add(o, "dev_bytes_total", json_object_new_uint64(b.total));
	/* Only where a write failed: other entries' lines stay as they were. */
	if (e->dev_bytes[AMP_ENTRY_FAILED_SLOT])
		json_object_object_add(o, "failed_write_bytes",
			json_object_new_uint64(e->dev_bytes[AMP_ENTRY_FAILED_SLOT]));
	/* Only on btrfs: other entries' lines stay as they were. */
	if (btrfs_trees_sum(c->btrfs_tree, AMP_BTRFS_TREES))
		json_object_object_add(o, "btrfs_trees", btrfs_trees_json(c->btrfs_tree));
	json_object_object_add(o, "ios", json_object_new_uint64(e->ios));
	json_object_object_add(o, "amplification",
		json_object_new_double(amplification(b.total, e->bytes)));
	sc = json_object_new_array();
	for (__u32 i = 0; i < e->nr_txns && i < AMP_ENTRY_TXNS; i++) {
		json_object *t = json_object_new_object();

		json_object_object_add(t, "dev", json_object_new_string(dev_str(e->txns[i].dev, buf, sizeof(buf))));
		json_object_object_add(t, "tid", json_object_new_uint64(e->txns[i].tid));
		json_object_object_add(t, "handles", json_object_new_uint64(e->txns[i].handles));
		json_object_array_add(sc, t);
	}
	json_object_object_add(o, "txns", sc);
	json_object_object_add(o, "txns_dropped", json_object_new_uint64(e->txns_dropped));
	json_object_object_add(o, "closed", json_object_new_boolean(e->flags & AMP_ENTRY_CLOSED));
	json_object_object_add(o, "settled", json_object_new_boolean(entry_settled(e)));
	json_object_object_add(o, "failed", json_object_new_boolean(e->flags & AMP_ENTRY_FAILED));
	json_object_object_add(o, "own", json_object_new_boolean(e->flags & AMP_ENTRY_OWN));
	sc = json_object_new_array();
	for (__u32 i = 0; i < e->nr_runs && i < AMP_SCATTER_MAX; i++) {
		const struct amp_page_run *run = &e->runs[i];
		json_object *p = json_object_new_object();

		json_object_object_add(p, "dev", json_object_new_string(dev_str(run->dev, buf, sizeof(buf))));
		json_object_object_add(p, "ino", json_object_new_uint64(run->ino));
		json_object_object_add(p, "path", json_object_new_string(r->path(r->path_ctx, run->dev, run->ino, e->pid)));
		json_object_object_add(p, "page", json_object_new_uint64(run->index));
		json_object_object_add(p, "npages", json_object_new_int(run->npages));
		json_object_object_add(p, "kind", json_object_new_string(
			run->kind == AMP_PAGE_FILE ? "data" : "metadata"));
		json_object_object_add(p, "written", json_object_new_boolean(run->written));
		json_object_array_add(sc, p);
	}
	json_object_object_add(o, "scatter", sc);
	json_object_object_add(o, "scatter_dropped", json_object_new_uint64(e->runs_dropped));
	fprintf(r->out, "%s\n", json_object_to_json_string_ext(o,
		JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

/* "system.journal:0,5-8,1302" — basename, then page runs in entry order. */
static void scatter_text(struct report *r, FILE *out, const struct amp_entry *e)
{
	__u64 last_ino = 0;
	__u32 last_dev = 0, shown = 0;

	for (__u32 i = 0; i < e->nr_runs && i < AMP_SCATTER_MAX; i++) {
		const struct amp_page_run *run = &e->runs[i];

		if (shown == SCATTER_SHOWN) {
			fprintf(out, " ...");
			break;
		}
		if (run->ino != last_ino || run->dev != last_dev) {
			const char *p = r->path(r->path_ctx, run->dev, run->ino, e->pid);
			const char *base = strrchr(p, '/');

			fprintf(out, "%s%s:", i ? " " : "", base ? base + 1 : p);
			last_ino = run->ino;
			last_dev = run->dev;
		} else {
			fputc(',', out);
		}
		if (run->npages > 1)
			fprintf(out, "%llu-%llu", (unsigned long long)run->index,
				(unsigned long long)run->index + run->npages - 1);
		else
			fprintf(out, "%llu", (unsigned long long)run->index);
		shown++;
	}
	if (e->runs_dropped)
		fprintf(out, " (+%u folios)", e->runs_dropped);
}

static void entry_text(struct report *r, const struct amp_entry *e, const struct entry_costs *c)
{
	struct bill b = entry_bill(e, c);
	char t[32];

	if (!r->header_done) {
		r->sender_column = c->sender != NULL;
		fprintf(r->out, "%-6s %-12s %-7s %-15s ", "ENTRY", "TIME", "TID", "COMM");
		if (r->sender_column)
			fprintf(r->out, "%-24s ", "SENDER");
		fprintf(r->out, "%-8s %6s %5s %6s %8s %6s %7s %7s %8s  %s\n",
			"SYSCALL", "BYTES", "PAGES", "FAULTS",
			"DATA", "META", "JOURNAL", "WINDOW", "AMP", "PAGES DIRTIED (file:page)");
		r->header_done = true;
	}
	format_time(r, e->start_ns, t, sizeof(t), false);
	fprintf(r->out, "%-6llu %-12s %-7u %-15.15s ", (unsigned long long)e->id, t, e->tid, e->comm);
	if (r->sender_column) {
		char who[SENDER_UNIT_LEN];

		fprintf(r->out, "%-24.24s ", c->sender ? sender_label(c->sender, who, sizeof(who)) : "-");
	}
	fprintf(r->out, "%-8s %6lld %5u %6u %8llu %6llu %7llu %7llu %7.1fx%s ",
		syscall_name(e->syscall_nr), (long long)e->bytes, e->pages_dirtied,
		e->write_faults, (unsigned long long)b.cost[BILL_DATA],
		(unsigned long long)b.cost[BILL_METADATA],
		(unsigned long long)b.cost[BILL_JOURNAL], (unsigned long long)b.cost[BILL_WINDOW],
		amplification(b.total, e->bytes), entry_settled(e) ? " " : "*");
	scatter_text(r, r->out, e);
	if (e->flags & AMP_ENTRY_OWN)
		fprintf(r->out, " (amptrace's own: during its start-up)");
	fputc('\n', r->out);
}

void report_entry(struct report *r, const struct amp_entry *e, const struct entry_costs *c)
{
	struct proc_total *p = proc_get(r, e);
	struct bill b = entry_bill(e, c);

	r->entries++;
	if (!entry_settled(e))
		r->unsettled++;
	if (e->dev_bytes[AMP_ENTRY_FAILED_SLOT]) {
		r->entries_failed_writes++;
		r->failed_write_bytes += e->dev_bytes[AMP_ENTRY_FAILED_SLOT];
	}
	if (p) {
		p->entries++;
		p->bytes += e->bytes > 0 ? e->bytes : 0;
		p->pages += e->pages_dirtied;
		p->folios += e->folios_dirtied;
		p->write_faults += e->write_faults;
		p->ios += e->ios;
		bill_add(&p->bill, &b);
		p->scatter_dropped += e->runs_dropped;
		p->unsettled += !entry_settled(e);
	}
	by_sender_add(&r->senders, e, c, &b);
	if (r->quiet)
		return;
	if (r->json)
		entry_json(r, e, c);
	else
		entry_text(r, e, c);
}

static __u64 dev_class_sum(const struct amp_dev_stats *st)
{
	__u64 sum = 0;

	for (int c = 0; c < AMP_NR_CLASSES; c++)
		sum += st->bytes[c];
	return sum;
}

#define LOSS_FIELDS(X)                                   \
	X(ringbuf_drops, "ring buffer full")             \
	X(entries_full, "unsettled map full")            \
	X(tasks_full, "no memory for thread state")      \
	X(commits_full, "jbd2 commit map full")          \
	X(pages_full, "page map full")                   \
	X(files_full, "files map full")                  \
	X(devs_full, "devices map full")                 \
	X(jbd2_bios_full, "jbd2 bio map full")           \
	X(pages_untracked, "pages with no entry")        \
	X(pages_cancelled, "pages never written")        \
	X(txns_full, "transactions map full")            \
	X(entry_txns_dropped, "handles past 4 transactions")

static const char *const dev_layer_names[] = {
	[DEV_DISK] = "disk", [DEV_PARTITION] = "partition", [DEV_DM] = "dm", [DEV_MD] = "md",
};

/* A dm or md device takes bios, not requests: its classes come from the
 * requests of the disks below that carried its bios, where amptrace could
 * follow them back (dm, with its modules' symbols and BTF); else its row
 * has only its counter. */
static bool dev_not_walked(const struct summary_dev *d)
{
	return (d->layer == DEV_DM || d->layer == DEV_MD) && !d->st.ios;
}

/* The run's clock: what explain needs to match entries to the journal by
 * its monotonic stamps (boot_to_mono_ns, boot_id), and the steps. */
static struct json_object *clock_json(const struct wall_clock *c)
{
	struct json_object *o = json_object_new_object(), *steps = json_object_new_array();
	char id[33];

	json_object_object_add(o, "boot_to_real_ns", json_object_new_int64(c->boot_to_real_ns));
	if (c->have_boot) {
		for (int i = 0; i < 16; i++)
			snprintf(id + 2 * i, 3, "%02x", c->boot_id[i]);
		json_object_object_add(o, "boot_to_mono_ns",
				       json_object_new_int64(c->boot_to_mono_ns));
		json_object_object_add(o, "boot_id", json_object_new_string(id));
	}
	json_object_object_add(o, "steps", json_object_new_uint64(c->nr_steps));
	if (c->nr_steps)
		json_object_object_add(o, "largest_step_s",
				       json_object_new_double(c->largest_ns / 1e9));
	for (unsigned i = 0; i < wall_clock_nr_kept(c); i++) {
		const struct clock_step *st = wall_clock_kept(c, i);
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "boot_ns", json_object_new_uint64(st->at_boot_ns));
		json_object_object_add(j, "boot_to_real_ns",
				       json_object_new_int64(st->boot_to_real_ns));
		json_object_object_add(j, "by_s", json_object_new_double(st->by_ns / 1e9));
		json_object_array_add(steps, j);
	}
	json_object_object_add(o, "step_list", steps);
	return o;
}

/* Did a write fail: an entry's, or any device's? */
static bool any_failed(const struct report *r, const struct summary *s)
{
	bool any = r->entries_failed_writes != 0;

	for (int i = 0; i < s->nr_devs; i++)
		any |= s->devs[i].st.bytes[AMP_CLASS_FAILED] || s->devs[i].failed_uncounted;
	return any;
}

static void summary_json(struct report *r, const struct summary *s)
{
	json_object *o = json_object_new_object(), *a, *l;
	char buf[64];

	json_object_object_add(o, "type", json_object_new_string("summary"));
	json_object_object_add(o, "duration_s", json_object_new_double(s->duration_s));
	json_object_object_add(o, "entries", json_object_new_uint64(r->entries));
	json_object_object_add(o, "entries_unsettled", json_object_new_uint64(r->unsettled));
	/* Only where a write failed: other runs' summaries stay as they were. */
	if (any_failed(r, s)) {
		json_object_object_add(o, "entries_with_failed_writes",
				       json_object_new_uint64(r->entries_failed_writes));
		json_object_object_add(o, "failed_write_bytes",
				       json_object_new_uint64(r->failed_write_bytes));
	}

	a = json_object_new_array();
	for (size_t i = 0; i < r->nr_procs; i++) {
		const struct proc_total *p = &r->procs[i];
		json_object *j = json_object_new_object(), *db = json_object_new_object();
		__u64 dev = p->bill.total;

		json_object_object_add(j, "pid", json_object_new_int(p->pid));
		json_object_object_add(j, "comm", json_object_new_string_len(p->comm,
			strnlen(p->comm, AMP_COMM_LEN)));
		json_object_object_add(j, "own", json_object_new_boolean(p->own));
		json_object_object_add(j, "entries", json_object_new_uint64(p->entries));
		json_object_object_add(j, "bytes", json_object_new_uint64(p->bytes));
		json_object_object_add(j, "pages_dirtied", json_object_new_uint64(p->pages));
		json_object_object_add(j, "write_faults", json_object_new_uint64(p->write_faults));
		json_object_object_add(db, "data", json_object_new_uint64(p->bill.cost[BILL_DATA]));
		json_object_object_add(db, "metadata", json_object_new_uint64(p->bill.cost[BILL_METADATA]));
		json_object_object_add(db, "journal", json_object_new_uint64(p->bill.cost[BILL_JOURNAL]));
		json_object_object_add(db, "window", json_object_new_uint64(p->bill.cost[BILL_WINDOW]));
		json_object_object_add(j, "dev_bytes", db);
		json_object_object_add(j, "ios", json_object_new_uint64(p->ios));
		json_object_object_add(j, "amplification", json_object_new_double(amplification(dev, p->bytes)));
		json_object_object_add(j, "scatter_dropped", json_object_new_uint64(p->scatter_dropped));
		json_object_array_add(a, j);
	}
	json_object_object_add(o, "processes", a);
	if (r->senders.nr) {
		by_sender_sort(&r->senders);
		json_object_object_add(o, "senders", by_sender_json(&r->senders, s));
	}

	a = json_object_new_array();
	for (int i = 0; i < s->nr_files; i++) {
		const struct summary_file *f = &s->files[i];
		json_object *j = json_object_new_object();

		json_object_object_add(j, "dev", json_object_new_string(dev_str(f->key.dev, buf, sizeof(buf))));
		json_object_object_add(j, "ino", json_object_new_uint64(f->key.ino));
		json_object_object_add(j, "path", json_object_new_string(r->path(r->path_ctx, f->key.dev, f->key.ino, f->st.last_pid)));
		json_object_object_add(j, "entries", json_object_new_uint64(f->st.entries));
		json_object_object_add(j, "syscall_bytes", json_object_new_uint64(f->st.syscall_bytes));
		json_object_object_add(j, "folios_dirtied", json_object_new_uint64(f->st.folios_dirtied));
		json_object_object_add(j, "pages_dirtied", json_object_new_uint64(f->st.pages_dirtied));
		json_object_object_add(j, "dev_bytes", json_object_new_uint64(f->st.dev_bytes));
		json_object_object_add(j, "amplification",
			json_object_new_double(amplification(f->st.dev_bytes, f->st.syscall_bytes)));
		json_object_array_add(a, j);
	}
	json_object_object_add(o, "files", a);

	a = json_object_new_array();
	for (int i = 0; i < s->nr_devs; i++) {
		const struct summary_dev *d = &s->devs[i];
		json_object *j = json_object_new_object(), *c = json_object_new_object();
		__u64 sum = dev_class_sum(&d->st);

		json_object_object_add(j, "name", json_object_new_string(d->name));
		json_object_object_add(j, "dev", json_object_new_string(dev_str(d->kdev, buf, sizeof(buf))));
		if (d->layer != DEV_DISK)	/* whole disks print as they always did */
			json_object_object_add(j, "layer", json_object_new_string(dev_layer_names[d->layer]));
		if (d->layer == DEV_PARTITION)
			json_object_object_add(j, "disk", json_object_new_string(dev_str(d->disk, buf, sizeof(buf))));
		if (d->layer == DEV_DM || d->layer == DEV_MD)
			json_object_object_add(j, "walked", json_object_new_boolean(!dev_not_walked(d)));
		if (d->gone)	/* its counter as last read */
			json_object_object_add(j, "gone", json_object_new_boolean(true));
		if (d->failed_uncounted)
			json_object_object_add(j, "failed_uncounted",
					       json_object_new_uint64(d->failed_uncounted));
		for (int k = 0; k < AMP_NR_CLASSES; k++)
			if (k != AMP_CLASS_FAILED || d->st.bytes[k])	/* failed: only if any */
				json_object_object_add(c, class_names[k],
						       json_object_new_uint64(d->st.bytes[k]));
		json_object_object_add(j, "classes", c);
		json_object_object_add(j, "total", json_object_new_uint64(sum));
		json_object_object_add(j, "charged_to_entries", json_object_new_uint64(d->st.charged_bytes));
		{
			__u64 cause = d->st.charged_bytes + d->ledger.journal_by_cause;
			__u64 win = d->ledger.by_window;

			/* Of what the disk stored: a failed write is nobody's cost. */
			__u64 stored = sum - d->st.bytes[AMP_CLASS_FAILED];

			json_object_object_add(j, "by_cause", json_object_new_uint64(cause));
			json_object_object_add(j, "by_window", json_object_new_uint64(win));
			json_object_object_add(j, "unattributed", json_object_new_int64((__s64)stored - cause - win));
			/* Of those: what untraced processes wrote for themselves. */
			json_object_object_add(j, "untraced_bytes", json_object_new_uint64(
				d->st.meta_untraced + d->ledger.untraced));
			json_object_object_add(j, "cause_fraction",
				json_object_new_double(stored ? (double)cause / stored : 0));
			json_object_object_add(j, "charged_fraction",
				json_object_new_double(stored ? (double)(cause + win) / stored : 0));
		}
		json_object_object_add(j, "late_bytes", json_object_new_uint64(d->st.late_bytes));
		json_object_object_add(j, "unwalked_bytes", json_object_new_uint64(d->st.unwalked_bytes));
		json_object_object_add(j, "ios", json_object_new_uint64(d->st.ios));
		if (d->have_counter) {
			__u64 ctr = d->delta.sectors_written * 512;

			json_object_object_add(j, "counter_bytes", json_object_new_uint64(ctr));
			json_object_object_add(j, "counter_ios", json_object_new_uint64(d->delta.write_ios));
			/* A layer not walked has no classes to compare. */
			if (!dev_not_walked(d))
				json_object_object_add(j, "difference",
						       json_object_new_int64((__s64)sum - (__s64)ctr));
		}
		if (btrfs_tree_sum(&d->st))
			json_object_object_add(j, "btrfs_trees", btrfs_trees_json(d->st.btrfs_tree));
		json_object_array_add(a, j);
	}
	json_object_object_add(o, "devices", a);

	l = json_object_new_object();
#define X(f, text) json_object_object_add(l, #f, json_object_new_uint64(s->losses.f));
	LOSS_FIELDS(X)
#undef X
	json_object_object_add(l, "entries_timed_out", json_object_new_uint64(s->entries_timed_out));
	json_object_object_add(l, "late_records", json_object_new_uint64(s->late_records));
	/* The folio table's counters, newer than the summary's layout: only
	 * when not zero, so that a summary without them reads as before. */
	if (s->losses.page_races)
		json_object_object_add(l, "page_races", json_object_new_uint64(s->losses.page_races));
	json_object_object_add(o, "losses", l);
	/* Fallbacks that lose nothing, and runs the kernel skipped (possibly for
	 * disks not traced: a loss only where a traced disk's sum falls
	 * short), shown so that none goes unseen. */
	if (s->losses.pages_overflow || s->losses.prog_runs_missed) {
		l = json_object_new_object();
		if (s->losses.pages_overflow)
			json_object_object_add(l, "pages_overflow",
					       json_object_new_uint64(s->losses.pages_overflow));
		if (s->losses.prog_runs_missed)
			json_object_object_add(l, "prog_runs_missed",
					       json_object_new_uint64(s->losses.prog_runs_missed));
		if (s->nr_missed) {
			struct json_object *by = json_object_new_object();

			for (int i = 0; i < s->nr_missed; i++)
				json_object_object_add(by, s->missed[i].prog,
						       json_object_new_uint64(s->missed[i].runs));
			json_object_object_add(l, "prog_runs_missed_by_prog", by);
		}
		json_object_object_add(o, "counters", l);
	}
	if (s->clock && (s->clock->have_boot || s->clock->nr_steps))
		json_object_object_add(o, "clock", clock_json(s->clock));
	fprintf(r->out, "%s\n", json_object_to_json_string_ext(o,
		JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

/* What each row of a stack is, and where the bill's bytes are. */
static void stack_notes(FILE *out, const struct summary *s)
{
	bool mirrored = false;
	char buf[32];

	for (int i = 0; i < s->nr_devs; i++) {
		const struct summary_dev *d = &s->devs[i];
		const char *disk = d->name;

		if (d->gone)
			fprintf(out, "%s: went away during the run: its counter as last read, up to "
				"a second before\n", d->name);
		if (d->failed_uncounted)
			fprintf(out, "%s: %llu bytes of writes it failed without counting them (a "
				"table that kills I/O: dm's error target, dmsetup remove --force); "
				"not in its classes\n", d->name, (unsigned long long)d->failed_uncounted);
		if (d->layer == DEV_PARTITION) {
			for (int k = 0; k < s->nr_devs; k++)
				if (s->devs[k].kdev == d->disk)
					disk = s->devs[k].name;
			fprintf(out, "%s: a partition of %s: the requests for it, also in %s's row\n",
				d->name, disk == d->name ? dev_str(d->disk, buf, sizeof(buf)) : disk,
				disk == d->name ? "its disk" : disk);
		} else if (dev_not_walked(d)) {
			fprintf(out, "%s: %s device, not walked: its bytes are written, and classed, "
				"by the requests of the disks below it\n", d->name, dev_layer_names[d->layer]);
		} else if (d->layer == DEV_MD) {
			mirrored = true;
			fprintf(out, "%s: md device: the requests of its first leg that carried its "
				"bios; each leg writes its own copy, in its own row\n", d->name);
		} else if (d->layer != DEV_DISK) {
			fprintf(out, "%s: %s device: the requests of the disks below that carried "
				"its bios (also in their rows)\n", d->name, dev_layer_names[d->layer]);
		}
	}
	for (int i = 0; i < s->nr_devs; i++)
		if (s->devs[i].layer != DEV_DISK) {
			fprintf(out, "Entries' bills are in the disks' bytes (what wears the device)%s.\n",
				mirrored ? ", each mirror's copy charged: RAID1's two legs double them" : "");
			break;
		}
}

static void summary_text(struct report *r, const struct summary *s)
{
	FILE *out = r->out;
	bool any = false, failed_col = false;

	fprintf(out, "\nSummary: %.1f s, %llu entries (%llu with pages still unwritten, marked *)\n",
		s->duration_s, (unsigned long long)r->entries, (unsigned long long)r->unsettled);

	fprintf(out, "\nPer process (device bytes charged to its entries):\n"
		"%-7s %-15s %8s %10s %8s %10s %10s %10s %10s %6s %8s\n", "PID", "COMM",
		"ENTRIES", "BYTES", "PAGES", "DATA", "METADATA", "JOURNAL", "WINDOW", "IOS", "AMP");
	for (size_t i = 0; i < r->nr_procs; i++) {
		const struct proc_total *p = &r->procs[i];

		fprintf(out, "%-7u %-15.15s %8llu %10llu %8llu %10llu %10llu %10llu %10llu %6llu %7.1fx\n",
			p->pid, p->own ? "(amptrace-own)" : p->comm,
			(unsigned long long)p->entries, (unsigned long long)p->bytes,
			(unsigned long long)p->pages, (unsigned long long)p->bill.cost[BILL_DATA],
			(unsigned long long)p->bill.cost[BILL_METADATA], (unsigned long long)p->bill.cost[BILL_JOURNAL],
			(unsigned long long)p->bill.cost[BILL_WINDOW], (unsigned long long)p->ios,
			amplification(p->bill.total, p->bytes));
	}

	for (size_t i = 0; i < r->nr_procs; i++)
		if (r->procs[i].own) {
			fprintf(out, "(amptrace-own): amptrace's own cost, never a process's: what its "
				"targets wrote while it started\n  (journald storing the kernel audit "
				"records of its BPF program loads, where audit is on)\n");
			break;
		}
	by_sender_sort(&r->senders);
	by_sender_text(&r->senders, s, out);

	fprintf(out, "\nPer file (BYTES: write syscalls aimed at it; pages and device bytes of its folios):\n"
		"%-10s %8s %10s %8s %8s %12s %8s  %s\n", "DEV", "ENTRIES", "BYTES", "FOLIOS",
		"PAGES", "DEV_BYTES", "AMP", "PATH");
	for (int i = 0; i < s->nr_files; i++) {
		const struct summary_file *f = &s->files[i];
		char buf[32];

		fprintf(out, "%-10s %8llu %10llu %8llu %8llu %12llu ", dev_str(f->key.dev, buf, sizeof(buf)),
			(unsigned long long)f->st.entries, (unsigned long long)f->st.syscall_bytes,
			(unsigned long long)f->st.folios_dirtied, (unsigned long long)f->st.pages_dirtied,
			(unsigned long long)f->st.dev_bytes);
		if (f->st.syscall_bytes)
			fprintf(out, "%7.1fx", amplification(f->st.dev_bytes, f->st.syscall_bytes));
		else
			fprintf(out, "%8s", "-");
		fprintf(out, "  %s\n", r->path(r->path_ctx, f->key.dev, f->key.ino, f->st.last_pid));
	}

	/* A FAILED column only where a write failed: the usual table as it was. */
	for (int i = 0; i < s->nr_devs; i++)
		failed_col |= s->devs[i].st.bytes[AMP_CLASS_FAILED] != 0;
	fprintf(out, "\nPer device (bytes written; classes must sum to the device counter):\n"
		"%-10s %12s %12s %12s %12s %12s ", "DEVICE", "DATA", "METADATA", "JOURNAL",
		"BEFORE_START", "OTHER");
	if (failed_col)
		fprintf(out, "%12s ", "FAILED");
	fprintf(out, "%12s %12s %9s %6s %6s\n", "SUM", "COUNTER", "DIFF", "IOS", "CTR_IOS");
	for (int i = 0; i < s->nr_devs; i++) {
		const struct summary_dev *d = &s->devs[i];
		__u64 sum = dev_class_sum(&d->st);

		if (dev_not_walked(d)) {
			fprintf(out, "%-10s %12s %12s %12s %12s %12s %12s ", d->name, "-", "-", "-", "-", "-", "-");
			if (failed_col)
				fprintf(out, "%12s ", "-");
			if (d->have_counter)
				fprintf(out, "%12llu %9s %6s %6llu\n",
					(unsigned long long)d->delta.sectors_written * 512, "-", "-",
					(unsigned long long)d->delta.write_ios);
			else
				fprintf(out, "%12s %9s %6s %6s\n", "-", "-", "-", "-");
			continue;
		}
		fprintf(out, "%-10s %12llu %12llu %12llu %12llu %12llu ", d->name,
			(unsigned long long)d->st.bytes[AMP_CLASS_DATA],
			(unsigned long long)d->st.bytes[AMP_CLASS_METADATA],
			(unsigned long long)d->st.bytes[AMP_CLASS_JOURNAL],
			(unsigned long long)d->st.bytes[AMP_CLASS_BEFORE_START],
			(unsigned long long)d->st.bytes[AMP_CLASS_OTHER]);
		if (failed_col)
			fprintf(out, "%12llu ", (unsigned long long)d->st.bytes[AMP_CLASS_FAILED]);
		fprintf(out, "%12llu ", (unsigned long long)sum);
		if (d->have_counter)
			fprintf(out, "%12llu %9lld %6llu %6llu\n",
				(unsigned long long)d->delta.sectors_written * 512,
				(long long)sum - (long long)(d->delta.sectors_written * 512),
				(unsigned long long)d->st.ios, (unsigned long long)d->delta.write_ios);
		else
			fprintf(out, "%12s %9s %6llu %6s\n", "-", "-", (unsigned long long)d->st.ios, "-");
	}

	stack_notes(out, s);

	fprintf(out, "\nCharged to entries (by cause: their pages, their share of jbd2 commits;\n"
		"by window, an estimate: what kernel threads wrote for the filesystem in the\n"
		"write-out pass that wrote their pages; UNTRACED, part of UNATTRIB: untraced\n"
		"processes' own metadata and journal shares):\n"
		"%-10s %12s %12s %12s %12s %9s %9s\n", "DEVICE", "BY_CAUSE", "BY_WINDOW",
		"UNATTRIB", "UNTRACED", "CAUSE%", "WINDOW%");
	for (int i = 0; i < s->nr_devs; i++) {
		const struct summary_dev *d = &s->devs[i];
		/* Of what the disk stored: a failed write is nobody's cost. */
		__u64 sum = dev_class_sum(&d->st) - d->st.bytes[AMP_CLASS_FAILED];
		__u64 cause = d->st.charged_bytes + d->ledger.journal_by_cause;
		__u64 win = d->ledger.by_window;

		if (d->layer != DEV_DISK)	/* the bill is in the disks' bytes */
			continue;
		fprintf(out, "%-10s %12llu %12llu %12lld %12llu %8.1f%% %8.1f%%\n", d->name,
			(unsigned long long)cause, (unsigned long long)win,
			(long long)sum - (long long)cause - (long long)win,
			(unsigned long long)(d->st.meta_untraced + d->ledger.untraced),
			sum ? 100.0 * cause / sum : 0.0, sum ? 100.0 * win / sum : 0.0);
	}

	for (int i = 0; i < s->nr_devs; i++) {
		const struct summary_dev *d = &s->devs[i];
		__u64 all = btrfs_tree_sum(&d->st);

		if (!all)
			continue;
		/* Why one line costs 250 KB on btrfs: which trees it copied. */
		fprintf(out, "\n%s: btrfs metadata by tree:", d->name);
		for (int k = 0; k < AMP_BTRFS_TREES; k++)
			if (d->st.btrfs_tree[k])
				fprintf(out, " %s %llu (%.1f%%)", btrfs_tree_names[k],
					(unsigned long long)d->st.btrfs_tree[k],
					100.0 * d->st.btrfs_tree[k] / all);
		fprintf(out, "\n");
	}

	fprintf(out, "\nLosses:");
#define X(f, text) if (s->losses.f) { fprintf(out, " %s %llu;", text, (unsigned long long)s->losses.f); any = true; }
	LOSS_FIELDS(X)
#undef X
	if (s->losses.page_races) {
		fprintf(out, " folio owner races lost %llu;",
			(unsigned long long)s->losses.page_races);
		any = true;
	}
	if (s->entries_timed_out) {
		fprintf(out, " entries reported unsettled after timeout %llu;",
			(unsigned long long)s->entries_timed_out);
		any = true;
	}
	fprintf(out, any ? "\n" : " none\n");
	/* The reader fell behind the kernel (a burst, or a busy machine: at
	 * journald's full ingest on 2 busy vCPUs the default 1 MiB ring lost
	 * 0.3-2.6 % of its records, 4 MiB none).  A larger ring is more slack. */
	if (s->losses.ringbuf_drops && s->ringbuf_kb && s->ringbuf_kb < AMP_RINGBUF_KB_MAX) {
		__u32 larger = s->ringbuf_kb * 4;	/* below 2^22: no overflow */

		fprintf(out, "Hint: records were lost with the ring buffer full: try --ringbuf-kb %u "
			"(this run: %u)\n", larger < AMP_RINGBUF_KB_MAX ? larger : AMP_RINGBUF_KB_MAX,
			s->ringbuf_kb);
	}
	if (s->losses.pages_overflow)
		fprintf(out, "Counters: folios owned through the overflow map %llu\n",
			(unsigned long long)s->losses.pages_overflow);
	if (s->losses.prog_runs_missed) {
		fprintf(out, "Counters: program runs the kernel skipped, another of ours running "
			"on that CPU %llu (a loss where a traced disk's classes fall short of "
			"its counter)", (unsigned long long)s->losses.prog_runs_missed);
		for (int i = 0; i < s->nr_missed; i++)
			fprintf(out, "%s%s %llu", i ? ", " : ": ", s->missed[i].prog,
				(unsigned long long)s->missed[i].runs);
		fprintf(out, "\n");
	}
	if (any_failed(r, s)) {
		/* Each device's own: a disk's failed requests, a dm device's
		 * failed bios (the same bytes again where they failed below). */
		fprintf(out, "Write errors (not stored):");
		for (int i = 0; i < s->nr_devs; i++) {
			const struct summary_dev *d = &s->devs[i];

			if (d->st.bytes[AMP_CLASS_FAILED])
				fprintf(out, " %s %llu bytes;", d->name,
					(unsigned long long)d->st.bytes[AMP_CLASS_FAILED]);
			if (d->failed_uncounted)
				fprintf(out, " %s %llu bytes its counter did not count;", d->name,
					(unsigned long long)d->failed_uncounted);
		}
		fprintf(out, " %llu entries had %llu bytes of their pages in them "
			"(failed_write_bytes)\n", (unsigned long long)r->entries_failed_writes,
			(unsigned long long)r->failed_write_bytes);
	}
	if (s->clock && s->clock->nr_steps)
		fprintf(out, "Clock: the wall clock stepped %llu time%s (the largest by %+.3f s); "
			"entry times follow it\n", (unsigned long long)s->clock->nr_steps,
			s->clock->nr_steps == 1 ? "" : "s", s->clock->largest_ns / 1e9);
}

void report_summary(struct report *r, const struct summary *s)
{
	if (r->json)
		summary_json(r, s);
	else
		summary_text(r, s);
	fflush(r->out);
}

static void sink_entry_cb(void *self, const struct amp_entry *e, const struct entry_costs *c)
{
	report_entry(self, e, c);
}

static int sink_summary_cb(void *self, const struct summary *s, bool final)
{
	if (final)
		report_summary(self, s);
	return 0;
}

static int sink_close_cb(void *self, bool ok)
{
	report_free(self);
	return 0;
}

struct sink report_sink(struct report *r)
{
	static const struct sink_ops ops = {
		.entry = sink_entry_cb, .summary = sink_summary_cb, .close = sink_close_cb,
	};

	return (struct sink){ .ops = &ops, .self = r };
}
