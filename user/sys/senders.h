/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Who sent a log record: the pid the kernel side read from the record's
 * credentials (or the entry's own process, for a write), named as a user
 * knows it: comm, cgroup, systemd unit, container.
 */
#ifndef AMPTRACE_SENDERS_H
#define AMPTRACE_SENDERS_H

#include <linux/types.h>
#include "amptrace.h"

#define SENDER_CGROUP_LEN	256
#define SENDER_UNIT_LEN		128
#define SENDER_CONTAINER_LEN	65	/* 64 hex digits */

/* What is known of a sender, and how. */
enum sender_state {
	SENDER_SELF,		/* a write, or the process's own entry: itself */
	SENDER_LIVE,		/* named from /proc: it still runs */
	SENDER_EXITED,		/* named from its exit, kept by the kernel side */
	SENDER_GONE,		/* exited, and its exit was not kept (before the
				 * start, or pushed out of exited_procs) */
	SENDER_REUSED,		/* its pid now belongs to a process started after
				 * the record, and its own exit was not kept */
	SENDER_KERNEL,		/* the kernel: /dev/kmsg, audit */
	SENDER_NOCREDS,		/* a record that came with no credentials */
	SENDER_SEVERAL,		/* a relay's write (rsyslog) whose receives came
				 * from more than one sender */
	SENDER_NR_STATES,
};

extern const char *const sender_state_names[SENDER_NR_STATES];

struct sender {
	enum sender_state state;
	__u32 pid;		/* 0 for the kernel and no credentials */
	__u32 uid;		/* (__u32)-1 where not known */
	char comm[AMP_COMM_LEN];
	char cgroup[SENDER_CGROUP_LEN];		/* cgroup v2 path, "" if none */
	char unit[SENDER_UNIT_LEN];		/* systemd unit, "" if none */
	char container[SENDER_CONTAINER_LEN];	/* a container's id, "" if none */
	bool relay;		/* a relay's write (rsyslog): named from its
				 * receives (bpf/relay.bpf.h) */
	__u32 relayed;		/* those it is linked to (255: that many or more;
				 * 0: the one its file's last write took ahead) */
};

struct senders;
/* exited_fd: the kernel side's exited_procs map (-1: none). */
struct senders *senders_new(int exited_fd);
void senders_free(struct senders *s);
/* Who sent entry e; never NULL.  Valid until the next call. */
const struct sender *senders_of(struct senders *s, const struct amp_entry *e);

/* The unit and the container id in a cgroup path, as systemd names the
 * unit (the first component below the slices): into unit and container
 * ("" where none). */
void sender_parse_cgroup(const char *path, char *unit, size_t unit_len,
			 char *container, size_t container_len);
/* The name a sender's rows go by: its unit, else its comm; "kernel",
 * "(no credentials)", ... for the others.  Into buf. */
const char *sender_label(const struct sender *s, char *buf, size_t len);

#endif /* AMPTRACE_SENDERS_H */
