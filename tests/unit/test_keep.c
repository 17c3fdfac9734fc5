// SPDX-License-Identifier: MIT
/*
 * dlc_release_batch_keep() and dlc_next_batch_timeout().
 *
 * Keep: a kept batch's pixels stay byte for byte while the ring cycles
 * many times over, and after the loader is destroyed; the batches the
 * loader delivers are those of a loader that never keeps; an epoch where
 * every batch is kept; the kept mapping is munlock'ed and the ring stays
 * pinned; every buffer is unmapped exactly once (kept ones by
 * dlc_batch_data_free, the ring's by dlc_loader_destroy); bad handles;
 * -ENOMEM leaves the batch held and valid.
 *
 * Timeout: the first batch is held back deterministically, without
 * timing: one of its samples is corrupt and the log callback, which the
 * decoder calls for it before the batch can be complete, blocks on a gate
 * the test opens. Until then -ETIMEDOUT (timeout 0 and a real wait, which
 * counts in wait_ns); after it, the same batches as a plain run.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dlcache.h"
#include "helpers/testutil.h"

#define B	8
#define SIDE	32
#define NB	3			/* nbatches */
#define PIX	((size_t)3 * SIDE * SIDE)
#define MAXB	16			/* batches an epoch, at most */

static char *g_dir;
static struct dlc_index *g_idx;

static void config(struct dlc_config *cfg)
{
	dlc_config_init(cfg);
	cfg->batch_size = B;
	cfg->transform.out_w = SIDE;
	cfg->transform.out_h = SIDE;
	cfg->seed = 11;
	cfg->window = 24;
	cfg->queue_depth = 8;
	cfg->nbatches = NB;
	cfg->decode_threads = 2;
	cfg->backend = DLC_BACKEND_INPROCESS;
	cfg->log = t_log_capture;
}

static struct dlc_loader *loader(const struct dlc_index *idx)
{
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;

	config(&cfg);
	CHECK(dlc_loader_create(&cfg, idx, &l) == 0, "loader: %s", t_logbuf);
	return l;
}

/* A batch as delivered: its pixels, labels and ids, copied. */
struct copy {
	uint64_t seq;
	uint32_t count;
	uint8_t pix[B * PIX];
	int32_t labels[B];
	uint32_t ids[B];
};

static void take_copy(const struct dlc_batch *b, struct copy *c)
{
	memset(c, 0, sizeof(*c));
	c->seq = b->seq;
	c->count = b->count;
	memcpy(c->pix, b->data, b->count * PIX);
	memcpy(c->labels, b->labels, b->count * sizeof(*b->labels));
	memcpy(c->ids, b->ids, b->count * sizeof(*b->ids));
}

static int same(const struct copy *a, const struct copy *b)
{
	return a->seq == b->seq && a->count == b->count &&
	       !memcmp(a->pix, b->pix, a->count * PIX) &&
	       !memcmp(a->labels, b->labels, a->count * sizeof(a->labels[0])) &&
	       !memcmp(a->ids, b->ids, a->count * sizeof(a->ids[0]));
}

/* Epoch @epoch of @l, plainly released, into @want (MAXB): its batches. */
static uint32_t plain_epoch(struct dlc_loader *l, uint32_t epoch,
			    struct copy *want)
{
	struct dlc_batch *b;
	uint32_t n = 0;
	int ret;

	CHECK(dlc_loader_start_epoch(l, epoch, 0) == 0, "start");
	while ((ret = dlc_next_batch(l, &b)) == 0) {
		if (n < MAXB)
			take_copy(b, &want[n]);
		n++;
		CHECK_EQ(dlc_release_batch(l, b), 0);
	}
	CHECK_EQ(ret, -ENODATA);
	return n;
}

/* An epoch of a loader that never keeps: the reference. */
static uint32_t reference(uint32_t epoch, struct copy *want)
{
	struct dlc_loader *l = loader(g_idx);
	uint32_t n;

	if (!l)
		return 0;
	n = plain_epoch(l, epoch, want);
	CHECK(n > 2 * NB && n <= MAXB, "%u batches an epoch", n);
	dlc_loader_destroy(l);
	return n;
}

/*
 * Whether [@p, @p + @len) is mapped at all (mincore: ENOMEM when not).
 * No allocation here, which could map something at @p.
 */
