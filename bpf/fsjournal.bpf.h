/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stage 4: filesystem journal (ext4's jbd2).  A task opens handles in the
 * running transaction (jbd2_handle_start, in its own context): the entry
 * it has open is one of the causes of that transaction.  The jbd2 thread
 * later commits it (jbd2_start_commit .. jbd2_end_commit); the bios it
 * submits meanwhile are that commit's journal blocks.  At the end of the
 * commit one record goes to user space, which splits the bytes over the
 * entries by their share of handles.
 */
#ifndef AMPTRACE_FSJOURNAL_BPF_H
#define AMPTRACE_FSJOURNAL_BPF_H

static __always_inline struct amp_txn_stats *txn_stats(struct amp_txn_key *key, __u32 fs)
{
	struct amp_txn_stats *ts = bpf_map_lookup_elem(&txns, key);
	struct amp_txn_stats zero = { .fs = fs };

	if (ts)
		return ts;
	if (bpf_map_update_elem(&txns, key, &zero, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&txns, key)) {
		STAT_INC(txns_full);
		return NULL;
	}
	return bpf_map_lookup_elem(&txns, key);
}

/* Device bytes that belong to a transaction: its journal blocks, or
 * metadata it writes in place (meta).  The path every filesystem's
 * transaction-owned bytes take, at write-out; disk: the key of ds. */
static __always_inline void charge_txn_bytes(struct amp_dev_stats *ds, __u32 disk,
					     struct amp_txn_key *key, __u32 fs, bool meta,
					     __u32 bytes)
{
	struct amp_txn_stats *ts = txn_stats(key, fs);

	if (!ts)
		return;
	ts->disk = disk;
	if (meta) {
		__sync_fetch_and_add(&ts->meta_bytes, bytes);
		__sync_fetch_and_add(&ds->meta_txn, bytes);
	} else {
		__sync_fetch_and_add(&ts->journal_bytes, bytes);
		__sync_fetch_and_add(&ds->journal_txn, bytes);
	}
}

static __always_inline void entry_add_txn(struct amp_entry *e, struct amp_txn_key *key)
{
	__u32 n = e->nr_txns;

	for (int i = 0; i < AMP_ENTRY_TXNS; i++) {
		if (i >= n)
			break;
		if (e->txns[i].tid == key->tid && e->txns[i].dev == key->dev) {
			e->txns[i].handles++;
			return;
		}
	}
	if (n < AMP_ENTRY_TXNS) {
		e->txns[n].dev = key->dev;
		e->txns[n].tid = key->tid;
		e->txns[n].handles = 1;
		e->nr_txns = n + 1;
	} else {
		e->txns_dropped++;
		STAT_INC(entry_txns_dropped);
	}
}

SEC("tp_btf/jbd2_handle_start")
int BPF_PROG(on_jbd2_handle_start, dev_t dev, tid_t tid, unsigned int type,
	     unsigned int line_no, int requested_blocks)
{
	struct amp_txn_key key = { .dev = dev, .tid = tid };
	struct amp_txn_stats *ts;
	struct amp_entry *e;

	if (!disk_is_target(dev))
		return 0;
	ts = txn_stats(&key, AMP_FS_JBD2);
	if (!ts)
		return 0;
	e = thread_entry(thread_state(false));
	if (!e) {
		/* A kernel thread's handle (the flusher allocating blocks for
		 * traced data too) is shared by window; an untraced process's
		 * is its own business, never charged to an entry. */
		if (current_is_kthread())
			__sync_fetch_and_add(&ts->handles_untraced, 1);
		else
			__sync_fetch_and_add(&ts->handles_user, 1);
		return 0;
	}
	__sync_fetch_and_add(&ts->handles_traced, 1);
	entry_add_txn(e, &key);
	return 0;
}

/* The kernel may mark these arguments as possibly NULL (Debian 13's 6.12
 * does, for the jbd2 commit events): then the verifier takes no field
 * address of them (BPF_CORE_READ) before a NULL check. */
static __always_inline bool txn_key_of(journal_t *journal, transaction_t *t,
				       struct amp_txn_key *key)
{
	if (!journal || !t)
		return false;
	key->dev = BPF_CORE_READ(journal, j_fs_dev, bd_dev);
	key->tid = BPF_CORE_READ(t, t_tid);
	return true;
}

SEC("tp_btf/jbd2_start_commit")
int BPF_PROG(on_jbd2_start_commit, journal_t *journal, transaction_t *t)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct amp_txn_key key;

	if (!txn_key_of(journal, t, &key) || !disk_is_target(key.dev))
		return 0;
	if (bpf_map_update_elem(&jbd2_committing, &tid, &key, BPF_ANY))
		STAT_INC(commits_full);
	return 0;
}

SEC("tp_btf/jbd2_end_commit")
int BPF_PROG(on_jbd2_end_commit, journal_t *journal, transaction_t *t)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct amp_txn_rec rec = { .type = AMP_REC_TXN, .committed = 1 };
	struct amp_txn_key key;
	struct amp_txn_stats *ts;

	bpf_map_delete_elem(&jbd2_committing, &tid);
	if (!txn_key_of(journal, t, &key))
		return 0;
	ts = bpf_map_lookup_elem(&txns, &key);
	if (!ts)
		return 0;
	rec.dev = key.dev;
	rec.tid = key.tid;
	rec.st = *ts;
	bpf_map_delete_elem(&txns, &key);
	if (bpf_ringbuf_output(&events, &rec, sizeof(rec), ringbuf_wakeup_flag(sizeof(rec))))
		STAT_INC(ringbuf_drops);
	return 0;
}

#endif /* AMPTRACE_FSJOURNAL_BPF_H */
