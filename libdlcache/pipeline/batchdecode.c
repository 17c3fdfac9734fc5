// SPDX-License-Identifier: MIT
/*
 * The decode of a queued sample into its batch slot (loader_int.h's
 * loader_decode_next()), by a decode worker or by the I/O thread when
 * decode is behind: the checks a sample's bytes pass, the decode of a
 * file, a restart-indexed JPEG or a pack's record, a substitute under
 * DLC_ON_ERROR_SKIP, the slot's bookkeeping, and the error records.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "forms.h"
#include "jpegrst.h"
#include "loader_int.h"

/* ------------------------------------------------------------------ */
/* Errors                                                              */

static uint32_t read_error_kind(int err)
{
	switch (err) {
	case -ENOENT:
		return DLC_ERR_MISSING;
	case -EFBIG:
		return DLC_ERR_TOO_LARGE;
	case -ENOMEM:
		return DLC_ERR_NOMEM;
	case -EBADMSG:
		return DLC_ERR_CORRUPT;	/* failed the crc32c check */
	default:
		return DLC_ERR_IO;
	}
}

/* Count and log a failed sample; remember it as the last error. */
static void note_error(struct dlc_loader *l, uint32_t id, uint32_t kind,
		       int err, const char *msg, const char *action)
{
	struct dlc_error_info e;

	memset(&e, 0, sizeof(e));
	e.sample = id;
	e.kind = kind;
	e.err = err;
	dlc_source_name(l->src, id, e.path, sizeof(e.path));
	snprintf(e.msg, sizeof(e.msg), "%s", msg);
	dlc_stat_add(l->stats.errors, 1);
	dlc_stat_add(l->stats.errors_by_kind[kind < DLC_ERR_KINDS ? kind : 0], 1);
	dlc_logf(&l->log, l->cfg.on_error == DLC_ON_ERROR_FAIL ?
		 DLC_LOG_ERROR : DLC_LOG_WARN,
		 "sample %u (%s): %s: %s; %s", id, e.path,
		 dlc_error_kind_name(kind), msg, action);
	pthread_mutex_lock(&l->lock);
	l->last_err = e;
	l->have_err = 1;
	pthread_mutex_unlock(&l->lock);
}

/* ------------------------------------------------------------------ */
/* Decode                                                              */

/*
 * Where sample @i of @s goes. Read without l->lock by a decoder: s->b.data
 * only changes while the slot is HELD (a keep, under l->lock), and a slot
 * is claimed and its samples queued and popped under l->lock after that.
 */
static uint8_t *slot_sample(struct dlc_loader *l, struct batch_slot *s, uint32_t i)
{
	return s->b.data + (size_t)i * l->sample_bytes;
}

/* Whether @buf is sample @id's as the index recorded them: size and CRC-32C. */
static int index_bytes(const struct dlc_loader *l, uint32_t id,
		       const struct dlc_buf *buf)
{
	uint32_t want;

	return !dlc_index_crc32c(l->idx, id, &want) &&
	       buf->len == dlc_index_size(l->idx, id) &&
	       dlc_buf_crc_matches(buf, want);
}

/* Record that sample @id decoded whole (DLC_VALIDATE_ONCE's bit). */
static void mark_checked(struct dlc_loader *l, uint32_t id)
{
	__atomic_fetch_or(&l->checked[id / 8], (uint8_t)(1U << (id % 8)),
			  __ATOMIC_RELAXED);
}

/*
 * Whether sample @id's bytes @buf must be decoded whole (enum
 * dlc_validate). Under ONCE they need not when this loader has decoded
 * sample @id whole before and the bytes are those the index recorded
 * (its crc32c), as they were then; *@mark says to record a success.
 */
static int must_check(struct dlc_loader *l, uint32_t id,
		      const struct dlc_buf *buf, int *mark)
{
	*mark = 0;
	if (l->validate != DLC_VALIDATE_ONCE)
		return l->validate == DLC_VALIDATE_ALWAYS;
	if (!index_bytes(l, id, buf))
		return 1;
	if (__atomic_load_n(&l->checked[id / 8], __ATOMIC_RELAXED) &
	    (1U << (id % 8)))
		return 0;
	*mark = 1;
	return 1;
}

