/* dlc-test: -m32 */
// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * off32: a 32-bit program (built with -m32, see run.sh) uses the module
 * through compat_ioctl: GET_INFO, ATTACH, SETUP_RING, both mmaps at the
 * ABI 2 offsets (DLCACHE_OFF_CQ_RING fits a 32-bit off_t; ABI 1's 1 << 32
 * did not), SET_ORDER with a 32-bit pointer, PUT and GET through ENTER,
 * STATS. The bytes must come back as they went in.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "dlc_test.h"

#define N 16
#define SZ 10000

int main(void)
{
	struct dlcache_info info;
	struct dlcache_attach a;
	struct dlcache_stats st;
	struct dlcache_cqe cqe;
	struct t_ring r;
	uint32_t ids[N];
	uint8_t *buf;
	uint64_t key[2];
	long h, ret;
	int fd;

	t_time_limit(60);
	if (sizeof(void *) != 4)
		FATAL("built as a %zu-bit program; run.sh should build it with -m32",
		      sizeof(void *) * 8);
	t_info("32-bit program, off_t of %zu bytes", sizeof(off_t));
	/* The offset must be expressible where off_t is 32 bits wide. */
	CHECK((off_t)DLCACHE_OFF_CQ_RING == (long long)DLCACHE_OFF_CQ_RING,
	      "DLCACHE_OFF_CQ_RING %#llx does not fit this off_t",
	      (unsigned long long)DLCACHE_OFF_CQ_RING);

	fd = t_open();
	ret = t_get_info(fd, &info);
	if (ret < 0)
		FATAL("GET_INFO through compat_ioctl: %s", t_errname(ret));
	CHECK_EQ(info.abi_version, DLCACHE_ABI_VERSION, "abi_version");
	t_key("off32", key);
	h = t_attach(fd, key, N, 0600, 0, &a);
	if (h < 0)
		FATAL("ATTACH through compat_ioctl: %s", t_errname(h));
	CHECK(a.result_flags & DLCACHE_ATTACH_CREATED, "ATTACH did not create");

	ret = t_ring_init(&r, fd, 8, 0);
	if (ret < 0)
		FATAL("SETUP_RING and the mmaps at %#llx and %#llx: %s",
		      (unsigned long long)DLCACHE_OFF_SQ_RING,
		      (unsigned long long)DLCACHE_OFF_CQ_RING, t_errname(ret));
	CHECK_EQ(*r.sq_entries, 8, "mapped SQ ring_entries");
	CHECK_EQ(*r.cq_entries, 16, "mapped CQ ring_entries");

	for (uint32_t i = 0; i < N; i++)
		ids[i] = N - 1 - i;
	CHECK_ERR(t_set_order(fd, (uint32_t)h, 1, ids, N), 0, "SET_ORDER with a 32-bit pointer");

	buf = malloc(SZ);
	if (!buf)
		FATAL("malloc");
	CHECK_EQ(t_nop(&r, 0x1122334455667788ULL, &cqe), 0, "NOP");
	for (uint32_t s = 0; s < N; s++) {
		ret = t_get(&r, (uint32_t)h, s, buf, SZ, &cqe);
		CHECK_ERR(ret, -ENOENT, "GET miss");
		CHECK(cqe.flags & DLCACHE_CQE_F_FILL, "GET miss of %u without F_FILL", s);
		t_pattern(buf, SZ - s, key[0], s);
		ret = t_put(&r, (uint32_t)h, s, buf, SZ - s, &cqe);
		CHECK_EQ(ret, SZ - s, "PUT");
		CHECK(cqe.flags & DLCACHE_CQE_F_CACHED, "PUT of %u not cached", s);
	}
	for (uint32_t s = 0; s < N; s++) {
		memset(buf, 0, SZ);
		ret = t_get(&r, (uint32_t)h, s, buf, SZ, &cqe);
		CHECK_EQ(ret, SZ - s, "GET hit");
		CHECK_EQ(cqe.size, SZ - s, "cqe.size");
		if (ret == (long)(SZ - s))
			t_pattern_ok(buf, SZ - s, key[0], s);
	}

	ret = t_stats(fd, (uint32_t)h, &st);
	CHECK_ERR(ret, 0, "STATS through compat_ioctl");
	CHECK_EQ(st.dataset.hits, N, "hits");
	CHECK_EQ(st.dataset.cached_samples, N, "cached samples");
	CHECK_EQ(st.ds_nsamples, N, "ds_nsamples");
	CHECK(st.ds_key[0] == key[0] && st.ds_key[1] == key[1], "ds_key");

	free(buf);
	t_ring_unmap(&r);
	CHECK_ERR(t_detach(fd, (uint32_t)h), 0, "DETACH");
	close(fd);
	return t_done();
}
