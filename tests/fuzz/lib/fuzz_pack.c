// SPDX-License-Identifier: MIT
/*
 * Fuzz harness: a pack (.dlp) opened from bytes (pack.c), as an index
 * (index.c's index_from_pack), and every sample read the way the loader
 * reads it: bytes at the record's offset checked against its CRC-32C,
 * and a restart-indexed sample decoded MCU-exact through its row table
 * (dlc_decoder_sample_rst(), which trusts the table only as far as the
 * pack's checks and the splice's own go).
 *
 * The header's and the metadata's CRC-32C are recomputed over the
 * mutated bytes before the open, as issue 30's 40,000 mutated packs
 * were: otherwise nearly every input stops at the first CRC and the
 * structural checks behind it are never reached. An input whose last
 * reserved header byte (4091) is RAW_CRCS keeps its CRCs as they are, so
 * the CRC checks themselves still see wrong values (the header's CRC is
 * checked before its reserved bytes).
 */
#include "harness.h"

#include "decode.h"
#include "dlcache.h"
#include "internal.h"
#include "pack.h"
#include "packfmt.h"
#include "crc32c.h"

/* Samples decoded per input, at most: a pack of many is no slower. */
#define DECODE_MAX	4
/* Byte PK_HDR_CRC - 1 of an input whose CRCs are left as they are. */
#define RAW_CRCS	0xa5
/* The longest sparse file an input's header may make (see above). */
#define SPARSE_MAX	(8ULL << 30)

static struct dlc_decoder *dec;
static struct dlc_transform train;
static char path[128];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (dlc_decoder_create(0, &dec))
		abort();
	dlc_transform_default(&train, DLC_TRANSFORM_TRAIN);
	train.out_w = train.out_h = 32;
	snprintf(path, sizeof(path), "%s/input.dlp", fuzz_dir());
	atexit(fuzz_remove_dir_at_exit);
	return 0;
}

/* The metadata ends past @size: the file's length it claims, else 0. */
static uint64_t claimed_size(const uint8_t *b, size_t size)
{
	uint64_t moff, mlen;

	if (size < PK_HDR_LEN || memcmp(b, DLC_PACK_MAGIC, 8))
		return 0;
	moff = pk_get64(b + PK_HDR_META_OFF);
	mlen = pk_get64(b + PK_HDR_META_LEN);
	if (moff > SPARSE_MAX || mlen > SPARSE_MAX - moff || moff + mlen <= size)
		return 0;
	return moff + mlen;
}

static void fix_crcs(uint8_t *b, size_t size)
{
	uint64_t moff, mlen;

	if (size < PK_HDR_LEN || memcmp(b, DLC_PACK_MAGIC, 8))
		return;
	moff = pk_get64(b + PK_HDR_META_OFF);
	mlen = pk_get64(b + PK_HDR_META_LEN);
	if (moff <= size && mlen <= size - moff)
		pk_put32(b + PK_HDR_META_CRC, dlc_crc32c(0, b + moff, mlen));
	pk_put32(b + PK_HDR_CRC, dlc_crc32c(0, b, PK_HDR_CRC));
}

/* @file: the first @size bytes of the pack's @fsize. */
static void read_samples(const struct dlc_pack *p, const uint8_t *file,
			 size_t size, uint64_t fsize)
{
	static uint8_t out[32 * 32 * 3];
	struct dlc_pack_device dev;
	struct dlc_pack_entry e;
	uint32_t i, n = dlc_pack_count(p), decoded = 0, *rows;
	uint64_t key[2];
	struct dlc_crop crop;

	dlc_pack_key(p, key);
	dlc_pack_device(p, &dev);
	for (i = 0; i < dlc_pack_num_classes(p); i++)
		if (strlen(dlc_pack_class_name(p, i)) > fsize)
			abort();
	for (i = 0; i < n; i++) {
		if (dlc_pack_entry(p, i, &e))
			abort();	/* every ID below the count has one */
		if (strlen(e.path) > fsize)
			abort();
		/* Checked at open: the bytes lie inside the file. */
		if (e.off > fsize || e.len > fsize - e.off)
			abort();
		if (e.off > size || e.len > size - e.off)
			continue;	/* in the sparse tail */
		if (dlc_crc32c(0, file + e.off, e.len) != e.crc)
			continue;	/* the loader's verdict: corrupt */
		if (e.kind != DLC_PACK_RST || decoded >= DECODE_MAX)
			continue;
		rows = malloc(sizeof(*rows) * ((size_t)e.g.mcus_y + 1));
		if (!rows)
			abort();
		if (!dlc_pack_rows(p, i, rows)) {
			dlc_decoder_sample_rst(dec, file + e.off, e.len, &e.g,
					       rows, &train, 1, 0, i,
					       DLC_LAYOUT_NCHW, out, &crop);
			decoded++;
		}
		free(rows);
	}
	if (dlc_pack_entry(p, n, &e) != -EINVAL)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dlc_index *idx;
	struct dlc_pack *p;
	char why[256];
	uint8_t *b;
	uint64_t claimed;
	uint32_t i;
	int ret;

	b = malloc(size ? size : 1);
	if (!b)
		abort();
	memcpy(b, data, size);
	if (size < PK_HDR_LEN || b[PK_HDR_CRC - 1] != RAW_CRCS)
		fix_crcs(b, size);
	fuzz_write(path, b, size);
	claimed = claimed_size(b, size);
	if (claimed && truncate(path, (off_t)claimed))
		abort();
	ret = dlc_pack_open(path, &p, why, sizeof(why));
	if (!ret) {
		read_samples(p, b, size, claimed ? claimed : size);
		dlc_pack_close(p);
	} else if (ret == -EBADMSG && (!why[0] || strchr(why, '\n'))) {
		/* every refusal names its reason, on one line */
		fprintf(stderr, "dlc_pack_open: -EBADMSG, why '%s'\n", why);
		abort();
	}
	if (!dlc_index_load(path, &idx)) {
		for (i = 0; i < dlc_index_count(idx); i++) {
			uint32_t crc;

			dlc_index_relpath(idx, i);
			dlc_index_label(idx, i);
			dlc_index_size(idx, i);
			dlc_index_crc32c(idx, i, &crc);
		}
		dlc_index_total_bytes(idx);
		dlc_index_free(idx);
	}
	free(b);
	return 0;
}
