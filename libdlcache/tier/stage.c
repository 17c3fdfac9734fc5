// SPDX-License-Identifier: MIT
/*
 * The staging tier: samples copied from a slow origin to node-local disk,
 * in order of upcoming use and across epoch boundaries, within a budget
 * in bytes, evicted by next use (stage.h says the layout and threads).
 *
 * Copies come two ways. The pipeline's own reads of the origin are
 * offered (dlc_stage_offer()) and written by the stager: that costs the
 * origin nothing. And the stager reads ahead of the pipeline from the
 * origin itself, beyond the positions the pipeline reads (its lead), one
 * sample at a time, while the budget admits the sample: so a pipeline
 * that decodes or trains slower than the origin delivers finds later
 * samples local, and every epoch after the first reads the origin only
 * for what the budget cannot hold.
 *
 * Admission and eviction are by next use, over this rank's order of the
 * epoch now and of the next: a sample is admitted when there is room, or
 * when a staged sample's next use is later than its own (that one is
 * evicted); else it is not. A sample not in either order is used last.
 * The ranking is policy.c's, the one the caches use, over one time line.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "pack.h"
#include "policy.h"
#include "reader.h"
#include "source.h"
#include "stage.h"

#define NONE		UINT32_MAX
#define FAR		DLC_POLICY_NEVER
/* Offered samples waiting to be written: at most so many, and so many bytes. */
#define OFFERS		4096
#define OFFER_BYTES	(64ULL << 20)

/* Per sample, st->state: */
enum {
	ST_ABSENT,	/* no copy of ours */
	ST_QUEUED,	/* offered: its bytes wait in st->offers */
	ST_WRITING,	/* the stager reads it (writing_buf NULL) or writes it */
	ST_STAGED,	/* a copy in place, counted in used */
};
/*
 * With any of them but ST_ABSENT: the pipeline read this copy (or its
 * bytes while the copy was being made), so its next offer of the sample
 * is no origin read.
 */
#define ST_SERVED	0x80

#define state_of(st, id)	((st)->state[id] & ~ST_SERVED)

struct offer {
	uint32_t id;
	struct dlc_buf *buf;
};

struct dlc_stage {
	const struct dlc_index *idx;
	struct dlc_source *src;
	const struct dlc_logger *log;
	uint32_t n, len, lead, epochs;
	uint64_t budget, max_file_bytes;
	int (*fill_order)(void *arg, uint32_t epoch, uint32_t *ids,
			  uint32_t len);
	void *order_arg;
	/*
	 * DIR/dlcache-UID/KEY, opened down from DIR by fd and checked on the
	 * fds (open_dir()): every copy is opened, written, renamed and
	 * removed relative to it, never by a path, so that nobody who can
	 * rename entries of DIR can swap the copies read.
	 */
	int dfd;
	struct timespec pack_mtime;	/* a pack's, read once; 0: a tree */
	char dir[4096];			/* its path: for log lines only */
	struct dlc_stage_shared *shared; /* KEY/counters, mmap()ed; or NULL */

	pthread_mutex_t lock;
	pthread_cond_t cv;		/* an offer, a move, or stop */
	int stop;
	/*
	 * The stager: stager_entry() adds 1 to returned (atomic) as its last
	 * touch of this struct; dlc_stage_close() says why that is soon.
	 */
	pthread_t thread;
	int started;
	uint32_t returned;
	/* Under lock. */
	uint8_t *state;			/* per sample: ST_* */
	/*
	 * The staged samples, ranked by next use on this rank's time line
	 * (consumer 0): dlc_policy_victim() is the copy used last. The
	 * line holds the orders of cur_epoch and, unless it is the last,
	 * the next; last_epoch is the newest it holds, -1: none.
	 */
	struct dlc_policy pol;
	void *pol_mem;
	size_t pol_bytes;
	int64_t last_epoch;
	uint64_t used;
	/* The orders of epoch cur_epoch (0) and the next (1), once prepared. */
	uint32_t *order[2];
	int prepared;
	uint32_t cur_epoch, cur_pos;
	uint64_t ahead;			/* next virtual position to read ahead */
	uint64_t stuck_at;		/* the cursor when the budget said no */
	int stuck;
	/*
	 * The pipeline is not waiting on storage (dlc_stage_advance()): the
	 * origin has time for the stager's reads ahead.
	 */
	int origin_spare;
	struct offer *offers;		/* a ring of OFFERS */
	uint32_t ohead, olen;
	uint64_t obytes;		/* their bytes */
	/* The sample stage_one() works on, and its bytes once it has them. */
	uint32_t writing_id;
	struct dlc_buf *writing_buf;

	int last_err;			/* the last write error logged */
	int full_logged;		/* ENOSPC or EDQUOT said */
	struct dlc_stage_counters c;	/* under lock */
};

