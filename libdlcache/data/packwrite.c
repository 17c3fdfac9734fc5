// SPDX-License-Identifier: MIT
/*
 * The pack writer (packwrite.h). Samples come from any thread in any
 * order: under the lock an add only reserves its aligned place in the
 * data region and fills its record; the bytes are written with pwrite
 * outside the lock, so workers write in parallel. The metadata (which
 * needs every record) and then the header are written by finish, which
 * makes the file visible under its name only once it is complete and on
 * disk.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "image.h"
#include "internal.h"
#include "nvme.h"
#include "pack.h"
#include "packfmt.h"
#include "packwrite.h"

struct dlc_packw {
	char *path;
	char *part;
	int fd;
	int created;		/* PATH.part is ours: abort removes it */
	uint64_t dev_bytes;	/* onto a device: its size (0: a file) */
	uint32_t dev_lba;	/* and its logical block size */
	struct dlc_nvme_ns ns;	/* and, when an NVMe namespace, what it is */
	const struct dlc_index *idx;
	struct dlc_packw_opts o;
	uint32_t count;
	pthread_mutex_t lock;
	uint64_t end;		/* next free byte of the data region */
	int err;		/* first write error, sticky */
	uint8_t *recs;		/* count * PK_REC_LEN */
	uint8_t *added;		/* per sample */
	uint8_t *rows;		/* the row-table stream */
	size_t rows_len, rows_cap;
};

static void say(char *why, size_t why_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !why_len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
}

static int pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/*
 * PATH.part left by an interrupted writer: ours when it is a regular file
 * that is empty or starts with the pack magic. Anything else is not ours
 * to remove.
 */
static int remove_stale_part(const char *part, char *why, size_t why_len)
{
	char magic[8];
	struct stat st;
	ssize_t n;
	int fd;

	fd = open(part, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		say(why, why_len, "%s: %s", part, strerror(errno));
		return errno == ELOOP ? -EEXIST : -errno;
	}
	n = fstat(fd, &st) ? -1 :
	    S_ISREG(st.st_mode) ? pread(fd, magic, sizeof(magic), 0) : -1;
	close(fd);
	if (n == 0 || (n == (ssize_t)sizeof(magic) &&
		       !memcmp(magic, DLC_PACK_MAGIC, sizeof(magic)))) {
		if (unlink(part) && errno != ENOENT) {
			say(why, why_len, "%s: %s", part, strerror(errno));
			return -errno;
		}
		return 0;
	}
	say(why, why_len, "%s exists and is not a pack being written",
	    part);
	return -EEXIST;
}

/*
 * Open the device at w->path for writing, exclusively, and learn its size;
 * an NVMe namespace (named any way nvme.h takes) is written through its
 * block device, and w->ns says what it is.
 */
static int open_device(struct dlc_packw *w, char *why, size_t why_len)
{
	int ret, lba = 0;
	struct stat st;

	ret = dlc_nvme_probe(w->path, &w->ns, why, why_len);
	if (ret < 0)
		return ret;
	if (ret > 0) {
		char *blk = strdup(w->ns.blk);

		if (!blk)
			return -ENOMEM;
		free(w->path);
		w->path = blk;
	}
	w->fd = open(w->path, O_WRONLY | O_EXCL | O_CLOEXEC);
	if (w->fd < 0) {
		ret = -errno;
		say(why, why_len, "%s: %s%s", w->path, strerror(errno),
		    errno == EBUSY ? " (mounted, or held by another user)" : "");
		return ret;
	}
	if (fstat(w->fd, &st) || !S_ISBLK(st.st_mode)) {
		say(why, why_len, "%s: not a block device", w->path);
		return -ENOTBLK;
	}
	if (ioctl(w->fd, BLKGETSIZE64, &w->dev_bytes) ||
	    ioctl(w->fd, BLKSSZGET, &lba)) {
		ret = -errno;
		say(why, why_len, "%s: size: %s", w->path, strerror(errno));
		return ret;
	}
	w->dev_lba = (uint32_t)lba;
	if (w->dev_lba < 512 || w->dev_lba > 65536 ||
	    (w->dev_lba & (w->dev_lba - 1))) {
		say(why, why_len, "%s: logical block size %u", w->path,
		    w->dev_lba);
		return -EINVAL;
	}
	if (w->dev_bytes < 2 * PK_HDR_LEN) {
		say(why, why_len, "%s holds %llu bytes: too small for a pack",
		    w->path, (unsigned long long)w->dev_bytes);
		return -ENOSPC;
	}
	return 0;
}

