// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Next-use (Belady) cache policy over the known orders of several
 * consumers, merged in time. See policy.h.
 *
 * Invariants, for every used line L and sample id:
 *  - L.next_use[id] is the first position >= L.cursor where id is used
 *    in L, or NEVER when no known order of L uses it again;
 *  - live positions of L are [L.cursor, L.end), and L.end - L.cursor <=
 *    window, so a slot (pos % window) names one live position at most;
 * and for every cached id:
 *  - key[id] is min over active lines c of T_c(c.next_use[id]), or NEVER;
 *  - heap[hpos[id]] == id, and heap[] is a max-heap by key[].
 */
#include "policy.h"

#ifdef __KERNEL__
#include <linux/math64.h>
#include <linux/sched.h>
#endif

#define WORD_BITS 64

/*
 * Loops over positions or samples run up to DLC_POLICY_MAX_WINDOW or
 * DLC_POLICY_MAX_SAMPLES times (an epoch of 8M IDs, a rebuild over every
 * cached sample and every line): every 2^16 steps the kernel gives the
 * CPU away (its callers hold mutexes only). The state is consistent at
 * every step that yields; no lock is dropped.
 */
#define YIELD_MASK	0xffffU

static void maybe_yield(uint64_t step)
{
#ifdef __KERNEL__
	if (!(step & YIELD_MASK))
		cond_resched();
#else
	(void)step;
#endif
}

/* a / b, b > 0: the kernel has no 64-bit division operator on 32 bits. */
static uint64_t div_u64_u64(uint64_t a, uint64_t b)
{
#ifdef __KERNEL__
	return div64_u64(a, b);
#else
	return a / b;
#endif
}

/* a * b, or NEVER - 1 when that does not fit below NEVER. */
static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	uint64_t r;

	if (__builtin_mul_overflow(a, b, &r) || r >= DLC_POLICY_NEVER)
		return DLC_POLICY_NEVER - 1;
	return r;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	uint64_t r;

	if (__builtin_add_overflow(a, b, &r) || r >= DLC_POLICY_NEVER)
		return DLC_POLICY_NEVER - 1;
	return r;
}

static uint64_t round_window(uint32_t window)
{
	uint64_t w = WORD_BITS;

	while (w < window)
		w <<= 1;
	return w;
}

static int sizes_ok(uint32_t nsamples, uint32_t window)
{
	return nsamples && window && nsamples <= DLC_POLICY_MAX_SAMPLES &&
	       window <= DLC_POLICY_MAX_WINDOW;
}

size_t dlc_policy_line_mem_size(uint32_t nsamples, uint32_t window)
{
	uint64_t w, n = nsamples;

	if (!sizes_ok(nsamples, window))
		return 0;
	w = round_window(window);
	/* 8-byte arrays first so that every array stays aligned. */
	return (size_t)(w * 8 +			/* succ */
			n * 8 +			/* next_use */
			n * 8 +			/* last_pos */
			w * 4);			/* order */
}

/* The merged view: key, cached, hpos, heap (a multiple of 8 bytes). */
static size_t merged_mem_size(uint32_t nsamples)
{
	uint64_t n = nsamples;

	return (size_t)(n * 8 + (n + 63) / 64 * 8 + n * 4 + n * 4);
}

size_t dlc_policy_mem_size(uint32_t nsamples, uint32_t window)
{
	if (!sizes_ok(nsamples, window))
		return 0;
	return merged_mem_size(nsamples) +
	       dlc_policy_line_mem_size(nsamples, window);
}

/* An empty slot: no consumer, no memory. */
static void line_clear(struct dlc_policy_line *L)
{
	L->used = 0;
	L->active = 0;
	L->cursor = 0;
	L->end = 0;
	L->nepochs = 0;
	L->order = NULL;
	L->succ = NULL;
	L->next_use = NULL;
	L->last_pos = NULL;
}

