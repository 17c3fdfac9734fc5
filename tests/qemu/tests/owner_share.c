// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * owner_share: the cache is shared by owner first, then by data set
 * within an owner (issue 29, item 3). Capacity 64 MiB; user A's one data
 * set holds 60 MiB; user B makes NB tiny data sets and PUTs into each,
 * round-robin, more than the whole capacity. A must keep about its
 * owner's share (half the capacity), B gets the other half, and each of
 * B's data sets holds about its share of B's half. Under the old rule
 * (capacity / data sets, stealing from the set that holds most) B's
 * sets each took 1/17 of the capacity from A, leaving A a few MiB.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlc_test.h"

#define MIB (1ULL << 20)
#define CAP (64 * MIB)
#define UID_A 5311
#define UID_B 5312
#define NA 60			/* A's samples of ASZ */
#define ASZ (1U << 20)
#define NB 16			/* B's data sets */
#define SB 16			/* B's samples per data set, of BSZ */
#define BSZ (256U << 10)

struct report {
	uint64_t used;		/* bytes held by the reporter's data sets */
	uint64_t most;		/* most of one of its data sets */
	uint64_t cached;	/* its PUTs that were cached */
	uint64_t evictions;	/* of its data sets */
};

static int a_ready[2], b_ready[2], a_go[2], b_go[2], res[2];

static void send_report(const struct report *rp)
{
	if (write(res[1], rp, sizeof(*rp)) != sizeof(*rp))
		FAIL("report: %m");
}

static int user_a(void)
{
	struct report rp = { 0 };
	struct dlcache_stats st;
	struct dlcache_cqe cqe;
	struct t_ring r;
	uint8_t *buf = malloc(ASZ);
	uint64_t k[2];
	uint32_t i;
	long h, ret;
	int fd = t_open();

	if (!buf)
		FATAL("malloc");
	t_key("owner-share-a", k);
	h = t_attach(fd, k, 64, 0600, 0, NULL);
	if (h < 0)
		FATAL("A: ATTACH: %s", t_errname(h));
	ret = t_ring_init(&r, fd, 8, 0);
	if (ret < 0)
		FATAL("A: ring: %s", t_errname(ret));
	for (i = 0; i < NA; i++) {
		t_pattern(buf, ASZ, k[0], i);
		ret = t_put(&r, (uint32_t)h, i, buf, ASZ, &cqe);
		CHECK_EQ(ret, ASZ, "A: PUT");
		CHECK(cqe.flags & DLCACHE_CQE_F_CACHED, "A: PUT %u not cached with room", i);
	}
	st = t_stats_of(fd, (uint32_t)h);
	t_info("A alone holds %llu MiB", (unsigned long long)(st.dataset.used_bytes / MIB));
	t_signal(a_ready[1]);
	if (!t_await(a_go[0], 90))
		FATAL("A: never told to measure");
	st = t_stats_of(fd, (uint32_t)h);
	rp.used = rp.most = st.dataset.used_bytes;
	rp.cached = st.dataset.cached_samples;
	rp.evictions = st.dataset.evictions;
	send_report(&rp);
	close(fd);
	return t_done();
}

static int user_b(void)
{
	struct report rp = { 0 };
	struct dlcache_stats st;
	struct dlcache_cqe cqe;
	struct t_ring r;
	uint8_t *buf = malloc(BSZ);
	uint64_t k[NB][2];
	char tag[64];
	long h[NB], ret;
	uint32_t d, s;
	int fd = t_open();

	if (!buf)
		FATAL("malloc");
	for (d = 0; d < NB; d++) {
		snprintf(tag, sizeof(tag), "owner-share-b-%u", d);
		t_key(tag, k[d]);
		h[d] = t_attach(fd, k[d], 64, 0600, 0, NULL);
		if (h[d] < 0)
			FATAL("B: ATTACH %u: %s", d, t_errname(h[d]));
	}
	ret = t_ring_init(&r, fd, 8, 0);
	if (ret < 0)
		FATAL("B: ring: %s", t_errname(ret));
	for (s = 0; s < SB; s++) {
		for (d = 0; d < NB; d++) {
			t_pattern(buf, BSZ, k[d][0], s);
			ret = t_put(&r, (uint32_t)h[d], s, buf, BSZ, &cqe);
			CHECK_EQ(ret, BSZ, "B: PUT");
		}
	}
	t_signal(b_ready[1]);
	if (!t_await(b_go[0], 90))
		FATAL("B: never told to measure");
	for (d = 0; d < NB; d++) {
		st = t_stats_of(fd, (uint32_t)h[d]);
		rp.used += st.dataset.used_bytes;
		if (st.dataset.used_bytes > rp.most)
			rp.most = st.dataset.used_bytes;
		rp.cached += st.dataset.cached_samples;
		rp.evictions += st.dataset.evictions;
	}
	send_report(&rp);
	close(fd);
	return t_done();
}

