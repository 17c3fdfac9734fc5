#!/usr/bin/python3
"""make bench: turn BUILD/bench/raw/* into report.md, report.json and
report.png (gnuplot). Usage: report.py RAW_DIR OUT_DIR"""
import glob
import json
import os
import statistics
import subprocess
import sys

raw, out = sys.argv[1], sys.argv[2]
med = statistics.median


def load(name):
    with open(os.path.join(raw, name)) as f:
        return json.load(f)


def rounds(prefix):
    files = sorted(glob.glob(os.path.join(raw, prefix + ".*.json")),
                   key=lambda p: int(p.rsplit(".", 2)[1]))
    return [json.load(open(p)) for p in files]


meta = load("meta.json")
mean_file = meta["dataset"]["mean_file_bytes"]
dl, pt, pl = rounds("dlcache"), rounds("torch"), rounds("plain")
dec, fio = rounds("decode"), rounds("fio")


def steady(r):
    return med(e["images_per_s"] for e in r["epochs"][1:])


def cold(r):
    return r["epochs"][0]["images_per_s"]


def byte_hits(e):
    tot = e["hit_bytes"] + e["miss_bytes"]
    return e["hit_bytes"] / tot if tot else 0.0


full = med(d["full_images_per_s"] for d in dec)
# Steady epochs decode crop-first without re-checking the whole file
# (validate=once checked it in epoch 1): their limit. The cold epoch
# checks every file: its limit is the checked rate.
crop = med(d["crop_unchecked_images_per_s"] for d in dec)
crop_checked = med(d["crop_images_per_s"] for d in dec)
crop_exact = med(d["crop_exact_images_per_s"] for d in dec)
fio_mbs = med(f["jobs"][0]["read"]["bw_bytes"] / 1e6 for f in fio)
fio_ips = fio_mbs * 1e6 / mean_file
p_ips = med(steady(r) for r in pt)

sysrows = [
    ("dlcache", "dlcache (%s backend)" % dl[0]["backend"], med(steady(r) for r in dl), med(cold(r) for r in dl)),
    ("pytorch", "PyTorch DataLoader, tuned", p_ips, med(cold(r) for r in pt)),
    ("plain_c", "plain C loader (read + tjDecompress2)", med(steady(r) for r in pl), med(cold(r) for r in pl)),
    ("decode_full", "decode limit: full libjpeg-turbo", full, None),
    ("decode_crop", "decode limit: crop-first", crop, None),
    ("decode_crop_checked", "  crop-first, checking the whole file", crop_checked, None),
    ("decode_crop_exact", "  crop-first at DCT scale 1 (--exact)", crop_exact, None),
    ("storage_fio", "storage limit: fio (images/s equiv.)", fio_ips, None),
]

# ---- packs: the same set packed (.dlp), MCU-exact decode ------------------
dlp, dlpall, dlall = rounds("dlpack"), rounds("dlpackall"), rounds("dlall")
mcu = med(d["mcu_images_per_s"] for d in rounds("decodepack"))
pack_path = meta["dataset"]["dir"] + ".dlp"
pack_bytes = os.path.getsize(pack_path)
pack_s = float(open(os.path.join(raw, "pack.time")).read().split()[0])
pack_info = load("pack.json")
overhead = pack_bytes / meta["dataset"]["bytes"] - 1.0
packrows = [
    ("dlcache_pack_half", "dlcache on the pack, cache = half", med(steady(r) for r in dlp), med(cold(r) for r in dlp)),
    ("dlcache_half", "dlcache on the originals, cache = half", sysrows[0][2], sysrows[0][3]),
    ("dlcache_pack_whole", "dlcache on the pack, cache = whole", med(steady(r) for r in dlpall), med(cold(r) for r in dlpall)),
    ("dlcache_whole", "dlcache on the originals, cache = whole", med(steady(r) for r in dlall), med(cold(r) for r in dlall)),
    ("pytorch", "PyTorch DataLoader, tuned (page cache: whole)", p_ips, sysrows[1][3]),
    ("decode_mcu", "decode limit: MCU-exact, pack", mcu, None),
    ("decode_crop", "decode limit: crop-first, originals", crop, None),
    ("decode_full", "decode limit: full, originals", full, None),
]

