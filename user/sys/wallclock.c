// SPDX-License-Identifier: GPL-2.0
/* The wall clock against the kernel side's boot clock: see wallclock.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util.h"
#include "sys/wallclock.h"

/* CLOCK_REALTIME - CLOCK_BOOTTIME, the boot clock read on both sides of the
 * wall clock so that a preemption between the two reads does not count. */
static __s64 boot_to_real_now(void)
{
	__s64 b0 = clock_ns(CLOCK_BOOTTIME);
	__s64 r = clock_ns(CLOCK_REALTIME);
	__s64 b1 = clock_ns(CLOCK_BOOTTIME);

	return r - (b0 + (b1 - b0) / 2);
}

/* The boot id "xxxxxxxx-xxxx-..." as 16 bytes; false if unreadable. */
static bool read_boot_id(__u8 id[16])
{
	char buf[64];
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	int n = 0;

	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	for (const char *p = buf; *p && n < 16; p++) {
		unsigned v;

		if (*p == '-')
			continue;
		if (sscanf(p, "%2x", &v) != 1)
			return false;
		id[n++] = v;
		p++;
	}
	return n == 16;
}

void wall_clock_start(struct wall_clock *c)
{
	memset(c, 0, sizeof(*c));
	c->boot_to_real_ns = boot_to_real_now();
	c->last_ns = c->boot_to_real_ns;
	c->boot_to_mono_ns = clock_ns(CLOCK_BOOTTIME) - clock_ns(CLOCK_MONOTONIC);
	c->have_boot = read_boot_id(c->boot_id);
}

void wall_clock_set(struct wall_clock *c, __s64 boot_to_real_ns, __s64 boot_to_mono_ns,
		    const __u8 *boot_id)
{
	memset(c, 0, sizeof(*c));
	c->boot_to_real_ns = c->last_ns = boot_to_real_ns;
	c->boot_to_mono_ns = boot_to_mono_ns;
	if (boot_id) {
		memcpy(c->boot_id, boot_id, sizeof(c->boot_id));
		c->have_boot = true;
	}
}

void wall_clock_add(struct wall_clock *c, const struct clock_step *step)
{
	__s64 by = step->by_ns;

	c->kept[c->nr_steps % WALL_CLOCK_KEPT] = *step;
	c->nr_steps++;
	if ((by < 0 ? -by : by) > (c->largest_ns < 0 ? -c->largest_ns : c->largest_ns))
		c->largest_ns = by;
	c->last_ns = step->boot_to_real_ns;
}

bool wall_clock_check(struct wall_clock *c, struct clock_step *step)
{
	__s64 now = boot_to_real_now(), by = now - c->last_ns;

	if (by > -WALL_CLOCK_STEP_NS && by < WALL_CLOCK_STEP_NS) {
		/* A slew, followed silently: the offset in force stays. */
		c->last_ns = now;
		return false;
	}
	step->at_boot_ns = clock_ns(CLOCK_BOOTTIME);
	step->boot_to_real_ns = now;
	step->by_ns = by;
	wall_clock_add(c, step);
	return true;
}

unsigned wall_clock_nr_kept(const struct wall_clock *c)
{
	return c->nr_steps < WALL_CLOCK_KEPT ? c->nr_steps : WALL_CLOCK_KEPT;
}

const struct clock_step *wall_clock_step(const struct wall_clock *c, __u64 n)
{
	if (n >= c->nr_steps || c->nr_steps - n > WALL_CLOCK_KEPT)
		return NULL;
	return &c->kept[n % WALL_CLOCK_KEPT];
}

const struct clock_step *wall_clock_kept(const struct wall_clock *c, unsigned i)
{
	return wall_clock_step(c, c->nr_steps - wall_clock_nr_kept(c) + i);
}

__s64 wall_clock_real_ns(const struct wall_clock *c, __u64 boot_ns)
{
	unsigned n = wall_clock_nr_kept(c);
	const struct clock_step *s;

	for (unsigned i = n; i > 0; i--) {
		s = wall_clock_kept(c, i - 1);
		if (s->at_boot_ns <= boot_ns)
			return (__s64)boot_ns + s->boot_to_real_ns;
	}
	if (c->nr_steps <= n)
		return (__s64)boot_ns + c->boot_to_real_ns;
	/* Before the oldest step kept: the offset it stepped from. */
	s = wall_clock_kept(c, 0);
	return (__s64)boot_ns + s->boot_to_real_ns - s->by_ns;
}
