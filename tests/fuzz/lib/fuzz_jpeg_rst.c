// SPDX-License-Identifier: MIT
/*
 * Fuzz harness: restart-indexed JPEGs (jpegrst.c) and the MCU-exact
 * decode (decode.c). For any input: dlc_rst_transcode() (what
 * `dlcachectl pack` runs on every source image), whose output must parse
 * (dlc_rst_parse()). For an input that parses: dlc_decoder_sample_rst()
 * and dlc_decoder_crop_rst() through its own row table, and the output
 * of the first bit-identical to dlc_decoder_sample_method() with
 * DLC_DECODE_CROP_FIRST_UNCHECKED on the same bytes (internal.h says so).
 */
#include "jpeg_common.h"

#include "jpegrst.h"

static struct dlc_transform train;
static uint32_t rows[DLC_RST_MAX_ROWS + 1];
static uint8_t out2[OUT_W * OUT_H * 3];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	jpeg_init();
	transform(&train, DLC_TRANSFORM_TRAIN, 0);
	return 0;
}

static void mcu_exact(const uint8_t *data, size_t size)
{
	struct dlc_rst_geom g;
	struct dlc_crop crop;
	const char *why = NULL;
	int ret, ref;

	if (dlc_rst_parse(data, size, &g, rows, &why))
		return;
	ret = dlc_decoder_sample_rst(dec, data, size, &g, rows, &train, 5, 1,
				     2, DLC_LAYOUT_NCHW, out, NULL);
	check_error(ret);
	ref = dlc_decoder_sample_method(dec, data, size, &train, 5, 1, 2,
					DLC_LAYOUT_NCHW,
					DLC_DECODE_CROP_FIRST_UNCHECKED, out2,
					NULL);
	check_error(ref);
	if (!ret && !ref && memcmp(out, out2, sizeof(out))) {
		fprintf(stderr, "MCU-exact decode differs from crop-first\n");
		abort();
	}
	if (!g.width || !g.height)
		return;
	crop_from(data, size, g.width, g.height, &crop);
	check_error(dlc_decoder_crop_rst(dec, data, size, &g, rows, &crop,
					 OUT_W, OUT_H, DLC_LAYOUT_NHWC, out));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dlc_rst_opts o = { .interval = 0 };
	struct dlc_rst_geom g;
	const char *pwhy = NULL;
	uint8_t *t = NULL;
	size_t tlen = 0;
	char why[256];

	mcu_exact(data, size);
	o.interval = size ? data[0] % 9 : 0;
	if (!dlc_rst_transcode(data, size, &o, 0, &t, &tlen, why,
			       sizeof(why))) {
		if (dlc_rst_parse(t, tlen, &g, rows, &pwhy)) {
			fprintf(stderr, "transcode output does not parse: %s\n",
				pwhy ? pwhy : "?");
			abort();
		}
		free(t);
	}
	return 0;
}
