#!/bin/bash
# tests/fuzz/lib/seeds.sh SEEDGEN OUTDIR: the seed corpora of the libdlcache
# fuzz harnesses, made from nothing committed but tests/fuzz/lib/seeds/
# (a few hand-written bytes): seedgen's JPEGs, packs, index and staging
# programs, and jpegtran's variants of the JPEGs (progressive, arithmetic,
# restart markers; libjpeg-turbo-progs, which make deps installs).
set -euo pipefail
seedgen=$1
out=$2
here=$(dirname "$0")

rm -rf "$out.new"
mkdir -p "$out.new"
"$seedgen" "$out.new"
cp -r "$here"/seeds/. "$out.new"/
if command -v jpegtran > /dev/null; then
	for f in "$out.new"/jpeg/*.jpg; do
		b=${f%.jpg}
		jpegtran -progressive "$f" > "$b-prog.jpg"
		jpegtran -arithmetic "$f" > "$b-arith.jpg" 2>/dev/null || rm -f "$b-arith.jpg"
		jpegtran -restart 1 "$f" > "$b-rst1.jpg"
	done
fi
mkdir -p "$out.new"/jpeg_exact
cp "$out.new"/jpeg/* "$out.new"/jpeg_exact/
rm -rf "$out"
mv "$out.new" "$out"
