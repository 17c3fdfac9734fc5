// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * stalled_copy: copies that stall in user memory are charged and bounded.
 *
 * An unprivileged user (uid 65534, in a cgroup v2 memory cgroup when the
 * kernel has the controller) parks PUTs and GETs in the module's copy from
 * and to user memory: each buffer is a userfaultfd range whose last page
 * stays missing until the test resolves it. NPUT threads PUT from one such
 * buffer, NGET threads GET cached samples into their own. While they are
 * parked:
 *  1. the PUTs' sample pages are charged to the user's memory cgroup
 *     (memory.current grows by about NPUT samples), and once admitted to
 *     the cache, which is shared, no longer are;
 *  2. STATS used_bytes counts them (PUTs are reserved against the capacity
 *     before the copy), still counts the GETs' samples after a DROP evicts
 *     them (their pages stay until the copy ends), and never exceeds the
 *     capacity; another user's PUT that would exceed the capacity with them
 *     is bypassed;
 *  3. with uid_max_copy_mb at NPUT + NGET samples, a further PUT and a
 *     further GET of the same uid complete at once with -EDQUOT instead of
 *     parking in a copy too.
 * Then the faults are resolved: every parked copy completes (the GETs with
 * the evicted samples' bytes intact), and once the data sets are dropped
 * used_bytes, the module's inflight_bytes and the cgroup's memory are back
 * to where they were (and /init's rmmod shows nothing leaked).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "dlc_test.h"

#define CGROOT "/sys/fs/cgroup"
#define CG CGROOT "/dlc_stall"
#define SYSCTL_UFFD "/proc/sys/vm/unprivileged_userfaultfd"
#define DEBUGFS_STATS "/sys/kernel/debug/dlcache/stats"
#define USER 65534
#define MB (1ULL << 20)
#define SZ (4U << 20)			/* a sample: whole pages */
#define NPUT 4
#define NGET 4
#define NCACHED (NGET + 1)		/* samples 100.. cached first */
#define CAPACITY (64 * MB)
#define BOUND_MB ((NPUT + NGET) * SZ / MB)
#define NSAMPLES 128
/* Regions of the userfaultfd buffer: PUTs', each GET's, the extra GET's. */
#define NREGIONS (1 + NGET + 1)

static uint64_t key[2];
static int to_child[2], to_parent[2];
static bool have_cg;
static long page;

/* ---- the unprivileged user ------------------------------------------------ */

static uint8_t *ubuf;			/* NREGIONS regions of SZ */

struct op {
	pthread_t tid;
	uint8_t opcode;
	uint32_t sample;
	uint8_t *buf;
	volatile int done;		/* CQE taken */
	struct dlcache_cqe cqe;
	long err;			/* setup or ENTER failure */
};

static long cg_value(const char *name)
{
	char path[128], buf[64];

	snprintf(path, sizeof(path), CG "/%s", name);
	if (!t_read_file(path, buf, sizeof(buf)))
		return -1;
	return atol(buf);
}

/* One session that makes one copy: ENTER blocks in it while it stalls. */
static void *op_thread(void *arg)
{
	struct op *o = arg;
	struct dlcache_sqe *sqe;
	struct t_ring r;
	long h, ret;
	int fd;

	fd = t_open();
	h = t_attach(fd, key, NSAMPLES, 0600, 0, NULL);
	if (h < 0) {
		o->err = h;
		goto out;
	}
	ret = t_ring_init(&r, fd, 8, 0);
	if (ret < 0) {
		o->err = ret;
		goto out;
	}
	sqe = t_sqe(&r);
	sqe->opcode = o->opcode;
	sqe->handle = (uint32_t)h;
	sqe->sample = o->sample;
	sqe->len = SZ;
	sqe->addr = (uintptr_t)o->buf;
	sqe->user_data = o->sample;
	t_sqe_push(&r);
	ret = t_enter(&r, 1, 0, 0, 0);
	if (ret != 1)
		o->err = ret < 0 ? ret : -EAGAIN;
	else if (!t_reap(&r, &o->cqe))
		o->err = -ETIME;
out:
	o->done = 1;
	return NULL;
}

static void op_start(struct op *o, uint8_t opcode, uint32_t sample, uint8_t *buf)
{
	o->opcode = opcode;
	o->sample = sample;
	o->buf = buf;
	if (pthread_create(&o->tid, NULL, op_thread, o))
		FATAL("pthread_create: %m");
}

/* Waits at most @ms for @o's completion. */
static bool op_wait(struct op *o, unsigned ms)
{
	uint64_t end = t_now_ms() + ms;

	while (!o->done && t_now_ms() < end)
		t_msleep(10);
	return o->done;
}

/* Reads fault events of @uffd until @n in all or @ms pass; the count. */
static int uffd_faults(int uffd, int have, int n, unsigned ms)
{
	uint64_t end = t_now_ms() + ms;
	struct uffd_msg msg;
	struct pollfd p = { .fd = uffd, .events = POLLIN };

	while (have < n && t_now_ms() < end) {
		if (poll(&p, 1, 100) <= 0)
			continue;
		while (read(uffd, &msg, sizeof(msg)) == sizeof(msg))
			if (msg.event == UFFD_EVENT_PAGEFAULT)
				have++;
	}
	return have;
}

static int user(void)
{
	struct op puts_[NPUT], gets[NGET], xput, xget;
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };
	struct dlcache_cqe cqe;
	long base = -1, parked;
	uint8_t *src, *pat;
	struct t_ring r;
	int uffd, fd, faults, i;
	long h, ret;
	char c;

	memset(puts_, 0, sizeof(puts_));
	memset(gets, 0, sizeof(gets));
	memset(&xput, 0, sizeof(xput));
	memset(&xget, 0, sizeof(xget));
	close(to_child[1]);
	close(to_parent[0]);
	if (read(to_child[0], &c, 1) != 1)
		return 2;

	/* The cached samples that the GETs will copy out. */
	fd = t_open();
	h = t_attach(fd, key, NSAMPLES, 0600, 0, NULL);
	if (h < 0)
		FATAL("ATTACH: %s", t_errname(h));
	if (t_ring_init(&r, fd, 8, 0) < 0)
		FATAL("ring");
	pat = malloc(SZ);
	src = malloc(page);
	if (!pat || !src)
		FATAL("malloc");
	for (i = 0; i < NCACHED; i++) {
		t_pattern(pat, SZ, key[0], 100 + i);
		ret = t_put(&r, (uint32_t)h, 100 + i, pat, SZ, &cqe);
		CHECK_EQ(ret, SZ, "PUT of a cached sample");
		CHECK(cqe.flags & DLCACHE_CQE_F_CACHED, "sample %d not cached", 100 + i);
	}

	/* The buffer: every page present but the last of each region. */
	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0)
		FATAL("userfaultfd as uid %d: %m", USER);
	if (ioctl(uffd, UFFDIO_API, &api))
		FATAL("UFFDIO_API: %m");
	ubuf = mmap(NULL, (size_t)NREGIONS * SZ, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ubuf == MAP_FAILED)
		FATAL("mmap: %m");
	/* A huge page would make the last page present with the others. */
	madvise(ubuf, (size_t)NREGIONS * SZ, MADV_NOHUGEPAGE);
	t_pattern(pat, SZ, key[0], 0);
	memcpy(ubuf, pat, SZ - page);
	for (i = 1; i < NREGIONS; i++)
		memset(ubuf + (size_t)i * SZ, 0xee, SZ - page);
	reg.range.start = (uintptr_t)ubuf;
	reg.range.len = (size_t)NREGIONS * SZ;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		FATAL("UFFDIO_REGISTER: %m");

	if (have_cg)
		base = cg_value("memory.current");
	for (i = 0; i < NPUT; i++)
		op_start(&puts_[i], DLCACHE_OP_PUT, i, ubuf);
	for (i = 0; i < NGET; i++)
		op_start(&gets[i], DLCACHE_OP_GET, 100 + i, ubuf + (size_t)(1 + i) * SZ);
	faults = uffd_faults(uffd, 0, NPUT + NGET, 20000);
	if (faults < NPUT + NGET) {
		for (i = 0; i < NPUT; i++)
			if (puts_[i].done)
				t_info("PUT %d: res %s err %s", i, t_errname(puts_[i].cqe.res),
				       t_errname(puts_[i].err));
		FATAL("only %d of %d copies parked on the missing pages", faults,
		      NPUT + NGET);
	}
	t_info("%d PUTs and %d GETs of %u KiB parked in copies", NPUT, NGET, SZ >> 10);

	/* 1. The parked PUTs' pages are the user's memory cgroup's. */
	if (have_cg) {
		parked = cg_value("memory.current");
		t_info("memory.current: %ld KiB before, %ld KiB with the copies parked",
		       base >> 10, parked >> 10);
		CHECK(parked - base >= (long)(NPUT * SZ) * 9 / 10,
		      "memory.current grew by %ld KiB for %d parked PUTs of %u KiB: their buffers are not charged to the caller's memory cgroup",
		      (parked - base) >> 10, NPUT, SZ >> 10);
	} else {
		t_info("skip the memory cgroup check: no cgroup2 memory controller");
	}

	/* 3. The uid's bound: a further copy is refused, not parked. */
	op_start(&xput, DLCACHE_OP_PUT, 10, ubuf);
	if (!op_wait(&xput, 5000))
		FAIL("a PUT past uid_max_copy_mb=%llu parked in its copy too", BOUND_MB);
	else
		CHECK_ERR(xput.cqe.res, -EDQUOT, "PUT past the uid's copies in flight");
	op_start(&xget, DLCACHE_OP_GET, 100 + NGET, ubuf + (size_t)(1 + NGET) * SZ);
	if (!op_wait(&xget, 5000))
		FAIL("a GET past uid_max_copy_mb=%llu parked in its copy too", BOUND_MB);
	else
		CHECK_ERR(xget.cqe.res, -EDQUOT, "GET past the uid's copies in flight");

	/* 2. is the parent's: it looks at STATS and drops the samples. */
	t_signal(to_parent[1]);
	if (!t_await(to_child[0], 30))
		FAIL("no word from the parent");

	/* Resolve: the PUTs' page gets its bytes, the GETs' a zero page. */
	{
		struct uffdio_copy cp = { 0 };
		struct uffdio_zeropage zp = { 0 };

		memcpy(src, pat + SZ - page, page);
		cp.dst = (uintptr_t)ubuf + SZ - page;
		cp.src = (uintptr_t)src;
		cp.len = page;
		if (ioctl(uffd, UFFDIO_COPY, &cp) && errno != EEXIST)
			FAIL("UFFDIO_COPY: %m");
		for (i = 1; i < NREGIONS; i++) {
			zp.range.start = (uintptr_t)ubuf + (size_t)(i + 1) * SZ - page;
			zp.range.len = page;
			if (ioctl(uffd, UFFDIO_ZEROPAGE, &zp) && errno != EEXIST)
				FAIL("UFFDIO_ZEROPAGE: %m");
		}
	}
	for (i = 0; i < NPUT; i++) {
		if (!op_wait(&puts_[i], 10000)) {
			FAIL("PUT %d still parked after the fault was resolved", i);
			continue;
		}
		CHECK_ERR(puts_[i].err, 0, "parked PUT's ENTER");
		CHECK_EQ(puts_[i].cqe.res, SZ, "parked PUT's res");
	}
	for (i = 0; i < NGET; i++) {
		if (!op_wait(&gets[i], 10000)) {
			FAIL("GET %d still parked after the fault was resolved", i);
			continue;
		}
		CHECK_ERR(gets[i].err, 0, "parked GET's ENTER");
		CHECK_EQ(gets[i].cqe.res, SZ, "parked GET of an evicted sample");
		CHECK(t_pattern_ok(gets[i].buf, SZ, key[0], 100 + i),
		      "GET %d: the evicted sample's bytes changed under the copy", i);
	}
	CHECK(op_wait(&xput, 10000) && op_wait(&xget, 10000),
	      "the copies past the bound never completed");
	/* Cached, the samples are the shared cache's, not the writer's. */
	if (have_cg) {
		long now = cg_value("memory.current");

		t_info("memory.current: %ld KiB with the PUTs' samples cached", now >> 10);
		CHECK(now - base < (long)(NPUT * SZ) / 2,
		      "memory.current is %ld KiB above the start once the PUTs were cached: cached samples stay charged to their writer",
		      (now - base) >> 10);
	}
	/* The PUTs' bytes went in whole: read one back. */
	ret = t_get(&r, (uint32_t)h, 0, pat, SZ, &cqe);
	if (ret == SZ)
		CHECK(t_pattern_ok(pat, SZ, key[0], 0), "sample 0 as PUT from the resolved buffer");
	else
		CHECK(ret == -ENOENT, "GET of a sample PUT from the parked buffer: %s",
		      t_errname(ret));
	return t_done();
}

