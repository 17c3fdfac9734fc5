// SPDX-License-Identifier: MIT
/*
 * The dlcache.ko tier: the cache in the kernel module, shared by every
 * process of the node (ktier.h). Moved out of loader.c, which is the
 * pipeline: what is here is the module's state machine, its per-position
 * state and its read-ahead by look-ups, over the pipeline steps of
 * loader_int.h.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kclient.h"
#include "loader_int.h"
#include "readahead.h"
#include "stage.h"

/*
 * Called with l->lock held: @pos no longer needs its kernel state (it is
 * queued for decode or dropped); move the span's low end past it.
 */
void ktier_pos_done(struct dlc_loader *l, uint32_t pos)
{
	uint32_t w = l->cfg.window;

	l->kt.kdone[pos % w] = 1;
	while (l->kt.klow < l->next_pos && l->kt.kdone[l->kt.klow % w]) {
		l->kt.kdone[l->kt.klow % w] = 0;
		l->kt.klow++;
	}
}


/* ------------------------------------------------------------------ */
/* Kernel backend: the cache in dlcache.ko, shared by the whole node   */
/*                                                                     */
/* Per claimed sample the I/O thread puts a GET on the module's ring,  */
/* at the sample's exact position in the global order (F_AT). A hit   */
/* is decoded; a miss that makes us the filler is read with io_uring   */
/* and PUT back, or ABORTed if the read fails, so that other processes */
/* waiting for it go on; a miss without the fill is just read. GETs    */
/* parked on another process's fill complete later: the module's fd is */
/* watched from the reader's io_uring so that the thread wakes.        */
/* ------------------------------------------------------------------ */

/* KTAG_AHEAD: a look-up ahead, (virtual position << 2) | 0. */
enum { KTAG_AHEAD = 0, KTAG_GET = 1, KTAG_PUT = 2, KTAG_ABORT = 3 };
/*
 * With KTAG_ABORT: ktier_use()'s GET, whose completion matters only when
 * it took a fill (F_FILL, which no ABORT's completion has) and no PUT of
 * ours followed it (KTAG_USE_PUT). Its position is below 2^32.
 */
#define KTAG_USE	(1ULL << 63)
#define KTAG_USE_PUT	(1ULL << 62)
#define KTAG(ud)	((ud) & 3)

/* Every rank's positions: global position g holds perm[g % n]. */
int ktier_fill_global(struct dlc_loader *l, uint32_t epoch)
{
	struct dlc_order_params p = {
		.seed = l->cfg.seed, .epoch = epoch, .world = 1,
		.shuffle = l->cfg.shuffle,
	};
	uint32_t g;
	int ret = dlc_order_fill(l->n, &p, l->kt.gorder, l->n);

	for (g = l->n; !ret && g < l->kt.glen; g++)
		l->kt.gorder[g] = l->kt.gorder[g % l->n];
	return ret;
}

/*
 * Upload @epoch and @epoch + 1, unless done. With a time line of its own
 * (k_own_line: each rank of each job is a consumer, ktier_job()) a rank
 * uploads its own order, and the module ranks a sample by its soonest
 * use over every rank of every job, each at its own measured pace: ranks
 * that drift apart lose nothing. On the shared line (a module without
 * consumers, or no room for one) the ranks upload the global order;
 * another rank may have been first, and the module then refuses the same
 * epoch (-EINVAL), which is fine since every rank computes the same one.
 * There, another job's order is unknown to the module.
 */
void ktier_prepare_epoch(struct dlc_loader *l, uint32_t epoch)
{
	uint32_t e, len;
	int ret;

	for (e = epoch; e <= epoch + 1; e++) {
		if ((int64_t)e <= l->kt.k_last_epoch)
			continue;
		len = l->kt.k_own_line ? l->epoch_len : l->kt.glen;
		ret = l->kt.k_own_line ? loader_fill_order(l, e, l->kt.gorder, len) :
				      ktier_fill_global(l, e);
		if (!ret)
			ret = dlc_kclient_set_order(l->kt.kc, e, l->kt.gorder, len);
		if (ret && ret != -EINVAL && ret != -EACCES)
			dlc_logf(&l->log, DLC_LOG_WARN,
				 "dlcache.ko: cannot upload the order of epoch %u: %s; eviction falls back to no known next use",
				 e, strerror(-ret));
		l->kt.k_last_epoch = e;
	}
}

/*
 * The kernel backend failed. DLC_KERNEL_FALLBACK_INPROCESS: note it; no
 * SQE is made from now on, and ktier_switch() moves to the in-process
 * cache at the end of the round. DLC_KERNEL_FALLBACK_FAIL: fail the
 * epoch.
 */
static void ktier_fail(struct dlc_loader *l, int err, const char *what)
{
	if (l->kt.kfallback == DLC_KERNEL_FALLBACK_INPROCESS) {
		if (!l->kt.kerr) {
			l->kt.kerr = err;
			l->kt.kwhat = what;
		}
		return;
	}
	dlc_logf(&l->log, DLC_LOG_ERROR,
		 "dlcache.ko: %s failed: %s (kernel_fallback is fail)", what,
		 strerror(-err));
	pthread_mutex_lock(&l->lock);
	if (!l->failed)
		l->failed = err;
	pthread_cond_broadcast(&l->ready_cv);
	pthread_mutex_unlock(&l->lock);
}

