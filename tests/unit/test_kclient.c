// SPDX-License-Identifier: MIT
/*
 * The kernel backend against a fake dlcache.ko: this program defines
 * ioctl() itself, so the library's DLCACHE_IOC_* calls land here, and
 * DLCACHE_DEVICE names a sparse file that both sides map at the ABI's
 * ring offsets. The fake runs GET/PUT/ABORT on an in-memory store. It
 * checks, on the host:
 *
 *  - trust: the default config ATTACHes with no flags (this user's own
 *    data set); kernel_owner_uid / DLCACHE_OWNER_UID of another uid gives
 *    DLCACHE_ATTACH_F_OWNER | F_NOCREATE with that owner_uid and one log
 *    line naming it; ATTACH reporting any other owner than expected, an
 *    ABI other than 2, or a module without DLCACHE_FEAT_OWNER, means no
 *    kernel backend (AUTO falls back, KERNEL fails);
 *  - integrity: samples whose cached bytes are wrong (another sample's
 *    valid JPEG, a truncated copy, bytes larger than indexed) are counted
 *    in checksum_errors, logged once per sample with the path, read from
 *    their files, and the batches equal those of a run without the kernel
 *    backend; with verification off the wrong bytes do reach the batch;
 *  - sizes: with an index without CRCs, a module claiming 1.5 GiB of a
 *    sample gets no GET re-issued with a buffer of that size: the file is
 *    read, once logged, verified or not;
 *  - read-ahead (DLCACHE_FEAT_GET_AHEAD, on in every test as in the real
 *    module): look-ups ahead, the misses read and PUT after their use,
 *    each use still one GET F_AT, the batches those of the in-process
 *    backend, also when the module goes away mid-run at any of 30 points;
 *    none without the bit;
 *  - ring layout: SETUP_RING replies whose offsets, entry arrays or
 *    sizes fall outside the mappings, or whose entry counts exceed what
 *    was asked, are refused by dlc_kclient_check_layout() (-EPROTO, with
 *    a reason), and through the loader (the fake's reply with its SQE
 *    array past the SQ mapping) mean no kernel backend, with a log line.
 *
 * Exit 0 pass, 1 fail.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/types.h>
#include "../uapi/dlcache.h"
#include "dlcache.h"
#include "kclient.h"

#include "helpers/testutil.h"

#define NCLASS	2
#define PER	8
#define N	(NCLASS * PER)
#define SIDE	32
#define BATCH	4

/* ---- the fake module ---------------------------------------------------- */

static struct {
	/* set by the test */
	uint32_t abi;
	uint64_t supported;
	int info_err;			/* GET_INFO fails with it (ENOTTY: ABI <= 3) */
	uint32_t out_set;		/* calls with a kernel field set (-EINVAL) */
	uint64_t info_wanted;		/* the features GET_INFO asked for */
	int64_t owner_reply;		/* -1: the owner asked for, or euid */
	int attach_err;
	uint32_t mode_reply;		/* 0: the mode asked for */
	/* -EEXIST for an ATTACH asking a window (another geometry) */
	int window_differs;
	/* seen */
	uint32_t attach_calls, attach_flags, attach_owner, attach_mode;
	uint32_t setup_calls, gets, puts;
	/* GETs with F_AHEAD, of them hits, and any sent without the feature */
	uint32_t aheads, ahead_hits, ahead_unasked;
	uint32_t at_gets;		/* GETs with F_AT: the uses */
	uint8_t used[N];		/* a GET F_AT of the sample came in */
	int sooner;			/* F_AHEAD | F_AT misses say F_SOONER */
	uint32_t ahead_at;		/* look-ups ahead that named their use */
	uint32_t bare_uses;		/* GETs F_AT of length 0: read-ahead's uses */
	uint32_t put_before_use;	/* PUTs of a sample never used yet */
	/* ENTERs so far; from the fail_enter-th on ENTER fails -ENXIO (0: never) */
	uint32_t enters, fail_enter;
	/* the rings */
	dev_t dev;
	ino_t ino;
	uint8_t *sq, *cq;
	uint32_t sq_entries, cq_entries;
	/* the cache: bytes per sample */
	uint8_t *store[N];
	uint32_t store_len[N];
	/* a size the module claims for a sample (0: its bytes'), -EMSGSIZE */
	uint32_t claim[N];
	uint32_t max_get_len;		/* the largest GET buffer asked for */
	/* park the GET at global index park_index (-1: none) */
	int64_t park_index;
	int parked;
	struct dlcache_sqe park_sqe;
	uint32_t park_enters, max_get_index;
	/* SETUP_RING's reply: sq_off.sqes moved by this many bytes */
	uint32_t sqes_shift;
} fk;

#define SQ_HDR	64
#define CQ_HDR	64
#define U32(base, off) ((uint32_t *)((base) + (off)))

static int is_fake_fd(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_dev == fk.dev && st.st_ino == fk.ino;
}

static void store_set(uint32_t id, const void *p, uint32_t len)
{
	free(fk.store[id]);
	fk.store[id] = malloc(len ? len : 1);
	memcpy(fk.store[id], p, len);
	fk.store_len[id] = len;
}

static void fake_post(const struct dlcache_sqe *s, int32_t res, uint32_t flags,
		      uint32_t size)
{
	uint32_t tail = *U32(fk.cq, 4);
	struct dlcache_cqe *c = (struct dlcache_cqe *)(fk.cq + CQ_HDR) +
				(tail & (fk.cq_entries - 1));

	memset(c, 0, sizeof(*c));
	c->user_data = s->user_data;
	c->res = res;
	c->flags = flags;
	c->handle = s->handle;
	c->sample = s->sample;
	c->size = size;
	__atomic_store_n(U32(fk.cq, 4), tail + 1, __ATOMIC_RELEASE);
}

static void fake_get(const struct dlcache_sqe *s)
{
	if (s->flags & DLCACHE_SQE_F_AHEAD) {
		/* A look-up ahead: the size on a hit, nothing copied; a miss fills. */
		fk.aheads++;
		fk.ahead_at += !!(s->flags & DLCACHE_SQE_F_AT);
		if (!(fk.supported & DLCACHE_FEAT_GET_AHEAD))
			fk.ahead_unasked++;
		if (s->sample >= N || !fk.store[s->sample]) {
			fake_post(s, -ENOENT, fk.sooner && (s->flags & DLCACHE_SQE_F_AT) ?
				  DLCACHE_CQE_F_SOONER : DLCACHE_CQE_F_FILL, 0);
		} else {
			fk.ahead_hits++;
			fake_post(s, (int32_t)fk.store_len[s->sample], 0,
				  fk.store_len[s->sample]);
		}
		return;
	}
	if (s->len > fk.max_get_len)
		fk.max_get_len = s->len;
	if (s->sample >= N || !fk.store[s->sample])
		fake_post(s, -ENOENT, DLCACHE_CQE_F_FILL, 0);
	else if (fk.claim[s->sample] && s->len < fk.claim[s->sample])
		fake_post(s, -EMSGSIZE, 0, fk.claim[s->sample]);
	else if (s->len < fk.store_len[s->sample])
		fake_post(s, -EMSGSIZE, 0, fk.store_len[s->sample]);
	else {
		memcpy((void *)(uintptr_t)s->addr,
		       fk.store[s->sample], fk.store_len[s->sample]);
		fake_post(s, (int32_t)fk.store_len[s->sample], 0,
			  fk.store_len[s->sample]);
	}
}

