/* SPDX-License-Identifier: MIT */
/*
 * The io_uring reader (reader.c), used by one thread at a time: batch
 * reads of files, a pack, or NVMe namespaces through passthrough.
 * Internal to libdlcache; the public face is dlcache.h.
 */
#ifndef DLC_READER_H
#define DLC_READER_H

#include <stddef.h>
#include <stdint.h>

#include "dlcache.h"

struct dlc_buf;
struct dlc_logger;

/* The longest single read; longer files are read in chunks of it. */
#define DLC_READ_CHUNK_MAX	(1U << 30)

struct dlc_reader_opts {
	uint32_t queue_depth;	/* reads in flight at most */
	uint32_t direct;	/* try O_DIRECT */
	uint32_t max_read_bytes; /* split reads, 0: DLC_READ_CHUNK_MAX */
	uint64_t max_file_bytes; /* larger files fail with -EFBIG, 0: no limit */
	uint32_t slot_bytes;	/* unused: reads land in pooled buffers */
	/*
	 * 1: the ring has 128-byte SQEs and 32-byte CQEs, which NVMe
	 * passthrough (dlc_reader_queue_nvme) needs; creating it fails with
	 * the kernel's -EINVAL where io_uring has neither (before 5.19).
	 */
	uint32_t passthru;
	/*
	 * A path read or a file range read not done this many ms after it
	 * was queued fails with -ETIMEDOUT (why dlc_read_timed_out); 0: no
	 * deadline.
	 */
	uint32_t read_timeout_ms;
	const struct dlc_logger *log;
	struct dlc_stats *stats; /* counters to add to (atomics) */
	/*
	 * Tests: called on the reaping thread after a statx completes, before
	 * the first read is prepared (to change the file in between).
	 */
	void (*stat_hook)(void *arg, const char *path);
	void *stat_hook_arg;
};

struct dlc_reader;

/* A finished read: the bytes, or why there are none. */
struct dlc_read_done {
	uint64_t tag;		/* as submitted */
	int err;		/* 0 or negative errno */
	struct dlc_buf *buf;	/* reference owned by the caller when err == 0 */
	const char *why;	/* static text for err, e.g. "open" or "read" */
	/* The loader's: the read tier it was queued on (tier.h), 0: origin. */
	uint32_t tier;
};

int dlc_reader_create(const struct dlc_reader_opts *o, struct dlc_reader **out);
void dlc_reader_destroy(struct dlc_reader *r);

/* Reads submitted and not yet reaped. */
uint32_t dlc_reader_inflight(const struct dlc_reader *r);

/*
 * Queue an open of @path (copied), a statx of it and reads of the whole
 * file, tagged @tag; all of them, and the close, go through io_uring.
 * Returns 0, or -EBUSY when queue_depth reads are in flight. Open errors are not
 * returned here: they come back from dlc_reader_reap() like read errors.
 */
int dlc_reader_queue(struct dlc_reader *r, const char *path, uint64_t tag);
/*
 * dlc_reader_queue() of @path relative to the directory @dirfd (openat()
 * semantics, the caller's fd; AT_FDCWD: the same as dlc_reader_queue()):
 * a file inside a directory checked on its fd is opened there, never by
 * resolving a path again. @dirfd must stay open until the read is reaped.
 */
int dlc_reader_queue_at(struct dlc_reader *r, int dirfd, const char *path,
			uint64_t tag);
/*
 * A read whose bytes are in memory already: @buf (a reference the reader
 * takes, put on failure) comes back tagged @tag at the next reap, as a
 * read's would. Room counts as a read's: -EBUSY when there is none.
 */
int dlc_reader_queue_buf(struct dlc_reader *r, struct dlc_buf *buf,
			 uint64_t tag);

