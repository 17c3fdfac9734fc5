// SPDX-License-Identifier: MIT
/*
 * Broken data and bad configuration: corrupt, truncated, empty, non-JPEG,
 * oversized (a decompression bomb header), vanished and unreadable files
 * under each error policy (skip, substitute, fail), and config fields
 * that are out of range. Every case ends in a counted error that names
 * the sample's path, never a crash or a hang.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlcache.h"
#include "helpers/testutil.h"

#define PER_CLASS 20

/* Overwrite good JPEGs in class 1 with the broken kinds. */
static void break_files(const char *dir)
{
	char path[4096];
	size_t len, i;
	uint8_t *good;

	snprintf(path, sizeof(path), "%s/class01/img0000.jpg", dir);
	good = t_read_file(path, &len);
	if (!good) {
		CHECK(0, "read a good JPEG");
		return;
	}
	/* img0001: empty */
	snprintf(path, sizeof(path), "%s/class01/img0001.jpg", dir);
	t_write_file(path, "", 0);
	/* img0002: a GIF named .jpg: no format the decoder reads */
	snprintf(path, sizeof(path), "%s/class01/img0002.jpg", dir);
	t_write_file(path, "GIF89a\x01\0\x01\0\0\0\0;", 14);
	/* img0003: truncated in the middle of the scan */
	snprintf(path, sizeof(path), "%s/class01/img0003.jpg", dir);
	t_write_file(path, good, len / 2);
	/* img0004: the entropy-coded data overwritten with marker junk */
	{
		uint8_t *bad = malloc(len);

		memcpy(bad, good, len);
		for (i = len / 3; i < len / 3 + 64 && i + 2 < len; i += 2) {
			bad[i] = 0xff;
			bad[i + 1] = 0xd9 - (uint8_t)(i & 1);
		}
		for (i = len / 3 + 64; i < len - 2; i++)
			bad[i] = (uint8_t)(i * 7);
		snprintf(path, sizeof(path), "%s/class01/img0004.jpg", dir);
		t_write_file(path, bad, len);
		free(bad);
	}
	/* img0005: a header that claims 40000 x 40000 pixels */
	{
		uint8_t *bomb = malloc(len);

		memcpy(bomb, good, len);
		for (i = 0; i + 9 < len; i++)
			if (bomb[i] == 0xff && (bomb[i + 1] == 0xc0 || bomb[i + 1] == 0xc2)) {
				bomb[i + 5] = 40000 >> 8;
				bomb[i + 6] = 40000 & 0xff;
				bomb[i + 7] = 40000 >> 8;
				bomb[i + 8] = 40000 & 0xff;
				break;
			}
		snprintf(path, sizeof(path), "%s/class01/img0005.jpg", dir);
		t_write_file(path, bomb, len);
		free(bomb);
	}
	free(good);
}

/* After indexing: one file vanishes, one becomes a directory. */
static void break_after_index(const char *dir)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/class01/img0006.jpg", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/class01/img0007.jpg", dir);
	unlink(path);
	mkdir(path, 0755);
}

#define NBAD 7	/* class01/img0001 .. img0007 */

static void config(struct dlc_config *cfg, uint32_t on_error)
{
	dlc_config_init(cfg);
	cfg->batch_size = 8;
	cfg->transform.out_w = cfg->transform.out_h = 32;
	cfg->window = 16;
	cfg->queue_depth = 4;
	cfg->decode_threads = 2;
	cfg->on_error = on_error;
	cfg->cache_bytes = 1 << 20;
	cfg->log = t_log_capture;
	cfg->log_level = DLC_LOG_WARN;
}

