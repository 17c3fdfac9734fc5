#!/usr/bin/python3
"""make bench, decoded-forms section: turn BUILD/bench/raw/forms/* (from
forms.sh) into forms.md, forms.json and forms.dat (report.py plots it in
report.png). Usage: forms_report.py RAW_DIR OUT_DIR

Per cache size, steady epochs (1..) only, medians over epochs and rounds:
images/s of forms auto, of encoded bytes only with the exact transform
(the same pixels) and with the default one; their ratios, with the
issue's targets (forms never below 0.98 of encoded only; with every form
held, at least 2.5x the MCU-exact decode limit and 10x the tuned PyTorch
DataLoader when make bench measured those in the same run).
"""
import glob
import json
import os
import statistics
import sys

raw, out = sys.argv[1], sys.argv[2]
med = statistics.median
SYSTEMS = [("default", "encoded only, default"),
           ("exact", "encoded only, exact"),
           ("auto", "forms auto")]


def steady(prefix):
    """Steady epochs of every round of @prefix: images/s, and the last
    epoch's forms held and bytes."""
    ips, held, mb = [], [], []
    for p in sorted(glob.glob(os.path.join(raw, prefix + ".*.json"))):
        r = json.load(open(p))
        ips += [e["images_per_s"] for e in r["epochs"][1:]]
        held.append(r["epochs"][-1].get("forms_held", 0))
        mb.append(r["epochs"][-1].get("forms_bytes", 0) / 1e6)
    return (med(ips), med(held), med(mb)) if ips else None


def rounds_of(name, key):
    """make bench's own measurement, when this ran inside it: a median."""
    vals = []
    for p in glob.glob(os.path.join(raw, "..", name + ".*.json")):
        r = json.load(open(p))
        vals.append(r[key] if key in r else
                    med(e["images_per_s"] for e in r["epochs"][1:]))
    return med(vals) if vals else None


meta = json.load(open(os.path.join(raw, "meta.json")))
mcu = rounds_of("decodepack", "mcu_images_per_s")
torch = rounds_of("torch", "steady")
rows = []
for m in meta["multiples"]:
    # the files are named as forms.sh's MULTIPLES spell them: 0.25, 1, 8
    res = {k: steady("%s.%s" % (k, m)) for k, _ in SYSTEMS}
    if not all(res.values()):
        continue
    rows.append({"multiple": m, "cache_bytes": int(meta["dataset_bytes"] * m),
                 **{k: res[k][0] for k, _ in SYSTEMS},
                 "forms_held": res["auto"][1], "forms_mb": res["auto"][2],
                 "auto_over_default": res["auto"][0] / res["default"][0],
                 "auto_over_exact": res["auto"][0] / res["exact"][0]})

L = ["## Decoded forms: the cache at several sizes (make bench: "
     "tests/perf/forms.sh)", "",
     "%.0f MB of JPEGs, in-process cache at each multiple of the encoded "
     "bytes, %d epochs (epoch 0 cold), %d cores, %s; %d round(s), medians of "
     "steady epochs, images/s." % (meta["dataset_bytes"] / 1e6,
                                    meta["epochs"], meta["cores"],
                                    meta["date"], meta["rounds"]), "",
     "| cache (x encoded) | " + " | ".join(lb for _, lb in SYSTEMS) +
     " | forms / default | forms / exact | forms held (MB) |",
     "|---|---|---|---|---|---|---|"]
for r in rows:
    L.append("| %g | %.0f | %.0f | %.0f | %.2f | %.2f | %d (%.0f) |" % (
        r["multiple"], r["default"], r["exact"], r["auto"],
        r["auto_over_default"], r["auto_over_exact"], r["forms_held"],
        r["forms_mb"]))
L.append("")
worst = min((r["auto_over_exact"] for r in rows), default=None)
if worst is not None:
    L.append("Forms auto against encoded only with the same pixels, the "
             "lowest: %.3f (target >= 0.98: %s)." %
             (worst, "met" if worst >= 0.98 else "missed"))
top = rows[-1] if rows else None
if top and mcu:
    L.append("With every form held (%gx): %.2fx the MCU-exact decode limit "
             "(%.0f images/s, the pack; target >= 2.5)%s." % (
                 top["multiple"], top["auto"] / mcu, mcu,
                 ", %.1fx the tuned PyTorch DataLoader (target >= 10)" %
                 (top["auto"] / torch) if torch else ""))
with open(os.path.join(out, "forms.md"), "w") as f:
    f.write("\n".join(L) + "\n")
with open(os.path.join(out, "forms.json"), "w") as f:
    json.dump({"meta": meta, "rows": rows, "mcu_images_per_s": mcu,
               "torch_images_per_s": torch}, f, indent=1)
with open(os.path.join(out, "forms.dat"), "w") as f:
    for r in rows:
        f.write("%g %.1f %.1f %.1f\n" % (r["multiple"], r["default"],
                                        r["exact"], r["auto"]))
print("\n".join(L))
