// SPDX-License-Identifier: MIT
/*
 * Node sharing (dlc_config.node_group; library.md, "Node sharing"):
 * - names: a group name outside 1..64 bytes of [A-Za-z0-9._-], or one
 *   starting with '.', is -EINVAL naming node_group;
 * - the segment: one at the group's path that is not this user's own
 *   regular 0600 file of the segment's size (a 0644 file, a symlink, a
 *   file of another size, as root one of another owner), or one another
 *   holds locked past 2 s, is not used: the loader runs without guests
 *   and one warning names the path;
 * - sharing: two loaders of one group, created by threads bound to CPU 0
 *   and CPU 1; while the first idles, the second's guest decode thread
 *   (named dlc-guest, at SCHED_IDLE, allowed CPU 0 alone) decodes some of
 *   its samples, and its batches are those of a loader without a group
 *   (FNV of every batch, two epochs);
 * - starved: with a busy loop on the lender's CPU, a sample the guest
 *   took is taken back by the loader's own decoder (node_guest_reclaimed):
 *   no batch waits 250 ms longer than without a group, the batches are
 *   the same, and the loader is destroyed within 250 ms beside the hog
 *   (its guests come home to end their decodes);
 * - broken: half the samples truncated, under DLC_ON_ERROR_SKIP: a
 *   guest's failed decode goes back to the owner's threads; the batches,
 *   errors and skips are those of a loader without a group;
 * - leaving: a member process killed with SIGKILL stops being lent from
 *   (node_borrowed_cpus back to 0 within a few refreshes).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "dlcache.h"
#include "helpers/testutil.h"

static char *g_dir, *g_big_dir;
static struct dlc_index *g_idx, *g_big;
static char g_group[64];

static void config(struct dlc_config *cfg, const char *group)
{
	dlc_config_init(cfg);
	cfg->batch_size = 8;
	cfg->transform.out_w = 64;
	cfg->transform.out_h = 64;
	cfg->window = 64;
	cfg->decode_threads = 1;
	cfg->backend = DLC_BACKEND_INPROCESS;
	cfg->cache_bytes = 64 << 20;
	cfg->log = t_log_capture;
	cfg->log_level = DLC_LOG_INFO;
	cfg->node_group = group;
}

static void seg_path(char *buf, size_t len, const char *group)
{
	snprintf(buf, len, "/dev/shm/dlcache-node-%u-%s", (unsigned)geteuid(),
		 group);
}

static void check_names(void)
{
	static const char *const bad[] = {
		"", ".hidden", "a/b", "a b", "x\n",
		"0123456789012345678901234567890123456789012345678901234567890123x",
	};
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	char path[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		t_log_clear();
		config(&cfg, bad[i]);
		CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), -EINVAL);
		CHECK(strstr(t_logbuf, "node_group"), "'%s': logged %s", bad[i],
		      t_logbuf);
	}
	/* 64 bytes is the longest. */
	config(&cfg, "0123456789012345678901234567890123456789012345678901234567890123");
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), 0);
	dlc_loader_destroy(l);
	seg_path(path, sizeof(path), cfg.node_group);
	unlink(path);
}

/* A loader of group @group: created, no guest, the warning names @path. */
static void refused(const char *group, const char *path, const char *why)
{
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	struct dlc_stats st;

	t_log_clear();
	config(&cfg, group);
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), 0);
	if (!l)
		return;
	CHECK_EQ(dlc_loader_stats(l, &st, sizeof(st)), 0);
	CHECK_EQ(st.node_guest_threads, 0);
	CHECK(strstr(t_logbuf, path) && strstr(t_logbuf, why),
	      "%s: want a warning naming %s (%s), logged: %s", group, path,
	      why, t_logbuf);
	dlc_loader_destroy(l);
}

