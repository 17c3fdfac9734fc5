#!/bin/bash
# tests/fuzz/lib/run.sh ENGINE DIR SECONDS MODE CORPUS NAME...: run each
# harness DIR/ENGINE/fuzz_NAME for SECONDS from the seeds DIR/ENGINE/seeds/
# NAME and the corpus CORPUS/NAME (MODE fresh: emptied first, for make
# check; keep: grown run after run, for make fuzz-lib), under the per-input
# budgets FUZZ_LIB_TIMEOUT (s), FUZZ_LIB_RSS_MB and FUZZ_LIB_MALLOC_MB.
# Prints per harness "ok fuzz-lib:NAME (N execs, M new coverage units,
# corpus K)", "FAIL fuzz-lib:NAME (crash|timeout|oom: ARTIFACT)" or "skip
# fuzz-lib:NAME (why)" (tests/skip-required.sh: FAIL under CI=true), and
# "# fuzz-lib: NAME ..." lines: the coverage at start (the seeds and the
# corpus) and after the run, as tests/fuzz/kcov_fuzz.c's "# kcov-fuzz: ..." lines do.
# Exits 1 when any harness failed. FUZZ_LIB_JOBS harnesses (default: one
# per CPU) run at a time, each a single-threaded process; their lines come
# out in NAME order.
set -uo pipefail

engine=$1 dir=$2 seconds=$3 mode=$4 corpus=$5
shift 5
timeout=${FUZZ_LIB_TIMEOUT:-10}
rss=${FUZZ_LIB_RSS_MB:-1024}
malloc=${FUZZ_LIB_MALLOC_MB:-1024}
bin="$dir/$engine"
logs="$dir/logs"
artifacts="$dir/artifacts"
jobs=${FUZZ_LIB_JOBS:-$(nproc)}
mkdir -p "$logs" "$artifacts" "$corpus"

# libFuzzer's own budgets are its flags; the driver's memory budget under
# ASan is ASan's (its shadow needs more address space than RLIMIT_AS
# would leave). ASan's quarantine of freed memory is cut from 256 to 64
# MiB so that the RSS a run reaches is the inputs' (measured: the index
# harness at 480 MiB after 45 s with 256, 72 MiB with 16).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}max_allocation_size_mb=$malloc:allocator_may_return_null=0:detect_leaks=1:quarantine_size_mb=64"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}print_stacktrace=1:halt_on_error=1"

# The value of FIELD (cov, ft) on the last line matching PATTERN of @log.
field() {	# log pattern field
	grep -E "$2" "$1" | tail -n 1 | sed -n "s/.* $3: \([0-9]*\).*/\1/p"
}

# run_one NAME: one harness; its lines on stdout, 1 when it failed.
run_one() {
	local name=$1 h log tmp start status secs cov0 cov1 ft0 ft1 execs
	local before after artifact kind
	h="$bin/fuzz_$name"
	log="$logs/$name.log"
	if [ ! -x "$h" ] || [ ! -d "$bin/seeds/$name" ]; then
		tests/skip-required.sh "fuzz-lib:$name" \
			"$engine harness or its seeds did not build: see $dir/build.log"
		return
	fi
	[ "$mode" = fresh ] && rm -rf "${corpus:?}/$name"
	mkdir -p "$corpus/$name"
	before=$(find "$corpus/$name" -type f | wc -l)
	# The harness's files (a crashed one leaves them), on tmpfs if any.
	tmp=$(mktemp -d /dev/shm/dlc-fuzz-run.XXXXXX 2>/dev/null || mktemp -d)
	start=$(date +%s)
	# A hung harness past every limit still ends: libFuzzer's own
	# -max_total_time is checked between inputs.
	FUZZ_LIB_TMPDIR=$tmp timeout $((seconds + 2 * timeout + 60)) "$h" \
		-max_total_time="$seconds" -timeout="$timeout" \
		-rss_limit_mb="$rss" -malloc_limit_mb="$malloc" \
		-max_len=65536 -print_final_stats=1 \
		-artifact_prefix="$artifacts/$name-" \
		"$corpus/$name" "$bin/seeds/$name" > "$log" 2>&1
	status=$?
	rm -rf "$tmp"
	secs=$(( $(date +%s) - start ))
	cov0=$(field "$log" 'INITED' cov)
	cov1=$(field "$log" '(DONE|NEW|pulse|REDUCE)' cov)
	ft0=$(field "$log" 'INITED' ft)
	ft1=$(field "$log" '(DONE|NEW|pulse|REDUCE)' ft)
	execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p; s/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -n 1)
	after=$(find "$corpus/$name" -type f | wc -l)
	if [ -n "$cov0" ]; then
		echo "# fuzz-lib: $name ($engine, ${secs} s): coverage at start (seeds and corpus) $cov0 PCs/edges ($ft0 features), after ${cov1:-$cov0} (${ft1:-$ft0}); corpus $before -> $after inputs in $corpus/$name"
	else
		echo "# fuzz-lib: $name ($engine, ${secs} s): stopped on a seed or corpus input, before any coverage was counted"
	fi
	if [ $status -eq 0 ]; then
		echo "ok fuzz-lib:$name (${execs:-?} execs, $((after - before)) new coverage units, corpus $after)"
		return 0
	fi
	artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
	if grep -qE 'libFuzzer: timeout|==driver== ERROR: timeout' "$log"; then
		kind=timeout
	elif grep -qE 'libFuzzer: out-of-memory|==driver== ERROR: oom|allocation-size-too-big|requested allocation size .* exceeds' "$log"; then
		kind=oom
	elif [ -n "$artifact" ]; then
		kind=crash
	else
		kind="exit $status, no artifact"
	fi
	echo "FAIL fuzz-lib:$name ($kind: ${artifact:-see $log})"
	# What it was, without opening the log.
	{
		grep -m 1 -B 1 -E '^==[0-9]+== ?ERROR|^==driver== ERROR' "$log"
		grep -m 1 -E 'runtime error:' "$log"
		grep -E '^ +#[0-9]+ .* in [A-Za-z_0-9]+ .*(libdlcache|tests/fuzz/lib)/' "$log" | head -n 4
		grep -m 1 '^SUMMARY' "$log"
	} | sed 's/^/# /'
	if [ -n "$artifact" ]; then
		echo "# reproduce: $h $artifact"
	fi
	return 1
}

for name in "$@"; do
	while [ "$(jobs -pr | wc -l)" -ge "$jobs" ]; do
		wait -n
	done
	{ run_one "$name"; echo "rc $?"; } > "$logs/$name.result" &
done
wait
rc=0
for name in "$@"; do
	grep -v '^rc ' "$logs/$name.result"
	grep -qx 'rc 0' "$logs/$name.result" || rc=1
done
exit $rc
