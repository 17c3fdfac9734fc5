// SPDX-License-Identifier: MIT
/*
 * The loader and its batch ring: batches in order with the epoch's
 * samples and labels, pixels equal to decoding each sample alone, the
 * same batches twice for a fixed seed, resume mid-epoch (on the batch
 * grid only), DDP shards with shard padding and drop_last apart, the hold
 * limit, checked batch handles, SKIP never delivering an empty batch,
 * NCHW vs NHWC, the cache's hit ratio, versioned config and stats
 * structs, and the default thread count under a CPU affinity.
 */
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dlcache.h"
#include "helpers/testutil.h"

#define B 16
#define SIDE 48
#define MAXB 16

static char *g_dir;
static struct dlc_index *g_idx;
static uint32_t g_n;

static uint64_t batch_hash(const struct dlc_batch *b)
{
	uint64_t h = T_FNV_INIT;

	h = t_fnv(b->data, (size_t)b->count * 3 * SIDE * SIDE, h);
	h = t_fnv(b->labels, b->count * sizeof(*b->labels), h);
	return t_fnv(b->ids, b->count * sizeof(*b->ids), h);
}

static void config(struct dlc_config *cfg, uint64_t cache)
{
	dlc_config_init(cfg);
	cfg->batch_size = B;
	cfg->transform.out_w = SIDE;
	cfg->transform.out_h = SIDE;
	cfg->seed = 7;
	cfg->window = 40;
	cfg->queue_depth = 8;
	cfg->nbatches = 3;
	cfg->decode_threads = 2;
	cfg->cache_bytes = cache;
	cfg->log = dlc_log_stderr;
}

/* Two loaders of the same config, logging to t_logbuf; 0 when both exist. */
static int two_loaders(struct dlc_loader **a, struct dlc_loader **b)
{
	struct dlc_config cfg;

	config(&cfg, 0);
	cfg.log = t_log_capture;
	*a = *b = NULL;
	CHECK(dlc_loader_create(&cfg, g_idx, a) == 0, "loader");
	CHECK(dlc_loader_create(&cfg, g_idx, b) == 0, "second loader");
	return *a && *b ? 0 : -1;
}

/* What one run of an epoch delivered. */
struct run {
	uint32_t nb;			/* batches */
	uint64_t seq[MAXB];
	uint64_t hash[MAXB];
	uint32_t count[MAXB];
	uint32_t nids;
	uint32_t ids[512];
};

/* Run one epoch from @start to its end, recording every batch. */
static void run_epoch(struct dlc_loader *l, uint32_t epoch, uint32_t start,
		      struct run *r)
{
	struct dlc_batch *b;
	uint32_t i;
	int ret;

	memset(r, 0, sizeof(*r));
	CHECK(dlc_loader_start_epoch(l, epoch, start) == 0, "start epoch %u", epoch);
	while ((ret = dlc_next_batch(l, &b)) == 0) {
		CHECK(b->epoch == epoch, "batch epoch");
		CHECK(b->count > 0, "batch %llu is empty",
		      (unsigned long long)b->seq);
		if (r->nb < MAXB) {
			r->seq[r->nb] = b->seq;
			r->hash[r->nb] = batch_hash(b);
			r->count[r->nb] = b->count;
		}
		r->nb++;
		for (i = 0; i < b->count && r->nids < 512; i++)
			r->ids[r->nids++] = b->ids[i];
		CHECK_EQ(dlc_release_batch(l, b), 0);
	}
	CHECK(ret == -ENODATA, "epoch end: %d", ret);
	CHECK(dlc_next_batch(l, &b) == -ENODATA, "after the end");
}

/* Batches in order, following the epoch's order, with matching pixels. */
static void check_order_and_pixels(void)
{
	struct dlc_order_params op = { .seed = 7, .world = 1, .shuffle = 1 };
	struct dlc_loader *l = NULL;
	struct dlc_decoder *dec = NULL;
	struct dlc_config cfg;
	struct dlc_batch *b;
	uint32_t *order = malloc(g_n * 4), i;
	uint8_t *want = malloc(3 * SIDE * SIDE);
	struct run r;
	char path[4096];

	config(&cfg, 0);
	CHECK(dlc_loader_create(&cfg, g_idx, &l) == 0, "create");
	if (!l || !order || !want)
		goto out;
	CHECK(dlc_next_batch(l, &b) == -EINVAL, "next batch before an epoch");
	CHECK_EQ(dlc_loader_epoch_batches(l), (g_n + B - 1) / B);
	run_epoch(l, 0, 0, &r);
	CHECK_EQ(r.nb, (g_n + B - 1) / B);
	CHECK_EQ(r.nids, g_n);
	for (i = 0; i < r.nb; i++)
		CHECK_EQ(r.seq[i], i);
	dlc_order_fill(g_n, &op, order, g_n);
	CHECK(memcmp(order, r.ids, g_n * 4) == 0, "samples follow the epoch order");

	/* Pixels equal a decode of the sample alone, and labels match. */
	dlc_decoder_create(0, &dec);
	CHECK(dlc_loader_start_epoch(l, 1, 0) == 0, "epoch 1");
	CHECK(dlc_next_batch(l, &b) == 0, "first batch of epoch 1");
	for (i = 0; dec && i < b->count; i++) {
		size_t len;
		uint8_t *jpg;

		snprintf(path, sizeof(path), "%s/%s", g_dir,
			 dlc_index_relpath(g_idx, b->ids[i]));
		jpg = t_read_file(path, &len);
		CHECK(jpg && dlc_decoder_sample(dec, jpg, len, &cfg.transform,
						cfg.seed, 1, b->ids[i],
						cfg.layout, want, NULL) == 0,
		      "reference decode");
		CHECK(memcmp(want, b->data + (size_t)i * 3 * SIDE * SIDE,
			     3 * SIDE * SIDE) == 0,
		      "sample %u of the batch differs from its own decode", i);
		CHECK(b->labels[i] == dlc_index_label(g_idx, b->ids[i]),
		      "label of sample %u", i);
		free(jpg);
	}
	CHECK_EQ(dlc_release_batch(l, b), 0);
out:
	dlc_decoder_destroy(dec);
	dlc_loader_destroy(l);
	free(order);
	free(want);
}

