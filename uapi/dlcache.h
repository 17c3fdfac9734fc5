/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note OR MIT */
/*
 * dlcache: node-local sample cache for training input pipelines.
 *
 * This is the only contract between dlcache.ko and user space. Layouts are
 * fixed: every structure is made of fixed-width fields with explicit
 * padding, and its size is pinned by BUILD_BUG_ON in the module and by
 * _Static_assert in libdlcache.
 *
 * Rules that hold for every command:
 * - Fields marked "user" are read by the kernel; fields marked "kernel"
 *   only are written by the kernel and must be 0 on input, else -EINVAL
 *   (ABI 4; before, they were ignored), so that a later ABI can make them
 *   inputs: zero the struct before each call. A field marked "user: ...;
 *   kernel: ..." is an input. Each struct says which fields are checked.
 * - Fields named resv* or reserved must be zero, else -EINVAL.
 * - Unknown flag bits give -EINVAL. An unknown command gives -ENOTTY.
 * - A failed copy from or to user memory gives -EFAULT.
 * - Permissions and CAP_SYS_ADMIN are checked against the credentials of
 *   the calling process, at the time of the call.
 *
 * The ring protocol (see Documentation/abi.md):
 * 1. DLCACHE_IOC_SETUP_RING sizes the rings and returns the mmap sizes and
 *    the offsets of each ring field inside its region.
 * 2. mmap(DLCACHE_OFF_SQ_RING) and mmap(DLCACHE_OFF_CQ_RING), both with
 *    PROT_READ | PROT_WRITE and MAP_SHARED.
 * 3. The user fills struct dlcache_sqe at sqes[tail & ring_mask], then
 *    stores tail + 1 with release semantics.
 * 4. DLCACHE_IOC_ENTER consumes up to to_submit entries (advancing the SQ
 *    head), runs them, and posts one struct dlcache_cqe per entry.
 * 5. The user reads cqes[head & ring_mask] while head != tail (tail loaded
 *    with acquire semantics) and stores head + 1 with release semantics.
 * 6. A GET parked on another session's fill is completed by this session's
 *    next ENTER once the fill ends (DLCACHE_CQ_F_PENDING is set and poll()
 *    reports EPOLLIN); ENTER never sleeps on a fill.
 * Indices are free-running __u32 counters; ring_entries is a power of two.
 *
 * Changelog:
 *   ABI 1: first version.
 *   ABI 2: data sets are named by (key, owner uid): ATTACH finds or creates
 *          the caller's own data set unless DLCACHE_ATTACH_F_OWNER names
 *          another owner it trusts (DLCACHE_FEAT_OWNER). The CQ ring moved
 *          to mmap offset DLCACHE_OFF_CQ_RING = 0x8000000, which a 32-bit
 *          off_t can pass. Fills have a lease (DLCACHE_FEAT_FILL_LEASE).
 *   ABI 3: consumers (DLCACHE_FEAT_CONSUMERS): ATTACH with
 *          DLCACHE_ATTACH_F_JOB joins the time line of one job, so that
 *          jobs with their own orders and speeds share a data set and
 *          ranks of one job drift without losing hits. The layouts of
 *          ABI 2 are unchanged: an ABI 2 client works as before (its
 *          attachments share the data set's time line 0). A client should
 *          accept any abi_version >= the one it was built for and test
 *          feature bits, which is how ABI 3 and later stay additive.
 *          Added within ABI 3: DLCACHE_FEAT_DRAIN, DLCACHE_FEAT_GET_AHEAD,
 *          DLCACHE_FEAT_ATTACH_MATCH.
 *   ABI 4: the ioctl magic is 0xDC ('D' is s390 DASD's in
 *          Documentation/userspace-api/ioctl/ioctl-number.rst): a binary
 *          built for ABI 3 or earlier gets -ENOTTY from every command,
 *          GET_INFO included, and must treat that as "another ABI". The
 *          layouts are those of ABI 3. The kernel's fields of every
 *          command must be 0 on input (-EINVAL). GET_INFO's features is
 *          the session's enabled set, fixed by its first GET_INFO; a
 *          change of behaviour is for the sessions that enabled it
 *          (DLCACHE_FEAT_IDLE: without it a last detach frees the data
 *          set, as in ABI 2). Added within ABI 4: DLCACHE_FEAT_FORMS
 *          (attach's resv0 became @form).
 */
#ifndef _UAPI_LINUX_DLCACHE_H
#define _UAPI_LINUX_DLCACHE_H

#include <linux/types.h>

/* User space: include <sys/ioctl.h> for _IOWR, as with ublk_cmd.h. */

#define DLCACHE_ABI_VERSION	4

/* Device node, created by the misc device. */
#define DLCACHE_DEVICE		"/dev/dlcache"

/* ------------------------------------------------------------------ */
/* Feature bits (struct dlcache_info.features)                         */
/* ------------------------------------------------------------------ */