static void check_segment(void)
{
	char path[256], group[64];
	int fd;

	snprintf(group, sizeof(group), "t-%d-mode", (int)getpid());
	seg_path(path, sizeof(path), group);
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
	CHECK(fd >= 0 && fchmod(fd, 0644) == 0, "%s", path);
	close(fd);
	refused(group, path, "mode 0600");
	unlink(path);

	snprintf(group, sizeof(group), "t-%d-link", (int)getpid());
	seg_path(path, sizeof(path), group);
	CHECK_EQ(symlink("/tmp/elsewhere", path), 0);
	refused(group, path, "cannot open");
	unlink(path);

	snprintf(group, sizeof(group), "t-%d-size", (int)getpid());
	seg_path(path, sizeof(path), group);
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
	CHECK(fd >= 0 && write(fd, "not a segment", 13) == 13, "%s", path);
	close(fd);
	refused(group, path, "not a segment");
	unlink(path);

	/* One that stays locked (a member stopped mid-join): 2 s, then none. */
	snprintf(group, sizeof(group), "t-%d-lock", (int)getpid());
	seg_path(path, sizeof(path), group);
	fd = open(path, O_CREAT | O_EXCL | O_RDWR, 0600);
	CHECK(fd >= 0 && flock(fd, LOCK_EX) == 0, "%s", path);
	refused(group, path, "cannot lock it");
	close(fd);
	unlink(path);

	if (geteuid() != 0) {
		t_skip("segment-owner", "not root: cannot make a file of another owner");
		return;
	}
	snprintf(group, sizeof(group), "t-%d-owner", (int)getpid());
	seg_path(path, sizeof(path), group);
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
	CHECK(fd >= 0 && fchown(fd, 65534, 65534) == 0, "%s", path);
	close(fd);
	refused(group, path, "uid 65534");
	unlink(path);
}

/*
 * 24 photographs of @w x @h under @root/@class; with @cut, every other
 * one cut in half (truncated in its scan).
 */
static int make_photos(const char *root, const char *class, uint32_t w,
		       uint32_t h, int cut)
{
	char path[4096];
	uint32_t i;

	for (i = 0; i < 24; i++) {
		size_t len;
		uint8_t *j = t_make_jpeg(w, h, i + 1, 0, 90, &len);
		int ret;

		if (!j)
			return -ENOMEM;
		snprintf(path, sizeof(path), "%s/%s/img%04u.jpg", root, class,
			 i);
		ret = t_write_file(path, j, cut && i % 2 ? len / 2 : len);
		free(j);
		if (ret)
			return ret;
	}
	return 0;
}

struct maker {
	int cpu;
	struct dlc_config cfg;
	struct dlc_loader *l;
	const struct dlc_index *idx;	/* NULL: g_idx */
	int ret;
};

/* Create a loader from a thread bound to one CPU, as a bound rank does. */
static void *make_on_cpu(void *arg)
{
	struct maker *m = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(m->cpu, &set);
	m->ret = sched_setaffinity(0, sizeof(set), &set) ? -errno :
		 dlc_loader_create(&m->cfg, m->idx ? m->idx : g_idx, &m->l);
	return NULL;
}

static int make_bound(struct maker *m)
{
	pthread_t t;

	if (pthread_create(&t, NULL, make_on_cpu, m))
		return -EAGAIN;
	pthread_join(t, NULL);
	return m->ret;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Epoch @e of @l's batches, chained onto @h; the longest wait for one so
 * far into @worst_ms.
 */
static uint64_t run_epoch(struct dlc_loader *l, uint32_t e, uint64_t h,
			  uint64_t *worst_ms)
{
	uint64_t t0, t;
	struct dlc_batch *b;
	int ret;

	CHECK_EQ(dlc_loader_start_epoch(l, e, 0), 0);
	for (;;) {
		t0 = now_ms();
		ret = dlc_next_batch(l, &b);
		t = now_ms() - t0;
		if (t > *worst_ms)
			*worst_ms = t;
		if (ret)
			break;
		h = t_fnv_batch(b, h);
		dlc_release_batch(l, b);
	}
	CHECK_EQ(ret, -ENODATA);
	return h;
}

/* Two epochs' batches, chained. */
static uint64_t run_epochs(struct dlc_loader *l)
{
	uint64_t h = T_FNV_INIT, worst = 0;
	uint32_t e;

	for (e = 0; e < 2; e++)
		h = run_epoch(l, e, h, &worst);
	return h;
}

/*
 * The dlc-guest threads of this process: how many may run on CPU 0 alone,
 * on CPU 1 alone, and whether every one is at SCHED_IDLE.
 */
static void guests(int *on0, int *on1, int *idle)
{
	char path[512], line[256];
	struct dirent *d;
	DIR *dir = opendir("/proc/self/task");

	*on0 = *on1 = 0;
	*idle = 1;
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		int tid = atoi(d->d_name), name = 0;
		FILE *f;

		if (tid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			if (!strcmp(line, "Name:\tdlc-guest\n"))
				name = 1;
			if (name && !strcmp(line, "Cpus_allowed_list:\t0\n"))
				(*on0)++;
			if (name && !strcmp(line, "Cpus_allowed_list:\t1\n"))
				(*on1)++;
		}
		fclose(f);
		if (name && sched_getscheduler(tid) != SCHED_IDLE)
			*idle = 0;
	}
	closedir(dir);
}

