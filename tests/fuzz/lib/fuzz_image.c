// SPDX-License-Identifier: MIT
/*
 * Fuzz harness: the formats besides JPEG (image.h: PNG, WebP, BMP,
 * PPM/PGM/PBM, TIFF) through the decoder's entry points:
 * dlc_decoder_full(), and dlc_decoder_sample_method() with a train and an
 * eval transform; and dlc_image_dims(), the header's size (dims.c), for
 * the sanitizers alone. Besides the sanitizers: every error keeps the contract
 * (jpeg_common.h), a full decode's size is the sample's image, and a file
 * the full decode rejects fails as a sample too (both decode it whole).
 */
#include "image.h"
#include "jpeg_common.h"

static struct dlc_transform train, eval;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	jpeg_init();
	transform(&train, DLC_TRANSFORM_TRAIN, 0);
	transform(&eval, DLC_TRANSFORM_EVAL, 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *rgb = NULL;
	uint32_t w, h;
	int full, ret;

	(void)dlc_image_dims(data, size, &w, &h);
	full = dlc_decoder_full(dec, data, size, &rgb, &w, &h);
	check_error(full);
	free(rgb);
	ret = dlc_decoder_sample_method(dec, data, size, &train, 7, 0,
					(uint32_t)size, DLC_LAYOUT_NCHW,
					DLC_DECODE_CROP_FIRST, out, NULL);
	check_error(ret);
	if ((full == -EBADMSG) != (ret == -EBADMSG)) {
		fprintf(stderr, "full decode %d, sample %d: %s\n", full, ret,
			dlc_decoder_error(dec));
		abort();
	}
	ret = dlc_decoder_sample_method(dec, data, size, &eval, 7, 1, 0,
					DLC_LAYOUT_NHWC,
					DLC_DECODE_FULL_THEN_CROP, out, NULL);
	check_error(ret);
	return 0;
}
