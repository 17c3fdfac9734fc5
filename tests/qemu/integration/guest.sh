#!/bin/sh
# /init of the dlcache integration guest (see integration.sh, which reads
# what this prints and judges the numbers).
#
# Lines for the host:
#   RESULT ok|FAIL|skip NAME [(why)]   a check decided here
#   DATA NAME VALUE                    numbers and JSON for the host's checks
#   # ...                              details
#   INT-DONE                           the end (missing: crash or hang)
#   WATCHDOG ...                       near the host's time limit: what
#                                      every task is doing (the host shows
#                                      these lines when the guest is cut off)

export PATH=/bin
mount -t devtmpfs none /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
mount -t proc none /proc
mount -t sysfs none /sys
mount -t tmpfs none /tmp
# Where loaders publish their status (dlcachectl watch --loaders), as on
# a node.
mkdir -p /dev/shm && mount -t tmpfs -o mode=1777 none /dev/shm
mount -t debugfs none /sys/kernel/debug 2>/dev/null
echo 20 > /proc/sys/kernel/hung_task_timeout_secs 2>/dev/null

CAP_MB=10
EPOCHS=3
NOKERNEL=0
STORAGE_KBPS=0
STARTS_ONLY=0
DRIFT_ONLY=0
JOBS_ONLY=0
DRIFT_DELAY_MS=0
TIMING=1
LIMIT_S=0
for arg in $(cat /proc/cmdline); do
	case "$arg" in
	dlcint.cap_mb=*) CAP_MB=${arg#*=} ;;
	dlcint.epochs=*) EPOCHS=${arg#*=} ;;
	dlcint.nokernel=*) NOKERNEL=${arg#*=} ;;
	dlcint.storage_kbps=*) STORAGE_KBPS=${arg#*=} ;;
	dlcint.starts_only=*) STARTS_ONLY=${arg#*=} ;;
	dlcint.starts_rounds=*) STARTS_ROUNDS=${arg#*=} ;;
	dlcint.drift_only=*) DRIFT_ONLY=${arg#*=} ;;
	dlcint.jobs_only=*) JOBS_ONLY=${arg#*=} ;;
	dlcint.drift_delay_ms=*) DRIFT_DELAY_MS=${arg#*=} ;;
	dlcint.timing=*) TIMING=${arg#*=} ;;
	dlcint.limit_s=*) LIMIT_S=${arg#*=} ;;
	esac
done

IDX=/tmp/ds.idx
CTL=/bin/dlcachectl
CG=/sys/fs/cgroup
# Small output and one decode thread per process: the cache and the disk
# are under test here, not the decoder, and TCG is slow.
BATCH=16
BENCH="--batch-size $BATCH --size 64 --threads 1"
# What fails a run in the kernel log (tests/qemu/splats.ere, installed
# by integration.sh).
SPLAT_RE=$(cat /splats.ere)

result() {	# ok|FAIL|skip name [why]
	echo "RESULT $*"
}
info() {
	echo "# $*"
}
data() {	# name value...
	n=$1
	shift
	echo "DATA $n $*"
}
digests() {	# file...: the bench --digest values of the files, in order, one line
	cat "$@" | grep -o '"digest": "[0-9a-f]*"' | tr '\n' ' '
}
show() {	# file [prefix]: a file's lines as "# " lines
	sed "s/^/#   ${2:-}/" "$1"
}
finish() {
	# Everything the benches logged to the kernel: splats fail the run.
	dmesg > /tmp/dmesg.all 2>/dev/null
	if grep -E "$SPLAT_RE" /tmp/dmesg.all > /tmp/dmesg.hits; then
		result FAIL dmesg
		show /tmp/dmesg.all | tail -n 60
	else
		result ok dmesg
	fi
	# kmemleak, on a kernel that has it (the debug kernel): a leak fails.
	if [ -w /sys/kernel/debug/kmemleak ]; then
		echo scan > /sys/kernel/debug/kmemleak
		sleep 1
		echo scan > /sys/kernel/debug/kmemleak
		if grep -q 'unreferenced object' /sys/kernel/debug/kmemleak; then
			result FAIL kmemleak
			head -n 60 /sys/kernel/debug/kmemleak | sed 's/^/# /'
		else
			result ok kmemleak
		fi
	fi
	echo INT-DONE
	sync
	poweroff -f
	reboot -f
	sleep 5
	echo o > /proc/sysrq-trigger
}

# watchdog: a minute before the host's limit (dlcint.limit_s), each user
# task's state, wait channel and kernel stack, so that a hang leaves its
# cause in the log. It reads nothing that takes a task's mmap_lock.
watchdog() {
	sleep $((LIMIT_S > 120 ? LIMIT_S - 60 : LIMIT_S / 2))
	echo "WATCHDOG $(cut -d' ' -f1 /proc/uptime) s up, near the limit of $LIMIT_S s; tasks (pid comm state ppid, wchan):"
	for _p in /proc/[0-9]*; do
		# After the ")" that ends the command's name: state, ppid.
		_st=$(sed 's/.*) //' $_p/stat 2>/dev/null) || continue
		set -- $_st
		[ "$2" != 2 ] && [ "${_p#/proc/}" != 2 ] || continue
		echo "WATCHDOG ${_p#/proc/} $(cat $_p/comm) $1 $2, $(cat $_p/wchan 2>/dev/null)"
		sed 's/^/WATCHDOG     /' $_p/stack 2>/dev/null
	done
}

vda_sectors() {	# sectors read from /dev/vda so far
	awk '{print $3}' /sys/block/vda/stat
}

# The helpers below are called from loops: what they count is declared
# local (busybox ash has it), or a caller's counter would be reset under it.

# wait_pid PID SECS: exit status of PID, or 124 after killing it at the limit.
wait_pid() {
	local _n=0
	while kill -0 "$1" 2>/dev/null; do
		if [ $_n -ge $(($2 * 5)) ]; then
			kill -9 "$1" 2>/dev/null
			wait "$1" 2>/dev/null
			return 124
		fi
		usleep 200000
		_n=$((_n + 1))
	done
	wait "$1"
}

# uptime_s: whole seconds since boot, for bounds in time rather than polls.
uptime_s() {
	read -r _up _ < /proc/uptime
	echo "${_up%%.*}"
}

# wait_line FILE PATTERN: up to 10 s for FILE to hold a line matching PATTERN.
wait_line() {
	local _n=0
	while [ $_n -lt 100 ] && ! grep -q "$2" "$1" 2>/dev/null; do
		usleep 100000
		_n=$((_n + 1))
	done
}

# global_counter NAME: a counter of the "global" object of stats --json
# (it comes before per_dataset, so the first match is the global one).
global_counter() {
	$CTL stats --json 2>/dev/null | grep -o "\"$1\": [0-9]*" | head -n 1 | awk '{print $2}'
}

# wait_counter NAME MIN SECS: until the global counter NAME >= MIN.
wait_counter() {
	local _n=0 _v
	while [ $_n -lt $(($3 * 10)) ]; do
		_v=$(global_counter "$1")
		[ -n "$_v" ] && [ "$_v" -ge "$2" ] && return 0
		usleep 100000
		_n=$((_n + 1))
	done
	return 1
}

module_loaded() {
	grep -q '^dlcache ' /proc/modules
}

# trace_consumers TAG N PID0 PID1: every 0.5 s, up to N times, while
# either process runs, the module's consumers (cursor, cost, late_ms,
# stalled) as TRACE lines with the guest's uptime (drift_late.py and
# the jobs study read them).
trace_consumers() {
	local _i=0 _up
	while [ $_i -lt "$2" ] && { kill -0 "$3" 2>/dev/null || kill -0 "$4" 2>/dev/null; }; do
		_i=$((_i + 1))
		read -r _up _ < /proc/uptime
		grep '\.job[0-9]' /sys/kernel/debug/dlcache/stats 2>/dev/null |
			sed "s/^/TRACE $1 $_up /"
		usleep 500000
	done
}

# drift_run tag, DLCACHE_JOB, then options for both ranks: one run of two
# ranks of one job, the module's cache dropped first.
drift_run() {
	local _t=$1 _job=$2 _late _i _r0 _r1 r
	shift 2
	$CTL drop > /dev/null 2>&1
	for r in 0 1; do
		# Rank 1 starts _late ms after rank 0 (dlcint.drift_delay_ms).
		_late=0
		[ $r = 0 ] || _late=${DRIFT_LATE_MS:-0}
		sh -c "usleep $((_late * 1000)); DLCACHE_JOB=$_job exec $CTL bench $IDX --backend kernel --epochs $EPOCHS \
			--json --world 2 --rank $r $* $BENCH" > /tmp/d$r.json 2> /tmp/d$r.err &
		eval dpid$r=$!
	done
	[ "$DRIFT_TRACE" != 1 ] || trace_consumers $_t 480 $dpid0 $dpid1
	wait_pid $dpid0 240
	_r0=$?
	wait_pid $dpid1 240
	_r1=$?
	if [ $_r0 -ne 0 ] || [ $_r1 -ne 0 ]; then
		info "drift run $_t: exit $_r0 and $_r1"
		show /tmp/d0.err
		show /tmp/d1.err
		return 1
	fi
	data drift_$_t "$(cat /tmp/d0.json) $(cat /tmp/d1.json)"
}

load_dlcache() {
	if ! insmod /dlcache.ko "capacity_mb=$CAP_MB" > /tmp/insmod.out 2>&1; then
		show /tmp/insmod.out
		return 1
	fi
	local _n=0
	while [ ! -c /dev/dlcache ] && [ $_n -lt 50 ]; do
		usleep 20000
		_n=$((_n + 1))
	done
	[ -c /dev/dlcache ]
}

unload_dlcache() {
	local _n=0
	while [ $_n -lt 20 ]; do
		rmmod dlcache > /tmp/rmmod.out 2>&1 && return 0
		usleep 100000
		_n=$((_n + 1))
	done
	show /tmp/rmmod.out
	return 1
}

[ "$LIMIT_S" -gt 0 ] && watchdog &

# ---- the disk -----------------------------------------------------------------
dmesg -c > /dev/null 2>&1
for m in $(cat /mods/order); do
	if ! insmod "/mods/$m.ko" > /tmp/insmod.out 2>&1 &&
	   ! grep -q "^$m " /proc/modules; then
		info "insmod $m failed:"
		show /tmp/insmod.out
	fi
done
i=0
while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do
	usleep 50000
	i=$((i + 1))
done
mkdir -p /mnt
if ! mount -t ext4 -o ro /dev/vda /mnt 2> /tmp/mount.err; then
	result FAIL disk "(cannot mount /dev/vda)"
	show /tmp/mount.err
	dmesg | tail -n 20 | sed 's/^/#   /'
	finish
fi
if ! $CTL index /mnt/ds -o $IDX > /tmp/index.out 2>&1; then
	result FAIL disk "(dlcachectl index failed)"
	show /tmp/index.out
	finish
fi
chmod 0644 $IDX
# "/tmp/ds.idx: 300 samples, 10 classes, 21238942 bytes, key <32 hex>"
KEY=$(sed -n 's/.*key \([0-9a-f]*\).*/\1/p' /tmp/index.out)
NSAMPLES=$(sed -n 's/.*: \([0-9]*\) samples.*/\1/p' /tmp/index.out)
result ok disk
info "$(cat /tmp/index.out)"
data key "$KEY"
data nsamples "$NSAMPLES"
data timing "$TIMING"

# cgroup v2 with the memory controller for the page-cache run, and to
# measure what the bench processes themselves need.
mkdir -p $CG
mount -t cgroup2 none $CG 2>/dev/null
echo +memory > $CG/cgroup.subtree_control 2>/dev/null
mkdir -p $CG/k $CG/pc

# ---- many loaders start at once -------------------------------------------------
# STARTS_N benches of as many jobs (different seeds) start at the same
# moment on one data set the module does not hold yet, as a job's ranks
# and two jobs launched together do: every one must start (a first
# ATTACH racing another's creation of the data set, its job's consumer
# joined at once). Two rounds: the module just loaded, then the data set
# idle (the first round's left it cached); dlcint.starts_rounds=N runs
# more, every third after a DROP. Each bench reads a rank's share of one
# epoch, so that a round stays short (about 14 s under TCG).
STARTS_N=8
STARTS_ROUNDS=${STARTS_ROUNDS:-2}
starts_round() {	# round
	local _i=0 _p _rc _bad=0 _end _left
	rm -f /tmp/starts.go
	while [ $_i -lt $STARTS_N ]; do
		sh -c "while [ ! -e /tmp/starts.go ]; do usleep 5000; done; exec $CTL bench $IDX \
			--backend kernel --epochs 1 --seed $(($1 * 100 + _i)) --world $STARTS_N \
			--rank $_i $BENCH" > /tmp/starts$_i.out 2> /tmp/starts$_i.err &
		eval spid$_i=$!
		_i=$((_i + 1))
	done
	usleep 300000
	: > /tmp/starts.go
	# One bound for the round, not one per bench: eight in a row would
	# outlast the host's limit for the whole guest.
	_end=$(($(uptime_s) + 120))
	_i=0
	while [ $_i -lt $STARTS_N ]; do
		eval _p=\$spid$_i
		_left=$((_end - $(uptime_s)))
		wait_pid $_p $((_left > 1 ? _left : 1))
		_rc=$?
		if [ $_rc -ne 0 ]; then
			info "starts round $1: bench $_i exited $_rc:"
			show /tmp/starts$_i.err
			_bad=$((_bad + 1))
		fi
		_i=$((_i + 1))
	done
	return $_bad
}
if [ "$NOKERNEL" = 1 ]; then
	result skip concurrent-starts "(no kernel backend)"
elif ! load_dlcache; then
	result FAIL concurrent-starts "(insmod)"
else
	_t0=$(date +%s)
	_fail=0
	_r=0
	while [ $_r -lt $STARTS_ROUNDS ]; do
		[ $((_r % 3)) -ne 2 ] || $CTL drop > /dev/null 2>&1
		starts_round $_r || _fail=$((_fail + $?))
		_r=$((_r + 1))
	done
	if [ $_fail -eq 0 ]; then
		result ok concurrent-starts "($STARTS_ROUNDS rounds of $STARTS_N, $(( $(date +%s) - _t0 ))s)"
	else
		result FAIL concurrent-starts "($_fail of $((STARTS_ROUNDS * STARTS_N)) benches failed)"
	fi
	unload_dlcache || result FAIL concurrent-starts-rmmod
fi
[ "$STARTS_ONLY" != 1 ] || finish
# dlcint.drift_only=N: the drift runs alone, lockstep then N drifting,
# each with the module's view of its consumers every 0.5 s (TRACE lines),
# to study the drifting ranks' hit ratio over many runs.
if [ "$DRIFT_ONLY" -gt 0 ]; then
	DRIFT_RUNS=$DRIFT_ONLY
	DRIFT_TRACE=1
	load_dlcache || { result FAIL insmod; finish; }
	drift_run lockstep "" --lockstep /tmp/lockstep.d || result FAIL drift-run-lockstep
	i=0
	while [ $i -lt $DRIFT_RUNS ]; do
		# Run i starts rank 1 (i mod 5) x dlcint.drift_delay_ms late.
		DRIFT_LATE_MS=$(( (i % 5) * DRIFT_DELAY_MS ))
		drift_run $i "" || result FAIL drift-run-$i
		i=$((i + 1))
	done
	DRIFT_LATE_MS=0
	unload_dlcache || result FAIL drift-rmmod
	finish
fi

# ---- dlcache.ko: two ranks of one job -----------------------------------------
KERNEL_OK=0
if ! load_dlcache; then
	result FAIL insmod
	finish
fi
# Two ranks of one job on dlcache.ko, and while they run: the admin
# commands, rmmod (refused), an ATTACH with the wrong sample count.
kernel_run() {
	s0=$(vda_sectors)
	# In step after every batch, as DDP ranks are (bench --lockstep).
	rm -f /tmp/lockstep.k
	for r in 0 1; do
		sh -c "echo 0 > $CG/k/cgroup.procs; exec $CTL bench $IDX --backend kernel \
			--epochs $EPOCHS --json --world 2 --rank $r --cache-fraction 0.5 \
			--lockstep /tmp/lockstep.k $BENCH" \
			> /tmp/k$r.json 2> /tmp/k$r.err &
		eval kpid$r=$!
	done

	# While both run: the admin commands, rmmod, a bad ATTACH.
	wait_counter misses 16 30
	if kill -0 $kpid0 2>/dev/null && kill -0 $kpid1 2>/dev/null; then
		$CTL datasets > /tmp/ds.out 2>&1
		rc=$?
		show /tmp/ds.out
		if [ $rc -eq 0 ] && grep -q "^$KEY *$NSAMPLES " /tmp/ds.out; then
			result ok admin-datasets
		else
			result FAIL admin-datasets "(exit $rc, key $KEY not listed)"
		fi
		$CTL stats --json "$KEY" > /tmp/st.json 2>&1
		rc=$?
		if [ $rc -eq 0 ] && grep -q "\"key\": \"$KEY\", \"nsamples\": $NSAMPLES, \"mode\": \"0600\"" /tmp/st.json; then
			result ok admin-stats-key
		else
			result FAIL admin-stats-key "(exit $rc)"
			show /tmp/st.json
		fi
		$CTL stats > /tmp/st.txt 2>&1
		show /tmp/st.txt

		# rmmod must be refused while the benches hold the device.
		rmmod dlcache > /tmp/rmmod.out 2>&1
		rc=$?
		if [ $rc -ne 0 ] && module_loaded && [ -c /dev/dlcache ]; then
			result ok rmmod-busy
			info "rmmod while the benches run: $(cat /tmp/rmmod.out) (exit $rc)"
		else
			result FAIL rmmod-busy "(rmmod exit $rc while the device was in use)"
		fi

		/bin/int_client attach-wrong "$KEY" "$NSAMPLES" > /tmp/aw.out 2>&1
		rc=$?
		show /tmp/aw.out
		if [ $rc -eq 0 ]; then
			result ok attach-wrong-count
		else
			result FAIL attach-wrong-count
		fi

		$CTL watch --interval 0.5 --count 3 > /tmp/watch.out 2> /tmp/watch.err
		rc=$?
		show /tmp/watch.out
		show /tmp/watch.err
		if [ $rc -eq 0 ] && [ "$(grep -c '' /tmp/watch.out)" -eq 4 ] &&
		   head -n 1 /tmp/watch.out | grep -q 'hits/s'; then
			result ok admin-watch
		else
			result FAIL admin-watch "(exit $rc, want a header and 3 lines)"
		fi

		# The benches' loaders, from their status files: on the kernel
		# backend, handing out images.
		$CTL watch --loaders --interval 0.5 --count 2 > /tmp/wl.out 2> /tmp/wl.err
		rc=$?
		show /tmp/wl.out
		show /tmp/wl.err
		n=$(awk '$4 == "kernel" && $5 > 0' /tmp/wl.out | grep -c '')
		if [ $rc -eq 0 ] && [ "$n" -ge 1 ]; then
			result ok admin-watch-loaders
		else
			result FAIL admin-watch-loaders "(exit $rc, $n lines of a kernel loader handing out images)"
		fi
	else
		for t in admin-datasets admin-stats-key rmmod-busy attach-wrong-count admin-watch admin-watch-loaders; do
			result skip $t "(the benches ended before the checks could run)"
		done
	fi
	wait_pid $kpid0 240
	rc0=$?
	wait_pid $kpid1 240
	rc1=$?
	s1=$(vda_sectors)
	info "bench rank 0 (exit $rc0):"
	show /tmp/k0.err
	info "bench rank 1 (exit $rc1):"
	show /tmp/k1.err
	if [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ]; then
		KERNEL_OK=1
		result ok kernel-bench
		data k_bench0 "$(cat /tmp/k0.json)"
		data k_bench1 "$(cat /tmp/k1.json)"
		data k_disk_bytes $(( (s1 - s0) * 512 ))
		data k_stats "$($CTL stats --json)"
		# The counters in Prometheus's text (one line), then the JSON
		# again: each exported value lies between the two readings.
		data k_prom "$($CTL stats --prometheus | base64 -w 0)"
		data k_stats_after "$($CTL stats --json)"
	else
		result FAIL kernel-bench "(exit $rc0 and $rc1)"
		show /tmp/k0.json
		show /tmp/k1.json
	fi
}

data nokernel $NOKERNEL
if [ "$NOKERNEL" = 1 ]; then
	for t in kernel-bench admin-datasets admin-stats-key rmmod-busy attach-wrong-count admin-watch admin-watch-loaders; do
		result skip $t "(kernel backend not available)"
	done
else
	kernel_run
fi

# ---- a job killed after epoch 0 and restarted ---------------------------------
# A detached data set stays cached, idle (DLCACHE_FEAT_IDLE), so a job that
# is killed and restarted finds its cache warm. After DROP (which frees
# kernel_run's idle data set), the two ranks of kernel_run run and get
# SIGKILL as soon as each printed epoch 0 (a crash, not an orderly exit:
# with --epochs 2 each is still running, at the start of epoch 1); the same
# two ranks, restarted with --start-epoch 1
# --epochs 2, must see in epoch 1 the byte hit ratio of kernel_run's
# uninterrupted epoch 1, within 0.02. Epoch 2 is printed for both.

# epoch_bytes EPOCH FILE...: "hit_bytes miss_bytes" of EPOCH, summed over
# the bench --json outputs FILE...
epoch_bytes() {
	_e=$1
	shift
	cat "$@" | tr '{' '\n' | grep "^\"epoch\": $_e," |
		sed -n 's/.*"hit_bytes": \([0-9]*\), "miss_bytes": \([0-9]*\).*/\1 \2/p' |
		awk '{h += $1; m += $2} END {print h + 0, m + 0}'
}

byte_ratio() {	# hit_bytes miss_bytes
	awk -v h="$1" -v m="$2" 'BEGIN { printf "%.4f", h + m ? h / (h + m) : 0 }'
}

# restart_ranks NAME ARGS...: kernel_run's two ranks, in step, with ARGS;
# output in /tmp/NAME_<rank>.out and .err, pids in NAMEpid0 and NAMEpid1.
restart_ranks() {
	local _n=$1 r
	shift
	rm -f /tmp/lockstep.$_n
	for r in 0 1; do
		$CTL bench $IDX --backend kernel --world 2 --rank $r \
			--cache-fraction 0.5 --lockstep /tmp/lockstep.$_n "$@" $BENCH \
			> /tmp/${_n}_$r.out 2> /tmp/${_n}_$r.err &
		eval ${_n}pid$r=$!
	done
}

restart_run() {
	$CTL drop > /dev/null 2>&1
	restart_ranks r1 --epochs 2
	# SIGKILL each rank once its epoch-0 line is out, in whichever order
	# the lines come, within 240 s of uptime (a count of polls is no
	# bound: a poll takes 10 ms on a quiet host and 150 on a loaded one,
	# and past idle_keep_s the idle set is rightly gone).
	killed=""
	nkilled=0
	t0=$(uptime_s)
	while [ $nkilled -lt 2 ] && [ $(($(uptime_s) - t0)) -lt 240 ]; do
		for r in 0 1; do
			case "$killed" in *"$r "*) continue ;; esac
			eval p=\$r1pid$r
			if grep -q '^0 ' /tmp/r1_$r.out 2>/dev/null || ! kill -0 $p 2>/dev/null; then
				kill -9 $p 2>/dev/null
				killed="$killed$r "
				nkilled=$((nkilled + 1))
			fi
		done
		usleep 10000
	done
	tkill=$(($(uptime_s) - t0))
	wait_pid $r1pid0 60
	krc0=$?
	wait_pid $r1pid1 60
	krc1=$?
	info "epoch 0, then SIGKILL (exit $krc0 and $krc1; 137 is the kill; ranks ${killed% } killed in that order, $tkill s after the start):"
	show /tmp/r1_0.out "rank 0: "
	show /tmp/r1_1.out "rank 1: "
	show /tmp/r1_0.err
	show /tmp/r1_1.err
	$CTL datasets > /tmp/r1_ds.out 2>&1
	show /tmp/r1_ds.out
	$CTL stats "$KEY" 2>&1 | grep -E 'cursor|idle' > /tmp/r1_st.out
	show /tmp/r1_st.out
	restart_ranks r2 --start-epoch 1 --epochs 2 --json
	wait_pid $r2pid0 240
	src0=$?
	wait_pid $r2pid1 240
	src1=$?
	info "restarted at epoch 1 (exit $src0 and $src1):"
	show /tmp/r2_0.err
	show /tmp/r2_1.err
	if [ $src0 -ne 0 ] || [ $src1 -ne 0 ] || ! grep -q '^0 ' /tmp/r1_0.out ||
	   ! grep -q '^0 ' /tmp/r1_1.out; then
		result FAIL kernel-restart "(epoch-0 run or restart failed: exit $krc0 $krc1, $src0 $src1)"
		show /tmp/r2_0.out
		return
	fi
	ra1=$(byte_ratio $(epoch_bytes 1 /tmp/k0.json /tmp/k1.json))
	rb1=$(byte_ratio $(epoch_bytes 1 /tmp/r2_0.out /tmp/r2_1.out))
	ra2=$(byte_ratio $(epoch_bytes 2 /tmp/k0.json /tmp/k1.json))
	rb2=$(byte_ratio $(epoch_bytes 2 /tmp/r2_0.out /tmp/r2_1.out))
	data restart "epoch1 $ra1 $rb1 epoch2 $ra2 $rb2"
	if [ "$TIMING" = 0 ]; then
		# How much of epoch 1 the killed ranks' look-ahead had read
		# when the kill came depends on their pace: only that the cache
		# was found warm is judged here.
		why="byte hit ratio of epoch 1, restarted $rb1, uninterrupted $ra1 (dlcint.timing=0: at least half of it)"
		if awk -v a="$ra1" -v b="$rb1" 'BEGIN { exit !(b >= a / 2 && a > 0) }'; then
			result ok kernel-restart-warm "($why)"
		else
			result FAIL kernel-restart-warm "($why)"
		fi
		return
	fi
	why="byte hit ratio, uninterrupted vs killed after epoch 0 and restarted: epoch 1 $ra1 vs $rb1, epoch 2 $ra2 vs $rb2; allowed 0.02 in epoch 1"
	if awk -v a="$ra1" -v b="$rb1" 'BEGIN { d = a - b; exit !(d <= 0.02 && d >= -0.02) }'; then
		result ok kernel-restart-hit-ratio "($why)"
	else
		result FAIL kernel-restart-hit-ratio "($why)"
		show /tmp/r2_0.out
		show /tmp/r2_1.out
	fi
}

