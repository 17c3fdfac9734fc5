// SPDX-License-Identifier: MIT
/*
 * Read-ahead by bytes (dlc_config.readahead_bytes): the batches are those
 * of a loader without it (order, pixels, labels; with and without a
 * cache, DDP shards, drop_last, small budgets), resume mid-epoch is exact,
 * a jump elsewhere drops what was read for positions never claimed, the
 * bytes held never pass the budget, the next epoch is read while this one
 * ends but not past the job's last epoch (dlc_config.epochs), a cached
 * sample is not read twice, and the config is checked.
 * The reference is always a loader of the same config with
 * DLC_READAHEAD_OFF: the path every other loader test checks against
 * decoding each sample alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dlcache.h"
#include "internal.h"
#include "helpers/testutil.h"

#define B 16
#define SIDE 32
#define EPOCHS 3

static char *g_dir;
static struct dlc_index *g_idx;
static uint32_t g_n;

static void config(struct dlc_config *cfg, uint64_t cache, uint64_t ra)
{
	dlc_config_init(cfg);
	cfg->batch_size = B;
	cfg->transform.out_w = SIDE;
	cfg->transform.out_h = SIDE;
	cfg->seed = 11;
	cfg->window = 24;
	cfg->queue_depth = 8;
	cfg->nbatches = 3;
	cfg->decode_threads = 2;
	cfg->cache_bytes = cache;
	cfg->readahead_bytes = ra;
	cfg->log = t_log_capture;
}

/*
 * Run epoch @epoch from @start, taking at most @max batches (0: all),
 * each after @pause_ms, hashing each batch into @h. Returns the batches
 * taken; checks that the budget held with every one.
 */
static uint32_t run(struct dlc_loader *l, uint32_t epoch, uint32_t start,
		    uint32_t max, unsigned int pause_ms, uint64_t *h)
{
	struct dlc_batch *b;
	struct dlc_stats st;
	uint32_t nb = 0;
	int ret;

	CHECK_EQ(dlc_loader_start_epoch(l, epoch, start), 0);
	while ((!max || nb < max) && (ret = dlc_next_batch(l, &b)) == 0) {
		*h = t_fnv_batch(b, *h);
		CHECK_EQ(dlc_release_batch(l, b), 0);
		CHECK_EQ(dlc_loader_stats(l, &st, sizeof(st)), 0);
		CHECK(st.readahead_held <= st.readahead_budget,
		      "held %llu over the budget %llu",
		      (unsigned long long)st.readahead_held,
		      (unsigned long long)st.readahead_budget);
		nb++;
		if (pause_ms)
			t_sleep_ms(pause_ms);
	}
	if (!max)
		CHECK(ret == -ENODATA, "epoch %u end: %d", epoch, ret);
	return nb;
}

/* Epochs 0 .. EPOCHS-1 of @cfg, hashed; the loader's stats into @st. */
static uint64_t trace(const struct dlc_config *cfg, unsigned int pause_ms,
		      struct dlc_stats *st)
{
	struct dlc_loader *l = NULL;
	uint64_t h = T_FNV_INIT;
	uint32_t e;

	if (dlc_loader_create(cfg, g_idx, &l)) {
		CHECK(0, "create: %s", t_logbuf);
		return 0;
	}
	for (e = 0; e < EPOCHS; e++)
		run(l, e, 0, 0, pause_ms, &h);
	if (st)
		dlc_loader_stats(l, st, sizeof(*st));
	dlc_loader_destroy(l);
	return h;
}

/* The same batches with read-ahead as without, in every shape. */
static void same_batches(void)
{
	static const uint64_t budgets[] = { 0, 48 << 10, 1 << 20 };
	uint64_t half = dlc_index_total_bytes(g_idx) / 2;
	struct dlc_config cfg;
	struct dlc_stats st;
	uint64_t want, got;
	int shape;
	size_t i;

	for (shape = 0; shape < 4; shape++) {
		config(&cfg, shape & 1 ? half : 0, DLC_READAHEAD_OFF);
		if (shape & 2) {	/* rank 1 of 2, last partial batch dropped */
			cfg.world = 2;
			cfg.rank = 1;
			cfg.drop_last = 1;
		}
		want = trace(&cfg, 0, &st);
		CHECK_EQ(st.readahead_reads, 0);
		CHECK_EQ(st.readahead_budget, 0);
		for (i = 0; i < sizeof(budgets) / sizeof(budgets[0]); i++) {
			cfg.readahead_bytes = budgets[i];
			/* A slow consumer: the read-ahead runs far ahead. */
			got = trace(&cfg, 2, &st);
			CHECK(got == want, "shape %d, budget %llu: batches differ",
			      shape, (unsigned long long)budgets[i]);
			CHECK(st.readahead_reads > 0 && st.readahead_used > 0,
			      "shape %d, budget %llu: %llu read ahead, %llu used",
			      shape, (unsigned long long)budgets[i],
			      (unsigned long long)st.readahead_reads,
			      (unsigned long long)st.readahead_used);
		}
	}
}

