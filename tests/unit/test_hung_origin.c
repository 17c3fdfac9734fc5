// SPDX-License-Identifier: MIT
/*
 * Files of the data set that would block a pipeline thread: a FIFO where
 * a sample was indexed, and a regular file whose read never completes.
 * - fifo_substitute: on_error substitute, a FIFO beside a truncated file
 *   (the FIFO is the truncated sample's first substitute, and a sample
 *   itself): every batch is delivered, the FIFO's error names its path
 *   ("not a regular file"), and destroy returns within a few seconds;
 * - fifo_staging: with the staging tier on, whose stager copies every
 *   sample through the blocking read, a FIFO in the data set neither
 *   stalls the epochs nor hangs destroy;
 * - source_fifo: the blocking read itself (dlc_source_read) refuses a
 *   FIFO at once, and returns -ECANCELED after dlc_source_cancel();
 * - leased_file: a file under another open file's write lease fails at
 *   once (-EWOULDBLOCK), in the blocking read and in the loader's
 *   io_uring open (which does not retry it in a loop either): an open
 *   that may block would wait for the lease's break time (45 s);
 * - hung_read: one file's O_DIRECT read waits in the kernel for as long
 *   as another process holds the file's inode lock (its write() faults on
 *   memory registered with userfaultfd and never served: an
 *   uninterruptible wait, as on a hard NFS mount that stopped answering).
 *   With read_timeout_ms 500 the sample fails with -ETIMEDOUT (an I/O
 *   error, skipped), the epoch ends, and destroy returns within a few
 *   seconds while the read is still stuck; then the lock is let go.
 * - hung_stager: with staging on, one file of the data set is a FUSE
 *   mount whose server never answers a READ (as a hard NFS mount that
 *   stopped answering: the read waits in the kernel, and the thread that
 *   queued it on its io_uring cannot end until it completes). The stager
 *   reads it ahead and gives up at read_timeout_ms; dlc_loader_destroy
 *   then returns within a few seconds although the stager's exit is
 *   held, and nothing is touched after it is freed (ASan); then the
 *   server is killed, which fails the stuck reads.
 * A hang is a failure: an alarm prints FAIL and exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dlcache.h"
#include "internal.h"
#include "source.h"
#include "helpers/testutil.h"

#define PER_CLASS	10
#define HANG_SECS	40	/* a test running longer than this hangs */

static const char *g_test = "?";
static pid_t g_holder = -1;	/* hung_read's lock holder, killed on a hang */
static char g_mnt[4096];	/* hung_stager's FUSE mount, undone on a hang */

static void on_alarm(int sig)
{
	char msg[160];
	int n;

	(void)sig;
	if (g_holder > 0)
		kill(g_holder, SIGKILL);
	if (g_mnt[0])
		umount2(g_mnt, MNT_DETACH);
	n = snprintf(msg, sizeof(msg), "FAIL %s: hung for %d s\n", g_test,
		     HANG_SECS);
	if (write(STDOUT_FILENO, msg, (size_t)n) < 0) {
		/* Exiting anyway. */
	}
	_exit(1);
}

static void watchdog(const char *name)
{
	g_test = name;
	signal(SIGALRM, on_alarm);
	alarm(HANG_SECS);
}

static void config(struct dlc_config *cfg, uint32_t on_error)
{
	dlc_config_init(cfg);
	cfg->batch_size = 4;
	cfg->transform.out_w = cfg->transform.out_h = 32;
	cfg->window = 8;
	cfg->queue_depth = 4;
	cfg->decode_threads = 2;
	cfg->shuffle = 0;
	cfg->on_error = on_error;
	cfg->backend = DLC_BACKEND_INPROCESS;
	cfg->log = t_log_capture;
	cfg->log_level = DLC_LOG_WARN;
}

/* One epoch: the images delivered; *@err is how it ended. */
static uint32_t run_epoch(struct dlc_loader *l, uint32_t epoch, int *err)
{
	struct dlc_batch *b;
	uint32_t images = 0;
	int ret;

	CHECK_EQ(dlc_loader_start_epoch(l, epoch, 0), 0);
	while ((ret = dlc_next_batch(l, &b)) == 0) {
		images += b->count;
		CHECK_EQ(dlc_release_batch(l, b), 0);
	}
	*err = ret;
	return images;
}

/*
 * One epoch with a consumer slower than the pipeline: each batch is
 * asked for once it is ready, so the stager may read ahead from the
 * origin (the pipeline does not wait on it).
 */
