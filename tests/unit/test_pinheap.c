// SPDX-License-Identifier: MIT
/*
 * The pinned forms' heap (cache/pinheap.c) against a plain scan: random
 * inserts and removes of IDs with random densities, ties included, and
 * after each the heap's minimum is a least key of the IDs a separate
 * array says are in.
 */
#include <stdint.h>
#include <stdio.h>

#include "pinheap.h"

#include "helpers/testutil.h"

#define N	500
#define STEPS	20000

static void test_against_scan(void)
{
	static double key[N];
	static int in[N];
	struct dlc_pinheap h;
	uint32_t step, id, got, count = 0, i;
	double least, k;

	CHECK_EQ(dlc_pinheap_init(&h, N), 0);
	CHECK_EQ(dlc_pinheap_min(&h, NULL), DLC_PINHEAP_NIL);
	for (step = 0; step < STEPS; step++) {
		id = (uint32_t)(t_rand() % N);
		if (in[id]) {
			dlc_pinheap_remove(&h, id);
			in[id] = 0;
			count--;
		} else {
			/* a few values only, so that keys tie */
			key[id] = (double)(t_rand() % 50) / 7.0;
			dlc_pinheap_insert(&h, id, key[id]);
			in[id] = 1;
			count++;
		}
		/* an absent ID: removing it does nothing */
		id = (uint32_t)(t_rand() % N);
		if (!in[id])
			dlc_pinheap_remove(&h, id);
		CHECK_EQ(h.n, count);
		got = dlc_pinheap_min(&h, &k);
		if (!count) {
			CHECK_EQ(got, DLC_PINHEAP_NIL);
			continue;
		}
		least = 1e30;
		for (i = 0; i < N; i++)
			if (in[i] && key[i] < least)
				least = key[i];
		CHECK(got < N && in[got] && key[got] == least && k == least,
		      "step %u: min %u (key %g), a least key is %g", step, got,
		      k, least);
	}
	/* Emptied in key order. */
	least = -1;
	while ((got = dlc_pinheap_min(&h, &k)) != DLC_PINHEAP_NIL) {
		CHECK(k >= least, "out of order: %g after %g", k, least);
		least = k;
		dlc_pinheap_remove(&h, got);
		in[got] = 0;
	}
	for (i = 0; i < N; i++)
		CHECK(!in[i], "ID %u never came out", i);
	dlc_pinheap_insert(&h, 3, 1.0);
	dlc_pinheap_insert(&h, 3, 0.5);	/* present: ignored */
	dlc_pinheap_min(&h, &k);
	CHECK(k == 1.0, "a second insert changed the key to %g", k);
	dlc_pinheap_clear(&h);
	CHECK_EQ(dlc_pinheap_min(&h, NULL), DLC_PINHEAP_NIL);
	dlc_pinheap_insert(&h, 3, 2.0);
	CHECK_EQ(dlc_pinheap_min(&h, NULL), 3);
	dlc_pinheap_fini(&h);
}

int main(void)
{
	T_RUN(test_against_scan);
	return t_done("test_pinheap");
}
