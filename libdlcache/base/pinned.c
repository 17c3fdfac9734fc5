// SPDX-License-Identifier: MIT
/*
 * Pinned batch memory: one mapping for each slot of the batch ring, 2 MiB
 * aligned so that it can sit on huge pages, and mlock'd so that a GPU
 * copy engine (cudaHostRegister) or DMA never waits on a page fault.
 * Pinning is best effort: RLIMIT_MEMLOCK often forbids it for ordinary
 * users, and then the loader says so once and runs unpinned.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "internal.h"

#define HUGE_2M (2UL << 20)

int dlc_pinned_alloc(size_t bytes, const struct dlc_logger *log,
		     struct dlc_pinned *out)
{
	size_t len = (bytes + HUGE_2M - 1) & ~(HUGE_2M - 1);
	uint8_t *raw, *base;

	memset(out, 0, sizeof(*out));
	if (!bytes)
		return -EINVAL;

	/* Reserved huge pages first: they are pinned by nature. */
	raw = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (raw != MAP_FAILED) {
		out->base = raw;
		out->bytes = len;
		out->huge = 2;
	} else {
		/* Over-map to carve out a 2 MiB aligned range for THP. */
		raw = mmap(NULL, len + HUGE_2M, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (raw == MAP_FAILED)
			return -ENOMEM;
		base = (uint8_t *)(((uintptr_t)raw + HUGE_2M - 1) &
				   ~(uintptr_t)(HUGE_2M - 1));
		if (base > raw)
			munmap(raw, (size_t)(base - raw));
		if (base + len < raw + len + HUGE_2M)
			munmap(base + len, (size_t)(raw + len + HUGE_2M -
						    (base + len)));
		out->base = base;
		out->bytes = len;
		out->huge = madvise(base, len, MADV_HUGEPAGE) == 0;
	}

	if (mlock(out->base, out->bytes) == 0) {
		out->locked = 1;
	} else {
		out->lock_err = errno;
		dlc_pinned_warn(log, out->bytes, out->lock_err);
	}
	return 0;
}

void dlc_pinned_warn(const struct dlc_logger *log, size_t bytes, int err)
{
	struct rlimit rl;

	if (!log)
		return;
	getrlimit(RLIMIT_MEMLOCK, &rl);
	if (rl.rlim_cur == RLIM_INFINITY)
		dlc_logf(log, DLC_LOG_WARN,
			 "cannot pin %zu MiB of batch buffers (%s); continuing unpinned",
			 bytes >> 20, strerror(err));
	else
		dlc_logf(log, DLC_LOG_WARN,
			 "RLIMIT_MEMLOCK (%llu KiB) prevents pinning %zu MiB of batch buffers (%s); continuing unpinned (raise it with 'ulimit -l' or grant CAP_IPC_LOCK)",
			 (unsigned long long)rl.rlim_cur >> 10, bytes >> 20,
			 strerror(err));
}

void dlc_pinned_unlock(struct dlc_pinned *p)
{
	if (p->locked)
		munlock(p->base, p->bytes);
	p->locked = 0;
}

void dlc_pinned_free(struct dlc_pinned *p)
{
	if (p->base)
		munmap(p->base, p->bytes);
	p->base = NULL;
}