if [ $KERNEL_OK -eq 1 ]; then
	restart_run
else
	result skip kernel-restart-hit-ratio "(no kernel bench)"
fi

# ---- elastic resume on dlcache.ko ---------------------------------------------
# kernel_run's job (2 ranks) saved after 3 batches each of epoch 1 (96 of
# its 300 samples) comes back on 3 ranks: each runs its share of the rest,
# ceil(204 / 3) = 68, with the resumed order uploaded to the module, then
# a whole epoch 2 of 100; no error.
elastic_run() {
	local r rc ok=1 got want="68 100"
	for r in 0 1 2; do
		$CTL bench $IDX --backend kernel --world 3 --rank $r --start-epoch 1 \
			--resume 96 --epochs 2 --json $BENCH > /tmp/el_$r.out 2> /tmp/el_$r.err &
		eval elpid$r=$!
	done
	for r in 0 1 2; do
		eval wait_pid \$elpid$r 240
		rc=$?
		got=$(tr '{' '\n' < /tmp/el_$r.out | sed -n 's/.*"images": \([0-9]*\), "evictions".*/\1/p' | tr '\n' ' ')
		errs=$(tr '{' '\n' < /tmp/el_$r.out | sed -n 's/.*"errors": \([0-9]*\),.*/\1/p' | sort -u | tr '\n' ' ')
		info "elastic rank $r of 3: exit $rc, images per epoch ${got% }, errors ${errs% }"
		if [ $rc -ne 0 ] || [ "${got% }" != "$want" ] || [ "${errs% }" != 0 ]; then
			ok=0
			show /tmp/el_$r.err
		fi
	done
	if [ $ok -eq 1 ]; then
		result ok kernel-elastic-resume "(2 ranks' state after 96 samples, resumed on 3: 68 each, then 100)"
	else
		result FAIL kernel-elastic-resume "(want images $want per rank and no error)"
	fi
}

