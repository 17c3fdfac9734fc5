#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# tests/kmod/extract.sh DIR [PATH...]: extract /usr/src/linux-source-6.1.tar.xz
# into DIR once (kept and reused; delete DIR to start over), only PATH...
# of the tree when given (style.sh needs scripts/ alone). Prints DIR.
set -eu
dir=$1
shift
tarball=${LINUX_SOURCE_TARBALL:-$(ls /usr/src/linux-source-6.1*.tar.xz 2>/dev/null | tail -n 1)}
if [ -f "$dir/.dlcache-extracted" ]; then
	echo "$dir"
	exit 0
fi
if [ -z "$tarball" ] || [ ! -f "$tarball" ]; then
	echo "extract: no /usr/src/linux-source-6.1*.tar.xz (apt-get install linux-source-6.1)" >&2
	exit 1
fi
rm -rf "$dir.tmp"
mkdir -p "$dir.tmp"
# The tarball's members are under one top folder (linux-source-6.1/).
members=
for p in "$@"; do
	members="$members */$p"
done
# shellcheck disable=SC2086
tar -xJf "$tarball" -C "$dir.tmp" --strip-components=1 --wildcards $members
rm -rf "$dir"
mv "$dir.tmp" "$dir"
touch "$dir/.dlcache-extracted"
echo "$dir"
