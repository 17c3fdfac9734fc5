#!/bin/bash
# dlcachectl sample: its usage errors; the sample at a position is the
# loader's (preview prints the same IDs for the same epoch); the JSON
# names the sample and its box; the pixels written with --exact are
# torchvision's resized_crop (+ hflip) / Resize + CenterCrop of that box
# on the PIL image, to within 1 level; a pack gives the same samples,
# read from the pack and checked against their crc32c. Prints "ok|FAIL|skip NAME" lines.
set -u
ctl=${DLCACHECTL:-build/dlcachectl}
[ -x "$ctl" ] || { echo "skip sample: no dlcachectl at $ctl"; exit 77; }
py=/usr/bin/python3
total_fails=0
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
report() {	# name: one counted result for the checks since the last one
	if [ $fails -eq 0 ]; then echo "ok $1"; else echo "FAIL $1"; fi
	total_fails=$((total_fails + fails))
	fails=0
}

usage_prefix="dlcachectl sample"
. "$(dirname "$0")/usage.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$ctl" gen "$tmp/ds" --images 24 --classes 3 >/dev/null || fail "gen"

out=$("$ctl" sample --help 2>&1) || fail "sample --help exit status"
echo "$out" | grep -q "usage: dlcachectl sample" || fail "sample --help has no usage line"
expect_usage "a bad option" sample "$tmp/ds" --no-such-option
expect_usage "no data set" sample
expect_usage "a bad epoch" sample "$tmp/ds" --epoch minus
expect_usage "a position past the epoch" sample "$tmp/ds" --pos 24
expect_usage "rank >= world" sample "$tmp/ds" --rank 1 --world 1
expect_usage "a bad size" sample "$tmp/ds" --size 0
err=$("$ctl" sample "$tmp/nope" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] || fail "a missing data set: exit $rc, want 1"
echo "$err" | grep -q "$tmp/nope" || fail "a missing data set is not named: $err"
report sample/usage

# Position k of epoch 1 is tile k of preview's batch 0 (the real loader).
pv=$("$ctl" preview "$tmp/ds" -o "$tmp/pv.png" --epoch 1 --batch 0 --batch-size 8 --seed 5 2>/dev/null) ||
	fail "preview"
for k in 0 3 7; do
	want=$(echo "$pv" | awk -v k=$k '$1 == k && NF == 5 { print $2 }')
	got=$("$ctl" sample "$tmp/ds" --epoch 1 --pos $k --seed 5 --json |
		$py -c 'import json,sys; print(json.load(sys.stdin)["id"])')
	[ -n "$want" ] && [ "$want" = "$got" ] ||
		fail "position $k of epoch 1: sample gives id '$got', the loader '$want'"
done
report sample/order

# A pack: the same sample at each position, its bytes read from the pack
# (the same pixels as the files', packing being lossless here), the pack
# named; a sample whose bytes in the pack were changed fails its crc32c.
if "$ctl" pack "$tmp/ds" -o "$tmp/ds.dlp" >/dev/null 2>&1; then
	for k in 0 3 7; do
		"$ctl" sample "$tmp/ds" --epoch 1 --pos $k --seed 5 --size 64 \
			--exact -o "$tmp/d.ppm" --json >"$tmp/d.json" ||
			fail "dir sample at $k"
		"$ctl" sample "$tmp/ds.dlp" --epoch 1 --pos $k --seed 5 --size 64 \
			--exact -o "$tmp/p.ppm" --json >"$tmp/p.json" ||
			{ fail "pack sample at $k: $(cat "$tmp/p.json")"; continue; }
		$py - "$tmp/d.json" "$tmp/p.json" "$tmp/ds.dlp" <<'PY' || fail "pack position $k"
import json, sys
d = json.load(open(sys.argv[1])); p = json.load(open(sys.argv[2]))
assert d["id"] == p["id"] and d["box"] == p["box"], (d, p)
assert d["path"].endswith("/" + p["path"]), (d["path"], p["path"])
assert p["pack"] == sys.argv[3] and p["bytes"] > 0 and p["offset"] >= 4096, p
PY
		cmp -s "$tmp/d.ppm" "$tmp/p.ppm" || fail "pack position $k: other pixels"
	done
	off=$($py -c 'import json,sys; print(json.load(open(sys.argv[1]))["offset"])' "$tmp/p.json")
	printf '\377\377\377\377' | dd of="$tmp/ds.dlp" bs=1 seek=$((off + 600)) conv=notrunc 2>/dev/null
	err=$("$ctl" sample "$tmp/ds.dlp" --epoch 1 --pos 7 --seed 5 2>&1 >/dev/null); rc=$?
	[ $rc -eq 1 ] || fail "a changed sample in a pack: exit $rc, want 1"
	echo "$err" | grep -q "crc32c" || fail "a changed sample in a pack: $err"
else
	fail "pack"
fi
report sample/pack

# The JSON and the pixels, train and eval, against torchvision.
if ! $py -c 'import torchvision, PIL' 2>/dev/null; then
	for n in sample/torchvision-train sample/torchvision-eval; do
		if [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; then
			echo "FAIL $n: no torchvision/Pillow for $py (python3-torchvision, python3-pil) (a required comparison; CI=true)"
			total_fails=$((total_fails + 1))
		else
			echo "skip $n: no torchvision/Pillow for $py (python3-torchvision, python3-pil)"
		fi
	done
else
	for kind in train eval; do
		flag=
		[ $kind = eval ] && flag=--eval
		for pos in 0 5 11 19; do
			json=$("$ctl" sample "$tmp/ds" --epoch 2 --pos $pos --seed 9 \
				--size 96 --exact $flag -o "$tmp/s.ppm" --json) ||
				{ fail "$kind sample at $pos"; continue; }
			$py - "$json" "$tmp/s.ppm" <<'PY' || fail "$kind position $pos: $json"
import json, sys
from PIL import Image, ImageChops
import torchvision.transforms.functional as F
o = json.loads(sys.argv[1])
for k in ("epoch", "pos", "id", "path", "label", "class", "transform",
          "exact", "box", "out_h", "out_w", "output"):
    assert k in o, k
assert o["epoch"] == 2 and o["exact"] is True and o["out_w"] == 96
b = o["box"]
img = Image.open(o["path"]).convert("RGB")
if o["transform"] == "train":
    for k in ("top", "left", "height", "width"):
        assert b[k] == int(b[k]), b
    ref = F.resized_crop(img, int(b["top"]), int(b["left"]),
                         int(b["height"]), int(b["width"]),
                         [o["out_h"], o["out_w"]], antialias=True)
    if b["flip"]:
        ref = F.hflip(ref)
else:
    ref = F.center_crop(F.resize(img, o["resize"]), [o["out_h"], o["out_w"]])
got = Image.open(sys.argv[2])
assert got.size == ref.size, (got.size, ref.size)
m = max(e[1] for e in ImageChops.difference(got, ref).getextrema())
assert m <= 1, "max |diff| %d vs torchvision" % m
PY
		done
		report sample/torchvision-$kind
	done
fi

[ $total_fails -eq 0 ] && exit 0
exit 1
