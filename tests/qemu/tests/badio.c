// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * badio: a table of malformed ioctls, mmaps and ring entries. Each must
 * fail with the documented errno (reserved fields and unknown flags
 * -EINVAL, unknown commands -ENOTTY, bad user pointers -EFAULT, oversized
 * counts -EINVAL or -E2BIG), must not change state (a refused SET_ORDER
 * uploads nothing, a refused PUT caches nothing), and the ring must keep
 * working after every bad entry.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "dlc_test.h"

#define N 8
#define KADDR ((uintptr_t)0xffffffff81000000ULL)

static int fd;
static struct t_ring r;
static long h;
static uint64_t key[2];
static struct dlcache_info info;
static uint8_t *guard;		/* page 0 RW, page 1 PROT_NONE, page 2 read-only */
static long pagesz;
static unsigned nerr_cqes;

#define BIG_OK(v) ((v) == -EINVAL || (v) == -E2BIG)

static void check_big(long got, const char *what)
{
	if (!BIG_OK(got))
		FAIL("%s: got %s, want -EINVAL or -E2BIG", what, t_errname(got));
}

static bool bad_handle_err(long v)
{
	return v == -EINVAL || v == -EBADF || v == -ENOENT;
}

/* ---- ioctls --------------------------------------------------------------- */

/* Every command, from uapi/dlcache.h's table. */
static const struct t_ioc {
	const char *name;
	unsigned long cmd;
	size_t size, resv_off, resv_len;
} t_iocs[] = {
#define T_IOC(NAME, name, nr, type, size, dir)				\
	{ #NAME, DLCACHE_IOC_##NAME, sizeof(struct type),		\
	  offsetof(struct type, reserved),				\
	  sizeof(((struct type *)0)->reserved) },
	DLCACHE_IOCTLS(T_IOC)
#undef T_IOC
};
#define T_NIOCS (sizeof(t_iocs) / sizeof(t_iocs[0]))

/*
 * For every command of the table: the same number with another size or
 * direction is -ENOTTY, as is every number the table lacks; each 64-bit
 * word of reserved[] set gives -EINVAL (the rest of the argument zero).
 * Zeroes are a valid SET_CAPACITY (0 bytes), DROP (everything) and DRAIN
 * (start): a reserved check that is missing shows, and is undone here.
 */
static void ioctl_generic(void)
{
	static const unsigned dirs[] = { _IOC_NONE, _IOC_READ, _IOC_WRITE,
					 _IOC_READ | _IOC_WRITE };
	uint64_t arg[1024 / 8], cap0 = info.capacity_bytes;
	struct dlcache_drain dr;
	long ret;

	for (size_t j = 0; j < T_NIOCS; j++) {
		const struct t_ioc *c = &t_iocs[j];
		unsigned long dir = _IOC_DIR(c->cmd), nr = _IOC_NR(c->cmd);
		const size_t sizes[] = { 0, c->size - 8, c->size - 1, c->size + 1, c->size + 8,
					 2 * c->size };

		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			unsigned long cmd = _IOC(dir, DLCACHE_IOC_MAGIC, nr, sizes[k]);

			memset(arg, 0, sizeof(arg));
			ret = t_ioctl(fd, cmd, arg);
			if (ret != -ENOTTY)
				FAIL("%s with size %zu (%#lx): got %s, want -ENOTTY", c->name,
				     sizes[k], cmd, t_errname(ret));
		}
		for (size_t k = 0; k < 4; k++) {
			unsigned long cmd = _IOC(dirs[k], DLCACHE_IOC_MAGIC, nr, c->size);

			if (dirs[k] == dir)
				continue;
			memset(arg, 0, sizeof(arg));
			ret = t_ioctl(fd, cmd, arg);
			if (ret != -ENOTTY)
				FAIL("%s with direction %u (%#lx): got %s, want -ENOTTY", c->name,
				     dirs[k], cmd, t_errname(ret));
		}
		for (size_t w = 0; w < c->resv_len / 8; w++) {
			memset(arg, 0, sizeof(arg));
			arg[c->resv_off / 8 + w] = 1ULL << (w * 17 % 64);
			ret = t_ioctl(fd, c->cmd, arg);
			if (ret != -EINVAL)
				FAIL("%s reserved[%zu]: got %s, want -EINVAL", c->name, w,
				     t_errname(ret));
		}
	}
	/* Numbers outside the table, with each table size. */
	for (unsigned nr = 0; nr < 0x40; nr++) {
		bool known = false;

		for (size_t j = 0; j < T_NIOCS; j++)
			known |= _IOC_NR(t_iocs[j].cmd) == nr;
		if (known)
			continue;
		for (size_t j = 0; j < T_NIOCS; j++) {
			unsigned long cmd = _IOC(_IOC_DIR(t_iocs[j].cmd), DLCACHE_IOC_MAGIC, nr,
						 t_iocs[j].size);

			memset(arg, 0, sizeof(arg));
			ret = t_ioctl(fd, cmd, arg);
			if (ret != -ENOTTY)
				FAIL("nr %#x with %s's size: got %s, want -ENOTTY", nr, t_iocs[j].name,
				     t_errname(ret));
		}
	}
	CHECK(T_NIOCS >= 10, "%zu commands in the table", T_NIOCS);
	/* Undo what a missing check would have done. */
	memset(&dr, 0, sizeof(dr));
	dr.flags = DLCACHE_DRAIN_F_OFF;
	t_ioctl(fd, DLCACHE_IOC_DRAIN, &dr);
	t_set_capacity(fd, cap0, NULL);
}

