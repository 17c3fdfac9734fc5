// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fuzz: a bounded random fuzzer with a fixed seed. Thousands of random
 * ioctls (valid commands with mutated fields, bad pointers, unknown
 * commands), random ring entries and ENTERs (some blocking, interrupted by
 * an interval timer), garbage written into the ring indices, mmaps at
 * random offsets, fresh sessions, and forked children that share a ring
 * and are SIGKILLed mid-flight; first as root, then as uid 65534.
 *
 * Passes when the fuzzing processes end normally (no crash, no hang, no
 * unkillable child), the module still serves a PUT and GET afterwards, no
 * session or fill is left behind, and the kernel log stays clean (checked
 * by /init).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "dlc_test.h"

#define DATA_SZ (256 << 10)
#define KADDR ((uintptr_t)0xffffffff81000000ULL)
#define NKEYS 6

static uint64_t seed;
static uint8_t *data;		/* DATA_SZ read-write, a PROT_NONE page, a read-only page */
static long pagesz;
static struct dlcache_info info;
static uint64_t keys[NKEYS][2];
static const uint32_t key_n[NKEYS] = { 4, 16, 100, 16, 4, 1000 };

/* Progress, shared with the parent, to say where a hang happened. */
static struct progress {
	volatile int iter;
	volatile int action;
} *prog;

/*
 * DLC_FUZZ_SECONDS=N (set by tests/fuzz/kcov_fuzz.c to compare coverage in
 * equal time): the same two runs, each bounded by its share of N seconds
 * (20:8, as the iteration counts) instead of by its iteration count.
 */
static unsigned fz_secs;
static double fz_deadline;

static double fz_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *const action_names[] = {
	"ring entries + ENTER", "ioctl", "reopen", "mmap", "ring index garbage",
	"child sharing the ring", "attach/detach",
};

struct fz {
	int fd;
	bool ring;
	struct t_ring r;
	uint32_t handles[16];
	int nh;
	uint32_t epoch;
};

static uint64_t rnd(void)
{
	return t_rand(&seed);
}

static uint32_t rnd_n(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}

static void on_tick(int sig)
{
	(void)sig;
}

static uint64_t rnd_addr(void)
{
	switch (rnd_n(20)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return KADDR;
	case 3: return (uintptr_t)data + DATA_SZ - rnd_n(64);	/* into PROT_NONE */
	case 4: return (uintptr_t)data + DATA_SZ + pagesz;	/* read-only */
	case 5: return rnd();
	default: return (uintptr_t)data + rnd_n(DATA_SZ / 2);
	}
}

static uint32_t rnd_len(void)
{
	switch (rnd_n(12)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return info.max_sample_size + 1;
	case 3: return (uint32_t)rnd();
	case 4: return rnd_n(DATA_SZ / 2);
	case 5: return 4096;
	default: return 1 + rnd_n(16384);
	}
}

static uint32_t rnd_handle(struct fz *f)
{
	if (f->nh && rnd_n(10) < 8)
		return f->handles[rnd_n(f->nh)];
	return rnd_n(5) ? rnd_n(20) : (uint32_t)rnd();
}

static void fz_close(struct fz *f)
{
	if (f->ring)
		t_ring_unmap(&f->r);
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	f->ring = false;
	f->nh = 0;
}

static void fz_open(struct fz *f)
{
	f->fd = open(DLCACHE_DEVICE, O_RDWR | O_CLOEXEC);
	if (f->fd < 0)
		FATAL("open: %m");
	f->ring = false;
	f->nh = 0;
}

static void fz_ring(struct fz *f)
{
	uint32_t sq = 1 + rnd_n(32), cq = rnd_n(3) ? 0 : sq + rnd_n(64);

	if (f->ring)
		return;
	if (t_ring_init(&f->r, f->fd, sq, cq) == 0)
		f->ring = true;
}