/* node_borrowed_cpus of @l once it equals @want, within @ms; else its last. */
static uint64_t borrowed_within(struct dlc_loader *l, uint64_t want, int ms)
{
	struct dlc_stats st = { 0 };

	for (; ms > 0; ms -= 50) {
		dlc_loader_stats(l, &st, sizeof(st));
		if (st.node_borrowed_cpus == want)
			break;
		t_sleep_ms(50);
	}
	return st.node_borrowed_cpus;
}

static void check_sharing(void)
{
	struct maker a = { .cpu = 0 }, b = { .cpu = 1 }, ref = { .cpu = 1 };
	struct dlc_stats st;
	uint64_t want, got;
	int idle, on0, on1;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		t_skip("check_sharing", "one CPU: nothing to lend");
		return;
	}
	config(&ref.cfg, NULL);
	CHECK_EQ(make_bound(&ref), 0);
	if (!ref.l)
		return;
	want = run_epochs(ref.l);
	dlc_loader_destroy(ref.l);

	config(&a.cfg, g_group);
	config(&b.cfg, g_group);
	CHECK_EQ(make_bound(&a), 0);
	CHECK_EQ(make_bound(&b), 0);
	if (!a.l || !b.l)
		goto out;
	/* The guests look up the group's CPUs at start, then every second. */
	t_sleep_ms(200);
	got = run_epochs(b.l);
	CHECK(got == want, "batches with sharing %016llx, without %016llx",
	      (unsigned long long)got, (unsigned long long)want);
	CHECK_EQ(dlc_loader_stats(b.l, &st, sizeof(st)), 0);
	CHECK_EQ(st.node_guest_threads, 1);
	CHECK_EQ(st.node_borrowed_cpus, 1);
	CHECK(st.node_guest_decodes > 0, "the guest decoded %llu samples",
	      (unsigned long long)st.node_guest_decodes);
	printf("# guest decoded %llu of %llu samples on CPU 0\n",
	       (unsigned long long)st.node_guest_decodes,
	       (unsigned long long)st.decoded);
	/*
	 * Each loader has one: b's may use CPU 0 (a's), a's CPU 1, once it
	 * looked again after b joined (a guest looks every second).
	 */
	CHECK_EQ(borrowed_within(a.l, 1, 3000), 1);
	guests(&on0, &on1, &idle);
	CHECK_EQ(on0, 1);
	CHECK_EQ(on1, 1);
	CHECK(idle, "a guest thread not at SCHED_IDLE");
out:
	dlc_loader_destroy(a.l);
	dlc_loader_destroy(b.l);
}

/* A busy loop on CPU 0 at normal priority until *@arg. */
static void *hog_main(void *arg)
{
	const int *stop = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return NULL;
	while (!__atomic_load_n(stop, __ATOMIC_RELAXED))
		;
	return NULL;
}

#define HOGS		1
/* Epochs until a sample was taken back, at most. */
#define STARVED_EPOCHS	40

/*
 * Big photographs, each decoded whole (validate always): 5 Mpixels, a
 * decode longer than the slice the fair scheduler gives a SCHED_IDLE
 * thread beside a hog, so that a guest is held off mid-decode.
 */
static void starved_config(struct maker *m, const char *group)
{
	config(&m->cfg, group);
	m->cfg.validate = DLC_VALIDATE_ALWAYS;
	m->idx = g_big;
}

/*
 * The lender's CPU taken by a hog: a guest there gets a sliver of it,
 * and a sample it took would hold its batch for seconds. The loader's
 * own decoder takes it back: no batch waits long, and each epoch's
 * batches are those of a loader without a group. A guest is offered a
 * sample when it is ready and the queue is long, and is held off before
 * it begins or in the middle: epochs run until one was taken back. The
 * guest takes no lock of the owner's, so no batch waits on a guest held
 * off its CPU while it held one (it did: 380 ms, 2 runs in 60).
 */
