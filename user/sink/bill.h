/* SPDX-License-Identifier: GPL-2.0 */
/* An entry's bill: the device bytes charged to it, by class. */
#ifndef AMPTRACE_BILL_H
#define AMPTRACE_BILL_H

#include <linux/types.h>
#include "amptrace.h"
#include "ledger/ledger.h"

enum bill_class { BILL_DATA, BILL_METADATA, BILL_JOURNAL, BILL_WINDOW, NR_BILL };
/* "data", "metadata", "journal", "window": JSON keys and metric labels. */
extern const char *const bill_names[NR_BILL];

struct bill {
	__u64 cost[NR_BILL];	/* the kernel's data and metadata, the ledger's shares */
	__u64 total;
};

/* enum amp_btrfs_tree: JSON keys and the reports' names. */
extern const char *const btrfs_tree_names[AMP_BTRFS_TREES];
/* Sum of n per-tree byte counts. */
__u64 btrfs_trees_sum(const __u64 *tree, int n);

/* The one place an entry's device bytes are summed: report, top, metrics,
 * svg and explain all bill an entry through it. */
struct bill entry_bill(const struct amp_entry *e, const struct entry_costs *c);
/* Totals over entries (per process): to += b. */
void bill_add(struct bill *to, const struct bill *b);

#endif /* AMPTRACE_BILL_H */