static int fake_enter(struct dlcache_enter *e)
{
	uint32_t head = *U32(fk.sq, 0), n = 0;
	uint32_t tail = __atomic_load_n(U32(fk.sq, 4), __ATOMIC_ACQUIRE);

	/* A drained module: what it posted stays, nothing more runs. */
	if (fk.fail_enter && ++fk.enters >= fk.fail_enter) {
		errno = ENXIO;
		return -1;
	}

	/*
	 * A parked GET (another process's fill in progress) completes when
	 * a GET a window later came in, or after many ENTERs.
	 */
	if (fk.parked == 1 && (fk.max_get_index >= fk.park_index + 8 ||
			       ++fk.park_enters > 20000)) {
		fk.parked = 2;
		*U32(fk.cq, 16) &= ~DLCACHE_CQ_F_PENDING;
		fake_get(&fk.park_sqe);
	}

	while (head != tail && n < e->to_submit) {
		struct dlcache_sqe *s = (struct dlcache_sqe *)(fk.sq + SQ_HDR) +
					(head & (fk.sq_entries - 1));
		uint32_t cq_used = *U32(fk.cq, 4) - *U32(fk.cq, 0);

		if (cq_used >= fk.cq_entries)
			break;
		switch (s->opcode) {
		case DLCACHE_OP_GET:
			fk.gets++;
			/* A look-up ahead, with or without F_AT, is no use. */
			if (s->flags & DLCACHE_SQE_F_AHEAD) {
				fake_get(s);
				break;
			}
			if (s->flags & DLCACHE_SQE_F_AT) {
				fk.at_gets++;
				fk.bare_uses += !s->len;
				if (s->sample < N)
					fk.used[s->sample] = 1;
			}
			if ((s->flags & DLCACHE_SQE_F_AT) && s->epoch == 0 &&
			    s->index > fk.max_get_index)
				fk.max_get_index = s->index;
			if (!fk.parked && (s->flags & DLCACHE_SQE_F_AT) &&
			    s->epoch == 0 && s->index == fk.park_index) {
				fk.park_sqe = *s;
				fk.parked = 1;
				*U32(fk.cq, 16) |= DLCACHE_CQ_F_PENDING;
				break;
			}
			fake_get(s);
			break;
		case DLCACHE_OP_PUT:
			fk.puts++;
			fk.put_before_use += s->sample < N && !fk.used[s->sample];
			if (s->sample < N && !fk.store[s->sample])
				store_set(s->sample, (void *)(uintptr_t)s->addr, s->len);
			fake_post(s, (int32_t)s->len, DLCACHE_CQE_F_CACHED, 0);
			break;
		default:
			fake_post(s, 0, 0, 0);
			break;
		}
		head++;
		n++;
	}
	__atomic_store_n(U32(fk.sq, 0), head, __ATOMIC_RELEASE);
	e->submitted = n;
	return (int)n;
}

/*
 * As the module from ABI 4: a kernel field (uapi/dlcache.h's "kernel:")
 * set on input is -EINVAL. Counted, so that a test sees the library
 * never sends one.
 */
static int fake_out_set(unsigned long req, const void *arg)
{
	const struct dlcache_info *i = arg;
	const struct dlcache_ring_setup *rs = arg;
	const struct dlcache_enter *e = arg;
	const struct dlcache_attach *a = arg;
	const struct dlcache_stats *st = arg;
	static const struct dlcache_ring_setup zrs;
	static const struct dlcache_stats zst;

	switch (req) {
	case DLCACHE_IOC_GET_INFO:
		return i->abi_version || i->supported || i->capacity_bytes ||
		       i->max_sample_size || i->max_samples || i->max_datasets ||
		       i->max_order_len || i->max_ring_entries || i->max_handles ||
		       i->max_fills || i->max_consumers || i->max_members;
	case DLCACHE_IOC_SETUP_RING:
		return rs->sq_mmap_size || rs->cq_mmap_size ||
		       memcmp(&rs->sq_off, &zrs.sq_off, sizeof(rs->sq_off)) ||
		       memcmp(&rs->cq_off, &zrs.cq_off, sizeof(rs->cq_off));
	case DLCACHE_IOC_ENTER:
		return e->submitted != 0;
	case DLCACHE_IOC_ATTACH:
		return a->handle || a->owner_gid || a->result_flags ||
		       (a->owner_uid && !(a->flags & DLCACHE_ATTACH_F_OWNER));
	case DLCACHE_IOC_STATS:
		return memcmp(&st->capacity_bytes, &zst.capacity_bytes,
			      offsetof(struct dlcache_stats, reserved) -
			      offsetof(struct dlcache_stats, capacity_bytes));
	}
	return 0;
}

