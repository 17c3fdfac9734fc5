// SPDX-License-Identifier: MIT
/*
 * Cluster mode's configuration (dlc_config.cluster, .peer_timeout_ms):
 * bad values are refused with the field named, and a library built
 * without MPI (this test's build; make MPI=1 builds peer.c instead)
 * refuses cluster mode with -EOPNOTSUPP in one log line that says how to
 * get it. Cluster mode itself runs under mpirun, four ranks in network
 * namespaces: tests/cli/test_cluster.sh.
 *
 * Built with MPI=1 and run under mpirun with two ranks (test_cluster.sh
 * does, release and ASan, and ASan over shared memory alone and over TCP
 * alone), rank 0 opens the peer tier and rank 1 is a
 * hand-written peer speaking its wire protocol on the duplicated
 * communicator:
 *   - mismatch: a rank with another seed, or another index, fails every
 *     rank's open with -EINVAL and a log line naming it and what differs.
 *   - prepared: answers prepared for the asker (peer_prepare.c) come
 *     only when welcome, are exactly the owner's preparation for the
 *     epoch asked, and are the encoded bytes when it fails or is late.
 *   - peer_messages: short, oversized (64 MiB announced) and foreign-tag
 *     messages are refused before any memory is taken for them (counted;
 *     rank 0's peak RSS does not grow by their size; received whole into
 *     a sink, so no transport writes past it), a push of the right
 *     size and wrong CRC-32C is not kept nor served, a good one is.
 *   - stuck_clears: the service thread held in MPI_Test (this file's
 *     PMPI wrapper) past peer_timeout_ms is taken for stuck, and no longer
 *     once it runs again.
 *   - busy_not_stuck: a turn of 29 messages whose MPI calls take 50 ms
 *     each (1.45 s) against a timeout of 1 s is not taken for stuck: the
 *     thread beats on every message.
 *   - stuck_close: held in MPI_Test with pushes received, close returns,
 *     the caller frees its logger and index, then the call returns: the
 *     detached thread ends without touching them (ASan: no
 *     heap-use-after-free).
 *   - sigpipe: a write to a broken connection inside MPI (a pipe with no
 *     reader, written by a PMPI wrapper) in the service thread and in
 *     the caller's thread at close, SIGPIPE's action the default: the
 *     process lives, and the caller's signal mask is as it was.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlcache.h"
#include "helpers/testutil.h"

static char *g_dir;
static struct dlc_index *g_idx;

static void config(struct dlc_config *cfg)
{
	dlc_config_init(cfg);
	cfg->batch_size = 4;
	cfg->transform.out_w = 32;
	cfg->transform.out_h = 32;
	cfg->cache_bytes = 1 << 20;
	cfg->log = t_log_capture;
}

/* @cfg refused with -EINVAL, the log naming @field. */
static void refused(struct dlc_config *cfg, const char *field)
{
	struct dlc_loader *l = NULL;

	t_log_clear();
	CHECK_EQ(dlc_loader_create(cfg, g_idx, &l), -EINVAL);
	CHECK(strstr(t_logbuf, field) != NULL, "%s: log: %s", field, t_logbuf);
	CHECK(l == NULL, "a loader after a failure");
}

static void bad_values(void)
{
	struct dlc_config cfg;

	config(&cfg);
	cfg.cluster = 2;
	refused(&cfg, "cluster");
	config(&cfg);
	cfg.cluster = DLC_CLUSTER_MPI;
	cfg.backend = DLC_BACKEND_KERNEL;
	refused(&cfg, "backend must be DLC_BACKEND_INPROCESS");
	config(&cfg);
	cfg.peer_timeout_ms = 100;
	refused(&cfg, "peer_timeout_ms");
	config(&cfg);
	cfg.cluster = DLC_CLUSTER_MPI;
	cfg.peer_timeout_ms = 600001;
	refused(&cfg, "peer_timeout_ms");
	/* The watchdog would fire on an idle service thread. */
	config(&cfg);
	cfg.cluster = DLC_CLUSTER_MPI;
	cfg.peer_timeout_ms = 99;
	refused(&cfg, "peer_timeout_ms");
	config(&cfg);
	cfg.cluster = DLC_CLUSTER_MPI;
	cfg.peer_timeout_ms = 1;
	refused(&cfg, "peer_timeout_ms");
}

static void not_available(void)
{
#ifdef DLC_HAVE_MPI
	printf("skip not_available: this build has MPI (make MPI=1)\n");
#else
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;

	config(&cfg);
	cfg.cluster = DLC_CLUSTER_MPI;
	t_log_clear();
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), -EOPNOTSUPP);
	CHECK(strstr(t_logbuf, "built without MPI (make MPI=1)") != NULL,
	      "log: %s", t_logbuf);
	CHECK(l == NULL, "a loader after a failure");
	/* The same config without cluster mode runs. */
	cfg.cluster = DLC_CLUSTER_OFF;
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), 0);
	dlc_loader_destroy(l);
#endif
}

