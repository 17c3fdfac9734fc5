#!/bin/bash
# tests/fuzz/lib/seeds.sh SEEDGEN OUTDIR: the seed corpora of the libdlcache
# fuzz harnesses, made from nothing committed but tests/fuzz/lib/seeds/
# (a few hand-written bytes): seedgen's JPEGs, packs, index and staging
# programs, and jpegtran's variants of the JPEGs (progressive, arithmetic,
# restart markers, a progressive scan script that leaves coefficients out
# so that libjpeg smooths blocks; libjpeg-turbo-progs, which make deps
# installs).
set -euo pipefail
seedgen=$1
out=$2
here=$(dirname "$0")

rm -rf "$out.new"
mkdir -p "$out.new"
"$seedgen" "$out.new"
cp -r "$here"/seeds/. "$out.new"/
if command -v jpegtran > /dev/null; then
	printf '0: 0-0, 0, 0;\n0: 1-5, 0, 0;\n' > "$out.new/dc1.scans"
	printf '0,1,2: 0-0, 0, 0;\n0: 1-5, 0, 0;\n' > "$out.new/dc3.scans"
	for f in "$out.new"/jpeg/*.jpg; do
		b=${f%.jpg}
		jpegtran -progressive "$f" > "$b-prog.jpg"
		jpegtran -scans "$out.new/dc3.scans" "$f" > "$b-dc.jpg" 2>/dev/null ||
			jpegtran -scans "$out.new/dc1.scans" "$f" > "$b-dc.jpg" 2>/dev/null ||
			rm -f "$b-dc.jpg"
		jpegtran -arithmetic "$f" > "$b-arith.jpg" 2>/dev/null || rm -f "$b-arith.jpg"
		jpegtran -restart 1 "$f" > "$b-rst1.jpg"
	done
fi
rm -f "$out.new"/dc?.scans
mkdir -p "$out.new"/jpeg_exact
cp "$out.new"/jpeg/* "$out.new"/jpeg_exact/
# image: the JPEGs in every other format and layout, by Pillow (python3-pil,
# which make deps installs); without it, none (run.sh then says so).
mkdir -p "$out.new"/image
/usr/bin/python3 - "$out.new"/jpeg "$out.new"/image <<'PY' || true
import glob, os, sys
from PIL import Image
src, dst = sys.argv[1], sys.argv[2]
for i, f in enumerate(sorted(glob.glob(os.path.join(src, "*.jpg")))[:4]):
    im = Image.open(f).convert("RGB")
    rgba = im.copy()
    rgba.putalpha(im.convert("L"))
    p = os.path.join(dst, "%d" % i)
    im.save(p + ".png")
    im.convert("P").save(p + "-p.png")
    im.convert("L").save(p + "-l.png")
    rgba.save(p + "-rgba.png")
    im.save(p + ".webp", quality=50)
    rgba.save(p + "-lossless.webp", lossless=True)
    im.save(p + ".tif", compression="tiff_lzw")
    im.convert("1").save(p + "-1.tif")
    im.convert("P").save(p + "-p.tif")
    im.save(p + ".bmp")
    im.convert("P").save(p + "-p.bmp")
    im.save(p + ".ppm")
    im.convert("L").save(p + ".pgm")
PY
rm -rf "$out"
mv "$out.new" "$out"
