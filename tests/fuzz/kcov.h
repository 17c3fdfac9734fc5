/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * KCOV helpers of the dlcache coverage-guided fuzzer (tests/fuzz/kcov_fuzz.c):
 * per-thread KCOV_TRACE_PC buffers, the address range of dlcache.ko's code,
 * and a set of PCs that lives in shared memory, so that forked processes
 * (other uids, children killed with SIGKILL) add to the same set.
 *
 * The set is an open-addressing hash table of u64 PCs inserted with
 * compare-and-swap: no lock, also across processes (MAP_SHARED). It never
 * shrinks; when it is full, new PCs are dropped (and counted).
 *
 * Header only: the QEMU harness builds each test from one source file.
 */
#ifndef DLC_FUZZ_KCOV_H
#define DLC_FUZZ_KCOV_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#ifndef KCOV_INIT_TRACE
#define KCOV_INIT_TRACE	_IOR('c', 1, unsigned long)
#define KCOV_ENABLE	_IO('c', 100)
#define KCOV_DISABLE	_IO('c', 101)
#endif
#define KCOV_PATH	"/sys/kernel/debug/kcov"
#define KCOV_TRACE_PC_MODE	0
/* Entries of a trace buffer (one u64 each; entry 0 is the count). */
#define KCOV_WORDS	(1UL << 16)

struct kcov {
	int fd;			/* -1: none */
	uint64_t *area;		/* KCOV_WORDS words, MAP_SHARED */
};

/* Opens and maps a trace buffer (not enabled yet). 0 or -errno. */
static inline int kcov_open(struct kcov *k)
{
	k->fd = open(KCOV_PATH, O_RDWR | O_CLOEXEC);
	k->area = NULL;
	if (k->fd < 0)
		return -errno;
	if (ioctl(k->fd, KCOV_INIT_TRACE, KCOV_WORDS) < 0)
		goto fail;
	k->area = mmap(NULL, KCOV_WORDS * sizeof(uint64_t), PROT_READ | PROT_WRITE,
		       MAP_SHARED, k->fd, 0);
	if (k->area == MAP_FAILED) {
		k->area = NULL;
		goto fail;
	}
	__atomic_store_n(&k->area[0], 0, __ATOMIC_RELAXED);
	return 0;
fail:
	{
		int e = -errno;

		close(k->fd);
		k->fd = -1;
		return e;
	}
}

/* Traces the calling thread into @k from now on. 0 or -errno. */
static inline int kcov_enable(struct kcov *k)
{
	if (k->fd < 0)
		return -EBADF;
	if (ioctl(k->fd, KCOV_ENABLE, KCOV_TRACE_PC_MODE) < 0)
		return -errno;
	__atomic_store_n(&k->area[0], 0, __ATOMIC_RELAXED);
	return 0;
}

static inline void kcov_close(struct kcov *k)
{
	if (k->area)
		munmap(k->area, KCOV_WORDS * sizeof(uint64_t));
	if (k->fd >= 0)
		close(k->fd);
	k->area = NULL;
	k->fd = -1;
}

/* ---- the PC set ------------------------------------------------------------ */

#define PCSET_SLOTS	(1U << 16)	/* dlcache.ko has a few thousand PCs */

struct pcset {
	uint64_t count;			/* distinct PCs held */
	uint64_t dropped;		/* not inserted: table full */
	uint64_t slot[PCSET_SLOTS];	/* 0: empty */
};

static inline uint32_t pcset_hash(uint64_t pc)
{
	pc ^= pc >> 33;
	pc *= 0xff51afd7ed558ccdULL;
	pc ^= pc >> 33;
	return (uint32_t)pc & (PCSET_SLOTS - 1);
}

/* Inserts @pc; true when it was not there yet. */
static inline bool pcset_add(struct pcset *s, uint64_t pc)
{
	uint32_t i = pcset_hash(pc), n;

	for (n = 0; n < PCSET_SLOTS / 2; n++, i = (i + 1) & (PCSET_SLOTS - 1)) {
		uint64_t cur = __atomic_load_n(&s->slot[i], __ATOMIC_RELAXED);

		if (cur == pc)
			return false;
		if (cur == 0) {
			uint64_t zero = 0;

			if (__atomic_compare_exchange_n(&s->slot[i], &zero, pc, false,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
				__atomic_add_fetch(&s->count, 1, __ATOMIC_RELAXED);
				return true;
			}
			if (zero == pc)
				return false;
		}
	}
	__atomic_add_fetch(&s->dropped, 1, __ATOMIC_RELAXED);
	return false;
}

static inline uint64_t pcset_count(const struct pcset *s)
{
	return __atomic_load_n(&s->count, __ATOMIC_RELAXED);
}

/* ---- dlcache.ko's code ---------------------------------------------------- */

struct kcov_range {
	uint64_t lo, hi;	/* [lo, hi): PCs as KCOV reports them */
	uint64_t shift;		/* KASLR offset: kallsyms address - KCOV PC */
	unsigned nsyms;
};

/*
 * The code of module @mod: from the lowest to past the highest text symbol
 * of /proc/kallsyms tagged [mod] (plus a page for the last function). KCOV
 * reports PCs minus the kernel's KASLR offset (canonicalize_ip), which is
 * _text - 0xffffffff81000000; the range is shifted the same way.
 * 0, or -errno (-ENOENT: no symbol, -EPERM: addresses hidden).
 */
static inline int kcov_module_range(const char *mod, struct kcov_range *r)
{
	char line[512], tag[80];
	uint64_t text = 0;
	FILE *f = fopen("/proc/kallsyms", "r");

	r->lo = UINT64_MAX;
	r->hi = 0;
	r->nsyms = 0;
	r->shift = 0;
	if (!f)
		return -errno;
	snprintf(tag, sizeof(tag), "[%s]", mod);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char type, name[256], m[80] = "";
		int n = sscanf(line, "%llx %c %255s %79s", &a, &type, name, m);

		if (n < 3)
			continue;
		if (n == 3 && !strcmp(name, "_text"))
			text = a;
		if (n < 4 || strcmp(m, tag) || (type != 't' && type != 'T'))
			continue;
		if (!a) {
			fclose(f);
			return -EPERM;
		}
		if (a < r->lo)
			r->lo = a;
		if (a > r->hi)
			r->hi = a;
		r->nsyms++;
	}
	fclose(f);
	if (!r->nsyms)
		return -ENOENT;
	r->hi += 4096;
	if (text && text != 0xffffffff81000000ULL) {
		uint64_t off = text - 0xffffffff81000000ULL;

		r->lo -= off;
		r->hi -= off;
		r->shift = off;
	}
	return 0;
}

/*
 * Moves the PCs that @k traced since the last call and that lie in @r into
 * @s, and restarts the buffer. Returns the PCs that were new to @s.
 */
static inline unsigned kcov_harvest(struct kcov *k, const struct kcov_range *r,
				    struct pcset *s)
{
	uint64_t n, i;
	unsigned added = 0;

	if (!k->area)
		return 0;
	n = __atomic_load_n(&k->area[0], __ATOMIC_ACQUIRE);
	if (n > KCOV_WORDS - 1)
		n = KCOV_WORDS - 1;
	for (i = 1; i <= n; i++) {
		uint64_t pc = __atomic_load_n(&k->area[i], __ATOMIC_RELAXED);

		if (pc >= r->lo && pc < r->hi && pcset_add(s, pc))
			added++;
	}
	__atomic_store_n(&k->area[0], 0, __ATOMIC_RELEASE);
	return added;
}

#endif /* DLC_FUZZ_KCOV_H */
