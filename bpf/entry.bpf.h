/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Entry lifecycle.  An entry is the span of one traced thread from one
 * logging syscall to its next.  It lives in the thread's state, and only
 * the thread touches it; the thread reports it when it moves on.  An entry
 * that dirties a folio also gets a small struct amp_settle in a slot of
 * `unsettled`, which the block layer finds by slot and id and charges: it
 * counts the dirtied folios not yet seen at the block layer, plus a bias
 * while the entry is open, and whoever takes it to zero (the thread moving
 * on, or the request completion that writes its last folio) sends it and
 * frees the slot.
 */
#ifndef AMPTRACE_ENTRY_BPF_H
#define AMPTRACE_ENTRY_BPF_H

/*
 * Wake the reader once, when this record takes the buffer past a quarter
 * full: it drains every 100 ms anyway, and a wake-up per record (an
 * interrupt, a VM exit on a guest) costs more than the record.
 */
static __always_inline __u64 ringbuf_wakeup_flag(__u64 len)
{
	__u64 avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	__u64 quarter = ringbuf_quarter;

	return avail <= quarter && avail + len > quarter ?
	       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

static __always_inline void entry_report(struct amp_entry *e)
{
	__u64 len;
	__u32 runs = e->nr_runs;

	/* Only the scatter slots in use: most entries dirty a few folios. */
	if (runs > AMP_SCATTER_MAX)
		runs = AMP_SCATTER_MAX;
	len = offsetof(struct amp_entry, runs) + runs * sizeof(struct amp_page_run);

	e->type = AMP_REC_ENTRY;
	if (bpf_ringbuf_output(&events, e, len, ringbuf_wakeup_flag(len)))
		STAT_INC(ringbuf_drops);
}

/* Entry id's settlement in slot, or NULL if it was settled or swept. */
static __always_inline struct amp_settle *settle_lookup(__u32 slot, __u64 id)
{
	struct amp_settle *s = bpf_map_lookup_elem(&unsettled, &slot);

	return s && s->id == id ? s : NULL;
}

/* The settlement's count while its entry is open: no number of folios
 * reaches it, so write-outs cannot bring it to zero before the close. */
#define AMP_SETTLE_OPEN_BIAS (1 << 30)

/* Drop refs references; the last one sends the entry's device-side totals. */
static __always_inline void settle_put_n(struct amp_settle *s, __s32 refs)
{
	__u64 id = s->id;

	if (__sync_fetch_and_add(&s->outstanding, -refs) != refs)
		return;
	s->type = AMP_REC_SETTLED;
	if (bpf_ringbuf_output(&events, s, sizeof(*s), ringbuf_wakeup_flag(sizeof(*s))))
		STAT_INC(ringbuf_drops);
	/* Free the slot, unless the loader's sweep took it meanwhile. */
	__sync_val_compare_and_swap(&s->id, id, 0);
}

/* One folio written or cancelled. */
static __always_inline void settle_put(struct amp_settle *s)
{
	settle_put_n(s, 1);
}

/* The current thread's state; created (create=true) on its first logging
 * syscall.  NULL: untraced so far, or no memory (counted). */
static __always_inline struct amp_thread *thread_state(bool create)
{
	struct amp_thread *t;

	t = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), 0,
				 create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	if (!t && create)
		STAT_INC(tasks_full);
	return t;
}

/* The thread's open entry, or NULL. */
static __always_inline struct amp_entry *thread_entry(struct amp_thread *t)
{
	return t && t->entry_id ? &t->open : NULL;
}

/*
 * The open entry's settlement, made at its first dirtied folio; false if
 * no slot is free (counted: that folio goes uncharged).  Its count starts
 * at the open bias, write-outs take one each, and the close adds the
 * entry's folio count back less the bias: the dirtying path then needs no
 * lookup and no atomic per folio, only a slot for the first one.  Slots are
 * taken in turn, so the oldest settle first and the next one is usually
 * free; several busy ones in a row mean the array is full.
 */
#define AMP_SETTLE_PROBES 8

static __always_inline bool entry_settle(struct amp_thread *t)
{
	__u64 id = t->entry_id;

	if (t->entry_unsettled)
		return true;
	for (int i = 0; i < AMP_SETTLE_PROBES; i++) {
		__u32 slot = __sync_fetch_and_add(&next_settle_slot, 1) & settle_slot_mask;
		struct amp_settle *s = bpf_map_lookup_elem(&unsettled, &slot);

		if (!s)
			break;
		if (__sync_val_compare_and_swap(&s->id, 0, id) != 0)
			continue;
		/* Ours: nothing charges it before its first folio is owned. */
		s->outstanding = AMP_SETTLE_OPEN_BIAS;
		s->closed_ns = 0;
		s->dev_bytes[0] = 0;
		s->dev_bytes[1] = 0;
		s->failed_bytes = 0;
		s->runs_written = 0;
		s->ios = 0;
		s->folios_written = 0;
		t->settle_slot = slot;
		t->entry_unsettled = true;
		return true;
	}
	STAT_INC(entries_full);
	return false;
}

/* The thread moves on (or exits, or tracing ends): report its entry, and
 * drop the settlement's open reference. */
