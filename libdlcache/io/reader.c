// SPDX-License-Identifier: MIT
/*
 * Batch reads of whole sample files through io_uring.
 *
 * Every step of a sample goes through the ring, so that a slow open (a
 * cold dentry cache, NFS, Lustre) overlaps with the others instead of
 * serialising the I/O thread: each request is a small state machine,
 * OPENAT -> STATX (of the fd) -> READ (one or more) -> CLOSE. The close
 * is fire and forget: its completion is dropped, and the request slot is
 * free at once.
 *
 * Each read goes O_DIRECT straight into a 4 KiB-aligned pooled dlc_buf
 * (buf.c) sized for the file rounded up to 4 KiB, so that misses neither
 * pollute nor depend on the page cache, and the bytes are never copied:
 * the buffer the kernel filled is the one the decoder reads and the
 * cache keeps. O_DIRECT is asked for per file, once it is known to be a
 * regular file: where a file system refuses it (ramfs, some FUSE), that
 * file is read buffered (logged once), and the next file asks again; one
 * file never turns O_DIRECT off for the others. Short reads continue
 * where they stopped; EINTR and EAGAIN resubmit. Reads are split in
 * chunks of at most max_read_bytes (DLC_READ_CHUNK_MAX when 0): sizes are
 * 64-bit throughout, io_uring lengths 32-bit.
 *
 * The target memory is not registered with io_uring (fixed buffers would
 * need the pool's blocks registered; measured, the pinning a plain read
 * does per request costs less than the copy out of a registered slot).
 *
 * A range read (dlc_reader_queue_range) reads part of a file the caller
 * holds open: one READ (or a few), no open, statx or close.
 *
 * An NVMe read (dlc_reader_queue_nvme) reads part of a namespace with
 * NVMe Read commands sent as IORING_OP_URING_CMD on its generic character
 * device, bypassing the file system and the block layer; the ring then
 * has 128-byte SQEs (the command is in the SQE) and 32-byte CQEs. The
 * completion's res is the NVMe status (0: success) or -errno.
 *
 * The open asks for O_NONBLOCK (a FIFO or a file under a lease must not
 * block it; statx then refuses anything but a regular file), taken off
 * again before the first read. With a deadline (read_timeout_ms), every
 * operation of a path read or a file range read carries a linked timeout
 * (IORING_OP_LINK_TIMEOUT) at the request's deadline: the kernel cancels
 * what has not completed by then and the read fails with -ETIMEDOUT. An
 * operation the kernel cannot cancel (an io-wq worker in an
 * uninterruptible wait: a hard NFS mount that stopped answering) is given
 * up on at the deadline all the same: -ETIMEDOUT is reported, and the
 * request keeps its slot (and its memory) until the kernel completes it.
 * NVMe commands have none: the driver times them out itself.
 *
 * A second eventfd read sits on the ring at all times, so that another
 * thread can wake the owner out of io_uring_wait_cqe() by writing to it.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/nvme_ioctl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "nvme.h"
#include "reader.h"

#define DIO_ALIGN	4096U
#define WAKE_TAG	0ULL	/* user_data of the eventfd read */
#define WATCH_TAG	UINT64_MAX /* user_data of the watched fd's poll */
#define CLOSE_TAG	(UINT64_MAX - 1) /* a close: its completion is dropped */
/* A linked timeout: the request's index in the low 32 bits. */
#define TIMEOUT_TAG	(1ULL << 62)
/* After its deadline, how long destroy waits for an operation. */
#define STUCK_GRACE_NS	1000000000ULL

enum req_state { RQ_OPEN, RQ_STATX, RQ_READ, RQ_NVME };

#define NVME_CMD_READ	0x02	/* NVM command set: Read */
#define NVME_SC_DNR	0x4000	/* status: Do Not Retry */
#define NVME_TRIES	3	/* a retryable status: sent this often at most */

struct dlc_read_req {
	int fd;
	int direct;		/* fd has O_DIRECT */
	int busy;		/* slot in use */
	int range;		/* a range of the caller's fd: not ours to close */
	enum req_state state;	/* the operation on the ring */
	uint64_t start;		/* file offset of out->data - lead */
	uint32_t lead;		/* bytes read before the sample (range) */
	uint64_t size;		/* bytes to read from start (statx, range) */
	uint64_t done;		/* bytes read so far */
	uint32_t asked;		/* length of the read in flight */
	struct dlc_buf *out;	/* the result, read into directly */
	uint64_t tag;
	uint64_t t0;
	int dirfd;		/* what path is relative to: AT_FDCWD or the caller's */
	/* CLOCK_MONOTONIC ns past which it fails (-ETIMEDOUT), 0: never */
	uint64_t deadline;
	struct __kernel_timespec deadline_ts;	/* the same, for the kernel */
	/*
	 * Reported timed out while its operation was still on the ring: the
	 * slot, its buffer and stx stay the kernel's until it completes.
	 */
	int abandoned;
	char *path;		/* a copy: io_uring reads it at submit */
	struct statx stx;	/* written when the statx completes */
	/* RQ_NVME: the namespace, the bytes asked for, sends of this chunk */
	struct dlc_nvme_target nvme;
	uint32_t want;
	uint32_t tries;
};

