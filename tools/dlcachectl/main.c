// SPDX-License-Identifier: MIT
/*
 * dlcachectl: generate, index, benchmark and inspect dlcache data sets.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "gen", cmd_gen, "generate an ImageNet-like JPEG data set" },
	{ "index", cmd_index, "index an ImageFolder directory into a file" },
	{ "pack", cmd_pack, "pack a data set into one .dlp file for MCU-exact crops" },
	{ "bench", cmd_bench, "run the loader for some epochs and report rates" },
	{ "decode", cmd_decode, "fully decode one JPEG to a PPM file" },
	{ "preview", cmd_preview, "contact sheet of one batch as the model sees it" },
	{ "sample", cmd_sample, "one transformed sample and its crop box, to check by hand" },
	{ "decodebench", cmd_decodebench, "decode limits: full and crop-first, from memory" },
	{ "readbench", cmd_readbench, "the read path alone: a pack's samples, reads/s and CPU a read" },
	{ "whatif", cmd_whatif, "hit ratio and bytes read against the cache's size" },
	{ "stats", cmd_stats, "counters of the node's cache (/dev/dlcache)" },
	{ "watch", cmd_watch, "live rates of the node's cache" },
	{ "datasets", cmd_datasets, "list the data sets the node's cache holds" },
	{ "capacity", cmd_capacity, "print or set the node's cache capacity (root)" },
	{ "drop", cmd_drop, "evict the cached samples, all or of one data set (root)" },
	{ "drain", cmd_drain, "ask every user of the node's cache to let go, for rmmod (root)" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: dlcachectl COMMAND [ARGS]\n\ncommands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'dlcachectl COMMAND --help' describes each one; "
		"'dlcachectl --version' prints the version.\n");
}

/*
 * The command's output written out before exit() runs the library's exit
 * handlers (cluster mode's MPI_Finalize() waits for every rank, a hung one
 * too), and a failed write (a full disk) an error, not a lost report.
 */
static int flushed(int rc)
{
	if (fflush(stdout)) {
		fprintf(stderr, "dlcachectl: writing the output: %s\n",
			strerror(errno));
		return rc ? rc : 1;
	}
	return rc;
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		fprintf(stderr, "dlcachectl: no command given (try --help)\n");
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help"))
		return usage(stdout), 0;
	if (!strcmp(argv[1], "--version")) {
		printf("dlcachectl %s\n", DLCACHE_VERSION);
		return 0;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return flushed(commands[i].fn(argc - 1, argv + 1));
	fprintf(stderr, "dlcachectl: unknown command '%s' (try --help)\n", argv[1]);
	return EXIT_USAGE;
}
