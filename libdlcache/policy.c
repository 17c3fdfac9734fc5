// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Next-use (Belady) cache policy over known epoch orders. See policy.h.
 *
 * Invariants, for every sample id:
 *  - next_use[id] is the first position >= cursor where id is used, or
 *    NEVER when no known order uses it again;
 *  - if id is cached: next_use[id] != NEVER and bit (next_use[id] % window)
 *    is set, or next_use[id] == NEVER and id is on the never list;
 *  - live positions are [cursor, end), and end - cursor <= window, so a
 *    slot (pos % window) names one live position at most.
 */
#include "policy.h"

#define WORD_BITS 64

static uint64_t round_window(uint32_t window)
{
	uint64_t w = WORD_BITS;

	while (w < window)
		w <<= 1;
	return w;
}

size_t dlc_policy_mem_size(uint32_t nsamples, uint32_t window)
{
	uint64_t w, n = nsamples;

	if (!nsamples || !window || nsamples > DLC_POLICY_MAX_SAMPLES ||
	    window > DLC_POLICY_MAX_WINDOW)
		return 0;
	w = round_window(window);
	/* 8-byte arrays first so that every array stays aligned. */
	return (size_t)(w * 8 +			/* succ */
			w / 8 +			/* bitmap */
			n * 8 +			/* next_use */
			n * 8 +			/* last_pos */
			(n + 63) / 64 * 8 +	/* cached */
			w * 4 +			/* order */
			n * 4 +			/* never_prev */
			n * 4);			/* never_next */
}

int dlc_policy_init(struct dlc_policy *p, uint32_t nsamples, uint32_t window,
		    void *mem, size_t mem_size)
{
	size_t need = dlc_policy_mem_size(nsamples, window);
	unsigned char *m = mem;
	uint64_t w, i;

	if (!p || !mem || !need || mem_size < need ||
	    ((unsigned long)mem & 7))
		return -DLC_POLICY_EINVAL;
	w = round_window(window);

	p->nsamples = nsamples;
	p->window = (uint32_t)w;
	p->cursor = 0;
	p->end = 0;
	p->ncached = 0;
	p->nepochs = 0;
	p->never_head = DLC_POLICY_NIL;
	p->nnever = 0;
	p->top_hint = 0;

	p->succ = (uint64_t *)m;
	m += w * 8;
	p->bitmap = (uint64_t *)m;
	m += w / 8;
	p->next_use = (uint64_t *)m;
	m += (size_t)nsamples * 8;
	p->last_pos = (uint64_t *)m;
	m += (size_t)nsamples * 8;
	p->cached = (uint64_t *)m;
	m += (size_t)(nsamples + 63) / 64 * 8;
	p->order = (uint32_t *)m;
	m += w * 4;
	p->never_prev = (uint32_t *)m;
	m += (size_t)nsamples * 4;
	p->never_next = (uint32_t *)m;

	for (i = 0; i < w; i++) {
		p->succ[i] = DLC_POLICY_NEVER;
		p->order[i] = DLC_POLICY_NIL;
	}
	for (i = 0; i < w / WORD_BITS; i++)
		p->bitmap[i] = 0;
	for (i = 0; i < nsamples; i++) {
		p->next_use[i] = DLC_POLICY_NEVER;
		p->last_pos[i] = DLC_POLICY_NEVER;
		p->never_prev[i] = DLC_POLICY_NIL;
		p->never_next[i] = DLC_POLICY_NIL;
	}
	for (i = 0; i < (nsamples + 63) / 64; i++)
		p->cached[i] = 0;
	return 0;
}

static uint32_t slot_of(const struct dlc_policy *p, uint64_t pos)
{
	return (uint32_t)(pos & (p->window - 1));
}

static int test_bit64(const uint64_t *map, uint64_t bit)
{
	return (map[bit / WORD_BITS] >> (bit % WORD_BITS)) & 1;
}

