#!/bin/bash
# dlcachectl's contract with users and scripts: --help exits 0 for every
# subcommand; a bad argument prints exactly one line on stderr and exits
# 2; bench --json prints one JSON object with the documented fields.
# Passes with or without dlcache.ko loaded: the backend bench reports must
# match whether /dev/dlcache can be opened.
#
# Each sub-check prints "ok NAME", "FAIL NAME" or "skip NAME: why"
# (tests/run-checks.sh counts them); "FAIL: ..." lines say what went wrong.
set -u
ctl=${DLCACHECTL:-build/dlcachectl}
test_name=test_dlcachectl
. "$(dirname "$0")/harness.sh"
if [ ! -x "$ctl" ]; then
	skip test_dlcachectl "no dlcachectl at $ctl (DLCACHECTL)"
	finish
fi

# The module's device: the library and the tool honour DLCACHE_DEVICE.
dev=${DLCACHE_DEVICE:-/dev/dlcache}
if [ -c "$dev" ] && [ -r "$dev" ] && [ -w "$dev" ]; then
	have_dev=1
else
	have_dev=0
fi

. "$(dirname "$0")/usage.sh"

begin help-and-usage
for cmd in gen index pack bench decode preview sample decodebench stats watch datasets capacity drop drain; do
	out=$("$ctl" "$cmd" --help 2>&1) || fail "$cmd --help exit status"
	echo "$out" | grep -q "usage: dlcachectl $cmd" || fail "$cmd --help has no usage line"
	expect_usage "$cmd with a bad option" "$cmd" --no-such-option
done
expect_usage "no command"
expect_usage "unknown command" frobnicate
expect_usage "gen without a directory" gen
expect_usage "gen with a bad count" gen /tmp/x --images zero
expect_usage "index without -o" index /tmp
expect_usage "bench without a data set" bench
expect_usage "bench with batch 0" bench /tmp --batch-size 0
expect_usage "bench with a bad cache size" bench /tmp --cache lots
expect_usage "bench with a bad policy" bench /tmp --on-error ignore
expect_usage "bench with rank >= world" bench /tmp --rank 2 --world 2
expect_usage "bench with a bad layout" bench /tmp --layout nwhc
expect_usage "bench with a bad read-ahead" bench /tmp --readahead lots
expect_usage "bench with a read-ahead past 1 TiB" bench /tmp --readahead 1025G
expect_usage "bench with a negative read-ahead" bench /tmp --readahead -1
expect_usage "bench with an empty read-ahead" bench /tmp --readahead ""
expect_usage "bench with a peer timeout under 100 ms" bench /tmp --cluster --rank 0 --world 2 --peer-timeout 99
err=$("$ctl" bench /tmp --cluster --rank 0 --world 2 --peer-timeout 1 2>&1 >/dev/null)
echo "$err" | grep -q "want 100..600000 ms" ||
	fail "bench --peer-timeout 1 does not say the range: $err"
expect_usage "decode without -o" decode /tmp/x.jpg
expect_usage "preview with a bad epoch" preview /tmp -o /tmp/x.png --epoch minus --batch 0
expect_usage "preview without -o" preview /tmp --epoch 0 --batch 0
# The administration commands check their arguments before the device.
expect_usage "stats with a bad key" stats 1234
expect_usage "stats with two keys" stats 0123456789abcdef0123456789abcdef 0123456789abcdef0123456789abcdef
expect_usage "datasets with an argument" datasets extra
expect_usage "watch with interval 0" watch --interval 0
expect_usage "watch with a bad count" watch --count many
expect_usage "capacity with a bad size" capacity 12Q
expect_usage "capacity with two sizes" capacity 1G 2G
expect_usage "drop with a bad key" drop 0123456789abcdef0123456789abcdeg
expect_usage "drain with a bad wait" drain --wait soon
expect_usage "drain --off --wait" drain --off --wait 5
expect_usage "drain with an argument" drain now
end