static void ioctl_table(void)
{
	union {
		struct dlcache_info info;
		struct dlcache_ring_setup setup;
		struct dlcache_enter enter;
		struct dlcache_attach attach;
		struct dlcache_detach detach;
		struct dlcache_order order;
		struct dlcache_stats stats;
		struct dlcache_capacity cap;
		struct dlcache_drop drop;
		uint8_t raw[1024];
	} u;
	uint32_t ids[N] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	long ret;
	int i;

#define RESET() memset(&u, 0, sizeof(u))

	/* GET_INFO */
	RESET(); u.info.flags = 1;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_GET_INFO, &u), -EINVAL, "GET_INFO flags");
	RESET(); u.info.resv0 = 1;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_GET_INFO, &u), -EINVAL, "GET_INFO resv0");
	for (i = 0; i < 3; i++) {
		RESET(); u.info.reserved[i] = 1ULL << 40;
		CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_GET_INFO, &u), -EINVAL, "GET_INFO reserved[i]");
	}
	/* ABI 4: the kernel's fields must be 0 (abi_room checks each command). */
	RESET(); u.info.capacity_bytes = 123; u.info.max_fills = 9; u.info.abi_version = 77;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_GET_INFO, &u), -EINVAL, "GET_INFO with output fields set");
	RESET();
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_GET_INFO, &u), 0, "GET_INFO zeroed");

	/* ENTER */
	RESET(); u.enter.flags = 1U << 7;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_ENTER, &u), -EINVAL, "ENTER unknown flag");
	RESET(); u.enter.reserved[1] = 1;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_ENTER, &u), -EINVAL, "ENTER reserved[1]");
	RESET(); u.enter.timeout_ns = 1000;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_ENTER, &u), -EINVAL, "ENTER timeout_ns without F_TIMEOUT");
	RESET(); u.enter.flags = DLCACHE_ENTER_F_GETEVENTS | DLCACHE_ENTER_F_TIMEOUT;
	u.enter.min_complete = 1U << 30; u.enter.timeout_ns = 10000000;
	ret = t_ioctl(fd, DLCACHE_IOC_ENTER, &u);
	CHECK(ret == -EINVAL || ret == -ETIME, "ENTER min_complete 2^30: %s", t_errname(ret));

	/* ATTACH */
	RESET(); memcpy(u.attach.key, key, 16); u.attach.nsamples = 0;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_ATTACH, &u), -EINVAL, "ATTACH nsamples 0");
	RESET(); u.attach.key[0] = 1; u.attach.nsamples = info.max_samples + 1;
	check_big(t_ioctl(fd, DLCACHE_IOC_ATTACH, &u), "ATTACH nsamples max + 1");
	RESET(); u.attach.key[0] = 2; u.attach.nsamples = 0xffffffff;
	check_big(t_ioctl(fd, DLCACHE_IOC_ATTACH, &u), "ATTACH nsamples 2^32 - 1");
	RESET(); u.attach.key[0] = 3; u.attach.nsamples = N; u.attach.flags = 1U << 9;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_ATTACH, &u), -EINVAL, "ATTACH unknown flag");
	RESET(); u.attach.key[0] = 3; u.attach.nsamples = N; u.attach.form = 1;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_ATTACH, &u), -EINVAL, "ATTACH form without F_FORM");
	RESET(); u.attach.key[0] = 3; u.attach.nsamples = N;
	u.attach.flags = DLCACHE_ATTACH_F_OWNER; u.attach.owner_uid = 0xffffffff;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_ATTACH, &u), -EINVAL, "ATTACH F_OWNER of uid -1");
	RESET(); u.attach.key[0] = 3; u.attach.nsamples = N; u.attach.reserved[0] = 1;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_ATTACH, &u), -EINVAL, "ATTACH reserved[1]");
	RESET(); u.attach.key[0] = 4; u.attach.nsamples = N; u.attach.window = 0xffffffff;
	check_big(t_ioctl(fd, DLCACHE_IOC_ATTACH, &u), "ATTACH window 2^32 - 1");
	RESET(); u.attach.key[0] = 5; u.attach.nsamples = N;
	u.attach.flags = DLCACHE_ATTACH_F_NOCREATE | DLCACHE_ATTACH_F_EXCL;
	ret = t_ioctl(fd, DLCACHE_IOC_ATTACH, &u);
	CHECK(ret == -EINVAL || ret == -ENOENT, "ATTACH NOCREATE|EXCL: %s", t_errname(ret));
	/*
	 * The largest valid data set: created, or -ENOMEM (global policy
	 * limit) or -EDQUOT (per-uid limit) without a warning.
	 */
	RESET(); u.attach.key[0] = 7; u.attach.nsamples = info.max_samples;
	ret = t_ioctl(fd, DLCACHE_IOC_ATTACH, &u);
	CHECK(ret == 0 || ret == -ENOMEM || ret == -EDQUOT, "ATTACH of max_samples (%u): %s",
	      info.max_samples, t_errname(ret));
	if (!ret)
		CHECK_ERR(t_detach(fd, u.attach.handle), 0, "DETACH of the largest data set");
	/* ABI 4: output fields must be 0 on input; zeroed, they are written. */
	RESET(); u.attach.key[0] = 6; u.attach.nsamples = N; u.attach.handle = 999;
	u.attach.owner_uid = 5; u.attach.result_flags = 0xff;
	ret = t_ioctl(fd, DLCACHE_IOC_ATTACH, &u);
	CHECK_ERR(ret, -EINVAL, "ATTACH with garbage in output fields");
	RESET(); u.attach.key[0] = 6; u.attach.nsamples = N;
	ret = t_ioctl(fd, DLCACHE_IOC_ATTACH, &u);
	CHECK_ERR(ret, 0, "ATTACH with output fields zeroed");
	if (!ret) {
		CHECK(u.attach.handle != 0 && u.attach.owner_uid == 0 &&
		      (u.attach.result_flags & DLCACHE_ATTACH_MAY_READ), "output fields not written");
		CHECK_ERR(t_detach(fd, u.attach.handle), 0, "DETACH");
	}

	/* DETACH */
	CHECK(bad_handle_err(t_detach(fd, 0)), "DETACH handle 0");
	CHECK(bad_handle_err(t_detach(fd, 99999)), "DETACH handle 99999");
	RESET(); u.detach.handle = (uint32_t)h; u.detach.flags = 1;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_DETACH, &u), -EINVAL, "DETACH flags");
	RESET(); u.detach.handle = (uint32_t)h; u.detach.reserved[0] = 1;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_DETACH, &u), -EINVAL, "DETACH reserved");

	/* SET_ORDER */
	CHECK(bad_handle_err(t_set_order(fd, 0, 0, ids, N)), "SET_ORDER handle 0");
	CHECK(bad_handle_err(t_set_order(fd, 4711, 0, ids, N)), "SET_ORDER handle 4711");
	CHECK_ERR(t_set_order(fd, h, 0, NULL, N), -EFAULT, "SET_ORDER ids NULL");
	CHECK_ERR(t_set_order(fd, h, 0, (uint32_t *)16, N), -EFAULT, "SET_ORDER ids 0x10");
	CHECK_ERR(t_set_order(fd, h, 0, (uint32_t *)KADDR, N), -EFAULT,
		  "SET_ORDER ids in kernel space");
	/* The array ends in a PROT_NONE page. */
	CHECK_ERR(t_set_order(fd, h, 0, (uint32_t *)(guard + pagesz - 8), N), -EFAULT,
		  "SET_ORDER ids running into an unmapped page");
	CHECK_ERR(t_set_order(fd, h, 0, ids, 0), -EINVAL, "SET_ORDER len 0");
	check_big(t_set_order(fd, h, 0, ids, info.max_order_len + 1), "SET_ORDER len max + 1");
	check_big(t_set_order(fd, h, 0, ids, 0xffffffff), "SET_ORDER len 2^32 - 1");
	ids[N - 1] = N;
	CHECK_ERR(t_set_order(fd, h, 0, ids, N), -EINVAL, "SET_ORDER with id = nsamples");
	ids[N - 1] = 0xffffffff;
	CHECK_ERR(t_set_order(fd, h, 0, ids, N), -EINVAL, "SET_ORDER with id 2^32 - 1");
	ids[N - 1] = N - 1;
	RESET(); u.order.handle = (uint32_t)h; u.order.ids = (uintptr_t)ids; u.order.len = N;
	u.order.flags = 4;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_SET_ORDER, &u), -EINVAL, "SET_ORDER flags");
	u.order.flags = 0; u.order.reserved[0] = 1;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_SET_ORDER, &u), -EINVAL, "SET_ORDER reserved");
	/* None of the refused uploads took: epoch 0 is still free. */
	{
		struct dlcache_stats st;

		t_stats(fd, (uint32_t)h, &st);
		CHECK_EQ(st.ds_end, st.ds_cursor, "positions known after refused uploads");
		CHECK_ERR(t_set_order(fd, h, 0, ids, N), 0, "SET_ORDER epoch 0 after refusals");
		t_stats(fd, (uint32_t)h, &st);
		CHECK_EQ(st.ds_end - st.ds_cursor, N, "positions known after one upload");
	}

	/* STATS */
	RESET(); u.stats.flags = 1U << 5;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_STATS, &u), -EINVAL, "STATS unknown flag");
	RESET(); u.stats.reserved[1] = 1;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_STATS, &u), -EINVAL, "STATS reserved");
	RESET(); u.stats.handle = (uint32_t)h;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_STATS, &u), -EINVAL, "STATS handle without F_DATASET");
	RESET(); u.stats.flags = DLCACHE_STATS_F_DATASET; u.stats.handle = 31337;
	CHECK(bad_handle_err(t_ioctl(fd, DLCACHE_IOC_STATS, &u)), "STATS of a bad handle");
	RESET(); u.stats.flags = DLCACHE_STATS_F_DATASET | DLCACHE_STATS_F_INDEX;
	u.stats.handle = 100000;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_STATS, &u), -ENOENT, "STATS index past the end");
	RESET(); u.stats.flags = DLCACHE_STATS_F_DATASET | DLCACHE_STATS_F_INDEX;
	u.stats.handle = 0;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_STATS, &u), 0, "STATS index 0");

	/* SET_CAPACITY, DROP */
	RESET(); u.cap.bytes = 1 << 20; u.cap.flags = 1;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_SET_CAPACITY, &u), -EINVAL, "SET_CAPACITY flags");
	RESET(); u.cap.bytes = 1 << 20; u.cap.resv0 = 1;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_SET_CAPACITY, &u), -EINVAL, "SET_CAPACITY resv0");
	RESET(); u.cap.bytes = 1 << 20; u.cap.reserved[1] = 1;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_SET_CAPACITY, &u), -EINVAL, "SET_CAPACITY reserved");
	RESET(); u.drop.flags = 1U << 4;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_DROP, &u), -EINVAL, "DROP unknown flag");
	RESET(); u.drop.resv0 = 1;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_DROP, &u), -EINVAL, "DROP resv0");
	RESET(); u.drop.reserved[0] = 1;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_DROP, &u), -EINVAL, "DROP reserved");
	RESET(); u.drop.flags = DLCACHE_DROP_F_KEY; u.drop.key[0] = 0xdead;
	ret = t_ioctl(fd, DLCACHE_IOC_DROP, &u);
	CHECK(ret == 0 || ret == -ENOENT, "DROP of a missing key: %s", t_errname(ret));

	/* Unknown and malformed commands. */
	{
		const struct { unsigned long cmd; const char *name; } bad[] = {
			/* ABI 3's magic, 'D' (s390 DASD's): gone in ABI 4. */
			{ _IOWR('D', 0x00, struct dlcache_info), "ABI 3 GET_INFO ('D')" },
			{ _IOWR('D', 0x06, struct dlcache_stats), "ABI 3 STATS ('D')" },
			{ _IOWR(DLCACHE_IOC_MAGIC, 0x09, struct dlcache_info), "nr 9" },
			{ _IOWR(DLCACHE_IOC_MAGIC, 0x7f, struct dlcache_info), "nr 0x7f" },
			{ _IOWR(DLCACHE_IOC_MAGIC, 0xff, struct dlcache_stats), "nr 0xff" },
			{ _IO(DLCACHE_IOC_MAGIC, 0x00), "GET_INFO without size" },
			{ _IOWR(DLCACHE_IOC_MAGIC, 0x00, uint64_t), "GET_INFO with size 8" },
			{ _IOR(DLCACHE_IOC_MAGIC, 0x00, struct dlcache_info), "GET_INFO as _IOR" },
			{ _IOW(DLCACHE_IOC_MAGIC, 0x03, struct dlcache_attach), "ATTACH as _IOW" },
			{ _IOWR(DLCACHE_IOC_MAGIC, 0x06, struct dlcache_info), "STATS with the size of info" },
			{ _IOWR('X', 0x00, struct dlcache_info), "magic X" },
			{ 0x5401, "TCGETS" },
			{ 0, "0" },
		};

		for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
			RESET();
			ret = t_ioctl(fd, bad[j].cmd, &u);
			if (ret != -ENOTTY)
				FAIL("ioctl %s (%#lx): got %s, want -ENOTTY", bad[j].name,
				     bad[j].cmd, t_errname(ret));
		}
	}

	/* Bad argument pointers for every command. */
	{
		void *ptrs[] = { NULL, (void *)1, (void *)KADDR, guard + pagesz,
				 guard + pagesz - 8 };

		for (size_t j = 0; j < T_NIOCS; j++)
			for (size_t k = 0; k < sizeof(ptrs) / sizeof(ptrs[0]); k++) {
				ret = t_ioctl(fd, t_iocs[j].cmd, ptrs[k]);
				if (ret != -EFAULT)
					FAIL("ioctl %s with argument %p: got %s, want -EFAULT",
					     t_iocs[j].name, ptrs[k], t_errname(ret));
			}
		/* Read-only memory: the kernel cannot write the result back. */
		ret = t_ioctl(fd, DLCACHE_IOC_GET_INFO, guard + 2 * pagesz);
		CHECK_ERR(ret, -EFAULT, "GET_INFO into read-only memory");
		ret = t_ioctl(fd, DLCACHE_IOC_STATS, guard + 2 * pagesz);
		CHECK_ERR(ret, -EFAULT, "STATS into read-only memory");
	}
