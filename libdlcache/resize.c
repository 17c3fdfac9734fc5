// SPDX-License-Identifier: MIT
/*
 * Antialiased bilinear resize of a box of a packed RGB image, matching
 * Pillow's Image.resize(size, BILINEAR, box=...) (libImaging/Resample.c):
 * a triangle filter widened by the downscale factor, per-pixel normalized
 * weights turned into 22-bit fixed point, a horizontal pass over only the
 * rows the vertical pass needs, then the vertical pass. Integer arithmetic
 * in the same order as Pillow gives the same bytes, so torchvision's
 * PIL-based transforms are reproduced exactly.
 *
 * Like Pillow, the filter is clipped at the image's edges, not the box's:
 * pixels just outside the box contribute to the output's border pixels.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dlcache.h"
#include "resize.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define DLC_X86_SIMD 1
#include <immintrin.h>
#endif

/* Pillow's 8-bit precision: 32 bits less 8 of data and 2 of headroom. */
#define PREC_BITS	22
/* Box coordinates may stray this far outside the image (float noise). */
#define BOX_SLACK	1e-6

struct axis {
	int32_t *bounds;	/* first source index and count per output */
	int32_t *k;		/* ksize fixed-point weights per output */
	uint32_t ksize;
};

static double triangle(double x)
{
	if (x < 0.0)
		x = -x;
	return x < 1.0 ? 1.0 - x : 0.0;
}

static uint32_t axis_ksize(float in0, float in1, uint32_t out)
{
	double scale = (double)(in1 - in0) / out;

	if (scale < 1.0)
		scale = 1.0;
	return (uint32_t)ceil(scale) * 2 + 1;
}

/*
 * Pillow's precompute_coeffs() and normalize_coeffs_8bpc(). Pillow keeps
 * the box as C floats, so the scale comes from a float difference.
 */
static void axis_coeffs(struct axis *a, uint32_t in_size, float in0,
			float in1, uint32_t out)
{
	double scale = (double)(in1 - in0) / out;
	double filterscale = scale < 1.0 ? 1.0 : scale;
	double support = filterscale, ss = 1.0 / filterscale;
	uint32_t xx;

	for (xx = 0; xx < out; xx++) {
		double center = in0 + (xx + 0.5) * scale, ww = 0.0;
		int32_t *k = a->k + (size_t)xx * a->ksize;
		int64_t xmin = (int64_t)(center - support + 0.5);
		int64_t xmax = (int64_t)(center + support + 0.5);
		int64_t n, x;

		if (xmin < 0)
			xmin = 0;
		if (xmax > in_size)
			xmax = in_size;
		n = xmax - xmin;
		if (n > a->ksize)
			n = a->ksize;
		if (n < 1) {
			/* only reachable with a box at the very edge */
			xmin = xmin >= in_size ? in_size - 1 : xmin;
			n = 1;
		}
		for (x = 0; x < n; x++)
			ww += triangle((x + xmin - center + 0.5) * ss);
		for (x = 0; x < n; x++) {
			double w = triangle((x + xmin - center + 0.5) * ss);

			if (ww != 0.0)
				w /= ww;
			k[x] = (int32_t)(0.5 + w * (1 << PREC_BITS));
		}
		for (; x < a->ksize; x++)
			k[x] = 0;
		a->bounds[2 * xx] = (int32_t)xmin;
		a->bounds[2 * xx + 1] = (int32_t)n;
	}
}

static uint8_t clip8(int32_t v)
{
	v >>= PREC_BITS;
	return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v;
}

static int box_ok(const struct dlc_crop *b, uint32_t w, uint32_t h)
{
	return isfinite(b->x) && isfinite(b->y) && isfinite(b->w) &&
	       isfinite(b->h) && b->w > 0 && b->h > 0 &&
	       b->x >= -BOX_SLACK && b->y >= -BOX_SLACK &&
	       b->x + b->w <= w + BOX_SLACK && b->y + b->h <= h + BOX_SLACK;
}

static size_t align16(size_t n)
{
	return (n + 15) & ~(size_t)15;
}

static int ws_reserve(struct dlc_resize_ws *ws, size_t need)
{
	void *p;

	if (need <= ws->cap)
		return 0;
	p = realloc(ws->mem, need);
	if (!p)
		return -ENOMEM;
	ws->mem = p;
	ws->cap = need;
	return 0;
}

static void ws_carve(struct dlc_resize_ws *ws, struct axis *ax,
		     struct axis *ay, size_t sz_ax, uint32_t out_w,
		     uint32_t out_h)
{
	char *mem = ws->mem;

	ax->bounds = (int32_t *)mem;
	ax->k = ax->bounds + 2 * (size_t)out_w;
	ay->bounds = (int32_t *)(mem + sz_ax);
	ay->k = ay->bounds + 2 * (size_t)out_h;
}

