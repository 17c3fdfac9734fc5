/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Shared helpers of the dlcache QEMU test programs: checks that print
 * "FAIL: ..." lines, ioctl wrappers returning -errno, the SQ/CQ rings set up
 * from the offsets that DLCACHE_IOC_SETUP_RING publishes, sample byte
 * patterns, and process helpers with time limits.
 *
 * Only uapi/dlcache.h and libc are used, so that these programs test the
 * ABI as any user of it sees it. A test exits 0 (pass), 1 (fail) or 77
 * (skip).
 */
#ifndef DLC_TEST_H
#define DLC_TEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <sys/types.h>
#include <sys/ioctl.h>
#include "dlcache.h"

#define T_PASS 0
#define T_FAIL 1
#define T_SKIP 77

/* Layouts as ABI 1 and 2 define them; a change must be deliberate. */
_Static_assert(sizeof(struct dlcache_info) == 96, "dlcache_info");
_Static_assert(sizeof(struct dlcache_ring_setup) == 144, "dlcache_ring_setup");
_Static_assert(sizeof(struct dlcache_sqe) == 64, "dlcache_sqe");
_Static_assert(sizeof(struct dlcache_cqe) == 32, "dlcache_cqe");
_Static_assert(sizeof(struct dlcache_enter) == 40, "dlcache_enter");
_Static_assert(sizeof(struct dlcache_attach) == 72, "dlcache_attach");
_Static_assert(sizeof(struct dlcache_detach) == 24, "dlcache_detach");
_Static_assert(sizeof(struct dlcache_order) == 40, "dlcache_order");
_Static_assert(sizeof(struct dlcache_counters) == 192, "dlcache_counters");
_Static_assert(sizeof(struct dlcache_stats) == 504, "dlcache_stats");
_Static_assert(sizeof(struct dlcache_capacity) == 40, "dlcache_capacity");
_Static_assert(sizeof(struct dlcache_drop) == 48, "dlcache_drop");

/* ---- checks -------------------------------------------------------------- */

extern int t_failures;

void t_fail_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void t_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "FAIL: ..." and exits 1 at once. */
void t_fatal_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));
/* Prints "SKIP: ..." and exits 77. */
void t_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Exit status of the test: 1 if anything failed, else 0. */
int t_done(void);

#define FAIL(...) t_fail_at(__FILE__, __LINE__, __VA_ARGS__)
#define FATAL(...) t_fatal_at(__FILE__, __LINE__, __VA_ARGS__)
#define CHECK(cond, ...) do {						\
		if (!(cond))						\
			FAIL(__VA_ARGS__);				\
	} while (0)
/* Integer equality, both values printed. */
#define CHECK_EQ(a, b, what) do {					\
		long long _a = (long long)(a), _b = (long long)(b);	\
		if (_a != _b)						\
			FAIL("%s: got %lld, want %lld", (what), _a, _b);\
	} while (0)
/* An -errno result, printed by name. */
#define CHECK_ERR(got, want, what) do {					\
		long long _g = (long long)(got), _w = (long long)(want);\
		if (_g != _w)						\
			FAIL("%s: got %s, want %s", (what),		\
			     t_errname(_g), t_errname(_w));		\
	} while (0)

/* "0", "-EINVAL", "-E2BIG", ..., or the number. */
const char *t_errname(long long v);

/* Kills the test with "FAIL: time limit" after @secs seconds (alarm). */
void t_time_limit(unsigned secs);

/* ---- device and ioctls ---------------------------------------------------- */

/*
 * The features t_open() enables (ABI 4: the session's first GET_INFO
 * fixes them): idle retention, which the tests were written for, as
 * libdlcache asks for it.
 */
#define T_FEATS DLCACHE_FEAT_IDLE
/*
 * Opens DLCACHE_DEVICE read-write and enables T_FEATS (GET_INFO); FATAL
 * when the open fails. t_open_raw() only opens: the session's features
 * are left to its first GET_INFO (none without one).
 */
int t_open(void);
int t_open_raw(void);
/* ioctl returning 0 / a non-negative result, or -errno. */
long t_ioctl(int fd, unsigned long cmd, void *arg);

int t_get_info(int fd, struct dlcache_info *info);
/* Fills @k from a tag, so that every test uses its own data sets. */
void t_key(const char *tag, uint64_t k[2]);
/* ATTACH: returns the handle (>= 1) or -errno; @out may be NULL. */
long t_attach(int fd, const uint64_t key[2], uint32_t nsamples, uint32_t mode,
	      uint32_t flags, struct dlcache_attach *out);
/* ATTACH with DLCACHE_ATTACH_F_JOB: a member of job @job's consumer. */
long t_attach_job(int fd, const uint64_t key[2], uint32_t nsamples, uint32_t mode,
		  uint64_t job, struct dlcache_attach *out);
/* ATTACH with DLCACHE_ATTACH_F_OWNER: the data set of owner @owner. */
/* The caller's data set of form @form of (@key) (DLCACHE_ATTACH_F_FORM). */
long t_attach_form(int fd, const uint64_t key[2], uint32_t nsamples, uint32_t form,
		   struct dlcache_attach *out);
long t_attach_owner(int fd, const uint64_t key[2], uint32_t nsamples, uid_t owner,
		    uint32_t flags, struct dlcache_attach *out);
/* Reads or writes /sys/module/dlcache/parameters/@name; -errno. */
long t_param_get(const char *name, unsigned long long *val);
long t_param_set(const char *name, unsigned long long val);
/* The module as the guest's /init installs it. */
#define T_KO "/dlcache.ko"
/* finit_module(T_KO, @params) and delete_module (O_NONBLOCK); -errno. */
long t_insmod(const char *params);
long t_rmmod(void);
/* Writes @val to, or reads at most @len - 1 bytes (NUL-terminated) of, the
 * file @path: sysfs and cgroup files. False on any error. */
