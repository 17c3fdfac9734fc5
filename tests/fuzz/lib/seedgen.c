// SPDX-License-Identifier: MIT
/*
 * Seed corpora for the libdlcache fuzz harnesses, made at build time
 * (fuzz.mk) with the project's own generators, so that no binary input is
 * committed: small JPEGs from the tests' generator (t_make_jpeg()), their
 * restart-indexed transcodes (dlc_rst_transcode()), a pack written by the
 * pack writer (packwrite.c) over a data set of a few such JPEGs and one
 * file that is not a JPEG (kept plain), that data set's index file
 * (dlc_index_save()), that pack as if written onto a device, packs that
 * reach issue 30's known pack defects (a device pack inside its own
 * header, a path with a newline, metadata claimed up to 4 GiB), and
 * staging directory programs for fuzz_stage.c.
 * seeds.sh adds jpegtran's variants (progressive, arithmetic, restarts).
 *
 * usage: seedgen OUTDIR   (writes OUTDIR/{jpeg,jpeg_rst,pack,index,stage}/)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlcache.h"
#include "internal.h"
#include "crc32c.h"
#include "jpegrst.h"
#include "packfmt.h"
#include "packwrite.h"
#include "testutil.h"

static const char *out;

/*
 * The driver engine's objects (gcc -fsanitize-coverage=trace-pc) call
 * this in every basic block; driver.c keeps the coverage, here nothing.
 */
#if defined(__has_attribute) && __has_attribute(no_sanitize_coverage)
#define NO_COVERAGE __attribute__((no_sanitize_coverage))
#else
#define NO_COVERAGE
#endif
void __sanitizer_cov_trace_pc(void);
__attribute__((weak)) NO_COVERAGE void __sanitizer_cov_trace_pc(void)
{
}

static void put(const char *kind, const char *name, const void *d, size_t n)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s/%s", out, kind, name);
	if (t_write_file(path, d, n)) {
		fprintf(stderr, "seedgen: cannot write %s\n", path);
		exit(1);
	}
}

static void jpegs(void)
{
	static const struct { uint32_t w, h; int gray, q; } s[] = {
		{ 16, 16, 0, 75 }, { 33, 17, 1, 90 }, { 64, 48, 0, 50 },
		{ 8, 8, 1, 20 }, { 40, 72, 0, 95 }, { 1, 1, 0, 75 },
	};
	struct dlc_rst_opts o = { .interval = 1 };
	char name[64], why[128];
	unsigned int i;

	for (i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		uint8_t *j, *r;
		size_t n, rn;

		j = t_make_jpeg(s[i].w, s[i].h, i, s[i].gray, s[i].q, &n);
		if (!j)
			exit(1);
		snprintf(name, sizeof(name), "%ux%u-%s-q%d.jpg", s[i].w,
			 s[i].h, s[i].gray ? "gray" : "rgb", s[i].q);
		put("jpeg", name, j, n);
		put("jpeg_rst", name, j, n);
		o.interval = i % 3;
		if (!dlc_rst_transcode(j, n, &o, 0, &r, &rn, why, sizeof(why))) {
			snprintf(name, sizeof(name), "%ux%u-rst%u.jpg", s[i].w,
				 s[i].h, o.interval);
			put("jpeg_rst", name, r, rn);
			free(r);
		}
		free(j);
	}
}

/*
 * The first pack as if written onto a device of its size (PK_FLAG_DEVICE
 * and the device record), so that mutations reach the device checks.
 */
static void device_pack(void)
{
	char path[4096];
	uint8_t *d;
	size_t n;

	snprintf(path, sizeof(path), "%s/pack/dataset-0.dlp", out);
	d = t_read_file(path, &n);
	if (!d || n < PK_HDR_LEN)
		exit(1);
	pk_put32(d + PK_HDR_FLAGS, PK_FLAG_DEVICE);
	pk_put32(d + PK_HDR_DEV_LBA, 512);
	pk_put64(d + PK_HDR_DEV_PACK_LEN, n);
	pk_put64(d + PK_HDR_DEV_LEN, n);
	pk_put32(d + PK_HDR_CRC, dlc_crc32c(0, d, PK_HDR_CRC));
	put("pack", "dataset-0-device.dlp", d, n);
	/*
	 * A device pack of 100 bytes, inside its own header, with no data
	 * and metadata from 4096 to 100: its length wraps to near 2^64
	 * (issue 30, item 8: fsize - data_off is computed before
	 * pack_bytes >= the header is checked).
	 */
	pk_put64(d + PK_HDR_DEV_PACK_LEN, 100);
	pk_put64(d + PK_HDR_DATA_LEN, 0);
	pk_put64(d + PK_HDR_META_OFF, PK_HDR_LEN);
	pk_put64(d + PK_HDR_META_LEN, 100 - (uint64_t)PK_HDR_LEN);
	pk_put32(d + PK_HDR_CRC, dlc_crc32c(0, d, PK_HDR_CRC));
	put("pack", "device-wrap.dlp", d, PK_HDR_LEN + 512);
	free(d);
}

/*
 * The first pack with metadata that claims to end at 4 GiB: fuzz_pack.c
 * makes the file that long, sparse (issue 30, item 5: the reader mallocs
 * and reads meta_len bytes before any check but the file's size).
 */
