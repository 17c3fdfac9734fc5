// SPDX-License-Identifier: MIT
/*
 * Order: permutations, determinism, DistributedSampler's padding and
 * sharding (checked against torch itself when /usr/bin/python3 has it),
 * uniformity, argument checks. Exit 0 pass, 1 fail.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dlcache.h"

#include "helpers/testutil.h"

static struct dlc_order_params params(uint64_t seed, uint32_t epoch,
				      uint32_t rank, uint32_t world,
				      uint32_t shuffle, uint32_t drop_last)
{
	struct dlc_order_params p = {
		.seed = seed, .epoch = epoch, .rank = rank, .world = world,
		.shuffle = shuffle, .drop_last = drop_last,
	};
	return p;
}

/* This rank's order, malloc'd (NULL on failure, reported); *len set. */
static uint32_t *order(uint32_t n, const struct dlc_order_params *p,
		       uint32_t *len)
{
	uint32_t *o;
	int ret;

	*len = dlc_order_len(n, p);
	o = malloc(((size_t)*len + 1) * sizeof(*o));
	if (!o)
		return NULL;
	ret = dlc_order_fill(n, p, o, *len);
	if (ret) {
		printf("FAIL: dlc_order_fill(n=%u, rank=%u, world=%u) = %d\n",
		       n, p->rank, p->world, ret);
		t_failures++;
		free(o);
		return NULL;
	}
	return o;
}

static uint32_t *global_order(uint32_t n, uint64_t seed, uint32_t epoch,
			      uint32_t shuffle)
{
	struct dlc_order_params p = params(seed, epoch, 0, 1, shuffle, 0);
	uint32_t len;

	return order(n, &p, &len);
}

static int is_permutation(const uint32_t *o, uint32_t n)
{
	unsigned char *seen = calloc(n ? n : 1, 1);
	uint32_t i;
	int ok = 1;

	if (!seen)
		return 0;
	for (i = 0; i < n && ok; i++) {
		if (o[i] >= n || seen[o[i]])
			ok = 0;
		else
			seen[o[i]] = 1;
	}
	free(seen);
	return ok;
}

static void test_permutation(void)
{
	static const uint32_t ns[] = { 1, 2, 3, 7, 10, 1000, 100003 };
	size_t k;

	for (k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		uint32_t *a = global_order(ns[k], 42, 3, 1);
		uint32_t *b = global_order(ns[k], 42, 3, 1);

		if (a && b) {
			if (!is_permutation(a, ns[k]))
				printf("FAIL: not a permutation, n=%u\n", ns[k]),
					t_failures++;
			if (memcmp(a, b, ns[k] * sizeof(*a)))
				printf("FAIL: not deterministic, n=%u\n", ns[k]),
					t_failures++;
		}
		free(a);
		free(b);
	}
}

static void test_seeds_epochs(void)
{
	const uint32_t n = 1000;
	uint32_t *base = global_order(n, 7, 0, 1);
	uint32_t *e1 = global_order(n, 7, 1, 1);
	uint32_t *s1 = global_order(n, 8, 0, 1);
	uint32_t *id = global_order(n, 7, 0, 0);
	uint32_t *id2 = global_order(n, 99, 5, 0);
	uint32_t i, fixed = 0;

	if (base && e1 && s1 && id && id2) {
		CHECK(memcmp(base, e1, n * sizeof(*base)));
		CHECK(memcmp(base, s1, n * sizeof(*base)));
		for (i = 0; i < n; i++) {
			CHECK_EQ(id[i], i);
			CHECK_EQ(id2[i], i);
			fixed += base[i] == i;
		}
		/* A shuffle of 1000 keeps about one element in place. */
		CHECK(fixed < 10);
	}
	free(base);
	free(e1);
	free(s1);
	free(id);
	free(id2);
}

/*
 * Every rank's slice against the global order padded as torch does:
 * position pos of the padded order is g[pos % n].
 */
