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

/*
 * The general form. The filter sees an image of img_w x img_h and is
 * clipped at its edges (as Pillow at the edges of the image it resizes);
 * the caller's buffer holds only the part of it at (buf_x, buf_y), of
 * buf_w x buf_h pixels, stride bytes a row. The box (Pillow's box=, in
 * image pixels) is resized to full_w x full_h, of which the out_w x out_h
 * window at (win_x, win_y) is computed and written, mirrored when
 * box.flip. In Pillow terms:
 *
 *   img.resize((full_w, full_h), BILINEAR, box=box)
 *      .crop((win_x, win_y, win_x + out_w, win_y + out_h))
 *
 * -EINVAL also when a tap of the window lies outside the buffer.
 */
struct dlc_resize_geom {
	uint32_t img_w, img_h;
	uint32_t buf_x, buf_y;
	uint32_t buf_w, buf_h;
	size_t stride;
	struct dlc_crop box;
	uint32_t full_w, full_h;
	uint32_t win_x, win_y;
	uint32_t out_w, out_h;
};

int dlc_resize_geom(struct dlc_resize_ws *ws, const uint8_t *src,
		    const struct dlc_resize_geom *g, uint32_t layout,
		    uint8_t *dst, uint32_t path);

/*
 * torchvision's eval geometry for an image of @w x @h: Resize(t->resize)
 * gives *nw x *nh, CenterCrop(out) keeps the window at (*left, *top).
 */
void dlc_eval_geometry(const struct dlc_transform *t, uint32_t w, uint32_t h,
		       uint32_t *nw, uint32_t *nh, uint32_t *left,
		       uint32_t *top);

#endif
