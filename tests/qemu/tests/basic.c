// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * basic: GET_INFO, ATTACH, ring setup, NOP, miss then fill then hit, the
 * bytes back equal the bytes put for sizes from 1 byte over page boundaries
 * to the maximum (and one over it is refused), short GET buffers, ABORT,
 * batches, a full CQ, poll(), STATS agreeing with what was done, DETACH,
 * and a data set outliving the fd that filled it.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "dlc_test.h"

#define NSAMPLES 64
#define PAGE_ROUND(x) (((uint64_t)(x) + 4095) & ~4095ULL)

static uint64_t key[2];

struct expect {
	uint64_t hits, misses, inserts, cached, used;
};

static void check_stats(int fd, uint32_t h, const struct expect *e, const char *when)
{
	struct dlcache_stats st;
	long ret = t_stats(fd, h, &st);

	if (ret < 0) {
		FAIL("%s: STATS: %s", when, t_errname(ret));
		return;
	}
	if (st.dataset.hits != e->hits || st.dataset.misses != e->misses ||
	    st.dataset.inserts != e->inserts || st.dataset.cached_samples != e->cached ||
	    st.dataset.used_bytes != e->used)
		FAIL("%s: data set stats hits/misses/inserts/cached/used %llu/%llu/%llu/%llu/%llu, "
		     "want %llu/%llu/%llu/%llu/%llu", when,
		     (unsigned long long)st.dataset.hits, (unsigned long long)st.dataset.misses,
		     (unsigned long long)st.dataset.inserts,
		     (unsigned long long)st.dataset.cached_samples,
		     (unsigned long long)st.dataset.used_bytes,
		     (unsigned long long)e->hits, (unsigned long long)e->misses,
		     (unsigned long long)e->inserts, (unsigned long long)e->cached,
		     (unsigned long long)e->used);
	/* This test is alone with a freshly loaded module. */
	if (st.global.hits != e->hits || st.global.misses != e->misses ||
	    st.used_bytes != e->used || st.global.used_bytes != e->used)
		FAIL("%s: global stats hits/misses/used/used %llu/%llu/%llu/%llu, want %llu/%llu/%llu",
		     when, (unsigned long long)st.global.hits,
		     (unsigned long long)st.global.misses, (unsigned long long)st.used_bytes,
		     (unsigned long long)st.global.used_bytes, (unsigned long long)e->hits,
		     (unsigned long long)e->misses, (unsigned long long)e->used);
	if (st.ndatasets != 1)
		FAIL("%s: ndatasets %u, want 1", when, st.ndatasets);
	if (st.ds_key[0] != key[0] || st.ds_key[1] != key[1] || st.ds_nsamples != NSAMPLES)
		FAIL("%s: STATS names another data set", when);
	if (st.dataset.fills_inflight != 0)
		FAIL("%s: fills_inflight %llu, want 0", when,
		     (unsigned long long)st.dataset.fills_inflight);
}

/* /sys/kernel/debug/dlcache/stats agrees with STATS. */
static void check_debugfs(const struct expect *e)
{
	FILE *f = fopen("/sys/kernel/debug/dlcache/stats", "r");
	char name[128];
	unsigned long long v;
	int seen = 0;

	if (!f) {
		FAIL("open /sys/kernel/debug/dlcache/stats: %m");
		return;
	}
	while (fscanf(f, "%127s %llu", name, &v) == 2) {
		if (!strcmp(name, "hits")) {
			CHECK_EQ(v, e->hits, "debugfs hits");
			seen++;
		} else if (!strcmp(name, "misses")) {
			CHECK_EQ(v, e->misses, "debugfs misses");
			seen++;
		} else if (!strcmp(name, "used_bytes")) {
			CHECK_EQ(v, e->used, "debugfs used_bytes");
			seen++;
		} else if (!strcmp(name, "cached_samples")) {
			CHECK_EQ(v, e->cached, "debugfs cached_samples");
			seen++;
		} else if (!strcmp(name, "datasets")) {
			CHECK_EQ(v, 1, "debugfs datasets");
			seen++;
		}
	}
	fclose(f);
	CHECK_EQ(seen, 5, "debugfs lines hits, misses, used_bytes, cached_samples, datasets");
}

