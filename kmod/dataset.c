// SPDX-License-Identifier: GPL-2.0
/*
 * dlcache.ko's data sets as users see them: who may attach one (its mode,
 * owner and group), the data set half of ATTACH (finding or creating the
 * data set), the consumers of a data set, the idle data sets kept after
 * their last detach, and what each owner may make the kernel hold (data
 * sets, policy memory, copies in flight). The ioctls ATTACH, DETACH and
 * SET_ORDER, which take a session and a data set, are attach.c's; the
 * samples the data sets hold are store.c's. Nothing here calls into the
 * sessions (session.c) or attach.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/hashtable.h>
#include <linux/hrtimer.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/seq_file.h>
#include <linux/shrinker.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/user_namespace.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "dlc.h"
#include "dataset.h"

/*
 * The module's one cache, which holds the data sets (and the sessions'
 * list, under its lock). Defined here, below every file that uses it, so
 * that no file calls up into main.c; main.c sets it up and tears it down.
 */
struct dlc_cache dlc_cache;
/*
 * dlc_cache is set up. Written by main.c's dlc_init() and dlc_exit()
 * under kernel_param_lock(), which the parameters' set and get callbacks
 * run under: a write to a parameter file (that outlives dlc_exit()) sees
 * it false once the cache is going away. READ_ONCE elsewhere.
 */
bool dlc_ready;

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
int dlc_copy_begin(u64 bytes, struct dlc_copier **out)
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
void dlc_copy_end(struct dlc_copier *c, u64 bytes)
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

/*
 * The bits (4 read, 2 write) that @mode gives the caller on a data set of
 * owner @uid and group @gid: the owner's, else the group's, else the
 * others' bits, as for a file.
 */
u32 dlc_mode_bits(kuid_t uid, kgid_t gid, u32 mode)
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
void dlc_dataset_pin(struct dlc_dataset *ds)
{
	lockdep_assert_held(&ds->cache->lock);
	kref_get(&ds->ref);
}

void dlc_dataset_unpin(struct dlc_dataset *ds)
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
 * Whether STATS lists @ds to the caller: a data set it could read by its
 * mode, any of them to @admin (CAP_SYS_ADMIN).
 */
bool dlc_dataset_listed(const struct dlc_dataset *ds, bool admin)
{
	return admin || (dlc_mode_bits(ds->uid, ds->gid, ds->mode) & 4);
}

/*
 * Pin the @index-th data set (from 0) of the list STATS shows the caller
 * (dlc_dataset_listed()), or NULL past its end. Takes cache->lock.
 */
struct dlc_dataset *dlc_dataset_pin_listed(struct dlc_cache *cache, u32 index,
					   bool admin)
{
	struct dlc_dataset *ds, *found = NULL;
	u32 i = 0;

	mutex_lock(&cache->lock);
	list_for_each_entry(ds, &cache->datasets, node) {
		if (!dlc_dataset_listed(ds, admin))
			continue;
		if (i++ == index) {
			dlc_dataset_pin(ds);
			found = ds;
			break;
		}
	}
	mutex_unlock(&cache->lock);
	return found;
}

/*
 * Pin every listed data set into @v (DLC_MAX_DATASETS entries) and
 * return how many, for dlc_unpin_all().
 */
u32 dlc_pin_all(struct dlc_cache *cache, struct dlc_dataset **v)
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

void dlc_unpin_all(struct dlc_dataset **v, u32 n)
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
void dlc_idle_unlist(struct dlc_dataset *ds, struct list_head *reap)
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
void dlc_idle_reap(struct list_head *reap)
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
bool dlc_idle_expire(struct dlc_cache *cache, bool all, unsigned long *next)
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
 * Takes cache->lock: called without it (and without @ds->lock).
 */
void dlc_dataset_put(struct dlc_dataset *ds, bool attached, bool idle)
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

/*
 * Free consumer @c that dlc_store_leave() gave back, and its charge.
 * Takes cache->lock: called without it (and without @ds->lock).
 */
