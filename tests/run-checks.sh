#!/bin/bash
# Run every test and end with one line "N passed, N failed, N skipped".
#
# Host tests are small programs, one per feature, built twice: plain and
# with AddressSanitizer + UBSan; the Python package's tests
# (tests/python/test_*.py) print the same lines. Each prints one line per sub-check,
# "ok NAME", "FAIL NAME" or "skip NAME: why" (tests/unit/helpers/testutil.h),
# and every line counts as one result, named PROGRAM/NAME. A program that
# exits non-zero without a FAIL line fails as a whole; one that prints no
# sub-check line counts once by its exit status (0 passes, 77 skips).
# The kernel side (KUnit and QEMU boots) prints the same lines.
# A make target that prints no result line fails. Every skip is listed
# with its reason at the end. Afterwards the host's kernel log is checked
# for splats that appeared during the run.
set -uo pipefail

BUILD=${1:-build}
cd "$(dirname "$0")/.."
pass=0 fail=0 skip=0
failed=()
failed_why=()
skipped=()
times=()
log_dir="$BUILD/test-logs"
mkdir -p "$log_dir"

start_s=$(date +%s)
# make check's start (Makefile): the packages and the build came first.
[ -n "${DLC_CHECK_T0:-}" ] && times+=("deps and build $((start_s - DLC_CHECK_T0)) s")
layer_s=$start_s
# Close the layer that began at layer_s as "NAME N s" in times.
layer_done() {	# name
	local now
	now=$(date +%s)
	times+=("$1 $((now - layer_s)) s")
	layer_s=$now
}
dmesg_mark=$(dmesg 2>/dev/null | wc -l || echo 0)

result() {	# name status [why]
	case "$2" in
	ok)   pass=$((pass + 1)); echo "ok   $1" ;;
	skip) skip=$((skip + 1)); skipped+=("$1: ${3:-no reason given}")
	      echo "skip $1${3:+: $3}" ;;
	*)    fail=$((fail + 1)); failed+=("$1"); failed_why+=("$1${3:+: $3}")
	      echo "FAIL $1${3:+: $3}" ;;
	esac
}

