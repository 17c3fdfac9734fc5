// SPDX-License-Identifier: MIT
/*
 * The peer tier's bookkeeping (peer_int.h says how its files layer): each
 * sample's owner, placed at open and re-placed when a rank dies; the samples this rank owns
 * and keeps (the share); the sources' measured rates and the reads
 * they divert from slow peers (Lobster's balancing); the log; the end of
 * the state. No MPI call and no thread of its own; it calls nothing in
 * peer.c or peer_service.c, whose threads call in under the lock each
 * function names.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "peer_int.h"

/*
 * The peer's log: the loader's callback, under log_lock, until close
 * returned (the detached thread's lines after that are dropped).
 * Any thread, the peer's lock held or not (log_lock is taken after it).
 */
void peer_log(struct dlc_peer *p, int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&p->log_lock);
	if (!p->log_closed)
		dlc_logf(&p->log, level, "%s", msg);
	pthread_mutex_unlock(&p->log_lock);
}

/*
 * Sample @id's bytes are @b: the index's size, and its CRC when it has one.
 * Called by peer_service.c and peer.c without the lock (a CRC).
 */
int peer_sample_ok(const struct dlc_peer *p, uint32_t id,
		   const struct dlc_buf *b)
{
	return id < p->n && b->len == p->size[id] &&
	       (!p->has_crc[id] || dlc_buf_crc_matches(b, p->crc[id]));
}

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/*
 * The owners: samples in a hashed order, each to the rank that owns the
 * fewest bytes so far, so that every share is within one sample of
 * N / world bytes (a plain hash leaves them a few per cent apart, and a
 * share of exactly its fair bytes then overflows). Every rank computes
 * the same from the same index.
 */
struct hashed {
	uint64_t key;
	uint32_t id;
};

