/* SPDX-License-Identifier: MIT */
/*
 * The jobs attached now to a data set on dlcache.ko, read back from the
 * module (DLCACHE_IOC_GET_ORDER): each consumer's uploaded orders, as
 * whole epochs, and its measured pace (whatif --attached).
 */
#ifndef DLCACHECTL_ATTACHED_H
#define DLCACHECTL_ATTACHED_H

#include <stdint.h>

struct attached_job {
	uint32_t consumer;	/* its number in the data set's list */
	uint32_t owner_uid;	/* of the data set */
	uint32_t first_epoch;	/* the first of its whole epochs read */
	uint32_t nepochs;	/* whole epochs in ids */
	uint32_t epoch_len;	/* positions an epoch */
	uint64_t ns_per_pos;	/* the module's measure; 0: not measured yet */
	uint32_t *ids;		/* nepochs * epoch_len sample IDs (malloc) */
};

/*
 * Read every consumer of each data set with @key (one per owner the
 * caller may read), which must have @nsamples samples, into @jobs (at
 * most @max): each consumer's longest run of whole epochs of one length
 * that the module holds. Returns how many, or -1 after printing one line
 * naming what failed (no module, no GET_ORDER, no such data set, more
 * consumers than @max, nothing whole held) for an exit status of 1.
 */
int attached_read(const uint64_t key[2], uint32_t nsamples,
		  struct attached_job *jobs, uint32_t max);

void attached_free(struct attached_job *jobs, uint32_t n);

#endif