/* Onto a device, [@off, @off + @len) must lie inside it. */
static int fits(const struct dlc_packw *w, uint64_t off, uint64_t len)
{
	return !w->dev_bytes || (off <= w->dev_bytes &&
				 len <= w->dev_bytes - off);
}

/*
 * Every class name and path of @idx as the reader will check it (a name
 * with a control byte, say, is legal in an index, never in a pack): no
 * pack is written that would not open.
 */
static int check_names(const struct dlc_index *idx, char *why,
		       size_t why_len)
{
	uint32_t i;

	for (i = 0; i < dlc_index_num_classes(idx); i++)
		if (!dlc_pack_name_ok(dlc_index_class_name(idx, i), 0)) {
			say(why, why_len, "class %u: a name a pack cannot hold "
			    "(a control byte, or over 255 bytes)", i);
			return -EINVAL;
		}
	for (i = 0; i < dlc_index_count(idx); i++)
		if (!dlc_pack_name_ok(dlc_index_relpath(idx, i), 1)) {
			say(why, why_len, "sample %u: a path a pack cannot hold "
			    "(a control byte, or 4096 bytes or more)", i);
			return -EINVAL;
		}
	return 0;
}

int dlc_packw_create(const char *path, const struct dlc_index *idx,
		     const struct dlc_packw_opts *o, struct dlc_packw **out,
		     char *why, size_t why_len)
{
	uint8_t hdr[PK_HDR_LEN] = { 0 };
	struct dlc_packw *w;
	uint32_t align;
	int ret;

	if (why && why_len)
		why[0] = '\0';
	if (!path || !*path || !idx || !out)
		return -EINVAL;
	*out = NULL;
	align = o && o->align ? o->align : DLC_PACK_DEFAULT_ALIGN;
	if (align > PK_HDR_LEN || (align & (align - 1))) {
		say(why, why_len, "align %u: not a power of two up to %u",
		    align, PK_HDR_LEN);
		return -EINVAL;
	}
	if (dlc_index_pack(idx)) {
		say(why, why_len, "the source is a pack already");
		return -EINVAL;
	}
	ret = check_names(idx, why, why_len);
	if (ret)
		return ret;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = -1;
	pthread_mutex_init(&w->lock, NULL);
	if (o)
		w->o = *o;
	w->o.align = align;
	if (!w->o.max_pixels)
		w->o.max_pixels = DLC_DEFAULT_MAX_PIXELS;
	w->idx = idx;
	w->count = dlc_index_count(idx);
	w->end = PK_HDR_LEN;
	w->path = strdup(path);
	w->recs = calloc(w->count ? w->count : 1, PK_REC_LEN);
	w->added = calloc(w->count ? w->count : 1, 1);
	if (!w->path || !w->recs || !w->added ||
	    asprintf(&w->part, "%s.part", path) < 0) {
		w->part = NULL;
		ret = -ENOMEM;
		goto err;
	}
	if (w->o.device) {
		ret = open_device(w, why, why_len);
		if (ret)
			goto err;
	} else {
		ret = remove_stale_part(w->part, why, why_len);
		if (ret)
			goto err;
		w->fd = open(w->part, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
			     0666);
		if (w->fd < 0) {
			ret = -errno;
			say(why, why_len, "%s: %s", w->part, strerror(errno));
			goto err;
		}
		w->created = 1;
	}
	/* A placeholder: ours to remove if we die, never a valid pack. */
	memcpy(hdr + PK_HDR_MAGIC, DLC_PACK_MAGIC, 8);
	pk_put32(hdr + PK_HDR_VERSION, PK_VERSION);
	ret = pwrite_full(w->fd, hdr, sizeof(hdr), 0);
	if (ret) {
		say(why, why_len, "%s: %s", w->part, strerror(-ret));
		goto err;
	}
	*out = w;
	return 0;
err:
	dlc_packw_abort(w);
	return ret;
}

