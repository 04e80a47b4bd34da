// SPDX-License-Identifier: GPL-2.0
/* An entry's bill: see bill.h. */
#include "out/bill.h"

const char *const bill_names[NR_BILL] = { "data", "metadata", "journal", "window" };

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