/* Called with st->lock held: move @id to @state, keeping ST_SERVED. */
static void set_state(struct dlc_stage *st, uint32_t id, uint8_t state)
{
	st->state[id] = (uint8_t)((st->state[id] & ST_SERVED) | state);
}

static uint64_t blocks(uint64_t bytes)
{
	return (bytes + 4095) & ~4095ULL;
}

#define shared_add(st, field, v)					\
	do {								\
		if ((st)->shared)					\
			__atomic_fetch_add(&(st)->shared->field, (v),	\
					   __ATOMIC_RELAXED);		\
	} while (0)

/* Called with st->lock held: @id's next use, as policy.c keys it (FAR: none). */
static uint64_t next_use(const struct dlc_stage *st, uint32_t id)
{
	return st->prepared ? dlc_policy_key(&st->pol, id) : FAR;
}

static void copy_name(uint32_t id, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIu32, id);
}

/*
 * Called with st->lock held: @id's copy of @size bytes is in place. Once
 * per sample: -EEXIST when it is staged already.
 */
static int add_staged(struct dlc_stage *st, uint32_t id, uint64_t size)
{
	if (id >= st->n || state_of(st, id) == ST_STAGED)
		return -EEXIST;
	set_state(st, id, ST_STAGED);
	dlc_policy_insert(&st->pol, id);
	st->used += blocks(size);
	return 0;
}

/* Called with st->lock held: forget @id's copy, and remove its file. */
static void drop_staged(struct dlc_stage *st, uint32_t id, int unlink_it)
{
	char name[16];

	dlc_policy_remove(&st->pol, id);
	st->state[id] = ST_ABSENT;
	st->used -= blocks(dlc_index_size(st->idx, id));
	if (unlink_it) {
		copy_name(id, name, sizeof(name));
		unlinkat(st->dfd, name, 0);
	}
}

/*
 * Called with st->lock held: evict the copy used last, when its next use
 * is after @use. 1 when one went, 0 when none is used later.
 */
static int evict_after(struct dlc_stage *st, uint64_t use)
{
	uint32_t victim = dlc_policy_victim(&st->pol);

	if (victim == DLC_POLICY_NIL || next_use(st, victim) <= use)
		return 0;
	drop_staged(st, victim, 1);
	st->c.evictions++;
	shared_add(st, evictions, 1);
	return 1;
}

/*
 * Called with st->lock held: make room for @size bytes of a sample whose
 * next use is @use, evicting later-used copies. 1 when it fits now, 0
 * when it does not (then no copy used sooner than it was evicted).
 */
static int admit(struct dlc_stage *st, uint64_t size, uint64_t use)
{
	uint64_t need = blocks(size);

	if (need > st->budget || use == FAR)
		return 0;
	while (st->used + need > st->budget)
		if (!evict_after(st, use))
			return 0;
	return 1;
}

/*
 * The origin's mtime of sample @id: its pack's (stat()ed once), or its
 * file's: @b's, as the read of it (the pipeline's or the stager's own)
 * saw it on the fd it read, else a statx of its path with the source's
 * read deadline (dlc_source_mtime(): a hung origin costs at most that,
 * and dlc_source_cancel() ends it).
 */
static int origin_mtime(struct dlc_stage *st, uint32_t id,
			const struct dlc_buf *b, struct timespec *t)
{
	uint64_t ns;
	int ret;

	if (st->pack_mtime.tv_sec || st->pack_mtime.tv_nsec) {
		*t = st->pack_mtime;
		return 0;
	}
	ns = b ? b->mtime_ns : 0;
	if (!ns) {
		ret = dlc_source_mtime(st->src, id, &ns);
		if (ret)
			return ret;
	}
	t->tv_sec = (time_t)(ns / 1000000000ULL);
	t->tv_nsec = (long)(ns % 1000000000ULL);
	return 0;
}

/*
 * Write @b as sample @id's copy: a temporary file, the origin's mtime,
 * then the rename into place (an fdatasync first when the index has no
 * crc32c to tell a torn copy by after a crash). Stager thread, unlocked.
 */
static int write_copy(struct dlc_stage *st, uint32_t id, const struct dlc_buf *b)
{
	struct timespec times[2];
	char tmp[64], name[16];
	uint32_t crc;
	size_t done = 0;
	ssize_t w;
	int fd, ret;

	ret = origin_mtime(st, id, b, &times[1]);
	if (ret)
		return ret;
	times[0] = times[1];
	snprintf(tmp, sizeof(tmp), ".tmp.%d.%" PRIu32, (int)getpid(), id);
	fd = openat(st->dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		    0600);
	if (fd < 0)
		return -errno;
	while (done < b->len) {
		w = write(fd, b->data + done, b->len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			ret = w < 0 ? -errno : -EIO;
			goto err_unlink;
		}
		done += (size_t)w;
	}
	if (futimens(fd, times) ||
	    (dlc_index_crc32c(st->idx, id, &crc) && fdatasync(fd))) {
		ret = -errno;
		goto err_unlink;
	}
	if (close(fd)) {
		fd = -1;
		ret = -errno;
		goto err_unlink;
	}
	copy_name(id, name, sizeof(name));
	if (renameat(st->dfd, tmp, st->dfd, name)) {
		ret = -errno;
		unlinkat(st->dfd, tmp, 0);
		return ret;
	}
	return 0;
err_unlink:
	if (fd >= 0)
		close(fd);
	unlinkat(st->dfd, tmp, 0);
	return ret;
}

