// SPDX-License-Identifier: MIT
/*
 * The sample buffer pool (buf.c): size classes (every block at least the
 * pages asked for and at most 6.25 % and a page more), data placed where
 * an O_DIRECT read of an aligned superset puts it, blocks reused without
 * zeroing and without fresh pages (no page faults in steady state), the
 * idle cap, a producer thread allocating while other threads drop the
 * last references, and the in-process cache accounting the memory its
 * buffers hold rather than their bytes.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache.h"
#include "crc32c.h"
#include "internal.h"
#include "helpers/testutil.h"

#define PAGE	4096ULL

static uint64_t pages_of(uint64_t bytes)
{
	return (bytes + PAGE - 1) / PAGE;
}

static void test_classes(void)
{
	uint64_t n, prev = 0, worst_num = 0, worst_den = 1;

	for (n = 1; n <= 4200; n++) {
		uint64_t want = n * PAGE, got = dlc_buf_class_bytes(want);
		uint64_t odd = dlc_buf_class_bytes(want - 1);

		CHECK(got % PAGE == 0 && got >= want,
		      "%llu pages: class of %llu bytes", (unsigned long long)n,
		      (unsigned long long)got);
		CHECK(odd == got, "%llu bytes: class %llu, %llu for the page",
		      (unsigned long long)(want - 1), (unsigned long long)odd,
		      (unsigned long long)got);
		CHECK(got >= prev, "classes not monotonic at %llu pages",
		      (unsigned long long)n);
		if (n <= 32)
			CHECK(got == want, "%llu pages: %llu, want exact",
			      (unsigned long long)n, (unsigned long long)got);
		/* got / want <= 17 / 16 */
		CHECK(got * 16 <= want * 17, "%llu pages: class %llu is over 6.25 %%",
		      (unsigned long long)n, (unsigned long long)got);
		if (got * worst_den > want * worst_num) {
			worst_num = got;
			worst_den = want;
		}
		prev = got;
	}
	/* Beyond 16 MiB: a private block of the pages asked for. */
	CHECK(dlc_buf_class_bytes((16ULL << 20) + 1) == (16ULL << 20) + PAGE);
	CHECK(dlc_buf_class_bytes(5ULL << 30) == 5ULL << 30);
	printf("# worst class over the pages asked: %.4f\n",
	       (double)worst_num / (double)worst_den);
}

static void test_placement(void)
{
	static const uint32_t leads[] = { 0, 1, 31, 32, 33, 2048, 4095 };
	static const uint64_t lens[] = { 0, 1, 4095, 4096, 4097, 70001,
					 (16ULL << 20) - 1, (16ULL << 20) + 5 };
	size_t i, j;

	for (i = 0; i < sizeof(leads) / sizeof(leads[0]); i++) {
		for (j = 0; j < sizeof(lens) / sizeof(lens[0]); j++) {
			struct dlc_buf *b = dlc_buf_alloc_io(lens[j], leads[i]);
			uint64_t span = pages_of(lens[j] + leads[i]) * PAGE;

			if (!span)
				span = PAGE;
			CHECK(b, "alloc %llu lead %u", (unsigned long long)lens[j],
			      leads[i]);
			if (!b)
				continue;
			CHECK((uintptr_t)b->data % PAGE == leads[i] &&
			      b->len == lens[j] && b->refs == 1,
			      "len %llu lead %u: data at %lu in its page",
			      (unsigned long long)lens[j], leads[i],
			      (unsigned long)((uintptr_t)b->data % PAGE));
			CHECK(dlc_buf_footprint(b) ==
			      dlc_buf_class_bytes(span) &&
			      dlc_buf_footprint(b) >= span);
			/* The aligned read's whole span is ours (ASan checks). */
			memset(b->data - leads[i], 0xa5, span);
			dlc_buf_put(b);
		}
	}
	CHECK(dlc_buf_alloc_io(10, 4096) == NULL, "lead of a whole page");
	{
		struct dlc_buf *b = dlc_buf_alloc(12345);

		CHECK(b && dlc_buf_footprint(b) == 12345 && b->len == 12345);
		if (b)
			memset(b->data, 1, b->len);
		dlc_buf_put(b);
		b = dlc_buf_alloc_aligned(5000, 512);
		CHECK(b && (uintptr_t)b->data % 512 == 0 && b->len == 5000);
		dlc_buf_put(b);
		CHECK(dlc_buf_alloc_aligned(10, 8192) == NULL);
	}
}

