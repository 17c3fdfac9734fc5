#!/bin/bash
# dlcache QEMU integration tests, in the manner of WireGuard's tests/qemu.
#
# This boots a stock Debian kernel that the module is built against
# (/boot/vmlinuz-<release>, by default the newest 6.1; `make qemu-test` runs
# this once per kernel of KERNELS, "6.1 6.12") under qemu-system-x86_64 with
# TCG (KVM does not work on these machines), with a small initramfs made here: busybox-static and
# its applet links, the guest /init (tests/qemu/init.sh), dlcache.ko, and the
# test programs of tests/qemu/tests/*.c, each compiled statically against
# uapi/dlcache.h and libc only. For every test the guest inserts the module,
# runs the program under a time limit, removes the module again (a leaked
# file or ring reference makes that fail) and scans the kernel log for
# splats (WARNING, BUG, Oops, lockdep, hung tasks, OOM, ...). A test exits 0
# for pass, 77 for skip and anything else for fail; its own "FAIL: ..." lines
# say why.
#
# Output: one line per test, "ok TAG:<name>", "FAIL TAG:<name>" or
# "skip TAG:<name>" (TAG is QEMU_TAG: "qemu" by default, "qemu-6.1" and
# "qemu-6.12" under make qemu-test), details as "# ..." lines, then the
# guest's verdict line "DLCACHE-QEMU-VERDICT: pass N fail M skip K kernel
# <release>". The whole console log is kept in
# $BUILD/qemu/console-<release>.log. The script exits non-zero when a test
# failed, when the verdict line is missing (crash or hang) or when the time
# limit hit. Without the kernel image, QEMU or a built module it prints
# "skip TAG:all (<reason>)" and exits 0.
#
# Debian's kernel has no kmemleak, KASAN or lockdep; leaks show up as an
# rmmod that fails after a test (a file, ring or data set reference left
# behind) and in the reload test, which checks that rmmod gives the cached
# memory back. With QEMU_KERNEL pointing at a debug kernel that has
# kmemleak, the guest also scans for leaks at the end ("qemu:kmemleak").
#
# Usage: make qemu-test            (builds the module first)
#        tests/qemu/run.sh [--smoke|--kunit] [--only name,name]
#   --smoke   boot without the module and check only the harness itself
#   --kunit   DLCACHE_KO is the KUnit module (tests/kunit/run.sh): load it,
#             send its KTAP report back as "# ktap: ..." lines, unload it
#   --only    run only the named tests (file names without .c)
# Environment: BUILD (build), QEMU_KVER (kernel: a release, or a series
#   such as 6.1 or 6.12 for its newest installed release; default 6.1),
#   QEMU_KERNEL (default /boot/vmlinuz-<release>), DLCACHE_KO (default
#   $BUILD/kmod-<release>/dlcache.ko, made by `make module KVER=<release>`),
#   QEMU_TAG (name prefix of the result lines, default qemu),
#   QEMU (qemu-system-x86_64),
#   QEMU_TIMEOUT (seconds for the whole run, 300), QEMU_TEST_TIMEOUT (per
#   test, 60), QEMU_MEM (1G), QEMU_SMP (2), DLCACHE_PARAMS (insmod
#   parameters), TEST_CC (gcc), EXTRA_TESTS (more test sources, such as
#   tests/fuzz/kcov_fuzz.c), FUZZ_SECONDS (its time, dlcqemu.fuzz_seconds).
#
# Build outputs are reused: the busybox staging is made once, and a test
# program is recompiled only when its source, the shared helper or the uapi
# header changed.
#
# A test whose first line is "/* dlc-test: FLAGS */" is compiled, with its
# own build of dlc_test.c, with FLAGS added (off32.c: "-m32", a 32-bit
# program that uses the module through compat_ioctl). When TEST_CC cannot
# link a static program with FLAGS (for -m32: gcc-multilib missing), the
# test becomes a script that reports "skip" with that reason.

