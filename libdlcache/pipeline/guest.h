/* SPDX-License-Identifier: MIT */
/*
 * Guest decode threads (guest.c): node sharing as the loader sees it.
 */
#ifndef DLC_GUEST_H
#define DLC_GUEST_H

#include <stdint.h>

struct dlc_loader;

/*
 * At create, with cfg.node_group set: join the group (nodeshare.h) and
 * set how many guests to start. A group that cannot be used is said in
 * a warning and left: 0 either way, -ENOMEM only.
 */
int loader_node_setup(struct dlc_loader *l);

/*
 * Called with l->lock held, at destroy, once l->stop is set: move the
 * guest threads still running to this loader's own CPUs. One held off a
 * busy CPU, a sample half decoded, then ends its decode there (its owner
 * is stopping) instead of in what the busy CPU leaves: a hog beside it
 * leaves it a few ms a second.
 */
void loader_guests_home(struct dlc_loader *l);

/* At destroy, after the threads ended: leave the group. */
void loader_node_leave(struct dlc_loader *l);

struct dlc_decoder;

/*
 * A guest thread's life, with its decoder made (loader.c's guest entry):
 * named dlc-guest and moved to SCHED_IDLE (or, when it cannot be, it
 * returns at once: never at the owner's priority), it decodes on the
 * group's other CPUs until the loader stops.
 */
void loader_guest_run(struct dlc_loader *l, struct dlc_decoder *dec);

/*
 * Called with l->lock held by a decoder of ours with nothing queued,
 * which it drops while decoding: take over a sample a guest has held
 * past its due time and decode it into its slot. 1 when it did; else 0,
 * with *@wake_ns the dlc_now_ns() time the next claim is due (0: none).
 */
int loader_guest_reclaim(struct dlc_loader *l, struct dlc_decoder *dec,
			 uint64_t *wake_ns);

#endif
