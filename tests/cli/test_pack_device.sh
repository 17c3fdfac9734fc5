#!/bin/bash
# dlcachectl pack --to DEVICE on loop devices (the host has no NVMe; the
# passthrough path is tests/qemu/nvme): the pack is written from the
# device's first byte and the loader reads it by the device's name, the
# batches equal to those from the files and from a .dlp file of the same
# set, every sample byte for byte that file's, and a copy of the device in
# a file reads the same; a device holding ext4 is refused without --force; a device too
# small is refused up front, or, when the estimate passes, the write stops
# with ENOSPC and leaves an invalid header, never a pack; --to a regular
# file is refused. Root only (losetup).
#
# Each sub-check prints "ok NAME", "FAIL NAME" or "skip NAME: why".
set -u
ctl=${DLCACHECTL:-build/dlcachectl}
test_name=test_pack_device
. "$(dirname "$0")/harness.sh"
if [ ! -x "$ctl" ]; then
	skip test_pack_device "no dlcachectl at $ctl (DLCACHECTL)"
	finish
fi
if [ "$(id -u)" -ne 0 ] || ! command -v losetup > /dev/null ||
   ! losetup -f > /dev/null 2>&1; then
	skip test_pack_device "needs root and a free loop device (losetup)"
	finish
fi

tmp=$(mktemp -d)
# The loop devices over $tmp's files ($(loop) runs in a subshell).
cleanup() {
	local f l
	for f in "$tmp"/dev.*; do
		[ -e "$f" ] || continue
		for l in $(losetup -j "$f" | cut -d: -f1); do
			losetup -d "$l" 2> /dev/null
		done
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
loop() {	# size: a loop device over a new sparse file
	local f l
	f=$(mktemp -p "$tmp" dev.XXXX)
	truncate -s "$1" "$f"
	l=$(losetup -f --show "$f") || return 1
	echo "$l"
}
digest() { "$ctl" bench "$@" --epochs 1 --digest 2>/dev/null | awk '/digest/ {print $2}'; }

"$ctl" gen "$tmp/ds" --images 120 --classes 4 > /dev/null || fail "gen"
bytes=$(du -sb "$tmp/ds" | cut -f1)

begin device-pack-reads-back
dev=$(loop 48M) || fail "losetup"
out=$("$ctl" pack "$tmp/ds" --to "$dev" --json 2>&1) || fail "pack --to $dev: $out"
echo "$out" | grep -q "\"pack\":\"$dev\"" || fail "summary: $out"
echo "$out" | grep -q '"device_bytes":50331648' || fail "summary has no device size: $out"
"$ctl" pack "$tmp/ds" -o "$tmp/ds.dlp" > /dev/null || fail "pack -o"
ref=$(digest "$tmp/ds")
[ -n "$ref" ] || fail "no digest from the files"
[ "$(digest "$dev")" = "$ref" ] || fail "batches from $dev differ from the files'"
[ "$(digest "$tmp/ds.dlp")" = "$ref" ] || fail "batches from the .dlp differ"
"$ctl" bench "$dev" --epochs 1 --verify all --json 2>&1 | grep -q '"checksum_errors": 0' ||
	fail "verify all on $dev"
rb=$("$ctl" readbench "$dev" --reads 500 --against "$tmp/ds.dlp" 2>&1) ||
	fail "readbench: $rb"
echo "$rb" | grep -q "all matching their crc32c and the other pack's bytes" ||
	fail "readbench: $rb"
# The same pack copied into a file (more than its bytes, as dd of the
# whole device gives) reads as a file: O_DIRECT through the file system.
dd if="$dev" of="$tmp/copy.dlp" bs=1M status=none || fail "dd"
[ "$(digest "$tmp/copy.dlp")" = "$ref" ] || fail "batches from a copy of $dev differ"
# Written again over itself (a pack is not a file system): no --force.
"$ctl" pack "$tmp/ds" --to "$dev" > /dev/null 2>&1 || fail "pack over a pack wants --force"
end

begin device-refuses-file-system
fs=$(loop 32M) || fail "losetup"
mkfs.ext4 -q -F "$fs" || fail "mkfs.ext4"
out=$("$ctl" pack "$tmp/ds" --to "$fs" 2>&1) && fail "pack --to ext4 succeeded"
echo "$out" | grep -q "holds a file system (ext4): --force" || fail "message: $out"
"$ctl" pack "$tmp/ds" --to "$fs" --force > /dev/null 2>&1 || fail "--force refused"
[ "$(digest "$fs")" = "$ref" ] || fail "batches after --force differ"
end

begin device-too-small
small=$(loop 1M) || fail "losetup"
out=$("$ctl" pack "$tmp/ds" --to "$small" 2>&1) && fail "pack --to 1 MiB succeeded"
echo "$out" | grep -q "holds 1048576 bytes; the 120 samples hold" || fail "message: $out"
# Big enough for the estimate, too small for the pack.
mid=$(loop $(( (bytes * 9 / 10) / 4096 * 4096 ))) || fail "losetup"
out=$("$ctl" pack "$tmp/ds" --to "$mid" 2>&1) && fail "pack --to a device a tenth too small succeeded"
echo "$out" | grep -q "too few for this pack" || fail "message: $out"
out=$("$ctl" bench "$mid" --epochs 1 2>&1) && fail "bench read a pack that was never finished"
echo "$out" | grep -q "an unfinished pack" || fail "bench says: $out"
end

begin device-not-a-file
: > "$tmp/file"
out=$("$ctl" pack "$tmp/ds" --to "$tmp/file" 2>&1) && fail "--to a regular file succeeded"
echo "$out" | grep -q "not a block device (-o writes a file)" || fail "message: $out"
end
finish
