// SPDX-License-Identifier: MIT
/*
 * formbench: what a decoded form of a sample would cost and save (issue
 * 32), one thread, files in memory (no I/O), the train transform:
 *
 *   bytes: the encoded files against two decoded forms of them, packed
 *          RGB (3 bytes a pixel) and the decoder's own YCbCr planes at
 *          the file's subsampling (1.5 bytes a pixel at 4:2:0)
 *   rate:  images per CPU second of
 *          default    crop-first at the smallest DCT scale (today's
 *                     default, dlc_decoder_sample)
 *          exact      crop-first at scale 1 (DLC_TRANSFORM_F_EXACT)
 *          make RGB   the whole image decoded at scale 1 (dlc_decoder_full)
 *          use RGB    a sample from the RGB form: the crop resized and
 *                     flipped (dlc_resize_rgb), no decode
 *          make YUV   the whole image decoded to its planes
 *                     (tjDecompressToYUVPlanes)
 *          use YUV    a sample from the planes: the crop's rows converted
 *                     to RGB (tjDecodeYUVPlanes), then resized
 *   exact: how far each form's samples are from the exact path's, pixel
 *          for pixel (the form is only usable where they are equal);
 *          train for both forms, and eval (Resize + CenterCrop, the
 *          window of the whole image's resize) for the RGB form
 *
 *   formbench [--secs S] [--rounds R] [--out N] FILE...
 *
 * Times are the thread's CPU time; each rate is the best of --rounds (3)
 * passes of at least --secs (1) seconds over every file, a round running
 * every system once, so that a busy machine slows them alike.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "dlcache.h"
#include "resize.h"

#include "helpers/testutil.h"

struct file {
	uint8_t *buf;
	size_t len;
	uint32_t w, h;
	uint8_t *rgb;		/* the RGB form */
	uint8_t *yuv[3];	/* the YCbCr form's planes */
	int strides[3];
	int subsamp;		/* TJSAMP_* */
	size_t yuv_bytes;
};

enum mode { DEFAULT, EXACT, MAKE_RGB, USE_RGB, MAKE_YUV, USE_YUV, NMODES };

static const char *const mode_names[NMODES] = {
	[DEFAULT] = "default (crop-first, reduced scale)",
	[EXACT] = "exact (crop-first, scale 1)",
	[MAKE_RGB] = "make the RGB form (full decode)",
	[USE_RGB] = "a sample from the RGB form",
	[MAKE_YUV] = "make the YCbCr form (planes)",
	[USE_YUV] = "a sample from the YCbCr form",
};

struct ctx {
	struct dlc_decoder *d;
	tjhandle tj;
	struct dlc_transform t;
	uint8_t *dst;
	uint8_t *rows;		/* use YUV: the crop's rows in RGB */
	size_t rows_cap;
	struct dlc_resize_ws ws;	/* eval from the RGB form */
};

static int slurp(const char *path, struct file *f)
{
	f->buf = t_read_file(path, &f->len);
	return f->buf ? 0 : -EIO;
}

/*
 * The train crop of @f for (@epoch, @i): -EINVAL if it cannot be drawn,
 * -EDOM if it is not of whole pixels (the forms here cut whole pixels).
 */
static int crop_of(const struct ctx *c, const struct file *f, uint32_t epoch,
		   uint32_t i, struct dlc_crop *box)
{
	if (dlc_transform_crop(&c->t, 1, epoch, i, f->w, f->h, box))
		return -EINVAL;
	if (box->x != floor(box->x) || box->y != floor(box->y) ||
	    box->w != floor(box->w) || box->h != floor(box->h))
		return -EDOM;
	return 0;
}

/* torchvision's img.crop(box).resize(): the crop as an image of its own. */
static int resize_crop(const struct ctx *c, const uint8_t *src, size_t stride,
		       const struct dlc_crop *box)
{
	struct dlc_crop all = { 0, 0, box->w, box->h, box->flip, 0 };

	return dlc_resize_rgb(src, (uint32_t)box->w, (uint32_t)box->h, stride,
			      &all, c->t.out_w, c->t.out_h, DLC_LAYOUT_NCHW,
			      c->dst);
}

