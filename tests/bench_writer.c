// SPDX-License-Identifier: GPL-2.0
/*
 * Workloads for `make bench` (scripts/bench.sh).  Each mode does one
 * measured thing and prints one line of key=value pairs on stdout.
 *
 *   bench_writer write PATH [-s MIB] [-b BYTES] [-k]
 *                                                 dirty MIB through write()
 *   bench_writer mmap  PATH [-s MIB] [-m PAGES] [-k]
 *                                                 dirty MIB through stores
 *                                                 into a shared mapping, a
 *                                                 1-byte write() to PATH.mark
 *                                                 every PAGES pages
 *   bench_writer rate  PATH -r PER_S -d SECONDS [-l BYTES]
 *                                                 append BYTES-long lines,
 *                                                 one write() each, at PER_S
 *   bench_writer journal native|syslog|stream -n N [-l BYTES] [-j DIR]
 *                                                 send N entries to journald
 *                                                 and wait until all of them
 *                                                 are in the files under DIR
 *
 * write/mmap: the file is created fresh (truncated), dirtied, then fsync'ed;
 * dirty_s is the dirtying phase alone, fsync_s the write-out after it.
 * write also prints, on a second line, the median and 90th percentile of
 * one write() call's time (call_ns_p50, call_ns_p90).
 * -k keeps the file and rewrites it in place: its pages are then clean in
 * the page cache and each run re-dirties the same folios without allocating
 * memory or blocks, which takes the guest's memory allocation (and, in a VM
 * with free page reporting, the host's) out of the measurement.
 * journal: the time runs from the first send until the journal files'
 * headers (n_entries) count N more entries than before, so it measures
 * journald's ingest, not the sender's buffering.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024UL * 1024UL)

static void die(const char *what)
{
	fprintf(stderr, "bench_writer: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: bench_writer write PATH [-s MIB] [-b BYTES] [-k]\n"
		"       bench_writer mmap PATH [-s MIB] [-m PAGES] [-k]\n"
		"       bench_writer rate PATH -r PER_S -d SECONDS [-l BYTES]\n"
		"       bench_writer journal native|syslog|stream -n N [-l BYTES] [-j DIR]\n");
	exit(2);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static double now_s(void)
{
	return now_ns() / 1e9;
}

static void cpu_s(double *user, double *sys)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
	*sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void print_dirty(const char *mode, size_t bytes, size_t block, double t0,
			double t1, double t2, double u0, double s0)
{
	double u1, s1, mib = (double)bytes / MIB;

	cpu_s(&u1, &s1);
	printf("mode=%s bytes=%zu block=%zu dirty_s=%.6f fsync_s=%.6f "
	       "dirty_mib_s=%.1f total_mib_s=%.1f user_s=%.3f sys_s=%.3f\n",
	       mode, bytes, block, t1 - t0, t2 - t1, mib / (t1 - t0), mib / (t2 - t0),
	       u1 - u0, s1 - s0);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The median and 90th percentile of n per-call times (sorted in place):
 * a per-call cost far steadier than MiB/s, which the machine's other work
 * and the write-back moves by several per cent between runs. */
static void print_call_ns(uint64_t *ns, size_t n)
{
	if (!n)
		return;
	qsort(ns, n, sizeof(*ns), cmp_u64);
	printf("call_ns_p50=%llu call_ns_p90=%llu\n", (unsigned long long)ns[n / 2],
	       (unsigned long long)ns[n * 9 / 10]);
}

static int do_write(const char *path, size_t bytes, size_t block, bool keep)
{
	double t0, t1, t2, u0, s0;
	char *buf = malloc(block);
	size_t done = 0, calls = 0, max_calls = bytes / block + 1;
	uint64_t *call_ns = calloc(max_calls, sizeof(*call_ns)), prev;
	int fd;

	if (!buf || !call_ns)
		die("malloc");
	memset(buf, 'w', block);
	fd = open(path, O_WRONLY | O_CREAT | (keep ? 0 : O_TRUNC), 0644);
	if (fd < 0)
		die(path);
	cpu_s(&u0, &s0);
	t0 = now_s();
	prev = now_ns();
	while (done < bytes) {
		size_t n = bytes - done < block ? bytes - done : block;
		ssize_t r = write(fd, buf, n);
		uint64_t t = now_ns();	/* one clock read per call: from the last one */

		if (r <= 0)
			die("write");
		if (calls < max_calls)
			call_ns[calls++] = t - prev;
		prev = t;
		done += r;
	}
	t1 = now_s();
	if (fsync(fd))
		die("fsync");
	t2 = now_s();
	close(fd);
	print_dirty("write", bytes, block, t0, t1, t2, u0, s0);
	print_call_ns(call_ns, calls);
	free(call_ns);
	free(buf);
	return 0;
}