static __always_inline void entry_close(struct amp_thread *t, __u64 now, __u32 flags)
{
	struct amp_entry *e = &t->open;
	struct amp_settle *s = NULL;
	__u64 id = t->entry_id;

	if (!id)
		return;
	t->entry_id = 0;
	e->end_ns = now;
	e->flags |= AMP_ENTRY_CLOSED | flags;
	if (t->entry_unsettled && (s = settle_lookup(t->settle_slot, id))) {
		s->closed_ns = now;
		e->flags |= AMP_ENTRY_UNSETTLED;
	}
	/* The entry before its settlement: user space holds it until then.
	 * From here the count is the folios not yet written. */
	entry_report(e);
	if (s)
		settle_put_n(s, AMP_SETTLE_OPEN_BIAS - (__s32)e->folios_dirtied);
}

/* Handles the thread opened with no entry (fsjournal.bpf.h's
 * txn_add_early) that no entry of its will take (it exits, tracing ends,
 * or it handles in another transaction): by window after all. */
static __always_inline void early_txn_drop(struct amp_thread *t)
{
	struct amp_entry_txn *k = &t->early_txn;
	struct amp_txn_key key = { .dev = k->dev, .tid = k->tid };
	struct amp_txn_stats *ts;

	if (!k->handles)
		return;
	ts = bpf_map_lookup_elem(&txns, &key);
	if (ts) {
		__sync_fetch_and_sub(&ts->handles_traced, k->handles);
		__sync_fetch_and_add(&ts->handles_untraced, k->handles);
	}
	k->handles = 0;
}

/* Close the thread's previous entry and open a new one for syscall p, at
 * now: a write's enter, a receive's return. */
static __always_inline struct amp_entry *
entry_open(struct amp_thread *t, __u64 pid_tgid, const struct pending_syscall *p, __u64 now)
{
	struct amp_entry *e = &t->open;

	entry_close(t, now, 0);

	/* The scatter slots are written as they fill: clear the rest only. */
	__builtin_memset(e, 0, offsetof(struct amp_entry, runs));
	e->id = __sync_fetch_and_add(&next_entry_id, 1);
	e->start_ns = now;
	e->pid = pid_tgid >> 32;
	e->tid = (__u32)pid_tgid;
	{
		const char *comm = bpf_get_current_task_btf()->comm;

#pragma unroll
		for (int i = 0; i < AMP_COMM_LEN; i++)
			e->comm[i] = comm[i];
	}
	/* Handles the thread opened since its last entry: this one's. */
	if (t->early_txn.handles) {
		e->txns[0] = t->early_txn;
		e->nr_txns = 1;
		t->early_txn.handles = 0;
	}
	e->syscall_nr = p->nr;
	e->fd_dev = p->fd_dev;
	e->fd_ino = p->fd_ino;
	if (startup_own)
		e->flags = AMP_ENTRY_OWN;
	t->entry_id = e->id;
	t->entry_unsettled = false;
	/* No STAT_INC(entries_opened): the ids count them (user space reads
	 * next_entry_id), and the per-CPU stats page is one more page the
	 * syscall entry would touch, a page walk after every syscall here. */
	return e;
}

/*
 * The current thread's entry, *tp its state.  A traced thread with no
 * entry gets one of its own, with no syscall ("-"): before its first
 * logging syscall (journald creating its file), or a thread of a traced
 * process that makes none.  What it dirties, or copies on btrfs, is then
 * its process's, never an untraced process's.  NULL for untraced threads.
 */
static __always_inline struct amp_entry *current_entry_or_own(struct amp_thread **tp,
								__u64 pid_tgid)
{
	struct amp_thread *t = thread_state(false);
	struct amp_entry *e = thread_entry(t);

	if (!e && task_is_target(pid_tgid) && (t || (t = thread_state(true)))) {
		struct pending_syscall start = { .nr = -1 };

		e = entry_open(t, pid_tgid, &start, bpf_ktime_get_boot_ns());
	}
	*tp = t;
	return e;
}

/* At the end of tracing, after detaching: every thread's open entry is
 * reported as it stands. */
SEC("iter/task")
int drain_threads(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct amp_thread *t;

	if (!task)
		return 0;
	t = bpf_task_storage_get(&threads, task, 0, 0);
	if (t) {
		entry_close(t, bpf_ktime_get_boot_ns(), AMP_ENTRY_DRAINED);
		early_txn_drop(t);
		file_delta_flush(t, task->tgid);
	}
	return 0;
}

/*
 * Run by the loader before attaching (BPF_PROG_TEST_RUN), never attached:
 * a byte written into each page of the events ring, through records it
 * reserves and discards, so that the traced syscalls do not pay each
 * page's first touch (user/trace/prefault.c).  Returns how many records
 * it reserved: fewer than AMP_PREFAULT_RECS once the ring is full, which
 * is when the loader stops calling it and consumes the discarded records.
 */
SEC("raw_tp")
int prefault_events(void *ctx)
{
	for (int i = 0; i < AMP_PREFAULT_RECS; i++) {
		volatile char *p = bpf_ringbuf_reserve(&events, AMP_PREFAULT_REC_SIZE, 0);

		if (!p)
			return i;
		p[0] = 0;
		p[AMP_PREFAULT_REC_SIZE - 1] = 0;
		bpf_ringbuf_discard((void *)p, BPF_RB_NO_WAKEUP);
	}
	return AMP_PREFAULT_RECS;
}

#endif /* AMPTRACE_ENTRY_BPF_H */
