/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dlcache.ko's sessions (session.c): an open /dev/dlcache, its attachments
 * and its parked GETs. Shared with the ioctls that attach and detach
 * sessions (attach.c) and the device (main.c), which dispatches to them.
 */
#ifndef DLC_SESSION_H
#define DLC_SESSION_H

#include <linux/fs.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/spinlock.h>
#include <linux/wait.h>

#include "dlc.h"

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
static inline bool dlc_wait_may_fill(const struct dlc_wait *w)
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

/* How a fill ends. */
enum dlc_fill_end {
	DLC_END_DONE,		/* bytes were PUT: waiters GET again */
	DLC_END_HANDOFF,	/* aborted: one waiter takes the fill over */
	DLC_END_FAIL,		/* failed: waiters complete -EIO */
};

/*
 * Called with @ds->lock held: end the fill of placeholder @ph. For a
 * hand-off the first waiter that may write becomes the filler and @ph
 * stays; otherwise every waiter is made ready and @ph leaves the store.
 */
void dlc_fill_end(struct dlc_dataset *ds, struct dlc_sample *ph,
		  enum dlc_fill_end how);
/* Called with @sess->ring_lock held: put wait @w back on its free list. */
void dlc_wait_free(struct dlc_session *sess, struct dlc_wait *w);
/* Called with @sess->ring_lock held: the attachment of @handle, or NULL. */
struct dlc_attachment *dlc_att(struct dlc_session *sess, u32 handle);
/* Called with @sess->ring_lock held: detach @att, ending its fills. */
void dlc_detach(struct dlc_session *sess, struct dlc_attachment *att);

/* Whether the drain is on (READ_ONCE). */
bool dlc_draining(void);
/* Start or end the drain, waking every session; the sessions open. */
u32 dlc_drain_set(struct dlc_cache *cache, bool on);
/* Module exit (and a failed init): wait for the fill lease's work. */
void dlc_lease_stop(void);

/* The session's ioctls (main.c's dlc_iocs[] dispatches). */
long dlc_ioc_get_info(struct dlc_session *sess, void __user *uarg);
long dlc_ioc_setup_ring(struct dlc_session *sess, void __user *uarg);
long dlc_ioc_enter(struct dlc_session *sess, void __user *uarg);

/* The session's file operations (main.c's dlc_fops). */
int dlc_open(struct inode *inode, struct file *file);
int dlc_release(struct inode *inode, struct file *file);
int dlc_mmap(struct file *file, struct vm_area_struct *vma);
__poll_t dlc_poll(struct file *file, struct poll_table_struct *pt);

#endif
