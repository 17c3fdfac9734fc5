# SPDX-License-Identifier: MIT
"""DataLoader(staging_dir=...): the batches equal those without staging
over three epochs, with and without an in-process cache above it; the
later epochs read the copies (stats), within staging_bytes; a second
DataLoader (a restarted job) finds the copies in place; bad values and a
directory of the wrong mode are clean errors naming what is wrong."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlctest  # noqa: E402
from dlctest import check, fingerprint  # noqa: E402

from dlcache.torch import DataLoader  # noqa: E402

KW = dict(batch_size=16, size=32, seed=4, return_ids=True, epochs=3)


def epochs(root, n, **kw):
    loader = DataLoader(root, **dict(KW, **kw))
    out = []
    for e in range(n):
        loader.set_epoch(e) if hasattr(loader, "set_epoch") else None
        out.append([fingerprint(*b) for b in loader])
    st = loader.stats()
    loader.close()
    return out, st


def same_batches(root, tmp):
    for cache in (0, "256K"):
        stage = os.path.join(tmp, "stage-%s" % cache)
        want, _ = epochs(root, 3, cache=cache)
        got, st = epochs(root, 3, cache=cache, staging_dir=stage)
        check(got == want, "cache=%r: the batches with staging differ from "
              "those without" % (cache,))
        check(st["staging_hits"] > 0 and st["staging_writes"] > 0,
              "cache=%r: %d staging hits, %d copies written"
              % (cache, st["staging_hits"], st["staging_writes"]))
        check(st["staging_used"] <= st["staging_budget"],
              "staged %d over %d" % (st["staging_used"], st["staging_budget"]))
        # A restarted job: the copies are in place from its first epoch.
        again, st2 = epochs(root, 1, cache=cache, staging_dir=stage)
        check(again == want[:1], "the restarted job's batches differ")
        check(st2["staging_hits"] > 0 and st2["staging_invalid"] == 0,
              "restart: %d hits, %d invalid" % (st2["staging_hits"],
                                                st2["staging_invalid"]))


def budget(root, tmp):
    total = sum(os.path.getsize(os.path.join(d, f))
                for d, _, fs in os.walk(root) for f in fs)
    got, st = epochs(root, 3, cache=0, staging_dir=os.path.join(tmp, "b"),
                     staging_bytes=total // 3)
    check(st["staging_budget"] == total // 3,
          "budget %d, want %d" % (st["staging_budget"], total // 3))
    check(st["staging_used"] <= total // 3, "staged %d over the budget"
          % st["staging_used"])
    check(st["staging_hits"] > 0, "no staging hit with a third of the set")


def bad_values(root, tmp):
    for kw, word in ((dict(staging_bytes="1G"), "staging_dir"),
                     (dict(staging_dir=tmp, staging_bytes="lots"),
                      "staging_bytes"),
                     (dict(staging_dir=tmp, staging_bytes=0),
                      "staging_bytes"),
                     (dict(staging_dir=""), "staging_dir"),
                     (dict(staging_dir=3), "staging_dir")):
        try:
            DataLoader(root, **dict(KW, **kw))
        except ValueError as e:
            check(word in str(e), "%r: the error does not name %s: %s"
                  % (kw, word, e))
        else:
            check(False, "%r was accepted" % (kw,))
    bad = os.path.join(tmp, "open")
    os.makedirs(os.path.join(bad, "dlcache-%d" % os.getuid()))
    os.chmod(os.path.join(bad, "dlcache-%d" % os.getuid()), 0o755)
    try:
        DataLoader(root, **dict(KW, staging_dir=bad))
    except OSError as e:
        check("0700" in str(e) and bad in str(e),
              "the error does not say why: %s" % e)
    else:
        check(False, "a staging directory of mode 0755 was used")


def main():
    tmp = dlctest.scratch("staging")
    root = os.path.join(tmp, "ds")
    dlctest.gen_dataset(root, images=96, classes=3, seed=8)
    dlctest.run("same_batches", same_batches, root, tmp)
    dlctest.run("budget", budget, root, tmp)
    dlctest.run("bad_values", bad_values, root, tmp)
    dlctest.done()


if __name__ == "__main__":
    main()