static int fake_ioctl(int fd, unsigned long req, void *arg)
{
	if (fake_out_set(req, arg)) {
		fk.out_set++;
		errno = EINVAL;
		return -1;
	}
	switch (req) {
	case DLCACHE_IOC_GET_INFO: {
		struct dlcache_info *i = arg;

		if (fk.info_err) {
			errno = fk.info_err;
			return -1;
		}
		fk.info_wanted = i->features;
		i->abi_version = fk.abi;
		i->supported = fk.supported;
		i->features &= fk.supported;
		i->capacity_bytes = 64 << 20;
		i->max_sample_size = 1 << 24;
		i->max_samples = 1 << 20;
		i->max_ring_entries = 4096;
		return 0;
	}
	case DLCACHE_IOC_ATTACH: {
		struct dlcache_attach *a = arg;

		fk.attach_calls++;
		fk.attach_flags = a->flags;
		fk.attach_owner = a->owner_uid;
		fk.attach_mode = a->mode;
		if (fk.attach_err) {
			errno = fk.attach_err;
			return -1;
		}
		if (fk.window_differs && a->window) {
			errno = EEXIST;
			return -1;
		}
		if (fk.mode_reply)
			a->mode = fk.mode_reply;
		a->handle = 1;
		a->result_flags = DLCACHE_ATTACH_MAY_WRITE;
		a->owner_uid = fk.owner_reply >= 0 ? (uint32_t)fk.owner_reply :
			       (a->flags & DLCACHE_ATTACH_F_OWNER) ? a->owner_uid :
			       (uint32_t)geteuid();
		return 0;
	}
	case DLCACHE_IOC_SETUP_RING: {
		struct dlcache_ring_setup *rs = arg;
		uint32_t e = 1;

		fk.setup_calls++;
		while (e < rs->sq_entries)
			e <<= 1;
		fk.sq_entries = e;
		fk.cq_entries = 2 * e;
		rs->sq_entries = e;
		rs->cq_entries = 2 * e;
		rs->sq_mmap_size = SQ_HDR + (uint64_t)e * sizeof(struct dlcache_sqe);
		rs->cq_mmap_size = CQ_HDR + (uint64_t)2 * e * sizeof(struct dlcache_cqe);
		rs->sq_off = (struct dlcache_sqring_offsets){
			.head = 0, .tail = 4, .ring_mask = 8, .ring_entries = 12,
			.flags = 16, .dropped = 20,
			.sqes = SQ_HDR + fk.sqes_shift };
		rs->cq_off = (struct dlcache_cqring_offsets){
			.head = 0, .tail = 4, .ring_mask = 8, .ring_entries = 12,
			.flags = 16, .pending = 20, .cqes = CQ_HDR };
		if (ftruncate(fd, (off_t)(DLCACHE_OFF_CQ_RING + rs->cq_mmap_size)))
			return -1;
		fk.sq = mmap(NULL, rs->sq_mmap_size, PROT_READ | PROT_WRITE,
			     MAP_SHARED, fd, DLCACHE_OFF_SQ_RING);
		fk.cq = mmap(NULL, rs->cq_mmap_size, PROT_READ | PROT_WRITE,
			     MAP_SHARED, fd, DLCACHE_OFF_CQ_RING);
		if (fk.sq == MAP_FAILED || fk.cq == MAP_FAILED)
			return -1;
		memset(fk.sq, 0, SQ_HDR);
		memset(fk.cq, 0, CQ_HDR);
		*U32(fk.sq, 8) = e - 1;
		*U32(fk.sq, 12) = e;
		*U32(fk.cq, 8) = 2 * e - 1;
		*U32(fk.cq, 12) = 2 * e;
		return 0;
	}
	case DLCACHE_IOC_ENTER:
		return fake_enter(arg);
	case DLCACHE_IOC_SET_ORDER:
	case DLCACHE_IOC_STATS:
		return 0;
	default:
		errno = ENOTTY;
		return -1;
	}
}

/* Every ioctl of this program, the library's included, comes here. */
int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (_IOC_TYPE(req) == DLCACHE_IOC_MAGIC && is_fake_fd(fd))
		return fake_ioctl(fd, req, arg);
	return (int)syscall(SYS_ioctl, fd, req, arg);
}

static void fake_reset(void)
{
	uint32_t i;

	/* What came before sent no kernel field (ABI 4). */
	CHECK_EQ(fk.out_set, 0);

	for (i = 0; i < N; i++) {
		free(fk.store[i]);
		fk.store[i] = NULL;
		fk.store_len[i] = 0;
		fk.claim[i] = 0;
	}
	fk.max_get_len = 0;
	fk.abi = DLCACHE_ABI_VERSION;
	fk.info_err = 0;
	fk.out_set = 0;
	/* As dlcache.ko now: every test runs with the look-ups ahead. */
	fk.supported = DLCACHE_FEAT_RING | DLCACHE_FEAT_POLL |
		       DLCACHE_FEAT_GET_AT | DLCACHE_FEAT_FILL_WAIT |
		       DLCACHE_FEAT_SHRINKER | DLCACHE_FEAT_OWNER |
		       DLCACHE_FEAT_GET_AHEAD;
	fk.owner_reply = -1;
	fk.attach_err = 0;
	fk.mode_reply = 0;
	fk.window_differs = 0;
	fk.park_index = -1;
	fk.parked = 0;
	fk.park_enters = fk.max_get_index = 0;
	fk.attach_calls = fk.setup_calls = fk.gets = fk.puts = 0;
	fk.aheads = fk.ahead_hits = fk.ahead_unasked = fk.at_gets = 0;
	fk.put_before_use = 0;
	fk.sooner = 0;
	fk.ahead_at = fk.bare_uses = 0;
	memset(fk.used, 0, sizeof(fk.used));
	fk.enters = fk.fail_enter = 0;
	fk.sqes_shift = 0;
	fk.attach_flags = fk.attach_owner = 0xdeadbeef;
}

/* ---- logs ----------------------------------------------------------------- */

#define logbuf t_logbuf

static void log_cb(void *arg, int level, const char *msg)
{
	t_log_capture(arg, level, msg);
	dlc_log_stderr(arg, level, msg);
}

static void log_clear(void)
{
	t_log_clear();
}

/* Lines of the log holding @s. */
static int log_count(const char *s)
{
	const char *p = logbuf;
	int n = 0;

	while ((p = strstr(p, s))) {
		n++;
		p = strchr(p, '\n');
		if (!p)
			break;
	}
	return n;
}

/* ---- helpers -------------------------------------------------------------- */

static char *dir;
static struct dlc_index *idx;
static uint8_t *files[N];
static size_t file_len[N];

static void config(struct dlc_config *cfg, uint32_t backend)
{
	dlc_config_init(cfg);
	dlc_transform_default(&cfg->transform, DLC_TRANSFORM_EVAL);
	cfg->transform.out_w = cfg->transform.out_h = SIDE;
	cfg->transform.resize = SIDE + 4;
	cfg->batch_size = BATCH;
	cfg->seed = 11;
	cfg->window = 8;
	cfg->queue_depth = 4;
	cfg->decode_threads = 1;
	cfg->backend = backend;
	cfg->cache_bytes = 0;
	cfg->log = log_cb;
	cfg->log_level = DLC_LOG_INFO;
}

/* Hash each batch of epochs 0 and 1 (pixels, labels, ids) into @h. */
static int run(const struct dlc_config *cfg, uint64_t *h, uint32_t *nb,
	       struct dlc_stats *st)
{
	struct dlc_loader *l = NULL;
	struct dlc_batch *b;
	uint32_t e;
	int ret;

	*nb = 0;
	ret = dlc_loader_create(cfg, idx, &l);
	if (ret)
		return ret;
	for (e = 0; e < 2; e++) {
		CHECK_EQ(dlc_loader_start_epoch(l, e, 0), 0);
		while ((ret = dlc_next_batch(l, &b)) == 0) {
			uint64_t x = T_FNV_INIT;

			x = t_fnv(b->data, (size_t)b->count * 3 * SIDE * SIDE, x);
			x = t_fnv(b->labels, b->count * sizeof(*b->labels), x);
			x = t_fnv(b->ids, b->count * sizeof(*b->ids), x);
			h[(*nb)++] = x;
			CHECK_EQ(dlc_release_batch(l, b), 0);
		}
		CHECK_EQ(ret, -ENODATA);
	}
	if (st)
		dlc_loader_stats(l, st, sizeof(*st));
	dlc_loader_destroy(l);
	return 0;
}