#ifdef DLC_HAVE_MPI
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "peer.h"

/* The peer tier's wire format (peer_int.h), as a foreign peer speaks it. */
enum { TAG_REQ = 1, TAG_REP, TAG_PUT, TAG_BYE };
struct req_msg { uint32_t seq, id, epoch, flags; };
struct rep_msg { uint32_t seq, id; int32_t err; uint32_t flags; };
struct put_msg { uint32_t id, pad; };
struct join_msg {
	uint64_t capacity, key[2], seed;
	uint32_t shuffle, drop_last, shard_drop_last, pad;
	uint64_t prepare_fp;
};

#define BIG		(64U << 20)	/* an oversized message's bytes */
#define WAIT_MS		10000		/* any wait of this test, at most */
#define NPICK		3

static int g_rank;
static pthread_t g_main;

/*
 * The PMPI wrapper: when armed, the next MPI_Test of a thread other than
 * main (the service thread) blocks until released, as Open MPI's does on
 * a dead peer's socket.
 */
static pthread_mutex_t g_hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_hold_cv = PTHREAD_COND_INITIALIZER;
static int g_hold_armed, g_held, g_hold_released;
/* Atomic: each MPI_Test of the service thread takes this long (busy MPI). */
static uint32_t g_slow_ms, g_slow_calls;

/*
 * When armed, the next MPI_Test of the service thread, or MPI_Comm_free of
 * main, writes to a pipe with no reader first: a real EPIPE, and the
 * SIGPIPE the kernel raises in the writing thread, as in Open MPI's
 * writev to a dead rank's socket. The write's errno, or -1 before it.
 */
static int g_epipe_thread, g_epipe_main;	/* armed; atomic */
static int g_epipe_thread_err = -1, g_epipe_main_err = -1;

static int broken_write(void)
{
	int fd[2], err;

	if (pipe(fd))
		return errno;
	close(fd[0]);
	err = write(fd[1], "x", 1) < 0 ? errno : 0;
	close(fd[1]);
	return err;
}

int MPI_Comm_free(MPI_Comm *comm)
{
	if (pthread_equal(pthread_self(), g_main) &&
	    __atomic_exchange_n(&g_epipe_main, 0, __ATOMIC_ACQ_REL))
		__atomic_store_n(&g_epipe_main_err, broken_write(),
				 __ATOMIC_RELEASE);
	return PMPI_Comm_free(comm);
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *st)
{
	if (!pthread_equal(pthread_self(), g_main)) {
		uint32_t ms = __atomic_load_n(&g_slow_ms, __ATOMIC_RELAXED);

		if (__atomic_exchange_n(&g_epipe_thread, 0, __ATOMIC_ACQ_REL))
			__atomic_store_n(&g_epipe_thread_err, broken_write(),
					 __ATOMIC_RELEASE);

		if (ms) {
			t_sleep_ms(ms);
			__atomic_fetch_add(&g_slow_calls, 1, __ATOMIC_RELAXED);
		}
		pthread_mutex_lock(&g_hold_lock);
		if (g_hold_armed) {
			g_hold_armed = 0;
			g_held = 1;
			pthread_cond_broadcast(&g_hold_cv);
			while (!g_hold_released)
				pthread_cond_wait(&g_hold_cv, &g_hold_lock);
		}
		pthread_mutex_unlock(&g_hold_lock);
	}
	return PMPI_Test(req, flag, st);
}

static void hold_arm(void)
{
	pthread_mutex_lock(&g_hold_lock);
	g_hold_armed = 1;
	g_held = 0;
	g_hold_released = 0;
	pthread_mutex_unlock(&g_hold_lock);
}

/* Wait until the service thread is held: 0, or -ETIMEDOUT. */
static int hold_wait(void)
{
	struct timespec ts;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += WAIT_MS / 1000;
	pthread_mutex_lock(&g_hold_lock);
	while (!g_held && !ret)
		ret = pthread_cond_timedwait(&g_hold_cv, &g_hold_lock, &ts);
	pthread_mutex_unlock(&g_hold_lock);
	return g_held ? 0 : -ETIMEDOUT;
}

static void hold_release(void)
{
	pthread_mutex_lock(&g_hold_lock);
	g_hold_armed = 0;
	g_hold_released = 1;
	pthread_cond_broadcast(&g_hold_cv);
	pthread_mutex_unlock(&g_hold_lock);
}

/* Poll @what (a log line, or a counter) for up to WAIT_MS: 1 when seen. */
static int log_has(const char *what)
{
	return strstr(t_logbuf, what) != NULL;
}

static int wait_log(const char *what)
{
	int i;

	for (i = 0; i < WAIT_MS / 5; i++) {
		if (log_has(what))
			return 1;
		t_sleep_ms(5);
	}
	return 0;
}

