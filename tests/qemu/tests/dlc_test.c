// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Shared helpers of the dlcache QEMU test programs; see dlc_test.h. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "dlc_test.h"

int t_failures;

static void vreport(const char *tag, const char *file, int line,
		    const char *fmt, va_list ap)
{
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (file)
		printf("%s: %s:%d: %s\n", tag, file, line, msg);
	else
		printf("%s: %s\n", tag, msg);
	fflush(stdout);
}

void t_fail_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	t_failures++;
	va_start(ap, fmt);
	vreport("FAIL", file, line, fmt, ap);
	va_end(ap);
}

void t_fatal_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("FAIL", file, line, fmt, ap);
	va_end(ap);
	exit(T_FAIL);
}

void t_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("info", NULL, 0, fmt, ap);
	va_end(ap);
}

void t_skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("SKIP", NULL, 0, fmt, ap);
	va_end(ap);
	exit(T_SKIP);
}

int t_done(void)
{
	return t_failures ? T_FAIL : T_PASS;
}

const char *t_errname(long long v)
{
	static char buf[4][32];
	static int slot;
	static const struct { int e; const char *n; } names[] = {
		{ EPERM, "EPERM" }, { ENOENT, "ENOENT" }, { EINTR, "EINTR" },
		{ EIO, "EIO" }, { E2BIG, "E2BIG" }, { EBADF, "EBADF" },
		{ EAGAIN, "EAGAIN" }, { ENOMEM, "ENOMEM" }, { EACCES, "EACCES" },
		{ EFAULT, "EFAULT" }, { EBUSY, "EBUSY" }, { EEXIST, "EEXIST" },
		{ ENODEV, "ENODEV" }, { EINVAL, "EINVAL" }, { ENOSPC, "ENOSPC" },
		{ ENOTTY, "ENOTTY" }, { ERANGE, "ERANGE" }, { ENXIO, "ENXIO" },
		{ EOVERFLOW, "EOVERFLOW" }, { EMSGSIZE, "EMSGSIZE" },
		{ ETIME, "ETIME" }, { ECANCELED, "ECANCELED" },
		{ EALREADY, "EALREADY" }, { EOPNOTSUPP, "EOPNOTSUPP" },
		{ ENOSYS, "ENOSYS" }, { ESRCH, "ESRCH" }, { ENOBUFS, "ENOBUFS" },
		{ EDQUOT, "EDQUOT" }, { EMFILE, "EMFILE" },
	};
	char *b = buf[slot++ & 3];
	size_t i;

	if (v < 0) {
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			if (-v == names[i].e) {
				snprintf(b, 32, "-%s", names[i].n);
				return b;
			}
		}
	}
	snprintf(b, 32, "%lld", v);
	return b;
}

static void on_alarm(int sig)
{
	static const char msg[] = "FAIL: time limit hit (a wait in the module did not end)\n";

	(void)sig;
	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(T_FAIL);
	_exit(T_FAIL);
}

void t_time_limit(unsigned secs)
{
	signal(SIGALRM, on_alarm);
	alarm(secs);
}

/* ---- device and ioctls ---------------------------------------------------- */

int t_open_raw(void)
{
	int fd = open(DLCACHE_DEVICE, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		FATAL("open %s: %s", DLCACHE_DEVICE, strerror(errno));
	return fd;
}

int t_open(void)
{
	struct dlcache_info info;
	int fd = t_open_raw();

	/* An error shows in the test's next ioctl. */
	memset(&info, 0, sizeof(info));
	info.features = T_FEATS;
	t_ioctl(fd, DLCACHE_IOC_GET_INFO, &info);
	return fd;
}

long t_ioctl(int fd, unsigned long cmd, void *arg)
{
	long ret = ioctl(fd, cmd, arg);

	return ret < 0 ? -errno : ret;
}

int t_get_info(int fd, struct dlcache_info *info)
{
	memset(info, 0, sizeof(*info));
	return (int)t_ioctl(fd, DLCACHE_IOC_GET_INFO, info);
}

void t_key(const char *tag, uint64_t k[2])
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *tag; tag++)
		h = (h ^ (unsigned char)*tag) * 0x100000001b3ULL;
	k[0] = h;
	k[1] = h * 0x9e3779b97f4a7c15ULL + 1;
}

