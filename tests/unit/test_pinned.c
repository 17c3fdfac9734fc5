// SPDX-License-Identifier: MIT
/*
 * Pinned batch memory: 2 MiB aligned, mlock'd when allowed, and when
 * RLIMIT_MEMLOCK forbids it, one clear warning and unpinned memory that
 * still works.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "internal.h"
#include "helpers/testutil.h"

static char logbuf[4096];

static void capture(void *arg, int level, const char *msg)
{
	(void)arg;
	if (level == DLC_LOG_WARN && strlen(logbuf) + strlen(msg) + 2 < sizeof(logbuf)) {
		strcat(logbuf, msg);
		strcat(logbuf, "\n");
	}
}

static void check_usable(struct dlc_pinned *p, size_t want)
{
	CHECK(p->base && ((uintptr_t)p->base & ((2UL << 20) - 1)) == 0,
	      "base %p is not 2 MiB aligned", p->base);
	CHECK(p->bytes >= want && p->bytes % (2UL << 20) == 0, "length %zu", p->bytes);
	memset(p->base, 0xa5, p->bytes);
	CHECK(((uint8_t *)p->base)[p->bytes - 1] == 0xa5, "memory writable");
}

static void alloc_and_free(void)
{
	struct dlc_logger lg = { capture, NULL, DLC_LOG_INFO };
	struct dlc_pinned p;

	CHECK(dlc_pinned_alloc(0, &lg, &p) < 0, "zero bytes refused");
	CHECK(dlc_pinned_alloc(5 << 20, &lg, &p) == 0, "alloc");
	check_usable(&p, 5 << 20);
	if (getuid() == 0)
		CHECK(p.locked, "root could not pin: %s", logbuf);
	dlc_pinned_free(&p);
}

/* A small RLIMIT_MEMLOCK and no privilege: a warning, unpinned. */
static void limited(void *arg)
{
	struct dlc_logger lg = { capture, NULL, DLC_LOG_INFO };
	struct rlimit rl = { 64 << 10, 64 << 10 };
	struct dlc_pinned p;

	(void)arg;
	logbuf[0] = 0;
	CHECK(!setrlimit(RLIMIT_MEMLOCK, &rl), "setrlimit");
	CHECK(dlc_pinned_alloc(8 << 20, &lg, &p) == 0, "alloc under the limit");
	check_usable(&p, 8 << 20);
	CHECK(!p.locked, "pinned despite RLIMIT_MEMLOCK");
	CHECK(strstr(logbuf, "RLIMIT_MEMLOCK (64 KiB) prevents pinning 8 MiB") &&
	      strstr(logbuf, "continuing unpinned"),
	      "warning says why: '%s'", logbuf);
	CHECK(strchr(logbuf, '\n') == strrchr(logbuf, '\n'), "one warning line");
	dlc_pinned_free(&p);
}

static void unprivileged_limit(void)
{
#ifdef __SANITIZE_ADDRESS__
	/* ASan intercepts mlock() and reports success without locking. */
	t_skip("unprivileged_limit", "mlock is a no-op under ASan (the release build runs it)");
	return;
#endif
	t_run_unprivileged(limited, NULL);
}

int main(void)
{
	T_RUN(alloc_and_free);
	T_RUN(unprivileged_limit);
	return t_done("test_pinned");
}
