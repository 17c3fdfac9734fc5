// SPDX-License-Identifier: MIT
/*
 * Guest decode threads (dlc_config.node_group): this loader's decoders
 * that run on the CPUs of the group's other loaders, at SCHED_IDLE, so
 * that they use only the time those CPUs' owners leave idle. They take
 * a queued sample only when there are more than the loader's own waiting
 * decoders will take (loader_push_item() wakes them then), and decode it
 * into its batch slot as any decode thread does: the batches are the
 * same.
 *
 * A guest takes the queue's last sample, the one needed latest, where the
 * loader's own threads take the first: a SCHED_IDLE thread can be held
 * off its CPU while the owner runs (it still gets the fair scheduler's
 * smallest share, so a sample it took always ends), and the sample it
 * holds then has the whole window's time before its batch is due.
 *
 * It need not end soon, though: beside a CPU hog a guest gets well under
 * 1 % of the CPU, and a 5-ms decode takes seconds. So a guest decodes
 * into a buffer of its own, and holds its sample as a claim: a decoder of
 * the loader's own with nothing queued reclaims a claim held past its
 * due time (GUEST_RECLAIM_NS more than twice the mean of the loader's
 * own decodes) and decodes the sample itself, into its slot. The guest
 * copies its pixels into the slot only if the claim is still its own when
 * it ends, and otherwise drops them: a slot never gets a late guest's
 * pixels, nor a sample counted twice. A sample that fails to decode goes
 * back to the head of the queue, for the owner's threads to decode again
 * and to handle as dlc_config.on_error says, with its messages.
 *
 * A guest that took far longer in wall time than in CPU time, or whose
 * claim was reclaimed, was starved, and stays out for GUEST_BACKOFF_NS,
 * doubled while it goes on being starved, up to GUEST_BACKOFF_MAX_NS.
 * The CPUs it may borrow are looked up again every GUEST_REFRESH_NS
 * (every GUEST_LOOK_NS while there are none): a loader joining or
 * leaving the group, or dying, changes them.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "guest.h"
#include "internal.h"
#include "loader_int.h"
#include "nodeshare.h"

/* Look-ups of the group: with CPUs to borrow, and while there are none. */
#define GUEST_REFRESH_NS	(1000ULL * 1000000ULL)
#define GUEST_LOOK_NS		(200ULL * 1000000ULL)
/*
 * Starved: a decode took over 8 times its CPU time and GUEST_STARVED_NS
 * more. The owner's own bursts (its loader refilling its ring, tens of
 * ms) are not that; a CPU hog beside the owner is.
 */
#define GUEST_STARVED_NS	(100ULL * 1000000ULL)
#define GUEST_BACKOFF_NS	(250ULL * 1000000ULL)
#define GUEST_BACKOFF_MAX_NS	(4000ULL * 1000000ULL)
/* A claim is due this long past twice the loader's mean decode. */
#define GUEST_RECLAIM_NS	(20ULL * 1000000ULL)

enum guest_claim_state {
	CLAIM_FREE,		/* no guest holds it */
	CLAIM_IDLE,		/* its guest holds no sample */
	CLAIM_HELD,		/* its guest decodes @it */
	CLAIM_COMMITTING,	/* its guest copies @it's pixels into the slot */
	CLAIM_RECLAIMED,	/* a decoder of ours took @it over */
};

/*
 * A guest's sample. All of it under l->lock; @it, @epoch and @gen are
 * written by the guest when it takes the sample (CLAIM_HELD), read by
 * it and by the decoder that reclaims it. The state's transitions: the
 * guest's, but HELD to RECLAIMED, the reclaiming decoder's.
 */
struct guest_claim {
	struct decode_item it;
	uint64_t since;		/* dlc_now_ns() when taken */
	uint64_t gen;		/* l->gen then */
	uint32_t epoch;		/* l->epoch then */
	uint32_t state;		/* enum guest_claim_state */
	/*
	 * Its guest's thread ID while the claim is bound (not CLAIM_FREE):
	 * the guest clears both under l->lock before it returns, so one
	 * read under the lock names a live thread (loader_guests_home()).
	 */
	pid_t tid;
};

int loader_node_setup(struct dlc_loader *l)
{
	cpu_set_t mine;
	int ret;

	if (!l->cfg.node_group)
		return 0;
	if (sched_getaffinity(0, sizeof(mine), &mine)) {
		dlc_logf(&l->log, DLC_LOG_WARN, "node sharing: cannot read this thread's CPUs: %s; not used",
			 strerror(errno));
		l->cfg.node_group = NULL;
		return 0;
	}
	l->home = mine;
	ret = dlc_node_join(l->cfg.node_group, &mine, &l->log, &l->node);
	/* The string was the caller's: not kept past create. */
	l->cfg.node_group = NULL;
	if (ret == -ENOMEM)
		return ret;
	if (ret)
		return 0;	/* said by dlc_node_join(); no sharing */
	l->claims = calloc(l->ndecode, sizeof(*l->claims));
	if (!l->claims) {
		loader_node_leave(l);
		return -ENOMEM;
	}
	l->nguest = l->ndecode;
	dlc_logf(&l->log, DLC_LOG_INFO,
		 "node sharing: %s, up to %u guest decode threads on the group's other CPUs",
		 dlc_node_path(l->node), l->nguest);
	return 0;
}

