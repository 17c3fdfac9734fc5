// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * idle: detached data sets stay cached (DLCACHE_FEAT_IDLE, module
 * parameter idle_keep_s).
 * - The last DETACH leaves the data set listed, idle (DLCACHE_DS_F_IDLE),
 *   with its samples; the same key and owner ATTACHes it again and GETs
 *   hit; another owner with the same key gets a data set of its own.
 * - idle_keep_s=1 frees an idle set within a few seconds; idle_keep_s=0
 *   frees at the last detach (the behaviour up to ABI 2).
 * - Idle sets give way: a creation past uid_max_datasets frees that
 *   owner's oldest idle set (never another owner's), and one past
 *   max_datasets (-ENOSPC) any idle set; a full cache takes room from an
 *   idle set before an attached one; a lowered capacity empties idle
 *   sets first.
 * - DROP frees idle sets; rmmod with idle sets succeeds.
 * Owners are switched with setfsuid(): root keeps CAP_SYS_ADMIN, so
 * STATS lists every data set.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <unistd.h>

#include "dlc_test.h"

#define N 64
#define SZ 4096
#define UID_A 5401
#define UID_B 5402

static uint8_t buf[SZ];

static void key_of(const char *tag, unsigned i, uint64_t k[2])
{
	char s[64];

	snprintf(s, sizeof(s), "idle-%s-%u", tag, i);
	t_key(s, k);
}

static void as_owner(uid_t uid)
{
	setfsuid(uid);
	if ((uid_t)setfsuid(-1) != uid)
		FATAL("setfsuid(%u) did not take", uid);
}

/* The STATS of data set (@key, @uid) from the module's list: 0 or -ENOENT. */
static long find_ds(int fd, const uint64_t key[2], uid_t uid, struct dlcache_stats *out)
{
	struct dlcache_stats st;

	if (out)
		memset(out, 0, sizeof(*out));
	for (uint32_t i = 0; i < 256; i++) {
		memset(&st, 0, sizeof(st));
		st.handle = i;
		st.flags = DLCACHE_STATS_F_DATASET | DLCACHE_STATS_F_INDEX;
		long ret = t_ioctl(fd, DLCACHE_IOC_STATS, &st);

		if (ret < 0)
			return ret;
		if (st.ds_key[0] == key[0] && st.ds_key[1] == key[1] && st.ds_owner_uid == uid) {
			if (out)
				*out = st;
			return 0;
		}
	}
	return -ENOENT;
}

static uint32_t ndatasets(int fd)
{
	struct dlcache_stats st;

	CHECK_ERR(t_stats(fd, 0, &st), 0, "STATS");
	return st.ndatasets;
}

/* PUTs samples [0, n) of handle @h; the bytes follow key[0]. */
static void fill(struct t_ring *r, uint32_t h, const uint64_t key[2], uint32_t n)
{
	struct dlcache_cqe cqe;

	for (uint32_t s = 0; s < n; s++) {
		t_pattern(buf, SZ, key[0], s);
		CHECK_EQ(t_put(r, h, s, buf, SZ, &cqe), SZ, "PUT");
	}
}