#undef RESET
}

/* ---- rings: setup and mmap ------------------------------------------------ */

static void setup_table(void)
{
	struct dlcache_ring_setup p;
	struct t_ring r2;
	void *m;
	long ret;
	int fd2 = t_open();

	/* Before SETUP_RING: no ENTER, no mmap. */
	{
		struct dlcache_enter e;

		memset(&e, 0, sizeof(e));
		ret = t_ioctl(fd2, DLCACHE_IOC_ENTER, &e);
		CHECK(ret < 0, "ENTER before SETUP_RING succeeded");
		m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd2, DLCACHE_OFF_SQ_RING);
		CHECK(m == MAP_FAILED, "mmap before SETUP_RING succeeded");
		if (m != MAP_FAILED)
			munmap(m, 4096);
	}
#define SETUP(field, val, want_fn, what) do {					\
		memset(&p, 0, sizeof(p));					\
		p.sq_entries = 8;						\
		p.field = (val);						\
		ret = t_ioctl(fd2, DLCACHE_IOC_SETUP_RING, &p);			\
		want_fn;							\
	} while (0)
	SETUP(sq_entries, 0, CHECK_ERR(ret, -EINVAL, "SETUP_RING sq_entries 0"), 0);
	SETUP(sq_entries, info.max_ring_entries * 2, check_big(ret, "SETUP_RING sq 2 * max"), 0);
	SETUP(sq_entries, 0xffffffff, check_big(ret, "SETUP_RING sq 2^32 - 1"), 0);
	SETUP(sq_entries, 0x80000001, check_big(ret, "SETUP_RING sq 2^31 + 1"), 0);
	SETUP(cq_entries, 4, CHECK_ERR(ret, -EINVAL, "SETUP_RING cq below sq"), 0);
	SETUP(cq_entries, 0xffffffff, check_big(ret, "SETUP_RING cq 2^32 - 1"), 0);
	SETUP(flags, 1, CHECK_ERR(ret, -EINVAL, "SETUP_RING flags"), 0);
	SETUP(resv0, 1, CHECK_ERR(ret, -EINVAL, "SETUP_RING resv0"), 0);
	SETUP(reserved[2], 1, CHECK_ERR(ret, -EINVAL, "SETUP_RING reserved"), 0);
