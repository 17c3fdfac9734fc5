// SPDX-License-Identifier: MIT
/*
 * Packs (.dlp): the writer and the reader round trip a data set (every
 * record equals the source index, the bytes match their CRC-32C, a
 * transcoded JPEG decodes, by libjpeg itself, to the source's pixels);
 * a pack loads as an index; and a pack damaged in any field is refused
 * at open with -EBADMSG (-EPROTO for another version) and a why naming
 * the field and the sample. Damage to the metadata is resealed (its CRC
 * and the header's recomputed) so that the per-field checks, not the
 * CRC, must catch it. Exit 0 pass, 1 fail.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jpeglib.h>

#include "crc32c.h"
#include "dlcache.h"
#include "internal.h"
#include "pack.h"
#include "packfmt.h"
#include "packwrite.h"

#include "helpers/testutil.h"

static char *tmp;
static char src_root[PATH_MAX];
static struct dlc_index *src_idx;

static const char *at(const char *name)
{
	static char bufs[4][PATH_MAX];
	static int next;
	char *b = bufs[next++ & 3];

	snprintf(b, PATH_MAX, "%s/%s", tmp, name);
	return b;
}

/* ---- an independent decode: libjpeg straight, to RGB ---- */

struct jerr {
	struct jpeg_error_mgr mgr;
	jmp_buf jb;
};

static void jerr_exit(j_common_ptr c)
{
	longjmp(((struct jerr *)c->err)->jb, 1);
}

/* The whole image as RGB (malloc'd), or NULL. */
static uint8_t *jpeg_rgb(const uint8_t *buf, size_t len, uint32_t *w,
			 uint32_t *h)
{
	struct jpeg_decompress_struct d;
	struct jerr je;
	uint8_t *volatile rgb = NULL;
	JSAMPROW row;

	d.err = jpeg_std_error(&je.mgr);
	je.mgr.error_exit = jerr_exit;
	if (setjmp(je.jb)) {
		jpeg_destroy_decompress(&d);
		free(rgb);
		return NULL;
	}
	jpeg_create_decompress(&d);
	jpeg_mem_src(&d, buf, len);
	jpeg_read_header(&d, TRUE);
	d.out_color_space = JCS_RGB;
	jpeg_start_decompress(&d);
	*w = d.output_width;
	*h = d.output_height;
	rgb = malloc((size_t)*w * *h * 3);
	if (!rgb)
		longjmp(je.jb, 1);
	while (d.output_scanline < d.output_height) {
		row = rgb + (size_t)d.output_scanline * *w * 3;
		jpeg_read_scanlines(&d, &row, 1);
	}
	jpeg_finish_decompress(&d);
	jpeg_destroy_decompress(&d);
	return rgb;
}

/* ---- building packs ---- */

/* Sample @id's source bytes. */
static uint8_t *src_bytes(uint32_t id, size_t *len)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dlc_index_root(src_idx),
		 dlc_index_relpath(src_idx, id));
	return t_read_file(path, len);
}

/* Pack the source set into @path, adding samples last to first. */
static int pack_sources(const char *path, int *kinds)
{
	struct dlc_packw *w;
	char why[256];
	uint32_t i, n = dlc_index_count(src_idx);
	int ret;

	ret = dlc_packw_create(path, src_idx, NULL, &w, why, sizeof(why));
	CHECK(!ret, "create: %s", why);
	if (ret)
		return ret;
	for (i = n; i-- > 0;) {
		size_t len;
		uint8_t *b = src_bytes(i, &len);

		CHECK(b);
		if (!b)
			break;
		ret = dlc_packw_add_source(w, i, b, len, why, sizeof(why));
		free(b);
		CHECK(ret >= 0, "add_source %u: %d %s", i, ret, why);
		if (kinds)
			kinds[i] = ret;
	}
	ret = dlc_packw_finish(w, why, sizeof(why));
	CHECK(!ret, "finish: %d %s", ret, why);
	return ret;
}

/*
 * A pack of made-up samples whose structure only is checked (the reader
 * does not look inside the bytes): even ids restart-indexed, 40 x 20 at
 * 16 x 16 MCUs (3 x 2 MCUs, interval 3), rows {10, 50, 90} of 100 bytes;
 * odd ids plain.
 */
static const uint32_t fake_rows[3] = { 10, 50, 90 };

static void fake_geom(struct dlc_rst_geom *g)
{
	memset(g, 0, sizeof(*g));
	g->width = 40;
	g->height = 20;
	g->mcu_w = g->mcu_h = 16;
	g->mcus_x = 3;
	g->mcus_y = 2;
	g->interval = 3;
	g->ncomp = 3;
}

static int pack_fake(const char *path)
{
	struct dlc_rst_geom g;
	struct dlc_packw *w;
	uint8_t buf[700];
	char why[256];
	uint32_t i, n = dlc_index_count(src_idx);
	int ret;

	fake_geom(&g);
	ret = dlc_packw_create(path, src_idx, NULL, &w, why, sizeof(why));
	CHECK(!ret, "create: %s", why);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		size_t len = i & 1 ? 300 + i : 100;

		memset(buf, (int)i, len);
		ret = dlc_packw_add(w, i, i & 1 ? DLC_PACK_PLAIN : DLC_PACK_RST,
				    buf, len, len + 5, &g, fake_rows);
		CHECK(!ret, "add %u: %d", i, ret);
	}
	ret = dlc_packw_finish(w, why, sizeof(why));
	CHECK(!ret, "finish: %d %s", ret, why);
	return ret;
}

/* ---- round trip ---- */

