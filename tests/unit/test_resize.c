// SPDX-License-Identifier: MIT
/*
 * dlc_resize_rgb() against an independent floating-point version of
 * Pillow's antialiased bilinear filter, and against Pillow itself
 * (Image.resize(size, BILINEAR, box=...)) when Debian's python3 has PIL,
 * and the SIMD kernels against the portable C ones, byte for byte.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dlcache.h"
#include "resize.h"

#include "helpers/testutil.h"

/* Gradients, a disc, stripes and some noise: every filter tap matters. */
static uint8_t *pattern(uint32_t w, uint32_t h)
{
	uint8_t *p = malloc((size_t)w * h * 3);
	uint32_t x, y;

	if (!p)
		exit(1);
	for (y = 0; y < h; y++) {
		for (x = 0; x < w; x++) {
			uint8_t *q = p + ((size_t)y * w + x) * 3;
			double dx = x - w * 0.4, dy = y - h * 0.6;
			int disc = dx * dx + dy * dy < (w * h) / 10.0;

			q[0] = (uint8_t)(255 * x / (w - 1 ? w - 1 : 1));
			q[1] = disc ? 230 : (uint8_t)(255 * y / (h - 1 ? h - 1 : 1));
			q[2] = ((x / 3 + y / 5) & 1) ? 200 : 30;
			q[2] = (uint8_t)(q[2] + (t_rand() & 15));
		}
	}
	return p;
}

static double tri(double x)
{
	x = fabs(x);
	return x < 1.0 ? 1.0 - x : 0.0;
}

static uint8_t round8(double v)
{
	v = floor(v + 0.5);
	return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v;
}

/* Weights of output pixel @i over source pixels [*first, *first + *n). */
static void ref_weights(double in0, double in1, uint32_t in_size,
			uint32_t out, uint32_t i, double *w, int *first,
			int *n)
{
	double scale = (in1 - in0) / out;
	double fs = scale < 1 ? 1 : scale;
	double center = in0 + (i + 0.5) * scale, sum = 0;
	int lo = (int)floor(center - fs), hi = (int)ceil(center + fs), x;

	if (lo < 0)
		lo = 0;
	if (hi > (int)in_size)
		hi = (int)in_size;
	for (x = lo; x < hi; x++) {
		/* the triangle is centred on the pixel's centre, x + 0.5 */
		w[x - lo] = tri((x + 0.5 - center) / fs);
		sum += w[x - lo];
	}
	for (x = lo; x < hi; x++)
		w[x - lo] /= sum;
	*first = lo;
	*n = hi - lo;
}

/* Two passes with 8-bit rounding in between, as Pillow; floats otherwise. */
static void ref_resize(const uint8_t *src, uint32_t sw, uint32_t sh,
		       const struct dlc_crop *b, uint32_t ow, uint32_t oh,
		       uint8_t *dst)
{
	uint8_t *tmp = malloc((size_t)ow * sh * 3);
	double *w = malloc(sizeof(double) * (2 * (sw > sh ? sw : sh) + 8));
	float x0 = (float)b->x, x1 = (float)(b->x + b->w);
	float y0 = (float)b->y, y1 = (float)(b->y + b->h);
	uint32_t x, y, c;
	int first, n, k;

	if (!tmp || !w)
		exit(1);
	for (x = 0; x < ow; x++) {
		ref_weights(x0, x1, sw, ow, x, w, &first, &n);
		for (y = 0; y < sh; y++) {
			for (c = 0; c < 3; c++) {
				double s = 0;

				for (k = 0; k < n; k++)
					s += w[k] * src[((size_t)y * sw + first + k) * 3 + c];
				tmp[((size_t)y * ow + x) * 3 + c] = round8(s);
			}
		}
	}
	for (y = 0; y < oh; y++) {
		ref_weights(y0, y1, sh, oh, y, w, &first, &n);
		for (x = 0; x < ow; x++) {
			for (c = 0; c < 3; c++) {
				double s = 0;

				for (k = 0; k < n; k++)
					s += w[k] * tmp[((size_t)(first + k) * ow + x) * 3 + c];
				dst[((size_t)y * ow + x) * 3 + c] = round8(s);
			}
		}
	}
	free(tmp);
	free(w);
}