/* One row of the horizontal pass: @in is a source row of @src_w pixels. */
static void hpass_row_c(uint8_t *restrict out, const uint8_t *restrict in,
			uint32_t src_w, const struct axis *a, uint32_t out_w)
{
	uint32_t xx;

	(void)src_w;
	for (xx = 0; xx < out_w; xx++) {
		const int32_t *k = a->k + (size_t)xx * a->ksize;
		const uint8_t *p = in + (size_t)a->bounds[2 * xx] * 3;
		int32_t n = a->bounds[2 * xx + 1], x;
		int32_t s0 = 1 << (PREC_BITS - 1), s1 = s0, s2 = s0;

		for (x = 0; x < n; x++, p += 3) {
			s0 += p[0] * k[x];
			s1 += p[1] * k[x];
			s2 += p[2] * k[x];
		}
		out[3 * xx] = clip8(s0);
		out[3 * xx + 1] = clip8(s1);
		out[3 * xx + 2] = clip8(s2);
	}
}

/*
 * One output row of the vertical pass: a weighted sum of @n rows of @len
 * bytes, @len apart, left in @acc.
 */
static void vpass_row_c(int32_t *restrict acc, const uint8_t *restrict rows,
			size_t len, const int32_t *k, int32_t n)
{
	size_t i;
	int32_t y;

	for (i = 0; i < len; i++)
		acc[i] = 1 << (PREC_BITS - 1);
	for (y = 0; y < n; y++, rows += len)
		for (i = 0; i < len; i++)
			acc[i] += rows[i] * k[y];
}

#ifdef DLC_X86_SIMD
/*
 * The same sums with AVX2 (and SSE4.1's pmulld and pmovzxbd): -O2 leaves
 * the loops above scalar, and plain x86-64 has no 32-bit vector multiply.
 * Integer arithmetic in the same order: the bytes are identical.
 */
__attribute__((target("avx2")))
static void hpass_row_avx2(uint8_t *restrict out, const uint8_t *restrict in,
			   uint32_t src_w, const struct axis *a, uint32_t out_w)
{
	uint32_t xx;

	for (xx = 0; xx < out_w; xx++) {
		const int32_t *k = a->k + (size_t)xx * a->ksize;
		int32_t first = a->bounds[2 * xx], n = a->bounds[2 * xx + 1], x;
		const uint8_t *p = in + (size_t)first * 3;
		__m128i s = _mm_setr_epi32(1 << (PREC_BITS - 1),
					   1 << (PREC_BITS - 1),
					   1 << (PREC_BITS - 1), 0);
		int32_t v[4];

		/* 4-byte loads read one byte past the last tap's pixel */
		int32_t safe = (uint32_t)(first + n) < src_w ? n : n - 1;

		for (x = 0; x < safe; x++, p += 3) {
			uint32_t u;
			__m128i b;

			memcpy(&u, p, sizeof(u));
			b = _mm_cvtepu8_epi32(_mm_cvtsi32_si128((int)u));
			s = _mm_add_epi32(s, _mm_mullo_epi32(b, _mm_set1_epi32(k[x])));
		}
		_mm_storeu_si128((__m128i *)v, s);
		for (; x < n; x++, p += 3) {
			v[0] += p[0] * k[x];
			v[1] += p[1] * k[x];
			v[2] += p[2] * k[x];
		}
		out[3 * xx] = clip8(v[0]);
		out[3 * xx + 1] = clip8(v[1]);
		out[3 * xx + 2] = clip8(v[2]);
	}
}

__attribute__((target("avx2")))
static void vpass_row_avx2(int32_t *restrict acc, const uint8_t *restrict rows,
			   size_t len, const int32_t *k, int32_t n)
{
	const __m256i half = _mm256_set1_epi32(1 << (PREC_BITS - 1));
	size_t i, vlen = len & ~(size_t)7;
	int32_t y;

	for (i = 0; i < vlen; i += 8)
		_mm256_storeu_si256((__m256i *)(acc + i), half);
	for (; i < len; i++)
		acc[i] = 1 << (PREC_BITS - 1);
	for (y = 0; y < n; y++, rows += len) {
		__m256i kv = _mm256_set1_epi32(k[y]);

		for (i = 0; i < vlen; i += 8) {
			__m256i b = _mm256_cvtepu8_epi32(
				_mm_loadl_epi64((const __m128i *)(rows + i)));
			__m256i s = _mm256_loadu_si256((const __m256i *)(acc + i));

			s = _mm256_add_epi32(s, _mm256_mullo_epi32(b, kv));
			_mm256_storeu_si256((__m256i *)(acc + i), s);
		}
		for (; i < len; i++)
			acc[i] += rows[i] * k[y];
	}
}

static int have_avx2(void)
{
	return __builtin_cpu_supports("avx2");
}
#else
static int have_avx2(void)
{
	return 0;
}
#endif

static void hpass_row(uint8_t *restrict out, const uint8_t *restrict in,
		      uint32_t src_w, const struct axis *a, uint32_t out_w,
		      int simd)
{
#ifdef DLC_X86_SIMD
	if (simd) {
		hpass_row_avx2(out, in, src_w, a, out_w);
		return;
	}
#endif
	(void)simd;
	hpass_row_c(out, in, src_w, a, out_w);
}

