// SPDX-License-Identifier: MIT
/*
 * PNG with libpng, to the pixels of Pillow's open(f).convert("RGB"):
 *
 *   gray 1/2/4/8 bits       expanded to 8 bits (x255, x85, x17), replicated
 *   gray 16 bits            Pillow's mode "I": clipped to 255, not scaled
 *   gray + alpha, RGB(A)    alpha dropped, 16-bit samples to their high byte
 *   palette                 looked up; tRNS (transparency) ignored
 *
 * Interlaced (Adam7) files are read whole and then converted. Gamma,
 * sBIT, colour profiles and text are ignored, as Pillow ignores them for
 * the pixels; ancillary chunks are bounded (chunk_malloc_max) and unknown
 * ones skipped. libpng's warnings stay silent; its errors longjmp back
 * here with their message. A file that ends before IEND fails as
 * truncated, as Pillow without LOAD_TRUNCATED_IMAGES does.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>

#include "dlcache.h"
#include "image.h"

/* The largest ancillary chunk (iCCP, zTXt, ...) libpng may inflate. */
#define PNG_CHUNK_MAX	(8u << 20)

struct png_in {
	struct dlc_image *im;
	const uint8_t *buf;
	size_t len, pos;
	int ran_out;		/* a read went past the end */
	uint8_t *rows;		/* whole image before conversion, or NULL */
	uint8_t *row;		/* one row before conversion, or NULL */
};

static void png_on_read(png_structp png, png_bytep out, size_t n)
{
	struct png_in *in = png_get_io_ptr(png);

	if (n > in->len - in->pos) {
		in->ran_out = 1;
		png_error(png, "the data ends early");
	}
	memcpy(out, in->buf + in->pos, n);
	in->pos += n;
}

static void png_on_error(png_structp png, png_const_charp msg)
{
	struct png_in *in = png_get_error_ptr(png);

	if (!in->im->kind)
		dlc_image_fail(in->im, in->ran_out ? DLC_ERR_TRUNCATED :
			       DLC_ERR_CORRUPT, -EBADMSG, "%s PNG: %s (byte %zu of %zu)",
			       in->ran_out ? "truncated" : "corrupt", msg,
			       in->pos, in->len);
	png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg)
{
}

/* Pillow's conversion of one row of @ch channels of @depth to RGB. */
static void png_row_to_rgb(uint8_t *dst, const uint8_t *src, uint32_t w,
			   int ch, int depth)
{
	uint32_t x;

	for (x = 0; x < w; x++, dst += 3) {
		if (ch >= 3) {
			memcpy(dst, src + (size_t)x * ch, 3);
		} else if (depth == 16) {
			/* big-endian; "I" to RGB clips */
			const uint8_t *s = src + (size_t)x * 2 * ch;
			uint8_t v = s[0] ? 255 : s[1];

			dst[0] = dst[1] = dst[2] = v;
		} else {
			dst[0] = dst[1] = dst[2] = src[(size_t)x * ch];
		}
	}
}

/*
 * Transforms to 8-bit RGB, gray or gray 16 (+ alpha): the channels out,
 * their *@depth and the *@passes to read (7 for Adam7).
 */
static int png_setup(png_structp png, png_infop info, int *depth,
		     int *passes)
{
	int type = png_get_color_type(png, info);

	*depth = png_get_bit_depth(png, info);
	if (type == PNG_COLOR_TYPE_PALETTE)
		png_set_palette_to_rgb(png);
	if (type == PNG_COLOR_TYPE_GRAY && *depth < 8)
		png_set_expand_gray_1_2_4_to_8(png);
	/* gray 16 without alpha is clipped by hand; the rest keep the high byte */
	if (*depth == 16 && type != PNG_COLOR_TYPE_GRAY)
		png_set_strip_16(png);
	*passes = png_set_interlace_handling(png);
	png_read_update_info(png, info);
	*depth = png_get_bit_depth(png, info);
	return png_get_channels(png, info);
}

static int png_read_pixels(png_structp png, png_infop info,
			   struct png_in *in)
{
	struct dlc_image *im = in->im;
	uint32_t w = im->width, h = im->height, y;
	int depth, passes, ch = png_setup(png, info, &depth, &passes);
	size_t rowbytes = png_get_rowbytes(png, info);
	int direct = ch == 3 && depth == 8, p;

	if (rowbytes != (size_t)w * ch * (depth / 8))
		png_error(png, "unexpected row size");
	if (!direct && passes > 1) {
		in->rows = malloc(rowbytes * h);
		if (!in->rows)
			return dlc_image_fail(im, DLC_ERR_NOMEM, -ENOMEM,
					      "out of memory: %zu bytes for an interlaced PNG",
					      rowbytes * h);
	} else if (!direct) {
		in->row = malloc(rowbytes);
		if (!in->row)
			return dlc_image_fail(im, DLC_ERR_NOMEM, -ENOMEM,
					      "out of memory: a PNG row");
	}
	for (p = 0; p < passes; p++) {
		for (y = 0; y < h; y++) {
			uint8_t *dst = direct ? im->rgb + (size_t)y * w * 3 :
				       in->rows ? in->rows + y * rowbytes :
				       in->row;
			int ret = dlc_image_check_budget(im, "PNG");

			if (ret)
				return ret;
			png_read_row(png, dst, NULL);
			if (in->row)
				png_row_to_rgb(im->rgb + (size_t)y * w * 3,
					       in->row, w, ch, depth);
		}
	}
	for (y = 0; in->rows && y < h; y++)
		png_row_to_rgb(im->rgb + (size_t)y * w * 3,
			       in->rows + y * rowbytes, w, ch, depth);
	png_read_end(png, NULL);
	return 0;
}

int dlc_png_decode(struct dlc_image *im, const uint8_t *buf, size_t len)
{
	struct png_in in = { .im = im, .buf = buf, .len = len };
	png_structp png;
	png_infop info = NULL;
	int ret = -ENOMEM;

	png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &in, png_on_error,
				     png_on_warning);
	if (png)
		info = png_create_info_struct(png);
	if (!info) {
		png_destroy_read_struct(&png, NULL, NULL);
		return dlc_image_fail(im, DLC_ERR_NOMEM, -ENOMEM,
				      "out of memory: libpng's state");
	}
	if (setjmp(png_jmpbuf(png))) {
		ret = im->kind ? -EBADMSG : -ENOMEM;
		if (im->kind == DLC_ERR_NOMEM)
			ret = -ENOMEM;
		goto out;
	}
	png_set_read_fn(png, &in, png_on_read);
	png_set_chunk_malloc_max(png, PNG_CHUNK_MAX);
	png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, NULL, 0);
	png_read_info(png, info);
	ret = dlc_image_alloc(im, "PNG", png_get_image_width(png, info),
			      png_get_image_height(png, info));
	if (!ret)
		ret = png_read_pixels(png, info, &in);
out:
	free(in.rows);
	free(in.row);
	png_destroy_read_struct(&png, &info, NULL);
	return ret;
}
