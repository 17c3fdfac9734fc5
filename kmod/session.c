// SPDX-License-Identifier: GPL-2.0
/*
 * dlcache.ko's sessions: an open /dev/dlcache, its two rings, the
 * operations its SQEs carry (GET, PUT, ABORT), the fills they make and
 * the GETs parked on them, and the drain that asks sessions to let go.
 * The data sets they attach are dataset.c's; ATTACH, DETACH and SET_ORDER
 * are attach.c's, over both; the device is main.c's.
 *
 * Fills. A GET that misses makes its attachment the sample's filler (a
 * FILLING placeholder in the store). A GET for a sample another session
 * fills is parked: a struct dlc_wait goes on the placeholder's waiter list.
 * When the fill ends (PUT, ABORT, or the filler's session going away), the
 * fill's ender moves each waiter to its own session's ready list and wakes
 * it; it does not touch the waiter's memory. The waiter's next ENTER runs
 * the ready waits in the waiter's own context: it copies the bytes (a GET
 * run again) or posts the result decided for it (-ENOENT with the fill
 * handed over, -EIO for a failed fill). This is the task-work model of
 * io_uring's DEFER_TASKRUN: poll() reports EPOLLIN for ready waits and
 * the CQ ring's flags say DLCACHE_CQ_F_PENDING. ENTER itself never sleeps
 * on a fill, so two sessions each filling what the other waits for cannot
 * deadlock inside the kernel.
 *
 * Completions never overflow: an SQE is consumed only while the CQ has a
 * free slot for it counting every parked or ready wait as taken.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/hrtimer.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/uio.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "dlc.h"
#include "session.h"
#include "dataset.h"

/*
 * The fill lease, in ms (0: none): a fill older than this may be taken
 * from its filler (see dlc_fill_expire()). A module parameter, read with
 * READ_ONCE where used.
 */
static unsigned int fill_lease_ms = 30000;

/*
 * The lease work checks the data sets' lease_fills. It is queued only
 * while a placeholder with parked GETs may be there (dlc_lease_watch()),
 * for the earliest deadline; it queues itself again while any is left.
 * dlc_lease_lock protects dlc_lease_armed (queued and not yet started)
 * and dlc_lease_next (the jiffies it is queued for).
 */
static void dlc_lease_workfn(struct work_struct *work);
static DECLARE_DELAYED_WORK(dlc_lease_work, dlc_lease_workfn);
static DEFINE_SPINLOCK(dlc_lease_lock);
static bool dlc_lease_armed;
static unsigned long dlc_lease_next;

/*
 * The drain (DLCACHE_IOC_DRAIN, the parameter drain): while set, sessions
 * are asked to let go (see dlc_drained()). Written with WRITE_ONCE under
 * dlc_cache.lock, which also protects dlc_sessions, so that every session
 * open when it is set is woken after the store; read with READ_ONCE
 * anywhere. A sleeper cannot miss the wake-up: its wait condition
 * (dlc_wake_cond(), dlc_poll()) reads the flag after it went on the
 * session's waitqueue, and the drain wakes every waitqueue after the
 * store (the waitqueue lock orders the two).
 */
static bool drain;
static LIST_HEAD(dlc_sessions);

bool dlc_draining(void)
{
	return READ_ONCE(drain);
}

/* ------------------------------------------------------------------ */
/* Completions                                                         */
/* ------------------------------------------------------------------ */

static void dlc_post(struct dlc_session *sess, const struct dlcache_sqe *sqe,
		     int res, u32 flags, u32 size)
{
	struct dlcache_cqe cqe = {
		.user_data = sqe->user_data,
		.res = res,
		.flags = flags,
		.handle = sqe->handle,
		.sample = sqe->sample,
		.size = size,
	};

	lockdep_assert_held(&sess->ring_lock);
	if (res < 0 && res != -ENOENT)
		atomic64_inc(&sess->cache->errors);
	dlc_cq_post(&sess->cq, &cqe);
}

static void dlc_update_pending(struct dlc_session *sess)
{
	lockdep_assert_held(&sess->ring_lock);
	WRITE_ONCE(sess->cq.ctl->aux, sess->nbusy);
}

static struct dlc_wait *dlc_wait_get(struct dlc_session *sess)
{
	struct dlc_wait *w;

	lockdep_assert_held(&sess->ring_lock);
	w = list_first_entry_or_null(&sess->free_waits, struct dlc_wait, link);
	if (WARN_ON_ONCE(!w))
		return NULL;
	list_del_init(&w->link);
	sess->nbusy++;
	dlc_update_pending(sess);
	return w;
}

void dlc_wait_free(struct dlc_session *sess, struct dlc_wait *w)
{
	lockdep_assert_held(&sess->ring_lock);
	w->state = DLC_W_FREE;
	w->att = NULL;
	list_add(&w->link, &sess->free_waits);
	sess->nbusy--;
	dlc_update_pending(sess);
}

/*
 * Make parked wait @w ready (it is off its sample's list) and wake its
 * session. Runs in whichever context ended the fill.
 */
static void dlc_wait_ready(struct dlc_wait *w, int res, u32 cflags, bool rerun)
{
	struct dlc_session *sess = w->att->sess;

	lockdep_assert_held(&w->att->ds->lock);
	spin_lock(&sess->wait_lock);
	w->state = DLC_W_READY;
	w->res = res;
	w->cflags = cflags;
	w->rerun = rerun;
	list_add_tail(&w->link, &sess->ready);
	WRITE_ONCE(sess->cq.ctl->flags,
		   READ_ONCE(sess->cq.ctl->flags) | DLCACHE_CQ_F_PENDING);
	spin_unlock(&sess->wait_lock);
	wake_up(&sess->wq);
}

/* ------------------------------------------------------------------ */
/* Fill ownership and the fill lease                                   */
/* ------------------------------------------------------------------ */