static uint64_t vm_hwm_kib(void)
{
	char line[256];
	uint64_t kib = 0;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %lu", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static int nthreads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* What rank 0 tells rank 1: samples it owns, their sizes and files. */
struct picks {
	uint32_t n;
	uint32_t id[NPICK];
	uint64_t size[NPICK];
	char path[NPICK][512];
};

/*
 * Rank 0: open the tier on @idx (collective with rank 1's fake_open),
 * preparing answers as @pp says (NULL: none).
 */
static struct dlc_peer *tier_open_prep(const struct dlc_index *idx,
				       const struct dlc_logger *lg,
				       uint32_t timeout_ms, struct picks *pk,
				       const struct dlc_peer_prepare *pp)
{
	struct dlc_peer_opts o = {
		.idx = idx, .log = lg, .rank = 0, .world = 2,
		.capacity = 64 << 20, .timeout_ms = timeout_ms,
		.queue_depth = 16, .prepare = pp,
	};
	struct dlc_peer *p = NULL;
	uint64_t key[2];
	uint32_t i;
	int ret;

	/* What rank 1 needs to send as this rank's index. */
	dlc_index_key(idx, key);
	MPI_Send(key, 2, MPI_UINT64_T, 1, 0, MPI_COMM_WORLD);
	ret = dlc_peer_open(&o, &p);
	CHECK_EQ(ret, 0);
	memset(pk, 0, sizeof(*pk));
	for (i = 0; p && i < dlc_index_count(idx) && pk->n < NPICK; i++)
		if (dlc_peer_owner(p, i) == 0) {
			pk->id[pk->n] = i;
			pk->size[pk->n] = dlc_index_size(idx, i);
			snprintf(pk->path[pk->n], sizeof(pk->path[0]), "%s/%s",
				 dlc_index_root(idx), dlc_index_relpath(idx, i));
			pk->n++;
		}
	CHECK_EQ(pk->n, NPICK);
	MPI_Send(pk, sizeof(*pk), MPI_BYTE, 1, 0, MPI_COMM_WORLD);
	return p;
}

static struct dlc_peer *tier_open(const struct dlc_index *idx,
				   const struct dlc_logger *lg,
				   uint32_t timeout_ms, struct picks *pk)
{
	return tier_open_prep(idx, lg, timeout_ms, pk, NULL);
}

/*
 * Rank 1: the other half of dlc_peer_open()'s MPI_Comm_idup and of its
 * gather of the ranks' join messages: rank 0's index key (sent first),
 * order settings of zeros as tier_open()'s, changed by @change (NULL:
 * none).
 */
static MPI_Comm fake_join(void (*change)(struct join_msg *))
{
	struct join_msg me = { .capacity = 64 << 20 }, all[2];
	MPI_Comm comm;
	MPI_Request req;

	MPI_Recv(me.key, 2, MPI_UINT64_T, 0, 0, MPI_COMM_WORLD,
		 MPI_STATUS_IGNORE);
	if (change)
		change(&me);
	MPI_Comm_idup(MPI_COMM_WORLD, &comm, &req);
	MPI_Wait(&req, MPI_STATUS_IGNORE);
	MPI_Iallgather(&me, sizeof(me), MPI_BYTE, all, sizeof(me), MPI_BYTE,
		       comm, &req);
	MPI_Wait(&req, MPI_STATUS_IGNORE);
	return comm;
}

static MPI_Comm fake_open_as(struct picks *pk,
			     void (*change)(struct join_msg *))
{
	MPI_Comm comm = fake_join(change);

	MPI_Recv(pk, sizeof(*pk), MPI_BYTE, 0, 0, MPI_COMM_WORLD,
		 MPI_STATUS_IGNORE);
	return comm;
}

/*
 * Rank 1 joins with another seed, then with another index: rank 0's
 * open fails with -EINVAL each time, its log naming rank 1 and what
 * differs (rank 1 is the fake, so only rank 0 can be seen to fail; a
 * real rank 1 finds the same).
 */
static void mismatch0(struct dlc_index *idx)
{
	static const char *const want[] = {
		"rank 1 has seed 5, shuffle 0, drop_last 0, shard_drop_last 0; rank 0 has 0,",
		"rank 1's index (key",
	};
	struct dlc_logger lg = { t_log_capture, NULL, DLC_LOG_INFO };
	struct dlc_peer_opts o = {
		.idx = idx, .log = &lg, .rank = 0, .world = 2,
		.capacity = 64 << 20, .timeout_ms = 2000, .queue_depth = 16,
	};
	struct dlc_peer *p = NULL;
	uint64_t key[2];
	int k;

	dlc_index_key(idx, key);
	for (k = 0; k < 2; k++) {
		t_log_clear();
		MPI_Send(key, 2, MPI_UINT64_T, 1, 0, MPI_COMM_WORLD);
		CHECK_EQ(dlc_peer_open(&o, &p), -EINVAL);
		CHECK(!p, "a peer tier after a failed open");
		CHECK(log_has(want[k]), "want \"%s\" in the log: %s", want[k],
		      t_logbuf);
	}
}

static void seed5(struct join_msg *m)
{
	m->seed = 5;
}

static void other_index(struct join_msg *m)
{
	m->key[0] ^= 1;
}

static void mismatch1(void)
{
	MPI_Comm comm = fake_join(seed5);

	MPI_Comm_free(&comm);
	comm = fake_join(other_index);
	MPI_Comm_free(&comm);
}

static MPI_Comm fake_open(struct picks *pk)
{
	return fake_open_as(pk, NULL);
}

/* Rank 1: goodbyes both ways, so that rank 0's close ends at once. */
static void fake_close(MPI_Comm *comm)
{
	MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_BYE, *comm);
	MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_BYE, *comm, MPI_STATUS_IGNORE);
	MPI_Comm_free(comm);
}

