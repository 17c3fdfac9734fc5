// SPDX-License-Identifier: MIT
/*
 * dlc_index_build(): the index of an ImageFolder tree, made by walking it
 * the way torchvision.datasets.ImageFolder does (classes the sorted
 * directories of the root, samples every image file below each, followed
 * through symlinks, in os.walk's sorted order), then reading every sample
 * once for its CRC-32C. Separate from the index itself (index.c) and its
 * file (indexfile.c): this is the one part that follows torchvision's
 * semantics over a live, possibly changing file system.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlcache.h"
#include "crc32c.h"
#include "index_int.h"

struct strbuf {
	char *p;
	size_t len, cap;
};

/* Append @n bytes and a NUL; the offset of the copy goes to @off. */
static int strbuf_add(struct strbuf *b, const char *s, size_t n, size_t *off)
{
	int ret;

	if (n >= SIZE_MAX - b->len)
		return -ENOMEM;
	ret = dlc_index_grow(&b->p, &b->cap, b->len + n + 1, 1);
	if (ret)
		return ret;
	memcpy(b->p + b->len, s, n);
	b->p[b->len + n] = '\0';
	if (off)
		*off = b->len;
	b->len += n + 1;
	return 0;
}

/* Byte order, as Python's sorted() on str for valid UTF-8 names. */
static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static const char *const image_exts[] = {
	".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff",
	".webp",
};

static int has_image_ext(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < sizeof(image_exts) / sizeof(image_exts[0]); i++) {
		size_t el = strlen(image_exts[i]);

		if (len >= el && !strcasecmp(name + len - el, image_exts[i]))
			return 1;
	}
	return 0;
}

struct walk_dir {
	size_t path_off;	/* relpath in the dirs strbuf */
	size_t parent;		/* index of the parent, SIZE_MAX for the class */
	dev_t dev;
	ino_t ino;
};

struct walk_ent {
	size_t off;		/* relpath in the paths strbuf */
	uint32_t label;
	uint64_t size;
};

struct walk {
	int rootfd;
	size_t root_len;
	struct strbuf dirs;
	struct walk_dir *dir;
	size_t ndir, dir_cap;
	struct strbuf paths;
	struct walk_ent *ent;
	size_t nent, ent_cap;
};

static int walk_sample_cmp(const void *a, const void *b, void *arg)
{
	const struct walk_ent *x = a, *y = b;
	const char *base = arg;
	const char *px = base + x->off, *py = base + y->off;

	if (x->label != y->label)
		return x->label < y->label ? -1 : 1;
	return dlc_index_path_cmp(px, dlc_index_dir_len(px), py,
				  dlc_index_dir_len(py));
}

/*
 * Whether a directory entry is a directory, following symlinks as
 * os.walk(followlinks=True) does. A dangling symlink is neither (1 = skip),
 * as DirEntry.is_dir() swallows ENOENT; other stat errors are real.
 */
static int entry_stat(int dfd, const struct dirent *de, struct stat *st)
{
	if (fstatat(dfd, de->d_name, st, 0) == 0)
		return 0;
	if (errno == ENOENT)
		return 1;
	return -errno;
}

/* Queue @name under directory @parent (SIZE_MAX: @name is a class). */
static int walk_add_dir(struct walk *w, size_t parent, const char *name)
{
	size_t nlen = strlen(name), plen = 0, off;
	struct walk_dir *d;
	int ret;

	if (parent != SIZE_MAX)
		plen = strlen(w->dirs.p + w->dir[parent].path_off) + 1;
	if (w->root_len + 1 + plen + nlen >= PATH_MAX)
		return -ENAMETOOLONG;
	ret = dlc_index_grow(&w->dir, &w->dir_cap, w->ndir + 1, sizeof(*w->dir));
	if (ret)
		return ret;
	ret = dlc_index_grow(&w->dirs.p, &w->dirs.cap,
			     w->dirs.len + plen + nlen + 1, 1);
	if (ret)
		return ret;
	/* The parent's path is read only now: growing may have moved it. */
	off = w->dirs.len;
	if (plen) {
		memcpy(w->dirs.p + off, w->dirs.p + w->dir[parent].path_off,
		       plen - 1);
		w->dirs.p[off + plen - 1] = '/';
	}
	memcpy(w->dirs.p + off + plen, name, nlen + 1);
	w->dirs.len += plen + nlen + 1;
	d = &w->dir[w->ndir++];
	d->path_off = off;
	d->parent = parent;
	d->dev = 0;
	d->ino = 0;
	return 0;
}

