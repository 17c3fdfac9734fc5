// SPDX-License-Identifier: MIT
/*
 * Cache hit-ratio simulator core, shared by tests/perf/hitsim.c (make
 * bench) and tests/unit/test_hitsim.c (#included by both).
 *
 * A trace is a list of epochs, each a list of sample IDs; every sample has
 * a size in bytes. Policies, all over a capacity in bytes:
 *   HS_DLCACHE  libdlcache/policy.c driven exactly as libdlcache/cache.c
 *               drives it: a window of 3 epochs, epoch e and e + 1 uploaded
 *               when e starts, advance past a position before its lookup,
 *               and on a miss offer: evict the victim while the sample's
 *               next use is nearer than the victim's, else bypass. (The
 *               loader offers when the read completes, up to a queue depth
 *               later; the simulator offers at once.)
 *   HS_LRU      admit every sample, evict the least recently used.
 *   HS_MINIO    CoorDL's MinIO: admit while there is room, never evict.
 *   HS_BELADY   the same next-use policy with the whole trace known up
 *               front (Belady with bypass). On unit sizes (sizes all 1,
 *               capacity in samples) this is the optimum by count.
 * Hits and requests are counted per epoch, both by count and by bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

enum hs_policy { HS_DLCACHE, HS_LRU, HS_MINIO, HS_BELADY, HS_POLICIES };

static const char *const hs_policy_names[HS_POLICIES] = {
	"dlcache", "lru", "minio", "belady",
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
	if (l->prev[id] != DLC_POLICY_NIL)
		l->next[l->prev[id]] = l->next[id];
	else
		l->head = l->next[id];
	if (l->next[id] != DLC_POLICY_NIL)
		l->prev[l->next[id]] = l->prev[id];
	else
		l->tail = l->prev[id];
}

static void lru_push(struct hs_lru *l, uint32_t id)
{
	l->prev[id] = DLC_POLICY_NIL;
	l->next[id] = l->head;
	if (l->head != DLC_POLICY_NIL)
		l->prev[l->head] = id;
	l->head = id;
	if (l->tail == DLC_POLICY_NIL)
		l->tail = id;
}

/* Offer @id to the next-use policy as cache.c's dlc_cache_offer does. */
static void hs_offer(struct dlc_policy *p, uint8_t *in, const uint64_t *size,
		     uint64_t cap, uint64_t *used, uint32_t id)
{
	if (size[id] > cap)
		return;
	while (*used + size[id] > cap) {
		uint32_t v = dlc_policy_victim(p);

		if (v == DLC_POLICY_NIL || !dlc_policy_prefer(p, id, v))
			return;
		dlc_policy_remove(p, v);
		in[v] = 0;
		*used -= size[v];
	}
	in[id] = 1;
	*used += size[id];
	dlc_policy_insert(p, id);
}

/*
 * Run @pol over @t with @cap bytes; per-epoch results into @res
 * (t->nepochs entries). Returns 0, or -1 when out of memory or the trace
 * does not fit the policy's limits.
 */
static int hs_run(enum hs_policy pol, const struct hs_trace *t, uint64_t cap,
		  struct hs_epoch_result *res)
{
	uint32_t n = t->nsamples, L = t->epoch_len, e, i;
	uint8_t *in = calloc(n ? n : 1, 1);
	struct dlc_policy p;
	struct hs_lru lru = { NULL, NULL, DLC_POLICY_NIL, DLC_POLICY_NIL };
	void *mem = NULL;
	uint64_t used = 0, window = 0;
	int rc = -1;

	memset(res, 0, sizeof(*res) * t->nepochs);
	if (!in)
		return -1;
	if (pol == HS_DLCACHE || pol == HS_BELADY) {
		size_t sz;

		window = pol == HS_DLCACHE ? 3ULL * L : (uint64_t)L * t->nepochs;
		if (window > DLC_POLICY_MAX_WINDOW ||
		    (pol == HS_BELADY && t->nepochs > DLC_POLICY_MAX_EPOCHS))
			goto out;
		sz = dlc_policy_mem_size(n, (uint32_t)window);
		mem = sz ? aligned_alloc(64, (sz + 63) & ~(size_t)63) : NULL;
		if (!mem || dlc_policy_init(&p, n, (uint32_t)window, mem, sz))
			goto out;
		if (pol == HS_BELADY)
			for (e = 0; e < t->nepochs; e++)
				if (dlc_policy_add_epoch(&p, e, t->ids + (size_t)e * L, L))
					goto out;
	} else if (pol == HS_LRU) {
		lru.prev = malloc(sizeof(uint32_t) * n);
		lru.next = malloc(sizeof(uint32_t) * n);
		if (!lru.prev || !lru.next)
			goto out;
	}

	for (e = 0; e < t->nepochs; e++) {
		const uint32_t *ids = t->ids + (size_t)e * L;
		uint64_t base = 0;

		if (pol == HS_DLCACHE) {
			/* dlc_cache_prepare_epoch: epoch e known, upload e + 1. */
			if (e == 0 && dlc_policy_add_epoch(&p, 0, ids, L))
				goto out;
			if (dlc_policy_position(&p, e, 0, &base))
				goto out;
			dlc_policy_advance(&p, base);
			if (e + 1 < t->nepochs &&
			    dlc_policy_add_epoch(&p, e + 1, ids + L, L))
				goto out;
		} else if (pol == HS_BELADY) {
			base = (uint64_t)e * L;
		}
		for (i = 0; i < L; i++) {
			uint32_t id = ids[i];
			uint64_t s = t->size[id];

			res[e].reqs++;
			res[e].req_bytes += s;
			if (pol == HS_DLCACHE || pol == HS_BELADY)
				dlc_policy_advance(&p, base + i + 1);
			if (in[id]) {
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
			case HS_BELADY:
				hs_offer(&p, in, t->size, cap, &used, id);
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
	free(lru.prev);
	free(lru.next);
	free(mem);
	free(in);
	return rc;
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