/*
 * A copy of @id another process made since we looked (same user, same
 * data set): take it, as its size is the index's. Its bytes are checked
 * when read.
 */
static int found_copy(struct dlc_stage *st, uint32_t id)
{
	char name[16];
	struct stat sb;

	copy_name(id, name, sizeof(name));
	return !fstatat(st->dfd, name, &sb, AT_SYMLINK_NOFOLLOW) &&
	       S_ISREG(sb.st_mode) &&
	       (uint64_t)sb.st_size == dlc_index_size(st->idx, id);
}

/*
 * Stage sample @id: its bytes @b (an offer) or, without, read from the
 * origin. Called with st->lock held and st->state[id] ST_ABSENT; drops
 * the lock while it works.
 */
static void stage_one(struct dlc_stage *st, uint32_t id, struct dlc_buf *b)
{
	uint64_t size = dlc_index_size(st->idx, id);
	struct dlc_buf *own = NULL;
	int ret, found;

	if (!admit(st, size, next_use(st, id))) {
		if (!b) {
			st->stuck = 1;
			st->stuck_at = (uint64_t)st->cur_epoch * st->len +
				       st->cur_pos;
		}
		return;
	}
	set_state(st, id, ST_WRITING);
	st->writing_id = id;
	st->writing_buf = b;
	st->used += blocks(size);	/* reserved while writing */
	pthread_mutex_unlock(&st->lock);
	found = found_copy(st, id);
	ret = 0;
	if (!found && !b) {
		ret = dlc_source_read(st->src, id, st->max_file_bytes, &own);
		if (!ret && own->len != size) {
			/* The file changed since it was indexed: not ours to copy. */
			dlc_buf_put(own);
			own = NULL;
			ret = -EBADMSG;
		}
		b = own;
		pthread_mutex_lock(&st->lock);
		st->writing_buf = own;
		/* Counted now: a claim may take these bytes before the write. */
		if (own) {
			st->c.prefetched++;
			st->c.prefetch_bytes += size;
			shared_add(st, prefetched, 1);
			shared_add(st, prefetch_bytes, size);
		}
		pthread_mutex_unlock(&st->lock);
	}
	if (!found && !ret)
		ret = write_copy(st, id, b);
	pthread_mutex_lock(&st->lock);
	st->writing_buf = NULL;
	st->writing_id = NONE;
	st->used -= blocks(size);
	if (ret == -ENOSPC || ret == -EDQUOT) {
		/*
		 * The disk (or this user's quota) is fuller than the budget
		 * said: the budget becomes what is held, said once.
		 */
		st->state[id] = ST_ABSENT;
		if (!st->full_logged)
			dlc_logf(st->log, DLC_LOG_WARN,
				 "staging: %s is full (%s) at %llu KiB of copies; staging_bytes lowered to that",
				 st->dir, strerror(-ret),
				 (unsigned long long)(st->used >> 10));
		st->full_logged = 1;
		if (st->budget > st->used)
			st->budget = st->used;
	} else if (ret) {
		st->state[id] = ST_ABSENT;
		/*
		 * Once per errno: a failing disk must not flood the log.
		 * -ECANCELED: the loader is being destroyed.
		 */
		if (ret != -EBADMSG && ret != -ENOENT && ret != -ECANCELED &&
		    ret != st->last_err)
			dlc_logf(st->log, DLC_LOG_WARN,
				 "staging: cannot stage sample %u in %s: %s",
				 id, st->dir, strerror(-ret));
		st->last_err = ret;
	} else if (add_staged(st, id, size)) {
		st->state[id] = ST_ABSENT;	/* never: it was ST_WRITING */
	} else {
		if (!found) {
			st->c.writes++;
			shared_add(st, writes, 1);
		}
	}
	dlc_buf_put(own);
}

/*
 * Called with st->lock held: the next sample to read ahead from the
 * origin, or NONE. Beyond the pipeline's lead, within this epoch and the
 * next, of the samples with no copy.
 */