# Without the module: one line naming the device and exit 1. The device
# is named by DLCACHE_DEVICE, as for the library.
begin device-env
for cmd in stats datasets watch capacity drop drain; do
	err=$(DLCACHE_DEVICE=/nonexistent/dlcache "$ctl" "$cmd" 2>&1 >/dev/null); rc=$?
	[ $rc -eq 1 ] || fail "$cmd without the device: exit $rc, want 1"
	[ "$err" = "dlcachectl $cmd: /nonexistent/dlcache not found: is dlcache.ko loaded? (modprobe/insmod dlcache)" ] ||
		fail "$cmd with DLCACHE_DEVICE=/nonexistent/dlcache: $err"
done
grep -rq DLCACHECTL_DEVICE "$(dirname "$0")/../../tools" "$(dirname "$0")/../../Documentation" 2>/dev/null &&
	fail "DLCACHECTL_DEVICE is still used or documented: one name, DLCACHE_DEVICE"
end

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
begin gen-and-index
"$ctl" gen "$tmp/ds" --images 40 --classes 4 >/dev/null || fail "gen"
"$ctl" index "$tmp/ds" -o "$tmp/ds.idx" >/dev/null || fail "index"
end

# gen --distinct: other images than the default for the same arguments,
# the same bytes on every run, and recorded in the stamp, so that a run
# with or without it over the other's set regenerates.
begin gen-distinct
"$ctl" gen "$tmp/dd" --images 40 --classes 4 --distinct >/dev/null || fail "gen --distinct"
"$ctl" gen "$tmp/dd2" --images 40 --classes 4 --distinct >/dev/null || fail "gen --distinct again"
diff -r "$tmp/dd" "$tmp/dd2" >/dev/null || fail "gen --distinct twice: the sets differ"
grep -qx "distinct 1" "$tmp/dd/.dlcache-gen-done" || fail "the stamp does not record --distinct"
grep -q distinct "$tmp/ds/.dlcache-gen-done" && fail "a default stamp mentions distinct"
same=0
for f in "$tmp"/ds/class_*/img_*.jpg; do
	cmp -s "$f" "$tmp/dd/${f#"$tmp/ds/"}" && same=$((same + 1))
done
[ $same -eq 0 ] || fail "gen --distinct: $same of 40 images equal the default set's"
out=$("$ctl" gen "$tmp/dd2" --images 40 --classes 4) || fail "gen without --distinct over a distinct set"
case $out in already*) fail "gen without --distinct over a distinct set did nothing: $out" ;; esac
diff -r "$tmp/ds" "$tmp/dd2" >/dev/null || fail "gen without --distinct over a distinct set: not the default set"
out=$("$ctl" gen "$tmp/dd2" --images 40 --classes 4 --distinct) || fail "gen --distinct over a default set"
case $out in already*) fail "gen --distinct over a default set did nothing: $out" ;; esac
diff -r "$tmp/dd" "$tmp/dd2" >/dev/null || fail "gen --distinct over a default set: not the distinct set"
end

# A missing data set is a failure (1) naming the path, not a usage error.
begin bench-missing-path
err=$("$ctl" bench "$tmp/nope" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] || fail "bench on a missing path: exit $rc, want 1"
echo "$err" | grep -q "$tmp/nope" || fail "bench on a missing path does not name it: $err"
end

# A flat directory (images, no class subdirectories) is not ImageFolder:
# the message names the directory and says what is wanted.
begin index-flat-dir
mkdir -p "$tmp/flat"
cp "$(find "$tmp/ds" -name '*.jpg' | head -n 1)" "$tmp/flat/a.jpg"
err=$("$ctl" index "$tmp/flat" -o "$tmp/flat.idx" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] || fail "index on a flat directory: exit $rc, want 1"
[ "$(printf '%s' "$err" | grep -c '')" -eq 1 ] || fail "index on a flat directory: not one line: $err"
echo "$err" | grep -q "$tmp/flat" || fail "index on a flat directory does not name it: $err"
echo "$err" | grep -qi "class subdirector" || fail "index on a flat directory does not ask for class subdirectories: $err"
echo "$err" | grep -q "No data available" && fail "index on a flat directory prints the bare errno: $err"
end

# A usage error found after the loader started (a batch past the epoch's
# end) is still one line: no library warning before it, module or not.
begin preview-batch-range
expect_usage "preview past the last batch" preview "$tmp/ds.idx" -o "$tmp/p.png" --batch 999
for backend in inprocess auto; do
	err=$(DLCACHE_BACKEND=$backend "$ctl" preview "$tmp/ds.idx" -o "$tmp/p.png" --batch 999 2>&1 >/dev/null); rc=$?
	[ $rc -eq 2 ] && [ "$(printf '%s' "$err" | grep -c '')" -eq 1 ] ||
		fail "preview --batch 999 with DLCACHE_BACKEND=$backend: exit $rc: $err"
