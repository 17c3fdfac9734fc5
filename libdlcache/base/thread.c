// SPDX-License-Identifier: MIT
/*
 * Threads' ends: a join bounded in time (dlc_join_bounded(), declared in
 * internal.h), for the pipeline's threads (loader.c) and the staging
 * tier's (stage.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "internal.h"

/* How long a thread that returned may take to end before it is detached. */
#define EXIT_GRACE_MS	1000

void dlc_join_bounded(pthread_t t, const uint32_t *returned,
		      uint32_t nthreads, const struct dlc_logger *log)
{
	uint32_t waited = 0;
	struct timespec ts;

	for (;;) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (pthread_timedjoin_np(t, NULL, &ts) != ETIMEDOUT)
			return;
		if (__atomic_load_n(returned, __ATOMIC_ACQUIRE) < nthreads)
			continue;
		waited += 100;
		if (waited >= EXIT_GRACE_MS)
			break;
	}
	dlc_logf(log, DLC_LOG_WARN,
		 "a pipeline thread returned but has not ended after %u ms (an io_uring read on a hung file system?): detached",
		 EXIT_GRACE_MS);
	pthread_detach(t);
}
