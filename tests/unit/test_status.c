// SPDX-License-Identifier: MIT
/*
 * A loader's status file (libdlcache/pipeline/status.c): what one process
 * publishes another reads whole and as written; a copy is never torn;
 * the reader takes nothing that is not a live loader's own file of this
 * format (another user's, a link, a FIFO, the wrong mode, size, magic or
 * name, a writer stuck mid-way) and removes a dead process's file only
 * when it is the reader's user's; a fork's child leaves its parent's
 * file; DLCACHE_STATUS=0 publishes nothing. Files are checked with
 * stat(2) and read with read(2) here, not through the code under test.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "internal.h"
#include "proc.h"
#include "status.h"
#include "helpers/testutil.h"

static void info_init(struct dlc_status_info *in, const char *source)
{
	memset(in, 0, sizeof(*in));
	in->uid = (uint32_t)geteuid();
	in->pid = (uint32_t)getpid();
	in->start = dlc_proc_start(in->pid);
	in->created_ns = dlc_now_ns();
	in->backend = DLC_BACKEND_INPROCESS;
	in->decode_threads = 3;
	in->queue_depth = 32;
	in->batch_size = 16;
	in->rank = 1;
	in->world = 4;
	snprintf(in->source, sizeof(in->source), "%s", source);
}

/* The path of this process's status file whose source is @source. */
struct find {
	uint64_t created_ns;
	struct dlc_status_info got;
	int n;
};

static int find_one(const struct dlc_status_info *info, void *arg)
{
	struct find *f = arg;

	if (info->pid == (uint32_t)getpid() && info->created_ns == f->created_ns) {
		f->got = *info;
		f->n++;
	}
	return 0;
}

/* This process's files in /dev/shm, by glob: how many; the first's path. */
static int our_files(char *path, size_t len)
{
	char pat[128];
	glob_t g;
	int n;

	snprintf(pat, sizeof(pat), "/dev/shm/dlcache-loader-%u-%u-*",
		 (unsigned)geteuid(), (unsigned)getpid());
	if (glob(pat, 0, NULL, &g))
		return 0;
	n = (int)g.gl_pathc;
	if (n && path)
		snprintf(path, len, "%s", g.gl_pathv[0]);
	globfree(&g);
	return n;
}

static void check_publish(void)
{
	struct dlc_status_info in;
	struct dlc_stats st;
	struct dlc_status *s;
	struct find f = { 0 };
	char path[256];
	struct stat sb;

	info_init(&in, "/data/set one");
	s = dlc_status_open(&in, NULL);
	CHECK(s != NULL, "dlc_status_open");
	if (!s)
		return;
	CHECK_EQ(our_files(path, sizeof(path)), 1);
	CHECK(stat(path, &sb) == 0 && S_ISREG(sb.st_mode) &&
	      (sb.st_mode & 07777) == 0600 && sb.st_uid == geteuid(),
	      "%s: a regular file of ours, mode 0600 (mode %o)", path,
	      (unsigned)(sb.st_mode & 07777));
	memset(&st, 0, sizeof(st));
	st.hits = 7;
	st.batches = 3;
	st.readahead_budget = 1 << 20;
	st.forms_regime = 2;
	CHECK(dlc_status_due(s, dlc_now_ns()), "a new file is due");
	dlc_status_write(s, &st, DLC_BACKEND_KERNEL, 12345);
	CHECK(!dlc_status_due(s, 12345 + DLC_STATUS_PERIOD_NS - 1), "not due before the period");
	CHECK(dlc_status_due(s, 12345 + DLC_STATUS_PERIOD_NS), "due after it");
	f.created_ns = in.created_ns;
	CHECK_EQ(dlc_status_scan(NULL, find_one, &f), 0);
	CHECK_EQ(f.n, 1);
	CHECK(!strcmp(f.got.source, "/data/set one"), "source %s", f.got.source);
	CHECK(f.got.uid == in.uid && f.got.start == in.start &&
	      f.got.decode_threads == 3 && f.got.queue_depth == 32 &&
	      f.got.batch_size == 16 && f.got.rank == 1 && f.got.world == 4,
	      "the fixed fields");
	CHECK(f.got.t_ns == 12345 && f.got.backend == DLC_BACKEND_KERNEL,
	      "t_ns %llu backend %u", (unsigned long long)f.got.t_ns,
	      f.got.backend);
	CHECK(f.got.stats.hits == 7 && f.got.stats.batches == 3 &&
	      f.got.stats.readahead_budget == 1 << 20 &&
	      f.got.stats.forms_regime == 2, "the counters");
	dlc_status_close(s);
	CHECK(stat(path, &sb) && errno == ENOENT, "%s removed at close", path);
}

static void check_off(void)
{
	struct dlc_status_info in;
	struct dlc_status *s;

	info_init(&in, "/off");
	setenv("DLCACHE_STATUS", "0", 1);
	s = dlc_status_open(&in, NULL);
	unsetenv("DLCACHE_STATUS");
	CHECK(s == NULL, "DLCACHE_STATUS=0: nothing published");
	CHECK_EQ(our_files(NULL, 0), 0);
	dlc_status_close(s);
}

