// SPDX-License-Identifier: MIT
/*
 * Two jobs, one cache: the simulator's "two jobs" mode, #included by
 * tests/perf/hitsim_core.c (so by tests/perf/hitsim.c and
 * tests/unit/test_hitsim.c).
 *
 * Job A and job B read the same data set, each in its own shuffled order
 * (different seeds), job B at half job A's speed: A's request i is at
 * time i * dt, B's request j at time 2 j * dt. The requests of both,
 * merged in time (A first on a tie), go to one cache of @cap bytes ranked
 * by the merged policy (libdlcache/cache/policy.c) as dlcache.ko drives it:
 * each job is a consumer with its own time line; when a job starts an
 * epoch its order is uploaded (if not yet) and so is the next one; every
 * request advances the job's consumer past its position with now = the
 * request's time, then hits or is read from disk and offered: while it
 * does not fit, the victim is evicted if the request is preferred to it,
 * else the request bypasses the cache. A job's consumer is removed after
 * its last request (the job detaches).
 *
 * Compared with: the same shared cache with the two time lines merged by
 * position alone (each job's clock runs as if it were as fast as A); two
 * separate in-process caches (libdlcache/cache/cache.c, one
 * per job, as two jobs get today), each of @cap bytes and each of
 * @cap / 2 (the same memory in all); and the optimum of the merged trace
 * (tests/perf/optref.c, independent of policy.c): an upper bound on the
 * hit bytes of any policy with @cap bytes, so a lower bound on the bytes
 * read from disk.
 */

struct hs_jobs_result {
	uint64_t req_bytes[2];		/* per job */
	uint64_t hit_bytes[2];
	uint64_t disk_bytes;		/* shared cache: both jobs */
	uint64_t rebuilds;		/* policy key rebuilds */
	uint64_t pos_disk_bytes;	/* shared, merged by position alone */
	uint64_t sep_disk_bytes;	/* two caches of cap each */
	uint64_t sep_hit_bytes[2];
	uint64_t half_disk_bytes;	/* two caches of cap / 2 each */
	double opt_disk_bytes;		/* lower bound, merged trace */
};

/* Disk bytes of one job alone in an in-process cache of @cap bytes. */
static int hs_jobs_alone(const struct hs_trace *t, uint64_t cap,
			 uint64_t *disk, uint64_t *hit)
{
	struct hs_epoch_result *r = calloc(t->nepochs, sizeof(*r)), s;

	if (!r || hs_run(HS_DLCACHE, t, cap, r)) {
		free(r);
		return -1;
	}
	hs_sum(r, 0, t->nepochs, &s);
	*disk = s.req_bytes - s.hit_bytes;
	if (hit)
		*hit = s.hit_bytes;
	free(r);
	return 0;
}

/*
 * The shared cache: jobs @a and @b (same samples and sizes; B at half A's
 * speed, @dt ns between A's requests) over one cache of @cap bytes
 * (hs_run_shared(), tools/dlcachectl/hitsim.h). With @by_position each
 * job's clock is its own position x @dt, as if both ran at A's speed: the
 * merge by position alone, for comparison. The merged trace into
 * @merged. Returns 0 or -1.
 */
static int hs_jobs_shared(const struct hs_trace *a, const struct hs_trace *b,
			  uint64_t cap, uint64_t dt, int by_position,
			  struct hs_jobs_result *res, uint32_t *merged)
{
	const struct hs_job jobs[2] = { { a, dt }, { b, 2 * dt } };
	struct hs_epoch_result *r[2], s;
	int j, rc = -1;

	r[0] = calloc(a->nepochs, sizeof(*r[0]));
	r[1] = calloc(b->nepochs, sizeof(*r[1]));
	if (r[0] && r[1] &&
	    !hs_run_shared(HS_DLCACHE, jobs, 2, cap,
			   by_position ? HS_CLOCK_BY_POSITION : 0, r, merged,
			   &res->rebuilds)) {
		for (j = 0; j < 2; j++) {
			hs_sum(r[j], 0, jobs[j].t->nepochs, &s);
			res->req_bytes[j] = s.req_bytes;
			res->hit_bytes[j] = s.hit_bytes;
			res->disk_bytes += s.req_bytes - s.hit_bytes;
		}
		rc = 0;
	}
	free(r[0]);
	free(r[1]);
	return rc;
}