# Count the "ok|FAIL|skip NAME[: why]" lines of @log as results named
# PREFIX/NAME (NAME alone with an empty prefix). Sets n_sub and fails_sub.
count_results() {	# prefix log
	local prefix=$1 log=$2 status name why line
	n_sub=0 fails_sub=0
	while IFS= read -r line; do
		# "skip NAME: why" (host tests) or "skip NAME (why)" (kernel
		# side, where NAME is SUITE:TEST and may hold a colon)
		status=${line%% *}
		line=${line#* }
		name=${line%% *}
		why=${line#"$name"}
		name=${name%:}
		why=${why# }
		case "$why" in "("*")") why=${why#(}; why=${why%)} ;; esac
		[ "$status" = FAIL ] && fails_sub=$((fails_sub + 1))
		result "${prefix:+$prefix/}$name" "$status" "$why"
		n_sub=$((n_sub + 1))
	done < <(grep -E '^(ok|FAIL|skip) [^ :]+' "$log")
}

# Each host program's seconds, "SECONDS NAME", for the slowest list.
prog_times=()
run_program() {	# name log cmd...
	local name=$1 log=$2 rc t0
	shift 2
	t0=$(date +%s)
	timeout 600 "$@" >"$log" 2>&1
	rc=$?
	prog_times+=("$(( $(date +%s) - t0 )) $name")
	count_results "$name" "$log"
	if [ "$n_sub" -eq 0 ]; then
		case $rc in
		0)  result "$name" ok ;;
		77) result "$name" skip "$(grep -m1 -i skip "$log")" ;;
		*)  result "$name" fail ;;
		esac
	elif [ $rc -ne 0 ] && [ $rc -ne 77 ] && [ "$fails_sub" -eq 0 ]; then
		result "$name" fail
	fi
	if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
		echo "     exit $rc; last lines of $log:"
		tail -n 15 "$log" | sed 's/^/     | /'
	fi
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
for flavour in release asan; do
	for t in "$BUILD/$flavour"/tests/test_*; do
		[ -x "$t" ] || continue
		name="$flavour/$(basename "$t")"
		ctl="$PWD/$BUILD/dlcachectl"
		[ "$flavour" = asan ] && ctl="$PWD/$BUILD/asan/dlcachectl"
		DLCACHECTL="$ctl" run_program "$name" "$log_dir/${flavour}-$(basename "$t").log" "$t"
	done
	layer_done "unit $flavour"
done
for t in tests/cli/test_*.sh; do
	[ -f "$t" ] || continue
	DLCACHECTL="$PWD/$BUILD/dlcachectl" DLCACHECTL_MPI="$PWD/$BUILD/mpi/dlcachectl" \
		run_program "cli/$(basename "$t" .sh)" \
		"$log_dir/cli-$(basename "$t").log" bash "$t"
done
layer_done cli

# The Python package (dlcache.torch) with Debian's python3 and torch.
for t in tests/python/test_*.py; do
	[ -f "$t" ] || continue
	PYTHONPATH="$PWD/$BUILD/python" DLCACHECTL="$PWD/$BUILD/dlcachectl" \
		run_program "python/$(basename "$t" .py)" \
		"$log_dir/python-$(basename "$t").log" /usr/bin/python3 "$t"
done
layer_done python

# Kernel side: each make target prints "ok|FAIL|skip NAME" lines.
# Every one of them must run: a target that is missing or fails before
# printing a result line counts as a failure, never as silently absent.
# debug-kernel builds the QEMU suite's debug kernel once per machine
# (cached in /var/cache/dlcache): tens of minutes cold, seconds after;
# the targets that boot it (qemu-debug-suite, qemu-debug-int, kunit,
# fuzz-check) follow it.
# Cold, it builds in the background of the targets before it, at
# SCHED_IDLE and idle I/O priority, so that it takes only the CPU time
# they leave: the stock QEMU guests leave about 46 % of it (one vCPU or
# both wait on timers). The debug-kernel target then waits for it (the
# build script's lock). Not in the background of the host tests: tried
# at nice 19, it made test_process's ctrl_c wait 6.6 s for its first
# batch, longer than the whole epoch its Ctrl-C was to interrupt.
bg_kernel=
if ! tests/qemu/debug-kernel/build.sh --cached >/dev/null 2>&1 &&
   ls /usr/src/linux-source-6.1*.tar.xz >/dev/null 2>&1; then
	setsid chrt --idle 0 ionice -c 3 tests/qemu/debug-kernel/build.sh \
		>"$log_dir/debug-kernel-background.log" 2>&1 &
	bg_kernel=$!
	echo "# debug-kernel: building in the background (SCHED_IDLE) from here on"
fi
# An interrupted check leaves no builder behind (its own session).
stop_bg_kernel() {
	[ -n "$bg_kernel" ] && kill -0 "$bg_kernel" 2>/dev/null &&
		kill -- -"$bg_kernel" 2>/dev/null
	return 0
}
trap stop_bg_kernel EXIT
# make_target TARGET: run it into its log; TARGET.rc gets "exit seconds".
make_target() {
	local target=$1 limit=2400 t0 rc
	[ "$target" = debug-kernel ] && limit=3600
	t0=$(date +%s)
	timeout $limit make --no-print-directory "$target" BUILD="$BUILD" \
		>"$log_dir/$target.log" 2>&1
	rc=$?
	echo "$rc $(( $(date +%s) - t0 ))" >"$log_dir/$target.rc"
}

# judge_target TARGET: count the result lines of its log.
judge_target() {
	local target=$1 log="$log_dir/$1.log" rc secs
	read -r rc secs <"$log_dir/$target.rc"
	times+=("$target $secs s")
	count_results "" "$log"
	# The measurements worth seeing without opening the log: the
	# fuzzers' coverage side by side, the debug kernel's build time.
	grep -E '^# (kcov-fuzz: (new|functions)|qemu-debug:|fuzz-lib:)' "$log" | sed 's/^/     /'
	if [ "$rc" -ne 0 ] && ! grep -q '^FAIL ' "$log"; then
		result "make-$target" fail
	fi
	if [ "$rc" -ne 0 ] || grep -q '^FAIL ' "$log"; then
		echo "     make $target exit $rc; last lines of $log:"
		tail -n 25 "$log" | sed 's/^/     | /'
	elif [ "$n_sub" -eq 0 ]; then
		echo "     make $target printed no result line"
		result "make-$target" fail
	fi
}

# One step at a time; a step of lanes joined by "&" runs them side by
# side, each lane's targets in turn. The debug kernel's guests leave
# about 30 % of the CPU idle (one vCPU waits on the other, or on
# timers), so the integration, which judges no timing on that kernel,
# runs beside KUnit and the fuzzer. The suite (qemu-debug-suite) runs
# alone: its lease and idle-timeout checks are timed.
for step in qemu-test fuzz-lib-check style dkms-test deb-test debug-kernel \
	    qemu-debug-suite "qemu-debug-int & kunit fuzz-check"; do
	IFS='&' read -r -a lanes <<<"$step"
	if [ ${#lanes[@]} -eq 1 ]; then
		make_target "$step"
		judge_target "$step"
		continue
	fi
	t0=$(date +%s)
	pids=()
	for lane in "${lanes[@]}"; do
		( for target in $lane; do make_target "$target"; done ) &
		pids+=($!)
	done
	wait "${pids[@]}"
	for target in $(echo "$step" | tr '&' ' '); do
		judge_target "$target"
	done
	times+=("side by side ($step) $(( $(date +%s) - t0 )) s")
done

# Splats in the host kernel log while we ran (io_uring, O_DIRECT, mlock).
if dmesg >/dev/null 2>&1; then
	splats=$(dmesg | tail -n +"$((dmesg_mark + 1))" |
		grep -E 'WARNING:|BUG:|Oops|general protection fault|possible circular locking|possible recursive locking|INFO: task .* blocked for more than|UBSAN:|KASAN:' || true)
	if [ -n "$splats" ]; then
		result host-dmesg fail
		echo "$splats" | sed 's/^/     | /'
	else
		result host-dmesg ok
	fi
fi

if [ ${#skipped[@]} -gt 0 ]; then
	echo "skipped:"
	printf '     %s\n' "${skipped[@]}"
fi
# Each layer's time (the packages and build, the host tests' layers, each
# kernel-side target) and the whole, then each failure
# with its reason: the end of the output is what a CI summary shows.
times+=("all $(( $(date +%s) - ${DLC_CHECK_T0:-$start_s} )) s")
echo "times: $(IFS=,; echo "${times[*]}" | sed 's/,/, /g')"
# Where the host layers' time goes: their ten slowest programs.
[ ${#prog_times[@]} -eq 0 ] ||
	echo "slowest: $(printf '%s\n' "${prog_times[@]}" | sort -rn | head -n 10 |
		awk '{ printf "%s%s %s s", (NR > 1 ? ", " : ""), $2, $1 }')"
if [ ${#failed[@]} -gt 0 ]; then
	echo "failed:"
	printf '     %s\n' "${failed_why[@]}"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
