// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * owner_limit: the per-owner limits count by the uid that owns the
 * caller's user namespace, not by kuid, so subordinate uids do not
 * multiply them (issue 29, item 2).
 *
 * Uid OWNER (unprivileged) makes a user namespace; root, as newuidmap
 * does for an /etc/subuid range, maps NU inside uids onto kuids
 * SUBUID..SUBUID+NU-1. Inside, each uid in turn creates PER data sets and
 * keeps them attached: NU * PER is max_datasets, so per-kuid limits let
 * them take every slot. Their total must stop at uid_max_datasets
 * (-EDQUOT beyond); inside uid 0 in a namespace nested in that one (whose
 * own owner, kuid SUBUID, has no data set) is at OWNER's limit too, as is
 * OWNER itself outside the namespace; another user's ATTACH of a new key
 * still succeeds.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dlc_test.h"

#define N 8
#define NU 8			/* inside uids */
#define OWNER 65533
#define OTHER 65534
#define SUBUID 200000

struct rec {
	int uid;		/* inside uid */
	int made;		/* data sets it created */
	long err;		/* its last error, 0 if none */
};

static unsigned int per = 8;
static int ns_ready[2], mapped[2], step[2], res[2], go[2];

/* Inside uid @u of the namespace: create @per data sets, report, hold. */
static int inside(int u)
{
	struct rec r = { .uid = u };
	uint64_t k[2];
	char tag[64];
	unsigned int j;
	long h;
	int fd;

	if (setresuid(u, u, u) < 0) {
		r.err = -errno;
		r.made = -1;
	} else {
		fd = open(DLCACHE_DEVICE, O_RDWR);
		if (fd < 0) {
			r.err = -errno;
			r.made = -1;
		}
		for (j = 0; fd >= 0 && j < per; j++) {
			snprintf(tag, sizeof(tag), "owner-limit-%d-%u", u, j);
			t_key(tag, k);
			h = t_attach(fd, k, N, 0600, 0, NULL);
			if (h < 0)
				r.err = h;
			else
				r.made++;
		}
	}
	if (write(res[1], &r, sizeof(r)) != sizeof(r))
		return 1;
	t_signal(step[1]);
	/* Hold the data sets attached until root has checked. */
	t_await(go[0], 60);
	return 0;
}

/* Inside uid 0, in a namespace of its own: one more data set. */
static int nested(void)
{
	struct rec r = { .uid = NU };
	uint64_t k[2];
	long h;
	int fd;

	if (setresuid(0, 0, 0) < 0 || unshare(CLONE_NEWUSER) < 0) {
		r.err = -errno;
		r.made = -1;
	} else {
		fd = open(DLCACHE_DEVICE, O_RDWR);
		if (fd < 0) {
			r.err = -errno;
			r.made = -1;
		} else {
			t_key("owner-limit-nested", k);
			h = t_attach(fd, k, N, 0600, 0, NULL);
			if (h < 0)
				r.err = h;
			else
				r.made = 1;
		}
	}
	if (write(res[1], &r, sizeof(r)) != sizeof(r))
		return 1;
	t_await(go[0], 60);
	return 0;
}

/* OWNER: make the namespace, wait for its map, run the inside uids. */
static int owner_ns(void)
{
	pid_t kids[NU + 1];
	int u, st, err = 0, bad = 0;

	if (unshare(CLONE_NEWUSER) < 0)
		err = errno;
	if (write(ns_ready[1], &err, sizeof(err)) != sizeof(err) || err)
		return err ? T_SKIP : 1;
	if (!t_await(mapped[0], 30))
		return 1;
	for (u = 0; u < NU; u++) {
		kids[u] = fork();
		if (kids[u] < 0)
			return 1;
		if (kids[u] == 0)
			exit(inside(u));
		/* One at a time: the order of creation is the same each run. */
		if (!t_await(step[0], 30))
			return 1;
	}
	kids[NU] = fork();
	if (kids[NU] < 0)
		return 1;
	if (kids[NU] == 0)
		exit(nested());
	for (u = 0; u <= NU; u++) {
		st = t_wait(kids[u], 90);
		if (st)
			bad = 1;
	}
	return bad;
}

/* OWNER outside its namespace: counts with its namespace's uids. */
static int owner_outside(void)
{
	uint64_t k[2];
	int fd = t_open();

	t_key("owner-limit-outside", k);
	CHECK_ERR(t_attach(fd, k, N, 0600, 0, NULL), -EDQUOT,
		  "the namespace's owner creating in the initial namespace");
	close(fd);
	return t_done();
}