/*
 * Run jobs @a and @b (as hs_jobs_shared()) over one cache of @cap bytes,
 * and the comparisons. Returns 0 or -1.
 */
static int hs_jobs_run(const struct hs_trace *a, const struct hs_trace *b,
		       uint64_t cap, uint64_t dt, struct hs_jobs_result *res)
{
	uint64_t k = (uint64_t)a->nepochs * a->epoch_len +
		     (uint64_t)b->nepochs * b->epoch_len, tot;
	uint32_t *merged = malloc(sizeof(uint32_t) * k);
	struct hs_jobs_result pr;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	memset(&pr, 0, sizeof(pr));
	if (!merged || hs_jobs_shared(a, b, cap, dt, 1, &pr, merged))
		goto out;
	res->pos_disk_bytes = pr.disk_bytes;
	if (hs_jobs_shared(a, b, cap, dt, 0, res, merged))
		goto out;

	/* Today: one in-process cache per job. */
	if (hs_jobs_alone(a, cap, &tot, &res->sep_hit_bytes[0]))
		goto out;
	res->sep_disk_bytes = tot;
	if (hs_jobs_alone(b, cap, &tot, &res->sep_hit_bytes[1]))
		goto out;
	res->sep_disk_bytes += tot;
	if (hs_jobs_alone(a, cap / 2, &tot, NULL))
		goto out;
	res->half_disk_bytes = tot;
	if (hs_jobs_alone(b, cap / 2, &tot, NULL))
		goto out;
	res->half_disk_bytes += tot;

	/* Independent: the optimum of the merged trace. */
	res->opt_disk_bytes = opt_bound_bytes(merged, k, a->nsamples, a->size,
					      cap, 0, k);
	if (res->opt_disk_bytes < 0)
		goto out;
	res->opt_disk_bytes = (double)(res->req_bytes[0] + res->req_bytes[1]) -
			      res->opt_disk_bytes;
	rc = 0;
out:
	free(merged);
	return rc;
}

/* The "# " lines of a two-jobs run. */
static void hs_jobs_print(const struct hs_jobs_result *r, uint64_t total)
{
	printf("# two jobs, shared cache: byte hit ratio A %.4f, B %.4f; disk %.3f x the data set (%llu rebuilds)\n",
	       (double)r->hit_bytes[0] / (double)r->req_bytes[0],
	       (double)r->hit_bytes[1] / (double)r->req_bytes[1],
	       (double)r->disk_bytes / (double)total,
	       (unsigned long long)r->rebuilds);
	printf("# two jobs, optimum of the merged trace: disk %.3f x the data set; shared / optimum %.4f (target <= 1.10)\n",
	       r->opt_disk_bytes / (double)total,
	       (double)r->disk_bytes / r->opt_disk_bytes);
	printf("# two jobs, shared cache merged by position alone (speeds ignored): disk %.3f x; / optimum %.4f\n",
	       (double)r->pos_disk_bytes / (double)total,
	       (double)r->pos_disk_bytes / r->opt_disk_bytes);
	printf("# two jobs, two separate caches of C each (today): byte hit ratio A %.4f, B %.4f; disk %.3f x; shared / separate %.4f (target <= 0.60; optimum / separate %.4f)\n",
	       (double)r->sep_hit_bytes[0] / (double)r->req_bytes[0],
	       (double)r->sep_hit_bytes[1] / (double)r->req_bytes[1],
	       (double)r->sep_disk_bytes / (double)total,
	       (double)r->disk_bytes / (double)r->sep_disk_bytes,
	       r->opt_disk_bytes / (double)r->sep_disk_bytes);
	printf("# two jobs, two separate caches of C/2 each (equal memory): disk %.3f x; shared / separate %.4f\n",
	       (double)r->half_disk_bytes / (double)total,
	       (double)r->disk_bytes / (double)r->half_disk_bytes);
}
