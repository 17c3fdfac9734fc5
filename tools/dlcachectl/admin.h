/* SPDX-License-Identifier: MIT */
/*
 * dlcachectl's administration commands (stats, watch, datasets, capacity,
 * drop) talk to /dev/dlcache directly through the ioctls of
 * uapi/dlcache.h. These are the helpers they share: opening the device
 * with one clear line when that fails, a snapshot of every counter, data
 * set keys in the form `dlcachectl index` prints, and byte formatting.
 */
#ifndef DLCACHECTL_ADMIN_H
#define DLCACHECTL_ADMIN_H

#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>

/* The kernel ABI; the library's own dlcache.h comes first on the path. */
#include "../../uapi/dlcache.h"

/*
 * Open /dev/dlcache (DLCACHE_DEVICE overrides the path, as for the library).
 * Returns the fd, or -1 after printing one line ("dlcachectl @cmd: ...":
 * not found / permission denied / other) for an exit status of 1.
 */
int admin_open(const char *cmd);

/* Every counter at one moment: the global part and each data set. */
struct admin_snap {
	uint64_t capacity_bytes;
	uint64_t used_bytes;
	uint32_t ndatasets;		/* as the module counted them */
	uint32_t nsessions;		/* including our own */
	struct dlcache_counters global;
	uint32_t n;			/* entries in ds[] */
	struct dlcache_stats *ds;	/* STATS with F_DATASET | F_INDEX */
	uint64_t t_ns;			/* monotonic time of the snapshot */
};

/* STATS, then STATS F_DATASET|F_INDEX 0, 1, ... until -ENOENT. 0 or -errno. */
int admin_snap_take(int fd, struct admin_snap *s);
void admin_snap_free(struct admin_snap *s);
/*
 * The same data set as @d in @s: its key, owner and form (a key alone
 * names one per owner, and a form set shares its encoded set's), or NULL.
 */
const struct dlcache_stats *admin_snap_same(const struct admin_snap *s,
					    const struct dlcache_stats *d);
/* A data set with @key in @s, or NULL. */
const struct dlcache_stats *admin_snap_find(const struct admin_snap *s,
					    const __u64 key[2]);

/* 32 lowercase hex digits: key[0] then key[1], as `dlcachectl index`. */
void admin_key_str(const __u64 key[2], char out[33]);
/* Parse that form (32 hex digits, case-insensitive); 0 or -1. */
int admin_key_parse(const char *s, __u64 key[2]);

/* "512.0 MiB" style, into @buf. */
const char *admin_bytes(uint64_t bytes, char *buf, size_t len);

/* hits / (hits + misses) by count and by bytes; 0 when nothing was asked. */
double admin_hit_ratio(const struct dlcache_counters *c);
double admin_byte_hit_ratio(const struct dlcache_counters *c);

/* The counters as JSON members ("hits": N, ..., "byte_hit_ratio": R). */
void admin_json_counters(FILE *f, const struct dlcache_counters *c);

#endif
