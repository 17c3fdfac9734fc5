// SPDX-License-Identifier: MIT
/*
 * The next-use policy against a brute-force Belady reference: random
 * permutations (one use per epoch) and orders with repeats, with the
 * policy seeing the whole future or only a two-epoch window.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

#include "helpers/testutil.h"

static uint32_t rnd_below(uint32_t n)
{
	return (uint32_t)(t_rand() % n);
}

static void permutation(uint32_t *a, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		a[i] = i;
	for (i = n - 1; i > 0; i--) {
		uint32_t j = rnd_below(i + 1), t = a[i];

		a[i] = a[j];
		a[j] = t;
	}
}

static struct dlc_policy *policy_new(uint32_t n, uint32_t window, void **mem)
{
	struct dlc_policy *p = calloc(1, sizeof(*p));
	size_t sz = dlc_policy_mem_size(n, window);

	*mem = aligned_alloc(8, (sz + 7) & ~(size_t)7);
	if (!p || !*mem || dlc_policy_init(p, n, window, *mem, sz)) {
		printf("FAIL: policy init n=%u window=%u\n", n, window);
		exit(1);
	}
	return p;
}

/* Hits of optimal (Belady with bypass) over seq for k unit-size slots. */
static uint64_t belady_hits(const uint32_t *seq, uint32_t len, uint32_t n,
			    uint32_t k)
{
	uint8_t *in = calloc(n, 1);
	uint32_t *cache = calloc(k + 1, sizeof(*cache));
	uint32_t used = 0, t, i;
	uint64_t hits = 0;

	for (t = 0; t < len; t++) {
		uint32_t s = seq[t];
		uint64_t far = 0, nu_s = UINT64_MAX;
		uint32_t far_i = 0;

		if (in[s]) {
			hits++;
			continue;
		}
		if (used < k) {
			in[s] = 1;
			cache[used++] = s;
			continue;
		}
		for (i = t + 1; i < len; i++)
			if (seq[i] == s) {
				nu_s = i;
				break;
			}
		for (i = 0; i < used; i++) {
			uint64_t nu = UINT64_MAX;
			uint32_t j;

			for (j = t + 1; j < len; j++)
				if (seq[j] == cache[i]) {
					nu = j;
					break;
				}
			if (nu >= far) {
				far = nu;
				far_i = i;
			}
		}
		if (nu_s < far) {
			in[cache[far_i]] = 0;
			cache[far_i] = s;
			in[s] = 1;
		}
	}
	free(in);
	free(cache);
	return hits;
}

/*
 * Drive the policy as a cache of k unit-size samples. Epoch e's order is
 * seq[e * elen ..]; with @lookahead_epochs > 0 only that many epochs past
 * the current one are uploaded ahead.
 */
static uint64_t policy_hits(const uint32_t *seq, uint32_t nepochs,
			    uint32_t elen, uint32_t n, uint32_t k,
			    uint32_t lookahead_epochs)
{
	uint32_t window = lookahead_epochs ? (lookahead_epochs + 1) * elen :
					     nepochs * elen;
	uint32_t e, i, added = 0;
	uint64_t hits = 0;
	struct dlc_policy *p;
	void *mem;

	p = policy_new(n, window, &mem);
	for (e = 0; e < nepochs; e++) {
		uint32_t want = lookahead_epochs ? e + lookahead_epochs + 1 :
						   nepochs;

		while (added < want && added < nepochs) {
			int r = dlc_policy_add_epoch(p, added, seq + added * elen,
						     elen);

			CHECK(r == 0, "add epoch %u: %d", added, r);
			added++;
		}
		for (i = 0; i < elen; i++) {
			uint32_t s = seq[e * elen + i], v;
			uint64_t pos;

			CHECK(dlc_policy_position(p, e, i, &pos) == 0 &&
			      pos == (uint64_t)e * elen + i, "position");
			dlc_policy_advance(p, pos + 1);
			if (dlc_policy_is_cached(p, s)) {
				hits++;
				continue;
			}
			if (p->ncached < k) {
				dlc_policy_insert(p, s);
				continue;
			}
			v = dlc_policy_victim(p);
			CHECK(v != DLC_POLICY_NIL, "no victim with %u cached",
			      p->ncached);
			if (v != DLC_POLICY_NIL && dlc_policy_prefer(p, s, v)) {
				dlc_policy_remove(p, v);
				dlc_policy_insert(p, s);
			}
		}
	}
	free(mem);
	free(p);
	return hits;
}