/* ---- root ------------------------------------------------------------------ */

static uint64_t debugfs_value(const char *name)
{
	char line[256];
	size_t n = strlen(name);
	uint64_t v = UINT64_MAX;
	FILE *f = fopen(DEBUGFS_STATS, "r");

	if (!f)
		return v;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, n) && line[n] == ' ')
			v = strtoull(line + n + 1, NULL, 10);
	fclose(f);
	return v;
}

static void show(int fd, const char *when)
{
	struct dlcache_stats st = t_stats_of(fd, 0);
	uint64_t in = debugfs_value("inflight_bytes");

	t_info("%s: used_bytes %llu KiB of %llu KiB, inflight_bytes %lld KiB", when,
	       (unsigned long long)st.used_bytes >> 10,
	       (unsigned long long)st.capacity_bytes >> 10,
	       in == UINT64_MAX ? -1LL : (long long)(in >> 10));
	CHECK(st.used_bytes <= st.capacity_bytes,
	      "%s: used_bytes %llu over the capacity %llu", when,
	      (unsigned long long)st.used_bytes, (unsigned long long)st.capacity_bytes);
}

int main(void)
{
	unsigned long long old_uffd = 0, old_bound = 64;
	uint64_t rkey[2], cap_old = 0;
	struct dlcache_stats st;
	struct dlcache_cqe cqe;
	struct t_ring r;
	char buf[256], pid_s[32];
	long long cur = -1;
	uint8_t *big;
	int fd, status, i;
	long h, ret;
	FILE *f;
	pid_t pid;

	t_time_limit(58);
	page = sysconf(_SC_PAGESIZE);
	t_key("stalled_copy", key);
	t_key("stalled_copy.root", rkey);

	f = fopen(SYSCTL_UFFD, "r");
	if (!f)
		t_skip("no %s: the kernel has no userfaultfd", SYSCTL_UFFD);
	if (fscanf(f, "%llu", &old_uffd) != 1)
		old_uffd = 0;
	fclose(f);
	if (!t_write_file(SYSCTL_UFFD, "1"))
		t_skip("cannot allow unprivileged userfaultfd: %m");

	if (access(CGROOT "/cgroup.controllers", F_OK))
		mount("none", CGROOT, "cgroup2", 0, NULL);
	have_cg = t_read_file(CGROOT "/cgroup.controllers", buf, sizeof(buf)) &&
		  strstr(buf, "memory") &&
		  t_write_file(CGROOT "/cgroup.subtree_control", "+memory");
	if (have_cg) {
		rmdir(CG);
		have_cg = !mkdir(CG, 0755) && t_write_file(CG "/memory.max", "512M");
		t_write_file(CG "/memory.swap.max", "0");
	}

	/* admin.md's udev rule: the device is the group's. */
	if (chown(DLCACHE_DEVICE, 0, T_DEVGRP) || chmod(DLCACHE_DEVICE, 0660))
		FATAL("chown/chmod %s: %m", DLCACHE_DEVICE);
	fd = t_open();
	ret = t_set_capacity(fd, CAPACITY, &cap_old);
	if (ret < 0)
		FATAL("SET_CAPACITY: %s", t_errname(ret));
	t_param_get("uid_max_copy_mb", &old_bound);
	ret = t_param_set("uid_max_copy_mb", BOUND_MB);
	CHECK_ERR(ret, 0, "setting the parameter uid_max_copy_mb");

	if (pipe(to_child) || pipe(to_parent))
		FATAL("pipe: %m");
	fflush(stdout);
	pid = t_start_user(USER, user);
	close(to_child[0]);
	close(to_parent[1]);
	snprintf(pid_s, sizeof(pid_s), "%d", (int)pid);
	if (have_cg && !t_write_file(CG "/cgroup.procs", pid_s)) {
		t_info("cannot move the user into %s: %m", CG);
		have_cg = false;
	}
	t_signal(to_child[1]);

	if (!t_await(to_parent[0], 60)) {
		FAIL("the user's copies never parked");
	} else {
		/* 2. PUTs reserved before their copy; GETs hold what they copy. */
		st = t_stats_of(fd, 0);
		show(fd, "parked");
		CHECK(st.used_bytes >= (uint64_t)(NCACHED + NPUT) * SZ,
		      "used_bytes %llu KiB with %d samples cached and %d PUTs of %u KiB parked: the PUTs are not counted",
		      (unsigned long long)st.used_bytes >> 10, NCACHED, NPUT, SZ >> 10);

		ret = t_drop(fd, NULL, NULL);
		CHECK_ERR(ret, 0, "DROP");
		st = t_stats_of(fd, 0);
		show(fd, "parked, samples dropped");
		CHECK(st.used_bytes >= (uint64_t)(NPUT + NGET) * SZ,
		      "used_bytes %llu KiB after DROP with %d GETs of evicted samples and %d PUTs parked (%u KiB each): their pages are outside the capacity",
		      (unsigned long long)st.used_bytes >> 10, NGET, NPUT, SZ >> 10);

		/* Another user's PUT must not go past the capacity with them. */
		ret = t_set_capacity(fd, (NPUT + NGET + 1) * (uint64_t)SZ, NULL);
		CHECK_ERR(ret, 0, "SET_CAPACITY");
		h = t_attach(fd, rkey, 4, 0600, 0, NULL);
		if (h < 0 || t_ring_init(&r, fd, 8, 0) < 0)
			FATAL("root's data set: %s", t_errname(h));
		big = malloc(2 * SZ);
		if (!big)
			FATAL("malloc");
		memset(big, 0x5a, 2 * SZ);
		ret = t_put(&r, (uint32_t)h, 0, big, 2 * SZ, &cqe);
		CHECK_EQ(ret, 2 * SZ, "root's PUT");
		CHECK(!(cqe.flags & DLCACHE_CQE_F_CACHED),
		      "a PUT of %u KiB was cached with %u KiB of copies in flight and a capacity of %u KiB",
		      2 * SZ >> 10, (NPUT + NGET) * SZ >> 10, (NPUT + NGET + 1) * SZ >> 10);
		show(fd, "after root's PUT");
		ret = t_set_capacity(fd, CAPACITY, NULL);
		CHECK_ERR(ret, 0, "SET_CAPACITY back");
		t_signal(to_child[1]);
	}
	status = t_wait(pid, 60);
	CHECK_EQ(status, 0, "the user's exit status");

	/* Everything completed: dropped, nothing is left on the books. */
	ret = t_drop(fd, NULL, NULL);
	CHECK_ERR(ret, 0, "DROP at the end");
	st = t_stats_of(fd, 0);
	show(fd, "the end");
	CHECK_EQ(st.used_bytes, 0, "used_bytes once every copy ended and all was dropped");
	if (debugfs_value("inflight_bytes") != UINT64_MAX)
		CHECK_EQ(debugfs_value("inflight_bytes"), 0, "inflight_bytes at the end");
	if (have_cg) {
		for (i = 0; i < 100; i++) {
			cur = cg_value("memory.current");
			if (cur >= 0 && cur < (long long)(8 * MB))
				break;
			t_msleep(30);
		}
		CHECK(cur >= 0 && cur < (long long)(8 * MB),
		      "memory.current %lld KiB after the user exited and the samples were dropped",
		      cur >> 10);
		if (rmdir(CG))
			FAIL("rmdir %s: %m", CG);
	}
	t_param_set("uid_max_copy_mb", old_bound);
	t_set_capacity(fd, cap_old, NULL);
	snprintf(buf, sizeof(buf), "%llu", old_uffd);
	t_write_file(SYSCTL_UFFD, buf);
	close(fd);
	return t_done();
}
