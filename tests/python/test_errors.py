# SPDX-License-Identifier: MIT
"""dlcache.torch.DataLoader on bad data and bad arguments.

A small `dlcachectl gen` set is copied into a scratch directory and damaged
there: corrupt entropy data (a stray RST marker, which a full decode
rejects), a truncated file, an empty file, a text file named .jpg, a file
removed after indexing, a file and a directory without read permission.
The expected sample IDs and labels come from the file names in
ImageFolder order (classes sorted, files sorted), not from the loader.
"""

import errno
import os
import pickle
import shutil
import stat
import time

import torch

import dlcache
from dlcache.torch import DataLoader

from dlcfork import in_fork
from dlctest import check, done, gen_dataset, run, scratch, skip

TMP = scratch("errors")
os.chmod(TMP, 0o755)		# the unprivileged sub-checks read it too
BASE = gen_dataset(os.path.join(TMP, "base"), images=40, classes=2, seed=3)
CLASSES = sorted(d for d in os.listdir(BASE)
                 if os.path.isdir(os.path.join(BASE, d)))
FILES = [os.path.join(c, f) for c in CLASSES
         for f in sorted(os.listdir(os.path.join(BASE, c)))]
LABELS = [CLASSES.index(os.path.dirname(f)) for f in FILES]
N = len(FILES)


def scan_start(b):
    """Offset of the first entropy-coded byte after the first SOS."""
    i = b.index(b"\xff\xda")
    return i + 2 + (b[i + 2] << 8 | b[i + 3])


