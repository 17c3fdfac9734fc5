// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * forms: a data set's form (DLCACHE_FEAT_FORMS, issue 32), the data set
 * (key, owner, form) that holds another form of the samples of (key,
 * owner), such as their decoded pixels.
 *
 * - Keyed apart: the form set and the encoded set of one key are two
 *   data sets; a sample PUT in one is not the other's, and two forms of
 *   one key are two sets as well. STATS says DLCACHE_DS_F_FORM and the
 *   form's number.
 * - Its owner's alone: mode 0600 (another mode: -EINVAL); another user
 *   naming the owner gets -EPERM, and the same key gives that user a
 *   form set of its own, empty. Bad arguments: a form without the flag,
 *   the flag without a form, a form past 255: -EINVAL.
 * - Never filled: a GET's miss completes -ENOENT without
 *   DLCACHE_CQE_F_FILL, where the encoded set's miss takes the fill, and
 *   nothing parks on it; a PUT needs no fill.
 * - Charged the same way: with the capacity at 16 MiB, user A PUTs twice
 *   the capacity of forms, then user B PUTs the capacity into one data
 *   set. The cache never holds more than the capacity, and the owners'
 *   shares count A's forms with A's encoded bytes: B gets its half, A
 *   keeps no more than its half.
 * - DROP of the key drops the forms too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlc_test.h"

#define MIB (1ULL << 20)
#define CAP (16 * MIB)
#define UID_A 5411
#define UID_B 5412
#define N 64
#define SZ (1U << 20)
#define NFORMS 32		/* A's forms: twice the capacity */
#define NB 16			/* B's samples: the capacity */

struct report {
	uint64_t used;		/* the reporter's data sets' bytes */
};

static int a_ready[2], b_ready[2], a_go[2], res[2];
static uint64_t k[2];

static void send_report(const struct report *rp)
{
	if (write(res[1], rp, sizeof(*rp)) != sizeof(*rp))
		FAIL("report: %m");
}

/* Arguments that must be refused, as A (the owner may create). */
static void bad_args(int fd)
{
	struct dlcache_attach a;

	memset(&a, 0, sizeof(a));
	a.key[0] = k[0];
	a.key[1] = k[1];
	a.nsamples = N;
	a.form = 1;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_ATTACH, &a), -EINVAL, "ATTACH form without F_FORM");
	a.form = 0;
	a.flags = DLCACHE_ATTACH_F_FORM;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_ATTACH, &a), -EINVAL, "ATTACH F_FORM, form 0");
	a.form = 256;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_ATTACH, &a), -EINVAL, "ATTACH F_FORM, form 256");
	a.form = 1;
	a.mode = 0640;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_ATTACH, &a), -EINVAL, "ATTACH F_FORM, mode 0640");
}