/* Detach, the set is idle with its samples; reattach, GETs hit. */
static void reattach(int fd, struct t_ring *r)
{
	struct dlcache_attach a;
	struct dlcache_stats st;
	struct dlcache_cqe cqe;
	uint64_t k[2];
	long h, ret;

	as_owner(UID_A);
	key_of("warm", 0, k);
	h = t_attach(fd, k, N, 0600, 0, NULL);
	if (h < 0)
		FATAL("ATTACH: %s", t_errname(h));
	fill(r, h, k, N);
	CHECK_ERR(t_detach(fd, h), 0, "DETACH");

	ret = find_ds(fd, k, UID_A, &st);
	CHECK_ERR(ret, 0, "the detached data set is still listed");
	CHECK(st.ds_flags & DLCACHE_DS_F_IDLE, "detached data set not idle (ds_flags %#x)",
	      st.ds_flags);
	CHECK_EQ(st.ds_attached, 0, "attachments of the idle set");
	CHECK_EQ(st.dataset.cached_samples, N, "samples of the idle set");

	/* Another owner with the same key: its own, new, empty data set. */
	as_owner(UID_B);
	h = t_attach(fd, k, N, 0600, 0, &a);
	CHECK(h >= 1, "B's ATTACH of the key: %s", t_errname(h));
	if (h >= 1) {
		CHECK(a.result_flags & DLCACHE_ATTACH_CREATED, "B got A's idle set");
		CHECK_EQ(a.owner_uid, UID_B, "owner of B's data set");
		CHECK_ERR(t_get(r, h, 0, buf, SZ, &cqe), -ENOENT, "B's GET: a miss");
		CHECK_ERR(t_abort(r, h, 0, 0, &cqe), 0, "B's ABORT");
		CHECK_ERR(t_detach(fd, h), 0, "B's DETACH");
	}
	ret = find_ds(fd, k, UID_A, &st);
	CHECK(ret == 0 && (st.ds_flags & DLCACHE_DS_F_IDLE) &&
	      st.dataset.cached_samples == N, "A's idle set changed by B's ATTACH");

	/* The same key and owner: the warm cache, attached, not idle. */
	as_owner(UID_A);
	h = t_attach(fd, k, N, 0600, 0, &a);
	if (h < 0)
		FATAL("reATTACH: %s", t_errname(h));
	CHECK(!(a.result_flags & DLCACHE_ATTACH_CREATED), "reATTACH created a data set");
	CHECK_ERR(t_stats(fd, h, &st), 0, "STATS of the reattached set");
	CHECK(!(st.ds_flags & DLCACHE_DS_F_IDLE), "reattached set still idle");
	CHECK_EQ(st.ds_idle_s, 0, "ds_idle_s of an attached set");
	for (uint32_t s = 0; s < N; s++) {
		memset(buf, 0, SZ);
		ret = t_get(r, h, s, buf, SZ, &cqe);
		CHECK_EQ(ret, SZ, "GET after reattaching");
		if (ret == SZ && !t_pattern_ok(buf, SZ, k[0], s))
			FAIL("sample %u: wrong bytes after reattaching", s);
	}
	CHECK_ERR(t_stats(fd, h, &st), 0, "STATS");
	CHECK_EQ(st.dataset.hits, N, "hits after reattaching");
	CHECK_ERR(t_detach(fd, h), 0, "DETACH");

	/* Seconds idle are counted. */
	t_msleep(1100);
	ret = find_ds(fd, k, UID_A, &st);
	CHECK(ret == 0 && st.ds_idle_s >= 1, "ds_idle_s %u after 1.1 s idle", st.ds_idle_s);
	as_owner(0);
}