static void check_shards(uint32_t n, uint32_t world, uint32_t drop_last,
			 uint32_t shuffle)
{
	uint32_t *g = global_order(n, 1234, 9, shuffle);
	uint32_t *count = calloc(n, sizeof(*count));
	uint64_t total, want_len;
	uint32_t r, i, len;

	if (!g || !count)
		goto out;
	want_len = drop_last ? n / world : (n + (uint64_t)world - 1) / world;
	total = want_len * world;
	for (r = 0; r < world; r++) {
		struct dlc_order_params p =
			params(1234, 9, r, world, shuffle, drop_last);
		uint32_t *o = order(n, &p, &len);

		if (!o)
			continue;
		if (len != want_len) {
			printf("FAIL: n=%u world=%u drop_last=%u rank %u: len %u, want %llu\n",
			       n, world, drop_last, r, len,
			       (unsigned long long)want_len);
			t_failures++;
		}
		for (i = 0; i < len; i++) {
			uint64_t pos = r + (uint64_t)i * world;

			if (o[i] != g[pos % n]) {
				printf("FAIL: n=%u world=%u rank %u [%u] = %u, want %u\n",
				       n, world, r, i, o[i], g[pos % n]);
				t_failures++;
				break;
			}
			if (o[i] < n)
				count[o[i]]++;
		}
		free(o);
	}
	/* drop_last: disjoint; otherwise everything, the head twice. */
	for (i = 0; i < n; i++) {
		uint64_t want = total / n + (i < total % n);
		uint32_t c = count[g[i]];

		if (c != want) {
			printf("FAIL: n=%u world=%u drop_last=%u: sample %u seen %u times, want %llu\n",
			       n, world, drop_last, g[i], c,
			       (unsigned long long)want);
			t_failures++;
			break;
		}
	}
out:
	free(g);
	free(count);
}

static void test_sharding(void)
{
	static const uint32_t cases[][2] = {
		{ 10, 4 }, { 12, 4 }, { 1003, 4 }, { 1, 1 }, { 3, 8 },
		{ 5, 2 }, { 17, 16 }, { 100, 7 }, { 2, 3 },
	};
	struct dlc_order_params p = params(5, 0, 0, 4, 1, 0);
	uint32_t *g, *o, len;
	size_t k;

	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		check_shards(cases[k][0], cases[k][1], 0, 1);
		check_shards(cases[k][0], cases[k][1], 1, 1);
		check_shards(cases[k][0], cases[k][1], 0, 0);
		check_shards(cases[k][0], cases[k][1], 1, 0);
	}

	/* The brief's example spelled out: n=10, world=4, rank 2. */
	g = global_order(10, 5, 0, 1);
	CHECK_EQ(dlc_order_len(10, &p), 3);
	p.rank = 2;
	o = order(10, &p, &len);
	if (g && o && len == 3) {
		CHECK_EQ(o[0], g[2]);
		CHECK_EQ(o[1], g[6]);
		CHECK_EQ(o[2], g[0]);	/* padding: the head again */
	}
	free(o);
	p.rank = 3;
	o = order(10, &p, &len);
	if (g && o && len == 3)
		CHECK_EQ(o[2], g[1]);
	free(o);
	free(g);

	/* drop_last with fewer samples than ranks: nothing, validly. */
	p = params(5, 0, 1, 8, 1, 1);
	CHECK_EQ(dlc_order_len(3, &p), 0);
	CHECK_EQ(dlc_order_fill(3, &p, NULL, 0), 0);

	/* No 32-bit wrap near the top. */
	p = params(0, 0, 0, 2, 0, 0);
	CHECK_EQ(dlc_order_len(UINT32_MAX, &p), 1U << 31);
	p.world = 3;
	CHECK_EQ(dlc_order_len(UINT32_MAX, &p), 1431655765);
	p.world = UINT32_MAX;
	CHECK_EQ(dlc_order_len(UINT32_MAX, &p), 1);
	p.drop_last = 1;
	p.world = 2;
	CHECK_EQ(dlc_order_len(UINT32_MAX, &p), (1U << 31) - 1);
}

/* Resuming at position k reads the same order from k. */
static void test_resume(void)
{
	struct dlc_order_params p = params(77, 4, 1, 3, 1, 0);
	uint32_t *a, *b, la, lb, k;

	a = order(1000, &p, &la);
	b = order(1000, &p, &lb);
	if (a && b && la == lb) {
		for (k = 0; k <= la; k += 37)
			CHECK(!memcmp(a + k, b + k, (la - k) * sizeof(*a)));
	}
	free(a);
	free(b);
}

/*
 * Elastic resume: W ranks took k samples each of an epoch; the rest,
 * sharded over W2 ranks, is the global order's positions [k W, n) (plus
 * the rest's head as padding, or cut to equal shares), so the two runs
 * together use every sample once.
 */
