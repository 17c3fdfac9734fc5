// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit: the next-use policy (libdlcache/cache/policy.c) against a
 * brute-force reference that scans the known time line (one consumer), and
 * a two-consumer case worked by hand.
 */
#include <kunit/test.h>
#include <linux/prandom.h>
#include <linux/slab.h>

#include "../kmod/dlc.h"

/* A policy plus the reference's view of the same time line. */
struct ptest {
	/* Allocated: the struct holds DLC_POLICY_MAX_CONSUMERS lines. */
	struct dlc_policy *p;
	void *mem;
	u32 nsamples;
	u32 *seq;	/* every known position's sample, from 0 */
	u64 len;	/* known positions */
	u64 cap;	/* room in seq */
	u64 cursor;	/* reference cursor */
	bool *cached;	/* reference cached set */
	u32 ncached;
	struct rnd_state rnd;
};

static void pt_init(struct kunit *test, struct ptest *t, u32 nsamples,
		    u32 window, u64 cap, u64 seed)
{
	size_t sz = dlc_policy_mem_size(nsamples, window);

	KUNIT_ASSERT_GT(test, sz, 0);
	t->mem = kunit_kzalloc(test, sz, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t->mem);
	t->p = kunit_kzalloc(test, sizeof(*t->p), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t->p);
	KUNIT_ASSERT_EQ(test, dlc_policy_init(t->p, nsamples, window, t->mem,
					      sz, 0), 0);
	t->nsamples = nsamples;
	t->cap = cap;
	t->seq = kunit_kzalloc(test, cap * sizeof(u32), GFP_KERNEL);
	t->cached = kunit_kzalloc(test, nsamples * sizeof(bool), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t->seq);
	KUNIT_ASSERT_NOT_NULL(test, t->cached);
	t->len = 0;
	t->cursor = 0;
	t->ncached = 0;
	prandom_seed_state(&t->rnd, seed);
}

static u32 pt_rand(struct ptest *t, u32 n)
{
	return prandom_u32_state(&t->rnd) % n;
}

/* Reference next use: scan the known positions from the cursor. */
static u64 ref_next(const struct ptest *t, u32 id)
{
	u64 q;

	for (q = t->cursor; q < t->len; q++)
		if (t->seq[q] == id)
			return q;
	return DLC_POLICY_NEVER;
}

/* Fill @ids with a random permutation (repeats = 0) or random draws. */
static void gen_order(struct ptest *t, u32 *ids, u32 len, bool repeats)
{
	u32 i, j, tmp;

	for (i = 0; i < len; i++)
		ids[i] = repeats ? pt_rand(t, t->nsamples) : i % t->nsamples;
	if (repeats)
		return;
	for (i = len - 1; i > 0; i--) {
		j = pt_rand(t, i + 1);
		tmp = ids[i];
		ids[i] = ids[j];
		ids[j] = tmp;
	}
}

static int pt_add(struct ptest *t, u32 epoch, const u32 *ids, u32 len)
{
	int ret = dlc_policy_add_epoch(t->p, 0, epoch, ids, len);

	if (!ret) {
		memcpy(&t->seq[t->len], ids, len * sizeof(u32));
		t->len += len;
	}
	return ret;
}

static void pt_advance(struct ptest *t, u64 pos)
{
	/* One microsecond per position. */
	dlc_policy_advance(t->p, 0, pos, pos * 1000);
	if (pos > t->len)
		pos = t->len;
	if (pos > t->cursor)
		t->cursor = pos;
}

/* Check every sample's next use and the victim against the reference. */
static void pt_check(struct kunit *test, struct ptest *t)
{
	u64 worst = 0, nu;
	bool never = false;
	u32 id, v;

	KUNIT_ASSERT_EQ(test, t->p->line[0].cursor, t->cursor);
	for (id = 0; id < t->nsamples; id++) {
		nu = ref_next(t, id);
		KUNIT_ASSERT_EQ_MSG(test, dlc_policy_next_use(t->p, 0, id), nu,
				    "sample %u", id);
		KUNIT_ASSERT_EQ(test, !!dlc_policy_is_cached(t->p, id),
				t->cached[id]);
		if (!t->cached[id])
			continue;
		if (nu == DLC_POLICY_NEVER)
			never = true;
		else if (nu > worst)
			worst = nu;
	}
	v = dlc_policy_victim(t->p);
	if (!t->ncached) {
		KUNIT_ASSERT_EQ(test, v, DLC_POLICY_NIL);
		return;
	}
	KUNIT_ASSERT_LT(test, v, t->nsamples);
	KUNIT_ASSERT_TRUE(test, t->cached[v]);
	if (never)
		KUNIT_ASSERT_EQ(test, ref_next(t, v), DLC_POLICY_NEVER);
	else
		KUNIT_ASSERT_EQ(test, ref_next(t, v), worst);
}

