# SPDX-License-Identifier: MIT
"""dlcachectl whatif against references written apart from it.

  - exact: the orders the real DataLoader hands out (return_ids, every
    rank of WORLD, interleaved as ranks in step read them), replayed here
    through two separately written simulators over the files' sizes: LRU
    (an OrderedDict) and next use with bypass (the eviction rule the
    library's cache applies: the cached sample used farthest ahead goes
    while the one missed is used sooner; else the miss is not admitted).
    whatif --json must give the same hits and hit bytes, every epoch, at
    every size, for world 1 and world 3 (padded shards).
  - measured: the loader itself, `dlcachectl bench --cache C` at C = half
    the data set: its steady epochs' hit ratio within 0.03 of what whatif
    predicts (the loader charges its buffers' pages, up to 1/64 more, and
    offers a sample when its read completes).
  - jobs: --jobs 5,6:2 (two jobs, the second at half the pace) share one
    cache: its LRU, replayed here over the two jobs' real orders merged
    in time (request k of a job at k x its step, the lower job first on
    a tie), gives the same hits per job and epoch; and one job alone
    through the shared cache (--jobs 5) gives what the one-process mode
    gives.
  - many jobs: as many as one data set on dlcache.ko can have consumers
    (31), each its own seed and pace, against the same LRU reference;
    one more is a usage error.
  - png: --png draws a PNG (its signature checked), and bad arguments are
    usage errors naming what is wrong.
"""

import collections
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlctest  # noqa: E402
from dlctest import check  # noqa: E402
from hitref import lru_jobs  # noqa: E402

from dlcache.torch import DataLoader  # noqa: E402
from dlcache._loader import Index  # noqa: E402

EPOCHS = 3
SEED = 5
INF = float("inf")


