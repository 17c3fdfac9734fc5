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
 * Upload job @j's epoch @e and the next, as the kernel has them when the
 * job starts epoch @e (an epoch already known is not uploaded again).
 */
static int hs_jobs_upload(struct dlc_policy *p, uint32_t c,
			  const struct hs_trace *t, uint32_t e)
{
	uint64_t pos;
	uint32_t k;

	for (k = e; k < e + 2 && k < t->nepochs; k++) {
		if (dlc_policy_position(p, c, k, 0, &pos) == 0)
			continue;
		if (dlc_policy_add_epoch(p, c, k, t->ids +
					 (size_t)k * t->epoch_len,
					 t->epoch_len))
			return -1;
	}
	return 0;
}

/*
 * The shared cache: jobs @a and @b (same samples and sizes; B at half A's
 * speed, @dt ns between A's requests) over one cache of @cap bytes. With
 * @by_position each job's clock is its own position x @dt, as if both
 * ran at A's speed: the merge by position alone, for comparison. The
 * merged trace into @merged. Returns 0 or -1.
 */
static int hs_jobs_shared(const struct hs_trace *a, const struct hs_trace *b,
			  uint64_t cap, uint64_t dt, int by_position,
			  struct hs_jobs_result *res, uint32_t *merged)
{
	const struct hs_trace *job[2] = { a, b };
	uint32_t n = a->nsamples, cons[2] = { 0, 0 };
	uint64_t T[2], next[2] = { 0, 0 }, used = 0, k = 0;
	uint64_t window = 2ULL * a->epoch_len;	/* as dlcache.ko's default */
	size_t sz = dlc_policy_mem_size(n, (uint32_t)window), lsz;
	void *mem = NULL, *lmem = NULL;
	struct dlc_policy *p = calloc(1, sizeof(*p));
	uint8_t *in = calloc(n, 1);
	int j, rc = -1;

	T[0] = (uint64_t)a->nepochs * a->epoch_len;
	T[1] = (uint64_t)b->nepochs * b->epoch_len;
	lsz = dlc_policy_line_mem_size(n, (uint32_t)window);
	mem = aligned_alloc(64, (sz + 63) & ~(size_t)63);
	lmem = aligned_alloc(64, (lsz + 63) & ~(size_t)63);
	if (!p || !in || !mem || !lmem || b->nsamples != n ||
	    dlc_policy_init(p, n, (uint32_t)window, mem, sz, 0))
		goto out;
	j = dlc_policy_add_consumer(p, lmem, lsz, 0);
	if (j < 0)
		goto out;
	cons[1] = (uint32_t)j;

	while (next[0] < T[0] || next[1] < T[1]) {
		/* The earlier request; A first on a tie. */
		uint64_t ta = next[0] * dt, tb = next[1] * 2 * dt, now, pos;
		uint32_t e, i, id, c;
		const struct hs_trace *t;
		uint64_t s;

		j = next[1] >= T[1] || (next[0] < T[0] && ta <= tb) ? 0 : 1;
		now = by_position ? next[j] * dt : j ? tb : ta;
		t = job[j];
		c = cons[j];
		e = (uint32_t)(next[j] / t->epoch_len);
		i = (uint32_t)(next[j] % t->epoch_len);
		id = t->ids[next[j]];
		s = a->size[id];
		merged[k++] = id;
		next[j]++;

		if (i == 0 && hs_jobs_upload(p, c, t, e))
			goto out;
		if (dlc_policy_position(p, c, e, i, &pos))
			goto out;
		dlc_policy_advance(p, c, pos + 1, now);
		res->req_bytes[j] += s;
		if (in[id]) {
			res->hit_bytes[j] += s;
		} else {
			res->disk_bytes += s;
			while (s <= cap && used + s > cap) {
				uint32_t v = dlc_policy_victim(p);

				if (v == DLC_POLICY_NIL ||
				    !dlc_policy_prefer(p, id, v))
					break;
				dlc_policy_remove(p, v);
				in[v] = 0;
				used -= a->size[v];
			}
			if (used + s <= cap) {
				dlc_policy_insert(p, id);
				in[id] = 1;
				used += s;
			}
		}
		if (next[j] == T[j] && c) {
			/* The job detaches (consumer 0 stays, with no uses). */
			dlc_policy_remove_consumer(p, c);
		}
	}
	res->rebuilds = p->rebuilds;
	rc = 0;
out:
	free(mem);
	free(lmem);
	free(p);
	free(in);
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
