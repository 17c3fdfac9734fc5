# SPDX-License-Identifier: MIT
"""Zero copy, and the lifetime rule: a batch is valid until the iteration
after next or until dropped; memory still referenced after that (the
tensor, a view, a numpy array) leaves the ring and is never overwritten."""

import gc
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlctest  # noqa: E402
from dlctest import check  # noqa: E402

import torch  # noqa: E402
from dlcache.torch import DataLoader  # noqa: E402

KW = dict(batch_size=8, size=32, seed=1, drop_last=False, cache="inprocess")


def zero_copy(root):
    loader = DataLoader(root, **KW)
    ptrs = set()
    n = 0
    for images, labels in loader:
        ring = loader._loader.held[-1]	# the C batch just handed out
        addr = torch.frombuffer(ring.pixels, dtype=torch.uint8).data_ptr()
        check(images.data_ptr() == addr, "images at %#x, the batch buffer "
              "at %#x: a copy" % (images.data_ptr(), addr))
        ptrs.add(images.data_ptr())
        n += 1
    st = loader.stats()
    check(len(ptrs) <= 6 and n > 6, "%d batches over %d distinct buffers: "
          "the ring is not reused" % (n, len(ptrs)))
    check(st["kept_batches"] == 0, "a user who keeps nothing had %d batches "
          "kept" % st["kept_batches"])
    check(images.is_contiguous(), "NCHW images not contiguous")
    loader.close()


def keep_all(root, channels_last):
    loader = DataLoader(root, channels_last=channels_last, **KW)
    kept, copies = [], []
    for images, labels in loader:
        kept.append(images)
        copies.append(images.clone())
    # another epoch refills every slot of the ring
    for images, labels in loader:
        pass
    gc.collect()
    for i, (k, c) in enumerate(zip(kept, copies)):
        check(torch.equal(k, c), "kept batch %d was overwritten" % i)
    st = loader.stats()
    check(st["kept_batches"] >= len(kept) - 2, "%d of %d batches kept"
          % (st["kept_batches"], len(kept)))
    if channels_last:
        check(kept[0].is_contiguous(memory_format=torch.channels_last),
              "channels_last images are not channels_last")
    loader.close()
    # kept memory outlives the loader
    for i, (k, c) in enumerate(zip(kept, copies)):
        check(torch.equal(k, c), "kept batch %d changed after close()" % i)


def keep_views(root):
    loader = DataLoader(root, **KW)
    views, arrays, copies = [], [], []
    for i, (images, labels) in enumerate(loader):
        if i % 2:
            views.append(images[1:3, 2])		# a view of a slice
            copies.append(images[1:3, 2].clone())
        else:
            arrays.append(images.numpy()[0])	# numpy shares the memory
            copies.append(images[0].clone())
    for images, labels in loader:
        pass
    got = []
    for i in range(len(copies)):
        got.append(views[i // 2] if i % 2 else
                   torch.from_numpy(arrays[i // 2]))
    for i, (g, c) in enumerate(zip(got, copies)):
        check(torch.equal(g, c), "a view of batch %d was overwritten" % i)


def previous_valid(root):
    """While batch k+1 is in use, batch k is still intact (no clone)."""
    loader = DataLoader(root, **KW)
    prev = prev_copy = None
    for images, labels in loader:
        if prev is not None:
            check(torch.equal(prev, prev_copy),
                  "the previous batch changed during the next iteration")
        prev, prev_copy = images, images.clone()
    check(loader.stats()["kept_batches"] <= 2,
          "a user who keeps one batch back had %d kept" %
          loader.stats()["kept_batches"])


def across_epochs(root):
    """A training loop's variable holds each epoch's last batch while the
    next epoch starts: it stays intact into that epoch, with no copy."""
    loader = DataLoader(root, **KW)
    last = last_copy = None
    for epoch in range(5):
        for i, (images, labels) in enumerate(loader):
            if i == 0 and last is not None:
                check(torch.equal(last, last_copy), "epoch %d's last batch "
                      "changed by epoch %d's first" % (epoch - 1, epoch))
                last = None
        last, last_copy = images, images.clone()
    kept = loader.stats()["kept_batches"]
    check(kept == 0, "a loop over 5 epochs that keeps nothing past the next "
          "batch had %d batches copied out of the ring" % kept)


def dropped_early(root):
    """Batches dropped at once go back at the next step: nothing kept."""
    loader = DataLoader(root, **KW)
    it = iter(loader)
    for _ in range(3 * 6):
        try:
            images, labels = next(it)
        except StopIteration:
            it = iter(loader)
            continue
        del images, labels
    check(loader.stats()["kept_batches"] == 0, "dropped batches were kept")


def main():
    tmp = dlctest.scratch("lifetime")
    root = dlctest.gen_dataset(os.path.join(tmp, "ds"), images=100, classes=2)
    dlctest.run("zero_copy_keep_none", zero_copy, root)
    dlctest.run("keep_every_batch", keep_all, root, False)
    dlctest.run("keep_every_batch_channels_last", keep_all, root, True)
    dlctest.run("keep_views_and_numpy", keep_views, root)
    dlctest.run("previous_batch_valid", previous_valid, root)
    dlctest.run("last_batch_across_epochs", across_epochs, root)
    dlctest.run("dropped_at_once", dropped_early, root)
    dlctest.done()


if __name__ == "__main__":
    main()