static int user_a(void)
{
	struct report rp = { 0 };
	struct dlcache_attach out;
	struct dlcache_stats st;
	struct dlcache_cqe cqe;
	struct t_ring r, r2;
	uint8_t *buf = malloc(SZ), *got = malloc(SZ);
	long he, hf, hf2, ret;
	uint32_t i;
	int fd = t_open(), fd2 = t_open();

	if (!buf || !got)
		FATAL("malloc");
	bad_args(fd);
	he = t_attach(fd, k, N, 0600, 0, NULL);
	hf = t_attach_form(fd, k, N, 1, &out);
	hf2 = t_attach_form(fd, k, N, 2, NULL);
	if (he < 0 || hf < 0 || hf2 < 0)
		FATAL("A: ATTACH encoded %s, form 1 %s, form 2 %s", t_errname(he),
		      t_errname(hf), t_errname(hf2));
	CHECK(he != hf && hf != hf2, "A: the forms share a handle");
	CHECK(out.result_flags & DLCACHE_ATTACH_CREATED, "A: form 1 not created apart");
	CHECK_EQ(out.mode, 0600, "A: the form set's mode");
	st = t_stats_of(fd, (uint32_t)hf);
	CHECK_EQ(st.ds_flags, DLCACHE_DS_F_FORM | 1U << DLCACHE_DS_FORM_SHIFT,
		 "A: STATS ds_flags of form 1");
	st = t_stats_of(fd, (uint32_t)he);
	CHECK_EQ(st.ds_flags, 0, "A: STATS ds_flags of the encoded set");
	if (t_ring_init(&r, fd, 8, 0) < 0 || t_ring_init(&r2, fd2, 8, 0) < 0)
		FATAL("A: ring");

	/* Keyed apart: each set's sample 0 is its own. */
	t_pattern(buf, 1000, 1, 0);
	CHECK_EQ(t_put(&r, (uint32_t)he, 0, buf, 1000, &cqe), 1000, "A: PUT encoded 0");
	t_pattern(buf, 5000, 2, 0);
	CHECK_EQ(t_put(&r, (uint32_t)hf, 0, buf, 5000, &cqe), 5000, "A: PUT form 0, no fill");
	CHECK(cqe.flags & DLCACHE_CQE_F_CACHED, "A: form 0 not cached");
	ret = t_get(&r, (uint32_t)he, 0, got, SZ, &cqe);
	CHECK(ret == 1000 && t_pattern_ok(got, 1000, 1, 0), "A: encoded 0 is %s",
	      t_errname(ret));
	ret = t_get(&r, (uint32_t)hf, 0, got, SZ, &cqe);
	CHECK(ret == 5000 && t_pattern_ok(got, 5000, 2, 0), "A: form 0 is %s",
	      t_errname(ret));
	CHECK_ERR(t_get(&r, (uint32_t)hf2, 0, got, SZ, &cqe), -ENOENT, "A: form 2's sample 0");

	/* Never filled: a miss takes no fill, so no other GET parks. */
	ret = t_get(&r, (uint32_t)hf, 1, got, SZ, &cqe);
	CHECK_ERR(ret, -ENOENT, "A: form 1's miss");
	CHECK(!(cqe.flags & DLCACHE_CQE_F_FILL), "A: a form's miss took the fill");
	ret = t_attach_form(fd2, k, N, 1, NULL);
	if (ret < 0)
		FATAL("A: second session's ATTACH: %s", t_errname(ret));
	CHECK_ERR(t_get(&r2, (uint32_t)ret, 1, got, SZ, &cqe), -ENOENT,
		  "A: a second session's GET of that miss");
	CHECK(!(cqe.flags & (DLCACHE_CQE_F_FILL | DLCACHE_CQE_F_WAITED)),
	      "A: the second GET filled or waited (flags %#x)", cqe.flags);
	CHECK_ERR(t_abort(&r, (uint32_t)hf, 1, 0, &cqe), -ENOENT, "A: ABORT of a form");
	ret = t_get(&r, (uint32_t)he, 1, got, SZ, &cqe);
	CHECK(ret == -ENOENT && (cqe.flags & DLCACHE_CQE_F_FILL),
	      "A: the encoded set's miss is %s, flags %#x (want the fill)",
	      t_errname(ret), cqe.flags);
	CHECK_ERR(t_abort(&r, (uint32_t)he, 1, 0, &cqe), 0, "A: ABORT the encoded fill");

	/* Charged as any: twice the capacity of forms. */
	for (i = 0; i < NFORMS; i++) {
		t_pattern(buf, SZ, 3, i);
		CHECK_EQ(t_put(&r, (uint32_t)hf, i + 2, buf, SZ, &cqe), SZ, "A: PUT a form");
	}
	st = t_stats_of(fd, (uint32_t)hf);
	t_info("A's forms alone: %llu KiB of %u MiB PUT", (unsigned long long)(st.dataset.used_bytes >> 10),
	       (unsigned)(NFORMS * (SZ / MIB)));
	CHECK(st.used_bytes <= CAP, "A: the cache holds %llu KiB, over its capacity",
	      (unsigned long long)(st.used_bytes >> 10));
	CHECK(st.dataset.used_bytes + 2 * SZ >= CAP, "A: alone, forms hold only %llu KiB",
	      (unsigned long long)(st.dataset.used_bytes >> 10));
	t_signal(a_ready[1]);
	if (!t_await(a_go[0], 90))
		FATAL("A: never told to measure");
	rp.used = t_stats_of(fd, (uint32_t)hf).dataset.used_bytes +
		  t_stats_of(fd, (uint32_t)he).dataset.used_bytes +
		  t_stats_of(fd, (uint32_t)hf2).dataset.used_bytes;
	send_report(&rp);
	close(fd2);
	close(fd);
	return t_done();
}

