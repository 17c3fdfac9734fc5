// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fill_abandoned: the fill lease (DLCACHE_FEAT_FILL_LEASE, module
 * parameter fill_lease_ms, set to 1000 here and restored at the end).
 *
 * Session A takes fills and then neither PUTs nor ABORTs them; it stays
 * alive. B (another session, may write) and C (another uid, may only
 * read) want the samples.
 * 1. C's GET parks, then B's. About a lease after A took the fill, B
 *    takes it over (-ENOENT, F_FILL | F_WAITED) although C waited first,
 *    and C completes -ETIMEDOUT (F_WAITED). A's late ABORT gives -ENOENT;
 *    B's PUT is cached and A then hits B's bytes.
 * 2. No GET waits: the expired fill stays A's until B GETs it; B takes it
 *    over at once (-ENOENT, F_FILL, no wait). A's late PUT still inserts
 *    (and ends B's fill: B's ABORT gives -ENOENT); B hits A's bytes.
 * 3. C's GET of an expired fill completes -ETIMEDOUT at once; nobody took
 *    the fill, so A's ABORT of it succeeds.
 * 4. B takes A's expired fill over, then A's session ends: B's fill stays
 *    (fills_inflight 1), and B's PUT ends it.
 * 5. fill_lease_ms=0: B's GET parks and stays parked past the old lease;
 *    writing 1000 again hands the (long expired) fill to B at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "dlc_test.h"

#define N 16
#define SZ 6000
#define LEASE_MS 1000
#define NOBODY 65534
#define PARAM "/sys/module/dlcache/parameters/fill_lease_ms"

static uint64_t key[2];

struct sess {
	int fd;
	long h;
	struct t_ring r;
};

static void sess_open(struct sess *s, int fd, bool other_owner)
{
	long ret;

	s->fd = fd;
	if (other_owner) {
		/* ABI 2 names another user's data set by its owner. */
		struct dlcache_attach a;

		memset(&a, 0, sizeof(a));
		a.key[0] = key[0];
		a.key[1] = key[1];
		a.nsamples = N;
		a.flags = DLCACHE_ATTACH_F_OWNER;
		a.owner_uid = 0;
		ret = t_ioctl(fd, DLCACHE_IOC_ATTACH, &a);
		if (ret == -EINVAL)	/* ABI 1: keys are global */
			ret = t_attach(fd, key, N, 0, 0, &a);
		s->h = ret < 0 ? ret : a.handle;
	} else {
		s->h = t_attach(fd, key, N, 0644, 0, NULL);
	}
	if (s->h < 0)
		FATAL("ATTACH: %s", t_errname(s->h));
	ret = t_ring_init(&s->r, fd, 4, 0);
	if (ret < 0)
		FATAL("ring: %s", t_errname(ret));
}

static void sess_close(struct sess *s)
{
	t_ring_unmap(&s->r);
	close(s->fd);
}

static void take_fill(struct sess *s, uint32_t sample, const char *who)
{
	struct dlcache_cqe cqe;
	uint8_t buf[16];
	long ret = t_get(&s->r, (uint32_t)s->h, sample, buf, sizeof(buf), &cqe);

	CHECK_ERR(ret, -ENOENT, who);
	CHECK(cqe.flags & DLCACHE_CQE_F_FILL, "%s: no F_FILL (flags %#x)", who, cqe.flags);
}

static void submit_get(struct sess *s, uint32_t sample, uint8_t *buf)
{
	struct dlcache_sqe *sqe = t_sqe(&s->r);

	sqe->opcode = DLCACHE_OP_GET;
	sqe->handle = (uint32_t)s->h;
	sqe->sample = sample;
	sqe->addr = (uintptr_t)buf;
	sqe->len = SZ;
	sqe->user_data = 0xf00 + sample;
	t_sqe_push(&s->r);
	CHECK_EQ(t_enter(&s->r, 1, 0, 0, 0), 1, "ENTER of a GET");
	CHECK_EQ(t_cq_ready(&s->r), 0, "completions of a GET of a sample being filled");
}

/* Waits at most @ms for one CQE; false (and *ret the ENTER error) if none. */
static bool wait_cqe(struct sess *s, unsigned ms, struct dlcache_cqe *cqe, long *ret)
{
	*ret = t_enter(&s->r, 0, 1, DLCACHE_ENTER_F_GETEVENTS | DLCACHE_ENTER_F_TIMEOUT,
		       (uint64_t)ms * 1000000ULL);
	return t_reap(&s->r, cqe);
}

static void expect_hit(struct sess *s, uint32_t sample, uint64_t tag, const char *who)
{
	uint8_t buf[SZ];
	struct dlcache_cqe cqe;
	long ret = t_get(&s->r, (uint32_t)s->h, sample, buf, SZ, &cqe);

	CHECK_EQ(ret, SZ, who);
	if (ret == SZ)
		t_pattern_ok(buf, SZ, tag, sample);
}

static uint64_t fills_inflight(struct sess *s)
{
	struct dlcache_stats st;

	if (t_stats(s->fd, (uint32_t)s->h, &st) < 0)
		FAIL("STATS");
	return st.dataset.fills_inflight;
}