/* The fill lease in jiffies, 0 for none. */
static unsigned long dlc_lease_jiffies(void)
{
	unsigned int ms = READ_ONCE(fill_lease_ms);

	return ms ? max(msecs_to_jiffies(ms), 1UL) : 0;
}

/* The fill of placeholder @ph is older than @lease (jiffies; 0: never). */
static bool dlc_fill_expired(const struct dlc_sample *ph, unsigned long lease)
{
	return lease && time_after_eq(jiffies, ph->fill_start + lease);
}

/*
 * Make @att the filler of placeholder @ph. The fill is taken from its
 * filler, if any: the fills list and count of both attachments follow,
 * so that a late PUT, ABORT or end of the old filler's session sees a
 * fill it does not own. The lease starts again.
 */
static void dlc_fill_give(struct dlc_sample *ph, struct dlc_attachment *att)
{
	struct dlc_attachment *owner = ph->filler;

	lockdep_assert_held(&att->ds->lock);
	if (owner) {
		list_del_init(&ph->fill_link);
		owner->nfills--;
	}
	ph->filler = att;
	ph->fill_start = jiffies;
	list_add_tail(&ph->fill_link, &att->fills);
	att->nfills++;
}

/* Have the lease work run at @when at the latest. */
static void dlc_lease_arm(unsigned long when)
{
	unsigned long now = jiffies;

	spin_lock(&dlc_lease_lock);
	if (!dlc_lease_armed || time_before(when, dlc_lease_next)) {
		dlc_lease_armed = true;
		dlc_lease_next = when;
		mod_delayed_work(system_wq, &dlc_lease_work,
				 time_after(when, now) ? when - now : 0);
	}
	spin_unlock(&dlc_lease_lock);
}

/*
 * A GET was parked on @ph: the lease work must look at @ph before its
 * lease ends. On the list also while the lease is off, so that turning
 * it on (dlc_lease_set()) finds the fills already waited for.
 */
static void dlc_lease_watch(struct dlc_dataset *ds, struct dlc_sample *ph)
{
	unsigned long lease = dlc_lease_jiffies();

	lockdep_assert_held(&ds->lock);
	if (list_empty(&ph->lease_link))
		list_add_tail(&ph->lease_link, &ds->lease_fills);
	if (lease)
		dlc_lease_arm(ph->fill_start + lease);
}

/*
 * The fill of @ph outlived the lease. The first parked GET whose
 * attachment may write takes it over, as in a hand-off (-ENOENT with
 * F_FILL | F_WAITED); every other parked GET completes -ETIMEDOUT. With
 * no such GET the filler keeps the fill until it ends it or a GET that
 * may write takes it (dlc_op_get()).
 */
static void dlc_fill_expire(struct dlc_dataset *ds, struct dlc_sample *ph)
{
	struct dlc_wait *w, *tmp;
	bool taken = false;

	lockdep_assert_held(&ds->lock);
	list_for_each_entry_safe(w, tmp, &ph->waiters, link) {
		list_del_init(&w->link);
		if (!taken && dlc_wait_may_fill(w)) {
			taken = true;
			ds->st.aborts++;
			dlc_fill_give(ph, w->att);
			dlc_wait_ready(w, -ENOENT, DLCACHE_CQE_F_FILL |
				       DLCACHE_CQE_F_WAITED, false);
		} else {
			dlc_wait_ready(w, -ETIMEDOUT, DLCACHE_CQE_F_WAITED,
				       false);
		}
	}
	/* No GET waits for it any more. */
	list_del_init(&ph->lease_link);
}

/*
 * Expire the fills with parked GETs that outlived the lease, and queue
 * itself again for the next deadline. The data sets are pinned under the
 * cache's lock and then locked one at a time without it (dlc_pin_all()).
 * Runs on system_wq only, one instance at a time: the pin array is its own.
 */
static void dlc_lease_workfn(struct work_struct *work)
{
	static struct dlc_dataset *pinned[DLC_MAX_DATASETS];
	unsigned long lease = dlc_lease_jiffies(), next = 0, end;
	struct dlc_sample *ph, *tmp;
	struct dlc_dataset *ds;
	bool more = false;
	u32 i, n;

	spin_lock(&dlc_lease_lock);
	dlc_lease_armed = false;
	spin_unlock(&dlc_lease_lock);
	/* Turning the lease on again queues this work (dlc_lease_set()). */
	if (!lease)
		return;

	mutex_lock(&dlc_cache.lock);
	n = dlc_pin_all(&dlc_cache, pinned);
	mutex_unlock(&dlc_cache.lock);
	for (i = 0; i < n; i++) {
		ds = pinned[i];
		mutex_lock(&ds->lock);
		list_for_each_entry_safe(ph, tmp, &ds->lease_fills, lease_link) {
			if (list_empty(&ph->waiters)) {
				/* Its waiters left (DETACH): nothing to do. */
				list_del_init(&ph->lease_link);
				continue;
			}
			if (dlc_fill_expired(ph, lease)) {
				dlc_fill_expire(ds, ph);
				continue;
			}
			end = ph->fill_start + lease;
			if (!more || time_before(end, next))
				next = end;
			more = true;
		}
		mutex_unlock(&ds->lock);
	}
	dlc_unpin_all(pinned, n);
	if (more)
		dlc_lease_arm(next);
}

/*
 * End the fill of placeholder @ph. For a hand-off the first waiter that
 * may write becomes the filler and @ph stays; otherwise every waiter is
 * made ready and @ph leaves the store.
 */
void dlc_fill_end(struct dlc_dataset *ds, struct dlc_sample *ph,
		  enum dlc_fill_end how)
{
	struct dlc_attachment *owner = ph->filler;
	struct dlc_wait *w, *tmp;