/* Another user: its creation must find a slot. */
static int other(void)
{
	uint64_t k[2];
	int fd = t_open();
	long h;

	t_key("owner-limit-other", k);
	h = t_attach(fd, k, N, 0600, 0, NULL);
	CHECK(h >= 1, "another user's ATTACH of a new key: %s", t_errname(h));
	close(fd);
	return t_done();
}

int main(void)
{
	gid_t groups[1] = { T_DEVGRP };
	struct dlcache_info info;
	unsigned long long lim = 16;
	char path[64], map[64];
	int u, total = 0, st, err;
	struct rec r;
	pid_t c;
	long ret;
	int fd;

	t_time_limit(120);
	if (getuid() != 0)
		t_skip("needs root to map a namespace's uids");
	fd = t_open();
	if (t_get_info(fd, &info) < 0)
		FATAL("GET_INFO");
	ret = t_param_get("uid_max_datasets", &lim);
	if (ret < 0)
		FATAL("module parameter uid_max_datasets: %s", t_errname(ret));
	per = info.max_datasets / NU;
	if (lim >= (unsigned long long)per * NU)
		t_skip("uid_max_datasets %llu is not below %u", lim, per * NU);
	if (access("/proc/self/ns/user", F_OK))
		t_skip("the kernel has no user namespaces (CONFIG_USER_NS)");
	if (chown(DLCACHE_DEVICE, 0, T_DEVGRP))
		FATAL("chown %s: %m", DLCACHE_DEVICE);
	/* Debian's switch for unprivileged user namespaces, where present. */
	t_write_file("/proc/sys/kernel/unprivileged_userns_clone", "1");
	if (pipe(ns_ready) || pipe(mapped) || pipe(step) || pipe(res) || pipe(go))
		FATAL("pipe: %m");

	c = fork();
	if (c < 0)
		FATAL("fork: %m");
	if (c == 0) {
		t_time_limit(110);
		t_become(OWNER, OWNER, groups, 1);
		exit(owner_ns());
	}
	if (read(ns_ready[0], &err, sizeof(err)) != sizeof(err))
		FATAL("uid %d made no user namespace", OWNER);
	if (err) {
		t_wait(c, 10);
		t_skip("unshare(CLONE_NEWUSER) as uid %d: %s", OWNER, strerror(err));
	}
	/* As newuidmap does for OWNER's subordinate uids. */
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)c);
	snprintf(map, sizeof(map), "0 %d %d\n", SUBUID, NU);
	if (!t_write_file(path, map))
		FATAL("writing %s: %m", path);
	/* OWNER's gid as gid 0: a nested namespace needs its creator's. */
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)c);
	snprintf(map, sizeof(map), "0 %d 1\n", OWNER);
	if (!t_write_file(path, map))
		FATAL("writing %s: %m", path);
	t_signal(mapped[1]);

	for (u = 0; u < NU; u++) {
		if (read(res[0], &r, sizeof(r)) != sizeof(r)) {
			FAIL("no result from inside uid %d", u);
			break;
		}
		t_info("inside uid %d (kuid %d): created %d of %u, last error %s", r.uid,
		       SUBUID + r.uid, r.made, per, t_errname(r.err));
		if (r.made < 0)
			FAIL("inside uid %d: setresuid: %s", r.uid, t_errname(r.err));
		else
			total += r.made;
		if (r.made >= 0 && r.made < (int)per)
			CHECK_ERR(r.err, -EDQUOT, "an inside uid's error past the owner's limit");
	}
	t_info("the owner's namespace uids created %d data sets; uid_max_datasets %llu, max_datasets %u",
	       total, lim, info.max_datasets);
	CHECK_EQ(total, lim, "data sets of one owner's namespace uids");
	if (read(res[0], &r, sizeof(r)) != sizeof(r)) {
		FAIL("no result from the nested namespace");
	} else {
		t_info("inside uid 0 in a nested namespace: created %d, error %s", r.made,
		       t_errname(r.err));
		if (r.made < 0)
			FAIL("nested user namespace: %s", t_errname(r.err));
		else
			CHECK_ERR(r.made ? 0 : r.err, -EDQUOT,
				  "a nested namespace's uid creating past the owner's limit");
	}
	CHECK_EQ(t_wait(t_start_user(OWNER, owner_outside), 30), 0, "the owner outside");
	CHECK_EQ(t_wait(t_start_user(OTHER, other), 30), 0, "another user");

	for (u = 0; u <= NU; u++)
		t_signal(go[1]);
	st = t_wait(c, 60);
	CHECK_EQ(st, 0, "the namespace's processes");
	close(fd);
	return t_done();
}