#undef SETUP

	/* ABI 4: garbage in the output fields is -EINVAL; zeroed, they are written. */
	{
		int fd3 = t_open();

		memset(&p, 0, sizeof(p));
		p.sq_entries = 5;
		p.sq_mmap_size = 1;
		p.cq_mmap_size = 3;
		p.sq_off.head = 0xffff;
		p.cq_off.cqes = 0xffff;
		ret = t_ioctl(fd3, DLCACHE_IOC_SETUP_RING, &p);
		CHECK_ERR(ret, -EINVAL, "SETUP_RING with garbage in the output fields");
		memset(&p, 0, sizeof(p));
		p.sq_entries = 5;
		ret = t_ioctl(fd3, DLCACHE_IOC_SETUP_RING, &p);
		CHECK_ERR(ret, 0, "SETUP_RING with the output fields zeroed");
		CHECK(p.sq_mmap_size > 0 && p.cq_mmap_size > 0 && p.cq_off.cqes != 0,
		      "SETUP_RING did not write its output fields");
		close(fd3);
	}
	ret = t_ring_init(&r2, fd2, 5, 0);
	CHECK_ERR(ret, 0, "SETUP_RING of 5 entries");
	if (ret)
		goto out;
	CHECK_EQ(r2.p.sq_entries, 8, "5 SQ entries rounded up");

	/* Bad mmaps. */
	{
		/* Exactly DLCACHE_OFF_SQ_RING or _CQ_RING; 1 << 32 was ABI 1's CQ. */
		static const long long bad_off[] = {
			0x200000000LL, 0x100000000LL, 0x100001000LL, 4096,
			DLCACHE_OFF_CQ_RING + 4096, DLCACHE_OFF_CQ_RING - 4096,
			DLCACHE_OFF_CQ_RING | 0x100000000LL,
		};

		for (size_t i = 0; i < sizeof(bad_off) / sizeof(bad_off[0]); i++) {
			m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd2, (off_t)bad_off[i]);
			CHECK(m == MAP_FAILED && errno == EINVAL, "mmap at offset %#llx: %s",
			      bad_off[i], m == MAP_FAILED ? t_errname(-errno) : "mapped");
			if (m != MAP_FAILED)
				munmap(m, 4096);
		}
	}
	m = mmap(NULL, r2.p.sq_mmap_size + 16 * 4096, PROT_READ, MAP_SHARED, fd2,
		 DLCACHE_OFF_SQ_RING);
	CHECK(m == MAP_FAILED, "mmap of 64 KiB more than the SQ region succeeded");
	if (m != MAP_FAILED)
		munmap(m, r2.p.sq_mmap_size + 16 * 4096);

	/* A second SETUP_RING either fails or replaces the ring; the fd works. */
	memset(&p, 0, sizeof(p));
	p.sq_entries = 4;
	ret = t_ioctl(fd2, DLCACHE_IOC_SETUP_RING, &p);
	if (ret == 0) {
		struct t_ring r3;
		struct dlcache_cqe cqe;

		t_ring_unmap(&r2);
		ret = t_ring_init(&r3, fd2, 4, 0);
		CHECK_ERR(ret, 0, "third SETUP_RING after a second one succeeded");
		if (!ret) {
			CHECK_ERR(t_nop(&r3, 3, &cqe), 0, "NOP on the replaced ring");
			t_ring_unmap(&r3);
		}
	} else {
		struct dlcache_cqe cqe;

		CHECK(ret == -EBUSY || ret == -EEXIST || ret == -EINVAL,
		      "second SETUP_RING: %s", t_errname(ret));
		CHECK_ERR(t_nop(&r2, 2, &cqe), 0, "NOP after a refused second SETUP_RING");
		t_ring_unmap(&r2);
	}