static int mapped(const void *p, size_t len)
{
	static unsigned char vec[(64 << 20) / 4096];
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	if (len / pg + 1 > sizeof(vec))
		len = (sizeof(vec) - 1) * pg;
	return mincore((void *)((uintptr_t)p & ~(pg - 1)), len, vec) == 0;
}

/* A kept mapping: where it is, and what was in it when it was kept. */
struct kept {
	void *mem;
	size_t len;
	struct copy c;
};

/* Keep @b into @k, checking what the call promises. */
static int keep(struct dlc_loader *l, struct dlc_batch *b, struct kept *k)
{
	uint8_t *data = b->data;
	int ret;

	take_copy(b, &k->c);
	k->mem = NULL;
	k->len = 0;
	ret = dlc_release_batch_keep(l, b, &k->mem, &k->len);
	CHECK(ret == 0, "keep batch %llu: %d", (unsigned long long)k->c.seq,
	      ret);
	if (ret)
		return ret;
	CHECK(k->mem == data, "b->data %p is *mem %p", data, k->mem);
	CHECK(k->len >= k->c.count * PIX && k->len % (2UL << 20) == 0,
	      "length %zu", k->len);
	CHECK(!b->data && !b->labels && !b->ids && !b->count,
	      "the handle is cleared as by a release");
	return 0;
}

static void check_kept(const struct kept *k, const char *when)
{
	CHECK(!memcmp(k->mem, k->c.pix, k->c.count * PIX),
	      "kept batch %llu changed %s", (unsigned long long)k->c.seq, when);
}

/*
 * Keep batch 1, hold on to it while the ring cycles through ten epochs
 * (each batch's buffer checked not to be the kept one), then compare.
 */
static void kept_data_survives(void)
{
	struct dlc_loader *l = loader(g_idx);
	struct dlc_batch *b;
	struct kept k = { 0 };
	uint32_t e, cycled = 0;
	int ret;

	if (!l)
		return;
	CHECK(dlc_loader_start_epoch(l, 0, 0) == 0, "start");
	CHECK(dlc_next_batch(l, &b) == 0, "batch 0");
	CHECK_EQ(dlc_release_batch(l, b), 0);
	CHECK(dlc_next_batch(l, &b) == 0 && b->seq == 1, "batch 1");
	if (keep(l, b, &k))
		goto out;
	for (e = 0; e < 10; e++) {
		if (e)
			CHECK(dlc_loader_start_epoch(l, e, 0) == 0, "start %u", e);
		while ((ret = dlc_next_batch(l, &b)) == 0) {
			CHECK(b->data + B * PIX <= (uint8_t *)k.mem ||
			      b->data >= (uint8_t *)k.mem + k.len,
			      "batch %llu of epoch %u in the kept buffer",
			      (unsigned long long)b->seq, e);
			cycled++;
			CHECK_EQ(dlc_release_batch(l, b), 0);
		}
		CHECK_EQ(ret, -ENODATA);
	}
	CHECK(cycled > 20 * NB, "the ring cycled %u times", cycled / NB);
	check_kept(&k, "while the ring cycled");
out:
	dlc_loader_destroy(l);
	dlc_batch_data_free(k.mem, k.len);
}

/*
 * Keep every other batch, in two epochs: every batch, kept or not, equals
 * the reference loader's, and so does every kept one at the end.
 */
static void later_batches_correct(void)
{
	struct copy *want = calloc(2 * MAXB, sizeof(*want));
	struct kept *k = calloc(2 * MAXB, sizeof(*k));
	struct dlc_loader *l = loader(g_idx);
	struct copy *got = malloc(sizeof(*got));
	struct dlc_batch *b;
	uint32_t n[2], e, i, nk = 0;
	int ret;

	if (!want || !k || !got || !l)
		goto out;
	n[0] = reference(0, want);
	n[1] = reference(1, want + MAXB);
	for (e = 0; e < 2; e++) {
		CHECK(dlc_loader_start_epoch(l, e, 0) == 0, "start %u", e);
		for (i = 0; (ret = dlc_next_batch(l, &b)) == 0; i++) {
			take_copy(b, got);
			CHECK(i < n[e] && same(got, &want[e * MAXB + i]),
			      "epoch %u batch %u as a loader that never keeps",
			      e, i);
			if (i % 2 == 0)
				ret = keep(l, b, &k[nk++]);
			else
				ret = dlc_release_batch(l, b);
			CHECK_EQ(ret, 0);
		}
		CHECK_EQ(ret, -ENODATA);
		CHECK_EQ(i, n[e]);
	}
	for (i = 0; i < nk; i++) {
		check_kept(&k[i], "after two epochs");
		dlc_batch_data_free(k[i].mem, k[i].len);
	}
out:
	dlc_loader_destroy(l);
	free(got);
	free(k);
	free(want);
}