/* nbatches - 1 held at once, across an epoch's start too. */
static void check_hold_limit(void)
{
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	struct dlc_batch *held[3];

	config(&cfg, 0);
	CHECK(dlc_loader_create(&cfg, g_idx, &l) == 0, "create");
	if (!l)
		return;
	CHECK(dlc_loader_start_epoch(l, 2, 0) == 0, "epoch 2");
	CHECK(dlc_next_batch(l, &held[0]) == 0, "hold 1");
	CHECK(dlc_next_batch(l, &held[1]) == 0, "hold 2");
	CHECK(dlc_next_batch(l, &held[2]) == -EBUSY, "hold 3 refused");
	CHECK(dlc_loader_start_epoch(l, 3, 0) == 0, "restart while holding");
	CHECK(dlc_next_batch(l, &held[2]) == -EBUSY,
	      "the held limit counts batches of the run before");
	CHECK_EQ(dlc_release_batch(l, held[0]), 0);
	CHECK_EQ(dlc_release_batch(l, held[0]), -EALREADY);
	CHECK(dlc_next_batch(l, &held[2]) == 0, "hold after a release");
	CHECK_EQ(dlc_release_batch(l, held[1]), 0);
	CHECK_EQ(dlc_release_batch(l, held[2]), 0);
	dlc_loader_destroy(l);
}

/*
 * A training loop's variable keeps an epoch's last batch while the next
 * epoch starts: it stays intact through the whole next epoch, whose
 * batches equal a run without it (a second loader's), and its release
 * afterwards frees its slot only.
 */
static void check_hold_across_epochs(void)
{
	struct dlc_loader *l, *ref;
	struct dlc_batch *b, *last = NULL;
	struct run want;
	uint64_t h_last = 0;
	uint32_t k, e;
	int ret;

	if (two_loaders(&ref, &l))
		goto out;
	run_epoch(ref, 1, 0, &want);
	for (e = 0; e < 2; e++) {
		CHECK_EQ(dlc_loader_start_epoch(l, e, 0), 0);
		for (k = 0; (ret = dlc_next_batch(l, &b)) == 0; k++) {
			if (last) {
				CHECK(batch_hash(last) == h_last,
				      "epoch %u's last batch intact at batch %u of epoch %u",
				      e - 1, k, e);
				if (k == 1 || e == 0) {
					CHECK_EQ(dlc_release_batch(l, last), 0);
					last = NULL;
				}
			}
			if (e == 1)
				CHECK(k < want.nb && b->seq == want.seq[k] &&
				      batch_hash(b) == want.hash[k],
				      "epoch 1 batch %u as without the held one", k);
			if (e == 0) {
				last = b;
				h_last = batch_hash(b);
			} else {
				CHECK_EQ(dlc_release_batch(l, b), 0);
			}
		}
		CHECK_EQ(ret, -ENODATA);
		if (e == 1)
			CHECK_EQ(k, want.nb);
	}
	CHECK(!last, "the held batch was released in epoch 1");
	/*
	 * Held on: its slot is the last of the new run's turn, whose batch
	 * there is refused (-EBUSY) until it goes, then comes as it would.
	 */
	CHECK_EQ(dlc_loader_start_epoch(l, 0, 0), 0);
	CHECK_EQ(dlc_next_batch(l, &last), 0);
	h_last = batch_hash(last);
	CHECK_EQ(dlc_loader_start_epoch(l, 1, 0), 0);
	for (k = 0; k < want.nb; k++) {
		ret = dlc_next_batch(l, &b);
		if (k == 2) {	/* nbatches 3: the held slot's turn */
			CHECK_EQ(ret, -EBUSY);
			CHECK(batch_hash(last) == h_last, "held batch intact");
			CHECK_EQ(dlc_release_batch(l, last), 0);
			CHECK_EQ(dlc_release_batch(l, last), -EALREADY);
			ret = dlc_next_batch(l, &b);
		}
		CHECK_EQ(ret, 0);
		if (ret)
			break;
		CHECK(b->seq == want.seq[k] && batch_hash(b) == want.hash[k],
		      "epoch 1 batch %u as without the held one", k);
		CHECK_EQ(dlc_release_batch(l, b), 0);
	}
	CHECK_EQ(dlc_next_batch(l, &b), -ENODATA);
out:
	dlc_loader_destroy(ref);
	dlc_loader_destroy(l);
}

