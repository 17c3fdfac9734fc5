/* SPDX-License-Identifier: MIT */
/*
 * A thin client of /dev/dlcache for the loader's kernel backend. See
 * uapi/dlcache.h and Documentation/abi.md for the protocol.
 */
#ifndef DLC_KCLIENT_H
#define DLC_KCLIENT_H

#include <stdint.h>

struct dlcache_sqe;
struct dlcache_cqe;
struct dlcache_stats;
struct dlc_kclient;

struct dlcache_ring_setup;

/*
 * Whether the ring layout SETUP_RING returned in @rs, for @asked SQ
 * entries (and the default CQ, twice as many), can be used with the
 * rings mapped at @rs's sizes: each entry count a power of two no larger
 * than asked (rounded up), the sizes at most DLC_KCLIENT_RING_MAX, and
 * every field (aligned) and entry array inside its mapping. 0, or
 * -EPROTO with *@why saying what is wrong. A size from the module is
 * checked before it is used.
 */
#define DLC_KCLIENT_RING_MAX	(1ULL << 30)
int dlc_kclient_check_layout(const struct dlcache_ring_setup *rs,
			     uint32_t asked, const char **why);

/* @owner of dlc_kclient_open(): this process's own data set. */
#define DLC_KCLIENT_SELF	UINT32_MAX

/*
 * The ATTACH flags for @owner when this process's euid is @self: 0 for
 * its own data set (found or created), else DLCACHE_ATTACH_F_OWNER |
 * DLCACHE_ATTACH_F_NOCREATE (another user's, never created).
 */
uint32_t dlc_kclient_attach_flags(uint32_t owner, uint32_t self);

/*
 * Open @dev, check the ABI (version 2 or later, with DLCACHE_FEAT_OWNER),
 * attach to data set @key of @nsamples samples of @owner (DLC_KCLIENT_SELF:
 * our own, created with @mode and @window when new; another uid: that
 * user's existing one) and map a ring of @entries. A nonzero @job joins
 * that job's consumer (its own time line) when the module has
 * DLCACHE_FEAT_CONSUMERS; else the data set's shared time line is used. The owner ATTACH reports must
 * be the one asked for, else -EPERM. On failure returns -errno and sets
 * *@why to a reason for a person.
 */
int dlc_kclient_open(const char *dev, const uint64_t key[2],
		     uint32_t nsamples, uint32_t mode, uint32_t window,
		     uint32_t entries, uint32_t owner, uint64_t job,
		     struct dlc_kclient **out, const char **why);
/*
 * dlc_kclient_open() of this user's data set of form @form (1 .. 255) of
 * @key (DLCACHE_FEAT_FORMS), 0600: another set than the encoded one,
 * whose misses take no fill. -EOPNOTSUPP from a module without forms.
 */
int dlc_kclient_open_form(const char *dev, const uint64_t key[2],
			  uint32_t nsamples, uint32_t window, uint32_t entries,
			  uint64_t job, uint32_t form,
			  struct dlc_kclient **out, const char **why);
void dlc_kclient_close(struct dlc_kclient *k);

int dlc_kclient_fd(const struct dlc_kclient *k);
uint32_t dlc_kclient_handle(const struct dlc_kclient *k);
/* The owner uid of the data set attached. */
uint32_t dlc_kclient_owner(const struct dlc_kclient *k);
/* Whether the attachment joined a job's consumer (DLCACHE_ATTACH_JOINED). */
int dlc_kclient_joined(const struct dlc_kclient *k);
/*
 * -errno (-EUSERS, -EDQUOT, -ENOMEM) when the module refused the job's
 * own time line and dlc_kclient_open() attached to the shared one; else 0.
 */
int dlc_kclient_job_refused(const struct dlc_kclient *k);
/* Whether the module offers (and so granted) DLCACHE_FEAT_* @feature. */
int dlc_kclient_has(const struct dlc_kclient *k, uint64_t feature);
/* Whether this session may PUT (and so fill). */
int dlc_kclient_may_write(const struct dlc_kclient *k);
uint64_t dlc_kclient_capacity(const struct dlc_kclient *k);
/* The largest PUT the module takes, in bytes (GET_INFO's max_sample_size). */
uint32_t dlc_kclient_max_sample(const struct dlc_kclient *k);

/*
 * Upload one epoch's order (the global one, every rank's positions) to
 * the attachment's time line: the job's, or the shared one.
 */
int dlc_kclient_set_order(struct dlc_kclient *k, uint32_t epoch,
			  const uint32_t *ids, uint32_t len);

/* A zeroed SQE to fill, or NULL when the SQ is full (enter first). */
struct dlcache_sqe *dlc_kclient_sqe(struct dlc_kclient *k);
/* SQEs filled and not yet consumed by the kernel. */
uint32_t dlc_kclient_unsubmitted(const struct dlc_kclient *k);
/* The @i-th of those, oldest first (@i < dlc_kclient_unsubmitted()). */
const struct dlcache_sqe *dlc_kclient_unsubmitted_sqe(const struct dlc_kclient *k,
						      uint32_t i);
/* Publish the SQEs and run them; returns SQEs consumed or -errno. */
int dlc_kclient_enter(struct dlc_kclient *k);
/* Deferred GET completions wait for an ENTER. */
int dlc_kclient_pending(const struct dlc_kclient *k);
/* Copy up to @max CQEs out and free their slots. */
uint32_t dlc_kclient_reap(struct dlc_kclient *k, struct dlcache_cqe *out,
			  uint32_t max);
/* STATS of the whole cache and of this data set. */
int dlc_kclient_stats(struct dlc_kclient *k, struct dlcache_stats *st);

#endif /* DLC_KCLIENT_H */
