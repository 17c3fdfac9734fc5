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

static int read_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	return 0;
}

/* Keep the smaller positive quota of @best and @q (0: none). */
static void take_min(double *best, double q)
{
	if (q > 0 && (*best == 0 || q < *best))
		*best = q;
}

/* Cut the last component of @path ("/a/b" -> "/a"); 0 at the root. */
static int parent(char *path)
{
	char *s = strrchr(path, '/');

	if (!s || (s == path && !s[1]))
		return 0;
	if (s == path)
		s[1] = 0;
	else
		*s = 0;
	return 1;
}

double dlc_cpu_quota(const char *proc_cgroup, const char *root)
{
	char line[4096], dir[4096], path[8192 + 64], a[256], b[256];
	double best = 0, q;
	FILE *f = fopen(proc_cgroup, "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2, *nl;
		int v2;

		if (!c1 || !(c2 = strchr(c1 + 1, ':')))
			continue;
		nl = strchr(c2, '\n');
		if (nl)
			*nl = 0;
		*c1 = 0;
		*c2 = 0;
		v2 = !strcmp(line, "0") && c1[1] == 0;
		/* v1: the hierarchy whose controllers include cpu. */
		if (!v2) {
			char ctl[256], *tok, *save;

			snprintf(ctl, sizeof(ctl), "%s", c1 + 1);
			for (tok = strtok_r(ctl, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save))
				if (!strcmp(tok, "cpu"))
					break;
			if (!tok)
				continue;
		}
		snprintf(dir, sizeof(dir), "%s", c2 + 1);
		do {
			if (v2) {
				/* the v2 mount, or a hybrid's root/unified */
				snprintf(path, sizeof(path), "%s%s/cpu.max",
					 root, dir);
				if (read_text(path, a, sizeof(a))) {
					snprintf(path, sizeof(path),
						 "%s/unified%s/cpu.max", root, dir);
					if (read_text(path, a, sizeof(a)))
						continue;
				}
				if (dlc_cpu_parse_v2(a, &q) == 0)
					take_min(&best, q);
				continue;
			}
			/* v1 mounts: cpu,cpuacct (and its link cpu) */
			snprintf(path, sizeof(path), "%s/cpu,cpuacct%s/cpu.cfs_quota_us",
				 root, dir);
			if (read_text(path, a, sizeof(a))) {
				snprintf(path, sizeof(path), "%s/cpu%s/cpu.cfs_quota_us",
					 root, dir);
				if (read_text(path, a, sizeof(a)))
					continue;
			}
			strcpy(strrchr(path, '/'), "/cpu.cfs_period_us");
			if (read_text(path, b, sizeof(b)) == 0 &&
			    dlc_cpu_parse_v1(a, b, &q) == 0)
				take_min(&best, q);
		} while (parent(dir));
	}
	fclose(f);
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
