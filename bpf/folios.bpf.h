/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Owners of dirty folios, from the dirtying stage to the write-out: which
 * entry pays for a folio when the block layer writes it.
 *
 * An open-addressed table in an array map (`folio_table`), touched with
 * loads, stores and compare-and-swap only: a hash map's update and delete
 * take a bucket lock with interrupts off, which costs 0.2-0.9 us on a
 * paravirtualised guest (re-enabling interrupts is a hypercall there).
 *
 * - A folio (dev, ino, index) has a 62-bit tag and a home slot.  The home
 *   keeps a file's neighbouring pages in neighbouring slots (512 pages of
 *   a file to one run of slots, placed by hash): a writer's next folio is
 *   then in a cache line and a page of the table it has just touched,
 *   where a slot per folio at random cost 3 us a folio
 *   (scripts/bench/README.md).
 * - A folio sits within AMP_FOLIO_WINDOW slots of its home; a lookup scans
 *   that window whole, so a slot is freed by clearing its tag, with no
 *   tombstone.  Two folios with the same tag in one window would share an
 *   owner: with 2^62 tags, about n * 8 / 2^62 per lookup, i.e. never.
 * - Bit 0 of the tag is a busy bit, taken by compare-and-swap by whoever
 *   changes the slot (fills it, charges it, replaces or frees its owner)
 *   and dropped by an exchange.  It is held for a few loads and stores,
 *   with preemption off (tracepoint programs), and never waited on for
 *   long: who finds it busy tries AMP_SLOT_SPINS times, then counts a lost
 *   race (page_races) instead of waiting.
 * - A window with no free slot sends the folio to the `page_owners` hash
 *   (counted: pages_overflow); `overflow_live` says whether that hash holds
 *   anything, so the common path never looks there.
 *
 * The races, and why each is safe or counted:
 * - Two dirtyings of one folio never overlap: the tracepoint fires under
 *   the mapping's i_pages lock, once per clean->dirty transition.  So only
 *   one CPU at a time inserts, replaces or frees a given folio's owner on
 *   the dirtying side, and no folio is inserted twice.
 * - Two folios claiming one free slot: one compare-and-swap wins, the
 *   other goes on to the next free slot.
 * - A folio re-dirtied while its write completes (the tail page of an
 *   appending log is re-dirtied during its write-back): both sides take
 *   the busy bit, so either the completion charges the old owner and the
 *   re-dirtying then replaces it (cancelling it only if nothing of it was
 *   written), or the re-dirtying replaces it first and the completion
 *   charges the new owner, as the hash map did.  A completion that finds
 *   the slot freed meanwhile classes its bytes as nobody's.
 * - Two requests completing parts of one large folio on two CPUs: the busy
 *   bit orders them; the one that writes its last byte frees the slot.
 * - RAID1's legs completing copies of one folio on two CPUs: they add
 *   their bytes atomically, without the busy bit (leg_copy_written).
 * - A holder interrupted for long (a hard interrupt completing another
 *   part of the same folio on its CPU): the other side gives up after
 *   AMP_SLOT_SPINS tries and counts page_races; the bytes go to the class
 *   of an unowned page, or the re-dirtied folio stays with its old owner.
 */
#ifndef AMPTRACE_FOLIOS_BPF_H
#define AMPTRACE_FOLIOS_BPF_H

#define AMP_FOLIO_WINDOW	8	/* slots from its home a folio may sit */
#define AMP_FOLIO_SPAN_SHIFT	9	/* pages of a file in one run of slots */
#define AMP_SLOT_BUSY		1ULL
#define AMP_SLOT_SPINS		32

/* What a folio's write-out charges, copied from its owner. */
struct folio_charge {
	__u64 entry_id;
	__u32 settle_slot;
	__u16 run;
	__u8 kind;
	/* The owner's entry stops waiting for this folio: at its first
	 * device bytes, or where each RAID1 leg writes a copy, at the last
	 * byte of the last copy (block.bpf.h, charge_owner). */
	bool settles;
	/* A RAID1 leg's copy: counted into the slot only once charged
	 * (leg_copy_charged_global), which then says whether it settles. */
	bool leg;
	bool hashed;	/* ... and its owner is in page_owners, not a slot */
};