if [ $KERNEL_OK -eq 1 ]; then
	elastic_run
else
	result skip kernel-elastic-resume "(no kernel bench)"
fi

# ---- the admin commands with no bench running ---------------------------------
chmod 0666 /dev/dlcache
out=$($CTL capacity 2>&1)
rc=$?
info "capacity: $out"
echo "$out" > /tmp/cap.out
if [ $rc -eq 0 ] && grep -q "($((CAP_MB * 1048576)) bytes)" /tmp/cap.out; then
	result ok admin-capacity-get
else
	result FAIL admin-capacity-get "(exit $rc)"
fi
$CTL capacity 12M > /tmp/cap.out 2>&1
rc=$?
show /tmp/cap.out
if [ $rc -eq 0 ] && [ "$(cat /sys/module/dlcache/parameters/capacity_mb)" = 12 ]; then
	result ok admin-capacity-set
else
	result FAIL admin-capacity-set "(exit $rc, capacity_mb $(cat /sys/module/dlcache/parameters/capacity_mb))"
fi
$CTL capacity "${CAP_MB}M" > /dev/null 2>&1
perm_ok=1
/bin/int_client runas 65534 65534 $CTL capacity 8M > /tmp/p.out 2> /tmp/p.err
rc=$?
show /tmp/p.err
[ $rc -eq 1 ] && [ "$(cat /tmp/p.err)" = "dlcachectl capacity: permission denied: changing the capacity needs CAP_SYS_ADMIN (run as root)" ] || perm_ok=0
/bin/int_client runas 65534 65534 $CTL drop > /tmp/p.out 2> /tmp/p.err
rc2=$?
show /tmp/p.err
[ $rc2 -eq 1 ] && grep -q 'permission denied' /tmp/p.err || perm_ok=0
if [ $perm_ok -eq 1 ] && [ "$(cat /sys/module/dlcache/parameters/capacity_mb)" = "$CAP_MB" ]; then
	result ok admin-unprivileged
