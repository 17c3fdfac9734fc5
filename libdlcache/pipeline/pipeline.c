// SPDX-License-Identifier: MIT
/*
 * The loader's pipeline steps (loader_int.h), between the I/O thread's
 * loop (loader.c) and the cache tiers (cachetier.h) that claim positions
 * and hand samples to decode: claims of the epoch's order, the hand-over
 * of finished reads to the caches and the decode queue, and the
 * read-ahead, which reads the order's next misses before their positions
 * are claimed (readahead.h). Everything here is the I/O thread's, with
 * l->lock where a function says so.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cachetier.h"
#include "crc32c.h"
#include "forms.h"
#include "loader_int.h"
#include "readahead.h"
#include "stage.h"
#include "tier.h"

/*
 * Whether @len bytes at @data are sample @id as indexed: 1 when they match
 * the index's crc32c (or it has none to check against), 0 when not. A
 * mismatch is counted; with @what, it is logged the first time for each
 * sample, saying where the bytes came from. I/O thread only.
 */
int loader_sample_ok(struct dlc_loader *l, uint32_t id, const void *data,
		     size_t len, const char *what)
{
	uint64_t size = dlc_index_size(l->idx, id);
	uint32_t want, got = 0;
	char path[4096];

	if (dlc_index_crc32c(l->idx, id, &want))
		return 1;
	dlc_stat_add(l->stats.verified, 1);
	if (len == size) {
		uint64_t t0 = dlc_now_ns();

		got = dlc_crc32c(0, data, len);
		dlc_stat_add(l->stats.verify_ns, dlc_now_ns() - t0);
		if (got == want)
			return 1;
	}
	dlc_stat_add(l->stats.checksum_errors, 1);
	if (!what || (l->crc_logged[id / 8] & (1U << (id % 8))))
		return 0;
	l->crc_logged[id / 8] |= (uint8_t)(1U << (id % 8));
	dlc_source_name(l->src, id, path, sizeof(path));
	if (len == size)
		dlc_logf(&l->log, DLC_LOG_WARN,
			 "sample %u (%s): %s: crc32c %08x, the index says %08x; reading the file instead",
			 id, path, what, got, want);
	else
		dlc_logf(&l->log, DLC_LOG_WARN,
			 "sample %u (%s): %s: %zu bytes, the index says %llu; reading the file instead",
			 id, path, what, len, (unsigned long long)size);
	return 0;
}

/*
 * A resumed epoch's order: this rank's share of the rest, then, in the
 * positions the run never reaches, the head of the next epoch's order, so
 * that the caches' next-use ranking sees those samples in the order they
 * come next.
 */
static int fill_rest(struct dlc_loader *l, struct dlc_order_params *p,
		     uint32_t *ids, uint32_t len)
{
	uint64_t done = __atomic_load_n(&l->rs_done, __ATOMIC_RELAXED);
	uint32_t rs_len = __atomic_load_n(&l->rs_len, __ATOMIC_RELAXED);
	uint32_t *next;
	int ret;

	if (rs_len > len)
		return -EINVAL;
	ret = dlc_order_fill_rest(l->n, p, done, ids, rs_len);
	if (ret || rs_len == len)
		return ret;
	next = malloc(sizeof(*next) * len);
	if (!next)
		return -ENOMEM;
	p->epoch++;
	ret = dlc_order_fill(l->n, p, next, len);
	if (!ret)
		memcpy(ids + rs_len, next, sizeof(*ids) * (len - rs_len));
	free(next);
	return ret;
}

struct dlc_order_params loader_order_params(const struct dlc_loader *l,
					    uint32_t epoch)
{
	struct dlc_order_params p = {
		.seed = l->cfg.seed, .epoch = epoch, .rank = l->cfg.rank,
		.world = l->cfg.world, .shuffle = l->cfg.shuffle,
		.drop_last = l->cfg.shard_drop_last,
	};

	return p;
}

uint32_t loader_run_len(const struct dlc_loader *l, uint32_t len)
{
	uint32_t b = l->cfg.batch_size;

	return l->cfg.drop_last ? len / b * b : len;
}