static __always_inline __u64 mix64(__u64 h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/*
 * Where a folio is looked for: its tag (bit 1 set: never 0; bit 0 clear:
 * the busy bit), its home slot in folio_table, and its bit in that slot's
 * `homed` byte (by another part of the hash: 8 per slot, 2^21 with the
 * default table).  The slots keep 512 pages of a file together in one
 * run, a folio's slot at its ordinal in that run (its offset over its
 * size), so that a writer's consecutive folios of any size take
 * consecutive slots.  Each folio size has a
 * sub-run of its own in the run (512 slots for single pages, then 256,
 * 128, ... at 1024 - 1024 / npages): a stretch of mixed sizes, as
 * readahead leaves a mapped file (journald's), would otherwise pile its
 * larger folios' ordinals onto its small ones' and fill windows (under
 * `make bench`'s journald, 9.0-11.2 % of the folios went to the overflow
 * hash before, 0.6-6.5 % after).  A random place per
 * folio missed the cache every time (the bitmap alone cost 100-150 ns a
 * folio), and a slot per page left 15 empty slots, half a cache line
 * each, between 64 KiB folios.  npages: the folio's size, as the dirtying
 * saw it; a folio split before its write-out is looked for at another
 * home and its bytes go to nobody, as those of its later parts always
 * did.
 */
struct folio_pos {
	__u64 tag;
	__u32 home;
	__u32 bit;	/* 0-7, in the home slot's homed byte */
};

static __always_inline void folio_pos(const struct amp_page_key *key, __u32 npages,
				      struct folio_pos *p)
{
	__u64 file = mix64(key->ino ^ mix64(key->dev));
	__u64 span = mix64(file ^ (key->index >> AMP_FOLIO_SPAN_SHIFT));
	__u32 in_span = key->index & ((1 << AMP_FOLIO_SPAN_SHIFT) - 1);
	__u32 size = npages ? npages : 1;
	/* This size's sub-run: after those of the smaller sizes. */
	__u32 sub_run = (2 << AMP_FOLIO_SPAN_SHIFT) - (2 << AMP_FOLIO_SPAN_SHIFT) / size;

	p->home = ((__u32)span + sub_run + in_span / size) & folio_table_mask;
	p->bit = (span >> 40) & 7;
	p->tag = (mix64(file + key->index * 0x9E3779B97F4A7C15ULL) | 2) & ~AMP_SLOT_BUSY;
}

static __always_inline struct amp_folio_slot *folio_slot(__u32 home, __u32 i)
{
	__u32 idx = (home + i) & folio_table_mask;

	return bpf_map_lookup_elem(&folio_table, &idx);
}

/* The 32-bit word of a slot that holds its `homed` byte, and p's bit of
 * that byte as a mask of the word.  (BPF atomics are 32 or 64 bits wide.
 * The word's other bytes are the slot's kind, written and has_next: plain
 * byte stores, which an atomic OR of the whole word cannot undo, nor they
 * it, on any architecture: each is atomic for its own bytes.) */
static __always_inline __u32 *homed_word(struct amp_folio_slot *s, const struct folio_pos *p,
					 __u32 *mask)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	*mask = 1U << (24 + p->bit);
#else
	*mask = 1U << p->bit;
#endif
	return (__u32 *)&s->kind;
}

/*
 * Folios dirtied since tracing started, by anyone: a bit per folio in its
 * home slot, set by the dirtying stage.  A file page written without its
 * bit was dirty before the start (class before_start), not dirtied by an
 * untraced writer meanwhile (class other).  A collision can only move such
 * a page to other; and the pages dirty at the start are all written
 * within the kernel's dirty expiry (30 s by default), long before the bits
 * fill up.  In the home slot, not a bitmap of its own: the dirtying reads
 * that slot's line next anyway, where a bitmap was one more line and one
 * more page of a map, ~20-25 ns a folio after a syscall on a guest that
 * flushes its TLB at each (scripts/bench/README.md).
 *
 * Mark a folio dirtied (a store only the first time).  Was it marked
 * before?  If not, it has no owner to look for.
 */
