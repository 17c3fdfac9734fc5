/* SPDX-License-Identifier: MIT */
/*
 * The peer tier (peer.c, built with MPI=1; peer_none.c otherwise): the
 * in-process caches of every rank of an MPI job as one cache
 * (dlc_config.cluster, Documentation/cluster.md).
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
 * the peer's lock, taken after the loader's, never before.
 */
#ifndef DLC_PEER_H
#define DLC_PEER_H

#include <stdint.h>

#include "internal.h"
#include "tier.h"

struct dlc_peer;

struct dlc_peer_opts {
	const struct dlc_index *idx;
	const struct dlc_logger *log;
	uint32_t rank;		/* dlc_config.rank: must be the MPI rank */
	uint32_t world;		/* dlc_config.world: must be the MPI size */
	uint64_t capacity;	/* this rank's share: dlc_config.cache_bytes */
	uint32_t timeout_ms;	/* dlc_config.peer_timeout_ms, 0: 2000 */
	uint32_t queue_depth;	/* the reader's: requests in flight at most */
};

struct dlc_peer_counters {
	uint64_t local_hits, local_bytes;	/* owned, from the share */
	uint64_t peer_hits, peer_bytes;		/* a peer's bytes */
	uint64_t peer_misses;			/* the owner did not hold it */
	uint64_t peer_failures;			/* timed out, or bad bytes */
	uint64_t peer_busy;			/* not asked: no request slot free */
	uint64_t peer_diverted;			/* not asked: storage was faster */
	uint64_t served, served_hits, served_bytes; /* peers' requests */
	uint64_t pushed, pushed_bytes;		/* storage reads sent on */
	uint64_t admitted, used, capacity;	/* the share */
	uint64_t dead_peers;
};

/*
 * Join the job's other ranks (collective: every rank opens at the same
 * time) and start the service thread. 0, or -errno with the reason
 * logged: -EOPNOTSUPP without MPI, -EINVAL when the rank or world is not
 * MPI's.
 */
int dlc_peer_open(const struct dlc_peer_opts *o, struct dlc_peer **out);
void dlc_peer_tier(struct dlc_peer *p, struct dlc_tier *out);
/*
 * Fail every request still waiting, so that the reader's reads of their
 * eventfds end: before the reader is destroyed.
 */
void dlc_peer_cancel(struct dlc_peer *p);
/*
 * Tell the peers this rank is done, keep answering them until each said
 * so too (or was silent for the timeout), and free; MPI is finalised when
 * dlc_peer_open() initialised it and no peer died.
 */
void dlc_peer_close(struct dlc_peer *p);
void dlc_peer_counters(struct dlc_peer *p, struct dlc_peer_counters *out);

#endif