/*
 * A stale release must never free a live batch: take batch 0 and release
 * it, take 1 and 2, release 1, take 3 (in batch 0's buffer), then release
 * batch 0's handle again. Batch 3 must stay intact while held, and the
 * batch that would reuse its buffer must not be written over it.
 */
static void check_stale_release(void)
{
	struct dlc_loader *l, *ref;
	struct dlc_batch *b[8], *x;
	uint64_t h3;
	struct run want;
	uint32_t k;

	if (two_loaders(&ref, &l))
		goto out;
	run_epoch(ref, 0, 0, &want);
	CHECK(dlc_loader_start_epoch(l, 0, 0) == 0, "start");
	CHECK(dlc_next_batch(l, &b[0]) == 0 && b[0]->seq == 0, "batch 0");
	CHECK_EQ(dlc_release_batch(l, b[0]), 0);
	CHECK(dlc_next_batch(l, &b[1]) == 0 && b[1]->seq == 1, "batch 1");
	CHECK(dlc_next_batch(l, &b[2]) == 0 && b[2]->seq == 2, "batch 2");
	CHECK_EQ(dlc_release_batch(l, b[1]), 0);
	CHECK(dlc_next_batch(l, &b[3]) == 0 && b[3]->seq == 3, "batch 3");
	h3 = batch_hash(b[3]);
	CHECK(h3 == want.hash[3], "batch 3 as in the reference run");

	t_logbuf[0] = 0;
	CHECK_EQ(dlc_release_batch(l, b[0]), -EALREADY);
	CHECK(strstr(t_logbuf, "already released"), "logged: %s", t_logbuf);
	CHECK_EQ(dlc_release_batch(l, b[2]), 0);
	for (k = 4; k <= 5; k++) {
		CHECK(dlc_next_batch(l, &b[k]) == 0 && b[k]->seq == k,
		      "batch %u", k);
		CHECK(b[k]->seq != k || batch_hash(b[k]) == want.hash[k],
		      "batch %u as in the reference run", k);
		CHECK_EQ(dlc_release_batch(l, b[k]), 0);
	}
	/* Batch 6 goes in batch 3's buffer, which the caller still holds. */
	CHECK(dlc_next_batch(l, &x) == -EBUSY,
	      "the batch for a held buffer is refused, not written over it");
	CHECK(b[3]->seq == 3 && b[3]->count == B && batch_hash(b[3]) == h3,
	      "held batch 3 is intact");
	CHECK_EQ(dlc_release_batch(l, b[3]), 0);
	CHECK_EQ(dlc_release_batch(l, b[3]), -EALREADY);
	CHECK(b[3]->count == 0 && !b[3]->data, "a released handle is cleared");
	for (k = 6; k < want.nb; k++) {
		CHECK(dlc_next_batch(l, &x) == 0 && x->seq == k, "batch %u", k);
		CHECK(batch_hash(x) == want.hash[k],
		      "batch %u as in the reference run", k);
		CHECK_EQ(dlc_release_batch(l, x), 0);
	}
	CHECK(dlc_next_batch(l, &x) == -ENODATA, "the end");
	/* A handle of an earlier epoch. */
	CHECK(dlc_loader_start_epoch(l, 1, 0) == 0, "epoch 1");
	CHECK(dlc_next_batch(l, &x) == 0, "epoch 1 batch 0");
	CHECK_EQ(dlc_release_batch(l, b[5]), -EALREADY);
	CHECK_EQ(dlc_release_batch(l, x), 0);
out:
	dlc_loader_destroy(l);
	dlc_loader_destroy(ref);
}

/* Another loader's batch, a pointer never handed out, NULL. */
static void check_foreign_release(void)
{
	struct dlc_loader *l, *l2;
	struct dlc_batch *b = NULL, *b2 = NULL, mine;
	uint64_t h;

	if (two_loaders(&l, &l2))
		goto out;
	CHECK(dlc_loader_start_epoch(l, 0, 0) == 0, "start");
	CHECK(dlc_loader_start_epoch(l2, 0, 0) == 0, "start 2");
	CHECK(dlc_next_batch(l, &b) == 0, "batch");
	CHECK(dlc_next_batch(l2, &b2) == 0, "batch 2");
	if (!b || !b2)
		goto out;
	h = batch_hash(b2);
	t_logbuf[0] = 0;
	CHECK_EQ(dlc_release_batch(l, b2), -EINVAL);
	CHECK(strstr(t_logbuf, "not a batch this loader handed out"), "logged: %s",
	      t_logbuf);
	CHECK(batch_hash(b2) == h && b2->count == B,
	      "the other loader's batch is untouched");
	memset(&mine, 0, sizeof(mine));
	CHECK_EQ(dlc_release_batch(l, &mine), -EINVAL);
	CHECK_EQ(dlc_release_batch(l, NULL), -EINVAL);
	CHECK_EQ(dlc_release_batch(l, (struct dlc_batch *)((char *)b + 8)),
		 -EINVAL);
	CHECK_EQ(dlc_release_batch(l, (struct dlc_batch *)(uintptr_t)0x1000),
		 -EINVAL);
	CHECK(b->count == B && b->data, "the real handle is still live");
	CHECK_EQ(dlc_release_batch(l, b), 0);
	CHECK_EQ(dlc_release_batch(l2, b2), 0);
out:
	dlc_loader_destroy(l);
	dlc_loader_destroy(l2);
}

