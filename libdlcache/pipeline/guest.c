// SPDX-License-Identifier: MIT
/*
 * Guest decode threads (dlc_config.node_group): this loader's decoders
 * that run on the CPUs of the group's other loaders, at SCHED_IDLE, so
 * that they use only the time those CPUs' owners leave idle. They take
 * a queued sample only when there are more than the loader's own waiting
 * decoders will take (the I/O thread's cycle offers them), and decode it
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
 * own decodes) and decodes the sample itself, into its slot.
 *
 * Nor may the owner ever wait on a guest: one held off its CPU for a
 * third of a second while it held the loader's lock, or the pool's,
 * would hold every thread of the owner's as long (test_node_share saw
 * batches wait 380 ms). So a guest takes no lock of the owner's: it and
 * the owner's threads meet only at its claims' state words, each
 * transition made by one side with an atomic exchange, and the owner's
 * threads do every step that needs l->lock for it. The owner offers
 * the queue's last sample to a claim its guest readied (the I/O thread
 * after each cycle, a decoder before each sample), the guest takes it
 * and decodes it, and a decoder of the owner's lands its pixels in the
 * slot, or, when the decode failed, puts the sample back at the head of
 * the queue for the owner's threads to decode again and to handle as
 * dlc_config.on_error says, with its messages. A slot never gets a late
 * guest's pixels, nor a sample counted twice. A guest has GUEST_CLAIMS
 * claims, all ready while it may take samples (a landed one is readied
 * by the owner's thread that landed it): it decodes one while others
 * are offered or landed, so that it never waits for a decoder of the
 * owner's to end its own decode, and it has work the moment its CPU's
 * owner leaves the CPU idle. An offered sample it has not begun is
 * taken back at its due time only once the owner's decoders caught up
 * with its batch. It sleeps on its seat's bell (a futex the owner
 * rings) and never puts a buffer reference (the last one takes the
 * pool's lock): the owner does that too.
 *
 * A guest that took far longer in wall time than in CPU time, or whose
 * claim was reclaimed, was starved, and stays out for GUEST_BACKOFF_NS,
 * doubled while it goes on being starved, up to GUEST_BACKOFF_MAX_NS.
 * The CPUs it may borrow are looked up again every GUEST_REFRESH_NS
 * (every GUEST_LOOK_NS while there are none): a loader joining or
 * leaving the group, or dying, changes them.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
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
/*
 * A guest does not wake the owner when its pixels are ready (that would
 * take work_cv's internal lock): a decoder of ours with nothing queued
 * looks this often while a guest decodes.
 */
#define GUEST_POLL_NS		(2ULL * 1000000ULL)
/*
 * The claims of a guest's seat. With 2, a guest beside a faster rank
 * (make bench-skew) decoded a fifth fewer samples than one that took
 * them off the queue itself: its CPU's idle spells came while its
 * claims waited to be landed and offered again. With 4, as many.
 */
#define GUEST_CLAIMS		4

/*
 * A claim's state, and whose the next step is in each: the guest's
 * (G), the owner's threads' under l->lock (O), or either's, the first
 * exchange winning (G/O).
 */
enum guest_claim_state {
	CLAIM_OUT,		/* its guest takes nothing now (G) */
	CLAIM_READY,		/* its guest waits for a sample (G/O) */
	CLAIM_OFFERING,		/* an owner's thread writes @it (O) */
	CLAIM_OFFERED,		/* @it is offered (G: takes, O: when due) */
	CLAIM_HELD,		/* its guest decodes @it (G: ends, O: when due) */
	CLAIM_DONE,		/* @ret and @pixels are its decode (O) */
	CLAIM_LANDING,		/* an owner's thread lands them (O) */
	CLAIM_LANDED,		/* landed, the guest not accepting (G) */
	CLAIM_RECLAIMED,	/* a decoder of ours took @it over (G) */
};