static void test_roundtrip(void)
{
	const char *path = at("rt.dlp");
	uint32_t i, n = dlc_index_count(src_idx), nrst = 0;
	struct dlc_pack *p;
	char why[256];
	int kinds[64], fd;
	struct stat st;

	CHECK(n <= 64);
	if (pack_sources(path, kinds))
		return;
	CHECK(stat(at("rt.dlp.part"), &st) && errno == ENOENT,
	      "a .part is left");
	CHECK_EQ(dlc_pack_open(path, &p, why, sizeof(why)), 0);
	if (!p) {
		printf("FAIL: open: %s\n", why);
		return;
	}
	CHECK_EQ(dlc_pack_count(p), n);
	CHECK_EQ(dlc_pack_num_classes(p), dlc_index_num_classes(src_idx));
	for (i = 0; i < dlc_index_num_classes(src_idx); i++)
		CHECK(!strcmp(dlc_pack_class_name(p, i),
			      dlc_index_class_name(src_idx, i)));
	CHECK(dlc_pack_class_name(p, dlc_pack_num_classes(p)) == NULL);
	CHECK(!strcmp(dlc_pack_path(p), path));
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	for (i = 0; i < n; i++) {
		struct dlc_pack_entry e;
		uint32_t rows[DLC_RST_MAX_ROWS + 1], prow[DLC_RST_MAX_ROWS + 1];
		struct dlc_rst_geom g;
		const char *pwhy = NULL;
		uint8_t *src, *b;
		size_t slen;
		uint32_t crc;

		CHECK_EQ(dlc_pack_entry(p, i, &e), 0);
		CHECK(!strcmp(e.path, dlc_index_relpath(src_idx, i)),
		      "%u: %s", i, e.path);
		CHECK_EQ(e.label, dlc_index_label(src_idx, i));
		CHECK_EQ(e.kind, (uint32_t)kinds[i]);
		CHECK_EQ(e.off % DLC_PACK_DEFAULT_ALIGN, 0);
		CHECK_EQ(e.src_len, dlc_index_size(src_idx, i));
		src = src_bytes(i, &slen);
		b = malloc(e.len);
		CHECK(src && b);
		if (!src || !b || pread(fd, b, e.len, (off_t)e.off) !=
				  (ssize_t)e.len) {
			CHECK(0, "read sample %u", i);
			free(src);
			free(b);
			continue;
		}
		CHECK_EQ(dlc_crc32c(0, b, e.len), e.crc);
		CHECK(!dlc_index_crc32c(src_idx, i, &crc) &&
		      crc == dlc_crc32c(0, src, slen));
		if (e.kind == DLC_PACK_PLAIN) {
			CHECK(e.len == slen && !memcmp(b, src, slen),
			      "plain %u: not the source's bytes", i);
			CHECK_EQ(dlc_pack_rows(p, i, rows), -EINVAL);
		} else {
			uint32_t sw, sh, pw, ph;
			uint8_t *a = jpeg_rgb(src, slen, &sw, &sh);
			uint8_t *c = jpeg_rgb(b, e.len, &pw, &ph);

			nrst++;
			CHECK(a && c && sw == pw && sh == ph &&
			      !memcmp(a, c, (size_t)sw * sh * 3),
			      "rst %u: pixels differ from the source's", i);
			free(a);
			free(c);
			CHECK_EQ(dlc_rst_parse(b, e.len, &g, prow, &pwhy), 0);
			CHECK_EQ(dlc_pack_rows(p, i, rows), 0);
			CHECK(!memcmp(&g, &e.g, sizeof(g)),
			      "rst %u: geometry differs from the parse", i);
			CHECK(!memcmp(rows, prow,
				      ((size_t)g.mcus_y + 1) * sizeof(*rows)),
			      "rst %u: rows differ from the parse", i);
		}
		free(src);
		free(b);
	}
	/* Every sample of the set is a baseline 4:2:0 JPEG: all transcode. */
	CHECK_EQ(nrst, n);
	CHECK_EQ(dlc_pack_entry(p, n, &(struct dlc_pack_entry){ 0 }), -EINVAL);
	close(fd);
	dlc_pack_close(p);
}

/* A non-JPEG and a truncated JPEG are kept as they are. */
static void test_kept_plain(void)
{
	uint8_t junk[200];
	struct dlc_packw *w;
	char why[256];
	uint8_t *j;
	size_t len;
	int ret;

	memset(junk, 'x', sizeof(junk));
	ret = dlc_packw_create(at("kp.dlp"), src_idx, NULL, &w, why,
			       sizeof(why));
	CHECK_EQ(ret, 0);
	if (ret)
		return;
	ret = dlc_packw_add_source(w, 0, junk, sizeof(junk), why, sizeof(why));
	CHECK_EQ(ret, DLC_PACK_PLAIN);
	CHECK(why[0], "no reason for a non-JPEG kept as is");
	j = src_bytes(1, &len);
	CHECK(j);
	if (j) {
		ret = dlc_packw_add_source(w, 1, j, len / 2, why, sizeof(why));
		CHECK_EQ(ret, DLC_PACK_PLAIN);
		CHECK(why[0], "no reason for a truncated JPEG kept as is");
		/* An id added twice, one out of range. */
		CHECK_EQ(dlc_packw_add(w, 1, DLC_PACK_PLAIN, j, len, len, NULL,
				       NULL), -EEXIST);
		CHECK_EQ(dlc_packw_add(w, dlc_index_count(src_idx),
				       DLC_PACK_PLAIN, j, len, len, NULL, NULL),
			 -EINVAL);
		CHECK_EQ(dlc_packw_add(w, 2, DLC_PACK_PLAIN, j, 0, 0, NULL,
				       NULL), -EINVAL);
		CHECK_EQ(dlc_packw_add(w, 2, 7, j, len, len, NULL, NULL),
			 -EINVAL);
		free(j);
	}
	/* Not every sample added: no pack, and no .part. */
	ret = dlc_packw_finish(w, why, sizeof(why));
	CHECK_EQ(ret, -EINVAL);
	CHECK(strstr(why, "sample 2") && strstr(why, "never added"), "%s", why);
	CHECK(access(at("kp.dlp"), F_OK) && access(at("kp.dlp.part"), F_OK));
}

/* The writer's restart-indexed records are checked as the reader checks. */
static void test_add_checks_geometry(void)
{
	struct dlc_rst_geom g;
	struct dlc_packw *w;
	uint32_t bad[3] = { 10, 50, 50 };
	uint8_t buf[100] = { 0 };

	CHECK_EQ(dlc_packw_create(at("geo.dlp"), src_idx, NULL, &w, NULL, 0),
		 0);
	if (!w)
		return;
	fake_geom(&g);
	CHECK_EQ(dlc_packw_add(w, 0, DLC_PACK_RST, buf, 100, 100, &g, bad),
		 -EINVAL);
	g.interval = 2;
	CHECK_EQ(dlc_packw_add(w, 0, DLC_PACK_RST, buf, 100, 100, &g,
			       fake_rows), -EINVAL);
	fake_geom(&g);
	CHECK_EQ(dlc_packw_add(w, 0, DLC_PACK_RST, buf, 91, 91, &g, fake_rows),
		 -EINVAL);
	CHECK_EQ(dlc_packw_add(w, 0, DLC_PACK_RST, buf, 100, 100, &g,
			       fake_rows), 0);
	dlc_packw_abort(w);
	CHECK(access(at("geo.dlp.part"), F_OK), "abort left the .part");
}

