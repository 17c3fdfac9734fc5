/* SPDX-License-Identifier: MIT */
/*
 * Restart-indexed JPEGs (jpegrst.c): a lossless transcode of a JPEG into
 * a baseline JPEG with a restart marker every few MCUs, the table of
 * where each MCU row's entropy-coded data starts, and the splice of the
 * restart intervals that cover an MCU-aligned rectangle into a small,
 * valid JPEG of its own. Decoding the splice at DCT scale 1/d gives the
 * same pixels as decoding the whole file at 1/d and cutting out the
 * rectangle, except within one MCU of the rectangle's edges where the
 * chroma upsampling sees the splice's edge (so callers splice a margin of
 * one MCU around what they need).
 *
 * Restart intervals (JPEG, B.2.1): after each RSTm marker the DC
 * predictors are reset and the entropy-coded data is byte aligned, so an
 * interval can be cut out and decoded without what precedes it. An
 * interval holds `interval` MCUs; the transcode picks an interval that
 * divides the MCUs of a row, so every row starts with an interval and a
 * rectangle of whole intervals is a rectangle of MCUs.
 */
#ifndef DLC_JPEGRST_H
#define DLC_JPEGRST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Where a restart-indexed JPEG's parts are, from dlc_rst_parse(). */
struct dlc_rst_geom {
	uint32_t width, height;		/* image, pixels */
	uint32_t mcu_w, mcu_h;		/* one MCU, pixels (8 x 8 for gray) */
	uint32_t mcus_x, mcus_y;	/* MCUs in a row, MCU rows */
	uint32_t interval;		/* MCUs per restart interval; divides mcus_x */
	uint32_t ncomp;			/* components: 1 (gray) or 3 (YCbCr) */
	uint32_t scan_off;		/* first entropy-coded byte, after SOS */
	uint32_t end_off;		/* the EOI marker */
};

/* The most MCU rows dlc_rst_parse() accepts: 65535 / 8 rounded up. */
#define DLC_RST_MAX_ROWS	8192U

/*
 * The interval dlcachectl pack uses unless told: +0 % to +1.2 % in size
 * over the sources and the MCU-exact rate of 1 or 2 MCUs within 3 %
 * (Documentation/design.md, "MCU-exact decode").
 */
#define DLC_RST_DEFAULT_INTERVAL	4U

struct dlc_rst_opts {
	/*
	 * MCUs per restart interval wanted; the largest divisor of the
	 * image's MCUs per row that is not above it is used. 0: one MCU row.
	 */
	uint32_t interval;
	/*
	 * 0: lossless only. Else an image whose longer side is above
	 * @max_side is resized (Pillow's antialiased bilinear) to fit and
	 * re-encoded at @quality: lossy, and the pixels change.
	 */
	uint32_t max_side;
	uint32_t quality;		/* 1..100 for a re-encode; 0: 90 */
};

/*
 * Transcode @in (any JPEG libjpeg-turbo reads: baseline, progressive,
 * arithmetic, 4:2:0, 4:2:2, 4:4:4, gray) into a baseline JPEG with
 * optimized Huffman tables and the restart interval of @o, copying the
 * DCT coefficients and quantization tables (jpeg_read_coefficients ->
 * jpeg_write_coefficients, as jpegtran does), so that a full decode of
 * the result is bit-identical to a full decode of @in. No APPn or COM
 * markers are kept (the decode ignores them).
 *
 * On success *@out is malloc()ed (the caller frees it), *@out_len its
 * length. Errors: -EBADMSG (corrupt or truncated: libjpeg's message in
 * @why), -ENOTSUP (a file the MCU-exact decode cannot serve: CMYK, YCCK,
 * 12-bit, more than 3 components, sampling factors above 2; keep it as
 * it is), -E2BIG (over @max_pixels, or more than DLC_DEFAULT_MAX_SCANS
 * scans), -ENOMEM, -EINVAL. @why (may be
 * NULL) receives a one-line reason for any error.
 */
int dlc_rst_transcode(const uint8_t *in, size_t len,
		      const struct dlc_rst_opts *o, uint64_t max_pixels,
		      uint8_t **out, size_t *out_len, char *why,
		      size_t why_len);

/*
 * Parse a restart-indexed baseline JPEG: its geometry into @g, and into
 * @rows (room for DLC_RST_MAX_ROWS + 1 entries, or NULL) the offset of
 * each MCU row's first interval, rows[mcus_y] = the EOI's offset. Every
 * RSTm marker of the scan is walked and checked (number, count), so a
 * file that passes can be spliced. -EBADMSG with @why for anything else
 * (not baseline, no DRI, an interval that does not divide a row, a
 * marker missing or out of sequence, no EOI).
 */
int dlc_rst_parse(const uint8_t *buf, size_t len, struct dlc_rst_geom *g,
		  uint32_t *rows, const char **why);

/*
 * The largest splice of MCU rows [@my0, @my1) of @buf: its header plus
 * those rows' bytes plus a marker per interval.
 */
size_t dlc_rst_splice_bound(const struct dlc_rst_geom *g,
			    const uint32_t *rows, uint32_t my0, uint32_t my1);

/*
 * Splice MCU columns [@mx0, @mx1) of MCU rows [@my0, @my1) of @buf into
 * @out (@cap bytes): the header (tables copied, SOF sized to the
 * rectangle: to the image's edge when @mx1 == mcus_x or @my1 == mcus_y),
 * then the intervals in raster order with their RST markers renumbered,
 * then EOI. @mx0 is rounded down and @mx1 up to whole intervals. @rows is
 * trusted only as far as it is checked: each interval used must start
 * right after an RSTm (or at scan_off) and end at the next marker, inside
 * @buf; a mismatch is -EBADMSG with @why, never a read outside @buf.
 * Returns the splice's length, -ENOSPC when @cap is short, -EINVAL for a
 * rectangle outside the image. @ox, @oy (may be NULL): the rectangle's
 * corner in the image, pixels.
 */
ssize_t dlc_rst_splice(const uint8_t *buf, size_t len,
		       const struct dlc_rst_geom *g, const uint32_t *rows,
		       uint32_t mx0, uint32_t my0, uint32_t mx1, uint32_t my1,
		       uint8_t *out, size_t cap, uint32_t *ox, uint32_t *oy,
		       const char **why);

#endif /* DLC_JPEGRST_H */
