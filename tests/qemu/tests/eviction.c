// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * eviction: with a capacity of a few samples, which samples the cache keeps
 * is checked against the uploaded order and a reference model of the
 * policy (next use, farthest evicted first, a PUT whose next use is
 * farther than every cached one bypassed, samples without a known next
 * use first to go).
 *
 * Phase 1: a permutation; PUT every sample; the CACHED flag of each PUT,
 *   the eviction and bypass counters and, through GETs in order, the
 *   samples that remain (the nearest next uses) match the model.
 * Phase 2: an order that leaves samples out; those go first, and a PUT of
 *   one into a full cache is bypassed.
 * Phase 3: orders with repeats over three epochs, uploaded ahead within
 *   the window (and -ENOSPC beyond it); a GET/PUT loop in order whose
 *   hit/miss sequence must equal Belady's with bypass.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlc_test.h"

#define SZ 4096
#define NEVER UINT64_MAX
#define MAXPOS 256

/* Reference model over one time line. */
struct ref {
	uint32_t order[MAXPOS];	/* sample at each position */
	uint64_t known;		/* positions uploaded */
	uint64_t cursor;	/* positions consumed */
	bool in[64];
	uint32_t count, cap;
	uint64_t evictions, bypasses, inserts;
};

static uint64_t ref_next(const struct ref *m, uint32_t s)
{
	for (uint64_t p = m->cursor; p < m->known; p++)
		if (m->order[p] == s)
			return p;
	return NEVER;
}

/* PUT of sample @s: true when the model caches it. */
static bool ref_put(struct ref *m, uint32_t s)
{
	uint64_t far = 0, nx = ref_next(m, s);
	uint32_t victim = UINT32_MAX;

	if (m->in[s])
		return true;
	if (m->count < m->cap) {
		m->in[s] = true;
		m->count++;
		m->inserts++;
		return true;
	}
	for (uint32_t i = 0; i < 64; i++) {
		uint64_t n;

		if (!m->in[i])
			continue;
		n = ref_next(m, i);
		if (victim == UINT32_MAX || n > far) {
			far = n;
			victim = i;
		}
	}
	if (nx >= far) {
		m->bypasses++;
		return false;
	}
	m->in[victim] = false;
	m->in[s] = true;
	m->evictions++;
	m->inserts++;
	return true;
}

static int fd;
static struct t_ring r;
static uint8_t buf[SZ];

static void put_sample(uint32_t h, uint64_t tag, uint32_t s, struct ref *m, const char *phase)
{
	struct dlcache_cqe cqe;
	bool want = ref_put(m, s);
	long ret;

	t_pattern(buf, SZ, tag, s);
	ret = t_put(&r, h, s, buf, SZ, &cqe);
	CHECK_EQ(ret, SZ, "PUT res");
	if (!!(cqe.flags & DLCACHE_CQE_F_CACHED) != want)
		FAIL("%s: PUT of sample %u (next use %lld) %s, the model %s it", phase, s,
		     ref_next(m, s) == NEVER ? -1LL : (long long)ref_next(m, s),
		     cqe.flags & DLCACHE_CQE_F_CACHED ? "cached" : "bypassed",
		     want ? "caches" : "bypasses");
}

/* GET at position @pos = (epoch, index), checking hit/miss against the
 * model; on a miss, PUTs the sample when @fill, else ABORTs the fill. */
static void get_at(uint32_t h, uint64_t tag, struct ref *m, uint32_t epoch, uint32_t index,
		   bool fill, const char *phase)
{
	struct dlcache_sqe sqe;
	struct dlcache_cqe cqe;
	uint32_t s = m->order[m->cursor];
	bool want_hit = m->in[s];
	long ret;

	memset(&sqe, 0, sizeof(sqe));
	sqe.opcode = DLCACHE_OP_GET;
	sqe.flags = DLCACHE_SQE_F_AT;
	sqe.handle = h;
	sqe.sample = s;
	sqe.addr = (uintptr_t)buf;
	sqe.len = SZ;
	sqe.epoch = epoch;
	sqe.index = index;
	sqe.user_data = m->cursor;
	memset(buf, 0, SZ);
	ret = t_do(&r, &sqe, &cqe);
	m->cursor++;
	if (ret < 0) {
		FAIL("%s: GET at %u/%u: %s", phase, epoch, index, t_errname(ret));
		return;
	}
	if (want_hit) {
		if (cqe.res != SZ)
			FAIL("%s: GET of sample %u at %u/%u: %s, the model has a hit", phase, s,
			     epoch, index, t_errname(cqe.res));
		else
			t_pattern_ok(buf, SZ, tag, s);
		return;
	}
	if (cqe.res != -ENOENT || !(cqe.flags & DLCACHE_CQE_F_FILL)) {
		FAIL("%s: GET of sample %u at %u/%u: %s flags %#x, the model has a miss", phase,
		     s, epoch, index, t_errname(cqe.res), cqe.flags);
		if (cqe.res >= 0)
			return;
	}
	if (fill) {
		put_sample(h, tag, s, m, phase);
	} else {
		ret = t_abort(&r, h, s, 0, &cqe);
		CHECK_ERR(ret, 0, "ABORT after a miss");
	}
}