static void random_box(uint32_t sw, uint32_t sh, struct dlc_crop *b)
{
	b->w = 1 + t_rand_unit() * (sw - 1);
	b->h = 1 + t_rand_unit() * (sh - 1);
	b->x = t_rand_unit() * (sw - b->w);
	b->y = t_rand_unit() * (sh - b->h);
	b->flip = 0;
	b->pad = 0;
}

static void test_identity_and_constant(void)
{
	uint32_t w = 37, h = 23, i;
	uint8_t *src = pattern(w, h), *out = malloc((size_t)w * h * 3);
	uint8_t *flat = malloc(64 * 48 * 3), *o2 = malloc(224 * 224 * 3);
	struct dlc_crop b = { 0, 0, 37, 23, 0, 0 };
	int ret;

	ret = dlc_resize_rgb(src, w, h, (size_t)w * 3, &b, w, h,
			     DLC_LAYOUT_NHWC, out);
	CHECK(ret == 0, "identity resize returned %d", ret);
	CHECK(!memcmp(src, out, (size_t)w * h * 3), "identity changed pixels");

	for (i = 0; i < 64 * 48 * 3; i++)
		flat[i] = (uint8_t)(i % 3 == 0 ? 17 : i % 3 == 1 ? 128 : 250);
	for (i = 0; i < 50; i++) {
		uint32_t ow = 1 + (uint32_t)(t_rand() % 224);
		uint32_t oh = 1 + (uint32_t)(t_rand() % 224), k;
		int bad = 0;

		random_box(64, 48, &b);
		ret = dlc_resize_rgb(flat, 64, 48, 64 * 3, &b, ow, oh,
				     DLC_LAYOUT_NHWC, o2);
		CHECK(ret == 0, "constant resize returned %d", ret);
		for (k = 0; k < ow * oh; k++)
			if (o2[3 * k] != 17 || o2[3 * k + 1] != 128 ||
			    o2[3 * k + 2] != 250)
				bad = 1;
		CHECK(!bad, "constant image not constant at %ux%u", ow, oh);
	}
	free(src);
	free(out);
	free(flat);
	free(o2);
}

static void test_against_reference(void)
{
	uint32_t sw = 301, sh = 203, i, exact = 0, total = 0;
	uint8_t *src = pattern(sw, sh);
	uint8_t *a = malloc(300 * 300 * 3), *r = malloc(300 * 300 * 3);
	/* a padded stride must be honoured */
	uint8_t *padded = malloc((size_t)(sw * 3 + 13) * sh);
	uint8_t *b2 = malloc(300 * 300 * 3);

	for (i = 0; i < sh; i++)
		memcpy(padded + (size_t)i * (sw * 3 + 13),
		       src + (size_t)i * sw * 3, sw * 3);
	for (i = 0; i < 120; i++) {
		struct dlc_crop b;
		uint32_t ow = 1 + (uint32_t)(t_rand() % 300);
		uint32_t oh = 1 + (uint32_t)(t_rand() % 300);
		int ret, m;

		if (i % 4 == 0) {
			ow = 1 + (uint32_t)(t_rand() % 20);	/* big shrink */
			oh = 1 + (uint32_t)(t_rand() % 20);
		}
		random_box(sw, sh, &b);
		if (i % 5 == 0) {			/* integer boxes */
			b.x = floor(b.x);
			b.y = floor(b.y);
			b.w = floor(b.w);
			b.h = floor(b.h);
		}
		ret = dlc_resize_rgb(src, sw, sh, (size_t)sw * 3, &b, ow, oh,
				     DLC_LAYOUT_NHWC, a);
		CHECK(ret == 0, "resize %ux%u returned %d", ow, oh, ret);
		ref_resize(src, sw, sh, &b, ow, oh, r);
		m = t_max_diff(a, r, (size_t)ow * oh * 3);
		CHECK(m <= 1, "box (%.3f,%.3f %.3fx%.3f) -> %ux%u: max diff %d vs float reference",
		      b.x, b.y, b.w, b.h, ow, oh, m);
		exact += !memcmp(a, r, (size_t)ow * oh * 3);
		total++;
		ret = dlc_resize_rgb(padded, sw, sh, (size_t)sw * 3 + 13, &b,
				     ow, oh, DLC_LAYOUT_NHWC, b2);
		CHECK(ret == 0 && !memcmp(a, b2, (size_t)ow * oh * 3),
		      "padded stride gives other pixels");
	}
	printf("resize: %u/%u cases bit-exact with the float reference\n",
	       exact, total);
	free(src);
	free(a);
	free(r);
	free(padded);
	free(b2);
}

