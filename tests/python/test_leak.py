# SPDX-License-Identifier: MIT
"""No leaks: the process's RSS stays flat (within 5 %) over 20 epochs, for
a user who keeps nothing and for one who keeps a whole epoch's tensors and
then lets them go; loaders made and dropped in a loop give everything back
(RSS and file descriptors)."""

import gc
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlctest  # noqa: E402
from dlctest import check  # noqa: E402

from dlcache.torch import DataLoader  # noqa: E402

EPOCHS = 20
KW = dict(batch_size=16, size=64, seed=2, drop_last=False, cache="inprocess")


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def flat(root, keep):
    loader = DataLoader(root, **KW)
    samples = []
    for epoch in range(EPOCHS):
        kept = []
        for images, labels in loader:
            if keep:
                kept.append(images)
        del kept
        gc.collect()
        samples.append(rss())
    base, end = samples[2], samples[-1]	# after the cache has filled
    print("# rss MiB by epoch: %s" % " ".join("%.1f" % (s / 2 ** 20)
                                             for s in samples))
    check(end <= base * 1.05, "RSS grew from %.1f MiB (epoch 3) to %.1f MiB "
          "(epoch %d)" % (base / 2 ** 20, end / 2 ** 20, EPOCHS))
    # 5 % of a process that imported torch hides a lost batch per epoch:
    # 17 epochs of growth must stay under 2 MiB (10 batches) as well.
    check(end - base <= 2 << 20, "RSS grew by %.2f MiB over %d epochs"
          % ((end - base) / 2 ** 20, EPOCHS - 3))
    if keep:
        check(loader.stats()["kept_batches"] > 0, "nothing was kept")
    loader.close()


def many_loaders(root):
    def fds():
        return len(os.listdir("/proc/self/fd"))
    samples, fd = [], []
    for i in range(12):
        loader = DataLoader(root, **KW)
        it = iter(loader)
        next(it)
        next(it)
        del it, loader
        gc.collect()
        samples.append(rss())
        fd.append(fds())
    check(fd[-1] == fd[2], "open files went from %d to %d" % (fd[2], fd[-1]))
    check(samples[-1] <= samples[2] * 1.05, "RSS grew from %.1f to %.1f MiB "
          "over 10 loaders" % (samples[2] / 2 ** 20, samples[-1] / 2 ** 20))


def main():
    tmp = dlctest.scratch("leak")
    root = dlctest.gen_dataset(os.path.join(tmp, "ds"), images=120, classes=2)
    dlctest.run("rss_flat_20_epochs", flat, root, False)
    dlctest.run("rss_flat_20_epochs_keeping", flat, root, True)
    dlctest.run("loaders_made_and_dropped", many_loaders, root)
    dlctest.done()


if __name__ == "__main__":
    main()