int main(void)
{
	struct dlcache_info info;
	struct dlcache_attach a;
	struct dlcache_cqe cqe;
	struct t_ring r;
	struct stat stt;
	struct expect e = { 0 };
	uint64_t want_feat = DLCACHE_FEAT_RING | DLCACHE_FEAT_POLL |
			     DLCACHE_FEAT_FILL_WAIT | DLCACHE_FEAT_SHRINKER |
			     DLCACHE_FEAT_OWNER;
	uint32_t sizes[16], nsizes = 0, i, maxsz, h, h2;
	uint8_t *buf, *page;
	size_t bufsz;
	long ret;
	int fd, fd2;

	t_time_limit(60);
	t_key("basic", key);

	if (stat(DLCACHE_DEVICE, &stt) < 0)
		FATAL("stat %s: %m", DLCACHE_DEVICE);
	CHECK(S_ISCHR(stt.st_mode), "%s is not a character device", DLCACHE_DEVICE);
	fd = t_open_raw();

	/* GET_INFO: the first of the session; idle retention asked (below). */
	memset(&info, 0, sizeof(info));
	info.features = want_feat | DLCACHE_FEAT_IDLE | (1ULL << 63);
	ret = t_ioctl(fd, DLCACHE_IOC_GET_INFO, &info);
	if (ret < 0)
		FATAL("GET_INFO: %s", t_errname(ret));
	CHECK_EQ(info.abi_version, DLCACHE_ABI_VERSION, "abi_version");
	CHECK(info.abi_version >= 2, "abi_version %u (ABI 2 or later: owner namespace, CQ offset)", info.abi_version);
	CHECK((info.supported & want_feat) == want_feat,
	      "supported %#llx lacks one of RING|POLL|FILL_WAIT|SHRINKER|OWNER",
	      (unsigned long long)info.supported);
	CHECK_EQ(info.features, (want_feat | DLCACHE_FEAT_IDLE) & info.supported,
		 "features = wanted & supported");
	CHECK(!(info.supported & (1ULL << 63)), "unknown feature bit 63 reported as supported");
	CHECK(info.max_sample_size >= 65536, "max_sample_size %u is tiny", info.max_sample_size);
	CHECK(info.max_samples >= NSAMPLES, "max_samples %u", info.max_samples);
	CHECK(info.max_ring_entries >= 16, "max_ring_entries %u", info.max_ring_entries);
	CHECK(info.max_datasets >= 1 && info.max_handles >= 1 && info.max_fills >= 1 &&
	      info.max_order_len >= NSAMPLES, "a limit of GET_INFO is zero or tiny");
	CHECK(info.capacity_bytes > 0, "capacity 0 after insmod");
	CHECK(info.resv0 == 0 && !info.reserved[0] && !info.reserved[1] && !info.reserved[2],
	      "GET_INFO reserved fields not zero");
	maxsz = info.max_sample_size;

	/* Room for every size below, twice the maximum at most. */
	if (info.capacity_bytes < 2ULL * maxsz + (4 << 20)) {
		ret = t_set_capacity(fd, 2ULL * maxsz + (4 << 20), NULL);
		if (ret < 0)
			FATAL("SET_CAPACITY as root: %s", t_errname(ret));
	}

	/* ATTACH creates, a second ATTACH finds it. */
	ret = t_attach(fd, key, NSAMPLES, 0600, 0, &a);
	if (ret < 0)
		FATAL("ATTACH: %s", t_errname(ret));
	h = (uint32_t)ret;
	CHECK(h >= 1, "handle %u", h);
	CHECK_EQ(a.result_flags, DLCACHE_ATTACH_CREATED | DLCACHE_ATTACH_MAY_READ |
		 DLCACHE_ATTACH_MAY_WRITE, "result_flags of the creating ATTACH");
	CHECK_EQ(a.mode, 0600, "mode");
	CHECK_EQ(a.owner_uid, 0, "owner_uid");
	CHECK(a.window >= NSAMPLES && a.lookahead > 0, "window %u lookahead %u", a.window,
	      a.lookahead);
	fd2 = t_open();
	/* Another mode than the data set's is refused, not ignored. */
	ret = t_attach(fd2, key, NSAMPLES, 0644, 0, &a);
	CHECK_ERR(ret, -EEXIST, "second ATTACH asking another mode");
	ret = t_attach(fd2, key, NSAMPLES, 0, 0, &a);
	CHECK(ret >= 1, "second ATTACH: %s", t_errname(ret));
	CHECK(!(a.result_flags & DLCACHE_ATTACH_CREATED), "second ATTACH says CREATED");
	CHECK_EQ(a.mode, 0600, "mode seen by the second ATTACH (0: 0600)");
	ret = t_attach(fd2, key, NSAMPLES + 1, 0600, 0, NULL);
	CHECK_ERR(ret, -EINVAL, "ATTACH with another sample count");
	ret = t_attach(fd2, key, NSAMPLES, 0600, DLCACHE_ATTACH_F_EXCL, NULL);
	CHECK_ERR(ret, -EEXIST, "ATTACH F_EXCL of an existing data set");
	{
		uint64_t other[2];

		t_key("basic-missing", other);
		ret = t_attach(fd2, other, NSAMPLES, 0600, DLCACHE_ATTACH_F_NOCREATE, NULL);
		CHECK_ERR(ret, -ENOENT, "ATTACH F_NOCREATE of a missing data set");
		/* F_OWNER: the owner is input; another's missing data set is never made. */
		ret = t_attach_owner(fd2, other, NSAMPLES, 4242, 0, NULL);
		CHECK_ERR(ret, -ENOENT, "ATTACH F_OWNER of another uid's missing data set");
		ret = t_attach_owner(fd2, other, NSAMPLES, (uid_t)-1, 0, NULL);
		CHECK_ERR(ret, -EINVAL, "ATTACH F_OWNER with an invalid uid");
		ret = t_attach_owner(fd2, key, NSAMPLES, 0, 0, &a);
		CHECK(ret >= 1, "ATTACH F_OWNER naming itself: %s", t_errname(ret));
		CHECK_EQ(a.owner_uid, 0, "owner_uid of F_OWNER 0");
		CHECK(!(a.result_flags & DLCACHE_ATTACH_CREATED), "F_OWNER self ATTACH says CREATED");
	}
	close(fd2);

	/* Ring */
	ret = t_ring_init(&r, fd, 8, 0);
	if (ret < 0)
		FATAL("ring setup: %s", t_errname(ret));
	CHECK_EQ(r.p.sq_entries, 8, "sq_entries");
	CHECK_EQ(r.p.cq_entries, 16, "cq_entries (default 2 * sq)");
	CHECK_EQ(*r.sq_entries, 8, "mapped sq ring_entries");
	CHECK_EQ(*r.sq_mask, 7, "mapped sq ring_mask");
	CHECK_EQ(*r.cq_entries, 16, "mapped cq ring_entries");
	CHECK_EQ(*r.cq_mask, 15, "mapped cq ring_mask");
	CHECK(*r.sq_head == 0 && *r.sq_tail == 0 && *r.cq_head == 0 && *r.cq_tail == 0,
	      "ring indices not zero");
	CHECK(r.p.sq_off.head / 64 != r.p.sq_off.tail / 64, "SQ head and tail share a cache line");
	CHECK(r.p.cq_off.head / 64 != r.p.cq_off.tail / 64, "CQ head and tail share a cache line");
	CHECK(r.p.sq_off.sqes + 8 * sizeof(struct dlcache_sqe) <= r.p.sq_mmap_size,
	      "sqes beyond the SQ region");
	CHECK(r.p.cq_off.cqes + 16 * sizeof(struct dlcache_cqe) <= r.p.cq_mmap_size,
	      "cqes beyond the CQ region");

	ret = t_nop(&r, 0xfeedfacecafebeefULL, &cqe);
	CHECK_ERR(ret, 0, "NOP res");

	/* poll: nothing, then one completion, then nothing. */
	{
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct dlcache_sqe *s;

		CHECK_EQ(poll(&p, 1, 0), 0, "poll with an empty CQ");
		s = t_sqe(&r);
		s->opcode = DLCACHE_OP_NOP;
		s->user_data = 7;
		t_sqe_push(&r);
		ret = t_enter(&r, 1, 0, 0, 0);
		CHECK_EQ(ret, 1, "ENTER of one NOP");
		p.revents = 0;
		CHECK(poll(&p, 1, 1000) == 1 && (p.revents & POLLIN),
		      "poll after a completion: no POLLIN (revents %#x)", p.revents);
		CHECK(t_reap(&r, &cqe) && cqe.user_data == 7 && cqe.res == 0, "NOP completion");
		p.revents = 0;
		CHECK_EQ(poll(&p, 1, 0), 0, "poll after reaping");
	}

	/* Sizes: 1 byte, page boundaries, the maximum. */
	sizes[nsizes++] = 1;
	sizes[nsizes++] = 2;
	sizes[nsizes++] = 4095;
	sizes[nsizes++] = 4096;
	sizes[nsizes++] = 4097;
	sizes[nsizes++] = 8192;
	sizes[nsizes++] = 3 * 4096 + 1;
	sizes[nsizes++] = 65536;
	sizes[nsizes++] = 65537;
	if (maxsz > (1u << 20))
		sizes[nsizes++] = 1u << 20;
	sizes[nsizes++] = maxsz - 1;
	sizes[nsizes++] = maxsz;

	bufsz = (size_t)maxsz + 3 * 4096;
	buf = mmap(NULL, bufsz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		FATAL("mmap %zu: %m", bufsz);

	for (i = 0; i < nsizes; i++) {
		uint32_t sz = sizes[i], s = i;
		/* Odd buffer offsets, so that copies straddle pages. */
		uint8_t *p = buf + (i % 2 ? 4093 : 0);

		ret = t_get(&r, h, s, p, sz, &cqe);
		CHECK_ERR(ret, -ENOENT, "first GET (miss)");
		CHECK(cqe.flags & DLCACHE_CQE_F_FILL, "miss of sample %u without F_FILL", s);
		e.misses++;

		t_pattern(p, sz, key[0], s);
		ret = t_put(&r, h, s, p, sz, &cqe);
		CHECK_EQ(ret, sz, "PUT res");
		CHECK(cqe.flags & DLCACHE_CQE_F_CACHED, "PUT of %u bytes not cached", sz);
		e.inserts++;
		e.cached++;
		e.used += PAGE_ROUND(sz);	/* whole pages are charged */

		/* Exact buffer, with canaries behind it. */
		memset(p, 0xa5, sz + 64);
		ret = t_get(&r, h, s, p, sz + 64, &cqe);
		CHECK_EQ(ret, sz, "GET res (hit)");
		CHECK_EQ(cqe.size, sz, "GET cqe size");
		CHECK(!(cqe.flags & DLCACHE_CQE_F_FILL), "hit with F_FILL");
		t_pattern_ok(p, sz, key[0], s);
		for (size_t j = sz; j < sz + 64; j++) {
			if (p[j] != 0xa5) {
				FAIL("GET of %u bytes wrote past the sample, at +%zu", sz, j - sz);
				break;
			}
		}
		e.hits++;

		if (sz > 1) {
			ret = t_get(&r, h, s, p, sz - 1, &cqe);
			CHECK_ERR(ret, -EMSGSIZE, "GET into a buffer one byte short");
			CHECK_EQ(cqe.size, sz, "cqe size of the -EMSGSIZE GET");
		}
	}
	check_stats(fd, h, &e, "after the sizes");

	/* One over the maximum: refused, and the sample stays absent. */
	{
		uint32_t s = nsizes;

		ret = t_get(&r, h, s, buf, maxsz + 1, &cqe);
		CHECK_ERR(ret, -ENOENT, "GET miss before the over-size PUT");
		e.misses++;
		t_pattern(buf, (size_t)maxsz + 1, key[0], s);
		ret = t_put(&r, h, s, buf, maxsz + 1, &cqe);
		CHECK(ret == -E2BIG || ret == -EINVAL || ret == -EMSGSIZE,
		      "PUT of max_sample_size + 1 bytes: got %s, want -E2BIG", t_errname(ret));
		CHECK(!(cqe.flags & DLCACHE_CQE_F_CACHED), "over-size PUT says cached");
		/* The failed PUT leaves the fill with us, or ends it: both fine. */
		ret = t_abort(&r, h, s, 0, &cqe);
		CHECK(ret == 0 || ret == -ENOENT, "ABORT after the over-size PUT: %s",
		      t_errname(ret));
		ret = t_get(&r, h, s, buf, maxsz, &cqe);
		CHECK_ERR(ret, -ENOENT, "GET after the over-size PUT");
		e.misses++;
		ret = t_abort(&r, h, s, 0, &cqe);
		CHECK_ERR(ret, 0, "ABORT of our own fill");
		ret = t_abort(&r, h, s, 0, &cqe);
		CHECK_ERR(ret, -ENOENT, "ABORT of a fill we no longer own");
	}
	/* errors counted, not misses; recheck the rest */
	{
		struct dlcache_stats st;

		t_stats(fd, h, &st);
		CHECK_EQ(st.dataset.misses, e.misses, "misses after the over-size PUT");
		CHECK_EQ(st.dataset.cached_samples, e.cached, "cached after the over-size PUT");
		CHECK(st.dataset.aborts >= 1, "aborts not counted");
	}

	/* A batch of 8 GETs in one ENTER, then a full CQ. */
	page = malloc(8 * 8192);
	for (i = 0; i < 8; i++) {
		struct dlcache_sqe *s = t_sqe(&r);

		if (!s)
			FATAL("SQ full after %u of 8 entries", i);
		s->opcode = DLCACHE_OP_GET;
		s->handle = h;
		s->sample = i % 6;	/* sizes 1 .. 8192, all cached */
		s->addr = (uintptr_t)(page + i * 8192);
		s->len = 8192;
		s->user_data = 1000 + i;
		t_sqe_push(&r);
	}
	CHECK(t_sqe(&r) == NULL, "SQ of 8 entries accepts a 9th");
	ret = t_enter(&r, 8, 8, DLCACHE_ENTER_F_GETEVENTS | DLCACHE_ENTER_F_TIMEOUT, 5000000000ULL);
	CHECK_EQ(ret, 8, "ENTER of a batch of 8");
	CHECK_EQ(*r.sq_head, *r.sq_tail, "SQ head after the batch (all consumed)");
	for (i = 0; i < 8; i++) {
		if (!t_reap(&r, &cqe)) {
			FAIL("batch: only %u completions", i);
			break;
		}
		CHECK_EQ(cqe.user_data, 1000 + i, "batch completion order / user_data");
		CHECK_EQ(cqe.res, sizes[i % 6], "batch GET res");
		t_pattern_ok(page + i * 8192, sizes[i % 6], key[0], i % 6);
		e.hits++;
	}

	/* CQ of 16: two batches of 8 NOPs fill it; the third waits for room. */
	for (int round = 0; round < 3; round++) {
		for (i = 0; i < 8; i++) {
			struct dlcache_sqe *s = t_sqe(&r);

			if (!s)
				FATAL("SQ full in round %d", round);
			s->opcode = DLCACHE_OP_NOP;
			s->user_data = round * 8 + i;
			t_sqe_push(&r);
		}
		ret = t_enter(&r, 8, 0, 0, 0);
		if (round < 2) {
			CHECK_EQ(ret, 8, "ENTER of 8 NOPs with room in the CQ");
		} else {
			CHECK(ret == 0 || ret == -EBUSY, "ENTER with a full CQ: %s, want 0",
			      t_errname(ret));
			CHECK(*r.sq_flags & DLCACHE_SQ_F_CQ_FULL, "SQ_F_CQ_FULL not set");
		}
	}
	CHECK_EQ(t_cq_ready(&r), 16, "completions in a full CQ");
	for (i = 0; i < 16; i++) {
		if (!t_reap(&r, &cqe) || cqe.user_data != i) {
			FAIL("full CQ: completion %u wrong or missing", i);
			break;
		}
	}
	ret = t_enter(&r, 8, 8, DLCACHE_ENTER_F_GETEVENTS | DLCACHE_ENTER_F_TIMEOUT, 5000000000ULL);
	CHECK_EQ(ret, 8, "ENTER after reaping the full CQ");
	CHECK(!(*r.sq_flags & DLCACHE_SQ_F_CQ_FULL), "SQ_F_CQ_FULL still set");
	for (i = 0; i < 8; i++)
		CHECK(t_reap(&r, &cqe) && cqe.user_data == 16 + i, "late NOP %u", i);

	/* GETEVENTS with nothing to come times out. */
	ret = t_enter(&r, 0, 1, DLCACHE_ENTER_F_GETEVENTS | DLCACHE_ENTER_F_TIMEOUT, 20000000ULL);
	CHECK_ERR(ret, -ETIME, "ENTER waiting for nothing, 20 ms");

	check_stats(fd, h, &e, "after the batches");

	check_debugfs(&e);

	/* A second session keeps the data set alive; DETACH ends a handle. */
	fd2 = t_open();
	ret = t_attach(fd2, key, NSAMPLES, 0600, DLCACHE_ATTACH_F_NOCREATE, &a);
	if (ret < 0)
		FATAL("ATTACH F_NOCREATE from a second session: %s", t_errname(ret));
	h2 = (uint32_t)ret;
	ret = t_detach(fd, h);
	CHECK_ERR(ret, 0, "DETACH");
	ret = t_get(&r, h, 0, buf, 16, &cqe);
	CHECK_ERR(ret, -EBADF, "GET on a detached handle");
	CHECK(!(cqe.flags & DLCACHE_CQE_F_FILL), "GET on a detached handle has F_FILL");
	ret = t_detach(fd, h);
	CHECK_ERR(ret, -EBADF, "second DETACH of a handle");
	t_ring_unmap(&r);
	close(fd);

	/* The data set and its bytes outlive the first session. */
	ret = t_ring_init(&r, fd2, 4, 4);
	if (ret < 0)
		FATAL("second ring: %s", t_errname(ret));
	for (i = 0; i < nsizes; i++) {
		ret = t_get(&r, h2, i, buf, maxsz, &cqe);
		CHECK_EQ(ret, sizes[i], "GET from the second session");
		if (ret == (long)sizes[i])
			t_pattern_ok(buf, sizes[i], key[0], i);
		e.hits++;
	}
	check_stats(fd2, h2, &e, "from the second session");
	t_ring_unmap(&r);
	close(fd2);

	/*
	 * With the last attachment gone, the data set stays cached, idle
	 * (DLCACHE_FEAT_IDLE); DROP frees it and its pages.
	 */
	fd = t_open();
	{
		struct dlcache_stats st;

		t_stats(fd, 0, &st);
		CHECK_EQ(st.ndatasets, 1, "data sets after the last session closed (idle)");
		CHECK(st.used_bytes > 0, "used bytes of the idle data set: 0");
		CHECK_ERR(t_drop(fd, NULL, NULL), 0, "DROP");
		t_stats(fd, 0, &st);
		CHECK_EQ(st.ndatasets, 0, "data sets after DROP of the idle set");
		CHECK_EQ(st.used_bytes, 0, "used bytes after DROP of the idle set");
		CHECK_EQ(st.global.hits, e.hits, "global hits keep counting freed data sets");
	}
	ret = t_attach(fd, key, NSAMPLES, 0600, DLCACHE_ATTACH_F_NOCREATE, NULL);
	CHECK_ERR(ret, -ENOENT, "ATTACH F_NOCREATE after DROP of the idle set");
	close(fd);
	munmap(buf, bufsz);
	free(page);
	return t_done();
}
