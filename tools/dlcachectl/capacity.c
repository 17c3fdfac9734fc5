// SPDX-License-Identifier: MIT
/*
 * dlcachectl capacity and dlcachectl drop: the privileged knobs of
 * /dev/dlcache (DLCACHE_IOC_SET_CAPACITY and DLCACHE_IOC_DROP, which need
 * CAP_SYS_ADMIN). Reading the capacity needs no privilege.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"
#include "cli.h"

static void capacity_help(void)
{
	printf("usage: dlcachectl capacity [SIZE]\n"
	       "\n"
	       "Without SIZE, print the capacity of the node's cache (/dev/dlcache).\n"
	       "With SIZE (bytes, or with a K, M or G suffix: 512M, 4G), set it;\n"
	       "lowering it evicts cached samples, farthest next use first, before\n"
	       "the command returns. Setting needs CAP_SYS_ADMIN (root). The same\n"
	       "value is /sys/module/dlcache/parameters/capacity_mb. Capacity is\n"
	       "counted in whole pages per sample.\n"
	       "\n"
	       "  -h, --help    show this help\n");
}

static void drop_help(void)
{
	printf("usage: dlcachectl drop [DATASET_KEY]\n"
	       "\n"
	       "Evict every cached sample of the node's cache (/dev/dlcache), or\n"
	       "only those of the data set DATASET_KEY (32 hex digits, as\n"
	       "'dlcachectl datasets' prints them). Data sets stay attached and\n"
	       "fills in flight are not affected. Needs CAP_SYS_ADMIN (root).\n"
	       "\n"
	       "  -h, --help    show this help\n");
}

/* -h/--help and unknown options; <0 help printed, >0 exit code, 0 go on. */
static int parse_opts(const char *cmd, int argc, char **argv, void (*help)(void))
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c;

	optind = 1;
	opterr = 0;
	/* "+": stop at the first operand, so "-1" is an operand, not an option. */
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			help();
			return -1;
		default:
			return usage_error(cmd, "unknown or incomplete option '%s' (try --help)",
					   argv[optind - 1]);
		}
	}
	if (argc - optind > 1)
		return usage_error(cmd, "unexpected argument '%s' (try --help)", argv[optind + 1]);
	return 0;
}

static int permission_denied(const char *cmd, const char *what)
{
	return fail(cmd, "permission denied: %s needs CAP_SYS_ADMIN (run as root)", what);
}

int cmd_capacity(int argc, char **argv)
{
	struct dlcache_capacity c;
	struct dlcache_info info;
	uint64_t bytes = 0;
	int fd, ret, set;
	char a[32], b[32];

	ret = parse_opts("capacity", argc, argv, capacity_help);
	if (ret)
		return ret < 0 ? 0 : ret;
	set = optind < argc;
	if (set && parse_size(argv[optind], &bytes))
		return usage_error("capacity", "SIZE: want bytes or a size like 512M or 4G, got '%s'",
				   argv[optind]);
	fd = admin_open("capacity");
	if (fd < 0)
		return 1;
	if (!set) {
		memset(&info, 0, sizeof(info));
		if (ioctl(fd, DLCACHE_IOC_GET_INFO, &info)) {
			ret = fail("capacity", "DLCACHE_IOC_GET_INFO: %s", strerror(errno));
		} else {
			printf("capacity %s (%llu bytes)\n",
			       admin_bytes(info.capacity_bytes, a, sizeof(a)),
			       (unsigned long long)info.capacity_bytes);
			ret = 0;
		}
		close(fd);
		return ret;
	}
	memset(&c, 0, sizeof(c));
	c.bytes = bytes;
	if (ioctl(fd, DLCACHE_IOC_SET_CAPACITY, &c)) {
		ret = errno;
		close(fd);
		if (ret == EPERM)
			return permission_denied("capacity", "changing the capacity");
		return fail("capacity", "DLCACHE_IOC_SET_CAPACITY: %s", strerror(ret));
	}
	close(fd);
	printf("capacity %s -> %s (%llu bytes)\n", admin_bytes(c.old_bytes, a, sizeof(a)),
	       admin_bytes(bytes, b, sizeof(b)), (unsigned long long)bytes);
	return 0;
}

int cmd_drop(int argc, char **argv)
{
	struct dlcache_drop d;
	const char *keyarg = NULL;
	int fd, ret;
	char a[32];

	ret = parse_opts("drop", argc, argv, drop_help);
	if (ret)
		return ret < 0 ? 0 : ret;
	memset(&d, 0, sizeof(d));
	if (optind < argc) {
		keyarg = argv[optind];
		if (admin_key_parse(keyarg, d.key))
			return usage_error("drop", "DATASET_KEY: want 32 hex digits, got '%s'", keyarg);
		d.flags = DLCACHE_DROP_F_KEY;
	}
	fd = admin_open("drop");
	if (fd < 0)
		return 1;
	if (ioctl(fd, DLCACHE_IOC_DROP, &d)) {
		ret = errno;
		close(fd);
		if (ret == EPERM)
			return permission_denied("drop", "dropping the cache");
		if (ret == ENOENT && keyarg)
			return fail("drop", "no data set with key %s in the cache", keyarg);
		return fail("drop", "DLCACHE_IOC_DROP: %s", strerror(ret));
	}
	close(fd);
	printf("dropped %s (%llu bytes)%s%s\n", admin_bytes(d.dropped_bytes, a, sizeof(a)),
	       (unsigned long long)d.dropped_bytes, keyarg ? " of data set " : "",
	       keyarg ? keyarg : "");
	return 0;
}
