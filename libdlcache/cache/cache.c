// SPDX-License-Identifier: MIT
/*
 * The in-process cache: encoded sample bytes kept by the next-use policy,
 * with this process as its one consumer (consumer 0).
 * It is what a node without dlcache.ko gets, and it ranks samples with the
 * very policy.c that the module compiles. Only the loader's I/O thread
 * touches it, so it has no lock; the bytes it hands out are refcounted.
 *
 * An entry is a sample's encoded bytes or its decoded form (buf.h's
 * form_w; dlc_config.forms, chosen by pipeline/forms.c), accounted by the
 * memory it holds. Forms are pinned while decode limits the loader (out
 * of the policy's heap, evicted only by a form worth DISPLACE times more
 * per byte), else ranked by next use with the encoded bytes.
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
#include "pinheap.h"
#include "policy.h"

/*
 * A form takes pinned forms' room only when it is worth this many times
 * more per byte than each of them (the decode time a hit saves, over the
 * bytes). A displaced form's making is lost, and the values are single
 * measurements of noisy decodes: with forms of one kind (a data set of
 * like images) nothing churns, and a form far costlier to decode than
 * its bytes suggest still wins its room.
 */
#define DISPLACE	2

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
	uint64_t forms_held;	/* entries that are decoded forms */
	uint64_t forms_bytes;	/* their bytes, of used */
	uint64_t forms_displaced;	/* pinned forms displace() let go */
	/*
	 * Forms are pinned: out of the policy's heap, admitted while they
	 * fit, over encoded bytes (pipeline/forms.c), and then in the room
	 * of those worth DISPLACE times less per byte, least first (pins:
	 * made at the first pin, freed with the cache; without it, none is
	 * displaced).
	 */
	int pin_forms;
	struct dlc_pinheap pins;
	uint32_t *form_us;	/* per sample: its form's value, us a hit saves */
	uint32_t *popped;	/* displace()'s scratch: pinned forms taken out */
	int no_displace;	/* dlc_cache_forms_may_displace(0) */
};

/* Whether entry @id is one the policy ranks (not a pinned form). */
static int ranked(const struct dlc_cache *c, uint32_t id)
{
	return !(c->pin_forms && c->entry[id]->form_w);
}

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
	dlc_pinheap_fini(&c->pins);
	free(c->form_us);
	free(c->popped);
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
		if (c->entry[i] && ranked(c, i))
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

/* Drop entry @id's bytes and their accounting (the policy's is the caller's). */
static void drop_entry(struct dlc_cache *c, uint32_t id)
{
	struct dlc_buf *b = c->entry[id];
	size_t bytes = dlc_buf_footprint(b);

	c->used -= bytes;
	if (b->form_w) {
		c->forms_held--;
		c->forms_bytes -= bytes;
		if (c->pins.heap)
			dlc_pinheap_remove(&c->pins, id);
	}
	dlc_buf_put(b);
	c->entry[id] = NULL;
}

