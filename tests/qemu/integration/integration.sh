#!/bin/bash
# dlcache end-to-end integration test under QEMU (TCG): libdlcache and
# dlcachectl on /dev/dlcache with a real disk, against the page cache.
#
# The guest boots Debian's 6.1 kernel (INT_KVER picks another) with a virtio disk holding an ext4
# image of a generated data set (dlcachectl gen, about 300 JPEGs, 21 MB;
# mkfs.ext4 -d fills the image without mounting). Its initramfs holds
# busybox, the ext4-on-virtio modules of /lib/modules/<release>, dlcache.ko,
# a statically linked dlcachectl and a small static C helper
# (int_client.c). The guest (guest.sh) then:
#
#   0. eight benches of as many jobs (different seeds) start at the same
#      moment on the data set, twice: the module just loaded, then the data
#      set idle; every one must start (concurrent-starts);
#   1. loads dlcache.ko with capacity_mb about half the data set and runs two
#      processes, `dlcachectl bench --backend kernel --world 2 --rank R`,
#      concurrently for 3 epochs; meanwhile it checks `dlcachectl datasets`,
#      `stats KEY`, `watch`, that rmmod is refused, and that an ATTACH with
#      the wrong sample count for the live key fails -EINVAL;
#   1b. a restart (kernel-restart-hit-ratio): after DROP, the same two ranks
#      run epoch 0 alone and are killed (SIGKILL) once it is done; restarted
#      with `bench --start-epoch 1 --epochs 2`, they find their data set
#      still cached (idle, DLCACHE_FEAT_IDLE) and epoch 1's byte hit ratio
#      must be within 0.02 of step 1's uninterrupted epoch 1 (checked in
#      the guest; epoch 2 printed too);
#   2. the admin commands without a bench: capacity get/set, drop, EPERM
#      for uid 65534, watch ended by SIGTERM;
#   3. permissions and trust (ABI 2: data sets are named by key and owner):
#      a bench of uid 65534 with the default config uses its own data set,
#      never root's (no hit in its first epoch, both owners listed); with
#      --owner-uid 0 it says it trusts uid 0 and root's 0600 data set
#      refuses it (--backend kernel fails, auto falls back);
#   4. kills a process that owns fills (int_client hold-fills) while a
#      bench waits for them: the fills are aborted, handed over, and the
#      bench finishes; then kills one of two benches that share fills (same
#      rank and seed) in epoch 1: the other must finish every epoch;
#   5b. (after the pack) decoded forms on dlcache.ko: job A makes them,
#      job B (another transform) decodes at most half its samples itself;
#      both get the batches of a run without the module, and so does the
#      pack from its own form set; datasets and --prometheus tell the form
#      set from its encoded set;
#   5. wrong bytes: int_client put-wrong PUTs other bytes for three samples
#      into root's own data set of the library's key; a kernel-backend bench
#      must count checksum_errors, name each path once in its log, and give
#      the batches (bench --digest) of a bench without the kernel backend;
#      then rmmod must succeed (no leaked reference);
#   6. the same two-rank workload on the page cache alone (buffered reads,
#      no cache of its own) with the guest's memory cgroup held to the
#      capacity plus the processes' own peak, a fresh shuffle per epoch,
#      caches dropped before the first; the disk's sectors give its hit
#      ratio per epoch;
#   7. many jobs, one cache: two jobs with different seeds, job B at about
#      half job A's pace (bench --step-ms), read the data set together on
#      dlcache.ko (a consumer each), then each with its own in-process
#      cache, then on the page cache alone; then two ranks of one job in
#      lockstep once and drifting freely (no barrier) ten times;
#   8. the data set's pack (made here, on the disk beside it): two epochs
#      on the kernel backend, in-process and from the files give the same
#      digests, and the second epoch hits (kernel-pack-*).
#
# The host checks the numbers (python3):
#   kernel-hit-ratio      the byte hit ratio of each epoch 1.. (1 - bytes read /
#                         data set bytes, both ranks, kept in step as DDP
#                         ranks are) within 0.02 of the optimum for one-pass shuffles, capacity / sum of
#                         the samples' whole pages (the module charges pages)
#   kernel-bench-bytes    bench bytes_read summed over ranks and epochs
#                         <= 1.05 x what the optimum must read
#   kernel-disk-bytes     the same from /sys/block/vda/stat (in pages)
#   kernel-stats-prometheus `dlcachectl stats --prometheus`, read by
#                         prometheus_client's parser (tests/prom_check.py):
#                         every value between those of stats --json read
#                         just before and just after it
#   kernel-stats-agree    `dlcachectl stats --json` global hits and misses
#                         = the sums of the two bench runs
#   killed-*-counts       the survivors decoded every sample of every epoch
#   pagecache-ratio       a measurement only: "# " line with both ratios
#   jobs-*, drift-*       tests/qemu/integration/jobs.py: disk bytes of the
#                         two jobs on dlcache.ko <= 1.10 x the offline
#                         optimum of the merged trace and <= 0.6 x two
#                         separate in-process caches (the jobs' steps are
#                         calibrated to the guest's speed; whatif
#                         --attached and the consumers' poll watch a pair
#                         of their own, jobs-run-w, not the timed run);
#                         drifting ranks
#                         within 0.01 of the lockstep hit ratio (the median,
#                         and all runs but one, which stays within 0.05),
#                         each run's bytes against its own trace's optimum
#                         printed (drift-vs-optimum)
#   storage-kernel-readahead  one rank, the disk's reads throttled to
#                         INT_STORAGE_KBPS (2000; 0 on the debug kernel)
#                         kB/s by io.max, window 32: dlcache.ko's steady
#                         epochs with read-ahead reach >= 0.90 of
#                         max(bytes read / bandwidth, the decode side's own
#                         time) and >= 0.98 x its images/s without; the
#                         in-process cache's pair is printed beside it
#
# Output: "ok|FAIL|skip qemu-int:<name>" lines, "# " details; exit 1 when
# a check failed or the guest did not finish. Without the kernel image for
# the module's release, QEMU,
# busybox-static, mkfs.ext4 or the module: "skip qemu-int:all (why)", exit 0.
#
# Environment: BUILD (build), INT_KVER (kernel release or series, 6.1),
#   INT_KERNEL (default /boot/vmlinuz-<release>; the guest's disk modules
#   come from /lib/modules/<release>), DLCACHE_KO (default
#   $BUILD/kmod-<release>/dlcache.ko, else $BUILD/kmod/dlcache.ko; its
#   vermagic must match), QEMU (qemu-system-x86_64),
#   INT_TIMEOUT (seconds for the guest, 900), INT_IMAGES (300),
#   INT_TIMING (1; 0 on the debug kernel: the runs behind the checks
#   that hold only at the workload's pace, kernel-restart-hit-ratio,
#   the page cache's, jobs-disk-* and drift-*, are cut to what
#   exercises the code: kernel-restart-warm, jobs-run-k, drift-runs),
#   INT_EPOCHS (3), INT_MEM (1G), INT_TAG (prefix of the result lines,
#   qemu-int), INT_APPEND (more guest command line: dlcint.starts_only=1
#   runs step 0 alone, dlcint.starts_rounds=N its rounds,
#   dlcint.drift_only=N the drift runs alone, N drifting, with TRACE
#   lines of the module's consumers in the log; dlcint.jobs_only=N the
#   jobs' k run alone, N times, each judged by jobs.py (jobs-study-kI:
#   the bound, each job's waits, each epoch's reads over Belady's), with
#   TRACE lines), INT_MODDIR (where the guest's disk modules come from,
#   /lib/modules/<release>; "none" for a kernel that has them built in, as
#   the debug kernel of tests/qemu/debug-kernel does).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
TAG=${INT_TAG:-qemu-int}
OUT="$BUILD/$TAG"
SRC="$ROOT/tests/qemu/integration"
QEMU=${QEMU:-qemu-system-x86_64}
TIMEOUT=${INT_TIMEOUT:-900}
IMAGES=${INT_IMAGES:-300}
# The storage-bound runs' read limit in kB/s (0: none). Not on the debug
# kernel, where decode, not a 2 MB/s disk, sets the pace.
case "$TAG" in qemu-debug*) STORAGE_KBPS=${INT_STORAGE_KBPS:-0} ;;
*) STORAGE_KBPS=${INT_STORAGE_KBPS:-2000} ;; esac
# Whether the checks that hold only at a workload's pace are judged (1),
# or the runs behind them exercise the code alone (0: the debug kernel).
# KASAN, lockdep and kmemleak under TCG make both jobs decode-bound and
# the guest 2-3x slower: the jobs' steps, the drifting ranks' pace and a
# restart's look-ahead are then not the workload those checks describe,
# and their bounds are judged on the stock kernels instead.
case "$TAG" in qemu-debug*) TIMING=${INT_TIMING:-0} ;;
*) TIMING=${INT_TIMING:-1} ;; esac
EPOCHS=${INT_EPOCHS:-3}
MEM=${INT_MEM:-1G}
BUSYBOX=${BUSYBOX:-/bin/busybox}
PY=/usr/bin/python3