static int use_yuv(struct ctx *c, const struct file *f,
		   const struct dlc_crop *box)
{
	int vs = tjMCUHeight[f->subsamp] / 8;	/* luma rows a chroma row */
	uint32_t y0 = (uint32_t)box->y, y1 = y0 + (uint32_t)box->h;
	const unsigned char *planes[3];
	size_t need;
	int k;

	/* Whole chroma rows, so that the planes' offsets are exact. */
	y0 -= y0 % vs;
	need = (size_t)f->w * 3 * (y1 - y0);
	if (need > c->rows_cap) {
		free(c->rows);
		c->rows = malloc(need);
		c->rows_cap = c->rows ? need : 0;
		if (!c->rows)
			return -ENOMEM;
	}
	for (k = 0; k < 3; k++) {
		uint32_t r = k ? y0 / vs : y0;

		planes[k] = f->yuv[k] ? f->yuv[k] + (size_t)r * f->strides[k]
				      : NULL;
	}
	if (tjDecodeYUVPlanes(c->tj, planes, f->strides, f->subsamp, c->rows,
			      (int)f->w, 0, (int)(y1 - y0), TJPF_RGB, 0))
		return -EBADMSG;
	return resize_crop(c, c->rows + ((size_t)(box->y - y0) * f->w +
					 (size_t)box->x) * 3,
			   (size_t)f->w * 3, box);
}

static int one(struct ctx *c, enum mode m, struct file *f, uint32_t epoch,
	       uint32_t i)
{
	struct dlc_transform te = c->t;
	struct dlc_crop box;
	uint32_t w, h;
	uint8_t *rgb;
	int ret;

	if (m == USE_RGB || m == USE_YUV) {
		ret = crop_of(c, f, epoch, i, &box);
		if (ret)
			return ret;
	}
	switch (m) {
	case DEFAULT:
		return dlc_decoder_sample(c->d, f->buf, f->len, &c->t, 1, epoch,
					  i, DLC_LAYOUT_NCHW, c->dst, NULL);
	case EXACT:
		te.flags |= DLC_TRANSFORM_F_EXACT;
		return dlc_decoder_sample(c->d, f->buf, f->len, &te, 1, epoch,
					  i, DLC_LAYOUT_NCHW, c->dst, NULL);
	case MAKE_RGB:
		ret = dlc_decoder_full(c->d, f->buf, f->len, &rgb, &w, &h);
		if (!ret)
			free(rgb);
		return ret;
	case USE_RGB:
		return resize_crop(c, f->rgb + ((size_t)box.y * f->w +
						(size_t)box.x) * 3,
				   (size_t)f->w * 3, &box);
	case MAKE_YUV:
		return tjDecompressToYUVPlanes(c->tj, f->buf, f->len, f->yuv,
					       (int)f->w, f->strides,
					       (int)f->h, 0) ? -EBADMSG : 0;
	case USE_YUV:
		return use_yuv(c, f, &box);
	default:
		return -EINVAL;
	}
}

/* images per CPU second of one pass of at least @secs. */
static double rate(struct ctx *c, enum mode m, struct file *fs, uint32_t n,
		   double secs, uint32_t *epoch)
{
	uint32_t i, done = 0;
	double t0 = t_thread_cpu_s(), dt;
	int ret;

	do {
		for (i = 0; i < n; i++, done++) {
			ret = one(c, m, &fs[i], *epoch, i);
			if (ret) {
				/* Not a sample skipped and counted as done. */
				fprintf(stderr, "formbench: %s: file %u: %s\n",
					mode_names[m], i, ret == -EDOM ?
					"a crop box of fractional pixels" :
					dlc_decoder_error(c->d));
				exit(1);
			}
		}
		++*epoch;
		dt = t_thread_cpu_s() - t0;
	} while (dt < secs);
	return done / dt;
}

/* Free @f's bytes and forms, and clear it for the next file. */
static void drop_file(struct file *f)
{
	int k;

	free(f->buf);
	free(f->rgb);
	for (k = 0; k < 3; k++)
		free(f->yuv[k]);
	memset(f, 0, sizeof(*f));
}

