/* SPDX-License-Identifier: MIT */
/*
 * Where samples live (source.c): files under a root, a pack, or a pack
 * on an NVMe namespace, behind one reader queueing interface.
 * Internal to libdlcache; the public face is dlcache.h.
 */
#ifndef DLC_SOURCE_H
#define DLC_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "dlcache.h"

struct dlc_buf;
struct dlc_logger;
struct dlc_read_done;
struct dlc_reader;

struct dlc_source;
struct dlc_rst_geom;

/*
 * The storage of @idx's samples: its files, or its pack (opened here,
 * also with O_DIRECT when @direct and the file system allows it).
 */
int dlc_source_open(const struct dlc_index *idx, int direct,
		    struct dlc_source **out);
void dlc_source_close(struct dlc_source *s);
/*
 * When @s is a pack on an NVMe namespace with a generic character device
 * this process may open, read its samples through NVMe passthrough
 * (dlc_reader_queue_nvme: the reader must be created with passthru) and
 * return 1; else 0, logged on @log (kept for later messages) when the
 * namespace could have been. Only with O_DIRECT (the dlc_source_open()
 * @direct): passthrough bypasses the page cache just the same.
 */
int dlc_source_passthru(struct dlc_source *s, const struct dlc_logger *log);
/* Stop passthrough, logging @why once: O_DIRECT on the block device. */
void dlc_source_passthru_off(struct dlc_source *s, const char *why);
/* The pack, or NULL for a tree of files. */
const struct dlc_pack *dlc_source_pack(const struct dlc_source *s);
/* "ROOT/RELPATH", or "RELPATH in PACK": what messages call sample @id. */
void dlc_source_name(const struct dlc_source *s, uint32_t id, char *buf,
		     size_t len);
/*
 * Queue a read of sample @id's bytes on @r, tagged @tag (@scratch: path):
 * from the first read tier that holds it (tier.h: the tag then carries
 * the tier's number), else from the origin.
 */
int dlc_source_queue(struct dlc_source *s, struct dlc_reader *r,
		     uint32_t id, uint64_t tag, char *scratch, size_t len);
/*
 * Add a read tier, asked after those added before it and before the
 * origin. 0, or -ENOSPC past DLC_TIERS_MAX.
 */
struct dlc_tier;
int dlc_source_add_tier(struct dlc_source *s, const struct dlc_tier *t);
/*
 * A read of sample @id queued on read tier @d->tier ended: 0 when its
 * bytes are good (the tier's hit), or 1 when the tier refused them and
 * the read was queued again on the tiers after it (or the origin): @d is
 * not done after all. A requeue that fails leaves @d failed with its
 * errno, 0.
 */
int dlc_source_served(struct dlc_source *s, struct dlc_reader *r,
		      uint32_t id, struct dlc_read_done *d, char *scratch,
		      size_t len);
/* The origin's bytes @b of sample @id, offered to every read tier. */
void dlc_source_offer(struct dlc_source *s, uint32_t id, struct dlc_buf *b);
/*
 * A read of sample @id that @d reports done: when it is a pack's O_DIRECT
 * read the file system refused, every read from now on is buffered and
 * this one is queued again (returns 1: @d is not done after all; 2 the
 * first time, for the caller to log it once); when it is an NVMe command
 * the kernel refused, every read from now on is O_DIRECT (logged here
 * once) and this one is queued again (1). Else 0.
 */
int dlc_source_requeue(struct dlc_source *s, struct dlc_reader *r,
		       uint32_t id, const struct dlc_read_done *d);
/*
 * Read sample @id's bytes now, blocking the caller at most @s's read
 * timeout (dlc_source_set_timeout()): a file is opened O_NONBLOCK and
 * refused (-EINVAL) unless regular; files over @max: -EFBIG; past the
 * deadline -ETIMEDOUT, after dlc_source_cancel() -ECANCELED. Any thread.
 */
int dlc_source_read(struct dlc_source *s, uint32_t id, uint64_t max,
		    struct dlc_buf **out);
/*
 * The mtime (ns) of sample @id's file, by a statx of its path with
 * dlc_source_read()'s deadline and cancel: 0 or -errno (-ETIMEDOUT,
 * -ECANCELED). Any thread; a tree of files only.
 */
int dlc_source_mtime(struct dlc_source *s, uint32_t id, uint64_t *mtime_ns);
/*
 * dlc_source_read()'s deadline, @ms after it starts (0: none), and where
 * it says a file is not a regular one.
 */
void dlc_source_set_timeout(struct dlc_source *s, uint32_t ms,
			    const struct dlc_logger *log);
/*
 * Make every dlc_source_read() in progress or to come return -ECANCELED
 * within about 0.1 s (teardown: no thread waits on a hung origin).
 */
void dlc_source_cancel(struct dlc_source *s);
/*
 * 1 with @g and @rows (room for DLC_RST_MAX_ROWS + 1) filled when sample
 * @id is restart-indexed (a pack's DLC_PACK_RST), else 0.
 */
int dlc_source_rst(const struct dlc_source *s, uint32_t id,
		   struct dlc_rst_geom *g, uint32_t *rows);

#endif