/* One ATTACH; returns the handle or -errno, and the reply in @out. */
static long attach(int fd, struct dlcache_attach *a, struct dlcache_attach *out)
{
	long ret = t_ioctl(fd, DLCACHE_IOC_ATTACH, a);

	if (out)
		*out = *a;
	return ret < 0 ? ret : a->handle;
}

/* The arguments of an ATTACH, every other field zero. */
static void attach_args(struct dlcache_attach *a, const uint64_t key[2],
			uint32_t nsamples, uint32_t mode, uint32_t flags)
{
	memset(a, 0, sizeof(*a));
	a->key[0] = key[0];
	a->key[1] = key[1];
	a->nsamples = nsamples;
	a->mode = mode;
	a->flags = flags;
}

long t_attach(int fd, const uint64_t key[2], uint32_t nsamples, uint32_t mode,
	      uint32_t flags, struct dlcache_attach *out)
{
	struct dlcache_attach a;

	attach_args(&a, key, nsamples, mode, flags);
	return attach(fd, &a, out);
}

long t_attach_job(int fd, const uint64_t key[2], uint32_t nsamples, uint32_t mode,
		  uint64_t job, struct dlcache_attach *out)
{
	struct dlcache_attach a;

	attach_args(&a, key, nsamples, mode, DLCACHE_ATTACH_F_JOB);
	a.job = job;
	return attach(fd, &a, out);
}

long t_attach_owner(int fd, const uint64_t key[2], uint32_t nsamples, uid_t owner,
		    uint32_t flags, struct dlcache_attach *out)
{
	struct dlcache_attach a;

	attach_args(&a, key, nsamples, 0, flags | DLCACHE_ATTACH_F_OWNER);
	a.owner_uid = (uint32_t)owner;
	return attach(fd, &a, out);
}

long t_attach_form(int fd, const uint64_t key[2], uint32_t nsamples, uint32_t form,
		   struct dlcache_attach *out)
{
	struct dlcache_attach a;

	attach_args(&a, key, nsamples, 0, DLCACHE_ATTACH_F_FORM);
	a.form = form;
	return attach(fd, &a, out);
}

static void param_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "/sys/module/dlcache/parameters/%s", name);
}

long t_param_get(const char *name, unsigned long long *val)
{
	char path[128];
	FILE *f;
	int n;

	param_path(path, sizeof(path), name);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	n = fscanf(f, "%llu", val);
	fclose(f);
	return n == 1 ? 0 : -EINVAL;
}