static void check_counts(uint32_t h, const struct ref *m, const char *phase)
{
	struct dlcache_stats st;
	long ret = t_stats(fd, h, &st);

	if (ret < 0) {
		FAIL("%s: STATS %s", phase, t_errname(ret));
		return;
	}
	if (st.dataset.cached_samples != m->count || st.dataset.used_bytes != (uint64_t)m->count * SZ ||
	    st.dataset.evictions != m->evictions || st.dataset.bypasses != m->bypasses ||
	    st.dataset.inserts != m->inserts)
		FAIL("%s: cached/used/evictions/bypasses/inserts %llu/%llu/%llu/%llu/%llu, model "
		     "%u/%llu/%llu/%llu/%llu", phase,
		     (unsigned long long)st.dataset.cached_samples,
		     (unsigned long long)st.dataset.used_bytes,
		     (unsigned long long)st.dataset.evictions,
		     (unsigned long long)st.dataset.bypasses,
		     (unsigned long long)st.dataset.inserts, m->count,
		     (unsigned long long)m->count * SZ, (unsigned long long)m->evictions,
		     (unsigned long long)m->bypasses, (unsigned long long)m->inserts);
	if (st.used_bytes > st.capacity_bytes)
		FAIL("%s: used %llu over capacity %llu", phase, (unsigned long long)st.used_bytes,
		     (unsigned long long)st.capacity_bytes);
}

static void drop_all(const char *phase)
{
	struct dlcache_stats st;
	uint64_t dropped = 0;
	long ret;

	t_stats(fd, 0, &st);
	ret = t_drop(fd, NULL, &dropped);
	CHECK_ERR(ret, 0, "DROP");
	CHECK_EQ(dropped, st.used_bytes, "dropped_bytes = used_bytes before DROP");
	t_stats(fd, 0, &st);
	if (st.used_bytes != 0 || st.global.cached_samples != 0)
		FAIL("%s: after DROP used %llu cached %llu", phase,
		     (unsigned long long)st.used_bytes,
		     (unsigned long long)st.global.cached_samples);
}

static void phase1(void)
{
	static const uint32_t perm[16] = { 5, 3, 9, 1, 12, 0, 7, 15, 2, 8, 4, 10, 6, 11, 13, 14 };
	struct ref m = { .cap = 4 };
	uint64_t key[2];
	long h;

	t_key("eviction-1", key);
	h = t_attach(fd, key, 16, 0600, 0, NULL);
	if (h < 0)
		FATAL("ATTACH: %s", t_errname(h));
	memcpy(m.order, perm, sizeof(perm));
	m.known = 16;
	CHECK_ERR(t_set_order(fd, h, 0, perm, 16), 0, "SET_ORDER epoch 0");
	for (uint32_t s = 0; s < 16; s++)
		put_sample(h, key[0], s, &m, "phase 1");
	check_counts(h, &m, "phase 1 after the PUTs");
	/* The model keeps 5, 3, 9, 1: the first four of the order. */
	CHECK(m.in[5] && m.in[3] && m.in[9] && m.in[1], "the model itself is wrong");
	/* A far-future sample offered again is bypassed. */
	put_sample(h, key[0], 14, &m, "phase 1, far sample again");
	for (uint32_t i = 0; i < 16; i++)
		get_at(h, key[0], &m, 0, i, false, "phase 1 GETs");
	check_counts(h, &m, "phase 1 after the GETs");
}