static void test_flip_and_layout(void)
{
	uint32_t sw = 90, sh = 70, ow = 33, oh = 21, x, y, c;
	uint8_t *src = pattern(sw, sh);
	uint8_t *hwc = malloc(ow * oh * 3), *hwcf = malloc(ow * oh * 3);
	uint8_t *chw = malloc(ow * oh * 3), *chwf = malloc(ow * oh * 3);
	struct dlc_crop b = { 10.5, 7.25, 60.3, 50.1, 0, 0 };
	int bad_flip = 0, bad_layout = 0;

	CHECK(!dlc_resize_rgb(src, sw, sh, sw * 3, &b, ow, oh, DLC_LAYOUT_NHWC, hwc),
	      "nhwc");
	CHECK(!dlc_resize_rgb(src, sw, sh, sw * 3, &b, ow, oh, DLC_LAYOUT_NCHW, chw),
	      "nchw");
	b.flip = 1;
	CHECK(!dlc_resize_rgb(src, sw, sh, sw * 3, &b, ow, oh, DLC_LAYOUT_NHWC, hwcf),
	      "nhwc flip");
	CHECK(!dlc_resize_rgb(src, sw, sh, sw * 3, &b, ow, oh, DLC_LAYOUT_NCHW, chwf),
	      "nchw flip");
	for (y = 0; y < oh; y++) {
		for (x = 0; x < ow; x++) {
			for (c = 0; c < 3; c++) {
				uint8_t v = hwc[(y * ow + x) * 3 + c];

				if (hwcf[(y * ow + (ow - 1 - x)) * 3 + c] != v ||
				    chwf[c * ow * oh + y * ow + (ow - 1 - x)] != v)
					bad_flip = 1;
				if (chw[c * ow * oh + y * ow + x] != v)
					bad_layout = 1;
			}
		}
	}
	CHECK(!bad_flip, "flip does not mirror the output columns");
	CHECK(!bad_layout, "NCHW and NHWC disagree");
	free(src);
	free(hwc);
	free(hwcf);
	free(chw);
	free(chwf);
}

static void test_bad_args(void)
{
	uint8_t src[4 * 4 * 3] = { 0 }, dst[16 * 16 * 3];
	struct dlc_crop b = { 0, 0, 4, 4, 0, 0 };
	struct dlc_crop out = { 1, 1, 4, 4, 0, 0 };
	struct dlc_crop zero = { 1, 1, 0, 2, 0, 0 };
	struct dlc_crop nan_box = { NAN, 0, 2, 2, 0, 0 };

	CHECK(dlc_resize_rgb(src, 4, 4, 12, &out, 4, 4, 0, dst) == -EINVAL,
	      "box outside the image accepted");
	CHECK(dlc_resize_rgb(src, 4, 4, 12, &zero, 4, 4, 0, dst) == -EINVAL,
	      "empty box accepted");
	CHECK(dlc_resize_rgb(src, 4, 4, 12, &nan_box, 4, 4, 0, dst) == -EINVAL,
	      "NaN box accepted");
	CHECK(dlc_resize_rgb(src, 4, 4, 12, &b, 0, 4, 0, dst) == -EINVAL,
	      "zero width accepted");
	CHECK(dlc_resize_rgb(src, 4, 4, 12, &b, 4, 4, 2, dst) == -EINVAL,
	      "bad layout accepted");
	CHECK(dlc_resize_rgb(src, 4, 4, 11, &b, 4, 4, 0, dst) == -EINVAL,
	      "short stride accepted");
	CHECK(dlc_resize_rgb(src, 4, 4, 12, &b, DLC_MAX_OUT_SIDE + 1, 4, 0,
			     dst) == -EINVAL, "huge output accepted");
	CHECK(dlc_resize_rgb(src, 4, 4, 12, &b, 16, 16, 1, dst) == 0,
	      "4x4 -> 16x16 upscale failed");
}

