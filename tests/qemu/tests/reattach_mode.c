// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * reattach_mode: a re-ATTACH of an idle data set holds to the mode asked
 * (issue 29, item 4).
 *
 * User A (uid 5302) creates key K with mode 0666, PUTs its bytes for the
 * first half of the samples and closes: the data set stays idle with
 * them (idle_keep_s). Then:
 * - A's ATTACH of K asking 0600 (and asking 0, which means 0600) must not
 *   silently give the 0666 data set: -EEXIST, or a data set of mode 0600.
 *   Another window or lookahead than K's: -EEXIST as well; K's own
 *   definition still attaches (DLCACHE_FEAT_ATTACH_MATCH).
 * - DLCACHE_ATTACH_F_REPLACE (the owner's way to change the mode): -EBUSY
 *   while K is attached, -EPERM for another user (also for a missing
 *   key), and on the idle K a new, empty 0600 data set (CREATED).
 * - User B (uid 5301) then names A as owner: no attachment (-ENOENT, the
 *   data set is hidden from B); whatever B got, its PUTs of every sample
 *   do not land.
 * - A's GETs through the handle it believes 0600 never return B's bytes.
 * On a module that ignores the mode asked, A gets 0666 back and B's
 * garbage reaches A's GETs: the test fails there.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlc_test.h"

#define N 8
#define SZ 4000
#define UID_B 5301
#define UID_A 5302
#define GARBAGE 0x62616462ULL	/* the pattern tag of B's bytes */

static uint64_t key[2], k_none[2];
static int a_ready[2], b_done[2];
static bool match;		/* DLCACHE_FEAT_ATTACH_MATCH */

static long attach(int fd, uint32_t mode, uint32_t flags, uint32_t window,
		   uint32_t lookahead, uint32_t owner, struct dlcache_attach *out)
{
	struct dlcache_attach a;
	long ret;

	memset(&a, 0, sizeof(a));
	a.key[0] = key[0];
	a.key[1] = key[1];
	a.nsamples = N;
	a.mode = mode;
	a.flags = flags;
	a.window = window;
	a.lookahead = lookahead;
	a.owner_uid = owner;
	ret = t_ioctl(fd, DLCACHE_IOC_ATTACH, &a);
	if (out)
		*out = a;
	return ret < 0 ? ret : (long)a.handle;
}

/* An ATTACH that must not attach the 0666 set silently; returns its handle. */
static long ask_0600(int fd, uint32_t mode, const char *what)
{
	struct dlcache_attach a;
	long h = attach(fd, mode, 0, 0, 0, 0, &a);

	if (h >= 0) {
		CHECK(a.mode == 0600, "%s: attached a data set of mode %#o, not 0600",
		      what, a.mode);
		return h;
	}
	CHECK_ERR(h, -EEXIST, what);
	return h;
}

static int user_a(void)
{
	struct dlcache_attach a, kept;
	struct dlcache_cqe cqe;
	struct t_ring r;
	uint8_t buf[SZ];
	long h, hold, ret, mine = -1;
	int fd = t_open(), fd2;

	if (t_ring_init(&r, fd, 4, 0) < 0)
		FATAL("A ring");
	/* 1. K, 0666, half its samples cached; then idle. */
	{
		int f = t_open();
		struct t_ring r0;

		if (t_ring_init(&r0, f, 4, 0) < 0)
			FATAL("A ring 0");
		h = attach(f, 0666, 0, 0, 0, 0, &kept);
		if (h < 0)
			FATAL("A creating K 0666: %s", t_errname(h));
		CHECK(kept.result_flags & DLCACHE_ATTACH_CREATED, "K existed before the test");
		for (uint32_t s = 0; s < N / 2; s++) {
			t_pattern(buf, SZ, key[0], s);
			CHECK_EQ(t_put(&r0, (uint32_t)h, s, buf, SZ, &cqe), SZ, "A PUT");
		}
		t_ring_unmap(&r0);
		close(f);
	}

	/* 2. Asking 0600, or 0 (0600), of the idle 0666 K. */
	h = ask_0600(fd, 0600, "A's re-ATTACH of idle 0666 K asking 0600");
	if (h >= 0)
		mine = h;
	h = ask_0600(fd, 0, "A's re-ATTACH of idle 0666 K asking mode 0 (0600)");
	if (h >= 0 && mine < 0)
		mine = h;
	/* Another window or lookahead than K's; K's own still attaches. */
	CHECK_ERR(attach(fd, 0666, 0, kept.window * 2, 0, 0, NULL), -EEXIST,
		  "re-ATTACH asking twice K's window");
	CHECK_ERR(attach(fd, 0666, 0, 0, kept.lookahead / 2, 0, NULL), -EEXIST,
		  "re-ATTACH asking half K's lookahead");
	fd2 = t_open();
	hold = attach(fd2, 0666, 0, kept.window, kept.lookahead, 0, &a);
	CHECK(hold >= 1 && a.mode == 0666 && !(a.result_flags & DLCACHE_ATTACH_CREATED),
	      "re-ATTACH asking K's own mode, window and lookahead: %s, mode %#o, flags %#x",
	      t_errname(hold), a.mode, a.result_flags);

	/* 3. F_REPLACE: refused while attached, then a new 0600 K. */
	if (match) {
		CHECK_ERR(attach(fd, 0600, DLCACHE_ATTACH_F_REPLACE, 0, 0, 0, NULL), -EBUSY,
			  "F_REPLACE of K while attached");
		CHECK_ERR(attach(fd, 0600, DLCACHE_ATTACH_F_REPLACE | DLCACHE_ATTACH_F_NOCREATE,
				 0, 0, 0, NULL), -EINVAL, "F_REPLACE with F_NOCREATE");
		close(fd2);
		h = attach(fd, 0600, DLCACHE_ATTACH_F_REPLACE, 0, 0, 0, &a);
		CHECK(h >= 1 && a.mode == 0600 && (a.result_flags & DLCACHE_ATTACH_CREATED),
		      "F_REPLACE of idle 0666 K asking 0600: %s, mode %#o, flags %#x",
		      t_errname(h), a.mode, a.result_flags);
		if (h >= 1) {
			mine = h;
			for (uint32_t s = 0; s < N; s++) {
				ret = t_get(&r, (uint32_t)h, s, buf, SZ, &cqe);
				CHECK_ERR(ret, -ENOENT, "GET of the replaced K (empty)");
				if (ret == -ENOENT && (cqe.flags & DLCACHE_CQE_F_FILL) &&
				    s < N / 2) {
					t_pattern(buf, SZ, key[0], s);
					CHECK_EQ(t_put(&r, (uint32_t)h, s, buf, SZ, &cqe), SZ,
						 "A PUT into the new K");
				} else if (ret == -ENOENT && (cqe.flags & DLCACHE_CQE_F_FILL)) {
					t_abort(&r, (uint32_t)h, s, 0, &cqe);
				}
			}
		}
	} else {
		t_info("no DLCACHE_FEAT_ATTACH_MATCH: F_REPLACE not tried");
		close(fd2);
	}
	if (mine < 0)
		t_info("A holds no 0600 K (refused, as it should): B probes the idle one");
	t_signal(a_ready[1]);
	if (!t_await(b_done[0], 60))
		FAIL("A: B never finished");

	/* 4. Whatever B did: A's GETs never return B's bytes. */
	if (mine >= 0) {
		for (uint32_t s = 0; s < N; s++) {
			memset(buf, 0, SZ);
			ret = t_get(&r, (uint32_t)mine, s, buf, SZ, &cqe);
			if (ret == SZ) {
				uint8_t want[SZ];

				t_pattern(want, SZ, GARBAGE, s);
				CHECK(memcmp(buf, want, SZ),
				      "A's GET of sample %u returned B's bytes", s);
				if (memcmp(buf, want, SZ))
					t_pattern_ok(buf, SZ, key[0], s);
			} else if (ret == -ENOENT && (cqe.flags & DLCACHE_CQE_F_FILL)) {
				t_abort(&r, (uint32_t)mine, s, 0, &cqe);
			}
		}
	}
	t_ring_unmap(&r);
	close(fd);
	return t_done();
}

static int user_b(void)
{
	struct dlcache_attach a;
	struct dlcache_cqe cqe;
	struct t_ring r;
	uint8_t buf[SZ];
	int fd = t_open();
	long h;

	if (t_ring_init(&r, fd, 4, 0) < 0)
		FATAL("B ring");
	if (match) {
		/* F_REPLACE is the owner's, whether the key exists or not. */
		CHECK_ERR(attach(fd, 0600, DLCACHE_ATTACH_F_OWNER | DLCACHE_ATTACH_F_REPLACE,
				 0, 0, UID_A, NULL), -EPERM, "B's F_REPLACE of A's K");
		memcpy(key, k_none, sizeof(key));
		CHECK_ERR(attach(fd, 0600, DLCACHE_ATTACH_F_OWNER | DLCACHE_ATTACH_F_REPLACE,
				 0, 0, UID_A, NULL), -EPERM, "B's F_REPLACE of a key A lacks");
		t_key("reattach-mode", key);
	}
	for (int nocreate = 0; nocreate < 2; nocreate++) {
		h = attach(fd, 0, DLCACHE_ATTACH_F_OWNER |
			   (nocreate ? DLCACHE_ATTACH_F_NOCREATE : 0), 0, 0, UID_A, &a);
		if (h < 0) {
			CHECK_ERR(h, -ENOENT, "B naming A for K");
			continue;
		}
		FAIL("B attached A's K (mode %#o, flags %#x) after A asked for 0600",
		     a.mode, a.result_flags);
		for (uint32_t s = 0; s < N; s++) {
			long ret;

			t_pattern(buf, SZ, GARBAGE, s);
			ret = t_put(&r, (uint32_t)h, s, buf, SZ, &cqe);
			CHECK(ret < 0, "B's PUT of sample %u into A's K: %s", s, t_errname(ret));
		}
	}
	t_ring_unmap(&r);
	close(fd);
	return t_done();
}

int main(void)
{
	unsigned long long keep = 0;
	struct dlcache_info info;
	pid_t a, b;
	int fd;

	t_time_limit(90);
	if (getuid() != 0)
		t_skip("needs root to drop privileges");
	fd = t_open();
	if (t_get_info(fd, &info) < 0)
		FATAL("GET_INFO");
	close(fd);
	if (!(info.supported & DLCACHE_FEAT_IDLE))
		t_skip("no DLCACHE_FEAT_IDLE: a detached data set is freed");
	match = info.supported & DLCACHE_FEAT_ATTACH_MATCH;
	CHECK_ERR(t_param_get("idle_keep_s", &keep), 0, "idle_keep_s");
	if (!keep)
		CHECK_ERR(t_param_set("idle_keep_s", 600), 0, "idle_keep_s=600");
	t_key("reattach-mode", key);
	t_key("reattach-mode-none", k_none);
	if (chown(DLCACHE_DEVICE, 0, T_DEVGRP))
		FATAL("chown %s: %m", DLCACHE_DEVICE);
	if (pipe(a_ready) || pipe(b_done))
		FATAL("pipe: %m");

	a = t_start_user(UID_A, user_a);
	if (!t_await(a_ready[0], 60))
		FAIL("A never got ready");
	b = t_start_user(UID_B, user_b);
	CHECK_EQ(t_wait(b, 60), 0, "user B");
	t_signal(b_done[1]);
	CHECK_EQ(t_wait(a, 60), 0, "user A");
	if (!keep)
		t_param_set("idle_keep_s", 0);
	return t_done();
}
