/* SPDX-License-Identifier: MIT */
/*
 * The command-line options that map onto the library's struct dlc_config,
 * parsed in one place for every subcommand that runs the loader or its
 * transform (bench, preview, sample): one option, one name, one range and
 * one error line, whichever command takes it.
 *
 * A command picks the options it takes (CFG_OPT() bits), appends them to
 * its own getopt_long table with cfg_opts_longopts(), hands each option
 * value its own switch does not know to cfg_opt_parse(), and after the
 * command line calls cfg_opts_check(), then cfg_opts_transform(). -v is
 * --verbose wherever a command's short options name 'v'. A command that
 * wants an option narrower than the shared one (preview's --batch-size,
 * at most a sheet of 1024 tiles) keeps it among its own instead.
 */
#ifndef DLCACHECTL_CFGOPTS_H
#define DLCACHECTL_CFGOPTS_H

#include <getopt.h>
#include <stdint.h>

#include "dlcache.h"

enum cfg_opt {
	CFG_BATCH_SIZE,		/* --batch-size B */
	CFG_BACKEND,		/* --backend auto|inprocess|kernel */
	CFG_MODE,		/* --mode BITS */
	CFG_OWNER_UID,		/* --owner-uid UID|self */
	CFG_VERIFY,		/* --verify kernel|off|all */
	CFG_VALIDATE,		/* --validate once|always|off */
	CFG_FORMS,		/* --forms off|auto|decoded */
	CFG_THREADS,		/* --threads T */
	CFG_QUEUE_DEPTH,	/* --queue-depth Q */
	CFG_WINDOW,		/* --window W */
	CFG_READAHEAD,		/* --readahead BYTES|off */
	CFG_STAGING_DIR,	/* --staging-dir DIR */
	CFG_STAGING_BYTES,	/* --staging-bytes SIZE */
	CFG_CLUSTER,		/* --cluster */
	CFG_PEER_TIMEOUT,	/* --peer-timeout MS */
	CFG_NODE_GROUP,		/* --node-group NAME */
	CFG_SIZE,		/* --size S */
	CFG_LAYOUT,		/* --layout nchw|nhwc */
	CFG_EVAL,		/* --eval */
	CFG_EXACT,		/* --exact */
	CFG_SEED,		/* --seed N */
	CFG_RANK,		/* --rank R */
	CFG_WORLD,		/* --world W */
	CFG_ON_ERROR,		/* --on-error skip|substitute|fail */
	CFG_NO_DIRECT,		/* --no-direct */
	CFG_NO_PASSTHRU,	/* --no-passthru */
	CFG_VERBOSE,		/* -v, --verbose */
	CFG_NR
};

/* The bit that selects option @o in cfg_opts_longopts()'s @which. */
#define CFG_OPT(o)	(1U << (o))
#define CFG_ALL		(CFG_OPT(CFG_NR) - 1)

/*
 * What the options set: the config itself, and the transform's inputs,
 * which cfg_opts_transform() turns into cfg.transform once they are all
 * known (--eval replaces the whole transform, whatever came before it).
 */
struct cfg_opts {
	struct dlc_config cfg;
	uint32_t size;		/* --size: output side (default 224) */
	int eval;		/* --eval: Resize + CenterCrop, unshuffled */
	int exact;		/* --exact: decode at DCT scale 1 */
	int have_rank;		/* --rank or --world was given */
};

/* dlc_config_init()'s config and the options' own defaults into @o. */
void cfg_opts_init(struct cfg_opts *o);

/*
 * Copy the command's own long options @own (ended by a zeroed entry) to
 * @out, then the shared ones that @which selects, then the zeroed end.
 * @out has room for @own's entries, its end included, and CFG_NR more.
 */
void cfg_opts_longopts(struct option *out, const struct option *own,
		       unsigned int which);

/*
 * Parse option @opt (getopt_long's value) with argument @arg into @o.
 * Returns 1 if @opt is a shared option, 0 if it is not (the command's
 * own, or unknown), or -1 after usage_error()'s line on a bad value.
 */
int cfg_opt_parse(const char *cmd, int opt, const char *arg,
		  struct cfg_opts *o);

/*
 * The checks across options, once the whole command line is parsed; with
 * --cluster and no --rank/--world it takes the MPI job's. Returns 0, or
 * -1 after usage_error()'s line.
 */
int cfg_opts_check(const char *cmd, struct cfg_opts *o);

/* Set up cfg.transform from --size, --eval and --exact. */
void cfg_opts_transform(struct cfg_opts *o);

#endif
