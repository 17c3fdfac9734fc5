// SPDX-License-Identifier: MIT
/*
 * Crop boxes: torchvision's RandomResizedCrop sampling rule checked by its
 * invariants, by its statistics against an independent implementation
 * with another generator, against torchvision's own get_params as whole
 * distributions (Kolmogorov-Smirnov on area, aspect and centre; chi-square
 * on the joint box size of small images), determinism, the fallback, and
 * the eval geometry.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlcache.h"

#include "helpers/testutil.h"

static uint64_t rng_state = 0xdeadbeef;

/* xorshift64*: deliberately not the library's splitmix64 */
static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static double rnd_unit(void)
{
	return (double)(rnd() >> 11) / 9007199254740992.0;
}

/* Python's round(): to nearest, halves to even. */
static long py_round(double v)
{
	double f = floor(v), d = v - f;

	if (d > 0.5 || (d == 0.5 && fmod(f, 2.0) != 0.0))
		f += 1.0;
	return (long)f;
}

/* torchvision's get_params, transcribed; returns 1 when it fell back. */
static int ref_crop(uint32_t w, uint32_t h, long *x, long *y, long *cw,
		    long *ch)
{
	double area = (double)w * h, lr0 = log(3.0 / 4), lr1 = log(4.0 / 3);
	double in_ratio;
	int i;

	for (i = 0; i < 10; i++) {
		double ta = area * (0.08 + 0.92 * rnd_unit());
		double ar = exp(lr0 + (lr1 - lr0) * rnd_unit());

		*cw = py_round(sqrt(ta * ar));
		*ch = py_round(sqrt(ta / ar));
		if (*cw > 0 && *cw <= (long)w && *ch > 0 && *ch <= (long)h) {
			*y = (long)(rnd_unit() * (h - *ch + 1));
			*x = (long)(rnd_unit() * (w - *cw + 1));
			return 0;
		}
	}
	in_ratio = (double)w / h;
	if (in_ratio < 3.0 / 4) {
		*cw = w;
		*ch = py_round(*cw / (3.0 / 4));
	} else if (in_ratio > 4.0 / 3) {
		*ch = h;
		*cw = py_round(*ch * (4.0 / 3));
	} else {
		*cw = w;
		*ch = h;
	}
	*x = ((long)w - *cw) / 2;
	*y = ((long)h - *ch) / 2;
	return 1;
}

static void test_defaults_and_check(void)
{
	struct dlc_transform t, b;
	const char *why = NULL;

	dlc_transform_default(&t, DLC_TRANSFORM_TRAIN);
	CHECK(t.kind == DLC_TRANSFORM_TRAIN && t.out_w == 224 &&
	      t.out_h == 224 && t.hflip == 1 && t.flags == 0, "train defaults");
	CHECK(fabsf(t.scale_min - 0.08f) < 1e-7 && t.scale_max == 1.0f &&
	      t.ratio_min == 0.75f && fabsf(t.ratio_max - 4.0f / 3) < 1e-6,
	      "train scale/ratio defaults");
	CHECK(dlc_transform_check(&t, &why) == 0, "train defaults rejected: %s",
	      why ? why : "");
	dlc_transform_default(&t, DLC_TRANSFORM_EVAL);
	CHECK(t.kind == DLC_TRANSFORM_EVAL && t.resize == 256 &&
	      t.out_w == 224 && t.hflip == 0, "eval defaults");
	CHECK(dlc_transform_check(&t, NULL) == 0, "eval defaults rejected");

#define BAD(kind, field, value) do {					\
		dlc_transform_default(&b, kind);			\
		b.field = value;					\
		why = NULL;						\
		CHECK(dlc_transform_check(&b, &why) == -EINVAL && why && *why, \
		      "%s = %s accepted", #field, #value);		\
	} while (0)
	BAD(DLC_TRANSFORM_TRAIN, kind, 2);
	BAD(DLC_TRANSFORM_TRAIN, flags, 2);
	BAD(DLC_TRANSFORM_TRAIN, flags, 0x80000000u);
	BAD(DLC_TRANSFORM_EVAL, flags, DLC_TRANSFORM_F_EXACT | 4);
	BAD(DLC_TRANSFORM_TRAIN, out_w, 0);
	BAD(DLC_TRANSFORM_TRAIN, out_h, DLC_MAX_OUT_SIDE + 1);
	BAD(DLC_TRANSFORM_TRAIN, scale_min, 0.0f);
	BAD(DLC_TRANSFORM_TRAIN, scale_max, 1.5f);
	BAD(DLC_TRANSFORM_TRAIN, scale_min, NAN);
	BAD(DLC_TRANSFORM_TRAIN, ratio_min, -1.0f);
	BAD(DLC_TRANSFORM_TRAIN, ratio_max, 0.5f);
	BAD(DLC_TRANSFORM_TRAIN, ratio_max, INFINITY);
	BAD(DLC_TRANSFORM_TRAIN, hflip, 2);
	BAD(DLC_TRANSFORM_EVAL, resize, 200);
#undef BAD
	dlc_transform_default(&b, DLC_TRANSFORM_TRAIN);
	b.flags = DLC_TRANSFORM_F_EXACT;
	CHECK(dlc_transform_check(&b, NULL) == 0, "F_EXACT rejected (train)");
	dlc_transform_default(&b, DLC_TRANSFORM_EVAL);
	b.flags = DLC_TRANSFORM_F_EXACT;
	CHECK(dlc_transform_check(&b, NULL) == 0, "F_EXACT rejected (eval)");
	dlc_transform_default(&b, DLC_TRANSFORM_TRAIN);
	{
		struct dlc_crop c;

		CHECK(dlc_transform_crop(&b, 0, 0, 0, 0, 10, &c) == -EINVAL,
		      "zero-width image accepted");
		b.scale_min = 2;
		CHECK(dlc_transform_crop(&b, 0, 0, 0, 10, 10, &c) == -EINVAL,
		      "bad transform accepted by crop");
	}
}

