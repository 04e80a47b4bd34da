/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A relay: a traced writer that also receives the records it writes.
 * rsyslog's imuxsock thread receives a datagram (recvmsg, with the
 * sender's SCM_CREDENTIALS), its main queue's worker writes the line to a
 * file later, from another thread.  Under --preset write each write is an
 * entry; this names the sender of the lines it holds.
 *
 * Linked by order, not by content: no payload byte is read.  The
 * process's receives go into a ring, in the order they returned; a write
 * to a file takes the receives since the last write to that same file
 * (rsyslog writes each file at the end of a batch, and one message may go
 * to several files).  If they all came from one sender, that is the
 * write's sender; if from several, the entry says so (AMP_SENDER_SEVERAL)
 * and user space gives it a bucket of its own.  A receive with no
 * credentials is no relayed line (a daemon's TCP request).  A relay that
 * reads the journal instead (rsyslog's imjournal) pushes each entry it
 * reads (bpf/journal_reader.bpf.h).  A write with no record before it at
 * all is the relay's own (rsyslog's notices, or an input that is neither:
 * imklog, imfile).  What this cannot tell: a message received for another file
 * only, or dropped by a filter, counts among the next write's receives;
 * in a burst, a message received while the previous batch was written
 * goes to that write as well as its own (see relay_link_write).
 */
#ifndef AMPTRACE_RELAY_BPF_H
#define AMPTRACE_RELAY_BPF_H

#define AMP_RELAY_RING	256	/* receives looked at per write; a power of 2 */

struct relay_ring {
	__u64 head;		/* receives pushed so far */
	__u64 last_write;	/* head at the process's last write, any file:
				 * where a file written for the first time starts */
	struct sender_id slot[AMP_RELAY_RING];
};

struct relay_file_key {
	__u32 tgid;
	__u32 dev;
	__u64 ino;
};

/* A relay's receives, by tgid: made at its first receive. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct relay_ring);
} relay_rings SEC(".maps");

/* A relay's last write to a file: the ring's head then, and the sender
 * of the last receive it took. */
struct relay_cursor {
	__u64 head;
	struct sender_id last;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct relay_file_key);
	__type(value, struct relay_cursor);
} relay_cursors SEC(".maps");

/* An empty ring, the value a new one is made from (too big for the stack). */
static struct relay_ring relay_empty_ring;

/* A record the current (traced) process relays came from who: into its
 * ring, made at the first. */
static __always_inline void relay_push(const struct sender_id *who)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct relay_ring *ring;
	__u64 at;

	ring = bpf_map_lookup_elem(&relay_rings, &tgid);
	if (!ring) {
		if (!bpf_map_update_elem(&relay_rings, &tgid, &relay_empty_ring, BPF_NOEXIST))
			__sync_fetch_and_add(&relays_seen, 1);
		ring = bpf_map_lookup_elem(&relay_rings, &tgid);
		if (!ring)
			return;		/* 256 relays traced: the rest are their own senders */
	}
	/* Receiving threads may race: each takes a slot of its own. */
	at = __sync_fetch_and_add(&ring->head, 1);
	ring->slot[at & (AMP_RELAY_RING - 1)] = *who;
}

/* A receive of a traced relay returned: who sent it, into its ring. */
static __always_inline void relay_receive(__u8 kind)
{
	struct sender_id who = {};

	/* Only a receive that names its sender is a relayed line: a writer's
	 * TCP or netlink receives (a daemon that logs to a file) leave its
	 * writes its own. */
	if (kind == AMP_SYS_RECVMSG)
		sender_from_msghdr(&who, exit_syscall_arg(1));
	if (who.how == AMP_SENDER_CREDS)
		relay_push(&who);
}

/*
 * A relay's write entry e to file fk opened: its sender is the sender of
 * the receives since the relay last wrote that file.  None since: rsyslog
 * formed its batch before a receive that its last write to this file took
 * all the same, and this write holds that receive's line; so it is that
 * receive's sender's (a notice of rsyslog's own, rare, would be too).
 * Called once a relay was seen (relays_seen); a writer that never
 * received then costs one failed lookup.
 */
static __always_inline void relay_link_write(struct amp_entry *e, __u32 tgid,
					     const struct amp_file_key *fk)
{
	struct relay_file_key key = { .tgid = tgid, .dev = fk->dev, .ino = fk->ino };
	struct relay_ring *ring = bpf_map_lookup_elem(&relay_rings, &tgid);
	/* Zeroed whole: 5.15's verifier refuses a helper's read of stack
	 * bytes never written, the struct's padding. */
	struct relay_cursor *cursor, now = {};
	__u64 head, from, n;

	if (!ring)
		return;
	head = AMP_READ_ONCE(ring->head);
	cursor = bpf_map_lookup_elem(&relay_cursors, &key);
	from = cursor ? cursor->head : ring->last_write;
	ring->last_write = head;
	if (from >= head) {
		if (cursor)	/* sender_links 0: taken by the last write */
			entry_sender(e, &cursor->last);
		return;
	}
	n = head - from;
	now.head = head;
	now.last = ring->slot[(head - 1) & (AMP_RELAY_RING - 1)];
	if (cursor)
		*cursor = now;
	else
		bpf_map_update_elem(&relay_cursors, &key, &now, BPF_ANY);
	entry_sender(e, &now.last);
	e->sender_links = n > 255 ? 255 : n;
	/* Every slot holds a pid, or 0 (the kernel's, or a journal entry
	 * with no _PID): the pids tell. */
	for (__u32 i = 1; i < AMP_RELAY_RING && i < n; i++) {
		struct sender_id *s = &ring->slot[(head - 1 - i) & (AMP_RELAY_RING - 1)];

		if (s->pid != now.last.pid) {
			e->sender_how = AMP_SENDER_SEVERAL;
			break;
		}
	}
	if (n > AMP_RELAY_RING)		/* some overwritten before this write: not known */
		e->sender_how = AMP_SENDER_SEVERAL;
}

#endif /* AMPTRACE_RELAY_BPF_H */