/* Rank 1: a push of @len bytes at @data as sample @id. */
static void fake_push(MPI_Comm comm, uint32_t id, const void *data,
		      size_t len)
{
	uint8_t *m = malloc(sizeof(struct put_msg) + len);
	struct put_msg h = { id, 0 };

	memcpy(m, &h, sizeof(h));
	memcpy(m + sizeof(h), data, len);
	MPI_Send(m, (int)(sizeof(h) + len), MPI_BYTE, 0, TAG_PUT, comm);
	free(m);
}

/*
 * Rank 1: ask rank 0 for @id for a use in @epoch with @flags; its
 * answer's error, the bytes in @out, its flags in *@rflags.
 */
static int fake_ask_as(MPI_Comm comm, uint32_t id, uint32_t epoch,
		       uint32_t flags, uint8_t *out, size_t cap, size_t *len,
		       uint32_t *rflags)
{
	static uint32_t seq = 100;
	struct req_msg q = { ++seq, id, epoch, flags };
	uint8_t *m = malloc(sizeof(struct rep_msg) + cap);
	struct rep_msg a;
	MPI_Status st;
	int n = 0;

	MPI_Send(&q, sizeof(q), MPI_BYTE, 0, TAG_REQ, comm);
	MPI_Recv(m, (int)(sizeof(a) + cap), MPI_BYTE, 0, TAG_REP, comm, &st);
	MPI_Get_count(&st, MPI_BYTE, &n);
	memcpy(&a, m, sizeof(a));
	CHECK_EQ(a.seq, q.seq);
	CHECK_EQ(a.id, id);
	*len = (size_t)n - sizeof(a);
	memcpy(out, m + sizeof(a), *len);
	free(m);
	*rflags = a.flags;
	return a.err;
}

/* Rank 1: ask rank 0 for @id; its answer's error, the bytes in @out. */
static int fake_ask(MPI_Comm comm, uint32_t id, uint8_t *out, size_t cap,
		    size_t *len)
{
	uint32_t rflags;

	return fake_ask_as(comm, id, 0, 0, out, cap, len, &rflags);
}

/*
 * Prepared answers, the owner's side: rank 1 (the same fingerprint)
 * pushes a sample, then asks for it welcoming a prepared answer, for
 * epoch 5 (rank 0's fake preparation: a pattern of the sample and the
 * epoch) and epoch 6 (its preparation fails), and without welcoming one.
 * Welcome and prepared in time: REP_PREPARED and exactly the pattern;
 * else the encoded bytes as they were pushed; never prepared unasked.
 * Rank 0's prepare thread runs at SCHED_IDLE beside rank 1's busy MPI
 * polling, so in time is not every time: of PREP_ASKS, at least one.
 */
#define PREP_OUT	48
#define PREP_FP		0x5eedULL
#define PREP_ASKS	50
#define REQ_PREPARED_OK	1U
#define REP_PREPARED	4U

static void prep_pattern(uint32_t id, uint32_t epoch, uint8_t *dst)
{
	uint32_t i;

	for (i = 0; i < PREP_OUT; i++)
		dst[i] = (uint8_t)(id * 31 + epoch * 7 + i);
}

static int fake_epoch_of(void *arg, uint64_t tag, uint32_t *epoch)
{
	(void)arg;
	(void)tag;
	*epoch = 0;
	return 0;
}

static int fake_prepare(void *arg, struct dlc_decoder *dec, uint32_t id,
			uint32_t epoch, const struct dlc_buf *b, uint8_t *dst)
{
	(void)arg;
	(void)dec;
	(void)b;
	if (epoch == 6)
		return -EIO;
	prep_pattern(id, epoch, dst);
	return 0;
}

static void prepared0(struct dlc_index *idx)
{
	struct dlc_logger lg = { t_log_capture, NULL, DLC_LOG_INFO };
	struct dlc_peer_prepare pp = {
		.out_bytes = PREP_OUT, .fingerprint = PREP_FP,
		.epoch_of = fake_epoch_of, .prepare = fake_prepare,
	};
	struct dlc_peer_counters c;
	struct dlc_peer *p;
	struct picks pk;
	int fails1 = 0;

	t_log_clear();
	p = tier_open_prep(idx, &lg, 2000, &pk, &pp);
	if (!p)
		return;
	CHECK(log_has("prepared answers on"), "log: %s", t_logbuf);
	MPI_Recv(&fails1, 1, MPI_INT, 1, 0, MPI_COMM_WORLD,
		 MPI_STATUS_IGNORE);
	CHECK(fails1 == 0, "rank 1 saw %d failures", fails1);
	dlc_peer_counters(p, &c);
	CHECK(c.prepared_out >= 1, "%llu answers prepared",
	      (unsigned long long)c.prepared_out);
	printf("  prepared: %llu answers prepared, %llu encoded though welcome\n",
	       (unsigned long long)c.prepared_out,
	       (unsigned long long)c.prepare_late);
	dlc_peer_close(p);
}

