// SPDX-License-Identifier: MIT
/*
 * A format decoder's output (struct dlc_image, image.h), shared by the
 * format files below image.c's sniff: its pixels sized under the pixel
 * cap, its CPU budget checked between rows, its failure recorded as one
 * line. A file of its own so that the formats call down to it, never up
 * into the dispatch that calls them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "dlcache.h"
#include "image.h"
#include "internal.h"

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