static uint32_t run_epoch_slow(struct dlc_loader *l, uint32_t epoch, int *err)
{
	struct dlc_batch *b;
	uint32_t images = 0;
	int ret;

	CHECK_EQ(dlc_loader_start_epoch(l, epoch, 0), 0);
	for (;;) {
		ret = dlc_next_batch_timeout(l, &b, 0);
		if (ret == -ETIMEDOUT) {
			t_sleep_ms(2);
			continue;
		}
		if (ret)
			break;
		images += b->count;
		CHECK_EQ(dlc_release_batch(l, b), 0);
	}
	*err = ret;
	return images;
}

/* Destroy @l: the seconds it took. */
static double destroy_secs(struct dlc_loader *l)
{
	uint64_t t0 = dlc_now_ns();

	dlc_loader_destroy(l);
	return (double)(dlc_now_ns() - t0) / 1e9;
}

/* A data set of 2 x PER_CLASS JPEGs under a new directory, indexed. */
static char *make_set(struct dlc_index **idx)
{
	char *dir = t_mkdtemp(NULL);

	*idx = NULL;
	if (!dir || t_make_dataset(dir, 2, PER_CLASS) ||
	    dlc_index_build(dir, idx)) {
		CHECK(0, "make and index a data set");
		return dir;
	}
	return dir;
}

/* Replace @dir/@rel (indexed as a file) with a FIFO nobody writes. */
static void make_fifo(const char *dir, const char *rel, char *path,
		      size_t len)
{
	snprintf(path, len, "%s/%s", dir, rel);
	CHECK(unlink(path) == 0 && mkfifo(path, 0644) == 0, "mkfifo %s", path);
}

static void free_set(char *dir, struct dlc_index *idx)
{
	dlc_index_free(idx);
	if (dir)
		t_rmtree(dir);
	free(dir);
}

static void fifo_substitute(void)
{
	struct dlc_index *idx;
	char *dir = make_set(&idx), fifo[4096], path[4096];
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	struct dlc_stats st;
	uint8_t *good;
	uint32_t n, images;
	size_t len;
	double secs;
	int err;

	if (!idx)
		goto out;
	n = dlc_index_count(idx);
	/* img0003 truncated; its first substitute, img0004, a FIFO. */
	snprintf(path, sizeof(path), "%s/class00/img0003.jpg", dir);
	good = t_read_file(path, &len);
	CHECK(good && t_write_file(path, good, len / 2) == 0, "truncate");
	free(good);
	make_fifo(dir, "class00/img0004.jpg", fifo, sizeof(fifo));
	config(&cfg, DLC_ON_ERROR_SUBSTITUTE);
	t_logbuf[0] = 0;
	watchdog("fifo_substitute");
	CHECK_EQ(dlc_loader_create(&cfg, idx, &l), 0);
	if (!l)
		goto out;
	images = run_epoch(l, 0, &err);
	CHECK(err == -ENODATA && images == n, "%u of %u images, end %d",
	      images, n, err);
	dlc_loader_stats(l, &st, sizeof(st));
	CHECK(st.substituted == 2, "substituted %llu, want 2",
	      (unsigned long long)st.substituted);
	CHECK(strstr(t_logbuf, fifo) && strstr(t_logbuf, "not a regular file"),
	      "the FIFO is named as not a regular file:\n%s", t_logbuf);
	secs = destroy_secs(l);
	alarm(0);
	CHECK(secs < 3, "destroy took %.1f s", secs);
out:
	free_set(dir, idx);
}

/* Whether the log says "@path: not a regular file" within 3 s. */
static int logged_not_regular(const char *path)
{
	char want[4200];
	uint32_t i;

	snprintf(want, sizeof(want), "%s: not a regular file", path);
	for (i = 0; i < 300; i++) {
		if (strstr(t_logbuf, want))
			return 1;
		t_sleep_ms(10);
	}
	return 0;
}

