// SPDX-License-Identifier: MIT
/*
 * The jobs attached now to a data set on dlcache.ko (attached.h): the
 * data sets with the key come from STATS's list (admin_snap_take()), and
 * each consumer's orders from GET_ORDER by that list's index, checked
 * against the key in every answer (the list may change meanwhile).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"
#include "attached.h"
#include "cli.h"

/* Reads of one consumer's orders, when uploads keep moving them. */
#define TRIES 5

static int get_order(int fd, uint32_t index, uint32_t consumer, uint64_t from,
		     uint32_t *ids, uint32_t len, struct dlcache_get_order *o)
{
	memset(o, 0, sizeof(*o));
	o->handle = index;
	o->flags = DLCACHE_GET_ORDER_F_INDEX;
	o->consumer = consumer;
	o->from = from;
	o->ids = (uintptr_t)ids;
	o->len = len;
	return ioctl(fd, DLCACHE_IOC_GET_ORDER, o) ? -errno : 0;
}

/*
 * The longest run of whole epochs of one length in @o's answer, whose
 * IDs are those of positions o->from .. o->from + o->copied - 1: its
 * first entry of o->epochs in *@at, its length returned (0: none).
 */
static uint32_t whole_run(const struct dlcache_get_order *o, uint32_t *at)
{
	uint32_t i, best = 0, run = 0;

	for (i = 0; i < o->nepochs && i < DLCACHE_GET_ORDER_EPOCHS; i++) {
		const struct dlcache_order_epoch *e = &o->epochs[i];
		int whole = e->len && e->base >= o->from &&
			    e->base + e->len <= o->from + o->copied;

		if (!whole) {
			run = 0;
			continue;
		}
		if (run && (e->len != o->epochs[i - 1].len ||
			    e->epoch != o->epochs[i - 1].epoch + 1))
			run = 0;
		run++;
		if (run > best) {
			best = run;
			*at = i + 1 - run;
		}
	}
	return best;
}

/*
 * Positions o->first .. o->end - 1 of consumer @c into @ids, in reads of
 * at most @max IDs: 0, -EAGAIN when uploads moved them meanwhile, -ESTALE
 * when the list's @index is another data set now, or -errno.
 */
static int read_held(int fd, uint32_t index, uint32_t c, const uint64_t key[2],
		     const struct dlcache_get_order *o, uint32_t *ids, uint32_t max)
{
	struct dlcache_get_order r;
	uint64_t pos;
	uint32_t len;
	int ret;

	for (pos = o->first; pos < o->end; pos += len) {
		len = o->end - pos < max ? (uint32_t)(o->end - pos) : max;
		ret = get_order(fd, index, c, pos, ids + (pos - o->first), len, &r);
		if (ret)
			return ret;
		if (r.ds_key[0] != key[0] || r.ds_key[1] != key[1])
			return -ESTALE;
		if (r.copied != len || r.end != o->end)
			return -EAGAIN;
	}
	return 0;
}

/*
 * Consumer @c of the @index-th listed data set (@key) into @job. 1 done,
 * 0 when it holds no whole epoch (left out, with a line saying so), -1
 * after a failure's line.
 */
