// SPDX-License-Identifier: MIT
/*
 * Decode budgets (issue 30, item 4): a progressive JPEG of hundreds of
 * scans fails as too large, quickly, through every decode method; a CPU
 * budget stops a slow decode; the decoder stays usable after either; a
 * normal progressive JPEG still decodes as libjpeg alone decodes it; the
 * scratch one outsized sample grew is given back; the loader takes both
 * budgets from its config and handles a sample over them by on_error.
 *
 * The many-scan file is written here bit by bit, as an attacker would: a
 * flat gray image whose every AC coefficient has a first scan at Al = 10
 * and ten refinement scans, and its DC the same: 11 x 64 = 704 scans in
 * 1.4 MB at 8192 x 8192, each scan a pass over 2^20 blocks (one EOB run
 * of up to 32767 blocks per symbol, or one bit per block for DC).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jpeglib.h>

#include "decode.h"
#include "dlcache.h"
#include "internal.h"
#include "jpegrst.h"

#include "helpers/testutil.h"

/* ---- a progressive JPEG of many scans, written by hand ---- */

struct bits {
	uint8_t *buf;
	size_t len, cap;
	uint32_t acc, n;	/* pending bits, most significant first */
};

static void put_byte(struct bits *b, uint8_t v)
{
	if (b->len + 2 > b->cap) {
		b->cap = b->cap ? b->cap * 2 : 1 << 16;
		b->buf = realloc(b->buf, b->cap);
		if (!b->buf) {
			printf("FAIL: out of memory\n");
			exit(1);
		}
	}
	b->buf[b->len++] = v;
}

static void put_bytes(struct bits *b, const uint8_t *v, size_t n)
{
	while (n--)
		put_byte(b, *v++);
}

/* Entropy-coded bits: a 0xff byte is followed by a stuffed 0x00. */
static void put_bits(struct bits *b, uint32_t v, uint32_t n)
{
	while (n--) {
		b->acc = b->acc << 1 | ((v >> n) & 1);
		if (++b->n == 8) {
			put_byte(b, (uint8_t)b->acc);
			if ((uint8_t)b->acc == 0xff)
				put_byte(b, 0);
			b->acc = 0;
			b->n = 0;
		}
	}
}

/* The end of a scan's data: pad with 1 bits. */
static void flush_bits(struct bits *b)
{
	while (b->n)
		put_bits(b, 1, 1);
}

/* EOB runs over @blocks blocks; the AC table codes EOBr as 4-bit r. */
static void eob_runs(struct bits *b, uint64_t blocks)
{
	while (blocks) {
		uint32_t r = 0, run;

		while (r < 14 && (2ULL << r) <= blocks)
			r++;
		run = blocks < (2U << r) - 1 ? (uint32_t)blocks :
		      (2U << r) - 1;
		put_bits(b, r, 4);
		put_bits(b, run - (1U << r), r);
		blocks -= run;
	}
}

static void sos(struct bits *b, uint32_t ss, uint32_t se, uint32_t ah,
		uint32_t al)
{
	uint8_t m[] = { 0xff, 0xda, 0, 8, 1, 1, 0x00, (uint8_t)ss,
			(uint8_t)se, (uint8_t)(ah << 4 | al) };

	put_bytes(b, m, sizeof(m));
}

/*
 * A flat (all 128) gray @w x @h progressive JPEG: DC first at @dc_al and
 * its refinements, then for each AC coefficient a first scan at @ac_al
 * and its refinements: (dc_al + 1) + 63 * (ac_al + 1) scans.
 */
