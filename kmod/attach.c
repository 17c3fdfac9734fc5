// SPDX-License-Identifier: GPL-2.0
/*
 * dlcache.ko's ioctls that take both a session and a data set: ATTACH
 * (a session's new handle on a data set, found or created), DETACH,
 * SET_ORDER and GET_ORDER. They sit over the sessions (session.c) and the data sets
 * (dataset.c): those two never call back here, and the data sets never
 * call the sessions.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cred.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/uidgid.h>
#include <linux/user_namespace.h>

#include "dlc.h"
#include "session.h"
#include "dataset.h"
#include "attach.h"

/*
 * Whether ATTACH's arguments @a may be taken: its kernel fields and
 * reserved ones zero, only known flags, no flag's field without the flag,
 * sizes within the module's limits.
 */
static bool dlc_attach_args_ok(const struct dlcache_attach *a)
{
	if (!dlc_zero(a->reserved, sizeof(a->reserved)) ||
	    a->handle || a->owner_gid || a->result_flags ||
	    (a->owner_uid && !(a->flags & DLCACHE_ATTACH_F_OWNER)) ||
	    (a->flags & ~(DLCACHE_ATTACH_F_NOCREATE | DLCACHE_ATTACH_F_EXCL |
			  DLCACHE_ATTACH_F_OWNER | DLCACHE_ATTACH_F_JOB |
			  DLCACHE_ATTACH_F_REPLACE | DLCACHE_ATTACH_F_FORM)) ||
	    !(a->flags & DLCACHE_ATTACH_F_FORM) != !a->form ||
	    a->form > 255 ||
	    ((a->flags & DLCACHE_ATTACH_F_FORM) && a->mode && a->mode != 0600) ||
	    (a->job && !(a->flags & DLCACHE_ATTACH_F_JOB)) ||
	    ((a->flags & DLCACHE_ATTACH_F_REPLACE) &&
	     (a->flags & DLCACHE_ATTACH_F_NOCREATE)))
		return false;
	return a->nsamples && a->nsamples <= DLC_MAX_SAMPLES &&
	       !(a->mode & ~0666U) && a->window <= DLC_MAX_WINDOW &&
	       a->lookahead <= DLC_MAX_WINDOW;
}

/* ATTACH's answer for the new attachment @att: the kernel fields of @a. */
static void dlc_attach_result(const struct dlc_attachment *att,
			      struct dlcache_attach *a)
{
	const struct dlc_dataset *ds = att->ds;

	a->mode = ds->mode;
	a->window = ds->window;
	a->lookahead = ds->lookahead;
	a->handle = att->handle;
	a->owner_uid = from_kuid_munged(current_user_ns(), ds->uid);
	a->owner_gid = from_kgid_munged(current_user_ns(), ds->gid);
	if (att->may_read)
		a->result_flags |= DLCACHE_ATTACH_MAY_READ;
	if (att->may_write)
		a->result_flags |= DLCACHE_ATTACH_MAY_WRITE;
}

/*
 * ATTACH: a new handle of the session on the data set @uarg names, found
 * or created (dlc_dataset_attach_locked()), joined to the consumer of its
 * job when asked. Takes sess->ring_lock, under it cache->lock (then a
 * consumer's locks, dlc_consumer_join()); called with neither held.
 */
long dlc_ioc_attach(struct dlc_session *sess, void __user *uarg)
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
	if (!dlc_attach_args_ok(&a))
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
	/*
	 * A form is trusted by nobody but its owner: no checksum of the
	 * encoded data set covers it, so no other user attaches it, and it
	 * is never shared by its mode (0600, checked above).
	 */
	if ((a.flags & DLCACHE_ATTACH_F_FORM) && !uid_eq(owner, current_fsuid()))
		return -EPERM;
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
	ds = dlc_dataset_attach_locked(cache, &a, owner, may_create, mode,
				       &perm, &spare, &reap);
	if (IS_ERR(ds)) {
		ret = PTR_ERR(ds);
		goto unlock_cache;
	}
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

	dlc_attach_result(att, &a);
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

/* DETACH: end a handle (dlc_detach()). Takes sess->ring_lock. */
long dlc_ioc_detach(struct dlc_session *sess, void __user *uarg)
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

/*
 * SET_ORDER: hand the IDs @uarg points to, an epoch's order, to the
 * handle's consumer (dlc_store_set_order()). Takes sess->ring_lock, under
 * it the data set's lock; called with neither held.
 */
long dlc_ioc_set_order(struct dlc_session *sess, void __user *uarg)
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
 * GET_ORDER: a consumer's time line read back (dlc_store_read_order()),
 * of an attached data set (under sess->ring_lock) or of the listed one
 * (pinned). The IDs are copied under the data set's lock into a buffer
 * charged to the caller and bounded by the window (no more positions are
 * held), and out to user space without any lock.
 */
long dlc_ioc_get_order(struct dlc_session *sess, void __user *uarg)
{
	struct dlc_dataset *ds = NULL, *pinned = NULL;
	struct dlc_attachment *att;
	struct dlcache_get_order o;
	u32 *ids = NULL, room;
	long ret;

	if (copy_from_user(&o, uarg, sizeof(o)))
		return -EFAULT;
	if ((o.flags & ~DLCACHE_GET_ORDER_F_INDEX) ||
	    !dlc_zero(o.reserved, sizeof(o.reserved)) ||
	    !dlc_out_zero(&o, nconsumers, epochs) ||
	    o.len > DLC_MAX_ORDER_LEN)
		return -EINVAL;

	if (o.flags & DLCACHE_GET_ORDER_F_INDEX) {
		/* STATS's list: asked without audit, it only shows less. */
		pinned = dlc_dataset_pin_listed(sess->cache, o.handle,
						ns_capable_noaudit(&init_user_ns,
								   CAP_SYS_ADMIN));
		if (!pinned)
			return -ENOENT;
		ds = pinned;
	} else {
		mutex_lock(&sess->ring_lock);
		att = dlc_att(sess, o.handle);
		ret = -EBADF;
		if (!att)
			goto unlock;
		ds = att->ds;
	}
	room = min(o.len, ds->window);
	ret = -ENOMEM;
	if (room) {
		ids = kvmalloc_array(room, sizeof(*ids), GFP_KERNEL_ACCOUNT |
				     __GFP_NOWARN | __GFP_RETRY_MAYFAIL);
		if (!ids)
			goto unlock;
	}
	o.ds_key[0] = ds->key[0];
	o.ds_key[1] = ds->key[1];
	o.ds_owner_uid = from_kuid_munged(current_user_ns(), ds->uid);
	mutex_lock(&ds->lock);
	ret = dlc_store_read_order(ds, &o, ids, room);
	mutex_unlock(&ds->lock);
unlock:
	if (pinned)
		dlc_dataset_unpin(pinned);
	else
		mutex_unlock(&sess->ring_lock);
	if (!ret && o.copied &&
	    copy_to_user(u64_to_user_ptr(o.ids), ids,
			 (size_t)o.copied * sizeof(*ids)))
		ret = -EFAULT;
	if (!ret && copy_to_user(uarg, &o, sizeof(o)))
		ret = -EFAULT;
	kvfree(ids);
	return ret;
}
