// SPDX-License-Identifier: GPL-2.0
/* amptrace: subcommand dispatch, in the style of perf and git. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "loader.h"

const char *amp_prog = "amptrace";
int amp_errors;

/* Every user-facing error is one line on stderr. */
void amp_err(const char *fmt, ...)
{
	va_list ap;

	amp_errors++;
	fprintf(stderr, "%s: ", amp_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int cmd_trace(int argc, char **argv)
{
	struct trace_opts opts;
	int err;

	err = trace_parse_args(argc, argv, &opts);
	if (err)
		return err < 0 ? 1 : 0;
	return trace_run(&opts) ? 1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: amptrace <command> [options]\n"
		"\n"
		"Charge every dirtied page and written sector to the logging syscall\n"
		"that caused it.\n"
		"\n"
		"commands:\n"
		"  trace     stream one line per logging syscall, summary at exit\n"
		"  help      this text; `amptrace COMMAND --help` for a command\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		amp_err("no command given (try 'amptrace help')");
		return 1;
	}
	if (!strcmp(argv[1], "trace"))
		return cmd_trace(argc - 1, argv + 1);
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	amp_err("unknown command '%s' (try 'amptrace help')", argv[1]);
	return 1;
}
