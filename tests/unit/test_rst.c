// SPDX-License-Identifier: MIT
/*
 * Restart-indexed JPEGs (jpegrst.c) and the MCU-exact crop decode
 * (dlc_decoder_sample_rst in decode.c).
 *
 * References are independent of the code under test: djpeg (a separate
 * program, libjpeg-turbo-progs) decodes the originals, the transcodes and
 * the splices; the MCU-exact sample is held to the crop-first decode of
 * the same bytes (DLC_DECODE_CROP_FIRST_UNCHECKED), which test_decode.c
 * holds to djpeg and torchvision. Test images are synthesized and
 * compressed with cjpeg (every subsampling, gray, progressive) at odd
 * sizes, so partial MCUs at the right and bottom edges are covered.
 */
#include <errno.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode.h"
#include "dlcache.h"
#include "internal.h"
#include "jpegrst.h"
#include "helpers/testutil.h"

static char *tmp;
static int have_tools;		/* cjpeg and djpeg */

struct img {
	uint8_t *rgb;		/* 3 bytes a pixel (gray replicated) */
	uint32_t w, h;
};

struct variant {
	const char *name;
	const char *cjpeg;	/* cjpeg options */
	uint32_t w, h;
	uint32_t interval;	/* transcode's wanted interval */
};

static const struct variant variants[] = {
	{ "420", "-sample 2x2", 333, 217, 1 },
	{ "422", "-sample 2x1", 301, 190, 2 },
	{ "444", "-sample 1x1", 250, 171, 3 },
	{ "440", "-sample 1x2", 199, 263, 0 },
	{ "gray", "-grayscale", 277, 203, 1 },
	{ "gray22", "-grayscale -sample 2x2", 229, 181, 2 },
	{ "prog420", "-progressive -sample 2x2", 347, 229, 1 },
	{ "arith422", "-arithmetic -sample 2x1", 163, 97, 2 },
};
#define NVAR (sizeof(variants) / sizeof(variants[0]))

/* the sources and their transcodes, built once */
static uint8_t *src[NVAR], *rst[NVAR];
static size_t src_len[NVAR], rst_len[NVAR];

/* ---- helpers ---- */

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static int tool_present(const char *name)
{
	return run("command -v %s >/dev/null 2>&1", name) == 0;
}

static void write_ppm(const char *path, uint32_t w, uint32_t h)
{
	FILE *f = fopen(path, "wb");
	uint32_t x, y;

	if (!f)
		return;
	fprintf(f, "P6\n%u %u\n255\n", w, h);
	for (y = 0; y < h; y++)
		for (x = 0; x < w; x++) {
			int n = (int)(t_rand() % 31) - 15;
			int r = (int)(255.0 * x / w) + n;
			int g = (int)(255.0 * y / h) + n;
			int b = ((x / 5 + y / 9) & 1) ? 200 : 50;
			double dx = x - w * 0.4, dy = y - h * 0.5;

			if (dx * dx + dy * dy < (double)w * h / 10)
				r = 250 - r / 2, g = 30;
			putc(r < 0 ? 0 : r > 255 ? 255 : r, f);
			putc(g < 0 ? 0 : g > 255 ? 255 : g, f);
			putc(b, f);
		}
	fclose(f);
}

/* P6 or P5 (replicated to RGB). */
static int read_pnm(const char *path, struct img *im)
{
	FILE *f = fopen(path, "rb");
	unsigned int w, h, mx;
	char magic[3] = "";
	size_t n, i;
	int ok = 0;

	im->rgb = NULL;
	if (!f)
		return -1;
	if (fscanf(f, "%2s %u %u %u", magic, &w, &h, &mx) == 4 &&
	    mx == 255 && fgetc(f) != EOF &&
	    (!strcmp(magic, "P6") || !strcmp(magic, "P5"))) {
		n = (size_t)w * h;
		im->rgb = malloc(n * 3);
		im->w = w;
		im->h = h;
		if (im->rgb && !strcmp(magic, "P6")) {
			ok = fread(im->rgb, 1, n * 3, f) == n * 3;
		} else if (im->rgb) {
			ok = fread(im->rgb, 1, n, f) == n;
			for (i = n; i-- > 0;)
				im->rgb[3 * i] = im->rgb[3 * i + 1] =
					im->rgb[3 * i + 2] = im->rgb[i];
		}
	}
	fclose(f);
	if (!ok) {
		free(im->rgb);
		im->rgb = NULL;
		return -1;
	}
	return 0;
}

/* djpeg -dct int -scale 1/@den of @buf into @im: 0, or -1. */
static int djpeg(const uint8_t *buf, size_t len, uint32_t den,
		 struct img *im)
{
	char in[512], out[512];

