// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * ahead: GET with DLCACHE_SQE_F_AHEAD, the read-ahead's look-up.
 *
 * 1. GET_INFO advertises DLCACHE_FEAT_GET_AHEAD.
 * 2. On a hit it returns the size and copies nothing (a buffer keeps its
 *    bytes; addr 0 and len 0 work too), and counts no hit.
 * 3. A miss counts and takes the fill (-ENOENT, F_FILL); a look-up of a
 *    sample this session fills is -ENOENT with F_SOONER, nothing taken.
 * 4. It is not a use: ds_cursor stays where the uses left it, whatever
 *    it looked up, and a use (F_AT) afterwards still moves it. The use of
 *    the sample filled finds its own fill; the PUT after it caches the
 *    bytes.
 * 5. With F_AT it names the use it is for and is still not a use; a miss
 *    used before that position (here: in epoch 1, looked up for epoch 2)
 *    has F_SOONER and takes nothing, one looked up for its own next use
 *    takes the fill. A position without F_AT, or F_AHEAD on ABORT, is
 *    -EINVAL.
 * 6. A look-up ahead of a sample another session fills waits for that
 *    fill and then completes as a hit (size, F_WAITED, nothing copied).
 * 7. The fill a look-up and a use wait on is ABORTed: the hand-over goes
 *    to the use, never to the look-up, which waits on until the use's
 *    PUT and then completes as a hit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlc_test.h"

#define N 16
#define SZ 5000

static uint64_t key[2];

static long get_ahead(struct t_ring *r, uint32_t h, uint32_t sample, void *buf,
		      uint32_t len, struct dlcache_cqe *cqe)
{
	struct dlcache_sqe sqe = {
		.opcode = DLCACHE_OP_GET, .flags = DLCACHE_SQE_F_AHEAD,
		.handle = h, .sample = sample, .len = len,
		.addr = (uintptr_t)buf, .user_data = 0xa11ead00 + sample,
	};
	long ret = t_do(r, &sqe, cqe);

	return ret < 0 ? ret : cqe->res;
}

