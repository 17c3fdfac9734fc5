// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit: the page-backed sample store (kmod/store.c): samples, admission
 * by next use, eviction, capacity, stealing between data sets, shrinking,
 * fill placeholders and counters.
 */
#include <kunit/test.h>
#include <linux/slab.h>
#include <linux/uio.h>

#include "../kmod/dlc.h"

struct st_fixture {
	struct dlc_cache cache;
};

static int st_init(struct kunit *test)
{
	struct st_fixture *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);

	if (!f)
		return -ENOMEM;
	dlc_cache_init(&f->cache, 4 * PAGE_SIZE);
	test->priv = f;
	return 0;
}

static void st_unlink(struct dlc_cache *cache, struct dlc_dataset *ds)
{
	mutex_lock(&cache->lock);
	list_del_init(&ds->node);
	cache->ndatasets--;
	dlc_cache_retire(cache, ds);
	mutex_unlock(&cache->lock);
	dlc_dataset_free(ds);
}

static void st_exit(struct kunit *test)
{
	struct st_fixture *f = test->priv;
	struct dlc_dataset *ds, *tmp;

	list_for_each_entry_safe(ds, tmp, &f->cache.datasets, node)
		st_unlink(&f->cache, ds);
	dlc_cache_destroy(&f->cache);
}

static struct dlc_dataset *st_ds(struct kunit *test, u64 key, u32 n)
{
	struct st_fixture *f = test->priv;
	u64 k[2] = { key, ~key };
	struct dlc_dataset *ds;

	ds = dlc_dataset_create(&f->cache, k, n, 0, 0, 0600);
	KUNIT_ASSERT_FALSE(test, IS_ERR(ds));
	mutex_lock(&f->cache.lock);
	list_add_tail(&ds->node, &f->cache.datasets);
	f->cache.ndatasets++;
	mutex_unlock(&f->cache.lock);
	return ds;
}

static void st_order(struct kunit *test, struct dlc_dataset *ds, u32 epoch,
		     const u32 *ids, u32 len)
{
	mutex_lock(&ds->lock);
	KUNIT_ASSERT_EQ(test, dlc_store_set_order(ds, NULL, epoch, ids, len), 0);
	mutex_unlock(&ds->lock);
}

/* A sample of @size bytes filled with a pattern of @id. */
static struct dlc_sample *st_sample(struct kunit *test, u32 id, u32 size)
{
	struct dlc_sample *s = dlc_sample_alloc(id, size, GFP_KERNEL);
	struct iov_iter it;
	struct kvec kv;
	u8 *buf;
	u32 i;

	KUNIT_ASSERT_NOT_NULL(test, s);
	buf = kunit_kzalloc(test, size, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	for (i = 0; i < size; i++)
		buf[i] = (u8)(id * 31 + i);
	kv.iov_base = buf;
	kv.iov_len = size;
	iov_iter_kvec(&it, WRITE, &kv, 1, size);
	KUNIT_ASSERT_EQ(test, dlc_sample_copy_in(s, &it), 0);
	return s;
}

static bool st_admit(struct dlc_dataset *ds, struct dlc_sample *s)
{
	bool ok;

	mutex_lock(&ds->lock);
	ok = dlc_store_admit(ds, s, false);
	mutex_unlock(&ds->lock);
	if (!ok)
		dlc_sample_put(s);
	return ok;
}

static bool st_cached(struct dlc_dataset *ds, u32 id)
{
	struct dlc_sample *s;
	bool ret;

	mutex_lock(&ds->lock);
	s = dlc_store_lookup(ds, id);
	ret = s && test_bit(DLC_S_CACHED, &s->state);
	mutex_unlock(&ds->lock);
	return ret;
}

static void store_copy_roundtrip(struct kunit *test)
{
	static const u32 sizes[] = { 1, 100, PAGE_SIZE - 1, PAGE_SIZE,
				     PAGE_SIZE + 1, 3 * PAGE_SIZE + 5 };
	struct iov_iter it;
	struct kvec kv;
	u32 i, j;
	u8 *out;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		struct dlc_sample *s = st_sample(test, i, sizes[i]);

		KUNIT_EXPECT_EQ(test, s->npages, DIV_ROUND_UP(sizes[i], PAGE_SIZE));
		KUNIT_EXPECT_EQ(test, dlc_sample_charge(s),
				(u64)s->npages * PAGE_SIZE);
		out = kunit_kzalloc(test, sizes[i] + 16, GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, out);
		kv.iov_base = out;
		kv.iov_len = sizes[i] + 16;
		iov_iter_kvec(&it, READ, &kv, 1, sizes[i] + 16);
		KUNIT_EXPECT_EQ(test, dlc_sample_copy_out(s, &it), 0);
		for (j = 0; j < sizes[i]; j++)
			if (out[j] != (u8)(i * 31 + j))
				break;
		KUNIT_EXPECT_EQ(test, j, sizes[i]);
		KUNIT_EXPECT_EQ(test, out[sizes[i]], 0);
		dlc_sample_put(s);
	}
	/* A short source is -EFAULT. */
	{
		struct dlc_sample *s = dlc_sample_alloc(0, 2 * PAGE_SIZE,
							GFP_KERNEL);
		u8 small[16] = {};

		KUNIT_ASSERT_NOT_NULL(test, s);
		kv.iov_base = small;
		kv.iov_len = sizeof(small);
		iov_iter_kvec(&it, WRITE, &kv, 1, sizeof(small));
		KUNIT_EXPECT_EQ(test, dlc_sample_copy_in(s, &it), -EFAULT);
		dlc_sample_put(s);
	}
}

