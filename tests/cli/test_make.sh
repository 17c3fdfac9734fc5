#!/bin/bash
# Plain `make` builds what README and the Makefile's header promise: the
# static and shared library, the pkg-config file and dlcachectl (and
# dlcache.ko when kernel headers exist, which the QEMU tests cover). Run
# on a copy of the tracked tree, so the user's build directory is untouched.
set -u
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git ls-files -z 2>/dev/null | tar --null -T - -cf - 2>/dev/null | tar -xf - -C "$tmp" ||
	cp -a . "$tmp"
rm -rf "$tmp/build"
if ! make -C "$tmp" -j2 >"$tmp/make.log" 2>&1; then
	echo "FAIL plain_make: exit status; last lines:"
	tail -n 10 "$tmp/make.log"
	exit 1
fi
for f in release/libdlcache.a libdlcache.so libdlcache.so.0 dlcache.pc dlcachectl; do
	if [ -e "$tmp/build/$f" ]; then
		echo "ok plain_make/$f"
	else
		echo "FAIL plain_make/$f: plain make did not build build/$f"
	fi
done
"$tmp/build/dlcachectl" --help >/dev/null 2>&1 && echo "ok plain_make/dlcachectl_runs" ||
	echo "FAIL plain_make/dlcachectl_runs"

# Every function the public header declares is exported by the .so, with
# a version (libdlcache/libdlcache.map), and nothing else is.
if command -v nm >/dev/null; then
	hdr=$(grep -oE '\bdlc_[a-z0-9_]+\(' libdlcache/include/dlcache.h | tr -d '(' | sort -u)
	syms=$(nm -D --defined-only "$tmp/build/libdlcache.so" | awk '{print $3}' |
		grep -E '^dlc_.*@@LIBDLCACHE_' | sed 's/@@.*//' | sort -u)
	missing=$(comm -23 <(echo "$hdr") <(echo "$syms") | tr '\n' ' ')
	extra=$(comm -13 <(echo "$hdr") <(echo "$syms") | tr '\n' ' ')
	if [ -z "$missing$extra" ]; then
		echo "ok exports/header_equals_so"
	else
		echo "FAIL exports/header_equals_so: declared but not exported: ${missing:-none}; exported but not declared: ${extra:-none}"
	fi
else
	echo "skip exports/header_equals_so: no nm (binutils)"
fi

# README and Documentation link only to files in the repository.
for f in README Documentation/*.md; do
	if grep -nE '\.\./shared|\.\./[A-Za-z]' "$f" >/dev/null; then
		echo "FAIL links/$f: points outside the repository: $(grep -nE '\.\./shared|\.\./[A-Za-z]' "$f" | head -1)"
	else
		echo "ok links/$(basename "$f")"
	fi
done
