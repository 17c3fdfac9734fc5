// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * two_threads: two threads on one session, no lost wake-up.
 *
 * Session W has a GET parked on a fill of session F. Thread A of W sleeps
 * in ENTER GETEVENTS (min_complete 1, a 5 s time limit); thread B of W
 * calls ENTER (nothing to submit, no wait) in a loop. F PUTs a 4 MiB
 * sample: the fill's end wakes A, but B's ENTER may take the ready wait
 * first and post its CQE after copying the 4 MiB, by which time A has
 * looked and gone back to sleep (about one round in five under TCG with
 * 2 CPUs). The CQE must wake A: A's ENTER must return within 1 s of the
 * PUT, not at its 5 s time limit. 24 rounds, each with its own sample,
 * so that a module without that wake-up fails all but surely.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dlc_test.h"

#define N 32
#define ROUNDS 24
#define SZ (4U << 20)
#define A_TIMEOUT_NS 5000000000ULL
#define MAX_LATENCY_MS 1000

static uint64_t key[2];
static struct t_ring wr;	/* session W */
static long wh;
static volatile int stop_b;
static volatile int a_asleep;

struct a_result {
	long ret;
	uint64_t done_ns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Thread A: sleeps in ENTER GETEVENTS until the parked GET completes. */
static void *thread_a(void *arg)
{
	struct a_result *res = arg;

	a_asleep = 1;
	res->ret = t_enter(&wr, 0, 1, DLCACHE_ENTER_F_GETEVENTS | DLCACHE_ENTER_F_TIMEOUT,
			   A_TIMEOUT_NS);
	res->done_ns = now_ns();
	return NULL;
}

/* Thread B: ENTERs without waiting, which runs (posts) ready waits. */
static void *thread_b(void *arg)
{
	long ret;

	while (!stop_b) {
		ret = t_enter(&wr, 0, 0, 0, 0);
		if (ret < 0) {
			FAIL("thread B: ENTER %s", t_errname(ret));
			break;
		}
	}
	return NULL;
}

int main(void)
{
	uint8_t *put_buf = malloc(SZ), *get_buf = malloc(SZ);
	struct dlcache_cqe cqe;
	struct t_ring fr;
	int wfd, ffd, round, slow = 0;
	long fh, ret;

	t_time_limit(120);
	if (!put_buf || !get_buf)
		FATAL("malloc");
	t_key("two_threads", key);
	ffd = t_open();
	wfd = t_open();
	CHECK_ERR(t_set_capacity(ffd, 64ULL << 20, NULL), 0, "SET_CAPACITY");
	fh = t_attach(ffd, key, N, 0600, 0, NULL);
	if (fh < 0)
		FATAL("ATTACH F: %s", t_errname(fh));
	wh = t_attach(wfd, key, N, 0600, DLCACHE_ATTACH_F_NOCREATE, NULL);
	if (wh < 0)
		FATAL("ATTACH W: %s", t_errname(wh));
	if (t_ring_init(&fr, ffd, 4, 0) < 0 || t_ring_init(&wr, wfd, 4, 0) < 0)
		FATAL("rings");

	for (round = 0; round < ROUNDS; round++) {
		uint32_t sample = (uint32_t)round;
		struct a_result res = { 0, 0 };
		struct dlcache_sqe *sqe;
		pthread_t a, b;
		uint64_t put_done;
		long lat_ms;

		/* F owns the fill; W's GET parks on it. */
		ret = t_get(&fr, (uint32_t)fh, sample, get_buf, 16, &cqe);
		CHECK_ERR(ret, -ENOENT, "F's GET");
		if (!(cqe.flags & DLCACHE_CQE_F_FILL))
			FATAL("round %d: F did not get the fill", round);
		sqe = t_sqe(&wr);
		sqe->opcode = DLCACHE_OP_GET;
		sqe->handle = (uint32_t)wh;
		sqe->sample = sample;
		sqe->addr = (uintptr_t)get_buf;
		sqe->len = SZ;
		sqe->user_data = 0x77000 + sample;
		t_sqe_push(&wr);
		CHECK_EQ(t_enter(&wr, 1, 0, 0, 0), 1, "W's ENTER of the GET");
		CHECK_EQ(t_cq_ready(&wr), 0, "W's GET completed while the fill is in flight");

		a_asleep = 0;
		stop_b = 0;
		if (pthread_create(&a, NULL, thread_a, &res) ||
		    pthread_create(&b, NULL, thread_b, NULL))
			FATAL("pthread_create");
		while (!a_asleep)
			t_msleep(1);
		t_msleep(100);	/* A is asleep in the module by now */

		t_pattern(put_buf, SZ, key[0], sample);
		ret = t_put(&fr, (uint32_t)fh, sample, put_buf, SZ, &cqe);
		put_done = now_ns();
		CHECK_EQ(ret, SZ, "F's PUT");
		pthread_join(a, NULL);
		stop_b = 1;
		pthread_join(b, NULL);

		lat_ms = (long)((int64_t)(res.done_ns - put_done) / 1000000);
		t_info("round %d: A's ENTER returned %s %ld ms after the PUT", round,
		       t_errname(res.ret), lat_ms);
		if (res.ret < 0 || lat_ms > MAX_LATENCY_MS) {
			FAIL("round %d: A slept %ld ms past the fill's end (ENTER %s): lost wake-up",
			     round, lat_ms, t_errname(res.ret));
			slow++;
		}
		/* Whoever posted it, the CQE is there now. */
		if (!t_cq_ready(&wr))
			t_enter(&wr, 0, 1, DLCACHE_ENTER_F_GETEVENTS | DLCACHE_ENTER_F_TIMEOUT,
				1000000000ULL);
		if (t_reap(&wr, &cqe)) {
			CHECK_EQ(cqe.user_data, 0x77000 + sample, "CQE user_data");
			CHECK_EQ(cqe.res, SZ, "waited GET res");
			CHECK(cqe.flags & DLCACHE_CQE_F_WAITED, "waited GET without F_WAITED");
			if (cqe.res == (int32_t)SZ)
				t_pattern_ok(get_buf, SZ, key[0], sample);
		} else {
			FAIL("round %d: no CQE for W's GET", round);
		}
		if (slow)
			break;	/* one lost wake-up says it; spare the time */
	}

	t_ring_unmap(&fr);
	t_ring_unmap(&wr);
	close(ffd);
	close(wfd);
	free(put_buf);
	free(get_buf);
	return t_done();
}
