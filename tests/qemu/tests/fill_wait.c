// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fill_wait: concurrent fills between processes.
 *
 * 1. A GET misses and A becomes the filler; B GETs the same sample and
 *    waits (no completion, cq pending 1); A PUTs; B completes with the
 *    bytes and F_WAITED.
 * 2. The same with B waiting in poll() instead of ENTER.
 * 3. A ABORTs: the waiter B takes the fill over (-ENOENT, F_FILL), PUTs,
 *    and A then hits B's bytes.
 * 4. A ABORTs with F_FAIL: both waiters B and C complete -EIO.
 * 5. A DETACHes while B waits: B gets the fill.
 * 6. The filler is SIGKILLed while a waiter waits: the waiter completes
 *    (takes the fill over, or -EIO) and nothing hangs.
 * 7. A GETs a sample it is filling itself: completes, no self-deadlock.
 * Every wait has a time limit.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "dlc_test.h"

#define N 16
#define SZ 10000

static uint64_t key[2];

struct sess {
	int fd;
	long h;
	struct t_ring r;
};

static void sess_open(struct sess *s)
{
	long ret;

	s->fd = t_open();
	s->h = t_attach(s->fd, key, N, 0600, 0, NULL);
	if (s->h < 0)
		FATAL("ATTACH: %s", t_errname(s->h));
	ret = t_ring_init(&s->r, s->fd, 4, 0);
	if (ret < 0)
		FATAL("ring: %s", t_errname(ret));
}

static void sess_close(struct sess *s)
{
	t_ring_unmap(&s->r);
	close(s->fd);
}

/* Submits a GET of @sample without waiting; checks that it did not complete. */
static void submit_waiting_get(struct sess *s, uint32_t sample, uint8_t *buf)
{
	struct dlcache_sqe *sqe = t_sqe(&s->r);
	long ret;

	sqe->opcode = DLCACHE_OP_GET;
	sqe->handle = (uint32_t)s->h;
	sqe->sample = sample;
	sqe->addr = (uintptr_t)buf;
	sqe->len = SZ;
	sqe->user_data = 0xabc0 + sample;
	t_sqe_push(&s->r);
	ret = t_enter(&s->r, 1, 0, 0, 0);
	CHECK_EQ(ret, 1, "ENTER of the waiting GET");
	CHECK_EQ(t_cq_ready(&s->r), 0, "completions of a GET on a sample being filled");
	CHECK_EQ(*s->r.cq_pending, 1, "cq pending with one waiting GET");
}

/* Waits for the completion of the GET that submit_waiting_get() queued. */
static bool wait_get(struct sess *s, struct dlcache_cqe *cqe, uint32_t sample)
{
	long ret = t_enter(&s->r, 0, 1, DLCACHE_ENTER_F_GETEVENTS | DLCACHE_ENTER_F_TIMEOUT,
			   10000000000ULL);

	if (ret < 0) {
		FAIL("waiting GET of sample %u: ENTER %s", sample, t_errname(ret));
		return false;
	}
	if (!t_reap(&s->r, cqe)) {
		FAIL("waiting GET of sample %u: ENTER returned but the CQ is empty", sample);
		return false;
	}
	CHECK_EQ(cqe->user_data, 0xabc0 + sample, "user_data of the waited GET");
	CHECK_EQ(*s->r.cq_pending, 0, "cq pending after the wait");
	return true;
}

static pid_t spawn(int (*fn)(uint32_t, int, int), uint32_t sample, int w, int r)
{
	pid_t pid = fork();

	if (pid < 0)
		FATAL("fork: %m");
	if (pid == 0) {
		t_time_limit(30);
		exit(fn(sample, w, r));
	}
	return pid;
}

/* Waiter that expects the bytes (scenario 1). */
static int waiter_bytes(uint32_t sample, int w, int r)
{
	uint8_t *buf = calloc(1, SZ);
	struct dlcache_cqe cqe;
	struct sess s;

	sess_open(&s);
	submit_waiting_get(&s, sample, buf);
	t_signal(w);
	if (wait_get(&s, &cqe, sample)) {
		CHECK_EQ(cqe.res, SZ, "waited GET res");
		CHECK(cqe.flags & DLCACHE_CQE_F_WAITED, "waited GET without F_WAITED");
		if (cqe.res == SZ)
			t_pattern_ok(buf, SZ, key[0], sample);
	}
	sess_close(&s);
	return t_done();
}