int loader_fill_order(void *arg, uint32_t epoch, uint32_t *ids, uint32_t len)
{
	struct dlc_loader *l = arg;
	struct dlc_order_params p = loader_order_params(l, epoch);
	uint32_t rs = __atomic_load_n(&l->rs_epoch1, __ATOMIC_ACQUIRE);

	if (rs && rs - 1 == epoch)
		return fill_rest(l, &p, ids, len);
	return dlc_order_fill(l->n, &p, ids, len);
}

/* Called with l->lock held. */
void loader_push_item(struct dlc_loader *l, const struct decode_item *it)
{
	struct decode_item *q = &l->queue[(l->qhead + l->qlen) % l->cfg.window];

	*q = *it;
	q->form_est = 0;
	q->make_form = it->buf && !it->buf->form_w && !it->buf->prepared &&
		       dlc_ct_form_wanted(l->ct, it->sample, it->buf,
					  &q->form_est);
	l->qlen++;
	pthread_cond_signal(&l->work_cv);
}

void loader_wait_work(struct dlc_loader *l, uint64_t wake)
{
	uint32_t busy = l->ndecode > l->decoders_waiting + 1 ?
			l->ndecode - l->decoders_waiting - 1 : 0;
	/*
	 * Starved: more samples are out than the other decoders hold, so
	 * some are still being read (forms.c's regime).
	 */
	uint64_t t0 = l->active && l->outstanding > busy ? dlc_now_ns() : 0;

	l->decoders_waiting++;
	if (wake)
		dlc_cond_wait_until(&l->work_cv, &l->lock, wake);
	else
		pthread_cond_wait(&l->work_cv, &l->lock);
	l->decoders_waiting--;
	if (t0)
		dlc_stat_add(l->stats.decode_starved_ns, dlc_now_ns() - t0);
}

/* Called with l->lock held, with l->qlen > 0. */
void loader_take_last(struct dlc_loader *l, struct decode_item *it)
{
	l->qlen--;
	*it = l->queue[(l->qhead + l->qlen) % l->cfg.window];
	loader_item_no_form(l, it);
}

/* Called with l->lock held: @it will make no form (a guest's, a drop). */
void loader_item_no_form(struct dlc_loader *l, struct decode_item *it)
{
	if (it->make_form && l->forms)
		dlc_forms_unwant(l->forms, it->form_est);
	it->make_form = 0;
	it->form_est = 0;
}

/*
 * Called with l->lock held. There is room: @it is outstanding and not
 * queued, and l->outstanding <= window (loader_issuable()).
 */
void loader_requeue_item(struct dlc_loader *l, const struct decode_item *it)
{
	uint32_t w = l->cfg.window;

	l->qhead = (l->qhead + w - 1) % w;
	l->queue[l->qhead] = *it;
	l->qlen++;
	pthread_cond_signal(&l->work_cv);
}

/*
 * The ring slot of this run's batch @local: the run's first batch takes
 * the slot after the last one handed out before it, so that batches the
 * consumer still holds from the run before are the last to be needed.
 */
uint32_t loader_slot_of(const struct dlc_loader *l, uint32_t local)
{
	return (uint32_t)(((uint64_t)l->slot0 + local) % l->cfg.nbatches);
}

/* Whether the next position may be issued now. Called with l->lock held. */
int loader_issuable(const struct dlc_loader *l)
{
	uint32_t local;

	if (!l->active || l->failed || l->next_pos >= l->end ||
	    l->outstanding >= l->cfg.window)
		return 0;
	/* The cache's per-position state (the module's) must hold the span. */
	if (dlc_ct_window_full(l->ct, l->next_pos))
		return 0;
	if ((l->next_pos - l->start) % l->cfg.batch_size)
		return 1;
	local = (l->next_pos - l->start) / l->cfg.batch_size;
	return l->slots[loader_slot_of(l, local)].state == SLOT_FREE;
}

void loader_item_at(const struct dlc_loader *l, uint32_t pos, struct decode_item *it)
{
	it->pos = pos;
	it->sample = l->order[pos];
	it->slot = loader_slot_of(l, (pos - l->start) / l->cfg.batch_size);
	it->index = (pos - l->start) % l->cfg.batch_size;
	it->buf = NULL;
	it->err = 0;
	it->why = NULL;
	it->make_form = 0;
}

void loader_count_hit(struct dlc_loader *l, uint32_t id,
		      const struct dlc_buf *b)
{
	uint64_t len = b->form_w ? dlc_index_size(l->idx, id) : b->len;

	dlc_stat_add(l->stats.hits, 1);
	dlc_stat_add(l->stats.hit_bytes, len);
	if (l->stage)
		dlc_stage_hit_above(l->stage, len);
}

