#!/bin/bash
# tests/perf/ab.sh CTL_A CTL_B DIR [ROUNDS]: is B as fast as A?
#
# Two builds of dlcachectl (say, main's and a branch's: `git worktree add`,
# `make lib tools` there) run `dlcachectl bench` on the same data set,
# interleaved A B, B A, A B, ... so that the machine's drift falls on both,
# with the page cache dropped before each run: the originals (DIR.idx) and
# the pack (DIR.dlp), cache = half, 4 epochs, batch 64, as make bench runs
# them. Prints, per case, each run's CPU time per image (user + system,
# from /usr/bin/time: on a shared machine less noisy than images/s) and
# its images/s (median of epochs 1-3), then B/A of the medians.
#
# DIR is a data set made by `dlcachectl gen DIR`, indexed to DIR.idx and
# packed to DIR.dlp. ROUNDS: default 6. Needs root (drop_caches). The runs'
# JSON and times are kept in $AB_OUT (default /tmp/dlcache-ab).
set -euo pipefail

[ $# -ge 3 ] || { echo "usage: $0 CTL_A CTL_B DIR [ROUNDS]" >&2; exit 2; }
a=$1 b=$2 dir=$3 rounds=${4:-6}
out=${AB_OUT:-/tmp/dlcache-ab}
[ "$(id -u)" -eq 0 ] || { echo "ab: needs root (drop_caches)" >&2; exit 1; }
for f in "$dir.idx" "$dir.dlp"; do
	[ -f "$f" ] || { echo "ab: no $f (dlcachectl index, dlcachectl pack)" >&2; exit 1; }
done
rm -rf "$out"
mkdir -p "$out"

drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) = 1 ]; then order="A B"; else order="B A"; fi
	for kind in idx dlp; do
		for who in $order; do
			ctl=$a
			[ "$who" = B ] && ctl=$b
			drop
			/usr/bin/time -f "%e %U %S" -o "$out/$who.$kind.$r.time" \
				"$ctl" bench "$dir.$kind" --epochs 4 --batch-size 64 \
				--cache-fraction 0.5 --json > "$out/$who.$kind.$r.json"
		done
	done
	echo "ab: round $r of $rounds done" >&2
done

/usr/bin/python3 - "$out" "$rounds" <<'PY'
import json
import statistics as st
import sys

out, rounds = sys.argv[1], int(sys.argv[2])
for kind, name in (("idx", "originals"), ("dlp", "pack")):
    med = {}
    for who in "AB":
        cpu, ips = [], []
        for r in range(1, rounds + 1):
            with open(f"{out}/{who}.{kind}.{r}.time") as f:
                _, user, system = map(float, f.read().split()[-3:])
            with open(f"{out}/{who}.{kind}.{r}.json") as f:
                epochs = json.load(f)["epochs"]
            cpu.append((user + system) / sum(e["images"] for e in epochs) * 1e6)
            ips.append(st.median(e["images_per_s"] for e in epochs[1:]))
        med[who] = (st.median(cpu), st.median(ips))
        print(f"{name:9s} {who}: CPU us/image {[round(c) for c in cpu]}, "
              f"images/s {[round(i) for i in ips]}")
    print(f"{name:9s} B/A: CPU per image {med['B'][0] / med['A'][0]:.3f}, "
          f"images/s {med['B'][1] / med['A'][1]:.3f}")
PY
