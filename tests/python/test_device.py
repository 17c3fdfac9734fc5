# SPDX-License-Identifier: MIT
"""DataLoader over a pack written onto a block device (`dlcachectl pack
--to`, here a loop device: the host has no NVMe, tests/qemu/nvme covers
passthrough): the batches equal those from the ImageFolder over two
epochs, with nvme_passthru on and off; an unfinished pack on a device is a
clean error naming it; nvme_passthru takes only booleans."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlctest  # noqa: E402
from dlctest import check, fingerprint  # noqa: E402

from dlcache.torch import DataLoader  # noqa: E402

KW = dict(batch_size=16, size=32, seed=3, return_ids=True, cache="1M")


def epochs(source, n, **kw):
    loader = DataLoader(source, **dict(KW, **kw))
    out = [[fingerprint(*b) for b in loader] for _ in range(n)]
    return out, loader.stats()


class Loop:
    """A loop device over a sparse file of @size bytes in @tmp."""

    def __init__(self, tmp, name, size):
        self.file = os.path.join(tmp, name)
        with open(self.file, "wb") as f:
            f.truncate(size)
        self.dev = subprocess.run(["losetup", "-f", "--show", self.file],
                                  check=True, capture_output=True,
                                  text=True).stdout.strip()

    def close(self):
        subprocess.run(["losetup", "-d", self.dev], check=False)


def need_loop():
    if os.geteuid() != 0:
        dlctest.skip_required("needs root for a loop device")
    r = subprocess.run(["losetup", "-f"], capture_output=True)
    if r.returncode:
        dlctest.skip_required("no free loop device: %s" % r.stderr.decode())


def same_batches(root, tmp):
    need_loop()
    loop = Loop(tmp, "pack.img", 32 << 20)
    try:
        subprocess.run([dlctest.dlcachectl(), "pack", root, "--to", loop.dev],
                       check=True, stdout=subprocess.DEVNULL)
        want, _ = epochs(root, 2)
        for passthru in (True, False):
            got, st = epochs(loop.dev, 2, nvme_passthru=passthru)
            check(got == want, "nvme_passthru=%r: the batches from %s "
                  "differ from the ImageFolder's" % (passthru, loop.dev))
            check(st["passthru_reads"] == 0, "a loop device took %d NVMe "
                  "commands" % st["passthru_reads"])
            check(st["misses"] > 0 and st["errors"] == 0,
                  "misses %d errors %d" % (st["misses"], st["errors"]))
    finally:
        loop.close()


def unfinished(root, tmp):
    need_loop()
    size = sum(os.path.getsize(os.path.join(d, f))
               for d, _, fs in os.walk(root) for f in fs)
    loop = Loop(tmp, "small.img", (size * 9 // 10) // 4096 * 4096)
    try:
        r = subprocess.run([dlctest.dlcachectl(), "pack", root, "--to",
                            loop.dev], capture_output=True, text=True)
        check(r.returncode != 0, "a pack larger than its device was written")
        check("too few for this pack" in r.stderr, "pack: %s" % r.stderr)
        try:
            DataLoader(loop.dev, **KW)
        except ValueError as e:
            check(loop.dev in str(e), "the error does not name %s: %s"
                  % (loop.dev, e))
        else:
            check(False, "DataLoader read an unfinished pack")
    finally:
        loop.close()


def bad_values(root):
    for bad in ("yes", 1, None):
        try:
            DataLoader(root, **dict(KW, nvme_passthru=bad))
        except ValueError as e:
            check("nvme_passthru" in str(e), "the error does not name "
                  "nvme_passthru: %s" % e)
        else:
            check(False, "nvme_passthru=%r was accepted" % (bad,))


def main():
    tmp = dlctest.scratch("device")
    root = os.path.join(tmp, "ds")
    dlctest.gen_dataset(root, images=96, classes=3, seed=8)
    dlctest.run("same_batches", same_batches, root, tmp)
    dlctest.run("unfinished", unfinished, root, tmp)
    dlctest.run("bad_values", bad_values, root)
    dlctest.done()


if __name__ == "__main__":
    main()