static __always_inline bool mark_dirtied(const struct folio_pos *p)
{
	struct amp_folio_slot *s = folio_slot(p->home, 0);
	__u32 mask, *w;

	if (!s)		/* for the verifier */
		return true;
	w = homed_word(s, p, &mask);
	if (*w & mask)
		return true;
	__sync_fetch_and_or(w, mask);
	return false;
}

/* Was this folio (maybe) dirtied since the start?  A collision of bits
 * can only say yes: a page dirty before the start then counts as other. */
static __always_inline bool dirtied_since_start(const struct folio_pos *p)
{
	struct amp_folio_slot *s = folio_slot(p->home, 0);
	__u32 mask;

	return !s || (*homed_word(s, p, &mask) & mask);
}

/* The slot of the window holding tag (busy or not), or NULL. */
static __always_inline struct amp_folio_slot *folio_find(__u64 tag, __u32 home)
{
	for (int i = 0; i < AMP_FOLIO_WINDOW; i++) {
		struct amp_folio_slot *s = folio_slot(home, i);

		if (s && (s->tag & ~AMP_SLOT_BUSY) == tag)
			return s;
	}
	return NULL;
}

enum slot_lock { SLOT_LOCKED, SLOT_GONE, SLOT_BUSY };

/* Take the busy bit of a slot that holds tag. */
static __always_inline enum slot_lock slot_lock(struct amp_folio_slot *s, __u64 tag)
{
	for (int i = 0; i < AMP_SLOT_SPINS; i++) {
		__u64 old = s->tag;

		if (old == (tag | AMP_SLOT_BUSY))
			continue;
		if (old != tag)
			return SLOT_GONE;
		if (__sync_val_compare_and_swap(&s->tag, tag, tag | AMP_SLOT_BUSY) == tag)
			return SLOT_LOCKED;
	}
	STAT_INC(page_races);
	return SLOT_BUSY;
}

/* Drop the busy bit, leaving tag (or 0: the slot is free).  An exchange,
 * so that the slot's other fields are written before it shows. */
static __always_inline void slot_unlock(struct amp_folio_slot *s, __u64 tag)
{
	__sync_lock_test_and_set(&s->tag, tag);
}

/* An owner that will never see this folio written: unless its entry
 * stopped waiting for it already (settled: its first bytes were written,
 * or every copy of them), it stops now. */
static __always_inline void owner_cancel(__u64 entry_id, __u32 settle_slot, bool settled)
{
	struct amp_settle *s;

	if (settled)
		return;
	STAT_INC(pages_cancelled);
	s = settle_lookup(settle_slot, entry_id);
	if (s)
		settle_put(s);
}

/* An owner in the overflow hash, released (see owner_cancel).  The table
 * knows whether that hash holds anything. */
static __always_inline void overflow_cancel(struct amp_page_key *key)
{
	struct amp_page_owner *o;

	if (!overflow_live)
		return;
	o = bpf_map_lookup_elem(&page_owners, key);
	if (!o)
		return;
	owner_cancel(o->entry_id, o->settle_slot, o->bytes_written && o->copies <= 1);
	if (!bpf_map_delete_elem(&page_owners, key))
		__sync_fetch_and_add(&overflow_live, -1);
}

static __always_inline void slot_fill(struct amp_folio_slot *s, const struct amp_page_owner *o)
{
	s->entry_id = o->entry_id;
	s->settle_slot = o->settle_slot;
	s->bytes_written = 0;
	s->npages = o->npages;
	s->run = o->run;
	s->kind = o->kind;
	s->written = 0;
	s->has_next = 0;
}

/* The next owner of a locked slot's folio, waiting in page_next_owners
 * (see there), released: it will not see the write it waited for. */
static __always_inline void next_cancel(struct amp_folio_slot *s, struct amp_page_key *key)
{
	struct amp_page_owner *o;

	if (!s->has_next)
		return;
	s->has_next = 0;
	o = bpf_map_lookup_elem(&page_next_owners, key);
	if (!o)
		return;
	owner_cancel(o->entry_id, o->settle_slot, false);
	bpf_map_delete_elem(&page_next_owners, key);
}

/* PG_writeback in a folio's or page's flags word (an unsigned long, or
 * since 6.18 a struct memdesc_flags_t around one: read as a word).  Read
 * only where an owner is found: one helper call, not on the common path. */
