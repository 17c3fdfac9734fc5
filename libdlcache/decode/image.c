// SPDX-License-Identifier: MIT
/*
 * Images other than JPEG: which format a file is, and the decoder it goes
 * to (image.h); the checks every format's decoder shares are imageout.c's.
 * The formats are those of torchvision's IMG_EXTENSIONS that Pillow
 * opens: PNG, WebP, BMP, PPM/PGM/PBM and TIFF. A file is known by its
 * magic, never by its name, as Pillow does: a PNG named .jpg decodes as
 * a PNG.
 */
#include <errno.h>
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
