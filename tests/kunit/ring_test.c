// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit: ring layout, index arithmetic (with wrap-around and garbage
 * indices from user space) and SQE validation (kmod/ring.c).
 */
#include <kunit/test.h>
#include <linux/cache.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "../kmod/dlc.h"

static void ring_sizes(struct kunit *test)
{
	u32 sq, cq;

	sq = 1;
	cq = 0;
	KUNIT_EXPECT_EQ(test, dlc_ring_sizes(&sq, &cq), 0);
	KUNIT_EXPECT_EQ(test, sq, 1);
	KUNIT_EXPECT_EQ(test, cq, 2);

	sq = 100;
	cq = 0;
	KUNIT_EXPECT_EQ(test, dlc_ring_sizes(&sq, &cq), 0);
	KUNIT_EXPECT_EQ(test, sq, 128);
	KUNIT_EXPECT_EQ(test, cq, 256);

	sq = DLC_MAX_RING_ENTRIES;
	cq = 0;
	KUNIT_EXPECT_EQ(test, dlc_ring_sizes(&sq, &cq), 0);
	KUNIT_EXPECT_EQ(test, cq, DLC_MAX_RING_ENTRIES);

	sq = 64;
	cq = 100;
	KUNIT_EXPECT_EQ(test, dlc_ring_sizes(&sq, &cq), 0);
	KUNIT_EXPECT_EQ(test, cq, 128);

	sq = 0;
	cq = 0;
	KUNIT_EXPECT_EQ(test, dlc_ring_sizes(&sq, &cq), -EINVAL);
	sq = DLC_MAX_RING_ENTRIES + 1;
	KUNIT_EXPECT_EQ(test, dlc_ring_sizes(&sq, &cq), -EINVAL);
	sq = 64;
	cq = 32;
	KUNIT_EXPECT_EQ(test, dlc_ring_sizes(&sq, &cq), -EINVAL);
	sq = 64;
	cq = DLC_MAX_RING_ENTRIES + 1;
	KUNIT_EXPECT_EQ(test, dlc_ring_sizes(&sq, &cq), -EINVAL);
}

static void ring_offsets(struct kunit *test)
{
	struct dlcache_sqring_offsets so;
	struct dlcache_cqring_offsets co;

	dlc_ring_sq_offsets(&so);
	dlc_ring_cq_offsets(&co);
	/* Producer and consumer indices on separate cache lines. */
	KUNIT_EXPECT_GE(test, so.tail, so.head + L1_CACHE_BYTES);
	KUNIT_EXPECT_GE(test, so.ring_mask, so.tail + L1_CACHE_BYTES);
	KUNIT_EXPECT_EQ(test, so.sqes % L1_CACHE_BYTES, 0);
	KUNIT_EXPECT_GE(test, so.sqes, sizeof(struct dlc_ring_ctl));
	KUNIT_EXPECT_EQ(test, co.cqes, so.sqes);
	KUNIT_EXPECT_EQ(test, co.head, so.head);
	KUNIT_EXPECT_EQ(test, co.pending, so.dropped);
	KUNIT_EXPECT_EQ(test, so.resv1, 0);
	KUNIT_EXPECT_EQ(test, co.resv2, 0);
	KUNIT_EXPECT_EQ(test, dlc_ring_bytes(1, 64) % PAGE_SIZE, 0);
	KUNIT_EXPECT_GE(test, dlc_ring_bytes(4096, 64), so.sqes + 4096 * 64);
}

struct ring_fixture {
	struct dlc_ring sq, cq;
};

static void ring_fixture_init(struct kunit *test, struct ring_fixture *f,
			      u32 n)
{
	size_t sz = dlc_ring_bytes(n, sizeof(struct dlcache_sqe));
	void *sq = kunit_kzalloc(test, sz, GFP_KERNEL);
	void *cq = kunit_kzalloc(test, dlc_ring_bytes(n, sizeof(struct dlcache_cqe)),
				 GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, sq);
	KUNIT_ASSERT_NOT_NULL(test, cq);
	dlc_ring_init(&f->sq, sq, sz, n);
	dlc_ring_init(&f->cq, cq, dlc_ring_bytes(n, sizeof(struct dlcache_cqe)),
		      n);
}

