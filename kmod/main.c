// SPDX-License-Identifier: GPL-2.0
/*
 * dlcache.ko: a node-local sample cache for training input pipelines.
 *
 * /dev/dlcache is a misc device. Each open file is a session (session.c):
 * it attaches to data sets by key (attach.c, dataset.c), sets up a submission/
 * completion ring pair that it maps, and drives it with DLCACHE_IOC_ENTER.
 * All work runs synchronously in the ENTER caller's context; the module
 * has no threads, only the fill lease's and the idle data sets' delayed
 * work. This file is the module: the device and its ioctl table, the
 * administrator's ioctls (STATS, SET_CAPACITY, DROP, DRAIN), the module
 * parameters of the cache as a whole, the shrinker and debugfs.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/capability.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
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
#include <linux/seq_file.h>
#include <linux/shrinker.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/user_namespace.h>
#include <linux/vmalloc.h>

#include "compat.h"
#include "dlc.h"
#include "session.h"
#include "dataset.h"
#include "attach.h"

static unsigned long capacity_mb = 256;
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
	if (ds->form)
		st->ds_flags |= DLCACHE_DS_F_FORM |
				ds->form << DLCACHE_DS_FORM_SHIFT;
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
		if (!dlc_dataset_listed(ds, admin))
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
	u64 now = ktime_get_ns(), t;
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
	dlc_copiers_show(m);
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
			/*
			 * late_ms: how far the cursor is behind the time the
			 * policy predicts for it (ahead when negative).
			 */
			t = dlc_policy_time(&ds->policy, j, l->cursor);
			seq_printf(m, "dataset%u.job%u %016llx members %u cursor %llu end %llu ns_per_pos %llu late_ms %lld%s\n",
				   i, j, c->job, c->nmembers, l->cursor, l->end,
				   l->cost,
				   div_s64((s64)(now - t), NSEC_PER_MSEC),
				   l->active ? "" : " stalled");
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
	dlc_lease_stop();
	dlc_idle_stop();
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
	dlc_lease_stop();
	/*
	 * Nor the idle work (dlc_ready is false for idle_keep_s writes).
	 * The idle data sets still cached go now.
	 */
	dlc_idle_stop();
	dlc_idle_expire(&dlc_cache, true, NULL);
	dlc_shrinker_unregister(&dlc_shrinker);
	/* Copies run in sessions: none is left. */
	WARN_ON_ONCE(!dlc_copies_none());
	dlc_cache_destroy(&dlc_cache);
}

module_init(dlc_init);
module_exit(dlc_exit);

MODULE_DESCRIPTION("dlcache: node-local sample cache with next-use eviction");
MODULE_LICENSE("GPL");
