// SPDX-License-Identifier: MIT
/*
 * The peer tier over Open MPI: peer.h says what it is, this file how.
 *
 * Messages, on a duplicate of MPI_COMM_WORLD (so that the application's
 * own messages never match ours), each one MPI message of bytes:
 *   TAG_REQ  asker -> owner   struct req_msg
 *   TAG_REP  owner -> asker   struct rep_msg, then the sample on a hit
 *   TAG_PUT  reader -> owner  struct put_msg, then the sample
 *   TAG_BYE  any -> all       nothing: this rank is done
 *
 * Open MPI (4.1, without ULFM) never reports a dead peer: a send to it may
 * never complete and a message it was sending never arrives. So every
 * operation has a deadline; one that passes it marks the peer dead, is
 * cancelled and, as MPI may still own its memory, kept in a graveyard
 * that is never freed while it is incomplete. A dead peer is never asked
 * again: its samples come from storage.
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "internal.h"
#include "peer.h"

/*
 * Requests of ours in flight at once, an eventfd each: the reader's queue
 * depth, up to SLOTS_MAX (past it, a read that finds no slot free goes to
 * the next tier: counted as busy).
 */
#define SLOTS_MAX	256
/* Storage reads waiting to go to their owner, and their bytes at most. */
#define PUSHES		256
#define PUSH_BYTES	(64ULL << 20)
/* Pushes being sent at once. */
#define PUSHES_SENDING	32
/* Every rank creates its loader within this long of the others. */
#define JOIN_TIMEOUT_NS	(120ULL * 1000000000ULL)
/* Messages taken off the wire per turn of the service loop. */
#define RECV_BURST	64
/*
 * peer_timeout_ms at least: the watchdog looks every quarter of it, and a
 * service turn that sleeps 1 ms and handles RECV_BURST messages must not
 * look stuck.
 */
#define TIMEOUT_MIN_MS	100

enum { TAG_REQ = 1, TAG_REP, TAG_PUT, TAG_BYE };
/* Not a tag: an op receiving a message refused by size or tag, into none. */
#define OP_DROP		(-1)

struct req_msg {
	uint32_t seq;		/* the asker's slot and generation */
	uint32_t id;
};

struct rep_msg {
	uint32_t seq;		/* the request's */
	uint32_t id;
	int32_t err;		/* 0: the sample's bytes follow; -ENOENT */
	uint32_t flags;		/* REP_FULL */
};
/* The owner's share refused a sample for room: send it none. */
#define REP_FULL	1U

struct put_msg {
	uint32_t id;
	uint32_t pad;
};

/*
 * A request's slot. Who may touch it goes with its state, all under the
 * peer's lock: FREE and TAKEN are the I/O thread's; NEW is the service
 * thread's to send; SENT waits for the answer, which the service thread
 * writes into buf/err before DONE and the eventfd's write; DONE is the
 * I/O thread's check (served) to take and free.
 */
enum request_state { REQ_FREE, REQ_TAKEN, REQ_NEW, REQ_SENT, REQ_DONE };

struct request_slot {
	int efd;
	enum request_state state;
	int abandoned;		/* its eventfd read ended without it (cancel) */
	uint32_t id, peer, seq;
	uint64_t tag;		/* the read's, without the tier's bits */
	uint64_t deadline;	/* ns: the peer is dead after it */
	struct dlc_buf *buf;	/* DONE: the peer's bytes, or NULL */
	int err;		/* DONE: 0 or why there are none */
};

/* An MPI operation of the service thread's in flight. */
struct op {
	MPI_Request req;
	void *mem;		/* a send's message */
	struct dlc_buf *b;	/* a receive's */
	int tag;
	uint32_t peer;
	uint64_t deadline;
};

struct push {
	uint32_t id;
	struct dlc_buf *b;
};

/*
 * Lobster's balancing. Each source of bytes, every peer and storage, has
 * its rate measured as this rank sees it: the bytes it delivered over the
 * time it had a request of ours outstanding, in windows of at least
 * RATE_WINDOW_NS, averaged (EWMA 1/4). A peer BAL_SLOWER times slower than
 * storage sends the share 1 - BAL_SLOWER x its rate / storage's of its
 * requests to storage, in
 * sixteenths and at most BAL_MAX of them (the rest keep its rate
 * measured), and storage's bytes of its samples are not sent to it (it
 * reads them sooner itself): a slow node or link so stops being every
 * rank's straggler, and storage serves what it serves sooner. Where storage is the slow
 * shared thing it usually is, no peer is slower, nothing is diverted and
 * storage's bytes stay at the optimum.
 */
struct rate {
	uint32_t inflight;	/* requests outstanding */
	uint64_t since;		/* ns: busy since (inflight > 0), or window start */
	uint64_t busy;		/* ns busy in this window, before @since */
	uint64_t bytes;		/* delivered in this window */
	uint64_t last;		/* ns: the last request's end */
	uint64_t bps;		/* bytes/s; 0: not measured yet */
	uint32_t divert;	/* peers: of 16 requests, sent to storage */
	uint32_t turn;		/* peers: which of the 16 this one is */
};
#define RATE_WINDOW_NS	(50ULL * 1000000)
/* Storage reads we lost track of (failed, abandoned) age out after this. */
#define RATE_STALE_NS	(2ULL * 1000000000)
#define BAL_MAX		12
/*
 * Slower than storage by this factor before any request is diverted: a
 * peer's reads cost storage nothing, so a peer somewhat slower than
 * storage alone (which the other ranks share) still pays; only a
 * straggler is worth storage's bytes.
 */
#define BAL_SLOWER	4

