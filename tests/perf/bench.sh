#!/bin/bash
# make bench: dlcache side by side with the PyTorch DataLoader, a plain C
# loader, the decode and storage limits, and the page cache; one run, one
# table, one plot. Usage: tests/perf/bench.sh BUILD SIZE REPEATS
#
# One generated data set of SIZE bytes (1G, 200M, ...: SIZE / 71000
# ImageNet-like JPEGs of ~71 kB). REPEATS rounds, interleaved, each:
#   1. dlcachectl bench --json, 4 epochs, backend auto, cache = half the set
#   2. tools/torch_baseline.py, tuned: <cores> workers, batch 64, 4 epochs
#   3. tests/perf/plain_loader: read() + tjDecompress2 + crop/resize, 4 epochs
#   4. dlcachectl decodebench --json: full and crop-first decode from memory
#   5. fio: O_DIRECT random reads over the data set's files, depth 64
#   6. dlcache on the pack (.dlp) of the same set, cache = half, and the
#      same and dlcache on the originals with cache = the whole set
#   7. dlcachectl decodebench on the pack: the MCU-exact decode limit
# and after the rounds the storage-bound section (tests/perf/storage.sh:
# a throttled loop device at 40 and 100 MB/s; BENCH_STORAGE_IMAGES), the
# decoded-forms section (tests/perf/forms.sh: the cache at 1/4 to 8x the
# set, forms auto against encoded bytes only) and
# the cluster section (tests/perf/cluster.sh: 4 nodes in network
# namespaces on 16 MB/s shared storage; BENCH_CLUSTER_IMAGES) and the
# skewed-node section (tests/perf/skew.py: two ranks of one job in step,
# one with twice the decode work, bound to a CPU each; BENCH_SKEW_IMAGES).
# (the page cache is dropped before 1, 2, 3, 5 and 6, so epoch 1 is cold).
# The pack is made (and timed) once per run, before the rounds. Then, on
# real photographs (Debian's wallpapers, multi-megapixel): the decode
# limits on the originals and the pack, dlcache on both and PyTorch.
# Medians of the rounds count. Then once: hit ratios simulated (hitsim),
# the Linux page cache measured in a memory-limited cgroup, and a short
# perf record of dlcache. Output in BUILD/bench: report.md, report.json,
# report.png, hits.png, raw/.
set -euo pipefail

build=${1:-build}
size=${2:-1G}
repeats=${3:-3}
epochs=4
ctl=$build/dlcachectl
plain=$build/bench/plain_loader
hitsim=$build/bench/hitsim
out=$build/bench
raw=$out/raw
py=/usr/bin/python3
cores=$(nproc)
here=$(cd "$(dirname "$0")" && pwd)

if [ "$(id -u)" -ne 0 ]; then
	echo "bench: needs root (drop_caches, cgroups)" >&2
	exit 1
fi
bytes=$(numfmt --from=iec "$size")
images=$((bytes / 71000))
[ "$images" -ge 200 ] || { echo "bench: BENCH_SIZE $size is too small" >&2; exit 2; }
dir=${BENCH_DIR:-$build/bench-data-$images}
idx=$dir.idx
rm -rf "$raw"
mkdir -p "$raw"

log() { echo "bench: $*" >&2; }
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }

log "data set $dir: $images images (BENCH_SIZE=$size), $cores cores, $repeats rounds"
"$ctl" gen "$dir" --images "$images" --classes 100 >&2
"$ctl" index "$dir" -o "$idx" >/dev/null
pack=$dir.dlp
log "pack: $pack (timed)"
drop
/usr/bin/time -o "$raw/pack.time" -f '%e' "$ctl" pack "$idx" -o "$pack" --force \
	--json > "$raw/pack.json"
mean=$(find "$dir" -type f -name '*.jpg' -printf '%s\n' |
	awk '{s += $1; n++} END {printf "%d", s / n}')
bs=$(( (mean + 4095) / 4096 * 4 ))k

{
	echo "{\"machine\": {\"cores\": $cores, \"cpu\": \"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)\","
	echo " \"mem_gib\": $(awk '/MemTotal/ {printf "%.1f", $2 / 1048576}' /proc/meminfo), \"kernel\": \"$(uname -r)\","
	echo " \"os\": \"$(. /etc/os-release; echo "$PRETTY_NAME")\", \"date\": \"$(date -u +%Y-%m-%dT%H:%MZ)\"},"
	echo " \"dataset\": {\"dir\": \"$dir\", \"images\": $images, \"bytes\": $(du -sb --apparent-size "$dir" | cut -f1), \"mean_file_bytes\": $mean},"
	echo " \"fio_bs\": \"$bs\", \"repeats\": $repeats, \"epochs\": $epochs}"
} > "$raw/meta.json"