/* ---- trust ---------------------------------------------------------------- */

/* Create a loader with @cfg; returns its backend, or -errno. */
static int try_backend(const struct dlc_config *cfg)
{
	struct dlc_loader *l = NULL;
	int ret = dlc_loader_create(cfg, idx, &l);

	if (ret)
		return ret;
	ret = (int)dlc_loader_backend(l);
	dlc_loader_destroy(l);
	return ret;
}

static void test_trust(void)
{
	struct dlc_config cfg;
	uint32_t self = (uint32_t)geteuid(), other = self + 4242;
	char line[128];

	/* Default: our own data set, no flags; no trust line. */
	fake_reset();
	log_clear();
	config(&cfg, DLC_BACKEND_AUTO);
	CHECK_EQ(cfg.kernel_owner_uid, DLC_OWNER_SELF);
	CHECK_EQ(try_backend(&cfg), DLC_BACKEND_KERNEL);
	CHECK_EQ(fk.attach_calls, 1);
	CHECK_EQ(fk.attach_flags, 0);
	CHECK_EQ(log_count("trusting"), 0);
	/*
	 * ABI 4: the session's features are those GET_INFO asked for. The
	 * loader asks for idle retention (DLCACHE_FEAT_IDLE), which a module
	 * without it need not have (fk.supported lacks it here).
	 */
	CHECK(fk.info_wanted & DLCACHE_FEAT_IDLE, "GET_INFO asked %#llx",
	      (unsigned long long)fk.info_wanted);

	/* Naming ourselves is the same as the default. */
	fake_reset();
	cfg.kernel_owner_uid = self;
	CHECK_EQ(try_backend(&cfg), DLC_BACKEND_KERNEL);
	CHECK_EQ(fk.attach_flags, 0);

	/* Another owner: F_OWNER | F_NOCREATE with its uid, and one line. */
	fake_reset();
	log_clear();
	cfg.kernel_owner_uid = other;
	CHECK_EQ(try_backend(&cfg), DLC_BACKEND_KERNEL);
	CHECK_EQ(fk.attach_flags, DLCACHE_ATTACH_F_OWNER | DLCACHE_ATTACH_F_NOCREATE);
	CHECK_EQ(fk.attach_owner, other);
	snprintf(line, sizeof(line), "trusting the data set of owner uid %u", other);
	CHECK_EQ(log_count(line), 1);

	/* ATTACH answers with a data set of someone else: never used. */
	fake_reset();
	log_clear();
	fk.owner_reply = other + 1;
	CHECK_EQ(try_backend(&cfg), DLC_BACKEND_INPROCESS);
	CHECK_EQ(fk.setup_calls, 0);
	CHECK(log_count("another owner") == 1, "log:\n%s", logbuf);
	cfg.backend = DLC_BACKEND_KERNEL;
	CHECK_EQ(try_backend(&cfg), -EPERM);

	/* The same for the default config (a module that ignores owners). */
	fake_reset();
	cfg.kernel_owner_uid = DLC_OWNER_SELF;
	fk.owner_reply = other;
	CHECK_EQ(try_backend(&cfg), -EPERM);
	cfg.backend = DLC_BACKEND_AUTO;
	CHECK_EQ(try_backend(&cfg), DLC_BACKEND_INPROCESS);
	CHECK_EQ(fk.setup_calls, 0);

	/* The trusted owner has no such data set: fall back, say why. */
	fake_reset();
	log_clear();
	cfg.kernel_owner_uid = other;
	fk.attach_err = ENOENT;
	CHECK_EQ(try_backend(&cfg), DLC_BACKEND_INPROCESS);
	CHECK(log_count("no data set of this key") == 1, "log:\n%s", logbuf);
	fk.attach_err = EACCES;
	CHECK_EQ(try_backend(&cfg), DLC_BACKEND_INPROCESS);

	/* DLCACHE_OWNER_UID wins over the config, both ways. */
	fake_reset();
	snprintf(line, sizeof(line), "%u", other + 7);
	setenv("DLCACHE_OWNER_UID", line, 1);
	cfg.kernel_owner_uid = DLC_OWNER_SELF;
	CHECK_EQ(try_backend(&cfg), DLC_BACKEND_KERNEL);
	CHECK_EQ(fk.attach_flags, DLCACHE_ATTACH_F_OWNER | DLCACHE_ATTACH_F_NOCREATE);
	CHECK_EQ(fk.attach_owner, other + 7);
	fake_reset();
	setenv("DLCACHE_OWNER_UID", "self", 1);
	cfg.kernel_owner_uid = other;
	CHECK_EQ(try_backend(&cfg), DLC_BACKEND_KERNEL);
	CHECK_EQ(fk.attach_flags, 0);
	setenv("DLCACHE_OWNER_UID", "12x", 1);
	CHECK_EQ(try_backend(&cfg), -EINVAL);
	setenv("DLCACHE_OWNER_UID", "4294967295", 1);
	CHECK_EQ(try_backend(&cfg), -EINVAL);
	unsetenv("DLCACHE_OWNER_UID");

	/* ABI 1 (a key alone reached any user's bytes), or no FEAT_OWNER. */
	fake_reset();
	cfg.kernel_owner_uid = DLC_OWNER_SELF;
	fk.abi = 1;
	CHECK_EQ(try_backend(&cfg), DLC_BACKEND_INPROCESS);
	CHECK_EQ(fk.attach_calls, 0);
	fake_reset();
	fk.supported &= ~DLCACHE_FEAT_OWNER;
	CHECK_EQ(try_backend(&cfg), DLC_BACKEND_INPROCESS);
	CHECK_EQ(fk.attach_calls, 0);
	cfg.backend = DLC_BACKEND_KERNEL;
	CHECK_EQ(try_backend(&cfg), -EPROTO);

	/*
	 * A module of ABI 3 or earlier (ioctl magic 'D') knows none of our
	 * commands: GET_INFO's -ENOTTY is "another ABI", as above.
	 */
	fake_reset();
	log_clear();
	fk.info_err = ENOTTY;
	cfg.backend = DLC_BACKEND_AUTO;
	CHECK_EQ(try_backend(&cfg), DLC_BACKEND_INPROCESS);
	CHECK_EQ(fk.attach_calls, 0);
	CHECK(log_count("another ABI") == 1, "log:\n%s", logbuf);
	cfg.backend = DLC_BACKEND_KERNEL;
	CHECK_EQ(try_backend(&cfg), -EPROTO);
}

/*
 * The mode: our own data set is asked for with kernel_mode (0: 0600)
 * spelled out, and one that ATTACH returns with another mode (a module
 * that gives back a data set kept idle from a 0666 run) is never used;
 * -EEXIST for another geometry is retried for any window, F_NOCREATE;
 * a trusted owner's data set is asked for with any mode.
 */
