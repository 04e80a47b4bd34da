// SPDX-License-Identifier: GPL-2.0
/*
 * append_writer: the simplest possible logger, for `amptrace compare`.
 *
 *   append_writer [-s] FILE
 *
 * Opens FILE with O_WRONLY|O_CREAT|O_APPEND, then copies stdin to it one
 * line per write(2) (the line with its "\n"), followed by fdatasync(2) when
 * -s is given.  An empty input line is not written: it is a marker, answered
 * with "ok N\n" on stdout once every line before it has been written (and
 * synced), N being the lines written so far.  Exits at end of input.
 *
 * Its thread name is "amp-append" (prctl), so `amptrace trace -c amp-append`
 * picks it out.  It opens FILE before reading any line, so the file's
 * creation is not part of any line's cost.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define WRITER_COMM "amp-append"

static int write_all(int fd, const char *buf, size_t len)
{
	/* One write() per line: a short write (disk full) is an error here,
	 * never silently split into two syscalls. */
	ssize_t n = write(fd, buf, len);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

int main(int argc, char **argv)
{
	int opt, fd, sync_each = 0;
	unsigned long long lines = 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	while ((opt = getopt(argc, argv, "sh")) != -1) {
		switch (opt) {
		case 's':
			sync_each = 1;
			break;
		default:
			fprintf(stderr, "usage: append_writer [-s] FILE\n");
			return opt == 'h' ? 0 : 1;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: append_writer [-s] FILE\n");
		return 1;
	}
	prctl(PR_SET_NAME, WRITER_COMM, 0, 0, 0);
	fd = open(argv[optind], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "append_writer: %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((len = getline(&line, &cap, stdin)) > 0) {
		int err;

		if (len == 1 && line[0] == '\n') {
			printf("ok %llu\n", lines);
			continue;
		}
		err = write_all(fd, line, len);
		if (!err && sync_each && fdatasync(fd))
			err = -errno;
		if (err) {
			fprintf(stderr, "append_writer: line %llu: %s\n", lines + 1, strerror(-err));
			return 1;
		}
		lines++;
	}
	free(line);
	if (close(fd)) {
		fprintf(stderr, "append_writer: close: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}
