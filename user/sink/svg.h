/* SPDX-License-Identifier: GPL-2.0 */
/* The scatter map: x = entry sequence, y = page offset per file. */
#ifndef AMPTRACE_SVG_H
#define AMPTRACE_SVG_H

#include <linux/types.h>
#include <stdbool.h>
#include "amptrace.h"
#include "ledger/ledger.h"
#include "sink/sink.h"
#include "sys/paths.h"

struct svg;
struct svg *svg_new(amp_path_fn path, void *path_ctx);
void svg_entry(struct svg *s, const struct amp_entry *e, const struct entry_costs *c);
/* The picture, as SVG or in an HTML page: 0, or -1 after a one-line error. */
int svg_write(struct svg *s, const char *out_path, bool html, const char *title);
void svg_free(struct svg *s);
/* As a sink: the entries (svg_write draws them). */
struct sink svg_sink(struct svg *s);

#endif /* AMPTRACE_SVG_H */
