// SPDX-License-Identifier: MIT
/*
 * The read-ahead's size, online.
 *
 * Reading ahead pays only while storage sets the pace: then the decoders
 * wait for samples still being read (decode_starved_ns) while reads are
 * in flight nearly all the time (io_busy_ns), as forms.c's regime
 * measures it, and every byte of read-ahead hides some of that wait.
 * While the consumer or decode sets the pace, the bytes read ahead only
 * sit in memory: a slow consumer on fast storage held the whole default
 * budget (64 MiB a loader) for nothing. Starved time alone is no sign:
 * a decoder waits too while the I/O thread decodes the sample it would
 * have taken (the controller lends it when the window is full).
 *
 * So, over the loader's pace windows (window.h, 250 ms): decoders
 * starved for more than GROW_PERMILLE of their time while storage was
 * busy for more than BUSY_PERMILLE double the budget (up to the
 * default's), and CALM_WINDOWS windows in a row with either under its
 * CALM_ share take a quarter off it (down to the floor: the reads a
 * full queue keeps in flight). It starts at the maximum, so a loader never begins short.
 * Growth is fast and shrinking slow: a storage-bound loader that the
 * read-ahead had fed well finds its budget again within a window of
 * starving, and comes back down only a quarter each CALM_WINDOWS calm
 * windows (from the default's 64 MiB to 8 MiB: 7 s).
 */
#include "rasize.h"

#define GROW_PERMILLE	20
#define CALM_PERMILLE	5
#define BUSY_PERMILLE	500
#define CALM_BUSY_PERMILLE	300
#define CALM_WINDOWS	4

void dlc_rasize_init(struct dlc_rasize *z, uint64_t floor, uint64_t max)
{
	z->max = max;
	z->floor = floor < max ? floor : max;
	z->cur = max;
	z->calm = 0;
	z->grows = 0;
}

uint64_t dlc_rasize_window(struct dlc_rasize *z,
			   const struct dlc_window_shares *w)
{
	if (w->starved > GROW_PERMILLE && w->busy > BUSY_PERMILLE) {
		z->cur = z->cur > z->max / 2 ? z->max : z->cur * 2;
		z->calm = 0;
		z->grows++;
	} else if (w->starved < CALM_PERMILLE ||
		   w->busy < CALM_BUSY_PERMILLE) {
		if (++z->calm >= CALM_WINDOWS) {
			z->cur -= z->cur / 4;
			if (z->cur < z->floor)
				z->cur = z->floor;
			z->calm = 0;
		}
	} else {
		z->calm = 0;
	}
	return z->cur;
}
