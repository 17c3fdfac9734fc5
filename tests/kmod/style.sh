#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# tests/kmod/style.sh KSRC BUILD "KERNELS" [KDIR]: checkpatch --strict over the
# module and the uapi header, once (kmod/compat.h may test
# LINUX_VERSION_CODE), and sparse (make C=2) over the module
# build for each kernel of KERNELS that has headers (6.1, 6.12, ... as
# tools/build/kver.sh resolves them), or only against KDIR when it is given.
# Prints "ok style:<check>", "FAIL style:<check>" or "skip style:<check>";
# the sparse checks are named style:sparse-<kernel>.
#
# checkpatch runs from KSRC, the kernel tree's scripts/ extracted (it needs its
# spelling.txt and const_structs.checkpatch). The uapi header is checked
# under the path it would have in the kernel tree, include/uapi/linux/, so
# that checkpatch applies its uapi rules (no BIT() there).
set -u
ksrc=$1
build=$2
kernels=$3
kdir=${4:-}
top=$(pwd)
rc=0

sdir=$build/style
mkdir -p "$sdir/include/uapi/linux" "$sdir/kmod"
for f in "$sdir"/kmod/*; do
	[ -L "$f" ] && rm -f "$f"
done
for f in "$top"/kmod/*.c "$top"/kmod/*.h; do
	ln -sfn "$f" "$sdir/kmod/$(basename "$f")"
done
# kmod/compat.h is the one place that tests LINUX_VERSION_CODE, which
# checkpatch rightly flags in code meant for the kernel tree itself.
checkpatch() {
	(cd "$sdir" && "$ksrc/scripts/checkpatch.pl" --strict --no-tree \
		--show-types -q -f "$@" 2>&1)
}
# The ioctl table (DLCACHE_IOCTLS) is an X-macro list: a body of X(...)
# lines that checkpatch calls a complex macro reusing its argument, as it
# does bpf.h's __BPF_FUNC_MAPPER. The header is checked whole but for
# that one definition, which the build checks (dlc_check_abi()).
rm -f "$sdir/include/uapi/linux/dlcache.h"
sed '/^#define DLCACHE_IOCTLS(X)/,/^[^\\]*$/d' "$top/uapi/dlcache.h" \
	> "$sdir/include/uapi/linux/dlcache.h"
files=
for f in kmod/*.c kmod/*.h; do
	[ "$f" = kmod/compat.h ] || files="$files $f"
done
# shellcheck disable=SC2086 # $files: kmod/ names without blanks
if ! tests/kmod/extract.sh "$ksrc" scripts >/dev/null; then
	"$top"/tests/skip-required.sh style:checkpatch "no linux-source-6.1 for scripts/checkpatch.pl: make deps" || rc=1
elif out=$(checkpatch $files include/uapi/linux/dlcache.h) && [ -z "$out" ] &&
	out=$(checkpatch --ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON \
		kmod/compat.h) && [ -z "$out" ]; then
	echo "ok style:checkpatch"
else
	printf '%s\n' "$out"
	echo "FAIL style:checkpatch"
	rc=1
fi

# sparse NAME KDIR KMOD_DIR
sparse_check() {
	name=$1
	dir=$2
	kmod_dir=$3
	if [ ! -f "$dir/Makefile" ]; then
		"$top"/tests/skip-required.sh "style:sparse-$name" "no kernel headers at $dir: make deps" || rc=1
		return
	fi
	tools/build/shadow.sh . "$kmod_dir"
	log=$(make --no-print-directory -C "$dir" M="$(cd "$kmod_dir" && pwd)" \
		C=2 modules 2>&1)
	status=$?
	sp=$(printf '%s\n' "$log" | grep -E '(warning|error):')
	if [ $status -eq 0 ] && [ -z "$sp" ]; then
		echo "ok style:sparse-$name"
	else
		printf '%s\n' "$log" | grep -E '(warning|error|Error)' | head -50
		echo "FAIL style:sparse-$name"
		rc=1
	fi
}

if ! command -v sparse >/dev/null 2>&1; then
	"$top"/tests/skip-required.sh style:sparse "sparse is not installed: make deps" || rc=1
elif [ -n "$kdir" ]; then
	r=$(tools/build/kver.sh --kdir "$kdir")
	sparse_check "$r" "$kdir" "$build/kmod-$r"
else
	for k in $kernels; do
		if ! r=$(tools/build/kver.sh "$k") || [ ! -d "/lib/modules/$r/build" ]; then
			"$top"/tests/skip-required.sh "style:sparse-$k" "no headers for $k: make deps" || rc=1
			continue
		fi
		sparse_check "$k" "/lib/modules/$r/build" "$build/kmod-$r"
	done
fi
exit $rc