/* Append @rows (mcus_y + 1) to the stream as varints; under the lock. */
static int rows_append(struct dlc_packw *w, const uint32_t *rows,
		       uint32_t n, uint64_t *off, uint32_t *len)
{
	size_t need = (size_t)n * PK_VARINT_MAX, pos;
	uint32_t i;

	if (w->rows_len + need > w->rows_cap) {
		size_t cap = w->rows_cap ? w->rows_cap : 65536;
		uint8_t *p;

		while (cap < w->rows_len + need)
			cap *= 2;
		p = realloc(w->rows, cap);
		if (!p)
			return -ENOMEM;
		w->rows = p;
		w->rows_cap = cap;
	}
	pos = w->rows_len;
	for (i = 0; i < n; i++)
		pos += pk_varint_put(w->rows + pos,
				     i ? rows[i] - rows[i - 1] : rows[0]);
	*off = w->rows_len;
	*len = (uint32_t)(pos - w->rows_len);
	w->rows_len = pos;
	return 0;
}

int dlc_packw_add(struct dlc_packw *w, uint32_t id, uint32_t kind,
		  const uint8_t *buf, size_t len, uint64_t src_len,
		  const struct dlc_rst_geom *g, const uint32_t *rows)
{
	uint64_t off, rows_off = 0;
	uint32_t rows_len = 0;
	const char *what;
	uint8_t *r;
	int ret;

	if (id >= w->count || !buf || !len || len > UINT32_MAX)
		return -EINVAL;
	if (kind == DLC_PACK_RST) {
		if (!g || !rows || !g->mcus_y || g->mcus_y > DLC_RST_MAX_ROWS ||
		    dlc_pack_geom_check(g, rows, (uint32_t)len, &what))
			return -EINVAL;
	} else if (kind != DLC_PACK_PLAIN) {
		return -EINVAL;
	}
	pthread_mutex_lock(&w->lock);
	ret = w->err;
	if (!ret && w->added[id])
		ret = -EEXIST;
	if (!ret && kind == DLC_PACK_RST)
		ret = rows_append(w, rows, g->mcus_y + 1, &rows_off, &rows_len);
	if (ret) {
		pthread_mutex_unlock(&w->lock);
		return ret;
	}
	off = (w->end + w->o.align - 1) & ~(uint64_t)(w->o.align - 1);
	if (!fits(w, off, len)) {
		w->err = -ENOSPC;
		pthread_mutex_unlock(&w->lock);
		return -ENOSPC;
	}
	w->end = off + len;
	w->added[id] = 1;
	r = w->recs + (size_t)id * PK_REC_LEN;
	pk_put64(r + PK_REC_OFF, off);
	pk_put32(r + PK_REC_LEN_, (uint32_t)len);
	pk_put32(r + PK_REC_CRC, dlc_crc32c(0, buf, len));
	pk_put32(r + PK_REC_LABEL, (uint32_t)dlc_index_label(w->idx, id));
	pk_put32(r + PK_REC_KIND, kind);
	pk_put64(r + PK_REC_SRC_LEN, src_len);
	if (kind == DLC_PACK_RST) {
		pk_put32(r + PK_REC_WIDTH, g->width);
		pk_put32(r + PK_REC_HEIGHT, g->height);
		r[PK_REC_MCU_W] = (uint8_t)g->mcu_w;
		r[PK_REC_MCU_H] = (uint8_t)g->mcu_h;
		r[PK_REC_NCOMP] = (uint8_t)g->ncomp;
		pk_put32(r + PK_REC_INTERVAL, g->interval);
		pk_put32(r + PK_REC_ROWS_LEN, rows_len);
		pk_put64(r + PK_REC_ROWS_OFF, rows_off);
	}
	pthread_mutex_unlock(&w->lock);
	ret = pwrite_full(w->fd, buf, len, off);
	if (ret) {
		pthread_mutex_lock(&w->lock);
		if (!w->err)
			w->err = ret;
		pthread_mutex_unlock(&w->lock);
	}
	return ret;
}