/* What user space does: write an SQE at its tail and publish it. */
static void user_submit(struct dlc_ring *sq, u64 user_data)
{
	struct dlcache_sqe *e = sq->entries;
	u32 tail = READ_ONCE(sq->ctl->tail);

	memset(&e[tail & sq->mask], 0, sizeof(*e));
	e[tail & sq->mask].opcode = DLCACHE_OP_NOP;
	e[tail & sq->mask].user_data = user_data;
	WRITE_ONCE(sq->ctl->tail, tail + 1);
}

static void ring_sq_fetch_order_and_wrap(struct kunit *test)
{
	struct ring_fixture f;
	struct dlcache_sqe sqe;
	u32 i, start = 0xfffffffa;

	ring_fixture_init(test, &f, 8);
	KUNIT_EXPECT_EQ(test, f.sq.ctl->ring_entries, 8);
	KUNIT_EXPECT_EQ(test, f.sq.ctl->ring_mask, 7);
	/* Start near the u32 wrap. */
	f.sq.kidx = start;
	f.sq.ctl->head = start;
	f.sq.ctl->tail = start;
	KUNIT_EXPECT_EQ(test, dlc_sq_ready(&f.sq), 0);
	for (i = 0; i < 12; i++) {
		user_submit(&f.sq, 100 + i);
		KUNIT_ASSERT_EQ(test, dlc_sq_ready(&f.sq), 1);
		dlc_sq_fetch(&f.sq, &sqe);
		KUNIT_EXPECT_EQ(test, sqe.user_data, 100 + i);
		dlc_sq_publish(&f.sq);
		KUNIT_EXPECT_EQ(test, f.sq.ctl->head, start + i + 1);
	}
	for (i = 0; i < 5; i++)
		user_submit(&f.sq, 200 + i);
	KUNIT_EXPECT_EQ(test, dlc_sq_ready(&f.sq), 5);
	for (i = 0; i < 5; i++) {
		dlc_sq_fetch(&f.sq, &sqe);
		KUNIT_EXPECT_EQ(test, sqe.user_data, 200 + i);
	}
	dlc_sq_publish(&f.sq);
	KUNIT_EXPECT_EQ(test, dlc_sq_ready(&f.sq), 0);
}

static void ring_garbage_user_indices(struct kunit *test)
{
	struct ring_fixture f;

	ring_fixture_init(test, &f, 16);
	/* A tail far ahead (or behind) is clamped to the ring size. */
	WRITE_ONCE(f.sq.ctl->tail, 1000);
	KUNIT_EXPECT_EQ(test, dlc_sq_ready(&f.sq), 16);
	WRITE_ONCE(f.sq.ctl->tail, (u32)-5);
	KUNIT_EXPECT_EQ(test, dlc_sq_ready(&f.sq), 16);
	/* A CQ head past the tail reads as a full ring. */
	WRITE_ONCE(f.cq.ctl->head, 3);
	KUNIT_EXPECT_EQ(test, dlc_cq_used(&f.cq), 16);
	/* User space may scribble on the head the kernel publishes. */
	WRITE_ONCE(f.sq.ctl->head, 77);
	WRITE_ONCE(f.sq.ctl->tail, 2);
	KUNIT_EXPECT_EQ(test, dlc_sq_ready(&f.sq), 2);
}

static void ring_cq_post_and_reap(struct kunit *test)
{
	struct dlcache_cqe cqe = {}, *e;
	struct ring_fixture f;
	u32 i, head;

	ring_fixture_init(test, &f, 4);
	f.cq.kidx = 0xfffffffe;
	f.cq.ctl->head = 0xfffffffe;
	f.cq.ctl->tail = 0xfffffffe;
	e = f.cq.entries;
	for (i = 0; i < 4; i++) {
		cqe.user_data = i;
		cqe.res = -(int)i;
		dlc_cq_post(&f.cq, &cqe);
		KUNIT_EXPECT_EQ(test, dlc_cq_used(&f.cq), i + 1);
	}
	KUNIT_EXPECT_EQ(test, f.cq.ctl->tail, 2);
	head = f.cq.ctl->head;
	for (i = 0; i < 4; i++, head++) {
		KUNIT_EXPECT_EQ(test, e[head & f.cq.mask].user_data, i);
		KUNIT_EXPECT_EQ(test, e[head & f.cq.mask].res, -(int)i);
	}
	WRITE_ONCE(f.cq.ctl->head, head);
	KUNIT_EXPECT_EQ(test, dlc_cq_used(&f.cq), 0);
}

