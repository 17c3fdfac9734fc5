#!/bin/bash
# Packs on a raw NVMe namespace, under QEMU (TCG), in the manner of
# tests/qemu/integration: an emulated NVMe controller (-device nvme, four
# nvme-ns namespaces on raw files, mdts=4 so that a sample larger than
# 64 KiB takes several Read commands), Debian's kernel with its nvme and
# ext4 modules, a static dlcachectl, and guest.sh beside this script as
# /init. The guest writes a pack onto a namespace (dlcachectl pack --to),
# reads it back through io_uring NVMe passthrough on /dev/ng0n1 (every
# sample, checked against its crc32c, the batches equal to those from the
# data set's files), by its three names, with --no-passthru, on dlcache.ko,
# as an unprivileged user, with an injected media error (QEMU's blkdebug:
# EIO on reads of one sector, which the controller reports as Unrecovered
# Read Error), and measures reads/s and CPU per read (dlcachectl
# readbench) for passthrough, O_DIRECT on the block device, and O_DIRECT
# on the same pack as a file in ext4 on the same controller.
#
# Output: "ok|FAIL|skip qemu-nvme-<k>:<name>" lines, "# " details; exit 1
# when a check failed or the guest did not finish. Without QEMU, the
# kernel, its modules, busybox-static or mkfs.ext4: "skip ...:all (why)"
# (a FAIL under CI=true).
#
# Environment: BUILD (build), NVME_KVER (6.1: a release or a series),
# DLCACHE_KO (default $BUILD/kmod-<release>/dlcache.ko), NVME_TAG (prefix,
# qemu-nvme-<series>), NVME_TIMEOUT (seconds for the guest, 600),
# NVME_IMAGES (200), QEMU (qemu-system-x86_64).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
KSERIES=${NVME_KVER:-6.1}
TAG=${NVME_TAG:-qemu-nvme-$KSERIES}
OUT="$BUILD/$TAG"
SRC="$ROOT/tests/qemu/nvme"
QEMU=${QEMU:-qemu-system-x86_64}
TIMEOUT=${NVME_TIMEOUT:-600}
IMAGES=${NVME_IMAGES:-200}
BUSYBOX=${BUSYBOX:-/bin/busybox}
PY=/usr/bin/python3
EUI64=0x00113344556677a1

skip_all() {
	"$ROOT/tests/skip-required.sh" "$TAG:all" "$1"
	exit $?
}

KVER=$("$ROOT/tools/build/kver.sh" "$KSERIES" 2>/dev/null || true)
[ -n "$KVER" ] || skip_all "no $KSERIES kernel installed (make deps)"
KERNEL=/boot/vmlinuz-$KVER
[ -r "$KERNEL" ] || skip_all "no readable kernel image $KERNEL"
MODDIR=/lib/modules/$KVER
[ -f "$MODDIR/modules.dep" ] || skip_all "no $MODDIR/modules.dep for the guest's nvme modules"
KO=${DLCACHE_KO:-$BUILD/kmod-$KVER/dlcache.ko}
command -v "$QEMU" > /dev/null || skip_all "$QEMU not installed"
[ -x "$BUSYBOX" ] || skip_all "no static busybox at $BUSYBOX (busybox-static)"
command -v mkfs.ext4 > /dev/null || skip_all "mkfs.ext4 not installed (e2fsprogs)"
command -v cpio > /dev/null || skip_all "cpio not installed"

mkdir -p "$OUT/bin"
result() {	# ok|FAIL|skip name [why]
	echo "$1 $TAG:$2${3:+ $3}"
}

# ---- static binaries -------------------------------------------------------
. "$ROOT/tests/qemu/lib.sh"
if ! qemu_static_tools "$BUILD" "$OUT/bin" "$OUT/build.log"; then
	sed 's/^/# /' "$OUT/build.log" | tail -n 30
	result FAIL build "(make, or the static link of dlcachectl or int_client, failed)"
	exit 1
fi

# ---- the data set, its pack, and the namespaces' backing files -------------
DATA="$OUT/data"
if [ ! -f "$DATA/ds/.dlcache-gen-done" ]; then
	rm -rf "$DATA"
	"$OUT/bin/dlcachectl" gen "$DATA/ds" --images "$IMAGES" --classes 10 > "$OUT/gen.log" 2>&1 || {
		sed 's/^/# /' "$OUT/gen.log"
		result FAIL build "(dlcachectl gen)"
		exit 1
	}
	"$OUT/bin/dlcachectl" pack "$DATA/ds" -o "$DATA/ds.dlp" --force > "$OUT/pack.log" 2>&1 || {
		sed 's/^/# /' "$OUT/pack.log"
		result FAIL build "(dlcachectl pack)"
		exit 1
	}
fi
DS_BYTES=$(find "$DATA/ds" -name '*.jpg' -printf '%s\n' | awk '{b += $1} END {print b}')
CAP_MB=$(( DS_BYTES / 2 / 1048576 ))
[ "$CAP_MB" -ge 1 ] || CAP_MB=1
rm -f "$OUT"/ns*.img
truncate -s 48M "$OUT/ns1.img" "$OUT/ns4.img"
truncate -s 13M "$OUT/ns3.img"
mb=$(( $(du -sm "$DATA" | cut -f1) * 3 / 2 + 16 ))
if ! mkfs.ext4 -q -F -b 4096 -E root_owner=0:0 -d "$DATA" "$OUT/ns2.img" "${mb}M" \
		> "$OUT/mkfs.log" 2>&1; then
	sed 's/^/# /' "$OUT/mkfs.log"
	result FAIL build "(mkfs.ext4 -d)"
	exit 1
