#!/bin/bash
# make bench's cluster section (alone: make bench-cluster): four nodes of
# one rank each on real links and real slow shared storage, side by side.
# Usage:
#   tests/perf/cluster.sh BUILD [IMAGES [STORAGE_MBPS [LINK]]]
# IMAGES generated JPEGs (default 800), the shared storage's read limit in
# MB/s for all nodes together (default 16), each node's link (default
# 200mbit, as tc says it).
#
# Nodes: network namespaces on a bridge, links limited by tbf both ways
# (tests/netns.sh). Shared storage: ext4 on a loop device (direct I/O to
# its backing file), its reads limited by the block cgroup, every rank in
# that cgroup; the bytes it served come from /sys/block/loopN/stat. At each
# sum of the nodes' caches S = N/2, N, 2N (each node S/4):
#   1. dlcache single-node: four dlcachectl bench, --rank r --world 4,
#      --cache S/4 each, no peers
#   2. dlcache + staging: the same with --staging-dir, a directory per node
#      on the host's disk
#   3. dlcache cluster mode: the four under mpirun, --cluster --cache S/4
# and once the tuned PyTorch DataLoader (tools/torch_baseline.py, four
# ranks of DistributedSampler, one worker each): its cache is the host's
# page cache, which the four share and which holds the whole set, so its
# epochs after the first are its best case, not a cache of S.
# Each dlcache system runs twice, 3 and 5 epochs: storage bytes per steady
# epoch = (bytes of 5 - bytes of 3) / 2 (epochs 3 and 4: the caches fill
# over the first three); epoch time = the slowest rank's (a DDP step waits
# for it), median of epochs 3 and 4 of the 5-epoch run. Then large
# photographs (issue 32, part 3): the wallpapers `make deps` installs cut
# into 1280 x 960 tiles at quality 100 (photo_tiles.py: about 0.5 MB
# each, larger than a 224 x 224 output's 147 KiB), output 224 x 224,
# sum of caches = N, cluster mode with prepared answers off and on
# (DLCACHE_CLUSTER_PREPARE); skipped, and said so, without the wallpapers.
# PHOTOS_ONLY=1 runs that part alone. Output:
# BUILD/bench/raw/cluster/*, BUILD/bench/cluster.md and cluster.json.
set -euo pipefail

build=${1:-build}
images=${2:-800}
mbps=${3:-16}
link=${4:-200mbit}
world=4
ctl=$build/dlcachectl
mctl=$build/mpi/dlcachectl
py=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)
raw=$(realpath -m "$build/bench/raw/cluster")
work=$(realpath -m "$build/bench-cluster")
out=$build/bench
. "$here/../netns.sh"
. "$here/../slowdisk.sh"

