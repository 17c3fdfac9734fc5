/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Next-use (Belady) cache policy over known epoch orders.
 *
 * This file and policy.c are plain C with no libc and no kernel
 * dependency: the same source is compiled into dlcache.ko, into
 * libdlcache's in-process cache and into the KUnit suite.
 *
 * Model. Every uploaded epoch order is appended to one time line of
 * positions. A sample's "next use" is the first position at or after the
 * cursor where it appears. Positions are unique, so the cached sample used
 * farthest in the future is the highest set bit of a bitmap over positions.
 * Cached samples with no known next use are kept on a list and go first.
 *
 * The policy only ranks samples; the caller owns the bytes, the capacity
 * and the locking. None of these functions sleeps or allocates: all memory
 * is handed in at init, sized by dlc_policy_mem_size().
 */
#ifndef DLC_POLICY_H
#define DLC_POLICY_H

#ifdef __KERNEL__
#include <linux/limits.h>
#include <linux/types.h>
#ifndef UINT64_MAX
#define UINT64_MAX	U64_MAX
#endif
#ifndef UINT32_MAX
#define UINT32_MAX	U32_MAX
#endif
#else
#include <stddef.h>
#include <stdint.h>
#endif

/* Next use of a sample with no known future use. */
#define DLC_POLICY_NEVER	UINT64_MAX
/* No sample (list terminator). */
#define DLC_POLICY_NIL		UINT32_MAX
/* Epoch orders remembered at once (current, next, and some in hand). */
#define DLC_POLICY_MAX_EPOCHS	8
/*
 * Largest sample count and window (positions), to keep sizes in 32 bits.
 * The window holds three epochs of DLC_POLICY_MAX_SAMPLES positions
 * (rounded up to a power of two), as the in-process cache asks.
 */
#define DLC_POLICY_MAX_SAMPLES	(1U << 28)
#define DLC_POLICY_MAX_WINDOW	(1U << 30)

/* Error values, equal to Linux errno numbers, returned negated. */
#define DLC_POLICY_ENOENT	2
#define DLC_POLICY_EINVAL	22
#define DLC_POLICY_ENOSPC	28

struct dlc_policy_epoch {
	uint32_t epoch;		/* caller's epoch number */
	uint32_t len;		/* positions in this epoch's order */
	uint64_t base;		/* position of index 0 */
};

struct dlc_policy {
	uint32_t nsamples;	/* sample IDs are 0 .. nsamples - 1 */
	uint32_t window;	/* positions held at once, a power of two >= 64 */
	uint64_t cursor;	/* positions below it are consumed */
	uint64_t end;		/* one past the last known position */
	uint32_t ncached;	/* samples marked cached */
	uint32_t nepochs;	/* valid entries in epochs[], oldest first */
	struct dlc_policy_epoch epochs[DLC_POLICY_MAX_EPOCHS];

	/* Per position, indexed by pos % window. */
	uint32_t *order;	/* sample used at this position */
	uint64_t *succ;		/* next position of the same sample, or NEVER */
	uint64_t *bitmap;	/* set: a cached sample's next use is here */

	/* Per sample. */
	uint64_t *next_use;	/* first position >= cursor, or NEVER */
	uint64_t *last_pos;	/* last known position, or NEVER */
	uint64_t *cached;	/* bitmap of cached samples */
	uint32_t *never_prev;	/* list of cached samples with no next use */
	uint32_t *never_next;
	uint32_t never_head;
	uint32_t nnever;	/* entries on that list */
	uint64_t top_hint;	/* no bit is set above this position */
};

/*
 * Bytes of memory dlc_policy_init() needs for @nsamples samples and a
 * window of @window positions (rounded up to a power of two, at least 64),
 * or 0 when either is zero or above its limit.
 */
size_t dlc_policy_mem_size(uint32_t nsamples, uint32_t window);

/*
 * Set up @p over @mem, which must hold dlc_policy_mem_size() bytes and be
 * 8-byte aligned. Returns 0 or -DLC_POLICY_EINVAL.
 */
int dlc_policy_init(struct dlc_policy *p, uint32_t nsamples, uint32_t window,
		    void *mem, size_t mem_size);

/*
 * Append the order of @epoch (@len sample IDs) to the time line. Epoch
 * numbers must increase. Every ID is checked before anything changes.
 * Returns 0, -DLC_POLICY_EINVAL for a bad ID, a zero length or an epoch that
 * does not increase, or -DLC_POLICY_ENOSPC when the unconsumed positions
 * would not fit in the window or the epoch table is full (consume first).
 */
int dlc_policy_add_epoch(struct dlc_policy *p, uint32_t epoch,
			 const uint32_t *ids, uint32_t len);

/*
 * Position of index @index of epoch @epoch in *@pos. Returns 0 or
 * -DLC_POLICY_ENOENT when that epoch is not (or no longer) known or the
 * index is past its end.
 */
int dlc_policy_position(const struct dlc_policy *p, uint32_t epoch,
			uint32_t index, uint64_t *pos);

/*
 * Mark every position below @pos as consumed: each sample used there moves
 * on to its following use. Moving backwards does nothing; @pos is clamped
 * to the end of the known orders. Epochs wholly consumed are forgotten.
 */
void dlc_policy_advance(struct dlc_policy *p, uint64_t pos);

/* Next use of sample @id, or DLC_POLICY_NEVER (also for a bad ID). */
uint64_t dlc_policy_next_use(const struct dlc_policy *p, uint32_t id);

/* Whether @id is marked cached. */
int dlc_policy_is_cached(const struct dlc_policy *p, uint32_t id);

/*
 * Mark @id cached or not. Marking twice, or unmarking a sample that is not
 * cached, does nothing. Returns 0 or -DLC_POLICY_EINVAL for a bad ID.
 */
int dlc_policy_insert(struct dlc_policy *p, uint32_t id);
int dlc_policy_remove(struct dlc_policy *p, uint32_t id);

/*
 * The cached sample to evict first: one with no known next use, else the
 * one used farthest in the future. Returns its ID, or DLC_POLICY_NIL when
 * nothing is cached. Does not unmark it.
 */
uint32_t dlc_policy_victim(struct dlc_policy *p);

/*
 * Whether caching @id is worth evicting @victim: 1 when @id's next use is
 * strictly nearer than @victim's, else 0. Admission calls this with the
 * current victim and bypasses @id on 0.
 */
int dlc_policy_prefer(const struct dlc_policy *p, uint32_t id,
		      uint32_t victim);

#endif /* DLC_POLICY_H */
