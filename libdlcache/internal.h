/* SPDX-License-Identifier: MIT */
/*
 * libdlcache internals shared between its files: logging, threads' ends,
 * the clock, an index's pack; and, for the files that use several, every
 * module's own header (one per module: buf.h, cache.h, reader.h, ...).
 */
#ifndef DLC_INTERNAL_H
#define DLC_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <stddef.h>
#include <time.h>

#include "dlcache.h"
#include "policy.h"

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

#define dlc_stat_add(field, v) __atomic_fetch_add(&(field), (v), __ATOMIC_RELAXED)

/* ---- the index (index.c) ---- */

/*
 * The pack an index was loaded from (dlc_index_load() of a .dlp), or NULL
 * for an index of files. Owned by the index. (The key's hash,
 * dlc_key128(), is siphash.h's; the checks of a name read from a file,
 * dlc_index_class_name_ok() and dlc_index_relpath_ok(), relpath.h's.)
 */
struct dlc_pack;
const struct dlc_pack *dlc_index_pack(const struct dlc_index *idx);

#include "buf.h"
#include "cache.h"
#include "reader.h"
#include "source.h"
#include "cgroup.h"
#include "cpus.h"
#include "pinned.h"
#include "decode.h"

#endif /* DLC_INTERNAL_H */
