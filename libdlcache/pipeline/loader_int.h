/* SPDX-License-Identifier: MIT */
/*
 * The loader's pipeline state (loader.c), shared with its steps
 * (pipeline.c) and the cache tiers that work on it from the I/O thread
 * (cachetier.h): the batch slots, the decode queue's items, the loader
 * itself, and the pipeline steps a tier calls.
 * Not for anything else: the public face is dlcache.h.
 */
#ifndef DLC_LOADER_INT_H
#define DLC_LOADER_INT_H

#include <pthread.h>
#include <sched.h>
#include <stdint.h>

#include "internal.h"
#include "rasize.h"
#include "decode.h"
#include "reader.h"
#include "source.h"

enum batch_slot_state { SLOT_FREE, SLOT_FILLING, SLOT_READY, SLOT_HELD };

struct batch_slot {
	struct dlc_batch b;	/* first: the consumer's handle */
	struct dlc_pinned mem;	/* its own buffer, b.data; new after a keep */
	enum batch_slot_state state;
	uint32_t pending;	/* samples not yet decoded */
	uint32_t want;		/* samples the batch holds before skips */
	uint8_t *skip;		/* per index: dropped under DLC_ON_ERROR_SKIP */
	int err;		/* first fatal sample error (DLC_ON_ERROR_FAIL) */
};

/*
 * A hand-out of a batch: what the consumer's pointer points to. Handles
 * come from a ring of DLC_HANDLES, so a released one is not handed out
 * again for that many batches: until then a stale or doubled release is
 * told from a live one without touching the batch now in its slot.
 */
#define DLC_HANDLES	4096

struct batch_handle {
	struct dlc_batch b;	/* first: the consumer's pointer */
	uint32_t slot;		/* the slot it holds */
	uint32_t live;		/* handed out and not yet released */
};

struct decode_item {
	uint32_t slot;
	uint32_t index;		/* in the batch */
	uint32_t sample;
	uint32_t pos;		/* in the epoch order */
	struct dlc_buf *buf;	/* NULL when the read failed */
	int err;		/* read error */
	const char *why;
	/*
	 * Decoded forms (forms.h): make this sample's form at its decode,
	 * @form_est bytes promised for it (set by the cache tier when the
	 * item is queued; cleared for a guest, which makes none).
	 */
	uint32_t make_form;
	uint32_t form_est;
};

struct dlc_loader {
	struct dlc_config cfg;
	struct dlc_logger log;
	const struct dlc_index *idx;
	struct dlc_source *src;		/* where the samples are read from */
	uint32_t n;			/* samples in the data set */
	uint32_t epoch_len;		/* this rank's order length */
	size_t sample_bytes;		/* 3 x out_w x out_h */

	pthread_mutex_t lock;
	pthread_cond_t work_cv;		/* decode queue got an item, or stop */
	pthread_cond_t ready_cv;	/* a slot became READY, or stop */
	pthread_cond_t idle_cv;		/* outstanding reached 0 */
	/* Set under l->lock; the guests read it without (guest.c). */
	int stop;
	uint32_t decoders_waiting;	/* under l->lock: on work_cv now */

