/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dlcache.ko's data sets as users see them (dataset.c): attach, detach,
 * idle data sets, and what each owner may make the kernel hold. Shared
 * with the sessions (session.c) and the device (main.c).
 */
#ifndef DLC_DATASET_H
#define DLC_DATASET_H

#include <linux/list.h>
#include <linux/types.h>
#include <linux/uidgid.h>

#include "dlc.h"

struct dlc_attachment;
struct dlc_copier;
struct dlc_session;
struct seq_file;

/* Permissions: the bits (4 read, 2 write) @mode gives the caller. */
u32 dlc_mode_bits(kuid_t uid, kgid_t gid, u32 mode);

/*
 * Pins: a pinned data set is not freed (an unpin of the last reference
 * frees it). dlc_pin_all() pins every data set of @cache into @v (of
 * DLC_MAX_DATASETS), with cache->lock held, and returns how many.
 */
void dlc_dataset_pin(struct dlc_dataset *ds);
void dlc_dataset_unpin(struct dlc_dataset *ds);
u32 dlc_pin_all(struct dlc_cache *cache, struct dlc_dataset **v);
void dlc_unpin_all(struct dlc_dataset **v, u32 n);

/*
 * Idle data sets. dlc_idle_unlist() takes idle @ds off the cache's list
 * (cache->lock held) onto @reap, which dlc_idle_reap() frees without it.
 * dlc_idle_expire() frees those idle for idle_keep_s (all of them with
 * @all) and returns whether any is left, its deadline in *@next.
 */
void dlc_idle_unlist(struct dlc_dataset *ds, struct list_head *reap);
void dlc_idle_reap(struct list_head *reap);
bool dlc_idle_expire(struct dlc_cache *cache, bool all, unsigned long *next);
/* Module exit (and a failed init): wait for the idle work. */
void dlc_idle_stop(void);

/* Called with @sess->ring_lock held: detach @att, ending its fills. */
void dlc_detach(struct dlc_session *sess, struct dlc_attachment *att);

/* The accounting owner of the caller: its uid in init_user_ns's terms. */
kuid_t dlc_acct_owner(void);
/*
 * Copies in flight: charge @bytes to the caller's owner before a copy
 * (0, or -EDQUOT past uid_max_copy_mb; *@out for dlc_copy_end()), and
 * uncharge them after it.
 */
int dlc_copy_begin(u64 bytes, struct dlc_copier **out);
void dlc_copy_end(struct dlc_copier *c, u64 bytes);
void dlc_copiers_show(struct seq_file *m);
bool dlc_copies_none(void);

/* The data sets' ioctls (main.c's dlc_iocs[] dispatches). */
long dlc_ioc_attach(struct dlc_session *sess, void __user *uarg);
long dlc_ioc_detach(struct dlc_session *sess, void __user *uarg);
long dlc_ioc_set_order(struct dlc_session *sess, void __user *uarg);

#endif