int dlc_packw_prepare(const struct dlc_packw *w, const uint8_t *src,
		      size_t len, struct dlc_packw_sample *s, char *why,
		      size_t why_len)
{
	enum dlc_image_format fmt;
	const char *pwhy = NULL;
	int ret;

	memset(s, 0, sizeof(*s));
	s->kind = DLC_PACK_PLAIN;
	s->src = src;
	s->src_len = len;
	if (why && why_len)
		why[0] = '\0';
	fmt = dlc_image_sniff(src, len);
	if (fmt != DLC_IMG_JPEG && fmt != DLC_IMG_UNKNOWN) {
		/* decoded whole anyway: nothing to restart-index */
		say(why, why_len, "a %s: only JPEGs are restart-indexed",
		    dlc_image_format_name(fmt));
		return 0;
	}
	ret = dlc_rst_transcode(src, len, &w->o.rst, w->o.max_pixels, &s->out,
				&s->out_len, why, why_len);
	if (ret == -ENOMEM)
		return ret;
	if (ret)
		return 0;	/* kept as it is, @why says why */
	s->rows = malloc((DLC_RST_MAX_ROWS + 1) * sizeof(*s->rows));
	if (!s->rows) {
		dlc_packw_sample_free(s);
		return -ENOMEM;
	}
	ret = dlc_rst_parse(s->out, s->out_len, &s->g, s->rows, &pwhy);
	if (ret) {
		say(why, why_len, "the transcode does not parse: %s",
		    pwhy ? pwhy : "?");
	} else if (s->out_len > UINT32_MAX ||
		   dlc_pack_geom_check(&s->g, s->rows, (uint32_t)s->out_len,
				       &pwhy)) {
		say(why, why_len, "the transcode's geometry: %s",
		    pwhy ? pwhy : "over 4 GiB");
		ret = -EINVAL;
	}
	if (ret) {
		/* keep the source: free the transcode only */
		free(s->rows);
		free(s->out);
		s->rows = NULL;
		s->out = NULL;
		s->out_len = 0;
		return 0;
	}
	s->kind = DLC_PACK_RST;
	return 0;
}

int dlc_packw_add_sample(struct dlc_packw *w, uint32_t id,
			 const struct dlc_packw_sample *s)
{
	int ret;

	if (s->kind == DLC_PACK_RST) {
		ret = dlc_packw_add(w, id, DLC_PACK_RST, s->out, s->out_len,
				    s->src_len, &s->g, s->rows);
		if (!ret)
			return DLC_PACK_RST;
		if (ret != -EINVAL && ret != -EBADMSG)
			return ret;
	}
	ret = dlc_packw_add(w, id, DLC_PACK_PLAIN, s->src, s->src_len,
			    s->src_len, NULL, NULL);
	return ret ? ret : DLC_PACK_PLAIN;
}

void dlc_packw_sample_free(struct dlc_packw_sample *s)
{
	free(s->rows);
	free(s->out);
	s->rows = NULL;
	s->out = NULL;
}

int dlc_packw_add_source(struct dlc_packw *w, uint32_t id, const uint8_t *src,
			 size_t len, char *why, size_t why_len)
{
	struct dlc_packw_sample s;
	int ret;

	ret = dlc_packw_prepare(w, src, len, &s, why, why_len);
	if (ret)
		return ret;
	ret = dlc_packw_add_sample(w, id, &s);
	dlc_packw_sample_free(&s);
	return ret;
}

uint64_t dlc_packw_device_bytes(const struct dlc_packw *w)
{
	return w->dev_bytes;
}

