// SPDX-License-Identifier: MIT
/*
 * The read-ahead table: see readahead.h. The loader's I/O thread decides
 * what to read ahead and when (loader.c: read_ahead()); this file keeps
 * the entries and the budget honest.
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"
#include "readahead.h"

struct dlc_ra {
	struct dlc_ra_entry *e;
	uint32_t slots;
	struct dlc_ra_counters c;
};

int dlc_ra_create(uint32_t slots, uint64_t budget, struct dlc_ra **out)
{
	struct dlc_ra *ra;

	if (!slots)
		return -EINVAL;
	ra = calloc(1, sizeof(*ra));
	if (!ra)
		return -ENOMEM;
	ra->e = calloc(slots, sizeof(*ra->e));
	if (!ra->e) {
		free(ra);
		return -ENOMEM;
	}
	ra->slots = slots;
	ra->c.budget = budget;
	*out = ra;
	return 0;
}

void dlc_ra_destroy(struct dlc_ra *ra)
{
	uint32_t i;

	if (!ra)
		return;
	for (i = 0; i < ra->slots; i++)
		if (ra->e[i].state == DLC_RA_READY && ra->e[i].buf)
			dlc_buf_put(ra->e[i].buf);
	free(ra->e);
	free(ra);
}

uint32_t dlc_ra_slots(const struct dlc_ra *ra)
{
	return ra->slots;
}

struct dlc_ra_entry *dlc_ra_slot(struct dlc_ra *ra, uint32_t i)
{
	return &ra->e[i % ra->slots];
}

struct dlc_ra_entry *dlc_ra_at(struct dlc_ra *ra, uint64_t g)
{
	return &ra->e[g % ra->slots];
}

struct dlc_ra_entry *dlc_ra_find(struct dlc_ra *ra, uint64_t g)
{
	struct dlc_ra_entry *e = dlc_ra_at(ra, g);

	if (e->g != g || e->state == DLC_RA_FREE || e->abandoned ||
	    e->claimed)
		return NULL;
	return e;
}

void dlc_ra_set_budget(struct dlc_ra *ra, uint64_t budget)
{
	ra->c.budget = budget;
}

uint64_t dlc_ra_held(const struct dlc_ra *ra)
{
	return ra->c.held;
}

int dlc_ra_room(const struct dlc_ra *ra, uint64_t bytes)
{
	return ra->c.held + bytes <= ra->c.budget;
}

void dlc_ra_begin(struct dlc_ra *ra, struct dlc_ra_entry *e, uint64_t g,
		  uint32_t id, uint64_t bytes)
{
	if (e->state != DLC_RA_FREE)	/* the caller checked: never */
		return;
	*e = (struct dlc_ra_entry){
		.g = g, .id = id, .bytes = bytes, .state = DLC_RA_IN_FLIGHT,
	};
	ra->c.held += bytes;
}

void dlc_ra_reading(struct dlc_ra *ra, struct dlc_ra_entry *e)
{
	if (e->reading)
		return;
	e->reading = 1;
	ra->c.reads++;
	if (e->claimed)
		ra->c.used++;
}

void dlc_ra_done(struct dlc_ra_entry *e, struct dlc_buf *buf, int err,
		 const char *why)
{
	e->state = DLC_RA_READY;
	e->buf = buf;
	e->err = err;
	e->why = why;
}

/* The entry's bytes leave the budget. */
static void uncharge(struct dlc_ra *ra, struct dlc_ra_entry *e)
{
	ra->c.held -= e->bytes;
	e->bytes = 0;
}

void dlc_ra_take(struct dlc_ra *ra, struct dlc_ra_entry *e, uint32_t pos)
{
	uncharge(ra, e);
	if (e->reading)
		ra->c.used++;
	if (e->state == DLC_RA_READY) {
		e->state = DLC_RA_FREE;
		e->buf = NULL;
		return;
	}
	e->claimed = 1;
	e->pos = pos;
}

void dlc_ra_release(struct dlc_ra_entry *e)
{
	e->state = DLC_RA_FREE;
	e->claimed = 0;
	e->abandoned = 0;
	e->probing = 0;
	e->fill = 0;
	e->reading = 0;
	e->buf = NULL;
}

void dlc_ra_cancel(struct dlc_ra *ra, struct dlc_ra_entry *e)
{
	if (!e->claimed && !e->abandoned)
		uncharge(ra, e);
	dlc_ra_release(e);
}

void dlc_ra_retain(struct dlc_ra *ra, uint64_t lo, uint64_t hi)
{
	uint32_t i;

	for (i = 0; i < ra->slots; i++) {
		struct dlc_ra_entry *e = &ra->e[i];

		if (e->state == DLC_RA_FREE || e->claimed || e->abandoned ||
		    (e->g >= lo && e->g < hi))
			continue;
		uncharge(ra, e);
		ra->c.dropped++;
		if (e->state == DLC_RA_IN_FLIGHT) {
			e->abandoned = 1;
			continue;
		}
		if (e->buf)
			dlc_buf_put(e->buf);
		e->buf = NULL;
		e->state = DLC_RA_FREE;
	}
}

void dlc_ra_retain_fills(struct dlc_ra *ra, uint64_t lo, uint64_t hi,
			 void (*end)(void *arg, struct dlc_ra_entry *e),
			 void *arg)
{
	uint32_t i;

	for (i = 0; i < ra->slots; i++) {
		struct dlc_ra_entry *e = &ra->e[i];

		if (e->state != DLC_RA_READY || !e->fill ||
		    (e->g >= lo && e->g < hi))
			continue;
		end(arg, e);
		e->fill = 0;
	}
}

void dlc_ra_counters(const struct dlc_ra *ra, struct dlc_ra_counters *out)
{
	*out = ra->c;
}
