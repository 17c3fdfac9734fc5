// SPDX-License-Identifier: MIT
/*
 * The consumer's side of the loader: the ready batches handed out in
 * order (dlc_next_batch()), and their release, with or without their
 * memory. Slots move READY -> HELD here, and HELD -> FREE at a release
 * (loader.c's header has the whole life of a slot); a handle of its own
 * for every hand-out says which batch a pointer is, without trusting it.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "forms.h"
#include "internal.h"
#include "loader_int.h"

/* Called with l->lock held: the I/O thread may go on. */
static void wake_io(struct dlc_loader *l)
{
	if (l->io_idle) {
		l->io_idle = 0;
		dlc_reader_wake(l->reader);
	}
}

/* Called with l->lock held: whether @s holds the consumer's next batch. */
static int batch_ready(const struct dlc_loader *l, const struct batch_slot *s)
{
	return s->state == SLOT_READY &&
	       s->b.seq == l->base_seq + l->next_local;
}

#define SETTLE_NS (2 * 1000000000ULL)

/*
 * Called with l->lock held, at the end of a run: wait until the forms
 * its decoders made are offered to their cache, so that the next run
 * and the stats find them, for at most SETTLE_NS (or until @until).
 * The run has ended either way: a late form is only offered later.
 */
static void settle_forms(struct dlc_loader *l, const struct timespec *until)
{
	uint64_t by;

	if (!l->forms || !l->forms->qlen)
		return;
	by = dlc_now_ns() + SETTLE_NS;
	if (until) {
		uint64_t u = (uint64_t)until->tv_sec * 1000000000ULL +
			     (uint64_t)until->tv_nsec;

		if (u < by)
			by = u;
	}
	l->settling = 1;
	wake_io(l);
	while (l->forms && l->forms->qlen && !l->stop && !l->failed)
		if (dlc_cond_wait_until(&l->ready_cv, &l->lock, by) ==
		    ETIMEDOUT)
			break;
	l->settling = 0;
}

/*
 * dlc_next_batch() and dlc_next_batch_timeout(): wait for the batch until
 * @until (CLOCK_MONOTONIC; NULL: for as long as it takes), then
 * -ETIMEDOUT with nothing consumed.
 */
static int next_batch(struct dlc_loader *l, struct dlc_batch **out,
		      const struct timespec *until)
{
	struct batch_handle *h;
	struct batch_slot *s;
	uint32_t si;
	uint64_t t0;
	int ret, ready = 0;

	pthread_mutex_lock(&l->lock);
	if (!l->active && !l->gen) {
		pthread_mutex_unlock(&l->lock);
		return -EINVAL;		/* no epoch started */
	}
	for (;;) {
		if (l->failed) {
			ret = l->failed;
			goto out;
		}
		if (l->next_local >= l->nbatches_run) {
			settle_forms(l, until);
			ret = -ENODATA;
			goto out;
		}
		si = loader_slot_of(l, l->next_local);
		s = &l->slots[si];
		if (l->held >= l->cfg.nbatches - 1 || s->state == SLOT_HELD) {
			/* Its buffer is held by the caller: it would never come. */
			ret = -EBUSY;
			goto out;
		}
		t0 = dlc_now_ns();
		ret = 0;
		l->consumer_waited = !batch_ready(l, s);
		while (!l->stop && !l->failed && !(ready = batch_ready(l, s))) {
			if (ret == ETIMEDOUT)
				break;
			if (until)
				ret = pthread_cond_timedwait(&l->ready_cv,
							     &l->lock, until);
			else
				pthread_cond_wait(&l->ready_cv, &l->lock);
		}
		dlc_stat_add(l->stats.wait_ns, dlc_now_ns() - t0);
		if (l->stop) {
			ret = -ECANCELED;
			goto out;
		}
		if (l->failed) {
			ret = l->failed;
			goto out;
		}
		if (!ready) {
			/* Not ready in time: nothing taken, call again. */
			ret = -ETIMEDOUT;
			goto out;
		}
		l->next_local++;
		if (s->err) {
			/* Under DLC_ON_ERROR_FAIL the batch is lost with its error. */
			l->failed = s->err;
			s->state = SLOT_FREE;
			ret = s->err;
			wake_io(l);
			goto out;
		}
		if (s->b.count)
			break;
		/* Every sample of it was skipped: never hand out an empty batch. */
		s->state = SLOT_FREE;
		wake_io(l);
	}
	s->state = SLOT_HELD;
	l->held++;
	h = &l->handles[l->next_handle++ % DLC_HANDLES];
	h->b = s->b;
	h->slot = si;
	h->live = 1;
	dlc_stat_add(l->stats.batches, 1);
	*out = &h->b;
	ret = 0;
out:
	pthread_mutex_unlock(&l->lock);
	return ret;
}

