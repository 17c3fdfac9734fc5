// SPDX-License-Identifier: MIT
/*
 * The staging tier (dlc_config.staging_dir): the batches are those of a
 * loader without it, epoch after epoch; with a budget for the whole data
 * set the epochs after the first read the origin only for what the
 * stager had not yet written; with a smaller one the copies never pass
 * the budget and the next epoch still hits; a restart takes the copies in
 * place and never serves a stale, torn or corrupt one (nor leaves a dead
 * process's temporary file); two processes share one directory; the
 * config and the directory's owner and mode are checked.
 * The reference is a loader of the same config without staging.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
static uint64_t g_total;

static void config(struct dlc_config *cfg, const char *stage, uint64_t bytes)
{
	dlc_config_init(cfg);
	cfg->batch_size = B;
	cfg->transform.out_w = SIDE;
	cfg->transform.out_h = SIDE;
	cfg->seed = 5;
	cfg->window = 16;
	cfg->queue_depth = 8;
	cfg->nbatches = 3;
	cfg->decode_threads = 2;
	cfg->cache_bytes = 0;
	cfg->readahead_bytes = DLC_READAHEAD_OFF;
	cfg->staging_dir = stage;
	cfg->staging_bytes = bytes;
	cfg->log = t_log_capture;
}

/* One epoch, hashed into @h; each batch after @pause_ms. */
static void run(struct dlc_loader *l, uint32_t epoch, unsigned int pause_ms,
		uint64_t *h)
{
	struct dlc_batch *b;
	struct dlc_stats st;
	int ret;

	CHECK_EQ(dlc_loader_start_epoch(l, epoch, 0), 0);
	while ((ret = dlc_next_batch(l, &b)) == 0) {
		*h = t_fnv_batch(b, *h);
		CHECK_EQ(dlc_release_batch(l, b), 0);
		CHECK_EQ(dlc_loader_stats(l, &st, sizeof(st)), 0);
		CHECK(st.staging_used <= st.staging_budget,
		      "staged %llu over the budget %llu",
		      (unsigned long long)st.staging_used,
		      (unsigned long long)st.staging_budget);
		if (pause_ms)
			t_sleep_ms(pause_ms);
	}
	CHECK(ret == -ENODATA, "epoch %u end: %d", epoch, ret);
}

/* Per-epoch hashes of @cfg's epochs; per-epoch origin reads into @origin. */
static void trace(const struct dlc_config *cfg, unsigned int pause_ms,
		  uint64_t *hashes, uint64_t *origin, struct dlc_stats *last)
{
	struct dlc_loader *l = NULL;
	struct dlc_stats st;
	uint64_t before = 0, o;
	uint32_t e;

	t_log_clear();
	if (dlc_loader_create(cfg, g_idx, &l)) {
		CHECK(0, "create: %s", t_logbuf);
		return;
	}
	for (e = 0; e < EPOCHS; e++) {
		hashes[e] = T_FNV_INIT;
		run(l, e, pause_ms, &hashes[e]);
		dlc_loader_stats(l, &st, sizeof(st));
		/* The pipeline's reads of it, and the stager's. */
		o = st.misses - st.staging_hits + st.staging_prefetched;
		if (origin)
			origin[e] = o - before;
		before = o;
		/* The stager writes the epoch's last offers meanwhile. */
		t_sleep_ms(100);
	}
	if (last)
		dlc_loader_stats(l, last, sizeof(*last));
	dlc_loader_destroy(l);
}

static void reference(const struct dlc_config *like, uint64_t *hashes)
{
	struct dlc_config cfg = *like;

	cfg.staging_dir = NULL;
	cfg.staging_bytes = 0;
	trace(&cfg, 0, hashes, NULL, NULL);
}

static char *stage_dir(void)
{
	char *d = t_mkdtemp(NULL);

	CHECK(d != NULL, "mkdtemp");
	return d;
}

/* The data set's directory of copies under @stage. */
static void copies_dir(const char *stage, char *buf, size_t len)
{
	uint64_t key[2];

	dlc_index_key(g_idx, key);
	snprintf(buf, len, "%s/dlcache-%u/%016" PRIx64 "%016" PRIx64, stage,
		 (unsigned int)getuid(), key[0], key[1]);
}

