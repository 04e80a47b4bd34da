// SPDX-License-Identifier: GPL-2.0
/*
 * The ledger: finishes each entry's bill before it is printed.
 *
 * The kernel reports an entry once its own pages are written (data, and
 * metadata pages it dirtied itself).  Two costs come later and are settled
 * here, in user space, because they are shared between entries:
 *
 *  - fs journal, by cause: each transaction's journal bytes (a jbd2
 *    commit's) and the metadata it wrote in place (btrfs tree blocks) are
 *    split over the entries that opened handles in that transaction, by
 *    their share of its handles (the kernel sends one record per commit).
 *  - by window: device bytes no cause claims (metadata written back by the
 *    fs, handles opened by the flusher, journal writes outside a commit) are
 *    split, per disk, over the entries whose pages were written in the same
 *    write-out window, in proportion to their dirtied pages.  Only what
 *    kernel threads wrote on the filesystem's behalf: an untraced process's
 *    own handles and the metadata it dirtied itself are its own, never
 *    shared (counted per disk as untraced); and the pass's share of the
 *    untraced writers' data written in it (other, before_start) is theirs
 *    too, by the same page count.  A window ends
 *    when the disk has been idle for WINDOW_QUIET_S (longer than ext4's 5 s
 *    commit interval, so a commit belongs to the pass that caused it), or
 *    after WINDOW_MAX_S.  Bytes of a window with no entries carry over.
 *    An entry on a RAID1 waits in each leg's window: every leg wrote its
 *    pages, and a transaction's unclaimed bytes go to the legs equally.
 *
 * An entry is printed when both are known.
 */
#include <bpf/bpf.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "util.h"
#include "ledger/ledger.h"
#include "ledger/unsettled.h"

#define WINDOW_QUIET_S 6.0
#define WINDOW_MAX_S 60.0
/* How often committed transactions are looked at for retirement. */
#define TXN_RETIRE_EVERY_S 10.0
/* How long an entry waits for a commit whose record has not come. */
#define PENDING_GIVE_UP_S 600.0

struct held {
	struct entry_costs c;
	int pending_txns;	/* its transactions not yet committed */
	int windows_open;	/* write-out windows it waits for (RAID1: a leg's each) */
	/* Complete but for an xfs checkpoint's buffers the AIL has yet to
	 * write back (ledger_xfs_ail): held until then or ail_until. */
	bool ail_hold;
	double ail_until;
	double arrived;		/* when it reached the ledger */
	struct held *next;
	/* Last, and allocated only as far as its scatter slots in use go: a
	 * busy logger has a minute's worth of entries waiting here. */
	struct amp_entry e;
};

static size_t entry_len(const struct amp_entry *e)
{
	__u32 runs = e->nr_runs < AMP_SCATTER_MAX ? e->nr_runs : AMP_SCATTER_MAX;

	return offsetof(struct amp_entry, runs) + runs * sizeof(struct amp_page_run);
}

struct known_txn {
	struct amp_txn_key key;
	struct amp_txn_stats st;
	__u64 given;		/* bytes charged to entries so far */
	/* Late bytes (ledger_txn_late) kept for the traced handles whose
	 * entries have not reached the ledger yet, and the handles of those
	 * that have. */
	__u64 late_waiting;
	__u64 handles_claimed;
	/* Kernel threads' shares for traced file i (st.files[i]) that no held
	 * entry had pages of, kept while entries of this transaction are
	 * still to come (one of them the file's writer: journald's start-up
	 * entry, open until its next syscall, reaches the ledger after the
	 * checkpoint's record): by the transaction's split (journal and
	 * metadata), and late bytes (all metadata). */
	__u64 files_waiting[AMP_TXN_FILES];
	__u64 files_late_waiting[AMP_TXN_FILES];
	bool committed;
	bool flushed;		/* sent by ledger_flush already */
	double committed_at;	/* when its record came (now_s) */
	/* xfs: whether the AIL still holds items of it, as last read (at
	 * ail_read); once none (since ail_clear_at), for good. */
	bool ail_busy, ail_clear;
	double ail_read, ail_clear_at;
	size_t moved_to;	/* its index after a retirement (txns_retire) */
	bool retiring;
};

/*
 * A kernel thread's share for a traced file that no entry in the ledger
 * dirtied, parked for the entries with pages of it that still await their
 * settlement (txn_share_files): those with ids up to last_id, with pages
 * of it in all.
 */
struct parked_share {
	size_t txn;		/* index in ledger.txns (which may move) */
	int file;		/* in its st.files[] */
	bool late;		/* late bytes (all metadata), or by its split */
	__u64 bytes, pages, last_id;
};

struct window {
	__u32 disk;
	__u64 base_at_open;	/* unclaimed-bytes counter when it opened */
	__u64 others_at_open;	/* untraced writers' data bytes when it opened */
	__u64 pool;		/* unclaimed journal shares added meanwhile */
	__u64 last_ios;
	double quiet_since, opened;
	struct held **entries;
	size_t nr, cap;
	__u64 pages;
};