static void test_mode(void)
{
	struct dlc_config cfg;
	uint32_t other = (uint32_t)geteuid() + 4242;

	fake_reset();
	config(&cfg, DLC_BACKEND_AUTO);
	CHECK_EQ(try_backend(&cfg), DLC_BACKEND_KERNEL);
	CHECK_EQ(fk.attach_mode, 0600);
	cfg.kernel_mode = 0640;
	CHECK_EQ(try_backend(&cfg), DLC_BACKEND_KERNEL);
	CHECK_EQ(fk.attach_mode, 0640);

	/* Asked 0600, given 0666: fall back, say why; KERNEL fails. */
	fake_reset();
	log_clear();
	cfg.kernel_mode = 0600;
	fk.mode_reply = 0666;
	CHECK_EQ(try_backend(&cfg), DLC_BACKEND_INPROCESS);
	CHECK_EQ(fk.setup_calls, 0);
	CHECK(log_count("another mode than kernel_mode asks") == 1, "log:\n%s", logbuf);
	cfg.backend = DLC_BACKEND_KERNEL;
	CHECK_EQ(try_backend(&cfg), -EEXIST);
	cfg.backend = DLC_BACKEND_AUTO;

	/* Another window: attached without one, never created. */
	fake_reset();
	fk.window_differs = 1;
	CHECK_EQ(try_backend(&cfg), DLC_BACKEND_KERNEL);
	CHECK_EQ(fk.attach_calls, 2);
	CHECK(fk.attach_flags & DLCACHE_ATTACH_F_NOCREATE, "flags %#x", fk.attach_flags);
	CHECK_EQ(fk.attach_mode, 0600);

	/* A trusted owner's data set: its mode is the owner's. */
	fake_reset();
	cfg.kernel_owner_uid = other;
	fk.mode_reply = 0644;
	CHECK_EQ(try_backend(&cfg), DLC_BACKEND_KERNEL);
	CHECK_EQ(fk.attach_mode, 0);
}

/* ---- ring layout --------------------------------------------------------- */

/* A good SETUP_RING reply for @asked SQ entries, as the fake gives. */
static void good_layout(struct dlcache_ring_setup *rs, uint32_t asked)
{
	uint32_t e = 1;

	while (e < asked)
		e <<= 1;
	memset(rs, 0, sizeof(*rs));
	rs->sq_entries = e;
	rs->cq_entries = 2 * e;
	rs->sq_mmap_size = SQ_HDR + (uint64_t)e * sizeof(struct dlcache_sqe);
	rs->cq_mmap_size = CQ_HDR + (uint64_t)2 * e * sizeof(struct dlcache_cqe);
	rs->sq_off = (struct dlcache_sqring_offsets){
		.head = 0, .tail = 4, .ring_mask = 8, .ring_entries = 12,
		.flags = 16, .dropped = 20, .sqes = SQ_HDR };
	rs->cq_off = (struct dlcache_cqring_offsets){
		.head = 0, .tail = 4, .ring_mask = 8, .ring_entries = 12,
		.flags = 16, .pending = 20, .cqes = CQ_HDR };
}

static void test_ring_layout(void)
{
	struct dlcache_ring_setup rs;
	struct dlc_config cfg;
	const char *why;
	uint32_t i;
	/* Each a bad reply to 16 entries asked: what it changes. */
	static const struct {
		const char *name;
		uint32_t field;		/* byte offset in the reply */
		uint64_t value;
		uint32_t width;
	} bad[] = {
#define BAD(f, v) { #f "=" #v, offsetof(struct dlcache_ring_setup, f), v, \
		    sizeof(((struct dlcache_ring_setup *)0)->f) }
		BAD(sq_entries, 32), BAD(sq_entries, 0), BAD(sq_entries, 12),
		BAD(cq_entries, 64), BAD(cq_entries, 0), BAD(cq_entries, 24),
		BAD(sq_mmap_size, 0), BAD(sq_mmap_size, (2ULL << 30)),
		BAD(sq_mmap_size, 64 + 15 * 64),
		BAD(cq_mmap_size, 64 + 31 * 32), BAD(cq_mmap_size, 0),
		BAD(sq_off.head, 64 + 16 * 64), BAD(sq_off.head, 0xfffffffe),
		BAD(sq_off.tail, 2), BAD(sq_off.ring_mask, 0xffffffff),
		BAD(sq_off.ring_entries, 64 + 16 * 64 - 2),
		BAD(sq_off.flags, 1 << 20), BAD(sq_off.dropped, 0x7ffffffc),
		BAD(sq_off.sqes, 72), BAD(sq_off.sqes, 68),
		BAD(sq_off.sqes, 0xffffffc0),
		BAD(cq_off.head, 64 + 32 * 32), BAD(cq_off.tail, 0xfffffffc),
		BAD(cq_off.ring_mask, 7), BAD(cq_off.ring_entries, 1 << 30),
		BAD(cq_off.flags, 64 + 32 * 32 - 3), BAD(cq_off.pending, 1 << 24),
		BAD(cq_off.cqes, 96), BAD(cq_off.cqes, 0xffffffe0),
		BAD(cq_off.cqes, 4),
#undef BAD
	};

	good_layout(&rs, 16);
	CHECK_EQ(dlc_kclient_check_layout(&rs, 16, &why), 0);
	/* Fewer than asked is the module's right (its max_ring_entries). */
	good_layout(&rs, 4);
	CHECK_EQ(dlc_kclient_check_layout(&rs, 16, &why), 0);
	good_layout(&rs, 12);
	CHECK_EQ(dlc_kclient_check_layout(&rs, 12, &why), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		good_layout(&rs, 16);
		if (bad[i].width == 8)
			memcpy((uint8_t *)&rs + bad[i].field, &bad[i].value, 8);
		else
			memcpy((uint8_t *)&rs + bad[i].field,
			       &(uint32_t){ (uint32_t)bad[i].value }, 4);
		why = NULL;
		CHECK(dlc_kclient_check_layout(&rs, 16, &why) == -EPROTO &&
		      why && strstr(why, "SETUP_RING"),
		      "%s: refused with a reason", bad[i].name);
	}

	/* Through the loader: the fake's SQEs end past the SQ mapping. */
	fake_reset();
	log_clear();
	fk.sqes_shift = 8;
	config(&cfg, DLC_BACKEND_AUTO);
	CHECK_EQ(try_backend(&cfg), DLC_BACKEND_INPROCESS);
	CHECK_EQ(fk.setup_calls, 1);
	CHECK(log_count("SETUP_RING returned SQ offsets outside the SQ mapping") == 1,
	      "log:\n%s", logbuf);
	cfg.backend = DLC_BACKEND_KERNEL;
	CHECK_EQ(try_backend(&cfg), -EPROTO);
	fake_reset();
	cfg.backend = DLC_BACKEND_AUTO;
	CHECK_EQ(try_backend(&cfg), DLC_BACKEND_KERNEL);
}