/* Stores into a shared mapping open no entry of their own: like journald
 * after a receive, a 1-byte write() to PATH.mark before every `mark` pages
 * opens the entry that the following page faults are charged to. */
static int do_mmap(const char *path, size_t bytes, long mark, bool keep)
{
	long page = sysconf(_SC_PAGESIZE);
	double t0, t1, t2, u0, s0;
	char markpath[4096];
	char *map;
	int fd, mfd = -1;

	fd = open(path, O_RDWR | O_CREAT | (keep ? 0 : O_TRUNC), 0644);
	if (fd < 0)
		die(path);
	if (ftruncate(fd, bytes))
		die("ftruncate");
	map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	if (mark > 0) {
		snprintf(markpath, sizeof(markpath), "%s.mark", path);
		mfd = open(markpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
		if (mfd < 0)
			die(markpath);
	}
	cpu_s(&u0, &s0);
	t0 = now_s();
	for (size_t off = 0, pg = 0; off < bytes; off += page, pg++) {
		if (mfd >= 0 && pg % mark == 0 && write(mfd, "m", 1) != 1)
			die("write mark");
		memset(map + off, 'm', page);	/* one write fault per page, then the rest */
	}
	t1 = now_s();
	if (msync(map, bytes, MS_SYNC) || fsync(fd))
		die("msync");
	t2 = now_s();
	munmap(map, bytes);
	close(fd);
	if (mfd >= 0)
		close(mfd);
	print_dirty("mmap", bytes, page, t0, t1, t2, u0, s0);
	return 0;
}

/* Append `len`-byte lines at `rate` per second for `secs`, one write() each,
 * paced in 1 ms ticks (a sleep per line is too coarse at 100k/s). */
static int do_rate(const char *path, long rate, double secs, size_t len)
{
	struct timespec next;
	double t0, t1, u0, s0, u1, s1;
	long sent = 0, behind_max = 0;
	char *line = malloc(len);
	int fd;

	if (!line || len < 2)
		die("line");
	memset(line, 'r', len - 1);
	line[len - 1] = '\n';
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (fd < 0)
		die(path);
	cpu_s(&u0, &s0);
	clock_gettime(CLOCK_MONOTONIC, &next);
	t0 = now_s();
	for (;;) {
		double el = now_s() - t0;
		long due = el >= secs ? (long)(rate * secs) : (long)(rate * el) + 1;

		if (due - sent > behind_max)
			behind_max = due - sent;
		while (sent < due) {
			if (write(fd, line, len) != (ssize_t)len)
				die("write");
			sent++;
		}
		if (el >= secs)
			break;
		next.tv_nsec += 1000000;
		if (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	t1 = now_s();
	cpu_s(&u1, &s1);
	close(fd);
	printf("mode=rate lines=%ld bytes=%zu seconds=%.3f target_per_s=%ld achieved_per_s=%.0f "
	       "max_backlog=%ld user_s=%.3f sys_s=%.3f\n",
	       sent, len, t1 - t0, rate, sent / (t1 - t0), behind_max, u1 - u0, s1 - s0);
	return 0;
}

/* Entries journald has stored: the sum of n_entries (header offset 152,
 * little-endian) over the journal files under dir (archived ones too). */
static long long journal_entries(const char *dir)
{
	char pat[4096];
	long long sum = 0;
	glob_t g;

	snprintf(pat, sizeof(pat), "%s/*/*.journal", dir);
	if (glob(pat, 0, NULL, &g))
		return 0;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		uint64_t n = 0;
		int fd = open(g.gl_pathv[i], O_RDONLY);

		if (fd < 0)
			continue;
		if (pread(fd, &n, sizeof(n), 152) == sizeof(n))
			sum += (long long)n;
		close(fd);
	}
	globfree(&g);
	return sum;
}

static int unix_connect(const char *path, int type)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die("socket");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		die(path);
	return fd;
}

static int do_journal(const char *kind, long n, size_t len, const char *dir)
{
	double t0, t1, t2, last_progress;
	long long base, now, prev;
	char body[4096], msg[8192];
	FILE *stream = NULL;
	int fd;

	if (len < 16 || len >= sizeof(body))
		usage();
	memset(body, 'j', len);
	body[len] = 0;
	base = journal_entries(dir);
	if (!strcmp(kind, "native")) {
		fd = unix_connect("/run/systemd/journal/socket", SOCK_DGRAM);
	} else if (!strcmp(kind, "syslog")) {
		fd = unix_connect("/run/systemd/journal/dev-log", SOCK_DGRAM);
	} else if (!strcmp(kind, "stream")) {
		fd = unix_connect("/run/systemd/journal/stdout", SOCK_STREAM);
		stream = fdopen(fd, "w");
		if (!stream)
			die("fdopen");
		/* identifier, unit, priority, level prefix, forward to syslog,
		 * kmsg, console: what systemd-cat sends. */
		fprintf(stream, "ampbench\n\n6\n0\n0\n0\n0\n");
	} else {
		usage();
	}

	t0 = now_s();
	for (long i = 0; i < n; i++) {
		int k;

		if (stream) {
			fprintf(stream, "%07ld %s\n", i, body);
			continue;
		}
		if (kind[0] == 'n')
			k = snprintf(msg, sizeof(msg),
				     "MESSAGE=%07ld %s\nPRIORITY=6\nSYSLOG_IDENTIFIER=ampbench\n",
				     i, body);
		else
			k = snprintf(msg, sizeof(msg), "<14>ampbench[%d]: %07ld %s",
				     (int)getpid(), i, body);
		if (send(fd, msg, k, 0) != k)
			die("send");
	}
	if (stream) {
		if (fclose(stream))
			die("stream");
	} else {
		close(fd);
	}
	t1 = now_s();

	/* Wait until journald stored them all: no progress for 30 s is failure. */
	prev = journal_entries(dir);
	last_progress = now_s();
	while ((now = journal_entries(dir)) < base + n) {
		if (now != prev) {
			prev = now;
			last_progress = now_s();
		} else if (now_s() - last_progress > 30) {
			fprintf(stderr, "bench_writer: journald stored %lld of %ld entries\n",
				now - base, n);
			return 1;
		}
		usleep(2000);
	}
	t2 = now_s();
	printf("mode=journal kind=%s lines=%ld bytes=%zu send_s=%.6f ingest_s=%.6f lines_per_s=%.0f\n",
	       kind, n, len, t1 - t0, t2 - t0, n / (t2 - t0));
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode, *target, *jdir = "/var/log/journal";
	long size_mib = 1024, rate = 0, n = 100000, mark = 256;
	bool keep = false;
	size_t block = 65536, len = 100;
	double secs = 0;
	int opt;

	if (argc < 3)
		usage();
	mode = argv[1];
	/* Options may come before or after the target (getopt permutes). */
	argc--;
	argv++;
	while ((opt = getopt(argc, argv, "s:b:r:d:l:n:j:m:k")) != -1) {
		switch (opt) {
		case 's': size_mib = atol(optarg); break;
		case 'b': block = strtoul(optarg, NULL, 0); break;
		case 'r': rate = atol(optarg); break;
		case 'd': secs = atof(optarg); break;
		case 'l': len = strtoul(optarg, NULL, 0); break;
		case 'n': n = atol(optarg); break;
		case 'j': jdir = optarg; break;
		case 'm': mark = atol(optarg); break;
		case 'k': keep = true; break;
		default: usage();
		}
	}
	if (optind != argc - 1)
		usage();
	target = argv[optind];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "write") && size_mib > 0 && block > 0)
		return do_write(target, size_mib * MIB, block, keep);
	if (!strcmp(mode, "mmap") && size_mib > 0)
		return do_mmap(target, size_mib * MIB, mark, keep);
	if (!strcmp(mode, "rate") && rate > 0 && secs > 0)
		return do_rate(target, rate, secs, len);
	if (!strcmp(mode, "journal") && n > 0)
		return do_journal(target, n, len, jdir);
	usage();
	return 2;
}
