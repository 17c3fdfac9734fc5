// SPDX-License-Identifier: MIT
/*
 * The options that map onto struct dlc_config, shared by bench, preview
 * and sample (cfgopts.h): their getopt_long entries, their parsing and
 * the checks across them.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cfgopts.h"
#include "cli.h"
#include "dlcache.h"

/*
 * getopt_long's value for option @o: past every character, so that no
 * command's own option letter can collide with a shared option.
 */
#define CFG_VAL(o)	(0x100 + (o))

#define REQ(name, o)	[o] = { name, required_argument, NULL, CFG_VAL(o) }
#define FLAG(name, o)	[o] = { name, no_argument, NULL, CFG_VAL(o) }

static const struct option cfg_long[CFG_NR] = {
	REQ("batch-size", CFG_BATCH_SIZE),
	REQ("backend", CFG_BACKEND),
	REQ("mode", CFG_MODE),
	REQ("owner-uid", CFG_OWNER_UID),
	REQ("verify", CFG_VERIFY),
	REQ("validate", CFG_VALIDATE),
	REQ("forms", CFG_FORMS),
	REQ("threads", CFG_THREADS),
	REQ("queue-depth", CFG_QUEUE_DEPTH),
	REQ("window", CFG_WINDOW),
	REQ("readahead", CFG_READAHEAD),
	REQ("staging-dir", CFG_STAGING_DIR),
	REQ("staging-bytes", CFG_STAGING_BYTES),
	FLAG("cluster", CFG_CLUSTER),
	REQ("peer-timeout", CFG_PEER_TIMEOUT),
	REQ("node-group", CFG_NODE_GROUP),
	REQ("size", CFG_SIZE),
	REQ("layout", CFG_LAYOUT),
	FLAG("eval", CFG_EVAL),
	FLAG("exact", CFG_EXACT),
	REQ("seed", CFG_SEED),
	REQ("rank", CFG_RANK),
	REQ("world", CFG_WORLD),
	REQ("on-error", CFG_ON_ERROR),
	FLAG("no-direct", CFG_NO_DIRECT),
	FLAG("no-passthru", CFG_NO_PASSTHRU),
	/* The one with a short form: its value is the letter, so -v is it. */
	[CFG_VERBOSE] = { "verbose", no_argument, NULL, 'v' },
};

void cfg_opts_init(struct cfg_opts *o)
{
	memset(o, 0, sizeof(*o));
	dlc_config_init(&o->cfg);
	o->size = 224;
}

void cfg_opts_longopts(struct option *out, const struct option *own,
		       unsigned int which)
{
	unsigned int i;

	for (; own->name; own++)
		*out++ = *own;
	for (i = 0; i < CFG_NR; i++)
		if (which & CFG_OPT(i))
			*out++ = cfg_long[i];
	memset(out, 0, sizeof(*out));
}

/* @arg as one of the names @name() gives for 0 .. @last; -EINVAL if none. */
static int parse_mode(const char *arg, const char *(*name)(uint32_t),
		      uint32_t last, uint32_t *mode)
{
	uint32_t i;

	for (i = 0; i <= last; i++)
		if (!strcmp(arg, name(i))) {
			*mode = i;
			return 0;
		}
	return -EINVAL;
}

/* --on-error's names, in enum dlc_on_error's order. */
static const char *on_error_name(uint32_t i)
{
	static const char *const names[] = { "skip", "substitute", "fail" };

	return names[i];
}

/* --readahead: a size (0: the library's default), or off. */
static int parse_readahead(const char *arg, uint64_t *out)
{
	uint64_t v;

	if (!strcasecmp(arg, "off")) {
		*out = DLC_READAHEAD_OFF;
		return 0;
	}
	if (parse_size(arg, &v) || v > DLC_READAHEAD_MAX)
		return -EINVAL;
	*out = v;
	return 0;
}

/* usage_error()'s line for a bad value of option @o; -1. */
static int bad_value(const char *cmd, int o, const char *want,
		     const char *arg)
{
	usage_error(cmd, "--%s: want %s, got '%s'", cfg_long[o].name, want, arg);
	return -1;
}

/*
 * The options that say how the loader reads, checks and caches (bench's):
 * 1, 0 if @o is none of them, -1 after the usage line.
 */
