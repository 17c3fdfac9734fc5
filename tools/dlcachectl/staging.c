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
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "prom.h"
#include "stage.h"

struct ds_usage {
	uint64_t copies, bytes;
	struct dlc_stage_shared c;
	int have_counters;
};

/* One data set's line of --prometheus, kept until every one is read. */
struct prom_ds {
	char labels[512];
	struct ds_usage u;
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

/* The copies on disk, then (where a counters file was read) the counters. */
#define UF(n, t, h, f) { n, t, h, offsetof(struct ds_usage, f) }
static const struct prom_field staging_fields[] = {
	UF("copies", "gauge", "staged copies on disk now", copies),
	UF("bytes", "gauge", "bytes the staged copies hold now", bytes),
	UF("memory_hits_total", "counter", "samples the memory tiers served (in-process cache, dlcache.ko)", c.above_hits),
	UF("memory_hit_bytes_total", "counter", "bytes the memory tiers served", c.above_bytes),
	UF("hits_total", "counter", "samples the staged copies served", c.hits),
	UF("hit_bytes_total", "counter", "bytes the staged copies served", c.hit_bytes),
	UF("origin_reads_total", "counter", "samples the pipelines read from the origin", c.origin_reads),
	UF("origin_bytes_total", "counter", "bytes the pipelines read from the origin", c.origin_bytes),
	UF("prefetched_total", "counter", "samples the stagers read from the origin ahead of use", c.prefetched),
	UF("prefetch_bytes_total", "counter", "bytes the stagers read from the origin", c.prefetch_bytes),
	UF("writes_total", "counter", "copies written", c.writes),
	UF("evictions_total", "counter", "copies removed for a sooner use", c.evictions),
	UF("invalid_total", "counter", "copies found stale, torn or corrupt", c.invalid),
};
#undef UF

/* Every family, each with every data set's sample. */
static void prom_staging(const struct prom_ds *ds, size_t n)
{
	char name[96];
	size_t i, k;

	for (k = 0; k < ARRAY_SIZE(staging_fields); k++) {
		const struct prom_field *f = &staging_fields[k];

		prom_field_head(stdout, name, sizeof(name), "dlcache_staging_", f);
		for (i = 0; i < n; i++)
			if (f->off < offsetof(struct ds_usage, c) ||
			    ds[i].u.have_counters)
				prom_sample(stdout, name, ds[i].labels,
					    prom_value(&ds[i].u, f));
	}
}

/* Keeps @u as the next of *@ds for prom_staging(): 0, or -ENOMEM. */
static int prom_keep(struct prom_ds **ds, size_t *n, size_t *cap,
		     const char *dir, const char *user, const char *key,
		     const struct ds_usage *u)
{
	static const char *const names[] = { "dir", "user", "dataset" };
	const char *values[] = { dir, user, key };
	struct prom_ds *d;

	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 16;

		d = realloc(*ds, c * sizeof(**ds));
		if (!d)
			return -ENOMEM;
		*ds = d;
		*cap = c;
	}
	d = &(*ds)[*n];
	if (!prom_labels(d->labels, sizeof(d->labels), 3, names, values))
		return -ENAMETOOLONG;
	d->u = *u;
	(*n)++;
	return 0;
}

/* @json: 0 the table, 1 JSON, 2 Prometheus's text format. */
int cmd_stats_staging(const char *dir, int json)
{
	struct prom_ds *pds = NULL;
	size_t npds = 0, cappds = 0;
	struct dirent *ue, *ke;
	struct ds_usage u;
	DIR *top, *ud;
	int shown = 0, ufd, kfd, ret = 0;

	top = opendir(dir);
	if (!top)
		return fail("stats", "--staging %s: %s", dir, strerror(errno));
	if (json == 1) {
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
			if (json == 2 && !ret)
				ret = prom_keep(&pds, &npds, &cappds, dir,
						ue->d_name + 8, ke->d_name, &u);
			else if (json != 2)
				print_ds(ue->d_name + 8, ke->d_name, &u, json,
					 &shown);
		}
		closedir(ud);
	}
	closedir(top);
	if (ret) {
		free(pds);
		return fail("stats", "--staging %s: %s", dir, strerror(-ret));
	}
	if (json == 2)
		prom_staging(pds, npds);
	else if (json)
		printf("]}\n");
	else if (!shown)
		printf("%s: no staged data set\n", dir);
	free(pds);
	return fflush(stdout) ? fail("stats", "write error: %s", strerror(errno)) : 0;
}
