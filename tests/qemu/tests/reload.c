// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * reload: rmmod and insmod.
 *
 * - rmmod fails (EAGAIN/EWOULDBLOCK, or EBUSY) while an fd is open, and
 *   while a ring stays mapped after the fd is closed; it succeeds once the
 *   mapping is gone, and /dev/dlcache disappears.
 * - insmod with a bad parameter fails cleanly; insmod capacity_mb=3 gives
 *   a capacity of 3 MiB; the node comes back; data sets do not survive.
 * - Memory: rmmod gives back the 32 MiB that cached samples held (in an
 *   idle data set once its session closed).
 * - A smoke test of the reloaded module, which stays loaded for /init.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "dlc_test.h"

#define MiB (1ULL << 20)

static bool node_exists(bool want)
{
	struct stat st;

	for (int i = 0; i < 100; i++) {
		if ((stat(DLCACHE_DEVICE, &st) == 0) == want)
			return true;
		t_msleep(20);
	}
	return false;
}

/*
 * Bytes on the per-cpu free lists (the "count:" lines of /proc/zoneinfo):
 * free, but not in MemFree. Since 6.7 those lists grow under a burst of
 * frees (pcp high auto-tuning), so on 6.12 most of the 32 MiB that rmmod
 * frees lands there and MemFree alone does not move.
 */
static uint64_t pcp_free_bytes(void)
{
	FILE *f = fopen("/proc/zoneinfo", "r");
	uint64_t pages = 0;
	unsigned long n;
	char line[256];

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " count: %lu", &n) == 1)
			pages += n;
	fclose(f);
	return pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* MemFree (plus the per-cpu free lists) once deferred frees had a moment.
 * Only the page cache is dropped: "2" would run the shrinkers, and
 * dlcache's among them. */
static uint64_t settled_memfree(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);

	if (fd >= 0) {
		if (write(fd, "1\n", 2) != 2)
			FAIL("drop_caches: %m");
		close(fd);
	}
	sync();
	t_msleep(300);
	return t_meminfo("MemFree") + pcp_free_bytes();
}

static bool busy(long ret)
{
	return ret == -EAGAIN || ret == -EBUSY;
}

static void smoke(int fd, const char *when)
{
	struct dlcache_cqe cqe;
	struct t_ring r;
	uint64_t key[2];
	uint8_t buf[5000];
	long h, ret;

	t_key("reload-smoke", key);
	h = t_attach(fd, key, 4, 0600, 0, NULL);
	if (h < 0) {
		FAIL("%s: ATTACH %s", when, t_errname(h));
		return;
	}
	ret = t_ring_init(&r, fd, 4, 0);
	if (ret < 0) {
		FAIL("%s: ring %s", when, t_errname(ret));
		return;
	}
	ret = t_get(&r, (uint32_t)h, 1, buf, sizeof(buf), &cqe);
	CHECK_ERR(ret, -ENOENT, "smoke GET miss");
	t_pattern(buf, sizeof(buf), key[0], 1);
	ret = t_put(&r, (uint32_t)h, 1, buf, sizeof(buf), &cqe);
	CHECK_EQ(ret, sizeof(buf), "smoke PUT");
	memset(buf, 0, sizeof(buf));
	ret = t_get(&r, (uint32_t)h, 1, buf, sizeof(buf), &cqe);
	CHECK_EQ(ret, sizeof(buf), "smoke GET hit");
	t_pattern_ok(buf, sizeof(buf), key[0], 1);
	t_ring_unmap(&r);
}

