// SPDX-License-Identifier: GPL-2.0
/* This process's memory cgroup limit: see memcg.h. */
#include <libmount.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sys/memcg.h"

/* Where the hierarchy is mounted: cgroup v2's (fstype cgroup2), or v1's
 * with the memory controller (its options name it).  NULL: not mounted. */
static char *hierarchy_root(bool v2)
{
	struct libmnt_table *t = mnt_new_table_from_file("/proc/self/mountinfo");
	struct libmnt_iter *it = mnt_new_iter(MNT_ITER_FORWARD);
	struct libmnt_fs *fs;
	char *root = NULL;

	while (t && it && !root && mnt_table_next_fs(t, it, &fs) == 0) {
		const char *type = mnt_fs_get_fstype(fs), *target = mnt_fs_get_target(fs);

		if (!type || !target)
			continue;
		if (v2 ? !strcmp(type, "cgroup2")
		       : !strcmp(type, "cgroup") && !mnt_fs_get_option(fs, "memory", NULL, NULL))
			root = strdup(target);
	}
	mnt_free_iter(it);
	mnt_unref_table(t);
	return root;
}

/* A limit file's value: 0 for "max" or v1's unlimited (near 2^63). */
static __u64 read_limit(const char *file)
{
	unsigned long long v = 0;
	char buf[32];
	FILE *f = fopen(file, "r");

	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f) && strncmp(buf, "max", 3))
		v = strtoull(buf, NULL, 10);
	fclose(f);
	return v >= (1ULL << 62) ? 0 : v;
}

/* The lowest limit from root/cgroup up to root (each ancestor's applies). */
static __u64 lowest_limit(const char *root, const char *cgroup, const char *file,
			  char *path, size_t len)
{
	char dir[4096], name[4200];
	__u64 lowest = 0;

	snprintf(dir, sizeof(dir), "%s%s", root, cgroup);
	for (;;) {
		char *slash;
		__u64 v;

		snprintf(name, sizeof(name), "%s/%s", dir, file);
		v = read_limit(name);
		if (v && (!lowest || v < lowest)) {
			lowest = v;
			snprintf(path, len, "%s", dir);
		}
		slash = strrchr(dir, '/');
		if (!slash || slash - dir < (long)strlen(root))
			break;
		*slash = 0;
	}
	return lowest;
}

__u64 memcg_limit(char *path, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "r");
	char line[4096], here[4096];
	__u64 lowest = 0;

	if (!f)
		return 0;
	/* "0::/path" (v2), "N:memory:/path" or "N:cpu,memory:/path" (v1). */
	while (fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':'), *cg = ctl ? strchr(ctl + 1, ':') : NULL, *root;
		bool v2;
		__u64 v;

		if (!cg)
			continue;
		*cg++ = 0;
		cg[strcspn(cg, "\n")] = 0;
		ctl++;
		v2 = !*ctl;
		if (!v2 && !strstr(ctl, "memory"))
			continue;
		root = hierarchy_root(v2);
		if (!root)
			continue;
		v = lowest_limit(root, strcmp(cg, "/") ? cg : "",
				 v2 ? "memory.max" : "memory.limit_in_bytes", here, sizeof(here));
		if (v && (!lowest || v < lowest)) {
			lowest = v;
			snprintf(path, len, "%s", here);
		}
		free(root);
	}
	fclose(f);
	return lowest;
}
