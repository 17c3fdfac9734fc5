/* SPDX-License-Identifier: MIT */
/*
 * Private: dlc_resize_rgb() with caller-owned scratch memory, so that a
 * decoder resizes every sample without allocating once warmed up.
 */
#ifndef DLC_RESIZE_H
#define DLC_RESIZE_H

#include <stddef.h>
#include <stdint.h>

#include "dlcache.h"

/* Scratch grown with realloc; zero it before first use, free(mem) after. */
struct dlc_resize_ws {
	void *mem;
	size_t cap;
};

int dlc_resize_rgb_ws(struct dlc_resize_ws *ws, const uint8_t *src,
		      uint32_t src_w, uint32_t src_h, size_t src_stride,
		      const struct dlc_crop *box, uint32_t out_w,
		      uint32_t out_h, uint32_t layout, uint8_t *dst);

/*
 * The kernels behind dlc_resize_rgb_ws(), chosen explicitly so that the
 * tests can hold the SIMD ones to the portable C ones byte for byte.
 */
enum dlc_resize_path {
	DLC_RESIZE_BEST,	/* what dlc_resize_rgb_ws() runs on this CPU */
	DLC_RESIZE_C,		/* portable C only */
	DLC_RESIZE_AVX2,	/* AVX2; -EOPNOTSUPP on a CPU without it */
};

int dlc_resize_rgb_ws_path(struct dlc_resize_ws *ws, const uint8_t *src,
			   uint32_t src_w, uint32_t src_h, size_t src_stride,
			   const struct dlc_crop *box, uint32_t out_w,
			   uint32_t out_h, uint32_t layout, uint8_t *dst,
			   uint32_t path);

#endif