struct dlc_reader {
	struct io_uring ring;
	struct dlc_reader_opts o;
	struct dlc_read_req *req;
	uint32_t *free_list;
	uint32_t nfree;
	uint32_t inflight;
	int direct_logged;	/* a file refused O_DIRECT: said once */
	uint64_t timeout_ns;	/* read_timeout_ms, 0: no deadline */
	int unsubmitted;	/* SQEs prepared since the last submit */
	int wake_fd;
	uint64_t wake_val;
	int wake_armed;
	int watch_armed;	/* a poll of a watched fd is on the ring */
	uint32_t watch_events;	/* poll events the watch reported, not taken */
	/* Requests that failed before reaching the ring: the next reap. */
	struct dlc_read_done *early;
	uint32_t nearly;
};

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* An SQE, submitting what is prepared to make room when the SQ is full. */
static struct io_uring_sqe *get_sqe(struct dlc_reader *r)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);

	if (!sqe && dlc_reader_submit(r) == 0)
		sqe = io_uring_get_sqe(&r->ring);
	if (sqe)
		r->unsubmitted = 1;
	return sqe;
}

static int arm_wake(struct dlc_reader *r)
{
	struct io_uring_sqe *sqe = get_sqe(r);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_read(sqe, r->wake_fd, &r->wake_val, sizeof(r->wake_val),
			   0);
	io_uring_sqe_set_data64(sqe, WAKE_TAG);
	r->wake_armed = 1;
	return 0;
}

int dlc_reader_create(const struct dlc_reader_opts *o, struct dlc_reader **out)
{
	struct dlc_reader *r;
	uint32_t i, qd = o->queue_depth;
	int ret;

	if (!qd || qd > 4096)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->o = *o;
	r->timeout_ns = (uint64_t)o->read_timeout_ms * 1000000ULL;
	r->wake_fd = -1;
	r->req = calloc(qd, sizeof(*r->req));
	r->free_list = calloc(qd, sizeof(*r->free_list));
	r->early = calloc(qd, sizeof(*r->early));
	if (!r->req || !r->free_list || !r->early)
		goto err_free;
	for (i = 0; i < qd; i++) {
		r->free_list[i] = qd - 1 - i;
		r->req[i].fd = -1;
	}
	r->nfree = qd;

	r->wake_fd = eventfd(0, EFD_CLOEXEC);
	if (r->wake_fd < 0) {
		ret = -errno;
		goto err_free_ret;
	}
	/*
	 * One operation and its linked timeout per request, a close per
	 * request just released, the wake-up read, a watched fd's poll and
	 * a cancel.
	 */
	ret = io_uring_queue_init(3 * qd + 3, &r->ring, o->passthru ?
				  IORING_SETUP_SQE128 | IORING_SETUP_CQE32 : 0);
	if (ret)
		goto err_free_ret;
	ret = arm_wake(r);
	if (!ret)
		ret = dlc_reader_submit(r);
	if (ret)
		goto err_exit_ring;
	*out = r;
	return 0;

err_exit_ring:
	io_uring_queue_exit(&r->ring);
err_free_ret:
	if (r->wake_fd >= 0)
		close(r->wake_fd);
	free(r->req);
	free(r->free_list);
	free(r->early);
	free(r);
	return ret;
err_free:
	ret = -ENOMEM;
	goto err_free_ret;
}

/*
 * The linked timeout of request @q completed with @res. -ECANCELED: the
 * operation completed first; -ETIME: it fired and cancelled it (whose
 * completion follows); else (-EALREADY, -ENOENT) the kernel could not
 * cancel it (an io-wq worker in an uninterruptible wait). Gives up on @q (returns 1) when that is so and its deadline has
 * passed (a timeout of the slot's previous request has not: its deadline
 * is later); the operation's completion then only frees the slot.
 */
static int give_up(struct dlc_read_req *q, int res)
{
	if (res == -ECANCELED || res == -ETIME || !q->busy || q->abandoned ||
	    !q->deadline ||
	    dlc_now_ns() < q->deadline)
		return 0;
	q->abandoned = 1;
	return 1;
}

/* Every request in flight is given up on, or past its deadline and grace. */
static int all_stuck(const struct dlc_reader *r)
{
	uint64_t now = dlc_now_ns();
	uint32_t i;

	for (i = 0; i < r->o.queue_depth; i++) {
		const struct dlc_read_req *q = &r->req[i];

		if (q->busy && !q->abandoned &&
		    (!q->deadline || now < q->deadline + STUCK_GRACE_NS))
			return 0;
	}
	return 1;
}

