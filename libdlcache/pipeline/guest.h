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
 * guest threads still running to this loader's own CPUs, at its
 * priority where the caller may raise them (CAP_SYS_NICE or
 * RLIMIT_NICE), and wake them. One held off a busy CPU, a sample half
 * decoded, then ends its decode there (its owner is stopping) instead of
 * in what the busy CPU leaves: a hog beside it leaves it a few ms a
 * second.
 */
void loader_guests_home(struct dlc_loader *l);

/*
 * At destroy, after the threads ended: leave the group, and put what
 * the guests' claims still hold.
 */
void loader_node_leave(struct dlc_loader *l);

/*
 * Called with l->lock held, by the I/O thread after each cycle and by a
 * decoder before each sample: offer the queue's last samples to the
 * guests' ready claims, while the queue holds more than our waiting
 * decoders will take.
 */
void loader_guest_offer(struct dlc_loader *l);

/*
 * Called with l->lock held by a decoder of ours, which it drops while
 * copying: land one guest's decoded sample in its slot (or put a failed
 * one back at the queue's head). 1 when it did; else 0.
 */
int loader_guest_land(struct dlc_loader *l);

struct dlc_decoder;

/*
 * A guest thread's life, with its decoder made (loader.c's guest entry):
 * named dlc-guest and moved to SCHED_IDLE (or, when it cannot be, it
 * returns at once: never at the owner's priority), it decodes on the
 * group's other CPUs until the loader stops.
 */
void loader_guest_run(struct dlc_loader *l, struct dlc_decoder *dec);

/*
 * Called with l->lock held by a decoder of ours, which it drops while
 * decoding: take over a sample offered to a guest that has not begun it
 * by its due time once our decoders caught up with its batch, or, with
 * @held (the decoder has nothing queued), any a guest holds past its due
 * time, and decode it into its slot. 1 when it
 * did (or must look again); else 0, with *@wake_ns the dlc_now_ns() time
 * to look again, when a claim is due or a guest's decode may have ended
 * (0: none held).
 */
int loader_guest_reclaim(struct dlc_loader *l, struct dlc_decoder *dec,
			 int held, uint64_t *wake_ns);

#endif
