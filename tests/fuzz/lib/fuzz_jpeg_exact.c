// SPDX-License-Identifier: MIT
/*
 * Fuzz harness: a JPEG through the exact transform
 * (DLC_TRANSFORM_F_EXACT: every crop decoded at DCT scale 1, the
 * decoder's largest scratch) with a train and an eval transform, and
 * through dlc_decoder_crop() with a crop box drawn from the input, by
 * each method. Errors keep the contract of jpeg_common.h.
 */
#include "jpeg_common.h"

static struct dlc_transform train, eval;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	jpeg_init();
	transform(&train, DLC_TRANSFORM_TRAIN, DLC_TRANSFORM_F_EXACT);
	transform(&eval, DLC_TRANSFORM_EVAL, DLC_TRANSFORM_F_EXACT);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dlc_jpeg_info info;
	struct dlc_crop crop;
	uint32_t m;
	int ret;

	ret = dlc_decoder_header(dec, data, size, &info);
	check_error(ret);
	if (ret)
		return 0;
	check_error(dlc_decoder_sample(dec, data, size, &train, 3, 2, 1,
				       DLC_LAYOUT_NCHW, out, &crop));
	check_error(dlc_decoder_sample(dec, data, size, &eval, 3, 0, 0,
				       DLC_LAYOUT_NHWC, out, NULL));
	if (!info.width || !info.height)
		return 0;
	crop_from(data, size, info.width, info.height, &crop);
	for (m = DLC_DECODE_CROP_FIRST; m <= DLC_DECODE_CROP_FIRST_UNCHECKED;
	     m++)
		check_error(dlc_decoder_crop(dec, data, size, &crop, OUT_W,
					     OUT_H, DLC_LAYOUT_NCHW, m, out));
	return 0;
}