/*
 * GET_INFO's features is the session's enabled set (ABI 4): its first
 * GET_INFO sets it to wanted & supported for the life of the session
 * (the open file); a later GET_INFO returns that set, whatever it asks.
 * A session that never calls GET_INFO has none enabled. Each bit is:
 * - [use] new commands, flags or fields: in force where they are used,
 *   enabled or not (a client that does not know them does not use them);
 * - [gated] a change of what an older client sees: only for sessions
 *   that enabled it;
 * - [always] a property of the module that protects other users or the
 *   node (isolation, liveness, memory): for every session, enabled or
 *   not, since no session may opt out of it.
 */

/* [use] SQ/CQ rings, DLCACHE_IOC_SETUP_RING and DLCACHE_IOC_ENTER. */
#define DLCACHE_FEAT_RING	(1ULL << 0)
/* [use] poll()/epoll report EPOLLIN when a completion can be reaped. */
#define DLCACHE_FEAT_POLL	(1ULL << 1)
/* [use] GET takes DLCACHE_SQE_F_AT: the use is at (epoch, index). */
#define DLCACHE_FEAT_GET_AT	(1ULL << 2)
/*
 * [always] A GET for a sample another session is filling completes when
 * that fill ends (ABI 1 on).
 */
#define DLCACHE_FEAT_FILL_WAIT	(1ULL << 3)
/* [always] The cache gives memory back under pressure (shrinker). */
#define DLCACHE_FEAT_SHRINKER	(1ULL << 4)
/*
 * [always] Data sets are named by (key, owner uid); ATTACH takes
 * DLCACHE_ATTACH_F_OWNER ([use]). A key alone never reaches another
 * user's bytes.
 */
#define DLCACHE_FEAT_OWNER	(1ULL << 5)
/*
 * [always] A fill not ended within the module's fill lease is taken from
 * its filler: a waiting GET that may write takes it over, other waiters
 * complete with -ETIMEDOUT (a stuck filler holds nobody else up).
 */
#define DLCACHE_FEAT_FILL_LEASE	(1ULL << 6)
/*
 * [use] Consumers: ATTACH takes DLCACHE_ATTACH_F_JOB. Each consumer (the
 * attachments that name one job) has its own time line of orders and its
 * own progress; a sample's next use is the soonest over the active
 * consumers, each consumer's positions converted to time by its measured
 * rate. Within a consumer the cursor is the slowest member's progress.
 */
#define DLCACHE_FEAT_CONSUMERS	(1ULL << 7)
/*
 * [gated] A detached data set stays cached, idle, for the module's
 * idle_keep_s: an ATTACH of the same (key, owner) finds it with its
 * samples. Only when the session whose detach (or close) was the data
 * set's last enabled this feature; else the data set is freed then, as
 * in ABI 2. Idle sets give way first (slots, policy memory, cache space,
 * the shrinker); DROP frees them. STATS reports DLCACHE_DS_F_IDLE and
 * ds_idle_s.
 */
#define DLCACHE_FEAT_IDLE	(1ULL << 8)
/*
 * [use] DLCACHE_IOC_DRAIN and the module parameter drain: an administrator
 * asks every session to let go, so that the module can be unloaded.
 * [always] What a drain does to the sessions (-ESHUTDOWN, EPOLLHUP).
 */
#define DLCACHE_FEAT_DRAIN	(1ULL << 9)
/*
 * [use] GET takes DLCACHE_SQE_F_AHEAD: a read-ahead's look-up, which is
 * not a use and copies nothing (see the flag).
 */
#define DLCACHE_FEAT_GET_AHEAD	(1ULL << 10)
/*
 * [always] ATTACH of an existing data set holds to what was asked: another
 * mode, window or lookahead gives -EEXIST; another owner's data set the
 * caller may not read gives -ENOENT, as a missing one. A security
 * property (a mode that holds; nothing learnt of a hidden data set): no
 * session opts out. [use] DLCACHE_ATTACH_F_REPLACE.
 */
#define DLCACHE_FEAT_ATTACH_MATCH (1ULL << 11)
/*
 * [use] DLCACHE_IOC_GET_ORDER: read back the orders a data set's
 * consumers uploaded, for a reader of the data set (dlcachectl whatif
 * --attached).
 */
#define DLCACHE_FEAT_GET_ORDER	(1ULL << 12)
/*
 * [use] Forms: ATTACH takes DLCACHE_ATTACH_F_FORM and @form, the data
 * set that holds another form of the samples of (key, owner), such as
 * their decoded pixels, keyed apart: (key, owner, form). It is its
 * owner's alone (mode 0600, no other user attaches it, root included),
 * since no checksum of the encoded data set covers a form. Its samples
 * are charged as any; a GET's miss never takes a fill and never waits
 * (a form is made by a decode, not read: a waiter would wait a decode
 * it can do itself), and a PUT needs no fill. STATS reports
 * DLCACHE_DS_F_FORM.
 */
#define DLCACHE_FEAT_FORMS	(1ULL << 13)

/* ------------------------------------------------------------------ */
/* DLCACHE_IOC_GET_INFO                                                */
/* ------------------------------------------------------------------ */

