#!/bin/sh
# Runs in tests/deb/test_deb.sh's guest, chrooted into the clean root that
# has dlcache's five packages installed (Debian's sh, kmod, python3 and
# torch; nothing of the checkout): the module DKMS built, loaded the way
# an administrator loads it, then dlcachectl and a PyTorch epoch on it.
# Prints "RESULT ok|FAIL name (why)" lines.
res() {
	echo "RESULT $1 $2${3:+ $3}"
}
kver=$(uname -r)

if modprobe dlcache 2> /tmp/modprobe.err; then
	ko=$(modinfo -n dlcache 2>&1)
	case "$ko" in
	/lib/modules/"$kver"/updates/dkms/dlcache.ko*)
		res ok modprobe "($ko, $(cat /sys/module/dlcache/parameters/capacity_mb) MiB)" ;;
	*)
		res FAIL modprobe "(modprobe took $ko, not DKMS's)" ;;
	esac
else
	res FAIL modprobe "($(cat /tmp/modprobe.err))"
fi

if [ -c /dev/dlcache ]; then
	res ok device "(/dev/dlcache $(stat -c '%a %U:%G' /dev/dlcache))"
else
	res FAIL device "(no /dev/dlcache after modprobe)"
fi

# The package's udev rule, as udev would apply it (no udevd runs here):
# its lines that matched, the group's and the mode's.
gid=$(getent group dlcache | cut -d: -f3)
udevadm test --action=add /class/misc/dlcache > /tmp/udev.log 2>&1
grep "60-dlcache.rules:" /tmp/udev.log | sed 's/^/# udev: /'
if [ -n "$gid" ] && grep -qE "60-dlcache.rules:[0-9]+ GROUP $gid" /tmp/udev.log &&
		grep -qE "60-dlcache.rules:[0-9]+ MODE 0?660" /tmp/udev.log; then
	res ok udev-rule "(group dlcache = $gid, mode 0660)"
else
	tail -n 8 /tmp/udev.log | sed 's/^/# udev: /'
	res FAIL udev-rule "(60-dlcache.rules does not give the device to dlcache)"
fi

if dlcachectl stats > /tmp/stats.log 2>&1; then
	res ok stats "($(head -n 1 /tmp/stats.log))"
else
	sed 's/^/# stats: /' /tmp/stats.log
	res FAIL stats "(dlcachectl stats on /dev/dlcache)"
fi

if ! dlcachectl gen /tmp/ds --images 96 --classes 4 > /tmp/gen.log 2>&1; then
	sed 's/^/# gen: /' /tmp/gen.log
	res FAIL epoch "(dlcachectl gen)"
	exit 0
fi
python3 - > /tmp/epoch.log 2>&1 <<'PY'
import sys
from dlcache.torch import DataLoader

dl = DataLoader("/tmp/ds", batch_size=16, size=64, cache="kernel",
                epochs=2, threads=2, return_ids=True)
seen = []
hits = []
for epoch in range(2):
    dl.set_epoch(epoch)
    ids = []
    before = dl.stats()["hits"]
    for x, y, i in dl:
        assert x.shape[1:] == (3, 64, 64), x.shape
        ids += i.tolist()
    seen.append(sorted(ids))
    hits.append(dl.stats()["hits"] - before)
s = dl.stats()
dl.close()
ok = (s["backend"] == "kernel" and seen[0] == seen[1] and len(seen[0]) == 96
      and hits[0] == 0 and hits[1] == 96 and s["errors"] == 0)
print("%s backend %s, %d samples an epoch, kernel cache hits %s, errors %d"
      % ("ok" if ok else "FAIL", s["backend"], len(seen[0]), hits,
         s["errors"]))
sys.exit(0 if ok else 1)
PY
if [ $? -eq 0 ]; then
	res ok epoch "(DataLoader: $(tail -n 1 /tmp/epoch.log | cut -d' ' -f2-))"
else
	tail -n 15 /tmp/epoch.log | sed 's/^/# epoch: /'
	res FAIL epoch "(two epochs of dlcache.torch.DataLoader on dlcache.ko)"
fi
dlcachectl stats 2>&1 | sed 's/^/# stats after: /' | head -n 12

if rmmod dlcache 2> /tmp/rmmod.err; then
	res ok rmmod
else
	res FAIL rmmod "($(cat /tmp/rmmod.err))"
fi
