# SPDX-License-Identifier: MIT
"""The cluster section's report (tests/perf/cluster.sh): RAW's runs to
OUT/cluster.md and OUT/cluster.json.

Usage: cluster_report.py RAW OUT IMAGES BYTES STORAGE_MBPS LINK WORLD"""

import glob
import json
import os
import statistics
import sys

raw, out = sys.argv[1], sys.argv[2]
images, nbytes, mbps = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
link, world = sys.argv[6], int(sys.argv[7])
STEADY = (3, 4)


def ranks(name):
    res = []
    for r in range(world):
        with open(os.path.join(raw, "%s.%d" % (name, r))) as f:
            res.append(json.load(f))
    return res


def dev(name):
    with open(os.path.join(raw, name + ".dev")) as f:
        return int(f.read())


def epoch_s(runs, e):
    """The slowest rank's epoch e: a DDP step waits for it."""
    return max(r["epochs"][e]["seconds"] for r in runs)


def summary(system, s):
    five = ranks("%s.%s.5" % (system, s))
    steady = (dev("%s.%s.5" % (system, s)) - dev("%s.%s.3" % (system, s))) / 2
    row = dict(system=system, sum=float(s),
               epoch_s=statistics.median(epoch_s(five, e) for e in STEADY),
               first_s=epoch_s(five, 0),
               storage_bytes=max(0, steady),
               optimum_bytes=max(0.0, nbytes * (1 - float(s))),
               wait_s=[sum(r["epochs"][e]["wait_s"] for e in STEADY) /
                       len(STEADY) for r in five])
    if system == "cluster":
        row["served"] = [sum(r["epochs"][e]["cluster_served"]
                             for e in STEADY) for r in five]
        row["peer_hits"] = [sum(r["epochs"][e]["cluster_peer_hits"]
                                for e in STEADY) for r in five]
    return row


rows = []
for s in ("0.5", "1", "2"):
    for system in ("single", "staging", "cluster"):
        if glob.glob(os.path.join(raw, "%s.%s.5.0" % (system, s))):
            rows.append(summary(system, s))
torch = None
if os.path.exists(os.path.join(raw, "torch.5.0")):
    t = ranks("torch.5")
    torch = dict(system="pytorch",
                 epoch_s=statistics.median(
                     max(r["epochs"][e]["seconds"] for r in t)
                     for e in STEADY),
                 first_s=max(r["epochs"][0]["seconds"] for r in t),
                 storage_bytes=None)

names = {"single": "dlcache single-node", "staging": "dlcache + staging",
         "cluster": "dlcache cluster mode"}
L = ["## Cluster: %d nodes on %s links, shared storage at %d MB/s" %
     (world, link, mbps), "",
     "%d JPEGs (%.1f MB) on a throttled loop device; ranks in network "
     "namespaces (tests/perf/cluster.sh). Epoch time: the slowest rank's, "
     "median of the steady epochs 3-4; storage: the device's bytes per "
     "steady epoch, against the optimum max(0, N - sum of caches)." %
     (images, nbytes / 1e6), "",
     "| sum of caches | system | steady epoch s | vs single-node | "
     "vs PyTorch | first epoch s | storage MB / epoch | optimum MB |",
     "|---|---|---|---|---|---|---|---|"]
for row in rows:
    base = next(r for r in rows if r["sum"] == row["sum"] and
                r["system"] == "single")
    L.append("| %gN | %s | %.2f | %.2fx | %s | %.2f | %.2f | %.2f |" %
             (row["sum"], names[row["system"]], row["epoch_s"],
              base["epoch_s"] / row["epoch_s"],
              "%.2fx" % (torch["epoch_s"] / row["epoch_s"]) if torch else "-",
              row["first_s"], row["storage_bytes"] / 1e6,
              row["optimum_bytes"] / 1e6))
if torch:
    L.append("| page cache (all of N) | PyTorch DataLoader, 1 worker a rank "
             "| %.2f | - | 1x | %.2f | - | - |" %
             (torch["epoch_s"], torch["first_s"]))
L.append("")
for row in rows:
    if row["system"] != "cluster":
        continue
    L.append("- %gN, cluster mode: stall per rank (wait in a steady epoch) "
             "%s s; peer requests answered per rank %s (max/min %.2f); "
             "samples from peers per rank %s" %
             (row["sum"], ", ".join("%.2f" % w for w in row["wait_s"]),
              row["served"], max(row["served"]) / max(1, min(row["served"])),
              row["peer_hits"]))
L.append("")
photo = None
if os.path.exists(os.path.join(raw, "photo.prepared.5.0")):
    photo = {}
    with open(os.path.join(raw, "photo.bytes")) as f:
        pbytes = int(f.read())
    with open(os.path.join(raw, "photo.tiles")) as f:
        tiles = int(f.read())
    for how in ("plain", "prepared"):
        five = ranks("photo.%s.5" % how)
        photo[how] = dict(
            epoch_s=statistics.median(epoch_s(five, e) for e in STEADY),
            peer_bytes=sum(r["epochs"][e]["cluster_peer_bytes"]
                           for r in five for e in STEADY) / len(STEADY),
            prepared=sum(r["epochs"][e]["cluster_prepared"]
                         for r in five for e in STEADY) / len(STEADY),
            late=sum(r["epochs"][e]["cluster_prepare_late"]
                     for r in five for e in STEADY) / len(STEADY))
    p, q = photo["plain"], photo["prepared"]
    rb = q["peer_bytes"] / max(1, p["peer_bytes"])
    re = q["epoch_s"] / p["epoch_s"]
    L += ["## Large photographs: prepared answers off and on", "",
          "%d tiles of 1280 x 960 (%.1f MB) cut from the wallpapers, output "
          "224 x 224, sum of caches = N, cluster mode; steady epochs 3-4."
          % (tiles, pbytes / 1e6), "",
          "| prepared answers | steady epoch s | bytes from peers MB / epoch "
          "| samples prepared / epoch | welcome, answered encoded |",
          "|---|---|---|---|---|"]
    for how in ("plain", "prepared"):
        r = photo[how]
        L.append("| %s | %.2f | %.2f | %.0f | %.0f |" %
                 ("off" if how == "plain" else "on", r["epoch_s"],
                  r["peer_bytes"] / 1e6, r["prepared"], r["late"]))
    L += ["", "- link bytes %.2fx (target <= 0.5: %s), steady epoch %.2fx "
          "(target <= 0.75: %s)" %
          (rb, "met" if rb <= 0.5 else "MISSED", re,
           "met" if re <= 0.75 else "MISSED"), ""]
with open(os.path.join(out, "cluster.md"), "w") as f:
    f.write("\n".join(L) + "\n")
with open(os.path.join(out, "cluster.json"), "w") as f:
    json.dump(dict(rows=rows, pytorch=torch, photos=photo, images=images,
                   bytes=nbytes,
                   storage_mbps=mbps, link=link, world=world), f, indent=1)
