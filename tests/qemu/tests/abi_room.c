// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * abi_room: ABI 4's room to grow (issue 29, item 7).
 * 1. The ioctl magic is 0xDC: ABI 3's GET_INFO and STATS ('D', which s390
 *    DASD also uses) are -ENOTTY, ABI 4's work.
 * 2. Every command refuses a nonzero kernel field ("kernel:" in
 *    uapi/dlcache.h) with -EINVAL, each 32-bit word of them in turn, and
 *    works with them zeroed; ATTACH's owner_uid without F_OWNER too.
 * 3. Features are the session's: its first GET_INFO fixes them (a later
 *    one asking for others gets the same). The last detach (DETACH or
 *    close) of a session that did not enable DLCACHE_FEAT_IDLE frees the
 *    data set (STATS no longer lists it), whoever attached it before; one
 *    of a session that did leaves it idle.
 * Against a module of ABI 3 ('D') the test says so and goes on with the
 * old numbers, so that parts 2 and 3 show what that module does.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dlc_test.h"

#define N 16

/* 0: this module speaks ABI 4 (0xDC); 1: ABI 3 ('D'), found by part 1. */
static int old_magic;

/* @cmd as this module numbers it. */
static unsigned long C(unsigned long cmd)
{
	if (!old_magic)
		return cmd;
	return (cmd & ~((unsigned long)_IOC_TYPEMASK << _IOC_TYPESHIFT)) |
	       ((unsigned long)'D' << _IOC_TYPESHIFT);
}

static long ioc(int fd, unsigned long cmd, void *arg)
{
	return t_ioctl(fd, C(cmd), arg);
}

static int open_dev(void)
{
	return t_open_raw();
}

/* GET_INFO asking for @want; the answer in *@out (may be NULL). */
static long get_info(int fd, uint64_t want, struct dlcache_info *out)
{
	struct dlcache_info info;
	long ret;

	memset(&info, 0, sizeof(info));
	info.features = want;
	ret = ioc(fd, DLCACHE_IOC_GET_INFO, &info);
	if (out)
		*out = info;
	return ret;
}

static long attach(int fd, const uint64_t key[2])
{
	struct dlcache_attach a;
	long ret;

	memset(&a, 0, sizeof(a));
	a.key[0] = key[0];
	a.key[1] = key[1];
	a.nsamples = N;
	a.mode = 0600;
	ret = ioc(fd, DLCACHE_IOC_ATTACH, &a);
	return ret < 0 ? ret : (long)a.handle;
}

static long detach(int fd, uint32_t h)
{
	struct dlcache_detach d;

	memset(&d, 0, sizeof(d));
	d.handle = h;
	return ioc(fd, DLCACHE_IOC_DETACH, &d);
}

/*
 * Whether STATS lists data set @key of root: 1 (idle in *@idle), 0, or
 * -errno.
 */
static long listed(int fd, const uint64_t key[2], bool *idle)
{
	struct dlcache_stats st;
	long ret;

	for (uint32_t i = 0; i < 256; i++) {
		memset(&st, 0, sizeof(st));
		st.handle = i;
		st.flags = DLCACHE_STATS_F_DATASET | DLCACHE_STATS_F_INDEX;
		ret = ioc(fd, DLCACHE_IOC_STATS, &st);
		if (ret == -ENOENT)
			return 0;
		if (ret < 0)
			return ret;
		if (st.ds_key[0] == key[0] && st.ds_key[1] == key[1] &&
		    st.ds_owner_uid == 0) {
			if (idle)
				*idle = st.ds_flags & DLCACHE_DS_F_IDLE;
			return 1;
		}
	}
	return 0;
}

static void drop_key(int fd, const uint64_t key[2])
{
	struct dlcache_drop d;

	memset(&d, 0, sizeof(d));
	d.key[0] = key[0];
	d.key[1] = key[1];
	d.flags = DLCACHE_DROP_F_KEY;
	ioc(fd, DLCACHE_IOC_DROP, &d);
}