	/* Epoch state, written by start_epoch while the pipeline is idle. */
	uint64_t gen;			/* bumps on every start_epoch */
	int active;
	uint32_t epoch;
	uint32_t *order;		/* epoch_len sample IDs */
	uint32_t start, end;		/* positions this run covers */
	/*
	 * An elastic resume (dlc_loader_resume_epoch()): epoch rs_epoch1 - 1
	 * is the rest after rs_done global positions, rs_len of them this
	 * rank's, then the next epoch's head as filler the run never reaches
	 * (loader_fill_order()). Written by start_epoch and resume_epoch under
	 * the lock while the pipeline is idle; rs_epoch1 (0: no resume) is
	 * read by the tiers' threads too, so it is stored last, released.
	 */
	uint64_t rs_done;
	uint32_t rs_len;
	uint32_t rs_epoch1;
	uint32_t next_pos;		/* next position to issue */
	uint32_t nbatches_run;		/* batches from start to end */
	uint64_t base_seq;		/* public seq of the first batch */
	uint32_t next_local;		/* next batch the consumer gets */
	uint32_t held;			/* batches the consumer holds */
	/*
	 * The slot of the run's first batch (loader_slot_of()): set by
	 * start_epoch and resume_epoch under the lock, after the slot of the
	 * last batch handed out, whose holder may keep it into the new run.
	 */
	uint32_t slot0;
	struct batch_handle *handles;		/* DLC_HANDLES, used in turn */
	uint64_t next_handle;		/* hand-outs so far */
	int failed;			/* sticky error under ON_ERROR_FAIL */
	/*
	 * The consumer's last batch was not ready when asked for (and, at
	 * the start, 1): the pipeline, not the consumer, sets the pace.
	 */
	int consumer_waited;
	/*
	 * The consumer waits at a run's end for the forms its decoders made
	 * to reach their cache (next_batch(), under l->lock): the I/O
	 * thread, which alone offers them, broadcasts ready_cv when none is
	 * left queued.
	 */
	int settling;
	uint32_t outstanding;		/* issued, not yet finished */
	int io_idle;			/* the I/O thread sleeps in reap */

	struct batch_slot *slots;
	size_t slot_bytes;		/* a slot's buffer: a whole batch */
	int pinned, huge;		/* of the ring now: dlc_loader_pinned() */

	struct decode_item *queue;		/* decode queue, a ring of window items */
	uint32_t qhead, qlen;

	/* The cache (cachetier.h): the I/O thread's, but ops "under l->lock". */
	struct dlc_cache_tier *ct;
	uint32_t backend;		/* DLC_BACKEND_INPROCESS or _KERNEL */
	uint32_t kernel_fallback;	/* enum dlc_kernel_fallback, after env */
	uint32_t verify;		/* enum dlc_verify, after DLCACHE_VERIFY */
	uint8_t *crc_logged;		/* I/O thread: a bit per sample logged */
	uint32_t validate;		/* enum dlc_validate, after DLCACHE_VALIDATE */
	uint8_t *checked;		/* ONCE: a bit per sample decoded whole */
	struct dlc_reader *reader;	/* I/O thread only */
	/* The staging tier (stage.h), or NULL; its own lock. */
	struct dlc_stage *stage;
	struct dlc_peer *peer;		/* cluster mode: the peer tier */
	/* Its prepare thread's decoder (loader.c, prepare_setup()), or NULL. */
	struct dlc_decoder *prepare_dec;
	char *staging_dir;		/* cfg.staging_dir points here */
	/* Read-ahead: all of it I/O thread only. */
	struct dlc_ra *ra;		/* NULL when off */
	/* I/O thread: the pace window every controller reads (window.h). */
	struct dlc_window pace;
	/* The read-ahead's size online (rasize.h), when rasize_on. */
	struct dlc_rasize rasize;
	int rasize_on;
	uint64_t rasize_said;	/* the budget last set (and logged) */
	uint64_t rasize_gen;	/* the run (l->gen) it was set in */
	uint64_t ra_g;			/* next virtual position to look at */
	uint32_t *ra_order;		/* the order of epoch ra_order_epoch */
	int64_t ra_order_epoch;		/* -1: none yet */
	uint32_t *last_pos;		/* per sample: last position in l->epoch */
	/* Under l->lock: when the open busy span began (a read in flight), 0: none. */
	uint64_t busy_since;
	uint32_t ndecode;
	/* Node sharing (guest.c): the group, NULL without; guests to start. */
	struct dlc_node_share *node;
	/* Made by create, closed by destroy; written by the I/O thread. */
	struct dlc_status *status;
	uint32_t nguest;
	/* Node sharing: each guest's place, nguest of them (guest.c). */
	struct guest_seat *seats;
	/* Node sharing: the CPUs of the thread that made the loader; create's. */
	cpu_set_t home;
	/* Decoded forms (forms.h): the in-process tier's controller, or NULL. */
	struct dlc_forms *forms;
	/* The running mean of our own decoders' decodes, in ns (atomic). */
	uint64_t decode_mean_ns;
	pthread_t io_thread;
	pthread_t *decode_threads;
	uint32_t nthreads_started;
	int io_started;
	/*
	 * Pipeline threads past their last touch of the loader (atomic):
	 * one that does not end then is held in the kernel's exit by an
	 * io_uring operation on a hung file system, and is detached.
	 */
	uint32_t threads_returned;
	uint32_t threads_up;		/* threads past their setup */
	int thread_err;			/* first setup failure of a thread */

