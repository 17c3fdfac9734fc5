/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dlcache.ko internals, shared by the module files and the KUnit suites.
 *
 * ring.c   ring layout, index arithmetic and SQE validation (no state);
 * store.c  the page-backed sample store: data sets, samples, admission,
 *          eviction, capacity and shrinking;
 * session.c   sessions: the rings, GET/PUT/ABORT, fills and waiters;
 * dataset.c   data sets as users see them: finding or creating an
 *             ATTACH's data set, permissions, idle sets, per-owner
 *             quotas and copies in flight;
 * attach.c    ATTACH, DETACH and SET_ORDER, over session.c and
 *             dataset.c (dataset.c calls neither);
 * main.c      the module: the device, its ioctl table, the admin
 *             ioctls, parameters, the shrinker and debugfs.
 *
 * Lock order (outermost first):
 *   dlc_session.ring_lock -> dlc_cache.lock -> dlc_dataset.lock ->
 *   dlc_session.wait_lock
 * Paths that hold a dlc_dataset.lock and need dlc_cache.lock or another
 * data set's lock only ever mutex_trylock() them (admission stealing
 * space, the shrinker), so they cannot deadlock. No dlc_dataset.lock is
 * held across a copy from or to user memory. The module's parameter lock
 * (kernel_param_lock()) comes before dlc_cache.lock; session.c's
 * dlc_lease_lock is innermost (taken under a dlc_dataset.lock). STATS,
 * debugfs and the fill lease work pin the data sets under dlc_cache.lock
 * and then take each dlc_dataset.lock without it: one user's long
 * operation under its data set's lock holds up nobody else.
 * dataset.c's dlc_copy_lock (copies in flight per owner) is innermost too.
 */
#ifndef DLC_KMOD_H
#define DLC_KMOD_H

#include <linux/atomic.h>
#include <linux/kref.h>
#include <linux/limits.h>
#include <linux/list.h>
#include <linux/lockdep.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/stddef.h>
#include <linux/string.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/uio.h>
#include <linux/xarray.h>

#include "../uapi/dlcache.h"

#include "../libdlcache/cache/policy.h"

/* Limits, reported by DLCACHE_IOC_GET_INFO. */
#define DLC_MAX_SAMPLE_SIZE	(16U * 1024 * 1024)
#define DLC_MAX_SAMPLES		(4U * 1024 * 1024)
#define DLC_MAX_DATASETS	64U
#define DLC_MAX_ORDER_LEN	(8U * 1024 * 1024)
#define DLC_MAX_WINDOW		(16U * 1024 * 1024)
#define DLC_MAX_RING_ENTRIES	4096U
#define DLC_MAX_HANDLES		64U
#define DLC_MAX_FILLS		16384U
#define DLC_DEFAULT_LOOKAHEAD	65536U
/* Consumers per data set (time line 0 included), attachments per consumer. */
#define DLC_MAX_CONSUMERS	DLC_POLICY_MAX_CONSUMERS
#define DLC_MAX_MEMBERS		256U
/* Default of the consumer_stall_ms parameter. */
#define DLC_DEFAULT_STALL_MS	30000U

#define DLC_FEATURES	(DLCACHE_FEAT_RING | DLCACHE_FEAT_POLL |	\
			 DLCACHE_FEAT_GET_AT | DLCACHE_FEAT_FILL_WAIT |	\
			 DLCACHE_FEAT_SHRINKER | DLCACHE_FEAT_OWNER |	\
			 DLCACHE_FEAT_FILL_LEASE | DLCACHE_FEAT_CONSUMERS |	\
			 DLCACHE_FEAT_IDLE | DLCACHE_FEAT_DRAIN |	\
			 DLCACHE_FEAT_GET_AHEAD |			\
			 DLCACHE_FEAT_ATTACH_MATCH | DLCACHE_FEAT_GET_ORDER | \
			 DLCACHE_FEAT_FORMS)

/* ------------------------------------------------------------------ */
/* ring.c                                                              */
/* ------------------------------------------------------------------ */

/*
 * Control block at the start of each ring region. Its layout is private:
 * user space finds the fields through the offsets SETUP_RING returns.
 * The consumer's and the producer's indices sit on their own cache lines.
 */
struct dlc_ring_ctl {
	u32 head ____cacheline_aligned;
	u32 tail ____cacheline_aligned;
	u32 ring_mask ____cacheline_aligned;
	u32 ring_entries;
	u32 flags;
	u32 aux;		/* SQ: dropped; CQ: pending */
};

