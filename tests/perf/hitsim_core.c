// SPDX-License-Identifier: MIT
/*
 * Cache hit-ratio simulator core, shared by tests/perf/hitsim.c (make
 * bench) and tests/unit/test_hitsim.c (#included by both).
 *
 * The simulation itself (a trace of sample IDs with their sizes, and the
 * policies dlcache, LRU and MinIO) is dlcachectl whatif's,
 * tools/dlcachectl/hitsim.h, whose .c is included here. The references they are compared with are independent of the library
 * (tests/perf/optref.c): hs_belady_unit(), the exact optimum by count on
 * unit sizes, and hs_bound(), an upper bound on the hit bytes of any
 * policy with the real sizes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/dlcachectl/hitsim.c"
#include "optref.c"

/*
 * The exact optimum by count when every sample weighs 1 and @cap counts
 * samples (Belady MIN with bypass, tests/perf/optref.c): per-epoch results
 * into @res, bytes counted as 1 a sample. Returns 0 or -1.
 */
static int hs_belady_unit(const struct hs_trace *t, uint64_t cap,
			  struct hs_epoch_result *res)
{
	uint64_t T = (uint64_t)t->nepochs * t->epoch_len, k;
	uint8_t *hit = malloc(T ? T : 1);

	memset(res, 0, sizeof(*res) * t->nepochs);
	if (!hit || opt_belady_unit(t->ids, T, t->nsamples, cap, hit) < 0) {
		free(hit);
		return -1;
	}
	for (k = 0; k < T; k++) {
		struct hs_epoch_result *r = &res[k / t->epoch_len];

		r->reqs++;
		r->req_bytes++;
		r->hits += hit[k];
		r->hit_bytes += hit[k];
	}
	free(hit);
	return 0;
}

/*
 * An upper bound on the hit bytes any policy with @cap bytes gets in
 * epochs [@from, @to) of @t (tests/perf/optref.c). Returns it, or -1.
 */
static double hs_bound(const struct hs_trace *t, uint64_t cap, uint32_t from,
		       uint32_t to)
{
	uint64_t L = t->epoch_len;

	return opt_bound_bytes(t->ids, (uint64_t)t->nepochs * L, t->nsamples,
			       t->size, cap, from * L, to * L);
}

/* splitmix64, for the repeats order. */
static uint64_t hs_rnd(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * An order with repeats: @len draws with replacement from @n samples, a
 * sample drawn with probability proportional to its weight. Two classes:
 * the samples whose (id * 2654435761) % 100 < @hot_pct weigh @hot_weight,
 * the rest 1 (a hashed class so that hot samples are spread over the
 * classes). Deterministic in (@seed, @epoch).
 */
static void hs_repeats_order(uint32_t n, uint32_t hot_pct, uint32_t hot_weight,
			     uint64_t seed, uint32_t epoch, uint32_t *out,
			     uint32_t len)
{
	uint64_t st = seed * 0x2545f4914f6cdd1dULL + epoch + 1, total = 0, r;
	uint32_t i, lo, hi;
	uint64_t *cum = malloc(sizeof(uint64_t) * n);

	if (!cum) {
		for (i = 0; i < len; i++)
			out[i] = (uint32_t)(hs_rnd(&st) % n);
		return;
	}
	for (i = 0; i < n; i++) {
		total += ((uint64_t)i * 2654435761ULL) % 100 < hot_pct ? hot_weight : 1;
		cum[i] = total;
	}
	for (i = 0; i < len; i++) {
		r = hs_rnd(&st) % total;
		lo = 0;
		hi = n - 1;
		while (lo < hi) {	/* first cum > r */
			uint32_t mid = lo + (hi - lo) / 2;

			if (cum[mid] > r)
				hi = mid;
			else
				lo = mid + 1;
		}
		out[i] = lo;
	}
	free(cum);
}

#include "hitsim_jobs.c"
