// SPDX-License-Identifier: MIT
/*
 * The loader's pace window (base/window.h), which measures for every
 * controller that reads what sets the pace (forms.c, rasize.c, the peer
 * tier), from the decoders' starved time, the I/O thread's busy time and
 * the consumer's wait:
 *   - the first call begins a window and says nothing;
 *   - a window shorter than its length says nothing and keeps its start;
 *   - one that ran its length or more says the decoders' starved share
 *     (their summed starved time over threads x the window), the I/O
 *     thread's busy share and the consumer's wait share, per mille of the
 *     window's own length, and the next begins then;
 *   - a counter gone back (a new loader's) begins a window, no shares;
 *   - no threads counts as one.
 * The shares expected are worked out here by hand, per case.
 */
#include <stdint.h>
#include <stdio.h>

#include "window.h"

#include "helpers/testutil.h"

#define MS	1000000ULL
#define LEN	DLC_PACE_WINDOW_NS

static void test_first_begins(void)
{
	struct dlc_window w = { 0 };
	struct dlc_window_shares s = { 7, 7, 7 };

	CHECK_EQ(dlc_window_end(&w, 5000 * MS, LEN, 40 * MS, 30 * MS, 0, 2, &s),
		 0);
	CHECK_EQ(w.t0, 5000 * MS);
	CHECK_EQ(w.starved0, 40 * MS);
	CHECK_EQ(w.busy0, 30 * MS);
	/* untouched */
	CHECK_EQ(s.starved, 7);
	CHECK_EQ(s.busy, 7);
	CHECK_EQ(s.wait, 7);
}

static void test_short_waits(void)
{
	struct dlc_window w = { 0 };
	struct dlc_window_shares s;

	dlc_window_end(&w, 1000 * MS, LEN, 0, 0, 0, 2, &s);
	CHECK_EQ(dlc_window_end(&w, 1249 * MS, LEN, 100 * MS, 100 * MS, 0, 2,
				&s), 0);
	/* the window still began at 1000 ms, with the counters at 0 */
	CHECK_EQ(w.t0, 1000 * MS);
	CHECK_EQ(w.starved0, 0);
	/* 250 ms in: 2 decoders starved 100 ms of 500 (200), busy 40 % */
	CHECK_EQ(dlc_window_end(&w, 1250 * MS, LEN, 100 * MS, 100 * MS, 0, 2,
				&s), 1);
	CHECK_EQ(s.starved, 200);
	CHECK_EQ(s.busy, 400);
	CHECK_EQ(w.t0, 1250 * MS);
}

static void test_long_window(void)
{
	struct dlc_window w = { 0 };
	struct dlc_window_shares s;

	/* a turn that took 1 s: shares over the 1 s, not over 250 ms */
	dlc_window_end(&w, 1000 * MS, LEN, 10 * MS, 10 * MS, 5 * MS, 4, &s);
	CHECK_EQ(dlc_window_end(&w, 2000 * MS, LEN, 2010 * MS, 760 * MS,
				305 * MS, 4, &s), 1);
	/*
	 * 2000 ms of 4 x 1000 starved: 500; 750 of 1000 busy: 750; the
	 * consumer waited 300 of 1000: 300
	 */
	CHECK_EQ(s.starved, 500);
	CHECK_EQ(s.busy, 750);
	CHECK_EQ(s.wait, 300);
	/* the next window's shares are its own */
	CHECK_EQ(dlc_window_end(&w, 2250 * MS, LEN, 2010 * MS, 760 * MS,
				330 * MS, 4, &s), 1);
	CHECK_EQ(s.starved, 0);
	CHECK_EQ(s.busy, 0);
	CHECK_EQ(s.wait, 100);
}

static void test_counter_back(void)
{
	struct dlc_window w = { 0 };
	struct dlc_window_shares s = { 9, 9, 9 };

	dlc_window_end(&w, 1000 * MS, LEN, 500 * MS, 500 * MS, 0, 2, &s);
	/* starved went back: a new window from here, no shares */
	CHECK_EQ(dlc_window_end(&w, 1500 * MS, LEN, 10 * MS, 600 * MS, 0, 2,
				&s), 0);
	CHECK_EQ(w.t0, 1500 * MS);
	CHECK_EQ(w.starved0, 10 * MS);
	CHECK_EQ(s.starved, 9);
	/* busy went back: the same */
	CHECK_EQ(dlc_window_end(&w, 2000 * MS, LEN, 20 * MS, 0, 0, 2, &s), 0);
	CHECK_EQ(w.t0, 2000 * MS);
	/* and from there it measures */
	CHECK_EQ(dlc_window_end(&w, 2250 * MS, LEN, 20 * MS, 250 * MS, 0, 2,
				&s), 1);
	CHECK_EQ(s.starved, 0);
	CHECK_EQ(s.busy, 1000);
	/* the consumer waited 50 of 250 ms: 200 */
	CHECK_EQ(dlc_window_end(&w, 2500 * MS, LEN, 20 * MS, 250 * MS,
				50 * MS, 2, &s), 1);
	CHECK_EQ(s.wait, 200);
	/* wait went back: a new window, no shares */
	CHECK_EQ(dlc_window_end(&w, 2750 * MS, LEN, 20 * MS, 250 * MS,
				10 * MS, 2, &s), 0);
	CHECK_EQ(w.t0, 2750 * MS);
	CHECK_EQ(w.wait0, 10 * MS);
}

static void test_no_threads(void)
{
	struct dlc_window w = { 0 };
	struct dlc_window_shares s;

	dlc_window_end(&w, 1000 * MS, LEN, 0, 0, 0, 0, &s);
	CHECK_EQ(dlc_window_end(&w, 1250 * MS, LEN, 125 * MS, 0, 0, 0, &s), 1);
	CHECK_EQ(s.starved, 500);
}

int main(void)
{
	T_RUN(test_first_begins);
	T_RUN(test_short_waits);
	T_RUN(test_long_window);
	T_RUN(test_counter_back);
	T_RUN(test_no_threads);
	return t_done("test_window");
}
