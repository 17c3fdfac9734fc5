// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Small helpers of the QEMU integration test's guest (see integration.sh),
 * built statically against uapi/dlcache.h and libc only:
 *
 *   int_client attach-wrong KEY NSAMPLES
 *       The data set KEY (32 hex digits) exists with NSAMPLES samples (some
 *       other process is attached): an ATTACH with NOCREATE and the right
 *       count must succeed, and one with NSAMPLES + 1 must fail -EINVAL
 *       without disturbing the data set. Exit 0 when so, 1 otherwise.
 *   int_client hold-fills KEY NSAMPLES COUNT
 *       Attach to KEY (creating it, mode 0600), GET samples 0 .. COUNT-1 so
 *       that this session owns their fills, print "holding N fills" and
 *       sleep without ever PUTting them: the test then kills it with
 *       SIGKILL while another process waits for those samples.
 *   int_client put-wrong KEY NSAMPLES ID:FILE:LEN...
 *       Attach to this user's own data set KEY (the one libdlcache uses,
 *       creating it, mode 0600), take the fill of each sample ID (a GET
 *       with no buffer) and PUT the bytes of FILE instead, cut or padded
 *       with zeros to LEN bytes (0: FILE's size): wrong bytes under the
 *       right key. Prints "put N wrong samples, C cached" and sleeps, so
 *       that the data set and the bytes stay while a bench runs.
 *   int_client runas UID GID CMD [ARGS...]
 *       Drop every supplementary group, then set gid and uid, and exec CMD.
 *   int_client idle CMD [ARGS...]
 *       Exec CMD at SCHED_IDLE (busybox has no chrt): a reader that must
 *       not take CPU from the paced jobs it watches.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "dlcache.h"

static int parse_key(const char *s, __u64 key[2])
{
	int i;

	if (strlen(s) != 32)
		return -1;
	key[0] = key[1] = 0;
	for (i = 0; i < 32; i++) {
		int c = s[i], v;

		if (c >= '0' && c <= '9')
			v = c - '0';
		else if (c >= 'a' && c <= 'f')
			v = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v = c - 'A' + 10;
		else
			return -1;
		key[i / 16] = (key[i / 16] << 4) | (__u64)v;
	}
	return 0;
}

static long attach(int fd, const __u64 key[2], __u32 n, __u32 flags,
		   struct dlcache_attach *a)
{
	memset(a, 0, sizeof(*a));
	a->key[0] = key[0];
	a->key[1] = key[1];
	a->nsamples = n;
	a->flags = flags;
	return ioctl(fd, DLCACHE_IOC_ATTACH, a) < 0 ? -errno : 0;
}

/*
 * Open the device and ATTACH to this uid's data set of @key (@n samples):
 * the fd, or -1 with a FAIL line printed.
 */
static int open_attached(const __u64 key[2], __u32 n, struct dlcache_attach *a)
{
	int fd = open(DLCACHE_DEVICE, O_RDWR);
	long r;

	if (fd < 0) {
		printf("FAIL: open %s: %s\n", DLCACHE_DEVICE, strerror(errno));
		return -1;
	}
	r = attach(fd, key, n, 0, a);
	if (r) {
		printf("FAIL: ATTACH: %s\n", strerror((int)-r));
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Attach to this uid's data set of KEY and stay attached until killed:
 * a data set lives while something is attached to it, so a test that
 * needs it to outlast a bench holds it this way.
 */
static int hold_dataset(const char *keys, const char *ns)
{
	struct dlcache_attach a;
	__u64 key[2];
	__u32 n;
	int fd;

	if (parse_key(keys, key) || !(n = (__u32)strtoul(ns, NULL, 0))) {
		fprintf(stderr, "hold: bad KEY or NSAMPLES\n");
		return 2;
	}
	fd = open_attached(key, n, &a);
	if (fd < 0)
		return 1;
	printf("holding the data set, mode %04o, owner %u\n", a.mode,
	       (unsigned int)getuid());
	fflush(stdout);
	for (;;)
		pause();
}

static int attach_wrong(const char *keys, const char *ns)
{
	struct dlcache_attach a;
	struct dlcache_stats st;
	__u64 key[2];
	int fd1, fd2, bad = 0;
	long r;
	__u32 n;

	if (parse_key(keys, key) || !(n = (__u32)strtoul(ns, NULL, 0))) {
		fprintf(stderr, "attach-wrong: bad KEY or NSAMPLES\n");
		return 2;
	}
	fd1 = open(DLCACHE_DEVICE, O_RDWR);
	fd2 = open(DLCACHE_DEVICE, O_RDWR);
	if (fd1 < 0 || fd2 < 0) {
		printf("FAIL: open %s: %s\n", DLCACHE_DEVICE, strerror(errno));
		return 1;
	}
	r = attach(fd1, key, n, DLCACHE_ATTACH_F_NOCREATE, &a);
	if (r) {
		printf("FAIL: ATTACH NOCREATE with the right count %u: %s (the data set should exist)\n",
		       n, strerror((int)-r));
		return 1;
	}
	printf("ATTACH NOCREATE, %u samples: handle %u, mode %04o, owner %u\n",
	       n, a.handle, a.mode, a.owner_uid);
	r = attach(fd2, key, n + 1, 0, &a);
	if (r != -EINVAL) {
		printf("FAIL: ATTACH with %u samples for a key with %u: %s, want EINVAL\n",
		       n + 1, n, r ? strerror((int)-r) : "success");
		bad = 1;
	} else {
		printf("ATTACH with %u samples for a key with %u: EINVAL, as it should\n",
		       n + 1, n);
	}
	r = attach(fd2, key, n - 1 ? n - 1 : n + 2, DLCACHE_ATTACH_F_NOCREATE, &a);
	if (r != -EINVAL) {
		printf("FAIL: ATTACH NOCREATE with a smaller count: %s, want EINVAL\n",
		       r ? strerror((int)-r) : "success");
		bad = 1;
	}
	/* The existing data set is untouched: still there, same count. */
	memset(&st, 0, sizeof(st));
	st.handle = 1;
	st.flags = DLCACHE_STATS_F_DATASET;
	if (ioctl(fd1, DLCACHE_IOC_STATS, &st) < 0 || st.ds_nsamples != n) {
		printf("FAIL: the data set changed after the bad ATTACH (%u samples)\n",
		       st.ds_nsamples);
		bad = 1;
	}
	close(fd2);
	close(fd1);
	return bad;
}

static int hold_fills(const char *keys, const char *ns, const char *cs)
{
	struct dlcache_ring_setup rs;
	struct dlcache_enter en;
	struct dlcache_attach a;
	__u32 n, count, i, tail, head, owned = 0;
	__u32 *sq_tail, *cq_head, *cq_tail, sq_mask, cq_mask;
	struct dlcache_sqe *sqes;
	struct dlcache_cqe *cqes;
	void *sq, *cq;
	__u64 key[2];
	int fd;

	if (parse_key(keys, key) || !(n = (__u32)strtoul(ns, NULL, 0)) ||
	    !(count = (__u32)strtoul(cs, NULL, 0)) || count > n || count > 1024) {
		fprintf(stderr, "hold-fills: bad KEY, NSAMPLES or COUNT\n");
		return 2;
	}
	fd = open_attached(key, n, &a);
	if (fd < 0)
		return 1;
	memset(&rs, 0, sizeof(rs));
	rs.sq_entries = 1024;
	rs.cq_entries = 2048;
	if (ioctl(fd, DLCACHE_IOC_SETUP_RING, &rs) < 0) {
		printf("FAIL: SETUP_RING: %s\n", strerror(errno));
		return 1;
	}
	sq = mmap(NULL, rs.sq_mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		  DLCACHE_OFF_SQ_RING);
	cq = mmap(NULL, rs.cq_mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		  DLCACHE_OFF_CQ_RING);
	if (sq == MAP_FAILED || cq == MAP_FAILED) {
		printf("FAIL: mmap of the rings: %s\n", strerror(errno));
		return 1;
	}
	sq_tail = (__u32 *)((char *)sq + rs.sq_off.tail);
	sq_mask = *(__u32 *)((char *)sq + rs.sq_off.ring_mask);
	sqes = (struct dlcache_sqe *)((char *)sq + rs.sq_off.sqes);
	cq_head = (__u32 *)((char *)cq + rs.cq_off.head);
	cq_tail = (__u32 *)((char *)cq + rs.cq_off.tail);
	cq_mask = *(__u32 *)((char *)cq + rs.cq_off.ring_mask);
	cqes = (struct dlcache_cqe *)((char *)cq + rs.cq_off.cqes);

	/* A GET with no buffer: a miss makes us the filler (F_FILL). */
	tail = *sq_tail;
	for (i = 0; i < count; i++) {
		struct dlcache_sqe *e = &sqes[(tail + i) & sq_mask];

		memset(e, 0, sizeof(*e));
		e->opcode = DLCACHE_OP_GET;
		e->handle = a.handle;
		e->sample = i;
		e->user_data = i;
	}
	__atomic_store_n(sq_tail, tail + count, __ATOMIC_RELEASE);
	memset(&en, 0, sizeof(en));
	en.to_submit = count;
	en.min_complete = count;
	en.flags = DLCACHE_ENTER_F_GETEVENTS | DLCACHE_ENTER_F_TIMEOUT;
	en.timeout_ns = 10ULL * 1000000000ULL;
	if (ioctl(fd, DLCACHE_IOC_ENTER, &en) < 0) {
		printf("FAIL: ENTER: %s\n", strerror(errno));
		return 1;
	}
	head = *cq_head;
	while (head != __atomic_load_n(cq_tail, __ATOMIC_ACQUIRE)) {
		struct dlcache_cqe *c = &cqes[head & cq_mask];

		if (c->res == -ENOENT && (c->flags & DLCACHE_CQE_F_FILL))
			owned++;
		head++;
	}
	__atomic_store_n(cq_head, head, __ATOMIC_RELEASE);
	printf("holding %u fills\n", owned);
	fflush(stdout);
	if (!owned)
		return 1;
	for (;;)
		pause();
}

/* Run one SQE to completion on a mapped ring; its CQE into @out. */
struct ring {
	int fd;
	__u32 *sq_tail, sq_mask, *cq_head, *cq_tail, cq_mask;
	struct dlcache_sqe *sqes;
	struct dlcache_cqe *cqes;
};

static int ring_map(struct ring *r)
{
	struct dlcache_ring_setup rs;
	void *sq, *cq;

	memset(&rs, 0, sizeof(rs));
	rs.sq_entries = 8;
	if (ioctl(r->fd, DLCACHE_IOC_SETUP_RING, &rs) < 0)
		return -errno;
	sq = mmap(NULL, rs.sq_mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		  r->fd, DLCACHE_OFF_SQ_RING);
	cq = mmap(NULL, rs.cq_mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		  r->fd, DLCACHE_OFF_CQ_RING);
	if (sq == MAP_FAILED || cq == MAP_FAILED)
		return -errno;
	r->sq_tail = (__u32 *)((char *)sq + rs.sq_off.tail);
	r->sq_mask = *(__u32 *)((char *)sq + rs.sq_off.ring_mask);
	r->sqes = (struct dlcache_sqe *)((char *)sq + rs.sq_off.sqes);
	r->cq_head = (__u32 *)((char *)cq + rs.cq_off.head);
	r->cq_tail = (__u32 *)((char *)cq + rs.cq_off.tail);
	r->cq_mask = *(__u32 *)((char *)cq + rs.cq_off.ring_mask);
	r->cqes = (struct dlcache_cqe *)((char *)cq + rs.cq_off.cqes);
	return 0;
}

static int ring_run(struct ring *r, const struct dlcache_sqe *sqe,
		    struct dlcache_cqe *out)
{
	struct dlcache_enter en;
	__u32 tail = *r->sq_tail, head;

	r->sqes[tail & r->sq_mask] = *sqe;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	memset(&en, 0, sizeof(en));
	en.to_submit = 1;
	en.min_complete = 1;
	en.flags = DLCACHE_ENTER_F_GETEVENTS | DLCACHE_ENTER_F_TIMEOUT;
	en.timeout_ns = 10ULL * 1000000000ULL;
	if (ioctl(r->fd, DLCACHE_IOC_ENTER, &en) < 0)
		return -errno;
	head = *r->cq_head;
	if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
		return -ETIME;
	*out = r->cqes[head & r->cq_mask];
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return 0;
}

static int put_wrong(int argc, char **argv)
{
	struct dlcache_attach a;
	struct dlcache_sqe sqe;
	struct dlcache_cqe cqe;
	struct ring r;
	__u32 n, put = 0, cached = 0;
	__u64 key[2];
	long ret;
	int i;

	if (argc < 4 || parse_key(argv[1], key) ||
	    !(n = (__u32)strtoul(argv[2], NULL, 0))) {
		fprintf(stderr, "put-wrong: bad KEY or NSAMPLES\n");
		return 2;
	}
	memset(&r, 0, sizeof(r));
	r.fd = open(DLCACHE_DEVICE, O_RDWR);
	if (r.fd < 0) {
		printf("FAIL: open %s: %s\n", DLCACHE_DEVICE, strerror(errno));
		return 1;
	}
	/* Flags 0: this user's own data set of KEY, as libdlcache's. */
	ret = attach(r.fd, key, n, 0, &a);
	if (!ret)
		ret = ring_map(&r);
	if (ret) {
		printf("FAIL: ATTACH or SETUP_RING: %s\n", strerror((int)-ret));
		return 1;
	}
	for (i = 3; i < argc; i++) {
		char *spec = argv[i], *file, *lens;
		__u32 id = (__u32)strtoul(spec, &file, 0), len;
		unsigned char *buf;
		FILE *f;
		size_t got;

		if (*file != ':' || !(lens = strrchr(file + 1, ':'))) {
			fprintf(stderr, "put-wrong: want ID:FILE:LEN, got %s\n", spec);
			return 2;
		}
		*lens++ = '\0';
		file++;
		len = (__u32)strtoul(lens, NULL, 0);
		f = fopen(file, "rb");
		if (!f) {
			printf("FAIL: %s: %s\n", file, strerror(errno));
			return 1;
		}
		buf = calloc(1, len ? len : 64 << 20);
		got = fread(buf, 1, len ? len : 64 << 20, f);
		fclose(f);
		if (!len)
			len = (__u32)got;

		memset(&sqe, 0, sizeof(sqe));
		sqe.opcode = DLCACHE_OP_GET;
		sqe.handle = a.handle;
		sqe.sample = id;
		ret = ring_run(&r, &sqe, &cqe);
		if (ret || cqe.res != -ENOENT || !(cqe.flags & DLCACHE_CQE_F_FILL)) {
			printf("FAIL: GET of sample %u to take its fill: %s, res %d, flags %#x\n",
			       id, strerror((int)-ret), cqe.res, cqe.flags);
			return 1;
		}
		memset(&sqe, 0, sizeof(sqe));
		sqe.opcode = DLCACHE_OP_PUT;
		sqe.handle = a.handle;
		sqe.sample = id;
		sqe.len = len;
		sqe.addr = (__u64)(unsigned long)buf;
		ret = ring_run(&r, &sqe, &cqe);
		if (ret || cqe.res != (int)len) {
			printf("FAIL: PUT of sample %u: %s, res %d\n", id,
			       strerror((int)-ret), cqe.res);
			return 1;
		}
		put++;
		cached += !!(cqe.flags & DLCACHE_CQE_F_CACHED);
		printf("sample %u: %u wrong bytes from %s%s\n", id, len, file,
		       cqe.flags & DLCACHE_CQE_F_CACHED ? ", cached" : ", not cached");
		free(buf);
	}
	printf("put %u wrong samples, %u cached\n", put, cached);
	fflush(stdout);
	for (;;)
		pause();
}

static int runas(int argc, char **argv)
{
	uid_t uid;
	gid_t gid;

	if (argc < 4) {
		fprintf(stderr, "runas UID GID CMD [ARGS...]\n");
		return 2;
	}
	uid = (uid_t)strtoul(argv[1], NULL, 0);
	gid = (gid_t)strtoul(argv[2], NULL, 0);
	if (setgroups(0, NULL) || setgid(gid) || setuid(uid)) {
		perror("runas");
		return 126;
	}
	execvp(argv[3], argv + 3);
	perror(argv[3]);
	return 127;
}

static int idle(int argc, char **argv)
{
	struct sched_param sp = { .sched_priority = 0 };

	if (argc < 2) {
		fprintf(stderr, "idle CMD [ARGS...]\n");
		return 2;
	}
	if (sched_setscheduler(0, SCHED_IDLE, &sp)) {
		perror("idle");
		return 126;
	}
	execvp(argv[1], argv + 1);
	perror(argv[1]);
	return 127;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "attach-wrong"))
		return attach_wrong(argv[2], argv[3]);
	if (argc >= 4 && !strcmp(argv[1], "hold"))
		return hold_dataset(argv[2], argv[3]);
	if (argc >= 5 && !strcmp(argv[1], "hold-fills"))
		return hold_fills(argv[2], argv[3], argv[4]);
	if (argc >= 2 && !strcmp(argv[1], "runas"))
		return runas(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "put-wrong"))
		return put_wrong(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "idle"))
		return idle(argc - 1, argv + 1);
	fprintf(stderr, "usage: int_client attach-wrong KEY NSAMPLES | hold KEY NSAMPLES |\n"
		"       hold-fills KEY NSAMPLES COUNT |\n"
		"       put-wrong KEY NSAMPLES ID:FILE:LEN... | runas UID GID CMD... |\n"
		"       idle CMD...\n");
	return 2;
}