/* Must be 0 on input: abi_version, supported .. max_members. */
struct dlcache_info {
	__u32 abi_version;	/* kernel: DLCACHE_ABI_VERSION */
	__u32 flags;		/* user: must be 0 */
	/*
	 * user: wanted (read at the session's first GET_INFO only);
	 * kernel: the session's enabled set, wanted & supported
	 */
	__u64 features;
	__u64 supported;	/* kernel: every feature this module has */
	__u64 capacity_bytes;	/* kernel: current cache capacity */
	__u32 max_sample_size;	/* kernel: largest PUT, in bytes */
	__u32 max_samples;	/* kernel: largest sample count of a data set */
	__u32 max_datasets;	/* kernel: data sets that may exist at once */
	__u32 max_order_len;	/* kernel: largest SET_ORDER length, in IDs */
	__u32 max_ring_entries;	/* kernel: largest SQ or CQ ring */
	__u32 max_handles;	/* kernel: data sets attached per session */
	__u32 max_fills;	/* kernel: fills in flight per attachment */
	__u32 resv0;		/* padding, must be 0 */
	/* kernel: consumers per data set, time line 0 included (ABI 3) */
	__u32 max_consumers;
	/* kernel: attachments per consumer (ABI 3) */
	__u32 max_members;
	__u64 reserved[3];	/* must be 0 */
};

/* ------------------------------------------------------------------ */
/* DLCACHE_IOC_SETUP_RING and the mmap regions                         */
/* ------------------------------------------------------------------ */

/*
 * mmap offsets, as io_uring's IORING_OFF_*: the offset is exactly one of
 * these values (anything else gives -EINVAL). Both fit a 32-bit off_t, so
 * 32-bit callers can map the rings. Map each region whole, with the size
 * SETUP_RING returned.
 */
#define DLCACHE_OFF_SQ_RING	0ULL
#define DLCACHE_OFF_CQ_RING	0x8000000ULL

/* SQ ring flags (sq_off.flags), written by the kernel. */
/* ENTER stopped early: the CQ had no room. Reap completions. */
#define DLCACHE_SQ_F_CQ_FULL	(1U << 0)

/* CQ ring flags (cq_off.flags), written by the kernel. */
/* Deferred completions are ready: call ENTER (any to_submit) to post them. */
#define DLCACHE_CQ_F_PENDING	(1U << 0)

/* Offsets, in bytes from the start of the SQ region. */
struct dlcache_sqring_offsets {
	__u32 head;		/* __u32 index: kernel writes (consumer) */
	__u32 tail;		/* __u32 index: user writes (producer) */
	__u32 ring_mask;	/* __u32: kernel writes once, ring_entries - 1 */
	__u32 ring_entries;	/* __u32: kernel writes once */
	__u32 flags;		/* __u32: kernel writes, DLCACHE_SQ_F_* */
	__u32 dropped;		/* __u32: kernel writes, malformed SQEs seen */
	__u32 sqes;		/* struct dlcache_sqe[ring_entries]: user writes */
	__u32 resv1;		/* kernel writes 0 */
	__u64 resv2;		/* kernel writes 0 */
};

/* Offsets, in bytes from the start of the CQ region. */
struct dlcache_cqring_offsets {
	__u32 head;		/* __u32 index: user writes (consumer) */
	__u32 tail;		/* __u32 index: kernel writes (producer) */
	__u32 ring_mask;	/* __u32: kernel writes once, ring_entries - 1 */
	__u32 ring_entries;	/* __u32: kernel writes once */
	__u32 flags;		/* __u32: kernel writes, DLCACHE_CQ_F_* */
	__u32 pending;		/* __u32: kernel writes, GETs waiting on fills */
	__u32 cqes;		/* struct dlcache_cqe[ring_entries]: kernel writes */
	__u32 resv1;		/* kernel writes 0 */
	__u64 resv2;		/* kernel writes 0 */
};

/* Must be 0 on input: sq_mmap_size, cq_mmap_size, sq_off, cq_off. */
struct dlcache_ring_setup {
	/* user: wanted, rounded up to a power of two; kernel: actual */
	__u32 sq_entries;
	/* user: wanted (0: 2 * sq_entries), at least sq_entries; kernel: actual */
	__u32 cq_entries;
	__u32 flags;		/* user: must be 0 */
	__u32 resv0;		/* padding, must be 0 */
	__u64 sq_mmap_size;	/* kernel: bytes to map at DLCACHE_OFF_SQ_RING */
	__u64 cq_mmap_size;	/* kernel: bytes to map at DLCACHE_OFF_CQ_RING */
	struct dlcache_sqring_offsets sq_off;	/* kernel */
	struct dlcache_cqring_offsets cq_off;	/* kernel */
	__u64 reserved[4];	/* must be 0 */
};

/* ------------------------------------------------------------------ */
/* Ring entries                                                        */
/* ------------------------------------------------------------------ */