/*
 * A guest's sample. @it, @since, @gen and @epoch are written by an
 * owner's thread in CLAIM_OFFERING, read by the guest from CLAIM_OFFERED
 * until it next readies the claim; @ret by the guest before CLAIM_DONE.
 * @it.buf is the claim's reference, put by the owner's threads only
 * (after a landing, at the next offer after a reclaim, or at leave).
 */
struct guest_claim {
	struct decode_item it;
	uint64_t since;		/* dlc_now_ns() when offered */
	uint64_t begun;		/* the guest's: when it began, before HELD */
	uint64_t gen;		/* l->gen then */
	uint32_t epoch;		/* l->epoch then */
	uint32_t state;		/* enum guest_claim_state, atomic */
	int ret;
	uint8_t *pixels;	/* the guest's output, sample_bytes */
};

/* A guest thread's place in the loader, nguest of them. */
struct guest_seat {
	struct guest_claim claim[GUEST_CLAIMS];
	/*
	 * Rung (incremented, then woken) by the owner's threads after
	 * they change a claim: the guest sleeps on it as a futex.
	 */
	uint32_t bell;
	/*
	 * The guest's (atomic): it takes samples now. A claim landed then
	 * is readied by the owner's thread that landed it, so that its next
	 * sample is offered without a round trip through the guest.
	 */
	uint32_t accepting;
	/* Under l->lock: a guest sits here, its thread ID. */
	uint32_t taken;
	pid_t tid;
	uint8_t *pixels;	/* the claims', one block; freed at leave */
};

static uint32_t claim_state(const struct guest_claim *c)
{
	return __atomic_load_n(&c->state, __ATOMIC_ACQUIRE);
}

static void claim_set(struct guest_claim *c, uint32_t to)
{
	__atomic_store_n(&c->state, to, __ATOMIC_RELEASE);
}

