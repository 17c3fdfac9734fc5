// SPDX-License-Identifier: MIT
/*
 * CRC-32C: the SSE4.2 path and the portable table path, each against the
 * RFC 3720 (iSCSI) B.4 test vectors and against a bitwise reference
 * written here (one polynomial step per bit, no table), over random
 * lengths and alignments, whole and in pieces. Exit 0 pass, 1 fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"

#include "helpers/testutil.h"

/* The definition: reflected 0x1EDC6F41, init and final xor ~0. */
static uint32_t ref_crc32c(uint32_t crc, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	uint32_t c = ~crc;
	size_t i;
	int b;

	for (i = 0; i < n; i++) {
		c ^= p[i];
		for (b = 0; b < 8; b++)
			c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
	}
	return ~c;
}

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static void test_vectors(const char *name, crc_fn f)
{
	/* RFC 3720 B.4, and the classic check value. */
	static const uint8_t read10[48] = {
		0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
		0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
		0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	uint8_t buf[32];
	uint32_t got;
	int i;

	memset(buf, 0, sizeof(buf));
	got = f(0, buf, 32);
	CHECK(got == 0x8A9136AAu, "%s: 32 zero bytes: %08x", name, got);
	memset(buf, 0xff, sizeof(buf));
	got = f(0, buf, 32);
	CHECK(got == 0x62A8AB43u, "%s: 32 0xff bytes: %08x", name, got);
	for (i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	got = f(0, buf, 32);
	CHECK(got == 0x46DD794Eu, "%s: incrementing: %08x", name, got);
	for (i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	got = f(0, buf, 32);
	CHECK(got == 0x113FDB5Cu, "%s: decrementing: %08x", name, got);
	got = f(0, read10, sizeof(read10));
	CHECK(got == 0xD9963A56u, "%s: iSCSI read(10) PDU: %08x", name, got);
	got = f(0, "123456789", 9);
	CHECK(got == 0xE3069283u, "%s: \"123456789\": %08x", name, got);
	got = f(0, "", 0);
	CHECK(got == 0, "%s: empty: %08x", name, got);
}

/* Random data at every alignment, random lengths, whole and split. */
static void test_random(const char *name, crc_fn f)
{
	size_t cap = 70000, len, off, cut, i;
	uint8_t *buf = malloc(cap + 64);
	int round, bad = 0;

	if (!buf) {
		CHECK(0, "out of memory");
		return;
	}
	for (i = 0; i < cap + 64; i++)
		buf[i] = (uint8_t)t_rand();
	for (round = 0; round < 3000 && bad < 5; round++) {
		uint32_t want, got, part;

		off = (size_t)(t_rand() % 64);
		/* Mostly short (the tails and alignment heads), some long. */
		len = round % 10 ? (size_t)(t_rand() % 300) :
				   (size_t)(t_rand() % cap);
		want = ref_crc32c(0, buf + off, len);
		got = f(0, buf + off, len);
		if (got != want) {
			CHECK(0, "%s: len %zu at offset %zu: %08x, want %08x",
			      name, len, off, got, want);
			bad++;
		}
		cut = len ? (size_t)(t_rand() % (len + 1)) : 0;
		part = f(0, buf + off, cut);
		got = f(part, buf + off + cut, len - cut);
		if (got != want) {
			CHECK(0, "%s: len %zu split at %zu: %08x, want %08x",
			      name, len, cut, got, want);
			bad++;
		}
	}
	/* One flipped bit anywhere changes the value. */
	for (round = 0; round < 200; round++) {
		uint32_t a, b;

		len = 1 + (size_t)(t_rand() % 5000);
		a = f(0, buf, len);
		i = (size_t)(t_rand() % (len * 8));
		buf[i / 8] ^= (uint8_t)(1u << (i % 8));
		b = f(0, buf, len);
		buf[i / 8] ^= (uint8_t)(1u << (i % 8));
		CHECK(a != b, "%s: bit %zu of %zu flipped, same crc", name, i, len);
	}
	free(buf);
}

int main(void)
{
	int hw = dlc_crc32c_hw_available();

	t_rng = 0x3720;
	/* The reference itself must give the RFC's values. */
	T_RUN_AS("test_vectors/bitwise_reference", test_vectors, "bitwise reference", ref_crc32c);
	T_RUN_AS("test_vectors/table", test_vectors, "table", dlc_crc32c_sw);
	T_RUN_AS("test_random/table", test_random, "table", dlc_crc32c_sw);
	if (hw) {
		T_RUN_AS("test_vectors/sse4.2", test_vectors, "sse4.2", dlc_crc32c_hw);
		T_RUN_AS("test_random/sse4.2", test_random, "sse4.2", dlc_crc32c_hw);
	} else {
		t_skip("sse4.2", "no SSE4.2 on this CPU: the hardware path is not tested");
	}
	T_RUN_AS("test_vectors/dispatch", test_vectors, "dispatch", dlc_crc32c);
	T_RUN_AS("test_random/dispatch", test_random, "dispatch", dlc_crc32c);
	printf("note: hardware path %s\n", hw ? "tested" : "absent");
	return t_done("test_crc32c");
}