/* A budget for all of it: epochs 1 and 2 read (nearly) nothing from the origin. */
static void whole_set(void)
{
	uint64_t want[EPOCHS], got[EPOCHS], origin[EPOCHS];
	struct dlc_config cfg;
	struct dlc_stats st;
	char *stage = stage_dir();
	int e;

	config(&cfg, stage, 0);
	reference(&cfg, want);
	trace(&cfg, 0, got, origin, &st);
	for (e = 0; e < EPOCHS; e++)
		CHECK(got[e] == want[e], "epoch %d: batches differ from the loader without staging", e);
	/*
	 * Each sample once, but for a claim that caught up with the stager
	 * reading the same sample ahead (the stager reads ahead only while
	 * the pipeline does not wait on storage: here, decode is slower).
	 */
	CHECK(origin[0] >= g_n && origin[0] <= g_n + g_n / 10,
	      "epoch 0 read %llu of %u samples from the origin",
	      (unsigned long long)origin[0], g_n);
	/* At most the last window's offers were still being written. */
	CHECK(origin[1] <= 2 * cfg.window && origin[2] == 0,
	      "origin reads after epoch 0: %llu, %llu",
	      (unsigned long long)origin[1], (unsigned long long)origin[2]);
	CHECK(st.staging_writes >= g_n - 2 * cfg.window,
	      "%llu copies written", (unsigned long long)st.staging_writes);
	CHECK(st.staging_hits >= 2ULL * g_n - 2 * cfg.window,
	      "%llu staging hits", (unsigned long long)st.staging_hits);
	CHECK_EQ(st.staging_invalid, 0);
	t_rmtree(stage);
	free(stage);
}

/* A third of the data set: within the budget, and later epochs still hit. */
static void small_budget(void)
{
	uint64_t want[EPOCHS], got[EPOCHS], origin[EPOCHS];
	uint64_t budget = g_total / 3;
	struct dlc_config cfg;
	struct dlc_stats st;
	char *stage = stage_dir();
	int e;

	config(&cfg, stage, budget);
	reference(&cfg, want);
	/*
	 * A slow consumer (its batches are ready when it asks: the pipeline
	 * does not wait on storage), so the stager also reads ahead.
	 */
	trace(&cfg, 15, got, origin, &st);
	for (e = 0; e < EPOCHS; e++)
		CHECK(got[e] == want[e], "epoch %d: batches differ", e);
	CHECK(st.staging_used <= budget, "staged %llu of %llu",
	      (unsigned long long)st.staging_used, (unsigned long long)budget);
	CHECK(st.staging_hits > g_n / 8, "%llu staging hits over %d epochs",
	      (unsigned long long)st.staging_hits, EPOCHS);
	CHECK(origin[2] < g_n, "epoch 2 read all %llu from the origin",
	      (unsigned long long)origin[2]);
	CHECK(st.staging_evictions > 0, "no eviction with a third of the set");
	CHECK(st.staging_prefetched > 0,
	      "the stager read nothing ahead for a slow consumer");
	t_rmtree(stage);
	free(stage);
}

/* Flip a byte of @path in place, keeping its size and mtime. */
static void corrupt(const char *path)
{
	struct stat sb;
	struct timespec t[2];
	uint8_t c;
	int fd = open(path, O_RDWR);

	CHECK(fd >= 0 && !fstat(fd, &sb), "open %s", path);
	if (fd < 0)
		return;
	t[0] = sb.st_atim;
	t[1] = sb.st_mtim;
	CHECK_EQ(pread(fd, &c, 1, 100), 1);
	c ^= 0x5a;
	CHECK_EQ(pwrite(fd, &c, 1, 100), 1);
	futimens(fd, t);
	close(fd);
}

/*
 * A restart takes the copies in place; a corrupt one (its crc32c), a torn
 * one (its size), one whose origin changed (its mtime) and a dead
 * process's temporary file are never served, and removed.
 */
static void restart(void)
{
	uint64_t want[EPOCHS], got[EPOCHS];
	char dir[4096], path[8192], orig[4096];
	struct dlc_config cfg;
	struct dlc_stats st;
	struct timespec t[2] = { { 0, UTIME_OMIT }, { 1000000, 0 } };
	char *stage = stage_dir();
	pid_t dead;
	int e, fd;

	config(&cfg, stage, 0);
	reference(&cfg, want);
	trace(&cfg, 0, got, NULL, &st);
	copies_dir(stage, dir, sizeof(dir));
	/* Sample 1: corrupt; 2: torn; 3: the origin touched since. */
	snprintf(path, sizeof(path), "%s/1", dir);
	corrupt(path);
	snprintf(path, sizeof(path), "%s/2", dir);
	CHECK_EQ(truncate(path, 10), 0);
	snprintf(orig, sizeof(orig), "%s/%s", g_dir, dlc_index_relpath(g_idx, 3));
	CHECK_EQ(utimensat(AT_FDCWD, orig, t, 0), 0);
	/* A temporary file of a process that is gone. */
	dead = fork();
	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0);
	snprintf(path, sizeof(path), "%s/.tmp.%d.4", dir, (int)dead);
	CHECK_EQ(t_write_file(path, "partial", 7), 0);

	trace(&cfg, 0, got, NULL, &st);
	for (e = 0; e < EPOCHS; e++)
		CHECK(got[e] == want[e], "epoch %d after the restart: batches differ", e);
	/* 2 and 3 at the scan, 1 when read. */
	CHECK(st.staging_invalid == 3, "%llu copies found invalid, want 3",
	      (unsigned long long)st.staging_invalid);
	CHECK(strstr(t_logbuf, "sample 1 ") != NULL,
	      "the corrupt copy is not named in the log: %s", t_logbuf);
	CHECK(st.staging_hits >= 3ULL * (g_n - 3) - 2 * cfg.window,
	      "%llu hits after the restart", (unsigned long long)st.staging_hits);
	CHECK(access(path, F_OK) != 0, "the dead process's %s is still there", path);
	snprintf(path, sizeof(path), "%s/1", dir);
	fd = open(path, O_RDONLY);
	if (fd >= 0)
		close(fd);
	t_rmtree(stage);
	free(stage);
}

