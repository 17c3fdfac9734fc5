// SPDX-License-Identifier: MIT
/*
 * dlcachectl drain: ask every session of /dev/dlcache to let go
 * (DLCACHE_IOC_DRAIN, CAP_SYS_ADMIN), optionally wait until none but our
 * own is open, so that `rmmod dlcache` succeeds; --off ends the drain.
 * Loaders fall back to their in-process cache or fail, as their
 * kernel_fallback says (Documentation/admin.md, "Draining").
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "cli.h"

_Static_assert(sizeof(struct dlcache_drain) == 32, "dlcache_drain layout");

/* The poll interval of --wait. */
#define DRAIN_POLL_MS 100

static void drain_help(void)
{
	printf("usage: dlcachectl drain [--wait SECONDS] [--off]\n"
	       "\n"
	       "Start draining the node's cache (/dev/dlcache): every process\n"
	       "using it is asked to let go. Attaching fails from now on, and\n"
	       "each loader either goes on with its in-process cache or fails,\n"
	       "as its kernel_fallback says (DLCACHE_KERNEL_FALLBACK). Once no\n"
	       "process has /dev/dlcache open, 'rmmod dlcache' succeeds. Needs\n"
	       "CAP_SYS_ADMIN (root); the module parameter drain is the same\n"
	       "switch.\n"
	       "\n"
	       "  --wait SECONDS  then wait, at most SECONDS, until no session is\n"
	       "                  open but this command's own; exit 1 if some are\n"
	       "                  still open then\n"
	       "  --off           end the drain: processes may attach again\n"
	       "  -h, --help      show this help\n");
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* DRAIN with @flags into @d; 0 or the exit status after one line. */
static int drain_ioctl(int fd, uint32_t flags, struct dlcache_drain *d)
{
	int err;

	memset(d, 0, sizeof(*d));
	d->flags = flags;
	if (!ioctl(fd, DLCACHE_IOC_DRAIN, d))
		return 0;
	err = errno;
	if (err == EPERM)
		return fail("drain", "permission denied: draining needs CAP_SYS_ADMIN (run as root)");
	if (err == ENOTTY)
		return fail("drain", "this dlcache.ko has no drain (DLCACHE_FEAT_DRAIN): unload it with every user stopped");
	return fail("drain", "DLCACHE_IOC_DRAIN: %s", strerror(err));
}

/*
 * Wait until only our session is open, at most @secs. Returns 0, or 1
 * after one line when sessions are still open (or the drain was ended).
 */
static int drain_wait(int fd, uint32_t secs, uint32_t open_now)
{
	uint64_t t0 = now_ms(), deadline = t0 + (uint64_t)secs * 1000;
	struct dlcache_drain d;
	int ret;

	for (;;) {
		ret = drain_ioctl(fd, DLCACHE_DRAIN_F_QUERY, &d);
		if (ret)
			return ret;
		if (!d.draining)
			return fail("drain", "the drain was ended (drain --off or drain=0) while waiting");
		if (d.nsessions <= 1) {
			printf("drained after %.1f s: no session open but this one (%u were); rmmod dlcache can proceed\n",
			       (double)(now_ms() - t0) / 1000.0, open_now - 1);
			return 0;
		}
		if (now_ms() >= deadline)
			return fail("drain", "%u sessions still open after %u s (the module stays draining; see 'dlcachectl stats')",
				    d.nsessions - 1, secs);
		usleep(DRAIN_POLL_MS * 1000);
	}
}

int cmd_drain(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "wait", required_argument, NULL, 'w' },
		{ "off", no_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct dlcache_drain d;
	uint32_t secs = 0;
	int c, fd, ret, wait = 0, off = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'w':
			if (parse_u32(optarg, 0, 86400, &secs))
				return usage_error("drain", "--wait: want seconds, 0..86400, got '%s'",
						   optarg);
			wait = 1;
			break;
		case 'o':
			off = 1;
			break;
		case 'h':
			drain_help();
			return 0;
		default:
			return usage_error("drain", "unknown or incomplete option '%s' (try --help)",
					   argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("drain", "unexpected argument '%s' (try --help)", argv[optind]);
	if (off && wait)
		return usage_error("drain", "--off and --wait do not go together");
	fd = admin_open("drain");
	if (fd < 0)
		return 1;
	ret = drain_ioctl(fd, off ? DLCACHE_DRAIN_F_OFF : 0, &d);
	if (!ret && off)
		printf("drain ended: sessions may attach again (%u open)\n",
		       d.nsessions - 1);
	if (!ret && !off)
		printf("draining: attaching fails, %u sessions open are asked to let go\n",
		       d.nsessions - 1);
	fflush(stdout);
	if (!ret && wait)
		ret = drain_wait(fd, secs, d.nsessions);
	close(fd);
	return ret;
}
