# SPDX-License-Identifier: MIT
"""A loader's stats() for Prometheus, through prometheus_client.

    from prometheus_client import REGISTRY, start_http_server
    from dlcache.prometheus import LoaderCollector

    REGISTRY.register(LoaderCollector(loader, rank="0"))
    start_http_server(9400)         # or write_to_textfile() on a timer

Every scrape reads loader.stats() once (dlcache.torch.DataLoader or the
loader under it; after close(), the counters at close). Counters are
dlcache_loader_<name>_total, gauges dlcache_loader_<name>, times in
seconds; errors by kind carry a "kind" label, and
dlcache_loader_info{backend, device} is 1. The keyword arguments are
labels on every sample (a rank, a job name). Documentation/python.md
lists the names.
"""

try:
    from prometheus_client.core import (CounterMetricFamily,
                                        GaugeMetricFamily)
except ImportError as ex:  # pragma: no cover: said plainly
    raise ImportError("dlcache.prometheus needs prometheus_client "
                      "(pip install prometheus-client, or Debian's "
                      "python3-prometheus-client)") from ex

# stats() keys that go up only, as counters, with their help.
COUNTERS = {
    "hits": "samples served from the cache",
    "misses": "samples read from storage",
    "hit_bytes": "bytes served from the cache",
    "miss_bytes": "bytes of the samples read from storage",
    "evictions": "samples dropped from the cache to make room",
    "bypasses": "misses not admitted (next use too far)",
    "reads": "read requests completed",
    "bytes_read": "bytes read from storage",
    "short_reads": "reads resubmitted for the rest",
    "retries": "EINTR or EAGAIN resubmissions",
    "direct_reads": "reads made with O_DIRECT",
    "decoded": "samples decoded",
    "io_thread_decodes": "decodes the I/O thread took on",
    "batches": "batches handed out",
    "errors": "failed samples, all kinds",
    "substituted": "failed samples replaced by another",
    "skipped": "failed samples left out",
    "verified": "samples checked against the index's CRC-32C",
    "checksum_errors": "samples whose CRC-32C did not match",
    "validated": "decodes that checked the whole file",
    "kernel_fallbacks": "switches from dlcache.ko to the in-process cache",
    "readahead_reads": "samples read ahead of their claim",
    "readahead_used": "samples read ahead that the pipeline claimed",
    "readahead_dropped": "samples read ahead and dropped unused",
    "passthru_reads": "NVMe Read commands sent through io_uring passthrough",
    "staging_hits": "samples read from a staged copy",
    "staging_hit_bytes": "bytes read from staged copies",
    "staging_writes": "staged copies written",
    "staging_prefetched": "staged copies read from the origin ahead of use",
    "staging_prefetch_bytes": "bytes the stager read from the origin",
    "staging_evictions": "staged copies removed for a sooner use",
    "staging_invalid": "staged copies found stale, torn or corrupt",
    "cluster_local_hits": "samples this rank owns, from its share",
    "cluster_local_bytes": "bytes this rank's share served it",
    "cluster_peer_hits": "samples a peer sent",
    "cluster_peer_bytes": "bytes peers sent",
    "cluster_peer_misses": "requests to a peer that did not hold the sample",
    "cluster_peer_failures": "requests to a peer that timed out or sent bad bytes",
    "cluster_peer_busy": "samples not asked of a peer: every slot taken",
    "cluster_served": "requests of peers this rank answered",
    "cluster_served_hits": "peer requests answered with the sample's bytes",
    "cluster_served_bytes": "bytes sent to peers",
    "cluster_pushed": "storage reads sent to their owner",
    "cluster_pushed_bytes": "bytes of storage reads sent to their owner",
    "cluster_admitted": "samples this rank's share took in",
    "cluster_peer_diverted": "samples sent to storage: the owner a straggler, storage sooner",
    "cluster_backup_asked": "samples asked of their backup rank: the owner a straggler",
    "cluster_backup_hits": "samples a backup rank sent",
    "cluster_prepared": "samples their owner sent prepared (no decode here)",
    "cluster_prepared_served": "answers this rank prepared for peers",
    "cluster_prepare_late": "requests welcoming a prepared answer answered encoded",
    "node_guest_decodes": "samples guest threads decoded on the node group's other CPUs",
    "node_guest_reclaimed": "samples a starved guest held that the loader's own threads took back",
    "decode_starved_s": "seconds decoders waited for samples still being read, summed",
    "form_hits": "samples served from a decoded form (a resize, no decode)",
    "forms_made": "decoded forms made (a whole decode at scale 1)",
    "forms_refused": "decoded forms made that the cache did not take",
    "forms_displaced": "pinned decoded forms let go for a form worth twice the decode per byte",
    "form_saved_s": "seconds of decode the decoded forms saved",
    "kept_batches": "batches the consumer kept past the next one",
    "read_s": "seconds from submit to completion of reads, summed",
    "decode_s": "seconds in decode, summed over threads",
    "wait_s": "seconds the consumer waited for a batch",
    "verify_s": "seconds computing checksums, summed",
    "io_busy_s": "seconds with at least one read in flight",
}
# stats() keys that are levels now, as gauges.
GAUGES = {
    "cache_used": "bytes the cache holds now",
    "cache_capacity": "the cache's capacity in bytes",
    "reads_inflight": "reads in flight now",
    "readahead_held": "bytes read ahead or in flight now",
    "readahead_budget": "the read-ahead budget now in bytes, 0 when off",
    "staging_used": "bytes the staged copies hold now",
    "staging_budget": "the staging budget in bytes",
    "cluster_used": "bytes this rank's share holds",
    "cluster_capacity": "this rank's share's capacity in bytes",
    "cluster_dead_peers": "peers given up on",
    "cluster_backup_used": "bytes this rank holds as the backup of stragglers' samples",
    "node_guest_threads": "guest decode threads running (node sharing)",
    "node_borrowed_cpus": "CPUs of the node group the guests may run on now",
    "forms_held": "decoded forms the cache holds now",
    "forms_bytes": "bytes of the decoded forms the cache holds now",
    "forms_regime": "what the cache keeps now: 0 none yet, 1 decoded forms, 2 encoded bytes",
    "decode_threads": "decode threads",
    "hugepages": "batch buffers on huge pages",
    "pinned": "1 when the batch buffers are pinned",
    "kept_bytes": "bytes of batches the consumer keeps now",
}
# The *_ns keys repeat the *_s ones.
SKIP = {"read_ns", "decode_ns", "wait_ns", "verify_ns", "io_busy_ns",
        "decode_starved_ns", "form_saved_ns",
        "errors_by_kind", "backend", "device"}


