/* SPDX-License-Identifier: MIT */
/*
 * SipHash-2-4 with 128-bit output, streamed (siphash.c): the hash of the
 * data set keys, an index's (index.c) and a pack's (pack.c). Every
 * integer is fed little-endian, so a key is the same on any host.
 */
#ifndef DLC_SIPHASH_H
#define DLC_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

/*
 * SipHash is keyed and well analysed; the index key only has to tell data
 * sets apart, so the keys are fixed constants ("dlcache-" "index-v1").
 */
#define DLC_SIP_K0	0x2d65686361636c64ULL
#define DLC_SIP_K1	0x31762d7865646e69ULL

/* A hash being computed: dlc_sip_init(), dlc_sip_update(), dlc_sip_final(). */
struct dlc_sip {
	uint64_t v0, v1, v2, v3;
	uint64_t tail;
	unsigned int ntail;
	uint64_t len;
};

void dlc_sip_init(struct dlc_sip *s, uint64_t k0, uint64_t k1);
/* Feed @n bytes of @data; any split of the bytes gives the same hash. */
void dlc_sip_update(struct dlc_sip *s, const void *data, size_t n);
/* Feed @v as 4 (or 8) bytes, little-endian. */
void dlc_sip_u32(struct dlc_sip *s, uint32_t v);
void dlc_sip_u64(struct dlc_sip *s, uint64_t v);
/* The 128-bit hash of what was fed, in @out. Ends @s. */
void dlc_sip_final(struct dlc_sip *s, uint64_t out[2]);

/*
 * SipHash-2-4 with 128-bit output (the index key's hash) over @magic and
 * then the @n byte ranges @parts[i] of @lens[i] bytes. A pack's key
 * (pack.c) and an index's use different magics, so they never collide.
 */
void dlc_key128(const char *magic, const void *const *parts,
		const size_t *lens, unsigned int n, uint64_t key[2]);

#endif /* DLC_SIPHASH_H */
