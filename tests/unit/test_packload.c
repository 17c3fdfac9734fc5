// SPDX-License-Identifier: MIT
/*
 * The loader on a pack (.dlp), against the loader on the files it was
 * made from: a pack keeps the DCT coefficients, and the MCU-exact decode
 * of a pack's sample is bit-identical to decoding the source at the same
 * DCT scale and cropping (test_rst holds both to djpeg), so every batch
 * must be the same, pixel for pixel, label for label, in every epoch,
 * train and eval, with and without a cache. A sample whose bytes are
 * damaged in the pack fails as corrupt, named "RELPATH in PACK", and only
 * it; a sample the pack kept as it was (a truncated JPEG) fails as it
 * does from the tree; the CRC-32C stands for the rest of the file when
 * validation is on, and nothing stands for it when it is off.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlcache.h"
#include "internal.h"
#include "pack.h"
#include "packwrite.h"
#include "helpers/loadercmp.h"
#include "helpers/testutil.h"

#define SIDE	64
#define B	8

static char *tmp;
static char root[1024], idxpath[1100], packpath[1100];
static struct dlc_index *g_src, *g_pack;
static uint32_t g_n, g_truncated;

/* A set of 3 classes, one gray image, one truncated JPEG, and its pack. */
static int setup(void)
{
	uint32_t i;

	tmp = t_mkdtemp(NULL);
	if (!tmp || strlen(tmp) > 900)
		return -1;
	snprintf(root, sizeof(root), "%s/set", tmp);
	if (t_make_mixed_set(root, 10))
		return -1;
	if (dlc_index_build(root, &g_src))
		return -1;
	g_n = dlc_index_count(g_src);
	for (i = 0; i < g_n; i++)
		if (strstr(dlc_index_relpath(g_src, i), "zcut"))
			g_truncated = i;
	snprintf(idxpath, sizeof(idxpath), "%s/set.idx", tmp);
	snprintf(packpath, sizeof(packpath), "%s/set.dlp", tmp);
	if (dlc_index_save(g_src, idxpath) ||
	    t_pack_tree(g_src, root, packpath))
		return -1;
	return dlc_index_load(packpath, &g_pack);
}

static void config(struct dlc_config *cfg, uint64_t cache, int eval)
{
	dlc_config_init(cfg);
	if (eval)
		dlc_transform_default(&cfg->transform, DLC_TRANSFORM_EVAL);
	cfg->batch_size = B;
	cfg->transform.out_w = SIDE;
	cfg->transform.out_h = SIDE;
	if (eval)
		cfg->transform.resize = SIDE * 256 / 224;
	cfg->seed = 11;
	cfg->window = 24;
	cfg->queue_depth = 8;
	cfg->nbatches = 3;
	cfg->decode_threads = 2;
	cfg->cache_bytes = cache;
	cfg->backend = DLC_BACKEND_INPROCESS;
	cfg->on_error = DLC_ON_ERROR_SKIP;
	cfg->log = t_log_capture;
}

/* Every batch of @epochs epochs of the two loaders, side by side. */
static void same_batches(const char *what, uint64_t cache, int eval,
			 uint32_t epochs)
{
	struct dlc_loader *a = NULL, *b = NULL;
	struct dlc_config cfg;
	uint32_t e;

	config(&cfg, cache, eval);
	CHECK(dlc_loader_create(&cfg, g_src, &a) == 0, "%s: files", what);
	CHECK(dlc_loader_create(&cfg, g_pack, &b) == 0, "%s: pack", what);
	if (!a || !b)
		goto out;
	for (e = 0; e < epochs; e++)
		CHECK(t_same_epoch(a, b, e, (size_t)3 * SIDE * SIDE, what) > 0,
		      "%s: epoch %u: no batch", what, e);
out:
	dlc_loader_destroy(a);
	dlc_loader_destroy(b);
}

static void test_same_train(void)
{
	same_batches("train, no cache", 0, 0, 3);
}

static void test_same_train_cached(void)
{
	/* half the set: hits come out of the cache, misses from the pack */
	same_batches("train, cache", dlc_index_total_bytes(g_pack) / 2, 0, 3);
}

static void test_same_eval(void)
{
	same_batches("eval", 0, 1, 1);
}

