// SPDX-License-Identifier: MIT
/*
 * Crop boxes of torchvision's RandomResizedCrop + RandomHorizontalFlip
 * (train) and Resize + CenterCrop (eval), as boxes in source pixels.
 *
 * The random draws are a pure function of (seed, epoch, sample): a
 * splitmix64 stream keyed by the three, so that any thread can compute any
 * sample's crop in any order and a resumed epoch gets the same crops.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dlcache.h"
#include "resize.h"

/* Keeps these draws apart from other users of the same seed (the order). */
#define XFORM_DOMAIN	0x7472616e73666f72ULL	/* "transfor" */
#define GOLDEN		0x9e3779b97f4a7c15ULL

struct xrng {
	uint64_t key;
	uint64_t ctr;
};

static uint64_t mix64(uint64_t z)
{
	z += GOLDEN;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void xrng_init(struct xrng *r, uint64_t seed, uint32_t epoch,
		      uint32_t sample)
{
	/* Chained, not xor'ed: (epoch, sample) pairs must not alias. */
	uint64_t k = mix64(seed ^ XFORM_DOMAIN);

	k = mix64(k + epoch);
	k = mix64(k + sample);
	r->key = k;
	r->ctr = 0;
}

static uint64_t xrng_next(struct xrng *r)
{
	/* splitmix64 seeded with the key: draw n is mix(key + n * golden) */
	return mix64(r->key + (r->ctr++) * GOLDEN);
}

/* Uniform in [0, 1) with 53 random bits. */
static double xrng_unit(struct xrng *r)
{
	return (double)(xrng_next(r) >> 11) * 0x1.0p-53;
}

static double xrng_uniform(struct xrng *r, double lo, double hi)
{
	return lo + (hi - lo) * xrng_unit(r);
}

/* Uniform integer in [0, n] inclusive (torch.randint(0, n + 1)). */
static uint32_t xrng_inclusive(struct xrng *r, uint32_t n)
{
	/* multiply-shift: the bias is n / 2^64, far below anything visible */
	return (uint32_t)(((unsigned __int128)xrng_next(r) * ((uint64_t)n + 1))
			  >> 64);
}

/* Python's round(): halves go to even; rint() does so in the default mode. */
static int64_t py_round(double v)
{
	return (int64_t)rint(v);
}

void dlc_transform_default(struct dlc_transform *t, uint32_t kind)
{
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->out_w = 224;
	t->out_h = 224;
	t->resize = 256;
	t->scale_min = 0.08f;
	t->scale_max = 1.0f;
	t->ratio_min = 3.0f / 4.0f;
	t->ratio_max = 4.0f / 3.0f;
	t->hflip = kind == DLC_TRANSFORM_TRAIN;
}

static int bad(const char **why, const char *reason)
{
	if (why)
		*why = reason;
	return -EINVAL;
}

int dlc_transform_check(const struct dlc_transform *t, const char **why)
{
	if (!t)
		return bad(why, "no transform");
	if (t->flags & ~DLC_TRANSFORM_F_ALL)
		return bad(why, "flags has unknown bits");
	if (t->out_w < 1 || t->out_w > DLC_MAX_OUT_SIDE)
		return bad(why, "out_w must be in 1..4096");
	if (t->out_h < 1 || t->out_h > DLC_MAX_OUT_SIDE)
		return bad(why, "out_h must be in 1..4096");
	if (t->hflip > 1)
		return bad(why, "hflip must be 0 or 1");
	switch (t->kind) {
	case DLC_TRANSFORM_TRAIN:
		/* the negated forms also reject NaN */
		if (!(t->scale_min > 0.0f) || !(t->scale_max <= 1.0f) ||
		    !(t->scale_min <= t->scale_max))
			return bad(why, "scale needs 0 < scale_min <= scale_max <= 1");
		if (!(t->ratio_min > 0.0f) || !(t->ratio_min <= t->ratio_max) ||
		    !isfinite(t->ratio_max))
			return bad(why, "ratio needs 0 < ratio_min <= ratio_max, finite");
		return 0;
	case DLC_TRANSFORM_EVAL:
		if (t->resize < t->out_w || t->resize < t->out_h)
			return bad(why, "resize must be >= out_w and out_h");
		if (t->resize > 16 * DLC_MAX_OUT_SIDE)
			return bad(why, "resize must be <= 65536");
		return 0;
	default:
		return bad(why, "kind must be train (0) or eval (1)");
	}
}

static void crop_train(const struct dlc_transform *t, struct xrng *r,
		       uint32_t w, uint32_t h, struct dlc_crop *out)
{
	double area = (double)w * (double)h;
	double smin = t->scale_min, smax = t->scale_max;
	double rmin = t->ratio_min, rmax = t->ratio_max;
	double lrmin = log(rmin), lrmax = log(rmax);
	double in_ratio;
	int64_t cw, ch;
	int i;

	for (i = 0; i < 10; i++) {
		double target = area * xrng_uniform(r, smin, smax);
		double aspect = exp(xrng_uniform(r, lrmin, lrmax));

		cw = py_round(sqrt(target * aspect));
		ch = py_round(sqrt(target / aspect));
		if (cw > 0 && cw <= w && ch > 0 && ch <= h) {
			/* torchvision draws the row (i) before the column (j) */
			uint32_t y = xrng_inclusive(r, h - (uint32_t)ch);
			uint32_t x = xrng_inclusive(r, w - (uint32_t)cw);

			out->x = x;
			out->y = y;
			out->w = (double)cw;
			out->h = (double)ch;
			return;
		}
	}

	in_ratio = (double)w / (double)h;
	if (in_ratio < rmin) {
		cw = w;
		ch = py_round((double)cw / rmin);
	} else if (in_ratio > rmax) {
		ch = h;
		cw = py_round((double)ch * rmax);
	} else {
		cw = w;
		ch = h;
	}
	/* rounding can overshoot by one for ratios near the image's own */
	if (cw < 1)
		cw = 1;
	if (cw > w)
		cw = w;
	if (ch < 1)
		ch = 1;
	if (ch > h)
		ch = h;
	out->x = (double)((w - (uint32_t)cw) / 2);
	out->y = (double)((h - (uint32_t)ch) / 2);
	out->w = (double)cw;
	out->h = (double)ch;
}

void dlc_eval_geometry(const struct dlc_transform *t, uint32_t w, uint32_t h,
		       uint32_t *nw, uint32_t *nh, uint32_t *left,
		       uint32_t *top)
{
	uint32_t shorter = w <= h ? w : h, longer = w <= h ? h : w;
	/* torchvision: int(size * long / short), a truncating float division */
	uint32_t nlong = (uint32_t)floor((double)t->resize * longer / shorter);

	*nw = w <= h ? t->resize : nlong;
	*nh = w <= h ? nlong : t->resize;
	/* CenterCrop: int(round((size - crop) / 2.0)) */
	*left = (uint32_t)py_round((*nw - (double)t->out_w) / 2.0);
	*top = (uint32_t)py_round((*nh - (double)t->out_h) / 2.0);
}

static void crop_eval(const struct dlc_transform *t, uint32_t w, uint32_t h,
		      struct dlc_crop *out)
{
	uint32_t nw, nh, left, top;
	double sx, sy;

	dlc_eval_geometry(t, w, h, &nw, &nh, &left, &top);
	sx = (double)nw / w;
	sy = (double)nh / h;
	out->x = left / sx;
	out->y = top / sy;
	out->w = t->out_w / sx;
	out->h = t->out_h / sy;
	/* keep float noise from pushing the box a hair outside the image */
	if (out->x + out->w > w)
		out->w = w - out->x;
	if (out->y + out->h > h)
		out->h = h - out->y;
}

int dlc_transform_crop(const struct dlc_transform *t, uint64_t seed,
		       uint32_t epoch, uint32_t sample, uint32_t img_w,
		       uint32_t img_h, struct dlc_crop *out)
{
	struct xrng r;

	if (!out || dlc_transform_check(t, NULL) || !img_w || !img_h)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (t->kind == DLC_TRANSFORM_EVAL) {
		crop_eval(t, img_w, img_h, out);
		return 0;
	}
	xrng_init(&r, seed, epoch, sample);
	crop_train(t, &r, img_w, img_h, out);
	/* a fixed draw, so the flip does not depend on how many tries ran */
	if (t->hflip) {
		r.ctr = 64;
		out->flip = xrng_next(&r) >> 63;
	}
	return 0;
}
