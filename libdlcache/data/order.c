// SPDX-License-Identifier: MIT
/*
 * Epoch orders, sharded as torch.utils.data.distributed.DistributedSampler.
 *
 * The order is a pure function of (n, seed, epoch, world, drop_last,
 * shuffle): every rank computes the same global permutation on its own and
 * keeps its slice, so no rank has to talk to another, and resuming at
 * position k is just reading the same order from k.
 */
#include <errno.h>
#include <stdlib.h>

#include "dlcache.h"

#define GOLDEN_GAMMA	0x9e3779b97f4a7c15ULL

/* splitmix64's finaliser: a bijection on 64 bits with full avalanche. */
static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * Counter-based: draw i is mix64(key + (i + 1) * gamma), i.e. splitmix64
 * started at @key. For a fixed seed, distinct epochs get distinct keys
 * because mix64 is a bijection.
 */
struct ctr_rng {
	uint64_t key;
	uint64_t ctr;
};

static uint32_t rng_next32(struct ctr_rng *r)
{
	r->ctr++;
	return (uint32_t)(mix64(r->key + r->ctr * GOLDEN_GAMMA) >> 32);
}

/* Uniform in [0, s), s >= 1: Lemire's multiply-shift with rejection. */
static uint32_t rng_below(struct ctr_rng *r, uint32_t s)
{
	uint64_t m = (uint64_t)rng_next32(r) * s;
	uint32_t l = (uint32_t)m;

	if (l < s) {
		uint32_t t = (uint32_t)-s % s;

		while (l < t) {
			m = (uint64_t)rng_next32(r) * s;
			l = (uint32_t)m;
		}
	}
	return (uint32_t)(m >> 32);
}

static int params_ok(uint32_t n, const struct dlc_order_params *p)
{
	return p && n >= 1 && p->world >= 1 && p->rank < p->world &&
	       p->pad == 0;
}

/*
 * DistributedSampler: num_samples = ceil((n - world) / world) with
 * drop_last and a ragged n (which is floor(n / world)), else
 * ceil(n / world). 64-bit so that n near 2^32 cannot wrap.
 */
static uint32_t per_rank(uint32_t n, const struct dlc_order_params *p)
{
	if (p->drop_last)
		return n / p->world;
	return (uint32_t)(((uint64_t)n + p->world - 1) / p->world);
}

uint32_t dlc_order_len(uint32_t n, const struct dlc_order_params *p)
{
	if (!params_ok(n, p))
		return 0;
	return per_rank(n, p);
}

/*
 * The global permutation of epoch p->epoch, malloc'ed (NULL: -ENOMEM); the
 * identity without shuffle.
 */
static uint32_t *global_perm(uint32_t n, const struct dlc_order_params *p)
{
	struct ctr_rng r;
	uint32_t *perm, i, j, t;

	perm = malloc((size_t)n * sizeof(*perm));
	if (!perm)
		return NULL;
	for (i = 0; i < n; i++)
		perm[i] = i;
	if (!p->shuffle)
		return perm;
	r.key = mix64(mix64(p->seed) ^ p->epoch);
	r.ctr = 0;
	for (i = n - 1; i > 0; i--) {
		j = rng_below(&r, i + 1);
		t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	return perm;
}

int dlc_order_fill(uint32_t n, const struct dlc_order_params *p,
		   uint32_t *out, uint32_t len)
{
	uint32_t *perm, i;
	uint64_t pos;

	if (!params_ok(n, p) || len != per_rank(n, p) || (len && !out))
		return -EINVAL;
	/*
	 * Global position pos of the padded order is perm[pos % n]: torch
	 * pads with (indices * ceil(pad / n))[:pad], the head repeated.
	 */
	if (!p->shuffle) {
		for (i = 0, pos = p->rank; i < len; i++, pos += p->world)
			out[i] = (uint32_t)(pos % n);
		return 0;
	}
	perm = global_perm(n, p);
	if (!perm)
		return -ENOMEM;
	for (i = 0, pos = p->rank; i < len; i++, pos += p->world)
		out[i] = perm[pos % n];
	free(perm);
	return 0;
}

int dlc_order_rest_len(uint32_t n, const struct dlc_order_params *p,
		       uint64_t done, uint32_t *len)
{
	if (!params_ok(n, p) || !len)
		return -EINVAL;
	*len = done >= n ? 0 : per_rank((uint32_t)(n - done), p);
	return 0;
}

int dlc_order_fill_rest(uint32_t n, const struct dlc_order_params *p,
			uint64_t done, uint32_t *out, uint32_t len)
{
	uint32_t want, m, *perm, i;
	uint64_t pos;

	if (dlc_order_rest_len(n, p, done, &want) || len != want ||
	    (len && !out))
		return -EINVAL;
	if (!len)
		return 0;
	m = (uint32_t)(n - done);
	perm = global_perm(n, p);
	if (!perm)
		return -ENOMEM;
	/* The rest is perm[done, n), padded as a whole order is. */
	for (i = 0, pos = p->rank; i < len; i++, pos += p->world)
		out[i] = perm[done + pos % m];
	free(perm);
	return 0;
}
