/* SPDX-License-Identifier: MIT */
/*
 * The dlcache.ko tier (ktier.c): the node's shared cache as one of the
 * pipeline's cache tiers (cachetier.h). Per claimed position the I/O
 * thread GETs the sample on the module's ring; a hit is decoded, a miss
 * read from the tiers below and PUT back (or ABORTed).
 * Internal to libdlcache; the public face is dlcache.h.
 */
#ifndef DLC_KTIER_H
#define DLC_KTIER_H

struct dlc_cache_tier;
struct dlc_loader;

/*
 * Open dlcache.ko's cache for @l when the config (or DLCACHE_BACKEND)
 * asks for it and /dev/dlcache can be used: *@out the tier, l->backend
 * DLC_BACKEND_KERNEL. *@out NULL (and 0) when the in-process cache is to
 * be used instead, said in the log; -errno when the kernel backend was
 * asked for and cannot be had, or the environment is invalid.
 */
int dlc_ktier_open(struct dlc_loader *l, struct dlc_cache_tier **out);

#endif
