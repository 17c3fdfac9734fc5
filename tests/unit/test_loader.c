// SPDX-License-Identifier: MIT
/*
 * The loader and its batch ring: batches in order with the epoch's
 * samples and labels, pixels equal to decoding each sample alone, the
 * same batches twice for a fixed seed, resume mid-epoch, DDP shards,
 * the hold limit, NCHW vs NHWC, and the cache's hit ratio.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dlcache.h"
#include "helpers/testutil.h"

#define B 16
#define SIDE 48

static uint64_t fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	while (n--)
		h = (h ^ *p++) * 1099511628211ULL;
	return h;
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

/* Run one epoch from @start; record a hash per batch. Returns batches. */
static uint32_t run_epoch(struct dlc_loader *l, uint32_t epoch, uint32_t start,
			  uint64_t *hashes, uint32_t *ids, uint32_t *nids)
{
	struct dlc_batch *b;
	uint32_t n = 0, i;
	int ret;

	CHECK(dlc_loader_start_epoch(l, epoch, start) == 0, "start epoch %u", epoch);
	*nids = 0;
	while ((ret = dlc_next_batch(l, &b)) == 0) {
		size_t bytes = (size_t)b->count * 3 * SIDE * SIDE;

		CHECK(b->seq == start / B + n, "batch seq %llu, want %u",
		      (unsigned long long)b->seq, start / B + n);
		CHECK(b->epoch == epoch, "batch epoch");
		hashes[n++] = fnv(b->data, bytes) ^ fnv((uint8_t *)b->labels,
							 b->count * 4);
		for (i = 0; i < b->count; i++)
			ids[(*nids)++] = b->ids[i];
		dlc_release_batch(l, b);
	}
	CHECK(ret == -ENODATA, "epoch end: %d", ret);
	CHECK(dlc_next_batch(l, &b) == -ENODATA, "after the end");
	return n;
}

