// SPDX-License-Identifier: MIT
/*
 * The io_uring reader: whole files back byte for byte at every size
 * around the O_DIRECT alignment, split reads, a file that shrinks under a
 * read (a real short read), the buffered fallback on tmpfs (logged once),
 * open errors, EINTR from signals, and wake-ups. A sparse file of 4 GiB
 * and more reads back whole (no length is truncated to 32 bits), and
 * max_file_bytes cuts at exactly its value.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "internal.h"
#include "helpers/testutil.h"

static int log_lines, direct_logs;

static void count_log(void *arg, int level, const char *msg)
{
	(void)arg;
	(void)level;
	log_lines++;
	if (strstr(msg, "O_DIRECT refused"))
		direct_logs++;
}

static const size_t sizes[] = { 1, 511, 4095, 4096, 4097, 8192, 70001,
				262144, 262145, 1000003 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static uint8_t pattern(size_t i, size_t f)
{
	return (uint8_t)((i * 131 + f * 17) ^ (i >> 9));
}

static void make_files(const char *dir, char paths[][512])
{
	size_t f, i;

	for (f = 0; f < NSIZES; f++) {
		uint8_t *b = malloc(sizes[f]);

		for (i = 0; i < sizes[f]; i++)
			b[i] = pattern(i, f);
		snprintf(paths[f], 512, "%s/f%zu.bin", dir, f);
		CHECK(t_write_file(paths[f], b, sizes[f]) == 0, "write %s", paths[f]);
		free(b);
	}
}

static struct dlc_reader *reader(uint32_t qd, uint32_t max_read,
				 struct dlc_logger *lg, struct dlc_stats *st)
{
	struct dlc_reader_opts o = {
		.queue_depth = qd, .direct = 1, .max_read_bytes = max_read,
		.max_file_bytes = 4 << 20, .slot_bytes = 256 << 10,
		.log = lg, .stats = st,
	};
	struct dlc_reader *r = NULL;
	int ret = dlc_reader_create(&o, &r);

	CHECK(ret == 0, "reader create: %d", ret);
	return r;
}

/* Read every file through @r, all queued at once; verify the bytes. */
static void read_all(struct dlc_reader *r, char paths[][512], uint32_t qd)
{
	struct dlc_read_done done[16];
	size_t f, got = 0, next = 0;
	int n, i;

	while (got < NSIZES) {
		while (next < NSIZES && dlc_reader_inflight(r) < qd) {
			CHECK(dlc_reader_queue(r, paths[next], next) == 0,
			      "queue %zu", next);
			next++;
		}
		CHECK(dlc_reader_submit(r) == 0, "submit");
		n = dlc_reader_reap(r, done, 16, 1);
		CHECK(n >= 0, "reap: %d", n);
		if (n < 0)
			return;
		for (i = 0; i < n; i++) {
			f = done[i].tag;
			got++;
			CHECK(done[i].err == 0, "file %zu: err %d (%s)", f,
			      done[i].err, done[i].why);
			if (done[i].err)
				continue;
			CHECK(done[i].buf->len == sizes[f], "file %zu: %zu bytes, want %zu",
			      f, done[i].buf->len, sizes[f]);
			for (size_t k = 0; k < done[i].buf->len; k++)
				if (done[i].buf->data[k] != pattern(k, f)) {
					CHECK(0, "file %zu: byte %zu differs", f, k);
					break;
				}
			dlc_buf_put(done[i].buf);
		}
	}
}

static void test_direct_and_split(const char *dir)
{
	char paths[NSIZES][512];
	struct dlc_logger lg = { count_log, NULL, DLC_LOG_INFO };
	struct dlc_stats st;
	struct dlc_reader *r;

	make_files(dir, paths);
	memset(&st, 0, sizeof(st));
	direct_logs = 0;
	r = reader(4, 0, &lg, &st);
	if (!r)
		return;
	read_all(r, paths, 4);
	CHECK(st.reads == NSIZES, "reads %llu", (unsigned long long)st.reads);
	CHECK(st.direct_reads == NSIZES && direct_logs == 0,
	      "ext4-like /tmp should take O_DIRECT: %llu direct, %d logs",
	      (unsigned long long)st.direct_reads, direct_logs);
	dlc_reader_destroy(r);

	/* Split into 8 KiB reads: every file over 8 KiB takes several. */
	memset(&st, 0, sizeof(st));
	r = reader(3, 8192, &lg, &st);
	if (!r)
		return;
	read_all(r, paths, 3);
	CHECK(st.bytes_read == 1 + 511 + 4095 + 4096 + 4097 + 8192 + 70001 +
	      262144 + 262145 + 1000003, "bytes read %llu",
	      (unsigned long long)st.bytes_read);
	dlc_reader_destroy(r);
}

