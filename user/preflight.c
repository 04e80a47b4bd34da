// SPDX-License-Identifier: GPL-2.0
/* Up-front checks, each with a one-line answer instead of a libbpf errno. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "loader.h"

#define CAP_SYS_ADMIN 21
#define CAP_PERFMON 38
#define CAP_BPF 39

static int effective_caps(unsigned long long *caps)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	int found = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", caps) == 1) {
			found = 0;
			break;
		}
	fclose(f);
	return found;
}

int preflight_check(const char *btf_path)
{
	unsigned long long caps = 0;
	bool admin, bpf, perfmon;

	if (effective_caps(&caps)) {
		amp_err("cannot read capabilities from /proc/self/status");
		return -1;
	}
	admin = caps & (1ULL << CAP_SYS_ADMIN);
	bpf = caps & (1ULL << CAP_BPF);
	perfmon = caps & (1ULL << CAP_PERFMON);
	if (!admin && !(bpf && perfmon)) {
		amp_err("needs %s%s%s (or root): run as root",
			bpf ? "" : "CAP_BPF", !bpf && !perfmon ? " and " : "",
			perfmon ? "" : "CAP_PERFMON");
		return -1;
	}
	if (!btf_path && access("/sys/kernel/btf/vmlinux", R_OK)) {
		amp_err("no kernel BTF at /sys/kernel/btf/vmlinux (needs CONFIG_DEBUG_INFO_BTF); "
			"point --btf at a BTF file for this kernel");
		return -1;
	}
	return 0;
}