static void fz_attach(struct fz *f)
{
	uint32_t k = rnd_n(NKEYS);
	static const uint32_t modes[] = { 0600, 0640, 0660, 0604, 0 };
	long h = t_attach(f->fd, keys[k], rnd_n(10) ? key_n[k] : 1 + rnd_n(200),
			  modes[rnd_n(5)], rnd_n(4) ? 0 : rnd_n(4), NULL);

	if (h > 0 && f->nh < 16)
		f->handles[f->nh++] = (uint32_t)h;
}

static void fz_sqes(struct fz *f)
{
	struct dlcache_cqe cqe;
	uint32_t k = 1 + rnd_n(8), i, flags = 0;
	uint64_t timeout = 0;
	long ret;

	fz_ring(f);
	if (!f->ring)
		return;
	for (i = 0; i < k; i++) {
		struct dlcache_sqe *s = t_sqe(&f->r);

		if (!s)
			break;
		s->opcode = rnd_n(10) ? (uint8_t)rnd_n(4) : (uint8_t)rnd();
		s->handle = rnd_handle(f);
		s->sample = rnd_n(10) ? rnd_n(20) : (uint32_t)rnd();
		s->len = rnd_len();
		s->addr = rnd_addr();
		s->user_data = rnd();
		switch (rnd_n(10)) {
		case 0:
			s->flags = (uint16_t)rnd();
			break;
		case 1: case 2:
			s->flags = DLCACHE_SQE_F_AT;
			s->epoch = rnd_n(4);
			s->index = rnd_n(30);
			break;
		case 3:
			s->flags = DLCACHE_SQE_F_FAIL;
			break;
		}
		if (!rnd_n(50))
			s->resv[rnd_n(3)] = rnd();
		if (!rnd_n(50))
			s->resv0 = 1;
		t_sqe_push(&f->r);
	}
	switch (rnd_n(6)) {
	case 0:
		flags = DLCACHE_ENTER_F_GETEVENTS;	/* the tick interrupts it */
		break;
	case 1: case 2:
		flags = DLCACHE_ENTER_F_GETEVENTS | DLCACHE_ENTER_F_TIMEOUT;
		timeout = 100000 + rnd_n(3000000);
		break;
	case 3:
		flags = (uint32_t)rnd();
		timeout = rnd_n(2) ? rnd_n(1000000) : 0;
		break;
	}
	ret = t_enter(&f->r, rnd_n(12), rnd_n(4), flags, timeout);
	(void)ret;
	/* Bounded: the CQ tail may be garbage that we wrote ourselves. */
	if (rnd_n(4))
		for (i = 0; i < *f->r.cq_entries && t_reap(&f->r, &cqe); i++)
			;
}

static void mutate(void *p, size_t n)
{
	int m = 1 + (int)rnd_n(3);

	while (m--) {
		size_t off = rnd_n((uint32_t)n);

		((uint8_t *)p)[off] = (uint8_t)rnd();
	}
}