static void check_rest(uint32_t n, uint32_t w, uint32_t k, uint32_t w2,
		       uint32_t drop_last)
{
	struct dlc_order_params p = params(9, 3, 0, w2, 1, drop_last);
	uint64_t done = (uint64_t)k * w;
	uint32_t *g = global_order(n, 9, 3, 1), *r, len, len0, m, q, i;
	unsigned char *seen = calloc(n, 1);
	uint32_t *all = NULL;

	if (!g || !seen)
		goto out;
	m = done >= n ? 0 : (uint32_t)(n - done);
	CHECK_EQ(dlc_order_rest_len(n, &p, done, &len0), 0);
	CHECK_EQ(len0, drop_last ? m / w2 : (m + w2 - 1) / w2);
	all = malloc(((size_t)len0 * w2 + 1) * sizeof(*all));
	for (p.rank = 0; all && p.rank < w2; p.rank++) {
		CHECK_EQ(dlc_order_rest_len(n, &p, done, &len), 0);
		CHECK_EQ(len, len0);	/* every rank the same share */
		r = malloc(((size_t)len + 1) * sizeof(*r));
		if (!r || len != len0 ||
		    dlc_order_fill_rest(n, &p, done, r, len)) {
			printf("FAIL: rest of n=%u after %llu, rank %u of %u\n",
			       n, (unsigned long long)done, p.rank, w2);
			t_failures++;
			free(r);
			continue;
		}
		for (i = 0; i < len; i++)
			all[(size_t)i * w2 + p.rank] = r[i];
		free(r);
	}
	if (!all)
		goto out;
	/* Interleaved back, the shares are the rest of the global order. */
	for (q = 0; q < len0 * w2; q++)
		if (all[q] != g[done + q % m]) {
			printf("FAIL: n=%u W=%u k=%u W2=%u drop_last=%u: global %u of the rest is %u, want %u\n",
			       n, w, k, w2, drop_last, q, all[q], g[done + q % m]);
			t_failures++;
			break;
		}
	/* Both runs together: each sample once (the padding aside). */
	for (q = 0; q < done && q < n; q++)
		seen[g[q]]++;
	for (q = 0; q < len0 * w2 && q < m; q++)
		seen[all[q]]++;
	/* Cut to equal shares, the rest's tail is not used. */
	for (q = len0 * w2; drop_last && q < m; q++)
		seen[g[done + q]] += 10;
	for (i = 0; i < n; i++)
		if (seen[i] != 1 && seen[i] != 10) {
			printf("FAIL: n=%u W=%u k=%u W2=%u drop_last=%u: sample %u used %u times\n",
			       n, w, k, w2, drop_last, i, seen[i] % 10);
			t_failures++;
			break;
		}
out:
	free(all);
	free(seen);
	free(g);
}

static void test_rest(void)
{
	static const uint32_t cases[][4] = {	/* n, W, k, W2 */
		{ 1000, 4, 37, 3 }, { 1000, 3, 100, 8 }, { 1000, 8, 0, 2 },
		{ 1003, 2, 250, 7 }, { 10, 4, 2, 3 }, { 10, 4, 3, 2 },
		{ 7, 1, 3, 1 }, { 100, 5, 20, 4 }, { 5, 2, 1, 9 },
	};
	struct dlc_order_params p = params(9, 3, 0, 2, 1, 0);
	uint32_t *a, *b, la, lb, len, bad[3];
	size_t c;

	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		check_rest(cases[c][0], cases[c][1], cases[c][2], cases[c][3], 0);
		check_rest(cases[c][0], cases[c][1], cases[c][2], cases[c][3], 1);
	}
	/* Nothing done: the rest is the whole order, at any world. */
	a = order(1000, &p, &la);
	b = malloc(sizeof(*b) * (la + 1));
	if (a && b && !dlc_order_rest_len(1000, &p, 0, &lb) && lb == la &&
	    !dlc_order_fill_rest(1000, &p, 0, b, lb))
		CHECK(!memcmp(a, b, la * sizeof(*a)));
	else
		CHECK(0);
	free(a);
	free(b);
	/* All done, or more: an empty share, validly. */
	CHECK_EQ(dlc_order_rest_len(1000, &p, 1000, &len), 0);
	CHECK_EQ(len, 0);
	CHECK_EQ(dlc_order_rest_len(1000, &p, 5000, &len), 0);
	CHECK_EQ(len, 0);
	CHECK_EQ(dlc_order_fill_rest(1000, &p, 1000, NULL, 0), 0);
	/* Bad arguments. */
	CHECK_EQ(dlc_order_rest_len(1000, &p, 0, NULL), -EINVAL);
	CHECK_EQ(dlc_order_fill_rest(1000, &p, 10, bad, 3), -EINVAL);
	p.rank = 2;
	CHECK_EQ(dlc_order_rest_len(1000, &p, 0, &len), -EINVAL);
}

