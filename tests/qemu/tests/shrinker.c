// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * shrinker: the cache gives memory back under pressure.
 *
 * 1. Fill 64 MiB, then "echo 2 > /proc/sys/vm/drop_caches" (which runs
 *    every registered shrinker): the cache shrinks, shrinker_evictions
 *    counts it, what remains is the nearest next uses and reads back
 *    intact.
 * 2. Fill 192 MiB, then a child allocates and touches 128 MiB more
 *    anonymous memory than is available (no swap): it must not be
 *    OOM-killed, because the shrinker frees the cache, which gives back at
 *    least half of that excess, farthest next use first.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "dlc_test.h"

#define SZ (64 << 10)
#define N 1024			/* 64 MiB for drop_caches */
#define N2 3072			/* 192 MiB for memory pressure */
#define MiB (1ULL << 20)

static int fd;
static struct t_ring r;
static uint8_t *buf;

static void fill(long h, const uint64_t *key, const uint32_t *order, uint32_t n)
{
	struct dlcache_cqe cqe;
	long ret;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t s = order[i];

		t_pattern(buf, 64, key[0], s);	/* head of the sample varies */
		memcpy(buf + SZ - 8, &s, 4);
		ret = t_put(&r, (uint32_t)h, s, buf, SZ, &cqe);
		if (ret != SZ) {
			FAIL("PUT %u: %s", s, t_errname(ret));
			return;
		}
	}
}

static void check_prefix(long h, const uint64_t *key, const uint32_t *order, uint32_t n,
			 uint64_t cached, const char *when)
{
	struct dlcache_cqe cqe;
	uint32_t i, hits = 0;
	long ret;

	/* Nearest next uses stay: positions [0, cached) hit, the rest miss. */
	for (i = 0; i < n; i++) {
		struct dlcache_sqe sqe;

		memset(&sqe, 0, sizeof(sqe));
		sqe.opcode = DLCACHE_OP_GET;
		sqe.flags = DLCACHE_SQE_F_AT;
		sqe.handle = (uint32_t)h;
		sqe.sample = order[i];
		sqe.addr = (uintptr_t)buf;
		sqe.len = SZ;
		sqe.index = i;
		ret = t_do(&r, &sqe, &cqe);
		if (ret < 0) {
			FAIL("%s: GET at %u: %s", when, i, t_errname(ret));
			return;
		}
		if (cqe.res == SZ) {
			uint32_t s;

			hits++;
			memcpy(&s, buf + SZ - 8, 4);
			if (s != order[i] || !t_pattern_ok(buf, 64, key[0], order[i]))
				FAIL("%s: sample %u has the wrong bytes", when, order[i]);
			if (i >= cached)
				FAIL("%s: position %u hit, beyond the %llu cached", when, i,
				     (unsigned long long)cached);
		} else {
			if (cqe.res != -ENOENT)
				FAIL("%s: GET at %u: %s", when, i, t_errname(cqe.res));
			if (i < cached) {
				FAIL("%s: position %u missed, but %llu samples are cached: the "
				     "shrinker did not evict the farthest next use first", when, i,
				     (unsigned long long)cached);
				cached = 0;	/* report once */
			}
			if (cqe.flags & DLCACHE_CQE_F_FILL)
				t_abort(&r, (uint32_t)h, order[i], 0, &cqe);
		}
	}
	(void)hits;
}

static void shuffle(uint32_t *order, uint32_t n, uint64_t seed)
{
	for (uint32_t i = 0; i < n; i++)
		order[i] = i;
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(t_rand(&seed) % (i + 1)), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
}

