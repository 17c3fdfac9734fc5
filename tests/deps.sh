#!/bin/bash
# Install the Debian packages that build and test dlcache, when missing.
# Idempotent and quiet when everything is there; needs root only to install.
#
# The module is built and tested on both of Debian's long-term kernels:
# 6.1 from bookworm (linux-image-amd64, linux-headers-amd64 stay at 6.1)
# and 6.12 from bookworm-backports, installed side by side by their
# versioned names (linux-image-6.12.N-amd64, linux-headers-6.12.N-amd64).
# When no 6.12 kernel is installed, this adds the bookworm-backports source
# (a deb822 file) if it is missing, and installs the newest 6.12 image and
# headers from there; DLC_BACKPORTS=0 skips that.
set -euo pipefail

pkgs=(
	# library, tools and host tests
	gcc make pkg-config liburing-dev libnvme-dev libjpeg62-turbo-dev libpng-dev
	libwebp-dev libtiff-dev
	libblkid-dev
	libjpeg-turbo-progs
	# module, KUnit and QEMU tests
	linux-headers-amd64 linux-image-amd64 linux-source-6.1 qemu-system-x86
	busybox-static sparse bc flex bison python3 xz-utils cpio dkms
	# QEMU tests marked "dlc-test: -m32" (static 32-bit libc)
	gcc-multilib
	# the debug kernel (tests/qemu/debug-kernel)
	libelf-dev libssl-dev
	# comparisons against the peer users pick today
	python3-torch python3-torchvision python3-pil
	# the Prometheus text format's reference parser, and the Python
	# loader's exporter (dlcache.prometheus)
	python3-prometheus-client
	# the Python package: pip install ./python into a venv
	# (tests/cli/test_python_install.sh)
	python3-venv python3-pip
	# real photographs for tests/unit/test_torchvision.c (about 140 MB), and
	# real PNGs for tests/python/test_formats.py
	mate-backgrounds plasma-workspace-wallpapers adwaita-icon-theme
	# make bench: the plain C loader, the storage limit, the plot
	libturbojpeg0-dev fio gnuplot-nox
	# cluster mode (make MPI=1) and its tests: ranks in network namespaces
	libopenmpi-dev openmpi-bin iproute2
	# make deb and its test (tests/deb): the packages and lintian
	dpkg-dev debhelper dh-dkms dh-python lintian
	# make fuzz-lib, fuzz-lib-check: libFuzzer (tests/fuzz/lib/fuzz.mk)
	clang libclang-rt-14-dev
)

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

missing=()
for p in "${pkgs[@]}"; do
	installed "$p" || missing+=("$p")
done

# The 6.12 kernel counts as present when an image and the headers of the
# same 6.12 release are installed.
have_612() {
	local v
	for v in $(dpkg-query -W -f='${Package}\n' 'linux-headers-6.12.*-amd64' \
			2>/dev/null | sed -n 's/^linux-headers-\(6\.12\..*-amd64\)$/\1/p'); do
		installed "linux-headers-$v" && installed "linux-image-$v" && return 0
	done
	return 1
}
want_612=0
[ "${DLC_BACKPORTS:-1}" = 0 ] || have_612 || want_612=1

[ ${#missing[@]} -eq 0 ] && [ $want_612 -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	[ ${#missing[@]} -eq 0 ] ||
		echo "deps: missing Debian packages: ${missing[*]}" >&2
	[ $want_612 -eq 0 ] ||
		echo "deps: missing the 6.12 kernel from bookworm-backports (linux-image-6.12.*-amd64, linux-headers-6.12.*-amd64)" >&2
	echo "deps: run 'sudo make deps' (or apt-get install them) and try again" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive

# A kernel package's postinst builds an initramfs (update-initramfs, about
# 90 s of 2 cores for each of the two kernels). The tests boot the kernels
# with their own initramfs, so where no boot loader will ever read /boot (a
# VM booted by its hypervisor, a CI container), skip it: the kernels'
# hooks honour INITRD=No. A machine with a boot loader keeps its initramfs,
# since it may boot the kernels installed here. DLC_INITRD=yes or no
# overrides the guess.
boot_loader() {
	local d p
	for d in /boot/grub /boot/grub2 /boot/loader /boot/efi/EFI /efi/EFI \
			/boot/extlinux /boot/syslinux /etc/default/grub; do
		[ -e "$d" ] && return 0
	done
	for p in grub-pc grub-efi-amd64 grub-efi-amd64-signed systemd-boot \
			extlinux syslinux lilo; do
		installed "$p" && return 0
	done
	return 1
}
case "${DLC_INITRD:-}" in
no) export INITRD=No ;;
yes) ;;
*) boot_loader || {
	echo "deps: no boot loader here: the kernels are installed without an initramfs (DLC_INITRD=yes to build one)"
	export INITRD=No
   } ;;
esac
updated=0
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}"
	apt-get update -q >/dev/null
	updated=1
	apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ $want_612 -eq 1 ]; then
	bpo=/etc/apt/sources.list.d/bookworm-backports.sources
	if ! grep -rqsE '(^|[[:space:]])bookworm-backports([[:space:]]|$)' \
			/etc/apt/sources.list /etc/apt/sources.list.d/*.list \
			/etc/apt/sources.list.d/*.sources; then
		echo "deps: adding bookworm-backports ($bpo)"
		cat > "$bpo" <<-'SOURCES'
		Types: deb
		URIs: http://deb.debian.org/debian
		Suites: bookworm-backports
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
		SOURCES
		updated=0
	fi
	[ $updated -eq 1 ] || apt-get update -q >/dev/null
	# The versioned image that backports' linux-image-amd64 points at; else
	# the newest plain linux-image-6.12.N-amd64 (not -dbg, -unsigned, -rt,
	# -cloud).
	img=$(apt-cache depends linux-image-amd64/bookworm-backports 2>/dev/null |
		sed -En 's/^ *Depends: (linux-image-6\.12\.[0-9]+(\+[a-z0-9]+)?-amd64)$/\1/p' |
		head -n 1)
	if [ -z "$img" ]; then
		img=$(apt-cache pkgnames linux-image-6.12. 2>/dev/null |
			grep -E '^linux-image-6\.12\.[0-9]+(\+[a-z0-9]+)?-amd64$' |
			sort -V | tail -n 1)
	fi
	if [ -z "$img" ]; then
		echo "deps: no linux-image-6.12.*-amd64 in bookworm-backports" >&2
		exit 1
	fi
	kver=${img#linux-image-}
	echo "deps: installing the $kver kernel and headers from bookworm-backports"
	# APT in bookworm upgrades the installed packages built from the same
	# source along with the new ones (linux-image-amd64, linux-headers-amd64,
	# linux-libc-dev, linux-perf would all go to 6.12): not wanted here.
	apt-get install -y -q --no-install-recommends -t bookworm-backports \
		-o APT::Get::Upgrade-By-Source-Package=false \
		"linux-image-$kver" "linux-headers-$kver" >/dev/null
fi
echo "deps: done"
