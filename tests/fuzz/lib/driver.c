// SPDX-License-Identifier: MIT
/*
 * The fuzzing engine where clang's libFuzzer is missing: the same
 * harnesses (fuzz_*.c, LLVMFuzzerTestOneInput) driven by a small
 * coverage-guided mutator, built with gcc (fuzz.mk, FUZZ_LIB_ENGINE=driver).
 *
 * It takes libFuzzer's flags that the runs use, with their meaning:
 *   -max_total_time=S  fuzz S seconds (0: until a finding)
 *   -timeout=S         per input: a run longer is a finding (timeout)
 *   -rss_limit_mb=M    per input: a peak RSS above M MiB is a finding (oom)
 *   -malloc_limit_mb=M per input: the address space is capped at M MiB
 *                      (RLIMIT_AS; under ASan, whose shadow needs terabytes
 *                      of it, ASAN_OPTIONS=max_allocation_size_mb does
 *                      this, set by run.sh)
 *   -max_len=N         mutated inputs up to N bytes
 *   -seed=N            the random generator's seed (0: from the clock)
 *   -artifact_prefix=P where a finding's input is written (P + kind-hash)
 * then directories, the first of which takes every input that found new
 * coverage (the corpus; all are read at start), or files, each run once
 * in this process (reproduce a finding: exit 0 when it passes).
 *
 * Each input runs in a child forked from the initialized harness: a
 * crash, a timeout (SIGALRM, from alarm()) or an oversized peak RSS is
 * seen by the parent, which writes the input out and stops with exit 1.
 * (The child ends with _exit(): leaks are found by libFuzzer only.)
 * Coverage is gcc's -fsanitize-coverage=trace-pc: every instrumented
 * basic block calls __sanitizer_cov_trace_pc(), which marks its return
 * address, hashed, in a map shared with the parent; an input that marks
 * a slot no input marked before joins the corpus.
 *
 * The output lines are libFuzzer's, so run.sh reads either engine the
 * same: "#N INITED cov: C ...", "#N DONE cov: C ... corp: K/...",
 * "Done N runs in S second(s)".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define MAP_SLOTS	(1U << 16)

static uint8_t *cov;		/* shared with the child: this run's slots */
static uint8_t seen[MAP_SLOTS];	/* every slot any run marked */
static unsigned int covered;	/* slots in seen */

void __sanitizer_cov_trace_pc(void);
void __sanitizer_cov_trace_pc(void)
{
	uintptr_t pc = (uintptr_t)__builtin_return_address(0);

	if (cov)
		cov[(pc ^ (pc >> 16)) & (MAP_SLOTS - 1)] = 1;
}

struct unit {
	uint8_t *data;
	size_t len;
};

static struct unit *corpus;
static size_t ncorpus, corpus_cap, corpus_bytes;
static uint64_t rng;

static struct {
	unsigned int max_total_time, timeout, rss_limit_mb, malloc_limit_mb;
	size_t max_len;
	uint64_t seed;
	const char *artifact_prefix;
} opt = { 0, 10, 2048, 0, 4096, 0, "./" };

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 14695981039346656037ULL;

	while (n--)
		h = (h ^ *p++) * 1099511628211ULL;
	return h;
}

static void write_unit(const char *path, const uint8_t *d, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (!f || (n && fwrite(d, 1, n, f) != n) || fclose(f))
		fprintf(stderr, "driver: cannot write %s: %s\n", path,
			strerror(errno));
}

static void add_unit(const uint8_t *d, size_t n)
{
	if (ncorpus == corpus_cap) {
		corpus_cap = corpus_cap ? 2 * corpus_cap : 64;
		corpus = realloc(corpus, corpus_cap * sizeof(*corpus));
		if (!corpus)
			abort();
	}
	corpus[ncorpus].data = malloc(n ? n : 1);
	if (!corpus[ncorpus].data)
		abort();
	memcpy(corpus[ncorpus].data, d, n);
	corpus[ncorpus].len = n;
	corpus_bytes += n;
	ncorpus++;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

enum verdict { PASS, CRASH, TIMEOUT, OOM };

/* Run one input in a child; PASS or the kind of finding. */
static enum verdict run_child(const uint8_t *d, size_t n)
{
	struct rusage ru;
	int status;
	pid_t pid;

	memset(cov, 0, MAP_SLOTS);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("driver: fork");
		exit(2);
	}
	if (!pid) {
		struct rlimit rl = { 0, 0 };

		setrlimit(RLIMIT_CORE, &rl);
#ifndef __SANITIZE_ADDRESS__
		if (opt.malloc_limit_mb) {
			rl.rlim_cur = rl.rlim_max =
				(rlim_t)opt.malloc_limit_mb << 20;
			setrlimit(RLIMIT_AS, &rl);
		}
#endif
		signal(SIGALRM, SIG_DFL);
		alarm(opt.timeout);
		LLVMFuzzerTestOneInput(d, n);
		_exit(0);
	}
	while (wait4(pid, &status, 0, &ru) < 0)
		if (errno != EINTR) {
			perror("driver: wait4");
			exit(2);
		}
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
		return TIMEOUT;
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return CRASH;
	if (opt.rss_limit_mb && (uint64_t)ru.ru_maxrss > (uint64_t)opt.rss_limit_mb << 10)
		return OOM;
	return PASS;
}

