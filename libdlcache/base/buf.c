// SPDX-License-Identifier: MIT
/*
 * Reference-counted sample bytes: the cache and the decode queue share
 * them, and whoever drops the last reference frees them -- or, for the
 * buffers reads land in, hands them back to the pool.
 *
 * The pool: one per process, shared by every loader, so that the I/O
 * thread that allocates and the decode worker that drops the last
 * reference meet in the same free lists. Blocks are 4 KiB-aligned (an
 * O_DIRECT read lands in them) and come in size classes: every page count
 * up to 128 KiB, then sixteen classes per doubling up to 16 MiB (so a
 * block is at most 6.25 % and one page larger than asked for: the cache,
 * which accounts the blocks it holds, loses little of its capacity). A block is
 * never zeroed: a read overwrites what it delivers, and nothing past
 * dlc_buf.len is read. Idle blocks are kept up to a cap on their bytes
 * (DLC_BUF_POOL_IDLE_MAX by default), the rest is freed; what is in
 * flight is bounded by whoever allocates (the loader's window and queue
 * depth, the cache's capacity). The header of a pooled buffer is a small
 * allocation that stays with its block, so neither costs a malloc in
 * steady state. One mutex guards the lists: a few thousand operations a
 * second each take it for a handful of instructions.
 *
 * A block is an anonymous mmap() of its pages (adjacent ones merge into
 * one mapping), not posix_memalign(): glibc puts a chunk header before
 * every allocation, so 4 KiB-aligned blocks of whole pages leave a
 * resident fragment of up to a page between them -- measured, 43 MB more
 * RSS for 7400 blocks of 50-95 kB, about what a cache of half a 1 GB data
 * set holds. Where mmap fails (the map count limit), posix_memalign.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "crc32c.h"
#include "internal.h"

#define PAGE		4096U
#define NCLASS		144	/* 32 page classes + 16 a doubling to 16 MiB */
#define CLASS_HEAP	UINT32_MAX	/* one malloc, header and bytes */
#define CLASS_BIG	(UINT32_MAX - 1) /* aligned, over the largest class */

static struct {
	pthread_mutex_t lock;
	struct dlc_buf *free[NCLASS];
	size_t idle;		/* bytes of blocks on the free lists */
	size_t idle_max;
	struct dlc_buf_pool_stats st;
} pool = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.idle_max = DLC_BUF_POOL_IDLE_MAX,
};

/*
 * fork() copies the lock as it is: held by another thread at that moment,
 * it would stay held in the child, whose first allocation then hangs
 * (a Python DataLoader's worker forked while the loader runs). Take it
 * around fork so that both sides start with it free.
 */
static void pool_prefork(void)
{
	pthread_mutex_lock(&pool.lock);
}

static void pool_postfork(void)
{
	pthread_mutex_unlock(&pool.lock);
}

__attribute__((constructor)) static void pool_register_fork(void)
{
	pthread_atfork(pool_prefork, pool_postfork, pool_postfork);
}

/* The class of a block of at least @pages pages; NCLASS when too big. */
static uint32_t class_of(uint64_t pages)
{
	uint64_t m;
	uint32_t e;

	if (pages <= 32)
		return pages ? (uint32_t)pages - 1 : 0;
	m = pages - 1;
	e = 63 - (uint32_t)__builtin_clzll(m);
	if (e > 11)
		return NCLASS;
	return 32 + (e - 5) * 16 + (uint32_t)(m >> (e - 4)) - 16;
}

static uint64_t class_pages(uint32_t c)
{
	uint32_t k;

	if (c < 32)
		return c + 1;
	k = c - 32;
	return (uint64_t)(k % 16 + 17) << (k / 16 + 1);
}

uint64_t dlc_buf_class_bytes(uint64_t bytes)
{
	uint64_t pages = (bytes + PAGE - 1) / PAGE;
	uint32_t c = class_of(pages);

	return c < NCLASS ? class_pages(c) * PAGE : pages * PAGE;
}

struct dlc_buf *dlc_buf_alloc(size_t len)
{
	struct dlc_buf *b;

	if (len > SIZE_MAX - sizeof(*b))
		return NULL;
	b = malloc(sizeof(*b) + len);
	if (!b)
		return NULL;
	b->refs = 1;
	b->cls = CLASS_HEAP;
	b->mapped = 0;
	b->crc_memo = 0;
	b->mtime_ns = 0;
	b->form_w = 0;
	b->form_h = 0;
	b->prepared = 0;
	b->budget = NULL;
	b->len = len;
	b->data = (uint8_t *)(b + 1);
	b->mem = NULL;
	b->cap = len;
	b->next = NULL;
	return b;
}

struct dlc_buf *dlc_buf_alloc_io(uint64_t len, uint32_t lead)
{
	uint64_t need, cap;
	struct dlc_buf *b = NULL;
	uint32_t c;
	void *mem;