done
end

# --layout is case-insensitive.
begin layout-case
for lay in NHWC Nchw nhwc; do
	"$ctl" bench "$tmp/ds.idx" --epochs 1 --batch-size 8 --size 32 --layout $lay \
		--backend inprocess >/dev/null 2>&1 || fail "bench --layout $lay refused"
	"$ctl" preview "$tmp/ds.idx" -o "$tmp/p.png" --size 32 --batch-size 4 --layout $lay \
		>/dev/null 2>&1 || fail "preview --layout $lay refused"
done
end

# Error kinds: one spelling in the output and the documentation.
begin error-kind-spelling
printf 'this is not a JPEG at all\n' > "$tmp/x.jpg"
err=$("$ctl" decode "$tmp/x.jpg" -o "$tmp/x.ppm" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] || fail "decode of a non-JPEG: exit $rc, want 1"
kind=$(echo "$err" | grep -o 'not[-_]jpeg' | head -n 1)
[ -n "$kind" ] || fail "decode of a non-JPEG does not say not_jpeg: $err"
doc="$(dirname "$0")/../../Documentation"
if [ -d "$doc" ]; then
	grep -rqE 'not-jpeg|too-large' "$doc" && fail "the documentation spells kinds with '-': $(grep -rnE 'not-jpeg|too-large' "$doc" | head -n 2)"
	[ -z "$kind" ] || grep -rq "\`$kind\`" "$doc" || fail "the documentation has no \`$kind\`"
fi
end

# Every sample broken: bench delivers nothing and must not exit 0.
begin bench-nothing-delivered
mkdir -p "$tmp/bad/c0" "$tmp/bad/c1"
for i in 1 2 3 4; do
	printf 'garbage %d\n' $i > "$tmp/bad/c$((i % 2))/$i.jpg"
done
for policy in skip; do
	out=$("$ctl" bench "$tmp/bad" --epochs 1 --batch-size 2 --size 32 --on-error $policy \
		--backend inprocess 2>&1); rc=$?
	[ $rc -eq 1 ] || fail "bench --on-error $policy where every sample fails: exit $rc, want 1: $out"
done
end

begin bench-json
json=$("$ctl" bench "$tmp/ds.idx" --epochs 2 --batch-size 8 --size 32 --json) || fail "bench --json"
/usr/bin/python3 - "$json" "$have_dev" <<'PY' || fail "bench --json output (have_dev=$have_dev): $json"
import json, sys
o = json.loads(sys.argv[1])
have_dev = sys.argv[2] == "1"
# auto: the module when its device can be opened, the in-process cache
# otherwise.
assert o["backend"] == ("kernel" if have_dev else "inprocess"), o["backend"]
for k in ("images", "threads", "batch_size"):
    assert isinstance(o[k], int), k
assert o["images"] == 40 and o["batch_size"] == 8
assert len(o["epochs"]) == 2
for e in o["epochs"]:
    for k in ("epoch", "images_per_s", "hit_ratio", "wait_s", "bytes_read", "errors"):
        assert k in e, k
    assert e["images_per_s"] > 0 and 0 <= e["hit_ratio"] <= 1 and e["errors"] == 0
if o["backend"] == "inprocess":
    # a fresh cache of half the data set
    assert o["epochs"][0]["hit_ratio"] == 0 and o["epochs"][1]["hit_ratio"] > 0.3
PY
json=$("$ctl" bench "$tmp/ds.idx" --epochs 1 --batch-size 8 --size 32 --json --backend inprocess 2>/dev/null) &&
	echo "$json" | grep -q '"backend": "inprocess"' || fail "bench --backend inprocess: $json"
end

# --forms off|auto|decoded: a bad value is a usage error naming it; with
# forms decoded and a cache for them all, the second epoch is served from
# forms, and the text and JSON reports say so.
begin bench-forms
err=$("$ctl" bench "$tmp/ds.idx" --forms always 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] || fail "bench --forms always: exit $rc, want 2"
echo "$err" | grep -q -- "--forms" && echo "$err" | grep -q "off, auto or decoded" ||
	fail "bench --forms always: the message does not name the option and its values: $err"
