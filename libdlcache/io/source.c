// SPDX-License-Identifier: MIT
/*
 * Where a sample's bytes live, for the loader: a file of a directory tree
 * (the index's root joined with its relative path, opened per read), or a
 * range of a pack (one file, opened once: its samples are read at their
 * recorded offsets with no per-sample open). The loader asks for reads,
 * blocking reads (substitutes) and names (messages) through here, and
 * never needs to know which it has.
 *
 * A pack written onto an NVMe namespace is opened through its block
 * device (metadata, blocking reads, and the O_DIRECT reads of the
 * fallback); once dlc_source_passthru() found the namespace's generic
 * character device usable, samples are read with NVMe commands through
 * io_uring instead (reader.c), until the kernel refuses one: then every
 * read goes back to O_DIRECT on the block device, said once in the log.
 *
 * Blocking reads (dlc_source_read: substitutes, on a decode thread or the
 * I/O thread, and the stager's copies) run on pipeline threads, so they
 * never wait unbounded on the data set's storage: a file is opened with
 * O_NONBLOCK (a FIFO or a leased file does not block the open) and
 * refused unless statx says it is a regular file, and every operation
 * (openat, statx, read) goes through a small io_uring of the calling
 * thread with a linked timeout at the read's deadline (read_timeout_ms).
 * An operation the kernel cannot cancel (a hard NFS mount that stopped
 * answering) is given up on at the deadline: the thread's ring and the
 * memory the operation writes into are left to the kernel (leaked), and
 * the next read makes a new ring.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "nvme.h"
#include "pack.h"
#include "reader.h"
#include "source.h"
#include "tier.h"

struct dlc_source {
	const struct dlc_index *idx;
	const struct dlc_pack *pack;	/* NULL: a tree of files */
	int fd;				/* the pack, buffered */
	int dfd;			/* the pack with O_DIRECT, or -1 */
	/*
	 * The file system refused an O_DIRECT read of dfd: buffered from
	 * then on. dfd stays open until the end, as reads queued on it may
	 * still be in flight. I/O thread only.
	 */
	int refused;
	/*
	 * NVMe passthrough: the namespace's generic character device
	 * (nvme.fd, -1 when not used), its name for messages, and whether
	 * the kernel refused a command (then O_DIRECT on dfd from then on;
	 * nvme.fd stays open while reads on it may be in flight). I/O thread
	 * only, after dlc_source_passthru().
	 */
	struct dlc_nvme_target nvme;
	char ng[80];
	int nvme_refused;
	const struct dlc_logger *log;
	/* Read tiers (tier.h), asked in this order before the origin. */
	struct dlc_tier tiers[DLC_TIERS_MAX];
	uint32_t ntiers;
	uint64_t timeout_ns;	/* dlc_source_read()'s deadline, 0: none */
	int cancelled;		/* dlc_source_cancel(): atomic */
};

void dlc_source_set_timeout(struct dlc_source *s, uint32_t ms,
			    const struct dlc_logger *log)
{
	s->timeout_ns = (uint64_t)ms * 1000000ULL;
	s->log = log;
}

void dlc_source_cancel(struct dlc_source *s)
{
	if (s)
		__atomic_store_n(&s->cancelled, 1, __ATOMIC_RELEASE);
}

int dlc_source_open(const struct dlc_index *idx, int direct,
		    struct dlc_source **out)
{
	struct dlc_source *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->idx = idx;
	s->pack = dlc_index_pack(idx);
	s->fd = -1;
	s->dfd = -1;
	s->nvme.fd = -1;
	if (s->pack) {
		s->fd = open(dlc_pack_path(s->pack), O_RDONLY | O_CLOEXEC);
		if (s->fd < 0) {
			int err = -errno;

			free(s);
			return err;
		}
		/* Refused by the file system (tmpfs): buffered reads. */
		if (direct)
			s->dfd = open(dlc_pack_path(s->pack),
				      O_RDONLY | O_CLOEXEC | O_DIRECT);
	}
	*out = s;
	return 0;
}

void dlc_source_close(struct dlc_source *s)
{
	if (!s)
		return;
	if (s->nvme.fd >= 0)
		close(s->nvme.fd);
	if (s->dfd >= 0)
		close(s->dfd);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
}

