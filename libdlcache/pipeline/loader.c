// SPDX-License-Identifier: MIT
/*
 * The loader: an epoch's order in, decoded batches out.
 *
 * Threads and who owns what:
 *  - the I/O thread owns the io_uring reader and the in-process cache. It
 *    walks the order, claims batch slots, looks each sample up in the
 *    cache, reads the misses, offers them to the cache and queues every
 *    sample for decode. When decode is the bottleneck (a backlog, and the
 *    reads it could issue are all issued) it decodes too: the controller.
 *  - decode workers pop samples and decode them straight into their slot.
 *  - the consumer takes ready batches in order and releases them
 *    (consumer.c).
 * Everything shared is under l->lock, except the stats (atomics).
 *
 * Read-ahead (readahead.h): in-process, the I/O thread also reads the
 * order's next misses before their positions are claimed, past the window
 * and across the epoch's end into the next epoch's order, within a budget
 * in bytes, holding them in the read-ahead table. A claim that finds its
 * position read (or being read) there takes it instead of reading: the
 * order, the cache's offers and every sample's bytes are those of a loader
 * without read-ahead; only when storage is asked changes.
 *
 * A slot moves FREE -> FILLING (I/O thread) -> READY (last decoder) ->
 * HELD (consumer) -> FREE (release). Samples in flight never exceed the
 * window, and the I/O thread only claims a slot that is FREE, so memory
 * is bounded by the config alone. Each slot owns its buffer: a release
 * that keeps the pixels (dlc_release_batch_keep) hands it to the caller
 * and gives the slot a new one, under l->lock, before the slot is FREE.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "cachetier.h"
#include "crc32c.h"
#include "forms.h"
#include "guest.h"
#include "internal.h"
#include "jpegrst.h"
#include "loader_int.h"
#include "readahead.h"
#include "siphash.h"
#include "peer.h"
#include "proc.h"
#include "stage.h"
#include "status.h"
#include "tier.h"

struct worker_arg {
	struct dlc_loader *l;
};

/*
 * A thread's setup is over, with @err (0 or -errno): dlc_loader_create()
 * waits for every thread's word, so that none can fail unseen.
 */
static void thread_up(struct dlc_loader *l, int err, const char *what)
{
	if (err)
		dlc_logf(&l->log, DLC_LOG_ERROR, "%s: cannot create its JPEG decoder: %s",
			 what, strerror(-err));
	pthread_mutex_lock(&l->lock);
	if (err && !l->thread_err)
		l->thread_err = err;
	l->threads_up++;
	pthread_cond_broadcast(&l->idle_cv);
	pthread_mutex_unlock(&l->lock);
}

/* The mean decode of a sample from its encoded bytes so far; 0: none. */
static uint64_t loader_mean_decode_ns(struct dlc_loader *l)
{
	uint64_t n = __atomic_load_n(&l->stats.decoded, __ATOMIC_RELAXED);

	return n ? __atomic_load_n(&l->stats.decode_ns, __ATOMIC_RELAXED) / n :
		   0;
}

/*
 * Each turn, at @now: at the end of each pace window (window.h) its
 * shares go to every controller that reads what sets the pace, so that
 * all of them judge the same 250 ms. I/O thread.
 */
static void pace_tick(struct dlc_loader *l, uint64_t now)
{
	struct dlc_window_shares w;

	if (!dlc_window_end(&l->pace, now, DLC_PACE_WINDOW_NS,
			    __atomic_load_n(&l->stats.decode_starved_ns,
					    __ATOMIC_RELAXED),
			    loader_io_busy_ns(l, now),
			    __atomic_load_n(&l->stats.wait_ns, __ATOMIC_RELAXED),
			    l->ndecode, &w))
		return;
	if (l->rasize_on)
		dlc_rasize_window(&l->rasize, &w);
	dlc_ct_pace(l->ct, &w);
	if (l->peer)
		dlc_peer_window(l->peer, &w, loader_mean_decode_ns(l));
}

/* A decoding thread's setup: its decoder, said with thread_up(). */
static int decoder_up(struct dlc_loader *l, struct dlc_decoder **dec,
		      const char *what)
{
	int ret = dlc_decoder_create(l->cfg.max_pixels, dec);

	if (!ret)
		dlc_decoder_set_budget(*dec, l->cfg.max_scans,
				       l->cfg.decode_budget_ms);
	thread_up(l, ret, what);
	return ret;
}

