/* SPDX-License-Identifier: MIT */
/*
 * libdlcache internals shared between its files: logging, threads' ends,
 * the clock; and the headers of the rest of base/ that every layer uses
 * (buf.h, cgroup.h, cpus.h, pinned.h). A file of a layer above includes
 * the headers of the other layers it uses itself (Documentation/design.md,
 * "Layers and folders": base/ names no folder above it).
 */
#ifndef DLC_INTERNAL_H
#define DLC_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <stddef.h>
#include <time.h>

#include "dlcache.h"

/* ---- logging ---- */

struct dlc_logger {
	dlc_log_fn fn;
	void *arg;
	uint32_t level;
};

void dlc_logf(const struct dlc_logger *lg, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Memory left to the kernel on purpose (an io_uring operation that never
 * completed may still write into it, so it is never freed): not a leak
 * to LeakSanitizer, where one is linked in. What it points to neither.
 */
void __lsan_ignore_object(const void *p) __attribute__((weak));
static inline void dlc_leave_to_kernel(const void *p)
{
	if (__lsan_ignore_object && p)
		__lsan_ignore_object(p);
}

/*
 * Join @t, one of @nthreads threads each of which adds 1 to *@returned
 * (atomically) as its last touch of what it shares: bounded. A thread
 * whose io_uring holds an operation the kernel cannot cancel (a hard NFS
 * mount that stopped answering) cannot end: Linux makes its exit wait
 * for its io-wq workers. So once all @nthreads returned (none touches
 * shared memory any more), @t still not ended after 1 s is detached, said
 * on @log. Every wait of the threads on storage must have a deadline.
 * In thread.c, for the loader's threads and the staging tier's.
 */
void dlc_join_bounded(pthread_t t, const uint32_t *returned,
		      uint32_t nthreads, const struct dlc_logger *log);

static inline uint64_t dlc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * pthread_cond_timedwait() until @until_ns, a dlc_now_ns() time: @cv must
 * have been made with CLOCK_MONOTONIC (pthread_condattr_setclock()).
 */
static inline int dlc_cond_wait_until(pthread_cond_t *cv,
				      pthread_mutex_t *m, uint64_t until_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(until_ns / 1000000000ULL),
		.tv_nsec = (long)(until_ns % 1000000000ULL),
	};

	return pthread_cond_timedwait(cv, m, &ts);
}

/* CPU time of the calling thread; 0 if the clock cannot be read. */
static inline uint64_t dlc_thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * Whether a call begun at @wall_start_ns (dlc_now_ns()) and
 * @cpu_start_ns (dlc_thread_cpu_ns()) has spent over @budget_ns of its
 * thread's CPU time; *@cpu_ns gets what it spent once that is read. The
 * thread's CPU clock is a system call, the monotonic one is not: CPU
 * time never runs ahead of wall time, so the CPU clock is read only once
 * the call has taken its budget in wall time. For checks run per row.
 */
static inline int dlc_over_cpu_budget(uint64_t wall_start_ns,
				      uint64_t cpu_start_ns,
				      uint64_t budget_ns, uint64_t *cpu_ns)
{
	if (dlc_now_ns() - wall_start_ns <= budget_ns)
		return 0;
	*cpu_ns = dlc_thread_cpu_ns() - cpu_start_ns;
	return *cpu_ns > budget_ns;
}

#define dlc_stat_add(field, v) __atomic_fetch_add(&(field), (v), __ATOMIC_RELAXED)

#include "buf.h"
#include "cgroup.h"
#include "cpus.h"
#include "pinned.h"

#endif /* DLC_INTERNAL_H */
