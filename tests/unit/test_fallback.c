// SPDX-License-Identifier: MIT
/*
 * The kernel backend's mid-run fallback, as far as the host can test it
 * without dlcache.ko (tests/qemu/integration runs the fallback itself):
 * - config: kernel_fallback defaults to DLC_KERNEL_FALLBACK_INPROCESS
 *   (0, so a zeroed field of an older caller means the default), it takes
 *   the padding before reserved (the struct keeps its size), an unknown
 *   mode is -EINVAL with a log line naming the field, the names;
 * - DLCACHE_KERNEL_FALLBACK: "inprocess" and "fail" are taken, anything
 *   else is -EINVAL with a log line naming the variable and the value;
 * - stats: kernel_fallbacks is the last counter, 0 for a run that never
 *   had the kernel backend, whose backend stays DLC_BACKEND_INPROCESS;
 * - the reader's watch reports POLLHUP (how the loader learns of a drain
 *   while idle), and an unwatched fd is no longer polled.
 */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlcache.h"
#include "internal.h"
#include "reader.h"
#include "helpers/testutil.h"

static char *g_dir;
static struct dlc_index *g_idx;

static void config(struct dlc_config *cfg)
{
	dlc_config_init(cfg);
	cfg->batch_size = 8;
	cfg->transform.out_w = 32;
	cfg->transform.out_h = 32;
	cfg->window = 16;
	cfg->queue_depth = 4;
	cfg->decode_threads = 1;
	cfg->backend = DLC_BACKEND_INPROCESS;
	cfg->log = t_log_capture;
}

/* create() with @cfg: its result, the loader destroyed. */
static int create(const struct dlc_config *cfg)
{
	struct dlc_loader *l = NULL;
	int ret = dlc_loader_create(cfg, g_idx, &l);

	CHECK(ret || l, "a loader");
	dlc_loader_destroy(l);
	return ret;
}

static void check_config(void)
{
	struct dlc_config cfg;

	config(&cfg);
	CHECK_EQ(cfg.kernel_fallback, DLC_KERNEL_FALLBACK_INPROCESS);
	CHECK_EQ(DLC_KERNEL_FALLBACK_INPROCESS, 0);
	CHECK(!strcmp(dlc_kernel_fallback_name(0), "inprocess"), "name 0");
	CHECK(!strcmp(dlc_kernel_fallback_name(1), "fail"), "name 1");
	CHECK(!strcmp(dlc_kernel_fallback_name(2), "?"), "name 2");
	/* Taken from the reserved space: the struct keeps its size. */
	CHECK_EQ(offsetof(struct dlc_config, kernel_fallback),
		 offsetof(struct dlc_config, validate) + 4);
	CHECK_EQ(offsetof(struct dlc_config, readahead_bytes),
		 offsetof(struct dlc_config, kernel_fallback) + 4);
	CHECK_EQ(offsetof(struct dlc_config, epochs),
		 offsetof(struct dlc_config, readahead_bytes) + 8);
	CHECK_EQ(offsetof(struct dlc_config, nvme_passthru),
		 offsetof(struct dlc_config, epochs) + 4);
	CHECK_EQ(offsetof(struct dlc_config, staging_dir),
		 offsetof(struct dlc_config, nvme_passthru) + 4);
	CHECK_EQ(offsetof(struct dlc_config, staging_bytes),
		 offsetof(struct dlc_config, staging_dir) + 8);
	CHECK_EQ(offsetof(struct dlc_config, cluster),
		 offsetof(struct dlc_config, staging_bytes) + 8);
	CHECK_EQ(offsetof(struct dlc_config, peer_timeout_ms),
		 offsetof(struct dlc_config, cluster) + 4);
	CHECK_EQ(offsetof(struct dlc_config, max_scans),
		 offsetof(struct dlc_config, peer_timeout_ms) + 4);
	CHECK_EQ(offsetof(struct dlc_config, decode_budget_ms),
		 offsetof(struct dlc_config, max_scans) + 4);
	CHECK_EQ(offsetof(struct dlc_config, read_timeout_ms),
		 offsetof(struct dlc_config, decode_budget_ms) + 4);
	CHECK_EQ(offsetof(struct dlc_config, pad2),
		 offsetof(struct dlc_config, read_timeout_ms) + 4);
	CHECK_EQ(offsetof(struct dlc_config, node_group),
		 offsetof(struct dlc_config, pad2) + 4);
	CHECK_EQ(offsetof(struct dlc_config, forms),
		 offsetof(struct dlc_config, node_group) + 8);
	CHECK_EQ(offsetof(struct dlc_config, pad3),
		 offsetof(struct dlc_config, forms) + 4);
	CHECK_EQ(sizeof(struct dlc_config),
		 offsetof(struct dlc_config, pad3) + 4);
	/* VER1 ends at pad2; node_group was the first field appended. */
	CHECK_EQ(DLC_CONFIG_SIZE_VER1, 240);
	CHECK_EQ(DLC_CONFIG_SIZE_VER2, 248);
	CHECK_EQ(sizeof(struct dlc_config), 256);
	CHECK_EQ(DLC_CONFIG_SIZE_VER3, 256);

	CHECK_EQ(create(&cfg), 0);
	cfg.kernel_fallback = DLC_KERNEL_FALLBACK_FAIL;
	CHECK_EQ(create(&cfg), 0);
	t_logbuf[0] = 0;
	cfg.kernel_fallback = 2;
	CHECK_EQ(create(&cfg), -EINVAL);
	CHECK(strstr(t_logbuf, "kernel_fallback: unknown mode 2"), "logged: %s",
	      t_logbuf);
}

