// SPDX-License-Identifier: MIT
/*
 * Batch reads of whole sample files through io_uring.
 *
 * Each read goes O_DIRECT into a 4 KiB-aligned registered buffer (one per
 * queue slot), so that misses neither pollute nor depend on the page
 * cache. Where a file system refuses O_DIRECT (tmpfs, some FUSE), reads
 * fall back to buffered I/O, logged once. Short reads continue where they
 * stopped; EINTR and EAGAIN resubmit. The finished bytes are copied into a
 * refcounted dlc_buf of the exact size so the slot is free again at once.
 *
 * A second eventfd read sits on the ring at all times, so that another
 * thread can wake the owner out of io_uring_wait_cqe() by writing to it.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

#define DIO_ALIGN	4096U
#define WAKE_TAG	0ULL	/* user_data of the eventfd read */
#define WATCH_TAG	UINT64_MAX /* user_data of the watched fd's poll */

struct dlc_read_req {
	int fd;
	int direct;		/* fd has O_DIRECT */
	int queued;		/* prepared, not yet handed to the kernel */
	int busy;		/* slot in use */
	uint64_t size;		/* bytes to read, from fstat */
	uint64_t done;		/* bytes read so far */
	uint32_t asked;		/* length of the read in flight */
	uint8_t *buf;		/* slot buffer, or big for large files */
	uint8_t *big;		/* aligned buffer for files over slot_bytes */
	uint64_t tag;
	uint64_t t0;
	const char *path;	/* the caller's string, for the fallback log */
};

struct dlc_reader {
	struct io_uring ring;
	struct dlc_reader_opts o;
	struct dlc_read_req *req;
	uint32_t *free_list;
	uint32_t nfree;
	uint32_t inflight;
	uint8_t *slots;		/* queue_depth x slot_bytes, aligned */
	int registered;		/* slots are registered buffers */
	int direct_ok;		/* O_DIRECT not refused yet */
	int wake_fd;
	uint64_t wake_val;
	int wake_armed;
	int watch_armed;	/* a poll of a watched fd is on the ring */
	/* Opens that failed: reported by the next reap. */
	struct dlc_read_done *early;
	uint32_t nearly;
};

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static int arm_wake(struct dlc_reader *r)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);

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
	struct iovec *iov;
	uint32_t i, qd = o->queue_depth;
	int ret;

	if (!qd || qd > 4096 || !o->slot_bytes || o->slot_bytes % DIO_ALIGN)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->o = *o;
	r->direct_ok = o->direct;
	r->wake_fd = -1;
	r->req = calloc(qd, sizeof(*r->req));
	r->free_list = calloc(qd, sizeof(*r->free_list));
	r->early = calloc(qd, sizeof(*r->early));
	if (!r->req || !r->free_list || !r->early)
		goto err_free;
	if (posix_memalign((void **)&r->slots, DIO_ALIGN,
			   (size_t)qd * o->slot_bytes))
		goto err_free;
	for (i = 0; i < qd; i++) {
		r->free_list[i] = qd - 1 - i;
		r->req[i].fd = -1;
		r->req[i].buf = r->slots + (size_t)i * o->slot_bytes;
	}
	r->nfree = qd;

	r->wake_fd = eventfd(0, EFD_CLOEXEC);
	if (r->wake_fd < 0) {
		ret = -errno;
		goto err_free_ret;
	}
	/* Two more entries: the wake-up read and a watched fd's poll. */
	ret = io_uring_queue_init(qd + 2, &r->ring, 0);
	if (ret)
		goto err_free_ret;

	iov = calloc(qd, sizeof(*iov));
	if (!iov) {
		ret = -ENOMEM;
		goto err_exit_ring;
	}
	for (i = 0; i < qd; i++) {
		iov[i].iov_base = r->req[i].buf;
		iov[i].iov_len = o->slot_bytes;
	}
	ret = io_uring_register_buffers(&r->ring, iov, qd);
	free(iov);
	if (ret) {
		/* Registered buffers count against RLIMIT_MEMLOCK. */
		dlc_logf(o->log, DLC_LOG_INFO,
			 "io_uring buffer registration failed (%s); using unregistered reads",
			 strerror(-ret));
	} else {
		r->registered = 1;
	}
	ret = arm_wake(r);
	if (!ret)
		ret = io_uring_submit(&r->ring) < 0 ? -EIO : 0;
	if (ret)
		goto err_exit_ring;
	*out = r;
	return 0;

