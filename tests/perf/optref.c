// SPDX-License-Identifier: MIT
/*
 * Independent references for the hit-ratio simulator: they share no code
 * with libdlcache (no policy.c, no cache.c), so that "within 1 % of the
 * optimum" compares dlcache's policy with something else than itself.
 * #included by tests/perf/hitsim_core.c.
 *
 * The model is demand caching with bypass: a trace of T requests, request
 * t for sample ids[t] of size[ids[t]] bytes; after serving request t the
 * cache holds a set of samples of at most cap bytes in all, and a sample
 * can only enter the cache when it is requested (no prefetch). A request
 * hits when its sample is held.
 *
 * opt_belady_unit(): the exact optimum of the hit count when every sample
 * has size 1 (cap counts samples). Belady's MIN with bypass: on a miss
 * with the cache full, of the cached samples and the requested one, the
 * one whose next request is farthest away (never = infinitely far) is not
 * kept. The classical exchange argument makes this optimal for unit sizes.
 *
 * opt_bound_bytes(): an upper bound on the hit bytes of every policy
 * (the exact optimum with sizes is NP-hard). Each hit at request b of a
 * sample last requested at a < b (the "interval" (a, b)) needs the sample
 * held in the states after requests a, a + 1, ..., b - 1. For a feasible
 * policy let z_j = size_j when interval j ends in a hit, else 0. In every
 * state t the cache holds at most cap bytes, so
 *     sum over the intervals j covering t of z_j <= cap,   0 <= z_j <= size_j.
 * The most hit bytes, sum z_j, of a policy is at most the maximum of that
 * linear program with z_j real (the relaxation: any fraction of a sample
 * may be held). The program is interval packing on a line: cut interval j
 * into size_j pieces of one byte and it is scheduling unit intervals on
 * cap identical machines for the most intervals, which the greedy by
 * right end solves exactly (each piece is taken when the load stays <= cap
 * over its states; Faigle and Nawijn 1995, Carlisle and Lloyd 1995). So:
 * go through the requests in order, and for the interval ending at each
 * take z_j = min(size_j, cap - the highest load over its states), adding
 * z_j to the load of those states (a segment tree, O(T log T)). On unit
 * sizes the program's matrix is an interval matrix, totally unimodular,
 * so the bound is then the exact optimum and equals Belady's count.
 * This is the relaxation behind Berger et al.'s FOO (SIGMETRICS 2018).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define OPT_NEVER UINT64_MAX

/* next[t]: the next request of ids[t] after t, or OPT_NEVER. */
static int opt_next_uses(const uint32_t *ids, uint64_t T, uint32_t n,
			 uint64_t *next)
{
	uint64_t *seen = malloc(sizeof(uint64_t) * (n ? n : 1)), t;
	uint32_t i;

	if (!seen)
		return -1;
	for (i = 0; i < n; i++)
		seen[i] = OPT_NEVER;
	for (t = T; t-- > 0;) {
		next[t] = seen[ids[t]];
		seen[ids[t]] = t;
	}
	free(seen);
	return 0;
}

/* A max-heap of (next use, sample), stale entries dropped when popped. */
struct opt_heap {
	uint64_t *key;
	uint32_t *id;
	uint64_t len;
};

static void opt_heap_push(struct opt_heap *h, uint64_t key, uint32_t id)
{
	uint64_t i = h->len++;

	while (i) {
		uint64_t up = (i - 1) / 2;

		if (h->key[up] >= key)
			break;
		h->key[i] = h->key[up];
		h->id[i] = h->id[up];
		i = up;
	}
	h->key[i] = key;
	h->id[i] = id;
}

static void opt_heap_pop(struct opt_heap *h)
{
	uint64_t i = 0, key = h->key[--h->len];
	uint32_t id = h->id[h->len];

	for (;;) {
		uint64_t c = 2 * i + 1;

		if (c >= h->len)
			break;
		if (c + 1 < h->len && h->key[c + 1] > h->key[c])
			c++;
		if (h->key[c] <= key)
			break;
		h->key[i] = h->key[c];
		h->id[i] = h->id[c];
		i = c;
	}
	h->key[i] = key;
	h->id[i] = id;
}

/*
 * Belady MIN with bypass on unit sizes, @cap samples. Sets hit[t] (may be
 * NULL) and returns the number of hits, or -1 when out of memory.
 */