static uint8_t *many_scans(uint32_t w, uint32_t h, uint32_t dc_al,
			   uint32_t ac_al, size_t *len, uint32_t *nscans)
{
	static const uint8_t soi[] = { 0xff, 0xd8 };
	uint64_t blocks = (uint64_t)((w + 7) / 8) * ((h + 7) / 8), i;
	struct bits b = { 0 };
	uint8_t m[64];
	uint32_t k, al, n = 0;

	put_bytes(&b, soi, 2);
	/* DQT: table 0, all ones */
	memcpy(m, (uint8_t[]){ 0xff, 0xdb, 0, 67, 0 }, 5);
	put_bytes(&b, m, 5);
	for (k = 0; k < 64; k++)
		put_byte(&b, 1);
	/* SOF2: 8-bit, h x w, one component 1x1, table 0 */
	memcpy(m, (uint8_t[]){ 0xff, 0xc2, 0, 11, 8, (uint8_t)(h >> 8),
			       (uint8_t)h, (uint8_t)(w >> 8), (uint8_t)w, 1,
			       1, 0x11, 0 }, 13);
	put_bytes(&b, m, 13);
	/* DHT: DC 0 codes category 0 as "0"; AC 0 codes EOBr as 4-bit r */
	memcpy(m, (uint8_t[]){ 0xff, 0xc4, 0, 20, 0x00, 1, 0, 0, 0, 0, 0, 0,
			       0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00 }, 22);
	put_bytes(&b, m, 22);
	memcpy(m, (uint8_t[]){ 0xff, 0xc4, 0, 34, 0x10, 0, 0, 0, 15, 0, 0,
			       0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }, 21);
	put_bytes(&b, m, 21);
	for (k = 0; k < 15; k++)
		put_byte(&b, (uint8_t)(k << 4));

	for (al = dc_al + 1; al-- > 0; n++) {
		sos(&b, 0, 0, al == dc_al ? 0 : al + 1, al);
		/* first: a "0" per block; refinement: the bit, 0 */
		for (i = 0; i < blocks; i++)
			put_bits(&b, 0, 1);
		flush_bits(&b);
	}
	for (k = 1; k < 64; k++)
		for (al = ac_al + 1; al-- > 0; n++) {
			sos(&b, k, k, al == ac_al ? 0 : al + 1, al);
			eob_runs(&b, blocks);
			flush_bits(&b);
		}
	put_bytes(&b, (const uint8_t[]){ 0xff, 0xd9 }, 2);
	*len = b.len;
	*nscans = n;
	return b.buf;
}

/* ---- references and clocks ---- */

static double wall_s(void)
{
	return dlc_now_ns() / 1e9;
}

/* RGB of @buf as libjpeg alone decodes it (ISLOW, fancy upsampling). */
static uint8_t *libjpeg_rgb(const uint8_t *buf, size_t len, uint32_t *w,
			    uint32_t *h)
{
	struct jpeg_decompress_struct c;
	struct jpeg_error_mgr e;
	uint8_t *rgb;
	JSAMPROW row;

	c.err = jpeg_std_error(&e);
	jpeg_create_decompress(&c);
	jpeg_mem_src(&c, buf, (unsigned long)len);
	jpeg_read_header(&c, TRUE);
	c.out_color_space = JCS_RGB;
	c.dct_method = JDCT_ISLOW;
	jpeg_start_decompress(&c);
	*w = c.output_width;
	*h = c.output_height;
	rgb = malloc((size_t)*w * *h * 3);
	while (rgb && c.output_scanline < c.output_height) {
		row = rgb + (size_t)c.output_scanline * *w * 3;
		jpeg_read_scanlines(&c, &row, 1);
	}
	jpeg_finish_decompress(&c);
	jpeg_destroy_decompress(&c);
	return rgb;
}

/* A libjpeg-made progressive JPEG (jpeg_simple_progression: 10 scans). */
static uint8_t *progressive(uint32_t w, uint32_t h, size_t *len)
{
	uint8_t *px = malloc((size_t)w * h * 3), *out;
	uint32_t x, y;

	if (!px)
		return NULL;
	for (y = 0; y < h; y++)
		for (x = 0; x < w; x++) {
			uint8_t *q = px + ((size_t)y * w + x) * 3;

			q[0] = (uint8_t)(x * 255 / w);
			q[1] = (uint8_t)((x ^ y) & 0xff);
			q[2] = (uint8_t)(y * 255 / h);
		}
	out = t_encode_jpeg(px, w, h, 85, T_JPEG_PROGRESSIVE, len);
	free(px);
	return out;
}

/* ---- the methods ---- */

enum { M_FULL, M_CROP_FIRST, M_UNCHECKED, M_FULL_THEN_CROP, M_EXACT,
       M_RST, M_COUNT };
static const char *const method_names[M_COUNT] = {
	"full", "crop-first", "crop-first unchecked", "full-then-crop",
	"exact transform", "MCU-exact (restart-indexed)",
};

static uint8_t out[224 * 224 * 3];

/*
 * One decode of @buf by @m (M_RST: @buf is restart-indexed). Returns the
 * call's result; *@cpu the CPU time it took on this thread, in seconds
 * (the machines that run the tests are shared: wall time is printed).
 */
