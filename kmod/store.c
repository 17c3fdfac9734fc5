// SPDX-License-Identifier: GPL-2.0
/*
 * dlcache sample store: data sets, page-backed samples, admission by the
 * next-use policy, eviction, capacity and shrinking.
 *
 * A data set's samples live in an xarray indexed by sample ID. An entry
 * is either a FILLING placeholder (no pages; a session owns the fill) or
 * a CACHED sample (order-0 pages holding the bytes, charged to the cache
 * and marked cached in the policy). Everything here runs in process
 * context under the data set's mutex; lockdep_assert_held() says so.
 */
#include <linux/build_bug.h>
#include <linux/errno.h>
#include <linux/gfp.h>
#include <linux/highmem.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>

#include "dlc.h"

/* consumer_stall_ms, in ns. */
static u64 dlc_stall_ns(const struct dlc_dataset *ds)
{
	return (u64)READ_ONCE(ds->cache->stall_ms) * NSEC_PER_MSEC;
}

void dlc_cache_init(struct dlc_cache *cache, u64 capacity)
{
	memset(cache, 0, sizeof(*cache));
	mutex_init(&cache->lock);
	INIT_LIST_HEAD(&cache->datasets);
	INIT_LIST_HEAD(&cache->reserved);
	cache->capacity = capacity;
	cache->stall_ms = DLC_DEFAULT_STALL_MS;
	atomic64_set(&cache->used, 0);
	atomic64_set(&cache->inflight, 0);
}

/* Every data set must be gone; the counters must be back to zero. */
void dlc_cache_destroy(struct dlc_cache *cache)
{
	WARN_ON_ONCE(!list_empty(&cache->datasets));
	WARN_ON_ONCE(!list_empty(&cache->reserved));
	WARN_ON_ONCE(atomic64_read(&cache->used));
	WARN_ON_ONCE(atomic64_read(&cache->inflight));
	WARN_ON_ONCE(atomic64_read(&cache->ncached));
	WARN_ON_ONCE(atomic64_read(&cache->nfilling));
	mutex_destroy(&cache->lock);
}

/* ------------------------------------------------------------------ */
/* Samples                                                             */
/* ------------------------------------------------------------------ */

static struct dlc_sample *dlc_sample_new(u32 id, u32 npages, gfp_t gfp)
{
	struct dlc_sample *s;

	s = kvzalloc(struct_size(s, pages, npages), gfp);
	if (!s)
		return NULL;
	refcount_set(&s->ref, 1);
	s->id = id;
	s->npages = npages;
	INIT_LIST_HEAD(&s->fill_link);
	INIT_LIST_HEAD(&s->waiters);
	INIT_LIST_HEAD(&s->lease_link);
	return s;
}

/*
 * A sample of @size bytes (1 .. DLC_MAX_SAMPLE_SIZE) with its pages, not
 * yet in any data set. The pages come with __GFP_NORETRY: under memory
 * pressure a PUT is bypassed rather than pushing the system further. A
 * PUT passes GFP_KERNEL_ACCOUNT: the pages it copies into are charged to
 * the memory cgroup of its writer while the copy may stall, until
 * dlc_sample_unaccount(). The struct itself is never charged (a cached
 * sample's belongs to everyone's cache).
 */
struct dlc_sample *dlc_sample_alloc(u32 id, u32 size, gfp_t gfp)
{
	struct dlc_sample *s;
	u32 i, npages;

	if (WARN_ON_ONCE(!size || size > DLC_MAX_SAMPLE_SIZE))
		return NULL;
	npages = DIV_ROUND_UP(size, PAGE_SIZE);
	s = dlc_sample_new(id, npages, (gfp & ~__GFP_ACCOUNT) | __GFP_NOWARN);
	if (!s)
		return NULL;
	s->size = size;
	for (i = 0; i < npages; i++) {
		s->pages[i] = alloc_page(gfp | __GFP_NOWARN | __GFP_NORETRY);
		if (!s->pages[i])
			goto free_pages;
	}
	return s;

free_pages:
	while (i--)
		__free_page(s->pages[i]);
	kvfree(s);
	return NULL;
}

/*
 * Move the bytes of @s (filled, referenced by its caller only) to pages
 * charged to no memory cgroup. Cached samples are shared by every user
 * of a data set and bounded by the capacity; billing their writer would
 * leave it holding memory that its cgroup cannot reclaim. -ENOMEM under
 * memory pressure (some pages may then stay charged until @s is freed).
 */
int dlc_sample_unaccount(struct dlc_sample *s)
{
	struct page *p;
	u32 i;

	for (i = 0; i < s->npages; i++) {
		p = alloc_page(GFP_KERNEL | __GFP_NOWARN | __GFP_NORETRY);
		if (!p)
			return -ENOMEM;
		copy_highpage(p, s->pages[i]);
		__free_page(s->pages[i]);
		s->pages[i] = p;
		if (!(i % 1024))
			cond_resched();
	}
	return 0;
}

