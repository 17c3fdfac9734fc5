// SPDX-License-Identifier: GPL-2.0
/*
 * dlcache.ko: a node-local sample cache for training input pipelines.
 *
 * /dev/dlcache is a misc device. Each open file is a session: it attaches
 * to data sets by key, sets up a submission/completion ring pair that it
 * maps, and drives it with DLCACHE_IOC_ENTER. All work runs synchronously
 * in the ENTER caller's context; the module has no threads, only the fill
 * lease's delayed work, queued while GETs are parked on fills.
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

#include <linux/build_bug.h>
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/hashtable.h>
#include <linux/hrtimer.h>
#include <linux/init.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/nospec.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/shrinker.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/uio.h>
#include <linux/user_namespace.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "dlc.h"

static unsigned long capacity_mb = 256;
/*
 * dlc_cache is set up. Set and cleared under kernel_param_lock(), which
 * the parameters' set and get callbacks run under: a write to a
 * parameter file (that outlives dlc_exit()) sees it false once the cache
 * is going away. READ_ONCE elsewhere.
 */
static bool dlc_ready;
static struct dlc_cache dlc_cache;

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

static bool dlc_draining(void)
{
	return READ_ONCE(drain);
}

struct dlc_session;

/* A session's view of one data set: handle = index in atts[] + 1. */
struct dlc_attachment {
	struct dlc_session *sess;
	struct dlc_dataset *ds;		/* holds a ds->ref */
	u32 handle;
	bool may_read;			/* GET */
	bool may_write;			/* PUT, ABORT, SET_ORDER */
	struct list_head fills;		/* FILLING samples owned; ds->lock */
	u32 nfills;			/* ds->lock */
	struct dlc_member member;	/* its consumer, if any; ds->lock */
};

/* States of a dlc_wait, and the lock that protects it in that state. */
enum dlc_wait_state {
	DLC_W_FREE,	/* on sess->free_waits; ring_lock */
	DLC_W_PARKED,	/* on sample->waiters; ds->lock */
	DLC_W_READY,	/* on sess->ready; sess->wait_lock */
};

/* A GET that waits for another session's fill. */
struct dlc_wait {
	struct list_head link;		/* see enum dlc_wait_state */
	struct dlc_attachment *att;	/* owner; set while not FREE */
	struct dlcache_sqe sqe;		/* the GET, copied */
	enum dlc_wait_state state;
	bool rerun;			/* READY: run the GET again */
	int res;			/* READY, !rerun: result to post */
	u32 cflags;			/* READY: CQE flags to add */
};

/*
 * Whether parked GET @w may be handed a fill: its attachment may write,
 * and it is not a look-up ahead (a fill goes to a use, not a guess).
 */
static bool dlc_wait_may_fill(const struct dlc_wait *w)
{
	return w->att->may_write && !(w->sqe.flags & DLCACHE_SQE_F_AHEAD);
}

struct dlc_session {
	struct dlc_cache *cache;
	/*
	 * ring_lock serializes the session's ioctls and protects sq, cq,
	 * atts[], waits[] (but see enum dlc_wait_state), free_waits and
	 * nbusy. User copies happen under it; mmap never takes it.
	 */
	struct mutex ring_lock;
	bool ring_ready;		/* rings set up; store_release once */
	struct dlc_ring sq;
	struct dlc_ring cq;
	struct dlc_attachment *atts[DLC_MAX_HANDLES];
	struct dlc_wait *waits;		/* pool of cq.nentries */
	struct list_head free_waits;
	u32 nbusy;			/* waits not FREE: CQ slots reserved */
	/*
	 * The features this session enabled (DLCACHE_FEAT_*, supported
	 * ones): written once, by its first GET_INFO (features_set), and
	 * read, both under ring_lock; 0 until then. A behaviour that
	 * changes what an older client sees (DLCACHE_FEAT_IDLE) applies
	 * only to sessions that enabled it.
	 */
	u64 features;
	bool features_set;

	spinlock_t wait_lock;		/* protects ready, cq.ctl->flags */
	struct list_head ready;		/* READY waits, oldest first */
	wait_queue_head_t wq;		/* poll and ENTER waiters */
	struct list_head node;		/* on dlc_sessions; dlc_cache.lock */
};

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

static void dlc_wait_free(struct dlc_session *sess, struct dlc_wait *w)
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

static u32 dlc_pin_all(struct dlc_cache *cache, struct dlc_dataset **v);
static void dlc_unpin_all(struct dlc_dataset **v, u32 n);

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

/* How a fill ends. */
enum dlc_fill_end {
	DLC_END_DONE,		/* bytes were PUT: waiters GET again */
	DLC_END_HANDOFF,	/* aborted: one waiter takes the fill over */
	DLC_END_FAIL,		/* failed: waiters complete -EIO */
};

/*
 * End the fill of placeholder @ph. For a hand-off the first waiter that
 * may write becomes the filler and @ph stays; otherwise every waiter is
 * made ready and @ph leaves the store.
 */
