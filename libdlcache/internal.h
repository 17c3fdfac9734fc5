/* SPDX-License-Identifier: MIT */
/*
 * libdlcache internals shared between its files: logging, reference
 * counted sample buffers, the in-process cache, the io_uring reader and
 * the pinned batch memory.
 */
#ifndef DLC_INTERNAL_H
#define DLC_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <stddef.h>
#include <time.h>

#include "dlcache.h"
#include "policy.h"

/* ---- logging ---- */

struct dlc_logger {
	dlc_log_fn fn;
	void *arg;
	uint32_t level;
};

void dlc_logf(const struct dlc_logger *lg, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Memory left to the kernel on purpose (an io_uring operation that never
 * completed may still write into it, so it is never freed): not a leak
 * to LeakSanitizer, where one is linked in. What it points to neither.
 */
void __lsan_ignore_object(const void *p) __attribute__((weak));
static inline void dlc_leave_to_kernel(const void *p)
{
	if (__lsan_ignore_object && p)
		__lsan_ignore_object(p);
}

/*
 * Join @t, one of @nthreads threads each of which adds 1 to *@returned
 * (atomically) as its last touch of what it shares: bounded. A thread
 * whose io_uring holds an operation the kernel cannot cancel (a hard NFS
 * mount that stopped answering) cannot end: Linux makes its exit wait
 * for its io-wq workers. So once all @nthreads returned (none touches
 * shared memory any more), @t still not ended after 1 s is detached, said
 * on @log. Every wait of the threads on storage must have a deadline.
 */
void dlc_join_bounded(pthread_t t, const uint32_t *returned,
		      uint32_t nthreads, const struct dlc_logger *log);

static inline uint64_t dlc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#define dlc_stat_add(field, v) __atomic_fetch_add(&(field), (v), __ATOMIC_RELAXED)

/* ---- data set keys (index.c) ---- */

/*
 * SipHash-2-4 with 128-bit output (the index key's hash) over @magic and
 * then the @n byte ranges @parts[i] of @lens[i] bytes. A pack's key
 * (pack.c) and an index's use different magics, so they never collide.
 */
void dlc_key128(const char *magic, const void *const *parts,
		const size_t *lens, unsigned int n, uint64_t key[2]);

/*
 * The pack an index was loaded from (dlc_index_load() of a .dlp), or NULL
 * for an index of files. Owned by the index.
 */
struct dlc_pack;
const struct dlc_pack *dlc_index_pack(const struct dlc_index *idx);
/*
 * The index's own checks of a name read from a file, shared with the
 * pack reader: a class name (@len bytes) is not empty, ".", ".." and
 * holds no '/'; a relpath stays under the root (no absolute path, no
 * empty, "." or ".." component, at least "class/file"). 1 when valid.
 */
int dlc_index_class_name_ok(const char *s, size_t len);
int dlc_index_relpath_ok(const char *s);

/* ---- sample bytes ---- */

/*
 * The encoded bytes of one sample. Shared by the cache and the decode
 * queue; freed, or given back to the pool (buf.c), when the last
 * reference goes.
 */
struct dlc_buf {
	uint32_t refs;		/* atomic */
	uint32_t cls;		/* pool class of mem, or a private marker */
	uint32_t mapped;	/* mem is an mmap() of cap bytes */
	uint64_t crc_memo;	/* atomic: 1 << 32 | CRC-32C the bytes matched */
	/*
	 * A whole file's read (dlc_reader_queue()): its mtime, in ns since
	 * the epoch, as the read's statx saw it; 0: not known.
	 */
	uint64_t mtime_ns;
	size_t len;		/* bytes at data */
	uint8_t *data;		/* the sample's first byte */
	uint8_t *mem;		/* pooled: the 4 KiB-aligned block */
	size_t cap;		/* pooled: the block's bytes */
	struct dlc_buf *next;	/* pooled: on a free list */
};

/* Idle pooled bytes kept by default (dlc_buf_pool_set_idle_max). */
#define DLC_BUF_POOL_IDLE_MAX	(64ULL << 20)

/* @len bytes in one plain allocation, sized exactly (not pooled). */
struct dlc_buf *dlc_buf_alloc(size_t len);
/*
 * A buffer for a read of @len bytes whose data starts @lead (< 4096)
 * bytes past a 4 KiB-aligned address, with room from that address for
 * @lead + @len rounded up to 4 KiB: an O_DIRECT read of the aligned
 * superset of a range lands in it with the sample at data. From the pool
 * (never zeroed) up to 16 MiB, a private aligned block beyond. NULL for
 * lead >= 4096 or no memory.
 */
struct dlc_buf *dlc_buf_alloc_io(uint64_t len, uint32_t lead);
/*
 * A buffer whose data is @align-aligned (a power of two up to 4096):
 * dlc_buf_alloc_io(@len, 0).
 */
struct dlc_buf *dlc_buf_alloc_aligned(size_t len, size_t align);
/*
 * The memory @b really holds: its block for a pooled buffer (at most
 * 6.25 % and a page or two over len), len for a plain one. The cache
 * accounts this (and keeps an exact copy of a sample whose block is more
 * than 1/64 over it).
 */
size_t dlc_buf_footprint(const struct dlc_buf *b);
struct dlc_buf *dlc_buf_get(struct dlc_buf *b);
void dlc_buf_put(struct dlc_buf *b);

/*
 * Whether @b's bytes have CRC-32C @want. Their sum is computed once and
 * remembered on the buffer (its bytes never change once read), so a
 * cached sample is summed once, not at every hit.
 */
int dlc_buf_crc_matches(const struct dlc_buf *b, uint32_t want);

/* The block size the pool gives a read of @bytes (tests). */
uint64_t dlc_buf_class_bytes(uint64_t bytes);

struct dlc_buf_pool_stats {
	uint64_t allocated;	/* blocks allocated from the heap */
	uint64_t reused;	/* allocations served from a free list */
	uint64_t freed;		/* blocks freed (over the idle cap, trims) */
	uint64_t idle_bytes;	/* bytes on the free lists now */
	uint64_t idle_max;	/* the cap on them */
};
void dlc_buf_pool_stats(struct dlc_buf_pool_stats *out);
/* Cap the idle bytes (freeing what is over). */
void dlc_buf_pool_set_idle_max(size_t bytes);
/* Free every idle block: a loader going away calls it. */
void dlc_buf_pool_trim(void);

/* ---- in-process cache (used by the I/O thread only) ---- */

struct dlc_cache;

/*
 * A cache of up to @capacity bytes over @nsamples samples whose orders are
 * up to @epoch_len positions long.
 */
int dlc_cache_create(uint32_t nsamples, uint32_t epoch_len, uint64_t capacity,
		     struct dlc_cache **out);
void dlc_cache_destroy(struct dlc_cache *c);

/*
 * Make sure the orders of @epoch and @epoch + 1 are known, uploading them
 * with @fill (which writes one epoch's order); an epoch out of sequence
 * restarts the time line, keeping the cached bytes.
 */
int dlc_cache_prepare_epoch(struct dlc_cache *c, uint32_t epoch,
			    int (*fill)(void *arg, uint32_t epoch,
					uint32_t *ids, uint32_t len),
			    void *arg);

/*
 * (@epoch, @index) and every position before it are consumed: the sample
 * used there now ranks by its following use.
 */
void dlc_cache_advance(struct dlc_cache *c, uint32_t epoch, uint32_t index);

/* A new reference to the cached bytes of @id, or NULL on a miss. */
struct dlc_buf *dlc_cache_lookup(struct dlc_cache *c, uint32_t id);
/* Whether @id is cached now (no reference taken). */
int dlc_cache_contains(const struct dlc_cache *c, uint32_t id);

/*
 * Offer @b as the bytes of @id. Returns 1 when cached (the cache takes its
 * own reference), 0 when bypassed. Evicts as the policy says.
 */
int dlc_cache_offer(struct dlc_cache *c, uint32_t id, struct dlc_buf *b);

struct dlc_cache_counters {
	uint64_t evictions;
	uint64_t bypasses;
	uint64_t used;
	uint64_t capacity;
};
void dlc_cache_counters(const struct dlc_cache *c,
			struct dlc_cache_counters *out);

/* ---- io_uring reader (used by one thread at a time) ---- */

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

/* ---- where samples live (source.c) ---- */

struct dlc_source;
struct dlc_rst_geom;

/*
 * The storage of @idx's samples: its files, or its pack (opened here,
 * also with O_DIRECT when @direct and the file system allows it).
 */
int dlc_source_open(const struct dlc_index *idx, int direct,
		    struct dlc_source **out);
void dlc_source_close(struct dlc_source *s);
/*
 * When @s is a pack on an NVMe namespace with a generic character device
 * this process may open, read its samples through NVMe passthrough
 * (dlc_reader_queue_nvme: the reader must be created with passthru) and
 * return 1; else 0, logged on @log (kept for later messages) when the
 * namespace could have been. Only with O_DIRECT (the dlc_source_open()
 * @direct): passthrough bypasses the page cache just the same.
 */
int dlc_source_passthru(struct dlc_source *s, const struct dlc_logger *log);
/* Stop passthrough, logging @why once: O_DIRECT on the block device. */
void dlc_source_passthru_off(struct dlc_source *s, const char *why);
/* The pack, or NULL for a tree of files. */
const struct dlc_pack *dlc_source_pack(const struct dlc_source *s);
/* "ROOT/RELPATH", or "RELPATH in PACK": what messages call sample @id. */
void dlc_source_name(const struct dlc_source *s, uint32_t id, char *buf,
		     size_t len);
/*
 * Queue a read of sample @id's bytes on @r, tagged @tag (@scratch: path):
 * from the first read tier that holds it (tier.h: the tag then carries
 * the tier's number), else from the origin.
 */
int dlc_source_queue(struct dlc_source *s, struct dlc_reader *r,
		     uint32_t id, uint64_t tag, char *scratch, size_t len);
/*
 * Add a read tier, asked after those added before it and before the
 * origin. 0, or -ENOSPC past DLC_TIERS_MAX.
 */
struct dlc_tier;
int dlc_source_add_tier(struct dlc_source *s, const struct dlc_tier *t);
/*
 * A read of sample @id queued on read tier @d->tier ended: 0 when its
 * bytes are good (the tier's hit), or 1 when the tier refused them and
 * the read was queued again on the tiers after it (or the origin): @d is
 * not done after all. A requeue that fails leaves @d failed with its
 * errno, 0.
 */
int dlc_source_served(struct dlc_source *s, struct dlc_reader *r,
		      uint32_t id, struct dlc_read_done *d, char *scratch,
		      size_t len);
/* The origin's bytes @b of sample @id, offered to every read tier. */
void dlc_source_offer(struct dlc_source *s, uint32_t id, struct dlc_buf *b);
/*
 * A read of sample @id that @d reports done: when it is a pack's O_DIRECT
 * read the file system refused, every read from now on is buffered and
 * this one is queued again (returns 1: @d is not done after all; 2 the
 * first time, for the caller to log it once); when it is an NVMe command
 * the kernel refused, every read from now on is O_DIRECT (logged here
 * once) and this one is queued again (1). Else 0.
 */
int dlc_source_requeue(struct dlc_source *s, struct dlc_reader *r,
		       uint32_t id, const struct dlc_read_done *d);
/*
 * Read sample @id's bytes now, blocking the caller at most @s's read
 * timeout (dlc_source_set_timeout()): a file is opened O_NONBLOCK and
 * refused (-EINVAL) unless regular; files over @max: -EFBIG; past the
 * deadline -ETIMEDOUT, after dlc_source_cancel() -ECANCELED. Any thread.
 */
int dlc_source_read(struct dlc_source *s, uint32_t id, uint64_t max,
		    struct dlc_buf **out);
/*
 * The mtime (ns) of sample @id's file, by a statx of its path with
 * dlc_source_read()'s deadline and cancel: 0 or -errno (-ETIMEDOUT,
 * -ECANCELED). Any thread; a tree of files only.
 */
int dlc_source_mtime(struct dlc_source *s, uint32_t id, uint64_t *mtime_ns);
/*
 * dlc_source_read()'s deadline, @ms after it starts (0: none), and where
 * it says a file is not a regular one.
 */
void dlc_source_set_timeout(struct dlc_source *s, uint32_t ms,
			    const struct dlc_logger *log);
/*
 * Make every dlc_source_read() in progress or to come return -ECANCELED
 * within about 0.1 s (teardown: no thread waits on a hung origin).
 */
void dlc_source_cancel(struct dlc_source *s);
/*
 * 1 with @g and @rows (room for DLC_RST_MAX_ROWS + 1) filled when sample
 * @id is restart-indexed (a pack's DLC_PACK_RST), else 0.
 */
int dlc_source_rst(const struct dlc_source *s, uint32_t id,
		   struct dlc_rst_geom *g, uint32_t *rows);

/* ---- this process's cgroups (cgroup.c) ---- */

/* Read the text of @path into @buf of @len (NUL-terminated); -errno. */
int dlc_read_text(const char *path, char *buf, size_t len);
void dlc_cgroup_walk(const char *proc_cgroup, const char *root,
		     const char *ctl, const char *const *mounts,
		     int (*fn)(int v2, const char *dir, void *arg), void *arg);
/*
 * Parse a cgroup v2 memory.max ("max", "1073741824") or v1
 * memory.limit_in_bytes (its "no limit" is near 2^63) into bytes, 0 for
 * no limit. 0 or -EINVAL.
 */
int dlc_mem_parse(const char *text, uint64_t *bytes);
/*
 * The memory this process may use: the smallest memory limit of the
 * cgroups named in @proc_cgroup and their ancestors under the cgroup mount
 * @root (v2 memory.max, v1 root/memory/.../memory.limit_in_bytes), and
 * at most the machine's RAM.
 */
uint64_t dlc_mem_limit(const char *proc_cgroup, const char *root);

/* ---- usable CPUs (cpus.c) ---- */

/*
 * Parse a cgroup v2 cpu.max ("max 100000", "150000 100000") into CPUs
 * (0 for no limit), or v1's cpu.cfs_quota_us ("-1" none) over
 * cpu.cfs_period_us. 0 or -EINVAL.
 */
int dlc_cpu_parse_v2(const char *text, double *cpus);
int dlc_cpu_parse_v1(const char *quota_text, const char *period_text,
		     double *cpus);
/*
 * The smallest CPU quota of the cgroups named in @proc_cgroup (the format
 * of /proc/self/cgroup) and their ancestors, under the cgroup mount @root
 * (v2 there, v1 in root/cpu,cpuacct or root/cpu). 0 for no limit.
 */
double dlc_cpu_quota(const char *proc_cgroup, const char *root);
/* CPUs in this thread's sched_getaffinity() set. */
uint32_t dlc_cpu_affinity(void);
/* min(@affinity, ceil(@quota)) (no quota when <= 0), at least 1. */
uint32_t dlc_cpu_usable(uint32_t affinity, double quota);
/* The decode threads for decode_threads = 0: usable CPUs less one, >= 1. */
uint32_t dlc_default_decode_threads(void);

/* ---- pinned batch memory ---- */

struct dlc_pinned {
	void *base;
	size_t bytes;		/* mapped length */
	int locked;		/* mlock succeeded */
	int huge;		/* 2: hugetlbfs pages, 1: THP advised, 0: none */
	int lock_err;		/* errno of a failed mlock, else 0 */
};

/*
 * Map @bytes (rounded to 2 MiB), try huge pages, try mlock; a failed mlock
 * is warned about through @log (NULL: quiet, the caller warns once for
 * many with dlc_pinned_warn()). -EINVAL for 0 bytes, -ENOMEM.
 */
int dlc_pinned_alloc(size_t bytes, const struct dlc_logger *log,
		     struct dlc_pinned *out);
/* The warning for @bytes left unpinned by mlock's errno @err. */
void dlc_pinned_warn(const struct dlc_logger *log, size_t bytes, int err);
/* munlock @p (it stays mapped): memory that need not be pinned any more. */
void dlc_pinned_unlock(struct dlc_pinned *p);
void dlc_pinned_free(struct dlc_pinned *p);

/* ---- MCU-exact decode of restart-indexed JPEGs (decode.c, jpegrst.h) ---- */

struct dlc_rst_geom;

/*
 * dlc_decoder_sample() of a restart-indexed JPEG (@buf, @len) with its
 * geometry @g and MCU row table @rows from dlc_rst_parse() or a pack: the
 * same crop and DCT scale, but only the restart intervals covering the
 * decoded region plus one MCU around it are spliced (dlc_rst_splice())
 * and decoded. The output is bit-identical to dlc_decoder_sample_method()
 * with DLC_DECODE_CROP_FIRST_UNCHECKED on the same bytes. The rest of the
 * file is not read (the caller checks its CRC). Errors as
 * dlc_decoder_sample(): -EBADMSG (kind corrupt or truncated, message from
 * the splice or libjpeg), -E2BIG, -ENOMEM, -EINVAL.
 */
int dlc_decoder_sample_rst(struct dlc_decoder *d, const void *buf,
			   size_t len, const struct dlc_rst_geom *g,
			   const uint32_t *rows, const struct dlc_transform *t,
			   uint64_t seed, uint32_t epoch, uint32_t sample,
			   uint32_t layout, uint8_t *dst,
			   struct dlc_crop *crop_out);
/*
 * A decoder's budgets (dlc_config.max_scans, .decode_budget_ms): @max_scans
 * scans a JPEG may have (0: DLC_DEFAULT_MAX_SCANS), @budget_ms of the
 * calling thread's CPU time a decode call may take (0: by the image's
 * pixels, DLC_DEFAULT_DECODE_BUDGET_MS and up). Over either, the call fails
 * as DLC_ERR_TOO_LARGE, -E2BIG. A new decoder has both defaults.
 */
int dlc_decoder_set_budget(struct dlc_decoder *d, uint32_t max_scans,
			   uint32_t budget_ms);
/* Scratch bytes the decoder holds between calls (for the tests). */
size_t dlc_decoder_scratch_bytes(const struct dlc_decoder *d);

/* The same for a given crop, as dlc_decoder_crop(). */
int dlc_decoder_crop_rst(struct dlc_decoder *d, const void *buf, size_t len,
			 const struct dlc_rst_geom *g, const uint32_t *rows,
			 const struct dlc_crop *crop, uint32_t out_w,
			 uint32_t out_h, uint32_t layout, uint8_t *dst);

#endif /* DLC_INTERNAL_H */