/* Two processes (ranks 0 and 1) stage into one directory at once. */
static void shared_dir(void)
{
	char *stage = stage_dir();
	char dir[4096];
	struct dlc_config cfg;
	pid_t pid[2];
	int r, status, bad = 0;

	for (r = 0; r < 2; r++) {
		pid[r] = fork();
		if (pid[r] == 0) {
			uint64_t want[EPOCHS], got[EPOCHS];
			struct dlc_stats st;
			int e, fail = 0;

			t_failures = 0;	/* the child's own, not the parent's */
			config(&cfg, stage, g_total / 2);
			cfg.world = 2;
			cfg.rank = (uint32_t)r;
			reference(&cfg, want);
			trace(&cfg, 1, got, NULL, &st);
			for (e = 0; e < EPOCHS; e++)
				fail |= got[e] != want[e];
			fail |= st.staging_hits == 0 || st.staging_invalid;
			if (fail)
				fprintf(stderr, "rank %d: batches %s, %llu hits, %llu invalid\n",
					r, got[0] == want[0] ? "same" : "differ",
					(unsigned long long)st.staging_hits,
					(unsigned long long)st.staging_invalid);
			fflush(stdout);
			_exit(fail || t_failures);
		}
	}
	for (r = 0; r < 2; r++) {
		CHECK(waitpid(pid[r], &status, 0) == pid[r], "wait");
		bad |= !WIFEXITED(status) || WEXITSTATUS(status);
	}
	CHECK(!bad, "a rank sharing the staging directory failed");
	copies_dir(stage, dir, sizeof(dir));
	CHECK(access(dir, F_OK) == 0, "no %s", dir);
	t_rmtree(stage);
	free(stage);
}

/*
 * A staging disk fuller than staging_bytes says (a 256 KiB tmpfs): the
 * batches are the same, the budget falls to what the copies hold, said
 * once. Root only (mount).
 */
static void full_disk(void)
{
	uint64_t want[EPOCHS], got[EPOCHS];
	struct dlc_config cfg;
	struct dlc_stats st;
	char *stage;
	int e;

	if (geteuid() != 0) {
		t_skip("full_disk", "needs root to mount a small tmpfs");
		return;
	}
	stage = stage_dir();
	if (mount("dlcstage", stage, "tmpfs", 0, "size=256k,mode=0700")) {
		CHECK(0, "mount tmpfs on %s: %s", stage, strerror(errno));
		t_rmtree(stage);
		free(stage);
		return;
	}
	config(&cfg, stage, 64 << 20);
	reference(&cfg, want);
	trace(&cfg, 0, got, NULL, &st);
	for (e = 0; e < EPOCHS; e++)
		CHECK(got[e] == want[e], "epoch %d on a full disk: batches differ", e);
	CHECK(st.staging_budget < 256 << 10, "budget %llu after ENOSPC",
	      (unsigned long long)st.staging_budget);
	CHECK(st.staging_hits > 0, "no copy served from the small disk");
	CHECK(strstr(t_logbuf, "is full") != NULL, "log: %s", t_logbuf);
	CHECK(strstr(strstr(t_logbuf, "is full") + 1, "is full") == NULL,
	      "ENOSPC said more than once: %s", t_logbuf);
	umount(stage);
	t_rmtree(stage);
	free(stage);
}

struct other_arg {
	const char *stage;
	uint64_t want[EPOCHS];
};

