// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel symbols, from /proc/kallsyms: xfs log writes are recognised by
 * their completion function (xlog_bio_end_io), whose address the block
 * stage compares.  Without CAP_SYSLOG, or with kptr_restrict=2, every
 * address reads 0 and the xfs log is counted as metadata.
 */
#include <stdio.h>
#include <string.h>
#include "trace/ksyms.h"

__u64 ksym_address(const char *name)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char sym[256], type;
	unsigned long long addr;
	__u64 found = 0;

	if (!f)
		return 0;
	while (fscanf(f, "%llx %c %255s%*[^\n]", &addr, &type, sym) == 3)
		if (!strcmp(sym, name)) {
			found = addr;
			break;
		}
	fclose(f);
	return found;
}

__u64 ksym_module_address(const char *name, const char *module)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char sym[256], mod[64], line[512], type;
	unsigned long long addr;
	__u64 found = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		int n = sscanf(line, "%llx %c %255s [%63[^]]]", &addr, &type, sym, mod);

		if (n >= 3 && !strcmp(sym, name) &&
		    (module ? n == 4 && !strcmp(mod, module) : n == 3)) {
			found = addr;
			break;
		}
	}
	fclose(f);
	return found;
}

bool ksyms_visible(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	unsigned long long addr = 0;

	if (f && fscanf(f, "%llx", &addr) != 1)
		addr = 0;
	if (f)
		fclose(f);
	return addr != 0;
}