/*
 * Random noise with the extremes forced in, so that sums near the clamps
 * and every byte position of the SIMD loads matter.
 */
static void noise(uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t r = t_rand();

		p[i] = (r & 0x700) == 0 ? 0 : (r & 0x700) == 0x100 ? 255 :
		       (uint8_t)r;
	}
}

/*
 * @bytes ending right before an inaccessible page: a read past the end
 * faults even where ASan would not see it (an unaligned vector load
 * that only starts inside the buffer).
 */
static uint8_t *guarded(size_t bytes, void **map, size_t *map_len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = (bytes + page - 1) / page * page + page;
	uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED || mprotect(m + len - page, page, PROT_NONE))
		exit(1);
	*map = m;
	*map_len = len;
	return m + len - page - bytes;
}

/*
 * The AVX2 kernels (tap-pair table, its C tail at the right edge, the
 * per-tap fallback for big shrinks, the vertical pass and the plane
 * split) against the C ones: random sizes, boxes, strides, flips and
 * layouts. The source ends at a guard page, so that a read past the
 * end of the last row faults.
 */
static void test_simd_vs_c(void)
{
	struct dlc_resize_ws wc = { NULL, 0 }, wv = { NULL, 0 };
	uint8_t *a = malloc(320 * 320 * 3), *v = malloc(320 * 320 * 3);
	uint32_t i, same = 0, cases = 3000;
	int ret;

	ret = dlc_resize_rgb_ws_path(&wv, a, 1, 1, 3,
				     &(struct dlc_crop){ 0, 0, 1, 1, 0, 0 },
				     1, 1, DLC_LAYOUT_NHWC, v, DLC_RESIZE_AVX2);
	if (ret == -EOPNOTSUPP) {
		t_skip("test_simd_vs_c", "no AVX2 on this CPU: the SIMD path is not compared");
		free(a);
		free(v);
		return;
	}
	CHECK(ret == 0, "AVX2 path returned %d", ret);
	CHECK(dlc_resize_rgb_ws_path(&wv, a, 1, 1, 3,
				     &(struct dlc_crop){ 0, 0, 1, 1, 0, 0 },
				     1, 1, DLC_LAYOUT_NHWC, v, 3) == -EINVAL,
	      "unknown path accepted");
	for (i = 0; i < cases; i++) {
		uint32_t sw = 1 + (uint32_t)(t_rand() % 300);
		uint32_t sh = 1 + (uint32_t)(t_rand() % 120);
		uint32_t ow = 1 + (uint32_t)(t_rand() % 320);
		uint32_t oh = 1 + (uint32_t)(t_rand() % 64);
		uint32_t layout = (uint32_t)(t_rand() & 1);
		size_t stride = (size_t)sw * 3 + (t_rand() % 3 ? 0 : t_rand() % 8);
		size_t bytes = stride * (sh - 1) + (size_t)sw * 3;
		struct dlc_crop b;
		uint8_t *src;
		size_t map_len;
		void *map;
		int rc, rv;

		switch (i % 8) {
		case 0:		/* narrow sources: the C tail does it all */
			sw = 1 + (uint32_t)(t_rand() % 12);
			stride = (size_t)sw * 3;
			bytes = stride * sh;
			break;
		case 1:		/* big shrinks: past the tap-pair table */
			ow = 1 + (uint32_t)(t_rand() % 24);
			break;
		case 2:		/* the decoder's shape: up to 2x either way */
			ow = 1 + (uint32_t)(t_rand() % 224);
			break;
		default:
			break;
		}
		src = guarded(bytes, &map, &map_len);
		noise(src, bytes);
		random_box(sw, sh, &b);
		if (i % 5 == 0) {
			b.x = floor(b.x);
			b.w = floor(b.w) ? floor(b.w) : 1;
		}
		if (i % 7 == 0)		/* flush with the right edge */
			b.x = sw - b.w;
		if (i % 11 == 0) {	/* the whole image */
			b.x = b.y = 0;
			b.w = sw;
			b.h = sh;
		}
		b.flip = (uint32_t)(t_rand() & 1);
		rc = dlc_resize_rgb_ws_path(&wc, src, sw, sh, stride, &b, ow, oh,
					    layout, a, DLC_RESIZE_C);
		rv = dlc_resize_rgb_ws_path(&wv, src, sw, sh, stride, &b, ow, oh,
					    layout, v, DLC_RESIZE_AVX2);
		CHECK(rc == 0 && rv == 0, "case %u returned %d (C) %d (AVX2)",
		      i, rc, rv);
		if (!rc && !rv) {
			int m = t_max_diff(a, v, (size_t)ow * oh * 3);

			CHECK(m == 0, "case %u: %ux%u box (%.4f,%.4f %.4fx%.4f) flip %u layout %u -> %ux%u: AVX2 differs from C by %d",
			      i, sw, sh, b.x, b.y, b.w, b.h, b.flip, layout, ow,
			      oh, m);
			same += m == 0;
		}
		munmap(map, map_len);
	}
	printf("resize: %u/%u random cases identical in AVX2 and C\n", same,
	       cases);
	free(wc.mem);
	free(wv.mem);
	free(a);
	free(v);
}