static uint32_t ahead_pick(struct dlc_stage *st)
{
	uint64_t cur = (uint64_t)st->cur_epoch * st->len + st->cur_pos;
	uint64_t end = (uint64_t)(st->cur_epoch + 2) * st->len, v;
	uint32_t id;

	if (!st->prepared || st->stuck || !st->origin_spare)
		return NONE;
	if (st->epochs && end > (uint64_t)st->epochs * st->len)
		end = (uint64_t)st->epochs * st->len;
	if (st->ahead < cur + st->lead)
		st->ahead = cur + st->lead;
	for (v = st->ahead; v < end; v++) {
		id = st->order[v / st->len > st->cur_epoch][v % st->len];
		if (state_of(st, id) == ST_ABSENT) {
			st->ahead = v + 1;
			return id;
		}
	}
	st->ahead = end;
	return NONE;
}

static void *stager_main(void *arg)
{
	struct dlc_stage *st = arg;
	struct offer o;
	uint32_t id;

	pthread_mutex_lock(&st->lock);
	/* At stop, the offers still waiting are written first: they are cheap. */
	while (!st->stop || st->olen) {
		if (st->olen) {
			o = st->offers[st->ohead];
			st->ohead = (st->ohead + 1) % OFFERS;
			st->olen--;
			st->obytes -= o.buf->len;
			if (state_of(st, o.id) == ST_QUEUED) {
				set_state(st, o.id, ST_ABSENT);
				stage_one(st, o.id, o.buf);
			}
			pthread_mutex_unlock(&st->lock);
			dlc_buf_put(o.buf);
			pthread_mutex_lock(&st->lock);
			continue;
		}
		id = st->stop ? NONE : ahead_pick(st);
		if (id != NONE) {
			stage_one(st, id, NULL);
			continue;
		}
		if (!st->stop)
			pthread_cond_wait(&st->cv, &st->lock);
	}
	pthread_mutex_unlock(&st->lock);
	return NULL;
}