/* A stale .part of ours is replaced; anything else there is left alone. */
static void test_stale_part(void)
{
	struct dlc_packw *w = NULL;
	char why[256];
	size_t len;
	uint8_t *b;

	CHECK_EQ(t_write_file(at("st.dlp.part"), "DLCPACK\0junk", 12), 0);
	CHECK_EQ(dlc_packw_create(at("st.dlp"), src_idx, NULL, &w, why,
				  sizeof(why)), 0);
	dlc_packw_abort(w);
	CHECK_EQ(t_write_file(at("st.dlp.part"), "precious", 8), 0);
	w = NULL;
	CHECK_EQ(dlc_packw_create(at("st.dlp"), src_idx, NULL, &w, why,
				  sizeof(why)), -EEXIST);
	CHECK(w == NULL);
	CHECK(strstr(why, "not a pack being written"), "%s", why);
	b = t_read_file(at("st.dlp.part"), &len);
	CHECK(b && len == 8 && !memcmp(b, "precious", 8),
	      "a foreign .part was touched");
	free(b);
	unlink(at("st.dlp.part"));
	CHECK_EQ(dlc_packw_create(at("st.dlp"), src_idx,
				  &(struct dlc_packw_opts){ .align = 384 },
				  &w, why, sizeof(why)), -EINVAL);
}

/*
 * An index may hold a path with a control byte (a file named so); a pack
 * may not (its reader refuses it): the writer refuses the index at
 * create, before anything is written.
 */
static void test_names_refused(void)
{
	struct dlc_index *idx = NULL;
	struct dlc_packw *w = NULL;
	char why[256] = "", dir[PATH_MAX], path[PATH_MAX + 32];
	struct stat st;
	uint8_t *jpg;
	size_t len;

	snprintf(dir, sizeof(dir), "%s/ctl", tmp);
	CHECK_EQ(t_make_dataset(dir, 2, 2), 0);
	jpg = src_bytes(0, &len);
	CHECK(jpg != NULL);
	if (!jpg)
		return;
	snprintf(path, sizeof(path), "%s/class01/new\nline.jpg", dir);
	CHECK_EQ(t_write_file(path, jpg, len), 0);
	free(jpg);
	CHECK_EQ(dlc_index_build(dir, &idx), 0);
	if (!idx)
		return;
	CHECK_EQ(dlc_packw_create(at("ctl.dlp"), idx, NULL, &w, why,
				  sizeof(why)), -EINVAL);
	CHECK(w == NULL);
	CHECK(strstr(why, "a path a pack cannot hold"), "%s", why);
	CHECK(stat(at("ctl.dlp.part"), &st) && errno == ENOENT);
	dlc_index_free(idx);
}

struct adder {
	struct dlc_packw *w;
	uint32_t first, step;
	int err;
};

static void *add_thread(void *arg)
{
	struct adder *a = arg;
	uint32_t i, n = dlc_index_count(src_idx);
	uint8_t buf[1000];

	for (i = a->first; i < n; i += a->step) {
		memset(buf, (int)i, sizeof(buf));
		if (dlc_packw_add(a->w, i, DLC_PACK_PLAIN, buf, 500 + i, 1,
				  NULL, NULL))
			a->err = 1;
	}
	return NULL;
}

/* Four threads adding at once: every sample intact, nothing overlaps. */
static void test_threads(void)
{
	struct adder a[4];
	pthread_t t[4];
	struct dlc_packw *w;
	struct dlc_pack *p;
	char why[256];
	uint32_t i, k;
	int fd;

	CHECK_EQ(dlc_packw_create(at("th.dlp"), src_idx,
				  &(struct dlc_packw_opts){ .align = 64 }, &w,
				  why, sizeof(why)), 0);
	if (!w)
		return;
	for (k = 0; k < 4; k++) {
		a[k] = (struct adder){ w, k, 4, 0 };
		pthread_create(&t[k], NULL, add_thread, &a[k]);
	}
	for (k = 0; k < 4; k++) {
		pthread_join(t[k], NULL);
		CHECK(!a[k].err);
	}
	CHECK_EQ(dlc_packw_finish(w, why, sizeof(why)), 0);
	CHECK_EQ(dlc_pack_open(at("th.dlp"), &p, why, sizeof(why)), 0);
	if (!p)
		return;
	fd = open(at("th.dlp"), O_RDONLY);
	for (i = 0; i < dlc_pack_count(p); i++) {
		struct dlc_pack_entry e;
		uint8_t buf[1000], want[1000];

		dlc_pack_entry(p, i, &e);
		memset(want, (int)i, sizeof(want));
		CHECK_EQ(e.len, 500 + i);
		CHECK_EQ(e.off % 64, 0);
		CHECK(pread(fd, buf, e.len, (off_t)e.off) == (ssize_t)e.len &&
		      !memcmp(buf, want, e.len), "sample %u garbled", i);
	}
	close(fd);
	dlc_pack_close(p);
}

/* ---- a pack as an index ---- */