enum {
	/* Does nothing; completes with res 0. */
	DLCACHE_OP_NOP = 0,
	/*
	 * Copy sample @sample into [addr, addr + len). res: the sample size
	 * on a hit; -ENOENT on a miss (with DLCACHE_CQE_F_FILL when this
	 * session now owns the fill and must PUT or ABORT it); -EMSGSIZE when
	 * len is below the sample size (cqe.size has it). A GET for a sample
	 * that another session is filling completes when that fill ends, or
	 * with -ETIMEDOUT when the fill outlived the lease and another
	 * waiter took it over (DLCACHE_FEAT_FILL_LEASE).
	 */
	DLCACHE_OP_GET = 1,
	/*
	 * Offer [addr, addr + len) as the bytes of @sample. res: len; the
	 * CQE has DLCACHE_CQE_F_CACHED when the bytes are in the cache.
	 * Ends the fill of @sample, whoever owns it.
	 */
	DLCACHE_OP_PUT = 2,
	/*
	 * The fill of @sample failed. Without flags one waiting GET takes the
	 * fill over (it completes -ENOENT with DLCACHE_CQE_F_FILL). With
	 * DLCACHE_SQE_F_FAIL every waiting GET completes -EIO. res: 0, or
	 * -ENOENT when this session does not own that fill.
	 */
	DLCACHE_OP_ABORT = 3,
	DLCACHE_OP_LAST,
};

/* SQE flags. */
/* GET: the use is at index @index of the order of epoch @epoch. */
#define DLCACHE_SQE_F_AT	(1U << 0)
/* ABORT: fail the waiters with -EIO instead of handing the fill over. */
#define DLCACHE_SQE_F_FAIL	(1U << 1)
/*
 * GET (DLCACHE_FEAT_GET_AHEAD): a look-up made ahead of the use, by a
 * client that reads the misses of its order before it reaches them. It
 * is not a use (no time line's cursor moves) and copies nothing: res is
 * the sample's size on a hit (cqe.size too; addr and len may be 0), which
 * is not counted. With DLCACHE_SQE_F_AT it names the use it is made for,
 * (epoch, index): a sample used before that (on this time line, or on
 * another by the module's estimate) is -ENOENT with DLCACHE_CQE_F_SOONER,
 * nothing taken or counted: the earlier use reads it. So is one this
 * session fills already, with F_AT or without. Any other miss counts and takes the fill like a
 * GET (DLCACHE_CQE_F_FILL), so that other sessions wait for this read;
 * the look-up's session then makes the use (a GET with F_AT, len 0: it
 * finds its own fill) and PUTs the bytes after it, weighed for the next
 * use, or ABORTs. A sample another session fills parks the look-up, like
 * any GET, until the fill ends; a hand-over never goes to a look-up.
 */
#define DLCACHE_SQE_F_AHEAD	(1U << 2)

struct dlcache_sqe {
	__u8 opcode;		/* user: DLCACHE_OP_* */
	__u8 resv0;		/* user: must be 0 */
	__u16 flags;		/* user: DLCACHE_SQE_F_* valid for the op */
	__u32 handle;		/* user: data set handle from ATTACH (not NOP) */
	__u32 sample;		/* user: sample ID, below the sample count */
	__u32 len;		/* user: buffer length in bytes (GET, PUT) */
	__u64 addr;		/* user: buffer address (GET, PUT) */
	__u64 user_data;	/* user: copied into the CQE untouched */
	__u32 epoch;		/* user: with DLCACHE_SQE_F_AT, else 0 */
	__u32 index;		/* user: with DLCACHE_SQE_F_AT, else 0 */
	__u64 resv[3];		/* user: must be 0 */
};

/* CQE flags. */
/* PUT: the bytes are in the cache (else the PUT was bypassed). */
#define DLCACHE_CQE_F_CACHED	(1U << 0)
/* GET: this session now owns the fill; PUT or ABORT the sample. */
#define DLCACHE_CQE_F_FILL	(1U << 1)
/* GET: completed after waiting for another session's fill. */
#define DLCACHE_CQE_F_WAITED	(1U << 2)
/*
 * GET F_AHEAD | F_AT, a miss: the sample is used before the use looked up
 * for (on this time line, or another's use predicted sooner), or this
 * session fills it already: that earlier use reads it; nothing was taken.
 */
#define DLCACHE_CQE_F_SOONER	(1U << 3)

struct dlcache_cqe {
	__u64 user_data;	/* kernel: the SQE's user_data */
	__s32 res;		/* kernel: bytes, or -errno */
	__u32 flags;		/* kernel: DLCACHE_CQE_F_* */
	__u32 handle;		/* kernel: the SQE's handle */
	__u32 sample;		/* kernel: the SQE's sample */
	__u32 size;		/* kernel: GET hit or -EMSGSIZE: sample size */
	__u32 resv;		/* kernel: 0 */
};

/* ------------------------------------------------------------------ */
/* DLCACHE_IOC_ENTER                                                   */
/* ------------------------------------------------------------------ */

/* Wait until min_complete completions can be reaped. */
#define DLCACHE_ENTER_F_GETEVENTS	(1U << 0)
/* With GETEVENTS: wait at most timeout_ns, then fail with -ETIME. */
#define DLCACHE_ENTER_F_TIMEOUT		(1U << 1)

/*
 * Returns the number of SQEs consumed (>= 0). When nothing was consumed, a
 * wait that timed out gives -ETIME and one interrupted by a signal -EINTR.
 * The return value is authoritative: when SQEs were consumed but @submitted
 * cannot be written back, ENTER still returns their count, not -EFAULT.
 * Must be 0 on input: submitted (set it to 0 again before the next call).
 */
