#!/bin/sh
# The guest's /init for tests/qemu/nvme/nvme.sh: packs on an emulated NVMe
# controller's namespaces, read through io_uring NVMe passthrough.
#
#   nsid 1  48 MiB, EUI-64 set: the pack is written here and read back
#   nsid 2  ext4 holding the data set (ds/) and its pack as a file (ds.dlp)
#   nsid 3  13 MiB: too small for the pack
#   nsid 4  48 MiB under QEMU's blkdebug: reads of sector 24 fail (EIO),
#           which the controller reports as Unrecovered Read Error
#
# (NS1..NS4 below: their block devices, found by nsid.)
#
# Lines: "RESULT ok|FAIL|skip NAME (why)", "DATA NAME JSON", "# ..." and
# NVME-DONE at the end.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev
exec < /dev/console > /dev/console 2>&1
# QEMU_INIT_MARK (tests/qemu/lib.sh): the kernel got this far.
echo "# init: started"
mount -t tmpfs tmp /tmp
CTL=/bin/dlcachectl
arg() { tr ' ' '\n' < /proc/cmdline | sed -n "s/^dlcnv\.$1=//p"; }
CAP_MB=$(arg cap_mb)
result() { echo "RESULT $1 $2${3:+ ($3)}"; }
json_num() { grep -o "\"$1\": *[0-9.]*" "$2" | head -n 1 | sed 's/.*: *//'; }
# The digest of each epoch of a bench --json, space separated.
digests() { grep -o '"digest": "[0-9a-f]*"' "$1" | cut -d'"' -f4 | tr '\n' ' '; }
# Sum of a field over a bench --json's epochs.
epoch_sum() {
	grep -o "\"$1\": [0-9]*" "$2" | awk '{s += $2} END {print s + 0}'
}

for m in $(cat /mods/order); do
	insmod "/mods/$m.ko" 2> /tmp/insmod.err ||
		echo "# insmod $m: $(cat /tmp/insmod.err)"
done
# The block device of namespace ID $1: names follow the order the kernel
# scanned them in (6.12 scans in parallel), not the ID.
ns_dev() {
	for d in /sys/block/nvme0n*; do
		[ "$(cat "$d/nsid" 2> /dev/null)" = "$1" ] && { echo "/dev/${d##*/}"; return; }
	done
}
i=0
while [ -z "$(ns_dev 4)" ] || [ -z "$(ns_dev 1)" ] || [ -z "$(ns_dev 2)" ] ||
      [ -z "$(ns_dev 3)" ]; do
	[ $i -lt 150 ] || break
	sleep 0.2
	i=$((i + 1))
done
NS1=$(ns_dev 1) NS2=$(ns_dev 2) NS3=$(ns_dev 3) NS4=$(ns_dev 4)
NG1=/dev/ng${NS1#/dev/nvme}
if [ -z "$NS1" ] || [ -z "$NS2" ] || [ -z "$NS3" ] || [ -z "$NS4" ]; then
	result FAIL namespaces "not every namespace 1..4 appeared: $(ls /dev | grep -E 'nvme|ng' | tr '\n' ' ')"
	echo NVME-DONE
	poweroff -f
fi
echo "# $(uname -r); $(ls /dev | grep -E '^(nvme|ng)' | tr '\n' ' ')"
if [ -c $NG1 ]; then
	result ok ng-device "$NG1 is the generic character device of $NS1"
else
	result FAIL ng-device "the kernel made no $NG1 for $NS1"
fi
mkdir -p /mnt
i=0
until mount -t ext4 -o ro $NS2 /mnt 2> /tmp/mount.err || [ $i -ge 10 ]; do
	sleep 0.5
	i=$((i + 1))
done
if ! grep -q ' /mnt ' /proc/mounts; then
	result FAIL mount "ext4 on $NS2: $(cat /tmp/mount.err); $(dmesg | grep -i -E 'ext4|jbd|crc' | tail -n 5 | tr '\n' ' '); $(grep ext4 /proc/filesystems)"
	echo NVME-DONE
	poweroff -f
fi
N=$(find /mnt/ds -name '*.jpg' | wc -l)

# ---- pack onto the namespace ----------------------------------------------
if $CTL pack /mnt/ds --to $NS1 --json > /tmp/pack.json 2> /tmp/pack.err; then
	result ok pack-to-namespace "$(cat /tmp/pack.json)"
else
	result FAIL pack-to-namespace "$(cat /tmp/pack.err)"
fi
ID=$(sed -n 's/.*"nvme_id":"\([^"]*\)".*/\1/p' /tmp/pack.json)
case "$ID" in
nvme:*) result ok pack-records-id "$ID" ;;
*) result FAIL pack-records-id "no nvme_id in the summary: $(cat /tmp/pack.json)" ;;
esac
# A namespace holding a file system is refused (it is mounted, too).
if $CTL pack /mnt/ds --to $NS2 > /tmp/p.out 2> /tmp/p.err; then
	result FAIL refuse-file-system "pack --to a namespace holding ext4 succeeded"
