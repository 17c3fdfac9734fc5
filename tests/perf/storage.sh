#!/bin/bash
# make bench's storage-bound section (alone: make bench-storage): epochs on
# real slow storage, side by side. Usage:
#   tests/perf/storage.sh BUILD [IMAGES [ROUNDS [BANDWIDTHS]]]
# IMAGES ImageNet-like JPEGs (default 4000, ~278 MB), ROUNDS rounds per
# bandwidth (default 1), BANDWIDTHS in MB/s (default "40 100").
#
# The storage: an ext4 image on a loop device (direct I/O to its backing
# file, so the host's page cache never serves it), its reads limited by
# the block cgroup (cgroup v1 blkio.throttle.read_bps_device, or v2
# io.max rbps) to each bandwidth in turn. Every run below is in that
# cgroup, starts with the page cache dropped, and runs EPOCHS epochs
# (epoch 0 cold); at each bandwidth, interleaved per round:
#   1. dlcache, in-process cache = half the set, O_DIRECT, read-ahead on
#      (the library's default budget, sized online)
#   1b. the same with the read-ahead a fixed 64 MiB (--readahead 64M:
#      what it was before it was sized online)
#   2. the same with --readahead off (what wave 1 did)
#   2b. the same as 1 with the staging tier (--staging-dir on the host's
#      own disk, empty at the start; budget: half its free space)
#   2c. the same as 1 with decoded forms (--forms auto), which must keep
#      encoded bytes here, where storage is the bottleneck
#   3. the page cache alone: dlcachectl bench --cache 0 --no-direct
#      --readahead off, in a memory cgroup of dlcache's cache + this
#      process's own footprint (calibrated first)
#   4. the tuned PyTorch DataLoader (tools/torch_baseline.py, <cores>
#      workers), in a memory cgroup of dlcache's cache + its own footprint
# and, once, the crop-first decode rate from memory (dlcachectl
# decodebench). The bytes each run read come from the loop device's own
# counters (/sys/block/loopN/stat), not from the loader. Output:
# BUILD/bench/raw/storage/*.json, then storage_report.py writes
# BUILD/bench/storage.md and storage.json.
set -euo pipefail

build=${1:-build}
images=${2:-4000}
rounds=${3:-1}
bws=${4:-"40 100"}
epochs=4
ctl=$build/dlcachectl
py=/usr/bin/python3
cores=$(nproc)
here=$(cd "$(dirname "$0")" && pwd)
raw=$build/bench/raw/storage
work=$(realpath -m "$build/bench-storage")

log() { echo "storage: $*" >&2; }
die() { echo "storage: $*" >&2; exit 1; }
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }

[ "$(id -u)" -eq 0 ] || die "needs root (loop device, cgroups, drop_caches)"
for t in losetup mkfs.ext4 mount; do
	command -v $t >/dev/null || die "$t is missing"
done
[ -x "$ctl" ] || die "$ctl is missing (make tools)"

loop="" mnt=$work/mnt bcg="" mcg=""
cleanup() {
	set +e
	mountpoint -q "$mnt" && umount "$mnt"
	[ -n "$loop" ] && losetup -d "$loop"
	[ -n "$bcg" ] && rmdir "$bcg" 2>/dev/null
	[ -n "$mcg" ] && rmdir "$mcg" 2>/dev/null
}
trap cleanup EXIT

# ---- the device ---------------------------------------------------------
rm -rf "$raw"
mkdir -p "$raw" "$mnt"
img=$work/disk.img
size_mb=$(( images * 71000 * 5 / 4 / 1000000 + 128 ))
rm -f "$img"
truncate -s "${size_mb}M" "$img"
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$img"
loop=$(losetup --find --show --direct-io=on "$img")
mount -o noatime "$loop" "$mnt"
dev=$(basename "$loop")
majmin=$(cat /sys/block/$dev/dev)
data=$mnt/data
idx=$work/data.idx
log "device $loop ($majmin, ext4, direct I/O to $img); $images images"
"$ctl" gen "$data" --images "$images" --classes 100 --seed 7 >&2
"$ctl" index "$data" -o "$idx" >/dev/null
sync
dev_read() { awk '{printf "%.0f\n", $3 * 512}' /sys/block/$dev/stat; }

# ---- the cgroups: one block cgroup, one memory cgroup -------------------
if [ -d /sys/fs/cgroup/blkio ] && [ -e /sys/fs/cgroup/blkio/blkio.throttle.read_bps_device ]; then
	bcg=/sys/fs/cgroup/blkio/dlcstorage.$$
	mkdir "$bcg"
	set_bw() { echo "$majmin $1" > "$bcg/blkio.throttle.read_bps_device"; }
	bkind="cgroup v1 blkio.throttle.read_bps_device"
elif grep -qw io /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	echo +io > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
	bcg=/sys/fs/cgroup/dlcstorage.$$
	mkdir "$bcg"
	set_bw() { echo "$majmin rbps=$1" > "$bcg/io.max"; }
	bkind="cgroup v2 io.max"
else
	die "no block cgroup controller to throttle reads with"
fi
v2=0
if [ "$bcg" = /sys/fs/cgroup/dlcstorage.$$ ]; then
	# v2: one hierarchy, so the memory limit goes on the same cgroup.
	echo +memory > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
	mcg=$bcg v2=1
	memlim=memory.max
