// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * perms: data set permissions and privileged commands, with processes that
 * drop root (setresuid) before opening the device.
 *
 * - /dev/dlcache is a character device, 0660 root:root (admin.md); a user
 *   outside its group cannot open it. The test then gives it group 4343,
 *   as admin.md's udev rule would, and the users below are in that group.
 * - Data sets are named by (key, owner): another user reaches one only by
 *   naming its owner (DLCACHE_ATTACH_F_OWNER), then as far as the mode
 *   allows. A key alone attaches (or creates) the caller's own.
 * - A 0600 data set of root: another uid cannot attach (-ENOENT, as for a
 *   missing one: permission before existence).
 * - A 0640 data set of uid 4242/gid 4242: a member of group 4242 attaches
 *   read-only (GET hits; PUT, ABORT, SET_ORDER give -EACCES), a stranger
 *   cannot attach (-ENOENT), the owner may write, root may write.
 * - Creating with a mode that gives the creator no read: -EACCES, nothing
 *   created (root may).
 * - 0660: a group member may PUT. 0604: anyone may read, not write.
 * - Non-root SET_CAPACITY and DROP: -EPERM; root: allowed.
 * - Modes outside 0666 are refused on create.
 * - Root opens, attaches its 0600 data set, then drops to 65534: the handle
 *   keeps working (attach-time check), a new ATTACH, SET_CAPACITY and DROP
 *   are refused on that same fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "dlc_test.h"

#define N 8
#define SZ 3000
#define OWNER 4242
#define NOBODY 65534
#define DEVGRP 4343		/* the "dlcache" group of admin.md's udev rule */

static int ready[2], done[2];

static uint64_t k_root600[2], k_640[2], k_660[2], k_604[2];

/* Starts @fn in a child as uid/gid with @groups. */
static pid_t start_user(uid_t uid, gid_t gid, const gid_t *groups, int ng, int (*fn)(void))
{
	pid_t pid = fork();

	if (pid < 0)
		FATAL("fork: %m");
	if (pid == 0) {
		t_time_limit(60);
		t_become(uid, gid, groups, ng);
		exit(fn());
	}
	return pid;
}

/* Runs @fn in a child as uid/gid with @groups; returns its status. */
static int as_user(uid_t uid, gid_t gid, const gid_t *groups, int ng, int (*fn)(void))
{
	return t_wait(start_user(uid, gid, groups, ng, fn), 30);
}

static void put_one(struct t_ring *r, long h, const uint64_t *key, uint32_t s, long want,
		    const char *what)
{
	struct dlcache_cqe cqe;
	uint8_t buf[SZ];
	long ret;

	t_pattern(buf, SZ, key[0], s);
	ret = t_put(r, (uint32_t)h, s, buf, SZ, &cqe);
	if (want == -EACCES && ret == -EPERM)
		FAIL("%s: -EPERM, want -EACCES (permission of the data set, not privilege)",
		     what);
	else
		CHECK_ERR(ret, want, what);
}

static void get_hit(struct t_ring *r, long h, const uint64_t *key, uint32_t s, const char *what)
{
	struct dlcache_cqe cqe;
	uint8_t buf[SZ];
	long ret = t_get(r, (uint32_t)h, s, buf, SZ, &cqe);

	CHECK_EQ(ret, SZ, what);
	if (ret == SZ)
		t_pattern_ok(buf, SZ, key[0], s);
}

/* uid 4242 creates the 0640, 0660 and 0604 data sets, with sample 0. */
static int owner_creates(void)
{
	struct dlcache_attach a;
	struct t_ring r;
	int fd = t_open();
	long h;
	const struct { uint64_t *key; uint32_t mode; } sets[] = {
		{ k_640, 0640 }, { k_660, 0660 }, { k_604, 0604 },
	};

	if (t_ring_init(&r, fd, 4, 0) < 0)
		FATAL("owner ring");
	for (size_t i = 0; i < 3; i++) {
		h = t_attach(fd, sets[i].key, N, sets[i].mode, 0, &a);
		if (h < 0)
			FATAL("owner ATTACH mode %#o: %s", sets[i].mode, t_errname(h));
		CHECK_EQ(a.owner_uid, OWNER, "owner_uid");
		CHECK_EQ(a.owner_gid, OWNER, "owner_gid");
		CHECK_EQ(a.mode, sets[i].mode, "mode");
		CHECK_EQ(a.result_flags, DLCACHE_ATTACH_CREATED | DLCACHE_ATTACH_MAY_READ |
			 DLCACHE_ATTACH_MAY_WRITE, "owner result_flags");
		put_one(&r, h, sets[i].key, 0, SZ, "owner PUT");
	}
	/* Non-root privileged commands. */
	CHECK_ERR(t_set_capacity(fd, 1 << 20, NULL), -EPERM, "non-root SET_CAPACITY");
	CHECK_ERR(t_drop(fd, NULL, NULL), -EPERM, "non-root DROP of everything");
	CHECK_ERR(t_drop(fd, k_640, NULL), -EPERM, "non-root DROP of its own data set");
	/* The data sets live while we stay attached. */
	t_signal(ready[1]);
	if (!t_await(done[0], 60))
		FAIL("owner: never told to finish");
	t_ring_unmap(&r);
	close(fd);
	return t_done();
}