struct dlcache_enter {
	__u32 to_submit;	/* user: SQEs to consume at most */
	__u32 min_complete;	/* user: with GETEVENTS, CQEs to wait for */
	__u64 timeout_ns;	/* user: with TIMEOUT, else 0 */
	__u32 flags;		/* user: DLCACHE_ENTER_F_* */
	__u32 submitted;	/* kernel: SQEs consumed */
	__u64 reserved[2];	/* must be 0 */
};

/* ------------------------------------------------------------------ */
/* Data sets                                                           */
/* ------------------------------------------------------------------ */

/* Fail with -ENOENT instead of creating the data set. */
#define DLCACHE_ATTACH_F_NOCREATE	(1U << 0)
/* Fail with -EEXIST when the data set exists. */
#define DLCACHE_ATTACH_F_EXCL		(1U << 1)
/*
 * Attach to the data set of owner @owner_uid (a uid of the caller's user
 * namespace) rather than the caller's own. Never creates: a missing data
 * set gives -ENOENT, unless @owner_uid is the caller's fsuid.
 */
#define DLCACHE_ATTACH_F_OWNER		(1U << 2)
/*
 * Join the consumer of job @job (DLCACHE_FEAT_CONSUMERS), created when the
 * data set has none for it: SET_ORDER and the uses of GET go to that
 * consumer's own time line. Only an attachment that may write joins; one
 * that may only read attaches without a consumer (no
 * DLCACHE_ATTACH_JOINED). -EUSERS when the data set has max_consumers
 * consumers or the job max_members members; -ENOMEM or -EDQUOT when the
 * time line's memory passes the global or the owner's policy limit.
 * Without this flag an attachment uses time line 0, shared as in ABI 2.
 */
#define DLCACHE_ATTACH_F_JOB		(1U << 3)
/*
 * The caller's own data set only (else -EPERM; not with F_NOCREATE,
 * -EINVAL): when it exists idle (DLCACHE_DS_F_IDLE) with another sample
 * count, mode, window or lookahead than asked, it is freed, samples and
 * all, and a new one is created as asked (DLCACHE_ATTACH_CREATED); when
 * attached, -EBUSY. The owner's way to change the mode
 * (DLCACHE_FEAT_ATTACH_MATCH).
 */
#define DLCACHE_ATTACH_F_REPLACE	(1U << 4)
/*
 * (DLCACHE_FEAT_FORMS) The data set of form @form of (@key, owner): a
 * data set of its own, created by and for the caller only. Not with
 * DLCACHE_ATTACH_F_OWNER naming another user (-EPERM); a mode other than
 * 0 or 0600 gives -EINVAL.
 */
#define DLCACHE_ATTACH_F_FORM		(1U << 5)

/* Output flags (result_flags). */
#define DLCACHE_ATTACH_CREATED		(1U << 0)
#define DLCACHE_ATTACH_MAY_READ		(1U << 1)
#define DLCACHE_ATTACH_MAY_WRITE	(1U << 2)
/* With DLCACHE_ATTACH_F_JOB: joined the job's consumer. */
#define DLCACHE_ATTACH_JOINED		(1U << 3)
/* With DLCACHE_ATTACH_JOINED: the consumer was created for this ATTACH. */
#define DLCACHE_ATTACH_JOB_CREATED	(1U << 4)

/*
 * Attach this session to the data set (@key, owner), creating it when
 * missing. The owner is the caller's fsuid, or @owner_uid with
 * DLCACHE_ATTACH_F_OWNER: two users with the same key have two data sets,
 * and one user reaches another's only by naming that owner, and only as
 * far as the owner's mode allows. Another owner's data set that the
 * caller may not read gives -ENOENT, as a missing one, whatever else was
 * asked. A data set that exists with another sample count gives -EINVAL,
 * with another mode, window or lookahead -EEXIST (DLCACHE_FEAT_ATTACH_MATCH:
 * a field of 0 asks for any value, but a mode of 0 for 0600 where this
 * ATTACH could create the data set). Read permission is needed to attach
 * (-EACCES), also for the creator; write permission to PUT, ABORT,
 * SET_ORDER and to move the policy cursor with GET. Creating fails with
 * -ENOSPC when max_datasets exist and with -EDQUOT past the per-uid
 * limits of the module's parameters.
 * Must be 0 on input: handle, owner_gid, result_flags, owner_uid
 * without DLCACHE_ATTACH_F_OWNER and form without DLCACHE_ATTACH_F_FORM.
 */