elif grep -q 'holds a file system (ext4)' /tmp/p.err; then
	result ok refuse-file-system "$(cat /tmp/p.err)"
else
	result FAIL refuse-file-system "$(cat /tmp/p.err)"
fi
# Too small: the write stops with ENOSPC and leaves no pack to read.
if $CTL pack /mnt/ds --to $NS3 > /tmp/p.out 2> /tmp/p.err; then
	result FAIL too-small "pack --to a 13 MiB namespace succeeded"
elif grep -q 'holds [0-9]* bytes' /tmp/p.err &&
     ! $CTL bench $NS3 --epochs 1 > /tmp/b.out 2> /tmp/b.err &&
     grep -q 'unfinished pack' /tmp/b.err; then
	result ok too-small "$(head -c 300 /tmp/p.err); then bench: $(head -n 1 /tmp/b.err)"
else
	result FAIL too-small "pack: $(cat /tmp/p.err); bench: $(cat /tmp/b.err)"
fi

# ---- read it back ------------------------------------------------------------
# The reference: the same two epochs from the files on ext4.
$CTL bench /mnt/ds --epochs 2 --digest --json > /tmp/files.json 2> /tmp/files.err ||
	result FAIL bench-files "$(cat /tmp/files.err)"
REF=$(digests /tmp/files.json)
echo "# files: digests $REF"

bench_check() {	# name what expect_mode args...
	name=$1 what=$2 mode=$3
	shift 3
	if ! "$@" --digest --json > "/tmp/$name.json" 2> "/tmp/$name.err"; then
		result FAIL "$name" "$what: $(tail -n 3 /tmp/$name.err)"
		return 1
	fi
	got=$(digests "/tmp/$name.json")
	pt=$(epoch_sum passthru_reads "/tmp/$name.json")
	dr=$(epoch_sum direct_reads "/tmp/$name.json")
	errs=$(epoch_sum errors "/tmp/$name.json")
	case "$REF" in "$got"*) same=1 ;; *) same=0 ;; esac
	if [ "$same" != 1 ] || [ "$errs" != 0 ]; then
		result FAIL "$name" "$what: digests $got, files $REF; errors $errs"
		return 1
	fi
	if [ "$mode" = passthru ] && { [ "$pt" -lt 1 ] || [ "$dr" != 0 ]; }; then
		result FAIL "$name" "$what: $pt passthrough commands, $dr O_DIRECT reads"
		return 1
	fi
	if [ "$mode" = direct ] && { [ "$pt" != 0 ] || [ "$dr" -lt 1 ]; }; then
		result FAIL "$name" "$what: $pt passthrough commands, $dr O_DIRECT reads"
		return 1
	fi
	result ok "$name" "$what: the files' digests; $pt passthrough commands, $dr O_DIRECT reads"
}

# Epoch 0 reads every sample through passthrough (--verify all: each
# checked against the crc32c the packer took of what it wrote).
bench_check readback-passthru "$NS1, verify all" passthru \
	$CTL bench $NS1 --epochs 2 --verify all &&
	{ m=$(json_num misses /tmp/readback-passthru.json)
	  ce=$(epoch_sum checksum_errors /tmp/readback-passthru.json)
	  if [ "$m" = "$N" ] && [ "$ce" = 0 ]; then
		result ok readback-every-sample "epoch 0: $m of $N samples read, 0 checksum errors"
	  else
		result FAIL readback-every-sample "epoch 0: $m of $N samples read, $ce checksum errors"
	  fi; }
# Every sample through passthrough, byte for byte against the same sample
# of the host's pack of the set (written by another run, on another
# device; read here with pread through ext4).
if $CTL readbench $NS1 --against /mnt/ds.dlp --json > /tmp/rb.json 2> /tmp/rb.err &&
   grep -q '"mode": "passthru"' /tmp/rb.json && grep -q "\"reads\": $N," /tmp/rb.json; then
	result ok readback-bytes "$N samples read through passthrough, each equal to the host pack's: $(cat /tmp/rb.json)"
else
	result FAIL readback-bytes "$(cat /tmp/rb.err /tmp/rb.json)"
fi
bench_check by-ng-name "named $NG1" passthru $CTL bench $NG1 --epochs 1
bench_check by-id "named $ID" passthru $CTL bench "$ID" --epochs 1 ||
	echo "# sysfs of ${NS1#/dev/}: $(ls /sys/block/${NS1#/dev/} | tr '\n' ' ')"
bench_check no-passthru "--no-passthru: O_DIRECT on $NS1" direct \
	$CTL bench $NS1 --epochs 1 --no-passthru
