// SPDX-License-Identifier: MIT
/*
 * dlcachectl stats and dlcachectl datasets: what /dev/dlcache holds and how
 * well it works, globally and per data set, as a table or as JSON.
 */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"
#include "cli.h"
#include "prom.h"

static void stats_help(void)
{
	printf("usage: dlcachectl stats [--json | --prometheus] [DATASET_KEY]\n"
	       "       dlcachectl stats --staging DIR [--json | --prometheus]\n"
	       "\n"
	       "Print the counters of the node's cache (/dev/dlcache): capacity and\n"
	       "use, then globally and per data set the hits and misses by count\n"
	       "and by bytes, the hit ratio, inserts, bypasses, evictions (and how\n"
	       "many of those the shrinker made), waits for another process's\n"
	       "fill, aborted fills, errors, cached samples and fills in flight.\n"
	       "Global counters run since the module was loaded and include data\n"
	       "sets that are gone; a data set's run since it was created. An idle\n"
	       "data set (detached, kept cached) says for how long.\n"
	       "\n"
	       "  DATASET_KEY   only this data set: 32 hex digits, as printed by\n"
	       "                'dlcachectl index' and 'dlcachectl datasets'\n"
	       "  --staging DIR the staging tier in DIR instead (dlc_config.staging_dir),\n"
	       "                from the directory alone: per user and data set the\n"
	       "                copies and their bytes, and the share of samples the\n"
	       "                memory tiers (in-process cache, dlcache.ko), the staged\n"
	       "                copies and the origin served; the origin bytes the\n"
	       "                pipelines and the stagers read; copies written,\n"
	       "                evicted and found invalid\n"
	       "  --json        one JSON object on stdout instead of the table\n"
	       "  --prometheus  Prometheus's text format instead, for node_exporter's\n"
	       "                textfile collector (metrics dlcache_*, per data set\n"
	       "                dlcache_dataset_*, staging dlcache_staging_*)\n"
	       "  -h, --help    show this help\n");
}

static void datasets_help(void)
{
	printf("usage: dlcachectl datasets [--json]\n"
	       "\n"
	       "List the data sets that /dev/dlcache holds, one line each: key,\n"
	       "samples, mode, owner uid, processes attached, bytes cached,\n"
	       "samples cached, the hit ratio since the data set was created, and\n"
	       "how long it has been idle (detached, kept cached; \"-\" while\n"
	       "attached).\n"
	       "\n"
	       "  --json        one JSON array on stdout instead of the table\n"
	       "  -h, --help    show this help\n");
}

/*
 * Parses [--json] [KEY] for stats and datasets (and --staging DIR,
 * --prometheus for stats: @staging non-NULL); <0 help done, >0 exit code.
 * *@json is 1 for --json, 2 for --prometheus.
 */
static int parse_args(const char *cmd, int argc, char **argv, void (*help)(void),
		      int allow_key, int *json, const char **key,
		      const char **staging)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "prometheus", no_argument, NULL, 'p' },
		{ "staging", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
		case 'p':
			if (c == 'p' && !staging)
				return usage_error(cmd, "unknown option '--prometheus' (try --help)");
			if (*json && *json != (c == 'j' ? 1 : 2))
				return usage_error(cmd, "--json and --prometheus: one or the other");
			*json = c == 'j' ? 1 : 2;
			break;
		case 's':
			if (!staging)
				return usage_error(cmd, "unknown option '--staging' (try --help)");
			*staging = optarg;
			break;
		case 'h':
			help();
			return -1;
		default:
			return usage_error(cmd, "unknown or incomplete option '%s' (try --help)",
					   argv[optind - 1]);
		}
	}
	if (optind < argc && allow_key) {
		__u64 k[2];

		if (admin_key_parse(argv[optind], k))
			return usage_error(cmd, "DATASET_KEY: want 32 hex digits, got '%s'",
					   argv[optind]);
		*key = argv[optind++];
	}
	if (optind < argc)
		return usage_error(cmd, "unexpected argument '%s' (try --help)", argv[optind]);
	return 0;
}

