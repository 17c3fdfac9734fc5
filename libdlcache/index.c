// SPDX-License-Identifier: MIT
/*
 * The index: the samples of an ImageFolder data set, built by walking the
 * tree the way torchvision.datasets.ImageFolder does, and kept in a text
 * file so that every rank trains on the same list without walking again.
 *
 * All strings (class names, then relative paths) live in one arena; the
 * per-sample arrays hold offsets, labels and sizes, so a million samples
 * cost about 20 bytes each plus their paths.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dlcache.h"
#include "crc32c.h"
#include "internal.h"
#include "pack.h"
#include "relpath.h"
#include "siphash.h"

/* Keeps sample IDs and the policy's positions comfortably in 32 bits. */
#define IDX_MAX_SAMPLES		DLC_INDEX_MAX_SAMPLES
#define IDX_MAX_CLASSES		IDX_MAX_SAMPLES

/*
 * Format 1: "label size path" per sample. Format 2 adds each sample's
 * CRC-32C: "label size crc path", crc as 8 lowercase hex digits, or "-"
 * when the file could not be read at indexing. Format 1 still loads, with
 * every checksum absent, and is what such an index saves as again.
 */
#define IDX_MAGIC_V1		"dlcache-index 1"
#define IDX_MAGIC_V2		"dlcache-index 2"
/*
 * The key hashes this, whatever the format: checksums are not part of the
 * key, so an index of format 1 and one of format 2 over the same files
 * name the same data set.
 */
#define IDX_KEY_MAGIC		IDX_MAGIC_V1

struct dlc_index {
	char *root;
	char *arena;		/* class names, then relpaths, NUL-terminated */
	size_t *class_off;	/* nclasses offsets into arena */
	size_t *path_off;	/* count offsets into arena */
	int32_t *labels;
	uint64_t *sizes;
	uint32_t *crcs;		/* CRC-32C of each sample's bytes */
	uint8_t *has_crc;	/* per sample: crcs[] is valid */
	uint32_t count;
	uint32_t nclasses;
	uint64_t total;
	uint64_t key[2];
	struct dlc_pack *pack;	/* loaded from a pack: its reader, else NULL */
};

/* ------------------------------------------------------------------ */
/* Key: SipHash-2-4 (siphash.c) over the whole index                  */
/* ------------------------------------------------------------------ */

/*
 * Every string goes in with its length first, so no two different indexes
 * serialise to the same bytes. The root is left out on purpose: the same
 * files moved or mounted elsewhere are the same data set.
 */
static void index_compute_key(const struct dlc_index *idx, uint64_t key[2])
{
	struct dlc_sip s;
	uint32_t i;

	dlc_sip_init(&s, DLC_SIP_K0, DLC_SIP_K1);
	dlc_sip_update(&s, IDX_KEY_MAGIC, sizeof(IDX_KEY_MAGIC) - 1);
	dlc_sip_u32(&s, idx->nclasses);
	for (i = 0; i < idx->nclasses; i++) {
		const char *name = idx->arena + idx->class_off[i];
		size_t len = strlen(name);

		dlc_sip_u64(&s, len);
		dlc_sip_update(&s, name, len);
	}
	dlc_sip_u32(&s, idx->count);
	for (i = 0; i < idx->count; i++) {
		const char *path = idx->arena + idx->path_off[i];
		size_t len = strlen(path);

		dlc_sip_u64(&s, len);
		dlc_sip_update(&s, path, len);
		dlc_sip_u32(&s, (uint32_t)idx->labels[i]);
		dlc_sip_u64(&s, idx->sizes[i]);
	}
	dlc_sip_final(&s, key);
	key[1] = (key[1] & ~(uint64_t)UINT32_MAX) | idx->count;
}

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

static int grow(void *pp, size_t *cap, size_t need, size_t elem)
{
	void **p = pp;
	size_t ncap = *cap ? *cap : 16;
	void *np;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elem)
		return -ENOMEM;
	np = realloc(*p, ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

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
	ret = grow(&b->p, &b->cap, b->len + n + 1, 1);
	if (ret)
		return ret;
	memcpy(b->p + b->len, s, n);
	b->p[b->len + n] = '\0';
	if (off)
		*off = b->len;
	b->len += n + 1;
	return 0;
}