/*
 * A pack's restart-indexed sample (@g, @rows): only the MCUs under its
 * crop are decoded. The bytes' CRC-32C, checked against the pack's record
 * on every decode unless validation is off, stands for the whole-file
 * check: the pack's writer made them from a file that decoded whole, and
 * a decode of the crop's intervals catches damage there as any decode
 * does.
 */
static int decode_rst(struct dlc_loader *l, struct dlc_decoder *dec,
		      uint32_t epoch, uint32_t id, const struct dlc_buf *buf,
		      const struct dlc_rst_geom *g, const uint32_t *rows,
		      uint8_t *dst, uint32_t *kind, const char **msg)
{
	int ret;

	if (l->validate != DLC_VALIDATE_OFF) {
		if (!index_bytes(l, id, buf)) {
			*kind = DLC_ERR_CORRUPT;
			*msg = "corrupt pack: the sample's bytes do not match the crc32c of its record";
			return -EBADMSG;
		}
		dlc_stat_add(l->stats.validated, 1);
	}
	ret = dlc_decoder_sample_rst(dec, buf->data, buf->len, g, rows,
				     &l->cfg.transform, l->cfg.seed, epoch, id,
				     l->cfg.layout, dst, NULL);
	if (ret) {
		*kind = dlc_decoder_error_kind(dec);
		*msg = dlc_decoder_error(dec);
	}
	return ret;
}

/* decode_one() of a pack's sample: restart-indexed, or 0 for plain. */
static __attribute__((noinline)) int
decode_pack(struct dlc_loader *l, struct dlc_decoder *dec, uint32_t epoch,
	    uint32_t id, const struct dlc_buf *buf, uint8_t *dst,
	    uint32_t *kind, const char **msg, int *done)
{
	/* 32 KiB: decode threads have the default stack (8 MiB). */
	uint32_t rows[DLC_RST_MAX_ROWS + 1];
	struct dlc_rst_geom g;

	*done = dlc_source_rst(l->src, id, &g, rows);
	if (!*done)
		return 0;
	return decode_rst(l, dec, epoch, id, buf, &g, rows, dst, kind, msg);
}

/* Sample @id from @form, its decoded form: a resize, no decode. */
static int from_form(struct dlc_loader *l, struct dlc_decoder *dec,
		     uint32_t epoch, uint32_t id, const struct dlc_buf *form,
		     uint8_t *dst, uint32_t *kind, const char **msg)
{
	uint64_t t0 = dlc_now_ns();
	int ret;

	ret = dlc_decoder_sample_rgb(dec, form->data, form->form_w,
				     form->form_h, &l->cfg.transform,
				     l->cfg.seed, epoch, id, l->cfg.layout,
				     dst, NULL);
	if (ret) {
		*kind = dlc_decoder_error_kind(dec);
		*msg = dlc_decoder_error(dec);
		return ret;
	}
	if (l->forms)
		dlc_forms_note_hit(l->forms, id, dlc_now_ns() - t0);
	return 0;
}