/* Capacity 4 pages; order 0..7 then again: admission by next use. */
static void store_admission_by_next_use(struct kunit *test)
{
	struct st_fixture *f = test->priv;
	u32 ids[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	u32 rev[] = { 7, 6, 5, 4, 3, 2, 1, 0 };
	struct dlcache_sqe use = {};
	struct dlc_dataset *ds;
	u32 i;

	ds = st_ds(test, 1, 8);
	st_order(test, ds, 1, ids, 8);
	st_order(test, ds, 2, rev, 8);
	/* Epoch 1: fill the cache with 0..3 while using them. */
	for (i = 0; i < 4; i++) {
		mutex_lock(&ds->lock);
		dlc_store_use(ds, NULL, i, &use);
		mutex_unlock(&ds->lock);
		KUNIT_EXPECT_TRUE(test, st_admit(ds, st_sample(test, i, 100)));
	}
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->cache.used), 4 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, ds->used, 4 * PAGE_SIZE);
	/*
	 * At 4: next uses (epoch 2 reversed, base 8) are 0 -> 15, 1 -> 14,
	 * 2 -> 13, 3 -> 12, 4 -> 11. Sample 4 is used sooner than 0: admit,
	 * evicting 0.
	 */
	mutex_lock(&ds->lock);
	dlc_store_use(ds, NULL, 4, &use);
	mutex_unlock(&ds->lock);
	KUNIT_EXPECT_TRUE(test, st_admit(ds, st_sample(test, 4, 100)));
	KUNIT_EXPECT_FALSE(test, st_cached(ds, 0));
	KUNIT_EXPECT_TRUE(test, st_cached(ds, 4));
	KUNIT_EXPECT_EQ(test, ds->st.evictions, 1);
	/* Sample 0 (next use 15) is used later than all cached: bypass. */
	KUNIT_EXPECT_FALSE(test, st_admit(ds, st_sample(test, 0, 100)));
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->cache.used), 4 * PAGE_SIZE);
	/* A sample larger than the capacity never goes in. */
	KUNIT_EXPECT_FALSE(test, st_admit(ds, st_sample(test, 5,
							5 * PAGE_SIZE)));
	/* A 2-page sample used soon evicts two. */
	mutex_lock(&ds->lock);
	dlc_store_use(ds, NULL, 5, &use);
	dlc_store_use(ds, NULL, 6, &use);
	mutex_unlock(&ds->lock);
	KUNIT_EXPECT_TRUE(test, st_admit(ds, st_sample(test, 7,
						       2 * PAGE_SIZE)));
	KUNIT_EXPECT_LE(test, atomic64_read(&f->cache.used), 4 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, ds->ncached, 3);
	KUNIT_EXPECT_FALSE(test, st_cached(ds, 1));
}

