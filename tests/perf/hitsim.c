// SPDX-License-Identifier: MIT
/*
 * hitsim: hit ratios of cache policies over a data set's real file sizes
 * and dlcache's real epoch orders (dlc_order_fill, seed 0, one rank), for
 * `make bench`. See tools/dlcachectl/hitsim.h for the policies.
 *
 *   hitsim INDEX --capacity BYTES [--epochs E] [--json]
 *       simulate dlcache (the library's cache object), LRU and MinIO on
 *       the permutation order and on an order with repeats, next to two
 *       references independent of the library (tests/perf/optref.c): an
 *       upper bound on any policy's byte hit ratio ("bound") and the exact
 *       optimum by count on unit sizes ("belady_unit", with "dlcache_unit"
 *       beside it); print hit ratios and dlcache's ratio to each.
 *   hitsim INDEX --jobs [--capacity BYTES] [--epochs E]
 *       two jobs (seeds 7 and 8, the second at half the first's speed)
 *       share one cache of BYTES (default: half the data set) ranked by
 *       the merged policy, against two separate in-process caches and the
 *       optimum of the merged trace (hitsim_jobs.c); "# " lines.
 *   hitsim INDEX --replay perm|repeats [--epochs E]
 *       read the files in that order with plain read() (buffered), and
 *       print per epoch the bytes requested and the bytes this process
 *       read from the block device (/proc/self/io read_bytes): the page
 *       cache's hit ratio when run inside a memory-limited cgroup.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlcache.h"
#include "hitsim_core.c"

#define HOT_PCT		20
#define HOT_WEIGHT	4

static int build_order(const struct dlc_index *idx, int repeats, uint32_t epochs,
		       uint32_t **ids, uint32_t *len)
{
	uint32_t n = dlc_index_count(idx), e;
	struct dlc_order_params op = { 0, 0, 0, 1, 1, 0, 0 };

	*len = dlc_order_len(n, &op);
	*ids = malloc(sizeof(uint32_t) * (size_t)*len * epochs);
	if (!*ids)
		return -ENOMEM;
	for (e = 0; e < epochs; e++) {
		uint32_t *o = *ids + (size_t)e * *len;

		if (repeats) {
			hs_repeats_order(n, HOT_PCT, HOT_WEIGHT, 0, e, o, *len);
		} else {
			op.epoch = e;
			if (dlc_order_fill(n, &op, o, *len))
				return -EINVAL;
		}
	}
	return 0;
}

static uint64_t proc_read_bytes(void)
{
	char line[256];
	unsigned long long v = 0;
	FILE *f = fopen("/proc/self/io", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "read_bytes: %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

static int replay(const struct dlc_index *idx, int repeats, uint32_t epochs)
{
	uint32_t *ids, len, e, i;
	static char buf[1 << 20];
	char path[4096];

	if (build_order(idx, repeats, epochs, &ids, &len))
		return 1;
	printf("{\"order\": \"%s\", \"measure\": \"/proc/self/io read_bytes\", \"epochs\": [",
	       repeats ? "repeats" : "perm");
	for (e = 0; e < epochs; e++) {
		uint64_t req = 0, r0 = proc_read_bytes(), r1;

		for (i = 0; i < len; i++) {
			uint32_t id = ids[(size_t)e * len + i];
			ssize_t r;
			int fd;

			snprintf(path, sizeof(path), "%s/%s", dlc_index_root(idx),
				 dlc_index_relpath(idx, id));
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0) {
				perror(path);
				return 1;
			}
			while ((r = read(fd, buf, sizeof(buf))) > 0)
				req += (uint64_t)r;
			close(fd);
		}
		r1 = proc_read_bytes();
		printf("%s{\"epoch\": %u, \"req_bytes\": %llu, \"read_bytes\": %llu, "
		       "\"hit_ratio\": %.4f}", e ? ", " : "", e,
		       (unsigned long long)req, (unsigned long long)(r1 - r0),
		       req ? 1.0 - (double)(r1 - r0) / (double)req : 0.0);
		fflush(stdout);
	}
	printf("]}\n");
	free(ids);
	return 0;
}

static void print_policy(const char *name, const struct hs_epoch_result *r,
			 uint32_t epochs, int first)
{
	struct hs_epoch_result st;
	uint32_t e;

	hs_sum(r, 1, epochs, &st);
	printf("%s\"%s\": {\"cold_bytes\": %.4f, \"steady_bytes\": %.4f, "
	       "\"cold_count\": %.4f, \"steady_count\": %.4f, \"epochs_bytes\": [",
	       first ? "" : ", ", name, hs_hit_ratio(&r[0], 1), hs_hit_ratio(&st, 1),
	       hs_hit_ratio(&r[0], 0), hs_hit_ratio(&st, 0));
	for (e = 0; e < epochs; e++)
		printf("%s%.4f", e ? ", " : "", hs_hit_ratio(&r[e], 1));
	printf("]}");
}

/* The bound, cold (epoch 0) and steady (the rest), as byte ratios. */
static int print_bound(const struct hs_trace *t, uint64_t cap,
		       const struct hs_epoch_result *r, const char *name)
{
	struct hs_epoch_result st;
	double cold = hs_bound(t, cap, 0, 1), steady = hs_bound(t, cap, 1, t->nepochs);

	if (cold < 0 || steady < 0)
		return -1;
	hs_sum(r, 1, t->nepochs, &st);
	printf(", \"%s\": {\"cold_bytes\": %.4f, \"steady_bytes\": %.4f}", name,
	       r[0].req_bytes ? cold / (double)r[0].req_bytes : 0.0,
	       st.req_bytes ? steady / (double)st.req_bytes : 0.0);
	return 0;
}