/*
 * C: another uid, read only. @role 1: park a GET of @sample, signal, and
 * expect -ETIMEDOUT with F_WAITED. @role 3: GET @sample and expect
 * -ETIMEDOUT at once.
 */
static int reader(int role, uint32_t sample, int w)
{
	uint8_t *buf = calloc(1, SZ);
	struct dlcache_cqe cqe;
	struct sess c;
	uint64_t t0;
	long ret;
	int fd = t_open();	/* as root: the node is 0660 root:root */

	t_become(NOBODY, NOBODY, NULL, 0);
	sess_open(&c, fd, true);
	if (role == 1) {
		submit_get(&c, sample, buf);
		t_signal(w);
		if (!wait_cqe(&c, 8000, &cqe, &ret)) {
			FAIL("C: no completion of the parked GET (ENTER %s)", t_errname(ret));
			return t_done();
		}
		CHECK_ERR(cqe.res, -ETIMEDOUT, "C's parked GET of an expired fill");
		CHECK(cqe.flags & DLCACHE_CQE_F_WAITED, "C: no F_WAITED (flags %#x)",
		      cqe.flags);
		CHECK(!(cqe.flags & DLCACHE_CQE_F_FILL), "C (read only) got F_FILL");
	} else {
		t0 = t_now_ms();
		ret = t_get(&c.r, (uint32_t)c.h, sample, buf, SZ, &cqe);
		CHECK_ERR(ret, -ETIMEDOUT, "C's GET of an expired fill");
		CHECK(t_now_ms() - t0 < 1000, "C's GET took %llu ms",
		      (unsigned long long)(t_now_ms() - t0));
		t_signal(w);
	}
	sess_close(&c);
	return t_done();
}

static pid_t spawn_reader(int role, uint32_t sample, int w)
{
	pid_t pid = fork();

	if (pid < 0)
		FATAL("fork: %m");
	if (pid == 0) {
		t_time_limit(30);
		exit(reader(role, sample, w));
	}
	return pid;
}

