// SPDX-License-Identifier: MIT
/*
 * Cache hit-ratio simulator core, shared by tests/perf/hitsim.c (make
 * bench) and tests/unit/test_hitsim.c (#included by both).
 *
 * A trace is a list of epochs, each a list of sample IDs; every sample has
 * a size in bytes. Policies, all over a capacity in bytes:
 *   HS_DLCACHE  the library's own in-process cache
 *               (libdlcache/cache/cache.c, over policy.c), driven as the
 *               loader drives it: dlc_cache_prepare_epoch() when an
 *               epoch starts, dlc_cache_advance() and dlc_cache_lookup()
 *               per position, dlc_cache_offer() on a miss. (The loader
 *               offers when the read completes, up to a queue depth
 *               later; the simulator offers at once.) Buffers carry the
 *               sample's size, no data.
 *   HS_LRU      admit every sample, evict the least recently used.
 *   HS_MINIO    CoorDL's MinIO: admit while there is room, never evict.
 * The references they are compared with are independent of the library
 * (tests/perf/optref.c): hs_belady_unit(), the exact optimum by count on
 * unit sizes, and hs_bound(), an upper bound on the hit bytes of any
 * policy with the real sizes.
 * Hits and requests are counted per epoch, both by count and by bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "internal.h"
#include "policy.h"
#include "optref.c"

#define HS_NIL UINT32_MAX

enum hs_policy { HS_DLCACHE, HS_LRU, HS_MINIO, HS_POLICIES };

static const char *const hs_policy_names[HS_POLICIES] = {
	"dlcache", "lru", "minio",
};

struct hs_epoch_result {
	uint64_t reqs, hits;
	uint64_t req_bytes, hit_bytes;
};

struct hs_trace {
	uint32_t nsamples;
	const uint64_t *size;		/* per sample */
	uint32_t nepochs;
	uint32_t epoch_len;		/* every epoch has this many positions */
	const uint32_t *ids;		/* nepochs * epoch_len */
};

static double hs_hit_ratio(const struct hs_epoch_result *r, int bytes)
{
	if (bytes)
		return r->req_bytes ? (double)r->hit_bytes / (double)r->req_bytes : 0.0;
	return r->reqs ? (double)r->hits / (double)r->reqs : 0.0;
}

/* Sum of epochs [from, to) into *out. */
static void hs_sum(const struct hs_epoch_result *r, uint32_t from, uint32_t to,
		   struct hs_epoch_result *out)
{
	uint32_t e;

	memset(out, 0, sizeof(*out));
	for (e = from; e < to; e++) {
		out->reqs += r[e].reqs;
		out->hits += r[e].hits;
		out->req_bytes += r[e].req_bytes;
		out->hit_bytes += r[e].hit_bytes;
	}
}

struct hs_lru {
	uint32_t *prev, *next;
	uint32_t head, tail;	/* head: most recent */
};

static void lru_unlink(struct hs_lru *l, uint32_t id)
{
	if (l->prev[id] != HS_NIL)
		l->next[l->prev[id]] = l->next[id];
	else
		l->head = l->next[id];
	if (l->next[id] != HS_NIL)
		l->prev[l->next[id]] = l->prev[id];
	else
		l->tail = l->prev[id];
}

static void lru_push(struct hs_lru *l, uint32_t id)
{
	l->prev[id] = HS_NIL;
	l->next[id] = l->head;
	if (l->head != HS_NIL)
		l->prev[l->head] = id;
	l->head = id;
	if (l->tail == HS_NIL)
		l->tail = id;
}

/* The trace's orders, for dlc_cache_prepare_epoch(). */
static int hs_fill(void *arg, uint32_t epoch, uint32_t *ids, uint32_t len)
{
	const struct hs_trace *t = arg;

	if (epoch >= t->nepochs || len != t->epoch_len)
		return -EINVAL;
	memcpy(ids, t->ids + (size_t)epoch * len, sizeof(uint32_t) * len);
	return 0;
}

/*
 * Run @pol over @t with @cap bytes; per-epoch results into @res
 * (t->nepochs entries). Returns 0, or -1 when out of memory or the trace
 * does not fit the cache's limits.
 */
static int hs_run(enum hs_policy pol, const struct hs_trace *t, uint64_t cap,
		  struct hs_epoch_result *res)
{
	uint32_t n = t->nsamples, L = t->epoch_len, e, i;
	uint8_t *in = calloc(n ? n : 1, 1);
	struct dlc_cache *c = NULL;
	struct hs_lru lru = { NULL, NULL, HS_NIL, HS_NIL };
	uint64_t used = 0;
	int rc = -1;

	memset(res, 0, sizeof(*res) * t->nepochs);
	if (!in)
		return -1;
	if (pol == HS_DLCACHE) {
		if (dlc_cache_create(n, L, cap, &c))
			goto out;
	} else if (pol == HS_LRU) {
		lru.prev = malloc(sizeof(uint32_t) * n);
		lru.next = malloc(sizeof(uint32_t) * n);
		if (!lru.prev || !lru.next)
			goto out;
	}

	for (e = 0; e < t->nepochs; e++) {
		const uint32_t *ids = t->ids + (size_t)e * L;

		/* Epoch e + 1 of the last epoch is not in the trace. */
		if (c && dlc_cache_prepare_epoch(c, e, hs_fill, (void *)t) &&
		    e + 1 < t->nepochs)
			goto out;
		for (i = 0; i < L; i++) {
			uint32_t id = ids[i];
			uint64_t s = t->size[id];
			struct dlc_buf *b;
			int hit;

			res[e].reqs++;
			res[e].req_bytes += s;
			if (c) {
				dlc_cache_advance(c, e, i);
				b = dlc_cache_lookup(c, id);
				hit = b != NULL;
				dlc_buf_put(b);
			} else {
				hit = in[id];
			}
			if (hit) {
				res[e].hits++;
				res[e].hit_bytes += s;
				if (pol == HS_LRU) {
					lru_unlink(&lru, id);
					lru_push(&lru, id);
				}
				continue;
			}
			switch (pol) {
			case HS_DLCACHE:
				/* a buffer that says it holds s bytes */
				b = dlc_buf_alloc(0);
				if (!b)
					goto out;
				b->len = s;
				dlc_cache_offer(c, id, b);
				dlc_buf_put(b);
				break;
			case HS_LRU:
				if (s > cap)
					break;
				while (used + s > cap) {
					uint32_t v = lru.tail;

					lru_unlink(&lru, v);
					in[v] = 0;
					used -= t->size[v];
				}
				in[id] = 1;
				used += s;
				lru_push(&lru, id);
				break;
			case HS_MINIO:
				if (used + s <= cap) {
					in[id] = 1;
					used += s;
				}
				break;
			default:
				goto out;
			}
		}
	}
	rc = 0;
out:
	dlc_cache_destroy(c);
	free(lru.prev);
	free(lru.next);
	free(in);
	return rc;
}

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