static void fz_ioctl(struct fz *f)
{
	static const unsigned long cmds[] = {
		DLCACHE_IOC_GET_INFO, DLCACHE_IOC_SETUP_RING, DLCACHE_IOC_ENTER,
		DLCACHE_IOC_ATTACH, DLCACHE_IOC_DETACH, DLCACHE_IOC_SET_ORDER,
		DLCACHE_IOC_STATS, DLCACHE_IOC_SET_CAPACITY, DLCACHE_IOC_DROP,
	};
	static uint32_t ids[256];
	union {
		struct dlcache_info info;
		struct dlcache_ring_setup setup;
		struct dlcache_enter enter;
		struct dlcache_attach attach;
		struct dlcache_detach detach;
		struct dlcache_order order;
		struct dlcache_stats stats;
		struct dlcache_capacity cap;
		struct dlcache_drop drop;
	} u;
	unsigned long cmd;
	void *arg = &u;
	uint32_t k;

	memset(&u, 0, sizeof(u));
	if (!rnd_n(10)) {
		/* An unknown or malformed command. */
		cmd = rnd_n(2) ? _IOC(rnd_n(4), DLCACHE_IOC_MAGIC, rnd_n(32), rnd_n(600)) : (unsigned long)rnd();
		if (rnd_n(2))
			arg = (void *)(uintptr_t)rnd_addr();
		ioctl(f->fd, cmd, arg);
		return;
	}
	cmd = cmds[rnd_n(9)];
	switch (_IOC_NR(cmd)) {
	case 0x01:
		u.setup.sq_entries = 1 + rnd_n(64);
		break;
	case 0x02:
		u.enter.to_submit = rnd_n(8);
		u.enter.min_complete = rnd_n(3);
		u.enter.flags = DLCACHE_ENTER_F_GETEVENTS | DLCACHE_ENTER_F_TIMEOUT;
		u.enter.timeout_ns = 1000000;
		break;
	case 0x03:
		k = rnd_n(NKEYS);
		memcpy(u.attach.key, keys[k], 16);
		u.attach.nsamples = key_n[k];
		u.attach.mode = 0640;
		break;
	case 0x04:
		u.detach.handle = rnd_handle(f);
		break;
	case 0x05:
		for (k = 0; k < 256; k++)
			ids[k] = rnd_n(10) ? rnd_n(16) : rnd_n(1200);
		u.order.handle = rnd_handle(f);
		u.order.epoch = rnd_n(8) ? ++f->epoch : rnd_n(10);
		u.order.ids = (uintptr_t)ids;
		u.order.len = 1 + rnd_n(256);
		break;
	case 0x06:
		u.stats.handle = rnd_handle(f);
		u.stats.flags = rnd_n(4);
		break;
	case 0x07:
		u.cap.bytes = 1 + rnd_n(32 << 20);
		break;
	case 0x08:
		u.drop.flags = rnd_n(2);
		memcpy(u.drop.key, keys[rnd_n(NKEYS)], 16);
		break;
	}
	if (rnd_n(2))
		mutate(&u, _IOC_SIZE(cmd));
	/* Bounded memory: capacity at most 32 MiB, data sets of 64 Ki samples. */
	if (cmd == DLCACHE_IOC_SET_CAPACITY && u.cap.bytes > (32 << 20))
		u.cap.bytes %= 32 << 20;
	if (cmd == DLCACHE_IOC_ATTACH && u.attach.nsamples > 65536)
		u.attach.nsamples %= 65536;
	if (cmd == DLCACHE_IOC_ATTACH && u.attach.window > 1 << 20)
		u.attach.window %= 1 << 20;
	if (cmd == DLCACHE_IOC_SET_ORDER && u.order.ids != (uintptr_t)ids && rnd_n(2))
		u.order.ids = (uintptr_t)ids;
	if (cmd == DLCACHE_IOC_SET_ORDER && u.order.len > 256 && u.order.ids == (uintptr_t)ids)
		u.order.len %= 257;
	if (!rnd_n(20))
		arg = (void *)(uintptr_t)rnd_addr();
	if (ioctl(f->fd, cmd, arg) == 0 && cmd == DLCACHE_IOC_ATTACH && arg == &u && f->nh < 16)
		f->handles[f->nh++] = u.attach.handle;
}

static void fz_mmap(struct fz *f)
{
	/* The two regions, ABI 1's CQ offset, and offsets near both. */
	static const uint64_t offs[] = { DLCACHE_OFF_SQ_RING, DLCACHE_OFF_CQ_RING,
					 0x200000000ULL, 0x1000, 0x100000001ULL,
					 0x100000000ULL, DLCACHE_OFF_CQ_RING + 0x1000 };
	size_t len = (1 + rnd_n(8)) * (size_t)pagesz;
	int prot = rnd_n(2) ? PROT_READ : PROT_READ | PROT_WRITE;
	void *m = mmap(NULL, len, prot, rnd_n(5) ? MAP_SHARED : MAP_PRIVATE, f->fd,
		       (off_t)offs[rnd_n(sizeof(offs) / sizeof(offs[0]))]);

	if (m != MAP_FAILED) {
		/* Reading a mapped ring page must not fault beyond the region. */
		volatile uint8_t x = *(volatile uint8_t *)m;
		(void)x;
		munmap(m, len);
	}
}

