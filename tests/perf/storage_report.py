#!/usr/bin/python3
"""make bench, storage-bound section: turn BUILD/bench/raw/storage/* (from
storage.sh) into storage.md and storage.json. Usage:
storage_report.py RAW_DIR OUT_DIR

Per bandwidth, steady epochs (1..) only, medians over epochs and rounds:
- images/s of each system, and ratios to PyTorch and to the page cache;
- MB read per steady epoch and the storage's busy fraction, both from the
  loop device's own counters: bytes it served / (bandwidth x epoch time).
  A run's device bytes are split over its epochs in proportion to what
  the loader says it read in each (dlcache runs); PyTorch says nothing, so
  its steady bytes are the run's less one whole data set for epoch 0;
- dlcache's epoch against its limit, max(device bytes / bandwidth,
  images / crop-first decode rate), with the issue's targets (>= 0.95 of
  the limit, storage busy >= 0.95 while misses remain).
"""
import glob
import json
import os
import statistics
import sys

raw, out = sys.argv[1], sys.argv[2]
med = statistics.median
TARGET = 0.95


def load(name):
    with open(os.path.join(raw, name)) as f:
        return json.load(f)


def num(name):
    with open(os.path.join(raw, name)) as f:
        return int(f.read().split()[0])


meta = load("meta.json")
dec = load("decode.json")
# Steady epochs decode crop-first without re-checking the whole file
# (validate=once checked it in epoch 0): their decode limit.
crop_rate = dec["crop_unchecked_images_per_s"]
images = meta["images"]
dset = meta["dataset_bytes"]


def origin_bytes(e):
    """What an epoch of a dlcachectl bench run read from the origin: all
    it read, less the staged copies it read, plus the stager's reads."""
    return (e["bytes_read"] - e.get("staging_hit_bytes", 0) +
            e.get("staging_prefetch_bytes", 0))


def footprint(prefix):
    """The median over rounds of the largest memory footprint seen."""
    fps = [num(os.path.basename(p)[:-5] + ".fp")
           for p in glob.glob(os.path.join(raw, prefix + ".*.json"))]
    return med(fps) if fps else None


def dl_epochs(prefix):
    """Steady epochs of every round of a dlcachectl bench run: dicts with
    seconds, images/s, device bytes, loader busy."""
    res = []
    for p in sorted(glob.glob(os.path.join(raw, prefix + ".*.json"))):
        name = os.path.basename(p)[:-5]
        r = json.load(open(p))
        dev = num(name + ".dev")
        said = sum(origin_bytes(e) for e in r["epochs"])
        scale = dev / said if said else 1.0
        for e in r["epochs"][1:]:
            res.append({"s": e["seconds"], "ips": e["images_per_s"],
                        "dev": origin_bytes(e) * scale,
                        "busy": e["io_busy_fraction"],
                        "hit": e["hit_ratio"], "images": e["images"]})
    return res


def torch_epochs(prefix):
    res = []
    for p in sorted(glob.glob(os.path.join(raw, prefix + ".*.json"))):
        name = os.path.basename(p)[:-5]
        r = json.load(open(p))
        steady = r["epochs"][1:]
        secs = sum(e["seconds"] for e in steady)
        dev = max(0, num(name + ".dev") - dset)
        for e in steady:
            res.append({"s": e["seconds"], "ips": e["images_per_s"],
                        "dev": dev * e["seconds"] / secs if secs else 0,
                        "busy": None, "hit": None, "images": r["images"]})
    return res


report = {"meta": meta, "crop_first_images_per_s": crop_rate,
          "bandwidths": []}
lines = ["## Storage-bound epochs (make bench: tests/perf/storage.sh)", "",
         "%d images (%.0f MB) on ext4 on a loop device, reads throttled by %s; "
         "cache = half (%.0f MB); the page cache and PyTorch in a memory cgroup "
         "of that plus their own footprint (%.0f and %.0f MB); %d cores; %s, "
         "kernel %s; %d round(s), medians of steady epochs." % (
             images, dset / 1e6, meta["throttle"], meta["cache_bytes"] / 1e6,
             meta["footprint_pc"] / 1e6, meta["footprint_torch"] / 1e6,
             meta["cores"], meta["date"], meta["kernel"], meta["rounds"]),
         "Crop-first decode limit (decodebench, from memory): %.0f images/s."
         % crop_rate, ""]
