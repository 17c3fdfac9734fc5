// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * start_race: many loaders start at once on one data set, exactly as
 * libdlcache's kernel tier does (kclient.c's dlc_kclient_open(), then
 * ktier_prepare_epoch()'s first SET_ORDER): open, GET_INFO, ATTACH of
 * the key with a job of its own (DLCACHE_ATTACH_F_JOB: each process is
 * a job, as bench's default of one process per job makes it), again
 * without the job on -EUSERS/-EDQUOT/-ENOMEM, the owner checked,
 * SETUP_RING, both mmaps, SET_ORDER of epoch 0, then a short hold and
 * close. Issue 29 item 10: one of two benches started together failed
 * with -ENOENT.
 *
 * NPROC processes do that ROUNDS times, each round released together;
 * half of them hold their session a few ms longer, so that the next
 * round's ATTACHes meet the last round's closes (the last detach that
 * makes the data set idle, or frees it). Between rounds root DROPs the
 * data set, or sets idle_keep_s to 0 (a last detach frees it) and back.
 * Meanwhile root lists the data sets with STATS F_INDEX, which pins the
 * one it shows while those closes free or idle it. Every step of every
 * start must succeed. On the old module and the new one alike, 36 rounds
 * of 16 starts all succeed: the failure was not reproduced here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "dlc_test.h"

#define NPROC 16
#define ROUNDS 36
#define NS 300
#define WINDOW (3 * NS)
#define ENTRIES 512
/* Rounds start until this much time has passed. */
#define BUDGET_MS 30000

struct shared {
	int round;		/* released round, from 1 */
	int last;		/* the last round, once the parent decided */
	int done[ROUNDS + 1];	/* starts finished in each round */
	int fails;
	int refused;		/* jobs refused, retried without */
	char why[NPROC][128];
};

static struct shared *sh;
static uint64_t key[2];

static uint64_t job_of(int i, int r)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	h = (h ^ (uint64_t)getpid()) * 0x100000001b3ULL;
	h = (h ^ (uint64_t)(i * 1000 + r)) * 0x100000001b3ULL;
	return h ? h : 1;
}

