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
 *     rates are measured, nor while this rank's decoders are fed (its
 *     decode sets its pace: dlc_peer_window(), the pace window's shares);
 *   - backups: each sample's backup is a rank other than its owner and
 *     not dead, the same whichever rank computes it, spread over the
 *     others; a straggler's read goes to the backup when the backup is
 *     measured BAL_SLOWER times faster than the owner (else to storage
 *     by the rule above), to this rank only when it holds the bytes; a backup keeps samples only in the
 *     room above the bytes it owns, its own share never loses room to
 *     them, and a death drops them.
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
	p->reads_bound = 1;
	p->behind = 1;
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

static void test_decode_bound(void)
{
	struct dlc_peer *p = peer_new();

	CHECK(p, "calloc");
	if (!p)
		return;
	source(&p->rate[WORLD], 16 * MB, 0);
	source(&p->rate[3], MB / 10, 20);
	/* Decoders starved 20 % of a window: decode sets the pace. */
	dlc_peer_window(p, &(struct dlc_window_shares){ .starved = 200,
							.wait = 500 }, 0);
	CHECK_EQ(p->reads_bound, 0);
	CHECK(!peer_divert_locked(p, 3, 0), "decode-bound: no storage read");
	/* Starved 40 % in the next, the consumer waiting: reads set it. */
	dlc_peer_window(p, &(struct dlc_window_shares){ .starved = 400,
							.wait = 500 }, 0);
	CHECK_EQ(p->reads_bound, 1);
	CHECK_EQ(p->behind, 1);
	CHECK(peer_divert_locked(p, 3, 0), "reads-bound: storage sooner");
	/*
	 * Starved as much, but the consumer waited 10 % of it (a training
	 * step slower than the reads): nothing to gain, no storage read.
	 */
	dlc_peer_window(p, &(struct dlc_window_shares){ .starved = 400,
							.wait = 100 }, 0);
	CHECK_EQ(p->behind, 0);
	CHECK(!peer_divert_locked(p, 3, 0),
	      "consumer-paced: no storage read");
	/* At 30 % itself: decode (reads set it over STARVED_PERMILLE). */
	dlc_peer_window(p, &(struct dlc_window_shares){ .starved = 300,
							.wait = 500 }, 0);
	CHECK_EQ(p->reads_bound, 0);
	peer_del(p);
}

/*
 * The asker's choice of a prepared answer, worked by hand: a 150 KB
 * output against samples of 100 KB (the mean) and 300 KB, a 25 MB/s
 * link (200 Mbit/s: the extra 50 KB take 2 ms), a mean decode of 1 and
 * of 3 ms.
 */
static void test_prepared_pays(void)
{
	const uint64_t out = 150000, mean = 100000, bps = 25000000;

	/* No larger: always, even reads-bound, even unmeasured. */
	CHECK_EQ(dlc_peer_prepared_pays(out, 300000, mean, 1, bps, MS), 1);
	CHECK_EQ(dlc_peer_prepared_pays(out, out, mean, 1, 0, 0), 1);
	/* Larger and reads-bound: the link is what is short. */
	CHECK_EQ(dlc_peer_prepared_pays(out, mean, mean, 1, bps, 3 * MS), 0);
	/* Decode-bound: 2 ms more on the link against 1 ms of decode saved. */
	CHECK_EQ(dlc_peer_prepared_pays(out, mean, mean, 0, bps, MS), 0);
	/* ... against 3 ms saved. */
	CHECK_EQ(dlc_peer_prepared_pays(out, mean, mean, 0, bps, 3 * MS), 1);
	/*
	 * A 50 KB sample decodes in half the mean (1.5 ms of 3), and its
	 * answer is 100 KB more (4 ms): not worth it.
	 */
	CHECK_EQ(dlc_peer_prepared_pays(out, 50000, mean, 0, bps, 3 * MS), 0);
	/* Unmeasured link or decode: by the pace alone. */
	CHECK_EQ(dlc_peer_prepared_pays(out, mean, mean, 0, 0, MS), 1);
	CHECK_EQ(dlc_peer_prepared_pays(out, mean, mean, 0, bps, 0), 1);
	CHECK_EQ(dlc_peer_prepared_pays(out, mean, mean, 1, 0, 0), 0);
}

#define NB	1200	/* samples in the backup tests */

/*
 * Rank @rank of WORLD over NB samples of LEN bytes, placed; every rank's
 * capacity @cap bytes (0: room for all NB).
 */