/* Waiter in poll() (scenario 2). */
static int waiter_poll(uint32_t sample, int w, int r)
{
	uint8_t *buf = calloc(1, SZ);
	struct pollfd p;
	struct dlcache_cqe cqe;
	struct sess s;
	long ret;

	sess_open(&s);
	submit_waiting_get(&s, sample, buf);
	p.fd = s.fd;
	p.events = POLLIN;
	p.revents = 0;
	CHECK_EQ(poll(&p, 1, 0), 0, "poll while the fill is in flight");
	t_signal(w);
	p.revents = 0;
	ret = poll(&p, 1, 10000);
	CHECK(ret == 1 && (p.revents & POLLIN), "poll did not report the fill's end (%ld, %#x)",
	      ret, p.revents);
	/* The completion may be deferred until ENTER posts it. */
	if (!t_cq_ready(&s.r)) {
		CHECK(*s.r.cq_flags & DLCACHE_CQ_F_PENDING,
		      "POLLIN with an empty CQ and no CQ_F_PENDING");
		ret = t_enter(&s.r, 0, 0, 0, 0);
		CHECK_EQ(ret, 0, "ENTER to post deferred completions");
	}
	if (t_reap(&s.r, &cqe)) {
		CHECK_EQ(cqe.res, SZ, "GET res after poll");
		if (cqe.res == SZ)
			t_pattern_ok(buf, SZ, key[0], sample);
	} else {
		FAIL("no completion after POLLIN and ENTER");
	}
	CHECK(!(*s.r.cq_flags & DLCACHE_CQ_F_PENDING), "CQ_F_PENDING still set");
	sess_close(&s);
	return t_done();
}

/* Waiter that takes the fill over and PUTs (scenarios 3, 5, 6); exits
 * 10 when it got -EIO instead (allowed in scenario 6 only). */
static int waiter_takeover(uint32_t sample, int w, int r)
{
	uint8_t *buf = calloc(1, SZ);
	struct dlcache_cqe cqe;
	struct sess s;
	long ret;

	sess_open(&s);
	submit_waiting_get(&s, sample, buf);
	t_signal(w);
	if (!wait_get(&s, &cqe, sample))
		return T_FAIL;
	if (cqe.res == -EIO && !t_failures) {
		sess_close(&s);
		return 10;
	}
	CHECK_ERR(cqe.res, -ENOENT, "waiter after the filler gave up");
	CHECK(cqe.flags & DLCACHE_CQE_F_FILL, "waiter did not get the fill (flags %#x)",
	      cqe.flags);
	t_pattern(buf, SZ, key[0] ^ 0x77, sample);
	ret = t_put(&s.r, (uint32_t)s.h, sample, buf, SZ, &cqe);
	CHECK_EQ(ret, SZ, "PUT by the new filler");
	CHECK(cqe.flags & DLCACHE_CQE_F_CACHED, "new filler's PUT not cached");
	sess_close(&s);
	return t_done();
}

/* Waiter that expects -EIO (scenario 4). */
static int waiter_eio(uint32_t sample, int w, int r)
{
	uint8_t *buf = calloc(1, SZ);
	struct dlcache_cqe cqe;
	struct sess s;

	sess_open(&s);
	submit_waiting_get(&s, sample, buf);
	t_signal(w);
	if (wait_get(&s, &cqe, sample))
		CHECK_ERR(cqe.res, -EIO, "waiter after ABORT F_FAIL");
	sess_close(&s);
	return t_done();
}

/* Filler that gets killed (scenario 6). */
static int filler_victim(uint32_t sample, int w, int r)
{
	uint8_t *buf = calloc(1, SZ);
	struct dlcache_cqe cqe;
	struct sess s;
	long ret;

	sess_open(&s);
	ret = t_get(&s.r, (uint32_t)s.h, sample, buf, SZ, &cqe);
	CHECK_ERR(ret, -ENOENT, "victim GET");
	CHECK(cqe.flags & DLCACHE_CQE_F_FILL, "victim is not the filler");
	t_signal(w);
	sleep(100);	/* the parent kills it long before */
	return T_FAIL;
}

