// SPDX-License-Identifier: GPL-2.0
/*
 * Up-front checks, each with a one-line answer instead of a libbpf errno:
 * privileges, BTF, and the kernel features the core chain needs.
 */
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "util.h"
#include "trace/preflight.h"

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

/* Parsed once (~20 ms each time here): start-up asks about half a dozen
 * tracepoints.  Released once the programs are loaded. */
static struct btf *vmlinux;

struct btf *kernel_btf(void)
{
	if (!vmlinux)
		vmlinux = btf__load_vmlinux_btf();
	return vmlinux;
}

void kernel_btf_release(void)
{
	btf__free(vmlinux);
	vmlinux = NULL;
}

/*
 * Is there a tracepoint of this name, in vmlinux or in a loaded module
 * (jbd2, xfs and btrfs are modules on many distributions)?  Asks BTF for
 * its btf_trace_<name> typedef, which is what tp_btf attaches to.
 */
bool kernel_has_tracepoint(const char *tp)
{
	struct btf *kernel = kernel_btf(), *mod;
	char name[128], path[300];
	struct dirent *d;
	bool found;
	DIR *dir;

	if (!kernel)
		return false;
	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	found = btf__find_by_name_kind(kernel, name, BTF_KIND_TYPEDEF) > 0;
	dir = found ? NULL : opendir("/sys/kernel/btf");
	while (dir && !found && (d = readdir(dir))) {
		if (d->d_name[0] == '.' || !strcmp(d->d_name, "vmlinux"))
			continue;
		snprintf(path, sizeof(path), "/sys/kernel/btf/%s", d->d_name);
		mod = btf__parse_split(path, kernel);
		if (!mod)
			continue;
		found = btf__find_by_name_kind(mod, name, BTF_KIND_TYPEDEF) > 0;
		btf__free(mod);
	}
	if (dir)
		closedir(dir);
	return found;
}

/*
 * Does vmlinux's tracepoint tp pass, as its first argument, a pointer to
 * struct name (a folio, where older kernels passed a page)?  Its
 * btf_trace_ typedef is a pointer to a prototype whose first parameter is
 * the tracepoint's context; the arguments follow.
 */
bool tracepoint_arg_is(const char *tp, const char *name)
{
	struct btf *kernel = kernel_btf();
	const struct btf_param *params;
	const struct btf_type *t;
	char typedef_name[128];
	int id;

	if (!kernel)
		return false;
	snprintf(typedef_name, sizeof(typedef_name), "btf_trace_%s", tp);
	id = btf__find_by_name_kind(kernel, typedef_name, BTF_KIND_TYPEDEF);
	if (id <= 0)
		return false;
	t = btf__type_by_id(kernel, btf__resolve_type(kernel, id));	/* the pointer */
	if (!t || !btf_is_ptr(t))
		return false;
	t = btf__type_by_id(kernel, t->type);
	if (!t || !btf_is_func_proto(t) || btf_vlen(t) < 2)
		return false;
	params = btf_params(t);
	t = btf__type_by_id(kernel, btf__resolve_type(kernel, params[1].type));
	if (!t || !btf_is_ptr(t))
		return false;
	t = btf__type_by_id(kernel, btf__resolve_type(kernel, t->type));
	return t && btf_is_struct(t) && !strcmp(btf__name_by_offset(kernel, t->name_off), name);
}

/*
 * Does the kernel's BTF have this value in this enum (e.g. bpf_func_id's
 * "BPF_FUNC_loop": the kernel knows the helper)?  Asked of BTF rather than
 * by loading a probe program: where audit is on, every program load is an
 * audit record that journald writes to disk (see startup.c).
 */
bool kernel_has_enum_value(const char *enum_name, const char *value)
{
	struct btf *kernel = kernel_btf();
	const struct btf_type *t;
	const struct btf_enum *v;
	int id;

	if (!kernel)
		return false;
	id = btf__find_by_name_kind(kernel, enum_name, BTF_KIND_ENUM);
	if (id <= 0)
		return false;
	t = btf__type_by_id(kernel, id);
	v = btf_enum(t);
	for (int i = 0; i < btf_vlen(t); i++)
		if (!strcmp(btf__name_by_offset(kernel, v[i].name_off), value))
			return true;
	return false;
}

/*
 * The byte offset of a struct's member, from vmlinux's BTF or else the
 * module's (/sys/kernel/btf/MODULE, a file anyone may read); -1 if either
 * is not there.  For the BPF side to read a module's structs by offset:
 * a CO-RE relocation against a module's type makes libbpf open every
 * module's BTF by id, which needs CAP_SYS_ADMIN (the exporter runs
 * without).
 */
int kernel_member_offset(const char *module, const char *type, const char *member)
{
	struct btf *kernel = kernel_btf(), *mod = NULL, *btf = kernel;
	const struct btf_member *m;
	const struct btf_type *t;
	char path[300];
	int id, off = -1;

	if (!kernel)
		return -1;
	id = btf__find_by_name_kind(kernel, type, BTF_KIND_STRUCT);
	if (id <= 0) {
		snprintf(path, sizeof(path), "/sys/kernel/btf/%s", module);
		mod = btf__parse_split(path, kernel);
		btf = mod;
		id = mod ? btf__find_by_name_kind(mod, type, BTF_KIND_STRUCT) : -1;
	}
	if (id > 0) {
		t = btf__type_by_id(btf, id);
		m = btf_members(t);
		for (int i = 0; i < btf_vlen(t); i++)
			if (!strcmp(btf__name_by_offset(btf, m[i].name_off), member))
				off = btf_member_bit_offset(t, i) / 8;
	}
	btf__free(mod);
	return off;
}

/* Does vmlinux's BTF have this function (e.g. the kfunc bpf_rdonly_cast)? */
bool kernel_has_func(const char *name)
{
	struct btf *kernel = kernel_btf();

	return kernel && btf__find_by_name_kind(kernel, name, BTF_KIND_FUNC) > 0;
}

/* What the core chain cannot do without, each with the kernel that has it. */
static int check_kernel_features(void)
{
	static const struct {
		const char *tp, *why;
	} needed[] = {
		{ "sys_enter", "raw syscall tracepoints" },
		{ "block_rq_complete", "the block_rq_complete tracepoint" },
	};

	if (!kernel_has_enum_value("bpf_map_type", "BPF_MAP_TYPE_RINGBUF")) {
		amp_err("needs the BPF ring buffer (Linux 5.8+)");
		return -1;
	}
	if (!kernel_has_tracepoint("writeback_dirty_folio") &&
	    !kernel_has_tracepoint("writeback_dirty_page")) {
		amp_err("needs the writeback_dirty_folio (5.17+) or writeback_dirty_page tracepoint, "
			"not in this kernel's BTF");
		return -1;
	}
	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++)
		if (!kernel_has_tracepoint(needed[i].tp)) {
			amp_err("needs %s, not in this kernel's BTF", needed[i].why);
			return -1;
		}
	return 0;
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
	return btf_path ? 0 : check_kernel_features();
}