static void check_fork_child(void)
{
	struct dlc_status_info in;
	struct dlc_status *s;
	int status;
	pid_t pid;

	info_init(&in, "/forked");
	s = dlc_status_open(&in, NULL);
	CHECK(s != NULL, "dlc_status_open");
	if (!s)
		return;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		dlc_status_close(s);
		_exit(0);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "the child");
	CHECK_EQ(our_files(NULL, 0), 1);
	dlc_status_close(s);
	CHECK_EQ(our_files(NULL, 0), 0);
}

/* A writer that sets every counter to the same value, as fast as it can. */
struct churn {
	struct dlc_status *s;
	volatile int stop;
};

static void *churn_main(void *arg)
{
	struct churn *c = arg;
	struct dlc_stats st;
	uint64_t k, *w = (uint64_t *)&st;
	size_t i;

	for (k = 1; !c->stop; k++) {
		for (i = 0; i < sizeof(st) / sizeof(*w); i++)
			w[i] = k;
		dlc_status_write(c->s, &st, 1, k);
		/* A breath, so that reads get through between writes. */
		usleep(20);
	}
	return NULL;
}

struct torn {
	uint64_t created_ns;
	int seen, torn;
};

static int torn_one(const struct dlc_status_info *info, void *arg)
{
	const uint64_t *w = (const uint64_t *)&info->stats;
	struct torn *t = arg;
	size_t i;

	if (info->pid != (uint32_t)getpid() || info->created_ns != t->created_ns)
		return 0;
	t->seen++;
	for (i = 0; i < sizeof(info->stats) / sizeof(*w); i++)
		if (w[i] != info->t_ns) {
			t->torn++;
			break;
		}
	return 0;
}

static void check_never_torn(void)
{
	struct dlc_status_info in;
	struct churn c = { 0 };
	struct torn t = { 0 };
	pthread_t th;
	int i;

	info_init(&in, "/churn");
	c.s = dlc_status_open(&in, NULL);
	CHECK(c.s != NULL, "dlc_status_open");
	if (!c.s)
		return;
	t.created_ns = in.created_ns;
	CHECK_EQ(pthread_create(&th, NULL, churn_main, &c), 0);
	/* 500 reads, or 10 s: a scan skips a file it keeps finding mid-write. */
	for (i = 0; t.seen < 500 && dlc_now_ns() - in.created_ns < 10000000000ULL;
	     i++)
		dlc_status_scan(NULL, torn_one, &t);
	c.stop = 1;
	pthread_join(th, NULL);
	dlc_status_close(c.s);
	CHECK(t.seen >= 500, "the churned file read %d times in %d scans",
	      t.seen, i);
	CHECK_EQ(t.torn, 0);
}

/* ---- a directory of files that must not be taken ---- */

static char *bytes_of(const char *path, size_t *len)
{
	static char buf[1 << 16];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0)
		return NULL;
	*len = (size_t)n;
	return buf;
}

static void put(const char *dir, const char *name, const void *data,
		size_t len, mode_t mode)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	CHECK(t_write_file(path, data, len) == 0 && chmod(path, mode) == 0,
	      "write %s", path);
}

struct count {
	int n;
	uint32_t pid;
};

static int count_one(const struct dlc_status_info *info, void *arg)
{
	struct count *c = arg;

	c->n++;
	c->pid = info->pid;
	return 0;
}

static int exists(const char *dir, const char *name)
{
	char path[4096];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return !lstat(path, &sb);
}

static void scan_unprivileged(void *arg)
{
	struct count c = { 0 };

	CHECK_EQ(dlc_status_scan(arg, count_one, &c), 0);
	CHECK_EQ(c.n, 0);
}

/*
 * The file's layout (status.c): a header of 24 bytes (magic, version,
 * size, pad, the sequence count at 16), then struct dlc_status_info.
 */
#define INFO_AT		24
#define SEQ_AT		16

/* A file @name in @dir as a dead process (forked, exited) would leave it. */
static void put_dead(const char *dir, const char *b, size_t len, char *name,
		     size_t nlen)
{
	char *copy = malloc(len);
	int status;
	pid_t dead;

	fflush(stdout);
	dead = fork();
	if (dead == 0)
		_exit(0);
	CHECK(dead > 0 && waitpid(dead, &status, 0) == dead, "a child that exits");
	if (!copy)
		return;
	memcpy(copy, b, len);
	memcpy(copy + INFO_AT + offsetof(struct dlc_status_info, pid), &dead,
	       sizeof(uint32_t));
	snprintf(name, nlen, "dlcache-loader-%u-%u-110", (unsigned)geteuid(),
		 (unsigned)dead);
	put(dir, name, copy, len, 0600);
	free(copy);
}

