// SPDX-License-Identifier: MIT
/*
 * JPEG decode: full decode against djpeg for 4:2:0, 4:2:2, 4:4:4, gray,
 * progressive and restart-marker files and against a reference CMYK
 * conversion; crop-first against full-then-crop and against a plain
 * libjpeg decode at the documented DCT scale; and bad inputs (empty, not a
 * JPEG, truncated, corrupt, a decompression bomb), each failing with the
 * right kind and errno while the decoder stays usable.
 *
 * Test images are synthesized here and compressed with cjpeg in a
 * temporary directory; without cjpeg/djpeg the test is a named skip
 * (a FAIL under CI=true).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jpeglib.h>

#include "dlcache.h"

#include "helpers/testutil.h"

static char tmpdir[] = "/tmp/dlc-test-decode-XXXXXX";

struct file {
	uint8_t *buf;
	size_t len;
};

struct image {
	uint8_t *rgb;
	uint32_t w, h;
};

/* ---- helpers ---- */

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		printf("FAIL: out of memory\n");
		exit(1);
	}
	return p;
}

/* Gradients, shapes, stripes and noise, like a photo's mix of content. */
static uint8_t *synth(uint32_t w, uint32_t h)
{
	uint8_t *p = xmalloc((size_t)w * h * 3);
	uint32_t x, y;

	for (y = 0; y < h; y++) {
		for (x = 0; x < w; x++) {
			uint8_t *q = p + ((size_t)y * w + x) * 3;
			double dx = x - w * 0.35, dy = y - h * 0.55;
			int disc = dx * dx + dy * dy < (double)w * h / 12;
			int rect = x > w * 0.6 && x < w * 0.85 &&
				   y > h * 0.1 && y < h * 0.4;
			int n = (int)(t_rand() % 21) - 10;
			int r = (int)(255.0 * x / w), g = (int)(255.0 * y / h);
			int b = ((x / 7 + y / 11) & 1) ? 190 : 60;

			if (disc) {
				r = 240 - r / 3;
				g = 40;
			}
			if (rect) {
				b = 250;
				r = 20;
			}
			r += n;
			g += n;
			b += n;
			q[0] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
			q[1] = (uint8_t)(g < 0 ? 0 : g > 255 ? 255 : g);
			q[2] = (uint8_t)(b < 0 ? 0 : b > 255 ? 255 : b);
		}
	}
	return p;
}

static void write_ppm(const char *path, const uint8_t *p, uint32_t w,
		      uint32_t h)
{
	FILE *f = fopen(path, "wb");

	if (!f) {
		printf("FAIL: cannot write %s\n", path);
		exit(1);
	}
	fprintf(f, "P6\n%u %u\n255\n", w, h);
	fwrite(p, 1, (size_t)w * h * 3, f);
	fclose(f);
}

/* P6, or P5 replicated to RGB. */
static int read_pnm(const char *path, struct image *img)
{
	FILE *f = fopen(path, "rb");
	unsigned int w, h, mx, i;
	char magic[3] = "";
	size_t n;

	if (!f)
		return -1;
	if (fscanf(f, "%2s %u %u %u", magic, &w, &h, &mx) != 4 ||
	    mx != 255 || fgetc(f) == EOF ||
	    (strcmp(magic, "P6") && strcmp(magic, "P5"))) {
		fclose(f);
		return -1;
	}
	n = (size_t)w * h;
	img->rgb = xmalloc(n * 3);
	img->w = w;
	img->h = h;
	if (!strcmp(magic, "P6")) {
		if (fread(img->rgb, 1, n * 3, f) != n * 3)
			goto bad;
	} else {
		if (fread(img->rgb, 1, n, f) != n)
			goto bad;
		for (i = (unsigned int)n; i-- > 0;)
			img->rgb[3 * i] = img->rgb[3 * i + 1] =
				img->rgb[3 * i + 2] = img->rgb[i];
	}
	fclose(f);
	return 0;
bad:
	free(img->rgb);
	fclose(f);
	return -1;
}

static int slurp(const char *path, struct file *out)
{
	FILE *f = fopen(path, "rb");
	long n;

	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	out->buf = xmalloc((size_t)n);
	out->len = fread(out->buf, 1, (size_t)n, f);
	fclose(f);
	return out->len == (size_t)n ? 0 : -1;
}

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static double mean_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
	uint64_t s = 0;
	size_t i;

	for (i = 0; i < n; i++)
		s += (uint64_t)abs((int)a[i] - (int)b[i]);
	return (double)s / n;
}

/*
 * ---- references decoded by djpeg (libjpeg-turbo-progs), a separate
 * program: not the libjpeg calls the library makes in this process ----
 */

/*
 * Decode @f at scale 1/@den to RGB with djpeg (gray comes back as PGM and
 * is spread to RGB; CMYK as djpeg converts it for PPM: R = C * K / 255 on
 * the stored, Adobe-inverted values). *@adobe: the file has Adobe's APP14.
 */
static int ref_decode(const struct file *f, uint32_t den, struct image *img,
		      int *adobe)
{
	static unsigned int seq;
	char in[300], out[300];
	size_t i;
	int ret;

	memset(img, 0, sizeof(*img));
	snprintf(in, sizeof(in), "%s/ref%u.jpg", tmpdir, seq);
	snprintf(out, sizeof(out), "%s/ref%u.pnm", tmpdir, seq++);
	ret = t_write_file(in, f->buf, f->len) ||
	      run("djpeg -scale 1/%u -pnm -outfile %s %s", den, out, in) ||
	      read_pnm(out, img);
	unlink(in);
	unlink(out);
	if (adobe)
		for (*adobe = 0, i = 0; i + 11 < f->len && !*adobe; i++)
			*adobe = f->buf[i] == 0xff && f->buf[i + 1] == 0xee &&
				 !memcmp(f->buf + i + 4, "Adobe", 5);
	return ret ? -1 : 0;
}

