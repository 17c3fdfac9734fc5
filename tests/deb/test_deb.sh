#!/bin/bash
# SPDX-License-Identifier: MIT
#
# make deb's packages, as an administrator meets them (issue 34, part 1):
#
#   build      tools/build/deb.sh: the five packages from this tree
#   lintian    lintian on them: no error (warnings and infos printed)
#   install    dpkg -i installs and configures the five .deb files (each
#              dependency they declare is there, or dpkg refuses), on a
#              clean root: an overlay whose lower layer is this
#              machine's / and whose upper layer starts empty, with
#              /usr/local hidden, entered with chroot
#   dkms       DKMS, run by the package, built and installed dlcache.ko for
#              every kernel there with headers (6.1 and 6.12 here)
#   dev        a program built with pkg-config --cflags --libs dlcache runs
#              against libdlcache.so.0, and again linked with libdlcache.a
#   tools, python  dlcachectl, its man page and `import dlcache.torch` are
#              the packages' (not a checkout's, not /usr/local's)
#   guest:*    QEMU boots Debian's 6.1 kernel with that root as its root
#              file system (9p, read-only): modprobe loads the module DKMS
#              built, /dev/dlcache is there, `dlcachectl stats` reads it,
#              and two epochs of dlcache.torch.DataLoader(cache="kernel")
#              hit it on the second
#   purge      apt-get purge of the five: dkms, modules, group, files gone
#   nothing-left  every file the upper layer holds afterwards is equal to
#              the lower layer's, or one of the logs and caches apt, dpkg,
#              man-db and ldconfig keep (the list below); nothing of the
#              lower layer was deleted
#
# Output: "ok|FAIL|skip deb:<name>" lines, "# " details. Needs root,
# overlayfs, the packages of make deps; without them "skip deb:all (why)"
# (a FAIL under CI=true). Environment: BUILD (build), DEB_TIMEOUT (seconds
# for the guest, 400), QEMU (qemu-system-x86_64), BUSYBOX (/bin/busybox),
# DEB_KEEP (set: keep the upper layer, $BUILD/deb-test/upper).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
OUT=$BUILD/deb-test
QEMU=${QEMU:-qemu-system-x86_64}
BUSYBOX=${BUSYBOX:-/bin/busybox}
TIMEOUT=${DEB_TIMEOUT:-400}
PKGS=(dlcache-dkms libdlcache0 libdlcache-dev dlcache-tools python3-dlcache)
rc=0

result() {	# ok|FAIL|skip name [why]
	echo "$1 deb:$2${3:+ $3}"
	[ "$1" != FAIL ] || rc=1
}
skip_all() {
	"$ROOT/tests/skip-required.sh" "deb:all" "$1"
	exit $?
}
[ "$(id -u)" -eq 0 ] || skip_all "needs root (overlay mount, chroot, dpkg)"
for t in dpkg-buildpackage lintian apt-get chroot "$QEMU" cpio; do
	command -v "$t" >/dev/null || skip_all "$t is missing (make deps)"
done
[ -x "$BUSYBOX" ] || skip_all "no static busybox at $BUSYBOX (busybox-static)"
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null ||
	skip_all "no overlayfs in the running kernel"
KVER=$(tools/build/kver.sh 6.1 2>/dev/null || true)
[ -n "$KVER" ] && [ -r "/boot/vmlinuz-$KVER" ] && [ -d "/lib/modules/$KVER/build" ] ||
	skip_all "no 6.1 kernel image and headers (make deps)"