static void pt_insert(struct ptest *t, u32 id)
{
	dlc_policy_insert(t->p, id);
	if (!t->cached[id]) {
		t->cached[id] = true;
		t->ncached++;
	}
}

static void pt_remove(struct ptest *t, u32 id)
{
	dlc_policy_remove(t->p, id);
	if (t->cached[id]) {
		t->cached[id] = false;
		t->ncached--;
	}
}

static void policy_mem_size_limits(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, dlc_policy_mem_size(0, 64), 0);
	KUNIT_EXPECT_EQ(test, dlc_policy_mem_size(64, 0), 0);
	KUNIT_EXPECT_EQ(test, dlc_policy_mem_size(DLC_POLICY_MAX_SAMPLES + 1,
						  64), 0);
	KUNIT_EXPECT_EQ(test, dlc_policy_mem_size(64,
						  DLC_POLICY_MAX_WINDOW + 1), 0);
	KUNIT_EXPECT_GT(test, dlc_policy_mem_size(1, 1), 0);
}

static void policy_add_epoch_checks(struct kunit *test)
{
	struct ptest t;
	u32 ids[64], bad[2] = { 0, 16 };
	u64 pos;
	int i;

	pt_init(test, &t, 16, 64, 256, 1);
	for (i = 0; i < 64; i++)
		ids[i] = i % 16;
	KUNIT_EXPECT_EQ(test, dlc_policy_add_epoch(t.p, 0, 1, ids, 0),
			-DLC_POLICY_EINVAL);
	KUNIT_EXPECT_EQ(test, dlc_policy_add_epoch(t.p, 0, 1, bad, 2),
			-DLC_POLICY_EINVAL);
	/* A bad ID changes nothing. */
	KUNIT_EXPECT_EQ(test, t.p->line[0].end, 0);
	KUNIT_EXPECT_EQ(test, dlc_policy_next_use(t.p, 0, 0), DLC_POLICY_NEVER);

	KUNIT_EXPECT_EQ(test, pt_add(&t, 5, ids, 40), 0);
	KUNIT_EXPECT_EQ(test, pt_add(&t, 5, ids, 8), -DLC_POLICY_EINVAL);
	KUNIT_EXPECT_EQ(test, pt_add(&t, 4, ids, 8), -DLC_POLICY_EINVAL);
	/* 40 + 25 > window 64. */
	KUNIT_EXPECT_EQ(test, pt_add(&t, 6, ids, 25), -DLC_POLICY_ENOSPC);
	KUNIT_EXPECT_EQ(test, pt_add(&t, 6, ids, 24), 0);
	pt_check(test, &t);

	KUNIT_EXPECT_EQ(test, dlc_policy_position(t.p, 0, 6, 3, &pos), 0);
	KUNIT_EXPECT_EQ(test, pos, 43);
	KUNIT_EXPECT_EQ(test, dlc_policy_position(t.p, 0, 6, 24, &pos),
			-DLC_POLICY_ENOENT);
	KUNIT_EXPECT_EQ(test, dlc_policy_position(t.p, 0, 7, 0, &pos),
			-DLC_POLICY_ENOENT);

	/* Consuming epoch 5 frees its positions and forgets it. */
	pt_advance(&t, 40);
	pt_check(test, &t);
	KUNIT_EXPECT_EQ(test, dlc_policy_position(t.p, 0, 5, 0, &pos),
			-DLC_POLICY_ENOENT);
	KUNIT_EXPECT_EQ(test, pt_add(&t, 7, ids, 40), 0);
	pt_check(test, &t);
	/* Moving backwards does nothing; past the end clamps. */
	pt_advance(&t, 10);
	pt_check(test, &t);
	pt_advance(&t, 1000);
	pt_check(test, &t);
	KUNIT_EXPECT_EQ(test, t.p->line[0].cursor, t.p->line[0].end);
	KUNIT_EXPECT_EQ(test, dlc_policy_victim(t.p), DLC_POLICY_NIL);
	KUNIT_EXPECT_EQ(test, dlc_policy_insert(t.p, 16), -DLC_POLICY_EINVAL);
	KUNIT_EXPECT_EQ(test, dlc_policy_remove(t.p, 16), -DLC_POLICY_EINVAL);
	KUNIT_EXPECT_EQ(test, dlc_policy_next_use(t.p, 0, 99), DLC_POLICY_NEVER);
}

