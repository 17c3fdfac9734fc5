/* SPDX-License-Identifier: MIT */
/*
 * Shared by the host tests: assertions that count instead of abort,
 * scratch directories, and small real JPEG data sets.
 */
#ifndef DLC_TESTUTIL_H
#define DLC_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jpeglib.h>

extern int t_failures;

/* Count a failure and print it (the first 60 are printed). */
void t_fail(const char *file, int line, const char *cond, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * CHECK(cond) or CHECK(cond, "format", args...): counts, never aborts.
 * Without a message the format is "" and the condition is printed.
 */
#pragma GCC diagnostic ignored "-Wformat-zero-length"
#define CHECK(cond, ...)						\
	do {								\
		if (!(cond))						\
			t_fail(__FILE__, __LINE__, #cond, "" __VA_ARGS__); \
	} while (0)

/* Integer equality, printing both values. */
#define CHECK_EQ(a, b)							\
	do {								\
		long long a_ = (long long)(a), b_ = (long long)(b);	\
		if (a_ != b_)						\
			t_fail(__FILE__, __LINE__, #a " == " #b,	\
			       "%s: %lld != %lld", #a " == " #b, a_, b_); \
	} while (0)

/*
 * A splitmix64 stream for test data: reproducible from t_rng, which a
 * test may seed. Not the library's generator, on purpose.
 */
extern uint64_t t_rng;
uint64_t t_rand(void);
/* Uniform in [0, 1) with 53 bits. */
double t_rand_unit(void);

/* FNV-1a of @n bytes at @v, continuing @h (start from T_FNV_INIT). */
#define T_FNV_INIT	1469598103934665603ULL
uint64_t t_fnv(const void *v, size_t n, uint64_t h);
/* A batch's seq, pixels, labels and IDs, chained through @h. */
struct dlc_batch;
uint64_t t_fnv_batch(const struct dlc_batch *b, uint64_t h);
/* Sleep @ms milliseconds (a consumer's pace, not a stand-in for I/O). */
void t_sleep_ms(unsigned int ms);
/*
 * The calling thread's CPU time in seconds: what a decode cost, whatever
 * else the machine runs (wall time on a shared 2-core machine is not).
 */
double t_thread_cpu_s(void);
/*
 * Index text @v2 (format 2) as format 1, as an older libdlcache wrote it:
 * no crc field. Malloc'd; NULL when it is not a format 2 index.
 */
char *t_index_format1(const char *v2, size_t *out_len);

/*
 * Sub-checks: each is one counted result in `make check`. A test program
 * prints one line per sub-check, "ok NAME", "FAIL NAME" or
 * "skip NAME: why", and tests/run-checks.sh counts every line (prefixed
 * with the program's name), so a part that did not run is never counted
 * as passed.
 *
 * T_RUN(fn) runs fn() and reports it under fn's name: ok when no CHECK
 * failed during it, FAIL otherwise. t_report() does the same for a named
 * stretch of checks ended by the call (failures counted since the last
 * report).
 */
void t_report(const char *name);
#define T_RUN(fn, ...)							\
	do {								\
		t_report_begin();					\
		fn(__VA_ARGS__);					\
		t_report(#fn);						\
	} while (0)
/* The same under a given name, for a function run more than once. */
#define T_RUN_AS(name, fn, ...)						\
	do {								\
		t_report_begin();					\
		fn(__VA_ARGS__);					\
		t_report(name);						\
	} while (0)
/* Start a sub-check: failures from here on count against the next report. */
void t_report_begin(void);

/*
 * A sub-check that cannot run here, with the reason: "skip NAME: why".
 * t_skip() is for what a machine may truly lack (no AVX2, a file system
 * without O_DIRECT). t_skip_required() is for a comparison against an
 * independent reference whose dependencies `make deps` installs (Pillow,
 * torch, torchvision, djpeg): a skip locally, but a FAIL when the
 * environment has CI=true, where every dependency is installable.
 */
void t_skip(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void t_skip_required(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/*
 * Inside a T_RUN, a skip under the sub-check's own name stands for it: the
 * report then prints nothing more unless a CHECK failed (FAIL). A part
 * that can be skipped on its own is best its own sub-check.
 */

/*
 * Run @fn(@arg) in a child without privilege: as root the child drops to
 * uid/gid 65534 (nobody) first, so permission checks run as root too.
 * Files the child needs must be reachable by uid 65534. The child's
 * failures are added to t_failures; returns 0, 1 when the child failed,
 * or -errno when it could not run.
 */
int t_run_unprivileged(void (*fn)(void *), void *arg);

/* Whether CI=true (or CI=1) is set: required comparisons must run. */
int t_in_ci(void);

/*
 * A dlc_log_fn that appends each line (and a newline) to t_logbuf, from
 * any thread; t_log_clear() (or t_logbuf[0] = 0 between loaders) empties
 * it.
 */
extern char t_logbuf[1 << 16];
void t_log_capture(void *arg, int level, const char *msg);
void t_log_clear(void);

/* Print the verdict for test @name; returns the exit status. */
int t_done(const char *name);

/* A fresh directory under @base (NULL: $TMPDIR or /tmp); removed by t_rmtree. */
char *t_mkdtemp(const char *base);
void t_rmtree(const char *dir);

/* Write @len bytes to @path (creating parents); 0 or -errno. */
int t_write_file(const char *path, const void *data, size_t len);
/* Read a whole file into a malloc'd buffer; NULL on error. */
uint8_t *t_read_file(const char *path, size_t *len);
/* The largest |difference| of the @n bytes at @a and @b. */
int t_max_diff(const uint8_t *a, const uint8_t *b, size_t n);

/*
 * Encode a @w x @h JPEG with structured content (gradients and shapes
 * seeded by @seed) at @quality; @gray for one component. Returns a
 * malloc'd buffer and its length, or NULL.
 */
uint8_t *t_make_jpeg(uint32_t w, uint32_t h, uint32_t seed, int gray,
		     int quality, size_t *len);
/*
 * The same, written with libjpeg's scan script @scans (@nscans of them):
 * a progressive file when it says so, one whose coefficients are left
 * incomplete when its scans do not cover them all.
 */
uint8_t *t_make_jpeg_scans(uint32_t w, uint32_t h, uint32_t seed, int gray,
			   int quality, const jpeg_scan_info *scans,
			   int nscans, size_t *len);
/*
 * Encode the @w x @h RGB pixels @rgb (rows of 3 * @w bytes) at @quality,
 * with T_JPEG_* @flags: libjpeg's defaults (4:2:0, sequential) unless
 * they say otherwise. A malloc'd buffer and its length, or NULL.
 */
#define T_JPEG_PROGRESSIVE	0x1	/* jpeg_simple_progression() */
#define T_JPEG_444		0x2	/* no chroma subsampling */
uint8_t *t_encode_jpeg(const uint8_t *rgb, uint32_t w, uint32_t h,
		       int quality, unsigned int flags, size_t *len);

/*
 * An ImageFolder data set under @root: @classes classes of @per_class
 * JPEGs, sizes between 120 and 360 pixels a side. 0 or -errno.
 */
int t_make_dataset(const char *root, uint32_t classes, uint32_t per_class);

#endif