/* Get an SQE, entering to make room if the SQ is full. */
static struct dlcache_sqe *ktier_sqe(struct dlc_loader *l)
{
	struct dlcache_sqe *sqe;
	int ret;

	if (l->kt.kerr)
		return NULL;
	sqe = dlc_kclient_sqe(l->kt.kc);
	if (sqe)
		return sqe;
	ret = dlc_kclient_enter(l->kt.kc);
	if (ret < 0) {
		ktier_fail(l, ret, "ENTER");
		return NULL;
	}
	return dlc_kclient_sqe(l->kt.kc);
}

/* F_AT: the use is at @pos of @epoch, on our own time line or the shared one. */
static void ktier_at(const struct dlc_loader *l, struct dlcache_sqe *sqe,
		      uint32_t pos, uint32_t epoch)
{
	sqe->flags = DLCACHE_SQE_F_AT;
	sqe->epoch = epoch;
	sqe->index = l->kt.k_own_line ? pos : l->cfg.rank + pos * l->cfg.world;
}

static void ktier_get(struct dlc_loader *l, uint32_t pos, uint32_t epoch,
		       uint64_t size, int at)
{
	uint32_t slot = pos % l->cfg.window;
	struct dlcache_sqe *sqe;
	/* A GET's length and result are 32-bit: larger samples are read. */
	struct dlc_buf *b = size <= INT32_MAX ? dlc_buf_alloc_io(size, 0) : NULL;

	sqe = b ? ktier_sqe(l) : NULL;
	if (!sqe) {
		/* No room or no memory: read it without the cache. */
		dlc_buf_put(b);
		l->kt.kread[(l->kt.kread_head + l->kt.kread_len++) % l->cfg.window] = pos;
		return;
	}
	l->kt.kbuf[slot] = b;
	l->kt.kfill[slot] = 0;
	sqe->opcode = DLCACHE_OP_GET;
	sqe->handle = dlc_kclient_handle(l->kt.kc);
	sqe->sample = l->order[pos];
	sqe->len = (uint32_t)size;
	sqe->addr = (uint64_t)(uintptr_t)b->data;
	sqe->user_data = ((uint64_t)pos << 2) | KTAG_GET;
	if (at)
		ktier_at(l, sqe, pos, epoch);
	l->kt.kgets++;
}

/*
 * Whether a GET may be re-issued for the @reported bytes the module says
 * it holds of sample @id (its -EMSGSIZE: more than the buffer the index's
 * size made): only for the size the index records, within max_file_bytes
 * and a GET's 32 bits. The module's word is not the file's; without a
 * CRC in the index nothing else would stop a buffer of up to 2 GiB per
 * window slot for one sample. 1 when it may, 0 when the file is read.
 */
int ktier_reget_ok(const struct dlc_loader *l, uint32_t id, uint64_t reported)
{
	uint64_t size;

	if (dlc_index_sample_size(l->idx, id, &size) || reported != size)
		return 0;
	if (l->cfg.max_file_bytes && reported > l->cfg.max_file_bytes)
		return 0;
	return reported <= INT32_MAX;
}

/*
 * The use of @pos in @epoch, whose bytes @buf (NULL: the read failed) were
 * read ahead: what a claim's GET and a miss's PUT would have told the
 * module. A GET F_AT that copies nothing moves the policy's cursor past
 * the use, then a PUT offers the bytes for the sample's next use, as
 * after any miss (a PUT before the use would be weighed for this very
 * use, which the read-ahead serves already, and evict for nothing). The
 * PUT ends the fill the GET may take; without bytes, that fill is handed
 * back at the GET's completion.
 */
void ktier_use(struct dlc_loader *l, uint32_t pos, uint32_t epoch,
		       struct dlc_buf *buf)
{
	uint32_t id = l->order[pos];
	struct dlcache_sqe *sqe;

	if (!l->kt.kc || !dlc_kclient_may_write(l->kt.kc))
		return;
	/* Under verify=all no bytes the index denies go to the module. */
	if (buf && (!buf->len || buf->len > INT32_MAX ||
		    (l->verify == DLC_VERIFY_ALL &&
		     !loader_sample_ok(l, id, buf->data, buf->len, NULL))))
		buf = NULL;
	sqe = ktier_sqe(l);
	if (!sqe)
		return;
	sqe->opcode = DLCACHE_OP_GET;
	sqe->handle = dlc_kclient_handle(l->kt.kc);
	sqe->sample = id;
	sqe->user_data = KTAG_USE | (buf ? KTAG_USE_PUT : 0) |
			 ((uint64_t)pos << 2) | KTAG_ABORT;
	ktier_at(l, sqe, pos, epoch);
	if (buf)
		ktier_fill_done(l, id, pos, buf);
}

/*
 * Our fill of sample @id ended: PUT @buf's bytes, or ABORT (no bytes: the
 * read failed) with @tag, so that other processes waiting for it go on.
 */
void ktier_fill_done(struct dlc_loader *l, uint32_t id, uint64_t tag,
			     struct dlc_buf *buf)
{
	struct dlcache_sqe *sqe = ktier_sqe(l);