static void dlc_fill_end(struct dlc_dataset *ds, struct dlc_sample *ph,
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

static kuid_t dlc_acct_owner(void);

/* ------------------------------------------------------------------ */
/* Copies in flight                                                    */
/* ------------------------------------------------------------------ */

/*
 * A copy from or to user memory can be made to stall for as long as its
 * caller likes (a buffer on FUSE or NFS, a userfaultfd range). Its sample
 * stays charged to the capacity meanwhile (a PUT's reservation, a GET's
 * reference: dlc_cache.inflight), and a session makes one copy at a time
 * (ring_lock). What one owner's copies hold at once is bounded too, so
 * that one user's stalled copies cannot take the whole capacity: a copy
 * that would take the owner (dlc_acct_owner(): a uid with the uids of its
 * user namespaces) past uid_max_copy_mb (at least one sample of
 * DLC_MAX_SAMPLE_SIZE) is refused with -EDQUOT, without copying.
 */
static unsigned int uid_max_copy_mb = 64;
module_param(uid_max_copy_mb, uint, 0644);
MODULE_PARM_DESC(uid_max_copy_mb,
		 "Bytes in MiB of PUTs and GETs one owner may have copying at once (default 64, at least 16; -EDQUOT beyond)");

/* An owner with copies in flight, freed when its last copy ends. */
struct dlc_copier {
	struct hlist_node node;		/* dlc_copiers; dlc_copy_lock */
	kuid_t uid;			/* constant */
	u64 bytes;			/* charges copying; dlc_copy_lock */
};

/* dlc_copy_lock protects dlc_copiers and every dlc_copier on it. */
static DEFINE_SPINLOCK(dlc_copy_lock);
static DEFINE_HASHTABLE(dlc_copiers, 6);

static struct dlc_copier *dlc_copier_find(kuid_t uid)
{
	struct dlc_copier *c;

	lockdep_assert_held(&dlc_copy_lock);
	hash_for_each_possible(dlc_copiers, c, node, __kuid_val(uid))
		if (uid_eq(c->uid, uid))
			return c;
	return NULL;
}

/*
 * Count @bytes of a copy by the caller's accounting owner. 0 with *@out
 * set, for dlc_copy_end(); -EDQUOT past the owner's bound; -ENOMEM.
 */
static int dlc_copy_begin(u64 bytes, struct dlc_copier **out)
{
	u64 limit = max_t(u64, (u64)READ_ONCE(uid_max_copy_mb) << 20,
			  DLC_MAX_SAMPLE_SIZE);
	struct dlc_copier *c, *spare = NULL;
	kuid_t uid = dlc_acct_owner();
	int ret = 0;

	for (;;) {
		spin_lock(&dlc_copy_lock);
		c = dlc_copier_find(uid);
		if (c || spare)
			break;
		spin_unlock(&dlc_copy_lock);
		/* Charged: one per uid that copies, while it copies. */
		spare = kzalloc(sizeof(*spare), GFP_KERNEL_ACCOUNT);
		if (!spare)
			return -ENOMEM;
	}
	if (!c) {
		c = spare;
		spare = NULL;
		c->uid = uid;
		hash_add(dlc_copiers, &c->node, __kuid_val(uid));
	}
	if (c->bytes + bytes > limit && c->bytes) {
		ret = -EDQUOT;
	} else {
		c->bytes += bytes;
		*out = c;
	}
	spin_unlock(&dlc_copy_lock);
	kfree(spare);
	return ret;
}

/* The copy of dlc_copy_begin()'s @bytes ended. */
static void dlc_copy_end(struct dlc_copier *c, u64 bytes)
{
	spin_lock(&dlc_copy_lock);
	if (WARN_ON_ONCE(c->bytes < bytes))
		bytes = c->bytes;
	c->bytes -= bytes;
	if (c->bytes)
		c = NULL;
	else
		hash_del(&c->node);
	spin_unlock(&dlc_copy_lock);
	kfree(c);
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
	bool may_fill = att->may_write && !ahead;
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
	/* Miss: take the fill when this attachment may PUT. */
	ds->st.misses++;
	if (att->may_write && att->nfills < DLC_MAX_FILLS) {
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

static struct dlc_attachment *dlc_att(struct dlc_session *sess, u32 handle)
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

static void dlc_detach(struct dlc_session *sess, struct dlc_attachment *att);

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

static bool dlc_zero(const void *p, size_t n)
{
	return !memchr_inv(p, 0, n);
}

/*
 * Whether the fields @first to @last (inclusive, in layout order) of the
 * ioctl struct *@s are 0. From ABI 4 the fields the kernel writes (the
 * header's "kernel:") must be 0 on input, else -EINVAL, as reserved
 * fields, so that a later ABI can make them inputs.
 */
#define dlc_out_zero(s, first, last) ({				\
	__auto_type __s = (s);						\
	size_t __off = offsetof(typeof(*__s), first);			\
									\
	dlc_zero((const u8 *)__s + __off,				\
		 offsetofend(typeof(*__s), last) - __off);		\
})

static long dlc_ioc_get_info(struct dlc_session *sess, void __user *uarg)
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

static long dlc_ioc_setup_ring(struct dlc_session *sess, void __user *uarg)
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

static long dlc_ioc_enter(struct dlc_session *sess, void __user *uarg)
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
 * The bits (4 read, 2 write) that @mode gives the caller on a data set of
 * owner @uid and group @gid: the owner's, else the group's, else the
 * others' bits, as for a file.
 */
static u32 dlc_mode_bits(kuid_t uid, kgid_t gid, u32 mode)
{
	if (uid_eq(current_fsuid(), uid))
		mode >>= 6;
	else if (in_group_p(gid))
		mode >>= 3;
	return mode & 6;
}

/*
 * What the caller may do with @ds, in the order of generic_permission():
 * the mode bits first, then CAP_SYS_ADMIN only for what they deny. Read is
 * what ATTACH needs, so a denied read asks capable(), which audits: the
 * caller is refused without it. Write is only offered with the handle, so
 * it is asked without audit: root attaching a data set it may only read
 * by its mode leaves no denial in the audit log or an LSM.
 */
static u32 dlc_perm(const struct dlc_dataset *ds)
{
	u32 bits = dlc_mode_bits(ds->uid, ds->gid, ds->mode);

	if (!(bits & 4)) {
		if (!capable(CAP_SYS_ADMIN))
			return bits;
		bits |= 4;
	}
	if (!(bits & 2) && ns_capable_noaudit(&init_user_ns, CAP_SYS_ADMIN))
		bits |= 2;
	return bits;
}

static void dlc_dataset_unlist(struct kref *ref)
{
	struct dlc_dataset *ds = container_of(ref, struct dlc_dataset, ref);

	lockdep_assert_held(&ds->cache->lock);
	list_del_init(&ds->node);
	ds->cache->ndatasets--;
	WARN_ON_ONCE(ds->consumer_bytes);
	ds->cache->policy_bytes -= ds->policy_size + ds->consumer_bytes;
	dlc_cache_retire(ds->cache, ds);
}

/*
 * Pin listed @ds with one more reference, so that it can be locked after
 * cache->lock is dropped: who reads every data set (STATS, debugfs, the
 * lease work) takes no data set's lock under cache->lock, where one user's
 * long operation (SET_ORDER of millions of IDs) would hold up every
 * ATTACH, DETACH and close on the node. A pinned set may lose its
 * attachments and its idle reference meanwhile: it then stays listed,
 * neither attached nor idle, until dlc_dataset_unpin() frees it (its
 * slot and policy memory count until then, a pin lasting one STATS).
 */
static void dlc_dataset_pin(struct dlc_dataset *ds)
{
	lockdep_assert_held(&ds->cache->lock);
	kref_get(&ds->ref);
}

static void dlc_dataset_unpin(struct dlc_dataset *ds)
{
	struct dlc_cache *cache = ds->cache;
	bool gone;

	mutex_lock(&cache->lock);
	gone = kref_put(&ds->ref, dlc_dataset_unlist);
	mutex_unlock(&cache->lock);
	if (gone)
		dlc_dataset_free(ds);
}

/*
 * Pin every listed data set into @v (DLC_MAX_DATASETS entries) and
 * return how many, for dlc_unpin_all().
 */
static u32 dlc_pin_all(struct dlc_cache *cache, struct dlc_dataset **v)
{
	struct dlc_dataset *ds;
	u32 n = 0;

	lockdep_assert_held(&cache->lock);
	list_for_each_entry(ds, &cache->datasets, node) {
		if (WARN_ON_ONCE(n == DLC_MAX_DATASETS))
			break;
		dlc_dataset_pin(ds);
		v[n++] = ds;
	}
	return n;
}

static void dlc_unpin_all(struct dlc_dataset **v, u32 n)
{
	while (n--) {
		dlc_dataset_unpin(v[n]);
		cond_resched();
	}
}

/* ------------------------------------------------------------------ */
/* Idle data sets                                                      */
/* ------------------------------------------------------------------ */

/*
 * Seconds a data set stays cached after its last detach (0: it is freed
 * then, as up to ABI 2). A module parameter, READ_ONCE where used.
 */
static unsigned int idle_keep_s = 600;

/*
 * The idle work frees the data sets idle for idle_keep_s. A last detach
 * queues it (unless queued already, for an earlier deadline); it queues
 * itself again, for the next deadline, while idle data sets are left; a
 * write to idle_keep_s runs it at once (dlc_idle_set()).
 */
static void dlc_idle_workfn(struct work_struct *work);
static DECLARE_DELAYED_WORK(dlc_idle_work, dlc_idle_workfn);

static unsigned long dlc_idle_jiffies(void)
{
	u64 s = READ_ONCE(idle_keep_s);

	return min_t(u64, s * HZ, MAX_JIFFY_OFFSET);
}

/*
 * Take idle @ds off the cache's list and put its idle reference, the
 * last one unless a pin holds it (dlc_dataset_pin(): the unpin frees it
 * then). The caller frees it with dlc_idle_reap() once it dropped
 * cache->lock (freeing millions of samples must not hold up every
 * ATTACH); @reap holds it meanwhile, through ds->node.
 */
static void dlc_idle_unlist(struct dlc_dataset *ds, struct list_head *reap)
{
	lockdep_assert_held(&ds->cache->lock);
	if (WARN_ON_ONCE(!ds->idle || ds->nattached))
		return;
	ds->idle = false;
	ds->cache->nidle--;
	/* Pinned (dlc_dataset_pin()): dlc_dataset_unpin() frees it. */
	if (!kref_put(&ds->ref, dlc_dataset_unlist))
		return;
	list_add_tail(&ds->node, reap);
}

/* Free the data sets dlc_idle_unlist() put on @reap. No lock held. */
static void dlc_idle_reap(struct list_head *reap)
{
	struct dlc_dataset *ds, *tmp;

	list_for_each_entry_safe(ds, tmp, reap, node) {
		list_del_init(&ds->node);
		dlc_dataset_free(ds);
	}
}

/*
 * Free the idle data sets whose idle_keep_s ran out, or all of them
 * (@all: dlc_exit()). Returns true, with the next deadline in *@next,
 * while idle sets are left.
 */
static bool dlc_idle_expire(struct dlc_cache *cache, bool all,
			    unsigned long *next)
{
	unsigned long keep = dlc_idle_jiffies(), end;
	struct dlc_dataset *ds, *tmp;
	bool more = false;
	LIST_HEAD(reap);

	mutex_lock(&cache->lock);
	list_for_each_entry_safe(ds, tmp, &cache->datasets, node) {
		if (!ds->idle)
			continue;
		end = ds->idle_since + keep;
		if (all || !keep || time_after_eq(jiffies, end)) {
			dlc_idle_unlist(ds, &reap);
			continue;
		}
		if (!more || time_before(end, *next))
			*next = end;
		more = true;
	}
	mutex_unlock(&cache->lock);
	dlc_idle_reap(&reap);
	return more;
}

static void dlc_idle_workfn(struct work_struct *work)
{
	unsigned long next, now;

	if (!dlc_idle_expire(&dlc_cache, false, &next))
		return;
	now = jiffies;
	/* dlc_exit() cancels with _sync: this does not outlive it. */
	mod_delayed_work(system_wq, &dlc_idle_work,
			 time_after(next, now) ? next - now : 0);
}

/*
 * A new idle_keep_s applies at the next check: run the idle work now (a
 * lowered value may have expired idle sets). Runs under
 * kernel_param_lock(), as dlc_exit() clears dlc_ready: nothing queues
 * the work after dlc_exit() cancelled it.
 */
static int dlc_idle_set(const char *val, const struct kernel_param *kp)
{
	unsigned int s;
	int ret;

	ret = kstrtouint(val, 0, &s);
	if (ret)
		return ret;
	WRITE_ONCE(idle_keep_s, s);
	if (READ_ONCE(dlc_ready))
		mod_delayed_work(system_wq, &dlc_idle_work, 0);
	return 0;
}

static const struct kernel_param_ops dlc_idle_ops = {
	.set = dlc_idle_set,
	.get = param_get_uint,
};

module_param_cb(idle_keep_s, &dlc_idle_ops, &idle_keep_s, 0644);
MODULE_PARM_DESC(idle_keep_s,
		 "Seconds a detached data set stays cached for a job that attaches it again (default 600, 0: freed at the last detach)");

/* An ATTACH found @ds: it takes the idle reference over, or a new one. */
static void dlc_dataset_hold(struct dlc_dataset *ds)
{
	lockdep_assert_held(&ds->cache->lock);
	if (ds->idle) {
		ds->idle = false;
		ds->cache->nidle--;
		return;
	}
	kref_get(&ds->ref);
}

/*
 * Drop a reference. The last attachment's becomes the idle reference
 * when @idle (its session enabled DLCACHE_FEAT_IDLE) and idle_keep_s is
 * not 0: the data set stays listed with its samples (see struct
 * dlc_dataset). Otherwise the last one frees the data set, as in ABI 2.
 */
static void dlc_dataset_put(struct dlc_dataset *ds, bool attached, bool idle)
{
	struct dlc_cache *cache = ds->cache;
	unsigned long keep = idle ? dlc_idle_jiffies() : 0;
	bool gone = false;

	mutex_lock(&cache->lock);
	if (attached)
		ds->nattached--;
	if (attached && !ds->nattached && keep) {
		ds->idle = true;
		ds->idle_since = jiffies;
		cache->nidle++;
		/* Queued already: for an earlier deadline. */
		queue_delayed_work(system_wq, &dlc_idle_work, keep);
	} else {
		gone = kref_put(&ds->ref, dlc_dataset_unlist);
	}
	mutex_unlock(&cache->lock);
	if (gone)
		dlc_dataset_free(ds);
}

static void dlc_consumer_uncharge(struct dlc_dataset *ds, u64 bytes)
{
	struct dlc_cache *cache = ds->cache;

	mutex_lock(&cache->lock);
	cache->policy_bytes -= bytes;
	ds->consumer_bytes -= bytes;
	mutex_unlock(&cache->lock);
}

/* Free consumer @c that dlc_store_leave() gave back, and its charge. */
static void dlc_consumer_release(struct dlc_dataset *ds, struct dlc_consumer *c)
{
	u64 bytes = c->mem_size;

	dlc_consumer_free(c);
	dlc_consumer_uncharge(ds, bytes);
}

/*
 * Detach @att: its parked and ready waits end without a completion, its
 * fills go to a waiter (or end), and its data set reference is dropped.
 */
static void dlc_detach(struct dlc_session *sess, struct dlc_attachment *att)
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
 * Per-owner limits on data set creation, so that one user cannot take the
 * global limits (DLC_MAX_DATASETS, the policy memory) that the others need.
 * They count by accounting owner (dlc_acct_owner()), not by kuid. Read at
 * each creation.
 */
static unsigned int uid_max_datasets = 16;
module_param(uid_max_datasets, uint, 0644);
MODULE_PARM_DESC(uid_max_datasets,
		 "Data sets one owner (a uid with its user namespaces' uids) may have at once (default 16; -EDQUOT beyond)");

static unsigned int uid_max_policy_mb;
module_param(uid_max_policy_mb, uint, 0644);
MODULE_PARM_DESC(uid_max_policy_mb,
		 "Policy memory in MiB of one owner's data sets (0: a quarter of the global policy limit; -EDQUOT beyond)");

/*
 * A data set being created: its slot and policy memory are counted on
 * cache->reserved while its memory is allocated without cache->lock.
 */
struct dlc_reservation {
	struct list_head node;		/* cache->reserved */
	kuid_t uid;			/* the owner to be */
	kuid_t acct;			/* its accounting owner */
	u64 bytes;			/* policy memory */
};

/*
 * The accounting owner of the caller, in the manner of ucounts: a uid
 * that creates user namespaces (or is given /etc/subuid ranges in them)
 * gets no more than one uid's quota. For a caller in a user namespace,
 * the uid in init_user_ns that owns the outermost namespace of its chain
 * (the one whose parent is init_user_ns); for a caller in init_user_ns,
 * its own fsuid.
 */
static kuid_t dlc_acct_owner(void)
{
	const struct user_namespace *ns = current_user_ns();

	if (ns == &init_user_ns)
		return current_fsuid();
	while (ns->parent != &init_user_ns)
		ns = ns->parent;
	return ns->owner;
}

static u64 dlc_uid_policy_limit(const struct dlc_cache *cache)
{
	u64 mb = READ_ONCE(uid_max_policy_mb);

	return mb ? mb << 20 : cache->policy_limit / 4;
}

/*
 * Data sets of accounting owner @acct and their policy bytes, reservations
 * included. At most DLC_MAX_DATASETS entries in all: a walk is cheap.
 */
static void dlc_uid_usage(struct dlc_cache *cache, kuid_t acct, u32 *n,
			  u64 *bytes)
{
	struct dlc_reservation *r;
	struct dlc_dataset *ds;

	lockdep_assert_held(&cache->lock);
	*n = 0;
	*bytes = 0;
	list_for_each_entry(ds, &cache->datasets, node) {
		if (uid_eq(ds->acct, acct)) {
			(*n)++;
			*bytes += ds->policy_size + ds->consumer_bytes;
		}
	}
	list_for_each_entry(r, &cache->reserved, node) {
		if (uid_eq(r->acct, acct)) {
			(*n)++;
			*bytes += r->bytes;
		}
	}
}

/* Idle data sets a creation would free: counts and policy bytes. */
struct dlc_room {
	u32 n, uid_n;			/* all, and the creator's */
	u64 bytes, uid_bytes;
};

/*
 * Whether @bytes more policy memory for accounting owner @acct fits, with
 * the idle sets of @f freed: 0, -ENOMEM past the global policy limit,
 * -EDQUOT past the owner's. The owner's data sets (reservations included)
 * in *@n.
 */
static int dlc_policy_room(struct dlc_cache *cache, kuid_t acct, u64 bytes,
			   const struct dlc_room *f, u32 *n)
{
	u64 used;

	lockdep_assert_held(&cache->lock);
	/* Bound the kernel memory unprivileged users can pin. */
	if (cache->policy_bytes - f->bytes + bytes > cache->policy_limit)
		return -ENOMEM;
	dlc_uid_usage(cache, acct, n, &used);
	if (used - f->uid_bytes + bytes > dlc_uid_policy_limit(cache))
		return -EDQUOT;
	return 0;
}

/*
 * Whether a data set of @bytes policy memory for accounting owner @acct
 * fits, with the idle sets of @f freed: 0, -ENOSPC when DLC_MAX_DATASETS
 * exist, -ENOMEM past the global policy limit, -EDQUOT past the owner's
 * limits.
 */
static int dlc_reserve_check(struct dlc_cache *cache, kuid_t acct, u64 bytes,
			     const struct dlc_room *f)
{
	u32 n;
	int ret;

	lockdep_assert_held(&cache->lock);
	if (cache->ndatasets + cache->nreserved - f->n >= DLC_MAX_DATASETS)
		return -ENOSPC;
	ret = dlc_policy_room(cache, acct, bytes, f, &n);
	if (ret)
		return ret;
	if (n - f->uid_n >= READ_ONCE(uid_max_datasets))
		return -EDQUOT;
	return 0;
}

/*
 * The data set idle longest, of accounting owner *@acct unless @acct is
 * NULL, whose list position is not set in @picked; its position in *@pos.
 */
static struct dlc_dataset *dlc_idle_oldest(struct dlc_cache *cache,
					   const kuid_t *acct, u64 picked,
					   u32 *pos)
{
	struct dlc_dataset *ds, *best = NULL;
	u32 i = 0;

	lockdep_assert_held(&cache->lock);
	BUILD_BUG_ON(DLC_MAX_DATASETS > 64);
	list_for_each_entry(ds, &cache->datasets, node) {
		if (ds->idle && !(picked & BIT_ULL(i)) &&
		    (!acct || uid_eq(ds->acct, *acct)) &&
		    (!best || time_before(ds->idle_since, best->idle_since))) {
			best = ds;
			*pos = i;
		}
		i++;
	}
	return best;
}

/*
 * Whether a data set of @bytes policy memory for accounting owner @acct
 * (dlc_acct_owner()) fits once
 * idle data sets give way: while a limit is in the way, the set idle
 * longest is picked (for the owner's limits, -EDQUOT, only the owner's
 * own idle sets count). 0 with the picks' list positions in *@picked, or
 * the error of dlc_reserve_check() when the picks cannot make room.
 * Nothing is freed here.
 */
static int dlc_room_pick(struct dlc_cache *cache, kuid_t acct, u64 bytes,
			 u64 *picked)
{
	struct dlc_dataset *ds;
	struct dlc_room f = {};
	u32 pos;
	int ret;

	lockdep_assert_held(&cache->lock);
	*picked = 0;
	while ((ret = dlc_reserve_check(cache, acct, bytes, &f))) {
		ds = dlc_idle_oldest(cache, ret == -EDQUOT ? &acct : NULL,
				     *picked, &pos);
		if (!ds)
			return ret;
		*picked |= BIT_ULL(pos);
		f.n++;
		f.bytes += ds->policy_size;
		if (uid_eq(ds->acct, acct)) {
			f.uid_n++;
			f.uid_bytes += ds->policy_size;
		}
	}
	return 0;
}

/* Unlist the idle sets dlc_room_pick() picked onto @reap. */
static void dlc_room_take(struct dlc_cache *cache, u64 picked,
			  struct list_head *reap)
{
	struct dlc_dataset *ds, *tmp;
	u32 i = 0;

	lockdep_assert_held(&cache->lock);
	list_for_each_entry_safe(ds, tmp, &cache->datasets, node) {
		if (picked & BIT_ULL(i))
			dlc_idle_unlist(ds, reap);
		i++;
	}
}

/*
 * Reserve a data set slot and @bytes of policy memory for accounting
 * owner r->acct, counting the idle sets that would give way
 * (dlc_room_pick()) as room, but freeing none: they go only once the new set's memory is allocated
 * (dlc_dataset_create_locked()), so a creation that fails (its memory
 * cgroup's limit, an allocation failure) frees nobody's idle data set.
 * Meanwhile the node holds both, at most the policy memory of the idle
 * sets counted as room above the limits. Returns 0 or the error of
 * dlc_reserve_check().
 */
static int dlc_reserve(struct dlc_cache *cache, struct dlc_reservation *r,
		       u64 bytes)
{
	u64 picked;
	int ret;

	lockdep_assert_held(&cache->lock);
	ret = dlc_room_pick(cache, r->acct, bytes, &picked);
	if (ret)
		return ret;
	r->bytes = bytes;
	list_add_tail(&r->node, &cache->reserved);
	cache->nreserved++;
	cache->policy_bytes += bytes;
	return 0;
}

static void dlc_unreserve(struct dlc_cache *cache, struct dlc_reservation *r)
{
	lockdep_assert_held(&cache->lock);
	list_del(&r->node);
	cache->nreserved--;
	cache->policy_bytes -= r->bytes;
}

/*
 * Charge @bytes of a consumer's time line to @ds, and so to its owner:
 * -ENOMEM past the global policy limit, -EDQUOT past the owner's. The
 * owner pays, since only users its mode lets write can add consumers, and
 * at most DLC_MAX_CONSUMERS - 1 per data set.
 */
static int dlc_consumer_charge(struct dlc_cache *cache, struct dlc_dataset *ds,
			       u64 bytes)
{
	static const struct dlc_room none;
	u32 n;
	int ret;

	ret = dlc_policy_room(cache, ds->acct, bytes, &none, &n);
	if (ret)
		return ret;
	cache->policy_bytes += bytes;
	ds->consumer_bytes += bytes;
	return 0;
}

/*
 * Make @m a member of @ds's consumer of @job, creating it when missing.
 * The time line (up to a few hundred MB) is charged under cache->lock and
 * allocated without any lock; a racing ATTACH that listed the same job
 * meanwhile wins and ours is freed. Returns 1 when created, 0 when
 * joined, or -errno.
 */
static int dlc_consumer_join(struct dlc_dataset *ds, struct dlc_member *m,
			     u64 job)
{
	struct dlc_cache *cache = ds->cache;
	struct dlc_consumer *spare = NULL;
	u64 bytes;
	int ret;

	mutex_lock(&ds->lock);
	ret = dlc_store_join(ds, m, job, &spare);
	mutex_unlock(&ds->lock);
	if (ret != -EAGAIN)
		return ret;

	bytes = dlc_policy_line_mem_size(ds->nsamples, ds->window);
	mutex_lock(&cache->lock);
	ret = dlc_consumer_charge(cache, ds, bytes);
	mutex_unlock(&cache->lock);
	if (ret)
		return ret;
	spare = dlc_consumer_alloc(ds, job);
	if (IS_ERR(spare)) {
		ret = PTR_ERR(spare);
		goto uncharge;
	}
	mutex_lock(&ds->lock);
	ret = dlc_store_join(ds, m, job, &spare);
	mutex_unlock(&ds->lock);
	if (!spare)
		return ret;
	dlc_consumer_free(spare);
uncharge:
	dlc_consumer_uncharge(ds, bytes);
	/* Joined a consumer another ATTACH listed meanwhile, or failed. */
	return ret;
}

/* The data set named (@key, @owner), or NULL. */
static struct dlc_dataset *dlc_dataset_find(struct dlc_cache *cache,
					    const u64 key[2], kuid_t owner)
{
	struct dlc_dataset *ds;

	lockdep_assert_held(&cache->lock);
	list_for_each_entry(ds, &cache->datasets, node)
		if (ds->key[0] == key[0] && ds->key[1] == key[1] &&
		    uid_eq(ds->uid, owner))
			return ds;
	return NULL;
}

/*
 * Create the caller's data set (@a->key, current_fsuid()) and list it.
 * The policy arrays (up to a few hundred MB) are allocated without
 * cache->lock, which every ATTACH, STATS and the shrinker take: the slot
 * and the memory are reserved under the lock first (dlc_reserve()), and
 * the idle sets that must give way are unlisted onto @reap once the
 * memory is there, for the caller to free once it dropped cache->lock.
 * When a racing ATTACH listed that data set meanwhile, returns theirs and
 * sets *@spare to ours, for the caller to free then too; when the room is
 * gone meanwhile (an idle set counted as room was attached again), the
 * error, with *@spare set. Called and returns with cache->lock held.
 */
static struct dlc_dataset *dlc_dataset_create_locked(struct dlc_cache *cache,
						     const struct dlcache_attach *a,
						     u32 mode,
						     struct dlc_dataset **spare,
						     struct list_head *reap)
{
	struct dlc_reservation resv = {
		.uid = current_fsuid(),
		.acct = dlc_acct_owner(),
	};
	struct dlc_dataset *ds, *mine;
	u64 picked;
	int ret;

	lockdep_assert_held(&cache->lock);
	*spare = NULL;
	ret = dlc_reserve(cache, &resv,
			  dlc_dataset_mem_size(a->nsamples, a->window));
	if (ret)
		return ERR_PTR(ret);
	mutex_unlock(&cache->lock);

	mine = dlc_dataset_create(cache, a->key, a->nsamples, a->window,
				  a->lookahead, mode);
	if (!IS_ERR(mine)) {
		mine->uid = resv.uid;
		mine->gid = current_fsgid();
		mine->acct = resv.acct;
	}

	mutex_lock(&cache->lock);
	dlc_unreserve(cache, &resv);
	if (IS_ERR(mine))
		return mine;
	ds = dlc_dataset_find(cache, a->key, resv.uid);
	if (ds) {
		*spare = mine;
		return ds;
	}
	/* The memory is there: only now do idle sets give way, if needed. */
	ret = dlc_room_pick(cache, resv.acct, resv.bytes, &picked);
	if (ret) {
		*spare = mine;
		return ERR_PTR(ret);
	}
	dlc_room_take(cache, picked, reap);
	list_add_tail(&mine->node, &cache->datasets);
	cache->ndatasets++;
	cache->policy_bytes += mine->policy_size;
	return mine;
}

/*
 * The window that dlc_dataset_create() gives a data set asked with
 * @window (not 0): a multiple of 64 (dlc_dataset_window()) rounded up to a
 * power of two (dlc_policy_init()).
 */
static u32 dlc_attach_window(u32 window)
{
	return roundup_pow_of_two(ALIGN(window, 64));
}

/*
 * Whether the existing @ds is the data set @a asks for: 0, -EINVAL for
 * another sample count, -EEXIST for another mode, window or lookahead.
 * A field of 0 asks for the default where this ATTACH could have created
 * the data set (@may_create: the mode 0600; window and lookahead accept
 * any), else for any value; other values are compared as created.
 */
static int dlc_attach_match(const struct dlc_dataset *ds,
			    const struct dlcache_attach *a, bool may_create)
{
	u32 mode = a->mode ? a->mode : (may_create ? 0600 : 0);

	if (ds->nsamples != a->nsamples)
		return -EINVAL;
	if (mode && ds->mode != mode)
		return -EEXIST;
	if (a->window && ds->window != dlc_attach_window(a->window))
		return -EEXIST;
	if (a->lookahead && ds->lookahead != min(a->lookahead, ds->window))
		return -EEXIST;
	return 0;
}

static long dlc_ioc_attach(struct dlc_session *sess, void __user *uarg)
{
	struct dlc_cache *cache = sess->cache;
	struct dlc_dataset *ds, *spare = NULL;
	struct dlc_attachment *att;
	struct dlcache_attach a;
	bool may_create;
	u32 slot, perm, mode;
	LIST_HEAD(reap);
	kuid_t owner;
	long ret;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.resv0 || !dlc_zero(a.reserved, sizeof(a.reserved)) ||
	    a.handle || a.owner_gid || a.result_flags ||
	    (a.owner_uid && !(a.flags & DLCACHE_ATTACH_F_OWNER)) ||
	    (a.flags & ~(DLCACHE_ATTACH_F_NOCREATE | DLCACHE_ATTACH_F_EXCL |
			 DLCACHE_ATTACH_F_OWNER | DLCACHE_ATTACH_F_JOB |
			 DLCACHE_ATTACH_F_REPLACE)) ||
	    (a.job && !(a.flags & DLCACHE_ATTACH_F_JOB)) ||
	    ((a.flags & DLCACHE_ATTACH_F_REPLACE) &&
	     (a.flags & DLCACHE_ATTACH_F_NOCREATE)))
		return -EINVAL;
	if (!a.nsamples || a.nsamples > DLC_MAX_SAMPLES ||
	    (a.mode & ~0666U) || a.window > DLC_MAX_WINDOW ||
	    a.lookahead > DLC_MAX_WINDOW)
		return -EINVAL;
	/*
	 * Data sets are named by (key, owner). A key alone names the
	 * caller's own: another user's is reached only by naming its owner,
	 * so nobody can plant bytes under a key someone else will use.
	 */
	if (a.flags & DLCACHE_ATTACH_F_OWNER) {
		owner = make_kuid(current_user_ns(), a.owner_uid);
		if (!uid_valid(owner))
			return -EINVAL;
	} else {
		owner = current_fsuid();
	}
	/* Only the owner replaces, whether the data set exists or not. */
	may_create = !(a.flags & DLCACHE_ATTACH_F_NOCREATE) &&
		     uid_eq(owner, current_fsuid());
	if ((a.flags & DLCACHE_ATTACH_F_REPLACE) && !may_create)
		return -EPERM;
	mode = a.mode ? a.mode : 0600;

	att = kzalloc(sizeof(*att), GFP_KERNEL_ACCOUNT);
	if (!att)
		return -ENOMEM;
	INIT_LIST_HEAD(&att->fills);
	INIT_LIST_HEAD(&att->member.link);

	mutex_lock(&sess->ring_lock);
	for (slot = 0; slot < DLC_MAX_HANDLES; slot++)
		if (!sess->atts[slot])
			break;
	if (slot == DLC_MAX_HANDLES) {
		ret = -EMFILE;
		goto unlock_ring;
	}

	a.result_flags = 0;
	mutex_lock(&cache->lock);
	/* Under cache->lock: ordered against the drain's start. */
	ret = -ESHUTDOWN;
	if (dlc_draining())
		goto unlock_cache;
	ds = dlc_dataset_find(cache, a.key, owner);
	/*
	 * The owner's DLCACHE_ATTACH_F_REPLACE: a data set kept idle that
	 * is not the one asked for makes way for a new, empty one as asked
	 * (its samples may come from users its mode let write). One that
	 * is attached stays as it is.
	 */
	if (ds && (a.flags & DLCACHE_ATTACH_F_REPLACE) &&
	    !(a.flags & DLCACHE_ATTACH_F_EXCL) && (dlc_perm(ds) & 4) &&
	    dlc_attach_match(ds, &a, may_create)) {
		ret = -EBUSY;
		if (!ds->idle)
			goto unlock_cache;
		dlc_idle_unlist(ds, &reap);
		ds = NULL;
	}
	if (!ds) {
		ret = -ENOENT;
		/* Never another user's data set, whoever asks. */
		if (!may_create)
			goto unlock_cache;
		/* The creator needs read, as any attacher: else nothing. */
		ret = -EACCES;
		if (!(mode & 0400) && !capable(CAP_SYS_ADMIN))
			goto unlock_cache;
		ds = dlc_dataset_create_locked(cache, &a, mode, &spare, &reap);
		if (IS_ERR(ds)) {
			ret = PTR_ERR(ds);
			goto unlock_cache;
		}
		if (!spare) {
			a.result_flags |= DLCACHE_ATTACH_CREATED;
			perm = dlc_perm(ds);
			goto attach;
		}
		/* A racing ATTACH created it first: attach to theirs. */
	}
	/*
	 * Permission before existence: another owner's data set that the
	 * caller may not read answers as a missing one, whatever the flags
	 * and sample count asked, so that nobody learns of it.
	 */
	perm = dlc_perm(ds);
	if (!(perm & 4)) {
		ret = uid_eq(owner, current_fsuid()) ? -EACCES : -ENOENT;
		goto unlock_cache;
	}
	ret = -EEXIST;
	if (a.flags & DLCACHE_ATTACH_F_EXCL)
		goto unlock_cache;
	ret = dlc_attach_match(ds, &a, may_create);
	if (ret)
		goto unlock_cache;
	dlc_dataset_hold(ds);
attach:
	ds->nattached++;
	mutex_unlock(&cache->lock);
	if (spare)
		dlc_dataset_free(spare);
	dlc_idle_reap(&reap);

	att->sess = sess;
	att->ds = ds;
	att->handle = slot + 1;
	att->may_read = perm & 4;
	att->may_write = perm & 2;
	sess->atts[slot] = att;

	a.mode = ds->mode;
	a.window = ds->window;
	a.lookahead = ds->lookahead;
	a.handle = att->handle;
	a.owner_uid = from_kuid_munged(current_user_ns(), ds->uid);
	a.owner_gid = from_kgid_munged(current_user_ns(), ds->gid);
	if (att->may_read)
		a.result_flags |= DLCACHE_ATTACH_MAY_READ;
	if (att->may_write)
		a.result_flags |= DLCACHE_ATTACH_MAY_WRITE;
	/* Only writers move a time line: a reader joins no consumer. */
	if ((a.flags & DLCACHE_ATTACH_F_JOB) && att->may_write) {
		ret = dlc_consumer_join(ds, &att->member, a.job);
		if (ret < 0) {
			dlc_detach(sess, att);
			mutex_unlock(&sess->ring_lock);
			return ret;
		}
		a.result_flags |= DLCACHE_ATTACH_JOINED;
		if (ret)
			a.result_flags |= DLCACHE_ATTACH_JOB_CREATED;
	}
	if (copy_to_user(uarg, &a, sizeof(a))) {
		dlc_detach(sess, att);
		mutex_unlock(&sess->ring_lock);
		return -EFAULT;
	}
	mutex_unlock(&sess->ring_lock);
	return 0;

unlock_cache:
	mutex_unlock(&cache->lock);
	if (spare)
		dlc_dataset_free(spare);
	dlc_idle_reap(&reap);
unlock_ring:
	mutex_unlock(&sess->ring_lock);
	kfree(att);
	return ret;
}

