# SPDX-License-Identifier: MIT
"""DataLoader(forms=...): with decoded forms the tensors are those of
exact=True without a cache, in every epoch, whichever form served each
sample (test_torchvision holds the exact pixels to torchvision); stats()
says how many came from forms; a bad value is a ValueError."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlctest  # noqa: E402
from dlctest import check  # noqa: E402

import torch  # noqa: E402
from dlcache.torch import DataLoader  # noqa: E402


def epochs(loader, n):
    out = []
    for e in range(n):
        loader.set_epoch(e)
        out.append([(x.clone(), y.clone(), i.clone()) for x, y, i in loader])
    return out


def same_tensors(root, forms, cache, want_hits=True):
    kw = dict(batch_size=16, size=32, return_ids=True, threads=2)
    ref = epochs(DataLoader(root, cache=0, exact=True, **kw), 3)
    dl = DataLoader(root, cache=cache, forms=forms, **kw)
    got = epochs(dl, 3)
    for e in range(3):
        check(len(got[e]) == len(ref[e]), "epoch %d: %d batches, want %d"
              % (e, len(got[e]), len(ref[e])))
        for b, ((x, y, i), (rx, ry, ri)) in enumerate(zip(got[e], ref[e])):
            check(torch.equal(i, ri) and torch.equal(y, ry),
                  "epoch %d batch %d: other samples" % (e, b))
            check(torch.equal(x, rx), "epoch %d batch %d: pixels differ, "
                  "max |diff| %d" % (e, b, (x.int() - rx.int()).abs().max()))
    st = dl.stats()
    check(not want_hits or (st["form_hits"] > 0 and st["forms_held"] > 0),
          "forms=%s cache=%d: %d samples from forms, %d held"
          % (forms, cache, st["form_hits"], st["forms_held"]))
    check(st["forms_bytes"] <= st["cache_used"] <= st["cache_capacity"],
          "forms hold %d of %d bytes used, capacity %d"
          % (st["forms_bytes"], st["cache_used"], st["cache_capacity"]))
    check(st["forms_regime"] in (0, 1, 2), "regime %d" % st["forms_regime"])


def bad_value(root):
    try:
        DataLoader(root, forms="yes")
    except ValueError as e:
        check("forms must be" in str(e), "said: %s" % e)
    else:
        check(False, "forms='yes' was taken")


def main():
    tmp = dlctest.scratch("forms")
    root = dlctest.gen_dataset(os.path.join(tmp, "gen"), images=96,
                               classes=3)
    dlctest.run("decoded_all", same_tensors, root, "decoded", 256 << 20)
    dlctest.run("decoded_some", same_tensors, root, "decoded", 4 << 20)
    # auto makes nothing before it has measured the loader (a quarter
    # second or more); these epochs may end before: the same tensors
    dlctest.run("auto", same_tensors, root, "auto", 256 << 20, False)
    dlctest.run("bad_value", bad_value, root)
    dlctest.done()


if __name__ == "__main__":
    main()