int dlc_source_passthru(struct dlc_source *s, const struct dlc_logger *log)
{
	struct dlc_nvme_ns ns;
	char why[160];
	int ret, fd;

	s->log = log;
	if (!s->pack || s->dfd < 0)
		return 0;
	ret = dlc_nvme_probe(dlc_pack_path(s->pack), &ns, why, sizeof(why));
	if (ret <= 0)
		return 0;
	if (!ns.ng[0]) {
		dlc_logf(log, DLC_LOG_WARN,
			 "%s: the kernel gives namespace %s no generic character device (ngXnY); reading it with O_DIRECT",
			 dlc_pack_path(s->pack), ns.name);
		return 0;
	}
	if (!ns.nsid) {
		dlc_logf(log, DLC_LOG_WARN,
			 "%s: no namespace ID for %s in sysfs or from Identify; reading it with O_DIRECT",
			 dlc_pack_path(s->pack), ns.name);
		return 0;
	}
	if (ns.lba_bytes > 4096) {
		/* The pool's buffers are 4 KiB aligned: reads must start there. */
		dlc_logf(log, DLC_LOG_WARN,
			 "%s: %u-byte LBAs; reading it with O_DIRECT, not passthrough",
			 dlc_pack_path(s->pack), ns.lba_bytes);
		return 0;
	}
	if (ns.meta_bytes) {
		dlc_logf(log, DLC_LOG_WARN,
			 "%s: the LBA format carries %u bytes of metadata; reading it with O_DIRECT, not passthrough",
			 dlc_pack_path(s->pack), ns.meta_bytes);
		return 0;
	}
	fd = open(ns.ng, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		dlc_logf(log, DLC_LOG_WARN,
			 "%s: no NVMe passthrough (open %s: %s); reading it with O_DIRECT",
			 dlc_pack_path(s->pack), ns.ng, strerror(errno));
		return 0;
	}
	s->nvme.fd = fd;
	s->nvme.nsid = ns.nsid;
	s->nvme.lba_shift = (uint32_t)__builtin_ctz(ns.lba_bytes);
	s->nvme.max_xfer = ns.max_xfer;
	snprintf(s->ng, sizeof(s->ng), "%s", ns.ng);
	dlc_logf(log, DLC_LOG_INFO,
		 "%s: NVMe namespace %u, %u-byte LBAs, up to %u KiB a command%s: reading samples through io_uring passthrough on %s",
		 dlc_pack_path(s->pack), ns.nsid, ns.lba_bytes,
		 ns.max_xfer >> 10, ns.identified ? "" : " (from sysfs)",
		 ns.ng);
	return 1;
}

void dlc_source_passthru_off(struct dlc_source *s, const char *why)
{
	if (s->nvme.fd < 0 || s->nvme_refused)
		return;
	s->nvme_refused = 1;
	dlc_logf(s->log, DLC_LOG_WARN,
		 "%s: NVMe passthrough on %s refused (%s); reading it with O_DIRECT from now on",
		 dlc_pack_path(s->pack), s->ng, why);
}

const struct dlc_pack *dlc_source_pack(const struct dlc_source *s)
{
	return s->pack;
}

void dlc_source_name(const struct dlc_source *s, uint32_t id, char *buf,
		     size_t len)
{
	if (s->pack)
		snprintf(buf, len, "%s in %s", dlc_index_relpath(s->idx, id),
			 dlc_pack_path(s->pack));
	else
		snprintf(buf, len, "%s/%s", dlc_index_root(s->idx),
			 dlc_index_relpath(s->idx, id));
}

int dlc_source_add_tier(struct dlc_source *s, const struct dlc_tier *t)
{
	if (s->ntiers == DLC_TIERS_MAX)
		return -ENOSPC;
	s->tiers[s->ntiers++] = *t;
	return 0;
}

static int queue_origin(struct dlc_source *s, struct dlc_reader *r,
			uint32_t id, uint64_t tag, char *scratch, size_t len);

/* From tier @from (0: the first) on, then the origin. */
static int queue_from(struct dlc_source *s, struct dlc_reader *r, uint32_t id,
		      uint64_t tag, uint32_t from, char *scratch, size_t len)
{
	const struct dlc_tier *t;
	uint32_t i;
	int ret;

	for (i = from; i < s->ntiers; i++) {
		t = &s->tiers[i];
		ret = t->ops->queue(t->tier, r, id, tag | DLC_TIER_TAG(i + 1),
				    scratch, len);
		if (ret)
			return ret < 0 ? ret : 0;
	}
	return queue_origin(s, r, id, tag, scratch, len);
}

