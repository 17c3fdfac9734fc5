// SPDX-License-Identifier: MIT
/*
 * The staging tier (dlc_config.staging_dir): the batches are those of a
 * loader without it, epoch after epoch; with a budget for the whole data
 * set the epochs after the first read the origin only for what the
 * stager had not yet written; with a smaller one the copies never pass
 * the budget and the next epoch still hits; a restart takes the copies in
 * place and never serves a stale, torn or corrupt one (nor leaves a dead
 * process's temporary file); two processes share one directory; the
 * config and the directory's owner and mode are checked; a user who owns
 * DIR and swaps a tree of crafted copies in never has them read; the
 * start-up scan takes each sample's copy once, by its canonical name.
 * The reference is a loader of the same config without staging.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
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

/* Users A (the loader's) and B (DIR's owner, hostile) of swapped_dir. */
#define UID_A	65534
#define UID_B	65533

/*
 * Fork a child that drops to @uid (and gid) and runs @fn(@arg), exiting
 * with its failures. Its pid, or -1.
 */
static pid_t fork_as(uid_t uid, void (*fn)(void *), void *arg)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid)
		return pid;
	t_failures = 0;	/* the child's own, not the parent's */
	if (setgroups(0, NULL) || setgid(uid) || setuid(uid)) {
		printf("FAIL: cannot drop to uid %u: %s\n", (unsigned int)uid,
		       strerror(errno));
		fflush(stdout);
		_exit(1);
	}
	fn(arg);
	fflush(stdout);
	_exit(t_failures ? 1 : 0);
}

/* CRC-32C bit by bit: the test's own, chained as dlc_index_crc32c()'s. */
static uint32_t crc32c_bits(uint32_t crc, const uint8_t *p, size_t len)
{
	int k;

	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78 : crc >> 1;
	}
	return ~crc;
}

/*
 * The 4 bytes @tail that, after bytes whose CRC-32C is @pre, make it
 * @want: CRC is affine in the tail's 32 bits, so solve over GF(2).
 */
static int forge_tail(uint32_t pre, uint32_t want, uint8_t tail[4])
{
	uint32_t col[32], comb[32], base, d, x = 0, tmp;
	uint8_t t[4] = { 0 };
	int k, b, i = 0, p;

	base = crc32c_bits(pre, t, 4);
	for (k = 0; k < 32; k++) {
		memset(t, 0, sizeof(t));
		t[k / 8] = (uint8_t)(1U << (k % 8));
		col[k] = crc32c_bits(pre, t, 4) ^ base;
		comb[k] = 1U << k;
	}
	/* Gauss-Jordan on the columns: col[i] becomes one output bit. */
	for (b = 0; b < 32; b++) {
		for (p = i; p < 32 && !(col[p] >> b & 1); p++)
			;
		if (p == 32)
			continue;
		tmp = col[i], col[i] = col[p], col[p] = tmp;
		tmp = comb[i], comb[i] = comb[p], comb[p] = tmp;
		for (k = 0; k < 32; k++)
			if (k != i && (col[k] >> b & 1)) {
				col[k] ^= col[i];
				comb[k] ^= comb[i];
			}
		i++;
	}
	d = want ^ base;
	for (k = 0; k < i; k++)
		if (d & col[k]) {
			d ^= col[k];
			x ^= comb[k];
		}
	for (k = 0; k < 4; k++)
		tail[k] = (uint8_t)(x >> (8 * k));
	return d ? -1 : 0;
}

struct swap_arg {
	const char *stage;
	uint64_t want[EPOCHS];
	int staged[2];		/* A -> B: epoch 0 is staged */
	int swapped[2];		/* B -> A: the tree is swapped */
};

/*
 * User A: a loader staging in B's DIR; after epoch 0, B swaps the tree;
 * the next epochs must be the original files' pixels, and still served
 * by A's copies.
 */