	lockdep_assert_held(&ds->lock);
	if (owner) {
		list_del_init(&ph->fill_link);
		owner->nfills--;
		ph->filler = NULL;
	}
	if (how == DLC_END_HANDOFF) {
		list_for_each_entry(w, &ph->waiters, link) {
			if (!dlc_wait_may_fill(w))
				continue;
			list_del_init(&w->link);
			dlc_fill_give(ph, w->att);
			dlc_wait_ready(w, -ENOENT, DLCACHE_CQE_F_FILL |
				       DLCACHE_CQE_F_WAITED, false);
			return;
		}
		how = DLC_END_DONE;
	}
	list_for_each_entry_safe(w, tmp, &ph->waiters, link) {
		list_del_init(&w->link);
		if (how == DLC_END_FAIL)
			dlc_wait_ready(w, -EIO, DLCACHE_CQE_F_WAITED, false);
		else
			dlc_wait_ready(w, 0, DLCACHE_CQE_F_WAITED, true);
	}
	dlc_store_erase(ds, ph);
}

/* ------------------------------------------------------------------ */
/* Operations                                                          */
/* ------------------------------------------------------------------ */

/*
 * GET. @w is NULL for a new SQE, or the wait being run again (off every
 * list); a parked GET keeps @w, any other outcome frees it.
 */
static void dlc_op_get(struct dlc_session *sess, struct dlc_attachment *att,
		       const struct dlcache_sqe *sqe, struct dlc_wait *w)
{
	struct dlc_dataset *ds = att->ds;
	u32 cflags = w ? DLCACHE_CQE_F_WAITED : 0;
	bool ahead = sqe->flags & DLCACHE_SQE_F_AHEAD;
	/* A form is made by a decode, never filled (DLCACHE_FEAT_FORMS). */
	bool may_fill = att->may_write && !ahead && !ds->form;
	struct dlc_sample *s, *ph;
	struct dlc_copier *copier;
	struct iov_iter iter;
	unsigned long lease;
	struct iovec iov;
	int ret;

	if (!att->may_read) {
		dlc_post(sess, sqe, -EACCES, 0, 0);
		goto free_wait;
	}
	mutex_lock(&ds->lock);
	/*
	 * Only writers move the policy: a reader's GET (with F_AT at the
	 * last index, say) must not drop the epochs the owner uploaded.
	 * Nor does a look-up ahead of the use (F_AHEAD).
	 */
	if (!w && att->may_write && !ahead)
		dlc_store_use(ds, &att->member, sqe->sample, sqe);
	s = dlc_store_lookup(ds, sqe->sample);
	if (s && test_bit(DLC_S_CACHED, &s->state)) {
		u32 size = s->size;

		/* Ahead: cached, so not to be read; the use will copy it. */
		if (ahead) {
			mutex_unlock(&ds->lock);
			dlc_post(sess, sqe, size, cflags, size);
			goto free_wait;
		}
		if (sqe->len < size) {
			mutex_unlock(&ds->lock);
			dlc_post(sess, sqe, -EMSGSIZE, cflags, size);
			goto free_wait;
		}
		/* The reference holds the pages, evicted or not, till put. */
		ret = dlc_copy_begin(dlc_sample_charge(s), &copier);
		if (ret) {
			mutex_unlock(&ds->lock);
			dlc_post(sess, sqe, ret, cflags, size);
			goto free_wait;
		}
		refcount_inc(&s->ref);
		ds->st.hits++;
		ds->st.hit_bytes += size;
		mutex_unlock(&ds->lock);

		ret = dlc_import_ubuf(ITER_DEST, u64_to_user_ptr(sqe->addr),
				      sqe->len, &iov, &iter);
		if (!ret)
			ret = dlc_sample_copy_out(s, &iter);
		dlc_copy_end(copier, dlc_sample_charge(s));
		dlc_sample_put(s);
		dlc_post(sess, sqe, ret ? ret : size, cflags, size);
		goto free_wait;
	}
	lease = dlc_lease_jiffies();
	if (s && s->filler != att && dlc_fill_expired(s, lease)) {
		/*
		 * The fill outlived its lease (the lease work runs only for
		 * fills with parked GETs). Those GETs come first: one may
		 * take the fill. Else this GET takes it, when it may fill,
		 * instead of parking on a fill that may never end.
		 */
		dlc_fill_expire(ds, s);
		if (s->filler != att && dlc_fill_expired(s, lease)) {
			if (!may_fill || att->nfills >= DLC_MAX_FILLS) {
				mutex_unlock(&ds->lock);
				dlc_post(sess, sqe, -ETIMEDOUT, cflags, 0);
				goto free_wait;
			}
			ds->st.aborts++;
			dlc_fill_give(s, att);
		}
	}
	if (s) {
		/* FILLING (a fill just taken over included). */
		if (s->filler == att) {
			/* Ahead: this session reads it already, for a use before. */
			mutex_unlock(&ds->lock);
			dlc_post(sess, sqe, -ENOENT, cflags | (ahead ?
				 DLCACHE_CQE_F_SOONER : DLCACHE_CQE_F_FILL), 0);
			goto free_wait;
		}
		if (!w) {
			w = dlc_wait_get(sess);
			if (!w) {
				mutex_unlock(&ds->lock);
				dlc_post(sess, sqe, -EBUSY, 0, 0);
				return;
			}
			w->att = att;
			w->sqe = *sqe;
			ds->st.waits++;
		}
		w->state = DLC_W_PARKED;
		list_add_tail(&w->link, &s->waiters);
		dlc_lease_watch(ds, s);
		mutex_unlock(&ds->lock);
		return;
	}

	/*
	 * Ahead, with F_AT: an earlier use of the sample comes first, and
	 * reads it; nothing taken, nothing counted. Otherwise a look-up's
	 * miss is a miss: it counts, and takes the fill, so that others wait
	 * for this read (the look-up's session PUTs after its use).
	 */
	if (ahead && (sqe->flags & DLCACHE_SQE_F_AT) &&
	    dlc_store_used_before(ds, &att->member, sqe->sample, sqe)) {
		mutex_unlock(&ds->lock);
		dlc_post(sess, sqe, -ENOENT, cflags | DLCACHE_CQE_F_SOONER, 0);
		goto free_wait;
	}
	/*
	 * Miss: take the fill when this attachment may PUT, but never of a
	 * form, so that no GET of one ever parks.
	 */
	ds->st.misses++;
	if (att->may_write && !ds->form && att->nfills < DLC_MAX_FILLS) {
		/* Charged: up to DLC_MAX_FILLS per attachment. */
		ph = dlc_sample_placeholder(sqe->sample, GFP_KERNEL_ACCOUNT);
		if (ph && !dlc_store_set_filling(ds, ph)) {
			dlc_fill_give(ph, att);
			cflags |= DLCACHE_CQE_F_FILL;
		} else if (ph) {
			dlc_sample_put(ph);
		}
	}
	mutex_unlock(&ds->lock);
	dlc_post(sess, sqe, -ENOENT, cflags, 0);

free_wait:
	if (w)
		dlc_wait_free(sess, w);
}

