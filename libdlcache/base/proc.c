// SPDX-License-Identifier: MIT
/*
 * Other processes of this node (proc.h), read from /proc.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

uint64_t dlc_proc_start(uint32_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start;
	ssize_t n;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* The command name may hold anything: fields count from its ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* p + 2 is field 3 (state); field 22 is 19 fields on. */
	p += 2;
	for (i = 0; i < 19 && p; i++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p || sscanf(p, "%llu", &start) != 1)
		return 0;
	return start;
}

int dlc_proc_live(uint32_t pid, uint64_t start)
{
	if (!pid || pid > INT32_MAX)
		return 0;
	if (kill((pid_t)pid, 0) && errno == ESRCH)
		return 0;
	return dlc_proc_start(pid) == start;
}