struct ledger {
	ledger_emit_fn emit;
	void *emit_ctx;
	int devs_fd;
	int btrfs_own_fd;	/* -1: no btrfs traced */
	int xfs_ail_fd;		/* -1: no xfs hold */
	double xfs_hold_s;
	size_t nr_ail_held;	/* held entries with ail_hold */
	bool flushing;		/* the run ended: hold nothing more */
	struct unsettled *unsettled;	/* entries yet to come, or NULL */
	struct parked_share *parked;
	size_t nr_parked, cap_parked;
	struct held *held, **held_tail;
	size_t nr_ready;	/* held entries whose bill is complete */
	struct known_txn *txns;
	size_t nr_txns, cap_txns;
	double settle_s, txns_retired_at;
	__u64 txns_retired;
	size_t nr_held, held_peak;
	struct window *wins;
	size_t nr_wins, cap_wins;
	struct ledger_disk *disks;	/* per-disk totals for the summary */
	size_t nr_disks, cap_disks;
	struct mirror {
		__u32 legs[AMP_LEDGER_MIRROR_LEGS];
		int nr;
	} *mirrors;			/* RAID1s' legs (ledger_mirror) */
	size_t nr_mirrors, cap_mirrors;
	struct disk_alias {
		__u32 layer, disk;
	} *aliases;			/* ledger_disk_alias */
	size_t nr_aliases, cap_aliases;
};

struct ledger *ledger_new(ledger_emit_fn emit, void *ctx, int devs_fd)
{
	struct ledger *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->emit = emit;
	l->emit_ctx = ctx;
	l->devs_fd = devs_fd;
	l->btrfs_own_fd = -1;
	l->xfs_ail_fd = -1;
	l->held_tail = &l->held;
	ledger_settle_timeout(l, 120.0);
	l->txns_retired_at = now_s();
	return l;
}

void ledger_settle_timeout(struct ledger *l, double settle_s)
{
	l->settle_s = settle_s;
}

void ledger_btrfs_own(struct ledger *l, int fd)
{
	l->btrfs_own_fd = fd;
}

void ledger_xfs_ail(struct ledger *l, int fd, double hold_s)
{
	l->xfs_ail_fd = fd;
	l->xfs_hold_s = hold_s;
}

void ledger_unsettled(struct ledger *l, struct unsettled *u)
{
	l->unsettled = u;
}

/* The btrfs metadata an entry wrote for itself, by tree (the kernel's
 * record, taken out of its map).  Only an entry with metadata of its own
 * can have one: one lookup per such entry, none per appended line. */
static void take_btrfs_own(struct ledger *l, struct held *h)
{
	struct amp_btrfs_own o;

	if (l->btrfs_own_fd < 0 || !h->e.dev_bytes[AMP_CLASS_METADATA] ||
	    bpf_map_lookup_elem(l->btrfs_own_fd, &h->e.id, &o))
		return;
	bpf_map_delete_elem(l->btrfs_own_fd, &h->e.id);
	h->c.btrfs_tree[AMP_BTRFS_T_LOG] += o.log;
	h->c.btrfs_tree[AMP_BTRFS_T_SUPER] += o.super;
}

static struct ledger_disk *disk_totals(struct ledger *l, __u32 disk)
{
	return amp_row(&l->disks, &l->nr_disks, &l->cap_disks, sizeof(*l->disks),
		       &disk, sizeof(disk));
}

static const struct ledger_disk *disk_find(const struct ledger *l, __u32 disk)
{
	for (size_t i = 0; i < l->nr_disks; i++)
		if (l->disks[i].disk == disk)
			return &l->disks[i];
	return NULL;
}

static __u64 page_bytes(void)
{
	static __u64 size;

	if (!size)
		size = sysconf(_SC_PAGESIZE);
	return size;
}

int ledger_mirror(struct ledger *l, const __u32 *legs, int nr_legs)
{
	struct mirror *m;

	if (nr_legs < 2 || nr_legs > AMP_LEDGER_MIRROR_LEGS)
		return -1;
	m = amp_row(&l->mirrors, &l->nr_mirrors, &l->cap_mirrors, sizeof(*m), legs,
		    sizeof(legs[0]));
	if (!m)
		return -1;
	memcpy(m->legs, legs, nr_legs * sizeof(legs[0]));
	m->nr = nr_legs;
	return 0;
}

int ledger_disk_alias(struct ledger *l, __u32 layer, __u32 disk)
{
	struct disk_alias *a = amp_row(&l->aliases, &l->nr_aliases, &l->cap_aliases,
				       sizeof(*a), &layer, sizeof(layer));

	if (!a)
		return -1;
	a->disk = disk;
	return 0;
}

/* The disk whose write-out windows an entry on disk shares. */
static __u32 window_disk(const struct ledger *l, __u32 disk)
{
	for (size_t i = 0; i < l->nr_aliases; i++)
		if (l->aliases[i].layer == disk)
			return l->aliases[i].disk;
	return disk;
}

/* The disks that wrote what was written on disk: a RAID1's legs, where
 * disk is one of them (each leg writes a copy), else disk alone. */
static int copy_disks(const struct ledger *l, __u32 disk, __u32 disks[AMP_LEDGER_MIRROR_LEGS])
{
	for (size_t i = 0; i < l->nr_mirrors; i++) {
		const struct mirror *m = &l->mirrors[i];

		for (int k = 0; k < m->nr; k++) {
			if (m->legs[k] != disk)
				continue;
			memcpy(disks, m->legs, m->nr * sizeof(disks[0]));
			return m->nr;
		}
	}
	disks[0] = disk;
	return 1;
}

/* Leg k's part of bytes over n copies: equal, the rest a byte each to
 * the first legs. */
static __u64 copy_part(__u64 bytes, int k, int n)
{
	return bytes / n + ((__u64)k < bytes % n);
}

/* A transaction's bytes by cause, written on disk: or, where disk is a
 * leg of a RAID1 (whose transactions' bytes came from every leg, the
 * disk being only the last one seen), on each leg an equal part. */