uint64_t dlc_packw_bytes(const struct dlc_packw *w)
{
	uint64_t end;

	pthread_mutex_lock((pthread_mutex_t *)&w->lock);
	end = w->end;
	pthread_mutex_unlock((pthread_mutex_t *)&w->lock);
	return end - PK_HDR_LEN;
}

/* Class names, records, rows, strings: the metadata in one buffer. */
static int build_meta(struct dlc_packw *w, uint8_t **out, size_t *out_len)
{
	uint32_t nclasses = dlc_index_num_classes(w->idx), c, i;
	size_t cl = 0, sl = 0, rl = (size_t)w->count * PK_REC_LEN, len, pos;
	uint8_t *m;

	for (c = 0; c < nclasses; c++)
		cl += strlen(dlc_index_class_name(w->idx, c)) + 1;
	for (i = 0; i < w->count; i++)
		sl += strlen(dlc_index_relpath(w->idx, i)) + 1;
	if (sl > UINT32_MAX)
		return -E2BIG;
	len = PK_META_LEN + cl + rl + w->rows_len + sl;
	m = calloc(1, len);
	if (!m)
		return -ENOMEM;
	pk_put64(m + PK_META_CLASSES_LEN, cl);
	pk_put64(m + PK_META_RECORDS_LEN, rl);
	pk_put64(m + PK_META_ROWS_LEN, w->rows_len);
	pk_put64(m + PK_META_STRINGS_LEN, sl);
	pos = PK_META_LEN;
	for (c = 0; c < nclasses; c++) {
		const char *name = dlc_index_class_name(w->idx, c);

		memcpy(m + pos, name, strlen(name) + 1);
		pos += strlen(name) + 1;
	}
	/* Path offsets go into the records as the strings are laid out. */
	for (i = 0, sl = 0; i < w->count; i++) {
		const char *path = dlc_index_relpath(w->idx, i);
		size_t spos = PK_META_LEN + cl + rl + w->rows_len + sl;

		pk_put32(w->recs + (size_t)i * PK_REC_LEN + PK_REC_PATH,
			 (uint32_t)sl);
		memcpy(m + spos, path, strlen(path) + 1);
		sl += strlen(path) + 1;
	}
	memcpy(m + pos, w->recs, rl);
	pos += rl;
	if (w->rows_len)
		memcpy(m + pos, w->rows, w->rows_len);
	*out = m;
	*out_len = len;
	return 0;
}

/* Make the rename itself durable: fsync the directory holding @path. */
static void sync_dir_of(const char *path)
{
	char *dir = strdup(path), *slash;
	int fd;

	if (!dir)
		return;
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	fd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(dir);
}

/* Onto a device: the flag and the device's record in the header. */
static void device_record(const struct dlc_packw *w, uint8_t *hdr,
			  size_t meta_len)
{
	pk_put32(hdr + PK_HDR_FLAGS, PK_FLAG_DEVICE);
	pk_put32(hdr + PK_HDR_DEV_LBA, w->dev_lba);
	pk_put64(hdr + PK_HDR_DEV_PACK_LEN, w->end + meta_len);
	pk_put64(hdr + PK_HDR_DEV_LEN, w->dev_bytes);
	memcpy(hdr + PK_HDR_DEV_NGUID, w->ns.nguid, sizeof(w->ns.nguid));
	memcpy(hdr + PK_HDR_DEV_EUI64, w->ns.eui64, sizeof(w->ns.eui64));
	pk_put32(hdr + PK_HDR_DEV_NSID, w->ns.nsid);
}