/* Random epochs, random cached sets, random advances; check each step. */
static void policy_random_vs_reference(struct kunit *test)
{
	static const struct {
		u32 nsamples, window, len;
		bool repeats;
	} cfg[] = {
		{ 8, 64, 8, false },
		{ 50, 128, 50, false },
		{ 37, 256, 60, true },	/* weighted sampling: repeats */
		{ 100, 200, 100, false },	/* window rounded up to 256 */
		{ 5, 64, 20, true },
	};
	u32 c, round, i, epoch, *ids;
	struct ptest t;

	for (c = 0; c < ARRAY_SIZE(cfg); c++) {
		pt_init(test, &t, cfg[c].nsamples, cfg[c].window, 64 * 1024,
			1000 + c);
		ids = kunit_kzalloc(test, cfg[c].len * sizeof(u32), GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, ids);
		epoch = 0;
		for (round = 0; round < 60 && t.len + cfg[c].len <= t.cap;
		     round++) {
			/* Append epochs while the window has room. */
			gen_order(&t, ids, cfg[c].len, cfg[c].repeats);
			if (t.len - t.cursor + cfg[c].len <= t.p->window &&
			    t.p->line[0].nepochs < DLC_POLICY_MAX_EPOCHS)
				KUNIT_ASSERT_EQ(test,
						pt_add(&t, ++epoch, ids,
						       cfg[c].len), 0);
			pt_check(test, &t);
			for (i = 0; i < cfg[c].nsamples / 3 + 1; i++) {
				u32 id = pt_rand(&t, cfg[c].nsamples);

				if (pt_rand(&t, 3))
					pt_insert(&t, id);
				else
					pt_remove(&t, id);
			}
			pt_check(test, &t);
			for (i = 0; i < 8; i++) {
				u32 a = pt_rand(&t, cfg[c].nsamples);
				u32 b = pt_rand(&t, cfg[c].nsamples);

				KUNIT_EXPECT_EQ(test,
						dlc_policy_prefer(t.p, a, b),
						ref_next(&t, a) < ref_next(&t, b));
			}
			pt_advance(&t, t.cursor +
				   pt_rand(&t, cfg[c].len + cfg[c].len / 2));
			pt_check(test, &t);
		}
	}
}

/*
 * Simulate a cache of @slots samples over the time line with the policy
 * (admission by prefer against the victim), and with a brute-force
 * Belady-with-bypass reference; the hit counts must be equal.
 */
static void sim_once(struct kunit *test, u32 nsamples, u32 len, u32 epochs,
		     u32 slots, bool repeats, u64 seed, u32 *hits_out)
{
	u32 e, i, hits = 0, rhits = 0, *ids, id, v;
	struct ptest t;
	bool *rc;
	u32 rn = 0;

	pt_init(test, &t, nsamples, len * epochs, (u64)len * epochs, seed);
	ids = kunit_kzalloc(test, len * sizeof(u32), GFP_KERNEL);
	rc = kunit_kzalloc(test, nsamples * sizeof(bool), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ids);
	KUNIT_ASSERT_NOT_NULL(test, rc);

	/* The whole time line is known: no-next-use means never again. */
	for (e = 0; e < epochs; e++) {
		gen_order(&t, ids, len, repeats);
		KUNIT_ASSERT_EQ(test, pt_add(&t, e, ids, len), 0);
	}
	for (i = 0; i < len * epochs; i++) {
		id = t.seq[i];

		/* Reference: hit, else admit if used sooner than the worst. */
		if (rc[id]) {
			rhits++;
			t.cursor = i + 1;
		} else {
			u64 nu, worst = 0;
			u32 j, wid = 0;

			t.cursor = i + 1;
			nu = ref_next(&t, id);
			if (rn < slots) {
				rc[id] = true;
				rn++;
			} else {
				for (j = 0; j < nsamples; j++) {
					u64 q;

					if (!rc[j])
						continue;
					q = ref_next(&t, j);
					if (q >= worst) {
						worst = q;
						wid = j;
					}
				}
				if (nu < worst) {
					rc[wid] = false;
					rc[id] = true;
				}
			}
		}

		/* Policy. */
		if (dlc_policy_is_cached(t.p, id)) {
			hits++;
			dlc_policy_advance(t.p, 0, i + 1, i * 1000);
			continue;
		}
		dlc_policy_advance(t.p, 0, i + 1, i * 1000);
		if (t.p->ncached < slots) {
			dlc_policy_insert(t.p, id);
			continue;
		}
		v = dlc_policy_victim(t.p);
		KUNIT_ASSERT_NE(test, v, DLC_POLICY_NIL);
		if (dlc_policy_prefer(t.p, id, v)) {
			dlc_policy_remove(t.p, v);
			dlc_policy_insert(t.p, id);
		}
	}
	KUNIT_EXPECT_EQ_MSG(test, hits, rhits,
			    "n=%u len=%u slots=%u repeats=%d", nsamples, len,
			    slots, repeats);
	*hits_out = hits;
}