static void store_capacity_shrink(struct kunit *test)
{
	struct st_fixture *f = test->priv;
	u32 ids[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	struct dlc_dataset *ds;
	u64 old;
	u32 i;

	ds = st_ds(test, 2, 8);
	st_order(test, ds, 1, ids, 8);
	dlc_cache_set_capacity(&f->cache, 8 * PAGE_SIZE);
	for (i = 0; i < 8; i++)
		KUNIT_EXPECT_TRUE(test, st_admit(ds, st_sample(test, i, 10)));
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->cache.ncached), 8);
	/* Lowering evicts the farthest next uses first: 7, 6, 5. */
	old = dlc_cache_set_capacity(&f->cache, 5 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, old, 8 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->cache.used), 5 * PAGE_SIZE);
	for (i = 0; i < 8; i++)
		KUNIT_EXPECT_EQ(test, st_cached(ds, i), i < 5);
	/* The shrinker path gives back what it is asked for. */
	KUNIT_EXPECT_EQ(test, dlc_cache_shrink(&f->cache, 2 * PAGE_SIZE, true),
			2 * PAGE_SIZE);
	KUNIT_EXPECT_TRUE(test, st_cached(ds, 0));
	KUNIT_EXPECT_FALSE(test, st_cached(ds, 4));
	KUNIT_EXPECT_EQ(test, ds->st.shrinker_evictions, 2);
	/* Drop empties it. */
	mutex_lock(&ds->lock);
	KUNIT_EXPECT_EQ(test, dlc_store_drop(ds), 3 * PAGE_SIZE);
	mutex_unlock(&ds->lock);
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->cache.used), 0);
	KUNIT_EXPECT_EQ(test, dlc_cache_shrink(&f->cache, PAGE_SIZE, true), 0);
}

/* An empty data set takes room from the one that holds everything. */
static void store_steal_between_datasets(struct kunit *test)
{
	struct st_fixture *f = test->priv;
	struct dlc_dataset *a, *b;
	u32 ids[] = { 0, 1, 2, 3 };
	u32 i;

	a = st_ds(test, 3, 4);
	b = st_ds(test, 4, 4);
	st_order(test, a, 1, ids, 4);
	st_order(test, b, 1, ids, 4);
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_TRUE(test, st_admit(a, st_sample(test, i, 10)));
	KUNIT_EXPECT_EQ(test, a->used, 4 * PAGE_SIZE);
	/* b holds less than its share (2 pages): it takes from a. */
	KUNIT_EXPECT_TRUE(test, st_admit(b, st_sample(test, 0, 10)));
	KUNIT_EXPECT_TRUE(test, st_admit(b, st_sample(test, 1, 10)));
	KUNIT_EXPECT_EQ(test, a->used, 2 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, b->used, 2 * PAGE_SIZE);
	/* a's farthest next uses went first. */
	KUNIT_EXPECT_TRUE(test, st_cached(a, 0));
	KUNIT_EXPECT_TRUE(test, st_cached(a, 1));
	/* At its share, b competes inside itself: 3 is used after 0, 1. */
	KUNIT_EXPECT_FALSE(test, st_admit(b, st_sample(test, 3, 10)));
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->cache.used), 4 * PAGE_SIZE);
	/* Freeing a data set gives its bytes back and keeps its counters. */
	st_unlink(&f->cache, a);
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->cache.used), 2 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, f->cache.retired.inserts, 0);
	KUNIT_EXPECT_EQ(test, f->cache.retired.evictions, 2);
}

/*
 * Shares by owner: owner 2's four data sets split owner 2's half of the
 * capacity and take no more from owner 1's one data set. (By data set
 * alone, each would take a fifth and leave owner 1 a quarter.)
 */
static void store_share_by_owner(struct kunit *test)
{
	struct st_fixture *f = test->priv;
	u32 ids[16], i, j;
	struct dlc_dataset *a, *b[4];

	dlc_cache_set_capacity(&f->cache, 16 * PAGE_SIZE);
	for (i = 0; i < 16; i++)
		ids[i] = i;
	a = st_ds(test, 10, 16);
	a->acct = KUIDT_INIT(1);
	st_order(test, a, 1, ids, 16);
	for (i = 0; i < 16; i++)
		KUNIT_EXPECT_TRUE(test, st_admit(a, st_sample(test, i, 10)));
	for (j = 0; j < 4; j++) {
		b[j] = st_ds(test, 11 + j, 4);
		b[j]->acct = KUIDT_INIT(2);
		st_order(test, b[j], 1, ids, 4);
	}
	for (i = 0; i < 4; i++)
		for (j = 0; j < 4; j++)
			st_admit(b[j], st_sample(test, i, 10));
	KUNIT_EXPECT_EQ(test, a->used, 8 * PAGE_SIZE);
	for (j = 0; j < 4; j++) {
		KUNIT_EXPECT_EQ(test, b[j]->used, 2 * PAGE_SIZE);
		/* Within its share, each kept its nearest next uses. */
		KUNIT_EXPECT_TRUE(test, st_cached(b[j], 0));
		KUNIT_EXPECT_TRUE(test, st_cached(b[j], 1));
	}
	/* a gave up its farthest next uses. */
	KUNIT_EXPECT_TRUE(test, st_cached(a, 7));
	KUNIT_EXPECT_FALSE(test, st_cached(a, 8));
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->cache.used), 16 * PAGE_SIZE);
}