int main(void)
{
	struct dlcache_info info;
	struct t_ring r;
	uint64_t key[2], before, filled, after;
	uint8_t *buf;
	long ret, h;
	int fd;

	t_time_limit(60);
	if (access(T_KO, R_OK))
		t_skip("no %s (runs in the QEMU guest)", T_KO);
	t_key("reload", key);

	/* Busy while an fd is open. */
	fd = t_open();
	smoke(fd, "first module");
	ret = t_rmmod();
	CHECK(busy(ret), "rmmod with an open fd: %s, want -EAGAIN or -EBUSY", t_errname(ret));
	if (ret == 0)
		FATAL("the module went away under an open fd");

	/* Busy while the ring is mapped, even with the fd closed. */
	ret = t_ring_init(&r, t_open(), 4, 0);
	if (ret < 0)
		FATAL("ring: %s", t_errname(ret));
	close(r.fd);
	close(fd);
	ret = t_rmmod();
	CHECK(busy(ret), "rmmod with a ring mapped: %s, want -EAGAIN or -EBUSY", t_errname(ret));
	if (ret == 0)
		FATAL("the module went away under a mapped ring");
	t_ring_unmap(&r);

	/* Memory held by 32 MiB of samples. */
	fd = t_open();
	CHECK_ERR(t_set_capacity(fd, 64 * MiB, NULL), 0, "SET_CAPACITY");
	before = settled_memfree();
	h = t_attach(fd, key, 512, 0600, 0, NULL);
	if (h < 0)
		FATAL("ATTACH: %s", t_errname(h));
	ret = t_ring_init(&r, fd, 4, 0);
	if (ret < 0)
		FATAL("ring: %s", t_errname(ret));
	buf = malloc(64 << 10);
	memset(buf, 0x11, 64 << 10);
	for (uint32_t s = 0; s < 512; s++) {
		struct dlcache_cqe cqe;

		ret = t_put(&r, (uint32_t)h, s, buf, 64 << 10, &cqe);
		if (ret != 64 << 10) {
			FAIL("PUT %u: %s", s, t_errname(ret));
			break;
		}
	}
	filled = settled_memfree();
	t_ring_unmap(&r);
	close(fd);
	/* Detached, the data set stays cached (idle) until rmmod frees it. */
	fd = t_open();
	{
		struct dlcache_stats st;

		CHECK_ERR(t_stats(fd, 0, &st), 0, "STATS");
		CHECK(st.used_bytes >= 32 * MiB, "idle data set holds %llu bytes, want 32 MiB",
		      (unsigned long long)st.used_bytes);
	}
	close(fd);
	ret = t_rmmod();
	CHECK_ERR(ret, 0, "rmmod with nothing open");
	CHECK(node_exists(false), "%s still there 2 s after rmmod", DLCACHE_DEVICE);
	after = settled_memfree();
	t_info("MemFree: %llu MiB, %llu MiB with 32 MiB cached, %llu MiB after rmmod",
	       (unsigned long long)(before / MiB), (unsigned long long)(filled / MiB),
	       (unsigned long long)(after / MiB));
	/* MemFree is noisy (deferred frees of earlier tests, per-cpu lists):
	 * what counts is that rmmod gives the 32 MiB back. */
	CHECK(after >= filled + 28 * MiB, "rmmod gave back only %lld MiB of 32 MiB cached",
	      (long long)(after - filled) / (long long)MiB);
	CHECK(after + 4 * MiB >= before, "MemFree after rmmod %llu MiB, before filling %llu MiB",
	      (unsigned long long)(after / MiB), (unsigned long long)(before / MiB));
	ret = t_rmmod();
	CHECK_ERR(ret, -ENOENT, "rmmod of an unloaded module");

	/* Bad parameters. */
	ret = t_insmod("capacity_mb=banana");
	CHECK(ret == -EINVAL, "insmod capacity_mb=banana: %s, want -EINVAL", t_errname(ret));
	if (ret == 0)
		t_rmmod();

	/* Parameters and a fresh state. */
	ret = t_insmod("capacity_mb=3");
	if (ret < 0)
		FATAL("insmod capacity_mb=3: %s", t_errname(ret));
	CHECK(node_exists(true), "%s missing 2 s after insmod", DLCACHE_DEVICE);
	fd = t_open();
	CHECK_ERR(t_get_info(fd, &info), 0, "GET_INFO after insmod");
	CHECK_EQ(info.capacity_bytes, 3 * MiB, "capacity with capacity_mb=3");
	{
		char val[32] = "";
		int pf = open("/sys/module/dlcache/parameters/capacity_mb", O_RDONLY);

		if (pf >= 0) {
			ssize_t n = read(pf, val, sizeof(val) - 1);

			close(pf);
			if (n > 0)
				CHECK(atoi(val) == 3, "parameters/capacity_mb reads %s", val);
		}
	}
	ret = t_attach(fd, key, 512, 0600, DLCACHE_ATTACH_F_NOCREATE, NULL);
	CHECK_ERR(ret, -ENOENT, "a data set surviving rmmod");
	smoke(fd, "reloaded module");
	close(fd);

	/* Once more, quickly, and leave it loaded. */
	CHECK_ERR(t_rmmod(), 0, "second rmmod");
	CHECK(node_exists(false), "node still there after the second rmmod");
	CHECK_ERR(t_insmod(""), 0, "third insmod");
	CHECK(node_exists(true), "node missing after the third insmod");
	fd = t_open();
	smoke(fd, "third module");
	close(fd);
	free(buf);
	return t_done();
}