photo = None
if os.path.exists(os.path.join(raw, "photo.decode.json")):
    pd, pp = load("photo.decode.json"), load("photo.decodepack.json")
    pt_ph = load("photo.torch.json")
    photo = {"images": pd["images"], "pack": load("photo.pack.json"),
             "pack_s": float(open(os.path.join(raw, "photo.pack.time")).read().split()[0]),
             "rows": [
                 ("dlcache on the pack, cache = whole", steady(load("photo.dlpack.json")), cold(load("photo.dlpack.json"))),
                 ("dlcache on the originals, cache = whole", steady(load("photo.dlcache.json")), cold(load("photo.dlcache.json"))),
                 ("PyTorch DataLoader, tuned", steady(pt_ph), cold(pt_ph)),
                 ("decode limit: MCU-exact, pack", pp["mcu_images_per_s"], None),
                 ("decode limit: crop-first, originals", pd["crop_unchecked_images_per_s"], None),
                 ("decode limit: full, originals", pd["full_images_per_s"], None),
             ]}

# ---- hit ratios -----------------------------------------------------------
hs = load("hitsim.json")
dl_steady_hit = med(byte_hits({"hit_bytes": sum(e["hit_bytes"] for e in r["epochs"][1:]),
                               "miss_bytes": sum(e["miss_bytes"] for e in r["epochs"][1:])}) for r in dl)
dl_cold_hit = med(byte_hits(r["epochs"][0]) for r in dl)
hitrows = []   # (key, label, perm cold, perm steady, rep cold, rep steady)
hitrows.append(("dlcache_measured", "dlcache, measured (bench, bytes)", dl_cold_hit, dl_steady_hit, None, None))
names = {"dlcache": "dlcache policy (sim, bytes)", "lru": "LRU (sim, bytes)",
         "minio": "never-evict / MinIO (sim, bytes)",
         "bound": "UPPER BOUND, any policy (independent, bytes)",
         "belady_unit": "OPTIMUM: Belady+bypass, unit sizes (independent, count)",
         "dlcache_unit": "dlcache policy, unit sizes (sim, count)"}
for k in ("dlcache", "lru", "minio", "bound", "belady_unit", "dlcache_unit"):
    a, b = hs["perm"][k], hs["repeats"][k]
    hitrows.append(("sim_" + k, names[k], a["cold_bytes"], a["steady_bytes"], b["cold_bytes"], b["steady_bytes"]))
hitrows.append(("capacity_over_size", "capacity/size", None, hs["capacity_over_size"], None, None))

pc = None
if os.path.exists(os.path.join(raw, "pc.meta.json")):
    pc = load("pc.meta.json")
    ep = []
    for s in range(meta["epochs"]):
        j = load("pc.bench.%d.json" % s)
        inblock = int(open(os.path.join(raw, "pc.bench.%d.json.time" % s)).read().split()[0])
        req = j["epochs"][0]["miss_bytes"] + j["epochs"][0]["hit_bytes"]
        ep.append(1.0 - inblock * 512.0 / req if req else 0.0)
    pc["bench_epochs"] = ep
    rp = load("pc.replay.perm.json")["epochs"]
    rr = load("pc.replay.repeats.json")["epochs"]

    def agg(es):
        q = sum(e["req_bytes"] for e in es)
        return 1.0 - sum(e["read_bytes"] for e in es) / q if q else 0.0
    pc["replay_perm"] = [e["hit_ratio"] for e in rp]
    pc["replay_repeats"] = [e["hit_ratio"] for e in rr]
    hitrows.append(("pagecache_bench", "Linux page cache, measured (bench --cache 0)",
                    ep[0], med(ep[1:]), None, None))
    hitrows.append(("pagecache_replay", "Linux page cache, measured (same orders)",
                    rp[0]["hit_ratio"], agg(rp[1:]), rr[0]["hit_ratio"], agg(rr[1:])))