/* ---- 1. the magic ------------------------------------------------------- */

static void magic(void)
{
	struct dlcache_info info;
	struct dlcache_stats st;
	int fd = open_dev();
	long ret;

	memset(&info, 0, sizeof(info));
	ret = t_ioctl(fd, _IOWR('D', 0x00, struct dlcache_info), &info);
	CHECK_ERR(ret, -ENOTTY, "ABI 3's GET_INFO ('D', 0x00)");
	memset(&st, 0, sizeof(st));
	ret = t_ioctl(fd, _IOWR('D', 0x06, struct dlcache_stats), &st);
	CHECK_ERR(ret, -ENOTTY, "ABI 3's STATS ('D', 0x06)");
	CHECK_EQ(_IOC_TYPE(DLCACHE_IOC_GET_INFO), 0xDC, "DLCACHE_IOC_MAGIC");
	memset(&info, 0, sizeof(info));
	ret = t_ioctl(fd, DLCACHE_IOC_GET_INFO, &info);
	if (ret == -ENOTTY) {
		FAIL("ABI 4's GET_INFO (0xDC): -ENOTTY: the module speaks ABI 3 or "
		     "earlier; going on with 'D'");
		old_magic = 1;
	} else {
		CHECK_ERR(ret, 0, "ABI 4's GET_INFO (0xDC)");
		CHECK_EQ(info.abi_version, DLCACHE_ABI_VERSION, "abi_version");
	}
	close(fd);
}

/* ---- 2. kernel fields are 0 on input ---------------------------------- */

/*
 * The kernel's fields of a command: [first, end) bytes of its struct,
 * every 32-bit word of it tried.
 */
struct out_range {
	size_t first, end;
};

#define RANGE(type, a, b) \
	{ offsetof(struct type, a), offsetof(struct type, b) + \
	  sizeof(((struct type *)0)->b) }

/*
 * Sets each 32-bit word of the ranges @r in turn (to 1) in a copy of
 * @base, a valid argument of @cmd, and expects -EINVAL for each. The
 * caller then sends @base itself, which must work.
 */
static void try_words(int fd, unsigned long cmd, const char *name, const void *base,
		      size_t size, const struct out_range *r, size_t nr)
{
	unsigned char arg[512];
	unsigned tried = 0, taken = 0;
	long ret;

	for (size_t i = 0; i < nr; i++)
		for (size_t off = r[i].first; off + 4 <= r[i].end; off += 4) {
			uint32_t one = 1;

			memcpy(arg, base, size);
			memcpy(arg + off, &one, 4);
			ret = ioc(fd, cmd, arg);
			tried++;
			if (ret != -EINVAL) {
				if (!taken)
					t_info("%s with the kernel's word at %zu set: %s",
					       name, off, t_errname(ret));
				taken++;
			}
		}
	CHECK(!taken, "%s: %u of %u kernel words set on input were not -EINVAL", name,
	      taken, tried);
	if (!taken)
		printf("ok - %s: each of %u kernel words set is -EINVAL\n", name, tried);
}

