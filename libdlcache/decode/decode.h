/* SPDX-License-Identifier: MIT */
/*
 * The decoder's internal entry points (decode.c): MCU-exact decode of
 * restart-indexed JPEGs (jpegrst.h), and budgets.
 * Internal to libdlcache; the public face is dlcache.h.
 */
#ifndef DLC_DECODE_H
#define DLC_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "dlcache.h"

struct dlc_rst_geom;

/*
 * dlc_decoder_sample() of a restart-indexed JPEG (@buf, @len) with its
 * geometry @g and MCU row table @rows from dlc_rst_parse() or a pack: the
 * same crop and DCT scale, but only the restart intervals covering the
 * decoded region plus one MCU around it are spliced (dlc_rst_splice())
 * and decoded. The output is bit-identical to dlc_decoder_sample_method()
 * with DLC_DECODE_CROP_FIRST_UNCHECKED on the same bytes. The rest of the
 * file is not read (the caller checks its CRC). Errors as
 * dlc_decoder_sample(): -EBADMSG (kind corrupt or truncated, message from
 * the splice or libjpeg), -E2BIG, -ENOMEM, -EINVAL.
 */
int dlc_decoder_sample_rst(struct dlc_decoder *d, const void *buf,
			   size_t len, const struct dlc_rst_geom *g,
			   const uint32_t *rows, const struct dlc_transform *t,
			   uint64_t seed, uint32_t epoch, uint32_t sample,
			   uint32_t layout, uint8_t *dst,
			   struct dlc_crop *crop_out);
/*
 * A decoder's budgets (dlc_config.max_scans, .decode_budget_ms): @max_scans
 * scans a JPEG may have (0: DLC_DEFAULT_MAX_SCANS), @budget_ms of the
 * calling thread's CPU time a decode call may take (0: by the image's
 * pixels, DLC_DEFAULT_DECODE_BUDGET_MS and up). Over either, the call fails
 * as DLC_ERR_TOO_LARGE, -E2BIG. A new decoder has both defaults.
 */
int dlc_decoder_set_budget(struct dlc_decoder *d, uint32_t max_scans,
			   uint32_t budget_ms);
/*
 * Where a whole decode's pixels go: @alloc gives @bytes for them (NULL:
 * -ENOMEM), @release takes them back when the decode then fails.
 */
struct dlc_rgb_alloc {
	uint8_t *(*alloc)(void *arg, size_t bytes);
	void (*release)(void *arg, uint8_t *mem);
	void *arg;
};

/*
 * dlc_decoder_full() into memory from @a (the decoded forms' pooled
 * buffers): *@rgb is @a's, *@width x *@height packed RGB.
 */
int dlc_decoder_full_to(struct dlc_decoder *d, const void *buf, size_t len,
			const struct dlc_rgb_alloc *a, uint8_t **rgb,
			uint32_t *width, uint32_t *height);

/* Scratch bytes the decoder holds between calls (for the tests). */
size_t dlc_decoder_scratch_bytes(const struct dlc_decoder *d);

/* The same for a given crop, as dlc_decoder_crop(). */
int dlc_decoder_crop_rst(struct dlc_decoder *d, const void *buf, size_t len,
			 const struct dlc_rst_geom *g, const uint32_t *rows,
			 const struct dlc_crop *crop, uint32_t out_w,
			 uint32_t out_h, uint32_t layout, uint8_t *dst);

#endif
