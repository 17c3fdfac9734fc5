/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dlcache.ko's data sets as users see them (dataset.c): finding or
 * creating the data set of an ATTACH, idle data sets, consumers, and
 * what each owner may make the kernel hold. Shared with the sessions
 * (session.c), the ioctls over both (attach.c) and the device (main.c);
 * dataset.c itself calls none of them.
 */
#ifndef DLC_DATASET_H
#define DLC_DATASET_H

#include <linux/list.h>
#include <linux/types.h>
#include <linux/uidgid.h>

#include "dlc.h"

struct dlc_consumer;
struct dlc_copier;
struct dlc_member;
struct dlcache_attach;
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
bool dlc_dataset_listed(const struct dlc_dataset *ds, bool admin);
/* The @index-th data set STATS lists to the caller, pinned; or NULL. */
struct dlc_dataset *dlc_dataset_pin_listed(struct dlc_cache *cache, u32 index,
					   bool admin);
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

/*
 * Attachments. dlc_dataset_attach_locked() finds or creates the data set
 * an ATTACH asks for and counts the attachment (cache->lock held, dropped
 * meanwhile to create one; see dataset.c). dlc_dataset_put() drops an
 * attachment's (@attached) or another reference, and
 * dlc_consumer_join() and dlc_consumer_release() make and end an
 * attachment's membership of its job's consumer: all three take
 * cache->lock and are called without it.
 */
struct dlc_dataset *dlc_dataset_attach_locked(struct dlc_cache *cache,
					      struct dlcache_attach *a,
					      kuid_t owner, bool may_create,
					      u32 mode, u32 *perm,
					      struct dlc_dataset **spare,
					      struct list_head *reap);
void dlc_dataset_put(struct dlc_dataset *ds, bool attached, bool idle);
int dlc_consumer_join(struct dlc_dataset *ds, struct dlc_member *m, u64 job);
void dlc_consumer_release(struct dlc_dataset *ds, struct dlc_consumer *c);

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

#endif