static long dlc_ioc_detach(struct dlc_session *sess, void __user *uarg)
{
	struct dlc_attachment *att;
	struct dlcache_detach d;

	if (copy_from_user(&d, uarg, sizeof(d)))
		return -EFAULT;
	if (d.flags || !dlc_zero(d.reserved, sizeof(d.reserved)))
		return -EINVAL;
	mutex_lock(&sess->ring_lock);
	att = dlc_att(sess, d.handle);
	if (att)
		dlc_detach(sess, att);
	mutex_unlock(&sess->ring_lock);
	return att ? 0 : -EBADF;
}

static long dlc_ioc_set_order(struct dlc_session *sess, void __user *uarg)
{
	struct dlc_attachment *att;
	struct dlcache_order o;
	struct dlc_dataset *ds;
	u32 *ids;
	long ret;

	if (copy_from_user(&o, uarg, sizeof(o)))
		return -EFAULT;
	if (o.flags || !dlc_zero(o.reserved, sizeof(o.reserved)))
		return -EINVAL;
	if (!o.len || o.len > DLC_MAX_ORDER_LEN)
		return -EINVAL;

	mutex_lock(&sess->ring_lock);
	ret = -ESHUTDOWN;
	if (dlc_draining())
		goto unlock;
	att = dlc_att(sess, o.handle);
	ret = -EBADF;
	if (!att)
		goto unlock;
	ret = -EACCES;
	if (!att->may_write)
		goto unlock;
	ds = att->ds;
	ret = -EINVAL;
	if (o.len > ds->window)
		goto unlock;
	ret = -ENOMEM;
	ids = kvmalloc_array(o.len, sizeof(*ids), GFP_KERNEL_ACCOUNT | __GFP_NOWARN |
			     __GFP_RETRY_MAYFAIL);
	if (!ids)
		goto unlock;
	ret = -EFAULT;
	if (copy_from_user(ids, u64_to_user_ptr(o.ids),
			   (size_t)o.len * sizeof(*ids)))
		goto free_ids;
	mutex_lock(&ds->lock);
	ret = dlc_store_set_order(ds, &att->member, o.epoch, ids, o.len);
	mutex_unlock(&ds->lock);
free_ids:
	kvfree(ids);
unlock:
	mutex_unlock(&sess->ring_lock);
	return ret;
}

