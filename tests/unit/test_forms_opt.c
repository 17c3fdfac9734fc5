// SPDX-License-Identifier: MIT
/*
 * The decoded forms' policy against the exact optimum on small traces.
 *
 * The cost model is the decode-bound one forms.c chooses forms in (CPU
 * time of the loader's cores, library.md "Decoded forms"): a use of a
 * sample costs its read and decode when nothing of it is cached (R + D),
 * its decode when its encoded bytes are (D), a resize when its form is
 * (U); making its form at a use costs M more (the whole decode over the
 * crop's). Each sample's encoded bytes E and form F = 8 E compete for a
 * capacity C.
 *
 * The policy is the library's own code, driven as the loader drives it:
 * cache.c's cache with its next-use policy and pinned forms, and
 * forms.c's dlc_forms_want() / _made() / _offer() (mode decoded: the
 * decode-bound regime). The reference, written separately: a dynamic
 * program over every state of the cache (none, encoded or form for each
 * sample) after every use, where a use may keep, drop or replace only
 * the sample used, and drop any other; the least total cost. Both see
 * the same orders (random permutations, one a sample per epoch).
 *
 * What is compared is the saving over no cache at all: the policy's
 * against the optimum's, and encoded bytes only (the same cache, forms
 * off) against both. The bound asserted is the one library.md states.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cache.h"
#include "dlcache.h"
#include "forms.h"

#include "helpers/testutil.h"

#define NS	6		/* samples */
#define EPOCHS	3
#if defined(__SANITIZE_ADDRESS__)
#define TRACES	40
#else
#define TRACES	200
#endif
#define NSTATE	729		/* 3^NS */
#define INF	1e30

/*
 * The bound library.md states: the policy's saving over the optimum's,
 * the mean over traces at each size and the worst trace (measured
 * 0.79-1.00 and 0.45).
 */
#define BOUND_MEAN	0.75
#define BOUND_MIN	0.40

struct inst {
	uint32_t e[NS], f[NS];	/* bytes: encoded, form */
	double r, d, u, m;	/* costs: read, decode, use a form, make */
	uint64_t cap;
	uint32_t order[EPOCHS][NS];
};

static uint32_t rnd_below(uint32_t n)
{
	return (uint32_t)(t_rand() % n);
}

static int fill(void *arg, uint32_t epoch, uint32_t *ids, uint32_t len)
{
	const struct inst *in = arg;

	if (epoch >= EPOCHS) {
		uint32_t i;

		for (i = 0; i < len; i++)	/* beyond the trace: never */
			ids[i] = i;
		return 0;
	}
	memcpy(ids, in->order[epoch], len * sizeof(*ids));
	return 0;
}

static double use_cost(const struct inst *in, int st)
{
	return st == 2 ? in->u : st == 1 ? in->d : in->r + in->d;
}

/* The library's cache and forms, as the loader drives them. */
static double policy_cost(const struct inst *in, int forms)
{
	struct dlc_cache *c = NULL;
	struct dlc_forms f;
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	double cost = 0;
	uint32_t e, i;

	if (dlc_cache_create(NS, NS, in->cap, &c) ||
	    dlc_forms_init(&f, DLC_FORMS_DECODED, NS, 8, in->cap)) {
		printf("FAIL: cache or forms\n");
		exit(1);
	}
	f.ratio16 = 8 * 16;	/* F = 8 E: its estimate is exact */
	dlc_cache_pin_forms(c, 1);
	for (e = 0; e < EPOCHS; e++) {
		CHECK_EQ(dlc_cache_prepare_epoch(c, e, fill, (void *)in), 0);
		for (i = 0; i < NS; i++) {
			uint32_t s = in->order[e][i];
			struct dlc_buf *b;
			uint32_t est;
			int st = 0;

			dlc_cache_advance(c, e, i);
			b = dlc_cache_lookup(c, s);
			if (b)
				st = b->form_w ? 2 : 1;
			cost += use_cost(in, st);
			if (!b) {	/* read, then offered (read_done) */
				b = dlc_buf_alloc(in->e[s]);
				dlc_cache_offer(c, s, b);
			}
			if (forms && st != 2 &&
			    dlc_forms_want(&f, c, s, in->e[s], &est)) {
				struct dlc_buf *fb = dlc_buf_alloc(in->f[s]);

				fb->form_w = fb->form_h = 1;
				cost += in->m;
				dlc_forms_made(&f, s, est, fb, in->e[s]);
				dlc_forms_offer(&f, c, &lock);
			}
			dlc_buf_put(b);
		}
	}
	dlc_forms_fini(&f);
	dlc_cache_destroy(c);
	return cost;
}

static uint32_t digit(uint32_t st, uint32_t s)
{
	while (s--)
		st /= 3;
	return st % 3;
}

static uint64_t bytes_of(const struct inst *in, uint32_t st)
{
	uint64_t b = 0;
	uint32_t s;

	for (s = 0; s < NS; s++, st /= 3)
		b += st % 3 == 1 ? in->e[s] : st % 3 == 2 ? in->f[s] : 0;
	return b;
}

