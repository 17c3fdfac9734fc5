/* SPDX-License-Identifier: MIT */
/*
 * The index's in-memory form (index.c), shared with the two ways one is
 * made from outside the process: walking a tree of class folders
 * (indexwalk.c) and reading the index file (indexfile.c, which also
 * writes it). A file each because each is an idea of its own, with its own
 * failure modes: the walk is torchvision's semantics over a live file
 * system, the file is a parser of untrusted bytes.
 * Not for anything else: the public face is dlcache.h's dlc_index_*.
 */
#ifndef DLC_INDEX_INT_H
#define DLC_INDEX_INT_H

#include <stddef.h>
#include <stdint.h>

#include "dlcache.h"

struct dlc_pack;

/* Keeps sample IDs and the policy's positions comfortably in 32 bits. */
#define IDX_MAX_SAMPLES		DLC_INDEX_MAX_SAMPLES
#define IDX_MAX_CLASSES		IDX_MAX_SAMPLES

/*
 * Format 1: "label size path" per sample. Format 2 adds each sample's
 * CRC-32C: "label size crc path", crc as 8 lowercase hex digits, or "-"
 * when the file could not be read at indexing. Format 1 still loads, with
 * every checksum absent, and is what such an index saves as again.
 */
#define IDX_MAGIC_V1		"dlcache-index 1"
#define IDX_MAGIC_V2		"dlcache-index 2"
/*
 * The key hashes this, whatever the format: checksums are not part of the
 * key, so an index of format 1 and one of format 2 over the same files
 * name the same data set.
 */
#define IDX_KEY_MAGIC		IDX_MAGIC_V1

struct dlc_index {
	char *root;
	char *arena;		/* class names, then relpaths, NUL-terminated */
	size_t *class_off;	/* nclasses offsets into arena */
	size_t *path_off;	/* count offsets into arena */
	int32_t *labels;
	uint64_t *sizes;
	uint32_t *crcs;		/* CRC-32C of each sample's bytes */
	uint8_t *has_crc;	/* per sample: crcs[] is valid */
	uint32_t count;
	uint32_t nclasses;
	uint64_t total;
	uint64_t key[2];
	struct dlc_pack *pack;	/* loaded from a pack: its reader, else NULL */
};

/* ---- index.c ---- */

/* The data set's key: SipHash-2-4 over classes and samples, not the root. */
void dlc_index_compute_key(const struct dlc_index *idx, uint64_t key[2]);
/*
 * Grow the array *@pp of *@cap elements of @elem bytes to hold @need;
 * 0 or -ENOMEM (the array is then as it was).
 */
int dlc_index_grow(void *pp, size_t *cap, size_t need, size_t elem);
/* The per-sample and per-class arrays for idx->count and idx->nclasses. */
int dlc_index_alloc_arrays(struct dlc_index *idx);
/*
 * The samples' order within a class, torchvision's: relpaths @a and @b
 * with directory parts @adir and @bdir bytes long (dlc_index_dir_len()).
 */
int dlc_index_path_cmp(const char *a, size_t adir, const char *b,
		       size_t bdir);
size_t dlc_index_dir_len(const char *path);
/* @idx (fresh, zeroed) becomes the index over the pack at @path. */
int dlc_index_load_pack(const char *path, struct dlc_index *idx);

#endif /* DLC_INDEX_INT_H */