static struct dlcache_sqe good_get(void)
{
	struct dlcache_sqe s = {
		.opcode = DLCACHE_OP_GET,
		.handle = 1,
		.sample = 3,
		.len = 100,
		.addr = 0x1000,
	};
	return s;
}

static void ring_sqe_check(struct kunit *test)
{
	struct dlcache_sqe s;

	s = good_get();
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), 0);
	s.flags = DLCACHE_SQE_F_AT;
	s.epoch = 2;
	s.index = 9;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), 0);
	s.flags = 0;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), -EINVAL);	/* epoch w/o AT */
	s = good_get();
	s.flags = DLCACHE_SQE_F_FAIL;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), -EINVAL);
	/* A look-up ahead: no buffer needed; a position only with F_AT. */
	s = good_get();
	s.flags = DLCACHE_SQE_F_AHEAD;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), 0);
	s.addr = 0;
	s.len = 0;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), 0);
	s.flags = DLCACHE_SQE_F_AHEAD | DLCACHE_SQE_F_AT;
	s.epoch = 1;
	s.index = 4;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), 0);
	s = good_get();
	s.flags = DLCACHE_SQE_F_AHEAD;
	s.epoch = 1;	/* a position without F_AT */
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), -EINVAL);
	s = good_get();
	s.opcode = DLCACHE_OP_ABORT;
	s.addr = 0;
	s.len = 0;
	s.flags = DLCACHE_SQE_F_AHEAD;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), -EINVAL);
	s = good_get();
	s.flags = 0x8000;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), -EINVAL);
	s = good_get();
	s.resv0 = 1;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), -EINVAL);
	s = good_get();
	s.resv[2] = 1;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), -EINVAL);
	s = good_get();
	s.handle = 0;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), -EINVAL);
	s = good_get();
	s.addr = 0;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), -EINVAL);
	s.len = 0;	/* a size query */
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), 0);
	s = good_get();
	s.opcode = DLCACHE_OP_LAST;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), -EINVAL);
	s.opcode = 0xff;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), -EINVAL);

	s = good_get();
	s.opcode = DLCACHE_OP_PUT;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), 0);
	s.len = 0;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), -EINVAL);
	s.len = DLC_MAX_SAMPLE_SIZE;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), 0);
	s.len = DLC_MAX_SAMPLE_SIZE + 1;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), -EINVAL);
	s.len = 10;
	s.flags = DLCACHE_SQE_F_AT;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), -EINVAL);

	s = good_get();
	s.opcode = DLCACHE_OP_ABORT;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), -EINVAL);	/* has a buffer */
	s.len = 0;
	s.addr = 0;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), 0);
	s.flags = DLCACHE_SQE_F_FAIL;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), 0);

	memset(&s, 0, sizeof(s));
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), 0);	/* NOP */
	s.handle = 1;
	KUNIT_EXPECT_EQ(test, dlc_sqe_check(&s), -EINVAL);
}

static struct kunit_case ring_cases[] = {
	KUNIT_CASE(ring_sizes),
	KUNIT_CASE(ring_offsets),
	KUNIT_CASE(ring_sq_fetch_order_and_wrap),
	KUNIT_CASE(ring_garbage_user_indices),
	KUNIT_CASE(ring_cq_post_and_reap),
	KUNIT_CASE(ring_sqe_check),
	{}
};

static struct kunit_suite ring_suite = {
	.name = "dlcache_ring",
	.test_cases = ring_cases,
};

kunit_test_suites(&ring_suite);
