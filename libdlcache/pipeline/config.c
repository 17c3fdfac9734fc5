// SPDX-License-Identifier: MIT
/*
 * The loader's config (dlcache.h's struct dlc_config): its defaults, the
 * names of its modes, and the checks a caller's config passes before a
 * loader is made of it. No state: every function here is pure.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "config.h"
#include "internal.h"
#include "nodeshare.h"

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

const char *dlc_forms_name(uint32_t forms)
{
	static const char *const names[] = { "off", "auto", "decoded" };

	return forms <= DLC_FORMS_DECODED ? names[forms] : "?";
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

int dlc_config_check(const struct dlc_config *c, const struct dlc_logger *log)
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
	if (c->forms > DLC_FORMS_DECODED)
		BAD("forms", "must be DLC_FORMS_OFF, _AUTO or _DECODED, got %u",
		    c->forms);
	if (c->pad3)
		BAD("pad3", "must be zero");
	if (c->node_group && dlc_node_name_check(c->node_group))
		BAD("node_group", "want 1..%u bytes of [A-Za-z0-9._-], not starting with '.'",
		    DLC_NODE_NAME_MAX);
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
_Static_assert(offsetof(struct dlc_config, node_group) == DLC_CONFIG_SIZE_VER1,
	       "DLC_CONFIG_SIZE_VER1");
_Static_assert(offsetof(struct dlc_config, forms) == DLC_CONFIG_SIZE_VER2,
	       "DLC_CONFIG_SIZE_VER2");
_Static_assert(sizeof(struct dlc_config) == DLC_CONFIG_SIZE_VER3,
	       "struct dlc_config size");

/* Largest config size looked at: bytes past ours up to it must be zero. */
#define DLC_CONFIG_SIZE_MAX	4096

/*
 * Take the caller's config of in->size bytes into @c (ours): fields past
 * its size keep their dlc_config_init() defaults; bytes past ours, from a
 * newer caller, must be zero (a field this library does not know).
 */
int dlc_config_take(const struct dlc_config *in, struct dlc_config *c,
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


const char *dlc_backend_name(uint32_t backend)
{
	static const char *const names[] = { "auto", "inprocess", "kernel" };

	return backend <= DLC_BACKEND_KERNEL ? names[backend] : "?";
}
