// SPDX-License-Identifier: MIT
/*
 * Cluster mode's balancing (tier/peer_state.c; peer_int.h, "Lobster's
 * balancing"), fed rates and queues as the service and I/O threads would.
 * Four ranks, this one rank 0; every sample 100 kB.
 *   - rates: bytes over the time a source had a request outstanding,
 *     overlapping requests counted once (its rate at the concurrency
 *     this rank keeps it at), not the sum of the requests' latencies;
 *   - a peer that is not BAL_SLOWER times slower than storage, nor than
 *     the mean of the other live peers measured, is always asked, however
 *     deep its queue and however idle storage is;
 *   - a straggler with fewer than BAL_PROBES reads outstanding is asked;
 *   - past that, a straggler's read goes to storage exactly when storage
 *     would complete it sooner: (queued + 100 kB) / rate, each side;
 *   - no read is diverted while the balancing is off, or before both
 *     rates are measured.
 * The expected choices are computed here from that rule, with the rates
 * this test set, not by the code under test. Only an MPI=1 build has the
 * peer tier (make MPI=1 BUILD=build/mpi build/mpi/release/tests/test_balance);
 * tests/cli/test_cluster.sh runs that build of this program.
 */
#ifndef DLC_HAVE_MPI
#error "test_balance tests the peer tier: build it with make MPI=1"
#endif
#include <stdio.h>
#include <stdlib.h>

#include "helpers/testutil.h"
#include "peer_int.h"

#define WORLD	4
#define LEN	100000ULL
#define MB	1000000ULL
#define MS	1000000ULL

static struct dlc_peer *peer_new(void)
{
	static uint64_t size[8];
	struct dlc_peer *p = calloc(1, sizeof(*p));
	uint32_t i;

	for (i = 0; i < 8; i++)
		size[i] = LEN;
	if (!p)
		return NULL;
	p->world = WORLD;
	p->rank = 0;
	p->n = 8;
	p->size = size;
	p->balancing = 1;
	p->rate = calloc(WORLD + 1, sizeof(*p->rate));
	p->dead = calloc(WORLD, 1);
	if (!p->rate || !p->dead) {
		free(p->rate);
		free(p->dead);
		free(p);
		return NULL;
	}
	return p;
}

static void peer_del(struct dlc_peer *p)
{
	free(p->rate);
	free(p->dead);
	free(p);
}

/* Source @r measured at @bps, with @queued reads of LEN outstanding. */
static void source(struct rate *r, uint64_t bps, uint32_t queued)
{
	r->bps = bps;
	r->inflight = queued;
	r->out = queued * LEN;
}

/* What the rule says: storage's completion time sooner than the peer's. */
static int storage_sooner(uint64_t s_bps, uint32_t s_queued, uint64_t p_bps,
			  uint32_t p_queued)
{
	/* (s_queued + 1) * LEN / s_bps < (p_queued + 1) * LEN / p_bps */
	return (s_queued + 1) * p_bps < (p_queued + 1) * s_bps;
}

static void test_rate_overlap(void)
{
	struct dlc_peer *p = peer_new();
	struct rate *r;

	CHECK(p, "calloc");
	if (!p)
		return;
	r = &p->rate[1];
	/*
	 * Two reads of LEN, both out from t = 0, ending at 40 and 50 ms: 200
	 * kB over 50 ms busy = 4 MB/s (the sum of their latencies, 90 ms,
	 * would say 2.2).
	 */
	peer_rate_start(r, 1000 * MS, LEN);
	peer_rate_start(r, 1000 * MS, LEN);
	CHECK_EQ(r->out, 2 * LEN);
	peer_rate_end(r, 1040 * MS, LEN, LEN);
	CHECK_EQ(r->out, LEN);
	CHECK_EQ(r->bps, 0);	/* 40 ms: under the 50 ms window */
	peer_rate_end(r, 1050 * MS, LEN, LEN);
	CHECK_EQ(r->out, 0);
	CHECK_EQ(r->inflight, 0);
	CHECK_EQ(r->bps, 4 * MB);
	/* Idle time between requests is not counted: 100 kB in 50 ms more. */
	peer_rate_start(r, 2000 * MS, LEN);
	peer_rate_end(r, 2050 * MS, LEN, LEN);
	CHECK_EQ(r->bps, 4 * MB - MB + 2 * MB / 4);	/* EWMA 1/4 of 2 MB/s */
	peer_del(p);
}

static void test_healthy_never_diverted(void)
{
	struct dlc_peer *p = peer_new();
	uint32_t q;

	CHECK(p, "calloc");
	if (!p)
		return;
	/* A peer at 1/BAL_SLOWER of storage is not yet a straggler. */
	source(&p->rate[WORLD], 16 * MB, 0);
	for (q = 0; q <= 256; q += 16) {
		source(&p->rate[1], 16 * MB / BAL_SLOWER, q);
		CHECK(!peer_slow_locked(p, 1), "queue %u", q);
		CHECK(!peer_divert_locked(p, 1, 0), "diverted at queue %u", q);
	}
	CHECK_EQ(p->c.peer_diverted, 0);
	peer_del(p);
}