else
	result FAIL admin-unprivileged "(capacity exit $rc, drop exit $rc2)"
fi
$CTL drop > /tmp/d.out 2>&1
rc=$?
$CTL drop 0123456789abcdef0123456789abcdef > /tmp/d2.out 2>&1
rc2=$?
show /tmp/d.out
show /tmp/d2.out
if [ $rc -eq 0 ] && [ $rc2 -eq 1 ] && grep -q 'no data set' /tmp/d2.out; then
	result ok admin-drop
else
	result FAIL admin-drop "(exit $rc, unknown key exit $rc2)"
fi
$CTL watch --interval 0.3 > /tmp/w.out 2>&1 &
wpid=$!
usleep 1200000
kill -TERM $wpid
wait_pid $wpid 10
rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c '' /tmp/w.out)" -ge 2 ]; then
	result ok admin-watch-sigterm
else
	result FAIL admin-watch-sigterm "(exit $rc)"
	show /tmp/w.out
fi

# ---- permissions and trust: data sets are (key, owner uid) -----------------
# Root runs a bench (its own data set, mode 0600). Meanwhile uid 65534, with
# the same index and so the same key:
#   perm-own-dataset     the default config uses 65534's own data set: the
#                        kernel backend, no hit in its first epoch (root's
#                        cached bytes are never reached), and `datasets`
#                        lists the key twice, owners 0 and 65534
#   perm-trust-refused   --owner-uid 0 --backend kernel: the library logs
#                        that it trusts uid 0; root's 0600 data set answers
#                        as a missing one (permission before existence,
#                        ENOENT), and the library says no readable one
#   perm-trust-fallback  the same with --backend auto: in-process, said why
if [ $KERNEL_OK -eq 1 ]; then
	$CTL bench $IDX --backend kernel --mode 0600 --epochs 2 --json $BENCH \
		> /tmp/root.json 2> /tmp/root.err &
	rpid=$!
	i=0
	while [ $i -lt 100 ] && ! $CTL datasets 2>/dev/null | grep -q "^$KEY"; do
		usleep 100000
		i=$((i + 1))
	done
	# Root's data set must stay attached until the trust checks below
	# have run (detached, it is idle: DROP or a creation may free it):
	# hold it.
	/bin/int_client hold "$KEY" "$NSAMPLES" > /tmp/hold_ds.out 2>&1 &
	hdpid=$!
	wait_line /tmp/hold_ds.out holding
	info "$(cat /tmp/hold_ds.out)"
	/bin/int_client runas 65534 65534 $CTL bench $IDX --backend kernel --epochs 1 \
		--json $BENCH > /tmp/nb.json 2> /tmp/nb.err &
	npid=$!
	# Both data sets while both benches are attached.
	owners=""
	i=0
	while [ $i -lt 150 ] && kill -0 $npid 2>/dev/null; do
		owners=$($CTL datasets 2>/dev/null | awk -v k="$KEY" '$1 == k {print $4}' | sort -n | tr '\n' ' ')
		[ "$owners" = "0 65534 " ] && break
		usleep 100000
		i=$((i + 1))
	done
	wait_pid $npid 180
	rc=$?
	h0=$(grep -o '"hits": [0-9]*' /tmp/nb.json | head -n 1 | awk '{print $2}')
	info "uid 65534, default config, --backend kernel (exit $rc, epoch 0 hits ${h0:-?}; owners of $KEY: $owners):"
	show /tmp/nb.err
	if [ $rc -eq 0 ] && grep -q '"backend": "kernel"' /tmp/nb.json &&
	   [ "$h0" = 0 ] && [ "$owners" = "0 65534 " ]; then
		result ok perm-own-dataset
	else
		result FAIL perm-own-dataset "(exit $rc, epoch 0 hits ${h0:-?}, owners '$owners': want 0, kernel, '0 65534')"
		show /tmp/nb.json
	fi
	/bin/int_client runas 65534 65534 $CTL bench $IDX --backend kernel --owner-uid 0 \
		--epochs 1 --json $BENCH > /tmp/nt.json 2> /tmp/nt.err
	rc=$?
	info "uid 65534, --owner-uid 0 --backend kernel (exit $rc):"
	show /tmp/nt.err
	if [ $rc -eq 1 ] && grep -q 'trusting the data set of owner uid 0' /tmp/nt.err &&
	   grep -q 'no data set of this key that this user may read' /tmp/nt.err; then
		result ok perm-trust-refused
	else
		result FAIL perm-trust-refused "(exit $rc, want 1, the trust line and that no readable data set exists)"
	fi
	/bin/int_client runas 65534 65534 $CTL bench $IDX --backend auto --owner-uid 0 \
		--epochs 1 --json $BENCH > /tmp/na.json 2> /tmp/na.err
	rc=$?
	info "uid 65534, --owner-uid 0 --backend auto (exit $rc):"
	show /tmp/na.err
	if [ $rc -eq 0 ] && grep -q '"backend": "inprocess"' /tmp/na.json &&
	   grep -q 'in-process' /tmp/na.err; then
		result ok perm-trust-fallback
	else
		result FAIL perm-trust-fallback "(exit $rc)"
		show /tmp/na.json
	fi
	kill $hdpid 2>/dev/null
	wait $hdpid 2>/dev/null
	wait_pid $rpid 180
	rc=$?
	if [ $rc -eq 0 ] && grep -q '"backend": "kernel"' /tmp/root.json; then
		result ok perm-owner-bench
	else
		result FAIL perm-owner-bench "(exit $rc)"
		show /tmp/root.err
	fi
else
	for t in perm-own-dataset perm-trust-refused perm-trust-fallback perm-owner-bench; do
		result skip $t "(the kernel bench failed)"
	done
fi

# ---- killed processes: the others finish --------------------------------------
# 1. A process that owns fills is killed while a bench waits for them:
#    int_client takes the fills of samples 0..31 and sleeps; a bench then
#    parks GETs on them (waits go up); SIGKILL to the client must abort its
#    fills and hand them to the bench, which finishes its epoch.
# 2. Two benches of the same rank and seed (so they share fills) run three
#    epochs; one gets SIGKILL in epoch 1; the other must finish every epoch
#    with every sample.
kill_held_fills() {
	w0=$(global_counter waits)
	a0=$(global_counter aborts)
	/bin/int_client hold-fills "$KEY" "$NSAMPLES" 32 > /tmp/hold.out 2>&1 &
	hpid=$!
	wait_line /tmp/hold.out holding
	info "$(cat /tmp/hold.out)"
	$CTL bench $IDX --backend kernel --epochs 1 --json $BENCH > /tmp/held.json 2> /tmp/held.err &
	bpid=$!
	i=0
	while [ $i -lt 300 ]; do
		w=$(global_counter waits)
		[ -n "$w" ] && [ "$w" -gt "$w0" ] && break
		kill -0 $bpid 2>/dev/null || break
		usleep 100000
		i=$((i + 1))
	done
	info "the bench waits for $((w - w0)) held fills; killing the holder"
	kill -9 $hpid
	wait $hpid 2>/dev/null
	wait_pid $bpid 120
	rc=$?
	a1=$(global_counter aborts)
	show /tmp/held.err
	data held_aborts $((a1 - a0))
	data held_waits $((w - w0))
	[ $rc -eq 0 ] && data held_bench "$(cat /tmp/held.json)"
	if [ $rc -eq 0 ] && [ $((w - w0)) -ge 1 ] && [ $((a1 - a0)) -ge 1 ]; then
		result ok killed-filler-waiters-complete "($((w - w0)) waits, $((a1 - a0)) fills aborted)"
	else
		result FAIL killed-filler-waiters-complete "(bench exit $rc, $((w - w0)) waits, $((a1 - a0)) aborted fills)"
		show /tmp/held.json
	fi
}

