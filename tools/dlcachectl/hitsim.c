// SPDX-License-Identifier: MIT
/* Cache hit-ratio simulation: hitsim.h. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "hitsim.h"
#include "internal.h"
#include "policy.h"

const char *const hs_policy_names[HS_POLICIES] = {
	"dlcache", "lru", "minio",
};

double hs_hit_ratio(const struct hs_epoch_result *r, int bytes)
{
	if (bytes)
		return r->req_bytes ? (double)r->hit_bytes / (double)r->req_bytes : 0.0;
	return r->reqs ? (double)r->hits / (double)r->reqs : 0.0;
}

void hs_sum(const struct hs_epoch_result *r, uint32_t from, uint32_t to,
	    struct hs_epoch_result *out)
{
	uint32_t e;

	memset(out, 0, sizeof(*out));
	for (e = from; e < to; e++) {
		out->reqs += r[e].reqs;
		out->hits += r[e].hits;
		out->req_bytes += r[e].req_bytes;
		out->hit_bytes += r[e].hit_bytes;
	}
}

struct hs_lru {
	uint32_t *prev, *next;
	uint32_t head, tail;	/* head: most recent */
};

static void lru_unlink(struct hs_lru *l, uint32_t id)
{
	if (l->prev[id] != HS_NIL)
		l->next[l->prev[id]] = l->next[id];
	else
		l->head = l->next[id];
	if (l->next[id] != HS_NIL)
		l->prev[l->next[id]] = l->prev[id];
	else
		l->tail = l->prev[id];
}

static void lru_push(struct hs_lru *l, uint32_t id)
{
	l->prev[id] = HS_NIL;
	l->next[id] = l->head;
	if (l->head != HS_NIL)
		l->prev[l->head] = id;
	l->head = id;
	if (l->tail == HS_NIL)
		l->tail = id;
}

/*
 * What a simulated cache holds: which samples, their bytes, and (LRU
 * only) their order of use. hs_run()'s LRU and MinIO and the shared
 * cache of hs_run_shared() keep it.
 */
struct hs_held {
	uint8_t *in;		/* per sample: held */
	uint64_t used;		/* bytes held */
	struct hs_lru lru;	/* with_lru only */
};

static int held_init(struct hs_held *h, uint32_t n, int with_lru)
{
	memset(h, 0, sizeof(*h));
	h->lru.head = h->lru.tail = HS_NIL;
	h->in = calloc(n ? n : 1, 1);
	if (with_lru) {
		h->lru.prev = malloc(sizeof(uint32_t) * (n ? n : 1));
		h->lru.next = malloc(sizeof(uint32_t) * (n ? n : 1));
		if (!h->lru.prev || !h->lru.next)
			return -1;
	}
	return h->in ? 0 : -1;
}

static void held_free(struct hs_held *h)
{
	free(h->in);
	free(h->lru.prev);
	free(h->lru.next);
}

static void held_add(struct hs_held *h, uint32_t id, uint64_t s)
{
	h->in[id] = 1;
	h->used += s;
}

static void held_drop(struct hs_held *h, const uint64_t *size, uint32_t v)
{
	h->in[v] = 0;
	h->used -= size[v];
}

/* LRU: a hit moves @id to the head. */
static void lru_touch(struct hs_held *h, uint32_t id)
{
	lru_unlink(&h->lru, id);
	lru_push(&h->lru, id);
}

/* LRU: a miss of @id (@s bytes) is admitted, the least recent evicted. */
static void lru_offer(struct hs_held *h, const uint64_t *size, uint64_t cap,
		      uint32_t id, uint64_t s)
{
	if (s > cap)
		return;
	while (h->used + s > cap) {
		uint32_t v = h->lru.tail;

		lru_unlink(&h->lru, v);
		held_drop(h, size, v);
	}
	held_add(h, id, s);
	lru_push(&h->lru, id);
}

/* The trace's orders, for dlc_cache_prepare_epoch(). */
static int hs_fill(void *arg, uint32_t epoch, uint32_t *ids, uint32_t len)
{
	const struct hs_trace *t = arg;

	if (epoch >= t->nepochs || len != t->epoch_len)
		return -EINVAL;
	memcpy(ids, t->ids + (size_t)epoch * len, sizeof(uint32_t) * len);
	return 0;
}