/* ---- test images ---- */

enum { F_420, F_422, F_444, F_GRAY, F_PROG, F_RST, F_BIG420, F_BIGPROG,
       F_BIG444, F_BIGGRAY, NFILES };

static const struct variant {
	const char *name;
	const char *opts;
	int big;
	uint32_t comps, prog, hs, vs;
} variants[NFILES] = {
	[F_420] = { "420", "-quality 90", 0, 3, 0, 2, 2 },
	[F_422] = { "422", "-quality 90 -sample 2x1", 0, 3, 0, 2, 1 },
	[F_444] = { "444", "-quality 90 -sample 1x1", 0, 3, 0, 1, 1 },
	[F_GRAY] = { "gray", "-quality 90 -grayscale", 0, 1, 0, 1, 1 },
	[F_PROG] = { "prog", "-quality 90 -progressive", 0, 3, 1, 2, 2 },
	[F_RST] = { "rst", "-quality 85 -restart 2", 0, 3, 0, 2, 2 },
	[F_BIG420] = { "big420", "-quality 85", 1, 3, 0, 2, 2 },
	[F_BIGPROG] = { "bigprog", "-quality 85 -progressive", 1, 3, 1, 2, 2 },
	[F_BIG444] = { "big444", "-quality 85 -sample 1x1", 1, 3, 0, 1, 1 },
	[F_BIGGRAY] = { "biggray", "-quality 85 -grayscale", 1, 1, 0, 1, 1 },
};

static struct file files[NFILES];
static struct image expect[NFILES];	/* djpeg's output */

#define SMALL_W 333
#define SMALL_H 257
#define BIG_W 1203
#define BIG_H 907

static int make_files(void)
{
	char src[2][256], path[256], out[256];
	uint8_t *px;
	int i;

	snprintf(src[0], sizeof(src[0]), "%s/small.ppm", tmpdir);
	px = synth(SMALL_W, SMALL_H);
	write_ppm(src[0], px, SMALL_W, SMALL_H);
	free(px);
	snprintf(src[1], sizeof(src[1]), "%s/big.ppm", tmpdir);
	px = synth(BIG_W, BIG_H);
	write_ppm(src[1], px, BIG_W, BIG_H);
	free(px);
	for (i = 0; i < NFILES; i++) {
		const struct variant *v = &variants[i];

		snprintf(path, sizeof(path), "%s/%s.jpg", tmpdir, v->name);
		snprintf(out, sizeof(out), "%s/%s.pnm", tmpdir, v->name);
		if (run("cjpeg %s -outfile %s %s", v->opts, path, src[v->big]) ||
		    run("djpeg -pnm -outfile %s %s", out, path) ||
		    slurp(path, &files[i]) || read_pnm(out, &expect[i])) {
			printf("FAIL: making %s with cjpeg/djpeg\n", v->name);
			return -1;
		}
	}
	return 0;
}

/* ---- full decode ---- */

static void test_full(struct dlc_decoder *d)
{
	int i;

	for (i = 0; i < NFILES; i++) {
		const struct variant *v = &variants[i];
		struct dlc_jpeg_info info;
		uint8_t *rgb = NULL;
		uint32_t w = 0, h = 0;
		int ret, m;

		ret = dlc_decoder_header(d, files[i].buf, files[i].len, &info);
		CHECK(ret == 0, "%s: header returned %d (%s)", v->name, ret,
		      dlc_decoder_error(d));
		CHECK(info.width == expect[i].w && info.height == expect[i].h &&
		      info.components == v->comps && info.progressive == v->prog &&
		      info.h_samp == v->hs && info.v_samp == v->vs,
		      "%s: header says %ux%u comps %u prog %u samp %ux%u", v->name,
		      info.width, info.height, info.components,
		      info.progressive, info.h_samp, info.v_samp);

		ret = dlc_decoder_full(d, files[i].buf, files[i].len, &rgb, &w, &h);
		CHECK(ret == 0, "%s: full decode returned %d (%s)", v->name,
		      ret, dlc_decoder_error(d));
		if (ret)
			continue;
		CHECK(dlc_decoder_error_kind(d) == DLC_ERR_NONE,
		      "%s: kind set after success", v->name);
		CHECK(w == expect[i].w && h == expect[i].h, "%s: %ux%u", v->name,
		      w, h);
		if (w == expect[i].w && h == expect[i].h) {
			m = t_max_diff(rgb, expect[i].rgb, (size_t)w * h * 3);
			CHECK(m <= 1, "%s: max diff %d vs djpeg", v->name, m);
		}
		free(rgb);
	}
}

/* CMYK as Photoshop writes it: inverted, with Adobe's APP14 marker. */
static int make_cmyk(const uint8_t *rgb, uint32_t w, uint32_t h, int ycck,
		     struct file *out)
{
	struct jpeg_compress_struct c;
	struct jpeg_error_mgr e;
	unsigned char *mem = NULL;
	unsigned long len = 0;
	uint8_t *row = xmalloc((size_t)w * 4);
	uint32_t x;