/*
 * Each element's position over many epochs: a chi-square over the n x n
 * table of (element, position) counts, (n - 1)^2 degrees of freedom.
 * The generator is deterministic, so this cannot flake; the bound is five
 * standard deviations above the mean.
 */
static void test_uniform(void)
{
	enum { N = 10, EPOCHS = 20000 };
	static uint32_t table[N][N];
	double chi = 0, expect = (double)EPOCHS / N, dof = (N - 1) * (N - 1);
	double mean_pos[N] = { 0 };
	uint32_t e, i, j;
	uint32_t perm3[6] = { 0 };

	for (e = 0; e < EPOCHS; e++) {
		uint32_t *o = global_order(N, 2024, e, 1);

		if (!o)
			return;
		for (i = 0; i < N; i++) {
			table[o[i]][i]++;
			mean_pos[o[i]] += i;
		}
		free(o);
	}
	for (i = 0; i < N; i++)
		for (j = 0; j < N; j++)
			chi += (table[i][j] - expect) * (table[i][j] - expect) /
			       expect;
	if (chi > dof + 5 * sqrt(2 * dof)) {
		printf("FAIL: position chi-square %.1f over %u dof\n", chi,
		       (unsigned)dof);
		t_failures++;
	}
	for (i = 0; i < N; i++) {
		double m = mean_pos[i] / EPOCHS;

		/* sd of the mean: sqrt((N^2 - 1) / 12 / EPOCHS) ~ 0.02 */
		if (fabs(m - (N - 1) / 2.0) > 0.15) {
			printf("FAIL: element %u mean position %.3f\n", i, m);
			t_failures++;
		}
	}

	/* n = 3 across seeds: all six orders equally often. */
	for (e = 0; e < 60000; e++) {
		uint32_t *o = global_order(3, e, 0, 1);

		if (!o)
			return;
		perm3[o[0] * 2 + (o[1] > o[2])]++;
		free(o);
	}
	chi = 0;
	for (i = 0; i < 6; i++)
		chi += (perm3[i] - 10000.0) * (perm3[i] - 10000.0) / 10000.0;
	if (chi > 5 + 5 * sqrt(10)) {
		printf("FAIL: n=3 permutation chi-square %.1f\n", chi);
		t_failures++;
	}
}

static void test_bad_args(void)
{
	struct dlc_order_params p = params(1, 0, 0, 2, 1, 0);
	uint32_t out[8];

	CHECK_EQ(dlc_order_len(10, &p), 5);
	CHECK_EQ(dlc_order_fill(10, &p, out, 5), 0);
	CHECK_EQ(dlc_order_fill(10, &p, out, 4), -EINVAL);
	CHECK_EQ(dlc_order_fill(10, &p, out, 6), -EINVAL);
	CHECK_EQ(dlc_order_fill(10, &p, NULL, 5), -EINVAL);
	CHECK_EQ(dlc_order_len(10, NULL), 0);
	CHECK_EQ(dlc_order_fill(10, NULL, out, 5), -EINVAL);
	CHECK_EQ(dlc_order_len(0, &p), 0);
	CHECK_EQ(dlc_order_fill(0, &p, out, 0), -EINVAL);
	p.world = 0;
	CHECK_EQ(dlc_order_len(10, &p), 0);
	CHECK_EQ(dlc_order_fill(10, &p, out, 0), -EINVAL);
	p.world = 2;
	p.rank = 2;
	CHECK_EQ(dlc_order_len(10, &p), 0);
	CHECK_EQ(dlc_order_fill(10, &p, out, 5), -EINVAL);
	p.rank = 1;
	p.pad = 1;
	CHECK_EQ(dlc_order_len(10, &p), 0);
	CHECK_EQ(dlc_order_fill(10, &p, out, 5), -EINVAL);
}

