/* SPDX-License-Identifier: MIT */
/*
 * What the JPEG harnesses (fuzz_jpeg*.c) share: one decoder per process
 * with the library's default pixel cap (what a loader uses), small
 * outputs, and the error contract every decode entry point keeps: a
 * failure is -EBADMSG, -E2BIG, -ENOMEM or -EINVAL, and but for -EINVAL
 * it has an error kind and a one-line message.
 */
#ifndef DLC_FUZZ_JPEG_COMMON_H
#define DLC_FUZZ_JPEG_COMMON_H

#include "harness.h"

#include "decode.h"
#include "dlcache.h"
#include "internal.h"

#define OUT_W	32
#define OUT_H	24

static struct dlc_decoder *dec;
static uint8_t out[OUT_W * OUT_H * 3];

static inline void jpeg_init(void)
{
	if (dlc_decoder_create(0, &dec))
		abort();
}

static inline void transform(struct dlc_transform *t, uint32_t kind,
			     uint32_t flags)
{
	dlc_transform_default(t, kind);
	t->out_w = OUT_W;
	t->out_h = OUT_H;
	if (kind == DLC_TRANSFORM_EVAL)
		t->resize = OUT_W + 4;
	t->flags = flags;
}

/* @ret of a decode entry point: its error kept the contract. */
static inline void check_error(int ret)
{
	const char *msg;

	if (!ret || ret == -EINVAL)
		return;
	if (ret != -EBADMSG && ret != -E2BIG && ret != -ENOMEM) {
		fprintf(stderr, "decode returned %d\n", ret);
		abort();
	}
	msg = dlc_decoder_error(dec);
	if (dlc_decoder_error_kind(dec) == DLC_ERR_NONE || !msg || !*msg ||
	    strchr(msg, '\n')) {
		fprintf(stderr, "decode %d: kind %u, message '%s'\n", ret,
			dlc_decoder_error_kind(dec), msg ? msg : "(null)");
		abort();
	}
}

/* A crop inside a @w x @h image, drawn from the input's bytes. */
static inline void crop_from(const uint8_t *data, size_t size, uint32_t w,
			     uint32_t h, struct dlc_crop *c)
{
	uint64_t v = 14695981039346656037ULL;
	size_t i;

	for (i = 0; i < size; i++)
		v = (v ^ data[i]) * 1099511628211ULL;
	memset(c, 0, sizeof(*c));
	c->x = (double)(v % w);
	c->y = (double)((v >> 16) % h);
	c->w = (double)(1 + (v >> 32) % (w - (uint32_t)c->x));
	c->h = (double)(1 + (v >> 48) % (h - (uint32_t)c->y));
	c->flip = (uint32_t)(v >> 63);
}

#endif
