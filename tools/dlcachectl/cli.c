// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "dlcache.h"

#include "cli.h"

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
	struct stat st;

	if (stat(path, &st))
		return -errno;
	if (S_ISDIR(st.st_mode))
		return root ? -EINVAL : dlc_index_build(path, out);
	return dlc_index_load_at(path, root, out);
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

void setup_transform(struct dlc_config *cfg, int eval, uint32_t size)
{
	if (eval) {
		dlc_transform_default(&cfg->transform, DLC_TRANSFORM_EVAL);
		cfg->shuffle = 0;
	}
	cfg->transform.out_w = cfg->transform.out_h = size;
	if (eval && cfg->transform.resize < size)
		cfg->transform.resize = size * 8 / 7;
}

int parse_on_error(const char *s, uint32_t *out)
{
	static const char *const names[] = { "skip", "substitute", "fail" };
	uint32_t i;

	for (i = 0; i < 3; i++)
		if (!strcmp(s, names[i])) {
			*out = i;
			return 0;
		}
	return -1;
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
