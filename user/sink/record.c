// SPDX-License-Identifier: GPL-2.0
/*
 * Record files (`amptrace record -o FILE`, read by `amptrace report FILE`).
 *
 * A record must survive the recorder being killed at any moment, so it is
 * a stream of self-delimiting records, each handed to the kernel by one
 * write(2) as soon as it exists: kill -9 loses at most the record being
 * written, and the reader stops cleanly at a partial tail.  Every record
 * carries checksums, so damage elsewhere is an error naming its offset,
 * never garbage numbers.
 *
 * Layout, all integers little-endian:
 *
 *   preamble  "AMPTRACE" u32 version (1) u32 flags (0)               16 bytes
 *   record*   u32 len  u16 type  u16 check  u32 crc  payload[len]
 *             check = low 16 bits of crc32(len, type): a damaged frame is
 *             told from a short tail; crc = crc32(payload).
 *
 *   str = u16 length + bytes (no NUL).  Payloads (a reader ignores bytes
 *   past the fields it knows, and skips record types it does not know):
 *
 *   1 HEADER   u32 page_size, s64 boot_to_real_ns (CLOCK_REALTIME -
 *              CLOCK_BOOTTIME at start), u64 start_boot_ns, u64 start_real_ns,
 *              str hostname, str kernel release, str command line; then
 *              (since clock steps) s64 boot_to_mono_ns (CLOCK_BOOTTIME -
 *              CLOCK_MONOTONIC), u8 have_boot_id, u8 boot_id[16]
 *   2 PATH     u32 dev, u64 ino, str path: written before the first record
 *              that names the file, resolved while its writer still had it
 *   3 ENTRY    u64 id, start_ns, end_ns; u32 pid, tid; comm[16];
 *              s32 syscall_nr; u32 flags; s64 bytes; u64 fd_ino; u32 fd_dev,
 *              disk, pages_dirtied, folios_dirtied, folios_written,
 *              write_faults, ios; u64 dev_bytes[4] (data, metadata, failed
 *              (since the failed class; journal's slot before, unused),
 *              other's unused slot); u64 journal, window (ledger costs); u32 runs_dropped,
 *              txns_dropped; u16 nr_txns, nr_runs; nr_txns x {u32 dev, tid,
 *              handles}; nr_runs x {u64 ino, index; u32 dev; u16 npages;
 *              u8 kind, written} (only the runs used);
 *              then (since transaction metadata; older readers stop before
 *              it) u64 meta (ledger cost); then (since btrfs trees;
 *              an entry with btrfs metadata or a sender) u16 n + n x u64
 *              its btrfs metadata by tree (ledger's btrfs_tree); then
 *              (since senders) u8 state (enum sender_state), u32 pid,
 *              uid, str comm, cgroup, unit, container, (since relays)
 *              u8 relay, u32 receives linked
 *   4 FILE     u32 dev, u64 ino, u32 last_pid, str kernel name, u64 entries,
 *              syscall_bytes, folios_dirtied, pages_dirtied, dev_bytes
 *   5 SUMMARY  u8 final, u8 pad[3], u32 nr_files (FILE records just before),
 *              f64 duration_s, u64 entries (ENTRY records before it),
 *              u64 entries_timed_out, late_records, u16 n + n x u64 (struct
 *              amp_stats in order), u16 nr_devs + nr_devs x {str name;
 *              u32 kdev; u8 have_counter; u64 bytes[4], charged_bytes,
 *              meta_owned, journal_txn, late_bytes, ios, unwalked_bytes,
 *              counter sectors_written, counter write_ios, journal_by_cause,
 *              by_window, left_over}; then (since the before_start class;
 *              older readers stop before it) u16 nr_devs + nr_devs x u64
 *              bytes before_start, in the same order; then (since untraced
 *              bytes) u16 nr_devs + nr_devs x {u64 meta_untraced, ledger
 *              untraced}; then (since btrfs trees; with a btrfs disk only)
 *              u16 nr_devs, u16 n + nr_devs x n x u64 btrfs metadata by
 *              tree (enum amp_btrfs_tree order; a reader keeps the trees it
 *              knows); then (since stacked storage; with a partition, dm
 *              or md row only) u16 RECORD_LAYERS_TAG, u16 nr_devs +
 *              nr_devs x {u8 layer (enum dev_layer), u32 a partition's
 *              disk}: older readers stop before it (the tag is no nr_devs);
 *              then (since the failed class; where a write failed only)
 *              u16 RECORD_FAILED_TAG, u16 nr_devs + nr_devs x {u64 bytes
 *              of class failed, u64 failed_uncounted}
 *              A checkpoint (final = 0, no files) every 2 s; the final one last.
 *   6 CLOCK    u64 at_boot_ns, s64 boot_to_real_ns, s64 by_ns: the wall
 *              clock stepped; entries from at_boot_ns on print on the new
 *              offset.  Written before the next ENTRY or SUMMARY.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "util.h"
#include "sink/bill.h"
#include "sink/record.h"
#include "sys/devstat.h"
#include "sys/paths.h"

#define PREAMBLE_LEN	16
#define FRAME_LEN	12
#define MAX_PAYLOAD	(1u << 20)	/* far above any record this version writes */
#define NR_LOSSES	(sizeof(struct amp_stats) / sizeof(__u64))

