#!/bin/bash
# SPDX-License-Identifier: MIT
#
# deb.sh OUT: the Debian packages of this tree (debian/) into OUT: the five
# .deb files, their .changes and .buildinfo, and the build's log
# (OUT/build.log). Built from a copy of the tracked and untracked-but-not-
# ignored files (a working tree's changes included, build/ never), with
# dpkg-buildpackage -b, unsigned. Prints the .deb files, one a line.
# Needs dpkg-dev, debhelper, dh-dkms, dh-python (make deps).
set -euo pipefail

out=${1:?usage: deb.sh OUT}
root=$(cd "$(dirname "$0")/../.." && pwd)
version=$(dpkg-parsechangelog -l "$root/debian/changelog" -S Version)
src=$out/src/dlcache-$version

for t in dpkg-buildpackage dh dh_dkms dh_python3; do
	command -v "$t" >/dev/null || {
		echo "deb: $t is missing: apt-get install dpkg-dev debhelper dh-dkms dh-python (make deps)" >&2
		exit 2
	}
done

rm -rf "$out"
mkdir -p "$src"
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$root" && git ls-files -z -c -o --exclude-standard |
		xargs -0 cp --parents -t "$src" 2>/dev/null || true)
	# A tracked file deleted in the working tree is not copied: fine.
else
	(cd "$root" && tar --exclude=./build --exclude=./.git -cf - .) | tar -C "$src" -xf -
fi
[ -f "$src/debian/rules" ] || { echo "deb: no debian/rules copied to $src" >&2; exit 1; }

log=$out/build.log
if ! (cd "$src" && dpkg-buildpackage -b -us -uc -j"$(nproc)") > "$log" 2>&1; then
	tail -n 40 "$log" >&2
	echo "deb: dpkg-buildpackage failed (log: $log)" >&2
	exit 1
fi
mv "$out"/src/*.deb "$out"/src/*.changes "$out"/src/*.buildinfo "$out"/
rm -rf "$out/src"
ls "$out"/*.deb