/*
 * dlc_resize_geom(): a window of a resize is those pixels of the whole
 * resize, byte for byte, whatever part of the image the buffer holds as
 * long as it holds the taps; a buffer short of a tap is -EINVAL. And the
 * window within 1 of the float reference's.
 */
static void test_geom_window(void)
{
	struct dlc_resize_ws ws = { NULL, 0 };
	uint32_t sw = 211, sh = 157, i, same = 0;
	uint8_t *src = pattern(sw, sh);
	uint8_t *full = malloc(400 * 400 * 3), *win = malloc(400 * 400 * 3);
	uint8_t *ref = malloc(400 * 400 * 3);

	for (i = 0; i < 200; i++) {
		struct dlc_resize_geom g;
		uint32_t fw = 1 + (uint32_t)(t_rand() % 400);
		uint32_t fh = 1 + (uint32_t)(t_rand() % 400), y;
		uint32_t x0, y0, x1, y1;
		int ret, bad = 0, m;

		memset(&g, 0, sizeof(g));
		random_box(sw, sh, &g.box);
		if (i % 3 == 0) {	/* the whole image: eval's Resize */
			g.box.x = g.box.y = 0;
			g.box.w = sw;
			g.box.h = sh;
		}
		g.img_w = g.buf_w = sw;
		g.img_h = g.buf_h = sh;
		g.stride = (size_t)sw * 3;
		g.full_w = g.out_w = fw;
		g.full_h = g.out_h = fh;
		ret = dlc_resize_geom(&ws, src, &g, DLC_LAYOUT_NHWC, full,
				      DLC_RESIZE_BEST);
		CHECK(ret == 0, "whole resize: %d", ret);
		g.out_w = 1 + (uint32_t)(t_rand() % fw);
		g.out_h = 1 + (uint32_t)(t_rand() % fh);
		g.win_x = (uint32_t)(t_rand() % (fw - g.out_w + 1));
		g.win_y = (uint32_t)(t_rand() % (fh - g.out_h + 1));
		/* the buffer: just what the window's taps need, plus a bit */
		x0 = (uint32_t)floor(g.box.x + g.win_x * g.box.w / fw);
		x1 = (uint32_t)ceil(g.box.x + (g.win_x + g.out_w) * g.box.w / fw);
		y0 = (uint32_t)floor(g.box.y + g.win_y * g.box.h / fh);
		y1 = (uint32_t)ceil(g.box.y + (g.win_y + g.out_h) * g.box.h / fh);
		{
			uint32_t mx = (uint32_t)ceil(g.box.w / fw) + 2;
			uint32_t my = (uint32_t)ceil(g.box.h / fh) + 2;

			x0 = x0 > mx ? x0 - mx : 0;
			y0 = y0 > my ? y0 - my : 0;
			x1 = x1 + mx < sw ? x1 + mx : sw;
			y1 = y1 + my < sh ? y1 + my : sh;
		}
		g.buf_x = x0;
		g.buf_y = y0;
		g.buf_w = x1 - x0;
		g.buf_h = y1 - y0;
		ret = dlc_resize_geom(&ws, src + ((size_t)y0 * sw + x0) * 3, &g,
				      DLC_LAYOUT_NHWC, win, DLC_RESIZE_BEST);
		CHECK(ret == 0, "window resize: %d", ret);
		for (y = 0; !ret && y < g.out_h; y++)
			bad |= memcmp(win + (size_t)y * g.out_w * 3,
				      full + ((size_t)(g.win_y + y) * fw +
					      g.win_x) * 3,
				      (size_t)g.out_w * 3) != 0;
		CHECK(!bad, "case %u: window (%u,%u %ux%u) of %ux%u differs from the whole resize",
		      i, g.win_x, g.win_y, g.out_w, g.out_h, fw, fh);
		same += !bad;
		/* against the float reference of the whole resize */
		ref_resize(src, sw, sh, &g.box, fw, fh, ref);
		m = 0;
		for (y = 0; y < g.out_h; y++) {
			int d = t_max_diff(win + (size_t)y * g.out_w * 3,
					 ref + ((size_t)(g.win_y + y) * fw +
						g.win_x) * 3,
					 (size_t)g.out_w * 3);

			m = d > m ? d : m;
		}
		CHECK(m <= 1, "case %u: window max diff %d vs float reference",
		      i, m);
	}
	/*
	 * 100 wide, halved to 50: output 10's taps start at source 19
	 * ((int)(21 - 2 + 0.5)). A buffer from 19 works, from 20 does not.
	 */
	{
		struct dlc_resize_geom g = {
			.img_w = 100, .img_h = 4, .buf_x = 19, .buf_w = 60,
			.buf_h = 4, .stride = 100 * 3,
			.box = { 0, 0, 100, 4, 0, 0 }, .full_w = 50,
			.full_h = 4, .win_x = 10, .out_w = 10, .out_h = 4,
		};
		uint8_t *img = pattern(100, 4);

		CHECK(dlc_resize_geom(&ws, img + 19 * 3, &g, DLC_LAYOUT_NHWC,
				      win, DLC_RESIZE_BEST) == 0,
		      "a buffer holding every tap refused");
		g.buf_x = 20;
		CHECK(dlc_resize_geom(&ws, img + 20 * 3, &g, DLC_LAYOUT_NHWC,
				      win, DLC_RESIZE_BEST) == -EINVAL,
		      "a buffer short of a tap accepted");
		g.buf_x = 19;
		g.win_x = 41;	/* past the 50 of the full size */
		CHECK(dlc_resize_geom(&ws, img + 19 * 3, &g, DLC_LAYOUT_NHWC,
				      win, DLC_RESIZE_BEST) == -EINVAL,
		      "a window past the full size accepted");
		free(img);
	}
	printf("resize: %u/200 windows identical to the whole resize\n", same);
	free(ws.mem);
	free(src);
	free(full);
	free(win);
	free(ref);
}

