/* SPDX-License-Identifier: MIT */
/*
 * Read-ahead: samples read from storage before the pipeline claims their
 * positions, held outside the batch ring within a byte budget.
 *
 * Positions are virtual, g = epoch * epoch_len + pos, so that the next
 * epoch's positions follow this epoch's: a read made for g is good for as
 * long as the configuration (seed, rank, world) is, whatever start_epoch
 * calls come between. The table holds one entry per position in a span of
 * @slots (g % slots); an entry moves
 *
 *	FREE -> IN_FLIGHT (read queued) -> READY (read done) -> FREE (taken
 *	by the pipeline, or dropped)
 *
 * and an IN_FLIGHT entry may be marked claimed (the pipeline took its
 * position while the read was in flight: the read's completion goes
 * straight to decode) or abandoned (a start_epoch elsewhere: the
 * completion is dropped). An IN_FLIGHT entry is never reused, so a
 * completion's tag always finds its own entry.
 *
 * With dlcache.ko an entry's IN_FLIGHT starts with a look-up (a GET with
 * DLCACHE_SQE_F_AHEAD, ->probing): a sample the module holds is not read
 * (dlc_ra_cancel(): FREE again), a miss is (dlc_ra_reading()), and when
 * the look-up took the sample's fill (->fill) the loader must end it: a
 * PUT after the use, or an ABORT when the entry is dropped. The table
 * never ends fills itself: dlc_ra_retain() leaves READY entries with a
 * fill to the caller (dlc_ra_retain_fills()).
 *
 * The table belongs to the loader's I/O thread: no locking.
 */
#ifndef DLC_READAHEAD_H
#define DLC_READAHEAD_H

#include <stdint.h>

struct dlc_buf;

enum dlc_ra_state { DLC_RA_FREE, DLC_RA_IN_FLIGHT, DLC_RA_READY };

struct dlc_ra_entry {
	uint64_t g;		/* the virtual position it was read for */
	struct dlc_buf *buf;	/* READY: the bytes; NULL when the read failed */
	const char *why;	/* READY with an error: what failed */
	uint64_t bytes;		/* charged against the budget */
	int err;		/* READY: the read's -errno, 0 */
	uint32_t id;		/* the sample */
	uint32_t pos;		/* claimed: the position in its epoch */
	uint8_t state;		/* enum dlc_ra_state */
	uint8_t claimed;	/* IN_FLIGHT: the pipeline took it */
	uint8_t abandoned;	/* IN_FLIGHT: drop it on completion */
	uint8_t probing;	/* IN_FLIGHT: the module's look-up is out */
	uint8_t fill;		/* the look-up took the module's fill: ours to end */
	uint8_t reading;	/* dlc_ra_reading(): a read from storage */
};

struct dlc_ra_counters {
	/*
	 * Counters only grow (the stats take differences of them): a read
	 * counts when it goes to storage, not when its entry begins, since
	 * a look-up begun in one epoch may find the module holding the
	 * sample in the next.
	 */
	uint64_t reads;		/* dlc_ra_reading() calls */
	uint64_t used;		/* of those, taken by the pipeline */
	uint64_t dropped;	/* dropped unused */
	uint64_t held;		/* bytes charged now */
	uint64_t budget;
};

/* Reader tags of read-ahead reads: bit 63 set, the virtual position below. */
#define DLC_RA_TAG_BIT		(1ULL << 63)
#define DLC_RA_TAG(g)		(DLC_RA_TAG_BIT | (g))
#define DLC_RA_TAG_G(tag)	((tag) & ~DLC_RA_TAG_BIT)
/* Virtual positions at or past this are not read ahead (tags need bit 63). */
#define DLC_RA_G_LIMIT		(1ULL << 60)	/* below the tier bits, tier.h */

struct dlc_ra;

/* A table of @slots positions (>= 1) and a budget of @budget bytes. */
int dlc_ra_create(uint32_t slots, uint64_t budget, struct dlc_ra **out);
/* Puts the buffers of READY entries. IN_FLIGHT ones are the reader's. */
void dlc_ra_destroy(struct dlc_ra *ra);
uint32_t dlc_ra_slots(const struct dlc_ra *ra);
/* The entry in slot @i (< dlc_ra_slots()), for a walk over all of them. */
struct dlc_ra_entry *dlc_ra_slot(struct dlc_ra *ra, uint32_t i);
/* The entry at @g's slot: check ->state and ->g before using it. */
struct dlc_ra_entry *dlc_ra_at(struct dlc_ra *ra, uint64_t g);
/* The entry read for @g, READY or IN_FLIGHT and not abandoned, or NULL. */
struct dlc_ra_entry *dlc_ra_find(struct dlc_ra *ra, uint64_t g);
/* The budget is @budget bytes now (the caller keeps it >= held). */
void dlc_ra_set_budget(struct dlc_ra *ra, uint64_t budget);
/* The bytes charged now. */
uint64_t dlc_ra_held(const struct dlc_ra *ra);
/* Whether @bytes more fit in the budget. */
int dlc_ra_room(const struct dlc_ra *ra, uint64_t bytes);
/*
 * FREE entry @e: @bytes of sample @id for @g are on their way (a read
 * queued, or the module's look-up first).
 */
void dlc_ra_begin(struct dlc_ra *ra, struct dlc_ra_entry *e, uint64_t g,
		  uint32_t id, uint64_t bytes);
/* IN_FLIGHT entry @e: its read goes to storage now; counts it once. */
void dlc_ra_reading(struct dlc_ra *ra, struct dlc_ra_entry *e);
/* IN_FLIGHT, unclaimed entry @e: its read ended (or failed to queue). */
void dlc_ra_done(struct dlc_ra_entry *e, struct dlc_buf *buf, int err,
		 const char *why);
/*
 * The pipeline takes @e, READY or IN_FLIGHT, at position @pos of its
 * epoch: its bytes leave the budget (the batch window holds them now). A
 * READY entry is FREE after this, its buffer the caller's; an IN_FLIGHT
 * one is marked claimed, for dlc_ra_release() at completion.
 */
void dlc_ra_take(struct dlc_ra *ra, struct dlc_ra_entry *e, uint32_t pos);
/* A claimed or abandoned IN_FLIGHT entry's read ended: FREE it. */
void dlc_ra_release(struct dlc_ra_entry *e);
/*
 * An IN_FLIGHT entry turned out to need no read (the module holds the
 * sample): FREE it, its charge undone. A claimed
 * or abandoned one has no charge left, so this is dlc_ra_release() then.
 */
void dlc_ra_cancel(struct dlc_ra *ra, struct dlc_ra_entry *e);
/*
 * Keep what was read for [@lo, @hi): READY entries outside are dropped
 * (buffers put), IN_FLIGHT unclaimed ones marked abandoned.
 */
void dlc_ra_retain(struct dlc_ra *ra, uint64_t lo, uint64_t hi);
/*
 * Before dlc_ra_retain(@lo, @hi): call @end for each READY entry it would
 * drop that holds a fill, and clear its ->fill. IN_FLIGHT ones keep
 * theirs: their completion, abandoned, ends it.
 */
void dlc_ra_retain_fills(struct dlc_ra *ra, uint64_t lo, uint64_t hi,
			 void (*end)(void *arg, struct dlc_ra_entry *e),
			 void *arg);
void dlc_ra_counters(const struct dlc_ra *ra, struct dlc_ra_counters *out);

#endif /* DLC_READAHEAD_H */