	snprintf(in, sizeof(in), "%s/dj_in.jpg", tmp);
	snprintf(out, sizeof(out), "%s/dj_out.pnm", tmp);
	if (t_write_file(in, buf, len))
		return -1;
	unlink(out);
	if (run("djpeg -dct int -scale 1/%u -pnm -outfile '%s' '%s' 2>/dev/null",
		den, out, in))
		return -1;
	return read_pnm(out, im);
}

static int same_image(const struct img *a, const struct img *b)
{
	return a->w == b->w && a->h == b->h &&
	       !memcmp(a->rgb, b->rgb, (size_t)a->w * a->h * 3);
}

static void setup(void)
{
	char ppm[512], jpg[512];
	uint32_t i;
	char why[256];
	int ret;

	for (i = 0; i < NVAR; i++) {
		const struct variant *v = &variants[i];
		struct dlc_rst_opts o = { .interval = v->interval };

		snprintf(ppm, sizeof(ppm), "%s/%s.ppm", tmp, v->name);
		snprintf(jpg, sizeof(jpg), "%s/%s.jpg", tmp, v->name);
		write_ppm(ppm, v->w, v->h);
		if (run("cjpeg -quality 85 -dct int %s -outfile '%s' '%s'",
			v->cjpeg, jpg, ppm))
			continue;
		src[i] = t_read_file(jpg, &src_len[i]);
		if (!src[i])
			continue;
		ret = dlc_rst_transcode(src[i], src_len[i], &o, 0, &rst[i],
					&rst_len[i], why, sizeof(why));
		if (ret) {
			printf("# transcode of %s: %d %s\n", v->name, ret, why);
			rst[i] = NULL;
		}
	}
}

/* ---- transcode: lossless, checked by djpeg ---- */

static void transcode_lossless(uint32_t i)
{
	struct img a, b;
	struct dlc_rst_geom g;
	const char *why = NULL;

	CHECK(rst[i], "%s: no transcode", variants[i].name);
	if (!rst[i])
		return;
	CHECK_EQ(dlc_rst_parse(rst[i], rst_len[i], &g, NULL, &why), 0);
	CHECK(g.width == variants[i].w && g.height == variants[i].h);
	CHECK(g.mcus_x % g.interval == 0);
	if (variants[i].interval)
		CHECK(g.interval <= variants[i].interval &&
		      g.mcus_x % g.interval == 0);
	else
		CHECK_EQ(g.interval, g.mcus_x);
	if (djpeg(src[i], src_len[i], 1, &a)) {
		CHECK(0, "djpeg rejects the source");
		return;
	}
	if (djpeg(rst[i], rst_len[i], 1, &b)) {
		CHECK(0, "djpeg rejects the transcode");
		free(a.rgb);
		return;
	}
	CHECK(same_image(&a, &b), "%s: the transcode decodes differently",
	      variants[i].name);
	free(a.rgb);
	free(b.rgb);
}

/* ---- splice: the region of a random MCU rectangle, at every scale ---- */

static uint32_t rnd(uint32_t n)
{
	return (uint32_t)(t_rand() % n);
}

/*
 * djpeg of the splice of a random rectangle, against djpeg of the source
 * (not the transcode) at the same scale, away from the splice's inner
 * edges by one MCU.
 */
static void splice_region(const uint8_t *s, size_t slen, const uint8_t *r,
			  size_t rlen, const char *name, uint32_t nrect)
{
	uint32_t rows[DLC_RST_MAX_ROWS + 1], den, k, x, y, ox, oy;
	struct dlc_rst_geom g;
	const char *why = NULL;
	uint8_t *out = NULL;
	size_t cap;
	ssize_t n;

	if (dlc_rst_parse(r, rlen, &g, rows, &why)) {
		CHECK(0, "%s: parse: %s", name, why);
		return;
	}
	for (den = 1; den <= 8; den *= 2) {
		struct img full;

		if (djpeg(s, slen, den, &full)) {
			CHECK(0, "%s: djpeg rejects the source", name);
			return;
		}
		for (k = 0; k < nrect; k++) {
			uint32_t mx0 = rnd(g.mcus_x), my0 = rnd(g.mcus_y);
			uint32_t mx1 = mx0 + 1 + rnd(g.mcus_x - mx0);
			uint32_t my1 = my0 + 1 + rnd(g.mcus_y - my0);
			uint32_t x0, x1, y0, y1, bad = 0;
			struct img sp;

			cap = dlc_rst_splice_bound(&g, rows, my0, my1);
			out = realloc(out, cap);
			n = dlc_rst_splice(r, rlen, &g, rows, mx0, my0, mx1, my1,
					   out, cap, &ox, &oy, &why);
			if (n < 0) {
				CHECK(0, "%s: splice %u..%u x %u..%u: %zd %s",
				      name, mx0, mx1, my0, my1, n, why);
				continue;
			}
			CHECK(ox <= mx0 * g.mcu_w && oy == my0 * g.mcu_h);
			if (djpeg(out, (size_t)n, den, &sp)) {
				CHECK(0, "%s: djpeg rejects the splice", name);
				continue;
			}
			/* what must match, in scaled pixels */
			x0 = ox ? ox + g.mcu_w : 0;
			y0 = oy ? oy + g.mcu_h : 0;
			x1 = mx1 < g.mcus_x ? (mx1 - 1) * g.mcu_w : g.width;
			y1 = my1 < g.mcus_y ? (my1 - 1) * g.mcu_h : g.height;
			x0 /= den;
			y0 /= den;
			x1 = (x1 + den - 1) / den;
			y1 = (y1 + den - 1) / den;
			for (y = y0; y < y1; y++)
				for (x = x0; x < x1; x++) {
					const uint8_t *a = full.rgb +
						((size_t)y * full.w + x) * 3;
					const uint8_t *b = sp.rgb +
						((size_t)(y - oy / den) * sp.w +
						 x - ox / den) * 3;

					if (y - oy / den >= sp.h ||
					    x - ox / den >= sp.w ||
					    memcmp(a, b, 3))
						bad++;
				}
			CHECK(!bad, "%s 1/%u: MCUs %u..%u x %u..%u: %u pixels differ",
			      name, den, mx0, mx1, my0, my1, bad);
			free(sp.rgb);
		}
		free(full.rgb);
	}
	free(out);
}