/*
 * A form set (DLCACHE_FEAT_FORMS) is charged as any data set of its
 * owner: owner 1's encoded set and its form set, of one key, hold their
 * samples apart, and together they keep owner 1's share when owner 2
 * needs the room; within the share, the forms that fill it give way, not
 * the encoded set below its data set's share.
 */
static void store_form_set_charged(struct kunit *test)
{
	struct st_fixture *f = test->priv;
	u32 ids[16], i;
	struct dlc_dataset *a, *af, *b;

	dlc_cache_set_capacity(&f->cache, 16 * PAGE_SIZE);
	for (i = 0; i < 16; i++)
		ids[i] = i;
	a = st_ds(test, 20, 16);
	af = st_ds(test, 20, 16);
	af->form = 1;
	b = st_ds(test, 21, 16);
	a->acct = af->acct = KUIDT_INIT(1);
	b->acct = KUIDT_INIT(2);
	st_order(test, a, 1, ids, 16);
	st_order(test, af, 1, ids, 16);
	st_order(test, b, 1, ids, 16);
	KUNIT_EXPECT_TRUE(test, st_admit(a, st_sample(test, 0, 10)));
	KUNIT_EXPECT_TRUE(test, st_admit(a, st_sample(test, 1, 10)));
	/* Forms of the same IDs, in pages of their own: the cache's rest. */
	for (i = 0; i < 14; i++)
		KUNIT_EXPECT_TRUE(test, st_admit(af, st_sample(test, i, 3 * 10)));
	KUNIT_EXPECT_TRUE(test, st_cached(a, 0) && st_cached(af, 0));
	KUNIT_EXPECT_FALSE(test, st_cached(a, 2));
	KUNIT_EXPECT_EQ(test, a->used + af->used, 16 * PAGE_SIZE);
	for (i = 0; i < 8; i++)
		st_admit(b, st_sample(test, i, 10));
	/* Owner 1's half, forms included; its encoded samples kept. */
	KUNIT_EXPECT_EQ(test, b->used, 8 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, a->used + af->used, 8 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, a->used, 2 * PAGE_SIZE);
	KUNIT_EXPECT_TRUE(test, st_cached(a, 0) && st_cached(a, 1));
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->cache.used), 16 * PAGE_SIZE);
}

/* Mark @ds idle, or not, as dataset.c does at a last detach and an ATTACH. */
static void st_set_idle(struct dlc_cache *cache, struct dlc_dataset *ds,
			bool idle)
{
	mutex_lock(&cache->lock);
	if (ds->idle != idle)
		cache->nidle += idle ? 1 : -1;
	ds->idle = idle;
	mutex_unlock(&cache->lock);
}

/*
 * Idle data sets give way first: admission takes room from an idle set
 * although an attached one holds more, and shrinking empties idle sets
 * before it spreads over the attached ones.
 */
