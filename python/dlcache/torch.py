# SPDX-License-Identifier: MIT
"""dlcache.torch.DataLoader: ready torch tensors from libdlcache.

    from dlcache.torch import DataLoader
    loader = DataLoader("/data/train", batch_size=256)
    for images, labels in loader:   # uint8 [B,3,H,W], int64 [B]
        ...

The images tensor aliases the loader's batch buffer (zero copy on the CPU).
Lifetime: a batch stays valid until the iteration after next, or until it
is dropped; one still referenced then (kept in a list, a view of it, a
numpy array of it) keeps its memory, which leaves the ring, so it is never
overwritten. Documentation/python.md has the whole API.
"""

import logging
import os
import warnings
import weakref

import torch

from . import _lib
from ._loader import Index, Loader

__all__ = ["DataLoader"]

# Batches handed to the caller that stay valid at once: the current one and
# the one before it ("until the iteration after next").
_VALID = 2
# Ring slots: those two, plus batches being decoded ahead.
_NBATCHES = 6


def _default_rank_world(rank, world_size, cluster=False):
    if rank is not None and world_size is not None:
        return int(rank), int(world_size)
    dist = getattr(torch, "distributed", None)
    if cluster and "OMPI_COMM_WORLD_RANK" in os.environ and \
            "OMPI_COMM_WORLD_SIZE" in os.environ:
        # Cluster mode's ranks are the MPI job's.
        r = int(os.environ["OMPI_COMM_WORLD_RANK"])
        w = int(os.environ["OMPI_COMM_WORLD_SIZE"])
    elif dist is not None and dist.is_available() and dist.is_initialized():
        r, w = dist.get_rank(), dist.get_world_size()
    elif "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        r, w = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    else:
        r, w = 0, 1
    return (int(rank) if rank is not None else r,
            int(world_size) if world_size is not None else w)


def _normalize_consts(normalize, device):
    """(scale, shift) with out = x * scale + shift, shaped [1,3,1,1]."""
    try:
        mean, std = normalize
        mean = [float(v) for v in mean]
        std = [float(v) for v in std]
    except (TypeError, ValueError):
        raise ValueError("normalize must be None or (mean, std), each 3 "
                         "numbers, got %r" % (normalize,))
    if len(mean) != 3 or len(std) != 3 or min(std) <= 0:
        raise ValueError("normalize: mean and std need 3 values each, std > 0;"
                         " got %r" % (normalize,))
    # torchvision's scale is 0..1 (Normalize after ToTensor); a mean or std
    # above 1 cannot be on it, so it is taken to be on 0..255 (DALI's).
    unit = 1.0 if max(mean + std) > 1.0 else 255.0
    scale = torch.tensor([1.0 / (unit * s) for s in std], dtype=torch.float32)
    shift = torch.tensor([-m / s for m, s in zip(mean, std)],
                         dtype=torch.float32)
    scale = scale.view(1, 3, 1, 1).to(device)
    shift = shift.view(1, 3, 1, 1).to(device)
    return scale, shift