out=$("$ctl" bench "$tmp/ds.idx" --epochs 2 --batch-size 8 --size 32 --cache 256M \
	--backend inprocess --forms decoded 2>&1) || fail "bench --forms decoded: $out"
echo "$out" | grep -q "forms: 40 of 40 samples from decoded forms" ||
	fail "bench --forms decoded: epoch 1 not served from forms: $out"
json=$("$ctl" bench "$tmp/ds.idx" --epochs 2 --batch-size 8 --size 32 --cache 256M \
	--backend inprocess --forms decoded --json 2>/dev/null) || fail "bench --forms decoded --json"
/usr/bin/python3 - "$json" <<'PY' || fail "bench --forms decoded --json: $json"
import json, sys
e = json.loads(sys.argv[1])["epochs"]
assert e[0]["forms_made"] == 40 and e[0]["form_hits"] == 0, e[0]
assert e[1]["form_hits"] == 40 and e[1]["forms_held"] == 40, e[1]
assert e[1]["forms_regime"] == 1 and e[1]["form_saved_ns"] > 0, e[1]
PY
end

# --readahead BYTES|off: accepted (sizes, 0, off in any case), and the
# per-epoch read rate, busy fraction and read-ahead counters are numbers.
begin bench-readahead
err=$("$ctl" bench "$tmp/ds.idx" --readahead garbage 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] || fail "bench --readahead garbage: exit $rc, want 2"
echo "$err" | grep -q -- "--readahead" || fail "bench --readahead garbage: message does not name the option: $err"
echo "$err" | grep -q "garbage" || fail "bench --readahead garbage: message does not quote the value: $err"
for ra in 64M 1M 1G 0 off OFF; do
	json=$("$ctl" bench "$tmp/ds.idx" --epochs 2 --batch-size 8 --size 32 --json \
		--backend inprocess --readahead $ra 2>/dev/null) || { fail "bench --readahead $ra refused"; continue; }
	/usr/bin/python3 - "$json" "$ra" <<'PY' || fail "bench --readahead $ra --json: $json"
import json, sys
o = json.loads(sys.argv[1])
off = sys.argv[2].lower() == "off"
assert len(o["epochs"]) == 2
for e in o["epochs"]:
    for k in ("read_mb_per_s", "io_busy_s", "io_busy_fraction", "readahead_reads",
              "readahead_used", "readahead_dropped", "readahead_budget"):
        assert k in e, k
        v = e[k]
        assert isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0, (k, v)
    for k in ("readahead_reads", "readahead_used", "readahead_dropped", "readahead_budget"):
        assert isinstance(e[k], int), k
    assert e["io_busy_fraction"] <= 1.05, e["io_busy_fraction"]
    assert e["readahead_used"] <= e["readahead_reads"], e
    if off:
        assert e["readahead_budget"] == 0, e
    else:
        assert e["readahead_budget"] <= 1 << 40, e
    # read MB/s is bytes_read over the epoch's seconds
    want = e["bytes_read"] / 1e6 / e["seconds"]
    assert abs(e["read_mb_per_s"] - want) <= 0.01 + 0.01 * want, (e["read_mb_per_s"], want)
PY
done
out=$("$ctl" bench "$tmp/ds.idx" --epochs 1 --batch-size 8 --size 32 --backend inprocess \
	--readahead off 2>/dev/null) || fail "bench --readahead off (table)"
echo "$out" | head -n 1 | grep -q "read MB/s" || fail "bench table has no read MB/s column: $out"
echo "$out" | head -n 1 | grep -q "busy %" || fail "bench table has no busy % column: $out"
"$ctl" bench --help | grep -q -- "--readahead" || fail "bench --help does not list --readahead"
end

# --start-epoch N: a restarted job's epochs are N, N + 1, ... with the
# batches (--digest) of those epochs in a run from 0.
begin bench-start-epoch
full=$("$ctl" bench "$tmp/ds.idx" --epochs 3 --batch-size 8 --size 32 --json --digest \
	--backend inprocess 2>/dev/null) || fail "bench --epochs 3"
