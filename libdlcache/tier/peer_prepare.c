// SPDX-License-Identifier: MIT
/*
 * Prepared answers (SOPHON: preprocessing where it costs least). An
 * owner may answer a peer's request with the sample already decoded,
 * cropped, resized and flipped for the asker's use, instead of its
 * encoded bytes: the asker then decodes nothing, and a large photograph
 * crosses the link as its output's bytes.
 *
 * Exactness. Every rank's loader sends, at open, a fingerprint of what
 * decides a sample's pixels (its transform, seed and layout: the
 * loader's); prepared answers are on only when all of them are the
 * same (peer.c, check_join()). The owner prepares with the function its
 * own decoders run (dlc_peer_prepare's @prepare), for the asker's epoch:
 * the pixels are those the asker would have made.
 *
 * Who asks. The asker welcomes a prepared answer (REQ_PREPARED_OK) when
 * it is no larger than the encoded bytes, or when its own decode, not
 * reads, sets its pace and the extra bytes cost the link less time than
 * the decode they save (peer.c, dlc_peer_prepared_pays()). It says too
 * whether its consumer waits on its loader (REQ_BEHIND: over
 * BEHIND_PERMILLE of the last pace window): the straggler of the job.
 *
 * Who answers. A request that welcomes one, for a sample this rank
 * holds, is queued (at most PREP_JOBS, the last PREP_URGENT_ROOM for a
 * straggler's) for this rank's prepare thread, which begins a
 * straggler's jobs first: the ranks that are ahead need none, and the
 * job's steps wait for the straggler. The thread runs at SCHED_IDLE: it
 * takes only the CPU time the node's own work leaves, so no owner
 * becomes the straggler by preparing for others. A job it has not begun
 * within PREP_WAIT_NS, one begun but not done within PREP_LATE_NS (a
 * quarter of the peer timeout: the thread lost the CPU in the middle),
 * one whose decode fails (the asker then meets the failure itself, with
 * its own message), and one that finds the queue full are answered with
 * the encoded bytes, as without preparing.
 *
 * Threads and lifetimes: the service thread queues jobs and sends their
 * answers; the prepare thread takes a QUEUED job to BUSY, decodes
 * outside the lock, and leaves it DONE, or frees it when the service
 * thread answered it encoded meanwhile ("answered": the thread's until
 * then, with the job's reference to the bytes). dlc_peer_cancel() (the loader
 * winding down) and dlc_peer_close() stop and join the prepare thread
 * (it makes no MPI call, and a decode is bounded by the loader's decode
 * budget), so the loader's decode and decoder are never called after;
 * the jobs it had not begun are answered encoded by the service thread,
 * which answers peers until close. Jobs left at the state's end are
 * freed with it (peer_prepare_free()).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "peer_int.h"

/* The job in @state queued first; with @urgent, of the urgent ones. */
static struct prep_job *oldest(struct dlc_peer *p, enum prep_state state,
			       int urgent)
{
	struct prep_job *j = NULL;
	uint32_t i;

	for (i = 0; i < PREP_JOBS; i++)
		if (p->prep_job[i].state == state &&
		    (!urgent || p->prep_job[i].urgent) &&
		    !p->prep_job[i].answered &&
		    (!j || p->prep_job[i].queued < j->queued))
			j = &p->prep_job[i];
	return j;
}

/* The next job to begin: a straggler's first, then by age. */
static struct prep_job *next_queued(struct dlc_peer *p)
{
	struct prep_job *j = oldest(p, PREP_QUEUED, 1);

	return j ? j : oldest(p, PREP_QUEUED, 0);
}

static uint32_t free_jobs(struct dlc_peer *p)
{
	uint32_t i, n = 0;

	for (i = 0; i < PREP_JOBS; i++)
		n += p->prep_job[i].state == PREP_FREE;
	return n;
}