set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
OUT="$BUILD/qemu"
TAG=${QEMU_TAG:-qemu}
KVER_WANT=${QEMU_KVER:-6.1}
if [ -n "${QEMU_KERNEL:-}" ]; then
	KREL=${QEMU_KERNEL##*/vmlinuz-}
else
	KREL=$("$ROOT/tools/build/kver.sh" "$KVER_WANT" || true)
fi
KO=${DLCACHE_KO:-$BUILD/kmod-${KREL:-none}/dlcache.ko}
QEMU=${QEMU:-qemu-system-x86_64}
TIMEOUT=${QEMU_TIMEOUT:-300}
TEST_TIMEOUT=${QEMU_TEST_TIMEOUT:-60}
MEM=${QEMU_MEM:-1G}
SMP=${QEMU_SMP:-2}
TEST_CC=${TEST_CC:-gcc}
BUSYBOX=${BUSYBOX:-/bin/busybox}
SRC="$ROOT/tests/qemu"

MODE=tests
ONLY=
while [ $# -gt 0 ]; do
	case "$1" in
	--smoke) MODE=smoke ;;
	--kunit) MODE=kunit ;;
	--only) ONLY=$2; shift ;;
	--only=*) ONLY=${1#*=} ;;
	*) echo "usage: $0 [--smoke|--kunit] [--only name,...]" >&2; exit 2 ;;
	esac
	shift
done

# A missing dependency skips the whole suite, one line; a FAIL under
# CI=true, where make deps installs everything.
skip_all() {
	"$ROOT/tests/skip-required.sh" "$TAG:all" "$1"
	exit $?
}

if [ -n "${QEMU_KERNEL:-}" ]; then
	KERNEL=$QEMU_KERNEL
else
	KERNEL=${KREL:+/boot/vmlinuz-$KREL}
fi
[ -n "$KERNEL" ] && [ -r "$KERNEL" ] ||
	skip_all "no readable kernel image /boot/vmlinuz-${KREL:-$KVER_WANT*} (make deps)"
command -v "$QEMU" > /dev/null || skip_all "$QEMU not installed"
[ -x "$BUSYBOX" ] || skip_all "no static busybox at $BUSYBOX (busybox-static)"
command -v cpio > /dev/null || skip_all "cpio not installed"
# `make module` succeeds without building anything when there are no
# kernel headers (and fails when the build fails), so no module here means
# no headers.
if [ "$MODE" != smoke ] && [ ! -f "$KO" ]; then
	skip_all "no module at $KO: no kernel headers? (make deps; make module KVER=${KREL:-$KVER_WANT})"
fi

mkdir -p "$OUT/bin" "$OUT/obj"
STAGE="$OUT/root"

# ---- test programs ---------------------------------------------------------
# newer_than OUT DEP...: true when OUT is missing or older than a DEP.
newer_than() {
	local out=$1 dep
	shift
	[ -e "$out" ] || return 0
	for dep in "$@"; do
		[ "$dep" -nt "$out" ] && return 0
	done
	return 1
}

CFLAGS_T=(-static -O2 -g0 -Wall -Wextra -Wno-unused-parameter -D_GNU_SOURCE
	-I"$ROOT/uapi" -I"$SRC/tests")
