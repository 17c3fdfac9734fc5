// SPDX-License-Identifier: MIT
/*
 * Decoded forms (forms.h): the choice of form, and the hand-over of the
 * forms decoders make to the I/O thread, which offers them to the cache.
 *
 * What it optimises. A cached sample saves work at its next use: its
 * encoded bytes save the read, its decoded form the read and most of
 * the decode (a sample from a form is a resize: 6-8x cheaper than an
 * exact decode, at 8-18x the bytes; benchmarks.md). Only the work of
 * the loader's bottleneck shortens an epoch, so the saving that counts
 * per byte is the bottleneck's:
 *
 *   decode-bound:  an encoded entry saves a read nobody waits for: ~0;
 *                  a form saves its decode. Forms win, every sample.
 *   storage-bound: both save the same read; the encoded bytes do it in
 *                  1/8 to 1/18 of the bytes. Encoded wins, every sample.
 *
 * So the choice is per regime, and the regime is measured over the
 * loader's pace windows (window.h, 250 ms): the decoders' time idle
 * while samples they would decode are still being read
 * (decode_starved_ns), and the storage's busy time (io_busy_ns: a read
 * in flight). A window where the storage was busy over 80 % of the time
 * and the decoders starved over 15 % of theirs is
 * storage-bound; one where the storage was busy under 50 %, or under 80 %
 * with the decoders starved under 3 %, decode-bound. Storage busy over
 * 80 % with the decoders fed is the knee, where both limit the loader:
 * neither, the regime stays. There, forms pinned over encoded bytes
 * would turn hits into reads the storage has no time for (measured at
 * 100 MB/s with the cache half the set: forms 0.71x of encoded only
 * when the knee counted as decode-bound). Four storage-bound windows in
 * a row make new entries encoded, and forms ranked by next use with the
 * rest; two decode-bound ones in a row make them forms, pinned. Until
 * then nothing is made. (The starved time alone flips the regime back
 * and forth where read-ahead buffers slow storage: measured, that cost a
 * quarter of the throughput at 40 MB/s.)
 *
 * Which samples: decode-bound, forms are pinned in cache.c (evicted only
 * by a form worth twice as much per byte, so a form made once is hit
 * every later epoch) and a form is made only while the forms held,
 * queued and promised fit the cache with it, or would with forms worth
 * half as much per byte taken out (by the decode time last measured for
 * its sample, value_us()); it then evicts encoded bytes by next use.
 * Storage-bound, no form is made, and those held are ranked by next use
 * with the rest. How far this is from the best choice is in library.md
 * (test_forms_opt).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cache.h"
#include "dlcache.h"
#include "forms.h"
#include "image.h"

enum { FORMS_UNDECIDED, FORMS_DECODE_BOUND, FORMS_STORAGE_BOUND };

/*
 * Windows in a row that flip the regime: storage-bound takes a second (a
 * loader filling its pipeline starves its decoders for a while on any
 * storage), decode-bound half of one (no forms are made before).
 */
#define STORAGE_WINDOWS	4
#define DECODE_WINDOWS	2

int dlc_forms_init(struct dlc_forms *f, uint32_t mode, uint32_t n,
		   uint32_t qcap, uint64_t inflight_max)
{
	memset(f, 0, sizeof(*f));
	f->mode = mode;
	f->n = n;
	f->qcap = qcap;
	f->inflight_max = inflight_max;
	f->ratio16 = 8 * 16;	/* small photographs' 8x, until measured */
	/* auto: nothing is made until the regime is measured */
	f->regime = mode == DLC_FORMS_AUTO ? FORMS_UNDECIDED :
		    FORMS_DECODE_BOUND;
	f->dec_us = calloc(n, sizeof(*f->dec_us));
	f->q = calloc(qcap, sizeof(*f->q));
	if (!f->dec_us || !f->q) {
		dlc_forms_fini(f);
		return -ENOMEM;
	}
	return 0;
}

void dlc_forms_fini(struct dlc_forms *f)
{
	while (f->q && f->qlen) {
		dlc_buf_put(f->q[f->qhead].b);
		f->qhead = (f->qhead + 1) % f->qcap;
		f->qlen--;
	}
	free(f->q);
	free(f->dec_us);
	f->q = NULL;
	f->dec_us = NULL;
}

/*
 * dec_us: a sample's decode the way a hit replaces it, in us; with
 * DEC_WHOLE, only its whole decode (the form's making) is known, which
 * costs more than the crop-first decode a hit replaces.
 */
#define DEC_WHOLE	(1U << 31)

/*
 * The decode a hit on sample @id's form saves, us, as last measured (a
 * whole decode when that is all that was: it overstates the crop-first
 * decode a hit replaces, so forms made are ranked a little above the
 * samples that would displace them); 0: never decoded. Any thread.
 */