int main(void)
{
	struct report ra, rb;
	struct dlcache_stats st;
	uint64_t old = 0;
	pid_t a, b;
	long ret;
	int fd;

	t_time_limit(150);
	if (getuid() != 0)
		t_skip("needs root to drop privileges");
	fd = t_open();
	ret = t_set_capacity(fd, CAP, &old);
	if (ret < 0)
		FATAL("SET_CAPACITY 64 MiB: %s", t_errname(ret));
	if (chown(DLCACHE_DEVICE, 0, T_DEVGRP))
		FATAL("chown %s: %m", DLCACHE_DEVICE);
	if (pipe(a_ready) || pipe(b_ready) || pipe(a_go) || pipe(b_go) || pipe(res))
		FATAL("pipe: %m");

	a = t_start_user(UID_A, user_a);
	if (!t_await(a_ready[0], 90))
		FATAL("A did not fill its data set");
	b = t_start_user(UID_B, user_b);
	if (!t_await(b_ready[0], 120))
		FATAL("B did not fill its data sets");
	t_signal(a_go[1]);
	if (read(res[0], &ra, sizeof(ra)) != sizeof(ra))
		FATAL("no report from A");
	t_signal(b_go[1]);
	if (read(res[0], &rb, sizeof(rb)) != sizeof(rb))
		FATAL("no report from B");
	st = t_stats_of(fd, 0);

	t_info("capacity %llu MiB, used %llu KiB", (unsigned long long)(CAP / MIB),
	       (unsigned long long)(st.used_bytes >> 10));
	t_info("A (1 data set): %llu KiB, %llu samples, %llu evicted",
	       (unsigned long long)(ra.used >> 10), (unsigned long long)ra.cached,
	       (unsigned long long)ra.evictions);
	t_info("B (%u data sets): %llu KiB, %llu samples, %llu evicted, most in one %llu KiB",
	       NB, (unsigned long long)(rb.used >> 10), (unsigned long long)rb.cached,
	       (unsigned long long)rb.evictions, (unsigned long long)(rb.most >> 10));
	CHECK(st.used_bytes <= CAP, "used %llu over the capacity",
	      (unsigned long long)st.used_bytes);
	/* Half each, give or take a sample of A's. */
	CHECK(ra.used + ASZ >= CAP / 2, "A kept %llu KiB, not its owner's share of %llu KiB",
	      (unsigned long long)(ra.used >> 10), (unsigned long long)(CAP / 2 >> 10));
	CHECK(rb.used + ASZ >= CAP / 2, "B got %llu KiB, not its owner's share of %llu KiB",
	      (unsigned long long)(rb.used >> 10), (unsigned long long)(CAP / 2 >> 10));
	CHECK(rb.most <= CAP / 2 / NB + BSZ,
	      "one of B's data sets holds %llu KiB, over its share of B's half (%llu KiB)",
	      (unsigned long long)(rb.most >> 10), (unsigned long long)(CAP / 2 / NB >> 10));

	CHECK_EQ(t_wait(a, 30), 0, "user A");
	CHECK_EQ(t_wait(b, 30), 0, "user B");
	t_set_capacity(fd, old, NULL);
	close(fd);
	return t_done();
}