static void check_env(void)
{
	struct dlc_config cfg;

	config(&cfg);
	setenv("DLCACHE_KERNEL_FALLBACK", "fail", 1);
	CHECK_EQ(create(&cfg), 0);
	setenv("DLCACHE_KERNEL_FALLBACK", "inprocess", 1);
	cfg.kernel_fallback = DLC_KERNEL_FALLBACK_FAIL;
	CHECK_EQ(create(&cfg), 0);
	setenv("DLCACHE_KERNEL_FALLBACK", "", 1);	/* unset, as elsewhere */
	CHECK_EQ(create(&cfg), 0);
	t_logbuf[0] = 0;
	setenv("DLCACHE_KERNEL_FALLBACK", "yes", 1);
	CHECK_EQ(create(&cfg), -EINVAL);
	CHECK(strstr(t_logbuf, "invalid DLCACHE_KERNEL_FALLBACK 'yes': want inprocess or fail"),
	      "logged: %s", t_logbuf);
	unsetenv("DLCACHE_KERNEL_FALLBACK");
}

static void check_stats(void)
{
	struct {
		struct dlc_stats s;
		uint64_t newer;
	} big;
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	struct dlc_batch *b;
	int ret;

	CHECK_EQ(offsetof(struct dlc_stats, kernel_fallbacks),
		 offsetof(struct dlc_stats, validated) + 8);
	CHECK_EQ(offsetof(struct dlc_stats, io_busy_ns),
		 offsetof(struct dlc_stats, kernel_fallbacks) + 8);
	CHECK_EQ(offsetof(struct dlc_stats, passthru_reads),
		 offsetof(struct dlc_stats, readahead_budget) + 8);
	CHECK_EQ(offsetof(struct dlc_stats, staging_hits),
		 offsetof(struct dlc_stats, passthru_reads) + 8);
	CHECK_EQ(offsetof(struct dlc_stats, cluster_local_hits),
		 offsetof(struct dlc_stats, staging_budget) + 8);
	CHECK_EQ(offsetof(struct dlc_stats, node_guest_decodes),
		 offsetof(struct dlc_stats, cluster_peer_diverted) + 8);
	CHECK_EQ(offsetof(struct dlc_stats, node_guest_reclaimed),
		 offsetof(struct dlc_stats, node_borrowed_cpus) + 8);
	CHECK_EQ(offsetof(struct dlc_stats, decode_starved_ns),
		 offsetof(struct dlc_stats, node_guest_reclaimed) + 8);
	CHECK_EQ(offsetof(struct dlc_stats, form_hits),
		 offsetof(struct dlc_stats, decode_starved_ns) + 8);
	CHECK_EQ(offsetof(struct dlc_stats, forms_regime),
		 offsetof(struct dlc_stats, form_hits) + 6 * 8);
	CHECK_EQ(offsetof(struct dlc_stats, cluster_backup_asked),
		 offsetof(struct dlc_stats, forms_regime) + 8);
	CHECK_EQ(sizeof(struct dlc_stats),
		 offsetof(struct dlc_stats, cluster_prepare_late) + 8);
	CHECK_EQ(offsetof(struct dlc_stats, cluster_prepared),
		 offsetof(struct dlc_stats, forms_displaced) + 8);
	config(&cfg);
	cfg.cache_bytes = 1 << 20;
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), 0);
	if (!l)
		return;
	CHECK_EQ(dlc_loader_start_epoch(l, 0, 0), 0);
	while ((ret = dlc_next_batch(l, &b)) == 0)
		dlc_release_batch(l, b);
	CHECK_EQ(ret, -ENODATA);
	memset(&big, 0xa5, sizeof(big));
	CHECK_EQ(dlc_loader_stats(l, &big.s, sizeof(big)), 0);
	CHECK_EQ(big.s.kernel_fallbacks, 0);
	CHECK_EQ(big.newer, 0);
	CHECK_EQ(dlc_loader_backend(l), DLC_BACKEND_INPROCESS);
	dlc_loader_destroy(l);
}