static int decode_by(struct dlc_decoder *d, int m, const uint8_t *buf,
		     size_t len, double *cpu)
{
	static uint32_t rows[DLC_RST_MAX_ROWS + 1];
	struct dlc_transform t;
	struct dlc_rst_geom g;
	const char *why;
	uint8_t *rgb = NULL;
	uint32_t w, h;
	double t0, c0;
	int ret;

	dlc_transform_default(&t, DLC_TRANSFORM_TRAIN);
	if (m == M_EXACT || m == M_RST) {
		/* the whole image at scale 1 */
		t.scale_min = t.scale_max = 1.0f;
		t.ratio_min = t.ratio_max = 1.0f;
		t.flags = DLC_TRANSFORM_F_EXACT;
	}
	if (m == M_RST && dlc_rst_parse(buf, len, &g, rows, &why)) {
		CHECK(0, "dlc_rst_parse: %s", why);
		return -EINVAL;
	}
	t0 = wall_s();
	c0 = t_thread_cpu_s();
	switch (m) {
	case M_FULL:
		ret = dlc_decoder_full(d, buf, len, &rgb, &w, &h);
		free(rgb);
		break;
	case M_CROP_FIRST:
	case M_EXACT:
		ret = dlc_decoder_sample(d, buf, len, &t, 1, 0, 0,
					 DLC_LAYOUT_NCHW, out, NULL);
		break;
	case M_UNCHECKED:
		ret = dlc_decoder_sample_method(d, buf, len, &t, 1, 0, 0,
				DLC_LAYOUT_NCHW,
				DLC_DECODE_CROP_FIRST_UNCHECKED, out, NULL);
		break;
	case M_FULL_THEN_CROP:
		ret = dlc_decoder_sample_method(d, buf, len, &t, 1, 0, 0,
				DLC_LAYOUT_NCHW, DLC_DECODE_FULL_THEN_CROP,
				out, NULL);
		break;
	default:
		ret = dlc_decoder_sample_rst(d, buf, len, &g, rows, &t, 1, 0,
					     0, DLC_LAYOUT_NCHW, out, NULL);
		break;
	}
	*cpu = t_thread_cpu_s() - c0;
	if (ret)
		printf("# %s: %d after %.3f s of CPU, %.3f s: %s\n",
		       method_names[m], ret, *cpu, wall_s() - t0,
		       dlc_decoder_error(d));
	return ret;
}

/* The decoder still decodes a good progressive JPEG as libjpeg does. */
static void check_usable(struct dlc_decoder *d, const char *after)
{
	static uint8_t *good, *ref;
	static size_t good_len;
	static uint32_t rw, rh;
	uint8_t *rgb = NULL;
	uint32_t w = 0, h = 0;
	int ret;

	if (!good) {
		good = progressive(96, 64, &good_len);
		ref = libjpeg_rgb(good, good_len, &rw, &rh);
	}
	ret = dlc_decoder_full(d, good, good_len, &rgb, &w, &h);
	CHECK(ret == 0 && w == rw && h == rh &&
	      !memcmp(rgb, ref, (size_t)w * h * 3),
	      "after %s: a good JPEG decodes to %d (%s)", after, ret,
	      dlc_decoder_error(d));
	free(rgb);
}

static void expect_too_large(struct dlc_decoder *d, int ret, const char *what,
			     const char *names)
{
	CHECK(ret == -E2BIG && dlc_decoder_error_kind(d) == DLC_ERR_TOO_LARGE &&
	      strstr(dlc_decoder_error(d), names),
	      "%s: %d, kind %s, \"%s\"; want -E2BIG, too_large, naming \"%s\"",
	      what, ret, dlc_error_kind_name(dlc_decoder_error_kind(d)),
	      dlc_decoder_error(d), names);
}

/* ---- tests ---- */

static uint8_t *bomb;		/* 8192 x 8192, 704 scans */
static size_t bomb_len;