/* The PUT was not admitted: count it and end a fill of the sample. */
static void dlc_put_bypass(struct dlc_dataset *ds, const struct dlcache_sqe *sqe)
{
	struct dlc_sample *s;

	lockdep_assert_held(&ds->lock);
	ds->st.bypasses++;
	ds->st.bypass_bytes += sqe->len;
	s = dlc_store_lookup(ds, sqe->sample);
	if (s && test_bit(DLC_S_FILLING, &s->state)) {
		ds->st.miss_bytes += sqe->len;
		dlc_fill_end(ds, s, DLC_END_DONE);
	}
}

/*
 * PUT. The sample's charge is reserved against the capacity (making room
 * as admission does) and counted in the caller's copies in flight before
 * its pages are allocated, charged to the caller's memory cgroup, and
 * copied: a PUT that does not fit is bypassed without copying, and one
 * that stalls in the copy holds what it reserved, no more. Once copied,
 * the bytes move to uncharged pages for the shared cache.
 */
static void dlc_op_put(struct dlc_session *sess, struct dlc_attachment *att,
		       const struct dlcache_sqe *sqe)
{
	struct dlc_dataset *ds = att->ds;
	u64 charge = PAGE_ALIGN((u64)sqe->len);
	struct dlc_copier *copier;
	struct dlc_sample *s, *ns;
	struct iov_iter iter;
	struct iovec iov;
	bool cached;
	int ret;

	if (!att->may_write) {
		dlc_post(sess, sqe, -EACCES, 0, 0);
		return;
	}
	mutex_lock(&ds->lock);
	s = dlc_store_lookup(ds, sqe->sample);
	if (s && test_bit(DLC_S_CACHED, &s->state)) {
		mutex_unlock(&ds->lock);
		dlc_post(sess, sqe, sqe->len, DLCACHE_CQE_F_CACHED, 0);
		return;
	}
	ret = dlc_copy_begin(charge, &copier);
	if (ret) {
		/* Not copied: the fill ends as for a bypass. */
		dlc_put_bypass(ds, sqe);
		mutex_unlock(&ds->lock);
		dlc_post(sess, sqe, ret, 0, 0);
		return;
	}
	if (!dlc_store_reserve(ds, sqe->sample, charge,
			       s && !list_empty(&s->waiters))) {
		dlc_put_bypass(ds, sqe);
		mutex_unlock(&ds->lock);
		dlc_copy_end(copier, charge);
		dlc_post(sess, sqe, sqe->len, 0, 0);
		return;
	}
	mutex_unlock(&ds->lock);

	/* Copy without the data set's lock: user memory may fault. */
	ns = dlc_sample_alloc(sqe->sample, sqe->len, GFP_KERNEL_ACCOUNT);
	if (ns) {
		/* The sample takes the reservation over. */
		ns->charged = ds->cache;
		ret = dlc_import_ubuf(ITER_SOURCE, u64_to_user_ptr(sqe->addr),
				      sqe->len, &iov, &iter);
		if (!ret)
			ret = dlc_sample_copy_in(ns, &iter);
		if (ret) {
			/* The fill stays owned: PUT again or ABORT. */
			dlc_sample_put(ns);
			dlc_copy_end(copier, charge);
			dlc_post(sess, sqe, ret, 0, 0);
			return;
		}
		/* Copied: the cache's pages are nobody's (memory pressure: bypass). */
		if (dlc_sample_unaccount(ns)) {
			dlc_sample_put(ns);
			ns = NULL;
		}
	} else {
		dlc_store_unreserve(ds->cache, charge);
	}

	mutex_lock(&ds->lock);
	s = dlc_store_lookup(ds, sqe->sample);
	if (s && test_bit(DLC_S_CACHED, &s->state)) {
		/* Another session PUT it meanwhile. */
		mutex_unlock(&ds->lock);
		if (ns)
			dlc_sample_put(ns);
		dlc_copy_end(copier, charge);
		dlc_post(sess, sqe, sqe->len, DLCACHE_CQE_F_CACHED, 0);
		return;
	}
	cached = ns && dlc_store_insert(ds, ns);
	if (!cached) {
		dlc_put_bypass(ds, sqe);
	} else {
		ds->st.inserts++;
		ds->st.insert_bytes += sqe->len;
		if (s) {
			/* @ns replaced the placeholder in the xarray. */
			ds->st.miss_bytes += sqe->len;
			dlc_fill_end(ds, s, DLC_END_DONE);
		}
	}
	mutex_unlock(&ds->lock);
	if (ns && !cached)
		dlc_sample_put(ns);
	dlc_copy_end(copier, charge);
	dlc_post(sess, sqe, sqe->len, cached ? DLCACHE_CQE_F_CACHED : 0, 0);
}