err_exit_ring:
	io_uring_queue_exit(&r->ring);
err_free_ret:
	if (r->wake_fd >= 0)
		close(r->wake_fd);
	free(r->slots);
	free(r->req);
	free(r->free_list);
	free(r->early);
	free(r);
	return ret;
err_free:
	ret = -ENOMEM;
	goto err_free_ret;
}

void dlc_reader_destroy(struct dlc_reader *r)
{
	uint32_t i;

	if (!r)
		return;
	/* Exiting the ring cancels and waits for the reads in flight. */
	io_uring_queue_exit(&r->ring);
	for (i = 0; i < r->o.queue_depth; i++) {
		if (r->req[i].fd >= 0)
			close(r->req[i].fd);
		free(r->req[i].big);
	}
	for (i = 0; i < r->nearly; i++)
		dlc_buf_put(r->early[i].buf);
	close(r->wake_fd);
	free(r->slots);
	free(r->req);
	free(r->free_list);
	free(r->early);
	free(r);
}

int dlc_reader_watch(struct dlc_reader *r, int fd)
{
	struct io_uring_sqe *sqe;

	if (r->watch_armed)
		return 0;
	sqe = io_uring_get_sqe(&r->ring);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_add(sqe, fd, POLLIN);
	io_uring_sqe_set_data64(sqe, WATCH_TAG);
	r->watch_armed = 1;
	return dlc_reader_submit(r);
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

static void release(struct dlc_reader *r, struct dlc_read_req *q)
{
	if (q->fd >= 0)
		close(q->fd);
	q->fd = -1;
	free(q->big);
	q->big = NULL;
	q->busy = 0;
	q->queued = 0;
	r->free_list[r->nfree++] = (uint32_t)(q - r->req);
}

/* Prepare the next read of @q; the caller submits. */
static int prep_read(struct dlc_reader *r, struct dlc_read_req *q)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
	uint64_t left = q->size - q->done, len = left;
	uint8_t *dst = (q->big ? q->big : q->buf) + q->done;

	if (!sqe)
		return -EBUSY;
	if (r->o.max_read_bytes && len > r->o.max_read_bytes)
		len = r->o.max_read_bytes;
	if (q->direct) {
		/* O_DIRECT wants aligned offsets and lengths. */
		len = align_up(len, DIO_ALIGN);
		if (r->o.max_read_bytes && len > r->o.max_read_bytes &&
		    len > DIO_ALIGN)
			len -= DIO_ALIGN;
	}
	q->asked = (uint32_t)len;
	if (r->registered && !q->big)
		io_uring_prep_read_fixed(sqe, q->fd, dst, (unsigned int)len,
					 q->done, (int)(q - r->req));
	else
		io_uring_prep_read(sqe, q->fd, dst, (unsigned int)len, q->done);
	io_uring_sqe_set_data64(sqe, (uint64_t)(q - r->req) + 1);
	q->queued = 1;
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

/* Stop asking for O_DIRECT, and say so the first time only. */
static void direct_refused(struct dlc_reader *r, const char *path, int err)
{
	if (!r->direct_ok)
		return;
	r->direct_ok = 0;
	dlc_logf(r->o.log, DLC_LOG_WARN,
		 "O_DIRECT refused for %s (%s); using buffered reads from now on",
		 path, strerror(err));
}

static void drop_direct(struct dlc_reader *r, struct dlc_read_req *q, int err)
{
	int fl = fcntl(q->fd, F_GETFL);

	if (fl >= 0)
		fcntl(q->fd, F_SETFL, fl & ~O_DIRECT);
	q->direct = 0;
	direct_refused(r, q->path, err);
}

int dlc_reader_queue(struct dlc_reader *r, const char *path, uint64_t tag)
{
	struct dlc_read_req *q;
	struct stat st;
	int fd, direct = r->direct_ok, ret;

	if (!r->nfree || r->nearly + r->inflight >= r->o.queue_depth)
		return -EBUSY;
	fd = open(path, O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
	if (fd < 0 && direct && errno == EINVAL) {
		direct_refused(r, path, EINVAL);
		direct = 0;
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0) {
		fail_early(r, tag, -errno, "open", NULL);
		return 0;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		fail_early(r, tag, ret, "stat", NULL);
		return 0;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		fail_early(r, tag, S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL,
			   "not a regular file", NULL);
		return 0;
	}
	if (r->o.max_file_bytes && (uint64_t)st.st_size > r->o.max_file_bytes) {
		close(fd);
		fail_early(r, tag, -EFBIG, "file over max_file_bytes", NULL);
		return 0;
	}
	if (st.st_size == 0) {
		struct dlc_buf *b = dlc_buf_alloc(0);

		close(fd);
		fail_early(r, tag, b ? 0 : -ENOMEM, "allocate", b);
		return 0;
	}

	q = &r->req[r->free_list[--r->nfree]];
	q->busy = 1;
	q->fd = fd;
	q->direct = direct;
	q->size = (uint64_t)st.st_size;
	q->done = 0;
	q->tag = tag;
	q->path = path;
	q->t0 = dlc_now_ns();
	if (align_up(q->size, DIO_ALIGN) > r->o.slot_bytes) {
		if (posix_memalign((void **)&q->big, DIO_ALIGN,
				   align_up(q->size, DIO_ALIGN))) {
			q->big = NULL;
			release(r, q);
			fail_early(r, tag, -ENOMEM, "allocate", NULL);
			return 0;
		}
	}
	ret = prep_read(r, q);
	if (ret) {
		release(r, q);
		return ret;
	}
	r->inflight++;
	return 0;
}

int dlc_reader_submit(struct dlc_reader *r)
{
	int ret;

	do {
		ret = io_uring_submit(&r->ring);
	} while (ret == -EINTR || ret == -EAGAIN);
	return ret < 0 ? ret : 0;
}

/* Handle one completion of @q; returns 1 when @q finished into @d. */
static int complete(struct dlc_reader *r, struct dlc_read_req *q, int res,
		    struct dlc_read_done *d)
{
	struct dlc_stats *st = r->o.stats;

	if (res == -EINTR || res == -EAGAIN) {
		dlc_stat_add(st->retries, 1);
		return prep_read(r, q) ? (d->err = -EIO, d->why = "resubmit", 1) : 0;
	}
	if (res == -EINVAL && q->direct) {
		drop_direct(r, q, EINVAL);
		return prep_read(r, q) ? (d->err = -EIO, d->why = "resubmit", 1) : 0;
	}
	if (res < 0) {
		d->err = res;
		d->why = "read";
		return 1;
	}
	q->done += (uint64_t)res;
	if (res > 0 && q->done < q->size) {
		if ((uint32_t)res < q->asked)
			dlc_stat_add(st->short_reads, 1);
		/* A short O_DIRECT read can leave the offset unaligned. */
		if (q->direct && (q->done % DIO_ALIGN))
			drop_direct(r, q, EINVAL);
		return prep_read(r, q) ? (d->err = -EIO, d->why = "resubmit", 1) : 0;
	}
	if (q->done > q->size)	/* the file grew: keep what fstat saw */
		q->done = q->size;
	d->buf = dlc_buf_alloc(q->done);
	if (!d->buf) {
		d->err = -ENOMEM;
		d->why = "allocate";
		return 1;
	}
	memcpy(d->buf->data, q->big ? q->big : q->buf, q->done);
	d->err = 0;
	d->why = NULL;
	dlc_stat_add(st->reads, 1);
	dlc_stat_add(st->bytes_read, q->done);
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
	int ret, resubmit = 0;

	while (n < max && r->nearly)
		done[n++] = r->early[--r->nearly];

	for (;;) {
		if (n < max && !resubmit && wait && !n) {
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
		if (ud == WATCH_TAG) {
			r->watch_armed = 0;
			wait = 0;
			continue;
		}
		if (ud == WAKE_TAG) {
			r->wake_armed = 0;
			if (!arm_wake(r))
				resubmit = 1;
			/* A wake-up counts as an event: stop blocking. */
			wait = 0;
			continue;
		}
		struct dlc_read_req *q = &r->req[ud - 1];
		struct dlc_read_done *d = &done[n];

		q->queued = 0;
		d->tag = q->tag;
		d->buf = NULL;
		if (complete(r, q, res, d)) {
			r->inflight--;
			release(r, q);
			n++;
		} else {
			resubmit = 1;
		}
		wait = 0;
	}
	if (resubmit || !r->wake_armed) {
		if (!r->wake_armed)
			arm_wake(r);
		ret = dlc_reader_submit(r);
		if (ret)
			return ret;
	}
	return (int)n;
}
