/* SPDX-License-Identifier: MIT */
/*
 * The peer tier over Open MPI (built with MPI=1): the state its files
 * share, and what each calls in another. peer.h says what the tier is;
 * the files are layered, none calling one above it:
 *   peer_state.c    what this rank keeps track of without a message: each
 *                   sample's owner (placement), the share, the sources'
 *                   rates (balancing), the log, the state's end; calls
 *                   none of the others but peer_prepare_free() there
 *   peer_service.c  the service thread, which makes every MPI call after
 *                   dlc_peer_open() (sends, receives, operations in flight
 *                   with deadlines, dead peers, the graveyard), and the
 *                   watchdog over it; calls peer_state.c, peer_prepare.c
 *   peer_prepare.c  the owner's prepared answers: their queue and the
 *                   thread that prepares them; calls none of the others
 *   peer.c          the read tier the loader's I/O thread calls (queue,
 *                   served, offer), open and close; calls both
 * Not for anything else: the library's face of the tier is peer.h.
 *
 * Messages, on a duplicate of MPI_COMM_WORLD (so that the application's
 * own messages never match ours), each one MPI message of bytes:
 *   TAG_REQ  asker -> owner   struct req_msg
 *   TAG_REP  owner -> asker   struct rep_msg, then the sample on a hit
 *   TAG_PUT  reader -> owner  struct put_msg, then the sample
 *   TAG_BYE  any -> all       nothing: this rank is done
 */
#ifndef DLC_PEER_INT_H
#define DLC_PEER_INT_H

#include <pthread.h>
#include <stdint.h>

#include <mpi.h>

#include "internal.h"
#include "peer.h"

/* Storage reads waiting to go to their owner, and their bytes at most. */
#define PUSHES		256
#define PUSH_BYTES	(64ULL << 20)

enum { TAG_REQ = 1, TAG_REP, TAG_PUT, TAG_BYE };
/* Not a tag: an op receiving a message refused by size or tag, into none. */
#define OP_DROP		(-1)
/* The bytes a refused message is received into, over and over. */
#define SINK_BYTES	4096

struct req_msg {
	uint32_t seq;		/* the asker's slot and generation */
	uint32_t id;
	uint32_t epoch;		/* of the use: a prepared answer's crop */
	uint32_t flags;		/* REQ_PREPARED_OK, REQ_BEHIND */
};
/* A prepared answer is welcome (peer_prepare.c). */
#define REQ_PREPARED_OK	1U
/* The asker's consumer waits for its loader: its prepared answers first. */
#define REQ_BEHIND	2U

struct rep_msg {
	uint32_t seq;		/* the request's */
	uint32_t id;
	int32_t err;		/* 0: the sample's bytes follow; -ENOENT */
	uint32_t flags;		/* REP_FULL */
};
/* The owner's share refused a sample for room: send it none. */
#define REP_FULL	1U
/* Its room for backups (above its own share's) is full: send it none. */
#define REP_NO_SPARE	2U
/* The bytes are the sample prepared for the epoch asked (out_bytes). */
#define REP_PREPARED	4U

struct put_msg {
	uint32_t id;
	uint32_t pad;
};

/*
 * What each rank sends every other at open (one MPI_Iallgather, as
 * bytes): its share's capacity, and what every rank must have the same
 * for the shares and the orders to agree: the index (its key, which
 * holds the sample count) and the settings that shape the order
 * (dlc_peer_opts). Written by its rank before the gather.
 */
struct join_msg {
	uint64_t capacity;
	uint64_t key[2];
	uint64_t seed;
	uint32_t shuffle, drop_last, shard_drop_last, pad;
	uint64_t prepare_fp;	/* dlc_peer_prepare's fingerprint; 0: none */
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
	uint32_t epoch;		/* of the use (a prepared answer's) */
	int prepared_ok;	/* REQ_PREPARED_OK asked */
	int behind;		/* REQ_BEHIND said */
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
	uint32_t to;		/* the owner, or the backup (peer_backup()) */
	struct dlc_buf *b;
};

enum { OURS_TIER = 1, OURS_OWNER };

/*
 * A prepared answer in the making (peer_prepare.c), under the lock:
 * FREE; QUEUED by the service thread (a reference to the share's bytes
 * in b); BUSY, the prepare thread's; DONE, mem holding the answer (a
 * rep_msg's room, then out_bytes of pixels) or NULL if it failed; back
 * to FREE when the service thread takes it to send.
 */
enum prep_state { PREP_FREE, PREP_QUEUED, PREP_BUSY, PREP_DONE };

struct prep_job {
	enum prep_state state;
	uint32_t peer, seq, id, epoch;
	int urgent;		/* its asker said REQ_BEHIND: begun first */
	int answered;		/* BUSY, but answered encoded: PREP_LATE_NS */
	uint64_t queued;	/* ns */
	struct dlc_buf *b;
	uint8_t *mem;
};