static void dlc_op_abort(struct dlc_session *sess, struct dlc_attachment *att,
			 const struct dlcache_sqe *sqe)
{
	struct dlc_dataset *ds = att->ds;
	struct dlc_sample *s;

	mutex_lock(&ds->lock);
	s = dlc_store_lookup(ds, sqe->sample);
	if (!s || !test_bit(DLC_S_FILLING, &s->state) || s->filler != att) {
		mutex_unlock(&ds->lock);
		dlc_post(sess, sqe, -ENOENT, 0, 0);
		return;
	}
	ds->st.aborts++;
	dlc_fill_end(ds, s, sqe->flags & DLCACHE_SQE_F_FAIL ?
			    DLC_END_FAIL : DLC_END_HANDOFF);
	mutex_unlock(&ds->lock);
	dlc_post(sess, sqe, 0, 0, 0);
}

struct dlc_attachment *dlc_att(struct dlc_session *sess, u32 handle)
{
	lockdep_assert_held(&sess->ring_lock);
	if (!handle || handle > DLC_MAX_HANDLES)
		return NULL;
	return sess->atts[handle - 1];
}

/* Run one SQE (copied out of the ring). Always posts or parks. */
static void dlc_submit(struct dlc_session *sess, const struct dlcache_sqe *sqe)
{
	struct dlc_attachment *att;

	lockdep_assert_held(&sess->ring_lock);
	if (dlc_sqe_check(sqe))
		goto malformed;
	if (sqe->opcode == DLCACHE_OP_NOP) {
		dlc_post(sess, sqe, 0, 0, 0);
		return;
	}
	att = dlc_att(sess, sqe->handle);
	if (!att) {
		dlc_post(sess, sqe, -EBADF, 0, 0);
		return;
	}
	if (sqe->sample >= att->ds->nsamples)
		goto malformed;

	switch (sqe->opcode) {
	case DLCACHE_OP_GET:
		dlc_op_get(sess, att, sqe, NULL);
		break;
	case DLCACHE_OP_PUT:
		dlc_op_put(sess, att, sqe);
		break;
	case DLCACHE_OP_ABORT:
		dlc_op_abort(sess, att, sqe);
		break;
	}
	return;

malformed:
	WRITE_ONCE(sess->sq.ctl->aux, READ_ONCE(sess->sq.ctl->aux) + 1);
	dlc_post(sess, sqe, -EINVAL, 0, 0);
}

/*
 * Wake the session's sleepers when the CQ tail moved past @tail. Every
 * path that posts CQEs ends with this: another thread of the session may
 * sleep in ENTER or poll() for a CQE posted here. It was woken when its
 * wait became ready, but this context may have taken the ready wait
 * (dlc_run_ready()) before that thread looked, and posted it after.
 */
static void dlc_wake_posted(struct dlc_session *sess, u32 tail)
{
	lockdep_assert_held(&sess->ring_lock);
	/* The tail was published (release) before the wake-up's barrier. */
	if (sess->cq.kidx != tail)
		wake_up(&sess->wq);
}

/* Post the completions of ready waits, in the waiting session's context. */
static void dlc_run_ready(struct dlc_session *sess)
{
	struct dlc_wait *w, *tmp;
	u32 tail = sess->cq.kidx;
	LIST_HEAD(list);

	lockdep_assert_held(&sess->ring_lock);
	spin_lock(&sess->wait_lock);
	list_splice_init(&sess->ready, &list);
	WRITE_ONCE(sess->cq.ctl->flags,
		   READ_ONCE(sess->cq.ctl->flags) & ~DLCACHE_CQ_F_PENDING);
	spin_unlock(&sess->wait_lock);

	list_for_each_entry_safe(w, tmp, &list, link) {
		list_del_init(&w->link);
		if (w->rerun) {
			dlc_op_get(sess, w->att, &w->sqe, w);
		} else {
			dlc_post(sess, &w->sqe, w->res, w->cflags, 0);
			dlc_wait_free(sess, w);
		}
		/* A CQ of GETs of 16 MiB samples: only mutexes are held. */
		cond_resched();
	}
	dlc_wake_posted(sess, tail);
}

/* CQEs that can be reaped, read without the ring lock. */
static u32 dlc_cq_avail(struct dlc_session *sess)
{
	u32 n = READ_ONCE(sess->cq.ctl->tail) - READ_ONCE(sess->cq.ctl->head);

	return min(n, sess->cq.nentries);
}

static bool dlc_has_ready(struct dlc_session *sess)
{
	bool ready;

	spin_lock(&sess->wait_lock);
	ready = !list_empty(&sess->ready);
	spin_unlock(&sess->wait_lock);
	return ready;
}

static bool dlc_wake_cond(struct dlc_session *sess, u32 min_complete)
{
	return dlc_has_ready(sess) || dlc_cq_avail(sess) >= min_complete ||
	       dlc_draining();
}

/*
 * Detach @att: its parked and ready waits end without a completion, its
 * fills go to a waiter (or end), and its data set reference is dropped.
 * Called with sess->ring_lock held; takes the data set's lock, and
 * cache->lock once that is dropped (dlc_consumer_release(),
 * dlc_dataset_put()).
 */
void dlc_detach(struct dlc_session *sess, struct dlc_attachment *att)
{
	struct dlc_dataset *ds = att->ds;
	struct dlc_consumer *cons;
	struct dlc_sample *ph;
	u32 i;

	lockdep_assert_held(&sess->ring_lock);
	mutex_lock(&ds->lock);
	for (i = 0; sess->waits && i < sess->cq.nentries; i++) {
		struct dlc_wait *w = &sess->waits[i];

		/* w->att only changes under ring_lock; the state of this
		 * attachment's waits under ds->lock: both are held.
		 */
		if (w->att != att)
			continue;
		if (w->state == DLC_W_PARKED) {
			list_del_init(&w->link);
		} else {
			spin_lock(&sess->wait_lock);
			list_del_init(&w->link);
			spin_unlock(&sess->wait_lock);
		}
		dlc_wait_free(sess, w);
	}
	while (!list_empty(&att->fills)) {
		ph = list_first_entry(&att->fills, struct dlc_sample, fill_link);
		ds->st.aborts++;
		dlc_fill_end(ds, ph, DLC_END_HANDOFF);
		/* Up to DLC_MAX_FILLS; only mutexes are held. */
		cond_resched();
	}
	cons = dlc_store_leave(ds, &att->member);
	mutex_unlock(&ds->lock);
	if (cons)
		dlc_consumer_release(ds, cons);
	sess->atts[att->handle - 1] = NULL;
	dlc_dataset_put(ds, true, sess->features & DLCACHE_FEAT_IDLE);
	kfree(att);
}