static int no_group(void)
{
	int fd = open(DLCACHE_DEVICE, O_RDWR);

	CHECK(fd < 0 && errno == EACCES, "open %s by a user outside its group: %s",
	      DLCACHE_DEVICE, fd < 0 ? t_errname(-errno) : "opened");
	if (fd >= 0)
		close(fd);
	return t_done();
}

static int member_child(void)
{
	struct dlcache_attach a;
	struct dlcache_cqe cqe;
	struct t_ring r;
	uint32_t order[N] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	uint8_t buf[SZ];
	int fd = t_open();
	long h, ret;

	if (t_ring_init(&r, fd, 4, 0) < 0)
		FATAL("member ring");
	CHECK_ERR(t_attach_owner(fd, k_root600, N, 0, 0, NULL), -ENOENT,
		  "group member ATTACH of root's 0600 data set");

	h = t_attach_owner(fd, k_640, N, OWNER, 0, &a);
	if (h < 0)
		FATAL("group member ATTACH of a 0640 data set: %s", t_errname(h));
	CHECK_EQ(a.result_flags, DLCACHE_ATTACH_MAY_READ, "member result_flags on 0640");
	CHECK_EQ(a.mode, 0640, "mode not changed by a later ATTACH");
	get_hit(&r, h, k_640, 0, "member GET on 0640");
	put_one(&r, h, k_640, 1, -EACCES, "member PUT on 0640");
	ret = t_set_order(fd, (uint32_t)h, 0, order, N);
	CHECK_ERR(ret, -EACCES, "member SET_ORDER on 0640");
	/* A miss: the reader cannot fill, whatever the flags say. */
	ret = t_get(&r, (uint32_t)h, 2, buf, SZ, &cqe);
	CHECK_ERR(ret, -ENOENT, "member GET miss on 0640");
	if (cqe.flags & DLCACHE_CQE_F_FILL) {
		ret = t_abort(&r, (uint32_t)h, 2, 0, &cqe);
		CHECK(ret == 0 || ret == -EACCES, "member ABORT: %s", t_errname(ret));
		FAIL("a reader without write permission was made the filler");
	}
	ret = t_abort(&r, (uint32_t)h, 3, 0, &cqe);
	CHECK(ret == -EACCES || ret == -ENOENT, "member ABORT on 0640: %s", t_errname(ret));

	h = t_attach_owner(fd, k_660, N, OWNER, 0, &a);
	if (h < 0)
		FATAL("group member ATTACH of a 0660 data set: %s", t_errname(h));
	CHECK_EQ(a.result_flags, DLCACHE_ATTACH_MAY_READ | DLCACHE_ATTACH_MAY_WRITE,
		 "member result_flags on 0660");
	put_one(&r, h, k_660, 1, SZ, "member PUT on 0660");
	get_hit(&r, h, k_660, 1, "member GET of its own PUT");
	ret = t_set_order(fd, (uint32_t)h, 0, order, N);
	CHECK_ERR(ret, 0, "member SET_ORDER on 0660");

	CHECK_ERR(t_set_capacity(fd, 1 << 20, NULL), -EPERM, "member SET_CAPACITY");
	t_ring_unmap(&r);
	close(fd);
	return t_done();
}

