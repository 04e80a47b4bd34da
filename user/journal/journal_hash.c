// SPDX-License-Identifier: GPL-2.0
/*
 * The journal's two hash functions, written from their published
 * descriptions:
 *  - SipHash-2-4 (Aumasson & Bernstein, 2012), keyed by the file_id, for
 *    files with KEYED_HASH;
 *  - Bob Jenkins' lookup3 "hashlittle2" with both seeds 0, returned as
 *    (c << 32) | b, for older files and for every ENTRY's xor_hash.
 * Byte-wise little-endian loads throughout: input is unaligned file data.
 */
#include <string.h>
#include "journal/journal_file.h"

static inline uint64_t rotl64(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

static inline uint32_t rotl32(uint32_t x, int b)
{
	return (x << b) | (x >> (32 - b));
}

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static inline uint32_t load32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

struct sip {
	uint64_t v0, v1, v2, v3;
};

static void sip_round(struct sip *s, int n)
{
	while (n--) {
		s->v0 += s->v1;
		s->v1 = rotl64(s->v1, 13) ^ s->v0;
		s->v0 = rotl64(s->v0, 32);
		s->v2 += s->v3;
		s->v3 = rotl64(s->v3, 16) ^ s->v2;
		s->v0 += s->v3;
		s->v3 = rotl64(s->v3, 21) ^ s->v0;
		s->v2 += s->v1;
		s->v1 = rotl64(s->v1, 17) ^ s->v2;
		s->v2 = rotl64(s->v2, 32);
	}
}

uint64_t jf_siphash24(const void *data, size_t len, const uint8_t key[16])
{
	const uint8_t *p = data;
	uint64_t k0 = load64(key), k1 = load64(key + 8), m;
	/* "somepseudorandomlygeneratedbytes" */
	struct sip s = {
		k0 ^ 0x736f6d6570736575ULL, k1 ^ 0x646f72616e646f6dULL,
		k0 ^ 0x6c7967656e657261ULL, k1 ^ 0x7465646279746573ULL,
	};
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		m = load64(p + i);
		s.v3 ^= m;
		sip_round(&s, 2);
		s.v0 ^= m;
	}
	/* Last block: the remaining bytes, and the length in the top byte. */
	m = (uint64_t)len << 56;
	for (size_t j = 0; i + j < len; j++)
		m |= (uint64_t)p[i + j] << (8 * j);
	s.v3 ^= m;
	sip_round(&s, 2);
	s.v0 ^= m;
	s.v2 ^= 0xff;
	sip_round(&s, 4);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

/* lookup3's mix() and final(), on three 32-bit lanes. */
static void jmix(uint32_t *a, uint32_t *b, uint32_t *c)
{
	*a -= *c; *a ^= rotl32(*c, 4);  *c += *b;
	*b -= *a; *b ^= rotl32(*a, 6);  *a += *c;
	*c -= *b; *c ^= rotl32(*b, 8);  *b += *a;
	*a -= *c; *a ^= rotl32(*c, 16); *c += *b;
	*b -= *a; *b ^= rotl32(*a, 19); *a += *c;
	*c -= *b; *c ^= rotl32(*b, 4);  *b += *a;
}

static void jfinal(uint32_t *a, uint32_t *b, uint32_t *c)
{
	*c ^= *b; *c -= rotl32(*b, 14);
	*a ^= *c; *a -= rotl32(*c, 11);
	*b ^= *a; *b -= rotl32(*a, 25);
	*c ^= *b; *c -= rotl32(*b, 16);
	*a ^= *c; *a -= rotl32(*c, 4);
	*b ^= *a; *b -= rotl32(*a, 14);
	*c ^= *b; *c -= rotl32(*b, 24);
}

uint64_t jf_jenkins64(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t a, b, c;
	uint8_t tail[12] = { 0 };

	a = b = c = 0xdeadbeef + (uint32_t)len;	/* seeds pc = pb = 0 */
	while (len > 12) {
		a += load32(p);
		b += load32(p + 4);
		c += load32(p + 8);
		jmix(&a, &b, &c);
		p += 12;
		len -= 12;
	}
	/* An empty last block skips final(); a short one is zero-padded. */
	if (len) {
		memcpy(tail, p, len);
		a += load32(tail);
		b += load32(tail + 4);
		c += load32(tail + 8);
		jfinal(&a, &b, &c);
	}
	return (uint64_t)c << 32 | b;
}

uint64_t jf_hash(const struct jf *f, const void *p, size_t len)
{
	return f->keyed ? jf_siphash24(p, len, f->h.file_id) : jf_jenkins64(p, len);
}