/*
 * Prepared answers in the making at most, of which the last
 * PREP_URGENT_ROOM only for askers behind their consumers (REQ_BEHIND):
 * the jobs of ranks that are ahead never crowd out the straggler's.
 */
#define PREP_JOBS	16
#define PREP_URGENT_ROOM	4
/*
 * A job the prepare thread has not begun this long after it was queued
 * is answered with the encoded bytes: the node's own work leaves no CPU
 * for it (the thread runs at SCHED_IDLE), and the asker waits.
 */
#define PREP_WAIT_NS	(20ULL * 1000000)
/*
 * A queue whose oldest job has waited this long to begin takes no more:
 * the thread finds no idle CPU, and a request queued then only waits.
 */
#define PREP_BEHIND_NS	(5ULL * 1000000)
/*
 * A job begun but not done a quarter of the peer timeout after it was
 * queued is answered encoded all the same (the thread, at SCHED_IDLE,
 * lost the CPU in the middle of it): its asker takes this rank for dead
 * at the timeout. What the thread makes of it after is dropped.
 */
#define PREP_LATE_NS(p)	((p)->timeout_ns / 4)

/* peer_backup() and peer_route_locked(): no rank. */
#define NO_RANK		UINT32_MAX

/*
 * Lobster's balancing. Each source of bytes, every peer and storage, has
 * its rate measured as this rank sees it: the bytes it delivered over the
 * time it had a request of ours outstanding (so at the concurrency this
 * rank keeps it at, not one request's latency), in windows of at least
 * RATE_WINDOW_NS, averaged (EWMA 1/4).
 *
 * A peer measured BAL_SLOWER times slower than storage, or than the mean
 * of the other live peers (measured as it is, so free of storage's bias:
 * the rate a rank measured for storage in its cold epoch, against the
 * other ranks' reads, is stale in steady epochs that leave storage idle),
 * is a straggler. A read of a sample a straggler owns goes to whichever
 * source would complete it sooner, by their expected completion times:
 * their outstanding bytes with this sample's, over their rates. So
 * storage takes none while it is busy with this rank's own reads (the
 * cold epoch), and the straggler keeps what it can answer in time. And
 * only while reads hold this rank's consumer up (peer_reads_hold_up()):
 * its decoders starved for over STARVED_PERMILLE of their time in the
 * last window, and its consumer waited for batches over
 * BEHIND_PERMILLE of it. A rank whose decode sets its pace (a slow CPU,
 * whose own service thread makes every peer look slow), or whose
 * consumer is slower than its loader (a training step longer than a
 * batch's reads: measured in test_cluster.sh, 40 ms steps with a small
 * window starved the decoders over 30 %, and a rank diverted 10-20 reads
 * an epoch, 2-6 % of N), gains nothing from a sooner source, and
 * storage's bytes are everyone's. It is
 * always asked while it has fewer than BAL_PROBES reads of ours
 * outstanding: its rate stays measured, and a rank that hangs is still
 * asked, times out and is taken for dead (its share re-placed), however
 * fast storage is. It is sent no storage reads (it reads them sooner
 * itself).
 *
 * A peer that is not a straggler is always asked, however deep its
 * queue: a rank pulling as fast as it can would otherwise find storage
 * idle and spend its bytes, which every rank (and every other job)
 * shares. Where storage is the slow shared thing it usually is, no peer
 * is slower, nothing is diverted and storage's bytes stay at the optimum.
 *
 * Backups. Diverting a straggler's reads to storage costs storage bytes
 * every epoch. So each sample has a backup: a rank other than its owner,
 * a pure function of the sample, the owner and the dead ranks
 * (peer_backup()), the same on every rank: only a rank with room for it
 * above the bytes it owns (its capacity, which every rank sent every
 * other at open, less those bytes) is one, so a rank asks no backup
 * that could never hold it. A read of a sample whose owner
 * is a straggler (past its probes) goes to its backup instead, while this
 * rank measures the backup BAL_SLOWER times faster than the owner (a rank
 * behind a slow link of its own sees all its peers alike, and asks no
 * backup: they hold only what other ranks pushed them, and a miss there
 * is a storage read); when the backup does not hold it,
 * storage reads it and this rank pushes the bytes to the backup, as it
 * pushes an owner's. A backup keeps such samples only in the room its
 * capacity has beyond the bytes it owns (so its own share never loses
 * room to them), and says REP_NO_SPARE once that is full. With the
 * caches' sum at N there is no such room: the straggler's reads cost
 * storage bytes as before, and no backup is asked (there is none). With
 * more, they stop coming from storage once the backups hold them.
 */