static int walk_add_file(struct walk *w, const char *dir, size_t dlen,
			 const char *name, uint32_t label, uint64_t size)
{
	size_t nlen = strlen(name);
	struct walk_ent *e;
	int ret;

	if (w->root_len + 1 + dlen + 1 + nlen >= PATH_MAX)
		return -ENAMETOOLONG;
	if (w->nent >= IDX_MAX_SAMPLES)
		return -E2BIG;
	ret = dlc_index_grow(&w->ent, &w->ent_cap, w->nent + 1, sizeof(*w->ent));
	if (ret)
		return ret;
	ret = dlc_index_grow(&w->paths.p, &w->paths.cap,
			     w->paths.len + dlen + nlen + 2, 1);
	if (ret)
		return ret;
	e = &w->ent[w->nent++];
	e->off = w->paths.len;
	e->label = label;
	e->size = size;
	memcpy(w->paths.p + w->paths.len, dir, dlen);
	w->paths.p[w->paths.len + dlen] = '/';
	memcpy(w->paths.p + w->paths.len + dlen + 1, name, nlen + 1);
	w->paths.len += dlen + nlen + 2;
	return 0;
}

/*
 * Scan one directory: its image files become samples, its subdirectories
 * are queued. Queued, not recursed into, so that a deep tree costs neither
 * stack nor open descriptors.
 */
static int walk_one(struct walk *w, size_t di, uint32_t label)
{
	struct dirent *de;
	struct stat st;
	size_t p, dlen;
	DIR *d;
	int fd, ret = 0;

	fd = openat(w->rootfd, w->dirs.p + w->dir[di].path_off,
		    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	w->dir[di].dev = st.st_dev;
	w->dir[di].ino = st.st_ino;
	/*
	 * os.walk would follow a symlink cycle until the path got too long
	 * and silently drop the rest; a cycle is a broken data set, say so.
	 */
	for (p = w->dir[di].parent; p != SIZE_MAX; p = w->dir[p].parent) {
		if (w->dir[p].dev == st.st_dev && w->dir[p].ino == st.st_ino) {
			close(fd);
			return -ELOOP;
		}
	}
	d = fdopendir(fd);
	if (!d) {
		ret = -errno;
		close(fd);
		return ret;
	}
	for (;;) {
		const char *dir;
		size_t nlen;
		int isdir, have_st = 0;

		errno = 0;
		de = readdir(d);
		if (!de) {
			ret = -errno;
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		nlen = strlen(de->d_name);
		switch (de->d_type) {
		case DT_DIR:
			isdir = 1;
			break;
		case DT_REG:
			isdir = 0;
			break;
		case DT_LNK:
		case DT_UNKNOWN:
			ret = entry_stat(fd, de, &st);
			if (ret < 0)
				goto out;
			if (ret > 0) {
				ret = 0;
				continue;
			}
			isdir = S_ISDIR(st.st_mode);
			have_st = 1;
			break;
		default:
			continue;
		}
		if (isdir) {
			ret = walk_add_dir(w, di, de->d_name);
			if (ret)
				goto out;
			continue;
		}
		if (!has_image_ext(de->d_name, nlen))
			continue;
		if (!have_st) {
			ret = entry_stat(fd, de, &st);
			if (ret < 0)
				goto out;
		}
		/*
		 * torchvision would list a FIFO or a dangling link and fail on
		 * open; reading a FIFO would hang the loader, so only regular
		 * files count.
		 */
		if (ret > 0 || !S_ISREG(st.st_mode)) {
			ret = 0;
			continue;
		}
		/* Re-read each time: queueing may move the strbuf. */
		dir = w->dirs.p + w->dir[di].path_off;
		dlen = strlen(dir);
		ret = walk_add_file(w, dir, dlen, de->d_name, label,
				    (uint64_t)st.st_size);
		if (ret)
			goto out;
	}
out:
	closedir(d);
	return ret;
}

/* The classes: every entry of the root that is a directory, sorted. */
static int list_classes(int rootfd, struct strbuf *names, char ***sorted,
			uint32_t *nclasses)
{
	size_t *offs = NULL, n = 0, cap = 0, i;
	struct dirent *de;
	struct stat st;
	char **v = NULL;
	DIR *d;
	int fd, ret = 0;

	fd = dup(rootfd);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		ret = -errno;
		close(fd);
		return ret;
	}
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			ret = -errno;
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (de->d_type != DT_DIR) {
			if (de->d_type != DT_LNK && de->d_type != DT_UNKNOWN)
				continue;
			ret = entry_stat(rootfd, de, &st);
			if (ret < 0)
				break;
			if (ret > 0 || !S_ISDIR(st.st_mode)) {
				ret = 0;
				continue;
			}
		}
		if (n >= IDX_MAX_CLASSES) {
			ret = -E2BIG;
			break;
		}
		ret = dlc_index_grow(&offs, &cap, n + 1, sizeof(*offs));
		if (!ret)
			ret = strbuf_add(names, de->d_name, strlen(de->d_name),
					 &offs[n]);
		if (ret)
			break;
		n++;
	}
	closedir(d);
	if (!ret && n) {
		v = malloc(n * sizeof(*v));
		if (!v)
			ret = -ENOMEM;
	}
	if (!ret) {
		for (i = 0; i < n; i++)
			v[i] = names->p + offs[i];
		if (n)
			qsort(v, n, sizeof(*v), name_cmp);
		*sorted = v;
		*nclasses = (uint32_t)n;
	}
	free(offs);
	return ret;
}