static struct dlc_peer *peer_placed(uint32_t rank, uint64_t cap)
{
	struct dlc_peer *p = calloc(1, sizeof(*p));
	uint32_t i;

	if (!cap)
		cap = (uint64_t)NB * LEN;

	if (!p)
		return NULL;
	p->world = WORLD;
	p->rank = rank;
	p->n = NB;
	p->balancing = 1;
	p->reads_bound = 1;
	p->behind = 1;
	p->c.capacity = cap;
	p->size = calloc(NB, sizeof(*p->size));
	p->owner = calloc(NB, sizeof(*p->owner));
	p->home = calloc(NB, sizeof(*p->home));
	p->placed = calloc(NB, sizeof(*p->placed));
	p->share = calloc(NB, sizeof(*p->share));
	p->backup = calloc(NB, 1);
	p->has_crc = calloc(NB, 1);
	p->crc = calloc(NB, sizeof(*p->crc));
	p->home_bytes = calloc(WORLD, sizeof(*p->home_bytes));
	p->re_bytes = calloc(WORLD, sizeof(*p->re_bytes));
	p->max_owned = calloc(WORLD, sizeof(*p->max_owned));
	p->dead = calloc(WORLD, 1);
	p->peer_no_spare = calloc(WORLD, 1);
	p->rate = calloc(WORLD + 1, sizeof(*p->rate));
	p->cap = calloc(WORLD, sizeof(*p->cap));
	p->spare = calloc(WORLD, sizeof(*p->spare));
	if (!p->size || !p->owner || !p->home || !p->placed || !p->share ||
	    !p->backup || !p->has_crc || !p->crc || !p->home_bytes ||
	    !p->re_bytes || !p->max_owned || !p->dead || !p->peer_no_spare ||
	    !p->rate || !p->cap || !p->spare)
		return NULL;	/* the test fails on it; leaked */
	for (i = 0; i < NB; i++)
		p->size[i] = LEN;
	for (i = 0; i < WORLD; i++)
		p->cap[i] = cap;
	return peer_place(p) ? NULL : p;
}

static void peer_placed_del(struct dlc_peer *p)
{
	uint32_t i;

	for (i = 0; i < NB; i++)
		dlc_buf_put(p->share[i]);
	free(p->size);
	free(p->owner);
	free(p->home);
	free(p->placed);
	free(p->share);
	free(p->backup);
	free(p->has_crc);
	free(p->crc);
	free(p->home_bytes);
	free(p->re_bytes);
	free(p->max_owned);
	free(p->dead);
	free(p->peer_no_spare);
	free(p->rate);
	free(p->cap);
	free(p->spare);
	free(p);
}

static void test_backup_choice(void)
{
	struct dlc_peer *p = peer_placed(0, 0), *q = peer_placed(2, 0);
	uint32_t id, o, b, per[WORLD] = { 0 };

	CHECK(p && q, "calloc");
	if (!p || !q)
		return;
	for (id = 0; id < NB; id++)
		for (o = 0; o < WORLD; o++) {
			b = peer_backup(p, id, o);
			CHECK(b < WORLD && b != o, "sample %u, owner %u: backup %u",
			      id, o, b);
			CHECK_EQ(b, peer_backup(q, id, o));
			if (o == 3 && b < WORLD)
				per[b]++;
		}
	/* A third each, give or take: 400 expected, 5 sigma is about 80. */
	for (o = 0; o < 3; o++)
		CHECK(per[o] > 320 && per[o] < 480,
		      "rank %u backs up %u of rank 3's %u", o, per[o], NB);
	/* A dead rank is never a backup; only the owner left: none. */
	p->dead[1] = 1;
	for (id = 0; id < NB; id++) {
		b = peer_backup(p, id, 3);
		CHECK(b == 0 || b == 2, "sample %u: backup %u, rank 1 dead",
		      id, b);
	}
	p->dead[0] = p->dead[2] = 1;
	CHECK_EQ(peer_backup(p, 7, 3), NO_RANK);
	/* Every rank may answer with a sample of LEN, owned or backed up. */
	for (o = 0; o < WORLD; o++)
		CHECK_EQ(q->max_owned[o], LEN);
	peer_placed_del(p);
	peer_placed_del(q);
}

/*
 * Only a rank with room above the bytes it owns is a backup: with the
 * caches' sum at N there is none, and no backup is asked.
 */