/* Claim the next position. Called with l->lock held, when loader_issuable(). */
void loader_claim_next(struct dlc_loader *l, struct decode_item *it)
{
	struct batch_slot *s;

	loader_item_at(l, l->next_pos, it);
	s = &l->slots[it->slot];
	if (it->index == 0) {
		uint32_t left = l->end - l->next_pos;

		s->state = SLOT_FILLING;
		s->want = left < l->cfg.batch_size ? left : l->cfg.batch_size;
		s->pending = s->want;
		s->err = 0;
		memset(s->skip, 0, l->cfg.batch_size);
		s->b.seq = l->base_seq + (l->next_pos - l->start) /
					 l->cfg.batch_size;
		s->b.epoch = l->epoch;
		s->b.count = s->want;
		s->b.errors = 0;
	}
	s->b.ids[it->index] = it->sample;
	s->b.labels[it->index] = dlc_index_label(l->idx, it->sample);
	/* The consumer found its batch ready, or decode is behind. */
	if (l->stage)
		dlc_stage_advance(l->stage, l->epoch, l->next_pos,
				  !l->consumer_waited || l->qlen > l->ndecode);
	l->next_pos++;
	l->outstanding++;
}

/* Called with l->lock held: a sample of an abandoned epoch is dropped. */
void loader_drop_sample(struct dlc_loader *l, struct dlc_buf *buf)
{
	dlc_buf_put(buf);
	l->outstanding--;
	if (l->outstanding == 0)
		pthread_cond_broadcast(&l->idle_cv);
}

uint64_t loader_vpos(const struct dlc_loader *l, uint32_t epoch, uint32_t pos)
{
	return (uint64_t)epoch * l->epoch_len + pos;
}

/*
 * A read of sample @id ended short or was refused O_DIRECT: whether the
 * source queued the rest (or the whole read again), so it is not done.
 */
static int requeued(struct dlc_loader *l, uint32_t id, struct dlc_read_done *d)
{
	char path[4096];
	int again;

	/* A read tier's bytes it refused: the next tier's, or the origin's. */
	if (d->tier &&
	    dlc_source_served(l->src, l->reader, id, d, path, sizeof(path)))
		return 1;
	again = dlc_source_requeue(l->src, l->reader, id, d);

	if (again == 2)
		dlc_logf(&l->log, DLC_LOG_INFO,
			 "%s: O_DIRECT reads refused by the file system; reading through the page cache",
			 dlc_index_root(l->idx));
	return again;
}

/*
 * The bytes of sample @id at claimed position @pos came from storage (or
 * failed to): count the miss, offer them to the cache and queue them for
 * decode.
 */
static void finish_read(struct dlc_loader *l, uint32_t id, uint32_t pos,
			struct dlc_buf *buf, int err, const char *why)
{
	struct decode_item it;

	dlc_stat_add(l->stats.misses, 1);
	/*
	 * Prepared by a peer for this use (cluster mode): pixels, not the
	 * file's bytes, so no check of them, and no tier or cache gets them.
	 */
	if (buf && buf->prepared) {
		dlc_stat_add(l->stats.miss_bytes, buf->len);
		pthread_mutex_lock(&l->lock);
		dlc_ct_pos_done(l->ct, pos);
		goto queue;
	}
	/* The file changed since it was indexed: no cache gets it. */
	if (buf && l->verify == DLC_VERIFY_ALL &&
	    !loader_sample_ok(l, id, buf->data, buf->len, NULL)) {
		dlc_stat_add(l->stats.miss_bytes, buf->len);
		dlc_buf_put(buf);
		buf = NULL;
		err = -EBADMSG;
		why = "the crc32c check (the file changed since it was indexed)";
	}
	if (buf) {
		dlc_stat_add(l->stats.miss_bytes, buf->len);
		dlc_source_offer(l->src, id, buf);
	}
	dlc_ct_read_done(l->ct, id, pos, buf);
	pthread_mutex_lock(&l->lock);
	dlc_ct_pos_done(l->ct, pos);
queue:
	if (!l->active) {
		loader_drop_sample(l, buf);
		pthread_mutex_unlock(&l->lock);
		return;
	}
	loader_item_at(l, pos, &it);
	it.buf = buf;
	it.err = err;
	it.why = why;
	loader_push_item(l, &it);
	pthread_mutex_unlock(&l->lock);
}

