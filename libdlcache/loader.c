// SPDX-License-Identifier: MIT
/*
 * The loader: an epoch's order in, decoded batches out.
 *
 * Threads and who owns what:
 *  - the I/O thread owns the io_uring reader and the in-process cache. It
 *    walks the order, claims batch slots, looks each sample up in the
 *    cache, reads the misses, offers them to the cache and queues every
 *    sample for decode. When decode is the bottleneck (a backlog, and the
 *    reads it could issue are all issued) it decodes too: the controller.
 *  - decode workers pop samples and decode them straight into their slot.
 *  - the consumer takes ready batches in order and releases them.
 * Everything shared is under l->lock, except the stats (atomics).
 *
 * Read-ahead (readahead.h): in-process, the I/O thread also reads the
 * order's next misses before their positions are claimed, past the window
 * and across the epoch's end into the next epoch's order, within a budget
 * in bytes, holding them in the read-ahead table. A claim that finds its
 * position read (or being read) there takes it instead of reading: the
 * order, the cache's offers and every sample's bytes are those of a loader
 * without read-ahead; only when storage is asked changes.
 *
 * A slot moves FREE -> FILLING (I/O thread) -> READY (last decoder) ->
 * HELD (consumer) -> FREE (release). Samples in flight never exceed the
 * window, and the I/O thread only claims a slot that is FREE, so memory
 * is bounded by the config alone. Each slot owns its buffer: a release
 * that keeps the pixels (dlc_release_batch_keep) hands it to the caller
 * and gives the slot a new one, under l->lock, before the slot is FREE.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "crc32c.h"
#include "internal.h"
#include "jpegrst.h"
#include "kclient.h"
#include "loader_int.h"
#include "readahead.h"
#include "peer.h"
#include "stage.h"
#include "tier.h"

/* ------------------------------------------------------------------ */

void dlc_config_init(struct dlc_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->batch_size = 64;
	cfg->layout = DLC_LAYOUT_NCHW;
	dlc_transform_default(&cfg->transform, DLC_TRANSFORM_TRAIN);
	cfg->shuffle = 1;
	cfg->world = 1;
	cfg->queue_depth = 64;
	cfg->window = 256;
	cfg->nbatches = 4;
	cfg->on_error = DLC_ON_ERROR_SKIP;
	cfg->backend = DLC_BACKEND_AUTO;
	cfg->max_file_bytes = 64ULL << 20;
	cfg->direct_io = 1;
	cfg->log_level = DLC_LOG_WARN;
	cfg->kernel_owner_uid = DLC_OWNER_SELF;
	cfg->verify = DLC_VERIFY_KERNEL;
	cfg->validate = DLC_VALIDATE_ONCE;
}

const char *dlc_validate_name(uint32_t validate)
{
	static const char *const names[] = { "once", "always", "off" };

	return validate <= DLC_VALIDATE_OFF ? names[validate] : "?";
}

const char *dlc_kernel_fallback_name(uint32_t fallback)
{
	static const char *const names[] = { "inprocess", "fail" };

	return fallback <= DLC_KERNEL_FALLBACK_FAIL ? names[fallback] : "?";
}

const char *dlc_verify_name(uint32_t verify)
{
	static const char *const names[] = { "kernel", "off", "all" };

	return verify <= DLC_VERIFY_ALL ? names[verify] : "?";
}

#define BAD(field, ...)							\
	do {								\
		dlc_logf(log, DLC_LOG_ERROR, "invalid config: " field ": " \
			 __VA_ARGS__);					\
		return -EINVAL;						\
	} while (0)

static int check_config(const struct dlc_config *c, const struct dlc_logger *log)
{
	const char *why = NULL;

	if (c->batch_size < 1 || c->batch_size > 65536)
		BAD("batch_size", "must be 1..65536, got %u", c->batch_size);
	if (c->layout > DLC_LAYOUT_NHWC)
		BAD("layout", "must be NCHW (0) or NHWC (1), got %u", c->layout);
	if (dlc_transform_check(&c->transform, &why))
		BAD("transform", "%s", why ? why : "invalid");
	if (c->world < 1 || c->rank >= c->world)
		BAD("rank/world", "rank %u must be below world %u", c->rank,
		    c->world);
	if (c->queue_depth < 1 || c->queue_depth > 4096)
		BAD("queue_depth", "must be 1..4096, got %u", c->queue_depth);
	if (c->window < 1 || c->window > (1U << 20))
		BAD("window", "must be 1..1048576, got %u", c->window);
	if (c->nbatches < 2 || c->nbatches > 64)
		BAD("nbatches", "must be 2..64, got %u", c->nbatches);
	if (c->on_error > DLC_ON_ERROR_FAIL)
		BAD("on_error", "unknown policy %u", c->on_error);
	if (c->backend > DLC_BACKEND_KERNEL)
		BAD("backend", "unknown backend %u", c->backend);
	if (c->kernel_mode & ~0666U)
		BAD("kernel_mode", "permission bits within 0666, got %#o",
		    c->kernel_mode);
	if (c->verify > DLC_VERIFY_ALL)
		BAD("verify", "unknown mode %u", c->verify);
	if (c->validate > DLC_VALIDATE_OFF)
		BAD("validate", "unknown mode %u", c->validate);
	if (c->kernel_fallback > DLC_KERNEL_FALLBACK_FAIL)
		BAD("kernel_fallback", "unknown mode %u", c->kernel_fallback);
	if (c->decode_threads > 256)
		BAD("decode_threads", "at most 256, got %u", c->decode_threads);
	if (c->shuffle > 1 || c->drop_last > 1 || c->direct_io > 1 ||
	    c->shard_drop_last > 1)
		BAD("shuffle/drop_last/shard_drop_last/direct_io",
		    "must be 0 or 1");
	if (c->readahead_bytes > DLC_READAHEAD_MAX &&
	    c->readahead_bytes != DLC_READAHEAD_OFF)
		BAD("readahead_bytes", "at most %llu (1 TiB) or DLC_READAHEAD_OFF, got %llu",
		    (unsigned long long)DLC_READAHEAD_MAX,
		    (unsigned long long)c->readahead_bytes);
	if (c->nvme_passthru > DLC_PASSTHRU_OFF)
		BAD("nvme_passthru", "must be DLC_PASSTHRU_AUTO or _OFF, got %u",
		    c->nvme_passthru);
	if (c->pad)
		BAD("pad", "must be zero");
	if (c->staging_dir && (!c->staging_dir[0] ||
			       strlen(c->staging_dir) > 3072))
		BAD("staging_dir", "must be a directory's path of 1..3072 bytes");
	if (c->staging_bytes && !c->staging_dir)
		BAD("staging_bytes", "set without staging_dir");
	if (c->cluster > DLC_CLUSTER_MPI)
		BAD("cluster", "must be DLC_CLUSTER_OFF or _MPI, got %u",
		    c->cluster);
	if (c->cluster && c->backend == DLC_BACKEND_KERNEL)
		BAD("cluster", "serves peers from the in-process cache: backend must be DLC_BACKEND_INPROCESS or _AUTO");
	if (c->peer_timeout_ms > 600000)
		BAD("peer_timeout_ms", "at most 600000 (10 min), got %u",
		    c->peer_timeout_ms);
	/* The watchdog would take an idle service thread for stuck. */
	if (c->peer_timeout_ms && c->peer_timeout_ms < 100)
		BAD("peer_timeout_ms", "0 or at least 100, got %u",
		    c->peer_timeout_ms);
	if (c->peer_timeout_ms && !c->cluster)
		BAD("peer_timeout_ms", "set without cluster");
	if (c->max_scans > 65535)
		BAD("max_scans", "at most 65535, got %u", c->max_scans);
	if (c->decode_budget_ms > 3600000)
		BAD("decode_budget_ms", "at most 3600000 (1 h), got %u",
		    c->decode_budget_ms);
	if (c->read_timeout_ms > DLC_READ_TIMEOUT_MAX_MS)
		BAD("read_timeout_ms", "at most %u (1 hour), got %u",
		    DLC_READ_TIMEOUT_MAX_MS, c->read_timeout_ms);
	if (c->pad2)
		BAD("pad2", "must be zero");
	return 0;
}

/* staging_dir took a u64 slot of the reserved space: 64-bit pointers only. */
_Static_assert(sizeof(void *) == 8, "64-bit");
_Static_assert(offsetof(struct dlc_config, shard_drop_last) ==
	       DLC_CONFIG_SIZE_VER0, "DLC_CONFIG_SIZE_VER0");
/*
 * The reserved space is spent: from DLC_CONFIG_SIZE_VER1 on the struct
 * grows at its end (library.md, "How the structs grow from here").
 */
_Static_assert(sizeof(struct dlc_config) == DLC_CONFIG_SIZE_VER1,
	       "struct dlc_config size");

/* Largest config size looked at: bytes past ours up to it must be zero. */
#define DLC_CONFIG_SIZE_MAX	4096

/*
 * Take the caller's config of in->size bytes into @c (ours): fields past
 * its size keep their dlc_config_init() defaults; bytes past ours, from a
 * newer caller, must be zero (a field this library does not know).
 */
