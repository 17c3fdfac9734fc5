// SPDX-License-Identifier: MIT
/*
 * Corruption below the crop (issue 10): crop-first decode used to stop
 * after the crop's last row, so a JPEG whose tail is garbled trained in
 * every epoch although dlc_decoder_full() and djpeg reject it. Here every
 * damaged file is first shown to be rejected by djpeg (libjpeg-turbo-progs,
 * an independent program) and by dlc_decoder_full(); then the default
 * sample decode and the default loader (in-process backend, validate
 * "once") must reject it too, in every epoch, whatever the crop. Also:
 * the validated-once path decodes each good sample whole only once per
 * loader (stats.validated) but re-checks a file whose bytes changed.
 *
 * The damaged files are made from real JPEGs (t_make_jpeg); progressive
 * and multi-scan ones by jpegtran from the same package as djpeg.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dlcache.h"
#include "helpers/testutil.h"

#define EPOCHS 200		/* crops per file for the decoder */
#define LOADER_EPOCHS 30
#define BIG_W 640
#define BIG_H 480

static char *tmp;
static int have_djpeg, have_jpegtran;	/* libjpeg-turbo-progs */

struct blob {
	uint8_t *buf;
	size_t len;
};

enum damage {
	D_TAIL,			/* baseline: last quarter of the scan garbled */
	D_CUT_EOI,		/* baseline: cut at 3/4, an EOI appended */
	D_CUT,			/* baseline: cut at 3/4 */
	D_MARKER,		/* baseline: an RST marker at 7/8 of the scan */
	D_PROG_TAIL,		/* progressive: last quarter garbled */
	D_MULTI_TAIL,		/* three sequential scans: last quarter garbled */
	D_COUNT
};

static const char *const damage_names[D_COUNT] = {
	"baseline_garbled_tail", "baseline_cut_eoi_appended",
	"baseline_cut", "baseline_marker_below", "progressive_garbled_tail",
	"multiscan_garbled_tail",
};

/* Offset of the first byte of entropy data after the last SOS header. */
static size_t scan_start(const struct blob *b)
{
	size_t i, start = 0;

	for (i = 2; i + 3 < b->len; i++)
		if (b->buf[i] == 0xff && b->buf[i + 1] == 0xda) {
			start = i + 2 + ((size_t)b->buf[i + 2] << 8 |
					 b->buf[i + 3]);
			break;
		}
	return start;
}

/* Random bytes over [from, to), a fixed stream. */
static void garble(struct blob *b, size_t from, size_t to)
{
	size_t i;

	t_rng = 0x1234;
	for (i = from; i < to && i < b->len; i++)
		b->buf[i] = (uint8_t)t_rand();
}

