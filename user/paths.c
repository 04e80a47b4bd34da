// SPDX-License-Identifier: GPL-2.0
/*
 * (dev, ino) -> path.  The kernel side only knows inodes; a writer that
 * dirtied the file almost always still has it open or mapped, so look in
 * its /proc/PID/fd and /proc/PID/map_files; failing that, the dentry
 * basename the kernel side recorded.  Results are cached: one scan a file.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "loader.h"

struct path_entry {
	__u32 kdev;
	__u64 ino;
	char *path;
};

static struct path_entry *cache;
static size_t cache_len, cache_cap;
static int files_map_fd = -1;

/* The kernel's per-file map: its dentry basenames are the last resort. */
void paths_use_files_map(int fd)
{
	files_map_fd = fd;
}

/* "name" as the kernel saw it, else "major:minor:ino". */
static char *kernel_name(__u32 kdev, __u64 ino)
{
	struct amp_file_key key = { .dev = kdev, .ino = ino };
	struct amp_file_stats st;
	char buf[AMP_FILE_NAME_LEN + 32];

	if (files_map_fd >= 0 && !bpf_map_lookup_elem(files_map_fd, &key, &st) && st.name[0]) {
		st.name[AMP_FILE_NAME_LEN - 1] = 0;
		return strdup(st.name);
	}
	snprintf(buf, sizeof(buf), "%u:%u:%llu", kdev_major(kdev), kdev_minor(kdev),
		 (unsigned long long)ino);
	return strdup(buf);
}

static char *scan_dir(const char *dir, __u32 kdev, __u64 ino)
{
	char link[PATH_MAX], target[PATH_MAX];
	struct dirent *d;
	struct stat st;
	char *found = NULL;
	DIR *dp = opendir(dir);
	ssize_t n;

	if (!dp)
		return NULL;
	while (!found && (d = readdir(dp))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", dir, d->d_name);
		if (stat(link, &st) || st.st_ino != ino || kdev_from_user(st.st_dev) != kdev)
			continue;
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = 0;
		found = strdup(target);
	}
	closedir(dp);
	return found;
}

const char *path_of(__u32 kdev, __u64 ino, __u32 pid)
{
	char dir[64];
	char *p;

	for (size_t i = 0; i < cache_len; i++)
		if (cache[i].kdev == kdev && cache[i].ino == ino)
			return cache[i].path;

	snprintf(dir, sizeof(dir), "/proc/%u/fd", pid);
	p = scan_dir(dir, kdev, ino);
	if (!p) {
		snprintf(dir, sizeof(dir), "/proc/%u/map_files", pid);
		p = scan_dir(dir, kdev, ino);
	}
	if (!p) {
		/* Closed and unmapped since: the kernel's basename will do. */
		p = kernel_name(kdev, ino);
		if (!p)
			return "?";
	}
	if (cache_len == cache_cap) {
		size_t cap = cache_cap ? cache_cap * 2 : 16;
		struct path_entry *c = realloc(cache, cap * sizeof(*c));

		if (!c) {
			free(p);
			return "?";
		}
		cache = c;
		cache_cap = cap;
	}
	cache[cache_len++] = (struct path_entry){ kdev, ino, p };
	return p;
}