	c.err = jpeg_std_error(&e);
	jpeg_create_compress(&c);
	jpeg_mem_dest(&c, &mem, &len);
	c.image_width = w;
	c.image_height = h;
	c.input_components = 4;
	c.in_color_space = JCS_CMYK;
	jpeg_set_defaults(&c);
	jpeg_set_colorspace(&c, ycck ? JCS_YCCK : JCS_CMYK);
	jpeg_set_quality(&c, 92, TRUE);
	jpeg_start_compress(&c, TRUE);
	while (c.next_scanline < h) {
		const uint8_t *p = rgb + (size_t)c.next_scanline * w * 3;

		for (x = 0; x < w; x++, p += 3) {
			int mx = p[0] > p[1] ? p[0] : p[1];
			int k, cc, m, yy;

			mx = mx > p[2] ? mx : p[2];
			k = 255 - mx;
			cc = mx ? (mx - p[0]) * 255 / mx : 0;
			m = mx ? (mx - p[1]) * 255 / mx : 0;
			yy = mx ? (mx - p[2]) * 255 / mx : 0;
			row[4 * x] = (uint8_t)(255 - cc);
			row[4 * x + 1] = (uint8_t)(255 - m);
			row[4 * x + 2] = (uint8_t)(255 - yy);
			row[4 * x + 3] = (uint8_t)(255 - k);
		}
		jpeg_write_scanlines(&c, &row, 1);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	free(row);
	out->buf = xmalloc(len);
	memcpy(out->buf, mem, len);
	out->len = len;
	free(mem);
	return 0;
}

static void test_cmyk(struct dlc_decoder *d)
{
	uint32_t w = 161, h = 97;
	uint8_t *orig = synth(w, h);
	int ycck;

	for (ycck = 0; ycck < 2; ycck++) {
		const char *name = ycck ? "ycck" : "cmyk";
		struct dlc_jpeg_info info;
		struct file f;
		struct image conv;
		uint8_t *rgb = NULL, out[48 * 32 * 3], ref_out[48 * 32 * 3];
		uint32_t ow = 0, oh = 0;
		struct dlc_crop box = { 10, 5, 120, 80, 0, 0 };
		int adobe = 0, ret, m;
		double md;

		make_cmyk(orig, w, h, ycck, &f);
		CHECK(!dlc_decoder_header(d, f.buf, f.len, &info) &&
		      info.components == 4, "%s: header", name);
		ret = dlc_decoder_full(d, f.buf, f.len, &rgb, &ow, &oh);
		CHECK(ret == 0 && ow == w && oh == h, "%s: full decode %d (%s)",
		      name, ret, dlc_decoder_error(d));
		/* djpeg: inverted CMYK, R = C * K / 255 on the stored values */
		if (ret || ref_decode(&f, 1, &conv, &adobe)) {
			CHECK(ret, "%s: djpeg could not decode it", name);
			free(f.buf);
			continue;
		}
		CHECK(adobe, "%s: libjpeg wrote no Adobe marker", name);
		CHECK(conv.w == w && conv.h == h, "%s: djpeg made %ux%u", name,
		      conv.w, conv.h);
		m = t_max_diff(rgb, conv.rgb, (size_t)w * h * 3);
		CHECK(m <= 1, "%s: max diff %d vs reference conversion", name, m);
		/*
		 * and the colours come back: the inversion is the right way
		 * round (wrong, it is off by ~100). YCCK subsamples the
		 * chroma, which costs a few levels on this busy picture.
		 */
		md = mean_diff(rgb, orig, (size_t)w * h * 3);
		CHECK(md < 15.0, "%s: mean diff %.2f vs the original RGB", name, md);

		/* the crop paths convert too */
		ret = dlc_decoder_crop(d, f.buf, f.len, &box, 48, 32,
				       DLC_LAYOUT_NHWC, DLC_DECODE_CROP_FIRST, out);
		CHECK(ret == 0, "%s: crop-first %d (%s)", name, ret,
		      dlc_decoder_error(d));
		CHECK(!dlc_resize_rgb(conv.rgb, w, h, (size_t)w * 3, &box, 48, 32,
				      DLC_LAYOUT_NHWC, ref_out), "resize");
		md = mean_diff(out, ref_out, sizeof(out));
		CHECK(md < 3.0, "%s: crop-first mean diff %.2f", name, md);
		free(conv.rgb);
		free(rgb);
		free(f.buf);
	}
	free(orig);
}

/* ---- crop-first ---- */

static uint32_t documented_denom(const struct dlc_crop *c, uint32_t ow,
				 uint32_t oh)
{
	static const uint32_t dens[] = { 8, 4, 2 };
	unsigned int i;

	for (i = 0; i < 3; i++)
		if (c->w / dens[i] >= ow && c->h / dens[i] >= oh)
			return dens[i];
	return 1;
}

/*
 * What torchvision's resized_crop does, written out on a whole decode at
 * 1/@den (@img, @w x @h): the crop, as an image of its own, resized. At a
 * reduced scale the box's edges fall inside pixels, which are taken
 * whole; the filter stops at them.
 */
static int crop_then_resize(const uint8_t *img, uint32_t w, uint32_t h,
			    const struct dlc_crop *box, uint32_t den,
			    uint32_t ow, uint32_t oh, uint8_t *dst)
{
	double x0 = box->x / den, y0 = box->y / den;
	double x1 = (box->x + box->w) / den, y1 = (box->y + box->h) / den;
	uint32_t ix = (uint32_t)floor(x0), iy = (uint32_t)floor(y0);
	uint32_t ex = (uint32_t)ceil(x1) < w ? (uint32_t)ceil(x1) : w;
	uint32_t ey = (uint32_t)ceil(y1) < h ? (uint32_t)ceil(y1) : h;
	struct dlc_crop sub = { x0 - ix, y0 - iy, x1 - x0, y1 - y0,
				box->flip, 0 };

	return dlc_resize_rgb(img + ((size_t)iy * w + ix) * 3, ex - ix,
			      ey - iy, (size_t)w * 3, &sub, ow, oh,
			      DLC_LAYOUT_NHWC, dst);
}

static void test_crop_first(struct dlc_decoder *d)
{
	static const int which[] = { F_BIG420, F_BIGPROG, F_BIG444, F_BIGGRAY,
				     F_420, F_444, F_GRAY, F_PROG, F_RST, F_422 };
	static const uint32_t sizes[] = { 7, 16, 32, 56, 112, 224 };
	uint32_t used[9] = { 0 }, exact = 0, total = 0;
	double worst_mean = 0, sum_mean = 0;
	int worst_max = 0;
	unsigned int k;

	for (k = 0; k < sizeof(which) / sizeof(which[0]); k++) {
		int fi = which[k];
		struct image scaled[4];
		uint32_t w = expect[fi].w, h = expect[fi].h, t, s;

		for (s = 0; s < 4; s++)
			if (ref_decode(&files[fi], 1u << s, &scaled[s], NULL))
				printf("FAIL: reference decode of %s\n",
				       variants[fi].name);
		for (t = 0; t < 40; t++) {
			uint32_t ow = sizes[t_rand() % 6], oh = sizes[t_rand() % 6];
			uint8_t *a = xmalloc((size_t)ow * oh * 3);
			uint8_t *b = xmalloc((size_t)ow * oh * 3);
			uint8_t *c = xmalloc((size_t)ow * oh * 3);
			struct dlc_crop box;
			uint32_t den, si;
			double md;
			int ret, m, mc;

			/* a quarter hug an edge or a corner */
			box.w = 1 + t_rand_unit() * (w - 1);
			box.h = 1 + t_rand_unit() * (h - 1);
			box.x = t_rand_unit() * (w - box.w);
			box.y = t_rand_unit() * (h - box.h);
			if (t % 4 == 1)
				box.x = 0;
			if (t % 4 == 2)
				box.y = h - box.h;
			if (t % 8 == 3) {
				box.x = w - box.w;
				box.y = 0;
			}
			if (t % 5 == 0) {
				box.x = floor(box.x);
				box.y = floor(box.y);
				box.w = floor(box.w);
				box.h = floor(box.h);
			}
			box.flip = t & 1;
			box.pad = 0;

			ret = dlc_decoder_crop(d, files[fi].buf, files[fi].len,
					       &box, ow, oh, DLC_LAYOUT_NHWC,
					       DLC_DECODE_CROP_FIRST, a);
			CHECK(ret == 0, "%s: crop-first %d (%s)",
			      variants[fi].name, ret, dlc_decoder_error(d));
			ret = dlc_decoder_crop(d, files[fi].buf, files[fi].len,
					       &box, ow, oh, DLC_LAYOUT_NHWC,
					       DLC_DECODE_FULL_THEN_CROP, b);
			CHECK(ret == 0, "%s: full-then-crop %d (%s)",
			      variants[fi].name, ret, dlc_decoder_error(d));
			/* full-then-crop is exactly full decode, crop, resize */
			CHECK(!crop_then_resize(scaled[0].rgb, w, h, &box, 1,
						ow, oh, c), "resize");
			CHECK(!memcmp(b, c, (size_t)ow * oh * 3),
			      "%s: full-then-crop is not decode, crop, resize",
			      variants[fi].name);

			md = mean_diff(a, b, (size_t)ow * oh * 3);
			m = t_max_diff(a, b, (size_t)ow * oh * 3);
			/*
			 * DCT scaling is a box-like prefilter, not the
			 * triangle: busy stripes near the output's Nyquist
			 * rate differ most (measured: worst box mean 7.3,
			 * max 55). On average the two agree closely (0.31).
			 * Full-then-crop is torchvision's resized_crop to
			 * the bit (tests/unit/test_torchvision.c checks it,
			 * and the reduced scales against torchvision, on
			 * real photographs).
			 */
			sum_mean += md;
			CHECK(md <= 8.0 && m <= 64,
			      "%s: box (%.1f,%.1f %.1fx%.1f) -> %ux%u: crop-first vs full-then-crop mean %.2f max %d",
			      variants[fi].name, box.x, box.y, box.w, box.h,
			      ow, oh, md, m);
			if (md > worst_mean)
				worst_mean = md;
			if (m > worst_max)
				worst_max = m;

			/* the same as decoding everything at 1/den */
			den = documented_denom(&box, ow, oh);
			used[den]++;
			si = den == 8 ? 3 : den == 4 ? 2 : den == 2 ? 1 : 0;
			CHECK(!crop_then_resize(scaled[si].rgb, scaled[si].w,
						scaled[si].h, &box, den, ow, oh,
						c), "scaled resize");
			mc = t_max_diff(a, c, (size_t)ow * oh * 3);
			CHECK(mc == 0,
			      "%s: box (%.1f,%.1f %.1fx%.1f) -> %ux%u: max diff %d vs a whole decode at 1/%u",
			      variants[fi].name, box.x, box.y, box.w, box.h,
			      ow, oh, mc, den);
			exact += mc == 0;
			total++;
			free(a);
			free(b);
			free(c);
		}
		for (s = 0; s < 4; s++)
			free(scaled[s].rgb);
	}
	CHECK(used[1] >= 5 && used[2] >= 5 && used[4] >= 5 && used[8] >= 5,
	      "scales not all covered: 1/1 %u, 1/2 %u, 1/4 %u, 1/8 %u",
	      used[1], used[2], used[4], used[8]);
	CHECK(sum_mean / total <= 0.5,
	      "crop-first vs full-then-crop: mean abs diff %.2f over all boxes",
	      sum_mean / total);
	printf("crop-first: %u boxes (1/1 %u, 1/2 %u, 1/4 %u, 1/8 %u); vs full-then-crop mean %.2f, worst box mean %.2f, worst max %d; %u/%u bit-exact vs a whole decode at the scale\n",
	       total, used[1], used[2], used[4], used[8], sum_mean / total,
	       worst_mean, worst_max, exact, total);
}

/*
 * torchvision's eval geometry, written out: Resize(256) of the whole
 * image to nw x nh (the short side 256, the long int(256 * long /
 * short)), then the 224 x 224 window at int(round((n - 224) / 2.0)).
 */
static void eval_reference(const struct image *im, uint8_t *dst)
{
	uint32_t s = im->w <= im->h ? im->w : im->h;
	uint32_t l = im->w <= im->h ? im->h : im->w;
	uint32_t nl = (uint32_t)(256.0 * l / s);
	uint32_t nw = im->w <= im->h ? 256 : nl, nh = im->w <= im->h ? nl : 256;
	uint32_t left = (uint32_t)rint((nw - 224) / 2.0);
	uint32_t top = (uint32_t)rint((nh - 224) / 2.0), y;
	struct dlc_crop whole = { 0, 0, im->w, im->h, 0, 0 };
	uint8_t *full = xmalloc((size_t)nw * nh * 3);

	CHECK(!dlc_resize_rgb(im->rgb, im->w, im->h, (size_t)im->w * 3, &whole,
			      nw, nh, DLC_LAYOUT_NHWC, full), "eval resize");
	for (y = 0; y < 224; y++)
		memcpy(dst + (size_t)y * 224 * 3,
		       full + ((size_t)(top + y) * nw + left) * 3, 224 * 3);
	free(full);
}

static void test_sample(struct dlc_decoder *d)
{
	struct dlc_transform t;
	uint8_t *a = xmalloc(224 * 224 * 3), *b = xmalloc(224 * 224 * 3);
	uint8_t *c = xmalloc(224 * 224 * 3);
	uint32_t i, p, x;
	int kind, exact;

	for (kind = 0; kind < 2; kind++) {
	for (exact = 0; exact < 2; exact++) {
		dlc_transform_default(&t, (uint32_t)kind);
		t.flags = exact ? DLC_TRANSFORM_F_EXACT : 0;
		for (i = 0; i < 20; i++) {
			int fi = i % 2 ? F_BIG420 : F_420, ret, bad = 0;
			struct dlc_crop got, want;

			ret = dlc_decoder_sample(d, files[fi].buf, files[fi].len,
						 &t, 3, 1, i, DLC_LAYOUT_NCHW, a,
						 &got);
			CHECK(ret == 0, "sample %u: %d (%s)", i, ret,
			      dlc_decoder_error(d));
			dlc_transform_crop(&t, 3, 1, i, expect[fi].w,
					   expect[fi].h, &want);
			CHECK(!memcmp(&got, &want, sizeof(got)),
			      "sample %u: crop differs from dlc_transform_crop", i);
			if (kind == DLC_TRANSFORM_EVAL) {
				/* the window of the whole image's resize */
				eval_reference(&expect[fi], b);
				ret = 0;
			} else {
				/* the crop, resized: at scale 1 when exact */
				ret = dlc_decoder_crop(d, files[fi].buf,
						       files[fi].len, &want, 224,
						       224, DLC_LAYOUT_NHWC,
						       exact ? DLC_DECODE_FULL_THEN_CROP :
						       DLC_DECODE_CROP_FIRST, b);
			}
			CHECK(ret == 0, "crop %u", i);
			for (p = 0; p < 224 * 224; p++)
				for (x = 0; x < 3; x++)
					bad += a[x * 224 * 224 + p] != b[3 * p + x];
			/* eval at a reduced scale: the stated tolerance */
			if (kind == DLC_TRANSFORM_EVAL && !exact && fi == F_BIG420) {
				for (p = 0; p < 224 * 224; p++)
					for (x = 0; x < 3; x++)
						c[3 * p + x] = a[x * 224 * 224 + p];
				CHECK(mean_diff(b, c, 224 * 224 * 3) <= 3.0,
				      "eval sample %u: mean diff %.2f at a reduced scale",
				      i, mean_diff(b, c, 224 * 224 * 3));
				bad = 0;
			}
			CHECK(!bad, "%s%s sample %u (NCHW) and its reference (NHWC): %d bytes differ",
			      kind ? "eval" : "train", exact ? " exact" : "",
			      i, bad);
			ret = dlc_decoder_sample(d, files[fi].buf, files[fi].len,
						 &t, 3, 1, i, DLC_LAYOUT_NCHW, c,
						 NULL);
			CHECK(ret == 0 && !memcmp(a, c, 224 * 224 * 3),
			      "sample %u not deterministic", i);
		}
	}
	}
	dlc_transform_default(&t, DLC_TRANSFORM_TRAIN);
	t.out_w = 0;
	CHECK(dlc_decoder_sample(d, files[F_420].buf, files[F_420].len, &t, 0,
				 0, 0, 0, a, NULL) == -EINVAL, "bad transform");
	{
		struct dlc_crop out = { 300, 0, 100, 100, 0, 0 };

		CHECK(dlc_decoder_crop(d, files[F_420].buf, files[F_420].len,
				       &out, 32, 32, 0, 0, a) == -EINVAL,
		      "box outside the image accepted");
		CHECK(dlc_decoder_crop(d, files[F_420].buf, files[F_420].len,
				       &out, 32, 32, 0, 7, a) == -EINVAL,
		      "bad method accepted");
	}
	free(a);
	free(b);
	free(c);
}

/* ---- bad inputs ---- */

/* The decoder must still decode a good file exactly after a failure. */
static void check_usable(struct dlc_decoder *d, const char *after)
{
	uint8_t *rgb = NULL;
	uint32_t w, h;
	int ret;

	ret = dlc_decoder_full(d, files[F_420].buf, files[F_420].len, &rgb,
			       &w, &h);
	CHECK(ret == 0 && w == SMALL_W && h == SMALL_H &&
	      t_max_diff(rgb, expect[F_420].rgb, (size_t)w * h * 3) <= 1,
	      "decoder unusable after %s (%d)", after, ret);
	free(rgb);
}

static uint8_t dst[224 * 224 * 3];

/*
 * Every entry point fails on @buf with @err; the kind is @kind (or @kind2
 * when not 0). With @partial the damage lies below the first rows, which
 * crop-first decoding of a top-left box never reads: that may succeed,
 * but a crop of the whole image must fail.
 */
static void expect_fail_p(struct dlc_decoder *d, const char *what,
			  const void *buf, size_t len, int err,
			  uint32_t kind, uint32_t kind2, int partial)
{
	struct dlc_transform t;
	struct dlc_crop box = { 0, 0, 1, 1, 0, 0 };
	struct dlc_crop whole = { 0, 0, 8, 8, 0, 0 };
	struct dlc_jpeg_info info;
	uint8_t *rgb = NULL;
	uint32_t w, h, k;
	int ret, method;

	dlc_transform_default(&t, DLC_TRANSFORM_TRAIN);
	ret = dlc_decoder_full(d, buf, len, &rgb, &w, &h);
	k = dlc_decoder_error_kind(d);
	CHECK(ret == err, "%s: full returned %d, want %d (%s)", what, ret,
	      err, dlc_decoder_error(d));
	CHECK(k == kind || (kind2 && k == kind2),
	      "%s: full kind %s (%s)", what, dlc_error_kind_name(k),
	      dlc_decoder_error(d));
	CHECK(dlc_decoder_error(d)[0] && strcmp(dlc_decoder_error(d), "no error"),
	      "%s: no message", what);
	if (!ret)
		free(rgb);

	ret = dlc_decoder_sample(d, buf, len, &t, 0, 0, 0, DLC_LAYOUT_NCHW,
				 dst, NULL);
	k = dlc_decoder_error_kind(d);
	CHECK(ret == err && (k == kind || (kind2 && k == kind2)),
	      "%s: sample returned %d kind %s (%s)", what, ret,
	      dlc_error_kind_name(k), dlc_decoder_error(d));
	if (partial && !dlc_decoder_header(d, buf, len, &info)) {
		whole.w = info.width;
		whole.h = info.height;
		ret = dlc_decoder_crop(d, buf, len, &whole, 8, 8, 0,
				       DLC_DECODE_CROP_FIRST, dst);
		k = dlc_decoder_error_kind(d);
		CHECK(ret == err && (k == kind || (kind2 && k == kind2)),
		      "%s: crop-first of the whole image returned %d kind %s (%s)",
		      what, ret, dlc_error_kind_name(k), dlc_decoder_error(d));
	}
	for (method = 0; method < 2; method++) {
		ret = dlc_decoder_crop(d, buf, len, &box, 8, 8, 0,
				       (uint32_t)method, dst);
		k = dlc_decoder_error_kind(d);
		if (partial && method == DLC_DECODE_CROP_FIRST && !ret)
			continue;
		CHECK(ret == err && (k == kind || (kind2 && k == kind2)),
		      "%s: crop method %d returned %d kind %s (%s)", what,
		      method, ret, dlc_error_kind_name(k),
		      dlc_decoder_error(d));
	}
	check_usable(d, what);
}

static void expect_fail(struct dlc_decoder *d, const char *what,
			const void *buf, size_t len, int err, uint32_t kind,
			uint32_t kind2)
{
	expect_fail_p(d, what, buf, len, err, kind, kind2, 0);
}

static size_t find_marker(const struct file *f, uint8_t m)
{
	size_t i;

	for (i = 2; i + 1 < f->len; i++)
		if (f->buf[i] == 0xff && f->buf[i + 1] == m)
			return i;
	return 0;
}

/* First byte of entropy-coded data: after the first SOS segment. */
static size_t scan_start(const struct file *f)
{
	size_t sos = find_marker(f, 0xda);

	return sos + 2 + ((size_t)f->buf[sos + 2] << 8 | f->buf[sos + 3]);
}

static void test_bad_inputs(struct dlc_decoder *d)
{
	static const uint8_t png[] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a,
				       '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R' };
	static const uint8_t gif[] = { 'G', 'I', 'F', '8', '9', 'a', 1, 0, 1,
				       0, 0, 0, 0, ';' };
	const struct file *g = &files[F_420];
	size_t data = scan_start(g), cuts[10], i;
	uint8_t junk[600], *buf = xmalloc(g->len + 16);
	uint32_t corrupt_fails = 0;
	char what[64];
	int trial;