static struct dlc_reader *reader(void)
{
	struct dlc_reader_opts o = {
		.queue_depth = 2, .max_file_bytes = 1 << 20,
		.slot_bytes = 64 << 10,
	};
	struct dlc_reader *r = NULL;

	CHECK_EQ(dlc_reader_create(&o, &r), 0);
	return r;
}

/* A hang-up of the watched fd wakes the reaper and is reported once. */
static void check_watch_hup(void)
{
	struct dlc_read_done d;
	struct dlc_reader *r = reader();
	int p[2];

	if (!r || pipe(p)) {
		CHECK(0, "reader and pipe");
		dlc_reader_destroy(r);
		return;
	}
	CHECK_EQ(dlc_reader_watch(r, p[0]), 0);
	CHECK_EQ(dlc_reader_watch_events(r), 0);
	close(p[1]);
	/* Blocks until the watch fires: the test's time limit catches a hang. */
	CHECK_EQ(dlc_reader_reap(r, &d, 1, 1), 0);
	CHECK(dlc_reader_watch_events(r) & POLLHUP, "POLLHUP reported");
	CHECK_EQ(dlc_reader_watch_events(r), 0);
	close(p[0]);
	dlc_reader_destroy(r);
}

/* After dlc_reader_unwatch() the fd's events no longer reach the reader. */
static void check_unwatch(void)
{
	struct dlc_read_done d;
	struct dlc_reader *r = reader();
	int p[2], i;

	if (!r || pipe(p)) {
		CHECK(0, "reader and pipe");
		dlc_reader_destroy(r);
		return;
	}
	CHECK_EQ(dlc_reader_unwatch(r), 0);	/* nothing armed: nothing to do */
	CHECK_EQ(dlc_reader_watch(r, p[0]), 0);
	CHECK_EQ(dlc_reader_unwatch(r), 0);
	for (i = 0; i < 10; i++)
		dlc_reader_reap(r, &d, 1, 0);
	CHECK(write(p[1], "x", 1) == 1, "write");
	close(p[1]);
	for (i = 0; i < 10; i++)
		dlc_reader_reap(r, &d, 1, 0);
	CHECK_EQ(dlc_reader_watch_events(r), 0);
	/* It can be armed again, and then reports. */
	CHECK_EQ(dlc_reader_watch(r, p[0]), 0);
	CHECK_EQ(dlc_reader_reap(r, &d, 1, 1), 0);
	CHECK(dlc_reader_watch_events(r) & (POLLIN | POLLHUP), "rearmed");
	close(p[0]);
	dlc_reader_destroy(r);
}

int main(void)
{
	alarm(120);
	g_dir = t_mkdtemp(NULL);
	if (!g_dir || t_make_dataset(g_dir, 2, 12)) {
		printf("cannot make a data set\n");
		return 1;
	}
	CHECK(dlc_index_build(g_dir, &g_idx) == 0, "index");
	if (!g_idx)
		return t_done("test_fallback");
	unsetenv("DLCACHE_KERNEL_FALLBACK");
	unsetenv("DLCACHE_BACKEND");
	T_RUN(check_config);
	T_RUN(check_env);
	T_RUN(check_stats);
	T_RUN(check_watch_hup);
	T_RUN(check_unwatch);
	dlc_index_free(g_idx);
	t_rmtree(g_dir);
	free(g_dir);
	return t_done("test_fallback");
}