static void fz_corrupt(struct fz *f)
{
	if (!f->ring)
		return;
	switch (rnd_n(4)) {
	case 0: *f->r.sq_tail = (uint32_t)rnd(); break;
	case 1: *f->r.cq_head = (uint32_t)rnd(); break;
	case 2: *f->r.sq_head = (uint32_t)rnd(); break;	/* kernel-owned */
	case 3: *f->r.cq_tail = (uint32_t)rnd(); break;	/* kernel-owned */
	}
	fz_sqes(f);
	/* Resynchronise the user-owned indices. */
	*f->r.sq_tail = *f->r.sq_head;
	*f->r.cq_head = *f->r.cq_tail;
}

static void fz_child(struct fz *f)
{
	pid_t pid;
	int st;

	pid = fork();
	if (pid < 0)
		return;
	if (pid == 0) {
		seed ^= 0xc0ffee;
		for (int i = 0; i < 30; i++)
			fz_sqes(f);
		_exit(0);
	}
	t_msleep(rnd_n(3));
	kill(pid, SIGKILL);
	st = t_wait(pid, 10);
	if (st < 0)
		FAIL("a SIGKILLed child sharing the ring did not die within 10 s");
}

static int fuzz(uint64_t s, int iters)
{
	struct itimerval it = { { 0, 20000 }, { 0, 20000 } };
	struct sigaction sa;
	struct fz f = { .fd = -1 };

	seed = s;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_tick;	/* no SA_RESTART: blocking ENTERs get EINTR */
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	fz_open(&f);
	for (int i = 0; i < iters; i++) {
		uint32_t a = rnd_n(100);

		if (fz_secs && fz_now() >= fz_deadline)
			break;

		prog->iter = i;
		prog->action = a < 30 ? 0 : a < 58 ? 1 : a < 62 ? 2 : a < 67 ? 3 : a < 70 ? 4 :
			       a < 72 ? 5 : 6;
		if (a < 30)
			fz_sqes(&f);
		else if (a < 58)
			fz_ioctl(&f);
		else if (a < 62) {
			fz_close(&f);
			fz_open(&f);
		} else if (a < 67)
			fz_mmap(&f);
		else if (a < 70)
			fz_corrupt(&f);
		else if (a < 72)
			fz_child(&f);
		else
			fz_attach(&f);
		if (a >= 72 && f.nh && rnd_n(10) == 0) {
			uint32_t j = rnd_n(f.nh);

			t_detach(f.fd, f.handles[j]);
			f.handles[j] = f.handles[--f.nh];
		}
	}
	fz_close(&f);
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	return t_done();
}

