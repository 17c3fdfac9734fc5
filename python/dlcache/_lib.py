# SPDX-License-Identifier: MIT
"""ctypes declarations of libdlcache.so: its structs and functions.

One layer only: the C ABI as Python sees it, nothing more. The structs
mirror libdlcache/include/dlcache.h field by field (tests/python/test_abi.py
compares every offset with the C compiler's); the functions return the
library's -errno values unchanged.

The library is found, in order, at $DLCACHE_LIB, at the path that
`make python` / `make install` / setup.py recorded in _libpath.py, then by
the dynamic loader's search ("libdlcache.so.0").
"""

import ctypes
import os

c_u8p = ctypes.POINTER(ctypes.c_uint8)

LOG_ERROR, LOG_WARN, LOG_INFO = 0, 1, 2
LAYOUT_NCHW, LAYOUT_NHWC = 0, 1
TRANSFORM_TRAIN, TRANSFORM_EVAL = 0, 1
TRANSFORM_F_EXACT = 1
ON_ERROR = {"skip": 0, "substitute": 1, "fail": 2}
BACKEND = {"auto": 0, "inprocess": 1, "kernel": 2}
CLUSTER_MPI = 1
# dlc_config.read_timeout_ms: the longest the library accepts (1 hour)
READ_TIMEOUT_MAX_MS = 3600000
ERR_KINDS = 9
OWNER_SELF = 0xFFFFFFFF
READAHEAD_OFF = 0xFFFFFFFFFFFFFFFF
READAHEAD_MAX = 1 << 40
PASSTHRU_AUTO = 0          # dlc_config.nvme_passthru
PASSTHRU_OFF = 1
CONFIG_SIZE_VER0 = 172

LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)


class Transform(ctypes.Structure):
    _fields_ = [
        ("kind", ctypes.c_uint32),
        ("out_w", ctypes.c_uint32),
        ("out_h", ctypes.c_uint32),
        ("resize", ctypes.c_uint32),
        ("scale_min", ctypes.c_float),
        ("scale_max", ctypes.c_float),
        ("ratio_min", ctypes.c_float),
        ("ratio_max", ctypes.c_float),
        ("hflip", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
    ]


class Config(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_uint32),
        ("batch_size", ctypes.c_uint32),
        ("layout", ctypes.c_uint32),
        ("transform", Transform),
        ("seed", ctypes.c_uint64),
        ("shuffle", ctypes.c_uint32),
        ("drop_last", ctypes.c_uint32),
        ("rank", ctypes.c_uint32),
        ("world", ctypes.c_uint32),
        ("decode_threads", ctypes.c_uint32),
        ("queue_depth", ctypes.c_uint32),
        ("window", ctypes.c_uint32),
        ("nbatches", ctypes.c_uint32),
        ("on_error", ctypes.c_uint32),
        ("backend", ctypes.c_uint32),
        ("cache_bytes", ctypes.c_uint64),
        ("max_pixels", ctypes.c_uint64),
        ("max_file_bytes", ctypes.c_uint64),
        ("direct_io", ctypes.c_uint32),
        ("max_read_bytes", ctypes.c_uint32),
        ("log", LOG_FN),
        ("log_arg", ctypes.c_void_p),
        ("log_level", ctypes.c_uint32),
        ("kernel_mode", ctypes.c_uint32),
        ("kernel_owner_uid", ctypes.c_uint32),
        ("verify", ctypes.c_uint32),
        ("pad", ctypes.c_uint32),
        # end of DLC_CONFIG_SIZE_VER0
        ("shard_drop_last", ctypes.c_uint32),
        ("validate", ctypes.c_uint32),
        ("kernel_fallback", ctypes.c_uint32),
        ("readahead_bytes", ctypes.c_uint64),
        ("epochs", ctypes.c_uint32),
        ("nvme_passthru", ctypes.c_uint32),
        ("staging_dir", ctypes.c_char_p),
        ("staging_bytes", ctypes.c_uint64),
        ("cluster", ctypes.c_uint32),
        ("peer_timeout_ms", ctypes.c_uint32),
        ("max_scans", ctypes.c_uint32),
        ("decode_budget_ms", ctypes.c_uint32),
        ("read_timeout_ms", ctypes.c_uint32),
        ("pad2", ctypes.c_uint32),
        # end of DLC_CONFIG_SIZE_VER1
        ("node_group", ctypes.c_char_p),
        ("forms", ctypes.c_uint32),
        ("pad3", ctypes.c_uint32),
    ]