struct rate {
	uint32_t inflight;	/* requests outstanding */
	uint64_t out;		/* their bytes, by the index */
	uint64_t since;		/* ns: busy since (inflight > 0), or window start */
	uint64_t busy;		/* ns busy in this window, before @since */
	uint64_t bytes;		/* delivered in this window */
	uint64_t last;		/* ns: the last request's end */
	uint64_t bps;		/* bytes/s; 0: not measured yet */
	uint64_t diverted;	/* peers: reads sent to storage instead */
};
#define RATE_WINDOW_NS	(50ULL * 1000000)
/* Storage reads we lost track of (failed, abandoned) age out after this. */
#define RATE_STALE_NS	(2ULL * 1000000000)
/*
 * Slower than storage by this factor before a peer counts as a
 * straggler: a peer's reads cost storage nothing, so a peer somewhat
 * slower than storage alone (which the other ranks share) still pays.
 * The rates are noisy at the ranks' small concurrency (test_cluster.sh:
 * storage 1-4.6 MB/s as each rank measured it, healthy peers 3-8, a peer
 * behind an 8 Mbit/s link 0.3-0.7); with 2, healthy peers were taken for
 * stragglers and their reads cost storage 11-17 % of N an epoch.
 */
#define BAL_SLOWER	4
/* A straggler's reads always asked of it: at least this many in flight. */
#define BAL_PROBES	2
/*
 * Reads set this rank's pace when its decoders waited for samples still
 * being read over this share of their time, in one of the loader's pace
 * windows (window.h, dlc_peer_window()). Measured in test_cluster.sh:
 * a rank on 3 % of a CPU starved 0-16 % of its decoders' time, every rank
 * waiting on a slow link 63-112 %.
 */
#define STARVED_PERMILLE	300
/*
 * A loader is behind its consumer when the consumer waited for batches
 * over this share of a pace window. Measured in test_cluster.sh's slow
 * node, in lockstep: the rank at 3 % of a CPU waits on its loader for
 * most of each window, the others (waiting on it, not on their loaders)
 * for almost none.
 */
#define BEHIND_PERMILLE	100

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
	/*
	 * Per sample, its owner now: the placement's at open, written again
	 * only by peer_replace_locked() when a rank is taken for dead (the
	 * lock held); read with peer_owner(), from any thread.
	 */
	uint32_t *owner;
	uint32_t *home;		/* per sample: the placement's owner */
	uint32_t *placed;	/* the samples in the placement's order */
	uint64_t *home_bytes;	/* per rank: the bytes the placement gave it */
	uint64_t *re_bytes;	/* per rank: peer_replace_locked()'s sums */
	/* The index's, copied at open: per sample. */
	uint64_t *size;
	uint32_t *crc;
	uint8_t *has_crc;
	/*
	 * Per rank: the largest sample it may answer with, owned or as the
	 * backup (peer_place(), peer_replace_locked()).
	 */
	uint64_t *max_owned;
	uint64_t max_size;	/* the index's largest sample's bytes */
	uint64_t mean_size;	/* and its mean sample's */
	/*
	 * Per rank: its capacity, sent at open; this rank's own is the
	 * c.capacity it sent, which its share's admission reads.
	 */
	uint64_t *cap;
	/*
	 * Per rank: its capacity less the bytes it owns now, the room it
	 * has for backups; written by peer_place() and peer_replace_locked()
	 * (the lock held), atomically: peer_backup() reads it without.
	 */
	uint64_t *spare;
	MPI_Comm comm;
	/*
	 * SINK_BYTES of MPI_BYTE with an extent of 0, made with the comm: a
	 * message of any length is received into the sink as a count of
	 * these, each at the sink's start (sink_recv(), peer_service.c).
	 */
	MPI_Datatype sink_block;
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
	/* Per sample this rank holds: one it owns, or one it backs up. */
	struct dlc_buf **share;
	uint8_t *backup;	/* per sample: held in share as the backup */
	/*
	 * Per sample: served from this tier, not storage (OURS_TIER), by its
	 * owner, a peer (OURS_OWNER: peer_offer() hands a straggler's bytes
	 * to the backup).
	 */
	uint8_t *ours;
	uint64_t used;		/* bytes in share it owns */
	uint64_t backup_used;	/* bytes in share it backs up */
	uint64_t owned_bytes;	/* the bytes this rank owns now */
	int full;		/* the share refused a sample for room */
	int no_spare;		/* the backups' room refused a sample */
	uint8_t *dead;		/* per peer: written under the lock, atomically */
	uint8_t *peer_full;	/* per peer: it said REP_FULL */
	uint8_t *peer_no_spare;	/* per peer: it said REP_NO_SPARE */
	/* The sources' rates: per peer, and storage's at [world]. */
	struct rate *rate;
	int balancing;		/* DLCACHE_CLUSTER_BALANCE is not 0 */
	/*
	 * The I/O thread's (dlc_peer_window()): reads set this rank's pace
	 * (1 until measured); the loader's mean decode of a sample, ns.
	 */
	int reads_bound;
	uint64_t decode_ns;
	/*
	 * Its consumer waited for it over BEHIND_PERMILLE of the last
	 * window (1 until measured): the straggler's prepared answers go
	 * first (REQ_BEHIND), and only then is any read diverted.
	 */
	int behind;
	/*
	 * Prepared answers (peer_prepare.c): prep as the loader gave it,
	 * prep_on when every rank's fingerprint is this one's and the
	 * prepare thread started (set at open, before the service thread
	 * starts; read-only after); the jobs and prep_stop under the lock.
	 */
	struct dlc_peer_prepare prep;
	int prep_on;
	struct prep_job prep_job[PREP_JOBS];
	pthread_t prep_thread;
	int prep_started, prep_stop;
	pthread_cond_t prep_cv;
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
	/* What a dropped message is received into, whole (sink_recv()). */
	char sink[SINK_BYTES];
};

