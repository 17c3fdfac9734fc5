/* SPDX-License-Identifier: MIT */
/*
 * The in-process cache's pinned decoded forms (cache.c), least value per
 * byte first: an indexed min-heap of sample IDs keyed by density (the
 * decode time a hit saves over the bytes the form holds), so that a form
 * worth more per byte can take the room of those worth least.
 * Internal to cache.c; no lock (the cache's owner's thread alone).
 */
#ifndef DLC_PINHEAP_H
#define DLC_PINHEAP_H

#include <stdint.h>

#define DLC_PINHEAP_NIL	UINT32_MAX

struct dlc_pinheap {
	uint32_t *heap;		/* IDs, the least dense at [0] */
	uint32_t *pos;		/* per ID: its index in heap + 1; 0: absent */
	double *key;		/* per ID: its density while present */
	uint32_t n, nsamples;
};

/* An empty heap over IDs below @nsamples: 0 or -ENOMEM. */
int dlc_pinheap_init(struct dlc_pinheap *h, uint32_t nsamples);
void dlc_pinheap_fini(struct dlc_pinheap *h);
/* Add @id (absent, < nsamples) with density @key. */
void dlc_pinheap_insert(struct dlc_pinheap *h, uint32_t id, double key);
/* Take @id out, if present. */
void dlc_pinheap_remove(struct dlc_pinheap *h, uint32_t id);
/* The least dense ID, or DLC_PINHEAP_NIL when empty; and its density. */
uint32_t dlc_pinheap_min(const struct dlc_pinheap *h, double *key);
/* Take every ID out. */
void dlc_pinheap_clear(struct dlc_pinheap *h);

#endif /* DLC_PINHEAP_H */