static int stranger(void)
{
	struct dlcache_attach a;
	struct t_ring r;
	uint64_t own[2];
	int fd = t_open();
	long h;

	if (t_ring_init(&r, fd, 4, 0) < 0)
		FATAL("stranger ring");
	CHECK_ERR(t_attach_owner(fd, k_root600, N, 0, 0, NULL), -ENOENT,
		  "stranger ATTACH of root's 0600 data set");
	CHECK_ERR(t_attach_owner(fd, k_640, N, OWNER, 0, NULL), -ENOENT,
		  "stranger ATTACH of 0640");
	CHECK_ERR(t_attach_owner(fd, k_660, N, OWNER, 0, NULL), -ENOENT,
		  "stranger ATTACH of 0660");
	CHECK_ERR(t_attach_owner(fd, k_640, N, OWNER, DLCACHE_ATTACH_F_NOCREATE, NULL), -ENOENT,
		  "stranger ATTACH F_NOCREATE of 0640");
	/* The key alone names the stranger's own data set, which is missing. */
	CHECK_ERR(t_attach(fd, k_640, N, 0600, DLCACHE_ATTACH_F_NOCREATE, NULL), -ENOENT,
		  "stranger ATTACH F_NOCREATE of the key of another's 0640");
	/* A creator that could not read what it creates: nothing is made. */
	{
		uint64_t wo[2];

		t_key("perms-writeonly", wo);
		CHECK_ERR(t_attach(fd, wo, N, 0260, 0, NULL), -EACCES,
			  "stranger creating a data set of mode 0260");
		CHECK_ERR(t_attach(fd, wo, N, 0600, DLCACHE_ATTACH_F_NOCREATE, NULL), -ENOENT,
			  "the 0260 data set was created anyway");
	}

	h = t_attach_owner(fd, k_604, N, OWNER, 0, &a);
	if (h < 0)
		FATAL("stranger ATTACH of a 0604 data set: %s", t_errname(h));
	CHECK_EQ(a.result_flags, DLCACHE_ATTACH_MAY_READ, "stranger result_flags on 0604");
	get_hit(&r, h, k_604, 0, "stranger GET on 0604");
	put_one(&r, h, k_604, 1, -EACCES, "stranger PUT on 0604");

	/* Its own data set, default mode 0600. */
	t_key("perms-stranger", own);
	h = t_attach(fd, own, N, 0, 0, &a);
	if (h < 0)
		FATAL("stranger creating a data set: %s", t_errname(h));
	CHECK_EQ(a.mode, 0600, "mode 0 means 0600");
	CHECK_EQ(a.owner_uid, NOBODY, "stranger owns its data set");
	put_one(&r, h, own, 0, SZ, "stranger PUT into its own data set");

	CHECK_ERR(t_set_capacity(fd, 1 << 20, NULL), -EPERM, "stranger SET_CAPACITY");
	CHECK_ERR(t_drop(fd, NULL, NULL), -EPERM, "stranger DROP");
	t_ring_unmap(&r);
	close(fd);
	return t_done();
}

/*
 * Root opens and attaches its 0600 data set, then drops to uid 65534 (and
 * so CAP_SYS_ADMIN). Permissions are evaluated at attach time: the handle
 * it holds keeps reading; a new ATTACH, SET_CAPACITY and DROP are refused.
 */
static int setuid_after_open(void)
{
	struct dlcache_cqe cqe;
	struct t_ring r;
	uint8_t buf[SZ];
	int fd = t_open();
	long h, ret;

	if (t_ring_init(&r, fd, 4, 0) < 0)
		FATAL("ring");
	h = t_attach(fd, k_root600, N, 0600, 0, NULL);
	if (h < 0)
		FATAL("root ATTACH before setuid: %s", t_errname(h));
	t_become(NOBODY, NOBODY, NULL, 0);
	ret = t_get(&r, (uint32_t)h, 0, buf, SZ, &cqe);
	CHECK_EQ(ret, SZ, "GET through a handle attached before setuid");
	if (ret == SZ)
		t_pattern_ok(buf, SZ, k_root600[0], 0);
	CHECK_ERR(t_detach(fd, (uint32_t)h), 0, "DETACH after setuid");
	CHECK_ERR(t_attach_owner(fd, k_root600, N, 0, 0, NULL), -ENOENT,
		  "ATTACH of root's 0600 data set after setuid, on root's fd");
	CHECK_ERR(t_set_capacity(fd, 1 << 20, NULL), -EPERM, "SET_CAPACITY after setuid");
	CHECK_ERR(t_drop(fd, NULL, NULL), -EPERM, "DROP after setuid");
	t_ring_unmap(&r);
	close(fd);
	return t_done();
}

static int owner_again(void)
{
	struct dlcache_attach a;
	int fd = t_open();
	long h = t_attach(fd, k_640, N, 0640, 0, &a);

	CHECK(h >= 1, "owner re-ATTACH: %s", t_errname(h));
	CHECK_EQ(a.result_flags, DLCACHE_ATTACH_MAY_READ | DLCACHE_ATTACH_MAY_WRITE,
		 "owner result_flags on re-attach");
	/* Only root may attach root's private data set. */
	CHECK_ERR(t_attach_owner(fd, k_root600, N, 0, 0, NULL), -ENOENT,
		  "owner ATTACH of root's 0600 data set");
	close(fd);
	return t_done();
}

