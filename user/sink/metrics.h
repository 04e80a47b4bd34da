/* SPDX-License-Identifier: GPL-2.0 */
/* Fleet metrics: cumulative counters over HTTP (OpenMetrics) and/or a
 * node_exporter textfile.  The names are listed in amptrace-trace(8). */
#ifndef AMPTRACE_METRICS_H
#define AMPTRACE_METRICS_H

#include <linux/types.h>
#include <sys/socket.h>
#include "amptrace.h"
#include "ledger/ledger.h"
#include "sink/sink.h"
#include "sink/summary.h"

struct metrics;
/* addr: serve at http://ADDR/metrics; file: rewrite it at each update.
 * Either may be NULL.  NULL after a one-line error (port busy...).
 * max_senders: senders with a label of their own; later ones are "other". */
struct metrics *metrics_new(const char *addr, const char *file, unsigned max_senders);
void metrics_entry(struct metrics *m, const struct amp_entry *e, const struct entry_costs *c);
/* Device classes, counters and losses as of now; rewrites the textfile. */
int metrics_update(struct metrics *m, const struct summary *now);
void metrics_free(struct metrics *m);
/* "127.0.0.1:9464", "[::1]:9464", ":9464" (every address); -1 if not one. */
int metrics_parse_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *len);
/* As a sink: entries, an update every `period` s from the start, and at the end. */
struct sink metrics_sink(struct metrics *m, double period);

#endif /* AMPTRACE_METRICS_H */
