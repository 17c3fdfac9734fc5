// SPDX-License-Identifier: MIT
/*
 * The peer tier's service thread, which makes every MPI call after
 * dlc_peer_open(): requests sent and answered, peers' requests answered
 * from the share, pushes sent and taken in, in peer_int.h's messages; and
 * the watchdog over it. peer_int.h says how the files layer: this one
 * calls peer_state.c, and nothing in peer.c.
 *
 * Open MPI (4.1, without ULFM) never reports a dead peer: a send to it may
 * never complete and a message it was sending never arrives. So every
 * operation has a deadline; one that passes it marks the peer dead, is
 * cancelled and, as MPI may still own its memory, kept in a graveyard
 * that is never freed while it is incomplete. A dead peer is never asked
 * again: its samples come from storage.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "peer_int.h"

/* Pushes being sent at once. */
#define PUSHES_SENDING	32
/* Messages taken off the wire per turn of the service loop. */
#define RECV_BURST	64

int peer_mpi_died;

/* ---- the service thread ---- */

static void beat(struct dlc_peer *p)
{
	__atomic_store_n(&p->beat, dlc_now_ns(), __ATOMIC_RELAXED);
}

/* Called by finish_slot() and dlc_peer_cancel() (peer.c), the lock held. */
void peer_wake_slot(struct request_slot *s)
{
	uint64_t one = 1;

	if (write(s->efd, &one, sizeof(one)) != sizeof(one))
		s->err = s->err ? s->err : -EIO;
}

/* Called with the lock held: @s ends with @err (its bytes in s->buf). */
static void finish_slot(struct dlc_peer *p, struct request_slot *s, int err)
{
	/* A prepared answer delivers the sample, whatever its bytes. */
	peer_rate_end(&p->rate[s->peer], dlc_now_ns(), p->size[s->id],
		      !s->buf ? 0 : s->buf->prepared ? p->size[s->id] :
		      s->buf->len);
	s->err = err;
	if (s->abandoned) {
		dlc_buf_put(s->buf);
		s->buf = NULL;
		s->abandoned = 0;
		s->state = REQ_FREE;
		return;
	}
	s->state = REQ_DONE;
	peer_wake_slot(s);
}

/* Called with the lock held. */
static void mark_dead(struct dlc_peer *p, uint32_t peer, const char *what)
{
	uint32_t i, mine;

	if (peer >= p->world || p->dead[peer])
		return;
	/* Read without the lock by peer_backup(), from peer_offer(). */
	__atomic_store_n(&p->dead[peer], 1, __ATOMIC_RELAXED);
	p->c.dead_peers++;
	__atomic_store_n(&peer_mpi_died, 1, __ATOMIC_RELAXED);
	mine = peer_replace_locked(p);
	peer_log(p, DLC_LOG_WARN,
		 "cluster: rank %u did not %s within %llu ms: taken for dead; its samples are re-placed over the ranks left (this rank owns %u of them, and keeps them as it reads them)",
		 peer, what, (unsigned long long)(p->timeout_ns / 1000000),
		 mine);
	for (i = 0; i < p->nslots; i++) {
		struct request_slot *s = &p->slot[i];

		if (s->peer == peer &&
		    (s->state == REQ_NEW || s->state == REQ_SENT)) {
			p->c.peer_failures++;
			finish_slot(p, s, -ETIMEDOUT);
		}
	}
}

/*
 * Room for one more op, growing the array if it must: 0 when there is
 * none (no memory). Called before a message is matched, so that a
 * matched message always has an op to be received by.
 */
static int op_room(struct dlc_peer *p)
{
	struct op *o;
	uint32_t cap;

	if (p->nops < p->ops_cap)
		return 1;
	cap = p->ops_cap ? 2 * p->ops_cap : 64;
	o = realloc(p->ops, sizeof(*o) * cap);
	if (!o)
		return 0;
	p->ops = o;
	p->ops_cap = cap;
	return 1;
}

