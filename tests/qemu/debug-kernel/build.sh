#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/qemu/debug-kernel/build.sh: build (once) the debug kernel that the
# QEMU suite runs on, and print where it is as shell assignments:
#
#   DEBUG_KREL=6.1.x-dlcdebug-<hash>
#   DEBUG_KDIR=<kernel build tree, for make module KDIR=>
#   DEBUG_KERNEL=<.../vmlinuz-$DEBUG_KREL, for tests/qemu/run.sh QEMU_KERNEL=>
#
# The kernel is linux-source-6.1 (Debian's tarball) configured as
# allnoconfig + debug.config (beside this script): PROVE_LOCKING,
# DEBUG_ATOMIC_SLEEP, KASAN, UBSAN, kmemleak and KCOV (on the objects that
# ask for it: dlcache.ko, by its Kbuild), with the drivers the guest needs
# built in. It is built outside the clone, in
# $DLC_KCACHE (default /var/cache/dlcache)/debug-kernel-<hash>, where <hash>
# covers the config fragment, the tarball's version and the compiler, so a
# later run on the same machine (CI after a session, a rerun) reuses it and
# any change to one of them builds a new one. The cold build time is logged
# in that directory (build-seconds). Output of the build goes to build.log
# there; stdout carries only the assignments.
#
#   --cached   print the assignments only when the kernel is already built
#              (exit 1 otherwise); never build
#
# Needs: /usr/src/linux-source-6.1*.tar.xz, gcc, make, flex, bison, bc,
# libelf-dev, libssl-dev (make deps installs them).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${DLC_KCACHE:-/var/cache/dlcache}
jobs=${DLC_KJOBS:-$(nproc)}
only_cached=0
[ "${1:-}" = --cached ] && only_cached=1

tarball=${LINUX_SOURCE_TARBALL:-$(ls /usr/src/linux-source-6.1*.tar.xz 2>/dev/null | tail -n 1)}
if [ -z "$tarball" ] || [ ! -f "$tarball" ]; then
	echo "debug-kernel: no /usr/src/linux-source-6.1*.tar.xz (apt-get install linux-source-6.1)" >&2
	exit 1
fi
srcver=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null || stat -c %s "$tarball")
hash=$({ cat "$here/debug.config"; echo "$srcver"; gcc --version | head -n 1; } |
	sha256sum | cut -c1-12)
dir=$cache/debug-kernel-$hash
src=$dir/src
obj=$dir/obj

print_env() {
	local krel
	krel=$(cat "$obj/include/config/kernel.release")
	echo "DEBUG_KREL=$krel"
	echo "DEBUG_KDIR=$obj"
	echo "DEBUG_KERNEL=$dir/vmlinuz-$krel"
}

if [ -f "$dir/.done" ]; then
	print_env
	exit 0
fi
[ $only_cached -eq 0 ] || exit 1

mkdir -p "$dir"
# One builder at a time (a second waits for the first).
exec 9>"$dir/.lock"
flock 9
if [ -f "$dir/.done" ]; then
	print_env
	exit 0
fi
start=$(date +%s)
log=$dir/build.log
echo "debug-kernel: building $dir (cold build: tens of minutes on 2 cores; log $log)" >&2
{
	if [ ! -f "$src/.extracted" ]; then
		rm -rf "$src"
		mkdir -p "$src"
		tar -xJf "$tarball" -C "$src" --strip-components=1
		touch "$src/.extracted"
	fi
	mkdir -p "$obj"
	make -C "$src" O="$obj" ARCH=x86_64 allnoconfig
	"$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" \
		"$here/debug.config"
	make -C "$src" O="$obj" ARCH=x86_64 LOCALVERSION="-dlcdebug-$hash" olddefconfig
	# Every option of the fragment must have survived olddefconfig:
	# one set as asked, one turned off not set (another option's select
	# may turn it back on).
	missing=0
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=n)
			! grep -q "^${line%=n}=" "$obj/.config" ||
				{ echo "debug-kernel: $line did not stick"; missing=1; } ;;
		CONFIG_*=y|CONFIG_*=[0-9]*)
			grep -qx "$line" "$obj/.config" ||
				{ echo "debug-kernel: $line did not stick"; missing=1; } ;;
		esac
	done < "$here/debug.config"
	[ $missing -eq 0 ]
	make -C "$src" O="$obj" ARCH=x86_64 LOCALVERSION="-dlcdebug-$hash" -j"$jobs" bzImage modules
	make -C "$src" O="$obj" ARCH=x86_64 LOCALVERSION="-dlcdebug-$hash" modules_prepare
} >"$log" 2>&1 || {
	echo "debug-kernel: build failed; the end of $log:" >&2
	tail -n 30 "$log" >&2
	exit 1
}
krel=$(cat "$obj/include/config/kernel.release")
cp "$obj/arch/x86/boot/bzImage" "$dir/vmlinuz-$krel"
echo $(( $(date +%s) - start )) > "$dir/build-seconds"
echo "debug-kernel: built $krel in $(cat "$dir/build-seconds") s" >&2
touch "$dir/.done"
print_env