static uint32_t run(struct dlc_loader *l, uint32_t epoch, int *err,
		    uint8_t *seen, uint32_t n)
{
	struct dlc_batch *b;
	uint32_t images = 0, i;
	int ret;

	CHECK(dlc_loader_start_epoch(l, epoch, 0) == 0, "start");
	while ((ret = dlc_next_batch(l, &b)) == 0) {
		images += b->count;
		for (i = 0; i < b->count; i++)
			if (b->ids[i] < n)
				seen[b->ids[i]] = 1;
		CHECK_EQ(dlc_release_batch(l, b), 0);
	}
	*err = ret;
	return images;
}

static void test_policies(const char *dir, struct dlc_index *idx)
{
	uint32_t n = dlc_index_count(idx), images, i, bad_lo = PER_CLASS + 1;
	uint8_t *seen = calloc(n, 1);
	struct dlc_error_info ei;
	struct dlc_loader *l;
	struct dlc_config cfg;
	struct dlc_stats st;
	int err;

	/* Skip: every bad sample is dropped, counted and named. */
	config(&cfg, DLC_ON_ERROR_SKIP);
	t_logbuf[0] = 0;
	CHECK(dlc_loader_create(&cfg, idx, &l) == 0, "create skip");
	images = run(l, 0, &err, seen, n);
	CHECK(err == -ENODATA, "skip epoch ended with %d", err);
	CHECK(images == n - NBAD, "skip: %u images, want %u", images, n - NBAD);
	for (i = bad_lo; i < bad_lo + NBAD; i++)
		CHECK(!seen[i], "bad sample %u delivered", i);
	dlc_loader_stats(l, &st, sizeof(st));
	CHECK(st.errors == NBAD && st.skipped == NBAD, "skip: %llu errors",
	      (unsigned long long)st.errors);
	CHECK(st.errors_by_kind[DLC_ERR_EMPTY] == 1, "empty counted");
	CHECK(st.errors_by_kind[DLC_ERR_NOT_JPEG] == 1, "not-JPEG counted");
	CHECK(st.errors_by_kind[DLC_ERR_TRUNCATED] == 1, "truncated counted: %llu",
	      (unsigned long long)st.errors_by_kind[DLC_ERR_TRUNCATED]);
	CHECK(st.errors_by_kind[DLC_ERR_CORRUPT] == 1, "corrupt counted: %llu",
	      (unsigned long long)st.errors_by_kind[DLC_ERR_CORRUPT]);
	CHECK(st.errors_by_kind[DLC_ERR_TOO_LARGE] == 1, "bomb counted");
	CHECK(st.errors_by_kind[DLC_ERR_MISSING] == 1, "vanished counted");
	CHECK(st.errors_by_kind[DLC_ERR_IO] == 1, "directory counted as I/O");
	CHECK(strstr(t_logbuf, "class01/img0003.jpg") && strstr(t_logbuf, "truncated"),
	      "log names the truncated file:\n%s", t_logbuf);
	CHECK(strstr(t_logbuf, "class01/img0006.jpg") && strstr(t_logbuf, "missing"),
	      "log names the vanished file");
	CHECK(dlc_loader_last_error(l, &ei) == 0 && strstr(ei.path, dir) &&
	      ei.err < 0 && ei.msg[0], "last error has a path and message");
	/* The epoch runs again the same way: nothing was left broken. */
	images = run(l, 1, &err, seen, n);
	CHECK(err == -ENODATA && images == n - NBAD, "skip, second epoch");
	dlc_loader_destroy(l);

	/* Substitute: full batches, other samples in the bad ones' slots. */
	config(&cfg, DLC_ON_ERROR_SUBSTITUTE);
	memset(seen, 0, n);
	CHECK(dlc_loader_create(&cfg, idx, &l) == 0, "create substitute");
	images = run(l, 0, &err, seen, n);
	CHECK(err == -ENODATA, "substitute epoch ended with %d", err);
	CHECK(images == n, "substitute: %u images, want %u", images, n);
	for (i = bad_lo; i < bad_lo + NBAD; i++)
		CHECK(!seen[i], "bad sample %u delivered as itself", i);
	dlc_loader_stats(l, &st, sizeof(st));
	CHECK(st.substituted == NBAD, "substituted %llu",
	      (unsigned long long)st.substituted);
	dlc_loader_destroy(l);

	/* Fail: the error reaches the caller, then a new epoch still works. */
	config(&cfg, DLC_ON_ERROR_FAIL);
	CHECK(dlc_loader_create(&cfg, idx, &l) == 0, "create fail");
	images = run(l, 0, &err, seen, n);
	CHECK(err < 0 && err != -ENODATA, "fail policy returned %d", err);
	CHECK(dlc_loader_last_error(l, &ei) == 0 && strstr(ei.path, "class01/"),
	      "fail: last error names a bad file: %s", ei.path);
	images = run(l, 1, &err, seen, n);
	CHECK(err < 0 && err != -ENODATA, "fail policy again: %d", err);
	dlc_loader_destroy(l);
	free(seen);
}

