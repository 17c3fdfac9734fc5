// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * reader_cursor: only writers move the policy. A read-only attacher's GETs
 * (without DLCACHE_SQE_F_AT, and with F_AT at the last index of an epoch)
 * must not move ds_cursor or ds_end, nor drop the epochs the owner
 * uploaded: afterwards the owner's own F_AT GET at an early position of
 * the first epoch still moves the cursor there.
 *
 * Owner uid 5201 creates a 0644 data set of 16 samples, uploads epochs 1
 * (0..15) and 2 (15..0), and PUTs every sample. Reader uid 5202 names the
 * owner (DLCACHE_ATTACH_F_OWNER) and gets read-only access.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlc_test.h"

#define N 16
#define SZ 3000
#define OWNER 5201
#define READER 5202
#define DEVGRP T_DEVGRP

static uint64_t key[2];
static int ready[2], go[2], read_done[2];

static long get_at(struct t_ring *r, uint32_t h, uint32_t sample, bool at, uint32_t epoch,
		   uint32_t index, void *buf)
{
	struct dlcache_cqe cqe;

	return at ? t_get_at(r, h, sample, epoch, index, buf, SZ, &cqe) :
		    t_get(r, h, sample, buf, SZ, &cqe);
}

static void cursor_of(int fd, uint32_t h, uint64_t *cursor, uint64_t *end, const char *who)
{
	struct dlcache_stats st;
	long ret = t_stats(fd, h, &st);

	if (ret < 0)
		FATAL("%s: STATS: %s", who, t_errname(ret));
	*cursor = st.ds_cursor;
	*end = st.ds_end;
	t_info("%s: cursor %llu end %llu", who, (unsigned long long)*cursor,
	       (unsigned long long)*end);
}

static int owner(void)
{
	uint32_t e1[N], e2[N];
	struct dlcache_attach a;
	struct dlcache_cqe cqe;
	struct t_ring r;
	uint64_t cur, end;
	uint8_t buf[SZ];
	int fd = t_open();
	long h;

	if (t_ring_init(&r, fd, 4, 0) < 0)
		FATAL("owner ring");
	h = t_attach(fd, key, N, 0644, 0, &a);
	if (h < 0)
		FATAL("owner ATTACH: %s", t_errname(h));
	for (uint32_t i = 0; i < N; i++) {
		e1[i] = i;
		e2[i] = N - 1 - i;
	}
	CHECK_ERR(t_set_order(fd, (uint32_t)h, 1, e1, N), 0, "SET_ORDER epoch 1");
	CHECK_ERR(t_set_order(fd, (uint32_t)h, 2, e2, N), 0, "SET_ORDER epoch 2");
	for (uint32_t s = 0; s < N; s++) {
		t_pattern(buf, SZ, key[0], s);
		CHECK_EQ(t_put(&r, (uint32_t)h, s, buf, SZ, &cqe), SZ, "owner PUT");
	}
	cursor_of(fd, (uint32_t)h, &cur, &end, "owner before");
	CHECK(cur == 0 && end == 2 * N, "before the reader: cursor %llu end %llu, want 0 and %u",
	      (unsigned long long)cur, (unsigned long long)end, 2 * N);
	t_signal(ready[1]);
	if (!t_await(read_done[0], 60))
		FAIL("owner: the reader never finished");

	cursor_of(fd, (uint32_t)h, &cur, &end, "owner after the reader");
	CHECK_EQ(cur, 0, "ds_cursor after a reader's GETs");
	CHECK_EQ(end, 2 * N, "ds_end after a reader's GETs");
	/* Epoch 1 is still known: the owner's use at (1, 3) moves the cursor to 4. */
	CHECK_EQ(get_at(&r, (uint32_t)h, 3, true, 1, 3, buf), SZ, "owner GET F_AT (1, 3)");
	cursor_of(fd, (uint32_t)h, &cur, &end, "owner after its GET");
	CHECK_EQ(cur, 4, "ds_cursor after the owner's GET at (1, 3): epoch 1 was dropped?");
	if (!t_await(go[0], 60))
		FAIL("owner: never told to finish");
	t_ring_unmap(&r);
	close(fd);
	return t_done();
}

static int reader(void)
{
	struct dlcache_attach a;
	struct t_ring r;
	uint64_t cur, end;
	uint8_t buf[SZ];
	int fd = t_open();
	long h;

	if (t_ring_init(&r, fd, 4, 0) < 0)
		FATAL("reader ring");
	h = t_attach_owner(fd, key, N, OWNER, 0, &a);
	if (h == -EINVAL) {
		/* ABI 1 has no F_OWNER: the key alone finds the owner's. */
		FAIL("ATTACH F_OWNER: -EINVAL (a module without DLCACHE_FEAT_OWNER?)");
		h = t_attach(fd, key, N, 0, DLCACHE_ATTACH_F_NOCREATE, &a);
	}
	if (h < 0)
		FATAL("reader ATTACH naming the owner: %s", t_errname(h));
	CHECK_EQ(a.result_flags, DLCACHE_ATTACH_MAY_READ, "reader result_flags");
	/* Its next use is position 0: a writer's GET would move the cursor to 1. */
	CHECK_EQ(get_at(&r, (uint32_t)h, 0, false, 0, 0, buf), SZ, "reader GET of sample 0");
	/* The last index of epoch 1: a writer's would consume the whole epoch. */
	CHECK_EQ(get_at(&r, (uint32_t)h, N - 1, true, 1, N - 1, buf), SZ,
		 "reader GET F_AT (1, last)");
	/* And of epoch 2: a writer's would consume everything known. */
	CHECK_EQ(get_at(&r, (uint32_t)h, 0, true, 2, N - 1, buf), SZ,
		 "reader GET F_AT (2, last)");
	cursor_of(fd, (uint32_t)h, &cur, &end, "reader");
	CHECK_EQ(cur, 0, "ds_cursor after the reader's GETs");
	CHECK_EQ(end, 2 * N, "ds_end after the reader's GETs");
	t_signal(read_done[1]);
	t_ring_unmap(&r);
	close(fd);
	return t_done();
}

int main(void)
{
	pid_t o;

	t_time_limit(90);
	if (getuid() != 0)
		t_skip("needs root to drop privileges");
	t_key("reader-cursor", key);
	if (chown(DLCACHE_DEVICE, 0, DEVGRP))
		FATAL("chown %s: %m", DLCACHE_DEVICE);
	if (pipe(ready) || pipe(go) || pipe(read_done))
		FATAL("pipe: %m");
	o = t_start_user(OWNER, owner);
	if (!t_await(ready[0], 30))
		FAIL("owner did not set up its data set");
	CHECK_EQ(t_wait(t_start_user(READER, reader), 30), 0, "reader");
	/* In case the reader died before saying so: the owner checks now. */
	t_signal(read_done[1]);
	t_signal(go[1]);
	CHECK_EQ(t_wait(o, 30), 0, "owner");
	return t_done();
}