static uint32_t value_us(struct dlc_forms *f, uint32_t id)
{
	return id < f->n ? __atomic_load_n(&f->dec_us[id], __ATOMIC_RELAXED) &
			   ~DEC_WHOLE : 0;
}

uint64_t dlc_form_bytes(const struct dlc_buf *enc)
{
	uint32_t w, h;

	if (!enc || enc->form_w ||
	    dlc_image_dims(enc->data, enc->len, &w, &h))
		return 0;
	return (uint64_t)w * h * 3;
}

/*
 * Whether a form of @enc_bytes encoded, @form_bytes decoded (0: not
 * known), may be wanted now, but for the cache's say: decode-bound, room
 * in the queue. Its estimate in *@e: @form_bytes, else by the ratio
 * measured (one for all samples: a JPEG's form is 5-25x its bytes by
 * its quality and content, a PPM's 1x).
 */
static int forms_may_want(const struct dlc_forms *f, uint64_t enc_bytes,
			  uint64_t form_bytes, uint64_t *e)
{
	*e = form_bytes ? form_bytes : enc_bytes * f->ratio16 / 16;
	return f->regime == FORMS_DECODE_BOUND && f->qlen < f->qcap &&
	       *e <= UINT32_MAX && f->inflight + *e <= f->inflight_max;
}

int dlc_forms_want(struct dlc_forms *f, struct dlc_cache *c,
		   uint32_t id, uint64_t enc_bytes, uint64_t form_bytes,
		   uint32_t *est)
{
	uint64_t e;

	if (!forms_may_want(f, enc_bytes, form_bytes, &e) ||
	    !dlc_cache_would_keep(c, id, e + f->inflight + f->promised,
				  e ? (double)value_us(f, id) / (double)e : 0))
		return 0;
	f->promised += e;
	*est = (uint32_t)e;
	return 1;
}

int dlc_forms_want_room(struct dlc_forms *f, uint64_t room,
			uint64_t enc_bytes, uint64_t form_bytes, uint32_t *est)
{
	uint64_t e;

	if (!forms_may_want(f, enc_bytes, form_bytes, &e) ||
	    e + f->inflight + f->promised > room)
		return 0;
	f->promised += e;
	*est = (uint32_t)e;
	return 1;
}

void dlc_forms_unwant(struct dlc_forms *f, uint32_t est)
{
	f->promised -= est < f->promised ? est : f->promised;
}

void dlc_forms_made(struct dlc_forms *f, uint32_t id, uint32_t est,
		    struct dlc_buf *b, uint64_t enc_bytes)
{
	uint64_t r;
	struct dlc_form_made *m;

	dlc_forms_unwant(f, est);
	if (!b)
		return;
	r = enc_bytes ? b->len * 16 / enc_bytes : 0;
	/* The first measured ratio replaces the guess; later ones average. */
	if (r && r < 1000 * 16)
		f->ratio16 = !f->made ? (uint32_t)r :
			     f->ratio16 - f->ratio16 / 8 + (uint32_t)(r / 8);
	__atomic_fetch_add(&f->made, 1, __ATOMIC_RELAXED);
	if (f->qlen == f->qcap || f->inflight + b->len > f->inflight_max) {
		__atomic_fetch_add(&f->refused, 1, __ATOMIC_RELAXED);
		dlc_buf_put(b);
		return;
	}
	m = &f->q[(f->qhead + f->qlen) % f->qcap];
	m->id = id;
	m->b = b;
	f->inflight += b->len;
	f->qlen++;
}

static int offer_to_cache(void *c, uint32_t id, struct dlc_buf *b,
			  uint32_t us)
{
	return dlc_cache_offer_form(c, id, b, us);
}

int dlc_forms_offer(struct dlc_forms *f, struct dlc_cache *c,
		    pthread_mutex_t *lock)
{
	return dlc_forms_offer_to(f, offer_to_cache, c, lock);
}

int dlc_forms_offer_to(struct dlc_forms *f,
		       int (*take)(void *arg, uint32_t id, struct dlc_buf *b,
				   uint32_t value_us),
		       void *arg, pthread_mutex_t *lock)
{
	struct dlc_form_made m;
	int any = 0;

	pthread_mutex_lock(lock);
	while (f->qlen) {
		m = f->q[f->qhead];
		f->qhead = (f->qhead + 1) % f->qcap;
		f->qlen--;
		pthread_mutex_unlock(lock);
		if (!take(arg, m.id, m.b, value_us(f, m.id)))
			__atomic_fetch_add(&f->refused, 1, __ATOMIC_RELAXED);
		dlc_buf_put(m.b);
		any = 1;
		pthread_mutex_lock(lock);
		f->inflight -= m.b->len;
	}
	pthread_mutex_unlock(lock);
	return any;
}

