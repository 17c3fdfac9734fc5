// SPDX-License-Identifier: MIT
/*
 * TIFF with libtiff, its first image (Pillow's frame 0), to the pixels of
 * Pillow's open(f).convert("RGB"). Striped images of the layouts data
 * sets use are read row by row and converted as Pillow converts them:
 *
 *   1 bit bilevel, 8-bit gray   0/255 and gray, MinIsWhite inverted
 *   16-bit gray                 Pillow's mode "I;16": clipped to 255
 *   8/16-bit RGB(A), gray+alpha alpha dropped, 16 bits to the high byte
 *   8-bit palette               the colour map's high bytes
 *
 * Every other layout (tiles, planes, YCbCr, CMYK, Lab, other depths) goes
 * through libtiff's RGBA interface, whose conversions are libtiff's own:
 * close to Pillow's but not always exact (library.md states how close).
 * libtiff's messages go to this image's, never to stderr; its single
 * allocations are capped (TIFFOpenOptionsSetMaxSingleMemAlloc).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tiffio.h>

#include "dlcache.h"
#include "image.h"

/* The largest single allocation libtiff may make for one file. */
#define TIFF_ALLOC_MAX	(256u << 20)

struct tiff_in {
	struct dlc_image *im;
	const uint8_t *buf;
	size_t len;
	toff_t pos;
	char err[160];		/* libtiff's first error */
};

static tsize_t tiff_read(thandle_t h, tdata_t out, tsize_t n)
{
	struct tiff_in *in = h;
	size_t left = in->pos < in->len ? in->len - (size_t)in->pos : 0;
	size_t k = (size_t)n < left ? (size_t)n : left;

	if (k) {
		memcpy(out, in->buf + in->pos, k);
		in->pos += k;
	}
	return (tsize_t)k;
}

static tsize_t tiff_write(thandle_t h, tdata_t p, tsize_t n)
{
	return -1;
}

static toff_t tiff_seek(thandle_t h, toff_t off, int whence)
{
	struct tiff_in *in = h;
	toff_t base = whence == SEEK_SET ? 0 :
		      whence == SEEK_CUR ? in->pos : in->len;

	if (off > UINT64_MAX - base)
		return (toff_t)-1;
	in->pos = base + off;
	return in->pos;
}

static int tiff_close(thandle_t h)
{
	return 0;
}

static toff_t tiff_size(thandle_t h)
{
	return ((struct tiff_in *)h)->len;
}

static int tiff_on_error(TIFF *tif, void *user, const char *module,
			 const char *fmt, va_list ap)
{
	struct tiff_in *in = user;

	if (!in->err[0])
		vsnprintf(in->err, sizeof(in->err), fmt, ap);
	return 1;
}

static int tiff_on_warning(TIFF *tif, void *user, const char *module,
			   const char *fmt, va_list ap)
{
	return 1;
}

static int tiff_failed(struct tiff_in *in, const char *what)
{
	uint32_t kind = in->pos >= in->len ? DLC_ERR_TRUNCATED :
			DLC_ERR_CORRUPT;

	return dlc_image_fail(in->im, kind, -EBADMSG, "%s TIFF: %s%s%s",
			      kind == DLC_ERR_TRUNCATED ? "truncated" : "corrupt",
			      what, in->err[0] ? ": " : "", in->err);
}

struct tiff_layout {
	uint16_t bits, spp, photo, planar, extra;
	uint16_t *cmap[3];
};

/* Whether the rows can be read as they are and converted as Pillow does. */
static int tiff_direct(TIFF *tif, const struct tiff_layout *l)
{
	if (TIFFIsTiled(tif) || (l->spp > 1 && l->planar != PLANARCONFIG_CONTIG))
		return 0;
	switch (l->photo) {
	case PHOTOMETRIC_MINISBLACK:
	case PHOTOMETRIC_MINISWHITE:
		return (l->bits == 1 && l->spp == 1) ||
		       ((l->bits == 8 || l->bits == 16) && l->spp <= 2);
	case PHOTOMETRIC_RGB:
		return (l->bits == 8 || l->bits == 16) &&
		       (l->spp == 3 || l->spp == 4);
	case PHOTOMETRIC_PALETTE:
		return l->bits == 8 && l->spp == 1;
	default:
		return 0;
	}
}

/* One row of @l's layout at @src to RGB at @dst, @w pixels. */
static void tiff_row_to_rgb(uint8_t *dst, const uint8_t *src, uint32_t w,
			    const struct tiff_layout *l)
{
	int inv = l->photo == PHOTOMETRIC_MINISWHITE;
	uint32_t x, c;

	for (x = 0; x < w; x++, dst += 3) {
		if (l->bits == 1) {
			uint8_t v = (src[x / 8] >> (7 - x % 8)) & 1 ? 255 : 0;

			dst[0] = dst[1] = dst[2] = inv ? 255 - v : v;
		} else if (l->photo == PHOTOMETRIC_PALETTE) {
			for (c = 0; c < 3; c++)
				dst[c] = l->cmap[c][src[x]] >> 8;
		} else if (l->photo == PHOTOMETRIC_RGB && l->bits == 8) {
			memcpy(dst, src + (size_t)x * l->spp, 3);
		} else if (l->photo == PHOTOMETRIC_RGB) {
			const uint16_t *s = (const uint16_t *)src + (size_t)x * l->spp;

			for (c = 0; c < 3; c++)
				dst[c] = s[c] >> 8;
		} else {
			uint32_t v = l->bits == 8 ? src[(size_t)x * l->spp] :
				     ((const uint16_t *)src)[(size_t)x * l->spp];

			if (l->bits == 16 && l->spp == 2)
				v >>= 8;	/* "LA;16": the high byte */
			else if (v > 255)
				v = 255;	/* "I;16" to RGB clips */
			dst[0] = dst[1] = dst[2] = inv ? 255 - v : v;
		}
	}
}