/*
 * Wait until the kernel is done with the requests' memory: cancel what is
 * on the ring and reap until every request in flight has completed.
 * io_uring_queue_exit() does not wait: the ring is torn down after its fd
 * is closed, and a read still in flight then (an O_DIRECT transfer, an
 * io-wq worker's copy) lands in a buffer already back in the pool or
 * freed, which corrupts whatever uses that memory next. Stops early when
 * every request left is past its deadline (read_timeout_ms) and a grace
 * (the kernel cannot cancel them: a hung origin), else after @secs
 * seconds. Requests still in flight stay busy (their buffers and the
 * statx targets in r->req must be leaked, not freed); returns how many,
 * normally 0.
 */
static uint32_t quiesce(struct dlc_reader *r, unsigned int secs)
{
	struct __kernel_timespec ts = { .tv_nsec = 100000000 };
	uint64_t end = dlc_now_ns() + secs * 1000000000ULL, ud;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct dlc_read_req *q;
	int res;

	if (!r->inflight)
		return 0;
	sqe = get_sqe(r);
	if (sqe) {
		io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
		io_uring_sqe_set_data64(sqe, CLOSE_TAG);
	}
	io_uring_submit(&r->ring);
	while (r->inflight && dlc_now_ns() < end && !all_stuck(r)) {
		if (io_uring_wait_cqe_timeout(&r->ring, &cqe, &ts))
			continue;
		ud = cqe->user_data;
		res = cqe->res;
		io_uring_cqe_seen(&r->ring, cqe);
		if (ud == WAKE_TAG || ud == WATCH_TAG || ud == CLOSE_TAG)
			continue;
		if (ud & TIMEOUT_TAG) {
			give_up(&r->req[(uint32_t)ud], res);
			continue;
		}
		/* Its operation is done: its memory is free to release. */
		q = &r->req[ud - 1];
		q->busy = 0;
		r->inflight--;
	}
	return r->inflight;
}

void dlc_reader_destroy(struct dlc_reader *r)
{
	struct dlc_read_req *q;
	uint32_t i, stuck;

	if (!r)
		return;
	stuck = quiesce(r, 30);
	if (stuck)
		dlc_logf(r->o.log, DLC_LOG_WARN,
			 "%u reads still in flight at teardown (a hung file system?): their memory is left allocated",
			 stuck);
	io_uring_queue_exit(&r->ring);
	for (i = 0; i < r->o.queue_depth; i++) {
		q = &r->req[i];
		if (q->fd >= 0 && !q->range)
			close(q->fd);
		/* An operation that never completed may still write: leak. */
		if (q->busy)
			continue;
		dlc_buf_put(q->out);
		free(q->path);
	}
	for (i = 0; i < r->nearly; i++)
		dlc_buf_put(r->early[i].buf);
	close(r->wake_fd);
	/* A late statx writes into its request's stx: r->req stays then. */
	if (!stuck)
		free(r->req);
	else
		dlc_leave_to_kernel(r->req);
	free(r->free_list);
	free(r->early);
	free(r);
}

int dlc_reader_watch(struct dlc_reader *r, int fd)
{
	struct io_uring_sqe *sqe;

	if (r->watch_armed)
		return 0;
	sqe = get_sqe(r);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_add(sqe, fd, POLLIN);
	io_uring_sqe_set_data64(sqe, WATCH_TAG);
	r->watch_armed = 1;
	return dlc_reader_submit(r);
}

int dlc_reader_unwatch(struct dlc_reader *r)
{
	struct io_uring_sqe *sqe;

	if (!r->watch_armed)
		return 0;
	sqe = get_sqe(r);
	if (!sqe)
		return -EBUSY;
	/* The poll completes with -ECANCELED under WATCH_TAG. */
	io_uring_prep_poll_remove(sqe, WATCH_TAG);
	io_uring_sqe_set_data64(sqe, CLOSE_TAG);
	return dlc_reader_submit(r);
}

uint32_t dlc_reader_watch_events(struct dlc_reader *r)
{
	uint32_t ev = r->watch_events;

	r->watch_events = 0;
	return ev;
}

uint32_t dlc_reader_inflight(const struct dlc_reader *r)
{
	return r->inflight + r->nearly;
}

void dlc_reader_wake(struct dlc_reader *r)
{
	uint64_t one = 1;

	if (write(r->wake_fd, &one, sizeof(one)) < 0) {
		/* The counter is saturated only if nobody reads: harmless. */
	}
}