/* Resume mid-epoch and jump elsewhere: exact, and nothing kept for it. */
static void resume_and_jump(void)
{
	struct dlc_loader *l = NULL, *ref = NULL;
	uint64_t h = T_FNV_INIT, want = T_FNV_INIT;
	struct dlc_config cfg;
	struct dlc_stats st;

	config(&cfg, 0, DLC_READAHEAD_OFF);
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &ref), 0);
	cfg.readahead_bytes = 0;
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), 0);
	if (!l || !ref)
		goto out;
	/* Two batches of epoch 0, then a resume of epoch 1 at batch 3. */
	run(l, 0, 0, 2, 5, &h);
	run(ref, 0, 0, 2, 0, &want);
	t_sleep_ms(50);
	run(l, 1, 3 * B, 0, 0, &h);
	run(ref, 1, 3 * B, 0, 0, &want);
	/* A jump to epoch 7: what was read for epoch 2 is dropped. */
	t_sleep_ms(50);
	run(l, 7, 0, 0, 0, &h);
	run(ref, 7, 0, 0, 0, &want);
	CHECK(h == want, "resumed batches differ");
	CHECK_EQ(dlc_loader_stats(l, &st, sizeof(st)), 0);
	CHECK(st.readahead_dropped > 0, "nothing dropped after the jump");
	CHECK(st.readahead_used + st.readahead_dropped <= st.readahead_reads,
	      "used %llu + dropped %llu > read %llu",
	      (unsigned long long)st.readahead_used,
	      (unsigned long long)st.readahead_dropped,
	      (unsigned long long)st.readahead_reads);
out:
	dlc_loader_destroy(l);
	dlc_loader_destroy(ref);
}

/*
 * The budget: held bytes never pass it, whatever the consumer does, and
 * the next epoch is read while this one is idle at its end.
 */
static void budget_and_next_epoch(void)
{
	const uint64_t budget = 40 << 10;
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	struct dlc_stats st, st2;
	uint64_t h = T_FNV_INIT, t0;
	int i;

	config(&cfg, 0, budget);
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), 0);
	if (!l)
		return;
	t0 = dlc_now_ns();
	run(l, 0, 0, 0, 3, &h);
	/* Idle at the epoch's end: the read-ahead fills its budget. */
	for (i = 0; i < 200; i++) {
		CHECK_EQ(dlc_loader_stats(l, &st, sizeof(st)), 0);
		CHECK(st.readahead_held <= budget, "held %llu over %llu",
		      (unsigned long long)st.readahead_held,
		      (unsigned long long)budget);
		if (st.reads_inflight == 0 && st.readahead_held)
			break;
		t_sleep_ms(5);
	}
	CHECK_EQ(st.readahead_budget, budget);
	CHECK(st.readahead_held > budget / 2,
	      "held %llu of %llu at the epoch's end",
	      (unsigned long long)st.readahead_held,
	      (unsigned long long)budget);
	CHECK(st.io_busy_ns > 0 && st.io_busy_ns <= dlc_now_ns() - t0,
	      "busy %llu ns", (unsigned long long)st.io_busy_ns);
	run(l, 1, 0, 1, 0, &h);
	CHECK_EQ(dlc_loader_stats(l, &st2, sizeof(st2)), 0);
	CHECK(st2.readahead_used > st.readahead_used,
	      "epoch 1 took nothing read ahead");
	dlc_loader_destroy(l);
}

/*
 * dlc_config.epochs: idle after the last epoch, nothing is read for the
 * one after; with epochs 0 (not known) it is.
 */
