// SPDX-License-Identifier: MIT
/*
 * dlcachectl gen's images: what each one is (size, chroma format,
 * progressive or not) and what it shows, rendered into RGB or gray pixels
 * that gen.c then encodes. Every image is a pure function of (seed, image
 * number) and every class style of (seed, class number), so the set is
 * byte-identical for any thread count. The content is layered like a
 * photo: smooth gradients, value-noise "clouds", soft-edged shapes,
 * sinusoidal textures, lighting detail at several scales and mild sensor
 * noise, so that the entropy coder sees roughly the coefficient statistics
 * it sees on real pictures.
 *
 * Separate from the command (gen.c) and its directory (gendir.c): this is
 * the synthesis alone, pixels from numbers, with no file or thread in it.
 * Changing anything here changes the bytes of every set: bump GEN_VERSION
 * (gen.h).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

#define PI_F		3.14159265358979f

/* ------------------------------------------------------------------ */
/* Random numbers: counter-based, so any image can be made on its own  */
/* ------------------------------------------------------------------ */

enum rng_stream {
	STREAM_PLAN = 1,	/* dimensions */
	STREAM_CLASS,		/* class style */
	STREAM_IMAGE,		/* content */
	STREAM_NOISE,		/* pixel noise */
	STREAM_SPREAD,		/* offsets of the format sequences */
};

struct rng {
	uint64_t s;
};

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void rng_seed(struct rng *r, uint64_t seed, uint64_t stream,
		     uint64_t item)
{
	r->s = mix64(seed ^ mix64(stream * 0x9e3779b97f4a7c15ULL + item));
}

/* splitmix64: passes BigCrush and costs a few cycles. */
static uint64_t rng_next(struct rng *r)
{
	r->s += 0x9e3779b97f4a7c15ULL;
	return mix64(r->s);
}

/* Uniform in [0, 1). */
static float rng_unit(struct rng *r)
{
	return (float)(rng_next(r) >> 40) * (1.0f / 16777216.0f);
}

static float rng_range(struct rng *r, float lo, float hi)
{
	return lo + (hi - lo) * rng_unit(r);
}

/* Log-uniform in [lo, hi]: sizes and periods are scale-free in photos. */
static float rng_log(struct rng *r, float lo, float hi)
{
	return lo * powf(hi / lo, rng_unit(r));
}

static uint32_t rng_below(struct rng *r, uint32_t n)
{
	return (uint32_t)(((rng_next(r) >> 32) * n) >> 32);
}