/*
 * DistributedSampler itself, shuffle=False (the permutation is the
 * identity on both sides, so only padding and sharding are compared).
 */
static const char torch_script[] =
	"import sys\n"
	"try:\n"
	"    from torch.utils.data.distributed import DistributedSampler\n"
	"except Exception:\n"
	"    sys.exit(77)\n"
	"for line in sys.stdin:\n"
	"    n, w, r, d = map(int, line.split())\n"
	"    s = DistributedSampler(range(n), num_replicas=w, rank=r,\n"
	"                           shuffle=False, drop_last=bool(d))\n"
	"    print(n, w, r, d, len(s), *list(s))\n";

static void test_torch(void)
{
	static const uint32_t cases[][2] = {
		{ 10, 4 }, { 12, 4 }, { 1, 1 }, { 3, 8 }, { 5, 2 }, { 17, 16 },
		{ 100, 7 }, { 2, 3 }, { 1, 5 }, { 9, 9 }, { 31, 6 },
	};
	char script[] = "/tmp/test_order.XXXXXX", cases_path[64], cmd[256];
	char line[8192];
	FILE *f, *in;
	size_t k, lines = 0;
	uint32_t r, d;
	int fd, status;

	if (access("/usr/bin/python3", X_OK)) {
		t_skip_required("test_torch", "no /usr/bin/python3 (make deps)");
		return;
	}
	fd = mkstemp(script);
	f = fd < 0 ? NULL : fdopen(fd, "w");
	CHECK(f, "torch script %s: %s", script, strerror(errno));
	if (!f) {
		if (fd >= 0)
			close(fd);
		unlink(script);
		return;
	}
	fputs(torch_script, f);
	fclose(f);
	snprintf(cases_path, sizeof(cases_path), "%s.in", script);
	in = fopen(cases_path, "w");
	CHECK(in, "%s: %s", cases_path, strerror(errno));
	if (!in) {
		unlink(script);
		return;
	}
	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
		for (r = 0; r < cases[k][1]; r++)
			for (d = 0; d < 2; d++)
				fprintf(in, "%u %u %u %u\n", cases[k][0],
					cases[k][1], r, d);
	fclose(in);
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s < %s 2>/dev/null",
		 script, cases_path);
	f = popen(cmd, "r");
	if (!f)
		goto out;
	while (fgets(line, sizeof(line), f)) {
		unsigned int n, w, rank, dl, tlen, v;
		struct dlc_order_params p;
		uint32_t *o, len, i;
		char *s = line;
		int used;

		if (sscanf(s, "%u %u %u %u %u%n", &n, &w, &rank, &dl, &tlen,
			   &used) != 5)
			continue;
		s += used;
		lines++;
		p = params(0, 0, rank, w, 0, dl);
		if (dlc_order_len(n, &p) != tlen) {
			printf("FAIL: torch n=%u world=%u drop_last=%u: len %u, torch %u\n",
			       n, w, dl, dlc_order_len(n, &p), tlen);
			t_failures++;
			continue;
		}
		o = order(n, &p, &len);
		if (!o)
			continue;
		for (i = 0; i < len; i++) {
			if (sscanf(s, "%u%n", &v, &used) != 1 || v != o[i]) {
				printf("FAIL: torch n=%u world=%u rank=%u drop_last=%u: [%u] differs\n",
				       n, w, rank, dl, i);
				t_failures++;
				break;
			}
			s += used;
		}
		free(o);
	}
	status = pclose(f);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		t_skip_required("test_torch", "/usr/bin/python3 has no torch (make deps)");
	else if (!WIFEXITED(status) || WEXITSTATUS(status) || !lines)
		printf("FAIL: torch comparison script failed\n"), t_failures++;
	else
		printf("note: %zu sharding cases match DistributedSampler\n",
		       lines);
out:
	unlink(cases_path);
	unlink(script);
}

int main(void)
{
	T_RUN(test_permutation);
	T_RUN(test_seeds_epochs);
	T_RUN(test_sharding);
	T_RUN(test_resume);
	T_RUN(test_rest);
	T_RUN(test_uniform);
	T_RUN(test_bad_args);
	T_RUN(test_torch);
	return t_done("test_order");
}
