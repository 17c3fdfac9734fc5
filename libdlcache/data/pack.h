/* SPDX-License-Identifier: MIT */
/*
 * Packs (.dlp): a data set in one file (pack.c reads, packwrite.c
 * writes). The on-disk format is specified in Documentation/pack.md and
 * by the offsets in packfmt.h; this is the reader's interface, which the
 * index (a pack opens as an index: dlc_index_load()) and the loader use.
 *
 * A pack holds, per sample in the source index's order: its relative
 * path and label, its bytes at a recorded offset (aligned), their
 * CRC-32C, and for a restart-indexed JPEG (DLC_PACK_RST, jpegrst.h) its
 * geometry and MCU row table, so that a crop decodes only its MCUs.
 * Samples that could not be transcoded are kept as they were
 * (DLC_PACK_PLAIN) and decode by the normal path.
 *
 * Nothing read from the file is trusted: dlc_pack_open() checks the
 * header's and the metadata's CRC-32C and every record (offsets and
 * lengths inside the data region, geometry consistent with the row
 * table's length, strings terminated) before it returns, and names the
 * sample and field of the first thing wrong. The sample bytes are checked
 * against their CRC-32C by whoever reads them.
 */
#ifndef DLC_PACK_H
#define DLC_PACK_H

#include <stdint.h>

#include "jpegrst.h"

#define DLC_PACK_MAGIC		"DLCPACK"	/* 8 bytes with the NUL */

enum dlc_pack_kind {
	DLC_PACK_PLAIN = 0,	/* the source's bytes, decoded as any file */
	DLC_PACK_RST = 1,	/* restart-indexed baseline: MCU-exact crops */
};

struct dlc_pack;

/* One sample's record, as dlc_pack_entry() returns it. */
struct dlc_pack_entry {
	uint64_t off;		/* of its first byte in the file */
	uint32_t len;		/* its bytes */
	uint32_t crc;		/* CRC-32C of those bytes */
	int32_t label;
	uint32_t kind;		/* enum dlc_pack_kind */
	uint64_t src_len;	/* the source file's size */
	const char *path;	/* the source's path, relative to its root */
	/*
	 * DLC_PACK_RST: the geometry (scan_off and end_off relative to the
	 * sample's first byte); the row table is dlc_pack_rows().
	 */
	struct dlc_rst_geom g;
};

/*
 * Returns 1 when the file at @path starts with the pack magic, 0 when it
 * does not, -errno when it cannot be read.
 */
int dlc_pack_sniff(const char *path);

/*
 * Whether @s may be a pack's sample path (@is_path) or class name, as
 * dlc_pack_open() checks it: the index's rule (dlc_index_relpath_ok(),
 * dlc_index_class_name_ok()), under 4096 / at most 255 bytes, and no
 * control byte. The writer refuses an index it could not read back.
 */
int dlc_pack_name_ok(const char *s, int is_path);

/*
 * Open and check the pack at @path: a file, or a device a pack was
 * written onto (dlc_pack_device(); an NVMe namespace may also be named by
 * its generic character device or as "nvme:<NGUID|EUI-64>", nvme.h, and
 * is then read through its block device, which dlc_pack_path() names).
 * -ENOENT/-EACCES/... from open,
 * -EBADMSG for a file that is not a well-formed pack (with @why, naming
 * the field or sample), -EPROTO for a version this library does not
 * read, -ENOMEM.
 */
int dlc_pack_open(const char *path, struct dlc_pack **out, char *why,
		  size_t why_len);
void dlc_pack_close(struct dlc_pack *p);

uint32_t dlc_pack_count(const struct dlc_pack *p);
uint32_t dlc_pack_num_classes(const struct dlc_pack *p);
const char *dlc_pack_class_name(const struct dlc_pack *p, uint32_t c);
const char *dlc_pack_path(const struct dlc_pack *p);

/* The record of sample @id: 0, or -EINVAL when @id is out of range. */
int dlc_pack_entry(const struct dlc_pack *p, uint32_t id,
		   struct dlc_pack_entry *e);

/*
 * Sample @id's MCU row table (DLC_PACK_RST only) into @rows, room for
 * g.mcus_y + 1 entries: rows[r] is where row r's first interval starts,
 * rows[mcus_y] the EOI, relative to the sample's first byte. -EINVAL for
 * a plain sample. (Checked at open: increasing, inside the sample.)
 */
int dlc_pack_rows(const struct dlc_pack *p, uint32_t id, uint32_t *rows);

/* What the header of a pack written onto a device records of it. */
struct dlc_pack_device {
	uint32_t lba_bytes;	/* the namespace's LBA size when written */
	uint32_t nsid;		/* its namespace ID; 0: not an NVMe namespace */
	uint64_t pack_bytes;	/* the pack's bytes, from the device's start */
	uint64_t dev_bytes;	/* the device's bytes when written */
	uint8_t nguid[16];	/* zeros: none */
	uint8_t eui64[8];	/* zeros: none */
};

/* 1 and @d filled for a pack written onto a device (PK_FLAG_DEVICE), else 0. */
int dlc_pack_device(const struct dlc_pack *p, struct dlc_pack_device *d);

/* A 128-bit key of the pack's content (header and metadata). */
void dlc_pack_key(const struct dlc_pack *p, uint64_t key[2]);

/*
 * The pack an index was loaded from (dlc_index_load() of a .dlp), or NULL
 * for an index of files. Owned by the index (index.c).
 */
struct dlc_index;
const struct dlc_pack *dlc_index_pack(const struct dlc_index *idx);

#endif /* DLC_PACK_H */
