/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Entry lifecycle.  An entry is the span of one traced thread from one
 * logging syscall to its next.  It holds one reference for being open and
 * one per dirtied folio not yet seen at the block layer; whoever drops the
 * last reference (the thread moving on, or the request completion that
 * writes its last folio) copies it to the ring buffer and deletes it.
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
	__u64 quarter = bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 4;

	return avail <= quarter && avail + len > quarter ?
	       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

static __always_inline void entry_emit(struct amp_entry *e)
{
	__u64 id = e->id, len;
	__u32 runs = e->nr_runs;

	/* Only the scatter slots in use: most entries dirty a few folios. */
	if (runs > AMP_SCATTER_MAX)
		runs = AMP_SCATTER_MAX;
	len = offsetof(struct amp_entry, runs) + runs * sizeof(struct amp_page_run);

	e->type = AMP_REC_ENTRY;
	if (bpf_ringbuf_output(&events, e, len, ringbuf_wakeup_flag(len)))
		STAT_INC(ringbuf_drops);
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

/* The thread's open entry, or NULL. */
static __always_inline struct amp_entry *thread_entry(__u32 tid)
{
	__u64 *id = bpf_map_lookup_elem(&threads, &tid);

	return id ? entry_lookup(*id) : NULL;
}

static __always_inline void entry_close(__u32 tid)
{
	__u64 *idp = bpf_map_lookup_elem(&threads, &tid);
	struct amp_entry *e;
	__u64 id;

	if (!idp)
		return;
	id = *idp;
	bpf_map_delete_elem(&threads, &tid);
	e = entry_lookup(id);
	if (!e)
		return;
	e->end_ns = bpf_ktime_get_boot_ns();
	e->flags |= AMP_ENTRY_CLOSED;
	entry_put(e);
}

/* Close the thread's previous entry and open a new one for syscall nr. */
static __always_inline struct amp_entry *
entry_open(__u64 pid_tgid, const struct pending_syscall *p)
{
	__u32 tid = (__u32)pid_tgid;
	struct amp_entry *e;
	__u64 id;

	entry_close(tid);

	id = __sync_fetch_and_add(&next_entry_id, 1);
	if (bpf_map_update_elem(&entries, &id, &zero_entry, BPF_NOEXIST)) {
		STAT_INC(entries_full);
		return NULL;
	}
	e = entry_lookup(id);
	if (!e)
		return NULL;
	if (bpf_map_update_elem(&threads, &tid, &id, BPF_ANY)) {
		STAT_INC(threads_full);
		bpf_map_delete_elem(&entries, &id);
		return NULL;
	}
	e->id = id;
	e->start_ns = p->start_ns;
	e->pid = pid_tgid >> 32;
	e->tid = tid;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	e->syscall_nr = p->nr;
	e->fd_dev = p->fd_dev;
	e->fd_ino = p->fd_ino;
	e->outstanding = 1;
	STAT_INC(entries_opened);
	return e;
}

#endif /* AMPTRACE_ENTRY_BPF_H */