/*
 * Keep every batch of an epoch: each mapping is the caller's until
 * dlc_batch_data_free() unmaps it; after dlc_loader_destroy() every
 * buffer the ring ever used is unmapped but the kept ones.
 */
static void keep_every_batch(void)
{
	struct kept *k = calloc(MAXB, sizeof(*k));
	struct dlc_loader *l = loader(g_idx);
	uint8_t *ring[NB];
	struct dlc_batch *b;
	uint32_t i, n = 0;
	int ret;

	if (!k || !l)
		goto out;
	CHECK(dlc_loader_start_epoch(l, 0, 0) == 0, "start");
	while ((ret = dlc_next_batch(l, &b)) == 0 && n < MAXB) {
		if (keep(l, b, &k[n]))
			break;
		n++;
	}
	CHECK_EQ(ret, -ENODATA);
	for (i = 0; i < n; i++) {
		check_kept(&k[i], "by the end of the epoch");
		CHECK(mapped(k[i].mem, k[i].len), "kept %u is mapped", i);
	}
	/* The ring's buffers now: those of the next epoch's first batches. */
	CHECK(dlc_loader_start_epoch(l, 1, 0) == 0, "start 1");
	for (i = 0; i < NB; i++) {
		ring[i] = NULL;
		CHECK(dlc_next_batch(l, &b) == 0, "epoch 1 batch %u", i);
		if (!b->data)
			goto out;
		ring[i] = b->data;
		CHECK_EQ(dlc_release_batch(l, b), 0);
		CHECK(mapped(ring[i], B * PIX), "ring buffer %u", i);
	}
	dlc_loader_destroy(l);
	l = NULL;
	for (i = 0; i < NB; i++)
		CHECK(!mapped(ring[i], B * PIX),
		      "ring buffer %u unmapped by destroy", i);
	for (i = 0; i < n; i++) {
		CHECK(mapped(k[i].mem, k[i].len), "kept %u survives destroy", i);
		check_kept(&k[i], "by destroy");
		dlc_batch_data_free(k[i].mem, k[i].len);
		CHECK(!mapped(k[i].mem, k[i].len),
		      "kept %u unmapped by dlc_batch_data_free", i);
	}
	dlc_batch_data_free(NULL, 0);
out:
	dlc_loader_destroy(l);
	free(k);
}

/* Keep, then destroy the loader: the kept pixels are still there. */
static void keep_then_destroy(void)
{
	struct dlc_loader *l = loader(g_idx);
	struct dlc_batch *b, *held;
	struct kept k = { 0 };

	if (!l)
		return;
	CHECK(dlc_loader_start_epoch(l, 0, 0) == 0, "start");
	CHECK(dlc_next_batch(l, &b) == 0, "batch 0");
	if (keep(l, b, &k))
		goto out;
	/* A batch still held at destroy is freed with the ring. */
	CHECK(dlc_next_batch(l, &held) == 0, "batch 1");
	dlc_loader_destroy(l);
	l = NULL;
	check_kept(&k, "by destroy");
	dlc_batch_data_free(k.mem, k.len);
out:
	dlc_loader_destroy(l);
}