	if (!sqe)
		return;
	sqe->handle = dlc_kclient_handle(l->kt.kc);
	sqe->sample = id;
	if (buf && buf->len && buf->len <= INT32_MAX) {
		sqe->opcode = DLCACHE_OP_PUT;
		sqe->len = (uint32_t)buf->len;
		sqe->addr = (uint64_t)(uintptr_t)buf->data;
		/* The bytes must live until the module has copied them. */
		sqe->user_data = (uint64_t)(uintptr_t)dlc_buf_get(buf) | KTAG_PUT;
	} else {
		/* Hand the fill to a waiter: it reads and reports for itself. */
		sqe->opcode = DLCACHE_OP_ABORT;
		sqe->user_data = (tag << 2) | KTAG_ABORT;
	}
}

/* A read for @pos ended: PUT the bytes if we own the fill, or ABORT. */
void ktier_end_fill(struct dlc_loader *l, uint32_t pos,
			    struct dlc_buf *buf)
{
	uint32_t slot = pos % l->cfg.window;

	if (!l->kt.kfill[slot])
		return;
	l->kt.kfill[slot] = 0;
	ktier_fill_done(l, l->order[pos], pos, buf);
}

static void ktier_ahead_done(struct dlc_loader *l,
			      const struct dlcache_cqe *c);
static void ktier_ahead_switch(struct dlc_loader *l);

/* dlc_ra_retain_fills(): a READY entry dropped ends its fill (ABORT). */
void ktier_ahead_abort(void *arg, struct dlc_ra_entry *e)
{
	struct dlc_loader *l = arg;

	ktier_fill_done(l, e->id, e->g, NULL);
}

static void ktier_completion(struct dlc_loader *l, const struct dlcache_cqe *c,
			      uint32_t epoch)
{
	uint32_t pos = (uint32_t)(c->user_data >> 2), slot;
	struct dlc_buf *b;
	struct item it;

	if (KTAG(c->user_data) == KTAG_PUT) {
		dlc_buf_put((struct dlc_buf *)(uintptr_t)(c->user_data & ~3ULL));
		return;
	}
	if (KTAG(c->user_data) == KTAG_AHEAD) {
		ktier_ahead_done(l, c);
		return;
	}
	if (c->user_data & KTAG_USE) {
		/* A use took the fill and we have no bytes: hand it back. */
		if (!(c->user_data & KTAG_USE_PUT) && c->res == -ENOENT &&
		    (c->flags & DLCACHE_CQE_F_FILL))
			ktier_fill_done(l, c->sample, pos, NULL);
		return;
	}
	if (KTAG(c->user_data) != KTAG_GET)
		return;
	slot = pos % l->cfg.window;
	b = l->kt.kbuf[slot];
	l->kt.kbuf[slot] = NULL;
	l->kt.kgets--;
	if (c->res >= 0 && b && (size_t)c->res <= b->len) {
		b->len = (size_t)c->res;
		/*
		 * Another process wrote these bytes: decode them only if they
		 * are the file the index describes, else read the file.
		 */
		if (l->verify != DLC_VERIFY_OFF &&
		    !loader_sample_ok(l, l->order[pos], b->data, b->len,
			       "the bytes dlcache.ko served fail the index's checksum")) {
			dlc_buf_put(b);
			l->kt.kfill[slot] = 0;
			l->kt.kread[(l->kt.kread_head + l->kt.kread_len++) % l->cfg.window] = pos;
			return;
		}
		dlc_stat_add(l->stats.hits, 1);
		dlc_stat_add(l->stats.hit_bytes, b->len);
		if (l->stage)
			dlc_stage_hit_above(l->stage, b->len);
		pthread_mutex_lock(&l->lock);
		ktier_pos_done(l, pos);
		if (l->active) {
			loader_item_at(l, pos, &it);
			it.buf = b;
			loader_push_item(l, &it);
		} else {
			loader_drop_sample(l, b);
		}
		pthread_mutex_unlock(&l->lock);
		return;
	}
	dlc_buf_put(b);
	if (c->res == -EMSGSIZE && c->size && l->verify != DLC_VERIFY_OFF &&
	    !loader_sample_ok(l, l->order[pos], NULL, c->size,
		       "the bytes dlcache.ko holds fail the index's checksum")) {
		/* Not the indexed size, so not the indexed bytes. */
		l->kt.kfill[slot] = 0;
		l->kt.kread[(l->kt.kread_head + l->kt.kread_len++) % l->cfg.window] = pos;
		return;
	}
	if (c->res == -EMSGSIZE && c->size &&
	    !ktier_reget_ok(l, l->order[pos], c->size)) {
		uint32_t id = l->order[pos];
		uint64_t size = 0;
		char path[4096];

		/* Not the indexed size (no CRC said so above): read the file. */
		if (!(l->kt.ksize_logged[id / 8] & (1U << (id % 8)))) {
			l->kt.ksize_logged[id / 8] |= (uint8_t)(1U << (id % 8));
			dlc_index_sample_size(l->idx, id, &size);
			dlc_source_name(l->src, id, path, sizeof(path));
			dlc_logf(&l->log, DLC_LOG_WARN,
				 "sample %u (%s): dlcache.ko holds %u bytes, the index says %llu; reading the file instead",
				 id, path, c->size, (unsigned long long)size);
		}
		l->kt.kfill[slot] = 0;
		l->kt.kread[(l->kt.kread_head + l->kt.kread_len++) % l->cfg.window] = pos;
		return;
	}
	if (c->res == -EMSGSIZE && c->size) {
		/* The indexed size, larger than a GET's first buffer: again. */
		ktier_get(l, pos, epoch, c->size, 0);
		return;
	}
	/*
	 * -EIO: another process's fill failed; -ETIMEDOUT: it outlived the
	 * module's fill lease (a stalled filler). Both are expected on a
	 * busy node: read the file, quietly.
	 */
	if (c->res != -ENOENT && c->res != -EIO && c->res != -ETIMEDOUT)
		dlc_logf(&l->log, DLC_LOG_WARN,
			 "dlcache.ko: GET of sample %u failed: %s; reading it directly",
			 l->order[pos], strerror(-c->res));
	l->kt.kfill[slot] = c->res == -ENOENT && (c->flags & DLCACHE_CQE_F_FILL);
	l->kt.kread[(l->kt.kread_head + l->kt.kread_len++) % l->cfg.window] = pos;
}

