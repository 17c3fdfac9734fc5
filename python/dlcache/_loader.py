# SPDX-License-Identifier: MIT
"""The C loader as a Python object: index, config, batches, lifetime.

Torch-free: batches come out as RawBatch objects whose pixels are a ctypes
array over the ring slot (zero copy). Whoever wraps that array (a torch
tensor, a numpy array) holds a reference to it, and that reference is how
this layer knows the memory is still in use:

  * release(batch) gives the slot back to the ring when nothing but the
    RawBatch refers to the array, and otherwise calls
    dlc_release_batch_keep(): the memory leaves the ring, the ring gets a
    fresh buffer for that slot, and the memory is unmapped when the last
    reference to the array goes. A kept tensor is never overwritten.
  * close() does the same for every batch still held, then destroys the C
    loader (its threads stop); kept memory outlives it.

A process forked after the loader was made has none of its threads: any use
there raises ForkedLoaderError instead of waiting for batches that cannot
come, and nothing is freed there.
"""

import ctypes
import errno
import logging
import os
import re
import sys
import weakref

from . import _lib
from .errors import DataLoaderError, ForkedLoaderError, oserror

lib = _lib.lib
log = logging.getLogger("dlcache")

# How long one dlc_next_batch_timeout() waits before Python looks for
# signals (Ctrl-C) again.
_WAIT_SLICE_NS = 100 * 1000 * 1000

# ---- library log lines to the "dlcache" logger ------------------------------

_sinks = {}
_next_sink = [1]
_LEVELS = {_lib.LOG_ERROR: logging.ERROR, _lib.LOG_WARN: logging.WARNING,
           _lib.LOG_INFO: logging.INFO}


class _Sink:
    """Where one loader's log lines go; remembers the last error line."""

    def __init__(self):
        self.last_error = None
        self.id = _next_sink[0]
        _next_sink[0] += 1
        _sinks[self.id] = self


def _log_cb(arg, level, msg):
    text = msg.decode("utf-8", "replace")
    sink = _sinks.get(arg or 0)
    if sink is not None and level == _lib.LOG_ERROR:
        sink.last_error = text
    log.log(_LEVELS.get(level, logging.INFO), "%s", text)


_log_fn = _lib.LOG_FN(_log_cb)


def _parse_size(v):
    if isinstance(v, int):
        return v
    s = str(v).strip().upper().rstrip("B").rstrip("I")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    if s and s[-1] in mult:
        return int(float(s[:-1]) * mult[s[-1]])
    return int(s)


def _local_world():
    """Processes of this job on this node: $LOCAL_WORLD_SIZE (torchrun,
    torch.distributed.launch), else 1."""
    try:
        return max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    except ValueError:
        return 1


def _mem_available():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _unlistable(root):
    """The directory of ImageFolder @root (a class, or @root itself) that
    cannot be listed: what an EACCES from indexing @root is about."""
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return root
    for n in names:
        p = os.path.join(root, n)
        if os.path.isdir(p) and not os.access(p, os.R_OK | os.X_OK):
            return p
    return root


class Index:
    """A data set: an ImageFolder root (indexed now) or an index file."""

    def __init__(self, source, root=None):
        h = ctypes.c_void_p()
        src = os.fspath(source)
        if os.path.isdir(src):
            what = "index ImageFolder root"
            rc = lib.dlc_index_build(src.encode(), ctypes.byref(h))
        elif root is not None:
            what = "load index file"
            rc = lib.dlc_index_load_at(src.encode(), os.fspath(root).encode(),
                                       ctypes.byref(h))
        else:
            what = "load index file"
            rc = lib.dlc_index_load(src.encode(), ctypes.byref(h))
        if rc == -errno.ENODATA:
            raise FileNotFoundError(errno.ENOENT,
                                    "%s: no class holds a sample" % what, src)
        if rc == -errno.EBADMSG:
            raise ValueError("%s: %s is not a valid dlcache index file"
                             % (what, src))
        if rc == -errno.EACCES and os.path.isdir(src):
            src = _unlistable(src)
        if rc < 0:
            raise oserror(rc, what, src)
        self.handle = h
        self._finalizer = weakref.finalize(self, lib.dlc_index_free, h)

    def __len__(self):
        return lib.dlc_index_count(self.handle)

    @property
    def root(self):
        return lib.dlc_index_root(self.handle).decode()

    @property
    def classes(self):
        n = lib.dlc_index_num_classes(self.handle)
        return [lib.dlc_index_class_name(self.handle, c).decode()
                for c in range(n)]

    def relpath(self, i):
        p = lib.dlc_index_relpath(self.handle, i)
        return p.decode() if p is not None else None

    def label(self, i):
        return lib.dlc_index_label(self.handle, i)

    @property
    def total_bytes(self):
        return lib.dlc_index_total_bytes(self.handle)

    @property
    def key(self):
        k = (ctypes.c_uint64 * 2)()
        lib.dlc_index_key(self.handle, k)
        return "%016x%016x" % (k[0], k[1])


