/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Option defaults, defined once: the parsers start from them and --help
 * prints them (AMP_STR); the man pages say the same (t15_layout checks).
 */
#ifndef AMPTRACE_DEFAULTS_H
#define AMPTRACE_DEFAULTS_H

#define AMP_STR_(x) #x
#define AMP_STR(x) AMP_STR_(x)

/* trace, record, top */
#define DEF_PRESET		auto
#define DEF_MAX_ENTRIES		131072	/* entries awaiting write-out; a power of 2 */
#define DEF_MAX_PAGES		262144	/* dirty folios awaiting write-out */
#define DEF_MAX_FILES		4096	/* files in the per-file summary */
#define DEF_METRICS_SENDERS	20	/* senders with a metrics label of their own */
/* 1 MiB: holds ~35 ms of entries at 100k/s, and stays in cache; a 4 MiB
 * ring made every record a write to cold lines (a traced 64 KiB write()
 * 0.5 us slower, scripts/bench/ab.sh). */
#define DEF_RINGBUF_KB		1024
#define DEF_SETTLE_TIMEOUT	120	/* s */
/* top */
#define DEF_INTERVAL		1	/* s between screens */
/* explain */
#define DEF_WINDOW		1	/* s a journal entry's stamp may be from its syscall */

#endif /* AMPTRACE_DEFAULTS_H */