static void mode_str(uint32_t mode, char out[8])
{
	snprintf(out, 8, "%04o", mode & 07777);
}

/* ---- stats ---------------------------------------------------------------- */

static void print_counters(const struct dlcache_counters *c)
{
	char a[32], b[32];

	printf("  %-18s %14llu  %12s\n", "hits", (unsigned long long)c->hits,
	       admin_bytes(c->hit_bytes, a, sizeof(a)));
	printf("  %-18s %14llu  %12s\n", "misses", (unsigned long long)c->misses,
	       admin_bytes(c->miss_bytes, a, sizeof(a)));
	printf("  %-18s %14.4f  %12.4f  (by count, by bytes)\n", "hit ratio",
	       admin_hit_ratio(c), admin_byte_hit_ratio(c));
	printf("  %-18s %14llu  %12s\n", "inserts", (unsigned long long)c->inserts,
	       admin_bytes(c->insert_bytes, a, sizeof(a)));
	printf("  %-18s %14llu  %12s\n", "bypasses", (unsigned long long)c->bypasses,
	       admin_bytes(c->bypass_bytes, a, sizeof(a)));
	printf("  %-18s %14llu  %12s  (shrinker %llu)\n", "evictions",
	       (unsigned long long)c->evictions,
	       admin_bytes(c->eviction_bytes, a, sizeof(a)),
	       (unsigned long long)c->shrinker_evictions);
	printf("  %-18s %14llu\n", "waits", (unsigned long long)c->waits);
	printf("  %-18s %14llu\n", "aborts", (unsigned long long)c->aborts);
	printf("  %-18s %14llu\n", "errors", (unsigned long long)c->errors);
	printf("  %-18s %14llu  %12s\n", "cached samples",
	       (unsigned long long)c->cached_samples,
	       admin_bytes(c->used_bytes, b, sizeof(b)));
	printf("  %-18s %14llu\n", "fills in flight",
	       (unsigned long long)c->fills_inflight);
}

/* The form a data set holds (DLCACHE_DS_F_FORM), 0 for encoded bytes. */
static uint32_t ds_form(const struct dlcache_stats *d)
{
	return d->ds_flags & DLCACHE_DS_F_FORM ?
	       (d->ds_flags >> DLCACHE_DS_FORM_SHIFT) & 0xff : 0;
}

static void print_ds_header(const struct dlcache_stats *d)
{
	char key[33], mode[8];

	admin_key_str(d->ds_key, key);
	mode_str(d->ds_mode, mode);
	if (ds_form(d))
		printf("data set %s, form %u (decoded forms of its samples, its owner's alone)\n",
		       key, ds_form(d));
	else
		printf("data set %s\n", key);
	printf("  %u samples, mode %s, owner %u:%u, %u attached, %u jobs, policy cursor %llu of %llu\n",
	       d->ds_nsamples, mode, d->ds_owner_uid, d->ds_owner_gid,
	       d->ds_attached, d->ds_consumers,
	       (unsigned long long)d->ds_cursor,
	       (unsigned long long)d->ds_end);
	if (d->ds_flags & DLCACHE_DS_F_IDLE)
		printf("  idle for %u s (detached, kept cached for a job that attaches it again)\n",
		       d->ds_idle_s);
}

/*
 * "form" (0: encoded bytes), "idle": true/false and "idle_s" of a data
 * set, for the JSON outputs.
 */
static void json_idle(const struct dlcache_stats *d)
{
	printf("\"form\": %u, \"idle\": %s, \"idle_s\": %u, ", ds_form(d),
	       d->ds_flags & DLCACHE_DS_F_IDLE ? "true" : "false", d->ds_idle_s);
}

/* The idle column of `datasets`: "-" when attached, else "<n>s". */
static const char *idle_str(const struct dlcache_stats *d, char *buf, size_t len)
{
	if (!(d->ds_flags & DLCACHE_DS_F_IDLE))
		return "-";
	snprintf(buf, len, "%us", d->ds_idle_s);
	return buf;
}