/* One start as dlc_kclient_open() and the first SET_ORDER; 0 or -errno. */
static long start(int i, int r, const char **step, int *fdp)
{
	struct dlcache_ring_setup rs;
	struct dlcache_attach a;
	struct dlcache_info info;
	uint32_t ids[NS];
	void *sq, *cq;
	long ret;
	int fd;

	*step = "open";
	fd = open(DLCACHE_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*fdp = fd;
	memset(&info, 0, sizeof(info));
	info.features = DLCACHE_FEAT_RING | DLCACHE_FEAT_POLL |
			DLCACHE_FEAT_GET_AT | DLCACHE_FEAT_FILL_WAIT |
			DLCACHE_FEAT_OWNER | DLCACHE_FEAT_CONSUMERS |
			DLCACHE_FEAT_GET_AHEAD | DLCACHE_FEAT_IDLE;
	*step = "GET_INFO";
	ret = t_ioctl(fd, DLCACHE_IOC_GET_INFO, &info);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.key[0] = key[0];
	a.key[1] = key[1];
	a.nsamples = NS;
	a.window = WINDOW;
	a.flags = DLCACHE_ATTACH_F_JOB;
	a.job = job_of(i, r);
	*step = "ATTACH with a job";
	ret = t_ioctl(fd, DLCACHE_IOC_ATTACH, &a);
	if (ret == -EUSERS || ret == -EDQUOT || ret == -ENOMEM) {
		__atomic_add_fetch(&sh->refused, 1, __ATOMIC_RELAXED);
		a.flags &= ~DLCACHE_ATTACH_F_JOB;
		a.job = 0;
		*step = "ATTACH without a job";
		ret = t_ioctl(fd, DLCACHE_IOC_ATTACH, &a);
	}
	if (ret)
		return ret;
	*step = "ATTACH's owner";
	if (a.owner_uid != getuid())
		return -EPERM;
	memset(&rs, 0, sizeof(rs));
	rs.sq_entries = ENTRIES;
	*step = "SETUP_RING";
	ret = t_ioctl(fd, DLCACHE_IOC_SETUP_RING, &rs);
	if (ret)
		return ret;
	*step = "mmap";
	sq = mmap(NULL, rs.sq_mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		  DLCACHE_OFF_SQ_RING);
	cq = mmap(NULL, rs.cq_mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		  DLCACHE_OFF_CQ_RING);
	if (sq == MAP_FAILED || cq == MAP_FAILED)
		return -errno;
	for (uint32_t k = 0; k < NS; k++)
		ids[k] = (k * 7 + (uint32_t)i) % NS;
	*step = "SET_ORDER";
	ret = t_set_order(fd, a.handle, 0, ids, NS);
	/* On the shared line another start may have been first. */
	if (ret == -EINVAL && !(a.result_flags & DLCACHE_ATTACH_JOINED))
		ret = 0;
	munmap(sq, rs.sq_mmap_size);
	munmap(cq, rs.cq_mmap_size);
	return ret;
}

static void child(int i)
{
	const char *step;
	int r, fd;
	long ret;

	t_time_limit(90);
	for (r = 1; r <= ROUNDS; r++) {
		while (__atomic_load_n(&sh->round, __ATOMIC_ACQUIRE) < r) {
			int last = __atomic_load_n(&sh->last, __ATOMIC_ACQUIRE);

			if (last && r > last)
				_exit(0);
			usleep(500);
		}
		fd = -1;
		ret = start(i, r, &step, &fd);
		if (ret) {
			snprintf(sh->why[i], sizeof(sh->why[i]),
				 "round %d, process %d: %s: %s", r, i, step,
				 t_errname(ret));
			__atomic_add_fetch(&sh->fails, 1, __ATOMIC_RELAXED);
		}
		__atomic_add_fetch(&sh->done[r], 1, __ATOMIC_RELEASE);
		/* Half of them close while the next round starts. */
		if (i % 2)
			t_msleep(1 + (unsigned)(i * 3 + r) % 20);
		if (fd >= 0)
			close(fd);
	}
	_exit(0);
}

/* STATS of every data set by index, as `dlcachectl datasets` does. */
static void list_all(int fd)
{
	struct dlcache_stats st;
	long ret;

	for (uint32_t i = 0; i < 100; i++) {
		memset(&st, 0, sizeof(st));
		st.handle = i;
		st.flags = DLCACHE_STATS_F_DATASET | DLCACHE_STATS_F_INDEX;
		ret = t_ioctl(fd, DLCACHE_IOC_STATS, &st);
		if (ret == -ENOENT)
			break;
		if (ret) {
			FAIL("STATS index %u: %s", i, t_errname(ret));
			break;
		}
	}
}

int main(void)
{
	pid_t pids[NPROC];
	uint64_t dropped, t0, t1;
	int fd, i, r;

	t_time_limit(110);
	if (getuid())
		t_skip("needs root (DROP, parameters)");
	t_key("start-race", key);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		FATAL("mmap: %m");
	memset(sh, 0, sizeof(*sh));
	fd = t_open();
	t0 = t_now_ms();
	for (i = 0; i < NPROC; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			FATAL("fork: %m");
		if (pids[i] == 0)
			child(i);
	}
	for (r = 1; r <= ROUNDS; r++) {
		/* Rounds 1, 4, 7, ...: a fresh module's or a dropped data set. */
		if (r % 3 == 1 && r > 1)
			t_drop(fd, key, &dropped);
		/* Rounds 3, 6, ...: the last detach frees the data set. */
		t_param_set("idle_keep_s", r % 3 == 0 ? 0 : 600);
		__atomic_store_n(&sh->round, r, __ATOMIC_RELEASE);
		/* Meanwhile root lists the data sets (STATS F_INDEX pins each). */
		t1 = t_now_ms();
		while (__atomic_load_n(&sh->done[r], __ATOMIC_ACQUIRE) < NPROC &&
		       t_now_ms() - t1 < 40000) {
			list_all(fd);
			t_msleep(1);
		}
		CHECK_EQ(sh->done[r], NPROC, "starts finished in the round");
		/* A slow kernel (KASAN, lockdep under TCG) runs fewer rounds. */
		if (r == ROUNDS || t_now_ms() - t0 > BUDGET_MS || sh->done[r] < NPROC) {
			__atomic_store_n(&sh->last, r, __ATOMIC_RELEASE);
			break;
		}
	}
	CHECK(r >= 3, "%d rounds in %d s, want 3 or more", r, BUDGET_MS / 1000);
	for (i = 0; i < NPROC; i++)
		CHECK_EQ(t_wait(pids[i], 30), 0, "starting process");
	for (i = 0; i < NPROC; i++)
		if (sh->why[i][0])
			FAIL("%s", sh->why[i]);
	t_info("%d rounds of %d starts in %llu ms: %d failed, %d jobs refused and retried without",
	       sh->last, NPROC, (unsigned long long)(t_now_ms() - t0), sh->fails,
	       sh->refused);
	CHECK_EQ(sh->fails, 0, "starts that failed");
	t_param_set("idle_keep_s", 600);
	close(fd);
	return t_done();
}
