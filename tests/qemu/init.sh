#!/bin/sh
# /init of the dlcache QEMU test guest (see tests/qemu/run.sh).
#
# Mounts the pseudo file systems, then for every program in /tests: insmod
# dlcache.ko, run it under a time limit, rmmod (which must succeed: a leaked
# file or ring reference keeps the module busy), and scan the kernel log the
# test produced for splats. Prints one "ok|FAIL|skip qemu:<name>" line per
# test, the test's own output prefixed by "# ", and a final verdict line
# that the host reads back. Then powers off.

export PATH=/bin
mount -t devtmpfs none /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
# QEMU_INIT_MARK (tests/qemu/lib.sh): the kernel got this far.
echo "# init: started"
mount -t proc none /proc
mount -t sysfs none /sys
mount -t debugfs none /sys/kernel/debug 2>/dev/null
mount -t tmpfs none /tmp
mkdir -p /dev/pts && mount -t devpts none /dev/pts 2>/dev/null

TEST_TIMEOUT=60
MODE=tests
ONLY=
DLCACHE_PARAMS=
for arg in $(cat /proc/cmdline); do
	case "$arg" in
	dlcqemu.test_timeout=*) TEST_TIMEOUT=${arg#*=} ;;
	dlcqemu.mode=*) MODE=${arg#*=} ;;
	dlcqemu.only=*) ONLY=${arg#*=} ;;
	dlcqemu.params=*) DLCACHE_PARAMS=$(echo "${arg#*=}" | tr , ' ') ;;
	dlcqemu.checkers=*) CHECKERS=${arg#*=} ;;
	dlcqemu.cpus=*) CPUS=${arg#*=} ;;
	# tests/fuzz/kcov_fuzz.c's time (make fuzz FUZZ_SECONDS=N).
	dlcqemu.fuzz_seconds=*) export DLCQEMU_FUZZ_SECONDS=${arg#*=} ;;
	esac
done

# Hung tasks are reported after 20 s rather than 120 s, so that a test
# stuck in the module leaves a trace before the time limit.
echo 20 > /proc/sys/kernel/hung_task_timeout_secs 2>/dev/null
echo 0 > /proc/sys/kernel/panic_on_oops 2>/dev/null

PASS=0
FAIL=0
SKIP=0
SPLATS=/tmp/splats
: > $SPLATS

# Kernel-log lines that mean something went wrong in the kernel.
SPLAT_RE='WARNING:|BUG:|kernel BUG|Oops|general protection|lockdep|possible circular|possible recursive|inconsistent lock|leak|hung_task|blocked for more than|UBSAN|KASAN|Call Trace|RIP: |list_add corruption|list_del corruption|refcount_t|scheduling while atomic|sleeping function called|bad page|Bad page|oom-killer|Out of memory|stack-protector|double free|use-after-free|soft lockup|rcu_sched self-detected|rcu: INFO'

result() {	# result ok|FAIL|skip name [why]
	case "$1" in
	ok) PASS=$((PASS + 1)) ;;
	FAIL) FAIL=$((FAIL + 1)) ;;
	skip) SKIP=$((SKIP + 1)) ;;
	esac
	echo "$1 qemu:$2${3:+ ($3)}"
}

# Reads the kernel log since the last call, records splats under a label.
check_dmesg() {
	dmesg -c > /tmp/dmesg.last 2>/dev/null
	if grep -E "$SPLAT_RE" /tmp/dmesg.last > /tmp/dmesg.hits; then
		echo "# kernel log during $1:"
		sed 's/^/#   /' /tmp/dmesg.last | head -n 60
		sed "s/^/[$1] /" /tmp/dmesg.hits >> $SPLATS
	fi
}

verdict() {
	# kmemleak, when the kernel has it (Debian's does not: then the
	# rmmod after every test and reload's MemFree check stand in).
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
	if [ -s $SPLATS ]; then
		result FAIL dmesg
		sed 's/^/# /' $SPLATS | head -n 80
	else
		result ok dmesg
	fi
	echo "DLCACHE-QEMU-VERDICT: pass $PASS fail $FAIL skip $SKIP kernel $(uname -r)"
	sync
	poweroff -f
	reboot -f
	sleep 5
	echo o > /proc/sysrq-trigger
}

# Boot messages are not ours to judge.
dmesg -c > /tmp/dmesg.boot 2>/dev/null

# On the debug kernel (dlcqemu.checkers=1, set by make qemu-debug), every
# checker the suite relies on must really be on: a kernel that lost one to
# a config change would otherwise pass everything and prove nothing.
# So must every CPU QEMU gave it: on one, lockdep sees no races (without
# ACPI the kernel would find one, in SeaBIOS's MP table).
# (tests/qemu/debug-kernel/build.sh checks every option of its fragment,
# DEBUG_ATOMIC_SLEEP among them, against the built .config.)
if [ "${CHECKERS:-0}" = 1 ]; then
	missing=
	[ -e /proc/lockdep ] || missing="$missing lockdep"
	grep -q 'KernelAddressSanitizer initialized' /tmp/dmesg.boot || missing="$missing KASAN"
	[ -e /sys/kernel/debug/kmemleak ] || missing="$missing kmemleak"
	[ -e /sys/kernel/debug/kcov ] || missing="$missing KCOV"
	online=$(grep -c '^processor' /proc/cpuinfo)
	[ "$online" = "${CPUS:-$online}" ] ||
		missing="$missing SMP (on $online of ${CPUS} CPUs)"
	if [ -n "$missing" ]; then
		echo "# the debug kernel lacks:$missing"
		result FAIL checkers
	else
		echo "# checkers on: lockdep, KASAN, kmemleak, KCOV; $online CPUs"
		result ok checkers
	fi