/*
 * Queue the positions waiting in kread (misses, GETs given up) to the
 * reader as far as it has room. Returns whether any was queued.
 */
int ktier_read_queued(struct dlc_loader *l, char *path,
			      size_t path_len)
{
	int progressed = 0, ret;

	while (l->kt.kread_len &&
	       dlc_reader_inflight(l->reader) < l->cfg.queue_depth) {
		uint32_t pos = l->kt.kread[l->kt.kread_head];

		l->kt.kread_head = (l->kt.kread_head + 1) % l->cfg.window;
		l->kt.kread_len--;
		ret = dlc_source_queue(l->src, l->reader, l->order[pos], pos,
				       path, path_len);
		if (ret) {
			struct dlc_read_done d = { .tag = pos, .err = ret,
						   .why = "queue" };

			loader_hand_over(l, &d, 1);
		}
		progressed = 1;
	}
	return progressed;
}

/* One round with the module: GETs out, completions in, misses to read. */
int ktier_round(struct dlc_loader *l, uint32_t epoch, char *path,
			size_t path_len)
{
	uint32_t n, i;
	int progressed = 0, ret;
	struct item it;
	uint64_t size;

	/*
	 * The module hung up (a drain): ENTER says why. An idle loader
	 * learns of it here, woken by the watch of the fd.
	 */
	if (dlc_reader_watch_events(l->reader) & (POLLHUP | POLLERR)) {
		ret = dlc_kclient_enter(l->kt.kc);
		if (ret < 0) {
			ktier_fail(l, ret, "ENTER");
			/* Falling back: switch now. Failing: nothing to do. */
			return l->kt.kerr != 0;
		}
	}
	pthread_mutex_lock(&l->lock);
	while (loader_issuable(l) && l->kt.kgets + l->kt.kread_len < l->cfg.window &&
	       dlc_kclient_unsubmitted(l->kt.kc) < l->cfg.window) {
		loader_claim_next(l, &it);
		pthread_mutex_unlock(&l->lock);
		progressed = 1;
		/* Read ahead (or being read): no GET, no fill of ours here. */
		l->kt.kfill[it.pos % l->cfg.window] = 0;
		if (loader_take_readahead(l, epoch, &it)) {
			pthread_mutex_lock(&l->lock);
			continue;
		}
		size = dlc_index_size(l->idx, it.sample);
		ktier_get(l, it.pos, epoch,
			   size < INT32_MAX ? size + 1 : UINT64_MAX, 1);
		pthread_mutex_lock(&l->lock);
	}
	pthread_mutex_unlock(&l->lock);

	if (dlc_kclient_unsubmitted(l->kt.kc) || dlc_kclient_pending(l->kt.kc)) {
		ret = dlc_kclient_enter(l->kt.kc);
		if (ret < 0) {
			ktier_fail(l, ret, "ENTER");
			return l->kt.kerr != 0;
		}
	}
	while ((n = dlc_kclient_reap(l->kt.kc, l->kt.kcqes, 64)) > 0) {
		for (i = 0; i < n; i++)
			ktier_completion(l, &l->kt.kcqes[i], epoch);
		progressed = 1;
	}
	if (ktier_read_queued(l, path, path_len))
		progressed = 1;
	if (progressed)
		dlc_reader_submit(l->reader);
	/* PUTs and ABORTs made by completions go out now. */
	if (!l->kt.kerr && dlc_kclient_unsubmitted(l->kt.kc)) {
		ret = dlc_kclient_enter(l->kt.kc);
		if (ret < 0)
			ktier_fail(l, ret, "ENTER");
	}
	return progressed;
}

/* Give back the buffer refs of the PUTs not yet consumed by the module. */
static void ktier_put_unsubmitted(struct dlc_loader *l)
{
	uint32_t i, n = dlc_kclient_unsubmitted(l->kt.kc);

	for (i = 0; i < n; i++) {
		const struct dlcache_sqe *sqe =
			dlc_kclient_unsubmitted_sqe(l->kt.kc, i);

		if (KTAG(sqe->user_data) == KTAG_PUT)
			dlc_buf_put((struct dlc_buf *)(uintptr_t)
				    (sqe->user_data & ~3ULL));
	}
}