/*
 * A FILLING placeholder for @id, without pages. The caller passes
 * GFP_KERNEL_ACCOUNT: placeholders are per fill, up to DLC_MAX_FILLS per
 * attachment, and charged to the filler's memory cgroup.
 */
struct dlc_sample *dlc_sample_placeholder(u32 id, gfp_t gfp)
{
	return dlc_sample_new(id, 0, gfp);
}

/*
 * Drop a reference. The last one frees the pages and gives the sample's
 * charge back to the cache that holds it (@s->charged): out of the store
 * by then, so counted in the cache's inflight.
 */
void dlc_sample_put(struct dlc_sample *s)
{
	u32 i;

	if (!refcount_dec_and_test(&s->ref))
		return;
	WARN_ON_ONCE(!list_empty(&s->waiters));
	if (s->charged)
		dlc_store_unreserve(s->charged, dlc_sample_charge(s));
	for (i = 0; i < s->npages; i++)
		__free_page(s->pages[i]);
	kvfree(s);
}

/* Fill the pages of @s from @from: exactly s->size bytes, or -EFAULT. */
int dlc_sample_copy_in(struct dlc_sample *s, struct iov_iter *from)
{
	u32 i, left = s->size;

	for (i = 0; i < s->npages; i++) {
		size_t n = min_t(u32, left, PAGE_SIZE);

		if (copy_page_from_iter(s->pages[i], 0, n, from) != n)
			return -EFAULT;
		left -= n;
	}
	return 0;
}