static int hog(uint64_t bytes)
{
	uint64_t done = 0;

	while (done < bytes) {
		size_t chunk = 4 * MiB;
		uint8_t *p = mmap(NULL, chunk, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return 3;
		for (size_t o = 0; o < chunk; o += 4096)
			p[o] = 1;
		done += chunk;
	}
	return 0;
}

int main(void)
{
	struct dlcache_info info;
	struct dlcache_stats st0, st1;
	uint32_t *order = malloc(N2 * sizeof(uint32_t));
	uint64_t key[2], key2[2];
	long h, h2, ret;
	int dc, status;
	pid_t pid;

	t_time_limit(150);
	t_key("shrinker", key);
	t_key("shrinker-2", key2);
	buf = malloc(SZ);
	memset(buf, 0x3c, SZ);
	fd = t_open();
	if (t_get_info(fd, &info) < 0)
		FATAL("GET_INFO");
	if (!(info.supported & DLCACHE_FEAT_SHRINKER))
		FATAL("no DLCACHE_FEAT_SHRINKER");
	ret = t_set_capacity(fd, 256 * MiB, NULL);
	if (ret < 0)
		FATAL("SET_CAPACITY: %s", t_errname(ret));
	ret = t_ring_init(&r, fd, 8, 0);
	if (ret < 0)
		FATAL("ring: %s", t_errname(ret));

	/* 1. drop_caches */
	h = t_attach(fd, key, N, 0600, 0, NULL);
	if (h < 0)
		FATAL("ATTACH: %s", t_errname(h));
	shuffle(order, N, 1);
	CHECK_ERR(t_set_order(fd, (uint32_t)h, 0, order, N), 0, "SET_ORDER");
	fill(h, key, order, N);
	t_stats(fd, (uint32_t)h, &st0);
	CHECK_EQ(st0.used_bytes, (uint64_t)N * SZ, "used bytes after filling");
	dc = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (dc < 0 || write(dc, "2\n", 2) != 2)
		FATAL("echo 2 > /proc/sys/vm/drop_caches: %m");
	close(dc);
	t_stats(fd, (uint32_t)h, &st1);
	t_info("drop_caches: used %llu -> %llu MiB, shrinker evictions %llu",
	       (unsigned long long)(st0.used_bytes / MiB), (unsigned long long)(st1.used_bytes / MiB),
	       (unsigned long long)st1.global.shrinker_evictions);
	CHECK(st1.used_bytes <= st0.used_bytes / 2,
	      "drop_caches left %llu of %llu bytes", (unsigned long long)st1.used_bytes,
	      (unsigned long long)st0.used_bytes);
	CHECK(st1.dataset.shrinker_evictions > 0, "shrinker_evictions not counted");
	CHECK_EQ(st1.dataset.shrinker_evictions,
		 st0.dataset.cached_samples - st1.dataset.cached_samples,
		 "shrinker_evictions = samples gone");
	CHECK_EQ(st1.dataset.evictions - st0.dataset.evictions, st1.dataset.shrinker_evictions,
		 "evictions include the shrinker's");
	CHECK_EQ(st1.used_bytes, st1.dataset.cached_samples * SZ, "used = cached * size");
	check_prefix(h, key, order, N, st1.dataset.cached_samples, "after drop_caches");

	/* 2. memory pressure from a big anonymous allocation */
	CHECK_ERR(t_drop(fd, NULL, NULL), 0, "DROP");
	h2 = t_attach(fd, key2, N2, 0600, 0, NULL);
	if (h2 < 0)
		FATAL("ATTACH: %s", t_errname(h2));
	shuffle(order, N2, 2);
	CHECK_ERR(t_set_order(fd, (uint32_t)h2, 0, order, N2), 0, "SET_ORDER");
	fill(h2, key2, order, N2);
	t_stats(fd, (uint32_t)h2, &st0);
	CHECK_EQ(st0.used_bytes, (uint64_t)N2 * SZ, "used bytes after the second fill");
	{
		uint64_t avail = t_meminfo("MemAvailable");
		uint64_t misc = t_meminfo("KReclaimable") - t_meminfo("SReclaimable");
		/* Whatever the cache reports as reclaimable is already in MemAvailable. */
		uint64_t want = avail - (misc < avail ? misc : 0) + 128 * MiB;

		t_info("MemAvailable %llu MiB, misc reclaimable %llu MiB; the child takes %llu MiB",
		       (unsigned long long)(avail / MiB), (unsigned long long)(misc / MiB),
		       (unsigned long long)(want / MiB));
		pid = fork();
		if (pid < 0)
			FATAL("fork: %m");
		if (pid == 0)
			exit(hog(want));
		status = t_wait(pid, 120);
	}
	t_stats(fd, (uint32_t)h2, &st1);
	t_info("pressure: used %llu -> %llu MiB, shrinker evictions %llu",
	       (unsigned long long)(st0.used_bytes / MiB), (unsigned long long)(st1.used_bytes / MiB),
	       (unsigned long long)st1.dataset.shrinker_evictions);
	if (status == 128 + SIGKILL)
		FAIL("the memory hog was killed (OOM) instead of the cache shrinking");
	else
		CHECK_EQ(status, 0, "memory hog exit status");
	/* The guest has little else to reclaim (no disk, no swap). */
	CHECK(st0.used_bytes - st1.used_bytes >= 64 * MiB,
	      "under pressure the cache gave back only %llu MiB",
	      (unsigned long long)((st0.used_bytes - st1.used_bytes) / MiB));
	CHECK(st1.dataset.shrinker_evictions > 0, "no shrinker evictions under pressure");
	check_prefix(h2, key2, order, N2, st1.dataset.cached_samples, "after memory pressure");

	t_ring_unmap(&r);
	close(fd);
	return t_done();
}
