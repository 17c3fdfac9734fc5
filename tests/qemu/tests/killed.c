// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * killed: processes die with the ring mapped.
 *
 * 1. A child owning a fill, blocked in ENTER waiting for another fill, is
 *    SIGKILLed: it dies at once (the wait is killable), its fill is
 *    released (the parent's GET of that sample becomes the fill), and the
 *    parent's own fill completes with no waiter left.
 * 2. A child with SQEs queued but not submitted and CQEs not reaped is
 *    SIGKILLed while idle.
 * 3. A child closes the fd but keeps the ring mapped: the mapping stays
 *    valid; the session ends when the mapping goes.
 * 4. Eight children GET and PUT one data set at random and are all
 *    SIGKILLed at once: every cached sample still has its own bytes.
 * After each step: one session left (the parent's), no fill in flight.
 * (/init then checks that rmmod succeeds, so no reference leaked.)
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "dlc_test.h"

#define N 64

static uint64_t key[2];
static int pfd;
static long ph;
static struct t_ring pr;

static uint32_t size_of(uint32_t s)
{
	return 500 + s * 301;
}

static void sane(const char *when)
{
	struct dlcache_stats st;
	int i;

	/* The last fput of a killed task may run a moment after wait(). */
	for (i = 0; i < 100; i++) {
		t_stats(pfd, (uint32_t)ph, &st);
		if (st.nsessions == 1 && st.ds_attached == 1)
			break;
		t_msleep(20);
	}
	CHECK_EQ(st.nsessions, 1, "sessions");
	CHECK_EQ(st.ds_attached, 1, "attachments");
	CHECK_EQ(st.dataset.fills_inflight, 0, "fills in flight");
	if (t_failures)
		printf("(checked %s)\n", when);
}

static int child_blocked(int w)
{
	struct dlcache_cqe cqe;
	struct t_ring r;
	uint8_t buf[64];
	int fd = t_open();
	long h = t_attach(fd, key, N, 0600, 0, NULL), ret;
	struct dlcache_sqe *s;

	if (h < 0 || t_ring_init(&r, fd, 4, 0) < 0)
		FATAL("child setup");
	ret = t_get(&r, (uint32_t)h, 2, buf, sizeof(buf), &cqe);
	if (ret != -ENOENT || !(cqe.flags & DLCACHE_CQE_F_FILL))
		FATAL("child: GET of sample 2 did not make it the filler: %s", t_errname(ret));
	s = t_sqe(&r);
	s->opcode = DLCACHE_OP_GET;
	s->handle = (uint32_t)h;
	s->sample = 1;		/* the parent fills it */
	s->addr = (uintptr_t)buf;
	s->len = sizeof(buf);
	t_sqe_push(&r);
	t_signal(w);
	/* Blocks until killed: no time-out. */
	ret = t_enter(&r, 1, 1, DLCACHE_ENTER_F_GETEVENTS, 0);
	FAIL("child: ENTER returned %s before it was killed", t_errname(ret));
	return 1;
}

static int child_idle(int w)
{
	struct dlcache_cqe cqe;
	struct t_ring r;
	uint8_t buf[64];
	int fd = t_open();
	long h = t_attach(fd, key, N, 0600, 0, NULL);

	if (h < 0 || t_ring_init(&r, fd, 8, 0) < 0)
		FATAL("child setup");
	t_get(&r, (uint32_t)h, 3, buf, sizeof(buf), &cqe);	/* owns fill 3 */
	for (int i = 0; i < 4; i++) {	/* completions left unreaped */
		struct dlcache_sqe *s = t_sqe(&r);

		s->opcode = DLCACHE_OP_NOP;
		t_sqe_push(&r);
	}
	t_enter(&r, 4, 0, 0, 0);
	for (int i = 0; i < 3; i++) {	/* entries left unsubmitted */
		struct dlcache_sqe *s = t_sqe(&r);

		s->opcode = DLCACHE_OP_GET;
		s->handle = (uint32_t)h;
		s->sample = 4;
		s->addr = (uintptr_t)buf;
		s->len = sizeof(buf);
		t_sqe_push(&r);
	}
	t_signal(w);
	sleep(100);	/* the parent kills it long before */
	return T_FAIL;
}

static int child_closed(int w)
{
	struct dlcache_cqe cqe;
	struct t_ring r;
	int fd = t_open();
	long h = t_attach(fd, key, N, 0600, 0, NULL);
	uint32_t entries;

	if (h < 0 || t_ring_init(&r, fd, 8, 0) < 0)
		FATAL("child setup");
	t_nop(&r, 1, &cqe);
	entries = *r.sq_entries;
	close(fd);
	/* The pages stay mapped, readable and writable. */
	CHECK_EQ(*r.sq_entries, entries, "sq ring_entries after close");
	CHECK_EQ(*r.cq_tail, 1, "cq tail after close");
	r.sqes[0].user_data = 0x1234;
	CHECK_EQ(r.sqes[0].user_data, 0x1234, "SQE written after close");
	/* The session lives on with the mapping: the parent sees 2. */
	t_signal(w);
	t_msleep(300);
	t_ring_unmap(&r);
	return t_done();
}

static int child_random(int w)
{
	uint8_t *buf = malloc(64 << 10);
	struct dlcache_cqe cqe;
	struct t_ring r;
	uint64_t seed = (uint64_t)getpid() * 0x9e3779b9ULL;
	int fd = t_open();
	long h = t_attach(fd, key, N, 0600, 0, NULL), ret;

	if (h < 0 || t_ring_init(&r, fd, 4, 0) < 0)
		FATAL("child setup");
	t_signal(w);
	for (;;) {
		uint32_t s = (uint32_t)(t_rand(&seed) % N);

		ret = t_get(&r, (uint32_t)h, s, buf, 64 << 10, &cqe);
		if (ret == -ENOENT && (cqe.flags & DLCACHE_CQE_F_FILL)) {
			t_pattern(buf, size_of(s), key[0], s);
			t_put(&r, (uint32_t)h, s, buf, size_of(s), &cqe);
		} else if (ret == (long)size_of(s)) {
			if (!t_pattern_ok(buf, size_of(s), key[0], s))
				return 1;
		}
	}
}

static pid_t spawn(int (*fn)(int), int w, int rd)
{
	pid_t pid = fork();

	if (pid < 0)
		FATAL("fork: %m");
	if (pid == 0) {
		close(pfd);
		exit(fn(w));
	}
	if (!t_await(rd, 10))
		FAIL("child %d did not get ready", (int)pid);
	return pid;
}

int main(void)
{
	uint8_t *buf = malloc(64 << 10);
	struct dlcache_cqe cqe;
	struct dlcache_stats st;
	pid_t pid, kids[8];
	long ret;
	int p[2], status, i;

	t_time_limit(60);
	t_key("killed", key);
	if (pipe(p))
		FATAL("pipe: %m");
	pfd = t_open();
	CHECK_ERR(t_set_capacity(pfd, 16 << 20, NULL), 0, "SET_CAPACITY");
	ph = t_attach(pfd, key, N, 0600, 0, NULL);
	if (ph < 0)
		FATAL("ATTACH: %s", t_errname(ph));
	if (t_ring_init(&pr, pfd, 8, 0) < 0)
		FATAL("ring");

	/* 1 */
	ret = t_get(&pr, (uint32_t)ph, 1, buf, 64, &cqe);
	CHECK_ERR(ret, -ENOENT, "1: parent GET of sample 1");
	pid = spawn(child_blocked, p[1], p[0]);
	t_msleep(200);
	t_stats(pfd, (uint32_t)ph, &st);
	CHECK_EQ(st.dataset.fills_inflight, 2, "1: fills in flight (parent's and child's)");
	kill(pid, SIGKILL);
	status = t_wait(pid, 5);
	CHECK_EQ(status, 128 + SIGKILL, "1: status of the child killed in ENTER");
	ret = t_get(&pr, (uint32_t)ph, 2, buf, 64, &cqe);
	CHECK_ERR(ret, -ENOENT, "1: GET of the dead child's sample");
	CHECK(cqe.flags & DLCACHE_CQE_F_FILL, "1: the dead child's fill was not released");
	t_abort(&pr, (uint32_t)ph, 2, 0, &cqe);
	t_pattern(buf, size_of(1), key[0], 1);
	ret = t_put(&pr, (uint32_t)ph, 1, buf, size_of(1), &cqe);
	CHECK_EQ(ret, size_of(1), "1: parent PUT with the waiter gone");
	sane("after 1");

	/* 2 */
	pid = spawn(child_idle, p[1], p[0]);
	t_stats(pfd, (uint32_t)ph, &st);
	CHECK_EQ(st.nsessions, 2, "2: sessions with the idle child");
	kill(pid, SIGKILL);
	CHECK_EQ(t_wait(pid, 5), 128 + SIGKILL, "2: status of the idle child");
	sane("after 2");
	ret = t_get(&pr, (uint32_t)ph, 3, buf, 64, &cqe);
	CHECK(ret == -ENOENT && (cqe.flags & DLCACHE_CQE_F_FILL),
	      "2: the idle child's fill was not released: %s", t_errname(ret));
	t_abort(&pr, (uint32_t)ph, 3, 0, &cqe);

	/* 3 */
	pid = spawn(child_closed, p[1], p[0]);
	t_stats(pfd, (uint32_t)ph, &st);
	CHECK_EQ(st.nsessions, 2, "3: sessions while the child's ring is still mapped");
	CHECK_EQ(t_wait(pid, 5), 0, "3: child status");
	sane("after 3");

	/* 4 */
	for (i = 0; i < 8; i++)
		kids[i] = spawn(child_random, p[1], p[0]);
	t_msleep(1500);
	for (i = 0; i < 8; i++)
		kill(kids[i], SIGKILL);
	for (i = 0; i < 8; i++) {
		status = t_wait(kids[i], 5);
		CHECK_EQ(status, 128 + SIGKILL, "4: random child status");
	}
	sane("after 4");
	{
		uint32_t cached = 0;

		for (uint32_t s = 0; s < N; s++) {
			ret = t_get(&pr, (uint32_t)ph, s, buf, 64 << 10, &cqe);
			if (ret == (long)size_of(s)) {
				cached++;
				t_pattern_ok(buf, size_of(s), key[0], s);
			} else if (ret == -ENOENT) {
				CHECK(cqe.flags & DLCACHE_CQE_F_FILL,
				      "4: miss of %u without the fill: a dead child still owns it", s);
				t_abort(&pr, (uint32_t)ph, s, 0, &cqe);
			} else {
				FAIL("4: GET of %u: %s", s, t_errname(ret));
			}
		}
		t_stats(pfd, (uint32_t)ph, &st);
		CHECK_EQ(st.dataset.cached_samples, cached, "4: cached samples");
		t_info("4: %u samples cached by the killed children", cached);
		CHECK(cached > 0, "4: the children cached nothing in 1.5 s");
	}
	t_ring_unmap(&pr);
	close(pfd);
	free(buf);
	return t_done();
}