for r in $(seq 1 "$repeats"); do
	log "round $r/$repeats: dlcache"
	drop
	"$ctl" bench "$idx" --epochs $epochs --batch-size 64 --cache-fraction 0.5 \
		--json > "$raw/dlcache.$r.json"
	log "round $r/$repeats: PyTorch DataLoader"
	drop
	$py tools/torch_baseline.py "$dir" --json --workers "$cores" --batch-size 64 \
		--epochs $epochs > "$raw/torch.$r.json"
	log "round $r/$repeats: plain C loader"
	drop
	"$plain" "$idx" --threads "$cores" --epochs $epochs --batch-size 64 \
		--json > "$raw/plain.$r.json"
	log "round $r/$repeats: decode limits"
	"$ctl" decodebench "$idx" --threads "$cores" --seconds 3 --json > "$raw/decode.$r.json"
	log "round $r/$repeats: fio (randread bs=$bs, depth 64, O_DIRECT, cold)"
	drop
	fio --name=storage --opendir="$dir" --rw=randread --bs="$bs" --direct=1 \
		--ioengine=io_uring --iodepth=64 --file_service_type=random \
		--norandommap --runtime=10 --time_based --group_reporting \
		--output-format=json 2>/dev/null | sed -n '/^{/,$p' > "$raw/fio.$r.json"
	log "round $r/$repeats: dlcache on the pack, cache = half"
	drop
	"$ctl" bench "$pack" --epochs $epochs --batch-size 64 --cache-fraction 0.5 \
		--json > "$raw/dlpack.$r.json"
	log "round $r/$repeats: dlcache on the pack and on the originals, cache = whole"
	drop
	"$ctl" bench "$pack" --epochs $epochs --batch-size 64 --cache-fraction 1 \
		--json > "$raw/dlpackall.$r.json"
	drop
	"$ctl" bench "$idx" --epochs $epochs --batch-size 64 --cache-fraction 1 \
		--json > "$raw/dlall.$r.json"
	log "round $r/$repeats: decode limits on the pack (MCU-exact)"
	"$ctl" decodebench "$pack" --threads "$cores" --seconds 3 --json > "$raw/decodepack.$r.json"
done

