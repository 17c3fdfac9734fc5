// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * order_read: DLCACHE_IOC_GET_ORDER reads back the orders a data set's
 * consumers uploaded (DLCACHE_FEAT_GET_ORDER; dlcachectl whatif
 * --attached).
 *
 *   info       the feature is supported;
 *   exact      two jobs each upload two epochs of their own random order;
 *              each consumer reads back exactly what its job uploaded
 *              (kept here), with its epochs, cursor, end and the data
 *              set's key, by handle and by STATS's list index;
 *   slices     a short read, a read from the middle, from the end and
 *              past it (copied 0), len 0 (the fields only), a len far
 *              over the window (only what is held is written);
 *   errors     unknown flags, reserved words, len over max_order_len
 *              (-EINVAL), a bad handle (-EBADF), an index or a consumer
 *              past the end (-ENOENT), a bad ids pointer (-EFAULT);
 *   perms      another user lists and reads a 0604 data set, and never
 *              sees a 0640 one (not in its group) by any index.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlc_test.h"

#define N 64
#define OTHER 5311

static uint64_t key_open[2], key_closed[2];
/* What each job uploaded: epochs 0 and 1, back to back. */
static uint32_t up[2][2 * N];

static long get_order(int fd, uint32_t handle, uint32_t flags, uint32_t consumer,
		      uint64_t from, uint32_t *ids, uint32_t len,
		      struct dlcache_get_order *out)
{
	struct dlcache_get_order o;
	long ret;

	memset(&o, 0, sizeof(o));
	o.handle = handle;
	o.flags = flags;
	o.consumer = consumer;
	o.from = from;
	o.ids = (uintptr_t)ids;
	o.len = len;
	ret = t_ioctl(fd, DLCACHE_IOC_GET_ORDER, &o);
	if (out)
		*out = o;
	return ret;
}

static void shuffle(uint32_t *a, uint64_t *rnd)
{
	uint32_t i, j, t;

	for (i = 0; i < N; i++)
		a[i] = i;
	for (i = N - 1; i > 0; i--) {
		j = (uint32_t)(t_rand(rnd) % (i + 1));
		t = a[i];
		a[i] = a[j];
		a[j] = t;
	}
}

/* Which job (0, 1) consumer @c of the data set at @handle is; -1: neither. */
static int check_consumer(int fd, uint32_t handle, uint32_t flags, uint32_t c,
			  const uint64_t key[2], const char *how)
{
	struct dlcache_get_order o;
	uint32_t got[2 * N + 8];
	long ret;
	int j;

	memset(got, 0xff, sizeof(got));
	ret = get_order(fd, handle, flags, c, 0, got, 2 * N + 8, &o);
	CHECK_ERR(ret, 0, how);
	if (ret)
		return -1;
	CHECK_EQ(o.nconsumers, 2, "nconsumers");
	CHECK_EQ(o.copied, 2 * N, "copied: both epochs");
	CHECK(o.first == 0 && o.cursor == 0 && o.end == 2 * N,
	      "%s: first %llu, cursor %llu, end %llu", how,
	      (unsigned long long)o.first, (unsigned long long)o.cursor,
	      (unsigned long long)o.end);
	CHECK(o.nepochs == 2 && o.epochs[0].epoch == 0 && o.epochs[0].len == N &&
	      o.epochs[0].base == 0 && o.epochs[1].epoch == 1 &&
	      o.epochs[1].len == N && o.epochs[1].base == N,
	      "%s: epochs %u: (%u, %u, %llu), (%u, %u, %llu)", how, o.nepochs,
	      o.epochs[0].epoch, o.epochs[0].len,
	      (unsigned long long)o.epochs[0].base, o.epochs[1].epoch,
	      o.epochs[1].len, (unsigned long long)o.epochs[1].base);
	CHECK(o.ds_key[0] == key[0] && o.ds_key[1] == key[1], "%s: ds_key", how);
	CHECK_EQ(got[2 * N], 0xffffffffU, "nothing written past copied");
	for (j = 0; j < 2; j++)
		if (!memcmp(got, up[j], sizeof(up[j])))
			return j;
	FAIL("%s: consumer %u's order is neither job's", how, c);
	return -1;
}

