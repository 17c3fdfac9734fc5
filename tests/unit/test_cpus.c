// SPDX-License-Identifier: MIT
/*
 * Usable CPUs (libdlcache/base/cpus.c): cgroup v2 cpu.max and v1
 * cfs_quota_us/cfs_period_us text, the quota found by walking a fixture
 * cgroup tree from a fixture /proc/self/cgroup, min(affinity, ceil(quota)),
 * and sched_getaffinity() against a child bound to one CPU.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "helpers/testutil.h"

static int near(double a, double b)
{
	return a - b < 1e-9 && b - a < 1e-9;
}

static void check_parse_v2(void)
{
	double c = -1;

	CHECK(dlc_cpu_parse_v2("max 100000\n", &c) == 0 && c == 0, "max");
	CHECK(dlc_cpu_parse_v2("200000 100000\n", &c) == 0 && near(c, 2), "2");
	CHECK(dlc_cpu_parse_v2("150000 100000", &c) == 0 && near(c, 1.5), "1.5");
	CHECK(dlc_cpu_parse_v2("50000 100000", &c) == 0 && near(c, 0.5), "0.5");
	CHECK_EQ(dlc_cpu_parse_v2("", &c), -EINVAL);
	CHECK_EQ(dlc_cpu_parse_v2("max", &c), -EINVAL);
	CHECK_EQ(dlc_cpu_parse_v2("100000 0", &c), -EINVAL);
	CHECK_EQ(dlc_cpu_parse_v2("-5 100000", &c), -EINVAL);
	CHECK_EQ(dlc_cpu_parse_v2("junk 100000", &c), -EINVAL);
}

static void check_parse_v1(void)
{
	double c = -1;

	CHECK(dlc_cpu_parse_v1("-1\n", "100000\n", &c) == 0 && c == 0, "none");
	CHECK(dlc_cpu_parse_v1("300000\n", "100000\n", &c) == 0 && near(c, 3),
	      "3");
	CHECK(dlc_cpu_parse_v1("25000", "100000", &c) == 0 && near(c, 0.25),
	      "0.25");
	CHECK_EQ(dlc_cpu_parse_v1("x", "100000", &c), -EINVAL);
	CHECK_EQ(dlc_cpu_parse_v1("100000", "0", &c), -EINVAL);
}

static void put(const char *dir, const char *rel, const char *text)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	CHECK(t_write_file(path, text, strlen(text)) == 0, "write %s", path);
}

/* Fixture trees: the smallest quota on the way to the root counts. */
static void check_quota_tree(void)
{
	char *d = t_mkdtemp(NULL), pc[4096], root[4096];

	if (!d) {
		CHECK(0, "tmpdir");
		return;
	}
	snprintf(pc, sizeof(pc), "%s/proc_cgroup", d);
	snprintf(root, sizeof(root), "%s/fs", d);

	/* v2: a/b has 1.5 CPUs under an unlimited a */
	put(d, "proc_cgroup", "0::/a/b\n");
	put(d, "fs/a/cpu.max", "max 100000\n");
	put(d, "fs/a/b/cpu.max", "150000 100000\n");
	CHECK(near(dlc_cpu_quota(pc, root), 1.5), "v2 leaf");
	/* ... and a parent's tighter quota wins */
	put(d, "fs/a/cpu.max", "100000 100000\n");
	CHECK(near(dlc_cpu_quota(pc, root), 1), "v2 parent");
	/* no limit anywhere */
	put(d, "fs/a/cpu.max", "max 100000\n");
	put(d, "fs/a/b/cpu.max", "max 100000\n");
	CHECK(dlc_cpu_quota(pc, root) == 0, "v2 none");

	/* v1 in cpu,cpuacct, the v2 line of a hybrid with nothing set */
	put(d, "proc_cgroup", "12:memory:/x\n4:cpu,cpuacct:/docker/c1\n0::/\n");
	put(d, "fs/cpu,cpuacct/docker/c1/cpu.cfs_quota_us", "250000\n");
	put(d, "fs/cpu,cpuacct/docker/c1/cpu.cfs_period_us", "100000\n");
	put(d, "fs/cpu,cpuacct/docker/cpu.cfs_quota_us", "-1\n");
	put(d, "fs/cpu,cpuacct/docker/cpu.cfs_period_us", "100000\n");
	CHECK(near(dlc_cpu_quota(pc, root), 2.5), "v1 cpu,cpuacct");
	/* v1 mounted as cpu alone */
	put(d, "proc_cgroup", "3:cpuacct:/\n2:cpu:/job\n");
	put(d, "fs/cpu/job/cpu.cfs_quota_us", "300000\n");
	put(d, "fs/cpu/job/cpu.cfs_period_us", "100000\n");
	CHECK(near(dlc_cpu_quota(pc, root), 3), "v1 cpu");
	/* hybrid: the v2 mount under root/unified */
	put(d, "proc_cgroup", "1:cpu:/\n0::/svc\n");
	put(d, "fs/unified/svc/cpu.max", "400000 100000\n");
	CHECK(near(dlc_cpu_quota(pc, root), 4), "hybrid unified");
	/* no file at all: no limit */
	CHECK(dlc_cpu_quota("/nonexistent/cgroup", root) == 0, "no proc file");
	t_rmtree(d);
	free(d);
}