/* ---- Pillow, when Debian's python3 has it ---- */

static int write_ppm(const char *path, const uint8_t *p, uint32_t w,
		     uint32_t h)
{
	FILE *f = fopen(path, "wb");

	if (!f)
		return -1;
	fprintf(f, "P6\n%u %u\n255\n", w, h);
	fwrite(p, 1, (size_t)w * h * 3, f);
	return fclose(f);
}

static uint8_t *read_ppm(const char *path, uint32_t *w, uint32_t *h)
{
	FILE *f = fopen(path, "rb");
	unsigned int mw, mh, mx;
	uint8_t *p;

	if (!f)
		return NULL;
	if (fscanf(f, "P6 %u %u %u", &mw, &mh, &mx) != 3 || mx != 255 ||
	    fgetc(f) == EOF) {
		fclose(f);
		return NULL;
	}
	p = malloc((size_t)mw * mh * 3);
	if (p && fread(p, 1, (size_t)mw * mh * 3, f) != (size_t)mw * mh * 3) {
		free(p);
		p = NULL;
	}
	fclose(f);
	*w = mw;
	*h = mh;
	return p;
}

static const char pil_script[] =
	"import sys\n"
	"from PIL import Image\n"
	"src = Image.open(sys.argv[1]).convert('RGB')\n"
	"for i, line in enumerate(open(sys.argv[2])):\n"
	"    x0, y0, x1, y1, ow, oh = line.split()\n"
	"    box = tuple(float(v) for v in (x0, y0, x1, y1))\n"
	"    out = src.resize((int(ow), int(oh)), Image.BILINEAR, box=box)\n"
	"    out.save('%s/out%d.ppm' % (sys.argv[3], i))\n";