/*
 * One ring, SQ or CQ, over a region of pages charged to the memory cgroup
 * of the task that set it up (dlc_ring_alloc() in session.c), mapped into the
 * session's users. The kernel-side index (SQ head or CQ tail) is kept
 * here and published to ctl; the user-side one is read from ctl and never
 * trusted beyond the ring size. Protected by dlc_session.ring_lock.
 */
struct dlc_ring {
	void *mem;			/* region start, vmap(VM_USERMAP) */
	size_t size;			/* region bytes, page aligned */
	struct dlc_ring_ctl *ctl;	/* == mem */
	void *entries;			/* entry array inside mem */
	u32 nentries;			/* power of two */
	u32 mask;			/* nentries - 1 */
	u32 kidx;			/* SQ: head; CQ: tail (kernel-owned) */
};

size_t dlc_ring_bytes(u32 nentries, size_t entry_size);
void dlc_ring_init(struct dlc_ring *r, void *mem, size_t size, u32 nentries);
void dlc_ring_sq_offsets(struct dlcache_sqring_offsets *o);
void dlc_ring_cq_offsets(struct dlcache_cqring_offsets *o);
u32 dlc_sq_ready(const struct dlc_ring *sq);
void dlc_sq_fetch(struct dlc_ring *sq, struct dlcache_sqe *sqe);
void dlc_sq_publish(struct dlc_ring *sq);
u32 dlc_cq_used(const struct dlc_ring *cq);
void dlc_cq_post(struct dlc_ring *cq, const struct dlcache_cqe *cqe);
int dlc_sqe_check(const struct dlcache_sqe *sqe);
int dlc_ring_sizes(u32 *sq_entries, u32 *cq_entries);

/* ------------------------------------------------------------------ */
/* store.c                                                             */
/* ------------------------------------------------------------------ */

/* The whole cache: one per module, or one per KUnit test. */
struct dlc_cache {
	struct mutex lock;		/* protects datasets, ndatasets */
	struct list_head datasets;	/* dlc_dataset.node */
	u32 ndatasets;
	u32 nsessions;			/* open sessions; lock */
	/*
	 * Idle data sets (dlc_dataset.idle) among datasets; lock, READ_ONCE
	 * where a hint is enough (admission's early bypass).
	 */
	u32 nidle;
	u64 capacity;			/* bytes; READ_ONCE, set under lock */
	/*
	 * Bytes charged against the capacity: the data sets' used, plus
	 * @inflight. Never above the capacity but while a lowered capacity
	 * waits for copies in flight to end.
	 */
	atomic64_t used;
	/*
	 * Bytes in @used that no data set holds: PUTs reserved before their
	 * copy from user memory, and samples evicted while a GET still
	 * copies them out (their pages stay until the last reference drops,
	 * dlc_sample_put()). A stalled copy thus holds capacity, never
	 * memory beyond it.
	 */
	atomic64_t inflight;
	atomic64_t ncached;		/* samples held */
	atomic64_t nfilling;		/* fills in flight */
	atomic64_t errors;		/* completions with an error */
	/* Policy memory of the data sets listed and reserved; lock. */
	u64 policy_bytes;
	u64 policy_limit;		/* most policy memory at once */
	/*
	 * Data sets being created (struct dlc_reservation in dataset.c): their
	 * slot and policy memory count against the limits while they are
	 * allocated without the lock. lock.
	 */
	struct list_head reserved;
	u32 nreserved;
	struct dlcache_counters retired; /* of freed data sets; lock */
	/*
	 * A consumer member with no use for this long stops holding its
	 * consumer's cursor back, and a consumer with none stops holding
	 * samples (main.c's consumer_stall_ms). READ_ONCE.
	 */
	u32 stall_ms;
};

/* Sample state bits (dlc_sample.state), protected by dlc_dataset.lock. */
enum {
	/*
	 * DLC_S_FILLING: a placeholder with no pages. @filler (a session's
	 * attachment) owns the fill since @fill_start: it got -ENOENT with
	 * DLCACHE_CQE_F_FILL and must PUT or ABORT. @waiters holds parked
	 * GETs. Past the fill lease the fill may be taken from @filler and
	 * given to another attachment (session.c, dlc_fill_give()).
	 */
	DLC_S_FILLING,
	/*
	 * DLC_S_CACHED: @pages hold @size bytes, the sample is charged to
	 * the cache and marked cached in the data set's policy. Owned by the
	 * data set's xarray; readers copy out under a reference.
	 */
	DLC_S_CACHED,
};