/*
 * The optimum: over states (3^NS) after each use. A use of s from state
 * st costs use_cost(st[s]); then s may become none, encoded (its bytes
 * are there unless it was a form) or a form (M unless it was one), and
 * any other sample may be dropped. @forms 0: no form state.
 */
static double optimum(const struct inst *in, int forms)
{
	static double dp[NSTATE], nx[NSTATE];
	static uint64_t by[NSTATE];
	uint32_t e, i, st, t, k, pw[NS];
	double best = INF;

	for (k = 0, t = 1; k < NS; k++, t *= 3)
		pw[k] = t;
	for (st = 0; st < NSTATE; st++) {
		dp[st] = st ? INF : 0;
		by[st] = bytes_of(in, st);
	}
	for (e = 0; e < EPOCHS; e++) {
		for (i = 0; i < NS; i++) {
			uint32_t s = in->order[e][i];

			for (st = 0; st < NSTATE; st++)
				nx[st] = INF;
			for (st = 0; st < NSTATE; st++) {
				uint32_t cur = digit(st, s), base, sub, ns, keep, q;
				double c0;
				int to;

				if (dp[st] >= INF)
					continue;
				c0 = dp[st] + use_cost(in, (int)cur);
				base = st - cur * pw[s];
				/* each subset of the others kept (bit q: keep q) */
				for (keep = 0; keep < 1u << NS; keep++) {
					if (keep & (1u << s))
						continue;
					for (sub = 0, q = 0; q < NS; q++)
						if (keep & (1u << q))
							sub += digit(base, q) * pw[q];
					if (keep && sub == 0)
						continue;	/* keep == 0's state */
					for (to = 0; to <= (forms ? 2 : 1); to++) {
						double c = c0;

						if (to == 1 && cur == 2)
							continue;
						if (to == 2 && cur != 2)
							c += in->m;
						ns = sub + (uint32_t)to * pw[s];
						if (by[ns] > in->cap || c >= nx[ns])
							continue;
						nx[ns] = c;
					}
				}
			}
			memcpy(dp, nx, sizeof(dp));
		}
	}
	for (st = 0; st < NSTATE; st++)
		if (dp[st] < best)
			best = dp[st];
	return best;
}

static void make(struct inst *in, double mult)
{
	uint64_t sum = 0;
	uint32_t s, e, k;

	for (s = 0; s < NS; s++) {
		in->e[s] = 50 + rnd_below(101);
		in->f[s] = 8 * in->e[s];
		sum += in->e[s];
	}
	in->cap = (uint64_t)(sum * mult);
	/* small images' costs (formbench): make ~1 decode, use ~0.15 */
	in->d = 1.0;
	in->u = 0.15;
	in->m = 0.6 + 0.8 * t_rand_unit();
	in->r = 0.05;
	for (e = 0; e < EPOCHS; e++) {
		for (k = 0; k < NS; k++)
			in->order[e][k] = k;
		for (k = NS - 1; k > 0; k--) {
			uint32_t j = rnd_below(k + 1), x = in->order[e][k];

			in->order[e][k] = in->order[e][j];
			in->order[e][j] = x;
		}
	}
}

static void test_against_optimum(void)
{
	static const double mults[] = { 0.5, 1, 2, 4, 8 };
	uint32_t m, t;

	for (m = 0; m < sizeof(mults) / sizeof(mults[0]); m++) {
		double sum = 0, worst = 1e9, enc_sum = 0, opt_sum = 0;
		double pol_sum = 0;

		for (t = 0; t < TRACES; t++) {
			struct inst in;
			double none, pol, opt, enc, r;

			make(&in, mults[m]);
			none = EPOCHS * NS * (in.r + in.d);
			pol = policy_cost(&in, 1);
			enc = policy_cost(&in, 0);
			opt = optimum(&in, 1);
			CHECK(opt <= pol + 1e-9 && opt <= enc + 1e-9,
			      "the optimum %.3f over the policy %.3f or encoded %.3f",
			      opt, pol, enc);
			r = none - opt > 1e-9 ? (none - pol) / (none - opt) : 1;
			sum += r;
			if (r < worst)
				worst = r;
			pol_sum += none - pol;
			enc_sum += none - enc;
			opt_sum += none - opt;
		}
		printf("cache %gx the encoded bytes: saving over no cache, of the optimum's: forms policy %.3f (mean of traces %.3f, worst %.3f), encoded only %.3f\n",
		       mults[m], pol_sum / opt_sum, sum / TRACES, worst,
		       enc_sum / opt_sum);
		CHECK(sum / TRACES >= BOUND_MEAN && worst >= BOUND_MIN,
		      "cache %gx: mean %.3f (bound %.2f), worst %.3f (bound %.2f)",
		      mults[m], sum / TRACES, BOUND_MEAN, worst, BOUND_MIN);
	}
}

int main(void)
{
	test_against_optimum();
	t_report("against_optimum");
	return t_done("test_forms_opt");
}