/* The exchange of @from for @to; whether it was made. */
static int claim_move(struct guest_claim *c, uint32_t from, uint32_t to)
{
	return __atomic_compare_exchange_n(&c->state, &from, to, 0,
					   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* The owner's threads: wake @g's guest, asleep in seat_sleep(). */
static void seat_ring(struct guest_seat *g)
{
	__atomic_add_fetch(&g->bell, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &g->bell, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/*
 * The guest: sleep until @g's bell moves past @rung, or @until (a
 * dlc_now_ns() time).
 */
static void seat_sleep(struct guest_seat *g, uint32_t rung, uint64_t until)
{
	struct timespec ts = {
		.tv_sec = (time_t)(until / 1000000000ULL),
		.tv_nsec = (long)(until % 1000000000ULL),
	};

	/* An absolute CLOCK_MONOTONIC deadline: dlc_now_ns()'s clock. */
	syscall(SYS_futex, &g->bell, FUTEX_WAIT_BITSET_PRIVATE, rung, &ts,
		NULL, FUTEX_BITSET_MATCH_ANY);
}

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
	l->seats = calloc(l->ndecode, sizeof(*l->seats));
	if (!l->seats) {
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
	struct sched_param sp = { 0 };
	uint32_t i;

	for (i = 0; l->seats && i < l->nguest; i++) {
		struct guest_seat *g = &l->seats[i];

		if (!g->taken)
			continue;
		sched_setaffinity(g->tid, sizeof(l->home), &l->home);
		/*
		 * Its decode is now the owner's own work: at the owner's
		 * priority where we may (CAP_SYS_NICE, or RLIMIT_NICE), so
		 * that a busy home CPU does not hold destroy up either.
		 */
		sched_setscheduler(g->tid, SCHED_OTHER, &sp);
		/* Asleep, it sees l->stop now. */
		seat_ring(g);
	}
}

void loader_node_leave(struct dlc_loader *l)
{
	uint32_t i, k;

	dlc_node_leave(l->node);
	l->node = NULL;
	/* Every thread ended: what the seats still hold is ours. */
	for (i = 0; l->seats && i < l->nguest; i++) {
		for (k = 0; k < GUEST_CLAIMS; k++)
			dlc_buf_put(l->seats[i].claim[k].it.buf);
		free(l->seats[i].pixels);
	}
	free(l->seats);
	l->seats = NULL;
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
 * Called with l->lock held: may a guest have the queue's last sample?
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

void loader_guest_offer(struct dlc_loader *l)
{
	uint32_t i, k, offered = 0;

	for (i = 0; l->seats && i < l->nguest; i++) {
		struct guest_seat *g = &l->seats[i];
		int rang = 0;

		for (k = 0; k < GUEST_CLAIMS && guest_may_take(l); k++) {
			struct guest_claim *c = &g->claim[k];

			if (!claim_move(c, CLAIM_READY, CLAIM_OFFERING))
				continue;
			/* A reclaimed claim's reference: the guest is done. */
			dlc_buf_put(c->it.buf);
			loader_take_last(l, &c->it);
			c->since = dlc_now_ns();
			c->gen = l->gen;
			c->epoch = l->epoch;
			claim_set(c, CLAIM_OFFERED);
			rang = 1;
		}
		if (rang)
			seat_ring(g);
		offered += rang;
	}
	/* A decoder of ours asleep learns when these are due. */
	if (offered && l->decoders_waiting)
		pthread_cond_signal(&l->work_cv);
}

int loader_guest_land(struct dlc_loader *l)
{
	uint32_t i, k;

	for (i = 0; l->seats && i < l->nguest; i++) {
		for (k = 0; k < GUEST_CLAIMS; k++) {
			struct guest_claim *c = &l->seats[i].claim[k];

			if (claim_state(c) != CLAIM_DONE)
				continue;
			claim_set(c, CLAIM_LANDING);
			if (c->ret) {
				/* Back to our threads, with its bytes. */
				loader_requeue_item(l, &c->it);
				c->it.buf = NULL;
			} else {
				pthread_mutex_unlock(&l->lock);
				memcpy(loader_item_dst(l, &c->it), c->pixels,
				       l->sample_bytes);
				pthread_mutex_lock(&l->lock);
				loader_item_decoded(l, &c->it, c->gen);
				dlc_buf_put(c->it.buf);
				c->it.buf = NULL;
				dlc_stat_add(l->stats.node_guest_decodes, 1);
			}
			claim_set(c, __atomic_load_n(&l->seats[i].accepting,
						     __ATOMIC_ACQUIRE) ?
				     CLAIM_READY : CLAIM_LANDED);
			seat_ring(&l->seats[i]);
			return 1;
		}
	}
	return 0;
}

/* guest_decode()'s outcomes. */
enum guest_outcome {
	GUEST_DECODED,		/* CLAIM_DONE: the owner's until landed */
	GUEST_STARVED,		/* the same, far slower than its CPU time */
	GUEST_TAKEN_BACK,	/* CLAIM_RECLAIMED while it decoded */
	GUEST_NOT_BEGUN,	/* CLAIM_RECLAIMED before it began */
};

/* The guest: take @c's offered sample and decode it into c->pixels. */
static enum guest_outcome guest_decode(struct dlc_loader *l,
				       struct dlc_decoder *dec,
				       struct guest_claim *c)
{
	uint64_t t0 = dlc_now_ns(), wall, cpu;

	/* Due from now on: the wait for its turn was the owner's doing. */
	c->begun = t0;
	if (!claim_move(c, CLAIM_OFFERED, CLAIM_HELD))
		return GUEST_NOT_BEGUN;
	cpu = dlc_thread_cpu_ns();
	c->ret = loader_decode_into(l, dec, &c->it, c->epoch, c->pixels);
	cpu = dlc_thread_cpu_ns() - cpu;
	wall = dlc_now_ns() - t0;
	if (!claim_move(c, CLAIM_HELD, CLAIM_DONE))
		return GUEST_TAKEN_BACK;	/* a decoder of ours has it */
	return wall > 8 * cpu + GUEST_STARVED_NS ? GUEST_STARVED :
						   GUEST_DECODED;
}

/*
 * The guest's pass over its claims: ready the free ones (or, while it
 * may take none, unready them), and pick the one offered first. One
 * taken back before it began it is free again: the guest was busy with
 * its other claims, or held off, and in that case it is held off the
 * next one it begins too. Sets *@busy when one is the owner's to land.
 */
static struct guest_claim *guest_pick(struct guest_seat *g, int may_take,
				      int *busy)
{
	struct guest_claim *pick = NULL;
	uint32_t k;

	__atomic_store_n(&g->accepting, may_take, __ATOMIC_RELEASE);
	for (k = 0; k < GUEST_CLAIMS; k++) {
		struct guest_claim *c = &g->claim[k];
		uint32_t st = claim_state(c);

		if (st == CLAIM_RECLAIMED) {
			claim_set(c, CLAIM_OUT);
			st = CLAIM_OUT;
		}
		if ((st == CLAIM_OUT || st == CLAIM_LANDED) && may_take)
			claim_set(c, CLAIM_READY);
		else if (st == CLAIM_READY && !may_take)
			claim_move(c, CLAIM_READY, CLAIM_OUT);
		*busy |= st == CLAIM_DONE || st == CLAIM_LANDING;
		if (st == CLAIM_OFFERED && (!pick || c->since < pick->since))
			pick = c;
	}
	return pick;
}

/*
 * Until the loader stops: look the group up every GUEST_REFRESH_NS, and
 * between, keep its claims ready unless out after being starved, and
 * decode what they are offered, the first offered first.
 */
static void guest_loop(struct dlc_loader *l, struct dlc_decoder *dec,
		       struct guest_seat *g)
{
	uint64_t refresh = 0, out_until = 0, backoff = 0;
	cpu_set_t have;
	int n = 0, said = 0;

	CPU_ZERO(&have);
	while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
		uint32_t rung = __atomic_load_n(&g->bell, __ATOMIC_ACQUIRE);
		uint64_t now = dlc_now_ns(), until;
		int busy = 0, starved = 0;
		struct guest_claim *c;

		if (now >= refresh) {
			n = guest_refresh(l, &have, &said);
			__atomic_store_n(&l->stats.node_borrowed_cpus,
					 (uint64_t)n, __ATOMIC_RELAXED);
			/* A rank that joins late is found soon. */
			refresh = now + (n ? GUEST_REFRESH_NS : GUEST_LOOK_NS);
			continue;
		}
		c = guest_pick(g, n && now >= out_until, &busy);
		if (c) {
			switch (guest_decode(l, dec, c)) {
			case GUEST_DECODED:
				break;
			case GUEST_NOT_BEGUN:
				claim_set(c, CLAIM_OUT);
				continue;
			case GUEST_TAKEN_BACK:
				claim_set(c, CLAIM_OUT);
				/* fall through */
			case GUEST_STARVED:
				starved = 1;
				break;
			}
		}
		if (starved) {
			/* By the CPU's owner, or by a hog: stay out a while. */
			backoff = backoff ? backoff * 2 : GUEST_BACKOFF_NS;
			if (backoff > GUEST_BACKOFF_MAX_NS)
				backoff = GUEST_BACKOFF_MAX_NS;
			out_until = dlc_now_ns() + backoff;
		} else if (c) {
			backoff = 0;
		}
		if (c)
			continue;
		until = refresh;
		if (n && out_until > now && out_until < until)
			until = out_until;
		if (busy && now + GUEST_LOOK_NS < until)
			until = now + GUEST_LOOK_NS;
		seat_sleep(g, rung, until);
	}
}

/* Called with l->lock held: a seat for a guest starting, or NULL. */
static struct guest_seat *seat_take(struct dlc_loader *l, uint8_t *pixels)
{
	uint32_t i, k;

	for (i = 0; i < l->nguest; i++) {
		struct guest_seat *g = &l->seats[i];

		if (g->taken)
			continue;
		g->taken = 1;
		g->tid = gettid();
		g->pixels = pixels;
		for (k = 0; k < GUEST_CLAIMS; k++)
			g->claim[k].pixels = pixels + k * l->sample_bytes;
		return g;
	}
	return NULL;
}

void loader_guest_run(struct dlc_loader *l, struct dlc_decoder *dec)
{
	struct sched_param sp = { 0 };
	struct guest_seat *g;
	uint8_t *pixels;
	uint32_t k;

	/* So that top and the tests can tell it from the owner's threads. */
	pthread_setname_np(pthread_self(), "dlc-guest");
	pixels = malloc(GUEST_CLAIMS * l->sample_bytes);
	if (!pixels) {
		dlc_logf(&l->log, DLC_LOG_WARN,
			 "node sharing: no memory for a guest's %zu bytes of samples: it stays out",
			 GUEST_CLAIMS * l->sample_bytes);
		return;
	}
	/* Seated at the owner's priority: l->lock is taken only here... */
	pthread_mutex_lock(&l->lock);
	g = seat_take(l, pixels);
	pthread_mutex_unlock(&l->lock);
	if (!g) {
		free(pixels);
		return;
	}
	/* ... and at the end, once moved home (loader_guests_home()). */
	if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp)) {
		dlc_logf(&l->log, DLC_LOG_WARN,
			 "node sharing: a guest cannot run at SCHED_IDLE: it stays out");
	} else {
		__atomic_add_fetch(&l->stats.node_guest_threads, 1,
				   __ATOMIC_RELAXED);
		guest_loop(l, dec, g);
		__atomic_sub_fetch(&l->stats.node_guest_threads, 1,
				   __ATOMIC_RELAXED);
	}
	/*
	 * Offered no more (l->stop); an owner's thread may still land a
	 * claim's pixels: they are freed at leave, after every thread.
	 */
	pthread_mutex_lock(&l->lock);
	for (k = 0; k < GUEST_CLAIMS; k++)
		claim_move(&g->claim[k], CLAIM_READY, CLAIM_OUT);
	g->taken = 0;
	g->tid = 0;
	pthread_mutex_unlock(&l->lock);
}

/*
 * Called with l->lock held: have our decoders caught up with @c's
 * sample, their next one of its batch or after it (or of a generation
 * after its)?
 */
static int caught_up(const struct dlc_loader *l, const struct guest_claim *c)
{
	const struct decode_item *head = &l->queue[l->qhead];

	return c->gen != l->gen || !l->qlen || head->slot == c->it.slot ||
	       head->pos > c->it.pos;
}

int loader_guest_reclaim(struct dlc_loader *l, struct dlc_decoder *dec,
			 int held, uint64_t *wake_ns)
{
	uint64_t now, due, limit;
	struct decode_item it;
	uint32_t i, k, st;

	*wake_ns = 0;
	if (!l->seats)
		return 0;
	now = dlc_now_ns();
	limit = 2 * __atomic_load_n(&l->decode_mean_ns, __ATOMIC_RELAXED) +
		GUEST_RECLAIM_NS;
	for (i = 0; i < l->nguest; i++) {
		for (k = 0; k < GUEST_CLAIMS; k++) {
			struct guest_claim *c = &l->seats[i].claim[k];

			st = claim_state(c);
			if (st == CLAIM_HELD ? !held :
			    st != CLAIM_OFFERED || (!held && !caught_up(l, c)))
				continue;
			due = (st == CLAIM_HELD ? c->begun : c->since) + limit;
			if (due > now) {
				/* A decode may end before: look again soon. */
				if (st == CLAIM_HELD &&
				    due > now + GUEST_POLL_NS)
					due = now + GUEST_POLL_NS;
				if (!*wake_ns || due < *wake_ns)
					*wake_ns = due;
				continue;
			}
			if (!claim_move(c, st, CLAIM_RECLAIMED))
				return 1;	/* the guest moved first */
			it = c->it;
			it.buf = dlc_buf_get(c->it.buf);
			dlc_stat_add(l->stats.node_guest_reclaimed, 1);
			seat_ring(&l->seats[i]);
			loader_decode_item(l, dec, &it, c->epoch, c->gen);
			return 1;
		}
	}
	return 0;
}