static void test_exact_and_slices(int fd, uint32_t h0)
{
	struct dlcache_get_order o;
	struct dlcache_info info;
	uint32_t got[2 * N], *big;
	int j0, j1;
	long ret;

	j0 = check_consumer(fd, h0, 0, 0, key_open, "by handle, consumer 0");
	j1 = check_consumer(fd, h0, 0, 1, key_open, "by handle, consumer 1");
	CHECK(j0 >= 0 && j1 >= 0 && j0 != j1, "consumers 0 and 1 are jobs %d and %d",
	      j0, j1);
	if (j0 < 0)
		return;
	printf("ok - exact: each consumer reads back its job's two epochs\n");

	ret = get_order(fd, h0, 0, 0, 10, got, 5, &o);
	CHECK(!ret && o.copied == 5 && !memcmp(got, &up[j0][10], 5 * 4),
	      "5 from 10: %s, copied %u", t_errname(ret), o.copied);
	ret = get_order(fd, h0, 0, 0, 2 * N - 3, got, 2 * N, &o);
	CHECK(!ret && o.copied == 3 && !memcmp(got, &up[j0][2 * N - 3], 3 * 4),
	      "the last 3: %s, copied %u", t_errname(ret), o.copied);
	ret = get_order(fd, h0, 0, 0, 2 * N, got, 2 * N, &o);
	CHECK(!ret && o.copied == 0, "from the end: %s, copied %u",
	      t_errname(ret), o.copied);
	ret = get_order(fd, h0, 0, 0, ~0ULL, got, 2 * N, &o);
	CHECK(!ret && o.copied == 0, "from 2^64-1: %s, copied %u",
	      t_errname(ret), o.copied);
	ret = get_order(fd, h0, 0, 0, 0, NULL, 0, &o);
	CHECK(!ret && o.copied == 0 && o.end == 2 * N && o.nepochs == 2,
	      "len 0: %s, copied %u, end %llu", t_errname(ret), o.copied,
	      (unsigned long long)o.end);
	/* The largest len: the module allocates only the window's room. */
	if (t_get_info(fd, &info))
		FATAL("GET_INFO");
	big = calloc(info.max_order_len, sizeof(*big));
	if (!big)
		FATAL("calloc");
	ret = get_order(fd, h0, 0, 0, 0, big, info.max_order_len, &o);
	CHECK(!ret && o.copied == 2 * N && !memcmp(big, up[j0], sizeof(up[j0])),
	      "len max_order_len: %s, copied %u", t_errname(ret), o.copied);
	free(big);
	printf("ok - slices\n");
}

/* STATS's list index of the data set @key, as the caller sees the list. */
static long list_index(int fd, const uint64_t key[2])
{
	struct dlcache_get_order o;
	uint32_t i;
	long ret;

	for (i = 0; i < 64; i++) {
		ret = get_order(fd, i, DLCACHE_GET_ORDER_F_INDEX, 0, 0, NULL, 0, &o);
		if (ret == -ENOENT && !o.nconsumers) {
			/* Past the list, or a listed set with no consumer. */
			struct dlcache_stats st;

			memset(&st, 0, sizeof(st));
			st.handle = i;
			st.flags = DLCACHE_STATS_F_DATASET | DLCACHE_STATS_F_INDEX;
			if (t_ioctl(fd, DLCACHE_IOC_STATS, &st) == -ENOENT)
				return -ENOENT;
			continue;
		}
		if (ret)
			return ret;
		if (o.ds_key[0] == key[0] && o.ds_key[1] == key[1])
			return i;
	}
	return -ENOENT;
}

