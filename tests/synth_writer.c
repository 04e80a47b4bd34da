// SPDX-License-Identifier: GPL-2.0
/*
 * Ground truth for amptrace: per "marker" syscall (one pwrite64), dirty a
 * known set of never-dirtied pages, W of them by the pwrite itself and M
 * more by stores through a shared mapping of a second file.  Prints the
 * expected entry -> (inode, page) map as JSON lines on stdout, which must
 * not be a regular file (a write to one would be an entry of its own).
 *
 *   synth_writer [-n ENTRIES] [-w WRITE_PAGES] [-m MMAP_PAGES] [-g GAP_MS] [-s] [-c] [-o] DIR
 *
 * -s: fsync between the pwrite and the stores, so that on ext4 each entry
 * opens jbd2 handles in two transactions (the fsync commits the first).
 * -c: contiguous pwrites (no page gap between entries), so that write-back
 * settles many entries with one request.
 * -o: one file: the stores go to a mapping of the pwrite's own file, past
 * the pages the pwrites reach (a logger that also maps what it writes).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define MMAP_STRIDE 3	/* mmap pages are 3 apart: scattered, never adjacent */

static void die(const char *what)
{
	fprintf(stderr, "synth_writer: %s: %s\n", what, strerror(errno));
	exit(1);
}

int main(int argc, char **argv)
{
	long n = 4, w = 2, m = 3, gap_ms = 0, page = sysconf(_SC_PAGESIZE);
	char path_w[4096], path_m[4096];
	struct stat st_w, st_m;
	struct timespec gap;
	char *buf, *map;
	size_t map_len;
	int fd_w, fd_m, opt, split_txn = 0, one_file = 0;
	long map_base = 0;	/* page of the mapping's start in its file */
	long stride = 2;	/* entry i's pwrite starts at page i * stride * W */

	while ((opt = getopt(argc, argv, "n:w:m:g:sco")) != -1) {
		switch (opt) {
		case 'n': n = atol(optarg); break;
		case 'w': w = atol(optarg); break;
		case 'm': m = atol(optarg); break;
		case 'g': gap_ms = atol(optarg); break;
		case 'o': one_file = 1; break;
		case 's': split_txn = 1; break;
		case 'c': stride = 1; break;
		default:
			fprintf(stderr, "usage: synth_writer [-n N] [-w W] [-m M] [-g MS] [-s] [-c] [-o] DIR\n");
			return 2;
		}
	}
	if (optind != argc - 1 || n < 1 || w < 1 || m < 0) {
		fprintf(stderr, "usage: synth_writer [-n N] [-w W] [-m M] [-g MS] [-s] [-c] [-o] DIR\n");
		return 2;
	}
	snprintf(path_w, sizeof(path_w), "%s/synth-write.dat", argv[optind]);
	snprintf(path_m, sizeof(path_m), "%s/synth-mmap.dat", argv[optind]);

	if (one_file) {
		fd_w = fd_m = open(path_w, O_RDWR | O_CREAT | O_TRUNC, 0644);
		map_base = n * stride * w + 1;	/* past every pwrite */
	} else {
		fd_w = open(path_w, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		fd_m = open(path_m, O_RDWR | O_CREAT | O_TRUNC, 0644);
	}
	if (fd_w < 0 || fd_m < 0)
		die("open");
	/* Sparse: sizing dirties no page; the first store to each one does. */
	map_len = (n * m * MMAP_STRIDE + 1) * page;
	if (ftruncate(fd_m, map_base * page + map_len))
		die("ftruncate");
	map = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd_m, map_base * page);
	if (map == MAP_FAILED)
		die("mmap");
	/* No readahead: each fault brings in exactly one small folio. */
	madvise(map, map_len, MADV_RANDOM);
	if (fstat(fd_w, &st_w) || fstat(fd_m, &st_m))
		die("fstat");
	buf = malloc(w * page);
	if (!buf)
		die("malloc");
	memset(buf, 'x', w * page);
	gap.tv_sec = gap_ms / 1000;
	gap.tv_nsec = (gap_ms % 1000) * 1000000L;

	for (long i = 0; i < n; i++) {
		/* The marker: one pwrite of W fresh pages (a gap after each, unless -c). */
		if (pwrite(fd_w, buf, w * page, i * stride * w * page) != w * page)
			die("pwrite");
		if (split_txn && fsync(fd_w))
			die("fsync");
		for (long j = 0; j < m; j++)
			map[((i * m + j) * MMAP_STRIDE) * page + (i % page)] = 'y';
		if (gap_ms)
			nanosleep(&gap, NULL);
	}

	/* The expected map, only now: nothing above wrote anywhere else. */
	for (long i = 0; i < n; i++) {
		printf("{\"entry\":%ld,\"pid\":%d,\"tid\":%ld,\"bytes\":%ld,\"dev\":\"%u:%u\",\"pages\":[",
		       i, getpid(), (long)syscall(SYS_gettid), w * page,
		       major(st_w.st_dev), minor(st_w.st_dev));
		for (long k = 0; k < w; k++)
			printf("%s[%llu,%ld]", k ? "," : "", (unsigned long long)st_w.st_ino,
			       i * stride * w + k);
		for (long j = 0; j < m; j++)
			printf(",[%llu,%ld]", (unsigned long long)st_m.st_ino,
			       map_base + (i * m + j) * MMAP_STRIDE);
		printf("]}\n");
	}
	fflush(stdout);
	munmap(map, map_len);
	close(fd_w);
	if (fd_m != fd_w)
		close(fd_m);
	free(buf);
	return 0;
}
