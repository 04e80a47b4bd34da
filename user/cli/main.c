// SPDX-License-Identifier: GPL-2.0
/* amptrace: subcommand dispatch, in the style of perf and git. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util.h"
#include "cli/cli.h"
#include "trace/trace.h"

/* trace, record and top: one tracer, three ways to deliver its entries. */
static int cmd_trace(int argc, char **argv, enum amp_mode mode)
{
	struct trace_opts opts;
	int err;

	err = trace_parse_args(argc, argv, mode, &opts);
	if (err)
		return err < 0 ? 1 : 0;
	return trace_run(&opts) ? 1 : 0;
}

/* `amptrace compare ...`: exec the Python driver, telling it which amptrace
 * to run (AMPTRACE).  It is found from this binary's folder: in a build
 * tree scripts/amptrace-compare, once installed (make install, the .deb)
 * ../lib/amptrace/amptrace-compare, so any PREFIX works without a rebuild. */
static int cmd_compare(int argc, char **argv)
{
	static const char *const where[] = { "scripts", "../lib/amptrace" };
	char exe[PATH_MAX], script[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0) {
		amp_err("compare: cannot resolve /proc/self/exe: %s", strerror(errno));
		return 1;
	}
	exe[n] = '\0';
	setenv("AMPTRACE", exe, 1);
	slash = strrchr(exe, '/');
	*slash = '\0';
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		snprintf(script, sizeof(script), "%s/%s/amptrace-compare", exe, where[i]);
		if (!access(script, X_OK))
			break;
	}
	if (access(script, X_OK)) {
		amp_err("compare: no amptrace-compare in %s/scripts or %s/../lib/amptrace "
			"(it ships with the amptrace binary)", exe, exe);
		return 1;
	}
	argv[0] = script;
	execv(script, argv);
	amp_err("compare: exec %s: %s", script, strerror(errno));
	return 1;
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
		"  record    the same, into a record file (-o FILE) that survives kill -9\n"
		"  report    render a record: table, JSON lines, --svg scatter map, --journal fields\n"
		"  top       live view: per process, file and device rates\n"
		"  explain   which journal objects and log fields each journald entry wrote\n"
		"  compare   one logging workload on several loop filesystems, side by side\n"
		"  version   version, libbpf, and the kernel features amptrace uses\n"
		"  help      this text; `amptrace COMMAND --help` for a command\n"
		"\n"
		"Manual: amptrace(8), amptrace-COMMAND(8).\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		amp_err("no command given (try 'amptrace help')");
		return 1;
	}
	if (!strcmp(argv[1], "trace"))
		return cmd_trace(argc - 1, argv + 1, AMP_MODE_TRACE);
	if (!strcmp(argv[1], "record"))
		return cmd_trace(argc - 1, argv + 1, AMP_MODE_RECORD);
	if (!strcmp(argv[1], "top"))
		return cmd_trace(argc - 1, argv + 1, AMP_MODE_TOP);
	if (!strcmp(argv[1], "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(argv[1], "explain"))
		return cmd_explain(argc - 1, argv + 1);
	if (!strcmp(argv[1], "compare"))
		return cmd_compare(argc - 1, argv + 1);
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version") ||
	    !strcmp(argv[1], "-V"))
		return cmd_version();
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	amp_err("unknown command '%s' (try 'amptrace help')", argv[1]);
	return 1;
}
