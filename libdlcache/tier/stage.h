/* SPDX-License-Identifier: MIT */
/*
 * The staging tier (stage.c): copies of samples on node-local disk, in a
 * directory of this user's (dlc_config.staging_dir), filled in the order
 * the samples will be used and evicted by next use, within a byte budget.
 * Serizawa & Tatebe's staging: the slow shared origin is read once, the
 * next epochs read the local copy.
 *
 * Layout: DIR/dlcache-UID/KEY/ID, one file per sample, where KEY is the
 * data set's key in hex and ID its sample ID in canonical decimal. DIR
 * is root's or this user's, or sticky, and DIR/dlcache-UID this user's
 * (0700): both checked on their fds at open; every file below KEY is
 * opened relative to KEY's fd, never by path. KEY/counters holds the
 * tier's counters, shared by every process that stages the data set
 * there. A file is written under a temporary name (.tmp.PID.ID) and
 * renamed into place, with the origin's mtime, so no process ever finds
 * a partial file under an ID; its bytes are checked when read (the
 * index's size and crc32c), and at start every file's size and mtime
 * against the index and the origin, so a stale copy is never served.
 *
 * Threads: the tier's queue, served and offer, dlc_stage_hit_above() and
 * dlc_stage_advance() are the loader's I/O thread's; the stager thread of
 * its own reads ahead from the origin and writes copies. Everything
 * shared is under the stage's lock, which is taken after the loader's,
 * never before.
 */
#ifndef DLC_STAGE_H
#define DLC_STAGE_H

#include <stdint.h>

#include "internal.h"
#include "tier.h"

struct dlc_stage;

struct dlc_stage_opts {
	const char *dir;		/* dlc_config.staging_dir */
	uint64_t budget;		/* bytes; 0: half the free space there */
	const struct dlc_index *idx;
	struct dlc_source *src;		/* the origin, read by the stager */
	const struct dlc_logger *log;
	uint32_t epoch_len;		/* this rank's order length */
	/*
	 * Positions past the pipeline's that it reads itself (its window and
	 * read-ahead): the stager reads from the origin only beyond them, so
	 * that no sample is read twice.
	 */
	uint32_t lead;
	uint32_t epochs;		/* dlc_config.epochs: 0, not known */
	uint64_t max_file_bytes;	/* dlc_config.max_file_bytes */
	/* This rank's order of @epoch, as the loader's. */
	int (*fill_order)(void *arg, uint32_t epoch, uint32_t *ids,
			  uint32_t len);
	void *order_arg;
};

/*
 * What the tier did since this process opened it (the shared counters
 * file adds every process's). All in samples but the _bytes.
 */
struct dlc_stage_counters {
	uint64_t hits;		/* reads served from a staged copy */
	uint64_t hit_bytes;
	uint64_t writes;	/* copies written */
	uint64_t prefetched;	/* samples the stager read from the origin */
	uint64_t prefetch_bytes;
	uint64_t evictions;	/* copies removed for a sooner use */
	uint64_t invalid;	/* copies found stale, torn or corrupt: removed */
	uint64_t used;		/* bytes held now (whole 4 KiB blocks) */
	uint64_t budget;
};

/*
 * Open (creating where needed) the data set's staging directory, take
 * the copies already there that are still valid, remove the rest, and
 * start the stager. 0, or -errno with the reason logged.
 */
int dlc_stage_open(const struct dlc_stage_opts *o, struct dlc_stage **out);
/* Stop the stager (a copy being written is finished first) and free. */
void dlc_stage_close(struct dlc_stage *st);

/* The pipeline starts epoch @epoch at @start: the orders of it and the next. */
int dlc_stage_prepare_epoch(struct dlc_stage *st, uint32_t epoch,
			    uint32_t start);
/*
 * The pipeline claimed position @pos of @epoch; @origin_spare: it is not
 * waiting on storage (decode or the consumer sets its pace), so the
 * stager may read ahead from the origin. While it is, every origin read
 * is the pipeline's, and the stager only writes what it is offered: a
 * read ahead then would only slow the reads the pipeline waits for, or
 * read a sample twice when the pipeline catches up with it.
 */
void dlc_stage_advance(struct dlc_stage *st, uint32_t epoch, uint32_t pos,
		       int origin_spare);
/*
 * The stage as a read tier (tier.h): a read of sample @id's copy, or of
 * its bytes in memory while the copy is being made; a read's check (the
 * index's size and crc32c: a copy that fails is removed); the origin's
 * bytes offered for a copy, made if the sample's next use admits it.
 */
void dlc_stage_tier(struct dlc_stage *st, struct dlc_tier *out);
/* A tier above (the in-process cache, dlcache.ko) served @bytes of a sample. */
void dlc_stage_hit_above(struct dlc_stage *st, uint64_t bytes);
void dlc_stage_counters(struct dlc_stage *st, struct dlc_stage_counters *out);

/*
 * The counters file every process staging a data set adds to
 * (KEY/counters): what dlcachectl stats --staging prints.
 */
#define DLC_STAGE_COUNTERS_MAGIC	0x31535443434c44ULL	/* "DLCCTS1" */

struct dlc_stage_shared {
	uint64_t magic;
	uint64_t above_hits;	/* samples the memory tiers served */
	uint64_t above_bytes;
	uint64_t hits;		/* samples the staged copies served */
	uint64_t hit_bytes;
	uint64_t origin_reads;	/* samples the pipelines read from the origin */
	uint64_t origin_bytes;
	uint64_t prefetched;	/* samples the stagers read from the origin */
	uint64_t prefetch_bytes;
	uint64_t writes;
	uint64_t evictions;
	uint64_t invalid;
	uint64_t reserved[4];
};

#endif