/* The forms of @f: the RGB image and the planes. */
static int make_forms(struct ctx *c, struct file *f)
{
	int k, jss, jcs, w, h;

	if (dlc_decoder_full(c->d, f->buf, f->len, &f->rgb, &f->w, &f->h))
		return -EBADMSG;
	if (tjDecompressHeader3(c->tj, f->buf, f->len, &w, &h, &jss, &jcs) ||
	    jcs != TJCS_YCbCr || jss == TJSAMP_GRAY)
		return -EOPNOTSUPP;	/* the planes of YCbCr files only */
	f->subsamp = jss;
	for (k = 0; k < 3; k++) {
		f->strides[k] = tjPlaneWidth(k, w, jss);
		f->yuv[k] = malloc(tjPlaneSizeYUV(k, w, 0, h, jss));
		if (!f->yuv[k])
			return -ENOMEM;
		f->yuv_bytes += tjPlaneSizeYUV(k, w, 0, h, jss);
	}
	return one(c, MAKE_YUV, f, 0, 0);
}

/*
 * Eval (Resize + CenterCrop) of @f from its RGB form into c->dst, and the
 * exact path's into @ref: the largest |difference|. Stops, saying why,
 * if either fails.
 */
static int eval_diff(struct ctx *c, const struct file *f, uint32_t resize,
		     uint8_t *ref)
{
	struct dlc_transform te;
	struct dlc_resize_geom g = { 0 };
	size_t px;

	dlc_transform_default(&te, DLC_TRANSFORM_EVAL);
	te.out_w = c->t.out_w;
	te.out_h = c->t.out_h;
	te.resize = resize;
	te.flags |= DLC_TRANSFORM_F_EXACT;
	px = (size_t)te.out_w * te.out_h * 3;
	if (dlc_decoder_sample(c->d, f->buf, f->len, &te, 1, 0, 0,
			       DLC_LAYOUT_NCHW, ref, NULL)) {
		fprintf(stderr, "formbench: eval, exact path: %s\n",
			dlc_decoder_error(c->d));
		exit(1);
	}
	g.img_w = g.buf_w = f->w;
	g.img_h = g.buf_h = f->h;
	g.stride = (size_t)f->w * 3;
	g.box = (struct dlc_crop){ 0, 0, f->w, f->h, 0, 0 };
	dlc_eval_geometry(&te, f->w, f->h, &g.full_w, &g.full_h, &g.win_x,
			  &g.win_y);
	g.out_w = te.out_w;
	g.out_h = te.out_h;
	if (dlc_resize_geom(&c->ws, f->rgb, &g, DLC_LAYOUT_NCHW, c->dst,
			    DLC_RESIZE_BEST)) {
		fprintf(stderr, "formbench: eval from the RGB form: the resize failed\n");
		exit(1);
	}
	return t_max_diff(ref, c->dst, px);
}

/*
 * Every file's sample in @epochs epochs from each form against the exact
 * path: how many are bit-identical, and the largest difference.
 */
static void exactness(struct ctx *c, struct file *fs, uint32_t n,
		      uint32_t epochs)
{
	size_t px = (size_t)c->t.out_w * c->t.out_h * 3;
	uint8_t *ref = malloc(px);
	uint32_t resize = c->t.out_w * 8 / 7;	/* 256 for 224, as ImageNet's */
	uint32_t same[2] = { 0 }, tried = 0, skipped = 0, e, i, k;
	int worst[2] = { 0 };

	for (e = 0; e < epochs; e++) {
		for (i = 0; i < n; i++) {
			struct dlc_crop box;

			if (crop_of(c, &fs[i], e, i, &box)) {
				skipped++;
				continue;
			}
			if (one(c, EXACT, &fs[i], e, i))
				exit(1);
			memcpy(ref, c->dst, px);
			tried++;
			for (k = 0; k < 2; k++) {
				int d;

				if (one(c, k ? USE_YUV : USE_RGB, &fs[i], e, i))
					exit(1);
				d = t_max_diff(ref, c->dst, px);
				same[k] += !d;
				if (d > worst[k])
					worst[k] = d;
			}
		}
	}
	printf("exact: of %u samples (%u with a fractional box not tried), bit-identical to the exact path: RGB form %u (largest |difference| %d), YCbCr form %u (largest %d)\n",
	       tried, skipped, same[0], worst[0], same[1], worst[1]);
	same[0] = 0;
	worst[0] = 0;
	for (i = 0; i < n; i++) {
		int d = eval_diff(c, &fs[i], resize, ref);

		same[0] += !d;
		if (d > worst[0])
			worst[0] = d;
	}
	printf("exact, eval (Resize %u + CenterCrop): of %u samples, bit-identical to the exact path: RGB form %u (largest |difference| %d)\n",
	       resize, n, same[0], worst[0]);
	free(ref);
}

