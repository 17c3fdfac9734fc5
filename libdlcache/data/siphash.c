// SPDX-License-Identifier: MIT
/*
 * SipHash-2-4 (Aumasson and Bernstein) with 128-bit output, streamed:
 * the hash of the data set keys (siphash.h). Every integer is fed
 * little-endian, so the hash is the same on any host.
 */
#include <string.h>

#include "siphash.h"

static inline uint64_t rotl64(uint64_t x, unsigned int b)
{
	return (x << b) | (x >> (64 - b));
}

static inline void sip_round(struct dlc_sip *s)
{
	s->v0 += s->v1; s->v1 = rotl64(s->v1, 13); s->v1 ^= s->v0;
	s->v0 = rotl64(s->v0, 32);
	s->v2 += s->v3; s->v3 = rotl64(s->v3, 16); s->v3 ^= s->v2;
	s->v0 += s->v3; s->v3 = rotl64(s->v3, 21); s->v3 ^= s->v0;
	s->v2 += s->v1; s->v1 = rotl64(s->v1, 17); s->v1 ^= s->v2;
	s->v2 = rotl64(s->v2, 32);
}

static inline void sip_word(struct dlc_sip *s, uint64_t m)
{
	s->v3 ^= m;
	sip_round(s);
	sip_round(s);
	s->v0 ^= m;
}

void dlc_sip_init(struct dlc_sip *s, uint64_t k0, uint64_t k1)
{
	s->v0 = 0x736f6d6570736575ULL ^ k0;
	s->v1 = 0x646f72616e646f6dULL ^ k1 ^ 0xee;
	s->v2 = 0x6c7967656e657261ULL ^ k0;
	s->v3 = 0x7465646279746573ULL ^ k1;
	s->tail = 0;
	s->ntail = 0;
	s->len = 0;
}

static inline uint64_t load_le64(const unsigned char *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
	       (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 |
	       (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
	       (uint64_t)p[7] << 56;
}

void dlc_sip_update(struct dlc_sip *s, const void *data, size_t n)
{
	const unsigned char *p = data;

	s->len += n;
	while (n && s->ntail) {
		s->tail |= (uint64_t)*p++ << (8 * s->ntail);
		n--;
		if (++s->ntail == 8) {
			sip_word(s, s->tail);
			s->tail = 0;
			s->ntail = 0;
		}
	}
	for (; n >= 8; p += 8, n -= 8)
		sip_word(s, load_le64(p));
	for (; n; n--)
		s->tail |= (uint64_t)*p++ << (8 * s->ntail++);
}

void dlc_sip_u32(struct dlc_sip *s, uint32_t v)
{
	unsigned char b[4] = { v, v >> 8, v >> 16, v >> 24 };

	dlc_sip_update(s, b, sizeof(b));
}

void dlc_sip_u64(struct dlc_sip *s, uint64_t v)
{
	dlc_sip_u32(s, (uint32_t)v);
	dlc_sip_u32(s, (uint32_t)(v >> 32));
}

void dlc_sip_final(struct dlc_sip *s, uint64_t out[2])
{
	uint64_t b = s->len << 56 | s->tail;
	int i;

	sip_word(s, b);
	s->v2 ^= 0xee;
	for (i = 0; i < 4; i++)
		sip_round(s);
	out[0] = s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
	s->v1 ^= 0xdd;
	for (i = 0; i < 4; i++)
		sip_round(s);
	out[1] = s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

void dlc_key128(const char *magic, const void *const *parts,
		const size_t *lens, unsigned int n, uint64_t key[2])
{
	struct dlc_sip s;
	unsigned int i;

	dlc_sip_init(&s, DLC_SIP_K0, DLC_SIP_K1);
	dlc_sip_update(&s, magic, strlen(magic));
	for (i = 0; i < n; i++)
		dlc_sip_update(&s, parts[i], lens[i]);
	dlc_sip_final(&s, key);
}