static __always_inline bool flags_writeback(const void *flags)
{
	unsigned long f = 0;

	bpf_probe_read_kernel(&f, sizeof(f), flags);
	return f & (1UL << bpf_core_enum_value(enum pageflags, PG_writeback));
}

/* Has the slot's owner's entry stopped waiting for it: its first device
 * bytes were seen, or on RAID1 the last byte of every leg's copy (the
 * owner is then freed, unless the busy bit stayed taken)? */
static __always_inline bool slot_settled(const struct amp_folio_slot *s)
{
	return s->written;
}

/* Is the locked slot's owner's data on its way to the disk right now: the
 * folio under write-out, and nothing of the owner seen written yet (or
 * not yet every leg's copy)?  Then a re-dirtying must not take the folio
 * from it: that write is its. */
static __always_inline bool owner_in_flight(const struct amp_folio_slot *s, const void *flags)
{
	return !slot_settled(s) && flags && flags_writeback(flags);
}

/* Owner o takes a free slot of folio key's window (or the overflow hash):
 * false if there is no room (pages_full). */
static __always_inline bool folio_insert(struct amp_page_key *key, const struct folio_pos *p,
					  const struct amp_page_owner *o)
{
	struct amp_folio_slot *s;
	__u32 home = p->home;
	__u64 tag = p->tag;

	for (int i = 0; i < AMP_FOLIO_WINDOW; i++) {
		s = folio_slot(home, i);
		if (!s || s->tag)
			continue;
		if (__sync_val_compare_and_swap(&s->tag, 0, tag | AMP_SLOT_BUSY))
			continue;	/* another folio took it first */
		slot_fill(s, o);
		slot_unlock(s, tag);
		return true;
	}
	/* A full window: the hash, with its lock. */
	if (!bpf_map_update_elem(&page_owners, key, o, BPF_NOEXIST)) {
		__sync_fetch_and_add(&overflow_live, 1);
		STAT_INC(pages_overflow);
		return true;
	}
	STAT_INC(pages_full);
	return false;
}

/*
 * The folio key (at p) starts a dirtying episode: owner o takes it, replacing any
 * owner it had.  maybe_owned: its dirtied bit was set before (a folio
 * never dirtied since the start has no owner to look for).  False when it
 * could not be owned: no room anywhere (pages_full) or a lost race
 * (page_races), both counted.
 */
static __always_inline bool folio_own(struct amp_page_key *key, const struct folio_pos *p,
				       const struct amp_page_owner *o, bool maybe_owned,
				       const void *flags)
{
	struct amp_folio_slot *s;
	__u32 home = p->home;
	__u64 tag = p->tag;

	if (maybe_owned) {
		s = folio_find(tag, home);
		if (s) {
			enum slot_lock l = slot_lock(s, tag);

			if (l == SLOT_BUSY)
				return false;
			if (l == SLOT_LOCKED) {
				__u64 old_id = s->entry_id;
				__u32 old_slot = s->settle_slot;
				bool old_settled = slot_settled(s);

				next_cancel(s, key);
				if (owner_in_flight(s, flags)) {
					/* Re-dirtied during its owner's write-out:
					 * next in line, at that write's completion. */
					bool ok = !bpf_map_update_elem(&page_next_owners,
								       key, o, BPF_ANY);

					s->has_next = ok;
					slot_unlock(s, tag);
					if (!ok)
						STAT_INC(pages_full);
					return ok;
				}
				slot_fill(s, o);
				slot_unlock(s, tag);
				owner_cancel(old_id, old_slot, old_settled);
				return true;
			}
			/* Gone: written out meanwhile; take a free slot. */
		}
		overflow_cancel(key);
	}
	return folio_insert(key, p, o);
}

/* The folio starts a dirtying episode nobody traced: whoever owned it is
 * done with it. */
static __always_inline void folio_disown(struct amp_page_key *key, const struct folio_pos *p,
					 bool maybe_owned, const void *flags)
{
	struct amp_folio_slot *s;

	if (!maybe_owned)
		return;
	s = folio_find(p->tag, p->home);
	if (s && slot_lock(s, p->tag) == SLOT_LOCKED) {
		__u64 old_id = s->entry_id;
		__u32 old_slot = s->settle_slot;
		bool old_settled = slot_settled(s);

		next_cancel(s, key);
		if (owner_in_flight(s, flags)) {	/* that write is still its */
			slot_unlock(s, p->tag);
			return;
		}
		slot_unlock(s, 0);
		owner_cancel(old_id, old_slot, old_settled);
	}
	overflow_cancel(key);
}

