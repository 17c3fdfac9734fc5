// SPDX-License-Identifier: MIT
/*
 * The peer tier over Open MPI: peer.h says what it is, peer_int.h how its
 * files layer. This one is the read tier the loader's I/O thread calls
 * (queue, served, offer), and open and close; placement, the share and
 * the rates are peer_state.c's, the service thread peer_service.c's.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "peer_int.h"
#include "reader.h"

/*
 * Requests of ours in flight at once, an eventfd each: the reader's queue
 * depth, up to SLOTS_MAX (past it, a read that finds no slot free goes to
 * the next tier: counted as busy).
 */
#define SLOTS_MAX	256
/* Every rank creates its loader within this long of the others. */
#define JOIN_TIMEOUT_NS	(120ULL * 1000000000ULL)
/*
 * peer_timeout_ms at least: the watchdog looks every quarter of it, and a
 * service turn that sleeps 1 ms and handles RECV_BURST messages
 * (peer_service.c) must not look stuck.
 */
#define TIMEOUT_MIN_MS	100

/* MPI is the process's: initialised once, finalised at its exit. */
static pthread_mutex_t mpi_lock = PTHREAD_MUTEX_INITIALIZER;
static int mpi_ours;		/* we called MPI_Init_thread */

/*
 * SIGPIPE. Open MPI's TCP transport writes to its peers' sockets without
 * MSG_NOSIGNAL: a write to a dead rank's connection raises SIGPIPE in the
 * thread that made it, and its default action ends the process (a C
 * program's; Python ignores it) — a survivor killed by its peer's death,
 * seen in one run in 40 of the killed-rank test. The signal is the
 * thread's, so a thread with it blocked gets EPIPE instead, which Open
 * MPI takes for the peer's failure. So: the tier's threads start with
 * every signal blocked; Open MPI's own threads, when this library
 * initialises MPI, start with SIGPIPE blocked; and the caller's thread
 * blocks it around each MPI call made from it, taking back a SIGPIPE
 * raised meanwhile, and leaves its mask as it found it.
 */
struct sigpipe_guard {
	sigset_t old;		/* the caller's mask */
	int had;		/* SIGPIPE was blocked or pending before */
};

static void sigpipe_block(struct sigpipe_guard *g)
{
	sigset_t pipe, pending;

	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	sigpending(&pending);
	pthread_sigmask(SIG_BLOCK, &pipe, &g->old);
	g->had = sigismember(&g->old, SIGPIPE) ||
		 sigismember(&pending, SIGPIPE);
}