static void test_determinism(void)
{
	struct dlc_transform t;
	struct dlc_crop a, b;
	uint32_t i, same_sample = 0, same_epoch = 0, same_seed = 0;

	dlc_transform_default(&t, DLC_TRANSFORM_TRAIN);
	for (i = 0; i < 1000; i++) {
		CHECK(!dlc_transform_crop(&t, 7, 3, i, 640, 480, &a), "crop");
		CHECK(!dlc_transform_crop(&t, 7, 3, i, 640, 480, &b), "crop");
		CHECK(!memcmp(&a, &b, sizeof(a)), "sample %u not deterministic", i);
		CHECK(!dlc_transform_crop(&t, 7, 3, i + 1, 640, 480, &b), "crop");
		same_sample += !memcmp(&a, &b, sizeof(a));
		CHECK(!dlc_transform_crop(&t, 7, 4, i, 640, 480, &b), "crop");
		same_epoch += !memcmp(&a, &b, sizeof(a));
		CHECK(!dlc_transform_crop(&t, 8, 3, i, 640, 480, &b), "crop");
		same_seed += !memcmp(&a, &b, sizeof(a));
	}
	/* a few coincidences are possible (e.g. two whole-image fallbacks) */
	CHECK(same_sample < 10, "%u/1000 neighbouring samples share a crop",
	      same_sample);
	CHECK(same_epoch < 10, "%u/1000 crops repeat across epochs", same_epoch);
	CHECK(same_seed < 10, "%u/1000 crops repeat across seeds", same_seed);
}

struct stats {
	double area, aspect, cx, cy, flips, whole;
	double hist[10];
	uint32_t n;
};

static void add(struct stats *s, uint32_t w, uint32_t h, double x, double y,
		double cw, double ch, uint32_t flip)
{
	double frac = cw * ch / ((double)w * h);
	int bin = (int)(frac * 10);

	s->area += frac;
	s->aspect += cw / ch;
	s->cx += (x + cw / 2) / w;
	s->cy += (y + ch / 2) / h;
	s->flips += flip;
	s->whole += cw == w && ch == h;
	s->hist[bin > 9 ? 9 : bin] += 1;
	s->n++;
}

static void finish(struct stats *s)
{
	int i;

	s->area /= s->n;
	s->aspect /= s->n;
	s->cx /= s->n;
	s->cy /= s->n;
	s->flips /= s->n;
	s->whole /= s->n;
	for (i = 0; i < 10; i++)
		s->hist[i] /= s->n;
}

