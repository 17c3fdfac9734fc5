// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * squat: a key alone never reaches another user's bytes (ABI 2, data sets
 * named by (key, owner)).
 *
 * User B (uid 5001) knows the key that user A (uid 5002) will use. B
 * creates that key first, mode 0666, and PUTs garbage for every sample.
 * Then:
 * - A's ATTACH of the key creates A's own data set (CREATED, owner A) and
 *   every GET misses: A never sees B's bytes. A fills it and reads its own.
 * - A naming B (DLCACHE_ATTACH_F_OWNER) reaches B's data set, because B's
 *   mode allows it: the bytes are B's, and A chose them.
 * - B's 0600 data set: A naming B gets -ENOENT (as if missing); A's key
 *   alone makes A's.
 * - F_OWNER never creates another's data set: -ENOENT.
 * - B naming A reaches A's 0600 data set only as far as its mode: -ENOENT.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlc_test.h"

#define N 8
#define SZ 5000
#define UID_B 5001
#define UID_A 5002
#define DEVGRP T_DEVGRP
#define GARBAGE 0x6a756e6bULL	/* the pattern tag of B's bytes */

static uint64_t k_shared[2], k_private[2], k_none[2];
static int ready[2], b_go[2], a_done[2], a_go[2];

static void put_all(struct t_ring *r, long h, uint64_t tag, const char *who)
{
	struct dlcache_cqe cqe;
	uint8_t buf[SZ];

	for (uint32_t s = 0; s < N; s++) {
		t_pattern(buf, SZ, tag, s);
		CHECK_EQ(t_put(r, (uint32_t)h, s, buf, SZ, &cqe), SZ, who);
	}
}

/* B: squats A's key with a 0666 data set full of garbage, and a 0600 one. */
static int user_b(void)
{
	struct dlcache_attach a;
	struct t_ring r;
	int fd = t_open();
	long h;

	if (t_ring_init(&r, fd, 4, 0) < 0)
		FATAL("B ring");
	h = t_attach(fd, k_shared, N, 0666, 0, &a);
	if (h < 0)
		FATAL("B ATTACH of A's key: %s", t_errname(h));
	CHECK(a.result_flags & DLCACHE_ATTACH_CREATED, "B did not create the key first");
	put_all(&r, h, GARBAGE, "B PUT of garbage");
	h = t_attach(fd, k_private, N, 0600, 0, &a);
	if (h < 0)
		FATAL("B ATTACH of its private key: %s", t_errname(h));
	put_all(&r, h, GARBAGE, "B PUT into its 0600 data set");
	t_signal(ready[1]);
	/* Stay attached while A looks. */
	if (!t_await(b_go[0], 60))
		FAIL("B: never told to go on");

	/* A's data set is 0600: naming A does not open it to B. */
	CHECK_ERR(t_attach_owner(fd, k_shared, N, UID_A, 0, NULL), -ENOENT,
		  "B naming A for A's 0600 data set");
	t_ring_unmap(&r);
	close(fd);
	return t_done();
}