static int refuses_direct(const char *dir)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/probe", dir);
	if (t_write_file(path, "x", 1))
		return 0;
	fd = open(path, O_RDONLY | O_DIRECT);
	unlink(path);
	if (fd >= 0)
		close(fd);
	return fd < 0 && errno == EINVAL;
}

/*
 * A directory on a file system that refuses O_DIRECT: tmpfs before Linux
 * 6.6, else a ramfs mounted for the test (root only). *@mounted says
 * whether to unmount it.
 */
static char *no_direct_dir(int *mounted)
{
	char *dir = t_mkdtemp("/dev/shm");

	*mounted = 0;
	if (dir && refuses_direct(dir))
		return dir;
	if (dir) {
		t_rmtree(dir);
		free(dir);
	}
	dir = t_mkdtemp(NULL);
	if (dir && mount("dlctest", dir, "ramfs", 0, NULL) == 0) {
		*mounted = 1;
		if (refuses_direct(dir))
			return dir;
		umount(dir);
	}
	if (dir) {
		rmdir(dir);
		free(dir);
	}
	return NULL;
}

static void test_buffered_fallback(void)
{
	char paths[NSIZES][512];
	struct dlc_logger lg = { count_log, NULL, DLC_LOG_WARN };
	struct dlc_stats st;
	struct dlc_reader *r;
	int mounted;
	char *dir = no_direct_dir(&mounted);

	if (!dir) {
		t_skip("test_buffered_fallback", "no file system here refuses O_DIRECT (tmpfs takes it since 6.6; ramfs needs root)");
		return;
	}
	make_files(dir, paths);
	memset(&st, 0, sizeof(st));
	direct_logs = 0;
	r = reader(4, 0, &lg, &st);
	if (r) {
		read_all(r, paths, 4);
		CHECK(direct_logs == 1, "O_DIRECT fallback logged %d times, want once",
		      direct_logs);
		CHECK(st.direct_reads == 0, "tmpfs reads counted as direct");
		dlc_reader_destroy(r);
	}
	t_rmtree(dir);
	if (mounted) {
		umount(dir);
		rmdir(dir);
	}
	free(dir);
}

static void shrink_hook(void *arg, const char *path)
{
	CHECK(truncate(path, 10000) == 0, "truncate");
}

/* The file shrinks between statx and read: the kernel returns less. */
static void test_short_read(const char *dir)
{
	struct dlc_reader_opts o = {
		.queue_depth = 2, .direct = 1, .max_file_bytes = 4 << 20,
		.slot_bytes = 256 << 10, .stat_hook = shrink_hook,
	};
	struct dlc_logger lg = { count_log, NULL, DLC_LOG_WARN };
	struct dlc_read_done d;
	struct dlc_stats st;
	struct dlc_reader *r;
	char path[512];
	uint8_t *b = malloc(100000);
	size_t i;
	int n;

	for (i = 0; i < 100000; i++)
		b[i] = pattern(i, 7);
	snprintf(path, sizeof(path), "%s/shrinks.bin", dir);
	t_write_file(path, b, 100000);
	free(b);
	memset(&st, 0, sizeof(st));
	o.log = &lg;
	o.stats = &st;
	r = NULL;
	CHECK(dlc_reader_create(&o, &r) == 0);
	if (!r)
		return;
	CHECK(dlc_reader_queue(r, path, 42) == 0, "queue");
	CHECK(dlc_reader_submit(r) == 0, "submit");
	do {
		n = dlc_reader_reap(r, &d, 1, 1);
	} while (n == 0);
	CHECK(n == 1 && d.tag == 42 && d.err == 0, "short read result n=%d err=%d",
	      n, d.err);
	if (n == 1 && !d.err) {
		CHECK(d.buf->len == 10000, "got %zu bytes, want 10000", d.buf->len);
		CHECK(d.buf->data[9999] == pattern(9999, 7), "last byte");
		dlc_buf_put(d.buf);
	}
	CHECK(st.short_reads >= 1, "short read not counted");
	dlc_reader_destroy(r);
}