class RawBatch:
    """One batch handed out by the C loader, until released.

    ``pixels``: a ctypes uint8 array over the slot (count x 3 x H x W bytes
    in the loader's layout); ``labels`` and ``ids``: copies, as lists of
    int.
    """

    __slots__ = ("ptr", "seq", "count", "pixels", "labels", "ids", "out_w",
                 "out_h", "__weakref__")


def _epochs(epochs):
    """DataLoader's epochs= as dlc_config.epochs (0: not known)."""
    if epochs is None:
        return 0
    if (isinstance(epochs, bool) or not isinstance(epochs, int)
            or not 1 <= epochs <= 0xffffffff):
        raise ValueError("epochs must be None (not known) or the number of "
                         "epochs the job runs, an int >= 1, got %r"
                         % (epochs,))
    return epochs


def _readahead_bytes(readahead):
    """DataLoader's readahead= as dlc_config.readahead_bytes."""
    if readahead is None:
        return 0			# the library's default
    if readahead == "off" or readahead == 0:
        return _lib.READAHEAD_OFF
    try:
        nbytes = _parse_size(readahead)
    except (TypeError, ValueError):
        nbytes = -1
    if isinstance(readahead, bool) or not 0 < nbytes <= _lib.READAHEAD_MAX:
        raise ValueError("readahead must be None (the default), 'off', or a "
                         "byte size up to 1T such as 256M, got %r"
                         % (readahead,))
    return nbytes


