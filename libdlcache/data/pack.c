// SPDX-License-Identifier: MIT
/*
 * The pack reader (pack.h): opens a .dlp, checks all of its header and
 * metadata (layout: packfmt.h, Documentation/pack.md) and then serves
 * records from the metadata it holds in memory. The metadata is read with
 * pread, never mapped: a file truncated under us gives a short read here,
 * not a SIGBUS later. The sample bytes are not read here at all.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "internal.h"
#include "nvme.h"
#include "pack.h"
#include "packfmt.h"
#include "relpath.h"
#include "siphash.h"

#define PK_KEY_MAGIC	"dlcache-pack 1"

/*
 * The metadata is read in steps of PK_META_STEP, its buffer grown as the
 * bytes come in, so memory follows the bytes the file really holds. A
 * run of PK_META_HOLE zero bytes is a hole (a sparse file's): no pack's
 * metadata holds one (a record's length is never 0, names and paths are
 * never empty, a row table's varints never hold a zero byte).
 */
#define PK_META_STEP	(1U << 20)
#define PK_META_HOLE	4096U
/* A class name is a directory's name (NAME_MAX), a path under PATH_MAX. */
#define PK_CLASS_MAX	255U
#define PK_PATH_MAX	4096U

struct dlc_pack {
	char *path;
	uint8_t hdr[PK_HDR_LEN];
	uint8_t *meta;
	uint64_t meta_len;
	uint64_t classes_len;
	uint32_t count;
	uint32_t nclasses;
	uint32_t align;
	uint64_t data_off, data_len;
	const uint8_t *recs;	/* count * PK_REC_LEN, in meta */
	const uint8_t *rows;	/* the row-table stream, in meta */
	uint64_t rows_len;
	const char *strings;	/* in meta */
	uint64_t strings_len;
	uint32_t *class_off;	/* into meta */
	uint64_t key[2];
	uint32_t flags;		/* PK_FLAG_* */
};