static int user_b(void)
{
	struct report rp = { 0 };
	struct dlcache_attach out;
	struct dlcache_cqe cqe;
	struct t_ring r;
	uint8_t *buf = malloc(SZ);
	long h, hf, ret;
	uint32_t i;
	int fd = t_open();

	if (!buf)
		FATAL("malloc");
	t_key("forms-b", k);
	h = t_attach(fd, k, N, 0600, 0, NULL);
	if (t_ring_init(&r, fd, 8, 0) < 0)
		FATAL("B: ring");
	if (h < 0)
		FATAL("B: ATTACH: %s", t_errname(h));
	for (i = 0; i < NB; i++) {
		t_pattern(buf, SZ, 4, i);
		ret = t_put(&r, (uint32_t)h, i, buf, SZ, &cqe);
		CHECK_EQ(ret, SZ, "B: PUT");
	}
	rp.used = t_stats_of(fd, (uint32_t)h).dataset.used_bytes;
	send_report(&rp);

	t_key("forms-a", k);
	/* A's forms: not for B, whoever names their owner. */
	CHECK_ERR(t_attach_owner(fd, k, N, UID_A, DLCACHE_ATTACH_F_FORM, NULL), -EINVAL,
		  "B: F_FORM without a form");
	{
		struct dlcache_attach a;

		memset(&a, 0, sizeof(a));
		a.key[0] = k[0];
		a.key[1] = k[1];
		a.nsamples = N;
		a.flags = DLCACHE_ATTACH_F_FORM | DLCACHE_ATTACH_F_OWNER;
		a.form = 1;
		a.owner_uid = UID_A;
		CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_ATTACH, &a), -EPERM,
			  "B: ATTACH of A's form set");
	}
	/* The same key is B's own form set, empty. */
	hf = t_attach_form(fd, k, N, 1, &out);
	if (hf < 0)
		FATAL("B: ATTACH its own form set: %s", t_errname(hf));
	CHECK(out.result_flags & DLCACHE_ATTACH_CREATED, "B: found a form set of A's key");
	CHECK_EQ(out.owner_uid, UID_B, "B: its form set's owner");
	CHECK_ERR(t_get(&r, (uint32_t)hf, 0, buf, SZ, &cqe), -ENOENT, "B: sample 0 of its forms");

	close(fd);
	return t_done();
}

int main(void)
{
	struct dlcache_info info;
	struct report ra, rb;
	struct dlcache_stats st;
	uint64_t old = 0, dropped = 0;
	pid_t a, b;
	long ret;
	int fd;

	t_time_limit(150);
	if (getuid() != 0)
		t_skip("needs root to drop privileges");
	fd = t_open();
	if (t_get_info(fd, &info) < 0)
		FATAL("GET_INFO");
	CHECK(info.supported & DLCACHE_FEAT_FORMS, "DLCACHE_FEAT_FORMS not supported");
	ret = t_set_capacity(fd, CAP, &old);
	if (ret < 0)
		FATAL("SET_CAPACITY 16 MiB: %s", t_errname(ret));
	if (chown(DLCACHE_DEVICE, 0, T_DEVGRP))
		FATAL("chown %s: %m", DLCACHE_DEVICE);
	if (pipe(a_ready) || pipe(b_ready) || pipe(a_go) || pipe(res))
		FATAL("pipe: %m");
	t_key("forms-a", k);

	a = t_start_user(UID_A, user_a);
	if (!t_await(a_ready[0], 90))
		FATAL("A did not fill its forms");
	b = t_start_user(UID_B, user_b);
	if (read(res[0], &rb, sizeof(rb)) != sizeof(rb))
		FATAL("no report from B");
	t_signal(a_go[1]);
	if (read(res[0], &ra, sizeof(ra)) != sizeof(ra))
		FATAL("no report from A");
	st = t_stats_of(fd, 0);
	t_info("capacity %llu MiB, used %llu KiB; A (forms and encoded) %llu KiB, B %llu KiB",
	       (unsigned long long)(CAP / MIB), (unsigned long long)(st.used_bytes >> 10),
	       (unsigned long long)(ra.used >> 10), (unsigned long long)(rb.used >> 10));
	CHECK(st.used_bytes <= CAP, "used %llu over the capacity",
	      (unsigned long long)st.used_bytes);
	CHECK(rb.used + SZ >= CAP / 2, "B got %llu KiB, not its owner's share of %llu KiB",
	      (unsigned long long)(rb.used >> 10), (unsigned long long)(CAP / 2 >> 10));
	CHECK(ra.used <= CAP / 2 + SZ, "A's forms kept %llu KiB, over its owner's share",
	      (unsigned long long)(ra.used >> 10));
	CHECK_EQ(t_wait(a, 30), 0, "user A");
	CHECK_EQ(t_wait(b, 30), 0, "user B");

	/* DROP of A's key drops its forms with its encoded set (now idle). */
	t_key("forms-a", k);
	ret = t_drop(fd, k, &dropped);
	CHECK_ERR(ret, 0, "DROP forms-a");
	t_info("DROP of A's key: %llu KiB", (unsigned long long)(dropped >> 10));
	CHECK(dropped + SZ >= ra.used && dropped > SZ,
	      "DROP of A's key dropped %llu KiB of the %llu KiB A held",
	      (unsigned long long)(dropped >> 10), (unsigned long long)(ra.used >> 10));
	t_set_capacity(fd, old, NULL);
	close(fd);
	return t_done();
}