def _name(key):
    """A stats() key as a metric name: *_s are seconds."""
    if key.endswith("_s"):
        key = key[:-2] + "_seconds"
    return "dlcache_loader_" + key


class LoaderCollector:
    """Yields a loader's stats() as metric families at each collect()."""

    def __init__(self, loader, **labels):
        if not callable(getattr(loader, "stats", None)):
            raise TypeError("LoaderCollector wants a dlcache loader (an "
                            "object with stats()), not %r"
                            % type(loader).__name__)
        self.loader = loader
        self.labels = {str(k): str(v) for k, v in labels.items()}

    def describe(self):
        # Names only, so that registering does not read the counters.
        return []

    def collect(self):
        st = self.loader.stats()
        names = list(self.labels)
        values = [self.labels[n] for n in names]
        for key, v in st.items():
            if key in SKIP or not isinstance(v, (int, float)):
                continue
            if key in COUNTERS:
                fam = CounterMetricFamily(_name(key), COUNTERS[key],
                                          labels=names)
            else:
                fam = GaugeMetricFamily(_name(key), GAUGES.get(
                    key, "stats()[%r] (Documentation/python.md)" % key),
                    labels=names)
            fam.add_metric(values, float(v))
            yield fam
        fam = CounterMetricFamily("dlcache_loader_errors_by_kind",
                                  "failed samples by kind",
                                  labels=names + ["kind"])
        for kind, n in sorted(st.get("errors_by_kind", {}).items()):
            fam.add_metric(values + [kind], float(n))
        yield fam
        fam = GaugeMetricFamily("dlcache_loader_info",
                                "the loader's backend and device; 1",
                                labels=names + ["backend", "device"])
        fam.add_metric(values + [str(st.get("backend", "")),
                                 str(st.get("device", ""))], 1.0)
        yield fam
