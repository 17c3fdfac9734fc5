// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <jpeglib.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dlcache.h"
#include "testutil.h"

int t_failures;
uint64_t t_rng = 12345;

uint64_t t_rand(void)
{
	uint64_t z = (t_rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

double t_rand_unit(void)
{
	return (double)(t_rand() >> 11) * 0x1.0p-53;
}

uint64_t t_fnv(const void *v, size_t n, uint64_t h)
{
	const uint8_t *p = v;

	while (n--)
		h = (h ^ *p++) * 1099511628211ULL;
	return h;
}

uint64_t t_fnv_batch(const struct dlc_batch *b, uint64_t h)
{
	h = t_fnv(&b->seq, sizeof(b->seq), h);
	h = t_fnv(b->data, (size_t)b->count * 3 * b->out_w * b->out_h, h);
	h = t_fnv(b->labels, b->count * sizeof(*b->labels), h);
	return t_fnv(b->ids, b->count * sizeof(*b->ids), h);
}

void t_sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

double t_thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void t_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	va_list ap;

	if (++t_failures > 60)
		return;
	printf("FAIL: %s:%d: ", file, line);
	if (*fmt) {
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	} else {
		printf("%s", cond);
	}
	printf("\n");
	fflush(stdout);
}

static int t_report_mark, t_report_skipped;

void t_report_begin(void)
{
	t_report_mark = t_failures;
	t_report_skipped = 0;
}

void t_report(const char *name)
{
	/* A sub-check that said "skip NAME" and failed nothing is done. */
	if (!t_report_skipped || t_failures > t_report_mark)
		printf("%s %s\n", t_failures > t_report_mark ? "FAIL" : "ok",
		       name);
	fflush(stdout);
	t_report_mark = t_failures;
	t_report_skipped = 0;
}

int t_run_unprivileged(void (*fn)(void *), void *arg)
{
	int status, before = t_failures;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (geteuid() == 0 &&
		    (setgroups(0, NULL) || setgid(65534) || setuid(65534))) {
			printf("FAIL: cannot drop to uid 65534: %s\n",
			       strerror(errno));
			fflush(stdout);
			_exit(1);
		}
		fn(arg);
		fflush(stdout);
		_exit(t_failures > before ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		if (!WIFEXITED(status))
			printf("FAIL: unprivileged child died (status %d)\n",
			       status);
		t_failures++;
		return 1;
	}
	return 0;
}

int t_in_ci(void)
{
	const char *ci = getenv("CI");

	return ci && (!strcmp(ci, "true") || !strcmp(ci, "1"));
}

static void t_skip_v(const char *name, int required, const char *fmt,
		     va_list ap)
{
	int fail = required && t_in_ci();

	printf("%s %s: ", fail ? "FAIL" : "skip", name);
	vprintf(fmt, ap);
	if (fail)
		printf(" (a required comparison; CI=true)");
	printf("\n");
	fflush(stdout);
	/* The FAIL line is printed: the report need not count it again. */
	if (fail) {
		t_failures++;
		t_report_mark++;
	}
	t_report_skipped = 1;
}

void t_skip(const char *name, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	t_skip_v(name, 0, fmt, ap);
	va_end(ap);
}

void t_skip_required(const char *name, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	t_skip_v(name, 1, fmt, ap);
	va_end(ap);
}

int t_done(const char *name)
{
	if (t_failures) {
		printf("%s: %d failures\n", name, t_failures);
		return 1;
	}
	printf("%s: ok\n", name);
	return 0;
}

char *t_mkdtemp(const char *base)
{
	const char *tmp = base ? base : getenv("TMPDIR");
	char *dir;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	if (asprintf(&dir, "%s/dlctest.XXXXXX", tmp) < 0)
		return NULL;
	if (!mkdtemp(dir)) {
		free(dir);
		return NULL;
	}
	return dir;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path);
	return unlink(path);
}