/* Bad handles and arguments: the errors of a release, nothing changes. */
static void keep_bad_handles(void)
{
	struct dlc_loader *l = loader(g_idx), *l2 = loader(g_idx);
	struct dlc_batch *b = NULL, *b2 = NULL, mine;
	struct kept k = { 0 };
	struct copy *c = malloc(sizeof(*c));
	void *mem = NULL;
	size_t len = 0;

	if (!l || !l2 || !c)
		goto out;
	CHECK(dlc_loader_start_epoch(l, 0, 0) == 0, "start");
	CHECK(dlc_loader_start_epoch(l2, 0, 0) == 0, "start 2");
	CHECK(dlc_next_batch(l, &b) == 0, "batch");
	CHECK(dlc_next_batch(l2, &b2) == 0, "batch 2");
	if (!b || !b2)
		goto out;
	take_copy(b, c);

	t_log_clear();
	CHECK_EQ(dlc_release_batch_keep(l, b2, &mem, &len), -EINVAL);
	CHECK(strstr(t_logbuf, "keep batch: ") &&
	      strstr(t_logbuf, "not a batch this loader handed out"),
	      "logged: %s", t_logbuf);
	memset(&mine, 0, sizeof(mine));
	CHECK_EQ(dlc_release_batch_keep(l, &mine, &mem, &len), -EINVAL);
	CHECK_EQ(dlc_release_batch_keep(l, NULL, &mem, &len), -EINVAL);
	CHECK_EQ(dlc_release_batch_keep(NULL, b, &mem, &len), -EINVAL);
	t_log_clear();
	CHECK_EQ(dlc_release_batch_keep(l, b, NULL, &len), -EINVAL);
	CHECK_EQ(dlc_release_batch_keep(l, b, &mem, NULL), -EINVAL);
	CHECK(strstr(t_logbuf, "mem and len"), "logged: %s", t_logbuf);
	CHECK(!mem && !len, "nothing given out");
	CHECK(b->data && b2->data, "both batches still live");

	/* Kept, then kept or released again: already released. */
	if (keep(l, b, &k))
		goto out;
	t_log_clear();
	CHECK_EQ(dlc_release_batch_keep(l, b, &mem, &len), -EALREADY);
	CHECK(strstr(t_logbuf, "keep batch: batch 0 of epoch 0") &&
	      strstr(t_logbuf, "already released"), "logged: %s", t_logbuf);
	CHECK_EQ(dlc_release_batch(l, b), -EALREADY);
	CHECK(!mem && !len, "nothing given out");
	/* Released, then kept. */
	CHECK_EQ(dlc_release_batch(l2, b2), 0);
	CHECK_EQ(dlc_release_batch_keep(l2, b2, &mem, &len), -EALREADY);
	CHECK(!mem && !len, "nothing given out");
	check_kept(&k, "after bad calls");
	CHECK(same(&k.c, c), "the kept batch is the one handed out");
	dlc_batch_data_free(k.mem, k.len);
out:
	dlc_loader_destroy(l);
	dlc_loader_destroy(l2);
	free(c);
}

/* The VMA holding @p in /proc/self/smaps: its Locked: in KiB, or -1. */
static long locked_kib(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	uintptr_t a = (uintptr_t)p;
	unsigned long lo, hi;
	char line[512];
	long kib = -1;
	int in = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') <
		    strchr(line, ' ')) {
			in = a >= lo && a < hi;
			continue;
		}
		if (in && sscanf(line, "Locked: %ld kB", &kib) == 1)
			break;
	}
	fclose(f);
	return kib;
}

/* As root: the ring stays pinned after a keep; the kept buffer is not. */
static void keep_pinning(void)
{
	struct dlc_loader *l;
	struct dlc_batch *b;
	struct kept k = { 0 };

#ifdef __SANITIZE_ADDRESS__
	t_skip("keep_pinning", "mlock is a no-op under ASan (the release build runs it)");
	return;
#endif
	if (getuid() != 0) {
		t_skip("keep_pinning", "not root: the ring may not be pinned");
		return;
	}
	l = loader(g_idx);
	if (!l)
		return;
	CHECK(dlc_loader_pinned(l) == 1, "root's ring is pinned");
	if (dlc_loader_hugepages(l) == 2) {
		/* smaps counts no Locked: for hugetlbfs pages. */
		t_skip("keep_pinning", "hugetlbfs pages: Locked: is not counted");
		goto out;
	}
	CHECK(dlc_loader_start_epoch(l, 0, 0) == 0, "start");
	CHECK(dlc_next_batch(l, &b) == 0, "batch 0");
	CHECK(locked_kib(b->data) >= (long)(2 << 10), "slot buffer locked: %ld KiB",
	      locked_kib(b->data));
	if (keep(l, b, &k))
		goto out;
	CHECK_EQ(locked_kib(k.mem), 0);
	CHECK(dlc_loader_pinned(l) == 1, "the ring is still pinned");
	CHECK(dlc_next_batch(l, &b) == 0, "batch 1");
	CHECK_EQ(dlc_release_batch(l, b), 0);
	CHECK(dlc_next_batch(l, &b) == 0, "batch 2");
	CHECK_EQ(dlc_release_batch(l, b), 0);
	/* Batch 3 lands in batch 0's slot: its new buffer. */
	CHECK(dlc_next_batch(l, &b) == 0 && b->seq == 3, "batch 3");
	CHECK(b->data != k.mem, "a new buffer");
	CHECK(locked_kib(b->data) >= (long)(2 << 10), "new buffer locked: %ld KiB",
	      locked_kib(b->data));
	CHECK_EQ(dlc_release_batch(l, b), 0);
out:
	dlc_loader_destroy(l);
	dlc_batch_data_free(k.mem, k.len);
}