/*
 * What STATS shows of @ds without its lock: what is constant, and the
 * cache-lock fields (READ_ONCE: the caller holds cache->lock, or an
 * attachment, and then @ds is not idle).
 */
static void dlc_fill_ds_ident(struct dlc_dataset *ds, struct dlcache_stats *st)
{
	st->ds_key[0] = ds->key[0];
	st->ds_key[1] = ds->key[1];
	st->ds_nsamples = ds->nsamples;
	st->ds_mode = ds->mode;
	st->ds_owner_uid = from_kuid_munged(current_user_ns(), ds->uid);
	st->ds_owner_gid = from_kgid_munged(current_user_ns(), ds->gid);
	st->ds_attached = READ_ONCE(ds->nattached);
	st->ds_window = ds->window;
	if (READ_ONCE(ds->idle)) {
		st->ds_flags |= DLCACHE_DS_F_IDLE;
		st->ds_idle_s = (jiffies - READ_ONCE(ds->idle_since)) / HZ;
	}
}

/*
 * What STATS shows of @ds under its lock, taken here: never under
 * cache->lock (see dlc_dataset_pin()). @m: the caller's member, whose
 * time line is shown (NULL: line 0).
 */
static void dlc_fill_ds_locked(struct dlc_dataset *ds, struct dlc_member *m,
			       struct dlcache_stats *st)
{
	const struct dlc_policy_line *l;

