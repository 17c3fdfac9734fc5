/* SPDX-License-Identifier: MIT */
/*
 * A read tier: a place between the caches and the origin that may hold a
 * sample's bytes and serves them as a read on the loader's io_uring
 * reader (the staging tier, stage.c; peers are the next). The source
 * (source.c) asks its tiers in the order they were added, the cheapest
 * first, and the origin last: dlc_source_queue() queues the read from the
 * first tier that holds the sample, tagged with that tier's number; the
 * completion's check (dlc_source_served()) asks that tier whether the
 * bytes are good, and else requeues the read from the tiers after it.
 * Every origin read is offered to every tier (dlc_source_offer()), which
 * keeps what it wants.
 *
 * The caches above (the in-process cache, cache.c, or dlcache.ko,
 * ktier.c) are not read tiers: they are asked at claim time and own a
 * sample's fill, and the pipeline (loader.c) talks to them itself.
 *
 * All of it is called from the loader's I/O thread.
 */
#ifndef DLC_TIER_H
#define DLC_TIER_H

#include <stddef.h>
#include <stdint.h>

struct dlc_reader;
struct dlc_read_done;
struct dlc_buf;

struct dlc_tier_ops {
	const char *name;	/* for messages: "staging", "peers" */
	/*
	 * Queue a read of sample @id on @r tagged @tag, when this tier holds
	 * it (@scratch: room for a path). 1: queued; 0: not held here (or no
	 * room: the next tier is asked); a negative errno: queued nothing and
	 * the read fails with it.
	 */
	int (*queue)(void *tier, struct dlc_reader *r, uint32_t id,
		     uint64_t tag, char *scratch, size_t len);
	/*
	 * A read this tier queued ended (@d, its tag without the tier's
	 * number): 0 when its bytes are sample @id's (a hit); else a
	 * negative errno, @d's buffer put and NULL: the next tiers are asked.
	 */
	int (*served)(void *tier, uint32_t id, struct dlc_read_done *d);
	/* The origin's bytes @b of sample @id: kept (a reference) if wanted. */
	void (*offer)(void *tier, uint32_t id, struct dlc_buf *b);
};

struct dlc_tier {
	const struct dlc_tier_ops *ops;
	void *tier;
};

/* Tiers a source may have: their numbers 1 .. DLC_TIERS_MAX in a tag. */
#define DLC_TIERS_MAX		7
#define DLC_TIER_SHIFT		60
#define DLC_TIER_TAG_MASK	(7ULL << DLC_TIER_SHIFT)
/* The tag bits of tier @i (1 ..), and the tier of @tag (0: the origin). */
#define DLC_TIER_TAG(i)		((uint64_t)(i) << DLC_TIER_SHIFT)
#define DLC_TIER_OF(tag)	((uint32_t)(((tag) & DLC_TIER_TAG_MASK) >> \
					    DLC_TIER_SHIFT))

#endif