/* Copy the s->size bytes of @s into @to, or -EFAULT. */
int dlc_sample_copy_out(struct dlc_sample *s, struct iov_iter *to)
{
	u32 i, left = s->size;

	for (i = 0; i < s->npages; i++) {
		size_t n = min_t(u32, left, PAGE_SIZE);

		if (copy_page_to_iter(s->pages[i], 0, n, to) != n)
			return -EFAULT;
		left -= n;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Data sets                                                           */
/* ------------------------------------------------------------------ */

/*
 * A new data set, not yet on the cache's list (the caller adds it under
 * cache->lock). @window and @lookahead of 0 take the defaults; the caller
 * has checked @nsamples and @mode.
 */
static u32 dlc_dataset_window(u32 nsamples, u32 window)
{
	if (!window)
		window = min_t(u64, 2ULL * nsamples, DLC_MAX_WINDOW);
	return ALIGN(window, 64);
}

/*
 * Bytes of policy memory a data set of @nsamples samples and @window
 * positions (0: the default) takes, or 0 for values out of range.
 */
size_t dlc_dataset_mem_size(u32 nsamples, u32 window)
{
	if (!nsamples || nsamples > DLC_MAX_SAMPLES || window > DLC_MAX_WINDOW)
		return 0;
	return dlc_policy_mem_size(nsamples, dlc_dataset_window(nsamples,
								window));
}

struct dlc_dataset *dlc_dataset_create(struct dlc_cache *cache,
				       const u64 key[2], u32 nsamples,
				       u32 window, u32 lookahead, u32 mode)
{
	struct dlc_dataset *ds;
	size_t mem_size;

	if (!nsamples || nsamples > DLC_MAX_SAMPLES || window > DLC_MAX_WINDOW)
		return ERR_PTR(-EINVAL);
	window = dlc_dataset_window(nsamples, window);
	if (!lookahead)
		lookahead = DLC_DEFAULT_LOOKAHEAD;

	/*
	 * Charged to the creator's memory cgroup: a user who makes the
	 * kernel hold a data set pays for it.
	 */
	ds = kzalloc(sizeof(*ds), GFP_KERNEL_ACCOUNT);
	if (!ds)
		return ERR_PTR(-ENOMEM);
	mem_size = dlc_policy_mem_size(nsamples, window);
	if (!mem_size)
		goto free_ds;
	/* Fail rather than invoke the OOM killer for a large data set. */
	ds->policy_mem = kvmalloc(mem_size, GFP_KERNEL_ACCOUNT | __GFP_NOWARN |
				  __GFP_RETRY_MAYFAIL);
	if (!ds->policy_mem)
		goto free_ds;
	if (WARN_ON_ONCE(dlc_policy_init(&ds->policy, nsamples, window,
					 ds->policy_mem, mem_size,
					 ktime_get_ns())))
		goto free_policy;

	kref_init(&ds->ref);
	INIT_LIST_HEAD(&ds->node);
	ds->cache = cache;
	ds->key[0] = key[0];
	ds->key[1] = key[1];
	ds->nsamples = nsamples;
	ds->mode = mode;
	ds->window = ds->policy.window;
	ds->policy_size = mem_size;
	ds->lookahead = min(lookahead, ds->window);
	mutex_init(&ds->lock);
	xa_init(&ds->samples);
	INIT_LIST_HEAD(&ds->lease_fills);
	return ds;

free_policy:
	kvfree(ds->policy_mem);
free_ds:
	kfree(ds);
	return ERR_PTR(-ENOMEM);
}

/*
 * Free a data set nobody can reach any more: off the cache's list, no
 * attachment left (so no fill owner and no waiter either).
 */
void dlc_dataset_free(struct dlc_dataset *ds)
{
	struct dlc_cache *cache = ds->cache;
	struct dlc_sample *s;
	unsigned long id;

	mutex_lock(&ds->lock);
	xa_for_each(&ds->samples, id, s) {
		xa_erase(&ds->samples, id);
		if (test_bit(DLC_S_CACHED, &s->state)) {
			/* Out of the store: dlc_sample_put() uncharges it. */
			atomic64_add(dlc_sample_charge(s), &cache->inflight);
			atomic64_dec(&cache->ncached);
		} else {
			WARN_ON_ONCE(!list_empty(&s->waiters));
			list_del_init(&s->lease_link);
			atomic64_dec(&cache->nfilling);
		}
		dlc_sample_put(s);
		/* Millions of samples: let others run (a mutex, no spinlock). */
		cond_resched();
	}
	mutex_unlock(&ds->lock);
	xa_destroy(&ds->samples);
	mutex_destroy(&ds->lock);
	kvfree(ds->policy_mem);
	kfree(ds);
}

struct dlc_sample *dlc_store_lookup(struct dlc_dataset *ds, u32 id)
{
	lockdep_assert_held(&ds->lock);
	return xa_load(&ds->samples, id);
}

/* ------------------------------------------------------------------ */
/* Eviction                                                            */
/* ------------------------------------------------------------------ */

/*
 * Evict cached sample @id. Returns the bytes the data set gave up, 0 if
 * not held. A GET copying the sample out keeps its charge in the cache's
 * used (as inflight) until its reference drops: the capacity holds the
 * pages that are still there.
 */
u64 dlc_store_evict(struct dlc_dataset *ds, u32 id, bool shrinker)
{
	struct dlc_cache *cache = ds->cache;
	struct dlc_sample *s;
	u64 charge;

	lockdep_assert_held(&ds->lock);
	s = xa_load(&ds->samples, id);
	if (!s || !test_bit(DLC_S_CACHED, &s->state))
		return 0;
	xa_erase(&ds->samples, id);
	dlc_policy_remove(&ds->policy, id);
	charge = dlc_sample_charge(s);
	WRITE_ONCE(ds->used, ds->used - charge);
	ds->ncached--;
	atomic64_add(charge, &cache->inflight);
	atomic64_dec(&cache->ncached);
	ds->st.evictions++;
	ds->st.eviction_bytes += s->size;
	if (shrinker)
		ds->st.shrinker_evictions++;
	/* Copiers holding a reference finish with the pages first. */
	dlc_sample_put(s);
	return charge;
}

/* Evict the policy's victim. Returns the bytes given back, 0 if none. */
static u64 dlc_store_evict_victim(struct dlc_dataset *ds, bool shrinker)
{
	u32 victim;
	u64 freed;

	lockdep_assert_held(&ds->lock);
	victim = dlc_policy_victim(&ds->policy);
	if (victim == DLC_POLICY_NIL)
		return 0;
	freed = dlc_store_evict(ds, victim, shrinker);
	if (WARN_ON_ONCE(!freed))
		dlc_policy_remove(&ds->policy, victim);
	return freed;
}

/* Evict every cached sample of @ds. Returns the bytes given back. */
u64 dlc_store_drop(struct dlc_dataset *ds)
{
	struct dlc_sample *s;
	unsigned long id;
	u64 freed = 0;

	lockdep_assert_held(&ds->lock);
	xa_for_each(&ds->samples, id, s) {
		freed += dlc_store_evict(ds, id, false);
		/* Up to DLC_MAX_SAMPLES; only mutexes are held. */
		cond_resched();
	}
	return freed;
}

/*
 * Shares of the cache. The capacity is divided equally among the
 * accounting owners (dlc_dataset.acct) of the listed data sets, and an
 * owner's share equally among its data sets: a user who makes many data
 * sets, or many uids in user namespaces, splits its own share and takes
 * nothing more from the others. At most DLC_MAX_DATASETS are listed, so
 * the walks below are cheap.
 */

/* Data sets of accounting owner @acct, and in *@used the bytes they hold. */
static u32 dlc_owner_usage(struct dlc_cache *cache, kuid_t acct, u64 *used)
{
	struct dlc_dataset *ds;
	u32 n = 0;

	lockdep_assert_held(&cache->lock);
	*used = 0;
	list_for_each_entry(ds, &cache->datasets, node) {
		if (uid_eq(ds->acct, acct)) {
			n++;
			*used += READ_ONCE(ds->used);
		}
	}
	return n;
}

/* Accounting owners of the listed data sets; at least 1. */
static u32 dlc_owners(struct dlc_cache *cache)
{
	struct dlc_dataset *ds, *o;
	u32 n = 0;

	lockdep_assert_held(&cache->lock);
	list_for_each_entry(ds, &cache->datasets, node) {
		/* Count each owner at its first data set in the list. */
		list_for_each_entry(o, &cache->datasets, node) {
			if (o == ds)
				n++;
			if (uid_eq(o->acct, ds->acct))
				break;
		}
	}
	return max(n, 1U);
}

/* How dlc_cache_steal() picks the data set it takes room from. */
enum dlc_steal {
	DLC_STEAL_IDLE,		/* the idle set that holds most */
	DLC_STEAL_ANY,		/* of the owner most over its share */
	DLC_STEAL_FAIR,		/* the same, if @self is within its share */
};

/*
 * The data set to take room from for @self: of the accounting owner most
 * over its share, the one most over its share within that owner. With
 * @fair, none when @self holding @need more bytes would be over its own
 * share (it then competes inside itself).
 */
static struct dlc_dataset *dlc_share_victim(struct dlc_cache *cache,
					    struct dlc_dataset *self, u64 need,
					    bool fair)
{
	u64 oshare = div_u64(READ_ONCE(cache->capacity), dlc_owners(cache));
	struct dlc_dataset *ds, *best = NULL;
	s64 best_over = 0, best_ds_over = 0;
	u64 used;
	u32 n;

	lockdep_assert_held(&cache->lock);
	lockdep_assert_held(&self->lock);
	if (fair) {
		n = max(dlc_owner_usage(cache, self->acct, &used), 1U);
		if (self->used + need > div_u64(oshare, n))
			return NULL;
	}
	list_for_each_entry(ds, &cache->datasets, node) {
		u64 ds_used = READ_ONCE(ds->used);
		s64 over, ds_over;

		if (ds == self || !ds_used)
			continue;
		n = dlc_owner_usage(cache, ds->acct, &used);
		over = (s64)used - (s64)oshare;
		ds_over = (s64)ds_used - (s64)div_u64(oshare, n);
		if (!best || over > best_over ||
		    (over == best_over && ds_over > best_ds_over)) {
			best = ds;
			best_over = over;
			best_ds_over = ds_over;
		}
	}
	return best;
}

/* The idle data set other than @self that holds most, or NULL. */
static struct dlc_dataset *dlc_idle_victim(struct dlc_cache *cache,
					   struct dlc_dataset *self)
{
	struct dlc_dataset *ds, *best = NULL;
	u64 best_used = 0;

	lockdep_assert_held(&cache->lock);
	list_for_each_entry(ds, &cache->datasets, node) {
		u64 used = READ_ONCE(ds->used);

		if (ds->idle && ds != self && used > best_used) {
			best = ds;
			best_used = used;
		}
	}
	return best;
}

/*
 * Make room for @need bytes in another data set than @self, in that data
 * set's policy order, picked as @how says (idle sets give way first).
 * Called with self->lock held, so the cache lock and the other data set's
 * lock are only tried.
 */
static bool dlc_cache_steal(struct dlc_cache *cache, struct dlc_dataset *self,
			    u64 need, enum dlc_steal how)
{
	struct dlc_dataset *best;
	u64 freed = 0, f;

	lockdep_assert_held(&self->lock);
	if (!mutex_trylock(&cache->lock))
		return false;
	if (how == DLC_STEAL_IDLE)
		best = dlc_idle_victim(cache, self);
	else
		best = dlc_share_victim(cache, self, need,
					how == DLC_STEAL_FAIR);
	if (best && mutex_trylock(&best->lock)) {
		while (freed < need) {
			f = dlc_store_evict_victim(best, false);
			if (!f)
				break;
			freed += f;
		}
		mutex_unlock(&best->lock);
	}
	mutex_unlock(&cache->lock);
	return freed > 0;
}

/* Charge @bytes to the cache if they fit under the capacity. */
static bool dlc_cache_try_charge(struct dlc_cache *cache, u64 bytes)
{
	s64 used = atomic64_read(&cache->used);

	do {
		if ((u64)used + bytes > READ_ONCE(cache->capacity))
			return false;
	} while (!atomic64_try_cmpxchg(&cache->used, &used, used + bytes));
	return true;
}

/*
 * Admission of sample @id, @charge bytes, before its bytes are allocated
 * and copied: reserve the charge against the capacity. Room is made in
 * the policy's order: while the cache is full, take it from an idle data
 * set (dataset.c keeps detached sets cached until they are needed); else,
 * when this data set holds nothing or would stay within its share (its
 * owner's share of the capacity divided among the owner's data sets),
 * take room from the owner most over its share; else evict this data
 * set's victim if @id is used sooner (or @force: GETs are waiting for it).
 * On success the charge is in the cache's used and inflight until
 * dlc_store_unreserve(), or until a sample that took it over (@charged)
 * is freed.
 */
bool dlc_store_reserve(struct dlc_dataset *ds, u32 id, u64 charge, bool force)
{
	struct dlc_cache *cache = ds->cache;
	u32 victim;

	lockdep_assert_held(&ds->lock);
	if (charge > READ_ONCE(cache->capacity))
		return false;
	/* A stalled consumer stops holding samples before anyone evicts. */
	if (ds->policy.nlines > 1)
		dlc_policy_expire(&ds->policy, ktime_get_ns(), dlc_stall_ns(ds));
	while (!dlc_cache_try_charge(cache, charge)) {
		if (READ_ONCE(cache->nidle) &&
		    dlc_cache_steal(cache, ds, charge, DLC_STEAL_IDLE))
			continue;
		victim = dlc_policy_victim(&ds->policy);
		if (dlc_cache_steal(cache, ds, charge,
				    victim == DLC_POLICY_NIL ? DLC_STEAL_ANY :
							       DLC_STEAL_FAIR))
			continue;
		if (victim == DLC_POLICY_NIL)
			return false;
		if (!force && !dlc_policy_prefer(&ds->policy, id, victim))
			return false;
		if (!dlc_store_evict_victim(ds, false))
			return false;
	}
	atomic64_add(charge, &cache->inflight);
	return true;
}

/* Give back a reservation (or the charge of a sample out of the store). */
void dlc_store_unreserve(struct dlc_cache *cache, u64 charge)
{
	WARN_ON_ONCE(atomic64_sub_return(charge, &cache->inflight) < 0);
	atomic64_sub(charge, &cache->used);
}

/*
 * Put @s (filled, not in the store, @s->charged its reservation) in the
 * store: it replaces whatever entry had its ID (the caller has dealt with
 * a FILLING placeholder) and the store holds the caller's reference. On
 * false the caller keeps it, reservation included.
 */
bool dlc_store_insert(struct dlc_dataset *ds, struct dlc_sample *s)
{
	struct dlc_cache *cache = ds->cache;
	u64 charge = dlc_sample_charge(s);

	lockdep_assert_held(&ds->lock);
	if (WARN_ON_ONCE(s->charged != cache))
		return false;
	if (xa_is_err(xa_store(&ds->samples, s->id, s, GFP_KERNEL)))
		return false;
	set_bit(DLC_S_CACHED, &s->state);
	dlc_policy_insert(&ds->policy, s->id);
	WRITE_ONCE(ds->used, ds->used + charge);
	ds->ncached++;
	atomic64_sub(charge, &cache->inflight);
	atomic64_inc(&cache->ncached);
	return true;
}

/*
 * Reserve and insert @s (allocated, filled, uncharged) at once. On false
 * the caller keeps it.
 */
bool dlc_store_admit(struct dlc_dataset *ds, struct dlc_sample *s, bool force)
{
	u64 charge = dlc_sample_charge(s);

	lockdep_assert_held(&ds->lock);
	if (WARN_ON_ONCE(s->charged) ||
	    !dlc_store_reserve(ds, s->id, charge, force))
		return false;
	s->charged = ds->cache;
	if (dlc_store_insert(ds, s))
		return true;
	s->charged = NULL;
	dlc_store_unreserve(ds->cache, charge);
	return false;
}

/* Insert FILLING placeholder @ph; -EBUSY if its ID has an entry. */
int dlc_store_set_filling(struct dlc_dataset *ds, struct dlc_sample *ph)
{
	int ret;

	lockdep_assert_held(&ds->lock);
	ret = xa_insert(&ds->samples, ph->id, ph, GFP_KERNEL);
	if (ret)
		return ret;
	set_bit(DLC_S_FILLING, &ph->state);
	ds->nfilling++;
	atomic64_inc(&ds->cache->nfilling);
	return 0;
}

/*
 * Take FILLING placeholder @s out of the store (if still there) and drop
 * the store's reference. Its waiters must have been moved off.
 */
void dlc_store_erase(struct dlc_dataset *ds, struct dlc_sample *s)
{
	lockdep_assert_held(&ds->lock);
	if (WARN_ON_ONCE(!test_bit(DLC_S_FILLING, &s->state)))
		return;
	WARN_ON_ONCE(!list_empty(&s->waiters));
	if (xa_load(&ds->samples, s->id) == s)
		xa_erase(&ds->samples, s->id);
	/* The lease work must not look at it any more. */
	list_del_init(&s->lease_link);
	clear_bit(DLC_S_FILLING, &s->state);
	ds->nfilling--;
	atomic64_dec(&ds->cache->nfilling);
	dlc_sample_put(s);
}

/* ------------------------------------------------------------------ */
/* Orders and uses                                                     */
/* ------------------------------------------------------------------ */

/* The policy line of @m's consumer: 0 when it joined none. */
u32 dlc_store_line(const struct dlc_member *m)
{
	return m && m->cons ? m->cons->line : 0;
}

/*
 * A look-up ahead of the use at (@sqe->epoch, @sqe->index) of @m's line:
 * whether sample @id is used before it there or on another line, so that
 * reading it now would likely duplicate that earlier use's read.
 */
bool dlc_store_used_before(struct dlc_dataset *ds, struct dlc_member *m,
			   u32 id, const struct dlcache_sqe *sqe)
{
	struct dlc_policy *p = &ds->policy;
	u32 line = dlc_store_line(m);
	u64 pos;

	lockdep_assert_held(&ds->lock);
	if (dlc_policy_position(p, line, sqe->epoch, sqe->index, &pos) ||
	    dlc_policy_sample_at(p, line, pos) != id)
		return false;
	return dlc_policy_used_before(p, line, pos, id);
}

int dlc_store_set_order(struct dlc_dataset *ds, struct dlc_member *m,
			u32 epoch, const u32 *ids, u32 len)
{
	int ret;

	lockdep_assert_held(&ds->lock);
	ret = dlc_policy_add_epoch(&ds->policy, dlc_store_line(m), epoch, ids,
				   len);
	if (ret == -DLC_POLICY_ENOSPC)
		return -ENOSPC;
	return ret ? -EINVAL : 0;
}

/*
 * Move consumer @c's cursor to the least progress of its members that
 * used a sample within the stall time (of all of them when none did), so
 * that the ranks of one job drift freely: a rank ahead consumes nothing
 * a rank behind has still to read. Also tells the policy the consumer is
 * alive at @now, which measures its rate.
 */
static void dlc_consumer_advance(struct dlc_dataset *ds,
				 struct dlc_consumer *c, u64 now)
{
	u64 stall = dlc_stall_ns(ds), fresh = U64_MAX, all = U64_MAX;
	struct dlc_member *m;

	lockdep_assert_held(&ds->lock);
	list_for_each_entry(m, &c->members, link) {
		all = min(all, m->progress);
		if (now - m->seen < stall)
			fresh = min(fresh, m->progress);
	}
	if (fresh == U64_MAX)
		fresh = all;
	if (fresh != U64_MAX)
		dlc_policy_advance(&ds->policy, c->line, fresh, now);
}

/*
 * A GET of sample @id by member @m is a use: move its time line's cursor
 * past it. With DLCACHE_SQE_F_AT the use is at (epoch, index), an exact
 * position (an unknown one, one already consumed, or one where the order
 * has another sample, moves nothing). Otherwise the use is the sample's
 * next use, when that lies within the data set's lookahead of the cursor:
 * a GET of a sample whose use was already passed must not jump a whole
 * epoch on. On time line 0 (no consumer) the cursor follows the furthest
 * use, as in ABI 2; a consumer's follows its slowest member.
 */
void dlc_store_use(struct dlc_dataset *ds, struct dlc_member *m, u32 id,
		   const struct dlcache_sqe *sqe)
{
	struct dlc_policy *p = &ds->policy;
	u32 line = dlc_store_line(m);
	u64 pos, cursor = p->line[line].cursor, now = ktime_get_ns();

	lockdep_assert_held(&ds->lock);
	if (m && m->cons) {
		/* Alive, and never behind what its consumer consumed. */
		m->seen = now;
		m->progress = max(m->progress, cursor);
	}
	if (sqe->flags & DLCACHE_SQE_F_AT) {
		if (dlc_policy_position(p, line, sqe->epoch, sqe->index, &pos) ||
		    dlc_policy_sample_at(p, line, pos) != id)
			pos = DLC_POLICY_NEVER;
	} else {
		pos = dlc_policy_next_use(p, line, id);
		if (pos != DLC_POLICY_NEVER && pos - cursor >= ds->lookahead)
			pos = DLC_POLICY_NEVER;
	}
	if (!m || !m->cons) {
		if (pos != DLC_POLICY_NEVER)
			dlc_policy_advance(p, 0, pos + 1, now);
		return;
	}
	if (pos != DLC_POLICY_NEVER)
		m->progress = max(m->progress, pos + 1);
	dlc_consumer_advance(ds, m->cons, now);
}

/* ------------------------------------------------------------------ */
/* Consumers                                                           */
/* ------------------------------------------------------------------ */

/*
 * A consumer of job @job with its time line's memory, for @ds's window,
 * not yet listed. Charged to the caller's memory cgroup.
 */
struct dlc_consumer *dlc_consumer_alloc(struct dlc_dataset *ds, u64 job)
{
	struct dlc_consumer *c;

	c = kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);
	if (!c)
		return ERR_PTR(-ENOMEM);
	c->job = job;
	INIT_LIST_HEAD(&c->members);
	c->mem_size = dlc_policy_line_mem_size(ds->nsamples, ds->window);
	if (WARN_ON_ONCE(!c->mem_size))
		goto free_c;
	c->mem = kvmalloc(c->mem_size, GFP_KERNEL_ACCOUNT | __GFP_NOWARN |
			  __GFP_RETRY_MAYFAIL);
	if (!c->mem)
		goto free_c;
	return c;

free_c:
	kfree(c);
	return ERR_PTR(-ENOMEM);
}

void dlc_consumer_free(struct dlc_consumer *c)
{
	WARN_ON_ONCE(c->nmembers || !list_empty(&c->members));
	kvfree(c->mem);
	kfree(c);
}

/*
 * Make @m a member of @ds's consumer of job @job. When there is none, a
 * new one is listed from *@spare, which is then set to NULL; without a
 * spare, -EAGAIN asks the caller to allocate one (dlc_consumer_alloc())
 * and call again. -EUSERS when the data set has DLC_MAX_CONSUMERS
 * consumers or the job DLC_MAX_MEMBERS members. Returns 1 when the
 * consumer was created, 0 when joined.
 */
int dlc_store_join(struct dlc_dataset *ds, struct dlc_member *m, u64 job,
		   struct dlc_consumer **spare)
{
	struct dlc_consumer *c = NULL;
	u64 now = ktime_get_ns();
	int line, created = 0;
	u32 i;

	lockdep_assert_held(&ds->lock);
	if (WARN_ON_ONCE(m->cons))
		return -EINVAL;
	for (i = 1; i < DLC_MAX_CONSUMERS; i++) {
		if (ds->consumers[i] && ds->consumers[i]->job == job) {
			c = ds->consumers[i];
			break;
		}
	}
	if (!c) {
		if (ds->policy.nlines >= DLC_MAX_CONSUMERS)
			return -EUSERS;
		if (!*spare)
			return -EAGAIN;
		line = dlc_policy_add_consumer(&ds->policy, (*spare)->mem,
					       (*spare)->mem_size, now);
		if (line <= 0 || line >= DLC_MAX_CONSUMERS)
			return -EUSERS;
		c = *spare;
		*spare = NULL;
		c->line = line;
		ds->consumers[line] = c;
		created = 1;
	} else if (c->nmembers >= DLC_MAX_MEMBERS) {
		return -EUSERS;
	}
	m->cons = c;
	m->progress = ds->policy.line[c->line].cursor;
	m->seen = now;
	list_add_tail(&m->link, &c->members);
	c->nmembers++;
	return created;
}

/*
 * @m leaves its consumer. The last member out removes the consumer from
 * the policy (its uses stop holding samples at once) and returns it for
 * the caller to free and uncharge once it dropped ds->lock; else NULL.
 */
struct dlc_consumer *dlc_store_leave(struct dlc_dataset *ds,
				     struct dlc_member *m)
{
	struct dlc_consumer *c = m->cons;

	lockdep_assert_held(&ds->lock);
	if (!c)
		return NULL;
	list_del_init(&m->link);
	m->cons = NULL;
	if (--c->nmembers) {
		/* It may have been the one holding the cursor back. */
		dlc_consumer_advance(ds, c, ktime_get_ns());
		return NULL;
	}
	dlc_policy_remove_consumer(&ds->policy, c->line);
	ds->consumers[c->line] = NULL;
	return c;
}

/*
 * Whether time line @i of @ds is a consumer whose uses count now: line 0
 * only when it holds orders.
 */
static bool dlc_store_counts(const struct dlc_dataset *ds, u32 i)
{
	const struct dlc_policy_line *l = &ds->policy.line[i];

	return l->used && l->active && (i || l->end);
}

/* Consumers whose uses count now (dlc_store_counts()). */
u32 dlc_store_consumers(struct dlc_dataset *ds)
{
	u32 i, n = 0;

	lockdep_assert_held(&ds->lock);
	for (i = 0; i < DLC_MAX_CONSUMERS; i++)
		n += dlc_store_counts(ds, i);
	return n;
}

/*
 * GET_ORDER: consumer @o->consumer of @ds (counted as
 * dlc_store_consumers() counts them) into @o's kernel fields, and the
 * IDs of its positions @o->from .. into @ids, at most @len. -ENOENT past
 * the last consumer. A job's key is not shown.
 */
int dlc_store_read_order(struct dlc_dataset *ds, struct dlcache_get_order *o,
			 u32 *ids, u32 len)
{
	const struct dlc_policy *p = &ds->policy;
	const struct dlc_policy_line *l;
	u32 i, k = 0;

	BUILD_BUG_ON(DLC_POLICY_MAX_EPOCHS > DLCACHE_GET_ORDER_EPOCHS);
	lockdep_assert_held(&ds->lock);
	o->nconsumers = dlc_store_consumers(ds);
	for (i = 0; i < DLC_MAX_CONSUMERS; i++)
		if (dlc_store_counts(ds, i) && k++ == o->consumer)
			break;
	if (i == DLC_MAX_CONSUMERS)
		return -ENOENT;
	l = &p->line[i];
	o->first = dlc_policy_first(p, i);
	o->cursor = l->cursor;
	o->end = l->end;
	o->ns_per_pos = l->measured ? l->cost : 0;
	o->nepochs = l->nepochs;
	for (k = 0; k < l->nepochs; k++) {
		o->epochs[k].epoch = l->epochs[k].epoch;
		o->epochs[k].len = l->epochs[k].len;
		o->epochs[k].base = l->epochs[k].base;
	}
	o->copied = dlc_policy_read_order(p, i, o->from, ids, len);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Counters, capacity, shrinking                                       */
/* ------------------------------------------------------------------ */

void dlc_store_counters(struct dlc_dataset *ds, struct dlcache_counters *c)
{
	lockdep_assert_held(&ds->lock);
	*c = ds->st;
	c->used_bytes = ds->used;
	c->cached_samples = ds->ncached;
	c->fills_inflight = ds->nfilling;
}

/* Add the counters @src into @dst, field by field. */
static void dlc_counters_add(struct dlcache_counters *dst,
			     const struct dlcache_counters *src)
{
	const u64 *from = (const u64 *)src;
	u64 *to = (u64 *)dst;
	size_t i;

	BUILD_BUG_ON(sizeof(*src) % sizeof(u64));
	for (i = 0; i < sizeof(*src) / sizeof(u64); i++)
		to[i] += from[i];
}

/* A data set leaves the cache's list: keep its counters in the totals. */
void dlc_cache_retire(struct dlc_cache *cache, struct dlc_dataset *ds)
{
	lockdep_assert_held(&cache->lock);
	dlc_counters_add(&cache->retired, &ds->st);
}

/*
 * Add @ds's counters into @dst without ds->lock, which one user's long
 * operation may hold for a while: under cache->lock that would hold up
 * every ATTACH and DETACH on the node. Each counter is read whole (a
 * 64-bit load; it may tear on a 32-bit kernel), the set of them may be a
 * few events apart: fine for totals.
 */
static void dlc_counters_peek(struct dlcache_counters *dst,
			      const struct dlc_dataset *ds)
{
	const u64 *from = (const u64 *)&ds->st;
	u64 *to = (u64 *)dst;
	size_t i;

	for (i = 0; i < sizeof(*dst) / sizeof(u64); i++)
		/* Written under ds->lock, read here without it: see above. */
		to[i] += data_race(READ_ONCE(from[i]));
}

/* Totals over the data sets that exist and those that are gone. */
void dlc_cache_counters(struct dlc_cache *cache, struct dlcache_counters *c)
{
	struct dlc_dataset *ds;

	lockdep_assert_held(&cache->lock);
	*c = cache->retired;
	list_for_each_entry(ds, &cache->datasets, node)
		dlc_counters_peek(c, ds);
	c->errors += atomic64_read(&cache->errors);
	c->used_bytes = atomic64_read(&cache->used);
	c->cached_samples = atomic64_read(&cache->ncached);
	c->fills_inflight = atomic64_read(&cache->nfilling);
}

/*
 * Evict up to @goal bytes of @ds (locked) in its policy order, and at most
 * @left more bytes of the cache. Returns the bytes given back.
 */
static u64 dlc_store_shrink(struct dlc_dataset *ds, u64 goal, u64 left,
			    bool shrinker)
{
	u64 got = 0, f;

	lockdep_assert_held(&ds->lock);
	while (got < goal && got < left) {
		f = dlc_store_evict_victim(ds, shrinker);
		if (!f)
			break;
		got += f;
		/*
		 * Lowering the capacity by gigabytes evicts millions of
		 * samples. Only mutexes are held here, and reclaim may sleep
		 * too.
		 */
		cond_resched();
	}
	return got;
}

/* Lock @ds for shrinking: the shrinker (@shrinker) only tries. */
static bool dlc_shrink_lock(struct dlc_dataset *ds, bool shrinker)
{
	if (shrinker)
		return mutex_trylock(&ds->lock);
	mutex_lock(&ds->lock);
	return true;
}

/*
 * Evict about @bytes in policy order: idle data sets first, all they
 * hold (pass 0); then spread over the data sets in proportion to what
 * each holds (pass 1) and whatever is left wherever it is (pass 2). The
 * shrinker (@shrinker) runs in reclaim, maybe under a data set's lock, so
 * it only tries the locks. An idle set emptied here stays listed (its
 * slot and policy memory give way in dlc_reserve(), dataset.c). Returns the
 * bytes given back.
 */
u64 dlc_cache_shrink(struct dlc_cache *cache, u64 bytes, bool shrinker)
{
	struct dlc_dataset *ds;
	u64 total, want = bytes, freed = 0;
	int pass;

	if (shrinker) {
		if (!mutex_trylock(&cache->lock))
			return 0;
	} else {
		mutex_lock(&cache->lock);
	}
	total = atomic64_read(&cache->used);
	for (pass = 0; pass < 3 && total && freed < bytes; pass++) {
		if (pass == 0 && !cache->nidle)
			continue;
		if (pass == 1) {
			total = atomic64_read(&cache->used);
			want = bytes - freed;
		}
		list_for_each_entry(ds, &cache->datasets, node) {
			u64 goal;

			if (freed >= bytes || !total)
				break;
			if (pass == 0 && !ds->idle)
				continue;
			if (!dlc_shrink_lock(ds, shrinker))
				continue;
			if (pass == 1)
				goal = mul_u64_u64_div_u64(ds->used, want, total) +
				       PAGE_SIZE;
			else
				goal = bytes - freed;
			freed += dlc_store_shrink(ds, goal, bytes - freed,
						  shrinker);
			mutex_unlock(&ds->lock);
		}
	}
	mutex_unlock(&cache->lock);
	return freed;
}

/* Set the capacity and evict down to it. Returns the old capacity. */
u64 dlc_cache_set_capacity(struct dlc_cache *cache, u64 bytes)
{
	u64 old, used;

	mutex_lock(&cache->lock);
	old = cache->capacity;
	WRITE_ONCE(cache->capacity, bytes);
	mutex_unlock(&cache->lock);

	for (;;) {
		used = atomic64_read(&cache->used);
		if (used <= bytes || !dlc_cache_shrink(cache, used - bytes, false))
			break;
	}
	return old;
}
