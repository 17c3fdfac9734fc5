// SPDX-License-Identifier: MIT
/*
 * The index file: dlc_index_save() writes an index as text, and
 * dlc_index_load() reads one back (or, given a pack, the index over it,
 * index.c's). Separate from the index itself (index.c) and the walk that
 * makes one (indexwalk.c): this is the format, and the parser of bytes
 * that may be anything; every check a loaded file passes is here.
 */
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
#include "index_int.h"
#include "pack.h"
#include "relpath.h"

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
			ret = dlc_index_grow(&p, &cap, cap + 1, 1);
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
	ret = dlc_index_alloc_arrays(idx);
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
			     dlc_index_path_cmp(prev, dlc_index_dir_len(prev),
						path,
						dlc_index_dir_len(path)) >= 0))
				return -EBADMSG;
		}
		if (idx->total > UINT64_MAX - size)
			return -EBADMSG;
		idx->total += size;
		pos += n + 1;
	}
	if (cur.p != cur.end)
		return -EBADMSG;

	dlc_index_compute_key(idx, idx->key);
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

/* A pack is told by its magic; its index is index.c's, over its records. */
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
		ret = dlc_index_load_pack(path, idx);
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