def _seconds_ms(name, value, max_ms):
    """@value seconds (None: the library's default) as milliseconds."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not 0.001 <= value <= max_ms / 1000:
        raise ValueError("%s must be seconds in 0.001 .. %g, got %r"
                         % (name, max_ms / 1000, value))
    return max(1, int(round(value * 1000)))


_GROUP_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}")


# DataLoader's forms: dlc_config.forms.
_FORMS = {"off": 0, "auto": 1, "decoded": 2}


def _node_group(value):
    """dlc_config.node_group for DataLoader's node_group: a name as bytes,
    or None (no group). None asks for torchrun's: the ranks of one job on
    this node (LOCAL_WORLD_SIZE > 1) by its run ID and master port."""
    if value is False:
        return None
    if value is None:
        env = os.environ
        try:
            local = int(env.get("LOCAL_WORLD_SIZE", "1"))
        except ValueError:
            local = 1
        run = env.get("TORCHELASTIC_RUN_ID")
        if local < 2 or not run:
            return None
        name = "torchrun-%s-%s" % (run, env.get("MASTER_PORT", ""))
        return re.sub(r"[^A-Za-z0-9._-]", "_", name)[:64].encode()
    if isinstance(value, str) and _GROUP_NAME.fullmatch(value):
        return value.encode()
    raise ValueError("node_group must be None (torchrun's local ranks), "
                     "False, or a name of 1..64 characters of "
                     "[A-Za-z0-9._-] not starting with '.', got %r"
                     % (value,))


class Loader:
    """The C loader. Options are those of dlcache.torch.DataLoader."""

    def __init__(self, index, batch_size, train, size, seed, shuffle,
                 drop_last, rank, world, cache, on_error, layout, threads,
                 nbatches, exact=False, pad_shards=True, readahead=None,
                 epochs=None, nvme_passthru=True, staging_dir=None,
                 staging_bytes=None, cluster=False, peer_timeout=None,
                 read_timeout=None, max_scans=None, decode_budget=None,
                 node_group=None, forms="off"):
        self.index = index
        self._pid = os.getpid()
        self._sink = _Sink()
        self.handle = None
        self.held = []		# RawBatch, oldest first
        self.stuck = []		# in use, and no memory to replace them yet
        self.kept = 0		# batches whose memory left the ring
        self.kept_bytes = 0

        raw = ctypes.create_string_buffer(4096)	# room for a newer library's
        cfg = _lib.Config.from_buffer(raw)
        lib.dlc_config_init(ctypes.byref(cfg))
        cfg.size = ctypes.sizeof(_lib.Config)
        kind = _lib.TRANSFORM_TRAIN if train else _lib.TRANSFORM_EVAL
        lib.dlc_transform_default(ctypes.byref(cfg.transform), kind)
        if not isinstance(size, int) or not 1 <= size <= 4096:
            raise ValueError("size must be an int in 1..4096, got %r" % (size,))
        cfg.transform.out_w = cfg.transform.out_h = size
        if not train:
            # torchvision's eval recipe: Resize(size * 256 / 224), CenterCrop
            cfg.transform.resize = max(size, (size * 256 + 112) // 224)
        if exact:
            cfg.transform.flags |= _lib.TRANSFORM_F_EXACT
        if not isinstance(batch_size, int) or not 1 <= batch_size <= 65536:
            raise ValueError("batch_size must be an int in 1..65536, got %r"
                             % (batch_size,))
        cfg.batch_size = batch_size
        cfg.layout = layout
        cfg.seed = int(seed) & (2 ** 64 - 1)
        cfg.shuffle = 1 if shuffle else 0
        cfg.drop_last = 1 if drop_last else 0
        cfg.shard_drop_last = 0 if pad_shards else 1
        if not 0 <= rank < world:
            raise ValueError("rank %d must be in 0..world_size-1 (world_size %d)"
                             % (rank, world))
        cfg.rank, cfg.world = rank, world
        local = _local_world()
        if threads is not None:
            if not isinstance(threads, int) or not 1 <= threads <= 256:
                raise ValueError("threads must be None or 1..256, got %r"
                                 % (threads,))
            cfg.decode_threads = threads
        elif local > 1:
            # Ranks on one node share its CPUs: each takes its part, less
            # its I/O thread (alone, the library's default is all of them).
            cpus = len(os.sched_getaffinity(0))
            cfg.decode_threads = max(1, min(256, cpus // local - 1))
        cfg.nbatches = nbatches
        if on_error not in _lib.ON_ERROR:
            raise ValueError("on_error must be 'skip', 'substitute' or 'fail', "
                             "got %r" % (on_error,))
        cfg.on_error = _lib.ON_ERROR[on_error]
        if isinstance(cache, str) and cache in _lib.BACKEND:
            cfg.backend = _lib.BACKEND[cache]
            # The in-process cache (the fallback of "auto"): the data set, up
            # to a quarter of the memory available now, shared by the ranks
            # on this node (each has a cache of its own).
            avail = _mem_available() // local
            total = index.total_bytes
            cfg.cache_bytes = min(total, avail // 4) if avail else total
        else:
            try:
                nbytes = _parse_size(cache)
            except (TypeError, ValueError):
                raise ValueError("cache must be 'auto', 'inprocess', 'kernel' "
                                 "or a byte size such as 8G, got %r" % (cache,))
            if nbytes < 0:
                raise ValueError("cache size must be >= 0, got %r" % (cache,))
            cfg.backend = _lib.BACKEND["inprocess"]
            cfg.cache_bytes = nbytes
        cfg.readahead_bytes = _readahead_bytes(readahead)
        cfg.epochs = _epochs(epochs)
        if not isinstance(nvme_passthru, bool):
            raise ValueError("nvme_passthru must be True or False, got %r"
                             % (nvme_passthru,))
        cfg.nvme_passthru = (_lib.PASSTHRU_AUTO if nvme_passthru
                             else _lib.PASSTHRU_OFF)
        if staging_dir is not None:
            if not isinstance(staging_dir, (str, bytes, os.PathLike)) or \
                    not os.fspath(staging_dir):
                raise ValueError("staging_dir must be a directory's path, "
                                 "got %r" % (staging_dir,))
            # Kept alive with the config: the library copies it at create.
            self._staging_dir = os.fsencode(staging_dir)
            cfg.staging_dir = self._staging_dir
        if staging_bytes is not None:
            if staging_dir is None:
                raise ValueError("staging_bytes needs staging_dir")
            try:
                nbytes = _parse_size(staging_bytes)
            except (TypeError, ValueError):
                nbytes = -1
            if isinstance(staging_bytes, bool) or nbytes <= 0:
                raise ValueError("staging_bytes must be a byte size such as "
                                 "200G, got %r" % (staging_bytes,))
            cfg.staging_bytes = nbytes
        if not isinstance(cluster, bool):
            raise ValueError("cluster must be True or False, got %r"
                             % (cluster,))
        if cluster:
            if cache == "kernel":
                raise ValueError("cluster=True serves peers from the "
                                 "in-process cache: cache='kernel' does not "
                                 "go with it")
            cfg.cluster = _lib.CLUSTER_MPI
        if peer_timeout is not None:
            if not cluster:
                raise ValueError("peer_timeout needs cluster=True")
            if isinstance(peer_timeout, bool) or \
                    not isinstance(peer_timeout, (int, float)) or \
                    not 0.1 <= peer_timeout <= 600:
                # The library's bound (peer_timeout_ms >= 100): shorter,
                # its watchdog takes an idle service thread for stuck.
                raise ValueError("peer_timeout must be seconds in "
                                 "0.1 .. 600, got %r" % (peer_timeout,))
            cfg.peer_timeout_ms = max(100, int(round(peer_timeout * 1000)))
        cfg.read_timeout_ms = _seconds_ms("read_timeout", read_timeout,
                                          _lib.READ_TIMEOUT_MAX_MS)
        cfg.decode_budget_ms = _seconds_ms("decode_budget", decode_budget,
                                           3600000)
        if max_scans is not None:
            if isinstance(max_scans, bool) or \
                    not isinstance(max_scans, int) or \
                    not 1 <= max_scans <= 65535:
                raise ValueError("max_scans must be an int in 1..65535, "
                                 "got %r" % (max_scans,))
            cfg.max_scans = max_scans
        if forms not in _FORMS:
            raise ValueError("forms must be 'off', 'auto' or 'decoded', "
                             "got %r" % (forms,))
        cfg.forms = _FORMS[forms]
        # Kept alive with the config: the library reads it at create.
        self._node_group = _node_group(node_group)
        cfg.node_group = self._node_group
        cfg.log = _log_fn
        cfg.log_arg = self._sink.id
        cfg.log_level = (_lib.LOG_INFO if log.isEnabledFor(logging.INFO)
                         else _lib.LOG_WARN)
        self.config = cfg
        self._cfg_raw = raw

        h = ctypes.c_void_p()
        rc = lib.dlc_loader_create(ctypes.byref(cfg), index.handle,
                                   ctypes.byref(h))
        if rc == -errno.EINVAL:
            raise ValueError("dlcache loader: %s" % (self._sink.last_error or
                                                     "invalid configuration"))
        if rc < 0:
            raise oserror(rc, "dlcache loader (%s backend)%s" % (
                cache, ": " + self._sink.last_error
                if self._sink.last_error else ""))
        self.handle = h
        self._finalizer = weakref.finalize(self, _destroy, h, self.held,
                                           self.stuck, self._sink, self._pid,
                                           index)

    # -- state ------------------------------------------------------------

    def _check(self):
        if self._pid != os.getpid():
            raise ForkedLoaderError(
                "dlcache: this loader was made in process %d and used in "
                "process %d, forked from it, where its threads do not "
                "exist. The loader is its own worker pool: do not wrap it "
                "in torch.utils.data.DataLoader with num_workers > 0 (nor "
                "fork after making it); iterate over it in the main "
                "process." % (self._pid, os.getpid()))
        if self.handle is None:
            raise ValueError("dlcache loader is closed")

    @property
    def epoch_batches(self):
        self._check()
        return lib.dlc_loader_epoch_batches(self.handle)

    @property
    def epoch_samples(self):
        self._check()
        return lib.dlc_loader_epoch_samples(self.handle)

    def start_epoch(self, epoch, start_batch):
        self._check()
        # A batch still in use (the loop variable of the epoch before)
        # stays held, valid, into the new run: no copy of its buffer.
        self.release_unused()
        rc = lib.dlc_loader_start_epoch(self.handle, epoch,
                                        start_batch * self.config.batch_size)
        if rc == -errno.EINVAL:
            raise ValueError("dlcache: cannot start epoch %d at batch %d: %s"
                             % (epoch, start_batch, self._sink.last_error or
                                "out of range"))
        if rc < 0:
            raise oserror(rc, "dlcache: start epoch %d" % epoch)

    def resume_epoch(self, epoch, done):
        """The rest of @epoch after @done samples of its global order."""
        self._check()
        self.release_unused()
        rc = lib.dlc_loader_resume_epoch(self.handle, epoch, done)
        if rc == -errno.EINVAL:
            raise ValueError("dlcache: cannot resume epoch %d after %d "
                             "samples: %s" % (epoch, done,
                                              self._sink.last_error or
                                              "out of range"))
        if rc < 0:
            raise oserror(rc, "dlcache: resume epoch %d" % epoch)

    # -- batches ------------------------------------------------------------

    def next(self):
        """The next RawBatch, or None after the epoch's last one."""
        self._check()
        p = ctypes.POINTER(_lib.Batch)()
        while True:
            # Sliced, so that Python sees Ctrl-C between the slices.
            rc = lib.dlc_next_batch_timeout(self.handle, ctypes.byref(p),
                                            _WAIT_SLICE_NS)
            if rc != -errno.ETIMEDOUT:
                break
        if rc == -errno.ENODATA:
            return None
        if rc == -errno.EBUSY and self.stuck:
            raise MemoryError("dlcache: %d batches still in use could not be "
                              "given fresh memory, and the ring has run out "
                              "of slots" % len(self.stuck))
        if rc < 0:
            raise self._error(rc)
        b = p.contents
        rb = RawBatch()
        rb.ptr = p
        rb.seq, rb.count = b.seq, b.count
        rb.out_w, rb.out_h = b.out_w, b.out_h
        n = b.count * 3 * b.out_w * b.out_h
        rb.pixels = (ctypes.c_uint8 * n).from_address(
            ctypes.addressof(b.data.contents))
        rb.labels = b.labels[:b.count]
        rb.ids = b.ids[:b.count]
        self.held.append(rb)
        return rb

    def _error(self, rc):
        info = _lib.ErrorInfo()
        if lib.dlc_loader_last_error(self.handle, ctypes.byref(info)) == 0 \
                and info.err == rc:
            kind = lib.dlc_error_kind_name(info.kind).decode()
            # absolute: the index's root went through realpath()
            path = info.path.decode("utf-8", "replace") or None
            return DataLoaderError(info.msg.decode("utf-8", "replace"),
                                   sample=info.sample, path=path, kind=kind,
                                   errno=-rc)
        return DataLoaderError(self._sink.last_error or os.strerror(-rc),
                               errno=-rc)

    @staticmethod
    def in_use(rb):
        """Whether anything but @rb refers to its pixels (a tensor, a view)."""
        # Two references are ours: rb.pixels and getrefcount's argument.
        return sys.getrefcount(rb.pixels) > 2

    def release(self, rb):
        """Give @rb back: to the ring, or, still in use, keep its memory."""
        self._check()
        self.held.remove(rb)
        try:
            _release(self.handle, rb, self)
        except MemoryError as e:
            # Out of memory for the slot's fresh buffer: the batch stays
            # held, the ring runs a slot short, and it is tried again.
            self.stuck.append(rb)
            log.warning("%s; retrying later", e)

    def _retry_stuck(self, strict):
        for rb in list(self.stuck):
            try:
                _release(self.handle, rb, self)
            except MemoryError:
                if strict:
                    raise
                continue
            self.stuck.remove(rb)

    def release_unused(self):
        """Release the held batches nothing refers to any more."""
        self._retry_stuck(False)
        for rb in list(self.held):
            if not self.in_use(rb):
                self.release(rb)

    def release_all(self):
        while self.held:
            self.release(self.held[0])
        self._retry_stuck(True)

    # -- introspection -------------------------------------------------------

    def stats(self):
        self._check()
        s = _lib.Stats()
        rc = lib.dlc_loader_stats(self.handle, ctypes.byref(s),
                                  ctypes.sizeof(s))
        if rc < 0:
            raise oserror(rc, "dlcache: stats")
        out = {}
        for name in _lib.STATS_FIELDS:
            v = getattr(s, name)
            if name == "errors_by_kind":
                out[name] = {lib.dlc_error_kind_name(k).decode(): v[k]
                             for k in range(1, _lib.ERR_KINDS) if v[k]}
            else:
                out[name] = v
        for ns in ("read_ns", "decode_ns", "wait_ns", "verify_ns",
                   "io_busy_ns", "decode_starved_ns", "form_saved_ns"):
            out[ns[:-3] + "_s"] = out[ns] / 1e9
        out["backend"] = lib.dlc_backend_name(
            lib.dlc_loader_backend(self.handle)).decode()
        out["decode_threads"] = lib.dlc_loader_decode_threads(self.handle)
        out["pinned"] = bool(lib.dlc_loader_pinned(self.handle))
        out["hugepages"] = lib.dlc_loader_hugepages(self.handle)
        out["kept_batches"] = self.kept
        out["kept_bytes"] = self.kept_bytes
        return out

    def close(self):
        """Stop the threads and free the ring; kept memory stays valid."""
        if self.handle is None:
            return
        if self._pid != os.getpid():
            self._finalizer.detach()	# not ours to free here
            self.handle = None
            return
        self._finalizer()
        self.handle = None