elif [ -d /sys/fs/cgroup/memory ]; then
	mcg=/sys/fs/cgroup/memory/dlcstorage.$$
	mkdir "$mcg"
	memlim=memory.limit_in_bytes
else
	die "no memory cgroup for the page cache runs"
fi
set_mem() { echo "$1" > "$mcg/$memlim"; }
nolimit() { [ $v2 -eq 1 ] && echo max || echo -1; }
# What the cgroup holds that is not reclaimable page cache: anonymous and
# pinned memory, plus mapped files (the programs' own libraries).
footprint() {
	if [ $v2 -eq 1 ]; then
		awk -v cur="$(cat "$mcg/memory.current")" \
			'$1 == "file" {f = $2} $1 == "file_mapped" {m = $2}
			 END {print cur - f + m}' "$mcg/memory.stat"
	else
		awk '$1 == "total_rss" {r = $2} $1 == "total_mapped_file" {m = $2}
		     END {print r + m}' "$mcg/memory.stat"
	fi
}

# run NAME CMD...: in the block (and memory) cgroup, cache dropped; stdout
# to raw/NAME.json, the device's bytes read to raw/NAME.dev, the largest
# footprint seen to raw/NAME.fp.
run() {
	local name=$1 before pid fp=0 f
	shift
	drop
	before=$(dev_read)
	( echo $BASHPID > "$bcg/cgroup.procs"
	  [ $v2 -eq 1 ] || echo $BASHPID > "$mcg/cgroup.procs"
	  "$@" ) > "$raw/$name.json" 2> "$raw/$name.err" &
	pid=$!
	while kill -0 $pid 2>/dev/null; do
		f=$(footprint)
		[ "$f" -gt "$fp" ] && fp=$f
		sleep 0.2
	done
	wait $pid || die "$name failed: $(tail -n 3 "$raw/$name.err")"
	echo $(( $(dev_read) - before )) > "$raw/$name.dev"
	echo $fp > "$raw/$name.fp"
}

dl() { "$ctl" bench "$idx" --backend inprocess --epochs $epochs --batch-size 64 --json "$@"; }
torch() { $py tools/torch_baseline.py "$data" --json --workers "$cores" --batch-size 64 --epochs $epochs; }

log "crop-first decode rate from memory ($cores threads)"
"$ctl" decodebench "$idx" --threads "$cores" --seconds 3 --json > "$raw/decode.json"

# Calibration, unthrottled and unlimited: each system's own footprint.
set_mem "$(nolimit)"
log "calibration: the footprints of dlcachectl bench --cache 0 and of PyTorch"
run calib.pc dl --cache 0 --no-direct --readahead off --epochs 1
run calib.torch $py tools/torch_baseline.py "$data" --json --workers "$cores" --batch-size 64 --epochs 1
cap=$($py -c 'import json,sys; print(json.load(open(sys.argv[1]))["dataset_bytes"] // 2)' "$raw/calib.pc.json")

for bw in $bws; do
	set_bw $((bw * 1000000))
	for r in $(seq 1 "$rounds"); do
		log "$bw MB/s, round $r/$rounds: dlcache, read-ahead on"
		set_mem "$(nolimit)"
		run "dl.$bw.$r" dl --cache-fraction 0.5
		log "$bw MB/s, round $r/$rounds: dlcache, read-ahead a fixed 64 MiB"
		run "dlra.$bw.$r" dl --cache-fraction 0.5 --readahead 64M
		log "$bw MB/s, round $r/$rounds: dlcache + staging on local disk"
		rm -rf "$work/stage"
		run "stg.$bw.$r" dl --cache-fraction 0.5 --staging-dir "$work/stage"
		log "$bw MB/s, round $r/$rounds: dlcache, decoded forms auto"
		run "dlforms.$bw.$r" dl --cache-fraction 0.5 --forms auto
		log "$bw MB/s, round $r/$rounds: dlcache, read-ahead off"
		run "dlnora.$bw.$r" dl --cache-fraction 0.5 --readahead off
		log "$bw MB/s, round $r/$rounds: the page cache alone"
		set_mem $((cap + $(cat "$raw/calib.pc.fp")))
		run "pc.$bw.$r" dl --cache 0 --no-direct --readahead off
		log "$bw MB/s, round $r/$rounds: PyTorch DataLoader, tuned"
		set_mem $((cap + $(cat "$raw/calib.torch.fp")))
		run "torch.$bw.$r" torch
	done
done
set_mem "$(nolimit)"

{
	echo "{\"images\": $images, \"dataset_bytes\": $(du -sb --apparent-size "$data" | cut -f1),"
	echo " \"cache_bytes\": $cap, \"bandwidths_mb_s\": [${bws// /, }], \"rounds\": $rounds,"
	echo " \"epochs\": $epochs, \"cores\": $cores, \"throttle\": \"$bkind\","
	echo " \"footprint_pc\": $(cat "$raw/calib.pc.fp"), \"footprint_torch\": $(cat "$raw/calib.torch.fp"),"
	echo " \"date\": \"$(date -u +%Y-%m-%dT%H:%MZ)\", \"kernel\": \"$(uname -r)\"}"
} > "$raw/meta.json"
$py "$here/storage_report.py" "$raw" "$build/bench"
