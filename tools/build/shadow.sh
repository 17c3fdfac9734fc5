#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# kmod/shadow.sh SRC DEST: make DEST a tree of symlinks to the files the
# module build needs, so that kbuild writes its objects under DEST and not
# into the source tree. Run again after adding a file: stale links to
# removed files are deleted.
set -eu
src=$(cd "$1" && pwd)
dest=$2
mkdir -p "$dest/kmod" "$dest/uapi" "$dest/libdlcache/cache"
# libdlcache/*.[ch]: the links of a tree made before the library had a
# folder per layer (policy.[ch] were at libdlcache/ then).
for l in "$dest"/kmod/*.[ch] "$dest"/uapi/*.h "$dest"/libdlcache/*.[ch] \
	 "$dest"/libdlcache/cache/*.[ch]; do
	[ -L "$l" ] && [ ! -e "$l" ] && rm -f "$l"
done
ln -sfn "$src/Kbuild" "$dest/Kbuild"
for f in "$src"/kmod/*.c "$src"/kmod/*.h; do
	[ -e "$f" ] && ln -sfn "$f" "$dest/kmod/$(basename "$f")"
done
ln -sfn "$src/uapi/dlcache.h" "$dest/uapi/dlcache.h"
ln -sfn "$src/libdlcache/cache/policy.c" "$dest/libdlcache/cache/policy.c"
ln -sfn "$src/libdlcache/cache/policy.h" "$dest/libdlcache/cache/policy.h"
exit 0
