# SPDX-License-Identifier: MIT
"""state_dict() / load_state_dict(): a resumed epoch is the rest of the
uninterrupted one, batch for batch (sample IDs, labels and pixels); at
another world size or batch size (elastic), the rest of the epoch's global
order shared over the new ranks as torch's DistributedSampler shares a
list, every sample once across the runs, each with its uninterrupted
pixels, and the epochs after it those of the new world."""

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


def per_sample(images, labels, ids):
    """{sample id: (label, SHA-1 of its pixels)} of one batch."""
    import hashlib
    return {i: (lab, hashlib.sha1(img.contiguous().numpy().tobytes())
                .hexdigest())
            for img, lab, i in zip(images, labels.tolist(), ids.tolist())}


def run_ranks(root, world, epoch, kw, state=None, take=None):
    """Each rank of a job at @world: its ids in order, its samples'
    pixels, its batch count, and its state after @take batches (None:
    the whole run). @state: what every rank loads first."""
    out = []
    for rank in range(world):
        loader = DataLoader(root, **dict(KW, rank=rank, world_size=world,
                                         **kw))
        if state is not None:
            loader.load_state_dict(state)
        else:
            loader.set_epoch(epoch)
        ids, pix, n = [], {}, 0
        for b in loader:
            ids += b[2].tolist()
            pix.update(per_sample(*b))
            n += 1
            if take is not None and n == take:
                break
        out.append(dict(ids=ids, pix=pix, batches=n,
                        state=loader.state_dict(), loader=loader))
    return out


def elastic(root, old_world, k, new_world, **kw):
    """@old_world ranks take @k batches of epoch 2 and save; @new_world
    ranks load rank 0's state and run the rest of the epoch, then epoch
    3. References: a world-1 run of epoch 2 gives the global order and
    every sample's pixels; torch's DistributedSampler over the rest of
    that order gives each new rank's samples."""
    from torch.utils.data.distributed import DistributedSampler
    new_kw = dict(kw, **kw.pop("new", {}))
    bs = kw.get("batch_size", KW["batch_size"])
    whole = run_ranks(root, 1, 2, dict(kw, drop_last=False, pad_shards=True,
                                       batch_size=16))[0]
    order, pixels = whole["ids"], whole["pix"]
    n = len(order)
    old = run_ranks(root, old_world, 2, kw, take=k)
    states = [o["state"] for o in old]
    check(all(s["samples_done"] == k * bs * old_world for s in states),
          "samples_done %r, want %d" % ([s["samples_done"] for s in states],
                                        k * bs * old_world))
    new_bs = new_kw.get("batch_size", KW["batch_size"])
    new = run_ranks(root, new_world, 2, new_kw, state=states[0])
    done = min(k * bs * old_world, n)
    rest = order[done:]
    drop_shard = not new_kw.get("pad_shards", True)
    drop_last = new_kw.get("drop_last", True)
    for r, nr in enumerate(new):
        want = [rest[i] for i in DistributedSampler(
            rest, num_replicas=new_world, rank=r, shuffle=False,
            drop_last=drop_shard)] if rest else []
        if drop_last:
            want = want[:len(want) // new_bs * new_bs]
        check(nr["ids"] == want, "new rank %d of %d after %d samples: "
              "ids %s..., DistributedSampler over the rest: %s..."
              % (r, new_world, done, nr["ids"][:6], want[:6]))
        bad = [i for i in nr["pix"] if nr["pix"][i] != pixels[i]]
        check(not bad, "new rank %d: samples %s differ from the "
              "uninterrupted epoch's pixels" % (r, bad[:5]))
    counts = {nr["batches"] for nr in new}
    check(len(counts) == 1, "new ranks ran %s batches" % sorted(counts))
    # Each sample once across both runs (padding aside), when nothing
    # is cut off.
    if not drop_shard and not drop_last:
        used = [i for o in old for i in o["ids"]][:done]
        interleaved = [new[q % new_world]["ids"][q // new_world]
                       for q in range(len(rest))]
        check(sorted(set(used) | set(interleaved)) == list(range(n)) and
              not set(used) & set(interleaved),
              "the two runs together do not use every sample once")
    # The next epoch is the new world's own.
    for r, nr in enumerate(new):
        nxt = [fingerprint(*b) for b in nr["loader"]]
        fresh = DataLoader(root, **dict(KW, rank=r, world_size=new_world,
                                        **new_kw))
        fresh.set_epoch(3)
        check(nxt == [fingerprint(*b) for b in fresh],
              "new rank %d: the epoch after the resumed one is not epoch 3 "
              "at world %d" % (r, new_world))
    return new


def elastic_twice(root):
    """3 ranks, then 2 from their state, then 4 from the 2's: every
    sample of the epoch once across the three runs."""
    kw = dict(drop_last=False)
    whole = run_ranks(root, 1, 2, dict(kw, batch_size=16))[0]["ids"]
    a = run_ranks(root, 3, 2, kw, take=1)
    b = run_ranks(root, 2, 2, kw, state=a[0]["state"], take=1)
    sb = b[0]["state"]
    check(sb["samples_done"] == 3 * 16 + 2 * 16,
          "after 3 x 1 and 2 x 1 batches: samples_done %r" % sb["samples_done"])
    c = run_ranks(root, 4, 2, kw, state=sb)
    used = whole[:80]
    rest = whole[80:]
    inter = [c[q % 4]["ids"][q // 4] for q in range(len(rest))]
    check(inter == rest and sorted(used + inter) == sorted(whole),
          "three runs (3, 2, 4 ranks) do not use the epoch's order once")


def wrong_state(root):
    loader = DataLoader(root, **KW)
    state = loader.state_dict()
    for key, bad, other in (("seed", 12, {}), ("size", 64, {}),
                            ("train", False, {}),
                            ("dataset", "0" * 32, {}),
                            ("batches_done", 10 ** 6, {}),
                            ("samples_done", -1, {"world_size": 2})):
        try:
            loader.load_state_dict(dict(state, **dict(other, **{key: bad})))
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
    dlctest.run("elastic_3_to_2", elastic, root, 3, 1, 2)
    dlctest.run("elastic_2_to_3_padded", elastic, root, 2, 2, 3,
                drop_last=False)
    dlctest.run("elastic_4_to_1", elastic, root, 4, 1, 1, drop_last=False)
    dlctest.run("elastic_1_to_4_shards_cut", elastic, root, 1, 3, 4,
                pad_shards=False)
    dlctest.run("elastic_batch_size", elastic, root, 2, 2, 2,
                drop_last=False, new=dict(batch_size=8))
    dlctest.run("elastic_twice", elastic_twice, root)
    dlctest.run("wrong_state", wrong_state, root)
    dlctest.done()


if __name__ == "__main__":
    main()
