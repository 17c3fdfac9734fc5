/* SPDX-License-Identifier: MIT */
/*
 * The read-ahead's size, online (rasize.c): with readahead_bytes left to
 * the library, the bytes the read-ahead may hold follow what the loader
 * measures, between a floor and the default's budget. Internal to
 * libdlcache; the public face is dlc_stats.readahead_budget.
 */
#ifndef DLC_RASIZE_H
#define DLC_RASIZE_H

#include <stdint.h>

#include "window.h"

/* The I/O thread's alone. */
struct dlc_rasize {
	uint64_t max, floor;	/* set at init */
	uint64_t cur;		/* the budget now */
	uint32_t calm;		/* windows in a row with decode fed */
	uint64_t grows;		/* times it doubled */
};

/* A controller between @floor and @max (>= @floor) bytes, at @max. */
void dlc_rasize_init(struct dlc_rasize *z, uint64_t floor, uint64_t max);

/*
 * At the end of each of the loader's pace windows (window.h): its
 * shares @w. Returns the budget now.
 */
uint64_t dlc_rasize_window(struct dlc_rasize *z,
			   const struct dlc_window_shares *w);

#endif /* DLC_RASIZE_H */