int main(int argc, char **argv)
{
	double secs = 1.0, r[NMODES] = { 0 }, x;
	uint64_t enc = 0, rgb = 0, yuv = 0, pixels = 0;
	uint32_t rounds = 3, round, epoch = 0, n = 0, out = 224, m;
	struct ctx c = { 0 };
	struct file *fs;
	int a, ret;

	for (a = 1; a < argc && argv[a][0] == '-'; a++) {
		if (!strcmp(argv[a], "--secs") && a + 1 < argc) {
			secs = atof(argv[++a]);
		} else if (!strcmp(argv[a], "--rounds") && a + 1 < argc) {
			rounds = (uint32_t)atoi(argv[++a]);
		} else if (!strcmp(argv[a], "--out") && a + 1 < argc) {
			out = (uint32_t)atoi(argv[++a]);
		} else {
			fprintf(stderr, "usage: formbench [--secs S] [--rounds R] [--out N] FILE...\n");
			return 2;
		}
	}
	if (dlc_decoder_create(0, &c.d) || !(c.tj = tjInitDecompress()))
		return 1;
	dlc_transform_default(&c.t, DLC_TRANSFORM_TRAIN);
	c.t.out_w = c.t.out_h = out;
	c.dst = malloc((size_t)out * out * 3);
	fs = calloc((size_t)(argc - a) + 1, sizeof(*fs));
	for (; a < argc; a++) {
		if (slurp(argv[a], &fs[n])) {
			fprintf(stderr, "formbench: cannot read %s\n", argv[a]);
			return 1;
		}
		ret = make_forms(&c, &fs[n]);
		if (ret) {
			fprintf(stderr, "formbench: %s: %s, left out\n", argv[a],
				ret == -EOPNOTSUPP ? "not a YCbCr JPEG" :
				ret == -ENOMEM ? "out of memory" :
				"does not decode");
			drop_file(&fs[n]);
			continue;
		}
		enc += fs[n].len;
		rgb += (uint64_t)fs[n].w * fs[n].h * 3;
		yuv += fs[n].yuv_bytes;
		pixels += (uint64_t)fs[n].w * fs[n].h;
		n++;
	}
	if (!n || !c.dst)
		return 1;
	printf("%u files, train %ux%u, 1 thread\n", n, out, out);
	printf("bytes: encoded %.1f MB (%.2f a pixel); RGB form %.1f MB (%.2fx the encoded); YCbCr form %.1f MB (%.2fx; %.2f a pixel)\n",
	       enc / 1e6, (double)enc / pixels, rgb / 1e6, (double)rgb / enc,
	       yuv / 1e6, (double)yuv / enc, (double)yuv / pixels);
	for (round = 0; round < rounds; round++)
		for (m = 0; m < NMODES; m++) {
			x = rate(&c, m, fs, n, secs, &epoch);
			if (x > r[m])
				r[m] = x;
		}
	for (m = 0; m < NMODES; m++)
		printf("rate: %-38s %8.0f images/s  %.2fx default\n",
		       mode_names[m], r[m], r[m] / r[DEFAULT]);
	printf("a sample from the RGB form costs %.3f of the exact path's decode; from the planes %.3f\n",
	       r[EXACT] / r[USE_RGB], r[EXACT] / r[USE_YUV]);
	exactness(&c, fs, n, 3);
	return 0;
}