/* ------------------------------------------------------------ encoding --- */

struct buf {
	unsigned char *p;
	size_t len, cap;
	bool oom;
};

static void put(struct buf *b, const void *src, size_t n)
{
	if (amp_grow(&b->p, &b->cap, b->len + n, 1)) {
		b->oom = true;
		return;
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

static void put_u8(struct buf *b, __u8 v) { put(b, &v, 1); }
static void put_u16(struct buf *b, __u16 v) { v = htole16(v); put(b, &v, 2); }
static void put_u32(struct buf *b, __u32 v) { v = htole32(v); put(b, &v, 4); }
static void put_u64(struct buf *b, __u64 v) { v = htole64(v); put(b, &v, 8); }

static void put_f64(struct buf *b, double d)
{
	__u64 v;

	memcpy(&v, &d, sizeof(v));
	put_u64(b, v);
}

/* At most max bytes of s: fixed-size fields need not end in a NUL. */
static void put_str(struct buf *b, const char *s, size_t max)
{
	size_t n = strnlen(s, max < 65535 ? max : 65535);

	put_u16(b, n);
	put(b, s, n);
}

struct cur {
	const unsigned char *p;
	size_t len, pos;
	bool short_;		/* read past the payload: a malformed record */
};

static void get(struct cur *c, void *dst, size_t n)
{
	if (c->pos + n > c->len) {
		c->short_ = true;
		memset(dst, 0, n);
		return;
	}
	memcpy(dst, c->p + c->pos, n);
	c->pos += n;
}

static __u8 get_u8(struct cur *c) { __u8 v; get(c, &v, 1); return v; }
static __u16 get_u16(struct cur *c) { __u16 v; get(c, &v, 2); return le16toh(v); }
static __u32 get_u32(struct cur *c) { __u32 v; get(c, &v, 4); return le32toh(v); }
static __u64 get_u64(struct cur *c) { __u64 v; get(c, &v, 8); return le64toh(v); }

static double get_f64(struct cur *c)
{
	__u64 v = get_u64(c);
	double d;

	memcpy(&d, &v, sizeof(d));
	return d;
}

/* A str into a NUL-terminated buffer, cut to fit. */
static void get_str(struct cur *c, char *dst, size_t size)
{
	size_t n = get_u16(c);

	if (c->pos + n > c->len) {
		c->short_ = true;
		dst[0] = 0;
		return;
	}
	snprintf(dst, size, "%.*s", (int)n, (const char *)c->p + c->pos);
	c->pos += n;
}

static __u16 frame_check(__u32 len, __u16 type)
{
	unsigned char hdr[6];
	__u32 l = htole32(len);
	__u16 t = htole16(type);

	memcpy(hdr, &l, 4);
	memcpy(hdr + 4, &t, 2);
	return crc32(0, hdr, sizeof(hdr)) & 0xffff;
}

/* ------------------------------------------------------------ recorder --- */

struct file_id {
	__u32 dev;
	__u64 ino;
};

struct recorder {
	const char *path;
	int fd;
	struct buf payload, frame;
	void *paths_written;	/* tsearch set of struct file_id */
	__u64 entries, bytes;
	bool failed;
	const struct wall_clock *clock;	/* the tracer's: its steps are written */
	__u64 steps_written;
};

static int cmp_file_id(const void *a, const void *b)
{
	const struct file_id *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static int write_all(int fd, const void *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p = (const char *)p + w;
		n -= w;
	}
	return 0;
}

/* Frame the payload and hand it to the kernel at once: one write(2). */
static void emit(struct recorder *r, enum record_type type)
{
	struct buf *f = &r->frame;

	if (r->failed)
		goto out;
	f->len = 0;
	put_u32(f, r->payload.len);
	put_u16(f, type);
	put_u16(f, frame_check(r->payload.len, type));
	put_u32(f, crc32(0, r->payload.p, r->payload.len));
	put(f, r->payload.p, r->payload.len);
	if (f->oom || r->payload.oom) {
		amp_err("record %s: out of memory", r->path);
		r->failed = true;
	} else if (write_all(r->fd, f->p, f->len)) {
		amp_err("cannot write %s: %s; recording stopped", r->path, strerror(errno));
		r->failed = true;
	} else {
		r->bytes += f->len;
	}
out:
	r->payload.len = 0;
}

static void command_line(int argc, char **argv, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = 0;
	for (int i = 0; i < argc && n < size; i++)
		n += snprintf(buf + n, size - n, "%s%s", i ? " " : "amptrace ", argv[i]);
}

/* The clock's steps since the last ENTRY or SUMMARY (those it still
 * keeps, if more came meanwhile). */
static void write_clock_steps(struct recorder *r)
{
	for (; r->steps_written < r->clock->nr_steps; r->steps_written++) {
		const struct clock_step *st = wall_clock_step(r->clock, r->steps_written);

		if (!st)
			continue;
		put_u64(&r->payload, st->at_boot_ns);
		put_u64(&r->payload, st->boot_to_real_ns);
		put_u64(&r->payload, st->by_ns);
		emit(r, RECORD_CLOCK);
	}
}

struct recorder *recorder_new(const char *path, int argc, char **argv,
			      const struct wall_clock *clock)
{
	struct recorder *r = calloc(1, sizeof(*r));
	struct timespec boot, real;
	struct utsname uts;
	char cmd[1024];

	if (!r)
		return NULL;
	r->path = path;
	r->clock = clock;
	r->steps_written = clock->nr_steps;	/* the header has the offset now */
	r->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (r->fd < 0) {
		amp_err("cannot write %s: %s", path, strerror(errno));
		free(r);
		return NULL;
	}
	put(&r->frame, RECORD_MAGIC, 8);
	put_u32(&r->frame, RECORD_VERSION);
	put_u32(&r->frame, 0);
	if (r->frame.oom || write_all(r->fd, r->frame.p, r->frame.len)) {
		amp_err("cannot write %s: %s", path, strerror(errno));
		recorder_close(r, false);
		return NULL;
	}
	r->bytes = r->frame.len;

	clock_gettime(CLOCK_BOOTTIME, &boot);
	clock_gettime(CLOCK_REALTIME, &real);
	if (uname(&uts))
		memset(&uts, 0, sizeof(uts));
	command_line(argc, argv, cmd, sizeof(cmd));
	put_u32(&r->payload, sysconf(_SC_PAGESIZE));
	put_u64(&r->payload, clock->boot_to_real_ns);
	put_u64(&r->payload, boot.tv_sec * 1000000000ULL + boot.tv_nsec);
	put_u64(&r->payload, real.tv_sec * 1000000000ULL + real.tv_nsec);
	put_str(&r->payload, uts.nodename, sizeof(uts.nodename));
	put_str(&r->payload, uts.release, sizeof(uts.release));
	put_str(&r->payload, cmd, sizeof(cmd));
	put_u64(&r->payload, clock->boot_to_mono_ns);
	put_u8(&r->payload, clock->have_boot);
	put(&r->payload, clock->boot_id, sizeof(clock->boot_id));
	emit(r, RECORD_HEADER);
	if (r->failed) {
		recorder_close(r, false);
		return NULL;
	}
	return r;
}

int recorder_fd(const struct recorder *r)
{
	return r->fd;
}

/* A file's path, once, while a process that wrote it may still have it open. */
static void note_path(struct recorder *r, __u32 dev, __u64 ino, __u32 pid)
{
	struct file_id key = { dev, ino }, *k;

	if (!ino || tfind(&key, &r->paths_written, cmp_file_id))
		return;
	k = malloc(sizeof(*k));
	if (!k)
		return;
	*k = key;
	if (!tsearch(k, &r->paths_written, cmp_file_id)) {
		free(k);
		return;
	}
	put_u32(&r->payload, dev);
	put_u64(&r->payload, ino);
	put_str(&r->payload, path_of(dev, ino, pid), 65535);
	emit(r, RECORD_PATH);
}

void recorder_entry(struct recorder *r, const struct amp_entry *e, const struct entry_costs *c)
{
	__u32 nr_txns = e->nr_txns < AMP_ENTRY_TXNS ? e->nr_txns : AMP_ENTRY_TXNS;
	__u32 nr_runs = e->nr_runs < AMP_SCATTER_MAX ? e->nr_runs : AMP_SCATTER_MAX;
	struct buf *b = &r->payload;

	write_clock_steps(r);
	note_path(r, e->fd_dev, e->fd_ino, e->pid);
	for (__u32 i = 0; i < nr_runs; i++)
		note_path(r, e->runs[i].dev, e->runs[i].ino, e->pid);

	put_u64(b, e->id);
	put_u64(b, e->start_ns);
	put_u64(b, e->end_ns);
	put_u32(b, e->pid);
	put_u32(b, e->tid);
	put(b, e->comm, AMP_COMM_LEN);
	put_u32(b, e->syscall_nr);
	put_u32(b, e->flags);
	put_u64(b, e->bytes);
	put_u64(b, e->fd_ino);
	put_u32(b, e->fd_dev);
	put_u32(b, e->disk);
	put_u32(b, e->pages_dirtied);
	put_u32(b, e->folios_dirtied);
	put_u32(b, e->folios_written);
	put_u32(b, e->write_faults);
	put_u32(b, e->ios);
	for (int k = 0; k < AMP_ENTRY_CLASSES; k++)
		put_u64(b, e->dev_bytes[k]);
	put_u64(b, c->journal);
	put_u64(b, c->window);
	put_u32(b, e->runs_dropped);
	put_u32(b, e->txns_dropped);
	put_u16(b, nr_txns);
	put_u16(b, nr_runs);
	for (__u32 i = 0; i < nr_txns; i++) {
		put_u32(b, e->txns[i].dev);
		put_u32(b, e->txns[i].tid);
		put_u32(b, e->txns[i].handles);
	}
	for (__u32 i = 0; i < nr_runs; i++) {
		put_u64(b, e->runs[i].ino);
		put_u64(b, e->runs[i].index);
		put_u32(b, e->runs[i].dev);
		put_u16(b, e->runs[i].npages);
		put_u8(b, e->runs[i].kind);
		put_u8(b, e->runs[i].written);
	}
	put_u64(b, c->meta);
	/* A btrfs entry's trees; with a sender to follow, 0 trees for others. */
	if (btrfs_trees_sum(c->btrfs_tree, AMP_BTRFS_TREES)) {
		put_u16(b, AMP_BTRFS_TREES);
		for (int k = 0; k < AMP_BTRFS_TREES; k++)
			put_u64(b, c->btrfs_tree[k]);
	} else if (c->sender) {
		put_u16(b, 0);
	}
	if (c->sender) {
		put_u8(b, c->sender->state);
		put_u32(b, c->sender->pid);
		put_u32(b, c->sender->uid);
		put_str(b, c->sender->comm, sizeof(c->sender->comm));
		put_str(b, c->sender->cgroup, sizeof(c->sender->cgroup));
		put_str(b, c->sender->unit, sizeof(c->sender->unit));
		put_str(b, c->sender->container, sizeof(c->sender->container));
		put_u8(b, c->sender->relay);
		put_u32(b, c->sender->relayed);
	}
	emit(r, RECORD_ENTRY);
	r->entries++;
}

static void put_dev(struct buf *b, const struct summary_dev *d)
{
	put_str(b, d->name, sizeof(d->name));
	put_u32(b, d->kdev);
	put_u8(b, d->have_counter);
	/* The classes the first format had; before_start follows the list. */
	for (int k = 0; k <= AMP_CLASS_OTHER; k++)
		put_u64(b, d->st.bytes[k]);
	put_u64(b, d->st.charged_bytes);
	put_u64(b, d->st.meta_owned);
	put_u64(b, d->st.journal_txn);
	put_u64(b, d->st.late_bytes);
	put_u64(b, d->st.ios);
	put_u64(b, d->st.unwalked_bytes);
	put_u64(b, d->delta.sectors_written);
	put_u64(b, d->delta.write_ios);
	put_u64(b, d->ledger.journal_by_cause);
	put_u64(b, d->ledger.by_window);
	put_u64(b, d->ledger.left_over);
}

static void put_trees(struct buf *b, const struct summary *s)
{
	put_u16(b, s->nr_devs);
	put_u16(b, AMP_BTRFS_TREES);
	for (int i = 0; i < s->nr_devs; i++)
		for (int k = 0; k < AMP_BTRFS_TREES; k++)
			put_u64(b, s->devs[i].st.btrfs_tree[k]);
}

/* Marks the layers section: never a device count (a summary has far
 * fewer rows), so a reader that expects the btrfs trees there stops. */
#define RECORD_LAYERS_TAG 0xa5e1
/* Marks the failed writes' section (class failed), after the layers'. */
#define RECORD_FAILED_TAG 0xfa11

/* n per-tree counts, the first AMP_BTRFS_TREES kept (a later version may
 * know more trees). */
static void get_trees(struct cur *c, __u64 *tree, __u16 n)
{
	for (__u16 k = 0; k < n; k++) {
		__u64 v = get_u64(c);

		if (k < AMP_BTRFS_TREES)
			tree[k] = v;
	}
}

void recorder_summary(struct recorder *r, const struct summary *s, bool final)
{
	const __u64 *loss = (const __u64 *)&s->losses;
	struct buf *b = &r->payload;
	int nr_files = final ? s->nr_files : 0;

	write_clock_steps(r);
	for (int i = 0; i < nr_files; i++) {
		const struct summary_file *f = &s->files[i];

		note_path(r, f->key.dev, f->key.ino, f->st.last_pid);
		put_u32(b, f->key.dev);
		put_u64(b, f->key.ino);
		put_u32(b, f->st.last_pid);
		put_str(b, f->st.name, sizeof(f->st.name));
		put_u64(b, f->st.entries);
		put_u64(b, f->st.syscall_bytes);
		put_u64(b, f->st.folios_dirtied);
		put_u64(b, f->st.pages_dirtied);
		put_u64(b, f->st.dev_bytes);
		emit(r, RECORD_FILE);
	}
	put_u8(b, final);
	put(b, "\0\0\0", 3);
	put_u32(b, nr_files);
	put_f64(b, s->duration_s);
	put_u64(b, r->entries);
	put_u64(b, s->entries_timed_out);
	put_u64(b, s->late_records);
	put_u16(b, NR_LOSSES);
	for (size_t i = 0; i < NR_LOSSES; i++)
		put_u64(b, loss[i]);
	put_u16(b, s->nr_devs);
	for (int i = 0; i < s->nr_devs; i++)
		put_dev(b, &s->devs[i]);
	put_u16(b, s->nr_devs);
	for (int i = 0; i < s->nr_devs; i++)
		put_u64(b, s->devs[i].st.bytes[AMP_CLASS_BEFORE_START]);
	put_u16(b, s->nr_devs);
	for (int i = 0; i < s->nr_devs; i++) {
		put_u64(b, s->devs[i].st.meta_untraced);
		put_u64(b, s->devs[i].ledger.untraced);
	}
	/* Only with a btrfs disk: others' records stay as they were. */
	for (int i = 0; i < s->nr_devs; i++)
		if (btrfs_trees_sum(s->devs[i].st.btrfs_tree, AMP_BTRFS_TREES)) {
			put_trees(b, s);
			break;
		}
	/* Only with a stacked device's row, likewise. */
	for (int i = 0; i < s->nr_devs; i++)
		if (s->devs[i].layer != DEV_DISK) {
			put_u16(b, RECORD_LAYERS_TAG);
			put_u16(b, s->nr_devs);
			for (int k = 0; k < s->nr_devs; k++) {
				put_u8(b, s->devs[k].layer);
				put_u32(b, s->devs[k].disk);
			}
			break;
		}
	/* Only where a write failed, likewise. */
	for (int i = 0; i < s->nr_devs; i++)
		if (s->devs[i].st.bytes[AMP_CLASS_FAILED] || s->devs[i].failed_uncounted) {
			put_u16(b, RECORD_FAILED_TAG);
			put_u16(b, s->nr_devs);
			for (int k = 0; k < s->nr_devs; k++) {
				put_u64(b, s->devs[k].st.bytes[AMP_CLASS_FAILED]);
				put_u64(b, s->devs[k].failed_uncounted);
			}
			break;
		}
	emit(r, RECORD_SUMMARY);
}

int recorder_close(struct recorder *r, bool say)
{
	int err;

	if (!r)
		return 0;
	err = r->failed ? -1 : 0;
	if (r->fd >= 0 && close(r->fd) && !err) {
		amp_err("cannot write %s: %s", r->path, strerror(errno));
		err = -1;
	}
	if (!err && say)
		fprintf(stderr, "%s: recorded %llu entries to %s (%llu bytes)\n", amp_prog,
			(unsigned long long)r->entries, r->path, (unsigned long long)r->bytes);
	/* A run that failed before its first entry leaves no empty record behind. */
	if (!say && !r->entries)
		unlink(r->path);
	tdestroy(r->paths_written, free);
	free(r->payload.p);
	free(r->frame.p);
	free(r);
	return err;
}

static void sink_entry_cb(void *self, const struct amp_entry *e, const struct entry_costs *c)
{
	recorder_entry(self, e, c);
}

static int sink_summary_cb(void *self, const struct summary *s, bool final)
{
	recorder_summary(self, s, final);
	return 0;
}

static int sink_close_cb(void *self, bool ok)
{
	return recorder_close(self, ok);
}

struct sink recorder_sink(struct recorder *r, double period)
{
	static const struct sink_ops ops = {
		.entry = sink_entry_cb, .summary = sink_summary_cb, .close = sink_close_cb,
	};

	return (struct sink){ .ops = &ops, .self = r, .period = period };
}

/* -------------------------------------------------------------- reader --- */

struct path_rec {
	struct file_id id;
	char *path;
};

struct record_reader {
	const char *path;
	FILE *f;
	__u64 off;		/* of the next record */
	struct record_header hdr;
	unsigned char *payload;
	size_t cap;
	void *paths;		/* tsearch set of struct path_rec */
	struct summary_file *files;	/* FILE records awaiting their SUMMARY */
	size_t nr_files, cap_files;
	struct summary_dev *devs;
	struct wall_clock clock;	/* the header's, and the CLOCK records so far */
	char problem[160];
	char fallback[64];
};

static int cmp_path_rec(const void *a, const void *b)
{
	return cmp_file_id(&((const struct path_rec *)a)->id, &((const struct path_rec *)b)->id);
}

static void free_path_rec(void *p)
{
	free(((struct path_rec *)p)->path);
	free(p);
}

const char *record_path(void *reader, __u32 kdev, __u64 ino, __u32 pid)
{
	struct record_reader *r = reader;
	struct path_rec key = { .id = { kdev, ino } }, **found;

	found = tfind(&key, &r->paths, cmp_path_rec);
	if (found)
		return (*found)->path;
	snprintf(r->fallback, sizeof(r->fallback), "%u:%u:%llu", kdev_major(kdev),
		 kdev_minor(kdev), (unsigned long long)ino);
	return r->fallback;
}

static void add_path(struct record_reader *r, struct cur *c)
{
	struct path_rec *p = calloc(1, sizeof(*p)), **old;
	char path[4096];

	if (!p)
		return;
	p->id.dev = get_u32(c);
	p->id.ino = get_u64(c);
	get_str(c, path, sizeof(path));
	p->path = strdup(path);
	if (c->short_ || !p->path) {
		free_path_rec(p);
		return;
	}
	old = tsearch(p, &r->paths, cmp_path_rec);
	if (!old || *old != p)
		free_path_rec(p);	/* already known: the first one stands */
}

static void set_problem(struct record_reader *r, __u64 off, const char *fmt, const char *what)
{
	char msg[120];

	snprintf(msg, sizeof(msg), fmt, what);
	snprintf(r->problem, sizeof(r->problem), "at offset %llu: %s", (unsigned long long)off, msg);
}

/* Read exactly n bytes; returns the number read (< n only at end of file). */
static size_t read_n(struct record_reader *r, void *p, size_t n)
{
	return fread(p, 1, n, r->f);
}

/* Frame and payload of the next record; RECORD_MORE with type and cursor. */
static enum record_status read_record(struct record_reader *r, __u16 *type, struct cur *c)
{
	unsigned char fr[FRAME_LEN];
	__u32 len, crc;
	__u16 check;
	size_t n = read_n(r, fr, FRAME_LEN);

	if (n == 0 && feof(r->f))
		return RECORD_END;
	if (n < FRAME_LEN) {
		if (ferror(r->f)) {
			set_problem(r, r->off, "%s", strerror(errno));
			return RECORD_CORRUPT;
		}
		snprintf(r->problem, sizeof(r->problem),
			 "at offset %llu: partial record (%zu of its 12-byte frame)",
			 (unsigned long long)r->off, n);
		return RECORD_TRUNCATED;
	}
	memcpy(&len, fr, 4);
	memcpy(type, fr + 4, 2);
	memcpy(&check, fr + 6, 2);
	memcpy(&crc, fr + 8, 4);
	len = le32toh(len);
	*type = le16toh(*type);
	if (le16toh(check) != frame_check(len, *type) || len > MAX_PAYLOAD) {
		set_problem(r, r->off, "%s", "bad record frame (not a record boundary, or damaged)");
		return RECORD_CORRUPT;
	}
	if (len > r->cap) {
		unsigned char *p = realloc(r->payload, len);

		if (!p) {
			set_problem(r, r->off, "%s", "out of memory");
			return RECORD_CORRUPT;
		}
		r->payload = p;
		r->cap = len;
	}
	n = read_n(r, r->payload, len);
	if (n < len) {
		if (ferror(r->f)) {
			set_problem(r, r->off, "%s", strerror(errno));
			return RECORD_CORRUPT;
		}
		snprintf(r->problem, sizeof(r->problem),
			 "at offset %llu: partial record (%zu of %u bytes)",
			 (unsigned long long)r->off, n, len);
		return RECORD_TRUNCATED;
	}
	if (crc32(0, r->payload, len) != le32toh(crc)) {
		set_problem(r, r->off, "%s", "checksum mismatch");
		return RECORD_CORRUPT;
	}
	c->p = r->payload;
	c->len = len;
	c->pos = 0;
	c->short_ = false;
	return RECORD_MORE;
}

static bool decode_entry(struct cur *c, struct amp_entry *e, struct entry_costs *co,
			 struct sender *who)
{
	__u32 nr_txns, nr_runs;

	memset(e, 0, sizeof(*e));
	memset(co, 0, sizeof(*co));
	e->type = AMP_REC_ENTRY;
	e->id = get_u64(c);
	e->start_ns = get_u64(c);
	e->end_ns = get_u64(c);
	e->pid = get_u32(c);
	e->tid = get_u32(c);
	get(c, e->comm, AMP_COMM_LEN);
	e->comm[AMP_COMM_LEN - 1] = 0;
	e->syscall_nr = get_u32(c);
	e->flags = get_u32(c);
	e->bytes = get_u64(c);
	e->fd_ino = get_u64(c);
	e->fd_dev = get_u32(c);
	e->disk = get_u32(c);
	e->pages_dirtied = get_u32(c);
	e->folios_dirtied = get_u32(c);
	e->folios_written = get_u32(c);
	e->write_faults = get_u32(c);
	e->ios = get_u32(c);
	for (int k = 0; k < AMP_ENTRY_CLASSES; k++)
		e->dev_bytes[k] = get_u64(c);
	co->journal = get_u64(c);
	co->window = get_u64(c);
	e->runs_dropped = get_u32(c);
	e->txns_dropped = get_u32(c);
	nr_txns = get_u16(c);
	nr_runs = get_u16(c);
	if (nr_txns > AMP_ENTRY_TXNS || nr_runs > AMP_SCATTER_MAX)
		return false;
	e->nr_txns = nr_txns;
	e->nr_runs = nr_runs;
	for (__u32 i = 0; i < nr_txns; i++) {
		e->txns[i].dev = get_u32(c);
		e->txns[i].tid = get_u32(c);
		e->txns[i].handles = get_u32(c);
	}
	for (__u32 i = 0; i < nr_runs; i++) {
		e->runs[i].ino = get_u64(c);
		e->runs[i].index = get_u64(c);
		e->runs[i].dev = get_u32(c);
		e->runs[i].npages = get_u16(c);
		e->runs[i].kind = get_u8(c);
		e->runs[i].written = get_u8(c);
	}
	/* Written since transaction metadata: absent in older records. */
	if (!c->short_ && c->pos < c->len)
		co->meta = get_u64(c);
	/* Written since the per-entry btrfs trees, btrfs entries only. */
	if (!c->short_ && c->pos < c->len)
		get_trees(c, co->btrfs_tree, get_u16(c));
	/* Written since senders. */
	if (!c->short_ && c->pos < c->len) {
		memset(who, 0, sizeof(*who));
		who->state = get_u8(c);
		who->pid = get_u32(c);
		who->uid = get_u32(c);
		get_str(c, who->comm, sizeof(who->comm));
		get_str(c, who->cgroup, sizeof(who->cgroup));
		get_str(c, who->unit, sizeof(who->unit));
		get_str(c, who->container, sizeof(who->container));
		/* Written since relays. */
		if (!c->short_ && c->pos < c->len) {
			who->relay = get_u8(c);
			who->relayed = get_u32(c);
		}
		if (who->state >= SENDER_NR_STATES)
			return false;
		co->sender = who;
	}
	return !c->short_;
}

static bool decode_file(struct record_reader *r, struct cur *c)
{
	struct summary_file *f;

	if (amp_grow(&r->files, &r->cap_files, r->nr_files + 1, sizeof(*f)))
		return false;
	f = &r->files[r->nr_files];
	memset(f, 0, sizeof(*f));
	f->key.dev = get_u32(c);
	f->key.ino = get_u64(c);
	f->st.last_pid = get_u32(c);
	get_str(c, f->st.name, sizeof(f->st.name));
	f->st.entries = get_u64(c);
	f->st.syscall_bytes = get_u64(c);
	f->st.folios_dirtied = get_u64(c);
	f->st.pages_dirtied = get_u64(c);
	f->st.dev_bytes = get_u64(c);
	if (c->short_)
		return false;
	r->nr_files++;
	return true;
}

static bool decode_summary(struct record_reader *r, struct cur *c, struct record_item *it)
{
	struct summary *s = &it->summary;
	__u64 *loss = (__u64 *)&s->losses;
	__u32 nr_files;
	__u8 pad[3];
	__u16 n;
	size_t pos;

	memset(s, 0, sizeof(*s));
	s->clock = &r->clock;
	it->final = get_u8(c);
	get(c, pad, sizeof(pad));
	nr_files = get_u32(c);
	s->duration_s = get_f64(c);
	it->entries = get_u64(c);
	s->entries_timed_out = get_u64(c);
	s->late_records = get_u64(c);
	n = get_u16(c);
	for (__u16 i = 0; i < n; i++) {
		__u64 v = get_u64(c);

		if (i < NR_LOSSES)
			loss[i] = v;
	}
	n = get_u16(c);
	free(r->devs);
	r->devs = calloc(n ? n : 1, sizeof(*r->devs));
	if (!r->devs)
		return false;
	for (__u16 i = 0; i < n && !c->short_; i++) {
		struct summary_dev *d = &r->devs[i];

		get_str(c, d->name, sizeof(d->name));
		d->kdev = get_u32(c);
		d->have_counter = get_u8(c);
		memcpy(d->st.name, d->name, sizeof(d->name));
		for (int k = 0; k <= AMP_CLASS_OTHER; k++)
			d->st.bytes[k] = get_u64(c);
		d->st.charged_bytes = get_u64(c);
		d->st.meta_owned = get_u64(c);
		d->st.journal_txn = get_u64(c);
		d->st.late_bytes = get_u64(c);
		d->st.ios = get_u64(c);
		d->st.unwalked_bytes = get_u64(c);
		d->delta.sectors_written = get_u64(c);
		d->delta.write_ios = get_u64(c);
		d->ledger.disk = d->kdev;
		d->ledger.journal_by_cause = get_u64(c);
		d->ledger.by_window = get_u64(c);
		d->ledger.left_over = get_u64(c);
	}
	/* Written since the before_start class: absent in older records. */
	if (!c->short_ && c->pos < c->len && get_u16(c) == n)
		for (__u16 i = 0; i < n; i++)
			r->devs[i].st.bytes[AMP_CLASS_BEFORE_START] = get_u64(c);
	/* Written since the untraced bytes: absent in older records. */
	if (!c->short_ && c->pos < c->len && get_u16(c) == n)
		for (__u16 i = 0; i < n; i++) {
			r->devs[i].st.meta_untraced = get_u64(c);
			r->devs[i].ledger.untraced = get_u64(c);
		}
	/* Written since the btrfs trees, with a btrfs disk only. */
	pos = c->pos;
	if (!c->short_ && c->pos < c->len && get_u16(c) == n) {
		__u16 trees = get_u16(c);

		for (__u16 i = 0; i < n; i++)
			get_trees(c, r->devs[i].st.btrfs_tree, trees);
	} else {
		c->pos = pos;
	}
	/* Written since stacked storage, with a partition, dm or md row only. */
	pos = c->pos;
	if (!c->short_ && c->pos + 4 <= c->len && get_u16(c) == RECORD_LAYERS_TAG &&
	    get_u16(c) == n) {
		for (__u16 i = 0; i < n; i++) {
			__u8 layer = get_u8(c);

			r->devs[i].layer = layer <= DEV_MD ? layer : DEV_DISK;
			r->devs[i].disk = get_u32(c);
		}
	} else {
		c->pos = pos;
	}
	/* Written since the failed class, where a write failed only. */
	if (!c->short_ && c->pos + 4 <= c->len && get_u16(c) == RECORD_FAILED_TAG &&
	    get_u16(c) == n)
		for (__u16 i = 0; i < n; i++) {
			r->devs[i].st.bytes[AMP_CLASS_FAILED] = get_u64(c);
			r->devs[i].failed_uncounted = get_u64(c);
		}
	if (c->short_ || nr_files != (__u32)r->nr_files)
		return false;
	s->devs = r->devs;
	s->nr_devs = n;
	s->files = r->files;
	s->nr_files = r->nr_files;
	return true;
}

/* The clock as the header has it, before any step. */
static void reset_clock(struct record_reader *r)
{
	wall_clock_set(&r->clock, r->hdr.boot_to_real_ns, r->hdr.boot_to_mono_ns,
		       r->hdr.have_boot_id ? r->hdr.boot_id : NULL);
}

static bool decode_clock(struct record_reader *r, struct cur *c)
{
	struct clock_step st;

	st.at_boot_ns = get_u64(c);
	st.boot_to_real_ns = get_u64(c);
	st.by_ns = get_u64(c);
	if (c->short_)
		return false;
	wall_clock_add(&r->clock, &st);
	return true;
}

const struct wall_clock *record_clock(const struct record_reader *r)
{
	return &r->clock;
}

enum record_status record_next(struct record_reader *r, struct record_item *it)
{
	static const char *const names[] = {
		[RECORD_HEADER] = "header", [RECORD_PATH] = "path", [RECORD_ENTRY] = "entry",
		[RECORD_FILE] = "file", [RECORD_SUMMARY] = "summary", [RECORD_CLOCK] = "clock",
	};
	enum record_status st;
	struct cur c;
	__u16 type;
	bool ok;

	for (;;) {
		st = read_record(r, &type, &c);
		if (st != RECORD_MORE)
			return st;
		it->offset = r->off;
		it->type = type;
		switch (type) {
		case RECORD_PATH:
			add_path(r, &c);
			ok = !c.short_;
			break;
		case RECORD_ENTRY:
			ok = decode_entry(&c, &it->entry, &it->costs, &it->sender);
			break;
		case RECORD_FILE:
			ok = decode_file(r, &c);
			break;
		case RECORD_SUMMARY:
			/* The previous summary's files are no longer the caller's. */
			ok = decode_summary(r, &c, it);
			r->nr_files = 0;
			break;
		case RECORD_CLOCK:
			ok = decode_clock(r, &c);
			break;
		case RECORD_HEADER:
			ok = false;	/* only one, read by record_open() */
			break;
		default:
			ok = true;	/* from a newer minor revision: skip it */
			break;
		}
		if (!ok) {
			set_problem(r, r->off, "malformed %s record",
				    type < sizeof(names) / sizeof(names[0]) && names[type] ?
				    names[type] : "?");
			return RECORD_CORRUPT;
		}
		r->off += FRAME_LEN + c.len;
		if (type == RECORD_ENTRY || type == RECORD_SUMMARY)
			return RECORD_MORE;
	}
}

static int read_preamble(struct record_reader *r)
{
	unsigned char pre[PREAMBLE_LEN];
	enum record_status st;
	__u32 version;
	struct cur c;
	__u16 type;

	if (read_n(r, pre, PREAMBLE_LEN) < PREAMBLE_LEN || memcmp(pre, RECORD_MAGIC, 8)) {
		amp_err("%s: not an amptrace record (no AMPTRACE header)", r->path);
		return -1;
	}
	memcpy(&version, pre + 8, 4);
	version = le32toh(version);
	if (version != RECORD_VERSION) {
		amp_err("%s: record format version %u; this amptrace reads version %d",
			r->path, version, RECORD_VERSION);
		return -1;
	}
	r->off = PREAMBLE_LEN;
	st = read_record(r, &type, &c);
	if (st == RECORD_MORE && type != RECORD_HEADER)
		set_problem(r, r->off, "%s", "first record is not the header");
	if (st != RECORD_MORE || type != RECORD_HEADER) {
		amp_err("%s: %s", r->path, st == RECORD_END ? "no header record (empty record)" :
			r->problem);
		return -1;
	}
	r->hdr.version = version;
	r->hdr.page_size = get_u32(&c);
	r->hdr.boot_to_real_ns = get_u64(&c);
	r->hdr.start_boot_ns = get_u64(&c);
	r->hdr.start_real_ns = get_u64(&c);
	get_str(&c, r->hdr.host, sizeof(r->hdr.host));
	get_str(&c, r->hdr.kernel, sizeof(r->hdr.kernel));
	get_str(&c, r->hdr.cmdline, sizeof(r->hdr.cmdline));
	if (c.short_) {
		amp_err("%s: at offset %llu: malformed header record", r->path,
			(unsigned long long)r->off);
		return -1;
	}
	/* Since clock steps; an older header ends before. */
	r->hdr.boot_to_mono_ns = get_u64(&c);
	r->hdr.have_boot_id = get_u8(&c);
	get(&c, r->hdr.boot_id, sizeof(r->hdr.boot_id));
	if (c.short_)
		r->hdr.have_boot_id = false;
	reset_clock(r);
	r->off += FRAME_LEN + c.len;
	return 0;
}

struct record_reader *record_open(const char *path)
{
	struct record_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->path = path;
	r->f = fopen(path, "r");
	if (!r->f) {
		amp_err("cannot read %s: %s", path, strerror(errno));
		free(r);
		return NULL;
	}
	if (read_preamble(r)) {
		record_close(r);
		return NULL;
	}
	return r;
}

/* Back to the first record after the header; the path table is kept. */
int record_rewind(struct record_reader *r)
{
	struct cur c;
	__u16 type;

	if (fseeko(r->f, PREAMBLE_LEN, SEEK_SET))
		return -1;
	r->off = PREAMBLE_LEN;
	r->nr_files = 0;
	reset_clock(r);
	if (read_record(r, &type, &c) != RECORD_MORE)
		return -1;
	r->off += FRAME_LEN + c.len;
	return 0;
}

const struct record_header *record_header(const struct record_reader *r)
{
	return &r->hdr;
}

const char *record_problem(const struct record_reader *r)
{
	return r->problem;
}

__u64 record_offset(const struct record_reader *r)
{
	return r->off;
}

void record_close(struct record_reader *r)
{
	if (!r)
		return;
	if (r->f)
		fclose(r->f);
	tdestroy(r->paths, free_path_rec);
	free(r->payload);
	free(r->files);
	free(r->devs);
	free(r);
}
