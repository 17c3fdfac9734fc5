// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * param_rmmod: module parameters written while the module goes and comes.
 *
 * Two children write /sys/module/dlcache/parameters/capacity_mb and
 * fill_lease_ms (and read them back) in a loop, while the parent removes
 * and inserts the module 25 times. The parameter files outlive the
 * module's exit function, so a write may run while the module is going
 * away: it must leave the cache alone once it is torn down (no splat, no
 * crash; /init scans the kernel log). Afterwards the module is loaded and
 * a write to capacity_mb reaches the cache.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "dlc_test.h"

#define PDIR "/sys/module/dlcache/parameters/"
#define CYCLES 25

/* Writes @val to parameter @name; true when the write went through. */
static bool param_write(const char *name, const char *val)
{
	char path[128];
	int fd;
	bool ok;

	snprintf(path, sizeof(path), PDIR "%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return false;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok;
}

static long param_read(const char *name)
{
	char path[128], buf[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), PDIR "%s", name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return atol(buf);
}

/* A child that writes @name (and reads it back) until it is killed. */
static pid_t writer(const char *name, const char *const *vals, int nvals)
{
	pid_t pid = fork();
	unsigned long i = 0;

	if (pid < 0)
		FATAL("fork: %m");
	if (pid)
		return pid;
	for (;;) {
		param_write(name, vals[i++ % nvals]);
		param_read(name);
		if (getppid() == 1)	/* the parent died */
			_exit(0);
	}
}

static void stop_writer(pid_t pid)
{
	int st;

	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

int main(void)
{
	static const char *const caps[] = { "16", "64", "256", "1", "32" };
	static const char *const leases[] = { "0", "100", "30000", "5" };
	struct dlcache_info info;
	int i, fd, loaded_writes = 0;
	pid_t w1, w2;
	long ret;

	t_time_limit(150);
	if (access(T_KO, R_OK))
		t_skip("no %s (runs in the QEMU guest)", T_KO);

	w1 = writer("capacity_mb", caps, 5);
	w2 = writer("fill_lease_ms", leases, 4);
	for (i = 0; i < CYCLES; i++) {
		int tries = 0;

		/* Let the writers hit the loaded module for a moment. */
		t_msleep(20);
		if (param_write("capacity_mb", "128"))
			loaded_writes++;
		while ((ret = t_rmmod()) == -EAGAIN || ret == -EBUSY) {
			if (++tries > 100)
				break;
			t_msleep(20);
		}
		if (ret) {
			FAIL("cycle %d: rmmod: %s", i, t_errname(ret));
			break;
		}
		ret = t_insmod(i & 1 ? "capacity_mb=8" : "");
		if (ret) {
			FAIL("cycle %d: insmod: %s", i, t_errname(ret));
			break;
		}
	}
	stop_writer(w1);
	stop_writer(w2);
	t_info("%d rmmod/insmod cycles; %d of the parent's writes went through",
	       i, loaded_writes);
	CHECK(loaded_writes > 0, "no parameter write reached the loaded module");

	/* Loaded, and a write reaches the cache. */
	if (access("/sys/module/dlcache", F_OK)) {
		ret = t_insmod("");
		CHECK_ERR(ret, 0, "final insmod");
	}
	for (i = 0; i < 100 && access(DLCACHE_DEVICE, F_OK); i++)
		t_msleep(20);
	CHECK(param_write("capacity_mb", "48"), "write capacity_mb=48");
	/* Back to the default; a module without the lease has no such file. */
	param_write("fill_lease_ms", "30000");
	CHECK_EQ(param_read("capacity_mb"), 48, "capacity_mb read back");
	fd = t_open();
	CHECK_ERR(t_get_info(fd, &info), 0, "GET_INFO");
	CHECK_EQ(info.capacity_bytes, 48ULL << 20, "capacity after the write");
	close(fd);
	return t_done();
}