/*
 * Queue a read of bytes [@off, @off + @len) of @fd, which the caller
 * holds open (and closes, after the read is reaped: the reader never
 * closes it), tagged @tag. With @direct, @fd must have O_DIRECT: the
 * 4 KiB-aligned superset of the range is read into a pooled buffer whose
 * data starts at the range's first byte (no copy); a file system that
 * refuses the O_DIRECT read fails it with -EINVAL (why "O_DIRECT read
 * refused ...") and the caller queues it again with @direct = 0 on a
 * buffered fd. A range past the end of the file fails with -EIO, why
 * "short read". @len 0 gives an empty buffer. Returns 0, -EBUSY when
 * queue_depth reads are in flight, -EINVAL for fd < 0 or a range past
 * 2^64; other errors come from dlc_reader_reap().
 */
int dlc_reader_queue_range(struct dlc_reader *r, int fd, uint64_t off,
			   uint32_t len, int direct, uint64_t tag);
/*
 * dlc_reader_queue_range() of a regular file, under the reader's
 * read_timeout_ms (a range read of an eventfd, which waits on purpose,
 * has none).
 */
int dlc_reader_queue_file_range(struct dlc_reader *r, int fd, uint64_t off,
				uint32_t len, int direct, uint64_t tag);
/* The why of a read that passed its read_timeout_ms (-ETIMEDOUT). */
extern const char dlc_read_timed_out[];
/* The why of a range read whose O_DIRECT read was refused (-EINVAL). */
extern const char dlc_read_direct_refused[];

/* An NVMe namespace read with Read commands through io_uring (nvme.h). */
struct dlc_nvme_target {
	int fd;			/* its generic character device, the caller's */
	uint32_t nsid;
	uint32_t lba_shift;	/* log2 of its LBA bytes: 9..12 */
	uint32_t max_xfer;	/* bytes a command moves at most: LBA multiple */
};

/*
 * Queue a read of bytes [@off, @off + @len) of namespace @t (copied) as
 * NVMe Read commands, IORING_OP_URING_CMD on t->fd, each at most
 * t->max_xfer bytes, into a pooled buffer whose data starts at @off (the
 * LBA-aligned superset is read, as with O_DIRECT). The reader must have
 * been created with passthru (else -EINVAL). A completion status other
 * than success is retried twice unless it has Do Not Retry, then fails
 * with -EIO and a why that names the status (dlc_nvme_status_str()). A
 * kernel or device that refuses the command itself (-EACCES, -EPERM:
 * passthrough asks CAP_SYS_ADMIN on 6.1; -EOPNOTSUPP, -EINVAL, -ENOTTY)
 * fails it with that errno and why dlc_read_passthru_refused: the caller
 * reads it another way. Returns 0, -EBUSY when queue_depth reads are in
 * flight, -EINVAL for a bad target or range.
 */
int dlc_reader_queue_nvme(struct dlc_reader *r, const struct dlc_nvme_target *t,
			  uint64_t off, uint32_t len, uint64_t tag);
/* The why of an NVMe read that the kernel or device refused to send. */
extern const char dlc_read_passthru_refused[];

/* Hand queued reads to the kernel. */
int dlc_reader_submit(struct dlc_reader *r);

/*
 * Collect up to @max finished reads into @done. With @wait, blocks until
 * at least one read finishes or something else completes on the ring (a
 * wake-up: see dlc_reader_wake). Returns the number collected or -errno.
 */
int dlc_reader_reap(struct dlc_reader *r, struct dlc_read_done *done,
		    uint32_t max, int wait);

/*
 * Make the next blocking dlc_reader_reap() also return when @fd becomes
 * readable (one shot: call again after it fired).
 */
int dlc_reader_watch(struct dlc_reader *r, int fd);
/*
 * Cancel the watch, if armed, so that the ring holds no reference to the
 * watched fd's file once the caller closes it.
 */
int dlc_reader_unwatch(struct dlc_reader *r);
/* Poll events (POLLIN, POLLHUP, ...) the watch reported since last asked. */
uint32_t dlc_reader_watch_events(struct dlc_reader *r);

/* Wake a thread blocked in dlc_reader_reap(); any thread may call it. */
void dlc_reader_wake(struct dlc_reader *r);

#endif
