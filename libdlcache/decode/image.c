// SPDX-License-Identifier: MIT
/*
 * Images other than JPEG: which format a file is, and the checks every
 * format's decoder shares (image.h). The formats are those of
 * torchvision's IMG_EXTENSIONS that Pillow opens: PNG, WebP, BMP,
 * PPM/PGM/PBM and TIFF. A file is known by its magic, never by its name,
 * as Pillow does: a PNG named .jpg decodes as a PNG.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlcache.h"
#include "image.h"
#include "internal.h"

enum dlc_image_format dlc_image_sniff(const uint8_t *b, size_t len)
{
	static const uint8_t png[8] = { 0x89, 'P', 'N', 'G', '\r', '\n',
					0x1a, '\n' };

	if (len >= 2 && b[0] == 0xff && b[1] == 0xd8)
		return DLC_IMG_JPEG;
	if (len >= 8 && !memcmp(b, png, 8))
		return DLC_IMG_PNG;
	if (len >= 12 && !memcmp(b, "RIFF", 4) && !memcmp(b + 8, "WEBP", 4))
		return DLC_IMG_WEBP;
	if (len >= 2 && b[0] == 'B' && b[1] == 'M')
		return DLC_IMG_BMP;
	/* Pillow's magic: P1..P6 and whitespace (pnm.c refuses the rest) */
	if (len >= 3 && b[0] == 'P' && b[1] >= '1' && b[1] <= '6' &&
	    (b[2] == ' ' || (b[2] >= '\t' && b[2] <= '\r') || b[2] == '#'))
		return DLC_IMG_PNM;
	if (len >= 4 && ((b[0] == 'I' && b[1] == 'I' && b[2] == 42 && !b[3]) ||
			 (b[0] == 'M' && b[1] == 'M' && !b[2] && b[3] == 42)))
		return DLC_IMG_TIFF;
	return DLC_IMG_UNKNOWN;
}

const char *dlc_image_format_name(enum dlc_image_format f)
{
	static const char *const names[] = {
		[DLC_IMG_UNKNOWN] = "unknown", [DLC_IMG_JPEG] = "JPEG",
		[DLC_IMG_PNG] = "PNG", [DLC_IMG_WEBP] = "WebP",
		[DLC_IMG_BMP] = "BMP", [DLC_IMG_PNM] = "PPM/PGM/PBM",
		[DLC_IMG_TIFF] = "TIFF",
	};

	return (unsigned int)f < sizeof(names) / sizeof(names[0]) ?
	       names[f] : "unknown";
}

int dlc_image_fail(struct dlc_image *im, uint32_t kind, int err,
		   const char *fmt, ...)
{
	va_list ap;
	char *c;

	va_start(ap, fmt);
	vsnprintf(im->msg, sizeof(im->msg), fmt, ap);
	va_end(ap);
	/*
	 * A message is one line: a library's own text may hold line breaks
	 * (libtiff's "NumberOfInks ... is different from ...\n").
	 */
	for (c = im->msg; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
	im->kind = kind;
	return err;
}

int dlc_image_alloc(struct dlc_image *im, const char *fmt, uint32_t w,
		    uint32_t h)
{
	uint64_t pixels = (uint64_t)w * h;
	size_t bytes;
	uint8_t *p;

	if (!w || !h)
		return dlc_image_fail(im, DLC_ERR_CORRUPT, -EBADMSG,
				      "corrupt %s: the image is %ux%u", fmt,
				      w, h);
	if (pixels > im->max_pixels)
		return dlc_image_fail(im, DLC_ERR_TOO_LARGE, -E2BIG,
				      "image too large: the %s is %ux%u, %llu pixels, over the cap of %llu",
				      fmt, w, h, (unsigned long long)pixels,
				      (unsigned long long)im->max_pixels);
	if (pixels > SIZE_MAX / 3)
		return dlc_image_fail(im, DLC_ERR_TOO_LARGE, -E2BIG,
				      "image too large: the %s is %ux%u", fmt,
				      w, h);
	bytes = (size_t)pixels * 3;
	if (bytes > im->cap) {
		p = realloc(im->rgb, bytes);
		if (!p)
			return dlc_image_fail(im, DLC_ERR_NOMEM, -ENOMEM,
					      "out of memory: %zu bytes for the %ux%u %s",
					      bytes, w, h, fmt);
		im->rgb = p;
		im->cap = bytes;
	}
	im->width = w;
	im->height = h;
	return 0;
}

int dlc_image_check_budget(struct dlc_image *im, const char *fmt)
{
	uint64_t cpu = 0;

	if (!im->budget_ns ||
	    !dlc_over_cpu_budget(im->wall_start_ns, im->cpu_start_ns,
				 im->budget_ns, &cpu))
		return 0;
	return dlc_image_fail(im, DLC_ERR_TOO_LARGE, -E2BIG,
			      "decode over %llu ms of CPU (decode_budget_ms), stopped after %llu ms in the %s",
			      (unsigned long long)(im->budget_ns / 1000000),
			      (unsigned long long)(cpu / 1000000), fmt);
}

int dlc_image_decode(struct dlc_image *im, const uint8_t *buf, size_t len)
{
	enum dlc_image_format f = dlc_image_sniff(buf, len);

	im->kind = DLC_ERR_NONE;
	im->msg[0] = '\0';
	im->width = im->height = 0;
	switch (f) {
	case DLC_IMG_PNG:
		return dlc_png_decode(im, buf, len);
	case DLC_IMG_WEBP:
		return dlc_webp_decode(im, buf, len);
	case DLC_IMG_BMP:
		return dlc_bmp_decode(im, buf, len);
	case DLC_IMG_PNM:
		return dlc_pnm_decode(im, buf, len);
	case DLC_IMG_TIFF:
		return dlc_tiff_decode(im, buf, len);
	default:
		break;
	}
	if (len < 2)
		return dlc_image_fail(im, DLC_ERR_NOT_JPEG, -EBADMSG,
				      "not an image: only %zu byte", len);
	return dlc_image_fail(im, DLC_ERR_NOT_JPEG, -EBADMSG,
			      "not an image: starts with 0x%02x 0x%02x, the magic of none of JPEG, PNG, WebP, BMP, PPM/PGM/PBM and TIFF",
			      buf[0], buf[1]);
}