static void credit_cause(struct ledger *l, __u32 disk, __u64 bytes)
{
	__u32 disks[AMP_LEDGER_MIRROR_LEGS];
	int n = copy_disks(l, disk, disks);
	struct ledger_disk *d;

	for (int k = 0; k < n; k++)
		if ((d = disk_totals(l, disks[k])))
			d->journal_by_cause += copy_part(bytes, k, n);
}

/*
 * A RAID1's legs hold the same bytes, but the ledger's credits reach them
 * one by one: a leg's late metadata record can come after the entries it
 * would go to were printed, and its bytes then wait for the next entries
 * of the transaction, shared over every leg.  Each leg's row shows an
 * equal part of what all its legs were given (the sums are unchanged).
 */
int ledger_disk(struct ledger *l, __u32 disk, struct ledger_disk *out)
{
	__u32 disks[AMP_LEDGER_MIRROR_LEGS];
	int n = copy_disks(l, disk, disks), k = 0, found = 0;
	struct ledger_disk sum = { .disk = disk };

	for (int i = 0; i < n; i++) {
		const struct ledger_disk *d = disk_find(l, disks[i]);

		if (disks[i] == disk)
			k = i;
		if (!d)
			continue;
		found = 1;
		sum.journal_by_cause += d->journal_by_cause;
		sum.by_window += d->by_window;
		sum.left_over += d->left_over;
		sum.untraced += d->untraced;
	}
	if (!found)
		return -1;
	out->disk = disk;
	out->journal_by_cause = copy_part(sum.journal_by_cause, k, n);
	/* Its rounding's rest a byte each to the last legs, the other's to
	 * the first: no leg shows more than its part of both. */
	out->by_window = copy_part(sum.by_window, n - 1 - k, n);
	out->left_over = copy_part(sum.left_over, k, n);
	out->untraced = copy_part(sum.untraced, k, n);
	return 0;
}

/* Bytes on this disk that no cause claimed, as the kernel counts them;
 * and (others) the data of writers with no entry: untraced, or dirty
 * before the start. */
static __u64 unclaimed_counter(struct ledger *l, __u32 disk, __u64 *ios, __u64 *others)
{
	struct amp_dev_stats st;

	if (bpf_map_lookup_elem(l->devs_fd, &disk, &st)) {
		*ios = 0;
		if (others)
			*others = 0;
		return 0;
	}
	*ios = st.ios;
	if (others)
		*others = st.layer ? 0 : st.bytes[AMP_CLASS_OTHER] + st.bytes[AMP_CLASS_BEFORE_START];
	/* A partition's or dm device's bytes are its disks' too: shared
	 * there, or never (a window keyed by a dm device has none). */
	if (st.layer)
		return 0;
	return st.bytes[AMP_CLASS_METADATA] - st.meta_owned - st.meta_untraced - st.meta_txn +
	       st.bytes[AMP_CLASS_JOURNAL] - st.journal_txn;
}

/*
 * The disk's unclaimed bytes since the window opened.  The counter is a
 * difference of the kernel's counters, copied from the map while the walk
 * updates them one after the other (a metadata class before the
 * transaction's meta_txn): a copy between the two reads high, and the next
 * lower.  A window that opened on a high read gives nothing until the
 * counter is past it again (window_close keeps the higher base), rather
 * than a negative count read as 2^64.
 */
static __u64 unclaimed_since(const struct window *w, __u64 base_now)
{
	return base_now > w->base_at_open ? base_now - w->base_at_open : 0;
}

static struct window *window_of(struct ledger *l, __u32 disk)
{
	struct window *w;

	for (size_t i = 0; i < l->nr_wins; i++)
		if (l->wins[i].disk == disk)
			return &l->wins[i];
	w = amp_row(&l->wins, &l->nr_wins, &l->cap_wins, sizeof(*w), &disk, sizeof(disk));
	if (!w)
		return NULL;
	/* From 0: the kernel's counters started when tracing did, and bytes
	 * written before this disk's first entry belong to its first window. */
	unclaimed_counter(l, disk, &w->last_ios, NULL);
	w->quiet_since = w->opened = now_s();
	return w;
}

/* Unclaimed bytes of a transaction on disk, for its window to share: on a
 * RAID1, each leg's window an equal part (see credit_cause). */
static void pool_add(struct ledger *l, __u32 disk, __u64 bytes)
{
	__u32 disks[AMP_LEDGER_MIRROR_LEGS];
	int n = copy_disks(l, disk, disks);
	struct window *w;

	for (int k = 0; k < n; k++)
		if ((w = window_of(l, disks[k])))
			w->pool += copy_part(bytes, k, n);
}

/* Hand a held entry on, widened to a whole struct amp_entry. */
static void emit_held(struct ledger *l, struct held *h)
{
	static struct amp_entry full;

	memset(&full, 0, sizeof(full));
	memcpy(&full, &h->e, entry_len(&h->e));
	l->emit(l->emit_ctx, &full, &h->c);
}

/* Its commits known and its write-out window closed. */
static bool held_complete(const struct held *h)
{
	return !h->pending_txns && !h->windows_open;
}

static bool held_ready(const struct held *h)
{
	return held_complete(h) && !h->ail_hold;
}

static struct known_txn *txn_find(struct ledger *l, __u32 dev, __u32 tid);

/* The checkpoint's items reach the AIL after its commit record is written,
 * from the log's I/O completion work: a checkpoint the AIL has not counted
 * yet may still get some this long after its record. */
#define AIL_INSERT_GRACE_S 2.0
/* An item leaves the AIL just after its buffer's write is walked: the late
 * record of that write may still be in the ring buffer when the count
 * reads 0.  A cleared checkpoint's entries wait one sweep more. */