static int index_alloc_arrays(struct dlc_index *idx)
{
	idx->class_off = calloc(idx->nclasses ? idx->nclasses : 1,
				sizeof(*idx->class_off));
	idx->path_off = calloc(idx->count, sizeof(*idx->path_off));
	idx->labels = calloc(idx->count, sizeof(*idx->labels));
	idx->sizes = calloc(idx->count, sizeof(*idx->sizes));
	idx->crcs = calloc(idx->count, sizeof(*idx->crcs));
	idx->has_crc = calloc(idx->count, 1);
	if (!idx->class_off || !idx->path_off || !idx->labels || !idx->sizes ||
	    !idx->crcs || !idx->has_crc)
		return -ENOMEM;
	return 0;
}

void dlc_index_free(struct dlc_index *idx)
{
	if (!idx)
		return;
	free(idx->root);
	free(idx->arena);
	free(idx->class_off);
	free(idx->path_off);
	free(idx->labels);
	free(idx->sizes);
	free(idx->crcs);
	free(idx->has_crc);
	dlc_pack_close(idx->pack);
	free(idx);
}

/* Byte order, as Python's sorted() on str for valid UTF-8 names. */
static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * torchvision orders samples as sorted(os.walk(class_dir)) and then sorted
 * file names: by the directory path as a whole, then by the name. That is
 * not the order of the joined paths ("c/x/z" < "c/x y/a" bytewise, but
 * directory "c/x" sorts before "c/x y"), so compare the parts separately.
 */
static int path_cmp(const char *a, size_t adir, const char *b, size_t bdir)
{
	size_t n = adir < bdir ? adir : bdir;
	int c = memcmp(a, b, n);

	if (c)
		return c;
	if (adir != bdir)
		return adir < bdir ? -1 : 1;
	return strcmp(a + adir + 1, b + bdir + 1);
}

/* Length of the directory part of a relpath (it always has one). */
static size_t dir_len(const char *path)
{
	return (size_t)(strrchr(path, '/') - path);
}

/* ------------------------------------------------------------------ */
/* Build                                                               */
/* ------------------------------------------------------------------ */

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
	return path_cmp(px, dir_len(px), py, dir_len(py));
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
	ret = grow(&w->dir, &w->dir_cap, w->ndir + 1, sizeof(*w->dir));
	if (ret)
		return ret;
	ret = grow(&w->dirs.p, &w->dirs.cap, w->dirs.len + plen + nlen + 1, 1);
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
	ret = grow(&w->ent, &w->ent_cap, w->nent + 1, sizeof(*w->ent));
	if (ret)
		return ret;
	ret = grow(&w->paths.p, &w->paths.cap,
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
		ret = grow(&offs, &cap, n + 1, sizeof(*offs));
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
	ret = index_alloc_arrays(idx);
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
	index_compute_key(idx, idx->key);
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

/* ------------------------------------------------------------------ */
/* Accessors                                                           */
/* ------------------------------------------------------------------ */

uint32_t dlc_index_count(const struct dlc_index *idx)
{
	return idx->count;
}

uint32_t dlc_index_num_classes(const struct dlc_index *idx)
{
	return idx->nclasses;
}

const char *dlc_index_root(const struct dlc_index *idx)
{
	return idx->root;
}

const char *dlc_index_class_name(const struct dlc_index *idx, uint32_t c)
{
	if (c >= idx->nclasses)
		return NULL;
	return idx->arena + idx->class_off[c];
}

const char *dlc_index_relpath(const struct dlc_index *idx, uint32_t id)
{
	if (id >= idx->count)
		return NULL;
	return idx->arena + idx->path_off[id];
}

int32_t dlc_index_label(const struct dlc_index *idx, uint32_t id)
{
	if (id >= idx->count)
		return -1;
	return idx->labels[id];
}

uint64_t dlc_index_size(const struct dlc_index *idx, uint32_t id)
{
	if (id >= idx->count)
		return 0;
	return idx->sizes[id];
}

int dlc_index_sample_size(const struct dlc_index *idx, uint32_t id,
			  uint64_t *size)
{
	if (id >= idx->count)
		return -ERANGE;
	*size = idx->sizes[id];
	return 0;
}

uint64_t dlc_index_total_bytes(const struct dlc_index *idx)
{
	return idx->total;
}

int dlc_index_crc32c(const struct dlc_index *idx, uint32_t id, uint32_t *crc)
{
	if (id >= idx->count)
		return -EINVAL;
	if (!idx->has_crc[id])
		return -ENODATA;
	*crc = idx->crcs[id];
	return 0;
}

void dlc_index_key(const struct dlc_index *idx, uint64_t key[2])
{
	key[0] = idx->key[0];
	key[1] = idx->key[1];
}

/* ------------------------------------------------------------------ */
/* Save                                                                */
/* ------------------------------------------------------------------ */

/*
 * Names may hold any byte but '/' and NUL. '%' and '\\' are escaped too so
 * the encoding is unambiguous and a file never looks like it holds C
 * escapes; control bytes are escaped so each record stays on one line.
 */
static int needs_escape(unsigned char c)
{
	return c < 0x20 || c == 0x7f || c == '%' || c == '\\';
}

static void put_encoded(FILE *f, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (needs_escape(c)) {
			putc('%', f);
			putc(hex[c >> 4], f);
			putc(hex[c & 15], f);
		} else {
			putc(c, f);
		}
	}
}

