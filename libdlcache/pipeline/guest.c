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
 * holds then has the whole window's time before its batch is due. A
 * guest that took far longer in wall time than in CPU time was starved,
 * and stays out for GUEST_BACKOFF_NS before it takes another. The CPUs
 * it may borrow are looked up again every GUEST_REFRESH_NS (every
 * GUEST_LOOK_NS while there are none): a loader joining or leaving the
 * group, or dying, changes them.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>

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
	ret = dlc_node_join(l->cfg.node_group, &mine, &l->log, &l->node);
	/* The string was the caller's: not kept past create. */
	l->cfg.node_group = NULL;
	if (ret == -ENOMEM)
		return ret;
	if (ret)
		return 0;	/* said by dlc_node_join(); no sharing */
	l->nguest = l->ndecode;
	dlc_logf(&l->log, DLC_LOG_INFO,
		 "node sharing: %s, up to %u guest decode threads on the group's other CPUs",
		 dlc_node_path(l->node), l->nguest);
	return 0;
}

void loader_node_leave(struct dlc_loader *l)
{
	dlc_node_leave(l->node);
	l->node = NULL;
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
 * Not one that a decoder of ours, waiting, is about to take, and not one
 * of the batch needed soonest of those queued: a starved guest must not
 * hold that.
 */
static int guest_may_take(const struct dlc_loader *l)
{
	uint32_t w = l->cfg.window;

	return l->qlen > l->decoders_waiting && !l->stop &&
	       l->queue[(l->qhead + l->qlen - 1) % w].slot !=
	       l->queue[l->qhead].slot;
}

/* Wait on guest_cv until @until_ns, a dlc_now_ns() time at the latest. */
static void guest_wait(struct dlc_loader *l, uint64_t until_ns)
{
	/* guest_cv runs on CLOCK_MONOTONIC (loader.c), as dlc_now_ns(). */
	struct timespec ts = {
		.tv_sec = (time_t)(until_ns / 1000000000ULL),
		.tv_nsec = (long)(until_ns % 1000000000ULL),
	};

	pthread_cond_timedwait(&l->guest_cv, &l->lock, &ts);
}

/*
 * Until the loader stops: look the group up every GUEST_REFRESH_NS, and
 * between, take the samples guest_may_take() allows, or wait on guest_cv
 * (loader_push_item() signals it) for the next look-up at the latest.
 */
static void guest_loop(struct dlc_loader *l, struct dlc_decoder *dec)
{
	uint64_t refresh = 0, out_until = 0;
	cpu_set_t have;
	int n = 0, said = 0;

	CPU_ZERO(&have);
	pthread_mutex_lock(&l->lock);
	while (!l->stop) {
		uint64_t now = dlc_now_ns(), wall, cpu;

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
			guest_wait(l, n && now < out_until &&
				   out_until < refresh ? out_until : refresh);
			continue;
		}
		cpu = dlc_thread_cpu_ns();
		loader_decode_one(l, dec, 1);
		wall = dlc_now_ns() - now;
		cpu = dlc_thread_cpu_ns() - cpu;
		dlc_stat_add(l->stats.node_guest_decodes, 1);
		/* Starved by the CPU's owner: stay out a while. */
		if (wall > 8 * cpu + GUEST_STARVED_NS)
			out_until = dlc_now_ns() + GUEST_BACKOFF_NS;
	}
	pthread_mutex_unlock(&l->lock);
}

void loader_guest_run(struct dlc_loader *l, struct dlc_decoder *dec)
{
	struct sched_param sp = { 0 };

	/* So that top and the tests can tell it from the owner's threads. */
	pthread_setname_np(pthread_self(), "dlc-guest");
	/* Never at the owner's priority: then it would take its time. */
	if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp)) {
		dlc_logf(&l->log, DLC_LOG_WARN,
			 "node sharing: a guest cannot run at SCHED_IDLE: it stays out");
		return;
	}
	__atomic_add_fetch(&l->stats.node_guest_threads, 1, __ATOMIC_RELAXED);
	guest_loop(l, dec);
	__atomic_sub_fetch(&l->stats.node_guest_threads, 1, __ATOMIC_RELAXED);
}
