// SPDX-License-Identifier: MIT
/*
 * The dlcache.ko tier: the cache in the kernel module, shared by every
 * process of the node (ktier.h), one of the pipeline's two cache tiers
 * (cachetier.h). What is here is the module's state machine, its
 * per-position state and its read-ahead by look-ups, over the pipeline
 * steps of loader_int.h. When the module fails and kernel_fallback says
 * go on, it lets go of the module and serves on through an in-process
 * cache tier of its own (ktier_switch()).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/types.h>
#include "../../uapi/dlcache.h"
#include "cachetier.h"
#include "forms.h"
#include "inproc.h"
#include "kclient.h"
#include "kforms.h"
#include "ktier.h"
#include "loader_int.h"
#include "readahead.h"

/*
 * The dlcache.ko tier's state: all of it the I/O thread's, but kc's STATS
 * (dlc_loader_stats()) and kc itself, which ktier_switch() closes under
 * the loader's lock. Per-position arrays are indexed by position modulo
 * the window.
 */
struct ktier {
	struct dlc_cache_tier tier;	/* first: its ops are ktier.c's */
	struct dlc_kclient *kc;		/* NULL after a fallback */
	/* The form set (forms on, kforms.c); closed at a fallback. */
	struct dlc_kforms *kf;
	/* After a fallback (kc NULL): the in-process cache served through. */
	struct dlc_inproc inproc;
	uint32_t *gorder;		/* every rank's order, for SET_ORDER */
	uint32_t glen;
	int64_t last_epoch;		/* newest epoch uploaded, -1: none */
	/*
	 * This rank has a time line of its own in dlcache.ko (a consumer,
	 * ABI 3): it uploads its own order and GETs at its own indexes. Else
	 * the ranks share the data set's line: the global order, F_AT at
	 * global indexes.
	 */
	int own_line;
	struct dlc_buf **get_buf;	/* per pos % window: a GET's buffer */
	uint8_t *fill;			/* per pos % window: we own its fill */
	uint8_t *done;			/* per pos % window: handed over */
	uint32_t low;			/* lowest position not handed over */
	uint32_t *rq;			/* misses waiting for reader room */
	uint32_t rq_head, rq_len;
	uint32_t gets;			/* GETs without a CQE yet */
	struct dlcache_cqe *cqes;
	uint8_t *size_logged;		/* a bit per sample: wrong size logged */
	/*
	 * Read-ahead on the module (DLCACHE_FEAT_GET_AHEAD): look-ups ahead
	 * without a CQE yet, and the virtual positions they found missing,
	 * waiting for reader room (aq, a ring of queue_depth).
	 */
	int has_ahead;
	/* Another job's consumer shares the data set, as of others_ns. */
	int others;
	uint64_t others_ns;
	uint32_t probes;
	uint64_t *aq;
	uint32_t aq_head, aq_len;
	/*
	 * A failure of the kernel backend to fall back from at the next
	 * safe point (ktier_switch()), and what failed.
	 */
	int err;
	const char *what;
};

static struct ktier *to_ktier(const struct dlc_cache_tier *t)
{
	return (struct ktier *)t;
}

static void ktier_fill_done(struct ktier *kt, uint32_t id, uint64_t tag,
			    struct dlc_buf *buf);

/*
 * Called with l->lock held: @pos no longer needs its kernel state (it is
 * queued for decode or dropped); move the span's low end past it.
 */