/* Set up line @L over @m, active, anchored at (@now, 0), cost @cost. */
static void line_init(struct dlc_policy *p, struct dlc_policy_line *L,
		      unsigned char *m, uint64_t now, uint64_t cost)
{
	uint64_t w = p->window, i;

	line_clear(L);
	L->used = 1;
	L->active = 1;
	L->succ = (uint64_t *)m;
	m += w * 8;
	L->next_use = (uint64_t *)m;
	m += (size_t)p->nsamples * 8;
	L->last_pos = (uint64_t *)m;
	m += (size_t)p->nsamples * 8;
	L->order = (uint32_t *)m;
	for (i = 0; i < w; i++) {
		L->succ[i] = DLC_POLICY_NEVER;
		L->order[i] = DLC_POLICY_NIL;
		maybe_yield(i + 1);
	}
	for (i = 0; i < p->nsamples; i++) {
		L->next_use[i] = DLC_POLICY_NEVER;
		L->last_pos[i] = DLC_POLICY_NEVER;
		maybe_yield(i + 1);
	}
	L->t0 = now;
	L->p0 = 0;
	L->cost = cost;
	L->est = cost;
	L->measured = 0;
	L->rate_t = DLC_POLICY_NEVER;	/* from the first advance */
	L->rate_p = 0;
	L->sum_t = 0;
	L->sum_p = 0;
	L->seen = now;
}

