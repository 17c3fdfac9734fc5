// SPDX-License-Identifier: MIT
/*
 * Decoded forms in dlcache.ko (kforms.h). The module keeps a sample's
 * form as a sample of the data set's form set, (key, owner, form 1):
 * this user's own, 0600, charged as any, whose misses take no fill
 * (uapi/dlcache.h, DLCACHE_FEAT_FORMS). Every job of this user on the
 * node shares it, whatever its transform, since a form is the whole
 * image at scale 1 and every decode with forms on is exact.
 *
 * The tier asks the form set first at each use (dlc_kforms_get(): a GET
 * at the use's place in the time line, whose miss completes at once),
 * then the encoded set as before. A form the decoders make is PUT by
 * the I/O thread (dlc_kforms_round()) with a trailer that says its shape,
 * checked on the way back.
 *
 * Which forms are made: forms.c's regime, as in-process. Decode-bound, a
 * form is made only while the module's free bytes hold it with the forms
 * queued and promised, so forms fill room and never push encoded bytes
 * out; the module then ranks them by next use with the rest, as it ranks
 * every data set (no pinning across sessions). Storage-bound, none.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>
#include "../../uapi/dlcache.h"
#include "buf.h"
#include "forms.h"
#include "kclient.h"
#include "kforms.h"
#include "loader_int.h"

/* libdlcache's form 1: the whole image decoded to RGB at scale 1. */
#define KFORM_RGB	1
/*
 * The forms copied out of the module and not yet decoded, in bytes: a
 * use past it is served from the encoded set (a claim runs a window
 * ahead of the decoders, and a form is 8-18x its encoded bytes).
 */
#define COPIES_MAX	(256ULL << 20)
/* How often the module's free bytes are asked for (STATS). */
#define ROOM_NS		100000000ULL
/* user_data of a PUT: the buffer's address | KF_PUT; a GET: KF_GET. */
#define KF_GET		1ULL
#define KF_PUT		2ULL

/*
 * All of it the I/O thread's, but forms (forms.h's rules) and the
 * counters, read under the loader's lock by stats.
 */
struct dlc_kforms {
	struct dlc_loader *l;
	struct dlc_kclient *kc;		/* NULL once closed */
	struct dlc_forms forms;
	/*
	 * Per sample: its form's bytes as last PUT or found, 0: not known to
	 * be held (a GET's miss clears it). Relaxed atomics: the read-ahead
	 * asks under the loader's lock (dlc_kforms_known()).
	 */
	uint32_t *size;
	uint64_t max_pixels;
	uint64_t room;			/* the module's free bytes, as of room_ns */
	uint64_t room_ns;
	uint64_t held, held_bytes;	/* the form set's, as of room_ns */
	/* Bytes of the copies out (buf.h's budget: atomic, put by decoders). */
	uint64_t copies;
	struct dlcache_cqe cqes[16];
};

int dlc_kforms_open(struct dlc_loader *l, const char *dev,
		    const uint64_t key[2], uint32_t window, uint64_t job,
		    int joined, struct dlc_kforms **out, const char **why)
{
	struct dlc_kforms *kf = calloc(1, sizeof(*kf));
	int ret;

	*why = "out of memory";
	if (!kf)
		return -ENOMEM;
	kf->l = l;
	kf->max_pixels = l->cfg.max_pixels ? l->cfg.max_pixels :
			 DLC_DEFAULT_MAX_PIXELS;
	kf->size = calloc(l->n, sizeof(*kf->size));
	if (!kf->size) {
		ret = -ENOMEM;
		goto free_kf;
	}
	ret = dlc_kclient_open_form(dev, key, l->n, window, 64, job,
				    KFORM_RGB, &kf->kc, why);
	if (ret)
		goto free_kf;
	/* Its GETs use the encoded set's indexes: the same time line. */
	if (dlc_kclient_joined(kf->kc) != !!joined ||
	    !dlc_kclient_may_write(kf->kc)) {
		*why = "the form set's time line is not the encoded set's";
		ret = -EUSERS;
		goto close_kc;
	}
	/* The forms queued for the module: a window's, 256 MiB at most. */
	ret = dlc_forms_init(&kf->forms, l->cfg.forms, l->n, l->cfg.window,
			     256ULL << 20);
	if (ret)
		goto close_kc;
	l->forms = &kf->forms;
	*out = kf;
	*why = NULL;
	return 0;
close_kc:
	dlc_kclient_close(kf->kc);
free_kf:
	free(kf->size);
	free(kf);
	return ret;
}

/* A PUT's end: put its buffer; note the size the module kept. */
static void kforms_put_done(struct dlc_kforms *kf, const struct dlcache_cqe *c)
{
	if (c->res > 0 && (c->flags & DLCACHE_CQE_F_CACHED) &&
	    c->sample < kf->l->n)
		__atomic_store_n(&kf->size[c->sample], (uint32_t)c->res,
				 __ATOMIC_RELAXED);
	dlc_buf_put((struct dlc_buf *)(uintptr_t)(c->user_data & ~3ULL));
}