static void test_straggler(void)
{
	static const uint32_t s_queue[] = { 0, 1, 3, 8, 30 };
	struct dlc_peer *p = peer_new();
	uint64_t s_bps = 16 * MB, p_bps = 16 * MB / BAL_SLOWER - 1;
	uint64_t want = 0;
	uint32_t q, i;

	CHECK(p, "calloc");
	if (!p)
		return;
	for (i = 0; i < sizeof(s_queue) / sizeof(s_queue[0]); i++) {
		for (q = 0; q <= 40; q++) {
			int expect = q >= BAL_PROBES &&
				     storage_sooner(s_bps, s_queue[i], p_bps, q);

			source(&p->rate[WORLD], s_bps, s_queue[i]);
			source(&p->rate[2], p_bps, q);
			CHECK(peer_slow_locked(p, 2), "not a straggler");
			CHECK(peer_divert_locked(p, 2, 3) == expect,
			      "storage queue %u, straggler queue %u: want %s",
			      s_queue[i], q, expect ? "storage" : "the peer");
			want += expect;
		}
	}
	/* Storage idle, 3 queued: 100 kB at 16 MB/s beats 400 kB at 4. */
	source(&p->rate[WORLD], s_bps, 0);
	source(&p->rate[2], p_bps, 3);
	CHECK(peer_divert_locked(p, 2, 3), "queue 3, storage idle");
	want++;
	CHECK_EQ(p->c.peer_diverted, want);
	CHECK_EQ(p->rate[2].diverted, want);
	CHECK_EQ(p->rate[1].diverted, 0);
	peer_del(p);
}

static void test_straggler_among_peers(void)
{
	struct dlc_peer *p = peer_new();

	CHECK(p, "calloc");
	if (!p)
		return;
	/* Storage's rate stale and low: peer 3 is not 4x slower than it. */
	source(&p->rate[WORLD], 1200000, 0);
	source(&p->rate[1], 8 * MB, 4);
	source(&p->rate[2], 6 * MB, 4);
	source(&p->rate[3], MB / 2, 4);
	/* 0.5 MB/s against the others' mean of 7: a straggler. */
	CHECK(peer_slow_locked(p, 3), "0.5 MB/s against peers at 8 and 6");
	CHECK(!peer_slow_locked(p, 1), "8 MB/s");
	CHECK(!peer_slow_locked(p, 2), "6 MB/s");
	/* (0 + 100 kB) / 1.2 MB/s before (4 + 1) x 100 kB / 0.5 MB/s. */
	CHECK(peer_divert_locked(p, 3, 0), "the straggler's read, storage idle");
	CHECK(!peer_divert_locked(p, 2, 0), "a healthy peer's read");
	/* Healthy peers' spread (3 against 8 and 5): nobody straggles. */
	source(&p->rate[WORLD], 4 * MB, 0);
	source(&p->rate[1], 8 * MB, 4);
	source(&p->rate[2], 5 * MB, 4);
	source(&p->rate[3], 3 * MB, 4);
	CHECK(!peer_slow_locked(p, 3), "3 MB/s against 8 and 5");
	/* A dead peer's rate is no yardstick. */
	source(&p->rate[1], 1000 * MB, 0);
	p->dead[1] = 1;
	CHECK(!peer_slow_locked(p, 3), "3 MB/s against 5 and a dead rank");
	p->dead[1] = 0;
	CHECK(peer_slow_locked(p, 3), "3 MB/s against 1000 and 5");
	peer_del(p);
}

static void test_off_or_unmeasured(void)
{
	struct dlc_peer *p = peer_new();

	CHECK(p, "calloc");
	if (!p)
		return;
	source(&p->rate[WORLD], 16 * MB, 0);
	source(&p->rate[3], MB / 10, 20);
	CHECK(peer_divert_locked(p, 3, 0), "the straggler, balancing on");
	p->balancing = 0;
	CHECK(!peer_divert_locked(p, 3, 0), "balancing off");
	CHECK(!peer_slow_locked(p, 3), "balancing off: no straggler");
	p->balancing = 1;
	source(&p->rate[WORLD], 0, 0);
	CHECK(!peer_divert_locked(p, 3, 0), "storage not measured");
	/* A straggler among the peers, but no completion time for storage. */
	source(&p->rate[1], 8 * MB, 4);
	CHECK(peer_slow_locked(p, 3), "0.1 MB/s against a peer at 8");
	CHECK(!peer_divert_locked(p, 3, 0), "storage not measured, a straggler");
	source(&p->rate[1], 0, 0);
	source(&p->rate[WORLD], 16 * MB, 0);
	source(&p->rate[3], 0, 20);
	CHECK(!peer_divert_locked(p, 3, 0), "the peer not measured");
	CHECK_EQ(p->c.peer_diverted, 1);
	peer_del(p);
}

int main(void)
{
	T_RUN(test_rate_overlap);
	T_RUN(test_healthy_never_diverted);
	T_RUN(test_straggler);
	T_RUN(test_straggler_among_peers);
	T_RUN(test_off_or_unmeasured);
	return t_done("test_balance");
}