/* Bytes of address space in use now (/proc/self/statm), or 0. */
static size_t vm_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long pages = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%lu", &pages) != 1)
		pages = 0;
	fclose(f);
	return pages * (size_t)sysconf(_SC_PAGESIZE);
}

/*
 * In a child: no address space left for a new buffer (RLIMIT_AS just
 * above what is mapped) -> -ENOMEM, the batch held and valid, and a plain
 * release of it works.
 */
static void keep_enomem(void)
{
	struct dlc_loader *l;
	struct dlc_batch *b;
	struct copy *c;
	pid_t pid;
	int st;

#ifdef __SANITIZE_ADDRESS__
	t_skip("keep_enomem", "ASan's shadow memory defeats RLIMIT_AS (the release build runs it)");
	return;
#endif
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int before = t_failures;	/* the parent's, inherited */
		struct rlimit rl = { 0 };
		void *mem = NULL;
		size_t len = 0;

		c = malloc(sizeof(*c));
		l = loader(g_idx);
		if (!l || !c) {
			fflush(stdout);
			_exit(2);
		}
		CHECK(dlc_loader_start_epoch(l, 0, 0) == 0, "start");
		CHECK(dlc_next_batch(l, &b) == 0, "batch 0");
		take_copy(b, c);
		t_log_clear();
		rl.rlim_cur = rl.rlim_max = vm_bytes() + (1 << 20);
		CHECK(setrlimit(RLIMIT_AS, &rl) == 0, "RLIMIT_AS");
		CHECK_EQ(dlc_release_batch_keep(l, b, &mem, &len), -ENOMEM);
		CHECK(!mem && !len, "nothing given out");
		CHECK(strstr(t_logbuf, "keep batch 0: no memory"), "logged: %s",
		      t_logbuf);
		CHECK(b->data && b->count == c->count &&
		      !memcmp(b->data, c->pix, c->count * PIX) &&
		      !memcmp(b->ids, c->ids, c->count * sizeof(*c->ids)),
		      "the batch stays valid");
		CHECK_EQ(dlc_release_batch(l, b), 0);
		CHECK_EQ(dlc_release_batch(l, b), -EALREADY);
		dlc_loader_destroy(l);
		fflush(stdout);
		_exit(t_failures > before);
	}
	CHECK(pid > 0, "fork");
	if (pid <= 0)
		return;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: status %#x", st);
}

/* ---- dlc_next_batch_timeout ---- */

