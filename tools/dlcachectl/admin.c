// SPDX-License-Identifier: MIT
/*
 * Helpers of the administration commands: the device, counter snapshots,
 * keys and byte formatting (see admin.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "cli.h"

_Static_assert(sizeof(struct dlcache_stats) == 504, "dlcache_stats layout");
_Static_assert(sizeof(struct dlcache_counters) == 192, "dlcache_counters layout");
_Static_assert(sizeof(struct dlcache_capacity) == 40, "dlcache_capacity layout");
_Static_assert(sizeof(struct dlcache_drop) == 48, "dlcache_drop layout");
_Static_assert(sizeof(struct dlcache_info) == 96, "dlcache_info layout");

static const char *device_path(void)
{
	const char *p = getenv("DLCACHE_DEVICE");

	return p && *p ? p : DLCACHE_DEVICE;
}

int admin_open(const char *cmd)
{
	const char *path = device_path();
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd >= 0)
		return fd;
	switch (errno) {
	case ENOENT:
	case ENXIO:
	case ENODEV:
		fail(cmd, "%s not found: is dlcache.ko loaded? (modprobe/insmod dlcache)", path);
		break;
	case EACCES:
	case EPERM:
		fail(cmd, "permission denied opening %s: it is mode 0660 root:root unless a udev rule gives it a group (see Documentation/admin.md)",
		     path);
		break;
	default:
		fail(cmd, "cannot open %s: %s", path, strerror(errno));
		break;
	}
	return -1;
}

int admin_snap_take(int fd, struct admin_snap *s)
{
	struct dlcache_stats st;
	uint32_t cap = 0, i;
	struct timespec ts;

	memset(s, 0, sizeof(*s));
	memset(&st, 0, sizeof(st));
	if (ioctl(fd, DLCACHE_IOC_STATS, &st))
		return -errno;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	s->t_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	s->capacity_bytes = st.capacity_bytes;
	s->used_bytes = st.used_bytes;
	s->ndatasets = st.ndatasets;
	s->nsessions = st.nsessions;
	s->global = st.global;
	/*
	 * Data sets may come and go between the calls; the list is walked
	 * until the module says -ENOENT (at most a few more than max_datasets
	 * in case the list keeps changing under us).
	 */
	for (i = 0; i < 1024; i++) {
		memset(&st, 0, sizeof(st));
		st.handle = i;
		st.flags = DLCACHE_STATS_F_DATASET | DLCACHE_STATS_F_INDEX;
		if (ioctl(fd, DLCACHE_IOC_STATS, &st)) {
			if (errno == ENOENT)
				break;
			admin_snap_free(s);
			return -errno;
		}
		if (s->n == cap) {
			struct dlcache_stats *n;

			cap = cap ? 2 * cap : 16;
			n = realloc(s->ds, cap * sizeof(*n));
			if (!n) {
				admin_snap_free(s);
				return -ENOMEM;
			}
			s->ds = n;
		}
		s->ds[s->n++] = st;
	}
	return 0;
}

void admin_snap_free(struct admin_snap *s)
{
	free(s->ds);
	s->ds = NULL;
	s->n = 0;
}

const struct dlcache_stats *admin_snap_find(const struct admin_snap *s,
					    const __u64 key[2])
{
	uint32_t i;

	for (i = 0; i < s->n; i++)
		if (s->ds[i].ds_key[0] == key[0] && s->ds[i].ds_key[1] == key[1])
			return &s->ds[i];
	return NULL;
}

const struct dlcache_stats *admin_snap_same(const struct admin_snap *s,
					    const struct dlcache_stats *d)
{
	const uint32_t form = DLCACHE_DS_F_FORM | 0xffU << DLCACHE_DS_FORM_SHIFT;
	uint32_t i;

	for (i = 0; i < s->n; i++)
		if (s->ds[i].ds_key[0] == d->ds_key[0] &&
		    s->ds[i].ds_key[1] == d->ds_key[1] &&
		    s->ds[i].ds_owner_uid == d->ds_owner_uid &&
		    (s->ds[i].ds_flags & form) == (d->ds_flags & form))
			return &s->ds[i];
	return NULL;
}

void admin_key_str(const __u64 key[2], char out[33])
{
	snprintf(out, 33, "%016llx%016llx", (unsigned long long)key[0],
		 (unsigned long long)key[1]);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int admin_key_parse(const char *s, __u64 key[2])
{
	__u64 k[2] = { 0, 0 };
	int i, v;

	if (strlen(s) != 32)
		return -1;
	for (i = 0; i < 32; i++) {
		v = hexval(s[i]);
		if (v < 0)
			return -1;
		k[i / 16] = (k[i / 16] << 4) | (uint64_t)v;
	}
	key[0] = k[0];
	key[1] = k[1];
	return 0;
}

const char *admin_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	unsigned int u = 0;

	while (v >= 1024.0 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

double admin_hit_ratio(const struct dlcache_counters *c)
{
	uint64_t all = c->hits + c->misses;

	return all ? (double)c->hits / (double)all : 0.0;
}

double admin_byte_hit_ratio(const struct dlcache_counters *c)
{
	uint64_t all = c->hit_bytes + c->miss_bytes;

	return all ? (double)c->hit_bytes / (double)all : 0.0;
}

void admin_json_counters(FILE *f, const struct dlcache_counters *c)
{
	fprintf(f, "\"hits\": %llu, \"hit_bytes\": %llu, \"misses\": %llu, "
		"\"miss_bytes\": %llu, \"hit_ratio\": %.6f, \"byte_hit_ratio\": %.6f, "
		"\"inserts\": %llu, \"insert_bytes\": %llu, \"bypasses\": %llu, "
		"\"bypass_bytes\": %llu, \"evictions\": %llu, \"eviction_bytes\": %llu, "
		"\"shrinker_evictions\": %llu, \"waits\": %llu, \"aborts\": %llu, "
		"\"errors\": %llu, \"used_bytes\": %llu, \"cached_samples\": %llu, "
		"\"fills_inflight\": %llu",
		(unsigned long long)c->hits, (unsigned long long)c->hit_bytes,
		(unsigned long long)c->misses, (unsigned long long)c->miss_bytes,
		admin_hit_ratio(c), admin_byte_hit_ratio(c),
		(unsigned long long)c->inserts, (unsigned long long)c->insert_bytes,
		(unsigned long long)c->bypasses, (unsigned long long)c->bypass_bytes,
		(unsigned long long)c->evictions, (unsigned long long)c->eviction_bytes,
		(unsigned long long)c->shrinker_evictions,
		(unsigned long long)c->waits, (unsigned long long)c->aborts,
		(unsigned long long)c->errors, (unsigned long long)c->used_bytes,
		(unsigned long long)c->cached_samples,
		(unsigned long long)c->fills_inflight);
}