static void policy_belady_simulation(struct kunit *test)
{
	u32 hits, s;

	for (s = 0; s < 4; s++) {
		sim_once(test, 40, 40, 4, 10, false, 7 + s, &hits);
		sim_once(test, 30, 45, 4, 8, true, 70 + s, &hits);
		sim_once(test, 64, 64, 4, 32, false, 700 + s, &hits);
	}
	/*
	 * One use per sample per epoch: in steady state no policy beats
	 * capacity/size, and this one gets near it: over epochs 2..4 at
	 * least 2 * slots hits of 3 * 64 uses.
	 */
	sim_once(test, 64, 64, 4, 32, false, 9, &hits);
	KUNIT_EXPECT_GE(test, hits, 3 * 32 - 32);
}

/* Victim: no-next-use samples go first; ties impossible otherwise. */
static void policy_victim_prefer(struct kunit *test)
{
	u32 order[] = { 3, 1, 2, 0, 3, 1 };
	struct ptest t;

	pt_init(test, &t, 6, 64, 64, 3);
	KUNIT_ASSERT_EQ(test, pt_add(&t, 0, order, ARRAY_SIZE(order)), 0);
	pt_insert(&t, 0);
	pt_insert(&t, 2);
	/* 0 is used at 3, 2 at 2: 0 goes first. */
	KUNIT_EXPECT_EQ(test, dlc_policy_victim(t.p), 0);
	pt_insert(&t, 5);	/* never used: goes before anything */
	KUNIT_EXPECT_EQ(test, dlc_policy_victim(t.p), 5);
	KUNIT_EXPECT_TRUE(test, dlc_policy_prefer(t.p, 3, 0));
	KUNIT_EXPECT_FALSE(test, dlc_policy_prefer(t.p, 0, 2));
	KUNIT_EXPECT_FALSE(test, dlc_policy_prefer(t.p, 4, 5));
	pt_remove(&t, 5);
	pt_check(test, &t);
	/* After position 3, neither 0 nor 2 has a next use: a tie. */
	pt_advance(&t, 4);
	KUNIT_EXPECT_EQ(test, dlc_policy_key(t.p, dlc_policy_victim(t.p)),
			DLC_POLICY_NEVER);
	KUNIT_EXPECT_EQ(test, dlc_policy_key(t.p, 0), DLC_POLICY_NEVER);
	pt_check(test, &t);
	/* Inserting twice, removing twice: no change. */
	pt_insert(&t, 2);
	pt_insert(&t, 2);
	KUNIT_EXPECT_EQ(test, t.p->ncached, 2);
	pt_remove(&t, 0);
	pt_remove(&t, 0);
	KUNIT_EXPECT_EQ(test, t.p->ncached, 1);
	pt_check(test, &t);
}

/*
 * Two consumers, worked by hand. Consumer 0 reads 0..7, consumer 1 reads
 * 7, 0, 1, 2; both start at the default cost (1 ms per position) anchored
 * at (0 ns, position 0). Consumer 1 is then measured at 500 ms per
 * position, consumer 0 stalls and expires, consumer 1 goes, consumer 0
 * comes back.
 */