/* The read-ahead's counters, into the stats. */
void loader_publish_readahead(struct dlc_loader *l)
{
	struct dlc_ra_counters c;

	dlc_ra_counters(l->ra, &c);
	__atomic_store_n(&l->stats.readahead_reads, c.reads, __ATOMIC_RELAXED);
	__atomic_store_n(&l->stats.readahead_used, c.used, __ATOMIC_RELAXED);
	__atomic_store_n(&l->stats.readahead_dropped, c.dropped,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&l->stats.readahead_held, c.held, __ATOMIC_RELAXED);
}

/*
 * A read-ahead read ended: kept for its claim, handed over if its position
 * was claimed meanwhile, dropped if abandoned.
 */
void loader_readahead_done(struct dlc_loader *l, struct dlc_read_done *d)
{
	struct dlc_ra_entry *e = dlc_ra_at(l->ra, DLC_RA_TAG_G(d->tag));
	uint32_t id = e->id, pos = e->pos;

	if (requeued(l, id, d))
		return;
	if (e->abandoned) {
		if (e->fill)
			dlc_ct_fill_abort(l->ct, id, DLC_RA_TAG_G(d->tag));
		dlc_buf_put(d->buf);
		dlc_ra_release(e);
	} else if (e->claimed) {
		dlc_ra_release(e);
		dlc_ct_use(l->ct, pos,
			   (uint32_t)(DLC_RA_TAG_G(d->tag) / l->epoch_len),
			   d->err ? NULL : d->buf);
		finish_read(l, id, pos, d->buf, d->err, d->why);
	} else {
		dlc_ra_done(e, d->buf, d->err, d->why);
	}
}

/* Finished reads: offer them to the cache and queue them for decode. */
void loader_hand_over(struct dlc_loader *l, struct dlc_read_done *done,
		      int n)
{
	int i;

	for (i = 0; i < n; i++) {
		struct dlc_read_done *d = &done[i];
		uint32_t pos;

		/* A read tier's read: requeued() has the tier check it. */
		d->tier = DLC_TIER_OF(d->tag);
		d->tag &= ~DLC_TIER_TAG_MASK;
		pos = (uint32_t)d->tag;

		if (d->tag & DLC_RA_TAG_BIT) {
			loader_readahead_done(l, d);
			continue;
		}
		if (requeued(l, l->order[pos], d))
			continue;
		finish_read(l, l->order[pos], pos, d->buf, d->err, d->why);
	}
	if (l->ra && n > 0)
		loader_publish_readahead(l);
	if (n > 0)
		dlc_ct_publish(l->ct);
}

/* ------------------------------------------------------------------ */
/* Read-ahead (in-process): the order's next misses, within a budget   */
/* ------------------------------------------------------------------ */

/*
 * Called with l->lock held, after start_epoch's gen was taken: keep what
 * was read ahead for the positions from (epoch, start) on, and note when
 * each sample is last used in this epoch, as a position of ours: from
 * l->order (which start_epoch writes under the lock), or, on dlcache.ko,
 * whose cache every rank shares, from every rank's order (global position
 * g is a rank's position g / world, the ranks going in step), so that no
 * rank reads ahead for the next epoch a sample another rank is still to
 * read, and PUT, in this one.
 */
/* dlc_ra_retain_fills(): a READY entry dropped ends its fill. */
static void readahead_fill_abort(void *arg, struct dlc_ra_entry *e)
{
	struct dlc_loader *l = arg;

	dlc_ct_fill_abort(l->ct, e->id, e->g);
}

void loader_readahead_rebase(struct dlc_loader *l, uint32_t epoch,
			     uint32_t start)
{
	uint64_t cur = loader_vpos(l, epoch, start);
	uint32_t p;

	dlc_ra_retain_fills(l->ra, cur, cur + dlc_ra_slots(l->ra),
			    readahead_fill_abort, l);
	dlc_ra_retain(l->ra, cur, cur + dlc_ra_slots(l->ra));
	l->ra_g = cur;
	memset(l->last_pos, 0xff, sizeof(*l->last_pos) * l->n);
	if (dlc_ct_last_uses(l->ct, epoch, l->last_pos))
		for (p = 0; p < l->epoch_len; p++)
			l->last_pos[l->order[p]] = p;
	loader_publish_readahead(l);
}