out:
	close(fd2);
}

/* ---- ring entries --------------------------------------------------------- */

/* Submits @sqe; expects a CQE with @want (or, for malformed entries,
 * no CQE and `dropped` grown); then checks that a NOP still works. */
static void sqe_case(struct dlcache_sqe sqe, bool malformed, long want, long want2,
		     const char *what)
{
	struct dlcache_cqe cqe;
	uint32_t dropped = *r.sq_dropped;
	long ret;

	sqe.user_data = 0xbad0000 + __LINE__;
	if (!t_push(&r, &sqe))
		FATAL("%s: SQ full", what);
	ret = t_enter(&r, 1, 0, 0, 0);
	if (ret < 0) {
		FAIL("%s: ENTER %s (a bad entry must complete, not fail ENTER)", what,
		     t_errname(ret));
		return;
	}
	CHECK_EQ(ret, 1, "ENTER consumed");
	if (t_reap(&r, &cqe)) {
		if (cqe.res != want && cqe.res != want2)
			FAIL("%s: res %s, want %s", what, t_errname(cqe.res), t_errname(want));
		CHECK_EQ(cqe.user_data, sqe.user_data, "user_data of a failed entry");
		if (cqe.flags & (DLCACHE_CQE_F_FILL | DLCACHE_CQE_F_CACHED))
			FAIL("%s: flags %#x on a failed entry", what, cqe.flags);
		if (cqe.res < 0 && cqe.res != -ENOENT)
			nerr_cqes++;
	} else if (!malformed || *r.sq_dropped != dropped + 1) {
		FAIL("%s: no completion%s", what, malformed ? " and dropped not counted" : "");
	}
	ret = t_nop(&r, 42, &cqe);
	CHECK_ERR(ret, 0, "NOP after a bad entry");
}