part=$("$ctl" bench "$tmp/ds.idx" --start-epoch 1 --epochs 2 --batch-size 8 --size 32 --json \
	--digest --backend inprocess 2>/dev/null) || fail "bench --start-epoch 1"
/usr/bin/python3 - "$full" "$part" <<'PY' || fail "bench --start-epoch 1: $part (from 0: $full)"
import json, sys
full, part = (json.loads(a)["epochs"] for a in sys.argv[1:3])
assert [e["epoch"] for e in part] == [1, 2], part
assert [e["digest"] for e in part] == [e["digest"] for e in full[1:]], (part, full)
PY
expect_usage "bench --start-epoch with --verify-cost" bench "$tmp/ds.idx" --start-epoch 1 --verify-cost
expect_usage "bench --start-epoch -1" bench "$tmp/ds.idx" --start-epoch -1
end

# --resume SAMPLES: the first epoch is the rest of its global order. After
# nothing, the whole epoch (the same batches); after 3 ranks took a batch
# of 8 each (24 of 40), each of 2 ranks gets 8, then whole epochs of 20.
# (tests/python/test_resume.py checks the rest against DistributedSampler.)
begin bench-resume
part=$("$ctl" bench "$tmp/ds.idx" --start-epoch 1 --resume 0 --epochs 2 --batch-size 8 \
	--size 32 --json --digest --backend inprocess 2>/dev/null) || fail "bench --resume 0"
/usr/bin/python3 - "$full" "$part" <<'PY' || fail "bench --resume 0: $part (from 0: $full)"
import json, sys
full, part = (json.loads(a)["epochs"] for a in sys.argv[1:3])
assert [e["digest"] for e in part] == [e["digest"] for e in full[1:]], (part, full)
PY
for r in 0 1; do
	out=$("$ctl" bench "$tmp/ds.idx" --start-epoch 1 --resume 24 --epochs 2 --world 2 --rank $r \
		--batch-size 8 --size 32 --json --backend inprocess 2>/dev/null) || fail "bench --resume 24 rank $r"
	/usr/bin/python3 -c 'import json, sys; e = json.loads(sys.argv[1])["epochs"]; assert [x["images"] for x in e] == [8, 20], e' "$out" ||
		fail "bench --resume 24 --world 2 --rank $r: $out"
done
expect_usage "bench --resume -1" bench "$tmp/ds.idx" --resume -1
expect_usage "bench --resume with --verify-cost" bench "$tmp/ds.idx" --resume 8 --verify-cost
end

begin bench-root
# A data set moved since indexing: bench --root finds every sample there.
expect_usage "bench --root with a DIR" bench "$tmp/ds" --root "$tmp/ds"
mv "$tmp/ds" "$tmp/ds-moved" || fail "mv"
json=$("$ctl" bench "$tmp/ds.idx" --root "$tmp/ds-moved" --epochs 1 --batch-size 8 --size 32 --json) ||
	fail "bench --root"
/usr/bin/python3 -c 'import json, sys; e = json.loads(sys.argv[1])["epochs"][0]; assert e["errors"] == 0 and e["images"] == 40, e' "$json" ||
	fail "bench --root: $json"
err=$("$ctl" bench "$tmp/ds.idx" --root "$tmp/nope" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] && echo "$err" | grep -q "$tmp/nope" || fail "bench --root missing: exit $rc: $err"
mv "$tmp/ds-moved" "$tmp/ds" || fail "mv back"
end

begin watch-loaders
# Each loader publishes its status (libdlcache/pipeline/status.h); watch
# --loaders lists it without dlcache.ko: its pid, its data set, images
# handed out. A finished loader leaves no file; a killed one's is removed
# by the next watch of its user; DLCACHE_STATUS=0 publishes nothing.
shm_of() { ls /dev/shm/dlcache-loader-"$(id -u)"-"$1"-* 2> /dev/null; }
"$ctl" bench "$tmp/ds.idx" --epochs 1000 --batch-size 8 --size 32 \
	--step-ms 5 > /dev/null 2>&1 &
