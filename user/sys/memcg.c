// SPDX-License-Identifier: GPL-2.0
/* This process's memory cgroup limit: see memcg.h. */
#include <libmount.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sys/memcg.h"

struct level {
	__u64 limit, used;
	char path[4096];
};

/* Where the hierarchy is mounted: cgroup v2's (fstype cgroup2), or v1's
 * with the memory controller (its options name it); *root: the cgroup
 * its mount shows as its top ("/" but in a container without its own
 * cgroup namespace).  NULL: not mounted. */
static char *hierarchy_mount(bool v2, char **root)
{
	struct libmnt_table *t = mnt_new_table_from_file("/proc/self/mountinfo");
	struct libmnt_iter *it = mnt_new_iter(MNT_ITER_FORWARD);
	struct libmnt_fs *fs;
	char *target = NULL;

	while (t && it && !target && mnt_table_next_fs(t, it, &fs) == 0) {
		const char *type = mnt_fs_get_fstype(fs), *dir = mnt_fs_get_target(fs);

		if (!type || !dir)
			continue;
		if (v2 ? !strcmp(type, "cgroup2")
		       : !strcmp(type, "cgroup") && !mnt_fs_get_option(fs, "memory", NULL, NULL)) {
			target = strdup(dir);
			*root = strdup(mnt_fs_get_root(fs) ?: "/");
		}
	}
	mnt_free_iter(it);
	mnt_unref_table(t);
	return target;
}

/* A memory file's value: 0 for "max", v1's unlimited (near 2^63) or none. */
static __u64 read_bytes(const char *dir, const char *file)
{
	unsigned long long v = 0;
	char name[4200], buf[32];
	FILE *f;

	snprintf(name, sizeof(name), "%s/%s", dir, file);
	f = fopen(name, "r");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f) && strncmp(buf, "max", 3))
		v = strtoull(buf, NULL, 10);
	fclose(f);
	return v >= (1ULL << 62) ? 0 : v;
}

static __u64 room(__u64 limit, __u64 used)
{
	return limit > used ? limit - used : 0;
}

/* The level with the least room from mount/cg up to the mount (each
 * ancestor's limit applies), into best if it has less than best. */
static void least_room(const char *mount, const char *cg, bool v2, struct level *best)
{
	char dir[4096];

	snprintf(dir, sizeof(dir), "%s%s", mount, cg);
	for (;;) {
		__u64 limit = read_bytes(dir, v2 ? "memory.max" : "memory.limit_in_bytes");
		__u64 used = read_bytes(dir, v2 ? "memory.current" : "memory.usage_in_bytes");
		char *slash;

		if (limit && (!best->limit || room(limit, used) < room(best->limit, best->used))) {
			best->limit = limit;
			best->used = used;
			snprintf(best->path, sizeof(best->path), "%s", dir);
		}
		slash = strrchr(dir, '/');
		if (!slash || slash - dir < (long)strlen(mount))
			break;
		*slash = 0;
	}
}

int memcg_room(__u64 *limit, __u64 *used, char *path, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "r");
	struct level best = { 0 };
	char line[4096];

	if (!f)
		return -1;
	/* "0::/path" (v2), "N:memory:/path" or "N:cpu,memory:/path" (v1). */
	while (fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':'), *cg = ctl ? strchr(ctl + 1, ':') : NULL;
		char *mount, *root = NULL;
		size_t rl;
		bool v2;

		if (!cg)
			continue;
		*cg++ = 0;
		cg[strcspn(cg, "\n")] = 0;
		ctl++;
		v2 = !*ctl;
		if (!v2 && !strstr(ctl, "memory"))
			continue;
		mount = hierarchy_mount(v2, &root);
		/* The path is from the hierarchy's top; the mount may show a
		 * cgroup below it (root): then the path must be under it. */
		rl = root ? strlen(root) : 0;
		if (mount && root && (!strcmp(root, "/") || (!strncmp(cg, root, rl) &&
							     (cg[rl] == '/' || !cg[rl]))))
			least_room(mount, !strcmp(root, "/") ? (strcmp(cg, "/") ? cg : "") : cg + rl,
				   v2, &best);
		free(mount);
		free(root);
	}
	fclose(f);
	if (!best.limit)
		return -1;
	*limit = best.limit;
	*used = best.used;
	snprintf(path, len, "%s", best.path);
	return 0;
}
