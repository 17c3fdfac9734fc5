/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Next-use (Belady) cache policy over the known orders of several
 * consumers.
 *
 * This file and policy.c are plain C with no libc and no kernel
 * dependency: the same source is compiled into dlcache.ko, into
 * libdlcache's in-process cache and into the KUnit suite.
 *
 * Model. A consumer (one job: a process, or the ranks of one job) has its
 * own time line: every epoch order it uploads is appended to it, and its
 * cursor says which positions it has consumed. A sample's next use in a
 * consumer is the first position at or after that consumer's cursor where
 * it appears.
 *
 * Consumers move at different speeds, so positions of two time lines are
 * compared in time: each consumer has a cost (predicted nanoseconds per
 * position, measured from its progress) and an anchor (position p0 was
 * reached at time t0), and position q of consumer c is predicted at
 *	T_c(q) = t0_c + (q - p0_c) * cost_c         (saturating, < NEVER).
 * A sample's key is the soonest of T_c(next use in c) over the active
 * consumers, or DLC_POLICY_NEVER when no active consumer uses it again.
 * The cached sample with the largest key is the victim: one with no known
 * use goes first, then the one used farthest in the future.
 *
 * The anchor is set by the first use of each epoch (p0 just past the
 * epoch's first position, t0 = that use's time): a loader looks up a
 * read-ahead's worth of positions at an epoch's start and pauses before
 * its end while its reads drain, so a consumer's line is straight only
 * between epoch starts, and anchoring every consumer there keeps ranks
 * that drift apart placed alike. A new measured cost (moved by more than
 * a quarter) turns the line about the cursor's predicted time, keeping
 * that phase; a cursor whose predicted time drifted from the clock by a
 * quarter of the window's time, or a consumer back from a stall, is
 * anchored at (now, cursor).
 *
 * Keys of cached samples are kept in a max-heap. They change only when a
 * consumer passes a sample's use, uploads an order, or is re-anchored (as
 * above: at most once an epoch, and on a new pace): then every key is
 * recomputed, O(ncached * K). With one consumer the ranking is the order
 * of next uses, exactly as a single time line.
 *
 * Consumer 0 always exists (set up by dlc_policy_init() in the same
 * memory). Others are added with memory of their own and removed; an
 * inactive one (removed, or stalled: no progress for longer than the
 * caller's stall time) holds no sample.
 *
 * The policy only ranks samples; the caller owns the bytes, the capacity,
 * the clock and the locking. None of these functions allocates: all
 * memory is handed in, sized by the *_mem_size() functions. In the kernel
 * their long loops call cond_resched() (policy.c's maybe_yield()), so the
 * caller may hold mutexes but no spinlock; elsewhere they never block.
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

/* Next use (position or key) of a sample with no known future use. */
#define DLC_POLICY_NEVER	UINT64_MAX
/* No sample (list terminator). */
#define DLC_POLICY_NIL		UINT32_MAX
/* Epoch orders remembered at once per consumer. */
#define DLC_POLICY_MAX_EPOCHS	8
/* Consumers at once, consumer 0 included. */
#define DLC_POLICY_MAX_CONSUMERS 32
/*
 * Largest sample count and window (positions), to keep sizes in 32 bits.
 * The window holds three epochs of DLC_POLICY_MAX_SAMPLES positions
 * (rounded up to a power of two), as the in-process cache asks.
 */
#define DLC_POLICY_MAX_SAMPLES	(1U << 28)
#define DLC_POLICY_MAX_WINDOW	(1U << 30)
/* Cost of a consumer before its first measurement: 1 ms per position. */
#define DLC_POLICY_DEFAULT_COST	1000000ULL
/* A consumer's rate is measured over spans of at least this long. */
#define DLC_POLICY_RATE_SPAN	250000000ULL	/* 250 ms, in ns */
/*
 * ... and its cost is the time per position over about its last this
 * many positions, each span weighted by its positions: a pause and the
 * burst of look-ups after it (an epoch's end) average out instead of
 * reading as one very slow span and then a very fast one.
 */
#define DLC_POLICY_RATE_POSITIONS 256

/* Error values, equal to Linux errno numbers, returned negated. */
#define DLC_POLICY_ENOENT	2
#define DLC_POLICY_EINVAL	22
#define DLC_POLICY_ENOSPC	28

struct dlc_policy_epoch {
	uint32_t epoch;		/* caller's epoch number */
	uint32_t len;		/* positions in this epoch's order */
	uint64_t base;		/* position of index 0 */
};

/* One consumer's time line. All arrays live in memory the caller owns. */
struct dlc_policy_line {
	int used;		/* this slot holds a consumer */
	int active;		/* its uses count in the keys */
	uint64_t cursor;	/* positions below it are consumed */
	uint64_t end;		/* one past the last known position */
	uint32_t nepochs;	/* valid entries in epochs[], oldest first */
	struct dlc_policy_epoch epochs[DLC_POLICY_MAX_EPOCHS];

	/* Per position, indexed by pos % window. */
	uint32_t *order;	/* sample used at this position */
	uint64_t *succ;		/* next position of the same sample, or NEVER */
	/* Per sample. */
	uint64_t *next_use;	/* first position >= cursor, or NEVER */
	uint64_t *last_pos;	/* last known position, or NEVER */

	/* Time: T(q) = t0 + (q - p0) * cost. */
	uint64_t t0;		/* ns: when p0 was (predicted to be) reached */
	uint64_t p0;		/* anchor position */
	uint64_t cost;		/* ns per position, >= 1 */
	int measured;		/* cost comes from a measurement */
	uint64_t est;		/* ns per position: the measured estimate */
	uint64_t rate_t;	/* ns: start of the current measurement, or
				 * NEVER until the first advance */
	uint64_t rate_p;	/* cursor at rate_t */
	uint64_t sum_t;		/* ns over the last sum_p measured positions */
	uint64_t sum_p;		/* <= DLC_POLICY_RATE_POSITIONS once measured */
	uint64_t seen;		/* ns: last dlc_policy_advance() */
};

struct dlc_policy {
	uint32_t nsamples;	/* sample IDs are 0 .. nsamples - 1 */
	uint32_t window;	/* positions per line, a power of two >= 64 */
	uint32_t ncached;	/* samples marked cached */
	uint32_t nlines;	/* consumers (used slots) */
	struct dlc_policy_line line[DLC_POLICY_MAX_CONSUMERS];

	/* Per sample. */
	uint64_t *cached;	/* bitmap of cached samples */
	uint64_t *key;		/* cached: merged next-use time, or NEVER */
	uint32_t *hpos;		/* cached: index in heap[] */
	/* Max-heap of the cached samples by key; heap[0] is the victim. */
	uint32_t *heap;
	uint64_t rebuilds;	/* times every key was recomputed (a counter) */
};

/*
 * Bytes of memory dlc_policy_init() needs for @nsamples samples and a
 * window of @window positions (rounded up to a power of two, at least
 * 64): the merged view and consumer 0's line. 0 when either is zero or
 * above its limit.
 */
size_t dlc_policy_mem_size(uint32_t nsamples, uint32_t window);

/*
 * Set up @p over @mem, which must hold dlc_policy_mem_size() bytes and be
 * 8-byte aligned, with consumer 0 active and unmeasured, anchored at
 * (time @now, position 0). Returns 0 or -DLC_POLICY_EINVAL.
 */
int dlc_policy_init(struct dlc_policy *p, uint32_t nsamples, uint32_t window,
		    void *mem, size_t mem_size, uint64_t now);

/* Bytes of memory one more consumer's line needs (0 as above). */
size_t dlc_policy_line_mem_size(uint32_t nsamples, uint32_t window);

/*
 * Add a consumer over @mem (dlc_policy_line_mem_size(p->nsamples,
 * p->window) bytes, 8-byte aligned), active, anchored at (@now, 0), its
 * cost unmeasured: it takes the mean cost of the measured active
 * consumers, else DLC_POLICY_DEFAULT_COST. Returns its index (1 ..
 * DLC_POLICY_MAX_CONSUMERS - 1), -DLC_POLICY_ENOSPC when every slot is
 * used, or -DLC_POLICY_EINVAL.
 */
int dlc_policy_add_consumer(struct dlc_policy *p, void *mem, size_t mem_size,
			    uint64_t now);

/*
 * Remove consumer @c (not 0): its uses stop counting at once. Its memory
 * is the caller's again when this returns.
 */
void dlc_policy_remove_consumer(struct dlc_policy *p, uint32_t c);

/*
 * Append the order of @epoch (@len sample IDs) to consumer @c's time line.
 * Epoch numbers must increase. Every ID is checked before anything
 * changes. Returns 0, -DLC_POLICY_EINVAL for a bad consumer or ID, a zero
 * length or an epoch that does not increase, or -DLC_POLICY_ENOSPC when
 * the unconsumed positions would not fit in the window or the epoch table
 * is full (consume first).
 */
int dlc_policy_add_epoch(struct dlc_policy *p, uint32_t c, uint32_t epoch,
			 const uint32_t *ids, uint32_t len);

/*
 * Position of index @index of epoch @epoch in consumer @c's time line, in
 * *@pos. Returns 0 or -DLC_POLICY_ENOENT when that epoch is not (or no
 * longer) known, the index is past its end or @c is not a consumer.
 */
int dlc_policy_position(const struct dlc_policy *p, uint32_t c,
			uint32_t epoch, uint32_t index, uint64_t *pos);

/* The sample at position @pos of consumer @c, or DLC_POLICY_NIL when that
 * position is not live (below the cursor or at or past the end). */
uint32_t dlc_policy_sample_at(const struct dlc_policy *p, uint32_t c,
			      uint64_t pos);

/*
 * The oldest position of consumer @c's time line whose sample is still
 * held: positions from there to the end are readable by
 * dlc_policy_read_order(), whether consumed or not, until an upload
 * writes over them (each position's slot is that of the one a window
 * later). The end when none is; 0 when @c is not a consumer.
 */
uint64_t dlc_policy_first(const struct dlc_policy *p, uint32_t c);

/*
 * The samples of consumer @c's positions @from .. into @ids, at most
 * @len: how many were written, 0 when @from is not between
 * dlc_policy_first() and the end.
 */
uint32_t dlc_policy_read_order(const struct dlc_policy *p, uint32_t c,
			       uint64_t from, uint32_t *ids, uint32_t len);

/*
 * Consumer @c reached @pos at time @now (nanoseconds, any monotonic
 * clock, the same for every call on @p): every position below @pos is
 * consumed and each sample used there moves on to its following use.
 * Moving backwards does nothing but still counts as progress (the
 * consumer is alive); @pos is clamped to the end of the known orders.
 * Epochs wholly consumed are forgotten. An inactive consumer becomes
 * active again. Measures the consumer's cost over spans of at least
 * DLC_POLICY_RATE_SPAN, as the time per position of about its last
 * DLC_POLICY_RATE_POSITIONS positions, and re-anchors it (recomputing
 * every key) when the cost moved by more than a quarter or its predicted
 * time of the cursor is off the clock by more than a quarter of its
 * window's time.
 */
void dlc_policy_advance(struct dlc_policy *p, uint32_t c, uint64_t pos,
			uint64_t now);

/*
 * Consumers (0 included) whose last advance is older than @now - @stall
 * become inactive: their uses stop holding samples until they advance
 * again. A consumer that never advanced counts from its creation.
 * Returns how many were deactivated.
 */
uint32_t dlc_policy_expire(struct dlc_policy *p, uint64_t now,
			   uint64_t stall);

/* Next use of sample @id in consumer @c's line, or DLC_POLICY_NEVER
 * (also for a bad ID or consumer). */
uint64_t dlc_policy_next_use(const struct dlc_policy *p, uint32_t c,
			     uint32_t id);

/*
 * Whether sample @id is used before position @pos of line @c: at an
 * earlier position of @c (its next use there is below @pos), or on
 * another active line at an earlier predicted time. A read of @id made
 * now for the use at @pos would then likely be made, and PUT, by that
 * earlier use first. 0 for a bad ID or consumer.
 */
int dlc_policy_used_before(const struct dlc_policy *p, uint32_t c,
			   uint64_t pos, uint32_t id);

/* Merged key of sample @id (cached or not), or DLC_POLICY_NEVER. */
uint64_t dlc_policy_key(const struct dlc_policy *p, uint32_t id);

/*
 * Predicted time of position @pos of consumer @c, T_c(@pos) above
 * (saturating below DLC_POLICY_NEVER), or DLC_POLICY_NEVER when @c is not
 * a consumer.
 */
uint64_t dlc_policy_time(const struct dlc_policy *p, uint32_t c,
			 uint64_t pos);

/* Whether @id is marked cached. */
int dlc_policy_is_cached(const struct dlc_policy *p, uint32_t id);

/*
 * Mark @id cached or not. Marking twice, or unmarking a sample that is not
 * cached, does nothing. Returns 0 or -DLC_POLICY_EINVAL for a bad ID.
 */
int dlc_policy_insert(struct dlc_policy *p, uint32_t id);
int dlc_policy_remove(struct dlc_policy *p, uint32_t id);

/*
 * The cached sample to evict first: the one with the largest key (no
 * known use first). Returns its ID, or DLC_POLICY_NIL when nothing is
 * cached. Does not unmark it.
 */
uint32_t dlc_policy_victim(const struct dlc_policy *p);

/*
 * Whether caching @id is worth evicting @victim: 1 when @id's key is
 * strictly smaller than @victim's, else 0. Admission calls this with the
 * current victim and bypasses @id on 0.
 */
int dlc_policy_prefer(const struct dlc_policy *p, uint32_t id,
		      uint32_t victim);

#endif /* DLC_POLICY_H */