static int tiff_read_rows(TIFF *tif, struct tiff_in *in,
			  const struct tiff_layout *l)
{
	struct dlc_image *im = in->im;
	tmsize_t n = TIFFScanlineSize(tif);
	size_t need = l->bits == 1 ? ((size_t)im->width + 7) / 8 :
		      (size_t)im->width * l->spp * (l->bits / 8);
	uint8_t *row;
	uint32_t y;
	int ret = 0;

	if (n <= 0 || (size_t)n < need)
		return tiff_failed(in, "the scanline size does not match the image");
	row = malloc((size_t)n);
	if (!row)
		return dlc_image_fail(im, DLC_ERR_NOMEM, -ENOMEM,
				      "out of memory: a TIFF row");
	for (y = 0; y < im->height && !ret; y++) {
		ret = dlc_image_check_budget(im, "TIFF");
		if (!ret && TIFFReadScanline(tif, row, y, 0) < 0)
			ret = tiff_failed(in, "row unreadable");
		if (!ret)
			tiff_row_to_rgb(im->rgb + (size_t)y * im->width * 3,
					row, im->width, l);
	}
	free(row);
	return ret;
}

/* Any other layout: libtiff's RGBA conversion, alpha dropped. */
static int tiff_read_rgba(TIFF *tif, struct tiff_in *in)
{
	struct dlc_image *im = in->im;
	size_t n = (size_t)im->width * im->height, i;
	uint32_t *px = malloc(n * 4);
	int ret = 0;

	if (!px)
		return dlc_image_fail(im, DLC_ERR_NOMEM, -ENOMEM,
				      "out of memory: %zu bytes of TIFF RGBA",
				      n * 4);
	if (!TIFFReadRGBAImageOriented(tif, im->width, im->height, px,
				       ORIENTATION_TOPLEFT, 1))
		ret = tiff_failed(in, "libtiff's RGBA read failed");
	for (i = 0; !ret && i < n; i++) {
		im->rgb[i * 3] = TIFFGetR(px[i]);
		im->rgb[i * 3 + 1] = TIFFGetG(px[i]);
		im->rgb[i * 3 + 2] = TIFFGetB(px[i]);
	}
	free(px);
	return ret;
}

static int tiff_decode_open(TIFF *tif, struct tiff_in *in)
{
	struct tiff_layout l = { 0 };
	uint32_t w = 0, h = 0;
	uint16_t *extra = NULL;
	int ret;

	if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w) ||
	    !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h))
		return tiff_failed(in, "no image size");
	TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &l.bits);
	TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &l.spp);
	TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &l.planar);
	TIFFGetFieldDefaulted(tif, TIFFTAG_EXTRASAMPLES, &l.extra, &extra);
	if (!TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &l.photo))
		l.photo = l.spp >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK;
	if (l.photo == PHOTOMETRIC_PALETTE &&
	    !TIFFGetField(tif, TIFFTAG_COLORMAP, &l.cmap[0], &l.cmap[1],
			  &l.cmap[2]))
		return tiff_failed(in, "a palette image without a colour map");
	ret = dlc_image_alloc(in->im, "TIFF", w, h);
	if (ret)
		return ret;
	if (tiff_direct(tif, &l))
		return tiff_read_rows(tif, in, &l);
	return tiff_read_rgba(tif, in);
}

int dlc_tiff_decode(struct dlc_image *im, const uint8_t *buf, size_t len)
{
	struct tiff_in in = { .im = im, .buf = buf, .len = len };
	TIFFOpenOptions *opts = TIFFOpenOptionsAlloc();
	TIFF *tif;
	int ret;

	if (!opts)
		return dlc_image_fail(im, DLC_ERR_NOMEM, -ENOMEM,
				      "out of memory: libtiff's options");
	TIFFOpenOptionsSetErrorHandlerExtR(opts, tiff_on_error, &in);
	TIFFOpenOptionsSetWarningHandlerExtR(opts, tiff_on_warning, &in);
	TIFFOpenOptionsSetMaxSingleMemAlloc(opts, TIFF_ALLOC_MAX);
	/* "m": no memory map, there is no file */
	tif = TIFFClientOpenExt("sample", "rm", &in, tiff_read, tiff_write,
				tiff_seek, tiff_close, tiff_size, NULL, NULL,
				opts);
	TIFFOpenOptionsFree(opts);
	if (!tif)
		return tiff_failed(&in, "not opened");
	ret = tiff_decode_open(tif, &in);
	TIFFClose(tif);
	return ret;
}