/* Reap every CQE, PUTs' ends; the GET's (KF_GET) into *@get. */
static int kforms_reap_get(struct dlc_kforms *kf, struct dlcache_cqe *get)
{
	uint32_t i, n;
	int found = 0;

	while ((n = dlc_kclient_reap(kf->kc, kf->cqes, 16)) > 0)
		for (i = 0; i < n; i++) {
			if (kf->cqes[i].user_data & KF_PUT)
				kforms_put_done(kf, &kf->cqes[i]);
			else if (kf->cqes[i].user_data == KF_GET && get) {
				*get = kf->cqes[i];
				found = 1;
			}
		}
	return found;
}

static void kforms_reap(struct dlc_kforms *kf)
{
	kforms_reap_get(kf, NULL);
}

void dlc_kforms_close(struct dlc_kforms *kf)
{
	uint32_t i, n;

	if (!kf || !kf->kc)
		return;
	/* A PUT not consumed holds its buffer: give it back. */
	n = dlc_kclient_unsubmitted(kf->kc);
	for (i = 0; i < n; i++) {
		const struct dlcache_sqe *sqe =
			dlc_kclient_unsubmitted_sqe(kf->kc, i);

		if (sqe->user_data & KF_PUT)
			dlc_buf_put((struct dlc_buf *)(uintptr_t)
				    (sqe->user_data & ~3ULL));
	}
	kforms_reap(kf);
	dlc_kclient_close(kf->kc);
	kf->kc = NULL;
}

void dlc_kforms_free(struct dlc_kforms *kf)
{
	if (!kf)
		return;
	dlc_kforms_close(kf);
	/*
	 * Every copy was put (the loader's queue goes first). Were one
	 * still held, its last put would write kf: leaked then, not freed.
	 */
	if (__atomic_load_n(&kf->copies, __ATOMIC_ACQUIRE)) {
		dlc_logf(&kf->l->log, DLC_LOG_ERROR,
			 "forms: %llu bytes of form copies still held at close; not freeing their budget",
			 (unsigned long long)kf->copies);
		return;
	}
	if (kf->l->forms == &kf->forms)
		kf->l->forms = NULL;
	dlc_forms_fini(&kf->forms);
	free(kf->size);
	free(kf);
}

int dlc_kforms_set_order(struct dlc_kforms *kf, uint32_t epoch,
			 const uint32_t *ids, uint32_t len)
{
	return kf->kc ? dlc_kclient_set_order(kf->kc, epoch, ids, len) : 0;
}

/*
 * One GET of sample @id into @b (NULL: a length of 0), at (@epoch,
 * @index) when @at: its CQE in *@c. 0, or -errno of the ring.
 */
static int kforms_get_once(struct dlc_kforms *kf, uint32_t id,
			   struct dlc_buf *b, int at, uint32_t epoch,
			   uint32_t index, struct dlcache_cqe *c)
{
	struct dlcache_sqe *sqe = dlc_kclient_sqe(kf->kc);
	int ret;

	if (!sqe)
		return -EBUSY;
	sqe->opcode = DLCACHE_OP_GET;
	sqe->handle = dlc_kclient_handle(kf->kc);
	sqe->sample = id;
	sqe->len = b ? (uint32_t)b->len : 0;
	sqe->addr = b ? (uint64_t)(uintptr_t)b->data : 0;
	sqe->user_data = KF_GET;
	if (at) {
		sqe->flags = DLCACHE_SQE_F_AT;
		sqe->epoch = epoch;
		sqe->index = index;
	}
	ret = dlc_kclient_enter(kf->kc);
	if (ret < 0) {
		/* The module failed or drains: no forms from it any more. */
		dlc_kforms_close(kf);
		return ret;
	}
	/* A form's GET never parks: its CQE is posted by this ENTER. */
	return kforms_reap_get(kf, c) ? 0 : -EPROTO;
}

/* A buffer for a copy of @size bytes, within COPIES_MAX, or NULL. */
static struct dlc_buf *kforms_copy_buf(struct dlc_kforms *kf, uint64_t size)
{
	struct dlc_buf *b;

	if (__atomic_load_n(&kf->copies, __ATOMIC_ACQUIRE) + size > COPIES_MAX)
		return NULL;
	b = dlc_buf_alloc_io(size, 0);
	if (b)
		dlc_buf_charge(b, &kf->copies);
	return b;
}

