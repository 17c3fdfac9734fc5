#!/bin/bash
# make bench's decoded-forms section (alone: make bench-forms): the
# in-process cache at several sizes, with decoded forms and with encoded
# bytes only, side by side. Usage:
#   tests/perf/forms.sh BUILD DIR [ROUNDS [MULTIPLES]]
# DIR: a data set, indexed in DIR.idx (make bench's generated set); ROUNDS rounds
# (default 1); MULTIPLES: cache sizes as multiples of the encoded bytes
# (default "0.25 0.5 1 2 4 8"; 8x holds the decoded forms of
# ImageNet-sized JPEGs).
#
# At each size, interleaved per round, dlcachectl bench --json, 4 epochs,
# in-process backend, page cache dropped first (epoch 0 is cold):
#   1. --forms auto (implies the exact transform)
#   2. encoded bytes only, the exact transform (the same pixels)
#   3. encoded bytes only, the default transform (reduced DCT scale for
#      large crops: what forms off gives by default)
# Output: BUILD/bench/raw/forms/*.json, then forms_report.py writes
# BUILD/bench/forms.md, forms.json and forms.dat (report.png's panel).
set -euo pipefail

build=${1:-build}
dir=${2%/}
idx=$dir.idx
rounds=${3:-1}
mults=${4:-"0.25 0.5 1 2 4 8"}
epochs=4
ctl=$build/dlcachectl
here=$(cd "$(dirname "$0")" && pwd)
raw=$build/bench/raw/forms

log() { echo "forms: $*" >&2; }
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }

[ "$(id -u)" -eq 0 ] || { log "needs root (drop_caches)"; exit 1; }
[ -x "$ctl" ] || { log "$ctl is missing (make tools)"; exit 1; }
[ -r "$idx" ] || { log "no index $idx"; exit 1; }
rm -rf "$raw"
mkdir -p "$raw"
enc=$(find "$dir" -type f -name '*.jpg' -printf '%s\n' | awk '{s += $1} END {print s}')
need=$(awk -v e="$enc" -v m="${mults##* }" 'BEGIN {printf "%.0f", e * m * 1.1}')
have=$(awk '/MemAvailable/ {printf "%.0f", $2 * 1024}' /proc/meminfo)
[ "$need" -lt "$have" ] ||
	log "the largest cache ($need bytes) is over the memory available ($have): it may swap"

bench() { "$ctl" bench "$idx" --backend inprocess --epochs $epochs --batch-size 64 --json "$@"; }
for r in $(seq 1 "$rounds"); do
	for m in $mults; do
		cache=$(awk -v e="$enc" -v m="$m" 'BEGIN {printf "%.0f", e * m}')
		log "round $r/$rounds: cache $m x the encoded bytes ($cache bytes)"
		drop
		bench --cache "$cache" --forms auto > "$raw/auto.$m.$r.json"
		drop
		bench --cache "$cache" --exact > "$raw/exact.$m.$r.json"
		drop
		bench --cache "$cache" > "$raw/default.$m.$r.json"
	done
done
{
	echo "{\"dataset_bytes\": $enc, \"multiples\": [${mults// /, }], \"rounds\": $rounds,"
	echo " \"epochs\": $epochs, \"cores\": $(nproc), \"date\": \"$(date -u +%Y-%m-%dT%H:%MZ)\"}"
} > "$raw/meta.json"
/usr/bin/python3 "$here/forms_report.py" "$raw" "$build/bench"