static void store_idle_gives_way_first(struct kunit *test)
{
	struct st_fixture *f = test->priv;
	u32 ids[] = { 0, 1, 2, 3 };
	struct dlc_dataset *a, *b, *c;
	u32 i;

	dlc_cache_set_capacity(&f->cache, 8 * PAGE_SIZE);
	a = st_ds(test, 5, 4);
	b = st_ds(test, 6, 4);
	c = st_ds(test, 7, 4);
	st_order(test, a, 1, ids, 4);
	st_order(test, b, 1, ids, 4);
	st_order(test, c, 1, ids, 4);
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_TRUE(test, st_admit(a, st_sample(test, i, 10)));
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_TRUE(test, st_admit(b, st_sample(test, i, 10)));
	st_set_idle(&f->cache, b, true);
	/* Full after c's first; its second takes from idle b, not from a. */
	KUNIT_EXPECT_TRUE(test, st_admit(c, st_sample(test, 0, 10)));
	KUNIT_EXPECT_TRUE(test, st_admit(c, st_sample(test, 1, 10)));
	KUNIT_EXPECT_EQ(test, a->used, 4 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, b->used, 2 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, c->used, 2 * PAGE_SIZE);
	/* Shrinking 3 pages: idle b's 2 first, then 1 more elsewhere. */
	KUNIT_EXPECT_EQ(test, dlc_cache_shrink(&f->cache, 3 * PAGE_SIZE, false),
			3 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, b->used, 0);
	KUNIT_EXPECT_EQ(test, a->used + c->used, 5 * PAGE_SIZE);
	/* The shrinker path (trylock) takes the idle set's first too. */
	st_set_idle(&f->cache, b, false);
	st_set_idle(&f->cache, a, true);
	KUNIT_EXPECT_EQ(test, dlc_cache_shrink(&f->cache, PAGE_SIZE, true),
			PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, c->used, 2 * PAGE_SIZE);
	st_set_idle(&f->cache, a, false);
	KUNIT_EXPECT_EQ(test, f->cache.nidle, 0);
}

static void store_fill_placeholders(struct kunit *test)
{
	struct st_fixture *f = test->priv;
	struct dlc_sample *ph, *ph2, *s;
	struct dlc_dataset *ds;
	u32 ids[] = { 0, 1 };

	ds = st_ds(test, 5, 2);
	st_order(test, ds, 1, ids, 2);
	ph = dlc_sample_placeholder(1, GFP_KERNEL);
	ph2 = dlc_sample_placeholder(1, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ph);
	KUNIT_ASSERT_NOT_NULL(test, ph2);
	mutex_lock(&ds->lock);
	KUNIT_EXPECT_EQ(test, dlc_store_set_filling(ds, ph), 0);
	KUNIT_EXPECT_EQ(test, dlc_store_set_filling(ds, ph2), -EBUSY);
	KUNIT_EXPECT_EQ(test, ds->nfilling, 1);
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->cache.nfilling), 1);
	KUNIT_EXPECT_PTR_EQ(test, dlc_store_lookup(ds, 1), ph);
	/* A PUT replaces the placeholder, then the fill ends. */
	s = st_sample(test, 1, 10);
	KUNIT_EXPECT_TRUE(test, dlc_store_admit(ds, s, true));
	KUNIT_EXPECT_PTR_EQ(test, dlc_store_lookup(ds, 1), s);
	dlc_store_erase(ds, ph);
	KUNIT_EXPECT_EQ(test, ds->nfilling, 0);
	KUNIT_EXPECT_PTR_EQ(test, dlc_store_lookup(ds, 1), s);
	/* Evicting a placeholder-free ID that is not cached does nothing. */
	KUNIT_EXPECT_EQ(test, dlc_store_evict(ds, 0, false), 0);
	mutex_unlock(&ds->lock);
	dlc_sample_put(ph2);
	KUNIT_EXPECT_EQ(test, atomic64_read(&f->cache.nfilling), 0);

	/* A placeholder erased without a PUT leaves the store. */
	ph = dlc_sample_placeholder(0, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ph);
	mutex_lock(&ds->lock);
	KUNIT_EXPECT_EQ(test, dlc_store_set_filling(ds, ph), 0);
	dlc_store_erase(ds, ph);
	KUNIT_EXPECT_NULL(test, dlc_store_lookup(ds, 0));
	mutex_unlock(&ds->lock);
}

