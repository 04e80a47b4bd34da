/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bills by sender: the entries' bills summed per service that sent their
 * records (its systemd unit, else its process name), for the summaries.
 */
#ifndef AMPTRACE_BY_SENDER_H
#define AMPTRACE_BY_SENDER_H

#include <json-c/json.h>
#include <stdio.h>
#include "sink/bill.h"
#include "sink/summary.h"
#include "sys/senders.h"

struct sender_total {
	char label[SENDER_UNIT_LEN];	/* first, the row's key: sender_label() */
	char comm[AMP_COMM_LEN];	/* of its first entry's sender */
	__u64 entries, bytes, pages, ios;
	struct bill bill;
};

struct by_sender {
	struct sender_total *rows;
	size_t nr, cap;
};

/* The sender row entry e's bill goes to: "(amptrace-own)" for amptrace's
 * own cost, else sender_label() of its sender, into buf; NULL if it has
 * no sender (an old record). */
const char *entry_sender_row(const struct amp_entry *e, const struct sender *s,
			     char *buf, size_t len);
/* Add entry e, billed b, to its sender's row.  An entry of amptrace's own
 * cost goes to a row of its own; one with no sender (an old record) to
 * none. */
void by_sender_add(struct by_sender *t, const struct amp_entry *e,
		   const struct entry_costs *c, const struct bill *b);
/* The rows, largest bill first. */
void by_sender_sort(struct by_sender *t);
/* The disks' write requests per byte they wrote (not the layers over
 * them, whose requests are the disks'): a bill of B bytes is given B x
 * this of their requests.  0 if they wrote nothing. */
double disk_ios_per_byte(const struct summary *s);
/* s: the run's disks (their requests are shared by bytes) and duration. */
json_object *by_sender_json(const struct by_sender *t, const struct summary *s);
void by_sender_text(const struct by_sender *t, const struct summary *s, FILE *out);
void by_sender_free(struct by_sender *t);

/* One entry's "sender" object (pid, comm, unit, cgroup, container, how
 * it is known). */
json_object *sender_json(const struct sender *s);

#endif /* AMPTRACE_BY_SENDER_H */
