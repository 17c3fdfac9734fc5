// SPDX-License-Identifier: MIT
/*
 * Loader threads that cannot start, and the loader's size limits.
 *
 * This program defines pthread_create() and jpeg_CreateDecompress()
 * itself (the library is linked in statically, libjpeg dynamically): each
 * forwards to the real one through dlsym(RTLD_NEXT) unless told to fail,
 * as a thread limit or an allocation failure inside libjpeg would. A
 * loader whose I/O thread or a decode thread cannot start, or cannot make
 * its decoder, must fail dlc_loader_create() with the errno and a log
 * line: never hand out a loader whose dlc_next_batch() then blocks for
 * ever. Every case runs in a child under alarm(), so a hang is a FAIL.
 *
 * Limits: the in-process cache's policy takes three epochs of 2^28
 * samples (dlcache.h promises 2^28), where it once stopped near 179M.
 *
 * Exit 0 pass, 1 fail.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jpeglib.h>
#include <jerror.h>

#include "dlcache.h"
#include "policy.h"
#include "helpers/testutil.h"

/* ---- interposed ----------------------------------------------------------- */

static int create_calls, create_fail_at;	/* fail the Nth call; 0: none */
static int jpeg_calls, jpeg_fail_at, jpeg_fail_all;

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *,
				 void *(*)(void *), void *);

int pthread_create(pthread_t *t, const pthread_attr_t *a,
		   void *(*fn)(void *), void *arg)
{
	static pthread_create_fn real;

	if (!real)
		real = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
	if (++create_calls == create_fail_at)
		return EAGAIN;
	return real(t, a, fn, arg);
}

typedef void (*jpeg_create_fn)(j_decompress_ptr, int, size_t);

void jpeg_CreateDecompress(j_decompress_ptr cinfo, int version, size_t size)
{
	static jpeg_create_fn real;
	int n = __atomic_add_fetch(&jpeg_calls, 1, __ATOMIC_RELAXED);

	if (!real)
		real = (jpeg_create_fn)dlsym(RTLD_NEXT, "jpeg_CreateDecompress");
	if (jpeg_fail_all || n == jpeg_fail_at) {
		/* What libjpeg does when its first allocation fails. */
		cinfo->err->msg_code = JERR_OUT_OF_MEMORY;
		cinfo->err->error_exit((j_common_ptr)cinfo);
	}
	real(cinfo, version, size);
}

/* ---- cases ---------------------------------------------------------------- */

static struct dlc_index *idx;

static void config(struct dlc_config *cfg, uint32_t threads)
{
	dlc_config_init(cfg);
	dlc_transform_default(&cfg->transform, DLC_TRANSFORM_EVAL);
	cfg->transform.out_w = cfg->transform.out_h = 16;
	cfg->transform.resize = 20;
	cfg->batch_size = 4;
	cfg->window = 8;
	cfg->queue_depth = 4;
	cfg->decode_threads = threads;
	cfg->backend = DLC_BACKEND_INPROCESS;
	cfg->log = t_log_capture;
	cfg->log_level = DLC_LOG_WARN;
}

/*
 * In a child under alarm: create a loader with the given failures armed
 * and, if it is created, run an epoch. Returns the create result (or
 * 1000 + the number of batches when an epoch ran to its end); a hang or
 * crash is a FAIL.
 */
static int run_child(uint32_t threads, int fail_thread, int fail_jpeg,
		     int jpeg_all, const char *want_log)
{
	int pipefd[2], status = 0, result = -9999;
	pid_t pid;

	if (pipe(pipefd))
		return -9999;
	pid = fork();
	if (pid == 0) {
		struct dlc_loader *l = NULL;
		struct dlc_batch *b;
		struct dlc_config cfg;
		int ret, nb = 0;

		close(pipefd[0]);
		alarm(20);
		config(&cfg, threads);
		create_calls = 0;
		create_fail_at = fail_thread;
		jpeg_calls = 0;
		jpeg_fail_at = fail_jpeg;
		jpeg_fail_all = jpeg_all;
		ret = dlc_loader_create(&cfg, idx, &l);
		if (!ret) {
			ret = dlc_loader_start_epoch(l, 0, 0);
			while (!ret && (ret = dlc_next_batch(l, &b)) == 0) {
				nb++;
				dlc_release_batch(l, b);
			}
			ret = ret == -ENODATA ? 1000 + nb : ret;
			dlc_loader_destroy(l);
		}
		if (want_log && !strstr(t_logbuf, want_log)) {
			printf("log lacks '%s':\n%s", want_log, t_logbuf);
			ret = -9998;
		}
		if (write(pipefd[1], &ret, sizeof(ret)) != sizeof(ret))
			_exit(2);
		_exit(0);
	}
	close(pipefd[1]);
	if (pid < 0 || read(pipefd[0], &result, sizeof(result)) != sizeof(result))
		result = -9999;
	close(pipefd[0]);
	if (pid > 0) {
		waitpid(pid, &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child %s %d (a hang ends by SIGALRM = 14)",
		      WIFSIGNALED(status) ? "killed by signal" : "exited",
		      WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	}
	return result;
}

static void test_thread_start(void)
{
	uint32_t nb = dlc_index_count(idx) / 4;

	/* Nothing failing: the whole epoch. */
	CHECK_EQ(run_child(2, 0, 0, 0, NULL), 1000 + (int)nb);
	/* pthread_create of the I/O thread, of the second decode thread. */
	CHECK_EQ(run_child(2, 1, 0, 0, "cannot start the I/O thread"), -EAGAIN);
	CHECK_EQ(run_child(2, 3, 0, 0, "cannot start decode thread 2 of 2"),
		 -EAGAIN);
}

static void test_decoder_create(void)
{
	/* No thread gets a decoder. */
	CHECK_EQ(run_child(1, 0, 0, 1, "cannot create its JPEG decoder"),
		 -ENOMEM);
	/* One of them does not (whichever asks first, then second). */
	CHECK_EQ(run_child(1, 0, 1, 0, "cannot create its JPEG decoder"),
		 -ENOMEM);
	CHECK_EQ(run_child(1, 0, 2, 0, "cannot create its JPEG decoder"),
		 -ENOMEM);
	CHECK_EQ(run_child(3, 0, 4, 0, "cannot create its JPEG decoder"),
		 -ENOMEM);
}

/*
 * The in-process cache's policy holds three epochs of positions: for
 * 2^28 samples (and the smallest count that once failed, 178956971),
 * the size must be computable. Only sizes: the memory is not taken.
 */
static void test_limits(void)
{
	uint32_t counts[] = { 178956970, 178956971, DLC_INDEX_MAX_SAMPLES };
	size_t i;

	for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		uint64_t w = 3ULL * counts[i];

		CHECK(w <= UINT32_MAX);
		CHECK(dlc_policy_mem_size(counts[i], (uint32_t)w) > 0,
		      "no policy for %u samples", counts[i]);
	}
	CHECK_EQ(DLC_POLICY_MAX_SAMPLES, DLC_INDEX_MAX_SAMPLES);
}

int main(void)
{
	char *dir = t_mkdtemp(NULL);

	if (!dir || t_make_dataset(dir, 2, 4) || dlc_index_build(dir, &idx)) {
		printf("FAIL: cannot make the data set\n");
		return 1;
	}
	T_RUN(test_thread_start);
	T_RUN(test_decoder_create);
	T_RUN(test_limits);
	dlc_index_free(idx);
	t_rmtree(dir);
	free(dir);
	return t_done("test_threads");
}