kill_bench() {
	w0=$(global_counter waits)
	a0=$(global_counter aborts)
	$CTL bench $IDX --backend kernel --epochs 3 --seed 7 $BENCH > /tmp/victim.out 2> /tmp/victim.err &
	vpid=$!
	$CTL bench $IDX --backend kernel --epochs 3 --seed 7 --json $BENCH > /tmp/surv.json 2> /tmp/surv.err &
	spid=$!
	# The victim's table has a line per finished epoch: kill in epoch 1.
	i=0
	while [ $i -lt 600 ] && [ "$(grep -c '' /tmp/victim.out)" -lt 2 ] && kill -0 $vpid 2>/dev/null; do
		usleep 100000
		i=$((i + 1))
	done
	usleep 500000
	f=$(global_counter fills_inflight)
	kill -9 $vpid 2>/dev/null
	wait $vpid 2>/dev/null
	vrc=$?
	info "killed a bench in epoch 1 (exit $vrc), $f fills in flight then"
	show /tmp/victim.out
	wait_pid $spid 240
	rc=$?
	w1=$(global_counter waits)
	a1=$(global_counter aborts)
	info "the other bench: exit $rc; waits +$((w1 - w0)), aborted fills +$((a1 - a0))"
	show /tmp/surv.err
	data kill_waits $((w1 - w0))
	data kill_aborts $((a1 - a0))
	data kill_victim_rc $vrc
	if [ $rc -eq 0 ]; then
		data kill_survivor "$(cat /tmp/surv.json)"
		result ok killed-bench-survivor-finishes
	else
		result FAIL killed-bench-survivor-finishes "(exit $rc: 124 is a hang)"
		show /tmp/surv.json
	fi
}

if [ $KERNEL_OK -eq 1 ]; then
	kill_held_fills
	kill_bench
else
	result skip killed-filler-waiters-complete "(no kernel bench)"
	result skip killed-bench-survivor-finishes "(no kernel bench)"
fi

# ---- wrong bytes in the kernel cache ------------------------------------------
# A raw client (int_client put-wrong) PUTs other bytes for three samples into
# root's own data set of the key the library uses: sample 5 gets sample 6's
# file cut or padded to sample 5's size (only the crc32c tells), 17 gets
# sample 18's whole file (another size), 42 gets 43's at 42's size. The
# capacity is raised so that nothing is evicted. A bench on the kernel
# backend must then count checksum_errors, name each of the three paths
# exactly once in its log, and deliver the batches of a bench without the
# kernel backend (the same --digest per epoch).
wrong_bytes() {
	ncls=$(sed -n 's/^classes //p' $IDX)
	droot=$(sed -n 's/^root //p' $IDX)
	# sample k is line 6 + classes + k: "label size crc path"
	sline() { sed -n "$((6 + ncls + $1))p" $IDX; }
	size_of() { sline $1 | awk '{print $2}'; }
	path_of() { echo "$droot/$(sline $1 | cut -d' ' -f4-)"; }
	$CTL drop > /dev/null 2>&1
	$CTL capacity 64M > /dev/null 2>&1
	/bin/int_client put-wrong "$KEY" "$NSAMPLES" "5:$(path_of 6):$(size_of 5)" \
		"17:$(path_of 18):0" "42:$(path_of 43):$(size_of 42)" > /tmp/pw.out 2>&1 &
	pwpid=$!
	i=0
	while [ $i -lt 100 ] && ! grep -qE '^put |FAIL' /tmp/pw.out && kill -0 $pwpid 2>/dev/null; do
		usleep 100000
		i=$((i + 1))
	done
	show /tmp/pw.out
	if ! grep -q '^put 3 wrong samples, 3 cached' /tmp/pw.out; then
		result FAIL kernel-wrong-bytes "(int_client put-wrong did not cache 3 samples)"
		kill -9 $pwpid 2>/dev/null
		wait $pwpid 2>/dev/null
		$CTL capacity "${CAP_MB}M" > /dev/null 2>&1
		return
	fi
	$CTL bench $IDX --backend kernel --epochs 2 --seed 5 --json --digest $BENCH \
		> /tmp/wb.json 2> /tmp/wb.err
	rc=$?
	kill -9 $pwpid 2>/dev/null
	wait $pwpid 2>/dev/null
	$CTL bench $IDX --backend inprocess --cache 0 --epochs 2 --seed 5 --json --digest \
		$BENCH > /tmp/wr.json 2> /tmp/wr.err
	rc2=$?
	$CTL drop > /dev/null 2>&1
	$CTL capacity "${CAP_MB}M" > /dev/null 2>&1
	info "kernel backend over the wrong bytes (exit $rc):"
	show /tmp/wb.err
	show /tmp/wb.json
	info "without the kernel backend (exit $rc2):"
	show /tmp/wr.json
	cerr=$(grep -o '"checksum_errors": [0-9]*' /tmp/wb.json | awk '{s += $2} END {print s + 0}')
	data wrong_checksum_errors "$cerr"
	if [ $rc -eq 0 ] && grep -q '"backend": "kernel"' /tmp/wb.json && [ "$cerr" -ge 3 ]; then
		result ok kernel-wrong-bytes-counted "($cerr checksum errors)"
	else
		result FAIL kernel-wrong-bytes-counted "(exit $rc, $cerr checksum errors, want >= 3 on the kernel backend)"
	fi
	once=1
	for k in 5 17 42; do
		c=$(grep -c "($(path_of $k))" /tmp/wb.err)
		[ "$c" = 1 ] || { once=0; info "sample $k ($(path_of $k)) named $c times"; }
	done
	if [ $rc -eq 0 ] && [ $once -eq 1 ]; then
		result ok kernel-wrong-bytes-logged-once
	else
		result FAIL kernel-wrong-bytes-logged-once
	fi
	d1=$(digests /tmp/wb.json)
	d2=$(digests /tmp/wr.json)
	if [ $rc -eq 0 ] && [ $rc2 -eq 0 ] && [ -n "$d1" ] && [ "$d1" = "$d2" ]; then
		result ok kernel-wrong-bytes-batches-match
	else
		result FAIL kernel-wrong-bytes-batches-match "(kernel: $d1; without: $d2)"
	fi
}

if [ $KERNEL_OK -eq 1 ]; then
	wrong_bytes
else
	for t in kernel-wrong-bytes-counted kernel-wrong-bytes-logged-once kernel-wrong-bytes-batches-match; do
		result skip $t "(no kernel bench)"
	done
fi

# ---- a pack on the kernel backend -----------------------------------------------
# The same data set packed on the host (/mnt/ds.dlp): two epochs on the
# kernel backend, then without it, then the files without it: one digest
# per epoch, all three the same (a pack decodes to the files' pixels); the
# second epoch on the kernel backend hits (the pack's samples are cached
# under the pack's own key).
pack_kernel() {
	$CTL drop > /dev/null 2>&1
	$CTL bench /mnt/ds.dlp --backend kernel --epochs 2 --seed 9 --json --digest \
		$BENCH > /tmp/pk.json 2> /tmp/pk.err
	rc=$?
	$CTL bench /mnt/ds.dlp --backend inprocess --cache 0 --epochs 2 --seed 9 --json \
		--digest $BENCH > /tmp/pi.json 2> /tmp/pi.err
	rc2=$?
	$CTL bench $IDX --backend inprocess --cache 0 --epochs 2 --seed 9 --json --digest \
		$BENCH > /tmp/pf.json 2> /tmp/pf.err
	rc3=$?
	$CTL drop > /dev/null 2>&1
	info "the pack on the kernel backend (exit $rc), without it (exit $rc2), the files (exit $rc3):"
	show /tmp/pk.err
	show /tmp/pk.json
	show /tmp/pi.err
	d1=$(digests /tmp/pk.json)
	d2=$(digests /tmp/pi.json)
	d3=$(digests /tmp/pf.json)
	if [ $rc -eq 0 ] && [ $rc2 -eq 0 ] && [ $rc3 -eq 0 ] && [ -n "$d1" ] &&
	   [ "$d1" = "$d2" ] && [ "$d2" = "$d3" ]; then
		result ok kernel-pack-batches-match
	else
		result FAIL kernel-pack-batches-match "(kernel: $d1; in-process: $d2; files: $d3)"
	fi
	h2=$(grep -o '"hit_bytes": [0-9]*' /tmp/pk.json | sed -n 2p | awk '{print $2}')
	data pack_kernel_epoch2_hit_bytes "${h2:-0}"
	if [ $rc -eq 0 ] && grep -q '"backend": "kernel"' /tmp/pk.json && [ "${h2:-0}" -gt 0 ]; then
		result ok kernel-pack-hits "(epoch 2: $h2 bytes hit)"
	else
		result FAIL kernel-pack-hits "(exit $rc, epoch 2 hit bytes ${h2:-none})"
	fi
}

if [ $KERNEL_OK -eq 1 ] && [ -f /mnt/ds.dlp ]; then
	pack_kernel
else
	for t in kernel-pack-batches-match kernel-pack-hits; do
		result skip $t "(no kernel bench or no /mnt/ds.dlp)"
	done
fi

