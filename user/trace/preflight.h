/* SPDX-License-Identifier: GPL-2.0 */
/* Up-front checks (privileges, BTF, features) and what the kernel offers. */
#ifndef AMPTRACE_PREFLIGHT_H
#define AMPTRACE_PREFLIGHT_H

#include <stdbool.h>

/* 0, or -1 after a one-line error (not root, no BTF, ...). */
int preflight_check(const char *btf_path);
bool kernel_has_tracepoint(const char *tp);
/* Does vmlinux's tracepoint tp pass a pointer to struct name first? */
bool tracepoint_arg_is(const char *tp, const char *name);
bool kernel_has_enum_value(const char *enum_name, const char *value);
bool kernel_has_func(const char *name);
/* A struct member's byte offset in vmlinux's or the module's BTF, or -1. */
int kernel_member_offset(const char *module, const char *type, const char *member);
struct btf;
struct btf *kernel_btf(void);	/* vmlinux BTF, parsed once; NULL if absent */
void kernel_btf_release(void);

#endif /* AMPTRACE_PREFLIGHT_H */