static int take_config(const struct dlc_config *in, struct dlc_config *c,
		       const struct dlc_logger *log)
{
	const uint8_t *p = (const uint8_t *)in;
	size_t size = in->size, i;

	dlc_config_init(c);
	if (size < DLC_CONFIG_SIZE_VER0)
		BAD("size", "%zu is below %u: make the config with dlc_config_init()",
		    size, DLC_CONFIG_SIZE_VER0);
	if (size > DLC_CONFIG_SIZE_MAX)
		BAD("size", "%zu is over %u", size, DLC_CONFIG_SIZE_MAX);
	for (i = sizeof(*c); i < size; i++)
		if (p[i])
			BAD("size", "%zu bytes, this libdlcache knows %zu, and byte %zu past them is not zero (a newer field it cannot honour)",
			    size, sizeof(*c), i);
	memcpy(c, in, size < sizeof(*c) ? size : sizeof(*c));
	c->size = sizeof(*c);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Errors                                                              */

static uint32_t read_error_kind(int err)
{
	switch (err) {
	case -ENOENT:
		return DLC_ERR_MISSING;
	case -EFBIG:
		return DLC_ERR_TOO_LARGE;
	case -ENOMEM:
		return DLC_ERR_NOMEM;
	case -EBADMSG:
		return DLC_ERR_CORRUPT;	/* failed the crc32c check */
	default:
		return DLC_ERR_IO;
	}
}

static void sample_path(const struct dlc_loader *l, uint32_t id, char *buf,
			size_t len)
{
	dlc_source_name(l->src, id, buf, len);
}

/*
 * Whether @len bytes at @data are sample @id as indexed: 1 when they match
 * the index's crc32c (or it has none to check against), 0 when not. A
 * mismatch is counted; with @what, it is logged the first time for each
 * sample, saying where the bytes came from. I/O thread only.
 */
int loader_sample_ok(struct dlc_loader *l, uint32_t id, const void *data,
		     size_t len, const char *what)
{
	uint64_t size = dlc_index_size(l->idx, id);
	uint32_t want, got = 0;
	char path[4096];

	if (dlc_index_crc32c(l->idx, id, &want))
		return 1;
	dlc_stat_add(l->stats.verified, 1);
	if (len == size) {
		uint64_t t0 = dlc_now_ns();

		got = dlc_crc32c(0, data, len);
		dlc_stat_add(l->stats.verify_ns, dlc_now_ns() - t0);
		if (got == want)
			return 1;
	}
	dlc_stat_add(l->stats.checksum_errors, 1);
	if (!what || (l->crc_logged[id / 8] & (1U << (id % 8))))
		return 0;
	l->crc_logged[id / 8] |= (uint8_t)(1U << (id % 8));
	sample_path(l, id, path, sizeof(path));
	if (len == size)
		dlc_logf(&l->log, DLC_LOG_WARN,
			 "sample %u (%s): %s: crc32c %08x, the index says %08x; reading the file instead",
			 id, path, what, got, want);
	else
		dlc_logf(&l->log, DLC_LOG_WARN,
			 "sample %u (%s): %s: %zu bytes, the index says %llu; reading the file instead",
			 id, path, what, len, (unsigned long long)size);
	return 0;
}

/* Count and log a failed sample; remember it as the last error. */
static void note_error(struct dlc_loader *l, uint32_t id, uint32_t kind,
		       int err, const char *msg, const char *action)
{
	struct dlc_error_info e;

	memset(&e, 0, sizeof(e));
	e.sample = id;
	e.kind = kind;
	e.err = err;
	sample_path(l, id, e.path, sizeof(e.path));
	snprintf(e.msg, sizeof(e.msg), "%s", msg);
	dlc_stat_add(l->stats.errors, 1);
	dlc_stat_add(l->stats.errors_by_kind[kind < DLC_ERR_KINDS ? kind : 0], 1);
	dlc_logf(&l->log, l->cfg.on_error == DLC_ON_ERROR_FAIL ?
		 DLC_LOG_ERROR : DLC_LOG_WARN,
		 "sample %u (%s): %s: %s; %s", id, e.path,
		 dlc_error_kind_name(kind), msg, action);
	pthread_mutex_lock(&l->lock);
	l->last_err = e;
	l->have_err = 1;
	pthread_mutex_unlock(&l->lock);
}

/* ------------------------------------------------------------------ */
/* Decode                                                              */

/*
 * Where sample @i of @s goes. Read without l->lock by a decoder: s->b.data
 * only changes while the slot is HELD (a keep, under l->lock), and a slot
 * is claimed and its samples queued and popped under l->lock after that.
 */
static uint8_t *slot_sample(struct dlc_loader *l, struct slot *s, uint32_t i)
{
	return s->b.data + (size_t)i * l->sample_bytes;
}

/*
 * Whether sample @id's bytes @buf must be decoded whole (enum
 * dlc_validate). Under ONCE they need not when this loader has decoded
 * sample @id whole before and the bytes are those the index recorded
 * (its crc32c), as they were then; *@mark says to record a success.
 */
static int must_check(struct dlc_loader *l, uint32_t id,
		      const struct dlc_buf *buf, int *mark)
{
	uint32_t want;

	*mark = 0;
	if (l->validate != DLC_VALIDATE_ONCE)
		return l->validate == DLC_VALIDATE_ALWAYS;
	if (dlc_index_crc32c(l->idx, id, &want) ||
	    buf->len != dlc_index_size(l->idx, id) ||
	    !dlc_buf_crc_matches(buf, want))
		return 1;
	if (__atomic_load_n(&l->checked[id / 8], __ATOMIC_RELAXED) &
	    (1U << (id % 8)))
		return 0;
	*mark = 1;
	return 1;
}

/*
 * A pack's restart-indexed sample (@g, @rows): only the MCUs under its
 * crop are decoded. The bytes' CRC-32C, checked against the pack's record
 * on every decode unless validation is off, stands for the whole-file
 * check: the pack's writer made them from a file that decoded whole, and
 * a decode of the crop's intervals catches damage there as any decode
 * does.
 */
static int decode_rst(struct dlc_loader *l, struct dlc_decoder *dec,
		      uint32_t epoch, uint32_t id, const struct dlc_buf *buf,
		      const struct dlc_rst_geom *g, const uint32_t *rows,
		      uint8_t *dst, uint32_t *kind, const char **msg)
{
	uint32_t want;
	int ret;

	if (l->validate != DLC_VALIDATE_OFF) {
		if (dlc_index_crc32c(l->idx, id, &want) ||
		    buf->len != dlc_index_size(l->idx, id) ||
		    !dlc_buf_crc_matches(buf, want)) {
			*kind = DLC_ERR_CORRUPT;
			*msg = "corrupt pack: the sample's bytes do not match the crc32c of its record";
			return -EBADMSG;
		}
		dlc_stat_add(l->stats.validated, 1);
	}
	ret = dlc_decoder_sample_rst(dec, buf->data, buf->len, g, rows,
				     &l->cfg.transform, l->cfg.seed, epoch, id,
				     l->cfg.layout, dst, NULL);
	if (ret) {
		*kind = dlc_decoder_error_kind(dec);
		*msg = dlc_decoder_error(dec);
	}
	return ret;
}

/* decode_one() of a pack's sample: restart-indexed, or 0 for plain. */
static __attribute__((noinline)) int
decode_pack(struct dlc_loader *l, struct dlc_decoder *dec, uint32_t epoch,
	    uint32_t id, const struct dlc_buf *buf, uint8_t *dst,
	    uint32_t *kind, const char **msg, int *done)
{
	/* 32 KiB: decode threads have the default stack (8 MiB). */
	uint32_t rows[DLC_RST_MAX_ROWS + 1];
	struct dlc_rst_geom g;

	*done = dlc_source_rst(l->src, id, &g, rows);
	if (!*done)
		return 0;
	return decode_rst(l, dec, epoch, id, buf, &g, rows, dst, kind, msg);
}

/* Decode @buf as sample @id into @dst; kind/msg describe a failure. */
static int decode_one(struct dlc_loader *l, struct dlc_decoder *dec,
		      uint32_t epoch, uint32_t id, const struct dlc_buf *buf,
		      uint8_t *dst, uint32_t *kind, const char **msg)
{
	uint64_t t0 = dlc_now_ns();
	int ret, mark, check, done = 0;

	if (dlc_source_pack(l->src)) {
		ret = decode_pack(l, dec, epoch, id, buf, dst, kind, msg,
				  &done);
		if (done) {
			dlc_stat_add(l->stats.decode_ns, dlc_now_ns() - t0);
			if (!ret)
				dlc_stat_add(l->stats.decoded, 1);
			return ret;
		}
	}
	check = must_check(l, id, buf, &mark);

	ret = dlc_decoder_sample_method(dec, buf->data, buf->len,
					&l->cfg.transform, l->cfg.seed, epoch,
					id, l->cfg.layout,
					check ? DLC_DECODE_CROP_FIRST :
					DLC_DECODE_CROP_FIRST_UNCHECKED, dst,
					NULL);
	dlc_stat_add(l->stats.decode_ns, dlc_now_ns() - t0);
	if (check)
		dlc_stat_add(l->stats.validated, 1);
	if (ret) {
		*kind = dlc_decoder_error_kind(dec);
		*msg = dlc_decoder_error(dec);
		return ret;
	}
	if (mark)
		__atomic_fetch_or(&l->checked[id / 8], (uint8_t)(1U << (id % 8)),
				  __ATOMIC_RELAXED);
	dlc_stat_add(l->stats.decoded, 1);
	return 0;
}

/* Try other samples in the slot of a failed one; 0 when one worked. */
static int substitute(struct dlc_loader *l, struct dlc_decoder *dec,
		      uint32_t epoch, struct item *it, struct slot *s)
{
	uint32_t k;

	for (k = 1; k <= 16 && k < l->n; k++) {
		uint32_t alt = (it->sample + k) % l->n, kind;
		struct dlc_buf *b = NULL;
		const char *msg;
		int ret;

		if (dlc_source_read(l->src, alt, l->cfg.max_file_bytes, &b))
			continue;
		ret = decode_one(l, dec, epoch, alt, b, slot_sample(l, s, it->index),
				 &kind, &msg);
		dlc_buf_put(b);
		if (ret)
			continue;
		s->b.ids[it->index] = alt;
		s->b.labels[it->index] = dlc_index_label(l->idx, alt);
		return 0;
	}
	return -ENOENT;
}

/* Called with l->lock held: one sample of @s is done. */
static void finish_sample(struct dlc_loader *l, struct slot *s)
{
	uint32_t i, w = 0;

	l->outstanding--;
	if (l->io_idle) {
		l->io_idle = 0;
		dlc_reader_wake(l->reader);
	}
	if (l->outstanding == 0)
		pthread_cond_broadcast(&l->idle_cv);
	if (--s->pending)
		return;
	if (s->b.errors && l->cfg.on_error != DLC_ON_ERROR_FAIL) {
		for (i = 0; i < s->want; i++) {
			if (s->skip[i])
				continue;
			if (w != i) {
				memmove(slot_sample(l, s, w), slot_sample(l, s, i),
					l->sample_bytes);
				s->b.labels[w] = s->b.labels[i];
				s->b.ids[w] = s->b.ids[i];
			}
			w++;
		}
		s->b.count = w;
	}
	s->state = SLOT_READY;
	pthread_cond_broadcast(&l->ready_cv);
}

static void process_item(struct dlc_loader *l, struct dlc_decoder *dec,
			 struct item *it, uint32_t epoch, uint64_t gen)
{
	struct slot *s = &l->slots[it->slot];
	const char *msg = it->why;
	uint32_t kind;
	int ret;

	if (it->buf) {
		ret = decode_one(l, dec, epoch, it->sample, it->buf,
				 slot_sample(l, s, it->index), &kind, &msg);
		dlc_buf_put(it->buf);
	} else {
		ret = it->err;
		kind = read_error_kind(ret);
		msg = msg ? msg : "read";
	}
	if (ret) {
		char what[256];

		if (!it->buf) {
			snprintf(what, sizeof(what), "%s failed: %s", msg,
				 strerror(-ret));
			msg = what;
		}
		switch (l->cfg.on_error) {
		case DLC_ON_ERROR_SUBSTITUTE:
			note_error(l, it->sample, kind, ret, msg,
				   "substituting another sample");
			if (substitute(l, dec, epoch, it, s) == 0) {
				dlc_stat_add(l->stats.substituted, 1);
				ret = 0;
				break;
			}
			/* Nothing decodable nearby: drop it instead. */
			/* fall through */
		case DLC_ON_ERROR_SKIP:
			if (l->cfg.on_error == DLC_ON_ERROR_SKIP)
				note_error(l, it->sample, kind, ret, msg,
					   "skipping it");
			dlc_stat_add(l->stats.skipped, 1);
			s->skip[it->index] = 1;
			ret = 0;
			break;
		default:
			note_error(l, it->sample, kind, ret, msg,
				   "failing the batch");
			break;
		}
	}

	pthread_mutex_lock(&l->lock);
	if (gen == l->gen) {
		if (ret && !s->err)
			s->err = ret;
		if (s->skip[it->index] || ret ||
		    s->b.ids[it->index] != it->sample)
			s->b.errors++;
	}
	finish_sample(l, s);
	pthread_mutex_unlock(&l->lock);
}

/* Called with l->lock held; drops it while decoding. */
static int pop_and_process(struct dlc_loader *l, struct dlc_decoder *dec)
{
	struct item it;
	uint32_t epoch;
	uint64_t gen;

	if (!l->qlen)
		return 0;
	it = l->queue[l->qhead];
	l->qhead = (l->qhead + 1) % l->cfg.window;
	l->qlen--;
	epoch = l->epoch;
	gen = l->gen;
	pthread_mutex_unlock(&l->lock);
	process_item(l, dec, &it, epoch, gen);
	pthread_mutex_lock(&l->lock);
	return 1;
}

struct worker_arg {
	struct dlc_loader *l;
};

/*
 * A thread's setup is over, with @err (0 or -errno): dlc_loader_create()
 * waits for every thread's word, so that none can fail unseen.
 */
static void thread_up(struct dlc_loader *l, int err, const char *what)
{
	if (err)
		dlc_logf(&l->log, DLC_LOG_ERROR, "%s: cannot create its JPEG decoder: %s",
			 what, strerror(-err));
	pthread_mutex_lock(&l->lock);
	if (err && !l->thread_err)
		l->thread_err = err;
	l->threads_up++;
	pthread_cond_broadcast(&l->idle_cv);
	pthread_mutex_unlock(&l->lock);
}

static void *decode_main(void *arg)
{
	struct dlc_loader *l = arg;
	struct dlc_decoder *dec = NULL;
	int ret = dlc_decoder_create(l->cfg.max_pixels, &dec);

	if (!ret)
		dlc_decoder_set_budget(dec, l->cfg.max_scans,
				       l->cfg.decode_budget_ms);
	thread_up(l, ret, "decode thread");
	if (ret)
		return NULL;
	pthread_mutex_lock(&l->lock);
	while (!l->stop) {
		if (!pop_and_process(l, dec))
			pthread_cond_wait(&l->work_cv, &l->lock);
	}
	pthread_mutex_unlock(&l->lock);
	dlc_decoder_destroy(dec);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* I/O thread                                                          */

int loader_fill_order(void *arg, uint32_t epoch, uint32_t *ids, uint32_t len)
{
	struct dlc_loader *l = arg;
	struct dlc_order_params p = {
		.seed = l->cfg.seed, .epoch = epoch, .rank = l->cfg.rank,
		.world = l->cfg.world, .shuffle = l->cfg.shuffle,
		.drop_last = l->cfg.shard_drop_last,
	};

	return dlc_order_fill(l->n, &p, ids, len);
}

/* Called with l->lock held. */
void loader_push_item(struct dlc_loader *l, const struct item *it)
{
	l->queue[(l->qhead + l->qlen) % l->cfg.window] = *it;
	l->qlen++;
	pthread_cond_signal(&l->work_cv);
}

/* Whether the next position may be issued now. Called with l->lock held. */
int loader_issuable(const struct dlc_loader *l)
{
	uint32_t local, si;

	if (!l->active || l->failed || l->next_pos >= l->end ||
	    l->outstanding >= l->cfg.window)
		return 0;
	/* Kernel state is per pos % window: the span must fit in it. */
	if (l->kt.kc && l->next_pos - l->kt.klow >= l->cfg.window)
		return 0;
	if ((l->next_pos - l->start) % l->cfg.batch_size)
		return 1;
	local = (l->next_pos - l->start) / l->cfg.batch_size;
	si = local % l->cfg.nbatches;
	return l->slots[si].state == SLOT_FREE;
}

void loader_item_at(const struct dlc_loader *l, uint32_t pos, struct item *it)
{
	it->pos = pos;
	it->sample = l->order[pos];
	it->slot = ((pos - l->start) / l->cfg.batch_size) % l->cfg.nbatches;
	it->index = (pos - l->start) % l->cfg.batch_size;
	it->buf = NULL;
	it->err = 0;
	it->why = NULL;
}

/* Claim the next position. Called with l->lock held, when loader_issuable(). */
void loader_claim_next(struct dlc_loader *l, struct item *it)
{
	struct slot *s;

	loader_item_at(l, l->next_pos, it);
	s = &l->slots[it->slot];
	if (it->index == 0) {
		uint32_t left = l->end - l->next_pos;

		s->state = SLOT_FILLING;
		s->want = left < l->cfg.batch_size ? left : l->cfg.batch_size;
		s->pending = s->want;
		s->err = 0;
		memset(s->skip, 0, l->cfg.batch_size);
		s->b.seq = l->base_seq + (l->next_pos - l->start) /
					 l->cfg.batch_size;
		s->b.epoch = l->epoch;
		s->b.count = s->want;
		s->b.errors = 0;
	}
	s->b.ids[it->index] = it->sample;
	s->b.labels[it->index] = dlc_index_label(l->idx, it->sample);
	/* The consumer found its batch ready, or decode is behind. */
	if (l->stage)
		dlc_stage_advance(l->stage, l->epoch, l->next_pos,
				  !l->consumer_waited || l->qlen > l->ndecode);
	l->next_pos++;
	l->outstanding++;
}

/* Called with l->lock held: a sample of an abandoned epoch is dropped. */
void loader_drop_sample(struct dlc_loader *l, struct dlc_buf *buf)
{
	dlc_buf_put(buf);
	l->outstanding--;
	if (l->outstanding == 0)
		pthread_cond_broadcast(&l->idle_cv);
}

uint64_t loader_vpos(const struct dlc_loader *l, uint32_t epoch, uint32_t pos)
{
	return (uint64_t)epoch * l->epoch_len + pos;
}

/*
 * A read of sample @id ended short or was refused O_DIRECT: whether the
 * source queued the rest (or the whole read again), so it is not done.
 */
static int requeued(struct dlc_loader *l, uint32_t id, struct dlc_read_done *d)
{
	char path[4096];
	int again;

	/* A read tier's bytes it refused: the next tier's, or the origin's. */
	if (d->tier &&
	    dlc_source_served(l->src, l->reader, id, d, path, sizeof(path)))
		return 1;
	again = dlc_source_requeue(l->src, l->reader, id, d);

	if (again == 2)
		dlc_logf(&l->log, DLC_LOG_INFO,
			 "%s: O_DIRECT reads refused by the file system; reading through the page cache",
			 dlc_index_root(l->idx));
	return again;
}

/*
 * The bytes of sample @id at claimed position @pos came from storage (or
 * failed to): count the miss, offer them to the cache and queue them for
 * decode.
 */
static void finish_read(struct dlc_loader *l, uint32_t id, uint32_t pos,
			struct dlc_buf *buf, int err, const char *why)
{
	struct item it;

	dlc_stat_add(l->stats.misses, 1);
	/* The file changed since it was indexed: no cache gets it. */
	if (buf && l->verify == DLC_VERIFY_ALL &&
	    !loader_sample_ok(l, id, buf->data, buf->len, NULL)) {
		dlc_stat_add(l->stats.miss_bytes, buf->len);
		dlc_buf_put(buf);
		buf = NULL;
		err = -EBADMSG;
		why = "the crc32c check (the file changed since it was indexed)";
	}
	if (buf) {
		dlc_stat_add(l->stats.miss_bytes, buf->len);
		if (l->cache && buf->len)
			dlc_cache_offer(l->cache, id, buf);
		dlc_source_offer(l->src, id, buf);
	}
	if (l->kt.kc)
		ktier_end_fill(l, pos, buf);
	pthread_mutex_lock(&l->lock);
	if (l->kt.kc)
		ktier_pos_done(l, pos);
	if (!l->active) {
		loader_drop_sample(l, buf);
		pthread_mutex_unlock(&l->lock);
		return;
	}
	loader_item_at(l, pos, &it);
	it.buf = buf;
	it.err = err;
	it.why = why;
	loader_push_item(l, &it);
	pthread_mutex_unlock(&l->lock);
}

/* The read-ahead's counters, into the stats. */
void loader_publish_readahead(struct dlc_loader *l)
{
	struct dlc_ra_counters c;

	dlc_ra_counters(l->ra, &c);
	__atomic_store_n(&l->stats.readahead_reads, c.reads, __ATOMIC_RELAXED);
	__atomic_store_n(&l->stats.readahead_used, c.used, __ATOMIC_RELAXED);
	__atomic_store_n(&l->stats.readahead_dropped, c.dropped,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&l->stats.readahead_held, c.held, __ATOMIC_RELAXED);
}

/*
 * A read-ahead read ended: kept for its claim, handed over if its position
 * was claimed meanwhile, dropped if abandoned.
 */
void loader_readahead_done(struct dlc_loader *l, struct dlc_read_done *d)
{
	struct dlc_ra_entry *e = dlc_ra_at(l->ra, DLC_RA_TAG_G(d->tag));
	uint32_t id = e->id, pos = e->pos;

	if (requeued(l, id, d))
		return;
	if (e->abandoned) {
		if (e->fill && l->kt.kc)
			ktier_fill_done(l, id, DLC_RA_TAG_G(d->tag), NULL);
		dlc_buf_put(d->buf);
		dlc_ra_release(e);
	} else if (e->claimed) {
		dlc_ra_release(e);
		ktier_use(l, pos,
			   (uint32_t)(DLC_RA_TAG_G(d->tag) / l->epoch_len),
			   d->err ? NULL : d->buf);
		finish_read(l, id, pos, d->buf, d->err, d->why);
	} else {
		dlc_ra_done(e, d->buf, d->err, d->why);
	}
}

/* Finished reads: offer them to the cache and queue them for decode. */
void loader_hand_over(struct dlc_loader *l, struct dlc_read_done *done,
		      int n)
{
	struct dlc_cache_counters cc;
	int i;

	for (i = 0; i < n; i++) {
		struct dlc_read_done *d = &done[i];
		uint32_t pos;

		/* A read tier's read: requeued() has the tier check it. */
		d->tier = DLC_TIER_OF(d->tag);
		d->tag &= ~DLC_TIER_TAG_MASK;
		pos = (uint32_t)d->tag;

		if (d->tag & DLC_RA_TAG_BIT) {
			loader_readahead_done(l, d);
			continue;
		}
		if (requeued(l, l->order[pos], d))
			continue;
		finish_read(l, l->order[pos], pos, d->buf, d->err, d->why);
	}
	if (l->ra && n > 0)
		loader_publish_readahead(l);
	if (l->cache && n > 0) {
		dlc_cache_counters(l->cache, &cc);
		__atomic_store_n(&l->stats.evictions, cc.evictions,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&l->stats.bypasses, cc.bypasses,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&l->stats.cache_used, cc.used,
				 __ATOMIC_RELAXED);
	}
}

/* ------------------------------------------------------------------ */
/* Read-ahead (in-process): the order's next misses, within a budget   */
/* ------------------------------------------------------------------ */

/* The positions an epoch run from 0 covers (drop_last cuts the tail). */
static uint32_t run_end(const struct dlc_loader *l)
{
	uint32_t b = l->cfg.batch_size;

	return l->cfg.drop_last ? l->epoch_len / b * b : l->epoch_len;
}

/*
 * Called with l->lock held, after start_epoch's gen was taken: keep what
 * was read ahead for the positions from (epoch, start) on, and note when
 * each sample is last used in this epoch, as a position of ours: from
 * l->order (which start_epoch writes under the lock), or, on dlcache.ko,
 * whose cache every rank shares, from every rank's order (global position
 * g is a rank's position g / world, the ranks going in step), so that no
 * rank reads ahead for the next epoch a sample another rank is still to
 * read, and PUT, in this one.
 */
static void readahead_rebase(struct dlc_loader *l, uint32_t epoch,
			     uint32_t start)
{
	uint64_t cur = loader_vpos(l, epoch, start);
	uint32_t p;

	if (l->kt.kc)
		dlc_ra_retain_fills(l->ra, cur, cur + dlc_ra_slots(l->ra),
				    ktier_ahead_abort, l);
	dlc_ra_retain(l->ra, cur, cur + dlc_ra_slots(l->ra));
	l->ra_g = cur;
	memset(l->last_pos, 0xff, sizeof(*l->last_pos) * l->n);
	if (l->kt.kc && l->cfg.world > 1 && !ktier_fill_global(l, epoch)) {
		for (p = 0; p < l->kt.glen; p++)
			l->last_pos[l->kt.gorder[p]] = p / l->cfg.world;
	} else {
		for (p = 0; p < l->epoch_len; p++)
			l->last_pos[l->order[p]] = p;
	}
	loader_publish_readahead(l);
}

/*
 * Called with l->lock held: whether reading sample @id ahead for epoch
 * @epoch would read bytes the pipeline gets anyway. With a cache: bytes it
 * holds now, and, for the next epoch, a sample this epoch has still to
 * claim or may still be reading (claimed within the last window): it
 * comes from storage or the cache then, and the cache decides whether it
 * stays for the next epoch, as it would without read-ahead. With
 * dlcache.ko the same next-epoch rule (what the module holds, its
 * look-up ahead tells), and with the staging tier: this epoch's read of
 * the sample makes its copy, which the next epoch's claim reads.
 */
static int readahead_needless(const struct dlc_loader *l, uint32_t epoch,
			      uint32_t id)
{
	uint32_t last;

	if (!l->cache && !l->kt.kc && !l->stage)
		return 0;
	if (l->cache && dlc_cache_contains(l->cache, id))
		return 1;
	last = l->last_pos[id];
	return epoch != l->epoch && last != UINT32_MAX &&
	       (uint64_t)last + l->cfg.window >= l->next_pos;
}

/*
 * Called with l->lock held: the next position to read ahead, as its
 * virtual position @g and sample @id; -EAGAIN when there is none now (the
 * epoch after next, the table's span, an older read still in its slot).
 */
static int readahead_next(struct dlc_loader *l, uint64_t my_gen,
			  uint64_t *g, uint32_t *id)
{
	uint64_t cur, v;
	uint32_t ep, p;

	if (!l->active || l->failed || l->gen != my_gen)
		return -EAGAIN;
	cur = loader_vpos(l, l->epoch, l->next_pos);
	if (l->ra_g < cur)
		l->ra_g = cur;
	for (;; l->ra_g++) {
		struct dlc_ra_entry *e;

		v = l->ra_g;
		if (v - cur >= dlc_ra_slots(l->ra) || v >= DLC_RA_G_LIMIT)
			return -EAGAIN;
		ep = (uint32_t)(v / l->epoch_len);
		p = (uint32_t)(v % l->epoch_len);
		/* The job's last epoch is known: nothing past it. */
		if (l->cfg.epochs && ep >= l->cfg.epochs)
			return -EAGAIN;
		if (ep == l->epoch && p >= l->end) {
			/* This run ends here: the next epoch starts at 0. */
			l->ra_g = loader_vpos(l, ep + 1, 0) - 1;
			continue;
		}
		if (ep == l->epoch) {
			*id = l->order[p];
		} else {
			if (ep != l->epoch + 1 || p >= run_end(l))
				return -EAGAIN;
			if (l->ra_order_epoch != ep) {
				if (loader_fill_order(l, ep, l->ra_order, l->epoch_len))
					return -EAGAIN;
				l->ra_order_epoch = ep;
			}
			*id = l->ra_order[p];
		}
		e = dlc_ra_at(l->ra, v);
		if (e->state != DLC_RA_FREE) {
			if (e->g == v && !e->abandoned)
				continue;	/* read already */
			return -EAGAIN;		/* an older read's slot */
		}
		if (readahead_needless(l, ep, *id))
			continue;
		*g = v;
		return 0;
	}
}

/*
 * The next position to read ahead (readahead_next()) when its bytes fit
 * the budget, charged as the pool's blocks are (whole pages): 0, or
 * -EAGAIN for none now.
 */
int loader_readahead_pick(struct dlc_loader *l, uint64_t my_gen, uint64_t *g,
			  uint32_t *id, uint64_t *bytes)
{
	int ret;

	pthread_mutex_lock(&l->lock);
	ret = readahead_next(l, my_gen, g, id);
	pthread_mutex_unlock(&l->lock);
	if (ret)
		return ret;
	*bytes = (dlc_index_size(l->idx, *id) + 4095) & ~4095ULL;
	return dlc_ra_room(l->ra, *bytes) ? 0 : -EAGAIN;
}

/*
 * Queue reads of the order's next misses while the reader has room and
 * the budget allows. Returns whether any was queued.
 */
static int read_ahead(struct dlc_loader *l, uint64_t my_gen, char *path,
		      size_t len)
{
	int issued = 0;

	if (!l->ra)
		return 0;
	if (l->kt.kc)
		return l->kt.k_ahead && !l->kt.kerr ?
		       ktier_read_ahead(l, my_gen, path, len) : 0;
	if (l->kt.kread_len)
		return 0;
	while (dlc_reader_inflight(l->reader) < l->cfg.queue_depth) {
		struct dlc_ra_entry *e;
		uint64_t g, bytes;
		uint32_t id;
		int ret;

		if (loader_readahead_pick(l, my_gen, &g, &id, &bytes))
			break;
		e = dlc_ra_at(l->ra, g);
		dlc_ra_begin(l->ra, e, g, id, bytes);
		dlc_ra_reading(l->ra, e);
		ret = dlc_source_queue(l->src, l->reader, id, DLC_RA_TAG(g),
				       path, len);
		if (ret)
			dlc_ra_done(e, NULL, ret, "queue");
		l->ra_g = g + 1;
		issued = 1;
	}
	if (issued)
		loader_publish_readahead(l);
	return issued;
}

/*
 * The claim of @pos in @epoch takes what was read ahead for it, if
 * anything: 1 when it did (read, handed over now; in flight, handed over
 * at completion), 0 when the claim reads or looks up as usual.
 */
int loader_take_readahead(struct dlc_loader *l, uint32_t epoch,
			  const struct item *it)
{
	struct dlc_ra_entry *e;
	struct dlc_buf *buf;
	const char *why;
	int err;

	if (!l->ra)
		return 0;
	e = dlc_ra_find(l->ra, loader_vpos(l, epoch, it->pos));
	if (!e)
		return 0;
	buf = e->buf;
	err = e->err;
	why = e->why;
	if (e->state == DLC_RA_READY) {
		dlc_ra_take(l->ra, e, it->pos);
		ktier_use(l, it->pos, epoch, err ? NULL : buf);
		finish_read(l, it->sample, it->pos, buf, err, why);
	} else {
		dlc_ra_take(l->ra, e, it->pos);
	}
	loader_publish_readahead(l);
	return 1;
}

/*
 * After a submit or a reap: open or close the storage's busy span (at
 * least one read in flight). I/O thread; l->lock only at the edges.
 */
static void track_busy(struct dlc_loader *l)
{
	uint32_t n = dlc_reader_inflight(l->reader);
	uint64_t now;

	__atomic_store_n(&l->stats.reads_inflight, n, __ATOMIC_RELAXED);
	if (!n == !l->busy_since)
		return;
	now = dlc_now_ns();
	pthread_mutex_lock(&l->lock);
	if (n) {
		l->busy_since = now;
	} else {
		dlc_stat_add(l->stats.io_busy_ns, now - l->busy_since);
		l->busy_since = 0;
	}
	pthread_mutex_unlock(&l->lock);
}

/*
 * Called with l->lock held, when loader_issuable(): whether the next position can
 * be claimed now. One that needs a read needs the reader's room; one read
 * ahead or cached does not (the read-ahead may hold all of the room).
 */
static int claim_room(const struct dlc_loader *l)
{
	if (dlc_reader_inflight(l->reader) < l->cfg.queue_depth)
		return 1;
	if (l->ra && dlc_ra_find(l->ra, loader_vpos(l, l->epoch, l->next_pos)))
		return 1;
	return l->cache && dlc_cache_contains(l->cache, l->order[l->next_pos]);
}

static void *io_main(void *arg)
{
	struct dlc_loader *l = arg;
	struct dlc_read_done *done;
	struct dlc_decoder *dec = NULL;
	uint64_t my_gen = 0;
	uint32_t qd = l->cfg.queue_depth;
	char path[4096];

	int err = -ENOMEM;

	done = calloc(qd, sizeof(*done));
	if (done)
		err = dlc_decoder_create(l->cfg.max_pixels, &dec);
	if (!err)
		dlc_decoder_set_budget(dec, l->cfg.max_scans,
				       l->cfg.decode_budget_ms);
	thread_up(l, err, "I/O thread");
	if (err) {
		free(done);
		return NULL;
	}

	pthread_mutex_lock(&l->lock);
	while (!l->stop) {
		int progressed = 0, ahead, n, lend, watch;
		uint32_t cur_epoch;
		struct item it;

		if (l->active && l->gen != my_gen) {
			uint32_t epoch = l->epoch, start = l->start;
			int ret = 0;

			my_gen = l->gen;
			if (l->ra)
				readahead_rebase(l, epoch, l->start);
			pthread_mutex_unlock(&l->lock);
			if (l->cache)
				ret = dlc_cache_prepare_epoch(l->cache, epoch,
							      loader_fill_order, l);
			if (l->kt.kc)
				ktier_prepare_epoch(l, epoch);
			if (l->stage &&
			    dlc_stage_prepare_epoch(l->stage, epoch, start))
				dlc_logf(&l->log, DLC_LOG_WARN,
					 "staging: cannot take the order of epoch %u; nothing new is staged",
					 epoch);
			pthread_mutex_lock(&l->lock);
			if (ret) {
				dlc_logf(&l->log, DLC_LOG_ERROR,
					 "cache: cannot take the order of epoch %u: %s",
					 epoch, strerror(-ret));
				l->failed = ret;
				pthread_cond_broadcast(&l->ready_cv);
			}
		}

		/* Issue: hits go straight to decode, misses to io_uring. */
		while (!l->kt.kc && loader_issuable(l) && claim_room(l)) {
			struct dlc_buf *hit = NULL;
			uint32_t epoch = l->epoch;

			loader_claim_next(l, &it);
			pthread_mutex_unlock(&l->lock);
			if (l->cache)
				dlc_cache_advance(l->cache, epoch, it.pos);
			if (loader_take_readahead(l, epoch, &it)) {
				pthread_mutex_lock(&l->lock);
				progressed = 1;
				continue;
			}
			if (l->cache)
				hit = dlc_cache_lookup(l->cache, it.sample);
			if (hit) {
				it.buf = hit;
				dlc_stat_add(l->stats.hits, 1);
				dlc_stat_add(l->stats.hit_bytes, hit->len);
				if (l->stage)
					dlc_stage_hit_above(l->stage, hit->len);
			} else {
				/* There is reader room, so this should queue. */
				it.err = dlc_source_queue(l->src, l->reader,
							  it.sample, it.pos, path,
							  sizeof(path));
				it.why = "queue";
			}
			pthread_mutex_lock(&l->lock);
			if (hit || it.err) {
				if (it.err)
					dlc_stat_add(l->stats.misses, 1);
				loader_push_item(l, &it);
			}
			progressed = 1;
		}
		cur_epoch = l->epoch;
		pthread_mutex_unlock(&l->lock);

		if (l->kt.kc && ktier_round(l, cur_epoch, path, sizeof(path)))
			progressed = 1;
		if (l->kt.kc && l->kt.kerr)
			ktier_switch(l);
		/* After a fallback: what the module did not serve is read. */
		if (!l->kt.kc && l->kt.kread_len &&
		    ktier_read_queued(l, path, sizeof(path)))
			progressed = 1;
		ahead = read_ahead(l, my_gen, path, sizeof(path));
		if (progressed || ahead)
			dlc_reader_submit(l->reader);
		track_busy(l);
		n = dlc_reader_reap(l->reader, done, qd, 0);
		if (n > 0) {
			loader_hand_over(l, done, n);
			track_busy(l);
			progressed = 1;
		}

		pthread_mutex_lock(&l->lock);
		/*
		 * The controller: decode is behind (more queued than the
		 * workers can take) while I/O has issued all it may, so this
		 * thread decodes one sample and then looks again.
		 */
		lend = l->qlen > l->ndecode &&
		       (dlc_reader_inflight(l->reader) >= qd ||
			(!loader_issuable(l) && !ahead));
		if (lend && pop_and_process(l, dec)) {
			dlc_stat_add(l->stats.io_thread_decodes, 1);
			continue;
		}
		if (progressed || ahead || l->stop ||
		    (l->active && l->gen != my_gen) ||
		    (loader_issuable(l) && (l->kt.kc ?
			l->kt.kgets + l->kt.kread_len < l->cfg.window :
			claim_room(l))) ||
		    ((l->kt.kread_len || l->kt.kahead_len) &&
		     dlc_reader_inflight(l->reader) < qd))
			continue;
		/*
		 * Nothing to do: sleep until a read completes or a wake, or,
		 * with GETs parked on other processes' fills, the module's fd
		 * says they are ready.
		 */
		l->io_idle = 1;
		/*
		 * The fd is watched also without GETs in flight: a drain
		 * (POLLHUP) wakes an idle loader, which then lets go of the
		 * module. Not after a failure under kernel_fallback fail:
		 * the hang-up would wake it at once, again and again.
		 */
		watch = l->kt.kc && !l->failed;
		pthread_mutex_unlock(&l->lock);
		if (watch)
			dlc_reader_watch(l->reader, dlc_kclient_fd(l->kt.kc));
		n = dlc_reader_reap(l->reader, done, qd, 1);
		if (n > 0) {
			loader_hand_over(l, done, n);
			track_busy(l);
		}
		pthread_mutex_lock(&l->lock);
		l->io_idle = 0;
	}
	pthread_mutex_unlock(&l->lock);
	dlc_decoder_destroy(dec);
	free(done);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Public API                                                          */

/* How long a thread that returned may take to end before it is detached. */
#define EXIT_GRACE_MS	1000

void dlc_join_bounded(pthread_t t, const uint32_t *returned,
		      uint32_t nthreads, const struct dlc_logger *log)
{
	uint32_t waited = 0;
	struct timespec ts;

	for (;;) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (pthread_timedjoin_np(t, NULL, &ts) != ETIMEDOUT)
			return;
		if (__atomic_load_n(returned, __ATOMIC_ACQUIRE) < nthreads)
			continue;
		waited += 100;
		if (waited >= EXIT_GRACE_MS)
			break;
	}
	dlc_logf(log, DLC_LOG_WARN,
		 "a pipeline thread returned but has not ended after %u ms (an io_uring read on a hung file system?): detached",
		 EXIT_GRACE_MS);
	pthread_detach(t);
}

/* The threads' entry points: their last act says they are done with @l. */
static void *io_entry(void *arg)
{
	struct dlc_loader *l = arg;

	io_main(l);
	__atomic_add_fetch(&l->threads_returned, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *decode_entry(void *arg)
{
	struct dlc_loader *l = arg;

	decode_main(l);
	__atomic_add_fetch(&l->threads_returned, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void stop_threads(struct dlc_loader *l)
{
	uint32_t i, n = !!l->io_started + l->nthreads_started;

	pthread_mutex_lock(&l->lock);
	l->stop = 1;
	pthread_cond_broadcast(&l->work_cv);
	pthread_cond_broadcast(&l->ready_cv);
	pthread_mutex_unlock(&l->lock);
	if (l->reader)
		dlc_reader_wake(l->reader);
	if (l->io_started)
		dlc_join_bounded(l->io_thread, &l->threads_returned, n, &l->log);
	for (i = 0; i < l->nthreads_started; i++)
		dlc_join_bounded(l->decode_threads[i], &l->threads_returned, n,
				 &l->log);
	l->io_started = 0;
	l->nthreads_started = 0;
}

const char *dlc_backend_name(uint32_t backend)
{
	static const char *const names[] = { "auto", "inprocess", "kernel" };

	return backend <= DLC_BACKEND_KERNEL ? names[backend] : "?";
}

uint32_t dlc_loader_backend(const struct dlc_loader *l)
{
	return __atomic_load_n(&l->backend, __ATOMIC_RELAXED);
}

/*
 * The environment variable @var, when set, over *@mode: one of the names
 * @name() gives for 0 .. @last. Anything else is -EINVAL, logged.
 */
static int env_mode(struct dlc_loader *l, const char *var,
		    const char *(*name)(uint32_t), uint32_t last,
		    const char *want, uint32_t *mode)
{
	const char *env = getenv(var);
	uint32_t i;

	if (!env || !*env)
		return 0;
	for (i = 0; i <= last; i++)
		if (!strcmp(env, name(i))) {
			*mode = i;
			return 0;
		}
	dlc_logf(&l->log, DLC_LOG_ERROR, "invalid %s '%s': want %s", var, env,
		 want);
	return -EINVAL;
}

/*
 * DLCACHE_VERIFY over cfg.verify; then whether the index has checksums
 * at all (a format 1 index has none: say so where it matters).
 */
static int setup_verify(struct dlc_loader *l)
{
	uint32_t i, crc;

	l->verify = l->cfg.verify;
	if (env_mode(l, "DLCACHE_VERIFY", dlc_verify_name, DLC_VERIFY_ALL,
		     "kernel, off or all", &l->verify))
		return -EINVAL;
	if (l->verify == DLC_VERIFY_OFF)
		return 0;
	for (i = 0; i < l->n; i++)
		if (dlc_index_crc32c(l->idx, i, &crc) == 0)
			break;
	if (i == l->n) {
		dlc_logf(&l->log, l->backend == DLC_BACKEND_KERNEL ?
			 DLC_LOG_WARN : DLC_LOG_INFO,
			 "the index has no checksums (an older index file): samples are not verified; rebuild it (dlcachectl index) to verify them");
		l->verify = DLC_VERIFY_OFF;
		return 0;
	}
	l->crc_logged = calloc((size_t)l->n / 8 + 1, 1);
	return l->crc_logged ? 0 : -ENOMEM;
}

/* DLCACHE_KERNEL_FALLBACK over cfg.kernel_fallback. */
static int setup_fallback(struct dlc_loader *l)
{
	l->kt.kfallback = l->cfg.kernel_fallback;
	return env_mode(l, "DLCACHE_KERNEL_FALLBACK", dlc_kernel_fallback_name,
			DLC_KERNEL_FALLBACK_FAIL, "inprocess or fail",
			&l->kt.kfallback);
}

/* DLCACHE_VALIDATE over cfg.validate; ONCE's bitmap. */
static int setup_validate(struct dlc_loader *l)
{
	l->validate = l->cfg.validate;
	if (env_mode(l, "DLCACHE_VALIDATE", dlc_validate_name,
		     DLC_VALIDATE_OFF, "once, always or off", &l->validate))
		return -EINVAL;
	if (l->validate != DLC_VALIDATE_ONCE)
		return 0;
	l->checked = calloc((size_t)l->n / 8 + 1, 1);
	return l->checked ? 0 : -ENOMEM;
}


/*
 * Called with l->lock held, or before the threads start: what
 * dlc_loader_pinned() and dlc_loader_hugepages() say of the ring now.
 */
static void ring_summary(struct dlc_loader *l)
{
	int pinned = 1, huge = 2;
	uint32_t i;

	for (i = 0; i < l->cfg.nbatches; i++) {
		pinned &= l->slots[i].mem.locked;
		if (l->slots[i].mem.huge < huge)
			huge = l->slots[i].mem.huge;
	}
	__atomic_store_n(&l->pinned, pinned, __ATOMIC_RELAXED);
	__atomic_store_n(&l->huge, huge, __ATOMIC_RELAXED);
}

/* A buffer of its own for every slot; one warning, one line of INFO. */
static int ring_alloc(struct dlc_loader *l)
{
	size_t unpinned = 0;
	uint32_t i;
	int ret, err = 0;

	for (i = 0; i < l->cfg.nbatches; i++) {
		struct slot *s = &l->slots[i];

		ret = dlc_pinned_alloc(l->slot_bytes, NULL, &s->mem);
		if (ret) {
			dlc_logf(&l->log, DLC_LOG_ERROR,
				 "cannot map %zu MiB for batch buffer %u of %u",
				 l->slot_bytes >> 20, i + 1, l->cfg.nbatches);
			return ret;
		}
		s->b.data = s->mem.base;
		if (!s->mem.locked) {
			unpinned += s->mem.bytes;
			err = s->mem.lock_err;
		}
	}
	if (unpinned)
		dlc_pinned_warn(&l->log, unpinned, err);
	ring_summary(l);
	dlc_logf(&l->log, DLC_LOG_INFO, "batch ring: %u x %zu MiB, %s, %s",
		 l->cfg.nbatches, l->slots[0].mem.bytes >> 20,
		 l->pinned ? "pinned" : unpinned < l->slots[0].mem.bytes *
		 l->cfg.nbatches ? "partly pinned" : "not pinned",
		 l->huge == 2 ? "hugetlb pages" :
		 l->huge ? "transparent huge pages advised" : "small pages");
	return 0;
}

/*
 * The read-ahead's budget: the configured one, or the default lowered to
 * 1/32 of the memory this process may use, so that eight loaders in a
 * small job's memory cgroup keep to a quarter of it.
 */
static uint64_t readahead_budget(const struct dlc_config *c)
{
	uint64_t lim;

	if (c->readahead_bytes == DLC_READAHEAD_OFF)
		return 0;
	if (c->readahead_bytes)
		return c->readahead_bytes;
	lim = dlc_mem_limit("/proc/self/cgroup", "/sys/fs/cgroup") / 32;
	return lim && lim < DLC_READAHEAD_DEFAULT ? lim : DLC_READAHEAD_DEFAULT;
}

/*
 * The read-ahead table spans what the read-ahead can reach: the rest of
 * this epoch and all of the next (2 x epoch_len), past the window of
 * claims still in flight, at most 64 Ki positions.
 */
static int readahead_setup(struct dlc_loader *l)
{
	uint64_t budget = readahead_budget(&l->cfg);
	uint64_t span = 2ULL * l->epoch_len + l->cfg.window;
	int ret;

	__atomic_store_n(&l->stats.readahead_budget, budget, __ATOMIC_RELAXED);
	l->ra_order_epoch = -1;
	if (!budget)
		return 0;
	l->ra_order = malloc(sizeof(*l->ra_order) * l->epoch_len);
	l->last_pos = malloc(sizeof(*l->last_pos) * l->n);
	if (!l->ra_order || !l->last_pos)
		return -ENOMEM;
	ret = dlc_ra_create(span < 65536 ? (uint32_t)span : 65536, budget,
			    &l->ra);
	if (ret)
		return ret;
	dlc_logf(&l->log, DLC_LOG_INFO, "read-ahead: %llu MiB",
		 (unsigned long long)(budget >> 20));
	return 0;
}

/*
 * The staging tier, when configured: a failure to open it fails the
 * loader, as the caller asked for it. The stager reads from the origin
 * only beyond the positions the pipeline reads itself: its window and
 * the read-ahead's reach.
 */
static int staging_setup(struct dlc_loader *l)
{
	struct dlc_stage_opts o = {
		.budget = l->cfg.staging_bytes, .idx = l->idx, .src = l->src,
		.log = &l->log, .epoch_len = l->epoch_len,
		.epochs = l->cfg.epochs, .max_file_bytes = l->cfg.max_file_bytes,
		.fill_order = loader_fill_order, .order_arg = l,
	};
	uint64_t lead = l->cfg.window;
	struct dlc_tier t;
	int ret;

	if (!l->cfg.staging_dir)
		return 0;
	l->staging_dir = strdup(l->cfg.staging_dir);
	if (!l->staging_dir)
		return -ENOMEM;
	l->cfg.staging_dir = l->staging_dir;
	o.dir = l->staging_dir;
	if (l->ra)
		lead += dlc_ra_slots(l->ra);
	o.lead = lead < l->epoch_len ? (uint32_t)lead : l->epoch_len;
	ret = dlc_stage_open(&o, &l->stage);
	if (ret)
		return ret;
	dlc_stage_tier(l->stage, &t);
	return dlc_source_add_tier(l->src, &t);
}

/*
 * Cluster mode: the peer tier after the staging tier (local disk is
 * cheaper than a link), its share the in-process cache's bytes.
 */
static int cluster_setup(struct dlc_loader *l)
{
	struct dlc_peer_opts o = {
		.idx = l->idx, .log = &l->log, .rank = l->cfg.rank,
		.world = l->cfg.world, .capacity = l->cfg.cache_bytes,
		.timeout_ms = l->cfg.peer_timeout_ms,
		.queue_depth = l->cfg.queue_depth,
	};
	struct dlc_tier t;
	int ret;

	if (!l->cfg.cluster)
		return 0;
	ret = dlc_peer_open(&o, &l->peer);
	if (ret)
		return ret;
	l->stats.cluster_capacity = l->cfg.cache_bytes;
	dlc_peer_tier(l->peer, &t);
	return dlc_source_add_tier(l->src, &t);
}

void dlc_loader_destroy(struct dlc_loader *l)
{
	uint32_t i;

	if (!l)
		return;
	/* No blocking read of a thread waits on the storage any more. */
	dlc_source_cancel(l->src);
	stop_threads(l);
	/* Samples still queued hold buffer references. */
	for (i = 0; i < l->qlen; i++)
		dlc_buf_put(l->queue[(l->qhead + i) % l->cfg.window].buf);
	/* Requests to peers wait as reads of eventfds: end them. */
	dlc_peer_cancel(l->peer);
	dlc_reader_destroy(l->reader);
	/* After the reader: its reads in flight were reaped and put. */
	dlc_ra_destroy(l->ra);
	free(l->ra_order);
	free(l->last_pos);
	dlc_cache_destroy(l->cache);
	ktier_close(l);
	/* Before the source: the stager reads the origin through it. */
	dlc_stage_close(l->stage);
	free(l->staging_dir);
	/* Says goodbye, and answers the peers until they said theirs. */
	dlc_peer_close(l->peer);
	dlc_source_close(l->src);
	/* Nothing of ours is in flight now: give the idle blocks back. */
	dlc_buf_pool_trim();
	if (l->slots)
		for (i = 0; i < l->cfg.nbatches; i++) {
			free(l->slots[i].skip);
			free(l->slots[i].b.labels);
			free(l->slots[i].b.ids);
			/* The ring's buffers only: kept ones are the caller's. */
			dlc_pinned_free(&l->slots[i].mem);
		}
	free(l->slots);
	free(l->handles);
	free(l->queue);
	free(l->order);
	free(l->decode_threads);
	free(l->crc_logged);
	free(l->checked);
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->work_cv);
	pthread_cond_destroy(&l->ready_cv);
	pthread_cond_destroy(&l->idle_cv);
	free(l);
}

/* The batch slots' per-sample arrays and their shape. 0 or -ENOMEM. */
static int slots_setup(struct dlc_loader *l)
{
	const struct dlc_config *cfg = &l->cfg;
	uint32_t i;

	for (i = 0; i < cfg->nbatches; i++) {
		struct slot *s = &l->slots[i];

		s->b.labels = calloc(cfg->batch_size, sizeof(*s->b.labels));
		s->b.ids = calloc(cfg->batch_size, sizeof(*s->b.ids));
		s->skip = calloc(cfg->batch_size, 1);
		s->b.layout = cfg->layout;
		s->b.out_w = cfg->transform.out_w;
		s->b.out_h = cfg->transform.out_h;
		if (!s->b.labels || !s->b.ids || !s->skip)
			return -ENOMEM;
	}
	return 0;
}

/*
 * The in-process cache, on the in-process backend when it has bytes
 * (cluster mode's caches are the peer tier's). 0 or -errno, logged.
 */
static int cache_setup(struct dlc_loader *l)
{
	const struct dlc_config *cfg = &l->cfg;
	int ret;

	if (l->backend != DLC_BACKEND_INPROCESS || !cfg->cache_bytes ||
	    cfg->cluster)
		return 0;
	ret = dlc_cache_create(l->n, l->epoch_len, cfg->cache_bytes,
			       &l->cache);
	if (ret) {
		dlc_logf(&l->log, DLC_LOG_ERROR,
			 "in-process cache over %u samples (%u a rank): %s",
			 l->n, l->epoch_len, strerror(-ret));
		return ret;
	}
	l->stats.cache_capacity = cfg->cache_bytes;
	return 0;
}

/*
 * The io_uring reader, with NVMe passthrough where the source is a pack
 * on a namespace and io_uring has it. 0 or -errno, logged.
 */
static int reader_setup(struct dlc_loader *l)
{
	const struct dlc_config *cfg = &l->cfg;
	struct dlc_reader_opts ro = { 0 };
	int ret;

	ro.queue_depth = cfg->queue_depth;
	ro.direct = cfg->direct_io;
	ro.max_read_bytes = cfg->max_read_bytes;
	ro.max_file_bytes = cfg->max_file_bytes;
	ro.slot_bytes = 256 << 10;
	ro.log = &l->log;
	ro.stats = &l->stats;
	ro.read_timeout_ms = cfg->read_timeout_ms ? cfg->read_timeout_ms :
			     DLC_READ_TIMEOUT_DEFAULT_MS;
	if (cfg->nvme_passthru == DLC_PASSTHRU_AUTO)
		ro.passthru = (uint32_t)dlc_source_passthru(l->src, &l->log);
	ret = dlc_reader_create(&ro, &l->reader);
	if (ret && ro.passthru) {
		/* io_uring before 5.19 has no 128-byte SQEs. */
		dlc_source_passthru_off(l->src, "io_uring without 128-byte SQEs");
		ro.passthru = 0;
		ret = dlc_reader_create(&ro, &l->reader);
	}
	if (ret)
		dlc_logf(&l->log, DLC_LOG_ERROR, "io_uring setup failed: %s",
			 strerror(-ret));
	return ret;
}

/*
 * Start the I/O thread and the decode threads, and wait until every one
 * is set up: a loader fails at create rather than hang later. 0 or
 * -errno, logged; dlc_loader_destroy() ends what started.
 */
static int threads_start(struct dlc_loader *l)
{
	uint32_t i;
	int ret;

	ret = pthread_create(&l->io_thread, NULL, io_entry, l);
	if (ret) {
		dlc_logf(&l->log, DLC_LOG_ERROR, "cannot start the I/O thread: %s",
			 strerror(ret));
		return -ret;
	}
	l->io_started = 1;
	for (i = 0; i < l->ndecode; i++) {
		ret = pthread_create(&l->decode_threads[i], NULL, decode_entry,
				     l);
		if (ret) {
			dlc_logf(&l->log, DLC_LOG_ERROR,
				 "cannot start decode thread %u of %u: %s", i + 1,
				 l->ndecode, strerror(ret));
			return -ret;
		}
		l->nthreads_started++;
	}
	pthread_mutex_lock(&l->lock);
	while (l->threads_up < 1 + l->nthreads_started)
		pthread_cond_wait(&l->idle_cv, &l->lock);
	ret = l->thread_err;
	pthread_mutex_unlock(&l->lock);
	return ret;
}

int dlc_loader_create(const struct dlc_config *ucfg,
		      const struct dlc_index *idx, struct dlc_loader **out)
{
	struct dlc_logger log = { 0 };
	struct dlc_order_params op = { 0 };
	struct dlc_config cfgbuf, *cfg = &cfgbuf;
	struct dlc_loader *l;
	pthread_condattr_t ca;
	int ret;

	if (!ucfg || !idx || !out)
		return -EINVAL;
	*out = NULL;
	/* The log fields are there unless the size says they are not. */
	if (ucfg->size == 0 || ucfg->size >= DLC_CONFIG_SIZE_VER0) {
		log.fn = ucfg->log;
		log.arg = ucfg->log_arg;
		log.level = ucfg->log_level;
	}
	ret = take_config(ucfg, cfg, &log);
	if (!ret)
		ret = check_config(cfg, &log);
	if (ret)
		return ret;
	if (dlc_index_count(idx) == 0) {
		dlc_logf(&log, DLC_LOG_ERROR, "invalid data set: it holds no samples");
		return -EINVAL;
	}
	op.world = cfg->world;
	op.rank = cfg->rank;
	op.drop_last = cfg->shard_drop_last;
	if (dlc_order_len(dlc_index_count(idx), &op) == 0) {
		dlc_logf(&log, DLC_LOG_ERROR,
			 "invalid config: world: %u ranks leave no samples for rank %u of %u samples",
			 cfg->world, cfg->rank, dlc_index_count(idx));
		return -EINVAL;
	}

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->cfg = *cfg;
	l->log = log;
	l->idx = idx;
	l->n = dlc_index_count(idx);
	l->epoch_len = dlc_order_len(l->n, &op);
	l->sample_bytes = (size_t)3 * cfg->transform.out_w * cfg->transform.out_h;
	l->consumer_waited = 1;
	l->ndecode = cfg->decode_threads ? cfg->decode_threads :
		     dlc_default_decode_threads();
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->work_cv, NULL);
	/* dlc_next_batch_timeout() waits on it against CLOCK_MONOTONIC. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->ready_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&l->idle_cv, NULL);

	ret = -ENOMEM;
	l->order = malloc(sizeof(*l->order) * l->epoch_len);
	l->queue = calloc(cfg->window, sizeof(*l->queue));
	l->slots = calloc(cfg->nbatches, sizeof(*l->slots));
	l->handles = calloc(DLC_HANDLES, sizeof(*l->handles));
	l->decode_threads = calloc(l->ndecode, sizeof(*l->decode_threads));
	if (!l->order || !l->queue || !l->slots || !l->handles ||
	    !l->decode_threads)
		goto err;

	l->slot_bytes = l->sample_bytes * cfg->batch_size;
	ret = ring_alloc(l);
	if (ret)
		goto err;
	ret = slots_setup(l);
	if (ret)
		goto err;

	ret = dlc_source_open(idx, cfg->direct_io, &l->src);
	if (ret) {
		dlc_logf(&l->log, DLC_LOG_ERROR, "data set %s: %s",
			 dlc_index_root(idx), strerror(-ret));
		goto err;
	}
	/* Before the stager starts: it reads through dlc_source_read(). */
	dlc_source_set_timeout(l->src, cfg->read_timeout_ms ?
			       cfg->read_timeout_ms :
			       DLC_READ_TIMEOUT_DEFAULT_MS, &l->log);
	/* Cluster mode's caches are the ranks' in-process ones. */
	if (cfg->cluster)
		l->backend = DLC_BACKEND_INPROCESS;
	else
		ret = ktier_open(l);
	if (!ret)
		ret = setup_fallback(l);
	if (!ret)
		ret = setup_verify(l);
	if (!ret)
		ret = setup_validate(l);
	if (ret)
		goto err;
	ret = cache_setup(l);
	if (ret)
		goto err;

	ret = readahead_setup(l);
	if (!ret)
		ret = staging_setup(l);
	if (!ret)
		ret = cluster_setup(l);
	if (ret)
		goto err;

	ret = reader_setup(l);
	if (ret)
		goto err;

	if (l->kt.kc)
		dlc_logf(&l->log, DLC_LOG_INFO,
			 "dlcache.ko cache (%llu MiB, shared by the node) over %u samples, data set of uid %u; %u decode threads + 1 I/O thread",
			 (unsigned long long)(dlc_kclient_capacity(l->kt.kc) >> 20),
			 l->n, dlc_kclient_owner(l->kt.kc), l->ndecode);
	else
		dlc_logf(&l->log, DLC_LOG_INFO,
			 "in-process cache of %llu MiB over %u samples; %u decode threads + 1 I/O thread",
			 (unsigned long long)(cfg->cache_bytes >> 20), l->n,
			 l->ndecode);

	ret = threads_start(l);
	if (ret)
		goto err;
	*out = l;
	return 0;
err:
	dlc_loader_destroy(l);
	return ret;
}

int dlc_loader_start_epoch(struct dlc_loader *l, uint32_t epoch,
			   uint32_t start)
{
	struct dlc_order_params op = {
		.seed = l->cfg.seed, .epoch = epoch, .rank = l->cfg.rank,
		.world = l->cfg.world, .shuffle = l->cfg.shuffle,
		.drop_last = l->cfg.shard_drop_last,
	};
	uint32_t end, i, b = l->cfg.batch_size;
	int ret;

	end = l->cfg.drop_last ? l->epoch_len / b * b : l->epoch_len;
	if (epoch == UINT32_MAX) {
		dlc_logf(&l->log, DLC_LOG_ERROR,
			 "start epoch: epoch %u is out of range", epoch);
		return -EINVAL;
	}
	if (start % b) {
		dlc_logf(&l->log, DLC_LOG_ERROR,
			 "start epoch %u: start %u is not on the batch grid (a multiple of batch_size %u): resume at k * %u after k batches",
			 epoch, start, b, b);
		return -EINVAL;
	}
	if (start > end) {
		dlc_logf(&l->log, DLC_LOG_ERROR,
			 "start epoch %u: start %u is past the epoch's %u samples",
			 epoch, start, end);
		return -EINVAL;
	}

	pthread_mutex_lock(&l->lock);
	if (l->held) {
		pthread_mutex_unlock(&l->lock);
		return -EBUSY;
	}
	/* Wind down the epoch in progress. */
	l->active = 0;
	while (l->qlen) {
		loader_drop_sample(l, l->queue[l->qhead].buf);
		l->qhead = (l->qhead + 1) % l->cfg.window;
		l->qlen--;
	}
	while (l->outstanding && !l->stop)
		pthread_cond_wait(&l->idle_cv, &l->lock);

	ret = dlc_order_fill(l->n, &op, l->order, l->epoch_len);
	if (ret) {
		pthread_mutex_unlock(&l->lock);
		return ret;
	}
	for (i = 0; i < l->cfg.nbatches; i++)
		l->slots[i].state = SLOT_FREE;
	l->gen++;
	l->epoch = epoch;
	l->start = start;
	l->end = end;
	l->next_pos = start;
	l->kt.klow = start;
	if (l->kt.kdone)
		memset(l->kt.kdone, 0, l->cfg.window);
	l->nbatches_run = (end - start + b - 1) / b;
	l->base_seq = start / b;
	l->next_local = 0;
	l->failed = 0;
	l->active = 1;
	l->io_idle = 0;
	pthread_mutex_unlock(&l->lock);
	dlc_reader_wake(l->reader);
	return 0;
}

uint32_t dlc_loader_epoch_samples(const struct dlc_loader *l)
{
	return l->cfg.drop_last ? l->epoch_len / l->cfg.batch_size *
				  l->cfg.batch_size : l->epoch_len;
}

uint32_t dlc_loader_epoch_batches(const struct dlc_loader *l)
{
	uint32_t b = l->cfg.batch_size;

	return l->cfg.drop_last ? l->epoch_len / b : (l->epoch_len + b - 1) / b;
}

uint32_t dlc_loader_decode_threads(const struct dlc_loader *l)
{
	return l->ndecode;
}

/* Called with l->lock held: the I/O thread may go on. */
static void wake_io(struct dlc_loader *l)
{
	if (l->io_idle) {
		l->io_idle = 0;
		dlc_reader_wake(l->reader);
	}
}

/*
 * dlc_next_batch() and dlc_next_batch_timeout(): wait for the batch until
 * @until (CLOCK_MONOTONIC; NULL: for as long as it takes), then
 * -ETIMEDOUT with nothing consumed.
 */
/* Called with l->lock held: whether @s holds the consumer's next batch. */
static int batch_ready(const struct dlc_loader *l, const struct slot *s)
{
	return s->state == SLOT_READY &&
	       s->b.seq == l->base_seq + l->next_local;
}

static int next_batch(struct dlc_loader *l, struct dlc_batch **out,
		      const struct timespec *until)
{
	struct handle *h;
	struct slot *s;
	uint32_t si;
	uint64_t t0;
	int ret, ready = 0;

	pthread_mutex_lock(&l->lock);
	if (!l->active && !l->gen) {
		pthread_mutex_unlock(&l->lock);
		return -EINVAL;		/* no epoch started */
	}
	for (;;) {
		if (l->failed) {
			ret = l->failed;
			goto out;
		}
		if (l->next_local >= l->nbatches_run) {
			ret = -ENODATA;
			goto out;
		}
		si = l->next_local % l->cfg.nbatches;
		s = &l->slots[si];
		if (l->held >= l->cfg.nbatches - 1 || s->state == SLOT_HELD) {
			/* Its buffer is held by the caller: it would never come. */
			ret = -EBUSY;
			goto out;
		}
		t0 = dlc_now_ns();
		ret = 0;
		l->consumer_waited = !batch_ready(l, s);
		while (!l->stop && !l->failed && !(ready = batch_ready(l, s))) {
			if (ret == ETIMEDOUT)
				break;
			if (until)
				ret = pthread_cond_timedwait(&l->ready_cv,
							     &l->lock, until);
			else
				pthread_cond_wait(&l->ready_cv, &l->lock);
		}
		dlc_stat_add(l->stats.wait_ns, dlc_now_ns() - t0);
		if (l->stop) {
			ret = -ECANCELED;
			goto out;
		}
		if (l->failed) {
			ret = l->failed;
			goto out;
		}
		if (!ready) {
			/* Not ready in time: nothing taken, call again. */
			ret = -ETIMEDOUT;
			goto out;
		}
		l->next_local++;
		if (s->err) {
			/* Under DLC_ON_ERROR_FAIL the batch is lost with its error. */
			l->failed = s->err;
			s->state = SLOT_FREE;
			ret = s->err;
			wake_io(l);
			goto out;
		}
		if (s->b.count)
			break;
		/* Every sample of it was skipped: never hand out an empty batch. */
		s->state = SLOT_FREE;
		wake_io(l);
	}
	s->state = SLOT_HELD;
	l->held++;
	h = &l->handles[l->next_handle++ % DLC_HANDLES];
	h->b = s->b;
	h->slot = si;
	h->live = 1;
	dlc_stat_add(l->stats.batches, 1);
	*out = &h->b;
	ret = 0;
out:
	pthread_mutex_unlock(&l->lock);
	return ret;
}

int dlc_next_batch(struct dlc_loader *l, struct dlc_batch **out)
{
	return next_batch(l, out, NULL);
}

int dlc_next_batch_timeout(struct dlc_loader *l, struct dlc_batch **out,
			   uint64_t timeout_ns)
{
	uint64_t until_ns = dlc_now_ns() + timeout_ns;
	struct timespec until;

	if (until_ns < timeout_ns)
		until_ns = UINT64_MAX;	/* "forever" in nanoseconds */
	until.tv_sec = (time_t)(until_ns / 1000000000);
	until.tv_nsec = (long)(until_ns % 1000000000);
	return next_batch(l, out, &until);
}

/*
 * The live handle @b for @what (a release): -EINVAL (logged) when @b is no
 * handle of this loader. Returns with l->lock held on success only;
 * -EALREADY (logged) for a handle already released.
 */
static int lock_handle(struct dlc_loader *l, struct dlc_batch *b,
		       const char *what, struct handle **out)
{
	uintptr_t base, p = (uintptr_t)b;
	struct handle *h;

	if (!l)
		return -EINVAL;
	base = (uintptr_t)l->handles;
	/* Only a pointer into our handles is looked at, never through. */
	if (!b || p < base || p >= base + DLC_HANDLES * sizeof(*h) ||
	    (p - base) % sizeof(*h)) {
		dlc_logf(&l->log, DLC_LOG_ERROR,
			 "%s: %p is not a batch this loader handed out", what,
			 (void *)b);
		return -EINVAL;
	}
	h = &l->handles[(p - base) / sizeof(*h)];
	pthread_mutex_lock(&l->lock);
	if (!h->live) {
		pthread_mutex_unlock(&l->lock);
		dlc_logf(&l->log, DLC_LOG_ERROR,
			 "%s: batch %llu of epoch %u (%p) was already released",
			 what, (unsigned long long)h->b.seq, h->b.epoch,
			 (void *)b);
		return -EALREADY;
	}
	*out = h;
	return 0;
}

/* Called with l->lock held: the slot of live handle @h is free again. */
static void release_locked(struct dlc_loader *l, struct handle *h)
{
	h->live = 0;
	h->b.count = 0;
	h->b.data = NULL;
	h->b.labels = NULL;
	h->b.ids = NULL;
	l->slots[h->slot].state = SLOT_FREE;
	l->held--;
	wake_io(l);
}

int dlc_release_batch(struct dlc_loader *l, struct dlc_batch *b)
{
	struct handle *h;
	int ret = lock_handle(l, b, "release batch", &h);

	if (ret)
		return ret;
	release_locked(l, h);
	pthread_mutex_unlock(&l->lock);
	return 0;
}

int dlc_release_batch_keep(struct dlc_loader *l, struct dlc_batch *b,
			   void **mem, size_t *len)
{
	struct dlc_pinned fresh, kept;
	struct handle *h;
	struct slot *s;
	int ret;

	if (l && (!mem || !len)) {
		dlc_logf(&l->log, DLC_LOG_ERROR,
			 "keep batch: mem and len must not be NULL");
		return -EINVAL;
	}
	/* Checked first, so that a bad handle costs no mapping. */
	ret = lock_handle(l, b, "keep batch", &h);
	if (ret)
		return ret;
	pthread_mutex_unlock(&l->lock);
	/* Mapped and pinned outside the lock: it can take a while. */
	ret = dlc_pinned_alloc(l->slot_bytes, NULL, &fresh);
	if (ret) {
		dlc_logf(&l->log, DLC_LOG_ERROR,
			 "keep batch %llu: no memory for a new %zu MiB batch buffer; the batch stays held (copy it, then release it)",
			 (unsigned long long)h->b.seq, l->slot_bytes >> 20);
		return -ENOMEM;
	}
	ret = lock_handle(l, b, "keep batch", &h);
	if (ret) {
		dlc_pinned_free(&fresh);
		return ret;
	}
	if (!fresh.locked && l->pinned)
		dlc_pinned_warn(&l->log, fresh.bytes, fresh.lock_err);
	s = &l->slots[h->slot];
	kept = s->mem;
	s->mem = fresh;
	s->b.data = fresh.base;
	release_locked(l, h);
	ring_summary(l);
	pthread_mutex_unlock(&l->lock);
	/* The caller's now: no longer pinned, nor counted in RLIMIT_MEMLOCK. */
	dlc_pinned_unlock(&kept);
	*mem = kept.base;
	*len = kept.bytes;
	return 0;
}

void dlc_batch_data_free(void *mem, size_t len)
{
	if (mem)
		munmap(mem, len);
}

int dlc_loader_pinned(const struct dlc_loader *l)
{
	return __atomic_load_n(&l->pinned, __ATOMIC_RELAXED);
}

int dlc_loader_hugepages(const struct dlc_loader *l)
{
	return __atomic_load_n(&l->huge, __ATOMIC_RELAXED);
}

int dlc_loader_last_error(struct dlc_loader *l, struct dlc_error_info *out)
{
	int ret = -ENOENT;

	pthread_mutex_lock(&l->lock);
	if (l->have_err) {
		*out = l->last_err;
		ret = 0;
	}
	pthread_mutex_unlock(&l->lock);
	return ret;
}

int dlc_loader_stats(struct dlc_loader *l, struct dlc_stats *out, size_t size)
{
	const uint64_t *src = (const uint64_t *)&l->stats;
	struct dlc_stats st;
	uint64_t *dst = (uint64_t *)&st;
	size_t i;

	if (!out || !size || size % sizeof(uint64_t))
		return -EINVAL;
	for (i = 0; i < sizeof(st) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	/* l->lock: the I/O thread closes kc on a fallback under it. */
	pthread_mutex_lock(&l->lock);
	/* The busy span open now counts to now. */
	st.io_busy_ns = l->stats.io_busy_ns;
	if (l->busy_since)
		st.io_busy_ns += dlc_now_ns() - l->busy_since;
	if (l->kt.kc) {
		struct dlcache_stats ks;

		/* The module's view of this data set, across processes. */
		if (dlc_kclient_stats(l->kt.kc, &ks) == 0) {
			st.evictions = ks.dataset.evictions;
			st.bypasses = ks.dataset.bypasses;
			st.cache_used = ks.dataset.used_bytes;
			st.cache_capacity = ks.capacity_bytes;
		}
	}
	pthread_mutex_unlock(&l->lock);
	if (l->stage) {
		struct dlc_stage_counters sc;

		dlc_stage_counters(l->stage, &sc);
		st.staging_hits = sc.hits;
		st.staging_hit_bytes = sc.hit_bytes;
		st.staging_writes = sc.writes;
		st.staging_prefetched = sc.prefetched;
		st.staging_prefetch_bytes = sc.prefetch_bytes;
		st.staging_evictions = sc.evictions;
		st.staging_invalid = sc.invalid;
		st.staging_used = sc.used;
		st.staging_budget = sc.budget;
	}
	if (l->peer) {
		struct dlc_peer_counters pc;

		dlc_peer_counters(l->peer, &pc);
		st.cluster_local_hits = pc.local_hits;
		st.cluster_local_bytes = pc.local_bytes;
		st.cluster_peer_hits = pc.peer_hits;
		st.cluster_peer_bytes = pc.peer_bytes;
		st.cluster_peer_misses = pc.peer_misses;
		st.cluster_peer_failures = pc.peer_failures;
		st.cluster_peer_busy = pc.peer_busy;
		st.cluster_served = pc.served;
		st.cluster_served_hits = pc.served_hits;
		st.cluster_served_bytes = pc.served_bytes;
		st.cluster_pushed = pc.pushed;
		st.cluster_pushed_bytes = pc.pushed_bytes;
		st.cluster_admitted = pc.admitted;
		st.cluster_used = pc.used;
		st.cluster_capacity = pc.capacity;
		st.cluster_dead_peers = pc.dead_peers;
		st.cluster_peer_diverted = pc.peer_diverted;
	}
	/* A newer caller's counters we do not know read as zero. */
	memcpy(out, &st, size < sizeof(st) ? size : sizeof(st));
	if (size > sizeof(st))
		memset((uint8_t *)out + sizeof(st), 0, size - sizeof(st));
	return 0;
}
