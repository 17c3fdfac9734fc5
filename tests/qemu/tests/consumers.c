// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * consumers: jobs with their own time lines on one data set (ABI 3,
 * DLCACHE_FEAT_CONSUMERS).
 *
 *   info       abi_version >= 3, the feature, max_consumers and max_members;
 *   flags      a job key without DLCACHE_ATTACH_F_JOB is -EINVAL;
 *   join       the first ATTACH of a job creates its consumer, the next
 *              joins it; a reader joins none;
 *   orders     two jobs upload the same epoch with their own orders (ABI 2
 *              refused the second); one job's second upload is -EINVAL;
 *   merged     eviction by the soonest use over both jobs: job A reads
 *              0..15, job B 15..0, so the samples in the middle (7 and 8)
 *              are used last by both and go first when the capacity drops
 *              by two samples (one time line would evict 15 and 14);
 *   ranks      the cursor of a job is its slowest member's progress; a
 *              member's detach releases it; a member stalled for longer
 *              than consumer_stall_ms stops holding it back;
 *   stall      a job with no use for consumer_stall_ms stops counting
 *              (ds_consumers), and counts again at its next use;
 *   leave      the last member's detach removes the consumer;
 *   limits     -EUSERS past max_consumers (32); -EDQUOT when the job's time
 *              line passes the owner's policy memory limit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlc_test.h"

#define N 16
#define SZ 4096
#define READER 5302

static uint64_t key[2];

static long get_at(struct t_ring *r, uint32_t h, uint32_t sample,
		   uint32_t epoch, uint32_t index)
{
	static uint8_t buf[SZ];
	struct dlcache_cqe cqe;
	/* The result, or the t_do() error (with a FAIL line). */
	long res = t_get_at(r, h, sample, epoch, index, buf, SZ, &cqe);

	/* A miss hands this session the fill: give it back. */
	if (res == -ENOENT && (cqe.flags & DLCACHE_CQE_F_FILL))
		t_abort(r, h, sample, 0, &cqe);
	return res;
}

static void test_info(int fd)
{
	struct dlcache_info info;

	if (t_get_info(fd, &info))
		FATAL("GET_INFO");
	CHECK(info.abi_version >= 3, "abi_version %u", info.abi_version);
	CHECK(info.supported & DLCACHE_FEAT_CONSUMERS, "no DLCACHE_FEAT_CONSUMERS");
	CHECK_EQ(info.max_consumers, 32, "max_consumers");
	CHECK_EQ(info.max_members, 256, "max_members");
}

static void test_flags(int fd)
{
	struct dlcache_attach a;
	uint64_t k[2];

	memset(&a, 0, sizeof(a));
	t_key("consumers-flags", k);
	a.key[0] = k[0];
	a.key[1] = k[1];
	a.nsamples = N;
	a.job = 7;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_ATTACH, &a), -EINVAL,
		  "ATTACH with a job key and no F_JOB");
	a.job = 0;
	a.reserved[0] = 1;
	a.flags = DLCACHE_ATTACH_F_JOB;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_ATTACH, &a), -EINVAL,
		  "ATTACH F_JOB with reserved[0] set");
}

static int reader(void)
{
	struct dlcache_attach a;
	int fd = t_open();
	long h;

	memset(&a, 0, sizeof(a));
	a.key[0] = key[0];
	a.key[1] = key[1];
	a.nsamples = N;
	a.flags = DLCACHE_ATTACH_F_JOB | DLCACHE_ATTACH_F_OWNER;
	a.owner_uid = 0;
	a.job = 1;
	h = t_ioctl(fd, DLCACHE_IOC_ATTACH, &a);
	CHECK_ERR(h, 0, "reader ATTACH F_JOB naming owner 0");
	CHECK_EQ(a.result_flags, DLCACHE_ATTACH_MAY_READ,
		 "reader result_flags (no DLCACHE_ATTACH_JOINED)");
	close(fd);
	return t_done();
}