static void store_use_moves_cursor(struct kunit *test)
{
	struct dlcache_sqe sqe = {};
	struct dlc_dataset *ds;
	u32 ids[64], i;
	u64 k[2] = { 6, 6 };
	struct st_fixture *f = test->priv;

	ds = dlc_dataset_create(&f->cache, k, 64, 128, 4, 0600);
	KUNIT_ASSERT_FALSE(test, IS_ERR(ds));
	mutex_lock(&f->cache.lock);
	list_add_tail(&ds->node, &f->cache.datasets);
	f->cache.ndatasets++;
	mutex_unlock(&f->cache.lock);
	KUNIT_EXPECT_EQ(test, ds->lookahead, 4);
	for (i = 0; i < 64; i++)
		ids[i] = 63 - i;
	st_order(test, ds, 1, ids, 64);
	st_order(test, ds, 2, ids, 64);
	mutex_lock(&ds->lock);
	/* By ID, within the lookahead: sample 61 is at position 2. */
	dlc_store_use(ds, NULL, 61, &sqe);
	KUNIT_EXPECT_EQ(test, ds->policy.line[0].cursor, 3);
	/* Too far ahead: sample 0 at position 63 does not move it. */
	dlc_store_use(ds, NULL, 0, &sqe);
	KUNIT_EXPECT_EQ(test, ds->policy.line[0].cursor, 3);
	/* A late GET of a passed use does not jump an epoch. */
	dlc_store_use(ds, NULL, 63, &sqe);
	KUNIT_EXPECT_EQ(test, ds->policy.line[0].cursor, 3);
	/* By position: epoch 1 index 40. */
	sqe.flags = DLCACHE_SQE_F_AT;
	sqe.epoch = 1;
	sqe.index = 40;
	dlc_store_use(ds, NULL, 23, &sqe);
	KUNIT_EXPECT_EQ(test, ds->policy.line[0].cursor, 41);
	/* An unknown epoch moves nothing. */
	sqe.epoch = 9;
	dlc_store_use(ds, NULL, 23, &sqe);
	KUNIT_EXPECT_EQ(test, ds->policy.line[0].cursor, 41);
	/* Nor does a position where the order has another sample (13). */
	sqe.epoch = 1;
	sqe.index = 50;
	dlc_store_use(ds, NULL, 5, &sqe);
	KUNIT_EXPECT_EQ(test, ds->policy.line[0].cursor, 41);
	dlc_store_use(ds, NULL, 13, &sqe);
	KUNIT_EXPECT_EQ(test, ds->policy.line[0].cursor, 51);
	/* Index past the order's end. */
	sqe.index = 64;
	dlc_store_use(ds, NULL, 0, &sqe);
	KUNIT_EXPECT_EQ(test, ds->policy.line[0].cursor, 51);
	/* Orders: bad ID, epoch not increasing, window full. */
	ids[0] = 64;
	KUNIT_EXPECT_EQ(test, dlc_store_set_order(ds, NULL, 3, ids, 64), -EINVAL);
	ids[0] = 0;
	KUNIT_EXPECT_EQ(test, dlc_store_set_order(ds, NULL, 2, ids, 1), -EINVAL);
	KUNIT_EXPECT_EQ(test, dlc_store_set_order(ds, NULL, 3, ids, 64), -ENOSPC);
	KUNIT_EXPECT_EQ(test, dlc_store_set_order(ds, NULL, 3, ids, 13), 0);
	mutex_unlock(&ds->lock);
}

/* A consumer of @ds for @job with member @m: joined or created. */
static int st_join(struct kunit *test, struct dlc_dataset *ds,
		   struct dlc_member *m, u64 job)
{
	struct dlc_consumer *spare = NULL;
	int ret;

	INIT_LIST_HEAD(&m->link);
	mutex_lock(&ds->lock);
	ret = dlc_store_join(ds, m, job, &spare);
	mutex_unlock(&ds->lock);
	if (ret != -EAGAIN)
		return ret;
	spare = dlc_consumer_alloc(ds, job);
	KUNIT_ASSERT_FALSE(test, IS_ERR(spare));
	mutex_lock(&ds->lock);
	ret = dlc_store_join(ds, m, job, &spare);
	mutex_unlock(&ds->lock);
	if (spare)
		dlc_consumer_free(spare);
	return ret;
}

static void st_leave(struct dlc_dataset *ds, struct dlc_member *m)
{
	struct dlc_consumer *c;

	mutex_lock(&ds->lock);
	c = dlc_store_leave(ds, m);
	mutex_unlock(&ds->lock);
	if (c)
		dlc_consumer_free(c);
}

/*
 * Consumers: two members of one job (their cursor is the slowest's), a
 * second job with its own order, eviction by the soonest use over both,
 * and leaving.
 */