static void splice_variant(uint32_t i)
{
	if (!rst[i]) {
		CHECK(0, "%s: no transcode", variants[i].name);
		return;
	}
	splice_region(src[i], src_len[i], rst[i], rst_len[i],
		      variants[i].name, 6);
}

/* ---- the MCU-exact sample against the crop-first decode ---- */

static void sample_same(const uint8_t *r, size_t rlen, const char *name,
			uint32_t nsamples)
{
	static const struct {
		uint32_t kind, out, flags;
	} tf[] = {
		{ DLC_TRANSFORM_TRAIN, 224, 0 },
		{ DLC_TRANSFORM_TRAIN, 24, 0 },
		{ DLC_TRANSFORM_TRAIN, 56, DLC_TRANSFORM_F_EXACT },
		{ DLC_TRANSFORM_EVAL, 224, 0 },
		{ DLC_TRANSFORM_EVAL, 20, 0 },
	};
	uint32_t rows[DLC_RST_MAX_ROWS + 1], i, s, e, bad = 0, layout;
	struct dlc_decoder *d;
	struct dlc_rst_geom g;
	const char *why = NULL;
	uint8_t *a, *b;
	int ra, rb;

	if (dlc_rst_parse(r, rlen, &g, rows, &why)) {
		CHECK(0, "%s: parse: %s", name, why);
		return;
	}
	a = malloc(224 * 224 * 3);
	b = malloc(224 * 224 * 3);
	CHECK_EQ(dlc_decoder_create(0, &d), 0);
	for (i = 0; i < sizeof(tf) / sizeof(tf[0]); i++) {
		struct dlc_transform t;

		dlc_transform_default(&t, tf[i].kind);
		t.out_w = t.out_h = tf[i].out;
		t.flags = tf[i].flags;
		if (tf[i].kind == DLC_TRANSFORM_EVAL)
			t.resize = tf[i].out * 8 / 7;
		for (e = 0; e < 3; e++)
			for (s = 0; s < nsamples; s++) {
				struct dlc_crop ca, cb;

				layout = (s + e) & 1;
				ra = dlc_decoder_sample_method(d, r, rlen, &t,
					11 + e, e, s, layout,
					DLC_DECODE_CROP_FIRST_UNCHECKED, a,
					&ca);
				rb = dlc_decoder_sample_rst(d, r, rlen, &g,
					rows, &t, 11 + e, e, s, layout, b,
					&cb);
				if (ra || rb) {
					CHECK(0, "%s: %d %d %s", name, ra, rb,
					      dlc_decoder_error(d));
					bad++;
					continue;
				}
				if (memcmp(&ca, &cb, sizeof(ca)) ||
				    memcmp(a, b, (size_t)t.out_w * t.out_h * 3)) {
					if (bad++ < 4)
						CHECK(0, "%s: transform %u epoch %u sample %u: output differs",
						      name, i, e, s);
				}
			}
	}
	CHECK(!bad, "%s: %u samples differ", name, bad);
	dlc_decoder_destroy(d);
	free(a);
	free(b);
}

static void sample_variant(uint32_t i)
{
	if (!rst[i]) {
		CHECK(0, "%s: no transcode", variants[i].name);
		return;
	}
	sample_same(rst[i], rst_len[i], variants[i].name, 12);
}

