/* SPDX-License-Identifier: GPL-2.0 */
/* Kernel symbols, from /proc/kallsyms. */
#ifndef AMPTRACE_KSYMS_H
#define AMPTRACE_KSYMS_H

#include <linux/types.h>
#include <stdbool.h>

/* A kernel text symbol's address, 0 if absent or hidden (kptr_restrict). */
__u64 ksym_address(const char *name);
/* The same for a module's symbol ("addr t name [module]"), or with
 * module NULL for a built-in one only. */
__u64 ksym_module_address(const char *name, const char *module);
/* Are addresses shown at all (CAP_SYSLOG, kptr_restrict < 2)? */
bool ksyms_visible(void);

#endif /* AMPTRACE_KSYMS_H */