/*
 * Called with l->lock held: whether reading sample @id ahead for epoch
 * @epoch would read bytes the pipeline gets anyway. With a cache: bytes it
 * holds now, and, for the next epoch, a sample this epoch has still to
 * claim or may still be reading (claimed within the last window): it
 * comes from storage or the cache then, and the cache decides whether it
 * stays for the next epoch, as it would without read-ahead. With
 * dlcache.ko the same next-epoch rule (what the module holds, its
 * look-up ahead tells), and with the staging tier: this epoch's read of
 * the sample makes its copy, which the next epoch's claim reads.
 */
static int readahead_needless(const struct dlc_loader *l, uint32_t epoch,
			      uint32_t id)
{
	uint32_t last;

	if (!dlc_ct_keeps(l->ct) && !l->stage)
		return 0;
	if (dlc_ct_holds(l->ct, id))
		return 1;
	last = l->last_pos[id];
	return epoch != l->epoch && last != UINT32_MAX &&
	       (uint64_t)last + l->cfg.window >= l->next_pos;
}

/*
 * Called with l->lock held: the next position to read ahead, as its
 * virtual position @g and sample @id; -EAGAIN when there is none now (the
 * epoch after next, the table's span, an older read still in its slot).
 */
static int readahead_next(struct dlc_loader *l, uint64_t my_gen,
			  uint64_t *g, uint32_t *id)
{
	uint64_t cur, v;
	uint32_t ep, p;

	if (!l->active || l->failed || l->gen != my_gen)
		return -EAGAIN;
	cur = loader_vpos(l, l->epoch, l->next_pos);
	if (l->ra_g < cur)
		l->ra_g = cur;
	for (;; l->ra_g++) {
		struct dlc_ra_entry *e;

		v = l->ra_g;
		if (v - cur >= dlc_ra_slots(l->ra) || v >= DLC_RA_G_LIMIT)
			return -EAGAIN;
		ep = (uint32_t)(v / l->epoch_len);
		p = (uint32_t)(v % l->epoch_len);
		/* The job's last epoch is known: nothing past it. */
		if (l->cfg.epochs && ep >= l->cfg.epochs)
			return -EAGAIN;
		if (ep == l->epoch && p >= l->end) {
			/* This run ends here: the next epoch starts at 0. */
			l->ra_g = loader_vpos(l, ep + 1, 0) - 1;
			continue;
		}
		if (ep == l->epoch) {
			*id = l->order[p];
		} else {
			if (ep != l->epoch + 1 || p >= loader_run_len(l, l->epoch_len))
				return -EAGAIN;
			if (l->ra_order_epoch != ep) {
				if (loader_fill_order(l, ep, l->ra_order, l->epoch_len))
					return -EAGAIN;
				l->ra_order_epoch = ep;
			}
			*id = l->ra_order[p];
		}
		e = dlc_ra_at(l->ra, v);
		if (e->state != DLC_RA_FREE) {
			if (e->g == v && !e->abandoned)
				continue;	/* read already */
			return -EAGAIN;		/* an older read's slot */
		}
		if (readahead_needless(l, ep, *id))
			continue;
		*g = v;
		return 0;
	}
}

/*
 * The next position to read ahead (readahead_next()) when its bytes fit
 * the budget, charged as the pool's blocks are (whole pages): 0, or
 * -EAGAIN for none now.
 */
int loader_readahead_pick(struct dlc_loader *l, uint64_t my_gen, uint64_t *g,
			  uint32_t *id, uint64_t *bytes)
{
	int ret;

	pthread_mutex_lock(&l->lock);
	ret = readahead_next(l, my_gen, g, id);
	pthread_mutex_unlock(&l->lock);
	if (ret)
		return ret;
	*bytes = (dlc_index_size(l->idx, *id) + 4095) & ~4095ULL;
	return dlc_ra_room(l->ra, *bytes) ? 0 : -EAGAIN;
}

/*
 * Queue reads of the order's next misses while the reader has room and
 * the budget allows. Returns whether any was queued.
 */
