#!/bin/bash
# dlcachectl pack: packs a generated set with a few bad files (kept as
# is and listed in the summary), the same file for any number of
# threads, leaves no .part, refuses to overwrite
# without --force or to write inside the source, never modifies the
# source, and leaves no FILE.dlp when interrupted (SIGINT: no .part
# either; SIGKILL: the next run removes the stale .part).
#
# Each sub-check prints "ok NAME", "FAIL NAME" or "skip NAME: why"
# (tests/run-checks.sh counts them); "FAIL: ..." lines say what went wrong.
set -u
ctl=${DLCACHECTL:-build/dlcachectl}
test_name=test_pack
. "$(dirname "$0")/harness.sh"
if [ ! -x "$ctl" ]; then
	skip test_pack "no dlcachectl at $ctl (DLCACHECTL)"
	finish
fi
. "$(dirname "$0")/usage.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sums() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum; find . | sort) ; }

begin pack-usage
out=$("$ctl" pack --help) || fail "pack --help exit status"
echo "$out" | grep -q "usage: dlcachectl pack" || fail "pack --help has no usage line"
expect_usage "pack without a source" pack
expect_usage "pack without -o" pack /tmp
expect_usage "pack with a bad option" pack /tmp -o x.dlp --no-such-option
expect_usage "pack with --align 3" pack /tmp -o x.dlp --align 3
expect_usage "pack with --threads 0" pack /tmp -o x.dlp --threads 0
expect_usage "pack with a bad interval" pack /tmp -o x.dlp --interval rows
expect_usage "pack --quality without --max-side" pack /tmp -o x.dlp --quality 80
end

begin pack-bad-files
"$ctl" gen "$tmp/ds" --images 60 --classes 3 >/dev/null || fail "gen"
first=$(ls "$tmp/ds/class_000" | head -1)
head -c 3000 "$tmp/ds/class_000/$first" > "$tmp/ds/class_000/truncated.jpg"
printf 'not a jpeg at all\n' > "$tmp/ds/class_001/text.jpg"
nbad=2
if /usr/bin/python3 -c 'from PIL import Image; Image.new("CMYK", (64, 48), (10, 200, 30, 5)).save("'"$tmp"'/ds/class_002/cmyk.jpg", quality=90)' 2>/dev/null; then
	nbad=3
else
	echo "note: no Pillow at /usr/bin/python3: no CMYK file in the set"
fi
"$ctl" index "$tmp/ds" -o "$tmp/ds.idx" >/dev/null || fail "index"
sums "$tmp/ds" > "$tmp/before"
cp "$tmp/ds.idx" "$tmp/ds.idx.orig"
out=$("$ctl" pack "$tmp/ds" -o "$tmp/p.dlp" --threads 2 2>"$tmp/err")
rc=$?
[ $rc -eq 0 ] || fail "pack DIR: exit $rc: $(cat "$tmp/err")"
[ -f "$tmp/p.dlp" ] || fail "no $tmp/p.dlp"
[ -e "$tmp/p.dlp.part" ] && fail "a .part is left"
echo "$out" | grep -q ": $((60 + nbad)) samples" || fail "summary does not count $((60 + nbad)) samples: $out"
echo "$out" | grep -q "60 transcoded, $nbad kept as is" ||
	fail "summary does not say 60 transcoded, $nbad kept as is: $out"
echo "$out" | grep -q "kept as is: class_000/truncated.jpg: ." || fail "truncated.jpg not listed: $out"
echo "$out" | grep -q "kept as is: class_001/text.jpg: ." || fail "text.jpg not listed: $out"
if [ $nbad -eq 3 ]; then
	echo "$out" | grep -q "kept as is: class_002/cmyk.jpg: ." || fail "cmyk.jpg not listed: $out"
fi
echo "$out" | grep -q "kept as is: class_000/img" && fail "a good image kept as is: $out"
# From the index: the same pack, key and all (the same samples, same order).
"$ctl" pack "$tmp/ds.idx" -o "$tmp/q.dlp" --threads 1 >/dev/null 2>"$tmp/err" ||
	fail "pack INDEX: $(cat "$tmp/err")"
[ -f "$tmp/q.dlp" ] || fail "no pack from the index"
end

# The same file for any number of threads: samples go in in id order,
# whichever transcode ends first (before, 2 threads wrote a different
# file on every run). From the directory or from its index, too.
begin pack-deterministic
"$ctl" pack "$tmp/ds.idx" -o "$tmp/t5.dlp" --threads 5 >/dev/null 2>"$tmp/err" ||
	fail "pack --threads 5: $(cat "$tmp/err")"
cmp -s "$tmp/p.dlp" "$tmp/q.dlp" || fail "2 threads (from the directory) and 1 (from the index) wrote different packs"
cmp -s "$tmp/t5.dlp" "$tmp/q.dlp" || fail "5 threads and 1 wrote different packs"
rm -f "$tmp/t5.dlp"
end

