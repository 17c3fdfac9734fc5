// SPDX-License-Identifier: MIT
/* Loaders side by side (loadercmp.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loadercmp.h"
#include "packwrite.h"
#include "testutil.h"

int t_make_mixed_set(const char *root, uint32_t per_class)
{
	char path[8192];
	uint8_t *j;
	size_t len;

	if (t_make_dataset(root, 3, per_class))
		return -1;
	j = t_make_jpeg(203, 157, 99, 1, 90, &len);
	snprintf(path, sizeof(path), "%s/class01/gray.jpg", root);
	if (!j || t_write_file(path, j, len)) {
		free(j);
		return -1;
	}
	free(j);
	j = t_make_jpeg(150, 140, 5, 0, 90, &len);
	snprintf(path, sizeof(path), "%s/class02/zcut.jpg", root);
	if (!j || t_write_file(path, j, len * 2 / 3)) {
		free(j);
		return -1;
	}
	free(j);
	return 0;
}

int t_pack_tree(const struct dlc_index *src, const char *root,
		const char *packpath)
{
	struct dlc_packw_opts o = { 0 };
	struct dlc_packw *w = NULL;
	uint32_t i, n = dlc_index_count(src);
	char why[256], path[8192];
	uint8_t *b;
	size_t len;

	if (dlc_packw_create(packpath, src, &o, &w, why, sizeof(why))) {
		fprintf(stderr, "pack %s: %s\n", packpath, why);
		return -1;
	}
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", root,
			 dlc_index_relpath(src, i));
		b = t_read_file(path, &len);
		if (!b || dlc_packw_add_source(w, i, b, len, why,
					       sizeof(why)) < 0) {
			fprintf(stderr, "pack %s: %s: %s\n", packpath, path,
				b ? why : "cannot read it");
			free(b);
			dlc_packw_abort(w);
			return -1;
		}
		free(b);
	}
	if (dlc_packw_finish(w, why, sizeof(why))) {
		fprintf(stderr, "pack %s: %s\n", packpath, why);
		return -1;
	}
	return 0;
}

uint32_t t_same_epoch(struct dlc_loader *a, struct dlc_loader *b,
		      uint32_t epoch, size_t sample_bytes, const char *what)
{
	uint32_t nb = 0, diff = 0;
	struct dlc_batch *x, *y;
	int rx, ry;

	CHECK_EQ(dlc_loader_start_epoch(a, epoch, 0), 0);
	CHECK_EQ(dlc_loader_start_epoch(b, epoch, 0), 0);
	for (;;) {
		rx = dlc_next_batch(a, &x);
		ry = dlc_next_batch(b, &y);
		CHECK(rx == ry, "%s: epoch %u batch %u: %d vs %d", what, epoch,
		      nb, rx, ry);
		if (rx || ry)
			break;
		CHECK(x->count == y->count, "%s: epoch %u batch %u: %u vs %u samples",
		      what, epoch, nb, x->count, y->count);
		if (x->count == y->count &&
		    (memcmp(x->ids, y->ids, x->count * sizeof(*x->ids)) ||
		     memcmp(x->labels, y->labels, x->count * sizeof(*x->labels)) ||
		     memcmp(x->data, y->data, x->count * sample_bytes)))
			diff++;
		nb++;
		dlc_release_batch(a, x);
		dlc_release_batch(b, y);
	}
	CHECK(rx == -ENODATA && ry == -ENODATA, "%s: epoch %u ends: %d %d",
	      what, epoch, rx, ry);
	CHECK(diff == 0, "%s: epoch %u: %u of %u batches differ", what, epoch,
	      diff, nb);
	return nb;
}
