/* SPDX-License-Identifier: MIT */
/*
 * Cache hit-ratio simulation over a data set's real sample sizes and a
 * trace of sample IDs (dlcachectl whatif; make bench's tests/perf/hitsim
 * and tests/unit/test_hitsim #include hitsim.c). Policies, all over a
 * capacity in bytes:
 *   HS_DLCACHE  the library's own in-process cache
 *               (libdlcache/cache/cache.c, over policy.c), driven as the
 *               loader drives it: dlc_cache_prepare_epoch() when an
 *               epoch starts, dlc_cache_advance() and dlc_cache_lookup()
 *               per position, dlc_cache_offer() on a miss. (The loader
 *               offers when the read completes, up to a queue depth
 *               later; the simulation offers at once.) Buffers carry the
 *               sample's size, no data, so a cache of any size costs
 *               only its bookkeeping.
 *   HS_LRU      admit every sample, evict the least recently used.
 *   HS_MINIO    CoorDL's MinIO: admit while there is room, never evict.
 * Hits and requests are counted per epoch, both by count and by bytes.
 */
#ifndef DLCACHECTL_HITSIM_H
#define DLCACHECTL_HITSIM_H

#include <stdint.h>

#define HS_NIL UINT32_MAX

enum hs_policy { HS_DLCACHE, HS_LRU, HS_MINIO, HS_POLICIES };

/* "dlcache", "lru", "minio". */
extern const char *const hs_policy_names[HS_POLICIES];

struct hs_epoch_result {
	uint64_t reqs, hits;
	uint64_t req_bytes, hit_bytes;
};

struct hs_trace {
	uint32_t nsamples;
	const uint64_t *size;		/* per sample */
	uint32_t nepochs;
	uint32_t epoch_len;		/* every epoch has this many positions */
	const uint32_t *ids;		/* nepochs * epoch_len */
};

/* Hits over requests of @r, by bytes when @bytes; 0 with no request. */
double hs_hit_ratio(const struct hs_epoch_result *r, int bytes);

/* Sum of epochs [from, to) of @r into *@out. */
void hs_sum(const struct hs_epoch_result *r, uint32_t from, uint32_t to,
	    struct hs_epoch_result *out);

/*
 * Run @pol over @t with @cap bytes; per-epoch results into @res
 * (t->nepochs entries). Returns 0, or -1 when out of memory or the trace
 * does not fit the cache's limits.
 */
int hs_run(enum hs_policy pol, const struct hs_trace *t, uint64_t cap,
	   struct hs_epoch_result *res);

/* One job of a shared cache: its trace and the time between its requests. */
struct hs_job {
	const struct hs_trace *t;
	uint64_t dt;			/* ns a position */
};

/* hs_run_shared()'s flags. */
#define HS_CLOCK_BY_POSITION	(1U << 0)	/* a job's clock: position x dt[0] */

/*
 * @njobs jobs (at most 31; the same samples and sizes) over one cache of
 * @cap bytes, their requests merged in time (job i's request k at k *
 * dt; the lower job first on a tie). HS_DLCACHE ranks by the merged
 * policy as dlcache.ko drives it: each job a consumer with its own time
 * line, its epoch's order and the next uploaded when it starts an epoch
 * (two epochs of window), every request advancing its consumer with now
 * = the request's time, a miss offered (the victim evicted while the
 * request is preferred to it, else it bypasses), the consumer removed
 * after its last request. HS_LRU: one LRU over the merged requests.
 * With HS_CLOCK_BY_POSITION each job's clock runs as if at job 0's
 * speed. Per job and epoch into @res[j] (nepochs entries each); the
 * merged sample IDs into @merged and the policy's key rebuilds into
 * *@rebuilds, where not NULL. Returns 0, or -1 when out of memory or
 * over the policy's limits.
 */
int hs_run_shared(enum hs_policy pol, const struct hs_job *jobs,
		  uint32_t njobs, uint64_t cap, unsigned int flags,
		  struct hs_epoch_result **res, uint32_t *merged,
		  uint64_t *rebuilds);

#endif
