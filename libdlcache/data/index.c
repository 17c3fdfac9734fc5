// SPDX-License-Identifier: MIT
/*
 * The index: the samples of an ImageFolder data set, in memory. Made by
 * walking the tree the way torchvision.datasets.ImageFolder does
 * (indexwalk.c), read from the text file it is kept in so that every rank
 * trains on the same list without walking again (indexfile.c), or taken
 * from a pack's records (here, at the end). This file holds what all of
 * them share: the arrays, the data set's key, the samples' order, and the
 * accessors that the loader and the tools read an index through.
 *
 * All strings (class names, then relative paths) live in one arena; the
 * per-sample arrays hold offsets, labels and sizes, so a million samples
 * cost about 20 bytes each plus their paths.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dlcache.h"
#include "index_int.h"
#include "internal.h"
#include "pack.h"
#include "siphash.h"

/* ------------------------------------------------------------------ */
/* Key: SipHash-2-4 (siphash.c) over the whole index                  */
/* ------------------------------------------------------------------ */

/*
 * Every string goes in with its length first, so no two different indexes
 * serialise to the same bytes. The root is left out on purpose: the same
 * files moved or mounted elsewhere are the same data set.
 */
void dlc_index_compute_key(const struct dlc_index *idx, uint64_t key[2])
{
	struct dlc_sip s;
	uint32_t i;

	dlc_sip_init(&s, DLC_SIP_K0, DLC_SIP_K1);
	dlc_sip_update(&s, IDX_KEY_MAGIC, sizeof(IDX_KEY_MAGIC) - 1);
	dlc_sip_u32(&s, idx->nclasses);
	for (i = 0; i < idx->nclasses; i++) {
		const char *name = idx->arena + idx->class_off[i];
		size_t len = strlen(name);

		dlc_sip_u64(&s, len);
		dlc_sip_update(&s, name, len);
	}
	dlc_sip_u32(&s, idx->count);
	for (i = 0; i < idx->count; i++) {
		const char *path = idx->arena + idx->path_off[i];
		size_t len = strlen(path);

		dlc_sip_u64(&s, len);
		dlc_sip_update(&s, path, len);
		dlc_sip_u32(&s, (uint32_t)idx->labels[i]);
		dlc_sip_u64(&s, idx->sizes[i]);
	}
	dlc_sip_final(&s, key);
	key[1] = (key[1] & ~(uint64_t)UINT32_MAX) | idx->count;
}

/* ------------------------------------------------------------------ */
/* Memory                                                             */
/* ------------------------------------------------------------------ */

