/* SPDX-License-Identifier: GPL-2.0 */
/* A running trace's totals (struct summary), from the kernel's maps and
 * the disks' own counters, against a baseline taken at the start. */
#ifndef AMPTRACE_SUMMARIZE_H
#define AMPTRACE_SUMMARIZE_H

#include <stdbool.h>
#include "ledger/ledger.h"
#include "sink/summary.h"
#include "sys/blockdev.h"

struct summarizer;
/* The baseline: every block device in /sys/class/block (only: those of
 * --dev's stack), its
 * counter and the kernel's class counters, read at the same moment.
 * devs_fd, files_fd, stats_fd: the kernel's devs, files and stats maps;
 * next_entry_id: the kernel's entry-id counter (entries opened + 1). */
struct summarizer *summarizer_new(int devs_fd, int files_fd, int stats_fd,
				  const __u64 *next_entry_id, const struct blockdev_stack *only);
/* Devices since the baseline: every device with bytes or a counter that
 * moved (all of the stack's with only), and devices that appeared
 * meanwhile. */
void summarize_devs(struct summarizer *z, struct summary *s);
/* The final summary's dm rows: their failed writes the counter never
 * counted apart from the class (failed_uncounted). */
void summary_failed_counted(struct summary *s);
/* Read the counters: the name of a device that went away since the last
 * look (one a call; its row keeps its counter as last read), or NULL. */
const char *summarizer_watch(struct summarizer *z);
/* The rest: the ledger's shares per disk, the losses, and (files) the
 * per-file totals, a walk of the files map. */
/* Count the runs the kernel skipped of obj's programs as a loss. */
void summarizer_use_progs(struct summarizer *z, const struct bpf_object *obj);
void summarize_rest(struct summarizer *z, struct summary *s, struct ledger *l, bool files);
void summarizer_free(struct summarizer *z);

#endif /* AMPTRACE_SUMMARIZE_H */