static void test_as_index(void)
{
	const char *path = at("fake.dlp");
	struct dlc_index *idx = NULL;
	uint64_t k1[2], k2[2];
	uint32_t i, crc;
	char *real;

	if (pack_fake(path))
		return;
	CHECK_EQ(dlc_pack_sniff(path), 1);
	CHECK_EQ(dlc_pack_sniff(tmp), 0);
	CHECK_EQ(dlc_pack_sniff(at("no-such")), -ENOENT);
	CHECK(dlc_index_pack(src_idx) == NULL);
	CHECK_EQ(dlc_index_load(path, &idx), 0);
	if (!idx)
		return;
	CHECK(dlc_index_pack(idx) != NULL);
	real = realpath(path, NULL);
	CHECK(real && !strcmp(dlc_index_root(idx), real));
	free(real);
	CHECK_EQ(dlc_index_count(idx), dlc_index_count(src_idx));
	CHECK_EQ(dlc_index_num_classes(idx), dlc_index_num_classes(src_idx));
	for (i = 0; i < dlc_index_num_classes(idx); i++)
		CHECK(!strcmp(dlc_index_class_name(idx, i),
			      dlc_index_class_name(src_idx, i)));
	for (i = 0; i < dlc_index_count(idx); i++) {
		struct dlc_pack_entry e;

		dlc_pack_entry(dlc_index_pack(idx), i, &e);
		CHECK(!strcmp(dlc_index_relpath(idx, i),
			      dlc_index_relpath(src_idx, i)));
		CHECK_EQ(dlc_index_label(idx, i), dlc_index_label(src_idx, i));
		CHECK_EQ(dlc_index_size(idx, i), e.len);
		CHECK(!dlc_index_crc32c(idx, i, &crc) && crc == e.crc);
		if (i & 1)
			continue;
		CHECK_EQ(e.kind, DLC_PACK_RST);
		CHECK_EQ(e.g.scan_off, 10);
		CHECK_EQ(e.g.end_off, 90);
		CHECK_EQ(e.g.mcus_x, 3);
		CHECK_EQ(e.g.mcus_y, 2);
	}
	dlc_index_key(idx, k1);
	dlc_index_key(src_idx, k2);
	CHECK(k1[0] != k2[0] || k1[1] != k2[1], "the pack's key is the index's");
	CHECK_EQ(k1[1] & UINT32_MAX, dlc_index_count(idx));
	CHECK_EQ(dlc_index_save(idx, at("saved.idx")), -EINVAL);
	CHECK(access(at("saved.idx"), F_OK));
	dlc_index_free(idx);
	idx = NULL;
	CHECK_EQ(dlc_index_load_at(path, tmp, &idx), -EINVAL);
	CHECK(idx == NULL);
}

/* ---- corruption ---- */

static uint8_t *good;		/* the fake pack's bytes */
static size_t good_len;

static uint64_t hdr64(const uint8_t *b, int off)
{
	return pk_get64(b + off);
}

/* Recompute the metadata's CRC and then the header's. */
static void reseal(uint8_t *b, size_t len)
{
	uint64_t mo = hdr64(b, PK_HDR_META_OFF), ml = hdr64(b, PK_HDR_META_LEN);

	if (mo <= len && ml <= len - mo)
		pk_put32(b + PK_HDR_META_CRC, dlc_crc32c(0, b + mo, ml));
	pk_put32(b + PK_HDR_CRC, dlc_crc32c(0, b, PK_HDR_CRC));
}

static uint8_t *meta_of(uint8_t *b)
{
	return b + hdr64(b, PK_HDR_META_OFF);
}

static uint8_t *rec_of(uint8_t *b, uint32_t id)
{
	uint8_t *m = meta_of(b);

	return m + PK_META_LEN + pk_get64(m + PK_META_CLASSES_LEN) +
	       (size_t)id * PK_REC_LEN;
}

static uint8_t *rows_of(uint8_t *b)
{
	uint8_t *m = meta_of(b);

	return m + PK_META_LEN + pk_get64(m + PK_META_CLASSES_LEN) +
	       pk_get64(m + PK_META_RECORDS_LEN);
}

/* Open @b as a file: the error, with @why filled. */
static int open_bytes(const uint8_t *b, size_t len, char *why, size_t wl)
{
	struct dlc_pack *p = NULL;
	int ret;

	CHECK_EQ(t_write_file(at("bad.dlp"), b, len), 0);
	ret = dlc_pack_open(at("bad.dlp"), &p, why, wl);
	CHECK(ret || p);
	dlc_pack_close(p);
	return ret;
}

/* Damage a copy of the good pack with @fn, open it, expect @err + @want. */
static void expect(const char *name, void (*fn)(uint8_t *b, size_t *len),
		   int do_reseal, int err, const char *want)
{
	uint8_t *b = malloc(good_len);
	size_t len = good_len;
	char why[512] = "";
	int ret;

	memcpy(b, good, good_len);
	fn(b, &len);
	if (do_reseal)
		reseal(b, len);
	ret = open_bytes(b, len, why, sizeof(why));
	if (ret != err || !strstr(why, want))
		t_fail(__FILE__, __LINE__, name, "%s: got %d \"%s\", want %d "
		       "\"%s\"", name, ret, why, err, want);
	free(b);
}

/* expect() of a record's damage: the why names sample @id, its path, @what. */
static void expect_rec(const char *name, void (*fn)(uint8_t *b, size_t *len),
		       uint32_t id, const char *what)
{
	char want[PATH_MAX + 64];

	snprintf(want, sizeof(want), "sample %u (%s): %s", id,
		 dlc_index_relpath(src_idx, id), what);
	expect(name, fn, 1, -EBADMSG, want);
}

