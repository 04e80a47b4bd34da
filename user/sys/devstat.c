// SPDX-License-Identifier: GPL-2.0
/* The device's own counters: /sys/block/DISK/{dev,stat}. */
#include <stdio.h>
#include "sys/devstat.h"

static FILE *sysblock_open(const char *disk, const char *file)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/class/block/%s/%s", disk, file);
	return fopen(path, "r");
}

int disk_lookup(const char *name, unsigned *major, unsigned *minor)
{
	FILE *f = sysblock_open(name, "dev");
	int n;

	if (!f)
		return -1;
	n = fscanf(f, "%u:%u", major, minor);
	fclose(f);
	return n == 2 ? 0 : -1;
}

/* Fields 5 and 7 of Documentation/block/stat.rst: write I/Os, sectors. */
int disk_read_counter(const char *name, struct disk_counter *c)
{
	FILE *f = sysblock_open(name, "stat");
	unsigned long long v[7];
	int n;

	if (!f)
		return -1;
	n = fscanf(f, "%llu %llu %llu %llu %llu %llu %llu",
		   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]);
	fclose(f);
	if (n != 7)
		return -1;
	c->write_ios = v[4];
	c->sectors_written = v[6];
	return 0;
}

/* 5.15+: a whole disk's sequence number, new for each disk made (loop and
 * dm reuse names and numbers, not this). */
__u64 disk_read_seq(const char *name)
{
	FILE *f = sysblock_open(name, "diskseq");
	unsigned long long seq = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%llu", &seq) != 1)
		seq = 0;
	fclose(f);
	return seq;
}
