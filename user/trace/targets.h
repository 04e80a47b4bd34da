/* SPDX-License-Identifier: GPL-2.0 */
/* The traced processes as /proc shows them (see targets.c). */
#ifndef AMPTRACE_TARGETS_H
#define AMPTRACE_TARGETS_H

#include <stdbool.h>
#include "trace/trace.h"

/*
 * The first line of /proc/PID/task/TID/FILE for pid's threads: true if it
 * matches for some thread (any), or for every thread (!any).
 */
bool threads_match(const char *pid, const char *file, bool any,
		   bool (*match)(const char *line, const void *arg), const void *arg);
/* Call fn(ctx, pid) for every traced process but amptrace; the number of them. */
int for_each_target(const struct trace_opts *o, void (*fn)(void *, const char *), void *ctx);

#endif /* AMPTRACE_TARGETS_H */