static int parse_loader_opt(const char *cmd, int o, const char *arg,
			    struct dlc_config *cfg)
{
	switch (o) {
	case CFG_BACKEND:
		if (parse_mode(arg, dlc_backend_name, DLC_BACKEND_KERNEL,
			       &cfg->backend))
			return bad_value(cmd, o, "auto, inprocess or kernel", arg);
		return 1;
	case CFG_MODE:
		if (parse_u32(arg, 0, 0666, &cfg->kernel_mode) ||
		    (cfg->kernel_mode & ~0666U))
			return bad_value(cmd, o, "permission bits like 0640", arg);
		return 1;
	case CFG_OWNER_UID:
		if (!strcmp(arg, "self"))
			cfg->kernel_owner_uid = DLC_OWNER_SELF;
		else if (parse_u32(arg, 0, UINT32_MAX - 1, &cfg->kernel_owner_uid))
			return bad_value(cmd, o, "a uid or self", arg);
		return 1;
	case CFG_VERIFY:
		if (parse_mode(arg, dlc_verify_name, DLC_VERIFY_ALL, &cfg->verify))
			return bad_value(cmd, o, "kernel, off or all", arg);
		return 1;
	case CFG_VALIDATE:
		if (parse_mode(arg, dlc_validate_name, DLC_VALIDATE_OFF,
			       &cfg->validate))
			return bad_value(cmd, o, "once, always or off", arg);
		return 1;
	case CFG_FORMS:
		if (parse_mode(arg, dlc_forms_name, DLC_FORMS_DECODED,
			       &cfg->forms))
			return bad_value(cmd, o, "off, auto or decoded", arg);
		return 1;
	case CFG_THREADS:
		if (parse_u32(arg, 1, 256, &cfg->decode_threads))
			return bad_value(cmd, o, "1..256", arg);
		return 1;
	case CFG_QUEUE_DEPTH:
		if (parse_u32(arg, 1, 4096, &cfg->queue_depth))
			return bad_value(cmd, o, "1..4096", arg);
		return 1;
	case CFG_WINDOW:
		if (parse_u32(arg, 1, 1U << 20, &cfg->window))
			return bad_value(cmd, o, "1..1048576", arg);
		return 1;
	case CFG_READAHEAD:
		if (parse_readahead(arg, &cfg->readahead_bytes))
			return bad_value(cmd, o, "a size like 64M (at most 1024G), 0 for the default, or off", arg);
		return 1;
	case CFG_STAGING_DIR:
		cfg->staging_dir = arg;
		return 1;
	case CFG_STAGING_BYTES:
		if (parse_size(arg, &cfg->staging_bytes) || !cfg->staging_bytes)
			return bad_value(cmd, o, "a size like 200G", arg);
		return 1;
	case CFG_CLUSTER:
		cfg->cluster = DLC_CLUSTER_MPI;
		return 1;
	case CFG_PEER_TIMEOUT:
		/* The library's floor: its watchdog looks every quarter. */
		if (parse_u32(arg, 100, 600000, &cfg->peer_timeout_ms))
			return bad_value(cmd, o, "100..600000 ms", arg);
		return 1;
	case CFG_NODE_GROUP:
		/* The library checks the name, and says what is wrong. */
		cfg->node_group = arg;
		return 1;
	case CFG_ON_ERROR:
		if (parse_mode(arg, on_error_name, DLC_ON_ERROR_FAIL,
			       &cfg->on_error))
			return bad_value(cmd, o, "skip, substitute or fail", arg);
		return 1;
	case CFG_NO_DIRECT:
		cfg->direct_io = 0;
		return 1;
	case CFG_NO_PASSTHRU:
		cfg->nvme_passthru = DLC_PASSTHRU_OFF;
		return 1;
	default:
		return 0;
	}
}

int cfg_opt_parse(const char *cmd, int opt, const char *arg,
		  struct cfg_opts *o)
{
	struct dlc_config *cfg = &o->cfg;
	int k = opt == 'v' ? CFG_VERBOSE : opt - CFG_VAL(0);