/* Two jobs on one data set: joins, orders, merged eviction, leaving. */
static void test_two_jobs(void)
{
	int fa = t_open(), fb = t_open(), fc = t_open(), fp = t_open();
	struct dlcache_attach a;
	struct dlcache_cqe cqe;
	struct dlcache_stats st;
	struct t_ring ra, rp;
	uint32_t oa[N], ob[N], missing = 0;
	uint64_t old, dropped;
	uint8_t buf[SZ];
	long ha, hb, hc, hp;

	if (t_ring_init(&ra, fa, 8, 0) < 0 || t_ring_init(&rp, fp, 8, 0) < 0)
		FATAL("rings");
	ha = t_attach_job(fa, key, N, 0644, 1, &a);
	if (ha < 0)
		FATAL("job A ATTACH: %s", t_errname(ha));
	CHECK_EQ(a.result_flags & (DLCACHE_ATTACH_JOINED | DLCACHE_ATTACH_JOB_CREATED),
		 DLCACHE_ATTACH_JOINED | DLCACHE_ATTACH_JOB_CREATED, "job A: created");
	hb = t_attach_job(fb, key, N, 0644, 2, &a);
	if (hb < 0)
		FATAL("job B ATTACH: %s", t_errname(hb));
	CHECK_EQ(a.result_flags & (DLCACHE_ATTACH_JOINED | DLCACHE_ATTACH_JOB_CREATED),
		 DLCACHE_ATTACH_JOINED | DLCACHE_ATTACH_JOB_CREATED, "job B: created");
	hc = t_attach_job(fc, key, N, 0644, 1, &a);
	if (hc < 0)
		FATAL("job A's second rank ATTACH: %s", t_errname(hc));
	CHECK_EQ(a.result_flags & (DLCACHE_ATTACH_JOINED | DLCACHE_ATTACH_JOB_CREATED),
		 DLCACHE_ATTACH_JOINED, "job A's second rank: joined, not created");
	/* A probe on time line 0, which holds no order: its GETs move nothing. */
	hp = t_attach(fp, key, N, 0644, 0, NULL);
	if (hp < 0)
		FATAL("probe ATTACH: %s", t_errname(hp));
	CHECK_EQ(t_wait(t_start_user(READER, reader), 30), 0, "reader");

	st = t_stats_of(fa, (uint32_t)ha);
	CHECK_EQ(st.ds_consumers, 2, "ds_consumers with two jobs");
	CHECK_EQ(st.ds_members, 2, "ds_members of job A");

	for (uint32_t i = 0; i < N; i++) {
		oa[i] = i;
		ob[i] = N - 1 - i;
	}
	CHECK_ERR(t_set_order(fa, (uint32_t)ha, 1, oa, N), 0, "job A SET_ORDER epoch 1");
	CHECK_ERR(t_set_order(fb, (uint32_t)hb, 1, ob, N), 0,
		  "job B SET_ORDER epoch 1 (its own time line)");
	CHECK_ERR(t_set_order(fc, (uint32_t)hc, 1, oa, N), -EINVAL,
		  "job A's second rank uploads epoch 1 again");
	st = t_stats_of(fb, (uint32_t)hb);
	CHECK(st.ds_cursor == 0 && st.ds_end == N, "job B's line: cursor %llu end %llu",
	      (unsigned long long)st.ds_cursor, (unsigned long long)st.ds_end);

	/* Every sample cached, then room for N - 2. */
	if (t_set_capacity(fa, 64ULL << 20, &old))
		FATAL("SET_CAPACITY");
	for (uint32_t s = 0; s < N; s++) {
		t_pattern(buf, SZ, key[0], s);
		CHECK_EQ(t_put(&ra, (uint32_t)ha, s, buf, SZ, &cqe), SZ, "PUT");
		CHECK(cqe.flags & DLCACHE_CQE_F_CACHED, "PUT of sample %u not cached", s);
	}
	CHECK_ERR(t_set_capacity(fa, (uint64_t)(N - 2) * SZ, NULL), 0, "lower the capacity");
	for (uint32_t s = 0; s < N; s++) {
		long res = t_get(&rp, (uint32_t)hp, s, buf, SZ, &cqe);

		if (res == -ENOENT) {
			missing |= 1U << s;
			if (cqe.flags & DLCACHE_CQE_F_FILL)
				t_abort(&rp, (uint32_t)hp, s, 0, &cqe);
		}
	}
	/*
	 * Both jobs are unmeasured (the same default cost, 1 ms a position),
	 * anchored when they were created: sample i is used at i ms by job A
	 * and at d + 15 - i ms by job B, d being the time between the two
	 * ATTACHes. The two used last by both lie in the middle, (15 + d) / 2,
	 * d a few ms (more on a debug kernel): two of 2..13. Job A's time line
	 * alone would evict 14 and 15, job B's 0 and 1.
	 */
	CHECK(__builtin_popcount(missing) == 2 && !(missing & ~0x3ffcU),
	      "evicted samples %#x: want two of 2..13 (the soonest use over both jobs), not 0xc000 or 0x3",
	      missing);
	t_info("evicted mask %#x", missing);
	CHECK_ERR(t_set_capacity(fa, old, NULL), 0, "restore the capacity");

	/* Job B leaves: its consumer goes, job A's stays. */
	close(fb);
	st = t_stats_of(fa, (uint32_t)ha);
	CHECK_EQ(st.ds_consumers, 1, "ds_consumers after job B's only member left");
	t_ring_unmap(&ra);
	t_ring_unmap(&rp);
	close(fa);
	close(fc);
	close(fp);
	t_drop(t_open(), key, &dropped);
}