/* idle_keep_s=1 frees within a bound; idle_keep_s=0 frees at detach. */
static void timeout(int fd)
{
	uint64_t k[2];
	uint64_t t0;
	long h, ret;

	key_of("timeout", 0, k);
	CHECK_ERR(t_param_set("idle_keep_s", 1), 0, "idle_keep_s=1");
	h = t_attach(fd, k, N, 0600, 0, NULL);
	if (h < 0)
		FATAL("ATTACH: %s", t_errname(h));
	CHECK_ERR(t_detach(fd, h), 0, "DETACH");
	t0 = t_now_ms();
	while ((ret = find_ds(fd, k, 0, NULL)) == 0 && t_now_ms() - t0 < 10000)
		t_msleep(100);
	CHECK_ERR(ret, -ENOENT, "idle set 10 s after its detach with idle_keep_s=1");
	t_info("idle set freed after %llu ms (idle_keep_s=1)",
	       (unsigned long long)(t_now_ms() - t0));
	CHECK(t_now_ms() - t0 >= 900, "idle set freed after %llu ms, before idle_keep_s=1",
	      (unsigned long long)(t_now_ms() - t0));

	/* Lowering to 0 frees idle sets at the next check, and at detach. */
	CHECK_ERR(t_param_set("idle_keep_s", 600), 0, "idle_keep_s=600");
	h = t_attach(fd, k, N, 0600, 0, NULL);
	CHECK_ERR(t_detach(fd, h), 0, "DETACH");
	CHECK_ERR(find_ds(fd, k, 0, NULL), 0, "idle set with idle_keep_s=600");
	CHECK_ERR(t_param_set("idle_keep_s", 0), 0, "idle_keep_s=0");
	t0 = t_now_ms();
	while ((ret = find_ds(fd, k, 0, NULL)) == 0 && t_now_ms() - t0 < 5000)
		t_msleep(50);
	CHECK_ERR(ret, -ENOENT, "idle set after lowering idle_keep_s to 0");
	h = t_attach(fd, k, N, 0600, 0, NULL);
	CHECK_ERR(t_detach(fd, h), 0, "DETACH");
	CHECK_ERR(find_ds(fd, k, 0, NULL), -ENOENT, "data set after its detach with idle_keep_s=0");
	CHECK_ERR(t_param_set("idle_keep_s", 600), 0, "idle_keep_s=600");
}

/* uid_max_datasets: the owner's oldest idle set gives way, no other's. */
static void quota(int fd)
{
	uint64_t a[5][2], b[2];
	long h[5] = { 0 }, hb;

	CHECK_ERR(t_param_set("uid_max_datasets", 2), 0, "uid_max_datasets=2");
	for (int i = 0; i < 5; i++)
		key_of("quota-a", i, a[i]);
	key_of("quota-b", 0, b);

	as_owner(UID_A);
	h[0] = t_attach(fd, a[0], N, 0600, 0, NULL);
	h[1] = t_attach(fd, a[1], N, 0600, 0, NULL);
	CHECK(h[0] >= 1 && h[1] >= 1, "A's two data sets: %s %s", t_errname(h[0]),
	      t_errname(h[1]));
	CHECK_ERR(t_detach(fd, h[0]), 0, "DETACH a0");
	t_msleep(20);
	CHECK_ERR(t_detach(fd, h[1]), 0, "DETACH a1");
	as_owner(UID_B);
	hb = t_attach(fd, b, N, 0600, 0, NULL);
	CHECK(hb >= 1, "B's data set: %s", t_errname(hb));
	CHECK_ERR(t_detach(fd, hb), 0, "DETACH b0");

	/* A at its limit with two idle sets: a0, the oldest, gives way. */
	as_owner(UID_A);
	h[2] = t_attach(fd, a[2], N, 0600, 0, NULL);
	CHECK(h[2] >= 1, "A's creation past uid_max_datasets with idle sets: %s",
	      t_errname(h[2]));
	CHECK_ERR(find_ds(fd, a[0], UID_A, NULL), -ENOENT, "A's oldest idle set a0");
	CHECK_ERR(find_ds(fd, a[1], UID_A, NULL), 0, "A's newer idle set a1");
	h[3] = t_attach(fd, a[3], N, 0600, 0, NULL);
	CHECK(h[3] >= 1, "A's creation with one idle set left: %s", t_errname(h[3]));
	CHECK_ERR(find_ds(fd, a[1], UID_A, NULL), -ENOENT, "A's idle set a1");
	/* Nothing of A's idle: -EDQUOT, and B's idle set stays. */
	h[4] = t_attach(fd, a[4], N, 0600, 0, NULL);
	CHECK_ERR(h[4], -EDQUOT, "A's creation past its limit, its sets attached");
	CHECK_ERR(find_ds(fd, b, UID_B, NULL), 0, "B's idle set after A's creations");
	t_detach(fd, h[2]);
	t_detach(fd, h[3]);
	as_owner(0);
	CHECK_ERR(t_param_set("uid_max_datasets", 64), 0, "uid_max_datasets=64");
}