static void evict(struct dlc_cache *c, uint32_t id)
{
	dlc_policy_remove(&c->pol, id);
	drop_entry(c, id);
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

/*
 * Form @id's value per byte, as pinned forms are ranked: over its pixels'
 * bytes, as forms.c estimates a form before it is made (the memory it
 * holds is at most 1/16 more for a form of any size, buf.c).
 */
static double density(const struct dlc_cache *c, uint32_t id)
{
	return c->form_us && c->entry[id]->len ?
	       (double)c->form_us[id] / (double)c->entry[id]->len : 0;
}

/*
 * The forms' values and ranking, made with the first form or pin: 1 when
 * they are there (without memory for them, no form is displaced).
 */
static int have_pins(struct dlc_cache *c)
{
	if (c->pins.heap)
		return 1;
	c->popped = malloc(sizeof(*c->popped) * c->nsamples);
	c->form_us = calloc(c->nsamples, sizeof(*c->form_us));
	if (!c->popped || !c->form_us ||
	    dlc_pinheap_init(&c->pins, c->nsamples)) {
		free(c->popped);
		free(c->form_us);
		c->popped = NULL;
		c->form_us = NULL;
		return 0;
	}
	return 1;
}

/*
 * Whether the pinned forms worth DISPLACE times less per byte than
 * @key, least first, hold @need bytes; with @evict, they are evicted,
 * else (and when they do not) all are kept. O(k log n) for the k forms
 * looked at.
 */
static int displace(struct dlc_cache *c, uint64_t need, double key, int evict)
{
	uint64_t got = 0;
	uint32_t k = 0, i, id;
	double least;
	int ok;

	if (!c->pins.heap || key <= 0 || c->no_displace)
		return 0;
	while (got < need &&
	       (id = dlc_pinheap_min(&c->pins, &least)) != DLC_PINHEAP_NIL &&
	       least * DISPLACE < key) {
		dlc_pinheap_remove(&c->pins, id);
		c->popped[k++] = id;
		got += dlc_buf_footprint(c->entry[id]);
	}
	ok = got >= need;
	for (i = 0; i < k; i++) {
		id = c->popped[i];
		if (ok && evict) {
			drop_entry(c, id);
			c->evictions++;
			c->forms_displaced++;
		} else {
			dlc_pinheap_insert(&c->pins, id, density(c, id));
		}
	}
	return ok;
}

int dlc_cache_would_keep(struct dlc_cache *c, uint32_t id, uint64_t bytes,
			 double key)
{
	if (!c->pin_forms || id >= c->nsamples)
		return 0;
	if (c->forms_bytes + bytes <= c->capacity)
		return 1;
	return bytes <= c->capacity &&
	       displace(c, c->forms_bytes + bytes - c->capacity, key, 0);
}

void dlc_cache_forms_may_displace(struct dlc_cache *c, int may)
{
	c->no_displace = !may;
}

void dlc_cache_pin_forms(struct dlc_cache *c, int pin)
{
	uint32_t i;

	if (c->pin_forms == !!pin)
		return;
	c->pin_forms = !!pin;
	if (pin)
		have_pins(c);
	else if (c->pins.heap)
		dlc_pinheap_clear(&c->pins);
	for (i = 0; i < c->nsamples; i++) {
		if (!c->entry[i] || !c->entry[i]->form_w)
			continue;
		if (pin) {
			dlc_policy_remove(&c->pol, i);
			if (c->pins.heap)
				dlc_pinheap_insert(&c->pins, i, density(c, i));
		} else {
			dlc_policy_insert(&c->pol, i);
		}
	}
}

int dlc_cache_offer_form(struct dlc_cache *c, uint32_t id, struct dlc_buf *b,
			 uint32_t value_us)
{
	size_t bytes = dlc_buf_footprint(b), had;
	double key = b->len ? (double)value_us / (double)b->len : 0;
	struct dlc_buf *old;

	if (id >= c->nsamples || !b->form_w)
		return 0;
	old = c->entry[id];
	if (old && old->form_w)
		return 0;
	had = old ? dlc_buf_footprint(old) : 0;
	if (bytes > c->capacity ||
	    (c->pin_forms && c->forms_bytes + bytes > c->capacity &&
	     !displace(c, c->forms_bytes + bytes - c->capacity, key, 1))) {
		c->bypasses++;
		return 0;
	}
	/*
	 * Pinned, a form is worth more than any encoded entry: room is made
	 * by next use among those alone. Else by next use, as for any
	 * sample, and never by evicting @id itself.
	 */
	if (c->pin_forms)
		dlc_policy_remove(&c->pol, id);
	while (c->used - had + bytes > c->capacity) {
		uint32_t v = dlc_policy_victim(&c->pol);

		if (v == DLC_POLICY_NIL || v == id ||
		    (!c->pin_forms && !dlc_policy_prefer(&c->pol, id, v))) {
			if (old && c->pin_forms)
				dlc_policy_insert(&c->pol, id);
			c->bypasses++;
			return 0;
		}
		evict(c, v);
	}
	if (old)
		drop_entry(c, id);
	c->entry[id] = dlc_buf_get(b);
	c->used += bytes;
	c->forms_held++;
	c->forms_bytes += bytes;
	if (have_pins(c))
		c->form_us[id] = value_us;
	if (!c->pin_forms)
		dlc_policy_insert(&c->pol, id);
	else if (c->pins.heap)
		dlc_pinheap_insert(&c->pins, id, key);
	return 1;
}

void dlc_cache_counters(const struct dlc_cache *c,
			struct dlc_cache_counters *out)
{
	out->evictions = c->evictions;
	out->bypasses = c->bypasses;
	out->used = c->used;
	out->capacity = c->capacity;
	out->forms_held = c->forms_held;
	out->forms_bytes = c->forms_bytes;
	out->forms_displaced = c->forms_displaced;
}