def whatif(*args):
    r = subprocess.run([dlctest.dlcachectl(), "whatif"] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    return r.returncode, r.stdout, r.stderr


def real_orders(root, world, seed=SEED):
    """Per epoch, the ids the loader's ranks hand out, ranks in step."""
    ranks = [DataLoader(root, batch_size=7, size=16, seed=seed, rank=r,
                        world_size=world, drop_last=False, cache=0,
                        return_ids=True, epochs=EPOCHS)
             for r in range(world)]
    out = []
    for e in range(EPOCHS):
        per = []
        for ld in ranks:
            ld.set_epoch(e)
            per.append([int(i) for b in ld for i in b[2]])
        n = len(per[0])
        check(all(len(p) == n for p in per), "ranks of unequal length")
        out.append([per[r][i] for i in range(n) for r in range(world)])
    for ld in ranks:
        ld.close()
    return out


def sizes_of(root):
    """dlcachectl index's file of @root."""
    idx = os.path.join(dlctest.scratch("whatif-idx"), "i.idx")
    subprocess.run([dlctest.dlcachectl(), "index", root, "-o", idx],
                   check=True, stdout=subprocess.DEVNULL)
    return idx


def lru(trace, size, cap):
    held, used, out = collections.OrderedDict(), 0, []
    for ep in trace:
        h = hb = 0
        for x in ep:
            s = size[x]
            if x in held:
                held.move_to_end(x)
                h += 1
                hb += s
                continue
            if s > cap:
                continue
            while used + s > cap:
                v, _ = held.popitem(last=False)
                used -= size[v]
            held[x] = True
            used += s
        out.append((h, hb))
    return out


def next_use(trace, size, cap):
    flat = [x for ep in trace for x in ep]
    nxt, last = [INF] * len(flat), {}
    for k in range(len(flat) - 1, -1, -1):
        nxt[k] = last.get(flat[k], INF)
        last[flat[k]] = k
    key, used, out, k = {}, 0, [], 0	# key: cached sample -> next use
    for ep in trace:
        h = hb = 0
        for x in ep:
            s = size[x]
            if x in key:
                key[x] = nxt[k]
                h += 1
                hb += s
            elif s <= cap:
                while used + s > cap:
                    v = max(key, key=key.get)
                    if not nxt[k] < key[v]:
                        break
                    used -= size[v]
                    del key[v]
                if used + s <= cap:
                    key[x] = nxt[k]
                    used += s
            k += 1
        out.append((h, hb))
    return out


def exact(root, idx, size):
    total = sum(size)
    caps = [total // 10, total // 4, total // 2, total * 3 // 4, total]
    for world in (1, 3):
        trace = real_orders(root, world)
        rc, out, err = whatif(idx, "--json", "--epochs", str(EPOCHS),
                              "--world", str(world), "--seed", str(SEED),
                              "--sizes", ",".join(str(c) for c in caps))
        check(rc == 0, "whatif: exit %d: %s" % (rc, err))
        j = json.loads(out)
        check(j["dataset_bytes"] == total, "dataset_bytes %d, the files %d"
              % (j["dataset_bytes"], total))
        for pt, cap in zip(j["points"], caps):
            check(pt["capacity"] == cap, "capacity %d, asked %d"
                  % (pt["capacity"], cap))
            for name, ref in (("lru", lru), ("dlcache", next_use)):
                want = ref(trace, size, cap)
                got = [(e["hits"], e["hit_bytes"]) for e in pt[name]["epochs"]]
                check(got == want, "world %d, cache %d, %s: whatif says "
                      "(hits, hit bytes) %s, the reference %s"
                      % (world, cap, name, got, want))
                check(all(e["requests"] == len(t) for e, t in
                          zip(pt[name]["epochs"], trace)),
                      "world %d: requests per epoch differ from the orders"
                      % world)
        print("  world %d: %d sizes x 2 policies x %d epochs equal the "
              "references" % (world, len(caps), EPOCHS))


def measured(root, idx, size):
    cap = sum(size) // 2
    rc, out, err = whatif(idx, "--json", "--epochs", str(EPOCHS),
                          "--sizes", str(cap))
    check(rc == 0, "whatif: %s" % err)
    want = json.loads(out)["points"][0]["dlcache"]["steady_count_hit_ratio"]
    r = subprocess.run([dlctest.dlcachectl(), "bench", idx, "--cache",
                        str(cap), "--epochs", str(EPOCHS), "--json",
                        "--batch-size", "16", "--size", "32"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    check(r.returncode == 0, "bench: %s" % r.stderr[-300:])
    ep = json.loads(r.stdout)["epochs"][1:]
    got = sum(e["hit_ratio"] * e["images"] for e in ep) / \
        sum(e["images"] for e in ep)
    print("  cache of half the data set: bench's steady hit ratio %.4f, "
          "whatif's %.4f" % (got, want))
    check(abs(got - want) <= 0.03, "bench %.4f, whatif %.4f: off by more "
          "than 0.03" % (got, want))


def jobs(root, idx, size):
    total = sum(size)
    caps = [total // 4, total // 2, total * 3 // 4]
    sizes = ",".join(str(c) for c in caps)
    traces = [real_orders(root, 1, 5), real_orders(root, 1, 6)]
    rc, out, err = whatif(idx, "--json", "--epochs", str(EPOCHS), "--jobs",
                          "5,6:2", "--sizes", sizes)
    check(rc == 0, "whatif --jobs: exit %d: %s" % (rc, err))
    j = json.loads(out)
    check(j["shared"] and [x["step"] for x in j["jobs"]] == [1, 2],
          "jobs: %r" % j["jobs"])
    for pt, cap in zip(j["points"], caps):
        want = lru_jobs(traces, [1, 2], size, cap)
        for n in range(2):
            got = [(e["hits"], e["hit_bytes"])
                   for e in pt["per_job"][n]["lru"]["epochs"]]
            check(got == want[n], "cache %d, job %d, LRU: whatif says %s, "
                  "the reference %s" % (cap, n, got, want[n]))
        print("  cache %d: shared dlcache hits %.4f, LRU %.4f of the bytes"
              % (cap, pt["dlcache"]["steady_hit_ratio"],
                 pt["lru"]["steady_hit_ratio"]))
    one = [json.loads(whatif(idx, "--json", "--epochs", str(EPOCHS),
                             "--sizes", sizes, *extra)[1])
           for extra in (["--seed", "5"], ["--jobs", "5"])]
    for a, b in zip(one[0]["points"], one[1]["points"]):
        check(a["dlcache"]["epochs"] == b["dlcache"]["epochs"],
              "one job: the shared cache %s, the process's %s"
              % (b["dlcache"]["epochs"], a["dlcache"]["epochs"]))


def many_jobs(root, idx, size):
    """The most jobs one data set on the module can have, and one more."""
    n = 31
    cap = sum(size) // 3
    seeds = [100 + j for j in range(n)]
    steps = [1 + j % 4 for j in range(n)]
    spec = ",".join("%d:%d" % (s, t) for s, t in zip(seeds, steps))
    rc, out, err = whatif(idx, "--json", "--epochs", str(EPOCHS), "--jobs",
                          spec, "--sizes", str(cap))
    check(rc == 0, "whatif --jobs with %d jobs: exit %d: %s" % (n, rc, err))
    if rc:
        return
    j = json.loads(out)
    check([x["step"] for x in j["jobs"]] == steps,
          "%d jobs: steps %r" % (n, [x["step"] for x in j["jobs"]]))
    want = lru_jobs([real_orders(root, 1, s) for s in seeds], steps, size,
                    cap)
    pt = j["points"][0]
    for k in range(n):
        got = [(e["hits"], e["hit_bytes"])
               for e in pt["per_job"][k]["lru"]["epochs"]]
        check(got == want[k], "%d jobs, job %d, LRU: whatif says %s, the "
              "reference %s" % (n, k, got, want[k]))
    print("  %d jobs at cache %d: shared dlcache hits %.4f, LRU %.4f of the "
          "bytes" % (n, cap, pt["dlcache"]["steady_hit_ratio"],
                     pt["lru"]["steady_hit_ratio"]))
    rc, _, err = whatif(idx, "--jobs", spec + ",7")
    check(rc == 2 and "--jobs" in err and "up to %d" % n in err,
          "%d jobs: exit %d, %r" % (n + 1, rc, err))


def png(idx):
    tmp = dlctest.scratch("whatif-png")
    path = os.path.join(tmp, "w.png")
    rc, _, err = whatif(idx, "--png", path, "--sizes", "10%,50%,100%")
    if rc and "gnuplot" in err and "not found" in err:
        dlctest.skip_required("no gnuplot (gnuplot-nox): %s" % err.strip())
    check(rc == 0, "whatif --png: exit %d: %s" % (rc, err))
    with open(path, "rb") as f:
        check(f.read(8) == b"\x89PNG\r\n\x1a\n", "%s is not a PNG" % path)
    for args, word in ((["--epochs", "1"], "--epochs"),
                       (["--world", "0"], "--world"),
                       (["--sizes", "10%,x"], "--sizes"),
                       (["--jobs", "1:0"], "--jobs"),
                       (["--attached", "--jobs", "1"], "--attached"),
                       (["--bogus"], "--bogus")):
        rc, _, err = whatif(idx, *args)
        check(rc == 2 and word in err, "%s: exit %d, %r" % (args, rc, err))
    # --attached reads the module; without one it says so (QEMU's
    # integration run reads real jobs).
    env = dict(os.environ, DLCACHE_DEVICE=os.path.join(tmp, "no-device"))
    r = subprocess.run([dlctest.dlcachectl(), "whatif", idx, "--attached"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=env)
    check(r.returncode == 1 and "no-device not found" in r.stderr,
          "--attached without a module: exit %d, %r" % (r.returncode,
                                                       r.stderr))
    rc, _, err = whatif(os.path.join(tmp, "missing.idx"))
    check(rc == 1 and "missing.idx" in err, "a missing index: exit %d, %r"
          % (rc, err))


def main():
    tmp = dlctest.scratch("whatif")
    root = dlctest.gen_dataset(os.path.join(tmp, "ds"), images=100,
                               classes=3, seed=6)
    idx = sizes_of(root)
    # The sizes of the files, by sample ID, from their paths (os.stat).
    ix = Index(idx)
    size = [os.path.getsize(os.path.join(root, ix.relpath(i)))
            for i in range(len(ix))]
    dlctest.run("exact", exact, root, idx, size)
    dlctest.run("measured", measured, root, idx, size)
    dlctest.run("jobs", jobs, root, idx, size)
    dlctest.run("many-jobs", many_jobs, root, idx, size)
    dlctest.run("png", png, idx)
    dlctest.done()


if __name__ == "__main__":
    main()