/* Decode @buf as sample @id into @dst; kind/msg describe a failure. */
static int decode_one(struct dlc_loader *l, struct dlc_decoder *dec,
		      uint32_t epoch, uint32_t id, const struct dlc_buf *buf,
		      uint8_t *dst, uint32_t *kind, const char **msg)
{
	uint64_t t0 = dlc_now_ns();
	int ret, mark, check, done = 0;

	/* Its owner decoded it for this use (cluster mode, peer_prepare.c). */
	if (buf->prepared) {
		if (buf->len != l->sample_bytes) {
			*kind = DLC_ERR_IO;
			*msg = "a prepared answer not a sample's size";
			return -EBADMSG;
		}
		memcpy(dst, buf->data, buf->len);
		return 0;
	}
	if (buf->form_w)
		return from_form(l, dec, epoch, id, buf, dst, kind, msg);
	if (dlc_source_pack(l->src)) {
		ret = decode_pack(l, dec, epoch, id, buf, dst, kind, msg,
				  &done);
		if (done) {
			dlc_stat_add(l->stats.decode_ns, dlc_now_ns() - t0);
			if (!ret) {
				dlc_stat_add(l->stats.decoded, 1);
				if (l->forms)
					dlc_forms_note_decode(l->forms, id,
							      dlc_now_ns() - t0);
			}
			return ret;
		}
	}
	check = must_check(l, id, buf, &mark);

	ret = dlc_decoder_sample_method(dec, buf->data, buf->len,
					&l->cfg.transform, l->cfg.seed, epoch,
					id, l->cfg.layout,
					check ? DLC_DECODE_CROP_FIRST :
					DLC_DECODE_CROP_FIRST_UNCHECKED, dst,
					NULL);
	dlc_stat_add(l->stats.decode_ns, dlc_now_ns() - t0);
	if (check)
		dlc_stat_add(l->stats.validated, 1);
	if (ret) {
		*kind = dlc_decoder_error_kind(dec);
		*msg = dlc_decoder_error(dec);
		return ret;
	}
	if (mark)
		mark_checked(l, id);
	dlc_stat_add(l->stats.decoded, 1);
	if (l->forms)
		dlc_forms_note_decode(l->forms, id, dlc_now_ns() - t0);
	return 0;
}

/*
 * A form's pixels: a pooled buffer (buf.c), so that the memory of the
 * forms the cache lets go is the next forms', not fresh pages again.
 */
static uint8_t *form_alloc(void *arg, size_t bytes)
{
	struct dlc_buf **b = arg;

	/* Room for the trailer dlcache.ko's copy carries (forms.h). */
	*b = dlc_buf_alloc_io(bytes + DLC_FORM_TRAILER, 0);
	if (!*b)
		return NULL;
	(*b)->len = bytes;
	return (*b)->data;
}

static void form_release(void *arg, uint8_t *mem)
{
	struct dlc_buf **b = arg;

	(void)mem;
	dlc_buf_put(*b);
	*b = NULL;
}

/*
 * The decode of sample @id that makes its form (forms.h): the whole
 * image at scale 1, kept, and the sample resized from it into @dst,
 * bit-identical to the exact decode. The whole decode reads the file to
 * its end, so it checks the bytes as DLC_DECODE_CROP_FIRST does; a
 * pack's are first checked against its record's CRC-32C, as
 * decode_rst() does. 0 when @dst holds the sample; else nothing was
 * made, and the caller decodes as usual (and reports what fails).
 */
static int make_form(struct dlc_loader *l, struct dlc_decoder *dec,
		     uint32_t epoch, uint32_t id, const struct dlc_buf *buf,
		     uint8_t *dst, struct dlc_buf **out)
{
	uint64_t t0 = dlc_now_ns();
	struct dlc_buf *form = NULL;
	const struct dlc_rgb_alloc a = { form_alloc, form_release, &form };
	uint32_t w, h;
	uint8_t *rgb;

	*out = NULL;
	if (dlc_source_pack(l->src) && l->validate != DLC_VALIDATE_OFF &&
	    !index_bytes(l, id, buf))
		return -EBADMSG;
	if (dlc_decoder_full_to(dec, buf->data, buf->len, &a, &rgb, &w, &h)) {
		dlc_buf_put(form);
		return -EBADMSG;
	}
	form->form_w = w;
	form->form_h = h;
	if (dlc_decoder_sample_rgb(dec, rgb, w, h, &l->cfg.transform,
				   l->cfg.seed, epoch, id, l->cfg.layout, dst,
				   NULL)) {
		dlc_buf_put(form);
		return -EINVAL;
	}
	dlc_stat_add(l->stats.decode_ns, dlc_now_ns() - t0);
	dlc_stat_add(l->stats.decoded, 1);
	dlc_stat_add(l->stats.validated, 1);
	if (l->validate == DLC_VALIDATE_ONCE)
		mark_checked(l, id);
	dlc_forms_note_whole(l->forms, id, dlc_now_ns() - t0);
	*out = form;
	return 0;
}

