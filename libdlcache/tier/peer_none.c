// SPDX-License-Identifier: MIT
/*
 * The peer tier of a library built without MPI (make MPI=1 builds
 * peer.c instead): cluster mode is refused, in one log line.
 */
#include <errno.h>

#include "peer.h"

int dlc_peer_open(const struct dlc_peer_opts *o, struct dlc_peer **out)
{
	dlc_logf(o->log, DLC_LOG_ERROR,
		 "cluster mode: not available, this libdlcache was built without MPI (make MPI=1)");
	*out = NULL;
	return -EOPNOTSUPP;
}

void dlc_peer_tier(struct dlc_peer *p, struct dlc_tier *out)
{
	out->ops = NULL;
	out->tier = p;
}

void dlc_peer_cancel(struct dlc_peer *p)
{
}

void dlc_peer_close(struct dlc_peer *p)
{
}

void dlc_peer_counters(struct dlc_peer *p, struct dlc_peer_counters *out)
{
	*out = (struct dlc_peer_counters){ 0 };
}

void dlc_peer_window(struct dlc_peer *p, const struct dlc_window_shares *w,
		     uint64_t decode_ns)
{
}

uint32_t dlc_peer_owner(const struct dlc_peer *p, uint32_t id)
{
	return 0;
}
