/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Metadata blocks a transaction files for write-back in place: ext4's
 * checkpoint buffers.  At the end of commit T the jbd2 thread marks the
 * metadata buffers T journaled dirty in the block device's page cache
 * (writeback_dirty_folio, in that thread, between jbd2_start_commit and
 * jbd2_end_commit); the flusher or a sync writes them later.  Those bytes
 * are T's, owned here by its key rather than by an entry.  T's record is
 * usually sent by then: they go to user space as a late record, shared
 * like T's own bytes.
 */
#ifndef AMPTRACE_TXNPAGES_BPF_H
#define AMPTRACE_TXNPAGES_BPF_H

#define AMP_S_IFBLK 0060000

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct amp_page_key);
	__type(value, struct amp_txn_key);
} txn_pages SEC(".maps");

/*
 * The transaction of a folio dirtied again while its filed write-out is in
 * flight (PG_writeback): that write is still the first transaction's, so
 * the second waits here until its completion (txn_page_written).  At most
 * one per folio, as for page_next_owners.  (Without a journal the flusher
 * allocating a file's blocks and the extent conversion after its data I/O
 * dirty the same bitmap and inode-table blocks, often across a sync's
 * write of them.)
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct amp_page_key);
	__type(value, struct amp_txn_key);
} txn_pages_next SEC(".maps");

/* File the folio at key, flags its flags word, under transaction txn. */
static __always_inline void txn_page_file(struct amp_page_key *key, struct amp_txn_key *txn,
					  const void *flags)
{
	if (!flags_writeback(flags)) {
		/* A clean -> dirty change with no write-out in flight: a next
		 * left from an earlier one (its write charged by an owner or
		 * an unwalked bio, never by txn_page_written) is stale. */
		if (bpf_map_lookup_elem(&txn_pages_next, key))
			bpf_map_delete_elem(&txn_pages_next, key);
	} else if (bpf_map_lookup_elem(&txn_pages, key)) {
		bpf_map_update_elem(&txn_pages_next, key, txn, BPF_ANY);	/* full: by window */
		/* The completion (txn_page_written, another CPU) may have found
		 * no next and dropped the entry meanwhile: then this is the
		 * folio's current transaction, not a next one that a later,
		 * unrelated write would promote. */
		if (bpf_map_lookup_elem(&txn_pages, key))
			return;
		bpf_map_delete_elem(&txn_pages_next, key);
	}
	bpf_map_update_elem(&txn_pages, key, txn, BPF_ANY);	/* full: by window */
}

/* A block-device folio dirtied by a kernel thread with no entry: if it is
 * a jbd2 thread committing a traced transaction, the folio is that
 * transaction's (true).  (Without a journal: nojournal.bpf.h.) */
static __always_inline bool txn_page_dirtied(struct amp_page_key *key, const void *flags)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct amp_txn_key *txn;

	txn = bpf_map_lookup_elem(&jbd2_committing, &tid);
	if (!txn)
		return false;
	txn_page_file(key, txn, flags);
	return true;
}

/*
 * A traced entry dirties block-device folio key while a write of it filed
 * under a transaction is in flight (PG_writeback and a txn_pages entry):
 * that write is the transaction's, so the entry's owner o waits in
 * page_next_owners, as it does behind an entry's write (folio_own), and
 * takes the folio at that write's completion (txn_next_owner_take).  Taken
 * at once, the folio's slot charged the transaction's write to the entry,
 * and txn_pages, left naming the transaction, took the entry's own write
 * later: the two swapped.
 */
enum txn_queue { TXN_QUEUE_NO, TXN_QUEUE_YES, TXN_QUEUE_FULL };

static __always_inline enum txn_queue txn_page_queue_owner(struct amp_page_key *key,
							   const struct amp_page_owner *o,
							   const void *flags)
{
	struct amp_page_owner *old;

	if (!flags_writeback(flags) || !bpf_map_lookup_elem(&txn_pages, key))
		return TXN_QUEUE_NO;
	/* One left from a write whose completion was never walked as the
	 * transaction's (an unwalked bio): it will not see this one either. */
	old = bpf_map_lookup_elem(&page_next_owners, key);
	if (old)
		owner_cancel(old->entry_id, old->settle_slot, false);
	if (bpf_map_update_elem(&page_next_owners, key, o, BPF_ANY)) {
		STAT_INC(pages_full);
		return TXN_QUEUE_FULL;
	}
	if (bpf_map_lookup_elem(&txn_pages, key))
		return TXN_QUEUE_YES;
	/* The completion came meanwhile (another CPU).  Whoever deletes the
	 * queued owner has it: the completion, to hand it the folio, or this
	 * dirtying, to own the folio at once. */
	if (bpf_map_delete_elem(&page_next_owners, key))
		return TXN_QUEUE_YES;
	return TXN_QUEUE_NO;
}