/* ---- integrity ------------------------------------------------------------ */

static void test_wrong_bytes(void)
{
	uint64_t ref[64], got[64], off[64];
	uint32_t nref = 0, ngot = 0, noff = 0, i, big = 0, diff = 0;
	/*
	 * Another sample's valid JPEG padded to this one's size (only the
	 * crc tells), a truncated copy, and bytes larger than indexed.
	 */
	uint32_t bad[3] = { 3, 6, 10 }, nbad = 3, small = 0;
	uint8_t *pad;
	struct dlc_config cfg;
	struct dlc_stats st;
	char path[4096];

	/* The reference: no kernel backend, nothing verified. */
	fake_reset();
	log_clear();
	config(&cfg, DLC_BACKEND_INPROCESS);
	cfg.verify = DLC_VERIFY_OFF;
	CHECK_EQ(run(&cfg, ref, &nref, NULL), 0);
	CHECK_EQ(nref, 2 * N / BATCH);

	/* The cache holds every sample, three of them wrong. */
	for (i = 0; i < N; i++)
		if (file_len[i] > file_len[big])
			big = i;
	if (big == bad[2])
		bad[2] = 11;
	CHECK(file_len[big] > file_len[bad[2]] + 1);
	for (i = 0; i < N; i++)
		store_set(i, files[i], (uint32_t)file_len[i]);
	for (i = 0; i < N; i++)
		if (file_len[i] < file_len[small])
			small = i;
	CHECK(small != bad[0] && file_len[small] < file_len[bad[0]]);
	pad = calloc(1, file_len[bad[0]]);
	memcpy(pad, files[small], file_len[small]);
	store_set(bad[0], pad, (uint32_t)file_len[bad[0]]);
	free(pad);
	store_set(bad[1], files[bad[1]], (uint32_t)file_len[bad[1]] / 2);
	store_set(bad[2], files[big], (uint32_t)file_len[big]);

	config(&cfg, DLC_BACKEND_KERNEL);
	CHECK_EQ(run(&cfg, got, &ngot, &st), 0);
	CHECK_EQ(ngot, nref);
	for (i = 0; i < ngot && i < nref; i++)
		CHECK(got[i] == ref[i], "batch %u differs from the reference", i);
	/* Every use of a bad sample: two epochs. */
	CHECK_EQ(st.checksum_errors, 2 * nbad);
	CHECK_EQ(st.hits, 2 * (N - nbad));
	CHECK_EQ(st.misses, 2 * nbad);
	CHECK_EQ(st.errors, 0);
	CHECK(st.verified >= 2 * (N - 1), "verified %llu", (unsigned long long)st.verified);
	for (i = 0; i < nbad; i++) {
		snprintf(path, sizeof(path), "(%s/%s)", dlc_index_root(idx),
			 dlc_index_relpath(idx, bad[i]));
		CHECK(log_count(path) == 1, "sample %u named %d times in the log:\n%s",
		      bad[i], log_count(path), logbuf);
	}
	CHECK(log_count("checksum") == (int)nbad, "log:\n%s", logbuf);
	CHECK(log_count("crc32c") == 1, "log:\n%s", logbuf);
	/* The good ones were never written again; the bad ones not fixed. */
	CHECK_EQ(fk.puts, 0);

	/* Verification off: the wrong bytes reach the batches. */
	log_clear();
	cfg.verify = DLC_VERIFY_OFF;
	CHECK_EQ(run(&cfg, off, &noff, &st), 0);
	CHECK_EQ(st.checksum_errors, 0);
	CHECK_EQ(st.verified, 0);
	for (i = 0; i < noff && i < nref; i++)
		diff += off[i] != ref[i];
	CHECK(diff > 0, "without verification every batch still matched");

	/* DLCACHE_VERIFY=off overrides the config the same way. */
	setenv("DLCACHE_VERIFY", "off", 1);
	cfg.verify = DLC_VERIFY_KERNEL;
	CHECK_EQ(run(&cfg, off, &noff, &st), 0);
	CHECK_EQ(st.verified, 0);
	setenv("DLCACHE_VERIFY", "bogus", 1);
	CHECK_EQ(run(&cfg, off, &noff, &st), -EINVAL);
	unsetenv("DLCACHE_VERIFY");
}

/*
 * An index without CRCs (format 1), and a module that says it holds
 * 1.5 GiB of one sample (-EMSGSIZE with that size): the GET is not
 * re-issued with a buffer of that size (the largest asked for is a
 * file's size + 1); the sample is read from its file, logged once, and
 * the batches equal the in-process ones; with verification off too.
 */
static void test_size_claim(void)
{
	uint64_t ref[64], got[64];
	uint32_t nref = 0, ngot = 0, i, liar = 5, maxlen = 0, pass;
	struct dlc_index *idx2 = idx, *idx1 = NULL;
	struct dlc_config cfg;
	struct dlc_stats st;
	char ipath[4096], *v2 = NULL, *v1 = NULL;
	uint8_t *raw;
	size_t len = 0;

	snprintf(ipath, sizeof(ipath), "%s.idx", dir);
	CHECK_EQ(dlc_index_save(idx2, ipath), 0);
	raw = t_read_file(ipath, &len);
	v2 = raw ? calloc(1, len + 1) : NULL;
	if (v2)
		memcpy(v2, raw, len);
	free(raw);
	v1 = v2 ? t_index_format1(v2, NULL) : NULL;
	CHECK(v1 != NULL);
	if (v1) {
		CHECK_EQ(t_write_file(ipath, v1, strlen(v1)), 0);
		CHECK_EQ(dlc_index_load(ipath, &idx1), 0);
	}
	free(v1);
	free(v2);
	unlink(ipath);
	if (!idx1)
		return;
	CHECK_EQ(dlc_index_crc32c(idx1, 0, &i), -ENODATA);
	idx = idx1;
	for (i = 0; i < N; i++)
		maxlen = file_len[i] > maxlen ? (uint32_t)file_len[i] : maxlen;

	fake_reset();
	config(&cfg, DLC_BACKEND_INPROCESS);
	CHECK_EQ(run(&cfg, ref, &nref, NULL), 0);
	for (pass = 0; pass < 2; pass++) {
		fake_reset();
		log_clear();
		for (i = 0; i < N; i++)
			store_set(i, files[i], (uint32_t)file_len[i]);
		fk.claim[liar] = 3U << 29;
		config(&cfg, DLC_BACKEND_KERNEL);
		if (pass)
			cfg.verify = DLC_VERIFY_OFF;
		CHECK_EQ(run(&cfg, got, &ngot, &st), 0);
		CHECK(fk.max_get_len <= maxlen + 1,
		      "pass %u: a GET of %u bytes (files: at most %u)", pass,
		      fk.max_get_len, maxlen);
		CHECK(ngot == nref && !memcmp(ref, got, nref * sizeof(*ref)),
		      "pass %u: batches differ from the in-process ones", pass);
		CHECK_EQ(st.errors, 0);
		CHECK_EQ(st.misses, 2);
		CHECK(log_count("dlcache.ko holds 1610612736 bytes") == 1,
		      "pass %u: log:\n%s", pass, logbuf);
	}
	idx = idx2;
	dlc_index_free(idx1);
	fake_reset();
}

