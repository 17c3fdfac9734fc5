// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * kcov_fuzz: a coverage-guided fuzzer of dlcache.ko (issue 9), run in the
 * QEMU debug guest (make fuzz, make fuzz-check).
 *
 * Coverage. Every fuzzing thread has its own KCOV buffer (KCOV_TRACE_PC,
 * per task) and keeps the PCs that lie in dlcache.ko's code (the [dlcache]
 * text symbols of /proc/kallsyms). The PCs go into one set in shared memory
 * (tests/fuzz/kcov.h) common to all threads and processes. An input that
 * added PCs joins the corpus (shared memory too; KF_CORPUS_DIR=dir also
 * dumps it at the end).
 *
 * Inputs. An input is a program of up to KF_MAX_CALLS calls, each one of:
 * every command of uapi/dlcache.h's DLCACHE_IOCTLS (one call kind per
 * command, made from the table: its weight KF_W_NAME, documented errnos
 * kf_e_name, generator kf_gen_name and executor kf_do_name; a command
 * added to the table without them does not build), ENTER with up to
 * KF_MAX_SQE ring entries of every opcode and flag (with and without
 * GETEVENTS/TIMEOUT, blocking waits broken by a per-thread timer), poll,
 * mmap at good and bad offsets, munmap and remap of the rings, close of a
 * session (with its rings still mapped or not, fills owned), garbage in
 * the ring indices, a forked child that takes fills in its own session
 * and is SIGKILLed while this session waits on them, and (root) writes of
 * small values to every writable module parameter (capacity_mb,
 * fill_lease_ms: short leases expire fills, uid_max_*, idle_keep_s,
 * consumer_stall_ms, drain), reads of debugfs dlcache/stats, and
 * drop_caches=2 (the shrinker runs in the writer, so KCOV sees it).
 * Fields are kept symbolic where that matters (handle = n-th handle of
 * the session, sample = k mod the data set's sample count or just past
 * it, buffer = valid / NULL / kernel / into a PROT_NONE page / read-only
 * page, epoch = the handle's current order epoch or the next), so that
 * most mutations pass the reserved-field checks; byte flips of the raw
 * structures give the rest.
 *
 * ABI 3. The valid flag combinations of GET have weights of their own
 * (none, F_AT, F_AHEAD | F_AT, F_AHEAD: 45/20/20/15 %), so look-ups run
 * as often as uses. ATTACH joins a job (F_JOB) 40 % of the time, mostly
 * one of jobs 1..4, so data sets have several consumers and jobs several
 * members; now and then (at most every KF_FLOOD_S per thread: it costs
 * hundreds of ioctls) it fills one data set with max_consumers jobs or
 * one job with max_members members in sessions of its own (-EUSERS).
 * Root's DRAIN (and drain=1) lasts one call: the session then makes one
 * call under the drain (ENTER, ATTACH, SETUP_RING, SET_ORDER or poll:
 * -ESHUTDOWN, EPOLLHUP) and the drain is ended; the other workers meet
 * it meanwhile.
 *
 * Workers: a root process with KF_ROOT_THREADS (2) threads that also share
 * one session between them, and processes of uid 1001 and uid 1002 (in
 * group 1001, so the group bits of 1001's data sets apply), for the whole
 * time; /dev/dlcache is made 0666. Root's calls include SET_CAPACITY (at
 * most 16 MiB, down to 0) and DROP. Kernel memory stays bounded: capacity
 * <= 16 MiB, rings mostly small, sessions reset every 128 inputs.
 *
 * It judges almost nothing itself: /init's dmesg scan catches splats. It
 * fails (exit 1) only when the device answers outside the documented set
 * (an ioctl result or errno, a CQE result, flags or reserved field, poll
 * bits), or a worker cannot be killed. It exits 77 when KCOV is missing.
 * A CQE's user_data carries the SQE's opcode, flags and len, so that a
 * look-up's hit (res = size, any len) and DLCACHE_CQE_F_SOONER (a miss
 * of a GET with F_AHEAD) are judged as Documentation/abi.md says.
 *
 * At the end it prints the executions, per command how many were issued
 * and succeeded, the ABI 3 paths met (drains, -ESHUTDOWN, parameter
 * writes, F_AHEAD SQEs and hits, F_SOONER, F_JOB joins and consumers
 * created, -EUSERS), the distinct PCs, the corpus size,
 * the PCs per function where the two fuzzers differ and the functions
 * neither reached (work items such as the lease worker run in kworkers,
 * which per-task KCOV does not see).
 *
 * Comparison: before fuzzing, the old blind fuzzer tests/qemu/tests/fuzz.c
 * (included below, its main renamed) runs for the same time
 * (DLC_FUZZ_SECONDS) in a child, with the same per-call coverage harvest
 * (its ioctl calls are wrapped), forked children included (a child traces
 * into a buffer its parent mapped, so a SIGKILLed child's PCs count too).
 *
 * Time: DLCQEMU_FUZZ_SECONDS (from dlcqemu.fuzz_seconds=, see init.sh), or
 * argv[1], default 60. KF_BLIND=0 skips the comparison. KF_NOKCOV=1 (or
 * -DKF_FORCE_NOKCOV) fuzzes without coverage on a kernel without KCOV, to
 * test the fuzzer itself on Debian's kernel.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "dlc_test.h"
#include "kcov.h"

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

#define KF_MAX_CALLS	12
#define KF_MAX_SQE	6
#define KF_CORPUS_MAX	1024
#define KF_NKEYS	8
#define KF_NSESS	3		/* own sessions per thread; index 3: shared */
#define KF_MAX_H	16
#define KF_BUF		(256U << 10)
#define KF_IDS		4096
#define KF_KADDR	0xffffffff81000000ULL
#define KF_UID1		1001
#define KF_UID2		1002
#define KF_TAG		0xd1c0ULL
#define KF_MAX_FAILS	20
#define KF_FLOOD_S	15		/* seconds between a thread's floods */

/* ---- inputs ------------------------------------------------------------------ */

/*
 * Calls: first one per command of uapi/dlcache.h's DLCACHE_IOCTLS (C_NAME,
 * in the table's order), then the rest. Each command has its entry in
 * kf_iocs[] below, made from the table: generation weight KF_W_NAME, the
 * documented errnos kf_e_name, generator kf_gen_name and executor
 * kf_do_name. A command added to the table that lacks one of them does
 * not compile.
 */
enum {
#define KF_IOC_OP(NAME, name, nr, type, size, dir) C_##NAME,
	DLCACHE_IOCTLS(KF_IOC_OP)
#undef KF_IOC_OP
	C_NIOC,				/* the commands end here */
	C_BADCMD = C_NIOC, C_MMAP, C_UNMAP, C_REMAP, C_CLOSE, C_POLL, C_FORKKILL,
	C_CORRUPT, C_PARAM, C_DEBUGFS, C_SHRINK, C_NOPS
};

/* Generation weights of the commands (kf_iocs[].weight). */
#define KF_W_GET_INFO		2
#define KF_W_SETUP_RING		3
#define KF_W_ENTER		36
#define KF_W_ATTACH		12
#define KF_W_DETACH		4
#define KF_W_SET_ORDER		8
#define KF_W_STATS		6
#define KF_W_SET_CAPACITY	3
#define KF_W_DROP		3
#define KF_W_GET_ORDER		3
#define KF_W_DRAIN		3
/* Generation weights of the other calls, from C_BADCMD on. */
static const unsigned kf_op_weight[C_NOPS - C_NIOC] = {
	3, 3, 2, 2, 3, 3, 2, 2, 3, 1, 1,
};

struct kf_sqe {
	struct dlcache_sqe s;
	uint8_t hsel;		/* 0..63: n-th handle of the session; 0xff: raw */
	uint8_t asel;		/* buffer: see kf_addr() */
	uint8_t smode;		/* sample: see kf_sample() */
	uint8_t emode;		/* F_AT epoch/index: see kf_fill_sqe(); 0x80: raw user_data */
};

struct kf_call {
	uint8_t op, sess, hsel, asel;
	uint8_t ksel, osel, nsqe, x;
	uint32_t v[4];
	union {
		uint8_t raw[160];
		struct dlcache_info info;
		struct dlcache_ring_setup setup;
		struct dlcache_enter enter;
		struct dlcache_attach att;
		struct dlcache_detach det;
		struct dlcache_order ord;
		struct dlcache_capacity cap;
		struct dlcache_drop drop;
		struct dlcache_drain drain;
		struct {
			uint32_t handle, flags;
			uint64_t bad;
		} st;
		struct {	/* GET_ORDER's user fields (it is 240 bytes) */
			uint32_t handle, flags, consumer, len;
			uint64_t from, bad;
		} gord;
	} u;
	struct kf_sqe sq[KF_MAX_SQE];
};

struct kf_prog {
	uint32_t ncalls;
	struct kf_call c[KF_MAX_CALLS];
};

/* ---- shared state (MAP_SHARED: all workers and the blind run) ------------- */

struct kf_shared {
	volatile int stop;
	struct kcov_range range;
	uint64_t ioctls, inputs, new_inputs, forks, kills, blind_calls;
	uint64_t cqes, cqe_fill, cqe_waited, cqe_hit, eintr;
	/* ABI 3: what reached the module (the report's "abi3" line) */
	uint64_t ioc_calls[C_NIOC], ioc_ok[C_NIOC];
	uint64_t ahead_sqes, ahead_hits, cqe_sooner, joined, job_created, eusers;
	uint64_t eshutdown, drains, params, sooner_no_at;
	/* ABI 4: calls sent with a kernel field set, and refused -EINVAL */
	uint64_t out_sent, out_einval;
	uint64_t nfail;
	pthread_mutex_t lock;		/* corpus */
	uint32_t ncorpus;
	struct pcset cov, blind_cov;
	struct kf_prog corpus[KF_CORPUS_MAX];
};

static struct kf_shared *sh;
static struct dlcache_info kf_info;
static uint64_t kf_keys[KF_NKEYS][2];
static const uint32_t kf_key_n[KF_NKEYS] = { 1, 4, 16, 100, 1000, 64, 65536, 16 };
static double kf_deadline;
static long kf_page;
/* KF_NOKCOV=1 on a kernel without KCOV: fuzz blind (tests the fuzzer itself). */
static bool kf_nokcov;

static double kf_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The corpus lock; robust: a worker may die holding it. */
static void kf_lock(void)
{
	if (pthread_mutex_lock(&sh->lock) == EOWNERDEAD)
		pthread_mutex_consistent(&sh->lock);
}

static void kf_unlock(void)
{
	pthread_mutex_unlock(&sh->lock);
}

static void kf_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void kf_fail(const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	uint64_t n = __atomic_add_fetch(&sh->nfail, 1, __ATOMIC_RELAXED);

	if (n > KF_MAX_FAILS)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	dprintf(STDOUT_FILENO, "FAIL: kcov-fuzz (uid %u): %s\n", (unsigned)getuid(), msg);
}

/* ---- per-thread state ---------------------------------------------------------- */

struct kf_sess {
	int fd;
	bool ring;			/* SETUP_RING done */
	bool shared;			/* the process's shared session */
	bool dirty;			/* ring indices scribbled: no CQE checks */
	struct dlcache_ring_setup p;
	uint8_t *sq, *cq;		/* NULL: not mapped */
	int nh;
	uint32_t h[KF_MAX_H], hn[KF_MAX_H], hep[KF_MAX_H], hlen[KF_MAX_H];
	uint32_t hwin[KF_MAX_H];
	uint8_t hk[KF_MAX_H];
	uint32_t fill_h[32], fill_s[32];
	unsigned nfill;			/* fills recorded, ring of 32 */
};

struct kf_thr {
	int id;
	uint64_t rng;
	struct kcov kc, spare;		/* spare: traced by forked children */
	struct kf_sess s[KF_NSESS];
	uint8_t *buf;			/* KF_BUF, then PROT_NONE, then read-only */
	uint32_t *ids;			/* KF_IDS, then PROT_NONE */
	timer_t timer;
	bool has_timer;
	uint8_t *zsq, *zcq;		/* rings of a closed fd, unmapped later */
	size_t zsq_len, zcq_len;
	struct kf_prog cur;
	unsigned added;			/* PCs added by the current input */
	double next_flood;		/* kf_attach_flood() not before (costly) */
};

static struct kf_sess kf_shared_sess;
static pthread_mutex_t kf_shared_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t kf_rnd(struct kf_thr *t)
{
	return t_rand(&t->rng);
}

static uint32_t kf_rn(struct kf_thr *t, uint32_t n)
{
	return n ? (uint32_t)(kf_rnd(t) % n) : 0;
}

#define AT(base, off) ((void *)((uint8_t *)(base) + (off)))

/* ---- checks ---------------------------------------------------------------- */

static bool kf_errno_in(int e, const int *set)
{
	for (; *set; set++)
		if (*set == e)
			return true;
	return false;
}

/*
 * The commands, from DLCACHE_IOCTLS. kf_e_name: the errnos the command
 * is documented to return (uapi/dlcache.h, Documentation/abi.md).
 */
static const int kf_e_get_info[] = { EFAULT, EINVAL, 0 };
static const int kf_e_setup_ring[] = { EFAULT, EINVAL, EBUSY, ENOMEM, ESHUTDOWN, 0 };
static const int kf_e_enter[] = { EFAULT, EINVAL, ENXIO, ETIME, EINTR, ESHUTDOWN, 0 };
static const int kf_e_attach[] = { EFAULT, EINVAL, EMFILE, EEXIST, EACCES, ENOENT, ENOSPC,
				   ENOMEM, EPERM, EDQUOT, EUSERS, ESHUTDOWN, EBUSY, 0 };
static const int kf_e_detach[] = { EFAULT, EINVAL, EBADF, 0 };
static const int kf_e_set_order[] = { EFAULT, EINVAL, EBADF, EACCES, ENOMEM, ENOSPC,
				      ESHUTDOWN, 0 };
static const int kf_e_stats[] = { EFAULT, EINVAL, ENOMEM, ENOENT, EBADF, 0 };
static const int kf_e_set_capacity[] = { EPERM, EFAULT, EINVAL, 0 };
static const int kf_e_drop[] = { EPERM, EFAULT, EINVAL, ENOENT, 0 };
static const int kf_e_get_order[] = { EFAULT, EINVAL, EBADF, ENOENT, ENOMEM, 0 };
static const int kf_e_drain[] = { EPERM, EFAULT, EINVAL, 0 };

struct kf_thr;
struct kf_sess;
#define KF_IOC_DECL(NAME, name, nr, type, size, dir)				\
	static void kf_gen_##name(struct kf_thr *t, struct kf_call *c);		\
	static void kf_do_##name(struct kf_thr *t, struct kf_sess *s, struct kf_call *c);
DLCACHE_IOCTLS(KF_IOC_DECL)
#undef KF_IOC_DECL

static const struct kf_ioc {
	const char *name;
	unsigned long cmd;
	uint32_t size;			/* of the argument */
	unsigned weight;
	const int *errs;
	void (*gen)(struct kf_thr *t, struct kf_call *c);
	void (*run)(struct kf_thr *t, struct kf_sess *s, struct kf_call *c);
} kf_iocs[C_NIOC] = {
#define KF_IOC(NAME, name, nr, type, size, dir)					\
	[C_##NAME] = { #NAME, DLCACHE_IOC_##NAME, sizeof(struct type), KF_W_##NAME,	\
		       kf_e_##name, kf_gen_##name, kf_do_##name },
	DLCACHE_IOCTLS(KF_IOC)
#undef KF_IOC
};

/* The C_* of a command, or -1. */
static int kf_ioc_of(unsigned long cmd)
{
	for (int i = 0; i < C_NIOC; i++)
		if (kf_iocs[i].cmd == cmd)
			return i;
	return -1;
}

/* Result of a dlcache ioctl against the documented set. */
static void kf_check_ioctl(unsigned long cmd, long ret, int err, uint32_t to_submit)
{
	static const int e_other[] = { ENOTTY, 0 };
	int op = kf_ioc_of(cmd);
	const int *set;

	if (op >= 0) {
		set = kf_iocs[op].errs;
		__atomic_add_fetch(&sh->ioc_calls[op], 1, __ATOMIC_RELAXED);
		if (ret >= 0)
			__atomic_add_fetch(&sh->ioc_ok[op], 1, __ATOMIC_RELAXED);
		if (ret < 0 && err == ESHUTDOWN)
			__atomic_add_fetch(&sh->eshutdown, 1, __ATOMIC_RELAXED);
		if (ret < 0 && err == EUSERS)
			__atomic_add_fetch(&sh->eusers, 1, __ATOMIC_RELAXED);
	} else {
		/* Only commands of dlcache's magic are surely ours. */
		if (_IOC_TYPE(cmd) != DLCACHE_IOC_MAGIC)
			return;
		set = e_other;
		if (ret == 0) {
			kf_fail("unknown command %#lx succeeded", cmd);
			return;
		}
	}
	if (ret < 0) {
		if (!kf_errno_in(err, set))
			kf_fail("ioctl %s (%#lx): errno %s outside the documented set",
				op >= 0 ? kf_iocs[op].name : "?", cmd, t_errname(-err));
	} else if (cmd == DLCACHE_IOC_ENTER) {
		if ((uint64_t)ret > to_submit)
			kf_fail("ENTER consumed %ld SQEs, to_submit %u", ret, to_submit);
	} else if (ret != 0) {
		kf_fail("ioctl %#lx (nr %u) returned %ld", cmd, (unsigned)_IOC_NR(cmd), ret);
	}
}

static long kf_ioctl(int fd, unsigned long cmd, void *arg, uint32_t to_submit)
{
	long ret = ioctl(fd, cmd, arg);
	int err = errno;

	__atomic_add_fetch(&sh->ioctls, 1, __ATOMIC_RELAXED);
	kf_check_ioctl(cmd, ret, err, to_submit);
	errno = err;
	return ret < 0 ? -err : ret;
}

/*
 * The kernel's fields of each command's argument ("kernel:" in
 * uapi/dlcache.h): from ABI 4 they must be 0 on input, else -EINVAL.
 * ATTACH's owner_uid without DLCACHE_ATTACH_F_OWNER too (kf_out_set()).
 */
struct kf_out {
	int op;
	uint16_t off, len;
};

#define KF_OUT(NAME, type, first, last)						\
	{ C_##NAME, offsetof(struct type, first),				\
	  offsetof(struct type, last) + sizeof(((struct type *)0)->last) -	\
	  offsetof(struct type, first) }
static const struct kf_out kf_outs[] = {
	KF_OUT(GET_INFO, dlcache_info, abi_version, abi_version),
	KF_OUT(GET_INFO, dlcache_info, supported, max_members),
	KF_OUT(SETUP_RING, dlcache_ring_setup, sq_mmap_size, cq_off),
	KF_OUT(ENTER, dlcache_enter, submitted, submitted),
	KF_OUT(ATTACH, dlcache_attach, handle, handle),
	KF_OUT(ATTACH, dlcache_attach, owner_gid, result_flags),
	KF_OUT(STATS, dlcache_stats, capacity_bytes, ds_idle_s),
	KF_OUT(SET_CAPACITY, dlcache_capacity, old_bytes, old_bytes),
	KF_OUT(DROP, dlcache_drop, dropped_bytes, dropped_bytes),
	KF_OUT(GET_ORDER, dlcache_get_order, nconsumers, epochs),
	KF_OUT(DRAIN, dlcache_drain, nsessions, draining),
};
#undef KF_OUT

/* Whether a kernel field of command @op's argument @arg is not 0. */
static bool kf_out_set(int op, const void *arg)
{
	const uint8_t *p = arg;

	if (op == C_ATTACH) {
		const struct dlcache_attach *a = arg;

		if (a->owner_uid && !(a->flags & DLCACHE_ATTACH_F_OWNER))
			return true;
	}
	for (size_t i = 0; i < sizeof(kf_outs) / sizeof(kf_outs[0]); i++)
		for (unsigned j = 0; kf_outs[i].op == op && j < kf_outs[i].len; j++)
			if (p[kf_outs[i].off + j])
				return true;
	return false;
}

/*
 * Now and then (1 in 16) a byte of a kernel field of @op's argument @arg
 * set, which the command must refuse (kf_out_check()).
 */
static void kf_out_poison(struct kf_thr *t, int op, void *arg)
{
	const struct kf_out *o[4];
	unsigned n = 0;

	if (kf_rn(t, 16))
		return;
	for (size_t i = 0; i < sizeof(kf_outs) / sizeof(kf_outs[0]) && n < 4; i++)
		if (kf_outs[i].op == op)
			o[n++] = &kf_outs[i];
	if (!n)
		return;
	n = kf_rn(t, n);
	((uint8_t *)arg)[o[n]->off + kf_rn(t, o[n]->len)] = (uint8_t)(1 + kf_rn(t, 255));
}

/*
 * @op was called with @arg (a copy of the struct it was sent, @sent:
 * whether it was the argument) and returned @ret: a kernel field set is
 * -EINVAL (or -EPERM for the privileged commands, checked first).
 */
static void kf_out_check(int op, bool dirty, bool sent, long ret)
{
	if (!dirty || !sent)
		return;
	__atomic_add_fetch(&sh->out_sent, 1, __ATOMIC_RELAXED);
	if (ret == -EINVAL)
		__atomic_add_fetch(&sh->out_einval, 1, __ATOMIC_RELAXED);
	else if (ret != -EPERM)
		kf_fail("%s with a kernel field set (ABI 4: 0 on input): %s, want -EINVAL",
			kf_iocs[op].name, t_errname(ret));
}

/* A CQE against the documented results. */
static void kf_check_cqe(const struct dlcache_cqe *c)
{
	static const int e_cqe[] = { ENOENT, EMSGSIZE, EINVAL, EBADF, EACCES, EFAULT, EIO,
				     ETIMEDOUT, EBUSY, ENOMEM, ENOSPC, 0 };
	uint32_t op, len, sqf;

	if (c->resv)
		kf_fail("CQE resv %u", c->resv);
	if (c->flags & ~(DLCACHE_CQE_F_CACHED | DLCACHE_CQE_F_FILL |
			 DLCACHE_CQE_F_WAITED | DLCACHE_CQE_F_SOONER))
		kf_fail("CQE flags %#x", c->flags);
	if (c->res < 0 && !kf_errno_in(-c->res, e_cqe))
		kf_fail("CQE res %s outside the documented set", t_errname(c->res));
	if (c->user_data >> 48 != KF_TAG)
		return;
	/* user_data: KF_TAG, the SQE's flags (low byte), opcode and len. */
	op = (uint32_t)(c->user_data >> 32) & 0xff;
	sqf = (uint32_t)(c->user_data >> 40) & 0xff;
	len = (uint32_t)c->user_data;
	switch (op) {
	case DLCACHE_OP_NOP:
		if (c->res != 0 && c->res != -EINVAL)
			kf_fail("NOP completed with %s", t_errname(c->res));
		if (c->flags)
			kf_fail("NOP CQE flags %#x", c->flags);
		break;
	case DLCACHE_OP_GET:
		if (sqf & DLCACHE_SQE_F_AHEAD) {
			/* A look-up copies nothing: a hit's res is the size, any len. */
			if (c->res >= 0 && c->size != (uint32_t)c->res)
				kf_fail("GET F_AHEAD res %d, size %u", c->res, c->size);
			if (c->res == -EMSGSIZE)
				kf_fail("GET F_AHEAD completed -EMSGSIZE (it copies nothing)");
			if (c->res >= 0)
				__atomic_add_fetch(&sh->ahead_hits, 1, __ATOMIC_RELAXED);
		} else {
			if (c->res >= 0 && ((uint32_t)c->res > len || c->size != (uint32_t)c->res))
				kf_fail("GET res %d, len %u, size %u", c->res, len, c->size);
			if (c->res == -EMSGSIZE && c->size <= len)
				kf_fail("GET -EMSGSIZE with size %u <= len %u", c->size, len);
		}
		if (c->flags & DLCACHE_CQE_F_CACHED)
			kf_fail("GET CQE with F_CACHED");
		/*
		 * F_SOONER: a look-up ahead (abi.md: F_AHEAD | F_AT) whose
		 * earlier use, or this session's fill, reads the sample: a
		 * miss, nothing taken. The module also sets it for F_AHEAD
		 * without F_AT on this session's own fill (counted apart).
		 */
		if (c->flags & DLCACHE_CQE_F_SOONER) {
			__atomic_add_fetch(&sh->cqe_sooner, 1, __ATOMIC_RELAXED);
			if (!(sqf & DLCACHE_SQE_F_AHEAD) || c->res != -ENOENT ||
			    (c->flags & DLCACHE_CQE_F_FILL))
				kf_fail("GET F_SOONER with SQE flags %#x, res %s, flags %#x",
					sqf, t_errname(c->res), c->flags);
			else if (!(sqf & DLCACHE_SQE_F_AT))
				__atomic_add_fetch(&sh->sooner_no_at, 1, __ATOMIC_RELAXED);
		}
		break;
	case DLCACHE_OP_PUT:
		if (c->res >= 0 && (uint32_t)c->res != len)
			kf_fail("PUT res %d, len %u", c->res, len);
		if (c->flags & (DLCACHE_CQE_F_FILL | DLCACHE_CQE_F_WAITED |
				DLCACHE_CQE_F_SOONER))
			kf_fail("PUT CQE flags %#x", c->flags);
		break;
	case DLCACHE_OP_ABORT:
		if (c->res > 0)
			kf_fail("ABORT res %d", c->res);
		if (c->flags)
			kf_fail("ABORT CQE flags %#x", c->flags);
		break;
	default:
		if (c->res != -EINVAL)
			kf_fail("opcode %u completed with %s", op, t_errname(c->res));
	}
}

/* ---- coverage ---------------------------------------------------------------- */

static void kf_harvest(struct kf_thr *t)
{
	t->added += kcov_harvest(&t->kc, &sh->range, &sh->cov);
}

/* ---- sessions ---------------------------------------------------------------- */

static void kf_sess_unmap(struct kf_sess *s)
{
	if (s->sq)
		munmap(s->sq, s->p.sq_mmap_size);
	if (s->cq)
		munmap(s->cq, s->p.cq_mmap_size);
	s->sq = s->cq = NULL;
}

static int kf_sess_map(struct kf_sess *s)
{
	if (!s->ring)
		return -ENXIO;
	if (!s->sq) {
		void *m = mmap(NULL, s->p.sq_mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			       s->fd, DLCACHE_OFF_SQ_RING);

		if (m == MAP_FAILED)
			return -errno;
		s->sq = m;
	}
	if (!s->cq) {
		void *m = mmap(NULL, s->p.cq_mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			       s->fd, DLCACHE_OFF_CQ_RING);

		if (m == MAP_FAILED)
			return -errno;
		s->cq = m;
	}
	return 0;
}

static void kf_sess_close(struct kf_thr *t, struct kf_sess *s, bool keep_maps)
{
	if (keep_maps && t) {
		/* The file lives on in the mappings; released at munmap. */
		if (t->zsq)
			munmap(t->zsq, t->zsq_len);
		if (t->zcq)
			munmap(t->zcq, t->zcq_len);
		t->zsq = s->sq;
		t->zcq = s->cq;
		t->zsq_len = s->p.sq_mmap_size;
		t->zcq_len = s->p.cq_mmap_size;
		s->sq = s->cq = NULL;
	}
	kf_sess_unmap(s);
	if (s->fd >= 0)
		close(s->fd);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}

/*
 * A new session. Two in three enable DLCACHE_FEAT_IDLE at once (their
 * last detach leaves a data set idle), the others leave their features
 * to a GET_INFO of the input, if any (else a last detach frees the data
 * set, as for a client that did not ask for it).
 */
static int kf_sess_open(struct kf_sess *s)
{
	static unsigned int n;
	struct dlcache_info in;

	memset(s, 0, sizeof(*s));
	s->fd = open(DLCACHE_DEVICE, O_RDWR | O_CLOEXEC);
	if (s->fd < 0)
		return -errno;
	if (n++ % 3) {
		memset(&in, 0, sizeof(in));
		in.features = DLCACHE_FEAT_IDLE;
		kf_ioctl(s->fd, DLCACHE_IOC_GET_INFO, &in, 0);
	}
	return 0;
}

static long kf_setup(struct kf_sess *s, uint32_t sq, uint32_t cq)
{
	struct dlcache_ring_setup p;
	long ret;

	memset(&p, 0, sizeof(p));
	p.sq_entries = sq;
	p.cq_entries = cq;
	ret = kf_ioctl(s->fd, DLCACHE_IOC_SETUP_RING, &p, 0);
	if (ret == 0) {
		s->p = p;
		s->ring = true;
		ret = kf_sess_map(s);
	}
	return ret;
}

static void kf_add_handle(struct kf_sess *s, const struct dlcache_attach *a, int k)
{
	int i;

	if (s->shared)
		pthread_mutex_lock(&kf_shared_lock);
	for (i = 0; i < s->nh; i++)
		if (s->h[i] == a->handle)
			break;
	if (i == s->nh) {
		if (s->nh == KF_MAX_H)
			i = (int)(a->handle % KF_MAX_H);
		else
			s->nh++;
	}
	s->h[i] = a->handle;
	s->hn[i] = a->nsamples;
	s->hep[i] = 0;
	s->hlen[i] = 0;
	s->hwin[i] = a->window;
	s->hk[i] = (uint8_t)k;
	if (s->shared)
		pthread_mutex_unlock(&kf_shared_lock);
}

static void kf_del_handle(struct kf_sess *s, uint32_t h)
{
	if (s->shared)
		pthread_mutex_lock(&kf_shared_lock);
	for (int i = 0; i < s->nh; i++) {
		if (s->h[i] != h)
			continue;
		s->nh--;
		s->h[i] = s->h[s->nh];
		s->hn[i] = s->hn[s->nh];
		s->hep[i] = s->hep[s->nh];
		s->hlen[i] = s->hlen[s->nh];
		s->hwin[i] = s->hwin[s->nh];
		s->hk[i] = s->hk[s->nh];
		break;
	}
	if (s->shared)
		pthread_mutex_unlock(&kf_shared_lock);
}

/* Index of handle @hsel in the session, or -1 (raw). */
static int kf_hidx(struct kf_sess *s, uint8_t hsel)
{
	int n = __atomic_load_n(&s->nh, __ATOMIC_RELAXED);

	if (hsel == 0xff || n <= 0)
		return -1;
	return hsel % n;
}

/* Counts the consumers joined and created (the report's abi3 line). */
static void kf_note_joined(const struct dlcache_attach *a)
{
	if (a->result_flags & DLCACHE_ATTACH_JOINED)
		__atomic_add_fetch(&sh->joined, 1, __ATOMIC_RELAXED);
	if (a->result_flags & DLCACHE_ATTACH_JOB_CREATED)
		__atomic_add_fetch(&sh->job_created, 1, __ATOMIC_RELAXED);
}

static long kf_attach_key(struct kf_sess *s, int k, uint32_t flags, uint32_t owner,
			  uint64_t job)
{
	struct dlcache_attach a;
	long ret;

	memset(&a, 0, sizeof(a));
	memcpy(a.key, kf_keys[k], 16);
	a.nsamples = kf_key_n[k];
	a.mode = k & 1 ? 0660 : 0640;
	a.flags = flags;
	a.owner_uid = owner;
	if (flags & DLCACHE_ATTACH_F_JOB)
		a.job = job;
	ret = kf_ioctl(s->fd, DLCACHE_IOC_ATTACH, &a, 0);
	if (ret == 0) {
		kf_add_handle(s, &a, k);
		kf_note_joined(&a);
	}
	return ret;
}

/* Takes the CQEs (all, none or half), checks them, notes fills. */
static void kf_reap(struct kf_sess *s, int mode)
{
	uint32_t *head, *tail, mask, entries, h, tl, n, i;
	struct dlcache_cqe *cqes;

	if (!s->cq)
		return;
	head = AT(s->cq, s->p.cq_off.head);
	tail = AT(s->cq, s->p.cq_off.tail);
	mask = *(uint32_t *)AT(s->cq, s->p.cq_off.ring_mask);
	entries = s->p.cq_entries;
	cqes = AT(s->cq, s->p.cq_off.cqes);
	h = __atomic_load_n(head, __ATOMIC_RELAXED);
	tl = __atomic_load_n(tail, __ATOMIC_ACQUIRE);
	n = tl - h;
	if (n > entries) {
		/* Our own garbage, or a racing thread: resynchronise. */
		if (!s->shared && !s->dirty)
			kf_fail("CQ tail %u - head %u exceeds %u entries", tl, h, entries);
		__atomic_store_n(head, tl, __ATOMIC_RELEASE);
		return;
	}
	if (mode == 1)
		return;
	if (mode == 2)
		n /= 2;
	for (i = 0; i < n; i++, h++) {
		struct dlcache_cqe c = cqes[h & mask & (entries - 1)];

		if (!s->shared && !s->dirty) {
			kf_check_cqe(&c);
			__atomic_add_fetch(&sh->cqes, 1, __ATOMIC_RELAXED);
			if (c.flags & DLCACHE_CQE_F_FILL)
				__atomic_add_fetch(&sh->cqe_fill, 1, __ATOMIC_RELAXED);
			if (c.flags & DLCACHE_CQE_F_WAITED)
				__atomic_add_fetch(&sh->cqe_waited, 1, __ATOMIC_RELAXED);
			if (c.res > 0 && (c.user_data >> 32 & 0xff) == DLCACHE_OP_GET)
				__atomic_add_fetch(&sh->cqe_hit, 1, __ATOMIC_RELAXED);
			if ((c.flags & DLCACHE_CQE_F_FILL) && c.res == -ENOENT) {
				s->fill_h[s->nfill % 32] = c.handle;
				s->fill_s[s->nfill % 32] = c.sample;
				s->nfill++;
			}
		}
	}
	__atomic_store_n(head, h, __ATOMIC_RELEASE);
}

/* ---- SQEs -------------------------------------------------------------------- */

static uint32_t kf_gen_sample(struct kf_thr *t)
{
	uint32_t r = kf_rn(t, 10);

	return r < 7 ? kf_rn(t, 16) : r < 9 ? kf_rn(t, 65536) : (uint32_t)kf_rnd(t);
}

static uint32_t kf_gen_len(struct kf_thr *t)
{
	static const uint32_t lens[] = { 0, 1, 64, 100, 777, 4096, 4097, 65536, 131072 };

	switch (kf_rn(t, 6)) {
	case 0: return lens[kf_rn(t, 9)];
	case 1: return kf_info.max_sample_size + 1;
	case 2: return kf_rn(t, KF_BUF);
	case 3: return (uint32_t)kf_rnd(t);
	default: return 1 + kf_rn(t, 16384);
	}
}

static void kf_gen_sqe(struct kf_thr *t, struct kf_sqe *q)
{
	uint32_t r = kf_rn(t, 100);

	memset(q, 0, sizeof(*q));
	q->s.opcode = r < 8 ? DLCACHE_OP_NOP : r < 55 ? DLCACHE_OP_GET :
		      r < 80 ? DLCACHE_OP_PUT : r < 97 ? DLCACHE_OP_ABORT :
		      (uint8_t)(DLCACHE_OP_LAST + kf_rn(t, 300));
	q->hsel = kf_rn(t, 20) ? (uint8_t)kf_rn(t, 64) : 0xff;
	q->s.handle = kf_rn(t, 4) ? kf_rn(t, 8) : (uint32_t)kf_rnd(t);
	q->s.sample = kf_gen_sample(t);
	r = kf_rn(t, 100);
	q->smode = r < 70 ? 1 : r < 75 ? 0 : r < 80 ? 2 : r < 85 ? 3 : r < 88 ? 4 : 5;
	if (q->s.opcode == DLCACHE_OP_PUT || q->s.opcode == DLCACHE_OP_ABORT)
		if (kf_rn(t, 3) == 0)
			q->smode = 5;
	q->asel = kf_rn(t, 10) < 7 ? 0 : (uint8_t)kf_rn(t, 6);
	q->s.addr = kf_rnd(t);
	q->s.len = kf_gen_len(t);
	q->s.user_data = kf_rnd(t);
	switch (q->s.opcode) {
	case DLCACHE_OP_NOP:
		if (kf_rn(t, 10)) {
			q->hsel = 0xff;
			q->s.handle = 0;
			q->smode = 0;
			q->s.sample = 0;
			q->s.len = 0;
			q->asel = 5;
			q->s.addr = 0;
		}
		break;
	case DLCACHE_OP_GET:
		/*
		 * The valid flag combinations have weights of their own:
		 * none 45 %, F_AT 20 %, F_AHEAD | F_AT 20 %, F_AHEAD 15 %.
		 */
		r = kf_rn(t, 20);
		if (r >= 13 && (kf_info.supported & DLCACHE_FEAT_GET_AHEAD)) {
			q->s.flags = DLCACHE_SQE_F_AHEAD | (r < 17 ? DLCACHE_SQE_F_AT : 0);
			if (kf_rn(t, 2)) {
				/* A look-up proper: no buffer. */
				q->s.len = 0;
				q->asel = 1;
			}
		} else if (r >= 9) {
			q->s.flags = DLCACHE_SQE_F_AT;
		}
		if (q->s.flags & DLCACHE_SQE_F_AT) {
			/* Mostly a position of the current order. */
			q->emode = (uint8_t)(kf_rn(t, 2) ? 1 : kf_rn(t, 3));
			q->s.epoch = kf_rn(t, 4);
			q->s.index = kf_rn(t, 100);
		}
		break;
	case DLCACHE_OP_PUT:
		if (!q->s.len)
			q->s.len = 1 + kf_rn(t, 8192);
		break;
	case DLCACHE_OP_ABORT:
		if (kf_rn(t, 3) == 0)
			q->s.flags = DLCACHE_SQE_F_FAIL;
		if (kf_rn(t, 10)) {
			q->s.len = 0;
			q->asel = 5;
			q->s.addr = 0;
		}
		break;
	}
	if (kf_rn(t, 40) == 0)
		q->s.flags = (uint16_t)kf_rnd(t);
	if (kf_rn(t, 50) == 0)
		q->s.resv[kf_rn(t, 3)] = kf_rnd(t);
	if (kf_rn(t, 50) == 0)
		q->s.resv0 = (uint8_t)(1 + kf_rn(t, 255));
	if (kf_rn(t, 30) == 0)
		q->emode |= 0x80;
}

static uint64_t kf_addr(struct kf_thr *t, uint8_t asel, uint64_t raw)
{
	switch (asel) {
	case 0: return (uintptr_t)t->buf + raw % (KF_BUF / 2);
	case 1: return 0;
	case 2: return KF_KADDR + raw % 4096;
	case 3: return (uintptr_t)t->buf + KF_BUF - 1 - raw % 64;	/* into PROT_NONE */
	case 4: return (uintptr_t)t->buf + KF_BUF + kf_page;	/* read-only */
	default: return raw;
	}
}

/*
 * Where an ioctl's argument goes: the local struct @p (asel 0, 1, 5), a
 * kernel address (2), straddling into the PROT_NONE page (3: the copy in
 * fails), or the read-only page (4: the copy in works, the copy back
 * fails, so the error paths after the work run).
 */
static void *kf_arg(struct kf_thr *t, uint8_t asel, void *p, size_t n)
{
	uint8_t *ro = t->buf + KF_BUF + kf_page;

	switch (asel) {
	case 2:
		return (void *)(uintptr_t)KF_KADDR;
	case 3:
		memcpy(t->buf + KF_BUF - n / 2, p, n / 2);
		return t->buf + KF_BUF - n / 2;
	case 4:
		if (mprotect(ro, kf_page, PROT_READ | PROT_WRITE))
			return p;
		memcpy(ro, p, n);
		mprotect(ro, kf_page, PROT_READ);
		return ro;
	default:
		return p;
	}
}

/* Resolves a symbolic SQE into @out for session @s. */
static void kf_fill_sqe(struct kf_thr *t, struct kf_sess *s, const struct kf_sqe *q,
			struct dlcache_sqe *out)
{
	int hi = kf_hidx(s, q->hsel);
	uint32_t ns = 0;

	*out = q->s;
	if (hi >= 0) {
		out->handle = s->h[hi];
		ns = s->hn[hi];
	}
	switch (q->smode) {
	case 1: if (ns) out->sample = q->s.sample % ns; break;
	case 2: if (ns) out->sample = ns - 1; break;
	case 3: if (ns) out->sample = ns; break;
	case 4: if (ns) out->sample = ns + q->s.sample % 1000; break;
	case 5:
		if (s->nfill && !s->shared) {
			unsigned j = (s->nfill - 1 - q->s.sample % 4) % 32;

			if (j < s->nfill) {
				out->handle = s->fill_h[j];
				out->sample = s->fill_s[j];
				break;
			}
		}
		if (ns)
			out->sample = q->s.sample % ns;
		break;
	}
	out->addr = kf_addr(t, q->asel, q->s.addr);
	if (out->len > KF_BUF && out->len != kf_info.max_sample_size + 1)
		out->len %= KF_BUF + 1;
	if ((q->s.flags & DLCACHE_SQE_F_AT) && hi >= 0) {
		switch (q->emode & 3) {
		case 1:
			out->epoch = s->hep[hi];
			out->index = s->hlen[hi] ? q->s.index % s->hlen[hi] : q->s.index % 64;
			break;
		case 2:
			out->epoch = s->hep[hi] + 1;
			break;
		}
	}
	if (!(q->emode & 0x80))
		out->user_data = KF_TAG << 48 | (uint64_t)(out->flags & 0xff) << 40 |
				 (uint64_t)out->opcode << 32 | out->len;
}

static bool kf_push(struct kf_sess *s, const struct dlcache_sqe *sqe)
{
	uint32_t *head, *tail, mask, tl;
	struct dlcache_sqe *sqes;

	if (!s->sq)
		return false;
	head = AT(s->sq, s->p.sq_off.head);
	tail = AT(s->sq, s->p.sq_off.tail);
	mask = s->p.sq_entries - 1;
	sqes = AT(s->sq, s->p.sq_off.sqes);
	tl = __atomic_load_n(tail, __ATOMIC_RELAXED);
	if (tl - __atomic_load_n(head, __ATOMIC_ACQUIRE) >= s->p.sq_entries)
		return false;
	sqes[tl & mask] = *sqe;
	__atomic_store_n(tail, tl + 1, __ATOMIC_RELEASE);
	return true;
}

static void kf_on_sig(int sig)
{
	(void)sig;
}

/* A crash of the fuzzer itself: say where, for addr2line on the binary. */
static void kf_on_crash(int sig, siginfo_t *si, void *uc)
{
	ucontext_t *u = uc;

	dprintf(STDOUT_FILENO, "kcov-fuzz: worker pid %d signal %d at pc %#llx, address %p\n",
		(int)getpid(), sig, (unsigned long long)u->uc_mcontext.gregs[REG_RIP], si->si_addr);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* ---- calls --------------------------------------------------------------- */

/* ---- generators, one per command (kf_iocs[].gen) -------------------------- */

static void kf_gen_get_info(struct kf_thr *t, struct kf_call *c)
{
	c->u.info.features = kf_rnd(t);
}

static void kf_gen_setup_ring(struct kf_thr *t, struct kf_call *c)
{
	uint32_t r = kf_rn(t, 10);

	c->u.setup.sq_entries = r < 7 ? 1 + kf_rn(t, 32) : r < 8 ? 0 :
				r < 9 ? kf_info.max_ring_entries + kf_rn(t, 2) : kf_rn(t, 512);
	c->u.setup.cq_entries = kf_rn(t, 2) ? 0 : c->u.setup.sq_entries + kf_rn(t, 64) - 2;
}

static void kf_gen_enter(struct kf_thr *t, struct kf_call *c)
{
	c->nsqe = (uint8_t)kf_rn(t, KF_MAX_SQE + 1);
	for (int i = 0; i < KF_MAX_SQE; i++)
		kf_gen_sqe(t, &c->sq[i]);
	c->v[0] = kf_rn(t, 10) < 7 ? 0 : kf_rn(t, 4);	/* to_submit mode */
	c->v[1] = kf_rn(t, 10);				/* wait mode */
	if (c->v[1] == 6 && kf_rn(t, 2))		/* costs ms: rarer */
		c->v[1] = 0;
}

static void kf_gen_attach(struct kf_thr *t, struct kf_call *c)
{
	static const uint32_t modes[] = { 0, 0600, 0640, 0660, 0604, 0666, 0644, 0777 };
	uint32_t r;

	c->u.att.nsamples = kf_rn(t, 4) ? kf_rn(t, 2000) : (uint32_t)kf_rnd(t);
	c->u.att.mode = modes[kf_rn(t, 8)];
	r = kf_rn(t, 10);
	c->u.att.flags = r < 6 ? 0 : r < 7 ? DLCACHE_ATTACH_F_NOCREATE :
			 r < 8 ? DLCACHE_ATTACH_F_EXCL : r < 9 ? DLCACHE_ATTACH_F_OWNER :
			 (uint32_t)kf_rn(t, 32);
	if (c->osel)
		c->u.att.flags |= DLCACHE_ATTACH_F_OWNER;
	/*
	 * Consumers (ABI 3): 40 % join a job, mostly one of a few, so that
	 * a data set has several consumers and a job several members; now
	 * and then a job past max_consumers, or any 64-bit one.
	 */
	if (kf_rn(t, 10) < 4) {
		c->u.att.flags |= DLCACHE_ATTACH_F_JOB;
		r = kf_rn(t, 10);
		c->u.att.job = r < 6 ? 1 + kf_rn(t, 4) : r < 7 ? 0 :
			       r < 9 ? kf_rn(t, 2 * kf_info.max_consumers + 2) : kf_rnd(t);
	} else if (kf_rn(t, 50) == 0) {
		c->u.att.job = 1 + kf_rn(t, 4);		/* without F_JOB: -EINVAL */
	}
	r = kf_rn(t, 10);
	c->u.att.window = r < 7 ? 0 : r < 8 ? 64 : r < 9 ? 1 + kf_rn(t, 300) : (uint32_t)kf_rnd(t);
	r = kf_rn(t, 10);
	c->u.att.lookahead = r < 7 ? 0 : r < 9 ? kf_rn(t, 64) : (uint32_t)kf_rnd(t);
	/* Without F_OWNER it must be 0 (ABI 4): now and then it is not. */
	c->u.att.owner_uid = kf_rn(t, 16) ? 0 : (uint32_t)kf_rnd(t);
	c->v[0] = kf_rn(t, 10) == 0;	/* nsamples from the raw field */
	/* 1: fill a data set with consumers; 2: a job with members (-EUSERS) */
	c->v[1] = kf_rn(t, 100) ? 0 : 1 + kf_rn(t, 2);
}

static void kf_gen_detach(struct kf_thr *t, struct kf_call *c)
{
	c->u.det.handle = kf_rn(t, 70);
}

static void kf_gen_set_order(struct kf_thr *t, struct kf_call *c)
{
	c->u.ord.epoch = kf_rn(t, 8);
	c->v[0] = kf_rn(t, 8);		/* len mode */
	c->v[1] = kf_rn(t, 4);		/* epoch mode */
	c->v[2] = kf_rn(t, 5);		/* ids mode */
}

static void kf_gen_stats(struct kf_thr *t, struct kf_call *c)
{
	uint32_t r = kf_rn(t, 10);

	c->u.st.flags = r < 3 ? 0 : r < 6 ? DLCACHE_STATS_F_DATASET :
			r < 9 ? DLCACHE_STATS_F_DATASET | DLCACHE_STATS_F_INDEX :
			(uint32_t)kf_rn(t, 8);
	c->u.st.handle = kf_rn(t, 70);
	c->u.st.bad = kf_rn(t, 30) == 0;
}

static void kf_gen_set_capacity(struct kf_thr *t, struct kf_call *c)
{
	/* Mostly roomy (hits), sometimes tiny (eviction, shrink, bypass). */
	static const uint64_t caps[] = { 0, 4096, 1 << 20, 4 << 20, 16 << 20, 16 << 20, 16 << 20,
					 16 << 20 };

	c->u.cap.bytes = caps[kf_rn(t, 8)] + (kf_rn(t, 4) ? 0 : kf_rn(t, 65536));
}

static void kf_gen_drop(struct kf_thr *t, struct kf_call *c)
{
	c->u.drop.flags = kf_rn(t, 3) ? DLCACHE_DROP_F_KEY : 0;
}

static void kf_gen_get_order(struct kf_thr *t, struct kf_call *c)
{
	uint32_t r = kf_rn(t, 10);

	c->u.gord.flags = r < 5 ? 0 : r < 9 ? DLCACHE_GET_ORDER_F_INDEX :
			  (uint32_t)kf_rn(t, 8);
	c->u.gord.handle = kf_rn(t, 70);
	c->u.gord.consumer = kf_rn(t, 10) ? kf_rn(t, 3) : kf_rn(t, 40);
	c->u.gord.len = kf_rn(t, 10) ? kf_rn(t, KF_IDS + 1) : (uint32_t)kf_rnd(t);
	c->u.gord.from = kf_rn(t, 4) ? kf_rn(t, 600) : kf_rnd(t);
	c->u.gord.bad = kf_rn(t, 30) == 0;
}

static void kf_gen_drain(struct kf_thr *t, struct kf_call *c)
{
	uint32_t r = kf_rn(t, 10);

	c->u.drain.flags = r < 5 ? 0 : r < 7 ? DLCACHE_DRAIN_F_QUERY :
			   r < 9 ? DLCACHE_DRAIN_F_OFF : kf_rn(t, 8);
	c->v[0] = kf_rn(t, 5);		/* what this session does while it drains */
}

static void kf_gen_call(struct kf_thr *t, struct kf_call *c, int op)
{
	unsigned total = 0, r, i;

	if (op < 0) {
		for (i = 0; i < C_NOPS; i++)
			total += i < C_NIOC ? kf_iocs[i].weight : kf_op_weight[i - C_NIOC];
		r = kf_rn(t, total);
		for (op = 0; op < C_NOPS; op++) {
			unsigned w = op < C_NIOC ? kf_iocs[op].weight : kf_op_weight[op - C_NIOC];

			if (r < w)
				break;
			r -= w;
		}
	}
	memset(c, 0, sizeof(*c));
	c->op = (uint8_t)op;
	c->sess = kf_rn(t, 100) < 15 ? KF_NSESS : (uint8_t)kf_rn(t, KF_NSESS);
	c->hsel = kf_rn(t, 20) ? (uint8_t)kf_rn(t, 64) : 0xff;
	c->asel = kf_rn(t, 10) < 8 ? 0 : (uint8_t)kf_rn(t, 6);
	c->ksel = kf_rn(t, 20) ? (uint8_t)kf_rn(t, KF_NKEYS) : 0xff;
	c->osel = kf_rn(t, 3) ? 0 : (uint8_t)kf_rn(t, 5);
	c->x = (uint8_t)kf_rnd(t);
	for (i = 0; i < 4; i++)
		c->v[i] = (uint32_t)kf_rnd(t);

	if (op < C_NIOC)
		kf_iocs[op].gen(t, c);
	else if (op == C_BADCMD)
		c->v[0] = kf_rn(t, 4);
	if (kf_rn(t, 25) == 0 && op < C_NIOC) {
		/* A reserved field or an unknown flag, within the argument. */
		size_t n = op == C_STATS ? sizeof(c->u.st) :
			   op == C_GET_ORDER ? sizeof(c->u.gord) : kf_iocs[op].size;

		if (n > sizeof(c->u.raw))
			n = sizeof(c->u.raw);
		c->u.raw[kf_rn(t, (uint32_t)n)] ^= (uint8_t)(1 + kf_rn(t, 255));
	}
}

static struct kf_sess *kf_sess_of(struct kf_thr *t, const struct kf_call *c)
{
	struct kf_sess *s = c->sess >= KF_NSESS ? &kf_shared_sess : &t->s[c->sess % KF_NSESS];

	if (s->fd < 0 && kf_sess_open(s) < 0)
		return NULL;
	return s;
}

static uint32_t kf_owner(struct kf_thr *t, const struct kf_call *c)
{
	switch (c->osel) {
	case 1: return 0;
	case 2: return KF_UID1;
	case 3: return KF_UID2;
	case 4: return c->u.att.owner_uid;
	default: return getuid();
	}
}

static void kf_do_enter(struct kf_thr *t, struct kf_sess *s, struct kf_call *c)
{
	struct dlcache_enter e;
	struct dlcache_sqe sqe;
	uint32_t pushed = 0, i, avail = 0;
	bool timer = false, dirty;
	void *earg;
	long ret;

	if (!s->ring && kf_rn(t, 10)) {
		kf_setup(s, 8, 16);
		kf_harvest(t);
	}
	if (!s->nh && kf_rn(t, 10) < 7) {
		/* Now and then as a rank of one of a few jobs. */
		kf_attach_key(s, c->ksel == 0xff ? 0 : c->ksel,
			      c->x & 0x20 ? DLCACHE_ATTACH_F_JOB : 0, 0, 1 + (c->x >> 6));
		kf_harvest(t);
	}
	for (i = 0; i < c->nsqe; i++) {
		kf_fill_sqe(t, s, &c->sq[i], &sqe);
		if (!kf_push(s, &sqe))
			break;
		if (sqe.opcode == DLCACHE_OP_GET && (sqe.flags & DLCACHE_SQE_F_AHEAD))
			__atomic_add_fetch(&sh->ahead_sqes, 1, __ATOMIC_RELAXED);
		pushed++;
	}
	memset(&e, 0, sizeof(e));
	switch (c->v[0]) {
	case 0: e.to_submit = pushed; break;
	case 1: e.to_submit = 0; break;
	case 2: e.to_submit = kf_rn(t, 65); break;
	default: e.to_submit = UINT32_MAX; break;
	}
	if (s->cq)
		avail = *(uint32_t *)AT(s->cq, s->p.cq_off.tail) -
			*(uint32_t *)AT(s->cq, s->p.cq_off.head);
	switch (c->v[1]) {
	case 0: case 1: case 2:
		break;
	case 3:
		e.flags = DLCACHE_ENTER_F_GETEVENTS;
		break;
	case 4: case 5:
		e.flags = DLCACHE_ENTER_F_GETEVENTS | DLCACHE_ENTER_F_TIMEOUT;
		e.min_complete = c->v[2] % (pushed + 2);
		e.timeout_ns = (uint64_t[]){ 0, 1000, 100000, 2000000 }[c->v[3] % 4];
		break;
	case 6:
		/* Blocking, broken by the thread's timer (EINTR). */
		e.flags = DLCACHE_ENTER_F_GETEVENTS;
		e.min_complete = avail + pushed + 1 + c->v[2] % 3;
		if (s->ring && e.min_complete > s->p.cq_entries)
			e.min_complete = s->p.cq_entries;
		timer = t->has_timer && !s->shared;
		if (!timer)
			e.flags |= DLCACHE_ENTER_F_TIMEOUT, e.timeout_ns = 1000000;
		break;
	case 7:
		/* GETEVENTS for what is already there. */
		e.flags = DLCACHE_ENTER_F_GETEVENTS;
		e.min_complete = avail < 2 ? avail : 1;
		break;
	case 8:
		/* Invalid combinations. */
		e.flags = (uint32_t)c->v[2] % 8;
		e.min_complete = c->v[3] % 4;
		e.timeout_ns = c->v[3] & 1 ? 0 : 1000;
		if (e.flags & DLCACHE_ENTER_F_GETEVENTS)
			e.flags |= DLCACHE_ENTER_F_TIMEOUT, e.timeout_ns = 1000;
		break;
	default:
		e.flags = DLCACHE_ENTER_F_GETEVENTS | DLCACHE_ENTER_F_TIMEOUT;
		e.min_complete = s->ring ? s->p.cq_entries + (c->v[2] & 1) : 1;
		e.timeout_ns = 1000;
		if (c->v[2] & 2)
			e.reserved[c->v[3] & 1] = 1;
		break;
	}
	if (timer) {
		/* Periodic: a tick that comes before the ENTER sleeps is not the last. */
		struct itimerspec its = { .it_value = { 0, 2000000 + (long)(c->v[3] % 3000000) },
					  .it_interval = { 0, 2000000 } };

		timer_settime(t->timer, 0, &its, NULL);
	}
	if (c->x & 0x10) {
		struct pollfd p = { .fd = s->fd, .events = POLLIN };

		poll(&p, 1, 0);
	}
	kf_out_poison(t, C_ENTER, &e);
	dirty = kf_out_set(C_ENTER, &e);
	earg = kf_arg(t, c->asel, &e, sizeof(e));
	ret = kf_ioctl(s->fd, DLCACHE_IOC_ENTER, earg, e.to_submit);
	kf_out_check(C_ENTER, dirty, earg == &e, ret);
	if (timer) {
		struct itimerspec its = { { 0, 0 }, { 0, 0 } };

		timer_settime(t->timer, 0, &its, NULL);
	}
	if (ret == -EINTR)
		__atomic_add_fetch(&sh->eintr, 1, __ATOMIC_RELAXED);
	/* The return value counts, also when the copy back failed. */
	if (ret > 0 && earg == &e && e.submitted != ret && !s->shared)
		kf_fail("ENTER returned %ld but submitted %u", ret, e.submitted);
	kf_reap(s, c->x % 5 == 0 ? 1 : c->x % 5 == 1 ? 2 : 0);
	if (ret >= 0 && s->dirty && s->cq) {
		/* A scribbled ring (C_CORRUPT under a drain): republished now. */
		uint32_t *head = AT(s->cq, s->p.cq_off.head);

		__atomic_store_n(head, __atomic_load_n((uint32_t *)AT(s->cq, s->p.cq_off.tail),
						       __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
		s->dirty = false;
	}
	if (!s->shared && s->sq) {
		/* Withdraw what the kernel did not consume. */
		uint32_t *head = AT(s->sq, s->p.sq_off.head), *tail = AT(s->sq, s->p.sq_off.tail);

		__atomic_store_n(tail, __atomic_load_n(head, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
	}
}

static void kf_do_set_order(struct kf_thr *t, struct kf_sess *s, struct kf_call *c)
{
	struct dlcache_order o = c->u.ord;
	int hi = kf_hidx(s, c->hsel);
	uint32_t ns = hi >= 0 ? s->hn[hi] : 16, win = hi >= 0 ? s->hwin[hi] : 64, i, start;
	long ret;

	if (hi >= 0)
		o.handle = s->h[hi];
	switch (c->v[0]) {
	case 0: case 1: o.len = ns; break;
	case 2: o.len = ns / 2 + 1; break;
	case 3: o.len = win; break;
	case 4: o.len = win + 1; break;
	case 5: o.len = 1 + c->v[3] % KF_IDS; break;
	case 6: o.len = kf_info.max_order_len + 1; break;
	default: o.len = 1 + c->v[3] % 64; break;
	}
	if (o.len > KF_IDS && c->v[0] != 6 && c->v[0] != 4)
		o.len = KF_IDS;
	if (hi >= 0) {
		switch (c->v[1]) {
		case 0: case 1: o.epoch = s->hep[hi] + 1; break;
		case 2: o.epoch = s->hep[hi]; break;
		}
	}
	start = c->v[3];
	for (i = 0; i < KF_IDS && i < o.len; i++) {
		switch (c->v[2]) {
		case 0: case 1: t->ids[i] = (start + i) % ns; break;
		case 2: t->ids[i] = kf_rn(t, ns); break;
		case 3: t->ids[i] = i == o.len / 2 ? ns + kf_rn(t, 3) : (start + i) % ns; break;
		default: t->ids[i] = kf_rn(t, 16) % ns; break;
		}
	}
	/* Overlong orders read into the guard page: -EFAULT. */
	o.ids = c->asel == 0 ? (uintptr_t)t->ids : kf_addr(t, c->asel, c->v[3]);
	if (c->asel == 5)
		o.ids = (uintptr_t)t->ids + KF_IDS * 4 - (c->v[3] % 16) * 4;
	ret = kf_ioctl(s->fd, DLCACHE_IOC_SET_ORDER, &o, 0);
	if (ret == 0 && hi >= 0 && !s->shared) {
		s->hep[hi] = o.epoch;
		s->hlen[hi] = o.len;
	}
}

/*
 * A child of the same uid opens its own session, takes the fills of a few
 * samples, and is SIGKILLed while this session's GETs wait on them: its
 * release hands the fills over (or fails them) to the waiters.
 */
static void kf_do_forkkill(struct kf_thr *t, struct kf_sess *s, struct kf_call *c)
{
	int k = c->ksel == 0xff ? 2 : c->ksel, hi = -1, pfd[2];
	uint32_t n = kf_key_n[k], base = c->v[0] % n, cnt = 1 + c->v[1] % 4, i;
	struct dlcache_sqe sqe;
	pid_t pid;
	char ch;

	if (s->shared || pipe2(pfd, O_CLOEXEC))
		return;
	if (t->spare.area)
		__atomic_store_n(&t->spare.area[0], 0, __ATOMIC_RELAXED);
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return;
	}
	if (pid == 0) {
		struct kf_sess cs;
		struct dlcache_enter e;

		alarm(5);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		kcov_enable(&t->spare);
		if (kf_sess_open(&cs) == 0 && kf_setup(&cs, 8, 16) == 0 &&
		    kf_attach_key(&cs, k, 0, 0, 0) == 0) {
			for (i = 0; i < cnt; i++) {
				memset(&sqe, 0, sizeof(sqe));
				sqe.opcode = DLCACHE_OP_GET;
				sqe.handle = cs.h[0];
				sqe.sample = (base + i) % n;
				sqe.addr = (uintptr_t)t->buf;
				sqe.len = KF_BUF / 2;
				kf_push(&cs, &sqe);
			}
			if (c->x & 1) {
				memset(&sqe, 0, sizeof(sqe));
				sqe.opcode = DLCACHE_OP_PUT;
				sqe.handle = cs.h[0];
				sqe.sample = base;
				sqe.addr = (uintptr_t)t->buf;
				sqe.len = 1 + c->v[2] % 70000;
				kf_push(&cs, &sqe);
			}
			memset(&e, 0, sizeof(e));
			e.to_submit = 8;
			ioctl(cs.fd, DLCACHE_IOC_ENTER, &e);
		}
		if (write(pfd[1], "x", 1) != 1)
			_exit(1);
		for (;;) {
			memset(&e, 0, sizeof(e));
			e.flags = DLCACHE_ENTER_F_GETEVENTS | DLCACHE_ENTER_F_TIMEOUT;
			e.min_complete = 16;
			e.timeout_ns = 1000000;
			if (ioctl(cs.fd, DLCACHE_IOC_ENTER, &e) < 0 && errno != ETIME)
				usleep(1000);
		}
	}
	close(pfd[1]);
	__atomic_add_fetch(&sh->forks, 1, __ATOMIC_RELAXED);
	{
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };

		if (poll(&p, 1, 2000) == 1 && read(pfd[0], &ch, 1) == 1) {
			/* Wait on the child's fills from this session. */
			for (int j = 0; j < s->nh; j++)
				if (s->hk[j] == k && s->hn[j] == n)
					hi = j;
			if (hi < 0 && kf_attach_key(s, k, 0, 0, 0) == 0)
				hi = s->nh - 1;
			if (!s->ring)
				kf_setup(s, 8, 16);
			if (hi >= 0 && s->sq) {
				for (i = 0; i < cnt; i++) {
					memset(&sqe, 0, sizeof(sqe));
					sqe.opcode = DLCACHE_OP_GET;
					sqe.handle = s->h[hi];
					sqe.sample = (base + i) % n;
					sqe.addr = (uintptr_t)t->buf + KF_BUF / 2;
					sqe.len = KF_BUF / 2;
					sqe.user_data = KF_TAG << 48 | (uint64_t)DLCACHE_OP_GET << 32 | sqe.len;
					kf_push(s, &sqe);
				}
				struct dlcache_enter e = { .to_submit = cnt };

				kf_ioctl(s->fd, DLCACHE_IOC_ENTER, &e, cnt);
			}
		}
	}
	close(pfd[0]);
	if (c->x & 2)
		usleep(c->v[3] % 2000);
	kill(pid, SIGKILL);
	for (int ms = 0; waitpid(pid, NULL, WNOHANG) == 0; ms++) {
		if (ms == 20000) {
			kf_fail("a SIGKILLed child (forkkill) did not die within 20 s");
			t_dump_task(pid);
			break;
		}
		usleep(1000);
	}
	__atomic_add_fetch(&sh->kills, 1, __ATOMIC_RELAXED);
	t->added += kcov_harvest(&t->spare, &sh->range, &sh->cov);
	if (s->ring) {
		/* The waits end now: fills handed over, or failed. */
		struct dlcache_enter e = {
			.flags = DLCACHE_ENTER_F_GETEVENTS | DLCACHE_ENTER_F_TIMEOUT,
			.timeout_ns = 5000000,
			.min_complete = 1,
		};

		kf_ioctl(s->fd, DLCACHE_IOC_ENTER, &e, 0);
		kf_reap(s, 0);
	}
}

/* ---- executors, one per command (kf_iocs[].run) ---------------------------- */

static void kf_do_get_info(struct kf_thr *t, struct kf_sess *s, struct kf_call *c)
{
	struct dlcache_info in = c->u.info;
	void *arg;
	bool dirty;
	long ret;

	kf_out_poison(t, C_GET_INFO, &in);
	dirty = kf_out_set(C_GET_INFO, &in);
	arg = c->asel == 1 ? NULL : kf_arg(t, c->asel, &in, sizeof(in));
	ret = kf_ioctl(s->fd, DLCACHE_IOC_GET_INFO, arg, 0);
	kf_out_check(C_GET_INFO, dirty, arg == &in, ret);
}

static void kf_do_setup_ring(struct kf_thr *t, struct kf_sess *s, struct kf_call *c)
{
	struct dlcache_ring_setup p = c->u.setup;
	void *arg;
	bool dirty;
	long ret;

	if (s->shared)
		return;
	kf_out_poison(t, C_SETUP_RING, &p);
	dirty = kf_out_set(C_SETUP_RING, &p);
	arg = kf_arg(t, c->asel, &p, sizeof(p));
	ret = kf_ioctl(s->fd, DLCACHE_IOC_SETUP_RING, arg, 0);
	kf_out_check(C_SETUP_RING, dirty, arg == &p, ret);
	if (ret == 0 && arg == &p && !s->ring) {
		s->p = p;
		s->ring = true;
		kf_sess_map(s);
	}
}

/*
 * Many attachments of one data set in sessions of their own: mode 1, one
 * job each until the data set has max_consumers consumers; mode 2, one
 * job until it has max_members members. Both end in -EUSERS (or earlier
 * in -EMFILE, -ENOMEM, -EDQUOT); closing the sessions detaches them all.
 */
static void kf_attach_flood(struct kf_thr *t, struct kf_call *c, int k)
{
	uint32_t most = c->v[1] == 1 ? kf_info.max_consumers : kf_info.max_members;
	uint64_t job0 = 1000 + kf_rn(t, 1000);
	struct kf_sess fs[8];
	int nfs = 0;
	long ret = 0;

	if (!most || !kf_info.max_handles)
		return;
	for (uint32_t n = 0; n <= most && nfs <= 8; n++) {
		if (n % kf_info.max_handles == 0) {
			if (nfs == 8 || kf_sess_open(&fs[nfs]) < 0)
				break;
			nfs++;
		}
		ret = kf_attach_key(&fs[nfs - 1], k, DLCACHE_ATTACH_F_JOB, 0,
				    c->v[1] == 1 ? job0 + n : job0);
		if (ret < 0 && ret != -EMFILE)
			break;
		kf_harvest(t);
	}
	while (nfs--)
		kf_sess_close(NULL, &fs[nfs], false);
	kf_harvest(t);
}

static void kf_do_attach(struct kf_thr *t, struct kf_sess *s, struct kf_call *c)
{
	struct dlcache_attach a = c->u.att;
	int k = c->ksel == 0xff ? -1 : c->ksel;
	bool dirty;
	void *arg;
	long ret;

	/*
	 * A flood costs hundreds of ioctls: one every KF_FLOOD_S per thread,
	 * else corpus inputs that hold one would replay it all the time.
	 */
	if (c->v[1] && k >= 0 && kf_now() >= t->next_flood) {
		t->next_flood = kf_now() + KF_FLOOD_S;
		kf_attach_flood(t, c, k);
		return;
	}
	if (k >= 0) {
		memcpy(a.key, kf_keys[k], 16);
		if (!c->v[0])
			a.nsamples = kf_key_n[k];
	}
	if (a.flags & DLCACHE_ATTACH_F_OWNER)
		a.owner_uid = kf_owner(t, c);
	if (a.nsamples > (1U << 20) && a.nsamples != kf_info.max_samples + 1 &&
	    a.nsamples != kf_info.max_samples)
		a.nsamples %= 1U << 20;
	kf_out_poison(t, C_ATTACH, &a);
	dirty = kf_out_set(C_ATTACH, &a);
	arg = kf_arg(t, c->asel, &a, sizeof(a));
	ret = kf_ioctl(s->fd, DLCACHE_IOC_ATTACH, arg, 0);
	kf_out_check(C_ATTACH, dirty, arg == &a, ret);
	if (ret == 0 && arg == &a) {
		kf_add_handle(s, &a, k < 0 ? 0 : k);
		kf_note_joined(&a);
	}
}

static void kf_do_detach(struct kf_thr *t, struct kf_sess *s, struct kf_call *c)
{
	struct dlcache_detach d = c->u.det;
	int hi = kf_hidx(s, c->hsel);
	void *arg;

	if (hi >= 0)
		d.handle = s->h[hi];
	arg = kf_arg(t, c->asel, &d, sizeof(d));
	if (kf_ioctl(s->fd, DLCACHE_IOC_DETACH, arg, 0) == 0 && arg != (void *)(uintptr_t)KF_KADDR)
		kf_del_handle(s, d.handle);
}

static void kf_do_stats(struct kf_thr *t, struct kf_sess *s, struct kf_call *c)
{
	struct dlcache_stats st;
	int hi = kf_hidx(s, c->hsel);
	bool dirty;
	void *arg;

	memset(&st, 0, sizeof(st));
	st.flags = c->u.st.flags;
	st.handle = c->u.st.handle;
	if ((st.flags & DLCACHE_STATS_F_DATASET) && !(st.flags & DLCACHE_STATS_F_INDEX) &&
	    hi >= 0)
		st.handle = s->h[hi];
	if (c->u.st.bad)
		st.reserved[c->v[0] % 2] = 1;
	kf_out_poison(t, C_STATS, &st);
	dirty = kf_out_set(C_STATS, &st);
	arg = kf_arg(t, c->asel, &st, sizeof(st));
	kf_out_check(C_STATS, dirty, arg == &st, kf_ioctl(s->fd, DLCACHE_IOC_STATS, arg, 0));
}

/* Read into t->ids; past its KF_IDS, the guard page: -EFAULT. */
static void kf_do_get_order(struct kf_thr *t, struct kf_sess *s, struct kf_call *c)
{
	struct dlcache_get_order o;
	int hi = kf_hidx(s, c->hsel);
	bool dirty;
	void *arg;

	memset(&o, 0, sizeof(o));
	o.handle = c->u.gord.handle;
	o.flags = c->u.gord.flags;
	o.consumer = c->u.gord.consumer;
	o.len = c->u.gord.len;
	o.from = c->u.gord.from;
	if (!(o.flags & DLCACHE_GET_ORDER_F_INDEX) && hi >= 0)
		o.handle = s->h[hi];
	if (c->u.gord.bad)
		o.reserved[c->v[0] % 2] = 1;
	/* Never a raw address: the kernel writes there. */
	o.ids = c->asel == 0 || c->asel >= 5 ? (uintptr_t)t->ids +
		(c->asel ? KF_IDS * 4 - (c->v[3] % 16) * 4 : 0) :
		kf_addr(t, c->asel, c->v[3]);
	kf_out_poison(t, C_GET_ORDER, &o);
	dirty = kf_out_set(C_GET_ORDER, &o);
	arg = kf_arg(t, c->asel, &o, sizeof(o));
	kf_out_check(C_GET_ORDER, dirty, arg == &o,
		     kf_ioctl(s->fd, DLCACHE_IOC_GET_ORDER, arg, 0));
}

static void kf_do_set_capacity(struct kf_thr *t, struct kf_sess *s, struct kf_call *c)
{
	struct dlcache_capacity cap = c->u.cap;
	bool dirty;
	void *arg;

	if (cap.bytes > 16U << 20)
		cap.bytes %= (16U << 20) + 1;
	kf_out_poison(t, C_SET_CAPACITY, &cap);
	dirty = kf_out_set(C_SET_CAPACITY, &cap);
	arg = kf_arg(t, c->asel, &cap, sizeof(cap));
	kf_out_check(C_SET_CAPACITY, dirty, arg == &cap,
		     kf_ioctl(s->fd, DLCACHE_IOC_SET_CAPACITY, arg, 0));
}

static void kf_do_drop(struct kf_thr *t, struct kf_sess *s, struct kf_call *c)
{
	struct dlcache_drop d = c->u.drop;
	bool dirty;
	void *arg;

	if (c->ksel != 0xff && (d.flags & DLCACHE_DROP_F_KEY))
		memcpy(d.key, kf_keys[c->ksel], 16);
	kf_out_poison(t, C_DROP, &d);
	dirty = kf_out_set(C_DROP, &d);
	arg = kf_arg(t, c->asel, &d, sizeof(d));
	kf_out_check(C_DROP, dirty, arg == &d, kf_ioctl(s->fd, DLCACHE_IOC_DROP, arg, 0));
}

/*
 * What a session does while the module drains (DRAIN, or the parameter
 * drain=1): ENTER is -ESHUTDOWN and detaches the session first, ATTACH,
 * SETUP_RING and SET_ORDER are -ESHUTDOWN, poll() reports EPOLLHUP.
 */
static void kf_while_draining(struct kf_thr *t, struct kf_sess *s, struct kf_call *c,
			      uint32_t what)
{
	switch (what) {
	case 0: {
		struct dlcache_enter e = {
			.flags = DLCACHE_ENTER_F_GETEVENTS | DLCACHE_ENTER_F_TIMEOUT,
			.min_complete = 1,
			.timeout_ns = 1000000,
		};
		long ret;

		if (!s->ring)
			break;
		ret = kf_ioctl(s->fd, DLCACHE_IOC_ENTER, &e, 0);
		if (ret == -ESHUTDOWN && !s->shared)
			s->nh = 0;
		kf_reap(s, 0);
		break;
	}
	case 1:
		kf_attach_key(s, c->ksel == 0xff ? 0 : c->ksel % KF_NKEYS, 0, 0, 0);
		break;
	case 2: {
		struct pollfd p = { .fd = s->fd, .events = POLLIN };

		poll(&p, 1, 0);
		break;
	}
	case 3: {
		struct kf_sess fresh;

		if (kf_sess_open(&fresh) == 0) {
			kf_setup(&fresh, 4, 8);
			kf_sess_close(NULL, &fresh, false);
		}
		break;
	}
	default:
		kf_do_set_order(t, s, c);
		break;
	}
	kf_harvest(t);
}

/* Root drains (briefly) and always ends the drain it may have started. */
static void kf_do_drain(struct kf_thr *t, struct kf_sess *s, struct kf_call *c)
{
	struct dlcache_drain d = c->u.drain, off;
	bool dirty;
	void *arg;
	long ret;

	kf_out_poison(t, C_DRAIN, &d);
	dirty = kf_out_set(C_DRAIN, &d);
	arg = kf_arg(t, c->asel, &d, sizeof(d));
	ret = kf_ioctl(s->fd, DLCACHE_IOC_DRAIN, arg, 0);
	kf_out_check(C_DRAIN, dirty, arg == &d, ret);
	if (getuid() != 0)
		return;
	if (ret == 0 && !(d.flags & (DLCACHE_DRAIN_F_OFF | DLCACHE_DRAIN_F_QUERY)))
		__atomic_add_fetch(&sh->drains, 1, __ATOMIC_RELAXED);
	kf_harvest(t);
	kf_while_draining(t, s, c, c->v[0] % 5);
	memset(&off, 0, sizeof(off));
	off.flags = DLCACHE_DRAIN_F_OFF;
	kf_ioctl(s->fd, DLCACHE_IOC_DRAIN, &off, 0);
}

static void kf_exec_call(struct kf_thr *t, struct kf_call *c)
{
	struct kf_sess *s = kf_sess_of(t, c);

	if (!s)
		return;
	if (c->op < C_NIOC) {
		kf_iocs[c->op].run(t, s, c);
		return;
	}
	switch (c->op) {
	case C_BADCMD: {
		unsigned long cmd;
		uint8_t arg[640];

		memset(arg, 0, sizeof(arg));
		switch (c->v[0]) {
		case 0: cmd = _IOC(c->v[1] % 4, DLCACHE_IOC_MAGIC, 9 + c->v[2] % 40, c->v[3] % 600); break;
		case 1: cmd = _IOC(c->v[1] % 4, DLCACHE_IOC_MAGIC, c->v[2] % 9, c->v[3] % 600); break;
		case 2: cmd = _IOC(_IOC_READ | _IOC_WRITE, 'd', c->v[2] % 9, c->v[3] % 600); break;
		default: cmd = DLCACHE_IOC_GET_INFO + (1UL << 16); break;
		}
		kf_ioctl(s->fd, cmd, c->asel == 2 ? (void *)(uintptr_t)KF_KADDR : arg, 0);
		break;
	}
	case C_MMAP: {
		static const uint64_t offs[] = { DLCACHE_OFF_SQ_RING, DLCACHE_OFF_CQ_RING, 0x1000,
						 DLCACHE_OFF_CQ_RING + 0x1000, 0x100000000ULL,
						 0x8000000000ULL };
		size_t len = (1 + c->v[1] % 8) * (size_t)kf_page;
		uint64_t off = offs[c->v[0] % 6];
		void *m;

		if (c->x & 1 && s->ring)
			len = off == DLCACHE_OFF_CQ_RING ? s->p.cq_mmap_size : s->p.sq_mmap_size;
		m = mmap(NULL, len, c->x & 2 ? PROT_READ : PROT_READ | PROT_WRITE,
			 c->x & 4 ? MAP_PRIVATE : MAP_SHARED, s->fd, (off_t)off);
		if (m != MAP_FAILED) {
			volatile uint8_t b = *(volatile uint8_t *)m;

			(void)b;
			munmap(m, len);
		}
		break;
	}
	case C_UNMAP:
		if (s->shared)
			break;
		if ((c->x & 3) != 1 && s->sq) {
			munmap(s->sq, s->p.sq_mmap_size);
			s->sq = NULL;
		}
		if ((c->x & 3) != 2 && s->cq) {
			munmap(s->cq, s->p.cq_mmap_size);
			s->cq = NULL;
		}
		break;
	case C_REMAP:
		if (!s->shared)
			kf_sess_map(s);
		break;
	case C_CLOSE:
		if (s->shared)
			break;
		kf_sess_close(t, s, c->x & 1);
		if (c->x & 2)
			kf_sess_open(s);
		break;
	case C_POLL: {
		struct pollfd p = { .fd = s->fd, .events = POLLIN | POLLOUT | POLLPRI | POLLRDNORM };
		int r = poll(&p, 1, c->x & 1 ? 1 : 0);

		/* EPOLLHUP | EPOLLERR: while the module drains (root's DRAIN). */
		if (r == 1 && (p.revents & ~(POLLIN | POLLRDNORM | POLLHUP | POLLERR)))
			kf_fail("poll revents %#x", p.revents);
		break;
	}
	case C_FORKKILL:
		kf_do_forkkill(t, s, c);
		break;
	case C_PARAM: {
		/* Module parameters (root): small values only, so memory stays bounded. */
		/*
		 * Every writable parameter. drain=1 lasts one call: this
		 * session's call under the drain (kf_while_draining()), then
		 * drain=0.
		 */
		static const char *const names[] = { "capacity_mb", "fill_lease_ms",
						     "uid_max_datasets", "uid_max_policy_mb",
						     "idle_keep_s", "consumer_stall_ms", "drain" };
		static const char *const vals[][8] = {
			{ "0", "1", "2", "16", "16", "16", "abc", "-1" },
			{ "0", "1", "2", "10", "100", "30000", "abc", "-1" },
			{ "0", "1", "16", "16", "16", "16", "abc", "-1" },
			{ "0", "1", "16", "16", "16", "16", "abc", "-1" },
			{ "0", "1", "2", "600", "600", "4294967295", "abc", "-1" },
			{ "0", "1", "10", "100", "1000", "30000", "abc", "-1" },
			{ "1", "1", "1", "0", "2", "yes", "abc", "-1" },
		};
		const unsigned np = sizeof(names) / sizeof(names[0]);
		const unsigned pi = c->v[0] % np;
		const char *val = vals[pi][c->v[1] % 8];
		char path[128], b[64];
		bool drain = !strcmp(names[pi], "drain");
		int f;

		snprintf(path, sizeof(path), "/sys/module/dlcache/parameters/%s", names[pi]);
		f = open(path, (c->x & 1 ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
		if (f < 0)
			break;
		if (c->x & 1) {
			if (read(f, b, sizeof(b)) < 0)
				(void)0;
		} else if (write(f, val, strlen(val)) >= 0) {
			__atomic_add_fetch(&sh->params, 1, __ATOMIC_RELAXED);
		}
		if (drain && !(c->x & 1)) {
			kf_harvest(t);
			kf_while_draining(t, s, c, c->v[2] % 5);
			if (pwrite(f, "0", 1, 0) < 0)
				(void)0;
		}
		close(f);
		break;
	}
	case C_DEBUGFS: {
		char b[4096];
		int f = open("/sys/kernel/debug/dlcache/stats", O_RDONLY | O_CLOEXEC);

		if (f < 0)
			break;
		for (int n = 0; n < 16 && read(f, b, sizeof(b)) > 0; n++)
			;
		close(f);
		break;
	}
	case C_SHRINK: {
		/* Slab shrinkers run in this task: dlcache's shrinker, traced. */
		int f = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);

		if (f < 0)
			break;
		if (write(f, "2", 1) < 0)
			(void)0;
		close(f);
		break;
	}
	case C_CORRUPT:
		if (s->shared || !s->sq || !s->cq)
			break;
		s->dirty = true;
		switch (c->x & 3) {
		case 0: *(uint32_t *)AT(s->sq, s->p.sq_off.tail) = c->v[0]; break;
		case 1: *(uint32_t *)AT(s->cq, s->p.cq_off.head) = c->v[0]; break;
		case 2: *(uint32_t *)AT(s->sq, s->p.sq_off.head) = c->v[0]; break;
		case 3: *(uint32_t *)AT(s->cq, s->p.cq_off.tail) = c->v[0]; break;
		}
		{
			struct dlcache_enter e = { .to_submit = c->v[1] % 70 };

			kf_ioctl(s->fd, DLCACHE_IOC_ENTER, &e, e.to_submit);
		}
		*(uint32_t *)AT(s->sq, s->p.sq_off.tail) = *(uint32_t *)AT(s->sq, s->p.sq_off.head);
		*(uint32_t *)AT(s->cq, s->p.cq_off.head) = *(uint32_t *)AT(s->cq, s->p.cq_off.tail);
		/*
		 * The kernel republishes its indices at the next ENTER that
		 * runs: not at one refused while the module drains
		 * (-ESHUTDOWN), so the session stays dirty until kf_do_enter()
		 * sees one succeed.
		 */
		{
			struct dlcache_enter e = { 0 };
			long ret = kf_ioctl(s->fd, DLCACHE_IOC_ENTER, &e, 0);

			*(uint32_t *)AT(s->cq, s->p.cq_off.head) =
				*(uint32_t *)AT(s->cq, s->p.cq_off.tail);
			s->dirty = ret < 0;
		}
		break;
	}
}

/* ---- mutation ------------------------------------------------------------ */

static void kf_mutate_call(struct kf_thr *t, struct kf_call *c)
{
	struct kf_sqe *q = &c->sq[kf_rn(t, KF_MAX_SQE)];

	switch (kf_rn(t, 14)) {
	case 0: kf_gen_call(t, c, c->op); break;
	case 1: c->sess = (uint8_t)kf_rn(t, KF_NSESS + 1); break;
	case 2: c->hsel = kf_rn(t, 10) ? (uint8_t)kf_rn(t, 64) : 0xff; break;
	case 3: c->asel = (uint8_t)kf_rn(t, 6); break;
	case 4: c->ksel = kf_rn(t, 10) ? (uint8_t)kf_rn(t, KF_NKEYS) : 0xff; c->osel = (uint8_t)kf_rn(t, 5); break;
	case 5: c->v[kf_rn(t, 4)] = kf_rn(t, 2) ? kf_rn(t, 16) : (uint32_t)kf_rnd(t); break;
	case 6: c->x = (uint8_t)kf_rnd(t); break;
	case 7: kf_gen_sqe(t, q); break;
	case 8: c->nsqe = (uint8_t)kf_rn(t, KF_MAX_SQE + 1); break;
	case 9:
		switch (kf_rn(t, 8)) {
		case 0: q->s.opcode = (uint8_t)kf_rn(t, DLCACHE_OP_LAST); break;
		case 1: q->s.flags = (uint16_t)kf_rn(t, 8); break;
		case 2: q->s.sample = kf_gen_sample(t); q->smode = (uint8_t)kf_rn(t, 6); break;
		case 3: q->s.len = kf_gen_len(t); break;
		case 4: q->asel = (uint8_t)kf_rn(t, 6); break;
		case 5: q->hsel = (uint8_t)kf_rn(t, 64); break;
		case 6: q->emode = (uint8_t)kf_rn(t, 3); q->s.epoch = kf_rn(t, 4); q->s.index = kf_rn(t, 100); break;
		default: q->s.user_data = kf_rnd(t); break;
		}
		break;
	case 10: case 11: {
		/* Byte flips in the raw structures. */
		int n = 1 + (int)kf_rn(t, 3);

		while (n--) {
			if (kf_rn(t, 2))
				c->u.raw[kf_rn(t, sizeof(c->u.raw))] = (uint8_t)kf_rnd(t);
			else
				((uint8_t *)&q->s)[kf_rn(t, sizeof(q->s))] = (uint8_t)kf_rnd(t);
		}
		break;
	}
	default:
		if (c->op == C_ENTER) {
			q->s.sample = kf_rn(t, 2) ? q->s.sample + 1 : q->s.sample - 1;
		} else {
			uint32_t *w = &c->v[kf_rn(t, 4)];

			*w += kf_rn(t, 2) ? 1 : (uint32_t)-1;
		}
	}
}

static void kf_mutate(struct kf_thr *t, struct kf_prog *p)
{
	int n = 1 + (int)kf_rn(t, 3);

	while (n--) {
		uint32_t r = kf_rn(t, 100), i = kf_rn(t, p->ncalls), j;

		if (r < 55) {
			kf_mutate_call(t, &p->c[i]);
		} else if (r < 70 && p->ncalls < KF_MAX_CALLS) {
			memmove(&p->c[i + 1], &p->c[i], (p->ncalls - i) * sizeof(p->c[0]));
			kf_gen_call(t, &p->c[i], -1);
			p->ncalls++;
		} else if (r < 80 && p->ncalls > 1) {
			memmove(&p->c[i], &p->c[i + 1], (p->ncalls - i - 1) * sizeof(p->c[0]));
			p->ncalls--;
		} else if (r < 87 && p->ncalls < KF_MAX_CALLS) {
			p->c[p->ncalls++] = p->c[i];
		} else if (r < 92) {
			struct kf_call tmp;

			j = kf_rn(t, p->ncalls);
			tmp = p->c[i];
			p->c[i] = p->c[j];
			p->c[j] = tmp;
		} else {
			/* Splice: the tail of another corpus input. */
			uint32_t nc = __atomic_load_n(&sh->ncorpus, __ATOMIC_ACQUIRE);

			if (nc) {
				const struct kf_prog *o;

				kf_lock();
				o = &sh->corpus[kf_rn(t, nc)];
				j = kf_rn(t, o->ncalls);
				while (i < KF_MAX_CALLS && j < o->ncalls)
					p->c[i++] = o->c[j++];
				p->ncalls = i > p->ncalls ? i : p->ncalls;
				kf_unlock();
			}
		}
	}
}

/* ---- workers ------------------------------------------------------------- */

static void kf_thr_reset(struct kf_thr *t)
{
	for (int i = 0; i < KF_NSESS; i++)
		kf_sess_close(t, &t->s[i], false);
	if (t->zsq)
		munmap(t->zsq, t->zsq_len);
	if (t->zcq)
		munmap(t->zcq, t->zcq_len);
	t->zsq = t->zcq = NULL;
}

static void kf_run_prog(struct kf_thr *t, struct kf_prog *p)
{
	t->added = 0;
	kf_harvest(t);
	t->added = 0;
	for (uint32_t i = 0; i < p->ncalls && !sh->stop; i++) {
		kf_exec_call(t, &p->c[i]);
		kf_harvest(t);
	}
	/* A closed session's rings go now: the release runs in munmap. */
	if (t->zsq || t->zcq) {
		if (t->zsq)
			munmap(t->zsq, t->zsq_len);
		if (t->zcq)
			munmap(t->zcq, t->zcq_len);
		t->zsq = t->zcq = NULL;
		kf_harvest(t);
	}
	__atomic_add_fetch(&sh->inputs, 1, __ATOMIC_RELAXED);
	/* Without KCOV (KF_NOKCOV), keep some inputs to exercise mutation. */
	if (t->added || (kf_nokcov && kf_rn(t, 20) == 0)) {
		__atomic_add_fetch(&sh->new_inputs, 1, __ATOMIC_RELAXED);
		kf_lock();
		if (sh->ncorpus < KF_CORPUS_MAX)
			sh->corpus[__atomic_fetch_add(&sh->ncorpus, 1, __ATOMIC_RELEASE)] = *p;
		else
			sh->corpus[kf_rn(t, KF_CORPUS_MAX)] = *p;
		kf_unlock();
	}
}

static void *kf_thread(void *arg)
{
	struct kf_thr *t = arg;
	struct sigevent sev;
	unsigned n = 0;

	for (int i = 0; i < KF_NSESS; i++)
		t->s[i].fd = -1;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGUSR1;
	sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
	t->has_timer = timer_create(CLOCK_MONOTONIC, &sev, &t->timer) == 0;
	if (kcov_enable(&t->kc) < 0 && !kf_nokcov) {
		kf_fail("KCOV_ENABLE in worker thread: %s", strerror(errno));
		return NULL;
	}
	while (!sh->stop && kf_now() < kf_deadline) {
		uint32_t nc = __atomic_load_n(&sh->ncorpus, __ATOMIC_ACQUIRE);

		if (nc && kf_rn(t, 10)) {
			kf_lock();
			t->cur = sh->corpus[kf_rn(t, nc)];
			kf_unlock();
			kf_mutate(t, &t->cur);
		} else {
			t->cur.ncalls = 1 + kf_rn(t, 8);
			for (uint32_t i = 0; i < t->cur.ncalls; i++)
				kf_gen_call(t, &t->cur.c[i], -1);
		}
		kf_run_prog(t, &t->cur);
		if (++n % 128 == 0) {
			kf_thr_reset(t);
			kf_harvest(t);
		}
	}
	kf_thr_reset(t);
	kf_harvest(t);
	return NULL;
}

static void kf_worker(uid_t uid, int nthreads, uint64_t seed)
{
	static struct kf_thr thr[8];
	pthread_t tid[8];
	struct sigaction sa;
	int i;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = kf_on_sig;	/* no SA_RESTART: blocking ENTERs get EINTR */
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sa.sa_handler = NULL;
	sa.sa_sigaction = kf_on_crash;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	if (nthreads > 8)
		nthreads = 8;
	for (i = 0; i < nthreads; i++) {
		struct kf_thr *t = &thr[i];
		uint8_t *m;

		t->id = i;
		t->kc.fd = t->spare.fd = -1;
		t->rng = seed * 0x9e3779b97f4a7c15ULL + (uint64_t)i * 7919 + 1;
		/* Opened while root: an unprivileged uid cannot open debugfs. */
		if ((kcov_open(&t->kc) < 0 || kcov_open(&t->spare) < 0) && !kf_nokcov) {
			kf_fail("kcov_open in worker: %s", strerror(errno));
			_exit(1);
		}
		m = mmap(NULL, KF_BUF + 2 * kf_page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			_exit(1);
		for (uint32_t j = 0; j < KF_BUF; j++)
			m[j] = (uint8_t)(j * 13 + i);
		mprotect(m + KF_BUF, kf_page, PROT_NONE);
		mprotect(m + KF_BUF + kf_page, kf_page, PROT_READ);
		t->buf = m;
		m = mmap(NULL, KF_IDS * 4 + kf_page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			_exit(1);
		mprotect(m + KF_IDS * 4, kf_page, PROT_NONE);
		t->ids = (uint32_t *)m;
	}
	if (uid) {
		gid_t groups[1] = { KF_UID1 };

		t_become(uid, uid, groups, 1);
	}
	/* The session the threads share (never closed or unmapped). */
	if (kf_sess_open(&kf_shared_sess) == 0) {
		kf_shared_sess.shared = true;
		kf_setup(&kf_shared_sess, 16, 32);
		kf_attach_key(&kf_shared_sess, 1, 0, 0, 0);
		kf_attach_key(&kf_shared_sess, 2, DLCACHE_ATTACH_F_JOB, 0, 1);
	} else {
		kf_shared_sess.fd = -1;
	}
	for (i = 0; i < nthreads; i++)
		if (pthread_create(&tid[i], NULL, kf_thread, &thr[i]))
			_exit(1);
	for (i = 0; i < nthreads; i++)
		pthread_join(tid[i], NULL);
	_exit(0);
}

/* ---- the blind fuzzer, measured the same way --------------------------------- */

/*
 * tests/qemu/tests/fuzz.c with its main() renamed, its direct ioctl()s and
 * the dlc_test.c calls that issue ioctls wrapped: after each, the PCs of
 * the calling process's buffer (and of the buffer its SIGKILLed children
 * traced into) go into sh->blind_cov.
 */
static struct kcov kf_b_kc = { -1, NULL }, kf_b_spare = { -1, NULL };
static pid_t kf_b_top;	/* the process that runs fuzz.c's main() */

static void kf_b_after(void)
{
	__atomic_add_fetch(&sh->blind_calls, 1, __ATOMIC_RELAXED);
	kcov_harvest(&kf_b_kc, &sh->range, &sh->blind_cov);
	if (kf_b_spare.area)
		kcov_harvest(&kf_b_spare, &sh->range, &sh->blind_cov);
}

static void kf_b_prepare(void)
{
	kf_b_after();
}

static void kf_b_child(void)
{
	/* Trace into the buffer the parent mapped; a new spare for our children. */
	kf_b_kc = kf_b_spare;
	kf_b_spare.fd = -1;
	kf_b_spare.area = NULL;
	if (kf_b_kc.fd >= 0)
		kcov_enable(&kf_b_kc);
	/* fuzz.c's run_fuzzer() child forks fz_child()s: a spare for them. */
	if (getppid() == kf_b_top)
		kcov_open(&kf_b_spare);
}

static void kf_b_exit(void)
{
	kcov_harvest(&kf_b_kc, &sh->range, &sh->blind_cov);
}

static int kf_b_ioctl(int fd, unsigned long cmd, ...)
{
	va_list ap;
	void *arg;
	int ret, e;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	ret = ioctl(fd, cmd, arg);
	e = errno;
	kf_b_after();
	errno = e;
	return ret;
}

#define KF_B_WRAP(ret_t, name, params, args)			\
	static ret_t kf_b_##name params				\
	{							\
		ret_t kf_r_ = name args;			\
		kf_b_after();					\
		return kf_r_;					\
	}
KF_B_WRAP(long, t_ring_init, (struct t_ring *r, int fd, uint32_t a, uint32_t b), (r, fd, a, b))
KF_B_WRAP(long, t_attach, (int fd, const uint64_t key[2], uint32_t n, uint32_t m, uint32_t f,
			   struct dlcache_attach *o), (fd, key, n, m, f, o))
KF_B_WRAP(long, t_detach, (int fd, uint32_t h), (fd, h))
KF_B_WRAP(long, t_enter, (struct t_ring *r, uint32_t a, uint32_t b, uint32_t f, uint64_t to),
	  (r, a, b, f, to))
KF_B_WRAP(int, t_get_info, (int fd, struct dlcache_info *i), (fd, i))
KF_B_WRAP(long, t_set_capacity, (int fd, uint64_t b, uint64_t *o), (fd, b, o))
KF_B_WRAP(long, t_stats, (int fd, uint32_t h, struct dlcache_stats *s), (fd, h, s))
KF_B_WRAP(long, t_drop, (int fd, const uint64_t *k, uint64_t *d), (fd, k, d))
KF_B_WRAP(long, t_get, (struct t_ring *r, uint32_t h, uint32_t s, void *b, uint32_t l,
			struct dlcache_cqe *c), (r, h, s, b, l, c))
KF_B_WRAP(long, t_put, (struct t_ring *r, uint32_t h, uint32_t s, const void *b, uint32_t l,
			struct dlcache_cqe *c), (r, h, s, b, l, c))

#define main kf_blind_main
#define ioctl kf_b_ioctl
#define t_ring_init kf_b_t_ring_init
#define t_attach kf_b_t_attach
#define t_detach kf_b_t_detach
#define t_enter kf_b_t_enter
#define t_get_info kf_b_t_get_info
#define t_set_capacity kf_b_t_set_capacity
#define t_stats kf_b_t_stats
#define t_drop kf_b_t_drop
#define t_get kf_b_t_get
#define t_put kf_b_t_put
#include "../qemu/tests/fuzz.c"
#undef main
#undef ioctl
#undef t_ring_init
#undef t_attach
#undef t_detach
#undef t_enter
#undef t_get_info
#undef t_set_capacity
#undef t_stats
#undef t_drop
#undef t_get
#undef t_put

static int kf_blind_run(unsigned secs)
{
	char s[16];

	snprintf(s, sizeof(s), "%u", secs);
	setenv("DLC_FUZZ_SECONDS", s, 1);
	if ((kcov_open(&kf_b_kc) < 0 || kcov_enable(&kf_b_kc) < 0) && !kf_nokcov)
		return 1;
	kcov_open(&kf_b_spare);
	kf_b_top = getpid();
	pthread_atfork(kf_b_prepare, NULL, kf_b_child);
	atexit(kf_b_exit);
	return kf_blind_main();
}

/* ---- main ---------------------------------------------------------------- */

struct kf_sym {
	uint64_t addr;
	char name[48];
	unsigned n_new, n_blind;
};

static int kf_sym_cmp(const void *a, const void *b)
{
	const struct kf_sym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void kf_count(struct kf_sym *sym, unsigned nsym, const struct pcset *set, bool blind_set)
{
	for (uint32_t i = 0; i < PCSET_SLOTS; i++) {
		uint64_t pc = set->slot[i];
		unsigned lo = 0, hi = nsym;

		if (!pc)
			continue;
		while (hi - lo > 1) {
			unsigned mid = (lo + hi) / 2;

			if (sym[mid].addr <= pc)
				lo = mid;
			else
				hi = mid;
		}
		if (sym[lo].addr > pc)
			continue;
		if (blind_set)
			sym[lo].n_blind++;
		else
			sym[lo].n_new++;
	}
}

/* PCs per function of dlcache.ko, where the two fuzzers differ. */
static void kf_functions(bool blind)
{
	static struct kf_sym sym[2048];
	unsigned nsym = 0, f_new = 0, f_blind = 0, shown = 0, i;
	char line[512];
	FILE *f = fopen("/proc/kallsyms", "r");

	if (!f)
		return;
	while (nsym < 2048 && fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char type, name[256], m[80];

		if (sscanf(line, "%llx %c %255s %79s", &a, &type, name, m) != 4 ||
		    strcmp(m, "[dlcache]") || (type != 't' && type != 'T'))
			continue;
		sym[nsym].addr = a - sh->range.shift;
		snprintf(sym[nsym].name, sizeof(sym[nsym].name), "%.47s", name);
		nsym++;
	}
	fclose(f);
	if (!nsym)
		return;
	qsort(sym, nsym, sizeof(sym[0]), kf_sym_cmp);
	kf_count(sym, nsym, &sh->cov, false);
	kf_count(sym, nsym, &sh->blind_cov, true);
	for (i = 0; i < nsym; i++) {
		f_new += sym[i].n_new > 0;
		f_blind += sym[i].n_blind > 0;
	}
	dprintf(STDOUT_FILENO, "kcov-fuzz: functions of dlcache.ko reached: new %u, blind %u, of %u\n",
		f_new, f_blind, nsym);
	{
		char buf[120];
		size_t len = 0;

		for (i = 0; i < nsym; i++) {
			if (sym[i].n_new || sym[i].n_blind)
				continue;
			if (len && len + strlen(sym[i].name) + 2 > 100) {
				dprintf(STDOUT_FILENO, "kcov-fuzz: not reached: %s\n", buf);
				len = 0;
			}
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s",
						len ? " " : "", sym[i].name);
		}
		if (len)
			dprintf(STDOUT_FILENO, "kcov-fuzz: not reached: %s\n", buf);
	}
	if (!blind)
		return;
	for (i = 0; i < nsym && shown < 60; i++) {
		if (sym[i].n_new == sym[i].n_blind)
			continue;
		dprintf(STDOUT_FILENO, "kcov-fuzz:   %-40s new %3u blind %3u\n", sym[i].name,
			sym[i].n_new, sym[i].n_blind);
		shown++;
	}
}

static void kf_dump_corpus(const char *dir)
{
	char path[512];
	uint32_t i, n = sh->ncorpus;

	mkdir(dir, 0755);
	for (i = 0; i < n; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/input-%04u", dir, i);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			continue;
		if (write(fd, &sh->corpus[i], offsetof(struct kf_prog, c) +
			  sh->corpus[i].ncalls * sizeof(struct kf_call)) < 0)
			dprintf(STDOUT_FILENO, "kcov-fuzz: writing %s: %s\n", path, strerror(errno));
		close(fd);
	}
	dprintf(STDOUT_FILENO, "kcov-fuzz: corpus of %u inputs written to %s\n", n, dir);
}

struct kf_wk {
	pid_t pid;
	uid_t uid;
	int nthreads;
	unsigned restarts;
};

static pid_t kf_spawn(struct kf_wk *w, uint64_t seed)
{
	pid_t pid = fork();

	if (pid == 0)
		kf_worker(w->uid, w->nthreads, seed);
	return pid;
}

int main(int argc, char **argv)
{
	static struct pcset probe;
	struct kf_wk wk[3] = {
		{ .uid = 0, .nthreads = 2 }, { .uid = KF_UID1, .nthreads = 1 },
		{ .uid = KF_UID2, .nthreads = 1 },
	};
	const char *e;
	unsigned secs = 60, blind_pcs = 0;
	double blind_s = 0, t0, t1;
	uint64_t blind_calls = 0;
	int fd, ret, i, status, blind_rc = -1;
	bool blind = true, ok = true;
	struct kcov k;
	pthread_mutexattr_t ma;

	setvbuf(stdout, NULL, _IOLBF, 0);
#ifdef KF_FORCE_NOKCOV
	setenv("KF_NOKCOV", "1", 1);
#endif
	kf_page = sysconf(_SC_PAGESIZE);
	if ((e = getenv("DLCQEMU_FUZZ_SECONDS")) && atoi(e) > 0)
		secs = (unsigned)atoi(e);
	if (argc > 1 && atoi(argv[1]) > 0)
		secs = (unsigned)atoi(argv[1]);
	if ((e = getenv("KF_BLIND")) && !strcmp(e, "0"))
		blind = false;
	if ((e = getenv("KF_ROOT_THREADS")) && atoi(e) > 0)
		wk[0].nthreads = atoi(e);

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		FATAL("mmap shared: %m");
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&sh->lock, &ma);

	fd = open(DLCACHE_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		FATAL("open %s: %m", DLCACHE_DEVICE);
	memset(&kf_info, 0, sizeof(kf_info));
	if (ioctl(fd, DLCACHE_IOC_GET_INFO, &kf_info) < 0)
		FATAL("GET_INFO: %m");

	/* KCOV, and dlcache.ko's code under it. */
	ret = kcov_open(&k);
	if (ret < 0 && (e = getenv("KF_NOKCOV")) && !strcmp(e, "1")) {
		dprintf(STDOUT_FILENO, "kcov-fuzz: KCOV unavailable (%s); KF_NOKCOV=1: fuzzing "
			"without coverage\n", strerror(-ret));
		kf_nokcov = true;
		close(fd);
		goto keys;
	}
	if (ret < 0)
		t_skip("KCOV unavailable (%s: %s): needs a kernel with CONFIG_KCOV and debugfs "
		       "(the debug kernel of tests/qemu/debug-kernel)", KCOV_PATH, strerror(-ret));
	ret = kcov_module_range("dlcache", &sh->range);
	if (ret < 0)
		t_skip("no text symbols of [dlcache] in /proc/kallsyms (%s)", strerror(-ret));
	if (kcov_enable(&k) < 0)
		t_skip("KCOV_ENABLE: %m");
	{
		struct dlcache_info in;

		memset(&in, 0, sizeof(in));
		ioctl(fd, DLCACHE_IOC_GET_INFO, &in);
		in.flags = 1;
		ioctl(fd, DLCACHE_IOC_GET_INFO, &in);
	}
	ret = (int)kcov_harvest(&k, &sh->range, &probe);
	ioctl(k.fd, KCOV_DISABLE, 0);
	kcov_close(&k);
	if (ret == 0)
		t_skip("dlcache.ko is not instrumented by KCOV (no PC of its text %#llx-%#llx "
		       "traced): build it against the CONFIG_KCOV kernel",
		       (unsigned long long)sh->range.lo, (unsigned long long)sh->range.hi);
	close(fd);
keys:
	for (i = 0; i < KF_NKEYS; i++) {
		char tag[32];

		snprintf(tag, sizeof(tag), "kcov-fuzz-%d", i);
		t_key(tag, kf_keys[i]);
	}
	if (!kf_nokcov)
		dprintf(STDOUT_FILENO, "kcov-fuzz: KCOV on; dlcache.ko text %#llx-%#llx (%u symbols); "
		"%u s per fuzzer; workers: root x%d, uid %d, uid %d\n",
		(unsigned long long)sh->range.lo, (unsigned long long)sh->range.hi,
		sh->range.nsyms, secs, wk[0].nthreads, KF_UID1, KF_UID2);

	/* The old blind fuzzer first, on the fresh module, for the same time. */
	if (blind) {
		pid_t pid = fork();

		t0 = kf_now();
		if (pid < 0)
			FATAL("fork: %m");
		if (pid == 0)
			exit(kf_blind_run(secs));
		blind_rc = t_wait(pid, secs + 120);
		t1 = kf_now();
		blind_s = t1 - t0;
		blind_pcs = (unsigned)pcset_count(&sh->blind_cov);
		blind_calls = sh->blind_calls;
		dprintf(STDOUT_FILENO, "kcov-fuzz: blind fuzzer (tests/qemu/tests/fuzz.c): %u PCs in "
			"%.0f s (%llu calls), exit status %d\n", blind_pcs, blind_s,
			(unsigned long long)blind_calls, blind_rc);
	}

	/* Anyone may open the device: the unprivileged workers. */
	if (chown(DLCACHE_DEVICE, 0, 0) || chmod(DLCACHE_DEVICE, 0666))
		FATAL("chmod %s: %m", DLCACHE_DEVICE);
	fd = t_open();
	{
		struct dlcache_capacity cap = { .bytes = 16 << 20 };

		if (ioctl(fd, DLCACHE_IOC_SET_CAPACITY, &cap) < 0)
			FATAL("SET_CAPACITY: %m");
	}
	close(fd);

	t0 = kf_now();
	kf_deadline = t0 + secs;
	for (i = 0; i < 3; i++) {
		wk[i].pid = kf_spawn(&wk[i], (uint64_t)i + 1);
		if (wk[i].pid < 0)
			FATAL("fork: %m");
	}
	while (kf_now() < kf_deadline) {
		t_msleep(200);
		for (i = 0; i < 3; i++) {
			pid_t got = waitpid(wk[i].pid, &status, WNOHANG);

			if (got != wk[i].pid)
				continue;
			if (kf_now() >= kf_deadline - 1) {
				wk[i].pid = -1;
				continue;
			}
			dprintf(STDOUT_FILENO, "kcov-fuzz: worker uid %u ended early (%s %d); restarting\n",
				(unsigned)wk[i].uid, WIFSIGNALED(status) ? "signal" : "status",
				WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
			if (++wk[i].restarts > 20) {
				kf_fail("worker uid %u keeps dying", (unsigned)wk[i].uid);
				wk[i].pid = -1;
				continue;
			}
			wk[i].pid = kf_spawn(&wk[i], (uint64_t)i + 1 + 1000 * wk[i].restarts);
		}
	}
	sh->stop = 1;
	for (i = 0; i < 3; i++) {
		if (wk[i].pid <= 0)
			continue;
		status = t_wait(wk[i].pid, 30);
		if (status < 0) {
			kf_fail("worker uid %u did not stop within 30 s of the time limit (killed)",
				(unsigned)wk[i].uid);
			t_dump_task(wk[i].pid);
		}
	}
	t1 = kf_now();

	if (!kf_nokcov)
		kf_functions(blind);
	if ((e = getenv("KF_CORPUS_DIR")) && *e)
		kf_dump_corpus(e);
	dprintf(STDOUT_FILENO, "kcov-fuzz: executions: %llu ioctls, %llu inputs (%llu with new "
		"coverage), %llu children SIGKILLed, in %.0f s\n",
		(unsigned long long)sh->ioctls, (unsigned long long)sh->inputs,
		(unsigned long long)sh->new_inputs, (unsigned long long)sh->kills, t1 - t0);
	dprintf(STDOUT_FILENO, "kcov-fuzz: ring: %llu CQEs checked (%llu GET hits, %llu with "
		"F_FILL, %llu with F_WAITED), %llu ENTERs interrupted\n",
		(unsigned long long)sh->cqes, (unsigned long long)sh->cqe_hit,
		(unsigned long long)sh->cqe_fill, (unsigned long long)sh->cqe_waited,
		(unsigned long long)sh->eintr);
	{
		char line[1024];
		int n = 0;

		for (i = 0; i < C_NIOC && n < (int)sizeof(line) - 64; i++)
			n += snprintf(line + n, sizeof(line) - n, " %s %llu/%llu", kf_iocs[i].name,
				      (unsigned long long)sh->ioc_ok[i],
				      (unsigned long long)sh->ioc_calls[i]);
		dprintf(STDOUT_FILENO, "kcov-fuzz: commands (succeeded/issued):%s\n", line);
	}
	dprintf(STDOUT_FILENO, "kcov-fuzz: abi3: %llu drains started, %llu -ESHUTDOWN, %llu "
		"parameter writes; %llu GET F_AHEAD SQEs (%llu hits), %llu F_SOONER (%llu "
		"without F_AT); %llu F_JOB joins (%llu consumers created), %llu -EUSERS\n",
		(unsigned long long)sh->drains, (unsigned long long)sh->eshutdown,
		(unsigned long long)sh->params, (unsigned long long)sh->ahead_sqes,
		(unsigned long long)sh->ahead_hits, (unsigned long long)sh->cqe_sooner,
		(unsigned long long)sh->sooner_no_at, (unsigned long long)sh->joined,
		(unsigned long long)sh->job_created, (unsigned long long)sh->eusers);
	dprintf(STDOUT_FILENO, "kcov-fuzz: abi4: %llu calls with a kernel field set, %llu "
		"refused -EINVAL (the rest -EPERM)\n", (unsigned long long)sh->out_sent,
		(unsigned long long)sh->out_einval);
	dprintf(STDOUT_FILENO, "kcov-fuzz: coverage: %llu distinct dlcache.ko PCs, corpus %u inputs\n",
		(unsigned long long)pcset_count(&sh->cov), sh->ncorpus);
	if (blind)
		dprintf(STDOUT_FILENO, "kcov-fuzz: new %llu PCs in %.0f s (%llu execs), blind %u PCs "
			"in %.0f s (%llu execs), ratio %.2f\n",
			(unsigned long long)pcset_count(&sh->cov), t1 - t0,
			(unsigned long long)sh->ioctls, blind_pcs, blind_s,
			(unsigned long long)blind_calls,
			blind_pcs ? (double)pcset_count(&sh->cov) / blind_pcs : 0.0);
	if (blind && blind_rc != 0) {
		dprintf(STDOUT_FILENO, "FAIL: the blind fuzzer (fuzz.c) exited with %d\n", blind_rc);
		ok = false;
	}
	if (sh->nfail) {
		dprintf(STDOUT_FILENO, "FAIL: %llu device answers outside the documented set "
			"(first %d above)\n", (unsigned long long)sh->nfail, KF_MAX_FAILS);
		ok = false;
	}
	return ok ? 0 : 1;
}
