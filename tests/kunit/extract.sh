#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# tests/kunit/extract.sh DIR: extract /usr/src/linux-source-6.1.tar.xz into
# DIR once (kept and reused; delete DIR to start over). Prints DIR.
set -eu
dir=$1
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
tar -xJf "$tarball" -C "$dir.tmp" --strip-components=1
rm -rf "$dir"
mv "$dir.tmp" "$dir"
touch "$dir/.dlcache-extracted"
echo "$dir"