	mutex_lock(&ds->lock);
	l = &ds->policy.line[dlc_store_line(m)];
	st->ds_cursor = l->cursor;
	st->ds_end = l->end;
	st->ds_consumers = dlc_store_consumers(ds);
	st->ds_members = m && m->cons ? m->cons->nmembers : 0;
	dlc_store_counters(ds, &st->dataset);
	mutex_unlock(&ds->lock);
}

static long dlc_ioc_stats(struct dlc_session *sess, void __user *uarg)
{
	struct dlc_cache *cache = sess->cache;
	struct dlc_dataset *ds, *found = NULL;
	struct dlc_attachment *att;
	struct dlcache_stats *st;
	u32 flags, i = 0;
	long ret = 0;
	bool admin;

	st = kzalloc(sizeof(*st), GFP_KERNEL);
	if (!st)
		return -ENOMEM;
	if (copy_from_user(st, uarg, sizeof(*st))) {
		ret = -EFAULT;
		goto free_st;
	}
	flags = st->flags;
	if ((flags & ~(DLCACHE_STATS_F_DATASET | DLCACHE_STATS_F_INDEX)) ||
	    ((flags & DLCACHE_STATS_F_INDEX) &&
	     !(flags & DLCACHE_STATS_F_DATASET)) ||
	    (st->handle && !(flags & DLCACHE_STATS_F_DATASET)) ||
	    !dlc_zero(st->reserved, sizeof(st->reserved)) ||
	    !dlc_out_zero(st, capacity_bytes, ds_idle_s)) {
		ret = -EINVAL;
		goto free_st;
	}
	i = st->handle;
	memset(st, 0, sizeof(*st));
	st->handle = i;
	st->flags = flags;
	i = 0;
	/*
	 * The list shows the data sets the caller could attach by their
	 * modes, all of them to CAP_SYS_ADMIN. Asked without audit: STATS
	 * is not refused without it, it only shows less.
	 */
	admin = ns_capable_noaudit(&init_user_ns, CAP_SYS_ADMIN);

	mutex_lock(&cache->lock);
	st->capacity_bytes = cache->capacity;
	st->used_bytes = atomic64_read(&cache->used);
	st->nsessions = cache->nsessions;
	if (flags & DLCACHE_STATS_F_INDEX)
		ret = -ENOENT;
	list_for_each_entry(ds, &cache->datasets, node) {
		if (!admin && !(dlc_mode_bits(ds->uid, ds->gid, ds->mode) & 4))
			continue;
		if ((flags & DLCACHE_STATS_F_INDEX) && i == st->handle) {
			dlc_fill_ds_ident(ds, st);
			/* Its lock is taken below, without cache->lock. */
			dlc_dataset_pin(ds);
			found = ds;
			ret = 0;
		}
		i++;
	}
	st->ndatasets = admin ? cache->ndatasets : i;
	dlc_cache_counters(cache, &st->global);
	mutex_unlock(&cache->lock);
	if (found) {
		dlc_fill_ds_locked(found, NULL, st);
		dlc_dataset_unpin(found);
	}
	if (ret)
		goto free_st;

	if ((flags & DLCACHE_STATS_F_DATASET) &&
	    !(flags & DLCACHE_STATS_F_INDEX)) {
		mutex_lock(&sess->ring_lock);
		att = dlc_att(sess, st->handle);
		if (att) {
			dlc_fill_ds_ident(att->ds, st);
			dlc_fill_ds_locked(att->ds, &att->member, st);
		}
		mutex_unlock(&sess->ring_lock);
		if (!att) {
			ret = -EBADF;
			goto free_st;
		}
	}
	if (copy_to_user(uarg, st, sizeof(*st)))
		ret = -EFAULT;
free_st:
	kfree(st);
	return ret;
}

