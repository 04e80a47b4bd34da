/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ground floor of user/: one-line errors, the argp wrapper every
 * command uses, clocks, growable arrays.  Includes nothing of amptrace, so
 * any file may include it.
 */
#ifndef AMPTRACE_UTIL_H
#define AMPTRACE_UTIL_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

extern const char *amp_prog;	/* "amptrace": the prefix of every error */
extern int amp_errors;		/* one-line errors printed so far */
/* Every user-facing error is one line on stderr: "amptrace: ...". */
void amp_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * A command line through argp, with our own one-line errors (ARGP_NO_EXIT,
 * ARGP_NO_ERRS), and --help/--usage printed as NAME ("amptrace trace").
 * 0: run; 1: help printed; -1: error, already reported.  A parser calls
 * amp_argp_error() on ARGP_KEY_ERROR.
 */
struct argp;
struct argp_state;
int amp_argp_parse(const struct argp *argp, int argc, char **argv, const char *name,
		   void *input);
void amp_argp_error(const struct argp_state *state);

/* Seconds on CLOCK_MONOTONIC: periods and durations. */
double now_s(void);
/* Nanoseconds on any clock (CLOCK_BOOTTIME is the kernel side's). */
__s64 clock_ns(clockid_t id);

/*
 * Growable arrays: a pointer, a count and a capacity of the caller's.
 * amp_grow makes room for `need` elements of `size` bytes (*pp is a T **):
 * 0, or -1 with the array unchanged.  amp_row finds the element that begins
 * with the key_len bytes of key, or appends one (zeroed, key copied in):
 * the per-pid (per-file, ...) tables of the outputs; NULL if out of memory.
 */
int amp_grow(void *pp, size_t *cap, size_t need, size_t size);
/* Hand the heap's free pages back to the kernel (see util.c). */
void amp_heap_trim(void);
void *amp_row(void *pp, size_t *n, size_t *cap, size_t size, const void *key, size_t key_len);

#endif /* AMPTRACE_UTIL_H */