/* A new op, zeroed; NULL when there is no room for one (no memory). */
static struct op *op_add(struct dlc_peer *p)
{
	struct op *o;

	if (!op_room(p))
		return NULL;
	o = &p->ops[p->nops++];
	memset(o, 0, sizeof(*o));
	o->req = MPI_REQUEST_NULL;
	return o;
}

/* Send @len bytes of @mem (ours: freed when sent) to @peer. */
static int send_msg(struct dlc_peer *p, uint32_t peer, int tag, void *mem,
		    size_t len)
{
	struct op *o;

	/* Close gave up on this thread: no MPI call after the one it was in. */
	if (orphaned(p)) {
		free(mem);
		return -ECANCELED;
	}
	if (len > INT32_MAX || !(o = op_add(p))) {
		free(mem);
		return -ENOMEM;
	}
	o->mem = mem;
	o->tag = tag;
	o->peer = peer;
	o->deadline = dlc_now_ns() + p->timeout_ns;
	if (MPI_Isend(mem, (int)len, MPI_BYTE, (int)peer, tag, p->comm,
		      &o->req) != MPI_SUCCESS) {
		free(mem);
		p->nops--;
		beat(p);
		return -EIO;
	}
	beat(p);
	if (tag == TAG_PUT)
		p->pushing++;
	return 0;
}

/*
 * Answer @peer's request @seq for sample @id: @mem (a rep_msg's room,
 * then @len bytes: ours, freed) prepared for it, else the share's bytes
 * @b, or none (NULL).
 */
static void send_answer(struct dlc_peer *p, uint32_t peer, uint32_t seq,
			uint32_t id, uint8_t *mem, size_t len,
			const struct dlc_buf *b)
{
	struct rep_msg a = { .seq = seq, .id = id };

	pthread_mutex_lock(&p->lock);
	a.err = mem || b ? 0 : -ENOENT;
	a.flags = (p->full ? REP_FULL : 0) | (p->no_spare ? REP_NO_SPARE : 0) |
		  (mem ? REP_PREPARED : 0);
	if (!mem && b)
		len = b->len;
	else if (!mem)
		len = 0;
	p->c.served++;
	if (mem || b) {
		p->c.served_hits++;
		p->c.served_bytes += len;
	}
	if (mem)
		p->c.prepared_out++;
	if (p->dead[peer]) {
		pthread_mutex_unlock(&p->lock);
		free(mem);
		return;
	}
	pthread_mutex_unlock(&p->lock);
	if (!mem) {
		mem = malloc(sizeof(a) + len);
		if (!mem)
			return;
		if (b)
			memcpy(mem + sizeof(a), b->data, len);
	}
	memcpy(mem, &a, sizeof(a));
	send_msg(p, peer, TAG_REP, mem, sizeof(a) + len);
}

/* Answers prepared, or late for it (peer_prepare.c). */
static int prepared_answers(struct dlc_peer *p, uint64_t now)
{
	struct prep_job j;
	int any = 0;

	/* Off: nothing is ever queued; no lock taken every turn. */
	if (!p->prep_on)
		return 0;
	while (peer_prepare_next(p, now, &j)) {
		send_answer(p, j.peer, j.seq, j.id, j.mem, p->prep.out_bytes,
			    j.b);
		dlc_buf_put(j.b);
		any = 1;
	}
	return any;
}

