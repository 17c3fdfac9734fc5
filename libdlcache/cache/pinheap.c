// SPDX-License-Identifier: MIT
/*
 * An indexed binary min-heap (pinheap.h): O(log n) insert and remove of
 * any ID, O(1) minimum.
 */
#include <errno.h>
#include <stdlib.h>

#include "pinheap.h"

int dlc_pinheap_init(struct dlc_pinheap *h, uint32_t nsamples)
{
	h->n = 0;
	h->nsamples = nsamples;
	h->heap = malloc(sizeof(*h->heap) * (nsamples ? nsamples : 1));
	h->pos = calloc(nsamples ? nsamples : 1, sizeof(*h->pos));
	h->key = malloc(sizeof(*h->key) * (nsamples ? nsamples : 1));
	if (!h->heap || !h->pos || !h->key) {
		dlc_pinheap_fini(h);
		return -ENOMEM;
	}
	return 0;
}

void dlc_pinheap_fini(struct dlc_pinheap *h)
{
	free(h->heap);
	free(h->pos);
	free(h->key);
	h->heap = h->pos = NULL;
	h->key = NULL;
	h->n = 0;
}

static void place(struct dlc_pinheap *h, uint32_t i, uint32_t id)
{
	h->heap[i] = id;
	h->pos[id] = i + 1;
}

static void sift_up(struct dlc_pinheap *h, uint32_t i)
{
	uint32_t id = h->heap[i];

	while (i) {
		uint32_t up = (i - 1) / 2;

		if (h->key[h->heap[up]] <= h->key[id])
			break;
		place(h, i, h->heap[up]);
		i = up;
	}
	place(h, i, id);
}

static void sift_down(struct dlc_pinheap *h, uint32_t i)
{
	uint32_t id = h->heap[i];

	for (;;) {
		uint32_t l = 2 * i + 1, m = i;
		double km = h->key[id];

		if (l < h->n && h->key[h->heap[l]] < km) {
			m = l;
			km = h->key[h->heap[l]];
		}
		if (l + 1 < h->n && h->key[h->heap[l + 1]] < km)
			m = l + 1;
		if (m == i)
			break;
		place(h, i, h->heap[m]);
		i = m;
	}
	place(h, i, id);
}

void dlc_pinheap_insert(struct dlc_pinheap *h, uint32_t id, double key)
{
	if (id >= h->nsamples || h->pos[id])
		return;
	h->key[id] = key;
	place(h, h->n++, id);
	sift_up(h, h->n - 1);
}

void dlc_pinheap_remove(struct dlc_pinheap *h, uint32_t id)
{
	uint32_t i, last;

	if (id >= h->nsamples || !h->pos[id])
		return;
	i = h->pos[id] - 1;
	h->pos[id] = 0;
	last = h->heap[--h->n];
	if (i == h->n)
		return;
	place(h, i, last);
	sift_up(h, i);
	sift_down(h, h->pos[last] - 1);
}

uint32_t dlc_pinheap_min(const struct dlc_pinheap *h, double *key)
{
	if (!h->n)
		return DLC_PINHEAP_NIL;
	if (key)
		*key = h->key[h->heap[0]];
	return h->heap[0];
}

void dlc_pinheap_clear(struct dlc_pinheap *h)
{
	while (h->n)
		h->pos[h->heap[--h->n]] = 0;
}