class Batch(ctypes.Structure):
    _fields_ = [
        ("seq", ctypes.c_uint64),
        ("epoch", ctypes.c_uint32),
        ("count", ctypes.c_uint32),
        ("data", c_u8p),
        ("labels", ctypes.POINTER(ctypes.c_int32)),
        ("ids", ctypes.POINTER(ctypes.c_uint32)),
        ("layout", ctypes.c_uint32),
        ("out_w", ctypes.c_uint32),
        ("out_h", ctypes.c_uint32),
        ("errors", ctypes.c_uint32),
        ("reserved", ctypes.c_uint64 * 4),
    ]


STATS_FIELDS = [
    "hits", "misses", "hit_bytes", "miss_bytes", "evictions", "bypasses",
    "cache_used", "cache_capacity",
    "reads", "bytes_read", "short_reads", "retries", "read_ns", "direct_reads",
    "decoded", "decode_ns", "io_thread_decodes",
    "batches", "wait_ns",
    "errors", "errors_by_kind", "substituted", "skipped",
    "verified", "verify_ns", "checksum_errors",
    "validated", "kernel_fallbacks",
    "io_busy_ns", "reads_inflight",
    "readahead_reads", "readahead_used", "readahead_dropped",
    "readahead_held", "readahead_budget", "passthru_reads",
    "staging_hits", "staging_hit_bytes", "staging_writes",
    "staging_prefetched", "staging_prefetch_bytes", "staging_evictions",
    "staging_invalid", "staging_used", "staging_budget",
    "cluster_local_hits", "cluster_local_bytes", "cluster_peer_hits",
    "cluster_peer_bytes", "cluster_peer_misses", "cluster_peer_failures",
    "cluster_peer_busy", "cluster_served", "cluster_served_hits",
    "cluster_served_bytes", "cluster_pushed", "cluster_pushed_bytes",
    "cluster_admitted", "cluster_used", "cluster_capacity",
    "cluster_dead_peers", "cluster_peer_diverted",
    "node_guest_decodes", "node_guest_threads", "node_borrowed_cpus",
    "node_guest_reclaimed", "decode_starved_ns",
    "form_hits", "forms_made", "forms_refused", "forms_held", "forms_bytes",
    "form_saved_ns", "forms_regime",
    "cluster_backup_asked", "cluster_backup_hits", "cluster_backup_used",
    "forms_displaced",
    "cluster_prepared", "cluster_prepared_served", "cluster_prepare_late",
]


class Stats(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64 * ERR_KINDS if n == "errors_by_kind"
                 else ctypes.c_uint64) for n in STATS_FIELDS]


class ErrorInfo(ctypes.Structure):
    _fields_ = [
        ("sample", ctypes.c_uint32),
        ("kind", ctypes.c_uint32),
        ("err", ctypes.c_int),
        ("pad", ctypes.c_uint32),
        ("path", ctypes.c_char * 512),
        ("msg", ctypes.c_char * 256),
    ]


