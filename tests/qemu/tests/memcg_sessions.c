// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * memcg_sessions: what a session makes the kernel hold is charged to the
 * caller's memory cgroup.
 *
 * A child in a cgroup v2 memory cgroup with memory.max = 64M (cgroup2 is
 * mounted at /sys/fs/cgroup when it is not) opens up to 1000 sessions, each
 * with 4096-entry rings (about 850 KiB of rings and wait pool). The memory
 * must be charged to the cgroup: memory.current grows with the sessions,
 * and the opens or SETUP_RINGs fail with -ENOMEM at the limit (or the
 * child is OOM-killed inside its cgroup) instead of the kernel holding
 * about 850 MB outside it. Uncharged memory is caught after 50 sessions,
 * before it can exhaust the guest. Once the child exits, the cgroup's
 * memory is back near zero (and /init's rmmod shows nothing leaked).
 * Skips when the kernel has no memory controller.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "dlc_test.h"

#define CGROOT "/sys/fs/cgroup"
#define CG CGROOT "/dlc_memcg"
#define LIMIT (64ULL << 20)
#define SESSIONS 1000
#define CHECK_AT 50
/* Less than a third of what one session's rings and wait pool take. */
#define MIN_CHARGE_PER_SESSION (256ULL << 10)

struct report {
	int opened;		/* sessions with rings set up */
	long err;		/* the first failure, -errno, or 0 */
	const char *what;	/* "open" or "SETUP_RING" */
	int uncharged;		/* stopped: memory.current did not grow */
	unsigned long long base, at_check, last;
};

/* A number file of the cgroup, or -1. */
static long long cg_value(const char *name)
{
	char path[128], buf[64];

	snprintf(path, sizeof(path), CG "/%s", name);
	if (!t_read_file(path, buf, sizeof(buf)))
		return -1;
	return atoll(buf);
}

/* The count @name ("oom_kill") of memory.events, or -1. */
static long long cg_event(const char *name)
{
	char buf[1024], key[64], *p;

	if (!t_read_file(CG "/memory.events", buf, sizeof(buf)))
		return -1;
	snprintf(key, sizeof(key), "%s ", name);
	p = strstr(buf, key);
	return p ? atoll(p + strlen(key)) : -1;
}

static void child(int go, int out)
{
	struct report r = { 0 };
	struct rlimit rl = { SESSIONS + 64, SESSIONS + 64 };
	struct dlcache_ring_setup p;
	char c;
	int i, fd;
	long ret;

	if (read(go, &c, 1) != 1)
		_exit(2);
	if (setrlimit(RLIMIT_NOFILE, &rl))
		_exit(3);
	r.base = (unsigned long long)cg_value("memory.current");
	for (i = 0; i < SESSIONS; i++) {
		fd = open(DLCACHE_DEVICE, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			r.err = -errno;
			r.what = "open";
			break;
		}
		memset(&p, 0, sizeof(p));
		p.sq_entries = 4096;
		p.cq_entries = 4096;
		ret = t_ioctl(fd, DLCACHE_IOC_SETUP_RING, &p);
		if (ret < 0) {
			r.err = ret;
			r.what = "SETUP_RING";
			break;
		}
		r.opened++;
		if (r.opened == CHECK_AT) {
			r.at_check = (unsigned long long)cg_value("memory.current");
			if (r.at_check < r.base + CHECK_AT * MIN_CHARGE_PER_SESSION) {
				r.uncharged = 1;
				break;
			}
		}
	}
	r.last = (unsigned long long)cg_value("memory.current");
	if (write(out, &r, sizeof(r)) != sizeof(r))
		_exit(4);
	_exit(0);	/* closes every session */
}

int main(void)
{
	char buf[256], pid_s[32];
	struct report r;
	long long peak, cur = -1;
	int go[2], out[2], st, i;
	ssize_t n;
	pid_t pid;

	t_time_limit(120);
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
	snprintf(buf, sizeof(buf), "%llu", LIMIT);
	if (!t_write_file(CG "/memory.max", buf))
		FATAL("memory.max: %m");
	t_write_file(CG "/memory.swap.max", "0");

	if (pipe(go) || pipe(out))
		FATAL("pipe: %m");
	pid = fork();
	if (pid < 0)
		FATAL("fork: %m");
	if (pid == 0) {
		close(go[1]);
		close(out[0]);
		child(go[0], out[1]);
	}
	close(go[0]);
	close(out[1]);
	snprintf(pid_s, sizeof(pid_s), "%d", (int)pid);
	if (!t_write_file(CG "/cgroup.procs", pid_s)) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		FATAL("moving the child into %s: %m", CG);
	}
	t_signal(go[1]);

	n = read(out[0], &r, sizeof(r));
	st = t_wait(pid, 60);
	peak = cg_value("memory.peak");
	if (n != sizeof(r)) {
		/* No report: killed, by the OOM killer inside its cgroup? */
		long long ooms = cg_event("oom_kill");

		CHECK(st == 128 + SIGKILL && ooms > 0,
		      "the child ended without a report (status %d, oom_kill %lld)", st, ooms);
		t_info("the child was OOM-killed inside its cgroup (oom_kill %lld)", ooms);
	} else {
		CHECK_EQ(st, 0, "child exit status");
		t_info("%d sessions with 4096-entry rings; then %s: %s", r.opened,
		       r.what ? r.what : "-", t_errname(r.err));
		t_info("memory.current: %llu KiB at start, %llu KiB after %d sessions, %llu KiB at the end; memory.peak %lld KiB",
		       r.base >> 10, r.at_check >> 10, CHECK_AT, r.last >> 10,
		       peak < 0 ? -1 : peak >> 10);
		if (r.uncharged)
			FAIL("%d sessions added only %lld KiB to memory.current: "
			     "rings and wait pools are not charged to the memory cgroup",
			     CHECK_AT, (long long)(r.at_check - r.base) >> 10);
		else if (r.opened >= SESSIONS)
			FAIL("%d sessions with 4096-entry rings fit in a 64 MiB memory cgroup",
			     r.opened);
		else
			CHECK_ERR(r.err, -ENOMEM, "the failure at the cgroup's limit");
		CHECK(r.opened >= CHECK_AT || r.uncharged,
		      "only %d sessions before the limit", r.opened);
	}
	if (peak >= 0)
		CHECK(peak >= (long long)(LIMIT / 2), "memory.peak %lld KiB: the sessions were not charged",
		      peak >> 10);

	/* Everything the child held goes back to the cgroup. */
	for (i = 0; i < 100; i++) {
		cur = cg_value("memory.current");
		if (cur >= 0 && cur < (8LL << 20))
			break;
		t_msleep(30);
	}
	CHECK(cur >= 0 && cur < (8LL << 20), "memory.current %lld KiB after the child exited",
	      cur >> 10);
	if (rmdir(CG))
		FAIL("rmdir %s: %m", CG);
	return t_done();
}