static void test_against_belady(void)
{
	static const uint32_t sizes[][3] = {
		/* n, k, epochs */
		{ 10, 3, 4 }, { 50, 25, 4 }, { 64, 1, 3 }, { 100, 50, 5 },
		{ 200, 37, 4 }, { 130, 129, 3 }, { 300, 150, 4 },
	};
	uint32_t c, trial;

	for (c = 0; c < sizeof(sizes) / sizeof(sizes[0]); c++) {
		uint32_t n = sizes[c][0], k = sizes[c][1], ne = sizes[c][2];
		uint32_t *seq = malloc(sizeof(*seq) * n * ne);

		for (trial = 0; trial < 5; trial++) {
			uint64_t want, full, window;
			uint32_t e, i;

			/* Permutations: every sample once per epoch. */
			for (e = 0; e < ne; e++)
				permutation(seq + e * n, n);
			want = belady_hits(seq, n * ne, n, k);
			full = policy_hits(seq, ne, n, n, k, 0);
			window = policy_hits(seq, ne, n, n, k, 1);
			CHECK(full == want, "perm n=%u k=%u: %llu hits, Belady %llu",
			      n, k, (unsigned long long)full,
			      (unsigned long long)want);
			CHECK(window == want,
			      "perm windowed n=%u k=%u: %llu hits, Belady %llu",
			      n, k, (unsigned long long)window,
			      (unsigned long long)want);

			/* Repeats: weighted sampling with replacement. */
			for (e = 0; e < ne; e++)
				for (i = 0; i < n; i++) {
					uint32_t a = rnd_below(n), b = rnd_below(n);

					seq[e * n + i] = a < b ? a : b;
				}
			want = belady_hits(seq, n * ne, n, k);
			full = policy_hits(seq, ne, n, n, k, 0);
			CHECK(full == want,
			      "repeats n=%u k=%u: %llu hits, Belady %llu", n, k,
			      (unsigned long long)full,
			      (unsigned long long)want);
		}
		free(seq);
	}
}

/* Steady-state hit ratio of one-pass shuffles reaches capacity/size. */
static void test_steady_state_ratio(void)
{
	uint32_t n = 2000, k = 1000, ne = 4, e;
	uint32_t *seq = malloc(sizeof(*seq) * n * ne);
	uint64_t hits_first, hits_all;

	for (e = 0; e < ne; e++)
		permutation(seq + e * n, n);
	hits_first = policy_hits(seq, 1, n, n, k, 1);
	hits_all = policy_hits(seq, ne, n, n, k, 1);
	CHECK(hits_first == 0, "first epoch hits %llu",
	      (unsigned long long)hits_first);
	/* Every epoch after the first: exactly k hits (k of n cached). */
	CHECK(hits_all == (uint64_t)k * (ne - 1),
	      "steady hits %llu, want %u", (unsigned long long)hits_all,
	      k * (ne - 1));
	free(seq);
}

/* Random operations; the victim always matches a linear scan. */
static void test_victim_matches_scan(void)
{
	uint32_t n = 97, elen = 150, step, e = 0;
	uint32_t *ids = malloc(sizeof(*ids) * elen);
	uint64_t pos = 0;
	struct dlc_policy *p;
	void *mem;

	p = policy_new(n, 2 * elen, &mem);
	for (step = 0; step < 20000; step++) {
		uint32_t op = rnd_below(100), id = rnd_below(n), v, i;
		uint64_t far = 0;
		int any = 0, never = 0;

		if (op < 3 && p->end - p->cursor + elen <= p->window) {
			for (i = 0; i < elen; i++)
				ids[i] = rnd_below(n);
			CHECK(dlc_policy_add_epoch(p, e++, ids, elen) == 0,
			      "add epoch");
		} else if (op < 40) {
			pos += rnd_below(8);
			dlc_policy_advance(p, pos);
			if (pos > p->end)
				pos = p->end;
		} else if (op < 70) {
			dlc_policy_insert(p, id);
		} else {
			dlc_policy_remove(p, id);
		}

		for (i = 0; i < n; i++) {
			uint64_t nu;
			uint64_t q;

			if (!dlc_policy_is_cached(p, i))
				continue;
			any = 1;
			/* Reference next use: scan the live positions. */
			nu = DLC_POLICY_NEVER;
			for (q = p->cursor; q < p->end; q++)
				if (p->order[q & (p->window - 1)] == i) {
					nu = q;
					break;
				}
			CHECK(nu == dlc_policy_next_use(p, i),
			      "next use of %u: %llu, scan %llu", i,
			      (unsigned long long)dlc_policy_next_use(p, i),
			      (unsigned long long)nu);
			if (nu == DLC_POLICY_NEVER)
				never = 1;
			else if (nu > far)
				far = nu;
		}
		v = dlc_policy_victim(p);
		if (!any) {
			CHECK(v == DLC_POLICY_NIL, "victim %u of empty cache", v);
		} else if (never) {
			CHECK(v != DLC_POLICY_NIL &&
			      dlc_policy_next_use(p, v) == DLC_POLICY_NEVER,
			      "victim should have no next use");
		} else {
			CHECK(v != DLC_POLICY_NIL &&
			      dlc_policy_next_use(p, v) == far,
			      "victim next use %llu, farthest %llu",
			      (unsigned long long)dlc_policy_next_use(p, v),
			      (unsigned long long)far);
		}
		if (t_failures > 20)
			break;
	}
	free(ids);
	free(mem);
	free(p);
}

