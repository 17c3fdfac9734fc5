#!/bin/bash
# dlcachectl's contract with users and scripts: --help exits 0 for every
# subcommand; a bad argument prints exactly one line on stderr and exits
# 2; bench --json prints one JSON object with the documented fields.
set -u
ctl=${DLCACHECTL:-build/dlcachectl}
[ -x "$ctl" ] || { echo "skip: no dlcachectl at $ctl"; exit 77; }
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

expect_usage() {	# description, args...
	local what=$1 err rc lines
	shift
	err=$("$ctl" "$@" 2>&1 >/dev/null)
	rc=$?
	lines=$(printf '%s' "$err" | grep -c '')
	[ $rc -eq 2 ] || fail "$what: exit $rc, want 2 ($*)"
	[ "$lines" -eq 1 ] || fail "$what: $lines lines on stderr, want 1: $err"
	case "$err" in "dlcachectl"*) ;; *) fail "$what: message does not start with dlcachectl: $err" ;; esac
}

for cmd in gen index bench decode preview decodebench stats watch datasets capacity drop; do
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

# Without the module: one line naming the device and exit 1.
for cmd in stats datasets watch capacity drop; do
	err=$(DLCACHECTL_DEVICE=/nonexistent/dlcache "$ctl" "$cmd" 2>&1 >/dev/null); rc=$?
	[ $rc -eq 1 ] || fail "$cmd without the device: exit $rc, want 1"
	[ "$err" = "dlcachectl $cmd: /nonexistent/dlcache not found: is dlcache.ko loaded? (modprobe/insmod dlcache)" ] ||
		fail "$cmd without the device: $err"
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$ctl" gen "$tmp/ds" --images 40 --classes 4 >/dev/null || fail "gen"
"$ctl" index "$tmp/ds" -o "$tmp/ds.idx" >/dev/null || fail "index"

# A missing data set is a failure (1) naming the path, not a usage error.
err=$("$ctl" bench "$tmp/nope" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] || fail "bench on a missing path: exit $rc, want 1"
echo "$err" | grep -q "$tmp/nope" || fail "bench on a missing path does not name it: $err"

json=$("$ctl" bench "$tmp/ds.idx" --epochs 2 --batch-size 8 --size 32 --json) || fail "bench --json"
/usr/bin/python3 - "$json" <<'PY' || fail "bench --json output: $json"
import json, sys
o = json.loads(sys.argv[1])
assert o["backend"] == "inprocess", o
for k in ("images", "threads", "batch_size"):
    assert isinstance(o[k], int), k
assert o["images"] == 40 and o["batch_size"] == 8
assert len(o["epochs"]) == 2
for e in o["epochs"]:
    for k in ("epoch", "images_per_s", "hit_ratio", "wait_s", "bytes_read", "errors"):
        assert k in e, k
    assert e["images_per_s"] > 0 and 0 <= e["hit_ratio"] <= 1 and e["errors"] == 0
assert o["epochs"][0]["hit_ratio"] == 0 and o["epochs"][1]["hit_ratio"] > 0.3
PY

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

[ $fails -eq 0 ] && echo "test_dlcachectl: ok" && exit 0
echo "test_dlcachectl: $fails failures"
exit 1
