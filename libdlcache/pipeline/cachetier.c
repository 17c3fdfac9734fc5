// SPDX-License-Identifier: MIT
/*
 * Which cache tier a loader gets (cachetier.h): dlcache.ko's when asked
 * for and usable, else the in-process one. The only file that names both.
 */
#include <errno.h>
#include <string.h>

#include "cachetier.h"
#include "inproc.h"
#include "ktier.h"
#include "loader_int.h"

int dlc_cache_tier_open(struct dlc_loader *l, struct dlc_cache_tier **out)
{
	const struct dlc_config *cfg = &l->cfg;
	struct dlc_inproc *ip;
	int ret;

	*out = NULL;
	l->backend = DLC_BACKEND_INPROCESS;
	/* Cluster mode's caches are the ranks' in-process ones, the peer tier's. */
	if (!cfg->cluster) {
		ret = dlc_ktier_open(l, out);
		if (ret || *out)
			return ret;
	}
	ret = dlc_inproc_create(l, &ip);
	if (ret)
		return ret;
	if (cfg->cache_bytes && !cfg->cluster) {
		ret = dlc_inproc_cache(ip, cfg->cache_bytes, 1);
		if (ret) {
			dlc_logf(&l->log, DLC_LOG_ERROR,
				 "in-process cache over %u samples (%u a rank): %s",
				 l->n, l->epoch_len, strerror(-ret));
			ip->tier.ops->destroy(&ip->tier);
			return ret;
		}
	}
	*out = &ip->tier;
	return 0;
}

void dlc_cache_tier_close(struct dlc_cache_tier *t)
{
	if (t)
		t->ops->destroy(t);
}