/* Free @q's slot now; its fd is closed through the ring. */
static void release(struct dlc_reader *r, struct dlc_read_req *q)
{
	struct io_uring_sqe *sqe;

	if (q->fd >= 0 && !q->range) {
		sqe = get_sqe(r);
		if (sqe) {
			io_uring_prep_close(sqe, q->fd);
			io_uring_sqe_set_data64(sqe, CLOSE_TAG);
		} else {
			close(q->fd);
		}
	}
	q->fd = -1;
	dlc_buf_put(q->out);
	q->out = NULL;
	free(q->path);
	q->path = NULL;
	q->busy = 0;
	q->abandoned = 0;
	r->free_list[r->nfree++] = (uint32_t)(q - r->req);
}

/* An SQE for @q's next operation; with a deadline, room for its timeout. */
static struct io_uring_sqe *op_sqe(struct dlc_reader *r,
				   struct dlc_read_req *q)
{
	if (q->deadline && io_uring_sq_space_left(&r->ring) < 2)
		dlc_reader_submit(r);
	return get_sqe(r);
}

/*
 * Link a timeout at @q's deadline to @sqe (@q's operation, prepared):
 * the kernel cancels the operation when it has not completed by then.
 */
static void link_deadline(struct dlc_reader *r, struct dlc_read_req *q,
			  struct io_uring_sqe *sqe)
{
	struct io_uring_sqe *t;

	if (!q->deadline)
		return;
	t = io_uring_get_sqe(&r->ring);
	if (!t)
		return;		/* op_sqe() made room; a failed submit did not */
	sqe->flags |= IOSQE_IO_LINK;
	io_uring_prep_link_timeout(t, &q->deadline_ts, IORING_TIMEOUT_ABS);
	io_uring_sqe_set_data64(t, TIMEOUT_TAG | (uint64_t)(q - r->req));
}

/* Prepare the next read of @q; the caller submits. */
static int prep_read(struct dlc_reader *r, struct dlc_read_req *q)
{
	struct io_uring_sqe *sqe = op_sqe(r, q);
	uint64_t cap = r->o.max_read_bytes ? r->o.max_read_bytes :
		       DLC_READ_CHUNK_MAX;
	uint64_t len = q->size - q->done;
	uint8_t *dst = q->out->data - q->lead + q->done;

	if (!sqe)
		return -EBUSY;
	if (len > cap)
		len = cap;
	if (q->direct) {
		/* O_DIRECT wants aligned offsets and lengths. */
		len = align_up(len, DIO_ALIGN);
		if (len > cap && len > DIO_ALIGN)
			len -= DIO_ALIGN;
	}
	/* Within 32 bits: cap is, and DLC_READ_CHUNK_MAX is aligned. */
	q->asked = (uint32_t)len;
	io_uring_prep_read(sqe, q->fd, dst, q->asked, q->start + q->done);
	io_uring_sqe_set_data64(sqe, (uint64_t)(q - r->req) + 1);
	link_deadline(r, q, sqe);
	return 0;
}

/* Prepare the next NVMe Read command of @q; the caller submits. */
static int prep_nvme(struct dlc_reader *r, struct dlc_read_req *q)
{
	struct io_uring_sqe *sqe = get_sqe(r);
	const struct dlc_nvme_target *t = &q->nvme;
	uint64_t len = q->size - q->done, slba;
	struct nvme_uring_cmd *c;

	if (!sqe)
		return -EBUSY;
	if (len > t->max_xfer)
		len = t->max_xfer;
	slba = (q->start + q->done) >> t->lba_shift;
	/* The whole 128-byte entry: the command lives in its second half. */
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = t->fd;
	sqe->cmd_op = NVME_URING_CMD_IO;
	c = (struct nvme_uring_cmd *)sqe->cmd;
	c->opcode = NVME_CMD_READ;
	c->nsid = t->nsid;
	c->addr = (uint64_t)(uintptr_t)(q->out->data - q->lead + q->done);
	c->data_len = (uint32_t)len;
	c->cdw10 = (uint32_t)slba;
	c->cdw11 = (uint32_t)(slba >> 32);
	c->cdw12 = (uint32_t)(len >> t->lba_shift) - 1;	/* 0's based */
	q->asked = (uint32_t)len;
	io_uring_sqe_set_data64(sqe, (uint64_t)(q - r->req) + 1);
	return 0;
}

/* Prepare @q's operation in its state; the caller submits. */
static int prep_op(struct dlc_reader *r, struct dlc_read_req *q)
{
	struct io_uring_sqe *sqe;

	if (q->state == RQ_READ)
		return prep_read(r, q);
	if (q->state == RQ_NVME)
		return prep_nvme(r, q);
	sqe = op_sqe(r, q);
	if (!sqe)
		return -EBUSY;
	/*
	 * O_NONBLOCK: opening a FIFO (or a file another process holds a
	 * lease on) returns at once; statx then refuses it. O_DIRECT comes
	 * after statx, per file (set_flags()).
	 */
	if (q->state == RQ_OPEN)
		io_uring_prep_openat(sqe, q->dirfd, q->path,
				     O_RDONLY | O_CLOEXEC | O_NONBLOCK |
				     O_NOCTTY, 0);
	else
		io_uring_prep_statx(sqe, q->fd, "", AT_EMPTY_PATH,
				    STATX_TYPE | STATX_SIZE | STATX_MTIME,
				    &q->stx);
	io_uring_sqe_set_data64(sqe, (uint64_t)(q - r->req) + 1);
	link_deadline(r, q, sqe);
	return 0;
}