if [ -f /dlcache.ko ] && insmod /dlcache.ko "capacity_mb=$CAP_MB" 2> /tmp/ko.err; then
	bench_check kernel-backend "dlcache.ko, $CAP_MB MiB" passthru \
		$CTL bench $NS1 --epochs 2 --backend kernel &&
		{ hr=$(grep -o '"hit_ratio": [0-9.]*' /tmp/kernel-backend.json | sed -n 2p | cut -d' ' -f2)
		  case "$hr" in 0.0000|"") result FAIL kernel-backend-hits "epoch 1 hit ratio ${hr:-missing}" ;;
		  *) result ok kernel-backend-hits "epoch 1 hit ratio $hr" ;; esac; }
	$CTL drop > /dev/null 2>&1
	rmmod dlcache 2> /tmp/rmmod.err || result FAIL kernel-backend-rmmod "$(cat /tmp/rmmod.err)"
else
	result FAIL kernel-backend "insmod dlcache.ko: $(cat /tmp/ko.err 2> /dev/null)"
fi

# ---- an unprivileged user ------------------------------------------------------
chmod 0644 $NS1
chmod 0600 $NG1
if bench_check unprivileged-no-ng "uid 65534, $NG1 0600" direct \
	/bin/int_client runas 65534 65534 $CTL bench $NS1 --epochs 1; then
	if grep -q "no NVMe passthrough (open $NG1: Permission denied)" \
			/tmp/unprivileged-no-ng.err &&
	   [ "$(grep -c 'NVMe passthrough' /tmp/unprivileged-no-ng.err)" = 1 ]; then
		result ok unprivileged-fallback-logged "$(grep 'NVMe passthrough' /tmp/unprivileged-no-ng.err)"
	else
		result FAIL unprivileged-fallback-logged "log: $(cat /tmp/unprivileged-no-ng.err)"
	fi
fi
# With read access to $NG1: 6.1 still asks CAP_SYS_ADMIN for every
# passthrough command (the first one is refused: O_DIRECT from then on),
# 6.2 and later let a reader send Read. Either way the same batches.
chmod 0644 $NG1
bench_check unprivileged-ng "uid 65534, $NG1 0644" any \
	/bin/int_client runas 65534 65534 $CTL bench $NS1 --epochs 1 &&
	echo "# unprivileged with $NG1 0644: $(epoch_sum passthru_reads /tmp/unprivileged-ng.json) passthrough commands; log: $(grep 'NVMe' /tmp/unprivileged-ng.err | head -n 2 | tr '\n' ' ')"
chmod 0600 $NG1 $NS1

# ---- an injected media error ---------------------------------------------------
if ! $CTL pack /mnt/ds --to $NS4 > /tmp/p.out 2> /tmp/p.err; then
	result FAIL nvme-error "pack --to $NS4: $(cat /tmp/p.err)"
else
	for how in passthru direct; do
		flag=
		[ $how = direct ] && flag=--no-passthru
		if ! $CTL bench $NS4 --epochs 1 --on-error skip --json $flag \
				> /tmp/err-$how.json 2> /tmp/err-$how.err; then
			result FAIL "nvme-error-$how" "bench failed: $(tail -n 3 /tmp/err-$how.err)"
			continue
		fi
		e=$(epoch_sum errors /tmp/err-$how.json)
		want='status 0x281, unrecovered read error'
		# The block layer's word for a media error: ENODATA.
		[ $how = direct ] && want='No data available\|Input/output error'
		line=$(grep "in $NS4" /tmp/err-$how.err | grep -m 1 "$want")
		if [ "$e" -ge 1 ] && [ "$e" -le 2 ] && [ -n "$line" ]; then
			result ok "nvme-error-$how" "$e sample(s) skipped: $line"
		else
			result FAIL "nvme-error-$how" "$e errors; log: $(head -c 600 /tmp/err-$how.err)"
		fi
	done
fi

# ---- reads per second and CPU per read -----------------------------------------
READS=$((N * 10))
for how in passthru blockdev ext4file; do
	case $how in
	passthru) set -- $NS1 ;;
	blockdev) set -- $NS1 --no-passthru ;;
	ext4file) set -- /mnt/ds.dlp ;;
	esac
	if $CTL readbench "$@" --reads $READS --json > /tmp/rb.json 2> /tmp/rb.err; then
		echo "DATA readbench-$how $(cat /tmp/rb.json)"
	else
		result FAIL "readbench-$how" "$(cat /tmp/rb.err)"
	fi
done
umount /mnt
# The kernel's log of everything above (the console shows only the worst):
# a splat fails the run; the injected media errors are not splats.
if dmesg | grep -E "$(cat /splats.ere)" > /tmp/splats; then
	result FAIL dmesg "$(head -n 5 /tmp/splats | tr '\n' ' ')"
else
	result ok dmesg "no splat in the kernel log"
fi
echo NVME-DONE
poweroff -f