static void out_fields(void)
{
	static const struct out_range info_r[] = {
		RANGE(dlcache_info, abi_version, abi_version),
		RANGE(dlcache_info, supported, max_members),
	};
	static const struct out_range ring_r[] = {
		RANGE(dlcache_ring_setup, sq_mmap_size, cq_off),
	};
	static const struct out_range enter_r[] = {
		RANGE(dlcache_enter, submitted, submitted),
	};
	static const struct out_range attach_r[] = {
		RANGE(dlcache_attach, handle, handle),
		RANGE(dlcache_attach, owner_uid, result_flags),	/* no F_OWNER */
	};
	static const struct out_range stats_r[] = {
		RANGE(dlcache_stats, capacity_bytes, ds_idle_s),
	};
	static const struct out_range cap_r[] = {
		RANGE(dlcache_capacity, old_bytes, old_bytes),
	};
	static const struct out_range drop_r[] = {
		RANGE(dlcache_drop, dropped_bytes, dropped_bytes),
	};
	static const struct out_range drain_r[] = {
		RANGE(dlcache_drain, nsessions, draining),
	};
	static const struct out_range gord_r[] = {
		RANGE(dlcache_get_order, nconsumers, epochs),
	};
	struct dlcache_get_order go;
	uint32_t ids[4];
	struct dlcache_info info, gi;
	struct dlcache_ring_setup rs;
	struct dlcache_enter e;
	struct dlcache_attach a;
	struct dlcache_stats st;
	struct dlcache_capacity cap;
	struct dlcache_drop d;
	struct dlcache_drain dr;
	uint64_t key[2];
	long ret, h;
	int fd = open_dev();

	t_key("abi-room-out", key);

	memset(&gi, 0, sizeof(gi));
	try_words(fd, DLCACHE_IOC_GET_INFO, "GET_INFO", &gi, sizeof(gi), info_r, 2);
	info = gi;
	CHECK_ERR(ioc(fd, DLCACHE_IOC_GET_INFO, &info), 0, "GET_INFO zeroed");

	memset(&rs, 0, sizeof(rs));
	rs.sq_entries = 4;
	try_words(fd, DLCACHE_IOC_SETUP_RING, "SETUP_RING", &rs, sizeof(rs), ring_r, 1);
	CHECK_ERR(ioc(fd, DLCACHE_IOC_SETUP_RING, &rs), 0, "SETUP_RING zeroed");

	memset(&e, 0, sizeof(e));
	try_words(fd, DLCACHE_IOC_ENTER, "ENTER", &e, sizeof(e), enter_r, 1);
	CHECK_ERR(ioc(fd, DLCACHE_IOC_ENTER, &e), 0, "ENTER zeroed");
	/* Reused as it came back: submitted is 0 (nothing consumed). */
	CHECK_ERR(ioc(fd, DLCACHE_IOC_ENTER, &e), 0, "ENTER again, submitted 0");

	memset(&a, 0, sizeof(a));
	a.key[0] = key[0];
	a.key[1] = key[1];
	a.nsamples = N;
	a.mode = 0600;
	try_words(fd, DLCACHE_IOC_ATTACH, "ATTACH", &a, sizeof(a), attach_r, 2);
	h = ioc(fd, DLCACHE_IOC_ATTACH, &a);
	CHECK_ERR(h, 0, "ATTACH zeroed");
	h = a.handle;
	/* The reply reused as the next request carries the kernel's fields. */
	CHECK_ERR(ioc(fd, DLCACHE_IOC_ATTACH, &a), -EINVAL, "ATTACH of its own reply");
	/* owner_uid is an input with F_OWNER. */
	memset(&a, 0, sizeof(a));
	a.key[0] = key[0];
	a.key[1] = key[1];
	a.nsamples = N;
	a.flags = DLCACHE_ATTACH_F_OWNER;
	a.owner_uid = 0;
	ret = ioc(fd, DLCACHE_IOC_ATTACH, &a);
	CHECK_ERR(ret, 0, "ATTACH F_OWNER of root's own");
	if (!ret)
		detach(fd, a.handle);

	memset(&st, 0, sizeof(st));
	st.handle = (uint32_t)h;
	st.flags = DLCACHE_STATS_F_DATASET;
	try_words(fd, DLCACHE_IOC_STATS, "STATS", &st, sizeof(st), stats_r, 1);
	CHECK_ERR(ioc(fd, DLCACHE_IOC_STATS, &st), 0, "STATS zeroed");

	if (!old_magic) {	/* GET_ORDER is ABI 4's: of line 0's order */
		for (ret = 0; ret < 4; ret++)
			ids[ret] = (uint32_t)ret;
		CHECK_ERR(t_set_order(fd, (uint32_t)h, 0, ids, 4), 0, "SET_ORDER");
		memset(&go, 0, sizeof(go));
		go.handle = (uint32_t)h;
		go.len = 4;
		go.ids = (uintptr_t)ids;
		try_words(fd, DLCACHE_IOC_GET_ORDER, "GET_ORDER", &go, sizeof(go),
			  gord_r, 1);
		CHECK_ERR(ioc(fd, DLCACHE_IOC_GET_ORDER, &go), 0, "GET_ORDER zeroed");
	}

	memset(&cap, 0, sizeof(cap));
	cap.bytes = info.capacity_bytes;
	try_words(fd, DLCACHE_IOC_SET_CAPACITY, "SET_CAPACITY", &cap, sizeof(cap), cap_r, 1);
	CHECK_ERR(ioc(fd, DLCACHE_IOC_SET_CAPACITY, &cap), 0, "SET_CAPACITY zeroed");

	memset(&d, 0, sizeof(d));
	d.key[0] = key[0];
	d.key[1] = key[1];
	d.flags = DLCACHE_DROP_F_KEY;
	try_words(fd, DLCACHE_IOC_DROP, "DROP", &d, sizeof(d), drop_r, 1);
	CHECK_ERR(ioc(fd, DLCACHE_IOC_DROP, &d), 0, "DROP zeroed");

	memset(&dr, 0, sizeof(dr));
	dr.flags = DLCACHE_DRAIN_F_QUERY;
	try_words(fd, DLCACHE_IOC_DRAIN, "DRAIN", &dr, sizeof(dr), drain_r, 1);
	CHECK_ERR(ioc(fd, DLCACHE_IOC_DRAIN, &dr), 0, "DRAIN F_QUERY zeroed");
	CHECK_EQ(dr.draining, 0, "draining");

	detach(fd, (uint32_t)h);
	drop_key(fd, key);
	close(fd);
}