# tests/perf/optref.c, sharing no code with the library: an upper bound on
# any policy's byte hit ratio, and the exact optimum by count, unit sizes.
opt_perm = hs["perm"]["bound"]["steady_bytes"]
opt_rep = hs["repeats"]["bound"]["steady_bytes"]
unit_rep = hs["repeats"]["dlcache_over_belady_unit_steady_count"]

# ---- targets -----------------------------------------------------------------
d_ips, d_cold = sysrows[0][2], sysrows[0][3]
dl_cold_mbs = med(r["epochs"][0]["bytes_read"] / r["epochs"][0]["seconds"] / 1e6 for r in dl)
sim_rep = hs["repeats"]["dlcache"]["steady_bytes"]


def target(name, value, want, unit="x", most=False):
    ok = value <= want if most else value >= want
    return {"target": name, "value": round(value, 4), "want": want, "met": ok,
            "margin": round(value - want, 4),
            "text": "%-58s %s  (%.3f%s vs %s %.3f%s: %+.1f%%)" % (
                name, "met   " if ok else "MISSED", value, unit, "<=" if most else ">=", want, unit,
                100.0 * (value / want - 1.0))}


targets = [
    target("dlcache >= 2.5x tuned PyTorch", d_ips / p_ips, 2.5),
    target("dlcache >= 0.97x crop-first decode limit", d_ips / crop, 0.97),
    target("MCU-exact decode >= 1.3x crop-first decode limit", mcu / crop, 1.3),
    target("dlcache on the pack >= 4.5x tuned PyTorch, cache = half", packrows[0][2] / p_ips, 4.5),
    target("pack size overhead <= 5 %", 100.0 * overhead, 5.0, unit="%", most=True),
    target("hit ratio, permutation: measured >= 0.99x upper bound", dl_steady_hit / opt_perm, 0.99),
    target("hit ratio, repeats: dlcache policy >= 0.99x upper bound", sim_rep / opt_rep, 0.99),
    target("hit count, repeats, unit sizes: dlcache >= 0.99x Belady", unit_rep, 0.99),
    target("cold epoch read MB/s >= 0.9x fio at depth 64", dl_cold_mbs / fio_mbs, 0.9),
    target("cold epoch >= 0.9x min(fio, checked crop-first limit) images/s", d_cold / min(fio_ips, crop_checked), 0.9),
]

# ---- report.json -------------------------------------------------------------
objs = []
for key, label, ips, c in sysrows:
    o = {"system": key, "label": label, "images_per_s": round(ips, 1),
         "ratio_to_pytorch": round(ips / p_ips, 3),
         "ratio_to_decode_limit": round(ips / full, 3),
         "ratio_to_crop_decode_limit": round(ips / crop, 3)}
    if c is not None:
        o["cold_images_per_s"] = round(c, 1)
    if key == "dlcache":
        o["hit_ratio"] = round(dl_steady_hit, 4)
        o["cold_read_mb_per_s"] = round(dl_cold_mbs, 1)
    if key == "storage_fio":
        o["mb_per_s"] = round(fio_mbs, 1)
    if key == "pytorch" and pc:
        o["hit_ratio_page_cache_full"] = "n/a: the whole set fits in RAM"
    objs.append(o)
for key, label, a, b, c, d in hitrows:
    o = {"system": "hits_" + key, "label": label}
    if a is not None:
        o["hit_ratio_perm_cold"] = round(a, 4)
    if b is not None:
        o["hit_ratio"] = o["hit_ratio_perm_steady"] = round(b, 4)
    if c is not None:
        o["hit_ratio_repeats_cold"] = round(c, 4)
    if d is not None:
        o["hit_ratio_repeats_steady"] = round(d, 4)
    objs.append(o)