static void test_backup_spare(void)
{
	/* NB / WORLD samples each: capacities of exactly their shares. */
	struct dlc_peer *p = peer_placed(0, (uint64_t)NB / WORLD * LEN);
	uint32_t id, o, b, own3 = 0;

	CHECK(p, "calloc");
	if (!p)
		return;
	for (o = 0; o < WORLD; o++)
		CHECK_EQ(p->spare[o], 0);
	for (id = 0; id < NB; id++)
		CHECK_EQ(peer_backup(p, id, p->owner[id]), NO_RANK);
	for (own3 = 0; own3 < NB && p->owner[own3] != 3; own3++)
		;
	CHECK(own3 < NB, "a sample of rank 3's");
	if (own3 >= NB)
		goto out;
	source(&p->rate[WORLD], 16 * MB, 0);
	source(&p->rate[1], 8 * MB, 2);
	source(&p->rate[2], 8 * MB, 2);
	source(&p->rate[3], MB / 10, BAL_PROBES);
	CHECK_EQ(peer_route_locked(p, 3, own3), NO_RANK);
	CHECK_EQ(p->c.backup_asked, 0);
	CHECK_EQ(p->c.peer_diverted, 1);
	/* Half a sample of room is not room for one. */
	p->cap[1] += LEN / 2;
	CHECK_EQ(peer_place(p), 0);
	CHECK_EQ(peer_backup(p, own3, 3), NO_RANK);
	/* Room for two on rank 1: it backs up every other rank's samples. */
	p->cap[1] += LEN + LEN / 2;
	CHECK_EQ(peer_place(p), 0);
	CHECK_EQ(p->spare[1], 2 * LEN);
	for (id = 0; id < NB; id++) {
		b = peer_backup(p, id, p->owner[id]);
		CHECK_EQ(b, p->owner[id] == 1 ? NO_RANK : 1);
	}
	CHECK_EQ(peer_route_locked(p, 3, own3), 1);
	CHECK_EQ(p->c.backup_asked, 1);
	/* Rank 2 dies: rank 1 owns more than its capacity, and has no room. */
	p->dead[2] = 1;
	peer_replace_locked(p);
	CHECK_EQ(p->spare[1], 0);
	CHECK_EQ(peer_backup(p, own3, 3), NO_RANK);
out:
	peer_placed_del(p);
}

/* The first sample rank 3 owns whose backup is @b. */
static uint32_t backed_by(struct dlc_peer *p, uint32_t b)
{
	uint32_t id;

	for (id = 0; id < NB; id++)
		if (p->owner[id] == 3 && peer_backup(p, id, 3) == b)
			return id;
	return NB;
}

static void test_backup_route(void)
{
	struct dlc_peer *p = peer_placed(0, 0);
	uint32_t mine, other, own;
	struct dlc_buf *b;

	CHECK(p, "calloc");
	if (!p)
		return;
	mine = backed_by(p, 0);
	other = backed_by(p, 1);
	for (own = 0; own < NB && p->owner[own] != 2; own++)
		;
	CHECK(mine < NB && other < NB && own < NB, "samples");
	if (mine >= NB || other >= NB || own >= NB)
		goto out;
	/* Rank 3 a straggler past its probes; storage and 1, 2 healthy. */
	source(&p->rate[WORLD], 16 * MB, 0);
	source(&p->rate[1], 8 * MB, 2);
	source(&p->rate[2], 8 * MB, 2);
	source(&p->rate[3], MB / 10, BAL_PROBES);
	CHECK_EQ(peer_route_locked(p, 3, other), 1);
	CHECK_EQ(p->c.backup_asked, 1);
	CHECK_EQ(peer_route_locked(p, 2, own), 2);
	/* This rank the backup, without the bytes: storage (sooner). */
	CHECK_EQ(peer_route_locked(p, 3, mine), NO_RANK);
	CHECK_EQ(p->c.peer_diverted, 1);
	b = dlc_buf_alloc(LEN);
	CHECK(b, "alloc");
	if (!b)
		goto out;
	p->spare[0] = LEN;
	peer_admit_locked(p, mine, b, 1);
	CHECK(p->share[mine] && p->backup[mine], "kept as the backup");
	CHECK_EQ(peer_route_locked(p, 3, mine), 0);
	CHECK_EQ(p->c.backup_hits, 1);
	/* Decode-bound: backups still asked (they cost storage nothing). */
	p->reads_bound = 0;
	CHECK_EQ(peer_route_locked(p, 3, other), 1);
	p->reads_bound = 1;
	/* Under its probes the straggler is asked itself. */
	source(&p->rate[3], MB / 10, BAL_PROBES - 1);
	CHECK_EQ(peer_route_locked(p, 3, other), 3);
	/* The backup no faster than the owner: storage, as without backups. */
	source(&p->rate[3], MB / 10, BAL_PROBES);
	source(&p->rate[1], MB / 10 * BAL_SLOWER, 2);
	CHECK(peer_slow_locked(p, 1), "0.4 MB/s against storage at 16");
	CHECK_EQ(peer_route_locked(p, 3, other), NO_RANK);
	/* Nor when it is not measured yet. */
	source(&p->rate[1], 0, 0);
	CHECK_EQ(peer_route_locked(p, 3, other), NO_RANK);
	/* A rank behind a slow link of its own: every peer alike, slow. */
	source(&p->rate[1], MB / 2, 2);
	source(&p->rate[2], MB / 2, 2);
	source(&p->rate[3], MB / 4, BAL_PROBES);
	source(&p->rate[WORLD], 4 * MB, 0);
	CHECK(peer_slow_locked(p, 3), "0.25 MB/s against storage at 4");
	CHECK_EQ(peer_route_locked(p, 3, other), NO_RANK);
	source(&p->rate[1], 8 * MB, 2);
	/* Balancing off: the owner. */
	p->balancing = 0;
	CHECK_EQ(peer_route_locked(p, 3, other), 3);
	dlc_buf_put(b);
out:
	peer_placed_del(p);
}