/* Another user (uid 65534) reads none of root's files, and removes none. */
static void check_other_user(void)
{
	struct dlc_status_info in;
	struct dlc_status *s;
	char path[256], name[128], *dir, *b;
	size_t len = 0;

	if (geteuid() != 0) {
		t_skip("check_other_user", "not root: no other user to be");
		return;
	}
	info_init(&in, "/other");
	s = dlc_status_open(&in, NULL);
	CHECK(s != NULL && our_files(path, sizeof(path)) == 1, "a real file");
	b = s ? bytes_of(path, &len) : NULL;
	dir = t_mkdtemp(NULL);
	if (b && dir) {
		chmod(dir, 0755);
		snprintf(name, sizeof(name), "dlcache-loader-0-%u-100",
			 (unsigned)getpid());
		put(dir, name, b, len, 0600);
		put_dead(dir, b, len, name, sizeof(name));
		CHECK_EQ(t_run_unprivileged(scan_unprivileged, dir), 0);
		CHECK(exists(dir, name), "uid 65534 left root's stale file");
		t_rmtree(dir);
	}
	free(dir);
	dlc_status_close(s);
}

static void check_hostile(void)
{
	struct dlc_status_info in;
	unsigned int me = (unsigned)getpid(), uid = (unsigned)geteuid();
	struct dlc_status *s;
	struct count c = { 0 };
	char path[256], name[128], good[128], *dir, *b, *copy;
	size_t len = 0;

	info_init(&in, "/hostile");
	s = dlc_status_open(&in, NULL);
	CHECK(s != NULL && our_files(path, sizeof(path)) == 1, "a real file");
	b = s ? bytes_of(path, &len) : NULL;
	CHECK(b != NULL, "read %s", path);
	dir = t_mkdtemp(NULL);
	if (!b || !dir) {
		dlc_status_close(s);
		return;
	}
	copy = malloc(len);
	chmod(dir, 0755);

	snprintf(good, sizeof(good), "dlcache-loader-%u-%u-100", uid, me);
	put(dir, good, b, len, 0600);
	/* Mode 0644, a short file, a bad magic, a writer stuck mid-way. */
	snprintf(name, sizeof(name), "dlcache-loader-%u-%u-101", uid, me);
	put(dir, name, b, len, 0644);
	snprintf(name, sizeof(name), "dlcache-loader-%u-%u-102", uid, me);
	put(dir, name, b, len - 8, 0600);
	memcpy(copy, b, len);
	copy[0] ^= 1;
	snprintf(name, sizeof(name), "dlcache-loader-%u-%u-103", uid, me);
	put(dir, name, copy, len, 0600);
	memcpy(copy, b, len);
	copy[SEQ_AT] |= 1;	/* the sequence count, odd */
	snprintf(name, sizeof(name), "dlcache-loader-%u-%u-104", uid, me);
	put(dir, name, copy, len, 0600);
	/* A name that says another pid, and one with more after the N. */
	snprintf(name, sizeof(name), "dlcache-loader-%u-%u-105", uid, me + 1);
	put(dir, name, b, len, 0600);
	snprintf(name, sizeof(name), "dlcache-loader-%u-%u-106x", uid, me);
	put(dir, name, b, len, 0600);
	/* A link to the good one, and a FIFO no writer opens. */
	snprintf(name, sizeof(name), "%s/dlcache-loader-%u-%u-107", dir, uid, me);
	CHECK(symlink(good, name) == 0, "symlink");
	snprintf(name, sizeof(name), "%s/dlcache-loader-%u-%u-108", dir, uid, me);
	CHECK(mkfifo(name, 0600) == 0, "mkfifo");
	/* Another user's file named as ours. */
	if (uid == 0) {
		snprintf(name, sizeof(name), "dlcache-loader-%u-%u-109", uid, me);
		put(dir, name, b, len, 0600);
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		CHECK(chown(path, 65534, 65534) == 0, "chown");
	}
	/* A dead process's file, as it left it. */
	put_dead(dir, b, len, name, sizeof(name));

	CHECK_EQ(dlc_status_scan(dir, count_one, &c), 0);
	CHECK(c.n == 1 && c.pid == me, "one file taken (%d), the good one", c.n);
	CHECK(exists(dir, good), "the good file stays");
	CHECK(!exists(dir, name), "the dead process's file removed");
	snprintf(name, sizeof(name), "dlcache-loader-%u-%u-105", uid, me + 1);
	CHECK(exists(dir, name), "a file not taken is not removed");

	CHECK(dlc_status_scan("/nonexistent-dir", count_one, &c) == -ENOENT,
	      "a missing directory: -ENOENT");
	free(copy);
	t_rmtree(dir);
	free(dir);
	dlc_status_close(s);
}

int main(void)
{
	T_RUN(check_publish);
	T_RUN(check_off);
	T_RUN(check_fork_child);
	T_RUN(check_never_torn);
	T_RUN(check_hostile);
	T_RUN(check_other_user);
	return t_done("test_status");
}