/* Clamp a chunk at page sub of a folio of npages, in_page bytes into that
 * page, to the folio's end. */
static __always_inline __u32 clamp_to_folio(__u32 chunk, __u32 npages, __u64 sub, __u32 in_page)
{
	__u32 left = (npages - sub) * page_size - in_page;

	return sub < npages && chunk > left ? left : chunk;
}

/* Who a hashed owner's bytes are charged to. */
static __always_inline void charge_to_hashed(struct folio_charge *c,
					     const struct amp_page_owner *o)
{
	c->entry_id = o->entry_id;
	c->settle_slot = o->settle_slot;
	c->run = o->run;
	c->kind = o->kind;
}

/* Bytes of a folio whose owner o is in a hash (owners: page_owners, or
 * startup_pages), as folio_written: atomics on the value instead of the
 * busy bit.  True when the whole folio is out and this deleted it. */
static __always_inline bool hashed_owner_written(void *owners, struct amp_page_key *key,
						 struct amp_page_owner *o, __u64 sub, __u32 in_page,
						 __u32 copies, __u32 *chunk, struct folio_charge *c)
{
	__u32 bytes = clamp_to_folio(*chunk, o->npages, sub, in_page);
	__u32 before = __sync_fetch_and_add(&o->bytes_written, bytes);
	__u32 whole = o->npages * page_size * copies;

	*chunk = bytes;
	o->copies = copies;
	charge_to_hashed(c, o);
	c->settles = copies > 1 ? before < whole && before + bytes >= whole : before == 0;
	return before + bytes >= whole && !bpf_map_delete_elem(owners, key);
}

/* Free a locked slot whose folio is out whole: it becomes its next
 * owner's, if one waits (page_next_owners), else free. */
static __always_inline void slot_release_written(struct amp_folio_slot *s,
						 struct amp_page_key *key, __u64 tag)
{
	struct amp_page_owner *next;

	if (!s->has_next) {
		slot_unlock(s, 0);
		return;
	}
	next = bpf_map_lookup_elem(&page_next_owners, key);
	if (!next) {
		slot_unlock(s, 0);
		return;
	}
	slot_fill(s, next);
	bpf_map_delete_elem(&page_next_owners, key);
	slot_unlock(s, tag);
}

/* A plain load the compiler must not merge with another or hoist out of
 * a loop: a word another CPU changes. */
#define AMP_READ_ONCE(x) (*(const volatile typeof(x) *)&(x))

/* All copies of owner c's write-out are in: free its slot (or hand it to
 * its next owner), under the busy bit, unless a re-dirtying gave the folio
 * a new owner meanwhile (c's was settled, so no longer in flight). */
static __always_inline void leg_release(struct amp_folio_slot *s, struct amp_page_key *key,
					__u64 tag, const struct folio_charge *c)
{
	if (slot_lock(s, tag) != SLOT_LOCKED)
		return;		/* counted; the next leg or dirtying releases it */
	if (s->entry_id == c->entry_id && s->settle_slot == c->settle_slot)
		slot_release_written(s, key, tag);
	else
		slot_unlock(s, tag);
}

/*
 * One RAID1 leg's copy of a folio's bytes, without taking the busy bit:
 * the legs complete on different CPUs at once, and a leg that found the
 * other holding the bit lost its copy after AMP_SLOT_SPINS tries
 * (page_races, its entry unsettled: 2 of ~15 guest runs of RAID1 with
 * xfs).  While any leg is in flight the folio is under write-back, so its
 * owner stays put (a re-dirtying queues its next owner instead) and only
 * bytes_written changes: an atomic add, once the busy bit (now only the
 * dirtying side's) is down.  Here the owner is read; the bytes are added
 * only after they were charged to it (leg_copy_charged_global): a leg
 * that added first and charged after could find its entry settled by the
 * other leg meanwhile, and its copy late (a guest's vCPU stalled between
 * the two, 1 in ~25 RAID1 xfs runs).  The leg that adds the last byte of
 * the last copy settles the entry, marks the slot settled (nobody cancels
 * it again) and frees it under the busy bit (leg_release).  1: an owner
 * to charge; 0: a jbd2 copy of metadata (not charged); -1: not this
 * folio's any
 * more, or busy throughout (page_races).
 */
