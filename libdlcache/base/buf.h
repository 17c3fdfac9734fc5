/* SPDX-License-Identifier: MIT */
/*
 * Sample bytes (buf.c): reference counted buffers, and the pool of
 * blocks they come from.
 * Internal to libdlcache; the public face is dlcache.h.
 */
#ifndef DLC_BUF_H
#define DLC_BUF_H

#include <stddef.h>
#include <stdint.h>

/*
 * The bytes of one sample: as encoded, or its decoded form (form_w set).
 * Shared by the cache and the decode queue; freed, or given back to the
 * pool (buf.c), when the last reference goes.
 */
struct dlc_buf {
	uint32_t refs;		/* atomic */
	uint32_t cls;		/* pool class of mem, or a private marker */
	uint32_t mapped;	/* mem is an mmap() of cap bytes */
	uint64_t crc_memo;	/* atomic: 1 << 32 | CRC-32C the bytes matched */
	/*
	 * A whole file's read (dlc_reader_queue()): its mtime, in ns since
	 * the epoch, as the read's statx saw it; 0: not known.
	 */
	uint64_t mtime_ns;
	/*
	 * A decoded form (dlc_config.forms): the whole image at scale 1,
	 * form_w x form_h packed RGB at data; 0: encoded bytes. Set by its
	 * maker before anyone else holds it.
	 */
	uint32_t form_w, form_h;
	/*
	 * Cluster mode: 1 when the bytes are the sample prepared by its
	 * owner for the use it was asked for (the loader's output pixels,
	 * peer_prepare.c), not its file's; set by the peer tier before
	 * anyone else holds it.
	 */
	uint32_t prepared;
	/*
	 * A budget the buffer is counted in, or NULL: its maker adds cap
	 * to it (dlc_buf_charge()), and the last put takes it back, so that
	 * the bytes a consumer holds after their maker let go stay counted.
	 */
	uint64_t *budget;
	size_t len;		/* bytes at data */
	uint8_t *data;		/* the sample's first byte */
	uint8_t *mem;		/* pooled: the 4 KiB-aligned block */
	size_t cap;		/* pooled: the block's bytes */
	struct dlc_buf *next;	/* pooled: on a free list */
};

/* Idle pooled bytes kept by default (dlc_buf_pool_set_idle_max). */
#define DLC_BUF_POOL_IDLE_MAX	(64ULL << 20)

/*
 * Count @b's cap in @budget (atomic) until its last put; @b is not
 * charged yet and nobody else holds it.
 */
static inline void dlc_buf_charge(struct dlc_buf *b, uint64_t *budget)
{
	b->budget = budget;
	__atomic_add_fetch(budget, b->cap, __ATOMIC_RELAXED);
}

/* @len bytes in one plain allocation, sized exactly (not pooled). */
struct dlc_buf *dlc_buf_alloc(size_t len);
/*
 * A buffer for a read of @len bytes whose data starts @lead (< 4096)
 * bytes past a 4 KiB-aligned address, with room from that address for
 * @lead + @len rounded up to 4 KiB: an O_DIRECT read of the aligned
 * superset of a range lands in it with the sample at data. From the pool
 * (never zeroed) up to 16 MiB, a private aligned block beyond. NULL for
 * lead >= 4096 or no memory.
 */
struct dlc_buf *dlc_buf_alloc_io(uint64_t len, uint32_t lead);
/*
 * A buffer whose data is @align-aligned (a power of two up to 4096):
 * dlc_buf_alloc_io(@len, 0).
 */
struct dlc_buf *dlc_buf_alloc_aligned(size_t len, size_t align);
/*
 * The memory @b really holds: its block for a pooled buffer (at most
 * 6.25 % and a page or two over len), len for a plain one. The cache
 * accounts this (and keeps an exact copy of a sample whose block is more
 * than 1/64 over it).
 */
size_t dlc_buf_footprint(const struct dlc_buf *b);
struct dlc_buf *dlc_buf_get(struct dlc_buf *b);
void dlc_buf_put(struct dlc_buf *b);

/*
 * Whether @b's bytes have CRC-32C @want. Their sum is computed once and
 * remembered on the buffer (its bytes never change once read), so a
 * cached sample is summed once, not at every hit.
 */
int dlc_buf_crc_matches(const struct dlc_buf *b, uint32_t want);

/* The block size the pool gives a read of @bytes (tests). */
uint64_t dlc_buf_class_bytes(uint64_t bytes);

struct dlc_buf_pool_stats {
	uint64_t allocated;	/* blocks allocated from the heap */
	uint64_t reused;	/* allocations served from a free list */
	uint64_t freed;		/* blocks freed (over the idle cap, trims) */
	uint64_t idle_bytes;	/* bytes on the free lists now */
	uint64_t idle_max;	/* the cap on them */
};
void dlc_buf_pool_stats(struct dlc_buf_pool_stats *out);
/* Cap the idle bytes (freeing what is over). */
void dlc_buf_pool_set_idle_max(size_t bytes);
/* Free every idle block: a loader going away calls it. */
void dlc_buf_pool_trim(void);

#endif