static void set_bit64(uint64_t *map, uint64_t bit)
{
	map[bit / WORD_BITS] |= 1ULL << (bit % WORD_BITS);
}

static void clear_bit64(uint64_t *map, uint64_t bit)
{
	map[bit / WORD_BITS] &= ~(1ULL << (bit % WORD_BITS));
}

static void never_add(struct dlc_policy *p, uint32_t id)
{
	p->never_prev[id] = DLC_POLICY_NIL;
	p->never_next[id] = p->never_head;
	if (p->never_head != DLC_POLICY_NIL)
		p->never_prev[p->never_head] = id;
	p->never_head = id;
	p->nnever++;
}

static void never_del(struct dlc_policy *p, uint32_t id)
{
	uint32_t prev = p->never_prev[id], next = p->never_next[id];

	if (prev != DLC_POLICY_NIL)
		p->never_next[prev] = next;
	else
		p->never_head = next;
	if (next != DLC_POLICY_NIL)
		p->never_prev[next] = prev;
	p->never_prev[id] = DLC_POLICY_NIL;
	p->never_next[id] = DLC_POLICY_NIL;
	p->nnever--;
}

/* Record a cached sample under its current next use. */
static void place(struct dlc_policy *p, uint32_t id)
{
	uint64_t nu = p->next_use[id];

	if (nu == DLC_POLICY_NEVER) {
		never_add(p, id);
		return;
	}
	set_bit64(p->bitmap, slot_of(p, nu));
	if (nu > p->top_hint)
		p->top_hint = nu;
}

static void unplace(struct dlc_policy *p, uint32_t id)
{
	uint64_t nu = p->next_use[id];

	if (nu == DLC_POLICY_NEVER)
		never_del(p, id);
	else
		clear_bit64(p->bitmap, slot_of(p, nu));
}

int dlc_policy_add_epoch(struct dlc_policy *p, uint32_t epoch,
			 const uint32_t *ids, uint32_t len)
{
	struct dlc_policy_epoch *e;
	uint32_t i;

	if (!ids || !len)
		return -DLC_POLICY_EINVAL;
	if (p->nepochs && epoch <= p->epochs[p->nepochs - 1].epoch)
		return -DLC_POLICY_EINVAL;
	for (i = 0; i < len; i++)
		if (ids[i] >= p->nsamples)
			return -DLC_POLICY_EINVAL;
	if (p->nepochs == DLC_POLICY_MAX_EPOCHS ||
	    p->end - p->cursor + len > p->window)
		return -DLC_POLICY_ENOSPC;

	for (i = 0; i < len; i++) {
		uint64_t q = p->end + i, lp;
		uint32_t id = ids[i], s = slot_of(p, q);

		p->order[s] = id;
		p->succ[s] = DLC_POLICY_NEVER;
		lp = p->last_pos[id];
		if (lp != DLC_POLICY_NEVER && lp >= p->cursor) {
			/* Still live: its next use is already known. */
			p->succ[slot_of(p, lp)] = q;
		} else {
			int cached = test_bit64(p->cached, id);

			if (cached)
				unplace(p, id);
			p->next_use[id] = q;
			if (cached)
				place(p, id);
		}
		p->last_pos[id] = q;
	}

	e = &p->epochs[p->nepochs++];
	e->epoch = epoch;
	e->len = len;
	e->base = p->end;
	p->end += len;
	return 0;
}

int dlc_policy_position(const struct dlc_policy *p, uint32_t epoch,
			uint32_t index, uint64_t *pos)
{
	uint32_t i;

	for (i = 0; i < p->nepochs; i++) {
		const struct dlc_policy_epoch *e = &p->epochs[i];

		if (e->epoch == epoch && index < e->len) {
			*pos = e->base + index;
			return 0;
		}
	}
	return -DLC_POLICY_ENOENT;
}