log() { echo "cluster: $*" >&2; }
die() { echo "cluster: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (namespaces, loop device, cgroups)"
[ -x "$ctl" ] || die "$ctl is missing (make tools)"
[ -x "$mctl" ] || die "$mctl is missing (make MPI=1 BUILD=$build/mpi tools)"
command -v mpirun > /dev/null || die "no mpirun (apt-get install openmpi-bin)"

cleanup() {
	set +e
	netns_down
	slowdisk_down
}
trap cleanup EXIT
rm -rf "$raw" "$work"
mkdir -p "$raw" "$work"

netns_up "dlcb$$" $world "$link" || die "network namespaces"
netns_mpi_env

slowdisk_up "$work/disk.img" $(( images * 110 * 1024 + (192 << 20) )) \
	"$work/mnt" $(( mbps * 1000000 )) || die "$slowdisk_why"
procs=$slowdisk_procs
data=$work/mnt/data
log "generating $images JPEGs on $slowdisk_loop"
"$ctl" gen "$data" --images "$images" --classes 20 --seed 11 > /dev/null
"$ctl" index "$data" -o "$work/data.idx" > /dev/null
sync
bytes=$(du -sb --apparent-size "$data" | cut -f1)
dev_read() { slowdisk_read; }
common=(--batch-size 16 --size 64 --threads 1 --seed 5)

# A rank: in its namespace and the throttled cgroup. RANK is mpirun's, or
# the first argument's.
cat > "$work/rank.sh" << EOF
#!/bin/bash
r=\${OMPI_COMM_WORLD_RANK:-\$1}
shift
echo \$\$ > "$procs"
out=\$1
shift
export DLC_NODE=\$r
exec ip netns exec "$netns_tag-\$r" "\$@" > "\$out.\$r" 2> "\$out.\$r.err"
EOF
chmod +x "$work/rank.sh"

# run NAME KIND ARGS...: the four ranks (KIND mpi: under mpirun, else four
# processes), the page cache dropped first; device bytes to NAME.dev.
run() {
	local name=$1 kind=$2 before r pids=()
	shift 2
	sync
	echo 3 > /proc/sys/vm/drop_caches
	before=$(dev_read)
	if [ "$kind" = mpi ]; then
		timeout -k 5 600 mpirun --allow-run-as-root --oversubscribe \
			--enable-recovery -np $world --bind-to none \
			"$work/rank.sh" - "$raw/$name" "$@" > "$raw/$name.mpirun" 2>&1 ||
			die "$name: mpirun failed: $(tail -n 5 "$raw/$name.mpirun")"
	else
		for r in $(seq 0 $((world - 1))); do
			"$work/rank.sh" "$r" "$raw/$name" "$@" --rank "$r" --world $world &
			pids+=($!)
		done
		for r in "${pids[@]}"; do
			wait "$r" || die "$name: a rank failed: $(tail -n 3 "$raw/$name".*.err)"
		done
	fi
	echo $(( $(dev_read) - before )) > "$raw/$name.dev"
}

[ -n "${PHOTOS_ONLY:-}" ] || for s in 2 1 0.5; do
	cache=$($py -c "print(int($bytes * $s / $world))")
	for e in 3 5; do
		log "sum of caches ${s}N, $e epochs: single-node, staging, cluster"
		run "single.$s.$e" local "$ctl" bench "$work/data.idx" "${common[@]}" \
			--epochs $e --cache "$cache" --json
		rm -rf "$work"/stage.*
		# Each node's own local disk: a directory per rank.
		for r in $(seq 0 $((world - 1))); do mkdir -p "$work/stage.$r"; done
		run "staging.$s.$e" local bash -c \
			'exec "$0" "$@" --staging-dir "'"$work"'/stage.$DLC_NODE"' \
			"$ctl" bench "$work/data.idx" "${common[@]}" --epochs $e \
			--cache "$cache" --json
		run "cluster.$s.$e" mpi "$mctl" bench "$work/data.idx" --cluster \
			"${common[@]}" --epochs $e --cache "$cache" --json
	done
done
[ -n "${PHOTOS_ONLY:-}" ] || {
log "PyTorch DataLoader, 5 epochs"
run torch.5 local "$py" "$here/../../tools/torch_baseline.py" "$data" --json --workers 1 \
	--batch-size 16 --size 64 --epochs 5 --seed 5
}

photos=$work/mnt/photos
if $py "$here/photo_tiles.py" "$photos" 1280 960 100 > "$raw/photo.tiles" \
	2> "$raw/photo.tiles.err"; then
	"$ctl" index "$photos" -o "$work/photos.idx" > /dev/null
	sync
	pbytes=$(du -sb --apparent-size "$photos" | cut -f1)
	echo "$pbytes" > "$raw/photo.bytes"
	for how in plain prepared; do
		prep=0
		[ $how = prepared ] && prep=1
		log "$(cat "$raw/photo.tiles") large photographs, prepared answers $how"
		run "photo.$how.5" mpi env DLCACHE_CLUSTER_PREPARE=$prep \
			"$mctl" bench "$work/photos.idx" --cluster --batch-size 8 \
			--size 224 --threads 1 --seed 5 --epochs 5 \
			--cache $(( pbytes / world + (1 << 20) )) --json
	done
else
	log "large photographs skipped: $(cat "$raw/photo.tiles.err")"
fi

$py "$here/cluster_report.py" "$raw" "$out" "$images" "$bytes" "$mbps" "$link" $world
cat "$out/cluster.md"