verdicts = []
for bw in meta["bandwidths_mb_s"]:
    bps = bw * 1e6
    systems = [
        ("dlcache", "dlcache, in-process, read-ahead", dl_epochs("dl.%d" % bw)),
        ("dlcache_ra_fixed", "dlcache, in-process, read-ahead a fixed 64 MiB",
         dl_epochs("dlra.%d" % bw)),
        ("dlcache_staging", "dlcache, in-process + staging on local disk",
         dl_epochs("stg.%d" % bw)),
        ("dlcache_forms", "dlcache, in-process, --forms auto",
         dl_epochs("dlforms.%d" % bw)),
        ("dlcache_noreadahead", "dlcache, in-process, --readahead off",
         dl_epochs("dlnora.%d" % bw)),
        ("page_cache", "page cache alone, same memory", dl_epochs("pc.%d" % bw)),
        ("pytorch", "PyTorch DataLoader, tuned, same memory",
         torch_epochs("torch.%d" % bw)),
    ]
    rows = {}
    for key, label, eps in systems:
        if not eps:
            continue
        rows[key] = {
            "label": label,
            "images_per_s": med(e["ips"] for e in eps),
            "mb_per_epoch": med(e["dev"] for e in eps) / 1e6,
            "storage_busy": med(e["dev"] / (bps * e["s"]) for e in eps),
            "loader_busy": (med(e["busy"] for e in eps)
                            if eps[0]["busy"] is not None else None),
            "hit_ratio": (med(e["hit"] for e in eps)
                          if eps[0]["hit"] is not None else None),
        }
    pt = rows.get("pytorch", {}).get("images_per_s")
    pc = rows.get("page_cache", {}).get("images_per_s")
    lines += ["### %d MB/s" % bw, "",
              "| system | steady images/s | x PyTorch | x page cache | "
              "MB read / epoch | storage busy | loader's busy |",
              "|---|---|---|---|---|---|---|"]
    for key, r in rows.items():
        lines.append("| %s | %.0f | %s | %s | %.0f | %.2f | %s |" % (
            r["label"], r["images_per_s"],
            "%.2f" % (r["images_per_s"] / pt) if pt else "-",
            "%.2f" % (r["images_per_s"] / pc) if pc else "-",
            r["mb_per_epoch"], r["storage_busy"],
            "%.2f" % r["loader_busy"] if r["loader_busy"] is not None else "-"))
    eps = dl_epochs("dl.%d" % bw)
    frac = med(max(e["dev"] / bps, e["images"] / crop_rate) / e["s"] for e in eps)
    busy = rows["dlcache"]["storage_busy"]
    e = eps[len(eps) // 2]
    lines += ["",
              "dlcache's steady epoch against its limit max(device bytes / "
              "bandwidth, images / crop-first rate): %.3f (target %.2f: %s); "
              "e.g. %.2f s for max(%.2f s, %.2f s). Storage busy %.3f (target "
              "%.2f: %s). Read-ahead on / off: %.2fx." % (
                  frac, TARGET, "met" if frac >= TARGET else "missed", e["s"],
                  e["dev"] / bps, e["images"] / crop_rate, busy, TARGET,
                  "met" if busy >= TARGET else "missed",
                  rows["dlcache"]["images_per_s"] /
                  rows["dlcache_noreadahead"]["images_per_s"]), ""]
    if "dlcache_ra_fixed" in rows:
        rr = rows["dlcache"]["images_per_s"] / \
            rows["dlcache_ra_fixed"]["images_per_s"]
        fo, ff = footprint("dl.%d" % bw), footprint("dlra.%d" % bw)
        lines += ["Read-ahead sized online against a fixed 64 MiB: %.3fx "
                  "images/s (target >= 0.98: %s); largest footprint %.0f "
                  "MB against %.0f MB." % (
                      rr, "met" if rr >= 0.98 else "missed",
                      (fo or 0) / 1e6, (ff or 0) / 1e6), ""]
    if "dlcache_forms" in rows:
        fr = rows["dlcache_forms"]["images_per_s"] / \
            rows["dlcache"]["images_per_s"]
        lines += ["Decoded forms (auto) against encoded bytes only: %.3fx "
                  "(target >= 0.98: %s)." % (fr, "met" if fr >= 0.98 else
                                              "missed"), ""]
    verdicts.append((bw, frac, busy))
    report["bandwidths"].append({"mb_s": bw, "systems": rows,
                                 "fraction_of_limit": frac,
                                 "storage_busy": busy})

with open(os.path.join(out, "storage.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
with open(os.path.join(out, "storage.json"), "w") as f:
    json.dump(report, f, indent=1)
print("\n".join(lines))
for bw, frac, busy in verdicts:
    print("storage: %d MB/s: %.3f of the limit, storage busy %.3f" % (bw, frac, busy),
          file=sys.stderr)