int main(void)
{
	uint8_t *buf = calloc(1, SZ), *bbuf = calloc(1, SZ);
	struct dlcache_info info;
	struct dlcache_cqe cqe;
	struct sess a, b;
	char saved[32] = "30000\n";
	uint64_t t0, el;
	bool lease_ok;
	int p[2], keeper;
	pid_t c;
	long ret;

	t_time_limit(100);
	t_key("fill_abandoned", key);
	if (pipe(p))
		FATAL("pipe: %m");
	sess_open(&a, t_open(), false);
	sess_open(&b, t_open(), false);
	/* Keeps the data set when A's session ends (step 4). */
	keeper = t_open();
	if (t_attach(keeper, key, N, 0644, DLCACHE_ATTACH_F_NOCREATE, NULL) < 0)
		FATAL("keeper ATTACH");

	CHECK_ERR(t_get_info(a.fd, &info), 0, "GET_INFO");
	CHECK(info.supported & DLCACHE_FEAT_FILL_LEASE, "no DLCACHE_FEAT_FILL_LEASE");
	lease_ok = t_read_file(PARAM, saved, sizeof(saved)) && t_write_file(PARAM, "1000");
	CHECK(lease_ok, "cannot set %s", PARAM);

	/* 1. two parked GETs, the writer takes the fill over */
	take_fill(&a, 1, "1: A's GET");
	t0 = t_now_ms();
	c = spawn_reader(1, 1, p[1]);
	if (!t_await(p[0], 10))
		FAIL("1: C did not start");
	submit_get(&b, 1, bbuf);
	if (wait_cqe(&b, 5000, &cqe, &ret)) {
		el = t_now_ms() - t0;
		t_info("1: B's parked GET completed %llu ms after A took the fill",
		       (unsigned long long)el);
		CHECK_ERR(cqe.res, -ENOENT, "1: B's parked GET");
		CHECK((cqe.flags & (DLCACHE_CQE_F_FILL | DLCACHE_CQE_F_WAITED)) ==
		      (DLCACHE_CQE_F_FILL | DLCACHE_CQE_F_WAITED),
		      "1: B's flags %#x, want F_FILL | F_WAITED", cqe.flags);
		CHECK(el >= LEASE_MS - 100 && el <= LEASE_MS + 2000,
		      "1: the fill was taken %llu ms after it began, lease %u ms",
		      (unsigned long long)el, LEASE_MS);
	} else {
		FAIL("1: B's GET did not complete within 5 s of a %u ms lease (ENTER %s)",
		     LEASE_MS, t_errname(ret));
	}
	CHECK_EQ(t_wait(c, 15), 0, "1: C's exit status");
	if (!lease_ok || t_failures) {
		/* Without a lease the rest would only pile up time-outs. */
		t_abort(&a.r, (uint32_t)a.h, 1, 0, &cqe);
		goto out;
	}
	ret = t_abort(&a.r, (uint32_t)a.h, 1, 0, &cqe);
	CHECK_ERR(ret, -ENOENT, "1: A's late ABORT");
	t_pattern(buf, SZ, key[0] ^ 0xb, 1);
	ret = t_put(&b.r, (uint32_t)b.h, 1, buf, SZ, &cqe);
	CHECK_EQ(ret, SZ, "1: B's PUT");
	CHECK(cqe.flags & DLCACHE_CQE_F_CACHED, "1: B's PUT not cached");
	expect_hit(&a, 1, key[0] ^ 0xb, "1: A's GET after B's PUT");

	/* 2. no waiter: the next GET that may write takes the fill */
	take_fill(&a, 2, "2: A's GET");
	t_msleep(LEASE_MS + 300);
	t0 = t_now_ms();
	ret = t_get(&b.r, (uint32_t)b.h, 2, bbuf, SZ, &cqe);
	CHECK_ERR(ret, -ENOENT, "2: B's GET of an expired fill");
	CHECK(cqe.flags & DLCACHE_CQE_F_FILL, "2: B did not take the fill (flags %#x)",
	      cqe.flags);
	CHECK(!(cqe.flags & DLCACHE_CQE_F_WAITED), "2: B's GET waited");
	CHECK(t_now_ms() - t0 < 1000, "2: B's GET took %llu ms",
	      (unsigned long long)(t_now_ms() - t0));
	t_pattern(buf, SZ, key[0] ^ 0xa, 2);
	ret = t_put(&a.r, (uint32_t)a.h, 2, buf, SZ, &cqe);
	CHECK_EQ(ret, SZ, "2: A's late PUT");
	CHECK(cqe.flags & DLCACHE_CQE_F_CACHED, "2: A's late PUT not cached");
	ret = t_abort(&b.r, (uint32_t)b.h, 2, 0, &cqe);
	CHECK_ERR(ret, -ENOENT, "2: B's ABORT of a fill A's PUT ended");
	expect_hit(&b, 2, key[0] ^ 0xa, "2: B's GET after A's PUT");

	/* 3. a reader's GET of an expired fill */
	take_fill(&a, 3, "3: A's GET");
	t_msleep(LEASE_MS + 300);
	c = spawn_reader(3, 3, p[1]);
	CHECK_EQ(t_wait(c, 15), 0, "3: C's exit status");
	t_await(p[0], 1);
	ret = t_abort(&a.r, (uint32_t)a.h, 3, 0, &cqe);
	CHECK_ERR(ret, 0, "3: A's ABORT of the fill nobody took");

	/* 4. A's session ends after B took its fill */
	take_fill(&a, 4, "4: A's GET");
	t_msleep(LEASE_MS + 300);
	take_fill(&b, 4, "4: B's GET of an expired fill");
	CHECK_EQ(fills_inflight(&b), 1, "4: fills in flight");
	sess_close(&a);
	CHECK_EQ(fills_inflight(&b), 1, "4: fills in flight after A's session ended");
	t_pattern(buf, SZ, key[0] ^ 0xb, 4);
	ret = t_put(&b.r, (uint32_t)b.h, 4, buf, SZ, &cqe);
	CHECK_EQ(ret, SZ, "4: B's PUT");
	CHECK(cqe.flags & DLCACHE_CQE_F_CACHED, "4: B's PUT not cached");
	CHECK_EQ(fills_inflight(&b), 0, "4: fills in flight after B's PUT");

	/* 5. no lease, then the lease back */
	sess_open(&a, t_open(), false);
	CHECK(t_write_file(PARAM, "0"), "writing 0 to %s", PARAM);
	take_fill(&a, 5, "5: A's GET");
	t_msleep(LEASE_MS + 300);
	submit_get(&b, 5, bbuf);
	if (wait_cqe(&b, 1500, &cqe, &ret))
		FAIL("5: B's GET completed (%s) with fill_lease_ms=0", t_errname(cqe.res));
	else
		CHECK_ERR(ret, -ETIME, "5: B's wait with fill_lease_ms=0");
	t0 = t_now_ms();
	CHECK(t_write_file(PARAM, "1000"), "writing 1000 to %s", PARAM);
	if (wait_cqe(&b, 5000, &cqe, &ret)) {
		CHECK_ERR(cqe.res, -ENOENT, "5: B's GET once the lease is back");
		CHECK(cqe.flags & DLCACHE_CQE_F_FILL, "5: B did not take the fill (flags %#x)",
		      cqe.flags);
		CHECK(t_now_ms() - t0 < 1000, "5: B took the fill %llu ms after the lease was set",
		      (unsigned long long)(t_now_ms() - t0));
		ret = t_abort(&b.r, (uint32_t)b.h, 5, 0, &cqe);
		CHECK_ERR(ret, 0, "5: B's ABORT");
	} else {
		FAIL("5: B's GET did not complete once the lease was back (ENTER %s)",
		     t_errname(ret));
	}
	CHECK_EQ(fills_inflight(&b), 0, "fills in flight at the end");

out:
	if (lease_ok && !t_write_file(PARAM, saved))
		FAIL("restoring %s", PARAM);
	sess_close(&a);
	sess_close(&b);
	close(keeper);
	free(buf);
	free(bbuf);
	return t_done();
}