# ---- decoded forms on dlcache.ko: two jobs, two transforms ------------------
# Job A (train crops at 64, --forms decoded) runs two epochs on the kernel
# backend: its decodes PUT their samples' decoded forms in root's form set,
# and its second epoch hits them. Job B, an eval job at 48 with another
# seed and job key, then runs one epoch: from A's forms its decode work
# (samples decoded from encoded bytes) must be at most half of running
# alone, which decodes every sample. Its batches must be those of the
# same job on the in-process backend without any cache (forms on: the
# exact pixels, whatever form served a sample).
forms_jobs() {
	$CTL drop > /dev/null 2>&1
	$CTL capacity 320M > /dev/null 2>&1
	DLCACHE_JOB=forms-a $CTL bench $IDX --backend kernel --forms decoded --epochs 2 \
		--seed 21 --json --digest $BENCH > /tmp/fa.json 2> /tmp/fa.err
	rca=$?
	DLCACHE_JOB=forms-b $CTL bench $IDX --backend kernel --forms decoded --epochs 1 \
		--seed 22 --json --digest $BENCH --eval --size 48 > /tmp/fb.json 2> /tmp/fb.err
	rcb=$?
	$CTL stats > /tmp/fs.txt 2>&1
	$CTL datasets > /tmp/fds.txt 2>&1
	# The form set beside its encoded set: one series each (host side).
	data f_stats "$($CTL stats --json)"
	data f_prom "$($CTL stats --prometheus | base64 -w 0)"
	data f_stats_after "$($CTL stats --json)"
	$CTL bench $IDX --backend inprocess --cache 0 --forms decoded --epochs 1 \
		--seed 22 --json --digest $BENCH --eval --size 48 > /tmp/fr.json 2> /tmp/fr.err
	rcr=$?
	$CTL bench $IDX --backend inprocess --cache 0 --forms decoded --epochs 2 \
		--seed 21 --json --digest $BENCH > /tmp/far.json 2> /tmp/far.err
	rcar=$?
	$CTL drop > /dev/null 2>&1
	# A pack: its own key, so its own form set.
	rcp=1
	rcpr=1
	if [ -f /mnt/ds.dlp ]; then
		$CTL bench /mnt/ds.dlp --backend kernel --forms decoded --epochs 2 \
			--seed 23 --json --digest $BENCH > /tmp/fp.json 2> /tmp/fp.err
		rcp=$?
		$CTL bench /mnt/ds.dlp --backend inprocess --cache 0 --forms decoded \
			--epochs 2 --seed 23 --json --digest $BENCH > /tmp/fpr.json 2> /tmp/fpr.err
		rcpr=$?
		$CTL drop > /dev/null 2>&1
	fi
	$CTL capacity "${CAP_MB}M" > /dev/null 2>&1
	info "forms: job A (exit $rca), job B (exit $rcb), B without the module (exit $rcr):"
	show /tmp/fa.err
	show /tmp/fa.json
	show /tmp/fb.err
	show /tmp/fb.json
	show /tmp/fs.txt
	show /tmp/fds.txt
	if awk -v k="$KEY" '$1 == k && $NF == "rgb" {f = 1} $1 == k && $NF == "-" {e = 1}
	    END {exit !(f && e)}' /tmp/fds.txt; then
		result ok kernel-forms-listed "(datasets: the key's encoded set and its form set, rgb)"
	else
		result FAIL kernel-forms-listed "(datasets does not list $KEY's encoded set and its form set)"
	fi
	made=$(grep -o '"forms_made": [0-9]*' /tmp/fa.json | sed -n 1p | awk '{print $2}')
	ah=$(grep -o '"form_hits": [0-9]*' /tmp/fa.json | sed -n 2p | awk '{print $2}')
	bh=$(grep -o '"form_hits": [0-9]*' /tmp/fb.json | sed -n 1p | awk '{print $2}')
	bi=$(grep -o '"images": [0-9]*' /tmp/fb.json | sed -n 2p | awk '{print $2}')
	data forms_a_made "${made:-0}"
	data forms_a_epoch2_form_hits "${ah:-0}"
	data forms_b_form_hits "${bh:-0}"
	if [ $rca -eq 0 ] && grep -q '"backend": "kernel"' /tmp/fa.json &&
	   [ "${made:-0}" -gt 0 ] && [ "${ah:-0}" -gt 0 ]; then
		result ok kernel-forms-made "(job A: $made forms made in epoch 1, $ah form hits in epoch 2)"
	else
		result FAIL kernel-forms-made "(exit $rca, ${made:-no} forms made, ${ah:-no} form hits in epoch 2)"
	fi
	# B's decode work against running alone (every sample decoded)
	if [ $rcb -eq 0 ] && [ -n "$bi" ] && [ "$bi" -gt 0 ] &&
	   [ $(( (bi - ${bh:-0}) * 2 )) -le "$bi" ]; then
		result ok kernel-forms-second-job "(job B decoded $((bi - ${bh:-0})) of $bi samples, $bh from job A's forms: $(awk "BEGIN {printf \"%.2f\", ($bi - ${bh:-0}) / $bi}")x of alone)"
	else
		result FAIL kernel-forms-second-job "(exit $rcb, ${bh:-no} form hits of ${bi:-no} images; want at least half)"
	fi
	# Both jobs, each against itself without the module (A's first
	# epoch made forms, its second and B's came from them).
	d1=$(digests /tmp/fb.json /tmp/fa.json)
	d2=$(digests /tmp/fr.json /tmp/far.json)
	if [ $rca -eq 0 ] && [ $rcb -eq 0 ] && [ $rcr -eq 0 ] && [ $rcar -eq 0 ] &&
	   [ -n "$d1" ] && [ "$d1" = "$d2" ]; then
		result ok kernel-forms-batches-match
	else
		result FAIL kernel-forms-batches-match "(from forms: $d1; without the module: $d2)"
	fi
	if [ -f /mnt/ds.dlp ]; then
		show /tmp/fp.err
		ph=$(grep -o '"form_hits": [0-9]*' /tmp/fp.json | sed -n 2p | awk '{print $2}')
		d1=$(digests /tmp/fp.json)
		d2=$(digests /tmp/fpr.json)
		if [ $rcp -eq 0 ] && [ $rcpr -eq 0 ] && [ -n "$d1" ] && [ "$d1" = "$d2" ] &&
		   [ "${ph:-0}" -gt 0 ]; then
			result ok kernel-forms-pack "(epoch 2: $ph samples from the pack's forms; the batches of the pack without the module)"
		else
			result FAIL kernel-forms-pack "(exit $rcp/$rcpr, ${ph:-no} form hits in epoch 2; from forms: $d1; without: $d2)"
		fi
	else
		result skip kernel-forms-pack "(no /mnt/ds.dlp)"
	fi
}

if [ $KERNEL_OK -eq 1 ]; then
	forms_jobs
else
	for t in kernel-forms-made kernel-forms-second-job kernel-forms-batches-match \
		 kernel-forms-listed kernel-forms-pack; do
		result skip $t "(no kernel bench)"
	done
fi

if unload_dlcache; then
	result ok rmmod-after
else
	result FAIL rmmod-after "(a reference leaked)"
fi

# ---- drain: rmmod while a loader runs ------------------------------------------
# A two-epoch kernel-backend bench runs; once the module has cached its first
# samples (the global inserts counter, not a fixed sleep) the admin runs
# `dlcachectl drain --wait 60`. The bench must log the fallback line once,
# finish both epochs with the digests of an in-process run of the same seed,
# and `rmmod dlcache` must succeed right after the drain. With
# DLCACHE_KERNEL_FALLBACK=fail the bench must fail instead, naming the cause.

# drain_bench MODE: a bench (DLCACHE_KERNEL_FALLBACK=MODE) drained mid-run;
# sets drc (bench exit), ddrain (drain exit), drmmod (rmmod exit).
drain_bench() {
	drc=1 ddrain=1 drmmod=1
	load_dlcache || return 1
	DLCACHE_KERNEL_FALLBACK=$1 $CTL bench $IDX --backend kernel --epochs 2 \
		--seed 11 --json --digest $BENCH > /tmp/dr-$1.json 2> /tmp/dr-$1.err &
	dpid=$!
	if ! wait_counter inserts 20 60; then
		info "drain ($1): the bench cached nothing in 60 s"
	fi
	$CTL drain --wait 60 > /tmp/drain-$1.out 2>&1
	ddrain=$?
	rmmod dlcache > /tmp/drain-rmmod.out 2>&1
	drmmod=$?
	wait_pid $dpid 240
	drc=$?
	info "drain ($1): bench exit $drc, drain exit $ddrain, rmmod exit $drmmod"
	show /tmp/drain-$1.out
	show /tmp/drain-rmmod.out
	show /tmp/dr-$1.err
	show /tmp/dr-$1.json
	module_loaded && unload_dlcache
	return 0
}

drain_test() {
	if ! drain_bench inprocess; then
		result FAIL drain-fallback "(insmod)"
		return
	fi
	$CTL bench $IDX --backend inprocess --cache 0 --epochs 2 --seed 11 --json \
		--digest $BENCH > /tmp/dr-ref.json 2> /tmp/dr-ref.err
	rrc=$?
	nfb=$(grep -c 'continuing on the in-process cache (kernel_fallback)' /tmp/dr-inprocess.err)
	kfb=$(grep -o '"kernel_fallbacks": [0-9]*' /tmp/dr-inprocess.json | awk '{print $2}')
	d1=$(digests /tmp/dr-inprocess.json)
	d2=$(digests /tmp/dr-ref.json)
	data drain_digests "kernel+fallback: $d1 in-process: $d2"
	data drain_fallbacks "${kfb:-none}"
	if [ $drc -eq 0 ] && [ "$nfb" = 1 ] && [ "$kfb" = 1 ] &&
	   grep -q '"backend": "inprocess"' /tmp/dr-inprocess.json; then
		result ok drain-fallback "(one fallback line, kernel_fallbacks 1)"
	else
		result FAIL drain-fallback "(bench exit $drc, $nfb fallback lines, kernel_fallbacks ${kfb:-none})"
	fi
	if [ $drc -eq 0 ] && [ $rrc -eq 0 ] && [ -n "$d1" ] && [ "$d1" = "$d2" ]; then
		result ok drain-batches-match
	else
		result FAIL drain-batches-match "(after the drain: $d1; in-process: $d2; exit $drc, $rrc)"
	fi
	if [ $ddrain -eq 0 ] && [ $drmmod -eq 0 ]; then
		result ok drain-rmmod "(drain --wait, then rmmod at once)"
	else
		result FAIL drain-rmmod "(drain exit $ddrain, rmmod exit $drmmod)"
	fi

	if ! drain_bench fail; then
		result FAIL drain-fail "(insmod)"
		return
	fi
	if [ $drc -ne 0 ] && [ $drc -ne 124 ] &&
	   grep -q 'ENTER failed: Cannot send after transport endpoint shutdown' /tmp/dr-fail.err &&
	   [ $ddrain -eq 0 ] && [ $drmmod -eq 0 ]; then
		result ok drain-fail "(bench exit $drc, naming the cause; rmmod after)"
	else
		result FAIL drain-fail "(bench exit $drc, drain exit $ddrain, rmmod exit $drmmod)"
	fi
}
drain_test