struct dlcache_attach {
	__u64 key[2];		/* user: 128-bit data set key */
	__u32 nsamples;		/* user: sample count, 1 .. max_samples */
	/*
	 * user: permission bits within 0666 (0600, 0640, 0660 style; 0
	 * means 0600 where the ATTACH may create, else any) that the data
	 * set is created with or must have; kernel: the data set's mode.
	 */
	__u32 mode;
	__u32 flags;		/* user: DLCACHE_ATTACH_F_* */
	/*
	 * user: order positions held at once, rounded up to a power of
	 * two, at least 64 (0: 2 * nsamples on create, else any); kernel:
	 * actual.
	 */
	__u32 window;
	/*
	 * user: how far past the policy cursor a GET without
	 * DLCACHE_SQE_F_AT may move it, at most the window (0: 65536 on
	 * create, else any); kernel: actual.
	 */
	__u32 lookahead;
	__u32 handle;		/* kernel: handle for SQEs and ioctls, >= 1 */
	/*
	 * user: with DLCACHE_ATTACH_F_OWNER, the owner trusted, else 0;
	 * kernel: the owner's uid.
	 */
	__u32 owner_uid;
	__u32 owner_gid;	/* kernel: creator's gid */
	__u32 result_flags;	/* kernel: DLCACHE_ATTACH_* */
	/*
	 * user: with DLCACHE_ATTACH_F_FORM, the form, 1 .. 255 (the module
	 * does not interpret it: libdlcache's 1 is the whole image decoded
	 * to RGB; library.md, "Decoded forms"); else 0. Was resv0 (ABI 4
	 * before DLCACHE_FEAT_FORMS), which had to be 0 as well.
	 */
	__u32 form;
	/*
	 * user: with DLCACHE_ATTACH_F_JOB, the job's key: every rank of one
	 * job passes the same value, two jobs different ones; else 0.
	 */
	__u64 job;
	__u64 reserved[1];	/* must be 0 */
};

/*
 * Detach @handle: this session's fills are handed over, its waits end.
 * (DETACH and SET_ORDER have no kernel fields.)
 */
struct dlcache_detach {
	__u32 handle;		/* user */
	__u32 flags;		/* user: must be 0 */
	__u64 reserved[2];	/* must be 0 */
};

/*
 * Append the order of @epoch (an array of @len __u32 sample IDs at @ids)
 * to the time line of the attachment's consumer (time line 0 when it
 * joined none): ranks of one job upload the job's global order once, two
 * jobs each their own. Epoch numbers increase. -EINVAL for a bad
 * ID, an epoch that does not increase or a bad length; -ENOSPC when the
 * unconsumed positions would not fit the window (consume first).
 */
struct dlcache_order {
	__u32 handle;		/* user */
	__u32 epoch;		/* user */
	__u64 ids;		/* user: address of __u32[len] */
	__u32 len;		/* user: 1 .. max_order_len */
	__u32 flags;		/* user: must be 0 */
	__u64 reserved[2];	/* must be 0 */
};

/* ------------------------------------------------------------------ */
/* DLCACHE_IOC_GET_ORDER                                               */
/* ------------------------------------------------------------------ */

#define DLCACHE_GET_ORDER_F_INDEX	(1U << 0)	/* @handle: STATS's index */
#define DLCACHE_GET_ORDER_EPOCHS	8		/* epochs[] entries */

/* An epoch a time line holds: its positions are base .. base + len - 1. */
struct dlcache_order_epoch {
	__u32 epoch;
	__u32 len;
	__u64 base;
};

/*
 * Read back consumer @consumer's time line (DLCACHE_FEAT_GET_ORDER) of
 * the data set attached as @handle, or with DLCACHE_GET_ORDER_F_INDEX
 * the @handle-th data set (from 0) of STATS's list (the data sets the
 * caller could read by their modes, all of them for CAP_SYS_ADMIN):
 * -ENOENT past either end. Consumers are counted as STATS's ds_consumers
 * counts them, time line 0 first when it holds an order. The sample IDs
 * of positions @from .. @from + @copied - 1 are written at @ids, at most
 * @len of them, all taken at one moment; @copied is 0 when @from is
 * outside first .. end - 1 (positions below first are written over).
 * A job's key is never shown. Must be 0 on input: every field from
 * nconsumers to epochs (the kernel's).
 */
struct dlcache_get_order {
	__u32 handle;		/* user: attached handle, or list index */
	__u32 flags;		/* user: DLCACHE_GET_ORDER_F_* */
	__u32 consumer;		/* user: 0 .. nconsumers - 1 */
	__u32 len;		/* user: room at @ids, in IDs, 0 .. max_order_len */
	__u64 ids;		/* user: address of __u32[len] */
	__u64 from;		/* user: first position wanted */
	__u32 nconsumers;	/* kernel: the data set's active consumers */
	__u32 copied;		/* kernel: IDs written at @ids */
	__u64 ds_key[2];	/* kernel: the data set's key */
	__u32 ds_owner_uid;	/* kernel: and owner */
	__u32 nepochs;		/* kernel: valid entries of epochs[] */
	__u64 first;		/* kernel: the oldest position still held */
	__u64 cursor;		/* kernel: positions below it are consumed */
	__u64 end;		/* kernel: one past the last known position */
	/* kernel: the consumer's measured time a position, 0 before that */
	__u64 ns_per_pos;
	/* kernel: the epochs of positions first .. end - 1, oldest first */
	struct dlcache_order_epoch epochs[DLCACHE_GET_ORDER_EPOCHS];
	__u64 reserved[2];	/* must be 0 */
};

/* ------------------------------------------------------------------ */
/* DLCACHE_IOC_STATS                                                   */
/* ------------------------------------------------------------------ */

