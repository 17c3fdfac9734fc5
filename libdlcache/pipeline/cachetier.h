/* SPDX-License-Identifier: MIT */
/*
 * The caches' seam: what the loader's pipeline asks of a cache, and the
 * two that answer, the in-process cache (inproc.c over cache.c) and the
 * node's cache in dlcache.ko (ktier.c). The pipeline (loader.c,
 * pipeline.c) calls these wrappers only and names neither cache.
 *
 * A cache tier sits between the claims of the epoch's order and the
 * reads: its round claims the positions it can, serves what it holds to
 * decode and hands the rest to the reader; a read's end is offered back
 * to it. Every op is the I/O thread's unless it says "under l->lock",
 * where it may be called by any thread holding the loader's lock. An op
 * left NULL does nothing (or says 0).
 */
#ifndef DLC_CACHETIER_H
#define DLC_CACHETIER_H

#include <stddef.h>
#include <stdint.h>

struct dlc_buf;
struct dlc_loader;
struct dlc_stats;
struct dlc_window_shares;
struct dlc_cache_tier;

struct dlc_cache_tier_ops {
	/* Know the orders of @epoch and the next: 0, or -errno (fails it). */
	int (*prepare_epoch)(struct dlc_cache_tier *t, uint32_t epoch);
	/* Under l->lock, by start_epoch: a run begins at position @start. */
	void (*epoch_start)(struct dlc_cache_tier *t, uint32_t start);
	/*
	 * Under l->lock: whether the positions still in the tier's hands
	 * leave no room to claim @next_pos.
	 */
	int (*window_full)(const struct dlc_cache_tier *t, uint32_t next_pos);
	/*
	 * Claim what may be claimed of @epoch, serve hits to decode, queue
	 * misses to the reader (path: scratch of @len bytes). Returns
	 * whether anything happened.
	 */
	int (*round)(struct dlc_cache_tier *t, uint32_t epoch, char *path,
		     size_t len);
	/* Under l->lock: whether a round now would do anything. */
	int (*more)(const struct dlc_cache_tier *t);
	/* The read of sample @id for claimed @pos ended: @buf, NULL if failed. */
	void (*read_done)(struct dlc_cache_tier *t, uint32_t id, uint32_t pos,
			  struct dlc_buf *buf);
	/* Under l->lock: @pos was queued for decode or dropped. */
	void (*pos_done)(struct dlc_cache_tier *t, uint32_t pos);
	/* Whether the tier keeps samples at all (read-ahead's needless test). */
	int (*keeps)(const struct dlc_cache_tier *t);
	/* Under l->lock: whether it holds sample @id now, so no read is needed. */
	int (*holds)(const struct dlc_cache_tier *t, uint32_t id);
	/*
	 * Read ahead in its own way (the module's look-ups): whether
	 * anything was issued. NULL: the pipeline's read-ahead.
	 */
	int (*read_ahead)(struct dlc_cache_tier *t, uint64_t gen, char *path,
			  size_t len);
	/* The claim of @pos in @epoch took bytes read ahead (@buf; NULL: failed). */
	void (*use)(struct dlc_cache_tier *t, uint32_t pos, uint32_t epoch,
		    struct dlc_buf *buf);
	/* A read-ahead entry (sample @id at virtual @g) that held our fill ends. */
	void (*fill_abort)(struct dlc_cache_tier *t, uint32_t id, uint64_t g);
	/*
	 * Under l->lock: each sample's last position in @epoch, as this
	 * rank's, over every rank that shares the cache: 0 when written,
	 * else the pipeline writes this rank's own.
	 */
	int (*last_uses)(struct dlc_cache_tier *t, uint32_t epoch,
			 uint32_t *last_pos);
	/*
	 * Under l->lock, by the I/O thread: whether the decode of sample
	 * @id from its encoded bytes @enc should make its decoded form
	 * (forms.h), its estimated bytes in *@est.
	 */
	int (*form_wanted)(struct dlc_cache_tier *t, uint32_t id,
			   const struct dlc_buf *enc, uint32_t *est);
	/*
	 * The shares of the loader's pace window (window.h) that just
	 * ended: what sets the pace now, for its choice of forms.
	 */
	void (*pace)(struct dlc_cache_tier *t,
		     const struct dlc_window_shares *w);
	/* Its counters into the loader's stats, after reads were handed over. */
	void (*publish)(struct dlc_cache_tier *t);
	/* Under l->lock: its view of the cache into @st (dlc_loader_stats()). */
	void (*stats)(struct dlc_cache_tier *t, struct dlc_stats *st);
	/* Under l->lock: an fd whose readiness wakes the I/O thread, or -1. */
	int (*watch_fd)(const struct dlc_cache_tier *t);
	/* One line for the loader's INFO log: what cache this is. */
	void (*describe)(const struct dlc_cache_tier *t, char *buf, size_t len);
	void (*destroy)(struct dlc_cache_tier *t);
};