static void test_errors(const char *dir)
{
	struct dlc_logger lg = { count_log, NULL, DLC_LOG_WARN };
	struct dlc_read_done d[4];
	struct dlc_stats st;
	struct dlc_reader *r;
	char missing[512], big[512], empty[512];
	uint8_t *b = calloc(1, 5 << 20);
	int n, got = 0, i;

	snprintf(missing, sizeof(missing), "%s/nope.jpg", dir);
	snprintf(big, sizeof(big), "%s/big.bin", dir);
	snprintf(empty, sizeof(empty), "%s/empty.bin", dir);
	t_write_file(big, b, 5 << 20);
	t_write_file(empty, b, 0);
	free(b);
	memset(&st, 0, sizeof(st));
	r = reader(4, 0, &lg, &st);
	if (!r)
		return;
	CHECK(dlc_reader_queue(r, missing, 1) == 0, "queue missing");
	CHECK(dlc_reader_queue(r, dir, 2) == 0, "queue dir");
	CHECK(dlc_reader_queue(r, big, 3) == 0, "queue big");
	CHECK(dlc_reader_queue(r, empty, 4) == 0, "queue empty");
	CHECK(dlc_reader_queue(r, empty, 5) == -EBUSY, "queue beyond depth");
	dlc_reader_submit(r);
	while (got < 4) {
		n = dlc_reader_reap(r, d, 4, 1);
		CHECK(n >= 0, "reap %d", n);
		if (n < 0)
			break;
		for (i = 0; i < n; i++, got++) {
			switch (d[i].tag) {
			case 1:
				CHECK(d[i].err == -ENOENT, "missing: %d", d[i].err);
				break;
			case 2:
				CHECK(d[i].err == -EISDIR, "dir: %d", d[i].err);
				break;
			case 3:
				CHECK(d[i].err == -EFBIG, "big: %d", d[i].err);
				break;
			case 4:
				CHECK(d[i].err == 0 && d[i].buf && d[i].buf->len == 0,
				      "empty: %d", d[i].err);
				dlc_buf_put(d[i].buf);
				break;
			}
		}
	}
	CHECK(dlc_reader_inflight(r) == 0, "inflight after errors");
	dlc_reader_destroy(r);
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* Signals interrupt io_uring waits; every read still completes right. */
static void test_eintr(const char *dir)
{
	char paths[NSIZES][512];
	struct sigaction sa;
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	struct dlc_stats st;
	struct dlc_reader *r;
	int round;

	make_files(dir, paths);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;	/* no SA_RESTART */
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	memset(&st, 0, sizeof(st));
	r = reader(2, 4096, NULL, &st);
	for (round = 0; r && round < 5; round++)
		read_all(r, paths, 2);
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	dlc_reader_destroy(r);
}

static uint64_t mem_available(void)
{
	unsigned long long kb = 0;
	char line[256];
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return (uint64_t)kb << 10;
}

/* Queue @path alone and wait for its result. */
static struct dlc_read_done read_one(struct dlc_reader *r, const char *path)
{
	struct dlc_read_done d = { .err = -EIO, .why = "test: nothing reaped" };
	int n;

	CHECK(dlc_reader_queue(r, path, 7) == 0, "queue %s", path);
	CHECK(dlc_reader_submit(r) == 0, "submit");
	do
		n = dlc_reader_reap(r, &d, 1, 1);
	while (n == 0);
	CHECK(n == 1, "reap %d", n);
	CHECK(d.tag == 7, "tag %llu", (unsigned long long)d.tag);
	return d;
}

#define HUGE_SIZE ((4ULL << 30) + 8192)

/*
 * A sparse file of 4 GiB + 8 KiB: a pattern in the first and the last
 * 4 KiB, zeros between. The whole length must come back (it once came
 * back as 8 KiB, the length cast to 32 bits), the bytes where they were
 * written. Needs 4 GiB of memory for the result, briefly.
 */
static void test_huge_file(const char *dir)
{
	struct dlc_reader_opts o = {
		.queue_depth = 2, .direct = 1, .max_read_bytes = 0,
		.max_file_bytes = 0, .slot_bytes = 256 << 10,
	};
	struct dlc_read_done d;
	struct dlc_stats st;
	struct dlc_reader *r = NULL;
	uint8_t head[4096], tail[4096];
	char path[512];
	size_t k;
	int fd;

	snprintf(path, sizeof(path), "%s/huge.bin", dir);
	for (k = 0; k < sizeof(head); k++) {
		head[k] = pattern(k, 1);
		tail[k] = pattern(k, 2);
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK(pwrite(fd, head, sizeof(head), 0) == sizeof(head));
	CHECK(ftruncate(fd, (off_t)HUGE_SIZE) == 0);
	CHECK(pwrite(fd, tail, sizeof(tail), (off_t)(HUGE_SIZE - sizeof(tail))) ==
	      sizeof(tail));
	close(fd);

	memset(&st, 0, sizeof(st));
	o.stats = &st;
	/* One byte under the size: too large, precisely. */
	o.max_file_bytes = HUGE_SIZE - 1;
	CHECK(dlc_reader_create(&o, &r) == 0);
	if (r) {
		d = read_one(r, path);
		CHECK(d.err == -EFBIG, "max_file_bytes size - 1: %d (%s)",
		      d.err, d.why);
		dlc_reader_destroy(r);
		r = NULL;
	}

	if (mem_available() < (6ULL << 30)) {
		t_skip("test_huge_file_read", "needs 6 GiB of available memory, have %llu MiB",
		       (unsigned long long)(mem_available() >> 20));
		unlink(path);
		return;
	}
	/* No limit at all (0): the whole file. */
	o.max_file_bytes = 0;
	CHECK(dlc_reader_create(&o, &r) == 0);
	if (!r)
		return;
	d = read_one(r, path);
	CHECK(d.err == 0, "no max_file_bytes: %d (%s)", d.err, d.why);
	if (!d.err) {
		CHECK(d.buf->len == HUGE_SIZE, "%zu bytes, want %llu",
		      d.buf->len, HUGE_SIZE);
		if (d.buf->len == HUGE_SIZE) {
			CHECK(!memcmp(d.buf->data, head, sizeof(head)));
			CHECK(!memcmp(d.buf->data + HUGE_SIZE - sizeof(tail),
				      tail, sizeof(tail)));
			CHECK(d.buf->data[4096] == 0 && d.buf->data[1ULL << 32] == 0);
		}
		dlc_buf_put(d.buf);
	}
	dlc_reader_destroy(r);
	CHECK_EQ(st.bytes_read, HUGE_SIZE);
	unlink(path);
}

static void *waker(void *arg)
{
	usleep(50000);
	dlc_reader_wake(arg);
	return NULL;
}

static void test_wake(void)
{
	struct dlc_read_done d;
	struct dlc_stats st;
	struct dlc_reader *r;
	pthread_t t;
	int n;

	memset(&st, 0, sizeof(st));
	r = reader(2, 0, NULL, &st);
	if (!r)
		return;
	pthread_create(&t, NULL, waker, r);
	n = dlc_reader_reap(r, &d, 1, 1);
	CHECK(n == 0, "a wake-up returns no reads, got %d", n);
	pthread_join(t, NULL);
	/* Still usable after a wake. */
	dlc_reader_wake(r);
	CHECK(dlc_reader_reap(r, &d, 1, 1) == 0, "second wake");
	dlc_reader_destroy(r);
}

int main(void)
{
	char *dir = t_mkdtemp(NULL);

	if (!dir) {
		printf("cannot make a temp dir\n");
		return 1;
	}
	T_RUN(test_direct_and_split, dir);
	T_RUN(test_buffered_fallback);
	T_RUN(test_short_read, dir);
	T_RUN(test_errors, dir);
	T_RUN(test_eintr, dir);
	T_RUN(test_wake);
	T_RUN(test_huge_file, dir);
	t_rmtree(dir);
	free(dir);
	return t_done("test_reader");
}