/*
 * verify all, in-process: a file rewritten after indexing (same size, a
 * valid JPEG) fails as corrupt and is never cached; the others pass.
 */
/*
 * shard_drop_last with a ragged world: glen = world * floor(N / world) is
 * below N, and the every-rank order uploaded to the module is still
 * computed over all N samples; the batches equal the in-process ones.
 */
static void test_shard_drop_last(void)
{
	uint64_t ref[64], got[64];
	uint32_t nref = 0, ngot = 0;
	struct dlc_config cfg;

	fake_reset();
	config(&cfg, DLC_BACKEND_INPROCESS);
	cfg.world = 3;
	cfg.rank = 2;
	cfg.shard_drop_last = 1;
	CHECK_EQ(run(&cfg, ref, &nref, NULL), 0);
	CHECK_EQ(nref, 2 * ((N / 3 + BATCH - 1) / BATCH));
	cfg.backend = DLC_BACKEND_KERNEL;
	CHECK_EQ(run(&cfg, got, &ngot, NULL), 0);
	CHECK(ngot == nref && memcmp(ref, got, nref * 8) == 0,
	      "kernel backend batches equal the in-process ones");
}

static void test_verify_all(void)
{
	uint64_t h[64];
	uint32_t nb = 0;
	struct dlc_config cfg;
	struct dlc_stats st;
	char path[4096];
	uint8_t *changed;

	config(&cfg, DLC_BACKEND_INPROCESS);
	cfg.verify = DLC_VERIFY_ALL;
	cfg.cache_bytes = 64 << 20;
	CHECK_EQ(run(&cfg, h, &nb, &st), 0);
	CHECK_EQ(st.verified, N);	/* epoch 1 is served by the cache */
	CHECK_EQ(st.checksum_errors, 0);
	CHECK_EQ(st.errors, 0);

	changed = malloc(file_len[2]);
	memcpy(changed, files[2], file_len[2]);
	changed[file_len[2] - 3] ^= 0x55;	/* in the entropy data, near EOI */
	snprintf(path, sizeof(path), "%s/%s", dlc_index_root(idx),
		 dlc_index_relpath(idx, 2));
	CHECK_EQ(t_write_file(path, changed, file_len[2]), 0);
	log_clear();
	CHECK_EQ(run(&cfg, h, &nb, &st), 0);
	CHECK_EQ(st.checksum_errors, 2);	/* not cached, read again */
	CHECK_EQ(st.errors_by_kind[DLC_ERR_CORRUPT], 2);
	CHECK_EQ(st.skipped, 2);
	CHECK(log_count("crc32c check") >= 1, "log:\n%s", logbuf);
	/* Only under verify all. */
	cfg.verify = DLC_VERIFY_KERNEL;
	CHECK_EQ(run(&cfg, h, &nb, &st), 0);
	CHECK_EQ(st.verified, 0);
	CHECK_EQ(t_write_file(path, files[2], file_len[2]), 0);
	free(changed);
}

/*
 * The kernel backend keeps per-position state (a GET's buffer, whether we
 * own the fill) at pos % window. A GET parked on another process's fill
 * at position 0 must not let the loader claim position window (8) while
 * it is parked: the claim would take over its state, and the parked GET
 * complete into the wrong buffer. With batch 4 x 4 buffers the ring
 * alone allows 16 positions; the span must stop at the window. The
 * batches must equal the in-process reference, no sample failing.
 */
static void test_parked_span(void)
{
	uint64_t ref[64], got[64];
	uint32_t nref = 0, ngot = 0, i;
	struct dlc_config cfg;
	struct dlc_stats st;

	fake_reset();
	config(&cfg, DLC_BACKEND_INPROCESS);
	cfg.verify = DLC_VERIFY_OFF;
	cfg.nbatches = 4;
	CHECK_EQ(run(&cfg, ref, &nref, NULL), 0);

	for (i = 0; i < N; i++)
		store_set(i, files[i], (uint32_t)file_len[i]);
	fk.park_index = 0;
	config(&cfg, DLC_BACKEND_KERNEL);
	cfg.nbatches = 4;
	CHECK_EQ(cfg.window, 8);
	CHECK_EQ(run(&cfg, got, &ngot, &st), 0);
	CHECK_EQ(fk.parked, 2);
	CHECK(fk.max_get_index < 8 || fk.park_enters > 20000,
	      "GET of index %u while index 0 was parked", fk.max_get_index);
	CHECK_EQ(ngot, nref);
	for (i = 0; i < ngot && i < nref; i++)
		CHECK(got[i] == ref[i], "batch %u differs from the reference", i);
	CHECK_EQ(st.errors, 0);
	CHECK_EQ(st.hits, 2 * N);
	fake_reset();
}

/*
 * Destroy the loader at once after its first batch, with reads, PUTs and
 * ABORTs still queued on the ring: every buffer a queued PUT holds must be
 * given back (LeakSanitizer in the ASan build says so at exit), and the
 * next loader must find the cache in a sane state. Repeated, because
 * where the I/O thread is at that moment varies.
 */
static void test_destroy_mid_epoch(void)
{
	struct dlc_loader *l;
	struct dlc_config cfg;
	struct dlc_batch *b;
	uint32_t i;

	for (i = 0; i < 40; i++) {
		fake_reset();
		config(&cfg, DLC_BACKEND_KERNEL);
		l = NULL;
		CHECK_EQ(dlc_loader_create(&cfg, idx, &l), 0);
		if (!l)
			break;
		CHECK_EQ(dlc_loader_start_epoch(l, i, 0), 0);
		if (dlc_next_batch(l, &b) == 0 && i % 2)
			CHECK_EQ(dlc_release_batch(l, b), 0);
		dlc_loader_destroy(l);
	}
	fake_reset();
}

/*
 * Read-ahead on the module: with DLCACHE_FEAT_GET_AHEAD the loader looks
 * samples up ahead (GET F_AHEAD), reads the misses, PUTs the fills it
 * took, and the batches are those of the in-process backend without
 * read-ahead; epoch 1's look-ups find every sample cached. Without the
 * feature no F_AHEAD is ever sent.
 */