HELPER_DEPS=("$SRC/tests/dlc_test.h" "$ROOT/uapi/dlcache.h")
TESTS=()
build_failed=0
if [ "$MODE" = tests ]; then
	if newer_than "$OUT/obj/dlc_test.o" "$SRC/tests/dlc_test.c" "${HELPER_DEPS[@]}"; then
		"$TEST_CC" "${CFLAGS_T[@]}" -c "$SRC/tests/dlc_test.c" -o "$OUT/obj/dlc_test.o"
	fi
	for src in "$SRC"/tests/*.c ${EXTRA_TESTS:-}; do
		name=$(basename "$src" .c)
		[ "$name" = dlc_test ] && continue
		# EXTRA_TESTS: more sources (tests/fuzz/kcov_fuzz.c), always
		# rebuilt since they include files of their own.
		case "$src" in "$SRC"/tests/*) ;; *) rm -f "$OUT/bin/$name" ;; esac
		TESTS+=("$name")
		obj="$OUT/obj/dlc_test.o"
		# shellcheck disable=SC2207
		extra=($(sed -n '1s|^/\* dlc-test: \(.*\) \*/$|\1|p' "$src"))
		if [ ${#extra[@]} -gt 0 ]; then
			flagtag=$(printf '%s' "${extra[*]}" | tr -c 'A-Za-z0-9' '_')
			obj="$OUT/obj/dlc_test$flagtag.o"
			probe="$OUT/obj/probe$flagtag"
			printf 'int main(void) { return 0; }\n' > "$probe.c"
			if ! "$TEST_CC" -static "${extra[@]}" "$probe.c" -o "$probe" \
					> "$probe.log" 2>&1; then
				why="$TEST_CC cannot link a static program with ${extra[*]}"
				why+=": $(grep -m1 -i error "$probe.log" | tr -d '"\\$`' | cut -c1-120)"
				[ "${extra[*]}" != -m32 ] || why+=" (install gcc-multilib)"
				printf '#!/bin/sh\necho "SKIP: %s"\nexit 77\n' "$why" > "$OUT/bin/$name"
				chmod 0755 "$OUT/bin/$name"
				echo "# $name: skipped: $why"
				# make deps installs gcc-multilib: under CI=true
				# the skip the guest reports is also a failure.
				"$ROOT/tests/skip-required.sh" "$TAG:build-$name" "$why" | grep '^FAIL' || true
				continue
			fi
			if newer_than "$obj" "$SRC/tests/dlc_test.c" "${HELPER_DEPS[@]}"; then
				"$TEST_CC" "${CFLAGS_T[@]}" "${extra[@]}" -c "$SRC/tests/dlc_test.c" -o "$obj"
			fi
			# A skip script left from a run without the toolchain.
			[ "$(head -c 2 "$OUT/bin/$name" 2> /dev/null)" != '#!' ] ||
				rm -f "$OUT/bin/$name"
		fi
		if newer_than "$OUT/bin/$name" "$src" "$obj" "${HELPER_DEPS[@]}"; then
			if ! "$TEST_CC" "${CFLAGS_T[@]}" "${extra[@]}" "$src" "$obj" \
					-o "$OUT/bin/$name.tmp"; then
				echo "FAIL $TAG:build-$name (compile error)"
				build_failed=1
				continue
			fi
			mv "$OUT/bin/$name.tmp" "$OUT/bin/$name"
		fi
	done
	[ $build_failed -eq 0 ] || exit 1
elif [ "$MODE" = smoke ]; then
	# The smoke run checks that a static binary starts in the guest.
	cat > "$OUT/obj/hello.c" <<-'EOF'
	#include <stdio.h>
	int main(void) { puts("static binary runs"); return 0; }
	EOF
	if newer_than "$OUT/bin/hello" "$OUT/obj/hello.c"; then
		"$TEST_CC" -static -O2 "$OUT/obj/hello.c" -o "$OUT/bin/hello"
	fi
	TESTS=(hello)
fi
# --kunit: no programs; the guest loads the KUnit module (DLCACHE_KO).

# ---- initramfs -------------------------------------------------------------
. "$ROOT/tests/qemu/lib.sh"
if newer_than "$STAGE/bin/busybox" "$BUSYBOX"; then
	rm -rf "$STAGE"
	qemu_stage_busybox "$STAGE" "$BUSYBOX" tests
fi
install -m 0755 "$SRC/init.sh" "$STAGE/init"
rm -f "$STAGE"/tests/* "$STAGE/dlcache.ko"
for name in "${TESTS[@]}"; do
	cp "$OUT/bin/$name" "$STAGE/tests/$name"
done
[ "$MODE" = smoke ] || install -m 0644 "$KO" "$STAGE/dlcache.ko"

# cpio_node NAME MODE MAJOR MINOR: one newc entry without data, so that
# /dev/console exists before devtmpfs is mounted, without mknod (no root).
cpio_entry() {
	local name=$1 mode=$2 maj=$3 min=$4 nlink=$5 namesize pad
	namesize=$((${#name} + 1))
	printf '070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%s\0' \
		0 "$mode" 0 0 "$nlink" 0 0 0 0 "$maj" "$min" "$namesize" 0 "$name"
	pad=$(( (4 - (110 + namesize) % 4) % 4 ))
	[ $pad -eq 0 ] || head -c $pad /dev/zero
}
CPIO="$OUT/initramfs-${KREL:-custom}.cpio"
{
	(cd "$STAGE" && find . -mindepth 1 | LC_ALL=C sort |
		cpio -o -H newc -R 0:0 --quiet)
	cpio_entry dev/console $((0020600)) 5 1 1
	cpio_entry TRAILER!!! 0 0 0 1
} > "$CPIO.tmp"
mv "$CPIO.tmp" "$CPIO"

# ---- boot ------------------------------------------------------------------
APPEND="$QEMU_APPEND_BASE"
# The guest's /init reads its settings from /proc/cmdline.
APPEND+=" dlcqemu.mode=$MODE dlcqemu.test_timeout=$TEST_TIMEOUT"
[ -z "$ONLY" ] || APPEND+=" dlcqemu.only=$ONLY"
[ -z "${FUZZ_SECONDS:-}" ] || APPEND+=" dlcqemu.fuzz_seconds=$FUZZ_SECONDS"
[ -z "${DLCACHE_PARAMS:-}" ] || APPEND+=" dlcqemu.params=${DLCACHE_PARAMS// /,}"
# QEMU_CHECKERS=1 (make qemu-debug): the guest fails unless lockdep, KASAN,
# kmemleak and KCOV are on, and it runs on the $SMP CPUs it was given.
[ "${QEMU_CHECKERS:-0}" = 0 ] || APPEND+=" dlcqemu.checkers=1 dlcqemu.cpus=$SMP"

LOG="$OUT/console-${KREL:-custom}.log"
echo "# qemu: $(basename "$KERNEL"), $SMP cpus, $MEM, tcg; log in $LOG"
# A kernel that dies before /init ran (qemu_died_before_init) boots once
# more; its log is kept as LOG.boot1.
for boot in 1 2; do
	start=$(date +%s)
	set +e
	timeout -k 10 "$TIMEOUT" "$QEMU" -accel tcg -cpu max -smp "$SMP" -m "$MEM" \
		-nodefaults -display none -serial stdio -monitor none -no-reboot \
		-kernel "$KERNEL" -initrd "$CPIO" -append "$APPEND" < /dev/null 2>&1 |
		qemu_console "$LOG" |
		grep --line-buffered -E '^(ok|FAIL|skip) qemu:|^# |^DLCACHE-QEMU-VERDICT:' |
		sed -u -E "s/^(ok|FAIL|skip) qemu:/\1 $TAG:/"
	qrc=${PIPESTATUS[0]}
	set -e
	elapsed=$(( $(date +%s) - start ))
	if [ $boot = 1 ] && qemu_died_before_init "$LOG"; then
		cp "$LOG" "$LOG.boot1"
		echo "# the guest's kernel died before /init ran, no code of dlcache's loaded ($QEMU_EARLY_WHY; $LOG.boot1): booting it once more"
		continue
	fi
	break
done

verdict=$(grep -E '^DLCACHE-QEMU-VERDICT:' "$LOG" | tail -n 1 || true)
failed=$(grep -cE '^FAIL qemu:' "$LOG" || true)
if [ -z "$verdict" ]; then
	if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
		why="time limit of ${TIMEOUT}s hit"
	else
		why="qemu exited with $qrc"
	fi
	echo "# no verdict line ($why); the console log ends with:"
	grep -vE '^(ok|FAIL|skip) qemu:|^# ' "$LOG" | tail -n 40 | sed 's/^/#   /'
	echo "FAIL $TAG:verdict ($why)"
	exit 1
fi
echo "# qemu run on $KREL took ${elapsed}s"
if [ "$failed" -gt 0 ]; then
	exit 1
fi
exit 0