/*
 * Lifetimes. The watchdog is joined by dlc_peer_close(), always. The
 * service thread is joined too, unless it stopped beating for the timeout
 * (blocked inside Open MPI): close then marks the peer orphaned, makes its
 * log a no-op and detaches the thread, which holds a reference to this
 * struct and frees it when it returns from MPI (it makes no MPI call
 * after that one, and leaks the memory of the operations MPI may still
 * own). So nothing a detached thread touches is borrowed: the index's
 * sizes and CRCs are copied here at open, and the log is the loader's
 * callback behind log_lock, never called once close returned.
 */
struct dlc_peer {
	uint32_t refs;		/* atomic: the caller's, the service thread's */
	struct dlc_logger log;	/* a copy; under log_lock, off when log_closed */
	pthread_mutex_t log_lock;
	int log_closed;
	uint32_t rank, world, n;
	uint64_t timeout_ns;
	uint32_t *owner;	/* per sample, fixed at open */
	/* The index's, copied at open: per sample. */
	uint64_t *size;
	uint32_t *crc;
	uint8_t *has_crc;
	uint64_t *max_owned;	/* per rank: its largest sample's bytes */
	MPI_Comm comm;
	pthread_t thread;
	int thread_started;
	/*
	 * The watchdog: Open MPI can block inside a call when a peer's
	 * connection breaks (a TCP handshake with a dead node). The service
	 * thread's loop beats; one that missed the timeout makes the tier
	 * stuck: every request fails over to storage, nothing new is asked,
	 * and close leaves the thread (and this struct) to MPI.
	 */
	pthread_t watchdog;
	int watchdog_started;
	pthread_cond_t wd_cv;
	int wd_stop;		/* close: the watchdog ends */
	/*
	 * Atomic, ns: the service thread's last sign of life, moved on
	 * every turn, every message handled, every MPI call returned and
	 * around its sleep.
	 */
	uint64_t beat;
	int stuck;		/* the service thread missed the timeout; it
				 * clears when the thread beats again */
	pthread_cond_t done_cv;	/* close waits for service_done */
	int service_done;	/* the service thread left its loop */
	int orphaned;		/* atomic: close left the thread to MPI */
	/* Logged once: a message refused, a push refused, an entry dropped. */
	int said_rejected, said_bad_push, said_dropped;

	pthread_mutex_t lock;
	pthread_cond_t cv;	/* the service thread's sleep */
	int kick;		/* work came since it last looked: no sleep */
	int stopping;		/* close: say goodbye and finish */
	struct request_slot *slot;
	uint32_t nslots;
	/* The service thread's: requests taken from the slots, to send. */
	struct req_msg *reqs;
	uint32_t *req_peer;
	uint32_t gen;		/* seq's generation */
	struct dlc_buf **share;	/* per sample this rank owns and holds */
	uint8_t *ours;		/* per sample: served from this tier, not storage */
	uint64_t used;		/* bytes in share */
	int full;		/* the share refused a sample for room */
	uint8_t *dead;		/* per peer */
	uint8_t *peer_full;	/* per peer: it said REP_FULL */
	/* The sources' rates: per peer, and storage's at [world]. */
	struct rate *rate;
	int balancing;		/* DLCACHE_CLUSTER_BALANCE is not 0 */
	/* Per sample: a read of it this tier passed on to storage is out. */
	uint8_t *to_origin;
	struct push push[PUSHES];
	uint32_t phead, plen;
	uint64_t pbytes;
	struct dlc_peer_counters c;

	/* The service thread's alone. */
	struct op *ops;
	uint32_t nops, ops_cap;
	struct op *grave;	/* cancelled, not known complete: never freed */
	uint32_t ngrave, grave_cap;
	uint32_t pushing;	/* TAG_PUT sends in ops */
	uint8_t *bye;		/* per peer: it said TAG_BYE */
	uint64_t heard;		/* ns: the last message from a peer */
};

/* MPI is the process's: initialised once, finalised at its exit. */
static pthread_mutex_t mpi_lock = PTHREAD_MUTEX_INITIALIZER;
static int mpi_ours;		/* we called MPI_Init_thread */
static int mpi_peer_died;	/* a peer died: MPI_Finalize could hang */

/*
 * The peer's log: the loader's callback, under log_lock, until close
 * returned (the detached thread's lines after that are dropped).
 */
static void plog(struct dlc_peer *p, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void plog(struct dlc_peer *p, int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&p->log_lock);
	if (!p->log_closed)
		dlc_logf(&p->log, level, "%s", msg);
	pthread_mutex_unlock(&p->log_lock);
}

static void beat(struct dlc_peer *p)
{
	__atomic_store_n(&p->beat, dlc_now_ns(), __ATOMIC_RELAXED);
}

/* The service thread has not beaten for the timeout at @now. */
static int beat_stale(struct dlc_peer *p, uint64_t now)
{
	uint64_t b = __atomic_load_n(&p->beat, __ATOMIC_RELAXED);

	return (int64_t)(now - b) > (int64_t)p->timeout_ns;
}

static int orphaned(struct dlc_peer *p)
{
	return __atomic_load_n(&p->orphaned, __ATOMIC_ACQUIRE);
}

/* Sample @id's bytes are @b: the index's size, and its CRC when it has one. */
static int sample_ok(const struct dlc_peer *p, uint32_t id,
		     const struct dlc_buf *b)
{
	return id < p->n && b->len == p->size[id] &&
	       (!p->has_crc[id] || dlc_buf_crc_matches(b, p->crc[id]));
}