static void fail_early(struct dlc_reader *r, uint64_t tag, int err,
		       const char *why, struct dlc_buf *buf)
{
	struct dlc_read_done *d = &r->early[r->nearly++];

	d->tag = tag;
	d->err = err;
	d->why = why;
	d->buf = buf;
}

/* A file refused O_DIRECT: say so the first time only. */
static void direct_refused(struct dlc_reader *r, const char *path, int err)
{
	if (r->direct_logged)
		return;
	r->direct_logged = 1;
	dlc_logf(r->o.log, DLC_LOG_WARN,
		 "O_DIRECT refused for %s (%s); reading it, and any other file that refuses it, buffered",
		 path, strerror(err));
}

/*
 * @q's fd is a regular file: take O_NONBLOCK off (before 5.x-era kernels
 * gave io_uring reads of O_NONBLOCK files -EAGAIN on a page cache miss)
 * and ask for O_DIRECT, which this file alone may refuse.
 */
static int set_flags(struct dlc_reader *r, struct dlc_read_req *q)
{
	int fl = fcntl(q->fd, F_GETFL);

	if (fl < 0)
		return -errno;
	fl &= ~O_NONBLOCK;
	q->direct = 0;
	if (r->o.direct) {
		if (!fcntl(q->fd, F_SETFL, fl | O_DIRECT)) {
			q->direct = 1;
			return 0;
		}
		direct_refused(r, q->path, errno);
	}
	return fcntl(q->fd, F_SETFL, fl) ? -errno : 0;
}

static void drop_direct(struct dlc_reader *r, struct dlc_read_req *q, int err)
{
	int fl = fcntl(q->fd, F_GETFL);

	if (fl >= 0)
		fcntl(q->fd, F_SETFL, fl & ~O_DIRECT);
	q->direct = 0;
	direct_refused(r, q->path, err);
}

/* A free request slot for @tag, reset; the caller checked there is one. */
static struct dlc_read_req *claim(struct dlc_reader *r, uint64_t tag)
{
	struct dlc_read_req *q = &r->req[r->free_list[--r->nfree]];

	q->busy = 1;
	q->fd = -1;
	q->range = 0;
	q->start = 0;
	q->lead = 0;
	q->size = 0;
	q->done = 0;
	q->tag = tag;
	q->t0 = dlc_now_ns();
	q->deadline = 0;
	q->abandoned = 0;
	q->path = NULL;
	q->out = NULL;
	return q;
}

/* @q fails with -ETIMEDOUT unless done within read_timeout_ms. */
static void set_deadline(struct dlc_reader *r, struct dlc_read_req *q)
{
	if (!r->timeout_ns)
		return;
	q->deadline = q->t0 + r->timeout_ns;
	q->deadline_ts.tv_sec = (int64_t)(q->deadline / 1000000000ULL);
	q->deadline_ts.tv_nsec = (long long)(q->deadline % 1000000000ULL);
}

/*
 * Put @q's first operation on the ring, or, when its setup failed to
 * allocate (!@ready), report -ENOMEM at the next reap.
 */
static int launch(struct dlc_reader *r, struct dlc_read_req *q, int ready)
{
	uint64_t tag = q->tag;

	if (!ready) {
		release(r, q);
		fail_early(r, tag, -ENOMEM, "allocate", NULL);
		return 0;
	}
	if (prep_op(r, q)) {
		release(r, q);
		return -EBUSY;
	}
	r->inflight++;
	return 0;
}

int dlc_reader_queue(struct dlc_reader *r, const char *path, uint64_t tag)
{
	return dlc_reader_queue_at(r, AT_FDCWD, path, tag);
}

int dlc_reader_queue_at(struct dlc_reader *r, int dirfd, const char *path,
			uint64_t tag)
{
	struct dlc_read_req *q;

	if (!r->nfree || r->nearly + r->inflight >= r->o.queue_depth)
		return -EBUSY;
	q = claim(r, tag);
	q->direct = 0;
	q->state = RQ_OPEN;
	q->dirfd = dirfd;
	q->path = strdup(path);
	set_deadline(r, q);
	return launch(r, q, q->path != NULL);
}

int dlc_reader_queue_buf(struct dlc_reader *r, struct dlc_buf *buf,
			 uint64_t tag)
{
	if (!r->nfree || r->nearly + r->inflight >= r->o.queue_depth) {
		dlc_buf_put(buf);
		return -EBUSY;
	}
	fail_early(r, tag, 0, NULL, buf);
	return 0;
}