long t_param_set(const char *name, unsigned long long val)
{
	char path[128], buf[32];
	int fd, n;
	long ret = 0;

	param_path(path, sizeof(path), name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%llu\n", val);
	if (write(fd, buf, (size_t)n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

long t_insmod(const char *params)
{
	int fd = open(T_KO, O_RDONLY | O_CLOEXEC);
	long ret;

	if (fd < 0)
		FATAL("open %s: %m", T_KO);
	ret = syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
	close(fd);
	return ret;
}

long t_rmmod(void)
{
	return syscall(SYS_delete_module, "dlcache", O_NONBLOCK) ? -errno : 0;
}

bool t_write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);
	bool ok;

	if (fd < 0)
		return false;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok;
}

bool t_read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return false;
	buf[n] = 0;
	return true;
}

uint64_t t_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

long t_detach(int fd, uint32_t handle)
{
	struct dlcache_detach d;

	memset(&d, 0, sizeof(d));
	d.handle = handle;
	return t_ioctl(fd, DLCACHE_IOC_DETACH, &d);
}

long t_set_order(int fd, uint32_t handle, uint32_t epoch, const uint32_t *ids,
		 uint32_t len)
{
	struct dlcache_order o;

	memset(&o, 0, sizeof(o));
	o.handle = handle;
	o.epoch = epoch;
	o.ids = (uintptr_t)ids;
	o.len = len;
	return t_ioctl(fd, DLCACHE_IOC_SET_ORDER, &o);
}

long t_stats(int fd, uint32_t handle, struct dlcache_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->handle = handle;
	st->flags = handle ? DLCACHE_STATS_F_DATASET : 0;
	return t_ioctl(fd, DLCACHE_IOC_STATS, st);
}

struct dlcache_stats t_stats_of(int fd, uint32_t handle)
{
	struct dlcache_stats st;
	long ret = t_stats(fd, handle, &st);

	if (ret < 0)
		FATAL("STATS: %s", t_errname(ret));
	return st;
}

long t_set_capacity(int fd, uint64_t bytes, uint64_t *old)
{
	struct dlcache_capacity c;
	long ret;

	memset(&c, 0, sizeof(c));
	c.bytes = bytes;
	ret = t_ioctl(fd, DLCACHE_IOC_SET_CAPACITY, &c);
	if (old)
		*old = c.old_bytes;
	return ret;
}

long t_drop(int fd, const uint64_t *key, uint64_t *dropped)
{
	struct dlcache_drop d;
	long ret;

	memset(&d, 0, sizeof(d));
	if (key) {
		d.key[0] = key[0];
		d.key[1] = key[1];
		d.flags = DLCACHE_DROP_F_KEY;
	}
	ret = t_ioctl(fd, DLCACHE_IOC_DROP, &d);
	if (dropped)
		*dropped = d.dropped_bytes;
	return ret;
}

/* ---- rings ---------------------------------------------------------------- */

#define AT(base, off) ((void *)((char *)(base) + (off)))

long t_ring_init(struct t_ring *r, int fd, uint32_t sq_entries, uint32_t cq_entries)
{
	long ret;

	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->p.sq_entries = sq_entries;
	r->p.cq_entries = cq_entries;
	ret = t_ioctl(fd, DLCACHE_IOC_SETUP_RING, &r->p);
	if (ret < 0)
		return ret;
	r->sq = mmap(NULL, r->p.sq_mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		     fd, DLCACHE_OFF_SQ_RING);
	if (r->sq == MAP_FAILED) {
		r->sq = NULL;
		return -errno;
	}
	r->cq = mmap(NULL, r->p.cq_mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		     fd, DLCACHE_OFF_CQ_RING);
	if (r->cq == MAP_FAILED) {
		ret = -errno;
		munmap(r->sq, r->p.sq_mmap_size);
		r->sq = r->cq = NULL;
		return ret;
	}
	r->sq_head = AT(r->sq, r->p.sq_off.head);
	r->sq_tail = AT(r->sq, r->p.sq_off.tail);
	r->sq_mask = AT(r->sq, r->p.sq_off.ring_mask);
	r->sq_entries = AT(r->sq, r->p.sq_off.ring_entries);
	r->sq_flags = AT(r->sq, r->p.sq_off.flags);
	r->sq_dropped = AT(r->sq, r->p.sq_off.dropped);
	r->sqes = AT(r->sq, r->p.sq_off.sqes);
	r->cq_head = AT(r->cq, r->p.cq_off.head);
	r->cq_tail = AT(r->cq, r->p.cq_off.tail);
	r->cq_mask = AT(r->cq, r->p.cq_off.ring_mask);
	r->cq_entries = AT(r->cq, r->p.cq_off.ring_entries);
	r->cq_flags = AT(r->cq, r->p.cq_off.flags);
	r->cq_pending = AT(r->cq, r->p.cq_off.pending);
	r->cqes = AT(r->cq, r->p.cq_off.cqes);
	return 0;
}

void t_ring_unmap(struct t_ring *r)
{
	if (r->sq)
		munmap(r->sq, r->p.sq_mmap_size);
	if (r->cq)
		munmap(r->cq, r->p.cq_mmap_size);
	r->sq = r->cq = NULL;
}

struct dlcache_sqe *t_sqe(struct t_ring *r)
{
	uint32_t head = __atomic_load_n(r->sq_head, __ATOMIC_ACQUIRE);
	uint32_t tail = *r->sq_tail;
	struct dlcache_sqe *sqe;

	if (tail - head >= *r->sq_entries)
		return NULL;
	sqe = &r->sqes[tail & *r->sq_mask];
	memset(sqe, 0, sizeof(*sqe));
	return sqe;
}

void t_sqe_push(struct t_ring *r)
{
	__atomic_store_n(r->sq_tail, *r->sq_tail + 1, __ATOMIC_RELEASE);
}

bool t_push(struct t_ring *r, const struct dlcache_sqe *in)
{
	struct dlcache_sqe *sqe = t_sqe(r);

	if (!sqe)
		return false;
	*sqe = *in;
	t_sqe_push(r);
	return true;
}

long t_enter(struct t_ring *r, uint32_t to_submit, uint32_t min_complete,
	     uint32_t flags, uint64_t timeout_ns)
{
	struct dlcache_enter e;
	long ret;

	memset(&e, 0, sizeof(e));
	e.to_submit = to_submit;
	e.min_complete = min_complete;
	e.flags = flags;
	e.timeout_ns = timeout_ns;
	ret = t_ioctl(r->fd, DLCACHE_IOC_ENTER, &e);
	if (ret >= 0 && (uint32_t)ret != e.submitted)
		FAIL("ENTER returned %ld but submitted says %u", ret, e.submitted);
	return ret;
}

uint32_t t_cq_ready(struct t_ring *r)
{
	return __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE) - *r->cq_head;
}