/* Counters since module load (global) or data set creation. */
struct dlcache_counters {
	__u64 hits;		/* GETs that copied the sample */
	__u64 hit_bytes;
	__u64 misses;		/* GETs that completed -ENOENT */
	__u64 miss_bytes;	/* bytes PUT to end a fill */
	__u64 inserts;		/* PUTs that cached the bytes */
	__u64 insert_bytes;
	__u64 bypasses;		/* PUTs not admitted */
	__u64 bypass_bytes;
	__u64 evictions;	/* samples evicted (policy, shrinker, drop) */
	__u64 eviction_bytes;
	__u64 shrinker_evictions;	/* of which by the shrinker */
	__u64 waits;		/* GETs that waited for another's fill */
	__u64 aborts;		/* fills aborted or ended by a session's end */
	__u64 errors;		/* completions with an error other than -ENOENT */
	__u64 used_bytes;	/* sample bytes held now */
	__u64 cached_samples;	/* samples held now */
	__u64 fills_inflight;	/* samples being filled now */
	__u64 reserved[7];	/* kernel: 0 */
};

/*
 * Stats of the whole cache, and of one data set: the one attached as
 * @handle, or with DLCACHE_STATS_F_INDEX the @handle-th data set (from 0)
 * of the module's list (-ENOENT past the end). The list holds the data
 * sets the caller could read by their modes, all of them for
 * CAP_SYS_ADMIN. A nonzero @handle without DLCACHE_STATS_F_DATASET is
 * -EINVAL. Must be 0 on input: every field from capacity_bytes to
 * ds_idle_s (the kernel's), counters included.
 */
#define DLCACHE_STATS_F_DATASET	(1U << 0)	/* fill ds_* and dataset */
#define DLCACHE_STATS_F_INDEX	(1U << 1)	/* @handle is a list index */

struct dlcache_stats {
	__u32 handle;		/* user: with F_DATASET */
	__u32 flags;		/* user: DLCACHE_STATS_F_* */
	__u64 capacity_bytes;	/* kernel */
	__u64 used_bytes;	/* kernel */
	/*
	 * kernel: data sets that exist (CAP_SYS_ADMIN), else those the
	 * caller can list
	 */
	__u32 ndatasets;
	__u32 nsessions;	/* kernel: open sessions */
	struct dlcache_counters global;	/* kernel */
	/* With F_DATASET, kernel: */
	__u64 ds_key[2];
	__u32 ds_nsamples;
	__u32 ds_mode;
	__u32 ds_owner_uid;
	__u32 ds_owner_gid;
	__u32 ds_attached;	/* attachments now */
	__u32 ds_window;
	/*
	 * policy cursor: positions consumed, and one past the last known
	 * position, of the attachment's consumer (time line 0 with
	 * DLCACHE_STATS_F_INDEX or without one)
	 */
	__u64 ds_cursor;
	__u64 ds_end;
	struct dlcache_counters dataset;
	__u32 ds_consumers;	/* kernel: active consumers (ABI 3) */
	__u32 ds_members;	/* kernel: members of that consumer (ABI 3) */
	__u32 ds_flags;		/* kernel: DLCACHE_DS_F_* (ABI 3) */
	__u32 ds_idle_s;	/* kernel: seconds idle, with DLCACHE_DS_F_IDLE */
	__u64 reserved[2];	/* must be 0 */
};

/* ds_flags: the data set is idle, attached by nobody (DLCACHE_FEAT_IDLE). */
#define DLCACHE_DS_F_IDLE	(1U << 0)
/* ds_flags: the data set holds a form (DLCACHE_FEAT_FORMS), bits 8-15 its number. */
#define DLCACHE_DS_F_FORM	(1U << 1)
#define DLCACHE_DS_FORM_SHIFT	8

/* ------------------------------------------------------------------ */
/* Privileged (CAP_SYS_ADMIN, else -EPERM)                             */
/* ------------------------------------------------------------------ */

/*
 * Set the capacity; lowering it evicts down to the new limit. Must be 0
 * on input: old_bytes.
 */
struct dlcache_capacity {
	__u64 bytes;		/* user: new capacity */
	__u64 old_bytes;	/* kernel: previous capacity */
	__u32 flags;		/* user: must be 0 */
	__u32 resv0;		/* must be 0 */
	__u64 reserved[2];	/* must be 0 */
};

/*
 * Drop the cached samples of every data set, or of those with @key, of
 * every owner. Must be 0 on input: dropped_bytes.
 */
#define DLCACHE_DROP_F_KEY	(1U << 0)

struct dlcache_drop {
	__u64 key[2];		/* user: with DLCACHE_DROP_F_KEY */
	__u32 flags;		/* user: DLCACHE_DROP_F_* */
	__u32 resv0;		/* must be 0 */
	__u64 dropped_bytes;	/* kernel: bytes evicted */
	__u64 reserved[2];	/* must be 0 */
};

