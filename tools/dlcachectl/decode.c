// SPDX-License-Identifier: MIT
/*
 * dlcachectl decode FILE -o OUT.ppm: one image through the library's full
 * decode, for eyeballing and for comparing with djpeg and Pillow.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "dlcache.h"

static const char decode_usage[] =
	"usage: dlcachectl decode FILE -o OUT.ppm [--max-pixels N]\n"
	"\n"
	"Decode the image FILE in full, as the loader would, and write a binary\n"
	"PPM. JPEG, PNG, WebP, BMP, PPM/PGM/PBM and TIFF, known by their content;\n"
	"gray, palettes and CMYK become RGB and alpha is dropped, as Pillow's\n"
	"convert(\"RGB\"). Corrupt or truncated data is an error.\n"
	"\n"
	"  -o, --output FILE   PPM file to write\n"
	"  --max-pixels N      refuse images over N pixels (default 67108864)\n"
	"  -h, --help          show this help\n";

int cmd_decode(int argc, char **argv)
{
	const char *in = NULL, *out = NULL;
	uint64_t max_pixels = 0;
	struct dlc_decoder *d;
	uint8_t *buf = NULL, *rgb;
	uint32_t w, h;
	size_t len = 0;
	int i, ret, opts = 1;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (opts && (!strcmp(a, "-h") || !strcmp(a, "--help"))) {
			fputs(decode_usage, stdout);
			return 0;
		} else if (opts && (!strcmp(a, "-o") || !strcmp(a, "--output"))) {
			if (i + 1 >= argc)
				return usage_error("decode", "%s needs a file", a);
			if (out)
				return usage_error("decode", "more than one output");
			out = argv[++i];
		} else if (opts && !strncmp(a, "--output=", 9)) {
			if (out)
				return usage_error("decode", "more than one output");
			out = a + 9;
		} else if (opts && (!strcmp(a, "--max-pixels") ||
				    !strncmp(a, "--max-pixels=", 13))) {
			const char *v = a[12] == '=' ? a + 13 : NULL;

			if (!v && i + 1 >= argc)
				return usage_error("decode", "--max-pixels needs a number");
			if (!v)
				v = argv[++i];
			if (parse_u64(v, 1, UINT64_MAX, &max_pixels))
				return usage_error("decode", "bad --max-pixels '%s'", v);
		} else if (opts && !strcmp(a, "--")) {
			opts = 0;
		} else if (opts && a[0] == '-' && a[1]) {
			return usage_error("decode", "unknown option '%s'", a);
		} else if (!in) {
			in = a;
		} else {
			return usage_error("decode", "unexpected argument '%s'", a);
		}
	}
	if (!in || !*in)
		return usage_error("decode", "missing FILE (try --help)");
	if (!out || !*out)
		return usage_error("decode", "missing -o OUT.ppm (try --help)");

	ret = read_whole_file(in, &buf, &len);
	if (ret)
		return fail("decode", "%s: %s", in, strerror(-ret));
	ret = dlc_decoder_create(max_pixels, &d);
	if (ret) {
		free(buf);
		return fail("decode", "%s: %s", in, strerror(-ret));
	}
	ret = dlc_decoder_full(d, buf, len, &rgb, &w, &h);
	free(buf);
	if (ret) {
		ret = fail("decode", "%s: %s (%s)", in, dlc_decoder_error(d),
			   dlc_error_kind_name(dlc_decoder_error_kind(d)));
		dlc_decoder_destroy(d);
		return ret;
	}
	dlc_decoder_destroy(d);
	ret = write_ppm(out, rgb, w, h);
	free(rgb);
	if (ret)
		return fail("decode", "%s: %s", out, strerror(-ret));
	return 0;
}