static void test_config(struct dlc_index *idx)
{
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	struct dlc_index *x = NULL;
	char *empty;

	config(&cfg, 0);
	cfg.batch_size = 0;
	t_logbuf[0] = 0;
	CHECK(dlc_loader_create(&cfg, idx, &l) == -EINVAL && !l, "batch 0");
	CHECK(strstr(t_logbuf, "batch_size"), "message names batch_size: %s", t_logbuf);

	config(&cfg, 0);
	cfg.transform.out_w = DLC_MAX_OUT_SIDE + 1;
	t_logbuf[0] = 0;
	CHECK(dlc_loader_create(&cfg, idx, &l) == -EINVAL, "output too wide");
	CHECK(strstr(t_logbuf, "transform") && strstr(t_logbuf, "out_w"),
	      "message names the output size: %s", t_logbuf);

	config(&cfg, 0);
	cfg.rank = 2;
	cfg.world = 2;
	CHECK(dlc_loader_create(&cfg, idx, &l) == -EINVAL, "rank >= world");
	config(&cfg, 0);
	cfg.nbatches = 1;
	CHECK(dlc_loader_create(&cfg, idx, &l) == -EINVAL, "one batch buffer");
	config(&cfg, 0);
	cfg.queue_depth = 0;
	CHECK(dlc_loader_create(&cfg, idx, &l) == -EINVAL, "queue depth 0");
	config(&cfg, 0);
	cfg.pad = 1;
	CHECK(dlc_loader_create(&cfg, idx, &l) == -EINVAL, "nonzero pad");
	config(&cfg, 0);
	cfg.transform.scale_min = 0;
	CHECK(dlc_loader_create(&cfg, idx, &l) == -EINVAL, "scale 0");
	config(&cfg, 0);
	cfg.world = 1000;
	cfg.shard_drop_last = 1;
	CHECK(dlc_loader_create(&cfg, idx, &l) == -EINVAL,
	      "more ranks than samples with shard_drop_last");

	CHECK(dlc_index_build("/nonexistent/dlcache", &x) == -ENOENT,
	      "missing directory");
	empty = t_mkdtemp(NULL);
	CHECK(dlc_index_build(empty, &x) == -ENODATA, "empty data set");
	t_rmtree(empty);
	free(empty);
}

int main(void)
{
	char *dir = t_mkdtemp(NULL);
	struct dlc_index *idx = NULL;
	int ret;

	if (!dir || t_make_dataset(dir, 3, PER_CLASS)) {
		printf("cannot make a data set\n");
		return 1;
	}
	break_files(dir);
	CHECK(dlc_index_build(dir, &idx) == 0, "index");
	if (!idx)
		return t_done("test_bad_input");
	break_after_index(dir);
	T_RUN(test_policies, dir, idx);
	T_RUN(test_config, idx);
	ret = t_done("test_bad_input");
	dlc_index_free(idx);
	t_rmtree(dir);
	free(dir);
	return ret;
}