#define PIL_CASES 40

static void test_against_pil(void)
{
	char dir[] = "/tmp/dlc-test-resize-XXXXXX", path[256], cmd[1024];
	struct dlc_crop boxes[PIL_CASES];
	uint32_t ow[PIL_CASES], oh[PIL_CASES], sw = 257, sh = 181, i;
	uint32_t exact = 0;
	uint8_t *src, *mine;
	FILE *f;
	int st;

	if (access("/usr/bin/python3", X_OK) ||
	    system("/usr/bin/python3 -c 'import PIL' >/dev/null 2>&1")) {
		t_skip_required("test_against_pil", "/usr/bin/python3 has no Pillow (make deps)");
		return;
	}
	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	src = pattern(sw, sh);
	mine = malloc(256 * 256 * 3);
	snprintf(path, sizeof(path), "%s/src.ppm", dir);
	write_ppm(path, src, sw, sh);
	snprintf(path, sizeof(path), "%s/resize.py", dir);
	f = fopen(path, "w");
	fputs(pil_script, f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/cases.txt", dir);
	f = fopen(path, "w");
	for (i = 0; i < PIL_CASES; i++) {
		random_box(sw, sh, &boxes[i]);
		if (i % 3 == 0) {
			boxes[i].x = floor(boxes[i].x);
			boxes[i].y = floor(boxes[i].y);
			boxes[i].w = floor(boxes[i].w);
			boxes[i].h = floor(boxes[i].h);
		}
		ow[i] = 1 + (uint32_t)(t_rand() % 256);
		oh[i] = 1 + (uint32_t)(t_rand() % 256);
		if (i == 0) {	/* torchvision's eval shape of thing */
			boxes[i] = (struct dlc_crop){ 16.5, 0, 224.0 * 181 / 256,
						      181, 0, 0 };
			ow[i] = oh[i] = 224;
		}
		/* Pillow reads the box as floats: give it those exactly */
		fprintf(f, "%.9g %.9g %.9g %.9g %u %u\n",
			(double)(float)boxes[i].x, (double)(float)boxes[i].y,
			(double)(float)(boxes[i].x + boxes[i].w),
			(double)(float)(boxes[i].y + boxes[i].h), ow[i], oh[i]);
	}
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "/usr/bin/python3 %s/resize.py %s/src.ppm %s/cases.txt %s",
		 dir, dir, dir, dir);
	st = system(cmd);
	CHECK(st == 0, "python Pillow script failed (%d)", st);
	for (i = 0; st == 0 && i < PIL_CASES; i++) {
		uint32_t pw, ph;
		uint8_t *pil;
		int m;

		snprintf(path, sizeof(path), "%s/out%u.ppm", dir, i);
		pil = read_ppm(path, &pw, &ph);
		CHECK(pil && pw == ow[i] && ph == oh[i], "Pillow output %u", i);
		if (!pil)
			continue;
		CHECK(!dlc_resize_rgb(src, sw, sh, sw * 3, &boxes[i], ow[i],
				      oh[i], DLC_LAYOUT_NHWC, mine), "resize");
		m = t_max_diff(mine, pil, (size_t)ow[i] * oh[i] * 3);
		CHECK(m <= 1, "case %u: max diff %d vs Pillow", i, m);
		exact += m == 0;
		free(pil);
	}
	printf("resize: %u/%u cases bit-exact with Pillow\n", exact, PIL_CASES);
	CHECK(exact == PIL_CASES, "only %u/%u Pillow cases bit-exact", exact,
	      PIL_CASES);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	st = system(cmd);
	(void)st;
	free(src);
	free(mine);
}

int main(void)
{
	t_rng = 12345;
	T_RUN(test_identity_and_constant);
	T_RUN(test_against_reference);
	T_RUN(test_flip_and_layout);
	T_RUN(test_bad_args);
	T_RUN(test_simd_vs_c);
	T_RUN(test_geom_window);
	T_RUN(test_against_pil);
	return t_done("test_resize");
}