/*
 * Two sessions, each with a ring and one attachment to data set @tag of
 * job @job0 and @job1 (equal: two ranks of one job).
 */
static void two_sessions(const char *tag, uint64_t job0, uint64_t job1,
			 uint64_t k[2], int fd[2], struct t_ring r[2], long h[2])
{
	t_key(tag, k);
	for (int i = 0; i < 2; i++) {
		fd[i] = t_open();
		if (t_ring_init(&r[i], fd[i], 8, 0) < 0)
			FATAL("%s: ring", tag);
		h[i] = t_attach_job(fd[i], k, N, 0, i ? job1 : job0, NULL);
		if (h[i] < 0)
			FATAL("%s: ATTACH: %s", tag, t_errname(h[i]));
	}
}

/* Ranks of one job: the cursor is the slowest member's progress. */
static void test_ranks(void)
{
	struct dlcache_stats st;
	struct t_ring r[2];
	uint32_t order[N];
	uint64_t k[2];
	long h[2];
	int fd[2];

	two_sessions("consumers-ranks", 42, 42, k, fd, r, h);
	for (uint32_t i = 0; i < N; i++)
		order[i] = (i * 5) % N;
	CHECK_ERR(t_set_order(fd[0], (uint32_t)h[0], 1, order, N), 0, "SET_ORDER");
	/* Rank 0 takes the even indexes 0..8, rank 1 index 1 only. */
	for (uint32_t i = 0; i <= 8; i += 2)
		get_at(&r[0], (uint32_t)h[0], order[i], 1, i);
	get_at(&r[1], (uint32_t)h[1], order[1], 1, 1);
	st = t_stats_of(fd[0], (uint32_t)h[0]);
	CHECK_EQ(st.ds_cursor, 2, "cursor after rank 0 at 8 and rank 1 at 1 (the slowest)");
	get_at(&r[1], (uint32_t)h[1], order[3], 1, 3);
	st = t_stats_of(fd[0], (uint32_t)h[0]);
	CHECK_EQ(st.ds_cursor, 4, "cursor after rank 1 moved to 3");
	/* A stalled rank stops holding the cursor back. */
	CHECK_ERR(t_param_set("consumer_stall_ms", 300), 0, "consumer_stall_ms=300");
	t_msleep(400);
	get_at(&r[0], (uint32_t)h[0], order[10], 1, 10);
	st = t_stats_of(fd[0], (uint32_t)h[0]);
	CHECK_EQ(st.ds_cursor, 11, "cursor once rank 1 stalled for longer than consumer_stall_ms");
	CHECK_ERR(t_param_set("consumer_stall_ms", 30000), 0, "consumer_stall_ms=30000");
	/* Rank 1 is back at 5 (fresh again): the cursor does not go back. */
	get_at(&r[1], (uint32_t)h[1], order[5], 1, 5);
	st = t_stats_of(fd[0], (uint32_t)h[0]);
	CHECK_EQ(st.ds_cursor, 11, "the cursor never moves back");
	/* Rank 1 detaches while behind: rank 0 alone moves it. */
	get_at(&r[0], (uint32_t)h[0], order[12], 1, 12);
	/* The mapping holds the file too: unmap, then close, to detach. */
	t_ring_unmap(&r[1]);
	close(fd[1]);
	st = t_stats_of(fd[0], (uint32_t)h[0]);
	CHECK_EQ(st.ds_cursor, 13, "cursor after the slow rank detached");
	CHECK_EQ(st.ds_members, 1, "ds_members after a detach");
	t_ring_unmap(&r[0]);
	close(fd[0]);
}

