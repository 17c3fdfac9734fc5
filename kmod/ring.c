// SPDX-License-Identifier: GPL-2.0
/*
 * dlcache ring helpers: region layout, index arithmetic, SQE validation.
 *
 * The user side of each ring (SQ tail, CQ head) lives in memory user space
 * can write at any time, so it is read once per use and never trusted:
 * the number of entries it implies is clamped to the ring size. Entries
 * are copied out of the shared memory before they are checked.
 */
#include <linux/build_bug.h>
#include <linux/cache.h>
#include <linux/compiler.h>
#include <linux/errno.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/stddef.h>
#include <linux/string.h>

#include "dlc.h"

/* Offset of the entry array: past the control block, cache aligned. */
static size_t dlc_ring_entries_off(void)
{
	return ALIGN(sizeof(struct dlc_ring_ctl), L1_CACHE_BYTES);
}

/* Bytes of a ring region with @nentries entries of @entry_size bytes. */
size_t dlc_ring_bytes(u32 nentries, size_t entry_size)
{
	return PAGE_ALIGN(dlc_ring_entries_off() + nentries * entry_size);
}

/* Set up @r over zeroed @mem and write the constant control fields. */
void dlc_ring_init(struct dlc_ring *r, void *mem, size_t size, u32 nentries)
{
	r->mem = mem;
	r->size = size;
	r->ctl = mem;
	r->entries = (char *)mem + dlc_ring_entries_off();
	r->nentries = nentries;
	r->mask = nentries - 1;
	r->kidx = 0;
	WRITE_ONCE(r->ctl->ring_mask, r->mask);
	WRITE_ONCE(r->ctl->ring_entries, nentries);
}

void dlc_ring_sq_offsets(struct dlcache_sqring_offsets *o)
{
	memset(o, 0, sizeof(*o));
	o->head = offsetof(struct dlc_ring_ctl, head);
	o->tail = offsetof(struct dlc_ring_ctl, tail);
	o->ring_mask = offsetof(struct dlc_ring_ctl, ring_mask);
	o->ring_entries = offsetof(struct dlc_ring_ctl, ring_entries);
	o->flags = offsetof(struct dlc_ring_ctl, flags);
	o->dropped = offsetof(struct dlc_ring_ctl, aux);
	o->sqes = dlc_ring_entries_off();
}

void dlc_ring_cq_offsets(struct dlcache_cqring_offsets *o)
{
	memset(o, 0, sizeof(*o));
	o->head = offsetof(struct dlc_ring_ctl, head);
	o->tail = offsetof(struct dlc_ring_ctl, tail);
	o->ring_mask = offsetof(struct dlc_ring_ctl, ring_mask);
	o->ring_entries = offsetof(struct dlc_ring_ctl, ring_entries);
	o->flags = offsetof(struct dlc_ring_ctl, flags);
	o->pending = offsetof(struct dlc_ring_ctl, aux);
	o->cqes = dlc_ring_entries_off();
}

/*
 * Check and round the sizes SETUP_RING asked for: SQ 1 .. max, rounded up
 * to a power of two; CQ 0 (twice the SQ, capped at max) or SQ .. max.
 */
int dlc_ring_sizes(u32 *sq_entries, u32 *cq_entries)
{
	u32 sq = *sq_entries, cq = *cq_entries;

	if (!sq || sq > DLC_MAX_RING_ENTRIES || cq > DLC_MAX_RING_ENTRIES)
		return -EINVAL;
	sq = roundup_pow_of_two(sq);
	if (!cq)
		cq = min(2 * sq, DLC_MAX_RING_ENTRIES);
	cq = roundup_pow_of_two(cq);
	if (cq < sq)
		return -EINVAL;
	*sq_entries = sq;
	*cq_entries = cq;
	return 0;
}

/* SQEs user space has published and the kernel not consumed, clamped. */
u32 dlc_sq_ready(const struct dlc_ring *sq)
{
	/* Pairs with user space's release of the tail: entries are written. */
	u32 tail = smp_load_acquire(&sq->ctl->tail);

	return min(tail - sq->kidx, sq->nentries);
}

/*
 * Copy the SQE at the kernel's head into @sqe and move the head on. The
 * head becomes visible to user space at dlc_sq_publish().
 */
void dlc_sq_fetch(struct dlc_ring *sq, struct dlcache_sqe *sqe)
{
	const struct dlcache_sqe *e = sq->entries;

	memcpy(sqe, &e[sq->kidx & sq->mask], sizeof(*sqe));
	sq->kidx++;
}

void dlc_sq_publish(struct dlc_ring *sq)
{
	/* The entries were read before user space may reuse their slots. */
	smp_store_release(&sq->ctl->head, sq->kidx);
}

/* CQEs posted and not yet reaped, clamped to the ring size. */
u32 dlc_cq_used(const struct dlc_ring *cq)
{
	/* Pairs with user space's release of the head: entries were read. */
	u32 head = smp_load_acquire(&cq->ctl->head);

	return min(cq->kidx - head, cq->nentries);
}

/* Post @cqe. The caller has made sure a slot is free (reserved). */
void dlc_cq_post(struct dlc_ring *cq, const struct dlcache_cqe *cqe)
{
	struct dlcache_cqe *e = cq->entries;

	memcpy(&e[cq->kidx & cq->mask], cqe, sizeof(*cqe));
	cq->kidx++;
	/* The entry is written before the tail that publishes it. */
	smp_store_release(&cq->ctl->tail, cq->kidx);
}

/*
 * Check what can be checked of an SQE without a session: opcode, flags
 * valid for the op, zero reserved fields, and the fields the op does not
 * use. Handles, sample IDs and permissions are checked by the caller.
 */
int dlc_sqe_check(const struct dlcache_sqe *sqe)
{
	u32 allowed = 0;

	BUILD_BUG_ON(sizeof(struct dlcache_sqe) != 64);
	BUILD_BUG_ON(sizeof(struct dlcache_cqe) != 32);

	if (sqe->resv0 || sqe->resv[0] || sqe->resv[1] || sqe->resv[2])
		return -EINVAL;

	switch (sqe->opcode) {
	case DLCACHE_OP_NOP:
		if (sqe->handle || sqe->sample || sqe->len || sqe->addr)
			return -EINVAL;
		break;
	case DLCACHE_OP_GET:
		allowed = DLCACHE_SQE_F_AT | DLCACHE_SQE_F_AHEAD;
		if (!sqe->addr && sqe->len)
			return -EINVAL;
		break;
	case DLCACHE_OP_PUT:
		if (!sqe->addr || !sqe->len || sqe->len > DLC_MAX_SAMPLE_SIZE)
			return -EINVAL;
		break;
	case DLCACHE_OP_ABORT:
		allowed = DLCACHE_SQE_F_FAIL;
		if (sqe->len || sqe->addr)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	if (sqe->flags & ~allowed)
		return -EINVAL;
	if (!(sqe->flags & DLCACHE_SQE_F_AT) && (sqe->epoch || sqe->index))
		return -EINVAL;
	if (sqe->opcode != DLCACHE_OP_NOP && !sqe->handle)
		return -EINVAL;
	return 0;
}
