# SPDX-License-Identifier: MIT
"""state_dict() / load_state_dict(): a resumed epoch is the rest of the
uninterrupted one, batch for batch (sample IDs, labels and pixels)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlctest  # noqa: E402
from dlctest import check, fingerprint  # noqa: E402

import torch  # noqa: E402
from dlcache.torch import DataLoader  # noqa: E402

KW = dict(batch_size=16, size=32, seed=11, return_ids=True, cache=0)


def epoch_batches(root, epoch, **kw):
    loader = DataLoader(root, **dict(KW, **kw))
    loader.set_epoch(epoch)
    return [fingerprint(*b) for b in loader]


def resume_mid_epoch(root, k, **kw):
    full = epoch_batches(root, 2, **kw)
    check(len(full) > k, "need more than %d batches, have %d" % (k, len(full)))
    first = DataLoader(root, **dict(KW, **kw))
    first.set_epoch(2)
    it = iter(first)
    head = [fingerprint(*next(it)) for _ in range(k)]
    state = first.state_dict()
    first.close()
    check(state["epoch"] == 2 and state["batches_done"] == k,
          "state after %d batches of epoch 2: %r" % (k, state))
    # through torch.save / torch.load, as a checkpoint would
    path = os.path.join(dlctest.scratch("resume"), "ckpt.pt")
    torch.save({"loader": state}, path)
    state = torch.load(path)["loader"]
    second = DataLoader(root, **dict(KW, **kw))
    second.load_state_dict(state)
    rest = [fingerprint(*b) for b in second]
    check(head == full[:k], "the first %d batches differ from an "
          "uninterrupted epoch" % k)
    check(rest == full[k:], "resumed after %d batches: %d batches, the "
          "uninterrupted rest has %d; first difference at %s" % (
              k, len(rest), len(full) - k,
              next((i for i, (a, b) in enumerate(zip(rest, full[k:]))
                    if a != b), "the end")))
    # the epoch after the resumed one is the uninterrupted next epoch
    nxt = [fingerprint(*b) for b in second]
    check(nxt == epoch_batches(root, 3, **kw),
          "the epoch after a resumed one is not epoch 3")


def state_at_epoch_end(root):
    loader = DataLoader(root, **KW)
    loader.set_epoch(4)
    for _ in loader:
        pass
    s = loader.state_dict()
    check(s["epoch"] == 5 and s["batches_done"] == 0,
          "after epoch 4 ends the state is %r, want epoch 5 at batch 0" % s)


def epochs_advance(root):
    """Without set_epoch, each pass is a new epoch (a new shuffle)."""
    loader = DataLoader(root, **KW)
    a = [fingerprint(*b) for b in loader]
    b = [fingerprint(*b) for b in loader]
    check(a == epoch_batches(root, 0) and b == epoch_batches(root, 1),
          "two passes without set_epoch are not epochs 0 and 1")
    loader.set_epoch(0)
    check([fingerprint(*b) for b in loader] == a, "set_epoch(0) again differs")


def break_then_iterate(root):
    """A pass left by break: the next iter() is a new epoch (torch's rule);
    set_epoch(e) runs epoch e from its start; after load_state_dict(), a
    set_epoch() of the saved epoch keeps the saved position."""
    e0, e1 = epoch_batches(root, 0), epoch_batches(root, 1)
    loader = DataLoader(root, **KW)
    for i, b in enumerate(loader):
        if i == 1:
            break
    check([fingerprint(*b) for b in loader] == e1,
          "after a break, the next pass is not epoch 1")
    for i, b in enumerate(loader):	# epoch 2, left early
        if i == 2:
            state = loader.state_dict()
            break
    loader.set_epoch(0)
    check([fingerprint(*b) for b in loader] == e0,
          "set_epoch(0) after a break does not run epoch 0 whole")
    loader.load_state_dict(state)
    loader.set_epoch(state["epoch"])	# the usual resume loop does this
    check([fingerprint(*b) for b in loader] ==
          epoch_batches(root, 2)[state["batches_done"]:],
          "load_state_dict() then set_epoch() of its epoch lost the position")


def wrong_state(root):
    loader = DataLoader(root, **KW)
    state = loader.state_dict()
    for key, bad in (("seed", 12), ("batch_size", 8), ("world_size", 2),
                     ("dataset", "0" * 32), ("batches_done", 10 ** 6)):
        try:
            loader.load_state_dict(dict(state, **{key: bad}))
        except ValueError as e:
            check(key in str(e), "the error does not name %s: %s" % (key, e))
        else:
            check(False, "load_state_dict took a state with %s=%r" % (key, bad))
    try:
        loader.load_state_dict({"epoch": 1})
    except ValueError:
        pass
    else:
        check(False, "load_state_dict took a dict that is no state")


def main():
    tmp = dlctest.scratch("resume")
    root = dlctest.gen_dataset(os.path.join(tmp, "ds"), images=130, classes=3)
    dlctest.run("mid_epoch", resume_mid_epoch, root, 3)
    dlctest.run("mid_epoch_partial_last", resume_mid_epoch, root, 5,
                drop_last=False)
    dlctest.run("mid_epoch_rank1_of_2", resume_mid_epoch, root, 2, rank=1,
                world_size=2)
    dlctest.run("at_epoch_end", state_at_epoch_end, root)
    dlctest.run("epochs_advance", epochs_advance, root)
    dlctest.run("break_then_iterate", break_then_iterate, root)
    dlctest.run("wrong_state", wrong_state, root)
    dlctest.done()


if __name__ == "__main__":
    main()
