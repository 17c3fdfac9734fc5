// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dlcache.h"
#include "nvme.h"

#include "cli.h"
#include "pack.h"

static void vsay(const char *cmd, const char *fmt, va_list ap)
{
	fprintf(stderr, "dlcachectl %s: ", cmd);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(cmd, fmt, ap);
	va_end(ap);
	return EXIT_USAGE;
}

int fail(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(cmd, fmt, ap);
	va_end(ap);
	return 1;
}

int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (parse_u64(s, min, max, &v))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end == 'i' || *end == 'B')
		end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int open_index_at(const char *path, const char *root, struct dlc_index **out)
{
	struct dlc_pack *p;
	struct stat st;
	char why[512];
	int ret;

	/* "nvme:ID" names a namespace, not a path (nvme.h). */
	if (strncmp(path, DLC_NVME_PREFIX, strlen(DLC_NVME_PREFIX)) &&
	    stat(path, &st))
		return -errno;
	if (strncmp(path, DLC_NVME_PREFIX, strlen(DLC_NVME_PREFIX)) &&
	    S_ISDIR(st.st_mode))
		return root ? -EINVAL : dlc_index_build(path, out);
	ret = dlc_index_load_at(path, root, out);
	/* dlc_index_load() has no words: a pack says what is wrong with it */
	if ((ret == -EBADMSG || ret == -EPROTO) && dlc_pack_sniff(path) == 1) {
		why[0] = '\0';
		if (dlc_pack_open(path, &p, why, sizeof(why)) == 0)
			dlc_pack_close(p);
		else if (why[0])
			fprintf(stderr, "dlcachectl: %s: %s\n", path, why);
	}
	return ret;
}

int open_index(const char *path, struct dlc_index **out)
{
	return open_index_at(path, NULL, out);
}

const char *index_error(int err)
{
	switch (err) {
	case -ENODATA:
		return "no samples: want class subdirectories holding images (the ImageFolder layout DIR/CLASS/IMAGE.jpg)";
	case -EBADMSG:
		return "not a valid dlcache index file";
	default:
		return strerror(-err);
	}
}

void held_log_fn(void *arg, int level, const char *msg)
{
	struct held_log *h = arg;

	pthread_mutex_lock(&h->lock);
	if (!h->hold) {
		dlc_log_stderr(NULL, level, msg);
	} else if (h->n < sizeof(h->msg) / sizeof(h->msg[0])) {
		h->level[h->n] = level;
		h->msg[h->n] = strdup(msg);
		if (h->msg[h->n])
			h->n++;
	}
	pthread_mutex_unlock(&h->lock);
}

void held_log_release(struct held_log *h, int print)
{
	unsigned int i;

	pthread_mutex_lock(&h->lock);
	for (i = 0; i < h->n; i++) {
		if (print)
			dlc_log_stderr(NULL, h->level[i], h->msg[i]);
		free(h->msg[i]);
	}
	h->n = 0;
	h->hold = 0;
	pthread_mutex_unlock(&h->lock);
}

/* Whole file into a malloc'd buffer; -errno. */
int read_whole_file(const char *path, uint8_t **out, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		close(fd);
		return err;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			free(buf);
			close(fd);
			return err;
		}
		got += (size_t)n;
	}
	close(fd);
	*out = buf;
	*len = got;
	return 0;
}

int write_ppm(const char *path, const uint8_t *rgb, uint32_t w,
		     uint32_t h)
{
	FILE *f = fopen(path, "wb");
	size_t bytes = (size_t)w * h * 3;
	int err = 0;

	if (!f)
		return -errno;
	if (fprintf(f, "P6\n%u %u\n255\n", w, h) < 0 ||
	    fwrite(rgb, 1, bytes, f) != bytes)
		err = -EIO;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

/* @s as a JSON string, quotes included. */
void json_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}