/* Could some scale in [0.08, 1] and ratio in [3/4, 4/3] round to this? */
static int plausible(uint32_t w, uint32_t h, double cw, double ch)
{
	double a = (double)w * h;
	double alo = (cw - 0.5) * (ch - 0.5), ahi = (cw + 0.5) * (ch + 0.5);
	double rlo = (cw - 0.5) / (ch + 0.5), rhi = (cw + 0.5) / (ch - 0.5);

	return ahi >= 0.08 * a * (1 - 1e-6) && alo <= a * (1 + 1e-6) &&
	       rhi >= 0.75 * (1 - 1e-6) && rlo <= 4.0 / 3 * (1 + 1e-6);
}

#define NSAMPLES 200000

static void test_distribution(uint32_t w, uint32_t h, struct stats *ours)
{
	struct dlc_transform t;
	struct stats ref;
	uint32_t i, bad_box = 0, bad_rule = 0;
	int b;

	dlc_transform_default(&t, DLC_TRANSFORM_TRAIN);
	memset(ours, 0, sizeof(*ours));
	memset(&ref, 0, sizeof(ref));
	for (i = 0; i < NSAMPLES; i++) {
		struct dlc_crop c;
		long x, y, cw, ch;

		CHECK(!dlc_transform_crop(&t, 42, i / 1000, i % 1000, w, h, &c),
		      "crop");
		if (c.x < 0 || c.y < 0 || c.x + c.w > w || c.y + c.h > h ||
		    c.w < 1 || c.h < 1 || c.x != floor(c.x) ||
		    c.y != floor(c.y) || c.w != floor(c.w) || c.h != floor(c.h))
			bad_box++;
		if (!plausible(w, h, c.w, c.h) && !(c.w == w && c.h == h))
			bad_rule++;
		add(ours, w, h, c.x, c.y, c.w, c.h, c.flip);
		ref_crop(w, h, &x, &y, &cw, &ch);
		add(&ref, w, h, x, y, cw, ch, rnd() >> 63);
	}
	finish(ours);
	finish(&ref);
	CHECK(!bad_box, "%ux%u: %u boxes outside the image or not integer",
	      w, h, bad_box);
	CHECK(!bad_rule, "%ux%u: %u boxes out of the scale/ratio ranges",
	      w, h, bad_rule);
	CHECK(fabs(ours->area - ref.area) < 0.005,
	      "%ux%u: mean area fraction %.4f, reference %.4f", w, h,
	      ours->area, ref.area);
	CHECK(fabs(ours->aspect - ref.aspect) < 0.005,
	      "%ux%u: mean aspect %.4f, reference %.4f", w, h, ours->aspect,
	      ref.aspect);
	CHECK(fabs(ours->cx - 0.5) < 0.005 && fabs(ours->cy - 0.5) < 0.005,
	      "%ux%u: mean box centre (%.4f, %.4f), expected the middle",
	      w, h, ours->cx, ours->cy);
	CHECK(fabs(ours->flips - 0.5) < 0.005, "%ux%u: flip rate %.4f", w, h,
	      ours->flips);
	CHECK(fabs(ours->whole - ref.whole) < 0.003,
	      "%ux%u: whole-image rate %.4f, reference %.4f", w, h,
	      ours->whole, ref.whole);
	for (b = 0; b < 10; b++)
		CHECK(fabs(ours->hist[b] - ref.hist[b]) < 0.006,
		      "%ux%u: area fraction in [%.1f, %.1f): %.4f, reference %.4f",
		      w, h, b / 10.0, (b + 1) / 10.0, ours->hist[b],
		      ref.hist[b]);
	printf("transform %ux%u: mean area %.4f (ref %.4f), aspect %.4f (ref %.4f), flips %.4f, whole %.4f\n",
	       w, h, ours->area, ref.area, ours->aspect, ref.aspect,
	       ours->flips, ours->whole);
}

