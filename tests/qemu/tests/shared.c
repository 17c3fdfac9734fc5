// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * shared: two processes share one data set. A child PUTs samples, the
 * parent GETs the same bytes; then the other way round. A second data set
 * with the same sample IDs stays separate. STATS count both sessions.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlc_test.h"

#define N 32

static uint32_t size_of(uint32_t s)
{
	return 100 + s * 997;	/* 100 .. ~31 KB, crossing pages */
}

/* PUTs samples [lo, hi) of @key through a new session. */
static int producer(const uint64_t key[2], uint32_t lo, uint32_t hi, int ready_w, int go_r)
{
	struct dlcache_cqe cqe;
	struct t_ring r;
	uint8_t *buf = malloc(64 << 10);
	long h, ret;
	int fd = t_open();

	h = t_attach(fd, key, N, 0600, 0, NULL);
	if (h < 0)
		FATAL("child ATTACH: %s", t_errname(h));
	ret = t_ring_init(&r, fd, 4, 0);
	if (ret < 0)
		FATAL("child ring: %s", t_errname(ret));
	for (uint32_t s = lo; s < hi; s++) {
		t_pattern(buf, size_of(s), key[0], s);
		ret = t_put(&r, h, s, buf, size_of(s), &cqe);
		CHECK_EQ(ret, size_of(s), "child PUT res");
		CHECK(cqe.flags & DLCACHE_CQE_F_CACHED, "child PUT of %u not cached", s);
	}
	t_signal(ready_w);
	/* Stay attached until the parent has read everything. */
	if (!t_await(go_r, 20))
		FAIL("child: parent never said go");
	/* Now read what the parent PUT. */
	for (uint32_t s = hi; s < N; s++) {
		memset(buf, 0, size_of(s));
		ret = t_get(&r, h, s, buf, 64 << 10, &cqe);
		CHECK_EQ(ret, size_of(s), "child GET of a parent sample");
		if (ret == size_of(s))
			t_pattern_ok(buf, size_of(s), key[0], s);
	}
	return t_done();
}

int main(void)
{
	struct dlcache_cqe cqe;
	struct dlcache_stats st;
	struct t_ring r;
	uint64_t key[2], other[2];
	uint8_t *buf = malloc(64 << 10);
	int ready[2], go[2], fd, status;
	long h, h2, ret;
	pid_t pid;

	t_time_limit(60);
	t_key("shared", key);
	t_key("shared-other", other);
	if (pipe(ready) || pipe(go))
		FATAL("pipe: %m");

	fd = t_open();
	ret = t_set_capacity(fd, 16 << 20, NULL);
	CHECK_ERR(ret, 0, "SET_CAPACITY 16 MiB");
	pid = fork();
	if (pid < 0)
		FATAL("fork: %m");
	if (pid == 0) {
		close(fd);
		exit(producer(key, 0, N / 2, ready[1], go[0]));
	}
	if (!t_await(ready[0], 20))
		FATAL("child did not PUT its samples");

	h = t_attach(fd, key, N, 0600, DLCACHE_ATTACH_F_NOCREATE, NULL);
	if (h < 0)
		FATAL("parent ATTACH of the child's data set: %s", t_errname(h));
	h2 = t_attach(fd, other, N, 0600, 0, NULL);
	if (h2 < 0)
		FATAL("parent ATTACH of another data set: %s", t_errname(h2));
	CHECK(h2 != h, "two data sets with one handle");
	ret = t_ring_init(&r, fd, 4, 0);
	if (ret < 0)
		FATAL("parent ring: %s", t_errname(ret));

	ret = t_stats(fd, h, &st);
	CHECK_ERR(ret, 0, "STATS");
	CHECK_EQ(st.nsessions, 2, "nsessions with parent and child open");
	CHECK_EQ(st.ds_attached, 2, "attachments of the shared data set");
	CHECK_EQ(st.ndatasets, 2, "ndatasets");
	CHECK_EQ(st.dataset.cached_samples, N / 2, "samples the child cached");

	for (uint32_t s = 0; s < N / 2; s++) {
		memset(buf, 0, 64 << 10);
		ret = t_get(&r, h, s, buf, 64 << 10, &cqe);
		CHECK_EQ(ret, size_of(s), "parent GET of a child sample");
		if (ret == size_of(s))
			t_pattern_ok(buf, size_of(s), key[0], s);
		/* Same IDs in the other data set: misses. */
		ret = t_get(&r, h2, s, buf, 64 << 10, &cqe);
		CHECK_ERR(ret, -ENOENT, "GET of the same ID in another data set");
		ret = t_abort(&r, h2, s, 0, &cqe);
		CHECK_ERR(ret, 0, "ABORT in the other data set");
	}
	for (uint32_t s = N / 2; s < N; s++) {
		t_pattern(buf, size_of(s), key[0], s);
		ret = t_put(&r, h, s, buf, size_of(s), &cqe);
		CHECK_EQ(ret, size_of(s), "parent PUT res");
	}
	t_signal(go[1]);
	status = t_wait(pid, 20);
	CHECK_EQ(status, 0, "child exit status");

	ret = t_stats(fd, h, &st);
	CHECK_ERR(ret, 0, "STATS after the child");
	CHECK_EQ(st.nsessions, 1, "nsessions after the child exited");
	CHECK_EQ(st.ds_attached, 1, "attachments after the child exited");
	CHECK_EQ(st.dataset.cached_samples, N, "cached samples");
	CHECK_EQ(st.dataset.hits, N, "hits of the shared data set (N/2 each way)");
	t_ring_unmap(&r);
	close(fd);
	return t_done();
}
