// SPDX-License-Identifier: MIT
/*
 * The in-process cache: encoded sample bytes kept by the next-use policy,
 * with this process as its one consumer (consumer 0).
 * It is what a node without dlcache.ko gets, and it ranks samples with the
 * very policy.c that the module compiles. Only the loader's I/O thread
 * touches it, so it has no lock; the bytes it hands out are refcounted.
 *
 * It keeps the very buffers reads landed in (pooled blocks, buf.c): a hit
 * is a new reference, never a copy. What it accounts against its
 * capacity is the memory those buffers hold (dlc_buf_footprint), not the
 * bytes, so that a cache of half the data set holds no more than its
 * capacity. A pooled block is a whole number of pages and at most
 * 6.25 % over them; for a small sample the page rounding alone can waste
 * more than that (a 5 kB file in an 8 KiB block), so a sample whose
 * block is more than 1/64 over its bytes is cached as an exact copy
 * instead (a copy, once, when it is admitted; hits never copy): the
 * cache loses at most 1/64 of its capacity to rounding. (At 1/16 a cache
 * of 70 kB samples held 3 % fewer of them, half a page each, and its hit
 * ratio fell to 0.968x of capacity/size; the copy costs a memcpy of the
 * admitted misses only, well under 1 % of their decode.) An evicted block
 * goes back to the pool for the next read.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "internal.h"
#include "policy.h"

struct dlc_cache {
	struct dlc_policy pol;
	void *pol_mem;
	size_t pol_bytes;
	uint32_t nsamples;
	uint32_t epoch_len;
	int have_epochs;	/* the policy holds orders */
	uint32_t last_epoch;	/* the newest epoch uploaded */
	struct dlc_buf **entry;	/* per sample, NULL when not cached */
	uint32_t *scratch;	/* one epoch's order, for uploads */
	uint64_t capacity;
	uint64_t used;
	uint64_t evictions;
	uint64_t bypasses;
};

int dlc_cache_create(uint32_t nsamples, uint32_t epoch_len, uint64_t capacity,
		     struct dlc_cache **out)
{
	struct dlc_cache *c;
	uint64_t window = 3ULL * epoch_len;

	if (!nsamples || !epoch_len || window > DLC_POLICY_MAX_WINDOW)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->nsamples = nsamples;
	c->epoch_len = epoch_len;
	c->capacity = capacity;
	/* Room for the rest of one epoch plus the next two. */
	c->pol_bytes = dlc_policy_mem_size(nsamples, (uint32_t)window);
	c->pol_mem = aligned_alloc(64, (c->pol_bytes + 63) & ~(size_t)63);
	c->entry = calloc(nsamples, sizeof(*c->entry));
	c->scratch = malloc(sizeof(*c->scratch) * epoch_len);
	if (!c->pol_bytes || !c->pol_mem || !c->entry || !c->scratch ||
	    dlc_policy_init(&c->pol, nsamples, (uint32_t)window, c->pol_mem,
			    c->pol_bytes, dlc_now_ns())) {
		dlc_cache_destroy(c);
		return -ENOMEM;
	}
	*out = c;
	return 0;
}

void dlc_cache_destroy(struct dlc_cache *c)
{
	uint32_t i;

	if (!c)
		return;
	if (c->entry)
		for (i = 0; i < c->nsamples; i++)
			dlc_buf_put(c->entry[i]);
	free(c->entry);
	free(c->scratch);
	free(c->pol_mem);
	free(c);
}

static int upload(struct dlc_cache *c, uint32_t epoch,
		  int (*fill)(void *, uint32_t, uint32_t *, uint32_t),
		  void *arg)
{
	int ret = fill(arg, epoch, c->scratch, c->epoch_len);

	if (ret)
		return ret;
	ret = dlc_policy_add_epoch(&c->pol, 0, epoch, c->scratch, c->epoch_len);
	if (ret)
		return ret;
	c->have_epochs = 1;
	c->last_epoch = epoch;
	return 0;
}

/* Start the time line over, keeping what is cached. */
static void restart(struct dlc_cache *c)
{
	uint32_t i;

	dlc_policy_init(&c->pol, c->nsamples, 3 * c->epoch_len, c->pol_mem,
			c->pol_bytes, dlc_now_ns());
	for (i = 0; i < c->nsamples; i++)
		if (c->entry[i])
			dlc_policy_insert(&c->pol, i);
	c->have_epochs = 0;
}

int dlc_cache_prepare_epoch(struct dlc_cache *c, uint32_t epoch,
			    int (*fill)(void *, uint32_t, uint32_t *, uint32_t),
			    void *arg)
{
	uint64_t pos;
	int ret;

	if (epoch == UINT32_MAX)
		return -EINVAL;
	if (!c->have_epochs ||
	    dlc_policy_position(&c->pol, 0, epoch, 0, &pos) != 0) {
		restart(c);
		ret = upload(c, epoch, fill, arg);
		if (ret)
			return ret;
	} else {
		/* Consume what the previous epochs left unread. */
		dlc_policy_advance(&c->pol, 0, pos, dlc_now_ns());
	}
	if (c->last_epoch == epoch)
		return upload(c, epoch + 1, fill, arg);
	return 0;
}

void dlc_cache_advance(struct dlc_cache *c, uint32_t epoch, uint32_t index)
{
	uint64_t pos;

	if (dlc_policy_position(&c->pol, 0, epoch, index, &pos) == 0)
		dlc_policy_advance(&c->pol, 0, pos + 1, dlc_now_ns());
}

struct dlc_buf *dlc_cache_lookup(struct dlc_cache *c, uint32_t id)
{
	if (id >= c->nsamples || !c->entry[id])
		return NULL;
	return dlc_buf_get(c->entry[id]);
}

int dlc_cache_contains(const struct dlc_cache *c, uint32_t id)
{
	return id < c->nsamples && c->entry[id];
}

static void evict(struct dlc_cache *c, uint32_t id)
{
	dlc_policy_remove(&c->pol, id);
	c->used -= dlc_buf_footprint(c->entry[id]);
	dlc_buf_put(c->entry[id]);
	c->entry[id] = NULL;
	c->evictions++;
}

/* A block more than 1/64 over the bytes it holds is cached as a copy. */
static int wasteful(const struct dlc_buf *b)
{
	return dlc_buf_footprint(b) - b->len > b->len / 64;
}

int dlc_cache_offer(struct dlc_cache *c, uint32_t id, struct dlc_buf *b)
{
	int copy = wasteful(b);
	size_t bytes = copy ? b->len : dlc_buf_footprint(b);
	struct dlc_buf *keep;

	if (id >= c->nsamples || c->entry[id])
		return 0;
	if (bytes > c->capacity) {
		c->bypasses++;
		return 0;
	}
	while (c->used + bytes > c->capacity) {
		uint32_t v = dlc_policy_victim(&c->pol);

		if (v == DLC_POLICY_NIL || !dlc_policy_prefer(&c->pol, id, v)) {
			c->bypasses++;
			return 0;
		}
		evict(c, v);
	}
	if (copy) {
		keep = dlc_buf_alloc(b->len);
		if (!keep) {
			c->bypasses++;
			return 0;
		}
		memcpy(keep->data, b->data, b->len);
	} else {
		keep = dlc_buf_get(b);
	}
	c->entry[id] = keep;
	c->used += bytes;
	dlc_policy_insert(&c->pol, id);
	return 1;
}

void dlc_cache_counters(const struct dlc_cache *c,
			struct dlc_cache_counters *out)
{
	out->evictions = c->evictions;
	out->bypasses = c->bypasses;
	out->used = c->used;
	out->capacity = c->capacity;
}