bool t_write_file(const char *path, const char *val);
bool t_read_file(const char *path, char *buf, size_t len);
/* CLOCK_MONOTONIC in milliseconds. */
uint64_t t_now_ms(void);
long t_detach(int fd, uint32_t handle);
long t_set_order(int fd, uint32_t handle, uint32_t epoch, const uint32_t *ids,
		 uint32_t len);
/* STATS; @handle 0 means global only. */
long t_stats(int fd, uint32_t handle, struct dlcache_stats *st);
/* t_stats() that must work: a failure is FATAL. */
struct dlcache_stats t_stats_of(int fd, uint32_t handle);
long t_set_capacity(int fd, uint64_t bytes, uint64_t *old);
/* DROP all data sets (@key NULL) or one. */
long t_drop(int fd, const uint64_t *key, uint64_t *dropped);

/* ---- rings ---------------------------------------------------------------- */

struct t_ring {
	int fd;
	struct dlcache_ring_setup p;
	void *sq, *cq;
	uint32_t *sq_head, *sq_tail, *sq_mask, *sq_entries, *sq_flags, *sq_dropped;
	struct dlcache_sqe *sqes;
	uint32_t *cq_head, *cq_tail, *cq_mask, *cq_entries, *cq_flags, *cq_pending;
	struct dlcache_cqe *cqes;
};

/* SETUP_RING and the two mmaps; 0 or -errno. */
long t_ring_init(struct t_ring *r, int fd, uint32_t sq_entries, uint32_t cq_entries);
void t_ring_unmap(struct t_ring *r);
/* The next SQE slot, zeroed, or NULL when the SQ is full. */
struct dlcache_sqe *t_sqe(struct t_ring *r);
/* Publishes the SQE that t_sqe() returned (tail + 1, release). */
void t_sqe_push(struct t_ring *r);
/* Copies @sqe into the ring and publishes it; false when full. */
bool t_push(struct t_ring *r, const struct dlcache_sqe *sqe);
/* ENTER; returns the SQEs consumed, or -errno. */
long t_enter(struct t_ring *r, uint32_t to_submit, uint32_t min_complete,
	     uint32_t flags, uint64_t timeout_ns);
/* Completions ready in the CQ. */
uint32_t t_cq_ready(struct t_ring *r);
/* Takes one CQE; false when the CQ is empty. */
bool t_reap(struct t_ring *r, struct dlcache_cqe *cqe);
/*
 * Submits one SQE and waits (at most 5 s) for its completion. Returns 0
 * with *cqe filled, or -errno of ENTER, or -ETIME.
 */
long t_do(struct t_ring *r, const struct dlcache_sqe *sqe, struct dlcache_cqe *cqe);
/* GET, PUT, ABORT through t_do(); return cqe->res, or the t_do() error
 * (which also prints a FAIL line). */
long t_get(struct t_ring *r, uint32_t h, uint32_t sample, void *buf, uint32_t len,
	   struct dlcache_cqe *cqe);
/* GET with DLCACHE_SQE_F_AT: the use at index @index of epoch @epoch. */
long t_get_at(struct t_ring *r, uint32_t h, uint32_t sample, uint32_t epoch,
	      uint32_t index, void *buf, uint32_t len, struct dlcache_cqe *cqe);
long t_put(struct t_ring *r, uint32_t h, uint32_t sample, const void *buf,
	   uint32_t len, struct dlcache_cqe *cqe);
long t_abort(struct t_ring *r, uint32_t h, uint32_t sample, uint16_t flags,
	     struct dlcache_cqe *cqe);
long t_nop(struct t_ring *r, uint64_t user_data, struct dlcache_cqe *cqe);

/* ---- sample bytes --------------------------------------------------------- */

/* Deterministic bytes of sample @sample of data set @tag, @len long. */
void t_pattern(void *buf, size_t len, uint64_t tag, uint32_t sample);
/* true when @buf holds exactly that pattern; prints the first mismatch. */
bool t_pattern_ok(const void *buf, size_t len, uint64_t tag, uint32_t sample);

/* xorshift64*, never returns the same sequence for different seeds. */
uint64_t t_rand(uint64_t *state);

/* ---- processes ------------------------------------------------------------ */

/*
 * Waits for @pid at most @secs seconds. Returns its exit status, 128 + the
 * signal when killed, or -1 on time-out (then the child is killed).
 */
int t_wait(pid_t pid, unsigned secs);
/* Prints a task's state, wait channel, kernel stack and current syscall. */
void t_dump_task(pid_t pid);
void t_msleep(unsigned ms);
/* Drops root: supplementary groups @groups (may be 0), gid, uid. */
void t_become(uid_t uid, gid_t gid, const gid_t *groups, int ngroups);
/* The "dlcache" group of admin.md's udev rule, as the tests set it up. */
#define T_DEVGRP 4343
/*
 * Fork a child that becomes @uid (gid @uid, member of T_DEVGRP only, so it
 * may open a 0660 device of that group) under a 60 s limit and exits with
 * fn()'s value; returns its pid for t_wait().
 */
pid_t t_start_user(uid_t uid, int (*fn)(void));
/* Writes/reads one byte on a pipe, with a time limit for the read. */
void t_signal(int wfd);
bool t_await(int rfd, unsigned secs);
/* Value of a "Name: N kB" line of /proc/meminfo, in bytes; 0 if absent. */
uint64_t t_meminfo(const char *name);

#endif /* DLC_TEST_H */
