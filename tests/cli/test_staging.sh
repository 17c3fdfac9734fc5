#!/bin/bash
# The staging tier on real slow storage: the data set on ext4 on a loop
# device (direct I/O to its backing file, so the host's page cache never
# serves it), its reads throttled by the block cgroup (v1
# blkio.throttle.read_bps_device, or v2 io.max) to 16 MB/s; the copies on
# the host's own disk. The bytes read come from the device's counters
# (/sys/block/loopN/stat), not from the loader:
#   - three epochs with staging read the device about once (each sample
#     once: at most 10 % more, metadata included), without it three
#     times; epochs 1 and 2 serve every sample from the copies and run at
#     least twice as fast as epoch 0; the batches are those without
#     staging (digests)
#   - a restart (a new process, the same directory) reads no sample from
#     the device; a copy whose origin was touched since (mtime) is not
#     served but removed, and read again; dlcachectl stats --staging says
#     so, with the tier shares; its --prometheus text, read by
#     prometheus_client's parser, holds the same values (staging-prometheus).
# Root only (loop device, cgroups, drop_caches).
#
# Each sub-check prints "ok NAME", "FAIL NAME" or "skip NAME: why".
set -u
ctl=${DLCACHECTL:-build/dlcachectl}
test_name=test_staging
. "$(dirname "$0")/harness.sh"
py=/usr/bin/python3
if [ ! -x "$ctl" ]; then
	skip test_staging "no dlcachectl at $ctl (DLCACHECTL)"
	finish
fi
if [ "$(id -u)" -ne 0 ] || ! losetup -f > /dev/null 2>&1; then
	skip test_staging "needs root and a free loop device (losetup)"
	finish
fi