static void ktier_pos_done(struct ktier *kt, uint32_t pos)
{
	struct dlc_loader *l = kt->tier.l;
	uint32_t w = l->cfg.window;

	kt->done[pos % w] = 1;
	while (kt->low < l->next_pos && kt->done[kt->low % w]) {
		kt->done[kt->low % w] = 0;
		kt->low++;
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

/* The order of the whole job (world 1) of @epoch. */
static struct dlc_order_params ktier_global_params(const struct dlc_loader *l,
						   uint32_t epoch)
{
	struct dlc_order_params p = {
		.seed = l->cfg.seed, .epoch = epoch, .world = 1,
		.shuffle = l->cfg.shuffle,
	};

	return p;
}

/*
 * A resumed epoch's global positions (loader_int.h, rs_*): rank r's
 * position p is global position p * world + r, so the rest of the
 * epoch's permutation, perm[done + g % m], comes first, then the next
 * epoch's, as each rank's order has it.
 */
static int ktier_fill_global_rest(struct ktier *kt, uint32_t epoch)
{
	struct dlc_loader *l = kt->tier.l;
	struct dlc_order_params p = ktier_global_params(l, epoch);
	uint64_t done = __atomic_load_n(&l->rs_done, __ATOMIC_RELAXED);
	uint32_t rs_len = __atomic_load_n(&l->rs_len, __ATOMIC_RELAXED);
	uint32_t head = rs_len * l->cfg.world, m, *perm, g;
	int ret;

	if (head > kt->glen || (rs_len && done >= l->n))
		return -EINVAL;
	m = (uint32_t)(l->n - done);
	perm = malloc(sizeof(*perm) * l->n);
	if (!perm)
		return -ENOMEM;
	ret = dlc_order_fill(l->n, &p, perm, l->n);
	for (g = 0; !ret && g < head; g++)
		kt->gorder[g] = perm[done + g % m];
	p.epoch++;
	if (!ret)
		ret = dlc_order_fill(l->n, &p, perm, l->n);
	for (g = head; !ret && g < kt->glen; g++)
		kt->gorder[g] = perm[(g - head) % l->n];
	free(perm);
	return ret;
}

/* Every rank's positions: global position g holds perm[g % n]. */
static int ktier_fill_global(struct ktier *kt, uint32_t epoch)
{
	struct dlc_loader *l = kt->tier.l;
	struct dlc_order_params p = ktier_global_params(l, epoch);
	uint32_t rs = __atomic_load_n(&l->rs_epoch1, __ATOMIC_ACQUIRE);
	uint32_t g;
	int ret;

	if (rs && rs - 1 == epoch)
		return ktier_fill_global_rest(kt, epoch);
	ret = dlc_order_fill(l->n, &p, kt->gorder, l->n);

	for (g = l->n; !ret && g < kt->glen; g++)
		kt->gorder[g] = kt->gorder[g % l->n];
	return ret;
}

/*
 * Upload @epoch and @epoch + 1, unless done. With a time line of its own
 * (own_line: each rank of each job is a consumer, ktier_job()) a rank
 * uploads its own order, and the module ranks a sample by its soonest
 * use over every rank of every job, each at its own measured pace: ranks
 * that drift apart lose nothing. On the shared line (a module without
 * consumers, or no room for one) the ranks upload the global order;
 * another rank may have been first, and the module then refuses the same
 * epoch (-EINVAL), which is fine since every rank computes the same one.
 * There, another job's order is unknown to the module.
 */
static void ktier_prepare_epoch(struct ktier *kt, uint32_t epoch)
{
	struct dlc_loader *l = kt->tier.l;
	uint32_t e, len;
	int ret;

	for (e = epoch; e <= epoch + 1; e++) {
		if ((int64_t)e <= kt->last_epoch)
			continue;
		/* Past the job's last known epoch (cfg.epochs): no use. */
		if (l->cfg.epochs && e >= l->cfg.epochs && e > epoch)
			break;
		len = kt->own_line ? l->epoch_len : kt->glen;
		ret = kt->own_line ? loader_fill_order(l, e, kt->gorder, len) :
				      ktier_fill_global(kt, e);
		/* The form set's time line is the encoded set's. */
		if (!ret && kt->kf)
			dlc_kforms_set_order(kt->kf, e, kt->gorder, len);
		if (!ret)
			ret = dlc_kclient_set_order(kt->kc, e, kt->gorder, len);
		if (ret && ret != -EINVAL && ret != -EACCES)
			dlc_logf(&l->log, DLC_LOG_WARN,
				 "dlcache.ko: cannot upload the order of epoch %u: %s; eviction falls back to no known next use",
				 e, strerror(-ret));
		kt->last_epoch = e;
	}
}

/*
 * The kernel backend failed. DLC_KERNEL_FALLBACK_INPROCESS: note it; no
 * SQE is made from now on, and ktier_switch() moves to the in-process
 * cache at the end of the round. DLC_KERNEL_FALLBACK_FAIL: fail the
 * epoch.
 */
static void ktier_fail(struct ktier *kt, int err, const char *what)
{
	struct dlc_loader *l = kt->tier.l;
	if (l->kernel_fallback == DLC_KERNEL_FALLBACK_INPROCESS) {
		if (!kt->err) {
			kt->err = err;
			kt->what = what;
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
static struct dlcache_sqe *ktier_sqe(struct ktier *kt)
{
	struct dlcache_sqe *sqe;
	int ret;

	if (kt->err)
		return NULL;
	sqe = dlc_kclient_sqe(kt->kc);
	if (sqe)
		return sqe;
	ret = dlc_kclient_enter(kt->kc);
	if (ret < 0) {
		ktier_fail(kt, ret, "ENTER");
		return NULL;
	}
	return dlc_kclient_sqe(kt->kc);
}

/* The time line's index of our position @pos: our own line's, or the shared one's. */
static uint32_t ktier_index(const struct ktier *kt, uint32_t pos)
{
	const struct dlc_loader *l = kt->tier.l;

	return kt->own_line ? pos : l->cfg.rank + pos * l->cfg.world;
}

/* F_AT: the use is at @pos of @epoch, on our own time line or the shared one. */
static void ktier_at(const struct ktier *kt, struct dlcache_sqe *sqe,
		      uint32_t pos, uint32_t epoch)
{
	sqe->flags = DLCACHE_SQE_F_AT;
	sqe->epoch = epoch;
	sqe->index = ktier_index(kt, pos);
}

static void ktier_get(struct ktier *kt, uint32_t pos, uint32_t epoch,
		       uint64_t size, int at)
{
	struct dlc_loader *l = kt->tier.l;
	uint32_t slot = pos % l->cfg.window;
	struct dlcache_sqe *sqe;
	/* A GET's length and result are 32-bit: larger samples are read. */
	struct dlc_buf *b = size <= INT32_MAX ? dlc_buf_alloc_io(size, 0) : NULL;

	sqe = b ? ktier_sqe(kt) : NULL;
	if (!sqe) {
		/* No room or no memory: read it without the cache. */
		dlc_buf_put(b);
		kt->rq[(kt->rq_head + kt->rq_len++) % l->cfg.window] = pos;
		return;
	}
	kt->get_buf[slot] = b;
	kt->fill[slot] = 0;
	sqe->opcode = DLCACHE_OP_GET;
	sqe->handle = dlc_kclient_handle(kt->kc);
	sqe->sample = l->order[pos];
	sqe->len = (uint32_t)size;
	sqe->addr = (uint64_t)(uintptr_t)b->data;
	sqe->user_data = ((uint64_t)pos << 2) | KTAG_GET;
	if (at)
		ktier_at(kt, sqe, pos, epoch);
	kt->gets++;
}

/*
 * Whether a GET may be re-issued for the @reported bytes the module says
 * it holds of sample @id (its -EMSGSIZE: more than the buffer the index's
 * size made): only for the size the index records, within max_file_bytes
 * and a GET's 32 bits. The module's word is not the file's; without a
 * CRC in the index nothing else would stop a buffer of up to 2 GiB per
 * window slot for one sample. 1 when it may, 0 when the file is read.
 */
static int ktier_reget_ok(const struct ktier *kt, uint32_t id, uint64_t reported)
{
	const struct dlc_loader *l = kt->tier.l;
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
static void ktier_use(struct ktier *kt, uint32_t pos, uint32_t epoch,
		       struct dlc_buf *buf)
{
	struct dlc_loader *l = kt->tier.l;
	uint32_t id = l->order[pos];
	struct dlcache_sqe *sqe;

	if (!kt->kc || !dlc_kclient_may_write(kt->kc))
		return;
	/* Under verify=all no bytes the index denies go to the module. */
	if (buf && (!buf->len || buf->len > INT32_MAX ||
		    (l->verify == DLC_VERIFY_ALL &&
		     !loader_sample_ok(l, id, buf->data, buf->len, NULL))))
		buf = NULL;
	sqe = ktier_sqe(kt);
	if (!sqe)
		return;
	sqe->opcode = DLCACHE_OP_GET;
	sqe->handle = dlc_kclient_handle(kt->kc);
	sqe->sample = id;
	sqe->user_data = KTAG_USE | (buf ? KTAG_USE_PUT : 0) |
			 ((uint64_t)pos << 2) | KTAG_ABORT;
	ktier_at(kt, sqe, pos, epoch);
	if (buf)
		ktier_fill_done(kt, id, pos, buf);
}

/*
 * Our fill of sample @id ended: PUT @buf's bytes, or ABORT (no bytes: the
 * read failed) with @tag, so that other processes waiting for it go on.
 */
static void ktier_fill_done(struct ktier *kt, uint32_t id, uint64_t tag,
			     struct dlc_buf *buf)
{
	struct dlcache_sqe *sqe = ktier_sqe(kt);

	if (!sqe)
		return;
	sqe->handle = dlc_kclient_handle(kt->kc);
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
static void ktier_end_fill(struct ktier *kt, uint32_t pos,
			    struct dlc_buf *buf)
{
	struct dlc_loader *l = kt->tier.l;
	uint32_t slot = pos % l->cfg.window;

	if (!kt->fill[slot])
		return;
	kt->fill[slot] = 0;
	ktier_fill_done(kt, l->order[pos], pos, buf);
}

static void ktier_ahead_done(struct ktier *kt,
			      const struct dlcache_cqe *c);
static void ktier_ahead_switch(struct ktier *kt);


/*
 * A hit of sample @id, @b (its reference passed), for claimed @pos:
 * counted, and queued for decode, or dropped when the run has ended.
 */
static void ktier_serve(struct ktier *kt, uint32_t pos, uint32_t id,
			struct dlc_buf *b)
{
	struct dlc_loader *l = kt->tier.l;
	struct decode_item it;

	loader_count_hit(l, id, b);
	pthread_mutex_lock(&l->lock);
	ktier_pos_done(kt, pos);
	if (l->active) {
		loader_item_at(l, pos, &it);
		it.buf = b;
		loader_push_item(l, &it);
	} else {
		loader_drop_sample(l, b);
	}
	pthread_mutex_unlock(&l->lock);
}

static void ktier_completion(struct ktier *kt, const struct dlcache_cqe *c,
			      uint32_t epoch)
{
	struct dlc_loader *l = kt->tier.l;
	uint32_t pos = (uint32_t)(c->user_data >> 2), slot;
	struct dlc_buf *b;

	if (KTAG(c->user_data) == KTAG_PUT) {
		dlc_buf_put((struct dlc_buf *)(uintptr_t)(c->user_data & ~3ULL));
		return;
	}
	if (KTAG(c->user_data) == KTAG_AHEAD) {
		ktier_ahead_done(kt, c);
		return;
	}
	if (c->user_data & KTAG_USE) {
		/* A use took the fill and we have no bytes: hand it back. */
		if (!(c->user_data & KTAG_USE_PUT) && c->res == -ENOENT &&
		    (c->flags & DLCACHE_CQE_F_FILL))
			ktier_fill_done(kt, c->sample, pos, NULL);
		return;
	}
	if (KTAG(c->user_data) != KTAG_GET)
		return;
	slot = pos % l->cfg.window;
	b = kt->get_buf[slot];
	kt->get_buf[slot] = NULL;
	kt->gets--;
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
			kt->fill[slot] = 0;
			kt->rq[(kt->rq_head + kt->rq_len++) % l->cfg.window] = pos;
			return;
		}
		ktier_serve(kt, pos, l->order[pos], b);
		return;
	}
	dlc_buf_put(b);
	if (c->res == -EMSGSIZE && c->size && l->verify != DLC_VERIFY_OFF &&
	    !loader_sample_ok(l, l->order[pos], NULL, c->size,
		       "the bytes dlcache.ko holds fail the index's checksum")) {
		/* Not the indexed size, so not the indexed bytes. */
		kt->fill[slot] = 0;
		kt->rq[(kt->rq_head + kt->rq_len++) % l->cfg.window] = pos;
		return;
	}
	if (c->res == -EMSGSIZE && c->size &&
	    !ktier_reget_ok(kt, l->order[pos], c->size)) {
		uint32_t id = l->order[pos];
		uint64_t size = 0;
		char path[4096];

		/* Not the indexed size (no CRC said so above): read the file. */
		if (!(kt->size_logged[id / 8] & (1U << (id % 8)))) {
			kt->size_logged[id / 8] |= (uint8_t)(1U << (id % 8));
			dlc_index_sample_size(l->idx, id, &size);
			dlc_source_name(l->src, id, path, sizeof(path));
			dlc_logf(&l->log, DLC_LOG_WARN,
				 "sample %u (%s): dlcache.ko holds %u bytes, the index says %llu; reading the file instead",
				 id, path, c->size, (unsigned long long)size);
		}
		kt->fill[slot] = 0;
		kt->rq[(kt->rq_head + kt->rq_len++) % l->cfg.window] = pos;
		return;
	}
	if (c->res == -EMSGSIZE && c->size) {
		/* The indexed size, larger than a GET's first buffer: again. */
		ktier_get(kt, pos, epoch, c->size, 0);
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
	kt->fill[slot] = c->res == -ENOENT && (c->flags & DLCACHE_CQE_F_FILL);
	kt->rq[(kt->rq_head + kt->rq_len++) % l->cfg.window] = pos;
}

/*
 * Queue the positions waiting in kread (misses, GETs given up) to the
 * reader as far as it has room. Returns whether any was queued.
 */
static int ktier_read_queued(struct ktier *kt, char *path,
			      size_t path_len)
{
	struct dlc_loader *l = kt->tier.l;
	int progressed = 0, ret;

	while (kt->rq_len &&
	       dlc_reader_inflight(l->reader) < l->cfg.queue_depth) {
		uint32_t pos = kt->rq[kt->rq_head];

		kt->rq_head = (kt->rq_head + 1) % l->cfg.window;
		kt->rq_len--;
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

/*
 * The use of claimed @it in @epoch, served from its form in the module
 * when held (kforms.c): decoded from it, and the encoded set told of
 * the use as for bytes read ahead. Whether it was.
 */
static int ktier_form_hit(struct ktier *kt, const struct decode_item *it,
			  uint32_t epoch)
{
	struct dlc_buf *b = dlc_kforms_get(kt->kf, it->sample, epoch,
					   ktier_index(kt, it->pos));

	if (!b)
		return 0;
	ktier_use(kt, it->pos, epoch, NULL);
	ktier_serve(kt, it->pos, it->sample, b);
	return 1;
}

/* One round with the module: GETs out, completions in, misses to read. */
static int ktier_round(struct ktier *kt, uint32_t epoch, char *path,
			size_t path_len)
{
	struct dlc_loader *l = kt->tier.l;
	uint32_t n, i;
	int progressed = 0, ret;
	struct decode_item it;
	uint64_t size;

	/*
	 * The module hung up (a drain): ENTER says why. An idle loader
	 * learns of it here, woken by the watch of the fd.
	 */
	if (dlc_reader_watch_events(l->reader) & (POLLHUP | POLLERR)) {
		ret = dlc_kclient_enter(kt->kc);
		if (ret < 0) {
			ktier_fail(kt, ret, "ENTER");
			/* Falling back: switch now. Failing: nothing to do. */
			return kt->err != 0;
		}
	}
	/* Before the claims: a form made may be the next hit. */
	if (kt->kf)
		dlc_kforms_round(kt->kf, &l->lock);
	pthread_mutex_lock(&l->lock);
	while (loader_issuable(l) && kt->gets + kt->rq_len < l->cfg.window &&
	       dlc_kclient_unsubmitted(kt->kc) < l->cfg.window) {
		loader_claim_next(l, &it);
		pthread_mutex_unlock(&l->lock);
		progressed = 1;
		/* Read ahead (or being read): no GET, no fill of ours here. */
		kt->fill[it.pos % l->cfg.window] = 0;
		if (loader_take_readahead(l, epoch, &it)) {
			pthread_mutex_lock(&l->lock);
			continue;
		}
		if (kt->kf && ktier_form_hit(kt, &it, epoch)) {
			pthread_mutex_lock(&l->lock);
			continue;
		}
		size = dlc_index_size(l->idx, it.sample);
		ktier_get(kt, it.pos, epoch,
			   size < INT32_MAX ? size + 1 : UINT64_MAX, 1);
		pthread_mutex_lock(&l->lock);
	}
	pthread_mutex_unlock(&l->lock);

	if (dlc_kclient_unsubmitted(kt->kc) || dlc_kclient_pending(kt->kc)) {
		ret = dlc_kclient_enter(kt->kc);
		if (ret < 0) {
			ktier_fail(kt, ret, "ENTER");
			return kt->err != 0;
		}
	}
	while ((n = dlc_kclient_reap(kt->kc, kt->cqes, 64)) > 0) {
		for (i = 0; i < n; i++)
			ktier_completion(kt, &kt->cqes[i], epoch);
		progressed = 1;
	}
	if (ktier_read_queued(kt, path, path_len))
		progressed = 1;
	if (progressed)
		dlc_reader_submit(l->reader);
	/* PUTs and ABORTs made by completions go out now. */
	if (!kt->err && dlc_kclient_unsubmitted(kt->kc)) {
		ret = dlc_kclient_enter(kt->kc);
		if (ret < 0)
			ktier_fail(kt, ret, "ENTER");
	}
	return progressed;
}

/* Give back the buffer refs of the PUTs not yet consumed by the module. */
static void ktier_put_unsubmitted(struct ktier *kt)
{
	uint32_t i, n = dlc_kclient_unsubmitted(kt->kc);

	for (i = 0; i < n; i++) {
		const struct dlcache_sqe *sqe =
			dlc_kclient_unsubmitted_sqe(kt->kc, i);

		if (KTAG(sqe->user_data) == KTAG_PUT)
			dlc_buf_put((struct dlc_buf *)(uintptr_t)
				    (sqe->user_data & ~3ULL));
	}
}

/*
 * The kernel backend failed (kt->err) and kernel_fallback says go on:
 * take the completions the module posted, read directly every position
 * whose GET has no completion (parked, or never consumed) and every fill
 * we owned, close the module's fd and go on with an in-process cache.
 * I/O thread, at the end of a round: no SQE or CQE is being handled.
 */
static void ktier_switch(struct ktier *kt)
{
	struct dlc_loader *l = kt->tier.l;
	uint32_t w = l->cfg.window, n, i, pos, epoch, next;
	struct dlc_kclient *kc;
	int active, ret;

	dlc_logf(&l->log, DLC_LOG_WARN,
		 "dlcache.ko: %s failed: %s; continuing on the in-process cache (kernel_fallback)",
		 kt->what, strerror(-kt->err));
	pthread_mutex_lock(&l->lock);
	epoch = l->epoch;
	active = l->active;
	pthread_mutex_unlock(&l->lock);
	/* Completions posted before the failure are good. */
	while ((n = dlc_kclient_reap(kt->kc, kt->cqes, 64)) > 0)
		for (i = 0; i < n; i++)
			ktier_completion(kt, &kt->cqes[i], epoch);
	ktier_put_unsubmitted(kt);
	ktier_ahead_switch(kt);
	/* Every GET without a completion: its bytes come from the file. */
	pthread_mutex_lock(&l->lock);
	next = l->next_pos;
	pthread_mutex_unlock(&l->lock);
	for (pos = kt->low; pos != next; pos++) {
		i = pos % w;
		kt->fill[i] = 0;
		if (!kt->get_buf[i])
			continue;
		dlc_buf_put(kt->get_buf[i]);
		kt->get_buf[i] = NULL;
		kt->gets--;
		kt->rq[(kt->rq_head + kt->rq_len++) % w] = pos;
	}
	/* Let go of the module: nothing of ours holds its file after this. */
	dlc_reader_unwatch(l->reader);
	dlc_kforms_close(kt->kf);
	pthread_mutex_lock(&l->lock);
	kc = kt->kc;
	kt->kc = NULL;
	__atomic_store_n(&l->backend, DLC_BACKEND_INPROCESS, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&l->lock);
	dlc_kclient_close(kc);
	kt->err = 0;
	dlc_stat_add(l->stats.kernel_fallbacks, 1);
	__atomic_store_n(&l->stats.cache_capacity, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&l->stats.cache_used, 0, __ATOMIC_RELAXED);
	if (!l->cfg.cache_bytes)
		return;
	ret = dlc_inproc_cache(&kt->inproc, l->cfg.cache_bytes, 0);
	if (!ret && active)
		ret = dlc_ct_prepare_epoch(&kt->inproc.tier, epoch);
	if (ret) {
		dlc_logf(&l->log, DLC_LOG_WARN,
			 "in-process cache over %u samples (%u a rank): %s; going on without a cache",
			 l->n, l->epoch_len, strerror(-ret));
		dlc_inproc_fini(&kt->inproc);
		__atomic_store_n(&l->stats.cache_capacity, 0, __ATOMIC_RELAXED);
	}
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
static int ktier_ahead_read(struct ktier *kt, uint64_t g, char *path,
			     size_t len)
{
	struct dlc_loader *l = kt->tier.l;
	struct dlc_ra_entry *e = dlc_ra_at(l->ra, g);
	struct dlc_read_done d = { .tag = DLC_RA_TAG(g), .why = "queue" };

	if (e->abandoned) {
		if (e->fill)
			ktier_fill_done(kt, e->id, g, NULL);
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
static void ktier_ahead_done(struct ktier *kt, const struct dlcache_cqe *c)
{
	struct dlc_loader *l = kt->tier.l;
	uint64_t g = c->user_data >> 2;
	struct dlc_ra_entry *e;
	uint32_t pos, epoch;
	int fill = c->res == -ENOENT && (c->flags & DLCACHE_CQE_F_FILL);

	/* Only our own look-ups carry this tag: anything else is ignored. */
	if (!l->ra || !kt->probes)
		return;
	e = dlc_ra_at(l->ra, g);
	if (e->state != DLC_RA_IN_FLIGHT || !e->probing || e->g != g)
		return;
	kt->probes--;
	e->probing = 0;
	if (e->abandoned) {
		if (fill)
			ktier_fill_done(kt, e->id, g, NULL);
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
		ktier_get(kt, pos, epoch, size < INT32_MAX ? size + 1 : UINT64_MAX,
			   1);
		return;
	}
	/* Our fill, when taken: PUT after the use (ktier_use()), or ABORT. */
	e->fill = fill;
	kt->aq[(kt->aq_head + kt->aq_len++) % l->cfg.queue_depth] = g;
}

/*
 * Whether another job shares the data set (STATS, at most once a second).
 * Then the module's guess of which job reads a sample first rests on two
 * paces, and the two-jobs integration run read 1.09x the optimum's bytes
 * with look-ups ahead against 1.04x without: no new look-ups then, the
 * window's claims alone, as before.
 */
static int ktier_others(struct ktier *kt)
{
	struct dlc_loader *l = kt->tier.l;
	struct dlcache_stats st;
	uint64_t now = dlc_now_ns();

	if (kt->others_ns && now - kt->others_ns < 1000000000ULL)
		return kt->others;
	kt->others_ns = now;
	/* Each rank of this job is a consumer of its own (ktier_job()). */
	kt->others = !dlc_kclient_stats(kt->kc, &st) &&
		      st.ds_consumers > (kt->own_line ? l->cfg.world : 0);
	return kt->others;
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
static int ktier_read_ahead(struct ktier *kt, uint64_t my_gen, char *path,
			     size_t len)
{
	struct dlc_loader *l = kt->tier.l;
	uint32_t qd = l->cfg.queue_depth;
	struct dlcache_sqe *sqe;
	struct dlc_ra_entry *e;
	uint64_t g, bytes;
	int issued = 0, ret, behind;
	uint32_t id;

	while (kt->aq_len && dlc_reader_inflight(l->reader) < qd) {
		g = kt->aq[kt->aq_head];
		kt->aq_head = (kt->aq_head + 1) % qd;
		kt->aq_len--;
		issued |= ktier_ahead_read(kt, g, path, len);
	}
	pthread_mutex_lock(&l->lock);
	behind = l->qlen > l->ndecode || !l->consumer_waited;
	pthread_mutex_unlock(&l->lock);
	behind |= ktier_others(kt);
	while (!behind && kt->probes + kt->aq_len < qd &&
	       dlc_kclient_unsubmitted(kt->kc) < l->cfg.window &&
	       !loader_readahead_pick(l, my_gen, &g, &id, &bytes)) {
		sqe = ktier_sqe(kt);
		if (!sqe)
			break;
		e = dlc_ra_at(l->ra, g);
		dlc_ra_begin(l->ra, e, g, id, bytes);
		e->probing = 1;
		sqe->opcode = DLCACHE_OP_GET;
		sqe->handle = dlc_kclient_handle(kt->kc);
		sqe->sample = id;
		sqe->user_data = (g << 2) | KTAG_AHEAD;
		/* For the use at g: the module says if an earlier one comes. */
		ktier_at(kt, sqe, (uint32_t)(g % l->epoch_len),
			  (uint32_t)(g / l->epoch_len));
		sqe->flags |= DLCACHE_SQE_F_AHEAD;
		kt->probes++;
		l->ra_g = g + 1;
		issued = 1;
	}
	if (issued && dlc_kclient_unsubmitted(kt->kc)) {
		ret = dlc_kclient_enter(kt->kc);
		if (ret < 0)
			ktier_fail(kt, ret, "ENTER");
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
static void ktier_ahead_forget(struct ktier *kt, struct dlc_ra_entry *e)
{
	struct dlc_loader *l = kt->tier.l;
	uint32_t w = l->cfg.window;

	if (e->claimed)
		kt->rq[(kt->rq_head + kt->rq_len++) % w] = e->pos;
	dlc_ra_cancel(l->ra, e);
}

static void ktier_ahead_switch(struct ktier *kt)
{
	struct dlc_loader *l = kt->tier.l;
	struct dlc_ra_entry *e;
	uint32_t i;

	if (!l->ra)
		return;
	for (; kt->aq_len; kt->aq_len--) {
		e = dlc_ra_at(l->ra, kt->aq[kt->aq_head]);
		kt->aq_head = (kt->aq_head + 1) % l->cfg.queue_depth;
		ktier_ahead_forget(kt, e);
	}
	for (i = 0; i < dlc_ra_slots(l->ra); i++) {
		e = dlc_ra_slot(l->ra, i);
		e->fill = 0;	/* the fills end with the session */
		if (e->state == DLC_RA_IN_FLIGHT && e->probing)
			ktier_ahead_forget(kt, e);
	}
	kt->probes = 0;
	loader_publish_readahead(l);
}

/*
 * Positions a new data set's time lines hold: the rest of one epoch and
 * the next two, of the global order (the shared line, as a module
 * without consumers has). A rank's own line needs a world-th of it.
 */
static uint32_t ktier_window(const struct ktier *kt)
{
	return 3 * kt->glen;
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
static uint64_t ktier_job(const struct ktier *kt)
{
	const struct dlc_loader *l = kt->tier.l;
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
static int ktier_owner(struct ktier *kt, uint32_t *owner)
{
	struct dlc_loader *l = kt->tier.l;
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
 * /dev/dlcache can be used (kt->kc set); else the in-process one, saying
 * why (kt->kc NULL). 0, or -errno.
 */
static int ktier_connect(struct ktier *kt)
{
	struct dlc_loader *l = kt->tier.l;
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
	ret = ktier_owner(kt, &owner);
	if (ret)
		return ret;

	dev = getenv("DLCACHE_DEVICE");
	if (!dev || !*dev)
		dev = "/dev/dlcache";
	dlc_index_key(l->idx, key);
	kt->glen = l->epoch_len * l->cfg.world;
	if (dlc_kclient_attach_flags(owner, (uint32_t)geteuid()))
		dlc_logf(&l->log, DLC_LOG_WARN,
			 "%s: trusting the data set of owner uid %u (kernel_owner_uid or DLCACHE_OWNER_UID), not this user's own",
			 dev, owner);
	ret = dlc_kclient_open(dev, key, l->n, l->cfg.kernel_mode,
			       ktier_window(kt), l->cfg.window * 2, owner,
			       ktier_job(kt), &kt->kc, &why);
	if (ret) {
		kt->kc = NULL;
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
	if (!dlc_kclient_may_write(kt->kc))
		dlc_logf(&l->log, DLC_LOG_WARN,
			 "%s: read-only access to this data set: misses are read but not shared",
			 dev);
	else if (dlc_kclient_job_refused(kt->kc))
		dlc_logf(&l->log, DLC_LOG_WARN,
			 "%s: no time line of this rank's own (%s: the module's consumers or policy memory are used up); sharing the data set's, where other jobs' orders are unknown",
			 dev, strerror(-dlc_kclient_job_refused(kt->kc)));
	kt->own_line = dlc_kclient_joined(kt->kc);
	/* ktier_fill_global() writes every sample's place, even past a short glen */
	kt->gorder = malloc(sizeof(*kt->gorder) * (kt->glen > l->n ? kt->glen : l->n));
	kt->get_buf = calloc(l->cfg.window, sizeof(*kt->get_buf));
	kt->fill = calloc(l->cfg.window, 1);
	kt->done = calloc(l->cfg.window, 1);
	kt->rq = calloc(l->cfg.window, sizeof(*kt->rq));
	kt->cqes = calloc(64, sizeof(*kt->cqes));
	kt->aq = calloc(l->cfg.queue_depth, sizeof(*kt->aq));
	kt->size_logged = calloc((size_t)l->n / 8 + 1, 1);
	if (!kt->gorder || !kt->get_buf || !kt->fill || !kt->done || !kt->rq ||
	    !kt->cqes || !kt->aq || !kt->size_logged)
		return -ENOMEM;
	/* An older module has no look-up ahead: no read-ahead on it. */
	kt->has_ahead = dlc_kclient_has(kt->kc, DLCACHE_FEAT_GET_AHEAD);
	if (l->cfg.forms && dlc_kclient_may_write(kt->kc)) {
		ret = dlc_kforms_open(l, dev, key, ktier_window(kt),
				      ktier_job(kt), kt->own_line, &kt->kf,
				      &why);
		if (ret)
			dlc_logf(&l->log, DLC_LOG_WARN,
				 "%s: no form set (%s: %s); keeping encoded bytes only, the exact pixels all the same",
				 dev, strerror(-ret), why);
	}
	kt->last_epoch = -1;
	l->backend = DLC_BACKEND_KERNEL;
	l->stats.cache_capacity = dlc_kclient_capacity(kt->kc);
	return 0;
}

static void ktier_destroy(struct dlc_cache_tier *t)
{
	struct ktier *kt = to_ktier(t);
	struct dlc_loader *l = t->l;
	uint32_t i, n;

	if (kt->kc) {
		/*
		 * SQEs still queued: submit them (a PUT still caches its
		 * bytes, an ABORT hands its fill over). A PUT holds a buffer
		 * ref until its completion is reaped; give back the refs of
		 * any the module did not take.
		 */
		if (dlc_kclient_unsubmitted(kt->kc))
			dlc_kclient_enter(kt->kc);
		ktier_put_unsubmitted(kt);
		/* PUTs already run in ENTER hold buffer refs until reaped. */
		while ((n = dlc_kclient_reap(kt->kc, kt->cqes, 64)) > 0)
			for (i = 0; i < n; i++)
				if (KTAG(kt->cqes[i].user_data) == KTAG_PUT)
					dlc_buf_put((struct dlc_buf *)(uintptr_t)
						    (kt->cqes[i].user_data & ~3ULL));
		/* Closing hands our fills over and ends our parked GETs. */
		dlc_kclient_close(kt->kc);
		kt->kc = NULL;
	}
	dlc_kforms_free(kt->kf);
	if (kt->get_buf)
		for (i = 0; i < l->cfg.window; i++)
			dlc_buf_put(kt->get_buf[i]);
	free(kt->get_buf);
	free(kt->fill);
	free(kt->done);
	free(kt->rq);
	free(kt->cqes);
	free(kt->aq);
	free(kt->size_logged);
	free(kt->gorder);	dlc_inproc_fini(&kt->inproc);
	free(kt);
}

/* ------------------------------------------------------------------ */
/* The cache tier's ops (cachetier.h): the module's, or, after a       */
/* fallback (kc NULL), the in-process tier's with what the module left */
/* ------------------------------------------------------------------ */

static int ktier_op_prepare_epoch(struct dlc_cache_tier *t, uint32_t epoch)
{
	struct ktier *kt = to_ktier(t);

	if (!kt->kc)
		return dlc_ct_prepare_epoch(&kt->inproc.tier, epoch);
	ktier_prepare_epoch(kt, epoch);
	return 0;
}

static void ktier_op_epoch_start(struct dlc_cache_tier *t, uint32_t start)
{
	struct ktier *kt = to_ktier(t);

	kt->low = start;
	memset(kt->done, 0, t->l->cfg.window);
}

/* Kernel state is per pos % window: the span must fit in it. */
static int ktier_op_window_full(const struct dlc_cache_tier *t,
				uint32_t next_pos)
{
	const struct ktier *kt = to_ktier(t);

	return kt->kc && next_pos - kt->low >= t->l->cfg.window;
}

/*
 * The module's round, and a fallback at its end when the module failed;
 * after one, the in-process tier's round, then the positions the module
 * left unserved are read.
 */
static int ktier_op_round(struct dlc_cache_tier *t, uint32_t epoch,
			  char *path, size_t len)
{
	struct ktier *kt = to_ktier(t);
	int progressed;

	if (kt->kc) {
		progressed = ktier_round(kt, epoch, path, len);
		if (kt->kc && kt->err)
			ktier_switch(kt);
	} else {
		progressed = dlc_ct_round(&kt->inproc.tier, epoch, path, len);
		/* Forms made before the fallback: refused, and let go. */
		if (kt->kf && dlc_kforms_round(kt->kf, &t->l->lock))
			progressed = 1;
	}
	if (!kt->kc && kt->rq_len && ktier_read_queued(kt, path, len))
		progressed = 1;
	return progressed;
}

static int ktier_op_more(const struct dlc_cache_tier *t)
{
	const struct ktier *kt = to_ktier(t);
	struct dlc_loader *l = t->l;

	if (kt->kc ? loader_issuable(l) &&
		     kt->gets + kt->rq_len < l->cfg.window :
		     dlc_ct_more(&kt->inproc.tier))
		return 1;
	/* Forms made and queued for the module: the next round offers them. */
	if (l->forms && l->forms->qlen)
		return 1;
	return (kt->rq_len || kt->aq_len) &&
	       dlc_reader_inflight(l->reader) < l->cfg.queue_depth;
}

static void ktier_op_read_done(struct dlc_cache_tier *t, uint32_t id,
			       uint32_t pos, struct dlc_buf *buf)
{
	struct ktier *kt = to_ktier(t);

	if (kt->kc)
		ktier_end_fill(kt, pos, buf);
	else
		dlc_ct_read_done(&kt->inproc.tier, id, pos, buf);
}

static void ktier_op_pos_done(struct dlc_cache_tier *t, uint32_t pos)
{
	struct ktier *kt = to_ktier(t);

	if (kt->kc)
		ktier_pos_done(kt, pos);
}

static int ktier_op_keeps(const struct dlc_cache_tier *t)
{
	const struct ktier *kt = to_ktier(t);

	return kt->kc || dlc_ct_keeps(&kt->inproc.tier);
}

/*
 * The module's holdings are asked for by look-ups ahead, not here; but a
 * sample whose form it holds, as far as we know, is not read ahead: its
 * claim is served from the form (kforms.c), or read then.
 */
static int ktier_op_holds(const struct dlc_cache_tier *t, uint32_t id)
{
	const struct ktier *kt = to_ktier(t);

	if (kt->kc)
		return kt->kf && dlc_kforms_known(kt->kf, id);
	return dlc_ct_holds(&kt->inproc.tier, id);
}

static int ktier_op_read_ahead(struct dlc_cache_tier *t, uint64_t gen,
			       char *path, size_t len)
{
	struct ktier *kt = to_ktier(t);

	if (kt->kc)
		return kt->has_ahead && !kt->err ?
		       ktier_read_ahead(kt, gen, path, len) : 0;
	/* After a fallback: what the module did not serve is read first. */
	if (kt->rq_len)
		return 0;
	return loader_read_ahead_reads(t->l, gen, path, len);
}

static void ktier_op_use(struct dlc_cache_tier *t, uint32_t pos,
			 uint32_t epoch, struct dlc_buf *buf)
{
	ktier_use(to_ktier(t), pos, epoch, buf);
}

/* A read-ahead entry dropped ends the fill it took (ABORT). */
static void ktier_op_fill_abort(struct dlc_cache_tier *t, uint32_t id,
				uint64_t g)
{
	struct ktier *kt = to_ktier(t);

	if (kt->kc)
		ktier_fill_done(kt, id, g, NULL);
}

/*
 * The module's cache is every rank's: a sample's last use is its last
 * global position g, which is a rank's position g / world, the ranks
 * going in step.
 */
static int ktier_op_last_uses(struct dlc_cache_tier *t, uint32_t epoch,
			      uint32_t *last_pos)
{
	struct ktier *kt = to_ktier(t);
	struct dlc_loader *l = t->l;
	uint32_t p;

	if (!kt->kc || l->cfg.world <= 1 || ktier_fill_global(kt, epoch))
		return -1;
	for (p = 0; p < kt->glen; p++)
		last_pos[kt->gorder[p]] = p / l->cfg.world;
	return 0;
}

static void ktier_op_pace(struct dlc_cache_tier *t,
			  const struct dlc_window_shares *w)
{
	struct ktier *kt = to_ktier(t);

	if (!kt->kc)
		dlc_ct_pace(&kt->inproc.tier, w);
	else if (kt->kf)
		dlc_kforms_window(kt->kf, w);
}

static void ktier_op_publish(struct dlc_cache_tier *t)
{
	struct ktier *kt = to_ktier(t);

	if (!kt->kc)
		dlc_ct_publish(&kt->inproc.tier);
}

/* Under l->lock: forms on, whether this decode makes the form. */
static int ktier_op_form_wanted(struct dlc_cache_tier *t, uint32_t id,
				const struct dlc_buf *enc, uint32_t *est)
{
	struct ktier *kt = to_ktier(t);

	return kt->kc && kt->kf && dlc_kforms_want(kt->kf, id, enc, est);
}

/* The module's view of this data set, across processes. */
static void ktier_op_stats(struct dlc_cache_tier *t, struct dlc_stats *st)
{
	struct ktier *kt = to_ktier(t);
	struct dlcache_stats ks;

	if (kt->kf)
		dlc_kforms_stats(kt->kf, st);
	if (kt->kc && dlc_kclient_stats(kt->kc, &ks) == 0) {
		st->evictions = ks.dataset.evictions;
		st->bypasses = ks.dataset.bypasses;
		st->cache_used = ks.dataset.used_bytes;
		st->cache_capacity = ks.capacity_bytes;
	}
}

/*
 * The fd is watched also without GETs in flight: a drain (POLLHUP)
 * wakes an idle loader, which then lets go of the module.
 */
static int ktier_op_watch_fd(const struct dlc_cache_tier *t)
{
	const struct ktier *kt = to_ktier(t);

	return kt->kc ? dlc_kclient_fd(kt->kc) : -1;
}

static void ktier_op_describe(const struct dlc_cache_tier *t, char *buf,
			      size_t len)
{
	const struct ktier *kt = to_ktier(t);

	if (!kt->kc) {
		kt->inproc.tier.ops->describe(&kt->inproc.tier, buf, len);
		return;
	}
	snprintf(buf, len,
		 "dlcache.ko cache (%llu MiB, shared by the node) over %u samples, data set of uid %u",
		 (unsigned long long)(dlc_kclient_capacity(kt->kc) >> 20),
		 t->l->n, dlc_kclient_owner(kt->kc));
}

static const struct dlc_cache_tier_ops ktier_ops = {
	.prepare_epoch = ktier_op_prepare_epoch,
	.epoch_start = ktier_op_epoch_start,
	.window_full = ktier_op_window_full,
	.round = ktier_op_round,
	.more = ktier_op_more,
	.read_done = ktier_op_read_done,
	.pos_done = ktier_op_pos_done,
	.keeps = ktier_op_keeps,
	.holds = ktier_op_holds,
	.read_ahead = ktier_op_read_ahead,
	.use = ktier_op_use,
	.fill_abort = ktier_op_fill_abort,
	.last_uses = ktier_op_last_uses,
	.form_wanted = ktier_op_form_wanted,
	.pace = ktier_op_pace,
	.publish = ktier_op_publish,
	.stats = ktier_op_stats,
	.watch_fd = ktier_op_watch_fd,
	.describe = ktier_op_describe,
	.destroy = ktier_destroy,
};

int dlc_ktier_open(struct dlc_loader *l, struct dlc_cache_tier **out)
{
	struct ktier *kt = calloc(1, sizeof(*kt));
	int ret;

	*out = NULL;
	if (!kt)
		return -ENOMEM;
	kt->tier.ops = &ktier_ops;
	kt->tier.l = l;
	dlc_inproc_init(&kt->inproc, l);
	ret = ktier_connect(kt);
	if (ret || !kt->kc) {
		ktier_destroy(&kt->tier);
		return ret;
	}
	*out = &kt->tier;
	return 0;
}