/* Fold this run's slots into seen: how many were new. */
static unsigned int merge_coverage(void)
{
	unsigned int i, fresh = 0;

	for (i = 0; i < MAP_SLOTS; i++)
		if (cov[i] && !seen[i]) {
			seen[i] = 1;
			fresh++;
		}
	covered += fresh;
	return fresh;
}

static void finding(enum verdict v, const uint8_t *d, size_t n)
{
	static const char *const kind[] = { "", "crash", "timeout", "oom" };
	char path[4096];

	snprintf(path, sizeof(path), "%s%s-%016llx", opt.artifact_prefix,
		 kind[v], (unsigned long long)fnv(d, n));
	write_unit(path, d, n);
	printf("==driver== ERROR: %s (per-input limits: %u s, %u MiB)\n"
	       "artifact_prefix='%s'; Test unit written to %s\n", kind[v],
	       opt.timeout, opt.rss_limit_mb, opt.artifact_prefix, path);
	fflush(stdout);
	exit(1);
}

static size_t mutate(uint8_t *b, size_t n, size_t cap)
{
	static const uint8_t interesting[] = { 0, 1, 0x7f, 0x80, 0xff, 0xfe,
					       0x10, 0x40 };
	unsigned int k, steps = 1 + rnd() % 8;

	for (k = 0; k < steps; k++) {
		size_t at = n ? rnd() % n : 0, len;

		switch (rnd() % 8) {
		case 0:		/* flip a bit */
			if (n)
				b[at] ^= (uint8_t)(1u << (rnd() % 8));
			break;
		case 1:		/* a random byte */
			if (n)
				b[at] = (uint8_t)rnd();
			break;
		case 2:		/* an interesting byte */
			if (n)
				b[at] = interesting[rnd() % sizeof(interesting)];
			break;
		case 3:		/* insert random bytes */
			len = 1 + rnd() % 16;
			if (n + len > cap)
				break;
			memmove(b + at + len, b + at, n - at);
			for (size_t i = 0; i < len; i++)
				b[at + i] = (uint8_t)rnd();
			n += len;
			break;
		case 4:		/* delete a range */
			if (!n)
				break;
			len = 1 + rnd() % (n - at < 64 ? n - at : 64);
			memmove(b + at, b + at + len, n - at - len);
			n -= len;
			break;
		case 5:		/* truncate */
			n = at;
			break;
		case 6:		/* a 32-bit little-endian value +- small */
			if (n >= 4 && at <= n - 4) {
				uint32_t v;

				memcpy(&v, b + at, 4);
				v += (uint32_t)(rnd() % 33) - 16;
				memcpy(b + at, &v, 4);
			}
			break;
		default:	/* splice in another unit's bytes */
			if (ncorpus) {
				const struct unit *u = &corpus[rnd() % ncorpus];
				size_t from = u->len ? rnd() % u->len : 0;

				len = u->len - from;
				if (len > 256)
					len = 1 + rnd() % 256;
				if (at + len > cap)
					len = cap - at;
				memcpy(b + at, u->data + from, len);
				if (at + len > n)
					n = at + len;
			}
			break;
		}
	}
	return n;
}

static int load_dir(const char *dir)
{
	struct dirent **names;
	char path[4096];
	int i, count = scandir(dir, &names, NULL, alphasort);

	if (count < 0)
		return -1;
	for (i = 0; i < count; i++) {
		struct stat sb;
		uint8_t *buf;
		FILE *f;
		size_t n;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		free(names[i]);
		if (stat(path, &sb) || !S_ISREG(sb.st_mode))
			continue;
		n = (size_t)sb.st_size;
		buf = malloc(n ? n : 1);
		f = fopen(path, "rb");
		if (buf && f && fread(buf, 1, n, f) == n)
			add_unit(buf, n);
		if (f)
			fclose(f);
		free(buf);
	}
	free(names);
	return 0;
}