int hs_run(enum hs_policy pol, const struct hs_trace *t, uint64_t cap,
	   struct hs_epoch_result *res)
{
	uint32_t n = t->nsamples, L = t->epoch_len, e, i;
	struct dlc_cache *c = NULL;
	struct hs_held h;
	int rc = -1;

	memset(res, 0, sizeof(*res) * t->nepochs);
	if (held_init(&h, n, pol == HS_LRU))
		goto out;
	if (pol == HS_DLCACHE && dlc_cache_create(n, L, cap, &c))
		goto out;

	for (e = 0; e < t->nepochs; e++) {
		const uint32_t *ids = t->ids + (size_t)e * L;

		/* Epoch e + 1 of the last epoch is not in the trace. */
		if (c && dlc_cache_prepare_epoch(c, e, hs_fill, (void *)t) &&
		    e + 1 < t->nepochs)
			goto out;
		for (i = 0; i < L; i++) {
			uint32_t id = ids[i];
			uint64_t s = t->size[id];
			struct dlc_buf *b;
			int hit;

			res[e].reqs++;
			res[e].req_bytes += s;
			if (c) {
				dlc_cache_advance(c, e, i);
				b = dlc_cache_lookup(c, id);
				hit = b != NULL;
				dlc_buf_put(b);
			} else {
				hit = h.in[id];
			}
			if (hit) {
				res[e].hits++;
				res[e].hit_bytes += s;
				if (pol == HS_LRU)
					lru_touch(&h, id);
				continue;
			}
			switch (pol) {
			case HS_DLCACHE:
				/* a buffer that says it holds s bytes */
				b = dlc_buf_alloc(0);
				if (!b)
					goto out;
				b->len = s;
				dlc_cache_offer(c, id, b);
				dlc_buf_put(b);
				break;
			case HS_LRU:
				lru_offer(&h, t->size, cap, id, s);
				break;
			case HS_MINIO:
				if (h.used + s <= cap)
					held_add(&h, id, s);
				break;
			default:
				goto out;
			}
		}
	}
	rc = 0;
out:
	dlc_cache_destroy(c);
	held_free(&h);
	return rc;
}

/*
 * Upload job @t's epoch @e and the next to consumer @c, as the kernel has
 * them when the job starts epoch @e (an epoch already known is not
 * uploaded again).
 */