int dlc_source_queue(struct dlc_source *s, struct dlc_reader *r,
		     uint32_t id, uint64_t tag, char *scratch, size_t len)
{
	return queue_from(s, r, id, tag, 0, scratch, len);
}

int dlc_source_served(struct dlc_source *s, struct dlc_reader *r,
		      uint32_t id, struct dlc_read_done *d, char *scratch,
		      size_t len)
{
	const struct dlc_tier *t;
	uint32_t i = d->tier;
	int ret;

	if (!i || i > s->ntiers)
		return 0;
	d->tier = 0;
	t = &s->tiers[i - 1];
	if (!t->ops->served(t->tier, id, d))
		return 0;
	ret = queue_from(s, r, id, d->tag, i, scratch, len);
	if (ret) {
		d->err = ret;
		d->why = "queue";
		return 0;
	}
	return 1;
}

void dlc_source_offer(struct dlc_source *s, uint32_t id, struct dlc_buf *b)
{
	uint32_t i;

	for (i = 0; i < s->ntiers; i++)
		s->tiers[i].ops->offer(s->tiers[i].tier, id, b);
}

static int queue_origin(struct dlc_source *s, struct dlc_reader *r,
			uint32_t id, uint64_t tag, char *scratch, size_t len)
{
	struct dlc_pack_entry e;
	int ret;

	if (!s->pack) {
		dlc_source_name(s, id, scratch, len);
		return dlc_reader_queue(r, scratch, tag);
	}
	ret = dlc_pack_entry(s->pack, id, &e);
	if (ret)
		return ret;
	if (s->nvme.fd >= 0 && !s->nvme_refused)
		return dlc_reader_queue_nvme(r, &s->nvme, e.off, e.len, tag);
	return dlc_reader_queue_file_range(r, s->dfd >= 0 && !s->refused ?
					   s->dfd : s->fd, e.off, e.len,
					   s->dfd >= 0 && !s->refused, tag);
}

int dlc_source_requeue(struct dlc_source *s, struct dlc_reader *r,
		       uint32_t id, const struct dlc_read_done *d)
{
	int first = !s->refused;
	char unused[1];

	if (s->pack && d->why == dlc_read_passthru_refused) {
		dlc_source_passthru_off(s, strerror(-d->err));
		return queue_origin(s, r, id, d->tag, unused,
				    sizeof(unused)) ? 0 : 1;
	}
	if (!s->pack || d->err != -EINVAL || d->why != dlc_read_direct_refused)
		return 0;
	s->refused = 1;
	if (queue_origin(s, r, id, d->tag, unused, sizeof(unused)))
		return 0;
	return first ? 2 : 1;
}

/* ---- blocking reads with a deadline ---- */

/* How often a blocking read looks whether it was cancelled. */
#define CANCEL_POLL_NS	100000000LL
/* After its cancel, how long an operation gets to complete. */
#define CANCEL_GRACE_NS	100000000ULL
/* A blocking read's ring: one operation and its timeout, and a cancel. */
#define RING_ENTRIES	4
#define OP_TAG		1ULL
#define TIMEOUT_TAG	2ULL
#define CANCEL_TAG	3ULL

static pthread_key_t ring_key;
static int ring_key_ok;
static pthread_once_t ring_once = PTHREAD_ONCE_INIT;

static void ring_free(void *ring)
{
	io_uring_queue_exit(ring);
	free(ring);
}

static void ring_key_make(void)
{
	ring_key_ok = !pthread_key_create(&ring_key, ring_free);
}

/*
 * The calling thread's ring for blocking reads, made on first use and
 * freed when the thread exits; NULL when none can be made (then plain
 * system calls, with no deadline).
 */
/* A thread's ring, and the process it was made in (ring first: freed as one). */
struct thread_ring {
	struct io_uring ring;
	pid_t pid;
};

static struct io_uring *thread_ring(void)
{
	struct thread_ring *tr;