/* A job with no use for consumer_stall_ms stops counting. */
static void test_stall(void)
{
	struct dlcache_cqe cqe;
	struct dlcache_stats st;
	struct t_ring r[2];
	uint32_t order[N];
	uint8_t buf[SZ];
	uint64_t k[2];
	long h[2];
	int fd[2];

	two_sessions("consumers-stall", 1, 2, k, fd, r, h);
	for (uint32_t i = 0; i < N; i++)
		order[i] = i;
	CHECK_ERR(t_set_order(fd[0], (uint32_t)h[0], 1, order, N), 0, "A SET_ORDER");
	CHECK_ERR(t_set_order(fd[1], (uint32_t)h[1], 1, order, N), 0, "B SET_ORDER");
	CHECK_ERR(t_param_set("consumer_stall_ms", 300), 0, "consumer_stall_ms=300");
	t_msleep(400);
	/* B's use makes B alive; A's line stalled: admission notices. */
	get_at(&r[1], (uint32_t)h[1], 0, 1, 0);
	t_pattern(buf, SZ, k[0], 1);
	t_put(&r[1], (uint32_t)h[1], 1, buf, SZ, &cqe);
	st = t_stats_of(fd[1], (uint32_t)h[1]);
	CHECK_EQ(st.ds_consumers, 1, "ds_consumers once job A stalled");
	get_at(&r[0], (uint32_t)h[0], 0, 1, 0);
	st = t_stats_of(fd[0], (uint32_t)h[0]);
	CHECK_EQ(st.ds_consumers, 2, "ds_consumers once job A used a sample again");
	CHECK_ERR(t_param_set("consumer_stall_ms", 30000), 0, "consumer_stall_ms=30000");
	CHECK_ERR(t_param_set("consumer_stall_ms", 0), -EINVAL, "consumer_stall_ms=0");
	t_ring_unmap(&r[0]);
	t_ring_unmap(&r[1]);
	close(fd[0]);
	close(fd[1]);
}

static void test_limits(void)
{
	int fd = t_open(), fq = t_open();
	struct dlcache_attach a;
	unsigned long long old_mb = 0;
	uint64_t k[2];
	long h;

	t_key("consumers-limits", k);
	/* 31 jobs in one session: up to 64 handles. */
	for (uint64_t j = 0; j < 31; j++) {
		h = t_attach_job(fd, k, N, 0, 100 + j, NULL);
		CHECK(h > 0, "job %llu of 31: %s", (unsigned long long)j, t_errname(h));
	}
	CHECK_ERR(t_attach_job(fd, k, N, 0, 200, NULL), -EUSERS,
		  "a 32nd job (time line 0 is the first consumer)");
	CHECK(t_attach_job(fd, k, N, 0, 103, &a) > 0 &&
	      !(a.result_flags & DLCACHE_ATTACH_JOB_CREATED),
	      "joining an existing job when the table is full");
	close(fd);

	/* 128 Ki samples: about 7 MiB of policy, 5 MiB more per job. */
	t_key("consumers-quota", k);
	CHECK_ERR(t_param_get("uid_max_policy_mb", &old_mb), 0, "uid_max_policy_mb");
	CHECK_ERR(t_param_set("uid_max_policy_mb", 10), 0, "uid_max_policy_mb=10");
	h = t_attach(fq, k, 1U << 17, 0, 0, NULL);
	CHECK(h > 0, "a 128 Ki-sample data set within 10 MiB: %s", t_errname(h));
	CHECK_ERR(t_attach_job(fq, k, 1U << 17, 0, 5, NULL), -EDQUOT,
		  "a job's time line past the owner's policy memory");
	CHECK_ERR(t_param_set("uid_max_policy_mb", old_mb), 0, "restore uid_max_policy_mb");
	h = t_attach_job(fq, k, 1U << 17, 0, 5, &a);
	CHECK(h > 0 && (a.result_flags & DLCACHE_ATTACH_JOB_CREATED),
	      "the same job within the default limit: %s", t_errname(h));
	close(fq);
}

int main(void)
{
	uint64_t dropped;
	int fd;

	t_time_limit(120);
	if (getuid() != 0)
		t_skip("needs root (capacity, parameters, a second user)");
	fd = t_open();
	/* Data sets other tests left (idle ones included) out of the way. */
	t_drop(fd, NULL, &dropped);
	t_key("consumers", key);
	if (chown(DLCACHE_DEVICE, 0, T_DEVGRP))
		FATAL("chown %s: %m", DLCACHE_DEVICE);
	test_info(fd);
	test_flags(fd);
	test_two_jobs();
	test_ranks();
	test_stall();
	test_limits();
	close(fd);
	return t_done();
}