static void *decode_main(void *arg)
{
	struct dlc_loader *l = arg;
	struct dlc_decoder *dec = NULL;

	if (decoder_up(l, &dec, "decode thread"))
		return NULL;
	pthread_mutex_lock(&l->lock);
	while (!l->stop) {
		uint64_t wake;

		/* Guests first: a sample of theirs may be the one due. */
		loader_guest_offer(l);
		if (loader_guest_land(l) ||
		    loader_guest_reclaim(l, dec, 0, &wake) ||
		    loader_decode_next(l, dec) ||
		    loader_guest_reclaim(l, dec, 1, &wake))
			continue;
		loader_wait_work(l, wake);
	}
	pthread_mutex_unlock(&l->lock);
	dlc_decoder_destroy(dec);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* I/O thread                                                          */

/*
 * After a submit or a reap: open or close the storage's busy span (at
 * least one read in flight). I/O thread; l->lock only at the edges.
 */
static void track_busy(struct dlc_loader *l)
{
	uint32_t n = dlc_reader_inflight(l->reader);
	uint64_t now;

	__atomic_store_n(&l->stats.reads_inflight, n, __ATOMIC_RELAXED);
	if (!n == !l->busy_since)
		return;
	now = dlc_now_ns();
	pthread_mutex_lock(&l->lock);
	if (n) {
		l->busy_since = now;
	} else {
		dlc_stat_add(l->stats.io_busy_ns, now - l->busy_since);
		l->busy_since = 0;
	}
	pthread_mutex_unlock(&l->lock);
}

/* The I/O thread, not holding l->lock: the status file, when due at @now. */
static void loader_status_tick(struct dlc_loader *l, uint64_t now)
{
	struct dlc_stats st;

	if (!dlc_status_due(l->status, now))
		return;
	dlc_loader_stats(l, &st, sizeof(st));
	dlc_status_write(l->status, &st, dlc_loader_backend(l), now);
}

static void *io_main(void *arg)
{
	struct dlc_loader *l = arg;
	struct dlc_read_done *done;
	struct dlc_decoder *dec = NULL;
	uint64_t my_gen = 0;
	uint32_t qd = l->cfg.queue_depth;
	char path[4096];
	int err = -ENOMEM;

	done = calloc(qd, sizeof(*done));
	if (done)
		err = dlc_decoder_create(l->cfg.max_pixels, &dec);
	if (!err)
		dlc_decoder_set_budget(dec, l->cfg.max_scans,
				       l->cfg.decode_budget_ms);
	thread_up(l, err, "I/O thread");
	if (err) {
		free(done);
		return NULL;
	}

	pthread_mutex_lock(&l->lock);
	while (!l->stop) {
		int progressed = 0, ahead, n, lend, watch;
		uint64_t now;
		uint32_t cur_epoch;

		if (l->active && l->gen != my_gen) {
			uint32_t epoch = l->epoch, start = l->start;
			int ret = 0;

			my_gen = l->gen;
			if (l->ra)
				loader_readahead_rebase(l, epoch, l->start);
			pthread_mutex_unlock(&l->lock);
			ret = dlc_ct_prepare_epoch(l->ct, epoch);
			if (l->stage &&
			    dlc_stage_prepare_epoch(l->stage, epoch, start))
				dlc_logf(&l->log, DLC_LOG_WARN,
					 "staging: cannot take the order of epoch %u; nothing new is staged",
					 epoch);
			pthread_mutex_lock(&l->lock);
			if (ret) {
				dlc_logf(&l->log, DLC_LOG_ERROR,
					 "cache: cannot take the order of epoch %u: %s",
					 epoch, strerror(-ret));
				l->failed = ret;
				pthread_cond_broadcast(&l->ready_cv);
			}
		}

		cur_epoch = l->epoch;
		pthread_mutex_unlock(&l->lock);

		/* Issue: hits go straight to decode, misses to the reader. */
		if (dlc_ct_round(l->ct, cur_epoch, path, sizeof(path)))
			progressed = 1;
		ahead = loader_read_ahead(l, my_gen, path, sizeof(path));
		if (progressed || ahead)
			dlc_reader_submit(l->reader);
		track_busy(l);
		n = dlc_reader_reap(l->reader, done, qd, 0);
		if (n > 0) {
			loader_hand_over(l, done, n);
			track_busy(l);
			progressed = 1;
		}

		now = dlc_now_ns();
		loader_status_tick(l, now);
		pace_tick(l, now);
		pthread_mutex_lock(&l->lock);
		/* This cycle's round offered the forms a run's end waits on. */
		if (l->settling && (!l->forms || !l->forms->qlen))
			pthread_cond_broadcast(&l->ready_cv);
		/* What this cycle queued beyond our decoders: to the guests. */
		loader_guest_offer(l);
		/*
		 * The controller: decode is behind (more queued than the
		 * workers can take) while I/O has issued all it may, so this
		 * thread decodes one sample and then looks again.
		 */
		lend = l->qlen > l->ndecode &&
		       (dlc_reader_inflight(l->reader) >= qd ||
			(!loader_issuable(l) && !ahead));
		if (lend && loader_decode_next(l, dec)) {
			dlc_stat_add(l->stats.io_thread_decodes, 1);
			continue;
		}
		if (progressed || ahead || l->stop ||
		    (l->active && l->gen != my_gen) ||
		    dlc_ct_more(l->ct))
			continue;
		/*
		 * Nothing to do: sleep until a read completes or a wake, or,
		 * with GETs parked on other processes' fills, the module's fd
		 * says they are ready.
		 */
		l->io_idle = 1;
		/*
		 * The fd is watched also without GETs in flight: a drain
		 * (POLLHUP) wakes an idle loader, which then lets go of the
		 * module. Not after a failure under kernel_fallback fail:
		 * the hang-up would wake it at once, again and again.
		 */
		watch = l->failed ? -1 : dlc_ct_watch_fd(l->ct);
		pthread_mutex_unlock(&l->lock);
		if (watch >= 0)
			dlc_reader_watch(l->reader, watch);
		n = dlc_reader_reap(l->reader, done, qd, 1);
		if (n > 0) {
			loader_hand_over(l, done, n);
			track_busy(l);
		}
		pthread_mutex_lock(&l->lock);
		l->io_idle = 0;
	}
	pthread_mutex_unlock(&l->lock);
	dlc_decoder_destroy(dec);
	free(done);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Public API                                                          */

/* The threads' entry points: their last act says they are done with @l. */
static void *io_entry(void *arg)
{
	struct dlc_loader *l = arg;

	io_main(l);
	__atomic_add_fetch(&l->threads_returned, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *decode_entry(void *arg)
{
	struct dlc_loader *l = arg;

	decode_main(l);
	__atomic_add_fetch(&l->threads_returned, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Node sharing: a guest decode thread (guest.c runs it). */
static void *guest_entry(void *arg)
{
	struct dlc_loader *l = arg;
	struct dlc_decoder *dec = NULL;

	if (!decoder_up(l, &dec, "guest decode thread"))
		loader_guest_run(l, dec);
	dlc_decoder_destroy(dec);
	__atomic_add_fetch(&l->threads_returned, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void stop_threads(struct dlc_loader *l)
{
	uint32_t i, n = !!l->io_started + l->nthreads_started;

	pthread_mutex_lock(&l->lock);
	/* Read by the guests without l->lock (guest.c). */
	__atomic_store_n(&l->stop, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&l->work_cv);
	pthread_cond_broadcast(&l->ready_cv);
	loader_guests_home(l);
	pthread_mutex_unlock(&l->lock);
	if (l->reader)
		dlc_reader_wake(l->reader);
	if (l->io_started)
		dlc_join_bounded(l->io_thread, &l->threads_returned, n, &l->log);
	for (i = 0; i < l->nthreads_started; i++)
		dlc_join_bounded(l->decode_threads[i], &l->threads_returned, n,
				 &l->log);
	l->io_started = 0;
	l->nthreads_started = 0;
}

uint32_t dlc_loader_backend(const struct dlc_loader *l)
{
	return __atomic_load_n(&l->backend, __ATOMIC_RELAXED);
}

/*
 * The environment variable @var, when set, over *@mode: one of the names
 * @name() gives for 0 .. @last. Anything else is -EINVAL, logged.
 */
static int env_mode(struct dlc_loader *l, const char *var,
		    const char *(*name)(uint32_t), uint32_t last,
		    const char *want, uint32_t *mode)
{
	const char *env = getenv(var);
	uint32_t i;

	if (!env || !*env)
		return 0;
	for (i = 0; i <= last; i++)
		if (!strcmp(env, name(i))) {
			*mode = i;
			return 0;
		}
	dlc_logf(&l->log, DLC_LOG_ERROR, "invalid %s '%s': want %s", var, env,
		 want);
	return -EINVAL;
}

/*
 * DLCACHE_VERIFY over cfg.verify; then whether the index has checksums
 * at all (a format 1 index has none: say so where it matters).
 */
static int setup_verify(struct dlc_loader *l)
{
	uint32_t i, crc;

	l->verify = l->cfg.verify;
	if (env_mode(l, "DLCACHE_VERIFY", dlc_verify_name, DLC_VERIFY_ALL,
		     "kernel, off or all", &l->verify))
		return -EINVAL;
	if (l->verify == DLC_VERIFY_OFF)
		return 0;
	for (i = 0; i < l->n; i++)
		if (dlc_index_crc32c(l->idx, i, &crc) == 0)
			break;
	if (i == l->n) {
		dlc_logf(&l->log, l->backend == DLC_BACKEND_KERNEL ?
			 DLC_LOG_WARN : DLC_LOG_INFO,
			 "the index has no checksums (an older index file): samples are not verified; rebuild it (dlcachectl index) to verify them");
		l->verify = DLC_VERIFY_OFF;
		return 0;
	}
	l->crc_logged = calloc((size_t)l->n / 8 + 1, 1);
	return l->crc_logged ? 0 : -ENOMEM;
}

/* DLCACHE_KERNEL_FALLBACK over cfg.kernel_fallback. */
static int setup_fallback(struct dlc_loader *l)
{
	l->kernel_fallback = l->cfg.kernel_fallback;
	return env_mode(l, "DLCACHE_KERNEL_FALLBACK", dlc_kernel_fallback_name,
			DLC_KERNEL_FALLBACK_FAIL, "inprocess or fail",
			&l->kernel_fallback);
}

/* DLCACHE_VALIDATE over cfg.validate; ONCE's bitmap. */
static int setup_validate(struct dlc_loader *l)
{
	l->validate = l->cfg.validate;
	if (env_mode(l, "DLCACHE_VALIDATE", dlc_validate_name,
		     DLC_VALIDATE_OFF, "once, always or off", &l->validate))
		return -EINVAL;
	if (l->validate != DLC_VALIDATE_ONCE)
		return 0;
	l->checked = calloc((size_t)l->n / 8 + 1, 1);
	return l->checked ? 0 : -ENOMEM;
}


void loader_ring_summary(struct dlc_loader *l)
{
	int pinned = 1, huge = 2;
	uint32_t i;

	for (i = 0; i < l->cfg.nbatches; i++) {
		pinned &= l->slots[i].mem.locked;
		if (l->slots[i].mem.huge < huge)
			huge = l->slots[i].mem.huge;
	}
	__atomic_store_n(&l->pinned, pinned, __ATOMIC_RELAXED);
	__atomic_store_n(&l->huge, huge, __ATOMIC_RELAXED);
}

/* A buffer of its own for every slot; one warning, one line of INFO. */
static int ring_alloc(struct dlc_loader *l)
{
	size_t unpinned = 0;
	uint32_t i;
	int ret, err = 0;

	for (i = 0; i < l->cfg.nbatches; i++) {
		struct batch_slot *s = &l->slots[i];

		ret = dlc_pinned_alloc(l->slot_bytes, NULL, &s->mem);
		if (ret) {
			dlc_logf(&l->log, DLC_LOG_ERROR,
				 "cannot map %zu MiB for batch buffer %u of %u",
				 l->slot_bytes >> 20, i + 1, l->cfg.nbatches);
			return ret;
		}
		s->b.data = s->mem.base;
		if (!s->mem.locked) {
			unpinned += s->mem.bytes;
			err = s->mem.lock_err;
		}
	}
	if (unpinned)
		dlc_pinned_warn(&l->log, unpinned, err);
	loader_ring_summary(l);
	dlc_logf(&l->log, DLC_LOG_INFO, "batch ring: %u x %zu MiB, %s, %s",
		 l->cfg.nbatches, l->slots[0].mem.bytes >> 20,
		 l->pinned ? "pinned" : unpinned < l->slots[0].mem.bytes *
		 l->cfg.nbatches ? "partly pinned" : "not pinned",
		 l->huge == 2 ? "hugetlb pages" :
		 l->huge ? "transparent huge pages advised" : "small pages");
	return 0;
}

/*
 * The read-ahead's budget: the configured one, or the default lowered to
 * 1/32 of the memory this process may use, so that eight loaders in a
 * small job's memory cgroup keep to a quarter of it.
 */
static uint64_t readahead_budget(const struct dlc_config *c)
{
	uint64_t lim;

	if (c->readahead_bytes == DLC_READAHEAD_OFF)
		return 0;
	if (c->readahead_bytes)
		return c->readahead_bytes;
	lim = dlc_mem_limit("/proc/self/cgroup", "/sys/fs/cgroup") / 32;
	return lim && lim < DLC_READAHEAD_DEFAULT ? lim : DLC_READAHEAD_DEFAULT;
}

/* The least a read-ahead sized online may hold (rasize.h). */
#define RASIZE_FLOOR	(4ULL << 20)

/*
 * The read-ahead table spans what the read-ahead can reach: the rest of
 * this epoch and all of the next (2 x epoch_len), past the window of
 * claims still in flight, at most 64 Ki positions.
 */
static int readahead_setup(struct dlc_loader *l)
{
	uint64_t budget = readahead_budget(&l->cfg);
	uint64_t span = 2ULL * l->epoch_len + l->cfg.window;
	int ret;

	__atomic_store_n(&l->stats.readahead_budget, budget, __ATOMIC_RELAXED);
	l->ra_order_epoch = -1;
	if (!budget)
		return 0;
	l->ra_order = malloc(sizeof(*l->ra_order) * l->epoch_len);
	l->last_pos = malloc(sizeof(*l->last_pos) * l->n);
	if (!l->ra_order || !l->last_pos)
		return -ENOMEM;
	ret = dlc_ra_create(span < 65536 ? (uint32_t)span : 65536, budget,
			    &l->ra);
	if (ret)
		return ret;
	/* The library's budget is a ceiling, sized online; a set one is kept. */
	l->rasize_on = !l->cfg.readahead_bytes;
	if (l->rasize_on) {
		uint64_t mean = (dlc_index_total_bytes(l->idx) / l->n + 4095) &
				~4095ULL;

		dlc_rasize_init(&l->rasize,
				mean * l->cfg.queue_depth > RASIZE_FLOOR ?
				mean * l->cfg.queue_depth : RASIZE_FLOOR,
				budget);
		l->rasize_said = budget;
	}
	dlc_logf(&l->log, DLC_LOG_INFO, "read-ahead: %llu MiB%s",
		 (unsigned long long)(budget >> 20),
		 l->rasize_on ? " at most, sized online" : "");
	return 0;
}

/*
 * The staging tier, when configured: a failure to open it fails the
 * loader, as the caller asked for it. The stager reads from the origin
 * only beyond the positions the pipeline reads itself: its window and
 * the read-ahead's reach.
 */
static int staging_setup(struct dlc_loader *l)
{
	struct dlc_stage_opts o = {
		.budget = l->cfg.staging_bytes, .idx = l->idx, .src = l->src,
		.log = &l->log, .epoch_len = l->epoch_len,
		.epochs = l->cfg.epochs, .max_file_bytes = l->cfg.max_file_bytes,
		.fill_order = loader_fill_order, .order_arg = l,
	};
	uint64_t lead = l->cfg.window;
	struct dlc_tier t;
	int ret;

	if (!l->cfg.staging_dir)
		return 0;
	l->staging_dir = strdup(l->cfg.staging_dir);
	if (!l->staging_dir)
		return -ENOMEM;
	l->cfg.staging_dir = l->staging_dir;
	o.dir = l->staging_dir;
	if (l->ra)
		lead += dlc_ra_slots(l->ra);
	o.lead = lead < l->epoch_len ? (uint32_t)lead : l->epoch_len;
	ret = dlc_stage_open(&o, &l->stage);
	if (ret)
		return ret;
	dlc_stage_tier(l->stage, &t);
	return dlc_source_add_tier(l->src, &t);
}

/* dlc_peer_prepare's: the epoch of the use a read tagged @tag is for. */
static int prepare_epoch_of(void *arg, uint64_t tag, uint32_t *epoch)
{
	const struct dlc_loader *l = arg;
	uint64_t e;

	if (!(tag & DLC_RA_TAG_BIT)) {
		/* A claim's: a run waits for its claims before the next. */
		*epoch = __atomic_load_n(&l->epoch, __ATOMIC_RELAXED);
		return 0;
	}
	e = DLC_RA_TAG_G(tag) / l->epoch_len;
	if (e > UINT32_MAX)
		return -ENOENT;
	*epoch = (uint32_t)e;
	return 0;
}

/*
 * What decides a sample's pixels, which every rank must have alike: the
 * transform, layout and seed, and the limits that refuse a file (a
 * sample one rank would skip is never prepared by another).
 */
static uint64_t prepare_fingerprint(const struct dlc_loader *l)
{
	const struct dlc_transform *t = &l->cfg.transform;
	struct dlc_sip s;
	uint64_t h[2];

	dlc_sip_init(&s, DLC_SIP_K0, DLC_SIP_K1);
	dlc_sip_update(&s, "dlcache-prepared-v1", 19);
	dlc_sip_u32(&s, t->kind);
	dlc_sip_u32(&s, t->out_w);
	dlc_sip_u32(&s, t->out_h);
	dlc_sip_u32(&s, t->resize);
	dlc_sip_update(&s, &t->scale_min, sizeof(t->scale_min));
	dlc_sip_update(&s, &t->scale_max, sizeof(t->scale_max));
	dlc_sip_update(&s, &t->ratio_min, sizeof(t->ratio_min));
	dlc_sip_update(&s, &t->ratio_max, sizeof(t->ratio_max));
	dlc_sip_u32(&s, t->hflip);
	dlc_sip_u32(&s, t->flags);
	dlc_sip_u32(&s, l->cfg.layout);
	dlc_sip_u64(&s, l->cfg.seed);
	dlc_sip_u64(&s, l->cfg.max_pixels);
	dlc_sip_u32(&s, l->cfg.max_scans);
	dlc_sip_final(&s, h);
	return h[0] | 1;
}

/*
 * Prepared answers (tier/peer_prepare.c), with DLCACHE_CLUSTER_PREPARE=1:
 * a decoder of their own for the tier's thread, which decodes as this
 * loader's decoders do. 0, or -ENOMEM.
 */
static int prepare_setup(struct dlc_loader *l, struct dlc_peer_prepare *pp)
{
	const char *env = getenv("DLCACHE_CLUSTER_PREPARE");
	int ret;

	if (!env || strcmp(env, "1"))
		return 0;
	ret = dlc_decoder_create(l->cfg.max_pixels, &l->prepare_dec);
	if (ret)
		return ret;
	dlc_decoder_set_budget(l->prepare_dec, l->cfg.max_scans,
			       l->cfg.decode_budget_ms);
	*pp = (struct dlc_peer_prepare){
		.arg = l, .dec = l->prepare_dec,
		.out_bytes = (uint32_t)l->sample_bytes,
		.fingerprint = prepare_fingerprint(l),
		.epoch_of = prepare_epoch_of, .prepare = loader_prepare_sample,
	};
	return 1;
}

/*
 * Cluster mode: the peer tier after the staging tier (local disk is
 * cheaper than a link), its share the in-process cache's bytes.
 */
static int cluster_setup(struct dlc_loader *l)
{
	struct dlc_peer_prepare pp;
	struct dlc_peer_opts o = {
		.idx = l->idx, .log = &l->log, .rank = l->cfg.rank,
		.world = l->cfg.world, .capacity = l->cfg.cache_bytes,
		.timeout_ms = l->cfg.peer_timeout_ms,
		.queue_depth = l->cfg.queue_depth,
		.seed = l->cfg.seed, .shuffle = l->cfg.shuffle,
		.drop_last = l->cfg.drop_last,
		.shard_drop_last = l->cfg.shard_drop_last,
	};
	struct dlc_tier t;
	int ret;

	if (!l->cfg.cluster)
		return 0;
	ret = prepare_setup(l, &pp);
	if (ret < 0)
		return ret;
	if (ret)
		o.prepare = &pp;
	ret = dlc_peer_open(&o, &l->peer);
	if (ret)
		return ret;
	l->stats.cluster_capacity = l->cfg.cache_bytes;
	dlc_peer_tier(l->peer, &t);
	return dlc_source_add_tier(l->src, &t);
}

void dlc_loader_destroy(struct dlc_loader *l)
{
	uint32_t i;

	if (!l)
		return;
	/* No blocking read of a thread waits on the storage any more. */
	dlc_source_cancel(l->src);
	stop_threads(l);
	/* After the I/O thread, its writer. */
	dlc_status_close(l->status);
	loader_node_leave(l);
	/* Samples still queued hold buffer references. */
	for (i = 0; i < l->qlen; i++)
		dlc_buf_put(l->queue[(l->qhead + i) % l->cfg.window].buf);
	/* Requests to peers wait as reads of eventfds: end them. */
	dlc_peer_cancel(l->peer);
	dlc_reader_destroy(l->reader);
	/* After the reader: its reads in flight were reaped and put. */
	dlc_ra_destroy(l->ra);
	free(l->ra_order);
	free(l->last_pos);
	dlc_cache_tier_close(l->ct);
	/* Before the source: the stager reads the origin through it. */
	dlc_stage_close(l->stage);
	free(l->staging_dir);
	/* Says goodbye, and answers the peers until they said theirs. */
	dlc_peer_close(l->peer);
	/* Its prepare thread was joined: the decoder it used is free. */
	dlc_decoder_destroy(l->prepare_dec);
	dlc_source_close(l->src);
	/* Nothing of ours is in flight now: give the idle blocks back. */
	dlc_buf_pool_trim();
	if (l->slots)
		for (i = 0; i < l->cfg.nbatches; i++) {
			free(l->slots[i].skip);
			free(l->slots[i].b.labels);
			free(l->slots[i].b.ids);
			/* The ring's buffers only: kept ones are the caller's. */
			dlc_pinned_free(&l->slots[i].mem);
		}
	free(l->slots);
	free(l->handles);
	free(l->queue);
	free(l->order);
	free(l->decode_threads);
	free(l->crc_logged);
	free(l->checked);
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->work_cv);
	pthread_cond_destroy(&l->ready_cv);
	pthread_cond_destroy(&l->idle_cv);
	free(l);
}

/* This loader's status file (status.h), best effort: l->status or NULL. */
static void status_setup(struct dlc_loader *l)
{
	struct dlc_status_info *info = calloc(1, sizeof(*info));

	if (!info)
		return;
	info->uid = (uint32_t)geteuid();
	info->pid = (uint32_t)getpid();
	info->start = dlc_proc_start(info->pid);
	info->created_ns = dlc_now_ns();
	info->backend = dlc_loader_backend(l);
	info->decode_threads = l->ndecode;
	info->queue_depth = l->cfg.queue_depth;
	info->batch_size = l->cfg.batch_size;
	info->rank = l->cfg.rank;
	info->world = l->cfg.world;
	info->cluster = !!l->peer;
	snprintf(info->source, sizeof(info->source), "%s",
		 dlc_index_root(l->idx));
	l->status = dlc_status_open(info, &l->log);
	free(info);
}

/* The batch slots' per-sample arrays and their shape. 0 or -ENOMEM. */
static int slots_setup(struct dlc_loader *l)
{
	const struct dlc_config *cfg = &l->cfg;
	uint32_t i;

	for (i = 0; i < cfg->nbatches; i++) {
		struct batch_slot *s = &l->slots[i];

		s->b.labels = calloc(cfg->batch_size, sizeof(*s->b.labels));
		s->b.ids = calloc(cfg->batch_size, sizeof(*s->b.ids));
		s->skip = calloc(cfg->batch_size, 1);
		s->b.layout = cfg->layout;
		s->b.out_w = cfg->transform.out_w;
		s->b.out_h = cfg->transform.out_h;
		if (!s->b.labels || !s->b.ids || !s->skip)
			return -ENOMEM;
	}
	return 0;
}

/*
 * The io_uring reader, with NVMe passthrough where the source is a pack
 * on a namespace and io_uring has it. 0 or -errno, logged.
 */
static int reader_setup(struct dlc_loader *l)
{
	const struct dlc_config *cfg = &l->cfg;
	struct dlc_reader_opts ro = { 0 };
	int ret;

	ro.queue_depth = cfg->queue_depth;
	ro.direct = cfg->direct_io;
	ro.max_read_bytes = cfg->max_read_bytes;
	ro.max_file_bytes = cfg->max_file_bytes;
	ro.slot_bytes = 256 << 10;
	ro.log = &l->log;
	ro.stats = &l->stats;
	ro.read_timeout_ms = cfg->read_timeout_ms ? cfg->read_timeout_ms :
			     DLC_READ_TIMEOUT_DEFAULT_MS;
	if (cfg->nvme_passthru == DLC_PASSTHRU_AUTO)
		ro.passthru = (uint32_t)dlc_source_passthru(l->src, &l->log);
	ret = dlc_reader_create(&ro, &l->reader);
	if (ret && ro.passthru) {
		/* io_uring before 5.19 has no 128-byte SQEs. */
		dlc_source_passthru_off(l->src, "io_uring without 128-byte SQEs");
		ro.passthru = 0;
		ret = dlc_reader_create(&ro, &l->reader);
	}
	if (ret)
		dlc_logf(&l->log, DLC_LOG_ERROR, "io_uring setup failed: %s",
			 strerror(-ret));
	return ret;
}

/*
 * Start the I/O thread and the decode threads, and wait until every one
 * is set up: a loader fails at create rather than hang later. 0 or
 * -errno, logged; dlc_loader_destroy() ends what started.
 */
static int threads_start(struct dlc_loader *l)
{
	uint32_t i;
	int ret;

	ret = pthread_create(&l->io_thread, NULL, io_entry, l);
	if (ret) {
		dlc_logf(&l->log, DLC_LOG_ERROR, "cannot start the I/O thread: %s",
			 strerror(ret));
		return -ret;
	}
	l->io_started = 1;
	for (i = 0; i < l->ndecode; i++) {
		ret = pthread_create(&l->decode_threads[i], NULL, decode_entry,
				     l);
		if (ret) {
			dlc_logf(&l->log, DLC_LOG_ERROR,
				 "cannot start decode thread %u of %u: %s", i + 1,
				 l->ndecode, strerror(ret));
			return -ret;
		}
		l->nthreads_started++;
	}
	for (i = 0; i < l->nguest; i++) {
		ret = pthread_create(&l->decode_threads[l->ndecode + i], NULL,
				     guest_entry, l);
		if (ret) {
			dlc_logf(&l->log, DLC_LOG_ERROR,
				 "cannot start guest decode thread %u of %u: %s",
				 i + 1, l->nguest, strerror(ret));
			return -ret;
		}
		l->nthreads_started++;
	}
	pthread_mutex_lock(&l->lock);
	while (l->threads_up < 1 + l->nthreads_started)
		pthread_cond_wait(&l->idle_cv, &l->lock);
	ret = l->thread_err;
	pthread_mutex_unlock(&l->lock);
	return ret;
}

int dlc_loader_create(const struct dlc_config *ucfg,
		      const struct dlc_index *idx, struct dlc_loader **out)
{
	struct dlc_logger log = { 0 };
	struct dlc_order_params op = { 0 };
	struct dlc_config cfgbuf, *cfg = &cfgbuf;
	struct dlc_loader *l;
	pthread_condattr_t ca;
	char what[256];
	int ret;

	if (!ucfg || !idx || !out)
		return -EINVAL;
	*out = NULL;
	/* The log fields are there unless the size says they are not. */
	if (ucfg->size == 0 || ucfg->size >= DLC_CONFIG_SIZE_VER0) {
		log.fn = ucfg->log;
		log.arg = ucfg->log_arg;
		log.level = ucfg->log_level;
	}
	ret = dlc_config_take(ucfg, cfg, &log);
	if (!ret)
		ret = dlc_config_check(cfg, &log);
	if (ret)
		return ret;
	if (dlc_index_count(idx) == 0) {
		dlc_logf(&log, DLC_LOG_ERROR, "invalid data set: it holds no samples");
		return -EINVAL;
	}
	op.world = cfg->world;
	op.rank = cfg->rank;
	op.drop_last = cfg->shard_drop_last;
	if (dlc_order_len(dlc_index_count(idx), &op) == 0) {
		dlc_logf(&log, DLC_LOG_ERROR,
			 "invalid config: world: %u ranks leave no samples for rank %u of %u samples",
			 cfg->world, cfg->rank, dlc_index_count(idx));
		return -EINVAL;
	}

	/* A form serves the exact transform's pixels: so must every decode. */
	if (cfg->forms)
		cfg->transform.flags |= DLC_TRANSFORM_F_EXACT;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->cfg = *cfg;
	l->log = log;
	l->idx = idx;
	l->n = dlc_index_count(idx);
	l->epoch_len = dlc_order_len(l->n, &op);
	l->sample_bytes = (size_t)3 * cfg->transform.out_w * cfg->transform.out_h;
	l->consumer_waited = 1;
	l->ndecode = cfg->decode_threads ? cfg->decode_threads :
		     dlc_default_decode_threads();
	pthread_mutex_init(&l->lock, NULL);
	/*
	 * Timed waits against CLOCK_MONOTONIC: decoders until a guest's
	 * claim is due (guest.h), dlc_next_batch_timeout().
	 */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->work_cv, &ca);
	pthread_cond_init(&l->ready_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&l->idle_cv, NULL);

	ret = -ENOMEM;
	l->order = malloc(sizeof(*l->order) * l->epoch_len);
	l->queue = calloc(cfg->window, sizeof(*l->queue));
	l->slots = calloc(cfg->nbatches, sizeof(*l->slots));
	l->handles = calloc(DLC_HANDLES, sizeof(*l->handles));
	if (!l->order || !l->queue || !l->slots || !l->handles)
		goto err;
	ret = loader_node_setup(l);
	if (ret)
		goto err;
	ret = -ENOMEM;
	l->decode_threads = calloc(l->ndecode + l->nguest,
				   sizeof(*l->decode_threads));
	if (!l->decode_threads)
		goto err;

	l->slot_bytes = l->sample_bytes * cfg->batch_size;
	ret = ring_alloc(l);
	if (ret)
		goto err;
	ret = slots_setup(l);
	if (ret)
		goto err;

	ret = dlc_source_open(idx, cfg->direct_io, &l->src);
	if (ret) {
		dlc_logf(&l->log, DLC_LOG_ERROR, "data set %s: %s",
			 dlc_index_root(idx), strerror(-ret));
		goto err;
	}
	/* Before the stager starts: it reads through dlc_source_read(). */
	dlc_source_set_timeout(l->src, cfg->read_timeout_ms ?
			       cfg->read_timeout_ms :
			       DLC_READ_TIMEOUT_DEFAULT_MS, &l->log);
	ret = dlc_cache_tier_open(l, &l->ct);
	if (!ret)
		ret = setup_fallback(l);
	if (!ret)
		ret = setup_verify(l);
	if (!ret)
		ret = setup_validate(l);
	if (ret)
		goto err;

	ret = readahead_setup(l);
	if (!ret)
		ret = staging_setup(l);
	if (!ret)
		ret = cluster_setup(l);
	if (ret)
		goto err;

	ret = reader_setup(l);
	if (ret)
		goto err;

	l->ct->ops->describe(l->ct, what, sizeof(what));
	dlc_logf(&l->log, DLC_LOG_INFO, "%s; %u decode threads + 1 I/O thread",
		 what, l->ndecode);
	if (cfg->forms && !l->forms)
		dlc_logf(&l->log, DLC_LOG_INFO,
			 "forms: this cache keeps no decoded forms (cluster mode, or dlcache.ko without DLCACHE_FEAT_FORMS); encoded bytes only, the exact pixels all the same");

	status_setup(l);
	ret = threads_start(l);
	if (ret)
		goto err;
	*out = l;
	return 0;
err:
	dlc_loader_destroy(l);
	return ret;
}

/*
 * Start a run of @epoch from position @start to @end (start_epoch:
 * @resumed 0; resume_epoch: 1, its rest of @rs_len positions after
 * @done), once the epoch in progress has wound down.
 */
static int loader_start_run(struct dlc_loader *l, uint32_t epoch,
			    uint32_t start, uint32_t end, int resumed,
			    uint64_t done, uint32_t rs_len)
{
	uint32_t i, b = l->cfg.batch_size;
	int ret;

	pthread_mutex_lock(&l->lock);
	/* Wind down the epoch in progress. */
	l->active = 0;
	while (l->qlen) {
		loader_item_no_form(l, &l->queue[l->qhead]);
		loader_drop_sample(l, l->queue[l->qhead].buf);
		l->qhead = (l->qhead + 1) % l->cfg.window;
		l->qlen--;
	}
	while (l->outstanding && !l->stop)
		pthread_cond_wait(&l->idle_cv, &l->lock);

	/* The tiers read rs_epoch1 first: it goes last (loader_int.h). */
	__atomic_store_n(&l->rs_epoch1, 0, __ATOMIC_RELEASE);
	if (resumed) {
		__atomic_store_n(&l->rs_done, done, __ATOMIC_RELAXED);
		__atomic_store_n(&l->rs_len, rs_len, __ATOMIC_RELAXED);
		__atomic_store_n(&l->rs_epoch1, epoch + 1, __ATOMIC_RELEASE);
	}
	ret = loader_fill_order(l, epoch, l->order, l->epoch_len);
	if (ret) {
		__atomic_store_n(&l->rs_epoch1, 0, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&l->lock);
		return ret;
	}
	/*
	 * Batches the consumer holds stay valid: their slots stay HELD until
	 * released, and the run's first batch takes the slot after the last
	 * one handed out, so that those come last in the run's turn.
	 */
	for (i = 0; i < l->cfg.nbatches; i++)
		if (l->slots[i].state != SLOT_HELD)
			l->slots[i].state = SLOT_FREE;
	l->slot0 = loader_slot_of(l, l->next_local);
	l->gen++;
	/* Atomic: the peer tier reads it without the lock (epoch_of). */
	__atomic_store_n(&l->epoch, epoch, __ATOMIC_RELAXED);
	l->start = start;
	l->end = end;
	l->next_pos = start;
	dlc_ct_epoch_start(l->ct, start);
	l->nbatches_run = (end - start + b - 1) / b;
	l->base_seq = start / b;
	l->next_local = 0;
	l->failed = 0;
	l->active = 1;
	l->io_idle = 0;
	pthread_mutex_unlock(&l->lock);
	dlc_reader_wake(l->reader);
	return 0;
}

int dlc_loader_start_epoch(struct dlc_loader *l, uint32_t epoch,
			   uint32_t start)
{
	uint32_t end = dlc_loader_epoch_samples(l), b = l->cfg.batch_size;

	if (epoch == UINT32_MAX) {
		dlc_logf(&l->log, DLC_LOG_ERROR,
			 "start epoch: epoch %u is out of range", epoch);
		return -EINVAL;
	}
	if (start % b) {
		dlc_logf(&l->log, DLC_LOG_ERROR,
			 "start epoch %u: start %u is not on the batch grid (a multiple of batch_size %u): resume at k * %u after k batches",
			 epoch, start, b, b);
		return -EINVAL;
	}
	if (start > end) {
		dlc_logf(&l->log, DLC_LOG_ERROR,
			 "start epoch %u: start %u is past the epoch's %u samples",
			 epoch, start, end);
		return -EINVAL;
	}
	return loader_start_run(l, epoch, start, end, 0, 0, 0);
}

int dlc_loader_resume_epoch(struct dlc_loader *l, uint32_t epoch,
			    uint64_t done)
{
	struct dlc_order_params op = loader_order_params(l, epoch);
	uint32_t rs_len;

	/* The next epoch's head fills the positions past the rest. */
	if (epoch >= UINT32_MAX - 1) {
		dlc_logf(&l->log, DLC_LOG_ERROR,
			 "resume epoch: epoch %u is out of range", epoch);
		return -EINVAL;
	}
	if (done > l->n)
		done = l->n;
	if (dlc_order_rest_len(l->n, &op, done, &rs_len) ||
	    rs_len > l->epoch_len) {
		dlc_logf(&l->log, DLC_LOG_ERROR,
			 "resume epoch %u after %llu samples: no share of the rest for rank %u of %u",
			 epoch, (unsigned long long)done, l->cfg.rank,
			 l->cfg.world);
		return -EINVAL;
	}
	return loader_start_run(l, epoch, 0, loader_run_len(l, rs_len), 1, done,
				rs_len);
}

uint32_t dlc_loader_epoch_samples(const struct dlc_loader *l)
{
	return loader_run_len(l, l->epoch_len);
}

uint32_t dlc_loader_epoch_batches(const struct dlc_loader *l)
{
	uint32_t b = l->cfg.batch_size;

	return l->cfg.drop_last ? l->epoch_len / b : (l->epoch_len + b - 1) / b;
}

uint32_t dlc_loader_decode_threads(const struct dlc_loader *l)
{
	return l->ndecode;
}

int dlc_loader_pinned(const struct dlc_loader *l)
{
	return __atomic_load_n(&l->pinned, __ATOMIC_RELAXED);
}

int dlc_loader_hugepages(const struct dlc_loader *l)
{
	return __atomic_load_n(&l->huge, __ATOMIC_RELAXED);
}

int dlc_loader_last_error(struct dlc_loader *l, struct dlc_error_info *out)
{
	int ret = -ENOENT;

	pthread_mutex_lock(&l->lock);
	if (l->have_err) {
		*out = l->last_err;
		ret = 0;
	}
	pthread_mutex_unlock(&l->lock);
	return ret;
}

int dlc_loader_stats(struct dlc_loader *l, struct dlc_stats *out, size_t size)
{
	const uint64_t *src = (const uint64_t *)&l->stats;
	struct dlc_stats st;
	uint64_t *dst = (uint64_t *)&st;
	size_t i;

	if (!out || !size || size % sizeof(uint64_t))
		return -EINVAL;
	for (i = 0; i < sizeof(st) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	/* l->lock: the I/O thread closes kc on a fallback under it. */
	pthread_mutex_lock(&l->lock);
	/* The busy span open now counts to now. */
	st.io_busy_ns = l->stats.io_busy_ns;
	if (l->busy_since)
		st.io_busy_ns += dlc_now_ns() - l->busy_since;
	if (l->ct)
		dlc_ct_stats(l->ct, &st);
	pthread_mutex_unlock(&l->lock);
	if (l->stage) {
		struct dlc_stage_counters sc;

		dlc_stage_counters(l->stage, &sc);
		st.staging_hits = sc.hits;
		st.staging_hit_bytes = sc.hit_bytes;
		st.staging_writes = sc.writes;
		st.staging_prefetched = sc.prefetched;
		st.staging_prefetch_bytes = sc.prefetch_bytes;
		st.staging_evictions = sc.evictions;
		st.staging_invalid = sc.invalid;
		st.staging_used = sc.used;
		st.staging_budget = sc.budget;
	}
	if (l->peer) {
		struct dlc_peer_counters pc;

		dlc_peer_counters(l->peer, &pc);
		st.cluster_local_hits = pc.local_hits;
		st.cluster_local_bytes = pc.local_bytes;
		st.cluster_peer_hits = pc.peer_hits;
		st.cluster_peer_bytes = pc.peer_bytes;
		st.cluster_peer_misses = pc.peer_misses;
		st.cluster_peer_failures = pc.peer_failures;
		st.cluster_peer_busy = pc.peer_busy;
		st.cluster_served = pc.served;
		st.cluster_served_hits = pc.served_hits;
		st.cluster_served_bytes = pc.served_bytes;
		st.cluster_pushed = pc.pushed;
		st.cluster_pushed_bytes = pc.pushed_bytes;
		st.cluster_admitted = pc.admitted;
		st.cluster_used = pc.used;
		st.cluster_capacity = pc.capacity;
		st.cluster_dead_peers = pc.dead_peers;
		st.cluster_peer_diverted = pc.peer_diverted;
		st.cluster_backup_asked = pc.backup_asked;
		st.cluster_backup_hits = pc.backup_hits;
		st.cluster_backup_used = pc.backup_used;
		st.cluster_prepared = pc.prepared_in;
		st.cluster_prepared_served = pc.prepared_out;
		st.cluster_prepare_late = pc.prepare_late;
	}
	/* A newer caller's counters we do not know read as zero. */
	memcpy(out, &st, size < sizeof(st) ? size : sizeof(st));
	if (size > sizeof(st))
		memset((uint8_t *)out + sizeof(st), 0, size - sizeof(st));
	return 0;
}