/* Called with l->lock held. */
void loader_guests_home(struct dlc_loader *l)
{
	uint32_t i;

	for (i = 0; l->claims && i < l->nguest; i++)
		if (l->claims[i].state != CLAIM_FREE)
			sched_setaffinity(l->claims[i].tid, sizeof(l->home),
					  &l->home);
}

void loader_node_leave(struct dlc_loader *l)
{
	dlc_node_leave(l->node);
	l->node = NULL;
	free(l->claims);
	l->claims = NULL;
}

/*
 * Called without l->lock: the CPUs to run on now, set as this thread's
 * affinity when they changed. How many (0: none to borrow, stay out).
 */
static int guest_refresh(struct dlc_loader *l, cpu_set_t *have, int *said)
{
	cpu_set_t want;
	int n = dlc_node_borrowable(l->node, &want);

	if (n && !CPU_EQUAL(&want, have)) {
		int err = pthread_setaffinity_np(pthread_self(), sizeof(want),
						 &want);

		if (err) {
			/* A cpuset that does not hold them: borrow nothing. */
			if (!(*said)++)
				dlc_logf(&l->log, DLC_LOG_INFO,
					 "node sharing: a guest cannot run on the group's other CPUs: %s",
					 strerror(err));
			return 0;
		}
		*have = want;
	}
	return n;
}

/*
 * Called with l->lock held: may a guest take the queue's last sample?
 * Not one that a decoder of ours, waiting, is about to take, not one of
 * the batch needed soonest of those queued (a starved guest must not
 * hold that), and not a failed read: the owner's threads report those.
 */
static int guest_may_take(const struct dlc_loader *l)
{
	const struct decode_item *last;
	uint32_t w = l->cfg.window;

	if (l->qlen <= l->decoders_waiting || l->stop)
		return 0;
	last = &l->queue[(l->qhead + l->qlen - 1) % w];
	return last->slot != l->queue[l->qhead].slot && last->buf;
}

/*
 * Called with l->lock held, which it drops while copying: the guest's
 * decode of @c's sample into @pixels ended with @ret. Lands it in its
 * slot, hands a failure back to the owner's threads, or drops what a
 * decoder of ours reclaimed. Returns 0 when it was reclaimed.
 */
static int guest_settle(struct dlc_loader *l, struct guest_claim *c,
			int ret, const uint8_t *pixels)
{
	struct dlc_buf *buf = c->it.buf;

	if (c->state == CLAIM_RECLAIMED) {
		c->state = CLAIM_IDLE;
		dlc_buf_put(buf);	/* the reclaiming decoder has its own */
		return 0;
	}
	if (ret) {
		c->state = CLAIM_IDLE;
		loader_requeue_item(l, &c->it);	/* with its bytes */
		return 1;
	}
	/* Not reclaimed now: the slot waits for this sample (pending). */
	c->state = CLAIM_COMMITTING;
	pthread_mutex_unlock(&l->lock);
	memcpy(loader_item_dst(l, &c->it), pixels, l->sample_bytes);
	dlc_buf_put(buf);
	pthread_mutex_lock(&l->lock);
	c->state = CLAIM_IDLE;
	loader_item_decoded(l, &c->it, c->gen);
	dlc_stat_add(l->stats.node_guest_decodes, 1);
	return 1;
}

/*
 * Called with l->lock held, which it drops while decoding: take the
 * queue's last sample as claim @c and decode it into @pixels. Returns
 * whether the guest was starved (see the file's comment).
 */
static int guest_decode(struct dlc_loader *l, struct dlc_decoder *dec,
			struct guest_claim *c, uint8_t *pixels)
{
	uint64_t t0 = dlc_now_ns(), wall, cpu;
	int ret, kept;

	loader_take_last(l, &c->it);
	c->since = t0;
	c->gen = l->gen;
	c->epoch = l->epoch;
	c->state = CLAIM_HELD;
	/* A decoder of ours asleep learns when this one is due. */
	if (l->decoders_waiting)
		pthread_cond_signal(&l->work_cv);
	pthread_mutex_unlock(&l->lock);
	cpu = dlc_thread_cpu_ns();
	ret = loader_decode_into(l, dec, &c->it, c->epoch, pixels);
	cpu = dlc_thread_cpu_ns() - cpu;
	pthread_mutex_lock(&l->lock);
	wall = dlc_now_ns() - t0;
	kept = guest_settle(l, c, ret, pixels);
	return !kept || wall > 8 * cpu + GUEST_STARVED_NS;
}

