/* SPDX-License-Identifier: MIT */
/*
 * Images other than JPEG: PNG, WebP, BMP, PPM/PGM/PBM and TIFF, the rest
 * of what torchvision's ImageFolder reads. Each is sniffed by its first
 * bytes and decoded whole to 8-bit RGB, to the pixels of Pillow's
 * Image.open(f).convert("RGB") (image.c; one file per format). The
 * decoder (decode.c) then crops and resizes them as it does a JPEG
 * decoded at scale 1: crop-first is JPEG's alone.
 *
 * Internal to libdlcache; the public face is dlcache.h.
 */
#ifndef DLC_IMAGE_H
#define DLC_IMAGE_H

#include <stddef.h>
#include <stdint.h>

enum dlc_image_format {
	DLC_IMG_UNKNOWN = 0,
	DLC_IMG_JPEG,
	DLC_IMG_PNG,
	DLC_IMG_WEBP,
	DLC_IMG_BMP,
	DLC_IMG_PNM,
	DLC_IMG_TIFF,
};

/*
 * One whole-image decode. The caller sets max_pixels (and may hand in a
 * buffer in rgb/cap, which the decode grows with realloc and the caller
 * keeps, freed or not); the decode sets the rest.
 */
struct dlc_image {
	uint64_t max_pixels;	/* caller: over it, DLC_ERR_TOO_LARGE */
	uint64_t budget_ns;	/* caller: thread CPU time a decode may take, 0: none */
	uint64_t wall_start_ns;	/* caller: dlc_now_ns() at the start */
	uint64_t cpu_start_ns;	/* caller: dlc_thread_cpu_ns() at the start */
	uint8_t *rgb;		/* decode: width * height * 3, rows packed */
	size_t cap;		/* decode: bytes rgb holds */
	uint32_t width;		/* decode */
	uint32_t height;	/* decode */
	uint32_t kind;		/* decode: enum dlc_error_kind of a failure */
	char msg[256];		/* decode: why it failed, naming the format */
};

/* The format of the @len bytes at @buf by their magic; DLC_IMG_UNKNOWN. */
enum dlc_image_format dlc_image_sniff(const uint8_t *buf, size_t len);
/*
 * The pixel size of the image at @buf, @len (any format: JPEG's too) from
 * its header alone (dims.c), without decoding it: 0, -ENOENT for no known
 * format, or -EBADMSG for a header too short or not well formed. A
 * header's word only: its decode may still fail, or refuse the size.
 */
int dlc_image_dims(const uint8_t *buf, size_t len, uint32_t *width,
		   uint32_t *height);
/* "PNG", "WebP", ...: for messages. */
const char *dlc_image_format_name(enum dlc_image_format f);

/*
 * Decode the image at @buf, @len (any format but JPEG) into im->rgb.
 * 0, or -errno with im->kind and im->msg set: -EBADMSG (DLC_ERR_NOT_JPEG
 * for no format known, DLC_ERR_CORRUPT, DLC_ERR_TRUNCATED), -E2BIG
 * (DLC_ERR_TOO_LARGE: over max_pixels or the CPU budget), -ENOMEM
 * (DLC_ERR_NOMEM). Nothing is printed.
 */
int dlc_image_decode(struct dlc_image *im, const uint8_t *buf, size_t len);

/* The formats, each in its own file; the same contract. */
int dlc_png_decode(struct dlc_image *im, const uint8_t *buf, size_t len);
int dlc_webp_decode(struct dlc_image *im, const uint8_t *buf, size_t len);
int dlc_bmp_decode(struct dlc_image *im, const uint8_t *buf, size_t len);
int dlc_pnm_decode(struct dlc_image *im, const uint8_t *buf, size_t len);
int dlc_tiff_decode(struct dlc_image *im, const uint8_t *buf, size_t len);

/* ---- for the format files (imageout.c) ---- */

/* Set im->kind and im->msg; returns @err. */
__attribute__((format(printf, 4, 5)))
int dlc_image_fail(struct dlc_image *im, uint32_t kind, int err,
		   const char *fmt, ...);
/*
 * Size im->rgb for @w x @h after checking them: zero sides are corrupt,
 * over max_pixels too large (both with the format's name @fmt in the
 * message). Sets width and height. 0 or -errno as dlc_image_decode().
 */
int dlc_image_alloc(struct dlc_image *im, const char *fmt, uint32_t w,
		    uint32_t h);
/*
 * Call between rows: -E2BIG (DLC_ERR_TOO_LARGE) once the thread has spent
 * im->budget_ns of CPU time since the start (dlc_over_cpu_budget(): no
 * system call before the budget has passed in wall time), else 0.
 */
int dlc_image_check_budget(struct dlc_image *im, const char *fmt);

#endif