static int read_consumer(int fd, uint32_t index, uint32_t c, const uint64_t key[2],
			 const char *kstr, uint32_t max, struct attached_job *job)
{
	struct dlcache_get_order o;
	uint32_t *ids = NULL, at = 0, n, e;
	int tries, ret = 0;

	for (tries = 0; tries < TRIES; tries++) {
		ret = get_order(fd, index, c, 0, NULL, 0, &o);
		if (!ret && (o.ds_key[0] != key[0] || o.ds_key[1] != key[1]))
			ret = -ESTALE;
		if (ret)
			break;
		free(ids);
		ids = malloc(sizeof(*ids) * (o.end > o.first ? o.end - o.first : 1));
		if (!ids) {
			ret = -ENOMEM;
			break;
		}
		ret = read_held(fd, index, c, key, &o, ids, max);
		if (ret != -EAGAIN)
			break;
	}
	if (ret) {
		free(ids);
		fail("whatif", "--attached: reading consumer %u of data set %s: %s", c, kstr,
		     ret == -ESTALE ? "the list of data sets changed meanwhile; run it again" :
		     ret == -EAGAIN ? "its orders kept moving; run it again" : strerror(-ret));
		return -1;
	}
	/* What was read stands for one answer from o.first. */
	o.from = o.first;
	o.copied = (uint32_t)(o.end - o.first);
	n = whole_run(&o, &at);
	if (!n) {
		free(ids);
		fprintf(stderr, "dlcachectl whatif: consumer %u of data set %s holds no whole epoch (positions %llu to %llu); left out\n",
			c, kstr, (unsigned long long)o.first, (unsigned long long)o.end);
		return 0;
	}
	memset(job, 0, sizeof(*job));
	job->consumer = c;
	job->owner_uid = o.ds_owner_uid;
	job->first_epoch = o.epochs[at].epoch;
	job->nepochs = n;
	job->epoch_len = o.epochs[at].len;
	job->ns_per_pos = o.ns_per_pos;
	/* The run's IDs to the front. */
	e = (uint32_t)(o.epochs[at].base - o.from);
	memmove(ids, ids + e, sizeof(*ids) * (size_t)n * job->epoch_len);
	job->ids = ids;
	return 1;
}

int attached_read(const uint64_t key[2], uint32_t nsamples,
		  struct attached_job *jobs, uint32_t max)
{
	struct dlcache_get_order o;
	struct dlcache_info info;
	struct admin_snap s = { 0 };
	uint32_t i, c, n = 0, sets = 0;
	__u64 k[2] = { key[0], key[1] };
	char kstr[33];
	int fd, ret = -1, r;

	admin_key_str(k, kstr);
	fd = admin_open("whatif");
	if (fd < 0)
		return -1;
	memset(&info, 0, sizeof(info));
	if (ioctl(fd, DLCACHE_IOC_GET_INFO, &info) ||
	    !(info.supported & DLCACHE_FEAT_GET_ORDER)) {
		fail("whatif", "--attached: this dlcache.ko cannot read orders back (no DLCACHE_FEAT_GET_ORDER); load the module of this version");
		goto out;
	}
	r = admin_snap_take(fd, &s);
	if (r) {
		fail("whatif", "--attached: STATS: %s", strerror(-r));
		goto out;
	}
	for (i = 0; i < s.n; i++) {
		if (s.ds[i].ds_key[0] != key[0] || s.ds[i].ds_key[1] != key[1])
			continue;
		sets++;
		if (s.ds[i].ds_nsamples != nsamples) {
			fail("whatif", "--attached: data set %s of uid %u has %u samples, the index %u",
			     kstr, s.ds[i].ds_owner_uid, s.ds[i].ds_nsamples, nsamples);
			goto out;
		}
		for (c = 0; c < s.ds[i].ds_consumers; c++) {
			r = get_order(fd, i, c, 0, NULL, 0, &o);
			if (r == -ENOENT)
				break;	/* a consumer left meanwhile */
			if (n == max) {
				fail("whatif", "--attached: more than %u consumers on data set %s", max,
				     kstr);
				goto out;
			}
			r = read_consumer(fd, i, c, key, kstr, info.max_order_len,
					  &jobs[n]);
			if (r < 0)
				goto out;
			n += (uint32_t)r;
		}
	}
	if (!sets)
		fail("whatif", "--attached: no data set %s (this index's key) on dlcache.ko that you may read: no job reads it through the module now",
		     kstr);
	else if (!n)
		fail("whatif", "--attached: data set %s has no consumer holding a whole epoch now", kstr);
	else
		ret = (int)n;
out:
	if (ret < 0)
		attached_free(jobs, n);
	admin_snap_free(&s);
	close(fd);
	return ret;
}

void attached_free(struct attached_job *jobs, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		free(jobs[i].ids);
		jobs[i].ids = NULL;
	}
}
