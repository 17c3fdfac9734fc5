#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Judge the guest's "many jobs, one cache" runs (guest.sh), on the host.

    jobs.py TAG LOG DATA_ROOT LIBDLCACHE CAP_BYTES EPOCHS

Two jobs (seeds 11 and 12, job B at about half job A's pace) read the data
set EPOCHS times each: on dlcache.ko (k), each with its own in-process
cache of half the data set (s), and on the page cache alone (p). Checks:

  jobs-disk-vs-optimum   the bytes dlcache.ko's run read from the disk are
                         at most 1.10 x the offline optimum of the merged
                         trace (both jobs' requests in the order of time,
                         page-rounded sizes as the module charges them).
                         The optimum with sizes is NP-hard: its lower
                         bound is used, the linear relaxation that any
                         fraction of a sample may be held, solved exactly
                         by the greedy by right end (as tests/perf/optref.c
                         does, written again here); no policy reads less.
                         Belady's MIN with bypass is printed beside it;
  jobs-disk-vs-separate  ... and at most 0.6 x the bytes of the run with
                         two separate in-process caches, the issue's
                         target; when even the bound is above that, no
                         policy can meet it, and the check asks instead
                         that dlcache.ko be within 1.10 x of the bound
                         (and says so);
  jobs-pagecache         a measurement: the page cache's bytes, as ratios;
  drift-hit-ratio        two ranks of one job without a barrier: the byte
                         hit ratio of the warm epochs of the drifting runs
                         at least the lockstep run's - 0.01 (drift may
                         gain: a sample one rank read stays cached for a
                         rank an epoch ahead): the median of the ten, and
                         each run but one, which must still be within
                         0.05 and is named (one run in ten, under TCG on
                         a loaded 2-core host, lost 0.03 on the stock
                         kernel too: a make check of main before the
                         read-ahead on dlcache.ko, 0.4474 against 0.4787);
                         the runs on the shared time line (DLCACHE_JOB=
                         none, as an ABI 2 module has it) are printed
                         beside them.