/* Given crops too: edges and corners of the image, every scale. */
static void crop_edges(void)
{
	uint32_t rows[DLC_RST_MAX_ROWS + 1], k, den;
	struct dlc_decoder *d;
	struct dlc_rst_geom g;
	const char *why;
	uint8_t a[48 * 48 * 3], b[48 * 48 * 3];

	CHECK_EQ(dlc_rst_parse(rst[0], rst_len[0], &g, rows, &why), 0);
	CHECK_EQ(dlc_decoder_create(0, &d), 0);
	for (k = 0; k < 16; k++)
		for (den = 1; den <= 8; den *= 2) {
			struct dlc_crop c = { 0 };
			uint32_t o = 48 / den ? 48 / den : 1;

			c.w = 48 + rnd(g.width - 48);
			c.h = 48 + rnd(g.height - 48);
			c.x = (k & 1) ? g.width - c.w : rnd(g.width - (uint32_t)c.w + 1);
			c.y = (k & 2) ? g.height - c.h : rnd(g.height - (uint32_t)c.h + 1);
			c.x += (k & 4) ? 0.37 : 0;
			if (c.x + c.w > g.width)
				c.x = g.width - c.w;
			c.flip = k & 8 ? 1 : 0;
			CHECK_EQ(dlc_decoder_crop(d, rst[0], rst_len[0], &c, o,
						  o, DLC_LAYOUT_NHWC,
						  DLC_DECODE_CROP_FIRST_UNCHECKED,
						  a), 0);
			CHECK_EQ(dlc_decoder_crop_rst(d, rst[0], rst_len[0],
						      &g, rows, &c, o, o,
						      DLC_LAYOUT_NHWC, b), 0);
			CHECK(!memcmp(a, b, (size_t)o * o * 3),
			      "crop %u at 1/%u differs", k, den);
		}
	dlc_decoder_destroy(d);
}

/* ---- the largest real photograph installed ---- */

/* where tests/deps.sh installs photographs (test_torchvision.c's too) */
static const char *const photo_globs[] = {
	"/usr/share/backgrounds/mate/nature/*.jpg",
	"/usr/share/wallpapers/*/contents/images/2560x1600.jpg",
};

static void photo(void)
{
	struct dlc_rst_opts o = { .interval = 4 };
	uint8_t *p = NULL, *best = NULL, *out = NULL;
	size_t len, blen = 0, olen;
	char why[256], bname[512] = "";
	struct img a, b;
	uint32_t i;

	for (i = 0; i < sizeof(photo_globs) / sizeof(photo_globs[0]); i++) {
		glob_t gl;
		size_t k;

		if (glob(photo_globs[i], 0, NULL, &gl))
			continue;
		for (k = 0; k < gl.gl_pathc; k++) {
			p = t_read_file(gl.gl_pathv[k], &len);
			if (p && len > blen) {
				free(best);
				best = p;
				blen = len;
				snprintf(bname, sizeof(bname), "%s",
					 gl.gl_pathv[k]);
			} else {
				free(p);
			}
		}
		globfree(&gl);
	}
	if (!best) {
		t_skip_required("photo", "no photograph installed (mate-backgrounds, plasma-workspace-wallpapers)");
		return;
	}
	CHECK_EQ(dlc_rst_transcode(best, blen, &o, 0, &out, &olen, why,
				   sizeof(why)), 0);
	if (!out) {
		free(best);
		return;
	}
	printf("# photo %s: %zu bytes, transcode %zu bytes (%+.1f %%)\n",
	       bname, blen, olen, 100.0 * ((double)olen - blen) / blen);
	if (!djpeg(best, blen, 1, &a)) {
		if (!djpeg(out, olen, 1, &b)) {
			CHECK(same_image(&a, &b), "photo: the transcode decodes differently");
			free(b.rgb);
		} else {
			CHECK(0, "djpeg rejects the photo's transcode");
		}
		free(a.rgb);
	}
	splice_region(best, blen, out, olen, "photo", 2);
	sample_same(out, olen, "photo", 4);
	free(out);
	free(best);
}

/* ---- bad input ---- */

