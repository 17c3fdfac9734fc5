# Sourced by the QEMU suites (tests/qemu/run.sh,
# tests/qemu/integration/integration.sh, tests/qemu/nvme/nvme.sh), from
# the repository root: what their guests have in common. Not a test.

# The kernel command line every guest starts from. acpi=noirq: PCI
# interrupts are routed by the BIOS's table, not by evaluating QEMU's ACPI
# _PRT method (a 128-turn AML loop). Under TCG the debug kernel (KASAN,
# KCOV, kmemleak, lockdep) spends over 20 s in that loop when the first PCI
# device is enabled (the integration's virtio disk, the NVMe controller):
# the RCU stall and soft-lockup reports fired, and the guest hung printing
# them (stop 37: qemu-debug-int never reached /init in 1500 s).
QEMU_APPEND_BASE="console=ttyS0 panic=-1 quiet loglevel=3 log_buf_len=4M rdinit=/init acpi=noirq"

# The line the guests' /init prints first (tests/qemu/init.sh,
# tests/qemu/nvme/guest.sh).
QEMU_INIT_MARK="# init: started"

# qemu_died_before_init LOG: whether the guest's kernel oopsed or panicked
# before its /init printed QEMU_INIT_MARK, that is before any code of
# dlcache's was loaded: the platform failed, and the suite boots once
# more, saying so. Seen at stop 60 in 2 of 3 fresh checks on a loaded
# host: an int3 Oops at a sched_clock static branch site being patched
# (sched_clock_cpu+0x9, sched_clock_idle_wakeup_event+0x5), 6.12 under
# TCG with 2 vCPUs, 1.3-1.8 s into boot. The first such line goes to
# $QEMU_EARLY_WHY.
qemu_died_before_init() {
	grep -qxF "$QEMU_INIT_MARK" "$1" && return 1
	QEMU_EARLY_WHY=$(grep -m1 -E 'Oops|Kernel panic|BUG:|general protection' "$1")
	[ -n "$QEMU_EARLY_WHY" ]
}

# qemu_console LOG: the guest's serial console (stdin) without its
# carriage returns, to LOG and stdout, a line at a time, so that the log
# shows a run as it goes rather than in 4 KiB steps.
qemu_console() {
	stdbuf -oL tr -d '\r' | tee "$1"
}

# qemu_stage_busybox STAGE BUSYBOX [DIR...]: a root file system at STAGE
# holding a static busybox and its applet links in /bin (and /sbin,
# /usr/bin, /usr/sbin), root and nobody (65534) in /etc/passwd and
# /etc/group, the usual mount points, and the directories DIR... (relative).
qemu_stage_busybox() {
	local stage=$1 busybox=$2 applet d
	shift 2
	mkdir -p "$stage"/{bin,dev,proc,sys,tmp,root,etc,usr}
	for d in "$@"; do
		mkdir -p "$stage/$d"
	done
	cp "$busybox" "$stage/bin/busybox"
	for applet in $("$busybox" --list); do
		[ "$applet" = busybox ] || ln -sf busybox "$stage/bin/$applet"
	done
	ln -sfn bin "$stage/sbin"
	ln -sfn ../bin "$stage/usr/bin"
	ln -sfn ../bin "$stage/usr/sbin"
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' \
		> "$stage/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' > "$stage/etc/group"
}

# qemu_stage_modules STAGE MODDIR MODULE...: the kernel modules MODULE...
# of the module tree MODDIR (/lib/modules/<release>) and all they depend
# on, uncompressed, as STAGE/mods/<name>.ko, and their names in
# STAGE/mods/order, dependencies first: the guest's init insmods them in
# that order. A module MODDIR does not have (built in) is left out.
qemu_stage_modules() {
	local stage=$1 moddir=$2 m path
	shift 2
	mkdir -p "$stage/mods"
	: > "$stage/mods/order"
	declare -A _qsm_seen=()
	for m in "$@"; do
		path=$(grep -E "(^|/)$m\.ko(\.xz|\.zst|\.gz)?:" "$moddir/modules.dep" | cut -d: -f1 || true)
		[ -z "$path" ] || _qemu_stage_module "$stage" "$moddir" "$path"
	done
}

_qemu_stage_module() {	# STAGE MODDIR PATH (relative to MODDIR)
	local stage=$1 moddir=$2 path=$3 dep m
	m=$(basename "$path")
	m=${m%%.ko*}
	[ -z "${_qsm_seen[$m]:-}" ] || return 0
	_qsm_seen[$m]=1
	for dep in $(grep -E "^$path:" "$moddir/modules.dep" | cut -d: -f2); do
		_qemu_stage_module "$stage" "$moddir" "$dep"
	done
	case "$path" in
	*.ko) cp "$moddir/$path" "$stage/mods/$m.ko" ;;
	*.ko.xz) xz -dc "$moddir/$path" > "$stage/mods/$m.ko" ;;
	*.ko.zst) zstd -qdc "$moddir/$path" > "$stage/mods/$m.ko" ;;
	*.ko.gz) gzip -dc "$moddir/$path" > "$stage/mods/$m.ko" ;;
	esac
	echo "$m" >> "$stage/mods/order"
}

# qemu_static_tools BUILD OUT LOG: build dlcachectl's objects (make) and
# link them statically, and tests/qemu/integration/int_client.c, into
# OUT/dlcachectl and OUT/int_client, the output in LOG. Returns 0, or 1
# when make failed, 2 when the static link of dlcachectl failed, 3 for
# int_client.
qemu_static_tools() {
	local build=$1 out=$2 log=$3 src objs=()
	make --no-print-directory -s BUILD="${build#$PWD/}" "${build#$PWD/}/dlcachectl" \
		> "$log" 2>&1 || return 1
	for src in tools/dlcachectl/*.c; do
		objs+=("$build/release/${src%.c}.o")
	done
	gcc -static -o "$out/dlcachectl" "${objs[@]}" "$build/release/libdlcache.a" \
		-luring -lnvme -lblkid $(pkg-config --static --libs libtiff-4 libwebp libpng) \
		-ljpeg -lstdc++ -lpthread -lm >> "$log" 2>&1 || return 2
	gcc -static -O2 -Wall -Wextra -D_GNU_SOURCE -Iuapi -o "$out/int_client" \
		tests/qemu/integration/int_client.c >> "$log" 2>&1 || return 3
}

# qemu_guest_done LOG MARKER QRC TIMEOUT: 0 when the guest's console LOG
# has its last line, ^MARKER; else the reason in QEMU_GUEST_WHY (QEMU's
# exit status QRC, or the time limit of TIMEOUT s), "# " lines saying so
# and the end of the console, and 1.
qemu_guest_done() {
	local log=$1 marker=$2 qrc=$3 timeout=$4

	grep -q "^$marker" "$log" && return 0
	QEMU_GUEST_WHY="qemu exited with $qrc"
	if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
		QEMU_GUEST_WHY="time limit of ${timeout}s hit"
	fi
	echo "# no $marker line ($QEMU_GUEST_WHY); the console log ends with:"
	grep -vE '^(RESULT|DATA|WATCHDOG) |^# ' "$log" | tail -n 30 | sed 's/^/#   /'
	# A guest's watchdog says what each task was doing near the limit.
	if grep -q '^WATCHDOG ' "$log"; then
		echo "# the guest's watchdog:"
		grep '^WATCHDOG ' "$log" | head -n 80 | sed 's/^WATCHDOG /#   /'
	fi
	return 1
}
