/* SPDX-License-Identifier: MIT */
/*
 * This process's cgroups (cgroup.c): memory limit, and the walk that
 * cpus.c shares.
 * Internal to libdlcache; the public face is dlcache.h.
 */
#ifndef DLC_CGROUP_H
#define DLC_CGROUP_H

#include <stddef.h>
#include <stdint.h>

/* Read the text of @path into @buf of @len (NUL-terminated); -errno. */
int dlc_read_text(const char *path, char *buf, size_t len);
void dlc_cgroup_walk(const char *proc_cgroup, const char *root,
		     const char *ctl, const char *const *mounts,
		     int (*fn)(int v2, const char *dir, void *arg), void *arg);
/*
 * Parse a cgroup v2 memory.max ("max", "1073741824") or v1
 * memory.limit_in_bytes (its "no limit" is near 2^63) into bytes, 0 for
 * no limit. 0 or -EINVAL.
 */
int dlc_mem_parse(const char *text, uint64_t *bytes);
/*
 * The memory this process may use: the smallest memory limit of the
 * cgroups named in @proc_cgroup and their ancestors under the cgroup mount
 * @root (v2 memory.max, v1 root/memory/.../memory.limit_in_bytes), and
 * at most the machine's RAM.
 */
uint64_t dlc_mem_limit(const char *proc_cgroup, const char *root);

#endif