# name: (restype, argtypes). Index and loader handles are opaque pointers.
_P = ctypes.c_void_p
_PROTOS = {
    "dlc_index_build": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(_P)]),
    "dlc_index_load": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(_P)]),
    "dlc_index_load_at": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p,
                                         ctypes.POINTER(_P)]),
    "dlc_index_free": (None, [_P]),
    "dlc_index_count": (ctypes.c_uint32, [_P]),
    "dlc_index_num_classes": (ctypes.c_uint32, [_P]),
    "dlc_index_root": (ctypes.c_char_p, [_P]),
    "dlc_index_class_name": (ctypes.c_char_p, [_P, ctypes.c_uint32]),
    "dlc_index_relpath": (ctypes.c_char_p, [_P, ctypes.c_uint32]),
    "dlc_index_label": (ctypes.c_int32, [_P, ctypes.c_uint32]),
    "dlc_index_total_bytes": (ctypes.c_uint64, [_P]),
    "dlc_index_key": (None, [_P, ctypes.c_uint64 * 2]),
    "dlc_transform_default": (None, [ctypes.POINTER(Transform), ctypes.c_uint32]),
    "dlc_transform_check": (ctypes.c_int, [ctypes.POINTER(Transform),
                                           ctypes.POINTER(ctypes.c_char_p)]),
    "dlc_error_kind_name": (ctypes.c_char_p, [ctypes.c_uint32]),
    "dlc_backend_name": (ctypes.c_char_p, [ctypes.c_uint32]),
    "dlc_config_init": (None, [ctypes.POINTER(Config)]),
    "dlc_loader_create": (ctypes.c_int, [ctypes.POINTER(Config), _P,
                                         ctypes.POINTER(_P)]),
    "dlc_loader_start_epoch": (ctypes.c_int, [_P, ctypes.c_uint32,
                                              ctypes.c_uint32]),
    "dlc_loader_resume_epoch": (ctypes.c_int, [_P, ctypes.c_uint32,
                                               ctypes.c_uint64]),
    "dlc_loader_epoch_samples": (ctypes.c_uint32, [_P]),
    "dlc_loader_epoch_batches": (ctypes.c_uint32, [_P]),
    "dlc_loader_decode_threads": (ctypes.c_uint32, [_P]),
    "dlc_next_batch": (ctypes.c_int, [_P, ctypes.POINTER(ctypes.POINTER(Batch))]),
    "dlc_next_batch_timeout": (ctypes.c_int, [
        _P, ctypes.POINTER(ctypes.POINTER(Batch)), ctypes.c_uint64]),
    "dlc_release_batch": (ctypes.c_int, [_P, ctypes.POINTER(Batch)]),
    "dlc_release_batch_keep": (ctypes.c_int, [
        _P, ctypes.POINTER(Batch), ctypes.POINTER(ctypes.c_void_p),
        ctypes.POINTER(ctypes.c_size_t)]),
    "dlc_batch_data_free": (None, [ctypes.c_void_p, ctypes.c_size_t]),
    "dlc_loader_destroy": (None, [_P]),
    "dlc_loader_backend": (ctypes.c_uint32, [_P]),
    "dlc_loader_pinned": (ctypes.c_int, [_P]),
    "dlc_loader_hugepages": (ctypes.c_int, [_P]),
    "dlc_loader_last_error": (ctypes.c_int, [_P, ctypes.POINTER(ErrorInfo)]),
    "dlc_loader_stats": (ctypes.c_int, [_P, ctypes.POINTER(Stats),
                                        ctypes.c_size_t]),
}


def _candidates():
    env = os.environ.get("DLCACHE_LIB")
    if env:
        return [env]
    out = []
    try:
        from . import _libpath
        out.append(_libpath.LIBDLCACHE)
    except ImportError:
        pass
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "libdlcache.so.0")
    if os.path.exists(here):
        out.append(here)
    out.append("libdlcache.so.0")
    return out


def _load():
    errors = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            errors.append("%s: %s" % (path, e))
            continue
        missing = [n for n in _PROTOS if not hasattr(lib, n)]
        if missing:
            # An older libdlcache: without dlc_release_batch_keep() a kept
            # tensor could be overwritten, so refuse it outright.
            errors.append("%s: too old, lacks %s" % (path, ", ".join(missing)))
            continue
        for name, (res, args) in _PROTOS.items():
            fn = getattr(lib, name)
            fn.restype = res
            fn.argtypes = args
        return lib, path
    raise ImportError("dlcache: cannot load libdlcache.so (build it with "
                      "'make python', or set DLCACHE_LIB): " + "; ".join(errors))


lib, path = _load()