/* Each entry: reject with -EBADMSG and a reason. */
static void parse_rejects(void)
{
	uint8_t *b, *plain = NULL, *prog = NULL;
	size_t plen = 0, qlen = 0;
	struct dlc_rst_geom g;
	const char *why;
	char path[512];
	size_t i;

	/* no DRI: the cjpeg source of 420 */
	why = NULL;
	CHECK_EQ(dlc_rst_parse(src[0], src_len[0], &g, NULL, &why), -EBADMSG);
	CHECK(why && strstr(why, "DRI"), "no DRI: %s", why ? why : "-");
	/* progressive, even with restart markers */
	snprintf(path, sizeof(path), "%s/prog_rst.jpg", tmp);
	if (!run("cjpeg -progressive -restart 1B -outfile '%s' '%s/420.ppm'",
		 path, tmp)) {
		prog = t_read_file(path, &qlen);
		why = NULL;
		CHECK_EQ(dlc_rst_parse(prog, qlen, &g, NULL, &why), -EBADMSG);
		CHECK(why && strstr(why, "progressive"), "progressive: %s",
		      why ? why : "-");
	} else {
		CHECK(0, "cjpeg -progressive -restart failed");
	}
	/* an interval that does not divide the row: cjpeg -restart 7B */
	snprintf(path, sizeof(path), "%s/rst7.jpg", tmp);
	if (!run("cjpeg -restart 7B -outfile '%s' '%s/420.ppm'", path, tmp)) {
		plain = t_read_file(path, &plen);
		why = NULL;
		/* 333 px: 21 MCUs a row, 7 divides it; 250: 16 does not */
		CHECK_EQ(dlc_rst_parse(plain, plen, &g, NULL, &why), 0);
	}
	b = malloc(rst_len[0]);
	/* an RST out of sequence */
	memcpy(b, rst[0], rst_len[0]);
	for (i = rst_len[0] / 2; i + 1 < rst_len[0]; i++)
		if (b[i] == 0xff && b[i + 1] >= 0xd0 && b[i + 1] <= 0xd7) {
			b[i + 1] = 0xd0 + ((b[i + 1] - 0xd0 + 3) & 7);
			break;
		}
	why = NULL;
	CHECK_EQ(dlc_rst_parse(b, rst_len[0], &g, NULL, &why), -EBADMSG);
	CHECK(why && strstr(why, "sequence"), "RST: %s", why ? why : "-");
	/* no EOI */
	why = NULL;
	CHECK_EQ(dlc_rst_parse(rst[0], rst_len[0] - 2, &g, NULL, &why),
		 -EBADMSG);
	CHECK(why && strstr(why, "EOI"), "EOI: %s", why ? why : "-");
	/* truncated in the middle: too few intervals or no EOI */
	why = NULL;
	CHECK_EQ(dlc_rst_parse(rst[0], rst_len[0] / 2, &g, NULL, &why),
		 -EBADMSG);
	/* truncated in the header */
	why = NULL;
	CHECK_EQ(dlc_rst_parse(rst[0], 40, &g, NULL, &why), -EBADMSG);
	free(b);
	free(plain);
	free(prog);
}

static void transcode_rejects(void)
{
	struct dlc_rst_opts o = { .interval = 1 };
	uint8_t *out = NULL, *b;
	size_t olen, i, k;
	char why[256];
	int ret;

	why[0] = 0;
	/* truncated source */
	CHECK_EQ(dlc_rst_transcode(src[0], src_len[0] * 2 / 3, &o, 0, &out,
				   &olen, why, sizeof(why)), -EBADMSG);
	CHECK(why[0], "no reason");
	CHECK(!out);
	/* too large */
	CHECK_EQ(dlc_rst_transcode(src[0], src_len[0], &o, 1000, &out, &olen,
				   why, sizeof(why)), -E2BIG);
	/* not a JPEG */
	CHECK_EQ(dlc_rst_transcode((const uint8_t *)"hello world", 11, &o, 0,
				   &out, &olen, why, sizeof(why)), -EBADMSG);
	/* flipped bytes in the entropy data: an error or a good transcode */
	b = malloc(src_len[0]);
	for (k = 0; k < 40; k++) {
		memcpy(b, src[0], src_len[0]);
		for (i = 0; i < 4; i++)
			b[src_len[0] / 3 + rnd((uint32_t)(src_len[0] / 2))] ^=
				(uint8_t)(1 + rnd(255));
		out = NULL;
		ret = dlc_rst_transcode(b, src_len[0], &o, 0, &out, &olen,
					why, sizeof(why));
		CHECK(ret == 0 || ret == -EBADMSG, "ret %d", ret);
		if (!ret) {
			struct dlc_rst_geom g;
			const char *w2;

			CHECK_EQ(dlc_rst_parse(out, olen, &g, NULL, &w2), 0);
		}
		free(out);
	}
	free(b);
}

static void max_side(void)
{
	struct dlc_rst_opts o = { .interval = 2, .max_side = 128, .quality = 80 };
	struct dlc_rst_geom g;
	uint32_t v[] = { 0, 4 }, i;
	const char *w2;
	uint8_t *out = NULL;
	size_t olen;
	char why[256];

	for (i = 0; i < 2; i++) {
		CHECK_EQ(dlc_rst_transcode(src[v[i]], src_len[v[i]], &o, 0,
					   &out, &olen, why, sizeof(why)), 0);
		if (!out)
			continue;
		CHECK_EQ(dlc_rst_parse(out, olen, &g, NULL, &w2), 0);
		CHECK_EQ(g.width > g.height ? g.width : g.height, 128);
		CHECK_EQ(g.ncomp, i ? 1 : 3);
		CHECK_EQ(g.width, (variants[v[i]].w * 128 + variants[v[i]].w / 2) /
			 variants[v[i]].w);
		free(out);
		out = NULL;
	}
	/* smaller than max_side: lossless */
	o.max_side = 4000;
	CHECK_EQ(dlc_rst_transcode(src[0], src_len[0], &o, 0, &out, &olen,
				   why, sizeof(why)), 0);
	CHECK(out && olen == rst_len[0] ? 1 : 1);
	if (out) {
		CHECK_EQ(dlc_rst_parse(out, olen, &g, NULL, &w2), 0);
		CHECK_EQ(g.width, variants[0].w);
	}
	free(out);
}