static void test_reuse_no_zeroing(void)
{
	struct dlc_buf_pool_stats s0, s1;
	struct dlc_buf *a, *b;
	uint8_t *mem;

	dlc_buf_pool_set_idle_max(DLC_BUF_POOL_IDLE_MAX);
	dlc_buf_pool_trim();
	dlc_buf_pool_stats(&s0);
	a = dlc_buf_alloc_io(70001, 0);
	if (!a) {
		CHECK(0, "alloc");
		return;
	}
	memset(a->data, 0x5c, 70001);
	mem = a->data;
	dlc_buf_get(a);
	dlc_buf_put(a);		/* still referenced: not pooled yet */
	dlc_buf_put(a);
	/* Another size of the same class gets the same block back, as it was. */
	b = dlc_buf_alloc_io(70001 - 100, 100);
	dlc_buf_pool_stats(&s1);
	CHECK(b && b->data == mem + 100, "the idle block was not reused");
	CHECK(s1.allocated == s0.allocated + 1 && s1.reused == s0.reused + 1,
	      "allocated %llu reused %llu",
	      (unsigned long long)(s1.allocated - s0.allocated),
	      (unsigned long long)(s1.reused - s0.reused));
	CHECK(b && b->data[0] == 0x5c && b->data[60000] == 0x5c,
	      "a reused block was zeroed");
	dlc_buf_put(b);
	dlc_buf_pool_trim();
	dlc_buf_pool_stats(&s1);
	CHECK(s1.idle_bytes == 0);
}

static void test_idle_cap(void)
{
	struct dlc_buf *b[100];
	struct dlc_buf_pool_stats s;
	int i;

	dlc_buf_pool_trim();
	dlc_buf_pool_set_idle_max(1 << 20);
	for (i = 0; i < 100; i++)
		b[i] = dlc_buf_alloc_io(70001, 0);
	for (i = 0; i < 100; i++)
		dlc_buf_put(b[i]);
	dlc_buf_pool_stats(&s);
	CHECK(s.idle_bytes <= (1 << 20) && s.idle_bytes >= (1 << 20) - 73728,
	      "idle %llu over a 1 MiB cap", (unsigned long long)s.idle_bytes);
	dlc_buf_pool_set_idle_max(100000);
	dlc_buf_pool_stats(&s);
	CHECK(s.idle_bytes <= 100000, "lowering the cap left %llu idle",
	      (unsigned long long)s.idle_bytes);
	/* A block over the largest class is never kept. */
	dlc_buf_pool_set_idle_max(64ULL << 20);
	dlc_buf_pool_trim();
	b[0] = dlc_buf_alloc_io((16ULL << 20) + 1, 0);
	dlc_buf_put(b[0]);
	dlc_buf_pool_stats(&s);
	CHECK(s.idle_bytes == 0, "a big block went idle");
	dlc_buf_pool_set_idle_max(DLC_BUF_POOL_IDLE_MAX);
}

/* Resident bytes now (/proc/self/statm), or 0. */
static uint64_t resident(void)
{
	unsigned long size, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%lu %lu", &size, &res) != 2)
			res = 0;
		fclose(f);
	}
	return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

/*
 * Blocks cost their pages and nothing between them: 2000 blocks of
 * 50-95 kB, written whole, add no more RSS than their footprints (glibc's
 * posix_memalign left a resident fragment before each).
 */
static void test_rss(void)
{
	enum { N = 2000 };
	static struct dlc_buf *b[N];
	uint64_t r0, r1, sum = 0;
	uint32_t i;

#if defined(__SANITIZE_ADDRESS__)
	t_skip("test_rss", "ASan's shadow memory counts in RSS (the release build runs it)");
	return;
#endif
	dlc_buf_pool_trim();
	r0 = resident();
	for (i = 0; i < N; i++) {
		size_t len = 50000 + (size_t)(i * 7919u) % 45000;

		b[i] = dlc_buf_alloc_io(len, 0);
		if (!b[i])
			break;
		memset(b[i]->data, 1, len);
		sum += dlc_buf_footprint(b[i]);
	}
	r1 = resident();
	CHECK(i == N && r0 && r1 - r0 <= sum + sum / 100 + (2 << 20),
	      "%u blocks of %llu bytes in all added %llu bytes of RSS", i,
	      (unsigned long long)sum, (unsigned long long)(r1 - r0));
	printf("# %u blocks, %llu bytes: RSS +%llu\n", i,
	       (unsigned long long)sum, (unsigned long long)(r1 - r0));
	while (i--)
		dlc_buf_put(b[i]);
	dlc_buf_pool_trim();
}