int dlc_packw_finish(struct dlc_packw *w, char *why, size_t why_len)
{
	uint8_t hdr[PK_HDR_LEN] = { 0 }, *meta = NULL;
	size_t meta_len = 0;
	uint32_t i;
	int ret;

	if (why && why_len)
		why[0] = '\0';
	ret = w->err;
	if (ret == -ENOSPC && w->dev_bytes) {
		say(why, why_len, "%s holds %llu bytes: the pack needs more "
		    "(%llu of sample data written, samples left)", w->path,
		    (unsigned long long)w->dev_bytes,
		    (unsigned long long)(w->end - PK_HDR_LEN));
		goto out;
	}
	if (ret) {
		say(why, why_len, "%s: %s", w->dev_bytes ? w->path : w->part,
		    strerror(-ret));
		goto out;
	}
	for (i = 0; i < w->count; i++)
		if (!w->added[i]) {
			say(why, why_len, "sample %u (%s) was never added", i,
			    dlc_index_relpath(w->idx, i));
			ret = -EINVAL;
			goto out;
		}
	ret = build_meta(w, &meta, &meta_len);
	if (ret) {
		say(why, why_len, "metadata: %s", strerror(-ret));
		goto out;
	}
	memcpy(hdr + PK_HDR_MAGIC, DLC_PACK_MAGIC, 8);
	pk_put32(hdr + PK_HDR_VERSION, PK_VERSION);
	pk_put32(hdr + PK_HDR_HDRLEN, PK_HDR_LEN);
	pk_put32(hdr + PK_HDR_COUNT, w->count);
	pk_put32(hdr + PK_HDR_NCLASSES, dlc_index_num_classes(w->idx));
	pk_put32(hdr + PK_HDR_INTERVAL, w->o.rst.interval);
	pk_put32(hdr + PK_HDR_MAX_SIDE, w->o.rst.max_side);
	pk_put32(hdr + PK_HDR_QUALITY,
		 w->o.rst.max_side ? (w->o.rst.quality ? w->o.rst.quality : 90)
				   : 0);
	pk_put32(hdr + PK_HDR_ALIGN, w->o.align);
	pk_put64(hdr + PK_HDR_DATA_OFF, PK_HDR_LEN);
	pk_put64(hdr + PK_HDR_DATA_LEN, w->end - PK_HDR_LEN);
	pk_put64(hdr + PK_HDR_META_OFF, w->end);
	pk_put64(hdr + PK_HDR_META_LEN, meta_len);
	pk_put32(hdr + PK_HDR_META_CRC, dlc_crc32c(0, meta, meta_len));
	if (w->dev_bytes) {
		if (!fits(w, w->end, meta_len)) {
			ret = -ENOSPC;
			say(why, why_len, "%s holds %llu bytes: the pack needs "
			    "%llu", w->path, (unsigned long long)w->dev_bytes,
			    (unsigned long long)(w->end + meta_len));
			goto out;
		}
		device_record(w, hdr, meta_len);
	}
	pk_put32(hdr + PK_HDR_CRC, dlc_crc32c(0, hdr, PK_HDR_CRC));
	ret = pwrite_full(w->fd, meta, meta_len, w->end);
	/*
	 * A file is nobody's pack until the rename; on a device the header
	 * itself makes the pack, so it may land only after the rest: until
	 * then the first 4 KiB are the placeholder create wrote. (A file a
	 * previous, longer writer left cannot exist: O_EXCL.)
	 */
	if (!ret && w->dev_bytes && fsync(w->fd))
		ret = -errno;
	if (!ret)
		ret = pwrite_full(w->fd, hdr, sizeof(hdr), 0);
	if (!ret && fsync(w->fd))
		ret = -errno;
	if (close(w->fd) && !ret)
		ret = -errno;
	w->fd = -1;
	if (ret) {
		say(why, why_len, "%s: %s", w->dev_bytes ? w->path : w->part,
		    strerror(-ret));
		goto out;
	}
	if (w->dev_bytes)
		goto out;	/* written in place: nothing to rename */
	if (rename(w->part, w->path)) {
		ret = -errno;
		say(why, why_len, "rename %s to %s: %s", w->part, w->path,
		    strerror(errno));
		goto out;
	}
	sync_dir_of(w->path);
	w->created = 0;		/* renamed: nothing for abort to remove */
out:
	free(meta);
	dlc_packw_abort(w);
	return ret;
}

void dlc_packw_abort(struct dlc_packw *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	if (w->created)
		unlink(w->part);
	pthread_mutex_destroy(&w->lock);
	free(w->path);
	free(w->part);
	free(w->recs);
	free(w->added);
	free(w->rows);
	free(w);
}