/* max_datasets (-ENOSPC): an idle set of any owner gives way. */
static void slots(int fd, uint32_t max)
{
	uint64_t k[2];
	long h, ret = 0;
	uint32_t n = ndatasets(fd), i, made = 0;
	int fds[2] = { t_open(), t_open() };

	/* B's idle set from quota() is among them, and others, idle too. */
	as_owner(UID_A);
	for (i = 0; n + made < max; i++) {
		key_of("slot", i, k);
		h = t_attach(fds[made / 60], k, 4, 0600, 0, NULL);
		if (h < 0) {
			FAIL("data set %u of %u: %s", n + made + 1, max, t_errname(h));
			break;
		}
		made++;
	}
	CHECK_EQ(ndatasets(fd), max, "data sets listed");
	key_of("slot-extra", 0, k);
	h = t_attach(fds[1], k, 4, 0600, 0, NULL);
	CHECK(h >= 1, "creation at max_datasets with an idle set: %s", t_errname(h));
	/* Now idle ones are gone one by one, then -ENOSPC. */
	for (i = 0; i < max; i++) {
		key_of("slot-extra", i + 1, k);
		ret = t_attach(fds[1], k, 4, 0600, 0, NULL);
		if (ret < 0)
			break;
	}
	CHECK_ERR(ret, -ENOSPC, "creation at max_datasets, nothing idle");
	CHECK_EQ(ndatasets(fd), max, "data sets listed at -ENOSPC");
	as_owner(0);
	close(fds[0]);
	close(fds[1]);
}

/* PUTs @n samples into a new data set @tag; returns the handle. */
static long filled(int fd, struct t_ring *r, const char *tag, uint32_t n)
{
	uint64_t k[2];
	long h;

	key_of(tag, 0, k);
	h = t_attach(fd, k, 256, 0600, 0, NULL);
	if (h < 0)
		FATAL("ATTACH %s: %s", tag, t_errname(h));
	fill(r, h, k, n);
	return h;
}

static uint64_t cached(int fd, const char *tag)
{
	struct dlcache_stats st;
	uint64_t k[2];

	key_of(tag, 0, k);
	if (find_ds(fd, k, 0, &st))
		return ~0ULL;
	return st.dataset.cached_samples;
}