# ---- the page cache alone, held to the same memory ---------------------------
# The same two-rank workload with plain buffered reads, no cache and no
# read-ahead of its own (the page cache alone), in a memory cgroup whose memory.max is the dlcache capacity plus what
# the two processes need themselves. That overhead is measured first: one
# calibration epoch without a limit, sampling the cgroup's memory that is
# not page cache (memory.current - file: anonymous and pinned memory, page
# tables, kernel objects); its peak plus 1 MiB is the overhead. Then the caches are dropped and
# three epochs, each a fresh shuffle (the seed changes), read the data set;
# the disk's sector counter gives each epoch's misses.
cg_max() {	# cgroup file|nonfile: "max mean" of samples while benches run
	_max=0
	_sum=0
	_n=0
	while [ -e /tmp/pc.running ]; do
		f=$(grep "^file " $CG/$1/memory.stat | awk '{print $2}')
		v=$f
		[ "$2" = nonfile ] && v=$(( $(cat $CG/$1/memory.current) - f ))
		if [ -n "$v" ]; then
			[ "$v" -gt "$_max" ] && _max=$v
			_sum=$((_sum + v))
			_n=$((_n + 1))
		fi
		usleep 100000
	done
	[ $_n -gt 0 ] || _n=1
	echo $_max $((_sum / _n))
}

pc_epoch() {	# seed: both ranks, one epoch, in cgroup pc
	rm -f /tmp/lockstep.pc
	for r in 0 1; do
		sh -c "echo 0 > $CG/pc/cgroup.procs; exec $CTL bench $IDX --backend inprocess \
			--cache 0 --no-direct --readahead off --epochs 1 --seed $1 --json --world 2 \
			--rank $r --lockstep /tmp/lockstep.pc $BENCH" > /tmp/pc$r.json 2> /tmp/pc$r.err &
		eval ppid$r=$!
	done
	wait_pid $ppid0 240
	prc0=$?
	wait_pid $ppid1 240
	prc1=$?
	[ $prc0 -eq 0 ] && [ $prc1 -eq 0 ] && return 0
	info "page-cache epoch (seed $1): exit $prc0 and $prc1"
	show /tmp/pc0.err
	show /tmp/pc1.err
	return 1
}

pc_section() {
	pc_ok=1
	touch /tmp/pc.running
	cg_max pc nonfile > /tmp/pc.nonfile &
	spid=$!
	pc_epoch 99 || pc_ok=0
	rm -f /tmp/pc.running
	wait $spid
	# The peak, not the mean, so that no process is ever OOM-killed: between
	# peaks the page cache gets more than the capacity, which favours it. The
	# host prints the page cache's mean size and its own optimum for that size.
	overhead=$(( $(cut -d' ' -f1 /tmp/pc.nonfile) + 1048576 ))
	data pc_nonfile "$(cat /tmp/pc.nonfile)"
	limit=$((CAP_MB * 1048576 + overhead))
	echo $limit > $CG/pc/memory.max
	data pc_limit $limit
	data pc_overhead $overhead
	sync
	echo 3 > /proc/sys/vm/drop_caches
	touch /tmp/pc.running
	cg_max pc file > /tmp/pc.file &
	spid=$!
	e=0
	while [ $e -lt $EPOCHS ]; do
		s0=$(vda_sectors)
		pc_epoch $((e + 1)) || pc_ok=0
		s1=$(vda_sectors)
		data pc_epoch "$e $(( (s1 - s0) * 512 ))"
		e=$((e + 1))
	done
	rm -f /tmp/pc.running
	wait $spid
	data pc_file "$(cat /tmp/pc.file)"
	if [ $pc_ok -eq 1 ]; then
		result ok pagecache-run
	else
		result FAIL pagecache-run
	fi
}

# Only a measurement of pace: not with dlcint.timing=0.
[ "$TIMING" = 0 ] || pc_section


# ---- many jobs, one cache (ABI 3 consumers) --------------------------------
# Two jobs with different seeds, job B at about half job A's pace (a
# training step of JOB_STEP_B ms per batch, longer than a batch's decode,
# against JOB_STEP_A), read the
# data set together, three times over: (k) on dlcache.ko, where each is a
# consumer with its own time line; (s) each with its own in-process cache
# of half the data set, what two jobs get without the module; (p) on the
# page cache alone, held to the memory of the pc run above. The disk's
# sector counter gives each run's bytes; the host computes the offline
# optimum of the merged trace (jobs.py). Then two ranks of one job, once
# in lockstep and DRIFT_RUNS times drifting freely (no barrier), and for
# comparison SHARED_RUNS times drifting on the shared time line
# (DLCACHE_JOB=none: what an ABI 2 module gives).
# The steps are floors: jobs_calibrate raises them on a guest where the
# two jobs together produce a batch slower than JOB_STEP_A (the debug
# kernel under TCG took 370-620 ms a batch, so both jobs ran as fast as
# they could, B at 1.16x A's time, not 2x, and the merged trace was not
# the workload the checks describe).
JOB_STEP_A=200
JOB_STEP_B=400
DRIFT_RUNS=10
SHARED_RUNS=3
# jobs_calibrate, then bench options: one cold epoch of both jobs at once,
# unpaced; each job's step becomes at least 1.25x the slower job's time
# per batch (rounded up to 50 ms), B's twice A's, so that both jobs run
# at their steps' pace, not at the decoder's.
jobs_calibrate() {
	sync
	echo 3 > /proc/sys/vm/drop_caches
	for _j in 11 12; do
		$CTL bench $IDX --epochs 1 --json --seed $_j "$@" $BENCH \
			> /tmp/jc$_j.json 2> /tmp/jc$_j.err &
		eval _pc$_j=$!
	done
	wait_pid $_pc11 300
	_r11=$?
	wait_pid $_pc12 300
	_r12=$?
	if [ $_r11 -ne 0 ] || [ $_r12 -ne 0 ]; then
		info "jobs calibration: exit $_r11 and $_r12; steps stay $JOB_STEP_A and $JOB_STEP_B ms"
		show /tmp/jc11.err
		show /tmp/jc12.err
		return 0
	fi
	_bat=$(( (NSAMPLES + BATCH - 1) / BATCH ))
	_ms=$(cat /tmp/jc11.json /tmp/jc12.json | grep -o '"seconds": [0-9.]*' |
		awk -v b=$_bat '{ v = $2 * 1000 / b; if (v > m) m = v } END { printf "%d", m }')
	_a=$(( (_ms * 5 / 4 + 49) / 50 * 50 ))
	[ "$_a" -le "$JOB_STEP_A" ] || { JOB_STEP_A=$_a; JOB_STEP_B=$((2 * _a)); }
	info "jobs calibration: both jobs unpaced took up to $_ms ms a batch; steps A $JOB_STEP_A ms, B $JOB_STEP_B ms"
	data jobs_steps "$JOB_STEP_A $JOB_STEP_B"
}

# whatif --attached while both jobs run: the module's read-back of their
# orders goes to the host (jobs.py's jobs-whatif-attached checks it
# against the jobs' own orders). Asked until the module has measured both
# jobs' paces (spans of 250 ms), for up to 20 s; a read as an epoch turns
# may also find one whole epoch only, and is asked again.
# At SCHED_IDLE: its simulations took the CPU from job A's cold epoch
# (a 4 s stall), B then took 1.75x A's time, not 2x, and dlcache.ko read
# 1.113x the merged trace's bound, the paced workload the checks describe
# no longer being the one that ran.
jobs_whatif() {
	local _n=0 _rc
	while :; do
		/bin/int_client idle $CTL whatif $IDX --attached --json --sizes 50%,125% \
			> /tmp/jw.json 2> /tmp/jw.err
		_rc=$?
		[ $_rc = 0 ] && [ "$(grep -o '"measured": true' /tmp/jw.json | wc -l)" = 2 ] && break
		[ $_n -ge 100 ] && break
		usleep 200000
		_n=$((_n + 1))
	done
	if [ $_rc = 0 ]; then
		info "whatif --attached: read after $_n retries"
		data jobs_whatif "$(cat /tmp/jw.json)"
	else
		result FAIL jobs-whatif-run "(exit $_rc after $_n retries)"
		show /tmp/jw.err
	fi
}

# Both jobs of a pair under way on dlcache.ko: each is a consumer of its
# own (jobs-consumers), and whatif --attached reads them back. One job
# alone can make the misses that used to stand for "under way" before the
# other has attached (seen once in CI's guest), so poll the data set's
# consumers for up to 30 s.
jobs_attached() {
	local _n=0
	while :; do
		_c=$($CTL stats --json "$KEY" 2>/dev/null | grep -o '"consumers": [0-9]*' | head -n 1 | awk '{print $2}')
		[ "$_c" = 2 ] || [ $_n -ge 300 ] && break
		usleep 100000
		_n=$((_n + 1))
	done
	if [ "$_c" = 2 ]; then
		result ok jobs-consumers
		jobs_whatif
	else
		result FAIL jobs-consumers "(stats --json says ${_c:-nothing} consumers, want 2)"
	fi
}