# A missing dependency skips the whole suite, one line; a FAIL under
# CI=true, where make deps installs everything.
skip_all() {
	"$ROOT/tests/skip-required.sh" "$TAG:all" "$1"
	exit $?
}

# The kernel: INT_KVER, a release or a series (6.1 = its newest installed
# release), as tests/qemu/run.sh's QEMU_KVER; the module built for it by
# `make module KVER=<release>` (build/kmod-<release>/dlcache.ko).
if [ -n "${INT_KERNEL:-}" ]; then
	KVER=${INT_KERNEL##*/vmlinuz-}
else
	KVER=$("$ROOT/tools/build/kver.sh" "${INT_KVER:-6.1}" 2>/dev/null || true)
fi
[ -n "$KVER" ] || skip_all "no ${INT_KVER:-6.1} kernel installed (make deps)"
KERNEL=${INT_KERNEL:-/boot/vmlinuz-$KVER}
[ -r "$KERNEL" ] || skip_all "no readable kernel image $KERNEL"
if [ -n "${DLCACHE_KO:-}" ]; then
	KO=$DLCACHE_KO
elif [ -f "$BUILD/kmod-$KVER/dlcache.ko" ]; then
	KO=$BUILD/kmod-$KVER/dlcache.ko
else
	KO=$BUILD/kmod/dlcache.ko
fi
[ -f "$KO" ] || skip_all "no module at $KO (make module KVER=$KVER)"
KO_KVER=$(modinfo -F vermagic "$KO" 2>/dev/null | awk '{print $1}' || true)
[ "$KO_KVER" = "$KVER" ] ||
	skip_all "$KO is built for ${KO_KVER:-an unknown kernel}, not $KVER (make module KVER=$KVER)"
MODDIR=${INT_MODDIR:-/lib/modules/$KVER}
[ "$MODDIR" = none ] || [ -f "$MODDIR/modules.dep" ] || skip_all "no $MODDIR/modules.dep for the guest's disk modules"
command -v "$QEMU" > /dev/null || skip_all "$QEMU not installed"
[ -x "$BUSYBOX" ] || skip_all "no static busybox at $BUSYBOX (busybox-static)"
command -v cpio > /dev/null || skip_all "cpio not installed"
command -v mkfs.ext4 > /dev/null || skip_all "mkfs.ext4 not installed (e2fsprogs)"
[ -x "$PY" ] || skip_all "no $PY"

mkdir -p "$OUT/bin"
FAILS=0
result() {	# ok|FAIL|skip name [why]
	local st=$1 name=$2
	shift 2
	[ "$st" = FAIL ] && FAILS=$((FAILS + 1))
	echo "$st $TAG:$name${*:+ $*}"
}

# ---- static binaries -------------------------------------------------------
. "$ROOT/tests/qemu/lib.sh"
qemu_static_tools "$BUILD" "$OUT/bin" "$OUT/build.log" || {
	st=$?
	sed 's/^/# /' "$OUT/build.log" | tail -n 30
	case $st in
	1) result FAIL build "(make dlcachectl failed)" ;;
	2) result FAIL build "(static link of dlcachectl failed: liburing-dev, libnvme-dev, libjpeg62-turbo-dev, libpng-dev, libblkid-dev, zlib1g-dev?)" ;;
	*) result FAIL build "(int_client.c)" ;;
	esac
	exit 1
}

