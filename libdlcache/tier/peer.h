/* SPDX-License-Identifier: MIT */
/*
 * The peer tier (built with MPI=1: peer.c, peer_service.c and
 * peer_state.c over peer_int.h; peer_none.c otherwise): the in-process
 * caches of every rank of an MPI job as one cache (dlc_config.cluster,
 * Documentation/cluster.md).
 *
 * Placement is deterministic: every rank computes the same owner of each
 * sample from the index at open (the samples in a hashed order, each to
 * the rank owning the fewest bytes so far: the shares are within one
 * sample of N / world bytes), so the ranks' caches hold distinct samples
 * without agreeing on anything at run time. A rank's
 * share (dlc_config.cache_bytes) holds the samples it owns, taken in as
 * they first come by (its own storage reads, and those other ranks send
 * it) until it is full, and then kept: every steady epoch reads exactly
 * the samples that did not fit from storage, max(0, N - sum of shares).
 *
 * As a read tier (tier.h) it serves a sample this rank owns from its
 * share (in memory: dlc_reader_queue_buf()), and asks the owner for any
 * other. A request waits on the loader's io_uring as an 8-byte read of
 * an eventfd that the service thread writes when the answer came (or
 * the peer timed out); the check (served) swaps in the bytes and checks
 * them against the index's size and crc32c, as every tier's. A miss, a
 * dead peer, a full request queue or bad bytes go on to the next tier
 * and at last to storage; storage's bytes of a sample another rank owns
 * are sent to that rank (offer), unless it said its share is full.
 *
 * Threads: the tier's calls and dlc_peer_cancel() are the loader's I/O
 * thread's; one service thread makes every MPI call after
 * dlc_peer_open() (which initialises MPI when the application has not,
 * and duplicates MPI_COMM_WORLD: collective). What they share is under
 * the peer's lock, taken after the loader's, never before. A watchdog
 * thread takes the tier off the peers while the service thread is blocked
 * in MPI for the timeout, and back on when it runs again.
 *
 * Lifetimes: both threads start in dlc_peer_open(). dlc_peer_close()
 * joins the watchdog always, and the service thread unless it is blocked
 * in MPI for the timeout; that one is detached and owns the peer's state
 * (a reference; copies of the index's sizes and CRCs; a log that is
 * silent once close returned), so the caller may free its index and
 * logger as soon as close returns.
 *
 * What peers send is checked before it is used: a message's announced
 * size against what the protocol allows for its tag before any memory is
 * taken for it (else it is received into no bytes and counted), and a
 * pushed sample's bytes against the index's size and CRC-32C before the
 * share keeps them (else counted, not kept).
 */
#ifndef DLC_PEER_H
#define DLC_PEER_H

#include <stdint.h>

#include "internal.h"
#include "tier.h"
#include "window.h"

struct dlc_peer;
struct dlc_buf;
struct dlc_decoder;

/*
 * Prepared samples (peer_prepare.c): an owner may answer a request with
 * the sample as the asker's loader would decode it for that use, when
 * every rank's loader gives the same pixels (the same @fingerprint). The
 * loader says how; the tier calls @epoch_of on the I/O thread, and
 * @prepare on a thread of its own with @dec, which is that thread's
 * alone until dlc_peer_close() returns.
 */
struct dlc_peer_prepare {
	void *arg;
	struct dlc_decoder *dec;
	uint32_t out_bytes;	/* a prepared sample's bytes */
	uint64_t fingerprint;	/* of what decides the pixels; not 0 */
	/* The epoch of the use a read tagged @tag is for: 0, or -ENOENT. */
	int (*epoch_of)(void *arg, uint64_t tag, uint32_t *epoch);
	/* Sample @id's bytes @b as the loader decodes them for @epoch. */
	int (*prepare)(void *arg, struct dlc_decoder *dec, uint32_t id,
		       uint32_t epoch, const struct dlc_buf *b, uint8_t *dst);
};

struct dlc_peer_opts {
	const struct dlc_index *idx;
	const struct dlc_logger *log;
	uint32_t rank;		/* dlc_config.rank: must be the MPI rank */
	uint32_t world;		/* dlc_config.world: must be the MPI size */
	uint64_t capacity;	/* this rank's share: dlc_config.cache_bytes */
	uint32_t timeout_ms;	/* dlc_config.peer_timeout_ms, 0: 2000; >= 100 */
	uint32_t queue_depth;	/* the reader's: requests in flight at most */
	/*
	 * What shapes this rank's order (dlc_config's): every rank's, and
	 * its index, must be the same (checked at open: -EINVAL, logged
	 * with the rank and the setting that differs).
	 */
	uint64_t seed;
	uint32_t shuffle, drop_last, shard_drop_last;
	/* NULL: no prepared samples, asked or answered. */
	const struct dlc_peer_prepare *prepare;
};

