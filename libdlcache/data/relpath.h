/* SPDX-License-Identifier: MIT */
/*
 * The index's own checks of a name read from a file (relpath.c), shared
 * with the pack reader: a class name (@len bytes) is not empty, ".", ".."
 * and holds no '/'; a relpath stays under the root (no absolute path, no
 * empty, "." or ".." component, at least "class/file"). 1 when valid.
 */
#ifndef DLC_RELPATH_H
#define DLC_RELPATH_H

#include <stddef.h>

int dlc_index_class_name_ok(const char *s, size_t len);
int dlc_index_relpath_ok(const char *s);

#endif /* DLC_RELPATH_H */
