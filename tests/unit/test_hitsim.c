// SPDX-License-Identifier: MIT
/*
 * The hit-ratio simulator of `make bench` (tests/perf/hitsim_core.c): LRU,
 * MinIO and the dlcache policy on tiny hand-computed traces; then on
 * dlcache's real shuffles the policy reaches capacity/size in steady state
 * while LRU does worse, and on an order with repeats it beats MinIO.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "dlcache.h"
#include "helpers/testutil.h"
#include "../perf/hitsim_core.c"

static void run(enum hs_policy pol, const uint64_t *size, uint32_t n,
		const uint32_t *ids, uint32_t nepochs, uint32_t len, uint64_t cap,
		struct hs_epoch_result *r)
{
	struct hs_trace t = { n, size, nepochs, len, ids };

	CHECK(hs_run(pol, &t, cap, r) == 0, "hs_run %s", hs_policy_names[pol]);
}

static void tiny(void)
{
	static const uint64_t unit[3] = { 1, 1, 1 }, sized[3] = { 3, 2, 1 };
	/* Epoch 0: 0 1 2; epoch 1: 0 2 1. Two unit slots. */
	static const uint32_t a[6] = { 0, 1, 2, 0, 2, 1 };
	/* One epoch 0 1 0 2 0 1. */
	static const uint32_t b[6] = { 0, 1, 0, 2, 0, 1 };
	static const uint32_t c[6] = { 0, 1, 2, 0, 1, 2 };
	struct hs_epoch_result r[2];

	/*
	 * dlcache: at 2 (position 2) the cache holds 0 (next use 3) and 1
	 * (next use 5): 1 goes, 2 (next use 4) comes in; epoch 1 hits 0, 2.
	 */
	run(HS_DLCACHE, unit, 3, a, 2, 3, 2, r);
	CHECK_EQ(r[0].hits, 0);
	CHECK_EQ(r[1].hits, 2);
	CHECK_EQ(r[1].reqs, 3);
	/* LRU evicts 0 for 2, then 1 for 0: epoch 1 hits 2 only. */
	run(HS_LRU, unit, 3, a, 2, 3, 2, r);
	CHECK_EQ(r[1].hits, 1);
	/* MinIO keeps 0 and 1: hits 0 and 1. */
	run(HS_MINIO, unit, 3, a, 2, 3, 2, r);
	CHECK_EQ(r[1].hits, 2);
	run(HS_BELADY, unit, 3, a, 2, 3, 2, r);
	CHECK_EQ(r[1].hits, 2);

	/* LRU, 0 1 0 2 0 1: hit at 0, 2 evicts 1, hit at 0, 1 misses. */
	run(HS_LRU, unit, 3, b, 1, 6, 2, r);
	CHECK_EQ(r[0].hits, 2);
	/* dlcache: 2 is never used again and bypasses: hits 0, 0, 1. */
	run(HS_DLCACHE, unit, 3, b, 1, 6, 2, r);
	CHECK_EQ(r[0].hits, 3);
	/* Cyclic: LRU never hits, MinIO hits what it first admitted. */
	run(HS_LRU, unit, 3, c, 1, 6, 2, r);
	CHECK_EQ(r[0].hits, 0);
	run(HS_MINIO, unit, 3, c, 1, 6, 2, r);
	CHECK_EQ(r[0].hits, 2);

	/*
	 * Sizes 3, 2, 1 in 4 bytes, MinIO: 0 fits (3), 1 does not (5), 2
	 * fits (4); then 0 and 2 hit: 2 hits, 4 bytes of 12 requested.
	 */
	run(HS_MINIO, sized, 3, c, 1, 6, 4, r);
	CHECK_EQ(r[0].hits, 2);
	CHECK_EQ(r[0].hit_bytes, 4);
	CHECK_EQ(r[0].req_bytes, 12);
	/*
	 * dlcache, the same: 0 in; 1 (next use 4) would evict 0 (next use 3):
	 * bypassed; 2 fits; 0 hits; 1 (no next use) bypasses; 2 hits.
	 */
	run(HS_DLCACHE, sized, 3, c, 1, 6, 4, r);
	CHECK_EQ(r[0].hits, 2);
}

static void shuffles(void)
{
	enum { N = 2000, E = 4 };
	struct dlc_order_params op = { 7, 0, 0, 1, 1, 0, 0 };
	uint64_t *size = malloc(sizeof(uint64_t) * N), total = 0, st;
	uint32_t *ids = malloc(sizeof(uint32_t) * N * E), i, e;
	struct hs_epoch_result r[E], s_dl, s_lru, s_mi, s_be;
	uint64_t cap;

	if (!size || !ids) {
		CHECK(0, "out of memory");
		return;
	}
	st = 1;
	for (i = 0; i < N; i++) {
		size[i] = 20000 + hs_rnd(&st) % 100000;
		total += size[i];
	}
	cap = total / 2;
	for (e = 0; e < E; e++) {
		op.epoch = e;
		CHECK(dlc_order_fill(N, &op, ids + (size_t)e * N, N) == 0);
	}
	run(HS_DLCACHE, size, N, ids, E, N, cap, r);
	CHECK_EQ(r[0].hits, 0);
	hs_sum(r, 1, E, &s_dl);
	run(HS_LRU, size, N, ids, E, N, cap, r);
	hs_sum(r, 1, E, &s_lru);
	CHECK(hs_hit_ratio(&s_dl, 1) > 0.49 && hs_hit_ratio(&s_dl, 1) < 0.51,
	      "permutation: dlcache steady byte hit ratio %.4f, want ~0.5",
	      hs_hit_ratio(&s_dl, 1));
	CHECK(hs_hit_ratio(&s_lru, 1) < hs_hit_ratio(&s_dl, 1) - 0.2,
	      "permutation: LRU %.4f should be well below dlcache %.4f",
	      hs_hit_ratio(&s_lru, 1), hs_hit_ratio(&s_dl, 1));

	for (e = 0; e < E; e++)
		hs_repeats_order(N, 20, 4, 0, e, ids + (size_t)e * N, N);
	run(HS_DLCACHE, size, N, ids, E, N, cap, r);
	hs_sum(r, 1, E, &s_dl);
	run(HS_MINIO, size, N, ids, E, N, cap, r);
	hs_sum(r, 1, E, &s_mi);
	run(HS_BELADY, size, N, ids, E, N, cap, r);
	hs_sum(r, 1, E, &s_be);
	CHECK(hs_hit_ratio(&s_dl, 1) > hs_hit_ratio(&s_mi, 1) + 0.05,
	      "repeats: dlcache %.4f should beat MinIO %.4f",
	      hs_hit_ratio(&s_dl, 1), hs_hit_ratio(&s_mi, 1));
	CHECK(hs_hit_ratio(&s_be, 0) >= hs_hit_ratio(&s_dl, 0) - 0.005,
	      "repeats: whole-trace Belady %.4f below the windowed policy %.4f",
	      hs_hit_ratio(&s_be, 0), hs_hit_ratio(&s_dl, 0));
	free(size);
	free(ids);
}

int main(void)
{
	tiny();
	shuffles();
	return t_done("hitsim");
}