/* A peer asked for a sample: answer from the share, or prepare it. */
static void answer(struct dlc_peer *p, uint32_t peer, const struct dlc_buf *m)
{
	struct req_msg q;
	struct dlc_buf *b = NULL;

	if (m->len < sizeof(q))
		return;
	memcpy(&q, m->data, sizeof(q));
	pthread_mutex_lock(&p->lock);
	if (q.id < p->n && p->share[q.id])
		b = dlc_buf_get(p->share[q.id]);
	pthread_mutex_unlock(&p->lock);
	/* Memoised at admission: a CRC only when the bytes changed since. */
	if (b && !peer_sample_ok(p, q.id, b)) {
		pthread_mutex_lock(&p->lock);
		peer_drop_share_locked(p, q.id, b);
		pthread_mutex_unlock(&p->lock);
		dlc_buf_put(b);
		b = NULL;
	}
	if (!b || !peer_prepare_take(p, peer, &q, b))
		send_answer(p, peer, q.seq, q.id, NULL, 0, b);
	dlc_buf_put(b);
}

/* Called with the lock held: the slot @seq names, if it still waits. */
static struct request_slot *slot_waiting(struct dlc_peer *p, uint32_t seq)
{
	struct request_slot *s = &p->slot[seq % p->nslots];

	return s->state == REQ_SENT && s->seq == seq ? s : NULL;
}

/* An answer to a request of ours: into its slot, if it still waits. */
static void answered(struct dlc_peer *p, uint32_t peer, struct dlc_buf *m)
{
	struct rep_msg a;
	struct request_slot *s;

	if (m->len < sizeof(a)) {
		dlc_buf_put(m);
		return;
	}
	memcpy(&a, m->data, sizeof(a));
	m->data += sizeof(a);
	m->len -= sizeof(a);
	pthread_mutex_lock(&p->lock);
	s = slot_waiting(p, a.seq);
	if (a.flags & REP_FULL)
		p->peer_full[peer] = 1;
	if (a.flags & REP_NO_SPARE)
		p->peer_no_spare[peer] = 1;
	if (s && s->peer == peer && s->id == a.id) {
		/* Prepared: only if asked, and exactly a sample's output. */
		if (a.err == 0 && (a.flags & REP_PREPARED) &&
		    (!s->prepared_ok || m->len != p->prep.out_bytes)) {
			p->c.peer_failures++;
			finish_slot(p, s, -EBADMSG);
		} else if (a.err == 0) {
			m->prepared = !!(a.flags & REP_PREPARED);
			s->buf = m;
			m = NULL;
			finish_slot(p, s, 0);
		} else {
			p->c.peer_misses++;
			finish_slot(p, s, -ENOENT);
		}
	}
	pthread_mutex_unlock(&p->lock);
	dlc_buf_put(m);	/* a late answer, to a request that timed out */
}

/* A peer's storage read of a sample this rank owns or backs up: checked. */
static void pushed_in(struct dlc_peer *p, uint32_t peer, struct dlc_buf *m)
{
	struct put_msg h;
	int ok;

	if (m->len < sizeof(h))
		return;
	memcpy(&h, m->data, sizeof(h));
	m->data += sizeof(h);
	m->len -= sizeof(h);
	ok = peer_sample_ok(p, h.id, m);
	pthread_mutex_lock(&p->lock);
	/*
	 * Kept when this rank owns the sample, or is its backup, and has
	 * room. Indexed bytes of one it neither owns nor backs up are not
	 * kept, and no fault of the sender's: it took a rank for dead before
	 * this one did, and re-placed its share (peer_replace_locked()).
	 */
	if (ok) {
		peer_admit_locked(p, h.id, m, 1);
	} else {
		p->c.bad_pushes++;
		if (!p->said_bad_push++)
			peer_log(p, DLC_LOG_WARN,
				 "cluster: rank %u sent %zu bytes as sample %u, not the indexed file's (size or CRC-32C): not kept (counted; not logged again)",
				 peer, m->len, h.id);
	}
	pthread_mutex_unlock(&p->lock);
}

/* A message that arrived whole. */
static void received(struct dlc_peer *p, struct op *o)
{
	struct dlc_buf *m = o->b;

	o->b = NULL;
	switch (o->tag) {
	case TAG_REQ:
		answer(p, o->peer, m);
		break;
	case TAG_REP:
		answered(p, o->peer, m);
		return;
	case TAG_PUT:
		pushed_in(p, o->peer, m);
		break;
	case TAG_BYE:
		p->bye[o->peer] = 1;
		break;
	}
	dlc_buf_put(m);
}