static void last_epoch(void)
{
	static const uint32_t known[] = { EPOCHS - 1, 0 };
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	struct dlc_stats st;
	uint64_t h = T_FNV_INIT;
	uint32_t e;
	size_t k;

	for (k = 0; k < 2; k++) {
		config(&cfg, 0, 0);
		cfg.epochs = known[k];
		CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), 0);
		if (!l)
			return;
		for (e = 0; e < EPOCHS - 1; e++)
			run(l, e, 0, 0, 0, &h);
		t_sleep_ms(200);
		CHECK_EQ(dlc_loader_stats(l, &st, sizeof(st)), 0);
		if (known[k])
			CHECK(st.readahead_held == 0 &&
			      st.readahead_reads == st.readahead_used,
			      "epochs %u: %llu bytes held, %llu read, %llu used after the last",
			      known[k], (unsigned long long)st.readahead_held,
			      (unsigned long long)st.readahead_reads,
			      (unsigned long long)st.readahead_used);
		else
			CHECK(st.readahead_held > 0,
			      "epochs unknown: nothing read for the next epoch");
		dlc_loader_destroy(l);
		l = NULL;
	}
	/* nvme_passthru (after epochs) is 0 or 1. */
	config(&cfg, 0, 0);
	cfg.nvme_passthru = 2;
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), -EINVAL);
}

/* With the whole data set cached, every sample is read once, ever. */
static void cached_not_read_ahead(void)
{
	struct dlc_config cfg;
	struct dlc_stats st;

	config(&cfg, 2 * dlc_index_total_bytes(g_idx) + (g_n << 12), 0);
	trace(&cfg, 1, &st);
	CHECK(st.misses == g_n, "%llu misses for %u samples",
	      (unsigned long long)st.misses, g_n);
	CHECK(st.bytes_read == dlc_index_total_bytes(g_idx),
	      "read %llu bytes of %llu", (unsigned long long)st.bytes_read,
	      (unsigned long long)dlc_index_total_bytes(g_idx));
	CHECK(st.readahead_dropped == 0 &&
	      st.readahead_used == st.readahead_reads,
	      "read ahead %llu, used %llu, dropped %llu",
	      (unsigned long long)st.readahead_reads,
	      (unsigned long long)st.readahead_used,
	      (unsigned long long)st.readahead_dropped);
}

/* readahead_bytes: the default, off, the limit. */
static void config_checks(void)
{
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	struct dlc_stats st;
	uint64_t def, lim;

	lim = dlc_mem_limit("/proc/self/cgroup", "/sys/fs/cgroup") / 32;
	def = lim && lim < DLC_READAHEAD_DEFAULT ? lim : DLC_READAHEAD_DEFAULT;
	config(&cfg, 0, 0);
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), 0);
	CHECK_EQ(dlc_loader_stats(l, &st, sizeof(st)), 0);
	CHECK(st.readahead_budget == def, "default budget %llu, want %llu",
	      (unsigned long long)st.readahead_budget,
	      (unsigned long long)def);
	dlc_loader_destroy(l);
	l = NULL;
	config(&cfg, 0, DLC_READAHEAD_MAX);
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), 0);
	dlc_loader_destroy(l);
	l = NULL;
	t_log_clear();
	config(&cfg, 0, DLC_READAHEAD_MAX + 1);
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), -EINVAL);
	CHECK(strstr(t_logbuf, "readahead_bytes: at most"), "logged: %s",
	      t_logbuf);
	/* A caller of the older size gets the default. */
	config(&cfg, 0, 12345);
	cfg.size = offsetof(struct dlc_config, readahead_bytes);
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), 0);
	CHECK_EQ(dlc_loader_stats(l, &st, sizeof(st)), 0);
	CHECK_EQ(st.readahead_budget, def);
	dlc_loader_destroy(l);
}

int main(void)
{
	int ret;

	g_dir = t_mkdtemp(NULL);
	if (!g_dir || t_make_dataset(g_dir, 3, 30)) {
		printf("cannot make a data set\n");
		return 1;
	}
	CHECK(dlc_index_build(g_dir, &g_idx) == 0, "index");
	if (!g_idx)
		return t_done("test_readahead");
	g_n = dlc_index_count(g_idx);

	T_RUN(same_batches);
	T_RUN(resume_and_jump);
	T_RUN(budget_and_next_epoch);
	T_RUN(last_epoch);
	T_RUN(cached_not_read_ahead);
	T_RUN(config_checks);

	ret = t_done("test_readahead");
	dlc_index_free(g_idx);
	t_rmtree(g_dir);
	free(g_dir);
	return ret;
}