#define AIL_CLEAR_GRACE_S 0.4

/*
 * Whether one of h's xfs checkpoints still has log items in the AIL: their
 * buffers' write-back (ledger_txn_late) is still to come, and would go by
 * window once h is printed.  At idle xfs pushes the AIL from its log
 * worker, every fs.xfs.xfssyncd_centisecs (30 s): hence the hold's limit.
 */
static bool ail_pending(struct ledger *l, const struct held *h, double now)
{
	if (l->xfs_ail_fd < 0 || l->flushing)
		return false;
	for (__u32 i = 0; i < h->e.nr_txns && i < AMP_ENTRY_TXNS; i++) {
		struct known_txn *t = txn_find(l, h->e.txns[i].dev, h->e.txns[i].tid);
		struct amp_txn_key key = { .dev = h->e.txns[i].dev, .tid = h->e.txns[i].tid };
		__s64 items;

		if (!t || t->st.fs != AMP_FS_XFS)
			continue;
		if (t->ail_clear) {
			if (now - t->ail_clear_at < AIL_CLEAR_GRACE_S)
				return true;
			continue;
		}
		/* One read per checkpoint per sweep, however many entries. */
		if (t->ail_read != now) {
			if (bpf_map_lookup_elem(l->xfs_ail_fd, &key, &items))
				items = now - t->committed_at < AIL_INSERT_GRACE_S;
			t->ail_read = now;
			t->ail_busy = items > 0;
			if (!t->ail_busy) {
				t->ail_clear = true;
				t->ail_clear_at = now;
			}
		}
		return true;	/* busy, or cleared just now */
	}
	return false;
}

/* Hold h for its AIL write-back if one is due: true if held. */
static bool ail_hold_if_pending(struct ledger *l, struct held *h)
{
	double now = now_s();

	if (!ail_pending(l, h, now))
		return false;
	h->ail_hold = true;
	h->ail_until = now + l->xfs_hold_s;
	l->nr_ail_held++;
	return true;
}

/* h's bill became complete: ready, or held for its AIL write-back. */
static void held_completed(struct ledger *l, struct held *h)
{
	if (!ail_hold_if_pending(l, h))
		l->nr_ready++;
}

/* One more thing known about h: count it if that completed its bill. */
static void held_progress(struct ledger *l, struct held *h, bool was_ready)
{
	if (!was_ready && !h->ail_hold && held_complete(h))
		held_completed(l, h);
}

/* h waits for no commit record more: those still to come share nothing
 * with it (ledger_flush, txns_retire). */
static void held_stop_waiting(struct ledger *l, struct held *h)
{
	bool was = held_ready(h);

	h->pending_txns = 0;
	held_progress(l, h, was);
}

/* Entries held for the AIL whose write-back came (or whose limit passed). */
static void ail_release(struct ledger *l, bool force)
{
	double now = now_s();

	if (!l->nr_ail_held)
		return;
	for (struct held *h = l->held; h; h = h->next) {
		if (!h->ail_hold || (!force && now < h->ail_until && ail_pending(l, h, now)))
			continue;
		h->ail_hold = false;
		l->nr_ail_held--;
		l->nr_ready++;
	}
}

/* Print, in arrival order, every entry whose bill is complete.  The scan
 * runs only when one is: a record per entry must not cost the whole list. */
static void print_ready(struct ledger *l)
{
	struct held **pp = &l->held, *h;

	if (!l->nr_ready)
		return;
	l->nr_ready = 0;
	while ((h = *pp)) {
		if (!held_ready(h)) {
			pp = &h->next;
			continue;
		}
		emit_held(l, h);
		*pp = h->next;
		free(h);
		l->nr_held--;
	}
	l->held_tail = pp;
}

static struct known_txn *txn_find(struct ledger *l, __u32 dev, __u32 tid)
{
	for (size_t i = l->nr_txns; i-- > 0;)
		if (l->txns[i].key.dev == dev && l->txns[i].key.tid == tid)
			return &l->txns[i];
	return NULL;
}

static __u64 txn_total_handles(const struct known_txn *t)
{
	return t->st.handles_traced + t->st.handles_untraced + t->st.handles_user +
	       t->st.handles_file;
}

/* What the transaction wrote: journal blocks and metadata in place. */
static __u64 txn_bytes(const struct known_txn *t)
{
	return t->st.journal_bytes + t->st.meta_bytes;
}

/* The disk its bytes went to: for jbd2 the journal's device is the key;
 * a btrfs key is the filesystem's anonymous s_dev, so the walk names it.
 * A dm or md device (ext4 without a journal names the block device its
 * metadata folios are of): the disk below it, which wrote them. */
static __u32 txn_disk(const struct ledger *l, const struct known_txn *t)
{
	return window_disk(l, t->st.disk ? t->st.disk : t->key.dev);
}

/* meta bytes of btrfs transaction t on h's bill, by tree in t's own
 * proportion; the rounding's rest to t's largest tree, so that the trees
 * sum to meta exactly. */
static void split_trees(struct held *h, const struct known_txn *t, __u64 meta)
{
	__u64 all = 0, given = 0;
	int big = AMP_BTRFS_T_UNKNOWN;

	for (int k = 0; k < AMP_BTRFS_TREES; k++) {
		all += t->st.tree_bytes[k];
		if (t->st.tree_bytes[k] > t->st.tree_bytes[big])
			big = k;
	}
	for (int k = 0; all && k < AMP_BTRFS_TREES; k++) {
		__u64 part = (unsigned __int128)meta * t->st.tree_bytes[k] / all;

		h->c.btrfs_tree[k] += part;
		given += part;
	}
	h->c.btrfs_tree[big] += meta - given;
}