def damage(path, how):
    b = bytearray(open(path, "rb").read())
    ds = scan_start(b)
    if how == "corrupt":
        # an RST0 marker 7/8 into the scan, where no restart interval is
        # set: djpeg and a full decode reject it
        at = ds + (len(b) - 2 - ds) * 7 // 8
        while b[at - 1] == 0xff:
            at += 1
        b[at:at + 2] = b"\xff\xd0"
    elif how == "truncated":
        del b[ds + (len(b) - ds) * 3 // 4:]
    elif how == "empty":
        b = b""
    elif how == "too_large":
        # the frame header claims 9000 x 9000, over the 64-megapixel cap
        i = 2
        while b[i + 1] not in (0xc0, 0xc1, 0xc2):
            i += 2 + (b[i + 2] << 8 | b[i + 3])
        b[i + 5:i + 9] = bytes([0x23, 0x28, 0x23, 0x28])
    elif how == "not_jpeg":
        b = b"this is a text file, not a JPEG\n" * 20
    elif how == "progressive":
        # the same pixels, losslessly, in libjpeg's progressive script
        # (jpegtran, not the code under test): 10 scans for colour
        import subprocess
        b = subprocess.run(["jpegtran", "-progressive", path], check=True,
                           stdout=subprocess.PIPE).stdout
    else:
        raise ValueError(how)
    with open(path, "wb") as f:
        f.write(bytes(b))


def make_set(name, bad):
    """A copy of BASE with @bad {sample ID: damage}; "missing" needs an
    index file: (source, {ID: absolute path})."""
    root = os.path.join(TMP, name)
    shutil.copytree(BASE, root)
    for d in [root] + [os.path.join(root, c) for c in CLASSES]:
        os.chmod(d, 0o755)
    paths = {i: os.path.join(root, FILES[i]) for i in bad}
    source = root
    if "missing" in bad.values():
        import subprocess
        from dlctest import dlcachectl
        source = os.path.join(TMP, name + ".idx")
        subprocess.run([dlcachectl(), "index", root, "-o", source],
                       check=True, stdout=subprocess.DEVNULL)
    for i, how in bad.items():
        if how == "missing":
            os.unlink(paths[i])
        elif how != "unreadable":
            damage(paths[i], how)
    return source, paths


def loader(source, **kw):
    args = dict(batch_size=8, size=32, threads=2, drop_last=False,
                return_ids=True)
    args.update(kw)
    return DataLoader(source, **args)


# ---- on_error="fail" ----------------------------------------------------

def fail_kind(how, sample, kind=None, err=None):
    source, paths = make_set("fail-" + how, {sample: how})
    dl = loader(source, on_error="fail", cache=0)
    try:
        n = sum(len(ids) for _, _, ids in dl)
        check(False, "%s: an epoch of %d samples, no error" % (how, n))
    except dlcache.DataLoaderError as e:
        path = paths[sample]
        check(e.path == path, "%s: .path %r, want %r" % (how, e.path, path))
        check(os.path.isabs(e.path), ".path is not absolute: %r" % e.path)
        check(e.kind == (kind or how), "%s: .kind %r, want %r"
              % (how, e.kind, kind or how))
        check(e.sample == sample, "%s: .sample %r, want %d"
              % (how, e.sample, sample))
        check(isinstance(e.errno, int) and e.errno > 0,
              "%s: .errno %r" % (how, e.errno))
        if err is not None:
            check(e.errno == err, "%s: .errno %d (%s), want %d (%s)"
                  % (how, e.errno, os.strerror(e.errno), err,
                     os.strerror(err)))
        check(path in str(e), "%s: the message does not name the path: %s"
              % (how, e))
        check(e.message and e.message in str(e),
              "%s: .message %r" % (how, e.message))
        # it travels between processes (multiprocessing, DDP) whole
        f = pickle.loads(pickle.dumps(e))
        check(type(f) is type(e) and str(f) == str(e) and
              (f.path, f.kind, f.sample, f.errno) ==
              (e.path, e.kind, e.sample, e.errno),
              "%s: unpickled as %r" % (how, f.__dict__))
    # the loader stays usable: it fails the same way again, no hang
    try:
        for _ in dl:
            pass
        check(False, "%s: the second epoch had no error" % how)
    except dlcache.DataLoaderError as e:
        check(e.sample == sample, "second epoch: sample %r" % e.sample)
    dl.close()


def as_nobody(fn):
    """Run @fn in a forked child as uid/gid 65534; fails with the child's
    traceback. Root reads everything, so permission errors need another
    user."""
    if os.getuid() != 0:
        return fn()

    def child():
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
        fn()
    status, msg = in_fork(child, 30)
    check(status is not None, "the unprivileged child hung (killed after "
          "30 s)")
    check(status == 0, "as uid 65534: %s" % msg)


def readable_by_nobody(path):
    while path not in ("/", ""):
        st = os.stat(path)
        if not st.st_mode & stat.S_IXOTH:
            return False
        path = os.path.dirname(path)
    return True


def unreadable_file():
    """A file without read permission (after indexing): kind "io", EACCES."""
    if not readable_by_nobody(TMP):
        skip("%s is not searchable by other users (uid 65534)" % TMP)
    source, paths = make_set("fail-unreadable", {11: "unreadable"})
    os.chmod(paths[11], 0)
    as_nobody(lambda: fail_kind_loaded(source, paths, 11))


def fail_kind_loaded(source, paths, sample):
    dl = loader(source, on_error="fail", cache=0)
    try:
        for _ in dl:
            pass
        check(False, "no error")
    except dlcache.DataLoaderError as e:
        check(e.path == paths[sample], ".path %r" % e.path)
        check(e.sample == sample, ".sample %r" % e.sample)
        check(e.errno == errno.EACCES, ".errno %r" % e.errno)
        check(e.kind == "io", ".kind %r" % e.kind)
        check(paths[sample] in str(e), "message: %s" % e)


def unreadable_dir():
    """A class directory, then the root, without read permission: a
    PermissionError naming that directory when the loader is made."""
    if not readable_by_nobody(TMP):
        skip("%s is not searchable by other users (uid 65534)" % TMP)
    root, _ = make_set("unreadable-dir", {})
    bad = os.path.join(root, CLASSES[1])

    def child(where):
        try:
            DataLoader(root, batch_size=4, size=32)
            check(False, "made a loader over unreadable %s" % where)
        except PermissionError as e:
            check(e.filename == where and where in str(e),
                  "the error does not name %s: %s" % (where, e))
    os.chmod(bad, 0o311)
    as_nobody(lambda: child(bad))
    os.chmod(bad, 0o755)
    os.chmod(root, 0o311)
    as_nobody(lambda: child(root))
    os.chmod(root, 0o755)


# ---- on_error="skip" and "substitute" -------------------------------------

ALL_BAD = {3: "corrupt", 10: "truncated", 17: "empty", 22: "not_jpeg",
           26: "too_large", 30: "missing"}
GOOD = [i for i in range(N) if i not in ALL_BAD]


def skip_bad():
    """Every good sample once per epoch, with its label; bad ones never;
    the counters count each bad sample once per epoch, by kind."""
    source, _ = make_set("skip", ALL_BAD)
    dl = loader(source, on_error="skip")	# the default cache: epoch 2 hits
    for epoch in range(2):
        ids, labels = [], []
        for x, y, i in dl:
            check(x.shape[0] == len(i) == len(y), "batch sizes differ")
            ids += i.tolist()
            labels += y.tolist()
        check(sorted(ids) == GOOD, "epoch %d delivered %r, want %r"
              % (epoch, sorted(ids), GOOD))
        check(labels == [LABELS[i] for i in ids],
              "epoch %d: a label does not match its ID" % epoch)
        s = dl.stats()
        want = {k: epoch + 1 for k in ALL_BAD.values()}
        check(s["errors"] == len(ALL_BAD) * (epoch + 1),
              "epoch %d: errors %d" % (epoch, s["errors"]))
        check(s["errors_by_kind"] == want, "epoch %d: errors_by_kind %r, "
              "want %r" % (epoch, s["errors_by_kind"], want))
        check(s["skipped"] == len(ALL_BAD) * (epoch + 1),
              "epoch %d: skipped %d" % (epoch, s["skipped"]))
    dl.close()


def substitute_bad():
    """Every batch full; no bad ID; labels those of the IDs delivered."""
    source, _ = make_set("substitute", ALL_BAD)
    dl = loader(source, on_error="substitute", cache=0)
    for epoch in range(2):
        ids = []
        for x, y, i in dl:
            check(x.shape[0] == 8 and len(i) == 8 and len(y) == 8,
                  "a batch of %d" % x.shape[0])
            check(y.tolist() == [LABELS[k] for k in i.tolist()],
                  "a label does not match its ID")
            ids += i.tolist()
        check(len(ids) == N, "epoch %d: %d samples" % (epoch, len(ids)))
        check(not set(ids) & set(ALL_BAD), "epoch %d delivered bad IDs %r"
              % (epoch, sorted(set(ids) & set(ALL_BAD))))
        check(set(GOOD) <= set(ids), "epoch %d lost good IDs %r"
              % (epoch, sorted(set(GOOD) - set(ids))))
    s = dl.stats()
    check(s["substituted"] == 2 * len(ALL_BAD), "substituted %d"
          % s["substituted"])
    dl.close()


def all_bad():
    """Nothing but bad samples: skip and substitute end each epoch with
    no batch (no hang, no endless search for a substitute); fail raises."""
    root = os.path.join(TMP, "all-bad", "c0")
    os.makedirs(root)
    for i in range(6):
        with open(os.path.join(root, "x%d.jpg" % i), "w") as f:
            f.write("not a JPEG\n")
    for mode in ("skip", "substitute"):
        dl = loader(os.path.dirname(root), on_error=mode, cache=0)
        for epoch in range(2):
            got = [len(i) for _, _, i in dl]
            check(got == [], "%s, epoch %d: batches %r" % (mode, epoch, got))
        check(dl.stats()["errors"] == 12, "%s: errors %d"
              % (mode, dl.stats()["errors"]))
        dl.close()
    dl = loader(os.path.dirname(root), on_error="fail", cache=0)
    try:
        next(iter(dl))
        check(False, "fail: a batch came out")
    except dlcache.DataLoaderError as e:
        check(e.kind == "not_jpeg" and e.path.startswith(root),
              "fail: %s" % e)
    dl.close()


# ---- bad arguments ---------------------------------------------------------

def raises(exc, names, fn, *a, **kw):
    """@fn raises @exc (a class or tuple) whose text names each of @names."""
    try:
        fn(*a, **kw)
    except exc as e:
        for n in names:
            check(n in str(e), "%s: %r does not name %r" % (kw or a, str(e), n))
        return e
    except Exception as e:
        check(False, "%s: %s (%s), want %s" % (kw or a, type(e).__name__, e,
                                                exc))
    check(False, "%s: no error" % (kw or a,))


def bad_args():
    VT = (ValueError, TypeError)
    for kw, names in [
            (dict(batch_size=0), ["batch_size"]),
            (dict(batch_size=-3), ["batch_size"]),
            (dict(batch_size="8"), ["batch_size"]),
            (dict(size=0), ["size"]),
            (dict(size=5000), ["size"]),
            (dict(rank=2, world_size=2), ["rank", "world_size"]),
            (dict(rank=-1, world_size=2), ["rank"]),
            (dict(on_error="x"), ["on_error"]),
            (dict(cache="bogus"), ["cache"]),
            (dict(cache=-1), ["cache"]),
            (dict(threads=0), ["threads"]),
            (dict(normalize=([0.5, 0.5], [0.2, 0.2])), ["normalize"]),
            (dict(normalize=(0.5, 0.2)), ["normalize"]),
            (dict(normalize=([0.5] * 3, [0.2, 0.0, 0.2])), ["normalize"]),
            (dict(device="tpu"), ["device"]),
            (dict(device="cuda:x"), ["device"]),
            (dict(read_timeout=0), ["read_timeout"]),
            (dict(read_timeout=-1), ["read_timeout"]),
            (dict(read_timeout="30"), ["read_timeout"]),
            (dict(read_timeout=3601), ["read_timeout"]),
            (dict(max_scans=0), ["max_scans"]),
            (dict(max_scans=65536), ["max_scans"]),
            (dict(max_scans=2.0), ["max_scans"]),
            (dict(max_scans=True), ["max_scans"]),
            (dict(decode_budget=0), ["decode_budget"]),
            (dict(decode_budget=True), ["decode_budget"]),
            (dict(decode_budget=7200), ["decode_budget"])]:
        raises(VT, names, DataLoader, BASE, **kw)
    dl = DataLoader(BASE, batch_size=8, size=32)
    for v in (-1, 2 ** 32, "1", 1.0):
        raises(ValueError, ["epoch"], dl.set_epoch, v)
    state = dl.state_dict()
    for bad, names in [({}, ["state_dict"]), (None, ["state_dict"]),
                       (dict(state, size=64), ["size"]),
                       (dict(state, dataset="0" * 32), ["dataset"]),
                       (dict(state, batches_done=99), ["batches_done"])]:
        raises(ValueError, names, dl.load_state_dict, bad)
    dl.close()


def scan_budget():
    """A progressive sample over max_scans fails as too large, naming the
    budget; under the default it decodes (10 scans < 64)."""
    sample = 6
    source, paths = make_set("scans", {sample: "progressive"})
    dl = loader(source, on_error="fail", cache=0, max_scans=9)
    check(dl._loader.config.max_scans == 9, "max_scans not passed on")
    try:
        n = sum(len(ids) for _, _, ids in dl)
        check(False, "an epoch of %d samples under max_scans 9, no error" % n)
    except dlcache.DataLoaderError as e:
        check(e.sample == sample and e.kind == "too_large",
              "sample %r kind %r" % (e.sample, e.kind))
        check("max_scans" in str(e), "the message names no budget: %s" % e)
    dl.close()
    dl = loader(source, on_error="fail", cache=0, read_timeout=5,
                decode_budget=10)
    check((dl._loader.config.read_timeout_ms,
           dl._loader.config.decode_budget_ms) == (5000, 10000),
          "read_timeout / decode_budget not passed on")
    check(sum(len(ids) for _, _, ids in dl) == N, "default budgets: short")
    dl.close()


def bad_sources():
    missing = os.path.join(TMP, "no-such-dir")
    e = raises(FileNotFoundError, [missing], DataLoader, missing)
    empty = os.path.join(TMP, "empty-dir")
    os.mkdir(empty)
    raises((FileNotFoundError, ValueError), [empty], DataLoader, empty)
    os.mkdir(os.path.join(empty, "class_a"))	# a class, no images
    raises((FileNotFoundError, ValueError), [empty], DataLoader, empty)
    garbage = os.path.join(TMP, "garbage.idx")
    with open(garbage, "wb") as f:
        f.write(os.urandom(4096))
    raises(ValueError, [garbage], DataLoader, garbage)
    with open(garbage, "wb") as f:
        pass
    raises(ValueError, [garbage], DataLoader, garbage)
    del e


# ---- CUDA --------------------------------------------------------------------

def cuda_absent():
    """device="cuda" with no CUDA device: a RuntimeWarning saying so, and
    the batches on the CPU, the same as device="cpu" gives."""
    import warnings
    if torch.cuda.is_available():
        skip("a CUDA device is present")
    kw = dict(batch_size=16, size=32, cache=0, drop_last=False,
              return_ids=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        loader = DataLoader(BASE, device="cuda", **kw)
    msgs = [str(x.message) for x in w if issubclass(x.category,
                                                    RuntimeWarning)]
    check(any("is_available" in m and "CPU" in m for m in msgs),
          "no RuntimeWarning saying why it runs on the CPU: %r" % msgs)
    check(loader.device.type == "cpu" and loader.stats()["device"] == "cpu",
          "device after the fallback: %s" % loader.device)
    got = [(x.clone(), i) for x, _y, i in loader]
    ref = [(x.clone(), i) for x, _y, i in DataLoader(BASE, **kw)]
    check(len(got) == len(ref) and all(
        torch.equal(a, b) and torch.equal(ia, ib)
        for (a, ia), (b, ib) in zip(got, ref)),
        "the fallback's batches differ from device='cpu'")


def auto_fallback_levels():
    """cache="auto": no module at all is the embedded default (INFO); a
    device there but unusable is a WARNING; both fall back in-process."""
    import logging

    class Grab(logging.Handler):
        def __init__(self):
            super().__init__(logging.DEBUG)
            self.records = []

        def emit(self, record):
            self.records.append(record)

    lg = logging.getLogger("dlcache")
    old_level = lg.level
    lg.setLevel(logging.INFO)
    old_dev = os.environ.get("DLCACHE_DEVICE")
    try:
        for dev, want in (("/nonexistent/dlcache", logging.INFO),
                          ("/dev/null", logging.WARNING)):
            os.environ["DLCACHE_DEVICE"] = dev
            grab = Grab()
            lg.addHandler(grab)
            try:
                loader = DataLoader(BASE, batch_size=8, size=16, cache="auto")
            finally:
                lg.removeHandler(grab)
            hits = [r for r in grab.records
                    if "using the in-process cache" in r.getMessage()]
            check(len(hits) == 1, "%s: %d fallback lines: %r" % (
                dev, len(hits), [r.getMessage() for r in grab.records]))
            check(hits[0].levelno == want, "%s: the fallback is logged at %s,"
                  " want %s" % (dev, hits[0].levelname,
                                logging.getLevelName(want)))
            check(loader.stats()["backend"] == "inprocess", "not in-process")
            loader.close()
    finally:
        lg.setLevel(old_level)
        if old_dev is None:
            os.environ.pop("DLCACHE_DEVICE", None)
        else:
            os.environ["DLCACHE_DEVICE"] = old_dev


def cuda_path():
    """With CUDA: device="cuda" + normalize equals the CPU path's float32
    output; the host-to-device rate is measured."""
    if not torch.cuda.is_available():
        skip("no CUDA device")
    norm = ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    kw = dict(batch_size=16, size=96, train=False, cache=0, threads=2,
              drop_last=False, return_ids=True, normalize=norm)
    cpu = [(x.clone(), y, i) for x, y, i in DataLoader(BASE, **kw)]
    gpu = DataLoader(BASE, device="cuda", **kw)
    got = [(x.cpu(), y.cpu(), i.cpu()) for x, y, i in gpu]
    check(len(got) == len(cpu), "%d batches on cuda, %d on cpu"
          % (len(got), len(cpu)))
    for (a, ya, ia), (b, yb, ib) in zip(cpu, got):
        check(b.dtype == torch.float32, "cuda dtype %s" % b.dtype)
        check(torch.equal(ia, ib) and torch.equal(ya, yb), "IDs or labels")
        check(torch.allclose(a, b, atol=1e-5, rtol=1e-5),
              "cuda and cpu differ by %g" % (a - b).abs().max().item())
    gpu.close()
    # host-to-device rate of uint8 batches at a training size
    big = DataLoader(BASE, device="cuda", batch_size=32, size=224,
                     train=False, cache="inprocess", drop_last=False)
    for _ in big:
        pass		# warm the cache
    torch.cuda.synchronize()
    nbytes, t0 = 0, time.perf_counter()
    for _ in range(3):
        for x, _y in big:
            nbytes += x.numel()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print("# cuda_path: %.2f GB/s host to device, uint8 224x224 batches of "
          "32 (decode included)" % (nbytes / dt / 1e9), flush=True)
    big.close()


run("fail_corrupt", fail_kind, "corrupt", 3)
run("fail_truncated", fail_kind, "truncated", 12)
run("fail_empty", fail_kind, "empty", 21)
run("fail_not_jpeg", fail_kind, "not_jpeg", 27)
run("fail_missing", fail_kind, "missing", 35, err=errno.ENOENT)
run("fail_too_large", fail_kind, "too_large", 8, err=errno.E2BIG)
run("fail_unreadable_file", unreadable_file)
run("unreadable_dir", unreadable_dir)
run("skip_bad", skip_bad)
run("substitute_bad", substitute_bad)
run("all_bad", all_bad)
run("bad_args", bad_args)
run("scan_budget", scan_budget)
run("bad_sources", bad_sources)
run("cuda_absent", cuda_absent)
run("auto_fallback_levels", auto_fallback_levels)
run("cuda_path", cuda_path)
done()
