// SPDX-License-Identifier: MIT
/*
 * The read-ahead's size, online (pipeline/rasize.c), fed the shares of
 * pace windows as the I/O thread would (test_window checks how a window's
 * shares are measured):
 *   - it starts at the maximum, and keeps it while storage sets the
 *     pace (decoders starved, storage busy);
 *   - with decode fed (a slow consumer), or storage idle, it comes down
 *     to the floor, a quarter each four windows, never below;
 *   - starved decoders with storage idle (the I/O thread decoding the
 *     sample a decoder would take) are no reason to grow;
 *   - one window of storage setting the pace doubles it, up to the max.
 * The expected budgets are computed here from the rule library.md
 * states, window by window, not by the code under test.
 */
#include <stdint.h>
#include <stdio.h>

#include "rasize.h"

#include "helpers/testutil.h"

#define MIB	(1ULL << 20)

struct feed {
	struct dlc_rasize z;
};

/* One window: decoders starved @st, storage busy @bu (per mille). */
static uint64_t window(struct feed *f, uint32_t st, uint32_t bu)
{
	struct dlc_window_shares w = { .starved = st, .busy = bu };

	return dlc_rasize_window(&f->z, &w);
}

static void start(struct feed *f, uint64_t floor, uint64_t max)
{
	dlc_rasize_init(&f->z, floor, max);
	CHECK_EQ(f->z.cur, max);
}

static void test_storage_bound_keeps(void)
{
	struct feed f;
	int i;

	start(&f, 4 * MIB, 64 * MIB);
	for (i = 0; i < 40; i++)
		CHECK_EQ(window(&f, 100, 900), 64 * MIB);
}

static void test_fed_shrinks_to_floor(void)
{
	uint64_t want = 64 * MIB, got;
	struct feed f;
	int i;

	start(&f, 4 * MIB, 64 * MIB);
	for (i = 1; i <= 80; i++) {
		/* decode fed, storage idle: a quarter off each 4th window */
		if (i % 4 == 0) {
			want = want * 3 / 4;
			if (want < 4 * MIB)
				want = 4 * MIB;
		}
		got = window(&f, 0, 50);
		CHECK(got == want, "window %d: %llu, want %llu", i,
		      (unsigned long long)got, (unsigned long long)want);
	}
	CHECK_EQ(want, 4 * MIB);
}

static void test_starved_but_idle_no_growth(void)
{
	struct feed f;
	int i;

	start(&f, 4 * MIB, 64 * MIB);
	for (i = 0; i < 80; i++)
		window(&f, 0, 0);
	CHECK_EQ(f.z.cur, 4 * MIB);
	/* decoders wait while the I/O thread decodes: storage idle */
	for (i = 0; i < 8; i++)
		CHECK_EQ(window(&f, 300, 100), 4 * MIB);
}

static void test_storage_pace_doubles(void)
{
	struct feed f;
	int i;

	start(&f, 4 * MIB, 64 * MIB);
	for (i = 0; i < 80; i++)
		window(&f, 0, 0);
	CHECK_EQ(window(&f, 100, 900), 8 * MIB);
	CHECK_EQ(window(&f, 100, 900), 16 * MIB);
	CHECK_EQ(window(&f, 100, 900), 32 * MIB);
	CHECK_EQ(window(&f, 100, 900), 64 * MIB);
	CHECK_EQ(window(&f, 100, 900), 64 * MIB);
	/* in between: neither calm nor starved, it stays */
	for (i = 0; i < 12; i++)
		CHECK_EQ(window(&f, 10, 900), 64 * MIB);
}

static void test_calm_run_broken(void)
{
	struct feed f;
	int i;

	start(&f, 4 * MIB, 64 * MIB);
	/* three calm, one in between: the run starts again */
	for (i = 0; i < 3; i++)
		CHECK_EQ(window(&f, 0, 0), 64 * MIB);
	CHECK_EQ(window(&f, 10, 900), 64 * MIB);
	for (i = 0; i < 3; i++)
		CHECK_EQ(window(&f, 0, 0), 64 * MIB);
	CHECK_EQ(window(&f, 0, 0), 48 * MIB);
}

static void test_floor_above_max(void)
{
	struct feed f;
	int i;

	start(&f, 96 * MIB, 64 * MIB);
	for (i = 0; i < 40; i++)
		CHECK_EQ(window(&f, 0, 0), 64 * MIB);
}

int main(void)
{
	T_RUN(test_storage_bound_keeps);
	T_RUN(test_fed_shrinks_to_floor);
	T_RUN(test_starved_but_idle_no_growth);
	T_RUN(test_storage_pace_doubles);
	T_RUN(test_calm_run_broken);
	T_RUN(test_floor_above_max);
	return t_done("test_rasize");
}
