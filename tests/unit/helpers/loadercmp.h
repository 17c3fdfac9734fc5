/* SPDX-License-Identifier: MIT */
/*
 * Loaders side by side (loadercmp.c): a pack of a tree's samples, and an
 * epoch of two loaders compared batch by batch. For test_packload and
 * test_forms, which hold one way of loading to another.
 */
#ifndef DLC_TEST_LOADERCMP_H
#define DLC_TEST_LOADERCMP_H

#include <stddef.h>
#include <stdint.h>

#include "dlcache.h"

/*
 * t_make_dataset()'s 3 classes of @per_class JPEGs under @root, and two
 * more: class01/gray.jpg (one component, odd sizes) and class02/zcut.jpg
 * (cut to two thirds: the decode rejects it as truncated). 0 or -1.
 */
int t_make_mixed_set(const char *root, uint32_t per_class);

/*
 * Write the pack @packpath of every sample of @src, whose files are under
 * @root: 0, or -1 after a line on stderr saying why.
 */
int t_pack_tree(const struct dlc_index *src, const char *root,
		const char *packpath);

/*
 * Start @epoch on both loaders and compare every batch (ids, labels, the
 * @sample_bytes of each sample); a difference fails a CHECK naming
 * @what. Returns the batches compared.
 */
uint32_t t_same_epoch(struct dlc_loader *a, struct dlc_loader *b,
		      uint32_t epoch, size_t sample_bytes, const char *what);

#endif
