// SPDX-License-Identifier: MIT
/*
 * The client side of /dev/dlcache (uapi/dlcache.h): open and check the
 * ABI, attach to a data set, map the rings at the offsets the kernel
 * publishes, and move SQEs and CQEs with the ordering the ABI asks for
 * (release on our index stores, acquire on the kernel's). Used by the
 * loader's I/O thread only, so it has no lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/types.h>
#include "../../uapi/dlcache.h"
#include "kclient.h"

/*
 * The layouts this library was built against: every command of the
 * table (uapi/dlcache.h DLCACHE_IOCTLS) has its number, struct and size,
 * and the ring entries theirs.
 */
#define DLC_IOC_ASSERT(NAME, name, nr, type, size, dir)			\
	_Static_assert(sizeof(struct type) == (size), #type);		\
	_Static_assert(DLCACHE_IOC_##NAME ==				\
		       _##dir(DLCACHE_IOC_MAGIC, nr, struct type), #NAME);
DLCACHE_IOCTLS(DLC_IOC_ASSERT)
#undef DLC_IOC_ASSERT
_Static_assert(sizeof(struct dlcache_sqe) == 64, "dlcache_sqe");
_Static_assert(sizeof(struct dlcache_cqe) == 32, "dlcache_cqe");

struct dlc_kclient {
	int fd;
	uint32_t handle;
	uint32_t result_flags;
	int job_refused;	/* -errno of an ATTACH with a job, retried without */
	uint32_t owner_uid;
	uint32_t form;		/* the form attached (ATTACH's @form), 0: encoded */
	struct dlcache_info info;

	void *sq_map;
	size_t sq_size;
	uint32_t *sq_head;	/* kernel writes */
	uint32_t *sq_tail;	/* we write */
	uint32_t sq_mask;
	uint32_t sq_entries;
	struct dlcache_sqe *sqes;
	uint32_t sq_local_tail;	/* next SQE we fill */

	void *cq_map;
	size_t cq_size;
	uint32_t *cq_head;	/* we write */
	uint32_t *cq_tail;	/* kernel writes */
	uint32_t *cq_flags;
	uint32_t cq_mask;
	struct dlcache_cqe *cqes;
};

/* What the loader needs of the module. */
#define KCLIENT_FEATS	(DLCACHE_FEAT_RING | DLCACHE_FEAT_GET_AT | \
			 DLCACHE_FEAT_FILL_WAIT | DLCACHE_FEAT_POLL | \
			 DLCACHE_FEAT_OWNER)

static void *at(void *base, uint32_t off)
{
	return (uint8_t *)base + off;
}

/* Whether @len bytes at @off fit in @size. */
static int fits(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

/* Whether a __u32 at @off fits in @size, aligned (it is used atomically). */
static int field_fits(uint64_t off, uint64_t size)
{
	return !(off % 4) && fits(off, 4, size);
}

static int entries_ok(uint32_t n, uint64_t most)
{
	return n && !(n & (n - 1)) && n <= most;
}

int dlc_kclient_check_layout(const struct dlcache_ring_setup *rs,
			     uint32_t asked, const char **why)
{
	const struct dlcache_sqring_offsets *sq = &rs->sq_off;
	const struct dlcache_cqring_offsets *cq = &rs->cq_off;
	uint64_t most = 1;

	while (most < asked)
		most <<= 1;
	*why = "SETUP_RING returned ring sizes beyond what was asked";
	if (!entries_ok(rs->sq_entries, most) ||
	    !entries_ok(rs->cq_entries, 2 * most))
		return -EPROTO;
	*why = "SETUP_RING returned mmap sizes out of range";
	if (!rs->sq_mmap_size || rs->sq_mmap_size > DLC_KCLIENT_RING_MAX ||
	    !rs->cq_mmap_size || rs->cq_mmap_size > DLC_KCLIENT_RING_MAX)
		return -EPROTO;
	*why = "SETUP_RING returned SQ offsets outside the SQ mapping";
	if (!field_fits(sq->head, rs->sq_mmap_size) ||
	    !field_fits(sq->tail, rs->sq_mmap_size) ||
	    !field_fits(sq->ring_mask, rs->sq_mmap_size) ||
	    !field_fits(sq->ring_entries, rs->sq_mmap_size) ||
	    !field_fits(sq->flags, rs->sq_mmap_size) ||
	    !field_fits(sq->dropped, rs->sq_mmap_size) ||
	    sq->sqes % 8 ||
	    !fits(sq->sqes, (uint64_t)rs->sq_entries *
			sizeof(struct dlcache_sqe), rs->sq_mmap_size))
		return -EPROTO;
	*why = "SETUP_RING returned CQ offsets outside the CQ mapping";
	if (!field_fits(cq->head, rs->cq_mmap_size) ||
	    !field_fits(cq->tail, rs->cq_mmap_size) ||
	    !field_fits(cq->ring_mask, rs->cq_mmap_size) ||
	    !field_fits(cq->ring_entries, rs->cq_mmap_size) ||
	    !field_fits(cq->flags, rs->cq_mmap_size) ||
	    !field_fits(cq->pending, rs->cq_mmap_size) ||
	    cq->cqes % 8 ||
	    !fits(cq->cqes, (uint64_t)rs->cq_entries *
			sizeof(struct dlcache_cqe), rs->cq_mmap_size))
		return -EPROTO;
	*why = NULL;
	return 0;
}

uint32_t dlc_kclient_attach_flags(uint32_t owner, uint32_t self)
{
	if (owner == DLC_KCLIENT_SELF || owner == self)
		return 0;
	return DLCACHE_ATTACH_F_OWNER | DLCACHE_ATTACH_F_NOCREATE;
}

/*
 * ATTACH @req; with a job, and no room for the job's own time line
 * (consumers or policy memory), again without it: the shared one still
 * works, with less precision. Returns 0 or -errno.
 */
static int kattach(struct dlc_kclient *k, struct dlcache_attach *req)
{
	struct dlcache_attach a = *req;
	int ret;

	ret = ioctl(k->fd, DLCACHE_IOC_ATTACH, &a) ? -errno : 0;
	if ((ret == -EUSERS || ret == -EDQUOT || ret == -ENOMEM) &&
	    (a.flags & DLCACHE_ATTACH_F_JOB)) {
		k->job_refused = ret;
		a = *req;
		a.flags &= ~DLCACHE_ATTACH_F_JOB;
		a.job = 0;
		ret = ioctl(k->fd, DLCACHE_IOC_ATTACH, &a) ? -errno : 0;
	}
	if (!ret)
		*req = a;
	return ret;
}

/*
 * GET_INFO, which fixes the session's features, and whether the module
 * speaks an ABI we can use for @nsamples samples. 0, or -errno with *@why.
 */
static int kclient_get_info(struct dlc_kclient *k, uint32_t nsamples,
			    const char **why)
{
	int ret;

	/*
	 * The session's features, fixed by this first GET_INFO (ABI 4).
	 * DLCACHE_FEAT_IDLE: our data set outlives this run, idle, for the
	 * next one to find cached (without it the module frees it at our
	 * last detach). Not needed: an older module has no idle sets.
	 */
	memset(&k->info, 0, sizeof(k->info));
	k->info.features = DLCACHE_FEAT_RING | DLCACHE_FEAT_POLL |
			   DLCACHE_FEAT_GET_AT | DLCACHE_FEAT_FILL_WAIT |
			   DLCACHE_FEAT_OWNER | DLCACHE_FEAT_CONSUMERS |
			   DLCACHE_FEAT_GET_AHEAD | DLCACHE_FEAT_IDLE |
			   DLCACHE_FEAT_FORMS;
	if (ioctl(k->fd, DLCACHE_IOC_GET_INFO, &k->info)) {
		ret = -errno;
		*why = "GET_INFO failed";
		/*
		 * ABI 3 and earlier used the ioctl magic 'D': such a module
		 * knows none of our commands. As any other ABI, refused.
		 */
		if (ret == -ENOTTY) {
			ret = -EPROTO;
			*why = "the module speaks another ABI version (GET_INFO: ENOTTY; ABI 3 or earlier)";
		}
		return ret;
	}
	/*
	 * ABI 2 or later: under ABI 1 a key alone reached any user's data
	 * set, and the CQ ring sat at another mmap offset. Later versions
	 * only add (uapi/dlcache.h's changelog): features decide the rest.
	 */
	if (k->info.abi_version < 2 ||
	    (k->info.features & KCLIENT_FEATS) != KCLIENT_FEATS) {
		*why = "the module speaks another ABI version or lacks features";
		return -EPROTO;
	}
	if (nsamples > k->info.max_samples) {
		*why = "the data set has more samples than the module allows";
		return -E2BIG;
	}
	return 0;
}

/* Why ATTACH refused with @ret, for a person; @own: our own data set. */
static const char *attach_why(int ret, int own)
{
	return ret == -EUSERS ? "the data set has as many jobs (consumers) as the module allows" :
	       ret == -EDQUOT ? "past the owner's limits on data sets or policy memory (uid_max_datasets, uid_max_policy_mb)" :
	       ret == -ENOMEM ? "past the module's policy memory limit, or out of memory" :
	       ret == -EACCES && !own ? "the trusted owner's data set does not let this user read it" :
	       ret == -EACCES ? "no read permission on the data set" :
	       ret == -ENOENT && !own ? "the trusted owner has no data set of this key that this user may read (never created for another owner)" :
	       ret == -EEXIST ? "this user's data set of this key exists with another mode than kernel_mode asks (kept idle after its last use: it expires after the module's idle_keep_s)" :
	       ret == -EINVAL ? "a data set with this key has another sample count" :
	       "ATTACH failed";
}

/*
 * ATTACH data set @key of @owner (see dlc_kclient_open()), and check
 * that what the module gave is what was asked for. 0, or -errno with
 * *@why; the session stays attached until the fd is closed.
 */
static int kclient_attach(struct dlc_kclient *k, const uint64_t key[2],
			  uint32_t nsamples, uint32_t mode, uint32_t window,
			  uint32_t owner, uint64_t job, const char **why)
{
	struct dlcache_attach at_req, base;
	uint32_t self = (uint32_t)geteuid(), expect, want_mode = 0;
	int ret, own;

	memset(&at_req, 0, sizeof(at_req));
	at_req.key[0] = key[0];
	at_req.key[1] = key[1];
	at_req.nsamples = nsamples;
	at_req.window = window;
	at_req.flags = dlc_kclient_attach_flags(owner, self);
	own = !(at_req.flags & DLCACHE_ATTACH_F_OWNER);
	/*
	 * Our own data set has the mode we create it with (0: 0600), asked
	 * explicitly; a trusted owner's has the owner's, whatever it is.
	 */
	if (own)
		want_mode = mode ? mode : 0600;
	at_req.mode = want_mode;
	/* A form set: our own only, 0600, of a module that has them. */
	if (k->form) {
		if (!own || !(k->info.features & DLCACHE_FEAT_FORMS)) {
			*why = !own ? "forms are kept in this user's own data sets only" :
			       "the module keeps no forms (DLCACHE_FEAT_FORMS)";
			return -EOPNOTSUPP;
		}
		at_req.flags |= DLCACHE_ATTACH_F_FORM;
		at_req.form = k->form;
		at_req.mode = want_mode = 0600;
	}
	if (!own)
		at_req.owner_uid = owner;
	/* An ABI 2 module has one time line per data set: share it. */
	if (job && (k->info.features & DLCACHE_FEAT_CONSUMERS)) {
		at_req.flags |= DLCACHE_ATTACH_F_JOB;
		at_req.job = job;
	}
	expect = own ? self : owner;
	base = at_req;
	ret = kattach(k, &at_req);
	if (ret == -EEXIST && own) {
		/*
		 * DLCACHE_FEAT_ATTACH_MATCH: our data set exists with another
		 * window or lookahead (another job's geometry: any will do)
		 * or another mode (checked below). When it went meanwhile,
		 * create it again as asked.
		 */
		at_req = base;
		at_req.window = 0;
		at_req.flags |= DLCACHE_ATTACH_F_NOCREATE;
		ret = kattach(k, &at_req);
		if (ret == -ENOENT) {
			at_req = base;
			ret = kattach(k, &at_req);
		}
	}
	if (ret) {
		*why = attach_why(ret, own);
		return ret;
	}
	/*
	 * Whatever the module says (one without DLCACHE_FEAT_ATTACH_MATCH
	 * returns a kept data set's mode), use only the mode asked for: a
	 * wider one lets other users write the bytes this process reads.
	 */
	if (own && at_req.mode != want_mode) {
		*why = "ATTACH gave this user's data set with another mode than kernel_mode asks (kept idle from an earlier run): not used";
		return -EEXIST;
	}
	/* Whatever the module says, use only the owner we trust. */
	if (at_req.owner_uid != expect) {
		*why = "ATTACH gave a data set of another owner than the one trusted";
		return -EPERM;
	}
	k->owner_uid = at_req.owner_uid;
	k->handle = at_req.handle;
	k->result_flags = at_req.result_flags;
	return 0;
}

/* Unmap whichever of the rings is mapped. */
static void kclient_unmap_rings(struct dlc_kclient *k)
{
	if (k->sq_map != MAP_FAILED)
		munmap(k->sq_map, k->sq_size);
	if (k->cq_map != MAP_FAILED)
		munmap(k->cq_map, k->cq_size);
}

/*
 * SETUP_RING for @entries SQEs (at most the module's), map both rings
 * and point k at their words. 0, or -errno with *@why and nothing mapped.
 */
static int kclient_map_rings(struct dlc_kclient *k, uint32_t entries,
			     const char **why)
{
	struct dlcache_ring_setup rs;
	int ret;

	memset(&rs, 0, sizeof(rs));
	if (entries > k->info.max_ring_entries)
		entries = k->info.max_ring_entries;
	rs.sq_entries = entries;
	if (ioctl(k->fd, DLCACHE_IOC_SETUP_RING, &rs)) {
		ret = -errno;
		*why = "SETUP_RING failed";
		return ret;
	}
	/* Every offset and size below is the module's: checked first. */
	ret = dlc_kclient_check_layout(&rs, entries, why);
	if (ret)
		return ret;
	k->sq_size = rs.sq_mmap_size;
	k->cq_size = rs.cq_mmap_size;
	k->sq_map = mmap(NULL, k->sq_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 k->fd, DLCACHE_OFF_SQ_RING);
	k->cq_map = mmap(NULL, k->cq_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 k->fd, DLCACHE_OFF_CQ_RING);
	if (k->sq_map == MAP_FAILED || k->cq_map == MAP_FAILED) {
		ret = -errno;
		*why = "mmap of the rings failed";
		goto unmap_rings;
	}
	k->sq_head = at(k->sq_map, rs.sq_off.head);
	k->sq_tail = at(k->sq_map, rs.sq_off.tail);
	k->sq_mask = *(uint32_t *)at(k->sq_map, rs.sq_off.ring_mask);
	k->sq_entries = *(uint32_t *)at(k->sq_map, rs.sq_off.ring_entries);
	k->sqes = at(k->sq_map, rs.sq_off.sqes);
	k->sq_local_tail = __atomic_load_n(k->sq_tail, __ATOMIC_RELAXED);
	k->cq_head = at(k->cq_map, rs.cq_off.head);
	k->cq_tail = at(k->cq_map, rs.cq_off.tail);
	k->cq_flags = at(k->cq_map, rs.cq_off.flags);
	k->cq_mask = *(uint32_t *)at(k->cq_map, rs.cq_off.ring_mask);
	k->cqes = at(k->cq_map, rs.cq_off.cqes);
	/* The ring's own words must say what SETUP_RING did (checked). */
	if (k->sq_entries != rs.sq_entries || k->sq_mask != rs.sq_entries - 1 ||
	    k->cq_mask != rs.cq_entries - 1) {
		ret = -EPROTO;
		*why = "the mapped rings' sizes are not those SETUP_RING returned";
		goto unmap_rings;
	}
	return 0;
unmap_rings:
	kclient_unmap_rings(k);
	return ret;
}

/* dlc_kclient_open() of data set @key's form @form (0: the encoded set). */
static int kclient_open(const char *dev, const uint64_t key[2],
			uint32_t nsamples, uint32_t mode, uint32_t window,
			uint32_t entries, uint32_t owner, uint64_t job,
			uint32_t form, struct dlc_kclient **out,
			const char **why)
{
	struct dlc_kclient *k;
	int ret;

	*why = "out of memory";
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->form = form;
	k->sq_map = k->cq_map = MAP_FAILED;
	k->fd = open(dev, O_RDWR | O_CLOEXEC);
	if (k->fd < 0) {
		ret = -errno;
		*why = ret == -ENOENT ? "dlcache.ko is not loaded" :
		       ret == -EACCES ? "not in the device's group: see Documentation/admin.md" :
		       "cannot open it";
		goto free_k;
	}
	ret = kclient_get_info(k, nsamples, why);
	if (ret)
		goto close_fd;
	ret = kclient_attach(k, key, nsamples, mode, window, owner, job, why);
	if (ret)
		goto close_fd;
	ret = kclient_map_rings(k, entries, why);
	if (ret)
		goto close_fd;
	*out = k;
	*why = NULL;
	return 0;
	/* Closing the fd also detaches: the module's release does it. */
close_fd:
	close(k->fd);
free_k:
	free(k);
	return ret;
}

int dlc_kclient_open(const char *dev, const uint64_t key[2],
		     uint32_t nsamples, uint32_t mode, uint32_t window,
		     uint32_t entries, uint32_t owner, uint64_t job,
		     struct dlc_kclient **out, const char **why)
{
	return kclient_open(dev, key, nsamples, mode, window, entries, owner,
			    job, 0, out, why);
}

int dlc_kclient_open_form(const char *dev, const uint64_t key[2],
			  uint32_t nsamples, uint32_t window, uint32_t entries,
			  uint64_t job, uint32_t form,
			  struct dlc_kclient **out, const char **why)
{
	if (!form || form > 255) {
		*why = "no such form";
		return -EINVAL;
	}
	return kclient_open(dev, key, nsamples, 0600, window, entries,
			    DLC_KCLIENT_SELF, job, form, out, why);
}

void dlc_kclient_close(struct dlc_kclient *k)
{
	if (!k)
		return;
	kclient_unmap_rings(k);
	if (k->fd >= 0)
		close(k->fd);
	free(k);
}

int dlc_kclient_fd(const struct dlc_kclient *k)
{
	return k->fd;
}

uint32_t dlc_kclient_owner(const struct dlc_kclient *k)
{
	return k->owner_uid;
}

int dlc_kclient_joined(const struct dlc_kclient *k)
{
	return !!(k->result_flags & DLCACHE_ATTACH_JOINED);
}

int dlc_kclient_job_refused(const struct dlc_kclient *k)
{
	return k->job_refused;
}

int dlc_kclient_has(const struct dlc_kclient *k, uint64_t feature)
{
	return (k->info.features & feature) == feature;
}

int dlc_kclient_may_write(const struct dlc_kclient *k)
{
	return !!(k->result_flags & DLCACHE_ATTACH_MAY_WRITE);
}

uint32_t dlc_kclient_handle(const struct dlc_kclient *k)
{
	return k->handle;
}

uint64_t dlc_kclient_capacity(const struct dlc_kclient *k)
{
	return k->info.capacity_bytes;
}

uint32_t dlc_kclient_max_sample(const struct dlc_kclient *k)
{
	return k->info.max_sample_size;
}

int dlc_kclient_set_order(struct dlc_kclient *k, uint32_t epoch,
			  const uint32_t *ids, uint32_t len)
{
	struct dlcache_order o;

	memset(&o, 0, sizeof(o));
	o.handle = k->handle;
	o.epoch = epoch;
	o.ids = (uint64_t)(uintptr_t)ids;
	o.len = len;
	return ioctl(k->fd, DLCACHE_IOC_SET_ORDER, &o) ? -errno : 0;
}

struct dlcache_sqe *dlc_kclient_sqe(struct dlc_kclient *k)
{
	uint32_t head = __atomic_load_n(k->sq_head, __ATOMIC_ACQUIRE);
	struct dlcache_sqe *sqe;

	if (k->sq_local_tail - head >= k->sq_entries)
		return NULL;
	sqe = &k->sqes[k->sq_local_tail & k->sq_mask];
	memset(sqe, 0, sizeof(*sqe));
	k->sq_local_tail++;
	return sqe;
}

uint32_t dlc_kclient_unsubmitted(const struct dlc_kclient *k)
{
	return k->sq_local_tail - __atomic_load_n(k->sq_head, __ATOMIC_ACQUIRE);
}

const struct dlcache_sqe *dlc_kclient_unsubmitted_sqe(const struct dlc_kclient *k,
						      uint32_t i)
{
	uint32_t head = __atomic_load_n(k->sq_head, __ATOMIC_ACQUIRE);

	return &k->sqes[(head + i) & k->sq_mask];
}

int dlc_kclient_enter(struct dlc_kclient *k)
{
	struct dlcache_enter e;
	int ret;

	__atomic_store_n(k->sq_tail, k->sq_local_tail, __ATOMIC_RELEASE);
	memset(&e, 0, sizeof(e));
	e.to_submit = dlc_kclient_unsubmitted(k);
	do {
		e.submitted = 0;	/* the kernel's: 0 on input (ABI 4) */
		ret = ioctl(k->fd, DLCACHE_IOC_ENTER, &e);
	} while (ret < 0 && (errno == EINTR || errno == EAGAIN));
	return ret < 0 ? -errno : ret;
}

int dlc_kclient_pending(const struct dlc_kclient *k)
{
	return !!(__atomic_load_n(k->cq_flags, __ATOMIC_ACQUIRE) &
		  DLCACHE_CQ_F_PENDING);
}

uint32_t dlc_kclient_reap(struct dlc_kclient *k, struct dlcache_cqe *out,
			  uint32_t max)
{
	uint32_t head = *k->cq_head, n = 0;
	uint32_t tail = __atomic_load_n(k->cq_tail, __ATOMIC_ACQUIRE);

	while (head != tail && n < max)
		out[n++] = k->cqes[head++ & k->cq_mask];
	__atomic_store_n(k->cq_head, head, __ATOMIC_RELEASE);
	return n;
}

int dlc_kclient_stats(struct dlc_kclient *k, struct dlcache_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->handle = k->handle;
	st->flags = DLCACHE_STATS_F_DATASET;
	return ioctl(k->fd, DLCACHE_IOC_STATS, st) ? -errno : 0;
}