static void vpass_row(int32_t *restrict acc, const uint8_t *restrict rows,
		      size_t len, const int32_t *k, int32_t n, int simd)
{
#ifdef DLC_X86_SIMD
	if (simd) {
		vpass_row_avx2(acc, rows, len, k, n);
		return;
	}
#endif
	(void)simd;
	vpass_row_c(acc, rows, len, k, n);
}

int dlc_resize_rgb_ws(struct dlc_resize_ws *ws, const uint8_t *src,
		      uint32_t src_w, uint32_t src_h, size_t src_stride,
		      const struct dlc_crop *box, uint32_t out_w,
		      uint32_t out_h, uint32_t layout, uint8_t *dst)
{
	struct axis ax, ay;
	float x0, x1, y0, y1;
	uint32_t yfirst, ylast, rows, xx, yy;
	size_t sz_ax, sz_ay, sz_acc, plane;
	int simd = have_avx2();
	int32_t *acc;
	uint8_t *tmp;

	if (!ws || !src || !box || !dst || !src_w || !src_h ||
	    src_w > INT32_MAX / 4 || src_h > INT32_MAX / 4 ||
	    src_stride < (size_t)src_w * 3 || !out_w || !out_h ||
	    out_w > DLC_MAX_OUT_SIDE || out_h > DLC_MAX_OUT_SIDE ||
	    layout > DLC_LAYOUT_NHWC || !box_ok(box, src_w, src_h))
		return -EINVAL;

	x0 = (float)box->x;
	x1 = (float)(box->x + box->w);
	y0 = (float)box->y;
	y1 = (float)(box->y + box->h);
	if (!(x1 > x0) || !(y1 > y0))
		return -EINVAL;
	ax.ksize = axis_ksize(x0, x1, out_w);
	ay.ksize = axis_ksize(y0, y1, out_h);
	sz_ax = align16((size_t)out_w * (ax.ksize + 2) * sizeof(int32_t));
	sz_ay = align16((size_t)out_h * (ay.ksize + 2) * sizeof(int32_t));
	if (ws_reserve(ws, sz_ax + sz_ay))
		return -ENOMEM;
	ws_carve(ws, &ax, &ay, sz_ax, out_w, out_h);
	axis_coeffs(&ax, src_w, x0, x1, out_w);
	axis_coeffs(&ay, src_h, y0, y1, out_h);
	yfirst = (uint32_t)ay.bounds[0];
	ylast = (uint32_t)(ay.bounds[2 * (out_h - 1)] +
			   ay.bounds[2 * (out_h - 1) + 1]);
	rows = ylast - yfirst;

	/* realloc keeps the coefficients; only the pointers move */
	sz_acc = align16((size_t)out_w * 3 * sizeof(int32_t));
	if (ws_reserve(ws, sz_ax + sz_ay + sz_acc + (size_t)rows * out_w * 3))
		return -ENOMEM;
	ws_carve(ws, &ax, &ay, sz_ax, out_w, out_h);
	acc = (int32_t *)((char *)ws->mem + sz_ax + sz_ay);
	tmp = (uint8_t *)ws->mem + sz_ax + sz_ay + sz_acc;

	for (yy = 0; yy < rows; yy++)
		hpass_row(tmp + (size_t)yy * out_w * 3,
			  src + (size_t)(yfirst + yy) * src_stride, src_w, &ax,
			  out_w, simd);

	plane = (size_t)out_w * out_h;
	for (yy = 0; yy < out_h; yy++) {
		const int32_t *k = ay.k + (size_t)yy * ay.ksize;
		int32_t first = ay.bounds[2 * yy] - (int32_t)yfirst;

		vpass_row(acc, tmp + (size_t)first * out_w * 3, (size_t)out_w * 3,
			  k, ay.bounds[2 * yy + 1], simd);
		for (xx = 0; xx < out_w; xx++) {
			uint32_t ox = box->flip ? out_w - 1 - xx : xx;
			size_t at = (size_t)yy * out_w + ox;

			if (layout == DLC_LAYOUT_NCHW) {
				dst[at] = clip8(acc[3 * xx]);
				dst[plane + at] = clip8(acc[3 * xx + 1]);
				dst[2 * plane + at] = clip8(acc[3 * xx + 2]);
			} else {
				dst[3 * at] = clip8(acc[3 * xx]);
				dst[3 * at + 1] = clip8(acc[3 * xx + 1]);
				dst[3 * at + 2] = clip8(acc[3 * xx + 2]);
			}
		}
	}
	return 0;
}

int dlc_resize_rgb(const uint8_t *src, uint32_t src_w, uint32_t src_h,
		   size_t src_stride, const struct dlc_crop *box,
		   uint32_t out_w, uint32_t out_h, uint32_t layout,
		   uint8_t *dst)
{
	struct dlc_resize_ws ws = { NULL, 0 };
	int ret;

	ret = dlc_resize_rgb_ws(&ws, src, src_w, src_h, src_stride, box,
				out_w, out_h, layout, dst);
	free(ws.mem);
	return ret;
}