/* As uid 65534: a staging directory of its own beside root's, none of root's. */
static void other_side(void *p)
{
	struct other_arg *a = p;
	uint64_t got[EPOCHS];
	struct dlc_config cfg;
	struct dlc_stats st;
	char root_dir[4096];
	int e, fd;

	config(&cfg, a->stage, 0);
	trace(&cfg, 0, got, NULL, &st);
	for (e = 0; e < EPOCHS; e++)
		CHECK(got[e] == a->want[e], "uid 65534, epoch %d: batches differ", e);
	CHECK(st.staging_hits > 0, "uid 65534 staged nothing of its own");
	snprintf(root_dir, sizeof(root_dir), "%s/dlcache-0", a->stage);
	fd = open(root_dir, O_RDONLY | O_DIRECTORY);
	CHECK(fd < 0 && errno == EACCES, "uid 65534 opened root's %s", root_dir);
	if (fd >= 0)
		close(fd);
}

/*
 * Two users, one staging directory (mode 1777, as admin.md says): each
 * stages in a directory of its own that the other cannot enter. Root only.
 */
static void other_user(void)
{
	struct other_arg a;
	uint64_t got[EPOCHS];
	struct dlc_config cfg;
	char *stage;

	if (geteuid() != 0) {
		t_skip("other_user", "needs root to run a second user");
		return;
	}
	stage = stage_dir();
	a.stage = stage;
	CHECK(!chmod(stage, 01777) && !chmod(g_dir, 0755),
	      "chmod: %s", strerror(errno));
	config(&cfg, stage, 0);
	reference(&cfg, a.want);
	trace(&cfg, 0, got, NULL, NULL);
	t_run_unprivileged(other_side, &a);
	chmod(g_dir, 0700);
	t_rmtree(stage);
	free(stage);
}

/* A relative staging_dir keeps working after the process changes directory. */
static void relative_dir(void)
{
	uint64_t want[EPOCHS], got[EPOCHS];
	char cwd[4096], *stage = stage_dir();
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	struct dlc_stats st;
	uint32_t e;

	CHECK(getcwd(cwd, sizeof(cwd)) != NULL, "getcwd");
	CHECK_EQ(chdir(stage), 0);
	config(&cfg, "rel", 0);
	reference(&cfg, want);
	t_log_clear();
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), 0);
	CHECK_EQ(chdir("/"), 0);
	for (e = 0; l && e < EPOCHS; e++) {
		got[e] = T_FNV_INIT;
		run(l, e, 0, &got[e]);
		CHECK(got[e] == want[e], "epoch %u: batches differ", e);
		t_sleep_ms(100);
	}
	if (l) {
		dlc_loader_stats(l, &st, sizeof(st));
		CHECK(st.staging_hits > g_n / 2, "%llu staging hits after chdir",
		      (unsigned long long)st.staging_hits);
		CHECK_EQ(st.staging_invalid, 0);
	}
	dlc_loader_destroy(l);
	CHECK_EQ(chdir(cwd), 0);
	t_rmtree(stage);
	free(stage);
}

static void config_checks(void)
{
	struct dlc_config cfg;
	struct dlc_loader *l = NULL;
	char *stage = stage_dir();
	char user[8192];

	config(&cfg, NULL, 1 << 20);
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), -EINVAL);
	config(&cfg, "", 0);
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), -EINVAL);
	/* Not 0700: refused, saying why. */
	snprintf(user, sizeof(user), "%s/dlcache-%u", stage,
		 (unsigned int)getuid());
	CHECK_EQ(mkdir(user, 0755), 0);
	chmod(user, 0755);
	config(&cfg, stage, 0);
	t_log_clear();
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), -EPERM);
	CHECK(strstr(t_logbuf, "mode 0700") != NULL, "log: %s", t_logbuf);
	rmdir(user);
	/* A missing directory: its error, named. */
	snprintf(user, sizeof(user), "%s/missing/deeper", stage);
	config(&cfg, user, 0);
	t_log_clear();
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), -ENOENT);
	CHECK(strstr(t_logbuf, "missing/deeper") != NULL, "log: %s", t_logbuf);
	CHECK(l == NULL, "a loader after a failure");
	t_rmtree(stage);
	free(stage);
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
		return t_done("test_stage");
	g_n = dlc_index_count(g_idx);
	g_total = dlc_index_total_bytes(g_idx);

	T_RUN(whole_set);
	T_RUN(small_budget);
	T_RUN(restart);
	T_RUN(shared_dir);
	T_RUN(full_disk);
	T_RUN(other_user);
	T_RUN(relative_dir);
	T_RUN(config_checks);

	ret = t_done("test_stage");
	dlc_index_free(g_idx);
	t_rmtree(g_dir);
	free(g_dir);
	return ret;
}