static void bad_magic(uint8_t *b, size_t *l) { b[3] ^= 1; }
static void bad_version(uint8_t *b, size_t *l) { pk_put32(b + PK_HDR_VERSION, 2); }
static void bad_hdr_crc(uint8_t *b, size_t *l) { b[PK_HDR_COUNT] ^= 1; }
static void bad_meta_crc(uint8_t *b, size_t *l) { meta_of(b)[PK_META_LEN] ^= 1; }
static void bad_reserved(uint8_t *b, size_t *l) { b[2000] = 1; }
static void bad_reserved0(uint8_t *b, size_t *l) { pk_put32(b + PK_HDR_RESERVED0, 1); }
static void bad_flags(uint8_t *b, size_t *l) { pk_put32(b + PK_HDR_FLAGS, 4); }
static void bad_align(uint8_t *b, size_t *l) { pk_put32(b + PK_HDR_ALIGN, 48); }
static void bad_count(uint8_t *b, size_t *l)
{
	pk_put32(b + PK_HDR_COUNT, pk_get32(b + PK_HDR_COUNT) - 1);
}
static void bad_meta_reserved(uint8_t *b, size_t *l)
{
	meta_of(b)[PK_META_RESERVED] = 1;
}
static void bad_sections(uint8_t *b, size_t *l)
{
	uint8_t *m = meta_of(b);

	pk_put64(m + PK_META_ROWS_LEN, pk_get64(m + PK_META_ROWS_LEN) + 1);
}
static void bad_trailing(uint8_t *b, size_t *l)
{
	pk_put64(b + PK_HDR_META_LEN, hdr64(b, PK_HDR_META_LEN) - 1);
}
static void off_past_end(uint8_t *b, size_t *l)
{
	pk_put64(rec_of(b, 1) + PK_REC_OFF, *l + 4096);
}
static void off_unaligned(uint8_t *b, size_t *l)
{
	uint8_t *r = rec_of(b, 1);

	pk_put64(r + PK_REC_OFF, pk_get64(r + PK_REC_OFF) + 8);
}
static void off_into_meta(uint8_t *b, size_t *l)
{
	uint64_t mo = hdr64(b, PK_HDR_META_OFF);
	uint8_t *r = rec_of(b, 3);

	/* Aligned, starting in the data, running into the metadata. */
	pk_put64(r + PK_REC_OFF, (mo - 1) & ~(uint64_t)511);
	pk_put32(r + PK_REC_LEN_, 1024);
}
static void off_overlap(uint8_t *b, size_t *l)
{
	pk_put64(rec_of(b, 3) + PK_REC_OFF,
		 pk_get64(rec_of(b, 2) + PK_REC_OFF));
}
static void len_zero(uint8_t *b, size_t *l) { pk_put32(rec_of(b, 1) + PK_REC_LEN_, 0); }
static void label_big(uint8_t *b, size_t *l)
{
	pk_put32(rec_of(b, 2) + PK_REC_LABEL, pk_get32(b + PK_HDR_NCLASSES));
}
static void label_neg(uint8_t *b, size_t *l) { pk_put32(rec_of(b, 2) + PK_REC_LABEL, (uint32_t)-1); }
static void kind_bad(uint8_t *b, size_t *l) { pk_put32(rec_of(b, 1) + PK_REC_KIND, 2); }
static void plain_geom(uint8_t *b, size_t *l) { pk_put32(rec_of(b, 1) + PK_REC_WIDTH, 5); }
static void path_off(uint8_t *b, size_t *l) { pk_put32(rec_of(b, 2) + PK_REC_PATH, 1u << 30); }
/* The strings are the metadata's tail: drop the last NUL. */
static void path_unterminated(uint8_t *b, size_t *l) { b[*l - 1] = 'x'; }
static void path_empty(uint8_t *b, size_t *l)
{
	/* Point sample 2 at the NUL that ends sample 1's path. */
	uint32_t po = pk_get32(rec_of(b, 1) + PK_REC_PATH);

	pk_put32(rec_of(b, 2) + PK_REC_PATH,
		 po + (uint32_t)strlen(dlc_index_relpath(src_idx, 1)));
}
static void class_unterminated(uint8_t *b, size_t *l)
{
	uint8_t *m = meta_of(b);

	m[PK_META_LEN + pk_get64(m + PK_META_CLASSES_LEN) - 1] = 'x';
}
/* Sample 0's rows are {10, +40, +40}: make the second delta 0. */
static void rows_not_increasing(uint8_t *b, size_t *l)
{
	uint8_t *r = rec_of(b, 0);

	rows_of(b)[pk_get64(r + PK_REC_ROWS_OFF) + 1] = 0;
}
static void rows_short(uint8_t *b, size_t *l)
{
	uint8_t *r = rec_of(b, 0);

	pk_put32(r + PK_REC_ROWS_LEN, pk_get32(r + PK_REC_ROWS_LEN) - 1);
}
static void rows_long(uint8_t *b, size_t *l)
{
	uint8_t *r = rec_of(b, 0);

	/* One more MCU row than the table holds offsets for. */
	pk_put32(r + PK_REC_HEIGHT, 40);
}
static void rows_outside(uint8_t *b, size_t *l)
{
	uint8_t *r = rec_of(b, 0);

	pk_put64(r + PK_REC_ROWS_OFF, 1u << 30);
}
static void rows_eoi_past(uint8_t *b, size_t *l)
{
	uint8_t *r = rec_of(b, 0);

	/* Rows {10, 50, 90} need 92 bytes. */
	pk_put32(r + PK_REC_LEN_, 91);
}
static void rows_varint(uint8_t *b, size_t *l)
{
	uint8_t *r = rec_of(b, 0);

	rows_of(b)[pk_get64(r + PK_REC_ROWS_OFF) + 2] |= 0x80;
}
/* Sample @id's path in the strings. */
static char *path_of(uint8_t *b, uint32_t id)
{
	uint8_t *m = meta_of(b);

	return (char *)rows_of(b) + pk_get64(m + PK_META_ROWS_LEN) +
	       pk_get32(rec_of(b, id) + PK_REC_PATH);
}
static void path_control(uint8_t *b, size_t *l) { path_of(b, 1)[5] = '\n'; }
static void path_dotdot(uint8_t *b, size_t *l) { memcpy(path_of(b, 1), "../", 3); }
static void path_dot(uint8_t *b, size_t *l) { memcpy(path_of(b, 1), "./", 2); }
static void path_one_comp(uint8_t *b, size_t *l)
{
	char *p = path_of(b, 1);

	*strchr(p, '/') = '_';
}
static void class_slash(uint8_t *b, size_t *l) { meta_of(b)[PK_META_LEN + 2] = '/'; }
static void class_control(uint8_t *b, size_t *l) { meta_of(b)[PK_META_LEN] = 0x1b; }
static void class_dotdot(uint8_t *b, size_t *l)
{
	uint8_t *m = meta_of(b);

	/* The class table: "class00\0class01\0...": make the first "..". */
	memcpy(m + PK_META_LEN, "..\0", 3);
	memmove(m + PK_META_LEN + 3, m + PK_META_LEN + 8,
		pk_get64(m + PK_META_CLASSES_LEN) - 8);
	memset(m + PK_META_LEN + pk_get64(m + PK_META_CLASSES_LEN) - 5, 'x', 4);
	m[PK_META_LEN + pk_get64(m + PK_META_CLASSES_LEN) - 1] = 0;
}
static void geom_interval(uint8_t *b, size_t *l) { pk_put32(rec_of(b, 0) + PK_REC_INTERVAL, 2); }
static void geom_ncomp(uint8_t *b, size_t *l) { rec_of(b, 0)[PK_REC_NCOMP] = 4; }
static void geom_mcu(uint8_t *b, size_t *l) { rec_of(b, 0)[PK_REC_MCU_W] = 12; }
static void geom_width(uint8_t *b, size_t *l) { pk_put32(rec_of(b, 0) + PK_REC_WIDTH, 0); }
static void geom_gray16(uint8_t *b, size_t *l) { rec_of(b, 0)[PK_REC_NCOMP] = 1; }
static void geom_pad(uint8_t *b, size_t *l) { rec_of(b, 0)[PK_REC_PAD] = 1; }