with open(os.path.join(out, "report.json"), "w") as f:
    json.dump({"meta": meta, "systems": objs, "targets": targets,
               "page_cache": pc,
               "pack": {"bytes": pack_bytes, "overhead": round(overhead, 4), "seconds": pack_s,
                        "images_per_s": round(meta["dataset"]["images"] / pack_s, 1) if pack_s else None,
                        "summary": pack_info,
                        "systems": [{"system": k, "label": lb, "images_per_s": round(v, 1),
                                     "cold_images_per_s": None if c is None else round(c, 1)}
                                    for k, lb, v, c in packrows]},
               "photos": photo}, f, indent=1)

# ---- report.md -----------------------------------------------------------------
m = meta["machine"]
L = []
L.append("# make bench: %s" % m["date"])
L.append("")
L.append("Machine: %d cores (%s), %.1f GiB, %s, Linux %s." % (m["cores"], m["cpu"], m["mem_gib"], m["os"], m["kernel"]))
L.append("Data set: %s, %d generated ImageNet-like JPEGs, %.1f MB, mean %d bytes a file. "
         "Batch 64, RandomResizedCrop(224) + flip to uint8, %d epochs a run, %d rounds interleaved; "
         "medians of the rounds. Steady = median of epochs 2-%d; epoch 1 cold (page cache dropped)."
         % (meta["dataset"]["dir"], meta["dataset"]["images"], meta["dataset"]["bytes"] / 1e6,
            mean_file, meta["epochs"], meta["repeats"], meta["epochs"]))
L.append("")
L.append("## Throughput")
L.append("")
L.append("| system | images/s steady | epoch 1 cold | x PyTorch | x full decode | x crop-first |")
L.append("|---|---:|---:|---:|---:|---:|")
for key, label, ips, c in sysrows:
    L.append("| %s | %.0f | %s | %.2f | %.2f | %.2f |" % (label, ips, "%.0f" % c if c is not None else "-",
                                                       ips / p_ips, ips / full, ips / crop))
L.append("")
L.append("Storage: fio %.0f MB/s (randread bs=%s = mean file size rounded up to 4 KiB, io_uring, "
         "depth 64, O_DIRECT, cold, 10 s over the data set's files via --opendir, random file each I/O); "
         "dlcache's cold epoch read %.0f MB/s." % (fio_mbs, meta["fio_bs"], dl_cold_mbs))
L.append("")
L.append("## Packs: the same set as a .dlp, MCU-exact decode")
L.append("")
L.append("`dlcachectl pack` took %.1f s (%.0f images/s on %d cores); the pack is %.1f MB, %+.2f %% of the %.1f MB "
         "of JPEGs (restart markers and row tables against Huffman tables optimized per image, and alignment)."
         % (pack_s, meta["dataset"]["images"] / pack_s if pack_s else 0, m["cores"], pack_bytes / 1e6,
            100 * overhead, meta["dataset"]["bytes"] / 1e6))
L.append("")
L.append("| system | images/s steady | epoch 1 cold | x PyTorch | x crop-first |")
L.append("|---|---:|---:|---:|---:|")
for key, label, ips, c in packrows:
    L.append("| %s | %.0f | %s | %.2f | %.2f |" % (label, ips, "%.0f" % c if c is not None else "-",
                                                ips / p_ips, ips / crop))
L.append("")
if photo:
    L.append("Real photographs (%d of Debian's wallpapers, batch 16, 3 epochs, cache = whole; pack %.1f s):"
             % (photo["images"], photo["pack_s"]))
    L.append("")
    L.append("| system | images/s steady | epoch 1 cold | x PyTorch |")
    L.append("|---|---:|---:|---:|")
    pph = photo["rows"][2][1]
    for label, ips, c in photo["rows"]:
        L.append("| %s | %.1f | %s | %.2f |" % (label, ips, "%.1f" % c if c is not None else "-", ips / pph))
    L.append("")
L.append("## Hit ratios (cache = half the data set, %d epochs)" % meta["epochs"])
L.append("")
L.append("| policy | perm epoch 1 | perm steady | repeats epoch 1 | repeats steady |")
L.append("|---|---:|---:|---:|---:|")
f3 = lambda v: "-" if v is None else "%.3f" % v
for key, label, a, b, c, d in hitrows:
    L.append("| %s | %s | %s | %s | %s |" % (label, f3(a), f3(b), f3(c), f3(d)))