static void check_starved(void)
{
	struct maker a = { .cpu = 0 }, b = { .cpu = 1 }, ref = { .cpu = 1 };
	uint64_t got, want, worst = 0, ref_worst = 0, t0;
	struct dlc_stats st = { 0 };
	cpu_set_t mine, after;
	pthread_t hog[HOGS];
	int stop = 0, n = 0, i;
	uint32_t e;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		t_skip("check_starved", "one CPU: nothing to lend");
		return;
	}
	starved_config(&ref, NULL);
	starved_config(&a, g_group);
	starved_config(&b, g_group);
	CHECK_EQ(make_bound(&ref), 0);
	CHECK_EQ(make_bound(&a), 0);
	CHECK_EQ(make_bound(&b), 0);
	if (!ref.l || !a.l || !b.l)
		goto out;
	CHECK_EQ(borrowed_within(b.l, 1, 3000), 1);
	/* The guest's first decodes on an idle CPU 0, then the hog. */
	got = run_epoch(b.l, 0, T_FNV_INIT, &worst);
	want = run_epoch(ref.l, 0, T_FNV_INIT, &ref_worst);
	CHECK(got == want, "epoch 0: batches with a guest %016llx, without %016llx",
	      (unsigned long long)got, (unsigned long long)want);
	for (; n < HOGS; n++)
		if (pthread_create(&hog[n], NULL, hog_main, &stop))
			break;
	CHECK_EQ(n, HOGS);
	worst = 0;
	for (e = 1; e < STARVED_EPOCHS && !st.node_guest_reclaimed; e++) {
		got = run_epoch(b.l, e, T_FNV_INIT, &worst);
		want = run_epoch(ref.l, e, T_FNV_INIT, &ref_worst);
		CHECK(got == want, "epoch %u: batches with a starved guest %016llx, without a group %016llx",
		      e, (unsigned long long)got, (unsigned long long)want);
		CHECK_EQ(dlc_loader_stats(b.l, &st, sizeof(st)), 0);
	}
	/* The guest, a sample half decoded, comes home to end it. */
	CHECK_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
	t0 = now_ms();
	dlc_loader_destroy(b.l);
	b.l = NULL;
	t0 = now_ms() - t0;
	/* Only the guests were moved, never the thread destroying. */
	CHECK_EQ(sched_getaffinity(0, sizeof(after), &after), 0);
	CHECK(CPU_EQUAL(&mine, &after), "destroy moved its caller: %d CPUs, was %d",
	      CPU_COUNT(&after), CPU_COUNT(&mine));
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < n; i++)
		pthread_join(hog[i], NULL);
	printf("# hogged lender, %u epochs: the guest decoded %llu, %llu taken back; longest wait for a batch %llu ms (%llu ms without a group); destroyed in %llu ms\n",
	       e, (unsigned long long)st.node_guest_decodes,
	       (unsigned long long)st.node_guest_reclaimed,
	       (unsigned long long)worst, (unsigned long long)ref_worst,
	       (unsigned long long)t0);
	CHECK(t0 < 250, "destroy took %llu ms beside the hog",
	      (unsigned long long)t0);
	CHECK(st.node_guest_reclaimed > 0,
	      "no sample was taken back from the starved guest in %u epochs", e);
	CHECK(worst < 250 + ref_worst,
	      "a batch waited %llu ms for a sample a starved guest held",
	      (unsigned long long)worst);
out:
	dlc_loader_destroy(ref.l);
	dlc_loader_destroy(a.l);
	dlc_loader_destroy(b.l);
}

/* @l's two epochs under DLC_ON_ERROR_SKIP: batches, errors, skipped. */
static void run_broken(struct dlc_loader *l, uint64_t *h, uint64_t *errors,
		       uint64_t *skipped)
{
	struct dlc_stats st = { 0 };

	*h = run_epochs(l);
	CHECK_EQ(dlc_loader_stats(l, &st, sizeof(st)), 0);
	*errors = st.errors;
	*skipped = st.skipped;
}

/*
 * Half the samples truncated, each decoded whole: a guest's failed
 * decode goes back to the owner's threads, which count, log and skip
 * the sample once, as a loader without a group does.
 */