/*
 * make_form() of queued @it into @dst, and what it made handed to the
 * forms (a failure too: its promised bytes go back). 0 when @dst holds
 * the sample.
 */
static int decode_making_form(struct dlc_loader *l, struct dlc_decoder *dec,
			      uint32_t epoch, const struct decode_item *it,
			      uint8_t *dst)
{
	struct dlc_buf *form;
	int ret;

	ret = make_form(l, dec, epoch, it->sample, it->buf, dst, &form);
	pthread_mutex_lock(&l->lock);
	dlc_forms_made(l->forms, it->sample, it->form_est, form, it->buf->len);
	pthread_mutex_unlock(&l->lock);
	return ret;
}

/*
 * A decode of ours took @ns: into the running mean guest.c's reclaim
 * goes by (a guest's starved decodes stay out of it). Decoders race on
 * it: a lost update only ages the mean a little less.
 */
static void note_decode_time(struct dlc_loader *l, uint64_t ns)
{
	uint64_t m = __atomic_load_n(&l->decode_mean_ns, __ATOMIC_RELAXED);

	m = m ? m - m / 8 + ns / 8 : ns;
	__atomic_store_n(&l->decode_mean_ns, m, __ATOMIC_RELAXED);
}

/* Try other samples in the slot of a failed one; 0 when one worked. */
static int substitute(struct dlc_loader *l, struct dlc_decoder *dec,
		      uint32_t epoch, struct decode_item *it, struct batch_slot *s)
{
	uint32_t k;

	for (k = 1; k <= 16 && k < l->n; k++) {
		uint32_t alt = (it->sample + k) % l->n, kind;
		struct dlc_buf *b = NULL;
		const char *msg;
		int ret;

		if (dlc_source_read(l->src, alt, l->cfg.max_file_bytes, &b))
			continue;
		ret = decode_one(l, dec, epoch, alt, b, slot_sample(l, s, it->index),
				 &kind, &msg);
		dlc_buf_put(b);
		if (ret)
			continue;
		s->b.ids[it->index] = alt;
		s->b.labels[it->index] = dlc_index_label(l->idx, alt);
		return 0;
	}
	return -ENOENT;
}

/* Called with l->lock held: one sample of @s is done. */
static void finish_sample(struct dlc_loader *l, struct batch_slot *s)
{
	uint32_t i, w = 0;

	l->outstanding--;
	if (l->io_idle) {
		l->io_idle = 0;
		dlc_reader_wake(l->reader);
	}
	if (l->outstanding == 0)
		pthread_cond_broadcast(&l->idle_cv);
	if (--s->pending)
		return;
	if (s->b.errors && l->cfg.on_error != DLC_ON_ERROR_FAIL) {
		for (i = 0; i < s->want; i++) {
			if (s->skip[i])
				continue;
			if (w != i) {
				memmove(slot_sample(l, s, w), slot_sample(l, s, i),
					l->sample_bytes);
				s->b.labels[w] = s->b.labels[i];
				s->b.ids[w] = s->b.ids[i];
			}
			w++;
		}
		s->b.count = w;
	}
	s->state = SLOT_READY;
	pthread_cond_broadcast(&l->ready_cv);
}

/*
 * Called with l->lock held: the sample of @it, issued in generation @gen,
 * is done, with @ret its fatal error (0: decoded, skipped or substituted).
 */
static void item_done(struct dlc_loader *l, const struct decode_item *it,
		      uint64_t gen, int ret)
{
	struct batch_slot *s = &l->slots[it->slot];

	if (gen == l->gen) {
		if (ret && !s->err)
			s->err = ret;
		if (s->skip[it->index] || ret ||
		    s->b.ids[it->index] != it->sample)
			s->b.errors++;
	}
	finish_sample(l, s);
}

