/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ledger: an entry's bill completed in user space, with the costs
 * shared between entries (fs journal commits, write-out windows).
 */
#ifndef AMPTRACE_LEDGER_H
#define AMPTRACE_LEDGER_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include "amptrace.h"

struct sender;

/* Costs settled here, on top of the kernel's (an entry's dev_bytes). */
struct entry_costs {
	__u64 journal;		/* fs journal, by cause: share of its commits */
	__u64 window;		/* unclaimed metadata/journal, by window */
	__u64 meta;		/* fs metadata, by cause: share of its transactions'
				 * meta_bytes (btrfs tree blocks, xfs buffers) */
	/* btrfs metadata by tree (enum amp_btrfs_tree): its own (fsync's
	 * log blocks and superblocks, part of dev_bytes' metadata) plus its
	 * transactions' shares, split by tree as meta_bytes was (part of
	 * meta).  Sums to its btrfs metadata. */
	__u64 btrfs_tree[AMP_BTRFS_TREES];
	/* Who sent it (sys/senders.h), set on the way to the sinks; NULL:
	 * not known (a record from before senders were kept). */
	const struct sender *sender;
};

/* Per disk, for the summary. */
struct ledger_disk {
	__u32 disk;
	__u64 journal_by_cause;	/* transaction shares (journal and meta_bytes) */
	__u64 by_window;
	__u64 left_over;	/* unclaimed in windows with no entry, at exit */
	__u64 untraced;		/* commit shares of untraced processes' handles */
};

struct ledger;
struct unsettled;
/* Called once per entry, with its bill complete. */
typedef void (*ledger_emit_fn)(void *ctx, const struct amp_entry *e,
			       const struct entry_costs *c);
/* devs_fd: the kernel's per-disk class counters (unclaimed bytes). */
struct ledger *ledger_new(ledger_emit_fn emit, void *ctx, int devs_fd);
/* btrfs_entry_own's fd (bpf/btrfs.bpf.h): entries' own btrfs trees. */
void ledger_btrfs_own(struct ledger *l, int fd);
/* xfs_ail_seqs's fd (bpf/xfslog.bpf.h): an entry of an xfs checkpoint
 * whose items the AIL has yet to write back waits for those bytes, at most
 * hold_s after its bill is otherwise complete. */
void ledger_xfs_ail(struct ledger *l, int fd, double hold_s);
/* The entries waiting for their settlement (trace/settle.c) before they
 * reach the ledger: a kernel thread's work for a file that no entry here
 * dirtied waits for theirs (see txn_share_files). */
void ledger_unsettled(struct ledger *l, struct unsettled *u);
/* The settler's timeout (--settle-timeout, 120 s unless set): how long
 * entries of a committed transaction may still come. */
void ledger_settle_timeout(struct ledger *l, double settle_s);
/* A RAID1's legs (their disks): each writes a copy of the same journal
 * and metadata, so a transaction's bytes by cause go to each in equal
 * parts.  0, or -1 if out of room (then to one of them). */
#define AMP_LEDGER_MIRROR_LEGS 8
int ledger_mirror(struct ledger *l, const __u32 *legs, int nr_legs);
/* Entries whose filesystem is on layer (a dm or md device, which writes
 * nothing itself) share the write-out windows of disk, a disk below it:
 * 0, or -1 if out of room. */
int ledger_disk_alias(struct ledger *l, __u32 layer, __u32 disk);
void ledger_entry(struct ledger *l, const struct amp_entry *e);
void ledger_txn(struct ledger *l, const struct amp_txn_rec *rec);
void ledger_txn_late(struct ledger *l, const struct amp_txn_late *rec);
/* Close the write-out windows that are due (force: all). */
void ledger_tick(struct ledger *l, bool force);
/* End of run: commits still running (the txns map) count as they stand. */
void ledger_flush(struct ledger *l, int txns_fd);
/* What the ledger gave disk, into out: 0, or -1 if nothing. */
int ledger_disk(struct ledger *l, __u32 disk, struct ledger_disk *out);
/* The ledger's own tables, for -v: what its memory goes to. */
struct ledger_stats {
	size_t txns_kept;	/* transactions known now */
	__u64 txns_retired;	/* forgotten since (txns_retire) */
	size_t held, held_peak;	/* entries waiting for their bill */
};
void ledger_stats(const struct ledger *l, struct ledger_stats *out);
void ledger_free(struct ledger *l);

#endif /* AMPTRACE_LEDGER_H */