static long dlc_ioc_set_capacity(struct dlc_session *sess, void __user *uarg)
{
	struct dlcache_capacity c;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (copy_from_user(&c, uarg, sizeof(c)))
		return -EFAULT;
	if (c.flags || c.resv0 || !dlc_zero(c.reserved, sizeof(c.reserved)) ||
	    c.old_bytes)
		return -EINVAL;
	c.old_bytes = dlc_cache_set_capacity(sess->cache, c.bytes);
	if (copy_to_user(uarg, &c, sizeof(c)))
		return -EFAULT;
	return 0;
}

static long dlc_ioc_drop(struct dlc_session *sess, void __user *uarg)
{
	struct dlc_cache *cache = sess->cache;
	struct dlc_dataset *ds, *tmp;
	struct dlcache_drop d;
	bool found = false;
	LIST_HEAD(reap);

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (copy_from_user(&d, uarg, sizeof(d)))
		return -EFAULT;
	if ((d.flags & ~DLCACHE_DROP_F_KEY) || d.resv0 ||
	    !dlc_zero(d.reserved, sizeof(d.reserved)) || d.dropped_bytes)
		return -EINVAL;
	if (!(d.flags & DLCACHE_DROP_F_KEY) && (d.key[0] || d.key[1]))
		return -EINVAL;
	d.dropped_bytes = 0;
	mutex_lock(&cache->lock);
	list_for_each_entry_safe(ds, tmp, &cache->datasets, node) {
		if ((d.flags & DLCACHE_DROP_F_KEY) &&
		    (ds->key[0] != d.key[0] || ds->key[1] != d.key[1]))
			continue;
		found = true;
		/* An idle data set goes entirely, its samples with it. */
		if (ds->idle) {
			d.dropped_bytes += READ_ONCE(ds->used);
			dlc_idle_unlist(ds, &reap);
			continue;
		}
		mutex_lock(&ds->lock);
		d.dropped_bytes += dlc_store_drop(ds);
		mutex_unlock(&ds->lock);
	}
	mutex_unlock(&cache->lock);
	dlc_idle_reap(&reap);
	if ((d.flags & DLCACHE_DROP_F_KEY) && !found)
		return -ENOENT;
	if (copy_to_user(uarg, &d, sizeof(d)))
		return -EFAULT;
	return 0;
}

/*
 * Start or end the drain. Starting it wakes every session's sleepers
 * (ENTER, poll()), which then see it. Returns the sessions open.
 */
static u32 dlc_drain_set(struct dlc_cache *cache, bool on)
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

static long dlc_ioc_drain(struct dlc_session *sess, void __user *uarg)
{
	struct dlcache_drain d;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (copy_from_user(&d, uarg, sizeof(d)))
		return -EFAULT;
	if (d.resv0 || !dlc_zero(d.reserved, sizeof(d.reserved)) ||
	    !dlc_out_zero(&d, nsessions, draining) ||
	    (d.flags & ~(DLCACHE_DRAIN_F_OFF | DLCACHE_DRAIN_F_QUERY)) ||
	    d.flags == (DLCACHE_DRAIN_F_OFF | DLCACHE_DRAIN_F_QUERY))
		return -EINVAL;
	if (d.flags & DLCACHE_DRAIN_F_QUERY) {
		mutex_lock(&sess->cache->lock);
		d.nsessions = sess->cache->nsessions;
		mutex_unlock(&sess->cache->lock);
	} else {
		d.nsessions = dlc_drain_set(sess->cache,
					    !(d.flags & DLCACHE_DRAIN_F_OFF));
	}
	d.draining = dlc_draining();
	if (copy_to_user(uarg, &d, sizeof(d)))
		return -EFAULT;
	return 0;
}