/* A read of 0 bytes: an empty buffer at the next reap, nothing on the ring. */
static int queue_empty(struct dlc_reader *r, uint64_t tag)
{
	struct dlc_buf *b = dlc_buf_alloc(0);

	fail_early(r, tag, b ? 0 : -ENOMEM, b ? NULL : "allocate", b);
	return 0;
}

/*
 * A request for bytes [@off, @off + @len) read from @off - @lead into a
 * pooled buffer whose data starts at @off; q->out is NULL when it could
 * not be allocated (launch() reports that).
 */
static struct dlc_read_req *claim_range(struct dlc_reader *r, uint64_t tag,
					enum req_state state, uint64_t off,
					uint32_t len, uint32_t lead)
{
	struct dlc_read_req *q = claim(r, tag);

	q->range = 1;
	q->direct = 0;
	q->state = state;
	q->start = off - lead;
	q->lead = lead;
	q->size = (uint64_t)lead + len;
	q->out = dlc_buf_alloc_io(len, lead);
	return q;
}

static int queue_range(struct dlc_reader *r, int fd, uint64_t off,
		       uint32_t len, int direct, uint64_t tag, int timed)
{
	struct dlc_read_req *q;
	uint32_t lead = direct ? (uint32_t)(off % DIO_ALIGN) : 0;

	if (fd < 0 || off > UINT64_MAX - len)
		return -EINVAL;
	if (!r->nfree || r->nearly + r->inflight >= r->o.queue_depth)
		return -EBUSY;
	if (!len)
		return queue_empty(r, tag);
	q = claim_range(r, tag, RQ_READ, off, len, lead);
	q->fd = fd;
	q->direct = !!direct;
	if (timed)
		set_deadline(r, q);
	return launch(r, q, q->out != NULL);
}

int dlc_reader_queue_range(struct dlc_reader *r, int fd, uint64_t off,
			   uint32_t len, int direct, uint64_t tag)
{
	return queue_range(r, fd, off, len, direct, tag, 0);
}

int dlc_reader_queue_file_range(struct dlc_reader *r, int fd, uint64_t off,
				uint32_t len, int direct, uint64_t tag)
{
	return queue_range(r, fd, off, len, direct, tag, 1);
}

int dlc_reader_queue_nvme(struct dlc_reader *r, const struct dlc_nvme_target *t,
			  uint64_t off, uint32_t len, uint64_t tag)
{
	uint32_t lead = (uint32_t)(off % DIO_ALIGN), lba;
	struct dlc_read_req *q;

	if (!r->o.passthru || !t || t->fd < 0 || t->lba_shift < 9 ||
	    t->lba_shift > 12 || off > UINT64_MAX - len - DIO_ALIGN)
		return -EINVAL;
	lba = 1U << t->lba_shift;
	if (t->max_xfer < lba || t->max_xfer % lba)
		return -EINVAL;
	if (!r->nfree || r->nearly + r->inflight >= r->o.queue_depth)
		return -EBUSY;
	if (!len)
		return queue_empty(r, tag);
	/* From a 4 KiB boundary, so from an LBA's. */
	q = claim_range(r, tag, RQ_NVME, off, len, lead);
	q->nvme = *t;
	/* NLB is 16 bits: at most 65536 blocks a command. */
	if (q->nvme.max_xfer >> t->lba_shift > 65536)
		q->nvme.max_xfer = 65536U << t->lba_shift;
	q->tries = 0;
	q->want = len;
	q->size = align_up(q->size, lba);	/* whole LBAs */
	return launch(r, q, q->out != NULL);
}

int dlc_reader_submit(struct dlc_reader *r)
{
	int ret;

	do {
		ret = io_uring_submit(&r->ring);
	} while (ret == -EINTR || ret == -EAGAIN);
	if (ret >= 0)
		r->unsubmitted = 0;
	return ret < 0 ? ret : 0;
}

/* Set @d to an error of @q; returns 1 (finished). */
const char dlc_read_direct_refused[] =
	"O_DIRECT read refused (queue it again with direct = 0, on a buffered fd)";

const char dlc_read_timed_out[] = "read within read_timeout_ms";

static int finish_err(struct dlc_read_done *d, int err, const char *why)
{
	d->err = err;
	d->why = why;
	return 1;
}

/* The open or the statx of @q completed with @res. */
static int opened(struct dlc_reader *r, struct dlc_read_req *q, int res,
		  struct dlc_read_done *d)
{
	const struct statx *sx = &q->stx;

	int ret;