	struct dlc_stats stats;
	struct dlc_error_info last_err;
	int have_err;
};

/*
 * Called with l->lock held, which it drops while decoding: decode the
 * next queued sample into its slot (batchdecode.c). 0 when none was queued.
 */
int loader_decode_next(struct dlc_loader *l, struct dlc_decoder *dec);
/*
 * The same of @it, an item taken off the queue in generation @gen of
 * @epoch (a guest's, reclaimed from it): decoded into its slot, failures
 * handled as enum dlc_on_error says, and counted done.
 */
void loader_decode_item(struct dlc_loader *l, struct dlc_decoder *dec,
			struct decode_item *it, uint32_t epoch, uint64_t gen);
/*
 * dlc_peer_prepare's (cluster mode), without l->lock: sample @id's bytes
 * @b decoded for @epoch into @dst (sample_bytes) as this loader's
 * decoders would, with @dec; @arg is the loader. 0, or the decoder's
 * error.
 */
int loader_prepare_sample(void *arg, struct dlc_decoder *dec, uint32_t id,
			  uint32_t epoch, const struct dlc_buf *b,
			  uint8_t *dst);
/*
 * A guest's decode, without l->lock: @it's bytes as its sample of @epoch
 * into @dst (sample_bytes), nothing recorded on failure. 0, or the
 * decoder's error (the read's, when @it has no bytes).
 */
int loader_decode_into(struct dlc_loader *l, struct dlc_decoder *dec,
		       const struct decode_item *it, uint32_t epoch,
		       uint8_t *dst);
/* Where @it's pixels go in its batch slot. */
uint8_t *loader_item_dst(struct dlc_loader *l, const struct decode_item *it);
/*
 * Called with l->lock held: @it's pixels, of generation @gen, are in its
 * slot: count the sample done.
 */
void loader_item_decoded(struct dlc_loader *l, const struct decode_item *it,
			 uint64_t gen);

/* Pipeline steps (pipeline.c), for the I/O thread and the cache tiers. */

/* This rank's order of @epoch (@arg: the loader), as dlc_order_fill(). */
int loader_fill_order(void *arg, uint32_t epoch, uint32_t *ids, uint32_t len);
/* The parameters of this rank's order of @epoch. */
struct dlc_order_params loader_order_params(const struct dlc_loader *l,
					    uint32_t epoch);
/* The positions a run over @len of them yields (drop_last: whole batches). */
uint32_t loader_run_len(const struct dlc_loader *l, uint32_t len);
/* Called with l->lock held: queue @it for decode. */
void loader_push_item(struct dlc_loader *l, const struct decode_item *it);
/*
 * Called with l->lock held, with l->qlen > 0: take the queue's last item,
 * the one needed latest (a guest's; the decoders take the first).
 */
void loader_take_last(struct dlc_loader *l, struct decode_item *it);
/*
 * Called with l->lock held, by a decoder with nothing to do: wait on
 * work_cv (until @wake, CLOCK_MONOTONIC ns, when not 0), the time counted
 * in decode_starved_ns when samples were still being read.
 */
void loader_wait_work(struct dlc_loader *l, uint64_t wake);
/* Called with l->lock held: @it will make no form (a guest's, a drop). */
void loader_item_no_form(struct dlc_loader *l, struct decode_item *it);
/*
 * Called with l->lock held: put @it, taken off the queue, back at its
 * head, for the loader's own decoders.
 */