/* A full cache takes room from an idle set; shrinking empties it first. */
static void give_way(int fd, struct t_ring *r)
{
	struct dlcache_stats st;
	uint64_t dropped;
	long hx, hi, hy;

	CHECK_ERR(t_drop(fd, NULL, NULL), 0, "DROP all");
	/* 256 pages: X (attached) 128, I (idle) 96, then Y 64 more. */
	CHECK_ERR(t_set_capacity(fd, 256 * SZ, NULL), 0, "SET_CAPACITY 1 MiB");
	hx = filled(fd, r, "x", 128);
	hi = filled(fd, r, "i", 96);
	CHECK_EQ(cached(fd, "x"), 128, "X's samples");
	CHECK_EQ(cached(fd, "i"), 96, "I's samples");
	CHECK_ERR(t_detach(fd, hi), 0, "DETACH I");
	hy = filled(fd, r, "y", 64);
	t_info("full cache: X %llu I %llu Y %llu samples",
	       (unsigned long long)cached(fd, "x"), (unsigned long long)cached(fd, "i"),
	       (unsigned long long)cached(fd, "y"));
	CHECK_EQ(cached(fd, "y"), 64, "Y's samples");
	CHECK_EQ(cached(fd, "x"), 128, "attached X's samples after Y filled a full cache");
	CHECK_EQ(cached(fd, "i"), 64, "idle I's samples after Y filled a full cache");

	/* Lowering the capacity by 48 pages: I gives them, not X or Y. */
	CHECK_ERR(t_set_capacity(fd, 208 * SZ, NULL), 0, "SET_CAPACITY 208 pages");
	CHECK_EQ(cached(fd, "x"), 128, "X's samples after lowering the capacity");
	CHECK_EQ(cached(fd, "y"), 64, "Y's samples after lowering the capacity");
	CHECK_EQ(cached(fd, "i"), 16, "idle I's samples after lowering the capacity");

	/* DROP: the idle set goes entirely, attached ones lose samples. */
	CHECK_ERR(t_drop(fd, NULL, &dropped), 0, "DROP all");
	CHECK_EQ(dropped, (128 + 64 + 16) * SZ, "bytes dropped");
	CHECK_EQ(cached(fd, "i"), ~0ULL, "idle I after DROP");
	CHECK_EQ(cached(fd, "x"), 0, "X's samples after DROP");
	CHECK_ERR(t_stats(fd, hx, &st), 0, "STATS of X after DROP");
	CHECK_ERR(t_detach(fd, hy), 0, "DETACH Y");
	CHECK_ERR(t_drop(fd, (uint64_t[2]){ 0, 0 }, NULL), -ENOENT, "DROP of an unknown key");
	{
		uint64_t ky[2];

		key_of("y", 0, ky);
		/* Emptied by the DROP above: no bytes, but it goes. */
		CHECK_ERR(t_drop(fd, ky, &dropped), 0, "DROP of idle Y by key");
		CHECK_EQ(dropped, 0, "bytes of emptied idle Y dropped");
		CHECK_EQ(cached(fd, "y"), ~0ULL, "idle Y after DROP by key");
	}
	CHECK_ERR(t_detach(fd, hx), 0, "DETACH X");
	CHECK_ERR(t_set_capacity(fd, 64 << 20, NULL), 0, "SET_CAPACITY 64 MiB");
}

int main(void)
{
	struct dlcache_info info;
	struct t_ring r;
	uint64_t k[2];
	long h, ret;
	int fd, fd2;

	t_time_limit(120);
	if (getuid() != 0)
		t_skip("needs root to switch owners");
	fd = t_open();
	if (t_get_info(fd, &info) < 0)
		FATAL("GET_INFO");
	CHECK(info.supported & DLCACHE_FEAT_IDLE, "DLCACHE_FEAT_IDLE not supported");
	ret = t_ring_init(&r, fd, 8, 0);
	if (ret < 0)
		FATAL("ring: %s", t_errname(ret));
	CHECK_ERR(t_set_capacity(fd, 64 << 20, NULL), 0, "SET_CAPACITY 64 MiB");
	CHECK_ERR(t_param_set("idle_keep_s", 600), 0, "idle_keep_s=600");

	reattach(fd, &r);
	timeout(fd);
	quota(fd);
	slots(fd, info.max_datasets);
	CHECK_ERR(t_drop(fd, NULL, NULL), 0, "DROP all");
	CHECK_EQ(ndatasets(fd), 0, "data sets after DROP of idle sets only");
	give_way(fd, &r);

	/* rmmod with an idle set holding samples, and insmod again. */
	fd2 = t_open();
	struct t_ring r2;

	CHECK_ERR(t_ring_init(&r2, fd2, 8, 0), 0, "ring 2");
	key_of("rmmod", 0, k);
	h = t_attach(fd2, k, N, 0600, 0, NULL);
	if (h >= 1)
		fill(&r2, h, k, N);
	t_ring_unmap(&r2);
	close(fd2);
	t_ring_unmap(&r);
	CHECK_ERR(find_ds(fd, k, 0, NULL), 0, "idle set before rmmod");
	close(fd);
	ret = t_rmmod();
	for (int i = 0; i < 50 && (ret == -EAGAIN || ret == -EBUSY); i++) {
		t_msleep(100);
		ret = t_rmmod();
	}
	CHECK_ERR(ret, 0, "rmmod with an idle data set");
	CHECK_ERR(t_insmod(""), 0, "insmod after");
	return t_done();
}