L.append("")
L.append("Byte hit ratios unless marked. perm: dlcache's own shuffles (dlc_order_fill, seed 0). repeats: "
         "each epoch %d draws with replacement, %d%% of the samples weighted %dx (half the accesses). "
         "References, independent of the library (tests/perf/optref.c): the upper bound on any "
         "policy's byte hits (a relaxation: capacity enforced at checkpoints and on average between "
         "them; capacity/size on the permutation), and Belady with bypass by count on unit sizes "
         "(capacity = %d samples of the mean size), the exact optimum for unit sizes; by bytes the "
         "optimum is NP-hard." % (
             meta["dataset"]["images"], hs["repeats_params"]["hot_pct"], hs["repeats_params"]["hot_weight"],
             hs["unit_capacity"]))
if pc:
    L.append("Page cache: %s = %d bytes (half the set + the process's peak RSS %d from a calibration run); "
             "bytes from disk = the process's block input (getrusage ru_inblock via /usr/bin/time %%I, and "
             "/proc/self/io read_bytes in the replay), hit = 1 - disk bytes / bytes requested. 'bench': "
             "`dlcachectl bench --backend inprocess --cache 0 --no-direct`, one process per epoch (seeds 0-3, "
             "so each epoch is a fresh shuffle; the cgroup keeps the cache between them); per epoch %s. "
             "'same orders': hitsim --replay reads the simulator's exact orders with read(), limit = half the set + its RSS %d. "
             "Bytes from disk include readahead and page rounding, so a cold epoch can come out below 0." % (
                 pc["cgroup"], pc["limit"], pc["rss"], ", ".join("%.3f" % v for v in pc["bench_epochs"]), pc["replay_rss"]))
L.append("")
L.append("## Targets")
L.append("")
L.append("```")
for t in targets:
    L.append(t["text"])
L.append("```")
L.append("")
perf = os.path.join(raw, "perf.txt")
if os.path.exists(perf) and os.path.getsize(perf):
    L.append("## perf record, dlcache bench (2 epochs, all threads), top symbols")
    L.append("")
    L.append("```")
    L.extend(l.rstrip() for l in open(perf).read().splitlines()[:25])
    L.append("```")
    comm = os.path.join(raw, "perf.comm.txt")
    if os.path.exists(comm):
        L.append("Symbols of the loader, the kernel and libc (percent of all samples):")
        L.append("```")
        L.extend(l.rstrip() for l in open(comm).read().splitlines()[:14])
        L.append("```")
    L.append("")
# The storage-bound section (storage.sh, run after this report's rounds).
storage_md = os.path.join(out, "storage.md")
if os.path.exists(storage_md):
    L.extend(open(storage_md).read().rstrip().splitlines())
# The decoded-forms section (forms.sh), likewise.
forms_md = os.path.join(out, "forms.md")
if os.path.exists(forms_md):
    L.append("")
    L.extend(open(forms_md).read().rstrip().splitlines())
    L.append("")
# The cluster section (cluster.sh), likewise.
cluster_md = os.path.join(out, "cluster.md")
if os.path.exists(cluster_md):
    L.append("")
    L.extend(open(cluster_md).read().rstrip().splitlines())
    L.append("")
# The skewed node (skew.py), likewise.
skew_md = os.path.join(out, "skew.md")
if os.path.exists(skew_md):
    L.append("")
    L.extend(open(skew_md).read().rstrip().splitlines())
    L.append("")
with open(os.path.join(out, "report.md"), "w") as f:
    f.write("\n".join(L) + "\n")

# ---- plot --------------------------------------------------------------------
with open(os.path.join(out, "bars.dat"), "w") as f:
    for key, label, ips, c in sysrows[:3]:
        f.write('"%s" %.1f %.1f\n' % (label.split(" (")[0].replace("PyTorch DataLoader, tuned", "PyTorch (tuned)"),
                                       ips, c))