bool t_reap(struct t_ring *r, struct dlcache_cqe *cqe)
{
	uint32_t head = *r->cq_head;

	if (__atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE) == head)
		return false;
	*cqe = r->cqes[head & *r->cq_mask];
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return true;
}

long t_do(struct t_ring *r, const struct dlcache_sqe *sqe, struct dlcache_cqe *cqe)
{
	long ret;

	if (!t_push(r, sqe))
		return -ENOSPC;
	ret = t_enter(r, 1, 1, DLCACHE_ENTER_F_GETEVENTS | DLCACHE_ENTER_F_TIMEOUT,
		      5000000000ULL);
	if (ret < 0)
		return ret;
	if (ret != 1)
		return -EAGAIN;
	if (!t_reap(r, cqe))
		return -ETIME;
	return 0;
}

/* One SQE through t_do(), its CQE checked; at (@epoch, @index) with F_AT. */
static long op_at(struct t_ring *r, uint8_t opcode, uint16_t flags, uint32_t h,
		  uint32_t sample, uint32_t epoch, uint32_t index,
		  const void *buf, uint32_t len, struct dlcache_cqe *cqe)
{
	struct dlcache_sqe sqe;
	struct dlcache_cqe dummy;
	long ret;

	if (!cqe)
		cqe = &dummy;
	memset(&sqe, 0, sizeof(sqe));
	sqe.opcode = opcode;
	sqe.flags = flags;
	sqe.handle = h;
	sqe.sample = sample;
	sqe.len = len;
	sqe.addr = (uintptr_t)buf;
	sqe.epoch = epoch;
	sqe.index = index;
	sqe.user_data = 0x5eed0000ULL + sample;
	ret = t_do(r, &sqe, cqe);
	if (ret < 0) {
		FAIL("op %u sample %u: no completion: %s", opcode, sample, t_errname(ret));
		memset(cqe, 0, sizeof(*cqe));
		cqe->res = (int32_t)ret;
		return ret;
	}
	if (cqe->user_data != sqe.user_data)
		FAIL("op %u sample %u: cqe user_data %#llx, want %#llx", opcode, sample,
		     (unsigned long long)cqe->user_data,
		     (unsigned long long)sqe.user_data);
	if (opcode != DLCACHE_OP_NOP && (cqe->handle != h || cqe->sample != sample))
		FAIL("op %u: cqe handle/sample %u/%u, want %u/%u", opcode,
		     cqe->handle, cqe->sample, h, sample);
	return cqe->res;
}

static long op(struct t_ring *r, uint8_t opcode, uint16_t flags, uint32_t h,
	       uint32_t sample, const void *buf, uint32_t len,
	       struct dlcache_cqe *cqe)
{
	return op_at(r, opcode, flags, h, sample, 0, 0, buf, len, cqe);
}

long t_get_at(struct t_ring *r, uint32_t h, uint32_t sample, uint32_t epoch,
	      uint32_t index, void *buf, uint32_t len, struct dlcache_cqe *cqe)
{
	return op_at(r, DLCACHE_OP_GET, DLCACHE_SQE_F_AT, h, sample, epoch,
		     index, buf, len, cqe);
}

long t_get(struct t_ring *r, uint32_t h, uint32_t sample, void *buf, uint32_t len,
	   struct dlcache_cqe *cqe)
{
	return op(r, DLCACHE_OP_GET, 0, h, sample, buf, len, cqe);
}

long t_put(struct t_ring *r, uint32_t h, uint32_t sample, const void *buf,
	   uint32_t len, struct dlcache_cqe *cqe)
{
	return op(r, DLCACHE_OP_PUT, 0, h, sample, buf, len, cqe);
}

long t_abort(struct t_ring *r, uint32_t h, uint32_t sample, uint16_t flags,
	     struct dlcache_cqe *cqe)
{
	return op(r, DLCACHE_OP_ABORT, flags, h, sample, NULL, 0, cqe);
}