	pthread_once(&ring_once, ring_key_make);
	if (!ring_key_ok)
		return NULL;
	tr = pthread_getspecific(ring_key);
	if (tr && tr->pid == getpid())
		return &tr->ring;
	if (tr) {
		/*
		 * Made before a fork(): its SQ and CQ are the parent's too
		 * (shared mappings), so this child must not use it. Undoing
		 * the child's mappings and fd leaves the parent's alone.
		 */
		pthread_setspecific(ring_key, NULL);
		ring_free(tr);
	}
	tr = calloc(1, sizeof(*tr));
	if (!tr)
		return NULL;
	if (io_uring_queue_init(RING_ENTRIES, &tr->ring, 0)) {
		free(tr);
		return NULL;
	}
	tr->pid = getpid();
	if (pthread_setspecific(ring_key, tr)) {
		ring_free(tr);
		return NULL;
	}
	return &tr->ring;
}

/* One blocking read of a sample: its ring, deadline and fate. */
struct timed_io {
	struct dlc_source *s;
	struct io_uring *ring;	/* the thread's; NULL: plain system calls */
	uint64_t deadline;	/* CLOCK_MONOTONIC ns, 0: none */
	struct __kernel_timespec deadline_ts;
	/*
	 * An operation was given up on while the kernel still held it: what
	 * it writes into (buffer, statx) must be leaked, and the ring (its
	 * completion would come later) is the thread's no more.
	 */
	int stuck;
};

static int cancelled(const struct dlc_source *s)
{
	return __atomic_load_n(&s->cancelled, __ATOMIC_ACQUIRE);
}

/*
 * The thread's ring is used no more: @stuck, an operation is still on it
 * (its memory is leaked); else a submit failed and left SQEs behind.
 */
static void drop_ring(struct timed_io *io, int stuck)
{
	io->stuck |= stuck;
	pthread_setspecific(ring_key, NULL);
	/* Unmaps and closes; the kernel tears it down when the op ends. */
	ring_free(io->ring);
	io->ring = NULL;
}

/*
 * Submit the operation prepared in @sqe with a linked timeout at @io's
 * deadline, and wait for it: its result, -ETIMEDOUT past the deadline,
 * -ECANCELED after dlc_source_cancel(). When the kernel neither
 * completes nor cancels it in time, @io is stuck (the caller leaks what
 * the operation writes into) and its ring gone.
 */
static int run_op(struct timed_io *io, struct io_uring_sqe *sqe)
{
	struct io_uring *ring = io->ring;
	struct __kernel_timespec ts = { .tv_nsec = CANCEL_POLL_NS };
	int res = 0, op_done = 0, timer_done = !io->deadline, fired = 0;
	int cancel_sent = 0, ret;
	uint64_t give_up = 0, now;
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *t;

	io_uring_sqe_set_data64(sqe, OP_TAG);
	if (io->deadline) {
		/* RING_ENTRIES leaves room: the ring is empty between ops. */
		t = io_uring_get_sqe(ring);
		sqe->flags |= IOSQE_IO_LINK;
		io_uring_prep_link_timeout(t, &io->deadline_ts,
					   IORING_TIMEOUT_ABS);
		io_uring_sqe_set_data64(t, TIMEOUT_TAG);
	}
	do {
		ret = io_uring_submit(ring);
	} while (ret == -EINTR || ret == -EAGAIN);
	if (ret < 0) {
		drop_ring(io, 0);
		return ret;
	}
	while (!op_done || !timer_done) {
		now = dlc_now_ns();
		if (!op_done && !cancel_sent && cancelled(io->s)) {
			t = io_uring_get_sqe(ring);
			if (t) {
				io_uring_prep_cancel64(t, OP_TAG, 0);
				io_uring_sqe_set_data64(t, CANCEL_TAG);
				io_uring_submit(ring);
			}
			cancel_sent = 1;
			give_up = now + CANCEL_GRACE_NS;
		}
		/*
		 * Cancelled, or its timeout fired, and the kernel could not
		 * take it back (an uninterruptible wait): wait no more.
		 */
		if (!op_done && ((give_up && now >= give_up) ||
				 (fired && now >= io->deadline +
				  CANCEL_GRACE_NS))) {
			drop_ring(io, 1);
			return cancel_sent ? -ECANCELED : -ETIMEDOUT;
		}
		ret = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
		if (ret == -ETIME || ret == -EINTR)
			continue;
		if (ret < 0) {
			drop_ring(io, 1);
			return ret;
		}
		switch (io_uring_cqe_get_data64(cqe)) {
		case OP_TAG:
			res = cqe->res;
			op_done = 1;
			break;
		case TIMEOUT_TAG:
			/* -ECANCELED: the operation completed first. */
			fired = cqe->res != -ECANCELED;
			timer_done = 1;
			break;
		}
		io_uring_cqe_seen(ring, cqe);
	}
	if (res < 0 && fired)
		return -ETIMEDOUT;
	if (res < 0 && cancel_sent)
		return -ECANCELED;
	return res;
}