/* A file of exactly the limit decodes; one scan more does not. */
static void test_scan_count(void)
{
	uint8_t *flat, *rgb = NULL, *p = NULL;
	struct dlc_decoder *d;
	uint32_t n, w, h;
	size_t len, i;
	int ret;

	CHECK_EQ(dlc_decoder_create(0, &d), 0);
	flat = many_scans(64, 48, 10, 10, &len, &n);
	CHECK_EQ(n, 704);
	/* the file is good: with room for its scans, every pixel is 128 */
	dlc_decoder_set_budget(d, 704, 0);
	ret = dlc_decoder_full(d, flat, len, &rgb, &w, &h);
	CHECK(ret == 0 && w == 64 && h == 48, "704 scans under max_scans 704: %d (%s)",
	      ret, dlc_decoder_error(d));
	for (i = 0; !ret && i < (size_t)w * h * 3; i++)
		if (rgb[i] != 128)
			break;
	CHECK(!ret && i == (size_t)w * h * 3, "flat image: pixel %zu is %u", i,
	      rgb ? rgb[i] : 0);
	p = libjpeg_rgb(flat, len, &w, &h);
	CHECK(p && !ret && !memcmp(p, rgb, (size_t)w * h * 3),
	      "libjpeg alone decodes the same");
	free(p);
	free(rgb);
	dlc_decoder_set_budget(d, 703, 0);
	ret = dlc_decoder_full(d, flat, len, &rgb, &w, &h);
	expect_too_large(d, ret, "704 scans over max_scans 703",
			 "scan 704 of the progressive JPEG is over max_scans 703");
	check_usable(d, "max_scans 703");
	free(flat);
	dlc_decoder_destroy(d);
}

/*
 * The CPU the default limit took over the bomb (65 scans), the yardstick
 * of test_scans_each_method(): measured in this run, on this machine.
 */
static double scans_default_cpu;

/* The default limit stops the 704-scan bomb in well under its 12 s. */
static void test_scans_default(void)
{
	struct dlc_decoder *d;
	double cpu;
	int ret;

	CHECK_EQ(dlc_decoder_create(0, &d), 0);
	ret = decode_by(d, M_FULL, bomb, bomb_len, &cpu);
	expect_too_large(d, ret, "8192x8192 of 704 scans, default budgets",
			 "over max_scans 64");
	CHECK(cpu < 2.0, "the default limit took %.2f s", cpu);
	scans_default_cpu = cpu;
	check_usable(d, "the default scan limit");
	dlc_decoder_destroy(d);
}

/*
 * Every method that decodes a multi-scan file is held to max_scans: 13
 * scans of the bomb cost less than the 65 of the default limit did in
 * this run. A bound in seconds does not hold: most of the cost is the
 * 8192x8192 coefficient buffer, which is memory-bound, and one 0.5 s
 * bound failed on a 2-core machine whose other core was busy (0.51 to
 * 0.55 s against about 0.45 s quiet).
 */
static void test_scans_each_method(void)
{
	struct dlc_decoder *d;
	double cpu;
	int m, ret;

	CHECK_EQ(dlc_decoder_create(0, &d), 0);
	dlc_decoder_set_budget(d, 12, 0);
	for (m = 0; m < M_RST; m++) {
		ret = decode_by(d, m, bomb, bomb_len, &cpu);
		expect_too_large(d, ret, method_names[m], "over max_scans 12");
		CHECK(cpu < scans_default_cpu,
		      "%s: %.2f s for 13 scans, not less than the %.2f s of the default limit's 65",
		      method_names[m], cpu, scans_default_cpu);
		check_usable(d, method_names[m]);
	}
	dlc_decoder_destroy(d);
}

/*
 * A tiny CPU budget stops a decode that the scan limit lets through, in
 * each method: the many-scan file, and (MCU-exact) a large baseline one.
 */
static void test_cpu_budget(void)
{
	uint8_t *base, *rst = NULL;
	struct dlc_rst_opts o = { .interval = 4 };
	struct dlc_decoder *d;
	size_t base_len, rst_len = 0;
	char why[256];
	uint32_t n;
	uint8_t *slow;
	size_t slow_len;
	double cpu;
	int m, ret;

	CHECK_EQ(dlc_decoder_create(0, &d), 0);
	slow = many_scans(2048, 2048, 10, 10, &slow_len, &n);
	base = t_make_jpeg(2048, 2048, 7, 0, 90, &base_len);
	CHECK(base && !dlc_rst_transcode(base, base_len, &o, 0, &rst,
					 &rst_len, why, sizeof(why)),
	      "restart-indexed JPEG: %s", why);
	dlc_decoder_set_budget(d, 1000, 5);
	for (m = 0; m < M_COUNT; m++) {
		if (m == M_RST)
			ret = decode_by(d, m, rst, rst_len, &cpu);
		else
			ret = decode_by(d, m, slow, slow_len, &cpu);
		expect_too_large(d, ret, method_names[m],
				 "decode over 5 ms of CPU (decode_budget_ms)");
		CHECK(cpu < 0.1, "%s: stopped after %.3f s", method_names[m],
		      cpu);
		check_usable(d, method_names[m]);
	}
	/* the same restart-indexed sample within a budget: decoded */
	dlc_decoder_set_budget(d, 0, 0);
	ret = decode_by(d, M_RST, rst, rst_len, &cpu);
	CHECK(ret == 0, "MCU-exact under the default budget: %d (%s)", ret,
	      dlc_decoder_error(d));
	free(slow);
	free(base);
	free(rst);
	dlc_decoder_destroy(d);
}

