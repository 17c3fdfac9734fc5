#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# kmod/style.sh KSRC KDIR KMOD_DIR: checkpatch --strict over the module
# and the uapi header, and sparse (make C=2) over the module build.
# Prints "ok style:<check>", "FAIL style:<check>" or "skip style:<check>".
#
# checkpatch runs from the extracted kernel tree KSRC (it needs its
# spelling.txt and const_structs.checkpatch). The uapi header is checked
# under the path it would have in the kernel tree, include/uapi/linux/, so
# that checkpatch applies its uapi rules (no BIT() there).
set -u
ksrc=$1
kdir=$2
kmod_dir=$3
top=$(pwd)
rc=0

mkdir -p "$kmod_dir/style/include/uapi/linux" "$kmod_dir/style/kmod"
ln -sfn "$top/uapi/dlcache.h" "$kmod_dir/style/include/uapi/linux/dlcache.h"
for f in "$kmod_dir"/style/kmod/*; do
	[ -L "$f" ] && rm -f "$f"
done
for f in "$top"/kmod/*.c "$top"/kmod/*.h; do
	ln -sfn "$f" "$kmod_dir/style/kmod/$(basename "$f")"
done
if ! tests/kunit/extract.sh "$ksrc" >/dev/null; then
	echo "skip style:checkpatch (no linux-source-6.1 for scripts/checkpatch.pl)"
elif out=$(cd "$kmod_dir/style" && "$ksrc/scripts/checkpatch.pl" --strict \
	--no-tree --show-types -q -f kmod/*.c kmod/*.h \
	include/uapi/linux/dlcache.h 2>&1) && [ -z "$out" ]; then
	echo "ok style:checkpatch"
else
	printf '%s\n' "$out"
	echo "FAIL style:checkpatch"
	rc=1
fi

if [ -z "$kdir" ] || [ ! -d "$kdir" ]; then
	echo "skip style:sparse (no kernel headers; set KDIR=)"
	exit $rc
fi
if ! command -v sparse >/dev/null 2>&1; then
	echo "skip style:sparse (sparse is not installed)"
	exit $rc
fi
kmod/shadow.sh . "$kmod_dir"
log=$(make --no-print-directory -C "$kdir" M="$(cd "$kmod_dir" && pwd)" \
	C=2 modules 2>&1)
status=$?
sp=$(printf '%s\n' "$log" | grep -E '(warning|error):')
if [ $status -eq 0 ] && [ -z "$sp" ]; then
	echo "ok style:sparse"
else
	printf '%s\n' "$log" | grep -E '(warning|error|Error)' | head -50
	echo "FAIL style:sparse"
	rc=1
fi
exit $rc