static void test_errors(int fd, uint32_t h0)
{
	struct dlcache_get_order o;
	struct dlcache_info info;
	uint32_t got[4];

	if (t_get_info(fd, &info))
		FATAL("GET_INFO");
	CHECK_ERR(get_order(fd, h0, 1U << 5, 0, 0, got, 4, NULL), -EINVAL,
		  "an unknown flag");
	memset(&o, 0, sizeof(o));
	o.handle = h0;
	o.reserved[1] = 1;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_GET_ORDER, &o), -EINVAL, "reserved[1] set");
	CHECK_ERR(get_order(fd, h0, 0, 0, 0, got, info.max_order_len + 1, NULL),
		  -EINVAL, "len over max_order_len");
	CHECK_ERR(get_order(fd, 9999, 0, 0, 0, got, 4, NULL), -EBADF, "a bad handle");
	CHECK_ERR(get_order(fd, 0, 0, 0, 0, got, 4, NULL), -EBADF, "handle 0");
	CHECK_ERR(get_order(fd, 64, DLCACHE_GET_ORDER_F_INDEX, 0, 0, got, 4, NULL),
		  -ENOENT, "an index past the list");
	CHECK_ERR(get_order(fd, h0, 0, 2, 0, got, 4, NULL), -ENOENT,
		  "consumer 2 of 2");
	CHECK_ERR(get_order(fd, h0, 0, ~0U, 0, got, 4, NULL), -ENOENT,
		  "consumer 2^32-1");
	CHECK_ERR(get_order(fd, h0, 0, 0, 0, NULL, 4, NULL), -EFAULT,
		  "ids NULL with len 4");
	CHECK_ERR(get_order(fd, h0, 0, 0, 0, (uint32_t *)8, 4, NULL), -EFAULT,
		  "ids at address 8");
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_GET_ORDER, NULL), -EFAULT,
		  "the argument NULL");
	printf("ok - errors\n");
}

/* As OTHER: the 0604 set is listed and readable, the 0640 one never. */
static int other(void)
{
	int fd = t_open();
	long i;

	i = list_index(fd, key_open);
	CHECK(i >= 0, "the 0604 data set is not listed: %s", t_errname(i));
	if (i >= 0) {
		int j0 = check_consumer(fd, (uint32_t)i, DLCACHE_GET_ORDER_F_INDEX,
					0, key_open, "another user, by index");

		CHECK(j0 >= 0, "another user reads a 0604 set's order");
	}
	i = list_index(fd, key_closed);
	CHECK_ERR(i, -ENOENT, "the 0640 data set by index");
	close(fd);
	return t_done();
}

int main(void)
{
	struct dlcache_info info;
	uint64_t dropped, rnd = 42;
	long h[4], idx;
	int fd[4], i, j;

	t_time_limit(120);
	if (getuid() != 0)
		t_skip("needs root (a second user)");
	fd[0] = t_open();
	t_drop(fd[0], NULL, &dropped);
	if (chown(DLCACHE_DEVICE, 0, T_DEVGRP))
		FATAL("chown %s: %m", DLCACHE_DEVICE);
	if (t_get_info(fd[0], &info))
		FATAL("GET_INFO");
	if (!(info.supported & DLCACHE_FEAT_GET_ORDER))
		FATAL("no DLCACHE_FEAT_GET_ORDER in supported");
	printf("ok - info\n");
	t_key("order-read-open", key_open);
	t_key("order-read-closed", key_closed);
	for (j = 0; j < 2; j++) {
		shuffle(&up[j][0], &rnd);
		shuffle(&up[j][N], &rnd);
	}
	/* Jobs 7 and 8 on each set: one session each, as two ranks would. */
	for (i = 0; i < 4; i++) {
		fd[i] = i ? t_open() : fd[0];
		h[i] = t_attach_job(fd[i], i < 2 ? key_open : key_closed, N,
				    i < 2 ? 0604 : 0640, 7 + i % 2, NULL);
		if (h[i] < 0)
			FATAL("ATTACH %d: %s", i, t_errname(h[i]));
		for (j = 0; j < 2; j++)
			CHECK_ERR(t_set_order(fd[i], (uint32_t)h[i], (uint32_t)j,
					      &up[i % 2][j * N], N), 0, "SET_ORDER");
	}
	test_exact_and_slices(fd[0], (uint32_t)h[0]);
	idx = list_index(fd[0], key_closed);
	CHECK(idx >= 0, "root lists the 0640 set: %s", t_errname(idx));
	if (idx >= 0)
		check_consumer(fd[0], (uint32_t)idx, DLCACHE_GET_ORDER_F_INDEX, 1,
			       key_closed, "root, by index");
	test_errors(fd[0], (uint32_t)h[0]);
	CHECK_EQ(t_wait(t_start_user(OTHER, other), 30), 0, "another user");
	printf("ok - perms\n");
	for (i = 3; i >= 0; i--) {
		t_detach(fd[i], (uint32_t)h[i]);
		if (i)
			close(fd[i]);
	}
	t_drop(fd[0], NULL, &dropped);
	close(fd[0]);
	return t_done();
}
