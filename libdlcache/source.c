// SPDX-License-Identifier: MIT
/*
 * Where a sample's bytes live, for the loader: a file of a directory tree
 * (the index's root joined with its relative path, opened per read), or a
 * range of a pack (one file, opened once: its samples are read at their
 * recorded offsets with no per-sample open). The loader asks for reads,
 * blocking reads (substitutes) and names (messages) through here, and
 * never needs to know which it has.
 *
 * A pack written onto an NVMe namespace is opened through its block
 * device (metadata, blocking reads, and the O_DIRECT reads of the
 * fallback); once dlc_source_passthru() found the namespace's generic
 * character device usable, samples are read with NVMe commands through
 * io_uring instead (reader.c), until the kernel refuses one: then every
 * read goes back to O_DIRECT on the block device, said once in the log.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "nvme.h"
#include "pack.h"
#include "tier.h"

struct dlc_source {
	const struct dlc_index *idx;
	const struct dlc_pack *pack;	/* NULL: a tree of files */
	int fd;				/* the pack, buffered */
	int dfd;			/* the pack with O_DIRECT, or -1 */
	/*
	 * The file system refused an O_DIRECT read of dfd: buffered from
	 * then on. dfd stays open until the end, as reads queued on it may
	 * still be in flight. I/O thread only.
	 */
	int refused;
	/*
	 * NVMe passthrough: the namespace's generic character device
	 * (nvme.fd, -1 when not used), its name for messages, and whether
	 * the kernel refused a command (then O_DIRECT on dfd from then on;
	 * nvme.fd stays open while reads on it may be in flight). I/O thread
	 * only, after dlc_source_passthru().
	 */
	struct dlc_nvme_target nvme;
	char ng[80];
	int nvme_refused;
	const struct dlc_logger *log;
	/* Read tiers (tier.h), asked in this order before the origin. */
	struct dlc_tier tiers[DLC_TIERS_MAX];
	uint32_t ntiers;
};

int dlc_source_open(const struct dlc_index *idx, int direct,
		    struct dlc_source **out)
{
	struct dlc_source *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->idx = idx;
	s->pack = dlc_index_pack(idx);
	s->fd = -1;
	s->dfd = -1;
	s->nvme.fd = -1;
	if (s->pack) {
		s->fd = open(dlc_pack_path(s->pack), O_RDONLY | O_CLOEXEC);
		if (s->fd < 0) {
			int err = -errno;

			free(s);
			return err;
		}
		/* Refused by the file system (tmpfs): buffered reads. */
		if (direct)
			s->dfd = open(dlc_pack_path(s->pack),
				      O_RDONLY | O_CLOEXEC | O_DIRECT);
	}
	*out = s;
	return 0;
}

void dlc_source_close(struct dlc_source *s)
{
	if (!s)
		return;
	if (s->nvme.fd >= 0)
		close(s->nvme.fd);
	if (s->dfd >= 0)
		close(s->dfd);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
}