static void phase2(void)
{
	static const uint32_t ord[12] = { 7, 2, 10, 4, 0, 11, 8, 1, 3, 9, 5, 6 };
	static const uint32_t puts[] = { 12, 13, 0, 1, 2, 3, 14, 4, 5, 6, 7, 8, 9, 10, 11, 15 };
	struct ref m = { .cap = 4 };
	uint64_t key[2];
	long h;

	t_key("eviction-2", key);
	h = t_attach(fd, key, 16, 0600, 0, NULL);
	if (h < 0)
		FATAL("ATTACH: %s", t_errname(h));
	memcpy(m.order, ord, sizeof(ord));
	m.known = 12;
	CHECK_ERR(t_set_order(fd, h, 0, ord, 12), 0, "SET_ORDER of 12 of 16 samples");
	for (size_t i = 0; i < sizeof(puts) / sizeof(puts[0]); i++)
		put_sample(h, key[0], puts[i], &m, "phase 2");
	check_counts(h, &m, "phase 2 after the PUTs");
	CHECK(m.in[7] && m.in[2] && m.in[10] && m.in[4], "the model itself is wrong");
	for (uint32_t i = 0; i < 12; i++)
		get_at(h, key[0], &m, 0, i, false, "phase 2 GETs");
	check_counts(h, &m, "phase 2 after the GETs");
}

static void phase3(void)
{
	enum { N = 8, LEN = 12, EPOCHS = 4 };
	struct dlcache_attach a;
	struct ref m = { .cap = 3 };
	uint32_t orders[EPOCHS][LEN];
	uint64_t key[2], seed = 42, hits = 0, model_hits = 0;
	long h, ret;
	uint32_t e, i;

	t_key("eviction-3", key);
	memset(&a, 0, sizeof(a));
	a.key[0] = key[0];
	a.key[1] = key[1];
	a.nsamples = N;
	a.mode = 0600;
	a.window = 32;
	h = t_ioctl(fd, DLCACHE_IOC_ATTACH, &a);
	if (h < 0)
		FATAL("ATTACH with window 32: %s", t_errname(h));
	h = a.handle;
	CHECK(a.window >= 32, "window %u below the 32 asked", a.window);
	/* Weighted-sampling-like orders: samples 0..2 are drawn often. */
	for (e = 0; e < EPOCHS; e++) {
		for (i = 0; i < LEN; i++) {
			uint64_t x = t_rand(&seed);

			orders[e][i] = (x & 1) ? (uint32_t)((x >> 8) % 3) : (uint32_t)((x >> 8) % N);
			m.order[e * LEN + i] = orders[e][i];
		}
	}
	CHECK_ERR(t_set_order(fd, h, 0, orders[0], LEN), 0, "SET_ORDER epoch 0");
	CHECK_ERR(t_set_order(fd, h, 1, orders[1], LEN), 0, "SET_ORDER epoch 1 ahead");
	m.known = 2 * LEN;
	ret = t_set_order(fd, h, 1, orders[1], LEN);
	CHECK_ERR(ret, -EINVAL, "SET_ORDER of an epoch that does not increase");
	if (a.window < 3 * LEN) {
		ret = t_set_order(fd, h, 2, orders[2], LEN);
		CHECK_ERR(ret, -ENOSPC, "SET_ORDER beyond the window");
	}
	for (e = 0; e < EPOCHS; e++) {
		for (i = 0; i < LEN; i++) {
			struct dlcache_stats st;
			uint64_t before;

			t_stats(fd, h, &st);
			before = st.dataset.hits;
			model_hits += m.in[m.order[m.cursor]];
			get_at(h, key[0], &m, e, i, true, "phase 3");
			t_stats(fd, h, &st);
			hits += st.dataset.hits - before;
		}
		/* Upload the epoch after next once this one is consumed. */
		if (e + 2 < EPOCHS) {
			ret = t_set_order(fd, h, e + 2, orders[e + 2], LEN);
			CHECK_ERR(ret, 0, "SET_ORDER within the window after consuming");
			m.known += LEN;
		}
	}
	CHECK_EQ(hits, model_hits, "phase 3 hits (Belady with bypass)");
	t_info("phase 3: %llu hits of %d GETs, capacity 3 of %d samples",
	       (unsigned long long)hits, EPOCHS * LEN, N);
	check_counts(h, &m, "phase 3 at the end");
}

int main(void)
{
	long ret;

	t_time_limit(60);
	fd = t_open();
	ret = t_set_capacity(fd, 4 * SZ, NULL);
	if (ret < 0)
		FATAL("SET_CAPACITY 4 samples: %s", t_errname(ret));
	ret = t_ring_init(&r, fd, 8, 16);
	if (ret < 0)
		FATAL("ring: %s", t_errname(ret));

	phase1();
	drop_all("phase 1");
	phase2();
	drop_all("phase 2");
	ret = t_set_capacity(fd, 3 * SZ, NULL);
	CHECK_ERR(ret, 0, "SET_CAPACITY 3 samples");
	phase3();
	drop_all("phase 3");
	return t_done();
}
