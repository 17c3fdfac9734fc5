/* SPDX-License-Identifier: MIT */
/*
 * The loader's config checks (config.c). dlc_config_init() and the mode
 * names are public (dlcache.h).
 * Internal to libdlcache; the public face is dlcache.h.
 */
#ifndef DLC_CONFIG_H
#define DLC_CONFIG_H

#include "dlcache.h"

struct dlc_logger;

/*
 * Take the caller's config of in->size bytes into @c: fields past its
 * size keep their dlc_config_init() defaults; bytes past ours, from a
 * newer caller, must be zero. 0, or -EINVAL logged to @log.
 */
int dlc_config_take(const struct dlc_config *in, struct dlc_config *c,
		    const struct dlc_logger *log);
/* Whether every field of @c is in range: 0, or -EINVAL logged to @log. */
int dlc_config_check(const struct dlc_config *c, const struct dlc_logger *log);

#endif
