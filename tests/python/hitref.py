# SPDX-License-Identifier: MIT
"""Reference hit simulations written apart from dlcachectl's hitsim.c, for
test_whatif.py and the QEMU integration's jobs.py."""

import collections


def lru_jobs(traces, steps, size, cap):
    """LRU over the jobs' requests merged in time as whatif merges them
    (job j's k-th request at k * steps[j], the lower job first on a tie):
    per job, per epoch, (hits, hit bytes)."""
    reqs = []
    for j, (tr, st) in enumerate(zip(traces, steps)):
        k = 0
        for e, ep in enumerate(tr):
            for x in ep:
                reqs.append((k * st, j, e, x))
                k += 1
    reqs.sort(key=lambda r: (r[0], r[1]))
    held, used = collections.OrderedDict(), 0
    out = [[[0, 0] for _ in tr] for tr in traces]
    for _, j, e, x in reqs:
        s = size[x]
        if x in held:
            held.move_to_end(x)
            out[j][e][0] += 1
            out[j][e][1] += s
        elif s <= cap:
            while used + s > cap:
                v, _ = held.popitem(last=False)
                used -= size[v]
            held[x] = True
            used += s
    return [[tuple(h) for h in job] for job in out]