static void policy_two_consumers(struct kunit *test)
{
	u32 o0[] = { 0, 1, 2, 3, 4, 5, 6, 7 }, o1[] = { 7, 0, 1, 2 };
	const u64 ms = 1000000;
	struct dlc_policy *p = kunit_kzalloc(test, sizeof(*p), GFP_KERNEL);
	size_t sz = dlc_policy_mem_size(8, 64);
	size_t lsz = dlc_policy_line_mem_size(8, 64);
	void *mem = kunit_kzalloc(test, sz, GFP_KERNEL);
	void *lmem = kunit_kzalloc(test, lsz, GFP_KERNEL);
	u32 id;

	KUNIT_ASSERT_NOT_NULL(test, p);
	KUNIT_ASSERT_NOT_NULL(test, mem);
	KUNIT_ASSERT_NOT_NULL(test, lmem);
	KUNIT_ASSERT_EQ(test, dlc_policy_init(p, 8, 64, mem, sz, 0), 0);
	KUNIT_ASSERT_EQ(test, dlc_policy_add_consumer(p, lmem, lsz, 0), 1);
	KUNIT_ASSERT_EQ(test, dlc_policy_add_epoch(p, 0, 0, o0, 8), 0);
	KUNIT_ASSERT_EQ(test, dlc_policy_add_epoch(p, 1, 0, o1, 4), 0);
	for (id = 0; id < 8; id++)
		KUNIT_ASSERT_EQ(test, dlc_policy_insert(p, id), 0);

	/* Equal speeds: the sooner of the two uses. */
	KUNIT_EXPECT_EQ(test, dlc_policy_key(p, 0), 0);
	KUNIT_EXPECT_EQ(test, dlc_policy_key(p, 1), 1 * ms);
	KUNIT_EXPECT_EQ(test, dlc_policy_key(p, 2), 2 * ms);
	KUNIT_EXPECT_EQ(test, dlc_policy_key(p, 7), 0);
	KUNIT_EXPECT_EQ(test, dlc_policy_key(p, 6), 6 * ms);
	KUNIT_EXPECT_EQ(test, dlc_policy_victim(p), 6);
	KUNIT_EXPECT_TRUE(test, dlc_policy_prefer(p, 5, 6));
	KUNIT_EXPECT_FALSE(test, dlc_policy_prefer(p, 6, 5));

	/* Consumer 1 takes 500 ms for its first position: measured. */
	dlc_policy_advance(p, 1, 0, 0);
	dlc_policy_advance(p, 1, 1, 500 * ms);
	KUNIT_EXPECT_TRUE(test, p->line[1].measured);
	KUNIT_EXPECT_EQ(test, p->line[1].cost, 500 * ms);
	KUNIT_EXPECT_EQ(test, p->line[1].t0, 500 * ms);
	KUNIT_EXPECT_EQ(test, p->line[1].p0, 1);
	KUNIT_EXPECT_EQ(test, p->rebuilds, 1);
	KUNIT_EXPECT_EQ(test, dlc_policy_next_use(p, 1, 7), DLC_POLICY_NEVER);
	KUNIT_EXPECT_EQ(test, dlc_policy_key(p, 7), 7 * ms);
	KUNIT_EXPECT_EQ(test, dlc_policy_key(p, 1), 1 * ms);
	KUNIT_EXPECT_EQ(test, dlc_policy_victim(p), 7);

	/* Consumer 0 stalls: only consumer 1's uses count. */
	KUNIT_EXPECT_EQ(test, dlc_policy_expire(p, 600 * ms, 100 * ms), 1);
	KUNIT_EXPECT_FALSE(test, p->line[0].active);
	KUNIT_EXPECT_TRUE(test, p->line[1].active);
	KUNIT_EXPECT_EQ(test, p->rebuilds, 2);
	KUNIT_EXPECT_EQ(test, dlc_policy_key(p, 0), 500 * ms);
	KUNIT_EXPECT_EQ(test, dlc_policy_key(p, 1), 1000 * ms);
	KUNIT_EXPECT_EQ(test, dlc_policy_key(p, 2), 1500 * ms);
	KUNIT_EXPECT_EQ(test, dlc_policy_key(p, 3), DLC_POLICY_NEVER);
	KUNIT_EXPECT_EQ(test, dlc_policy_key(p, dlc_policy_victim(p)),
			DLC_POLICY_NEVER);
	KUNIT_EXPECT_TRUE(test, dlc_policy_prefer(p, 2, 3));
	KUNIT_EXPECT_FALSE(test, dlc_policy_prefer(p, 3, 4));

	/* Consumer 1 leaves: nothing is used by an active consumer. */
	dlc_policy_remove_consumer(p, 1);
	KUNIT_EXPECT_EQ(test, p->nlines, 1);
	KUNIT_EXPECT_EQ(test, p->rebuilds, 3);
	KUNIT_EXPECT_EQ(test, dlc_policy_key(p, 0), DLC_POLICY_NEVER);

	/* Consumer 0 comes back at 700 ms, past 0 and 1: re-anchored. */
	dlc_policy_advance(p, 0, 2, 700 * ms);
	KUNIT_EXPECT_TRUE(test, p->line[0].active);
	KUNIT_EXPECT_EQ(test, p->rebuilds, 4);
	KUNIT_EXPECT_EQ(test, p->line[0].t0, 700 * ms);
	KUNIT_EXPECT_EQ(test, p->line[0].p0, 2);
	KUNIT_EXPECT_EQ(test, dlc_policy_key(p, 2), 700 * ms);
	KUNIT_EXPECT_EQ(test, dlc_policy_key(p, 7), 705 * ms);
	KUNIT_EXPECT_EQ(test, dlc_policy_key(p, 0), DLC_POLICY_NEVER);
	KUNIT_EXPECT_EQ(test, dlc_policy_key(p, dlc_policy_victim(p)),
			DLC_POLICY_NEVER);
	KUNIT_EXPECT_TRUE(test, dlc_policy_prefer(p, 7, 1));
	KUNIT_EXPECT_TRUE(test, dlc_policy_prefer(p, 6, 7));
}

