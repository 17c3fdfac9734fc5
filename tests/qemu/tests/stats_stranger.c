// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * stats_stranger: DLCACHE_IOC_STATS with DLCACHE_STATS_F_INDEX lists only
 * the data sets the caller may read (by their modes); CAP_SYS_ADMIN sees
 * them all. ndatasets is the global count for CAP_SYS_ADMIN and the
 * visible count for everyone else.
 *
 * Owner uid 5101 holds a 0600 and a 0604 data set. A stranger (uid 5102,
 * in neither group) lists: the 0604 one is there, the 0600 one is not,
 * and ndatasets equals what it could list. The owner lists both; root
 * lists both and sees the global count. A handle without F_DATASET is
 * -EINVAL.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlc_test.h"

#define N 8
#define OWNER 5101
#define STRANGER 5102
#define DEVGRP T_DEVGRP

static uint64_t k_private[2], k_public[2], k_root[2];
static int ready[2], go[2];

struct listing {
	uint32_t ndatasets;	/* as STATS reports it */
	uint32_t listed;	/* indices before -ENOENT */
	bool has_private, has_public, has_root;
};

static void list_all(int fd, struct listing *l, const char *who)
{
	struct dlcache_stats st;
	long ret;

	memset(l, 0, sizeof(*l));
	for (uint32_t i = 0; i < 1000; i++) {
		memset(&st, 0, sizeof(st));
		st.handle = i;
		st.flags = DLCACHE_STATS_F_DATASET | DLCACHE_STATS_F_INDEX;
		ret = t_ioctl(fd, DLCACHE_IOC_STATS, &st);
		if (ret == -ENOENT)
			break;
		if (ret < 0) {
			FAIL("%s: STATS index %u: %s", who, i, t_errname(ret));
			break;
		}
		if (i == 0)
			l->ndatasets = st.ndatasets;
		l->listed++;
		if (st.ds_key[0] == k_private[0] && st.ds_key[1] == k_private[1] &&
		    st.ds_owner_uid == OWNER)
			l->has_private = true;
		if (st.ds_key[0] == k_public[0] && st.ds_key[1] == k_public[1] &&
		    st.ds_owner_uid == OWNER)
			l->has_public = true;
		if (st.ds_key[0] == k_root[0] && st.ds_key[1] == k_root[1] &&
		    st.ds_owner_uid == 0)
			l->has_root = true;
	}
	if (!l->listed) {
		memset(&st, 0, sizeof(st));
		if (t_ioctl(fd, DLCACHE_IOC_STATS, &st) == 0)
			l->ndatasets = st.ndatasets;
	}
	t_info("%s lists %u data sets, ndatasets %u, private %d, public %d", who, l->listed,
	       l->ndatasets, l->has_private, l->has_public);
}

static int owner(void)
{
	struct listing l;
	int fd = t_open();
	long h;

	h = t_attach(fd, k_private, N, 0600, 0, NULL);
	if (h < 0)
		FATAL("owner ATTACH 0600: %s", t_errname(h));
	h = t_attach(fd, k_public, N, 0604, 0, NULL);
	if (h < 0)
		FATAL("owner ATTACH 0604: %s", t_errname(h));
	list_all(fd, &l, "owner");
	CHECK(l.has_private && l.has_public, "the owner does not see its own data sets");
	CHECK_EQ(l.ndatasets, l.listed, "owner: ndatasets is what it can list");
	t_signal(ready[1]);
	if (!t_await(go[0], 60))
		FAIL("owner: never told to finish");
	close(fd);
	return t_done();
}

static int stranger(void)
{
	struct dlcache_stats st;
	struct listing l;
	int fd = t_open();

	list_all(fd, &l, "stranger");
	CHECK(!l.has_private, "a stranger's STATS F_INDEX lists another user's 0600 data set");
	CHECK(!l.has_root, "a stranger's STATS F_INDEX lists root's 0600 data set");
	CHECK(l.has_public, "a stranger's STATS F_INDEX does not list a 0604 data set");
	CHECK_EQ(l.listed, 1, "data sets a stranger lists (root's and the owner's 0600 hidden)");
	CHECK_EQ(l.ndatasets, l.listed, "stranger: ndatasets counts only what it may see");
	memset(&st, 0, sizeof(st));
	st.handle = 1;
	CHECK_ERR(t_ioctl(fd, DLCACHE_IOC_STATS, &st), -EINVAL,
		  "STATS with a handle but without F_DATASET");
	close(fd);
	return t_done();
}

int main(void)
{
	struct listing l;
	pid_t o;
	int fd;

	t_time_limit(90);
	if (getuid() != 0)
		t_skip("needs root to drop privileges");
	t_key("stats-stranger-private", k_private);
	t_key("stats-stranger-public", k_public);
	t_key("stats-stranger-root", k_root);
	if (chown(DLCACHE_DEVICE, 0, DEVGRP))
		FATAL("chown %s: %m", DLCACHE_DEVICE);
	if (pipe(ready) || pipe(go))
		FATAL("pipe: %m");
	fd = t_open();
	/* Root's own private data set: the stranger must not see it either. */
	if (t_attach(fd, k_root, N, 0600, 0, NULL) < 0)
		FATAL("root ATTACH");

	o = t_start_user(OWNER, owner);
	if (!t_await(ready[0], 30))
		FAIL("owner did not create its data sets");
	CHECK_EQ(t_wait(t_start_user(STRANGER, stranger), 30), 0, "stranger");

	list_all(fd, &l, "root");
	CHECK(l.has_private && l.has_public && l.has_root, "root does not see every data set");
	CHECK_EQ(l.listed, 3, "data sets root lists");
	CHECK_EQ(l.ndatasets, 3, "root: ndatasets is the global count");
	t_signal(go[1]);
	CHECK_EQ(t_wait(o, 30), 0, "owner");
	close(fd);
	return t_done();
}
