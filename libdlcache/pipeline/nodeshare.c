// SPDX-License-Identifier: MIT
/*
 * Node sharing's segment (nodeshare.h): where the loaders of one group
 * publish their CPUs. Every field of the segment is read and written with
 * atomics: the processes that map it trust each other no more than they
 * trust the file (the same user's, checked), so a torn or odd slot only
 * makes a wrong guess at which CPUs are idle, never a wrong batch.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "internal.h"
#include "nodeshare.h"
#include "proc.h"

#define NODE_MAGIC	0x6e636c64U	/* "dlcn" */
#define NODE_VERSION	1U
/* CPUs a slot can name: cpu_set_t's 1024. */
#define NODE_CPU_WORDS	(CPU_SETSIZE / 64)
/* The longest a join or a leave waits for another's. */
#define NODE_LOCK_MS	2000U

struct node_slot {
	uint32_t pid;		/* 0: free; written by the loader that takes it */
	uint32_t pad;
	uint64_t start;		/* the process's start time, /proc/PID/stat */
	uint64_t cpus[NODE_CPU_WORDS];
};

struct node_seg {
	uint32_t magic;
	uint32_t version;
	uint32_t nslots;
	uint32_t pad;		/* zero */
	struct node_slot slot[DLC_NODE_SLOTS];
};

struct dlc_node_share {
	struct node_seg *seg;
	int fd;				/* the segment's file, for flock() */
	uint32_t me;			/* our slot */
	uint32_t pid;
	uint64_t cpus[NODE_CPU_WORDS];	/* ours, as published */
	char path[128];
	struct dlc_logger log;
};

int dlc_node_name_check(const char *name)
{
	size_t i, n = name ? strlen(name) : 0;

	if (n < 1 || n > DLC_NODE_NAME_MAX || name[0] == '.')
		return -EINVAL;
	for (i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return -EINVAL;
	}
	return 0;
}

/* Whether the loader of slot @s (pid @pid) is still there. */
static int slot_live(struct node_slot *s, uint32_t pid)
{
	uint64_t start = __atomic_load_n(&s->start, __ATOMIC_ACQUIRE);

	/* A start of 0 is a slot being filled in: live. */
	if (!start)
		return pid <= INT32_MAX && !(kill((pid_t)pid, 0) && errno == ESRCH);
	return dlc_proc_live(pid, start);
}

/* Free slot @s if it still holds @pid. */
static void slot_free(struct node_slot *s, uint32_t pid)
{
	__atomic_compare_exchange_n(&s->pid, &pid, 0, 0, __ATOMIC_ACQ_REL,
				    __ATOMIC_ACQUIRE);
}

/* Open or make the segment at ns->path: the fd, or -errno (logged). */
static int seg_open(struct dlc_node_share *ns)
{
	struct stat st;
	int fd, made = 1;

	fd = open(ns->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0 && errno == EEXIST) {
		made = 0;
		fd = open(ns->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0) {
		int err = errno;

		dlc_logf(&ns->log, DLC_LOG_WARN, "node sharing: cannot open %s: %s",
			 ns->path, strerror(err));
		return -err;
	}
	/* The umask may have taken bits of 0600 away. */
	if (made && fchmod(fd, 0600)) {
		int err = errno;

		close(fd);
		return -err;
	}
	if (fstat(fd, &st)) {
		int err = errno;

		close(fd);
		return -err;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		dlc_logf(&ns->log, DLC_LOG_WARN,
			 "node sharing: %s is not this user's own file of mode 0600 (uid %u, mode %04o): not used",
			 ns->path, (unsigned)st.st_uid,
			 (unsigned)(st.st_mode & 07777));
		close(fd);
		return -EPERM;
	}
	if (st.st_size != 0 && st.st_size != (off_t)sizeof(struct node_seg)) {
		dlc_logf(&ns->log, DLC_LOG_WARN,
			 "node sharing: %s is %lld bytes, not a segment of %zu: not used",
			 ns->path, (long long)st.st_size, sizeof(struct node_seg));
		close(fd);
		return -EINVAL;
	}
	/* Two makers size it alike; a size of 0 is one being made. */
	if (st.st_size == 0 && ftruncate(fd, sizeof(struct node_seg))) {
		int err = errno;

		close(fd);
		return -err;
	}
	return fd;
}

/*
 * flock(@fd, LOCK_EX) within NODE_LOCK_MS: a member holds it only to take
 * or free its slot, but one stopped (SIGSTOP, a debugger) while it does
 * must not hang the others' create or destroy. 0 or -errno (-ETIMEDOUT).
 */
static int lock_within(int fd)
{
	uint64_t end = dlc_now_ns() + NODE_LOCK_MS * 1000000ULL;

	while (flock(fd, LOCK_EX | LOCK_NB)) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (dlc_now_ns() > end)
			return -ETIMEDOUT;
		usleep(1000);
	}
	return 0;
}

/*
 * seg_open() under the lock, of the file the path still names: the last
 * loader to leave removes the file (dlc_node_leave()), so one that opened
 * it just before must open the path again.
 */