static int run_fuzzer(uint64_t s, int iters, bool drop_root)
{
	gid_t dev_group[1] = { 4343 };
	struct timespec t0, t1;
	pid_t pid;
	int st;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	fz_deadline = fz_now() + fz_secs * (drop_root ? 8.0 : 20.0) / 28.0;
	prog->iter = -1;
	pid = fork();
	if (pid < 0)
		FATAL("fork: %m");
	if (pid == 0) {
		/* Allowed to open the device as documented: a group of 0660. */
		if (drop_root)
			t_become(65534, 65534, dev_group, 1);
		exit(fuzz(s, iters));
	}
	st = t_wait(pid, 50 + fz_secs);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	t_info("fuzzer seed %#llx%s: %d iterations in %.1f s", (unsigned long long)s,
	       drop_root ? " (uid 65534)" : "", prog->iter + 1,
	       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	if (st < 0)
		FAIL("fuzzer (seed %#llx) hung at iteration %d (%s): killed after 50 s",
		     (unsigned long long)s, prog->iter,
		     prog->action >= 0 ? action_names[prog->action] : "?");
	else if (st >= 128)
		FAIL("fuzzer (seed %#llx) died of signal %d", (unsigned long long)s, st - 128);
	else if (st)
		FAIL("fuzzer (seed %#llx) exit status %d", (unsigned long long)s, st);
	return st;
}

int main(void)
{
	struct dlcache_cqe cqe;
	struct dlcache_stats st;
	struct t_ring r;
	uint8_t buf[777];
	long h, ret;
	int fd, i;

	pagesz = sysconf(_SC_PAGESIZE);
	prog = mmap(NULL, sizeof(*prog), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (prog == MAP_FAILED)
		FATAL("mmap: %m");
	if (chown(DLCACHE_DEVICE, 0, 4343) || chmod(DLCACHE_DEVICE, 0660))
		FATAL("chown/chmod %s: %m", DLCACHE_DEVICE);
	data = mmap(NULL, DATA_SZ + 2 * pagesz, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (data == MAP_FAILED)
		FATAL("mmap: %m");
	for (i = 0; i < DATA_SZ; i++)
		data[i] = (uint8_t)(i * 7);
	mprotect(data + DATA_SZ, pagesz, PROT_NONE);
	mprotect(data + DATA_SZ + pagesz, pagesz, PROT_READ);
	for (i = 0; i < NKEYS; i++) {
		char tag[32];

		snprintf(tag, sizeof(tag), "fuzz-%d", i);
		t_key(tag, keys[i]);
	}
	fd = t_open();
	if (t_get_info(fd, &info) < 0)
		FATAL("GET_INFO");
	CHECK_ERR(t_set_capacity(fd, 16 << 20, NULL), 0, "SET_CAPACITY 16 MiB");
	close(fd);

	if (getenv("DLC_FUZZ_SECONDS"))
		fz_secs = (unsigned)atoi(getenv("DLC_FUZZ_SECONDS"));
	run_fuzzer(0x5eed0001, fz_secs ? 1 << 30 : 20000, false);
	run_fuzzer(0x5eed0002, fz_secs ? 1 << 30 : 8000, true);

	/*
	 * The module still works, and nothing was left behind: the fuzzers'
	 * data sets are idle (DLCACHE_FEAT_IDLE), and DROP frees them all.
	 */
	fd = t_open();
	CHECK_ERR(t_drop(fd, NULL, NULL), 0, "DROP after fuzzing");
	t_stats(fd, 0, &st);
	CHECK_EQ(st.ndatasets, 0, "data sets after the fuzzers ended and DROP");
	h = t_attach(fd, keys[1], 16, 0600, 0, NULL);
	if (h < 0)
		FATAL("ATTACH after fuzzing: %s", t_errname(h));
	ret = t_ring_init(&r, fd, 4, 0);
	if (ret < 0)
		FATAL("ring after fuzzing: %s", t_errname(ret));
	t_stats(fd, 0, &st);
	CHECK_EQ(st.nsessions, 1, "sessions after the fuzzers ended");
	CHECK_EQ(st.global.fills_inflight, 0, "fills in flight after the fuzzers ended");
	CHECK(st.used_bytes <= st.capacity_bytes, "used %llu over capacity %llu",
	      (unsigned long long)st.used_bytes, (unsigned long long)st.capacity_bytes);
	CHECK_ERR(t_set_capacity(fd, 16 << 20, NULL), 0, "SET_CAPACITY");
	ret = t_get(&r, (uint32_t)h, 15, buf, sizeof(buf), &cqe);
	if (ret >= 0 || ret == -EMSGSIZE) {
		/* The fuzzer cached it; drop and start over. */
		CHECK_ERR(t_drop(fd, keys[1], NULL), 0, "DROP");
		ret = t_get(&r, (uint32_t)h, 15, buf, sizeof(buf), &cqe);
	}
	CHECK_ERR(ret, -ENOENT, "GET miss after fuzzing");
	t_pattern(buf, sizeof(buf), 99, 15);
	ret = t_put(&r, (uint32_t)h, 15, buf, sizeof(buf), &cqe);
	CHECK_EQ(ret, sizeof(buf), "PUT after fuzzing");
	memset(buf, 0, sizeof(buf));
	ret = t_get(&r, (uint32_t)h, 15, buf, sizeof(buf), &cqe);
	CHECK_EQ(ret, sizeof(buf), "GET hit after fuzzing");
	t_pattern_ok(buf, sizeof(buf), 99, 15);
	t_ring_unmap(&r);
	close(fd);
	return t_done();
}