	CHECK(dlc_decoder_error_kind(d) == DLC_ERR_NONE, "fresh kind");
	expect_fail(d, "empty", g->buf, 0, -EBADMSG, DLC_ERR_EMPTY, 0);
	expect_fail(d, "empty NULL", NULL, 0, -EBADMSG, DLC_ERR_EMPTY, 0);
	expect_fail(d, "one byte", g->buf, 1, -EBADMSG, DLC_ERR_NOT_JPEG, 0);
	/* other formats are read (image.h): a PNG cut in its header */
	expect_fail(d, "PNG cut short", png, sizeof(png), -EBADMSG,
		    DLC_ERR_TRUNCATED, 0);
	expect_fail(d, "GIF", gif, sizeof(gif), -EBADMSG, DLC_ERR_NOT_JPEG, 0);
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)t_rand();
	junk[0] = 0x42;
	junk[1] = 0;	/* "BM" would be a BMP */
	expect_fail(d, "random bytes", junk, sizeof(junk), -EBADMSG,
		    DLC_ERR_NOT_JPEG, 0);
	junk[0] = 0xff;
	junk[1] = 0xd8;
	expect_fail(d, "SOI then random bytes", junk, sizeof(junk), -EBADMSG,
		    DLC_ERR_CORRUPT, DLC_ERR_TRUNCATED);

	/* cut in the header, at the scan, in the data, just before EOI */
	cuts[0] = 2;
	cuts[1] = 3;
	cuts[2] = 40;
	cuts[3] = data - 5;
	cuts[4] = data;
	cuts[5] = data + 10;
	cuts[6] = g->len / 2;
	cuts[7] = g->len - 200;
	cuts[8] = g->len - 2;
	cuts[9] = g->len - 1;
	for (i = 0; i < 10; i++) {
		snprintf(what, sizeof(what), "420 cut at %zu of %zu", cuts[i],
			 g->len);
		expect_fail(d, what, g->buf, cuts[i], -EBADMSG,
			    DLC_ERR_TRUNCATED, 0);
	}
	/* progressive: the scans come one after the other */
	for (i = 1; i < 5; i++) {
		const struct file *p = &files[F_PROG];

		snprintf(what, sizeof(what), "progressive cut at %zu",
			 p->len * i / 5);
		expect_fail(d, what, p->buf, p->len * i / 5, -EBADMSG,
			    DLC_ERR_TRUNCATED, 0);
	}
	/* the big image, cut after the rows a top-left crop needs */
	snprintf(what, sizeof(what), "big 420 cut at 3/4");
	expect_fail(d, what, files[F_BIG420].buf, files[F_BIG420].len * 3 / 4,
		    -EBADMSG, DLC_ERR_TRUNCATED, 0);

	/* a bogus marker in the entropy data */
	memcpy(buf, g->buf, g->len);
	buf[(data + g->len) / 2] = 0xff;
	buf[(data + g->len) / 2 + 1] = 0x99;
	expect_fail_p(d, "bogus marker in the scan", buf, g->len, -EBADMSG,
		      DLC_ERR_CORRUPT, 0, 1);
	/* a restart marker out of sequence */
	memcpy(buf, files[F_RST].buf, files[F_RST].len);
	i = find_marker(&files[F_RST], 0xd3);
	CHECK(i, "no RST3 in the restart file");
	if (i) {
		buf[i + 1] = 0xd6;
		expect_fail_p(d, "restart marker out of order", buf,
			      files[F_RST].len, -EBADMSG, DLC_ERR_CORRUPT, 0, 1);
	}
	/* random bytes over the data: must fail cleanly or decode */
	for (trial = 0; trial < 30; trial++) {
		uint8_t *rgb = NULL;
		size_t at = data + t_rand() % (g->len - data - 80), n = 1 + t_rand() % 64;
		uint32_t w, h, k;
		int ret;

		memcpy(buf, g->buf, g->len);
		for (i = 0; i < n; i++)
			buf[at + i] = (uint8_t)t_rand();
		ret = dlc_decoder_full(d, buf, g->len, &rgb, &w, &h);
		k = dlc_decoder_error_kind(d);
		CHECK(ret == 0 || (ret == -EBADMSG &&
				   (k == DLC_ERR_CORRUPT || k == DLC_ERR_TRUNCATED)),
		      "garbage at %zu: %d kind %s", at, ret,
		      dlc_error_kind_name(k));
		if (!ret)
			free(rgb);
		else
			corrupt_fails++;
		ret = dlc_decoder_sample(d, buf, g->len,
					 &(struct dlc_transform){ 0 }, 0, 0, 0,
					 0, dst, NULL);
		CHECK(ret == -EINVAL, "zero transform accepted");
		check_usable(d, "garbage");
	}
	printf("decode: %u/30 random overwrites of the scan data detected\n",
	       corrupt_fails);
	free(buf);
}