int dlc_next_batch(struct dlc_loader *l, struct dlc_batch **out)
{
	return next_batch(l, out, NULL);
}

int dlc_next_batch_timeout(struct dlc_loader *l, struct dlc_batch **out,
			   uint64_t timeout_ns)
{
	uint64_t until_ns = dlc_now_ns() + timeout_ns;
	struct timespec until;

	if (until_ns < timeout_ns)
		until_ns = UINT64_MAX;	/* "forever" in nanoseconds */
	until.tv_sec = (time_t)(until_ns / 1000000000);
	until.tv_nsec = (long)(until_ns % 1000000000);
	return next_batch(l, out, &until);
}

/*
 * The live handle @b for @what (a release): -EINVAL (logged) when @b is no
 * handle of this loader. Returns with l->lock held on success only;
 * -EALREADY (logged) for a handle already released.
 */
static int lock_handle(struct dlc_loader *l, struct dlc_batch *b,
		       const char *what, struct batch_handle **out)
{
	uintptr_t base, p = (uintptr_t)b;
	struct batch_handle *h;

	if (!l)
		return -EINVAL;
	base = (uintptr_t)l->handles;
	/* Only a pointer into our handles is looked at, never through. */
	if (!b || p < base || p >= base + DLC_HANDLES * sizeof(*h) ||
	    (p - base) % sizeof(*h)) {
		dlc_logf(&l->log, DLC_LOG_ERROR,
			 "%s: %p is not a batch this loader handed out", what,
			 (void *)b);
		return -EINVAL;
	}
	h = &l->handles[(p - base) / sizeof(*h)];
	pthread_mutex_lock(&l->lock);
	if (!h->live) {
		pthread_mutex_unlock(&l->lock);
		dlc_logf(&l->log, DLC_LOG_ERROR,
			 "%s: batch %llu of epoch %u (%p) was already released",
			 what, (unsigned long long)h->b.seq, h->b.epoch,
			 (void *)b);
		return -EALREADY;
	}
	*out = h;
	return 0;
}

/* Called with l->lock held: the slot of live handle @h is free again. */
static void release_locked(struct dlc_loader *l, struct batch_handle *h)
{
	h->live = 0;
	h->b.count = 0;
	h->b.data = NULL;
	h->b.labels = NULL;
	h->b.ids = NULL;
	l->slots[h->slot].state = SLOT_FREE;
	l->held--;
	wake_io(l);
}

int dlc_release_batch(struct dlc_loader *l, struct dlc_batch *b)
{
	struct batch_handle *h;
	int ret = lock_handle(l, b, "release batch", &h);

	if (ret)
		return ret;
	release_locked(l, h);
	pthread_mutex_unlock(&l->lock);
	return 0;
}

int dlc_release_batch_keep(struct dlc_loader *l, struct dlc_batch *b,
			   void **mem, size_t *len)
{
	struct dlc_pinned fresh, kept;
	struct batch_handle *h;
	struct batch_slot *s;
	int ret;

	if (l && (!mem || !len)) {
		dlc_logf(&l->log, DLC_LOG_ERROR,
			 "keep batch: mem and len must not be NULL");
		return -EINVAL;
	}
	/* Checked first, so that a bad handle costs no mapping. */
	ret = lock_handle(l, b, "keep batch", &h);
	if (ret)
		return ret;
	pthread_mutex_unlock(&l->lock);
	/* Mapped and pinned outside the lock: it can take a while. */
	ret = dlc_pinned_alloc(l->slot_bytes, NULL, &fresh);
	if (ret) {
		dlc_logf(&l->log, DLC_LOG_ERROR,
			 "keep batch %llu: no memory for a new %zu MiB batch buffer; the batch stays held (copy it, then release it)",
			 (unsigned long long)h->b.seq, l->slot_bytes >> 20);
		return -ENOMEM;
	}
	ret = lock_handle(l, b, "keep batch", &h);
	if (ret) {
		dlc_pinned_free(&fresh);
		return ret;
	}
	if (!fresh.locked && l->pinned)
		dlc_pinned_warn(&l->log, fresh.bytes, fresh.lock_err);
	s = &l->slots[h->slot];
	kept = s->mem;
	s->mem = fresh;
	s->b.data = fresh.base;
	release_locked(l, h);
	loader_ring_summary(l);
	pthread_mutex_unlock(&l->lock);
	/* The caller's now: no longer pinned, nor counted in RLIMIT_MEMLOCK. */
	dlc_pinned_unlock(&kept);
	*mem = kept.base;
	*len = kept.bytes;
	return 0;
}

void dlc_batch_data_free(void *mem, size_t len)
{
	if (mem)
		munmap(mem, len);
}