/*
 * The bytes a message from @src of @tag may have, by the protocol: a
 * request's and a goodbye's are fixed; an answer holds at most the
 * largest sample @src owns (asked only of a sample this rank takes it to
 * own, whose size that counts, re-placements included), a push the
 * index's largest sample (the sender may have re-placed a dead rank's
 * share before this rank did). Their exact sizes are checked when their
 * sample's ID is read.
 */
static int size_allowed(const struct dlc_peer *p, int src, int tag,
			int count)
{
	size_t n = (size_t)count;

	if (count < 0 || src < 0 || (uint32_t)src >= p->world ||
	    (uint32_t)src == p->rank)
		return 0;
	switch (tag) {
	case TAG_REQ:
		return n == sizeof(struct req_msg);
	case TAG_REP:
		return n >= sizeof(struct rep_msg) &&
		       (n - sizeof(struct rep_msg) <= p->max_owned[src] ||
			(p->prep_on &&
			 n - sizeof(struct rep_msg) == p->prep.out_bytes));
	case TAG_PUT:
		return n >= sizeof(struct put_msg) &&
		       n - sizeof(struct put_msg) <= p->max_size;
	case TAG_BYE:
		return n == 0;
	}
	return 0;
}

/*
 * The matched message @msg of @count bytes from @src, received whole into
 * @p->sink and dropped, as op @o (OP_DROP, under the usual deadline): a
 * count of p->sink_block covering @count, every block at the sink's
 * start. A message must never be received into a buffer smaller than it:
 * Open MPI 4.1's TCP transport writes a fragment's whole length into a
 * contiguous buffer posted, whatever count was posted (a heap overflow
 * past a small buffer, SIGSEGV on a guard page), and its shared-memory
 * transport (vader, single copy) reads it all. Nothing here allocates or
 * waits.
 */
static void sink_recv(struct dlc_peer *p, struct op *o, MPI_Message *msg,
		      int src, int count)
{
	int blocks = count > 0 ?
		     (int)(((int64_t)count + SINK_BYTES - 1) / SINK_BYTES) : 0;

	o->tag = OP_DROP;
	o->peer = src >= 0 && (uint32_t)src < p->world ? (uint32_t)src :
		  p->rank;
	o->deadline = p->heard + p->timeout_ns;
	if (MPI_Imrecv(p->sink, blocks, p->sink_block, msg, &o->req) !=
	    MPI_SUCCESS)
		p->nops--;
}

/*
 * A message the protocol has no room for: received whole into the sink
 * (sink_recv()), never allocated at its size; counted, logged once.
 * Called with room for an op (op_room()).
 */
static void refuse(struct dlc_peer *p, MPI_Message *msg, int src, int tag,
		   int count)
{
	pthread_mutex_lock(&p->lock);
	p->c.rejected++;
	if (!p->said_rejected++)
		peer_log(p, DLC_LOG_WARN,
			 "cluster: a message from rank %d of tag %d announced %d bytes, not what the protocol allows for it: dropped unread (counted; not logged again)",
			 src, tag, count);
	pthread_mutex_unlock(&p->lock);
	sink_recv(p, op_add(p), msg, src, count);
}