/* A normal progressive JPEG decodes as libjpeg alone decodes it. */
static void test_progressive_ok(void)
{
	struct dlc_decoder *d;
	uint8_t *j, *ref, *rgb = NULL;
	uint32_t w, h, rw, rh;
	size_t len;
	int ret;

	CHECK_EQ(dlc_decoder_create(0, &d), 0);
	j = progressive(1024, 768, &len);
	ref = libjpeg_rgb(j, len, &rw, &rh);
	ret = dlc_decoder_full(d, j, len, &rgb, &w, &h);
	CHECK(ret == 0 && w == rw && h == rh &&
	      !memcmp(rgb, ref, (size_t)w * h * 3),
	      "default budgets: %d (%s)", ret, dlc_decoder_error(d));
	free(rgb);
	/* libjpeg's simple progression has 10 scans: 10 is enough */
	dlc_decoder_set_budget(d, 10, 0);
	ret = dlc_decoder_full(d, j, len, &rgb, &w, &h);
	CHECK(ret == 0 && !memcmp(rgb, ref, (size_t)w * h * 3),
	      "max_scans 10: %d (%s)", ret, dlc_decoder_error(d));
	free(rgb);
	dlc_decoder_set_budget(d, 9, 0);
	ret = dlc_decoder_full(d, j, len, &rgb, &w, &h);
	expect_too_large(d, ret, "10 scans, max_scans 9", "over max_scans 9");
	free(j);
	free(ref);
	dlc_decoder_destroy(d);
}

/*
 * Scratch: one outsized sample (the exact transform of 2800 x 2800 keeps
 * 23.5 MB of decoded rows) does not stay held; a stream of such samples
 * keeps it (no allocation per sample once settled).
 */
static void test_scratch(void)
{
	uint8_t *big, *small;
	size_t big_len, small_len, held;
	struct dlc_decoder *d;
	double cpu;
	int i, ret;

	CHECK_EQ(dlc_decoder_create(0, &d), 0);
	big = t_make_jpeg(2800, 2800, 3, 1, 75, &big_len);
	small = t_make_jpeg(300, 300, 4, 0, 90, &small_len);
	CHECK(big && small);
	for (i = 0; i < 20; i++) {
		ret = decode_by(d, M_EXACT, small, small_len, &cpu);
		CHECK_EQ(ret, 0);
	}
	ret = decode_by(d, M_EXACT, big, big_len, &cpu);
	CHECK(ret == 0, "big: %d (%s)", ret, dlc_decoder_error(d));
	held = dlc_decoder_scratch_bytes(d);
	CHECK(held <= (16u << 20),
	      "after a 2800x2800 sample among 300x300 ones: %zu bytes held",
	      held);
	ret = decode_by(d, M_EXACT, small, small_len, &cpu);
	CHECK_EQ(ret, 0);
	held = dlc_decoder_scratch_bytes(d);
	CHECK(held < (1u << 20), "then a 300x300 sample: %zu bytes held", held);
	/* a data set of large images settles and keeps its scratch */
	for (i = 0; i < 12; i++) {
		ret = decode_by(d, M_EXACT, big, big_len, &cpu);
		CHECK_EQ(ret, 0);
	}
	held = dlc_decoder_scratch_bytes(d);
	CHECK(held >= 2800u * 2800 * 3,
	      "12 samples of 2800x2800 in a row: %zu bytes held", held);
	free(big);
	free(small);
	dlc_decoder_destroy(d);
}

/*
 * dlcachectl pack's transcode of a source to a restart-indexed JPEG reads
 * every scan too (jpeg_read_coefficients()): held to the default limit.
 */