# Real photographs: the wallpapers `make deps` installs, in 4 classes.
photos=$build/bench-photos
rm -rf "$photos"
n=0
for f in /usr/share/backgrounds/mate/nature/*.jpg /usr/share/wallpapers/*/contents/images/*.jpg; do
	[ -f "$f" ] || continue
	mkdir -p "$photos/c$((n % 4))"
	ln -s "$f" "$photos/c$((n % 4))/$(printf %03d $n).jpg"
	n=$((n + 1))
done
if [ "$n" -ge 8 ]; then
	log "photographs: $n, indexed and packed (timed)"
	"$ctl" index "$photos" -o "$photos.idx" >/dev/null
	drop
	/usr/bin/time -o "$raw/photo.pack.time" -f '%e' "$ctl" pack "$photos.idx" \
		-o "$photos.dlp" --force --json > "$raw/photo.pack.json"
	"$ctl" decodebench "$photos.idx" --threads "$cores" --seconds 6 --json > "$raw/photo.decode.json"
	"$ctl" decodebench "$photos.dlp" --threads "$cores" --seconds 6 --json > "$raw/photo.decodepack.json"
	drop
	"$ctl" bench "$photos.idx" --epochs 3 --batch-size 16 --cache-fraction 1 \
		--json > "$raw/photo.dlcache.json"
	drop
	"$ctl" bench "$photos.dlp" --epochs 3 --batch-size 16 --cache-fraction 1 \
		--json > "$raw/photo.dlpack.json"
	drop
	$py tools/torch_baseline.py "$photos" --json --workers "$cores" --batch-size 16 \
		--epochs 3 > "$raw/photo.torch.json"
else
	log "photographs: only $n installed (make deps installs them), skipped"
fi

cap=$($py -c 'import json,sys; print(json.load(open(sys.argv[1]))["cache_bytes"])' "$raw/dlcache.1.json")
log "hit ratios: simulation (capacity $cap bytes)"
"$hitsim" "$idx" --capacity "$cap" --epochs $epochs > "$raw/hitsim.json"

# The Linux page cache, measured: a memory cgroup limited to half the data
# set plus the process's own peak RSS (calibrated first). cgroup v2 when its
# memory controller is usable, else the v1 memory hierarchy.
pc_run() {	# cgroup dir, output, command...
	local cg=$1 o=$2
	shift 2
	( echo $BASHPID > "$cg/cgroup.procs"; exec /usr/bin/time -o "$o.time" -f '%I %M %e' "$@" ) > "$o"
}
log "page cache: calibrating the process's own memory"
drop
/usr/bin/time -o "$raw/pc.calib.time" -f '%I %M %e' "$ctl" bench "$idx" --backend inprocess \
	--cache 0 --no-direct --epochs 1 --json > "$raw/pc.calib.json"
rss=$(( $(cut -d' ' -f2 "$raw/pc.calib.time") * 1024 ))
limit=$((cap + rss))
cg=""
if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] &&
   grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	echo +memory > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
	cg=/sys/fs/cgroup/dlcbench.$$
	mkdir "$cg"
	limfile=memory.max
	echo "$limit" > "$cg/$limfile"
	echo 0 > "$cg/memory.swap.max" 2>/dev/null || true
	cgkind="cgroup v2 memory.max"
elif [ -d /sys/fs/cgroup/memory ]; then
	cg=/sys/fs/cgroup/memory/dlcbench.$$
	mkdir "$cg"
	limfile=memory.limit_in_bytes
	echo "$limit" > "$cg/$limfile"
	cgkind="cgroup v1 memory.limit_in_bytes (no memory controller on cgroup v2 here)"
fi
if [ -n "$cg" ]; then
	log "page cache: $cgkind = $limit ($cap + RSS $rss)"
	drop
	for s in $(seq 0 $((epochs - 1))); do
		pc_run "$cg" "$raw/pc.bench.$s.json" "$ctl" bench "$idx" --backend inprocess \
			--cache 0 --no-direct --epochs 1 --seed "$s" --json
	done
	# The replay process is small: the limit is half the set + its own RSS.
	/usr/bin/time -o "$raw/pc.calib.replay.time" -f '%I %M %e' "$hitsim" "$idx" \
		--replay perm --epochs 1 > /dev/null
	rrss=$(( $(cut -d' ' -f2 "$raw/pc.calib.replay.time") * 1024 ))
	echo $((cap + rrss)) > "$cg/$limfile"
	drop
	pc_run "$cg" "$raw/pc.replay.perm.json" "$hitsim" "$idx" --replay perm --epochs $epochs
	drop
	pc_run "$cg" "$raw/pc.replay.repeats.json" "$hitsim" "$idx" --replay repeats --epochs $epochs
	rmdir "$cg" 2>/dev/null || true
	echo "{\"cgroup\": \"$cgkind\", \"limit\": $limit, \"rss\": $rss, \"replay_limit\": $((cap + rrss)), \"replay_rss\": $rrss}" > "$raw/pc.meta.json"
else
	log "page cache: no memory cgroup available, skipped"
fi

log "perf record of a short dlcache run (2 epochs)"
if command -v perf >/dev/null; then
	perf record -F 499 -g -o "$raw/perf.data" -- "$ctl" bench "$idx" --epochs 2 \
		--batch-size 64 --cache-fraction 0.5 --json > "$raw/perf.bench.json" 2>/dev/null || true
	# By library (Debian's libjpeg has no symbols), then the symbols of the
	# loader itself and the kernel.
	perf report -i "$raw/perf.data" --stdio --no-children --sort dso \
		-g none 2>/dev/null | grep -v '^#' | grep -v '^$' > "$raw/perf.txt" || true
	perf report -i "$raw/perf.data" --stdio --no-children --sort dso,sym \
		--dsos dlcachectl,'[kernel.kallsyms]',libc.so.6 --percent-limit 0.3 \
		-g none 2>/dev/null | grep -v '^#' | grep -v '^$' > "$raw/perf.comm.txt" || true
fi

# Storage-bound epochs: a throttled loop device, at 40 and 100 MB/s.
rm -f "$out/storage.md"
if ! "$here/storage.sh" "$build" "${BENCH_STORAGE_IMAGES:-4000}" "$repeats" >&2; then
	log "storage-bound section failed (see above); the report goes without it"
	rm -f "$out/storage.md"
fi

# The in-process cache at several sizes, with decoded forms and without.
rm -f "$out/forms.md" "$out/forms.dat"
if ! "$here/forms.sh" "$build" "$dir" "$repeats" >&2; then
	log "decoded-forms section failed (see above); the report goes without it"
	rm -f "$out/forms.md" "$out/forms.dat"
fi

# Four nodes in network namespaces on throttled shared storage.
rm -f "$out/cluster.md"
if ! "$here/cluster.sh" "$build" "${BENCH_CLUSTER_IMAGES:-800}" >&2; then
	log "cluster section failed (see above); the report goes without it"
	rm -f "$out/cluster.md"
fi

# Two ranks of one job in step, one with twice the work a sample.
rm -f "$out/skew.md"
if ! $py "$here/skew.py" "$build" "${BENCH_SKEW_IMAGES:-1200}" "$repeats" >&2; then
	log "skewed-node section failed (see above); the report goes without it"
	rm -f "$out/skew.md"
fi

$py "$here/report.py" "$raw" "$out"
cat "$out/report.md"