/* Same seed, same batches; resume at k * B gives the tail; off grid fails. */
static void check_determinism_resume(void)
{
	struct dlc_loader *l, *l2;
	struct dlc_batch *b;
	struct run r1, r2;

	if (two_loaders(&l, &l2))
		goto out;
	run_epoch(l, 0, 0, &r1);
	run_epoch(l2, 0, 0, &r2);
	CHECK(r1.nb == r2.nb && memcmp(r1.hash, r2.hash, sizeof(r1.hash)) == 0,
	      "a fixed seed gives the same batches");
	run_epoch(l2, 0, 3 * B, &r2);
	CHECK(r2.nb == r1.nb - 3 &&
	      memcmp(r1.hash + 3, r2.hash, r2.nb * 8) == 0,
	      "resume after 3 batches gives the same batches");
	CHECK_EQ(r2.seq[0], 3);
	CHECK(memcmp(r1.ids + 3 * B, r2.ids, r2.nids * 4) == 0, "resumed samples");
	run_epoch(l2, 1, 0, &r2);
	CHECK(memcmp(r1.ids, r2.ids, g_n * 4) != 0, "epochs differ in order");

	/* Off the batch grid: -EINVAL with a line saying so. */
	t_logbuf[0] = 0;
	CHECK_EQ(dlc_loader_start_epoch(l, 0, 5 * B + 1), -EINVAL);
	CHECK(strstr(t_logbuf, "start 81 is not on the batch grid"), "logged: %s",
	      t_logbuf);
	CHECK_EQ(dlc_loader_start_epoch(l, 0, 1), -EINVAL);
	CHECK_EQ(dlc_loader_start_epoch(l, 0, (g_n + B - 1) / B * B), -EINVAL);
	CHECK_EQ(dlc_loader_start_epoch(l, 0, 7 * B), 0);
	CHECK(dlc_next_batch(l, &b) == 0 && b->seq == 7 && b->count == g_n - 7 * B,
	      "the last batch alone");
	CHECK_EQ(dlc_release_batch(l, b), 0);
out:
	dlc_loader_destroy(l);
	dlc_loader_destroy(l2);
}

/* The cache: later epochs hit about half the bytes. */
static void check_cache(void)
{
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	struct dlc_stats st0, st1;
	struct run r;
	double hb, mb;
	uint64_t seen;

	config(&cfg, dlc_index_total_bytes(g_idx) / 2);
	/* Bytes read per epoch: none read ahead into the next (test_readahead). */
	cfg.readahead_bytes = DLC_READAHEAD_OFF;
	CHECK(dlc_loader_create(&cfg, g_idx, &l) == 0, "create");
	if (!l)
		return;
	run_epoch(l, 0, 0, &r);
	run_epoch(l, 1, 0, &r);
	CHECK_EQ(dlc_loader_stats(l, &st0, sizeof(st0)), 0);
	run_epoch(l, 2, 0, &r);
	CHECK_EQ(dlc_loader_stats(l, &st1, sizeof(st1)), 0);
	hb = (double)(st1.hit_bytes - st0.hit_bytes);
	mb = (double)(st1.miss_bytes - st0.miss_bytes);
	seen = st1.hits + st1.misses - st0.hits - st0.misses;
	CHECK(seen == g_n, "hits + misses = %llu", (unsigned long long)seen);
	CHECK(hb / (hb + mb) > 0.40 && hb / (hb + mb) <= 0.5 + 1e-9,
	      "byte hit ratio %.3f with half the bytes cached", hb / (hb + mb));
	CHECK(st1.cache_used <= cfg.cache_bytes, "cache over capacity");
	CHECK(st1.bytes_read - st0.bytes_read == st1.miss_bytes - st0.miss_bytes,
	      "bytes read equal missed bytes");
	dlc_loader_destroy(l);
}