struct dlc_sample {
	refcount_t ref;			/* xarray's + copiers' references */
	u32 id;
	u32 size;			/* bytes in pages (CACHED) */
	u32 npages;
	/*
	 * The cache whose used holds this sample's charge, from its PUT's
	 * reservation until the last reference drops; NULL: none (a
	 * placeholder). Set before the sample is shared, constant after.
	 */
	struct dlc_cache *charged;
	unsigned long state;		/* DLC_S_*; dataset lock */
	void *filler;			/* FILLING: owner attachment */
	struct list_head fill_link;	/* FILLING: on the owner's fills */
	struct list_head waiters;	/* FILLING: parked GETs */
	unsigned long fill_start;	/* FILLING: jiffies @filler got it */
	/* FILLING: on the data set's lease_fills (lease checked) or empty */
	struct list_head lease_link;
	struct page *pages[];		/* CACHED: npages order-0 pages */
};

/*
 * A consumer: one job's time line, line @line of its data set's policy
 * (DLCACHE_ATTACH_F_JOB). Created by the first ATTACH that names the job,
 * freed when its last member detaches. Time line 0, shared by the
 * attachments that name no job (ABI 2), has no struct dlc_consumer.
 */
struct dlc_consumer {
	u64 job;			/* the job's key; constant */
	u32 line;			/* index in policy.line[]; constant once listed */
	u32 nmembers;			/* ds->lock */
	struct list_head members;	/* dlc_member.link; ds->lock */
	void *mem;			/* the line's arrays, kvmalloc() */
	size_t mem_size;		/* bytes of mem, in ds->consumer_bytes */
};

/*
 * An attachment's place in its consumer. The consumer's cursor is the
 * least progress of its members that used a sample within the stall time
 * (of all members when none did): a rank ahead never consumes the
 * positions a rank behind has still to read. All fields under ds->lock.
 */
struct dlc_member {
	struct dlc_consumer *cons;	/* NULL: time line 0 */
	struct list_head link;		/* on cons->members */
	u64 progress;			/* one past the position of its last use */
	u64 seen;			/* ktime_get_ns() of its last use */
};

/*
 * A data set: samples of one (key, owner), shared by every session
 * attached. Two owners with the same key have two data sets.
 */
struct dlc_dataset {
	/* attachments, the idle reference, pins; put under cache lock */
	struct kref ref;
	struct list_head node;		/* cache->datasets; cache lock */
	struct dlc_cache *cache;
	/* Set at creation, constant after. */
	u64 key[2];
	u32 nsamples;
	u32 mode;
	u32 window;
	u32 lookahead;
	/*
	 * The form its samples are (DLCACHE_ATTACH_F_FORM), 0 for the
	 * encoded data set: with key and uid, the name. A form set's misses
	 * take no fill (session.c) and only its owner attaches it.
	 */
	u32 form;
	kuid_t uid;			/* owner: half of the name */
	kgid_t gid;
	/*
	 * Accounting owner: the uid in the initial user namespace that owns
	 * the creator's user namespace chain (@uid itself for a creator in
	 * init_user_ns). Per-owner quotas (dataset.c) and cache shares count
	 * by it, so subordinate uids do not multiply them.
	 */
	kuid_t acct;
	u32 nattached;			/* cache lock */
	/* Time line memory of the consumers, charged to the owner; cache lock */
	u64 consumer_bytes;
	/*
	 * Idle: listed with no attachment (the last one detached and the
	 * module's idle_keep_s is not 0). @ref then holds one reference,
	 * the idle reference, which dataset.c owns: an ATTACH of the set takes
	 * it over, the idle work, DROP, a creation that needs the room
	 * (dlc_dataset_create_locked()) or dlc_exit() put it and free the
	 * set (a pin, dataset.c's dlc_dataset_pin(), defers the free). Steal and
	 * shrink empty idle sets before attached ones (they stay listed,
	 * samples gone, until one of those frees them). Both fields: cache
	 * lock (READ_ONCE for STATS of an attached set, which never is idle).
	 */
	bool idle;
	unsigned long idle_since;	/* jiffies of the last detach */