static void timed_start(struct timed_io *io, struct dlc_source *s)
{
	memset(io, 0, sizeof(*io));
	io->s = s;
	io->ring = thread_ring();
	if (!s->timeout_ns || !io->ring)
		return;
	io->deadline = dlc_now_ns() + s->timeout_ns;
	io->deadline_ts.tv_sec = (int64_t)(io->deadline / 1000000000ULL);
	io->deadline_ts.tv_nsec = (long long)(io->deadline % 1000000000ULL);
}

/*
 * Open @path for reading whatever it is, without blocking on it: a FIFO
 * with no writer, a file another process holds a lease on.
 */
static int timed_open(struct timed_io *io, const char *path)
{
	int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, fd;
	struct io_uring_sqe *sqe;

	if (cancelled(io->s))
		return -ECANCELED;
	if (!io->ring) {
		fd = open(path, flags);
		return fd < 0 ? -errno : fd;
	}
	sqe = io_uring_get_sqe(io->ring);
	/* io_uring copies @path when the SQE is submitted. */
	io_uring_prep_openat(sqe, AT_FDCWD, path, flags, 0);
	return run_op(io, sqe);
}

/*
 * The size of @fd, which must be a regular file (-EINVAL, or -EISDIR,
 * with "not a regular file" logged naming @name), into *@size, and its
 * mtime in ns into *@mtime_ns (the staging tier's copies carry it); then
 * O_NONBLOCK is taken off for the reads.
 */
static int timed_size(struct timed_io *io, int fd, const char *name,
		      uint64_t *size, uint64_t *mtime_ns)
{
	struct io_uring_sqe *sqe;
	struct statx *stx;
	struct stat st;
	int ret, fl;

	if (!io->ring) {
		if (fstat(fd, &st))
			return -errno;
		*size = (uint64_t)st.st_size;
		*mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ULL +
			    (uint64_t)st.st_mtim.tv_nsec;
		ret = S_ISREG(st.st_mode) ? 0 :
		      S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	} else {
		/* Written when the statx completes, which may be late. */
		stx = malloc(sizeof(*stx));
		if (!stx)
			return -ENOMEM;
		sqe = io_uring_get_sqe(io->ring);
		io_uring_prep_statx(sqe, fd, "", AT_EMPTY_PATH,
				    STATX_TYPE | STATX_SIZE | STATX_MTIME, stx);
		ret = run_op(io, sqe);
		if (io->stuck) {
			dlc_leave_to_kernel(stx);
			return ret;
		}
		if (!ret) {
			*size = stx->stx_size;
			if (stx->stx_mask & STATX_MTIME)
				*mtime_ns = (uint64_t)stx->stx_mtime.tv_sec *
					    1000000000ULL +
					    stx->stx_mtime.tv_nsec;
			ret = S_ISREG(stx->stx_mode) ? 0 :
			      S_ISDIR(stx->stx_mode) ? -EISDIR : -EINVAL;
		}
		free(stx);
	}
	if (ret == -EINVAL || ret == -EISDIR) {
		dlc_logf(io->s->log, DLC_LOG_WARN, "%s: not a regular file",
			 name);
		return ret;
	}
	if (ret)
		return ret;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK))
		return -errno;
	return 0;
}

/* Read @len bytes at @off of @fd into @dst, all of them (-EIO at EOF). */
static int timed_pread(struct timed_io *io, int fd, uint8_t *dst,
		       uint64_t len, uint64_t off)
{
	struct io_uring_sqe *sqe;
	uint64_t done = 0;
	uint32_t chunk;
	ssize_t n;

	while (done < len) {
		if (cancelled(io->s))
			return -ECANCELED;
		chunk = len - done > DLC_READ_CHUNK_MAX ? DLC_READ_CHUNK_MAX :
			(uint32_t)(len - done);
		if (io->ring) {
			sqe = io_uring_get_sqe(io->ring);
			io_uring_prep_read(sqe, fd, dst + done, chunk,
					   off + done);
			n = run_op(io, sqe);
			if (n == -EINTR || n == -EAGAIN)
				continue;
		} else {
			n = pread(fd, dst + done, chunk, (off_t)(off + done));
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				n = -errno;
		}
		if (n <= 0)
			return n < 0 ? (int)n : -EIO;
		done += (uint64_t)n;
	}
	return 0;
}