int dlc_source_passthru(struct dlc_source *s, const struct dlc_logger *log)
{
	struct dlc_nvme_ns ns;
	char why[160];
	int ret, fd;

	s->log = log;
	if (!s->pack || s->dfd < 0)
		return 0;
	ret = dlc_nvme_probe(dlc_pack_path(s->pack), &ns, why, sizeof(why));
	if (ret <= 0)
		return 0;
	if (!ns.ng[0]) {
		dlc_logf(log, DLC_LOG_WARN,
			 "%s: the kernel gives namespace %s no generic character device (ngXnY); reading it with O_DIRECT",
			 dlc_pack_path(s->pack), ns.name);
		return 0;
	}
	if (!ns.nsid) {
		dlc_logf(log, DLC_LOG_WARN,
			 "%s: no namespace ID for %s in sysfs or from Identify; reading it with O_DIRECT",
			 dlc_pack_path(s->pack), ns.name);
		return 0;
	}
	if (ns.lba_bytes > 4096) {
		/* The pool's buffers are 4 KiB aligned: reads must start there. */
		dlc_logf(log, DLC_LOG_WARN,
			 "%s: %u-byte LBAs; reading it with O_DIRECT, not passthrough",
			 dlc_pack_path(s->pack), ns.lba_bytes);
		return 0;
	}
	if (ns.meta_bytes) {
		dlc_logf(log, DLC_LOG_WARN,
			 "%s: the LBA format carries %u bytes of metadata; reading it with O_DIRECT, not passthrough",
			 dlc_pack_path(s->pack), ns.meta_bytes);
		return 0;
	}
	fd = open(ns.ng, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		dlc_logf(log, DLC_LOG_WARN,
			 "%s: no NVMe passthrough (open %s: %s); reading it with O_DIRECT",
			 dlc_pack_path(s->pack), ns.ng, strerror(errno));
		return 0;
	}
	s->nvme.fd = fd;
	s->nvme.nsid = ns.nsid;
	s->nvme.lba_shift = (uint32_t)__builtin_ctz(ns.lba_bytes);
	s->nvme.max_xfer = ns.max_xfer;
	snprintf(s->ng, sizeof(s->ng), "%s", ns.ng);
	dlc_logf(log, DLC_LOG_INFO,
		 "%s: NVMe namespace %u, %u-byte LBAs, up to %u KiB a command%s: reading samples through io_uring passthrough on %s",
		 dlc_pack_path(s->pack), ns.nsid, ns.lba_bytes,
		 ns.max_xfer >> 10, ns.identified ? "" : " (from sysfs)",
		 ns.ng);
	return 1;
}

void dlc_source_passthru_off(struct dlc_source *s, const char *why)
{
	if (s->nvme.fd < 0 || s->nvme_refused)
		return;
	s->nvme_refused = 1;
	dlc_logf(s->log, DLC_LOG_WARN,
		 "%s: NVMe passthrough on %s refused (%s); reading it with O_DIRECT from now on",
		 dlc_pack_path(s->pack), s->ng, why);
}

const struct dlc_pack *dlc_source_pack(const struct dlc_source *s)
{
	return s->pack;
}

void dlc_source_name(const struct dlc_source *s, uint32_t id, char *buf,
		     size_t len)
{
	if (s->pack)
		snprintf(buf, len, "%s in %s", dlc_index_relpath(s->idx, id),
			 dlc_pack_path(s->pack));
	else
		snprintf(buf, len, "%s/%s", dlc_index_root(s->idx),
			 dlc_index_relpath(s->idx, id));
}

int dlc_source_add_tier(struct dlc_source *s, const struct dlc_tier *t)
{
	if (s->ntiers == DLC_TIERS_MAX)
		return -ENOSPC;
	s->tiers[s->ntiers++] = *t;
	return 0;
}

static int queue_origin(struct dlc_source *s, struct dlc_reader *r,
			uint32_t id, uint64_t tag, char *scratch, size_t len);

/* From tier @from (0: the first) on, then the origin. */
static int queue_from(struct dlc_source *s, struct dlc_reader *r, uint32_t id,
		      uint64_t tag, uint32_t from, char *scratch, size_t len)
{
	const struct dlc_tier *t;
	uint32_t i;
	int ret;

	for (i = from; i < s->ntiers; i++) {
		t = &s->tiers[i];
		ret = t->ops->queue(t->tier, r, id, tag | DLC_TIER_TAG(i + 1),
				    scratch, len);
		if (ret)
			return ret < 0 ? ret : 0;
	}
	return queue_origin(s, r, id, tag, scratch, len);
}

int dlc_source_queue(struct dlc_source *s, struct dlc_reader *r,
		     uint32_t id, uint64_t tag, char *scratch, size_t len)
{
	return queue_from(s, r, id, tag, 0, scratch, len);
}

int dlc_source_served(struct dlc_source *s, struct dlc_reader *r,
		      uint32_t id, struct dlc_read_done *d, char *scratch,
		      size_t len)
{
	const struct dlc_tier *t;
	uint32_t i = d->tier;
	int ret;

	if (!i || i > s->ntiers)
		return 0;
	d->tier = 0;
	t = &s->tiers[i - 1];
	if (!t->ops->served(t->tier, id, d))
		return 0;
	ret = queue_from(s, r, id, d->tag, i, scratch, len);
	if (ret) {
		d->err = ret;
		d->why = "queue";
		return 0;
	}
	return 1;
}