begin pack-refuses
"$ctl" pack "$tmp/ds" -o "$tmp/p.dlp" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "pack over an existing file: exit $rc, want 1"
grep -q -- "--force" "$tmp/err" || fail "no hint at --force: $(cat "$tmp/err")"
sz=$(stat -c %s "$tmp/p.dlp")
"$ctl" pack "$tmp/ds" -o "$tmp/p.dlp" --force --interval row --align 4096 >/dev/null 2>"$tmp/err" ||
	fail "pack --force: $(cat "$tmp/err")"
[ "$(stat -c %s "$tmp/p.dlp")" != "$sz" ] || fail "--force did not replace the pack"
"$ctl" pack "$tmp/ds" -o "$tmp/ds/class_000/x.dlp" >/dev/null 2>&1 && fail "pack wrote inside the source"
"$ctl" pack "$tmp/ds.idx" -o "$tmp/ds.idx" --force >/dev/null 2>&1 && fail "pack overwrote its source index"
"$ctl" pack "$tmp/p.dlp" -o "$tmp/r.dlp" >/dev/null 2>&1 && fail "pack of a pack"
[ -e "$tmp/r.dlp" ] && fail "pack of a pack wrote a file"
printf 'precious' > "$tmp/s.dlp.part"
"$ctl" pack "$tmp/ds" -o "$tmp/s.dlp" >/dev/null 2>&1 && fail "pack removed a foreign .part"
[ "$(cat "$tmp/s.dlp.part")" = precious ] || fail "a foreign .part was touched"
end

# A file changed since it was indexed, or empty: the pack fails, naming
# it, and writes nothing (the bytes recorded must be the ones indexed).
begin pack-changed-source
cp -r "$tmp/ds" "$tmp/ds2"
"$ctl" index "$tmp/ds2" -o "$tmp/ds2.idx" >/dev/null || fail "index ds2"
printf 'x' >> "$tmp/ds2/class_001/$(ls "$tmp/ds2/class_001" | head -1)"
"$ctl" pack "$tmp/ds2.idx" -o "$tmp/c.dlp" >/dev/null 2>"$tmp/err" && fail "pack of a changed file succeeded"
grep -q "changed since it was indexed" "$tmp/err" || fail "no word of the changed file: $(cat "$tmp/err")"
[ -e "$tmp/c.dlp" ] || [ -e "$tmp/c.dlp.part" ] && fail "a failed pack left a file"
: > "$tmp/ds2/class_002/empty.jpg"
"$ctl" pack "$tmp/ds2" -o "$tmp/c.dlp" >/dev/null 2>"$tmp/err" && fail "pack of an empty file succeeded"
grep -q "empty.jpg: empty file" "$tmp/err" || fail "no word of the empty file: $(cat "$tmp/err")"
rm -rf "$tmp/ds2"
end

begin pack-source-unchanged
sums "$tmp/ds" > "$tmp/after"
cmp -s "$tmp/before" "$tmp/after" || fail "the source tree changed: $(diff "$tmp/before" "$tmp/after" | head -5)"
cmp -s "$tmp/ds.idx" "$tmp/ds.idx.orig" || fail "the source index changed"
end

# Interrupted mid-pack: wait for the .part, then signal. A set large
# enough that one thread takes over a second.
begin pack-interrupt
"$ctl" gen "$tmp/big" --images 800 --classes 4 >/dev/null || fail "gen big"
interrupt() {	# signal
	"$ctl" pack "$tmp/big" -o "$tmp/big.dlp" --threads 1 >/dev/null 2>"$tmp/ierr" &
	pid=$!
	for _ in $(seq 200); do
		[ -s "$tmp/big.dlp.part" ] && [ "$(stat -c %s "$tmp/big.dlp.part")" -gt 100000 ] && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.02
	done
	kill -"$1" $pid 2>/dev/null || fail "$1: pack finished before it could be interrupted"
	{ wait $pid; } 2>/dev/null
	rc=$?
}
interrupt INT
[ $rc -ne 0 ] || fail "SIGINT: exit 0"
[ -e "$tmp/big.dlp" ] && fail "SIGINT left $tmp/big.dlp"
[ -e "$tmp/big.dlp.part" ] && fail "SIGINT left the .part"
grep -q "interrupted: .*big.dlp not written" "$tmp/ierr" || fail "SIGINT: no word of it: $(cat "$tmp/ierr")"
interrupt KILL
[ -e "$tmp/big.dlp" ] && fail "SIGKILL left $tmp/big.dlp"
[ -e "$tmp/big.dlp.part" ] || fail "SIGKILL left no .part: was it mid-pack?"
"$ctl" pack "$tmp/big" -o "$tmp/big.dlp" >/dev/null 2>"$tmp/err" || fail "rerun after SIGKILL: $(cat "$tmp/err")"
[ -f "$tmp/big.dlp" ] || fail "rerun wrote no pack"
[ -e "$tmp/big.dlp.part" ] && fail "a stray .part after the rerun"
end

finish