static int write_index(FILE *f, const struct dlc_index *idx)
{
	uint32_t i;
	int v2 = 0;

	/* Format 1 when no sample has a checksum: it round-trips as read. */
	for (i = 0; i < idx->count && !v2; i++)
		v2 = idx->has_crc[i];
	fprintf(f, "%s\nroot ", v2 ? IDX_MAGIC_V2 : IDX_MAGIC_V1);
	put_encoded(f, idx->root);
	fprintf(f, "\nclasses %u\nsamples %u\nkey %016llx%016llx\n",
		idx->nclasses, idx->count, (unsigned long long)idx->key[0],
		(unsigned long long)idx->key[1]);
	for (i = 0; i < idx->nclasses; i++) {
		fputs("class ", f);
		put_encoded(f, idx->arena + idx->class_off[i]);
		putc('\n', f);
	}
	for (i = 0; i < idx->count; i++) {
		fprintf(f, "%d %llu ", idx->labels[i],
			(unsigned long long)idx->sizes[i]);
		if (v2 && idx->has_crc[i])
			fprintf(f, "%08x ", idx->crcs[i]);
		else if (v2)
			fputs("- ", f);
		put_encoded(f, idx->arena + idx->path_off[i]);
		putc('\n', f);
	}
	if (fflush(f) || ferror(f))
		return errno ? -errno : -EIO;
	return 0;
}

/*
 * Written beside @path and renamed over it, so readers see the old file or
 * the new one, never a mix. A fresh name with O_EXCL rather than mkstemp()
 * so the file gets the usual umask-derived mode, not 0600.
 */