static int why_set(char *why, size_t why_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Word @why and return -EBADMSG, the error of nearly every check. */
static int why_set(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	if (why && why_len) {
		va_start(ap, fmt);
		vsnprintf(why, why_len, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

/*
 * The file to open for @path: a namespace named by its identifier or by
 * its generic character device is read through its block device.
 */
static int pack_target(const char *path, char *buf, size_t len,
		       const char **out)
{
	char name[64];
	int ret = dlc_nvme_name(path, name, sizeof(name), NULL, 0);

	*out = path;
	if (ret < 0)
		return ret;
	if (ret > 0) {
		snprintf(buf, len, "/dev/%s", name);
		*out = buf;
	}
	return 0;
}

int dlc_pack_sniff(const char *path)
{
	char magic[8], dev[80];
	struct stat st;
	ssize_t n;
	int fd, ret;

	ret = pack_target(path, dev, sizeof(dev), &path);
	if (ret)
		return ret;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	/* A regular file or a block device (a directory, a FIFO are not). */
	if (fstat(fd, &st) || !(S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))) {
		close(fd);
		return 0;
	}
	do
		n = pread(fd, magic, sizeof(magic), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	return n == (ssize_t)sizeof(magic) &&
	       !memcmp(magic, DLC_PACK_MAGIC, sizeof(magic));
}

/* All @len bytes at @off, or -errno (-EBADMSG for a file that ends early). */
static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EBADMSG;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int check_header(struct dlc_pack *p, uint64_t fsize, char *why,
			size_t wl)
{
	const uint8_t *h = p->hdr;
	uint32_t version, hlen, flags, align, crc;
	uint64_t meta_off;
	size_t i;

	if (memcmp(h + PK_HDR_MAGIC, DLC_PACK_MAGIC, 8))
		return why_set(why, wl, "header: bad magic");
	version = pk_get32(h + PK_HDR_VERSION);
	if (version != PK_VERSION) {
		why_set(why, wl, "header: version %u (this library reads %u)",
			version, PK_VERSION);
		return -EPROTO;
	}
	crc = dlc_crc32c(0, h, PK_HDR_CRC);
	/* The placeholder the writer starts with: no pack yet. */
	if (!pk_get32(h + PK_HDR_CRC) && !pk_get32(h + PK_HDR_HDRLEN))
		return why_set(why, wl, "an unfinished pack (its writer was "
			       "interrupted or failed)");
	if (crc != pk_get32(h + PK_HDR_CRC))
		return why_set(why, wl, "header: crc32c %08x, computed %08x",
			       pk_get32(h + PK_HDR_CRC), crc);
	hlen = pk_get32(h + PK_HDR_HDRLEN);
	if (hlen != PK_HDR_LEN)
		return why_set(why, wl, "header: header length %u", hlen);
	flags = pk_get32(h + PK_HDR_FLAGS);
	if (flags & ~PK_FLAGS_KNOWN)
		return why_set(why, wl, "header: unknown flags %#x",
			       flags & ~PK_FLAGS_KNOWN);
	p->flags = flags;
	if (pk_get32(h + PK_HDR_RESERVED0))
		return why_set(why, wl, "header: reserved word at %d not zero",
			       PK_HDR_RESERVED0);
	if (flags & PK_FLAG_DEVICE) {
		uint32_t lba = pk_get32(h + PK_HDR_DEV_LBA);
		uint64_t len = pk_get64(h + PK_HDR_DEV_PACK_LEN);

		if (lba < 512 || lba > 65536 || (lba & (lba - 1)))
			return why_set(why, wl, "header: device LBA size %u",
				       lba);
		if (pk_get32(h + PK_HDR_DEV_RESERVED))
			return why_set(why, wl, "header: reserved word at %d "
				       "not zero", PK_HDR_DEV_RESERVED);
		/*
		 * Before any length is taken from it: the pack holds at least
		 * its header and the metadata's preamble.
		 */
		if (len < (uint64_t)PK_HDR_LEN + PK_META_LEN)
			return why_set(why, wl, "header: the pack's %llu bytes "
				       "do not hold its %u-byte header and "
				       "metadata", (unsigned long long)len,
				       PK_HDR_LEN + PK_META_LEN);
		if (len > fsize || len > pk_get64(h + PK_HDR_DEV_LEN))
			return why_set(why, wl, "header: the pack's %llu bytes "
				       "do not fit the device's %llu (%llu when "
				       "written)", (unsigned long long)len,
				       (unsigned long long)fsize,
				       (unsigned long long)
				       pk_get64(h + PK_HDR_DEV_LEN));
		/* The pack ends where it says, not at the device's end. */
		fsize = len;
	}
	for (i = flags & PK_FLAG_DEVICE ? PK_HDR_DEV_END : PK_HDR_RESERVED;
	     i < PK_HDR_CRC; i++)
		if (h[i])
			return why_set(why, wl,
				       "header: reserved byte %zu not zero", i);
	p->count = pk_get32(h + PK_HDR_COUNT);
	p->nclasses = pk_get32(h + PK_HDR_NCLASSES);
	if (p->count > DLC_INDEX_MAX_SAMPLES)
		return why_set(why, wl, "header: count %u over %u", p->count,
			       DLC_INDEX_MAX_SAMPLES);
	if (p->nclasses > DLC_INDEX_MAX_SAMPLES)
		return why_set(why, wl, "header: nclasses %u over %u",
			       p->nclasses, DLC_INDEX_MAX_SAMPLES);
	align = pk_get32(h + PK_HDR_ALIGN);
	if (!align || align > PK_HDR_LEN || (align & (align - 1)))
		return why_set(why, wl, "header: align %u not a power of two "
			       "up to %u", align, PK_HDR_LEN);
	p->align = align;
	p->data_off = pk_get64(h + PK_HDR_DATA_OFF);
	p->data_len = pk_get64(h + PK_HDR_DATA_LEN);
	meta_off = pk_get64(h + PK_HDR_META_OFF);
	p->meta_len = pk_get64(h + PK_HDR_META_LEN);
	if (p->data_off != PK_HDR_LEN)
		return why_set(why, wl, "header: data offset %llu, not %u",
			       (unsigned long long)p->data_off, PK_HDR_LEN);
	/* fsize >= PK_HDR_LEN (the file's, or the pack's just above). */
	if (fsize < p->data_off)
		return why_set(why, wl, "header: data offset %llu past the "
			       "end (%llu bytes)",
			       (unsigned long long)p->data_off,
			       (unsigned long long)fsize);
	if (p->data_len > fsize - p->data_off ||
	    meta_off != p->data_off + p->data_len)
		return why_set(why, wl, "header: data region [%llu, +%llu) does "
			       "not end at the metadata (%llu) inside the file "
			       "(%llu bytes)",
			       (unsigned long long)p->data_off,
			       (unsigned long long)p->data_len,
			       (unsigned long long)meta_off,
			       (unsigned long long)fsize);
	if (p->meta_len < PK_META_LEN || p->meta_len > fsize - meta_off ||
	    meta_off + p->meta_len != fsize)
		return why_set(why, wl, "header: metadata [%llu, +%llu) does "
			       "not end at the %s end (%llu bytes: %s)",
			       (unsigned long long)meta_off,
			       (unsigned long long)p->meta_len,
			       flags & PK_FLAG_DEVICE ? "pack's" : "file's",
			       (unsigned long long)fsize,
			       flags & PK_FLAG_DEVICE ? "a bad record" :
			       "truncated, or a file's pack copied onto a device "
			       "(dlcachectl pack --to writes one)");
	return 0;
}

/*
 * The preamble's sections (@m, read before the rest): lengths that add
 * up and that the header's counts can need, so that the metadata's
 * length is bounded by its structure before any of it is read.
 */
static int check_sections(struct dlc_pack *p, const uint8_t *m, char *why,
			  size_t wl)
{
	uint64_t cl = pk_get64(m + PK_META_CLASSES_LEN);
	uint64_t rl = pk_get64(m + PK_META_RECORDS_LEN);
	uint64_t left = p->meta_len - PK_META_LEN;

	p->rows_len = pk_get64(m + PK_META_ROWS_LEN);
	p->strings_len = pk_get64(m + PK_META_STRINGS_LEN);
	if (pk_get64(m + PK_META_RESERVED))
		return why_set(why, wl, "metadata: reserved word not zero");
	if (rl != (uint64_t)p->count * PK_REC_LEN)
		return why_set(why, wl, "metadata: records length %llu for %u "
			       "samples", (unsigned long long)rl, p->count);
	if (cl > left || rl > left - cl || p->rows_len > left - cl - rl ||
	    p->strings_len != left - cl - rl - p->rows_len)
		return why_set(why, wl, "metadata: section lengths %llu + %llu "
			       "+ %llu + %llu do not fill its %llu bytes",
			       (unsigned long long)cl, (unsigned long long)rl,
			       (unsigned long long)p->rows_len,
			       (unsigned long long)p->strings_len,
			       (unsigned long long)left);
	if (cl > (uint64_t)p->nclasses * (PK_CLASS_MAX + 1))
		return why_set(why, wl, "metadata: class table %llu bytes for "
			       "%u names of at most %u", (unsigned long long)cl,
			       p->nclasses, PK_CLASS_MAX);
	if (p->rows_len > (uint64_t)p->count * (DLC_RST_MAX_ROWS + 1) *
			  PK_VARINT_MAX)
		return why_set(why, wl, "metadata: row tables %llu bytes for "
			       "%u samples", (unsigned long long)p->rows_len,
			       p->count);
	if (p->strings_len > (uint64_t)p->count * PK_PATH_MAX)
		return why_set(why, wl, "metadata: strings %llu bytes for %u "
			       "paths under %u", (unsigned long long)p->strings_len,
			       p->count, PK_PATH_MAX);
	p->classes_len = cl;
	return 0;
}

/* The sections' pointers, once the metadata is read whole. */
static void set_sections(struct dlc_pack *p)
{
	p->recs = p->meta + PK_META_LEN + p->classes_len;
	p->rows = p->recs + (size_t)p->count * PK_REC_LEN;
	p->strings = (const char *)p->rows + p->rows_len;
}

/*
 * The metadata, read in steps into a buffer grown as its bytes come in,
 * its CRC computed on the way: a file that claims more than it holds
 * (a hole) fails at the hole, with at most a step more memory taken.
 */
static int read_meta(struct dlc_pack *p, int fd, uint64_t meta_off,
		     char *why, size_t wl)
{
	uint64_t done = 0, cap = 0, zeros = 0;
	uint32_t crc = 0;
	int ret;

	while (done < p->meta_len) {
		size_t step = p->meta_len - done < PK_META_STEP ?
			      (size_t)(p->meta_len - done) : PK_META_STEP;
		const uint8_t *q;
		size_t i;

		if (done + step > cap) {
			uint64_t ncap = cap * 2 > done + step ? cap * 2 :
				       done + step;
			uint8_t *m;

			if (ncap > p->meta_len)
				ncap = p->meta_len;
			m = realloc(p->meta, (size_t)ncap);
			if (!m)
				return -ENOMEM;
			p->meta = m;
			cap = ncap;
		}
		ret = pread_full(fd, p->meta + done, step, meta_off + done);
		if (ret == -EBADMSG)
			why_set(why, wl, "metadata: truncated while read");
		if (ret)
			return ret;
		q = p->meta + done;
		for (i = 0; i < step; i++) {
			zeros = q[i] ? 0 : zeros + 1;
			if (zeros == PK_META_HOLE)
				return why_set(why, wl, "metadata: %u zero bytes "
					       "at %llu (a hole: the file does "
					       "not hold the metadata it claims)",
					       PK_META_HOLE, (unsigned long long)
					       (meta_off + done + i + 1 -
						PK_META_HOLE));
		}
		crc = dlc_crc32c(crc, q, step);
		done += step;
	}
	if (crc != pk_get32(p->hdr + PK_HDR_META_CRC))
		return why_set(why, wl, "metadata: crc32c %08x, computed %08x",
			       pk_get32(p->hdr + PK_HDR_META_CRC), crc);
	set_sections(p);
	return 0;
}

/* A name that goes whole into log lines: no control byte (one line each). */
static int has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

int dlc_pack_name_ok(const char *s, int is_path)
{
	size_t n = strlen(s);

	if (has_control(s))
		return 0;
	if (is_path)
		return n < PK_PATH_MAX && dlc_index_relpath_ok(s);
	return n <= PK_CLASS_MAX && dlc_index_class_name_ok(s, n);
}

static int check_classes(struct dlc_pack *p, char *why, size_t wl)
{
	const char *s = (const char *)p->meta + PK_META_LEN;
	uint64_t cl = pk_get64(p->meta + PK_META_CLASSES_LEN), pos = 0;
	uint32_t c;

	p->class_off = calloc(p->nclasses ? p->nclasses : 1,
			      sizeof(*p->class_off));
	if (!p->class_off)
		return -ENOMEM;
	for (c = 0; c < p->nclasses; c++) {
		const char *nul = pos < cl ? memchr(s + pos, 0, cl - pos) : NULL;

		if (!nul)
			return why_set(why, wl, "class %u: name not "
				       "NUL-terminated inside the class table",
				       c);
		if (nul == s + pos)
			return why_set(why, wl, "class %u: empty name", c);
		/* The index's rule for a class name, and one line in a log. */
		if (!dlc_index_class_name_ok(s + pos, (size_t)(nul - s) - pos) ||
		    has_control(s + pos) ||
		    (size_t)(nul - s) - pos > PK_CLASS_MAX)
			return why_set(why, wl, "class %u: name \".\", \"..\", "
				       "holding '/' or a control byte, or over "
				       "%u bytes", c, PK_CLASS_MAX);
		p->class_off[c] = (uint32_t)(PK_META_LEN + pos);
		pos = (uint64_t)(nul - s) + 1;
	}
	if (pos != cl)
		return why_set(why, wl, "class table: %llu bytes after the "
			       "last of %u names", (unsigned long long)(cl - pos),
			       p->nclasses);
	return 0;
}

/* Decode record @id's row table; 0 or -1 with @what set. */
static int decode_rows(const struct dlc_pack *p, const uint8_t *r,
		       uint32_t mcus_y, uint32_t *rows, const char **what)
{
	uint64_t off = pk_get64(r + PK_REC_ROWS_OFF);
	uint32_t len = pk_get32(r + PK_REC_ROWS_LEN), v, i;
	const uint8_t *q, *end;
	uint64_t acc = 0;

	if (off > p->rows_len || len > p->rows_len - off) {
		*what = "rows: outside the row-table stream";
		return -1;
	}
	q = p->rows + off;
	end = q + len;
	for (i = 0; i <= mcus_y; i++) {
		if (pk_varint_get(&q, end, &v)) {
			*what = "rows: a varint runs past its bytes or is "
				"malformed";
			return -1;
		}
		if (i && !v) {
			*what = "rows: offsets not increasing";
			return -1;
		}
		acc += v;
		if (acc > UINT32_MAX) {
			*what = "rows: offset over 32 bits";
			return -1;
		}
		if (rows)
			rows[i] = (uint32_t)acc;
	}
	if (q != end) {
		*what = "rows: bytes left after mcus_y + 1 offsets";
		return -1;
	}
	return 0;
}

/* Geometry of a record, without its row table. */
static void rec_geom(const uint8_t *r, struct dlc_rst_geom *g)
{
	memset(g, 0, sizeof(*g));
	g->width = pk_get32(r + PK_REC_WIDTH);
	g->height = pk_get32(r + PK_REC_HEIGHT);
	g->mcu_w = r[PK_REC_MCU_W];
	g->mcu_h = r[PK_REC_MCU_H];
	g->ncomp = r[PK_REC_NCOMP];
	g->interval = pk_get32(r + PK_REC_INTERVAL);
	if (g->mcu_w && g->mcu_h) {
		g->mcus_x = (uint32_t)(((uint64_t)g->width + g->mcu_w - 1) /
				       g->mcu_w);
		g->mcus_y = (uint32_t)(((uint64_t)g->height + g->mcu_h - 1) /
				       g->mcu_h);
	}
}

int dlc_pack_geom_check(const struct dlc_rst_geom *g, const uint32_t *rows,
			uint32_t len, const char **what)
{
	uint32_t i;

	if (g->ncomp != 1 && g->ncomp != 3)
		return *what = "ncomp: not 1 or 3", -1;
	if ((g->mcu_w != 8 && g->mcu_w != 16) ||
	    (g->mcu_h != 8 && g->mcu_h != 16))
		return *what = "mcu_w/mcu_h: not 8 or 16", -1;
	if (g->ncomp == 1 && (g->mcu_w != 8 || g->mcu_h != 8))
		return *what = "mcu_w/mcu_h: not 8 x 8 for one component", -1;
	if (!g->width || !g->height || g->width > 65535 || g->height > 65535)
		return *what = "width/height: not in 1..65535", -1;
	if (g->mcus_x != (g->width + g->mcu_w - 1) / g->mcu_w ||
	    g->mcus_y != (g->height + g->mcu_h - 1) / g->mcu_h)
		return *what = "mcus_x/mcus_y: not the image's MCUs", -1;
	if (g->mcus_y > DLC_RST_MAX_ROWS)
		return *what = "height: more MCU rows than DLC_RST_MAX_ROWS", -1;
	if (!g->interval || g->mcus_x % g->interval)
		return *what = "interval: does not divide the MCUs of a row", -1;
	/* SOI before the scan; the EOI marker's two bytes inside the sample. */
	if (rows[0] < 2)
		return *what = "rows: first offset inside the SOI marker", -1;
	for (i = 1; i <= g->mcus_y; i++)
		if (rows[i] <= rows[i - 1])
			return *what = "rows: offsets not increasing", -1;
	if (rows[g->mcus_y] > len || len - rows[g->mcus_y] < 2)
		return *what = "rows: the EOI offset is not inside the sample", -1;
	return 0;
}

/* Record @r's geometry and row table (@rows: DLC_RST_MAX_ROWS + 1). */
static int check_rst(const struct dlc_pack *p, const uint8_t *r,
		     uint32_t len, uint32_t *rows, const char **what)
{
	struct dlc_rst_geom g;

	rec_geom(r, &g);
	/* Fails on the geometry before it looks at the rows. */
	if (g.mcus_y > DLC_RST_MAX_ROWS || !g.mcus_y)
		return dlc_pack_geom_check(&g, rows, len, what);
	if (decode_rows(p, r, g.mcus_y, rows, what))
		return -1;
	return dlc_pack_geom_check(&g, rows, len, what);
}

struct span {
	uint64_t off, end;
	uint32_t id;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

static int check_records(struct dlc_pack *p, char *why, size_t wl)
{
	uint64_t dend = p->data_off + p->data_len;
	struct span *sp;
	uint32_t i, *rows;
	int ret = 0;

	sp = malloc((p->count ? p->count : 1) * sizeof(*sp));
	rows = malloc((DLC_RST_MAX_ROWS + 1) * sizeof(*rows));
	if (!sp || !rows) {
		free(sp);
		free(rows);
		return -ENOMEM;
	}
	for (i = 0; i < p->count && !ret; i++) {
		const uint8_t *r = p->recs + (size_t)i * PK_REC_LEN;
		uint64_t off = pk_get64(r + PK_REC_OFF);
		uint32_t len = pk_get32(r + PK_REC_LEN_);
		uint32_t po = pk_get32(r + PK_REC_PATH);
		int32_t label = (int32_t)pk_get32(r + PK_REC_LABEL);
		uint32_t kind = pk_get32(r + PK_REC_KIND);
		const char *path, *what = NULL;
		size_t k;

		if (po >= p->strings_len) {
			ret = why_set(why, wl, "sample %u: path offset %u "
				      "outside the strings (%llu bytes)", i, po,
				      (unsigned long long)p->strings_len);
			break;
		}
		path = p->strings + po;
		if (!memchr(path, 0, p->strings_len - po)) {
			ret = why_set(why, wl, "sample %u: path at %u not "
				      "NUL-terminated inside the strings", i,
				      po);
			break;
		}
		/* The index's rule for a relpath, and one line in a log. */
		if (has_control(path)) {
			ret = why_set(why, wl, "sample %u: path holds a control "
				      "byte", i);
			break;
		}
		if (strlen(path) >= PK_PATH_MAX) {
			ret = why_set(why, wl, "sample %u: path of %zu bytes, "
				      "not under %u", i, strlen(path),
				      PK_PATH_MAX);
			break;
		}
		if (!dlc_index_relpath_ok(path)) {
			ret = why_set(why, wl, "sample %u: path \"%s\" empty, "
				      "not relative, not class/file, or with an "
				      "empty, \".\" or \"..\" component", i, path);
			break;
		}
		if (label < 0 || (uint32_t)label >= p->nclasses)
			what = "label: not below nclasses";
		else if (!len)
			what = "len: 0";
		else if (off < p->data_off || off > dend || len > dend - off)
			what = "off/len: outside the data region";
		else if (off % p->align)
			what = "off: not aligned";
		else if (kind == DLC_PACK_RST && r[PK_REC_PAD])
			what = "pad: not zero";
		else if (kind == DLC_PACK_RST)
			check_rst(p, r, len, rows, &what);
		else if (kind != DLC_PACK_PLAIN)
			what = "kind: unknown";
		else
			for (k = PK_REC_WIDTH; k < PK_REC_LEN && !what; k++)
				if (r[k])
					what = "geometry: not zero for a plain "
					       "sample";
		if (what) {
			ret = why_set(why, wl, "sample %u (%s): %s (off %llu "
				      "len %u label %d kind %u)", i, path, what,
				      (unsigned long long)off, len, label,
				      kind);
			break;
		}
		sp[i].off = off;
		sp[i].end = off + len;
		sp[i].id = i;
	}
	if (!ret && p->count) {
		qsort(sp, p->count, sizeof(*sp), span_cmp);
		for (i = 1; i < p->count; i++)
			if (sp[i].off < sp[i - 1].end) {
				ret = why_set(why, wl, "sample %u: off %llu "
					      "overlaps sample %u",
					      sp[i].id,
					      (unsigned long long)sp[i].off,
					      sp[i - 1].id);
				break;
			}
	}
	free(sp);
	free(rows);
	return ret;
}

int dlc_pack_open(const char *path, struct dlc_pack **out, char *why,
		  size_t why_len)
{
	uint8_t pre[PK_META_LEN];
	const void *parts[2];
	uint64_t fsize;
	size_t lens[2];
	struct dlc_pack *p;
	struct stat st;
	char dev[80];
	int fd, ret;

	if (why && why_len)
		why[0] = '\0';
	if (!path || !out)
		return -EINVAL;
	*out = NULL;
	ret = pack_target(path, dev, sizeof(dev), &path);
	if (ret)
		return ret;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	p = calloc(1, sizeof(*p));
	if (!p || !(p->path = strdup(path))) {
		ret = -ENOMEM;
		goto out;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		goto out;
	}
	if (S_ISBLK(st.st_mode)) {
		/* A pack written onto a device: its size is the device's. */
		if (ioctl(fd, BLKGETSIZE64, &fsize)) {
			ret = -errno;
			goto out;
		}
	} else if (S_ISREG(st.st_mode)) {
		fsize = (uint64_t)st.st_size;
	} else {
		ret = why_set(why, why_len, "not a regular file or block device");
		goto out;
	}
	if (fsize < PK_HDR_LEN) {
		ret = why_set(why, why_len, "header: truncated (%llu bytes)",
			      (unsigned long long)fsize);
		goto out;
	}
	ret = pread_full(fd, p->hdr, PK_HDR_LEN, 0);
	if (ret == -EBADMSG)
		why_set(why, why_len, "header: truncated while read");
	if (!ret)
		ret = check_header(p, fsize, why, why_len);
	if (ret)
		goto out;
	/* The preamble first: it bounds the rest by the header's counts. */
	ret = pread_full(fd, pre, sizeof(pre), p->data_off + p->data_len);
	if (ret == -EBADMSG)
		why_set(why, why_len, "metadata: truncated while read");
	if (!ret)
		ret = check_sections(p, pre, why, why_len);
	if (!ret)
		ret = read_meta(p, fd, p->data_off + p->data_len, why, why_len);
	if (!ret)
		ret = check_classes(p, why, why_len);
	if (!ret)
		ret = check_records(p, why, why_len);
	if (ret)
		goto out;
	parts[0] = p->hdr;
	lens[0] = PK_HDR_CRC;
	parts[1] = p->meta;
	lens[1] = p->meta_len;
	dlc_key128(PK_KEY_MAGIC, parts, lens, 2, p->key);
	p->key[1] = (p->key[1] & ~(uint64_t)UINT32_MAX) | p->count;
out:
	close(fd);
	if (ret) {
		dlc_pack_close(p);
		return ret;
	}
	*out = p;
	return 0;
}

void dlc_pack_close(struct dlc_pack *p)
{
	if (!p)
		return;
	free(p->path);
	free(p->meta);
	free(p->class_off);
	free(p);
}

uint32_t dlc_pack_count(const struct dlc_pack *p)
{
	return p->count;
}

uint32_t dlc_pack_num_classes(const struct dlc_pack *p)
{
	return p->nclasses;
}

const char *dlc_pack_class_name(const struct dlc_pack *p, uint32_t c)
{
	if (c >= p->nclasses)
		return NULL;
	return (const char *)p->meta + p->class_off[c];
}

const char *dlc_pack_path(const struct dlc_pack *p)
{
	return p->path;
}

int dlc_pack_entry(const struct dlc_pack *p, uint32_t id,
		   struct dlc_pack_entry *e)
{
	const uint8_t *r;
	uint32_t first = 0;

	if (id >= p->count)
		return -EINVAL;
	r = p->recs + (size_t)id * PK_REC_LEN;
	e->off = pk_get64(r + PK_REC_OFF);
	e->len = pk_get32(r + PK_REC_LEN_);
	e->crc = pk_get32(r + PK_REC_CRC);
	e->label = (int32_t)pk_get32(r + PK_REC_LABEL);
	e->kind = pk_get32(r + PK_REC_KIND);
	e->src_len = pk_get64(r + PK_REC_SRC_LEN);
	e->path = p->strings + pk_get32(r + PK_REC_PATH);
	rec_geom(r, &e->g);
	if (e->kind == DLC_PACK_RST) {
		/* Checked at open: only the first and the last are wanted. */
		const uint8_t *q = p->rows + pk_get64(r + PK_REC_ROWS_OFF);
		const uint8_t *end = q + pk_get32(r + PK_REC_ROWS_LEN);
		uint64_t acc;
		uint32_t v = 0;

		pk_varint_get(&q, end, &first);
		acc = first;
		while (q < end && !pk_varint_get(&q, end, &v))
			acc += v;
		e->g.scan_off = first;
		e->g.end_off = (uint32_t)acc;
	}
	return 0;
}

int dlc_pack_rows(const struct dlc_pack *p, uint32_t id, uint32_t *rows)
{
	const uint8_t *r;
	struct dlc_rst_geom g;
	const char *what;

	if (id >= p->count)
		return -EINVAL;
	r = p->recs + (size_t)id * PK_REC_LEN;
	if (pk_get32(r + PK_REC_KIND) != DLC_PACK_RST)
		return -EINVAL;
	rec_geom(r, &g);
	return decode_rows(p, r, g.mcus_y, rows, &what) ? -EBADMSG : 0;
}

void dlc_pack_key(const struct dlc_pack *p, uint64_t key[2])
{
	key[0] = p->key[0];
	key[1] = p->key[1];
}

int dlc_pack_device(const struct dlc_pack *p, struct dlc_pack_device *d)
{
	const uint8_t *h = p->hdr;

	memset(d, 0, sizeof(*d));
	if (!(p->flags & PK_FLAG_DEVICE))
		return 0;
	d->lba_bytes = pk_get32(h + PK_HDR_DEV_LBA);
	d->pack_bytes = pk_get64(h + PK_HDR_DEV_PACK_LEN);
	d->dev_bytes = pk_get64(h + PK_HDR_DEV_LEN);
	memcpy(d->nguid, h + PK_HDR_DEV_NGUID, sizeof(d->nguid));
	memcpy(d->eui64, h + PK_HDR_DEV_EUI64, sizeof(d->eui64));
	d->nsid = pk_get32(h + PK_HDR_DEV_NSID);
	return 1;
}