/*
 * Read sample @i as the loader will (the whole file) and record its
 * CRC-32C and the size read. A file that cannot be read gets no checksum:
 * the index still lists it, and the loader reports it when it comes up.
 */
static void checksum_sample(struct dlc_index *idx, int rootfd, uint32_t i,
			    uint8_t *buf, size_t bufsz)
{
	uint64_t n = 0;
	uint32_t crc = 0;
	ssize_t r;
	int fd;

	fd = openat(rootfd, idx->arena + idx->path_off[i],
		    O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return;
	for (;;) {
		r = read(fd, buf, bufsz);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		crc = dlc_crc32c(crc, buf, (size_t)r);
		n += (uint64_t)r;
	}
	close(fd);
	if (r < 0)
		return;
	idx->crcs[i] = crc;
	idx->has_crc[i] = 1;
	/* Changed since the walk's stat: the bytes read are the truth. */
	idx->sizes[i] = n;
}

/* Move the walk's results into the index's compact arrays, sorted. */
static int index_fill(struct dlc_index *idx, struct walk *w, char **classes)
{
	size_t need = 0, pos = 0, len, i, bufsz = 1 << 20;
	uint8_t *buf;
	int ret;

	idx->count = (uint32_t)w->nent;
	ret = dlc_index_alloc_arrays(idx);
	if (ret)
		return ret;
	qsort_r(w->ent, w->nent, sizeof(*w->ent), walk_sample_cmp, w->paths.p);
	for (i = 0; i < idx->nclasses; i++)
		need += strlen(classes[i]) + 1;
	need += w->paths.len;
	idx->arena = malloc(need ? need : 1);
	if (!idx->arena)
		return -ENOMEM;
	for (i = 0; i < idx->nclasses; i++) {
		len = strlen(classes[i]) + 1;
		memcpy(idx->arena + pos, classes[i], len);
		idx->class_off[i] = pos;
		pos += len;
	}
	idx->total = 0;
	for (i = 0; i < w->nent; i++) {
		const char *p = w->paths.p + w->ent[i].off;

		len = strlen(p) + 1;
		memcpy(idx->arena + pos, p, len);
		idx->path_off[i] = pos;
		pos += len;
		idx->labels[i] = (int32_t)w->ent[i].label;
		idx->sizes[i] = w->ent[i].size;
	}
	buf = malloc(bufsz);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < w->nent; i++) {
		checksum_sample(idx, w->rootfd, (uint32_t)i, buf, bufsz);
		idx->total += idx->sizes[i];
	}
	free(buf);
	dlc_index_compute_key(idx, idx->key);
	return 0;
}

int dlc_index_build(const char *root, struct dlc_index **out)
{
	struct walk w = { .rootfd = -1 };
	struct strbuf names = { 0 };
	struct dlc_index *idx;
	char **classes = NULL;
	struct stat st;
	uint32_t c;
	size_t i;
	int ret;

	if (!root || !out)
		return -EINVAL;
	*out = NULL;
	idx = calloc(1, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	idx->root = realpath(root, NULL);
	if (!idx->root) {
		ret = -errno;
		goto err;
	}
	w.root_len = strlen(idx->root);
	/* stat first: a root that is an unreadable file is -ENOTDIR. */
	if (stat(idx->root, &st)) {
		ret = -errno;
		goto err;
	}
	if (!S_ISDIR(st.st_mode)) {
		ret = -ENOTDIR;
		goto err;
	}
	w.rootfd = open(idx->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (w.rootfd < 0) {
		ret = -errno;
		goto err;
	}
	ret = list_classes(w.rootfd, &names, &classes, &idx->nclasses);
	if (ret)
		goto err;
	/*
	 * Newer torchvision raises on an empty class unless allow_empty is
	 * set; an empty class still gets its number here, so labels match
	 * the allow_empty=True numbering, and only a set with no sample at
	 * all is an error.
	 */
	for (c = 0; c < idx->nclasses; c++) {
		size_t first = w.ndir;

		ret = walk_add_dir(&w, SIZE_MAX, classes[c]);
		if (ret)
			goto err;
		for (i = first; i < w.ndir; i++) {
			ret = walk_one(&w, i, c);
			if (ret)
				goto err;
		}
	}
	if (!w.nent) {
		ret = -ENODATA;
		goto err;
	}
	ret = index_fill(idx, &w, classes);
	if (ret)
		goto err;
	*out = idx;
	idx = NULL;
err:
	if (w.rootfd >= 0)
		close(w.rootfd);
	free(w.dirs.p);
	free(w.dir);
	free(w.paths.p);
	free(w.ent);
	free(names.p);
	free(classes);
	dlc_index_free(idx);
	return ret;
}