static __always_inline int leg_copy_written(struct amp_folio_slot *s, struct amp_page_key *key,
					    __u64 tag, __u64 sub, __u32 in_page, __u32 *chunk,
					    bool jbd2, __u32 copies, struct folio_charge *c)
{
	__u32 npages, whole;

	for (int i = 0; i < AMP_SLOT_SPINS; i++) {
		__u64 now = AMP_READ_ONCE(s->tag);

		if (now == (tag | AMP_SLOT_BUSY))
			continue;
		if (now != tag)
			return -1;
		npages = s->npages;
		c->entry_id = s->entry_id;
		c->settle_slot = s->settle_slot;
		c->run = s->run;
		c->kind = s->kind;
		if (AMP_READ_ONCE(s->tag) != tag)	/* taken while read: read again */
			continue;
		if (jbd2 && c->kind != AMP_PAGE_FILE)
			return 0;
		whole = npages * page_size * copies;
		if (AMP_READ_ONCE(s->bytes_written) >= whole) {
			/* Every copy of an earlier write-out is in, but its
			 * release found the busy bit taken: release it now,
			 * then charge whoever owns the folio after. */
			leg_release(s, key, tag, c);
			continue;
		}
		*chunk = clamp_to_folio(*chunk, npages, sub, in_page);
		c->settles = false;	/* known once charged */
		c->leg = true;
		return 1;
	}
	STAT_INC(page_races);
	return -1;
}

/*
 * Bytes of folio key (at p) are written: its owner, if it has one, into *c, with
 * *chunk clamped to the folio's end (sub: the page of the folio the bytes
 * start in, in_page: where in it).  The owner is freed once the whole
 * folio is out, each of its copies (RAID1's legs): the next dirtier pays
 * again.  jbd2: a journal write, which charges file pages to their owner
 * but not metadata (their journal copy is the commit's).
 */
static __always_inline bool folio_written(struct amp_page_key *key, const struct folio_pos *p,
					  __u64 sub, __u32 in_page, __u32 *chunk, bool jbd2,
					  __u32 copies, struct folio_charge *c)
{
	struct amp_page_owner *o;
	__u32 bytes, npages, whole;
	__u64 tag = p->tag;
	struct amp_folio_slot *s = folio_find(tag, p->home);

	if (s && copies > 1) {
		int copy = leg_copy_written(s, key, tag, sub, in_page, chunk, jbd2, copies, c);

		if (copy >= 0)
			return copy;
		s = NULL;	/* gone or busy: maybe in the overflow hash */
	}
	if (s && slot_lock(s, tag) == SLOT_LOCKED) {
		if (jbd2 && s->kind != AMP_PAGE_FILE) {
			slot_unlock(s, tag);
			return false;
		}
		/* One copy (a RAID1's legs went above). */
		npages = s->npages;
		whole = npages * page_size;
		bytes = clamp_to_folio(*chunk, npages, sub, in_page);
		*chunk = bytes;
		c->entry_id = s->entry_id;
		c->settle_slot = s->settle_slot;
		c->run = s->run;
		c->kind = s->kind;
		s->bytes_written += bytes;
		c->settles = !s->written;
		s->written = 1;
		if (s->bytes_written < whole)
			slot_unlock(s, tag);
		else
			slot_release_written(s, key, tag);
		return true;
	}
	if (!overflow_live)
		return false;
	o = bpf_map_lookup_elem(&page_owners, key);
	if (!o || (jbd2 && o->kind != AMP_PAGE_FILE))
		return false;
	if (copies > 1) {
		/* A leg's copy, as leg_copy_written: added once charged. */
		*chunk = clamp_to_folio(*chunk, o->npages, sub, in_page);
		o->copies = copies;
		charge_to_hashed(c, o);
		c->settles = false;
		c->leg = true;
		c->hashed = true;
		return true;
	}
	if (hashed_owner_written(&page_owners, key, o, sub, in_page, copies, chunk, c))
		__sync_fetch_and_add(&overflow_live, -1);
	return true;
}