/*
 * Drain (DLCACHE_FEAT_DRAIN). While the module drains, ATTACH, SETUP_RING,
 * SET_ORDER and ENTER fail with -ESHUTDOWN: ENTER posts nothing new, and
 * the calling session is detached from every data set first (its fills
 * are handed over, its parked GETs end without a completion, as at
 * DETACH). Sleepers in ENTER wake with -ESHUTDOWN and poll() reports
 * EPOLLHUP | EPOLLERR. GET_INFO, STATS, DETACH, the privileged commands
 * and opening the device keep working. Completions posted before the
 * drain stay in the CQ ring to be reaped. Without flags, start the
 * drain; DLCACHE_DRAIN_F_OFF ends it (new sessions attach again);
 * DLCACHE_DRAIN_F_QUERY changes nothing. The module parameter drain
 * (0/1) does the same. Must be 0 on input: nsessions, draining.
 */
#define DLCACHE_DRAIN_F_OFF	(1U << 0)
#define DLCACHE_DRAIN_F_QUERY	(1U << 1)

struct dlcache_drain {
	__u32 flags;		/* user: DLCACHE_DRAIN_F_*, not both */
	__u32 resv0;		/* must be 0 */
	__u32 nsessions;	/* kernel: open sessions, the caller's included */
	__u32 draining;		/* kernel: 1 while draining, after the call */
	__u64 reserved[2];	/* must be 0 */
};

/* ------------------------------------------------------------------ */
/* Commands                                                            */
/* ------------------------------------------------------------------ */

/*
 * 0xDC, free in the kernel's ioctl-number.rst (0xDB and 0xDD are taken).
 * Up to ABI 3 it was 'D' (0x44), which s390 DASD uses.
 */
#define DLCACHE_IOC_MAGIC	0xDC

#define DLCACHE_IOC_GET_INFO	_IOWR(DLCACHE_IOC_MAGIC, 0x00, struct dlcache_info)
#define DLCACHE_IOC_SETUP_RING	_IOWR(DLCACHE_IOC_MAGIC, 0x01, struct dlcache_ring_setup)
#define DLCACHE_IOC_ENTER	_IOWR(DLCACHE_IOC_MAGIC, 0x02, struct dlcache_enter)
#define DLCACHE_IOC_ATTACH	_IOWR(DLCACHE_IOC_MAGIC, 0x03, struct dlcache_attach)
#define DLCACHE_IOC_DETACH	_IOWR(DLCACHE_IOC_MAGIC, 0x04, struct dlcache_detach)
#define DLCACHE_IOC_SET_ORDER	_IOWR(DLCACHE_IOC_MAGIC, 0x05, struct dlcache_order)
#define DLCACHE_IOC_STATS	_IOWR(DLCACHE_IOC_MAGIC, 0x06, struct dlcache_stats)
#define DLCACHE_IOC_SET_CAPACITY _IOWR(DLCACHE_IOC_MAGIC, 0x07, struct dlcache_capacity)
#define DLCACHE_IOC_DROP	_IOWR(DLCACHE_IOC_MAGIC, 0x08, struct dlcache_drop)
#define DLCACHE_IOC_GET_ORDER	_IOWR(DLCACHE_IOC_MAGIC, 0x09, struct dlcache_get_order)
#define DLCACHE_IOC_DRAIN	_IOWR(DLCACHE_IOC_MAGIC, 0x10, struct dlcache_drain)

/*
 * Every command, one line each: X(NAME, name, nr, struct, size, dir), for
 * DLCACHE_IOC_NAME = _IOdir(DLCACHE_IOC_MAGIC, nr, struct NAME's type)
 * with sizeof(struct) == size. Each argument struct ends in
 * "__u64 reserved[n]" (must be 0). The module's size checks and dispatch
 * (its handler is dlc_ioc_<name>), libdlcache's asserts, the KCOV fuzzer
 * and the badio test are generated from this list, so that a command
 * added here (with its #define above) is checked, dispatched, fuzzed and
 * tested for bad sizes and reserved fields, and one added only above is
 * not dispatched at all. See Documentation/abi.md, "Adding an ioctl".
 */
#define DLCACHE_IOCTLS(X)						\
	X(GET_INFO,	get_info,	0x00, dlcache_info,	  96, IOWR) \
	X(SETUP_RING,	setup_ring,	0x01, dlcache_ring_setup, 144, IOWR) \
	X(ENTER,	enter,		0x02, dlcache_enter,	  40, IOWR) \
	X(ATTACH,	attach,		0x03, dlcache_attach,	  72, IOWR) \
	X(DETACH,	detach,		0x04, dlcache_detach,	  24, IOWR) \
	X(SET_ORDER,	set_order,	0x05, dlcache_order,	  40, IOWR) \
	X(STATS,	stats,		0x06, dlcache_stats,	 504, IOWR) \
	X(SET_CAPACITY,	set_capacity,	0x07, dlcache_capacity,	  40, IOWR) \
	X(DROP,		drop,		0x08, dlcache_drop,	  48, IOWR) \
	X(GET_ORDER,	get_order,	0x09, dlcache_get_order, 240, IOWR) \
	X(DRAIN,	drain,		0x10, dlcache_drain,	  32, IOWR)

#endif /* _UAPI_LINUX_DLCACHE_H */