void dlc_policy_advance(struct dlc_policy *p, uint64_t pos)
{
	uint64_t q;
	uint32_t i, drop = 0;

	if (pos > p->end)
		pos = p->end;
	for (q = p->cursor; q < pos; q++) {
		uint32_t s = slot_of(p, q), id = p->order[s];
		int cached;

		if (p->next_use[id] != q)
			continue;
		cached = test_bit64(p->cached, id);
		if (cached)
			unplace(p, id);
		p->next_use[id] = p->succ[s];
		if (cached)
			place(p, id);
	}
	if (pos > p->cursor)
		p->cursor = pos;

	while (drop < p->nepochs &&
	       p->epochs[drop].base + p->epochs[drop].len <= p->cursor)
		drop++;
	if (!drop)
		return;
	for (i = drop; i < p->nepochs; i++)
		p->epochs[i - drop] = p->epochs[i];
	p->nepochs -= drop;
}

uint64_t dlc_policy_next_use(const struct dlc_policy *p, uint32_t id)
{
	if (id >= p->nsamples)
		return DLC_POLICY_NEVER;
	return p->next_use[id];
}

int dlc_policy_is_cached(const struct dlc_policy *p, uint32_t id)
{
	return id < p->nsamples && test_bit64(p->cached, id);
}

int dlc_policy_insert(struct dlc_policy *p, uint32_t id)
{
	if (id >= p->nsamples)
		return -DLC_POLICY_EINVAL;
	if (test_bit64(p->cached, id))
		return 0;
	set_bit64(p->cached, id);
	p->ncached++;
	place(p, id);
	return 0;
}

int dlc_policy_remove(struct dlc_policy *p, uint32_t id)
{
	if (id >= p->nsamples)
		return -DLC_POLICY_EINVAL;
	if (!test_bit64(p->cached, id))
		return 0;
	unplace(p, id);
	clear_bit64(p->cached, id);
	p->ncached--;
	return 0;
}

/* Highest set bit among slots lo..hi (inclusive, lo <= hi), or -1. */
static int64_t last_set(const uint64_t *map, uint32_t lo, uint32_t hi)
{
	uint32_t w = hi / WORD_BITS, wlo = lo / WORD_BITS;
	uint64_t word = map[w];

	if (hi % WORD_BITS != WORD_BITS - 1)
		word &= (2ULL << (hi % WORD_BITS)) - 1;
	for (;;) {
		if (w == wlo)
			word &= ~0ULL << (lo % WORD_BITS);
		if (word)
			return (int64_t)w * WORD_BITS + 63 -
			       __builtin_clzll(word);
		if (w == wlo)
			return -1;
		word = map[--w];
	}
}

uint32_t dlc_policy_victim(struct dlc_policy *p)
{
	uint64_t hi, mask = p->window - 1;
	uint32_t slo, shi;
	int64_t s;

	if (p->never_head != DLC_POLICY_NIL)
		return p->never_head;
	if (p->ncached == 0 || p->end == p->cursor)
		return DLC_POLICY_NIL;

	/* Live positions are cursor .. end - 1; nothing is set above top_hint. */
	hi = p->top_hint < p->end - 1 ? p->top_hint : p->end - 1;
	if (hi < p->cursor)
		return DLC_POLICY_NIL;
	slo = slot_of(p, p->cursor);
	shi = slot_of(p, hi);
	if (slo <= shi) {
		s = last_set(p->bitmap, slo, shi);
	} else {
		/* The range wraps: the slots from 0 are the later positions. */
		s = last_set(p->bitmap, 0, shi);
		if (s < 0)
			s = last_set(p->bitmap, slo, p->window - 1);
	}
	if (s < 0)
		return DLC_POLICY_NIL;
	p->top_hint = hi - ((shi - (uint64_t)s) & mask);
	return p->order[s];
}

int dlc_policy_prefer(const struct dlc_policy *p, uint32_t id,
		      uint32_t victim)
{
	return dlc_policy_next_use(p, id) < dlc_policy_next_use(p, victim);
}