/* A log callback that stops sample 3's lines at a gate the test opens. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_open, gate_waiting;

static void gate_log(void *arg, int level, const char *msg)
{
	t_log_capture(arg, level, msg);
	if (strncmp(msg, "sample 3 (", 10))
		return;
	pthread_mutex_lock(&gate_lock);
	gate_waiting++;
	pthread_cond_broadcast(&gate_cv);
	while (!gate_open)
		pthread_cond_wait(&gate_cv, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
}

static void open_gate(void)
{
	pthread_mutex_lock(&gate_lock);
	gate_open = 1;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_lock);
}

/* Wait up to 60 s for a thread at the gate: whether one came. */
static int someone_at_gate(void)
{
	struct timespec until;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 60;
	pthread_mutex_lock(&gate_lock);
	while (!gate_waiting && ret != ETIMEDOUT)
		ret = pthread_cond_timedwait(&gate_cv, &gate_lock, &until);
	ret = gate_waiting > 0;
	pthread_mutex_unlock(&gate_lock);
	return ret;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t wait_ns(struct dlc_loader *l)
{
	struct dlc_stats st;

	memset(&st, 0, sizeof(st));
	CHECK(dlc_loader_stats(l, &st, sizeof(st)) == 0, "stats");
	return st.wait_ns;
}

/*
 * Sample 3 (batch 0, shuffle off) is no JPEG: its decoder logs it, at the
 * gate, before batch 0 can be ready.
 */
static void timeout(void)
{
	struct copy *want = calloc(MAXB, sizeof(*want));
	struct copy *got = malloc(sizeof(*got));
	struct dlc_loader *l = NULL, *ref = NULL;
	struct dlc_index *idx = NULL;
	char *dir = t_mkdtemp(NULL), path[4096];
	struct dlc_config cfg;
	struct dlc_batch *b;
	uint64_t t0, w0;
	uint32_t i, n = 0;
	int ret;

	if (!want || !got || !dir || t_make_dataset(dir, 2, 12) ||
	    dlc_index_build(dir, &idx)) {
		CHECK(0, "a data set");
		goto out;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, dlc_index_relpath(idx, 3));
	CHECK(t_write_file(path, "not a jpeg at all", 17) == 0, "corrupt");
	config(&cfg);
	cfg.shuffle = 0;
	cfg.log_level = DLC_LOG_WARN;
	cfg.log = t_log_capture;
	CHECK(dlc_loader_create(&cfg, idx, &ref) == 0, "reference");
	cfg.log = gate_log;
	CHECK(dlc_loader_create(&cfg, idx, &l) == 0, "loader");
	if (!l || !ref)
		goto out;

	/* The reference: a plain run, nothing held back. */
	n = plain_epoch(ref, 0, want);
	CHECK(n >= 3 && n <= MAXB && want[0].count == B - 1,
	      "%u batches, the first without sample 3", n);

	CHECK(dlc_loader_start_epoch(l, 0, 0) == 0, "start");
	b = NULL;
	CHECK_EQ(dlc_next_batch_timeout(l, &b, 0), -ETIMEDOUT);
	CHECK(someone_at_gate(), "the bad sample reached the log");
	CHECK_EQ(dlc_next_batch_timeout(l, &b, 0), -ETIMEDOUT);
	w0 = wait_ns(l);
	t0 = now_ns();
	CHECK_EQ(dlc_next_batch_timeout(l, &b, 50000000), -ETIMEDOUT);
	CHECK(now_ns() - t0 >= 50000000, "waited %llu ns",
	      (unsigned long long)(now_ns() - t0));
	CHECK(wait_ns(l) - w0 >= 50000000, "wait_ns grew by %llu",
	      (unsigned long long)(wait_ns(l) - w0));
	CHECK(!b, "no batch given out");

	open_gate();
	for (i = 0; (ret = dlc_next_batch_timeout(l, &b, i % 2 ? UINT64_MAX :
						 30000000000ULL)) == 0; i++) {
		take_copy(b, got);
		CHECK(i < n && same(got, &want[i]),
		      "batch %u (seq %llu) as in a plain run", i,
		      (unsigned long long)got->seq);
		CHECK_EQ(dlc_release_batch(l, b), 0);
	}
	CHECK_EQ(ret, -ENODATA);
	CHECK_EQ(i, n);
	CHECK_EQ(dlc_next_batch_timeout(l, &b, 0), -ENODATA);
out:
	open_gate();
	dlc_loader_destroy(l);
	dlc_loader_destroy(ref);
	dlc_index_free(idx);
	if (dir)
		t_rmtree(dir);
	free(dir);
	free(got);
	free(want);
}

/* No epoch started: -EINVAL at once, as dlc_next_batch(). */
static void timeout_no_epoch(void)
{
	struct dlc_loader *l = loader(g_idx);
	struct dlc_batch *b;

	if (!l)
		return;
	CHECK_EQ(dlc_next_batch_timeout(l, &b, 0), -EINVAL);
	CHECK_EQ(dlc_next_batch_timeout(l, &b, 1000000), -EINVAL);
	dlc_loader_destroy(l);
}

int main(void)
{
	int ret;

	g_dir = t_mkdtemp(NULL);
	if (!g_dir || t_make_dataset(g_dir, 3, 20)) {
		printf("cannot make a data set\n");
		return 1;
	}
	CHECK(dlc_index_build(g_dir, &g_idx) == 0, "index");
	if (!g_idx)
		return t_done("test_keep");

	T_RUN(kept_data_survives);
	T_RUN(later_batches_correct);
	T_RUN(keep_every_batch);
	T_RUN(keep_then_destroy);
	T_RUN(keep_bad_handles);
	T_RUN(keep_pinning);
	T_RUN(keep_enomem);
	T_RUN(timeout);
	T_RUN(timeout_no_epoch);

	ret = t_done("test_keep");
	dlc_index_free(g_idx);
	t_rmtree(g_dir);
	free(g_dir);
	return ret;
}
