/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The wall clock against CLOCK_BOOTTIME, which the kernel side stamps
 * entries with.  An entry prints as wall-clock time: its boot time plus
 * the offset in force when it started.  The offset is measured at the
 * start and checked while tracing: a step (date -s, an NTP step, a VM
 * restored) puts a new offset in force from then on, counted and kept, so
 * that times follow the clock as journald's do, and a record carries the
 * steps.  explain matches by boot time and the journal's monotonic stamps,
 * which no step moves.
 */
#ifndef AMPTRACE_WALLCLOCK_H
#define AMPTRACE_WALLCLOCK_H

#include <linux/types.h>
#include <stdbool.h>

/* From at_boot_ns on, wall = boot + boot_to_real_ns; by_ns: the step. */
struct clock_step {
	__u64 at_boot_ns;
	__s64 boot_to_real_ns;
	__s64 by_ns;
};

#define WALL_CLOCK_KEPT	64	/* the latest steps (entries are younger) */
#define WALL_CLOCK_STEP_NS	10000000LL	/* 10 ms between two looks; a
						 * slew moves 0.5 ms/s at most */

struct wall_clock {
	__s64 boot_to_real_ns;	/* CLOCK_REALTIME - CLOCK_BOOTTIME at the start */
	__s64 boot_to_mono_ns;	/* CLOCK_BOOTTIME - CLOCK_MONOTONIC (time suspended) */
	__u8 boot_id[16];	/* the kernel's, as the journal keeps it */
	bool have_boot;		/* boot_to_mono_ns and boot_id known */
	__u64 nr_steps;		/* seen; the last WALL_CLOCK_KEPT kept */
	__s64 largest_ns;	/* the largest step, by size, with its sign */
	struct clock_step kept[WALL_CLOCK_KEPT];	/* a ring: nr_steps % KEPT next */
	__s64 last_ns;		/* the offset at the last look */
};

/* Measure now: the start. */
void wall_clock_start(struct wall_clock *c);
/* The start as a record keeps it: no boot identity when boot_id is NULL. */
void wall_clock_set(struct wall_clock *c, __s64 boot_to_real_ns, __s64 boot_to_mono_ns,
		    const __u8 *boot_id);
/* Look again: true, with *step filled and kept, if the clock stepped. */
bool wall_clock_check(struct wall_clock *c, struct clock_step *step);
/* A step read back (a record's). */
void wall_clock_add(struct wall_clock *c, const struct clock_step *step);
/* The wall-clock time (ns since the epoch) of boot time boot_ns. */
__s64 wall_clock_real_ns(const struct wall_clock *c, __u64 boot_ns);
/* Step n of the run (0: the first), or NULL if no longer kept. */
const struct clock_step *wall_clock_step(const struct wall_clock *c, __u64 n);
/* The i-th kept step, oldest first (i < wall_clock_nr_kept()). */
unsigned wall_clock_nr_kept(const struct wall_clock *c);
const struct clock_step *wall_clock_kept(const struct wall_clock *c, unsigned i);

#endif /* AMPTRACE_WALLCLOCK_H */