static void sqe_table(void)
{
	struct dlcache_sqe base, s;
	struct dlcache_cqe cqe;
	uint8_t *buf = malloc(info.max_sample_size + 2);
	uint32_t ids[N] = { 3, 1, 4, 0, 5, 2, 6, 7 };
	long ret;

	memset(&base, 0, sizeof(base));
	base.opcode = DLCACHE_OP_GET;
	base.handle = (uint32_t)h;
	base.sample = 1;
	base.addr = (uintptr_t)buf;
	base.len = 4096;

	s = base; s.opcode = DLCACHE_OP_LAST; sqe_case(s, true, -EINVAL, -EINVAL, "opcode LAST");
	s = base; s.opcode = 200; sqe_case(s, true, -EINVAL, -EINVAL, "opcode 200");
	s = base; s.opcode = 255; sqe_case(s, true, -EINVAL, -EINVAL, "opcode 255");
	s = base; s.resv0 = 1; sqe_case(s, true, -EINVAL, -EINVAL, "resv0");
	for (int i = 0; i < 3; i++) {
		s = base; s.resv[i] = 1ULL << 63; sqe_case(s, true, -EINVAL, -EINVAL, "resv[i]");
	}
	s = base; s.flags = 1U << 15; sqe_case(s, true, -EINVAL, -EINVAL, "flag 1 << 15");
	/* 1 << 2 is DLCACHE_SQE_F_AHEAD now: the first flag no op takes. */
	s = base; s.flags = 1U << 3; sqe_case(s, true, -EINVAL, -EINVAL, "flag 1 << 3");
	s = base; s.opcode = DLCACHE_OP_PUT; s.flags = DLCACHE_SQE_F_AHEAD;
	sqe_case(s, true, -EINVAL, -EINVAL, "PUT with F_AHEAD");
	s = base; s.flags = DLCACHE_SQE_F_FAIL; sqe_case(s, true, -EINVAL, -EINVAL, "GET with F_FAIL");
	s = base; s.opcode = DLCACHE_OP_PUT; s.flags = DLCACHE_SQE_F_AT;
	sqe_case(s, true, -EINVAL, -EINVAL, "PUT with F_AT");
	s = base; s.opcode = DLCACHE_OP_ABORT; s.flags = DLCACHE_SQE_F_AT;
	sqe_case(s, true, -EINVAL, -EINVAL, "ABORT with F_AT");
	s = base; s.opcode = DLCACHE_OP_NOP; s.flags = DLCACHE_SQE_F_FAIL;
	sqe_case(s, true, -EINVAL, -EINVAL, "NOP with F_FAIL");
	s = base; s.epoch = 1; sqe_case(s, true, -EINVAL, -EINVAL, "GET epoch without F_AT");
	s = base; s.index = 1; sqe_case(s, true, -EINVAL, -EINVAL, "GET index without F_AT");

	/* Bad handles and samples. */
	s = base; s.handle = 0; sqe_case(s, false, -EINVAL, -EBADF, "GET handle 0");
	s = base; s.handle = 777; sqe_case(s, false, -EINVAL, -EBADF, "GET handle 777");
	s = base; s.sample = N; sqe_case(s, false, -EINVAL, -EINVAL, "GET sample = nsamples");
	s = base; s.sample = 0xffffffff; sqe_case(s, false, -EINVAL, -EINVAL, "GET sample 2^32 - 1");
	s = base; s.opcode = DLCACHE_OP_PUT; s.sample = N;
	sqe_case(s, false, -EINVAL, -EINVAL, "PUT sample = nsamples");
	s = base; s.opcode = DLCACHE_OP_ABORT; s.sample = N; s.addr = 0; s.len = 0;
	sqe_case(s, false, -EINVAL, -EINVAL, "ABORT sample = nsamples");

	/* GET F_AT at a position that is not in the order: a plain GET that
	 * moves nothing (abi.md: "an unknown position moves nothing"). */
	CHECK_ERR(t_set_order(fd, h, 1, ids, N), 0, "SET_ORDER epoch 1");
	{
		static const struct { uint32_t epoch, index, sample; const char *what; } at[] = {
			{ 1, N, 7, "GET F_AT index = order length" },
			{ 9, 0, 3, "GET F_AT epoch not uploaded" },
			{ 1, 0, 4, "GET F_AT where the order has another sample" },
		};
		struct dlcache_stats st0, st1;

		for (size_t j = 0; j < sizeof(at) / sizeof(at[0]); j++) {
			t_stats(fd, (uint32_t)h, &st0);
			s = base;
			s.flags = DLCACHE_SQE_F_AT;
			s.epoch = at[j].epoch;
			s.index = at[j].index;
			s.sample = at[j].sample;
			s.user_data = j;
			ret = t_do(&r, &s, &cqe);
			if (ret < 0) {
				FAIL("%s: %s", at[j].what, t_errname(ret));
				continue;
			}
			CHECK_ERR(cqe.res, -ENOENT, at[j].what);
			if (cqe.flags & DLCACHE_CQE_F_FILL)
				CHECK_ERR(t_abort(&r, (uint32_t)h, at[j].sample, 0, &cqe), 0, "ABORT");
			else
				FAIL("%s: a miss without F_FILL", at[j].what);
			t_stats(fd, (uint32_t)h, &st1);
			if (st1.ds_cursor != st0.ds_cursor)
				FAIL("%s: the cursor moved from %llu to %llu", at[j].what,
				     (unsigned long long)st0.ds_cursor,
				     (unsigned long long)st1.ds_cursor);
		}
	}

	/* Lengths and buffers of PUT. */
	s = base; s.opcode = DLCACHE_OP_PUT; s.len = info.max_sample_size + 1;
	sqe_case(s, false, -E2BIG, -EINVAL, "PUT max_sample_size + 1");
	s = base; s.opcode = DLCACHE_OP_PUT; s.len = 0xffffffff;
	sqe_case(s, false, -E2BIG, -EINVAL, "PUT len 2^32 - 1");
	s = base; s.opcode = DLCACHE_OP_PUT; s.len = 0;
	sqe_case(s, false, -EINVAL, -EINVAL, "PUT len 0");
	/* addr 0 with a length is malformed for the module (-EINVAL); a
	 * failed copy would be -EFAULT. Either is an error; no other. */
	s = base; s.opcode = DLCACHE_OP_PUT; s.addr = 0; s.len = 100;
	sqe_case(s, false, -EFAULT, -EINVAL, "PUT from NULL");
	s = base; s.opcode = DLCACHE_OP_PUT; s.addr = 1; s.len = 100;
	sqe_case(s, false, -EFAULT, -EFAULT, "PUT from address 1");
	s = base; s.opcode = DLCACHE_OP_PUT; s.addr = KADDR; s.len = 100;
	sqe_case(s, false, -EFAULT, -EFAULT, "PUT from kernel space");
	s = base; s.opcode = DLCACHE_OP_PUT; s.addr = (uintptr_t)guard + pagesz - 100; s.len = 200;
	sqe_case(s, false, -EFAULT, -EFAULT, "PUT running into an unmapped page");
	/* None of those cached sample 1. */
	ret = t_get(&r, (uint32_t)h, 1, buf, 4096, &cqe);
	CHECK_ERR(ret, -ENOENT, "GET of sample 1 after refused PUTs");
	if (cqe.flags & DLCACHE_CQE_F_FILL)
		CHECK_ERR(t_abort(&r, (uint32_t)h, 1, 0, &cqe), 0, "ABORT");

	/* GET of a cached sample into bad buffers. */
	t_pattern(buf, 5000, key[0], 2);
	ret = t_put(&r, (uint32_t)h, 2, buf, 5000, &cqe);
	CHECK_EQ(ret, 5000, "PUT of sample 2");
	s = base; s.sample = 2; s.addr = 0; s.len = 5000;
	sqe_case(s, false, -EFAULT, -EINVAL, "GET hit into NULL");
	s = base; s.sample = 2; s.addr = KADDR; s.len = 5000;
	sqe_case(s, false, -EFAULT, -EFAULT, "GET hit into kernel space");
	s = base; s.sample = 2; s.addr = (uintptr_t)guard + 2 * pagesz; s.len = 5000;
	sqe_case(s, false, -EFAULT, -EFAULT, "GET hit into read-only memory");
	s = base; s.sample = 2; s.addr = (uintptr_t)guard + pagesz - 100; s.len = 5000;
	sqe_case(s, false, -EFAULT, -EFAULT, "GET hit running into an unmapped page");
	s = base; s.sample = 2; s.len = 0;
	sqe_case(s, false, -EMSGSIZE, -EMSGSIZE, "GET hit with len 0");
	memset(buf, 0, 5000);
	ret = t_get(&r, (uint32_t)h, 2, buf, 5000, &cqe);
	CHECK_EQ(ret, 5000, "GET of sample 2 after the bad GETs");
	if (ret == 5000)
		t_pattern_ok(buf, 5000, key[0], 2);
	free(buf);
}

