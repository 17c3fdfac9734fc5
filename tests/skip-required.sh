#!/bin/sh
# tests/skip-required.sh NAME WHY: a part of the suite that cannot run
# because something `make deps` installs is missing (a kernel image or its
# headers, linux-source, QEMU, busybox-static, dkms, sparse ...).
# Prints "skip NAME (WHY)" and exits 0; under CI=true (or CI=1), where
# every dependency is installable, prints "FAIL NAME (WHY; ...)" and exits
# 1 instead. The shell side of t_skip_required() in
# tests/unit/helpers/testutil.h.
name=$1
why=$2
case "${CI:-}" in
true|1)
	echo "FAIL $name ($why; a required part, CI=true)"
	exit 1
	;;
esac
echo "skip $name ($why)"
exit 0