/* share bytes of t on h's bill: journal and metadata in the transaction's
 * own proportion, or (late) all metadata it wrote in place later. */
static void credit_share(struct ledger *l, struct held *h, struct known_txn *t, __u64 share,
			 bool late)
{
	__u64 meta = late ? share : txn_bytes(t) ? share * t->st.meta_bytes / txn_bytes(t) : 0;

	h->c.journal += share - meta;
	h->c.meta += meta;
	if (meta && t->st.fs == AMP_FS_BTRFS)
		split_trees(h, t, meta);
	credit_cause(l, txn_disk(l, t), share);
}

/* One entry's share of a committed transaction's bytes. */
static void charge_share(struct ledger *l, struct held *h, struct known_txn *t, __u32 handles)
{
	__u64 total = txn_total_handles(t), bytes = txn_bytes(t), share;

	if (!total || !bytes)
		return;
	share = bytes * handles / total;
	if (share > bytes - t->given)
		share = bytes - t->given;
	t->given += share;
	credit_share(l, h, t, share, false);
}

/* t's share for its file i that no entry the ledger holds dirtied: parked
 * (see struct parked_share) if entries that dirtied the file await their
 * settlement, else to the window.  Their pages are read once per parked
 * share, when it is made (a walk of the settler's entries the first time
 * the file is asked for). */
static void park_or_window(struct ledger *l, struct known_txn *t, int i, bool late, __u64 bytes)
{
	const struct amp_txn_file *f = &t->st.files[i];
	struct parked_share *p;
	__u64 last_id, pages;

	if (!bytes)
		return;
	if (!l->unsettled || l->flushing)
		goto window;
	for (size_t k = 0; k < l->nr_parked; k++) {
		p = &l->parked[k];
		if (p->txn == (size_t)(t - l->txns) && p->file == i && p->late == late) {
			p->bytes += bytes;	/* more of it for the same entries */
			return;
		}
	}
	pages = unsettled_file_pages(l->unsettled, f->dev, f->ino, &last_id);
	if (!pages || amp_grow(&l->parked, &l->cap_parked, l->nr_parked + 1, sizeof(*l->parked)))
		goto window;
	p = &l->parked[l->nr_parked++];
	*p = (struct parked_share){ .txn = t - l->txns, .file = i, .late = late,
				    .bytes = bytes, .pages = pages, .last_id = last_id };
	return;
window:
	pool_add(l, txn_disk(l, t), bytes);
}

/* h's part of the parked shares of files it dirtied: by its pages of the
 * file against those still to come, the last of them taking the rest. */
static void claim_parked(struct ledger *l, struct held *h)
{
	for (size_t k = 0; k < l->nr_parked;) {
		struct parked_share *p = &l->parked[k];
		struct known_txn *t = &l->txns[p->txn];
		const struct amp_txn_file *f = &t->st.files[p->file];
		__u64 pages = h->e.id <= p->last_id ? entry_file_pages(&h->e, f->dev, f->ino) : 0,
		      share;

		if (!pages) {
			k++;
			continue;
		}
		share = pages >= p->pages ? p->bytes : p->bytes * pages / p->pages;
		credit_share(l, h, t, share, p->late);
		p->bytes -= share;
		p->pages -= pages < p->pages ? pages : p->pages;
		if (p->bytes) {
			k++;
			continue;
		}
		*p = l->parked[--l->nr_parked];	/* all given: drop it */
	}
}

/* An entry's claim on a committed transaction: its share of the bytes, and
 * of the late bytes kept for the entries still to come (xfs writes a
 * checkpoint's buffers back before the logger's own pages settle). */
static void claim_share(struct ledger *l, struct held *h, struct known_txn *t, __u32 handles)
{
	__u64 waiting = t->st.handles_traced > t->handles_claimed ?
			t->st.handles_traced - t->handles_claimed : 0;

	charge_share(l, h, t, handles);
	if (t->late_waiting && waiting) {
		__u64 share = handles >= waiting ? t->late_waiting :
			      t->late_waiting * handles / waiting;
		t->late_waiting -= share;
		h->c.meta += share;
		credit_cause(l, txn_disk(l, t), share);
	}
	/* Kernel threads' shares for a file this entry dirtied: by its
	 * handles among those still to come; the last of them to arrive
	 * leaves what nobody with pages of the file took to the entries
	 * still settling that have some, else to the window. */
	for (int i = 0; i < AMP_TXN_FILES && waiting; i++) {
		const struct amp_txn_file *f = &t->st.files[i];
		__u64 *wait[2] = { &t->files_waiting[i], &t->files_late_waiting[i] };

		for (int late = 0; late < 2; late++) {
			__u64 share = handles >= waiting ? *wait[late] : *wait[late] * handles / waiting;

			if (!*wait[late])
				continue;
			if (entry_file_pages(&h->e, f->dev, f->ino)) {
				credit_share(l, h, t, share, late);
				*wait[late] -= share;
			} else if (handles >= waiting) {
				park_or_window(l, t, i, late, *wait[late]);
				*wait[late] = 0;
			}
		}
	}
	t->handles_claimed += handles;
}