void t_rmtree(const char *dir)
{
	if (dir)
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int mkparents(const char *path)
{
	char buf[4096], *p;

	snprintf(buf, sizeof(buf), "%s", path);
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

int t_write_file(const char *path, const void *data, size_t len)
{
	int fd, ret = mkparents(path);
	ssize_t n;

	if (ret)
		return ret;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -errno;
	n = len ? write(fd, data, len) : 0;
	ret = (n < 0 || (size_t)n != len) ? -EIO : 0;
	close(fd);
	return ret;
}

uint8_t *t_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long sz;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	sz = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(sz > 0 ? (size_t)sz : 1);
	if (buf && sz > 0 && fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf)
		*len = (size_t)sz;
	return buf;
}

uint8_t *t_make_jpeg(uint32_t w, uint32_t h, uint32_t seed, int gray,
		     int quality, size_t *len)
{
	return t_make_jpeg_scans(w, h, seed, gray, quality, NULL, 0, len);
}

uint8_t *t_make_jpeg_scans(uint32_t w, uint32_t h, uint32_t seed, int gray,
			   int quality, const jpeg_scan_info *scans,
			   int nscans, size_t *len)
{
	struct jpeg_compress_struct c;
	struct jpeg_error_mgr jerr;
	unsigned char *out = NULL;
	unsigned long outlen = 0;
	int comps = gray ? 1 : 3;
	uint8_t *row = malloc((size_t)w * comps);
	uint32_t x, y, cx = seed * 37 % w, cy = seed * 53 % h, r = 10 + seed % 40;

	if (!row)
		return NULL;
	c.err = jpeg_std_error(&jerr);
	jpeg_create_compress(&c);
	jpeg_mem_dest(&c, &out, &outlen);
	c.image_width = w;
	c.image_height = h;
	c.input_components = comps;
	c.in_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;
	jpeg_set_defaults(&c);
	jpeg_set_quality(&c, quality, TRUE);
	if (scans) {
		c.scan_info = scans;
		c.num_scans = nscans;
	}
	jpeg_start_compress(&c, TRUE);
	for (y = 0; y < h; y++) {
		for (x = 0; x < w; x++) {
			uint32_t dx = x > cx ? x - cx : cx - x;
			uint32_t dy = y > cy ? y - cy : cy - y;
			int in = dx * dx + dy * dy < r * r;
			uint8_t v[3] = {
				(uint8_t)(x * 255 / w),
				(uint8_t)(y * 255 / h),
				(uint8_t)((x ^ y ^ seed) & 0xff),
			};
			int k;

			if (in)
				v[0] = 255 - v[0], v[2] = (uint8_t)(seed * 29);
			for (k = 0; k < comps; k++)
				row[x * comps + k] = v[k];
		}
		JSAMPROW rp = row;

		jpeg_write_scanlines(&c, &rp, 1);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	free(row);
	*len = outlen;
	return out;
}

uint8_t *t_encode_jpeg(const uint8_t *rgb, uint32_t w, uint32_t h,
		       int quality, unsigned int flags, size_t *len)
{
	struct jpeg_compress_struct c;
	struct jpeg_error_mgr jerr;
	unsigned char *out = NULL;
	unsigned long outlen = 0;
	int k;

	c.err = jpeg_std_error(&jerr);
	jpeg_create_compress(&c);
	jpeg_mem_dest(&c, &out, &outlen);
	c.image_width = w;
	c.image_height = h;
	c.input_components = 3;
	c.in_color_space = JCS_RGB;
	jpeg_set_defaults(&c);
	jpeg_set_quality(&c, quality, TRUE);
	if (flags & T_JPEG_444)
		for (k = 0; k < 3; k++)
			c.comp_info[k].h_samp_factor =
				c.comp_info[k].v_samp_factor = 1;
	if (flags & T_JPEG_PROGRESSIVE)
		jpeg_simple_progression(&c);
	jpeg_start_compress(&c, TRUE);
	while (c.next_scanline < h) {
		JSAMPROW rp = (JSAMPROW)(rgb + (size_t)c.next_scanline * w * 3);

		jpeg_write_scanlines(&c, &rp, 1);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	*len = outlen;
	return out;
}

int t_make_dataset(const char *root, uint32_t classes, uint32_t per_class)
{
	uint32_t c, i;
	char path[4096];

	for (c = 0; c < classes; c++)
		for (i = 0; i < per_class; i++) {
			uint32_t seed = c * 1000 + i + 1;
			size_t len;
			uint8_t *j = t_make_jpeg(120 + seed * 7 % 240,
						 120 + seed * 13 % 240, seed,
						 0, 85, &len);
			int ret;

			if (!j)
				return -ENOMEM;
			snprintf(path, sizeof(path), "%s/class%02u/img%04u.jpg",
				 root, c, i);
			ret = t_write_file(path, j, len);
			free(j);
			if (ret)
				return ret;
		}
	return 0;
}

char t_logbuf[1 << 16];
static pthread_mutex_t t_log_lock = PTHREAD_MUTEX_INITIALIZER;

/* Appends at the string's end, so t_logbuf[0] = 0 clears it too. */
void t_log_capture(void *arg, int level, const char *msg)
{
	size_t len;

	(void)arg;
	(void)level;
	pthread_mutex_lock(&t_log_lock);
	len = strlen(t_logbuf);
	snprintf(t_logbuf + len, sizeof(t_logbuf) - len, "%s\n", msg);
	pthread_mutex_unlock(&t_log_lock);
}

void t_log_clear(void)
{
	pthread_mutex_lock(&t_log_lock);
	t_logbuf[0] = '\0';
	pthread_mutex_unlock(&t_log_lock);
}

/*
 * The same index in format 1, as an older libdlcache wrote it: the magic
 * of version 1 and no crc field in the sample lines (those start with a
 * digit). Malloc'd, NUL-terminated; *@out_len set (when not NULL).
 * NULL when @v2 is no format 2 index, or on a malformed sample line.
 */
char *t_index_format1(const char *v2, size_t *out_len)
{
	char *r = malloc(strlen(v2) + 1), *w = r;
	const char *p = v2;

	if (!r)
		return NULL;
	if (strncmp(p, "dlcache-index 2\n", 16)) {
		free(r);
		return NULL;
	}
	memcpy(w, "dlcache-index 1\n", 16);
	w += 16;
	p += 16;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);

		if (*p >= '0' && *p <= '9') {
			/* "label size crc path": drop "crc " */
			const char *sp1 = strchr(p, ' ');
			const char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
			const char *sp3 = sp2 ? strchr(sp2 + 1, ' ') : NULL;

			if (!sp3) {
				free(r);
				return NULL;
			}
			memcpy(w, p, (size_t)(sp2 - p) + 1);
			w += sp2 - p + 1;
			memcpy(w, sp3 + 1, n - (size_t)(sp3 + 1 - p));
			w += n - (size_t)(sp3 + 1 - p);
		} else {
			memcpy(w, p, n);
			w += n;
		}
		p += n;
	}
	*w = '\0';
	if (out_len)
		*out_len = (size_t)(w - r);
	return r;
}

int t_max_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
	int m = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		int d = abs((int)a[i] - (int)b[i]);

		if (d > m)
			m = d;
	}
	return m;
}