tmp=$(mktemp -d)
loop="" bcg=""
cleanup() {
	set +e
	mountpoint -q "$tmp/mnt" && umount "$tmp/mnt"
	[ -n "$loop" ] && losetup -d "$loop"
	[ -n "$bcg" ] && rmdir "$bcg" 2> /dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

truncate -s 96M "$tmp/disk.img"
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$tmp/disk.img" ||
	fail "mkfs.ext4"
loop=$(losetup --find --show --direct-io=on "$tmp/disk.img") || fail "losetup"
mkdir -p "$tmp/mnt"
mount -o noatime "$loop" "$tmp/mnt" || fail "mount"
dev=$(basename "$loop")
majmin=$(cat "/sys/block/$dev/dev")
data=$tmp/mnt/data
"$ctl" gen "$data" --images 240 --classes 4 --seed 5 > /dev/null || fail "gen"
"$ctl" index "$data" -o "$tmp/data.idx" > /dev/null || fail "index"
sync
bytes=$(du -sb --apparent-size "$data" | cut -f1)

bw=16000000
if [ -e /sys/fs/cgroup/blkio/blkio.throttle.read_bps_device ]; then
	bcg=/sys/fs/cgroup/blkio/dlcstaging.$$
	mkdir "$bcg" && echo "$majmin $bw" > "$bcg/blkio.throttle.read_bps_device" ||
		fail "blkio cgroup"
elif grep -qw io /sys/fs/cgroup/cgroup.controllers 2> /dev/null; then
	echo +io > /sys/fs/cgroup/cgroup.subtree_control 2> /dev/null
	bcg=/sys/fs/cgroup/dlcstaging.$$
	mkdir "$bcg" && echo "$majmin rbps=$bw" > "$bcg/io.max" || fail "io cgroup"
else
	skip staging-throttled "no block cgroup controller to throttle reads with"
	finish
fi
procs=$bcg/cgroup.procs
[ -e "$procs" ] || procs=$bcg/tasks
dev_read() { awk '{printf "%.0f\n", $3 * 512}' "/sys/block/$dev/stat"; }

# bench NAME ARGS...: throttled, the page cache dropped; JSON to $tmp/NAME.json,
# the device's bytes read to $tmp/NAME.dev.
bench() {
	local name=$1 before
	shift
	sync
	echo 3 > /proc/sys/vm/drop_caches
	before=$(dev_read)
	( echo $BASHPID > "$procs"
	  exec "$ctl" bench "$tmp/data.idx" --cache 0 --batch-size 16 --size 64 \
		--threads 2 --json --digest "$@" ) > "$tmp/$name.json" 2> "$tmp/$name.err" ||
		fail "$name: $(tail -n 3 "$tmp/$name.err")"
	echo $(( $(dev_read) - before )) > "$tmp/$name.dev"
}
field() {	# FILE EXPR: a Python expression over j (the JSON), printed
	$py -c 'import json, sys; j = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2> /dev/null
}

begin staging-reads-storage-once
bench plain --epochs 3
bench staged --epochs 3 --staging-dir "$tmp/stage"
p=$(cat "$tmp/plain.dev") s=$(cat "$tmp/staged.dev")
echo "  device bytes over 3 epochs: $s with staging, $p without ($bytes in the set); ratio $(field "$tmp/staged.json" "round($p / max($s, 1), 2)")x"
[ "$s" -le $(( bytes * 11 / 10 )) ] || fail "staging read $s bytes from the device, the set is $bytes"
[ "$p" -ge $(( bytes * 27 / 10 )) ] || fail "without staging only $p bytes came from the device"
# Per run, not per epoch: the read-ahead reads the next epoch's samples
# (from the copies) while this one ends.
n=$(field "$tmp/staged.json" "j['images']")
o=$(field "$tmp/staged.json" "sum(e['misses'] - e['staging_hits'] + e['staging_prefetched'] for e in j['epochs'])")
h=$(field "$tmp/staged.json" "sum(e['staging_hits'] for e in j['epochs'])")
echo "  the loader's count: $o origin reads, $h from the copies, of $(( 3 * n )) samples"
[ "$o" -ge "$n" ] && [ "$o" -le $(( n + 4 )) ] || fail "$o origin reads of $n samples"
[ "$h" -ge $(( 2 * n - 4 )) ] || fail "only $h of the later epochs' $(( 2 * n )) samples from the copies"
r=$(field "$tmp/staged.json" "round(j['epochs'][2]['images_per_s'] / j['epochs'][0]['images_per_s'], 2)")
echo "  staged epoch 2 / epoch 0 images/s: ${r}x"
[ "$(field "$tmp/staged.json" "int($r >= 2)")" = 1 ] || fail "epoch 2 only ${r}x epoch 0"
[ "$(field "$tmp/staged.json" "[e['digest'] for e in j['epochs']]")" = \
  "$(field "$tmp/plain.json" "[e['digest'] for e in j['epochs']]")" ] ||
	fail "the batches with staging differ from those without"
end

begin staging-restart
# Sample files' origin touched: their copies are stale now.
touched=$(find "$data" -name '*.jpg' | sort | head -n 3)
for f in $touched; do touch -d '2001-01-01' "$f"; done
bench restart --epochs 1 --staging-dir "$tmp/stage"
d=$(cat "$tmp/restart.dev")
n=$(field "$tmp/restart.json" "j['epochs'][0]['images']")
h=$(field "$tmp/restart.json" "j['epochs'][0]['staging_hits']")
echo "  restart: $h of $n from the copies, $d bytes from the device"
[ "$h" -eq $(( n - 3 )) ] || fail "after the restart $h of $n samples came from the copies (3 stale)"
# The 3 samples again, and the metadata the validation stats.
[ "$d" -le $(( bytes / 10 )) ] || fail "the restart read $d bytes from the device"
[ "$(field "$tmp/restart.json" "[e['digest'] for e in j['epochs']]")" = \
  "$(field "$tmp/plain.json" "[e['digest'] for e in j['epochs']][:1]")" ] ||
	fail "the batches after the restart differ"
"$ctl" stats --staging "$tmp/stage" --json > "$tmp/stats.json" || fail "stats --staging"
inv=$(field "$tmp/stats.json" "j['datasets'][0]['invalid']")
[ "$inv" -eq 3 ] || fail "stats --staging: $inv copies found invalid, want 3"
# The job's last epoch: no next use, so the 3 are not staged again.
[ "$(field "$tmp/stats.json" "j['datasets'][0]['copies']")" -eq $(( n - 3 )) ] ||
	fail "stats --staging: $(field "$tmp/stats.json" "j['datasets'][0]['copies']") copies, want $(( n - 3 ))"
"$ctl" stats --staging "$tmp/stage" | grep -q "staged copies" || fail "stats --staging: no tier shares"
end

if ! "$py" -c "import prometheus_client" 2> /dev/null; then
	skip staging-prometheus "no prometheus_client for $py (python3-prometheus-client)"
else
begin staging-prometheus
# The same counters in Prometheus's text format, read by prometheus_client's
# parser, against the JSON.
"$ctl" stats --staging "$tmp/stage" --prometheus > "$tmp/stats.prom" ||
	fail "stats --staging --prometheus"
if "$py" "$(dirname "$0")/../prom_check.py" staging "$tmp/stats.prom" \
	"$tmp/stats.json" > "$tmp/prom.out"; then
	sed 's/^/  /' "$tmp/prom.out"
else
	fail "$(grep -m3 FAIL "$tmp/prom.out" | tr '\n' ' ')"
fi
end
fi

finish
