// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * drain: the administrator's drain (DLCACHE_IOC_DRAIN, parameter drain).
 *
 * - DLCACHE_FEAT_DRAIN is supported; the ioctl checks its flags, resv0
 *   and reserved fields (-EINVAL), and gives -EPERM without
 *   CAP_SYS_ADMIN (a root-opened fd used after dropping root).
 * - Session A owns a fill, session B has a GET parked on it, A has a NOP
 *   completion not yet reaped, a child sleeps in ENTER GETEVENTS on
 *   session C and another in poll() on session D.
 * - The drain: the ENTER sleeper wakes with -ESHUTDOWN, the poller with
 *   EPOLLHUP | EPOLLERR; A's NOP completion is still there to reap; A's
 *   ENTER fails -ESHUTDOWN and posts nothing, its fill goes to B's parked
 *   GET, B's ENTER fails -ESHUTDOWN and posts nothing, and no fill is left
 *   in flight. STATS and GET_INFO work, open works; ATTACH, SETUP_RING and
 *   SET_ORDER fail -ESHUTDOWN. The parameter reads Y, debugfs says
 *   draining 1.
 * - DLCACHE_DRAIN_F_OFF lets a new session attach; the parameter starts
 *   and ends the drain as the ioctl does.
 * - rmmod fails while a session is open, succeeds while drained once all
 *   are closed; the module comes back undrained.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "dlc_test.h"

_Static_assert(sizeof(struct dlcache_drain) == 32, "dlcache_drain");

#define NS 8
#define SZ 4096
#define PARAM "/sys/module/dlcache/parameters/drain"

static long drain_ioc(int fd, uint32_t flags, struct dlcache_drain *out)
{
	struct dlcache_drain d = { .flags = flags };
	long ret = t_ioctl(fd, DLCACHE_IOC_DRAIN, &d);

	if (out)
		*out = d;
	return ret;
}

/* Waits (at most 5 s) until task @pid sleeps (state S). */
static bool sleeping(pid_t pid)
{
	char path[64], buf[256], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 250; i++) {
		if (t_read_file(path, buf, sizeof(buf)) &&
		    (p = strrchr(buf, ')')) && p[1] == ' ' && p[2] == 'S')
			return true;
		t_msleep(20);
	}
	return false;
}

static void check_abi(int fd)
{
	struct dlcache_drain d;
	struct dlcache_info info;
	pid_t pid;

	CHECK_ERR(t_get_info(fd, &info), 0, "GET_INFO");
	CHECK(info.supported & DLCACHE_FEAT_DRAIN, "no DLCACHE_FEAT_DRAIN");

	memset(&d, 0, sizeof(d));
	d.resv0 = 1;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_DRAIN, &d), -EINVAL, "resv0");
	memset(&d, 0, sizeof(d));
	d.reserved[1] = 1;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_DRAIN, &d), -EINVAL, "reserved");
	CHECK_ERR(drain_ioc(fd, 1U << 5, NULL), -EINVAL, "unknown flag");
	CHECK_ERR(drain_ioc(fd, DLCACHE_DRAIN_F_OFF | DLCACHE_DRAIN_F_QUERY,
			    NULL), -EINVAL, "OFF | QUERY");
	CHECK_ERR(drain_ioc(fd, DLCACHE_DRAIN_F_QUERY, &d), 0, "QUERY");
	CHECK_EQ(d.draining, 0, "draining before");
	CHECK(d.nsessions >= 1, "nsessions %u", d.nsessions);

	/* The capability is checked at the call: root's fd, nobody's call. */
	pid = fork();
	if (pid < 0)
		FATAL("fork: %m");
	if (pid == 0) {
		t_become(65534, 65534, NULL, 0);
		_exit(drain_ioc(fd, 0, NULL) == -EPERM &&
		      drain_ioc(fd, DLCACHE_DRAIN_F_QUERY, NULL) == -EPERM ?
		      0 : 1);
	}
	CHECK_EQ(t_wait(pid, 10), 0, "unprivileged DRAIN is -EPERM");
	CHECK_ERR(drain_ioc(fd, DLCACHE_DRAIN_F_QUERY, &d), 0, "QUERY");
	CHECK_EQ(d.draining, 0, "draining after the -EPERM");
}