void dlc_consumer_release(struct dlc_dataset *ds, struct dlc_consumer *c)
{
	u64 bytes = c->mem_size;

	dlc_consumer_free(c);
	dlc_consumer_uncharge(ds, bytes);
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
kuid_t dlc_acct_owner(void)
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
 * joined, or -errno. Takes @ds->lock and cache->lock in turn, never both:
 * called with neither held.
 */
int dlc_consumer_join(struct dlc_dataset *ds, struct dlc_member *m, u64 job)
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

/* The data set named (@key, @owner, @form), or NULL. */
static struct dlc_dataset *dlc_dataset_find(struct dlc_cache *cache,
					    const u64 key[2], kuid_t owner,
					    u32 form)
{
	struct dlc_dataset *ds;

	lockdep_assert_held(&cache->lock);
	list_for_each_entry(ds, &cache->datasets, node)
		if (ds->key[0] == key[0] && ds->key[1] == key[1] &&
		    uid_eq(ds->uid, owner) && ds->form == form)
			return ds;
	return NULL;
}

/*
 * Create the caller's data set (@a->key, current_fsuid(), @a->form) and
 * list it.
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
		mine->form = a->form;
	}

	mutex_lock(&cache->lock);
	dlc_unreserve(cache, &resv);
	if (IS_ERR(mine))
		return mine;
	ds = dlc_dataset_find(cache, a->key, resv.uid, a->form);
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

/*
 * The data set half of ATTACH (attach.c's dlc_ioc_attach()): find the
 * data set (@a->key, @owner), or create it when @may_create (with
 * @mode), check that the caller may read it and that it is the one @a
 * asks for, and count one more attachment of it, with a reference for
 * it. Returns it with the caller's permission bits (4 read, 2 write) in
 * *@perm, and DLCACHE_ATTACH_CREATED added to @a->result_flags when this
 * call created it; or ERR_PTR(): -EBUSY, -ENOENT, -EACCES, an error of
 * dlc_dataset_create_locked(), -EEXIST or -EINVAL, checked in that order.
 * Whatever it returns, idle sets that gave way are on @reap and a data
 * set created but not listed is in *@spare (else NULL), for the caller to
 * free once it dropped cache->lock (dlc_idle_reap(), dlc_dataset_free()).
 * Called and returns with cache->lock held; a creation drops it meanwhile.
 */
struct dlc_dataset *dlc_dataset_attach_locked(struct dlc_cache *cache,
					      struct dlcache_attach *a,
					      kuid_t owner, bool may_create,
					      u32 mode, u32 *perm,
					      struct dlc_dataset **spare,
					      struct list_head *reap)
{
	struct dlc_dataset *ds;
	int ret;

	lockdep_assert_held(&cache->lock);
	*spare = NULL;
	ds = dlc_dataset_find(cache, a->key, owner, a->form);
	/*
	 * The owner's DLCACHE_ATTACH_F_REPLACE: a data set kept idle that
	 * is not the one asked for makes way for a new, empty one as asked
	 * (its samples may come from users its mode let write). One that
	 * is attached stays as it is.
	 */
	if (ds && (a->flags & DLCACHE_ATTACH_F_REPLACE) &&
	    !(a->flags & DLCACHE_ATTACH_F_EXCL) && (dlc_perm(ds) & 4) &&
	    dlc_attach_match(ds, a, may_create)) {
		if (!ds->idle)
			return ERR_PTR(-EBUSY);
		dlc_idle_unlist(ds, reap);
		ds = NULL;
	}
	if (!ds) {
		/* Never another user's data set, whoever asks. */
		if (!may_create)
			return ERR_PTR(-ENOENT);
		/* The creator needs read, as any attacher: else nothing. */
		if (!(mode & 0400) && !capable(CAP_SYS_ADMIN))
			return ERR_PTR(-EACCES);
		ds = dlc_dataset_create_locked(cache, a, mode, spare, reap);
		if (IS_ERR(ds))
			return ds;
		if (!*spare) {
			a->result_flags |= DLCACHE_ATTACH_CREATED;
			*perm = dlc_perm(ds);
			goto attach;
		}
		/* A racing ATTACH created it first: attach to theirs. */
	}
	/*
	 * Permission before existence: another owner's data set that the
	 * caller may not read answers as a missing one, whatever the flags
	 * and sample count asked, so that nobody learns of it.
	 */
	*perm = dlc_perm(ds);
	if (!(*perm & 4))
		return ERR_PTR(uid_eq(owner, current_fsuid()) ?
			       -EACCES : -ENOENT);
	if (a->flags & DLCACHE_ATTACH_F_EXCL)
		return ERR_PTR(-EEXIST);
	ret = dlc_attach_match(ds, a, may_create);
	if (ret)
		return ERR_PTR(ret);
	dlc_dataset_hold(ds);
attach:
	ds->nattached++;
	return ds;
}

/* debugfs: the owners with copies in flight, one line each. */
void dlc_copiers_show(struct seq_file *m)
{
	struct dlc_copier *c;
	int bkt;

	spin_lock(&dlc_copy_lock);
	hash_for_each(dlc_copiers, bkt, c, node)
		seq_printf(m, "copying.uid %u %llu\n",
			   from_kuid_munged(&init_user_ns, c->uid), c->bytes);
	spin_unlock(&dlc_copy_lock);
}

/* Whether no owner has a copy in flight (at module exit: none may). */
bool dlc_copies_none(void)
{
	bool none;

	spin_lock(&dlc_copy_lock);
	none = hash_empty(dlc_copiers);
	spin_unlock(&dlc_copy_lock);
	return none;
}

/* Module exit (and a failed init): wait for a queued or running idle work. */
void dlc_idle_stop(void)
{
	cancel_delayed_work_sync(&dlc_idle_work);
}