def _free_kept(mem, length, pid):
    if os.getpid() == pid:
        lib.dlc_batch_data_free(mem, length)


def _release(handle, rb, owner=None):
    if Loader.in_use(rb):
        mem = ctypes.c_void_p()
        length = ctypes.c_size_t()
        rc = lib.dlc_release_batch_keep(handle, rb.ptr, ctypes.byref(mem),
                                        ctypes.byref(length))
        if rc == 0:
            f = weakref.finalize(rb.pixels, _free_kept, mem.value,
                                 length.value, os.getpid())
            f.atexit = False	# the process's exit frees it anyway
            if owner is not None:
                owner.kept += 1
                owner.kept_bytes += length.value
            rb.pixels = None
            return
        if rc == -errno.ENOMEM:
            # No memory for the slot's fresh buffer: the batch stays held
            # and valid; Loader.release() retries it later.
            raise MemoryError("dlcache: no memory to replace batch %d's "
                              "buffer, which is still in use" % rb.seq)
        raise RuntimeError("dlcache: keeping batch %d failed: %s"
                           % (rb.seq, os.strerror(-rc)))
    rc = lib.dlc_release_batch(handle, rb.ptr)
    rb.pixels = None
    if rc < 0:
        raise RuntimeError("dlcache: release of batch %d failed: %s"
                           % (rb.seq, os.strerror(-rc)))


def _destroy(handle, held, stuck, sink, pid, index):
    """Finalizer: keep what is in use, then stop the C loader's threads."""
    if os.getpid() != pid:
        return
    held.extend(stuck)
    del stuck[:]
    while held:
        rb = held.pop(0)
        try:
            _release(handle, rb)
        except (RuntimeError, MemoryError):
            # Its memory must outlive the ring: leak the loader instead of
            # unmapping memory a tensor points at.
            log.error("dlcache: batch %d is still in use and could not be "
                      "kept; the loader's memory is left mapped", rb.seq)
            return
    lib.dlc_loader_destroy(handle)
    _sinks.pop(sink.id, None)
    del index	# the index outlives the loader that reads it