static void fifo_staging(void)
{
	struct dlc_index *idx;
	char *dir = make_set(&idx), *stage = t_mkdtemp(NULL), fifo[4096];
	char want[4200];
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	uint32_t n, images, e;
	double secs;
	int err;

	if (!idx || !stage)
		goto out;
	n = dlc_index_count(idx);
	/* Epoch 1's first sample: the stager reads it ahead in epoch 0. */
	make_fifo(dir, "class00/img0000.jpg", fifo, sizeof(fifo));
	snprintf(want, sizeof(want), "%s: not a regular file", fifo);
	config(&cfg, DLC_ON_ERROR_SKIP);
	cfg.staging_dir = stage;
	cfg.readahead_bytes = DLC_READAHEAD_OFF;
	t_logbuf[0] = 0;
	watchdog("fifo_staging");
	CHECK_EQ(dlc_loader_create(&cfg, idx, &l), 0);
	if (!l)
		goto out;
	/* Until the stager has tried the FIFO (each epoch may: timing). */
	for (e = 0; e < 8 && !strstr(t_logbuf, want); e++) {
		images = run_epoch_slow(l, e, &err);
		CHECK(err == -ENODATA && images == n - 1,
		      "epoch %u: %u of %u images, end %d", e, images, n, err);
	}
	/*
	 * The stager read it ahead from the origin, through dlc_source_read(),
	 * which names it (the reader's own message says "io: not a regular
	 * file failed").
	 */
	CHECK(logged_not_regular(fifo), "the stager's read names the FIFO:\n%s",
	      t_logbuf);
	if (getenv("DLCTEST_VERBOSE")) {
		struct dlc_stats st;

		dlc_loader_stats(l, &st, sizeof(st));
		printf("# prefetched %llu writes %llu\n%s",
		       (unsigned long long)st.staging_prefetched,
		       (unsigned long long)st.staging_writes, t_logbuf);
	}
	secs = destroy_secs(l);
	alarm(0);
	CHECK(secs < 3, "destroy took %.1f s", secs);
out:
	free_set(dir, idx);
	if (stage)
		t_rmtree(stage);
	free(stage);
}

static void source_fifo(void)
{
	struct dlc_logger lg = { t_log_capture, NULL, DLC_LOG_WARN };
	struct dlc_index *idx;
	char *dir = make_set(&idx), fifo[4096];
	struct dlc_source *s = NULL;
	struct dlc_buf *b = NULL;
	uint64_t t0;

	if (!idx)
		goto out;
	make_fifo(dir, "class00/img0000.jpg", fifo, sizeof(fifo));
	CHECK_EQ(dlc_source_open(idx, 0, &s), 0);
	if (!s)
		goto out;
	dlc_source_set_timeout(s, 10000, &lg);
	t_logbuf[0] = 0;
	watchdog("source_fifo");
	t0 = dlc_now_ns();
	CHECK_EQ(dlc_source_read(s, 0, 0, &b), -EINVAL);
	CHECK(dlc_now_ns() - t0 < 1000000000ULL, "refused within a second");
	CHECK(strstr(t_logbuf, fifo) && strstr(t_logbuf, "not a regular file"),
	      "logged: %s", t_logbuf);
	/* A good file reads; after a cancel, none does. */
	CHECK_EQ(dlc_source_read(s, 1, 0, &b), 0);
	CHECK(b && b->len == dlc_index_size(idx, 1), "sample 1's bytes");
	dlc_buf_put(b);
	b = NULL;
	dlc_source_cancel(s);
	CHECK_EQ(dlc_source_read(s, 1, 0, &b), -ECANCELED);
	CHECK(!b, "no buffer after a cancel");
	alarm(0);
	dlc_source_close(s);
out:
	free_set(dir, idx);
}

/*
 * Take a write lease on @path through a file of ours (the test's own
 * open counts as another's: a lease is broken per open file): an open
 * of it that may block waits until the lease is given up, up to
 * /proc/sys/fs/lease-break-time (45 s by default). The fd, or -errno.
 */