struct dlc_peer_counters {
	uint64_t local_hits, local_bytes;	/* owned, from the share */
	uint64_t peer_hits, peer_bytes;		/* a peer's bytes */
	uint64_t peer_misses;			/* the owner did not hold it */
	uint64_t peer_failures;			/* timed out, or bad bytes */
	uint64_t peer_busy;			/* not asked: no request slot free */
	uint64_t peer_diverted;			/* not asked: storage was faster */
	uint64_t backup_asked;	/* asked the backup: the owner a straggler */
	uint64_t backup_hits;	/* of those, with the bytes */
	uint64_t backup_used;	/* bytes this rank holds as a backup */
	uint64_t served, served_hits, served_bytes; /* peers' requests */
	uint64_t pushed, pushed_bytes;		/* storage reads sent on */
	uint64_t admitted, used, capacity;	/* the share */
	uint64_t dead_peers;
	uint64_t rejected;	/* messages of a size or tag not the protocol's */
	uint64_t bad_pushes;	/* pushed bytes not the indexed file's */
	uint64_t share_dropped;	/* cached bytes that failed their check */
	uint64_t prepared_in;	/* answers of ours that came prepared */
	uint64_t prepared_out;	/* answers this rank prepared for a peer */
	uint64_t prepare_late;	/* ... or sent encoded, out of time or room */
	uint64_t stalls;	/* the watchdog found the service thread stuck */
	uint64_t stuck;		/* 1: it is stuck now */
};

/*
 * Join the job's other ranks (collective: every rank opens at the same
 * time) and start the service thread. 0, or -errno with the reason
 * logged: -EOPNOTSUPP without MPI, -EINVAL when the rank or world is not
 * MPI's, or when another rank's index or order settings are not this
 * one's (every rank then fails alike).
 */
int dlc_peer_open(const struct dlc_peer_opts *o, struct dlc_peer **out);
void dlc_peer_tier(struct dlc_peer *p, struct dlc_tier *out);
/*
 * Fail every request still waiting, so that the reader's reads of their
 * eventfds end, and stop preparing answers (the prepare thread is
 * joined: the loader's decode is not called again): before the reader
 * is destroyed.
 */
void dlc_peer_cancel(struct dlc_peer *p);
/*
 * Tell the peers this rank is done, keep answering them until each said
 * so too (or was silent for the timeout), and free; MPI is finalised when
 * dlc_peer_open() initialised it and no peer died. When the service thread
 * is blocked in MPI for the timeout, it is left to it (it frees the state
 * if the call returns): after this returns, nothing borrowed from
 * dlc_peer_opts (the index, the logger) is touched again.
 */
void dlc_peer_close(struct dlc_peer *p);
void dlc_peer_counters(struct dlc_peer *p, struct dlc_peer_counters *out);
/*
 * The shares of each of the loader's pace windows (window.h) as it ends:
 * the balancing sends a straggler's reads to storage only while reads
 * set this rank's pace, by its decoders' starved share (peer_int.h,
 * "Lobster's balancing"); @decode_ns, the loader's mean decode of a
 * sample so far (0: none yet), weighs a prepared answer larger than the
 * encoded bytes (dlc_peer_prepared_pays()). The I/O thread's.
 */
void dlc_peer_window(struct dlc_peer *p, const struct dlc_window_shares *w,
		     uint64_t decode_ns);
/*
 * Whether to welcome an owner's prepared answer (@out bytes) for a
 * sample of @in encoded bytes, the mean sample being @mean_in: when it
 * is no larger, always (nothing to decode, no more to carry); larger,
 * only while decode, not reads, sets this rank's pace (!@reads_bound),
 * and the extra bytes take the link (measured from that owner at @bps
 * bytes/s) less time than the decode they save (@decode_ns a mean
 * sample, scaled by the sample's bytes). Unmeasured (@bps or
 * @decode_ns 0), by the pace alone.
 */
int dlc_peer_prepared_pays(uint64_t out, uint64_t in, uint64_t mean_in,
			   int reads_bound, uint64_t bps, uint64_t decode_ns);
/* The rank that owns sample @id (tests); 0 without MPI. */
uint32_t dlc_peer_owner(const struct dlc_peer *p, uint32_t id);

#endif
