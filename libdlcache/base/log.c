// SPDX-License-Identifier: MIT
/*
 * Logging goes only where the caller asked: a callback in the config.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

void dlc_log_stderr(void *arg, int level, const char *msg)
{
	static const char *const names[] = { "error", "warning", "info" };

	fprintf(stderr, "dlcache: %s: %s\n",
		level >= 0 && level <= DLC_LOG_INFO ? names[level] : "log", msg);
}

void dlc_logf(const struct dlc_logger *lg, int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!lg || !lg->fn || level > (int)lg->level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	lg->fn(lg->arg, level, msg);
}
