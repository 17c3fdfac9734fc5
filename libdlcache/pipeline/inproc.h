/* SPDX-License-Identifier: MIT */
/*
 * The in-process cache as the pipeline's cache tier (inproc.c): cache.c's
 * next-use cache over this process's orders, or no cache at all. The
 * dlcache.ko tier (ktier.c) embeds one to fall back to.
 * Internal to libdlcache; the public face is dlcache.h.
 */
#ifndef DLC_INPROC_H
#define DLC_INPROC_H

#include <stdint.h>

#include "cachetier.h"
#include "forms.h"

struct dlc_cache;

struct dlc_inproc {
	struct dlc_cache_tier tier;	/* first: its ops are inproc.c's */
	struct dlc_cache *c;		/* NULL: no cache, every claim reads */
	/* Decoded forms (dlc_config.forms): with a cache, when asked. */
	struct dlc_forms forms;
	int have_forms;
};

/* A tier over @l without a cache (dlc_inproc_cache() adds one). */
void dlc_inproc_init(struct dlc_inproc *ip, struct dlc_loader *l);
/*
 * Give it a cache of @bytes over the loader's samples and orders, the
 * loader's stats saying its capacity, with decoded forms when @forms and
 * the config asks (l->forms then points at them; only before the
 * threads start, which read it unlocked): 0, or -errno (it stays
 * without).
 */
int dlc_inproc_cache(struct dlc_inproc *ip, uint64_t bytes, int forms);
/* Free its cache; the struct is the caller's. */
void dlc_inproc_fini(struct dlc_inproc *ip);
/* A tier of its own, for dlc_cache_tier_open(): 0 or -ENOMEM. */
int dlc_inproc_create(struct dlc_loader *l, struct dlc_inproc **out);

#endif