	if (k < 0 || k >= CFG_NR)
		return 0;
	switch (k) {
	case CFG_BATCH_SIZE:
		if (parse_u32(arg, 1, 65536, &cfg->batch_size))
			return bad_value(cmd, k, "1..65536", arg);
		return 1;
	case CFG_SIZE:
		if (parse_u32(arg, 1, DLC_MAX_OUT_SIDE, &o->size)) {
			usage_error(cmd, "--size: want 1..%d, got '%s'",
				    DLC_MAX_OUT_SIDE, arg);
			return -1;
		}
		return 1;
	case CFG_LAYOUT:
		if (!strcasecmp(arg, "nchw"))
			cfg->layout = DLC_LAYOUT_NCHW;
		else if (!strcasecmp(arg, "nhwc"))
			cfg->layout = DLC_LAYOUT_NHWC;
		else
			return bad_value(cmd, k, "nchw or nhwc", arg);
		return 1;
	case CFG_EVAL:
		o->eval = 1;
		return 1;
	case CFG_EXACT:
		o->exact = 1;
		return 1;
	case CFG_SEED:
		if (parse_u64(arg, 0, UINT64_MAX, &cfg->seed))
			return bad_value(cmd, k, "a number", arg);
		return 1;
	case CFG_RANK:
		if (parse_u32(arg, 0, 65535, &cfg->rank))
			return bad_value(cmd, k, "0..65535", arg);
		o->have_rank = 1;
		return 1;
	case CFG_WORLD:
		if (parse_u32(arg, 1, 65536, &cfg->world))
			return bad_value(cmd, k, "1..65536", arg);
		o->have_rank = 1;
		return 1;
	case CFG_VERBOSE:
		cfg->log_level = DLC_LOG_INFO;
		return 1;
	default:
		return parse_loader_opt(cmd, k, arg, cfg);
	}
}

/* The MPI job's rank and size, from what mpirun (or a PMI) exports. */
static int mpi_env(uint32_t *rank, uint32_t *world)
{
	const char *r = getenv("OMPI_COMM_WORLD_RANK");
	const char *w = getenv("OMPI_COMM_WORLD_SIZE");

	if (!r || !w) {
		r = getenv("PMI_RANK");
		w = getenv("PMI_SIZE");
	}
	if (!r || !w || parse_u32(r, 0, UINT32_MAX - 1, rank) ||
	    parse_u32(w, 1, UINT32_MAX, world))
		return -1;
	return 0;
}

int cfg_opts_check(const char *cmd, struct cfg_opts *o)
{
	struct dlc_config *cfg = &o->cfg;

	if (cfg->cluster && !o->have_rank && mpi_env(&cfg->rank, &cfg->world)) {
		usage_error(cmd, "--cluster: no --rank/--world, and no MPI job's (OMPI_COMM_WORLD_RANK/SIZE or PMI_RANK/PMI_SIZE) to take them from");
		return -1;
	}
	if (cfg->peer_timeout_ms && !cfg->cluster) {
		usage_error(cmd, "--peer-timeout needs --cluster");
		return -1;
	}
	if (cfg->rank >= cfg->world) {
		usage_error(cmd, "--rank %u must be below --world %u",
			    cfg->rank, cfg->world);
		return -1;
	}
	if (cfg->staging_bytes && !cfg->staging_dir) {
		usage_error(cmd, "--staging-bytes needs --staging-dir");
		return -1;
	}
	return 0;
}

/*
 * Eval resizes the shorter side to size * 256 / 224 (rounded), the ratio
 * of torchvision's ImageNet recipe (Resize(256) + CenterCrop(224)) at any
 * size, as dlcache.torch.DataLoader(train=False) does. Bench, preview and
 * sample set it up alike, so that each shows the others' samples.
 */
void cfg_opts_transform(struct cfg_opts *o)
{
	struct dlc_config *cfg = &o->cfg;

	if (o->eval) {
		dlc_transform_default(&cfg->transform, DLC_TRANSFORM_EVAL);
		cfg->shuffle = 0;
		cfg->transform.resize = (o->size * 256 + 112) / 224;
	}
	cfg->transform.out_w = cfg->transform.out_h = o->size;
	if (o->exact)
		cfg->transform.flags |= DLC_TRANSFORM_F_EXACT;
}
