#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/tests/kmod/dkms-test.sh DIR VERSION "KERNELS" FILES...: check dkms.conf with
# Debian's dkms for each kernel of KERNELS (6.1, 6.12: tools/build/kver.sh
# resolves them). FILES, the module's source tree, are copied to
# DIR/src/dlcache-VERSION; then dkms add, build and install run in a DKMS
# tree and an install tree of their own under DIR (--dkmstree,
# --sourcetree, --installtree, --no-depmod), so that the system's DKMS
# state and /lib/modules are not touched; the installed dlcache.ko must be
# built for that kernel (its vermagic); dkms remove --all cleans up.
# Prints "ok dkms:<kernel>", "FAIL dkms:<kernel>" or "skip dkms:<kernel>".
set -u
dir=$1
ver=$2
kernels=$3
shift 3
top=$(pwd)

if ! command -v dkms >/dev/null 2>&1; then
	rc=0
	for k in $kernels; do
		"$top"/tests/skip-required.sh "dkms:$k" "dkms is not installed: make deps" || rc=1
	done
	exit $rc
fi

rm -rf "$dir"
src=$dir/src/dlcache-$ver
mkdir -p "$src" "$dir/tree" "$dir/install"
cp --parents "$@" "$src/"
opts=(--dkmstree "$dir/tree" --sourcetree "$dir/src" --installtree "$dir/install" --no-depmod)
# No module signing: dkms would make a MOK key pair in /var/lib/dkms.
export sign_file=/nonexistent
log=$dir/dkms.log
if ! dkms add -m dlcache -v "$ver" "${opts[@]}" >"$log" 2>&1; then
	sed 's/^/# /' "$log"
	for k in $kernels; do
		echo "FAIL dkms:$k (dkms add failed)"
	done
	exit 1
fi

rc=0
for k in $kernels; do
	if ! r=$(tools/build/kver.sh "$k") || [ ! -d "/lib/modules/$r/build" ]; then
		"$top"/tests/skip-required.sh "dkms:$k" "no headers for $k: make deps" || rc=1
		continue
	fi
	t0=$(date +%s)
	klog=$dir/dkms-$r.log
	mkdir -p "$dir/install/$r"	# dkms installs only onto an existing kernel
	if dkms build -m dlcache -v "$ver" -k "$r" "${opts[@]}" >"$klog" 2>&1 &&
	   dkms install -m dlcache -v "$ver" -k "$r" "${opts[@]}" >>"$klog" 2>&1; then
		ko=$(find "$dir/install/$r" -name 'dlcache.ko*' 2>/dev/null | head -n 1)
		vm=$( [ -n "$ko" ] && modinfo -F vermagic "$ko" 2>/dev/null | cut -d' ' -f1)
		if [ "$vm" = "$r" ]; then
			echo "# dkms: dlcache $ver for $r in $(( $(date +%s) - t0 ))s: ${ko#"$dir"/install}"
			echo "ok dkms:$k"
		else
			echo "# dkms: installed module ${ko:-(none)} has vermagic '${vm}', want $r"
			echo "FAIL dkms:$k"
			rc=1
		fi
	else
		tail -n 30 "$klog" | sed 's/^/# /'
		mlog=$(find "$dir/tree" -name make.log -path "*$r*" | head -n 1)
		[ -z "$mlog" ] || grep -E 'error|Error' "$mlog" | head -n 20 | sed 's/^/# /'
		echo "FAIL dkms:$k"
		rc=1
	fi
done

dkms remove -m dlcache -v "$ver" --all "${opts[@]}" >>"$log" 2>&1 || {
	echo "# dkms remove --all failed; see $log"
	rc=1
}
if find "$dir/install" -name 'dlcache.ko*' | grep -q .; then
	echo "# dkms remove --all left a module behind in $dir/install"
	rc=1
fi
cd "$top" || exit 1
exit $rc