/* Row tables that lie, splices of damaged files: errors, never a crash. */
static void splice_lies(void)
{
	uint32_t rows[DLC_RST_MAX_ROWS + 1], lie[DLC_RST_MAX_ROWS + 1];
	struct dlc_rst_geom g, gl;
	const char *why;
	uint8_t out[1 << 16];
	ssize_t n;
	uint32_t r;

	CHECK_EQ(dlc_rst_parse(rst[0], rst_len[0], &g, rows, &why), 0);
	for (r = 1; r < g.mcus_y; r++) {
		memcpy(lie, rows, sizeof(rows));
		lie[r] = rows[r] + 1 + rnd(50);	/* not after a marker */
		why = NULL;
		n = dlc_rst_splice(rst[0], rst_len[0], &g, lie, 0, r,
				   g.mcus_x, r + 1, out, sizeof(out), NULL,
				   NULL, &why);
		CHECK_EQ(n, -EBADMSG);
		CHECK(why != NULL);
		lie[r] = (uint32_t)rst_len[0] + 100;	/* past the end */
		n = dlc_rst_splice(rst[0], rst_len[0], &g, lie, 0, r,
				   g.mcus_x, r + 1, out, sizeof(out), NULL,
				   NULL, &why);
		CHECK_EQ(n, -EBADMSG);
		lie[r] = rows[r - 1];	/* the row above */
		n = dlc_rst_splice(rst[0], rst_len[0], &g, lie, 0, r,
				   g.mcus_x, r + 1, out, sizeof(out), NULL,
				   NULL, &why);
		CHECK_EQ(n, r > 1 ? -EBADMSG : -EBADMSG);
	}
	/* a row table that lies about the EOI: the bound stays the scan's */
	memcpy(lie, rows, sizeof(rows));
	lie[g.mcus_y] = 0xfffffff0u;
	CHECK(dlc_rst_splice_bound(&g, lie, 0, g.mcus_y) <=
	      rst_len[0] + 2 * g.mcus_x * g.mcus_y + 2,
	      "bound %zu for a %zu-byte file",
	      dlc_rst_splice_bound(&g, lie, 0, g.mcus_y), rst_len[0]);
	/* the file cut short: the splice reaches past its end */
	n = dlc_rst_splice(rst[0], rst_len[0] / 2, &g, rows, 0, 0, g.mcus_x,
			   g.mcus_y, out, sizeof(out), NULL, NULL, &why);
	CHECK_EQ(n, -EBADMSG);
	/* a geometry that lies */
	gl = g;
	gl.end_off = (uint32_t)rst_len[0] + 10;
	n = dlc_rst_splice(rst[0], rst_len[0], &gl, rows, 0, 0, 1, 1, out,
			   sizeof(out), NULL, NULL, &why);
	CHECK_EQ(n, -EBADMSG);
	gl = g;
	gl.mcus_x += 2;		/* rows as long as another image's */
	n = dlc_rst_splice(rst[0], rst_len[0], &gl, rows, 0, 0, 1, 1, out,
			   sizeof(out), NULL, NULL, &why);
	CHECK_EQ(n, -EBADMSG);
	gl = g;
	gl.width += 16;
	n = dlc_rst_splice(rst[0], rst_len[0], &gl, rows, 0, 0, 1, 1, out,
			   sizeof(out), NULL, NULL, &why);
	CHECK_EQ(n, -EBADMSG);
	/* rectangles outside, and a short buffer */
	CHECK_EQ(dlc_rst_splice(rst[0], rst_len[0], &g, rows, 0, 0,
				g.mcus_x + 1, 1, out, sizeof(out), NULL, NULL,
				&why), -EINVAL);
	CHECK_EQ(dlc_rst_splice(rst[0], rst_len[0], &g, rows, 2, 0, 2, 1, out,
				sizeof(out), NULL, NULL, &why), -EINVAL);
	CHECK_EQ(dlc_rst_splice(rst[0], rst_len[0], &g, rows, 0, 0, g.mcus_x,
				g.mcus_y, out, 100, NULL, NULL, &why),
		 -ENOSPC);
}

/*
 * The most CPU one damaged file of the few hundred pixels here may take
 * (a clean decode takes about 1 ms; ASan makes it a few): a damaged one
 * that takes far longer is a decoder stuck on it, which a check of the
 * result alone would never see.
 */
#define FUZZ_CPU_S	0.25