static void sparse_pack(void)
{
	char path[4096];
	uint64_t moff;
	uint8_t *d;
	size_t n;

	snprintf(path, sizeof(path), "%s/pack/dataset-0.dlp", out);
	d = t_read_file(path, &n);
	if (!d || n < PK_HDR_LEN)
		exit(1);
	moff = pk_get64(d + PK_HDR_META_OFF);
	pk_put64(d + PK_HDR_META_LEN, (4ULL << 30) - moff);
	put("pack", "meta-4gib.dlp", d, n);
	free(d);
}

/*
 * The first pack with sample 0's path starting with a newline and its
 * label out of range (CRCs recomputed): the refusal names the path, and
 * must stay on one line (issue 30, item 8: pack paths are not checked
 * for control characters).
 */
static void newline_pack(void)
{
	uint64_t moff, classes, records, rows;
	uint8_t *d, *m, *rec;
	char path[4096];
	size_t n;

	snprintf(path, sizeof(path), "%s/pack/dataset-0.dlp", out);
	d = t_read_file(path, &n);
	if (!d || n < PK_HDR_LEN)
		exit(1);
	moff = pk_get64(d + PK_HDR_META_OFF);
	m = d + moff;
	classes = pk_get64(m + PK_META_CLASSES_LEN);
	records = pk_get64(m + PK_META_RECORDS_LEN);
	rows = pk_get64(m + PK_META_ROWS_LEN);
	rec = m + PK_META_LEN + classes;
	m[PK_META_LEN + classes + records + rows + pk_get32(rec + PK_REC_PATH)] = '\n';
	pk_put32(rec + PK_REC_LABEL, UINT32_MAX);
	pk_put32(d + PK_HDR_META_CRC,
		 dlc_crc32c(0, m, pk_get64(d + PK_HDR_META_LEN)));
	pk_put32(d + PK_HDR_CRC, dlc_crc32c(0, d, PK_HDR_CRC));
	put("pack", "path-newline.dlp", d, n);
	free(d);
}

/* A data set of three JPEGs and a file that is not one; its index; packs. */
static void dataset(void)
{
	struct dlc_packw_opts po = { .align = 64, .rst = { .interval = 2 } };
	char root[2048], path[4096], why[256];
	struct dlc_packw *w;
	struct dlc_index *idx;
	uint32_t i;
	uint8_t *d;
	size_t n;

	snprintf(root, sizeof(root), "%s/.data", out);
	for (i = 0; i < 3; i++) {
		d = t_make_jpeg(24 + 8 * i, 16 + 8 * i, i, i == 1, 60, &n);
		snprintf(path, sizeof(path), "%s/class_%u/img_%u.jpg", root,
			 i % 2, i);
		if (!d || t_write_file(path, d, n))
			exit(1);
		free(d);
	}
	snprintf(path, sizeof(path), "%s/class_1/notjpeg.jpg", root);
	if (t_write_file(path, "not a JPEG at all\n", 18))
		exit(1);
	if (dlc_index_build(root, &idx))
		exit(1);
	snprintf(path, sizeof(path), "%s/index", out);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/pack", out);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/index/dataset.idx", out);
	if (dlc_index_save(idx, path))
		exit(1);
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/pack/dataset-%u.dlp", out, i);
		po.align = i ? 1 : 64;
		po.rst.interval = i ? 0 : 2;
		if (dlc_packw_create(path, idx, &po, &w, why, sizeof(why)))
			goto fail;
		for (uint32_t id = 0; id < dlc_index_count(idx); id++) {
			snprintf(root, sizeof(root), "%s/.data/%s", out,
				 dlc_index_relpath(idx, id));
			d = t_read_file(root, &n);
			if (!d || dlc_packw_add_source(w, id, d, n, why,
						       sizeof(why)) < 0)
				goto fail;
			free(d);
		}
		if (dlc_packw_finish(w, why, sizeof(why)))
			goto fail;
	}
	device_pack();
	newline_pack();
	sparse_pack();
	dlc_index_free(idx);
	snprintf(root, sizeof(root), "%s/.data", out);
	t_rmtree(root);
	return;
fail:
	fprintf(stderr, "seedgen: pack: %s\n", why);
	exit(1);
}

/*
 * fuzz_stage.c's programs: op%4 0 copy (id, zeros, flags, tail), 1 named
 * (len, bytes, size), 2 tmp (who, id), 3 counters (len, bytes).
 */
static void stage(void)
{
	static const uint8_t valid[] = { 0, 3, 0, 0, 0, 0, 5, 0, 0, 0 };
	/* "7" and "07": one sample's copy under two names (issue 30, item 6) */
	static const uint8_t twice[] = { 0, 7, 0, 0, 0, 0, 7, 1, 0, 0 };
	static const uint8_t stale[] = { 0, 2, 0, 1, 0, 0, 4, 0, 4, 0,
					 0, 6, 0, 8, 0, 0, 9, 0, 16, 0 };
	static const uint8_t junk[] = { 1, 4, 'a', 'b', '9', 'z', 3, 2, 2, 5,
					2, 0, 1, 3, 8, 'D', 'L', 'C', 'C',
					'T', 'S', '1', 0, 0, 13, 0, 0, 1 };

	put("stage", "valid", valid, sizeof(valid));
	put("stage", "twice", twice, sizeof(twice));
	put("stage", "stale", stale, sizeof(stale));
	put("stage", "junk", junk, sizeof(junk));
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: seedgen OUTDIR\n");
		return 2;
	}
	out = argv[1];
	jpegs();
	dataset();
	stage();
	return 0;
}
