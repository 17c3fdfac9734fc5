// SPDX-License-Identifier: MIT
/*
 * dlcachectl index DIR -o FILE: walk an ImageFolder tree once and save the
 * index every rank then loads.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "dlcache.h"

static const char index_usage[] =
	"usage: dlcachectl index DIR -o FILE\n"
	"\n"
	"Index the ImageFolder data set DIR (one subdirectory per class, image\n"
	"files by torchvision's extensions) and save it to FILE, atomically.\n"
	"\n"
	"  -o, --output FILE   index file to write\n"
	"  -h, --help          show this help\n";

int cmd_index(int argc, char **argv)
{
	const char *dir = NULL, *out = NULL;
	struct dlc_index *idx;
	uint64_t key[2];
	int i, ret, opts = 1;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (opts && (!strcmp(a, "-h") || !strcmp(a, "--help"))) {
			fputs(index_usage, stdout);
			return 0;
		} else if (opts && (!strcmp(a, "-o") || !strcmp(a, "--output"))) {
			if (i + 1 >= argc)
				return usage_error("index", "%s needs a file", a);
			if (out)
				return usage_error("index", "more than one output");
			out = argv[++i];
		} else if (opts && !strncmp(a, "--output=", 9)) {
			if (out)
				return usage_error("index", "more than one output");
			out = a + 9;
		} else if (opts && !strcmp(a, "--")) {
			opts = 0;
		} else if (opts && a[0] == '-' && a[1]) {
			return usage_error("index", "unknown option '%s'", a);
		} else if (!dir) {
			dir = a;
		} else {
			return usage_error("index", "unexpected argument '%s'", a);
		}
	}
	if (!dir)
		return usage_error("index", "missing DIR (try --help)");
	if (!out || !*out)
		return usage_error("index", "missing -o FILE (try --help)");
	if (!*dir)
		return usage_error("index", "empty DIR");

	ret = dlc_index_build(dir, &idx);
	if (ret)
		return fail("index", "%s: %s", dir, index_error(ret));
	ret = dlc_index_save(idx, out);
	if (ret) {
		dlc_index_free(idx);
		return fail("index", "%s: %s", out, strerror(-ret));
	}
	dlc_index_key(idx, key);
	printf("%s: %u samples, %u classes, %llu bytes, key %016llx%016llx\n",
	       out, dlc_index_count(idx), dlc_index_num_classes(idx),
	       (unsigned long long)dlc_index_total_bytes(idx),
	       (unsigned long long)key[0], (unsigned long long)key[1]);
	dlc_index_free(idx);
	return 0;
}
