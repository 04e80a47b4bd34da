// SPDX-License-Identifier: GPL-2.0
/* An entry's bill: see bill.h. */
#include "sink/bill.h"

const char *const bill_names[NR_BILL] = { "data", "metadata", "journal", "window" };

const char *const btrfs_tree_names[AMP_BTRFS_TREES] = {
	"fs", "extent", "csum", "free_space", "root", "log", "chunk", "dev",
	"block_group", "other", "super", "unknown",
};

__u64 btrfs_trees_sum(const __u64 *tree, int n)
{
	__u64 all = 0;

	for (int k = 0; k < n; k++)
		all += tree[k];
	return all;
}

struct bill entry_bill(const struct amp_entry *e, const struct entry_costs *c)
{
	struct bill b = { .cost = {
		[BILL_DATA] = e->dev_bytes[AMP_CLASS_DATA],
		[BILL_METADATA] = e->dev_bytes[AMP_CLASS_METADATA] + c->meta,
		[BILL_JOURNAL] = c->journal,
		[BILL_WINDOW] = c->window,
	} };

	for (int k = 0; k < NR_BILL; k++)
		b.total += b.cost[k];
	return b;
}

void bill_add(struct bill *to, const struct bill *b)
{
	for (int k = 0; k < NR_BILL; k++)
		to->cost[k] += b->cost[k];
	to->total += b->total;
}