bpid=$!
for i in $(seq 1 100); do [ -n "$(shm_of $bpid)" ] && break; sleep 0.05; done
[ -n "$(shm_of $bpid)" ] || fail "no status file for bench (pid $bpid)"
out=$(DLCACHE_DEVICE=/nonexistent/dlcache "$ctl" watch --loaders --interval 0.5 --count 3); rc=$?
[ $rc -eq 0 ] || fail "watch --loaders: exit $rc"
# The line with the most images a second (on a busy host an interval
# may hold no refresh of the loader's).
line=$(echo "$out" | awk -v p=$bpid '$2 == p' | sort -g -k5 | tail -n 1)
echo "  $(echo "$out" | head -n 1)"
echo "  $line"
[ "$(echo "$out" | head -n 1 | awk '{print $1, $2, $5, $NF}')" = "time_s pid img/s source" ] ||
	fail "watch --loaders: a header of time_s pid ... img/s ... source, got: $(echo "$out" | head -n 1)"
# Every column named has a value: the forms let go (displ) among them.
echo "$out" | head -n 1 | grep -qw displ ||
	fail "watch --loaders: no displ column: $(echo "$out" | head -n 1)"
[ "$(echo "$out" | head -n 1 | awk '{print NF}')" = "$(echo "$line" | awk '{print NF}')" ] ||
	fail "watch --loaders: $(echo "$out" | head -n 1 | awk '{print NF}') names for $(echo "$line" | awk '{print NF}') values: $line"
[ "$(echo "$line" | awk '{print $NF}')" = "$tmp/ds" ] ||
	fail "watch --loaders: no line for bench's pid $bpid on $tmp/ds: $out"
/usr/bin/python3 -c 'import sys; assert float(sys.argv[1]) > 0' "$(echo "$line" | awk '{print $5}')" ||
	fail "watch --loaders: bench handing out batches shows no img/s: $line"
kill -9 $bpid; wait $bpid 2> /dev/null
# Another reader of this user's (a watch, a loader's test) may remove it
# first: only that it is gone after a watch is checked.
f=$(shm_of $bpid)
[ -n "$f" ] || echo "  the killed loader's file was removed before this watch"
out=$("$ctl" watch --loaders --interval 0.1 --count 1)
echo "$out" | awk -v p=$bpid '$2 == p' | grep -q . && fail "watch lists the killed loader $bpid"
[ -z "$(shm_of $bpid)" ] || fail "watch left the killed loader's $f"
"$ctl" bench "$tmp/ds.idx" --epochs 1 --batch-size 8 --size 32 > /dev/null 2>&1 &
bpid=$!
wait $bpid || fail "bench"
[ -z "$(shm_of $bpid)" ] || fail "a finished bench left $(shm_of $bpid)"
DLCACHE_STATUS=0 "$ctl" bench "$tmp/ds.idx" --epochs 1000 --batch-size 8 \
	--size 32 --step-ms 5 > /dev/null 2>&1 &
bpid=$!
sleep 1
[ -z "$(shm_of $bpid)" ] || fail "DLCACHE_STATUS=0: bench published $(shm_of $bpid)"
kill -9 $bpid; wait $bpid 2> /dev/null
expect_usage "watch --loaders with an argument" watch --loaders now
end

begin status-full-shm
# A full /dev/shm (a private mount namespace, an 8 KiB tmpfs filled): the
# loader cannot publish its status, says so once, and runs on. Its file
# is allocated when made, so a store into it never meets a full tmpfs
# (SIGBUS in the I/O thread).
if [ "$(id -u)" -ne 0 ] || ! unshare -m true 2> /dev/null; then
	skip status-full-shm "needs root and mount namespaces (unshare -m)"
else
	out=$(unshare -m sh -c 'mount -t tmpfs -o size=8k none /dev/shm &&
		dd if=/dev/zero of=/dev/shm/fill bs=4k count=2 2> /dev/null;
		exec "$1" bench "$2" --epochs 2 --batch-size 8 --size 32 -v' sh "$ctl" "$tmp/ds.idx" 2>&1)
	rc=$?
	[ $rc -eq 0 ] || fail "bench beside a full /dev/shm: exit $rc: $(echo "$out" | tail -n 3)"
	[ "$(echo "$out" | grep -c 'status: cannot publish at /dev/shm/dlcache-loader-.*No space left on device')" = 1 ] ||
		fail "bench beside a full /dev/shm: want one line saying it cannot publish: $(echo "$out" | grep -i status)"
fi
end

finish