static void test_bad_input(void)
{
	uint32_t ids[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	uint32_t bad[3] = { 0, 8, 1 };
	struct dlc_policy *p, q;
	uint64_t pos;
	void *mem;
	char buf[64];

	CHECK(dlc_policy_mem_size(0, 10) == 0, "n=0 size");
	CHECK(dlc_policy_mem_size(10, 0) == 0, "window=0 size");
	CHECK(dlc_policy_mem_size(DLC_POLICY_MAX_SAMPLES + 1, 64) == 0,
	      "huge n size");
	CHECK(dlc_policy_init(&q, 8, 64, buf, sizeof(buf)) ==
	      -DLC_POLICY_EINVAL, "init with short memory");

	p = policy_new(8, 16, &mem);
	CHECK(p->window == 64, "window rounds to 64, got %u", p->window);
	CHECK(dlc_policy_add_epoch(p, 0, bad, 3) == -DLC_POLICY_EINVAL,
	      "id out of range");
	CHECK(p->end == 0 && p->nepochs == 0, "bad add changed state");
	CHECK(dlc_policy_add_epoch(p, 0, ids, 0) == -DLC_POLICY_EINVAL,
	      "zero length");
	CHECK(dlc_policy_add_epoch(p, 0, NULL, 3) == -DLC_POLICY_EINVAL,
	      "NULL ids");
	CHECK(dlc_policy_add_epoch(p, 5, ids, 8) == 0, "add epoch 5");
	CHECK(dlc_policy_add_epoch(p, 5, ids, 8) == -DLC_POLICY_EINVAL,
	      "same epoch twice");
	CHECK(dlc_policy_add_epoch(p, 4, ids, 8) == -DLC_POLICY_EINVAL,
	      "epoch going back");
	CHECK(dlc_policy_add_epoch(p, 6, ids, 8) == 0, "epoch 6");
	CHECK(dlc_policy_add_epoch(p, 7, ids, 8) == 0, "epoch 7");
	CHECK(dlc_policy_add_epoch(p, 8, ids, 8) == 0, "epoch 8");
	CHECK(dlc_policy_add_epoch(p, 9, ids, 8) == 0, "epoch 9");
	CHECK(dlc_policy_add_epoch(p, 10, ids, 8) == 0, "epoch 10");
	CHECK(dlc_policy_add_epoch(p, 11, ids, 8) == 0, "epoch 11");
	CHECK(dlc_policy_add_epoch(p, 12, ids, 8) == 0, "epoch 12");
	CHECK(dlc_policy_add_epoch(p, 13, ids, 1) == -DLC_POLICY_ENOSPC,
	      "window and epoch table full");
	CHECK(dlc_policy_position(p, 6, 3, &pos) == 0 && pos == 11,
	      "position of (6, 3)");
	CHECK(dlc_policy_position(p, 6, 8, &pos) == -DLC_POLICY_ENOENT,
	      "index past the epoch");
	CHECK(dlc_policy_position(p, 3, 0, &pos) == -DLC_POLICY_ENOENT,
	      "unknown epoch");
	dlc_policy_advance(p, 1000);
	CHECK(p->cursor == 64 && p->nepochs == 0, "advance clamps to end");
	CHECK(dlc_policy_insert(p, 8) == -DLC_POLICY_EINVAL, "insert bad id");
	CHECK(dlc_policy_next_use(p, 99) == DLC_POLICY_NEVER, "bad id next");
	CHECK(dlc_policy_victim(p) == DLC_POLICY_NIL, "empty victim");
	free(mem);
	free(p);

	/* The window bounds unconsumed positions. */
	p = policy_new(8, 64, &mem);
	{
		uint32_t big[64] = { 0 };

		CHECK(dlc_policy_add_epoch(p, 0, big, 64) == 0, "fill window");
		CHECK(dlc_policy_add_epoch(p, 1, ids, 1) == -DLC_POLICY_ENOSPC,
		      "over the window");
		dlc_policy_advance(p, 1);
		CHECK(dlc_policy_add_epoch(p, 1, ids, 1) == 0,
		      "room after consuming");
	}
	free(mem);
	free(p);
}

int main(void)
{
	t_rng = 12345;
	T_RUN(test_bad_input);
	T_RUN(test_victim_matches_scan);
	T_RUN(test_against_belady);
	T_RUN(test_steady_state_ratio);
	if (t_failures) {
		printf("test_policy: %d t_failures\n", t_failures);
		return 1;
	}
	printf("test_policy: ok\n");
	return 0;
}