void dlc_forms_window(struct dlc_forms *f, struct dlc_cache *c,
		      const struct dlc_window_shares *w)
{
	uint32_t was = f->regime, now_regime;

	if (f->mode != DLC_FORMS_AUTO)
		return;
	if (w->busy > 800 && w->starved > 150) {
		f->run_storage++;
		f->run_decode = 0;
	} else if (w->busy < 500 || (w->starved < 30 && w->busy < 800)) {
		f->run_decode++;
		f->run_storage = 0;
	}
	now_regime = f->run_storage >= STORAGE_WINDOWS ? FORMS_STORAGE_BOUND :
		     f->run_decode >= DECODE_WINDOWS ? FORMS_DECODE_BOUND : was;
	if (now_regime != was) {
		__atomic_store_n(&f->regime, now_regime, __ATOMIC_RELAXED);
		if (c)
			dlc_cache_pin_forms(c, now_regime == FORMS_DECODE_BOUND);
	}
}

void dlc_forms_stats(const struct dlc_forms *f, struct dlc_stats *st)
{
	st->form_hits = __atomic_load_n(&f->hits, __ATOMIC_RELAXED);
	st->forms_made = __atomic_load_n(&f->made, __ATOMIC_RELAXED);
	st->forms_refused = __atomic_load_n(&f->refused, __ATOMIC_RELAXED);
	st->form_saved_ns = __atomic_load_n(&f->saved_ns, __ATOMIC_RELAXED);
	/* 0 until measured; 1 forms, 2 encoded bytes */
	st->forms_regime = f->mode != DLC_FORMS_AUTO ? 1 :
			   __atomic_load_n(&f->regime, __ATOMIC_RELAXED);
}

static uint32_t dec_us_of(uint64_t ns)
{
	uint64_t us = ns / 1000;

	return us >= DEC_WHOLE ? DEC_WHOLE - 1 : (uint32_t)us;
}

void dlc_forms_note_decode(struct dlc_forms *f, uint32_t id, uint64_t ns)
{
	if (id >= f->n)
		return;
	__atomic_store_n(&f->dec_us[id], dec_us_of(ns), __ATOMIC_RELAXED);
	__atomic_fetch_add(&f->dec_n, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&f->dec_ns, ns, __ATOMIC_RELAXED);
}

void dlc_forms_note_whole(struct dlc_forms *f, uint32_t id, uint64_t ns)
{
	uint32_t none = 0;

	/* A decode measured the way a hit replaces it stays. */
	if (id < f->n)
		__atomic_compare_exchange_n(&f->dec_us[id], &none,
					    dec_us_of(ns) | DEC_WHOLE, 0,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

void dlc_forms_note_hit(struct dlc_forms *f, uint32_t id, uint64_t ns)
{
	uint64_t dec, n;
	uint32_t us;

	__atomic_fetch_add(&f->hits, 1, __ATOMIC_RELAXED);
	if (id >= f->n)
		return;
	us = __atomic_load_n(&f->dec_us[id], __ATOMIC_RELAXED);
	dec = (uint64_t)(us & ~DEC_WHOLE) * 1000;
	n = __atomic_load_n(&f->dec_n, __ATOMIC_RELAXED);
	/*
	 * Only its whole decode known: the mean of the decodes measured
	 * the way a hit replaces them, where there are any, is the better
	 * estimate (the whole decode overstates the saving).
	 */
	if ((us & DEC_WHOLE) && n)
		dec = __atomic_load_n(&f->dec_ns, __ATOMIC_RELAXED) / n;
	if (dec > ns)
		__atomic_fetch_add(&f->saved_ns, dec - ns, __ATOMIC_RELAXED);
}

#define FORM_MAGIC	0x464d4c44U	/* "DLMF" */

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

void dlc_form_seal(struct dlc_buf *b)
{
	uint8_t *t = b->data + b->len;

	put_le32(t, FORM_MAGIC);
	put_le32(t + 4, b->form_w);
	put_le32(t + 8, b->form_h);
	put_le32(t + 12, 0);
}

int dlc_form_unseal(struct dlc_buf *b, uint64_t got, uint64_t max_pixels)
{
	const uint8_t *t;
	uint32_t w, h;

	if (got < DLC_FORM_TRAILER || got > b->len)
		return -EBADMSG;
	t = b->data + got - DLC_FORM_TRAILER;
	w = get_le32(t + 4);
	h = get_le32(t + 8);
	/* The module's bytes are checked before they are believed. */
	if (get_le32(t) != FORM_MAGIC || get_le32(t + 12) || !w || !h ||
	    (uint64_t)w * h > max_pixels ||
	    (uint64_t)w * h * 3 != got - DLC_FORM_TRAILER)
		return -EBADMSG;
	b->form_w = w;
	b->form_h = h;
	b->len = got - DLC_FORM_TRAILER;
	return 0;
}