/* The memory limit of the read-ahead's default: parse and walk. */
static void check_mem_tree(void)
{
	char *d = t_mkdtemp(NULL), pc[4096], root[4096];
	uint64_t v = 1;

	CHECK(dlc_mem_parse("max\n", &v) == 0 && v == 0, "v2 max");
	CHECK(dlc_mem_parse("536870912\n", &v) == 0 && v == 536870912,
	      "v2 bytes");
	CHECK(dlc_mem_parse("9223372036854771712\n", &v) == 0 && v == 0,
	      "v1 unlimited");
	CHECK(dlc_mem_parse("-1\n", &v) == -EINVAL, "negative");
	CHECK(dlc_mem_parse("12k", &v) == -EINVAL, "suffix");
	CHECK(dlc_mem_parse("", &v) == -EINVAL, "empty");
	if (!d) {
		CHECK(0, "tmpdir");
		return;
	}
	snprintf(pc, sizeof(pc), "%s/proc_cgroup", d);
	snprintf(root, sizeof(root), "%s/fs", d);
	/* v2: the parent's 256 MiB binds under a child without a limit */
	put(d, "proc_cgroup", "0::/job/step\n");
	put(d, "fs/job/memory.max", "268435456\n");
	put(d, "fs/job/step/memory.max", "max\n");
	CHECK(dlc_mem_limit(pc, root) == 268435456ULL, "v2 parent");
	put(d, "fs/job/step/memory.max", "134217728\n");
	CHECK(dlc_mem_limit(pc, root) == 134217728ULL, "v2 leaf");
	/* v1: the memory hierarchy only */
	put(d, "proc_cgroup", "4:cpu,cpuacct:/c\n9:memory:/docker/c1\n");
	put(d, "fs/memory/docker/c1/memory.limit_in_bytes", "67108864\n");
	put(d, "fs/memory/docker/memory.limit_in_bytes",
	    "9223372036854771712\n");
	put(d, "fs/cpu,cpuacct/c/memory.limit_in_bytes", "4096\n");
	CHECK(dlc_mem_limit(pc, root) == 67108864ULL, "v1 memory");
	/* nothing set: the machine's RAM */
	CHECK(dlc_mem_limit("/nonexistent/cgroup", root) ==
	      (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE),
	      "no cgroup: RAM");
	t_rmtree(d);
	free(d);
}

static void check_usable(void)
{
	CHECK_EQ(dlc_cpu_usable(8, 0), 8);
	CHECK_EQ(dlc_cpu_usable(8, 1.5), 2);
	CHECK_EQ(dlc_cpu_usable(8, 2.0), 2);
	CHECK_EQ(dlc_cpu_usable(8, 0.25), 1);
	CHECK_EQ(dlc_cpu_usable(2, 16), 2);
	CHECK_EQ(dlc_cpu_usable(0, 0), 1);
}

/* sched_getaffinity() of a child bound to one CPU, and its default. */
static void check_affinity(void)
{
	cpu_set_t set;
	int st = 0;
	pid_t pid;

	CHECK(sched_getaffinity(0, sizeof(set), &set) == 0, "affinity");
	CHECK_EQ(dlc_cpu_affinity(), CPU_COUNT(&set));
	pid = fork();
	if (pid == 0) {
		CPU_ZERO(&set);
		CPU_SET(0, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			_exit(100);
		_exit(dlc_cpu_affinity() == 1 &&
		      dlc_default_decode_threads() == 1 ? 0 : 1);
	}
	CHECK(pid > 0, "fork");
	if (pid > 0) {
		waitpid(pid, &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "one CPU: status %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
}

int main(void)
{
	T_RUN(check_parse_v2);
	T_RUN(check_parse_v1);
	T_RUN(check_quota_tree);
	T_RUN(check_mem_tree);
	T_RUN(check_usable);
	T_RUN(check_affinity);
	return t_done("test_cpus");
}
