// SPDX-License-Identifier: MIT
/*
 * Reference-counted sample bytes: the cache and the decode queue share
 * them, and whoever drops the last reference frees them.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "internal.h"

struct dlc_buf *dlc_buf_alloc(size_t len)
{
	struct dlc_buf *b = malloc(sizeof(*b) + len);

	if (!b)
		return NULL;
	b->refs = 1;
	b->off = 0;
	b->len = len;
	return b;
}

struct dlc_buf *dlc_buf_alloc_aligned(size_t len, size_t align)
{
	size_t hdr = offsetof(struct dlc_buf, data), cap;
	struct dlc_buf *b;
	void *mem;

	if (align < hdr || (align & (align - 1)) || len > SIZE_MAX - 2 * align)
		return NULL;
	cap = (len + align - 1) & ~(align - 1);
	if (posix_memalign(&mem, align, align + cap))
		return NULL;
	/* The header sits just before the first aligned byte. */
	b = (struct dlc_buf *)((uint8_t *)mem + align - hdr);
	b->refs = 1;
	b->off = (uint32_t)(align - hdr);
	b->len = len;
	return b;
}

struct dlc_buf *dlc_buf_get(struct dlc_buf *b)
{
	__atomic_fetch_add(&b->refs, 1, __ATOMIC_RELAXED);
	return b;
}

void dlc_buf_put(struct dlc_buf *b)
{
	if (b && __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free((uint8_t *)b - b->off);
}
