/* SPDX-License-Identifier: MIT */
/*
 * Decoded forms (forms.c, dlc_config.forms): which form of a sample the
 * in-process cache keeps, its encoded bytes or its whole image decoded at
 * scale 1, chosen from what the loader measures, and the hand-over of a
 * form a decoder made to the I/O thread, which alone touches the cache.
 * Internal to libdlcache; the public face is dlcache.h.
 */
#ifndef DLC_FORMS_H
#define DLC_FORMS_H

#include <pthread.h>
#include <stdint.h>

#include "window.h"

struct dlc_buf;
struct dlc_cache;
struct dlc_stats;

struct dlc_form_made {
	uint32_t id;
	struct dlc_buf *b;	/* the form, its reference the queue's */
};

/*
 * Who owns what: mode, n and the arrays are set at init and read by all;
 * dec_us is written by decoders (relaxed atomics); the queue, inflight,
 * promised and ratio16 are under the loader's lock; the regime's runs
 * are the I/O thread's, the regime itself written by it and read by all
 * (relaxed).
 * The forms a decoder is making are its own until dlc_forms_made(): at
 * most one a decoder, of at most max_pixels each, their estimated bytes
 * counted in promised from dlc_forms_want() on, so that the forms
 * wanted at once fit the cache together.
 */
struct dlc_forms {
	uint32_t mode;			/* DLC_FORMS_AUTO or _DECODED */
	uint32_t n;
	uint32_t *dec_us;		/* per sample: its last decode, us */
	struct dlc_form_made *q;	/* made, not yet offered: a ring */
	uint32_t qcap, qhead, qlen;
	/* form bytes / encoded bytes, x16: for a header that says no size */
	uint32_t ratio16;
	uint64_t inflight;		/* bytes of the forms queued */
	uint64_t promised;		/* estimated bytes of those being made */
	uint64_t inflight_max;
	uint32_t regime;		/* forms.c's FORMS_*: see above */
	uint32_t run_storage, run_decode;	/* windows in a row */
	/* counters, written by their owners, read relaxed by stats */
	uint64_t made, refused, hits, saved_ns;
	/* the decodes a hit replaces, measured: count and time (atomics) */
	uint64_t dec_n, dec_ns;
};

/*
 * A controller in @mode over @n samples, whose queue holds @qcap forms
 * of at most @inflight_max bytes together: 0 or -ENOMEM.
 */
int dlc_forms_init(struct dlc_forms *f, uint32_t mode, uint32_t n,
		   uint32_t qcap, uint64_t inflight_max);
/* Free its arrays and any forms still queued. */
void dlc_forms_fini(struct dlc_forms *f);

/*
 * The bytes of the form the encoded sample @enc would make (its pixels,
 * by its header: dlc_image_dims()), or 0 when its header does not say.
 */
uint64_t dlc_form_bytes(const struct dlc_buf *enc);

/*
 * I/O thread, under the loader's lock: whether to make the decoded form
 * of sample @id (@enc_bytes encoded; its form @form_bytes by
 * dlc_form_bytes(), 0: estimated by the form-to-encoded ratio measured)
 * at its decode: the regime says forms, the queue has room, and cache @c
 * would keep it with the forms queued and promised (in the room of
 * pinned forms worth less per byte, by the decode of @id last measured:
 * dlc_cache_would_keep()). If so, *@est is its estimated bytes, promised
 * until dlc_forms_made() or dlc_forms_unwant() gives them back.
 */
int dlc_forms_want(struct dlc_forms *f, struct dlc_cache *c,
		   uint32_t id, uint64_t enc_bytes, uint64_t form_bytes,
		   uint32_t *est);

/*
 * dlc_forms_want() for a cache that says how many bytes it has free,
 * @room (dlcache.ko: kforms.c), rather than which it would keep.
 */
int dlc_forms_want_room(struct dlc_forms *f, uint64_t room,
			uint64_t enc_bytes, uint64_t form_bytes, uint32_t *est);

/* Under the loader's lock: a wanted form (@est) will not be made. */
void dlc_forms_unwant(struct dlc_forms *f, uint32_t est);

/*
 * A decoder, under the loader's lock: the form @b of sample @id (its
 * reference passed; NULL: making it failed), wanted with @est, from
 * @enc_bytes encoded. Queued for the I/O thread, or dropped (counted
 * refused) when the queue is full.
 */
void dlc_forms_made(struct dlc_forms *f, uint32_t id, uint32_t est,
		    struct dlc_buf *b, uint64_t enc_bytes);

/*
 * I/O thread, without the loader's lock: offer each queued form to @c,
 * under @lock only to pop it. Whether any was taken from the queue.
 */
int dlc_forms_offer(struct dlc_forms *f, struct dlc_cache *c,
		    pthread_mutex_t *lock);
/*
 * dlc_forms_offer() to @take (@arg, the sample, the form, the decode a hit
 * on it saves in us or 0: whether it was kept), which must take its own
 * reference to keep the form.
 */
int dlc_forms_offer_to(struct dlc_forms *f,
		       int (*take)(void *arg, uint32_t id, struct dlc_buf *b,
				   uint32_t value_us),
		       void *arg, pthread_mutex_t *lock);

/*
 * I/O thread, at the end of each of the loader's pace windows
 * (window.h): its shares @w choose the regime again (forms.c); @c's
 * forms are pinned while decode-bound (dlc_cache_pin_forms()); @c NULL:
 * no cache to pin (dlcache.ko).
 */
void dlc_forms_window(struct dlc_forms *f, struct dlc_cache *c,
		      const struct dlc_window_shares *w);

/*
 * A form's bytes where they leave the process (dlcache.ko, kforms.c):
 * its form_w x form_h x 3 pixels, then DLC_FORM_TRAILER bytes that say
 * their shape (magic, width, height, 0), little-endian. Its maker
 * allocates the trailer's room past len (batchdecode.c); kforms.c seals
 * it as the form leaves.
 */
#define DLC_FORM_TRAILER	16
/* Write @b's trailer at data + len. */
void dlc_form_seal(struct dlc_buf *b);
/*
 * @b holds @got bytes of a sealed form: check the trailer against @got
 * and @max_pixels and make @b the form (form_w, form_h, len the pixels).
 * 0, or -EBADMSG: not a form of this shape.
 */
int dlc_form_unseal(struct dlc_buf *b, uint64_t got, uint64_t max_pixels);

/* The controller's counters and regime into @st (a tier's stats op). */
void dlc_forms_stats(const struct dlc_forms *f, struct dlc_stats *st);

/* A decoder: sample @id's decode from its encoded bytes took @ns. */
void dlc_forms_note_decode(struct dlc_forms *f, uint32_t id, uint64_t ns);
/*
 * A decoder: sample @id's whole decode, making its form, took @ns: kept
 * for form_saved_ns only until its crop-first decode is measured.
 */
void dlc_forms_note_whole(struct dlc_forms *f, uint32_t id, uint64_t ns);
/*
 * A decoder: sample @id was served from its form in @ns. form_saved_ns
 * gains its decode less @ns: its crop-first decode as last measured,
 * else the mean of those measured, else its whole decode.
 */
void dlc_forms_note_hit(struct dlc_forms *f, uint32_t id, uint64_t ns);

#endif
