// SPDX-License-Identifier: MIT
/*
 * dlcachectl stats --staging DIR: what a staging directory holds and how
 * the tiers served the loaders that staged there, per user and data set,
 * from the directory itself (its copies, and the counters file every
 * loader adds to, stage.h): no loader needs to be running.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "stage.h"

struct ds_usage {
	uint64_t copies, bytes;
	struct dlc_stage_shared c;
	int have_counters;
};

static void usage_of(int dfd, struct ds_usage *u)
{
	struct dlc_stage_shared *m;
	struct dirent *de;
	struct stat sb;
	DIR *d;
	int fd;

	memset(u, 0, sizeof(*u));
	fd = openat(dfd, "counters", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
		if (m != MAP_FAILED) {
			if (m->magic == DLC_STAGE_COUNTERS_MAGIC) {
				u->c = *m;
				u->have_counters = 1;
			}
			munmap(m, 4096);
		}
		close(fd);
	}
	fd = dup(dfd);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)))
		if (de->d_name[0] >= '0' && de->d_name[0] <= '9' &&
		    !fstatat(dfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) &&
		    S_ISREG(sb.st_mode)) {
			u->copies++;
			u->bytes += (uint64_t)sb.st_size;
		}
	closedir(d);
}

static double part(uint64_t x, uint64_t all)
{
	return all ? (double)x / (double)all : 0.0;
}

static void print_ds(const char *user, const char *key,
		     const struct ds_usage *u, int json, int *shown)
{
	const struct dlc_stage_shared *c = &u->c;
	uint64_t all = c->above_hits + c->hits + c->origin_reads;

	if (json) {
		printf("%s{\"user\": \"%s\", \"key\": \"%s\", \"copies\": %llu, "
		       "\"bytes\": %llu, \"memory_hits\": %llu, "
		       "\"staging_hits\": %llu, \"origin_reads\": %llu, "
		       "\"memory_ratio\": %.4f, \"staging_ratio\": %.4f, "
		       "\"origin_ratio\": %.4f, \"staging_hit_bytes\": %llu, "
		       "\"origin_bytes\": %llu, \"prefetched\": %llu, "
		       "\"prefetch_bytes\": %llu, \"writes\": %llu, "
		       "\"evictions\": %llu, \"invalid\": %llu}",
		       *shown ? ", " : "", user, key,
		       (unsigned long long)u->copies,
		       (unsigned long long)u->bytes,
		       (unsigned long long)c->above_hits,
		       (unsigned long long)c->hits,
		       (unsigned long long)c->origin_reads,
		       part(c->above_hits, all), part(c->hits, all),
		       part(c->origin_reads, all),
		       (unsigned long long)c->hit_bytes,
		       (unsigned long long)c->origin_bytes,
		       (unsigned long long)c->prefetched,
		       (unsigned long long)c->prefetch_bytes,
		       (unsigned long long)c->writes,
		       (unsigned long long)c->evictions,
		       (unsigned long long)c->invalid);
	} else {
		printf("%s %s: %llu copies, %.1f MB\n", user, key,
		       (unsigned long long)u->copies, (double)u->bytes / 1e6);
		if (!u->have_counters) {
			printf("  no counters file\n");
		} else {
			printf("  samples served: %llu; memory tiers %.1f%%, staged copies %.1f%%, origin %.1f%%\n",
			       (unsigned long long)all,
			       100 * part(c->above_hits, all),
			       100 * part(c->hits, all),
			       100 * part(c->origin_reads, all));
			printf("  origin read %.1f MB by the pipelines, %.1f MB ahead by the stagers (%llu samples)\n",
			       (double)c->origin_bytes / 1e6,
			       (double)c->prefetch_bytes / 1e6,
			       (unsigned long long)c->prefetched);
			printf("  copies written %llu, evicted %llu, found invalid %llu\n",
			       (unsigned long long)c->writes,
			       (unsigned long long)c->evictions,
			       (unsigned long long)c->invalid);
		}
	}
	(*shown)++;
}

int cmd_stats_staging(const char *dir, int json)
{
	struct dirent *ue, *ke;
	struct ds_usage u;
	DIR *top, *ud;
	int shown = 0, ufd, kfd;

	top = opendir(dir);
	if (!top)
		return fail("stats", "--staging %s: %s", dir, strerror(errno));
	if (json) {
		printf("{\"staging_dir\": ");
		json_string(stdout, dir);
		printf(", \"datasets\": [");
	}
	while ((ue = readdir(top))) {
		if (strncmp(ue->d_name, "dlcache-", 8))
			continue;
		ufd = openat(dirfd(top), ue->d_name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (ufd < 0) {
			/* Another user's: 0700. */
			if (!json)
				printf("%s: %s\n", ue->d_name, strerror(errno));
			continue;
		}
		ud = fdopendir(ufd);
		if (!ud) {
			close(ufd);
			continue;
		}
		while ((ke = readdir(ud))) {
			if (strlen(ke->d_name) != 32)
				continue;
			kfd = openat(ufd, ke->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (kfd < 0)
				continue;
			usage_of(kfd, &u);
			close(kfd);
			print_ds(ue->d_name + 8, ke->d_name, &u, json, &shown);
		}
		closedir(ud);
	}
	closedir(top);
	if (json)
		printf("]}\n");
	else if (!shown)
		printf("%s: no staged data set\n", dir);
	return fflush(stdout) ? fail("stats", "write error: %s", strerror(errno)) : 0;
}