/*
 * The commands, generated from DLCACHE_IOCTLS: indexed by _IOC_NR, each
 * with its full command word (size and direction included) and handler.
 * The build fails unless a command's #define is the table's number,
 * direction and struct, and the struct has the table's size and ends in
 * reserved[] (dlc_check_abi() catches a number used twice).
 */
struct dlc_ioc {
	unsigned int cmd;
	long (*fn)(struct dlc_session *sess, void __user *uarg);
};

#define DLC_IOC_ENTRY(NAME, name, nr, type, size, dir)			\
	[_IOC_NR(DLCACHE_IOC_##NAME)] = {					\
		DLCACHE_IOC_##NAME +						\
		BUILD_BUG_ON_ZERO(DLCACHE_IOC_##NAME !=			\
				  _##dir(DLCACHE_IOC_MAGIC, nr, struct type)) +	\
		BUILD_BUG_ON_ZERO(sizeof(struct type) != (size)) +		\
		BUILD_BUG_ON_ZERO(offsetofend(struct type, reserved) !=	\
				  sizeof(struct type)),				\
		dlc_ioc_##name							\
	},
static const struct dlc_ioc dlc_iocs[] = {
	DLCACHE_IOCTLS(DLC_IOC_ENTRY)
};

#undef DLC_IOC_ENTRY

static long dlc_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct dlc_session *sess = file->private_data;
	unsigned int nr = _IOC_NR(cmd);

	if (_IOC_TYPE(cmd) != DLCACHE_IOC_MAGIC || nr >= ARRAY_SIZE(dlc_iocs))
		return -ENOTTY;
	nr = array_index_nospec(nr, ARRAY_SIZE(dlc_iocs));
	if (!dlc_iocs[nr].fn || dlc_iocs[nr].cmd != cmd)
		return -ENOTTY;
	return dlc_iocs[nr].fn(sess, (void __user *)arg);
}

/* ------------------------------------------------------------------ */
/* File operations                                                     */
/* ------------------------------------------------------------------ */

static int dlc_open(struct inode *inode, struct file *file)
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
static int dlc_release(struct inode *inode, struct file *file)
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

static int dlc_mmap(struct file *file, struct vm_area_struct *vma)
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

static __poll_t dlc_poll(struct file *file, struct poll_table_struct *pt)
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

static const struct file_operations dlc_fops = {
	.owner = THIS_MODULE,
	.open = dlc_open,
	.release = dlc_release,
	.unlocked_ioctl = dlc_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = dlc_mmap,
	.poll = dlc_poll,
	/* No .llseek: lseek() fails with -ESPIPE (see compat.h). */
};

static struct miscdevice dlc_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "dlcache",
	.fops = &dlc_fops,
	.mode = 0660,
};

/* ------------------------------------------------------------------ */
/* Shrinker, module parameter, debugfs                                 */
/* ------------------------------------------------------------------ */

static unsigned long dlc_shrink_count(struct shrinker *shrink,
				      struct shrink_control *sc)
{
	/* What copies hold (inflight) is not there to evict. */
	s64 held = atomic64_read(&dlc_cache.used) -
		   atomic64_read(&dlc_cache.inflight);
	unsigned long pages = held > 0 ? (u64)held >> PAGE_SHIFT : 0;

	return pages ? pages : SHRINK_EMPTY;
}

static unsigned long dlc_shrink_scan(struct shrinker *shrink,
				     struct shrink_control *sc)
{
	u64 freed = dlc_cache_shrink(&dlc_cache,
				     (u64)sc->nr_to_scan << PAGE_SHIFT, true);

	return freed ? freed >> PAGE_SHIFT : SHRINK_STOP;
}

static struct dlc_shrinker dlc_shrinker;

static int dlc_capacity_set(const char *val, const struct kernel_param *kp)
{
	unsigned long mb;
	int ret;

	ret = kstrtoul(val, 0, &mb);
	if (ret)
		return ret;
	if (mb > (U64_MAX >> 20))
		return -ERANGE;
	capacity_mb = mb;
	if (READ_ONCE(dlc_ready))
		dlc_cache_set_capacity(&dlc_cache, (u64)mb << 20);
	return 0;
}

static int dlc_capacity_get(char *buf, const struct kernel_param *kp)
{
	u64 mb = READ_ONCE(dlc_ready) ? READ_ONCE(dlc_cache.capacity) >> 20 :
					capacity_mb;

	return scnprintf(buf, PAGE_SIZE, "%llu\n", mb);
}

static const struct kernel_param_ops dlc_capacity_ops = {
	.set = dlc_capacity_set,
	.get = dlc_capacity_get,
};

module_param_cb(capacity_mb, &dlc_capacity_ops, &capacity_mb, 0644);
MODULE_PARM_DESC(capacity_mb, "Cache capacity in MiB (default 256); lowering it evicts");

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
 * consumer_stall_ms lives in dlc_cache.stall_ms, which the store reads
 * (READ_ONCE) at each use and admission; the KUnit suites set it there.
 */
static unsigned int consumer_stall_ms = DLC_DEFAULT_STALL_MS;

static int dlc_stall_set(const char *val, const struct kernel_param *kp)
{
	unsigned int ms;
	int ret;

	ret = kstrtouint(val, 0, &ms);
	if (ret)
		return ret;
	if (!ms)
		return -EINVAL;
	WRITE_ONCE(consumer_stall_ms, ms);
	WRITE_ONCE(dlc_cache.stall_ms, ms);
	return 0;
}

static const struct kernel_param_ops dlc_stall_ops = {
	.set = dlc_stall_set,
	.get = param_get_uint,
};

module_param_cb(consumer_stall_ms, &dlc_stall_ops, &consumer_stall_ms, 0644);
MODULE_PARM_DESC(consumer_stall_ms,
		 "A consumer member with no GET for this many ms stops holding its job's cursor back, and a job with none stops holding samples (default 30000)");

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

static void dlc_show_counters(struct seq_file *m, const char *pfx,
			      const struct dlcache_counters *c)
{
	seq_printf(m, "%shits %llu\n%shit_bytes %llu\n", pfx, c->hits, pfx,
		   c->hit_bytes);
	seq_printf(m, "%smisses %llu\n%smiss_bytes %llu\n", pfx, c->misses,
		   pfx, c->miss_bytes);
	seq_printf(m, "%sinserts %llu\n%sinsert_bytes %llu\n", pfx,
		   c->inserts, pfx, c->insert_bytes);
	seq_printf(m, "%sbypasses %llu\n%sbypass_bytes %llu\n", pfx,
		   c->bypasses, pfx, c->bypass_bytes);
	seq_printf(m, "%sevictions %llu\n%seviction_bytes %llu\n", pfx,
		   c->evictions, pfx, c->eviction_bytes);
	seq_printf(m, "%sshrinker_evictions %llu\n%swaits %llu\n", pfx,
		   c->shrinker_evictions, pfx, c->waits);
	seq_printf(m, "%saborts %llu\n%serrors %llu\n", pfx, c->aborts, pfx,
		   c->errors);
	seq_printf(m, "%sused_bytes %llu\n%scached_samples %llu\n", pfx,
		   c->used_bytes, pfx, c->cached_samples);
	seq_printf(m, "%sfills_inflight %llu\n", pfx, c->fills_inflight);
}

/* Copies in flight by owner: "copying.uid <uid> <bytes>". */
static void dlc_show_copiers(struct seq_file *m)
{
	struct dlc_copier *c;
	int bkt;

	spin_lock(&dlc_copy_lock);
	hash_for_each(dlc_copiers, bkt, c, node)
		seq_printf(m, "copying.uid %u %llu\n",
			   from_kuid_munged(&init_user_ns, c->uid), c->bytes);
	spin_unlock(&dlc_copy_lock);
}

/*
 * The data sets are pinned under cache->lock, with what is read under it,
 * and each is then shown under its own lock alone (see dlc_dataset_pin()).
 */
