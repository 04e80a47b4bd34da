/* SPDX-License-Identifier: GPL-2.0 */
/* Entries held until the kernel sends their device bytes (AMP_REC_SETTLED). */
#ifndef AMPTRACE_UNSETTLED_H
#define AMPTRACE_UNSETTLED_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include "amptrace.h"

struct unsettled;
struct unsettled *unsettled_new(void);
/* Keep e (len bytes, as the kernel sent it): 0, or -1 if out of memory. */
int unsettled_hold(struct unsettled *u, const struct amp_entry *e, size_t len);
/* The entry s settles, completed into out; false if none is held. */
bool unsettled_settle(struct unsettled *u, const struct amp_settle *s, struct amp_entry *out);
/* Any one held entry as it stands; false when none is left. */
bool unsettled_take_any(struct unsettled *u, struct amp_entry *out);
size_t unsettled_count(const struct unsettled *u);
/* Pages of file (dev, ino) e dirtied, as its scatter slots say: the
 * measure by which the ledger splits a kernel thread's work for a file. */
__u64 entry_file_pages(const struct amp_entry *e, __u32 dev, __u64 ino);
/* Pages of file (dev, ino) the held entries dirtied, as their scatter
 * slots say, and the highest id of an entry with some held since the file
 * was first asked for (*last_id, 0 if none).  The first time a walk of
 * every held entry; then kept up to date (a few files at a time). */
__u64 unsettled_file_pages(struct unsettled *u, __u32 dev, __u64 ino, __u64 *last_id);
void unsettled_free(struct unsettled *u);

#endif /* AMPTRACE_UNSETTLED_H */