static void test_bomb(void)
{
	const struct file *g = &files[F_420];
	size_t sof = find_marker(g, 0xc0);
	struct dlc_decoder *d, *tiny;
	struct dlc_jpeg_info info;
	struct timespec t0, t1;
	uint8_t *buf, *rgb = NULL;
	uint32_t w, h;
	double ms;
	int ret;

	CHECK(sof, "no SOF0 marker");
	if (!sof)
		return;
	buf = xmalloc(g->len);
	memcpy(buf, g->buf, g->len);
	/* FF C0, length, precision, then height and width */
	buf[sof + 5] = 0xea;
	buf[sof + 6] = 0x60;
	buf[sof + 7] = 0xea;
	buf[sof + 8] = 0x60;
	CHECK(!dlc_decoder_create(0, &d), "create");
	CHECK(!dlc_decoder_header(d, buf, g->len, &info) &&
	      info.width == 60000 && info.height == 60000,
	      "header of the bomb: %ux%u", info.width, info.height);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = dlc_decoder_full(d, buf, g->len, &rgb, &w, &h);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	CHECK(ret == -E2BIG && dlc_decoder_error_kind(d) == DLC_ERR_TOO_LARGE,
	      "60000x60000: %d kind %s (%s)", ret,
	      dlc_error_kind_name(dlc_decoder_error_kind(d)),
	      dlc_decoder_error(d));
	CHECK(strstr(dlc_decoder_error(d), "60000x60000"),
	      "message does not name the size: %s", dlc_decoder_error(d));
	CHECK(ms < 50, "the bomb took %.1f ms to refuse", ms);
	expect_fail(d, "60000x60000", buf, g->len, -E2BIG, DLC_ERR_TOO_LARGE, 0);
	dlc_decoder_destroy(d);

	CHECK(!dlc_decoder_create(100, &tiny), "create tiny");
	ret = dlc_decoder_full(tiny, g->buf, g->len, &rgb, &w, &h);
	CHECK(ret == -E2BIG && dlc_decoder_error_kind(tiny) == DLC_ERR_TOO_LARGE,
	      "max_pixels 100: %d", ret);
	ret = dlc_decoder_sample(tiny, g->buf, g->len,
				 &(struct dlc_transform){ .kind = 0, .out_w = 8,
				 .out_h = 8, .scale_min = 0.5f, .scale_max = 1,
				 .ratio_min = 1, .ratio_max = 1 },
				 0, 0, 0, 0, dst, NULL);
	CHECK(ret == -E2BIG, "max_pixels 100, sample: %d", ret);
	dlc_decoder_destroy(tiny);
	CHECK(!dlc_decoder_create(SMALL_W * SMALL_H, &tiny), "create exact");
	ret = dlc_decoder_full(tiny, g->buf, g->len, &rgb, &w, &h);
	CHECK(ret == 0, "max_pixels = w * h refused: %d", ret);
	if (!ret)
		free(rgb);
	dlc_decoder_destroy(tiny);
	free(buf);
}