static void *prepare_main(void *arg)
{
	struct dlc_peer *p = arg;
	struct sched_param sp = { 0 };
	struct prep_job *j;

	/* Only the CPU time this node's own threads leave. */
	pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct dlc_buf *b;
		uint32_t id, epoch;
		uint8_t *mem;
		int err;

		while (!p->prep_stop && !(j = next_queued(p)))
			pthread_cond_wait(&p->prep_cv, &p->lock);
		if (p->prep_stop)
			break;
		j->state = PREP_BUSY;
		b = j->b;
		id = j->id;
		epoch = j->epoch;
		pthread_mutex_unlock(&p->lock);
		mem = malloc(sizeof(struct rep_msg) + p->prep.out_bytes);
		err = mem ? p->prep.prepare(p->prep.arg, p->prep.dec, id, epoch,
					    b, mem + sizeof(struct rep_msg)) :
			    -ENOMEM;
		if (err) {
			free(mem);
			mem = NULL;
		}
		pthread_mutex_lock(&p->lock);
		if (j->answered) {
			/* Too late: its asker has the encoded bytes. */
			dlc_buf_put(j->b);
			free(mem);
			memset(j, 0, sizeof(*j));
			continue;
		}
		j->mem = mem;
		j->state = PREP_DONE;
		p->kick = 1;
		pthread_cond_signal(&p->cv);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int peer_prepare_start(struct dlc_peer *p)
{
	int ret;

	if (!p->prep_on)
		return 0;
	ret = pthread_create(&p->prep_thread, NULL, prepare_main, p);
	if (ret)
		return -ret;
	p->prep_started = 1;
	return 0;
}

void peer_prepare_stop(struct dlc_peer *p)
{
	uint32_t i;

	if (!p->prep_started)
		return;
	pthread_mutex_lock(&p->lock);
	p->prep_stop = 1;
	pthread_cond_broadcast(&p->prep_cv);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->prep_thread, NULL);
	p->prep_started = 0;
	/*
	 * Jobs not begun are answered encoded: the service thread answers
	 * the peers until close, and a request left unanswered would make
	 * its asker take this rank for dead.
	 */
	pthread_mutex_lock(&p->lock);
	for (i = 0; i < PREP_JOBS; i++)
		if (p->prep_job[i].state == PREP_QUEUED)
			p->prep_job[i].state = PREP_DONE;
	pthread_mutex_unlock(&p->lock);
}

void peer_prepare_free(struct dlc_peer *p)
{
	uint32_t i;

	for (i = 0; i < PREP_JOBS; i++) {
		struct prep_job *j = &p->prep_job[i];

		if (j->state == PREP_FREE)
			continue;
		dlc_buf_put(j->b);
		free(j->mem);
		memset(j, 0, sizeof(*j));
	}
}

int peer_prepare_take(struct dlc_peer *p, uint32_t peer,
		      const struct req_msg *q, struct dlc_buf *b)
{
	struct prep_job *j, *w;
	uint64_t now;
	int urgent = !!(q->flags & REQ_BEHIND);

	if (!(q->flags & REQ_PREPARED_OK))
		return 0;
	pthread_mutex_lock(&p->lock);
	if (!p->prep_on) {
		pthread_mutex_unlock(&p->lock);
		return 0;
	}
	/*
	 * A thread whose oldest job (of those that would begin before this
	 * one) waited PREP_BEHIND_NS to begin has no idle CPU now: every
	 * request queued behind it would wait PREP_WAIT_NS for nothing, so
	 * it is answered encoded at once. The last PREP_URGENT_ROOM jobs
	 * are a straggler's.
	 */
	now = dlc_now_ns();
	w = oldest(p, PREP_QUEUED, urgent);
	j = p->prep_started && !p->prep_stop &&
	    (!w || now - w->queued < PREP_BEHIND_NS) &&
	    (urgent || free_jobs(p) > PREP_URGENT_ROOM) ?
	    oldest(p, PREP_FREE, 0) : NULL;
	if (!j) {
		p->c.prepare_late++;
		pthread_mutex_unlock(&p->lock);
		return 0;
	}
	*j = (struct prep_job){
		.state = PREP_QUEUED, .peer = peer, .seq = q->seq,
		.id = q->id, .epoch = q->epoch, .queued = now,
		.urgent = urgent, .b = dlc_buf_get(b),
	};
	pthread_cond_signal(&p->prep_cv);
	pthread_mutex_unlock(&p->lock);
	return 1;
}

int peer_prepare_next(struct dlc_peer *p, uint64_t now, struct prep_job *out)
{
	struct prep_job *j = NULL;

	pthread_mutex_lock(&p->lock);
	j = oldest(p, PREP_DONE, 0);
	if (!j) {
		j = oldest(p, PREP_QUEUED, 0);
		if (j && now - j->queued < PREP_WAIT_NS)
			j = NULL;
	}
	if (!j) {
		/* Begun, but the thread lost the CPU: answered encoded now. */
		j = oldest(p, PREP_BUSY, 0);
		if (j && now - j->queued >= PREP_LATE_NS(p)) {
			*out = *j;
			out->mem = NULL;
			out->b = dlc_buf_get(j->b);
			j->answered = 1;
			p->c.prepare_late++;
			pthread_mutex_unlock(&p->lock);
			return 1;
		}
		j = NULL;
	}
	if (j) {
		*out = *j;
		if (!j->mem)
			p->c.prepare_late++;
		memset(j, 0, sizeof(*j));
	}
	pthread_mutex_unlock(&p->lock);
	return j != NULL;
}