void ledger_entry(struct ledger *l, const struct amp_entry *e)
{
	struct held *h = calloc(1, offsetof(struct held, e) + entry_len(e));
	__u32 disks[AMP_LEDGER_MIRROR_LEGS];
	int nr_disks;

	if (!h)
		return;
	memcpy(&h->e, e, entry_len(e));
	h->arrived = now_s();
	take_btrfs_own(l, h);
	if (l->nr_parked)
		claim_parked(l, h);
	for (__u32 i = 0; i < e->nr_txns && i < AMP_ENTRY_TXNS; i++) {
		struct known_txn *t = txn_find(l, e->txns[i].dev, e->txns[i].tid);

		if (t && t->committed)
			claim_share(l, h, t, e->txns[i].handles);
		else
			h->pending_txns++;
	}
	/* Its write-out windows: its disk's, or each leg's of a RAID1 (the
	 * entry's pages went to every leg, and so did the fs's bytes). */
	nr_disks = e->disk && e->pages_dirtied ? copy_disks(l, window_disk(l, e->disk), disks) : 0;
	for (int k = 0; k < nr_disks; k++) {
		struct window *w = window_of(l, disks[k]);

		if (!w || amp_grow(&w->entries, &w->cap, w->nr + 1, sizeof(*w->entries)))
			continue;
		w->entries[w->nr++] = h;
		w->pages += e->pages_dirtied;
		h->windows_open++;
	}
	/* Nothing left to learn (no pages, commits known): print it now.  Most
	 * entries of an appending logger dirty nothing; holding them would make
	 * each one walk the entries that do wait. */
	if (held_complete(h) && !ail_hold_if_pending(l, h)) {
		emit_held(l, h);
		free(h);
		return;
	}
	*l->held_tail = h;
	l->held_tail = &h->next;
	if (++l->nr_held > l->held_peak)
		l->held_peak = l->nr_held;
}

/* Share of a commit nobody in the trace claims: to its disk's window. */
static void txn_release_rest(struct ledger *l, struct known_txn *t)
{
	if (txn_bytes(t) > t->given)
		pool_add(l, txn_disk(l, t), txn_bytes(t) - t->given);
	t->given = txn_bytes(t);
}

/* No more entries of t will come: what it kept for them goes by window. */
static void txn_release_all(struct ledger *l, struct known_txn *t)
{
	txn_release_rest(l, t);
	pool_add(l, txn_disk(l, t), t->late_waiting);
	t->late_waiting = 0;
	for (int f = 0; f < AMP_TXN_FILES; f++) {
		pool_add(l, txn_disk(l, t), t->files_waiting[f] + t->files_late_waiting[f]);
		t->files_waiting[f] = t->files_late_waiting[f] = 0;
	}
}

/*
 * How long a committed transaction is kept.  Its entries come within the
 * settle timeout of their syscalls (a tenth more: the sweep's period),
 * which came before its record; then one may be held for its write-out
 * window, and on xfs for its AIL write-back, both of which look it up.
 */
static double txn_keep_s(const struct ledger *l)
{
	return 1.1 * l->settle_s + WINDOW_MAX_S + (l->xfs_ail_fd >= 0 ? l->xfs_hold_s : 0) + 10.0;
}

/*
 * Forget the transactions committed longer ago than txn_keep_s: their
 * entries have all come and gone by then, and
 * what they kept for the entries that never came (lost in a full ring) goes
 * by window now rather than at the end of the run.  A busy journal commits
 * every few seconds: kept for good, the table would grow for as long as the
 * trace runs, and every entry's lookup with it.  Parked shares of a retired
 * transaction go by window too; the others are renumbered.
 */
static void txns_retire(struct ledger *l, double now)
{
	double keep_s = txn_keep_s(l);
	size_t kept = 0;

	if (now - l->txns_retired_at < TXN_RETIRE_EVERY_S)
		return;
	l->txns_retired_at = now;
	/* An entry waiting for a commit whose record was lost (in a full ring:
	 * counted there) would wait for the end of the run, as ledger_flush
	 * ends its wait: given up on after PENDING_GIVE_UP_S, far past any
	 * commit interval. */
	for (struct held *h = l->held; h; h = h->next)
		if (h->pending_txns > 0 && now - h->arrived >= PENDING_GIVE_UP_S)
			held_stop_waiting(l, h);
	for (size_t i = 0; i < l->nr_txns; i++) {
		struct known_txn *t = &l->txns[i];

		t->retiring = t->committed && now - t->committed_at >= keep_s;
		if (t->retiring)
			txn_release_all(l, t);
		else
			t->moved_to = kept++;
	}
	if (kept == l->nr_txns)
		return;
	for (size_t k = 0; k < l->nr_parked;) {
		struct parked_share *p = &l->parked[k];
		struct known_txn *t = &l->txns[p->txn];

		if (!t->retiring) {
			p->txn = t->moved_to;
			k++;
			continue;
		}
		pool_add(l, txn_disk(l, t), p->bytes);
		*p = l->parked[--l->nr_parked];
	}
	kept = 0;
	for (size_t i = 0; i < l->nr_txns; i++)
		if (!l->txns[i].retiring)
			l->txns[kept++] = l->txns[i];
	l->txns_retired += l->nr_txns - kept;
	l->nr_txns = kept;
}


/*
 * Handles kernel threads opened for a traced file (ext4 converting the
 * extents its data went to, the flusher allocating its blocks): the work
 * of the entries that dirtied that file.  Each file's share of bytes_all
 * (by its handles, at most left in all) is split over the held entries by
 * their pages of it; with none held, kept for the transaction's entries
 * still to come (claim_share), or parked for the entries with pages of it
 * still awaiting their settlement (park_or_window: the flusher writes one
 * file's metadata before the data of the entries' other files), else (all
 * printed) by window.  late: the bytes are metadata t wrote in place after
 * its record (ledger_txn_late).  Returns the bytes handed out.
 */
