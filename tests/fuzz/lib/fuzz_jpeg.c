// SPDX-License-Identifier: MIT
/*
 * Fuzz harness: a JPEG through the decoder's plain and crop-first paths
 * (decode.c): dlc_decoder_header(), dlc_decoder_full(), and
 * dlc_decoder_sample_method() with a train and an eval transform by every
 * method (crop-first checked, full then crop, crop-first unchecked).
 * Besides the sanitizers: every error keeps the contract (jpeg_common.h),
 * a file dlc_decoder_full() calls corrupt fails the checked crop-first
 * decode too, whatever the crop (dlcache.h says so), and the size
 * dlc_image_dims() reads from the header alone (dims.c) is libjpeg's.
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
	struct dlc_jpeg_info info;
	uint32_t w, h, m, dw = 0, dh = 0;
	uint8_t *rgb = NULL;
	int full, ret, dims;

	dims = dlc_image_dims(data, size, &dw, &dh);
	ret = dlc_decoder_header(dec, data, size, &info);
	check_error(ret);
	/* The header's frame is the one libjpeg reads. */
	if (!ret && !dims && (dw != info.width || dh != info.height)) {
		fprintf(stderr, "dlc_image_dims %ux%u, libjpeg %ux%u\n", dw,
			dh, info.width, info.height);
		abort();
	}
	if (ret)
		return 0;
	full = dlc_decoder_full(dec, data, size, &rgb, &w, &h);
	check_error(full);
	if (!full && (w != info.width || h != info.height))
		abort();
	free(rgb);
	for (m = DLC_DECODE_CROP_FIRST; m <= DLC_DECODE_CROP_FIRST_UNCHECKED;
	     m++) {
		ret = dlc_decoder_sample_method(dec, data, size, &train, 7, 0,
						(uint32_t)size, DLC_LAYOUT_NCHW,
						m, out, NULL);
		check_error(ret);
		if (m == DLC_DECODE_CROP_FIRST && full == -EBADMSG && !ret) {
			fprintf(stderr, "full decode: %s; crop-first passed\n",
				dlc_decoder_error(dec));
			abort();
		}
		ret = dlc_decoder_sample_method(dec, data, size, &eval, 7, 1,
						0, DLC_LAYOUT_NHWC, m, out,
						NULL);
		check_error(ret);
	}
	return 0;
}