with open(os.path.join(out, "hits.dat"), "w") as f:
    for key, label, a, b, c, d in hitrows:
        if key == "capacity_over_size":
            continue
        short = {"dlcache_measured": "dlcache\\n(measured)", "sim_dlcache": "dlcache\\n(sim)",
                 "sim_lru": "LRU", "sim_minio": "MinIO", "sim_bound": "upper\\nbound",
                 "sim_belady_unit": "optimum\\n(unit)", "sim_dlcache_unit": "dlcache\\n(unit)", "pagecache_bench": "pagecache\\n(bench)",
                 "pagecache_replay": "pagecache\\n(replay)"}[key]
        f.write('"%s" %s %s\n' % (short, "%.4f" % b if b is not None else "NaN",
                                  "%.4f" % d if d is not None else "NaN"))
ymax = max(max(r[2] for r in sysrows[:5]), max(r[3] for r in sysrows[:3])) * 1.25
# forms.sh's sweep, when it ran: images/s against the cache's size.
forms_dat = os.path.join(out, "forms.dat")
have_forms = os.path.exists(forms_dat)
forms_panel = """set autoscale y
set yrange [0:*]
set xtics auto font ",11"
set logscale x 2
set xrange [0.2:10]
set key top left
set style data linespoints
set xlabel "cache, x the encoded bytes"
set ylabel "images/s (steady epochs)"
set title "Decoded forms: the cache at several sizes"
plot "{f}" using 1:4 title "forms auto" lw 2 pt 7 lc rgb "#d62728", \\
     "" using 1:3 title "encoded only, exact" lw 2 pt 5 lc rgb "#1f77b4", \\
     "" using 1:2 title "encoded only, default" lw 2 pt 9 dt 2 lc rgb "#2ca02c"
""".format(f=forms_dat) if have_forms else ""
storage_on = fio_ips <= ymax
gp = """
set terminal pngcairo size {width},620 font "DejaVu Sans,11"
set output "{out}/report.png"
set multiplot layout 1,{panels}
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set key top right
set yrange [0:{ymax}]
set ylabel "images/s"
set title "Throughput, {n} images, {cores} cores (median of {rep})\\nstorage limit (fio, depth 64): {fio:.0f} images/s{off}"
plot "{out}/bars.dat" using 2:xtic(1) title "steady epochs" lc rgb "#1f77b4", \\
     "" using 3 title "epoch 1, cold" lc rgb "#aec7e8", \\
     {full} with lines lw 2 dt 2 lc rgb "#d62728" title "full decode limit ({full:.0f})", \\
     {crop} with lines lw 2 lc rgb "#2ca02c" title "crop-first decode limit ({crop:.0f})"{storage}
set yrange [0:1.05]
set ylabel "byte hit ratio (steady epochs)"
set key top left
set xtics font ",9"
set bmargin 4
set title "Hit ratio, cache = half the data set, {ep} epochs"
plot "{out}/hits.dat" using 2:xtic(1) title "permutation" lc rgb "#1f77b4", \\
     "" using 3 title "repeats (weighted, with replacement)" lc rgb "#ff7f0e", \\
     {cs} with lines lw 2 dt 2 lc rgb "#555555" title "capacity/size ({cs:.2f})"
{forms}unset multiplot
""".format(width=2200 if have_forms else 1500, panels=3 if have_forms else 2,
           forms=forms_panel,out=out, ymax=ymax, n=meta["dataset"]["images"], cores=m["cores"], rep=meta["repeats"],
           fio=fio_ips, off="" if storage_on else " (off the scale)", full=full, crop=crop,
           storage=(", \\\n     %f with lines lw 2 dt 3 lc rgb \"#9467bd\" title \"storage limit (%.0f)\"" % (fio_ips, fio_ips))
           if storage_on else "", ep=meta["epochs"], cs=hs["capacity_over_size"])
with open(os.path.join(out, "report.gp"), "w") as f:
    f.write(gp)
subprocess.run(["gnuplot", os.path.join(out, "report.gp")], check=True)
print("bench: wrote %s/report.md, report.json, report.png" % out, file=sys.stderr)
