# Sourced by the cluster test and bench (tests/cli/test_cluster.sh,
# tests/perf/cluster.sh): real slow storage. An ext4 image on a loop
# device (direct I/O to its backing file, so the host's page cache never
# serves it), its reads limited by the block cgroup (v1
# blkio.throttle.read_bps_device, or v2 io.max rbps); a process that
# writes its pid to $slowdisk_procs is throttled. Root only.
#   slowdisk_up IMG SIZE MNT BPS  0, or 1 with the reason in $slowdisk_why
#   slowdisk_read                 bytes the device has read so far
#   slowdisk_down                 unmounts, detaches, removes the cgroup
. "$(dirname "${BASH_SOURCE[0]}")/cglimit.sh"
slowdisk_loop="" slowdisk_dev="" slowdisk_mnt="" slowdisk_cg=""
slowdisk_procs="" slowdisk_why=""

slowdisk_up() {
	local img=$1 size=$2 mnt=$3 bps=$4 majmin
	truncate -s "$size" "$img" &&
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$img" ||
		{ slowdisk_why="mkfs.ext4 $img"; return 1; }
	slowdisk_loop=$(losetup --find --show --direct-io=on "$img") ||
		{ slowdisk_why="losetup"; return 1; }
	mkdir -p "$mnt" && mount -o noatime "$slowdisk_loop" "$mnt" ||
		{ slowdisk_why="mount"; return 1; }
	slowdisk_mnt=$mnt
	slowdisk_dev=$(basename "$slowdisk_loop")
	majmin=$(cat "/sys/block/$slowdisk_dev/dev")
	cglimit_make dlcslow /sys/fs/cgroup/blkio/blkio.throttle.read_bps_device io ||
		{ slowdisk_why=$cglimit_why; return 1; }
	slowdisk_cg=$cglimit_dir slowdisk_procs=$cglimit_procs
	if [ "$cglimit_v" = 1 ]; then
		echo "$majmin $bps" > "$slowdisk_cg/blkio.throttle.read_bps_device"
	else
		echo "$majmin rbps=$bps" > "$slowdisk_cg/io.max"
	fi || { slowdisk_why="a read limit in $slowdisk_cg"; return 1; }
}

slowdisk_read() {
	awk '{printf "%.0f\n", $3 * 512}' "/sys/block/$slowdisk_dev/stat"
}

slowdisk_down() {
	[ -n "$slowdisk_mnt" ] && mountpoint -q "$slowdisk_mnt" && umount "$slowdisk_mnt"
	[ -n "$slowdisk_loop" ] && losetup -d "$slowdisk_loop"
	[ -n "$slowdisk_cg" ] && cglimit_remove "$slowdisk_cg"
	slowdisk_loop="" slowdisk_mnt="" slowdisk_cg=""
	return 0
}
