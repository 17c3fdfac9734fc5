/* SPDX-License-Identifier: MIT */
/*
 * A window of time over three of the loader's running counters: its
 * decoders' starved time (dlc_stats.decode_starved_ns, summed over its
 * decode threads), its I/O thread's time with a read in flight, and its
 * consumer's time waiting for a batch (dlc_stats.wait_ns). What
 * sets a loader's pace (storage, decode or the consumer) is read from
 * their shares of a window. The loader's I/O thread keeps one window of
 * DLC_PACE_WINDOW_NS (loader.c, l->pace) and hands the shares of each
 * that ends to the controllers that act on them: forms.c's regime,
 * rasize.c's read-ahead and the peer tier's decode-bound gate and its
 * asking for prepared answers (peer.c).
 */
#ifndef DLC_WINDOW_H
#define DLC_WINDOW_H

#include <stdint.h>

/*
 * Long enough that a window holds many decodes (2-20 ms each) and reads,
 * short enough that a change of regime shows within a second.
 */
#define DLC_PACE_WINDOW_NS	(250ULL * 1000000)

struct dlc_window {
	uint64_t t0;		/* ns: this window's start; 0: none yet */
	uint64_t starved0, busy0, wait0;	/* the counters then */
};

/* A window's shares, per mille of its length. */
struct dlc_window_shares {
	uint64_t starved;	/* of each decoder's time, on average */
	uint64_t busy;		/* of the I/O thread's */
	uint64_t wait;		/* of the consumer's, waiting for a batch */
};

/*
 * The counters at @now: @starved_ns over @threads decoders, @busy_ns and
 * @wait_ns. 1 when the window ran at least @len_ns: its shares in *@out,
 * and the next one begins. 0 while it runs, and when one begins instead:
 * the first call, or a counter gone back (a new loader's).
 */
static inline int dlc_window_end(struct dlc_window *w, uint64_t now,
				 uint64_t len_ns, uint64_t starved_ns,
				 uint64_t busy_ns, uint64_t wait_ns,
				 uint32_t threads,
				 struct dlc_window_shares *out)
{
	uint64_t dt = now - w->t0;
	int ended = 0;

	if (w->t0 && starved_ns >= w->starved0 && busy_ns >= w->busy0 &&
	    wait_ns >= w->wait0) {
		if (dt < len_ns || !dt)
			return 0;
		out->starved = (starved_ns - w->starved0) * 1000 /
			       (dt * (threads ? threads : 1));
		out->busy = (busy_ns - w->busy0) * 1000 / dt;
		out->wait = (wait_ns - w->wait0) * 1000 / dt;
		ended = 1;
	}
	w->t0 = now;
	w->starved0 = starved_ns;
	w->busy0 = busy_ns;
	w->wait0 = wait_ns;
	return ended;
}

#endif /* DLC_WINDOW_H */