static __u64 txn_share_files(struct ledger *l, struct known_txn *t, __u64 bytes_all,
			     __u64 left, bool late)
{
	__u64 total = txn_total_handles(t), out = 0;

	for (int i = 0; i < AMP_TXN_FILES && total; i++) {
		const struct amp_txn_file *f = &t->st.files[i];
		__u64 bytes = bytes_all * f->handles / total, pages = 0, given = 0;
		struct held *last = NULL;

		if (!f->handles)
			continue;
		if (bytes > left - out)
			bytes = left - out;
		for (struct held *h = l->held; h; h = h->next) {
			__u64 p = entry_file_pages(&h->e, f->dev, f->ino);

			pages += p;
			if (p)
				last = h;
		}
		out += bytes;
		if (!pages && t->st.handles_traced > t->handles_claimed) {
			/* Its writer may be among the entries still to come. */
			if (late)
				t->files_late_waiting[i] += bytes;
			else
				t->files_waiting[i] += bytes;
			continue;
		}
		if (!pages) {
			park_or_window(l, t, i, late, bytes);
			continue;
		}
		for (struct held *h = l->held; h; h = h->next) {
			__u64 p = entry_file_pages(&h->e, f->dev, f->ino),
			      share = h == last ? bytes - given : bytes * p / pages;

			if (!p)
				continue;
			credit_share(l, h, t, share, late);
			given += share;
		}
	}
	return out;
}

void ledger_txn(struct ledger *l, const struct amp_txn_rec *rec)
{
	struct known_txn *t = txn_find(l, rec->dev, rec->tid);
	__u64 untraced, user, bytes;

	if (!t) {
		if (amp_grow(&l->txns, &l->cap_txns, l->nr_txns + 1, sizeof(*l->txns)))
			return;
		t = &l->txns[l->nr_txns++];
		memset(t, 0, sizeof(*t));
		t->key.dev = rec->dev;
		t->key.tid = rec->tid;
	}
	/* A second record of one transaction is its continuation (btrfs
	 * sends one at a log sync, and handles join it after): its own. */
	t->st = rec->st;
	if (!t->committed)
		t->committed_at = now_s();
	t->committed = true;

	/* Entries already waiting for this commit take their share now. */
	for (struct held *h = l->held; h; h = h->next)
		for (__u32 i = 0; i < h->e.nr_txns && i < AMP_ENTRY_TXNS; i++)
			if (h->e.txns[i].dev == rec->dev && h->e.txns[i].tid == rec->tid) {
				bool was = held_ready(h);

				claim_share(l, h, t, h->e.txns[i].handles);
				/* Not for a continuation's record (btrfs), nor for
				 * an entry that stopped waiting (txns_retire). */
				if (h->pending_txns > 0)
					h->pending_txns--;
				held_progress(l, h, was);
			}
	t->given += txn_share_files(l, t, txn_bytes(t), txn_bytes(t) - t->given, false);
	/* Handles of kernel threads for no traced file: by window.  Handles
	 * of untraced processes: theirs, never shared. */
	bytes = txn_bytes(t);
	untraced = txn_total_handles(t) ?
		   bytes * t->st.handles_untraced / txn_total_handles(t) : bytes;
	user = txn_total_handles(t) ? bytes * t->st.handles_user / txn_total_handles(t) : 0;
	if (untraced) {
		pool_add(l, txn_disk(l, t), untraced);
		t->given += untraced;
	}
	if (user) {
		struct ledger_disk *d = disk_totals(l, txn_disk(l, t));

		if (d)
			d->untraced += user;
		t->given += user;
	}
	print_ready(l);
}

/*
 * Metadata a transaction wrote after its record (ext4's checkpoint blocks,
 * xfs's buffers written back from the AIL): shared as its own bytes were,
 * among the entries still held: by their handles, and kernel threads'
 * handles for a traced file by the entries' pages of it.  The shares of
 * traced handles whose entries are still to come wait for them
 * (claim_share); those of entries already printed and of kernel threads
 * for no traced file go by window, untraced processes' are theirs.
 */
void ledger_txn_late(struct ledger *l, const struct amp_txn_late *rec)
{
	struct known_txn *t = txn_find(l, rec->dev, rec->tid);
	struct ledger_disk *d = disk_totals(l, rec->disk);
	struct window *w;
	__u64 total = t && t->committed ? txn_total_handles(t) : 0, given = 0, user, later = 0;

	for (struct held *h = total ? l->held : NULL; h; h = h->next)
		for (__u32 i = 0; i < h->e.nr_txns && i < AMP_ENTRY_TXNS; i++)
			if (h->e.txns[i].dev == rec->dev && h->e.txns[i].tid == rec->tid) {
				__u64 share = rec->bytes * h->e.txns[i].handles / total;

				/* Never past the bytes: a btrfs transaction's record
				 * is replaced by its continuation's (see ledger_txn),
				 * whose handles may not count every held entry's. */
				if (share > rec->bytes - given)
					share = rec->bytes - given;
				h->c.meta += share;
				given += share;
				if (d)
					d->journal_by_cause += share;
			}
	if (total && t->st.handles_traced > t->handles_claimed) {
		later = rec->bytes * (t->st.handles_traced - t->handles_claimed) / total;
		if (later > rec->bytes - given)
			later = rec->bytes - given;
		t->late_waiting += later;
	}
	/* Kernel threads' handles for a traced file: to the held entries that
	 * dirtied it (with none held, parked for those still settling, else
	 * to the window, in there). */
	if (total)
		given += txn_share_files(l, t, rec->bytes, rec->bytes - given - later, true);
	/* Looked up again: sharing may have added rows (realloc). */
	d = disk_totals(l, rec->disk);
	w = window_of(l, rec->disk);
	user = total ? rec->bytes * t->st.handles_user / total : 0;
	if (user > rec->bytes - given - later)
		user = rec->bytes - given - later;
	if (user && d)
		d->untraced += user;
	else
		user = 0;
	if (w)
		w->pool += rec->bytes - given - user - later;
	print_ready(l);
}