int loader_read_ahead_reads(struct dlc_loader *l, uint64_t my_gen, char *path,
			    size_t len)
{
	int issued = 0;

	while (dlc_reader_inflight(l->reader) < l->cfg.queue_depth) {
		struct dlc_ra_entry *e;
		uint64_t g, bytes;
		uint32_t id;
		int ret;

		if (loader_readahead_pick(l, my_gen, &g, &id, &bytes))
			break;
		e = dlc_ra_at(l->ra, g);
		dlc_ra_begin(l->ra, e, g, id, bytes);
		dlc_ra_reading(l->ra, e);
		ret = dlc_source_queue(l->src, l->reader, id, DLC_RA_TAG(g),
				       path, len);
		if (ret)
			dlc_ra_done(e, NULL, ret, "queue");
		l->ra_g = g + 1;
		issued = 1;
	}
	if (issued)
		loader_publish_readahead(l);
	return issued;
}

int loader_read_ahead(struct dlc_loader *l, uint64_t my_gen, char *path,
		      size_t len)
{
	if (!l->ra)
		return 0;
	if (l->rasize_on) {
		/* As the last pace window left it (loader.c, pace_tick()). */
		uint64_t b = l->rasize.cur;

		/*
		 * A tier that looks ahead itself (dlcache.ko's, ktier.c)
		 * takes a new budget at a run's start only. The module
		 * predicts each rank's next uses from a straight time line
		 * anchored at its epoch's first use; a look-ahead that
		 * deepens or shortens mid-epoch bursts or pauses the rank's
		 * look-ups and bends it. Two drifting ranks sized every
		 * 250 ms ran up to 6.9 s off their lines, 1.5 s sized at an
		 * epoch's start (Documentation/benchmarks.md, 2026-12-07).
		 */
		if (l->ct->ops->read_ahead && my_gen == l->rasize_gen)
			b = l->rasize_said;
		l->rasize_gen = my_gen;
		if (b != l->rasize_said) {
			dlc_logf(&l->log, DLC_LOG_INFO,
				 "read-ahead: %llu MiB now, was %llu (%s)",
				 (unsigned long long)(b >> 20),
				 (unsigned long long)(l->rasize_said >> 20),
				 b > l->rasize_said ?
				 "storage sets the pace" :
				 "decode or the consumer sets the pace");
			l->rasize_said = b;
		}
		/* Lowered, it comes down as the claims take what is held. */
		if (b < dlc_ra_held(l->ra))
			b = dlc_ra_held(l->ra);
		dlc_ra_set_budget(l->ra, b);
		__atomic_store_n(&l->stats.readahead_budget, b,
				 __ATOMIC_RELAXED);
	}
	if (l->ct->ops->read_ahead)
		return l->ct->ops->read_ahead(l->ct, my_gen, path, len);
	return loader_read_ahead_reads(l, my_gen, path, len);
}

/*
 * The claim of @pos in @epoch takes what was read ahead for it, if
 * anything: 1 when it did (read, handed over now; in flight, handed over
 * at completion), 0 when the claim reads or looks up as usual.
 */
int loader_take_readahead(struct dlc_loader *l, uint32_t epoch,
			  const struct decode_item *it)
{
	struct dlc_ra_entry *e;
	struct dlc_buf *buf;
	const char *why;
	int err;

	if (!l->ra)
		return 0;
	e = dlc_ra_find(l->ra, loader_vpos(l, epoch, it->pos));
	if (!e)
		return 0;
	buf = e->buf;
	err = e->err;
	why = e->why;
	if (e->state == DLC_RA_READY) {
		dlc_ra_take(l->ra, e, it->pos);
		dlc_ct_use(l->ct, it->pos, epoch, err ? NULL : buf);
		finish_read(l, it->sample, it->pos, buf, err, why);
	} else {
		dlc_ra_take(l->ra, e, it->pos);
	}
	loader_publish_readahead(l);
	return 1;
}


/*
 * Called with l->lock held, when loader_issuable(): whether the next position can
 * be claimed now. One that needs a read needs the reader's room; one read
 * ahead or cached does not (the read-ahead may hold all of the room).
 */
int loader_claim_room(const struct dlc_loader *l)
{
	if (dlc_reader_inflight(l->reader) < l->cfg.queue_depth)
		return 1;
	if (l->ra && dlc_ra_find(l->ra, loader_vpos(l, l->epoch, l->next_pos)))
		return 1;
	return dlc_ct_holds(l->ct, l->order[l->next_pos]);
}
