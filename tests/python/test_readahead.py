# SPDX-License-Identifier: MIT
"""DataLoader(readahead=...): the batches are those without read-ahead
(sample IDs, labels, pixels), over epochs, with a cache and without, and
after a resume; the budget and counters are in stats(); epochs= stops it
at the job's last epoch; bad values are a ValueError naming the option."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlctest  # noqa: E402
from dlctest import check, fingerprint  # noqa: E402

from dlcache.torch import DataLoader  # noqa: E402

KW = dict(batch_size=16, size=32, seed=5, return_ids=True)


def epochs(root, n, **kw):
    loader = DataLoader(root, **dict(KW, **kw))
    out = [[fingerprint(*b) for b in loader] for _ in range(n)]
    return out, loader.stats()


def same_batches(root):
    for cache in (0, "1M"):
        want, st = epochs(root, 3, cache=cache, readahead="off")
        check(st["readahead_budget"] == 0 and st["readahead_reads"] == 0,
              "readahead='off': budget %d, %d reads" % (
                  st["readahead_budget"], st["readahead_reads"]))
        for ra in (None, "64K", 1 << 20):
            got, st = epochs(root, 3, cache=cache, readahead=ra)
            check(got == want, "cache=%r readahead=%r: the batches differ "
                  "from readahead='off'" % (cache, ra))
            check(st["readahead_reads"] > 0 and st["readahead_used"] > 0,
                  "cache=%r readahead=%r: %d read ahead, %d used" % (
                      cache, ra, st["readahead_reads"], st["readahead_used"]))
            check(st["readahead_held"] <= st["readahead_budget"],
                  "held %d over the budget %d" % (
                      st["readahead_held"], st["readahead_budget"]))
            if ra is not None:
                check(st["readahead_budget"] == (65536 if ra == "64K" else ra),
                      "readahead=%r: budget %d" % (ra, st["readahead_budget"]))
            check(st["io_busy_s"] > 0, "no storage busy time")


def resumed(root):
    """A resume mid-epoch with read-ahead is the rest of the epoch."""
    full, _ = epochs(root, 2, cache=0, readahead="off")
    loader = DataLoader(root, **dict(KW, cache=0))
    loader.set_epoch(1)
    it = iter(loader)
    head = [fingerprint(*next(it)) for _ in range(2)]
    state = loader.state_dict()
    loader.close()
    again = DataLoader(root, **dict(KW, cache=0))
    again.load_state_dict(state)
    rest = [fingerprint(*b) for b in again]
    check(head + rest == full[1], "resumed epoch 1 differs")


def last_epoch(root):
    """epochs=2: after epoch 1 nothing is read for epoch 2; unknown: it is."""
    for n, reads_past in ((2, False), (None, True)):
        loader = DataLoader(root, **dict(KW, cache=0, epochs=n))
        for _ in range(2):
            for _b in loader:
                pass
        time.sleep(0.3)	# room for the read-ahead to read epoch 2
        st = loader.stats()
        past = st["readahead_reads"] - st["readahead_used"]
        check((past > 0) == reads_past,
              "epochs=%r: %d reads ahead never used after the last epoch"
              % (n, past))
        loader.close()
    for bad in (0, -1, 1.5, "2", True):
        try:
            DataLoader(root, **dict(KW, epochs=bad))
        except ValueError as e:
            check("epochs" in str(e), "the error does not name epochs: %s" % e)
        else:
            check(False, "epochs=%r was accepted" % (bad,))


def bad_values(root):
    for bad in (-1, "2T", "lots", True, 1.5):
        try:
            DataLoader(root, **dict(KW, readahead=bad))
        except ValueError as e:
            check("readahead" in str(e), "the error does not name "
                  "readahead: %s" % e)
        else:
            check(False, "readahead=%r was accepted" % (bad,))
    # 0 is off, as "off"
    _, st = epochs(root, 1, cache=0, readahead=0)
    check(st["readahead_budget"] == 0, "readahead=0: budget %d" %
          st["readahead_budget"])


def main():
    root = dlctest.scratch("readahead")
    dlctest.gen_dataset(root, images=120, classes=3, seed=4)
    dlctest.run("same_batches", same_batches, root)
    dlctest.run("resumed", resumed, root)
    dlctest.run("last_epoch", last_epoch, root)
    dlctest.run("bad_values", bad_values, root)
    dlctest.done()


if __name__ == "__main__":
    main()
