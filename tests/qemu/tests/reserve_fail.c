// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * reserve_fail: a creation whose allocation fails frees nobody's idle
 * data set.
 *
 * uid 65533 leaves an idle data set of about 98 MB of policy memory (8 Mi
 * positions). uid 65534, in a memory cgroup of 16 MiB, then ATTACHes a
 * new key of about 50 MB: with the idle set that is past the global
 * policy limit (an eighth of the guest's 1 GiB), so the idle set would
 * have to give way, but the allocation fails in the cgroup (-ENOMEM).
 * Before the fix the idle set was freed first, for nothing: it must
 * still be listed, idle, afterwards. The same ATTACH outside the cgroup
 * then succeeds, and only then does the idle set give way.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "dlc_test.h"

#define IDLER 65533
#define CREATOR 65534
#define N (64U * 1024)
#define IDLE_WINDOW (8U * 1024 * 1024)
#define NEW_WINDOW (4U * 1024 * 1024)
#define CGROOT "/sys/fs/cgroup"
#define CG CGROOT "/dlc-reserve-fail"

static uint64_t k_idle[2], k_new[2];

static long attach_window(int fd, const uint64_t key[2], uint32_t window)
{
	struct dlcache_attach a;
	long ret;

	memset(&a, 0, sizeof(a));
	a.key[0] = key[0];
	a.key[1] = key[1];
	a.nsamples = N;
	a.mode = 0600;
	a.window = window;
	ret = t_ioctl(fd, DLCACHE_IOC_ATTACH, &a);
	return ret < 0 ? ret : (long)a.handle;
}

static int idler(void)
{
	int fd = t_open();
	long h = attach_window(fd, k_idle, IDLE_WINDOW);

	if (h < 0) {
		printf("# idler: ATTACH: %s\n", t_errname(h));
		return h == -ENOMEM || h == -EDQUOT ? 2 : 1;
	}
	close(fd);
	return 0;
}

/* Whether root's STATS lists the idle set, idle, and how many sets. */
static bool idle_listed(int fd, uint32_t *n)
{
	struct dlcache_stats st;
	bool found = false;

	*n = 0;
	for (uint32_t i = 0; i < 100; i++) {
		memset(&st, 0, sizeof(st));
		st.handle = i;
		st.flags = DLCACHE_STATS_F_DATASET | DLCACHE_STATS_F_INDEX;
		if (t_ioctl(fd, DLCACHE_IOC_STATS, &st))
			break;
		(*n)++;
		if (st.ds_key[0] == k_idle[0] && st.ds_key[1] == k_idle[1] &&
		    st.ds_owner_uid == IDLER && (st.ds_flags & DLCACHE_DS_F_IDLE))
			found = true;
	}
	return found;
}

/* The creator's ATTACH, in the cgroup (@in_cg) or not: its -errno or 0. */
static long create(bool in_cg)
{
	gid_t groups[1] = { T_DEVGRP };
	int st, p[2];
	long res = -1;
	pid_t pid;

	if (pipe(p))
		FATAL("pipe: %m");
	pid = fork();
	if (pid < 0)
		FATAL("fork: %m");
	if (pid == 0) {
		int fd;
		long h;

		close(p[0]);
		if (in_cg && !t_write_file(CG "/cgroup.procs", "0"))
			_exit(3);
		t_become(CREATOR, CREATOR, groups, 1);
		fd = t_open();
		h = attach_window(fd, k_new, NEW_WINDOW);
		h = h < 0 ? h : 0;
		if (write(p[1], &h, sizeof(h)) != sizeof(h))
			_exit(4);
		close(fd);
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], &res, sizeof(res)) != sizeof(res))
		res = -1000;
	close(p[0]);
	waitpid(pid, &st, 0);
	return res;
}

int main(void)
{
	char buf[256];
	uint32_t n;
	long ret;
	int fd, rc;

	t_time_limit(90);
	if (getuid())
		t_skip("needs root (parameters, cgroups, other users)");
	if (access(CGROOT "/cgroup.controllers", F_OK) &&
	    mount("none", CGROOT, "cgroup2", 0, NULL))
		t_skip("cannot mount cgroup2 at %s: %m", CGROOT);
	if (!t_read_file(CGROOT "/cgroup.controllers", buf, sizeof(buf)) ||
	    !strstr(buf, "memory"))
		t_skip("the kernel has no memory cgroup controller");
	if (!t_write_file(CGROOT "/cgroup.subtree_control", "+memory"))
		t_skip("cannot enable the memory controller: %m");
	rmdir(CG);
	if (mkdir(CG, 0755))
		FATAL("mkdir %s: %m", CG);
	if (!t_write_file(CG "/memory.max", "16777216"))
		FATAL("memory.max: %m");
	t_write_file(CG "/memory.swap.max", "0");
	if (chown(DLCACHE_DEVICE, 0, T_DEVGRP) || chmod(DLCACHE_DEVICE, 0660))
		FATAL("chown/chmod %s: %m", DLCACHE_DEVICE);
	/* Each user's sets are past a quarter of the global limit. */
	CHECK_ERR(t_param_set("uid_max_policy_mb", 112), 0, "uid_max_policy_mb=112");
	t_key("reserve-fail-idle", k_idle);
	t_key("reserve-fail-new", k_new);
	fd = t_open();

	rc = t_wait(t_start_user(IDLER, idler), 60);
	if (rc == 2)
		t_skip("the idle set does not fit the policy memory limit: the guest needs 1 GiB");
	CHECK_EQ(rc, 0, "idler");
	CHECK(idle_listed(fd, &n), "the idler's data set is not listed idle after its close");

	ret = create(true);
	t_info("a creation in a 16 MiB memory cgroup that needs the idle set's room: %s",
	       t_errname(ret));
	CHECK_ERR(ret, -ENOMEM, "ATTACH of a 50 MB data set in a 16 MiB memory cgroup");
	CHECK(idle_listed(fd, &n),
	      "the idle set of another user was freed by a creation that failed");
	t_info("after it: %u data sets listed, the idle one %s", n,
	       idle_listed(fd, &n) ? "still there" : "gone");

	ret = create(false);
	CHECK_ERR(ret, 0, "the same ATTACH outside the cgroup");
	CHECK(!idle_listed(fd, &n),
	      "the idle set did not give way to a creation that needed its room");
	t_info("after a creation that succeeded: %u data sets listed, the idle one %s",
	       n, idle_listed(fd, &n) ? "still there" : "gone");

	close(fd);
	rmdir(CG);
	return t_done();
}
