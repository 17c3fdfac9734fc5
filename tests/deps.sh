#!/bin/bash
# Install the Debian packages that build and test dlcache, when missing.
# Idempotent and quiet when everything is there; needs root only to install.
set -euo pipefail

pkgs=(
	# library, tools and host tests
	gcc make pkg-config liburing-dev libjpeg62-turbo-dev libpng-dev
	libjpeg-turbo-progs
	# module, KUnit (UML) and QEMU tests
	linux-headers-amd64 linux-image-amd64 linux-source-6.1 qemu-system-x86
	busybox-static sparse bc flex bison python3 xz-utils cpio
	# comparisons against the peer users pick today
	python3-torch python3-torchvision python3-pil
)

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing Debian packages: ${missing[*]}" >&2
	echo "deps: run 'sudo make deps' (or apt-get install them) and try again" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done"