static void finalize_at_exit(void)
{
	int fin = 0;

	MPI_Finalized(&fin);
	if (!fin && !__atomic_load_n(&mpi_peer_died, __ATOMIC_RELAXED))
		MPI_Finalize();
}

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/*
 * The owners: samples in a hashed order, each to the rank that owns the
 * fewest bytes so far, so that every share is within one sample of
 * N / world bytes (a plain hash leaves them a few per cent apart, and a
 * share of exactly its fair bytes then overflows). Every rank computes
 * the same from the same index.
 */
struct hashed {
	uint64_t key;
	uint32_t id;
};

static int by_key(const void *a, const void *b)
{
	const struct hashed *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

static int place(struct dlc_peer *p)
{
	struct hashed *h = malloc(sizeof(*h) * p->n);
	uint64_t *bytes = calloc(p->world, sizeof(*bytes));
	uint32_t i, r, best;

	if (!h || !bytes) {
		free(h);
		free(bytes);
		return -ENOMEM;
	}
	for (i = 0; i < p->n; i++)
		h[i] = (struct hashed){ mix64(i), i };
	qsort(h, p->n, sizeof(*h), by_key);
	for (i = 0; i < p->n; i++) {
		best = 0;
		for (r = 1; r < p->world; r++)
			if (bytes[r] < bytes[best])
				best = r;
		p->owner[h[i].id] = best;
		bytes[best] += p->size[h[i].id];
		if (p->size[h[i].id] > p->max_owned[best])
			p->max_owned[best] = p->size[h[i].id];
	}
	free(h);
	free(bytes);
	return 0;
}

/* ---- the share ---- */

/*
 * Take @b as the bytes of @id when this rank owns it and there is room.
 * @ok: sample_ok(), computed before the lock was taken (a CRC of a large
 * sample under it would stall the I/O thread); bytes that fail it are
 * never admitted.
 */
static void admit_locked(struct dlc_peer *p, uint32_t id,
			 const struct dlc_buf *b, int ok)
{
	struct dlc_buf *keep;

	if (!ok || id >= p->n || p->owner[id] != p->rank || p->share[id] ||
	    b->len != p->size[id])
		return;
	if (p->used + b->len > p->c.capacity) {
		p->full = 1;
		return;
	}
	/* An exact copy: what the share accounts is what it holds. */
	keep = dlc_buf_alloc(b->len);
	if (!keep)
		return;
	memcpy(keep->data, b->data, b->len);
	/* The CRC checked is the copy's too: answers need not redo it. */
	keep->crc_memo = __atomic_load_n(&b->crc_memo, __ATOMIC_RELAXED);
	p->share[id] = keep;
	p->used += b->len;
	p->c.admitted++;
}

/*
 * Called with the lock held: the share's bytes @b of @id failed their
 * check (memory went bad under them): never served again.
 */
static void drop_share_locked(struct dlc_peer *p, uint32_t id,
			      const struct dlc_buf *b)
{
	if (id >= p->n || !p->share[id] || p->share[id] != b)
		return;
	p->used -= p->share[id]->len;
	dlc_buf_put(p->share[id]);
	p->share[id] = NULL;
	p->c.share_dropped++;
	if (!p->said_dropped++)
		plog(p, DLC_LOG_WARN,
		     "cluster: this rank's cached bytes of sample %u are not the indexed file's: dropped from the share (counted; not logged again)",
		     id);
}

/* ---- the rates ---- */

/* Called with the lock held: a request to source @r is out. */
static void rate_start(struct rate *r, uint64_t now)
{
	if (r->inflight && now - r->last > RATE_STALE_NS) {
		/* Requests that never ended (a failed storage read). */
		r->inflight = 0;
		r->busy = r->bytes = 0;
	}
	if (!r->inflight++)
		r->since = now;
	if (!r->last)
		r->last = now;
}

/* Called with the lock held: the peers' diversions from the rates. */
static void rebalance(struct dlc_peer *p)
{
	uint64_t s = p->rate[p->world].bps;
	uint32_t i;

	for (i = 0; i < p->world; i++) {
		struct rate *r = &p->rate[i];

		r->divert = 0;
		if (p->balancing && s && r->bps && BAL_SLOWER * r->bps < s)
			r->divert = (uint32_t)(16 - 16 * BAL_SLOWER * r->bps / s);
		if (r->divert > BAL_MAX)
			r->divert = BAL_MAX;
	}
}

/* Called with the lock held: a request to source @r ended with @bytes. */
static void rate_end(struct dlc_peer *p, struct rate *r, uint64_t now,
		     uint64_t bytes)
{
	uint64_t busy;

	if (!r->inflight)
		return;
	r->last = now;
	r->bytes += bytes;
	if (!--r->inflight) {
		r->busy += now - r->since;
		r->since = now;
	}
	busy = r->busy + (r->inflight ? now - r->since : 0);
	if (busy < RATE_WINDOW_NS)
		return;
	bytes = r->bytes * 1000000000ULL / busy;
	r->bps = r->bps ? r->bps - r->bps / 4 + bytes / 4 : bytes;
	r->busy = r->bytes = 0;
	r->since = now;
	rebalance(p);
}

/* Called with the lock held: sample @id's read goes to storage now. */
static void to_storage(struct dlc_peer *p, uint32_t id)
{
	if (p->to_origin[id])
		return;
	p->to_origin[id] = 1;
	rate_start(&p->rate[p->world], dlc_now_ns());
}

/* ---- the service thread ---- */

static void wake_slot(struct request_slot *s)
{
	uint64_t one = 1;

	if (write(s->efd, &one, sizeof(one)) != sizeof(one))
		s->err = s->err ? s->err : -EIO;
}

/* Called with the lock held: @s ends with @err (its bytes in s->buf). */
static void finish_slot(struct dlc_peer *p, struct request_slot *s, int err)
{
	rate_end(p, &p->rate[s->peer], dlc_now_ns(), s->buf ? s->buf->len : 0);
	s->err = err;
	if (s->abandoned) {
		dlc_buf_put(s->buf);
		s->buf = NULL;
		s->abandoned = 0;
		s->state = REQ_FREE;
		return;
	}
	s->state = REQ_DONE;
	wake_slot(s);
}

/* Called with the lock held. */
static void mark_dead(struct dlc_peer *p, uint32_t peer, const char *what)
{
	uint32_t i;

	if (peer >= p->world || p->dead[peer])
		return;
	p->dead[peer] = 1;
	p->c.dead_peers++;
	__atomic_store_n(&mpi_peer_died, 1, __ATOMIC_RELAXED);
	plog(p, DLC_LOG_WARN,
	     "cluster: rank %u did not %s within %llu ms: taken for dead; its samples come from storage",
	     peer, what, (unsigned long long)(p->timeout_ns / 1000000));
	for (i = 0; i < p->nslots; i++) {
		struct request_slot *s = &p->slot[i];

		if (s->peer == peer &&
		    (s->state == REQ_NEW || s->state == REQ_SENT)) {
			p->c.peer_failures++;
			finish_slot(p, s, -ETIMEDOUT);
		}
	}
}

static struct op *op_add(struct dlc_peer *p)
{
	struct op *o;

	if (p->nops == p->ops_cap) {
		uint32_t cap = p->ops_cap ? 2 * p->ops_cap : 64;

		o = realloc(p->ops, sizeof(*o) * cap);
		if (!o)
			return NULL;
		p->ops = o;
		p->ops_cap = cap;
	}
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

/* A peer asked for a sample: answer from the share. */
static void answer(struct dlc_peer *p, uint32_t peer, const struct dlc_buf *m)
{
	struct req_msg q;
	struct rep_msg a = { 0 };
	struct dlc_buf *b = NULL;
	uint8_t *mem;

	if (m->len < sizeof(q))
		return;
	memcpy(&q, m->data, sizeof(q));
	a.seq = q.seq;
	a.id = q.id;
	pthread_mutex_lock(&p->lock);
	if (q.id < p->n && p->share[q.id])
		b = dlc_buf_get(p->share[q.id]);
	pthread_mutex_unlock(&p->lock);
	/* Memoised at admission: a CRC only when the bytes changed since. */
	if (b && !sample_ok(p, q.id, b)) {
		pthread_mutex_lock(&p->lock);
		drop_share_locked(p, q.id, b);
		pthread_mutex_unlock(&p->lock);
		dlc_buf_put(b);
		b = NULL;
	}
	pthread_mutex_lock(&p->lock);
	a.err = b ? 0 : -ENOENT;
	a.flags = p->full ? REP_FULL : 0;
	p->c.served++;
	if (b) {
		p->c.served_hits++;
		p->c.served_bytes += b->len;
	}
	if (p->dead[peer]) {
		pthread_mutex_unlock(&p->lock);
		dlc_buf_put(b);
		return;
	}
	pthread_mutex_unlock(&p->lock);
	mem = malloc(sizeof(a) + (b ? b->len : 0));
	if (mem) {
		memcpy(mem, &a, sizeof(a));
		if (b)
			memcpy(mem + sizeof(a), b->data, b->len);
		send_msg(p, peer, TAG_REP, mem, sizeof(a) + (b ? b->len : 0));
	}
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
	if (s && s->peer == peer && s->id == a.id) {
		if (a.err == 0) {
			s->buf = m;
			m = NULL;
		} else {
			p->c.peer_misses++;
		}
		finish_slot(p, s, a.err ? -ENOENT : 0);
	}
	pthread_mutex_unlock(&p->lock);
	dlc_buf_put(m);	/* a late answer, to a request that timed out */
}

/* A peer's storage read of a sample this rank owns: checked, then kept. */
static void pushed_in(struct dlc_peer *p, uint32_t peer, struct dlc_buf *m)
{
	struct put_msg h;
	int ok;

	if (m->len < sizeof(h))
		return;
	memcpy(&h, m->data, sizeof(h));
	m->data += sizeof(h);
	m->len -= sizeof(h);
	ok = sample_ok(p, h.id, m) && p->owner[h.id] == p->rank;
	pthread_mutex_lock(&p->lock);
	if (ok) {
		admit_locked(p, h.id, m, 1);
	} else {
		p->c.bad_pushes++;
		if (!p->said_bad_push++)
			plog(p, DLC_LOG_WARN,
			     "cluster: rank %u sent %zu bytes as sample %u, not the indexed file's (size, CRC-32C or owner): not kept (counted; not logged again)",
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
 * largest sample @src owns, a push the largest this rank owns (their
 * exact sizes are checked when their sample's ID is read).
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
		       n - sizeof(struct rep_msg) <= p->max_owned[src];
	case TAG_PUT:
		return n >= sizeof(struct put_msg) &&
		       n - sizeof(struct put_msg) <= p->max_owned[p->rank];
	case TAG_BYE:
		return n == 0;
	}
	return 0;
}

/*
 * Where a message is received into no bytes: a page no one may touch.
 * Open MPI's shared-memory transport (vader, single copy) reads a
 * truncated message's whole length into the buffer given for none of it:
 * here its process_vm_readv() fails at the first byte (EFAULT, one line
 * on stderr) instead of writing over what follows.
 */
static pthread_once_t nowhere_once = PTHREAD_ONCE_INIT;
static void *nowhere_page;

static void nowhere_init(void)
{
	void *m = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	nowhere_page = m == MAP_FAILED ? NULL : m;
}

static void *nowhere(void)
{
	pthread_once(&nowhere_once, nowhere_init);
	return nowhere_page;
}

/* Consume the message @msg into no bytes, waiting: a last resort. */
static void drain(MPI_Message *msg)
{
	void *none = nowhere();

	if (none)
		MPI_Mrecv(none, 0, MPI_BYTE, msg, MPI_STATUS_IGNORE);
}

/*
 * A message the protocol has no room for: received into no bytes (MPI
 * drops what does not fit: MPI_ERR_TRUNCATE), counted, logged once.
 */
static void refuse(struct dlc_peer *p, MPI_Message *msg, int src, int tag,
		   int count)
{
	void *none = nowhere();
	struct op *o = none ? op_add(p) : NULL;

	pthread_mutex_lock(&p->lock);
	p->c.rejected++;
	if (!p->said_rejected++)
		plog(p, DLC_LOG_WARN,
		     "cluster: a message from rank %d of tag %d announced %d bytes, not what the protocol allows for it: dropped unread (counted; not logged again)",
		     src, tag, count);
	pthread_mutex_unlock(&p->lock);
	if (!o) {
		drain(msg);
		return;
	}
	o->tag = OP_DROP;
	o->peer = src >= 0 && (uint32_t)src < p->world ? (uint32_t)src :
		  p->rank;
	o->deadline = p->heard + p->timeout_ns;
	if (MPI_Imrecv(none, 0, MPI_BYTE, msg, &o->req) != MPI_SUCCESS)
		p->nops--;
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
		o = op_add(p);
		if (o)
			o->b = dlc_buf_alloc(count > 0 ? (size_t)count : 1);
		if (!o || !o->b) {
			/* Consume it anyway, into nothing: MPI_ERR_TRUNCATE. */
			if (o)
				p->nops--;
			drain(&msg);
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
		q[nreq] = (struct req_msg){ s->seq, s->id };
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
		sending[npush++] = p->push[p->phead];
		p->pbytes -= p->push[p->phead].b->len;
		p->phead = (p->phead + 1) % PUSHES;
		p->plen--;
	}
	pthread_mutex_unlock(&p->lock);
	for (i = 0; i < npush; i++) {
		struct dlc_buf *b = sending[i].b;
		uint32_t to = p->owner[sending[i].id];
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

static void peer_free(struct dlc_peer *p);

/* Drop a reference to @p: the last one frees it. */
static void peer_put(struct dlc_peer *p)
{
	if (!__atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL))
		peer_free(p);
}

/*
 * The service thread: from dlc_peer_open() until close saw it leave its
 * loop (and joined it), or, when it was blocked in MPI for the timeout,
 * until that call returns (close detached it; it then leaves at once and
 * drops the last reference).
 */
static void *service_main(void *arg)
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
 */
static void *watchdog_main(void *arg)
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
				plog(p, DLC_LOG_WARN,
				     "cluster: the MPI service thread runs again: peers are asked again");
			}
			continue;
		}
		if (!beat_stale(p, now))
			continue;
		p->stuck = 1;
		p->c.stalls++;
		__atomic_store_n(&mpi_peer_died, 1, __ATOMIC_RELAXED);
		plog(p, DLC_LOG_WARN,
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

/* ---- the read tier (the I/O thread's) ---- */

static int peer_queue(void *tier, struct dlc_reader *r, uint32_t id,
		      uint64_t tag, char *scratch, size_t len)
{
	struct dlc_peer *p = tier;
	struct dlc_buf *b = NULL;
	struct request_slot *s = NULL;
	uint32_t owner, i;

	if (id >= p->n)
		return 0;
	owner = p->owner[id];
	pthread_mutex_lock(&p->lock);
	if (owner == p->rank) {
		if (p->share[id])
			b = dlc_buf_get(p->share[id]);
		else
			to_storage(p, id);
		pthread_mutex_unlock(&p->lock);
		return b && !dlc_reader_queue_buf(r, b, tag);
	}
	if (p->dead[owner] || p->stopping || p->stuck) {
		to_storage(p, id);
		pthread_mutex_unlock(&p->lock);
		return 0;
	}
	if (p->rate[owner].divert &&
	    (p->rate[owner].turn++ & 15) < p->rate[owner].divert) {
		p->c.peer_diverted++;
		to_storage(p, id);
		pthread_mutex_unlock(&p->lock);
		return 0;
	}
	for (i = 0; i < p->nslots; i++)
		if (p->slot[i].state == REQ_FREE) {
			s = &p->slot[i];
			break;
		}
	if (!s) {
		p->c.peer_busy++;
		to_storage(p, id);
		pthread_mutex_unlock(&p->lock);
		return 0;
	}
	s->state = REQ_TAKEN;
	s->id = id;
	s->peer = owner;
	s->tag = tag & ~DLC_TIER_TAG_MASK;
	s->seq = (++p->gen * p->nslots) + (uint32_t)(s - p->slot);
	s->buf = NULL;
	s->err = 0;
	pthread_mutex_unlock(&p->lock);

	/* Its answer ends this read: the service thread writes the eventfd. */
	if (dlc_reader_queue_range(r, s->efd, 0, sizeof(uint64_t), 0, tag)) {
		pthread_mutex_lock(&p->lock);
		s->state = REQ_FREE;
		to_storage(p, id);
		pthread_mutex_unlock(&p->lock);
		return 0;
	}
	pthread_mutex_lock(&p->lock);
	s->state = REQ_NEW;
	rate_start(&p->rate[owner], dlc_now_ns());
	p->kick = 1;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->lock);
	return 1;
}

/* The slot whose eventfd read @tag is, or NULL (a read of the share). */
static struct request_slot *slot_of(struct dlc_peer *p, uint32_t id, uint64_t tag)
{
	uint32_t i;

	for (i = 0; i < p->nslots; i++)
		if (p->slot[i].state != REQ_FREE && p->slot[i].id == id &&
		    p->slot[i].tag == tag && !p->slot[i].abandoned)
			return &p->slot[i];
	return NULL;
}

static int peer_served(void *tier, uint32_t id, struct dlc_read_done *d)
{
	struct dlc_peer *p = tier;
	struct dlc_buf *b = NULL;
	uint32_t from = p->rank;
	struct request_slot *s;
	int err = d->err;

	pthread_mutex_lock(&p->lock);
	s = slot_of(p, id, d->tag);
	if (s) {
		from = s->peer;
		if (s->state == REQ_DONE) {
			b = s->buf;
			err = err ? err : s->err;
			s->buf = NULL;
			s->state = REQ_FREE;
		} else {
			/* The eventfd read failed before the answer came. */
			s->abandoned = 1;
			err = err ? err : -EIO;
		}
		dlc_buf_put(d->buf);
		d->buf = b;
		b = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	if (!err && !sample_ok(p, id, d->buf)) {
		err = -EBADMSG;
		if (s)
			plog(p, DLC_LOG_WARN,
			     "cluster: the bytes of sample %u from rank %u are not the indexed file's: reading storage",
			     id, from);
	}
	pthread_mutex_lock(&p->lock);
	if (err == -EBADMSG && !s)
		drop_share_locked(p, id, d->buf);
	if (!err) {
		p->ours[id] = 1;
		if (s) {
			p->c.peer_hits++;
			p->c.peer_bytes += d->buf->len;
		} else {
			p->c.local_hits++;
			p->c.local_bytes += d->buf->len;
		}
	} else {
		if (err == -EBADMSG)
			p->c.peer_failures++;
		to_storage(p, id);
	}
	pthread_mutex_unlock(&p->lock);
	if (err) {
		dlc_buf_put(d->buf);
		d->buf = NULL;
	}
	return err;
}

static void peer_offer(void *tier, uint32_t id, struct dlc_buf *b)
{
	struct dlc_peer *p = tier;
	uint32_t owner;
	int ok = 0;

	if (id >= p->n)
		return;
	owner = p->owner[id];
	/* Outside the lock: a CRC (memoised when the reader checked it). */
	if (owner == p->rank)
		ok = sample_ok(p, id, b);
	pthread_mutex_lock(&p->lock);
	if (p->to_origin[id]) {
		p->to_origin[id] = 0;
		rate_end(p, &p->rate[p->world], dlc_now_ns(), b->len);
	}
	if (p->ours[id]) {
		/* The bytes came from this tier, not storage. */
		p->ours[id] = 0;
	} else if (owner == p->rank) {
		admit_locked(p, id, b, ok);
	} else if (!p->dead[owner] && !p->peer_full[owner] &&
		   !p->rate[owner].divert && !p->stopping && !p->stuck &&
		   p->plen < PUSHES &&
		   p->pbytes + b->len <= PUSH_BYTES &&
		   b->len == p->size[id]) {
		p->push[(p->phead + p->plen++) % PUSHES] =
			(struct push){ id, dlc_buf_get(b) };
		p->pbytes += b->len;
		p->kick = 1;
		pthread_cond_signal(&p->cv);
	}
	pthread_mutex_unlock(&p->lock);
}

static const struct dlc_tier_ops peer_ops = {
	.name = "peers",
	.queue = peer_queue,
	.served = peer_served,
	.offer = peer_offer,
};

void dlc_peer_tier(struct dlc_peer *p, struct dlc_tier *out)
{
	out->ops = &peer_ops;
	out->tier = p;
}

void dlc_peer_cancel(struct dlc_peer *p)
{
	uint32_t i;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	for (i = 0; i < p->nslots; i++) {
		struct request_slot *s = &p->slot[i];

		if (s->state == REQ_NEW || s->state == REQ_SENT) {
			/* The answer, if it comes, frees the slot. */
			s->abandoned = 1;
			wake_slot(s);
		}
	}
	pthread_mutex_unlock(&p->lock);
}

void dlc_peer_counters(struct dlc_peer *p, struct dlc_peer_counters *out)
{
	pthread_mutex_lock(&p->lock);
	*out = p->c;
	out->used = p->used;
	out->stuck = (uint64_t)p->stuck;
	pthread_mutex_unlock(&p->lock);
}

uint32_t dlc_peer_owner(const struct dlc_peer *p, uint32_t id)
{
	return id < p->n ? p->owner[id] : 0;
}

/* ---- open and close ---- */

/*
 * The job's communicator, duplicated: collective, so a rank that never
 * comes (it failed before, or died) would hang the others in
 * MPI_Comm_dup(). MPI_Comm_idup() with a deadline instead; the request of
 * one that timed out is left to MPI (it may complete into the void).
 */
static int dup_world(struct dlc_peer *p)
{
	uint64_t deadline = dlc_now_ns() + JOIN_TIMEOUT_NS;
	/* Where MPI writes the new communicator: leaked when it is late. */
	MPI_Comm *comm = malloc(sizeof(*comm));
	MPI_Request req;
	int done = 0;

	if (!comm)
		return -ENOMEM;
	if (MPI_Comm_idup(MPI_COMM_WORLD, comm, &req) != MPI_SUCCESS) {
		free(comm);
		return -EIO;
	}
	while (!done) {
		if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			return -EIO;
		if (!done && dlc_now_ns() > deadline) {
			plog(p, DLC_LOG_ERROR,
				 "cluster: not every one of the %u ranks created its loader within %llu s",
				 p->world,
				 (unsigned long long)(JOIN_TIMEOUT_NS / 1000000000));
			return -ETIMEDOUT;
		}
		if (!done)
			usleep(1000);
	}
	p->comm = *comm;
	free(comm);
	MPI_Comm_set_errhandler(p->comm, MPI_ERRORS_RETURN);
	return 0;
}

static int join_mpi(struct dlc_peer *p)
{
	int init = 0, fin = 0, level = 0, rank = -1, size = 0;
	int ret = 0;

	pthread_mutex_lock(&mpi_lock);
	MPI_Initialized(&init);
	MPI_Finalized(&fin);
	if (fin) {
		plog(p, DLC_LOG_ERROR,
			 "cluster: MPI was finalised in this process already");
		ret = -EINVAL;
		goto out;
	}
	if (!init) {
		if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &level) !=
		    MPI_SUCCESS) {
			plog(p, DLC_LOG_ERROR,
				 "cluster: MPI_Init_thread failed");
			ret = -EIO;
			goto out;
		}
		mpi_ours = 1;
		atexit(finalize_at_exit);
	} else {
		MPI_Query_thread(&level);
	}
	if (level < MPI_THREAD_MULTIPLE) {
		plog(p, DLC_LOG_ERROR,
			 "cluster: MPI gives thread level %d, not MPI_THREAD_MULTIPLE: the peer tier's thread cannot share it",
			 level);
		ret = -EOPNOTSUPP;
		goto out;
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if ((uint32_t)rank != p->rank || (uint32_t)size != p->world) {
		plog(p, DLC_LOG_ERROR,
			 "cluster: dlc_config says rank %u of %u, MPI says rank %d of %d",
			 p->rank, p->world, rank, size);
		ret = -EINVAL;
		goto out;
	}
	ret = dup_world(p);
out:
	pthread_mutex_unlock(&mpi_lock);
	return ret;
}

static void peer_free(struct dlc_peer *p)
{
	uint32_t i;

	for (i = 0; i < p->nslots; i++) {
		if (p->slot[i].efd >= 0)
			close(p->slot[i].efd);
		dlc_buf_put(p->slot[i].buf);
	}
	if (p->share)
		for (i = 0; i < p->n; i++)
			dlc_buf_put(p->share[i]);
	for (i = 0; i < p->plen; i++)
		dlc_buf_put(p->push[(p->phead + i) % PUSHES].b);
	/* Left to MPI by close: it may still own what its operations hold. */
	if (!orphaned(p))
		for (i = 0; i < p->nops; i++) {
			free(p->ops[i].mem);
			dlc_buf_put(p->ops[i].b);
		}
	free(p->slot);
	free(p->reqs);
	free(p->req_peer);
	free(p->ops);
	free(p->grave);
	free(p->share);
	free(p->ours);
	free(p->owner);
	free(p->dead);
	free(p->peer_full);
	free(p->bye);
	free(p->rate);
	free(p->to_origin);
	free(p->size);
	free(p->crc);
	free(p->has_crc);
	free(p->max_owned);
	pthread_cond_destroy(&p->done_cv);
	pthread_cond_destroy(&p->wd_cv);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->log_lock);
	free(p);
}

int dlc_peer_open(const struct dlc_peer_opts *o, struct dlc_peer **out)
{
	struct dlc_peer *p = calloc(1, sizeof(*p));
	const char *env;
	uint32_t i;
	int ret;

	if (!p)
		return -ENOMEM;
	if (o->log)
		p->log = *o->log;
	if (o->timeout_ms && o->timeout_ms < TIMEOUT_MIN_MS) {
		dlc_logf(o->log, DLC_LOG_ERROR,
			 "cluster: peer_timeout_ms must be 0 or at least %u, got %u",
			 TIMEOUT_MIN_MS, o->timeout_ms);
		free(p);
		return -EINVAL;
	}
	p->refs = 1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->log_lock, NULL);
	pthread_cond_init(&p->cv, NULL);
	pthread_cond_init(&p->wd_cv, NULL);
	pthread_cond_init(&p->done_cv, NULL);
	p->nslots = o->queue_depth < SLOTS_MAX ? o->queue_depth : SLOTS_MAX;
	if (!p->nslots)
		p->nslots = 1;
	p->slot = calloc(p->nslots, sizeof(*p->slot));
	p->reqs = calloc(p->nslots, sizeof(*p->reqs));
	p->req_peer = calloc(p->nslots, sizeof(*p->req_peer));
	if (!p->slot || !p->reqs || !p->req_peer) {
		free(p->slot);
		free(p->reqs);
		free(p->req_peer);
		free(p);
		return -ENOMEM;
	}
	for (i = 0; i < p->nslots; i++)
		p->slot[i].efd = -1;
	p->rank = o->rank;
	p->world = o->world;
	p->n = dlc_index_count(o->idx);
	p->c.capacity = o->capacity;
	p->timeout_ns = (uint64_t)(o->timeout_ms ? o->timeout_ms : 2000) *
			1000000ULL;
	p->comm = MPI_COMM_NULL;
	p->owner = malloc(sizeof(*p->owner) * p->n);
	p->share = calloc(p->n, sizeof(*p->share));
	p->ours = calloc(p->n, 1);
	p->dead = calloc(p->world, 1);
	p->peer_full = calloc(p->world, 1);
	p->bye = calloc(p->world, 1);
	p->rate = calloc(p->world + 1, sizeof(*p->rate));
	p->to_origin = calloc(p->n, 1);
	p->size = malloc(sizeof(*p->size) * p->n);
	p->crc = calloc(p->n, sizeof(*p->crc));
	p->has_crc = calloc(p->n, 1);
	p->max_owned = calloc(p->world, sizeof(*p->max_owned));
	env = getenv("DLCACHE_CLUSTER_BALANCE");
	p->balancing = !env || strcmp(env, "0");
	if (!p->n || !p->owner || !p->share || !p->ours ||
	    !p->dead || !p->peer_full || !p->bye || !p->rate || !p->to_origin ||
	    !p->size || !p->crc || !p->has_crc || !p->max_owned) {
		ret = p->n ? -ENOMEM : -EINVAL;
		goto err_free;
	}
	/* Copies: the service thread may outlive the caller's index. */
	for (i = 0; i < p->n; i++) {
		p->size[i] = dlc_index_size(o->idx, i);
		p->has_crc[i] = !dlc_index_crc32c(o->idx, i, &p->crc[i]);
	}
	for (i = 0; i < p->nslots; i++) {
		p->slot[i].efd = eventfd(0, EFD_CLOEXEC);
		if (p->slot[i].efd < 0) {
			ret = -errno;
			plog(p, DLC_LOG_ERROR, "cluster: eventfd: %s",
				 strerror(-ret));
			goto err_free;
		}
	}
	ret = place(p);
	if (ret)
		goto err_free;
	ret = join_mpi(p);
	if (ret)
		goto err_free;
	p->beat = dlc_now_ns();
	p->refs = 2;	/* the service thread's */
	ret = pthread_create(&p->thread, NULL, service_main, p);
	if (ret) {
		p->refs = 1;
		ret = -ret;
		goto err_free_comm;
	}
	p->thread_started = 1;
	ret = pthread_create(&p->watchdog, NULL, watchdog_main, p);
	if (ret) {
		dlc_peer_close(p);
		return -ret;
	}
	p->watchdog_started = 1;
	plog(p, DLC_LOG_INFO,
		 "cluster: rank %u of %u over MPI; this rank's share %llu MiB, peers time out after %llu ms%s",
		 p->rank, p->world, (unsigned long long)(o->capacity >> 20),
		 (unsigned long long)(p->timeout_ns / 1000000),
		 p->balancing ? "" : "; balancing off (DLCACHE_CLUSTER_BALANCE=0)");
	*out = p;
	return 0;

err_free_comm:
	MPI_Comm_free(&p->comm);
err_free:
	peer_free(p);
	return ret;
}

/* The rates measured, as one INFO line: what the balancing saw. */
static void log_rates(struct dlc_peer *p)
{
	char line[512];
	size_t n = 0;
	uint32_t i;

	for (i = 0; i < p->world && n < sizeof(line) - 40; i++)
		if (i != p->rank)
			n += (size_t)snprintf(line + n, sizeof(line) - n,
					      " %u: %.1f (%u/16 to storage)", i,
					      (double)p->rate[i].bps / 1e6,
					      p->rate[i].divert);
	plog(p, DLC_LOG_INFO,
		 "cluster: rates measured, MB/s: storage %.1f; peers%s",
		 (double)p->rate[p->world].bps / 1e6, n ? line : " none");
}

/*
 * Waits for the service thread to leave its loop (its goodbyes said and
 * answered, or the peers silent for the timeout) and joins both threads.
 * A service thread that stopped beating for the timeout is blocked inside
 * Open MPI: it is left to MPI (orphaned, detached) with the last
 * reference, and this returns; it touches nothing of the caller's.
 */
void dlc_peer_close(struct dlc_peer *p)
{
	struct dlc_peer_counters c;
	int orphan = 0;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	log_rates(p);
	p->stopping = 1;
	p->kick = 1;
	pthread_cond_signal(&p->cv);
	while (p->thread_started && !p->service_done) {
		struct timespec ts;
		uint64_t ns;

		if (beat_stale(p, dlc_now_ns())) {
			orphan = 1;
			__atomic_store_n(&p->orphaned, 1, __ATOMIC_RELEASE);
			break;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ns = (uint64_t)ts.tv_nsec + p->timeout_ns / 4;
		ts.tv_sec += (time_t)(ns / 1000000000);
		ts.tv_nsec = (long)(ns % 1000000000);
		pthread_cond_timedwait(&p->done_cv, &p->lock, &ts);
	}
	p->wd_stop = 1;
	pthread_cond_signal(&p->wd_cv);
	c = p->c;
	pthread_mutex_unlock(&p->lock);
	if (p->watchdog_started)
		pthread_join(p->watchdog, NULL);
	if (c.rejected || c.bad_pushes || c.share_dropped)
		plog(p, DLC_LOG_WARN,
		     "cluster: peers sent %llu messages the protocol has no room for and %llu pushes of bytes not the indexed files'; %llu cached samples failed their check",
		     (unsigned long long)c.rejected,
		     (unsigned long long)c.bad_pushes,
		     (unsigned long long)c.share_dropped);
	if (orphan) {
		plog(p, DLC_LOG_WARN,
		     "cluster: the MPI service thread has been inside Open MPI for over %llu ms: left to it (it frees its own state if the call ever returns)",
		     (unsigned long long)(p->timeout_ns / 1000000));
		/* From here on the thread's lines go nowhere. */
		pthread_mutex_lock(&p->log_lock);
		p->log_closed = 1;
		pthread_mutex_unlock(&p->log_lock);
		pthread_detach(p->thread);
		peer_put(p);
		return;
	}
	if (p->thread_started)
		pthread_join(p->thread, NULL);
	/* A dead peer's operations are in the graveyard: keep the comm. */
	if (p->comm != MPI_COMM_NULL && !p->ngrave &&
	    !p->c.dead_peers)
		MPI_Comm_free(&p->comm);
	p->log_closed = 1;
	peer_put(p);
}