/* NHWC holds the same pixels as NCHW, transposed. */
static void check_nhwc(void)
{
	uint8_t *nchw = malloc(3 * SIDE * SIDE);
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	struct dlc_batch *b;
	uint32_t y, x, c, bad = 0;

	config(&cfg, 0);
	CHECK(dlc_loader_create(&cfg, g_idx, &l) == 0, "nchw loader");
	if (!l || !nchw)
		goto out;
	dlc_loader_start_epoch(l, 0, 0);
	CHECK(dlc_next_batch(l, &b) == 0, "nchw batch");
	memcpy(nchw, b->data, 3 * SIDE * SIDE);
	dlc_release_batch(l, b);
	dlc_loader_destroy(l);
	l = NULL;
	cfg.layout = DLC_LAYOUT_NHWC;
	CHECK(dlc_loader_create(&cfg, g_idx, &l) == 0, "nhwc loader");
	if (!l)
		goto out;
	dlc_loader_start_epoch(l, 0, 0);
	CHECK(dlc_next_batch(l, &b) == 0, "nhwc batch");
	for (c = 0; c < 3; c++)
		for (y = 0; y < SIDE; y++)
			for (x = 0; x < SIDE; x++)
				bad += nchw[(c * SIDE + y) * SIDE + x] !=
				       b->data[(y * SIDE + x) * 3 + c];
	CHECK(bad == 0, "%u NHWC pixels differ", bad);
	dlc_release_batch(l, b);
out:
	dlc_loader_destroy(l);
	free(nchw);
}

/* DDP: two ranks see disjoint halves that cover the data set. */
static void check_ddp(void)
{
	uint8_t *seen = calloc(g_n, 1);
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	struct run r;
	uint32_t i;

	config(&cfg, 0);
	cfg.world = 2;
	for (cfg.rank = 0; seen && cfg.rank < 2; cfg.rank++) {
		CHECK(dlc_loader_create(&cfg, g_idx, &l) == 0, "rank %u", cfg.rank);
		if (!l)
			continue;
		CHECK_EQ(dlc_loader_epoch_samples(l), g_n / 2);
		run_epoch(l, 0, 0, &r);
		CHECK(r.nids == g_n / 2, "rank %u got %u samples", cfg.rank, r.nids);
		for (i = 0; i < r.nids; i++) {
			CHECK(!seen[r.ids[i]], "sample %u on both ranks", r.ids[i]);
			seen[r.ids[i]] = 1;
		}
		dlc_loader_destroy(l);
		l = NULL;
	}
	for (i = 0; seen && i < g_n; i++)
		CHECK(seen[i], "sample %u on no rank", i);
	free(seen);
}

/*
 * shard_drop_last (DistributedSampler's drop_last) and drop_last
 * (DataLoader's) apart, all four combinations, against the samplers'
 * rules written out here for shuffle=False: indices 0..n-1, padded with
 * its head to a multiple of world (or cut to one), rank r takes
 * r, r + world, ...; the loader then drops a last partial batch.
 */
static void check_shard_and_batch_drop(uint32_t shard_drop, uint32_t drop)
{
	/* 18 padded or 17 cut: batches of 6 keep the padding or drop a tail */
	const uint32_t world = 7, rank = 6, bs = 6;
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	uint32_t total, len, keep, i, want[64];
	struct run r;

	total = shard_drop ? g_n / world * world :
			     (g_n + world - 1) / world * world;
	for (len = 0, i = rank; i < total; i += world)
		want[len++] = i % g_n;	/* the padding repeats the head */
	keep = drop ? len / bs * bs : len;

	config(&cfg, 0);
	cfg.batch_size = bs;
	cfg.shuffle = 0;
	cfg.world = world;
	cfg.rank = rank;
	cfg.shard_drop_last = shard_drop;
	cfg.drop_last = drop;
	CHECK(dlc_loader_create(&cfg, g_idx, &l) == 0, "create");
	if (!l)
		return;
	CHECK_EQ(dlc_loader_epoch_samples(l), keep);
	CHECK_EQ(dlc_loader_epoch_batches(l), drop ? len / bs : (len + bs - 1) / bs);
	run_epoch(l, 0, 0, &r);
	CHECK_EQ(r.nids, keep);
	CHECK(memcmp(r.ids, want, keep * 4) == 0, "the rank's samples");
	CHECK_EQ(r.nb, drop ? len / bs : (len + bs - 1) / bs);
	dlc_loader_destroy(l);
}

/*
 * Per sample of one batch: its pixels' hash, into @h (by sample ID), or
 * checked against it (@check).
 */
static void sample_hashes(const struct dlc_batch *b, uint64_t *h, int check)
{
	size_t one = (size_t)3 * SIDE * SIDE;
	uint32_t i;

	for (i = 0; i < b->count; i++) {
		uint64_t x = t_fnv(b->data + i * one, one, T_FNV_INIT);

		if (!check)
			h[b->ids[i]] = x;
		else
			CHECK(h[b->ids[i]] == x, "sample %u: pixels differ from "
			      "the uninterrupted epoch's", b->ids[i]);
	}
}

/*
 * Elastic resume, in order (shuffle 0, so the reference is arithmetic):
 * 3 ranks took 2 batches each of epoch 1 (done = 2 * B * 3); 2 ranks
 * resume. Rank r gets done + r, done + r + 2, ... of the rest, padded
 * with its head, its pixels those of an uninterrupted epoch; then epoch
 * 2 is whole. Past the data set, nothing; bad calls are -EINVAL/-EBUSY.
 */
