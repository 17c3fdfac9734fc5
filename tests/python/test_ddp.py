# SPDX-License-Identifier: MIT
"""DDP: two processes under torch.distributed (gloo) get disjoint shards
whose union is the epoch, sized as DistributedSampler's, with the rank and
world taken from torch.distributed by default."""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlctest  # noqa: E402
from dlctest import check  # noqa: E402

WORKER = r"""
import json, os, sys
import torch, torch.distributed as dist
from dlcache.torch import DataLoader
root, init, out = sys.argv[1], sys.argv[2], sys.argv[3]
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("gloo", init_method=init, rank=rank,
                        world_size=world)
# rank and world_size from torch.distributed (no arguments)
loader = DataLoader(root, batch_size=8, size=32, seed=3, drop_last=False,
                    return_ids=True, cache=0)
res = {"rank": loader.rank, "world": loader.world_size, "len": len(loader),
       "epochs": []}
for epoch in range(2):
    loader.set_epoch(epoch)
    ids = []
    for images, labels, i in loader:
        ids += i.tolist()
        # every rank steps together, as DDP's all-reduce makes them
        t = torch.ones(1)
        dist.all_reduce(t)
    res["epochs"].append(ids)
n = torch.tensor([len(loader)])
dist.all_reduce(n, op=dist.ReduceOp.MAX)
res["max_len"] = int(n)
json.dump(res, open(out, "w"))
dist.destroy_process_group()
"""


def run_ddp(root, tmp, world):
    init = "file://" + os.path.join(tmp, "rendezvous-%s-%d" % (os.path.basename(root), world))
    procs = []
    for r in range(world):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(world))
        out = os.path.join(tmp, "rank%d-of-%d.json" % (r, world))
        procs.append((out, subprocess.Popen(
            [sys.executable, "-c", WORKER, root, init, out], env=env)))
    res = []
    for out, p in procs:
        try:
            rc = p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            for _, q in procs:
                q.kill()
            check(False, "a DDP rank hung")
        check(rc == 0, "a DDP rank exited %d" % rc)
        res.append(json.load(open(out)))
    return res


def shards(root, tmp, n):
    import torch.utils.data as tud
    res = run_ddp(root, tmp, 2)
    world = 2
    for r, o in enumerate(res):
        check(o["rank"] == r and o["world"] == world,
              "rank %d: loader took rank %d of %d from torch.distributed"
              % (r, o["rank"], o["world"]))
        check(o["len"] == o["max_len"], "ranks disagree on len(loader): a "
              "DDP job would hang on the last all-reduce")
    ds = list(range(n))
    for e in range(2):
        a, b = res[0]["epochs"][e], res[1]["epochs"][e]
        for r, ids in enumerate((a, b)):
            ref = len(tud.DistributedSampler(ds, num_replicas=world, rank=r,
                                             shuffle=True, seed=3))
            check(len(ids) == ref, "epoch %d rank %d: %d samples, "
                  "DistributedSampler gives %d" % (e, r, len(ids), ref))
        check(set(a) | set(b) == set(ds), "epoch %d: the union of the shards "
              "misses %s" % (e, sorted(set(ds) - set(a) - set(b))[:10]))
        pad = len(a) + len(b) - n	# DistributedSampler repeats this many
        dup = len(a) + len(b) - len(set(a) | set(b))
        check(dup == pad, "epoch %d: %d samples in both shards, want the "
              "%d of DistributedSampler's padding" % (e, dup, pad))
        check(len(set(a)) == len(a) and len(set(b)) == len(b),
              "epoch %d: a sample twice within one rank" % e)
    check(res[0]["epochs"][0] != res[0]["epochs"][1],
          "the shard of epoch 1 equals that of epoch 0: no reshuffle")