static void test_fallback(void)
{
	struct dlc_transform t;
	struct dlc_crop c;
	uint32_t i, wide_bad = 0, tall_bad = 0;

	dlc_transform_default(&t, DLC_TRANSFORM_TRAIN);
	/*
	 * 2000 x 50: every try needs a height of at least
	 * sqrt(0.08 * 100000 * 3/4) = 77 > 50, so all fall back to the
	 * centred 4:3 box: h = 50, w = round(50 * 4/3) = 67,
	 * x = (2000 - 67) // 2 = 966.
	 */
	for (i = 0; i < 500; i++) {
		CHECK(!dlc_transform_crop(&t, 1, 0, i, 2000, 50, &c), "crop");
		wide_bad += !(c.x == 966 && c.y == 0 && c.w == 67 && c.h == 50);
		CHECK(!dlc_transform_crop(&t, 1, 0, i, 50, 2000, &c), "crop");
		/* w = 50, h = round(50 / (3/4)) = 67 */
		tall_bad += !(c.x == 0 && c.y == 966 && c.w == 50 && c.h == 67);
	}
	CHECK(!wide_bad, "2000x50: %u crops not the centred fallback", wide_bad);
	CHECK(!tall_bad, "50x2000: %u crops not the centred fallback", tall_bad);

	/* 1x1: the only box is the whole pixel */
	CHECK(!dlc_transform_crop(&t, 1, 0, 0, 1, 1, &c) && c.x == 0 &&
	      c.y == 0 && c.w == 1 && c.h == 1, "1x1 image");
}

static int near(double a, double b)
{
	return fabs(a - b) < 1e-9;
}

static void check_eval(uint32_t w, uint32_t h, uint32_t resize,
		       uint32_t ow, uint32_t oh, double x, double y,
		       double cw, double ch)
{
	struct dlc_transform t;
	struct dlc_crop c;

	dlc_transform_default(&t, DLC_TRANSFORM_EVAL);
	t.resize = resize;
	t.out_w = ow;
	t.out_h = oh;
	CHECK(!dlc_transform_crop(&t, 5, 6, 7, w, h, &c), "eval crop");
	CHECK(near(c.x, x) && near(c.y, y) && near(c.w, cw) && near(c.h, ch) &&
	      c.flip == 0,
	      "eval %ux%u -> %u -> %ux%u: got (%.6f, %.6f, %.6f x %.6f), want (%.6f, %.6f, %.6f x %.6f)",
	      w, h, resize, ow, oh, c.x, c.y, c.w, c.h, x, y, cw, ch);
}

static void test_eval(void)
{
	/*
	 * 500x375: Resize(256) gives 341x256 (int(256 * 500 / 375) = 341);
	 * CenterCrop(224): left = round(117 / 2) = round(58.5) = 58 (half to
	 * even), top = 16. Back in the source: divide by 341/500 and 256/375.
	 */
	check_eval(500, 375, 256, 224, 224, 58 * 500.0 / 341, 16 * 375.0 / 256,
		   224 * 500.0 / 341, 224 * 375.0 / 256);
	/* portrait: the same with the axes swapped */
	check_eval(375, 500, 256, 224, 224, 16 * 375.0 / 256, 58 * 500.0 / 341,
		   224 * 375.0 / 256, 224 * 500.0 / 341);
	/* 224x224 -> 256x256, crop at 16: 16 * 224 / 256 = 14, 196 wide */
	check_eval(224, 224, 256, 224, 224, 14, 14, 196, 196);
	/*
	 * 1000x300, out 224x200: 853x256 (int(853.33)); left =
	 * round(629 / 2) = round(314.5) = 314, top = round(28) = 28.
	 */
	check_eval(1000, 300, 256, 224, 200, 314 * 1000.0 / 853,
		   28 * 300.0 / 256, 224 * 1000.0 / 853, 200 * 300.0 / 256);
	/* upscaling a small image: 100x80 -> 320x256, left 48, top 16 */
	check_eval(100, 80, 256, 224, 224, 48 * 100.0 / 320, 16 * 80.0 / 256,
		   224 * 100.0 / 320, 224 * 80.0 / 256);
	/* resize == out: 298x224 (int(298.67)), left = 37, whole short side */
	check_eval(640, 480, 224, 224, 224, 37 * 640.0 / 298, 0,
		   224 * 640.0 / 298, 480);
}

/* ---- torchvision itself: the whole distribution of boxes ---- */