/* Take what arrived off the wire: 1 when something did. */
static int receive(struct dlc_peer *p)
{
	int i, any = 0;

	for (i = 0; i < RECV_BURST && !orphaned(p); i++) {
		MPI_Message msg;
		MPI_Status st;
		struct op *o;
		int flag = 0, count = -1;

		/* No memory for an op: the messages wait in MPI meanwhile. */
		if (!op_room(p))
			break;
		if (MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, p->comm, &flag,
				&msg, &st) != MPI_SUCCESS || !flag) {
			beat(p);
			break;
		}
		beat(p);
		if (orphaned(p))
			break;
		any = 1;
		MPI_Get_count(&st, MPI_BYTE, &count);
		p->heard = dlc_now_ns();
		/* Checked before a byte is allocated for it. */
		if (!size_allowed(p, st.MPI_SOURCE, st.MPI_TAG, count)) {
			refuse(p, &msg, st.MPI_SOURCE, st.MPI_TAG, count);
			beat(p);
			continue;
		}
		o = op_add(p);	/* op_room() above: never NULL */
		o->b = dlc_buf_alloc(count > 0 ? (size_t)count : 1);
		if (!o->b) {
			/* No memory for its bytes: consumed anyway, dropped. */
			sink_recv(p, o, &msg, st.MPI_SOURCE, count);
			beat(p);
			continue;
		}
		o->b->len = (size_t)count;
		o->tag = st.MPI_TAG;
		o->peer = (uint32_t)st.MPI_SOURCE;
		o->deadline = p->heard + p->timeout_ns;
		if (MPI_Imrecv(o->b->data, count, MPI_BYTE, &msg, &o->req) !=
		    MPI_SUCCESS) {
			dlc_buf_put(o->b);
			p->nops--;
		}
		beat(p);
	}
	return any;
}

static void bury(struct dlc_peer *p, struct op *o)
{
	struct op *g;

	MPI_Cancel(&o->req);
	if (p->ngrave == p->grave_cap) {
		uint32_t cap = p->grave_cap ? 2 * p->grave_cap : 16;

		g = realloc(p->grave, sizeof(*g) * cap);
		if (!g)
			return;	/* leaked: MPI may still write into it */
		p->grave = g;
		p->grave_cap = cap;
	}
	p->grave[p->ngrave++] = *o;
}

/* Operations that completed, or ran past their deadline: 1 when any did. */
static int progress(struct dlc_peer *p, uint64_t now)
{
	uint32_t i = 0;
	int any = 0;

	while (i < p->nops) {
		struct op o = p->ops[i];
		int done = 0;

		MPI_Test(&p->ops[i].req, &done, MPI_STATUS_IGNORE);
		beat(p);
		/* Close gave up on this thread: nothing more of ours is touched. */
		if (orphaned(p))
			return any;
		if (!done && now < o.deadline) {
			i++;
			continue;
		}
		/* Out of the array first: answering a request adds to it. */
		o.req = p->ops[i].req;
		p->ops[i] = p->ops[--p->nops];
		any = 1;
		if (o.tag == TAG_PUT && o.mem)
			p->pushing--;
		if (done) {
			if (o.b)
				received(p, &o);
			free(o.mem);
			beat(p);
		} else {
			/* A refused message is no sign of life or death. */
			pthread_mutex_lock(&p->lock);
			if (o.tag != OP_DROP)
				mark_dead(p, o.peer, o.mem ? "take a message" :
					  "finish sending one");
			pthread_mutex_unlock(&p->lock);
			bury(p, &o);
		}
	}
	for (i = 0; i < p->ngrave;) {
		int done = 0;

		MPI_Test(&p->grave[i].req, &done, MPI_STATUS_IGNORE);
		beat(p);
		if (orphaned(p))
			return any;
		if (!done) {
			i++;
			continue;
		}
		free(p->grave[i].mem);
		dlc_buf_put(p->grave[i].b);
		p->grave[i] = p->grave[--p->ngrave];
	}
	return any;
}

/*
 * Requests to send, pushes to send, answers that are late. MPI is never
 * called under the lock: a call that blocks (a dead peer's connection)
 * must not stop the I/O thread or the watchdog.
 */