static void test_names(void)
{
	uint32_t k;

	for (k = 0; k < DLC_ERR_KINDS; k++)
		CHECK(dlc_error_kind_name(k) && *dlc_error_kind_name(k) &&
		      strcmp(dlc_error_kind_name(k), "unknown"), "kind %u name", k);
	CHECK(!strcmp(dlc_error_kind_name(DLC_ERR_CORRUPT), "corrupt") &&
	      !strcmp(dlc_error_kind_name(DLC_ERR_TRUNCATED), "truncated"),
	      "names");
	CHECK(!strcmp(dlc_error_kind_name(DLC_ERR_KINDS), "unknown"),
	      "out-of-range name");
}

/* ---- one image's tables are not the next one's ---- */

/* @f without its segments of @marker (0xc4 DHT, 0xdb DQT): a new buffer. */
static struct file strip_segments(const struct file *f, uint8_t marker)
{
	const uint8_t *b = f->buf;
	struct file o = { malloc(f->len), 2 };
	size_t i = 2, seg;
	uint8_t m;

	memcpy(o.buf, b, 2);
	while (i + 4 <= f->len) {
		m = b[i + 1];
		/* entropy-coded bytes, stuffed 0xff 0x00, fill and RSTn */
		if (b[i] != 0xff || m == 0x00 || m == 0xff ||
		    (m >= 0xd0 && m <= 0xd7)) {
			o.buf[o.len++] = b[i++];
			continue;
		}
		if (m == 0xd9)
			break;
		seg = 2 + ((size_t)b[i + 2] << 8 | b[i + 3]);
		if (i + seg > f->len)
			break;
		if (m != marker) {
			memcpy(o.buf + o.len, b + i, seg);
			o.len += seg;
		}
		i += seg;
	}
	memcpy(o.buf + o.len, b + i, f->len - i);
	o.len += f->len - i;
	return o;
}

