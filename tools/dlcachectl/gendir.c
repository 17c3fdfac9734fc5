// SPDX-License-Identifier: MIT
/*
 * dlcachectl gen's directory: the stamp that records what was generated
 * (so a second run with the same arguments does nothing, and a run that
 * died is redone), the class folders' names, and the removal of what an
 * earlier set left that the new one does not have. Separate from the
 * command (gen.c) and the images (genimage.c): this is the one part that
 * removes files, and it touches only names gen itself writes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gen.h"

/* Class @c's folder: "class_" and three digits, so names sort as numbers. */
int gen_class_dir(char *buf, size_t len, const char *dir, uint32_t c)
{
	int n = snprintf(buf, len, "%s/class_%03u", dir, c);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

void gen_stamp_text(const struct gen_params *p, char *buf, size_t len)
{
	snprintf(buf, len,
		 "dlcachectl gen %d\nimages %u\nclasses %u\nseed %llu\n"
		 "quality %u\n",
		 GEN_VERSION, p->images, p->classes,
		 (unsigned long long)p->seed, p->quality);
	/* Only when set: the stamps of default sets stay as they were. */
	if (p->distinct)
		snprintf(buf + strlen(buf), len - strlen(buf), "distinct 1\n");
}

/* Stamp contents, or "" when there is none; -errno on a read error. */
int gen_stamp_read(const char *dir, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t got;
	int fd, n;

	buf[0] = 0;
	n = snprintf(path, sizeof(path), "%s/%s", dir, STAMP_NAME);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	got = read(fd, buf, len - 1);
	close(fd);
	if (got < 0)
		return -errno;
	buf[got] = 0;
	return 1;
}

/*
 * Replace the stamp atomically and durably: written, synced, renamed, and
 * the directory synced, so after a crash it is the old stamp or the new one.
 */
int gen_stamp_write(const char *dir, const char *text, char *path,
		       size_t plen)
{
	char tmp[PATH_MAX];
	size_t len = strlen(text);
	int fd, dfd, n, m, err = 0;

	n = snprintf(path, plen, "%s/%s", dir, STAMP_NAME);
	m = snprintf(tmp, sizeof(tmp), "%s/%s.%d.tmp", dir, STAMP_NAME,
		     (int)getpid());
	if (n < 0 || (size_t)n >= plen || m < 0 || (size_t)m >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		err = errno ? -errno : -EIO;
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		unlink(tmp);
		return err;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		if (fsync(dfd))
			err = -errno;
		close(dfd);
	}
	return err;
}

/* mkdir -p; on failure @path is cut at the component that failed. */
int gen_mkdir_p(char *path)
{
	char *s;

	for (s = path + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(path, 0755) && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

/* 1 when @dir holds anything, 0 when empty, -errno. */
int gen_dir_nonempty(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int found = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			found = 1;
			break;
		}
	closedir(d);
	return found;
}

/* Parse "<prefix><digits><suffix>"; -1 when @name has another form. */
static long parse_numbered(const char *name, const char *prefix,
			   const char *suffix)
{
	size_t pl = strlen(prefix), sl = strlen(suffix), nl = strlen(name);
	const char *s;
	long v = 0;

	if (nl <= pl + sl || strncmp(name, prefix, pl) ||
	    strcmp(name + nl - sl, suffix))
		return -1;
	for (s = name + pl; s < name + nl - sl; s++) {
		if (*s < '0' || *s > '9' || v > 100000000L)
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v;
}

/*
 * After regenerating a set that gen made before with other arguments,
 * remove what the new set does not have: images past the new count or in
 * another class, classes past the new count, temporaries of an earlier run
 * that died. Only names gen itself writes are touched.
 */
int gen_remove_stale(const struct gen_params *p, char *where, size_t wlen)
{
	char sub[PATH_MAX], file[PATH_MAX];
	struct dirent *de, *fe;
	DIR *d, *cd;
	int err = 0;

	d = opendir(p->dir);
	if (!d) {
		snprintf(where, wlen, "%s", p->dir);
		return -errno;
	}
	while (!err && (de = readdir(d))) {
		long c = parse_numbered(de->d_name, "class_", "");
		int keep_class;

		if (c < 0 || gen_class_dir(sub, sizeof(sub), p->dir, (uint32_t)c))
			continue;
		/* Only the canonical spelling belongs to the new set. */
		keep_class = (unsigned long)c < p->classes &&
			     !strcmp(sub + strlen(p->dir) + 1, de->d_name);
		if (!keep_class && snprintf(sub, sizeof(sub), "%s/%s", p->dir,
					    de->d_name) >= (int)sizeof(sub))
			continue;
		cd = opendir(sub);
		if (!cd)
			continue;
		while ((fe = readdir(cd))) {
			long i = parse_numbered(fe->d_name, "img_", ".jpg");
			char want[32];
			int stale;

			if (!strncmp(fe->d_name, ".img_", 5)) {
				stale = strlen(fe->d_name) > 4 &&
					!strcmp(fe->d_name +
						strlen(fe->d_name) - 4, ".tmp");
			} else if (i >= 0) {
				snprintf(want, sizeof(want), "img_%06ld.jpg", i);
				stale = !keep_class ||
					(unsigned long)i >= p->images ||
					(unsigned long)i % p->classes !=
						(unsigned long)c ||
					strcmp(want, fe->d_name);
			} else {
				stale = 0;
			}
			if (!stale || snprintf(file, sizeof(file), "%s/%s", sub,
					       fe->d_name) >= (int)sizeof(file))
				continue;
			if (unlink(file) && errno != ENOENT) {
				err = -errno;
				snprintf(where, wlen, "%s", file);
				break;
			}
		}
		closedir(cd);
		/* A class that is no longer ours goes if nothing else is in it. */
		if (!err && !keep_class)
			rmdir(sub);
	}
	closedir(d);
	return err;
}

/*
 * The images must be on disk before the stamp says they are: one syncfs()
 * instead of an fsync() per file, which would cost more than making them.
 */
int gen_sync_fs(const char *dir)
{
	int err = 0, fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (syncfs(fd))
		err = -errno;
	close(fd);
	return err;
}