static void process_item(struct dlc_loader *l, struct dlc_decoder *dec,
			 struct decode_item *it, uint32_t epoch, uint64_t gen)
{
	struct batch_slot *s = &l->slots[it->slot];
	const char *msg = it->why;
	uint32_t kind;
	int ret;

	if (it->buf) {
		uint64_t t0 = dlc_now_ns();

		ret = -1;
		if (it->make_form && l->forms && !it->buf->form_w)
			ret = decode_making_form(l, dec, epoch, it,
						 slot_sample(l, s, it->index));
		if (ret)
			ret = decode_one(l, dec, epoch, it->sample, it->buf,
					 slot_sample(l, s, it->index), &kind,
					 &msg);
		note_decode_time(l, dlc_now_ns() - t0);
		dlc_buf_put(it->buf);
	} else {
		ret = it->err;
		kind = read_error_kind(ret);
		msg = msg ? msg : "read";
	}
	if (ret) {
		char what[256];

		if (!it->buf) {
			snprintf(what, sizeof(what), "%s failed: %s", msg,
				 strerror(-ret));
			msg = what;
		}
		switch (l->cfg.on_error) {
		case DLC_ON_ERROR_SUBSTITUTE:
			note_error(l, it->sample, kind, ret, msg,
				   "substituting another sample");
			if (substitute(l, dec, epoch, it, s) == 0) {
				dlc_stat_add(l->stats.substituted, 1);
				ret = 0;
				break;
			}
			/* Nothing decodable nearby: drop it instead. */
			/* fall through */
		case DLC_ON_ERROR_SKIP:
			if (l->cfg.on_error == DLC_ON_ERROR_SKIP)
				note_error(l, it->sample, kind, ret, msg,
					   "skipping it");
			dlc_stat_add(l->stats.skipped, 1);
			s->skip[it->index] = 1;
			ret = 0;
			break;
		default:
			note_error(l, it->sample, kind, ret, msg,
				   "failing the batch");
			break;
		}
	}

	pthread_mutex_lock(&l->lock);
	item_done(l, it, gen, ret);
	pthread_mutex_unlock(&l->lock);
}

int loader_decode_into(struct dlc_loader *l, struct dlc_decoder *dec,
		       const struct decode_item *it, uint32_t epoch,
		       uint8_t *dst)
{
	const char *msg;
	uint32_t kind;

	if (!it->buf)
		return it->err ? it->err : -EIO;
	return decode_one(l, dec, epoch, it->sample, it->buf, dst, &kind,
			  &msg);
}

int loader_prepare_sample(void *arg, struct dlc_decoder *dec, uint32_t id,
			  uint32_t epoch, const struct dlc_buf *b,
			  uint8_t *dst)
{
	const char *msg;
	uint32_t kind;

	return decode_one(arg, dec, epoch, id, b, dst, &kind, &msg);
}

uint8_t *loader_item_dst(struct dlc_loader *l, const struct decode_item *it)
{
	return slot_sample(l, &l->slots[it->slot], it->index);
}

/* Called with l->lock held. */
void loader_item_decoded(struct dlc_loader *l, const struct decode_item *it,
			 uint64_t gen)
{
	item_done(l, it, gen, 0);
}

/* Called with l->lock held; drops it while decoding. */
void loader_decode_item(struct dlc_loader *l, struct dlc_decoder *dec,
			struct decode_item *it, uint32_t epoch, uint64_t gen)
{
	pthread_mutex_unlock(&l->lock);
	process_item(l, dec, it, epoch, gen);
	pthread_mutex_lock(&l->lock);
}

/* Called with l->lock held; drops it while decoding. */
int loader_decode_next(struct dlc_loader *l, struct dlc_decoder *dec)
{
	struct decode_item it;

	if (!l->qlen)
		return 0;
	it = l->queue[l->qhead];
	l->qhead = (l->qhead + 1) % l->cfg.window;
	l->qlen--;
	loader_decode_item(l, dec, &it, l->epoch, l->gen);
	return 1;
}