static void store_consumers(struct kunit *test)
{
	struct dlc_member r0 = {}, r1 = {}, other = {};
	struct dlcache_sqe sqe = { .flags = DLCACHE_SQE_F_AT, .epoch = 1 };
	struct dlc_sample *s;
	struct dlc_dataset *ds = st_ds(test, 7, 16);
	u32 fwd[16], rev[16], i;

	for (i = 0; i < 16; i++) {
		fwd[i] = i;
		rev[i] = 15 - i;
	}
	KUNIT_ASSERT_EQ(test, st_join(test, ds, &r0, 1), 1);
	KUNIT_ASSERT_EQ(test, st_join(test, ds, &r1, 1), 0);
	KUNIT_ASSERT_EQ(test, st_join(test, ds, &other, 2), 1);
	mutex_lock(&ds->lock);
	KUNIT_EXPECT_EQ(test, dlc_store_set_order(ds, &r0, 1, fwd, 16), 0);
	/* The same job's second upload of an epoch: refused. */
	KUNIT_EXPECT_EQ(test, dlc_store_set_order(ds, &r1, 1, fwd, 16), -EINVAL);
	/* Another job: a time line of its own. */
	KUNIT_EXPECT_EQ(test, dlc_store_set_order(ds, &other, 1, rev, 16), 0);
	KUNIT_EXPECT_EQ(test, dlc_store_consumers(ds), 2);

	/* r0 at index 8, r1 at index 1: the job's cursor is r1's. */
	sqe.index = 8;
	dlc_store_use(ds, &r0, 8, &sqe);
	sqe.index = 1;
	dlc_store_use(ds, &r1, 1, &sqe);
	KUNIT_EXPECT_EQ(test, ds->policy.line[dlc_store_line(&r0)].cursor, 2);
	/* The other job's line did not move. */
	KUNIT_EXPECT_EQ(test, ds->policy.line[dlc_store_line(&other)].cursor, 0);

	/*
	 * Cache 0, 4 and 15 in a cache of 3 pages, then offer 7: job 1
	 * (cursor 2) uses 4 at 4, 15 at 15, job 2 uses 15 at 0 and 0 at 15;
	 * 0 is the only sample neither uses soon, so 7 (used by job 1 at 7)
	 * replaces 0.
	 */
	ds->cache->capacity = 3 * PAGE_SIZE;
	for (i = 0; i < 3; i++) {
		s = st_sample(test, i == 0 ? 0 : i == 1 ? 4 : 15, 100);
		KUNIT_EXPECT_TRUE(test, dlc_store_admit(ds, s, false));
	}
	s = st_sample(test, 7, 100);
	KUNIT_EXPECT_TRUE(test, dlc_store_admit(ds, s, false));
	KUNIT_EXPECT_NULL(test, dlc_store_lookup(ds, 0));
	KUNIT_EXPECT_NOT_NULL(test, dlc_store_lookup(ds, 15));
	KUNIT_EXPECT_NOT_NULL(test, dlc_store_lookup(ds, 4));
	mutex_unlock(&ds->lock);

	/* r1 leaves: r0 alone moves the cursor to 9. */
	st_leave(ds, &r1);
	KUNIT_EXPECT_EQ(test, ds->policy.line[dlc_store_line(&r0)].cursor, 9);
	st_leave(ds, &r0);
	mutex_lock(&ds->lock);
	KUNIT_EXPECT_EQ(test, dlc_store_consumers(ds), 1);
	mutex_unlock(&ds->lock);
	st_leave(ds, &other);
	mutex_lock(&ds->lock);
	KUNIT_EXPECT_EQ(test, dlc_store_consumers(ds), 0);
	KUNIT_EXPECT_EQ(test, ds->policy.nlines, 1);
	mutex_unlock(&ds->lock);
}

static void store_dataset_limits(struct kunit *test)
{
	struct st_fixture *f = test->priv;
	u64 k[2] = { 7, 7 };
	struct dlc_dataset *ds;

	ds = dlc_dataset_create(&f->cache, k, 0, 0, 0, 0600);
	KUNIT_EXPECT_EQ(test, PTR_ERR(ds), -EINVAL);
	ds = dlc_dataset_create(&f->cache, k, DLC_MAX_SAMPLES + 1, 0, 0, 0600);
	KUNIT_EXPECT_EQ(test, PTR_ERR(ds), -EINVAL);
	ds = dlc_dataset_create(&f->cache, k, 10, DLC_MAX_WINDOW + 1, 0, 0600);
	KUNIT_EXPECT_EQ(test, PTR_ERR(ds), -EINVAL);
	ds = dlc_dataset_create(&f->cache, k, 10, 0, 0, 0640);
	KUNIT_ASSERT_FALSE(test, IS_ERR(ds));
	KUNIT_EXPECT_EQ(test, ds->window, 64);
	KUNIT_EXPECT_EQ(test, ds->lookahead, 64);
	KUNIT_EXPECT_EQ(test, ds->mode, 0640);
	KUNIT_EXPECT_EQ(test, ds->policy_size, dlc_dataset_mem_size(10, 0));
	KUNIT_EXPECT_EQ(test, dlc_dataset_mem_size(10, 0),
			dlc_policy_mem_size(10, 64));
	KUNIT_EXPECT_EQ(test, dlc_dataset_mem_size(0, 0), 0);
	KUNIT_EXPECT_EQ(test, dlc_dataset_mem_size(10, DLC_MAX_WINDOW + 1), 0);
	dlc_dataset_free(ds);
}

