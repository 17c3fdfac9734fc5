// SPDX-License-Identifier: MIT
/*
 * The cgroups of this process, as /proc/self/cgroup names them, walked up
 * to their roots: where the limits that bind the process are (a container's
 * CPU quota, a job's memory.max), which the machine-wide figures
 * (sysconf) do not show. cpus.c takes the CPU quota from here, the loader
 * its default read-ahead budget (dlc_mem_limit()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

int dlc_read_text(const char *path, char *buf, size_t len)
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

/* Whether the v1 controller list @ctls ("cpu,cpuacct") holds @ctl. */
static int has_controller(const char *ctls, const char *ctl)
{
	char list[256], *tok, *save;

	snprintf(list, sizeof(list), "%s", ctls);
	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save))
		if (!strcmp(tok, ctl))
			return 1;
	return 0;
}

/*
 * Call @fn for each directory of this process's cgroups and their
 * ancestors: the v2 group (under @root, or a hybrid's @root/unified, the
 * first where @fn finds its files) and, in v1, the group of the hierarchy
 * holding controller @ctl, under each of @mounts in turn ("cpu,cpuacct",
 * "cpu") until @fn finds its files. @fn returns 0 when it read what it
 * wanted in @dir, -errno when its files are not there.
 */
void dlc_cgroup_walk(const char *proc_cgroup, const char *root,
		     const char *ctl, const char *const *mounts,
		     int (*fn)(int v2, const char *dir, void *arg), void *arg)
{
	char line[4096], dir[4096], path[8192 + 64];
	FILE *f = fopen(proc_cgroup, "r");

	if (!f)
		return;
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
		if (!v2 && !has_controller(c1 + 1, ctl))
			continue;
		snprintf(dir, sizeof(dir), "%s", c2 + 1);
		do {
			const char *const *m;

			if (v2) {
				snprintf(path, sizeof(path), "%s%s", root, dir);
				if (fn(1, path, arg)) {
					snprintf(path, sizeof(path),
						 "%s/unified%s", root, dir);
					fn(1, path, arg);
				}
				continue;
			}
			for (m = mounts; *m; m++) {
				snprintf(path, sizeof(path), "%s/%s%s", root,
					 *m, dir);
				if (!fn(0, path, arg))
					break;
			}
		} while (parent(dir));
	}
	fclose(f);
}

int dlc_mem_parse(const char *text, uint64_t *bytes)
{
	unsigned long long v;
	char *end;

	*bytes = 0;
	if (!strncmp(text, "max", 3) && (!text[3] || text[3] == '\n'))
		return 0;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || end == text || text[0] < '0' || text[0] > '9' ||
	    (*end && *end != '\n'))
		return -EINVAL;
	/* v1 says "no limit" with the largest page multiple of a long. */
	if (v >= (1ULL << 62))
		return 0;
	*bytes = v;
	return 0;
}

/* dlc_cgroup_walk() callback: the smallest memory limit seen. */
static int take_mem(int v2, const char *dir, void *arg)
{
	uint64_t *best = arg, v;
	char path[8192 + 64], text[64];
	int ret;

	snprintf(path, sizeof(path), "%s/%s", dir,
		 v2 ? "memory.max" : "memory.limit_in_bytes");
	ret = dlc_read_text(path, text, sizeof(text));
	if (ret)
		return ret;
	if (dlc_mem_parse(text, &v) == 0 && v && (!*best || v < *best))
		*best = v;
	return 0;
}

uint64_t dlc_mem_limit(const char *proc_cgroup, const char *root)
{
	static const char *const mounts[] = { "memory", NULL };
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t best = 0;

	dlc_cgroup_walk(proc_cgroup, root, "memory", mounts, take_mem, &best);
	if (pages > 0 && psz > 0 &&
	    (!best || (uint64_t)pages * (uint64_t)psz < best))
		best = (uint64_t)pages * (uint64_t)psz;
	return best;
}