static int dlc_stats_show(struct seq_file *m, void *v)
{
	struct dlc_stats_ds {
		struct dlc_dataset *ds;
		u32 attached;
		bool idle;
		unsigned long idle_since;
	} *v_ds;
	struct dlc_dataset *pinned[DLC_MAX_DATASETS];
	struct dlcache_counters c;
	struct dlc_dataset *ds;
	u32 i, j, n;

	v_ds = kmalloc_array(DLC_MAX_DATASETS, sizeof(*v_ds), GFP_KERNEL);
	if (!v_ds)
		return -ENOMEM;
	mutex_lock(&dlc_cache.lock);
	seq_printf(m, "capacity_bytes %llu\n", dlc_cache.capacity);
	seq_printf(m, "datasets %u\nsessions %u\n", dlc_cache.ndatasets,
		   dlc_cache.nsessions);
	seq_printf(m, "idle_datasets %u\n", dlc_cache.nidle);
	seq_printf(m, "draining %u\n", dlc_draining());
	dlc_cache_counters(&dlc_cache, &c);
	n = dlc_pin_all(&dlc_cache, pinned);
	for (i = 0; i < n; i++) {
		v_ds[i].ds = pinned[i];
		v_ds[i].attached = pinned[i]->nattached;
		v_ds[i].idle = pinned[i]->idle;
		v_ds[i].idle_since = pinned[i]->idle_since;
	}
	mutex_unlock(&dlc_cache.lock);
	dlc_show_counters(m, "", &c);
	seq_printf(m, "inflight_bytes %lld\n",
		   (long long)atomic64_read(&dlc_cache.inflight));
	dlc_show_copiers(m);
	for (i = 0; i < n; i++) {
		char pfx[16];

		ds = v_ds[i].ds;
		seq_printf(m, "dataset%u.key %016llx%016llx\n", i, ds->key[0],
			   ds->key[1]);
		seq_printf(m, "dataset%u.nsamples %u\ndataset%u.mode 0%o\n", i,
			   ds->nsamples, i, ds->mode);
		seq_printf(m, "dataset%u.owner %u\n", i,
			   from_kuid_munged(&init_user_ns, ds->uid));
		seq_printf(m, "dataset%u.attached %u\n", i, v_ds[i].attached);
		if (v_ds[i].idle)
			seq_printf(m, "dataset%u.idle_s %lu\n", i,
				   (jiffies - v_ds[i].idle_since) / HZ);
		mutex_lock(&ds->lock);
		seq_printf(m, "dataset%u.cursor %llu\ndataset%u.end %llu\n", i,
			   ds->policy.line[0].cursor, i, ds->policy.line[0].end);
		seq_printf(m, "dataset%u.consumers %u\n", i,
			   dlc_store_consumers(ds));
		for (j = 1; j < DLC_MAX_CONSUMERS; j++) {
			const struct dlc_consumer *c = ds->consumers[j];
			const struct dlc_policy_line *l = &ds->policy.line[j];

			if (!c)
				continue;
			seq_printf(m, "dataset%u.job%u %016llx members %u cursor %llu end %llu ns_per_pos %llu%s\n",
				   i, j, c->job, c->nmembers, l->cursor, l->end,
				   l->cost, l->active ? "" : " stalled");
		}
		dlc_store_counters(ds, &c);
		mutex_unlock(&ds->lock);
		snprintf(pfx, sizeof(pfx), "dataset%u.", i);
		dlc_show_counters(m, pfx, &c);
	}
	dlc_unpin_all(pinned, n);
	kfree(v_ds);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(dlc_stats);

static struct dentry *dlc_debugfs;

static void dlc_check_abi(void)
{
	/*
	 * Each command of DLCACHE_IOCTLS is checked in dlc_iocs[]; a number
	 * used twice is a duplicate enumerator here.
	 */
	enum {
#define DLC_IOC_NR(NAME, name, nr, type, size, dir) DLC_IOC_NR_##nr,
		DLCACHE_IOCTLS(DLC_IOC_NR)
#undef DLC_IOC_NR
	};
	BUILD_BUG_ON(sizeof(struct dlcache_sqring_offsets) != 40);
	BUILD_BUG_ON(sizeof(struct dlcache_cqring_offsets) != 40);
	BUILD_BUG_ON(sizeof(struct dlcache_sqe) != 64);
	BUILD_BUG_ON(sizeof(struct dlcache_cqe) != 32);
	BUILD_BUG_ON(sizeof(struct dlcache_counters) != 192);
	BUILD_BUG_ON(offsetof(struct dlcache_sqe, addr) != 16);
	BUILD_BUG_ON(offsetof(struct dlcache_sqe, user_data) != 24);
	BUILD_BUG_ON(offsetof(struct dlcache_sqe, epoch) != 32);
	BUILD_BUG_ON(offsetof(struct dlcache_cqe, res) != 8);
	BUILD_BUG_ON(offsetof(struct dlcache_cqe, size) != 24);
	BUILD_BUG_ON(offsetof(struct dlcache_stats, global) != 32);
	BUILD_BUG_ON(offsetof(struct dlcache_stats, dataset) != 280);
	BUILD_BUG_ON(offsetof(struct dlcache_stats, ds_consumers) != 472);
	BUILD_BUG_ON(offsetof(struct dlcache_stats, ds_flags) != 480);
	BUILD_BUG_ON(offsetof(struct dlcache_stats, ds_idle_s) != 484);
	BUILD_BUG_ON(offsetof(struct dlc_ring_ctl, tail) <
		     offsetof(struct dlc_ring_ctl, head) + L1_CACHE_BYTES);
	BUILD_BUG_ON(DLCACHE_OP_LAST > 255);
	/* Both offsets fit a 32-bit off_t and are page aligned. */
	BUILD_BUG_ON(DLCACHE_OFF_CQ_RING >> 31);
	BUILD_BUG_ON(DLCACHE_OFF_CQ_RING & ~PAGE_MASK);
	BUILD_BUG_ON(DLCACHE_OFF_SQ_RING == DLCACHE_OFF_CQ_RING);
	BUILD_BUG_ON(DLC_MAX_SAMPLES > DLC_POLICY_MAX_SAMPLES);
	BUILD_BUG_ON(DLC_MAX_WINDOW > DLC_POLICY_MAX_WINDOW);
	BUILD_BUG_ON(DLC_MAX_SAMPLE_SIZE > INT_MAX);
}

static int __init dlc_init(void)
{
	int ret;

	dlc_check_abi();
	dlc_cache_init(&dlc_cache, (u64)capacity_mb << 20);
	/* Policy arrays of all data sets: at most an eighth of RAM. */
	dlc_cache.policy_limit = (u64)totalram_pages() << (PAGE_SHIFT - 3);
	ret = dlc_shrinker_register(&dlc_shrinker, "dlcache", dlc_shrink_count,
				    dlc_shrink_scan);
	if (ret)
		goto destroy_cache;
	/*
	 * The parameter files exist already: under their lock, a write to
	 * capacity_mb since dlc_cache_init() is not lost, and later ones
	 * see dlc_ready.
	 */
	kernel_param_lock(THIS_MODULE);
	WRITE_ONCE(dlc_cache.capacity, (u64)capacity_mb << 20);
	WRITE_ONCE(dlc_cache.stall_ms, consumer_stall_ms);
	WRITE_ONCE(dlc_ready, true);
	kernel_param_unlock(THIS_MODULE);
	ret = misc_register(&dlc_misc);
	if (ret)
		goto unregister_shrinker;
	dlc_debugfs = debugfs_create_dir("dlcache", NULL);
	debugfs_create_file("stats", 0444, dlc_debugfs, NULL, &dlc_stats_fops);
	pr_info("ABI %u, capacity %llu MiB\n", DLCACHE_ABI_VERSION,
		dlc_cache.capacity >> 20);
	return 0;

unregister_shrinker:
	kernel_param_lock(THIS_MODULE);
	WRITE_ONCE(dlc_ready, false);
	kernel_param_unlock(THIS_MODULE);
	cancel_delayed_work_sync(&dlc_lease_work);
	cancel_delayed_work_sync(&dlc_idle_work);
	dlc_shrinker_unregister(&dlc_shrinker);
destroy_cache:
	dlc_cache_destroy(&dlc_cache);
	return ret;
}

static void __exit dlc_exit(void)
{
	debugfs_remove_recursive(dlc_debugfs);
	misc_deregister(&dlc_misc);
	/*
	 * The parameter files outlive this function (they go in
	 * free_module()): a write in flight finishes before dlc_ready is
	 * cleared, and later ones leave the cache alone.
	 */
	kernel_param_lock(THIS_MODULE);
	WRITE_ONCE(dlc_ready, false);
	kernel_param_unlock(THIS_MODULE);
	/*
	 * No session is left, so no data set and no parked GET: nothing
	 * queues the lease work any more. Wait for a queued or running one.
	 */
	cancel_delayed_work_sync(&dlc_lease_work);
	/*
	 * Nor the idle work (dlc_ready is false for idle_keep_s writes).
	 * The idle data sets still cached go now.
	 */
	cancel_delayed_work_sync(&dlc_idle_work);
	dlc_idle_expire(&dlc_cache, true, NULL);
	dlc_shrinker_unregister(&dlc_shrinker);
	/* Copies run in sessions: none is left. */
	WARN_ON_ONCE(!hash_empty(dlc_copiers));
	dlc_cache_destroy(&dlc_cache);
}

module_init(dlc_init);
module_exit(dlc_exit);

MODULE_DESCRIPTION("dlcache: node-local sample cache with next-use eviction");
MODULE_LICENSE("GPL");