fi

if [ "$MODE" = smoke ]; then
	# Harness self-check: busybox applets, the mounts, a static binary.
	if [ -r /proc/self/status ] && [ -d /sys/kernel ] && [ -c /dev/null ] &&
	   echo abc | grep -q b && [ "$(echo 2 3 | awk '{print $1 * $2}')" = 6 ]; then
		result ok boot
	else
		result FAIL boot
	fi
	for t in /tests/*; do
		[ -x "$t" ] || continue
		if "$t" --version > /tmp/out 2>&1; then
			result ok "static-binary:${t##*/}"
		else
			sed 's/^/# /' /tmp/out
			result FAIL "static-binary:${t##*/}"
		fi
	done
	check_dmesg smoke
	verdict
fi

# dlcqemu.mode=kunit (tests/kunit/run.sh): /dlcache.ko is the KUnit
# module, whose suites run while it loads. Their KTAP report goes to the
# host as "# ktap: ..." lines, which the host judges; a splat while they ran
# fails "dmesg" as for any test.
if [ "$MODE" = kunit ]; then
	if insmod /dlcache.ko > /tmp/insmod.out 2>&1; then
		result ok insmod
	else
		sed 's/^/# /' /tmp/insmod.out
		result FAIL insmod
	fi
	dmesg > /tmp/ktap 2>/dev/null
	# From the report's first line on: the results, each failed
	# expectation's lines, and whatever else the kernel said meanwhile.
	sed -e 's/^<[0-9]*>//' -e 's/^\[ *[0-9.]*\] //' /tmp/ktap |
		sed -n '/^ *K*TAP version/,$p' | sed 's/^/# ktap: /'
	check_dmesg kunit
	if rmmod dlcache_kunit > /tmp/rmmod.out 2>&1; then
		result ok rmmod
	else
		sed 's/^/# /' /tmp/rmmod.out
		result FAIL rmmod
	fi
	check_dmesg rmmod
	verdict
fi

module_loaded() {
	grep -q '^dlcache ' /proc/modules
}

load_module() {
	module_loaded && return 0
	if ! insmod /dlcache.ko $DLCACHE_PARAMS > /tmp/insmod.out 2>&1; then
		sed 's/^/# /' /tmp/insmod.out
		return 1
	fi
	# devtmpfs creates the node asynchronously with the uevent.
	i=0
	while [ ! -c /dev/dlcache ] && [ $i -lt 50 ]; do
		usleep 20000
		i=$((i + 1))
	done
	[ -c /dev/dlcache ]
}

unload_module() {
	module_loaded || return 0
	i=0
	# A killed test's last fput may be deferred a moment; allow 2 s.
	while [ $i -lt 20 ]; do
		rmmod dlcache > /tmp/rmmod.out 2>&1 && return 0
		usleep 100000
		i=$((i + 1))
	done
	sed 's/^/# /' /tmp/rmmod.out
	return 1
}

if ! load_module; then
	echo "# insmod dlcache.ko failed:"
	dmesg | tail -n 30 | sed 's/^/#   /'
	result FAIL insmod
	check_dmesg insmod
	verdict
fi
result ok insmod
check_dmesg insmod
if ! unload_module; then
	result FAIL rmmod
	verdict
fi

for t in /tests/*; do
	[ -x "$t" ] || continue
	name=${t##*/}
	if [ -n "$ONLY" ]; then
		case ",$ONLY," in *",$name,"*) ;; *) continue ;; esac
	fi
	if ! load_module; then
		echo "# insmod before $name failed"
		result FAIL "$name"
		check_dmesg "$name"
		continue
	fi
	cd /tmp
	t0=$(cut -d' ' -f1 /proc/uptime)
	timeout -s KILL "$TEST_TIMEOUT" "$t" > /tmp/out 2>&1 < /dev/null
	rc=$?
	t1=$(cut -d' ' -f1 /proc/uptime)
	cd /
	sed 's/^/# /' /tmp/out
	echo "# $name took $(echo "$t0 $t1" | awk '{printf "%.1f", $2 - $1}') s"
	if [ $rc -eq 137 ]; then
		echo "# FAIL: killed after ${TEST_TIMEOUT}s time limit"
	fi
	# Processes a test left behind (after a time-out, say) would keep the
	# module busy and spoil the next tests: kill them all (not init).
	for p in /proc/[0-9]*; do	# builtins only: no process of our own
		[ "${p#/proc/}" = 1 ] || [ ! -s "$p/cmdline" ] || echo "${p#/proc/}"
	done > /tmp/stray
	stray=$(echo $(cat /tmp/stray))
	if [ -n "$stray" ]; then
		echo "# killing processes left behind: $stray"
		kill -9 -1 2>/dev/null
		usleep 200000
	fi
	if ! unload_module; then
		echo "# FAIL: rmmod dlcache after the test failed (a reference leaked)"
		[ $rc -eq 0 ] || [ $rc -eq 77 ] && rc=1
	fi
	case $rc in
	0) result ok "$name" ;;
	77) result skip "$name" "$(sed -n 's/^SKIP: //p' /tmp/out | head -n 1)" ;;
	*) echo "# exit status $rc"; result FAIL "$name" ;;
	esac
	check_dmesg "$name"
done

verdict