int dlc_index_save(const struct dlc_index *idx, const char *path)
{
	struct timespec ts;
	char *tmp = NULL;
	FILE *f = NULL;
	int fd = -1, ret, tries;

	if (!idx || !path || !*path || idx->pack)
		return -EINVAL;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	for (tries = 0; tries < 100; tries++) {
		free(tmp);
		if (asprintf(&tmp, "%s.tmp.%ld.%lx", path, (long)getpid(),
			     (unsigned long)(ts.tv_nsec + tries)) < 0) {
			tmp = NULL;
			return -ENOMEM;
		}
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0) {
		ret = -errno;
		free(tmp);
		return ret;
	}
	f = fdopen(fd, "w");
	if (!f) {
		ret = -errno;
		close(fd);
		goto err;
	}
	errno = 0;
	ret = write_index(f, idx);
	if (ret) {
		fclose(f);
		goto err;
	}
	/* The rename must not land before the data does. */
	if (fsync(fileno(f))) {
		ret = -errno;
		fclose(f);
		goto err;
	}
	if (fclose(f)) {
		ret = -errno;
		goto err;
	}
	if (rename(tmp, path)) {
		ret = -errno;
		goto err;
	}
	free(tmp);
	return 0;
err:
	unlink(tmp);
	free(tmp);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Load                                                                */
/* ------------------------------------------------------------------ */

struct cursor {
	char *p;
	char *end;
};

/* Next line, NUL-terminated in place; NULL when no complete line is left. */
static char *next_line(struct cursor *c)
{
	char *line = c->p, *nl;

	if (c->p >= c->end)
		return NULL;
	nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
	if (!nl)
		return NULL;
	*nl = '\0';
	c->p = nl + 1;
	return line;
}

/* Plain decimal: digits only, no sign, no leading zero, no overflow. */
static int parse_dec(const char **sp, uint64_t max, uint64_t *out)
{
	const char *s = *sp;
	uint64_t v = 0;

	if (*s < '0' || *s > '9')
		return -1;
	if (*s == '0' && s[1] >= '0' && s[1] <= '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned int d = (unsigned int)(*s - '0');

		if (d > max || v > (max - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*sp = s;
	*out = v;
	return 0;
}

static int parse_field(const char *line, const char *name, uint64_t max,
		       uint64_t *out)
{
	size_t n = strlen(name);

	if (strncmp(line, name, n) || line[n] != ' ')
		return -1;
	line += n + 1;
	if (parse_dec(&line, max, out) || *line)
		return -1;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Decode @s into @dst (never longer than @s). Only what put_encoded()
 * writes is accepted: raw control bytes, a raw '\\' or a bad or needless
 * escape mean the file was not written by us.
 */
static int decode_name(const char *s, char *dst, size_t *len)
{
	size_t n = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '%') {
			int hi = hexval(s[1]), lo;

			if (hi < 0)
				return -1;
			lo = hexval(s[2]);
			if (lo < 0)
				return -1;
			c = (unsigned char)(hi << 4 | lo);
			if (!c || !needs_escape(c))
				return -1;
			s += 2;
		} else if (needs_escape(c)) {
			return -1;
		}
		dst[n++] = (char)c;
	}
	dst[n] = '\0';
	*len = n;
	return 0;
}

static int parse_key(const char *line, uint64_t key[2])
{
	int i, v;

	if (strncmp(line, "key ", 4))
		return -1;
	line += 4;
	key[0] = key[1] = 0;
	for (i = 0; i < 32; i++) {
		v = hexval(line[i]);
		if (v < 0)
			return -1;
		key[i / 16] = key[i / 16] << 4 | (uint64_t)v;
	}
	return line[32] ? -1 : 0;
}

/* "xxxxxxxx " (8 lowercase hex digits) or "- "; advances *@sp. */
static int parse_crc(const char **sp, uint32_t *crc, uint8_t *has)
{
	const char *s = *sp;
	uint32_t v = 0;
	int i;

	if (s[0] == '-' && s[1] == ' ') {
		*has = 0;
		*sp = s + 2;
		return 0;
	}
	for (i = 0; i < 8; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return -1;
		v = v << 4 | (uint32_t)hexval(s[i]);
	}
	if (s[8] != ' ')
		return -1;
	*crc = v;
	*has = 1;
	*sp = s + 9;
	return 0;
}

/* What an index file is read in: its buffer starts at most this large. */
#define IDX_READ_STEP		(1U << 20)
/* The header's lines (magic, root, classes, samples, key) fit in this. */
#define IDX_HEADER_MAX		(4 * 4096)

/*
 * The largest file the header at @buf (@n bytes read so far) allows:
 * DLC_INDEX_MAX_FILE_BYTES's sum for the counts it states. 0 while the
 * header's five lines are not all read, -1 (as uint64_t) for a header
 * that cannot be an index's (the parser words nothing more).
 */
static uint64_t header_bound(const char *buf, size_t n)
{
	const char *p = buf, *end = buf + n, *nl;
	uint64_t classes = 0, samples = 0;
	char line[64];
	int i;

	for (i = 0; i < 5; i++) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			return n >= IDX_HEADER_MAX ? UINT64_MAX : 0;
		if (i == 2 || i == 3) {
			size_t len = (size_t)(nl - p);

			if (len >= sizeof(line))
				return UINT64_MAX;
			memcpy(line, p, len);
			line[len] = '\0';
			if (i == 2 ? parse_field(line, "classes", IDX_MAX_CLASSES,
						 &classes) :
			    parse_field(line, "samples", IDX_MAX_SAMPLES,
					&samples))
				return UINT64_MAX;
		}
		p = nl + 1;
	}
	return samples * (3 * 4096 + 64) + classes * (3 * 255 + 8) +
	       IDX_HEADER_MAX;
}

/*
 * Read a whole index file: a regular file of at most what its header's
 * counts allow (DLC_INDEX_MAX_FILE_BYTES for the most), checked before
 * and while reading, since it may grow. The buffer grows with the bytes
 * read, never from the file's size alone, and a NUL (which no index
 * holds, and which a sparse file's hole reads as) fails at once: a
 * huge sparse file costs a step of reading. A device, FIFO or socket is
 * -EINVAL: /dev/zero would never end.
 */
static int read_file(const char *path, char **buf, size_t *len)
{
	uint64_t bound = DLC_INDEX_MAX_FILE_BYTES, hb;
	size_t cap = 0, n = 0;
	char *p = NULL;
	struct stat st;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		ret = -errno;
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		ret = -EISDIR;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		goto out;
	}
	if ((uint64_t)st.st_size > DLC_INDEX_MAX_FILE_BYTES) {
		ret = -EFBIG;
		goto out;
	}
	/* The size is a hint only; the file may change while it is read. */
	cap = st.st_size > 0 && st.st_size < IDX_READ_STEP ?
	      (size_t)st.st_size + 1 : st.st_size > 0 ? IDX_READ_STEP : 4096;
	p = malloc(cap);
	if (!p) {
		ret = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t r;

		if (n > bound) {
			ret = -EFBIG;
			goto out;
		}
		if (n + 1 >= cap) {
			ret = grow(&p, &cap, cap + 1, 1);
			if (ret)
				goto out;
		}
		r = read(fd, p + n, cap - n - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			goto out;
		}
		if (!r)
			break;
		if (memchr(p + n, '\0', (size_t)r)) {
			ret = -EBADMSG;
			goto out;
		}
		n += (size_t)r;
		if (bound == DLC_INDEX_MAX_FILE_BYTES &&
		    (hb = header_bound(p, n)) != 0) {
			if (hb == UINT64_MAX) {
				ret = -EBADMSG;
				goto out;
			}
			/* Past what the counts allow: fail before reading it. */
			bound = hb;
			if ((uint64_t)st.st_size > bound) {
				ret = -EFBIG;
				goto out;
			}
		}
	}
	p[n] = '\0';
	*buf = p;
	*len = n;
	p = NULL;
out:
	free(p);
	close(fd);
	return ret;
}

/* @max_rel: the longest relpath, for a root given at load. */
static int parse_index(struct dlc_index *idx, char *buf, size_t len,
		       size_t *max_rel)
{
	struct cursor cur = { buf, buf + len };
	uint64_t v, key[2], size;
	size_t pos = 0, n, root_len;
	const char *s;
	char *line;
	uint32_t i;
	int ret, v2 = 0;

	/* A NUL would end a line early and hide whatever follows it. */
	if (memchr(buf, '\0', len))
		return -EBADMSG;
	line = next_line(&cur);
	if (line && !strcmp(line, IDX_MAGIC_V2))
		v2 = 1;
	else if (!line || strcmp(line, IDX_MAGIC_V1))
		return -EBADMSG;

	line = next_line(&cur);
	if (!line || strncmp(line, "root ", 5))
		return -EBADMSG;
	idx->root = malloc(strlen(line + 5) + 1);
	if (!idx->root)
		return -ENOMEM;
	if (decode_name(line + 5, idx->root, &root_len) || !root_len ||
	    idx->root[0] != '/' || root_len >= PATH_MAX)
		return -EBADMSG;

	line = next_line(&cur);
	if (!line || parse_field(line, "classes", IDX_MAX_CLASSES, &v) || !v)
		return -EBADMSG;
	idx->nclasses = (uint32_t)v;
	line = next_line(&cur);
	if (!line || parse_field(line, "samples", IDX_MAX_SAMPLES, &v) || !v)
		return -EBADMSG;
	idx->count = (uint32_t)v;
	line = next_line(&cur);
	if (!line || parse_key(line, key))
		return -EBADMSG;

	/*
	 * Every decoded string is shorter than its line, so the file's size
	 * bounds the arena; the counts are checked against the lines before
	 * the arrays are trusted.
	 */
	if ((uint64_t)idx->nclasses + idx->count > len)
		return -EBADMSG;
	ret = index_alloc_arrays(idx);
	if (ret)
		return ret;
	idx->arena = malloc(len + 1);
	if (!idx->arena)
		return -ENOMEM;

	for (i = 0; i < idx->nclasses; i++) {
		line = next_line(&cur);
		if (!line || strncmp(line, "class ", 6))
			return -EBADMSG;
		if (decode_name(line + 6, idx->arena + pos, &n) ||
		    !dlc_index_class_name_ok(idx->arena + pos, n))
			return -EBADMSG;
		idx->class_off[i] = pos;
		/* Sorted and unique, as build makes them. */
		if (i && strcmp(idx->arena + idx->class_off[i - 1],
				idx->arena + pos) >= 0)
			return -EBADMSG;
		pos += n + 1;
	}

	idx->total = 0;
	for (i = 0; i < idx->count; i++) {
		const char *path, *cls;
		size_t clen;

		line = next_line(&cur);
		if (!line)
			return -EBADMSG;
		s = line;
		if (parse_dec(&s, idx->nclasses - 1, &v) || *s++ != ' ')
			return -EBADMSG;
		idx->labels[i] = (int32_t)v;
		if (parse_dec(&s, UINT64_MAX, &size) || *s++ != ' ')
			return -EBADMSG;
		idx->sizes[i] = size;
		if (v2 && parse_crc(&s, &idx->crcs[i], &idx->has_crc[i]))
			return -EBADMSG;
		if (decode_name(s, idx->arena + pos, &n))
			return -EBADMSG;
		path = idx->arena + pos;
		if (!dlc_index_relpath_ok(path) || root_len + 1 + n >= PATH_MAX)
			return -EBADMSG;
		if (n > *max_rel)
			*max_rel = n;
		/* The first component is the class directory. */
		cls = idx->arena + idx->class_off[idx->labels[i]];
		clen = strlen(cls);
		if (strncmp(path, cls, clen) || path[clen] != '/')
			return -EBADMSG;
		idx->path_off[i] = pos;
		/* In build's order: by class, then directory, then name. */
		if (i) {
			const char *prev = idx->arena + idx->path_off[i - 1];

			if (idx->labels[i - 1] > idx->labels[i] ||
			    (idx->labels[i - 1] == idx->labels[i] &&
			     path_cmp(prev, dir_len(prev), path,
				      dir_len(path)) >= 0))
				return -EBADMSG;
		}
		if (idx->total > UINT64_MAX - size)
			return -EBADMSG;
		idx->total += size;
		pos += n + 1;
	}
	if (cur.p != cur.end)
		return -EBADMSG;

	index_compute_key(idx, idx->key);
	if (idx->key[0] != key[0] || idx->key[1] != key[1])
		return -EBADMSG;
	/* Give back the slack; the arena was sized for the whole file. */
	line = realloc(idx->arena, pos ? pos : 1);
	if (line)
		idx->arena = line;
	return 0;
}

/* Point @idx at @root instead of its stored root. */
static int override_root(struct dlc_index *idx, const char *root,
			 size_t max_rel)
{
	struct stat st;
	char *r = realpath(root, NULL);

	if (!r)
		return -errno;
	if (stat(r, &st) || !S_ISDIR(st.st_mode)) {
		free(r);
		return -ENOTDIR;
	}
	if (strlen(r) + 1 + max_rel >= PATH_MAX) {
		free(r);
		return -ENAMETOOLONG;
	}
	free(idx->root);
	idx->root = r;
	return 0;
}

/* ------------------------------------------------------------------ */
/* A pack as an index                                                  */
/* ------------------------------------------------------------------ */

const struct dlc_pack *dlc_index_pack(const struct dlc_index *idx)
{
	return idx ? idx->pack : NULL;
}

/*
 * The index over pack @p (taken over by it): names, labels, sizes and
 * checksums from its records, the root the pack's own path.
 */
static int index_from_pack(struct dlc_index *idx, struct dlc_pack *p)
{
	struct dlc_pack_entry e;
	size_t need = 0, pos = 0, len;
	uint32_t i;

	idx->pack = p;
	idx->root = realpath(dlc_pack_path(p), NULL);
	if (!idx->root)
		return -errno;
	idx->count = dlc_pack_count(p);
	idx->nclasses = dlc_pack_num_classes(p);
	if (index_alloc_arrays(idx))
		return -ENOMEM;
	for (i = 0; i < idx->nclasses; i++)
		need += strlen(dlc_pack_class_name(p, i)) + 1;
	for (i = 0; i < idx->count; i++) {
		dlc_pack_entry(p, i, &e);
		need += strlen(e.path) + 1;
	}
	idx->arena = malloc(need ? need : 1);
	if (!idx->arena)
		return -ENOMEM;
	for (i = 0; i < idx->nclasses; i++) {
		const char *name = dlc_pack_class_name(p, i);

		len = strlen(name) + 1;
		memcpy(idx->arena + pos, name, len);
		idx->class_off[i] = pos;
		pos += len;
	}
	idx->total = 0;
	for (i = 0; i < idx->count; i++) {
		dlc_pack_entry(p, i, &e);
		len = strlen(e.path) + 1;
		memcpy(idx->arena + pos, e.path, len);
		idx->path_off[i] = pos;
		pos += len;
		idx->labels[i] = e.label;
		idx->sizes[i] = e.len;
		idx->crcs[i] = e.crc;
		idx->has_crc[i] = 1;
		idx->total += e.len;
	}
	dlc_pack_key(p, idx->key);
	return 0;
}

static int load_pack(const char *path, struct dlc_index *idx)
{
	struct dlc_pack *p;
	int ret;

	ret = dlc_pack_open(path, &p, NULL, 0);
	if (ret)
		return ret;
	return index_from_pack(idx, p);
}

int dlc_index_load_at(const char *path, const char *root,
		      struct dlc_index **out)
{
	struct dlc_index *idx;
	size_t len = 0, max_rel = 0;
	char *buf = NULL;
	int ret;

	if (!path || !out)
		return -EINVAL;
	*out = NULL;
	ret = dlc_pack_sniff(path);
	if (ret < 0)
		return ret;
	if (ret) {
		/* A pack holds its bytes: there is no root to move. */
		if (root)
			return -EINVAL;
		idx = calloc(1, sizeof(*idx));
		if (!idx)
			return -ENOMEM;
		ret = load_pack(path, idx);
		if (ret) {
			dlc_index_free(idx);
			return ret;
		}
		*out = idx;
		return 0;
	}
	ret = read_file(path, &buf, &len);
	if (ret)
		return ret;
	idx = calloc(1, sizeof(*idx));
	if (!idx) {
		free(buf);
		return -ENOMEM;
	}
	ret = parse_index(idx, buf, len, &max_rel);
	free(buf);
	if (!ret && root)
		ret = override_root(idx, root, max_rel);
	if (ret) {
		dlc_index_free(idx);
		return ret;
	}
	*out = idx;
	return 0;
}

int dlc_index_load(const char *path, struct dlc_index **out)
{
	return dlc_index_load_at(path, NULL, out);
}