# ---- build, lintian --------------------------------------------------------
# A run killed before its cleanup may have left the root mounted, with
# /dev bound inside it: unmount all of it before anything is removed, and
# never cross into another file system when removing.
umount_left() {
	local m
	for m in $(awk -v p="$OUT/" 'index($2, p) == 1 {print $2}' /proc/mounts | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m"
	done
}
umount_left
rm -rf --one-file-system "$OUT"
mkdir -p "$OUT"
start=$(date +%s)
if ! tools/build/deb.sh "$OUT/pkgs" > "$OUT/deb.log" 2>&1; then
	sed 's/^/# /' "$OUT/deb.log" | tail -n 30
	result FAIL build "(tools/build/deb.sh)"
	exit 1
fi
debs=()
for p in "${PKGS[@]}"; do
	f=$(ls "$OUT/pkgs/${p}"_*.deb 2>/dev/null | head -n 1)
	[ -n "$f" ] || { result FAIL build "(no $p package)"; exit 1; }
	debs+=("$f")
done
result ok build "(${#debs[@]} packages, $(( $(date +%s) - start )) s)"

lintian --fail-on error --display-info --tag-display-limit 0 \
	"$OUT"/pkgs/*.changes > "$OUT/lintian.log" 2>&1
lrc=$?
grep -E '^[EWIP]: ' "$OUT/lintian.log" | sed 's/^/# lintian: /'
nerr=$(grep -c '^E: ' "$OUT/lintian.log")
nwarn=$(grep -c '^W: ' "$OUT/lintian.log")
if [ $lrc -eq 0 ] && [ "$nerr" -eq 0 ]; then
	result ok lintian "(0 errors, $nwarn warnings)"
else
	grep -vE '^[EWIPN]: |root privileges' "$OUT/lintian.log" | sed 's/^/# /' | tail -n 10
	result FAIL lintian "($nerr errors, exit $lrc)"
fi

# ---- the clean root --------------------------------------------------------
R=$OUT/root	# the merged view; $OUT/upper holds what changed
mkdir -p "$R" "$OUT/upper" "$OUT/work"
mounts=()
cleanup() {
	local i
	for (( i = ${#mounts[@]} - 1; i >= 0; i-- )); do
		umount "${mounts[$i]}" 2>/dev/null || umount -l "${mounts[$i]}" 2>/dev/null
	done
	mounts=()
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
mnt() {	# mount ARGS... TARGET
	mount "$@" || return 1
	mounts+=("${!#}")
}
if ! mnt -t overlay overlay -o "lowerdir=/,upperdir=$OUT/upper,workdir=$OUT/work" "$R"; then
	result FAIL root "(overlay mount of / failed)"
	exit 1
fi
# What a node's root would not have: a checkout's /usr/local installs.
mnt -t tmpfs -o mode=0755 usrlocal "$R/usr/local"
mkdir -p "$R/usr/local/bin" "$R/usr/local/lib" "$R/usr/local/include"
chroot_mounts() {
	mnt -t proc proc "$R/proc" && mnt -t sysfs sys "$R/sys" &&
		mnt --bind /dev "$R/dev" && mnt --bind /dev/pts "$R/dev/pts" &&
		mnt -t tmpfs tmp "$R/tmp" &&
		mnt -t tmpfs run "$R/run"
}
chroot_umounts() {	# all but the overlay and /usr/local
	while [ ${#mounts[@]} -gt 2 ]; do
		umount "${mounts[-1]}" || return 1
		unset 'mounts[-1]'
	done
}
in_root() {	# COMMAND...: in the clean root, with a clean environment
	chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}
chroot_mounts || { result FAIL root "(mounts in the clean root failed)"; exit 1; }

# ---- install ---------------------------------------------------------------
mkdir -p "$R/tmp/debs"
cp "${debs[@]}" "$R/tmp/debs/"
start=$(date +%s)
in_debs=()
for f in "${debs[@]}"; do
	in_debs+=("/tmp/debs/$(basename "$f")")
done
if in_root timeout 900 dpkg -i "${in_debs[@]}" > "$OUT/install.log" 2>&1; then
	newly=$(grep -E '^Setting up ' "$OUT/install.log" | awk '{print $3}' | tr '\n' ' ')
	result ok install "($newly$(( $(date +%s) - start )) s)"
else
	sed 's/^/# /' "$OUT/install.log" | tail -n 30
	result FAIL install "(dpkg -i of the five packages)"
	exit 1
fi
grep -E '^(Building for|Building initial module|Done\.|dlcache\.ko)' "$OUT/install.log" |
	sed 's/^/# install: /'

# ---- what got installed ----------------------------------------------------
want_k=()
for d in "$R"/lib/modules/*/build; do
	[ -f "$d/Makefile" ] && want_k+=("$(basename "$(dirname "$d")")")
done
st=$(in_root dkms status -m dlcache 2>&1)
echo "$st" | sed 's/^/# dkms status: /'
missing=()
for k in "${want_k[@]}"; do
	echo "$st" | grep -F ", $k, " | grep -q ": installed$" &&
		ls "$R/lib/modules/$k/updates/dkms/dlcache.ko"* >/dev/null 2>&1 ||
		missing+=("$k")
done
if [ ${#want_k[@]} -gt 0 ] && [ ${#missing[@]} -eq 0 ]; then
	result ok dkms "(dlcache.ko built and installed for ${want_k[*]})"
else
	result FAIL dkms "(not installed for: ${missing[*]:-any kernel})"
fi

cat > "$R/tmp/dev.c" <<'EOF'
#include <dlcache.h>
#include <errno.h>
#include <stdio.h>

int main(void)
{
	struct dlc_index *idx = NULL;
	int ret = dlc_index_load("/nonexistent/dlcache-deb-test.idx", &idx);

	/* A missing file is -ENOENT from the library, not a crash. */
	printf("dlc_index_load: %d\n", ret);
	return ret == -ENOENT ? 0 : 1;
}
EOF
if in_root sh -c 'cd /tmp && gcc -o dev-so dev.c $(pkg-config --cflags --libs dlcache) &&
		./dev-so && ldd ./dev-so | grep -qE "libdlcache.so.0 => (/usr)?/lib/" &&
		gcc -o dev-a dev.c $(pkg-config --cflags dlcache) /usr/lib/*/libdlcache.a \
			$(pkg-config --libs-only-L --static dlcache) \
			$(pkg-config --static --libs dlcache | sed "s/-ldlcache//") &&
		./dev-a && ! ldd ./dev-a | grep -q libdlcache' > "$OUT/dev.log" 2>&1; then
	result ok dev "(pkg-config: $(in_root pkg-config --libs dlcache); shared and static)"
else
	sed 's/^/# /' "$OUT/dev.log" | tail -n 15
	result FAIL dev "(a program against libdlcache-dev)"
fi

man=$(in_root man -w dlcachectl 2>/dev/null)
ver=$(in_root dlcachectl --version 2>&1 | head -n 1)
debver=$(dpkg-parsechangelog -l debian/changelog -S Version)
if [ "$(in_root sh -c 'command -v dlcachectl')" = /usr/bin/dlcachectl ] &&
		[ "$ver" = "dlcachectl ${debver%%-*}" ] &&
		[ -n "$man" ] && in_root dpkg -S "$man" >/dev/null 2>&1; then
	result ok tools "(/usr/bin/dlcachectl: $ver; man page $man)"
else
	result FAIL tools "(dlcachectl '$ver', man page '$man')"
fi
py=$(in_root python3 -c 'import dlcache, dlcache.torch, dlcache._lib as l
print(dlcache.__file__, l.path)' 2>&1)
if echo "$py" | grep -qE '^/usr/lib/python3/dist-packages/dlcache/__init__.py (libdlcache\.so\.0|/usr/lib/[^ ]*/libdlcache\.so\.0)$'; then
	result ok python "($py)"
else
	echo "$py" | sed 's/^/# /' | tail -n 10
	result FAIL python "(import dlcache.torch from the package)"
fi

# ---- the guest: the root above, booted ------------------------------------
chroot_umounts
STAGE=$OUT/initramfs
. "$ROOT/tests/qemu/lib.sh"
qemu_stage_busybox "$STAGE" "$BUSYBOX" newroot
qemu_stage_modules "$STAGE" "/lib/modules/$KVER" virtio_pci 9pnet_virtio 9p
install -m 0755 "$ROOT/tests/deb/init.sh" "$STAGE/init"
install -m 0755 "$ROOT/tests/deb/guest.sh" "$STAGE/guest.sh"
(cd "$STAGE" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) \
	> "$OUT/initramfs.cpio"
LOG=$OUT/console.log
start=$(date +%s)
timeout -k 10 "$TIMEOUT" "$QEMU" -accel tcg -cpu max -smp 2 -m 2G \
	-nodefaults -display none -serial stdio -monitor none -no-reboot \
	-virtfs "local,path=$R,mount_tag=root,security_model=passthrough,readonly=on,multidevs=remap" \
	-kernel "/boot/vmlinuz-$KVER" -initrd "$OUT/initramfs.cpio" \
	-append "$QEMU_APPEND_BASE" < /dev/null 2>&1 |
	qemu_console "$LOG" | grep --line-buffered -E '^RESULT |^# ' |
	sed -u -e 's/^RESULT \([a-zA-Z]*\) \([^ ]*\)/\1 deb:guest-\2/'
qrc=${PIPESTATUS[0]}
echo "# deb: the guest ($KVER) took $(( $(date +%s) - start )) s"
grep -q '^RESULT FAIL' "$LOG" && rc=1
if ! qemu_guest_done "$LOG" DEB-GUEST-DONE "$qrc" "$TIMEOUT"; then
	result FAIL guest "($QEMU_GUEST_WHY)"
fi

# ---- purge, and nothing left -----------------------------------------------
chroot_mounts || { result FAIL root "(mounts in the clean root failed)"; exit 1; }
rm -rf "$R/tmp/debs" "$R/tmp/dev"*
if in_root timeout 600 apt-get purge -y -q "${PKGS[@]}" > "$OUT/purge.log" 2>&1; then
	left=()
	for p in "${PKGS[@]}"; do
		in_root dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q . && left+=("package $p")
	done
	[ -z "$(in_root dkms status -m dlcache 2>/dev/null)" ] || left+=("dkms status")
	in_root getent group dlcache >/dev/null && left+=("group dlcache")
	ls "$R"/lib/modules/*/updates/dkms/dlcache.ko* >/dev/null 2>&1 && left+=("dlcache.ko")
	[ -e "$R/usr/src/dlcache-0.1.0" ] && left+=("/usr/src/dlcache-0.1.0")
	if [ ${#left[@]} -eq 0 ]; then
		result ok purge
	else
		result FAIL purge "(left: ${left[*]})"
	fi
else
	sed 's/^/# /' "$OUT/purge.log" | tail -n 20
	result FAIL purge "(apt-get purge)"
fi
chroot_umounts
cleanup

# The upper layer against the lower: what the packages left behind.
# Allowed to differ: the package managers' logs and caches, the shadow
# tools' backups, and DKMS's own signing key (made on first use: dkms's
# state, not ours). Not allowed: the module indexes depmod rebuilds, nor
# /etc/group: both must be as they were.
allowed='^(var/log/|var/cache/(apt|man|debconf|ldconfig)/|var/lib/(apt|dpkg|dkms/mok\.|ucf|systemd/deb-systemd)|etc/ld\.so\.cache$|etc/(group|gshadow|passwd|shadow|subgid|subuid)-$|tmp/|run/|root/\.)'
left=()
while IFS= read -r -d '' f; do
	rel=${f#"$OUT/upper/"}
	if [ -c "$f" ] && [ "$(stat -c %t:%T "$f")" = 0:0 ]; then
		left+=("deleted: /$rel")	# a whiteout: the lower layer lost it
	elif [ -d "$f" ]; then
		[ -d "/$rel" ] || left+=("new directory: /$rel")
	elif [[ "$rel" =~ $allowed ]]; then
		continue
	elif [ ! -e "/$rel" ] && [ ! -L "/$rel" ]; then
		left+=("new: /$rel")
	elif ! cmp -s "$f" "/$rel"; then
		left+=("changed: /$rel")
	fi
done < <(find "$OUT/upper" -mindepth 1 -print0)
find "$OUT/upper" -mindepth 1 -not -type d -printf '%P\n' |
	sed -E 's|^((var/)?[^/]+/[^/]+).*|\1|' | sort | uniq -c |
	awk '{printf "%s%s (%d)", (NR > 1 ? ", " : "# the upper layer (unchanged, or allowed): "), $2, $1} END {print ""}'
if [ ${#left[@]} -eq 0 ]; then
	result ok nothing-left "($(find "$OUT/upper" -mindepth 1 -not -type d | wc -l) files of logs and caches only)"
else
	printf '# left: %s\n' "${left[@]}" | head -n 20
	result FAIL nothing-left "(${#left[@]} paths)"
fi
[ -n "${DEB_KEEP:-}" ] || rm -rf --one-file-system "$OUT/upper" "$OUT/work"
exit $rc
