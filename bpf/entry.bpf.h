/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Entry lifecycle.  An entry is the span of one traced thread from one
 * logging syscall to its next.  It opens in the thread's state and stays
 * there unless it dirties a folio: then it moves to the entries map, where
 * the block layer can find it by id.  There it holds one reference for
 * being open and one per dirtied folio not yet seen at the block layer;
 * whoever drops the last reference (the thread moving on, or the request
 * completion that writes its last folio) copies it to the ring buffer and
 * deletes it.
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

/* Report an entry of the entries map and forget it. */
static __always_inline void entry_emit(struct amp_entry *e)
{
	__u64 id = e->id;

	entry_report(e);
	bpf_map_delete_elem(&entries, &id);
}

/* Drop one reference; the last one reports the entry. */
static __always_inline void entry_put(struct amp_entry *e)
{
	if (__sync_fetch_and_add(&e->outstanding, -1) == 1)
		entry_emit(e);
}

static __always_inline struct amp_entry *entry_lookup(__u64 id)
{
	return bpf_map_lookup_elem(&entries, &id);
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

/* The thread's open entry, wherever it lives, or NULL. */
static __always_inline struct amp_entry *thread_entry(struct amp_thread *t)
{
	if (!t || !t->entry_id)
		return NULL;
	return t->entry_mapped ? entry_lookup(t->entry_id) : &t->open;
}

/* Move the thread's open entry to the entries map (it dirtied a folio, or
 * tracing ends); the map's copy, or NULL if the map is full (counted). */
static __always_inline struct amp_entry *entry_map(struct amp_thread *t)
{
	__u64 id = t->entry_id;

	if (bpf_map_update_elem(&entries, &id, &t->open, BPF_NOEXIST)) {
		STAT_INC(entries_full);
		return NULL;
	}
	t->entry_mapped = true;
	return entry_lookup(id);
}

static __always_inline void entry_close(struct amp_thread *t, __u64 now)
{
	struct amp_entry *e;
	__u64 id = t->entry_id;

	if (!id)
		return;
	t->entry_id = 0;
	if (!t->entry_mapped) {
		/* Nothing dirtied: nobody else holds it, it is settled now. */
		t->open.end_ns = now;
		t->open.flags |= AMP_ENTRY_CLOSED;
		entry_report(&t->open);
		return;
	}
	e = entry_lookup(id);
	if (!e)
		return;
	e->end_ns = now;
	e->flags |= AMP_ENTRY_CLOSED;
	entry_put(e);
}

/* Close the thread's previous entry and open a new one for syscall p, at
 * now: a write's enter, a receive's return. */
static __always_inline struct amp_entry *
entry_open(struct amp_thread *t, __u64 pid_tgid, const struct pending_syscall *p, __u64 now)
{
	struct amp_entry *e = &t->open;

	entry_close(t, now);

	/* The scatter slots are written as they fill: clear the rest only. */
	__builtin_memset(e, 0, offsetof(struct amp_entry, runs));
	e->id = __sync_fetch_and_add(&next_entry_id, 1);
	e->start_ns = now;
	e->pid = pid_tgid >> 32;
	e->tid = (__u32)pid_tgid;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	e->syscall_nr = p->nr;
	e->fd_dev = p->fd_dev;
	e->fd_ino = p->fd_ino;
	e->outstanding = 1;
	t->entry_id = e->id;
	t->entry_mapped = false;
	STAT_INC(entries_opened);
	return e;
}

/* At the end of tracing, after detaching: every thread's open entry into
 * the entries map, where the loader drains what is left. */
SEC("iter/task")
int drain_threads(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct amp_thread *t;

	if (!task)
		return 0;
	t = bpf_task_storage_get(&threads, task, 0, 0);
	if (t && t->entry_id && !t->entry_mapped)
		entry_map(t);
	return 0;
}

#endif /* AMPTRACE_ENTRY_BPF_H */