The optimum is computed here, from the data set's files and the orders
libdlcache gives for the seeds (dlc_order_fill through ctypes), and
shares no code with libdlcache's policy (policy.c). Each request's time
is placed inside its epoch by the epoch's measured duration: the trace
interleaves the jobs as they ran. Output: "ok|FAIL TAG:NAME (why)" and
"# " lines; exit 1 when a check failed.
"""
import ctypes
import heapq
import json
import sys

PAGE = 4096


class OrderParams(ctypes.Structure):
    _fields_ = [("seed", ctypes.c_uint64), ("epoch", ctypes.c_uint32),
                ("rank", ctypes.c_uint32), ("world", ctypes.c_uint32),
                ("shuffle", ctypes.c_uint32), ("drop_last", ctypes.c_uint32),
                ("pad", ctypes.c_uint32)]


def load_index(lib, root):
    lib.dlc_index_build.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.dlc_index_count.argtypes = [ctypes.c_void_p]
    lib.dlc_index_count.restype = ctypes.c_uint32
    lib.dlc_index_size.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.dlc_index_size.restype = ctypes.c_uint64
    lib.dlc_index_key.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64)]
    idx = ctypes.c_void_p()
    ret = lib.dlc_index_build(root.encode(), ctypes.byref(idx))
    if ret:
        raise OSError(-ret, f"dlc_index_build({root})")
    n = lib.dlc_index_count(idx)
    sizes = [lib.dlc_index_size(idx, i) for i in range(n)]
    key = (ctypes.c_uint64 * 2)()
    lib.dlc_index_key(idx, key)
    return sizes, "%016x%016x" % (key[0], key[1])


def order(lib, n, seed, epoch):
    lib.dlc_order_fill.argtypes = [ctypes.c_uint32, ctypes.POINTER(OrderParams),
                                   ctypes.POINTER(ctypes.c_uint32), ctypes.c_uint32]
    p = OrderParams(seed, epoch, 0, 1, 1, 0, 0)
    out = (ctypes.c_uint32 * n)()
    ret = lib.dlc_order_fill(n, ctypes.byref(p), out, n)
    if ret:
        raise OSError(-ret, "dlc_order_fill")
    return list(out)


def trace(lib, n, jobs):
    """[(time, sample)] of both jobs, each request at its place in time."""
    reqs = []
    for seed, bench in jobs:
        t = 0.0
        for e, ep in enumerate(bench["epochs"]):
            ids = order(lib, n, seed, e)
            dur = ep["seconds"]
            for i, s in enumerate(ids):
                reqs.append((t + (i + 0.5) / len(ids) * dur, s))
            t += dur
    reqs.sort()
    return [s for _, s in reqs]


def belady_bytes(reqs, size, cap):
    """Bytes read by Belady's MIN with bypass: on a miss, of the cached
    samples and the requested one, those used farthest in the future (never:
    infinitely far) give way until the rest fits."""
    inf = len(reqs)
    nxt = [inf] * len(reqs)
    last = {}
    for t in range(len(reqs) - 1, -1, -1):
        nxt[t] = last.get(reqs[t], inf)
        last[reqs[t]] = t
    cached = {}             # sample -> its next request time
    heap = []               # (-next, sample), stale entries skipped
    used = read = 0
    for t, s in enumerate(reqs):
        if s in cached:
            cached[s] = nxt[t]
            heapq.heappush(heap, (-nxt[t], s))
            continue
        read += size[s]
        if nxt[t] == inf or size[s] > cap:
            continue
        while used + size[s] > cap:
            while heap and (heap[0][1] not in cached or cached[heap[0][1]] != -heap[0][0]):
                heapq.heappop(heap)
            far, v = -heap[0][0], heap[0][1]
            if far <= nxt[t]:
                break
            heapq.heappop(heap)
            del cached[v]
            used -= size[v]
        if used + size[s] <= cap:
            cached[s] = nxt[t]
            used += size[s]
            heapq.heappush(heap, (-nxt[t], s))
    return read


def bound_bytes(reqs, size, cap):
    """Least bytes any policy reads: each hit at request b of a sample last
    requested at a holds it in the states a .. b - 1, and every state holds
    at most cap bytes. The relaxation (fractions may be held) is interval
    packing, solved by taking intervals in order of their right end, each
    as much as the fullest of its states allows."""
    load = [0] * len(reqs)
    last = {}
    read = 0
    for b, s in enumerate(reqs):
        a = last.get(s)
        last[s] = b
        z = 0
        if a is not None:
            z = min(size[s], cap - max(load[a:b]))
            for t in range(a, b):
                load[t] += z
        read += size[s] - z
    return read


def main():
    tag, log, root, libpath = sys.argv[1:5]
    cap, epochs = int(sys.argv[5]), int(sys.argv[6])
    data = {}
    for line in open(log, errors="replace"):
        if line.startswith("DATA "):
            _, name, *rest = line.rstrip("\n").split(" ", 2)
            data.setdefault(name, []).append(rest[0] if rest else "")
    fails = 0

    def result(st, name, why=""):
        nonlocal fails
        fails += st == "FAIL"
        print(f"{st} {tag}:{name}" + (f" ({why})" if why else ""), flush=True)

    lib = ctypes.CDLL(libpath)
    sizes, key = load_index(lib, root)
    size = [(b + PAGE - 1) // PAGE * PAGE for b in sizes]
    ds_bytes = sum(sizes)
    if data.get("key", [""])[0] != key:
        result("FAIL", "jobs-index", f"host index key {key} is not the guest's "
               f"{data.get('key', ['?'])[0]}: the sample IDs would not match")
        return 1

    runs = {}
    for r in "ksp":
        try:
            runs[r] = (int(data[f"jobs_{r}_disk"][0]),
                       json.loads(data[f"jobs_{r}_A"][0]),
                       json.loads(data[f"jobs_{r}_B"][0]))
        except (KeyError, ValueError, IndexError):
            pass
    for r, what in (("k", "dlcache.ko"), ("s", "two in-process caches"),
                    ("p", "the page cache")):
        if r not in runs:
            continue
        disk, a, b = runs[r]
        pace = (sum(e["seconds"] for e in b["epochs"]) /
                max(sum(e["seconds"] for e in a["epochs"]), 1e-9))
        print(f"# jobs on {what}: disk {disk} bytes ({disk / ds_bytes:.2f} data sets); "
              "byte hit ratio per epoch A " +
              " ".join(f"{1 - e['bytes_read'] / ds_bytes:.3f}" for e in a["epochs"]) +
              " B " + " ".join(f"{1 - e['bytes_read'] / ds_bytes:.3f}" for e in b["epochs"]) +
              f"; B took {pace:.2f}x A's time")

    if "k" not in runs:
        result("skip" if data.get("nokernel", ["0"])[0] == "1" else "FAIL",
               "jobs-disk-vs-optimum", "no dlcache.ko run")
    else:
        disk, a, b = runs["k"]
        reqs = trace(lib, len(sizes), ((11, a), (12, b)))
        opt = bound_bytes(reqs, size, cap)
        bel = belady_bytes(reqs, size, cap)
        print(f"# merged trace: {len(reqs)} requests at {cap} bytes: no policy reads "
              f"less than {opt} bytes (the bound); Belady MIN with bypass reads {bel}")
        result("ok" if disk <= 1.10 * opt else "FAIL", "jobs-disk-vs-optimum",
               f"dlcache.ko read {disk} bytes, the optimum at least {opt}: "
               f"{disk / opt:.3f}x, allowed 1.10x (Belady {bel / opt:.3f}x)")
        if "s" in runs:
            sep = runs["s"][0]
            if disk <= 0.6 * sep:
                st, why = "ok", "allowed 0.6x"
            elif opt > 0.6 * sep:
                st = "ok" if disk <= 1.10 * opt else "FAIL"
                why = (f"the 0.6x target is out of reach of any policy on this trace "
                       f"(the bound is {opt / sep:.3f}x): allowed 1.10x the bound")
            else:
                st, why = "FAIL", f"allowed 0.6x, which the bound ({opt / sep:.3f}x) permits"
            result(st, "jobs-disk-vs-separate",
                   f"dlcache.ko read {disk} bytes, two separate in-process caches "
                   f"{sep}: {disk / sep:.3f}x; {why}")
        else:
            result("FAIL", "jobs-disk-vs-separate", "no run with separate caches")
        if "p" in runs:
            pc = runs["p"][0]
            result("ok", "jobs-pagecache", f"measurement: the page cache read {pc} "
                   f"bytes; dlcache.ko {disk / pc:.3f}x of it, separate caches "
                   f"{runs['s'][0] / pc if 's' in runs else float('nan'):.3f}x")

    def warm_ratio(pair):
        eps = range(1, epochs)
        rd = sum(b["epochs"][e]["bytes_read"] for b in pair for e in eps)
        return 1 - rd / (ds_bytes * len(eps))

    def pair(v):
        dec = json.JSONDecoder()
        a, end = dec.raw_decode(v)
        return a, dec.raw_decode(v[end:].lstrip())[0]

    try:
        ref = warm_ratio(pair(data["drift_lockstep"][0]))
    except (KeyError, ValueError, IndexError):
        ref = None
    def drift_runs(prefix):
        out = []
        i = 0
        while f"drift_{prefix}{i}" in data:
            try:
                out.append(warm_ratio(pair(data[f"drift_{prefix}{i}"][0])))
            except (ValueError, IndexError):
                out.append(None)
            i += 1
        return out

    runs_d = drift_runs("")
    shared = drift_runs("shared")
    if ref is None or not runs_d:
        result("skip" if data.get("nokernel", ["0"])[0] == "1" else "FAIL",
               "drift-hit-ratio", "no lockstep or drifting runs")
    else:
        bad = [j for j, r in enumerate(runs_d) if r is None or r < ref - 0.01]
        # TCG on a shared host times the two free-running ranks unevenly:
        # one outlier in ten is allowed, within 0.05, and shown; the
        # median must hold.
        allowed = 1 if len(runs_d) >= 10 else 0
        vals = sorted(r for r in runs_d if r is not None)
        median = vals[len(vals) // 2] if len(vals) == len(runs_d) else None
        far = [j for j in bad if runs_d[j] is None or runs_d[j] < ref - 0.05]
        fail = len(bad) > allowed or far or median is None or median < ref - 0.01
        result("FAIL" if fail else "ok", "drift-hit-ratio",
               f"warm epochs, lockstep {ref:.4f}; drifting " +
               " ".join("-" if r is None else f"{r:.4f}" for r in runs_d) +
               (f", median {median:.4f}" if median is not None else "") +
               f"; {len(runs_d) - len(bad)} of {len(runs_d)} at least lockstep - 0.01"
               + (f" (at most {allowed} below, within 0.05" +
                  (f": run {bad[0]}" if bad else "") + ")" if allowed else "") + "; "
               "on the shared line (DLCACHE_JOB=none) " +
               (" ".join("-" if r is None else f"{r:.4f}" for r in shared) or "not run"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
