#!/bin/bash
# Cluster mode (dlc_config.cluster, Documentation/cluster.md) on real links
# and real slow storage. Four MPI ranks (Open MPI's mpirun), each in a
# network namespace of this run's, joined by veth pairs to a bridge, every
# link limited to 200 Mbit/s each way by tbf; the ranks talk over TCP on
# those links only (btl tcp). The shared storage is ext4 on a loop device
# (direct I/O to its backing file) whose reads the block cgroup throttles
# to 16 MB/s; the ranks read it with O_DIRECT, so the bytes it served
# (/sys/block/loopN/stat) are what storage was asked for.
#   - cluster-storage-bytes: the steady epochs' device bytes, against the
#     optimum max(0, N - sum of caches), at sum = N and sum = N/2: within
#     5 % of N. (Steady: a 5-epoch run's bytes less a 3-epoch run's, / 2:
#     epochs 1 and 2 are not steady, their read-ahead ran while the
#     caches filled.)
#   - cluster-batches: each rank's batches are those of the same rank run
#     alone without cluster mode (digests).
#   - cluster-peer-killed: rank 3 killed (SIGKILL) in the middle of epoch
#     2; ranks 0-2 finish every epoch with the same batches, in bounded
#     time, and say a peer died.
# Root only (namespaces, loop device, cgroups). Needs dlcachectl built with
# MPI=1 ($DLCACHECTL_MPI; make check builds it as BUILD/mpi/dlcachectl).
#
# Each sub-check prints "ok NAME", "FAIL NAME" or "skip NAME: why".
set -u
ctl=${DLCACHECTL:-build/dlcachectl}
mctl=${DLCACHECTL_MPI:-build/mpi/dlcachectl}
test_name=test_cluster
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/../netns.sh"
py=/usr/bin/python3
if [ ! -x "$ctl" ] || [ ! -x "$mctl" ]; then
	skip test_cluster "no dlcachectl at $ctl, or none built with MPI=1 at $mctl (DLCACHECTL_MPI)"
	finish
fi
if ! command -v mpirun > /dev/null; then
	skip test_cluster "no mpirun (Debian's openmpi-bin)"
	finish
fi
if [ "$(id -u)" -ne 0 ] || ! losetup -f > /dev/null 2>&1 ||
   ! ip netns add "dlcprobe$$" 2> /dev/null; then
	skip test_cluster "needs root, network namespaces and a free loop device"
	finish
fi
ip netns del "dlcprobe$$"

