// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * capacity: SET_CAPACITY lowers the limit and the cache evicts down to it
 * at once, farthest next use first; STATS and GET_INFO agree with the
 * new capacity; raising it evicts nothing and admits again; used bytes
 * never exceed capacity.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlc_test.h"

#define N 200
#define SZ 20000
#define CH 20480		/* charged: whole pages */
#define PARAM "/sys/module/dlcache/parameters/capacity_mb"

int main(void)
{
	struct dlcache_cqe cqe;
	struct dlcache_stats st, st0;
	struct dlcache_info info;
	struct t_ring r;
	uint32_t order[N];
	uint64_t key[2], old = 0, seed = 7;
	uint8_t *buf = malloc(SZ);
	uint32_t i, keep;
	long h, ret;
	int fd;

	t_time_limit(60);
	t_key("capacity", key);
	fd = t_open();
	ret = t_set_capacity(fd, 8 << 20, NULL);
	if (ret < 0)
		FATAL("SET_CAPACITY 8 MiB: %s", t_errname(ret));
	ret = t_set_capacity(fd, 8 << 20, &old);
	CHECK_EQ(old, 8 << 20, "old_bytes");
	h = t_attach(fd, key, N, 0600, 0, NULL);
	if (h < 0)
		FATAL("ATTACH: %s", t_errname(h));
	ret = t_ring_init(&r, fd, 8, 0);
	if (ret < 0)
		FATAL("ring: %s", t_errname(ret));

	/* A shuffled order; all samples fit. */
	for (i = 0; i < N; i++)
		order[i] = i;
	for (i = N - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(t_rand(&seed) % (i + 1)), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	CHECK_ERR(t_set_order(fd, (uint32_t)h, 0, order, N), 0, "SET_ORDER");
	for (i = 0; i < N; i++) {
		t_pattern(buf, SZ, key[0], i);
		ret = t_put(&r, (uint32_t)h, i, buf, SZ, &cqe);
		CHECK_EQ(ret, SZ, "PUT");
		CHECK(cqe.flags & DLCACHE_CQE_F_CACHED, "PUT %u not cached with room", i);
	}
	t_stats(fd, (uint32_t)h, &st0);
	CHECK_EQ(st0.used_bytes, (uint64_t)N * CH, "used after filling (whole pages)");
	CHECK_EQ(st0.dataset.cached_samples, N, "cached after filling");

	/* Shrink to 1 MiB. */
	ret = t_set_capacity(fd, 1 << 20, &old);
	CHECK_ERR(ret, 0, "SET_CAPACITY 1 MiB");
	CHECK_EQ(old, 8 << 20, "old_bytes when shrinking");
	keep = (1 << 20) / CH;
	t_stats(fd, (uint32_t)h, &st);
	CHECK_EQ(st.capacity_bytes, 1 << 20, "STATS capacity after shrinking");
	CHECK(st.used_bytes <= st.capacity_bytes, "used %llu over capacity after shrinking",
	      (unsigned long long)st.used_bytes);
	CHECK_EQ(st.dataset.cached_samples, keep, "samples left after shrinking");
	CHECK_EQ(st.used_bytes, (uint64_t)keep * CH, "used bytes after shrinking");
	CHECK_EQ(st.dataset.evictions - st0.dataset.evictions, N - keep, "evictions by shrinking");
	CHECK_EQ(st.dataset.eviction_bytes - st0.dataset.eviction_bytes, (uint64_t)(N - keep) * SZ,
		 "eviction_bytes by shrinking");
	CHECK_EQ(st.global.used_bytes, st.used_bytes, "global counters used = used");
	CHECK_EQ(st.dataset.shrinker_evictions, 0, "shrinker evictions (none expected)");
	CHECK_ERR(t_get_info(fd, &info), 0, "GET_INFO");
	CHECK_EQ(info.capacity_bytes, 1 << 20, "GET_INFO capacity after shrinking");

	/* Raise to 2 MiB: nothing evicted; evicted samples are admitted again,
	 * nearest next use first, until full. */
	ret = t_set_capacity(fd, 2 << 20, &old);
	CHECK_ERR(ret, 0, "SET_CAPACITY 2 MiB");
	CHECK_EQ(old, 1 << 20, "old_bytes when growing");
	t_stats(fd, (uint32_t)h, &st0);
	CHECK_EQ(st0.dataset.cached_samples, keep, "samples after growing");
	for (i = keep; i < N; i++) {
		uint32_t s = order[i];

		t_pattern(buf, SZ, key[0], s);
		ret = t_put(&r, (uint32_t)h, s, buf, SZ, &cqe);
		CHECK_EQ(ret, SZ, "PUT after growing");
		if (!!(cqe.flags & DLCACHE_CQE_F_CACHED) != (i < (2u << 20) / CH))
			FAIL("PUT of the sample at position %u: %s", i,
			     cqe.flags & DLCACHE_CQE_F_CACHED ? "cached beyond capacity"
							      : "bypassed with room");
	}
	keep = (2 << 20) / CH;
	t_stats(fd, (uint32_t)h, &st);
	CHECK_EQ(st.dataset.cached_samples, keep, "samples after refilling");
	CHECK(st.used_bytes <= st.capacity_bytes, "used over capacity after refilling");

	/* The samples kept are the first @keep of the order, with their bytes. */
	for (i = 0; i < N; i++) {
		struct dlcache_sqe sqe;

		memset(&sqe, 0, sizeof(sqe));
		sqe.opcode = DLCACHE_OP_GET;
		sqe.flags = DLCACHE_SQE_F_AT;
		sqe.handle = (uint32_t)h;
		sqe.sample = order[i];
		sqe.addr = (uintptr_t)buf;
		sqe.len = SZ;
		sqe.index = i;
		ret = t_do(&r, &sqe, &cqe);
		if (ret < 0) {
			FAIL("GET at %u: %s", i, t_errname(ret));
			break;
		}
		if (i < keep) {
			if (cqe.res != SZ)
				FAIL("position %u (sample %u): %s, want a hit", i, order[i],
				     t_errname(cqe.res));
			else
				t_pattern_ok(buf, SZ, key[0], order[i]);
		} else {
			if (cqe.res != -ENOENT)
				FAIL("position %u (sample %u): %s, want a miss", i, order[i],
				     t_errname(cqe.res));
			if (cqe.flags & DLCACHE_CQE_F_FILL)
				t_abort(&r, (uint32_t)h, order[i], 0, &cqe);
		}
	}

	/* The capacity_mb parameter shows and sets the same capacity. */
	{
		char val[32] = "";
		int pf = open(PARAM, O_RDWR);
		ssize_t n;

		if (pf < 0) {
			FAIL("open %s: %m", PARAM);
		} else {
			CHECK_ERR(t_set_capacity(fd, 5 << 20, NULL), 0, "SET_CAPACITY 5 MiB");
			n = pread(pf, val, sizeof(val) - 1, 0);
			CHECK(n > 0 && atoi(val) == 5, "%s reads '%s' after SET_CAPACITY 5 MiB",
			      PARAM, val);
			/* Refill a little, then lower it through the parameter. */
			for (i = 0; i < 100; i++) {
				t_pattern(buf, SZ, key[0], i);
				t_put(&r, (uint32_t)h, i, buf, SZ, &cqe);
			}
			n = pwrite(pf, "1\n", 2, 0);
			CHECK_EQ(n, 2, "write 1 to capacity_mb");
			close(pf);
			CHECK_ERR(t_get_info(fd, &info), 0, "GET_INFO");
			CHECK_EQ(info.capacity_bytes, 1 << 20, "capacity after writing capacity_mb=1");
			t_stats(fd, (uint32_t)h, &st);
			CHECK(st.used_bytes <= 1 << 20, "used %llu after writing capacity_mb=1",
			      (unsigned long long)st.used_bytes);
		}
	}

	/* Capacity 0 either is refused or empties the cache. */
	ret = t_set_capacity(fd, 0, NULL);
	t_stats(fd, 0, &st);
	if (ret == 0)
		CHECK_EQ(st.used_bytes, 0, "used bytes with capacity 0");
	else
		CHECK_ERR(ret, -EINVAL, "SET_CAPACITY 0");
	CHECK(st.used_bytes <= st.capacity_bytes, "used over capacity at the end");
	t_ring_unmap(&r);
	close(fd);
	free(buf);
	return t_done();
}
