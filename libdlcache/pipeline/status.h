/* SPDX-License-Identifier: MIT */
/*
 * A loader's status, published (status.c): its counters and what its
 * controllers chose, where `dlcachectl watch` on the same node reads them,
 * with or without dlcache.ko.
 *
 * Each loader writes a file of its own,
 * /dev/shm/dlcache-loader-EUID-PID-N (N counts the process's loaders),
 * made O_EXCL, mode 0600: only its user and root can read it. Its I/O
 * thread refreshes it at most every DLC_STATUS_PERIOD_NS, under a
 * sequence count (odd while it writes), so that a reader retries a torn
 * copy. dlc_loader_destroy() removes it; one that a killed process left
 * is removed by the next reader of the same user that finds the process
 * gone (by pid and start time, proc.h). The environment variable
 * DLCACHE_STATUS=0 turns publishing off. Publishing is best effort: a
 * loader that cannot make its file says so at DLC_LOG_INFO and runs on.
 * Internal to libdlcache; dlcachectl reads it.
 */
#ifndef DLC_STATUS_H
#define DLC_STATUS_H

#include <stdint.h>

#include "dlcache.h"

struct dlc_logger;

/* The longest a file goes unrefreshed while its loader works. */
#define DLC_STATUS_PERIOD_NS	(250ULL * 1000000)

/* One loader's status; the writer fills every field. */
struct dlc_status_info {
	uint32_t uid;		/* the loader's process: euid, pid and start */
	uint32_t pid;
	uint64_t start;		/* time (dlc_proc_start()) */
	uint64_t created_ns;	/* CLOCK_MONOTONIC (dlc_now_ns()): made */
	uint64_t t_ns;		/* ... and these counters taken */
	uint32_t backend;	/* enum dlc_backend, now */
	uint32_t decode_threads;	/* its own decoders (guests: stats) */
	uint32_t queue_depth;	/* reads in flight at most */
	uint32_t batch_size;
	uint32_t rank, world;	/* its shard */
	uint32_t cluster;	/* 1: cluster mode */
	uint32_t pad;
	char source[256];	/* the data set's root, cut to fit */
	struct dlc_stats stats;	/* last: a larger one reads cut */
};

struct dlc_status;

/*
 * Make this loader's file with @info (all but t_ns and stats). NULL when
 * publishing is off or the file cannot be made (logged at INFO to @log).
 */
struct dlc_status *dlc_status_open(const struct dlc_status_info *info,
				   const struct dlc_logger *log);

/*
 * Whether @now (dlc_now_ns()) is DLC_STATUS_PERIOD_NS past the last
 * refresh: then the caller takes the counters and calls
 * dlc_status_write(). False for NULL. One thread's, the writer's.
 */
int dlc_status_due(const struct dlc_status *s, uint64_t now);

/*
 * Publish @st and @backend (a fallback changes it), taken at @now. NULL
 * is fine. One thread's, the writer's.
 */
void dlc_status_write(struct dlc_status *s, const struct dlc_stats *st,
		      uint32_t backend, uint64_t now);

/*
 * Remove the file (only in the process that made it: a fork's child
 * leaves its parent's) and free @s. NULL is fine.
 */
void dlc_status_close(struct dlc_status *s);

/*
 * Every live loader's status this process may read, in @dir (NULL:
 * /dev/shm), in no set order: @fn(info, @arg) for each; a nonzero return
 * stops the walk and is returned. A file is read only when it is a
 * regular file of the uid its name says, mode 0600, of this format and
 * size, and its process is live; a stale one (its process gone) is
 * removed when it is this user's. 0, @fn's value, or -errno when @dir
 * cannot be read.
 */
int dlc_status_scan(const char *dir,
		    int (*fn)(const struct dlc_status_info *info, void *arg),
		    void *arg);

#endif /* DLC_STATUS_H */
