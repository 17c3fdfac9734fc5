// SPDX-License-Identifier: MIT
/*
 * Pinned batch memory: 2 MiB aligned, mlock'd when allowed, and when
 * RLIMIT_MEMLOCK forbids it, one clear warning and unpinned memory that
 * still works.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
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

int main(void)
{
	struct dlc_logger lg = { capture, NULL, DLC_LOG_INFO };
	struct dlc_pinned p;
	pid_t pid;
	int status;

	CHECK(dlc_pinned_alloc(0, &lg, &p) < 0, "zero bytes refused");
	CHECK(dlc_pinned_alloc(5 << 20, &lg, &p) == 0, "alloc");
	check_usable(&p, 5 << 20);
	if (getuid() == 0)
		CHECK(p.locked, "root could not pin: %s", logbuf);
	dlc_pinned_free(&p);

#ifdef __SANITIZE_ADDRESS__
	/* ASan intercepts mlock() and reports success without locking. */
	printf("unprivileged part skipped: mlock is a no-op under ASan\n");
	return t_done("test_pinned");
#endif
	/* A small RLIMIT_MEMLOCK and no privilege: a warning, unpinned. */
	pid = fork();
	if (pid == 0) {
		struct rlimit rl = { 64 << 10, 64 << 10 };

		t_failures = 0;
		logbuf[0] = 0;
		setrlimit(RLIMIT_MEMLOCK, &rl);
		if (getuid() == 0 && (setgid(65534) || setuid(65534)))
			_exit(77);
		CHECK(dlc_pinned_alloc(8 << 20, &lg, &p) == 0, "alloc under the limit");
		check_usable(&p, 8 << 20);
		CHECK(!p.locked, "pinned despite RLIMIT_MEMLOCK");
		CHECK(strstr(logbuf, "RLIMIT_MEMLOCK (64 KiB) prevents pinning 8 MiB") &&
		      strstr(logbuf, "continuing unpinned"),
		      "warning says why: '%s'", logbuf);
		CHECK(strchr(logbuf, '\n') == strrchr(logbuf, '\n'), "one warning line");
		dlc_pinned_free(&p);
		_exit(t_failures ? 1 : 0);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork");
	if (pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 77)
		printf("unprivileged part skipped: cannot drop to uid 65534\n");
	else
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "unprivileged part failed (status %d)", status);
	return t_done("test_pinned");
}