static int outgoing(struct dlc_peer *p, uint64_t now)
{
	struct push sending[PUSHES_SENDING];
	struct req_msg *q;
	uint32_t i, npush = 0, nreq = 0, *peer;
	int any = 0;

	pthread_mutex_lock(&p->lock);
	q = p->reqs;
	peer = p->req_peer;
	for (i = 0; i < p->nslots; i++) {
		struct request_slot *s = &p->slot[i];

		if (s->state == REQ_SENT && now >= s->deadline) {
			p->c.peer_failures++;
			mark_dead(p, s->peer, "answer a request");
			continue;
		}
		if (s->state != REQ_NEW)
			continue;
		s->state = REQ_SENT;
		s->deadline = now + p->timeout_ns;
		q[nreq] = (struct req_msg){
			s->seq, s->id, s->epoch,
			(s->prepared_ok ? REQ_PREPARED_OK : 0) |
			(s->behind ? REQ_BEHIND : 0),
		};
		peer[nreq++] = s->peer;
	}
	pthread_mutex_unlock(&p->lock);
	for (i = 0; i < nreq; i++) {
		struct req_msg *m = malloc(sizeof(*m));
		int err = -ENOMEM;
		struct request_slot *s;

		any = 1;
		if (m) {
			*m = q[i];
			err = send_msg(p, peer[i], TAG_REQ, m, sizeof(*m));
		}
		if (!err)
			continue;
		pthread_mutex_lock(&p->lock);
		s = slot_waiting(p, q[i].seq);
		if (s)
			finish_slot(p, s, err);
		pthread_mutex_unlock(&p->lock);
	}
	pthread_mutex_lock(&p->lock);
	while (p->plen && p->pushing + npush < PUSHES_SENDING) {
		struct push *next = &p->push[p->phead];

		p->pbytes -= next->b->len;
		p->phead = (p->phead + 1) % PUSHES;
		p->plen--;
		/*
		 * Queued before its rank was taken for dead: a send to it
		 * would hold a sending slot for the whole timeout, and the
		 * pushes behind it (a dead rank's samples to their new
		 * owners) would wait.
		 */
		if (p->dead[next->to]) {
			dlc_buf_put(next->b);
			continue;
		}
		sending[npush++] = *next;
	}
	pthread_mutex_unlock(&p->lock);
	for (i = 0; i < npush; i++) {
		struct dlc_buf *b = sending[i].b;
		uint32_t to = sending[i].to;
		struct put_msg h = { sending[i].id, 0 };
		uint8_t *mem = malloc(sizeof(h) + b->len);

		any = 1;
		if (mem) {
			memcpy(mem, &h, sizeof(h));
			memcpy(mem + sizeof(h), b->data, b->len);
			if (!send_msg(p, to, TAG_PUT, mem, sizeof(h) + b->len)) {
				pthread_mutex_lock(&p->lock);
				p->c.pushed++;
				p->c.pushed_bytes += b->len;
				pthread_mutex_unlock(&p->lock);
			}
		}
		dlc_buf_put(b);
	}
	return any;
}

/* Closing: every peer said goodbye, died, or was silent for the timeout. */
static int all_done(struct dlc_peer *p, uint64_t now)
{
	uint32_t i;

	if (now - p->heard > p->timeout_ns)
		return 1;
	for (i = 0; i < p->world; i++)
		if (i != p->rank && !p->bye[i] && !p->dead[i])
			return 0;
	return 1;
}

static void say_bye(struct dlc_peer *p)
{
	uint32_t i;

	for (i = 0; i < p->world; i++) {
		uint8_t *none = malloc(1);

		if (i != p->rank && none && !p->dead[i])
			send_msg(p, i, TAG_BYE, none, 0);
		else
			free(none);
	}
}
/*
 * The service thread: from dlc_peer_open() until close saw it leave its
 * loop (and joined it), or, when it was blocked in MPI for the timeout,
 * until that call returns (close detached it; it then leaves at once and
 * drops the last reference).
 * Started by dlc_peer_open() (peer.c); takes the lock as it needs it.
 */