/*
 * Until the loader stops: look the group up every GUEST_REFRESH_NS, and
 * between, take the samples guest_may_take() allows, or wait on guest_cv
 * (loader_push_item() signals it) for the next look-up at the latest.
 */
static void guest_loop(struct dlc_loader *l, struct dlc_decoder *dec,
		       struct guest_claim *c, uint8_t *pixels)
{
	uint64_t refresh = 0, out_until = 0, backoff = 0;
	cpu_set_t have;
	int n = 0, said = 0;

	CPU_ZERO(&have);
	while (!l->stop) {
		uint64_t now = dlc_now_ns();

		if (now >= refresh) {
			pthread_mutex_unlock(&l->lock);
			n = guest_refresh(l, &have, &said);
			__atomic_store_n(&l->stats.node_borrowed_cpus,
					 (uint64_t)n, __ATOMIC_RELAXED);
			/* A rank that joins late is found soon. */
			refresh = now + (n ? GUEST_REFRESH_NS : GUEST_LOOK_NS);
			pthread_mutex_lock(&l->lock);
			continue;
		}
		if (!n || now < out_until || !guest_may_take(l)) {
			/* guest_cv runs on CLOCK_MONOTONIC (loader.c). */
			dlc_cond_wait_until(&l->guest_cv, &l->lock,
					    n && now < out_until &&
					    out_until < refresh ?
					    out_until : refresh);
			continue;
		}
		if (!guest_decode(l, dec, c, pixels)) {
			backoff = 0;
			continue;
		}
		/* Starved by the CPU's owner, or by a hog: stay out a while. */
		backoff = backoff ? backoff * 2 : GUEST_BACKOFF_NS;
		if (backoff > GUEST_BACKOFF_MAX_NS)
			backoff = GUEST_BACKOFF_MAX_NS;
		out_until = dlc_now_ns() + backoff;
	}
}

/* Called with l->lock held: a claim for a guest starting, or NULL. */
static struct guest_claim *claim_bind(struct dlc_loader *l)
{
	uint32_t i;

	for (i = 0; i < l->nguest; i++)
		if (l->claims[i].state == CLAIM_FREE) {
			l->claims[i].state = CLAIM_IDLE;
			l->claims[i].tid = gettid();
			return &l->claims[i];
		}
	return NULL;
}

void loader_guest_run(struct dlc_loader *l, struct dlc_decoder *dec)
{
	struct sched_param sp = { 0 };
	struct guest_claim *c;
	uint8_t *pixels;

	/* So that top and the tests can tell it from the owner's threads. */
	pthread_setname_np(pthread_self(), "dlc-guest");
	/* Never at the owner's priority: then it would take its time. */
	if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp)) {
		dlc_logf(&l->log, DLC_LOG_WARN,
			 "node sharing: a guest cannot run at SCHED_IDLE: it stays out");
		return;
	}
	pixels = malloc(l->sample_bytes);
	if (!pixels) {
		dlc_logf(&l->log, DLC_LOG_WARN,
			 "node sharing: no memory for a guest's %zu-byte sample: it stays out",
			 l->sample_bytes);
		return;
	}
	pthread_mutex_lock(&l->lock);
	c = claim_bind(l);
	if (c) {
		__atomic_add_fetch(&l->stats.node_guest_threads, 1,
				   __ATOMIC_RELAXED);
		guest_loop(l, dec, c, pixels);
		__atomic_sub_fetch(&l->stats.node_guest_threads, 1,
				   __ATOMIC_RELAXED);
		c->state = CLAIM_FREE;
		c->tid = 0;
	}
	pthread_mutex_unlock(&l->lock);
	free(pixels);
}

int loader_guest_reclaim(struct dlc_loader *l, struct dlc_decoder *dec,
			 uint64_t *wake_ns)
{
	uint64_t now, due, limit;
	struct decode_item it;
	struct guest_claim *c;
	uint32_t i;

	*wake_ns = 0;
	if (!l->claims)
		return 0;
	now = dlc_now_ns();
	limit = 2 * __atomic_load_n(&l->decode_mean_ns, __ATOMIC_RELAXED) +
		GUEST_RECLAIM_NS;
	for (i = 0; i < l->nguest; i++) {
		c = &l->claims[i];
		if (c->state != CLAIM_HELD)
			continue;
		due = c->since + limit;
		if (due > now) {
			if (!*wake_ns || due < *wake_ns)
				*wake_ns = due;
			continue;
		}
		c->state = CLAIM_RECLAIMED;
		it = c->it;
		it.buf = dlc_buf_get(c->it.buf);
		dlc_stat_add(l->stats.node_guest_reclaimed, 1);
		loader_decode_item(l, dec, &it, c->epoch, c->gen);
		return 1;
	}
	return 0;
}