/*
 * The kernel backend failed (l->kt.kerr) and kernel_fallback says go on:
 * take the completions the module posted, read directly every position
 * whose GET has no completion (parked, or never consumed) and every fill
 * we owned, close the module's fd and go on with an in-process cache.
 * I/O thread, at the end of a round: no SQE or CQE is being handled.
 */
void ktier_switch(struct dlc_loader *l)
{
	uint32_t w = l->cfg.window, n, i, pos, epoch, next;
	struct dlc_kclient *kc;
	int active, ret;

	dlc_logf(&l->log, DLC_LOG_WARN,
		 "dlcache.ko: %s failed: %s; continuing on the in-process cache (kernel_fallback)",
		 l->kt.kwhat, strerror(-l->kt.kerr));
	pthread_mutex_lock(&l->lock);
	epoch = l->epoch;
	active = l->active;
	pthread_mutex_unlock(&l->lock);
	/* Completions posted before the failure are good. */
	while ((n = dlc_kclient_reap(l->kt.kc, l->kt.kcqes, 64)) > 0)
		for (i = 0; i < n; i++)
			ktier_completion(l, &l->kt.kcqes[i], epoch);
	ktier_put_unsubmitted(l);
	ktier_ahead_switch(l);
	/* Every GET without a completion: its bytes come from the file. */
	pthread_mutex_lock(&l->lock);
	next = l->next_pos;
	pthread_mutex_unlock(&l->lock);
	for (pos = l->kt.klow; pos != next; pos++) {
		i = pos % w;
		l->kt.kfill[i] = 0;
		if (!l->kt.kbuf[i])
			continue;
		dlc_buf_put(l->kt.kbuf[i]);
		l->kt.kbuf[i] = NULL;
		l->kt.kgets--;
		l->kt.kread[(l->kt.kread_head + l->kt.kread_len++) % w] = pos;
	}
	/* Let go of the module: nothing of ours holds its file after this. */
	dlc_reader_unwatch(l->reader);
	pthread_mutex_lock(&l->lock);
	kc = l->kt.kc;
	l->kt.kc = NULL;
	__atomic_store_n(&l->backend, DLC_BACKEND_INPROCESS, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&l->lock);
	dlc_kclient_close(kc);
	l->kt.kerr = 0;
	dlc_stat_add(l->stats.kernel_fallbacks, 1);
	__atomic_store_n(&l->stats.cache_capacity, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&l->stats.cache_used, 0, __ATOMIC_RELAXED);
	if (!l->cfg.cache_bytes)
		return;
	ret = dlc_cache_create(l->n, l->epoch_len, l->cfg.cache_bytes,
			       &l->cache);
	if (!ret && active)
		ret = dlc_cache_prepare_epoch(l->cache, epoch, loader_fill_order, l);
	if (ret) {
		dlc_logf(&l->log, DLC_LOG_WARN,
			 "in-process cache over %u samples (%u a rank): %s; going on without a cache",
			 l->n, l->epoch_len, strerror(-ret));
		dlc_cache_destroy(l->cache);
		l->cache = NULL;
		return;
	}
	__atomic_store_n(&l->stats.cache_capacity, l->cfg.cache_bytes,
			 __ATOMIC_RELAXED);
}

/*
 * Read-ahead on dlcache.ko. A GET is the use of a sample and the claim of
 * its fill at once, so the read-ahead asks the module first with a look-up
 * that is neither (GET with DLCACHE_SQE_F_AHEAD, which also never fills): a
 * sample the module holds is left to the claim's GET, a miss is read into
 * the table. A claim that finds its position there decodes those bytes,
 * and tells the module what a GET and a miss's PUT would have: the use,
 * then the bytes for the next use (ktier_use()).
 */

/* Queue a read-ahead read of entry @g, which the module does not hold. */
static int ktier_ahead_read(struct dlc_loader *l, uint64_t g, char *path,
			     size_t len)
{
	struct dlc_ra_entry *e = dlc_ra_at(l->ra, g);
	struct dlc_read_done d = { .tag = DLC_RA_TAG(g), .why = "queue" };

	if (e->abandoned) {
		if (e->fill)
			ktier_fill_done(l, e->id, g, NULL);
		dlc_ra_release(e);
		return 0;
	}
	dlc_ra_reading(l->ra, e);
	d.err = dlc_source_queue(l->src, l->reader, e->id, DLC_RA_TAG(g), path,
				 len);
	if (d.err)
		loader_readahead_done(l, &d);
	return 1;
}

/*
 * A look-up ahead completed. The module holds the sample (res, its size),
 * or an earlier use of it comes first (F_SOONER: another rank or job, or
 * this rank's own earlier position, will read and PUT it): nothing to
 * read; a claim already made of its position GETs it now. Otherwise (a
 * miss, as the filler when F_FILL says so, or a fill of another session's
 * that failed or outlived its lease) the sample is read, once the reader
 * has room.
 */
