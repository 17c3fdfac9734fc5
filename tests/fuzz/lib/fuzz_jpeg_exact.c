// SPDX-License-Identifier: MIT
/*
 * Fuzz harness: a JPEG through the exact transform
 * (DLC_TRANSFORM_F_EXACT: every crop decoded at DCT scale 1, the
 * decoder's largest scratch) with a train and an eval transform, and
 * through dlc_decoder_crop() with a crop box drawn from the input, by
 * each method. Errors keep the contract of jpeg_common.h. A sample that
 * decodes is also made from the image decoded whole, as a decoded form
 * serves it (dlc_decoder_sample_rgb()): the pixels must be the same.
 */
#include "jpeg_common.h"

static struct dlc_transform train, eval;
static uint8_t from_form[OUT_W * OUT_H * 3];

/* @t's sample of epoch @e from the whole image equals out's, or abort. */
static void same_from_form(const uint8_t *data, size_t size,
			   const struct dlc_transform *t, uint32_t e,
			   uint32_t layout)
{
	uint32_t w, h;
	uint8_t *rgb;

	if (dlc_decoder_full(dec, data, size, &rgb, &w, &h))
		return;
	if (dlc_decoder_sample_rgb(dec, rgb, w, h, t, 3, e, 1, layout,
				   from_form, NULL) ||
	    memcmp(from_form, out, sizeof(out))) {
		fprintf(stderr, "the sample from the decoded form differs\n");
		abort();
	}
	free(rgb);
}

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
	ret = dlc_decoder_sample(dec, data, size, &train, 3, 2, 1,
				 DLC_LAYOUT_NCHW, out, &crop);
	check_error(ret);
	if (!ret)
		same_from_form(data, size, &train, 2, DLC_LAYOUT_NCHW);
	ret = dlc_decoder_sample(dec, data, size, &eval, 3, 0, 1,
				 DLC_LAYOUT_NHWC, out, NULL);
	check_error(ret);
	if (!ret)
		same_from_form(data, size, &eval, 0, DLC_LAYOUT_NHWC);
	if (!info.width || !info.height)
		return 0;
	crop_from(data, size, info.width, info.height, &crop);
	for (m = DLC_DECODE_CROP_FIRST; m <= DLC_DECODE_CROP_FIRST_UNCHECKED;
	     m++)
		check_error(dlc_decoder_crop(dec, data, size, &crop, OUT_W,
					     OUT_H, DLC_LAYOUT_NCHW, m, out));
	return 0;
}