/*
 * Share the window's unclaimed bytes over its entries by their pages, the
 * untraced writers' data pages written meanwhile counting as writers too:
 * their share is theirs (untraced).  A window with neither carries its
 * bytes over (a commit written before the data it was for).
 */
static void window_close(struct ledger *l, struct window *w, __u64 base_now, __u64 others_now)
{
	__u64 bytes = unclaimed_since(w, base_now) + w->pool, given = 0;
	__u64 other_pages = (others_now - w->others_at_open) / page_bytes();
	struct ledger_disk *d = disk_totals(l, w->disk);

	if (!w->nr && !other_pages)
		return;
	if (other_pages) {
		__u64 theirs = bytes * other_pages / (w->pages + other_pages);

		if (d)
			d->untraced += theirs;
		bytes -= theirs;
	}
	for (size_t i = 0; i < w->nr; i++) {
		struct held *h = w->entries[i];
		__u64 share = i + 1 == w->nr ? bytes - given :
			      w->pages ? bytes * h->e.pages_dirtied / w->pages : 0;

		bool was = held_ready(h);

		h->c.window += share;
		given += share;
		h->windows_open--;
		held_progress(l, h, was);
	}
	if (d)
		d->by_window += given;
	w->nr = 0;
	w->pages = 0;
	w->pool = 0;
	if (base_now > w->base_at_open)
		w->base_at_open = base_now;
	w->others_at_open = others_now;
	w->opened = now_s();
}

/* Close the windows whose disk went quiet (or that ran too long). */
void ledger_tick(struct ledger *l, bool force)
{
	double now = now_s();

	for (size_t i = 0; i < l->nr_wins; i++) {
		struct window *w = &l->wins[i];
		__u64 ios, others, base = unclaimed_counter(l, w->disk, &ios, &others);

		if (ios != w->last_ios) {
			w->last_ios = ios;
			w->quiet_since = now;
		}
		if (force || now - w->quiet_since >= WINDOW_QUIET_S ||
		    now - w->opened >= WINDOW_MAX_S)
			window_close(l, w, base, others);
	}
	ail_release(l, force);
	print_ready(l);
	if (!force)
		txns_retire(l, now);
}

/* End of run: commits still running count as they stand; print the rest. */
void ledger_flush(struct ledger *l, int txns_fd)
{
	struct amp_txn_key key, *prev = NULL;
	struct amp_txn_rec rec = { .type = AMP_REC_TXN };

	l->flushing = true;
	/* The kernel still runs: a key deleted meanwhile starts the walk over
	 * from the first, so one transaction may come twice.  Once each. */
	while (!bpf_map_get_next_key(txns_fd, prev, &key)) {
		struct known_txn *t = txn_find(l, key.dev, key.tid);

		if (!(t && t->flushed) && !bpf_map_lookup_elem(txns_fd, &key, &rec.st)) {
			rec.dev = key.dev;
			rec.tid = key.tid;
			ledger_txn(l, &rec);
			if ((t = txn_find(l, key.dev, key.tid)))
				t->flushed = true;
		}
		prev = &key;
	}
	/* Entries waiting on a commit the trace never saw: nothing to share. */
	for (struct held *h = l->held; h; h = h->next)
		held_stop_waiting(l, h);
	for (size_t i = 0; i < l->nr_txns; i++)
		txn_release_all(l, &l->txns[i]);
	/* Parked shares whose entries never came (all drained by now). */
	for (size_t k = 0; k < l->nr_parked; k++)
		pool_add(l, txn_disk(l, &l->txns[l->parked[k].txn]), l->parked[k].bytes);
	l->nr_parked = 0;
	ledger_tick(l, true);
	for (size_t i = 0; i < l->nr_wins; i++) {
		struct ledger_disk *d = disk_totals(l, l->wins[i].disk);
		__u64 ios;

		/* Unclaimed bytes of windows that never had an entry. */
		if (d)
			d->left_over = unclaimed_since(&l->wins[i],
						       unclaimed_counter(l, l->wins[i].disk, &ios, NULL)) +
				       l->wins[i].pool;
	}
	for (struct held *h = l->held; h; h = h->next) {
		bool was = held_ready(h);

		h->windows_open = 0;
		held_progress(l, h, was);
	}
	print_ready(l);
}

void ledger_stats(const struct ledger *l, struct ledger_stats *out)
{
	out->txns_kept = l->nr_txns;
	out->txns_retired = l->txns_retired;
	out->held = l->nr_held;
	out->held_peak = l->held_peak;
}

void ledger_free(struct ledger *l)
{
	struct held *h, *n;

	if (!l)
		return;
	for (h = l->held; h; h = n) {
		n = h->next;
		free(h);
	}
	for (size_t i = 0; i < l->nr_wins; i++)
		free(l->wins[i].entries);
	free(l->wins);
	free(l->txns);
	free(l->parked);
	free(l->disks);
	free(l->mirrors);
	free(l->aliases);
	free(l);
}
