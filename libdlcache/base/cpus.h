/* SPDX-License-Identifier: MIT */
/*
 * Usable CPUs (cpus.c): affinity and the CPU quota.
 * Internal to libdlcache; the public face is dlcache.h.
 */
#ifndef DLC_CPUS_H
#define DLC_CPUS_H

#include <stdint.h>

/*
 * Parse a cgroup v2 cpu.max ("max 100000", "150000 100000") into CPUs
 * (0 for no limit), or v1's cpu.cfs_quota_us ("-1" none) over
 * cpu.cfs_period_us. 0 or -EINVAL.
 */
int dlc_cpu_parse_v2(const char *text, double *cpus);
int dlc_cpu_parse_v1(const char *quota_text, const char *period_text,
		     double *cpus);
/*
 * The smallest CPU quota of the cgroups named in @proc_cgroup (the format
 * of /proc/self/cgroup) and their ancestors, under the cgroup mount @root
 * (v2 there, v1 in root/cpu,cpuacct or root/cpu). 0 for no limit.
 */
double dlc_cpu_quota(const char *proc_cgroup, const char *root);
/* CPUs in this thread's sched_getaffinity() set. */
uint32_t dlc_cpu_affinity(void);
/* min(@affinity, ceil(@quota)) (no quota when <= 0), at least 1. */
uint32_t dlc_cpu_usable(uint32_t affinity, double quota);
/* The decode threads for decode_threads = 0: usable CPUs less one, >= 1. */
uint32_t dlc_default_decode_threads(void);

#endif