static float clampf(float v, float lo, float hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* fminf() is a libm call without -ffast-math, and NaN never occurs here. */
static float minf(float a, float b)
{
	return a < b ? a : b;
}

/* One period of sine in a table: libm's sinf per pixel would dominate. */
#define SIN_BITS	12
#define SIN_SIZE	(1 << SIN_BITS)
static float sin_table[SIN_SIZE];

void gen_sin_table_init(void)
{
	int i;

	for (i = 0; i < SIN_SIZE; i++)
		sin_table[i] = (float)sin(2.0 * M_PI * i / SIN_SIZE);
}

/* sin(2 pi cycles); negative arguments wrap through the mask. */
static inline float sin_cycles(float cycles)
{
	return sin_table[(int)(cycles * (float)SIN_SIZE) & (SIN_SIZE - 1)];
}

/* ------------------------------------------------------------------ */
/* What each image is: size and format                                 */
/* ------------------------------------------------------------------ */

/*
 * ImageNet's training images are mostly a few camera-app sizes with the
 * long side scaled to 500; the rest spread over a wide range, more often
 * landscape than portrait. The weights give a mean near 480 x 370.
 */
static const struct {
	uint16_t w, h, weight;
} common_sizes[] = {
	{ 500, 375, 35 }, { 500, 333, 30 }, { 375, 500, 8 }, { 500, 334, 7 },
	{ 500, 332, 7 }, { 333, 500, 5 }, { 500, 400, 5 }, { 500, 500, 3 },
};

static double frac(double x)
{
	return x - floor(x);
}

void gen_plan_image(uint64_t seed, int distinct, uint32_t i,
		       struct img_plan *p)
{
	struct rng r, spread;
	double off1, off2, u, v;
	float w, ar;
	uint32_t k, pick;

	rng_seed(&r, seed, STREAM_PLAN, i);
	if (rng_unit(&r) < 0.6f) {
		pick = rng_below(&r, 100);
		for (k = 0; pick >= common_sizes[k].weight; k++)
			pick -= common_sizes[k].weight;
		p->w = common_sizes[k].w;
		p->h = common_sizes[k].h;
	} else {
		w = rng_log(&r, 250.0f, 800.0f);
		if (rng_unit(&r) < 0.85f)
			ar = rng_log(&r, 1.2f, 1.8f);
		else
			ar = rng_log(&r, 0.6f, 1.0f);
		p->w = (uint32_t)lrintf(w);
		p->h = (uint32_t)lrintf(clampf(w / ar, 150.0f, 1000.0f));
	}

	/*
	 * The rare formats follow a two-dimensional Weyl (R2) sequence rather
	 * than a coin per image: every prefix of the set, even a 60-image test
	 * set, then holds each kind in close to its share.
	 */
	rng_seed(&spread, seed, STREAM_SPREAD, 0);
	off1 = (double)(rng_next(&spread) >> 11) * 0x1p-53;
	off2 = (double)(rng_next(&spread) >> 11) * 0x1p-53;
	u = frac(off1 + (i + 1.0) * 0.7548776662466927);
	v = frac(off2 + (i + 1.0) * 0.5698402909980532);
	p->kind = u < 0.05 ? KIND_GRAY : u < 0.13 ? KIND_444 : KIND_420;
	/* A distinct set tells classes apart by hue: no grayscale. */
	if (distinct && p->kind == KIND_GRAY)
		p->kind = KIND_420;
	p->progressive = v < 0.07;
}

/* ------------------------------------------------------------------ */
/* Class styles: what makes a class recognisable                       */
/* ------------------------------------------------------------------ */

enum shape_kind {
	SHAPE_ELLIPSE,
	SHAPE_RECT,
	SHAPE_STRIPES,
	SHAPE_RING,
	SHAPE_KINDS
};

static void hsv_to_rgb(float h, float s, float v, float out[3])
{
	float f, p, q, t;
	int i;

	h = (float)frac(h) * 6.0f;
	i = (int)h;
	f = h - (float)i;
	p = v * (1.0f - s);
	q = v * (1.0f - s * f);
	t = v * (1.0f - s * (1.0f - f));
	switch (i) {
	case 0: out[0] = v; out[1] = t; out[2] = p; break;
	case 1: out[0] = q; out[1] = v; out[2] = p; break;
	case 2: out[0] = p; out[1] = v; out[2] = t; break;
	case 3: out[0] = p; out[1] = q; out[2] = v; break;
	case 4: out[0] = t; out[1] = p; out[2] = v; break;
	default: out[0] = v; out[1] = p; out[2] = q; break;
	}
	out[0] *= 255.0f;
	out[1] *= 255.0f;
	out[2] *= 255.0f;
}

void gen_make_style(uint64_t seed, uint32_t c, struct class_style *st)
{
	struct rng r;
	float hue;
	int k;

	rng_seed(&r, seed, STREAM_CLASS, c);
	hue = rng_unit(&r);
	/* Analogous hues plus one complementary accent, as in most scenes. */
	for (k = 0; k < PALETTE; k++)
		hsv_to_rgb(hue + rng_range(&r, -0.1f, 0.1f) +
			   (k == PALETTE - 1 ? 0.5f : 0.0f),
			   rng_range(&r, 0.15f, 0.85f),
			   rng_range(&r, 0.2f, 0.95f), st->pal[k]);
	st->motif = rng_below(&r, SHAPE_KINDS);
	st->angle = rng_range(&r, 0.0f, PI_F);
	st->period = rng_log(&r, 4.0f, 40.0f);
	st->rough = rng_range(&r, 0.7f, 1.3f);
	st->grain = rng_range(&r, 2.7f, 5.1f);
	st->motif_share = 0.55f;
	st->speck_share = 0.5f;
}

/*
 * --distinct: class @c of @classes gets its own hue, evenly spaced around
 * the wheel from a seeded offset, saturated enough to survive the
 * lighting; the palette stays near that hue (no complementary accent), the
 * motif cycles through the shape kinds and the texture period through a
 * range, and most shapes are the motif. Any crop then shows the class.
 */
void gen_make_distinct_style(uint64_t seed, uint32_t c, uint32_t classes,
				struct class_style *st)
{
	struct rng r;
	float hue;
	int k;

	rng_seed(&r, seed, STREAM_CLASS, MAX_CLASSES);
	hue = rng_unit(&r) + (float)c / (float)classes;
	rng_seed(&r, seed, STREAM_CLASS, c);
	for (k = 0; k < PALETTE; k++)
		hsv_to_rgb(hue + rng_range(&r, -0.02f, 0.02f),
			   rng_range(&r, 0.65f, 0.95f),
			   rng_range(&r, 0.45f, 0.95f), st->pal[k]);
	st->motif = c % SHAPE_KINDS;
	st->angle = PI_F * (float)(c % 3) / 3.0f;
	st->period = 5.0f * powf(6.0f, (float)(c % 5) / 4.0f);
	st->rough = rng_range(&r, 0.7f, 1.3f);
	st->grain = rng_range(&r, 2.7f, 5.1f);
	st->motif_share = 0.9f;
	st->speck_share = 0.9f;
}

/* ------------------------------------------------------------------ */
/* Rendering                                                           */
/* ------------------------------------------------------------------ */

void gen_canvas_free(struct canvas *cv)
{
	free(cv->px);
	free(cv->field);
	free(cv->detail);
	free(cv->out);
	free(cv->lattice);
	free(cv->lattice_row);
	free(cv->col_idx);
	free(cv->col_w);
	memset(cv, 0, sizeof(*cv));
}

static int canvas_fit(struct canvas *cv, uint32_t w, uint32_t h)
{
	size_t n = (size_t)w * h;

	cv->w = w;
	cv->h = h;
	if (n > cv->cap) {
		free(cv->px);
		free(cv->field);
		free(cv->detail);
		free(cv->out);
		cv->px = malloc(n * 3 * sizeof(float));
		cv->field = malloc(n * sizeof(float));
		cv->detail = malloc(n * sizeof(float));
		cv->out = malloc(n * 3);
		if (!cv->px || !cv->field || !cv->detail || !cv->out) {
			cv->cap = 0;
			return -ENOMEM;
		}
		cv->cap = n;
	}
	if (w > cv->col_cap) {
		free(cv->col_idx);
		free(cv->col_w);
		cv->col_idx = malloc(w * sizeof(int32_t));
		cv->col_w = malloc(w * sizeof(float));
		if (!cv->col_idx || !cv->col_w) {
			cv->col_cap = 0;
			return -ENOMEM;
		}
		cv->col_cap = w;
	}
	return 0;
}

static float smooth01(float t)
{
	return t * t * (3.0f - 2.0f * t);
}

/*
 * Add one octave of value noise (random values on a lattice of @cell
 * pixels, smoothly interpolated) scaled to +-@amp/2 into @plane. With
 * @mask, each lattice value is scaled by clamp(@bias + @gain * mask) at
 * its pixel: fine texture then lives in some regions and not in others,
 * as grass next to sky.
 */
static int add_value_noise(struct canvas *cv, float *plane, struct rng *r,
			   float cell, float amp, const float *mask,
			   float bias, float gain)
{
	uint32_t gw = (uint32_t)((float)cv->w / cell) + 2;
	uint32_t gh = (uint32_t)((float)cv->h / cell) + 2;
	float inv = 1.0f / cell;
	size_t n = (size_t)gw * gh;
	uint32_t x, y, gx, gy;

	if (n > cv->lattice_cap) {
		free(cv->lattice);
		cv->lattice = malloc(n * sizeof(float));
		if (!cv->lattice) {
			cv->lattice_cap = 0;
			return -ENOMEM;
		}
		cv->lattice_cap = n;
	}
	if (gw > cv->row_cap) {
		free(cv->lattice_row);
		cv->lattice_row = malloc(gw * sizeof(float));
		if (!cv->lattice_row) {
			cv->row_cap = 0;
			return -ENOMEM;
		}
		cv->row_cap = gw;
	}
	for (gy = 0; gy < gh; gy++) {
		float *l = cv->lattice + (size_t)gy * gw;
		uint32_t my = (uint32_t)((float)gy * cell);
		const float *mrow;

		if (my >= cv->h)
			my = cv->h - 1;
		mrow = mask ? mask + (size_t)my * cv->w : NULL;
		for (gx = 0; gx < gw; gx++) {
			uint32_t mx = (uint32_t)((float)gx * cell);
			float v = (rng_unit(r) - 0.5f) * amp;

			if (mrow) {
				if (mx >= cv->w)
					mx = cv->w - 1;
				v *= clampf(bias + gain * mrow[mx], 0, 1);
			}
			l[gx] = v;
		}
	}
	for (x = 0; x < cv->w; x++) {
		float fx = (float)x * inv;
		int32_t ix = (int32_t)fx;

		cv->col_idx[x] = ix;
		cv->col_w[x] = smooth01(fx - (float)ix);
	}
	/* Interpolate down the lattice column first: one lerp a pixel, not three. */
	for (y = 0; y < cv->h; y++) {
		float fy = (float)y * inv;
		uint32_t iy = (uint32_t)fy;
		float ty = smooth01(fy - (float)iy);
		const float *r0 = cv->lattice + (size_t)iy * gw;
		const float *r1 = r0 + gw;
		float *row = cv->lattice_row;
		float *dst = plane + (size_t)y * cv->w;

		for (gx = 0; gx < gw; gx++)
			row[gx] = r0[gx] + (r1[gx] - r0[gx]) * ty;
		for (x = 0; x < cv->w; x++) {
			int32_t i = cv->col_idx[x];

			dst[x] += row[i] + (row[i + 1] - row[i]) * cv->col_w[x];
		}
	}
	return 0;
}

static void jitter_color(struct rng *r, const float in[3], float amount,
			 float out[3])
{
	int c;

	for (c = 0; c < 3; c++)
		out[c] = clampf(in[c] + rng_range(r, -amount, amount), 0, 255);
}

/* A smooth background: two-colour gradient, then a third colour in clouds. */
static int draw_background(struct canvas *cv, const struct class_style *st,
			   struct rng *r)
{
	float a[3], b[3], c[3], dirx, diry, ang, cx, cy, inv, m, t;
	uint32_t x, y, ia, ib;
	size_t n = (size_t)cv->w * cv->h;
	float big = (float)(cv->w > cv->h ? cv->w : cv->h);
	int rc;

	ia = rng_below(r, PALETTE);
	ib = (ia + 1 + rng_below(r, PALETTE - 1)) % PALETTE;
	jitter_color(r, st->pal[ia], 25.0f, a);
	jitter_color(r, st->pal[ib], 25.0f, b);
	jitter_color(r, st->pal[rng_below(r, PALETTE)], 25.0f, c);
	ang = st->angle + PI_F / 2 + rng_range(r, -0.7f, 0.7f);
	dirx = cosf(ang);
	diry = sinf(ang);
	cx = (float)cv->w * rng_range(r, 0.3f, 0.7f);
	cy = (float)cv->h * rng_range(r, 0.3f, 0.7f);
	inv = 1.0f / (big * rng_range(r, 0.6f, 1.4f));

	memset(cv->field, 0, n * sizeof(float));
	rc = add_value_noise(cv, cv->field, r, big / rng_range(r, 1.5f, 3.5f),
			     2.0f, NULL, 0, 0);
	if (!rc)
		rc = add_value_noise(cv, cv->field, r,
				     big / rng_range(r, 6.0f, 10.0f), 0.7f,
				     NULL, 0, 0);
	if (rc)
		return rc;
	for (y = 0; y < cv->h; y++) {
		float *p = cv->px + (size_t)y * cv->w * 3;
		const float *f = cv->field + (size_t)y * cv->w;
		float base = ((float)y - cy) * diry;

		for (x = 0; x < cv->w; x++, p += 3) {
			t = clampf(0.5f + (base + ((float)x - cx) * dirx) * inv,
				   0, 1);
			t = smooth01(t);
			m = smooth01(clampf(f[x] + 0.3f, 0, 1)) * 0.7f;
			p[0] = a[0] + (b[0] - a[0]) * t;
			p[1] = a[1] + (b[1] - a[1]) * t;
			p[2] = a[2] + (b[2] - a[2]) * t;
			p[0] += (c[0] - p[0]) * m;
			p[1] += (c[1] - p[1]) * m;
			p[2] += (c[2] - p[2]) * m;
		}
	}
	return 0;
}

/* A rotated, soft-edged box: the bounding box and the local frame. */
struct frame {
	float cx, cy;		/* centre */
	float hx, hy;		/* half sizes */
	float ca, sa;		/* rotation */
	float inv_soft;		/* 1 / edge width */
	int32_t x0, y0, x1, y1;	/* pixel bounds, clipped, exclusive end */
};

/*
 * Place a box; its pixel bounds are those of the rotated rectangle, which
 * also hold an inscribed ellipse. 0 when it misses the canvas.
 */
static int frame_place(struct frame *f, const struct canvas *cv, float cx,
		       float cy, float hx, float hy, float ang, float soft)
{
	float ex, ey;

	f->cx = cx;
	f->cy = cy;
	f->hx = hx;
	f->hy = hy;
	f->ca = cosf(ang);
	f->sa = sinf(ang);
	f->inv_soft = 1.0f / soft;
	ex = hx * fabsf(f->ca) + hy * fabsf(f->sa) + soft;
	ey = hx * fabsf(f->sa) + hy * fabsf(f->ca) + soft;
	f->x0 = (int32_t)clampf(floorf(cx - ex), 0, (float)cv->w);
	f->x1 = (int32_t)clampf(ceilf(cx + ex) + 1, 0, (float)cv->w);
	f->y0 = (int32_t)clampf(floorf(cy - ey), 0, (float)cv->h);
	f->y1 = (int32_t)clampf(ceilf(cy + ey) + 1, 0, (float)cv->h);
	return f->x0 < f->x1 && f->y0 < f->y1;
}

/* Sinusoidal textures (fabric, grass, bricks seen from afar) in patches. */
static void draw_texture(struct canvas *cv, const struct class_style *st,
			 struct rng *r)
{
	float big = (float)(cv->w > cv->h ? cv->w : cv->h);
	float period = st->period * rng_range(r, 0.7f, 1.4f);
	float period2 = period * rng_range(r, 0.8f, 3.0f);
	float amp = rng_range(r, 0.06f, 0.22f);
	int weave = rng_unit(r) < 0.5f;
	float ang = st->angle + rng_range(r, -0.3f, 0.3f);
	float fu = 1.0f / period, fv = 1.0f / period2;
	struct frame f;
	int32_t x, y;

	if (!frame_place(&f, cv, rng_range(r, 0, (float)cv->w),
			 rng_range(r, 0, (float)cv->h),
			 big * rng_range(r, 0.1f, 0.45f),
			 big * rng_range(r, 0.1f, 0.45f), ang,
			 rng_range(r, 4.0f, 20.0f)))
		return;
	for (y = f.y0; y < f.y1; y++) {
		float dy = (float)y - f.cy;
		float *p = cv->px + ((size_t)y * cv->w + (size_t)f.x0) * 3;

		for (x = f.x0; x < f.x1; x++, p += 3) {
			float dx = (float)x - f.cx;
			float u = dx * f.ca + dy * f.sa;
			float v = dy * f.ca - dx * f.sa;
			float d = minf(f.hx - fabsf(u), f.hy - fabsf(v));
			float cov = clampf(d * f.inv_soft, 0, 1);
			float s;

			if (cov <= 0)
				continue;
			s = sin_cycles(u * fu);
			if (weave)
				s *= sin_cycles(v * fv);
			s = 1.0f + amp * cov * s;
			p[0] *= s;
			p[1] *= s;
			p[2] *= s;
		}
	}
}

struct shape {
	uint32_t kind;
	struct frame f;
	float col[3];
	float alpha;
	float shade;		/* light falling across the shape */
	float inv_period;	/* stripes */
	float sharp;		/* stripes: how square the wave is */
	float ihx2, ihy2;	/* ellipses: 1 / half size squared */
	float q2_out;		/* ellipses: no coverage from here out */
};

/* Derived fields, once the frame is placed. */
static void shape_prepare(struct shape *s)
{
	float out = 1.0f + 0.5f / (minf(s->f.hx, s->f.hy) * s->f.inv_soft);

	s->ihx2 = 1.0f / (s->f.hx * s->f.hx);
	s->ihy2 = 1.0f / (s->f.hy * s->f.hy);
	s->q2_out = out * out;
}

/* Coverage in [0, 1] of @s at local coordinates (u, v). */
static inline float shape_cover(const struct shape *s, float u, float v)
{
	const struct frame *f = &s->f;
	float d, q, m;

	switch (s->kind) {
	case SHAPE_ELLIPSE:
		q = u * u * s->ihx2 + v * v * s->ihy2;
		/* Most of the bounding box is outside: skip the square root. */
		if (q >= s->q2_out)
			return 0;
		d = (1.0f - sqrtf(q)) * minf(f->hx, f->hy);
		return clampf(d * f->inv_soft + 0.5f, 0, 1);
	case SHAPE_RING:
		q = u * u * s->ihx2 + v * v * s->ihy2;
		if (q >= s->q2_out)
			return 0;
		q = sqrtf(q);
		m = minf(f->hx, f->hy);
		d = (0.15f - fabsf(q - 0.8f)) * m;
		return clampf(d * f->inv_soft + 0.5f, 0, 1);
	case SHAPE_STRIPES:
		d = minf(f->hx - fabsf(u), f->hy - fabsf(v));
		q = clampf(0.5f + s->sharp * sin_cycles(u * s->inv_period),
			   0, 1);
		return clampf(d * f->inv_soft + 0.5f, 0, 1) * q;
	default:
		d = minf(f->hx - fabsf(u), f->hy - fabsf(v));
		return clampf(d * f->inv_soft + 0.5f, 0, 1);
	}
}

static void draw_shape(struct canvas *cv, struct shape *s)
{
	const struct frame *f = &s->f;
	float inv_h = 1.0f / f->hy;
	int32_t x, y;

	shape_prepare(s);

	for (y = f->y0; y < f->y1; y++) {
		float dy = (float)y - f->cy;
		float *p = cv->px + ((size_t)y * cv->w + (size_t)f->x0) * 3;

		for (x = f->x0; x < f->x1; x++, p += 3) {
			float dx = (float)x - f->cx;
			float u = dx * f->ca + dy * f->sa;
			float v = dy * f->ca - dx * f->sa;
			float a = shape_cover(s, u, v), l;

			if (a <= 0)
				continue;
			a *= s->alpha;
			l = 1.0f + s->shade * v * inv_h;
			p[0] += (s->col[0] * l - p[0]) * a;
			p[1] += (s->col[1] * l - p[1]) * a;
			p[2] += (s->col[2] * l - p[2]) * a;
		}
	}
}

static void draw_shapes(struct canvas *cv, const struct class_style *st,
			struct rng *r)
{
	float big = (float)(cv->w > cv->h ? cv->w : cv->h);
	uint32_t k, n = 4 + rng_below(r, 8);
	float size = big * rng_range(r, 0.2f, 0.4f);
	struct shape s;

	/* Large shapes first, details on top, like objects in front of scenery. */
	for (k = 0; k < n; k++, size *= rng_range(r, 0.65f, 0.95f)) {
		float hx = size * rng_range(r, 0.5f, 1.0f);
		float hy = size * rng_range(r, 0.3f, 1.0f);
		float soft = rng_log(r, 0.8f, 8.0f);

		s.kind = rng_unit(r) < st->motif_share ? st->motif
					     : rng_below(r, SHAPE_KINDS);
		jitter_color(r, st->pal[rng_below(r, PALETTE)], 30.0f, s.col);
		s.alpha = rng_range(r, 0.55f, 1.0f);
		s.shade = rng_range(r, -0.35f, 0.35f);
		s.inv_period = 1.0f / (st->period * rng_range(r, 0.5f, 2.0f));
		s.sharp = rng_log(r, 0.6f, 4.0f);
		if (frame_place(&s.f, cv, rng_range(r, 0, (float)cv->w),
				rng_range(r, 0, (float)cv->h), hx, hy,
				st->angle + rng_range(r, -0.8f, 0.8f), soft))
			draw_shape(cv, &s);
	}
}

/*
 * Small details on top (pebbles, leaves, text-like marks): their edges
 * are much of a photo's high-frequency content.
 */
static void draw_specks(struct canvas *cv, const struct class_style *st,
			struct rng *r)
{
	uint32_t k, n = (uint32_t)(rng_range(r, 100.0f, 300.0f) *
				   (float)cv->w * (float)cv->h / 180000.0f);
	float cx = rng_range(r, 0, (float)cv->w);
	float cy = rng_range(r, 0, (float)cv->h);
	float spread = (float)(cv->w > cv->h ? cv->w : cv->h) *
		       rng_range(r, 0.2f, 0.6f);
	struct shape s;

	for (k = 0; k < n; k++) {
		float size = rng_log(r, 1.5f, 14.0f);

		s.kind = rng_unit(r) < st->speck_share ? st->motif
					    : rng_below(r, SHAPE_KINDS);
		/* Too small to show a ring or stripes. */
		if (s.kind == SHAPE_RING || s.kind == SHAPE_STRIPES)
			s.kind = SHAPE_ELLIPSE;
		jitter_color(r, st->pal[rng_below(r, PALETTE)], 40.0f, s.col);
		s.alpha = rng_range(r, 0.4f, 0.95f);
		s.shade = rng_range(r, -0.3f, 0.3f);
		s.inv_period = 1;
		s.sharp = 1;
		/* Clustered, as details gather on objects. */
		if (frame_place(&s.f, cv,
				cx + (rng_unit(r) - rng_unit(r)) * spread,
				cy + (rng_unit(r) - rng_unit(r)) * spread,
				size, size * rng_range(r, 0.3f, 1.0f),
				rng_range(r, 0, PI_F), rng_range(r, 0.6f, 1.5f)))
			draw_shape(cv, &s);
	}
}

/* Bell-shaped (sum of two uniforms) noise with unit sigma from 32 bits. */
static inline float noise2(uint32_t bits)
{
	int32_t sum = (int32_t)(bits & 0xffff) + (int32_t)(bits >> 16);

	return (float)(sum - 65535) * (1.0f / 26754.0f);
}

/*
 * Lighting at several scales, fine texture, a vignette and sensor noise,
 * then 8 bits. The fine texture and the grain give the high-frequency
 * energy that decides the file size at high quality; the texture is
 * masked by the coarse lighting so that busy and smooth regions alternate.
 */
static int finish(struct canvas *cv, const struct class_style *st,
		  struct rng *r, uint64_t seed, uint32_t image, int gray)
{
	size_t n = (size_t)cv->w * cv->h;
	float big = (float)(cv->w > cv->h ? cv->w : cv->h);
	float rough = st->rough * rng_range(r, 0.7f, 1.3f);
	float grain = st->grain * rng_range(r, 0.8f, 1.25f);
	float vig = rng_range(r, 0.0f, 0.35f);
	float icx = 2.0f / (float)cv->w, icy = 2.0f / (float)cv->h;
	float *fine = cv->field;	/* free once the background is drawn */
	struct rng nr;
	uint32_t x, y;
	int rc;

	memset(cv->detail, 0, n * sizeof(float));
	memset(fine, 0, n * sizeof(float));
	rc = add_value_noise(cv, cv->detail, r, big / 5.0f, 0.35f * rough,
			     NULL, 0, 0);
	if (!rc)
		rc = add_value_noise(cv, cv->detail, r, big / 24.0f,
				     0.16f * rough, NULL, 0, 0);
	if (!rc)
		rc = add_value_noise(cv, fine, r, 7.0f, 0.6f * rough,
				     cv->detail, 0.5f, 3.0f);
	if (!rc)
		rc = add_value_noise(cv, fine, r, 2.5f, 0.56f * rough,
				     cv->detail, 0.5f, 3.0f);
	if (rc)
		return rc;

	rng_seed(&nr, seed, STREAM_NOISE, image);
	for (y = 0; y < cv->h; y++) {
		const float *p = cv->px + (size_t)y * cv->w * 3;
		const float *d = cv->detail + (size_t)y * cv->w;
		const float *fn = fine + (size_t)y * cv->w;
		uint8_t *o = cv->out + (size_t)y * cv->w * (gray ? 1 : 3);
		float ny = (float)y * icy - 1.0f;

		for (x = 0; x < cv->w; x++, p += 3) {
			float nx = (float)x * icx - 1.0f;
			float l = 1.0f + d[x] + fn[x] -
				  vig * 0.5f * (nx * nx + ny * ny);
			/* Mostly luma noise, a little chroma, as sensors give. */
			uint64_t bits = rng_next(&nr);
			/* Texture also in the shadows, where l scales it away. */
			float nl = noise2((uint32_t)bits) * grain + fn[x] * 80.0f;
			float nc = noise2((uint32_t)(bits >> 32)) * grain * 0.4f;
			float rr = p[0] * l + nl + nc;
			float gg = p[1] * l + nl;
			float bb = p[2] * l + nl - nc;

			rr = clampf(rr, 0, 255);
			gg = clampf(gg, 0, 255);
			bb = clampf(bb, 0, 255);
			if (gray) {
				o[x] = (uint8_t)(0.299f * rr + 0.587f * gg +
						 0.114f * bb + 0.5f);
			} else {
				/* Non-negative, so + 0.5 and truncation round. */
				o[x * 3 + 0] = (uint8_t)(rr + 0.5f);
				o[x * 3 + 1] = (uint8_t)(gg + 0.5f);
				o[x * 3 + 2] = (uint8_t)(bb + 0.5f);
			}
		}
	}
	return 0;
}

int gen_render(struct canvas *cv, const struct class_style *st,
		  uint64_t seed, uint32_t image, const struct img_plan *pl)
{
	struct rng r;
	uint32_t k, textures;
	int rc;

	rc = canvas_fit(cv, pl->w, pl->h);
	if (rc)
		return rc;
	rng_seed(&r, seed, STREAM_IMAGE, image);
	rc = draw_background(cv, st, &r);
	if (rc)
		return rc;
	textures = 1 + rng_below(&r, 3);
	for (k = 0; k < textures; k++)
		draw_texture(cv, st, &r);
	draw_shapes(cv, st, &r);
	draw_specks(cv, st, &r);
	return finish(cv, st, &r, seed, image, pl->kind == KIND_GRAY);
}