static void check_broken(void)
{
	struct maker a = { .cpu = 0 }, b = { .cpu = 1 }, ref = { .cpu = 1 };
	uint64_t want, got, werr, gerr, wskip, gskip;
	struct dlc_index *idx = NULL;
	char *dir = t_mkdtemp(NULL);
	struct dlc_stats st = { 0 };

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		t_skip("check_broken", "one CPU: nothing to lend");
		goto out_dir;
	}
	if (!dir || make_photos(dir, "mixed", 640, 480, 1) || dlc_index_build(dir, &idx)) {
		CHECK(0, "half-truncated data set");
		goto out_dir;
	}
	config(&ref.cfg, NULL);
	config(&a.cfg, g_group);
	config(&b.cfg, g_group);
	ref.cfg.validate = a.cfg.validate = b.cfg.validate =
		DLC_VALIDATE_ALWAYS;
	ref.cfg.on_error = a.cfg.on_error = b.cfg.on_error = DLC_ON_ERROR_SKIP;
	ref.idx = a.idx = b.idx = idx;
	CHECK_EQ(make_bound(&ref), 0);
	if (!ref.l)
		goto out_dir;
	t_log_clear();
	run_broken(ref.l, &want, &werr, &wskip);
	dlc_loader_destroy(ref.l);
	CHECK(werr == 24 && wskip == 24, "without a group: %llu errors, %llu skipped; want 24 each",
	      (unsigned long long)werr, (unsigned long long)wskip);

	CHECK_EQ(make_bound(&a), 0);
	CHECK_EQ(make_bound(&b), 0);
	if (!a.l || !b.l)
		goto out;
	CHECK_EQ(borrowed_within(b.l, 1, 3000), 1);
	t_log_clear();
	run_broken(b.l, &got, &gerr, &gskip);
	CHECK(got == want, "batches with a guest %016llx, without %016llx",
	      (unsigned long long)got, (unsigned long long)want);
	CHECK(gerr == werr && gskip == wskip,
	      "with a guest: %llu errors, %llu skipped; without: %llu, %llu",
	      (unsigned long long)gerr, (unsigned long long)gskip,
	      (unsigned long long)werr, (unsigned long long)wskip);
	CHECK(strstr(t_logbuf, "mixed/img0001.jpg") &&
	      strstr(t_logbuf, "skipping it"),
	      "the log names a truncated file: %s", t_logbuf);
	CHECK_EQ(dlc_loader_stats(b.l, &st, sizeof(st)), 0);
	printf("# half truncated: the guest decoded %llu samples\n",
	       (unsigned long long)st.node_guest_decodes);
out:
	dlc_loader_destroy(a.l);
	dlc_loader_destroy(b.l);
out_dir:
	dlc_index_free(idx);
	if (dir)
		t_rmtree(dir);
	free(dir);
}

static void check_leaving(void)
{
	struct maker b = { .cpu = 1 };
	char c, path[256];
	int p[2], status;
	pid_t pid;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		t_skip("check_leaving", "one CPU: nothing to lend");
		return;
	}
	if (pipe(p)) {
		CHECK(0, "pipe");
		return;
	}
	pid = fork();
	if (pid == 0) {
		struct maker a = { .cpu = 0 };

		close(p[0]);
		config(&a.cfg, g_group);
		a.cfg.log = NULL;
		if (make_bound(&a))
			_exit(1);
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	CHECK(pid > 0 && read(p[0], &c, 1) == 1, "the member process is up");
	close(p[0]);
	config(&b.cfg, g_group);
	CHECK_EQ(make_bound(&b), 0);
	if (b.l) {
		CHECK_EQ(borrowed_within(b.l, 1, 3000), 1);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		pid = 0;
		CHECK_EQ(borrowed_within(b.l, 0, 3000), 0);
		dlc_loader_destroy(b.l);
		/* The last one out removed the file; the dead one's slot too. */
		seg_path(path, sizeof(path), g_group);
		CHECK(access(path, F_OK) && errno == ENOENT, "%s is left", path);
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
}

int main(void)
{
	char path[256];

	g_dir = t_mkdtemp(NULL);
	if (!g_dir || t_make_dataset(g_dir, 3, 40) ||
	    dlc_index_build(g_dir, &g_idx)) {
		CHECK(0, "data set");
		return t_done("test_node_share");
	}
	g_big_dir = t_mkdtemp(NULL);
	if (!g_big_dir || make_photos(g_big_dir, "big", 2560, 1920, 0) ||
	    dlc_index_build(g_big_dir, &g_big)) {
		CHECK(0, "big photographs");
		return t_done("test_node_share");
	}
	snprintf(g_group, sizeof(g_group), "t-%d", (int)getpid());
	T_RUN(check_names);
	T_RUN(check_segment);
	T_RUN(check_sharing);
	T_RUN(check_starved);
	T_RUN(check_broken);
	T_RUN(check_leaving);
	seg_path(path, sizeof(path), g_group);
	unlink(path);
	dlc_index_free(g_idx);
	dlc_index_free(g_big);
	t_rmtree(g_dir);
	t_rmtree(g_big_dir);
	return t_done("test_node_share");
}