void dlc_source_offer(struct dlc_source *s, uint32_t id, struct dlc_buf *b)
{
	uint32_t i;

	for (i = 0; i < s->ntiers; i++)
		s->tiers[i].ops->offer(s->tiers[i].tier, id, b);
}

static int queue_origin(struct dlc_source *s, struct dlc_reader *r,
			uint32_t id, uint64_t tag, char *scratch, size_t len)
{
	struct dlc_pack_entry e;
	int ret;

	if (!s->pack) {
		dlc_source_name(s, id, scratch, len);
		return dlc_reader_queue(r, scratch, tag);
	}
	ret = dlc_pack_entry(s->pack, id, &e);
	if (ret)
		return ret;
	if (s->nvme.fd >= 0 && !s->nvme_refused)
		return dlc_reader_queue_nvme(r, &s->nvme, e.off, e.len, tag);
	return dlc_reader_queue_range(r, s->dfd >= 0 && !s->refused ? s->dfd :
				      s->fd, e.off, e.len,
				      s->dfd >= 0 && !s->refused, tag);
}

int dlc_source_requeue(struct dlc_source *s, struct dlc_reader *r,
		       uint32_t id, const struct dlc_read_done *d)
{
	int first = !s->refused;
	char unused[1];

	if (s->pack && d->why == dlc_read_passthru_refused) {
		dlc_source_passthru_off(s, strerror(-d->err));
		return queue_origin(s, r, id, d->tag, unused,
				    sizeof(unused)) ? 0 : 1;
	}
	if (!s->pack || d->err != -EINVAL || d->why != dlc_read_direct_refused)
		return 0;
	s->refused = 1;
	if (queue_origin(s, r, id, d->tag, unused, sizeof(unused)))
		return 0;
	return first ? 2 : 1;
}

/* A blocking read of a pack's sample: substitutes are rare. */
static int pack_read(struct dlc_source *s, uint32_t id, struct dlc_buf **out)
{
	struct dlc_pack_entry e;
	struct dlc_buf *b;
	uint32_t done = 0;
	ssize_t n;
	int ret;

	ret = dlc_pack_entry(s->pack, id, &e);
	if (ret)
		return ret;
	b = dlc_buf_alloc(e.len);
	if (!b)
		return -ENOMEM;
	while (done < e.len) {
		n = pread(s->fd, b->data + done, e.len - done, e.off + done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			dlc_buf_put(b);
			return ret;
		}
		done += (uint32_t)n;
	}
	*out = b;
	return 0;
}

/* A blocking read of a whole file. */
static int file_read(const char *path, uint64_t max, struct dlc_buf **out)
{
	FILE *f = fopen(path, "rb");
	struct dlc_buf *b;
	long sz;

	if (!f)
		return -errno;
	if (fseek(f, 0, SEEK_END) || (sz = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET)) {
		fclose(f);
		return -EIO;
	}
	if (max && (uint64_t)sz > max) {
		fclose(f);
		return -EFBIG;
	}
	b = dlc_buf_alloc((size_t)sz);
	if (!b) {
		fclose(f);
		return -ENOMEM;
	}
	if (sz && fread(b->data, 1, (size_t)sz, f) != (size_t)sz) {
		fclose(f);
		dlc_buf_put(b);
		return -EIO;
	}
	fclose(f);
	*out = b;
	return 0;
}

int dlc_source_read(struct dlc_source *s, uint32_t id, uint64_t max,
		    struct dlc_buf **out)
{
	char path[4096];

	if (s->pack)
		return pack_read(s, id, out);
	dlc_source_name(s, id, path, sizeof(path));
	return file_read(path, max, out);
}

int dlc_source_rst(const struct dlc_source *s, uint32_t id,
		   struct dlc_rst_geom *g, uint32_t *rows)
{
	struct dlc_pack_entry e;

	if (!s->pack || dlc_pack_entry(s->pack, id, &e) ||
	    e.kind != DLC_PACK_RST)
		return 0;
	*g = e.g;
	return dlc_pack_rows(s->pack, id, rows) ? 0 : 1;
}
