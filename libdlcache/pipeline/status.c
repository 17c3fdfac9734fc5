// SPDX-License-Identifier: MIT
/*
 * A loader's status file (status.h): written through a shared mapping by
 * the loader's I/O thread, read with pread() by anyone the file's mode
 * lets in. A reader trusts nothing in it: the name, the owner, the mode,
 * the size and the format are checked before a byte is used, and a torn
 * copy (the writer mid-way) is read again.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "internal.h"
#include "proc.h"
#include "status.h"

#define STATUS_MAGIC	0x73636c64U	/* "dlcs" */
#define STATUS_VERSION	1U
#define STATUS_DIR	"/dev/shm"
#define STATUS_PREFIX	"dlcache-loader-"
/* Reads of a file that keep finding the writer mid-way before it is skipped. */
#define STATUS_TRIES	8

struct status_file {
	uint32_t magic;
	uint32_t version;
	uint32_t size;		/* sizeof(struct status_file), the writer's */
	uint32_t pad;
	uint64_t seq;		/* odd while the writer writes */
	struct dlc_status_info info;
};

struct dlc_status {
	struct status_file *f;	/* the mapping */
	uint64_t last;		/* dlc_now_ns() of the last refresh */
	uint32_t pid;		/* the process that made the file */
	char path[96];
};

/* Loaders this process made: the N of their files' names. */
static uint32_t status_serial;

static int status_off(void)
{
	const char *env = getenv("DLCACHE_STATUS");

	return env && !strcmp(env, "0");
}

struct dlc_status *dlc_status_open(const struct dlc_status_info *info,
				   const struct dlc_logger *log)
{
	struct dlc_status *s;
	struct status_file *f;
	int fd, err;

	if (status_off())
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->pid = info->pid;
	snprintf(s->path, sizeof(s->path), STATUS_DIR "/" STATUS_PREFIX "%u-%u-%u",
		 info->uid, info->pid,
		 __atomic_fetch_add(&status_serial, 1, __ATOMIC_RELAXED));
	fd = open(s->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	/*
	 * A file of this name is a killed process's whose pid we now have
	 * (this one's names differ by N), or one another user made to squat
	 * it, which the sticky directory keeps us from removing.
	 */
	if (fd < 0 && errno == EEXIST && !unlink(s->path))
		fd = open(s->path,
			  O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			  0600);
	if (fd < 0)
		goto fail;
	/*
	 * The umask may have taken bits of 0600 away; none may be added.
	 * The pages are taken now: a store into a hole of a full tmpfs
	 * would raise SIGBUS in the I/O thread, in the user's job.
	 */
	if (fchmod(fd, 0600))
		goto fail_unlink;
	err = posix_fallocate(fd, 0, sizeof(*f));
	if (err) {
		errno = err;
		goto fail_unlink;
	}
	f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (f == MAP_FAILED)
		goto fail_unlink;
	close(fd);
	f->info = *info;
	f->info.t_ns = 0;
	memset(&f->info.stats, 0, sizeof(f->info.stats));
	f->size = sizeof(*f);
	f->version = STATUS_VERSION;
	/* The magic last: a reader skips a file without it. */
	__atomic_store_n(&f->magic, STATUS_MAGIC, __ATOMIC_RELEASE);
	s->f = f;
	return s;

fail_unlink:
	err = errno;
	unlink(s->path);
	close(fd);
	errno = err;
fail:
	dlc_logf(log, DLC_LOG_INFO,
		 "status: cannot publish at %s (dlcachectl watch will not show this loader): %s",
		 s->path, strerror(errno));
	free(s);
	return NULL;
}

int dlc_status_due(const struct dlc_status *s, uint64_t now)
{
	return s && now - s->last >= DLC_STATUS_PERIOD_NS;
}

void dlc_status_write(struct dlc_status *s, const struct dlc_stats *st,
		      uint32_t backend, uint64_t now)
{
	struct status_file *f;
	uint64_t seq;

	if (!s)
		return;
	f = s->f;
	s->last = now;
	seq = __atomic_load_n(&f->seq, __ATOMIC_RELAXED);
	__atomic_store_n(&f->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	f->info.t_ns = now;
	f->info.backend = backend;
	memcpy(&f->info.stats, st, sizeof(*st));
	__atomic_store_n(&f->seq, seq + 2, __ATOMIC_RELEASE);
}

void dlc_status_close(struct dlc_status *s)
{
	if (!s)
		return;
	if ((uint32_t)getpid() == s->pid)
		unlink(s->path);
	munmap(s->f, sizeof(*s->f));
	free(s);
}

/*
 * File @name in @dfd read into @out: 1 when it is a live loader's status,
 * 0 to skip it. A stale file of this user's is removed.
 */
static int status_read(int dfd, const char *name, struct dlc_status_info *out)
{
	unsigned int uid, pid, serial;
	struct status_file f;
	struct stat st;
	int fd, n = -1, tries, ok = 0;
	uint64_t seq;

	if (sscanf(name, STATUS_PREFIX "%u-%u-%u%n", &uid, &pid, &serial,
		   &n) != 3 || n < 0 || name[n])
		return 0;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != uid ||
	    (st.st_mode & 07777) != 0600 || st.st_size != (off_t)sizeof(f))
		goto out;
	for (tries = 0; tries < STATUS_TRIES; tries++) {
		if (pread(fd, &f, sizeof(f), 0) != (ssize_t)sizeof(f) ||
		    pread(fd, &seq, sizeof(seq),
			  offsetof(struct status_file, seq)) != sizeof(seq))
			goto out;
		if (!(f.seq & 1) && f.seq == seq)
			break;
		usleep(100);
	}
	if (tries == STATUS_TRIES || f.magic != STATUS_MAGIC ||
	    f.version != STATUS_VERSION || f.size != sizeof(f) ||
	    f.info.uid != uid || f.info.pid != pid)
		goto out;
	if (!dlc_proc_live(pid, f.info.start)) {
		/* Its process is gone (killed): the file is litter. */
		if (uid == (unsigned int)geteuid())
			unlinkat(dfd, name, 0);
		goto out;
	}
	f.info.source[sizeof(f.info.source) - 1] = 0;
	*out = f.info;
	ok = 1;
out:
	close(fd);
	return ok;
}

int dlc_status_scan(const char *dir,
		    int (*fn)(const struct dlc_status_info *info, void *arg),
		    void *arg)
{
	struct dlc_status_info info;
	struct dirent *de;
	int ret = 0;
	DIR *d;

	d = opendir(dir ? dir : STATUS_DIR);
	if (!d)
		return -errno;
	while (!ret && (de = readdir(d)))
		if (!strncmp(de->d_name, STATUS_PREFIX, strlen(STATUS_PREFIX)) &&
		    status_read(dirfd(d), de->d_name, &info))
			ret = fn(&info, arg);
	closedir(d);
	return ret;
}