int main(void)
{
	char *dir = t_mkdtemp(NULL);
	struct dlc_index *idx = NULL;
	struct dlc_loader *l = NULL, *l2 = NULL;
	struct dlc_config cfg;
	struct dlc_batch *held[3], *b;
	struct dlc_order_params op = { .seed = 7, .world = 1, .shuffle = 1 };
	struct dlc_stats st0, st1;
	uint64_t h1[16], h2[16], h3[16];
	uint32_t ids1[256], ids2[256], ids3[256], order[256];
	uint32_t n, nb, nb2, i, k1, k2, k3;
	int ret;

	if (!dir || t_make_dataset(dir, 3, 40)) {
		printf("cannot make a data set\n");
		return 1;
	}
	CHECK(dlc_index_build(dir, &idx) == 0, "index");
	if (!idx)
		return t_done("test_loader");
	n = dlc_index_count(idx);
	CHECK(n == 120, "120 samples, got %u", n);

	/* In order, with the epoch's samples and labels. */
	config(&cfg, dlc_index_total_bytes(idx) / 2);
	CHECK(dlc_loader_create(&cfg, idx, &l) == 0, "create");
	if (!l)
		return t_done("test_loader");
	CHECK(dlc_next_batch(l, &b) == -EINVAL, "next batch before an epoch");
	CHECK(dlc_loader_epoch_batches(l) == (n + B - 1) / B, "batches per epoch");
	nb = run_epoch(l, 0, 0, h1, ids1, &k1);
	CHECK(nb == (n + B - 1) / B, "%u batches", nb);
	CHECK(k1 == n, "%u samples", k1);
	op.epoch = 0;
	dlc_order_fill(n, &op, order, n);
	CHECK(memcmp(order, ids1, n * 4) == 0, "samples follow the epoch order");

	/* Pixels equal a decode of the sample alone, and labels match. */
	{
		struct dlc_decoder *dec;
		uint8_t *want = malloc(3 * SIDE * SIDE);
		char path[4096];

		dlc_decoder_create(0, &dec);
		CHECK(dlc_loader_start_epoch(l, 1, 0) == 0, "epoch 1");
		CHECK(dlc_next_batch(l, &b) == 0, "first batch of epoch 1");
		for (i = 0; i < b->count; i++) {
			size_t len;
			uint8_t *jpg;

			snprintf(path, sizeof(path), "%s/%s", dir,
				 dlc_index_relpath(idx, b->ids[i]));
			jpg = t_read_file(path, &len);
			CHECK(jpg && dlc_decoder_sample(dec, jpg, len, &cfg.transform,
							cfg.seed, 1, b->ids[i],
							cfg.layout, want, NULL) == 0,
			      "reference decode");
			CHECK(memcmp(want, b->data + (size_t)i * 3 * SIDE * SIDE,
				     3 * SIDE * SIDE) == 0,
			      "sample %u of the batch differs from its own decode", i);
			CHECK(b->labels[i] == dlc_index_label(idx, b->ids[i]),
			      "label of sample %u", i);
			free(jpg);
		}
		dlc_release_batch(l, b);
		dlc_decoder_destroy(dec);
		free(want);
	}

	/* The hold limit: nbatches - 1 at once; an epoch can't restart under them. */
	CHECK(dlc_loader_start_epoch(l, 2, 0) == 0, "epoch 2");
	CHECK(dlc_next_batch(l, &held[0]) == 0, "hold 1");
	CHECK(dlc_next_batch(l, &held[1]) == 0, "hold 2");
	CHECK(dlc_next_batch(l, &held[2]) == -EBUSY, "hold 3 refused");
	CHECK(dlc_loader_start_epoch(l, 3, 0) == -EBUSY, "restart while holding");
	dlc_release_batch(l, held[0]);
	dlc_release_batch(l, held[0]);	/* twice: ignored */
	CHECK(dlc_next_batch(l, &held[2]) == 0, "hold after a release");
	dlc_release_batch(l, held[1]);
	dlc_release_batch(l, held[2]);
	CHECK(dlc_loader_start_epoch(l, 0, 5 * B + 1) == 0,
	      "a start off the batch grid is accepted");
	CHECK(dlc_next_batch(l, &b) == 0 && b->ids[0] == ids1[5 * B + 1],
	      "the run begins at its start");
	dlc_release_batch(l, b);
	CHECK(dlc_loader_start_epoch(l, 0, n + 1) == -EINVAL, "start past the end");

	/* The same seed gives the same batches; resume gives the tail. */
	CHECK(dlc_loader_create(&cfg, idx, &l2) == 0, "second loader");
	nb2 = run_epoch(l2, 0, 0, h2, ids2, &k2);
	CHECK(nb2 == nb && memcmp(h1, h2, nb * 8) == 0,
	      "a fixed seed gives the same batches");
	nb2 = run_epoch(l2, 0, 3 * B, h3, ids3, &k3);
	CHECK(nb2 == nb - 3 && memcmp(h1 + 3, h3, nb2 * 8) == 0,
	      "resume after 3 batches gives the same batches");
	CHECK(memcmp(ids1 + 3 * B, ids3, k3 * 4) == 0, "resumed samples");
	nb2 = run_epoch(l2, 1, 0, h2, ids2, &k2);
	CHECK(memcmp(ids1, ids2, n * 4) != 0, "epochs differ in order");
	dlc_loader_destroy(l2);
	l2 = NULL;

	/* The cache: later epochs hit about half the bytes. */
	dlc_loader_stats(l, &st0);
	run_epoch(l, 4, 0, h2, ids2, &k2);
	dlc_loader_stats(l, &st1);
	{
		double hb = (double)(st1.hit_bytes - st0.hit_bytes);
		double mb = (double)(st1.miss_bytes - st0.miss_bytes);
		uint64_t seen = st1.hits + st1.misses - st0.hits - st0.misses;

		CHECK(seen == n, "hits + misses = %llu", (unsigned long long)seen);
		CHECK(hb / (hb + mb) > 0.40 && hb / (hb + mb) <= 0.5 + 1e-9,
		      "byte hit ratio %.3f with half the bytes cached", hb / (hb + mb));
		CHECK(st1.cache_used <= cfg.cache_bytes, "cache over capacity");
		CHECK(st1.bytes_read - st0.bytes_read == st1.miss_bytes - st0.miss_bytes,
		      "bytes read equal missed bytes");
	}
	dlc_loader_destroy(l);
	l = NULL;

	/* NHWC holds the same pixels as NCHW, transposed. */
	{
		uint8_t *nchw = malloc(3 * SIDE * SIDE);
		uint32_t y, x, c;

		config(&cfg, 0);
		CHECK(dlc_loader_create(&cfg, idx, &l) == 0, "nchw loader");
		dlc_loader_start_epoch(l, 0, 0);
		CHECK(dlc_next_batch(l, &b) == 0, "nchw batch");
		memcpy(nchw, b->data, 3 * SIDE * SIDE);
		dlc_release_batch(l, b);
		dlc_loader_destroy(l);
		cfg.layout = DLC_LAYOUT_NHWC;
		CHECK(dlc_loader_create(&cfg, idx, &l) == 0, "nhwc loader");
		dlc_loader_start_epoch(l, 0, 0);
		CHECK(dlc_next_batch(l, &b) == 0, "nhwc batch");
		for (c = 0; c < 3; c++)
			for (y = 0; y < SIDE; y++)
				for (x = 0; x < SIDE; x++)
					if (nchw[(c * SIDE + y) * SIDE + x] !=
					    b->data[(y * SIDE + x) * 3 + c]) {
						CHECK(0, "NHWC pixel (%u,%u,%u)", c, y, x);
						c = 3, y = SIDE, x = SIDE;
					}
		dlc_release_batch(l, b);
		dlc_loader_destroy(l);
		l = NULL;
		free(nchw);
	}

	/* DDP: two ranks see disjoint halves that cover the data set. */
	{
		uint8_t *seen = calloc(n, 1);

		config(&cfg, 0);
		cfg.world = 2;
		for (cfg.rank = 0; cfg.rank < 2; cfg.rank++) {
			CHECK(dlc_loader_create(&cfg, idx, &l) == 0, "rank %u", cfg.rank);
			CHECK(dlc_loader_epoch_samples(l) == n / 2, "rank samples");
			run_epoch(l, 0, 0, h2, ids2, &k2);
			CHECK(k2 == n / 2, "rank %u got %u samples", cfg.rank, k2);
			for (i = 0; i < k2; i++) {
				CHECK(!seen[ids2[i]], "sample %u on both ranks", ids2[i]);
				seen[ids2[i]] = 1;
			}
			dlc_loader_destroy(l);
			l = NULL;
		}
		for (i = 0; i < n; i++)
			CHECK(seen[i], "sample %u on no rank", i);
		free(seen);
	}

	/* drop_last: only whole batches. */
	config(&cfg, 0);
	cfg.drop_last = 1;
	CHECK(dlc_loader_create(&cfg, idx, &l) == 0, "drop_last loader");
	nb = run_epoch(l, 0, 0, h2, ids2, &k2);
	CHECK(nb == n / B && k2 == n / B * B, "drop_last: %u batches", nb);
	dlc_loader_destroy(l);

	ret = t_done("test_loader");
	dlc_index_free(idx);
	t_rmtree(dir);
	free(dir);
	return ret;
}