static void swap_side_a(void *p)
{
	struct swap_arg *a = p;
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	struct dlc_stats st;
	uint64_t got, hits0;
	uint32_t e;
	char c = 's';

	close(a->staged[0]);
	close(a->swapped[1]);
	config(&cfg, a->stage, 0);
	t_log_clear();
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), 0);
	if (!l) {
		printf("uid %u: %s", (unsigned int)getuid(), t_logbuf);
		return;
	}
	got = T_FNV_INIT;
	run(l, 0, 0, &got);
	CHECK(got == a->want[0], "uid %u, epoch 0: batches differ", UID_A);
	/* The stager writes the epoch's last offers meanwhile. */
	t_sleep_ms(200);
	dlc_loader_stats(l, &st, sizeof(st));
	hits0 = st.staging_hits;
	CHECK(st.staging_writes > g_n / 2, "%llu copies staged in epoch 0",
	      (unsigned long long)st.staging_writes);
	CHECK_EQ(write(a->staged[1], &c, 1), 1);
	CHECK(read(a->swapped[0], &c, 1) == 1 && c == 'w',
	      "uid %u did not swap the tree", UID_B);
	for (e = 1; e < EPOCHS; e++) {
		got = T_FNV_INIT;
		run(l, e, 0, &got);
		CHECK(got == a->want[e],
		      "epoch %u after uid %u swapped dlcache-%u: batches are not the original files'",
		      e, UID_B, UID_A);
	}
	dlc_loader_stats(l, &st, sizeof(st));
	/* Not vacuous: the epochs were read from A's staged copies. */
	CHECK(st.staging_hits - hits0 > g_n, "%llu staging hits after the swap",
	      (unsigned long long)(st.staging_hits - hits0));
	dlc_loader_destroy(l);
}

/*
 * User B, DIR's owner: move A's dlcache-UID away and plant a tree of
 * B's own in its place, whose copies have each sample's size, mtime and
 * CRC-32C but another image (a small JPEG, padded after its EOI, then 4
 * bytes that make the CRC the index's).
 */
static void swap_side_b(void *p)
{
	struct swap_arg *a = p;
	char user[4096], moved[4096], dir[8192], path[16384], c;
	struct timespec t[2];
	struct stat sb;
	uint32_t id, want, pre;
	uint8_t *img, *buf;
	size_t len;
	uint64_t size;
	uint64_t key[2];
	int planted = 0;

	close(a->staged[1]);
	close(a->swapped[0]);
	if (read(a->staged[0], &c, 1) != 1) {
		CHECK(0, "uid %u never staged", UID_A);
		return;
	}
	snprintf(user, sizeof(user), "%s/dlcache-%u", a->stage, UID_A);
	snprintf(moved, sizeof(moved), "%s/moved", a->stage);
	CHECK(rename(user, moved) == 0, "uid %u: rename %s: %s", UID_B, user,
	      strerror(errno));
	CHECK_EQ(mkdir(user, 0755), 0);
	chmod(user, 0755);
	dlc_index_key(g_idx, key);
	snprintf(dir, sizeof(dir), "%s/%016" PRIx64 "%016" PRIx64, user,
		 key[0], key[1]);
	CHECK_EQ(mkdir(dir, 0755), 0);
	chmod(dir, 0755);
	for (id = 0; id < g_n; id++) {
		size = dlc_index_size(g_idx, id);
		img = t_make_jpeg(16, 16, 1000 + id, 0, 50, &len);
		if (!img || len + 4 > size || dlc_index_crc32c(g_idx, id, &want)) {
			free(img);
			continue;
		}
		buf = calloc(1, size);
		memcpy(buf, img, len);
		free(img);
		pre = crc32c_bits(0, buf, size - 4);
		CHECK_EQ(forge_tail(pre, want, buf + size - 4), 0);
		CHECK(crc32c_bits(0, buf, size) == want, "forged crc of %u", id);
		snprintf(path, sizeof(path), "%s/%u", dir, id);
		CHECK_EQ(t_write_file(path, buf, size), 0);
		free(buf);
		chmod(path, 0644);
		snprintf(path, sizeof(path), "%s/%s", g_dir,
			 dlc_index_relpath(g_idx, id));
		if (stat(path, &sb))
			continue;
		t[0] = sb.st_atim;
		t[1] = sb.st_mtim;
		snprintf(path, sizeof(path), "%s/%u", dir, id);
		utimensat(AT_FDCWD, path, t, 0);
		planted++;
	}
	CHECK((uint32_t)planted > g_n / 2, "only %d crafted copies", planted);
	c = 'w';
	CHECK_EQ(write(a->swapped[1], &c, 1), 1);
}