static int run_tool(const char *cmd)
{
	int st = system(cmd);

	return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int write_tmp(const char *name, const struct blob *b, char *path,
		     size_t plen)
{
	snprintf(path, plen, "%s/%s", tmp, name);
	return t_write_file(path, b->buf, b->len);
}

/* @in rewritten by jpegtran with @opts; 0 or -1. */
static int jpegtran(const struct blob *in, const char *opts, struct blob *out)
{
	char src[4096], dst[4096], cmd[16384];

	if (write_tmp("jt_in.jpg", in, src, sizeof(src)))
		return -1;
	snprintf(dst, sizeof(dst), "%s/jt_out.jpg", tmp);
	snprintf(cmd, sizeof(cmd), "jpegtran %s -outfile '%s' '%s'", opts,
		 dst, src);
	if (run_tool(cmd))
		return -1;
	out->buf = t_read_file(dst, &out->len);
	return out->buf ? 0 : -1;
}

/* The good file @good damaged as @d; 0 or -1 (a tool failed). */
static int make_damaged(const struct blob *good, enum damage d,
			struct blob *out)
{
	char script[4096], opts[4200];
	size_t ds;

	if (d == D_PROG_TAIL || d == D_MULTI_TAIL) {
		if (d == D_PROG_TAIL) {
			snprintf(opts, sizeof(opts), "-progressive");
		} else {
			snprintf(script, sizeof(script), "%s/scans.txt", tmp);
			if (t_write_file(script, "0;\n1;\n2;\n", 9))
				return -1;
			snprintf(opts, sizeof(opts), "-scans '%s'", script);
		}
		if (jpegtran(good, opts, out))
			return -1;
		garble(out, out->len * 3 / 4, out->len - 2);
		return 0;
	}
	out->buf = malloc(good->len + 2);
	if (!out->buf)
		return -1;
	memcpy(out->buf, good->buf, good->len);
	out->len = good->len;
	ds = scan_start(good);
	switch (d) {
	case D_TAIL:
		garble(out, ds + (good->len - 2 - ds) * 3 / 4, good->len - 2);
		break;
	case D_CUT_EOI:
	case D_CUT:
		out->len = ds + (good->len - ds) * 3 / 4;
		if (d == D_CUT_EOI) {
			out->buf[out->len++] = 0xff;
			out->buf[out->len++] = 0xd9;
		}
		break;
	default: {
		size_t at = ds + (good->len - 2 - ds) * 7 / 8;

		while (out->buf[at - 1] == 0xff)
			at++;
		out->buf[at] = 0xff;
		out->buf[at + 1] = 0xd0;	/* RST0, no restart interval */
		break;
	}
	}
	return 0;
}

/* djpeg's verdict: 1 rejected (error or corrupt-data warning), 0 not. */
static int djpeg_rejects(const struct blob *b)
{
	char path[4096], cmd[4200];

	if (write_tmp("djpeg_in.jpg", b, path, sizeof(path)))
		return -1;
	snprintf(cmd, sizeof(cmd),
		 "djpeg -outfile /dev/null '%s' 2>/dev/null", path);
	return run_tool(cmd) != 0;
}

static int full_rejects(struct dlc_decoder *d, const struct blob *b)
{
	uint8_t *rgb = NULL;
	uint32_t w, h;
	int ret = dlc_decoder_full(d, b->buf, b->len, &rgb, &w, &h);

	free(rgb);
	return ret == -EBADMSG;
}

static int bad_kind(uint32_t k)
{
	return k == DLC_ERR_CORRUPT || k == DLC_ERR_TRUNCATED;
}

static uint8_t dst[224 * 224 * 3];

/*
 * The references reject @bad, then dlc_decoder_sample() must too, for
 * every one of EPOCHS train crops; the decoder stays usable.
 */
static void sample_rejects(struct dlc_decoder *d, const struct blob *good,
			   enum damage dmg)
{
	struct dlc_transform t;
	struct blob bad = { NULL, 0 };
	uint32_t e, passed = 0, unchecked = 0;
	int ret;

	if (make_damaged(good, dmg, &bad)) {
		CHECK(0, "%s: cannot make the file", damage_names[dmg]);
		return;
	}
	if (have_djpeg)
		CHECK(djpeg_rejects(&bad) == 1, "%s: djpeg accepts it",
		      damage_names[dmg]);
	CHECK(full_rejects(d, &bad), "%s: dlc_decoder_full accepts it",
	      damage_names[dmg]);
	dlc_transform_default(&t, DLC_TRANSFORM_TRAIN);
	for (e = 0; e < EPOCHS; e++) {
		ret = dlc_decoder_sample(d, bad.buf, bad.len, &t, 0, e, 7,
					 DLC_LAYOUT_NCHW, dst, NULL);
		if (ret != -EBADMSG || !bad_kind(dlc_decoder_error_kind(d)))
			passed++;
		if (!dlc_decoder_sample_method(d, bad.buf, bad.len, &t, 0, e,
					       7, DLC_LAYOUT_NCHW,
					       DLC_DECODE_CROP_FIRST_UNCHECKED,
					       dst, NULL))
			unchecked++;
	}
	CHECK(passed == 0, "%s: sample decode accepted it in %u of %u epochs",
	      damage_names[dmg], passed, EPOCHS);
	/* what each method is documented to catch */
	if (dmg == D_TAIL || dmg == D_CUT_EOI || dmg == D_MARKER)
		CHECK(unchecked > 0,
		      "%s: the unchecked path never accepted it: the damage is not below the crops",
		      damage_names[dmg]);
	else
		CHECK(unchecked == 0,
		      "%s: the unchecked path accepted it %u times",
		      damage_names[dmg], unchecked);
	ret = dlc_decoder_sample(d, good->buf, good->len, &t, 0, 0, 7,
				 DLC_LAYOUT_NCHW, dst, NULL);
	CHECK(ret == 0, "%s: decoder unusable after it (%d)",
	      damage_names[dmg], ret);
	free(bad.buf);
}

/* Damage above the crop is entropy-decoded by the skip: both methods. */
static void rows_above_crop(struct dlc_decoder *d, const struct blob *good)
{
	struct blob bad = { malloc(good->len), good->len };
	struct dlc_crop box = { 100, BIG_H * 3 / 4, 200, BIG_H / 4 - 1, 0, 0 };
	size_t ds = scan_start(good);
	uint32_t m;
	int ret;

	if (!bad.buf)
		return;
	memcpy(bad.buf, good->buf, good->len);
	garble(&bad, ds + (good->len - ds) / 16, ds + (good->len - ds) / 4);
	if (have_djpeg)
		CHECK(djpeg_rejects(&bad) == 1, "djpeg accepts it");
	CHECK(full_rejects(d, &bad), "dlc_decoder_full accepts it");
	for (m = 0; m <= DLC_DECODE_CROP_FIRST_UNCHECKED; m++) {
		ret = dlc_decoder_crop(d, bad.buf, bad.len, &box, 64, 64,
				       DLC_LAYOUT_NCHW, m, dst);
		CHECK(ret == -EBADMSG && bad_kind(dlc_decoder_error_kind(d)),
		      "method %u accepted damage above the crop (%d)", m, ret);
	}
	free(bad.buf);
}

/* On good files, checking the rest changes no pixel. */
static void checked_same_pixels(struct dlc_decoder *d, const struct blob *good)
{
	static uint8_t other[224 * 224 * 3];
	struct dlc_transform t;
	uint32_t e;

	dlc_transform_default(&t, DLC_TRANSFORM_TRAIN);
	for (e = 0; e < 50; e++) {
		int a = dlc_decoder_sample(d, good->buf, good->len, &t, 1, e, 3,
					   DLC_LAYOUT_NHWC, dst, NULL);
		int b = dlc_decoder_sample_method(d, good->buf, good->len, &t,
						  1, e, 3, DLC_LAYOUT_NHWC,
						  DLC_DECODE_CROP_FIRST_UNCHECKED,
						  other, NULL);

		CHECK(a == 0 && b == 0 && !memcmp(dst, other, sizeof(dst)),
		      "epoch %u: checked %d, unchecked %d, or pixels differ",
		      e, a, b);
	}
	CHECK(dlc_decoder_sample_method(d, good->buf, good->len, &t, 0, 0, 0,
					0, 3, dst, NULL) == -EINVAL,
	      "method 3 accepted");
}

/* ---- through the loader ---- */

static void config(struct dlc_config *cfg)
{
	dlc_config_init(cfg);
	cfg->batch_size = 8;
	cfg->window = 16;
	cfg->queue_depth = 4;
	cfg->decode_threads = 2;
	cfg->backend = DLC_BACKEND_INPROCESS;
	cfg->cache_bytes = 0;	/* every epoch reads the files */
	cfg->log = t_log_capture;
	cfg->log_level = DLC_LOG_WARN;
}

/* One epoch: samples delivered, and whether @bad (a bit map) showed up. */
static uint32_t run_epoch(struct dlc_loader *l, uint32_t epoch,
			  const uint8_t *bad, uint32_t *bad_seen)
{
	struct dlc_batch *b;
	uint32_t images = 0, i;
	int ret;

	CHECK(dlc_loader_start_epoch(l, epoch, 0) == 0, "start %u", epoch);
	while ((ret = dlc_next_batch(l, &b)) == 0) {
		images += b->count;
		for (i = 0; i < b->count; i++)
			if (bad[b->ids[i]])
				(*bad_seen)++;
		dlc_release_batch(l, b);
	}
	CHECK(ret == -ENODATA, "epoch %u ended with %d", epoch, ret);
	return images;
}

/*
 * The default loader skips every damaged file in every epoch; the good
 * ones are each decoded whole once (stats.validated).
 */
static void loader_default(const struct dlc_index *idx, const uint8_t *bad,
			   uint32_t nbad)
{
	uint32_t n = dlc_index_count(idx), e, seen = 0, images, i;
	struct dlc_config cfg;
	struct dlc_loader *l = NULL;
	struct dlc_stats st;

	config(&cfg);
	CHECK_EQ(cfg.validate, DLC_VALIDATE_ONCE);
	t_log_clear();
	if (dlc_loader_create(&cfg, idx, &l)) {
		CHECK(0, "loader");
		return;
	}
	for (e = 0; e < LOADER_EPOCHS; e++) {
		images = run_epoch(l, e, bad, &seen);
		CHECK(images == n - nbad, "epoch %u: %u samples, want %u", e,
		      images, n - nbad);
	}
	CHECK(seen == 0, "damaged samples trained %u times in %u epochs",
	      seen, LOADER_EPOCHS);
	dlc_loader_stats(l, &st, sizeof(st));
	CHECK_EQ(st.errors_by_kind[DLC_ERR_CORRUPT] +
		 st.errors_by_kind[DLC_ERR_TRUNCATED],
		 (uint64_t)nbad * LOADER_EPOCHS);
	CHECK_EQ(st.skipped, (uint64_t)nbad * LOADER_EPOCHS);
	/* the good ones once each, the damaged ones every time */
	CHECK_EQ(st.validated, (n - nbad) + (uint64_t)nbad * LOADER_EPOCHS);
	CHECK_EQ(st.decoded, (uint64_t)(n - nbad) * LOADER_EPOCHS);
	for (i = 0; i < n; i++) {
		if (!bad[i])
			continue;
		CHECK(strstr(t_logbuf, dlc_index_relpath(idx, i)) != NULL,
		      "no log line names %s", dlc_index_relpath(idx, i));
	}
	dlc_loader_destroy(l);
}

/* ALWAYS checks every decode; OFF none; DLCACHE_VALIDATE overrides. */
static void loader_modes(const struct dlc_index *idx, const uint8_t *bad,
			 uint32_t nbad)
{
	uint32_t n = dlc_index_count(idx), e, seen = 0, mode;
	struct dlc_config cfg;
	struct dlc_loader *l = NULL;
	struct dlc_stats st;

	for (mode = 0; mode < 3; mode++) {
		config(&cfg);
		if (mode == 0)
			cfg.validate = DLC_VALIDATE_ALWAYS;
		else if (mode == 1)
			setenv("DLCACHE_VALIDATE", "always", 1);
		else
			cfg.validate = DLC_VALIDATE_OFF;
		l = NULL;
		CHECK(dlc_loader_create(&cfg, idx, &l) == 0, "loader %u", mode);
		unsetenv("DLCACHE_VALIDATE");
		if (!l)
			continue;
		seen = 0;
		for (e = 0; e < 4; e++)
			run_epoch(l, e, bad, &seen);
		dlc_loader_stats(l, &st, sizeof(st));
		if (mode < 2) {
			CHECK(seen == 0, "mode %u: damaged samples trained", mode);
			CHECK(st.validated == (uint64_t)n * 4,
			      "mode %u: validated %llu, want %u", mode,
			      (unsigned long long)st.validated, n * 4);
		} else {
			CHECK_EQ(st.validated, 0);
		}
		dlc_loader_destroy(l);
	}
	(void)nbad;
	config(&cfg);
	cfg.validate = 3;
	l = NULL;
	CHECK(dlc_loader_create(&cfg, idx, &l) == -EINVAL && !l,
	      "validate 3 accepted");
	CHECK(strstr(t_logbuf, "validate") != NULL, "no log line names the field");
	config(&cfg);
	setenv("DLCACHE_VALIDATE", "sometimes", 1);
	l = NULL;
	CHECK(dlc_loader_create(&cfg, idx, &l) == -EINVAL && !l,
	      "DLCACHE_VALIDATE=sometimes accepted");
	unsetenv("DLCACHE_VALIDATE");
	CHECK(strstr(t_logbuf, "DLCACHE_VALIDATE 'sometimes'") != NULL,
	      "no log line names the variable");
	CHECK(strcmp(dlc_validate_name(DLC_VALIDATE_ONCE), "once") == 0 &&
	      strcmp(dlc_validate_name(DLC_VALIDATE_ALWAYS), "always") == 0 &&
	      strcmp(dlc_validate_name(DLC_VALIDATE_OFF), "off") == 0 &&
	      strcmp(dlc_validate_name(9), "?") == 0, "dlc_validate_name");
}

/*
 * A good sample checked once, then its file garbled in place (same size:
 * only the bytes differ) must be checked again and rejected: the once-path
 * ties "checked" to the index's CRC-32C of the bytes.
 */
static void loader_changed_bytes(const struct dlc_index *idx,
				 const uint8_t *bad, uint32_t nbad,
				 uint32_t victim,
				 const struct blob *damaged)
{
	uint32_t e, seen = 0, before;
	uint8_t *bad2 = calloc(dlc_index_count(idx), 1);
	struct dlc_config cfg;
	struct dlc_loader *l = NULL;
	struct dlc_stats st;
	char path[4096];

	if (!bad2)
		return;
	memcpy(bad2, bad, dlc_index_count(idx));
	bad2[victim] = 1;
	config(&cfg);
	/*
	 * The rewrite lands between epochs: bytes read ahead before it are
	 * the indexed (good) ones, and would train once more (library.md).
	 */
	cfg.readahead_bytes = DLC_READAHEAD_OFF;
	if (dlc_loader_create(&cfg, idx, &l)) {
		CHECK(0, "loader");
		free(bad2);
		return;
	}
	for (e = 0; e < 2; e++)
		run_epoch(l, e, bad, &seen);
	dlc_loader_stats(l, &st, sizeof(st));
	before = (uint32_t)st.skipped;
	snprintf(path, sizeof(path), "%s/%s", dlc_index_root(idx),
		 dlc_index_relpath(idx, victim));
	CHECK(t_write_file(path, damaged->buf, damaged->len) == 0, "rewrite");
	seen = 0;
	for (e = 2; e < 2 + LOADER_EPOCHS; e++)
		run_epoch(l, e, bad2, &seen);
	CHECK(seen == 0, "the changed file trained %u times in %u epochs",
	      seen, LOADER_EPOCHS);
	dlc_loader_stats(l, &st, sizeof(st));
	CHECK(st.skipped - before == (uint64_t)LOADER_EPOCHS * (nbad + 1),
	      "skipped %llu after the change, want %u",
	      (unsigned long long)(st.skipped - before),
	      LOADER_EPOCHS * (nbad + 1));
	dlc_loader_destroy(l);
	free(bad2);
}

static int tool_present(const char *name)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", name);
	return run_tool(cmd) == 0;
}