/* ---- 3. features are the session's -------------------------------------- */

/* Expect data set @key listed (@want_idle: idle) or not (-1). */
static void expect(int fd, const uint64_t key[2], int want_idle, const char *what)
{
	bool idle = false;
	long ret = listed(fd, key, &idle);

	if (ret < 0) {
		FAIL("%s: STATS: %s", what, t_errname(ret));
	} else if (want_idle < 0) {
		CHECK(ret == 0, "%s: the data set is still listed (%s), want it freed", what,
		      idle ? "idle" : "attached");
		if (ret == 0)
			printf("ok - %s: freed\n", what);
	} else {
		CHECK(ret == 1 && idle, "%s: the data set is %s, want it idle", what,
		      ret ? "listed, not idle" : "freed");
		if (ret == 1 && idle)
			printf("ok - %s: idle\n", what);
	}
}

static void features(void)
{
	const uint64_t all = ~0ULL;
	struct dlcache_info info;
	unsigned long long keep = 0;
	uint64_t k[6][2];
	int root, fa, fb;
	long ha, hb;

	for (int i = 0; i < 6; i++) {
		char tag[32];

		snprintf(tag, sizeof(tag), "abi-room-feat-%d", i);
		t_key(tag, k[i]);
	}
	root = open_dev();
	CHECK_ERR(get_info(root, 0, &info), 0, "GET_INFO");
	if (!(info.supported & DLCACHE_FEAT_IDLE)) {
		t_info("no DLCACHE_FEAT_IDLE: part 3 not run");
		close(root);
		return;
	}
	if (t_param_get("idle_keep_s", &keep) == 0 && !keep)
		CHECK_ERR(t_param_set("idle_keep_s", 600), 0, "idle_keep_s=600");

	/* The first GET_INFO fixes the session's set; later ones get it. */
	fa = open_dev();
	CHECK_ERR(get_info(fa, DLCACHE_FEAT_IDLE | (1ULL << 63), &info), 0, "GET_INFO IDLE");
	CHECK_EQ(info.features, DLCACHE_FEAT_IDLE, "features after asking IDLE and bit 63");
	CHECK_ERR(get_info(fa, 0, &info), 0, "second GET_INFO asking 0");
	CHECK_EQ(info.features, DLCACHE_FEAT_IDLE, "features after a second GET_INFO asking 0");
	close(fa);
	fb = open_dev();
	CHECK_ERR(get_info(fb, DLCACHE_FEAT_RING, &info), 0, "GET_INFO RING");
	CHECK_ERR(get_info(fb, all, &info), 0, "second GET_INFO asking all");
	CHECK_EQ(info.features, DLCACHE_FEAT_RING, "features after a second GET_INFO asking all");
	close(fb);

	/* 3a. A session with no GET_INFO at all: DETACH frees. */
	fa = open_dev();
	ha = attach(fa, k[0]);
	CHECK(ha >= 1, "ATTACH: %s", t_errname(ha));
	detach(fa, (uint32_t)ha);
	expect(root, k[0], -1, "DETACH of a session without GET_INFO");
	close(fa);

	/* 3b. Every feature but IDLE: DETACH frees, and so does close. */
	fa = open_dev();
	get_info(fa, all & ~DLCACHE_FEAT_IDLE, NULL);
	ha = attach(fa, k[1]);
	CHECK(ha >= 1, "ATTACH: %s", t_errname(ha));
	detach(fa, (uint32_t)ha);
	expect(root, k[1], -1, "DETACH of a session without FEAT_IDLE");
	ha = attach(fa, k[2]);
	CHECK(ha >= 1, "ATTACH: %s", t_errname(ha));
	close(fa);
	expect(root, k[2], -1, "close of a session without FEAT_IDLE");

	/* 3c. With IDLE: DETACH and close leave it idle. */
	fa = open_dev();
	get_info(fa, DLCACHE_FEAT_IDLE, NULL);
	ha = attach(fa, k[3]);
	CHECK(ha >= 1, "ATTACH: %s", t_errname(ha));
	detach(fa, (uint32_t)ha);
	expect(root, k[3], 1, "DETACH of a session with FEAT_IDLE");
	close(fa);

	/* 3d. Two sessions: the last to go decides. */
	fa = open_dev();
	get_info(fa, DLCACHE_FEAT_IDLE, NULL);
	fb = open_dev();
	get_info(fb, 0, NULL);
	ha = attach(fa, k[4]);
	hb = attach(fb, k[4]);
	CHECK(ha >= 1 && hb >= 1, "ATTACH: %s, %s", t_errname(ha), t_errname(hb));
	detach(fa, (uint32_t)ha);
	detach(fb, (uint32_t)hb);
	expect(root, k[4], -1, "last DETACH by the session without FEAT_IDLE");
	ha = attach(fa, k[5]);
	hb = attach(fb, k[5]);
	CHECK(ha >= 1 && hb >= 1, "ATTACH: %s, %s", t_errname(ha), t_errname(hb));
	detach(fb, (uint32_t)hb);
	detach(fa, (uint32_t)ha);
	expect(root, k[5], 1, "last DETACH by the session with FEAT_IDLE");
	/* An idle set re-attached by a session without IDLE: freed at its DETACH. */
	hb = attach(fb, k[5]);
	CHECK(hb >= 1, "re-ATTACH of the idle set: %s", t_errname(hb));
	detach(fb, (uint32_t)hb);
	expect(root, k[5], -1, "idle set re-attached, then DETACH without FEAT_IDLE");
	close(fa);
	close(fb);

	for (int i = 0; i < 6; i++)
		drop_key(root, k[i]);
	if (!keep)
		t_param_set("idle_keep_s", 0);
	close(root);
}

int main(void)
{
	t_time_limit(60);
	if (getuid())
		t_skip("needs root (SET_CAPACITY, DROP, DRAIN, parameters)");
	magic();
	out_fields();
	features();
	return t_done();
}