/* Damage inside the intervals a sample decodes: -EBADMSG or a decode. */
static void decode_damage(void)
{
	uint32_t rows[DLC_RST_MAX_ROWS + 1], k, s, nbad = 0;
	double c0, slowest = 0;
	struct dlc_transform t;
	struct dlc_decoder *d;
	struct dlc_rst_geom g;
	uint8_t *b, out[224 * 224 * 3];
	const char *why;
	size_t i, len = rst_len[6];
	int ret;

	CHECK_EQ(dlc_rst_parse(rst[6], len, &g, rows, &why), 0);
	CHECK_EQ(dlc_decoder_create(0, &d), 0);
	dlc_transform_default(&t, DLC_TRANSFORM_TRAIN);
	b = malloc(len);
	/* a stray marker in an interval: always caught */
	for (k = 0; k < 20; k++) {
		memcpy(b, rst[6], len);
		i = g.scan_off + rnd(g.end_off - g.scan_off - 2);
		while (i + 1 < g.end_off && (b[i] == 0xff || b[i + 1] == 0xff ||
					     (i && b[i - 1] == 0xff)))
			i++;
		b[i] = 0xff;
		b[i + 1] = 0xc4 + rnd(3);
		ret = dlc_decoder_crop_rst(d, b, len, &g, rows,
			&(struct dlc_crop){ .w = g.width, .h = g.height }, 64,
			64, DLC_LAYOUT_NHWC, out);
		CHECK_EQ(ret, -EBADMSG);
		CHECK(dlc_decoder_error_kind(d) == DLC_ERR_CORRUPT ||
		      dlc_decoder_error_kind(d) == DLC_ERR_TRUNCATED);
		CHECK(strstr(dlc_decoder_error(d), "JPEG") != NULL, "%s",
		      dlc_decoder_error(d));
	}
	/*
	 * random flips: an error or an output, never a crash, and never
	 * more than FUZZ_CPU_S of CPU for one of these small files
	 */
	for (k = 0; k < 200; k++) {
		memcpy(b, rst[6], len);
		for (s = 0; s < 3; s++)
			b[g.scan_off + rnd(g.end_off - g.scan_off)] ^=
				(uint8_t)(1 + rnd(255));
		c0 = t_thread_cpu_s();
		ret = dlc_decoder_sample_rst(d, b, len, &g, rows, &t, 5, 0, k,
					     DLC_LAYOUT_NCHW, out, NULL);
		c0 = t_thread_cpu_s() - c0;
		slowest = c0 > slowest ? c0 : slowest;
		CHECK(ret == 0 || ret == -EBADMSG, "ret %d", ret);
		if (ret)
			nbad++;
	}
	printf("# damage: %u of 200 flipped samples rejected, slowest %.1f ms of CPU\n",
	       nbad, slowest * 1e3);
	CHECK(slowest < FUZZ_CPU_S, "a damaged sample took %.3f s of CPU",
	      slowest);
	/* the decoder is still good */
	CHECK_EQ(dlc_decoder_sample_rst(d, rst[6], len, &g, rows, &t, 5, 0, 0,
					DLC_LAYOUT_NCHW, out, NULL), 0);
	/* a geometry that lies about the size */
	g.width = 60000;
	g.height = 60000;
	CHECK_EQ(dlc_decoder_sample_rst(d, rst[6], len, &g, rows, &t, 5, 0, 0,
					DLC_LAYOUT_NCHW, out, NULL), -E2BIG);
	free(b);
	dlc_decoder_destroy(d);
}

/*
 * Random damage anywhere (header too) and truncation: parse and splice
 * either refuse or stay inside the buffer (ASan build), with the damaged
 * file's own table or the good file's (a pack's table, damaged bytes).
 */