/* The pack's kept-as-is truncated sample fails as it does from files. */
static void test_kept_truncated(void)
{
	struct dlc_loader *l = NULL;
	struct dlc_error_info ei;
	struct dlc_config cfg;
	struct dlc_pack_entry e;
	struct dlc_batch *b;
	uint32_t seen = 0;
	int ret;

	CHECK_EQ(dlc_pack_entry(dlc_index_pack(g_pack), g_truncated, &e), 0);
	CHECK(e.kind == DLC_PACK_PLAIN, "the truncated file is kept as is");
	config(&cfg, 0, 0);
	t_log_clear();
	CHECK_EQ(dlc_loader_create(&cfg, g_pack, &l), 0);
	if (!l)
		return;
	CHECK_EQ(dlc_loader_start_epoch(l, 0, 0), 0);
	while ((ret = dlc_next_batch(l, &b)) == 0) {
		seen += b->count;
		dlc_release_batch(l, b);
	}
	CHECK_EQ(ret, -ENODATA);
	CHECK(seen == g_n - 1, "%u of %u samples delivered", seen, g_n);
	CHECK_EQ(dlc_loader_last_error(l, &ei), 0);
	CHECK(ei.sample == g_truncated && ei.kind == DLC_ERR_TRUNCATED,
	      "last error: sample %u kind %s", ei.sample,
	      dlc_error_kind_name(ei.kind));
	CHECK(strstr(ei.path, "zcut.jpg in ") && strstr(ei.path, "set.dlp"),
	      "named: %s", ei.path);
	dlc_loader_destroy(l);
}

/* A copy of the pack with one restart-indexed sample's bytes damaged. */
static struct dlc_index *damaged(uint32_t *victim, char *path, size_t plen)
{
	const struct dlc_pack *p = dlc_index_pack(g_pack);
	struct dlc_pack_entry e;
	struct dlc_index *idx = NULL;
	uint8_t *bytes;
	size_t len;
	uint32_t i;

	for (i = 0; i < g_n; i++)
		if (!dlc_pack_entry(p, i, &e) && e.kind == DLC_PACK_RST)
			break;
	*victim = i;
	bytes = t_read_file(packpath, &len);
	if (!bytes || i == g_n)
		return NULL;
	/* the last byte before EOI: the last interval, below most crops */
	bytes[e.off + e.g.end_off - 1] ^= 0x5a;
	snprintf(path, plen, "%s/damaged.dlp", tmp);
	if (!t_write_file(path, bytes, len))
		dlc_index_load(path, &idx);
	free(bytes);
	return idx;
}

static void test_damaged_sample(void)
{
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	struct dlc_index *idx;
	struct dlc_batch *b;
	uint32_t victim, seen = 0;
	char path[4096];
	int ret;

	idx = damaged(&victim, path, sizeof(path));
	CHECK(idx != NULL, "damaged copy opens (the metadata is intact)");
	if (!idx)
		return;
	config(&cfg, 0, 0);
	t_log_clear();
	CHECK_EQ(dlc_loader_create(&cfg, idx, &l), 0);
	if (l) {
		CHECK_EQ(dlc_loader_start_epoch(l, 0, 0), 0);
		while ((ret = dlc_next_batch(l, &b)) == 0) {
			uint32_t i;

			for (i = 0; i < b->count; i++)
				CHECK(b->ids[i] != victim, "damaged sample %u delivered",
				      victim);
			seen += b->count;
			dlc_release_batch(l, b);
		}
		CHECK_EQ(ret, -ENODATA);
		/* the damaged one and the truncated one */
		CHECK(seen == g_n - 2, "%u of %u samples delivered", seen, g_n);
		CHECK(strstr(t_logbuf, "crc32c") != NULL &&
		      strstr(t_logbuf, dlc_index_relpath(idx, victim)) != NULL,
		      "the log names the sample and the check: %s", t_logbuf);
		dlc_loader_destroy(l);
	}
	/* validation off: nothing checks the bytes outside the crop */
	setenv("DLCACHE_VALIDATE", "off", 1);
	l = NULL;
	CHECK_EQ(dlc_loader_create(&cfg, idx, &l), 0);
	if (l) {
		struct dlc_stats st;

		CHECK_EQ(dlc_loader_start_epoch(l, 0, 0), 0);
		while (dlc_next_batch(l, &b) == 0)
			dlc_release_batch(l, b);
		CHECK_EQ(dlc_loader_stats(l, &st, sizeof(st)), 0);
		CHECK(st.validated == 0, "validate=off checked %llu samples",
		      (unsigned long long)st.validated);
		dlc_loader_destroy(l);
	}
	unsetenv("DLCACHE_VALIDATE");
	dlc_index_free(idx);
}

/* dlc_index_load_at() of a pack: a pack has no root to move. */
static void test_load_at(void)
{
	struct dlc_index *idx = NULL;

	CHECK(dlc_index_load_at(packpath, root, &idx) < 0,
	      "a pack with another root is refused");
	dlc_index_free(idx);
}

int main(void)
{
	if (setup()) {
		printf("FAIL setup\n");
		return 1;
	}
	T_RUN(test_same_train);
	T_RUN(test_same_train_cached);
	T_RUN(test_same_eval);
	T_RUN(test_kept_truncated);
	T_RUN(test_damaged_sample);
	T_RUN(test_load_at);
	dlc_index_free(g_src);
	dlc_index_free(g_pack);
	t_rmtree(tmp);
	return t_done("test_packload");
}