static int simulate(const struct dlc_index *idx, uint64_t cap, uint32_t epochs)
{
	uint32_t n = dlc_index_count(idx), i, o, *ids, len;
	uint64_t *size = malloc(sizeof(uint64_t) * n), *unit = malloc(sizeof(uint64_t) * n);
	uint64_t total = dlc_index_total_bytes(idx), ucap;
	struct hs_epoch_result *r = calloc(epochs, sizeof(*r));
	struct hs_epoch_result *rd = calloc(epochs, sizeof(*r));
	struct hs_epoch_result sd, sb;
	struct hs_trace t;
	int p;

	if (!size || !unit || !r || !rd)
		return 1;
	for (i = 0; i < n; i++) {
		size[i] = dlc_index_size(idx, i);
		unit[i] = 1;
	}
	/* Unit sizes: the capacity in samples of the mean size. */
	ucap = (uint64_t)((double)cap / ((double)total / n) + 0.5);
	printf("{\"samples\": %u, \"dataset_bytes\": %llu, \"capacity_bytes\": %llu, "
	       "\"capacity_over_size\": %.4f, \"unit_capacity\": %llu, \"epochs\": %u, "
	       "\"repeats_params\": {\"hot_pct\": %d, \"hot_weight\": %d}",
	       n, (unsigned long long)total, (unsigned long long)cap,
	       (double)cap / (double)total, (unsigned long long)ucap, epochs,
	       HOT_PCT, HOT_WEIGHT);
	for (o = 0; o < 2; o++) {
		double bound;

		if (build_order(idx, o, epochs, &ids, &len))
			return 1;
		t.nsamples = n;
		t.nepochs = epochs;
		t.epoch_len = len;
		t.ids = ids;
		printf(", \"%s\": {", o ? "repeats" : "perm");
		t.size = size;
		for (p = 0; p < HS_POLICIES; p++) {
			if (hs_run(p, &t, cap, p == HS_DLCACHE ? rd : r))
				return 1;
			print_policy(hs_policy_names[p], p == HS_DLCACHE ? rd : r,
				     epochs, p == 0);
		}
		/* Independent: an upper bound on any policy's hit bytes. */
		if (print_bound(&t, cap, rd, "bound"))
			return 1;
		hs_sum(rd, 1, epochs, &sd);
		bound = hs_bound(&t, cap, 1, epochs);
		printf(", \"dlcache_over_bound_steady_bytes\": %.4f",
		       bound > 0 ? (double)sd.hit_bytes / bound : 1.0);
		/* Independent: the exact optimum by count on unit sizes. */
		t.size = unit;
		if (hs_belady_unit(&t, ucap, r))
			return 1;
		print_policy("belady_unit", r, epochs, 0);
		hs_sum(r, 1, epochs, &sb);
		if (hs_run(HS_DLCACHE, &t, ucap, rd))
			return 1;
		print_policy("dlcache_unit", rd, epochs, 0);
		hs_sum(rd, 1, epochs, &sd);
		printf(", \"dlcache_over_belady_unit_steady_count\": %.4f}",
		       sb.hits ? (double)sd.hits / (double)sb.hits : 1.0);
		free(ids);
	}
	printf("}\n");
	free(size);
	free(unit);
	free(r);
	free(rd);
	return 0;
}