static void check_elastic(void)
{
	const uint32_t w = 2, done = 2 * B * 3;
	uint64_t *h = calloc(g_n, sizeof(*h));
	struct dlc_loader *l = NULL;
	uint32_t m = g_n - done, share = (m + w - 1) / w, got, k;
	struct dlc_config cfg;
	struct dlc_batch *b;
	int ret;

	config(&cfg, 1 << 20);
	cfg.shuffle = 0;
	cfg.drop_last = 0;
	CHECK(h && dlc_loader_create(&cfg, g_idx, &l) == 0, "world 1");
	if (!l || !h)
		goto out;
	CHECK_EQ(dlc_loader_start_epoch(l, 1, 0), 0);
	while (dlc_next_batch(l, &b) == 0) {
		sample_hashes(b, h, 0);
		CHECK_EQ(dlc_release_batch(l, b), 0);
	}
	dlc_loader_destroy(l);
	l = NULL;
	cfg.world = w;
	for (cfg.rank = 0; cfg.rank < w; cfg.rank++) {
		CHECK(dlc_loader_create(&cfg, g_idx, &l) == 0, "rank %u", cfg.rank);
		if (!l)
			continue;
		CHECK_EQ(dlc_loader_resume_epoch(l, 1, done), 0);
		got = 0;
		while ((ret = dlc_next_batch(l, &b)) == 0) {
			CHECK_EQ(b->seq, got / B);
			for (k = 0; k < b->count; k++, got++)
				CHECK(b->ids[k] == done + (cfg.rank + got * w) % m,
				      "rank %u, sample %u of the rest: %u", cfg.rank,
				      got, b->ids[k]);
			sample_hashes(b, h, 1);
			CHECK_EQ(dlc_release_batch(l, b), 0);
		}
		CHECK_EQ(ret, -ENODATA);
		CHECK_EQ(got, share);
		/* The next epoch is whole, this world's. */
		CHECK_EQ(dlc_loader_start_epoch(l, 2, 0), 0);
		got = 0;
		while (dlc_next_batch(l, &b) == 0) {
			for (k = 0; k < b->count; k++, got++)
				CHECK_EQ(b->ids[k], (cfg.rank + got * w) % g_n);
			CHECK_EQ(dlc_release_batch(l, b), 0);
		}
		CHECK_EQ(got, dlc_loader_epoch_samples(l));
		/* All used (or more): an empty run. */
		CHECK_EQ(dlc_loader_resume_epoch(l, 1, (uint64_t)g_n * 5), 0);
		CHECK_EQ(dlc_next_batch(l, &b), -ENODATA);
		CHECK_EQ(dlc_loader_resume_epoch(l, UINT32_MAX, 0), -EINVAL);
		CHECK_EQ(dlc_loader_resume_epoch(l, 3, 0), 0);
		CHECK(dlc_next_batch(l, &b) == 0, "a batch of epoch 3");
		CHECK_EQ(dlc_loader_resume_epoch(l, 3, 0), 0);
		CHECK_EQ(dlc_release_batch(l, b), 0);
		dlc_loader_destroy(l);
		l = NULL;
	}
out:
	dlc_loader_destroy(l);
	free(h);
}

/* Overwrite the samples of ids [@from, @to] with bytes that are no JPEG. */
static void corrupt(const char *dir, struct dlc_index *idx, uint32_t from,
		    uint32_t to)
{
	char path[4096];
	uint32_t id;

	for (id = from; id <= to; id++) {
		snprintf(path, sizeof(path), "%s/%s", dir,
			 dlc_index_relpath(idx, id));
		CHECK(t_write_file(path, "not a jpeg at all", 17) == 0,
		      "corrupt %s", path);
	}
}

/*
 * DLC_ON_ERROR_SKIP over a data set where whole batches' worth of
 * consecutive samples are corrupt: never an empty batch; the batches are
 * the grid minus the failed samples, the same on a rerun and on resume.
 */