fi
# Reads of sector 24 (bytes 12288..12799, inside the first sample the
# packer wrote) fail with EIO, every time.
cat > "$OUT/blkdebug.conf" <<'EOF'
[inject-error]
event = "read_aio"
iotype = "read"
errno = "5"
sector = "24"
EOF

# ---- initramfs -------------------------------------------------------------
STAGE="$OUT/root"
rm -rf "$STAGE"
qemu_stage_busybox "$STAGE" "$BUSYBOX" mnt
install -m 0755 "$SRC/guest.sh" "$STAGE/init"
install -m 0644 "$ROOT/tests/qemu/splats.ere" "$STAGE/splats.ere"
install -m 0755 "$OUT/bin/dlcachectl" "$OUT/bin/int_client" "$STAGE/bin/"
[ -f "$KO" ] && install -m 0644 "$KO" "$STAGE/dlcache.ko"
# The nvme and ext4 modules and what they need, dependencies first.
qemu_stage_modules "$STAGE" "$MODDIR" crc32c_generic nvme ext4
CPIO="$OUT/initramfs.cpio"
(cd "$STAGE" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) > "$CPIO"

# ---- boot ------------------------------------------------------------------
LOG="$OUT/console.log"
APPEND="$QEMU_APPEND_BASE dlcnv.cap_mb=$CAP_MB"
echo "# $TAG: $(basename "$KERNEL"), NVMe controller with 4 namespaces (mdts=4: 64 KiB a command), tcg; log in $LOG"
# A kernel that dies before /init ran (qemu_died_before_init) boots once
# more; its log is kept as LOG.boot1.
for boot in 1 2; do
	start=$(date +%s)
	set +e
	timeout -k 10 "$TIMEOUT" "$QEMU" -accel tcg -cpu max -smp 2 -m 1G \
		-nodefaults -display none -serial stdio -monitor none -no-reboot \
		-device nvme,id=nvme0,serial=dlcnvme0,mdts=4 \
		-drive "file=$OUT/ns1.img,if=none,id=d1,format=raw" \
		-device "nvme-ns,drive=d1,bus=nvme0,nsid=1,eui64=$EUI64" \
		-drive "file=$OUT/ns2.img,if=none,id=d2,format=raw" \
		-device nvme-ns,drive=d2,bus=nvme0,nsid=2 \
		-drive "file=$OUT/ns3.img,if=none,id=d3,format=raw" \
		-device nvme-ns,drive=d3,bus=nvme0,nsid=3 \
		-drive "file=blkdebug:$OUT/blkdebug.conf:$OUT/ns4.img,if=none,id=d4,format=raw" \
		-device nvme-ns,drive=d4,bus=nvme0,nsid=4 \
		-kernel "$KERNEL" -initrd "$CPIO" -append "$APPEND" < /dev/null 2>&1 |
		qemu_console "$LOG" | grep --line-buffered -E '^RESULT |^# ' |
		sed -u -e "s/^RESULT \\([a-zA-Z]*\\) \\([^ ]*\\)/\\1 $TAG:\\2/"
	qrc=${PIPESTATUS[0]}
	set -e
	if [ $boot = 1 ] && qemu_died_before_init "$LOG"; then
		cp "$LOG" "$LOG.boot1"
		echo "# $TAG: the guest's kernel died before /init ran, no code of dlcache's loaded ($QEMU_EARLY_WHY; $LOG.boot1): booting it once more"
		continue
	fi
	break
done
echo "# $TAG: the guest took $(( $(date +%s) - start ))s"
rc=0
grep -q '^RESULT FAIL' "$LOG" && rc=1
if ! qemu_guest_done "$LOG" NVME-DONE "$qrc" "$TIMEOUT"; then
	result FAIL guest "($QEMU_GUEST_WHY)"
	rc=1
fi

# ---- reads per second and CPU per read ------------------------------------
"$PY" - "$TAG" "$LOG" <<'PY' || rc=1
import json, sys
tag, log = sys.argv[1:]
rb = {}
for line in open(log, errors="replace"):
    if line.startswith("DATA readbench-"):
        name, js = line[5:].split(" ", 1)
        rb[name[len("readbench-"):]] = json.loads(js)
want = ["passthru", "blockdev", "ext4file"]
missing = [w for w in want if w not in rb]
if missing:
    print(f"FAIL {tag}:readbench (no result for {', '.join(missing)})")
    sys.exit(1)
p = rb["passthru"]
ok = p["mode"] == "passthru" and rb["blockdev"]["mode"] == "direct" \
    and rb["ext4file"]["mode"] == "direct"
for w in want:
    r = rb[w]
    print(f"# readbench {w:9s} {r['mode']:8s} {r['reads']} reads, "
          f"{r['reads_per_s']:.0f} reads/s, {r['cpu_us_per_read']:.1f} us CPU a read, "
          f"{r['passthru_commands']} NVMe commands")
print(f"# readbench ratios: passthrough / O_DIRECT on the block device: "
      f"{p['reads_per_s'] / rb['blockdev']['reads_per_s']:.2f}x reads/s, "
      f"{p['cpu_us_per_read'] / rb['blockdev']['cpu_us_per_read']:.2f}x CPU a read; "
      f"/ O_DIRECT on the ext4 file: "
      f"{p['reads_per_s'] / rb['ext4file']['reads_per_s']:.2f}x reads/s, "
      f"{p['cpu_us_per_read'] / rb['ext4file']['cpu_us_per_read']:.2f}x CPU a read "
      f"(TCG: only the ratios mean anything)")
print(("ok" if ok else "FAIL") + f" {tag}:readbench" +
      ("" if ok else f" (modes {[rb[w]['mode'] for w in want]})"))
sys.exit(0 if ok else 1)
PY
exit $rc