static int lease_take(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	/* A break is said with SIGIO, which would end the test. */
	signal(SIGIO, SIG_IGN);
	if (fcntl(fd, F_SETLEASE, F_WRLCK)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

static void lease_drop(int fd)
{
	fcntl(fd, F_SETLEASE, F_UNLCK);
	close(fd);
}

/*
 * A file another process holds a lease on: neither the blocking read nor
 * the loader's io_uring open waits for it (an O_NONBLOCK open fails with
 * -EWOULDBLOCK at once), and the loader does not spin on it either.
 */
static void leased_file(void)
{
	struct dlc_logger lg = { t_log_capture, NULL, DLC_LOG_WARN };
	struct dlc_index *idx;
	char *dir = make_set(&idx), path[4096];
	struct dlc_source *s = NULL;
	struct dlc_loader *l = NULL;
	struct dlc_buf *b = NULL;
	struct dlc_config cfg;
	struct dlc_stats st;
	uint32_t n, images;
	uint64_t t0;
	int fd, err;

	if (!idx)
		goto out;
	n = dlc_index_count(idx);
	snprintf(path, sizeof(path), "%s/class01/img0003.jpg", dir);
	fd = lease_take(path);
	if (fd < 0) {
		t_skip("leased_file", "no write lease here: %s", strerror(-fd));
		goto out;
	}
	watchdog("leased_file");
	CHECK_EQ(dlc_source_open(idx, 0, &s), 0);
	if (s) {
		dlc_source_set_timeout(s, 10000, &lg);
		t0 = dlc_now_ns();
		CHECK_EQ(dlc_source_read(s, PER_CLASS + 3, 0, &b), -EWOULDBLOCK);
		CHECK(dlc_now_ns() - t0 < 1000000000ULL, "failed within a second");
		dlc_source_close(s);
	}
	config(&cfg, DLC_ON_ERROR_SKIP);
	t_logbuf[0] = 0;
	CHECK_EQ(dlc_loader_create(&cfg, idx, &l), 0);
	if (l) {
		t0 = dlc_now_ns();
		images = run_epoch(l, 0, &err);
		CHECK(err == -ENODATA && images == n - 1,
		      "%u of %u images, end %d", images, n, err);
		CHECK(dlc_now_ns() - t0 < 5000000000ULL, "an epoch within 5 s");
		dlc_loader_stats(l, &st, sizeof(st));
		CHECK(st.retries < 100, "%llu retries: spinning on the open",
		      (unsigned long long)st.retries);
		CHECK(strstr(t_logbuf, "img0003.jpg") != NULL, "named:\n%s",
		      t_logbuf);
		dlc_loader_destroy(l);
	}
	alarm(0);
	lease_drop(fd);
out:
	free_set(dir, idx);
}

/*
 * Hold @path's inode lock until hold_end(): a child write()s to it from
 * memory registered with userfaultfd that nobody serves, so the write
 * waits in its page fault with the lock held (ext4 and XFS take it for a
 * buffered write); O_DIRECT reads of the file then wait for it in the
 * kernel. 0 with the child's pid in *@pid, or -errno (no userfaultfd for
 * kernel faults: unprivileged; or a file system whose O_DIRECT reads do
 * not take the lock).
 */
static int hold_start(const char *path, pid_t *pid)
{
	struct iovec iov;
	uint64_t t0;
	int p[2], fd, held = 0;
	void *buf = NULL;
	char c = 0;

	if (pipe(p))
		return -errno;
	*pid = fork();
	if (*pid < 0)
		return -errno;
	if (!*pid) {
		struct uffdio_api api = { .api = UFFD_API };
		struct uffdio_register reg = { 0 };
		int f = open(path, O_WRONLY);
		int u = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
		char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		reg.range.start = (unsigned long)m;
		reg.range.len = 4096;
		reg.mode = UFFDIO_REGISTER_MODE_MISSING;
		if (f < 0 || u < 0 || m == MAP_FAILED ||
		    ioctl(u, UFFDIO_API, &api) || ioctl(u, UFFDIO_REGISTER, &reg))
			_exit(1);
		c = 'r';
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		/* Waits in the fault until killed. */
		if (write(f, m, 4096) < 0)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1 || c != 'r') {
		close(p[0]);
		waitpid(*pid, NULL, 0);
		return -EPERM;
	}
	close(p[0]);
	/* Held when a read that may not wait for the lock is refused. */
	fd = open(path, O_RDONLY | O_DIRECT);
	if (fd >= 0 && !posix_memalign(&buf, 4096, 4096)) {
		iov.iov_base = buf;
		iov.iov_len = 4096;
		t0 = dlc_now_ns();
		while (!held && dlc_now_ns() - t0 < 2000000000ULL) {
			held = preadv2(fd, &iov, 1, 0, RWF_NOWAIT) < 0 &&
			       errno == EAGAIN;
			if (!held)
				t_sleep_ms(1);
		}
	}
	free(buf);
	if (fd >= 0)
		close(fd);
	if (!held) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
		return -EOPNOTSUPP;
	}
	return 0;
}

static void hold_end(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void hung_read(void)
{
	struct dlc_index *idx;
	char *dir = make_set(&idx), path[4096];
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	struct dlc_stats st;
	uint32_t n, images;
	pid_t holder = -1;
	double secs;
	int err, ret;

	if (!idx)
		goto out;
	n = dlc_index_count(idx);
	snprintf(path, sizeof(path), "%s/class00/img0002.jpg", dir);
	ret = hold_start(path, &holder);
	if (ret) {
		t_skip("hung_read", "cannot hold an inode lock with userfaultfd here (%s): root on ext4 or XFS needed",
		       strerror(-ret));
		goto out;
	}
	g_holder = holder;
	config(&cfg, DLC_ON_ERROR_SKIP);
	cfg.direct_io = 1;
	cfg.read_timeout_ms = 500;
	t_logbuf[0] = 0;
	watchdog("hung_read");
	CHECK_EQ(dlc_loader_create(&cfg, idx, &l), 0);
	if (l) {
		images = run_epoch(l, 0, &err);
		CHECK(err == -ENODATA && images == n - 1,
		      "%u of %u images, end %d", images, n, err);
		dlc_loader_stats(l, &st, sizeof(st));
		CHECK(st.errors_by_kind[DLC_ERR_IO] == 1, "I/O errors: %llu",
		      (unsigned long long)st.errors_by_kind[DLC_ERR_IO]);
		CHECK(strstr(t_logbuf, "img0002.jpg") &&
		      strstr(t_logbuf, strerror(ETIMEDOUT)),
		      "the timeout is named:\n%s", t_logbuf);
		secs = destroy_secs(l);
		CHECK(secs < 5, "destroy took %.1f s", secs);
		if (getenv("DLCTEST_VERBOSE"))
			printf("# %s", t_logbuf);
	}
	alarm(0);
	/* The stuck read completes now, into memory the loader left it. */
	hold_end(holder);
	g_holder = -1;
	t_sleep_ms(100);
out:
	free_set(dir, idx);
}

/* One reply of the FUSE server on @fd: @err, or @len bytes of @body. */
static void fuse_reply(int fd, uint64_t unique, int err, const void *body,
		       size_t len)
{
	struct fuse_out_header h = {
		.len = (uint32_t)(sizeof(h) + (err ? 0 : len)),
		.error = err, .unique = unique,
	};
	struct iovec v[2] = { { &h, sizeof(h) }, { (void *)body, len } };

	if (writev(fd, v, err || !len ? 1 : 2) < 0) {
		/* The kernel dropped the request (interrupted): nothing to do. */
	}
}

/*
 * The FUSE server of a file system that is one regular file of @size
 * bytes (its root), on @fd: it answers everything but a READ, which it
 * never answers (nor the INTERRUPT that follows). Until killed.
 */
static void fuse_serve(int fd, uint64_t size)
{
	static uint8_t req[FUSE_MIN_READ_BUFFER + 65536];
	struct fuse_in_header *in = (struct fuse_in_header *)req;
	struct fuse_init_out init = {
		.major = FUSE_KERNEL_VERSION, .minor = FUSE_KERNEL_MINOR_VERSION,
		/* Else a read waits in the thread that submits it. */
		.flags = FUSE_ASYNC_READ,
		.max_readahead = 65536, .max_background = 16,
		.congestion_threshold = 12, .max_write = 65536, .time_gran = 1,
	};
	struct fuse_attr_out attr = { .attr_valid = 3600 };
	/* Else an open waits for the pages of the read that hangs. */
	struct fuse_open_out open_out = { .open_flags = FOPEN_KEEP_CACHE };
	ssize_t n;

	attr.attr.ino = FUSE_ROOT_ID;
	attr.attr.size = size;
	attr.attr.blocks = (size + 511) / 512;
	attr.attr.mode = S_IFREG | 0644;
	attr.attr.nlink = 1;
	attr.attr.blksize = 4096;
	for (;;) {
		n = read(fd, req, sizeof(req));
		if (n < 0 && (errno == EINTR || errno == ENOENT))
			continue;
		if (n < (ssize_t)sizeof(*in))
			_exit(0);
		switch (in->opcode) {
		case FUSE_INIT:
			fuse_reply(fd, in->unique, 0, &init, sizeof(init));
			break;
		case FUSE_GETATTR:
			fuse_reply(fd, in->unique, 0, &attr, sizeof(attr));
			break;
		case FUSE_OPEN:
			fuse_reply(fd, in->unique, 0, &open_out,
				   sizeof(open_out));
			break;
		case FUSE_FLUSH:
		case FUSE_RELEASE:
			fuse_reply(fd, in->unique, 0, NULL, 0);
			break;
		case FUSE_READ:		/* the hung origin */
		case FUSE_INTERRUPT:	/* never answered */
		case FUSE_FORGET:
		case FUSE_BATCH_FORGET:
			break;
		default:
			fuse_reply(fd, in->unique, -ENOSYS, NULL, 0);
		}
	}
}

/*
 * Mount over the regular file @path a FUSE file system whose one file
 * has @path's size and whose reads never complete: 0 with the server's
 * pid in *@pid (killing it fails the reads stuck on it), or -errno.
 */
static int fuse_hang_start(const char *path, pid_t *pid)
{
	char opts[128];
	struct stat sb;
	int fd, ret;

	if (stat(path, &sb))
		return -errno;
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	snprintf(opts, sizeof(opts),
		 "fd=%d,rootmode=%o,user_id=0,group_id=0,allow_other", fd,
		 (unsigned int)S_IFREG);
	if (mount("dlctest", path, "fuse.dlctest", MS_NOSUID | MS_NODEV,
		  opts)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	snprintf(g_mnt, sizeof(g_mnt), "%s", path);
	*pid = fork();
	if (*pid < 0) {
		ret = -errno;
		umount2(path, MNT_DETACH);
		g_mnt[0] = 0;
		close(fd);
		return ret;
	}
	if (!*pid)
		fuse_serve(fd, (uint64_t)sb.st_size);
	/* The server's fd is the connection's last: killing it aborts it. */
	close(fd);
	return 0;
}

static void fuse_hang_end(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	umount2(g_mnt, MNT_DETACH);
	g_mnt[0] = 0;
}

static void hung_stager(void)
{
	struct dlc_index *idx;
	char *dir = make_set(&idx), *stage = t_mkdtemp(NULL), path[4096];
	const char *want = "staging: cannot stage sample 19";
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	uint32_t n, images, e;
	pid_t server = -1;
	double secs;
	int err, ret;

	if (!idx || !stage)
		goto out;
	n = dlc_index_count(idx);
	/*
	 * The epoch's last sample: the stager reads it ahead before the
	 * pipeline asks for it. Each pipeline read of it holds one of the
	 * reader's queue_depth requests until the kernel gives it back:
	 * room for every epoch below.
	 */
	snprintf(path, sizeof(path), "%s/class01/img%04u.jpg", dir,
		 PER_CLASS - 1);
	ret = fuse_hang_start(path, &server);
	if (ret) {
		t_skip("hung_stager", "cannot mount a FUSE file system here (%s): root and /dev/fuse needed",
		       strerror(-ret));
		goto out;
	}
	g_holder = server;
	config(&cfg, DLC_ON_ERROR_SKIP);
	cfg.staging_dir = stage;
	cfg.readahead_bytes = DLC_READAHEAD_OFF;
	/* Buffered: FUSE does an O_DIRECT read in the submitting thread. */
	cfg.direct_io = 0;
	cfg.read_timeout_ms = 300;
	cfg.queue_depth = 16;
	t_logbuf[0] = 0;
	watchdog("hung_stager");
	CHECK_EQ(dlc_loader_create(&cfg, idx, &l), 0);
	if (!l)
		goto end;
	/* Until the stager's own read of it gave up (each epoch may: timing). */
	for (e = 0; e < 8 && !strstr(t_logbuf, want); e++) {
		images = run_epoch_slow(l, e, &err);
		CHECK(err == -ENODATA && images == n - 1,
		      "epoch %u: %u of %u images, end %d", e, images, n, err);
	}
	CHECK(strstr(t_logbuf, want) && strstr(t_logbuf, strerror(ETIMEDOUT)),
	      "the stager's read of the hung file timed out:\n%s", t_logbuf);
	if (getenv("DLCTEST_VERBOSE"))
		printf("# %s", t_logbuf);
	secs = destroy_secs(l);
	CHECK(secs < 5, "destroy took %.1f s", secs);
end:
	alarm(0);
	/* The stuck reads fail now, into memory the loader left them. */
	fuse_hang_end(server);
	g_holder = -1;
	t_sleep_ms(100);
out:
	free_set(dir, idx);
	if (stage)
		t_rmtree(stage);
	free(stage);
}

/* With an argument, only the sub-check of that name. */
#define RUN(fn)								\
	do {								\
		if (argc < 2 || !strcmp(argv[1], #fn))			\
			T_RUN(fn);					\
	} while (0)

int main(int argc, char **argv)
{
	RUN(source_fifo);
	RUN(fifo_substitute);
	RUN(fifo_staging);
	RUN(leased_file);
	RUN(hung_read);
	RUN(hung_stager);
	return t_done("test_hung_origin");
}
