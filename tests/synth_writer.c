// SPDX-License-Identifier: GPL-2.0
/*
 * Ground truth for amptrace: per "marker" syscall (one pwrite64), dirty a
 * known set of never-dirtied pages, W of them by the pwrite itself and M
 * more by stores through a shared mapping of a second file.  Prints the
 * expected entry -> (inode, page) map as JSON lines on stdout, which must
 * not be a regular file (a write to one would be an entry of its own).
 *
 *   synth_writer [-n ENTRIES] [-w WRITE_PAGES] [-m MMAP_PAGES] [-g GAP_MS] [-t THREADS]
 *                [-s] [-c] [-o] DIR
 *
 * -s: fsync between the pwrite and the stores, so that on ext4 each entry
 * opens jbd2 handles in two transactions (the fsync commits the first).
 * -c: contiguous pwrites (no page gap between entries), so that write-back
 * settles many entries with one request.
 * -o: one file: the stores go to a mapping of the pwrite's own file, past
 * the pages the pwrites reach (a logger that also maps what it writes).
 * -t: THREADS writers at once, thread k pinned to CPU k mod the CPUs online,
 * each its own files (synth-write-K.dat, synth-mmap-K.dat) and entries;
 * each line of the map names its thread (tid).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
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

/* One writer: its files, its marker pwrites and stores. */
struct writer {
	long n, w, m, gap_ms, page, stride, map_base;
	int split_txn, one_file, cpu;
	char path_w[4096], path_m[4096];
	/* The expected map, printed by main once every writer is done. */
	char *expect;
	size_t expect_len;
};

static void *write_entries(void *arg)
{
	struct writer *wr = arg;
	long n = wr->n, w = wr->w, m = wr->m, page = wr->page, stride = wr->stride;
	struct stat st_w, st_m;
	struct timespec gap;
	char *buf, *map;
	size_t map_len;
	int fd_w, fd_m;
	FILE *out;

	if (wr->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(wr->cpu, &set);
		sched_setaffinity(0, sizeof(set), &set);	/* best effort */
	}
	if (wr->one_file) {
		fd_w = fd_m = open(wr->path_w, O_RDWR | O_CREAT | O_TRUNC, 0644);
		wr->map_base = n * stride * w + 1;	/* past every pwrite */
	} else {
		fd_w = open(wr->path_w, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		fd_m = open(wr->path_m, O_RDWR | O_CREAT | O_TRUNC, 0644);
	}
	if (fd_w < 0 || fd_m < 0)
		die("open");
	/* Sparse: sizing dirties no page; the first store to each one does. */
	map_len = (n * m * MMAP_STRIDE + 1) * page;
	if (ftruncate(fd_m, wr->map_base * page + map_len))
		die("ftruncate");
	map = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd_m, wr->map_base * page);
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
	gap.tv_sec = wr->gap_ms / 1000;
	gap.tv_nsec = (wr->gap_ms % 1000) * 1000000L;

	for (long i = 0; i < n; i++) {
		/* The marker: one pwrite of W fresh pages (a gap after each, unless -c). */
		if (pwrite(fd_w, buf, w * page, i * stride * w * page) != w * page)
			die("pwrite");
		if (wr->split_txn && fsync(fd_w))
			die("fsync");
		for (long j = 0; j < m; j++)
			map[((i * m + j) * MMAP_STRIDE) * page + (i % page)] = 'y';
		if (wr->gap_ms)
			nanosleep(&gap, NULL);
	}

	/* The expected map: into memory, printed once every writer is done
	 * (stdout is no regular file, but a pipe's write is still a syscall). */
	out = open_memstream(&wr->expect, &wr->expect_len);
	if (!out)
		die("open_memstream");
	for (long i = 0; i < n; i++) {
		fprintf(out, "{\"entry\":%ld,\"pid\":%d,\"tid\":%ld,\"bytes\":%ld,\"dev\":\"%u:%u\",\"pages\":[",
			i, getpid(), (long)syscall(SYS_gettid), w * page,
			major(st_w.st_dev), minor(st_w.st_dev));
		for (long k = 0; k < w; k++)
			fprintf(out, "%s[%llu,%ld]", k ? "," : "", (unsigned long long)st_w.st_ino,
				i * stride * w + k);
		for (long j = 0; j < m; j++)
			fprintf(out, ",[%llu,%ld]", (unsigned long long)st_m.st_ino,
				wr->map_base + (i * m + j) * MMAP_STRIDE);
		fprintf(out, "]}\n");
	}
	fclose(out);
	munmap(map, map_len);
	close(fd_w);
	if (fd_m != fd_w)
		close(fd_m);
	free(buf);
	return NULL;
}

#define USAGE "usage: synth_writer [-n N] [-w W] [-m M] [-g MS] [-t THREADS] [-s] [-c] [-o] DIR\n"

int main(int argc, char **argv)
{
	struct writer proto = { .n = 4, .w = 2, .m = 3, .stride = 2, .cpu = -1,
				.page = sysconf(_SC_PAGESIZE) };
	long threads = 1, ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct writer *wr;
	pthread_t *tids;
	int opt;

	while ((opt = getopt(argc, argv, "n:w:m:g:t:sco")) != -1) {
		switch (opt) {
		case 'n': proto.n = atol(optarg); break;
		case 'w': proto.w = atol(optarg); break;
		case 'm': proto.m = atol(optarg); break;
		case 'g': proto.gap_ms = atol(optarg); break;
		case 't': threads = atol(optarg); break;
		case 'o': proto.one_file = 1; break;
		case 's': proto.split_txn = 1; break;
		case 'c': proto.stride = 1; break;
		default:
			fprintf(stderr, USAGE);
			return 2;
		}
	}
	if (optind != argc - 1 || proto.n < 1 || proto.w < 1 || proto.m < 0 ||
	    threads < 1 || threads > 256) {
		fprintf(stderr, USAGE);
		return 2;
	}
	wr = calloc(threads, sizeof(*wr));
	tids = calloc(threads, sizeof(*tids));
	if (!wr || !tids)
		die("calloc");
	for (long t = 0; t < threads; t++) {
		wr[t] = proto;
		if (threads == 1) {
			snprintf(wr[t].path_w, sizeof(wr[t].path_w), "%s/synth-write.dat", argv[optind]);
			snprintf(wr[t].path_m, sizeof(wr[t].path_m), "%s/synth-mmap.dat", argv[optind]);
		} else {
			/* -t: a thread per CPU in turn, each with files of its own. */
			wr[t].cpu = ncpu > 0 ? t % ncpu : -1;
			snprintf(wr[t].path_w, sizeof(wr[t].path_w), "%s/synth-write-%ld.dat", argv[optind], t);
			snprintf(wr[t].path_m, sizeof(wr[t].path_m), "%s/synth-mmap-%ld.dat", argv[optind], t);
		}
	}
	if (threads == 1) {
		write_entries(&wr[0]);
	} else {
		for (long t = 0; t < threads; t++)
			if ((errno = pthread_create(&tids[t], NULL, write_entries, &wr[t])))
				die("pthread_create");
		for (long t = 0; t < threads; t++)
			pthread_join(tids[t], NULL);
	}
	for (long t = 0; t < threads; t++) {
		fwrite(wr[t].expect, 1, wr[t].expect_len, stdout);
		free(wr[t].expect);
	}
	fflush(stdout);
	free(wr);
	free(tids);
	return 0;
}