	if (q->state == RQ_OPEN) {
		if (res < 0)
			return finish_err(d, res, "open");
		q->fd = res;
		q->state = RQ_STATX;
		return prep_op(r, q) ? finish_err(d, -EIO, "resubmit") : 0;
	}
	if (res < 0)
		return finish_err(d, res, "stat");
	if (r->o.stat_hook)
		r->o.stat_hook(r->o.stat_hook_arg, q->path);
	if (!S_ISREG(sx->stx_mode))
		return finish_err(d, S_ISDIR(sx->stx_mode) ? -EISDIR : -EINVAL,
				  "not a regular file");
	if (r->o.max_file_bytes && sx->stx_size > r->o.max_file_bytes)
		return finish_err(d, -EFBIG, "file over max_file_bytes");
	if (sx->stx_size > SIZE_MAX - 2 * DIO_ALIGN)
		return finish_err(d, -EFBIG, "file larger than memory");
	q->size = sx->stx_size;
	if (!q->size) {
		d->buf = dlc_buf_alloc(0);
		return finish_err(d, d->buf ? 0 : -ENOMEM, "allocate");
	}
	/* Straight into the result: the bytes are never copied. */
	ret = set_flags(r, q);
	if (ret)
		return finish_err(d, ret, "fcntl");
	q->out = dlc_buf_alloc_io(q->size, 0);
	if (!q->out)
		return finish_err(d, -ENOMEM, "allocate");
	if (sx->stx_mask & STATX_MTIME)
		q->out->mtime_ns = (uint64_t)sx->stx_mtime.tv_sec * 1000000000ULL +
				   sx->stx_mtime.tv_nsec;
	q->state = RQ_READ;
	return prep_op(r, q) ? finish_err(d, -EIO, "resubmit") : 0;
}

static int finish_ok(struct dlc_reader *r, struct dlc_read_req *q,
		     struct dlc_read_done *d, uint64_t len);

/*
 * A read of range request @q completed with @res (not EINTR/EAGAIN).
 * The caller's fd is never changed: O_DIRECT refused comes back as
 * -EINVAL, and a short read that is not the end of the file resumes at
 * the last aligned offset (re-reading part of a page).
 */
static int range_read(struct dlc_reader *r, struct dlc_read_req *q, int res,
		      struct dlc_read_done *d)
{
	uint64_t before = q->done;

	if (res == -EINVAL && q->direct)
		return finish_err(d, -EINVAL, dlc_read_direct_refused);
	if (res < 0)
		return finish_err(d, res, "read");
	q->done += (uint64_t)res;
	if (q->done >= q->size)
		return finish_ok(r, q, d, q->size - q->lead);
	if (res == 0)
		return finish_err(d, -EIO, "short read");
	if ((uint32_t)res < q->asked)
		dlc_stat_add(r->o.stats->short_reads, 1);
	if (q->direct && (q->done % DIO_ALIGN)) {
		q->done &= ~(uint64_t)(DIO_ALIGN - 1);
		/* No whole page more: the file ends inside the range. */
		if (q->done <= before)
			return finish_err(d, -EIO, "short read");
	}
	return prep_read(r, q) ? finish_err(d, -EIO, "resubmit") : 0;
}

const char dlc_read_passthru_refused[] =
	"NVMe passthrough refused (read it through the block device)";

/* An NVMe Read of @q completed with @res: its status, or -errno. */
static int nvme_read(struct dlc_reader *r, struct dlc_read_req *q, int res,
		     struct dlc_read_done *d)
{
	if (res == -EACCES || res == -EPERM || res == -EOPNOTSUPP ||
	    res == -EINVAL || res == -ENOTTY)
		return finish_err(d, res, dlc_read_passthru_refused);
	if (res < 0)
		return finish_err(d, res, "NVMe passthrough read");
	if (res > 0) {
		dlc_logf(r->o.log, DLC_LOG_WARN,
			 "NVMe Read of LBA %llu (+%u bytes) on %d: status %#x%s",
			 (unsigned long long)((q->start + q->done) >>
					      q->nvme.lba_shift),
			 q->asked, q->nvme.fd, res,
			 res & NVME_SC_DNR ? " (do not retry)" : "");
		if (!(res & NVME_SC_DNR) && ++q->tries < NVME_TRIES) {
			dlc_stat_add(r->o.stats->retries, 1);
			return prep_nvme(r, q) ? finish_err(d, -EIO, "resubmit") : 0;
		}
		return finish_err(d, -EIO, dlc_nvme_status_str((uint32_t)res));
	}
	dlc_stat_add(r->o.stats->passthru_reads, 1);
	q->tries = 0;
	q->done += q->asked;
	if (q->done >= q->size)
		return finish_ok(r, q, d, q->want);
	return prep_nvme(r, q) ? finish_err(d, -EIO, "resubmit") : 0;
}

/* Handle one completion of @q; returns 1 when @q finished into @d. */
static int complete(struct dlc_reader *r, struct dlc_read_req *q, int res,
		    struct dlc_read_done *d)
{
	struct dlc_stats *st = r->o.stats;