static void json_dataset(const struct dlcache_stats *d)
{
	char key[33], mode[8];

	admin_key_str(d->ds_key, key);
	mode_str(d->ds_mode, mode);
	printf("{\"key\": \"%s\", \"nsamples\": %u, \"mode\": \"%s\", "
	       "\"owner_uid\": %u, \"owner_gid\": %u, \"attached\": %u, "
	       "\"window\": %u, \"cursor\": %llu, \"end\": %llu, "
	       "\"consumers\": %u, ",
	       key, d->ds_nsamples, mode, d->ds_owner_uid, d->ds_owner_gid,
	       d->ds_attached, d->ds_window, (unsigned long long)d->ds_cursor,
	       (unsigned long long)d->ds_end, d->ds_consumers);
	json_idle(d);
	admin_json_counters(stdout, &d->dataset);
	printf("}");
}

/* ---- stats --prometheus ------------------------------------------------------ */

#define CF(n, t, h, f) { n, t, h, offsetof(struct dlcache_counters, f) }
static const struct prom_field counter_fields[] = {
	CF("hits_total", "counter", "GETs that copied a cached sample", hits),
	CF("hit_bytes_total", "counter", "bytes those GETs copied", hit_bytes),
	CF("misses_total", "counter", "GETs that found the sample absent", misses),
	CF("miss_bytes_total", "counter", "bytes PUT to end a fill", miss_bytes),
	CF("inserts_total", "counter", "PUTs that cached the bytes", inserts),
	CF("insert_bytes_total", "counter", "bytes those PUTs cached", insert_bytes),
	CF("bypasses_total", "counter", "PUTs not admitted (next use too far)", bypasses),
	CF("bypass_bytes_total", "counter", "bytes of PUTs not admitted", bypass_bytes),
	CF("evictions_total", "counter", "samples evicted (policy, shrinker, drop)", evictions),
	CF("eviction_bytes_total", "counter", "bytes evicted", eviction_bytes),
	CF("shrinker_evictions_total", "counter", "of the evictions, the shrinker's", shrinker_evictions),
	CF("waits_total", "counter", "GETs that waited for another process's fill", waits),
	CF("aborts_total", "counter", "fills aborted or ended by a session's end", aborts),
	CF("errors_total", "counter", "completions with an error other than ENOENT", errors),
	CF("cached_samples", "gauge", "samples held now", cached_samples),
	CF("fills_inflight", "gauge", "samples being filled now", fills_inflight),
	CF("used_bytes", "gauge", "sample bytes held now", used_bytes),
};
#undef CF

#define DF(n, t, h, f) { n, t, h, offsetof(struct dlcache_stats, f) }
static const struct prom_field dataset_fields[] = {
	DF("samples", "gauge", "samples in the data set", ds_nsamples),
	DF("attached", "gauge", "processes attached", ds_attached),
	DF("consumers", "gauge", "jobs reading it (a consumer each)", ds_consumers),
	DF("idle_seconds", "gauge", "seconds detached and kept cached, 0 while attached", ds_idle_s),
};
#undef DF

/* A 32-bit field of struct dlcache_stats (idle_s only when idle). */
static uint64_t ds_value(const struct dlcache_stats *d, const struct prom_field *f)
{
	uint32_t v;

	if (f->off == offsetof(struct dlcache_stats, ds_idle_s) &&
	    !(d->ds_flags & DLCACHE_DS_F_IDLE))
		return 0;
	memcpy(&v, (const char *)d + f->off, sizeof(v));
	return v;
}

static int shown_ds(const struct dlcache_stats *d, const char *keyarg,
		    const __u64 key[2])
{
	return !keyarg || (d->ds_key[0] == key[0] && d->ds_key[1] == key[1]);
}