static int64_t opt_belady_unit(const uint32_t *ids, uint64_t T, uint32_t n,
			       uint64_t cap, uint8_t *hit)
{
	uint64_t *next = malloc(sizeof(uint64_t) * (T ? T : 1));
	uint64_t *cur = malloc(sizeof(uint64_t) * (n ? n : 1));
	struct opt_heap h = { malloc(sizeof(uint64_t) * (T + 1)),
			      malloc(sizeof(uint32_t) * (T + 1)), 0 };
	uint64_t held = 0, t;
	int64_t hits = -1;
	uint32_t i;

	if (!next || !cur || !h.key || !h.id || opt_next_uses(ids, T, n, next))
		goto out;
	for (i = 0; i < n; i++)
		cur[i] = 0;	/* 0: not held; else next use + 1 */
	hits = 0;
	for (t = 0; t < T; t++) {
		uint32_t x = ids[t];
		int is_hit = cur[x] != 0;

		if (hit)
			hit[t] = (uint8_t)is_hit;
		hits += is_hit;
		if (!is_hit && cap == 0)
			continue;
		if (!is_hit && held == cap) {
			/* Drop stale entries, then compare with the farthest. */
			while (h.len && cur[h.id[0]] != h.key[0] + 1)
				opt_heap_pop(&h);
			/* Keep x only when its next use is nearer. */
			if (!h.len || h.key[0] <= next[t])
				continue;
			cur[h.id[0]] = 0;
			opt_heap_pop(&h);
			held--;
		}
		if (!is_hit)
			held++;
		/* next[t] == NEVER is kept as the largest key, NEVER - 1 + 1 */
		cur[x] = next[t] == OPT_NEVER ? OPT_NEVER : next[t] + 1;
		opt_heap_push(&h, next[t] == OPT_NEVER ? OPT_NEVER - 1 : next[t], x);
	}
out:
	free(next);
	free(cur);
	free(h.key);
	free(h.id);
	return hits;
}

/* Range add and range max over the states, for the greedy. */
struct opt_seg {
	uint64_t *max, *add;
	uint64_t n;
};

static void opt_seg_add(struct opt_seg *g, uint64_t node, uint64_t l,
			uint64_t r, uint64_t from, uint64_t to, uint64_t v)
{
	uint64_t mid = l + (r - l) / 2, a, b;

	if (to <= l || r <= from)
		return;
	if (from <= l && r <= to) {
		g->max[node] += v;
		g->add[node] += v;
		return;
	}
	opt_seg_add(g, 2 * node, l, mid, from, to, v);
	opt_seg_add(g, 2 * node + 1, mid, r, from, to, v);
	a = g->max[2 * node];
	b = g->max[2 * node + 1];
	g->max[node] = (a > b ? a : b) + g->add[node];
}

static uint64_t opt_seg_max(const struct opt_seg *g, uint64_t node, uint64_t l,
			    uint64_t r, uint64_t from, uint64_t to)
{
	uint64_t mid = l + (r - l) / 2, a, b;

	if (to <= l || r <= from)
		return 0;
	if (from <= l && r <= to)
		return g->max[node];
	a = opt_seg_max(g, 2 * node, l, mid, from, to);
	b = opt_seg_max(g, 2 * node + 1, mid, r, from, to);
	return (a > b ? a : b) + g->add[node];
}

/*
 * Upper bound on the hit bytes of any policy with @cap bytes, counting
 * hits at requests in [@lo, @hi) (the maximum of the linear program
 * above). Returns it, or -1 when out of memory.
 */
static double opt_bound_bytes(const uint32_t *ids, uint64_t T, uint32_t n,
			      const uint64_t *size, uint64_t cap, uint64_t lo,
			      uint64_t hi)
{
	uint64_t *last = malloc(sizeof(uint64_t) * (n ? n : 1)), b, total = 0;
	struct opt_seg g = { calloc(4 * (T + 1), sizeof(uint64_t)),
			     calloc(4 * (T + 1), sizeof(uint64_t)), T };
	double ret = -1;
	uint32_t i;

	if (!last || !g.max || !g.add)
		goto out;
	for (i = 0; i < n; i++)
		last[i] = OPT_NEVER;
	for (b = 0; b < T; b++) {
		uint64_t a = last[ids[b]], s = size[ids[b]], load, z;

		last[ids[b]] = b;
		if (a == OPT_NEVER || b < lo || b >= hi || s > cap)
			continue;
		load = opt_seg_max(&g, 1, 0, T, a, b);
		z = cap - load < s ? cap - load : s;
		if (!z)
			continue;
		opt_seg_add(&g, 1, 0, T, a, b, z);
		total += z;
	}
	ret = (double)total;
out:
	free(last);
	free(g.max);
	free(g.add);
	return ret;
}