static void test_corrupt(void)
{
	char why[512], want[PATH_MAX + 64];
	size_t cuts[8], k;
	uint64_t mo;

	if (pack_fake(at("good.dlp")))
		return;
	good = t_read_file(at("good.dlp"), &good_len);
	CHECK(good);
	if (!good)
		return;
	/* The good bytes open (the harness itself is sound). */
	CHECK_EQ(open_bytes(good, good_len, why, sizeof(why)), 0);

	mo = hdr64(good, PK_HDR_META_OFF);
	cuts[0] = 0;
	cuts[1] = 7;
	cuts[2] = 100;
	cuts[3] = PK_HDR_LEN - 1;
	cuts[4] = PK_HDR_LEN;
	cuts[5] = PK_HDR_LEN + 700;
	cuts[6] = (size_t)mo + 20;
	cuts[7] = good_len - 1;
	for (k = 0; k < 8; k++) {
		int ret = open_bytes(good, cuts[k], why, sizeof(why));

		if (ret != -EBADMSG || !why[0])
			t_fail(__FILE__, __LINE__, "truncated",
			       "cut at %zu: %d \"%s\"", cuts[k], ret, why);
	}

	expect("bad magic", bad_magic, 0, -EBADMSG, "magic");
	expect("version 2", bad_version, 0, -EPROTO, "version 2");
	expect("version 2 resealed", bad_version, 1, -EPROTO, "version 2");
	expect("header crc", bad_hdr_crc, 0, -EBADMSG, "header: crc32c");
	expect("metadata crc", bad_meta_crc, 0, -EBADMSG, "metadata: crc32c");
	expect("reserved byte", bad_reserved, 1, -EBADMSG, "reserved byte 2000");
	expect("reserved word", bad_reserved0, 1, -EBADMSG, "reserved word");
	expect("flags", bad_flags, 1, -EBADMSG, "flags");
	expect("align", bad_align, 1, -EBADMSG, "align 48");
	expect("count", bad_count, 1, -EBADMSG, "records length");
	expect("metadata reserved", bad_meta_reserved, 1, -EBADMSG,
	       "metadata: reserved");
	expect("sections", bad_sections, 1, -EBADMSG, "section lengths");
	expect("trailing bytes", bad_trailing, 1, -EBADMSG,
	       "does not end at the file's end");

	expect_rec("off past the end", off_past_end, 1, "off/len: outside");
	expect_rec("off unaligned", off_unaligned, 1, "off: not aligned");
	expect_rec("into the metadata", off_into_meta, 3,
		   "off/len: outside the data");
	expect("overlap", off_overlap, 1, -EBADMSG, "overlaps sample");
	expect_rec("len 0", len_zero, 1, "len: 0");
	expect_rec("label >= nclasses", label_big, 2, "label");
	expect_rec("label < 0", label_neg, 2, "label");
	expect_rec("kind", kind_bad, 1, "kind: unknown");
	expect_rec("plain geometry", plain_geom, 1, "geometry: not zero");
	expect("path offset", path_off, 1, -EBADMSG,
	       "sample 2: path offset");
	snprintf(want, sizeof(want), "sample %u: path at",
		 dlc_index_count(src_idx) - 1);
	expect("path unterminated", path_unterminated, 1, -EBADMSG, want);
	expect("path empty", path_empty, 1, -EBADMSG, "sample 2: path \"\"");
	expect("class unterminated", class_unterminated, 1, -EBADMSG,
	       "not NUL-terminated inside the class table");
	/* The index's rules for its paths and class names, and one line. */
	expect("path control byte", path_control, 1, -EBADMSG,
	       "sample 1: path holds a control byte");
	expect("path ..", path_dotdot, 1, -EBADMSG, "sample 1: path \"../");
	expect("path .", path_dot, 1, -EBADMSG, "sample 1: path \"./");
	expect("path one component", path_one_comp, 1, -EBADMSG,
	       "sample 1: path \"class00_");
	expect("class /", class_slash, 1, -EBADMSG, "class 0: name");
	expect("class control byte", class_control, 1, -EBADMSG,
	       "class 0: name");
	expect("class ..", class_dotdot, 1, -EBADMSG, "class 0: name");

	expect_rec("rows not increasing", rows_not_increasing, 0, "rows");
	expect_rec("rows short", rows_short, 0, "rows");
	expect_rec("rows for fewer MCU rows", rows_long, 0, "rows");
	expect_rec("rows outside the stream", rows_outside, 0, "rows");
	expect_rec("rows past the sample", rows_eoi_past, 0, "rows");
	expect_rec("rows varint", rows_varint, 0, "rows");
	expect_rec("interval", geom_interval, 0, "interval");
	expect_rec("ncomp", geom_ncomp, 0, "ncomp");
	expect_rec("mcu size", geom_mcu, 0, "mcu_w/mcu_h");
	expect_rec("width 0", geom_width, 0, "width/height");
	expect_rec("gray 16x16", geom_gray16, 0,
		   "mcu_w/mcu_h: not 8 x 8 for one component");
	expect_rec("record pad", geom_pad, 0, "pad: not zero");
	free(good);
	good = NULL;
}

/*
 * A pack as dlcachectl pack --to leaves it on a device: the file's pack,
 * then whatever the device held (here @tail zero bytes), with
 * PK_FLAG_DEVICE and the device record. @mut damages it after the record
 * is filled; the header is resealed unless @mut is the placeholder.
 */
