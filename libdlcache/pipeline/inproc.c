// SPDX-License-Identifier: MIT
/*
 * The in-process cache tier (inproc.h): the pipeline's claims looked up
 * in cache.c's next-use cache, which this process's orders rank; a hit
 * goes straight to decode, a miss to the reader, and the miss's bytes are
 * offered to the cache when its read ends. All of it the I/O thread's,
 * but holds(), which the pipeline asks under l->lock from that thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "inproc.h"
#include "loader_int.h"

static struct dlc_inproc *to_inproc(const struct dlc_cache_tier *t)
{
	return (struct dlc_inproc *)t;
}

static int inproc_prepare_epoch(struct dlc_cache_tier *t, uint32_t epoch)
{
	struct dlc_inproc *ip = to_inproc(t);

	const struct dlc_loader *l = t->l;

	if (!ip->c)
		return 0;
	/*
	 * A displaced form is made again: only with DLC_FORMS_PAYBACK
	 * epochs left after this one (or no known end) do the uses left
	 * pay for it (cache.c).
	 */
	dlc_cache_forms_may_displace(ip->c, !l->cfg.epochs ||
				     (uint64_t)epoch + 1 + DLC_FORMS_PAYBACK <=
				     l->cfg.epochs);
	return dlc_cache_prepare_epoch(ip->c, epoch, loader_fill_order, t->l);
}

static void inproc_publish(struct dlc_cache_tier *t);

/* Issue: hits go straight to decode, misses to io_uring. */
static int inproc_round(struct dlc_cache_tier *t, uint32_t cur_epoch,
			char *path, size_t len)
{
	struct dlc_inproc *ip = to_inproc(t);
	struct dlc_loader *l = t->l;
	int progressed = 0;
	struct decode_item it;

	(void)cur_epoch;	/* a claim's epoch is read with it, below */
	/* Before the claims: a form made may be the next hit. */
	if (ip->have_forms && dlc_forms_offer(&ip->forms, ip->c, &l->lock))
		inproc_publish(t);
	pthread_mutex_lock(&l->lock);
	while (loader_issuable(l) && loader_claim_room(l)) {
		struct dlc_buf *hit = NULL;
		uint32_t epoch = l->epoch;

		loader_claim_next(l, &it);
		pthread_mutex_unlock(&l->lock);
		if (ip->c)
			dlc_cache_advance(ip->c, epoch, it.pos);
		if (loader_take_readahead(l, epoch, &it)) {
			pthread_mutex_lock(&l->lock);
			progressed = 1;
			continue;
		}
		if (ip->c)
			hit = dlc_cache_lookup(ip->c, it.sample);
		if (hit) {
			it.buf = hit;
			loader_count_hit(l, it.sample, hit);
		} else {
			/* There is reader room, so this should queue. */
			it.err = dlc_source_queue(l->src, l->reader, it.sample,
						  it.pos, path, len);
			it.why = "queue";
		}
		pthread_mutex_lock(&l->lock);
		if (hit || it.err) {
			if (it.err)
				dlc_stat_add(l->stats.misses, 1);
			loader_push_item(l, &it);
		}
		progressed = 1;
	}
	pthread_mutex_unlock(&l->lock);
	return progressed;
}

static int inproc_more(const struct dlc_cache_tier *t)
{
	const struct dlc_inproc *ip = to_inproc(t);

	return (ip->have_forms && ip->forms.qlen) ||
	       (loader_issuable(t->l) && loader_claim_room(t->l));
}

/* The pace window that ended chooses the forms' regime (forms.c). */
static void inproc_pace(struct dlc_cache_tier *t,
			const struct dlc_window_shares *w)
{
	struct dlc_inproc *ip = to_inproc(t);

	if (ip->have_forms)
		dlc_forms_window(&ip->forms, ip->c, w);
}

/*
 * Under l->lock. A form kept in this process serves this loader's later
 * epochs alone: in the job's last known epoch (cfg.epochs) none is made.
 */
static int inproc_form_wanted(struct dlc_cache_tier *t, uint32_t id,
			      const struct dlc_buf *enc, uint32_t *est)
{
	struct dlc_inproc *ip = to_inproc(t);
	const struct dlc_loader *l = t->l;

	if (l->cfg.epochs && l->epoch + 1 >= l->cfg.epochs)
		return 0;
	return ip->have_forms &&
	       dlc_forms_want(&ip->forms, ip->c, id, enc->len,
			      dlc_form_bytes(enc), est);
}

static void inproc_read_done(struct dlc_cache_tier *t, uint32_t id,
			     uint32_t pos, struct dlc_buf *buf)
{
	struct dlc_inproc *ip = to_inproc(t);

	(void)pos;
	if (ip->c && buf && buf->len)
		dlc_cache_offer(ip->c, id, buf);
}

