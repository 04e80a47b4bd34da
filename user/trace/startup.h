/* SPDX-License-Identifier: GPL-2.0 */
/* amptrace's own start-up cost: the kernel audit records of its program
 * loads, stored by the traced processes (see startup.c). */
#ifndef AMPTRACE_STARTUP_H
#define AMPTRACE_STARTUP_H

#include <linux/types.h>
#include <stddef.h>
#include "amptrace.h"
#include "ledger/unsettled.h"
#include "trace/trace.h"

#define AMP_STARTUP_BIAS (1 << 30)	/* a settlement's count while it is filled */

struct startup;
struct startup_target {		/* what the loaded programs give it */
	int pages_fd;			/* startup_pages */
	struct amp_settle *slots;	/* unsettled, mapped */
	size_t nr_slots;
	__u64 *next_entry_id;		/* the kernel's id source */
	__u32 *startup_own;		/* the kernel's flag */
	struct unsettled *held;
};
/* Before loading any program: NULL where audit is off (nothing to do). */
struct startup *startup_begin(const struct trace_opts *o);
/* After attaching: 1 if the start-up entry settled at once (*settled_now),
 * 0 otherwise, -1 if it could not be made. */
int startup_finish(struct startup *su, const struct startup_target *tg,
		   struct amp_settle *settled_now);
void startup_free(struct startup *su);

#endif /* AMPTRACE_STARTUP_H */
