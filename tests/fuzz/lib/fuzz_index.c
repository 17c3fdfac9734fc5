// SPDX-License-Identifier: MIT
/*
 * Fuzz harness: an index file (indexfile.c's text formats 1 and 2; a file
 * with the pack magic goes to the pack reader, which fuzz_pack covers
 * with its CRCs fixed) loaded with dlc_index_load() and with a root given
 * at load (dlc_index_load_at()), every accessor called on what loaded,
 * and one invariant: an index that loads saves, and loads back the same
 * (count, classes, key, every sample's label, size, checksum and path).
 */
#include "harness.h"

#include "dlcache.h"
#include "internal.h"
#include "pack.h"

static char path[128], saved[128];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(path, sizeof(path), "%s/input.idx", fuzz_dir());
	snprintf(saved, sizeof(saved), "%s/saved.idx", fuzz_dir());
	atexit(fuzz_remove_dir_at_exit);
	return 0;
}

static void walk(const struct dlc_index *idx)
{
	uint32_t i, crc;

	for (i = 0; i < dlc_index_num_classes(idx); i++)
		if (!dlc_index_class_name(idx, i))
			abort();
	for (i = 0; i < dlc_index_count(idx); i++) {
		if (!dlc_index_relpath(idx, i))
			abort();
		dlc_index_crc32c(idx, i, &crc);
	}
	dlc_index_root(idx);
	dlc_index_total_bytes(idx);
}

static void same(const struct dlc_index *a, const struct dlc_index *b)
{
	uint64_t ka[2], kb[2];
	uint32_t i, ca, cb;
	int ha, hb;

	dlc_index_key(a, ka);
	dlc_index_key(b, kb);
	if (dlc_index_count(a) != dlc_index_count(b) ||
	    dlc_index_num_classes(a) != dlc_index_num_classes(b) ||
	    memcmp(ka, kb, sizeof(ka)) ||
	    strcmp(dlc_index_root(a), dlc_index_root(b)))
		abort();
	for (i = 0; i < dlc_index_num_classes(a); i++)
		if (strcmp(dlc_index_class_name(a, i),
			   dlc_index_class_name(b, i)))
			abort();
	for (i = 0; i < dlc_index_count(a); i++) {
		ha = dlc_index_crc32c(a, i, &ca);
		hb = dlc_index_crc32c(b, i, &cb);
		if (dlc_index_label(a, i) != dlc_index_label(b, i) ||
		    dlc_index_size(a, i) != dlc_index_size(b, i) ||
		    ha != hb || (!ha && ca != cb) ||
		    strcmp(dlc_index_relpath(a, i), dlc_index_relpath(b, i)))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dlc_index *idx, *back;

	fuzz_write(path, data, size);
	if (!dlc_index_load(path, &idx)) {
		walk(idx);
		if (!dlc_index_pack(idx)) {
			if (dlc_index_save(idx, saved))
				abort();
			if (dlc_index_load(saved, &back))
				abort();	/* what we wrote does not load */
			same(idx, back);
			dlc_index_free(back);
		}
		dlc_index_free(idx);
	}
	if (!dlc_index_load_at(path, "/fuzz/root", &idx)) {
		walk(idx);
		dlc_index_free(idx);
	}
	return 0;
}
