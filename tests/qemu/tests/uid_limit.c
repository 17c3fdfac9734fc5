// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * uid_limit: per-uid limits on data set creation (module parameters
 * uid_max_datasets and uid_max_policy_mb). One uid creating data sets
 * hits its limit with -EDQUOT, below the global limit (-ENOSPC at
 * max_datasets), so another uid can still create; a slot given back can
 * be used again: the detached data set, idle, gives way to its owner's
 * next creation. With uid_max_policy_mb=1 a data set whose policy arrays
 * need more than 1 MiB is -EDQUOT for its creator, and a creation that
 * fails frees none of its idle sets.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlc_test.h"

#define N 8
#define UID_A 5301
#define UID_B 5302
#define DEVGRP T_DEVGRP

static unsigned long long lim = 16;
static int ready[2], go[2];

static void key_of(const char *who, unsigned i, uint64_t k[2])
{
	char tag[64];

	snprintf(tag, sizeof(tag), "uid-limit-%s-%u", who, i);
	t_key(tag, k);
}

/* A: creates data sets up to its limit, and one more. */
static int user_a(void)
{
	uint64_t k[2];
	long h, last = 0;
	int fd = t_open();
	unsigned i;

	for (i = 0; i < lim; i++) {
		key_of("a", i, k);
		h = t_attach(fd, k, N, 0600, 0, NULL);
		if (h < 0) {
			FAIL("A's data set %u of %llu: %s", i + 1, lim, t_errname(h));
			break;
		}
		last = h;
	}
	key_of("a", i, k);
	CHECK_ERR(t_attach(fd, k, N, 0600, 0, NULL), -EDQUOT,
		  "A's data set past uid_max_datasets");
	/* Attaching one it has is no creation: still fine. */
	key_of("a", 0, k);
	h = t_attach(fd, k, N, 0600, 0, NULL);
	CHECK(h >= 1, "A attaching its own existing data set at its limit: %s", t_errname(h));
	if (h >= 1)
		t_detach(fd, (uint32_t)h);
	/* Giving one back frees its slot. */
	if (last > 0) {
		CHECK_ERR(t_detach(fd, (uint32_t)last), 0, "DETACH");
		key_of("a", 1000, k);
		h = t_attach(fd, k, N, 0600, 0, NULL);
		CHECK(h >= 1, "A creating after giving one back: %s", t_errname(h));
		key_of("a", 1001, k);
		CHECK_ERR(t_attach(fd, k, N, 0600, 0, NULL), -EDQUOT, "A past its limit again");
	}
	t_signal(ready[1]);
	if (!t_await(go[0], 60))
		FAIL("A: never told to finish");
	close(fd);
	return t_done();
}

/* B: another uid still creates while A is at its limit. */
static int user_b(void)
{
	uint64_t k[2];
	int fd = t_open();
	long h;

	key_of("b", 0, k);
	h = t_attach(fd, k, N, 0600, 0, NULL);
	CHECK(h >= 1, "B creating while A is at its limit: %s", t_errname(h));
	close(fd);
	return t_done();
}

/* B again, with uid_max_policy_mb=1: a ~3 MiB policy is over its quota. */
static int user_b_big(void)
{
	uint64_t k[2];
	int fd = t_open();
	long h;

	key_of("b", 1, k);
	h = t_attach(fd, k, N, 0600, 0, NULL);
	CHECK(h >= 1, "B creating a small data set under a 1 MiB policy quota: %s",
	      t_errname(h));
	key_of("b", 2, k);
	CHECK_ERR(t_attach(fd, k, 65536, 0600, 0, NULL), -EDQUOT,
		  "B creating a data set of 65536 samples under a 1 MiB policy quota");
	close(fd);
	return t_done();
}

int main(void)
{
	struct dlcache_info info;
	struct dlcache_stats st;
	unsigned long long v;
	long ret;
	pid_t a;
	int fd;

	t_time_limit(90);
	if (getuid() != 0)
		t_skip("needs root to drop privileges");
	fd = t_open();
	if (t_get_info(fd, &info) < 0)
		FATAL("GET_INFO");
	ret = t_param_get("uid_max_datasets", &v);
	if (ret < 0)
		FAIL("module parameter uid_max_datasets: %s", t_errname(ret));
	else
		lim = v;
	CHECK(lim >= 1 && lim < info.max_datasets,
	      "uid_max_datasets %llu is not below max_datasets %u", lim, info.max_datasets);
	ret = t_param_get("uid_max_policy_mb", &v);
	if (ret < 0)
		FAIL("module parameter uid_max_policy_mb: %s", t_errname(ret));
	if (chown(DLCACHE_DEVICE, 0, DEVGRP))
		FATAL("chown %s: %m", DLCACHE_DEVICE);
	if (pipe(ready) || pipe(go))
		FATAL("pipe: %m");

	a = t_start_user(UID_A, user_a);
	if (!t_await(ready[0], 30))
		FAIL("A did not reach its limit");
	CHECK_EQ(t_wait(t_start_user(UID_B, user_b), 30), 0, "user B");
	/* B's detached data set stays cached, idle (DLCACHE_FEAT_IDLE). */
	t_stats(fd, 0, &st);
	t_info("data sets now: %u", st.ndatasets);
	CHECK_EQ(st.ndatasets, lim + 1, "data sets while A holds its limit (B's idle)");

	if (t_param_set("uid_max_policy_mb", 1) < 0) {
		FAIL("cannot set uid_max_policy_mb");
	} else {
		CHECK_EQ(t_wait(t_start_user(UID_B, user_b_big), 30), 0, "user B, 1 MiB quota");
		CHECK_ERR(t_param_set("uid_max_policy_mb", 0), 0, "uid_max_policy_mb back to 0");
	}
	t_signal(go[1]);
	CHECK_EQ(t_wait(a, 30), 0, "user A");
	close(fd);
	return t_done();
}