static void ktier_ahead_done(struct dlc_loader *l, const struct dlcache_cqe *c)
{
	uint64_t g = c->user_data >> 2;
	struct dlc_ra_entry *e;
	uint32_t pos, epoch;
	int fill = c->res == -ENOENT && (c->flags & DLCACHE_CQE_F_FILL);

	/* Only our own look-ups carry this tag: anything else is ignored. */
	if (!l->ra || !l->kt.kprobes)
		return;
	e = dlc_ra_at(l->ra, g);
	if (e->state != DLC_RA_IN_FLIGHT || !e->probing || e->g != g)
		return;
	l->kt.kprobes--;
	e->probing = 0;
	if (e->abandoned) {
		if (fill)
			ktier_fill_done(l, e->id, g, NULL);
		dlc_ra_release(e);
		return;
	}
	if (c->res >= 0 ||
	    (c->res == -ENOENT && (c->flags & DLCACHE_CQE_F_SOONER))) {
		uint64_t size;

		if (!e->claimed) {
			dlc_ra_cancel(l->ra, e);
			return;
		}
		pos = e->pos;
		epoch = (uint32_t)(g / l->epoch_len);
		size = dlc_index_size(l->idx, e->id);
		dlc_ra_cancel(l->ra, e);
		ktier_get(l, pos, epoch, size < INT32_MAX ? size + 1 : UINT64_MAX,
			   1);
		return;
	}
	/* Our fill, when taken: PUT after the use (ktier_use()), or ABORT. */
	e->fill = fill;
	l->kt.kahead[(l->kt.kahead_head + l->kt.kahead_len++) % l->cfg.queue_depth] = g;
}

/*
 * Whether another job shares the data set (STATS, at most once a second).
 * Then the module's guess of which job reads a sample first rests on two
 * paces, and the two-jobs integration run read 1.09x the optimum's bytes
 * with look-ups ahead against 1.04x without: no new look-ups then, the
 * window's claims alone, as before.
 */
static int ktier_others(struct dlc_loader *l)
{
	struct dlcache_stats st;
	uint64_t now = dlc_now_ns();

	if (l->kt.k_others_ns && now - l->kt.k_others_ns < 1000000000ULL)
		return l->kt.k_others;
	l->kt.k_others_ns = now;
	/* Each rank of this job is a consumer of its own (ktier_job()). */
	l->kt.k_others = !dlc_kclient_stats(l->kt.kc, &st) &&
		      st.ds_consumers > (l->kt.k_own_line ? l->cfg.world : 0);
	return l->kt.k_others;
}

/*
 * Read-ahead with dlcache.ko: first the misses the look-ups found, as far
 * as the reader has room, then more look-ups, within the budget, at most
 * queue_depth of them and their misses waiting. Returns whether it did
 * anything.
 *
 * New look-ups only while storage may be what the pipeline waits for:
 * decode is not behind (the controller's test: no more samples queued
 * than decoders) and the consumer is not (its last batch was not ready
 * when it asked). A look-up's answer is as good as the module's guess of
 * who uses the sample first, and the further ahead the worse; when decode
 * or the consumer sets the pace, the window's claims keep storage busy.
 */
int ktier_read_ahead(struct dlc_loader *l, uint64_t my_gen, char *path,
			     size_t len)
{
	uint32_t qd = l->cfg.queue_depth;
	struct dlcache_sqe *sqe;
	struct dlc_ra_entry *e;
	uint64_t g, bytes;
	int issued = 0, ret, behind;
	uint32_t id;

	while (l->kt.kahead_len && dlc_reader_inflight(l->reader) < qd) {
		g = l->kt.kahead[l->kt.kahead_head];
		l->kt.kahead_head = (l->kt.kahead_head + 1) % qd;
		l->kt.kahead_len--;
		issued |= ktier_ahead_read(l, g, path, len);
	}
	pthread_mutex_lock(&l->lock);
	behind = l->qlen > l->ndecode || !l->consumer_waited;
	pthread_mutex_unlock(&l->lock);
	behind |= ktier_others(l);
	while (!behind && l->kt.kprobes + l->kt.kahead_len < qd &&
	       dlc_kclient_unsubmitted(l->kt.kc) < l->cfg.window &&
	       !loader_readahead_pick(l, my_gen, &g, &id, &bytes)) {
		sqe = ktier_sqe(l);
		if (!sqe)
			break;
		e = dlc_ra_at(l->ra, g);
		dlc_ra_begin(l->ra, e, g, id, bytes);
		e->probing = 1;
		sqe->opcode = DLCACHE_OP_GET;
		sqe->handle = dlc_kclient_handle(l->kt.kc);
		sqe->sample = id;
		sqe->user_data = (g << 2) | KTAG_AHEAD;
		/* For the use at g: the module says if an earlier one comes. */
		ktier_at(l, sqe, (uint32_t)(g % l->epoch_len),
			  (uint32_t)(g / l->epoch_len));
		sqe->flags |= DLCACHE_SQE_F_AHEAD;
		l->kt.kprobes++;
		l->ra_g = g + 1;
		issued = 1;
	}
	if (issued && dlc_kclient_unsubmitted(l->kt.kc)) {
		ret = dlc_kclient_enter(l->kt.kc);
		if (ret < 0)
			ktier_fail(l, ret, "ENTER");
	}
	if (issued)
		loader_publish_readahead(l);
	return issued;
}

/*
 * ktier_switch(): the module's fd is going, and with it every look-up
 * still out. A claimed position waiting on one (or on reader room after
 * it) is read from its file; the rest of those entries are dropped. Reads
 * in flight go on (their entries keep the bytes).
 */