enum dev_mut { DEV_GOOD, DEV_PACK_LEN, DEV_DEV_LEN, DEV_LBA, DEV_RESERVED,
	       DEV_RESERVED_AFTER, DEV_UNKNOWN_FLAG, DEV_NO_FLAG, DEV_PLACEHOLDER,
	       DEV_TINY, DEV_META_IN_HEADER, DEV_HEADER_ONLY };

static int open_device_like(const uint8_t *pack, size_t len, size_t tail,
			    enum dev_mut mut, char *why, size_t wl)
{
	size_t total = len + tail;
	uint8_t *b = calloc(1, total);
	int ret;

	if (!b)
		return -ENOMEM;
	memcpy(b, pack, len);
	pk_put32(b + PK_HDR_FLAGS, PK_FLAG_DEVICE);
	pk_put32(b + PK_HDR_DEV_LBA, 512);
	pk_put64(b + PK_HDR_DEV_PACK_LEN, len);
	pk_put64(b + PK_HDR_DEV_LEN, total);
	memset(b + PK_HDR_DEV_EUI64, 0xa5, 8);
	pk_put32(b + PK_HDR_DEV_NSID, 1);
	switch (mut) {
	case DEV_GOOD:
		break;
	case DEV_PACK_LEN:	/* the pack would end inside its metadata */
		pk_put64(b + PK_HDR_DEV_PACK_LEN, len - 1);
		break;
	case DEV_DEV_LEN:	/* larger than the device it was written on */
		pk_put64(b + PK_HDR_DEV_LEN, len - 1);
		break;
	case DEV_LBA:
		pk_put32(b + PK_HDR_DEV_LBA, 3000);
		break;
	case DEV_RESERVED:
		pk_put32(b + PK_HDR_DEV_RESERVED, 1);
		break;
	case DEV_RESERVED_AFTER:
		b[PK_HDR_DEV_END + 10] = 1;
		break;
	case DEV_UNKNOWN_FLAG:
		pk_put32(b + PK_HDR_FLAGS, PK_FLAG_DEVICE | 2);
		break;
	case DEV_NO_FLAG:	/* a record without the flag: reserved bytes */
		pk_put32(b + PK_HDR_FLAGS, 0);
		break;
	case DEV_TINY:		/* fsize - data_off wrapped: malloc near 2^64 */
		pk_put64(b + PK_HDR_DEV_PACK_LEN, 100);
		break;
	case DEV_META_IN_HEADER:	/* meta_off wraps to 0: in the header */
		pk_put64(b + PK_HDR_DEV_PACK_LEN, 100);
		pk_put64(b + PK_HDR_DATA_LEN, (uint64_t)0 - PK_HDR_LEN);
		pk_put64(b + PK_HDR_META_OFF, 0);
		pk_put64(b + PK_HDR_META_LEN, 100);
		break;
	case DEV_HEADER_ONLY:	/* a header, no room for the metadata */
		pk_put64(b + PK_HDR_DEV_PACK_LEN, PK_HDR_LEN + 8);
		pk_put64(b + PK_HDR_DATA_LEN, 0);
		pk_put64(b + PK_HDR_META_OFF, PK_HDR_LEN);
		pk_put64(b + PK_HDR_META_LEN, 8);
		break;
	case DEV_PLACEHOLDER:	/* what the writer leaves until the end */
		memset(b, 0, PK_HDR_LEN);
		memcpy(b, DLC_PACK_MAGIC, 8);
		pk_put32(b + PK_HDR_VERSION, PK_VERSION);
		break;
	}
	if (mut != DEV_PLACEHOLDER)
		pk_put32(b + PK_HDR_CRC, dlc_crc32c(0, b, PK_HDR_CRC));
	ret = open_bytes(b, total, why, wl);
	free(b);
	return ret;
}

static void test_device_header(void)
{
	static const struct {
		enum dev_mut mut;
		const char *want;
	} bad[] = {
		{ DEV_PACK_LEN, "does not end at the pack's end" },
		{ DEV_DEV_LEN, "do not fit the device" },
		{ DEV_LBA, "device LBA size 3000" },
		{ DEV_RESERVED, "reserved word at 132" },
		{ DEV_RESERVED_AFTER, "reserved byte 146" },
		{ DEV_UNKNOWN_FLAG, "unknown flags 0x2" },
		{ DEV_NO_FLAG, "reserved byte 85" },	/* 512, LE */
		{ DEV_PLACEHOLDER, "an unfinished pack" },
		{ DEV_TINY, "do not hold its 4136-byte header and metadata" },
		{ DEV_META_IN_HEADER, "do not hold its" },
		{ DEV_HEADER_ONLY, "do not hold its" },
	};
	struct dlc_pack_device d;
	struct dlc_pack *p = NULL;
	char why[512];
	uint8_t *pack;
	size_t len, i;
	int ret;

	if (pack_fake(at("dev.dlp")))
		return;
	pack = t_read_file(at("dev.dlp"), &len);
	CHECK(pack);
	if (!pack)
		return;
	/* Good: it opens, and says what the record holds. */
	CHECK_EQ(open_device_like(pack, len, 65536, DEV_GOOD, why,
				  sizeof(why)), 0);
	CHECK_EQ(dlc_pack_open(at("bad.dlp"), &p, why, sizeof(why)), 0);
	if (p) {
		CHECK_EQ(dlc_pack_device(p, &d), 1);
		CHECK_EQ(d.pack_bytes, len);
		CHECK_EQ(d.dev_bytes, len + 65536);
		CHECK_EQ(d.lba_bytes, 512);
		CHECK_EQ(d.nsid, 1);
		CHECK_EQ(d.eui64[7], 0xa5);
		dlc_pack_close(p);
		p = NULL;
	}
	/* A file's pack has no record. */
	CHECK_EQ(dlc_pack_open(at("dev.dlp"), &p, why, sizeof(why)), 0);
	if (p) {
		CHECK_EQ(dlc_pack_device(p, &d), 0);
		dlc_pack_close(p);
	}
	/* Nothing after the pack: pack_bytes is the whole file. */
	CHECK_EQ(open_device_like(pack, len, 0, DEV_GOOD, why, sizeof(why)), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		ret = open_device_like(pack, len, 65536, bad[i].mut, why,
				       sizeof(why));
		if (ret != -EBADMSG || !strstr(why, bad[i].want))
			t_fail(__FILE__, __LINE__, "device header",
			       "case %zu: got %d \"%s\", want -EBADMSG \"%s\"",
			       i, ret, why, bad[i].want);
	}
	free(pack);
}