/*
 * Several consumers at different paces, against brute force: after each
 * random step (a consumer advancing, uploading an epoch, a sample cached
 * or dropped), every cached sample's key must be the soonest predicted
 * time, over the active lines, of its first position at or after the
 * line's cursor found by scanning the orders that line was given; the
 * victim must hold the largest key, and prefer() must compare keys. The
 * reference trusts only each line's anchor (t0, p0, cost) and active bit.
 */
#define MB_K	3
#define MB_N	24
#define MB_W	128
#define MB_CAP	8192

struct mb_line {
	u32 *seq;		/* every uploaded position's sample */
	u64 end;		/* positions uploaded */
	u32 epoch;		/* next epoch number */
};

/* Upload an epoch to line @c of @p and the reference: a shifted
 * permutation, or IDs with repeats. False when it would not fit. */
static bool mb_upload(struct kunit *test, struct dlc_policy *p,
		      struct mb_line *m, u32 c, bool repeats,
		      struct rnd_state *rnd)
{
	const struct dlc_policy_line *L = &p->line[c];
	u32 ids[MB_N], i;

	if (L->end - L->cursor + MB_N > MB_W || m[c].end + MB_N > MB_CAP)
		return false;
	for (i = 0; i < MB_N; i++)
		ids[i] = repeats ? prandom_u32_state(rnd) % MB_N :
			 (i * 7 + m[c].epoch) % MB_N;
	KUNIT_EXPECT_EQ(test, dlc_policy_add_epoch(p, c, m[c].epoch, ids,
						   MB_N), 0);
	memcpy(m[c].seq + m[c].end, ids, sizeof(ids));
	m[c].end += MB_N;
	m[c].epoch++;
	return true;
}

static u64 mb_key(const struct dlc_policy *p, const struct mb_line *m, u32 id)
{
	u64 key = DLC_POLICY_NEVER, q, t;
	u32 c;

	for (c = 0; c < MB_K; c++) {
		const struct dlc_policy_line *L = &p->line[c];

		if (!L->used || !L->active)
			continue;
		for (q = L->cursor; q < m[c].end; q++)
			if (m[c].seq[q] == id)
				break;
		if (q == m[c].end)
			continue;
		t = L->t0 + (q - L->p0) * L->cost;
		if (t < key)
			key = t;
	}
	return key;
}

