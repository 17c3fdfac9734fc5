# SPDX-License-Identifier: MIT
"""DataLoader(cluster=True): three ranks under mpirun, with libdlcache built
with MPI=1 (DLCACHE_LIB), get the batches each would get alone over three
epochs, and the later epochs read their samples from the owners' caches
(stats); the library built without MPI refuses cluster mode with an error
that says so; bad values are clean errors naming what is wrong; a rank
with another seed makes every rank's DataLoader raise, naming it.
(The ranks here share loopback; tests/cli/test_cluster.sh runs four in
network namespaces on throttled links and storage.)"""

import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlctest  # noqa: E402
from dlctest import check, fingerprint  # noqa: E402

from dlcache.torch import DataLoader  # noqa: E402

KW = dict(batch_size=8, size=32, seed=6, return_ids=True, epochs=3)
WORLD = 3


def epochs(root, n, **kw):
    loader = DataLoader(root, **dict(KW, **kw))
    out, stats = [], []
    for e in range(n):
        loader.set_epoch(e)
        out.append([fingerprint(*b) for b in loader])
        stats.append(loader.stats())
    loader.close()
    return out, stats


def rank_main(root, out):
    """One rank of the mpirun job: cluster mode, then alone; JSON to out."""
    got, st = epochs(root, 3, cluster=True, cache="4M", peer_timeout=5)
    rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
    want, _ = epochs(root, 3, cache=0, rank=rank, world_size=WORLD)
    with open("%s.%d" % (out, rank), "w") as f:
        json.dump(dict(same=got == want, batches=sum(map(len, got)),
                       stats=st[-1]), f)


def mismatch_main(out):
    """One rank: rank 2 with another seed; the error (or none) to out."""
    rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
    err = None
    try:
        DataLoader(os.environ["DLC_ROOT"],
                   **dict(KW, cluster=True, cache="4M", peer_timeout=5,
                          seed=7 if rank == 2 else KW["seed"])).close()
    except (OSError, ValueError) as e:
        err = "%s: %s" % (type(e).__name__, e)
    with open("%s.%d" % (out, rank), "w") as f:
        json.dump(dict(err=err), f)


def mpi_lib():
    ctl = os.environ.get("DLCACHECTL", "build/dlcachectl")
    lib = os.path.join(os.path.dirname(os.path.abspath(ctl)), "mpi",
                       "libdlcache.so.0")
    return lib if os.path.exists(lib) else None


def mpirun(root, out, mode):
    """WORLD ranks of this file in @mode; mpirun's exit status."""
    lib = mpi_lib()
    if lib is None:
        dlctest.skip_required("no libdlcache built with MPI=1 next to "
                              "$DLCACHECTL (make MPI=1 BUILD=build/mpi)")
    if shutil.which("mpirun") is None:
        dlctest.skip_required("no mpirun (Debian's openmpi-bin)")
    env = dict(os.environ, DLCACHE_LIB=lib, DLC_ROOT=root)
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
           str(WORLD), "--bind-to", "none", "--mca", "pml", "ob1", "--mca",
           "btl", "tcp,self", "-x", "DLCACHE_LIB", "-x", "PYTHONPATH",
           "-x", "DLC_ROOT", sys.executable, os.path.abspath(__file__),
           mode, root, out]
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=300)
    tail = p.stdout.decode(errors="replace")[-1500:]
    check(p.returncode == 0, "mpirun exit %d: %s" % (p.returncode, tail))


def three_ranks(root, tmp):
    out = os.path.join(tmp, "rank")
    mpirun(root, out, "--rank")
    peer = 0
    for r in range(WORLD):
        with open("%s.%d" % (out, r)) as f:
            res = json.load(f)
        check(res["same"], "rank %d: the batches in cluster mode differ "
              "from those alone" % r)
        check(res["batches"] > 0, "rank %d: no batches" % r)
        st = res["stats"]
        check(st["cluster_dead_peers"] == 0 and
              st["cluster_peer_failures"] == 0,
              "rank %d: %d dead peers, %d failures" %
              (r, st["cluster_dead_peers"], st["cluster_peer_failures"]))
        peer += st["cluster_peer_hits"] + st["cluster_local_hits"]
    check(peer > 0, "the last epoch read nothing from the ranks' caches")


def seeds_differ(root, tmp):
    out = os.path.join(tmp, "mismatch")
    mpirun(root, out, "--rank-mismatch")
    for r in range(WORLD):
        with open("%s.%d" % (out, r)) as f:
            err = json.load(f)["err"]
        check(err is not None, "rank %d: a loader with rank 2's seed "
              "unlike the others'" % r)
        # Ranks 0 and 1 name rank 2 ("rank 2 has seed 7, ..."); rank 2
        # names rank 0 ("...; rank 2 has 7, ...").
        check(err is None or ("every rank needs the same" in err and
                              ("rank 2 has seed 7," in err or
                               "rank 2 has 7," in err)),
              "rank %d: the error does not name rank 2's seed: %s" % (r, err))


def not_built(root, tmp):
    # The package's own library (make's $BUILD/libdlcache.so) has no MPI.
    try:
        DataLoader(root, **dict(KW, cluster=True))
    except OSError as e:
        check("MPI=1" in str(e), "the error does not say how to get "
              "cluster mode: %s" % e)
    else:
        check(False, "cluster=True was accepted without MPI")


def bad_values(root, tmp):
    for kw, word in ((dict(cluster="yes"), "cluster"),
                     (dict(peer_timeout=1), "peer_timeout"),
                     (dict(cluster=True, peer_timeout=0), "peer_timeout"),
                     (dict(cluster=True, peer_timeout=0.05), "peer_timeout"),
                     (dict(cluster=True, peer_timeout="1s"), "peer_timeout"),
                     (dict(cluster=True, cache="kernel"), "kernel")):
        try:
            DataLoader(root, **dict(KW, **kw))
        except ValueError as e:
            check(word in str(e), "%r: the error does not name %s: %s"
                  % (kw, word, e))
        else:
            check(False, "%r was accepted" % (kw,))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--rank":
        rank_main(sys.argv[2], sys.argv[3])
        return
    if len(sys.argv) == 4 and sys.argv[1] == "--rank-mismatch":
        mismatch_main(sys.argv[3])
        return
    tmp = dlctest.scratch("cluster")
    root = os.path.join(tmp, "ds")
    dlctest.gen_dataset(root, images=90, classes=3, seed=2)
    if "DLCACHE_LIB" not in os.environ:
        dlctest.run("not_built", not_built, root, tmp)
    dlctest.run("bad_values", bad_values, root, tmp)
    dlctest.run("three_ranks", three_ranks, root, tmp)
    dlctest.run("seeds_differ", seeds_differ, root, tmp)
    dlctest.done()


if __name__ == "__main__":
    main()