int dlc_index_grow(void *pp, size_t *cap, size_t need, size_t elem)
{
	void **p = pp;
	size_t ncap = *cap ? *cap : 16;
	void *np;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elem)
		return -ENOMEM;
	np = realloc(*p, ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

int dlc_index_alloc_arrays(struct dlc_index *idx)
{
	idx->class_off = calloc(idx->nclasses ? idx->nclasses : 1,
				sizeof(*idx->class_off));
	idx->path_off = calloc(idx->count, sizeof(*idx->path_off));
	idx->labels = calloc(idx->count, sizeof(*idx->labels));
	idx->sizes = calloc(idx->count, sizeof(*idx->sizes));
	idx->crcs = calloc(idx->count, sizeof(*idx->crcs));
	idx->has_crc = calloc(idx->count, 1);
	if (!idx->class_off || !idx->path_off || !idx->labels || !idx->sizes ||
	    !idx->crcs || !idx->has_crc)
		return -ENOMEM;
	return 0;
}

void dlc_index_free(struct dlc_index *idx)
{
	if (!idx)
		return;
	free(idx->root);
	free(idx->arena);
	free(idx->class_off);
	free(idx->path_off);
	free(idx->labels);
	free(idx->sizes);
	free(idx->crcs);
	free(idx->has_crc);
	dlc_pack_close(idx->pack);
	free(idx);
}

/* ------------------------------------------------------------------ */
/* The samples' order: the walk's, and what a loaded file must have   */
/* ------------------------------------------------------------------ */

/*
 * torchvision orders samples as sorted(os.walk(class_dir)) and then sorted
 * file names: by the directory path as a whole, then by the name. That is
 * not the order of the joined paths ("c/x/z" < "c/x y/a" bytewise, but
 * directory "c/x" sorts before "c/x y"), so compare the parts separately.
 */
int dlc_index_path_cmp(const char *a, size_t adir, const char *b,
		       size_t bdir)
{
	size_t n = adir < bdir ? adir : bdir;
	int c = memcmp(a, b, n);

	if (c)
		return c;
	if (adir != bdir)
		return adir < bdir ? -1 : 1;
	return strcmp(a + adir + 1, b + bdir + 1);
}

/* Length of the directory part of a relpath (it always has one). */
size_t dlc_index_dir_len(const char *path)
{
	return (size_t)(strrchr(path, '/') - path);
}

/* ------------------------------------------------------------------ */
/* Accessors                                                          */
/* ------------------------------------------------------------------ */

uint32_t dlc_index_count(const struct dlc_index *idx)
{
	return idx->count;
}

uint32_t dlc_index_num_classes(const struct dlc_index *idx)
{
	return idx->nclasses;
}

const char *dlc_index_root(const struct dlc_index *idx)
{
	return idx->root;
}

const char *dlc_index_class_name(const struct dlc_index *idx, uint32_t c)
{
	if (c >= idx->nclasses)
		return NULL;
	return idx->arena + idx->class_off[c];
}

const char *dlc_index_relpath(const struct dlc_index *idx, uint32_t id)
{
	if (id >= idx->count)
		return NULL;
	return idx->arena + idx->path_off[id];
}

int32_t dlc_index_label(const struct dlc_index *idx, uint32_t id)
{
	if (id >= idx->count)
		return -1;
	return idx->labels[id];
}

uint64_t dlc_index_size(const struct dlc_index *idx, uint32_t id)
{
	if (id >= idx->count)
		return 0;
	return idx->sizes[id];
}

int dlc_index_sample_size(const struct dlc_index *idx, uint32_t id,
			  uint64_t *size)
{
	if (id >= idx->count)
		return -ERANGE;
	*size = idx->sizes[id];
	return 0;
}

uint64_t dlc_index_total_bytes(const struct dlc_index *idx)
{
	return idx->total;
}

int dlc_index_crc32c(const struct dlc_index *idx, uint32_t id, uint32_t *crc)
{
	if (id >= idx->count)
		return -EINVAL;
	if (!idx->has_crc[id])
		return -ENODATA;
	*crc = idx->crcs[id];
	return 0;
}

void dlc_index_key(const struct dlc_index *idx, uint64_t key[2])
{
	key[0] = idx->key[0];
	key[1] = idx->key[1];
}

/* ------------------------------------------------------------------ */
/* A pack as an index                                                 */
/* ------------------------------------------------------------------ */

const struct dlc_pack *dlc_index_pack(const struct dlc_index *idx)
{
	return idx ? idx->pack : NULL;
}

/*
 * The index over pack @p (taken over by it): names, labels, sizes and
 * checksums from its records, the root the pack's own path.
 */
static int index_from_pack(struct dlc_index *idx, struct dlc_pack *p)
{
	struct dlc_pack_entry e;
	size_t need = 0, pos = 0, len;
	uint32_t i;

	idx->pack = p;
	idx->root = realpath(dlc_pack_path(p), NULL);
	if (!idx->root)
		return -errno;
	idx->count = dlc_pack_count(p);
	idx->nclasses = dlc_pack_num_classes(p);
	if (dlc_index_alloc_arrays(idx))
		return -ENOMEM;
	for (i = 0; i < idx->nclasses; i++)
		need += strlen(dlc_pack_class_name(p, i)) + 1;
	for (i = 0; i < idx->count; i++) {
		dlc_pack_entry(p, i, &e);
		need += strlen(e.path) + 1;
	}
	idx->arena = malloc(need ? need : 1);
	if (!idx->arena)
		return -ENOMEM;
	for (i = 0; i < idx->nclasses; i++) {
		const char *name = dlc_pack_class_name(p, i);

		len = strlen(name) + 1;
		memcpy(idx->arena + pos, name, len);
		idx->class_off[i] = pos;
		pos += len;
	}
	idx->total = 0;
	for (i = 0; i < idx->count; i++) {
		dlc_pack_entry(p, i, &e);
		len = strlen(e.path) + 1;
		memcpy(idx->arena + pos, e.path, len);
		idx->path_off[i] = pos;
		pos += len;
		idx->labels[i] = e.label;
		idx->sizes[i] = e.len;
		idx->crcs[i] = e.crc;
		idx->has_crc[i] = 1;
		idx->total += e.len;
	}
	dlc_pack_key(p, idx->key);
	return 0;
}

int dlc_index_load_pack(const char *path, struct dlc_index *idx)
{
	struct dlc_pack *p;
	int ret;

	ret = dlc_pack_open(path, &p, NULL, 0);
	if (ret)
		return ret;
	return index_from_pack(idx, p);
}
