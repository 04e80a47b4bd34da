/* SPDX-License-Identifier: GPL-2.0 */
/* The journal reader's own views: --header, --objects, --entries, --range,
 * --check, --stats. */
#ifndef AMPTRACE_EXPLAIN_VIEWS_H
#define AMPTRACE_EXPLAIN_VIEWS_H

#include "explain/explain.h"

/* The views opt asks for, file by file (t_open: seconds each took to
 * open, for --stats).  0, or <0 after a one-line error. */
int explain_views(struct explain_opts *opt, const double *t_open);

#endif /* AMPTRACE_EXPLAIN_VIEWS_H */