static bool all(const uint8_t *p, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

int main(void)
{
	struct dlcache_stats st0, st;
	struct dlcache_info info;
	struct dlcache_cqe cqe;
	struct dlcache_sqe sqe;
	struct t_ring r, r2;
	uint32_t order[N];
	uint8_t *buf = malloc(SZ);
	int fd, fd2;
	long h, h2, ret;

	t_time_limit(60);
	t_key("ahead", key);
	fd = t_open();
	CHECK_ERR(t_get_info(fd, &info), 0, "GET_INFO");
	if (!(info.supported & DLCACHE_FEAT_GET_AHEAD))
		FATAL("GET_INFO: no DLCACHE_FEAT_GET_AHEAD in supported %#llx",
		      (unsigned long long)info.supported);
	h = t_attach(fd, key, N, 0600, 0, NULL);
	if (h < 0 || t_ring_init(&r, fd, 8, 0) < 0)
		FATAL("ATTACH or ring: %s", t_errname(h));
	for (uint32_t i = 0; i < N; i++)
		order[i] = i;
	CHECK_ERR(t_set_order(fd, (uint32_t)h, 1, order, N), 0, "SET_ORDER epoch 1");
	for (uint32_t s = 0; s < 8; s++) {
		t_pattern(buf, SZ, key[0], s);
		CHECK_EQ(t_put(&r, (uint32_t)h, s, buf, SZ, &cqe), SZ, "PUT");
	}
	st0 = t_stats_of(fd, (uint32_t)h);
	CHECK_EQ(st0.ds_cursor, 0, "ds_cursor before any use");

	/* 2. A hit: the size, nothing copied, no hit counted. */
	memset(buf, 0x5a, SZ);
	CHECK_EQ(get_ahead(&r, (uint32_t)h, 5, buf, SZ, &cqe), SZ, "GET F_AHEAD of a cached sample");
	CHECK_EQ(cqe.size, SZ, "cqe.size of the look-up");
	CHECK_EQ(cqe.flags & DLCACHE_CQE_F_FILL, 0, "a hit's look-up took a fill");
	CHECK(all(buf, SZ, 0x5a), "GET F_AHEAD of a hit wrote the buffer");
	CHECK_EQ(get_ahead(&r, (uint32_t)h, 6, NULL, 0, &cqe), SZ, "GET F_AHEAD, addr 0, len 0");
	/* 3. A miss counts and takes the fill; a look-up of our fill, not. */
	CHECK_EQ(get_ahead(&r, (uint32_t)h, 12, NULL, 0, &cqe), -ENOENT, "GET F_AHEAD of a miss");
	CHECK(cqe.flags & DLCACHE_CQE_F_FILL, "a miss's look-up took no fill");
	CHECK_EQ(get_ahead(&r, (uint32_t)h, 12, NULL, 0, &cqe), -ENOENT, "GET F_AHEAD of our fill");
	CHECK_EQ(cqe.flags & DLCACHE_CQE_F_FILL, 0, "a look-up of our own fill says F_FILL");
	CHECK(cqe.flags & DLCACHE_CQE_F_SOONER, "a look-up of our own fill lacks F_SOONER");
	st = t_stats_of(fd, (uint32_t)h);
	CHECK_EQ(st.dataset.hits, st0.dataset.hits, "hits after look-ups ahead");
	CHECK_EQ(st.dataset.misses, st0.dataset.misses + 1, "misses after look-ups ahead");

	/* 4. Not a use: the cursor moves only with the use at (1, 3). */
	st = t_stats_of(fd, (uint32_t)h);
	CHECK_EQ(st.ds_cursor, 0, "ds_cursor after look-ups ahead");
	CHECK_EQ(t_get_at(&r, (uint32_t)h, 3, 1, 3, buf, SZ, &cqe), SZ, "GET F_AT (1, 3)");
	st = t_stats_of(fd, (uint32_t)h);
	CHECK_EQ(st.ds_cursor, 4, "ds_cursor after the use at (1, 3)");
	CHECK_EQ(get_ahead(&r, (uint32_t)h, 7, NULL, 0, &cqe), SZ, "GET F_AHEAD of sample 7");
	st = t_stats_of(fd, (uint32_t)h);
	CHECK_EQ(st.ds_cursor, 4, "ds_cursor after a look-up ahead of (1, 7)");
	/* The use of the sample looked up finds its fill, ours. */
	CHECK_EQ(t_get_at(&r, (uint32_t)h, 12, 1, 12, NULL, 0, &cqe), -ENOENT,
		 "GET F_AT (1, 12), len 0, of the miss");
	CHECK(cqe.flags & DLCACHE_CQE_F_FILL, "the use of our fill says no F_FILL");
	st = t_stats_of(fd, (uint32_t)h);
	CHECK_EQ(st.ds_cursor, 13, "ds_cursor after the use at (1, 12)");
	t_pattern(buf, SZ, key[0], 12);
	CHECK_EQ(t_put(&r, (uint32_t)h, 12, buf, SZ, &cqe), SZ, "PUT of the fill");
	CHECK(cqe.flags & DLCACHE_CQE_F_CACHED, "the fill's PUT was not cached");
	CHECK_EQ(get_ahead(&r, (uint32_t)h, 12, NULL, 0, &cqe), SZ, "GET F_AHEAD after the PUT");
	memset(buf, 0, SZ);
	CHECK_EQ(t_get(&r, (uint32_t)h, 12, buf, SZ, &cqe), SZ, "GET of the PUT bytes");
	t_pattern_ok(buf, SZ, key[0], 12);

	/* 5. F_AT: the use looked up for; epoch 2 is 15..0 (14 at index 1). */
	{
		uint32_t rev[N];

		for (uint32_t i = 0; i < N; i++)
			rev[i] = N - 1 - i;
		CHECK_ERR(t_set_order(fd, (uint32_t)h, 2, rev, N), 0, "SET_ORDER epoch 2");
	}
	memset(&sqe, 0, sizeof(sqe));
	sqe.opcode = DLCACHE_OP_GET;
	sqe.handle = (uint32_t)h;
	sqe.flags = DLCACHE_SQE_F_AHEAD | DLCACHE_SQE_F_AT;
	sqe.sample = 14;
	sqe.epoch = 2;
	sqe.index = 1;
	ret = t_do(&r, &sqe, &cqe);
	CHECK_EQ(ret < 0 ? ret : cqe.res, -ENOENT, "GET F_AHEAD | F_AT (2, 1) of 14");
	CHECK(cqe.flags & DLCACHE_CQE_F_SOONER, "14 is used at (1, 14) first: no F_SOONER");
	CHECK_EQ(cqe.flags & DLCACHE_CQE_F_FILL, 0, "a look-up with F_AT took the fill");
	sqe.epoch = 1;
	sqe.index = 14;
	ret = t_do(&r, &sqe, &cqe);
	CHECK_EQ(ret < 0 ? ret : cqe.res, -ENOENT, "GET F_AHEAD | F_AT (1, 14) of 14");
	CHECK_EQ(cqe.flags & DLCACHE_CQE_F_SOONER, 0, "F_SOONER for 14's own next use");
	CHECK(cqe.flags & DLCACHE_CQE_F_FILL, "the look-up for 14's own use took no fill");
	st = t_stats_of(fd, (uint32_t)h);
	CHECK_EQ(st.ds_cursor, 13, "ds_cursor after look-ups with F_AT");
	CHECK_EQ(t_abort(&r, (uint32_t)h, 14, 0, &cqe), 0, "ABORT of the look-up's fill of 14");
	/* Bad combinations. */
	sqe.sample = 1;
	sqe.flags = DLCACHE_SQE_F_AHEAD;
	ret = t_do(&r, &sqe, &cqe);
	CHECK_EQ(ret < 0 ? ret : cqe.res, -EINVAL, "GET F_AHEAD with a position");
	memset(&sqe, 0, sizeof(sqe));
	sqe.opcode = DLCACHE_OP_ABORT;
	sqe.handle = (uint32_t)h;
	sqe.sample = 12;
	sqe.flags = DLCACHE_SQE_F_AHEAD;
	ret = t_do(&r, &sqe, &cqe);
	CHECK_EQ(ret < 0 ? ret : cqe.res, -EINVAL, "ABORT F_AHEAD");

	/* 6. Another session fills sample 13: the look-up waits, then hits. */
	fd2 = t_open();
	h2 = t_attach(fd2, key, N, 0600, 0, NULL);
	if (h2 < 0 || t_ring_init(&r2, fd2, 8, 0) < 0)
		FATAL("second ATTACH or ring: %s", t_errname(h2));
	CHECK_EQ(t_get(&r2, (uint32_t)h2, 13, buf, SZ, &cqe), -ENOENT, "the filler's GET");
	CHECK(cqe.flags & DLCACHE_CQE_F_FILL, "the filler's GET took no fill");
	memset(&sqe, 0, sizeof(sqe));
	sqe.opcode = DLCACHE_OP_GET;
	sqe.flags = DLCACHE_SQE_F_AHEAD;
	sqe.handle = (uint32_t)h;
	sqe.sample = 13;
	sqe.user_data = 0x13;
	memset(buf, 0x77, SZ);
	sqe.addr = (uintptr_t)buf;
	sqe.len = SZ;
	CHECK(t_push(&r, &sqe), "SQ full");
	CHECK_EQ(t_enter(&r, 1, 0, 0, 0), 1, "ENTER of the look-up");
	CHECK_EQ(t_cq_ready(&r), 0, "a look-up of a sample being filled completed at once");
	{
		uint8_t *b2 = malloc(SZ);

		t_pattern(b2, SZ, key[0], 13);
		CHECK_EQ(t_put(&r2, (uint32_t)h2, 13, b2, SZ, &cqe), SZ, "the filler's PUT");
		free(b2);
	}
	ret = t_enter(&r, 0, 1, DLCACHE_ENTER_F_GETEVENTS | DLCACHE_ENTER_F_TIMEOUT,
		      10000000000ULL);
	CHECK(ret >= 0, "ENTER waiting for the look-up: %s", t_errname(ret));
	if (t_reap(&r, &cqe)) {
		CHECK_EQ(cqe.user_data, 0x13, "user_data of the waited look-up");
		CHECK_EQ(cqe.res, SZ, "res of the waited look-up");
		CHECK(cqe.flags & DLCACHE_CQE_F_WAITED, "the waited look-up has no F_WAITED");
		CHECK(all(buf, SZ, 0x77), "the waited look-up wrote the buffer");
	} else {
		FAIL("the waited look-up never completed");
	}

	/* 7. 14's fill, under a look-up and a use, is ABORTed. */
	{
		int fd3 = t_open();
		long h3 = t_attach(fd3, key, N, 0600, 0, NULL);
		struct dlcache_sqe use = { .opcode = DLCACHE_OP_GET, .sample = 14,
					   .user_data = 0x314 };
		struct t_ring r3;
		uint8_t *b3 = malloc(SZ);

		if (h3 < 0 || t_ring_init(&r3, fd3, 8, 0) < 0)
			FATAL("third ATTACH or ring: %s", t_errname(h3));
		CHECK_EQ(t_get(&r2, (uint32_t)h2, 14, buf, SZ, &cqe), -ENOENT,
			 "the filler's GET of 14");
		CHECK(cqe.flags & DLCACHE_CQE_F_FILL, "the filler's GET of 14 took no fill");
		sqe.sample = 14;
		sqe.user_data = 0x14;
		CHECK(t_push(&r, &sqe), "SQ full");
		CHECK_EQ(t_enter(&r, 1, 0, 0, 0), 1, "ENTER of the look-up of 14");
		use.handle = (uint32_t)h3;
		use.addr = (uintptr_t)b3;
		use.len = SZ;
		CHECK(t_push(&r3, &use), "SQ full");
		CHECK_EQ(t_enter(&r3, 1, 0, 0, 0), 1, "ENTER of the use of 14");
		CHECK_EQ(t_abort(&r2, (uint32_t)h2, 14, 0, &cqe), 0, "the filler's ABORT");
		ret = t_enter(&r3, 0, 1, DLCACHE_ENTER_F_GETEVENTS | DLCACHE_ENTER_F_TIMEOUT,
			      10000000000ULL);
		if (ret >= 0 && t_reap(&r3, &cqe)) {
			CHECK_EQ(cqe.res, -ENOENT, "the use of 14 after the ABORT");
			CHECK(cqe.flags & DLCACHE_CQE_F_FILL, "the use was not handed the fill");
		} else {
			FAIL("the use of 14 never completed: %s", t_errname(ret));
		}
		CHECK_EQ(t_cq_ready(&r), 0, "the look-up completed while the use fills");
		t_pattern(b3, SZ, key[0], 14);
		CHECK_EQ(t_put(&r3, (uint32_t)h3, 14, b3, SZ, &cqe), SZ, "the use's PUT of 14");
		ret = t_enter(&r, 0, 1, DLCACHE_ENTER_F_GETEVENTS | DLCACHE_ENTER_F_TIMEOUT,
			      10000000000ULL);
		if (ret >= 0 && t_reap(&r, &cqe)) {
			CHECK_EQ(cqe.user_data, 0x14, "user_data of the look-up of 14");
			CHECK_EQ(cqe.res, SZ, "the look-up of 14 after the PUT");
			CHECK_EQ(cqe.flags & DLCACHE_CQE_F_FILL, 0, "a look-up was handed the fill");
		} else {
			FAIL("the look-up of 14 never completed: %s", t_errname(ret));
		}
		t_ring_unmap(&r3);
		close(fd3);
		free(b3);
	}
	t_ring_unmap(&r2);
	close(fd2);
	t_ring_unmap(&r);
	close(fd);
	free(buf);
	return t_done();
}