struct dlc_cache_tier {
	const struct dlc_cache_tier_ops *ops;
	struct dlc_loader *l;		/* the pipeline it serves */
};

/*
 * The cache the config (or DLCACHE_BACKEND) asks for: dlcache.ko when
 * asked and usable (l->backend DLC_BACKEND_KERNEL), else the in-process
 * one, with cache_bytes (none in cluster mode, whose caches are the peer
 * tier's). 0, or -errno logged; dlc_cache_tier_close() undoes it.
 */
int dlc_cache_tier_open(struct dlc_loader *l, struct dlc_cache_tier **out);
void dlc_cache_tier_close(struct dlc_cache_tier *t);

static inline int dlc_ct_prepare_epoch(struct dlc_cache_tier *t, uint32_t epoch)
{
	return t->ops->prepare_epoch ? t->ops->prepare_epoch(t, epoch) : 0;
}

static inline void dlc_ct_epoch_start(struct dlc_cache_tier *t, uint32_t start)
{
	if (t->ops->epoch_start)
		t->ops->epoch_start(t, start);
}

static inline int dlc_ct_window_full(const struct dlc_cache_tier *t,
				     uint32_t next_pos)
{
	return t->ops->window_full && t->ops->window_full(t, next_pos);
}

static inline int dlc_ct_round(struct dlc_cache_tier *t, uint32_t epoch,
			       char *path, size_t len)
{
	return t->ops->round(t, epoch, path, len);
}

static inline int dlc_ct_more(const struct dlc_cache_tier *t)
{
	return t->ops->more(t);
}

static inline void dlc_ct_read_done(struct dlc_cache_tier *t, uint32_t id,
				    uint32_t pos, struct dlc_buf *buf)
{
	if (t->ops->read_done)
		t->ops->read_done(t, id, pos, buf);
}

static inline void dlc_ct_pos_done(struct dlc_cache_tier *t, uint32_t pos)
{
	if (t->ops->pos_done)
		t->ops->pos_done(t, pos);
}

static inline int dlc_ct_keeps(const struct dlc_cache_tier *t)
{
	return t->ops->keeps && t->ops->keeps(t);
}

static inline int dlc_ct_holds(const struct dlc_cache_tier *t, uint32_t id)
{
	return t->ops->holds && t->ops->holds(t, id);
}

static inline void dlc_ct_use(struct dlc_cache_tier *t, uint32_t pos,
			      uint32_t epoch, struct dlc_buf *buf)
{
	if (t->ops->use)
		t->ops->use(t, pos, epoch, buf);
}

static inline void dlc_ct_fill_abort(struct dlc_cache_tier *t, uint32_t id,
				     uint64_t g)
{
	if (t->ops->fill_abort)
		t->ops->fill_abort(t, id, g);
}

static inline int dlc_ct_last_uses(struct dlc_cache_tier *t, uint32_t epoch,
				   uint32_t *last_pos)
{
	return t->ops->last_uses ? t->ops->last_uses(t, epoch, last_pos) : -1;
}

static inline int dlc_ct_form_wanted(struct dlc_cache_tier *t, uint32_t id,
				     const struct dlc_buf *enc, uint32_t *est)
{
	return t->ops->form_wanted && t->ops->form_wanted(t, id, enc, est);
}

static inline void dlc_ct_pace(struct dlc_cache_tier *t,
			       const struct dlc_window_shares *w)
{
	if (t->ops->pace)
		t->ops->pace(t, w);
}

static inline void dlc_ct_publish(struct dlc_cache_tier *t)
{
	if (t->ops->publish)
		t->ops->publish(t);
}

static inline void dlc_ct_stats(struct dlc_cache_tier *t, struct dlc_stats *st)
{
	if (t->ops->stats)
		t->ops->stats(t, st);
}

static inline int dlc_ct_watch_fd(const struct dlc_cache_tier *t)
{
	return t->ops->watch_fd ? t->ops->watch_fd(t) : -1;
}

#endif