	/* Cancelled by its linked timeout, or interrupted past it. */
	if ((res == -ECANCELED || res == -EINTR || res == -EAGAIN) &&
	    q->deadline && dlc_now_ns() >= q->deadline)
		return finish_err(d, -ETIMEDOUT, dlc_read_timed_out);
	/*
	 * An O_NONBLOCK open that would block: another process holds a
	 * lease on the file. Again at once would only spin.
	 */
	if (res == -EAGAIN && q->state == RQ_OPEN)
		return finish_err(d, res, "open (would block: a lease?)");
	if (res == -EINTR || res == -EAGAIN) {
		dlc_stat_add(st->retries, 1);
		return prep_op(r, q) ? finish_err(d, -EIO, "resubmit") : 0;
	}
	if (q->state == RQ_NVME)
		return nvme_read(r, q, res, d);
	if (q->state != RQ_READ)
		return opened(r, q, res, d);
	if (q->range)
		return range_read(r, q, res, d);
	if (res == -EINVAL && q->direct) {
		drop_direct(r, q, EINVAL);
		return prep_read(r, q) ? finish_err(d, -EIO, "resubmit") : 0;
	}
	if (res < 0)
		return finish_err(d, res, "read");
	q->done += (uint64_t)res;
	if (res > 0 && q->done < q->size) {
		if ((uint32_t)res < q->asked)
			dlc_stat_add(st->short_reads, 1);
		/* A short O_DIRECT read can leave the offset unaligned. */
		if (q->direct && (q->done % DIO_ALIGN))
			drop_direct(r, q, EINVAL);
		return prep_read(r, q) ? finish_err(d, -EIO, "resubmit") : 0;
	}
	if (q->done > q->size)	/* the file grew: keep what statx saw */
		q->done = q->size;
	return finish_ok(r, q, d, q->done);
}

/* @q read @len bytes of sample: hand its buffer over in @d. */
static int finish_ok(struct dlc_reader *r, struct dlc_read_req *q,
		     struct dlc_read_done *d, uint64_t len)
{
	struct dlc_stats *st = r->o.stats;

	d->buf = q->out;
	q->out = NULL;
	d->buf->len = len;
	d->err = 0;
	d->why = NULL;
	dlc_stat_add(st->reads, 1);
	dlc_stat_add(st->bytes_read, len);
	dlc_stat_add(st->read_ns, dlc_now_ns() - q->t0);
	if (q->direct)
		dlc_stat_add(st->direct_reads, 1);
	return 1;
}

int dlc_reader_reap(struct dlc_reader *r, struct dlc_read_done *done,
		    uint32_t max, int wait)
{
	struct io_uring_cqe *cqe;
	uint32_t n = 0;
	int ret;

	while (n < max && r->nearly)
		done[n++] = r->early[--r->nearly];

	for (;;) {
		if (n < max && wait && !n) {
			/* What the last completions prepared goes out first. */
			if (r->unsubmitted) {
				ret = dlc_reader_submit(r);
				if (ret)
					return ret;
			}
			ret = io_uring_wait_cqe(&r->ring, &cqe);
			if (ret == -EINTR)
				continue;
		} else {
			ret = io_uring_peek_cqe(&r->ring, &cqe);
		}
		if (ret == -EAGAIN || n >= max)
			break;
		if (ret < 0)
			return ret;

		uint64_t ud = io_uring_cqe_get_data64(cqe);
		int res = cqe->res;

		io_uring_cqe_seen(&r->ring, cqe);
		if (ud == CLOSE_TAG)
			continue;
		if (ud != WATCH_TAG && ud != WAKE_TAG && (ud & TIMEOUT_TAG)) {
			struct dlc_read_req *q = &r->req[(uint32_t)ud];

			if (give_up(q, res)) {
				done[n].tag = q->tag;
				done[n].buf = NULL;
				finish_err(&done[n++], -ETIMEDOUT,
					   dlc_read_timed_out);
			}
			continue;
		}
		if (ud == WATCH_TAG) {
			r->watch_armed = 0;
			if (res > 0)
				r->watch_events |= (uint32_t)res;
			wait = 0;
			continue;
		}
		if (ud == WAKE_TAG) {
			r->wake_armed = 0;
			arm_wake(r);
			/* A wake-up counts as an event: stop blocking. */
			wait = 0;
			continue;
		}
		struct dlc_read_req *q = &r->req[ud - 1];
		struct dlc_read_done *d = &done[n];

		if (q->abandoned) {
			/* Reported timed out: the kernel is done with it now. */
			r->inflight--;
			release(r, q);
			continue;
		}
		d->tag = q->tag;
		d->buf = NULL;
		if (complete(r, q, res, d)) {
			r->inflight--;
			release(r, q);
			n++;
		}
	}
	if (!r->wake_armed)
		arm_wake(r);
	if (r->unsubmitted) {
		ret = dlc_reader_submit(r);
		if (ret)
			return ret;
	}
	return (int)n;
}
