#!/bin/sh
# /init of tests/deb/test_deb.sh's guest (busybox): load the 9p modules,
# mount the clean root the packages were installed on (read-only: the
# guest changes nothing there), give it its own /proc, /sys, /dev, /tmp,
# /run, and run guest.sh chrooted into it. "DEB-GUEST-DONE" ends the run.
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /mods/order); do
	insmod "/mods/$m.ko" 2> /tmp/insmod.err ||
		echo "# insmod $m: $(cat /tmp/insmod.err)"
done
if mount -t 9p -o ro,trans=virtio,version=9p2000.L,cache=loose,msize=512000 \
		root /newroot; then
	mount -t proc proc /newroot/proc
	mount -t sysfs sys /newroot/sys
	mount -t devtmpfs dev /newroot/dev
	mkdir -p /newroot/dev/shm
	mount -t tmpfs shm /newroot/dev/shm
	mount -t tmpfs tmp /newroot/tmp
	mount -t tmpfs run /newroot/run
	cp /guest.sh /newroot/tmp/guest.sh
	chroot /newroot /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/tmp LC_ALL=C.UTF-8 /bin/sh /tmp/guest.sh
else
	echo "RESULT FAIL root (the 9p mount of the clean root)"
fi
echo DEB-GUEST-DONE
poweroff -f
