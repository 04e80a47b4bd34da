// SPDX-License-Identifier: GPL-2.0
/* The ground floor: see util.h. */
#include <argp.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util.h"

const char *amp_prog = "amptrace";
int amp_errors;

void amp_err(const char *fmt, ...)
{
	va_list ap;

	amp_errors++;
	fprintf(stderr, "%s: ", amp_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/*
 * ARGP_KEY_ERROR: getopt stays silent under ARGP_NO_ERRS, so name the
 * culprit, unless one of our own checks already said what was wrong.
 */
void amp_argp_error(const struct argp_state *state)
{
	if (!amp_errors && state->next > 0 && state->next <= state->argc)
		amp_err("unknown option or missing value: '%s' (try --help)",
			state->argv[state->next - 1]);
}

/*
 * --help, --usage: glibc's argp prints nothing under ARGP_NO_ERRS (its help
 * checks that flag), so print them here.  True if one was asked for.
 */
static bool help(const struct argp *argp, int argc, char **argv, const char *name)
{
	char prog[64];

	snprintf(prog, sizeof(prog), "%s", name);
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-?")) {
			argp_help(argp, stdout, ARGP_HELP_STD_HELP, prog);
			return true;
		}
		if (!strcmp(argv[i], "--usage")) {
			argp_help(argp, stdout, ARGP_HELP_USAGE, prog);
			return true;
		}
	}
	return false;
}

int amp_argp_parse(const struct argp *argp, int argc, char **argv, const char *name,
		   void *input)
{
	if (help(argp, argc, argv, name))
		return 1;
	return argp_parse(argp, argc, argv, ARGP_NO_EXIT | ARGP_NO_ERRS, NULL, input) ? -1 : 0;
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__s64 clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* *pp is a T *: read and written through memcpy, whatever T is. */
int amp_grow(void *pp, size_t *cap, size_t need, size_t size)
{
	size_t c = *cap ? *cap : 16;
	void *p, *q;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	memcpy(&p, pp, sizeof(p));
	q = realloc(p, c * size);
	if (!q)
		return -1;
	memcpy(pp, &q, sizeof(q));
	*cap = c;
	return 0;
}

/*
 * glibc gives memory back only from the heap's top.  The entries a tracer
 * holds come in bursts (a stall, a disk failing writes: thousands waiting
 * for their write-out) and are freed in arrival order, under the long-lived
 * rows allocated meanwhile: without this, RSS would stay at the highest
 * burst for the rest of a trace.  malloc_trim releases the free pages
 * inside the heap too.
 */
void amp_heap_trim(void)
{
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

void *amp_row(void *pp, size_t *n, size_t *cap, size_t size, const void *key, size_t key_len)
{
	char *v;

	memcpy(&v, pp, sizeof(v));
	for (size_t i = 0; i < *n; i++)
		if (!memcmp(v + i * size, key, key_len))
			return v + i * size;
	if (amp_grow(pp, cap, *n + 1, size))
		return NULL;
	memcpy(&v, pp, sizeof(v));
	v += (*n)++ * size;
	memset(v, 0, size);
	memcpy(v, key, key_len);
	return v;
}
