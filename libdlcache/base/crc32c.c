// SPDX-License-Identifier: MIT
/*
 * CRC-32C, two ways: the SSE4.2 crc32 instruction (8 bytes a step, chosen
 * at run time by cpuid) and a portable slicing-by-8 table. Both give the
 * same values; tests/unit/test_crc32c.c checks each against the RFC 3720
 * vectors and a bitwise reference.
 */
#include <pthread.h>
#include <string.h>

#include "crc32c.h"

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define DLC_CRC32C_X86 1
#endif

#define POLY	0x82F63B78U	/* reflected Castagnoli */

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
	uint32_t i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = (c >> 1) ^ (POLY & (0U - (c & 1)));
		table[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (j = 1; j < 8; j++)
			table[j][i] = (table[j - 1][i] >> 8) ^
				      table[0][table[j - 1][i] & 0xff];
}

static inline uint64_t load_le64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

uint32_t dlc_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint32_t c = ~crc;

	pthread_once(&table_once, table_init);
	for (; len && ((uintptr_t)p & 7); len--)
		c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
	for (; len >= 8; len -= 8, p += 8) {
		uint64_t w = load_le64(p) ^ c;

		c = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^
		    table[5][(w >> 16) & 0xff] ^ table[4][(w >> 24) & 0xff] ^
		    table[3][(w >> 32) & 0xff] ^ table[2][(w >> 40) & 0xff] ^
		    table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
	}
	for (; len; len--)
		c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
	return ~c;
}

#ifdef DLC_CRC32C_X86
/*
 * crc32 has a latency of three cycles and a throughput of one a cycle, so
 * three independent streams over three adjacent blocks run about three
 * times faster than one; the streams are then joined by shifting a CRC
 * over a block of zeros (a linear map, applied by four byte tables), as
 * in Mark Adler's crc32c.c.
 */
#define LONG_BLOCK	8192
#define SHORT_BLOCK	256

static uint32_t zeros_long[4][256], zeros_short[4][256];
static pthread_once_t zeros_once = PTHREAD_ONCE_INIT;

static uint32_t gf2_times(const uint32_t *mat, uint32_t vec)
{
	uint32_t sum = 0;

	for (; vec; vec >>= 1, mat++)
		if (vec & 1)
			sum ^= *mat;
	return sum;
}

static void gf2_square(uint32_t *square, const uint32_t *mat)
{
	int n;

	for (n = 0; n < 32; n++)
		square[n] = gf2_times(mat, mat[n]);
}

/* The operator that feeds @len (a power of two) zero bytes to a CRC. */
static void zeros_op(uint32_t *even, size_t len)
{
	uint32_t odd[32], row = 1;
	int n;

	odd[0] = POLY;			/* one zero bit */
	for (n = 1; n < 32; n++) {
		odd[n] = row;
		row <<= 1;
	}
	gf2_square(even, odd);		/* two bits */
	gf2_square(odd, even);		/* four bits */
	for (;;) {
		gf2_square(even, odd);	/* one byte, then 4, 16, ... */
		len >>= 1;
		if (!len)
			return;
		gf2_square(odd, even);	/* two bytes, then 8, 32, ... */
		len >>= 1;
		if (!len)
			break;
	}
	memcpy(even, odd, sizeof(odd));
}

static void zeros_table(uint32_t zeros[4][256], size_t len)
{
	uint32_t op[32], n;

	zeros_op(op, len);
	for (n = 0; n < 256; n++) {
		zeros[0][n] = gf2_times(op, n);
		zeros[1][n] = gf2_times(op, n << 8);
		zeros[2][n] = gf2_times(op, n << 16);
		zeros[3][n] = gf2_times(op, n << 24);
	}
}

static void zeros_init(void)
{
	zeros_table(zeros_long, LONG_BLOCK);
	zeros_table(zeros_short, SHORT_BLOCK);
}

static inline uint32_t shift(uint32_t zeros[4][256], uint32_t crc)
{
	return zeros[0][crc & 0xff] ^ zeros[1][(crc >> 8) & 0xff] ^
	       zeros[2][(crc >> 16) & 0xff] ^ zeros[3][crc >> 24];
}

__attribute__((target("sse4.2")))
static inline uint64_t crc_word(uint64_t crc, const unsigned char *p)
{
#ifdef __x86_64__
	uint64_t w;

	memcpy(&w, p, sizeof(w));
	return _mm_crc32_u64(crc, w);
#else
	uint32_t a, b;

	memcpy(&a, p, 4);
	memcpy(&b, p + 4, 4);
	return _mm_crc32_u32(_mm_crc32_u32((uint32_t)crc, a), b);
#endif
}

/* Three streams over blocks of @block bytes while 3 x @block are left. */
#define THREE_WAY(block, zeros)						\
	while (len >= 3 * (block)) {					\
		uint64_t c1 = 0, c2 = 0;				\
		const unsigned char *end = p + (block);			\
									\
		do {							\
			c0 = crc_word(c0, p);				\
			c1 = crc_word(c1, p + (block));			\
			c2 = crc_word(c2, p + 2 * (block));		\
			p += 8;						\
		} while (p < end);					\
		c0 = shift(zeros, (uint32_t)c0) ^ (uint32_t)c1;		\
		c0 = shift(zeros, (uint32_t)c0) ^ (uint32_t)c2;		\
		p += 2 * (block);					\
		len -= 3 * (block);					\
	}

__attribute__((target("sse4.2")))
uint32_t dlc_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint64_t c0 = ~crc;

	pthread_once(&zeros_once, zeros_init);
	for (; len && ((uintptr_t)p & 7); len--)
		c0 = _mm_crc32_u8((uint32_t)c0, *p++);
	THREE_WAY(LONG_BLOCK, zeros_long)
	THREE_WAY(SHORT_BLOCK, zeros_short)
	for (; len >= 8; len -= 8, p += 8)
		c0 = crc_word(c0, p);
	for (; len; len--)
		c0 = _mm_crc32_u8((uint32_t)c0, *p++);
	return ~(uint32_t)c0;
}

int dlc_crc32c_hw_available(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("sse4.2");
}
#else
uint32_t dlc_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	return dlc_crc32c_sw(crc, buf, len);
}

int dlc_crc32c_hw_available(void)
{
	return 0;
}
#endif

/* 0: not chosen yet, 1: portable, 2: SSE4.2. */
static int impl;

uint32_t dlc_crc32c(uint32_t crc, const void *buf, size_t len)
{
	int i = __atomic_load_n(&impl, __ATOMIC_RELAXED);

	if (!i) {
		i = dlc_crc32c_hw_available() ? 2 : 1;
		__atomic_store_n(&impl, i, __ATOMIC_RELAXED);
	}
	return i == 2 ? dlc_crc32c_hw(crc, buf, len) :
			dlc_crc32c_sw(crc, buf, len);
}