static void test_backup_room(void)
{
	/* Rank 1: owns about NB / 4 samples, capacity that plus 3 samples. */
	struct dlc_peer *p = peer_placed(1, 0);
	uint32_t id, kept = 0, own = 0, mine = 0;
	struct dlc_buf *b = dlc_buf_alloc(LEN);

	CHECK(p && b, "calloc");
	if (!p || !b)
		goto out;
	CHECK_EQ(p->owned_bytes, p->home_bytes[1]);
	p->c.capacity = p->owned_bytes + 3 * LEN;
	p->spare[1] = 3 * LEN;
	/* Backups first: only 3 fit, above the owned bytes. */
	for (id = 0; id < NB; id++)
		if (p->owner[id] != 1 && peer_backup(p, id, p->owner[id]) == 1)
			peer_admit_locked(p, id, b, 1);
	for (id = 0; id < NB; id++)
		kept += p->backup[id];
	CHECK_EQ(kept, 3);
	CHECK_EQ(p->backup_used, 3 * LEN);
	CHECK(p->no_spare, "said no spare room");
	/* A sample neither owned nor backed up here is never kept. */
	for (id = 0; id < NB; id++)
		if (p->owner[id] != 1 && peer_backup(p, id, p->owner[id]) != 1)
			break;
	peer_admit_locked(p, id, b, 1);
	CHECK(!p->share[id], "sample %u, not ours to keep", id);
	/* Every owned sample still fits: the share never lost room. */
	for (id = 0; id < NB; id++)
		if (p->owner[id] == 1) {
			mine++;
			peer_admit_locked(p, id, b, 1);
			own += p->share[id] && !p->backup[id];
		}
	CHECK_EQ(own, mine);
	CHECK(!p->full, "the share said full");
	CHECK(p->used + p->backup_used <= p->c.capacity, "%llu + %llu held",
	      (unsigned long long)p->used, (unsigned long long)p->backup_used);
	/* Rank 3 dies: backups dropped, the share kept. */
	p->dead[3] = 1;
	p->peer_no_spare[2] = 1;
	peer_replace_locked(p);
	CHECK_EQ(p->backup_used, 0);
	CHECK_EQ(p->used, (uint64_t)mine * LEN);
	CHECK(!p->no_spare && !p->peer_no_spare[2], "no-spare flags reset");
	for (id = 0; id < NB; id++)
		CHECK(!p->backup[id], "sample %u still a backup", id);
	CHECK_EQ(p->owned_bytes, p->re_bytes[1]);
out:
	dlc_buf_put(b);
	if (p)
		peer_placed_del(p);
}

int main(void)
{
	T_RUN(test_rate_overlap);
	T_RUN(test_healthy_never_diverted);
	T_RUN(test_straggler);
	T_RUN(test_straggler_among_peers);
	T_RUN(test_off_or_unmeasured);
	T_RUN(test_decode_bound);
	T_RUN(test_prepared_pays);
	T_RUN(test_backup_choice);
	T_RUN(test_backup_route);
	T_RUN(test_backup_spare);
	T_RUN(test_backup_room);
	return t_done("test_balance");
}