/*
 * Issue 30 item 1: user B owns DIR (sticky, 1777: accepted) and swaps
 * user A's dlcache-UID for a tree of crafted copies between two epochs;
 * A keeps reading its own copies through the directory fd it checked.
 * Root only (two users).
 */
static void swapped_dir(void)
{
	struct swap_arg a;
	pid_t pa, pb;
	int sa, sb;
	char *stage;

	if (geteuid() != 0) {
		t_skip("swapped_dir", "needs root to run two other users");
		return;
	}
	stage = stage_dir();
	a.stage = stage;
	CHECK(!chown(stage, UID_B, UID_B) && !chmod(stage, 01777) &&
	      !chmod(g_dir, 0755), "chown/chmod: %s", strerror(errno));
	{
		struct dlc_config cfg;

		config(&cfg, stage, 0);
		reference(&cfg, a.want);
	}
	CHECK(!pipe(a.staged) && !pipe(a.swapped), "pipe");
	pa = fork_as(UID_A, swap_side_a, &a);
	pb = fork_as(UID_B, swap_side_b, &a);
	close(a.staged[0]);
	close(a.staged[1]);
	close(a.swapped[0]);
	close(a.swapped[1]);
	CHECK(pa > 0 && waitpid(pa, &sa, 0) == pa && WIFEXITED(sa) &&
	      !WEXITSTATUS(sa), "uid %u's loader failed", UID_A);
	CHECK(pb > 0 && waitpid(pb, &sb, 0) == pb && WIFEXITED(sb) &&
	      !WEXITSTATUS(sb), "uid %u's swap failed", UID_B);
	chmod(g_dir, 0700);
	t_rmtree(stage);
	free(stage);
}

struct parent_arg {
	char dir[4][4096];
};

/* As user A: DIRs that others may rename entries of are refused. */
static void parent_side(void *p)
{
	struct parent_arg *a = p;
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	int i;

	for (i = 0; i < 3; i++) {
		config(&cfg, a->dir[i], 0);
		t_log_clear();
		CHECK(dlc_loader_create(&cfg, g_idx, &l) == -EPERM,
		      "uid %u staged in %s (%s)", UID_A, a->dir[i],
		      i == 2 ? "root's, mode 0777" : "uid 65533's, no sticky bit");
		CHECK(strstr(t_logbuf, a->dir[i]) && strstr(t_logbuf, "sticky"),
		      "log does not name %s and why: %s", a->dir[i], t_logbuf);
		dlc_loader_destroy(l);
		l = NULL;
	}
	/* B's, but sticky: only B and root may rename A's entry there. */
	config(&cfg, a->dir[3], 0);
	t_log_clear();
	CHECK(dlc_loader_create(&cfg, g_idx, &l) == 0,
	      "uid %u cannot stage in a sticky %s: %s", UID_A, a->dir[3],
	      t_logbuf);
	dlc_loader_destroy(l);
}

/*
 * A staging_dir of another user's without the sticky bit, or writable by
 * others without it, is refused at create, saying why. Root only.
 */
static void parent_checks(void)
{
	static const struct { uid_t uid; mode_t mode; } d[4] = {
		{ UID_B, 0777 }, { UID_B, 0755 }, { 0, 0777 }, { UID_B, 01777 },
	};
	struct parent_arg a;
	char *stage;
	int i;

	if (geteuid() != 0) {
		t_skip("parent_checks", "needs root to run two other users");
		return;
	}
	stage = stage_dir();
	CHECK(!chmod(stage, 0755) && !chmod(g_dir, 0755), "chmod");
	for (i = 0; i < 4; i++) {
		snprintf(a.dir[i], sizeof(a.dir[i]), "%s/d%d", stage, i);
		CHECK(!mkdir(a.dir[i], 0700) && !chown(a.dir[i], d[i].uid, d[i].uid) &&
		      !chmod(a.dir[i], d[i].mode), "%s: %s", a.dir[i],
		      strerror(errno));
	}
	t_run_unprivileged(parent_side, &a);
	chmod(g_dir, 0700);
	t_rmtree(stage);
	free(stage);
}