world=4
tmp=$(mktemp -d)
loop="" bcg="" mpipid=""
cleanup() {
	set +e
	[ -n "$mpipid" ] && kill -9 "$mpipid" 2> /dev/null
	for r in $(seq 0 $((world - 1))); do
		[ -f "$tmp/pid.$r" ] && kill -9 "$(cat "$tmp/pid.$r")" 2> /dev/null
	done
	netns_down
	mountpoint -q "$tmp/mnt" && umount "$tmp/mnt"
	[ -n "$loop" ] && losetup -d "$loop"
	[ -n "$bcg" ] && rmdir "$bcg" 2> /dev/null
	[ -n "${KEEP_TMP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT

# ---- the nodes: namespaces on a bridge, links limited by tbf ----
netns_up "dlc$$" $world 200mbit || fail "network namespaces"
netns_mpi_env

# ---- the shared storage ----
truncate -s 128M "$tmp/disk.img"
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$tmp/disk.img" ||
	fail "mkfs.ext4"
loop=$(losetup --find --show --direct-io=on "$tmp/disk.img") || fail "losetup"
mkdir -p "$tmp/mnt"
mount -o noatime "$loop" "$tmp/mnt" || fail "mount"
dev=$(basename "$loop")
majmin=$(cat "/sys/block/$dev/dev")
data=$tmp/mnt/data
"$ctl" gen "$data" --images 320 --classes 4 --seed 9 > /dev/null || fail "gen"
"$ctl" index "$data" -o "$tmp/data.idx" > /dev/null || fail "index"
sync
bytes=$(du -sb --apparent-size "$data" | cut -f1)
echo "  data set: 320 samples, $bytes bytes, on $loop"

bw=16000000
if [ -e /sys/fs/cgroup/blkio/blkio.throttle.read_bps_device ]; then
	bcg=/sys/fs/cgroup/blkio/dlccluster.$$
	mkdir "$bcg" && echo "$majmin $bw" > "$bcg/blkio.throttle.read_bps_device" ||
		fail "blkio cgroup"
elif grep -qw io /sys/fs/cgroup/cgroup.controllers 2> /dev/null; then
	echo +io > /sys/fs/cgroup/cgroup.subtree_control 2> /dev/null
	bcg=/sys/fs/cgroup/dlccluster.$$
	mkdir "$bcg" && echo "$majmin rbps=$bw" > "$bcg/io.max" || fail "io cgroup"
else
	skip test_cluster "no block cgroup controller to throttle reads with"
	finish
fi
procs=$bcg/cgroup.procs
[ -e "$procs" ] || procs=$bcg/tasks
dev_read() { awk '{printf "%.0f\n", $3 * 512}' "/sys/block/$dev/stat"; }
field() {	# FILE EXPR: a Python expression over j (the JSON), printed
	$py -c 'import json, sys; j = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2> /dev/null
}
common=(--batch-size 16 --size 64 --threads 2 --digest --seed 3)

# One rank: in its namespace and the throttled cgroup; its pid in pid.R.
cat > "$tmp/rank.sh" << EOF
#!/bin/bash
r=\$OMPI_COMM_WORLD_RANK
echo \$\$ > "$tmp/pid.\$r"
echo \$\$ > "$procs"
out=\$1 text=\$2; shift 2
args=("\$@")
[ "\$text" = "\$r" ] || args+=(--json)
exec ip netns exec "dlc$$-\$r" "$mctl" "\${args[@]}" > "\$out.\$r" 2> "\$out.\$r.err"
EOF
chmod +x "$tmp/rank.sh"

# cluster NAME SECONDS ARGS...: the 4 ranks under mpirun, bench's JSON in
# NAME.R (text for rank $TEXT_RANK, which kill_rank kills); the device's
# bytes read to NAME.dev. Returns mpirun's status.
cluster() {
	local name=$1 secs=$2 before rc
	shift 2
	sync
	echo 3 > /proc/sys/vm/drop_caches
	rm -f "$tmp"/pid.*
	before=$(dev_read)
	timeout -k 5 "$secs" mpirun --allow-run-as-root --oversubscribe \
		--enable-recovery -np $world --bind-to none \
		"$tmp/rank.sh" "$tmp/$name" "${TEXT_RANK:--}" bench "$tmp/data.idx" --cluster \
		"${common[@]}" "$@" > "$tmp/$name.mpirun" 2>&1 &
	mpipid=$!
	[ -n "${TEXT_RANK:-}" ] && kill_rank "$name"
	wait "$mpipid"
	rc=$?
	mpipid=""
	echo $(( $(dev_read) - before )) > "$tmp/$name.dev"
	return $rc
}

# ---- batches of each rank alone: the reference ----
for r in $(seq 0 $((world - 1))); do
	"$ctl" bench "$tmp/data.idx" "${common[@]}" --epochs 5 --cache 0 --json \
		--rank $r --world $world > "$tmp/alone.$r" 2> "$tmp/alone.$r.err" ||
		fail "rank $r alone: $(tail -n 3 "$tmp/alone.$r.err")"
done
digests() { field "$1" "[e['digest'] for e in j['epochs']][:$2]"; }
same_batches() {	# NAME EPOCHS RANKS...
	local name=$1 e=$2 r
	shift 2
	for r in "$@"; do
		[ "$(digests "$tmp/$name.$r" "$e")" = "$(digests "$tmp/alone.$r" "$e")" ] ||
			fail "$name: rank $r's batches differ from its batches alone"
	done
}

begin cluster-storage-bytes
for sum in ${SUMS-1 2}; do	# sum of caches = N / sum
	cache=$(( bytes / world / sum ))
	opt=$(( sum == 1 ? 0 : bytes - bytes / sum ))
	cluster "three$sum" 120 --epochs 3 --cache "$cache" ||
		fail "sum N/$sum, 3 epochs: mpirun: $(tail -n 5 "$tmp/three$sum.mpirun")"
	cluster "five$sum" 240 --epochs 5 --cache "$cache" ||
		fail "sum N/$sum, 5 epochs: mpirun: $(tail -n 5 "$tmp/five$sum.mpirun")"
	steady=$(( ($(cat "$tmp/five$sum.dev") - $(cat "$tmp/three$sum.dev")) / 2 ))
	echo "  sum of caches N/$sum: steady epoch read $steady bytes from storage, optimum $opt, N $bytes (the first three epochs $(cat "$tmp/three$sum.dev"))"
	[ "$steady" -le $(( opt + bytes / 20 )) ] ||
		fail "sum N/$sum: $steady bytes a steady epoch, optimum $opt (+5 % of $bytes)"
	for r in $(seq 0 $((world - 1))); do
		echo "    rank $r: $(field "$tmp/five$sum.$r" "'epochs 3-4: %d local, %d from peers, %d peer misses, %d failed; answered %d; %.0f img/s' % tuple(sum(e[k] for e in j['epochs'][3:]) for k in ('cluster_local_hits', 'cluster_peer_hits', 'cluster_peer_misses', 'cluster_peer_failures', 'cluster_served', 'images_per_s'))")"
	done
done
end

begin cluster-batches
same_batches five1 5 0 1 2 3
same_batches five2 5 0 1 2 3
end

begin cluster-peer-killed
# Rank 3 (text: a line as each epoch ends) dies in the middle of epoch 2.
kill_rank() {
	local i n
	for i in $(seq 1 600); do
		n=$(grep -c '^[0-9]' "$tmp/$1.3" 2> /dev/null)
		[ "${n:-0}" -ge 2 ] && break
		sleep 0.1
	done
	sleep 0.3
	kill -9 "$(cat "$tmp/pid.3")" && echo "  killed rank 3 (pid $(cat "$tmp/pid.3")) in epoch 2"
}
t0=$(date +%s)
# A training step of 40 ms keeps the ranks near each other, and reads only
# a window of 16 ahead (no read-ahead): every rank has reads of rank 3's
# samples left after it died.
TEXT_RANK=3 cluster killed 180 --epochs 5 --cache $(( bytes / world )) \
	--peer-timeout 1000 --step-ms 40 --window 16 --readahead off
t=$(( $(date +%s) - t0 ))
echo "  the run took $t s; mpirun said: $(grep -m1 -iE 'signal|killed|exited' "$tmp/killed.mpirun")"
for r in 0 1 2; do
	[ "$(field "$tmp/killed.$r" "len(j['epochs'])")" = 5 ] ||
		fail "rank $r did not finish its 5 epochs: $(tail -n 3 "$tmp/killed.$r.err")"
	dead=$(field "$tmp/killed.$r" "j['epochs'][-1]['cluster_dead_peers']")
	echo "    rank $r: dead peers $dead, failed peer reads $(field "$tmp/killed.$r" "sum(e['cluster_peer_failures'] for e in j['epochs'])"), peer reads in epochs 3-4 $(field "$tmp/killed.$r" "sum(e['cluster_peer_hits'] for e in j['epochs'][3:])")"
	[ "$dead" = 1 ] || fail "rank $r: $dead dead peers, want 1"
	grep -q "rank 3 did not" "$tmp/killed.$r.err" ||
		fail "rank $r did not log rank 3's death"
done
same_batches killed 5 0 1 2
[ "$t" -le 120 ] || fail "the ranks took $t s"
end

finish