void loader_requeue_item(struct dlc_loader *l, const struct decode_item *it);
/* Called with l->lock held: whether the next position may be claimed. */
int loader_issuable(const struct dlc_loader *l);
/*
 * Called with l->lock held, or before the threads start: what
 * dlc_loader_pinned() and dlc_loader_hugepages() say of the ring now.
 */
void loader_ring_summary(struct dlc_loader *l);
/* The ring slot of this run's batch @local. Called with l->lock held. */
uint32_t loader_slot_of(const struct dlc_loader *l, uint32_t local);
/* The item of claimed position @pos (no bytes yet). */
void loader_item_at(const struct dlc_loader *l, uint32_t pos, struct decode_item *it);
/* Called with l->lock held, when loader_issuable(): claim the next position. */
void loader_claim_next(struct dlc_loader *l, struct decode_item *it);
/*
 * A cache's hit of sample @id, @b, counted (hits, hit_bytes, the staging
 * tier's hits above it) as the storage bytes it saves: a decoded form's
 * are the sample's encoded bytes, not its pixels.
 */
void loader_count_hit(struct dlc_loader *l, uint32_t id,
		      const struct dlc_buf *b);
/*
 * The I/O thread's, at @now: the storage's busy time so far, the open
 * span included. That thread alone opens and closes the spans, so it
 * reads busy_since without the lock.
 */
static inline uint64_t loader_io_busy_ns(const struct dlc_loader *l,
					 uint64_t now)
{
	return __atomic_load_n(&l->stats.io_busy_ns, __ATOMIC_RELAXED) +
	       (l->busy_since ? now - l->busy_since : 0);
}

/* Called with l->lock held: a sample of an abandoned epoch is dropped. */
void loader_drop_sample(struct dlc_loader *l, struct dlc_buf *buf);
/*
 * Whether @len bytes at @data are sample @id as indexed (its crc32c); a
 * mismatch is counted, and with @what logged once per sample.
 */
int loader_sample_ok(struct dlc_loader *l, uint32_t id, const void *data,
		     size_t len, const char *what);
/* Finished reads: checked, offered to the tiers and queued for decode. */
void loader_hand_over(struct dlc_loader *l, struct dlc_read_done *done, int n);
/* A read-ahead read ended: kept, handed over to its claim, or dropped. */
void loader_readahead_done(struct dlc_loader *l, struct dlc_read_done *d);
/* The read-ahead's counters, into the stats. */
void loader_publish_readahead(struct dlc_loader *l);
/* The next position to read ahead within the budget: 0, or -EAGAIN. */
int loader_readahead_pick(struct dlc_loader *l, uint64_t my_gen, uint64_t *g,
			  uint32_t *id, uint64_t *bytes);
/* The claim @it takes what was read ahead for it: 1 when it did. */
int loader_take_readahead(struct dlc_loader *l, uint32_t epoch,
			  const struct decode_item *it);
/*
 * Called with l->lock held, when loader_issuable(): whether the next
 * position can be claimed now (one that needs a read needs the reader's
 * room; one read ahead or cached does not).
 */
int loader_claim_room(const struct dlc_loader *l);
/*
 * Called with l->lock held, after start_epoch's gen was taken: keep what
 * was read ahead for the positions from (@epoch, @start) on.
 */
void loader_readahead_rebase(struct dlc_loader *l, uint32_t epoch,
			     uint32_t start);
/* Read ahead, the cache tier's way or the pipeline's: whether it issued. */
int loader_read_ahead(struct dlc_loader *l, uint64_t my_gen, char *path,
		      size_t len);
/* The pipeline's read-ahead: reads of the order's next misses. */
int loader_read_ahead_reads(struct dlc_loader *l, uint64_t my_gen, char *path,
			    size_t len);
/* Position @pos of @epoch on the virtual time line of every epoch. */
uint64_t loader_vpos(const struct dlc_loader *l, uint32_t epoch, uint32_t pos);

#endif