/*
 * The copies of an unowned page seen written (RAID1: one per leg), for the
 * state a page's write consumes (a transaction's filing of it, its
 * untraced-metadata bit): only the last copy consumes it, so that every
 * leg's copy is classed alike.  An LRU hash, touched only where a write
 * makes more than one copy.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct amp_page_key);
	__type(value, __u32);
} page_copies_seen SEC(".maps");

/* Is this the last of copies copies of the bytes at byte at of key's
 * folio?  Counted per 512-byte sector, as each leg writes the same blocks
 * (a page of 1 KiB metadata blocks comes as several chunks). */
static __always_inline bool copy_is_last(struct amp_page_key *key, __u64 at, __u32 copies)
{
	__u64 index = key->index;
	__u32 one = 1, *seen;
	bool last = true;

	if (copies <= 1)
		return true;
	key->index = (index << 16) | ((at >> 9) & 0xffff);	/* folios up to 32 MiB */
	seen = bpf_map_lookup_elem(&page_copies_seen, key);
	if (!seen) {
		if (!bpf_map_update_elem(&page_copies_seen, key, &one, BPF_NOEXIST)) {
			last = false;	/* the first */
			goto out;
		}
		seen = bpf_map_lookup_elem(&page_copies_seen, key);	/* a leg came first */
		if (!seen)
			goto out;
	}
	if (__sync_fetch_and_add(seen, 1) + 1 < copies)
		last = false;
	else
		bpf_map_delete_elem(&page_copies_seen, key);
out:
	key->index = index;
	return last;
}

/* folio_written()'s arguments and results, for folio_written_global(). */
struct folio_io {
	struct amp_page_key key;
	struct folio_pos pos;
	struct folio_charge c;
	__u64 sub;
	__u32 in_page;
	__u32 chunk;
	__u16 jbd2;
	__u16 copies;	/* of the folio's bytes, one per RAID1 leg (else 1) */
};

/*
 * folio_written() as a global function: the verifier checks it once, not
 * once for every path of the block walk that reaches it (its window scan
 * and bounded spins, inlined there, took the walk's callback past the
 * million-instruction limit).  Its pointer argument may be NULL to the
 * verifier, and a map key must be on the stack before 6.x: a copy of it.
 * (Little else on the stack: the block walk's three frames share 512 bytes.)
 */
__noinline int folio_written_global(struct folio_io *io)
{
	struct amp_page_key key;

	if (!io)
		return 0;
	key = io->key;
	io->c.leg = false;
	io->c.hashed = false;
	return folio_written(&key, &io->pos, io->sub, io->in_page, &io->chunk, io->jbd2,
			     io->copies, &io->c);
}

/*
 * A RAID1 leg's copy, charged to its owner: its bytes into the slot (or
 * the overflow hash's owner).  1 if they were the last of the last copy:
 * the entry settles, the slot is marked settled and freed (leg_release;
 * a hashed owner is deleted).  The slot stays its owner's
 * until then: every copy must come in first.
 */
__noinline int leg_copy_charged_global(struct folio_io *io, __u32 bytes)
{
	struct amp_page_key key;
	struct amp_folio_slot *s;
	__u32 before, whole;

	if (!io)
		return 0;
	key = io->key;
	if (io->c.hashed) {
		struct amp_page_owner *o = bpf_map_lookup_elem(&page_owners, &key);

		if (!o || o->entry_id != io->c.entry_id)
			return 0;
		whole = o->npages * page_size * io->copies;
		before = __sync_fetch_and_add(&o->bytes_written, bytes);
		if (before >= whole || before + bytes < whole)
			return 0;
		if (!bpf_map_delete_elem(&page_owners, &key))
			__sync_fetch_and_add(&overflow_live, -1);
		return 1;
	}
	s = folio_find(io->pos.tag, io->pos.home);
	if (!s)
		return 0;
	whole = s->npages * page_size * io->copies;
	before = __sync_fetch_and_add(&s->bytes_written, bytes);
	if (before >= whole || before + bytes < whole)
		return 0;
	s->written = 1;
	leg_release(s, &key, io->pos.tag, &io->c);
	return 1;
}

#endif /* AMPTRACE_FOLIOS_BPF_H */