# The library's kernel backend: without it the kernel checks are skipped.
NOKERNEL=0
"$OUT/bin/dlcachectl" bench --help | grep -q -- '--backend' || NOKERNEL=1

# ---- the data set and its disk image ---------------------------------------
DATA="$OUT/data"
IMG="$OUT/disk.img"
"$OUT/bin/dlcachectl" gen "$DATA/ds" --images "$IMAGES" --classes 10 > "$OUT/gen.log" 2>&1 || {
	sed 's/^/# /' "$OUT/gen.log"
	result FAIL build "(dlcachectl gen)"
	exit 1
}
# Its pack (dlcachectl pack), beside it on the disk: guest.sh reads it on
# the kernel backend.
if [ ! -f "$DATA/ds.dlp" ] || [ "$DATA/ds/.dlcache-gen-done" -nt "$DATA/ds.dlp" ]; then
	"$OUT/bin/dlcachectl" pack "$DATA/ds" -o "$DATA/ds.dlp" --force > "$OUT/pack.log" 2>&1 || {
		sed 's/^/# /' "$OUT/pack.log"
		result FAIL build "(dlcachectl pack)"
		exit 1
	}
fi
if [ ! -f "$IMG" ] || [ "$DATA/ds/.dlcache-gen-done" -nt "$IMG" ] ||
   [ "$DATA/ds.dlp" -nt "$IMG" ]; then
	mb=$(( $(du -sm "$DATA" | cut -f1) * 3 / 2 + 16 ))
	rm -f "$IMG.tmp"
	if ! mkfs.ext4 -q -F -b 4096 -L dlcint -E root_owner=0:0 -d "$DATA" "$IMG.tmp" "${mb}M" \
			> "$OUT/mkfs.log" 2>&1; then
		sed 's/^/# /' "$OUT/mkfs.log"
		result FAIL build "(mkfs.ext4 -d)"
		exit 1
	fi
	mv "$IMG.tmp" "$IMG"