static int user_a(void)
{
	struct dlcache_attach a;
	struct dlcache_cqe cqe;
	struct t_ring r;
	uint8_t buf[SZ];
	int fd = t_open();
	long h, ret;

	if (t_ring_init(&r, fd, 4, 0) < 0)
		FATAL("A ring");

	/* The key alone: A's own data set, whatever B made. */
	h = t_attach(fd, k_shared, N, 0, 0, &a);
	if (h < 0)
		FATAL("A ATTACH of its key: %s", t_errname(h));
	CHECK(a.result_flags & DLCACHE_ATTACH_CREATED,
	      "A's ATTACH found B's data set instead of creating A's own (result_flags %#x)",
	      a.result_flags);
	CHECK_EQ(a.owner_uid, UID_A, "owner_uid of A's data set");
	CHECK_EQ(a.mode, 0600, "mode of A's data set");
	for (uint32_t s = 0; s < N; s++) {
		memset(buf, 0, SZ);
		ret = t_get(&r, (uint32_t)h, s, buf, SZ, &cqe);
		if (ret >= 0 || ret == -EMSGSIZE) {
			FAIL("A's GET of sample %u: %s: A sees bytes it never PUT (B's?)", s,
			     t_errname(ret));
			continue;
		}
		CHECK_ERR(ret, -ENOENT, "A's GET of its empty data set");
		CHECK(cqe.flags & DLCACHE_CQE_F_FILL, "A is not the filler of its own sample");
	}
	put_all(&r, h, k_shared[0], "A PUT of its own bytes");
	for (uint32_t s = 0; s < N; s++) {
		ret = t_get(&r, (uint32_t)h, s, buf, SZ, &cqe);
		CHECK_EQ(ret, SZ, "A GET of its own sample");
		if (ret == SZ)
			t_pattern_ok(buf, SZ, k_shared[0], s);
	}

	/* Naming B: B's 0666 data set, B's bytes, by A's choice. */
	h = t_attach_owner(fd, k_shared, N, UID_B, 0, &a);
	if (h < 0) {
		FAIL("A naming B for B's 0666 data set: %s", t_errname(h));
	} else {
		CHECK(!(a.result_flags & DLCACHE_ATTACH_CREATED), "naming B created a data set");
		CHECK_EQ(a.owner_uid, UID_B, "owner_uid of B's data set");
		CHECK_EQ(a.result_flags, DLCACHE_ATTACH_MAY_READ | DLCACHE_ATTACH_MAY_WRITE,
			 "A's rights on B's 0666 data set");
		ret = t_get(&r, (uint32_t)h, 0, buf, SZ, &cqe);
		CHECK_EQ(ret, SZ, "A's GET from B's data set");
		if (ret == SZ)
			t_pattern_ok(buf, SZ, GARBAGE, 0);
	}

	/* B's 0600 data set: naming B is not enough. */
	CHECK_ERR(t_attach_owner(fd, k_private, N, UID_B, 0, NULL), -ENOENT,
		  "A naming B for B's 0600 data set");
	h = t_attach(fd, k_private, N, 0600, 0, &a);
	CHECK(h >= 1 && (a.result_flags & DLCACHE_ATTACH_CREATED) && a.owner_uid == UID_A,
	      "A's ATTACH of B's private key: %s, flags %#x, owner %u (want A's own, created)",
	      t_errname(h), a.result_flags, a.owner_uid);

	/* F_OWNER never creates another user's data set. */
	CHECK_ERR(t_attach_owner(fd, k_none, N, UID_B, 0, NULL), -ENOENT,
		  "A naming B for a key B does not have");
	CHECK_ERR(t_attach(fd, k_none, N, 0, DLCACHE_ATTACH_F_NOCREATE, NULL), -ENOENT,
		  "the F_OWNER ATTACH made a data set");

	t_signal(a_done[1]);
	/* Keep A's data set alive while B tries it. */
	if (!t_await(a_go[0], 60))
		FAIL("A: never told to finish");
	t_ring_unmap(&r);
	close(fd);
	return t_done();
}

int main(void)
{
	struct dlcache_info info;
	pid_t b, a;
	int fd;

	t_time_limit(90);
	if (getuid() != 0)
		t_skip("needs root to drop privileges");
	fd = t_open();
	if (t_get_info(fd, &info) < 0)
		FATAL("GET_INFO");
	CHECK(info.supported & DLCACHE_FEAT_OWNER, "no DLCACHE_FEAT_OWNER (supported %#llx)",
	      (unsigned long long)info.supported);
	close(fd);
	t_key("squat-shared", k_shared);
	t_key("squat-private", k_private);
	t_key("squat-none", k_none);
	/* admin.md's udev rule: the users are in the device's group. */
	if (chown(DLCACHE_DEVICE, 0, DEVGRP))
		FATAL("chown %s: %m", DLCACHE_DEVICE);
	if (pipe(ready) || pipe(b_go) || pipe(a_done) || pipe(a_go))
		FATAL("pipe: %m");

	b = t_start_user(UID_B, user_b);
	if (!t_await(ready[0], 30))
		FAIL("B did not squat the key");
	a = t_start_user(UID_A, user_a);
	if (!t_await(a_done[0], 30))
		FAIL("A did not finish its checks");
	/* B tries A's data set while A holds it, then A finishes. */
	t_signal(b_go[1]);
	CHECK_EQ(t_wait(b, 30), 0, "user B");
	t_signal(a_go[1]);
	CHECK_EQ(t_wait(a, 30), 0, "user A");
	return t_done();
}