static void miss_and_own(struct sess *a, uint32_t sample)
{
	struct dlcache_cqe cqe;
	uint8_t buf[16];
	long ret = t_get(&a->r, (uint32_t)a->h, sample, buf, sizeof(buf), &cqe);

	CHECK_ERR(ret, -ENOENT, "filler's GET");
	CHECK(cqe.flags & DLCACHE_CQE_F_FILL, "filler's GET without F_FILL");
}

static void expect_hit(struct sess *a, uint32_t sample, uint64_t tag)
{
	uint8_t *buf = calloc(1, SZ);
	struct dlcache_cqe cqe;
	long ret = t_get(&a->r, (uint32_t)a->h, sample, buf, SZ, &cqe);

	CHECK_EQ(ret, SZ, "GET after the fill ended");
	if (ret == SZ)
		t_pattern_ok(buf, SZ, tag, sample);
	free(buf);
}

static void still_waiting(pid_t pid, const char *who)
{
	int st;

	t_msleep(150);
	if (waitpid(pid, &st, WNOHANG) != 0)
		FAIL("%s ended before the fill did", who);
}

int main(void)
{
	uint8_t *buf = calloc(1, SZ);
	struct dlcache_cqe cqe;
	struct dlcache_stats st;
	struct sess a;
	int p[2];
	pid_t b, c;
	long ret;
	int status, keeper;

	t_time_limit(90);
	t_key("fill_wait", key);
	if (pipe(p))
		FATAL("pipe: %m");
	sess_open(&a);
	/* A data set lives while something is attached: keep it attached. */
	keeper = t_open();
	if (t_attach(keeper, key, N, 0600, DLCACHE_ATTACH_F_NOCREATE, NULL) < 0)
		FATAL("keeper ATTACH");
	ret = t_set_capacity(a.fd, 8 << 20, NULL);
	CHECK_ERR(ret, 0, "SET_CAPACITY");

	/* 1. waiter woken by the PUT */
	miss_and_own(&a, 1);
	b = spawn(waiter_bytes, 1, p[1], p[0]);
	if (!t_await(p[0], 10))
		FAIL("1: waiter did not start");
	still_waiting(b, "1: waiter");
	t_stats(a.fd, (uint32_t)a.h, &st);
	CHECK_EQ(st.dataset.waits, 1, "1: waits counted");
	CHECK_EQ(st.dataset.fills_inflight, 1, "1: fills_inflight");
	t_pattern(buf, SZ, key[0], 1);
	ret = t_put(&a.r, (uint32_t)a.h, 1, buf, SZ, &cqe);
	CHECK_EQ(ret, SZ, "1: PUT");
	CHECK_EQ(t_wait(b, 15), 0, "1: waiter exit status");

	/* 2. waiter in poll() */
	miss_and_own(&a, 2);
	b = spawn(waiter_poll, 2, p[1], p[0]);
	if (!t_await(p[0], 10))
		FAIL("2: waiter did not start");
	still_waiting(b, "2: poll waiter");
	t_pattern(buf, SZ, key[0], 2);
	ret = t_put(&a.r, (uint32_t)a.h, 2, buf, SZ, &cqe);
	CHECK_EQ(ret, SZ, "2: PUT");
	CHECK_EQ(t_wait(b, 15), 0, "2: poll waiter exit status");

	/* 3. ABORT hands the fill to the waiter */
	miss_and_own(&a, 3);
	b = spawn(waiter_takeover, 3, p[1], p[0]);
	if (!t_await(p[0], 10))
		FAIL("3: waiter did not start");
	still_waiting(b, "3: waiter");
	ret = t_abort(&a.r, (uint32_t)a.h, 3, 0, &cqe);
	CHECK_ERR(ret, 0, "3: ABORT");
	CHECK_EQ(t_wait(b, 15), 0, "3: new filler exit status");
	expect_hit(&a, 3, key[0] ^ 0x77);

	/* 4. ABORT F_FAIL fails both waiters */
	miss_and_own(&a, 4);
	b = spawn(waiter_eio, 4, p[1], p[0]);
	if (!t_await(p[0], 10))
		FAIL("4: waiter B did not start");
	c = spawn(waiter_eio, 4, p[1], p[0]);
	if (!t_await(p[0], 10))
		FAIL("4: waiter C did not start");
	still_waiting(b, "4: waiter B");
	ret = t_abort(&a.r, (uint32_t)a.h, 4, DLCACHE_SQE_F_FAIL, &cqe);
	CHECK_ERR(ret, 0, "4: ABORT F_FAIL");
	CHECK_EQ(t_wait(b, 15), 0, "4: waiter B exit status");
	CHECK_EQ(t_wait(c, 15), 0, "4: waiter C exit status");
	/* Nobody owns sample 4 now: the next GET fills it. */
	miss_and_own(&a, 4);
	ret = t_abort(&a.r, (uint32_t)a.h, 4, 0, &cqe);
	CHECK_ERR(ret, 0, "4: ABORT of the new fill");

	/* 5. DETACH of the filler's handle hands the fill over */
	miss_and_own(&a, 5);
	b = spawn(waiter_takeover, 5, p[1], p[0]);
	if (!t_await(p[0], 10))
		FAIL("5: waiter did not start");
	still_waiting(b, "5: waiter");
	ret = t_detach(a.fd, (uint32_t)a.h);
	CHECK_ERR(ret, 0, "5: DETACH");
	CHECK_EQ(t_wait(b, 15), 0, "5: new filler exit status");
	a.h = t_attach(a.fd, key, N, 0600, DLCACHE_ATTACH_F_NOCREATE, NULL);
	if (a.h < 0)
		FATAL("5: re-ATTACH: %s", t_errname(a.h));
	expect_hit(&a, 5, key[0] ^ 0x77);

	/* 6. the filler is killed */
	c = spawn(filler_victim, 6, p[1], p[0]);
	if (!t_await(p[0], 10))
		FAIL("6: filler did not start");
	b = spawn(waiter_takeover, 6, p[1], p[0]);
	if (!t_await(p[0], 10))
		FAIL("6: waiter did not start");
	still_waiting(b, "6: waiter");
	kill(c, SIGKILL);
	status = t_wait(c, 10);
	CHECK_EQ(status, 128 + SIGKILL, "6: killed filler status");
	status = t_wait(b, 15);
	CHECK(status == 0 || status == 10, "6: waiter after the filler's death: status %d", status);
	if (status == 0) {
		expect_hit(&a, 6, key[0] ^ 0x77);
	} else if (status == 10) {
		t_info("6: the waiter got -EIO when the filler died");
		miss_and_own(&a, 6);
		ret = t_abort(&a.r, (uint32_t)a.h, 6, 0, &cqe);
		CHECK_ERR(ret, 0, "6: ABORT");
	}

	/* 7. a session asks for a sample it is filling itself */
	miss_and_own(&a, 7);
	ret = t_get(&a.r, (uint32_t)a.h, 7, buf, SZ, &cqe);
	CHECK_ERR(ret, -ENOENT, "7: second GET by the filler");
	CHECK(cqe.flags & DLCACHE_CQE_F_FILL, "7: second GET by the filler without F_FILL");
	ret = t_abort(&a.r, (uint32_t)a.h, 7, 0, &cqe);
	CHECK_ERR(ret, 0, "7: ABORT");

	t_stats(a.fd, (uint32_t)a.h, &st);
	CHECK_EQ(st.dataset.fills_inflight, 0, "fills in flight at the end");
	CHECK_EQ(st.nsessions, 2, "sessions at the end (A and the keeper)");
	CHECK(st.dataset.waits >= 7, "waits %llu, want >= 7",
	      (unsigned long long)st.dataset.waits);
	CHECK(st.dataset.aborts >= 4, "aborts %llu, want >= 4",
	      (unsigned long long)st.dataset.aborts);
	sess_close(&a);
	close(keeper);
	return t_done();
}