struct dlc_buf *dlc_kforms_get(struct dlc_kforms *kf, uint32_t id,
			       uint32_t epoch, uint32_t index)
{
	uint64_t max = DLC_FORM_TRAILER + kf->max_pixels * 3;
	struct dlc_buf *b = NULL;
	struct dlcache_cqe c;
	uint32_t size;

	if (!kf->kc || id >= kf->l->n)
		return NULL;
	/* A size seen before spares the round that asks for it. */
	size = kf->size[id];
	if (size && !(b = kforms_copy_buf(kf, size)))
		return NULL;
	if (kforms_get_once(kf, id, b, 1, epoch, index, &c))
		goto put_b;
	/* Gone (evicted): the next read-ahead reads its bytes again. */
	if (c.res == -ENOENT)
		__atomic_store_n(&kf->size[id], 0, __ATOMIC_RELAXED);
	if (c.res == -EMSGSIZE && c.size) {
		/* The module's size is checked before it is allocated. */
		if (c.size > max || c.size > INT32_MAX || c.size < DLC_FORM_TRAILER)
			goto put_b;
		dlc_buf_put(b);
		b = kforms_copy_buf(kf, c.size);
		if (!b || kforms_get_once(kf, id, b, 0, 0, 0, &c))
			goto put_b;
	}
	if (c.res <= 0 || !b || dlc_form_unseal(b, (uint64_t)c.res, kf->max_pixels))
		goto put_b;
	__atomic_store_n(&kf->size[id], (uint32_t)c.res, __ATOMIC_RELAXED);
	return b;
put_b:
	dlc_buf_put(b);
	return NULL;
}

/*
 * dlc_forms_offer_to()'s taker: PUT form @b of sample @id, sealed here,
 * where it leaves the process, into the trailer's room its maker left
 * (batchdecode.c's form_alloc()). Its value is the module's to rank
 * (by next use, as any sample's): unused.
 */
static int kforms_put(void *arg, uint32_t id, struct dlc_buf *b,
		      uint32_t value_us)
{
	struct dlc_kforms *kf = arg;
	uint64_t len = b->len + DLC_FORM_TRAILER;
	struct dlcache_sqe *sqe;

	(void)value_us;

	if (!kf->kc || len > dlc_kclient_max_sample(kf->kc))
		return 0;
	dlc_form_seal(b);
	sqe = dlc_kclient_sqe(kf->kc);
	if (!sqe) {
		if (dlc_kclient_enter(kf->kc) < 0)
			return 0;
		kforms_reap(kf);
		sqe = dlc_kclient_sqe(kf->kc);
		if (!sqe)
			return 0;
	}
	sqe->opcode = DLCACHE_OP_PUT;
	sqe->handle = dlc_kclient_handle(kf->kc);
	sqe->sample = id;
	sqe->len = (uint32_t)len;
	sqe->addr = (uint64_t)(uintptr_t)b->data;
	/* The bytes live until the module has copied them (reaped). */
	sqe->user_data = (uint64_t)(uintptr_t)dlc_buf_get(b) | KF_PUT;
	kf->room = kf->room > len ? kf->room - len : 0;
	return 1;
}

/* The module's free bytes and the form set's holdings, every ROOM_NS. */
static void kforms_measure(struct dlc_kforms *kf, uint64_t now)
{
	struct dlcache_stats st;

	if (now - kf->room_ns < ROOM_NS || dlc_kclient_stats(kf->kc, &st))
		return;
	kf->room_ns = now;
	kf->room = st.capacity_bytes > st.used_bytes ?
		   st.capacity_bytes - st.used_bytes : 0;
	__atomic_store_n(&kf->held, st.dataset.cached_samples,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&kf->held_bytes, st.dataset.used_bytes,
			 __ATOMIC_RELAXED);
}

int dlc_kforms_round(struct dlc_kforms *kf, pthread_mutex_t *lock)
{
	int any;

	/* Closed: the forms still queued are refused, so none stays. */
	any = dlc_forms_offer_to(&kf->forms, kforms_put, kf, lock);
	if (!kf->kc)
		return any;
	if (dlc_kclient_unsubmitted(kf->kc) && dlc_kclient_enter(kf->kc) < 0)
		dlc_kforms_close(kf);
	if (!kf->kc)
		return any;
	kforms_reap(kf);
	kforms_measure(kf, dlc_now_ns());
	return any;
}

void dlc_kforms_window(struct dlc_kforms *kf,
		       const struct dlc_window_shares *w)
{
	dlc_forms_window(&kf->forms, NULL, w);
}

int dlc_kforms_want(struct dlc_kforms *kf, uint32_t id,
		    const struct dlc_buf *enc, uint32_t *est)
{
	uint64_t form;

	(void)id;
	if (!kf->kc)
		return 0;
	/* It leaves, and is charged, with its trailer. */
	form = dlc_form_bytes(enc);
	return dlc_forms_want_room(&kf->forms, kf->room, enc->len,
				   form ? form + DLC_FORM_TRAILER : 0, est);
}

int dlc_kforms_known(const struct dlc_kforms *kf, uint32_t id)
{
	return id < kf->l->n &&
	       __atomic_load_n(&kf->size[id], __ATOMIC_RELAXED) != 0;
}

void dlc_kforms_stats(struct dlc_kforms *kf, struct dlc_stats *st)
{
	dlc_forms_stats(&kf->forms, st);
	st->forms_held = __atomic_load_n(&kf->held, __ATOMIC_RELAXED);
	st->forms_bytes = __atomic_load_n(&kf->held_bytes, __ATOMIC_RELAXED);
}