def local_ranks_share(root):
    """With LOCAL_WORLD_SIZE (torchrun), each rank takes its part of the
    node's CPUs and memory, not all of it."""
    code = (
        "import json, os\n"
        "from dlcache.torch import DataLoader\n"
        "l = DataLoader(%r, batch_size=8, size=32, cache='inprocess')\n"
        "s = l.stats()\n"
        "print(json.dumps([s['decode_threads'], s['cache_capacity'], "
        "l.index.total_bytes, len(os.sched_getaffinity(0))]))\n" % root)
    out = {}
    for local in ("1", "4"):
        env = dict(os.environ, LOCAL_WORLD_SIZE=local)
        r = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                           stdout=subprocess.PIPE, text=True)
        out[local] = json.loads(r.stdout.strip().splitlines()[-1])
    threads4, cap4, total, cpus = out["4"]
    check(threads4 == max(1, cpus // 4 - 1), "LOCAL_WORLD_SIZE=4 on %d CPUs: "
          "%d decode threads, want %d" % (cpus, threads4, max(1, cpus // 4 - 1)))
    check(cap4 <= total, "cache of %d bytes for a %d-byte set" % (cap4, total))
    print("# decode threads: %d alone, %d of 4 local ranks (%d CPUs)"
          % (out["1"][0], threads4, cpus))


LENDER = r"""
import json, os, sys, time
from dlcache.torch import DataLoader
root, cpu, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3]
os.sched_setaffinity(0, {cpu})
l = DataLoader(root, batch_size=8, size=32, cache="inprocess")
t0 = time.monotonic()
while time.monotonic() - t0 < 5 and l.stats()["node_borrowed_cpus"] < 1:
    time.sleep(0.05)
s = l.stats()
open(os.path.join(tmp, "up%d" % cpu), "w").close()
# Stay until the other rank has looked too.
while time.monotonic() - t0 < 10 and not os.path.exists(
        os.path.join(tmp, "up%d" % (1 - cpu))):
    time.sleep(0.05)
print(json.dumps([l._loader._node_group.decode() if l._loader._node_group
                  else None, s["node_guest_threads"],
                  s["node_borrowed_cpus"]]))
"""


def local_ranks_lend(root, tmp):
    """torchrun's local ranks (LOCAL_WORLD_SIZE 2, one run ID), each bound
    to its own CPU, form one node group by default: each has its guest
    thread, which may borrow the other's CPU; node_group=False has none,
    and a bad name is a ValueError naming node_group."""
    if len(os.sched_getaffinity(0)) < 2:
        dlctest.skip("fewer than 2 CPUs: nothing to lend")
        return
    cpus = sorted(os.sched_getaffinity(0))[:2]
    run = "t%d" % os.getpid()
    env = dict(os.environ, LOCAL_WORLD_SIZE="2", TORCHELASTIC_RUN_ID=run,
               MASTER_PORT="29511")
    d = os.path.join(tmp, "lend")
    os.makedirs(d, exist_ok=True)
    procs = [subprocess.Popen([sys.executable, "-c", LENDER, root,
                               str(c), d], env=env,
                              stdout=subprocess.PIPE, text=True)
             for c in cpus]
    outs = [json.loads(p.communicate(timeout=60)[0].strip().splitlines()[-1])
            for p in procs]
    for c, (group, threads, borrowed) in zip(cpus, outs):
        check(group == "torchrun-%s-29511" % run, "CPU %d: group %r"
              % (c, group))
        check(threads >= 1 and borrowed == 1, "CPU %d: %d guest threads, "
              "%d CPUs borrowed; want at least 1 and 1" % (c, threads,
                                                           borrowed))
    check(not os.path.exists("/dev/shm/dlcache-node-%d-torchrun-%s-29511"
                             % (os.geteuid(), run)),
          "the group's segment is left after both ranks ended")
    code = ("import json\n"
            "from dlcache.torch import DataLoader\n"
            "l = DataLoader(%r, batch_size=8, size=32, node_group=False)\n"
            "print(json.dumps(l.stats()['node_guest_threads']))\n" % root)
    r = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                       stdout=subprocess.PIPE, text=True)
    check(json.loads(r.stdout.strip().splitlines()[-1]) == 0,
          "node_group=False: guest threads %s" % r.stdout.strip())
    from dlcache.torch import DataLoader
    for bad in ("", ".x", "a/b", "x" * 65, 3):
        try:
            DataLoader(root, batch_size=8, size=32, node_group=bad)
            check(False, "node_group=%r was taken" % (bad,))
        except ValueError as e:
            check("node_group" in str(e), "node_group=%r: %s" % (bad, e))


def main():
    tmp = dlctest.scratch("ddp")
    even = dlctest.gen_dataset(os.path.join(tmp, "even"), images=96,
                               classes=3)
    odd = dlctest.gen_dataset(os.path.join(tmp, "odd"), images=97, classes=3)
    dlctest.run("gloo_2_ranks", shards, even, tmp, 96)
    dlctest.run("gloo_2_ranks_padded", shards, odd, tmp, 97)
    dlctest.run("local_ranks_share_the_node", local_ranks_share, even)
    dlctest.run("local_ranks_lend_cpus", local_ranks_lend, even, tmp)
    dlctest.done()


if __name__ == "__main__":
    main()