int dlc_policy_init(struct dlc_policy *p, uint32_t nsamples, uint32_t window,
		    void *mem, size_t mem_size, uint64_t now)
{
	size_t need = dlc_policy_mem_size(nsamples, window);
	unsigned char *m = mem;
	uint32_t c;
	uint64_t i;

	if (!p || !mem || !need || mem_size < need ||
	    ((unsigned long)mem & 7))
		return -DLC_POLICY_EINVAL;

	p->nsamples = nsamples;
	p->window = (uint32_t)round_window(window);
	p->ncached = 0;
	p->nlines = 1;
	p->rebuilds = 0;
	for (c = 1; c < DLC_POLICY_MAX_CONSUMERS; c++)
		line_clear(&p->line[c]);

	p->key = (uint64_t *)m;
	m += (size_t)nsamples * 8;
	p->cached = (uint64_t *)m;
	m += (size_t)(nsamples + 63) / 64 * 8;
	p->hpos = (uint32_t *)m;
	m += (size_t)nsamples * 4;
	p->heap = (uint32_t *)m;
	m += (size_t)nsamples * 4;
	for (i = 0; i < nsamples; i++) {
		p->key[i] = DLC_POLICY_NEVER;
		p->hpos[i] = DLC_POLICY_NIL;
		p->heap[i] = DLC_POLICY_NIL;
		maybe_yield(i + 1);
	}
	for (i = 0; i < (nsamples + 63) / 64; i++)
		p->cached[i] = 0;

	line_init(p, &p->line[0], m, now, DLC_POLICY_DEFAULT_COST);
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

static const struct dlc_policy_line *get_line(const struct dlc_policy *p,
					      uint32_t c)
{
	if (c >= DLC_POLICY_MAX_CONSUMERS || !p->line[c].used)
		return NULL;
	return &p->line[c];
}

/* Predicted time of position @q of line @L (saturating below NEVER). */
static uint64_t line_time(const struct dlc_policy_line *L, uint64_t q)
{
	uint64_t d;

	if (q >= L->p0)
		return sat_add(L->t0, sat_mul(q - L->p0, L->cost));
	d = sat_mul(L->p0 - q, L->cost);
	return d >= L->t0 ? 0 : L->t0 - d;
}

/* The merged key of @id from the lines (not from key[]). */
static uint64_t compute_key(const struct dlc_policy *p, uint32_t id)
{
	uint64_t k = DLC_POLICY_NEVER;
	uint32_t c;

	for (c = 0; c < DLC_POLICY_MAX_CONSUMERS; c++) {
		const struct dlc_policy_line *L = &p->line[c];
		uint64_t t;

		if (!L->used || !L->active ||
		    L->next_use[id] == DLC_POLICY_NEVER)
			continue;
		t = line_time(L, L->next_use[id]);
		if (t < k)
			k = t;
	}
	return k;
}

/* ---- The max-heap of cached samples by key ---- */

static void heap_set(struct dlc_policy *p, uint32_t i, uint32_t id)
{
	p->heap[i] = id;
	p->hpos[id] = i;
}

static void sift_up(struct dlc_policy *p, uint32_t i)
{
	uint32_t id = p->heap[i];
	uint64_t k = p->key[id];

	while (i > 0) {
		uint32_t parent = (i - 1) / 2;

		if (p->key[p->heap[parent]] >= k)
			break;
		heap_set(p, i, p->heap[parent]);
		i = parent;
	}
	heap_set(p, i, id);
}

static void sift_down(struct dlc_policy *p, uint32_t i)
{
	uint32_t id = p->heap[i], n = p->ncached;
	uint64_t k = p->key[id];

	for (;;) {
		uint32_t l = 2 * i + 1, big;

		if (l >= n)
			break;
		big = l;
		if (l + 1 < n && p->key[p->heap[l + 1]] > p->key[p->heap[l]])
			big = l + 1;
		if (p->key[p->heap[big]] <= k)
			break;
		heap_set(p, i, p->heap[big]);
		i = big;
	}
	heap_set(p, i, id);
}

/* Recompute the key of cached @id and restore the heap. */
static void rekey(struct dlc_policy *p, uint32_t id)
{
	uint64_t k = compute_key(p, id), old = p->key[id];

	if (k == old)
		return;
	p->key[id] = k;
	if (k > old)
		sift_up(p, p->hpos[id]);
	else
		sift_down(p, p->hpos[id]);
}

/* Recompute every cached key and heapify. */
static void rebuild(struct dlc_policy *p)
{
	uint32_t i;

	for (i = 0; i < p->ncached; i++) {
		p->key[p->heap[i]] = compute_key(p, p->heap[i]);
		maybe_yield(i + 1);
	}
	for (i = p->ncached / 2; i-- > 0;) {
		sift_down(p, i);
		maybe_yield(i);
	}
	p->rebuilds++;
}

/* ---- Consumers ---- */

int dlc_policy_add_consumer(struct dlc_policy *p, void *mem, size_t mem_size,
			    uint64_t now)
{
	size_t need;
	uint64_t sum = 0, n = 0, cost = DLC_POLICY_DEFAULT_COST;
	uint32_t c, slot = 0;

	if (!p || !mem || ((unsigned long)mem & 7))
		return -DLC_POLICY_EINVAL;
	need = dlc_policy_line_mem_size(p->nsamples, p->window);
	if (!need || mem_size < need)
		return -DLC_POLICY_EINVAL;
	for (c = 0; c < DLC_POLICY_MAX_CONSUMERS; c++) {
		const struct dlc_policy_line *L = &p->line[c];

		if (!L->used) {
			if (!slot)
				slot = c;
			continue;
		}
		if (L->active && L->measured) {
			sum += L->cost;
			n++;
		}
	}
	if (!slot)
		return -DLC_POLICY_ENOSPC;
	if (n)
		cost = div_u64_u64(sum, n);
	/* No orders yet: no key changes. */
	line_init(p, &p->line[slot], mem, now, cost);
	p->nlines++;
	return (int)slot;
}

void dlc_policy_remove_consumer(struct dlc_policy *p, uint32_t c)
{
	struct dlc_policy_line *L;
	int was_active;

	if (c == 0 || c >= DLC_POLICY_MAX_CONSUMERS || !p->line[c].used)
		return;
	L = &p->line[c];
	was_active = L->active;
	line_clear(L);
	p->nlines--;
	if (was_active)
		rebuild(p);
}

/* ---- Orders ---- */

int dlc_policy_add_epoch(struct dlc_policy *p, uint32_t c, uint32_t epoch,
			 const uint32_t *ids, uint32_t len)
{
	struct dlc_policy_line *L;
	struct dlc_policy_epoch *e;
	uint32_t i;

	if (c >= DLC_POLICY_MAX_CONSUMERS || !p->line[c].used)
		return -DLC_POLICY_EINVAL;
	L = &p->line[c];
	if (!ids || !len)
		return -DLC_POLICY_EINVAL;
	if (L->nepochs && epoch <= L->epochs[L->nepochs - 1].epoch)
		return -DLC_POLICY_EINVAL;
	for (i = 0; i < len; i++) {
		if (ids[i] >= p->nsamples)
			return -DLC_POLICY_EINVAL;
		maybe_yield(i + 1);
	}
	if (L->nepochs == DLC_POLICY_MAX_EPOCHS ||
	    L->end - L->cursor + len > p->window)
		return -DLC_POLICY_ENOSPC;

	for (i = 0; i < len; i++) {
		uint64_t q = L->end + i, lp;
		uint32_t id = ids[i], s = slot_of(p, q);

		L->order[s] = id;
		L->succ[s] = DLC_POLICY_NEVER;
		lp = L->last_pos[id];
		if (lp != DLC_POLICY_NEVER && lp >= L->cursor) {
			/* Still live: its next use is already known. */
			L->succ[slot_of(p, lp)] = q;
		} else {
			/* From no known use to q: a nearer key. */
			L->next_use[id] = q;
			if (L->active && test_bit64(p->cached, id))
				rekey(p, id);
		}
		L->last_pos[id] = q;
		maybe_yield(i + 1);
	}

	e = &L->epochs[L->nepochs++];
	e->epoch = epoch;
	e->len = len;
	e->base = L->end;
	L->end += len;
	return 0;
}

int dlc_policy_position(const struct dlc_policy *p, uint32_t c,
			uint32_t epoch, uint32_t index, uint64_t *pos)
{
	const struct dlc_policy_line *L = get_line(p, c);
	uint32_t i;

	if (!L)
		return -DLC_POLICY_ENOENT;
	for (i = 0; i < L->nepochs; i++) {
		const struct dlc_policy_epoch *e = &L->epochs[i];

		if (e->epoch == epoch && index < e->len) {
			*pos = e->base + index;
			return 0;
		}
	}
	return -DLC_POLICY_ENOENT;
}

uint32_t dlc_policy_sample_at(const struct dlc_policy *p, uint32_t c,
			      uint64_t pos)
{
	const struct dlc_policy_line *L = get_line(p, c);

	if (!L || pos < L->cursor || pos >= L->end)
		return DLC_POLICY_NIL;
	return L->order[slot_of(p, pos)];
}

/* What measure() asks of a line's anchor. */
enum {
	ANCHOR_KEEP,	/* nothing */
	ANCHOR_PACE,	/* a new cost: turn the line, keep its phase */
	ANCHOR_CLOCK,	/* the cursor's time is off the clock: restart */
};

/*
 * Measure @L's cost when a span has passed. Returns ANCHOR_CLOCK when the
 * predicted time of the cursor is off the clock by more than a quarter of
 * the window's time, ANCHOR_PACE when the estimate is a first
 * measurement or moved by more than a quarter from the cost in use, else
 * ANCHOR_KEEP.
 */
static int measure(const struct dlc_policy *p, struct dlc_policy_line *L,
		   uint64_t now)
{
	uint64_t t, off;

	if (L->rate_t == DLC_POLICY_NEVER) {
		/*
		 * A new or reactivated consumer: time spent before its first
		 * step is no cost, the span starts with this step.
		 */
		L->rate_t = now;
		L->rate_p = L->cursor;
	} else if (L->cursor > L->rate_p && now >= L->rate_t &&
		   now - L->rate_t >= DLC_POLICY_RATE_SPAN) {
		uint64_t q, r, h = DLC_POLICY_RATE_POSITIONS;

		L->sum_t = sat_add(L->sum_t, now - L->rate_t);
		L->sum_p += L->cursor - L->rate_p;
		L->rate_t = now;
		L->rate_p = L->cursor;
		if (L->sum_p > h) {
			/* Scale to the last h positions: sum_t * h / sum_p. */
			q = div_u64_u64(L->sum_t, L->sum_p);
			r = L->sum_t - q * L->sum_p;
			L->sum_t = sat_add(sat_mul(q, h),
					   div_u64_u64(r * h, L->sum_p));
			L->sum_p = h;
		}
		L->est = div_u64_u64(L->sum_t, L->sum_p);
		if (!L->est)
			L->est = 1;
		if (!L->measured)
			/* The first measurement is the cost. */
			return ANCHOR_PACE;
	}
	t = line_time(L, L->cursor);
	off = t > now ? t - now : now - t;
	if (off > sat_mul(L->cost, p->window / 4))
		return ANCHOR_CLOCK;
	off = L->est > L->cost ? L->est - L->cost : L->cost - L->est;
	return off > L->cost / 4 ? ANCHOR_PACE : ANCHOR_KEEP;
}

void dlc_policy_advance(struct dlc_policy *p, uint32_t c, uint64_t pos,
			uint64_t now)
{
	struct dlc_policy_line *L;
	uint32_t i, drop = 0;
	int reanchor = 0, keys, how, first;
	uint64_t q, base;

	if (c >= DLC_POLICY_MAX_CONSUMERS || !p->line[c].used)
		return;
	L = &p->line[c];
	if (!L->active) {
		L->active = 1;
		/* The stall is no cost: measure from here. */
		L->rate_t = DLC_POLICY_NEVER;
		reanchor = 1;
	}
	if (now > L->seen)
		L->seen = now;

	if (pos > L->end)
		pos = L->end;
	/*
	 * The first use of an epoch restarts the line's time there. A loader
	 * looks up a read-ahead's worth of an epoch at its start and pauses
	 * before its end while the last reads drain, so a line is a straight
	 * line only between epoch starts: anchored anywhere else (in a pause,
	 * or just after a burst) its prediction is off by up to that
	 * read-ahead's time, and by a different amount on each rank that
	 * drifts, which ranks one rank's uses before the other's wrongly.
	 * Anchored at every epoch's start, the ranks of one job are all off
	 * alike, and their order in time holds.
	 */
	base = DLC_POLICY_NEVER;
	for (i = 0; i < L->nepochs; i++)
		if (L->epochs[i].base >= L->cursor && L->epochs[i].base < pos)
			base = L->epochs[i].base;
	/* Keys of this line are redone below when it is re-anchored. */
	keys = !reanchor && base == DLC_POLICY_NEVER;

	for (q = L->cursor; q < pos; q++) {
		uint32_t s = slot_of(p, q), id = L->order[s];

		maybe_yield(q - L->cursor + 1);
		if (L->next_use[id] != q)
			continue;
		L->next_use[id] = L->succ[s];
		if (keys && test_bit64(p->cached, id))
			rekey(p, id);
	}
	if (pos > L->cursor)
		L->cursor = pos;

	while (drop < L->nepochs &&
	       L->epochs[drop].base + L->epochs[drop].len <= L->cursor)
		drop++;
	if (drop) {
		for (i = drop; i < L->nepochs; i++)
			L->epochs[i - drop] = L->epochs[i];
		L->nepochs -= drop;
	}

	how = measure(p, L, now);
	first = how == ANCHOR_PACE && !L->measured;
	if (how == ANCHOR_PACE)
		L->measured = 1;
	if (reanchor || how == ANCHOR_CLOCK) {
		/* Back from a stall, or off the clock: from here and now. */
		if (L->measured)
			L->cost = L->est;
		L->t0 = now;
		L->p0 = L->cursor;
	} else if (base != DLC_POLICY_NEVER) {
		if (how == ANCHOR_PACE)
			L->cost = L->est;
		/* The cursor passed the epoch's first position now. */
		L->t0 = now;
		L->p0 = base + 1;
	} else if (how == ANCHOR_PACE) {
		/*
		 * A new pace turns the line: about its anchor on the first
		 * measurement (the epoch's start), else about the predicted
		 * time of the cursor, so that the phase set at the epoch's
		 * start stays.
		 */
		if (!first) {
			L->t0 = line_time(L, L->cursor);
			L->p0 = L->cursor;
		}
		L->cost = L->est;
	} else {
		return;
	}
	rebuild(p);
}

uint32_t dlc_policy_expire(struct dlc_policy *p, uint64_t now,
			   uint64_t stall)
{
	uint32_t c, n = 0;

	for (c = 0; c < DLC_POLICY_MAX_CONSUMERS; c++) {
		struct dlc_policy_line *L = &p->line[c];

		if (!L->used || !L->active)
			continue;
		if (sat_add(L->seen, stall) < now) {
			L->active = 0;
			n++;
		}
	}
	if (n)
		rebuild(p);
	return n;
}

/* ---- Samples ---- */

uint64_t dlc_policy_next_use(const struct dlc_policy *p, uint32_t c,
			     uint32_t id)
{
	const struct dlc_policy_line *L = get_line(p, c);

	if (!L || id >= p->nsamples)
		return DLC_POLICY_NEVER;
	return L->next_use[id];
}

int dlc_policy_used_before(const struct dlc_policy *p, uint32_t c,
			   uint64_t pos, uint32_t id)
{
	const struct dlc_policy_line *L = get_line(p, c);
	uint64_t mine;
	uint32_t o;

	if (!L || id >= p->nsamples)
		return 0;
	if (L->next_use[id] < pos)
		return 1;
	mine = line_time(L, pos);
	for (o = 0; o < DLC_POLICY_MAX_CONSUMERS; o++) {
		const struct dlc_policy_line *O = &p->line[o];

		if (o == c || !O->used || !O->active ||
		    O->next_use[id] == DLC_POLICY_NEVER)
			continue;
		if (line_time(O, O->next_use[id]) < mine)
			return 1;
	}
	return 0;
}

uint64_t dlc_policy_key(const struct dlc_policy *p, uint32_t id)
{
	if (id >= p->nsamples)
		return DLC_POLICY_NEVER;
	if (test_bit64(p->cached, id))
		return p->key[id];
	return compute_key(p, id);
}

uint64_t dlc_policy_first(const struct dlc_policy *p, uint32_t c)
{
	const struct dlc_policy_line *L = get_line(p, c);
	uint64_t first;

	if (!L)
		return 0;
	if (!L->nepochs)
		return L->end;
	/* The epochs forgotten are wholly consumed: no epoch to name. */
	first = L->epochs[0].base;
	if (L->end > p->window && first < L->end - p->window)
		first = L->end - p->window;
	return first;
}

uint32_t dlc_policy_read_order(const struct dlc_policy *p, uint32_t c,
			       uint64_t from, uint32_t *ids, uint32_t len)
{
	const struct dlc_policy_line *L = get_line(p, c);
	uint32_t i;

	if (!L || from < dlc_policy_first(p, c) || from >= L->end)
		return 0;
	if (len > L->end - from)
		len = (uint32_t)(L->end - from);
	for (i = 0; i < len; i++) {
		ids[i] = L->order[slot_of(p, from + i)];
		maybe_yield(i + 1);
	}
	return len;
}

uint64_t dlc_policy_time(const struct dlc_policy *p, uint32_t c,
			 uint64_t pos)
{
	const struct dlc_policy_line *L = get_line(p, c);

	return L ? line_time(L, pos) : DLC_POLICY_NEVER;
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
	p->key[id] = compute_key(p, id);
	heap_set(p, p->ncached++, id);
	sift_up(p, p->ncached - 1);
	return 0;
}

int dlc_policy_remove(struct dlc_policy *p, uint32_t id)
{
	uint32_t i, last;

	if (id >= p->nsamples)
		return -DLC_POLICY_EINVAL;
	if (!test_bit64(p->cached, id))
		return 0;
	clear_bit64(p->cached, id);
	i = p->hpos[id];
	last = p->heap[--p->ncached];
	p->hpos[id] = DLC_POLICY_NIL;
	p->heap[p->ncached] = DLC_POLICY_NIL;
	p->key[id] = DLC_POLICY_NEVER;
	if (i < p->ncached) {
		heap_set(p, i, last);
		sift_up(p, i);
		sift_down(p, p->hpos[last]);
	}
	return 0;
}

uint32_t dlc_policy_victim(const struct dlc_policy *p)
{
	return p->ncached ? p->heap[0] : DLC_POLICY_NIL;
}

int dlc_policy_prefer(const struct dlc_policy *p, uint32_t id,
		      uint32_t victim)
{
	return dlc_policy_key(p, id) < dlc_policy_key(p, victim);
}