# The pair whose run jobs_attached() watches: a pair of its own (w) where
# the k run is timed. Beside the k run, the watching (whatif's
# simulations and the polls, even at SCHED_IDLE in the guest) slowed job
# A's cold epoch to 1.33x its step on a host building the debug kernel,
# and dlcache.ko read 1.102x the merged trace's bound, the runs on
# in-process caches and the page cache in the same guest kept to their
# steps: the trace the policy met was not the paced one the check
# describes.
JOBS_ATTACHED=k
[ "$TIMING" = 0 ] || JOBS_ATTACHED=w

jobs_pair() {	# tag, then bench options for both jobs
	local _n
	_t=$1
	shift
	sync
	echo 3 > /proc/sys/vm/drop_caches
	_s0=$(vda_sectors)
	sh -c "[ $_t != p ] || echo 0 > $CG/pc/cgroup.procs; exec $CTL bench $IDX --epochs $EPOCHS \
		--json --seed 11 --step-ms $JOB_STEP_A $* $BENCH" > /tmp/j${_t}A.json 2> /tmp/j${_t}A.err &
	_pa=$!
	sh -c "[ $_t != p ] || echo 0 > $CG/pc/cgroup.procs; exec $CTL bench $IDX --epochs $EPOCHS \
		--json --seed 12 --step-ms $JOB_STEP_B $* $BENCH" > /tmp/j${_t}B.json 2> /tmp/j${_t}B.err &
	_pb=$!
	[ $_t != "$JOBS_ATTACHED" ] || jobs_attached
	[ "$JOBS_TRACE" != 1 ] || trace_consumers $_t 600 $_pa $_pb
	wait_pid $_pa 300
	_ra=$?
	wait_pid $_pb 300
	_rb=$?
	_s1=$(vda_sectors)
	if [ $_ra -ne 0 ] || [ $_rb -ne 0 ]; then
		result FAIL jobs-run-$_t "(exit $_ra and $_rb)"
		show /tmp/j${_t}A.err
		show /tmp/j${_t}B.err
		return 1
	fi
	result ok jobs-run-$_t
	data jobs_${_t}_disk $(( (_s1 - _s0) * 512 ))
	data jobs_${_t}_A "$(cat /tmp/j${_t}A.json)"
	data jobs_${_t}_B "$(cat /tmp/j${_t}B.json)"
}

# dlcint.jobs_only=N: the calibration, then N runs of the k pair alone,
# each on a fresh module with the module's view of its consumers every
# 0.5 s (TRACE lines), to study jobs-disk-vs-optimum over many runs
# (jobs.py judges every run, k0 .. kN-1).
if [ "$JOBS_ONLY" -gt 0 ]; then
	JOBS_ATTACHED=none
	JOBS_TRACE=1
	load_dlcache || { result FAIL insmod; finish; }
	jobs_calibrate --backend kernel
	i=0
	while [ $i -lt "$JOBS_ONLY" ]; do
		unload_dlcache && load_dlcache || { result FAIL jobs-insmod; finish; }
		jobs_pair k$i --backend kernel
		i=$((i + 1))
	done
	unload_dlcache || result FAIL jobs-rmmod
	finish
fi

if [ "$NOKERNEL" = 1 ]; then
	result skip jobs-run-k "(no kernel backend)"
	jobs_calibrate --backend inprocess --cache-fraction 0.5
elif ! load_dlcache; then
	result FAIL jobs-insmod
else
	if [ "$TIMING" = 1 ]; then
		jobs_calibrate --backend kernel
		# The attached checks on a pair of their own, two epochs at
		# the steps: whatif --attached reads two whole epochs of each
		# order while both jobs are in their first (a job's loader
		# uploads no order past its last epoch).
		jobs_pair w --backend kernel --epochs 2
		# A fresh module for the run: the calibration's counters would
		# end jobs_pair's wait for misses at once (before both jobs
		# attached), and its data set would stay cached, idle.
		unload_dlcache && load_dlcache ||
			result FAIL jobs-insmod "(reloading after the calibration)"
	else
		# The code alone: the runs behind the checks of pace, once each.
		DRIFT_RUNS=1
		SHARED_RUNS=1
	fi
	jobs_pair k --backend kernel
	# The consumers as the module saw them, while none is attached.
	$CTL stats > /tmp/jst.txt 2>&1
	show /tmp/jst.txt
	i=0
	drift_run lockstep "" --lockstep /tmp/lockstep.d || result FAIL drift-run-lockstep
	rm -f /tmp/lockstep.d
	while [ $i -lt $DRIFT_RUNS ]; do
		drift_run $i "" || result FAIL drift-run-$i
		i=$((i + 1))
	done
	i=0
	while [ $i -lt $SHARED_RUNS ]; do
		drift_run shared$i none || result FAIL drift-run-shared$i
		i=$((i + 1))
	done
	if unload_dlcache; then
		result ok jobs-rmmod
	else
		result FAIL jobs-rmmod "(a reference leaked)"
	fi
fi
if [ "$TIMING" = 1 ]; then
	jobs_pair s --backend inprocess --cache-fraction 0.5
	jobs_pair p --backend inprocess --cache 0 --no-direct --readahead off
fi

# ---- storage-bound: the disk's reads throttled -------------------------------
# One rank, cache = half the set, every read of /dev/vda limited to
# STORAGE_KBPS kB/s by the io controller (cgroup v2 io.max rbps), the page
# cache dropped before each run: dlcache.ko and the in-process cache, each
# with the read-ahead and with --readahead off, then, unthrottled, the
# in-process cache holding the whole set (the decode side's own rate).
# The window is 32 samples, a ninth of this small set's epoch: on a real
# one (a million samples) the default 256 is a far smaller part of it,
# and the window alone cannot keep storage busy across an epoch's end.
# integration.sh measures the steady epochs against their limit and
# checks dlcache.ko's read-ahead (storage-kernel-readahead).
storage_run() {	# tag, then bench options
	_t=$1
	shift
	sync
	echo 3 > /proc/sys/vm/drop_caches
	_s0=$(vda_sectors)
	if ! sh -c "echo 0 > $CG/sb/cgroup.procs; exec $CTL bench $IDX --epochs $EPOCHS \
		--json --window 32 $* $BENCH" > /tmp/sb_$_t.json 2> /tmp/sb_$_t.err; then
		result FAIL storage-run-$_t
		show /tmp/sb_$_t.err
		return 1
	fi
	data storage_${_t}_disk $(( ($(vda_sectors) - _s0) * 512 ))
	data storage_$_t "$(cat /tmp/sb_$_t.json)"
}
# DDP on one node: two ranks of one job (--world 2, in lockstep as DDP's
# all-reduce keeps them), throttled the same: dlcache.ko's one cache of
# CAP_MB shared by both, two in-process caches of CAP_MB / 2 each (the same
# memory), and the page cache alone held to the pc run's memory.max (the
# capacity plus the processes' own). The host prints the epoch times.
storage_ddp() {	# tag, then bench options
	_t=$1
	shift
	sync
	echo 3 > /proc/sys/vm/drop_caches
	rm -f /tmp/lockstep.sd
	_s0=$(vda_sectors)
	for r in 0 1; do
		sh -c "echo 0 > $CG/sb/cgroup.procs; exec $CTL bench $IDX --epochs $EPOCHS \
			--json --window 32 --world 2 --rank $r --lockstep /tmp/lockstep.sd \
			$* $BENCH" > /tmp/sd_${_t}_$r.json 2> /tmp/sd_${_t}_$r.err &
		eval sdpid$r=$!
	done
	wait_pid $sdpid0 600
	_rc0=$?
	wait_pid $sdpid1 600
	_rc1=$?
	if [ $_rc0 -ne 0 ] || [ $_rc1 -ne 0 ]; then
		result FAIL storage-ddp-run-$_t
		show /tmp/sd_${_t}_0.err
		show /tmp/sd_${_t}_1.err
		return 1
	fi
	data storage_ddp_${_t}_disk $(( ($(vda_sectors) - _s0) * 512 ))
	data storage_ddp_${_t}_0 "$(cat /tmp/sd_${_t}_0.json)"
	data storage_ddp_${_t}_1 "$(cat /tmp/sd_${_t}_1.json)"
}
storage_section() {
	echo +io > $CG/cgroup.subtree_control 2>/dev/null
	mkdir -p $CG/sb
	if ! echo "$(cat /sys/block/vda/dev) rbps=$((STORAGE_KBPS * 1000))" \
		> $CG/sb/io.max 2> /tmp/iomax.err; then
		result skip storage-kernel-readahead "(no io.max: $(cat /tmp/iomax.err))"
		return
	fi
	data storage_bps $((STORAGE_KBPS * 1000))
	if [ "$NOKERNEL" != 1 ] && load_dlcache; then
		storage_run kra --backend kernel
		storage_run knora --backend kernel --readahead off
		storage_ddp kernel --backend kernel
		unload_dlcache || result FAIL storage-rmmod "(a reference leaked)"
	fi
	storage_run ira --backend inprocess --cache-fraction 0.5
	storage_run inora --backend inprocess --cache-fraction 0.5 --readahead off
	storage_ddp inprocess --backend inprocess --cache $((CAP_MB * 1048576 / 2))
	echo +memory > $CG/cgroup.subtree_control 2>/dev/null
	if echo "$limit" > $CG/sb/memory.max 2>/dev/null; then
		storage_ddp pagecache --backend inprocess --cache 0 --no-direct \
			--readahead off
		echo max > $CG/sb/memory.max
	else
		result skip storage-ddp "(no memory.max for the page cache run)"
	fi
	echo max > $CG/sb/io.max 2>/dev/null
	echo "$(cat /sys/block/vda/dev) rbps=max" > $CG/sb/io.max 2>/dev/null
	storage_run decode --backend inprocess --cache-fraction 1
}
if [ "$STORAGE_KBPS" -gt 0 ]; then
	storage_section
fi

finish