/* The end of a blocking read: what it wrote into is leaked when stuck. */
static int timed_end(struct timed_io *io, struct dlc_buf *b, int ret)
{
	if (!io->stuck)
		dlc_buf_put(b);
	else
		dlc_leave_to_kernel(b);
	return ret;
}

/* A blocking read of a pack's sample: substitutes are rare. */
static int pack_read(struct dlc_source *s, uint32_t id, struct dlc_buf **out)
{
	struct dlc_pack_entry e;
	struct timed_io io;
	struct dlc_buf *b;
	int ret;

	ret = dlc_pack_entry(s->pack, id, &e);
	if (ret)
		return ret;
	b = dlc_buf_alloc(e.len);
	if (!b)
		return -ENOMEM;
	timed_start(&io, s);
	ret = timed_pread(&io, s->fd, b->data, e.len, e.off);
	if (ret)
		return timed_end(&io, b, ret);
	*out = b;
	return 0;
}

/* A blocking read of a whole file, which must be a regular one. */
static int file_read(struct dlc_source *s, const char *path, uint64_t max,
		     struct dlc_buf **out)
{
	uint64_t size = 0, mtime_ns = 0;
	struct dlc_buf *b = NULL;
	struct timed_io io;
	int fd, ret;

	timed_start(&io, s);
	fd = timed_open(&io, path);
	if (fd < 0)
		return fd;
	ret = timed_size(&io, fd, path, &size, &mtime_ns);
	if (!ret && max && size > max)
		ret = -EFBIG;
	if (!ret && size > SIZE_MAX / 2)
		ret = -EFBIG;
	if (!ret) {
		b = dlc_buf_alloc((size_t)size);
		if (!b)
			ret = -ENOMEM;
		else
			b->mtime_ns = mtime_ns;
	}
	if (!ret)
		ret = timed_pread(&io, fd, b->data, size, 0);
	/* A stuck operation holds its own reference to the file. */
	close(fd);
	if (ret)
		return timed_end(&io, b, ret);
	*out = b;
	return 0;
}

int dlc_source_read(struct dlc_source *s, uint32_t id, uint64_t max,
		    struct dlc_buf **out)
{
	char path[4096];

	if (s->pack)
		return pack_read(s, id, out);
	dlc_source_name(s, id, path, sizeof(path));
	return file_read(s, path, max, out);
}

int dlc_source_mtime(struct dlc_source *s, uint32_t id, uint64_t *mtime_ns)
{
	struct io_uring_sqe *sqe;
	struct timed_io io;
	char path[4096];
	struct statx *stx;
	struct stat sb;
	int ret;

	dlc_source_name(s, id, path, sizeof(path));
	timed_start(&io, s);
	if (cancelled(s))
		return -ECANCELED;
	if (!io.ring) {
		if (stat(path, &sb))
			return -errno;
		*mtime_ns = (uint64_t)sb.st_mtim.tv_sec * 1000000000ULL +
			    (uint64_t)sb.st_mtim.tv_nsec;
		return 0;
	}
	/* Written when the statx completes, which may be late. */
	stx = malloc(sizeof(*stx));
	if (!stx)
		return -ENOMEM;
	sqe = io_uring_get_sqe(io.ring);
	/* io_uring copies @path when the SQE is submitted. */
	io_uring_prep_statx(sqe, AT_FDCWD, path, 0, STATX_MTIME, stx);
	ret = run_op(&io, sqe);
	if (io.stuck) {
		dlc_leave_to_kernel(stx);
		return ret;
	}
	if (!ret && !(stx->stx_mask & STATX_MTIME))
		ret = -EOPNOTSUPP;
	if (!ret)
		*mtime_ns = (uint64_t)stx->stx_mtime.tv_sec * 1000000000ULL +
			    stx->stx_mtime.tv_nsec;
	free(stx);
	return ret;
}

int dlc_source_rst(const struct dlc_source *s, uint32_t id,
		   struct dlc_rst_geom *g, uint32_t *rows)
{
	struct dlc_pack_entry e;

	if (!s->pack || dlc_pack_entry(s->pack, id, &e) ||
	    e.kind != DLC_PACK_RST)
		return 0;
	*g = e.g;
	return dlc_pack_rows(s->pack, id, rows) ? 0 : 1;
}