static int seg_lock(struct dlc_node_share *ns)
{
	int tries;

	for (tries = 0; tries < 100; tries++) {
		struct stat a, b;
		int fd = seg_open(ns), err;

		if (fd < 0)
			return fd;
		err = lock_within(fd);
		if (err) {
			dlc_logf(&ns->log, DLC_LOG_WARN,
				 "node sharing: %s: cannot lock it: %s; not used",
				 ns->path, strerror(-err));
			close(fd);
			return err;
		}
		if (!fstat(fd, &a) && !lstat(ns->path, &b) &&
		    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			return fd;
		close(fd);
	}
	return -EAGAIN;
}

/* Map the segment of @fd and check (or write) its header. */
static int seg_map(struct dlc_node_share *ns, int fd)
{
	struct node_seg *seg;
	uint32_t magic = 0;

	seg = mmap(NULL, sizeof(*seg), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (seg == MAP_FAILED)
		return -errno;
	if (__atomic_compare_exchange_n(&seg->magic, &magic, NODE_MAGIC, 0,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&seg->nslots, DLC_NODE_SLOTS, __ATOMIC_RELAXED);
		__atomic_store_n(&seg->version, NODE_VERSION, __ATOMIC_RELEASE);
	} else if (magic != NODE_MAGIC) {
		dlc_logf(&ns->log, DLC_LOG_WARN,
			 "node sharing: %s is not a dlcache node segment (magic %#x): not used",
			 ns->path, magic);
		munmap(seg, sizeof(*seg));
		return -EINVAL;
	}
	ns->seg = seg;
	return 0;
}

/* Take a free slot, or one whose process is gone. */
static int slot_take(struct dlc_node_share *ns, const cpu_set_t *cpus)
{
	struct node_seg *seg = ns->seg;
	uint64_t start = dlc_proc_start(ns->pid);
	uint32_t i, w, c;

	memset(ns->cpus, 0, sizeof(ns->cpus));
	for (c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, cpus))
			ns->cpus[c / 64] |= 1ULL << (c % 64);
	for (i = 0; i < DLC_NODE_SLOTS; i++) {
		struct node_slot *s = &seg->slot[i];
		uint32_t pid = __atomic_load_n(&s->pid, __ATOMIC_ACQUIRE);

		if (pid && !slot_live(s, pid)) {
			slot_free(s, pid);
			pid = 0;
		}
		if (pid)
			continue;
		if (!__atomic_compare_exchange_n(&s->pid, &pid, ns->pid, 0,
						 __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
			continue;
		/* start last: a reader takes a slot with start 0 for live. */
		__atomic_store_n(&s->start, 0, __ATOMIC_RELEASE);
		for (w = 0; w < NODE_CPU_WORDS; w++)
			__atomic_store_n(&s->cpus[w], ns->cpus[w],
					 __ATOMIC_RELAXED);
		__atomic_store_n(&s->start, start, __ATOMIC_RELEASE);
		ns->me = i;
		return 0;
	}
	dlc_logf(&ns->log, DLC_LOG_WARN,
		 "node sharing: %s has %u loaders already: not used",
		 ns->path, DLC_NODE_SLOTS);
	return -EUSERS;
}

int dlc_node_join(const char *name, const cpu_set_t *cpus,
		  const struct dlc_logger *log, struct dlc_node_share **out)
{
	struct dlc_node_share *ns;
	int fd, ret;

	*out = NULL;
	if (dlc_node_name_check(name))
		return -EINVAL;
	ns = calloc(1, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	ns->log = *log;
	ns->pid = (uint32_t)getpid();
	snprintf(ns->path, sizeof(ns->path), "/dev/shm/dlcache-node-%u-%s",
		 (unsigned)geteuid(), name);
	fd = seg_lock(ns);
	if (fd < 0) {
		free(ns);
		return fd;
	}
	ret = seg_map(ns, fd);
	if (!ret)
		ret = slot_take(ns, cpus);
	flock(fd, LOCK_UN);
	if (ret) {
		if (ns->seg)
			munmap(ns->seg, sizeof(*ns->seg));
		close(fd);
		free(ns);
		return ret;
	}
	ns->fd = fd;
	*out = ns;
	return 0;
}

/*
 * The other slots: free those whose process is gone, OR the CPUs of the
 * live ones into @other; how many are live.
 */
static uint32_t others_live(struct dlc_node_share *ns,
			    uint64_t other[NODE_CPU_WORDS])
{
	uint32_t i, w, live = 0;

	for (i = 0; i < DLC_NODE_SLOTS; i++) {
		struct node_slot *s = &ns->seg->slot[i];
		uint32_t pid = __atomic_load_n(&s->pid, __ATOMIC_ACQUIRE);

		if (!pid || i == ns->me)
			continue;
		if (!slot_live(s, pid)) {
			slot_free(s, pid);
			continue;
		}
		live++;
		for (w = 0; w < NODE_CPU_WORDS; w++)
			other[w] |= __atomic_load_n(&s->cpus[w], __ATOMIC_RELAXED);
	}
	return live;
}

int dlc_node_borrowable(struct dlc_node_share *ns, cpu_set_t *set)
{
	uint64_t other[NODE_CPU_WORDS] = { 0 };
	uint32_t c;
	int n = 0;

	others_live(ns, other);
	CPU_ZERO(set);
	for (c = 0; c < CPU_SETSIZE; c++) {
		uint64_t bit = 1ULL << (c % 64);

		if ((other[c / 64] & bit) && !(ns->cpus[c / 64] & bit)) {
			CPU_SET(c, set);
			n++;
		}
	}
	return n;
}

void dlc_node_leave(struct dlc_node_share *ns)
{
	uint64_t other[NODE_CPU_WORDS] = { 0 };
	uint32_t live;
	int locked;

	if (!ns)
		return;
	locked = !lock_within(ns->fd);
	slot_free(&ns->seg->slot[ns->me], ns->pid);
	/* Frees the slots of processes that are gone, too. */
	live = others_live(ns, other);
	/*
	 * The last one out removes the file: groups come and go with jobs.
	 * Not without the lock (a joiner may hold it): a later leaver will.
	 */
	if (!live && locked)
		unlink(ns->path);
	if (locked)
		flock(ns->fd, LOCK_UN);
	close(ns->fd);
	munmap(ns->seg, sizeof(*ns->seg));
	free(ns);
}

const char *dlc_node_path(const struct dlc_node_share *ns)
{
	return ns->path;
}