long t_nop(struct t_ring *r, uint64_t user_data, struct dlcache_cqe *cqe)
{
	struct dlcache_sqe sqe;
	long ret;

	memset(&sqe, 0, sizeof(sqe));
	sqe.opcode = DLCACHE_OP_NOP;
	sqe.user_data = user_data;
	ret = t_do(r, &sqe, cqe);
	if (ret < 0)
		return ret;
	if (cqe->user_data != user_data)
		FAIL("NOP: cqe user_data %#llx, want %#llx",
		     (unsigned long long)cqe->user_data, (unsigned long long)user_data);
	return cqe->res;
}

/* ---- sample bytes --------------------------------------------------------- */

static uint8_t pat_byte(uint64_t tag, uint32_t sample, size_t i)
{
	uint64_t x = tag ^ ((uint64_t)sample << 32) ^ (i / 8) * 0x9e3779b97f4a7c15ULL;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 29;
	return (uint8_t)(x >> ((i % 8) * 8));
}

void t_pattern(void *buf, size_t len, uint64_t tag, uint32_t sample)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pat_byte(tag, sample, i);
}

bool t_pattern_ok(const void *buf, size_t len, uint64_t tag, uint32_t sample)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++) {
		if (p[i] != pat_byte(tag, sample, i)) {
			FAIL("sample %u: byte %zu of %zu is %#x, want %#x", sample, i, len,
			     p[i], pat_byte(tag, sample, i));
			return false;
		}
	}
	return true;
}

uint64_t t_rand(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x2545f4914f6cdd1dULL;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* ---- processes ------------------------------------------------------------ */

static void dump_file(const char *path, const char *only)
{
	char line[256];
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!only || !strncmp(line, only, strlen(only)))
			printf("  %s: %s", path, line);
	fclose(f);
}

void t_dump_task(pid_t pid)
{
	char path[64];

	printf("info: task %d did not end in time; its state:\n", (int)pid);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	dump_file(path, "State:");
	snprintf(path, sizeof(path), "/proc/%d/wchan", (int)pid);
	dump_file(path, NULL);
	printf("\n");
	snprintf(path, sizeof(path), "/proc/%d/stack", (int)pid);
	dump_file(path, NULL);
	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	dump_file(path, NULL);
	fflush(stdout);
}

int t_wait(pid_t pid, unsigned secs)
{
	unsigned waited_ms = 0;
	int status;
	pid_t got;

	for (;;) {
		got = waitpid(pid, &status, WNOHANG);
		if (got == pid)
			break;
		if (got < 0) {
			FAIL("waitpid %d: %s", (int)pid, strerror(errno));
			return -1;
		}
		if (waited_ms >= secs * 1000) {
			t_dump_task(pid);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		t_msleep(10);
		waited_ms += 10;
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

void t_msleep(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

pid_t t_start_user(uid_t uid, int (*fn)(void))
{
	gid_t groups[1] = { T_DEVGRP };
	pid_t pid;

	/* What is buffered is the parent's to print, not the child's too. */
	fflush(NULL);
	pid = fork();

	if (pid < 0)
		FATAL("fork: %m");
	if (pid == 0) {
		t_time_limit(60);
		t_become(uid, uid, groups, 1);
		exit(fn());
	}
	return pid;
}

void t_become(uid_t uid, gid_t gid, const gid_t *groups, int ngroups)
{
	if (setgroups(ngroups, groups) < 0)
		FATAL("setgroups: %s", strerror(errno));
	if (setresgid(gid, gid, gid) < 0)
		FATAL("setresgid %u: %s", (unsigned)gid, strerror(errno));
	if (setresuid(uid, uid, uid) < 0)
		FATAL("setresuid %u: %s", (unsigned)uid, strerror(errno));
}

void t_signal(int wfd)
{
	char c = 1;

	if (write(wfd, &c, 1) != 1)
		FAIL("pipe write: %s", strerror(errno));
}

bool t_await(int rfd, unsigned secs)
{
	struct pollfd p = { .fd = rfd, .events = POLLIN };
	char c;
	int n;

	do {
		n = poll(&p, 1, (int)secs * 1000);
	} while (n < 0 && errno == EINTR);
	if (n != 1)
		return false;
	return read(rfd, &c, 1) == 1;
}

uint64_t t_meminfo(const char *name)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	size_t n = strlen(name);
	unsigned long long kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, name, n) && line[n] == ':') {
			sscanf(line + n + 1, "%llu", &kb);
			break;
		}
	}
	fclose(f);
	return (uint64_t)kb * 1024;
}
