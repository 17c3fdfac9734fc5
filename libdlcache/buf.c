// SPDX-License-Identifier: MIT
/*
 * Reference-counted sample bytes: the cache and the decode queue share
 * them, and whoever drops the last reference frees them.
 */
#include <stdlib.h>

#include "internal.h"

struct dlc_buf *dlc_buf_alloc(size_t len)
{
	struct dlc_buf *b = malloc(sizeof(*b) + len);

	if (!b)
		return NULL;
	b->refs = 1;
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
		free(b);
}
