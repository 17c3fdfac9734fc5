#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# kmod/kver.sh [VERSION]   print the kernel release to build or boot for
# kmod/kver.sh --kdir DIR  print the kernel release of the build tree DIR
#
# VERSION is a full release (6.12.95+deb12-amd64) or a series (6.1, 6.12):
# a series means the newest installed release of it that has headers
# (/lib/modules/R/build) or else a kernel image (/boot/vmlinuz-R); "6.1"
# does not match 6.12. Without VERSION: the running kernel when its headers
# are installed, else the newest release with headers. Prints nothing and
# exits 1 when nothing matches (a full release that is not installed is
# printed as given, exit 1, so that the caller can name its package).
set -u

newest() {
	sort -V | tail -n 1
}

# Releases with headers, then releases with an image only.
installed() {
	for d in /lib/modules/*/build; do
		[ -d "$d" ] && basename "$(dirname "$d")"
	done
}
images() {
	for f in /boot/vmlinuz-*; do
		[ -e "$f" ] && echo "${f#/boot/vmlinuz-}"
	done
}

if [ "${1:-}" = --kdir ]; then
	kdir=${2:?}
	case "$kdir" in
	/lib/modules/*/build|/lib/modules/*/build/)
		r=${kdir#/lib/modules/}
		echo "${r%%/*}"
		exit 0 ;;
	esac
	real=$(readlink -f "$kdir" 2>/dev/null || echo "$kdir")
	case "$(basename "$real")" in
	linux-headers-*)
		b=$(basename "$real")
		echo "${b#linux-headers-}"
		exit 0 ;;
	esac
	if [ -r "$kdir/include/config/kernel.release" ]; then
		cat "$kdir/include/config/kernel.release"
	else
		basename "$real"
	fi
	exit 0
fi

want=${1:-}
if [ -z "$want" ]; then
	r=$(uname -r)
	if [ -d "/lib/modules/$r/build" ]; then
		echo "$r"
		exit 0
	fi
	r=$(installed | newest)
	[ -n "$r" ] || exit 1
	echo "$r"
	exit 0
fi

if [ -d "/lib/modules/$want/build" ] || [ -e "/boot/vmlinuz-$want" ]; then
	echo "$want"
	exit 0
fi
match() {
	while read -r r; do
		case "$r" in "$want".*|"$want"-*|"$want"+*) echo "$r" ;; esac
	done
}
r=$(installed | match | newest)
[ -n "$r" ] || r=$(images | match | newest)
if [ -n "$r" ]; then
	echo "$r"
	exit 0
fi
# A full release (it has a patch level or a flavour) is printed anyway.
case "$want" in
*.*.*|*-*) echo "$want" ;;
esac
exit 1