void *peer_service_main(void *arg)
{
	struct dlc_peer *p = arg;
	uint32_t idle = 0;
	int bye_sent = 0;

	p->heard = dlc_now_ns();
	for (;;) {
		uint64_t now = dlc_now_ns(), ns;
		struct timespec ts;
		int stopping, any;

		beat(p);
		if (orphaned(p))
			break;
		pthread_mutex_lock(&p->lock);
		stopping = p->stopping;
		pthread_mutex_unlock(&p->lock);
		if (stopping && !bye_sent) {
			say_bye(p);
			bye_sent = 1;
			p->heard = now;
		}
		any = outgoing(p, now);
		any |= receive(p);
		any |= prepared_answers(p, dlc_now_ns());
		any |= progress(p, dlc_now_ns());
		if (orphaned(p) ||
		    (stopping && all_done(p, dlc_now_ns()) && !p->nops))
			break;
		if (any) {
			idle = 0;
			continue;
		}
		/* Nothing to do: sleep 50 us, doubling to 1 ms, or till woken. */
		ns = 50000ULL << (idle < 5 ? idle : 5);
		if (ns > 1000000)
			ns = 1000000;
		clock_gettime(CLOCK_REALTIME, &ts);
		ns += (uint64_t)ts.tv_nsec;
		ts.tv_sec += (time_t)(ns / 1000000000);
		ts.tv_nsec = (long)(ns % 1000000000);
		beat(p);
		pthread_mutex_lock(&p->lock);
		if (!p->kick)
			pthread_cond_timedwait(&p->cv, &p->lock, &ts);
		p->kick = 0;
		pthread_mutex_unlock(&p->lock);
		beat(p);
		idle++;
	}
	pthread_mutex_lock(&p->lock);
	p->service_done = 1;
	pthread_cond_broadcast(&p->done_cv);
	pthread_mutex_unlock(&p->lock);
	peer_put(p);
	return NULL;
}

/*
 * The watchdog: from dlc_peer_open() until dlc_peer_close() joins it
 * (always, before it returns).
 * Started by dlc_peer_open() (peer.c); holds the lock but while it waits.
 */
void *peer_watchdog_main(void *arg)
{
	struct dlc_peer *p = arg;
	uint64_t every = p->timeout_ns / 4, now;
	uint32_t i;

	pthread_mutex_lock(&p->lock);
	while (!p->wd_stop) {
		struct timespec ts;
		uint64_t ns;

		clock_gettime(CLOCK_REALTIME, &ts);
		ns = (uint64_t)ts.tv_nsec + every;
		ts.tv_sec += (time_t)(ns / 1000000000);
		ts.tv_nsec = (long)(ns % 1000000000);
		pthread_cond_timedwait(&p->wd_cv, &p->lock, &ts);
		now = dlc_now_ns();
		if (p->wd_stop)
			continue;
		if (p->stuck) {
			/*
			 * It beats again (the stall was a SIGSTOP, a cgroup
			 * freeze, swap): the peers are asked again.
			 */
			if (!beat_stale(p, now)) {
				p->stuck = 0;
				peer_log(p, DLC_LOG_WARN,
					 "cluster: the MPI service thread runs again: peers are asked again");
			}
			continue;
		}
		if (!beat_stale(p, now))
			continue;
		p->stuck = 1;
		p->c.stalls++;
		__atomic_store_n(&peer_mpi_died, 1, __ATOMIC_RELAXED);
		peer_log(p, DLC_LOG_WARN,
			 "cluster: the MPI service thread has been inside Open MPI for over %llu ms (a dead peer's connection?): no peer is asked until it runs again, samples come from storage",
			 (unsigned long long)(p->timeout_ns / 1000000));
		for (i = 0; i < p->nslots; i++)
			if (p->slot[i].state == REQ_NEW ||
			    p->slot[i].state == REQ_SENT) {
				p->c.peer_failures++;
				finish_slot(p, &p->slot[i], -ETIMEDOUT);
			}
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}
