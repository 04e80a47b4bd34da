// SPDX-License-Identifier: GPL-2.0
/* journalctl's export format: see journal_export.h. */
#include <endian.h>
#include <stdio.h>
#include <string.h>
#include "journal/journal_export.h"

void jf_hex128(const uint8_t id[16], char out[33])
{
	for (int i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
}

/* journalctl's rule for a text line: valid UTF-8, no control characters
 * but tab, no newline.  Anything else is exported in binary form. */
bool jf_export_printable(const uint8_t *p, uint64_t len)
{
	uint64_t i = 0;

	while (i < len) {
		uint32_t c = p[i];
		unsigned n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 :
			     (c & 0xf8) == 0xf0 ? 4 : 0;

		if (!n || i + n > len)
			return false;
		if (n > 1)
			c &= 0x7f >> n;
		for (unsigned k = 1; k < n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			c = c << 6 | (p[i + k] & 0x3f);
		}
		if ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && c < 0x10000) ||
		    c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff) ||
		    (c >= 0xfdd0 && c <= 0xfdef) || (c & 0xfffe) == 0xfffe ||
		    (c < 0x20 && c != '\t') || (c >= 0x7f && c <= 0x9f))
			return false;
		i += n;
	}
	return true;
}

uint64_t jf_export_field_size(const uint8_t *p, uint64_t len)
{
	const uint8_t *eq = memchr(p, '=', len);

	if (jf_export_printable(p, len) || !eq)
		return len + 1;
	return (eq - p) + 1 + 8 + (len - (eq - p) - 1) + 1;	/* NAME\n le64 value\n */
}

void jf_export_field(FILE *out, const uint8_t *p, uint64_t len)
{
	const uint8_t *eq = memchr(p, '=', len);
	uint64_t vlen, le;

	if (jf_export_printable(p, len) || !eq) {
		fwrite(p, 1, len, out);
	} else {
		vlen = len - (eq - p) - 1;
		le = htole64(vlen);
		fwrite(p, 1, eq - p, out);
		fputc('\n', out);
		fwrite(&le, 1, 8, out);
		fwrite(eq + 1, 1, vlen, out);
	}
	fputc('\n', out);
}

/* The record's head as the journalctl of the release that wrote the file
 * prints it: from 254 on (the 272-byte header) journalctl also exports
 * __SEQNUM and __SEQNUM_ID.  (The format is journalctl's, not the file's:
 * 252's journalctl prints a 257 file without them, 257's a 252 file with.) */
int jf_export_header(const struct jf *f, const struct jf_object *e, char *buf, size_t len)
{
	char sid[33], bid[33];
	int n;

	jf_hex128(f->h.seqnum_id, sid);
	jf_hex128(e->entry.boot_id, bid);
	n = snprintf(buf, len,
		"__CURSOR=s=%s;i=%llx;b=%s;m=%llx;t=%llx;x=%llx\n"
		"__REALTIME_TIMESTAMP=%llu\n__MONOTONIC_TIMESTAMP=%llu\n",
		sid, (unsigned long long)e->entry.seqnum, bid,
		(unsigned long long)e->entry.monotonic, (unsigned long long)e->entry.realtime,
		(unsigned long long)e->entry.xor_hash, (unsigned long long)e->entry.realtime,
		(unsigned long long)e->entry.monotonic);
	if (f->h.header_size >= JF_HEADER_SIZE_254 && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - n, "__SEQNUM=%llu\n__SEQNUM_ID=%s\n",
			      (unsigned long long)e->entry.seqnum, sid);
	return n;
}

uint64_t jf_export_entry_overhead(const struct jf *f, const struct jf_object *e)
{
	char buf[512];

	/* Cursor and timestamps, then the blank line ending the record.  The
	 * _BOOT_ID line is the _BOOT_ID field's. */
	return jf_export_header(f, e, buf, sizeof(buf)) + 1;
}
