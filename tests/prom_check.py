#!/usr/bin/python3
"""Check `dlcachectl stats --prometheus` against `stats --json`.

    prom_check.py module|staging PROM_FILE JSON_FILE [JSON_AFTER]

PROM_FILE is parsed by prometheus_client's own parser (Debian's
python3-prometheus-client: the reference, not ours), which refuses
malformed text; every family must carry a HELP and a TYPE, and every
value the JSON of the same moment has must be the one exported, with the
labels that name its data set. The two are two reads: with JSON_AFTER,
the JSON read again right after the text, each exported value must lie
between its two JSON readings (an idle data set's idle seconds go on
counting between them, on a slow guest past a second). Prints
"FAIL: ..." lines and exits 1 on a mismatch, 0 when all agree, 77 when
prometheus_client is missing.
"""
import json
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print("no prometheus_client (python3-prometheus-client)")
    sys.exit(77)

# JSON member -> exported sample name, for the module's counters.
COUNTERS = {
    "hits": "hits_total", "hit_bytes": "hit_bytes_total",
    "misses": "misses_total", "miss_bytes": "miss_bytes_total",
    "inserts": "inserts_total", "insert_bytes": "insert_bytes_total",
    "bypasses": "bypasses_total", "bypass_bytes": "bypass_bytes_total",
    "evictions": "evictions_total", "eviction_bytes": "eviction_bytes_total",
    "shrinker_evictions": "shrinker_evictions_total",
    "waits": "waits_total", "aborts": "aborts_total",
    "errors": "errors_total", "cached_samples": "cached_samples",
    "fills_inflight": "fills_inflight", "used_bytes": "used_bytes",
}
DATASET = {"nsamples": "samples", "attached": "attached",
           "consumers": "consumers"}
STAGING = {
    "copies": "copies", "bytes": "bytes", "memory_hits": "memory_hits_total",
    "staging_hits": "hits_total", "origin_reads": "origin_reads_total",
    "staging_hit_bytes": "hit_bytes_total",
    "origin_bytes": "origin_bytes_total", "prefetched": "prefetched_total",
    "prefetch_bytes": "prefetch_bytes_total", "writes": "writes_total",
    "evictions": "evictions_total", "invalid": "invalid_total",
}

fails = []


def parse(text):
    """{(sample name, frozen labels): value}, and the families' checks."""
    samples = {}
    for fam in text_string_to_metric_families(text):
        if fam.type not in ("counter", "gauge"):
            fails.append(f"{fam.name}: type {fam.type!r} (no # TYPE line?)")
        if not fam.documentation:
            fails.append(f"{fam.name}: no # HELP line")
        for s in fam.samples:
            if s.name.endswith("_created"):
                continue
            key = (s.name, frozenset(s.labels.items()))
            if key in samples:
                fails.append(f"{s.name}{s.labels}: twice")
            samples[key] = s.value
    return samples


def expect(samples, name, labels, want, want_after):
    """The sample must lie between the JSON's two readings (equal to the
    one reading without JSON_AFTER)."""
    got = samples.get((name, frozenset(labels.items())))
    lo, hi = min(want, want_after), max(want, want_after)
    said = f"{want}" if lo == hi else f"{want}, then {want_after}"
    if got is None:
        fails.append(f"{name}{labels}: missing, want {said}")
    elif not lo <= got <= hi:
        fails.append(f"{name}{labels}: {got:.0f}, the JSON says {said}")


def pairs(before, after, key):
    """(entry before, the same entry after) of two readings' lists, by
    key; an entry gone from the second reading is a failure."""
    later = {key(e): e for e in after}
    for e in before:
        if key(e) in later:
            yield e, later[key(e)]
        else:
            fails.append(f"{key(e)}: in the first JSON reading, not the second")


def module(samples, j, j2):
    expect(samples, "dlcache_capacity_bytes", {}, j["capacity_bytes"],
           j2["capacity_bytes"])
    expect(samples, "dlcache_datasets", {}, j["datasets"], j2["datasets"])
    for k, v in COUNTERS.items():
        if k == "used_bytes":
            expect(samples, "dlcache_" + v, {}, j[k], j2[k])
        else:
            expect(samples, "dlcache_" + v, {}, j["global"][k],
                   j2["global"][k])
    for d, d2 in pairs(j["per_dataset"], j2["per_dataset"],
                       lambda d: (d["key"], d["owner_uid"], d["form"])):
        lab = {"dataset": d["key"], "owner_uid": str(d["owner_uid"]),
               "form": str(d["form"])}
        for k, v in list(COUNTERS.items()) + list(DATASET.items()):
            expect(samples, "dlcache_dataset_" + v, lab, d[k], d2[k])
        expect(samples, "dlcache_dataset_idle_seconds", lab,
               d["idle_s"] if d["idle"] else 0,
               d2["idle_s"] if d2["idle"] else 0)
    return len(j["per_dataset"])


def staging(samples, j, j2):
    for d, d2 in pairs(j["datasets"], j2["datasets"],
                       lambda d: (d["user"], d["key"])):
        lab = {"dir": j["staging_dir"], "user": d["user"],
               "dataset": d["key"]}
        for k, v in STAGING.items():
            expect(samples, "dlcache_staging_" + v, lab, d[k], d2[k])
    return len(j["datasets"])


def main():
    kind, prom, js = sys.argv[1:4]
    with open(prom) as f:
        text = f.read()
    with open(js) as f:
        j = json.load(f)
    j2 = j
    if len(sys.argv) > 4:
        with open(sys.argv[4]) as f:
            j2 = json.load(f)
    try:
        samples = parse(text)
    except ValueError as ex:
        print(f"FAIL: prometheus_client refuses the text: {ex}")
        return 1
    n = (module if kind == "module" else staging)(samples, j, j2)
    for f in fails[:10]:
        print("FAIL: " + f)
    print(f"{len(samples)} samples, {n} data sets, {len(fails)} mismatches")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