static void test_transcode(void)
{
	struct dlc_rst_opts o = { .interval = 4 };
	uint8_t *rst = NULL, *flat;
	size_t rst_len = 0, len;
	char why[256] = "";
	double c0 = t_thread_cpu_s();
	uint32_t n;
	int ret;

	ret = dlc_rst_transcode(bomb, bomb_len, &o, 0, &rst, &rst_len, why,
				sizeof(why));
	CHECK(ret == -E2BIG && strstr(why, "over max_scans 64") &&
	      t_thread_cpu_s() - c0 < 2.0,
	      "704 scans: %d (%s) after %.2f s of CPU", ret, why, t_thread_cpu_s() - c0);
	free(rst);
	rst = NULL;
	/* 64 scans: transcoded, and decodes to the same flat gray */
	flat = many_scans(256, 256, 0, 0, &len, &n);
	CHECK_EQ(n, 64);
	ret = dlc_rst_transcode(flat, len, &o, 0, &rst, &rst_len, why,
				sizeof(why));
	CHECK(ret == 0, "64 scans: %d (%s)", ret, why);
	free(rst);
	free(flat);
}

/* The loader: both fields checked, passed to its decoders, on_error. */
static void test_loader(void)
{
	struct dlc_error_info ei;
	struct dlc_index *idx = NULL;
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	struct dlc_stats st;
	struct dlc_batch *b;
	uint32_t images = 0;
	char path[4096];
	char *dir;
	int ret;

	/* The budgets took the last reserved words: the struct grew after. */
	CHECK_EQ(offsetof(struct dlc_config, pad2) + 4, DLC_CONFIG_SIZE_VER1);
	dir = t_mkdtemp(NULL);
	if (!dir || t_make_dataset(dir, 2, 4)) {
		CHECK(0, "data set");
		return;
	}
	snprintf(path, sizeof(path), "%s/class01/img0002.jpg", dir);
	CHECK_EQ(t_write_file(path, bomb, bomb_len), 0);
	CHECK_EQ(dlc_index_build(dir, &idx), 0);

	dlc_config_init(&cfg);
	cfg.batch_size = 4;
	cfg.transform.out_w = cfg.transform.out_h = 32;
	cfg.decode_threads = 2;
	cfg.on_error = DLC_ON_ERROR_SKIP;
	cfg.log = t_log_capture;
	cfg.log_level = DLC_LOG_WARN;
	cfg.max_scans = 65536;
	t_log_clear();
	CHECK(dlc_loader_create(&cfg, idx, &l) == -EINVAL &&
	      strstr(t_logbuf, "max_scans"), "max_scans 65536 accepted");
	cfg.max_scans = 0;
	cfg.decode_budget_ms = 3600001;
	t_log_clear();
	CHECK(dlc_loader_create(&cfg, idx, &l) == -EINVAL &&
	      strstr(t_logbuf, "decode_budget_ms"),
	      "decode_budget_ms 3600001 accepted");

	cfg.max_scans = 20;
	cfg.decode_budget_ms = 0;
	t_log_clear();
	CHECK_EQ(dlc_loader_create(&cfg, idx, &l), 0);
	if (!l)
		goto out;
	CHECK_EQ(dlc_loader_start_epoch(l, 0, 0), 0);
	while ((ret = dlc_next_batch(l, &b)) == 0) {
		images += b->count;
		CHECK_EQ(dlc_release_batch(l, b), 0);
	}
	CHECK_EQ(ret, -ENODATA);
	CHECK(images == 7, "%u images delivered, want 7", images);
	dlc_loader_stats(l, &st, sizeof(st));
	CHECK(st.errors_by_kind[DLC_ERR_TOO_LARGE] == 1 && st.skipped == 1,
	      "too_large %llu, skipped %llu",
	      (unsigned long long)st.errors_by_kind[DLC_ERR_TOO_LARGE],
	      (unsigned long long)st.skipped);
	CHECK(dlc_loader_last_error(l, &ei) == 0 &&
	      ei.kind == DLC_ERR_TOO_LARGE && strstr(ei.msg, "max_scans 20") &&
	      strstr(ei.path, "img0002"),
	      "last error: %s: %s", ei.path, ei.msg);
	CHECK(strstr(t_logbuf, "over max_scans 20"), "log: %s", t_logbuf);
	dlc_loader_destroy(l);
out:
	dlc_index_free(idx);
	t_rmtree(dir);
	free(dir);
}

int main(void)
{
	uint32_t n;

	bomb = many_scans(8192, 8192, 10, 10, &bomb_len, &n);
	if (n != 704) {
		printf("FAIL: the bomb has %u scans\n", n);
		return 1;
	}
	T_RUN(test_scan_count);
	T_RUN(test_progressive_ok);
	T_RUN(test_scans_default);
	T_RUN(test_scans_each_method);
	T_RUN(test_cpu_budget);
	T_RUN(test_scratch);
	T_RUN(test_transcode);
	T_RUN(test_loader);
	free(bomb);
	return t_done("test_decode_budget");
}