/* Run @path once, in this process, as libFuzzer does a file argument. */
static int reproduce(const char *path)
{
	struct stat sb;
	uint8_t *buf;
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f || fstat(fileno(f), &sb)) {
		perror(path);
		return 2;
	}
	n = (size_t)sb.st_size;
	buf = malloc(n ? n : 1);
	if (!buf || fread(buf, 1, n, f) != n)
		return 2;
	fclose(f);
	printf("Running: %s\n", path);
	fflush(stdout);
	alarm(opt.timeout);
	LLVMFuzzerTestOneInput(buf, n);
	printf("Executed %s in this process: passed\n", path);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	const char *corpus_dir = NULL;
	unsigned long long runs = 0, new_units = 0;
	uint8_t *buf;
	double start, last_print;
	int i, files = 0;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		unsigned long long v;
		char name[32];

		if (a[0] == '-' && sscanf(a, "-%31[a-z_]=%llu", name, &v) == 2) {
			if (!strcmp(name, "max_total_time"))
				opt.max_total_time = (unsigned int)v;
			else if (!strcmp(name, "timeout"))
				opt.timeout = (unsigned int)v;
			else if (!strcmp(name, "rss_limit_mb"))
				opt.rss_limit_mb = (unsigned int)v;
			else if (!strcmp(name, "malloc_limit_mb"))
				opt.malloc_limit_mb = (unsigned int)v;
			else if (!strcmp(name, "max_len"))
				opt.max_len = (size_t)v;
			else if (!strcmp(name, "seed"))
				opt.seed = v;
			/* other libFuzzer flags: accepted, ignored */
		} else if (!strncmp(a, "-artifact_prefix=", 17)) {
			opt.artifact_prefix = a + 17;
		} else if (a[0] != '-') {
			struct stat sb;

			if (!stat(a, &sb) && S_ISREG(sb.st_mode))
				files++;
		}
	}
	LLVMFuzzerInitialize(&argc, &argv);
	if (files) {
		for (i = 1; i < argc; i++)
			if (argv[i][0] != '-' && reproduce(argv[i]))
				return 2;
		return 0;
	}
	cov = mmap(NULL, MAP_SLOTS, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (cov == MAP_FAILED) {
		perror("driver: mmap");
		return 2;
	}
	rng = opt.seed ? opt.seed : (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
	rng |= 1;
	printf("INFO: Seed: %llu (the built-in mutator, driver.c)\n",
	       (unsigned long long)rng);
	for (i = 1; i < argc; i++) {
		if (argv[i][0] == '-')
			continue;
		if (!corpus_dir) {
			corpus_dir = argv[i];
			mkdir(corpus_dir, 0755);
		}
		load_dir(argv[i]);
	}
	if (!ncorpus)
		add_unit((const uint8_t *)"", 0);
	/* The seeds first: each is run, and all are kept. */
	for (size_t u = 0; u < ncorpus; u++) {
		enum verdict v = run_child(corpus[u].data, corpus[u].len);

		runs++;
		if (v != PASS)
			finding(v, corpus[u].data, corpus[u].len);
		merge_coverage();
		if (corpus[u].len > opt.max_len)
			opt.max_len = corpus[u].len;
	}
	printf("#%llu\tINITED cov: %u ft: %u corp: %zu/%zub\n", runs, covered,
	       covered, ncorpus, corpus_bytes);
	buf = malloc(opt.max_len);
	if (!buf)
		return 2;
	start = last_print = now();
	while (!opt.max_total_time || now() - start < opt.max_total_time) {
		const struct unit *u = &corpus[rnd() % ncorpus];
		size_t n = u->len < opt.max_len ? u->len : opt.max_len;
		enum verdict v;

		memcpy(buf, u->data, n);
		n = mutate(buf, n, opt.max_len);
		v = run_child(buf, n);
		runs++;
		if (v != PASS)
			finding(v, buf, n);
		if (merge_coverage()) {
			char path[4096];

			add_unit(buf, n);
			new_units++;
			if (corpus_dir) {
				snprintf(path, sizeof(path), "%s/%016llx",
					 corpus_dir,
					 (unsigned long long)fnv(buf, n));
				write_unit(path, buf, n);
			}
			printf("#%llu\tNEW    cov: %u ft: %u corp: %zu/%zub\n",
			       runs, covered, covered, ncorpus, corpus_bytes);
		}
		if (now() - last_print > 10) {
			last_print = now();
			printf("#%llu\tpulse  cov: %u ft: %u corp: %zu/%zub exec/s: %.0f\n",
			       runs, covered, covered, ncorpus, corpus_bytes,
			       runs / (last_print - start));
		}
	}
	printf("#%llu\tDONE   cov: %u ft: %u corp: %zu/%zub exec/s: %.0f\n",
	       runs, covered, covered, ncorpus, corpus_bytes,
	       runs / (now() - start + 1e-9));
	printf("Done %llu runs in %.0f second(s); %llu new units\n", runs,
	       now() - start, new_units);
	free(buf);
	while (ncorpus)
		free(corpus[--ncorpus].data);
	free(corpus);
	return 0;
}
