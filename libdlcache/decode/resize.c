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
 * torchvision's RandomResizedCrop crops first (img.crop(box).resize()),
 * so the decoder passes the crop as the image; its Resize + CenterCrop
 * resizes the whole image and keeps a window of the result, which
 * dlc_resize_geom() computes without the rest.
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
 * Pillow's precompute_coeffs() and normalize_coeffs_8bpc() for output
 * pixels [@win, @win + @n) of @out. Pillow keeps the box as C floats, so
 * the scale comes from a float difference. The filter is clipped at the
 * image's edges [0, @in_size); the bounds are stored relative to @org,
 * the image pixel the caller's buffer starts at, and must fall within
 * the @have pixels it holds: returns -EINVAL when they do not.
 */
static int axis_coeffs(struct axis *a, uint32_t in_size, float in0,
		       float in1, uint32_t out, uint32_t win, uint32_t nwin,
		       uint32_t org, uint32_t have)
{
	double scale = (double)(in1 - in0) / out;
	double filterscale = scale < 1.0 ? 1.0 : scale;
	double support = filterscale, ss = 1.0 / filterscale;
	uint32_t i;

	for (i = 0; i < nwin; i++) {
		uint32_t xx = win + i;
		double center = in0 + (xx + 0.5) * scale, ww = 0.0;
		int32_t *k = a->k + (size_t)i * a->ksize;
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
		if (xmin < org || xmin + n > (int64_t)org + have)
			return -EINVAL;
		a->bounds[2 * i] = (int32_t)(xmin - org);
		a->bounds[2 * i + 1] = (int32_t)n;
	}
	return 0;
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

/*
 * Where the horizontal pass puts its output: NHWC rows of RGB pixels, or
 * for NCHW three planes, so that the vertical pass writes each output
 * plane straight away. Output pixel x, channel c of a row is at
 * out + x * px + c * cs. Flipping mirrors the columns here, for free: the
 * vertical pass works column by column.
 */
struct hout {
	uint32_t out_w;
	uint32_t px;		/* 3 (NHWC) or 1 (planes) */
	size_t cs;		/* 1 (NHWC) or bytes of a plane */
	size_t row;		/* bytes from one row to the next */
	int flip;
};

/* Horizontal pass of one row, output pixels [@x0, @x1); @in a source row. */
static void hpass_row_c(uint8_t *restrict out, const uint8_t *restrict in,
			const struct axis *a, const struct hout *ho,
			uint32_t x0, uint32_t x1)
{
	size_t cs = ho->cs;
	uint32_t xx;

	for (xx = x0; xx < x1; xx++) {
		const int32_t *k = a->k + (size_t)xx * a->ksize;
		const uint8_t *p = in + (size_t)a->bounds[2 * xx] * 3;
		int32_t n = a->bounds[2 * xx + 1], x;
		int32_t s0 = 1 << (PREC_BITS - 1), s1 = s0, s2 = s0;
		uint32_t ox = ho->flip ? ho->out_w - 1 - xx : xx;
		uint8_t *o = out + (size_t)ox * ho->px;

		for (x = 0; x < n; x++, p += 3) {
			s0 += p[0] * k[x];
			s1 += p[1] * k[x];
			s2 += p[2] * k[x];
		}
		o[0] = clip8(s0);
		o[cs] = clip8(s1);
		o[2 * cs] = clip8(s2);
	}
}

/*
 * One output row of the vertical pass: a weighted sum of @n rows of @len
 * bytes, @len apart, clipped into @out; @acc holds @len sums.
 */
static void vpass_row_c(uint8_t *restrict out, int32_t *restrict acc,
			const uint8_t *restrict rows, size_t len,
			const int32_t *k, int32_t n)
{
	size_t i;
	int32_t y;

	for (i = 0; i < len; i++)
		acc[i] = 1 << (PREC_BITS - 1);
	for (y = 0; y < n; y++, rows += len)
		for (i = 0; i < len; i++)
			acc[i] += rows[i] * k[y];
	for (i = 0; i < len; i++)
		out[i] = clip8(acc[i]);
}

/*
 * What the horizontal pass needs besides the axis. The AVX2 tap-pair
 * kernel runs every output pixel over the same number of tap pairs (the
 * weights past a pixel's last tap are zero), so it reads source bytes
 * past the last tap: it does the leading @nvec pixels whose reads stay
 * inside the row, and the C loop the few at the right edge.
 */
struct hplan {
	const struct axis *a;
	struct hout o;
	int simd;
	const int16_t *tab;	/* tap-pair weights, or NULL */
	uint32_t npairs;
	uint32_t nvec;		/* a multiple of 4 */
};

/* Past this many tap pairs (downscales over 7x) the table grows large. */
#define MAX_PAIRS	8
/* int16 entries of the table per output-pixel pair and tap pair */
#define TAB_STRIDE	32

/*
 * pmaddwd multiplies 16-bit numbers and the weights have 22 bits, so each
 * weight is split as k = hi * 2^15 + lo, both fitting int16, and the two
 * halves are summed apart: (sum(p * hi) << 15) + sum(p * lo) is the same
 * int32 as sum(p * k), whatever order the additions happen in (wrapping
 * or not, integer addition is exact modulo 2^32, and the true sum fits:
 * weights are >= 0 and sum to about 2^22). A weight is at most 2^22, so
 * hi <= 128, and pmaddwd's pairs of products never overflow.
 *
 * Layout, per pair of output pixels A and B and per tap pair j: sixteen
 * int16 {lo(2j), lo(2j + 1)} x 4 for A then for B (one 256-bit vector,
 * A in the low 128-bit lane), then the same with the high halves.
 */
static void hplan_table(int16_t *tab, const struct axis *a, uint32_t npairs,
			uint32_t nvec)
{
	uint32_t q, j, h, l;

	for (q = 0; q < nvec / 2; q++) {
		for (j = 0; j < npairs; j++, tab += TAB_STRIDE) {
			for (h = 0; h < 2; h++) {
				uint32_t xx = 2 * q + h;
				const int32_t *k = a->k + (size_t)xx * a->ksize;
				int32_t n = a->bounds[2 * xx + 1];
				int32_t t = (int32_t)(2 * j);
				int32_t k0 = t < n ? k[t] : 0;
				int32_t k1 = t + 1 < n ? k[t + 1] : 0;

				for (l = 0; l < 4; l++) {
					int16_t *v = tab + h * 8 + l * 2;

					v[0] = (int16_t)(k0 & 0x7fff);
					v[1] = (int16_t)(k1 & 0x7fff);
					v[16] = (int16_t)(k0 >> 15);
					v[17] = (int16_t)(k1 >> 15);
				}
			}
		}
	}
}

/*
 * Most taps of any output pixel: the kernel's size is a bound that an
 * upscale (2 taps, kernel 3) or a mild shrink does not reach, and the
 * tap-pair kernel pays for every tap it runs.
 */
static uint32_t axis_maxn(const struct axis *a, uint32_t out)
{
	uint32_t xx, m = 1;

	for (xx = 0; xx < out; xx++)
		if ((uint32_t)a->bounds[2 * xx + 1] > m)
			m = (uint32_t)a->bounds[2 * xx + 1];
	return m;
}

/*
 * Output pixels from the left whose tap-pair loads (8 bytes at each tap
 * pair's first pixel) stay inside a row of @src_w pixels, rounded down
 * to a multiple of 4.
 */
static uint32_t hplan_nvec(const struct axis *a, uint32_t npairs,
			   uint32_t src_w, uint32_t out_w)
{
	uint32_t xx;

	for (xx = 0; xx < out_w; xx++) {
		size_t end = (size_t)a->bounds[2 * xx] * 3 +
			     (size_t)(npairs - 1) * 6 + 8;

		if (end > (size_t)src_w * 3)
			break;
	}
	return xx & ~3u;
}

#ifdef DLC_X86_SIMD
/*
 * The same sums with AVX2 (and SSE4.1's pmulld and pmovzxbd): -O2 leaves
 * the loops above scalar, and plain x86-64 has no 32-bit vector multiply.
 * Integer arithmetic giving the same int32 sums: the bytes are identical.
 */

/* An unaligned 4-byte store (memcpy: no aliasing or alignment UB). */
static inline void put4(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/*
 * Sums of output pixels A and B (source offsets @oa and @ob) in two rows
 * at once, which share the weights: per tap pair, the 6 bytes of two
 * source pixels become 16-bit pairs {R0, R1}, {G0, G1}, {B0, B1}, {0, 0}
 * that pmaddwd multiplies by {k0, k1} and adds, giving R, G, B sums in
 * 32-bit lanes 0-2. A lives in the low 128-bit lane, B in the high one.
 * The results are shifted down, not yet clamped.
 */
__attribute__((target("avx2"), always_inline))
static inline void hpair_avx2(const uint8_t *in0, const uint8_t *in1,
			      size_t oa, size_t ob, const int16_t *tab,
			      uint32_t npairs, __m256i *r0, __m256i *r1)
{
	const __m256i shuf = _mm256_setr_epi8(
		0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1,
		0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1);
	__m256i lo0 = _mm256_set1_epi32(1 << (PREC_BITS - 1)), lo1 = lo0;
	__m256i hi0 = _mm256_setzero_si256(), hi1 = hi0;
	uint32_t j;

	for (j = 0; j < npairs; j++, oa += 6, ob += 6, tab += TAB_STRIDE) {
		__m256i kl = _mm256_loadu_si256((const __m256i *)tab);
		__m256i kh = _mm256_loadu_si256((const __m256i *)(tab + 16));
		__m128i a0 = _mm_loadl_epi64((const __m128i *)(in0 + oa));
		__m128i b0 = _mm_loadl_epi64((const __m128i *)(in0 + ob));
		__m128i a1 = _mm_loadl_epi64((const __m128i *)(in1 + oa));
		__m128i b1 = _mm_loadl_epi64((const __m128i *)(in1 + ob));
		__m256i p0 = _mm256_inserti128_si256(_mm256_castsi128_si256(a0),
						     b0, 1);
		__m256i p1 = _mm256_inserti128_si256(_mm256_castsi128_si256(a1),
						     b1, 1);

		p0 = _mm256_shuffle_epi8(p0, shuf);
		p1 = _mm256_shuffle_epi8(p1, shuf);
		lo0 = _mm256_add_epi32(lo0, _mm256_madd_epi16(p0, kl));
		hi0 = _mm256_add_epi32(hi0, _mm256_madd_epi16(p0, kh));
		lo1 = _mm256_add_epi32(lo1, _mm256_madd_epi16(p1, kl));
		hi1 = _mm256_add_epi32(hi1, _mm256_madd_epi16(p1, kh));
	}
	*r0 = _mm256_srai_epi32(_mm256_add_epi32(_mm256_slli_epi32(hi0, 15),
						 lo0), PREC_BITS);
	*r1 = _mm256_srai_epi32(_mm256_add_epi32(_mm256_slli_epi32(hi1, 15),
						 lo1), PREC_BITS);
}

/*
 * Pixels p0-p3 as two hpair_avx2() results, clamped by saturating packs
 * (exactly as clip8()) and squeezed from RGBx to 12 bytes in @order: RGB
 * pixels at @o, or four bytes in each of three planes @cs apart.
 */
__attribute__((target("avx2"), always_inline))
static inline void hstore_avx2(uint8_t *o, __m256i s01, __m256i s23,
			       __m128i order, size_t cs)
{
	/* lanes: {p0, p2} {p1, p3} as int16, then bytes */
	__m256i w = _mm256_packs_epi32(s01, s23);
	__m128i v;

	w = _mm256_packus_epi16(w, w);
	v = _mm_unpacklo_epi32(_mm256_castsi256_si128(w),
			       _mm256_extracti128_si256(w, 1));
	v = _mm_shuffle_epi8(v, order);
	if (cs == 1) {
		_mm_storel_epi64((__m128i *)o, v);
		put4(o + 8, (uint32_t)_mm_extract_epi32(v, 2));
	} else {
		put4(o, (uint32_t)_mm_cvtsi128_si32(v));
		put4(o + cs, (uint32_t)_mm_extract_epi32(v, 1));
		put4(o + 2 * cs, (uint32_t)_mm_extract_epi32(v, 2));
	}
}

/*
 * Output pixels [0, nvec) of two rows (@in0 and @in1 into @out0 and
 * @out1; the same row twice for an odd one out), four at a time and
 * mirrored when flipping. Inlined once per tap-pair count that crops
 * usually have, so that the tap loop unrolls.
 */
__attribute__((target("avx2"), always_inline))
static inline void hpass_pairs_n(uint8_t *out0, uint8_t *out1,
				 const uint8_t *in0, const uint8_t *in1,
				 const struct hplan *hp, uint32_t npairs)
{
	/* 4 RGBx pixels to RGB x 4, or to RRRR GGGG BBBB; mirrored */
	static const int8_t orders[4][16] = {
		{ 0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1 },
		{ 12, 13, 14, 8, 9, 10, 4, 5, 6, 0, 1, 2, -1, -1, -1, -1 },
		{ 0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, -1, -1, -1, -1 },
		{ 12, 8, 4, 0, 13, 9, 5, 1, 14, 10, 6, 2, -1, -1, -1, -1 },
	};
	const int32_t *b = hp->a->bounds;
	const int16_t *tab = hp->tab;
	uint32_t step = npairs * TAB_STRIDE, g, ngroups = hp->nvec / 4;
	size_t cs = hp->o.cs, o = 0;
	ptrdiff_t dir = 4 * (ptrdiff_t)hp->o.px;
	__m128i order = _mm_loadu_si128((const __m128i *)
		orders[(cs == 1 ? 0 : 2) + (hp->o.flip ? 1 : 0)]);

	if (hp->o.flip) {
		o = (size_t)(hp->o.out_w - 4) * hp->o.px;
		dir = -dir;
	}
	for (g = 0; g < ngroups; g++, b += 8, tab += 2 * step, o += dir) {
		__m256i a0, a1, c0, c1;

		hpair_avx2(in0, in1, (size_t)b[0] * 3, (size_t)b[2] * 3, tab,
			   npairs, &a0, &a1);
		hpair_avx2(in0, in1, (size_t)b[4] * 3, (size_t)b[6] * 3,
			   tab + step, npairs, &c0, &c1);
		hstore_avx2(out0 + o, a0, c0, order, cs);
		hstore_avx2(out1 + o, a1, c1, order, cs);
	}
}

__attribute__((target("avx2")))
static void hpass_pairs_avx2(uint8_t *out0, uint8_t *out1,
			     const uint8_t *in0, const uint8_t *in1,
			     const struct hplan *hp)
{
	switch (hp->npairs) {
	case 1:
		hpass_pairs_n(out0, out1, in0, in1, hp, 1);
		break;
	case 2:
		hpass_pairs_n(out0, out1, in0, in1, hp, 2);
		break;
	case 3:
		hpass_pairs_n(out0, out1, in0, in1, hp, 3);
		break;
	default:
		hpass_pairs_n(out0, out1, in0, in1, hp, hp->npairs);
		break;
	}
}

/* Any number of taps: one pmulld per tap and pixel, for big shrinks. */
__attribute__((target("avx2")))
static void hpass_row_avx2(uint8_t *restrict out, const uint8_t *restrict in,
			   uint32_t src_w, const struct hplan *hp)
{
	const struct axis *a = hp->a;
	uint32_t xx, out_w = hp->o.out_w;
	size_t cs = hp->o.cs;

	for (xx = 0; xx < out_w; xx++) {
		const int32_t *k = a->k + (size_t)xx * a->ksize;
		int32_t first = a->bounds[2 * xx], n = a->bounds[2 * xx + 1], x;
		const uint8_t *p = in + (size_t)first * 3;
		__m128i s = _mm_setr_epi32(1 << (PREC_BITS - 1),
					   1 << (PREC_BITS - 1),
					   1 << (PREC_BITS - 1), 0);
		uint8_t *o = out + (size_t)(hp->o.flip ? out_w - 1 - xx : xx) *
				   hp->o.px;
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
		o[0] = clip8(v[0]);
		o[cs] = clip8(v[1]);
		o[2 * cs] = clip8(v[2]);
	}
}

/*
 * One output row of the vertical pass, 16 bytes at a time with the sums
 * kept in registers and clipped by saturating packs. (Row pairs through
 * pmaddwd, as in the horizontal pass, measured no faster here.) The last
 * block overlaps the one before rather than leaving a scalar tail: it
 * writes the same bytes again. Rows shorter than a block go through C.
 */
__attribute__((target("avx2")))
static void vpass_row_avx2(uint8_t *restrict out, int32_t *restrict acc,
			   const uint8_t *restrict rows, size_t len,
			   const int32_t *k, int32_t n)
{
	const __m256i half = _mm256_set1_epi32(1 << (PREC_BITS - 1));
	size_t i;
	int32_t y;

	if (len < 16) {
		vpass_row_c(out, acc, rows, len, k, n);
		return;
	}
	for (i = 0; i < len; i += 16) {
		size_t at = i + 16 <= len ? i : len - 16;
		const uint8_t *r = rows + at;
		__m256i s0 = half, s1 = half;
		__m128i b;

		for (y = 0; y < n; y++, r += len) {
			__m256i kv = _mm256_set1_epi32(k[y]);
			__m256i b0 = _mm256_cvtepu8_epi32(
				_mm_loadl_epi64((const __m128i *)r));
			__m256i b1 = _mm256_cvtepu8_epi32(
				_mm_loadl_epi64((const __m128i *)(r + 8)));

			s0 = _mm256_add_epi32(s0, _mm256_mullo_epi32(b0, kv));
			s1 = _mm256_add_epi32(s1, _mm256_mullo_epi32(b1, kv));
		}
		s0 = _mm256_srai_epi32(s0, PREC_BITS);
		s1 = _mm256_srai_epi32(s1, PREC_BITS);
		/* packs works per 128-bit lane: put the quarters back in order */
		s0 = _mm256_permute4x64_epi64(_mm256_packs_epi32(s0, s1), 0xd8);
		b = _mm_packus_epi16(_mm256_castsi256_si128(s0),
				     _mm256_extracti128_si256(s0, 1));
		_mm_storeu_si128((__m128i *)(out + at), b);
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

/* The horizontal pass of @rows rows, @src_stride apart, into @tmp. */
static void hpass(uint8_t *tmp, const uint8_t *src, size_t src_stride,
		  uint32_t rows, uint32_t src_w, const struct hplan *hp)
{
	size_t len = hp->o.row;
	uint32_t y;

#ifdef DLC_X86_SIMD
	if (hp->tab) {
		for (y = 0; y < rows; y += 2) {
			uint32_t y1 = y + 1 < rows ? y + 1 : y;
			uint8_t *o0 = tmp + (size_t)y * len;
			uint8_t *o1 = tmp + (size_t)y1 * len;
			const uint8_t *i0 = src + (size_t)y * src_stride;
			const uint8_t *i1 = src + (size_t)y1 * src_stride;

			hpass_pairs_avx2(o0, o1, i0, i1, hp);
			hpass_row_c(o0, i0, hp->a, &hp->o, hp->nvec,
				    hp->o.out_w);
			if (y1 != y)
				hpass_row_c(o1, i1, hp->a, &hp->o, hp->nvec,
					    hp->o.out_w);
		}
		return;
	}
	if (hp->simd) {
		for (y = 0; y < rows; y++)
			hpass_row_avx2(tmp + (size_t)y * len,
				       src + (size_t)y * src_stride, src_w, hp);
		return;
	}
#endif
	(void)src_w;
	for (y = 0; y < rows; y++)
		hpass_row_c(tmp + (size_t)y * len, src + (size_t)y * src_stride,
			    hp->a, &hp->o, 0, hp->o.out_w);
}

static void vpass_row(uint8_t *restrict out, int32_t *restrict acc,
		      const uint8_t *restrict rows, size_t len,
		      const int32_t *k, int32_t n, int simd)
{
#ifdef DLC_X86_SIMD
	if (simd) {
		vpass_row_avx2(out, acc, rows, len, k, n);
		return;
	}
#endif
	(void)simd;
	vpass_row_c(out, acc, rows, len, k, n);
}

static int geom_ok(const struct dlc_resize_geom *g)
{
	return g->img_w && g->img_h && g->img_w <= INT32_MAX / 4 &&
	       g->img_h <= INT32_MAX / 4 && g->buf_w && g->buf_h &&
	       g->buf_x <= g->img_w - g->buf_w &&
	       g->buf_y <= g->img_h - g->buf_h && g->buf_w <= g->img_w &&
	       g->buf_h <= g->img_h && g->stride >= (size_t)g->buf_w * 3 &&
	       g->out_w && g->out_h && g->out_w <= DLC_MAX_OUT_SIDE &&
	       g->out_h <= DLC_MAX_OUT_SIDE && g->full_w >= g->out_w &&
	       g->full_h >= g->out_h && g->full_w <= INT32_MAX / 4 &&
	       g->full_h <= INT32_MAX / 4 &&
	       g->win_x <= g->full_w - g->out_w &&
	       g->win_y <= g->full_h - g->out_h &&
	       box_ok(&g->box, g->img_w, g->img_h);
}

int dlc_resize_geom(struct dlc_resize_ws *ws, const uint8_t *src,
		    const struct dlc_resize_geom *g, uint32_t layout,
		    uint8_t *dst, uint32_t path)
{
	struct axis ax, ay;
	struct hplan hp;
	float x0, x1, y0, y1;
	uint32_t yfirst, ylast, rows, yy, c, out_w, out_h;
	size_t sz_ax, sz_ay, sz_tab, sz_acc, len, plane;
	int simd;
	int32_t *acc;
	uint8_t *tmp;

	if (!ws || !src || !g || !dst || !geom_ok(g) ||
	    layout > DLC_LAYOUT_NHWC || path > DLC_RESIZE_AVX2)
		return -EINVAL;
	simd = path == DLC_RESIZE_C ? 0 : have_avx2();
	if (path == DLC_RESIZE_AVX2 && !simd)
		return -EOPNOTSUPP;
	out_w = g->out_w;
	out_h = g->out_h;

	x0 = (float)g->box.x;
	x1 = (float)(g->box.x + g->box.w);
	y0 = (float)g->box.y;
	y1 = (float)(g->box.y + g->box.h);
	if (!(x1 > x0) || !(y1 > y0))
		return -EINVAL;
	ax.ksize = axis_ksize(x0, x1, g->full_w);
	ay.ksize = axis_ksize(y0, y1, g->full_h);
	sz_ax = align16((size_t)out_w * (ax.ksize + 2) * sizeof(int32_t));
	sz_ay = align16((size_t)out_h * (ay.ksize + 2) * sizeof(int32_t));
	if (ws_reserve(ws, sz_ax + sz_ay))
		return -ENOMEM;
	ws_carve(ws, &ax, &ay, sz_ax, out_w, out_h);
	/* taps outside the buffer: the caller decoded too little */
	if (axis_coeffs(&ax, g->img_w, x0, x1, g->full_w, g->win_x, out_w,
			g->buf_x, g->buf_w) ||
	    axis_coeffs(&ay, g->img_h, y0, y1, g->full_h, g->win_y, out_h,
			g->buf_y, g->buf_h))
		return -EINVAL;
	yfirst = (uint32_t)ay.bounds[0];
	ylast = (uint32_t)(ay.bounds[2 * (out_h - 1)] +
			   ay.bounds[2 * (out_h - 1) + 1]);
	rows = ylast - yfirst;

	hp.o.out_w = out_w;
	hp.o.flip = g->box.flip != 0;
	if (layout == DLC_LAYOUT_NHWC) {
		hp.o.px = 3;
		hp.o.cs = 1;
		hp.o.row = (size_t)out_w * 3;
	} else {
		hp.o.px = 1;
		hp.o.cs = (size_t)rows * out_w;
		hp.o.row = out_w;
	}
	hp.simd = simd;
	hp.tab = NULL;
	hp.npairs = (axis_maxn(&ax, out_w) + 1) / 2;
	hp.nvec = simd && hp.npairs <= MAX_PAIRS ?
		  hplan_nvec(&ax, hp.npairs, g->buf_w, out_w) : 0;
	sz_tab = align16((size_t)hp.nvec / 2 * hp.npairs * TAB_STRIDE *
			 sizeof(int16_t));
	len = (size_t)out_w * 3;
	sz_acc = align16(len * sizeof(int32_t));

	/* realloc keeps the coefficients; only the pointers move */
	if (ws_reserve(ws, sz_ax + sz_ay + sz_tab + sz_acc +
			   (size_t)rows * len))
		return -ENOMEM;
	ws_carve(ws, &ax, &ay, sz_ax, out_w, out_h);
	hp.a = &ax;
	if (hp.nvec) {
		int16_t *tab = (int16_t *)((char *)ws->mem + sz_ax + sz_ay);

		hplan_table(tab, &ax, hp.npairs, hp.nvec);
		hp.tab = tab;
	}
	acc = (int32_t *)((char *)ws->mem + sz_ax + sz_ay + sz_tab);
	tmp = (uint8_t *)acc + sz_acc;

	hpass(tmp, src + (size_t)yfirst * g->stride, g->stride, rows,
	      g->buf_w, &hp);

	plane = (size_t)out_w * out_h;
	for (yy = 0; yy < out_h; yy++) {
		const int32_t *k = ay.k + (size_t)yy * ay.ksize;
		int32_t first = ay.bounds[2 * yy] - (int32_t)yfirst;
		int32_t n = ay.bounds[2 * yy + 1];

		if (layout == DLC_LAYOUT_NHWC) {
			vpass_row(dst + (size_t)yy * len, acc,
				  tmp + (size_t)first * len, len, k, n, simd);
			continue;
		}
		for (c = 0; c < 3; c++)
			vpass_row(dst + c * plane + (size_t)yy * out_w, acc,
				  tmp + c * hp.o.cs + (size_t)first * out_w,
				  out_w, k, n, simd);
	}
	return 0;
}

int dlc_resize_rgb_ws_path(struct dlc_resize_ws *ws, const uint8_t *src,
			   uint32_t src_w, uint32_t src_h, size_t src_stride,
			   const struct dlc_crop *box, uint32_t out_w,
			   uint32_t out_h, uint32_t layout, uint8_t *dst,
			   uint32_t path)
{
	struct dlc_resize_geom g = {
		.img_w = src_w, .img_h = src_h,
		.buf_w = src_w, .buf_h = src_h, .stride = src_stride,
		.full_w = out_w, .full_h = out_h,
		.out_w = out_w, .out_h = out_h,
	};

	if (!box)
		return -EINVAL;
	g.box = *box;
	return dlc_resize_geom(ws, src, &g, layout, dst, path);
}

int dlc_resize_rgb_ws(struct dlc_resize_ws *ws, const uint8_t *src,
		      uint32_t src_w, uint32_t src_h, size_t src_stride,
		      const struct dlc_crop *box, uint32_t out_w,
		      uint32_t out_h, uint32_t layout, uint8_t *dst)
{
	return dlc_resize_rgb_ws_path(ws, src, src_w, src_h, src_stride, box,
				      out_w, out_h, layout, dst,
				      DLC_RESIZE_BEST);
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