class DataLoader:
    """Batches of decoded, augmented images and their labels.

    Arguments (all but the first keyword-only in spirit):
      source       an ImageFolder root, an index file (`dlcachectl index`), a
                   pack (`dlcachectl pack`), or a device a pack was written
                   onto (`dlcachectl pack --to`): /dev/nvme0n1, /dev/ng0n1
                   or "nvme:<EUI-64 or NGUID>"
      batch_size   samples per batch
      train        True: RandomResizedCrop + horizontal flip, shuffled;
                   False: Resize(size * 256 / 224) + CenterCrop(size), in order
      size         output side in pixels
      seed         shuffle and augmentation seed, the same on every rank
      drop_last    drop the epoch's last partial batch
      rank, world_size  this process's shard; None: torch.distributed when
                   initialised, else $RANK / $WORLD_SIZE, else 0 / 1
      cache        "auto" (dlcache.ko when usable, else in-process),
                   "inprocess", "kernel", or a byte size (int or "8G") for
                   an in-process cache of that capacity (0: none)
      on_error     "skip" (shorter batch), "substitute" (another sample in
                   its place) or "fail" (raise DataLoaderError)
      device       "cpu", "cuda" or "cuda:N" (or a torch.device)
      normalize    None: uint8 out; (mean, std): float32 (x/255 - mean)/std,
                   computed on the device in one pass
      channels_last  images in channels_last memory format (still [B,3,H,W])
      threads      decode threads; None: the CPUs this process may use
      shuffle      None: as train
      exact        decode at full DCT scale: torchvision's pixels exactly
      return_ids   also yield the sample IDs (int64 [B])
      pad_shards   as DistributedSampler (drop_last=False): every rank gets
                   ceil(n / world) samples, wrapping around; False: floor
      root         with an index file: the data set is at this directory
      readahead    bytes read from storage ahead of the batches, across
                   epoch ends: None: 64M, less in a small memory cgroup;
                   "off"; or a size (int or "256M")
      epochs       the epochs the job runs (epochs 0 .. epochs - 1), when
                   known: the read-ahead reads nothing past the last one,
                   and dlcache.ko holds nothing for an epoch after it;
                   None: not known
      nvme_passthru  a pack on an NVMe namespace: True (the default) reads
                   it with NVMe commands through io_uring passthrough where
                   the kernel allows it; False: O_DIRECT on its block device
      staging_dir  a directory on node-local disk: samples are copied there
                   from the data set's (slow, shared) storage in the order
                   they will be used, and later epochs read the copies;
                   None: no staging
      staging_bytes  what the copies may take (int or "200G"); None: half
                   of the free space in staging_dir
      cluster      True: the ranks of an MPI job (mpirun) share their
                   caches, each holding the samples it owns and reading
                   the others from their owner before storage
                   (Documentation/cluster.md); needs libdlcache built with
                   MPI=1 (DLCACHE_LIB). rank and world_size default to the
                   MPI job's. Every rank creates its DataLoader together.
      peer_timeout seconds a peer may stay silent before it is taken for
                   dead (its samples re-placed over the ranks left); None: 2
      read_timeout seconds one sample's read from storage may take (a hung
                   NFS mount): past it the sample fails as an I/O error,
                   handled as on_error says; None: 30
      max_scans    scans a progressive JPEG may have before it fails as too
                   large; None: 64
      decode_budget  seconds of CPU one sample's decode may take before it
                   fails as too large; None: 2 s plus 1 ms per 16 Ki pixels
      node_group   node sharing: the loaders of this user's processes that
                   name the same group decode in the idle time of each
                   other's CPUs (guest threads at SCHED_IDLE), so that a
                   rank whose loader is behind borrows from one that is
                   ahead; it pays where the launcher binds each rank to its
                   own CPUs. None: torchrun's local ranks form one
                   (LOCAL_WORLD_SIZE > 1, by TORCHELASTIC_RUN_ID and
                   MASTER_PORT); False: none; or a name ([A-Za-z0-9._-])
      forms        what the in-process cache keeps of a sample: "off" (its
                   encoded bytes), "auto" (its whole image decoded, where
                   decode limits the loader and the form will be used
                   again; encoded bytes where storage does), or "decoded"
                   (decoded forms only). With forms on, every sample is
                   decoded as with exact=True: batches are the same
                   whichever form served them (library.md, "Decoded forms")
    """

    def __init__(self, source, batch_size=256, train=True, size=224, seed=0,
                 drop_last=True, rank=None, world_size=None, cache="auto",
                 on_error="skip", device="cpu", normalize=None,
                 channels_last=False, threads=None, shuffle=None, exact=False,
                 return_ids=False, pad_shards=True, root=None,
                 readahead=None, epochs=None, nvme_passthru=True,
                 staging_dir=None, staging_bytes=None, cluster=False,
                 peer_timeout=None, read_timeout=None, max_scans=None,
                 decode_budget=None, node_group=None, forms="off"):
        try:
            self.device = torch.device(device)
        except (RuntimeError, TypeError) as e:
            raise ValueError("dlcache: device must be 'cpu' or 'cuda[:N]', "
                             "got %r (%s)" % (device, e)) from None
        if self.device.type == "cuda":
            if not torch.cuda.is_available():
                # Fall back, loudly: the same script runs on a CPU machine.
                msg = ("dlcache: device=%r, but torch finds no CUDA device "
                       "(torch.cuda.is_available() is False): batches stay "
                       "on the CPU" % (device,))
                warnings.warn(msg, RuntimeWarning, stacklevel=2)
                logging.getLogger("dlcache").warning("%s", msg)
                self.device = torch.device("cpu")
            elif self.device.index is None:
                self.device = torch.device("cuda", torch.cuda.current_device())
            elif self.device.index >= torch.cuda.device_count():
                raise ValueError("dlcache: device %r, but torch sees %d CUDA "
                                 "device(s)" % (device,
                                                torch.cuda.device_count()))
        elif self.device.type != "cpu":
            raise ValueError("dlcache: device must be 'cpu' or 'cuda[:N]', got %r"
                             % (device,))
        rank, world = _default_rank_world(rank, world_size, cluster)
        self.rank, self.world_size = rank, world
        self.batch_size = batch_size
        self.train = bool(train)
        self.size = size
        self.seed = seed
        self.drop_last = bool(drop_last)
        self.channels_last = bool(channels_last)
        self.return_ids = bool(return_ids)
        self._norm = (None if normalize is None else
                      _normalize_consts(normalize, self.device))
        self.index = Index(source, root)
        self._loader_args = dict(
            batch_size=batch_size, train=self.train, size=size,
            seed=seed, shuffle=self.train if shuffle is None else shuffle,
            drop_last=drop_last, rank=rank, world=world, cache=cache,
            on_error=on_error,
            layout=_lib.LAYOUT_NHWC if channels_last else _lib.LAYOUT_NCHW,
            threads=threads, nbatches=_NBATCHES, exact=exact,
            pad_shards=pad_shards, readahead=readahead, epochs=epochs,
            nvme_passthru=nvme_passthru, staging_dir=staging_dir,
            staging_bytes=staging_bytes, cluster=cluster,
            peer_timeout=peer_timeout, read_timeout=read_timeout,
            max_scans=max_scans, decode_budget=decode_budget,
            node_group=node_group, forms=forms)
        self._loader = Loader(self.index, **self._loader_args)
        self.epoch = 0
        self._next_batch = 0	# grid position to start or resume at
        # Samples of this epoch's global order used before this run (a
        # state_dict of another world size or batch size was loaded: the
        # run is the rest, dlc_loader_resume_epoch()); None: a whole epoch.
        self._rest_done = None
        self._iterating = None	# the live iterator, if any
        # The next pass continues at (epoch, _next_batch) rather than
        # starting a new epoch: set by load_state_dict(), close() and an
        # interrupted pass.
        self._resume = False
        self._final_stats = None
        self._cuda = None
        if self.device.type == "cuda":
            from ._cuda import CudaStage
            self._cuda = CudaStage(self.device, self._loader)
            # Registered memory is unregistered before the ring goes.
            weakref.finalize(self, self._cuda.close)

    # -- the torch-visible interface ---------------------------------------

    def _live(self):
        """The C loader, started again if closed (or stopped by Ctrl-C)."""
        if self._loader.handle is None:
            self._loader = Loader(self.index, **self._loader_args)
            if self._cuda is not None:
                self._cuda.loader = self._loader
        return self._loader

    def __len__(self):
        """Batches per epoch for this rank (under on_error="skip", at most)."""
        return self._live().epoch_batches

    @property
    def classes(self):
        return self.index.classes

    @property
    def class_to_idx(self):
        return {c: i for i, c in enumerate(self.index.classes)}

    @property
    def samples_per_epoch(self):
        return self._live().epoch_samples

    def set_epoch(self, epoch):
        """The epoch the next iteration runs (as DistributedSampler's).

        A pass in progress ends. The next pass starts the epoch from its
        first batch, unless it is the epoch a load_state_dict() (or an
        interrupted pass) left off in: then it continues there.
        """
        if not isinstance(epoch, int) or not 0 <= epoch < 2 ** 32:
            raise ValueError("epoch must be an int in 0..2^32-1, got %r"
                             % (epoch,))
        if self._iterating is not None:
            self._iterating._end()
        if epoch != self.epoch or not self._resume:
            self._next_batch = 0
            self._rest_done = None
            self._resume = False
        self.epoch = epoch

    def _advance(self):
        self.epoch = self.epoch + 1 if self.epoch + 1 < 2 ** 32 else 0
        self._next_batch = 0
        self._rest_done = None

    def _samples_done(self):
        """Samples of the epoch's global order used so far, by every
        rank: the batches each rank took times batch_size and world."""
        return (self._rest_done or 0) + \
            self._next_batch * self.batch_size * self.world_size

    def __iter__(self):
        if self._iterating is not None:
            # The last pass was left early (a break): a new pass is a new
            # epoch, as torch's DataLoader reshuffles on every iter().
            self._iterating._end()
            if not self._resume:
                self._advance()
        self._resume = False
        self._live()
        if self._rest_done is not None:
            # The rest of a resumed epoch, from where this run got to.
            self._rest_done = self._samples_done()
            self._next_batch = 0
        it = _EpochIterator(self, self.epoch, self._next_batch,
                            self._rest_done)
        self._iterating = it
        return it

    def state_dict(self):
        """Where the iteration stands: load_state_dict() resumes there,
        at this world size or another (samples_done)."""
        return {
            "version": 1,
            "epoch": self.epoch,
            "batches_done": self._next_batch,
            # every rank's samples of the epoch's global order so far
            "samples_done": self._samples_done(),
            "rest_done": self._rest_done,
            "seed": self.seed,
            "batch_size": self.batch_size,
            "world_size": self.world_size,
            "rank": self.rank,
            "train": self.train,
            "size": self.size,
            "drop_last": self.drop_last,
            "dataset": self.index.key,
        }

    def load_state_dict(self, state):
        """Resume: the next iteration runs the rest of the saved epoch.

        The same world size, rank and batch size continue the saved run
        batch for batch. Another world size (an elastic restart: every
        rank loads the state of any old rank) or batch size continues the
        epoch's global order after the samples_done the old ranks used:
        this rank gets its share of the rest, every sample of the epoch
        once across both runs (dlc_loader_resume_epoch()). The seed, the
        transform (train, size) and the data set must match.
        """
        if not isinstance(state, dict) or state.get("version") != 1:
            raise ValueError("not a dlcache DataLoader state_dict: %r"
                             % (state,))
        mine = self.state_dict()
        for k in ("seed", "train", "size", "dataset"):
            if state.get(k) != mine[k]:
                raise ValueError("state_dict is of another loader: %s is %r "
                                 "there, %r here" % (k, state.get(k), mine[k]))
        epoch, done = state["epoch"], state["batches_done"]
        if not isinstance(epoch, int) or not 0 <= epoch < 2 ** 32 - 1:
            raise ValueError("state_dict: epoch %r out of range" % (epoch,))
        same = all(state.get(k) == mine[k] for k in
                   ("batch_size", "world_size", "rank", "drop_last"))
        rest = state.get("rest_done")
        if same and rest is None:
            if not isinstance(done, int) or not 0 <= done <= len(self):
                raise ValueError("state_dict: batches_done %r out of 0..%d"
                                 % (done, len(self)))
        else:
            # Older states lack samples_done: a whole run's formula.
            sd = state.get("samples_done")
            if sd is None:
                if not all(isinstance(state.get(k), int) for k in
                           ("batches_done", "batch_size", "world_size")):
                    raise ValueError("state_dict: no samples_done, and no "
                                     "batches_done, batch_size, world_size "
                                     "to count them from: %r" % (state,))
                sd = (rest or 0) + state["batches_done"] * \
                    state["batch_size"] * state["world_size"]
            if not isinstance(sd, int) or sd < 0:
                raise ValueError("state_dict: samples_done %r is not a "
                                 "count" % (sd,))
        if self._iterating is not None:
            self._iterating._end()
        self.epoch = epoch
        if same and rest is None:
            self._next_batch = done
            self._rest_done = None
        else:
            self._next_batch = 0
            self._rest_done = sd
        self._resume = True

    def stats(self):
        """The library's counters as a dict (Documentation/python.md)."""
        if self._loader.handle is None and self._final_stats is not None:
            s = dict(self._final_stats)	# closed: the counters at close()
        else:
            s = self._live().stats()
        s["device"] = str(self.device)
        return s

    def close(self):
        """Stop the threads and free the ring; kept tensors stay valid.

        A pass in progress ends; the next iter() starts the threads again
        and continues at the position reached.
        """
        if self._iterating is not None:
            self._iterating._end()
            self._resume = True
        if self._cuda is not None:
            self._cuda.close()
        if self._loader.handle is not None and \
                self._loader._pid == os.getpid():
            self._final_stats = self._loader.stats()
        self._loader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getitem__(self, i):
        raise TypeError("dlcache.torch.DataLoader is a loader, not a Dataset: "
                        "iterate over it directly; it is its own worker pool "
                        "and must not be wrapped in torch.utils.data.DataLoader")

    def __reduce__(self):
        raise TypeError("dlcache.torch.DataLoader cannot be pickled or sent to "
                        "worker processes: it is its own worker pool; iterate "
                        "over it in the main process")

    # -- batches to tensors --------------------------------------------------

    def _normalized(self, images):
        """@images as the caller asked: uint8 as they are, or float32
        (x / 255 - mean) / std in one kernel (addcmul promotes the type),
        on @images' device."""
        if self._norm is None:
            return images
        scale, shift = self._norm
        out = torch.addcmul(shift, images, scale)
        if self.channels_last:
            out = out.contiguous(memory_format=torch.channels_last)
        return out

    def _tensors(self, rb):
        """(images, labels[, ids]) for @rb; True when @rb can go at once."""
        n, h, w = rb.count, rb.out_h, rb.out_w
        flat = torch.frombuffer(rb.pixels, dtype=torch.uint8)
        if self.channels_last:
            images = flat.view(n, h, w, 3).permute(0, 3, 1, 2)
        else:
            images = flat.view(n, 3, h, w)
        labels = torch.tensor(rb.labels, dtype=torch.int64)
        done_with_ring = False
        if self._cuda is not None:
            images = self._cuda.stage(images, rb, self._normalized)
            labels = labels.to(self.device, non_blocking=True)
        elif self._norm is not None:
            images = self._normalized(images)
            done_with_ring = True
        del flat
        if self.return_ids:
            ids = torch.tensor(rb.ids, dtype=torch.int64)
            if self.device.type == "cuda":
                ids = ids.to(self.device, non_blocking=True)
            return (images, labels, ids), done_with_ring
        return (images, labels), done_with_ring


