// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * attach_probe: permission before existence (issue 29, item 5).
 *
 * User O (uid 5402, gid 5402) owns key H, mode 0600, and key G, mode 0640,
 * both of NS samples; key M it never created. A stranger S (uid 5401, not
 * in group 5402) names O as owner and probes H, G and M with every
 * combination of DLCACHE_ATTACH_F_NOCREATE, F_EXCL, F_JOB and F_REPLACE
 * (where the module has it), of the sample count (NS, NS + 1, 1) and of
 * the mode asked (0, 0600, 0666): each probe of H and of G must fail with
 * the very error of the same probe of M, so that S learns neither that
 * H exists nor its sample count. Probed while O holds them attached, and
 * again once they are idle. A reader (S with O's group) still gets
 * -EINVAL for a wrong sample count of G: the check is only moved after
 * the permission check.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlc_test.h"

#define NS 12
#define UID_S 5401
#define UID_O 5402

static uint64_t k_hidden[2], k_group[2], k_missing[2];
static int o_ready[2], s_done[2], o_closed[2], s2_done[2];
static bool replace;		/* DLCACHE_FEAT_ATTACH_MATCH */

static long probe(int fd, const uint64_t k[2], uint32_t n, uint32_t mode, uint32_t flags)
{
	struct dlcache_attach a;
	long ret;

	memset(&a, 0, sizeof(a));
	a.key[0] = k[0];
	a.key[1] = k[1];
	a.nsamples = n;
	a.mode = mode;
	a.flags = DLCACHE_ATTACH_F_OWNER | flags;
	a.owner_uid = UID_O;
	if (flags & DLCACHE_ATTACH_F_JOB)
		a.job = 7;
	ret = t_ioctl(fd, DLCACHE_IOC_ATTACH, &a);
	return ret < 0 ? ret : (long)a.handle;
}

/* Every probe of @k and of the missing key must answer alike. */
static void probe_all(const uint64_t k[2], const char *what, const char *when)
{
	static const uint32_t base[] = {
		0, DLCACHE_ATTACH_F_NOCREATE, DLCACHE_ATTACH_F_EXCL, DLCACHE_ATTACH_F_JOB,
	};
	static const uint32_t ns[] = { NS, NS + 1, 1 }, modes[] = { 0, 0600, 0666 };
	int fd = t_open();
	unsigned int probes = 0, differ = 0;

	for (uint32_t f = 0; f < 16; f++) {
		uint32_t flags = 0;

		for (int b = 0; b < 4; b++)
			if (f & (1U << b))
				flags |= b == 3 ? (replace ? DLCACHE_ATTACH_F_REPLACE : 0) : base[b + 1];
		if ((f & 8) && !replace)
			continue;
		for (int i = 0; i < 3; i++)
			for (int m = 0; m < 3; m++) {
				long got = probe(fd, k, ns[i], modes[m], flags);
				long want = probe(fd, k_missing, ns[i], modes[m], flags);

				probes++;
				if (got >= 0)
					FAIL("%s %s: flags %#x n %u mode %#o: S attached it", what,
					     when, flags, ns[i], modes[m]);
				if (got != want && ++differ <= 3)
					FAIL("%s %s: flags %#x n %u mode %#o: %s, missing key: %s",
					     what, when, flags, ns[i], modes[m], t_errname(got),
					     t_errname(want));
			}
	}
	if (differ > 3)
		FAIL("%s %s: %u probes more told it apart from a missing key", what, when,
		     differ - 3);
	t_info("%s %s: %u probes, %u told it apart from a missing key", what, when,
	       probes, differ);
	close(fd);
}

static int stranger(void)
{
	probe_all(k_hidden, "0600 key", "(attached)");
	probe_all(k_group, "0640 key", "(attached)");
	return t_done();
}

static int stranger_idle(void)
{
	probe_all(k_hidden, "0600 key", "(idle)");
	probe_all(k_group, "0640 key", "(idle)");
	return t_done();
}

/* S in O's group reads G: the sample count is checked for readers. */
static int member(void)
{
	int fd = t_open();

	CHECK_ERR(probe(fd, k_group, NS + 1, 0, DLCACHE_ATTACH_F_NOCREATE), -EINVAL,
		  "a reader of 0640 G asking another sample count");
	CHECK(probe(fd, k_group, NS, 0, DLCACHE_ATTACH_F_NOCREATE) >= 1,
	      "a reader of 0640 G attaching it");
	close(fd);
	return t_done();
}

static int owner(void)
{
	struct dlcache_attach a;
	int fd = t_open();
	long h;

	h = t_attach(fd, k_hidden, NS, 0600, 0, &a);
	if (h < 0)
		FATAL("O creating H: %s", t_errname(h));
	h = t_attach(fd, k_group, NS, 0640, 0, &a);
	if (h < 0)
		FATAL("O creating G: %s", t_errname(h));
	t_signal(o_ready[1]);
	if (!t_await(s_done[0], 60))
		FAIL("O: the stranger never finished");
	close(fd);
	t_signal(o_closed[1]);
	if (!t_await(s2_done[0], 60))
		FAIL("O: the second probe never finished");
	return t_done();
}

static pid_t start(uid_t uid, const gid_t *groups, int ng, int (*fn)(void))
{
	pid_t pid = fork();

	if (pid < 0)
		FATAL("fork: %m");
	if (pid == 0) {
		t_time_limit(60);
		t_become(uid, uid, groups, ng);
		exit(fn());
	}
	return pid;
}

int main(void)
{
	static const gid_t dev[] = { T_DEVGRP }, dev_o[] = { T_DEVGRP, UID_O };
	unsigned long long keep = 0;
	struct dlcache_info info;
	pid_t o, s;
	int fd;

	t_time_limit(120);
	if (getuid() != 0)
		t_skip("needs root to drop privileges");
	fd = t_open();
	if (t_get_info(fd, &info) < 0)
		FATAL("GET_INFO");
	close(fd);
	CHECK(info.supported & DLCACHE_FEAT_OWNER, "no DLCACHE_FEAT_OWNER");
	replace = info.supported & DLCACHE_FEAT_ATTACH_MATCH;
	if (t_param_get("idle_keep_s", &keep) == 0 && !keep)
		t_param_set("idle_keep_s", 600);
	t_key("probe-hidden", k_hidden);
	t_key("probe-group", k_group);
	t_key("probe-missing", k_missing);
	if (chown(DLCACHE_DEVICE, 0, T_DEVGRP))
		FATAL("chown %s: %m", DLCACHE_DEVICE);
	if (pipe(o_ready) || pipe(s_done) || pipe(o_closed) || pipe(s2_done))
		FATAL("pipe: %m");

	o = start(UID_O, dev, 1, owner);
	if (!t_await(o_ready[0], 30))
		FAIL("O never created its data sets");
	s = start(UID_S, dev, 1, stranger);
	CHECK_EQ(t_wait(s, 60), 0, "stranger, data sets attached");
	s = start(UID_S, dev_o, 2, member);
	CHECK_EQ(t_wait(s, 60), 0, "group member");
	t_signal(s_done[1]);
	if (!t_await(o_closed[0], 30))
		FAIL("O never closed");
	if (info.supported & DLCACHE_FEAT_IDLE) {
		s = start(UID_S, dev, 1, stranger_idle);
		CHECK_EQ(t_wait(s, 60), 0, "stranger, data sets idle");
	} else {
		t_info("no DLCACHE_FEAT_IDLE: no idle probe");
	}
	t_signal(s2_done[1]);
	CHECK_EQ(t_wait(o, 30), 0, "owner");
	if (!keep)
		t_param_set("idle_keep_s", 0);
	return t_done();
}
