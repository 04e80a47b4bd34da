/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Journal objects for people: who owns an object (a field name or a
 * "(structure)"), and one object as a line of text or a JSON object.  No
 * payload is shown unless show_values.
 */
#ifndef AMPTRACE_JOURNAL_SHOW_H
#define AMPTRACE_JOURNAL_SHOW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "journal/journal_file.h"

struct json_object;

/* Field names are [A-Z0-9_] in valid files; anything else shows as '?'. */
const char *jf_clean_name(const uint8_t *p, size_t n, char *buf, size_t len);
/* Who owns object o: a field name or a "(structure)"; written into buf. */
const char *jf_object_owner(struct jf *f, const struct jf_object *o, char *buf, size_t len);
/* "zstd", "xz", "lz4", or NULL for a DATA object's compression flags. */
const char *jf_compression(uint8_t flags);
/* "0x1f08  DATA  83  MESSAGE  payload ..." then mark, after indent. */
void jf_print_object(FILE *out, struct jf *f, const struct jf_object *o, bool show_values,
		     const char *indent, const char *mark);
struct json_object *jf_object_json(struct jf *f, const struct jf_object *o, bool show_values);
/* A value: a string if printable, else its bytes (as journalctl -o json). */
struct json_object *jf_value_json(const uint8_t *p, uint64_t len);

#endif /* AMPTRACE_JOURNAL_SHOW_H */