/*
 * Issue 30 item 6: a staging directory (restored, or written by another
 * tool) with every sample's valid copy and also "07", "007", "00" and
 * other names of no sample: each sample is taken once (no write past the
 * staged array: ASan), the others are left alone, the batches are the
 * same.
 */
static void scan_names(void)
{
	static const char *const extra[] = {
		"07", "007", "00", "+7", " 7", "7 ", "-7", "0x7",
		"4294967303", "18446744073709551623",
		"99999999999999999999999999",
	};
	uint64_t want[EPOCHS], got[EPOCHS], blocks = 0;
	char user[4096], dir[4096], path[8192], orig[4096];
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	struct dlc_stats st;
	struct timespec t[2];
	char *stage = stage_dir();
	struct stat sb;
	uint8_t *data;
	size_t len;
	uint32_t id, e;
	unsigned int i;

	snprintf(user, sizeof(user), "%s/dlcache-%u", stage,
		 (unsigned int)getuid());
	CHECK_EQ(mkdir(user, 0700), 0);
	copies_dir(stage, dir, sizeof(dir));
	CHECK_EQ(mkdir(dir, 0700), 0);
	for (id = 0; id <= g_n; id++) {
		/* Sample 7's bytes under its own name and the extra ones. */
		snprintf(orig, sizeof(orig), "%s/%s", g_dir,
			 dlc_index_relpath(g_idx, id < g_n ? id : 7));
		data = t_read_file(orig, &len);
		CHECK(data && !stat(orig, &sb), "read %s", orig);
		if (!data)
			continue;
		t[0] = sb.st_atim;
		t[1] = sb.st_mtim;
		for (i = 0; i < (id < g_n ? 1 : sizeof(extra) / sizeof(*extra)); i++) {
			if (id < g_n)
				snprintf(path, sizeof(path), "%s/%u", dir, id);
			else
				snprintf(path, sizeof(path), "%s/%s", dir, extra[i]);
			CHECK_EQ(t_write_file(path, data, len), 0);
			CHECK_EQ(utimensat(AT_FDCWD, path, t, 0), 0);
		}
		if (id < g_n)
			blocks += (len + 4095) & ~4095ULL;
		free(data);
	}
	/* Sample g_n's name: out of range. */
	snprintf(path, sizeof(path), "%s/%u", dir, g_n);
	CHECK_EQ(t_write_file(path, "x", 1), 0);

	config(&cfg, stage, 0);
	reference(&cfg, want);
	cfg.log_level = DLC_LOG_INFO;	/* "N copies (M MiB) in place" */
	t_log_clear();
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), 0);
	if (!l)
		goto out;
	CHECK_EQ(dlc_loader_stats(l, &st, sizeof(st)), 0);
	snprintf(path, sizeof(path), "%u copies (", g_n);
	CHECK(strstr(t_logbuf, path) != NULL, "want %u copies taken: %s", g_n,
	      t_logbuf);
	CHECK(st.staging_used == blocks, "%llu bytes staged at start, want %llu",
	      (unsigned long long)st.staging_used, (unsigned long long)blocks);
	for (e = 0; e < EPOCHS; e++) {
		got[e] = T_FNV_INIT;
		run(l, e, 0, &got[e]);
		CHECK(got[e] == want[e], "epoch %u: batches differ", e);
	}
	CHECK_EQ(dlc_loader_stats(l, &st, sizeof(st)), 0);
	CHECK(st.staging_hits >= 2ULL * g_n, "%llu staging hits",
	      (unsigned long long)st.staging_hits);
	CHECK_EQ(st.staging_invalid, 0);
	dlc_loader_destroy(l);
	/* Not a sample's name: not ours to remove. */
	snprintf(path, sizeof(path), "%s/07", dir);
	CHECK(access(path, F_OK) == 0, "%s was removed", path);
out:
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
	T_RUN(swapped_dir);
	T_RUN(parent_checks);
	T_RUN(scan_names);
	T_RUN(relative_dir);
	T_RUN(config_checks);

	ret = t_done("test_stage");
	dlc_index_free(g_idx);
	t_rmtree(g_dir);
	free(g_dir);
	return ret;
}