static void sigpipe_unblock(struct sigpipe_guard *g)
{
	static const struct timespec now;
	sigset_t pipe, pending;

	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	sigpending(&pending);
	if (!g->had && sigismember(&pending, SIGPIPE))
		while (sigtimedwait(&pipe, NULL, &now) < 0 && errno == EINTR)
			;
	pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* A thread of the tier's: every signal blocked (SIGPIPE above). */
static int start_thread(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int ret;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

static void finalize_at_exit(void)
{
	struct sigpipe_guard g;
	int fin = 0;

	MPI_Finalized(&fin);
	if (fin || __atomic_load_n(&peer_mpi_died, __ATOMIC_RELAXED))
		return;
	sigpipe_block(&g);
	MPI_Finalize();
	sigpipe_unblock(&g);
}

/* ---- the read tier (the I/O thread's) ---- */

static int peer_queue(void *tier, struct dlc_reader *r, uint32_t id,
		      uint64_t tag, char *scratch, size_t len)
{
	struct dlc_peer *p = tier;
	struct dlc_buf *b = NULL;
	struct request_slot *s = NULL;
	uint32_t owner, to, i;

	if (id >= p->n)
		return 0;
	owner = peer_owner(p, id);
	pthread_mutex_lock(&p->lock);
	to = owner;
	if (owner != p->rank && !p->dead[owner] && !p->stopping && !p->stuck)
		to = peer_route_locked(p, owner, id);
	if (to == p->rank) {
		/* Ours, or our backup copy (the route takes it only held). */
		if (p->share[id])
			b = dlc_buf_get(p->share[id]);
		else
			peer_to_storage(p, id);
		pthread_mutex_unlock(&p->lock);
		return b && !dlc_reader_queue_buf(r, b, tag);
	}
	if (to == NO_RANK || p->dead[owner] || p->stopping || p->stuck) {
		peer_to_storage(p, id);
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
		peer_to_storage(p, id);
		pthread_mutex_unlock(&p->lock);
		return 0;
	}
	s->state = REQ_TAKEN;
	s->id = id;
	s->peer = to;
	s->tag = tag & ~DLC_TIER_TAG_MASK;
	/* A prepared answer saves this rank's decode, maybe at more bytes. */
	s->prepared_ok = p->prep_on &&
			 dlc_peer_prepared_pays(p->prep.out_bytes, p->size[id],
						p->mean_size, p->reads_bound,
						p->rate[to].bps, p->decode_ns) &&
			 !p->prep.epoch_of(p->prep.arg, s->tag, &s->epoch);
	s->behind = p->behind;
	s->seq = (++p->gen * p->nslots) + (uint32_t)(s - p->slot);
	s->buf = NULL;
	s->err = 0;
	pthread_mutex_unlock(&p->lock);

	/* Its answer ends this read: the service thread writes the eventfd. */
	if (dlc_reader_queue_range(r, s->efd, 0, sizeof(uint64_t), 0, tag)) {
		pthread_mutex_lock(&p->lock);
		s->state = REQ_FREE;
		peer_to_storage(p, id);
		pthread_mutex_unlock(&p->lock);
		return 0;
	}
	pthread_mutex_lock(&p->lock);
	s->state = REQ_NEW;
	peer_rate_start(&p->rate[to], dlc_now_ns(), p->size[id]);
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
	/* Prepared: no file's bytes to check (its size was, on arrival). */
	if (!err && !d->buf->prepared && !peer_sample_ok(p, id, d->buf)) {
		err = -EBADMSG;
		if (s)
			peer_log(p, DLC_LOG_WARN,
				 "cluster: the bytes of sample %u from rank %u are not the indexed file's: reading storage",
				 id, from);
	}
	pthread_mutex_lock(&p->lock);
	if (err == -EBADMSG && !s)
		peer_drop_share_locked(p, id, d->buf);
	if (!err) {
		p->ours[id] = s && from == peer_owner(p, id) ? OURS_OWNER :
							       OURS_TIER;
		/* Pixels: for this use alone, never pushed nor kept. */
		if (d->buf->prepared) {
			p->ours[id] = 0;
			p->c.prepared_in++;
		}
		if (s) {
			p->c.peer_hits++;
			p->c.peer_bytes += d->buf->len;
			if (from != peer_owner(p, id))
				p->c.backup_hits++;
		} else {
			p->c.local_hits++;
			p->c.local_bytes += d->buf->len;
		}
	} else {
		if (err == -EBADMSG)
			p->c.peer_failures++;
		peer_to_storage(p, id);
	}
	pthread_mutex_unlock(&p->lock);
	if (err) {
		dlc_buf_put(d->buf);
		d->buf = NULL;
	}
	return err;
}

/*
 * Called with the lock held: queue storage's bytes @b of sample @id to
 * rank @to (its owner, or its backup), when the queue has room.
 */
static void push_locked(struct dlc_peer *p, uint32_t id, uint32_t to,
			struct dlc_buf *b)
{
	if (p->stopping || p->stuck || p->plen >= PUSHES ||
	    p->pbytes + b->len > PUSH_BYTES || b->len != p->size[id])
		return;
	p->push[(p->phead + p->plen++) % PUSHES] =
		(struct push){ id, to, dlc_buf_get(b) };
	p->pbytes += b->len;
	p->kick = 1;
	pthread_cond_signal(&p->cv);
}

/*
 * Called with the lock held: a straggler's bytes @b of sample @id, for
 * its backup @backup: kept here when this rank is it (@ok: checked),
 * else sent, when the backup has room and is measured faster than
 * @owner (peer_backup_faster_locked()).
 */
static void to_backup_locked(struct dlc_peer *p, uint32_t id, uint32_t owner,
			     uint32_t backup, struct dlc_buf *b, int ok)
{
	if (backup == p->rank)
		peer_admit_locked(p, id, b, ok);
	else if (peer_backup_faster_locked(p, owner, backup) &&
		 !p->peer_no_spare[backup])
		push_locked(p, id, backup, b);
}

static void peer_offer(void *tier, uint32_t id, struct dlc_buf *b)
{
	struct dlc_peer *p = tier;
	uint32_t owner, backup;
	int ok = 0;

	if (id >= p->n)
		return;
	owner = peer_owner(p, id);
	backup = peer_backup(p, id, owner);
	/* Outside the lock: a CRC (memoised when the reader checked it). */
	if (owner == p->rank || backup == p->rank)
		ok = peer_sample_ok(p, id, b);
	pthread_mutex_lock(&p->lock);
	/* Under the lock: a rank may have died since. */
	backup = peer_backup(p, id, owner);
	if (p->to_origin[id]) {
		p->to_origin[id] = 0;
		peer_rate_end(&p->rate[p->world], dlc_now_ns(), p->size[id],
			      b->len);
	}
	if (p->ours[id] == OURS_TIER) {
		/* The bytes came from this tier, not storage. */
		p->ours[id] = 0;
	} else if (p->ours[id] == OURS_OWNER) {
		/* From the owner: its backup may want them, if it straggles. */
		p->ours[id] = 0;
		if (owner != p->rank && !p->dead[owner] &&
		    peer_slow_locked(p, owner))
			to_backup_locked(p, id, owner, backup, b, ok);
	} else if (owner == p->rank) {
		peer_admit_locked(p, id, b, ok);
	} else if (p->dead[owner]) {
		/* Re-placed since this read was queued: nobody to send it. */
	} else if (!peer_slow_locked(p, owner)) {
		if (!p->peer_full[owner])
			push_locked(p, id, owner, b);
	} else {
		to_backup_locked(p, id, owner, backup, b, ok);
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
			peer_wake_slot(s);
		}
	}
	pthread_mutex_unlock(&p->lock);
	/*
	 * The loader is winding down: its decode (the prepare thread's) is
	 * no longer asked for; requests still coming get encoded bytes.
	 */
	peer_prepare_stop(p);
}

void dlc_peer_counters(struct dlc_peer *p, struct dlc_peer_counters *out)
{
	pthread_mutex_lock(&p->lock);
	*out = p->c;
	out->used = p->used;
	out->backup_used = p->backup_used;
	out->stuck = (uint64_t)p->stuck;
	pthread_mutex_unlock(&p->lock);
}

void dlc_peer_window(struct dlc_peer *p, const struct dlc_window_shares *w,
		     uint64_t decode_ns)
{
	p->reads_bound = w->starved > STARVED_PERMILLE;
	p->decode_ns = decode_ns;
	p->behind = w->wait > BEHIND_PERMILLE;
}

int dlc_peer_prepared_pays(uint64_t out, uint64_t in, uint64_t mean_in,
			   int reads_bound, uint64_t bps, uint64_t decode_ns)
{
	double extra_ns, saved_ns;

	if (out <= in)
		return 1;
	if (reads_bound)
		return 0;
	if (!bps || !decode_ns || !mean_in)
		return 1;
	extra_ns = (double)(out - in) * 1e9 / (double)bps;
	saved_ns = (double)decode_ns * (double)in / (double)mean_in;
	return extra_ns < saved_ns;
}

uint32_t dlc_peer_owner(const struct dlc_peer *p, uint32_t id)
{
	return id < p->n ? peer_owner(p, id) : 0;
}

/* ---- open and close ---- */

/*
 * p->sink_block (peer_int.h): made once here, so that dropping a message
 * never allocates, nor waits. Its entries overlap, which is outside what
 * MPI defines for a receive; Open MPI unpacks a type that is not
 * contiguous through its convertor, entry by entry, on every transport
 * (test_cluster.sh sends oversized messages over vader and over tcp).
 */
static int sink_block(struct dlc_peer *p)
{
	MPI_Datatype block;
	int ret;

	if (MPI_Type_contiguous(SINK_BYTES, MPI_BYTE, &block) != MPI_SUCCESS)
		return -ENOMEM;
	ret = MPI_Type_create_resized(block, 0, 0, &p->sink_block);
	MPI_Type_free(&block);
	if (ret != MPI_SUCCESS) {
		p->sink_block = MPI_DATATYPE_NULL;
		return -ENOMEM;
	}
	if (MPI_Type_commit(&p->sink_block) != MPI_SUCCESS) {
		MPI_Type_free(&p->sink_block);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Wait for the collective @req that every rank of the job makes at open,
 * for JOIN_TIMEOUT_NS at most: 0, -EIO, or -ETIMEDOUT with the ranks said
 * not to have done @what (what MPI writes into is then left to it).
 */
static int wait_all(struct dlc_peer *p, MPI_Request *req, const char *what)
{
	uint64_t deadline = dlc_now_ns() + JOIN_TIMEOUT_NS;
	int done = 0;

	for (;;) {
		if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			return -EIO;
		if (done)
			return 0;
		if (dlc_now_ns() > deadline) {
			peer_log(p, DLC_LOG_ERROR,
				 "cluster: not every one of the %u ranks %s within %llu s",
				 p->world, what,
				 (unsigned long long)(JOIN_TIMEOUT_NS / 1000000000));
			return -ETIMEDOUT;
		}
		usleep(1000);
	}
}

/*
 * The job's communicator, duplicated: collective, so a rank that never
 * comes (it failed before, or died) would hang the others in
 * MPI_Comm_dup(). MPI_Comm_idup() with a deadline instead; the request of
 * one that timed out is left to MPI (it may complete into the void).
 */
static int dup_world(struct dlc_peer *p)
{
	/* Where MPI writes the new communicator: leaked when it is late. */
	MPI_Comm *comm = malloc(sizeof(*comm));
	MPI_Request req;
	int ret;

	if (!comm)
		return -ENOMEM;
	if (MPI_Comm_idup(MPI_COMM_WORLD, comm, &req) != MPI_SUCCESS) {
		free(comm);
		return -EIO;
	}
	ret = wait_all(p, &req, "created its loader");
	if (ret)
		return ret;
	p->comm = *comm;
	free(comm);
	MPI_Comm_set_errhandler(p->comm, MPI_ERRORS_RETURN);
	if (sink_block(p)) {
		MPI_Comm_free(&p->comm);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Every rank's join_msg (this one's: @mine) into @all (collective): each
 * knows which ranks have room for backups (p->cap, peer_backup()), and
 * whether every rank has its index and order settings. Under the same
 * deadline as the join: a rank that never calls leaves the buffer to MPI
 * (leaked) and this one fails.
 */
static int gather_join(struct dlc_peer *p, const struct join_msg *mine,
		       struct join_msg *all)
{
	/* The ranks' and, at [world], what this one sends: both MPI's. */
	struct join_msg *buf = malloc(sizeof(*buf) * (p->world + 1));
	MPI_Request req;
	uint32_t r;
	int ret;

	if (!buf)
		return -ENOMEM;
	buf[p->world] = *mine;
	if (MPI_Iallgather(&buf[p->world], sizeof(*buf), MPI_BYTE, buf,
			   sizeof(*buf), MPI_BYTE, p->comm, &req) !=
	    MPI_SUCCESS) {
		free(buf);
		return -EIO;
	}
	ret = wait_all(p, &req, "sent its index and settings");
	if (ret)
		return ret;
	memcpy(all, buf, sizeof(*buf) * p->world);
	free(buf);
	for (r = 0; r < p->world; r++)
		p->cap[r] = all[r].capacity;
	return 0;
}

/*
 * Whether every rank's index and order settings in @all are @mine: if
 * not, the first rank that differs is logged with what differs, and
 * -EINVAL. Every rank sees the same @all, so every one fails alike.
 */
static int check_join(struct dlc_peer *p, const struct join_msg *mine,
		      const struct join_msg *all)
{
	const struct join_msg *o;
	uint32_t r;

	for (r = 0; r < p->world; r++) {
		o = &all[r];
		if (o->key[0] != mine->key[0] || o->key[1] != mine->key[1]) {
			peer_log(p, DLC_LOG_ERROR,
				 "cluster: rank %u's index (key %016llx%016llx, %u samples) is not rank %u's (key %016llx%016llx, %u samples): every rank needs the same index, which places the samples",
				 r, (unsigned long long)o->key[0],
				 (unsigned long long)o->key[1],
				 (uint32_t)o->key[1], p->rank,
				 (unsigned long long)mine->key[0],
				 (unsigned long long)mine->key[1],
				 (uint32_t)mine->key[1]);
			return -EINVAL;
		}
		if (o->seed != mine->seed || o->shuffle != mine->shuffle ||
		    o->drop_last != mine->drop_last ||
		    o->shard_drop_last != mine->shard_drop_last) {
			peer_log(p, DLC_LOG_ERROR,
				 "cluster: rank %u has seed %llu, shuffle %u, drop_last %u, shard_drop_last %u; rank %u has %llu, %u, %u, %u: every rank needs the same, or their shares of an epoch overlap",
				 r, (unsigned long long)o->seed, o->shuffle,
				 o->drop_last, o->shard_drop_last, p->rank,
				 (unsigned long long)mine->seed,
				 mine->shuffle, mine->drop_last,
				 mine->shard_drop_last);
			return -EINVAL;
		}
	}
	/* Prepared answers: only where every rank makes the same pixels. */
	p->prep_on = mine->prepare_fp != 0;
	for (r = 0; r < p->world; r++)
		if (all[r].prepare_fp != mine->prepare_fp)
			p->prep_on = 0;
	if (mine->prepare_fp && !p->prep_on)
		peer_log(p, DLC_LOG_WARN,
			 "cluster: prepared answers off: not every rank asks for them with the same transform and layout");
	return 0;
}

static int join_mpi(struct dlc_peer *p, const struct join_msg *mine,
		    struct join_msg *all)
{
	int init = 0, fin = 0, level = 0, rank = -1, size = 0;
	struct sigpipe_guard g;
	int ret = 0;

	pthread_mutex_lock(&mpi_lock);
	sigpipe_block(&g);
	MPI_Initialized(&init);
	MPI_Finalized(&fin);
	if (fin) {
		peer_log(p, DLC_LOG_ERROR,
			 "cluster: MPI was finalised in this process already");
		ret = -EINVAL;
		goto out;
	}
	if (!init) {
		if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &level) !=
		    MPI_SUCCESS) {
			peer_log(p, DLC_LOG_ERROR,
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
		peer_log(p, DLC_LOG_ERROR,
			 "cluster: MPI gives thread level %d, not MPI_THREAD_MULTIPLE: the peer tier's thread cannot share it",
			 level);
		ret = -EOPNOTSUPP;
		goto out;
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if ((uint32_t)rank != p->rank || (uint32_t)size != p->world) {
		peer_log(p, DLC_LOG_ERROR,
			 "cluster: dlc_config says rank %u of %u, MPI says rank %d of %d",
			 p->rank, p->world, rank, size);
		ret = -EINVAL;
		goto out;
	}
	ret = dup_world(p);
	/* A failure leaves the comm to MPI, which may still use it. */
	if (!ret)
		ret = gather_join(p, mine, all);
out:
	sigpipe_unblock(&g);
	pthread_mutex_unlock(&mpi_lock);
	return ret;
}

static void free_comm(struct dlc_peer *p)
{
	struct sigpipe_guard g;

	sigpipe_block(&g);
	MPI_Comm_free(&p->comm);
	/* A receive still posted keeps its own reference to the type. */
	if (p->sink_block != MPI_DATATYPE_NULL)
		MPI_Type_free(&p->sink_block);
	sigpipe_unblock(&g);
}

/*
 * Join the other ranks (join_mpi()) with what this rank sends them, and
 * check what they sent (check_join()). 0; or -errno, with *@joined 1
 * when the join itself completed (the comm is ours to free), 0 when it
 * is left to MPI.
 */
static int join(struct dlc_peer *p, const struct dlc_peer_opts *o,
		int *joined)
{
	struct join_msg mine = { 0 }, *all;
	int ret;

	*joined = 0;
	dlc_index_key(o->idx, mine.key);
	mine.capacity = o->capacity;
	mine.seed = o->seed;
	mine.shuffle = o->shuffle;
	mine.drop_last = o->drop_last;
	mine.shard_drop_last = o->shard_drop_last;
	if (o->prepare)
		mine.prepare_fp = o->prepare->fingerprint;
	all = malloc(sizeof(*all) * p->world);
	ret = all ? join_mpi(p, &mine, all) : -ENOMEM;
	if (!ret) {
		/* No operation of the comm is in flight now. */
		*joined = 1;
		ret = check_join(p, &mine, all);
	}
	free(all);
	return ret;
}

int dlc_peer_open(const struct dlc_peer_opts *o, struct dlc_peer **out)
{
	struct dlc_peer *p = calloc(1, sizeof(*p));
	const char *env;
	int joined;
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
	pthread_cond_init(&p->prep_cv, NULL);
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
	if (o->prepare)
		p->prep = *o->prepare;
	p->timeout_ns = (uint64_t)(o->timeout_ms ? o->timeout_ms : 2000) *
			1000000ULL;
	p->comm = MPI_COMM_NULL;
	p->sink_block = MPI_DATATYPE_NULL;
	p->owner = malloc(sizeof(*p->owner) * p->n);
	p->home = malloc(sizeof(*p->home) * p->n);
	p->placed = malloc(sizeof(*p->placed) * p->n);
	p->home_bytes = calloc(p->world, sizeof(*p->home_bytes));
	p->re_bytes = calloc(p->world, sizeof(*p->re_bytes));
	p->share = calloc(p->n, sizeof(*p->share));
	p->backup = calloc(p->n, 1);
	p->ours = calloc(p->n, 1);
	p->dead = calloc(p->world, 1);
	p->peer_full = calloc(p->world, 1);
	p->peer_no_spare = calloc(p->world, 1);
	p->bye = calloc(p->world, 1);
	p->rate = calloc(p->world + 1, sizeof(*p->rate));
	p->to_origin = calloc(p->n, 1);
	p->size = malloc(sizeof(*p->size) * p->n);
	p->crc = calloc(p->n, sizeof(*p->crc));
	p->has_crc = calloc(p->n, 1);
	p->max_owned = calloc(p->world, sizeof(*p->max_owned));
	p->cap = calloc(p->world, sizeof(*p->cap));
	p->spare = calloc(p->world, sizeof(*p->spare));
	env = getenv("DLCACHE_CLUSTER_BALANCE");
	p->balancing = !env || strcmp(env, "0");
	p->reads_bound = 1;
	p->behind = 1;
	if (!p->n || !p->owner || !p->home || !p->placed ||
	    !p->home_bytes || !p->re_bytes || !p->share || !p->backup ||
	    !p->ours || !p->dead || !p->peer_full || !p->peer_no_spare ||
	    !p->bye || !p->rate || !p->to_origin ||
	    !p->size || !p->crc || !p->has_crc || !p->max_owned ||
	    !p->cap || !p->spare) {
		ret = p->n ? -ENOMEM : -EINVAL;
		goto err_free;
	}
	/* Copies: the service thread may outlive the caller's index. */
	for (i = 0; i < p->n; i++) {
		p->size[i] = dlc_index_size(o->idx, i);
		if (p->size[i] > p->max_size)
			p->max_size = p->size[i];
		p->mean_size += p->size[i];
		p->has_crc[i] = !dlc_index_crc32c(o->idx, i, &p->crc[i]);
	}
	p->mean_size /= p->n;
	for (i = 0; i < p->nslots; i++) {
		p->slot[i].efd = eventfd(0, EFD_CLOEXEC);
		if (p->slot[i].efd < 0) {
			ret = -errno;
			peer_log(p, DLC_LOG_ERROR, "cluster: eventfd: %s",
				 strerror(-ret));
			goto err_free;
		}
	}
	ret = join(p, o, &joined);
	if (ret && joined)
		goto err_free_comm;
	if (ret)
		goto err_free;
	ret = peer_place(p);
	if (ret)
		goto err_free_comm;
	p->beat = dlc_now_ns();
	/* Before the service thread: prep_on is final when it starts. */
	if (peer_prepare_start(p)) {
		peer_log(p, DLC_LOG_WARN,
			 "cluster: cannot start the thread that prepares answers: encoded bytes only");
		p->prep_on = 0;
	}
	p->refs = 2;	/* the service thread's */
	ret = start_thread(&p->thread, peer_service_main, p);
	if (ret) {
		p->refs = 1;
		ret = -ret;
		goto err_stop_prepare;
	}
	p->thread_started = 1;
	ret = start_thread(&p->watchdog, peer_watchdog_main, p);
	if (ret) {
		dlc_peer_close(p);
		return -ret;
	}
	p->watchdog_started = 1;
	peer_log(p, DLC_LOG_INFO,
		 "cluster: rank %u of %u over MPI; this rank's share %llu MiB (%llu MiB of it room for backups), peers time out after %llu ms%s%s",
		 p->rank, p->world, (unsigned long long)(o->capacity >> 20),
		 (unsigned long long)(p->spare[p->rank] >> 20),
		 (unsigned long long)(p->timeout_ns / 1000000),
		 p->balancing ? "" : "; balancing off (DLCACHE_CLUSTER_BALANCE=0)",
		 p->prep_on ? "; prepared answers on" : "");
	*out = p;
	return 0;

err_stop_prepare:
	peer_prepare_stop(p);
err_free_comm:
	free_comm(p);
err_free:
	peer_free(p);
	return ret;
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
	peer_log_rates(p);
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
	/* Never in MPI: joined always, so the loader's decoder is free. */
	peer_prepare_stop(p);
	if (c.rejected || c.bad_pushes || c.share_dropped)
		peer_log(p, DLC_LOG_WARN,
			 "cluster: peers sent %llu messages the protocol has no room for and %llu pushes of bytes not the indexed files'; %llu cached samples failed their check",
			 (unsigned long long)c.rejected,
			 (unsigned long long)c.bad_pushes,
			 (unsigned long long)c.share_dropped);
	if (orphan) {
		peer_log(p, DLC_LOG_WARN,
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
		free_comm(p);
	p->log_closed = 1;
	peer_put(p);
}