static void check_skip_never_empty(const char *dir, struct dlc_index *idx)
{
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	struct dlc_stats st;
	struct run r, r2;
	uint32_t i, k;

	config(&cfg, 0);
	cfg.shuffle = 0;
	cfg.log = t_log_capture;
	cfg.on_error = DLC_ON_ERROR_SKIP;
	CHECK(dlc_loader_create(&cfg, idx, &l) == 0, "create");
	if (!l)
		return;
	run_epoch(l, 0, 0, &r);
	/* Batches 1 and 2 (ids 16..47) and 7 (112..119) are all corrupt. */
	CHECK_EQ(r.nb, 5);
	for (i = 0; i < 5 && i < r.nb; i++) {
		static const uint64_t seq[] = { 0, 3, 4, 5, 6 };

		CHECK(r.seq[i] == seq[i], "batch %u has seq %llu, want %llu", i,
		      (unsigned long long)r.seq[i], (unsigned long long)seq[i]);
		CHECK_EQ(r.count[i], B);
	}
	for (i = 0, k = 0; i < g_n; i++)
		if (!((i >= 16 && i <= 47) || i >= 112))
			CHECK(k < r.nids && r.ids[k++] == i, "sample %u", i);
	CHECK_EQ(k, r.nids);
	CHECK_EQ(dlc_loader_stats(l, &st, sizeof(st)), 0);
	CHECK_EQ(st.skipped, 40);

	/* Resume at an empty batch gives the rest of the same batches. */
	run_epoch(l, 0, 1 * B, &r2);
	CHECK(r2.nb == 4 && memcmp(r2.hash, r.hash + 1, 4 * 8) == 0,
	      "resume at batch 1 gives batches 3..6");
	run_epoch(l, 0, 7 * B, &r2);
	CHECK(r2.nb == 0, "resume at the corrupt last batch: none");

	/* Shuffled: the same batches twice, and on resume; none empty. */
	dlc_loader_destroy(l);
	l = NULL;
	cfg.shuffle = 1;
	CHECK(dlc_loader_create(&cfg, idx, &l) == 0, "create shuffled");
	if (!l)
		return;
	run_epoch(l, 3, 0, &r);
	CHECK_EQ(r.nids, g_n - 40);
	run_epoch(l, 3, 0, &r2);
	CHECK(r.nb == r2.nb && memcmp(r.hash, r2.hash, sizeof(r.hash)) == 0,
	      "the same batches twice");
	run_epoch(l, 3, 2 * B, &r2);
	for (i = 0; i < r.nb && r.seq[i] < 2; i++)
		;
	CHECK(r2.nb == r.nb - i &&
	      memcmp(r2.hash, r.hash + i, r2.nb * 8) == 0,
	      "resume after 2 batches gives the same batches");
	dlc_loader_destroy(l);
}

/*
 * DLC_ON_ERROR_SUBSTITUTE drops a sample with no decodable neighbour:
 * dropped for real, never delivered with its undecoded slot.
 */
static void check_substitute_fallback(const char *dir, struct dlc_index *idx)
{
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	struct dlc_stats st;
	struct run r;
	uint32_t i;

	config(&cfg, 0);
	cfg.shuffle = 0;
	cfg.log = t_log_capture;
	cfg.on_error = DLC_ON_ERROR_SUBSTITUTE;
	CHECK(dlc_loader_create(&cfg, idx, &l) == 0, "create");
	if (!l)
		return;
	run_epoch(l, 0, 0, &r);
	for (i = 0; i < r.nids; i++)
		CHECK(!((r.ids[i] >= 16 && r.ids[i] <= 47) || r.ids[i] >= 112),
		      "corrupt sample %u delivered", r.ids[i]);
	CHECK_EQ(dlc_loader_stats(l, &st, sizeof(st)), 0);
	/* ids 16..31 have only corrupt samples among their 16 next. */
	CHECK_EQ(st.skipped, 16);
	CHECK_EQ(st.substituted, 24);
	CHECK_EQ(r.nids, g_n - 16);
	for (i = 0; i < r.nb; i++)
		CHECK(r.seq[i] != 1, "the batch of skipped samples is not delivered");
	dlc_loader_destroy(l);
}

static void check_corrupt_runs(void)
{
	char *dir = t_mkdtemp(NULL);
	struct dlc_index *idx = NULL;

	if (!dir || t_make_dataset(dir, 3, 40) || dlc_index_build(dir, &idx)) {
		CHECK(0, "a second data set");
		goto out;
	}
	corrupt(dir, idx, 16, 47);
	corrupt(dir, idx, 112, 119);
	T_RUN(check_skip_never_empty, dir, idx);
	T_RUN(check_substitute_fallback, dir, idx);
out:
	dlc_index_free(idx);
	if (dir)
		t_rmtree(dir);
	free(dir);
}

/* The config's size, and its padding. */
static void check_config_versions(void)
{
	struct {
		struct dlc_config c;
		uint64_t newer[2];
	} big;
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;

	config(&cfg, 0);
	cfg.log = t_log_capture;
	CHECK_EQ(cfg.size, sizeof(struct dlc_config));
	CHECK_EQ(offsetof(struct dlc_config, shard_drop_last),
		 DLC_CONFIG_SIZE_VER0);

	t_logbuf[0] = 0;
	cfg.pad2 = 1;
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), -EINVAL);
	CHECK(strstr(t_logbuf, "pad2"), "logged: %s", t_logbuf);
	cfg.pad2 = 0;
	t_logbuf[0] = 0;
	cfg.read_timeout_ms = DLC_READ_TIMEOUT_MAX_MS + 1;
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), -EINVAL);
	CHECK(strstr(t_logbuf, "read_timeout_ms"), "logged: %s", t_logbuf);
	cfg.read_timeout_ms = 0;

	t_logbuf[0] = 0;
	cfg.size = 0;
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), -EINVAL);
	CHECK(strstr(t_logbuf, "size: 0 is below"), "logged: %s", t_logbuf);
	cfg.size = DLC_CONFIG_SIZE_VER0 - 4;
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), -EINVAL);

	/* An older caller: fields past its size take their defaults. */
	cfg.size = DLC_CONFIG_SIZE_VER0;
	cfg.world = 7;
	cfg.rank = 6;
	cfg.shard_drop_last = 1;	/* not the caller's: ignored */
	cfg.read_timeout_ms = 1;	/* likewise: 1 ms would time out */
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), 0);
	if (l)
		CHECK_EQ(dlc_loader_epoch_samples(l), (g_n + 6) / 7);
	dlc_loader_destroy(l);
	l = NULL;

	/* A newer caller: a zero tail is fine, a set one is not. */
	memset(&big, 0, sizeof(big));
	config(&big.c, 0);
	big.c.log = t_log_capture;
	big.c.size = sizeof(big);
	CHECK_EQ(dlc_loader_create(&big.c, g_idx, &l), 0);
	dlc_loader_destroy(l);
	l = NULL;
	t_logbuf[0] = 0;
	big.newer[1] = 1;
	CHECK_EQ(dlc_loader_create(&big.c, g_idx, &l), -EINVAL);
	CHECK(strstr(t_logbuf, "is not zero"), "logged: %s", t_logbuf);
	CHECK(l == NULL, "no loader");
}

