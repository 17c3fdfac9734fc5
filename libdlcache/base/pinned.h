/* SPDX-License-Identifier: MIT */
/*
 * Pinned batch memory (pinned.c): huge pages where the system gives
 * them, mlock()ed where it allows.
 * Internal to libdlcache; the public face is dlcache.h.
 */
#ifndef DLC_PINNED_H
#define DLC_PINNED_H

#include <stddef.h>

struct dlc_logger;

struct dlc_pinned {
	void *base;
	size_t bytes;		/* mapped length */
	int locked;		/* mlock succeeded */
	int huge;		/* 2: hugetlbfs pages, 1: THP advised, 0: none */
	int lock_err;		/* errno of a failed mlock, else 0 */
};

/*
 * Map @bytes (rounded to 2 MiB), try huge pages, try mlock; a failed mlock
 * is warned about through @log (NULL: quiet, the caller warns once for
 * many with dlc_pinned_warn()). -EINVAL for 0 bytes, -ENOMEM.
 */
int dlc_pinned_alloc(size_t bytes, const struct dlc_logger *log,
		     struct dlc_pinned *out);
/* The warning for @bytes left unpinned by mlock's errno @err. */
void dlc_pinned_warn(const struct dlc_logger *log, size_t bytes, int err);
/* munlock @p (it stays mapped): memory that need not be pinned any more. */
void dlc_pinned_unlock(struct dlc_pinned *p);
void dlc_pinned_free(struct dlc_pinned *p);

#endif