/* Two jobs, one cache: see hitsim_jobs.c. */
static int two_jobs(const struct dlc_index *idx, uint64_t cap, uint32_t epochs)
{
	uint32_t n = dlc_index_count(idx), i, e, j, *ids[2] = { NULL, NULL };
	uint64_t *size = malloc(sizeof(uint64_t) * n);
	uint64_t total = dlc_index_total_bytes(idx);
	struct dlc_order_params op = { 0, 0, 0, 1, 1, 0, 0 };
	struct hs_trace t[2];
	struct hs_jobs_result r;
	int ret = 1;

	if (!size)
		return 1;
	for (i = 0; i < n; i++)
		size[i] = dlc_index_size(idx, i);
	if (!cap)
		cap = total / 2;
	for (j = 0; j < 2; j++) {
		ids[j] = malloc(sizeof(uint32_t) * (size_t)n * epochs);
		if (!ids[j])
			goto out;
		op.seed = 7 + j;
		for (e = 0; e < epochs; e++) {
			op.epoch = e;
			if (dlc_order_fill(n, &op, ids[j] + (size_t)e * n, n))
				goto out;
		}
		t[j] = (struct hs_trace){ n, size, epochs, n, ids[j] };
	}
	printf("# two jobs: %u samples, %llu bytes, capacity %llu, %u epochs each\n",
	       n, (unsigned long long)total, (unsigned long long)cap, epochs);
	if (hs_jobs_run(&t[0], &t[1], cap, 1000000, &r))
		goto out;
	hs_jobs_print(&r, total);
	ret = 0;
out:
	free(ids[0]);
	free(ids[1]);
	free(size);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "capacity", required_argument, NULL, 'c' },
		{ "epochs", required_argument, NULL, 'e' },
		{ "replay", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "jobs", no_argument, NULL, 'J' },
		{ 0 }
	};
	struct dlc_index *idx = NULL;
	uint64_t cap = 0;
	uint32_t epochs = 4;
	int c, rep = -1, ret, jobs = 0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			cap = strtoull(optarg, NULL, 0);
			break;
		case 'e':
			epochs = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'r':
			rep = !strcmp(optarg, "repeats");
			break;
		case 'j':
			break;
		case 'J':
			jobs = 1;
			break;
		default:
			fprintf(stderr, "usage: hitsim INDEX (--capacity BYTES | --jobs [--capacity BYTES] | --replay perm|repeats) [--epochs E]\n");
			return 2;
		}
	}
	if (optind != argc - 1 || !epochs || epochs > 8) {
		fprintf(stderr, "usage: hitsim INDEX (--capacity BYTES | --jobs [--capacity BYTES] | --replay perm|repeats) [--epochs E<=8]\n");
		return 2;
	}
	ret = dlc_index_load(argv[optind], &idx);
	if (ret) {
		fprintf(stderr, "hitsim: %s: %s\n", argv[optind], strerror(-ret));
		return 1;
	}
	if (jobs)
		ret = two_jobs(idx, cap, epochs);
	else
		ret = rep >= 0 ? replay(idx, rep, epochs) :
				 simulate(idx, cap, epochs);
	dlc_index_free(idx);
	return ret;
}