/* The snapshot in Prometheus's text format: 0, or -ENOMEM. */
static int prom_stats(const struct admin_snap *s, const char *keyarg,
		      const __u64 key[2])
{
	static const char *const names[] = { "dataset", "owner_uid", "form" };
	char name[96], (*labels)[96] = calloc(s->n ? s->n : 1, sizeof(*labels));
	const uint32_t nds = ARRAY_SIZE(dataset_fields);
	uint32_t i, k;

	if (!labels)
		return -ENOMEM;
	for (i = 0; i < s->n; i++) {
		char kstr[33], uid[16], form[8];
		const char *values[] = { kstr, uid, form };

		admin_key_str(s->ds[i].ds_key, kstr);
		snprintf(uid, sizeof(uid), "%u", s->ds[i].ds_owner_uid);
		/* An owner's form set has its encoded set's key and owner. */
		snprintf(form, sizeof(form), "%u", ds_form(&s->ds[i]));
		prom_labels(labels[i], sizeof(labels[i]), 3, names, values);
	}
	prom_head(stdout, "dlcache_capacity_bytes", "gauge",
		  "the module's capacity (capacity_mb)");
	prom_sample(stdout, "dlcache_capacity_bytes", NULL, s->capacity_bytes);
	prom_head(stdout, "dlcache_datasets", "gauge", "data sets that exist");
	prom_sample(stdout, "dlcache_datasets", NULL, s->ndatasets);
	prom_head(stdout, "dlcache_sessions", "gauge",
		  "open sessions of /dev/dlcache (this one included)");
	prom_sample(stdout, "dlcache_sessions", NULL, s->nsessions);
	/* Global: since the module was loaded, gone data sets included. */
	for (k = 0; !keyarg && k < ARRAY_SIZE(counter_fields); k++) {
		const struct prom_field *f = &counter_fields[k];

		prom_field_head(stdout, name, sizeof(name), "dlcache_", f);
		prom_sample(stdout, name, NULL, f->off ==
			    offsetof(struct dlcache_counters, used_bytes) ?
			    s->used_bytes : prom_value(&s->global, f));
	}
	/* Per data set: what it is, then its counters since it was created. */
	for (k = 0; k < nds + ARRAY_SIZE(counter_fields); k++) {
		const struct prom_field *f = k < nds ? &dataset_fields[k] :
					     &counter_fields[k - nds];

		prom_field_head(stdout, name, sizeof(name), "dlcache_dataset_", f);
		for (i = 0; i < s->n; i++)
			if (shown_ds(&s->ds[i], keyarg, key))
				prom_sample(stdout, name, labels[i], k < nds ?
					    ds_value(&s->ds[i], f) :
					    prom_value(&s->ds[i].dataset, f));
	}
	free(labels);
	return 0;
}

int cmd_stats(int argc, char **argv)
{
	const char *keyarg = NULL, *staging = NULL;
	struct admin_snap s;
	__u64 key[2] = { 0, 0 };
	uint32_t i, shown = 0;
	int json = 0, fd, ret;
	char a[32], b[32];

	ret = parse_args("stats", argc, argv, stats_help, 1, &json, &keyarg,
			 &staging);
	if (ret)
		return ret < 0 ? 0 : ret;
	if (staging) {
		if (keyarg)
			return usage_error("stats", "--staging takes no DATASET_KEY");
		return cmd_stats_staging(staging, json);
	}
	if (keyarg)
		admin_key_parse(keyarg, key);
	fd = admin_open("stats");
	if (fd < 0)
		return 1;
	ret = admin_snap_take(fd, &s);
	close(fd);
	if (ret)
		return fail("stats", "DLCACHE_IOC_STATS: %s", strerror(-ret));
	if (keyarg && !admin_snap_find(&s, key)) {
		admin_snap_free(&s);
		return fail("stats", "no data set with key %s in the cache", keyarg);
	}

	if (json == 2) {
		if (prom_stats(&s, keyarg, key)) {
			admin_snap_free(&s);
			return fail("stats", "%s", strerror(ENOMEM));
		}
	} else if (json) {
		printf("{\"capacity_bytes\": %llu, \"used_bytes\": %llu, "
		       "\"datasets\": %u, \"sessions\": %u, \"global\": {",
		       (unsigned long long)s.capacity_bytes,
		       (unsigned long long)s.used_bytes, s.ndatasets, s.nsessions);
		admin_json_counters(stdout, &s.global);
		printf("}, \"per_dataset\": [");
		for (i = 0; i < s.n; i++) {
			if (keyarg && (s.ds[i].ds_key[0] != key[0] ||
				       s.ds[i].ds_key[1] != key[1]))
				continue;
			printf("%s", shown++ ? ", " : "");
			json_dataset(&s.ds[i]);
		}
		printf("]}\n");
	} else {
		printf("capacity %s, used %s (%.1f%%), %u data sets, %u sessions (this one included)\n",
		       admin_bytes(s.capacity_bytes, a, sizeof(a)),
		       admin_bytes(s.used_bytes, b, sizeof(b)),
		       s.capacity_bytes ? 100.0 * (double)s.used_bytes /
		       (double)s.capacity_bytes : 0.0, s.ndatasets, s.nsessions);
		if (!keyarg) {
			printf("global (since the module was loaded)\n");
			print_counters(&s.global);
		}
		for (i = 0; i < s.n; i++) {
			if (keyarg && (s.ds[i].ds_key[0] != key[0] ||
				       s.ds[i].ds_key[1] != key[1]))
				continue;
			print_ds_header(&s.ds[i]);
			print_counters(&s.ds[i].dataset);
		}
	}
	admin_snap_free(&s);
	return fflush(stdout) ? fail("stats", "write error: %s", strerror(errno)) : 0;
}

