// SPDX-License-Identifier: GPL-2.0
/*
 * `amptrace --version`: the version, the libbpf in use, and what this
 * kernel offers amptrace, one line each.
 *
 * Everything here is read, never tried: the kernel's BTF (world-readable)
 * names the helpers, map types and tracepoints it has, so no BPF program
 * or map is created.  On a host with kernel audit on, every program load
 * is an audit record (type 1334) that journald then stores: a version
 * query must not add to the very writes amptrace measures.  The price is
 * that "the kernel knows bpf_rdonly_cast" is not "the verifier will accept
 * our use of it"; `amptrace trace -v` says what a real load chose.
 */
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "util.h"
#include "cli/cli.h"
#include "trace/ksyms.h"
#include "trace/preflight.h"
#include "version.h"	/* generated: AMP_VERSION (scripts/version.sh) */

#define CAP_SYS_ADMIN 21
#define CAP_PERFMON 38
#define CAP_BPF 39

/* Does the kernel's enum ENUM have the enumerator NAME?  (BPF_FUNC_loop in
 * enum bpf_func_id, BPF_MAP_TYPE_RINGBUF in enum bpf_map_type, ...) */
static bool btf_has_enumerator(const struct btf *btf, const char *type, const char *name)
{
	__s32 id = btf__find_by_name_kind(btf, type, BTF_KIND_ENUM);
	const struct btf_type *t;
	const struct btf_enum *e;

	if (id <= 0)
		return false;
	t = btf__type_by_id(btf, id);
	e = btf_enum(t);
	for (int i = 0; i < btf_vlen(t); i++)
		if (!strcmp(btf__name_by_offset(btf, e[i].name_off), name))
			return true;
	return false;
}

static const char *yes_no(bool b)
{
	return b ? "yes" : "no";
}

/* Syscall tracepoints live in tracefs, which is root's (mode 0700) on most
 * hosts: without the right to look, say so instead of guessing. */
static void print_syscall_events(void)
{
	static const char *const dirs[] = {
		"/sys/kernel/tracing/events/syscalls/sys_enter_write",
		"/sys/kernel/debug/tracing/events/syscalls/sys_enter_write",
	};
	int denied = 0;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (!access(dirs[i], F_OK)) {
			printf("syscall tracepoints: yes (%.*s)\n",
			       (int)(strstr(dirs[i], "/events/") - dirs[i]), dirs[i]);
			return;
		}
		denied |= errno == EACCES;
	}
	if (denied)
		printf("syscall tracepoints: unknown (tracefs is not readable without root)\n");
	else
		printf("syscall tracepoints: no (no tracefs or no CONFIG_FTRACE_SYSCALLS): "
		       "raw sys_enter/sys_exit\n");
}

/* Kernel addresses in /proc/kallsyms are zeros without CAP_SYSLOG (or with
 * kptr_restrict=2); then xfs log writes cannot be told from metadata. */
static void print_kallsyms(void)
{
	printf("kallsyms addresses: %s\n", ksyms_visible() ? "visible (xfs log writes recognised)" :
	       "hidden (needs CAP_SYSLOG, kptr_restrict < 2): xfs log counted as metadata");
}

static void print_privileges(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	unsigned long long caps = 0;
	char line[256];

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1)
			break;
	if (f)
		fclose(f);
	if (caps & (1ULL << CAP_SYS_ADMIN))
		printf("privileges: CAP_SYS_ADMIN (can trace)\n");
	else if ((caps & (1ULL << CAP_BPF)) && (caps & (1ULL << CAP_PERFMON)))
		printf("privileges: CAP_BPF, CAP_PERFMON (can trace)\n");
	else
		printf("privileges: tracing needs CAP_BPF and CAP_PERFMON (or root); "
		       "the lines above were read without them\n");
}

int cmd_version(void)
{
	struct utsname u;
	struct btf *btf;

	printf("amptrace %s\n", AMP_VERSION);
	printf("libbpf: %u.%u (built with %d.%d)\n", libbpf_major_version(),
	       libbpf_minor_version(), LIBBPF_MAJOR_VERSION, LIBBPF_MINOR_VERSION);
	if (!uname(&u))
		printf("kernel: %s %s\n", u.release, u.machine);
	/* libbpf prints its own warning when there is no BTF: ours says it. */
	libbpf_set_print(NULL);
	btf = kernel_btf();
	if (!btf) {
		printf("btf: none at /sys/kernel/btf/vmlinux (CONFIG_DEBUG_INFO_BTF): "
		       "amptrace needs --btf FILE here\n");
		print_privileges();
		return 0;
	}
	printf("btf: /sys/kernel/btf/vmlinux\n");
	printf("tp_btf: %s\n", yes_no(btf_has_enumerator(btf, "bpf_attach_type", "BPF_TRACE_RAW_TP") &&
				      kernel_has_tracepoint("block_rq_complete")));
	printf("ring buffer: %s\n", yes_no(btf_has_enumerator(btf, "bpf_map_type",
							      "BPF_MAP_TYPE_RINGBUF")));
	printf("task storage: %s\n", yes_no(btf_has_enumerator(btf, "bpf_map_type",
							       "BPF_MAP_TYPE_TASK_STORAGE")));
	printf("typed loads: %s\n", kernel_has_func("bpf_rdonly_cast") ?
	       "yes (bpf_rdonly_cast: request walks with typed loads)" :
	       "no (before 6.2): request walks with probe reads");
	if (kernel_has_tracepoint("writeback_dirty_folio"))
		printf("dirtying: folio era (writeback_dirty_folio)\n");
	else if (kernel_has_tracepoint("writeback_dirty_page"))
		printf("dirtying: page era (writeback_dirty_page)\n");
	else
		printf("dirtying: none (no writeback_dirty_folio or _page tracepoint): cannot trace\n");
	printf("jbd2 tracepoints: %s\n", kernel_has_tracepoint("jbd2_handle_start") ?
	       "yes (ext4 journal charged by cause)" :
	       "no (jbd2 not loaded now: ext4 journal charged by window)");
	print_syscall_events();
	print_kallsyms();
	print_privileges();
	kernel_btf_release();
	return 0;
}
