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
#include "reader.h"
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

/*
 * O_DIRECT is per file: a file that refuses it (on ramfs) is read
 * buffered, logged once, and the files after it (on /tmp) still read
 * with O_DIRECT. One at a time, so that the refusal comes first.
 */
static void test_direct_per_file(const char *dir)
{
	char paths[NSIZES][512], first[1][512];
	struct dlc_logger lg = { count_log, NULL, DLC_LOG_WARN };
	struct dlc_stats st;
	struct dlc_read_done d;
	struct dlc_reader *r;
	int mounted, n;
	char *nodirect = no_direct_dir(&mounted);

	if (!nodirect) {
		t_skip("test_direct_per_file", "no file system here refuses O_DIRECT (tmpfs takes it since 6.6; ramfs needs root)");
		return;
	}
	snprintf(first[0], sizeof(first[0]), "%s/refuses.bin", nodirect);
	CHECK(t_write_file(first[0], "0123456789", 10) == 0, "write");
	make_files(dir, paths);
	memset(&st, 0, sizeof(st));
	direct_logs = 0;
	r = reader(1, 0, &lg, &st);
	if (r) {
		CHECK_EQ(dlc_reader_queue(r, first[0], 99), 0);
		CHECK_EQ(dlc_reader_submit(r), 0);
		do {
			n = dlc_reader_reap(r, &d, 1, 1);
		} while (n == 0);
		CHECK(n == 1 && d.err == 0 && d.buf && d.buf->len == 10,
		      "the refusing file reads buffered: %d", d.err);
		dlc_buf_put(d.buf);
		CHECK_EQ(st.direct_reads, 0);
		read_all(r, paths, 1);
		CHECK(st.direct_reads == NSIZES,
		      "%llu of the %zu files on /tmp read with O_DIRECT after one refused it",
		      (unsigned long long)st.direct_reads, (size_t)NSIZES);
		CHECK(direct_logs == 1, "refusal logged %d times", direct_logs);
		dlc_reader_destroy(r);
	}
	t_rmtree(nodirect);
	if (mounted) {
		umount(nodirect);
		rmdir(nodirect);
	}
	free(nodirect);
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

/* ---- range reads of a caller's fd (packs) ---- */

#define RANGE_FILE	(5 * 4096 + 1234)

/* Reap one result from @r (blocking). */
static struct dlc_read_done reap_one(struct dlc_reader *r)
{
	struct dlc_read_done d = { .err = -ETIME, .why = "nothing reaped" };
	int n, spins = 0;

	do {
		n = dlc_reader_reap(r, &d, 1, 1);
	} while (n == 0 && ++spins < 1000);
	CHECK(n == 1, "reap returned %d", n);
	return d;
}

/*
 * Read [@off, @off + @len) of @fd through @r, check the bytes against
 * pattern(., 11), and for @direct that they landed where an O_DIRECT read
 * of the aligned superset puts them (no copy). Returns the error.
 */
static int range_one(struct dlc_reader *r, int fd, uint64_t off, uint32_t len,
		     int direct, const char **why)
{
	struct dlc_read_done d;
	uint32_t i, bad = 0;

	CHECK(dlc_reader_queue_range(r, fd, off, len, direct, off * 2 + 1) == 0,
	      "queue range %llu+%u", (unsigned long long)off, len);
	CHECK(dlc_reader_submit(r) == 0);
	d = reap_one(r);
	*why = d.why;
	CHECK(d.tag == off * 2 + 1, "tag %llu", (unsigned long long)d.tag);
	if (d.err)
		return d.err;
	CHECK(d.buf && d.buf->len == len, "range %llu+%u: %zu bytes",
	      (unsigned long long)off, len, d.buf ? d.buf->len : 0);
	for (i = 0; d.buf && i < len && i < d.buf->len; i++)
		bad += d.buf->data[i] != pattern(off + i, 11);
	CHECK(bad == 0, "range %llu+%u direct %d: %u bytes differ",
	      (unsigned long long)off, len, direct, bad);
	if (direct && d.buf)
		CHECK((uintptr_t)d.buf->data % 4096 == off % 4096,
		      "range %llu+%u: data at %lu in its page, not where the aligned read put it",
		      (unsigned long long)off, len,
		      (unsigned long)((uintptr_t)d.buf->data % 4096));
	dlc_buf_put(d.buf);
	return 0;
}

static const struct { uint64_t off; uint32_t len; } ranges[] = {
	{ 0, 1 }, { 1, 1 }, { 4095, 1 }, { 4095, 2 }, { 4096, 1 },
	{ 4096, 4096 }, { 4000, 3 * 4096 + 200 }, { 100, 5 * 4096 },
	{ 8191, 9000 }, { 0, RANGE_FILE }, { RANGE_FILE - 1, 1 },
	{ RANGE_FILE - 10, 10 }, { 5 * 4096, 1234 }, { 5 * 4096 - 1, 1235 },
};
#define NRANGES (sizeof(ranges) / sizeof(ranges[0]))

/* Every range of @path, direct and buffered, split at @max_read; EOF. */
static void ranges_of(const char *path, int direct_fd_ok, uint32_t max_read)
{
	struct dlc_logger lg = { count_log, NULL, DLC_LOG_WARN };
	struct dlc_stats st;
	struct dlc_reader *r;
	const char *why;
	int bfd, dfd, ret, fl;
	size_t i;

	memset(&st, 0, sizeof(st));
	r = reader(4, max_read, &lg, &st);
	bfd = open(path, O_RDONLY | O_CLOEXEC);
	dfd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
	CHECK(bfd >= 0, "open %s", path);
	if (direct_fd_ok)
		CHECK(dfd >= 0, "O_DIRECT open of %s: %s", path, strerror(errno));
	if (!r || bfd < 0)
		goto out;
	for (i = 0; i < NRANGES; i++) {
		ret = range_one(r, bfd, ranges[i].off, ranges[i].len, 0, &why);
		CHECK(ret == 0, "buffered %llu+%u: %d (%s)",
		      (unsigned long long)ranges[i].off, ranges[i].len, ret, why);
		/* The aligned superset read through a buffered fd is fine too. */
		ret = range_one(r, dfd >= 0 ? dfd : bfd, ranges[i].off,
				ranges[i].len, 1, &why);
		CHECK(ret == 0, "direct %llu+%u: %d (%s)",
		      (unsigned long long)ranges[i].off, ranges[i].len, ret, why);
	}
	if (dfd >= 0)
		CHECK(st.direct_reads == NRANGES, "direct reads %llu, want %zu",
		      (unsigned long long)st.direct_reads, NRANGES);
	/* Past the end: the file ends inside the range, or before it. */
	for (i = 0; i < 4; i++) {
		uint64_t off = i < 2 ? RANGE_FILE - 10 : RANGE_FILE + 4096;
		int fd = (i & 1) && dfd >= 0 ? dfd : bfd;

		ret = range_one(r, fd, off, i < 2 ? 20 : 10, (int)(i & 1), &why);
		CHECK(ret == -EIO && why && !strcmp(why, "short read"),
		      "range %llu past EOF (direct %zu): %d (%s)",
		      (unsigned long long)off, i & 1, ret, why ? why : "");
	}
	/* An O_DIRECT fd read unaligned: -EINVAL, the fd left as it was. */
	if (dfd >= 0) {
		ret = range_one(r, dfd, 1, 100, 0, &why);
		CHECK(ret == -EINVAL, "unaligned read of an O_DIRECT fd: %d", ret);
		fl = fcntl(dfd, F_GETFL);
		CHECK(fl >= 0 && (fl & O_DIRECT), "the caller's fd changed: %x", fl);
	}
	/* The reader closes none of the caller's fds. */
	CHECK(fcntl(bfd, F_GETFD) >= 0, "buffered fd closed by the reader");
	CHECK(dfd < 0 || fcntl(dfd, F_GETFD) >= 0, "direct fd closed by the reader");
	/* Several in flight at once; len 0; bad arguments. */
	for (i = 0; i < 4; i++)
		CHECK(dlc_reader_queue_range(r, bfd, i * 4096 + i, 4096, 0, i) == 0);
	CHECK(dlc_reader_queue_range(r, bfd, 0, 1, 0, 9) == -EBUSY);
	CHECK(dlc_reader_submit(r) == 0);
	for (i = 0; i < 4; i++) {
		struct dlc_read_done d = reap_one(r);
		uint32_t j, bad = 0;

		CHECK(d.err == 0 && d.tag < 4 && d.buf && d.buf->len == 4096);
		for (j = 0; !d.err && j < 4096; j++)
			bad += d.buf->data[j] != pattern(d.tag * 4097 + j, 11);
		CHECK(bad == 0, "concurrent range %llu: %u bytes differ",
		      (unsigned long long)d.tag, bad);
		dlc_buf_put(d.buf);
	}
	CHECK(dlc_reader_queue_range(r, bfd, 7, 0, 1, 5) == 0);
	{
		struct dlc_read_done d = reap_one(r);

		CHECK(d.err == 0 && d.tag == 5 && d.buf && d.buf->len == 0);
		dlc_buf_put(d.buf);
	}
	CHECK(dlc_reader_queue_range(r, -1, 0, 1, 0, 0) == -EINVAL);
	CHECK(dlc_reader_queue_range(r, bfd, UINT64_MAX - 2, 10, 0, 0) == -EINVAL);
	CHECK(dlc_reader_inflight(r) == 0, "inflight %u",
	      dlc_reader_inflight(r));
out:
	if (bfd >= 0)
		close(bfd);
	if (dfd >= 0)
		close(dfd);
	dlc_reader_destroy(r);
}

static void write_range_file(const char *path)
{
	uint8_t *b = malloc(RANGE_FILE);
	size_t i;

	for (i = 0; i < RANGE_FILE; i++)
		b[i] = pattern(i, 11);
	CHECK(t_write_file(path, b, RANGE_FILE) == 0, "write %s", path);
	free(b);
}

/* On a real file system (/var/tmp): O_DIRECT works there. */
static void test_range_disk(void)
{
	char *dir = t_mkdtemp("/var/tmp"), path[512];

	if (!dir) {
		CHECK(0, "cannot make a directory in /var/tmp");
		return;
	}
	snprintf(path, sizeof(path), "%s/range.bin", dir);
	write_range_file(path);
	ranges_of(path, 1, 0);
	ranges_of(path, 1, 8192);	/* split: several reads a range */
	t_rmtree(dir);
	free(dir);
}

/* Where O_DIRECT is refused: the caller reads through a buffered fd. */
static void test_range_no_direct(void)
{
	int mounted;
	char *dir = no_direct_dir(&mounted), path[512];

	if (!dir) {
		t_skip("test_range_no_direct", "no file system here refuses O_DIRECT (tmpfs takes it since 6.6; ramfs needs root)");
		return;
	}
	snprintf(path, sizeof(path), "%s/range.bin", dir);
	write_range_file(path);
	ranges_of(path, 0, 0);
	t_rmtree(dir);
	if (mounted) {
		umount(dir);
		rmdir(dir);
	}
	free(dir);
}

/*
 * NVMe passthrough without an NVMe device (tests/qemu/nvme has one): the
 * arguments are checked; a ring of 128-byte SQEs works with every other
 * request (a range read on it); and a URING_CMD on a file that has no
 * such command (a regular file, a pipe) comes back as
 * dlc_read_passthru_refused with the kernel's errno, so the source can
 * fall back. (Not /dev/null: since 6.0 it completes any URING_CMD with
 * 0, for io_uring's own tests. The source only ever sends to a
 * namespace's generic character device.)
 */
static void test_nvme_refused(const char *dir)
{
	struct dlc_stats st;
	struct dlc_reader_opts o = {
		.queue_depth = 4, .direct = 1, .stats = &st, .passthru = 1,
	};
	struct dlc_nvme_target t = {
		.nsid = 1, .lba_shift = 9, .max_xfer = 64 << 10,
	};
	struct dlc_reader *plain, *r = NULL;
	struct dlc_read_done d;
	char path[600];
	const char *why;
	int fds[2], pipefd[2] = { -1, -1 }, i, ret;

	memset(&st, 0, sizeof(st));
	plain = reader(4, 0, NULL, &st);
	snprintf(path, sizeof(path), "%s/nvme-range", dir);
	write_range_file(path);
	fds[0] = open(path, O_RDONLY | O_CLOEXEC);
	fds[1] = pipe2(pipefd, O_CLOEXEC) ? -1 : pipefd[0];
	CHECK(fds[0] >= 0 && fds[1] >= 0, "open the files");
	t.fd = fds[0];
	/* A reader without passthru takes no NVMe read. */
	if (plain)
		CHECK_EQ(dlc_reader_queue_nvme(plain, &t, 0, 100, 1), -EINVAL);
	ret = dlc_reader_create(&o, &r);
	if (ret == -EINVAL) {
		/* io_uring before 5.19: the loader falls back the same way. */
		printf("# no 128-byte SQEs on this kernel: %s\n", strerror(-ret));
		goto out;
	}
	CHECK_EQ(ret, 0);
	if (!r || fds[0] < 0 || fds[1] < 0)
		goto out;
	/* Bad targets. */
	CHECK_EQ(dlc_reader_queue_nvme(r, NULL, 0, 100, 1), -EINVAL);
	t.lba_shift = 8;
	CHECK_EQ(dlc_reader_queue_nvme(r, &t, 0, 100, 1), -EINVAL);
	t.lba_shift = 13;
	CHECK_EQ(dlc_reader_queue_nvme(r, &t, 0, 100, 1), -EINVAL);
	t.lba_shift = 12;
	t.max_xfer = 6000;	/* not a multiple of the LBA */
	CHECK_EQ(dlc_reader_queue_nvme(r, &t, 0, 100, 1), -EINVAL);
	t.lba_shift = 9;
	t.max_xfer = 64 << 10;
	t.fd = -1;
	CHECK_EQ(dlc_reader_queue_nvme(r, &t, 0, 100, 1), -EINVAL);
	CHECK_EQ(dlc_reader_queue_nvme(r, &(struct dlc_nvme_target){
		.fd = fds[0], .lba_shift = 9, .max_xfer = 512 },
		UINT64_MAX - 10, 100, 1), -EINVAL);
	/* The big ring still does plain range reads. */
	ret = range_one(r, fds[0], 4000, 9000, 0, &why);
	CHECK(ret == 0, "range read on a passthru ring: %d (%s)", ret, why);
	/* Length 0: an empty buffer, as a range read. */
	t.fd = fds[0];
	CHECK_EQ(dlc_reader_queue_nvme(r, &t, 0, 0, 7), 0);
	d = reap_one(r);
	CHECK(d.tag == 7 && d.err == 0 && d.buf && d.buf->len == 0,
	      "empty NVMe read: tag %llu err %d", (unsigned long long)d.tag,
	      d.err);
	dlc_buf_put(d.buf);
	for (i = 0; i < 2; i++) {
		t.fd = fds[i];
		CHECK_EQ(dlc_reader_queue_nvme(r, &t, 4096, 70000, 20 + i), 0);
		CHECK_EQ(dlc_reader_submit(r), 0);
		d = reap_one(r);
		CHECK(d.tag == (uint64_t)(20 + i), "tag %llu",
		      (unsigned long long)d.tag);
		CHECK(d.err < 0 && d.why == dlc_read_passthru_refused && !d.buf,
		      "URING_CMD on %s: err %d why %s", i ? "a pipe" : path,
		      d.err, d.why ? d.why : "(none)");
		dlc_buf_put(d.buf);
	}
	CHECK_EQ(st.passthru_reads, 0);
out:
	dlc_reader_destroy(r);
	dlc_reader_destroy(plain);
	if (fds[0] >= 0)
		close(fds[0]);
	for (i = 0; i < 2; i++)
		if (pipefd[i] >= 0)
			close(pipefd[i]);
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
	T_RUN(test_direct_per_file, dir);
	T_RUN(test_short_read, dir);
	T_RUN(test_errors, dir);
	T_RUN(test_eintr, dir);
	T_RUN(test_wake);
	T_RUN(test_huge_file, dir);
	T_RUN(test_range_disk);
	T_RUN(test_range_no_direct);
	T_RUN(test_nvme_refused, dir);
	t_rmtree(dir);
	free(dir);
	return t_done("test_reader");
}