/* The user owns the SQ tail and CQ head; garbage there must not hurt. */
static void ring_abuse(void)
{
	struct dlcache_cqe cqe;
	uint32_t head = *r.sq_head, tail = *r.sq_tail;
	long ret;

	/* A tail far beyond the head: stale slots are run again, but never
	 * more than the CQ can take (the CQ never overflows). */
	__atomic_store_n(r.sq_tail, head + 1000, __ATOMIC_RELEASE);
	ret = t_enter(&r, 1000, 0, 0, 0);
	CHECK(ret < 0 || ret <= (long)*r.cq_entries, "ENTER consumed %ld with a %u-entry CQ",
	      ret, *r.cq_entries);
	CHECK(t_cq_ready(&r) <= *r.cq_entries, "CQ holds %u of %u entries", t_cq_ready(&r),
	      *r.cq_entries);
	while (t_reap(&r, &cqe))
		;
	/* Resynchronise the user side with whatever the kernel consumed. */
	tail = *r.sq_head;
	__atomic_store_n(r.sq_tail, tail, __ATOMIC_RELEASE);
	/* A CQ head beyond the tail: the kernel must not overrun the CQ. */
	__atomic_store_n(r.cq_head, *r.cq_tail + 100, __ATOMIC_RELEASE);
	{
		struct dlcache_sqe s;

		memset(&s, 0, sizeof(s));
		s.opcode = DLCACHE_OP_NOP;
		t_push(&r, &s);
		/* Whatever it returns, it must not write outside the CQ. */
		ret = t_enter(&r, 1, 0, 0, 0);
		t_info("ENTER with a CQ head 100 beyond the tail: %s", t_errname(ret));
	}
	__atomic_store_n(r.cq_head, *r.cq_tail, __ATOMIC_RELEASE);
	/* Any NOP left unconsumed goes now. */
	ret = t_enter(&r, 8, 0, 0, 0);
	CHECK(ret >= 0, "ENTER after restoring the CQ head: %s", t_errname(ret));
	while (t_reap(&r, &cqe))
		;
	ret = t_nop(&r, 5, &cqe);
	CHECK_ERR(ret, 0, "NOP after ring abuse");

	/*
	 * ENTER whose struct is read-only: the SQE is consumed, so the
	 * return value (authoritative) says 1, not -EFAULT.
	 */
	{
		struct dlcache_enter *ro;
		struct dlcache_sqe s;

		ro = mmap(NULL, pagesz, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (ro == MAP_FAILED)
			FATAL("mmap: %m");
		memset(ro, 0, sizeof(*ro));
		ro->to_submit = 1;
		mprotect(ro, pagesz, PROT_READ);
		memset(&s, 0, sizeof(s));
		s.opcode = DLCACHE_OP_NOP;
		s.user_data = 77;
		t_push(&r, &s);
		ret = t_ioctl(fd, DLCACHE_IOC_ENTER, ro);
		CHECK_EQ(ret, 1, "ENTER consuming 1 SQE with a read-only argument");
		CHECK(t_reap(&r, &cqe) && cqe.user_data == 77,
		      "the NOP of that ENTER has no completion");
		munmap(ro, pagesz);
	}
	(void)head;
}

int main(void)
{
	long ret;

	t_time_limit(60);
	pagesz = sysconf(_SC_PAGESIZE);
	guard = mmap(NULL, 3 * pagesz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (guard == MAP_FAILED)
		FATAL("mmap: %m");
	memset(guard, 0, 3 * pagesz);
	mprotect(guard + pagesz, pagesz, PROT_NONE);
	mprotect(guard + 2 * pagesz, pagesz, PROT_READ);

	t_key("badio", key);
	fd = t_open();
	if (t_get_info(fd, &info) < 0)
		FATAL("GET_INFO");
	h = t_attach(fd, key, N, 0600, 0, NULL);
	if (h < 0)
		FATAL("ATTACH: %s", t_errname(h));
	ret = t_ring_init(&r, fd, 8, 0);
	if (ret < 0)
		FATAL("ring: %s", t_errname(ret));

	ioctl_table();
	ioctl_generic();
	setup_table();
	sqe_table();
	ring_abuse();

	{
		struct dlcache_stats st;

		t_stats(fd, 0, &st);
		CHECK(st.global.errors >= nerr_cqes, "errors counted %llu, error CQEs %u",
		      (unsigned long long)st.global.errors, nerr_cqes);
		CHECK_EQ(st.global.fills_inflight, 0, "fills in flight at the end");
	}
	t_ring_unmap(&r);
	close(fd);
	return t_done();
}