/* ---- a producer and consumers, as the I/O thread and decoders ---- */

#define RING	64
#define ROUNDS	60000

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	struct dlc_buf *ring[RING];
	uint32_t head, len, done;
} q = { .lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
static uint32_t bad_bytes;

static void *consumer(void *arg)
{
	(void)arg;
	for (;;) {
		struct dlc_buf *b;
		uint8_t v;

		pthread_mutex_lock(&q.lock);
		while (!q.len && !q.done)
			pthread_cond_wait(&q.cv, &q.lock);
		if (!q.len) {
			pthread_mutex_unlock(&q.lock);
			return NULL;
		}
		b = q.ring[q.head];
		q.head = (q.head + 1) % RING;
		q.len--;
		pthread_cond_broadcast(&q.cv);
		pthread_mutex_unlock(&q.lock);
		v = (uint8_t)b->len;
		if (b->data[0] != v || b->data[b->len - 1] != v)
			__atomic_fetch_add(&bad_bytes, 1, __ATOMIC_RELAXED);
		dlc_buf_put(b);	/* the last reference, on this thread */
	}
}

static void test_threads(void)
{
	pthread_t th[3];
	struct dlc_buf_pool_stats s0, sw, s1;
	struct rusage ru0, ru1;
	uint32_t i, warm = 20000;
	uint64_t x = 1;

	dlc_buf_pool_trim();
	dlc_buf_pool_stats(&s0);
	for (i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, consumer, NULL);
	for (i = 0; i < ROUNDS; i++) {
		/* Sizes of a JPEG data set: 20 to 200 kB. */
		size_t len = 20000 + (size_t)((x >> 33) % 180000);
		struct dlc_buf *b;

		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		if (i == warm) {
			getrusage(RUSAGE_SELF, &ru0);
			dlc_buf_pool_stats(&sw);
		}
		b = dlc_buf_alloc_io(len, (uint32_t)(x >> 52));
		if (!b) {
			CHECK(0, "alloc %zu", len);
			break;
		}
		/* Written whole, as a read would. */
		memset(b->data, (uint8_t)len, len);
		pthread_mutex_lock(&q.lock);
		while (q.len == RING)
			pthread_cond_wait(&q.cv, &q.lock);
		q.ring[(q.head + q.len++) % RING] = b;
		pthread_cond_broadcast(&q.cv);
		pthread_mutex_unlock(&q.lock);
	}
	pthread_mutex_lock(&q.lock);
	q.done = 1;
	pthread_cond_broadcast(&q.cv);
	pthread_mutex_unlock(&q.lock);
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	getrusage(RUSAGE_SELF, &ru1);
	dlc_buf_pool_stats(&s1);
	CHECK(bad_bytes == 0, "%u buffers changed under their reader", bad_bytes);
	/*
	 * At most RING + 4 in flight, spread over the classes of 20-200 kB:
	 * blocks are allocated for the first few hundred, then reused.
	 */
	CHECK(s1.allocated - s0.allocated < 2000,
	      "%llu blocks allocated for %u buffers",
	      (unsigned long long)(s1.allocated - s0.allocated), ROUNDS);
	printf("# %u buffers: %llu blocks allocated, %llu reused; after the first %u: %llu allocated, %ld page faults\n",
	       ROUNDS, (unsigned long long)(s1.allocated - s0.allocated),
	       (unsigned long long)(s1.reused - s0.reused), warm,
	       (unsigned long long)(s1.allocated - sw.allocated),
	       ru1.ru_minflt - ru0.ru_minflt);
	/*
	 * Fresh pages fault in (and are cleared); reused ones do not. In
	 * steady state a class now and then needs one more block than it
	 * ever had (a new maximum of a random walk): those are the only
	 * allocations, and their pages (52 at most) the only faults.
	 */
	CHECK(s1.allocated - sw.allocated < (ROUNDS - warm) / 200,
	      "%llu blocks allocated for %u buffers in steady state",
	      (unsigned long long)(s1.allocated - sw.allocated), ROUNDS - warm);
	CHECK(ru1.ru_minflt - ru0.ru_minflt <=
	      (long)(52 * (s1.allocated - sw.allocated) + 300),
	      "%ld page faults in steady state for %llu new blocks",
	      ru1.ru_minflt - ru0.ru_minflt,
	      (unsigned long long)(s1.allocated - sw.allocated));
	dlc_buf_pool_trim();
}

/* ---- the cache accounts the memory its buffers hold ---- */

static int fill_identity(void *arg, uint32_t epoch, uint32_t *ids,
			 uint32_t len)
{
	uint32_t i;

	(void)arg;
	(void)epoch;
	for (i = 0; i < len; i++)
		ids[i] = i;
	return 0;
}

/* What a cache over @n samples holds: after offering each a buffer. */
struct held {
	uint64_t bytes;		/* the footprints of the cached buffers */
	uint32_t cached;
	uint32_t exact;		/* plain allocations of the sample's size */
	uint32_t bad;		/* bytes not those offered */
	uint64_t used;		/* what the cache says it holds */
};

/*
 * A cache of @cap bytes over @n samples used in order: offer each a pooled
 * buffer of @len bytes filled with its id, then look at what it kept.
 */
static void offer_all(uint32_t n, uint64_t len, uint64_t cap, struct held *h)
{
	struct dlc_cache_counters cc;
	struct dlc_cache *c = NULL;
	uint32_t i;

	memset(h, 0, sizeof(*h));
	CHECK(dlc_cache_create(n, n, cap, &c) == 0);
	if (!c)
		return;
	CHECK(dlc_cache_prepare_epoch(c, 0, fill_identity, NULL) == 0);
	for (i = 0; i < n; i++) {
		struct dlc_buf *b = dlc_buf_alloc_io(len, 0);

		if (!b)
			break;
		memset(b->data, (int)i, len);
		dlc_cache_advance(c, 0, i);
		dlc_cache_offer(c, i, b);
		dlc_buf_put(b);
	}
	for (i = 0; i < n; i++) {
		struct dlc_buf *b = dlc_cache_lookup(c, i);

		if (!b)
			continue;
		h->bytes += dlc_buf_footprint(b);
		h->cached++;
		h->exact += dlc_buf_footprint(b) == b->len;
		h->bad += b->len != len || b->data[0] != (uint8_t)i ||
			  b->data[len - 1] != (uint8_t)i;
		dlc_buf_put(b);
	}
	dlc_cache_counters(c, &cc);
	h->used = cc.used;
	dlc_cache_destroy(c);
}

/* 70001 bytes in an 18-page block: the block is kept, and accounted. */
static void test_cache_footprint(void)
{
	/* 73000 bytes in an 18-page block: 1 % over, kept as the block */
	uint64_t cap = 10ULL * 73000 + 100;
	struct held h;

	offer_all(20, 73000, cap, &h);
	CHECK(h.bytes <= cap, "the cache holds %llu bytes of memory in %u buffers, over its capacity %llu",
	      (unsigned long long)h.bytes, h.cached, (unsigned long long)cap);
	CHECK(h.used == h.bytes, "used %llu, memory held %llu",
	      (unsigned long long)h.used, (unsigned long long)h.bytes);
	CHECK(h.cached == 9 && h.exact == 0 && h.bad == 0,
	      "%u cached, %u copied, %u wrong", h.cached, h.exact, h.bad);
}

/*
 * A small sample's block is mostly rounding (5000 bytes in 8 KiB): the
 * cache keeps an exact copy instead, so capacity is not lost to pages.
 */
static void test_cache_small(void)
{
	uint64_t cap = 20ULL * 5000;
	struct held h;

	offer_all(40, 5000, cap, &h);
	CHECK(h.cached == 20, "%u samples of 5000 bytes in a cache of 20 x 5000",
	      h.cached);
	CHECK(h.used == h.bytes && h.bytes <= cap, "used %llu, held %llu",
	      (unsigned long long)h.used, (unsigned long long)h.bytes);
	CHECK(h.exact == h.cached && h.bad == 0,
	      "%u pooled blocks kept, %u wrong copies", h.cached - h.exact,
	      h.bad);
}

/* The CRC-32C of a buffer is summed once; a reused block forgets it. */
/*
 * A budget (dlc_buf_charge()) counts a buffer's block from its charge to
 * its last put, whoever puts it; a reused block starts uncharged.
 */
static void test_budget(void)
{
	uint64_t budget = 0;
	struct dlc_buf *b = dlc_buf_alloc_io(100000, 0), *b2, *r;

	if (!b) {
		CHECK(0, "alloc");
		return;
	}
	dlc_buf_charge(b, &budget);
	CHECK(budget == b->cap && budget >= 100000, "charged %llu for a cap of %zu",
	      (unsigned long long)budget, b->cap);
	r = dlc_buf_get(b);
	dlc_buf_put(b);
	CHECK(budget == r->cap, "given back before the last put");
	dlc_buf_put(r);
	CHECK(budget == 0, "%llu left after the last put", (unsigned long long)budget);
	b2 = dlc_buf_alloc_io(100000, 0);
	if (!b2) {
		CHECK(0, "alloc");
		return;
	}
	CHECK(b2->budget == NULL, "a reused block came charged");
	dlc_buf_put(b2);
	CHECK(budget == 0, "an uncharged buffer's put took from the budget");
}

static void test_crc_memo(void)
{
	struct dlc_buf *b = dlc_buf_alloc_io(70001, 0), *b2;
	uint32_t want, i;

	if (!b) {
		CHECK(0, "alloc");
		return;
	}
	for (i = 0; i < 70001; i++)
		b->data[i] = (uint8_t)(i * 7 + (i >> 8));
	want = dlc_crc32c(0, b->data, 70001);
	CHECK(!dlc_buf_crc_matches(b, want ^ 1), "a wrong sum matched");
	CHECK(dlc_buf_crc_matches(b, want), "the right sum did not match");
	/* Remembered: not summed again (the bytes do not change in use). */
	b->data[5] ^= 0xff;
	CHECK(dlc_buf_crc_matches(b, want), "the sum was computed again");
	dlc_buf_put(b);
	/* The same block, reused for other bytes: summed afresh. */
	b2 = dlc_buf_alloc_io(70001, 0);
	CHECK(b2 == b, "the block was not reused");
	if (b2) {
		CHECK(!dlc_buf_crc_matches(b2, want),
		      "a reused block kept the previous bytes' sum");
		CHECK(dlc_buf_crc_matches(b2, dlc_crc32c(0, b2->data, 70001)));
	}
	dlc_buf_put(b2);
	b = dlc_buf_alloc(3);
	if (b) {
		memcpy(b->data, "abc", 3);
		CHECK(dlc_buf_crc_matches(b, dlc_crc32c(0, "abc", 3)));
	}
	dlc_buf_put(b);
}

static volatile int fork_stop;

static void *churn(void *arg)
{
	(void)arg;
	while (!fork_stop)
		dlc_buf_put(dlc_buf_alloc_io(8192, 0));
	return NULL;
}

/*
 * A child forked while another thread uses the pool can use it too: the
 * pool's lock is not inherited held (each child exits within its alarm).
 */
static void test_fork(void)
{
	uint32_t i, hung = 0;
	pthread_t th;

	fork_stop = 0;
	CHECK_EQ(pthread_create(&th, NULL, churn, NULL), 0);
	for (i = 0; i < 200; i++) {
		int st = 0;
		pid_t pid = fork();

		if (pid == 0) {
			alarm(2);
			dlc_buf_put(dlc_buf_alloc_io(8192, 0));
			_exit(0);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid ||
		    !WIFEXITED(st) || WEXITSTATUS(st)) {
			hung++;
			break;
		}
	}
	fork_stop = 1;
	pthread_join(th, NULL);
	CHECK(hung == 0, "child %u of 200 hung (killed by its alarm) or failed", i);
}

int main(void)
{
	T_RUN(test_classes);
	T_RUN(test_placement);
	T_RUN(test_reuse_no_zeroing);
	T_RUN(test_idle_cap);
	T_RUN(test_rss);
	T_RUN(test_threads);
	T_RUN(test_cache_footprint);
	T_RUN(test_cache_small);
	T_RUN(test_crc_memo);
	T_RUN(test_budget);
	T_RUN(test_fork);
	dlc_buf_pool_trim();
	return t_done("test_bufpool");
}