static void session(int *fd, struct t_ring *r, const uint64_t key[2],
		    long *h)
{
	*fd = t_open();
	if (t_ring_init(r, *fd, 16, 32))
		FATAL("ring");
	if (h) {
		*h = t_attach(*fd, key, NS, 0600, 0, NULL);
		if (*h < 1)
			FATAL("attach: %s", t_errname(*h));
	}
}

static char param_char(void)
{
	char buf[8] = "";

	t_read_file(PARAM, buf, sizeof(buf));
	return buf[0];
}

static bool debugfs_draining(int want)
{
	char buf[4096], line[32], *p;

	if (!t_read_file("/sys/kernel/debug/dlcache/stats", buf, sizeof(buf)))
		return true;	/* no debugfs mounted: nothing to check */
	snprintf(line, sizeof(line), "draining %d\n", want);
	p = strstr(buf, line);
	return p != NULL;
}

int main(void)
{
	int fa, fb, fc, fd, adm, st;
	struct t_ring ra, rb, rc, rd, rn;
	struct dlcache_sqe *sqe;
	struct dlcache_cqe cqe;
	struct dlcache_stats s;
	struct dlcache_drain d;
	struct dlcache_info info;
	uint32_t tail_a, tail_b, ids[NS];
	uint64_t key[2];
	static char buf[SZ];
	long ha, hb, ret;
	pid_t sleeper, poller;

	t_time_limit(120);
	t_key("drain", key);
	adm = t_open();
	check_abi(adm);

	session(&fa, &ra, key, &ha);
	session(&fb, &rb, key, &hb);
	session(&fc, &rc, NULL, NULL);
	session(&fd, &rd, NULL, NULL);

	/* A owns the fill of sample 1; B's GET of it parks. */
	CHECK_ERR(t_get(&ra, ha, 1, buf, SZ, &cqe), -ENOENT, "A GET 1");
	CHECK(cqe.flags & DLCACHE_CQE_F_FILL, "A does not own the fill");
	sqe = t_sqe(&rb);
	sqe->opcode = DLCACHE_OP_GET;
	sqe->handle = hb;
	sqe->sample = 1;
	sqe->len = SZ;
	sqe->addr = (uintptr_t)buf;
	sqe->user_data = 11;
	t_sqe_push(&rb);
	CHECK_EQ(t_enter(&rb, 1, 0, 0, 0), 1, "B ENTER");
	CHECK_EQ(t_cq_ready(&rb), 0, "B's GET did not park");
	CHECK_EQ(*rb.cq_pending, 1, "B pending");
	/* A NOP completion of A, posted before the drain, not reaped. */
	sqe = t_sqe(&ra);
	sqe->opcode = DLCACHE_OP_NOP;
	sqe->user_data = 77;
	t_sqe_push(&ra);
	CHECK_EQ(t_enter(&ra, 1, 0, 0, 0), 1, "A NOP");

	/* C sleeps in ENTER; D in poll(). */
	sleeper = fork();
	if (sleeper == 0)
		_exit(t_enter(&rc, 0, 1, DLCACHE_ENTER_F_GETEVENTS, 0) ==
		      -ESHUTDOWN ? 0 : 1);
	poller = fork();
	if (poller == 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		_exit(poll(&p, 1, 20000) == 1 &&
		      (p.revents & (POLLHUP | POLLERR)) == (POLLHUP | POLLERR) ?
		      0 : 1);
	}
	CHECK(sleeping(sleeper), "the ENTER child does not sleep");
	CHECK(sleeping(poller), "the poll child does not sleep");
	CHECK_ERR(t_stats(adm, 0, &s), 0, "STATS before");
	CHECK_EQ(s.global.fills_inflight, 1, "fills before the drain");

	/* Drain. */
	CHECK_ERR(drain_ioc(adm, 0, &d), 0, "DRAIN");
	CHECK_EQ(d.draining, 1, "draining");
	CHECK(d.nsessions >= 5, "nsessions %u", d.nsessions);
	CHECK_EQ(t_wait(sleeper, 10), 0, "ENTER sleeper woken with -ESHUTDOWN");
	CHECK_EQ(t_wait(poller, 10), 0, "poller woken with POLLHUP | POLLERR");
	{
		struct pollfd p = { .fd = fa, .events = POLLIN };

		CHECK_EQ(poll(&p, 1, 0), 1, "poll A");
		CHECK_EQ(p.revents & (POLLHUP | POLLERR | POLLIN),
			 POLLHUP | POLLERR | POLLIN, "poll A revents");
	}
	CHECK_EQ(param_char(), 'Y', "parameter drain");
	CHECK(debugfs_draining(1), "debugfs: no 'draining 1'");

	/* Consumed before the drain: completed, and reaped as usual. */
	CHECK(t_reap(&ra, &cqe), "A's NOP completion gone");
	CHECK_EQ(cqe.user_data, 77, "A's NOP user_data");
	CHECK_EQ(cqe.res, 0, "A's NOP res");
	/* A: ENTER fails, posts nothing, hands its fill to B. */
	sqe = t_sqe(&ra);
	sqe->opcode = DLCACHE_OP_NOP;
	t_sqe_push(&ra);
	tail_a = *ra.cq_tail;
	CHECK_ERR(t_enter(&ra, 1, 0, 0, 0), -ESHUTDOWN, "A ENTER");
	CHECK_ERR(t_enter(&ra, 0, 1, DLCACHE_ENTER_F_GETEVENTS, 0),
		  -ESHUTDOWN, "A ENTER GETEVENTS");
	CHECK_EQ(*ra.cq_tail, tail_a, "A: a CQE posted while draining");
	CHECK_EQ(*ra.sq_head, *ra.sq_tail - 1,
		 "A: an SQE consumed while draining");
	/* A is detached: its handle is gone. */
	CHECK_ERR(t_stats(fa, ha, &s), -EBADF, "A STATS of its handle");
	CHECK_ERR(t_stats(fa, 0, &s), 0, "A STATS while draining");
	CHECK_EQ(s.global.fills_inflight, 1, "the fill went to B");
	CHECK_EQ(*rb.cq_flags & DLCACHE_CQ_F_PENDING, DLCACHE_CQ_F_PENDING,
		 "B's wait is ready");
	/* B: ENTER fails without posting the handed-over GET; fill ends. */
	tail_b = *rb.cq_tail;
	CHECK_ERR(t_enter(&rb, 0, 0, 0, 0), -ESHUTDOWN, "B ENTER");
	CHECK_EQ(*rb.cq_tail, tail_b, "B: a CQE posted while draining");
	CHECK_ERR(t_stats(adm, 0, &s), 0, "STATS while draining");
	CHECK_EQ(s.global.fills_inflight, 0, "fills left after the drain");
	CHECK(s.nsessions >= 5, "STATS nsessions %u", s.nsessions);
	CHECK_ERR(t_detach(fb, hb), -EBADF, "B still attached");

	/* New work is refused; looking is not. */
	ret = t_open();
	CHECK_ERR(t_get_info(ret, &info), 0, "GET_INFO while draining");
	CHECK_ERR(t_attach(ret, key, NS, 0600, 0, NULL), -ESHUTDOWN,
		  "ATTACH while draining");
	CHECK_ERR(t_ring_init(&rn, ret, 16, 32), -ESHUTDOWN,
		  "SETUP_RING while draining");
	close(ret);
	for (uint32_t i = 0; i < NS; i++)
		ids[i] = i;
	CHECK_ERR(t_set_order(fb, hb, 0, ids, NS), -ESHUTDOWN,
		  "SET_ORDER while draining");

	/* Undrain: attach again; the parameter does the same as the ioctl. */
	CHECK_ERR(drain_ioc(adm, DLCACHE_DRAIN_F_OFF, &d), 0, "DRAIN OFF");
	CHECK_EQ(d.draining, 0, "draining after OFF");
	CHECK_EQ(param_char(), 'N', "parameter drain after OFF");
	CHECK(debugfs_draining(0), "debugfs: no 'draining 0'");
	/* A's NOP refused by the drain is still in its SQ: it runs now. */
	CHECK_EQ(t_enter(&ra, 1, 0, 0, 0), 1, "A ENTER after OFF");
	CHECK(t_reap(&ra, &cqe) && cqe.res == 0, "A's NOP after OFF");
	ha = t_attach(fa, key, NS, 0600, 0, NULL);
	CHECK(ha >= 1, "ATTACH after OFF: %s", t_errname(ha));
	CHECK_ERR(t_get(&ra, ha, 2, buf, SZ, &cqe), -ENOENT, "GET after OFF");
	t_pattern(buf, SZ, 5, 2);
	CHECK_EQ(t_put(&ra, ha, 2, buf, SZ, &cqe), SZ, "PUT after OFF");
	CHECK(t_write_file(PARAM, "1"), "write drain=1");
	CHECK_ERR(drain_ioc(adm, DLCACHE_DRAIN_F_QUERY, &d), 0, "QUERY");
	CHECK_EQ(d.draining, 1, "draining after drain=1");
	CHECK_ERR(t_attach(fb, key, NS, 0600, 0, NULL), -ESHUTDOWN,
		  "ATTACH after drain=1");
	CHECK(t_write_file(PARAM, "0"), "write drain=0");
	hb = t_attach(fb, key, NS, 0600, 0, NULL);
	CHECK(hb >= 1, "ATTACH after drain=0: %s", t_errname(hb));
	CHECK_ERR(t_get(&rb, hb, 2, buf, SZ, &cqe), SZ, "GET hit after drain=0");
	CHECK(t_pattern_ok(buf, SZ, 5, 2), "bytes after drain=0");

	/* rmmod: not while a session is open; yes once all are closed. */
	CHECK(t_write_file(PARAM, "1"), "write drain=1");
	CHECK_ERR(t_enter(&rb, 0, 0, 0, 0), -ESHUTDOWN, "B ENTER, drain=1");
	ret = t_rmmod();
	CHECK(ret == -EAGAIN || ret == -EBUSY || ret == -EWOULDBLOCK,
	      "rmmod with sessions open: %s", t_errname(ret));
	t_ring_unmap(&ra);
	t_ring_unmap(&rb);
	t_ring_unmap(&rc);
	t_ring_unmap(&rd);
	close(fa);
	close(fb);
	close(fc);
	close(fd);
	close(adm);
	ret = t_rmmod();
	CHECK_ERR(ret, 0, "rmmod while drained, every session closed");
	if (!ret) {
		CHECK_ERR(t_insmod(""), 0, "insmod");
		for (int i = 0; i < 100 && access(DLCACHE_DEVICE, F_OK); i++)
			t_msleep(20);
		adm = t_open();
		CHECK_ERR(drain_ioc(adm, DLCACHE_DRAIN_F_QUERY, &d), 0,
			  "QUERY after reload");
		CHECK_EQ(d.draining, 0, "draining after reload");
		CHECK(t_attach(adm, key, NS, 0600, 0, NULL) >= 1,
		      "ATTACH after reload");
		close(adm);
	}
	(void)st;
	return t_done();
}
