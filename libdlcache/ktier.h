/* SPDX-License-Identifier: MIT */
/*
 * The dlcache.ko tier (ktier.c): the node's shared cache, behind the
 * loader's pipeline (loader.c). Per claimed position the I/O thread GETs
 * the sample on the module's ring; a hit is decoded, a miss read from
 * the tiers below and PUT back (or ABORTed). Every function here is the
 * I/O thread's, with the loader (loader_int.h) it serves.
 */
#ifndef DLC_KTIER_H
#define DLC_KTIER_H

#include <stdint.h>

#include <linux/types.h>
#include "../uapi/dlcache.h"

struct dlc_loader;
struct dlc_buf;
struct dlc_ra_entry;

/*
 * The dlcache.ko tier's state: all of it the I/O thread's, but kc's STATS
 * (dlc_loader_stats()) and kc itself, which ktier_switch() closes under
 * the loader's lock. Per-position arrays are indexed by position modulo
 * the window.
 */
struct ktier {
	struct dlc_kclient *kc;
	uint32_t *gorder;		/* every rank's order, for SET_ORDER */
	uint32_t glen;
	int64_t k_last_epoch;		/* newest epoch uploaded, -1: none */
	/*
	 * This rank has a time line of its own in dlcache.ko (a consumer,
	 * ABI 3): it uploads its own order and GETs at its own indexes. Else
	 * the ranks share the data set's line: the global order, F_AT at
	 * global indexes.
	 */
	int k_own_line;
	struct dlc_buf **kbuf;		/* per pos % window: a GET's buffer */
	uint8_t *kfill;			/* per pos % window: we own its fill */
	uint8_t *kdone;			/* per pos % window: handed over */
	uint32_t klow;			/* lowest position not handed over */
	uint32_t *kread;		/* misses waiting for reader room */
	uint32_t kread_head, kread_len;
	uint32_t kgets;			/* GETs without a CQE yet */
	struct dlcache_cqe *kcqes;
	uint8_t *ksize_logged;		/* a bit per sample: wrong size logged */
	/*
	 * Read-ahead on the module (DLCACHE_FEAT_GET_AHEAD): look-ups ahead
	 * without a CQE yet, and the virtual positions they found missing,
	 * waiting for reader room (a ring of queue_depth).
	 */
	int k_ahead;
	/* Another job's consumer shares the data set, as of k_others_ns. */
	int k_others;
	uint64_t k_others_ns;
	uint32_t kprobes;
	uint64_t *kahead;
	uint32_t kahead_head, kahead_len;
	uint32_t kfallback;		/* enum dlc_kernel_fallback, after env */
	/*
	 * I/O thread: a failure of the kernel backend to fall back from at
	 * the next safe point (ktier_switch()), and what failed.
	 */
	int kerr;
	const char *kwhat;
};

/*
 * Open the backend the config (or DLCACHE_BACKEND) asks for: dlcache.ko
 * when asked and usable (l->kt.kc set, l->backend DLC_BACKEND_KERNEL),
 * else the in-process cache. 0, or -errno when the kernel backend was
 * asked for and cannot be had. ktier_close() undoes it, and anything
 * half done.
 */
int ktier_open(struct dlc_loader *l);
void ktier_close(struct dlc_loader *l);
/* Upload the orders of @epoch and the next, unless done. */
void ktier_prepare_epoch(struct dlc_loader *l, uint32_t epoch);
/* Every rank's positions of @epoch into l->kt.gorder. 0 or -errno. */
int ktier_fill_global(struct dlc_loader *l, uint32_t epoch);
/*
 * One round with the module: claims and their GETs out, completions in,
 * misses to the reader. Returns whether anything happened.
 */
int ktier_round(struct dlc_loader *l, uint32_t epoch, char *path,
		size_t path_len);
/* Queue the positions waiting for reader room; whether any was queued. */
int ktier_read_queued(struct dlc_loader *l, char *path, size_t path_len);
/* Read-ahead through the module's look-ups; whether anything was issued. */
int ktier_read_ahead(struct dlc_loader *l, uint64_t my_gen, char *path,
		     size_t len);
/*
 * The module failed and kernel_fallback says go on (l->kt.kerr): let go
 * of it and continue on an in-process cache, at the end of a round.
 */
void ktier_switch(struct dlc_loader *l);
/*
 * Whether a GET may be re-issued for the @reported bytes the module says
 * it holds of sample @id: only the index's size for it, within
 * max_file_bytes and INT32_MAX.
 */
int ktier_reget_ok(const struct dlc_loader *l, uint32_t id, uint64_t reported);
/* Called with l->lock held: @pos needs no kernel state any more. */
void ktier_pos_done(struct dlc_loader *l, uint32_t pos);
/* A read for @pos ended: PUT @buf's bytes if we own the fill, or ABORT. */
void ktier_end_fill(struct dlc_loader *l, uint32_t pos, struct dlc_buf *buf);
/* Our fill of @id ended: PUT @buf's bytes, or ABORT (@buf NULL) with @tag. */
void ktier_fill_done(struct dlc_loader *l, uint32_t id, uint64_t tag,
		     struct dlc_buf *buf);
/* The use of @pos in @epoch, its bytes @buf read ahead (NULL: failed). */
void ktier_use(struct dlc_loader *l, uint32_t pos, uint32_t epoch,
	       struct dlc_buf *buf);
/* dlc_ra_retain_fills(): a read-ahead entry dropped ends its fill. */
void ktier_ahead_abort(void *arg, struct dlc_ra_entry *e);

#endif
