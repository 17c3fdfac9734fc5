/* SPDX-License-Identifier: MIT */
/*
 * The in-process cache (cache.c), used by the I/O thread only: next-use
 * eviction by policy.c over this process's orders.
 * Internal to libdlcache; the public face is dlcache.h.
 */
#ifndef DLC_CACHE_H
#define DLC_CACHE_H

#include <stdint.h>

struct dlc_buf;

struct dlc_cache;

/*
 * A cache of up to @capacity bytes over @nsamples samples whose orders are
 * up to @epoch_len positions long.
 */
int dlc_cache_create(uint32_t nsamples, uint32_t epoch_len, uint64_t capacity,
		     struct dlc_cache **out);
void dlc_cache_destroy(struct dlc_cache *c);

/*
 * Make sure the orders of @epoch and @epoch + 1 are known, uploading them
 * with @fill (which writes one epoch's order); an epoch out of sequence
 * restarts the time line, keeping the cached bytes.
 */
int dlc_cache_prepare_epoch(struct dlc_cache *c, uint32_t epoch,
			    int (*fill)(void *arg, uint32_t epoch,
					uint32_t *ids, uint32_t len),
			    void *arg);

/*
 * (@epoch, @index) and every position before it are consumed: the sample
 * used there now ranks by its following use.
 */
void dlc_cache_advance(struct dlc_cache *c, uint32_t epoch, uint32_t index);

/* A new reference to the cached bytes of @id, or NULL on a miss. */
struct dlc_buf *dlc_cache_lookup(struct dlc_cache *c, uint32_t id);
/* Whether @id is cached now (no reference taken). */
int dlc_cache_contains(const struct dlc_cache *c, uint32_t id);

/*
 * Offer @b as the bytes of @id. Returns 1 when cached (the cache takes its
 * own reference), 0 when bypassed. Evicts as the policy says.
 */
int dlc_cache_offer(struct dlc_cache *c, uint32_t id, struct dlc_buf *b);

/*
 * Whether a decoded form of @bytes for @id, worth @key per byte (the
 * decode time a hit saves, us, over its bytes; 0: unknown), would be kept
 * now: forms are pinned, and the forms held fit with it, or would with
 * those worth DISPLACE (cache.c) times less per byte taken out. (Unpinned,
 * forms.c makes none.)
 */
int dlc_cache_would_keep(struct dlc_cache *c, uint32_t id, uint64_t bytes,
			 double key);

/*
 * Pin the decoded forms (@pin 1) or rank them by next use with the rest
 * (0). Pinned, a form is evicted only by a form worth DISPLACE times more
 * per byte (least worth first), and is admitted while the forms fit,
 * evicting encoded bytes by next use.
 */
void dlc_cache_pin_forms(struct dlc_cache *c, int pin);

/*
 * Whether a form may take pinned forms' room from now on (1, as created)
 * or only free room and encoded bytes' (0): its making is paid again by
 * a form displaced, and a job's last epochs leave too few uses to pay it
 * back (the loader passes whether DLC_FORMS_PAYBACK epochs are left).
 */
void dlc_cache_forms_may_displace(struct dlc_cache *c, int may);
/*
 * Epochs that must be left after the current one for a displacement to
 * pay: one at twice the value per byte saves at least half the new
 * form's decode a use, and its making costs up to 1.4 decodes
 * (test_forms_opt's model).
 */
#define DLC_FORMS_PAYBACK	3

/*
 * Offer @b, a decoded form of @id (form_w set) whose hit saves @value_us
 * of decode (0: unknown), in place of the encoded bytes cached for it, if
 * any. Room is made by next use (among encoded entries when pinned, after
 * the forms worth DISPLACE times less per byte when the pinned forms are
 * full), never by evicting @id: 1 when cached (its own reference taken),
 * 0 when not.
 */
int dlc_cache_offer_form(struct dlc_cache *c, uint32_t id, struct dlc_buf *b,
			 uint32_t value_us);

struct dlc_cache_counters {
	uint64_t evictions;
	uint64_t bypasses;
	uint64_t used;
	uint64_t capacity;
	uint64_t forms_held;
	uint64_t forms_bytes;
	uint64_t forms_displaced;	/* pinned forms let go for a denser one */
};
void dlc_cache_counters(const struct dlc_cache *c,
			struct dlc_cache_counters *out);

#endif
