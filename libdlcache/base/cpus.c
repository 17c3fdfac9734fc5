// SPDX-License-Identifier: MIT
/*
 * How many CPUs this process may really use: its sched_getaffinity() set,
 * capped by the CPU quota of its cgroup (v2 cpu.max, v1 cpu.cfs_quota_us
 * over cpu.cfs_period_us), the smallest quota on the way up to the root.
 * sysconf(_SC_NPROCESSORS_ONLN) counts the machine's, which in a container
 * or under taskset is too many decode threads fighting for few CPUs.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

int dlc_cpu_parse_v2(const char *text, double *cpus)
{
	unsigned long long quota, period;
	char q[32];
	int n;

	*cpus = 0;
	if (sscanf(text, "%31s %llu%n", q, &period, &n) < 2 || period == 0)
		return -EINVAL;
	if (!strcmp(q, "max"))
		return 0;
	if (sscanf(q, "%llu", &quota) != 1 || q[0] < '0' || q[0] > '9' ||
	    quota == 0)
		return -EINVAL;
	*cpus = (double)quota / (double)period;
	return 0;
}

int dlc_cpu_parse_v1(const char *quota_text, const char *period_text,
		     double *cpus)
{
	long long quota;
	unsigned long long period;

	*cpus = 0;
	if (sscanf(quota_text, "%lld", &quota) != 1 ||
	    sscanf(period_text, "%llu", &period) != 1 || period == 0)
		return -EINVAL;
	if (quota < 0)
		return 0;	/* -1: no limit */
	if (quota == 0)
		return -EINVAL;
	*cpus = (double)quota / (double)period;
	return 0;
}

/* Keep the smaller positive quota of @best and @q (0: none). */
static void take_min(double *best, double q)
{
	if (q > 0 && (*best == 0 || q < *best))
		*best = q;
}

/* dlc_cgroup_walk() callback: the smallest CPU quota in @dir. */
static int take_quota(int v2, const char *dir, void *arg)
{
	char path[8192 + 64], a[256], b[256];
	double q;
	int ret;

	if (v2) {
		snprintf(path, sizeof(path), "%s/cpu.max", dir);
		ret = dlc_read_text(path, a, sizeof(a));
		if (!ret && dlc_cpu_parse_v2(a, &q) == 0)
			take_min(arg, q);
		return ret;
	}
	snprintf(path, sizeof(path), "%s/cpu.cfs_quota_us", dir);
	ret = dlc_read_text(path, a, sizeof(a));
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/cpu.cfs_period_us", dir);
	if (dlc_read_text(path, b, sizeof(b)) == 0 &&
	    dlc_cpu_parse_v1(a, b, &q) == 0)
		take_min(arg, q);
	return 0;
}

double dlc_cpu_quota(const char *proc_cgroup, const char *root)
{
	/* v1 mounts: cpu,cpuacct, or cpu alone */
	static const char *const mounts[] = { "cpu,cpuacct", "cpu", NULL };
	double best = 0;

	dlc_cgroup_walk(proc_cgroup, root, "cpu", mounts, take_quota, &best);
	return best;
}

uint32_t dlc_cpu_affinity(void)
{
	size_t ncpu = 1024, sz;
	cpu_set_t *set;
	int n;

	for (;;) {
		set = CPU_ALLOC(ncpu);
		if (!set)
			return 1;
		sz = CPU_ALLOC_SIZE(ncpu);
		if (sched_getaffinity(0, sz, set) == 0) {
			n = CPU_COUNT_S(sz, set);
			CPU_FREE(set);
			return n > 0 ? (uint32_t)n : 1;
		}
		CPU_FREE(set);
		if (errno != EINVAL || ncpu >= (1U << 20))
			break;
		ncpu *= 2;
	}
	n = (int)sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (uint32_t)n : 1;
}

uint32_t dlc_cpu_usable(uint32_t affinity, double quota)
{
	uint32_t q;

	if (quota <= 0)
		return affinity ? affinity : 1;
	q = quota >= 65536 ? 65536 : (uint32_t)quota;
	if ((double)q < quota)
		q++;		/* ceil: 1.5 CPUs are worth 2 threads */
	if (q < 1)
		q = 1;
	return affinity && affinity < q ? affinity : q;
}

uint32_t dlc_default_decode_threads(void)
{
	uint32_t cpus = dlc_cpu_usable(dlc_cpu_affinity(),
				       dlc_cpu_quota("/proc/self/cgroup",
						     "/sys/fs/cgroup"));

	return cpus > 1 ? cpus - 1 : 1;
}