static void prep_fp(struct join_msg *m)
{
	m->prepare_fp = PREP_FP;
}

static void prepared1(void)
{
	struct picks pk;
	MPI_Comm comm = fake_open_as(&pk, prep_fp);
	uint8_t *file, *got, want[PREP_OUT];
	uint32_t rflags = 0, k, prepared = 0;
	size_t len = 0, n = 0;
	int i, err = -1, f0 = t_failures;

	file = t_read_file(pk.path[0], &len);
	got = malloc(len + PREP_OUT);
	if (!file || !got)
		exit(1);
	fake_push(comm, pk.id[0], file, len);
	for (i = 0; i < WAIT_MS / 5 && err; i++) {
		err = fake_ask(comm, pk.id[0], got, len, &n);
		if (err)
			t_sleep_ms(5);
	}
	CHECK_EQ(err, 0);
	prep_pattern(pk.id[0], 5, want);
	for (k = 0; k < PREP_ASKS; k++) {
		err = fake_ask_as(comm, pk.id[0], 5, REQ_PREPARED_OK, got,
				  len + PREP_OUT, &n, &rflags);
		CHECK_EQ(err, 0);
		if (rflags & REP_PREPARED) {
			prepared++;
			CHECK(n == PREP_OUT && !memcmp(got, want, PREP_OUT),
			      "a prepared answer of %zu bytes, not the pattern",
			      n);
		} else {
			CHECK(n == len && !memcmp(got, file, len),
			      "an encoded answer of %zu bytes", n);
		}
	}
	CHECK(prepared >= 1, "none of %u welcome asks came prepared",
	      PREP_ASKS);
	/* The owner's preparation fails: the encoded bytes. */
	err = fake_ask_as(comm, pk.id[0], 6, REQ_PREPARED_OK, got,
			  len + PREP_OUT, &n, &rflags);
	CHECK(!err && !(rflags & REP_PREPARED) && n == len &&
	      !memcmp(got, file, len), "a failed preparation: %d, %zu bytes",
	      err, n);
	/* Not welcome: never prepared. */
	for (k = 0; k < 5; k++) {
		err = fake_ask_as(comm, pk.id[0], 5, 0, got, len + PREP_OUT,
				  &n, &rflags);
		CHECK(!err && !(rflags & REP_PREPARED) && n == len,
		      "unasked: %d, flags %u, %zu bytes", err, rflags, n);
	}
	printf("  prepared: %u of %u welcome asks came prepared\n", prepared,
	       PREP_ASKS);
	f0 = t_failures - f0;
	MPI_Send(&f0, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
	fake_close(&comm);
	free(file);
	free(got);
}

static void peer_messages0(struct dlc_index *idx)
{
	struct dlc_logger lg = { t_log_capture, NULL, DLC_LOG_INFO };
	struct dlc_peer_counters c;
	struct dlc_peer *p;
	struct picks pk;
	uint64_t hwm0 = vm_hwm_kib(), hwm1;
	int i, fails1 = 0;

	t_log_clear();
	p = tier_open(idx, &lg, 2000, &pk);
	if (!p)
		return;
	/* Rank 1 sent 8 messages the protocol has no room for, a bad push. */
	for (i = 0; i < WAIT_MS / 5; i++) {
		dlc_peer_counters(p, &c);
		if (c.rejected >= 8 && c.bad_pushes >= 1)
			break;
		t_sleep_ms(5);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);	/* rank 1 asked and pushed */
	dlc_peer_counters(p, &c);
	hwm1 = vm_hwm_kib();
	CHECK_EQ(c.rejected, 8);
	CHECK_EQ(c.bad_pushes, 1);
	CHECK_EQ(c.admitted, 1);
	CHECK_EQ(c.dead_peers, 0);
	CHECK(hwm1 - hwm0 < (BIG >> 10) / 2,
	      "peak RSS grew %lu KiB with %u-byte messages announced",
	      (unsigned long)(hwm1 - hwm0), BIG);
	printf("  peer_messages: peak RSS grew %lu KiB with 3 messages of %u MiB refused\n",
	       (unsigned long)(hwm1 - hwm0), BIG >> 20);
	CHECK(log_has("not what the protocol allows"), "log: %s", t_logbuf);
	CHECK(log_has("not the indexed file's"), "log: %s", t_logbuf);
	MPI_Recv(&fails1, 1, MPI_INT, 1, 0, MPI_COMM_WORLD,
		 MPI_STATUS_IGNORE);
	CHECK(fails1 == 0, "rank 1 saw %d failures", fails1);
	dlc_peer_close(p);
}

static void peer_messages1(void)
{
	MPI_Request big[3];
	struct picks pk;
	MPI_Comm comm = fake_open(&pk);
	uint8_t *file, *got, *bad, *huge = calloc(1, BIG);
	size_t len = 0, n = 0;
	uint8_t small[32] = { 0 };
	struct put_msg h = { pk.id[0], 0 };
	int i, err, f0 = t_failures;

	file = t_read_file(pk.path[0], &len);
	CHECK(file && huge && len == pk.size[0], "%s", pk.path[0]);
	if (!file || !huge)
		exit(1);
	got = malloc(len + 64);
	bad = malloc(len);
	memcpy(bad, file, len);
	bad[len / 2] ^= 0x40;	/* the right size, a wrong CRC */
	memcpy(huge, &h, sizeof(h));
	/* Short, oversized, foreign: never allocated at their size. */
	MPI_Send(small, 4, MPI_BYTE, 0, TAG_PUT, comm);
	MPI_Isend(huge, BIG, MPI_BYTE, 0, TAG_PUT, comm, &big[0]);
	MPI_Send(small, 4, MPI_BYTE, 0, TAG_REQ, comm);
	MPI_Send(small, 24, MPI_BYTE, 0, TAG_REQ, comm);
	MPI_Isend(huge, BIG, MPI_BYTE, 0, TAG_REP, comm, &big[1]);
	MPI_Send(small, 8, MPI_BYTE, 0, TAG_BYE, comm);
	MPI_Isend(huge, BIG, MPI_BYTE, 0, 77, comm, &big[2]);
	MPI_Send(small, 1, MPI_BYTE, 0, 0, comm);
	fake_push(comm, pk.id[0], bad, len);
	MPI_Waitall(3, big, MPI_STATUSES_IGNORE);
	MPI_Barrier(MPI_COMM_WORLD);
	/* The bad bytes were not kept: not served. */
	err = fake_ask(comm, pk.id[0], got, len, &n);
	CHECK_EQ(err, -ENOENT);
	/* The good bytes are, as they were sent. */
	fake_push(comm, pk.id[0], file, len);
	for (i = 0; i < WAIT_MS / 5; i++) {
		err = fake_ask(comm, pk.id[0], got, len, &n);
		if (!err)
			break;
		t_sleep_ms(5);
	}
	CHECK_EQ(err, 0);
	CHECK(n == len && !memcmp(got, file, len), "served %zu bytes", n);
	MPI_Barrier(MPI_COMM_WORLD);
	f0 = t_failures - f0;
	MPI_Send(&f0, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
	fake_close(&comm);
	free(file);
	free(got);
	free(bad);
	free(huge);
}

/* Rank 1 of the stuck tests: pushes of the picked samples, then goodbye. */
static void stuck1(int bye)
{
	struct picks pk;
	MPI_Comm comm = fake_open(&pk);
	uint32_t i;

	/*
	 * One push when rank 0's thread will be left to MPI: a second would
	 * never be taken off the wire, and its send never end.
	 */
	for (i = 0; i < (bye ? pk.n : 1); i++) {
		size_t len = 0;
		uint8_t *file = t_read_file(pk.path[i], &len);

		if (file)
			fake_push(comm, pk.id[i], file, len);
		free(file);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (bye)
		fake_close(&comm);
	/* Else rank 0's tier was left to MPI: it says nothing more. */
}

static void stuck_clears0(struct dlc_index *idx)
{
	struct dlc_logger lg = { t_log_capture, NULL, DLC_LOG_INFO };
	struct dlc_peer_counters c = { 0 };
	struct dlc_peer *p;
	struct picks pk;
	int i;

	t_log_clear();
	hold_arm();
	p = tier_open(idx, &lg, 200, &pk);
	if (!p) {
		hold_release();
		return;
	}
	CHECK_EQ(hold_wait(), 0);
	CHECK(wait_log("inside Open MPI"), "log: %s", t_logbuf);
	dlc_peer_counters(p, &c);
	CHECK_EQ(c.stuck, 1);
	hold_release();
	/* It runs again: the tier asks the peers again. */
	for (i = 0; i < WAIT_MS / 5; i++) {
		dlc_peer_counters(p, &c);
		if (!c.stuck)
			break;
		t_sleep_ms(5);
	}
	CHECK_EQ(c.stuck, 0);
	CHECK_EQ(c.stalls, 1);
	CHECK(wait_log("runs again"), "log: %s", t_logbuf);
	MPI_Barrier(MPI_COMM_WORLD);
	dlc_peer_close(p);
}

/*
 * A turn of the service loop that handles many messages, each MPI call of
 * it slow but returning (a loaded node): 29 receives of 50 ms each, 1.45 s
 * in one turn, against a timeout of 1 s. A thread that beats on every
 * message is not taken for stuck.
 */
#define BUSY_PUSHES	30
#define BUSY_MS		50

static void busy_not_stuck0(struct dlc_index *idx)
{
	struct dlc_logger lg = { t_log_capture, NULL, DLC_LOG_INFO };
	struct dlc_peer_counters c = { 0 };
	struct dlc_peer *p;
	struct picks pk;
	int i;

	t_log_clear();
	__atomic_store_n(&g_slow_calls, 0, __ATOMIC_RELAXED);
	hold_arm();
	p = tier_open(idx, &lg, 1000, &pk);
	if (!p) {
		hold_release();
		return;
	}
	/* Held on the first push while rank 1 sends the others. */
	CHECK_EQ(hold_wait(), 0);
	MPI_Barrier(MPI_COMM_WORLD);
	__atomic_store_n(&g_slow_ms, BUSY_MS, __ATOMIC_RELAXED);
	hold_release();
	for (i = 0; i < WAIT_MS / 5; i++) {
		dlc_peer_counters(p, &c);
		if (c.admitted == NPICK &&
		    __atomic_load_n(&g_slow_calls, __ATOMIC_RELAXED) >=
		    BUSY_PUSHES - 5)
			break;
		t_sleep_ms(5);
	}
	__atomic_store_n(&g_slow_ms, 0, __ATOMIC_RELAXED);
	CHECK_EQ(c.admitted, NPICK);
	CHECK(__atomic_load_n(&g_slow_calls, __ATOMIC_RELAXED) >=
	      BUSY_PUSHES - 5, "%u slow MPI_Test calls", g_slow_calls);
	CHECK_EQ(c.stalls, 0);
	CHECK(!log_has("inside Open MPI"), "log: %s", t_logbuf);
	MPI_Barrier(MPI_COMM_WORLD);
	dlc_peer_close(p);
}

static void busy1(void)
{
	MPI_Request req[BUSY_PUSHES];
	uint8_t *m[NPICK] = { NULL };
	size_t len[NPICK] = { 0 };
	struct picks pk;
	MPI_Comm comm = fake_open(&pk);
	uint32_t i;

	for (i = 0; i < NPICK; i++) {
		struct put_msg h = { pk.id[i], 0 };
		uint8_t *file = t_read_file(pk.path[i], &len[i]);

		m[i] = malloc(sizeof(h) + len[i]);
		if (!file || !m[i])
			exit(1);
		memcpy(m[i], &h, sizeof(h));
		memcpy(m[i] + sizeof(h), file, len[i]);
		free(file);
	}
	for (i = 0; i < BUSY_PUSHES; i++)
		MPI_Isend(m[i % NPICK], (int)(sizeof(struct put_msg) +
					      len[i % NPICK]),
			  MPI_BYTE, 0, TAG_PUT, comm, &req[i]);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Waitall(BUSY_PUSHES, req, MPI_STATUSES_IGNORE);
	MPI_Barrier(MPI_COMM_WORLD);
	fake_close(&comm);
	for (i = 0; i < NPICK; i++)
		free(m[i]);
}

static void stuck_close0(const char *dir)
{
	struct dlc_logger *lg = malloc(sizeof(*lg));
	struct dlc_index *idx = NULL;
	struct dlc_peer *p;
	struct picks pk;
	uint64_t t0;
	int n, i;

	CHECK_EQ(dlc_index_build(dir, &idx), 0);
	if (!idx || !lg)
		exit(1);
	*lg = (struct dlc_logger){ t_log_capture, NULL, DLC_LOG_INFO };
	t_log_clear();
	hold_arm();
	p = tier_open(idx, lg, 200, &pk);
	if (!p) {
		hold_release();
		return;
	}
	/* Held in MPI_Test with rank 1's pushes taken off the wire. */
	CHECK_EQ(hold_wait(), 0);
	CHECK(wait_log("inside Open MPI"), "log: %s", t_logbuf);
	t0 = (dlc_now_ns() / 1000000);
	dlc_peer_close(p);
	CHECK((dlc_now_ns() / 1000000) - t0 < 2000, "close took %llu ms",
	      (unsigned long long)((dlc_now_ns() / 1000000) - t0));
	CHECK(log_has("left to it"), "log: %s", t_logbuf);
	n = nthreads();
	/* What the loader's destroy and the caller free, the thread held. */
	memset(lg, 0xa5, sizeof(*lg));
	free(lg);
	dlc_index_free(idx);
	t_log_clear();
	hold_release();
	/* The call returns: the thread ends, touching none of it. */
	for (i = 0; i < WAIT_MS / 5 && nthreads() >= n; i++)
		t_sleep_ms(5);
	CHECK(nthreads() < n, "the detached service thread is still there");
	CHECK(!t_logbuf[0], "logged after close: %s", t_logbuf);
	MPI_Barrier(MPI_COMM_WORLD);
}

/*
 * A write to a broken connection inside MPI, with SIGPIPE's action the
 * default (the process ends): in the service thread's MPI_Test while it
 * takes rank 1's pushes (stuck1(1) is the peer), and in the caller's
 * MPI_Comm_free at close. Each gets EPIPE, the process lives, and the
 * caller's mask and pending signals are as they were.
 */
static void sigpipe0(struct dlc_index *idx)
{
	struct dlc_logger lg = { t_log_capture, NULL, DLC_LOG_INFO };
	sigset_t before, after, pending;
	struct dlc_peer *p;
	struct picks pk;
	int i;

	signal(SIGPIPE, SIG_DFL);
	pthread_sigmask(SIG_SETMASK, NULL, &before);
	__atomic_store_n(&g_epipe_thread, 1, __ATOMIC_RELEASE);
	p = tier_open(idx, &lg, 2000, &pk);
	if (!p)
		return;
	for (i = 0; i < WAIT_MS / 5 &&
	     __atomic_load_n(&g_epipe_thread_err, __ATOMIC_ACQUIRE) < 0; i++)
		t_sleep_ms(5);
	CHECK_EQ(__atomic_load_n(&g_epipe_thread_err, __ATOMIC_ACQUIRE),
		 EPIPE);
	__atomic_store_n(&g_epipe_main, 1, __ATOMIC_RELEASE);
	MPI_Barrier(MPI_COMM_WORLD);
	dlc_peer_close(p);
	CHECK_EQ(__atomic_load_n(&g_epipe_main_err, __ATOMIC_ACQUIRE), EPIPE);
	pthread_sigmask(SIG_SETMASK, NULL, &after);
	CHECK_EQ(sigismember(&after, SIGPIPE), sigismember(&before, SIGPIPE));
	sigpending(&pending);
	CHECK(!sigismember(&pending, SIGPIPE), "a SIGPIPE left pending");
}

/* Under mpirun -np 2: rank 0 runs the checks, rank 1 the fake peer. */
static int mpi_main(const char *dir)
{
	int level = 0, size = 0, ret = 0;

	g_main = pthread_self();
	MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &level);
	MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2 || level < MPI_THREAD_MULTIPLE) {
		if (!g_rank)
			printf("skip peer_messages: needs 2 ranks with MPI_THREAD_MULTIPLE (%d ranks, level %d)\n",
			       size, level);
		MPI_Finalize();
		return 0;
	}
	if (g_rank == 1) {
		mismatch1();
		prepared1();
		peer_messages1();
		stuck1(1);
		busy1();
		stuck1(0);
		stuck1(1);
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Finalize();
		return t_failures ? 1 : 0;
	}
	T_RUN(bad_values);
	T_RUN_AS("mismatch", mismatch0, g_idx);
	T_RUN_AS("prepared", prepared0, g_idx);
	T_RUN_AS("peer_messages", peer_messages0, g_idx);
	T_RUN_AS("stuck_clears", stuck_clears0, g_idx);
	T_RUN_AS("busy_not_stuck", busy_not_stuck0, g_idx);
	T_RUN_AS("stuck_close", stuck_close0, dir);
	T_RUN_AS("sigpipe", sigpipe0, g_idx);
	MPI_Barrier(MPI_COMM_WORLD);
	ret = t_done("test_cluster");
	MPI_Finalize();
	return ret;
}
#endif

int main(void)
{
	int ret;

#ifdef DLC_HAVE_MPI
	/* Rank 0 makes the data set; rank 1 reads its files by path. */
	if (getenv("OMPI_COMM_WORLD_SIZE")) {
		static char dir[512];
		int rank = atoi(getenv("OMPI_COMM_WORLD_RANK") ?: "0");

		if (!rank) {
			g_dir = t_mkdtemp(NULL);
			if (!g_dir || t_make_dataset(g_dir, 2, 8) ||
			    dlc_index_build(g_dir, &g_idx)) {
				printf("FAIL peer_messages: cannot make a data set\n");
				return 1;
			}
			snprintf(dir, sizeof(dir), "%s", g_dir);
		}
		ret = mpi_main(dir);
		if (g_idx)
			dlc_index_free(g_idx);
		if (g_dir)
			t_rmtree(g_dir);
		return ret;
	}
#endif
	g_dir = t_mkdtemp(NULL);
	if (!g_dir || t_make_dataset(g_dir, 2, 8)) {
		printf("cannot make a data set\n");
		return 1;
	}
	CHECK(dlc_index_build(g_dir, &g_idx) == 0, "index");
	if (!g_idx)
		return t_done("test_cluster");
	T_RUN(bad_values);
	T_RUN(not_available);
	/*
	 * Not a skip: the peer tier's checks are another run of this
	 * program, under mpirun -np 2 from an MPI=1 build, which
	 * tests/cli/test_cluster.sh makes (and fails without).
	 */
	printf("# peer tier: tests/cli/test_cluster.sh runs the MPI=1 build of this program under mpirun -np 2\n");
	ret = t_done("test_cluster");
	dlc_index_free(g_idx);
	t_rmtree(g_dir);
	return ret;
}