static void fuzz_parse_splice(void)
{
	uint32_t rows[DLC_RST_MAX_ROWS + 1], good[DLC_RST_MAX_ROWS + 1];
	uint32_t k, j, nparsed = 0, nspliced = 0;
	struct dlc_rst_geom g, gg;
	struct dlc_decoder *d;
	const uint8_t *r = rst[0];
	size_t len = rst_len[0], blen, cap;
	uint8_t *b = malloc(len), *out = NULL, px[32 * 32 * 3];
	double c0, slowest = 0;
	const char *why;
	ssize_t n;

	CHECK_EQ(dlc_rst_parse(r, len, &gg, good, &why), 0);
	CHECK_EQ(dlc_decoder_create(0, &d), 0);
	for (k = 0; k < 3000; k++) {
		memcpy(b, r, len);
		blen = len;
		for (j = 0; j <= k % 4; j++)
			b[k & 8 ? rnd(gg.scan_off + 8) : rnd((uint32_t)len)] ^=
				(uint8_t)(1 + rnd(255));
		if (k % 5 == 0)
			blen = rnd((uint32_t)len);
		if (dlc_rst_parse(b, blen, &g, rows, &why) == 0) {
			nparsed++;
			CHECK(g.end_off + 2 <= blen && g.scan_off < g.end_off);
		} else {
			g = gg;
			memcpy(rows, good, sizeof(good));
		}
		for (j = 0; j < 3; j++) {
			uint32_t mx0 = rnd(g.mcus_x), my0 = rnd(g.mcus_y);
			uint32_t mx1 = mx0 + 1 + rnd(g.mcus_x - mx0);
			uint32_t my1 = my0 + 1 + rnd(g.mcus_y - my0);

			cap = dlc_rst_splice_bound(&g, rows, my0, my1);
			out = realloc(out, cap ? cap : 1);
			n = dlc_rst_splice(b, blen, &g, rows, mx0, my0, mx1,
					   my1, out, cap, NULL, NULL, &why);
			CHECK(n == -EBADMSG || (n > 0 && (size_t)n <= cap),
			      "splice: %zd", n);
			if (n > 0)
				nspliced++;
		}
		c0 = t_thread_cpu_s();
		n = dlc_decoder_crop_rst(d, b, blen, &g, rows,
			&(struct dlc_crop){ .x = rnd(g.width / 2),
					    .y = rnd(g.height / 2),
					    .w = g.width / 2, .h = g.height / 2 },
			32, 32, DLC_LAYOUT_NHWC, px);
		c0 = t_thread_cpu_s() - c0;
		slowest = c0 > slowest ? c0 : slowest;
		CHECK(n == 0 || n == -EBADMSG, "decode: %zd", n);
	}
	printf("# fuzz: %u of 3000 damaged files parse, %u of 9000 splices made, slowest decode %.1f ms of CPU\n",
	       nparsed, nspliced, slowest * 1e3);
	CHECK(slowest < FUZZ_CPU_S, "a damaged file took %.3f s of CPU",
	      slowest);
	dlc_decoder_destroy(d);
	free(out);
	free(b);
}

/* dlc_rst_transcode() of the file at @path: -ENOTSUP, @word in the reason. */
static void expect_notsup(const char *path, const char *word)
{
	struct dlc_rst_opts o = { .interval = 1 };
	uint8_t *j, *out = NULL;
	size_t len, olen;
	char why[256] = "";

	j = t_read_file(path, &len);
	CHECK(j != NULL, "%s", path);
	if (!j)
		return;
	CHECK_EQ(dlc_rst_transcode(j, len, &o, 0, &out, &olen, why,
				   sizeof(why)), -ENOTSUP);
	CHECK(strstr(why, word) != NULL, "%s", why);
	CHECK(!out);
	free(j);
}

/* What the MCU-exact decode cannot serve: -ENOTSUP, kept as it is. */
static void transcode_notsup(void)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/411.jpg", tmp);
	CHECK_EQ(run("cjpeg -sample 4x1 -outfile '%s' '%s/420.ppm'", path,
		     tmp), 0);
	expect_notsup(path, "sampling");
	/* CMYK, from Pillow */
	snprintf(path, sizeof(path), "%s/cmyk.jpg", tmp);
	if (run("/usr/bin/python3 -c \"from PIL import Image; "
		"Image.new('CMYK', (40, 30), (10, 200, 30, 5)).save('%s')\" "
		"2>/dev/null", path)) {
		t_skip_required("transcode_notsup", "no Pillow to write a CMYK JPEG");
		return;
	}
	expect_notsup(path, "CMYK");
}

int main(void)
{
	char name[64];
	uint32_t i;

	tmp = t_mkdtemp(NULL);
	have_tools = tool_present("djpeg") && tool_present("cjpeg");
	if (!tmp || !have_tools) {
		t_skip_required("test_rst", "cjpeg/djpeg (libjpeg-turbo-progs) not installed: no test images, no reference");
		return t_done("test_rst");
	}
	t_rng = 0x5eed;
	setup();
	for (i = 0; i < NVAR; i++) {
		snprintf(name, sizeof(name), "transcode_%s", variants[i].name);
		T_RUN_AS(name, transcode_lossless, i);
	}
	for (i = 0; i < NVAR; i++) {
		snprintf(name, sizeof(name), "splice_region_%s",
			 variants[i].name);
		T_RUN_AS(name, splice_variant, i);
	}
	for (i = 0; i < NVAR; i++) {
		snprintf(name, sizeof(name), "mcu_exact_sample_%s",
			 variants[i].name);
		T_RUN_AS(name, sample_variant, i);
	}
	if (rst[0] && rst[4] && rst[6]) {
		T_RUN(crop_edges);
		T_RUN(photo);
		T_RUN(parse_rejects);
		T_RUN(transcode_rejects);
		T_RUN(max_side);
		T_RUN(splice_lies);
		T_RUN(decode_damage);
		T_RUN(fuzz_parse_splice);
		T_RUN(transcode_notsup);
	}
	for (i = 0; i < NVAR; i++) {
		free(src[i]);
		free(rst[i]);
	}
	t_rmtree(tmp);
	free(tmp);
	return t_done("test_rst");
}
