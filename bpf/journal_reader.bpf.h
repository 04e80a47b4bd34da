/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A relay that reads the journal: rsyslog's imjournal (RHEL's and
 * Fedora's default input) reads journald's files through libsystemd and
 * writes each entry as a line; it receives nothing, so relay_receive never
 * sees its lines.  Its sender is the one journald wrote into the entry,
 * its trusted _PID and _UID fields (_TRANSPORT=kernel or audit: the
 * kernel's, as journald's receive of it is).
 *
 * The loader puts uprobes on libsystemd's reading functions (under
 * --preset write, as the receives):
 *   sd_journal_next() returned an entry: a traced thread starts one;
 *   sd_journal_enumerate_data() / _enumerate_available_data() called: the
 *     field the previous call returned is looked at (the first 5 bytes
 *     tell its name; only _PID=, _UID= and _TRANSPORT= are read further,
 *     no payload byte is kept), and this call's out-pointers kept for the
 *     next;
 *   sd_journal_get_realtime_usec() called (imjournal: after the fields,
 *     before it queues the line), or the next sd_journal_next() returned:
 *     the entry is read; its sender goes into the relay's ring
 *     (relay_push), and its writes link to it as to a receive.
 * Calls only, no return probe on the enumeration: a return probe costs a
 * second trap per field (measured: rsyslog's CPU per entry +95-105 us with
 * them, +60-67 us without; scripts/bench/README.md).
 */
#ifndef AMPTRACE_JOURNAL_READER_BPF_H
#define AMPTRACE_JOURNAL_READER_BPF_H

/* Looked at per field: "_TRANSPORT=kernel" is the longest. */
#define AMP_JFIELD_LEN	24

/* An entry a traced thread is reading. */
struct journal_read {
	__u64 data_pp;		/* the last enumeration's out-pointer (const void **) */
	__u64 len_p;		/* and its size_t * */
	struct sender_id who;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);	/* tid */
	__type(value, struct journal_read);
} journal_reads SEC(".maps");

/* Uprobes: BPF_KPROBE's registers are a uprobe's too (libbpf 1.1, Debian
 * 12's, has no BPF_UPROBE). */

/* The decimal number in s[from, n) (up to 10 digits). */
static __always_inline __u32 field_number(const char *s, int from, __u64 n)
{
	__u32 v = 0;

	for (int i = from; i < from + 10 && i < AMP_JFIELD_LEN; i++) {
		if (i >= n || s[i] < '0' || s[i] > '9')
			break;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* The field the last enumeration call returned: a sender's, or nothing. */
static __always_inline void journal_read_field(struct journal_read *r)
{
	char f[AMP_JFIELD_LEN] = {};
	__u64 data = 0, n = 0;

	/* Every field's name first (a field is at least "X=", 5 bytes may
	 * reach past a short one: harmless): only three are read on. */
	if (!r->data_pp ||
	    bpf_probe_read_user(&data, sizeof(data), (void *)r->data_pp) || !data ||
	    bpf_probe_read_user(f, 5, (void *)data))
		return;
	if (f[0] != '_' || !((f[1] == 'P' && f[2] == 'I' && f[3] == 'D' && f[4] == '=') ||
			     (f[1] == 'U' && f[2] == 'I' && f[3] == 'D' && f[4] == '=') ||
			     (f[1] == 'T' && f[2] == 'R' && f[3] == 'A' && f[4] == 'N')))
		return;
	if (bpf_probe_read_user(&n, sizeof(n), (void *)r->len_p) || n < 5 ||
	    bpf_probe_read_user(f, n < AMP_JFIELD_LEN ? n : AMP_JFIELD_LEN, (void *)data))
		return;
	if (f[1] == 'P') {
		if (r->who.how != AMP_SENDER_KERNEL) {
			r->who.pid = field_number(f, 5, n);
			r->who.how = r->who.pid ? AMP_SENDER_CREDS : AMP_SENDER_NONE;
		}
	} else if (f[1] == 'U') {
		r->who.uid = field_number(f, 5, n);
	} else if (n >= 16 && f[10] == '=' &&
		   ((f[11] == 'k' && f[12] == 'e' && f[13] == 'r') ||	/* kernel */
		    (f[11] == 'a' && f[12] == 'u' && f[13] == 'd'))) {	/* audit */
		/* An audit record's _PID is the audited process, not a
		 * sender: the kernel's, as journald's receive of it. */
		r->who.how = AMP_SENDER_KERNEL;
		r->who.pid = 0;
	}
}

/* The thread's entry is read: its sender into the relay's ring.  No
 * _PID and not the kernel's (an imported entry): pid 0, named by
 * nothing; it still counts as one of the relay's lines. */
static __always_inline void journal_read_done(struct journal_read *r, __u32 tid)
{
	journal_read_field(r);		/* a reader that stopped early: its last */
	relay_push(&r->who);
	bpf_map_delete_elem(&journal_reads, &tid);
}

SEC("uretprobe")
int BPF_KRETPROBE(on_journal_next, int ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct journal_read fresh = {}, *r;

	if (!relay_links)
		return 0;
	r = bpf_map_lookup_elem(&journal_reads, &tid);
	if (r)		/* the last entry, if nothing said it was done */
		journal_read_done(r, tid);
	if (ret > 0 && task_is_target(pid_tgid))
		bpf_map_update_elem(&journal_reads, &tid, &fresh, BPF_ANY);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(on_journal_enumerate, void *j, const void **data, size_t *len)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct journal_read *r = bpf_map_lookup_elem(&journal_reads, &tid);

	if (!r)
		return 0;
	journal_read_field(r);		/* what the previous call returned */
	r->data_pp = (__u64)data;
	r->len_p = (__u64)len;
	return 0;
}

/* imjournal asks an entry's time once its fields are read, before it
 * queues the line. */
SEC("uprobe")
int BPF_KPROBE(on_journal_timestamp)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct journal_read *r = bpf_map_lookup_elem(&journal_reads, &tid);

	if (r && r->data_pp)
		journal_read_done(r, tid);
	return 0;
}

#endif /* AMPTRACE_JOURNAL_READER_BPF_H */
