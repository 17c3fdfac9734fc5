// SPDX-License-Identifier: MIT
/*
 * WebP with libwebp, lossy and lossless, to the pixels of Pillow's
 * open(f).convert("RGB"): Pillow decodes with the same libwebp (its
 * animation decoder, whose first frame of a still image is the plain
 * decode) and drops the alpha channel, so RGB straight from libwebp is
 * the same bytes. An animated WebP is refused, naming it: Pillow would
 * give its first frame, composed on the canvas by libwebpdemux.
 */
#include <errno.h>
#include <stdlib.h>

#include <webp/decode.h>

#include "dlcache.h"
#include "image.h"

static int webp_status(struct dlc_image *im, VP8StatusCode st)
{
	switch (st) {
	case VP8_STATUS_OUT_OF_MEMORY:
		return dlc_image_fail(im, DLC_ERR_NOMEM, -ENOMEM,
				      "out of memory: libwebp's decode");
	case VP8_STATUS_NOT_ENOUGH_DATA:
		return dlc_image_fail(im, DLC_ERR_TRUNCATED, -EBADMSG,
				      "truncated WebP: the data ends early");
	case VP8_STATUS_UNSUPPORTED_FEATURE:
		return dlc_image_fail(im, DLC_ERR_CORRUPT, -EBADMSG,
				      "unsupported WebP: a feature libwebp does not decode");
	default:
		return dlc_image_fail(im, DLC_ERR_CORRUPT, -EBADMSG,
				      "corrupt WebP: libwebp status %d", (int)st);
	}
}

int dlc_webp_decode(struct dlc_image *im, const uint8_t *buf, size_t len)
{
	WebPDecoderConfig cfg;
	VP8StatusCode st;
	int ret;

	if (!WebPInitDecoderConfig(&cfg))
		return dlc_image_fail(im, DLC_ERR_NOMEM, -ENOMEM,
				      "libwebp's ABI does not match");
	st = WebPGetFeatures(buf, len, &cfg.input);
	if (st != VP8_STATUS_OK)
		return webp_status(im, st);
	if (cfg.input.has_animation)
		return dlc_image_fail(im, DLC_ERR_CORRUPT, -EBADMSG,
				      "unsupported WebP: an animation (%dx%d)",
				      cfg.input.width, cfg.input.height);
	if (cfg.input.width <= 0 || cfg.input.height <= 0)
		return dlc_image_fail(im, DLC_ERR_CORRUPT, -EBADMSG,
				      "corrupt WebP: the image is %dx%d",
				      cfg.input.width, cfg.input.height);
	ret = dlc_image_alloc(im, "WebP", (uint32_t)cfg.input.width,
			      (uint32_t)cfg.input.height);
	if (ret)
		return ret;
	cfg.output.colorspace = MODE_RGB;
	cfg.output.is_external_memory = 1;
	cfg.output.u.RGBA.rgba = im->rgb;
	cfg.output.u.RGBA.stride = (int)im->width * 3;
	cfg.output.u.RGBA.size = (size_t)im->width * im->height * 3;
	st = WebPDecode(buf, len, &cfg);
	WebPFreeDecBuffer(&cfg.output);
	return st == VP8_STATUS_OK ? 0 : webp_status(im, st);
}