/*
 * ENTER while draining: detach the session from every data set (its fills
 * are handed over, its parked and ready GETs end without a completion)
 * and post nothing. Returns -ESHUTDOWN to pass on, or 0 when not
 * draining. Called with ring_lock held.
 */
static int dlc_drained(struct dlc_session *sess)
{
	u32 i;

	lockdep_assert_held(&sess->ring_lock);
	if (!dlc_draining())
		return 0;
	for (i = 0; i < DLC_MAX_HANDLES; i++) {
		if (sess->atts[i])
			dlc_detach(sess, sess->atts[i]);
		cond_resched();
	}
	return -ESHUTDOWN;
}

static long dlc_sleep(struct dlc_session *sess, u32 min, ktime_t left)
{
	return wait_event_interruptible_hrtimeout(sess->wq,
						  dlc_wake_cond(sess, min),
						  left);
}

static int dlc_wait_cqes(struct dlc_session *sess, u32 min_complete,
			 bool timed, u64 timeout_ns)
{
	ktime_t deadline = ktime_add_safe(ktime_get(),
					  min_t(u64, timeout_ns, KTIME_MAX));
	long ret;

	for (;;) {
		mutex_lock(&sess->ring_lock);
		ret = dlc_drained(sess);
		if (!ret)
			dlc_run_ready(sess);
		mutex_unlock(&sess->ring_lock);
		if (ret)
			return ret;
		if (dlc_cq_avail(sess) >= min_complete)
			return 0;
		if (timed) {
			ktime_t left = ktime_sub(deadline, ktime_get());

			if (ktime_to_ns(left) <= 0)
				return -ETIME;
			ret = dlc_sleep(sess, min_complete, left);
		} else {
			ret = wait_event_interruptible(sess->wq,
						       dlc_wake_cond(sess, min_complete));
		}
		if (ret == -ERESTARTSYS)
			return -EINTR;
		if (ret == -ETIME)
			return -ETIME;
	}
}

/* ------------------------------------------------------------------ */
/* ioctls                                                              */
/* ------------------------------------------------------------------ */

