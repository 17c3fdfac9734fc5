# SPDX-License-Identifier: MIT
"""Overhead: Python iteration over dlcache.torch.DataLoader reaches at least
0.97 x the images/s of `dlcachectl bench` on the same set and settings,
measured side by side in one run (rounds alternate; the median of each
side's best warm epoch per round counts)."""

import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlctest  # noqa: E402
from dlctest import check  # noqa: E402

from dlcache.torch import DataLoader  # noqa: E402

ROUNDS, EPOCHS, BATCH, SIZE = 3, 4, 64, 224
TARGET = 0.97


def bench_rate(root):
    r = subprocess.run([dlctest.dlcachectl(), "bench", root, "--epochs",
                        str(EPOCHS), "--batch-size", str(BATCH), "--size",
                        str(SIZE), "--backend", "inprocess",
                        "--cache-fraction", "1", "--json"], check=True,
                       stdout=subprocess.PIPE, text=True)
    return max(e["images_per_s"] for e in json.loads(r.stdout)["epochs"][1:])


def python_rate(root):
    loader = DataLoader(root, batch_size=BATCH, size=SIZE, drop_last=False,
                        cache="inprocess")
    rates = []
    for epoch in range(EPOCHS):
        n = 0
        t0 = time.perf_counter()
        for images, labels in loader:
            n += images.shape[0]
        rates.append(n / (time.perf_counter() - t0))
    loader.close()
    return max(rates[1:])


def overhead(root):
    py, ctl = [], []
    for _ in range(ROUNDS):
        ctl.append(bench_rate(root))
        py.append(python_rate(root))
    p, c = statistics.median(py), statistics.median(ctl)
    print("# images/s: python %s, dlcachectl bench %s; ratio %.3f"
          % (["%.0f" % v for v in py], ["%.0f" % v for v in ctl], p / c))
    check(p >= TARGET * c, "dlcache.torch %.0f images/s is %.3f x dlcachectl "
          "bench's %.0f (want >= %.2f)" % (p, p / c, c, TARGET))


def main():
    tmp = dlctest.scratch("overhead")
    root = dlctest.gen_dataset(os.path.join(tmp, "ds"), images=400,
                               classes=4)
    dlctest.run("python_vs_bench", overhead, root)
    dlctest.done()


if __name__ == "__main__":
    main()