/* Peak RSS of this process, in KiB. */
static long maxrss_kib(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) ? 0 : ru.ru_maxrss;
}

/*
 * A sparse file of 4 GiB (a few KiB on disk) whose header (valid CRC)
 * and metadata preamble claim metadata of nearly all of it, for 2^20
 * samples: the open fails at the hole with -EBADMSG, in well under a
 * second and a few MiB, instead of taking 4 GiB and reading it all. A
 * preamble that does not add up fails before any metadata is read.
 */
static void test_sparse_meta(void)
{
	const uint64_t fsize = 4ULL << 30, count = 1U << 20;
	uint64_t meta_len = fsize - PK_HDR_LEN;
	uint8_t hdr[PK_HDR_LEN], pre[PK_META_LEN + 8];
	struct dlc_pack *p = NULL;
	struct timespec t0, t1;
	char why[512] = "";
	long rss0, rss1;
	double secs;
	int fd, ret;

	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr + PK_HDR_MAGIC, DLC_PACK_MAGIC, 8);
	pk_put32(hdr + PK_HDR_VERSION, PK_VERSION);
	pk_put32(hdr + PK_HDR_HDRLEN, PK_HDR_LEN);
	pk_put32(hdr + PK_HDR_COUNT, (uint32_t)count);
	pk_put32(hdr + PK_HDR_NCLASSES, 1);
	pk_put32(hdr + PK_HDR_ALIGN, 1);
	pk_put64(hdr + PK_HDR_DATA_OFF, PK_HDR_LEN);
	pk_put64(hdr + PK_HDR_DATA_LEN, 0);
	pk_put64(hdr + PK_HDR_META_OFF, PK_HDR_LEN);
	pk_put64(hdr + PK_HDR_META_LEN, meta_len);
	pk_put32(hdr + PK_HDR_CRC, dlc_crc32c(0, hdr, PK_HDR_CRC));
	/* One class "a", count records, the rest strings: all in bounds. */
	memset(pre, 0, sizeof(pre));
	pk_put64(pre + PK_META_CLASSES_LEN, 2);
	pk_put64(pre + PK_META_RECORDS_LEN, count * PK_REC_LEN);
	pk_put64(pre + PK_META_STRINGS_LEN,
		 meta_len - PK_META_LEN - 2 - count * PK_REC_LEN);
	memcpy(pre + PK_META_LEN, "a", 2);

	fd = open(at("sparse.dlp"), O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	if (ftruncate(fd, (off_t)fsize)) {
		t_skip("sparse_meta", "no 4 GiB sparse file here: %s",
		       strerror(errno));
		close(fd);
		unlink(at("sparse.dlp"));
		return;
	}
	CHECK(pwrite(fd, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr));
	CHECK(pwrite(fd, pre, sizeof(pre), PK_HDR_LEN) == (ssize_t)sizeof(pre));

	rss0 = maxrss_kib();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = dlc_pack_open(at("sparse.dlp"), &p, why, sizeof(why));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	rss1 = maxrss_kib();
	secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	CHECK(ret == -EBADMSG && strstr(why, "a hole"), "got %d \"%s\"", ret,
	      why);
	CHECK(secs < 1.0, "failing took %.2f s", secs);
	CHECK(rss1 - rss0 < 64 * 1024, "peak RSS grew by %ld KiB", rss1 - rss0);
	dlc_pack_close(p);
	p = NULL;

	/* The same claim with sections that do not add up: the preamble. */
	pk_put64(pre + PK_META_STRINGS_LEN, 5);
	CHECK(pwrite(fd, pre, sizeof(pre), PK_HDR_LEN) == (ssize_t)sizeof(pre));
	ret = dlc_pack_open(at("sparse.dlp"), &p, why, sizeof(why));
	CHECK(ret == -EBADMSG && strstr(why, "section lengths"),
	      "got %d \"%s\"", ret, why);
	dlc_pack_close(p);
	p = NULL;
	/* Strings more than its paths can need: the preamble too. */
	pk_put32(hdr + PK_HDR_COUNT, 1);
	pk_put32(hdr + PK_HDR_CRC, dlc_crc32c(0, hdr, PK_HDR_CRC));
	pk_put64(pre + PK_META_RECORDS_LEN, PK_REC_LEN);
	pk_put64(pre + PK_META_STRINGS_LEN,
		 meta_len - PK_META_LEN - 2 - PK_REC_LEN);
	CHECK(pwrite(fd, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr));
	CHECK(pwrite(fd, pre, sizeof(pre), PK_HDR_LEN) == (ssize_t)sizeof(pre));
	ret = dlc_pack_open(at("sparse.dlp"), &p, why, sizeof(why));
	CHECK(ret == -EBADMSG && strstr(why, "strings"), "got %d \"%s\"",
	      ret, why);
	dlc_pack_close(p);
	close(fd);
	unlink(at("sparse.dlp"));
}

int main(void)
{
	int ret;

	tmp = t_mkdtemp(NULL);
	if (!tmp) {
		printf("FAIL: mkdtemp\n");
		return 1;
	}
	snprintf(src_root, sizeof(src_root), "%s/src", tmp);
	ret = t_make_dataset(src_root, 3, 4);
	if (!ret)
		ret = dlc_index_build(src_root, &src_idx);
	if (ret) {
		printf("FAIL: data set: %s\n", strerror(-ret));
		t_rmtree(tmp);
		return 1;
	}
	/* First: its peak RSS check wants a process that is still small. */
	T_RUN(test_sparse_meta);
	T_RUN(test_roundtrip);
	T_RUN(test_kept_plain);
	T_RUN(test_add_checks_geometry);
	T_RUN(test_stale_part);
	T_RUN(test_names_refused);
	T_RUN(test_threads);
	T_RUN(test_as_index);
	T_RUN(test_corrupt);
	T_RUN(test_device_header);
	dlc_index_free(src_idx);
	t_rmtree(tmp);
	return t_done("test_pack");
}
