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
	uint8_t *in = calloc(n ? n : 1, 1);
	struct dlc_cache *c = NULL;
	struct hs_lru lru = { NULL, NULL, HS_NIL, HS_NIL };
	uint64_t used = 0;
	int rc = -1;

	memset(res, 0, sizeof(*res) * t->nepochs);
	if (!in)
		return -1;
	if (pol == HS_DLCACHE) {
		if (dlc_cache_create(n, L, cap, &c))
			goto out;
	} else if (pol == HS_LRU) {
		lru.prev = malloc(sizeof(uint32_t) * n);
		lru.next = malloc(sizeof(uint32_t) * n);
		if (!lru.prev || !lru.next)
			goto out;
	}

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
				hit = in[id];
			}
			if (hit) {
				res[e].hits++;
				res[e].hit_bytes += s;
				if (pol == HS_LRU) {
					lru_unlink(&lru, id);
					lru_push(&lru, id);
				}
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
				if (s > cap)
					break;
				while (used + s > cap) {
					uint32_t v = lru.tail;

					lru_unlink(&lru, v);
					in[v] = 0;
					used -= t->size[v];
				}
				in[id] = 1;
				used += s;
				lru_push(&lru, id);
				break;
			case HS_MINIO:
				if (used + s <= cap) {
					in[id] = 1;
					used += s;
				}
				break;
			default:
				goto out;
			}
		}
	}
	rc = 0;
out:
	dlc_cache_destroy(c);
	free(lru.prev);
	free(lru.next);
	free(in);
	return rc;
}