/* dlc_loader_stats() copies as much as the caller's struct holds. */
static void check_stats_size(void)
{
	struct {
		struct dlc_stats s;
		uint64_t newer[3];
	} big;
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	struct dlc_stats st;
	struct run r;

	config(&cfg, 0);
	CHECK(dlc_loader_create(&cfg, g_idx, &l) == 0, "create");
	if (!l)
		return;
	run_epoch(l, 0, 0, &r);
	memset(&big, 0xa5, sizeof(big));
	CHECK_EQ(dlc_loader_stats(l, &big.s, sizeof(big)), 0);
	CHECK_EQ(big.s.batches, r.nb);
	CHECK_EQ(big.s.misses, g_n);
	CHECK(!big.newer[0] && !big.newer[1] && !big.newer[2],
	      "counters past ours read as zero");
	memset(&st, 0xa5, sizeof(st));
	CHECK_EQ(dlc_loader_stats(l, &st, offsetof(struct dlc_stats, hit_bytes)), 0);
	CHECK_EQ(st.misses, g_n);
	CHECK(st.hit_bytes == 0xa5a5a5a5a5a5a5a5ULL &&
	      st.checksum_errors == 0xa5a5a5a5a5a5a5a5ULL,
	      "nothing written past an older caller's size");
	CHECK_EQ(dlc_loader_stats(l, &st, 0), -EINVAL);
	CHECK_EQ(dlc_loader_stats(l, &st, 12), -EINVAL);
	CHECK_EQ(dlc_loader_stats(l, NULL, sizeof(st)), -EINVAL);
	dlc_loader_destroy(l);
}

/*
 * decode_threads = 0 follows the CPU affinity: in a child bound to one
 * CPU the loader runs one decode thread.
 */
static void check_default_threads(void)
{
	struct dlc_config cfg;
	int st = 0;
	pid_t pid;

	config(&cfg, 0);
	cfg.decode_threads = 0;
	pid = fork();
	if (pid == 0) {
		struct dlc_loader *l = NULL;
		cpu_set_t set;
		uint32_t n;

		CPU_ZERO(&set);
		CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			_exit(100);
		if (dlc_loader_create(&cfg, g_idx, &l))
			_exit(101);
		n = dlc_loader_decode_threads(l);
		dlc_loader_destroy(l);
		_exit(n > 99 ? 99 : (int)n);
	}
	CHECK(pid > 0, "fork");
	if (pid <= 0)
		return;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1,
	      "one CPU: %d decode threads (100: affinity, 101: create)",
	      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

int main(void)
{
	int ret;

	g_dir = t_mkdtemp(NULL);
	if (!g_dir || t_make_dataset(g_dir, 3, 40)) {
		printf("cannot make a data set\n");
		return 1;
	}
	CHECK(dlc_index_build(g_dir, &g_idx) == 0, "index");
	if (!g_idx)
		return t_done("test_loader");
	g_n = dlc_index_count(g_idx);
	CHECK(g_n == 120, "120 samples, got %u", g_n);

	T_RUN(check_order_and_pixels);
	T_RUN(check_hold_limit);
	T_RUN(check_stale_release);
	T_RUN(check_hold_across_epochs);
	T_RUN(check_foreign_release);
	T_RUN(check_determinism_resume);
	T_RUN(check_cache);
	T_RUN(check_nhwc);
	T_RUN(check_ddp);
	T_RUN(check_elastic);
	T_RUN_AS("shard_pad_batch_keep", check_shard_and_batch_drop, 0, 0);
	T_RUN_AS("shard_pad_batch_drop", check_shard_and_batch_drop, 0, 1);
	T_RUN_AS("shard_drop_batch_keep", check_shard_and_batch_drop, 1, 0);
	T_RUN_AS("shard_drop_batch_drop", check_shard_and_batch_drop, 1, 1);
	check_corrupt_runs();
	T_RUN(check_config_versions);
	T_RUN(check_stats_size);
	T_RUN(check_default_threads);

	ret = t_done("test_loader");
	dlc_index_free(g_idx);
	t_rmtree(g_dir);
	free(g_dir);
	return ret;
}