static void *stager_entry(void *arg)
{
	struct dlc_stage *st = arg;

	stager_main(st);
	/* The last touch of @st: dlc_stage_close() may free it from now on. */
	__atomic_add_fetch(&st->returned, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void map_counters(struct dlc_stage *st)
{
	struct dlc_stage_shared *m;
	int fd = openat(st->dfd, "counters",
			O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0)
		return;
	if (ftruncate(fd, 4096)) {
		close(fd);
		return;
	}
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return;
	/* A new file is zeros: the first to map it stamps it. */
	__atomic_compare_exchange_n(&m->magic, &(uint64_t){ 0 },
				    DLC_STAGE_COUNTERS_MAGIC, 0,
				    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	if (m->magic != DLC_STAGE_COUNTERS_MAGIC) {
		munmap(m, 4096);
		return;
	}
	st->shared = m;
}

/*
 * @name as a copy's name: sample ID in canonical decimal (what
 * copy_name() writes: digits only, no leading zero, no sign or space),
 * below @n. So "7" is sample 7 and "07", "007", "+7", " 7" are no
 * sample's: one sample has one name.
 */
static int parse_copy_name(const char *name, uint32_t n, uint32_t *id)
{
	uint64_t v = 0;
	const char *c;

	if (name[0] < '0' || name[0] > '9' || (name[0] == '0' && name[1]))
		return -EINVAL;
	for (c = name; *c; c++) {
		if (*c < '0' || *c > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(*c - '0');
		if (v >= n)	/* also before it could overflow */
			return -EINVAL;
	}
	*id = (uint32_t)v;
	return 0;
}

/*
 * Take the copies in place: a file named by a sample ID whose size is the
 * index's and whose mtime is the origin's now. Anything else under such
 * a name is stale, and a temporary file of a process that is gone was
 * never finished: both are removed. Names that are no sample's (not
 * canonical, out of range) are left alone: not ours.
 */
static void scan(struct dlc_stage *st)
{
	struct timespec t;
	struct dirent *de;
	struct stat sb;
	char *end;
	DIR *d;
	int fd = dup(st->dfd);
	uint32_t v;
	long pid;

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d))) {
		if (!strncmp(de->d_name, ".tmp.", 5)) {
			pid = strtol(de->d_name + 5, &end, 10);
			if (pid > 0 && kill((pid_t)pid, 0) && errno == ESRCH)
				unlinkat(st->dfd, de->d_name, 0);
			continue;
		}
		if (parse_copy_name(de->d_name, st->n, &v))
			continue;
		if (fstatat(st->dfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(sb.st_mode))
			continue;
		if ((uint64_t)sb.st_size != dlc_index_size(st->idx, v) ||
		    origin_mtime(st, v, NULL, &t) ||
		    t.tv_sec != sb.st_mtim.tv_sec ||
		    t.tv_nsec != sb.st_mtim.tv_nsec) {
			unlinkat(st->dfd, de->d_name, 0);
			st->c.invalid++;
			shared_add(st, invalid, 1);
			continue;
		}
		add_staged(st, v, (uint64_t)sb.st_size);
	}
	closedir(d);
}

/*
 * Whether DIR, open as @fd, may hold this user's directory: 0, or -EPERM
 * with the reason logged. Whoever may rename DIR's entries may swap
 * dlcache-UID for a tree of their own between two jobs, or while one
 * opens it: DIR must be root's or this user's and writable by nobody
 * else, or sticky (as /tmp, where only DIR's owner and root rename
 * others' entries).
 */
static int check_parent(const struct dlc_stage_opts *o, int fd)
{
	unsigned int uid = (unsigned int)getuid();
	struct stat sb;

	if (fstat(fd, &sb))
		return -errno;
	if (sb.st_mode & S_ISVTX)
		return 0;
	if (sb.st_uid != 0 && sb.st_uid != uid) {
		dlc_logf(o->log, DLC_LOG_ERROR,
			 "staging: %s is owned by uid %u (neither root nor uid %u) and has no sticky bit: its owner could replace dlcache-%u in it; refusing to stage there",
			 o->dir, (unsigned int)sb.st_uid, uid, uid);
		return -EPERM;
	}
	if (sb.st_mode & (S_IWGRP | S_IWOTH)) {
		dlc_logf(o->log, DLC_LOG_ERROR,
			 "staging: %s is writable by group or others (mode %04o) and has no sticky bit: they could replace dlcache-%u in it; refusing to stage there",
			 o->dir, (unsigned int)(sb.st_mode & 07777), uid);
		return -EPERM;
	}
	return 0;
}

/*
 * Open DIR/dlcache-UID/KEY into st->dfd, making what is missing (0700;
 * DIR's parent must exist). Each step is opened relative to the fd of
 * the one above and checked on the fd opened, so that what is checked is
 * what is used, and nothing is resolved by path again: DIR (check_parent()),
 * then dlcache-UID (this user's, a directory, mode 0700: a symlink or a
 * file there is refused as another owner is), then KEY inside it, which
 * only this user (and root) can change. 0, or -errno with the reason
 * logged.
 */
static int open_dir(struct dlc_stage *st, const struct dlc_stage_opts *o)
{
	unsigned int uid = (unsigned int)getuid();
	char user[32], key_name[40], *abs;
	int ret, pfd, ufd = -1;
	uint64_t key[2];
	struct stat sb;

	snprintf(user, sizeof(user), "dlcache-%u", uid);
	dlc_index_key(o->idx, key);
	snprintf(key_name, sizeof(key_name), "%016" PRIx64 "%016" PRIx64,
		 key[0], key[1]);
	if (mkdir(o->dir, 0700) && errno != EEXIST)
		goto err_errno;
	/* Its path, absolute, for log lines only. */
	abs = realpath(o->dir, NULL);
	snprintf(st->dir, sizeof(st->dir), "%s/%s/%s", abs ? abs : o->dir,
		 user, key_name);
	free(abs);
	pfd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		goto err_errno;
	ret = check_parent(o, pfd);
	if (ret) {
		close(pfd);
		if (ret == -EPERM)
			return ret;
		goto err_ret;
	}
	if (mkdirat(pfd, user, 0700) && errno != EEXIST) {
		ret = -errno;
		close(pfd);
		goto err_ret;
	}
	ufd = openat(pfd, user, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	ret = ufd < 0 ? -errno : 0;
	close(pfd);
	if (ret == -ELOOP || ret == -ENOTDIR ||
	    (!ret && (fstat(ufd, &sb) || sb.st_uid != uid ||
		      (sb.st_mode & 077)))) {
		if (ufd >= 0)
			close(ufd);
		dlc_logf(o->log, DLC_LOG_ERROR,
			 "staging: %s/%s is not a directory of uid %u with mode 0700: refusing to stage there",
			 o->dir, user, uid);
		return -EPERM;
	}
	if (ret)
		goto err_ret;
	if (mkdirat(ufd, key_name, 0700) && errno != EEXIST) {
		ret = -errno;
		close(ufd);
		goto err_ret;
	}
	st->dfd = openat(ufd, key_name,
			 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	ret = st->dfd < 0 ? -errno : 0;
	close(ufd);
	if (!ret)
		return 0;
	goto err_ret;
err_errno:
	ret = -errno;
err_ret:
	dlc_logf(o->log, DLC_LOG_ERROR, "staging: %s: %s", o->dir,
		 strerror(-ret));
	return ret;
}

int dlc_stage_open(const struct dlc_stage_opts *o, struct dlc_stage **out)
{
	struct dlc_stage *st;
	struct statvfs vfs;
	uint32_t i;
	int ret;

	*out = NULL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->idx = o->idx;
	st->src = o->src;
	st->log = o->log;
	st->n = dlc_index_count(o->idx);
	st->len = o->epoch_len;
	st->lead = o->lead;
	st->epochs = o->epochs;
	st->max_file_bytes = o->max_file_bytes;
	st->fill_order = o->fill_order;
	st->order_arg = o->order_arg;
	st->dfd = -1;
	st->writing_id = NONE;
	pthread_mutex_init(&st->lock, NULL);
	pthread_cond_init(&st->cv, NULL);
	ret = -ENOMEM;
	st->state = calloc(st->n, 1);
	st->last_epoch = -1;
	/* The rest of one epoch and the next: room for three, as the cache. */
	if (3ULL * st->len <= DLC_POLICY_MAX_WINDOW)
		st->pol_bytes = dlc_policy_mem_size(st->n, 3 * st->len);
	if (st->pol_bytes)
		st->pol_mem = aligned_alloc(64, (st->pol_bytes + 63) & ~(size_t)63);
	st->offers = calloc(OFFERS, sizeof(*st->offers));
	for (i = 0; i < 2; i++) {
		st->order[i] = malloc(sizeof(*st->order[i]) * st->len);
		if (!st->order[i])
			goto err;
	}
	if (!st->state || !st->pol_mem || !st->offers)
		goto err;
	if (dlc_policy_init(&st->pol, st->n, 3 * st->len, st->pol_mem,
			    st->pol_bytes, dlc_now_ns())) {
		ret = -EINVAL;
		goto err;
	}
	ret = open_dir(st, o);
	if (ret)
		goto err;
	st->budget = o->budget;
	if (!st->budget) {
		if (fstatvfs(st->dfd, &vfs)) {
			ret = -errno;
			goto err;
		}
		st->budget = (uint64_t)vfs.f_bavail * vfs.f_frsize / 2;
	}
	if (dlc_source_pack(st->src)) {
		struct stat sb;

		if (stat(dlc_pack_path(dlc_source_pack(st->src)), &sb)) {
			ret = -errno;
			goto err;
		}
		st->pack_mtime = sb.st_mtim;
	}
	map_counters(st);
	scan(st);
	ret = pthread_create(&st->thread, NULL, stager_entry, st);
	if (ret) {
		ret = -ret;
		goto err;
	}
	st->started = 1;
	dlc_logf(o->log, DLC_LOG_INFO,
		 "staging in %s: %llu MiB, %u copies (%llu MiB) in place",
		 st->dir, (unsigned long long)(st->budget >> 20), st->pol.ncached,
		 (unsigned long long)(st->used >> 20));
	*out = st;
	return 0;
err:
	dlc_stage_close(st);
	return ret;
}

/*
 * The stager's lifetime: from dlc_stage_open() to dlc_stage_close(),
 * which waits until it returned, and never frees what it borrows (@st,
 * and through it the index, the source, the logger, the directory's fd)
 * before. That wait is bounded: its origin reads and stats
 * (dlc_source_read(), dlc_source_mtime()) have the source's deadline
 * and end within about 0.1 s of dlc_source_cancel(), done here first;
 * what is left is its offers' writes to the node-local staging disk
 * (only where io_uring is refused are origin reads plain blocking ones).
 * Its exit is another matter: the kernel holds it while an io_uring read
 * it gave up on is still stuck (a hard NFS mount that stopped
 * answering), so once it returned it is given 1 s to end and then
 * detached (dlc_join_bounded()): it touches nothing of ours any more.
 */
void dlc_stage_close(struct dlc_stage *st)
{
	uint32_t i;

	if (!st)
		return;
	if (st->started) {
		/* Its read in progress, if any, ends now, as every later one. */
		dlc_source_cancel(st->src);
		pthread_mutex_lock(&st->lock);
		st->stop = 1;
		pthread_cond_signal(&st->cv);
		pthread_mutex_unlock(&st->lock);
		dlc_join_bounded(st->thread, &st->returned, 1, st->log);
	}
	for (; st->olen; st->olen--) {
		dlc_buf_put(st->offers[st->ohead].buf);
		st->ohead = (st->ohead + 1) % OFFERS;
	}
	free(st->offers);
	if (st->shared)
		munmap(st->shared, 4096);
	if (st->dfd >= 0)
		close(st->dfd);
	for (i = 0; i < 2; i++) {
		free(st->order[i]);
	}
	free(st->state);
	free(st->pol_mem);
	pthread_mutex_destroy(&st->lock);
	pthread_cond_destroy(&st->cv);
	free(st);
}

/* Called with st->lock held: a new time line holding what is staged. */
static void line_restart(struct dlc_stage *st)
{
	uint32_t id;

	dlc_policy_init(&st->pol, st->n, 3 * st->len, st->pol_mem,
			st->pol_bytes, dlc_now_ns());
	for (id = 0; id < st->n; id++)
		if (state_of(st, id) == ST_STAGED)
			dlc_policy_insert(&st->pol, id);
	st->last_epoch = -1;
}

/*
 * Called with st->lock held, the orders of @epoch and the next in
 * st->order[]: the time line at (@epoch, @start), holding both orders
 * (but none past the last epoch), as dlc_cache_prepare_epoch() keeps it.
 * 0 or -errno (then nothing is ranked: the stage is not prepared).
 */
static int line_prepare(struct dlc_stage *st, uint32_t epoch, uint32_t start)
{
	uint64_t pos;
	int ret;

	/* Unless the line goes on to (@epoch, @start), it starts over. */
	if (st->last_epoch < 0 ||
	    dlc_policy_position(&st->pol, 0, epoch, start, &pos) ||
	    pos < st->pol.line[0].cursor) {
		line_restart(st);
		ret = dlc_policy_add_epoch(&st->pol, 0, epoch, st->order[0],
					   st->len);
		if (ret)
			return -EINVAL;
		st->last_epoch = epoch;
	}
	if (st->last_epoch == epoch && !(st->epochs && epoch + 1 >= st->epochs)) {
		ret = dlc_policy_add_epoch(&st->pol, 0, epoch + 1, st->order[1],
					   st->len);
		if (ret)
			return -EINVAL;
		st->last_epoch = epoch + 1;
	}
	/* What the earlier epochs left unclaimed, and @start's first part. */
	if (!dlc_policy_position(&st->pol, 0, epoch, start, &pos))
		dlc_policy_advance(&st->pol, 0, pos, dlc_now_ns());
	return 0;
}

int dlc_stage_prepare_epoch(struct dlc_stage *st, uint32_t epoch,
			    uint32_t start)
{
	uint32_t *o0 = malloc(sizeof(*o0) * st->len);
	uint32_t *o1 = malloc(sizeof(*o1) * st->len);
	uint32_t *tmp;
	int ret = -ENOMEM;

	if (o0 && o1)
		ret = st->fill_order(st->order_arg, epoch, o0, st->len);
	if (!ret)
		ret = st->fill_order(st->order_arg, epoch + 1, o1, st->len);
	pthread_mutex_lock(&st->lock);
	if (!ret) {
		tmp = st->order[0];
		st->order[0] = o0;
		o0 = tmp;
		tmp = st->order[1];
		st->order[1] = o1;
		o1 = tmp;
		ret = line_prepare(st, epoch, start);
		if (ret)
			st->prepared = 0;
	}
	if (!ret) {
		st->cur_epoch = epoch;
		st->cur_pos = start;
		st->ahead = 0;
		st->stuck = 0;
		st->prepared = 1;
		/* A smaller budget than the copies in place: the latest go. */
		while (st->used > st->budget && evict_after(st, 0))
			;
		pthread_cond_signal(&st->cv);
	}
	pthread_mutex_unlock(&st->lock);
	free(o0);
	free(o1);
	return ret;
}

void dlc_stage_advance(struct dlc_stage *st, uint32_t epoch, uint32_t pos,
		       int origin_spare)
{
	uint64_t v;

	pthread_mutex_lock(&st->lock);
	if (origin_spare && !st->origin_spare)
		pthread_cond_signal(&st->cv);
	st->origin_spare = origin_spare;
	/*
	 * Positions below cur_pos are claimed: their samples' next use moved
	 * (to the next epoch's, or none), and so did their rank.
	 */
	if (st->prepared && epoch == st->cur_epoch && st->cur_pos <= pos &&
	    st->cur_pos < st->len) {
		st->cur_pos = pos + 1 < st->len ? pos + 1 : st->len;
		if (!dlc_policy_position(&st->pol, 0, epoch, st->cur_pos - 1, &v))
			dlc_policy_advance(&st->pol, 0, v + 1, dlc_now_ns());
	}
	if (epoch == st->cur_epoch) {
		/* The budget said no: a batch's worth of uses later, ask again. */
		if (st->stuck && (uint64_t)epoch * st->len + pos >=
				 st->stuck_at + 64) {
			st->stuck = 0;
			pthread_cond_signal(&st->cv);
		}
	}
	pthread_mutex_unlock(&st->lock);
}

/* 1 with the copy's name (in st->dfd) in @buf when @id is staged, else 0. */
static int stage_name(struct dlc_stage *st, uint32_t id, char *buf, size_t len)
{
	int staged;

	pthread_mutex_lock(&st->lock);
	staged = state_of(st, id) == ST_STAGED;
	pthread_mutex_unlock(&st->lock);
	if (staged)
		copy_name(id, buf, len);
	return staged;
}

static int stage_served(void *tier, uint32_t id, struct dlc_read_done *d)
{
	struct dlc_stage *st = tier;
	uint32_t want;
	int err = d->err;

	if (!err && d->buf->len != dlc_index_size(st->idx, id))
		err = -EBADMSG;
	if (!err && !dlc_index_crc32c(st->idx, id, &want) &&
	    !dlc_buf_crc_matches(d->buf, want))
		err = -EBADMSG;
	pthread_mutex_lock(&st->lock);
	if (!err) {
		st->c.hits++;
		st->c.hit_bytes += d->buf->len;
		shared_add(st, hits, 1);
		shared_add(st, hit_bytes, d->buf->len);
		if (state_of(st, id) != ST_ABSENT)
			st->state[id] |= ST_SERVED;
	} else {
		/* Torn, not the file, or gone (another process evicted it). */
		if (state_of(st, id) == ST_STAGED)
			drop_staged(st, id, err != -ENOENT);
		if (err != -ENOENT) {
			st->c.invalid++;
			shared_add(st, invalid, 1);
		}
	}
	pthread_mutex_unlock(&st->lock);
	if (err && err != -ENOENT)
		dlc_logf(st->log, DLC_LOG_WARN,
			 "staging: the copy of sample %u in %s is not the indexed file (%s): removed; reading the origin",
			 id, st->dir, strerror(-err));
	if (err) {
		dlc_buf_put(d->buf);
		d->buf = NULL;
	}
	return err;
}

static void stage_offer(void *tier, uint32_t id, struct dlc_buf *b)
{
	struct dlc_stage *st = tier;
	pthread_mutex_lock(&st->lock);
	if (st->state[id] & ST_SERVED) {
		/* The bytes came from our copy (or its bytes), not the origin. */
		st->state[id] &= (uint8_t)~ST_SERVED;
		pthread_mutex_unlock(&st->lock);
		return;
	}
	shared_add(st, origin_reads, 1);
	shared_add(st, origin_bytes, b->len);
	/* A full queue drops the offer: the stager is behind the disk. */
	if (st->state[id] == ST_ABSENT && st->olen < OFFERS &&
	    st->obytes + b->len <= OFFER_BYTES &&
	    b->len == dlc_index_size(st->idx, id)) {
		st->offers[(st->ohead + st->olen++) % OFFERS] =
			(struct offer){ id, dlc_buf_get(b) };
		st->obytes += b->len;
		st->state[id] = ST_QUEUED;
		pthread_cond_signal(&st->cv);
	}
	pthread_mutex_unlock(&st->lock);
}

/*
 * The bytes of sample @id's copy while it is being made (offered, or
 * being written), as a new reference; else NULL.
 */
static struct dlc_buf *pending_buf(struct dlc_stage *st, uint32_t id)
{
	struct dlc_buf *b = NULL;
	uint32_t i;

	pthread_mutex_lock(&st->lock);
	if (state_of(st, id) == ST_QUEUED) {
		for (i = 0; i < st->olen; i++)
			if (st->offers[(st->ohead + i) % OFFERS].id == id) {
				b = st->offers[(st->ohead + i) % OFFERS].buf;
				break;
			}
	} else if (state_of(st, id) == ST_WRITING && st->writing_id == id) {
		b = st->writing_buf;
	}
	if (b)
		dlc_buf_get(b);
	pthread_mutex_unlock(&st->lock);
	return b;
}

static int stage_queue(void *tier, struct dlc_reader *r, uint32_t id,
		       uint64_t tag, char *scratch, size_t len)
{
	struct dlc_stage *st = tier;
	struct dlc_buf *b = pending_buf(st, id);

	/* Its copy is being made from these bytes: no read at all. */
	if (b)
		return dlc_reader_queue_buf(r, b, tag) ? 0 : 1;
	if (!stage_name(st, id, scratch, len))
		return 0;
	/*
	 * Opened in the directory checked at open (st->dfd, which outlives
	 * the reader: the loader destroys it first), never by its path:
	 * whoever can rename entries of DIR cannot swap what is read.
	 */
	return dlc_reader_queue_at(r, st->dfd, scratch, tag) ? 0 : 1;
}

static const struct dlc_tier_ops stage_ops = {
	.name = "staging",
	.queue = stage_queue,
	.served = stage_served,
	.offer = stage_offer,
};

void dlc_stage_tier(struct dlc_stage *st, struct dlc_tier *out)
{
	out->ops = &stage_ops;
	out->tier = st;
}

void dlc_stage_hit_above(struct dlc_stage *st, uint64_t bytes)
{
	shared_add(st, above_hits, 1);
	shared_add(st, above_bytes, bytes);
}

void dlc_stage_counters(struct dlc_stage *st, struct dlc_stage_counters *out)
{
	pthread_mutex_lock(&st->lock);
	*out = st->c;
	out->used = st->used;
	out->budget = st->budget;
	pthread_mutex_unlock(&st->lock);
}