/*
 * A write filed under a transaction completed (txn_page_written charged
 * it): an entry queued behind it (txn_page_queue_owner) owns the folio
 * now.  Global, as folio_written_global and for the same reason: the
 * window scan, inlined into the block walk, multiplies its states.
 */
__noinline int txn_next_owner_take(struct folio_io *io)
{
	struct amp_page_owner o, *p;
	struct amp_page_key key;

	if (!io)
		return 0;
	key = io->key;
	p = bpf_map_lookup_elem(&page_next_owners, &key);
	if (!p)
		return 0;
	o = *p;
	if (bpf_map_delete_elem(&page_next_owners, &key))
		return 0;	/* its dirtying took it back: see there */
	if (!folio_insert(&key, &io->pos, &o))
		owner_cancel(o.entry_id, o.settle_slot, false);
	return 1;
}

/* Metadata bytes of transaction (dev, tid) written in place on disk: in
 * its record if that is still to come, else in a late one.  1 if charged
 * (class metadata all the same); 0: by window.  No bytes (a failed
 * write's, stored nowhere): nothing to charge, the filing ended all the
 * same.  Inline: the walk's frames
 * and a call more would pass the 512 bytes of stack of the chain. */
static __always_inline int txn_late_bytes(__u32 disk, __u32 dev, __u32 tid, __u32 bytes)
{
	struct amp_txn_late rec = { .type = AMP_REC_TXN_LATE, .disk = disk, .bytes = bytes };
	struct amp_txn_key txn = { .dev = dev, .tid = tid };
	struct amp_dev_stats *ds = bpf_map_lookup_elem(&devs, &disk);
	struct amp_txn_stats *ts;

	if (!bytes)
		return 1;
	if (!ds)
		return 0;
	ts = bpf_map_lookup_elem(&txns, &txn);
	if (ts) {
		ts->disk = disk;
		__sync_fetch_and_add(&ts->meta_bytes, bytes);
		__sync_fetch_and_add(&ds->meta_txn, bytes);
		return 1;
	}
	rec.dev = dev;
	rec.tid = tid;
	if (bpf_ringbuf_output(&events, &rec, sizeof(rec), ringbuf_wakeup_flag(sizeof(rec)))) {
		STAT_INC(ringbuf_drops);
		return 0;
	}
	__sync_fetch_and_add(&ds->meta_txn, bytes);
	return 1;
}

/* Unowned metadata bytes of a page cache folio written: a transaction's,
 * if it filed the folio; at: where in the folio (bytes).  copies: of this
 * write (RAID1's legs), each the transaction's; the last one ends the
 * filing.  0: not filed; 1: the transaction's; 2: its, and the write's
 * last copy (the filing ended). */
static __always_inline int txn_page_written(__u32 disk, struct amp_page_key *key, __u64 at,
					    __u32 bytes, __u32 copies)
{
	struct amp_txn_key *p = bpf_map_lookup_elem(&txn_pages, key), txn;

	if (p && !copy_is_last(key, at, copies)) {
		txn_late_bytes(disk, p->dev, p->tid, bytes);	/* a lost record: counted */
		return 1;
	}
	if (!p) {
		/* A next with no current write is an orphan: drop it rather
		 * than let a later write promote it. */
		if (bpf_map_lookup_elem(&txn_pages_next, key))
			bpf_map_delete_elem(&txn_pages_next, key);
		return false;
	}
	txn = *p;
	/* The next dirtying's transaction, if it came during this write. */
	p = bpf_map_lookup_elem(&txn_pages_next, key);
	if (p) {
		bpf_map_update_elem(&txn_pages, key, p, BPF_ANY);
		bpf_map_delete_elem(&txn_pages_next, key);
	} else {
		bpf_map_delete_elem(&txn_pages, key);
		/* A next filed between the lookup and the delete (see
		 * txn_page_file: it checks again after filing it). */
		p = bpf_map_lookup_elem(&txn_pages_next, key);
		if (p) {
			bpf_map_update_elem(&txn_pages, key, p, BPF_ANY);
			bpf_map_delete_elem(&txn_pages_next, key);
		}
	}
	return txn_late_bytes(disk, txn.dev, txn.tid, bytes) ? 2 : 0;
}

#endif /* AMPTRACE_TXNPAGES_BPF_H */