static int inproc_keeps(const struct dlc_cache_tier *t)
{
	return to_inproc(t)->c != NULL;
}

static int inproc_holds(const struct dlc_cache_tier *t, uint32_t id)
{
	struct dlc_inproc *ip = to_inproc(t);

	return ip->c && dlc_cache_contains(ip->c, id);
}

static void inproc_publish(struct dlc_cache_tier *t)
{
	struct dlc_inproc *ip = to_inproc(t);
	struct dlc_loader *l = t->l;
	struct dlc_cache_counters cc;

	if (!ip->c)
		return;
	dlc_cache_counters(ip->c, &cc);
	__atomic_store_n(&l->stats.evictions, cc.evictions, __ATOMIC_RELAXED);
	__atomic_store_n(&l->stats.bypasses, cc.bypasses, __ATOMIC_RELAXED);
	__atomic_store_n(&l->stats.cache_used, cc.used, __ATOMIC_RELAXED);
	__atomic_store_n(&l->stats.forms_held, cc.forms_held, __ATOMIC_RELAXED);
	__atomic_store_n(&l->stats.forms_bytes, cc.forms_bytes,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&l->stats.forms_displaced, cc.forms_displaced,
			 __ATOMIC_RELAXED);
}

/* Under l->lock: the forms' counters, which decoders keep. */
static void inproc_stats(struct dlc_cache_tier *t, struct dlc_stats *st)
{
	const struct dlc_forms *f = &to_inproc(t)->forms;

	if (!to_inproc(t)->have_forms)
		return;
	dlc_forms_stats(f, st);
}

static void inproc_describe(const struct dlc_cache_tier *t, char *buf,
			    size_t len)
{
	const struct dlc_inproc *ip = to_inproc(t);

	snprintf(buf, len, "in-process cache of %llu MiB over %u samples%s",
		 (unsigned long long)(t->l->cfg.cache_bytes >> 20), t->l->n,
		 !ip->have_forms ? "" :
		 ip->forms.mode == DLC_FORMS_AUTO ?
		 ", decoded forms where decode limits the loader" :
		 ", every sample kept as its decoded form");
}

static void inproc_destroy(struct dlc_cache_tier *t)
{
	struct dlc_inproc *ip = to_inproc(t);

	dlc_inproc_fini(ip);
	free(ip);
}

static const struct dlc_cache_tier_ops inproc_ops = {
	.prepare_epoch = inproc_prepare_epoch,
	.round = inproc_round,
	.more = inproc_more,
	.read_done = inproc_read_done,
	.keeps = inproc_keeps,
	.holds = inproc_holds,
	.form_wanted = inproc_form_wanted,
	.pace = inproc_pace,
	.publish = inproc_publish,
	.stats = inproc_stats,
	.describe = inproc_describe,
	.destroy = inproc_destroy,
};

void dlc_inproc_init(struct dlc_inproc *ip, struct dlc_loader *l)
{
	memset(ip, 0, sizeof(*ip));
	ip->tier.ops = &inproc_ops;
	ip->tier.l = l;
}

int dlc_inproc_cache(struct dlc_inproc *ip, uint64_t bytes, int forms)
{
	struct dlc_loader *l = ip->tier.l;
	int ret;

	ret = dlc_cache_create(l->n, l->epoch_len, bytes, &ip->c);
	if (ret) {
		ip->c = NULL;
		return ret;
	}
	if (forms && l->cfg.forms) {
		/* The forms queued for the cache: a window's, 256 MiB at most. */
		ret = dlc_forms_init(&ip->forms, l->cfg.forms, l->n,
				     l->cfg.window,
				     bytes < (256ULL << 20) ? bytes :
				     256ULL << 20);
		if (ret) {
			dlc_cache_destroy(ip->c);
			ip->c = NULL;
			return ret;
		}
		ip->have_forms = 1;
		l->forms = &ip->forms;
		dlc_cache_pin_forms(ip->c, 1);	/* decode-bound until measured */
	}
	__atomic_store_n(&l->stats.cache_capacity, bytes, __ATOMIC_RELAXED);
	return 0;
}

void dlc_inproc_fini(struct dlc_inproc *ip)
{
	if (ip->have_forms) {
		if (ip->tier.l->forms == &ip->forms)
			ip->tier.l->forms = NULL;
		dlc_forms_fini(&ip->forms);
		ip->have_forms = 0;
	}
	dlc_cache_destroy(ip->c);
	ip->c = NULL;
}

int dlc_inproc_create(struct dlc_loader *l, struct dlc_inproc **out)
{
	struct dlc_inproc *ip = malloc(sizeof(*ip));

	if (!ip)
		return -ENOMEM;
	dlc_inproc_init(ip, l);
	*out = ip;
	return 0;
}