static void test_read_ahead(void)
{
	uint64_t want[64], got[64];
	uint32_t nw = 0, ng = 0, i, fell = 0;
	struct dlc_config cfg;
	struct dlc_stats st;

	config(&cfg, DLC_BACKEND_INPROCESS);
	cfg.readahead_bytes = DLC_READAHEAD_OFF;
	CHECK_EQ(run(&cfg, want, &nw, NULL), 0);

	fake_reset();
	config(&cfg, DLC_BACKEND_KERNEL);
	CHECK_EQ(run(&cfg, got, &ng, &st), 0);
	CHECK(ng == nw, "%u batches, want %u", ng, nw);
	for (i = 0; i < nw && i < ng; i++)
		CHECK(got[i] == want[i], "batch %u differs with read-ahead on the module", i);
	CHECK(fk.aheads > 0 && st.readahead_reads > 0 && st.readahead_used > 0,
	      "look-ups %u, read ahead %llu, used %llu", fk.aheads,
	      (unsigned long long)st.readahead_reads,
	      (unsigned long long)st.readahead_used);
	CHECK(fk.ahead_hits > 0, "no look-up ahead found a sample cached");
	CHECK(st.readahead_used + st.readahead_dropped <= st.readahead_reads,
	      "used %llu + dropped %llu > read %llu",
	      (unsigned long long)st.readahead_used,
	      (unsigned long long)st.readahead_dropped,
	      (unsigned long long)st.readahead_reads);
	/* Look-ups into epoch 2 may be out still: charged, within budget. */
	CHECK(st.readahead_held <= st.readahead_budget, "held %llu of %llu",
	      (unsigned long long)st.readahead_held,
	      (unsigned long long)st.readahead_budget);
	/* Every miss read (ahead or not) was PUT: the fake holds them all. */
	for (i = 0; i < N; i++)
		CHECK(fk.store[i] && fk.store_len[i] == file_len[i] &&
		      !memcmp(fk.store[i], files[i], file_len[i]),
		      "sample %u not PUT as its file", i);
	CHECK(st.misses == N, "%llu misses, want %u (each sample read once)",
	      (unsigned long long)st.misses, N);
	/* The module saw every use, read ahead or not, once. */
	CHECK(fk.at_gets == 2 * N, "%u uses (GET F_AT), want %u", fk.at_gets, 2 * N);
	/* Bytes read ahead are offered after their use, for the next one. */
	CHECK_EQ(fk.put_before_use, 0);
	CHECK(fk.ahead_at == fk.aheads, "%u of %u look-ups named their use",
	      fk.ahead_at, fk.aheads);
	CHECK(fk.bare_uses > 0, "no sample read ahead was used");

	/* Every miss used sooner elsewhere: nothing is read ahead. */
	fake_reset();
	fk.sooner = 1;
	config(&cfg, DLC_BACKEND_KERNEL);
	CHECK_EQ(run(&cfg, got, &ng, &st), 0);
	for (i = 0; i < nw && i < ng; i++)
		CHECK(got[i] == want[i], "F_SOONER: batch %u differs", i);
	CHECK(fk.aheads > 0 && fk.bare_uses == 0,
	      "F_SOONER: %u look-ups, %u samples read ahead used", fk.aheads,
	      fk.bare_uses);
	CHECK(st.misses == N, "F_SOONER: %llu misses, want %u",
	      (unsigned long long)st.misses, N);

	/*
	 * The module goes away mid-run, wherever the look-ups and reads are:
	 * the loader falls back and the batches stay the same.
	 */
	for (uint32_t f = 1; f <= 30; f++) {
		fake_reset();
		fk.fail_enter = f;
		config(&cfg, DLC_BACKEND_KERNEL);
		log_clear();
		CHECK_EQ(run(&cfg, got, &ng, &st), 0);
		CHECK(ng == nw, "ENTER failing from %u: %u batches, want %u", f, ng, nw);
		for (i = 0; i < nw && i < ng; i++)
			CHECK(got[i] == want[i], "ENTER failing from %u: batch %u differs",
			      f, i);
		CHECK(st.kernel_fallbacks <= 1, "ENTER failing from %u: %llu fallbacks",
		      f, (unsigned long long)st.kernel_fallbacks);
		fell += st.kernel_fallbacks == 1;
	}
	CHECK(fell >= 5, "only %u of 30 runs fell back", fell);

	/* A module without the feature never sees the flag. */
	fake_reset();
	fk.supported &= ~DLCACHE_FEAT_GET_AHEAD;
	config(&cfg, DLC_BACKEND_KERNEL);
	CHECK_EQ(run(&cfg, got, &ng, &st), 0);
	CHECK_EQ(fk.aheads, 0);
	CHECK_EQ(fk.ahead_unasked, 0);
	CHECK_EQ(st.readahead_reads, 0);
	for (i = 0; i < nw && i < ng; i++)
		CHECK(got[i] == want[i], "batch %u differs without read-ahead", i);
	fake_reset();
}

int main(void)
{
	char devpath[4096], path[4096];
	struct stat st;
	uint32_t i;
	int fd;

	unsetenv("DLCACHE_BACKEND");
	unsetenv("DLCACHE_VERIFY");
	unsetenv("DLCACHE_OWNER_UID");
	dir = t_mkdtemp(NULL);
	if (!dir || t_make_dataset(dir, NCLASS, PER)) {
		printf("FAIL: cannot make the data set\n");
		return 1;
	}
	snprintf(path, sizeof(path), "%s", dir);
	if (dlc_index_build(path, &idx) || dlc_index_count(idx) != N) {
		printf("FAIL: index\n");
		return 1;
	}
	for (i = 0; i < N; i++) {
		snprintf(path, sizeof(path), "%s/%s", dlc_index_root(idx),
			 dlc_index_relpath(idx, i));
		files[i] = t_read_file(path, &file_len[i]);
		if (!files[i]) {
			printf("FAIL: read %s\n", path);
			return 1;
		}
	}
	/* The "device": a sparse file the rings are mapped from. */
	snprintf(devpath, sizeof(devpath), "%s.dev", dir);
	fd = open(devpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || fstat(fd, &st)) {
		printf("FAIL: %s: %s\n", devpath, strerror(errno));
		return 1;
	}
	close(fd);
	fk.dev = st.st_dev;
	fk.ino = st.st_ino;
	setenv("DLCACHE_DEVICE", devpath, 1);

	T_RUN(test_trust);
	T_RUN(test_mode);
	T_RUN(test_ring_layout);
	T_RUN(test_wrong_bytes);
	T_RUN(test_verify_all);
	T_RUN(test_size_claim);
	T_RUN(test_shard_drop_last);
	T_RUN(test_parked_span);
	T_RUN(test_destroy_mid_epoch);
	T_RUN(test_read_ahead);

	fake_reset();
	for (i = 0; i < N; i++)
		free(files[i]);
	dlc_index_free(idx);
	unlink(devpath);
	t_rmtree(dir);
	free(dir);
	return t_done("test_kclient");
}
