/* SPDX-License-Identifier: GPL-2.0 */
/* The commands, as main() dispatches them: each parses its own options. */
#ifndef AMPTRACE_CLI_H
#define AMPTRACE_CLI_H

#include "trace/trace.h"

/* trace_cli.c: trace, record and top share their options.
 * 0: run; 1: handled (--help); <0: error, already reported. */
int trace_parse_args(int argc, char **argv, enum amp_mode mode, struct trace_opts *opts);
int cmd_report(int argc, char **argv);	/* report_cmd.c */
int cmd_explain(int argc, char **argv);	/* explain_cmd.c */
int cmd_version(void);			/* version.c: loads no BPF program */

#endif /* AMPTRACE_CLI_H */