fi
# Sizes of the samples as the index sees them (files under class dirs).
read -r DS_BYTES PAGE_BYTES NFILES < <(find "$DATA/ds" -mindepth 2 -type f -name '*.jpg' \
	-printf '%s\n' | awk '{b += $1; p += int(($1 + 4095) / 4096) * 4096; n++}
	END {print b, p, n}')
# Capacity: half the data set, in whole MiB as capacity_mb takes it.
CAP_MB=$(( DS_BYTES / 2 / 1048576 ))
[ "$CAP_MB" -ge 1 ] || CAP_MB=1

# ---- initramfs -------------------------------------------------------------
STAGE="$OUT/root"
rm -rf "$STAGE"
qemu_stage_busybox "$STAGE" "$BUSYBOX" mnt
install -m 0755 "$SRC/guest.sh" "$STAGE/init"
install -m 0644 "$ROOT/tests/qemu/splats.ere" "$STAGE/splats.ere"
install -m 0755 "$OUT/bin/dlcachectl" "$OUT/bin/int_client" "$STAGE/bin/"
install -m 0644 "$KO" "$STAGE/dlcache.ko"
# ext4 on virtio-blk and what they need; the ones built in are left out.
mkdir -p "$STAGE/mods"
: > "$STAGE/mods/order"
[ "$MODDIR" = none ] || qemu_stage_modules "$STAGE" "$MODDIR" virtio_pci virtio_blk crc32c_generic ext4
CPIO="$OUT/initramfs.cpio"
# /dev/console as a cpio entry, so that no mknod (root) is needed.
cpio_entry() {
	local name=$1 mode=$2 maj=$3 min=$4 nlink=$5 namesize pad
	namesize=$((${#name} + 1))
	printf '070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%s\0' \
		0 "$mode" 0 0 "$nlink" 0 0 0 0 "$maj" "$min" "$namesize" 0 "$name"
	pad=$(( (4 - (110 + namesize) % 4) % 4 ))
	[ $pad -eq 0 ] || head -c $pad /dev/zero
}
{
	(cd "$STAGE" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet)
	cpio_entry dev/console $((0020600)) 5 1 1
	cpio_entry TRAILER!!! 0 0 0 1
} > "$CPIO"

# ---- boot ------------------------------------------------------------------
LOG="$OUT/console.log"
APPEND="$QEMU_APPEND_BASE"
APPEND+=" dlcint.cap_mb=$CAP_MB dlcint.epochs=$EPOCHS dlcint.nokernel=$NOKERNEL"
APPEND+=" dlcint.storage_kbps=$STORAGE_KBPS dlcint.timing=$TIMING dlcint.limit_s=$TIMEOUT"
APPEND+="${INT_APPEND:+ $INT_APPEND}"
echo "# $TAG: $(basename "$KERNEL"), 2 cpus, $MEM, tcg; $NFILES samples, $DS_BYTES bytes ($PAGE_BYTES in pages), capacity_mb=$CAP_MB; log in $LOG"
start=$(date +%s)
set +e
timeout -k 10 "$TIMEOUT" "$QEMU" -accel tcg -cpu max -smp 2 -m "$MEM" \
	-nodefaults -display none -serial stdio -monitor none -no-reboot \
	-drive "file=$IMG,format=raw,if=virtio,readonly=on" \
	-kernel "$KERNEL" -initrd "$CPIO" -append "$APPEND" < /dev/null 2>&1 |
	qemu_console "$LOG" | grep --line-buffered -E '^RESULT |^# ' |
	sed -u -e "s/^RESULT \\([a-zA-Z]*\\) \\([^ ]*\\)/\\1 $TAG:\\2/"
qrc=${PIPESTATUS[0]}
set -e
elapsed=$(( $(date +%s) - start ))
echo "# $TAG: the guest took ${elapsed}s"

FAILS=$(grep -c '^RESULT FAIL' "$LOG" || true)
qemu_guest_done "$LOG" INT-DONE "$qrc" "$TIMEOUT" ||
	result FAIL guest "($QEMU_GUEST_WHY)"

# ---- the numbers -----------------------------------------------------------
set +e
PROM_CHECK="$ROOT/tests/prom_check.py" \
"$PY" - "$TAG" "$LOG" "$DS_BYTES" "$PAGE_BYTES" "$NFILES" "$((CAP_MB * 1048576))" "$EPOCHS" <<'PY'
import json, os, sys

tag, log = sys.argv[1], sys.argv[2]
ds_bytes, page_bytes, nfiles, cap, epochs = map(int, sys.argv[3:])
data = {}
for line in open(log, errors="replace"):
    line = line.rstrip("\n")
    if line.startswith("DATA "):
        _, name, *rest = line.split(" ", 2)
        data.setdefault(name, []).append(rest[0] if rest else "")

fails = 0
def result(st, name, why=""):
    global fails
    if st == "FAIL":
        fails += 1
    print(f"{st} {tag}:{name}" + (f" ({why})" if why else ""), flush=True)

opt = min(1.0, cap / page_bytes)
print(f"# capacity {cap} bytes; data set {ds_bytes} bytes in {nfiles} samples, "
      f"{page_bytes} bytes in whole pages; optimum hit ratio for one-pass shuffles "
      f"= capacity / pages = {opt:.4f}")

# A bench epoch's counters are differences of counters that only grow: one
# past 2^63 went down during the epoch (readahead_reads did, by 44, when a
# look-up begun in one epoch found the module holding the sample in the
# next).
# The JSON a step printed only as a comment ("#   {...}") counts too.
went_down = []
printed = [("line %d" % n, l[1:].strip())
           for n, l in enumerate(open(log, errors="replace"), 1)
           if l.startswith("#   {")]
for name, v in [(n, v) for n, vs in sorted(data.items()) for v in vs] + printed:
    try:
        b = json.loads(v)
    except ValueError:
        continue
    # A bench's "epochs" is a list; whatif's is a count.
    eps = b.get("epochs") if isinstance(b, dict) else None
    for e in eps if isinstance(eps, list) else []:
        went_down += ["%s epoch %s %s=%d" % (name, e.get("epoch"), k, x)
                      for k, x in e.items()
                      if isinstance(x, int) and x >= 1 << 63]
if went_down:
    result("FAIL", "counters-grow", "; ".join(went_down[:4]))
else:
    result("ok", "counters-grow")

def prom_check(tag, name):
    import base64, subprocess, tempfile
    with tempfile.TemporaryDirectory() as td:
        try:
            prom = base64.b64decode(data[tag + "_prom"][0])
        except (KeyError, IndexError, ValueError) as ex:
            prom = None
            result("FAIL", name, f"no stats --prometheus: {ex!r}")
        if prom is not None:
            open(os.path.join(td, "p"), "wb").write(prom)
            open(os.path.join(td, "j"), "w").write(data[tag + "_stats"][0])
            open(os.path.join(td, "j2"), "w").write(
                data.get(tag + "_stats_after", ["no second stats --json"])[0])
            r = subprocess.run([sys.executable, os.environ["PROM_CHECK"],
                                "module", os.path.join(td, "p"), os.path.join(td, "j"),
                                os.path.join(td, "j2")],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            out = " ".join(r.stdout.split("\n")[-4:]).strip()
            if r.returncode == 77:
                result("FAIL" if os.environ.get("CI") in ("true", "1") else "skip",
                       name, out)
            else:
                result("ok" if r.returncode == 0 else "FAIL", name, out)


def epoch_hits(e):
    """hits and misses of one bench epoch object (exact fields, else derived)."""
    if "hits" in e and "misses" in e:
        return e["hits"], e["misses"], True
    h = round(e["hit_ratio"] * e["images"])
    return h, e["images"] - h, False

kernel = None
if "k_bench0" in data and "k_bench1" in data:
    try:
        kernel = [json.loads(data["k_bench0"][0]), json.loads(data["k_bench1"][0])]
    except ValueError as ex:
        result("FAIL", "kernel-json", str(ex))
if kernel is None:
    why = ("kernel backend not available" if data.get("nokernel", ["0"])[0] == "1"
           else "no kernel bench results")
    for n in ("kernel-hit-ratio", "kernel-bench-bytes", "kernel-disk-bytes",
              "kernel-stats-agree", "kernel-stats-prometheus"):
        result("skip", n, why)
else:
    for b in kernel:
        if b.get("backend") != "kernel":
            result("FAIL", "kernel-backend", f"bench ran with backend {b.get('backend')}")
    k_ratio = []
    for ep in range(epochs):
        rd = sum(b["epochs"][ep]["bytes_read"] for b in kernel)
        imgs = sum(b["epochs"][ep]["images"] for b in kernel)
        hits = sum(epoch_hits(b["epochs"][ep])[0] for b in kernel)
        br = 1 - rd / ds_bytes
        k_ratio.append(br)
        print(f"# dlcache.ko epoch {ep}: read {rd} bytes, byte hit ratio {br:.4f}, "
              f"count hit ratio {hits / max(imgs, 1):.4f} ({hits}/{imgs}), "
              f"errors {sum(b['epochs'][ep]['errors'] for b in kernel)}")
    # The ranks run in step (bench --lockstep), as DDP ranks do, so every
    # warm epoch must be within 0.02 of the optimum on its own.
    warm = k_ratio[1:]
    bad = [ep for ep, r in enumerate(warm, 1) if abs(r - opt) > 0.02]
    st = "ok" if warm and not bad else "FAIL"
    result(st, "kernel-hit-ratio",
           f"epochs 1..{epochs - 1}: " + ", ".join(f"{r:.4f}" for r in warm) +
           f" vs optimum {opt:.4f}, allowed 0.02 each" +
           (f"; off: epochs {bad}" if bad else ""))

    need = ds_bytes * (1 + (epochs - 1) * (1 - opt))
    got = sum(e["bytes_read"] for b in kernel for e in b["epochs"])
    result("ok" if got <= 1.05 * need else "FAIL", "kernel-bench-bytes",
           f"read {got} bytes, optimum {need:.0f}, ratio {got / need:.4f}, allowed 1.05")
    need_pages = page_bytes * (1 + (epochs - 1) * (1 - opt))
    disk = int(data.get("k_disk_bytes", ["0"])[0])
    result("ok" if 0 < disk <= 1.05 * need_pages else "FAIL", "kernel-disk-bytes",
           f"/sys/block/vda/stat: {disk} bytes, optimum {need_pages:.0f} in pages, "
           f"ratio {disk / need_pages:.4f}, allowed 1.05")

    try:
        st = json.loads(data["k_stats"][0])
        g = st["global"]
        bh = bm = 0
        exact = True
        for b in kernel:
            for e in b["epochs"]:
                h, m, ex = epoch_hits(e)
                bh += h
                bm += m
                exact &= ex
        how = "bench hits/misses" if exact else "bench hits derived from hit_ratio x images"
        ok = g["hits"] == bh and g["misses"] == bm
        result("ok" if ok else "FAIL", "kernel-stats-agree",
               f"stats: {g['hits']} hits, {g['misses']} misses; {how}: {bh} hits, {bm} misses; "
               f"stats byte hit ratio {g['byte_hit_ratio']:.4f}, evictions {g['evictions']}, "
               f"bypasses {g['bypasses']}, waits {g['waits']}")
    except (KeyError, ValueError, IndexError) as ex:
        result("FAIL", "kernel-stats-agree", f"no usable stats --json: {ex!r}")

    # stats --prometheus, read by prometheus_client's parser
    # (tests/prom_check.py), holds the values stats --json has: each
    # between the JSON read before it and the JSON read after it.
    prom_check("k", "kernel-stats-prometheus")


# With forms: a form set beside its encoded set (same key and owner).
if "f_prom" in data:
    prom_check("f", "kernel-forms-prometheus")

for src, name, extra in (
        ("held_bench", "killed-filler-counts",
         lambda: f"waits {data.get('held_waits', ['?'])[0]}, "
                 f"aborted fills {data.get('held_aborts', ['?'])[0]}"),
        ("kill_survivor", "killed-bench-counts",
         lambda: f"waits {data.get('kill_waits', ['?'])[0]}, "
                 f"aborted fills {data.get('kill_aborts', ['?'])[0]}")):
    if src not in data:
        result("skip", name, "no survivor results")
        continue
    try:
        s = json.loads(data[src][0])
        bad = [e for e in s["epochs"] if e["images"] != nfiles or e["errors"]]
        result("FAIL" if bad else "ok", name,
               "survivor epochs: " + ", ".join(
                   f"{e['images']} images/{e['errors']} errors" for e in s["epochs"]) +
               "; " + extra())
    except (KeyError, ValueError) as ex:
        result("FAIL", name, repr(ex))

pc = {}
for v in data.get("pc_epoch", []):
    e, b = v.split()
    pc[int(e)] = int(b)
if len(pc) == epochs:
    pc_ratio = [1 - pc[e] / page_bytes for e in range(epochs)]
    pcf = (data.get("pc_file", ["? ?"])[0].split() + ["?", "?"])[:2]
    for e in range(epochs):
        print(f"# page cache epoch {e}: disk read {pc[e]} bytes, hit ratio {pc_ratio[e]:.4f}")
    print(f"# page cache held to memory.max {data.get('pc_limit', ['?'])[0]} bytes "
          f"(capacity {cap} + the processes' own {data.get('pc_overhead', ['?'])[0]}); "
          f"page cache held {pcf[1]} bytes on average, {pcf[0]} at most "
          f"(dlcache.ko: {cap}); the processes' own memory: max/mean "
          f"{data.get('pc_nonfile', ['?'])[0]}")
    try:
        own = int(pcf[1]) / page_bytes
        print(f"# page cache: optimum for its own average size {own:.3f}, reached " +
              " ".join(f"{r / own:.2f}x" for r in pc_ratio[1:]) + " of it")
    except (ValueError, ZeroDivisionError):
        pass
    if kernel is not None:
        print("# hit ratio, epochs 1..: dlcache.ko " +
              " ".join(f"{r:.3f}" for r in k_ratio[1:]) + " | page cache " +
              " ".join(f"{r:.3f}" for r in pc_ratio[1:]) + f" | optimum {opt:.3f}")
    result("ok", "pagecache-ratio", "measurement: " +
           " ".join(f"{r:.3f}" for r in pc_ratio[1:]))
elif data.get("timing", ["1"])[0] == "0":
    print("# page cache: not run (dlcint.timing=0: its ratio is a measurement "
          "of pace, taken on the stock kernels)")
else:
    result("skip", "pagecache-ratio", "page-cache run incomplete")

# Storage-bound: steady epochs against max(bytes read / bandwidth, the
# decode side's own time, from the run with the whole set cached).
def steady(name):
    try:
        b = json.loads(data[name][0])
    except (KeyError, ValueError, IndexError):
        return None
    eps = b["epochs"][1:]
    secs = sum(e["seconds"] for e in eps)
    return {"ips": sum(e["images"] for e in eps) / secs if secs else 0.0,
            "secs": secs, "bytes": sum(e["bytes_read"] for e in eps),
            "images": sum(e["images"] for e in eps),
            "ra": sum(e.get("readahead_used", 0) for e in eps), "n": len(eps)}
if "storage_bps" in data:
    bps = int(data["storage_bps"][0])
    dec = steady("storage_decode")
    runs = {t: steady("storage_" + t) for t in ("kra", "knora", "ira", "inora")}
    for t, r in runs.items():
        if r is None:
            continue
        limit = max(r["bytes"] / bps, r["images"] / dec["ips"] if dec and dec["ips"] else 0)
        r["frac"] = limit / r["secs"] if r["secs"] else 0.0
        r["busy"] = r["bytes"] / (bps * r["secs"]) if r["secs"] else 0.0
        print(f"# storage-bound {bps / 1e6:.1f} MB/s, {t}: {r['ips']:.1f} images/s, "
              f"{r['bytes'] / max(r['n'], 1) / 1e6:.1f} MB read a steady epoch, storage busy {r['busy']:.3f}, "
              f"{r['frac']:.3f} of max(bytes / bandwidth, decode time), "
              f"{r['ra']} samples from the read-ahead")
    k, ko = runs.get("kra"), runs.get("knora")
    i, io = runs.get("ira"), runs.get("inora")
    if dec:
        print(f"# storage-bound: the decode side alone (whole set cached): {dec['ips']:.1f} images/s")
    if k and ko:
        # With read-ahead dlcache.ko's steady epochs reach 0.9 of their
        # limit and are never slower than without.
        ok = k["frac"] >= 0.90 and k["ips"] >= 0.98 * ko["ips"]
        result("ok" if ok else "FAIL", "storage-kernel-readahead",
               f"dlcache.ko read-ahead {k['ips']:.1f} vs off {ko['ips']:.1f} images/s "
               f"({k['ips'] / ko['ips']:.2f}x), {k['frac']:.3f} vs {ko['frac']:.3f} of the limit "
               f"(want >= 0.90, and >= 0.98x off); "
               + (f"in-process {i['ips']:.1f} vs {io['ips']:.1f} ({i['ips'] / io['ips']:.2f}x), "
                  f"{i['frac']:.3f} vs {io['frac']:.3f}" if i and io else "in-process not run"))
    elif data.get("nokernel", ["0"])[0] == "1":
        result("skip", "storage-kernel-readahead", "kernel backend not available")
    else:
        result("FAIL", "storage-kernel-readahead", "no dlcache.ko storage-bound runs")
    # DDP on one node: the steady epochs' time, the slower rank's (lockstep
    # keeps them together), and the disk's bytes, for dlcache.ko's shared
    # cache, two in-process caches and the page cache in the same memory.
    ddp = {}
    for t in ("kernel", "inprocess", "pagecache"):
        try:
            rk = [json.loads(data["storage_ddp_%s_%d" % (t, r)][0]) for r in (0, 1)]
            disk = int(data["storage_ddp_%s_disk" % t][0])
        except (KeyError, ValueError, IndexError):
            continue
        n = len(rk[0]["epochs"])
        secs = [max(x["epochs"][e]["seconds"] for x in rk) for e in range(1, n)]
        ddp[t] = (sum(secs) / len(secs) if secs else 0.0, disk)
        print(f"# storage-ddp {t}: two ranks, steady epoch {ddp[t][0]:.2f} s, "
              f"disk {disk / 1e6:.1f} MB over {n} epochs")
    if "kernel" in ddp and "inprocess" in ddp and "pagecache" in ddp:
        k = ddp["kernel"][0]
        result("ok", "storage-ddp", "measurement: steady epoch dlcache.ko "
               f"{k:.2f} s, two in-process caches {ddp['inprocess'][0]:.2f} s "
               f"({ddp['inprocess'][0] / k:.2f}x), page cache {ddp['pagecache'][0]:.2f} s "
               f"({ddp['pagecache'][0] / k:.2f}x)")
    elif data.get("nokernel", ["0"])[0] == "1":
        result("skip", "storage-ddp", "kernel backend not available")
    else:
        result("FAIL", "storage-ddp", "runs missing: " + ", ".join(sorted(ddp)))
sys.exit(1 if fails else 0)
PY
prc=$?
# Many jobs, one cache: the offline optimum needs the data set and the
# library's orders (tests/qemu/integration/jobs.py).
if make --no-print-directory -s BUILD="${BUILD#$ROOT/}" lib > "$OUT/lib.log" 2>&1; then
	"$PY" "$SRC/jobs.py" "$TAG" "$LOG" "$DATA/ds" "$BUILD/libdlcache.so.0" \
		"$((CAP_MB * 1048576))" "$EPOCHS" || prc=1
else
	sed 's/^/# /' "$OUT/lib.log" | tail -n 20
	result FAIL jobs-lib "(make lib failed)"
fi
set -e
[ $prc -eq 0 ] || FAILS=$((FAILS + 1))
if grep -q '^INT-DONE' "$LOG" && [ "$FAILS" -eq 0 ]; then
	exit 0
fi
exit 1