static void policy_multi_brute(struct kunit *test)
{
	struct dlc_policy *p = kunit_kzalloc(test, sizeof(*p), GFP_KERNEL);
	size_t sz = dlc_policy_mem_size(MB_N, MB_W);
	size_t lsz = dlc_policy_line_mem_size(MB_N, MB_W);
	void *mem = kunit_kzalloc(test, sz, GFP_KERNEL);
	struct mb_line m[MB_K] = {};
	struct rnd_state rnd;
	u64 now = 1000000000ULL, maxk, k;
	u32 step, c, i, id, v, ncached;

	KUNIT_ASSERT_NOT_NULL(test, p);
	KUNIT_ASSERT_NOT_NULL(test, mem);
	KUNIT_ASSERT_EQ(test, dlc_policy_init(p, MB_N, MB_W, mem, sz, now), 0);
	prandom_seed_state(&rnd, 12);
	for (c = 0; c < MB_K; c++) {
		m[c].seq = kunit_kzalloc(test, MB_CAP * sizeof(u32), GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, m[c].seq);
		if (c) {
			void *lm = kunit_kzalloc(test, lsz, GFP_KERNEL);

			KUNIT_ASSERT_NOT_NULL(test, lm);
			KUNIT_ASSERT_EQ(test,
					dlc_policy_add_consumer(p, lm, lsz, now),
					(int)c);
		}
	}
	for (step = 0; step < 3000; step++) {
		u32 r = prandom_u32_state(&rnd) % 10;
		struct dlc_policy_line *L;

		/* Every line keeps an epoch ahead of its cursor. */
		for (c = 0; c < MB_K; c++)
			if (p->line[c].end - p->line[c].cursor < MB_N)
				mb_upload(test, p, m, c, false, &rnd);
		c = prandom_u32_state(&rnd) % MB_K;
		if (r < 4) {
			/* Paces 10 : 5 : 2 on a shared clock: costs 1 : 2 : 5. */
			u32 w = prandom_u32_state(&rnd) % 17;
			u64 d = 1 + prandom_u32_state(&rnd) % 5, to;

			c = w < 10 ? 0 : w < 15 ? 1 : 2;
			L = &p->line[c];
			to = min(L->cursor + d, L->end);
			now += 1000000ULL;
			dlc_policy_advance(p, c, to, now);
		} else if (r < 6) {
			mb_upload(test, p, m, c, r == 5, &rnd);
		} else if (r < 9) {
			dlc_policy_insert(p, prandom_u32_state(&rnd) % MB_N);
		} else {
			dlc_policy_remove(p, prandom_u32_state(&rnd) % MB_N);
		}

		maxk = 0;
		ncached = 0;
		for (id = 0; id < MB_N; id++) {
			k = mb_key(p, m, id);
			KUNIT_ASSERT_EQ_MSG(test, dlc_policy_key(p, id), k,
					    "step %u: key of %u", step, id);
			if (dlc_policy_is_cached(p, id)) {
				ncached++;
				maxk = max(maxk, k);
			}
		}
		v = dlc_policy_victim(p);
		if (!ncached) {
			KUNIT_ASSERT_EQ(test, v, DLC_POLICY_NIL);
			continue;
		}
		KUNIT_ASSERT_LT(test, v, (u32)MB_N);
		KUNIT_ASSERT_EQ_MSG(test, mb_key(p, m, v), maxk,
				    "step %u: victim %u", step, v);
		for (i = 0; i < 4; i++) {
			u32 a = prandom_u32_state(&rnd) % MB_N;
			u32 b = prandom_u32_state(&rnd) % MB_N;

			KUNIT_ASSERT_EQ(test, dlc_policy_prefer(p, a, b),
					mb_key(p, m, a) < mb_key(p, m, b));
		}
	}
	/* The paces were measured: the slowest line costs the most. */
	KUNIT_EXPECT_GT(test, p->line[2].cost, p->line[0].cost);
}

static struct kunit_case policy_cases[] = {
	KUNIT_CASE(policy_mem_size_limits),
	KUNIT_CASE(policy_add_epoch_checks),
	KUNIT_CASE(policy_victim_prefer),
	KUNIT_CASE(policy_random_vs_reference),
	KUNIT_CASE(policy_belady_simulation),
	KUNIT_CASE(policy_two_consumers),
	KUNIT_CASE(policy_multi_brute),
	{}
};

static struct kunit_suite policy_suite = {
	.name = "dlcache_policy",
	.test_cases = policy_cases,
};

kunit_test_suites(&policy_suite);

MODULE_LICENSE("GPL");