/*
 * torchvision's own get_params prints N boxes "top left height width".
 * Our boxes come from another generator, so they are compared as
 * distributions, not draw for draw: two-sample Kolmogorov-Smirnov tests
 * on the area fraction, the aspect ratio and the centre (x and y), and a
 * two-sample chi-square test on the joint (width, height) of the box,
 * which the marginals alone would not pin down.
 */
static const char tv_script[] =
	"import sys, torch\n"
	"import torchvision.transforms as T\n"
	"torch.manual_seed(int(sys.argv[4]))\n"
	"w, h, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])\n"
	"img = torch.zeros((1, h, w), dtype=torch.uint8)\n"
	"out = []\n"
	"for _ in range(n):\n"
	"    i, j, ch, cw = T.RandomResizedCrop.get_params(img, (0.08, 1.0), (3/4, 4/3))\n"
	"    out.append('%d %d %d %d' % (i, j, ch, cw))\n"
	"print('\\n'.join(out))\n";

#define TV_N 40000

struct box { double x, y, w, h; };

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The two-sample KS statistic D of @a and @b (sorted in place). */
static double ks_stat(double *a, size_t n, double *b, size_t m)
{
	size_t i = 0, j = 0;
	double d = 0;

	qsort(a, n, sizeof(*a), cmp_double);
	qsort(b, m, sizeof(*b), cmp_double);
	while (i < n && j < m) {
		double v = a[i] <= b[j] ? a[i] : b[j];

		while (i < n && a[i] <= v)
			i++;
		while (j < m && b[j] <= v)
			j++;
		if (fabs((double)i / n - (double)j / m) > d)
			d = fabs((double)i / n - (double)j / m);
	}
	return d;
}

/* What a box says, for one KS test: 0 area, 1 aspect, 2 x centre, 3 y. */
static double feature(const struct box *b, int k, uint32_t w, uint32_t h)
{
	switch (k) {
	case 0: return b->w * b->h / ((double)w * h);
	case 1: return b->w / b->h;
	case 2: return (b->x + b->w / 2) / w;
	default: return (b->y + b->h / 2) / h;
	}
}

/* Boxes from torchvision; the count read, 0 when it could not run. */
static size_t tv_boxes(uint32_t w, uint32_t h, struct box *out, size_t n)
{
	char path[] = "/tmp/dlc-test-transform-XXXXXX", cmd[512];
	long i, j, ch, cw;
	size_t got = 0;
	FILE *f;
	int fd;

	fd = mkstemp(path);
	if (fd < 0) {
		CHECK(0, "mkstemp: %s", strerror(errno));
		return 0;
	}
	f = fdopen(fd, "w");
	fputs(tv_script, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s %u %u %zu 1 2>&1",
		 path, w, h, n);
	f = popen(cmd, "r");
	while (f && got < n && fscanf(f, "%ld %ld %ld %ld", &i, &j, &ch, &cw) == 4)
		out[got++] = (struct box){ j, i, cw, ch };
	if (f)
		pclose(f);
	unlink(path);
	return got;
}