	if (lead >= PAGE || len > SIZE_MAX - 2 * PAGE)
		return NULL;
	need = (len + lead + PAGE - 1) & ~(uint64_t)(PAGE - 1);
	if (!need)
		need = PAGE;
	c = class_of(need / PAGE);
	cap = c < NCLASS ? class_pages(c) * PAGE : need;
	if (c < NCLASS) {
		pthread_mutex_lock(&pool.lock);
		b = pool.free[c];
		if (b) {
			pool.free[c] = b->next;
			pool.idle -= b->cap;
			pool.st.reused++;
		} else {
			pool.st.allocated++;
		}
		pthread_mutex_unlock(&pool.lock);
	}
	if (!b) {
		b = malloc(sizeof(*b));
		if (!b)
			return NULL;
		mem = mmap(NULL, cap, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		b->mapped = mem != MAP_FAILED;
		if (!b->mapped && posix_memalign(&mem, PAGE, cap)) {
			free(b);
			return NULL;
		}
		b->mem = mem;
		b->cap = cap;
		b->cls = c < NCLASS ? c : CLASS_BIG;
	}
	b->refs = 1;
	b->crc_memo = 0;
	b->mtime_ns = 0;
	b->form_w = 0;
	b->form_h = 0;
	b->prepared = 0;
	b->budget = NULL;
	b->len = len;
	b->data = b->mem + lead;
	b->next = NULL;
	return b;
}

struct dlc_buf *dlc_buf_alloc_aligned(size_t len, size_t align)
{
	if (!align || (align & (align - 1)) || align > PAGE)
		return NULL;
	return dlc_buf_alloc_io(len, 0);
}

size_t dlc_buf_footprint(const struct dlc_buf *b)
{
	return b->cls == CLASS_HEAP ? b->len : b->cap;
}

int dlc_buf_crc_matches(const struct dlc_buf *b, uint32_t want)
{
	/* The memo is metadata: callers hold the buffer const. */
	uint64_t *memo = (uint64_t *)&b->crc_memo;
	uint64_t m = __atomic_load_n(memo, __ATOMIC_RELAXED);

	if (m >> 32)
		return (uint32_t)m == want;
	m = dlc_crc32c(0, b->data, b->len);
	__atomic_store_n(memo, 1ULL << 32 | m, __ATOMIC_RELAXED);
	return (uint32_t)m == want;
}

struct dlc_buf *dlc_buf_get(struct dlc_buf *b)
{
	__atomic_fetch_add(&b->refs, 1, __ATOMIC_RELAXED);
	return b;
}

static void block_free(struct dlc_buf *b)
{
	if (b->mapped)
		munmap(b->mem, b->cap);
	else
		free(b->mem);
	free(b);
}

void dlc_buf_put(struct dlc_buf *b)
{
	if (!b || __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	if (b->budget)
		__atomic_sub_fetch(b->budget, b->cap, __ATOMIC_RELEASE);
	if (b->cls == CLASS_HEAP) {
		free(b);
		return;
	}
	if (b->cls < NCLASS) {
		pthread_mutex_lock(&pool.lock);
		if (pool.idle + b->cap <= pool.idle_max) {
			b->next = pool.free[b->cls];
			pool.free[b->cls] = b;
			pool.idle += b->cap;
			b = NULL;
		} else {
			pool.st.freed++;
		}
		pthread_mutex_unlock(&pool.lock);
	}
	if (b)
		block_free(b);
}

/* Free idle blocks until at most @keep bytes are idle. */
static void trim_to(size_t keep)
{
	struct dlc_buf *list = NULL, *b;
	uint32_t c;

	pthread_mutex_lock(&pool.lock);
	for (c = NCLASS; c-- > 0 && pool.idle > keep;) {
		while ((b = pool.free[c]) && pool.idle > keep) {
			pool.free[c] = b->next;
			pool.idle -= b->cap;
			pool.st.freed++;
			b->next = list;
			list = b;
		}
	}
	pthread_mutex_unlock(&pool.lock);
	while ((b = list)) {
		list = b->next;
		block_free(b);
	}
}

void dlc_buf_pool_trim(void)
{
	trim_to(0);
}

void dlc_buf_pool_set_idle_max(size_t bytes)
{
	pthread_mutex_lock(&pool.lock);
	pool.idle_max = bytes;
	pthread_mutex_unlock(&pool.lock);
	trim_to(bytes);
}

void dlc_buf_pool_stats(struct dlc_buf_pool_stats *out)
{
	pthread_mutex_lock(&pool.lock);
	*out = pool.st;
	out->idle_bytes = pool.idle;
	out->idle_max = pool.idle_max;
	pthread_mutex_unlock(&pool.lock);
}