static int upload_two(struct dlc_policy *p, uint32_t c,
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

/* The shared cache's state: what it holds, and the policy's consumers. */
struct shared {
	struct dlc_policy *p;
	void *mem;
	void *lmem[DLC_POLICY_MAX_CONSUMERS];
	uint32_t cons[DLC_POLICY_MAX_CONSUMERS];
	struct hs_held h;
};

static void shared_free(struct shared *sh, uint32_t njobs)
{
	uint32_t j;

	for (j = 0; j < njobs; j++)
		free(sh->lmem[j]);
	free(sh->mem);
	free(sh->p);
	held_free(&sh->h);
}

static int shared_init(struct shared *sh, enum hs_policy pol,
		       const struct hs_job *jobs, uint32_t njobs)
{
	uint32_t n = jobs[0].t->nsamples, j;
	uint64_t window = 2ULL * jobs[0].t->epoch_len;	/* dlcache.ko's */
	size_t sz, lsz;
	int c;

	memset(sh, 0, sizeof(*sh));
	if (held_init(&sh->h, n, pol == HS_LRU))
		return -1;
	for (j = 0; j < njobs; j++)
		if (jobs[j].t->nsamples != n ||
		    2ULL * jobs[j].t->epoch_len > window)
			return -1;
	if (pol == HS_LRU)
		return 0;
	if (window > DLC_POLICY_MAX_WINDOW)
		return -1;
	sz = dlc_policy_mem_size(n, (uint32_t)window);
	lsz = dlc_policy_line_mem_size(n, (uint32_t)window);
	sh->p = calloc(1, sizeof(*sh->p));
	sh->mem = aligned_alloc(64, (sz + 63) & ~(size_t)63);
	if (!sh->p || !sh->mem ||
	    dlc_policy_init(sh->p, n, (uint32_t)window, sh->mem, sz, 0))
		return -1;
	/* Job 0 is consumer 0, which dlc_policy_init() made. */
	for (j = 1; j < njobs; j++) {
		sh->lmem[j] = aligned_alloc(64, (lsz + 63) & ~(size_t)63);
		if (!sh->lmem[j])
			return -1;
		c = dlc_policy_add_consumer(sh->p, sh->lmem[j], lsz, 0);
		if (c < 0)
			return -1;
		sh->cons[j] = (uint32_t)c;
	}
	return 0;
}

/* A miss of @id (@s bytes) offered to the shared cache. */
static void shared_offer(struct shared *sh, enum hs_policy pol,
			 const uint64_t *size, uint64_t cap, uint32_t id,
			 uint64_t s)
{
	if (pol == HS_LRU) {
		lru_offer(&sh->h, size, cap, id, s);
		return;
	}
	if (s > cap)
		return;
	while (sh->h.used + s > cap) {
		uint32_t v = dlc_policy_victim(sh->p);

		if (v == DLC_POLICY_NIL || !dlc_policy_prefer(sh->p, id, v))
			return;
		dlc_policy_remove(sh->p, v);
		held_drop(&sh->h, size, v);
	}
	dlc_policy_insert(sh->p, id);
	held_add(&sh->h, id, s);
}

int hs_run_shared(enum hs_policy pol, const struct hs_job *jobs,
		  uint32_t njobs, uint64_t cap, unsigned int flags,
		  struct hs_epoch_result **res, uint32_t *merged,
		  uint64_t *rebuilds)
{
	uint64_t next[DLC_POLICY_MAX_CONSUMERS] = { 0 };
	uint64_t T[DLC_POLICY_MAX_CONSUMERS], k = 0;
	const uint64_t *size;
	struct shared sh;
	uint32_t j;
	int rc = -1;

	if (!njobs || njobs >= DLC_POLICY_MAX_CONSUMERS ||
	    (pol != HS_DLCACHE && pol != HS_LRU))
		return -1;
	size = jobs[0].t->size;
	for (j = 0; j < njobs; j++) {
		T[j] = (uint64_t)jobs[j].t->nepochs * jobs[j].t->epoch_len;
		memset(res[j], 0, sizeof(**res) * jobs[j].t->nepochs);
	}
	if (shared_init(&sh, pol, jobs, njobs))
		goto out;
	for (;;) {
		uint64_t best = UINT64_MAX, now, pos, s;
		const struct hs_trace *t;
		uint32_t e, i, id, c, b = njobs;
		struct hs_epoch_result *r;

		/* The earliest request; the lower job first on a tie. */
		for (j = 0; j < njobs; j++)
			if (next[j] < T[j] && next[j] * jobs[j].dt < best) {
				best = next[j] * jobs[j].dt;
				b = j;
			}
		if (b == njobs)
			break;
		t = jobs[b].t;
		c = sh.cons[b];
		now = flags & HS_CLOCK_BY_POSITION ? next[b] * jobs[0].dt : best;
		e = (uint32_t)(next[b] / t->epoch_len);
		i = (uint32_t)(next[b] % t->epoch_len);
		id = t->ids[next[b]];
		s = size[id];
		r = &res[b][e];
		if (merged)
			merged[k++] = id;
		next[b]++;
		if (pol == HS_DLCACHE) {
			if (i == 0 && upload_two(sh.p, c, t, e))
				goto out;
			if (dlc_policy_position(sh.p, c, e, i, &pos))
				goto out;
			dlc_policy_advance(sh.p, c, pos + 1, now);
		}
		r->reqs++;
		r->req_bytes += s;
		if (sh.h.in[id]) {
			r->hits++;
			r->hit_bytes += s;
			if (pol == HS_LRU)
				lru_touch(&sh.h, id);
		} else {
			shared_offer(&sh, pol, size, cap, id, s);
		}
		/* The job detaches (consumer 0 stays, with no uses). */
		if (pol == HS_DLCACHE && next[b] == T[b] && c)
			dlc_policy_remove_consumer(sh.p, c);
	}
	if (rebuilds && sh.p)
		*rebuilds = sh.p->rebuilds;
	rc = 0;
out:
	shared_free(&sh, njobs);
	return rc;
}