static void test_against_torchvision(uint32_t w, uint32_t h)
{
	static const char *const names[4] = { "area", "aspect", "x centre",
					      "y centre" };
	struct box *tv = calloc(TV_N, sizeof(*tv)), *us = calloc(TV_N, sizeof(*us));
	double *a = calloc(TV_N, sizeof(*a)), *b = calloc(TV_N, sizeof(*b));
	/* alpha 1e-4 per test: c = sqrt(-ln(alpha / 2) / 2) */
	double crit = sqrt(-log(0.5e-4) / 2) * sqrt(2.0 / TV_N);
	double chi2 = 0, z;
	uint32_t *cnt_tv = NULL, *cnt_us = NULL, k, bins = 0, df;
	struct dlc_transform t;
	size_t n, i;
	int f;

	if (access("/usr/bin/python3", X_OK) ||
	    system("/usr/bin/python3 -c 'import torchvision' >/dev/null 2>&1")) {
		t_skip_required("torchvision", "/usr/bin/python3 has no torchvision (make deps)");
		goto out;
	}
	CHECK(tv && us && a && b, "memory");
	if (!tv || !us || !a || !b)
		goto out;
	n = tv_boxes(w, h, tv, TV_N);
	CHECK(n == TV_N, "%ux%u: torchvision gave %zu boxes of %u", w, h, n,
	      TV_N);
	if (n != TV_N)
		goto out;
	dlc_transform_default(&t, DLC_TRANSFORM_TRAIN);
	for (i = 0; i < TV_N; i++) {
		struct dlc_crop c;

		dlc_transform_crop(&t, 4242, (uint32_t)(i / 1000),
				   (uint32_t)(i % 1000), w, h, &c);
		us[i] = (struct box){ c.x, c.y, c.w, c.h };
	}
	for (f = 0; f < 4; f++) {
		double d;

		for (i = 0; i < TV_N; i++) {
			a[i] = feature(&us[i], f, w, h);
			b[i] = feature(&tv[i], f, w, h);
		}
		d = ks_stat(a, TV_N, b, TV_N);
		CHECK(d < crit, "%ux%u: %s distribution differs from torchvision's: KS D %.4f >= %.4f",
		      w, h, names[f], d, crit);
		printf("transform %ux%u vs torchvision: %s KS D %.4f (critical %.4f)\n",
		       w, h, names[f], d, crit);
	}
	/*
	 * Joint (width, height): chi-square over cells with enough counts;
	 * only on small images, where the cells are few enough to fill.
	 */
	if ((uint64_t)w * h > 4096)
		goto out;
	cnt_tv = calloc((size_t)(w + 1) * (h + 1), sizeof(*cnt_tv));
	cnt_us = calloc((size_t)(w + 1) * (h + 1), sizeof(*cnt_us));
	if (!cnt_tv || !cnt_us)
		goto out;
	for (i = 0; i < TV_N; i++) {
		cnt_tv[(size_t)tv[i].h * (w + 1) + (size_t)tv[i].w]++;
		cnt_us[(size_t)us[i].h * (w + 1) + (size_t)us[i].w]++;
	}
	{
		/* pool the sparse cells into one, so each term is sound */
		uint64_t rest_a = 0, rest_b = 0;

		for (k = 0; k < (w + 1) * (h + 1); k++) {
			double x = cnt_us[k], y = cnt_tv[k];

			if (x + y < 20) {
				rest_a += cnt_us[k];
				rest_b += cnt_tv[k];
				continue;
			}
			chi2 += (x - y) * (x - y) / (x + y);
			bins++;
		}
		if (rest_a + rest_b) {
			chi2 += ((double)rest_a - rest_b) * ((double)rest_a - rest_b) /
				(double)(rest_a + rest_b);
			bins++;
		}
	}
	df = bins > 1 ? bins - 1 : 1;
	/* Wilson-Hilferty: chi2/df as a normal; z > 3.72 is alpha 1e-4 */
	z = (cbrt(chi2 / df) - (1 - 2.0 / (9 * df))) / sqrt(2.0 / (9 * df));
	CHECK(z < 3.72, "%ux%u: joint (width, height) differs from torchvision's: chi2 %.1f on %u df (z %.2f)",
	      w, h, chi2, df, z);
	printf("transform %ux%u vs torchvision: joint (w, h) chi2 %.1f on %u df (z %.2f)\n",
	       w, h, chi2, df, z);
out:
	free(cnt_tv);
	free(cnt_us);
	free(tv);
	free(us);
	free(a);
	free(b);
}

int main(void)
{
	struct stats sq, wide;

	T_RUN(test_defaults_and_check);
	T_RUN(test_determinism);
	T_RUN_AS("test_distribution/1", test_distribution, 400, 400, &sq);
	T_RUN_AS("test_distribution/2", test_distribution, 500, 375, &wide);
	T_RUN(test_fallback);
	T_RUN(test_eval);
	T_RUN_AS("test_against_torchvision/400x400", test_against_torchvision, 400, 400);
	T_RUN_AS("test_against_torchvision/500x375", test_against_torchvision, 500, 375);
	T_RUN_AS("test_against_torchvision/40x30", test_against_torchvision, 40, 30);
	T_RUN_AS("test_against_torchvision/20x90", test_against_torchvision, 20, 90);
	return t_done("test_transform");
}
