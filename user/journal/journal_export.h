/* SPDX-License-Identifier: GPL-2.0 */
/*
 * journalctl's export format (`journalctl -o export`), for the reader's
 * --entries view and for explain's plain-append cost of a field.
 */
#ifndef AMPTRACE_JOURNAL_EXPORT_H
#define AMPTRACE_JOURNAL_EXPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "journal/journal_file.h"

/* A 128-bit id as 32 hex digits. */
void jf_hex128(const uint8_t id[16], char out[33]);
/* journalctl's rule for a text line; anything else is exported binary. */
bool jf_export_printable(const uint8_t *p, uint64_t len);
/* Bytes of one field ("NAME=value") in the export format. */
uint64_t jf_export_field_size(const uint8_t *payload, uint64_t len);
/* One field, as journalctl exports it. */
void jf_export_field(FILE *out, const uint8_t *p, uint64_t len);
/* The record's head (cursor, timestamps) into buf; its length. */
int jf_export_header(const struct jf *f, const struct jf_object *e, char *buf, size_t len);
/* Bytes of the entry's export record, per-field lines excluded. */
uint64_t jf_export_entry_overhead(const struct jf *f, const struct jf_object *e);

#endif /* AMPTRACE_JOURNAL_EXPORT_H */