/* Called with the lock held: reads hold this rank's consumer up. */
static inline int peer_reads_hold_up(const struct dlc_peer *p)
{
	return p->reads_bound && p->behind;
}

/*
 * Atomic: a peer died, or the service thread was stuck in MPI
 * (peer_service.c sets it): MPI_Finalize could hang, so the exit handler
 * (peer.c) skips it.
 */
extern int peer_mpi_died;

/* The service thread has not beaten for the timeout at @now. */
static inline int beat_stale(struct dlc_peer *p, uint64_t now)
{
	uint64_t b = __atomic_load_n(&p->beat, __ATOMIC_RELAXED);

	return (int64_t)(now - b) > (int64_t)p->timeout_ns;
}

static inline int orphaned(struct dlc_peer *p)
{
	return __atomic_load_n(&p->orphaned, __ATOMIC_ACQUIRE);
}

/* The rank that owns sample @id now (@id < p->n): any thread. */
static inline uint32_t peer_owner(const struct dlc_peer *p, uint32_t id)
{
	return __atomic_load_n(&p->owner[id], __ATOMIC_RELAXED);
}

/* peer_state.c: the callers and the lock each needs are at the definitions. */
void peer_log(struct dlc_peer *p, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int peer_sample_ok(const struct dlc_peer *p, uint32_t id,
		   const struct dlc_buf *b);
int peer_place(struct dlc_peer *p);
uint32_t peer_replace_locked(struct dlc_peer *p);
void peer_admit_locked(struct dlc_peer *p, uint32_t id,
		       const struct dlc_buf *b, int ok);
void peer_drop_share_locked(struct dlc_peer *p, uint32_t id,
			    const struct dlc_buf *b);
void peer_rate_start(struct rate *r, uint64_t now, uint64_t len);
void peer_rate_end(struct rate *r, uint64_t now, uint64_t len,
		   uint64_t bytes);
int peer_divert_locked(struct dlc_peer *p, uint32_t owner, uint32_t id);
uint32_t peer_backup(const struct dlc_peer *p, uint32_t id, uint32_t owner);
int peer_backup_faster_locked(const struct dlc_peer *p, uint32_t owner,
			      uint32_t b);
uint32_t peer_route_locked(struct dlc_peer *p, uint32_t owner, uint32_t id);
int peer_slow_locked(const struct dlc_peer *p, uint32_t owner);
void peer_to_storage(struct dlc_peer *p, uint32_t id);
void peer_log_rates(struct dlc_peer *p);
void peer_free(struct dlc_peer *p);
void peer_put(struct dlc_peer *p);

/* peer_service.c: the same. */
void peer_wake_slot(struct request_slot *s);

/* peer_prepare.c */
int peer_prepare_start(struct dlc_peer *p);
/* Join the prepare thread; jobs not begun are then answered encoded. */
void peer_prepare_stop(struct dlc_peer *p);
/* The state's end (peer_free()): the jobs left. */
void peer_prepare_free(struct dlc_peer *p);
/*
 * The service thread: queue a prepared answer to @peer's request @q for
 * the share's bytes @b (a reference is taken). 1: queued; 0: answer now.
 */
int peer_prepare_take(struct dlc_peer *p, uint32_t peer,
		      const struct req_msg *q, struct dlc_buf *b);
/*
 * The service thread: a job to answer now, into *@out (taken off the
 * queue: the caller puts out->b and frees out->mem), one DONE or one
 * QUEUED past PREP_WAIT_NS at @now (mem NULL: answer encoded). 0: none.
 */
int peer_prepare_next(struct dlc_peer *p, uint64_t now,
		      struct prep_job *out);
void *peer_service_main(void *arg);
void *peer_watchdog_main(void *arg);

#endif
