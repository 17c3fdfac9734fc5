/* SPDX-License-Identifier: MIT */
/*
 * dlcachectl watch's view of the node's loaders (watchloaders.c): a
 * snapshot of their status files (libdlcache's status.h) and the lines
 * that show them, one per loader. Per loader, from left to right: its
 * pid; rank/world of its shard ("c": cluster mode); its cache (inproc or
 * kernel); images handed out a second; the share of the time its
 * consumer waited for a batch; decode threads busy on average; what its
 * controllers chose: its own decode threads, its guest threads on the
 * node group's CPUs, samples its I/O thread decoded a second (decode
 * behind), the read-ahead budget, reads in flight, the forms regime
 * (forms: decode bound, bytes: storage bound) and cluster reads sent to
 * storage instead of a straggling peer a second; how old its last
 * refresh is; and its data set. Rates are between the loader's own
 * refreshes (every 250 ms while it works): an idle loader shows none.
 */
#ifndef DLCACHECTL_WATCHLOADERS_H
#define DLCACHECTL_WATCHLOADERS_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

struct loader_snap {
	struct dlc_status_info *v;	/* by pid, then creation */
	size_t n, cap;
	uint64_t t_ns;			/* dlc_now_ns() of the snapshot */
};

/*
 * Every loader's status this process may read in @dir (NULL: the
 * library's), into @s (reused: its array grows). 0 or -errno.
 */
int loader_snap_take(const char *dir, struct loader_snap *s);
void loader_snap_free(struct loader_snap *s);

/* Line mode: the header, and a line per loader of @cur at @t seconds. */
void loader_print_header(void);
void loader_print_lines(const struct loader_snap *prev,
			const struct loader_snap *cur, double t);
/* The terminal view's section: a count, then a line per loader. */
void loader_print_screen(const struct loader_snap *prev,
			 const struct loader_snap *cur);

#endif