class _EpochIterator:
    """One pass over the rest of an epoch. A new iter() ends this one."""

    def __init__(self, owner, epoch, start, rest_done=None):
        self.owner = owner
        self.epoch = epoch
        self.live = False
        if rest_done is None:
            owner._loader.start_epoch(epoch, start)
        else:
            owner._loader.resume_epoch(epoch, rest_done)
        self.live = True

    def __iter__(self):
        return self

    def __next__(self):
        if not self.live:
            raise StopIteration
        owner = self.owner
        loader = owner._loader
        try:
            if owner._cuda is not None:
                # one copy may stay in flight while the next batch comes
                owner._cuda.retire(keep=1)
            else:
                # The batch before the last one handed out goes back now
                # (kept if still in use); any other the caller dropped too.
                while len(loader.held) >= _VALID:
                    loader.release(loader.held[0])
                loader.release_unused()
            rb = loader.next()
            if rb is None:
                self._finish()
                raise StopIteration
            out, done = owner._tensors(rb)
            if done:
                loader.release(rb)
            owner._next_batch = rb.seq + 1
            return out
        except (StopIteration, GeneratorExit):
            raise
        except KeyboardInterrupt:
            # Ctrl-C: stop the threads now; a later iter() starts them again
            # at the position reached.
            self.live = False
            self._abort()
            owner._resume = True
            owner.close()
            raise
        except BaseException:
            # A failed sample under on_error="fail", or any other error:
            # stop here cleanly; the next pass continues from here.
            self.live = False
            self._abort()
            owner._resume = True
            raise

    def _finish(self):
        self.live = False
        owner = self.owner
        owner._iterating = None
        if owner._cuda is not None:
            # The last copies finish before their slots can be reused.
            owner._cuda.retire(all=True)
        owner._loader.release_unused()
        owner._advance()

    def _abort(self):
        owner = self.owner
        if owner._iterating is self:
            owner._iterating = None
        try:
            if owner._cuda is not None:
                owner._cuda.retire(all=True)
            owner._loader.release_all()
        except Exception:
            pass

    def _end(self):
        """Another iteration starts, or the loader closes."""
        if self.live:
            self.live = False
            self._abort()