long dlc_ioc_get_info(struct dlc_session *sess, void __user *uarg)
{
	struct dlcache_info info;

	if (copy_from_user(&info, uarg, sizeof(info)))
		return -EFAULT;
	if (info.flags || info.resv0 || !dlc_zero(info.reserved,
						  sizeof(info.reserved)) ||
	    info.abi_version || !dlc_out_zero(&info, supported, max_members))
		return -EINVAL;
	/* The session's features: the first GET_INFO's wanted & supported. */
	mutex_lock(&sess->ring_lock);
	if (!sess->features_set) {
		sess->features = info.features & DLC_FEATURES;
		sess->features_set = true;
	}
	info.features = sess->features;
	mutex_unlock(&sess->ring_lock);
	info.abi_version = DLCACHE_ABI_VERSION;
	info.supported = DLC_FEATURES;
	info.capacity_bytes = READ_ONCE(sess->cache->capacity);
	info.max_sample_size = DLC_MAX_SAMPLE_SIZE;
	info.max_samples = DLC_MAX_SAMPLES;
	info.max_datasets = DLC_MAX_DATASETS;
	info.max_order_len = DLC_MAX_ORDER_LEN;
	info.max_ring_entries = DLC_MAX_RING_ENTRIES;
	info.max_handles = DLC_MAX_HANDLES;
	info.max_fills = DLC_MAX_FILLS;
	info.max_consumers = DLC_MAX_CONSUMERS;
	info.max_members = DLC_MAX_MEMBERS;
	if (copy_to_user(uarg, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

/*
 * Memory a session makes the kernel hold for itself (rings, wait pool) is
 * charged to the caller's memory cgroup, and fails with -ENOMEM at its
 * limit rather than waking the OOM killer (__GFP_RETRY_MAYFAIL) or
 * warning (__GFP_NOWARN): one user opening many sessions hits its own
 * limit, not the node's.
 */
#define DLC_GFP_SESSION	(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN)

/*
 * A zeroed ring region of @size bytes (page aligned) that
 * remap_vmalloc_range() maps. vmalloc_user() is not charged to a memory
 * cgroup and takes no gfp flags; __vmalloc_node_range() is not exported.
 * So the pages are allocated one by one, charged, and vmap()ed with
 * VM_USERMAP (what remap_vmalloc_range() asks for) and VM_MAP_PUT_PAGES
 * (vfree() frees the pages and the array), as BPF's ring buffer does.
 * The same on 6.1 and 6.12.
 */
static void *dlc_ring_alloc(size_t size)
{
	unsigned int i, n = size >> PAGE_SHIFT;
	struct page **pages;
	void *mem;

	pages = kvmalloc_array(n, sizeof(*pages), DLC_GFP_SESSION);
	if (!pages)
		return NULL;
	for (i = 0; i < n; i++) {
		pages[i] = alloc_page(DLC_GFP_SESSION | __GFP_ZERO);
		if (!pages[i])
			goto free_pages;
	}
	mem = vmap(pages, n, VM_MAP | VM_USERMAP | VM_MAP_PUT_PAGES,
		   PAGE_KERNEL);
	if (mem)
		return mem;
free_pages:
	while (i--)
		__free_page(pages[i]);
	kvfree(pages);
	return NULL;
}

long dlc_ioc_setup_ring(struct dlc_session *sess, void __user *uarg)
{
	struct dlcache_ring_setup p;
	size_t sq_size, cq_size;
	void *sq_mem, *cq_mem;
	struct dlc_wait *waits;
	u32 i;
	long ret;

	if (copy_from_user(&p, uarg, sizeof(p)))
		return -EFAULT;
	if (p.flags || p.resv0 || !dlc_zero(p.reserved, sizeof(p.reserved)) ||
	    !dlc_out_zero(&p, sq_mmap_size, cq_off))
		return -EINVAL;
	ret = dlc_ring_sizes(&p.sq_entries, &p.cq_entries);
	if (ret)
		return ret;

	mutex_lock(&sess->ring_lock);
	if (sess->ring_ready) {
		ret = -EBUSY;
		goto unlock;
	}
	ret = -ESHUTDOWN;
	if (dlc_draining())
		goto unlock;
	ret = -ENOMEM;
	sq_size = dlc_ring_bytes(p.sq_entries, sizeof(struct dlcache_sqe));
	cq_size = dlc_ring_bytes(p.cq_entries, sizeof(struct dlcache_cqe));
	sq_mem = dlc_ring_alloc(sq_size);
	if (!sq_mem)
		goto unlock;
	cq_mem = dlc_ring_alloc(cq_size);
	if (!cq_mem)
		goto free_sq;
	waits = kvcalloc(p.cq_entries, sizeof(*waits), DLC_GFP_SESSION);
	if (!waits)
		goto free_cq;

	p.sq_mmap_size = sq_size;
	p.cq_mmap_size = cq_size;
	dlc_ring_sq_offsets(&p.sq_off);
	dlc_ring_cq_offsets(&p.cq_off);
	if (copy_to_user(uarg, &p, sizeof(p))) {
		ret = -EFAULT;
		goto free_waits;
	}

	dlc_ring_init(&sess->sq, sq_mem, sq_size, p.sq_entries);
	dlc_ring_init(&sess->cq, cq_mem, cq_size, p.cq_entries);
	sess->waits = waits;
	for (i = 0; i < p.cq_entries; i++)
		list_add_tail(&waits[i].link, &sess->free_waits);
	/* mmap() and poll() look at the rings without the lock. */
	smp_store_release(&sess->ring_ready, true);
	mutex_unlock(&sess->ring_lock);
	return 0;

free_waits:
	kvfree(waits);
free_cq:
	vfree(cq_mem);
free_sq:
	vfree(sq_mem);
unlock:
	mutex_unlock(&sess->ring_lock);
	return ret;
}

long dlc_ioc_enter(struct dlc_session *sess, void __user *uarg)
{
	struct dlcache_enter e;
	struct dlcache_sqe sqe;
	u32 submitted = 0, ready, sqflags, tail;
	bool full = false;
	int ret = 0;

	if (copy_from_user(&e, uarg, sizeof(e)))
		return -EFAULT;
	if (!dlc_zero(e.reserved, sizeof(e.reserved)) || e.submitted ||
	    (e.flags & ~(DLCACHE_ENTER_F_GETEVENTS | DLCACHE_ENTER_F_TIMEOUT)))
		return -EINVAL;
	if (!(e.flags & DLCACHE_ENTER_F_GETEVENTS) &&
	    (e.min_complete || (e.flags & DLCACHE_ENTER_F_TIMEOUT)))
		return -EINVAL;
	if (!(e.flags & DLCACHE_ENTER_F_TIMEOUT) && e.timeout_ns)
		return -EINVAL;

	mutex_lock(&sess->ring_lock);
	ret = dlc_drained(sess);
	if (ret) {
		mutex_unlock(&sess->ring_lock);
		return ret;
	}
	if (!sess->ring_ready) {
		mutex_unlock(&sess->ring_lock);
		return -ENXIO;
	}
	if (e.min_complete > sess->cq.nentries) {
		mutex_unlock(&sess->ring_lock);
		return -EINVAL;
	}
	dlc_run_ready(sess);
	tail = sess->cq.kidx;
	/* Read the SQ tail once: one ENTER consumes at most the ring. */
	ready = min(e.to_submit, dlc_sq_ready(&sess->sq));
	while (submitted < ready) {
		/*
		 * A killed task stops consuming at once: a full ring of 16 MiB
		 * PUTs is seconds of copying that nobody will use. What is
		 * left stays in the SQ for a task that shares the ring.
		 */
		if (fatal_signal_pending(current))
			break;
		if (dlc_cq_used(&sess->cq) + sess->nbusy >= sess->cq.nentries) {
			full = true;
			break;
		}
		dlc_sq_fetch(&sess->sq, &sqe);
		dlc_submit(sess, &sqe);
		submitted++;
	}
	dlc_sq_publish(&sess->sq);
	/* Republish the CQ tail too, in case user space scribbled on it. */
	smp_store_release(&sess->cq.ctl->tail, sess->cq.kidx);
	sqflags = READ_ONCE(sess->sq.ctl->flags) & ~DLCACHE_SQ_F_CQ_FULL;
	WRITE_ONCE(sess->sq.ctl->flags,
		   sqflags | (full ? DLCACHE_SQ_F_CQ_FULL : 0));
	dlc_wake_posted(sess, tail);
	mutex_unlock(&sess->ring_lock);

	if (e.flags & DLCACHE_ENTER_F_GETEVENTS)
		ret = dlc_wait_cqes(sess, e.min_complete,
				    e.flags & DLCACHE_ENTER_F_TIMEOUT,
				    e.timeout_ns);
	e.submitted = submitted;
	/*
	 * SQEs consumed cannot be given back: the return value, not
	 * e.submitted, is authoritative, also when the copy fails.
	 */
	if (copy_to_user(uarg, &e, sizeof(e)) && !submitted)
		return -EFAULT;
	return submitted ? submitted : ret;
}

/*
 * Start or end the drain. Starting it wakes every session's sleepers
 * (ENTER, poll()), which then see it. Returns the sessions open.
 */
u32 dlc_drain_set(struct dlc_cache *cache, bool on)
{
	struct dlc_session *sess;
	bool was;
	u32 n;

	mutex_lock(&cache->lock);
	was = dlc_draining();
	WRITE_ONCE(drain, on);
	if (on)
		list_for_each_entry(sess, &dlc_sessions, node)
			wake_up_all(&sess->wq);
	n = cache->nsessions;
	mutex_unlock(&cache->lock);
	if (was != on)
		pr_info("drain %s, %u sessions open\n", on ? "started" : "ended",
			n);
	return n;
}

/* ------------------------------------------------------------------ */
/* File operations                                                     */
/* ------------------------------------------------------------------ */

int dlc_open(struct inode *inode, struct file *file)
{
	struct dlc_session *sess;

	sess = kzalloc(sizeof(*sess), DLC_GFP_SESSION);
	if (!sess)
		return -ENOMEM;
	sess->cache = &dlc_cache;
	mutex_init(&sess->ring_lock);
	INIT_LIST_HEAD(&sess->free_waits);
	spin_lock_init(&sess->wait_lock);
	INIT_LIST_HEAD(&sess->ready);
	init_waitqueue_head(&sess->wq);
	mutex_lock(&dlc_cache.lock);
	dlc_cache.nsessions++;
	list_add(&sess->node, &dlc_sessions);
	mutex_unlock(&dlc_cache.lock);
	file->private_data = sess;
	return nonseekable_open(inode, file);
}

/*
 * The last reference to the file is gone. A mapping of the rings holds a
 * reference to the file (vma->vm_file), so this runs only after the last
 * munmap, also when the process died with the rings mapped.
 */
int dlc_release(struct inode *inode, struct file *file)
{
	struct dlc_session *sess = file->private_data;
	u32 i;

	mutex_lock(&sess->ring_lock);
	for (i = 0; i < DLC_MAX_HANDLES; i++) {
		if (sess->atts[i])
			dlc_detach(sess, sess->atts[i]);
		cond_resched();
	}
	WARN_ON_ONCE(sess->nbusy);
	mutex_unlock(&sess->ring_lock);

	kvfree(sess->waits);
	vfree(sess->cq.mem);
	vfree(sess->sq.mem);
	mutex_lock(&dlc_cache.lock);
	dlc_cache.nsessions--;
	list_del(&sess->node);
	mutex_unlock(&dlc_cache.lock);
	mutex_destroy(&sess->ring_lock);
	kfree(sess);
	return 0;
}

int dlc_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct dlc_session *sess = file->private_data;
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	struct dlc_ring *r;

	/* SETUP_RING published the rings before setting ring_ready. */
	if (!smp_load_acquire(&sess->ring_ready))
		return -ENXIO;
	switch (off) {
	case DLCACHE_OFF_SQ_RING:
		r = &sess->sq;
		break;
	case DLCACHE_OFF_CQ_RING:
		r = &sess->cq;
		break;
	default:
		return -EINVAL;
	}
	if (vma->vm_end - vma->vm_start > r->size)
		return -EINVAL;
	return remap_vmalloc_range(vma, r->mem, 0);
}

__poll_t dlc_poll(struct file *file, struct poll_table_struct *pt)
{
	struct dlc_session *sess = file->private_data;

	__poll_t mask = 0;

	poll_wait(file, &sess->wq, pt);
	/* After poll_wait(): dlc_drain_set() wakes sess->wq after the store. */
	if (dlc_draining())
		mask |= EPOLLHUP | EPOLLERR;
	/* Pairs with the release in SETUP_RING: the rings are set up. */
	if (!smp_load_acquire(&sess->ring_ready))
		return mask;
	if (dlc_cq_avail(sess) || dlc_has_ready(sess))
		mask |= EPOLLIN | EPOLLRDNORM;
	return mask;
}

/*
 * A new lease applies to the fills in flight at once: the lease work looks
 * at the waited-for fills now. Runs under kernel_param_lock(), as dlc_exit()
 * clears dlc_ready: nothing queues the work after dlc_exit() cancelled it.
 */
static int dlc_lease_set(const char *val, const struct kernel_param *kp)
{
	unsigned int ms;
	int ret;

	ret = kstrtouint(val, 0, &ms);
	if (ret)
		return ret;
	WRITE_ONCE(fill_lease_ms, ms);
	if (READ_ONCE(dlc_ready) && ms)
		dlc_lease_arm(jiffies);
	return 0;
}

static const struct kernel_param_ops dlc_lease_ops = {
	.set = dlc_lease_set,
	.get = param_get_uint,
};

module_param_cb(fill_lease_ms, &dlc_lease_ops, &fill_lease_ms, 0644);
MODULE_PARM_DESC(fill_lease_ms,
		 "A fill not ended within this many ms may be taken over by a waiting or new GET that may write (default 30000, 0: never)");

/*
 * drain=1 starts the drain, drain=0 ends it (DLCACHE_IOC_DRAIN does the
 * same). Runs under kernel_param_lock(), which comes before
 * dlc_cache.lock; before dlc_init() (insmod drain=1) and after dlc_exit()
 * only the value is set.
 */
static int dlc_drain_param_set(const char *val, const struct kernel_param *kp)
{
	bool on;
	int ret;

	ret = kstrtobool(val, &on);
	if (ret)
		return ret;
	if (READ_ONCE(dlc_ready))
		dlc_drain_set(&dlc_cache, on);
	else
		WRITE_ONCE(drain, on);
	return 0;
}

static const struct kernel_param_ops dlc_drain_ops = {
	.set = dlc_drain_param_set,
	.get = param_get_bool,
};

module_param_cb(drain, &dlc_drain_ops, &drain, 0644);
MODULE_PARM_DESC(drain,
		 "1: ask every session to let go (ATTACH and ENTER fail with -ESHUTDOWN) so that the module can be unloaded; 0: end the drain");

/* Module exit (and a failed init): wait for a queued or running lease work. */
void dlc_lease_stop(void)
{
	cancel_delayed_work_sync(&dlc_lease_work);
}