int main(void)
{
	struct blob good, dmg[D_COUNT];
	struct dlc_decoder *d = NULL;
	struct dlc_index *idx = NULL;
	uint8_t *bad = NULL;
	char dir[2048], path[4096];
	uint32_t n, i, victim = UINT32_MAX;
	static const enum damage in_loader[] = { D_TAIL, D_CUT_EOI, D_PROG_TAIL };
	int ret, k;

	tmp = t_mkdtemp(NULL);
	good.buf = t_make_jpeg(BIG_W, BIG_H, 5, 0, 90, &good.len);
	if (!tmp || !good.buf || dlc_decoder_create(0, &d)) {
		printf("cannot set up\n");
		return 1;
	}
	have_djpeg = tool_present("djpeg");
	have_jpegtran = tool_present("jpegtran");
	if (!have_djpeg)
		t_skip_required("djpeg_reference",
				"djpeg (libjpeg-turbo-progs) not installed: dlc_decoder_full is the only reference");
	for (k = 0; k < D_COUNT; k++) {
		if (!have_jpegtran && (k == D_PROG_TAIL || k == D_MULTI_TAIL))
			t_skip_required(damage_names[k],
					"jpegtran (libjpeg-turbo-progs) not installed");
		else
			T_RUN_AS(damage_names[k], sample_rejects, d, &good,
				 (enum damage)k);
	}
	T_RUN(rows_above_crop, d, &good);
	T_RUN(checked_same_pixels, d, &good);

	/* a data set: 20 good files, three damaged ones, one to change */
	memset(dmg, 0, sizeof(dmg));
	snprintf(dir, sizeof(dir), "%s/data", tmp);
	ret = t_make_dataset(dir, 2, 10);
	for (k = 0; !ret && k < (int)(sizeof(in_loader) / sizeof(in_loader[0])); k++) {
		if (in_loader[k] == D_PROG_TAIL && !have_jpegtran)
			continue;
		ret = make_damaged(&good, in_loader[k], &dmg[k]);
		snprintf(path, sizeof(path), "%s/class00/bad_%s.jpg", dir,
			 damage_names[in_loader[k]]);
		if (!ret)
			ret = t_write_file(path, dmg[k].buf, dmg[k].len);
	}
	snprintf(path, sizeof(path), "%s/class01/big.jpg", dir);
	if (!ret)
		ret = t_write_file(path, good.buf, good.len);
	if (!ret)
		ret = dlc_index_build(dir, &idx);
	CHECK(ret == 0, "data set: %d", ret);
	if (idx) {
		uint32_t nbad = 0;

		n = dlc_index_count(idx);
		bad = calloc(n, 1);
		for (i = 0; bad && i < n; i++) {
			const char *rel = dlc_index_relpath(idx, i);

			bad[i] = strstr(rel, "/bad_") != NULL;
			nbad += bad[i];
			if (strstr(rel, "/big.jpg"))
				victim = i;
		}
		if (bad && victim != UINT32_MAX) {
			T_RUN(loader_default, idx, bad, nbad);
			T_RUN(loader_modes, idx, bad, nbad);
			T_RUN(loader_changed_bytes, idx, bad, nbad, victim,
			      &dmg[0]);
		}
		if (!have_jpegtran)
			t_skip_required("loader_default/progressive",
					"jpegtran (libjpeg-turbo-progs) not installed");
	}
	ret = t_done("test_corrupt");
	for (k = 0; k < D_COUNT; k++)
		free(dmg[k].buf);
	free(bad);
	free(good.buf);
	dlc_index_free(idx);
	dlc_decoder_destroy(d);
	t_rmtree(tmp);
	free(tmp);
	return ret;
}