/*
 * libjpeg keeps one image's Huffman and quantization tables for the next
 * in a decompress object. A file that uses a table it does not define
 * must decode as it does on a new decoder, not with the tables of what
 * this decoder decoded before; and djpeg, a process of its own, agrees
 * whether it is corrupt.
 */
static void test_tables_not_borrowed(struct dlc_decoder *d)
{
	static const struct { int file; uint8_t marker; const char *what; } c[] = {
		{ F_PROG, 0xc4, "progressive without DHT" },
		{ F_420, 0xdb, "baseline without DQT" },
		{ F_BIGPROG, 0xc4, "big progressive without DHT" },
	};
	struct dlc_decoder *fresh;
	uint8_t *a, *b;
	uint32_t w, h;
	char path[300];
	size_t i;
	int ra, rb, djpeg;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct file x = strip_segments(&files[c[i].file], c[i].marker);
		FILE *fp;

		CHECK(x.len < files[c[i].file].len, "%s: nothing stripped", c[i].what);
		snprintf(path, sizeof(path), "%s/stripped%zu.jpg", tmpdir, i);
		fp = fopen(path, "wb");
		CHECK(fp && fwrite(x.buf, 1, x.len, fp) == x.len, "write %s", path);
		if (fp)
			fclose(fp);
		djpeg = run("djpeg -pnm -outfile /dev/null %s 2>/dev/null", path);
		CHECK_EQ(dlc_decoder_create(0, &fresh), 0);
		a = b = NULL;
		ra = dlc_decoder_full(fresh, x.buf, x.len, &a, &w, &h);
		/* the shared decoder: the whole file first, then the stripped one */
		CHECK_EQ(dlc_decoder_full(d, files[c[i].file].buf,
					  files[c[i].file].len, &b, &w, &h), 0);
		free(b);
		b = NULL;
		rb = dlc_decoder_full(d, x.buf, x.len, &b, &w, &h);
		CHECK(ra == rb && (ra || !memcmp(a, b, (size_t)w * h * 3)),
		      "%s: %d (%s) after another image, %d on a new decoder",
		      c[i].what, rb, dlc_decoder_error(d), ra);
		CHECK(!ra == !djpeg, "%s: %d here, djpeg %s", c[i].what, ra,
		      djpeg ? "fails" : "decodes it");
		free(a);
		free(b);
		dlc_decoder_destroy(fresh);
		free(x.buf);
	}
}