static void ktier_ahead_forget(struct dlc_loader *l, struct dlc_ra_entry *e)
{
	uint32_t w = l->cfg.window;

	if (e->claimed)
		l->kt.kread[(l->kt.kread_head + l->kt.kread_len++) % w] = e->pos;
	dlc_ra_cancel(l->ra, e);
}

static void ktier_ahead_switch(struct dlc_loader *l)
{
	struct dlc_ra_entry *e;
	uint32_t i;

	if (!l->ra)
		return;
	for (; l->kt.kahead_len; l->kt.kahead_len--) {
		e = dlc_ra_at(l->ra, l->kt.kahead[l->kt.kahead_head]);
		l->kt.kahead_head = (l->kt.kahead_head + 1) % l->cfg.queue_depth;
		ktier_ahead_forget(l, e);
	}
	for (i = 0; i < dlc_ra_slots(l->ra); i++) {
		e = dlc_ra_slot(l->ra, i);
		e->fill = 0;	/* the fills end with the session */
		if (e->state == DLC_RA_IN_FLIGHT && e->probing)
			ktier_ahead_forget(l, e);
	}
	l->kt.kprobes = 0;
	loader_publish_readahead(l);
}

/*
 * Positions a new data set's time lines hold: the rest of one epoch and
 * the next two, of the global order (the shared line, as a module
 * without consumers has). A rank's own line needs a world-th of it.
 */
static uint32_t ktier_window(const struct dlc_loader *l)
{
	return 3 * l->kt.glen;
}

/* 64-bit FNV-1a of @s, never 0 (0 means "no job" to the module). */
static uint64_t job_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ULL;
	return h ? h : 1;
}

/*
 * The job key: the ranks of one job name the same consumer in
 * dlcache.ko (one time line, cursor at the slowest rank), two jobs two.
 * DLCACHE_JOB names it ("none": the data set's shared time line, as
 * under ABI 2). Else it is derived from what the ranks of one job share
 * and two jobs do not: the order (seed, world, shard sizes), the
 * launcher's job id when there is one, and for a single process its pid.
 */
static uint64_t ktier_job(const struct dlc_loader *l)
{
	static const char *const ids[] = {
		"TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "SLURM_STEP_ID",
		"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "MASTER_ADDR",
		"MASTER_PORT",
	};
	static unsigned int instances;
	const char *env = getenv("DLCACHE_JOB");
	char buf[512];
	size_t i, len;

	if (env && !strcmp(env, "none"))
		return 0;
	if (env && *env)
		return job_hash(env);
	len = (size_t)snprintf(buf, sizeof(buf), "%llu/%u/%u/%u/%u",
			       (unsigned long long)l->cfg.seed, l->cfg.world,
			       l->n, l->epoch_len, l->cfg.shuffle);
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]) && len < sizeof(buf); i++) {
		env = getenv(ids[i]);
		if (env)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len,
						"/%s=%s", ids[i], env);
	}
	/* One process is a job of its own: two of them never share. */
	if (l->cfg.world == 1 && len < sizeof(buf))
		len += (size_t)snprintf(buf + len, sizeof(buf) - len,
					"/pid=%ld/%u", (long)getpid(),
					__atomic_fetch_add(&instances, 1,
							   __ATOMIC_RELAXED));
	/* Each rank is a consumer of its own (ktier_prepare_epoch()). */
	if (len < sizeof(buf))
		snprintf(buf + len, sizeof(buf) - len, "/rank=%u", l->cfg.rank);
	return job_hash(buf);
}

/* DLCACHE_OWNER_UID over cfg.kernel_owner_uid: a uid, or "self". */
static int ktier_owner(struct dlc_loader *l, uint32_t *owner)
{
	const char *env = getenv("DLCACHE_OWNER_UID");
	unsigned long long v;
	char *end;

	*owner = l->cfg.kernel_owner_uid;
	if (!env || !*env)
		return 0;
	if (!strcmp(env, "self")) {
		*owner = DLC_OWNER_SELF;
		return 0;
	}
	errno = 0;
	v = strtoull(env, &end, 10);
	if (*env < '0' || *env > '9' || *end || errno || v >= UINT32_MAX) {
		dlc_logf(&l->log, DLC_LOG_ERROR,
			 "invalid DLCACHE_OWNER_UID '%s': want a uid or self", env);
		return -EINVAL;
	}
	*owner = (uint32_t)v;
	return 0;
}

/*
 * Choose the cache: the module's when asked for or, for AUTO, when
 * /dev/dlcache can be used; else the in-process one, saying why.
 */