/*
 * A reservation holds capacity before the sample exists; an evicted sample
 * that a copier still references stays charged (inflight) until its last
 * reference drops.
 */
static void store_copies_in_flight(struct kunit *test)
{
	struct st_fixture *f = test->priv;
	struct dlc_cache *cache = &f->cache;
	struct dlc_dataset *ds;
	struct dlc_sample *s;
	u32 i;

	ds = st_ds(test, 9, 8);
	/* Cache of 4 pages: 2 cached, 2 reserved for PUTs still copying. */
	for (i = 0; i < 2; i++)
		KUNIT_ASSERT_TRUE(test, st_admit(ds, st_sample(test, i, PAGE_SIZE)));
	mutex_lock(&ds->lock);
	KUNIT_EXPECT_TRUE(test, dlc_store_reserve(ds, 4, 2 * PAGE_SIZE, false));
	KUNIT_EXPECT_EQ(test, atomic64_read(&cache->used), 4 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, atomic64_read(&cache->inflight), 2 * PAGE_SIZE);
	/* Full: a further reservation evicts; the reserved bytes stay. */
	KUNIT_EXPECT_TRUE(test, dlc_store_reserve(ds, 5, PAGE_SIZE, true));
	KUNIT_EXPECT_EQ(test, ds->ncached, 1);
	dlc_store_unreserve(cache, PAGE_SIZE);
	/* A copier's reference keeps an evicted sample on the books. */
	s = dlc_store_lookup(ds, 1);
	if (!s)
		s = dlc_store_lookup(ds, 0);
	KUNIT_ASSERT_NOT_NULL(test, s);
	refcount_inc(&s->ref);
	KUNIT_EXPECT_EQ(test, dlc_store_drop(ds), PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, ds->used, 0);
	mutex_unlock(&ds->lock);
	KUNIT_EXPECT_EQ(test, atomic64_read(&cache->used), 3 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, atomic64_read(&cache->inflight), 3 * PAGE_SIZE);
	/* Nothing to evict: no room for a page beyond what copies hold. */
	mutex_lock(&ds->lock);
	KUNIT_EXPECT_FALSE(test, dlc_store_reserve(ds, 6, 2 * PAGE_SIZE, true));
	mutex_unlock(&ds->lock);
	dlc_sample_put(s);
	KUNIT_EXPECT_EQ(test, atomic64_read(&cache->used), 2 * PAGE_SIZE);
	dlc_store_unreserve(cache, 2 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, atomic64_read(&cache->used), 0);
	KUNIT_EXPECT_EQ(test, atomic64_read(&cache->inflight), 0);
}

static struct kunit_case store_cases[] = {
	KUNIT_CASE(store_copy_roundtrip),
	KUNIT_CASE(store_admission_by_next_use),
	KUNIT_CASE(store_capacity_shrink),
	KUNIT_CASE(store_steal_between_datasets),
	KUNIT_CASE(store_share_by_owner),
	KUNIT_CASE(store_form_set_charged),
	KUNIT_CASE(store_idle_gives_way_first),
	KUNIT_CASE(store_fill_placeholders),
	KUNIT_CASE(store_use_moves_cursor),
	KUNIT_CASE(store_dataset_limits),
	KUNIT_CASE(store_consumers),
	KUNIT_CASE(store_copies_in_flight),
	{}
};

static struct kunit_suite store_suite = {
	.name = "dlcache_store",
	.init = st_init,
	.exit = st_exit,
	.test_cases = store_cases,
};

kunit_test_suites(&store_suite);