int main(void)
{
	struct dlc_decoder *d;
	int i;

	t_rng = 99;

	if (access("/usr/bin/cjpeg", X_OK) || access("/usr/bin/djpeg", X_OK)) {
		t_skip_required("test_decode", "cjpeg/djpeg missing (libjpeg-turbo-progs; make deps)");
		return t_done("test_decode");
	}
	if (!mkdtemp(tmpdir)) {
		printf("FAIL: mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	if (make_files()) {
		run("rm -rf '%s'", tmpdir);
		return 1;
	}
	if (dlc_decoder_create(0, &d)) {
		printf("FAIL: dlc_decoder_create\n");
		return 1;
	}
	T_RUN(test_names);
	T_RUN_AS("test_full/fresh", test_full, d);
	T_RUN(test_cmyk, d);
	T_RUN(test_crop_first, d);
	T_RUN(test_sample, d);
	T_RUN(test_bad_inputs, d);
	T_RUN_AS("test_full/after_failures", test_full, d);
	T_RUN(test_tables_not_borrowed, d);
	dlc_decoder_destroy(d);
	T_RUN(test_bomb);

	for (i = 0; i < NFILES; i++) {
		free(files[i].buf);
		free(expect[i].rgb);
	}
	run("rm -rf '%s'", tmpdir);
	return t_done("test_decode");
}