static int by_key(const void *a, const void *b)
{
	const struct hashed *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

/*
 * Sample @id's backup when @owner is a straggler (peer_int.h, "Backups"):
 * a rank other than @owner picked by the sample's hash, the next one on
 * when it is dead or has no room for the sample above the bytes it owns;
 * NO_RANK when no other rank may be. A function of @id, @owner, the dead
 * ranks and the capacities sent at open alone, so ranks that agree on
 * who died agree on every backup. Any thread: without the lock, a death
 * may come after.
 */
uint32_t peer_backup(const struct dlc_peer *p, uint32_t id, uint32_t owner)
{
	uint32_t k, b, i, others = p->world - 1;

	if (!others || owner >= p->world || id >= p->n)
		return NO_RANK;
	/* Salted: not the placement's order, so a share's backups spread. */
	k = (uint32_t)(mix64((uint64_t)id ^ 0x6261636b7570ULL) % others);
	for (i = 0; i < others; i++) {
		b = (owner + 1 + (k + i) % others) % p->world;
		if (!__atomic_load_n(&p->dead[b], __ATOMIC_RELAXED) &&
		    __atomic_load_n(&p->spare[b], __ATOMIC_RELAXED) >=
		    p->size[id])
			return b;
	}
	return NO_RANK;
}

/*
 * Each rank's room for backups: its capacity less @owned[rank], the bytes
 * it owns. Called by peer_place() and peer_replace_locked(), before
 * max_answer().
 */
static void spare_room(struct dlc_peer *p, const uint64_t *owned)
{
	uint32_t r;

	for (r = 0; r < p->world; r++)
		__atomic_store_n(&p->spare[r], p->cap[r] > owned[r] ?
				 p->cap[r] - owned[r] : 0, __ATOMIC_RELAXED);
}

/*
 * Per rank, the largest sample it may answer with: one it owns, or one
 * it is the backup of. Only grows, so that an answer to a request sent
 * before a re-placement still fits. Called by peer_place() and
 * peer_replace_locked().
 */
static void max_answer(struct dlc_peer *p)
{
	uint32_t id, o, b;

	for (id = 0; id < p->n; id++) {
		o = p->owner[id];
		b = peer_backup(p, id, o);
		if (p->size[id] > p->max_owned[o])
			p->max_owned[o] = p->size[id];
		if (b != NO_RANK && p->size[id] > p->max_owned[b])
			p->max_owned[b] = p->size[id];
	}
}

/*
 * Called by dlc_peer_open() (peer.c) before any thread starts, once
 * p->cap holds every rank's capacity.
 */
int peer_place(struct dlc_peer *p)
{
	struct hashed *h = malloc(sizeof(*h) * p->n);
	uint64_t *bytes = calloc(p->world, sizeof(*bytes));
	uint32_t i, r, best;

	if (!h || !bytes) {
		free(h);
		free(bytes);
		return -ENOMEM;
	}
	for (i = 0; i < p->n; i++)
		h[i] = (struct hashed){ mix64(i), i };
	qsort(h, p->n, sizeof(*h), by_key);
	for (i = 0; i < p->n; i++) {
		best = 0;
		for (r = 1; r < p->world; r++)
			if (bytes[r] < bytes[best])
				best = r;
		p->owner[h[i].id] = best;
		p->home[h[i].id] = best;
		p->placed[i] = h[i].id;
		bytes[best] += p->size[h[i].id];
	}
	memcpy(p->home_bytes, bytes, sizeof(*bytes) * p->world);
	p->owned_bytes = bytes[p->rank];
	spare_room(p, bytes);
	max_answer(p);
	free(h);
	free(bytes);
	return 0;
}

/* Called with the lock held: sample @id's bytes held are let go. */
static void drop_held_locked(struct dlc_peer *p, uint32_t id)
{
	if (p->backup[id])
		p->backup_used -= p->share[id]->len;
	else
		p->used -= p->share[id]->len;
	p->backup[id] = 0;
	dlc_buf_put(p->share[id]);
	p->share[id] = NULL;
}

/*
 * A dead rank's share, re-placed over the living: every sample the
 * placement gave a rank now dead goes, in the placement's order, to the
 * living rank that owns the fewest bytes, counting from what the
 * placement gave each. So the owners are a function of the set of dead
 * ranks alone: ranks that agree on who died agree on every owner, and
 * only the dead ranks' samples move. A rank that has not yet taken the
 * same rank for dead answers a request for a sample it does not own with
 * a miss, and refuses a push of one: storage's bytes, never wrong ones.
 * The new owners keep those samples as they read them or are sent them
 * (peer_admit_locked()), within their capacity, so that they stop coming
 * from storage from the next epoch on. Returns how many samples this
 * rank now owns that it did not at open.
 * Called with the lock held by mark_dead() (peer_service.c), the service
 * thread's, which alone reads max_owned outside it.
 */
uint32_t peer_replace_locked(struct dlc_peer *p)
{
	uint32_t i, r, id, best, mine = 0;

	memcpy(p->re_bytes, p->home_bytes, sizeof(*p->re_bytes) * p->world);
	for (i = 0; i < p->n; i++) {
		id = p->placed[i];
		if (!p->dead[p->home[id]])
			continue;
		best = p->rank;		/* never dead in its own view */
		for (r = 0; r < p->world; r++)
			if (!p->dead[r] && p->re_bytes[r] < p->re_bytes[best])
				best = r;
		__atomic_store_n(&p->owner[id], best, __ATOMIC_RELAXED);
		p->re_bytes[best] += p->size[id];
		mine += best == p->rank;
	}
	p->owned_bytes = p->re_bytes[p->rank];
	spare_room(p, p->re_bytes);
	max_answer(p);
	/*
	 * The backups moved with the dead, and this rank's room for them
	 * shrank with what it now owns: they are dropped, and taken in again
	 * as the reads of stragglers' samples come by.
	 */
	for (id = 0; id < p->n; id++)
		if (p->backup[id])
			drop_held_locked(p, id);
	p->no_spare = 0;
	memset(p->peer_no_spare, 0, p->world);
	return mine;
}

/* ---- the share ---- */

/*
 * Take @b as the bytes of @id when this rank owns it and there is room.
 * @ok: peer_sample_ok(), computed before the lock was taken (a CRC of a large
 * sample under it would stall the I/O thread); bytes that fail it are
 * never admitted.
 * Called with the lock held by pushed_in() (peer_service.c), peer_offer() (peer.c).
 */
void peer_admit_locked(struct dlc_peer *p, uint32_t id,
		       const struct dlc_buf *b, int ok)
{
	struct dlc_buf *keep;
	uint32_t owner;
	int backup;

	if (!ok || id >= p->n || p->share[id] || b->len != p->size[id])
		return;
	owner = peer_owner(p, id);
	backup = owner != p->rank;
	if (backup) {
		/* peer_int.h, "Backups": the room above what this rank owns. */
		if (!p->balancing || peer_backup(p, id, owner) != p->rank)
			return;
		if (p->backup_used + b->len > p->spare[p->rank]) {
			p->no_spare = 1;
			return;
		}
	} else if (p->used + b->len > p->c.capacity) {
		p->full = 1;
		return;
	}
	/* An exact copy: what the share accounts is what it holds. */
	keep = dlc_buf_alloc(b->len);
	if (!keep)
		return;
	memcpy(keep->data, b->data, b->len);
	/* The CRC checked is the copy's too: answers need not redo it. */
	keep->crc_memo = __atomic_load_n(&b->crc_memo, __ATOMIC_RELAXED);
	p->share[id] = keep;
	if (backup) {
		p->backup[id] = 1;
		p->backup_used += b->len;
	} else {
		p->used += b->len;
		p->c.admitted++;
	}
}

/*
 * Called with the lock held: the share's bytes @b of @id failed their
 * check (memory went bad under them): never served again.
 * Called by answer() (peer_service.c) and peer_served() (peer.c).
 */
void peer_drop_share_locked(struct dlc_peer *p, uint32_t id,
			    const struct dlc_buf *b)
{
	if (id >= p->n || !p->share[id] || p->share[id] != b)
		return;
	drop_held_locked(p, id);
	p->c.share_dropped++;
	if (!p->said_dropped++)
		peer_log(p, DLC_LOG_WARN,
			 "cluster: this rank's cached bytes of sample %u are not the indexed file's: dropped from the share (counted; not logged again)",
			 id);
}

/* ---- the rates ---- */

/*
 * Called with the lock held: a request to source @r for @len bytes (the
 * index's size) is out. Called by peer_queue() (peer.c) and
 * peer_to_storage().
 */
void peer_rate_start(struct rate *r, uint64_t now, uint64_t len)
{
	if (r->inflight && now - r->last > RATE_STALE_NS) {
		/* Requests that never ended (a failed storage read). */
		r->inflight = 0;
		r->out = 0;
		r->busy = r->bytes = 0;
	}
	if (!r->inflight++)
		r->since = now;
	r->out += len;
	if (!r->last)
		r->last = now;
}

/*
 * Called with the lock held: a request to source @r for @len bytes ended
 * with @bytes delivered. Called by finish_slot() (peer_service.c) and
 * peer_offer() (peer.c).
 */
void peer_rate_end(struct rate *r, uint64_t now, uint64_t len,
		   uint64_t bytes)
{
	uint64_t busy;

	if (!r->inflight)
		return;
	r->last = now;
	r->bytes += bytes;
	r->out -= len < r->out ? len : r->out;
	if (!--r->inflight) {
		r->busy += now - r->since;
		r->since = now;
		r->out = 0;
	}
	busy = r->busy + (r->inflight ? now - r->since : 0);
	if (busy < RATE_WINDOW_NS)
		return;
	bytes = r->bytes * 1000000000ULL / busy;
	r->bps = r->bps ? r->bps - r->bps / 4 + bytes / 4 : bytes;
	r->busy = r->bytes = 0;
	r->since = now;
}

/*
 * Called with the lock held: whether peer @owner is a straggler, measured
 * BAL_SLOWER times slower than storage or than the mean of the other live
 * peers measured (peer_int.h, "Lobster's balancing"); O(world). Called
 * by peer_divert_locked(), peer_route_locked() and peer_offer() (peer.c).
 */
int peer_slow_locked(const struct dlc_peer *p, uint32_t owner)
{
	uint64_t s = p->rate[p->world].bps, r = p->rate[owner].bps, sum = 0;
	uint32_t i, n = 0;

	if (!p->balancing || !r)
		return 0;
	if (s && BAL_SLOWER * r < s)
		return 1;
	for (i = 0; i < p->world; i++)
		if (i != owner && i != p->rank && !p->dead[i] &&
		    p->rate[i].bps) {
			sum += p->rate[i].bps;
			n++;
		}
	return n && BAL_SLOWER * r * n < sum;
}

/*
 * Called with the lock held: whether storage would complete sample @id
 * sooner than peer @owner, a straggler past its probes, by their
 * expected completion times, while reads hold this rank's consumer up;
 * counted as a divert when it would. Called by peer_divert_locked() and
 * peer_route_locked(), after their straggler test.
 */
static int storage_sooner_locked(struct dlc_peer *p, uint32_t owner,
				 uint32_t id)
{
	struct rate *r = &p->rate[owner];
	const struct rate *s = &p->rate[p->world];
	double len = (double)p->size[id];

	if (!s->bps || !peer_reads_hold_up(p) || !r->bps ||
	    ((double)s->out + len) / (double)s->bps >=
	    ((double)r->out + len) / (double)r->bps)
		return 0;
	r->diverted++;
	p->c.peer_diverted++;
	return 1;
}

/*
 * Called with the lock held: whether sample @id, which peer @owner owns,
 * is read from storage instead: @owner is a straggler past its probes
 * and storage would be sooner (peer_int.h, "Lobster's balancing");
 * counted when it is. Called by test_balance.c; the tier goes through
 * peer_route_locked().
 */
int peer_divert_locked(struct dlc_peer *p, uint32_t owner, uint32_t id)
{
	/* The straggler test, O(world), after the cheap ones. */
	return p->rate[p->world].bps && peer_reads_hold_up(p) &&
	       p->rate[owner].inflight >= BAL_PROBES &&
	       peer_slow_locked(p, owner) &&
	       storage_sooner_locked(p, owner, id);
}

/*
 * Called with the lock held: whether @b, a backup of straggler @owner's
 * samples, is another rank this one measured BAL_SLOWER times faster
 * than @owner. Measured against the owner, not as "no straggler": a rank
 * behind a slow link of its own sees every peer alike, a backup no
 * sooner than the owner, and the backups hold only the samples of owners
 * the other ranks find slow (a miss there is a storage read). Called by
 * peer_route_locked() and peer_offer() (peer.c).
 */
int peer_backup_faster_locked(const struct dlc_peer *p, uint32_t owner,
			      uint32_t b)
{
	return b != NO_RANK && b != p->rank && !p->dead[b] &&
	       p->rate[b].bps > BAL_SLOWER * p->rate[owner].bps;
}

/*
 * Called with the lock held: where a read of sample @id, which peer
 * @owner owns, goes (peer_int.h, "Lobster's balancing" and "Backups"):
 * @owner; its backup, when @owner is a straggler past its probes and the
 * backup is measured faster (this rank only when it holds the bytes); or
 * NO_RANK, storage, when it would be sooner (peer_divert_locked()'s
 * rule, its straggler test made once). Counted. Called by
 * peer_queue() (peer.c).
 */
uint32_t peer_route_locked(struct dlc_peer *p, uint32_t owner, uint32_t id)
{
	uint32_t b;

	if (!p->balancing || p->rate[owner].inflight < BAL_PROBES ||
	    !peer_slow_locked(p, owner))
		return owner;
	b = peer_backup(p, id, owner);
	if (b == p->rank && p->share[id]) {
		p->c.backup_asked++;
		p->c.backup_hits++;
		return b;
	}
	if (peer_backup_faster_locked(p, owner, b)) {
		p->c.backup_asked++;
		return b;
	}
	return storage_sooner_locked(p, owner, id) ? NO_RANK : owner;
}

/*
 * Called with the lock held: sample @id's read goes to storage now.
 * Called by peer_queue() and peer_served() (peer.c).
 */
void peer_to_storage(struct dlc_peer *p, uint32_t id)
{
	if (p->to_origin[id])
		return;
	p->to_origin[id] = 1;
	peer_rate_start(&p->rate[p->world], dlc_now_ns(), p->size[id]);
}

/*
 * The rates measured, as one INFO line: what the balancing saw.
 * Called by dlc_peer_close() (peer.c) with the lock held.
 */
void peer_log_rates(struct dlc_peer *p)
{
	char line[512];
	size_t n = 0;
	uint32_t i;

	for (i = 0; i < p->world && n < sizeof(line) - 40; i++)
		if (i != p->rank)
			n += (size_t)snprintf(line + n, sizeof(line) - n,
					      " %u: %.1f (%llu reads to storage)",
					      i, (double)p->rate[i].bps / 1e6,
					      (unsigned long long)p->rate[i].diverted);
	peer_log(p, DLC_LOG_INFO,
		 "cluster: rates measured, MB/s: storage %.1f; peers%s",
		 (double)p->rate[p->world].bps / 1e6, n ? line : " none");
}

/* ---- the end ---- */

/* Called without the lock by peer_put(), and by dlc_peer_open() (peer.c) failing. */
void peer_free(struct dlc_peer *p)
{
	uint32_t i;

	for (i = 0; i < p->nslots; i++) {
		if (p->slot[i].efd >= 0)
			close(p->slot[i].efd);
		dlc_buf_put(p->slot[i].buf);
	}
	if (p->share)
		for (i = 0; i < p->n; i++)
			dlc_buf_put(p->share[i]);
	for (i = 0; i < p->plen; i++)
		dlc_buf_put(p->push[(p->phead + i) % PUSHES].b);
	/* Left to MPI by close: it may still own what its operations hold. */
	if (!orphaned(p))
		for (i = 0; i < p->nops; i++) {
			free(p->ops[i].mem);
			dlc_buf_put(p->ops[i].b);
		}
	free(p->slot);
	free(p->reqs);
	free(p->req_peer);
	free(p->ops);
	free(p->grave);
	free(p->share);
	free(p->backup);
	free(p->ours);
	free(p->owner);
	free(p->home);
	free(p->placed);
	free(p->home_bytes);
	free(p->re_bytes);
	free(p->dead);
	free(p->peer_full);
	free(p->peer_no_spare);
	free(p->bye);
	free(p->rate);
	free(p->to_origin);
	free(p->size);
	free(p->crc);
	free(p->has_crc);
	free(p->max_owned);
	free(p->cap);
	free(p->spare);
	pthread_cond_destroy(&p->done_cv);
	pthread_cond_destroy(&p->prep_cv);
	peer_prepare_free(p);
	pthread_cond_destroy(&p->wd_cv);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->log_lock);
	free(p);
}

/*
 * Drop a reference to @p: the last one frees it.
 * Called without the lock by the service thread at its end and dlc_peer_close().
 */
void peer_put(struct dlc_peer *p)
{
	if (!__atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL))
		peer_free(p);
}
