# SPDX-License-Identifier: MIT
"""dlcache.prometheus.LoaderCollector: a DataLoader's stats() through
prometheus_client, read back by prometheus_client's own text parser (the
reference for the format), not by ours.

  - closed: after two epochs over a data set with two damaged files
    (on_error="skip"), the loader closed: every numeric stats() value is
    exported, equal, as dlcache_loader_<key>[_total] with the collector's
    labels; errors by kind carry a "kind" label; dlcache_loader_info
    names the backend and the device; every family has HELP and TYPE.
  - live: scraped mid-epoch, each counter lies between stats() before
    and after the scrape.
  - textfile: prometheus_client's write_to_textfile(), the node_exporter
    path, writes the same samples.
  - not_a_loader: a TypeError naming what was given.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlctest  # noqa: E402
from dlctest import check  # noqa: E402

try:
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client import write_to_textfile
    from prometheus_client.parser import text_string_to_metric_families
    from dlcache.prometheus import LoaderCollector, COUNTERS
except ImportError as ex:
    PROM = ex
else:
    PROM = None

from dlcache.torch import DataLoader  # noqa: E402

KW = dict(batch_size=8, size=32, seed=2, cache="1M", on_error="skip")
LABELS = dict(rank="0", job="prom-test")
SKIPPED = {"read_ns", "decode_ns", "wait_ns", "verify_ns", "io_busy_ns",
           "decode_starved_ns", "form_saved_ns"}


def need_prom():
    if PROM is not None:
        dlctest.skip_required("no prometheus_client (python3-prometheus-client): "
                              "%s" % PROM)


def metric(key):
    name = "dlcache_loader_" + (key[:-2] + "_seconds" if key.endswith("_s")
                                else key)
    return name + "_total" if key in COUNTERS else name


def scrape(loader):
    """{(sample name, labels): value} from the text, and the families."""
    reg = CollectorRegistry()
    reg.register(LoaderCollector(loader, **LABELS))
    text = generate_latest(reg).decode()
    fams = list(text_string_to_metric_families(text))
    out = {}
    for fam in fams:
        for s in fam.samples:
            if s.name.endswith("_created"):
                continue
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out, fams, text


def damage(root):
    """Two files of the data set cut short: errors of kind "truncated"."""
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root)
                   for f in fs if f.endswith(".jpg"))
    for p in files[3:5]:
        with open(p, "r+b") as f:
            f.truncate(os.path.getsize(p) // 3)


def closed(root):
    need_prom()
    loader = DataLoader(root, **KW)
    for e in range(2):
        loader.set_epoch(e)
        for _ in loader:
            pass
    loader.close()
    st = loader.stats()
    got, fams, _ = scrape(loader)
    for fam in fams:
        check(fam.type in ("counter", "gauge") and fam.documentation,
              "%s: type %r, help %r" % (fam.name, fam.type, fam.documentation))
    lab = frozenset(LABELS.items())
    n = 0
    for key, v in st.items():
        if key in SKIPPED or isinstance(v, (str, dict)):
            continue
        name = metric(key)
        check((name, lab) in got, "%s (stats()[%r]) is not exported" % (name, key))
        check(got[(name, lab)] == float(v), "%s: %r, stats() says %r"
              % (name, got[(name, lab)], v))
        n += 1
    check(st["errors_by_kind"], "no errors: the damaged files were read?")
    for kind, v in st["errors_by_kind"].items():
        k = frozenset(dict(LABELS, kind=kind).items())
        check(got.get(("dlcache_loader_errors_by_kind_total", k)) == v,
              "errors of kind %s: %r exported, %d in stats()"
              % (kind, got.get(("dlcache_loader_errors_by_kind_total", k)), v))
    info = frozenset(dict(LABELS, backend=st["backend"],
                          device=st["device"]).items())
    check(got.get(("dlcache_loader_info", info)) == 1.0,
          "no dlcache_loader_info with the backend and device")
    print("  %d values of stats() exported and equal; errors by kind %s"
          % (n, st["errors_by_kind"]))


def live(root):
    need_prom()
    loader = DataLoader(root, **KW)
    lab = frozenset(LABELS.items())
    for i, _ in enumerate(loader):
        if i == 3:
            before = loader.stats()
            got, _, _ = scrape(loader)
            after = loader.stats()
            for key in COUNTERS:
                if key not in before:
                    continue
                v = got[(metric(key), lab)]
                check(float(before[key]) <= v <= float(after[key]),
                      "%s: %r, not within stats() before (%r) and after (%r)"
                      % (key, v, before[key], after[key]))
    loader.close()


def textfile(root, tmp):
    need_prom()
    loader = DataLoader(root, **KW)
    for _ in loader:
        pass
    loader.close()
    reg = CollectorRegistry()
    reg.register(LoaderCollector(loader, **LABELS))
    path = os.path.join(tmp, "dlcache.prom")
    write_to_textfile(path, reg)
    with open(path) as f:
        text = f.read()
    _, _, want = scrape(loader)
    check(text == want, "write_to_textfile wrote other text than a scrape")
    check("dlcache_loader_batches_total{" in text, "no batches in the file")


def not_a_loader():
    need_prom()
    try:
        LoaderCollector(object())
    except TypeError as e:
        check("object" in str(e), "the error does not say what it got: %s" % e)
    else:
        check(False, "LoaderCollector(object()) was accepted")


def main():
    tmp = dlctest.scratch("prometheus")
    root = dlctest.gen_dataset(os.path.join(tmp, "ds"), images=64, classes=2,
                               seed=5)
    damage(root)
    dlctest.run("closed", closed, root)
    dlctest.run("live", live, root)
    dlctest.run("textfile", textfile, root, tmp)
    dlctest.run("not_a_loader", not_a_loader)
    dlctest.done()


if __name__ == "__main__":
    main()
