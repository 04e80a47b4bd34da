/* SPDX-License-Identifier: GPL-2.0 */
/* Uprobes on libsystemd's journal reading, for relays that read the
 * journal (rsyslog's imjournal): bpf/journal_reader.bpf.h. */
#ifndef AMPTRACE_JOURNAL_READERS_H
#define AMPTRACE_JOURNAL_READERS_H

#include <stdbool.h>

struct bpf_program;
struct bpf_link;
struct trace_opts;

#define READER_LINKS		4	/* per library: next, 2 enumerations, the time */
#define READER_MAX_PROCS	16

/* The three programs: sd_journal_next's return, the field enumeration's
 * call, sd_journal_get_realtime_usec's call. */
struct reader_progs {
	struct bpf_program *next_ret, *enumerate, *timestamp;
};

/* A library probed: for one process, or (pid -1) for all. */
struct reader_proc {
	int pid;
	struct bpf_link *links[READER_LINKS];
	int nr_links;
};

struct reader_probes {
	struct reader_progs progs;
	const struct trace_opts *opts;
	struct reader_proc procs[READER_MAX_PROCS];
	int nr_procs;
	bool per_proc;		/* the traced processes one by one, not the library */
	bool full_said;		/* READER_MAX_PROCS reached, and said */
	double next_look;	/* -c: when to look for new processes */
};

/*
 * Probe the traced processes' libsystemd (each one -p or -c names that
 * runs now and maps it), or, where none is known (--cgroup, a -c process
 * not started yet), the system's libsystemd for every process that maps
 * it (the programs keep to the traced ones; others pay the probes' traps).
 * Never fails the trace: what cannot be probed is said in one line, and
 * those relays' lines stay their own.  Returns the libraries probed.
 */
int reader_probes_attach(struct reader_probes *rp, const struct reader_progs *progs,
			 const struct trace_opts *o);
/* Under -c with processes probed one by one: every 2 s, the name's
 * processes started since (a restarted rsyslogd) are probed too, and
 * those gone let go. */
void reader_probes_look(struct reader_probes *rp);
void reader_probes_detach(struct reader_probes *rp);

#endif /* AMPTRACE_JOURNAL_READERS_H */
