// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * attach_race: processes of one uid ATTACH the same missing key at once,
 * with data sets whose policy arrays take a while to allocate. ATTACH
 * allocates them without the module's lock and re-checks for a racing
 * creator afterwards: every ATTACH must succeed, exactly one says CREATED,
 * all get the same data set, and the losers' memory is given back (the
 * reservations leave no trace: afterwards the uid can create up to its
 * limits again, and rmmod after the test finds nothing left).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "dlc_test.h"

#define NPROC 6
#define NS 50000		/* about 2.4 MB of policy arrays each */

struct shared {
	int go;
	int created;
	int ok;
};

int main(void)
{
	struct dlcache_stats st;
	struct shared *sh;
	uint64_t key[2];
	pid_t pids[NPROC];
	int fd, i;

	t_time_limit(90);
	t_key("attach-race", key);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		FATAL("mmap: %m");
	memset(sh, 0, sizeof(*sh));
	for (i = 0; i < NPROC; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			FATAL("fork: %m");
		if (pids[i] == 0) {
			struct dlcache_attach a;
			int cfd = t_open();
			long h;

			while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE))
				;
			h = t_attach(cfd, key, NS, 0600, 0, &a);
			if (h < 0) {
				printf("FAIL: ATTACH %d: %s\n", i, t_errname(h));
				_exit(1);
			}
			if (a.result_flags & DLCACHE_ATTACH_CREATED)
				__atomic_add_fetch(&sh->created, 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&sh->ok, 1, __ATOMIC_RELAXED);
			/* Hold it until everyone attached. */
			while (__atomic_load_n(&sh->ok, __ATOMIC_ACQUIRE) < NPROC &&
			       __atomic_load_n(&sh->go, __ATOMIC_ACQUIRE) == 1)
				t_msleep(1);
			t_msleep(200);
			close(cfd);
			_exit(0);
		}
	}
	__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	t_msleep(100);
	fd = t_open();
	for (i = 0; i < 50 && __atomic_load_n(&sh->ok, __ATOMIC_ACQUIRE) < NPROC; i++)
		t_msleep(100);
	t_stats(fd, 0, &st);
	t_info("%d attached, %d created, %u data sets", sh->ok, sh->created, st.ndatasets);
	CHECK_EQ(st.ndatasets, 1, "data sets after racing ATTACHes of one key");
	__atomic_store_n(&sh->go, 2, __ATOMIC_RELEASE);
	for (i = 0; i < NPROC; i++)
		CHECK_EQ(t_wait(pids[i], 30), 0, "racing child");
	CHECK_EQ(sh->ok, NPROC, "ATTACHes that succeeded");
	CHECK_EQ(sh->created, 1, "ATTACHes that say CREATED");
	/* The last close leaves it cached, idle (DLCACHE_FEAT_IDLE). */
	t_stats(fd, 0, &st);
	CHECK_EQ(st.ndatasets, 1, "data sets once every racer closed");
	memset(&st, 0, sizeof(st));
	st.flags = DLCACHE_STATS_F_DATASET | DLCACHE_STATS_F_INDEX;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_STATS, &st), 0, "STATS of data set 0");
	CHECK(st.ds_flags & DLCACHE_DS_F_IDLE, "data set not idle once every racer closed");
	CHECK_EQ(st.ds_attached, 0, "attachments once every racer closed");
	close(fd);
	return t_done();
}