int ktier_open(struct dlc_loader *l)
{
	const char *env = getenv("DLCACHE_BACKEND"), *dev, *why = NULL;
	uint32_t want = l->cfg.backend, i, owner;
	uint64_t key[2];
	int ret;

	if (env && *env) {
		for (i = 0; i <= DLC_BACKEND_KERNEL; i++)
			if (!strcmp(env, dlc_backend_name(i)))
				break;
		if (i > DLC_BACKEND_KERNEL) {
			dlc_logf(&l->log, DLC_LOG_ERROR,
				 "invalid DLCACHE_BACKEND '%s': want auto, inprocess or kernel",
				 env);
			return -EINVAL;
		}
		want = i;
	}
	l->backend = DLC_BACKEND_INPROCESS;
	if (want == DLC_BACKEND_INPROCESS)
		return 0;
	ret = ktier_owner(l, &owner);
	if (ret)
		return ret;

	dev = getenv("DLCACHE_DEVICE");
	if (!dev || !*dev)
		dev = "/dev/dlcache";
	dlc_index_key(l->idx, key);
	l->kt.glen = l->epoch_len * l->cfg.world;
	if (dlc_kclient_attach_flags(owner, (uint32_t)geteuid()))
		dlc_logf(&l->log, DLC_LOG_WARN,
			 "%s: trusting the data set of owner uid %u (kernel_owner_uid or DLCACHE_OWNER_UID), not this user's own",
			 dev, owner);
	ret = dlc_kclient_open(dev, key, l->n, l->cfg.kernel_mode,
			       ktier_window(l), l->cfg.window * 2, owner,
			       ktier_job(l), &l->kt.kc, &why);
	if (ret) {
		l->kt.kc = NULL;
		/*
		 * auto without the module at all (no device node) is the
		 * embedded default, not a degradation: said at INFO. A module
		 * there but unusable (permissions, limits, a trusted owner's
		 * data set that is not there: -ENOENT too) is worth a warning.
		 */
		dlc_logf(&l->log, want == DLC_BACKEND_KERNEL ? DLC_LOG_ERROR :
			 ret == -ENOENT && access(dev, F_OK) && errno == ENOENT ?
			 DLC_LOG_INFO : DLC_LOG_WARN,
			 "%s: %s (%s); %s", dev, strerror(-ret),
			 why, want == DLC_BACKEND_KERNEL ?
			 "the kernel backend was asked for" :
			 "using the in-process cache");
		return want == DLC_BACKEND_KERNEL ? ret : 0;
	}
	if (!dlc_kclient_may_write(l->kt.kc))
		dlc_logf(&l->log, DLC_LOG_WARN,
			 "%s: read-only access to this data set: misses are read but not shared",
			 dev);
	else if (dlc_kclient_job_refused(l->kt.kc))
		dlc_logf(&l->log, DLC_LOG_WARN,
			 "%s: no time line of this rank's own (%s: the module's consumers or policy memory are used up); sharing the data set's, where other jobs' orders are unknown",
			 dev, strerror(-dlc_kclient_job_refused(l->kt.kc)));
	l->kt.k_own_line = dlc_kclient_joined(l->kt.kc);
	/* ktier_fill_global() writes every sample's place, even past a short glen */
	l->kt.gorder = malloc(sizeof(*l->kt.gorder) * (l->kt.glen > l->n ? l->kt.glen : l->n));
	l->kt.kbuf = calloc(l->cfg.window, sizeof(*l->kt.kbuf));
	l->kt.kfill = calloc(l->cfg.window, 1);
	l->kt.kdone = calloc(l->cfg.window, 1);
	l->kt.kread = calloc(l->cfg.window, sizeof(*l->kt.kread));
	l->kt.kcqes = calloc(64, sizeof(*l->kt.kcqes));
	l->kt.kahead = calloc(l->cfg.queue_depth, sizeof(*l->kt.kahead));
	l->kt.ksize_logged = calloc((size_t)l->n / 8 + 1, 1);
	if (!l->kt.gorder || !l->kt.kbuf || !l->kt.kfill || !l->kt.kdone || !l->kt.kread ||
	    !l->kt.kcqes || !l->kt.kahead || !l->kt.ksize_logged)
		return -ENOMEM;
	/* An older module has no look-up ahead: no read-ahead on it. */
	l->kt.k_ahead = dlc_kclient_has(l->kt.kc, DLCACHE_FEAT_GET_AHEAD);
	l->kt.k_last_epoch = -1;
	l->backend = DLC_BACKEND_KERNEL;
	l->stats.cache_capacity = dlc_kclient_capacity(l->kt.kc);
	return 0;
}

void ktier_close(struct dlc_loader *l)
{
	uint32_t i, n;

	if (l->kt.kc) {
		/*
		 * SQEs still queued: submit them (a PUT still caches its
		 * bytes, an ABORT hands its fill over). A PUT holds a buffer
		 * ref until its completion is reaped; give back the refs of
		 * any the module did not take.
		 */
		if (dlc_kclient_unsubmitted(l->kt.kc))
			dlc_kclient_enter(l->kt.kc);
		ktier_put_unsubmitted(l);
		/* PUTs already run in ENTER hold buffer refs until reaped. */
		while ((n = dlc_kclient_reap(l->kt.kc, l->kt.kcqes, 64)) > 0)
			for (i = 0; i < n; i++)
				if (KTAG(l->kt.kcqes[i].user_data) == KTAG_PUT)
					dlc_buf_put((struct dlc_buf *)(uintptr_t)
						    (l->kt.kcqes[i].user_data & ~3ULL));
		/* Closing hands our fills over and ends our parked GETs. */
		dlc_kclient_close(l->kt.kc);
		l->kt.kc = NULL;
	}
	if (l->kt.kbuf)
		for (i = 0; i < l->cfg.window; i++)
			dlc_buf_put(l->kt.kbuf[i]);
	free(l->kt.kbuf);
	free(l->kt.kfill);
	free(l->kt.kdone);
	free(l->kt.kread);
	free(l->kt.kcqes);
	free(l->kt.kahead);
	free(l->kt.ksize_logged);
	free(l->kt.gorder);
}