/* ---- datasets --------------------------------------------------------------- */

int cmd_datasets(int argc, char **argv)
{
	const char *unused = NULL;
	struct admin_snap s;
	uint32_t i;
	int json = 0, fd, ret;
	char key[33], mode[8], a[32], idle[16];

	ret = parse_args("datasets", argc, argv, datasets_help, 0, &json, &unused,
			 NULL);
	if (ret)
		return ret < 0 ? 0 : ret;
	fd = admin_open("datasets");
	if (fd < 0)
		return 1;
	ret = admin_snap_take(fd, &s);
	close(fd);
	if (ret)
		return fail("datasets", "DLCACHE_IOC_STATS: %s", strerror(-ret));

	if (json)
		printf("[");
	else
		printf("%-32s %9s %5s %6s %4s %12s %9s %6s %7s %4s\n", "key", "samples",
		       "mode", "owner", "att", "cached", "samples", "hits", "idle",
		       "form");
	for (i = 0; i < s.n; i++) {
		const struct dlcache_stats *d = &s.ds[i];

		admin_key_str(d->ds_key, key);
		mode_str(d->ds_mode, mode);
		if (json) {
			printf("%s{\"key\": \"%s\", \"nsamples\": %u, \"mode\": \"%s\", "
			       "\"owner_uid\": %u, \"owner_gid\": %u, \"attached\": %u, ",
			       i ? ", " : "", key, d->ds_nsamples, mode,
			       d->ds_owner_uid, d->ds_owner_gid, d->ds_attached);
			json_idle(d);
			printf("\"used_bytes\": %llu, \"cached_samples\": %llu, "
			       "\"hit_ratio\": %.6f, \"byte_hit_ratio\": %.6f}",
			       (unsigned long long)d->dataset.used_bytes,
			       (unsigned long long)d->dataset.cached_samples,
			       admin_hit_ratio(&d->dataset),
			       admin_byte_hit_ratio(&d->dataset));
		} else {
			printf("%-32s %9u %5s %6u %4u %12s %9llu %5.1f%% %7s %4s\n", key,
			       d->ds_nsamples, mode, d->ds_owner_uid, d->ds_attached,
			       admin_bytes(d->dataset.used_bytes, a, sizeof(a)),
			       (unsigned long long)d->dataset.cached_samples,
			       100.0 * admin_hit_ratio(&d->dataset),
			       idle_str(d, idle, sizeof(idle)),
			       ds_form(d) ? (ds_form(d) == 1 ? "rgb" : "?") : "-");
		}
	}
	if (json)
		printf("]\n");
	admin_snap_free(&s);
	return fflush(stdout) ? fail("datasets", "write error: %s", strerror(errno)) : 0;
}
