/* SPDX-License-Identifier: MIT */
/*
 * The pack writer (packwrite.c): a .dlp (Documentation/pack.md) built from
 * a source index, one sample at a time, in any order, from any thread.
 *
 * The pack is written to PATH.part and renamed to PATH only by
 * dlc_packw_finish(), after an fsync: a writer interrupted at any point
 * leaves no PATH (and the next dlc_packw_create() of PATH removes the
 * stale PATH.part). Sample bytes are appended as they come, each at a
 * multiple of the alignment; the metadata and the header go last.
 *
 * Onto a device (dlc_packw_opts.device): PATH is a block device, or an
 * NVMe namespace as nvme.h names one, opened O_EXCL (a mounted file
 * system or another exclusive user refuses it: -EBUSY). Its first 4 KiB
 * are overwritten at once with a header that is never a valid pack, so
 * that an interrupted writer leaves no pack (old or half new) to read;
 * the complete header, with PK_FLAG_DEVICE and the device's record, is
 * written after everything else is on the device. A pack that would not
 * fit fails with -ENOSPC. Whether the device held something else (a file
 * system, a partition table) is the caller's to check first.
 */
#ifndef DLC_PACKWRITE_H
#define DLC_PACKWRITE_H

#include <stddef.h>
#include <stdint.h>

#include "jpegrst.h"
#include "pack.h"

#define DLC_PACK_DEFAULT_ALIGN	512U

struct dlc_index;
struct dlc_packw;

struct dlc_packw_opts {
	uint32_t align;		/* sample alignment: power of 2 <= 4096; 0: 512 */
	struct dlc_rst_opts rst;	/* dlc_packw_add_source()'s transcode */
	uint64_t max_pixels;	/* transcode cap; 0: DLC_DEFAULT_MAX_PIXELS */
	uint32_t device;	/* 1: PATH is a device to write onto (above) */
};

/*
 * Start a pack at @path of the samples of @idx (their paths, labels and
 * classes; @idx must outlive the writer). -EEXIST when PATH.part exists
 * and is not a pack being written (nothing is removed), -EINVAL for bad
 * options or for an index with a class name or path a pack cannot hold
 * (dlc_pack_name_ok(): a control byte, say), -errno from open. @why (may
 * be NULL) words any error.
 */
int dlc_packw_create(const char *path, const struct dlc_index *idx,
		     const struct dlc_packw_opts *o, struct dlc_packw **out,
		     char *why, size_t why_len);

/*
 * Add sample @id's @len bytes. @kind DLC_PACK_PLAIN: @g and @rows are
 * ignored. DLC_PACK_RST: @g its geometry and @rows its g->mcus_y + 1 row
 * offsets (jpegrst.h), checked as the reader checks them. @src_len: the
 * source file's size. Thread-safe. 0, -EEXIST for an id added before,
 * -EINVAL (bad id, len 0 or over 4 GiB, bad geometry), -ENOMEM, or the
 * write's -errno (also returned by every later call).
 */
int dlc_packw_add(struct dlc_packw *w, uint32_t id, uint32_t kind,
		  const uint8_t *buf, size_t len, uint64_t src_len,
		  const struct dlc_rst_geom *g, const uint32_t *rows);

/*
 * Transcode the source bytes @src of sample @id (dlc_rst_transcode() with
 * the writer's options) and add the result as DLC_PACK_RST, or, when the
 * source cannot be transcoded (not a JPEG, corrupt, CMYK, 12-bit, too
 * large), add @src as it is (DLC_PACK_PLAIN) with the reason in @why.
 * Returns the kind added, or -errno as dlc_packw_add(). Thread-safe.
 */
int dlc_packw_add_source(struct dlc_packw *w, uint32_t id, const uint8_t *src,
			 size_t len, char *why, size_t why_len);

/*
 * dlc_packw_add_source() in two steps, for a caller that adds in a
 * chosen order (dlcachectl pack adds in sample order, so that the file is
 * the same for any number of threads): dlc_packw_prepare() transcodes
 * (thread-safe, does not touch the pack), dlc_packw_add_sample() adds
 * the result, dlc_packw_sample_free() frees it. @src must stay valid
 * until the add. prepare returns 0 (@s->kind says what will be added,
 * @why why not DLC_PACK_RST) or -ENOMEM; add_sample returns as
 * dlc_packw_add_source().
 */
struct dlc_packw_sample {
	uint32_t kind;			/* DLC_PACK_RST or DLC_PACK_PLAIN */
	const uint8_t *src;		/* the source, the caller's */
	size_t src_len;
	uint8_t *out;			/* RST: the transcode (owned) */
	size_t out_len;
	struct dlc_rst_geom g;		/* RST: its geometry */
	uint32_t *rows;			/* RST: its row offsets (owned) */
};

int dlc_packw_prepare(const struct dlc_packw *w, const uint8_t *src,
		      size_t len, struct dlc_packw_sample *s, char *why,
		      size_t why_len);
int dlc_packw_add_sample(struct dlc_packw *w, uint32_t id,
			 const struct dlc_packw_sample *s);
void dlc_packw_sample_free(struct dlc_packw_sample *s);

/*
 * Write the metadata and the header, fsync, rename PATH.part to PATH
 * (replacing it; onto a device: fsync, the header, fsync) and free @w. Every sample must have been added (else
 * -EINVAL naming the first missing one). On error PATH.part is removed
 * and @w freed too.
 */
int dlc_packw_finish(struct dlc_packw *w, char *why, size_t why_len);

/* Stop: remove PATH.part and free @w. */
void dlc_packw_abort(struct dlc_packw *w);

/* Bytes of sample data appended so far (with alignment padding). */
uint64_t dlc_packw_bytes(const struct dlc_packw *w);
/* Onto a device: its bytes (else 0). */
uint64_t dlc_packw_device_bytes(const struct dlc_packw *w);

#endif /* DLC_PACKWRITE_H */