int main(void)
{
	struct dlcache_attach a;
	struct t_ring r;
	struct stat st;
	uint64_t bad[2];
	pid_t owner;
	int fd;
	long h;

	t_time_limit(90);
	if (getuid() != 0)
		t_skip("needs root to drop privileges");
	t_key("perms-root600", k_root600);
	t_key("perms-640", k_640);
	t_key("perms-660", k_660);
	t_key("perms-604", k_604);

	if (stat(DLCACHE_DEVICE, &st) < 0)
		FATAL("stat %s: %m", DLCACHE_DEVICE);
	CHECK(S_ISCHR(st.st_mode), "not a character device");
	CHECK_EQ(st.st_mode & 07777, 0660, "mode of " DLCACHE_DEVICE " (admin.md: 0660)");
	CHECK(st.st_uid == 0 && st.st_gid == 0, "device node owned by %u:%u, want root:root",
	      (unsigned)st.st_uid, (unsigned)st.st_gid);
	CHECK_EQ(as_user(NOBODY, NOBODY, NULL, 0, no_group), 0, "user outside the device group");
	/* What admin.md's udev rule does: GROUP="dlcache", MODE="0660". */
	if (chown(DLCACHE_DEVICE, 0, DEVGRP))
		FATAL("chown %s: %m", DLCACHE_DEVICE);
	if (pipe(ready) || pipe(done))
		FATAL("pipe: %m");

	fd = t_open();
	if (t_ring_init(&r, fd, 4, 0) < 0)
		FATAL("root ring");
	h = t_attach(fd, k_root600, N, 0600, 0, &a);
	if (h < 0)
		FATAL("root ATTACH: %s", t_errname(h));
	put_one(&r, h, k_root600, 0, SZ, "root PUT");

	{
		pid_t pid = fork();

		if (pid < 0)
			FATAL("fork: %m");
		if (pid == 0) {
			t_time_limit(20);
			exit(setuid_after_open());
		}
		CHECK_EQ(t_wait(pid, 30), 0, "child that drops root after opening");
	}

	t_key("perms-badmode", bad);
	CHECK_ERR(t_attach(fd, bad, N, 0700, 0, NULL), -EINVAL, "ATTACH with mode 0700");
	CHECK_ERR(t_attach(fd, bad, N, 01666, 0, NULL), -EINVAL, "ATTACH with mode 01666");
	CHECK_ERR(t_attach(fd, bad, N, 0x10000, 0, NULL), -EINVAL, "ATTACH with mode 0x10000");
	/* Root may create what its mode does not let it read (CAP_SYS_ADMIN). */
	h = t_attach(fd, bad, N, 0040, 0, &a);
	CHECK(h >= 1, "root creating a data set of mode 0040: %s", t_errname(h));
	if (h >= 1) {
		CHECK_EQ(a.result_flags, DLCACHE_ATTACH_CREATED | DLCACHE_ATTACH_MAY_READ |
			 DLCACHE_ATTACH_MAY_WRITE, "root result_flags on its 0040");
		CHECK_ERR(t_detach(fd, (uint32_t)h), 0, "DETACH of the 0040 data set");
	}

	{
		gid_t owner_groups[1] = { DEVGRP };
		gid_t member_groups[2] = { OWNER, DEVGRP };
		gid_t other_groups[1] = { DEVGRP };

		owner = start_user(OWNER, OWNER, owner_groups, 1, owner_creates);
		if (!t_await(ready[0], 30))
			FAIL("owner child did not create its data sets");
		CHECK_EQ(as_user(NOBODY, NOBODY, member_groups, 2, member_child), 0,
			 "group member child");
		CHECK_EQ(as_user(NOBODY, NOBODY, other_groups, 1, stranger), 0, "stranger child");
		CHECK_EQ(as_user(OWNER, OWNER, other_groups, 1, owner_again), 0,
			 "owner child again");
	}

	/* Root may write to anyone's data set, and change capacity. */
	h = t_attach_owner(fd, k_640, N, OWNER, 0, &a);
	CHECK(h >= 1, "root ATTACH of 0640: %s", t_errname(h));
	CHECK_EQ(a.result_flags, DLCACHE_ATTACH_MAY_READ | DLCACHE_ATTACH_MAY_WRITE,
		 "root result_flags on another's 0640");
	put_one(&r, h, k_640, 5, SZ, "root PUT into another's 0640");
	CHECK_ERR(t_set_capacity(fd, 8 << 20, NULL), 0, "root SET_CAPACITY");
	CHECK_ERR(t_drop(fd, k_640, NULL), 0, "root DROP of one data set");
	t_signal(done[1]);
	CHECK_EQ(t_wait(owner, 30), 0, "owner child");
	t_ring_unmap(&r);
	close(fd);
	return t_done();
}
