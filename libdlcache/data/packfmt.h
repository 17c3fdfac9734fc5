/* SPDX-License-Identifier: MIT */
/*
 * The .dlp layout (version 1), shared by the reader (pack.c) and the
 * writer (packwrite.c); Documentation/pack.md is the specification in
 * prose. Every integer is little-endian and read and written a byte at a
 * time (pk_get*, pk_put*), so the layout is the same on any host and no
 * field is ever read unaligned.
 *
 *   [0, 4096)               header (PK_HDR_*)
 *   [data_off, +data_len)   sample bytes, each at a multiple of align
 *   [meta_off, +meta_len)   metadata: preamble, class names, records,
 *                           row tables, strings; meta_off + meta_len is
 *                           the file's size (PK_FLAG_DEVICE: the pack's,
 *                           at most the device's)
 */
#ifndef DLC_PACKFMT_H
#define DLC_PACKFMT_H

#include <stddef.h>
#include <stdint.h>

#define PK_VERSION		1U
#define PK_HDR_LEN		4096U

/* Header fields: byte offsets. Bytes [PK_HDR_RESERVED, PK_HDR_CRC) are 0. */
#define PK_HDR_MAGIC		0	/* 8: "DLCPACK\0" */
#define PK_HDR_VERSION		8	/* u32 */
#define PK_HDR_HDRLEN		12	/* u32: 4096 */
#define PK_HDR_COUNT		16	/* u32: samples */
#define PK_HDR_NCLASSES		20	/* u32 */
#define PK_HDR_FLAGS		24	/* u32: PK_FLAG_* */
#define PK_HDR_INTERVAL		28	/* u32: restart interval asked, 0: row */
#define PK_HDR_MAX_SIDE		32	/* u32: 0 lossless */
#define PK_HDR_QUALITY		36	/* u32: re-encode quality, 0 lossless */
#define PK_HDR_ALIGN		40	/* u32: power of two, 1..4096 */
#define PK_HDR_RESERVED0	44	/* u32: 0 */
#define PK_HDR_DATA_OFF		48	/* u64 */
#define PK_HDR_DATA_LEN		56	/* u64 */
#define PK_HDR_META_OFF		64	/* u64 */
#define PK_HDR_META_LEN		72	/* u64 */
#define PK_HDR_META_CRC		80	/* u32: CRC-32C of the metadata */
#define PK_HDR_RESERVED		84	/* up to PK_HDR_CRC: 0 */
/*
 * With PK_FLAG_DEVICE (written onto a device, which may be larger than
 * the pack), the device record takes [PK_HDR_RESERVED, PK_HDR_DEV_END)
 * and the reserved bytes start at PK_HDR_DEV_END.
 */
#define PK_HDR_DEV_LBA		84	/* u32: its LBA bytes, 512..65536 */
#define PK_HDR_DEV_PACK_LEN	88	/* u64: the pack's bytes, meta_off + meta_len */
#define PK_HDR_DEV_LEN		96	/* u64: the device's bytes when written */
#define PK_HDR_DEV_NGUID	104	/* 16: its NGUID, zeros: none */
#define PK_HDR_DEV_EUI64	120	/* 8: its EUI-64, zeros: none */
#define PK_HDR_DEV_NSID		128	/* u32: its namespace ID, 0: not NVMe */
#define PK_HDR_DEV_RESERVED	132	/* u32: 0 */
#define PK_HDR_DEV_END		136

/* Header flags; a reader refuses a pack with a flag it does not know. */
#define PK_FLAG_DEVICE		(1U << 0)	/* on a device: the record above */
#define PK_FLAGS_KNOWN		PK_FLAG_DEVICE
#define PK_HDR_CRC		4092	/* u32: CRC-32C of bytes [0, 4092) */

/* Metadata preamble: the section lengths, in their order. */
#define PK_META_CLASSES_LEN	0	/* u64: nclasses NUL-terminated names */
#define PK_META_RECORDS_LEN	8	/* u64: count * PK_REC_LEN */
#define PK_META_ROWS_LEN	16	/* u64: the row-table stream */
#define PK_META_STRINGS_LEN	24	/* u64: NUL-terminated paths */
#define PK_META_RESERVED	32	/* u64: 0 */
#define PK_META_LEN		40

/* A sample's record: PK_REC_LEN bytes, sample id order. */
#define PK_REC_OFF		0	/* u64: absolute file offset */
#define PK_REC_LEN_		8	/* u32: bytes */
#define PK_REC_CRC		12	/* u32: CRC-32C of the bytes */
#define PK_REC_LABEL		16	/* i32 */
#define PK_REC_KIND		20	/* u32: enum dlc_pack_kind */
#define PK_REC_SRC_LEN		24	/* u64: the source file's size */
#define PK_REC_PATH		32	/* u32: offset into the strings */
#define PK_REC_WIDTH		36	/* u32 \                          */
#define PK_REC_HEIGHT		40	/* u32  |                          */
#define PK_REC_MCU_W		44	/* u8   | RST only; 0 for PLAIN    */
#define PK_REC_MCU_H		45	/* u8   |                          */
#define PK_REC_NCOMP		46	/* u8   |                          */
#define PK_REC_PAD		47	/* u8: 0                           */
#define PK_REC_INTERVAL		48	/* u32  |                          */
#define PK_REC_ROWS_LEN		52	/* u32  | bytes of its row table   */
#define PK_REC_ROWS_OFF		56	/* u64 /  offset into the stream   */
#define PK_REC_LEN		64

/* The longest LEB128 varint of a u32. */
#define PK_VARINT_MAX		5

static inline uint32_t pk_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t pk_get64(const uint8_t *p)
{
	return (uint64_t)pk_get32(p) | (uint64_t)pk_get32(p + 4) << 32;
}

static inline void pk_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline void pk_put64(uint8_t *p, uint64_t v)
{
	pk_put32(p, (uint32_t)v);
	pk_put32(p + 4, (uint32_t)(v >> 32));
}

/*
 * One unsigned LEB128 value of at most 32 bits from [*@p, @end): 0 and
 * *@p past it, or -1 (truncated, over 32 bits, or not minimal).
 */
static inline int pk_varint_get(const uint8_t **p, const uint8_t *end,
				uint32_t *out)
{
	const uint8_t *q = *p;
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < PK_VARINT_MAX && q < end; i++) {
		uint8_t b = *q++;

		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			if (v > UINT32_MAX || (i && !b))
				return -1;
			*out = (uint32_t)v;
			*p = q;
			return 0;
		}
	}
	return -1;
}

/* Write @v as LEB128 at @p (room for PK_VARINT_MAX); its length. */
static inline size_t pk_varint_put(uint8_t *p, uint32_t v)
{
	size_t n = 0;

	do {
		uint8_t b = v & 0x7f;

		v >>= 7;
		p[n++] = b | (v ? 0x80 : 0);
	} while (v);
	return n;
}

struct dlc_rst_geom;
/*
 * The checks a restart-indexed sample of @len bytes passes, the reader's
 * at open and the writer's on add: geometry (@g, mcus_x and mcus_y as
 * the image's) and its @rows (g->mcus_y + 1 of them, rows[0] the scan
 * and the last the EOI). 0, or -1 with @what naming the field.
 */
int dlc_pack_geom_check(const struct dlc_rst_geom *g, const uint32_t *rows,
			uint32_t len, const char **what);

#endif /* DLC_PACKFMT_H */