	struct mutex lock;	/* protects everything below */
	struct xarray samples;		/* id -> struct dlc_sample */
	struct dlc_policy policy;
	void *policy_mem;		/* kvmalloc(), policy arrays */
	size_t policy_size;		/* bytes of policy_mem */
	u64 used;			/* bytes charged by this data set */
	u64 ncached;
	u64 nfilling;
	/*
	 * FILLING placeholders that had a GET parked on them since the lease
	 * work last looked: the fill lease work (session.c) checks only these.
	 */
	struct list_head lease_fills;
	/* Consumers by policy line; [0] stays NULL (time line 0). */
	struct dlc_consumer *consumers[DLC_MAX_CONSUMERS];
	struct dlcache_counters st;	/* counters; used/cached/filling 0 */
};

struct dlc_dataset *dlc_dataset_create(struct dlc_cache *cache,
				       const u64 key[2], u32 nsamples,
				       u32 window, u32 lookahead, u32 mode);
void dlc_dataset_free(struct dlc_dataset *ds);
size_t dlc_dataset_mem_size(u32 nsamples, u32 window);

void dlc_cache_init(struct dlc_cache *cache, u64 capacity);
void dlc_cache_destroy(struct dlc_cache *cache);

struct dlc_sample *dlc_sample_alloc(u32 id, u32 size, gfp_t gfp);
struct dlc_sample *dlc_sample_placeholder(u32 id, gfp_t gfp);
void dlc_sample_put(struct dlc_sample *s);
int dlc_sample_unaccount(struct dlc_sample *s);
int dlc_sample_copy_in(struct dlc_sample *s, struct iov_iter *from);
int dlc_sample_copy_out(struct dlc_sample *s, struct iov_iter *to);

struct dlc_sample *dlc_store_lookup(struct dlc_dataset *ds, u32 id);
bool dlc_store_reserve(struct dlc_dataset *ds, u32 id, u64 charge,
		       bool force);
void dlc_store_unreserve(struct dlc_cache *cache, u64 charge);
bool dlc_store_insert(struct dlc_dataset *ds, struct dlc_sample *s);
bool dlc_store_admit(struct dlc_dataset *ds, struct dlc_sample *s,
		     bool force);
int dlc_store_set_filling(struct dlc_dataset *ds, struct dlc_sample *ph);
void dlc_store_erase(struct dlc_dataset *ds, struct dlc_sample *s);
u64 dlc_store_evict(struct dlc_dataset *ds, u32 id, bool shrinker);
u64 dlc_store_drop(struct dlc_dataset *ds);
void dlc_store_use(struct dlc_dataset *ds, struct dlc_member *m, u32 id,
		   const struct dlcache_sqe *sqe);
int dlc_store_set_order(struct dlc_dataset *ds, struct dlc_member *m,
			u32 epoch, const u32 *ids, u32 len);

struct dlc_consumer *dlc_consumer_alloc(struct dlc_dataset *ds, u64 job);
void dlc_consumer_free(struct dlc_consumer *c);
int dlc_store_join(struct dlc_dataset *ds, struct dlc_member *m, u64 job,
		   struct dlc_consumer **spare);
struct dlc_consumer *dlc_store_leave(struct dlc_dataset *ds,
				     struct dlc_member *m);
u32 dlc_store_line(const struct dlc_member *m);
bool dlc_store_used_before(struct dlc_dataset *ds, struct dlc_member *m,
			   u32 id, const struct dlcache_sqe *sqe);
u32 dlc_store_consumers(struct dlc_dataset *ds);
int dlc_store_read_order(struct dlc_dataset *ds, struct dlcache_get_order *o,
			 u32 *ids, u32 len);
void dlc_store_counters(struct dlc_dataset *ds, struct dlcache_counters *c);
void dlc_cache_counters(struct dlc_cache *cache, struct dlcache_counters *c);
void dlc_cache_retire(struct dlc_cache *cache, struct dlc_dataset *ds);

u64 dlc_cache_shrink(struct dlc_cache *cache, u64 bytes, bool shrinker);
u64 dlc_cache_set_capacity(struct dlc_cache *cache, u64 bytes);

static inline u64 dlc_sample_charge(const struct dlc_sample *s)
{
	return (u64)s->npages << PAGE_SHIFT;
}

/*
 * dataset.c: the module's one cache, and whether it is set up (see
 * dlc_ready there for its rules; main.c sets both).
 */
extern struct dlc_cache dlc_cache;
extern bool dlc_ready;

/* ioctl argument checks. */
static inline bool dlc_zero(const void *p, size_t n)
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

#endif /* DLC_KMOD_H */
