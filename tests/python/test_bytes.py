# SPDX-License-Identifier: MIT
"""dlcache.torch hands out the C library's bytes: checked against dlcachectl.

The reference is another program: `dlcachectl bench --digest` hashes every
batch of an epoch (pixels, labels, sample IDs, in order) with FNV-1a over
8-byte words, and `dlcachectl sample -o` writes one transformed sample as a
PPM. The same seed, epoch, rank and world through the Python package must
give the same digests and the same pixels.
"""

import json
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlctest  # noqa: E402
from dlctest import check  # noqa: E402

import torch  # noqa: E402
from dlcache.torch import DataLoader  # noqa: E402

FNV_OFFSET = 14695981039346656037
FNV_PRIME = 1099511628211
M64 = (1 << 64) - 1


def fnv_add(h, data):
    """bench.c's digest_add(): FNV-1a over little-endian 8-byte words."""
    n8 = len(data) // 8
    for (w,) in struct.iter_unpack("<Q", data[:n8 * 8]):
        h = ((h ^ w) * FNV_PRIME) & M64
    for b in data[n8 * 8:]:
        h = ((h ^ b) * FNV_PRIME) & M64
    return h


def python_digests(source, epochs, **kw):
    loader = DataLoader(source, return_ids=True, cache="inprocess", **kw)
    out = []
    for e in range(epochs):
        loader.set_epoch(e)
        h = FNV_OFFSET
        for images, labels, ids in loader:
            if kw.get("channels_last"):
                # the batch buffer is NHWC: the digest is over its bytes
                raw = images.permute(0, 2, 3, 1).contiguous()
            else:
                raw = images.contiguous()
            h = fnv_add(h, raw.numpy().tobytes())
            h = fnv_add(h, labels.to(torch.int32).numpy().tobytes())
            h = fnv_add(h, ids.to(torch.int32).numpy().tobytes())
        out.append("%016x" % h)
    loader.close()
    return out


def bench_digests(root, epochs, args):
    r = subprocess.run([dlctest.dlcachectl(), "bench", root, "--epochs",
                        str(epochs), "--digest", "--json", "--backend",
                        "inprocess"] + args, check=True,
                       stdout=subprocess.PIPE, text=True)
    return [e["digest"] for e in json.loads(r.stdout)["epochs"]]


def same_digests(root, kw, args, epochs=2):
    mine = python_digests(root, epochs, **kw)
    ref = bench_digests(root, epochs, args)
    print("# python %s, dlcachectl %s" % (mine, ref))
    check(mine == ref, "digests differ: python %s, dlcachectl bench %s"
          % (mine, ref))


def read_ppm(path):
    with open(path, "rb") as f:
        data = f.read()
    parts = data.split(None, 4)
    check(parts[0] == b"P6", "%s: not a binary PPM" % path)
    w, h = int(parts[1]), int(parts[2])
    # The pixels end the file; split() would eat leading whitespace bytes.
    return w, h, data[len(data) - w * h * 3:]


def same_samples(root, tmp):
    """Single samples against `dlcachectl sample -o` (HWC bytes)."""
    size, bs, epoch = 40, 8, 3
    loader = DataLoader(root, batch_size=bs, size=size, seed=5,
                        drop_last=False, return_ids=True, cache=0)
    loader.set_epoch(epoch)
    batches = [(x.clone(), i.clone()) for x, _, i in loader]
    for pos in (0, 7, 9, 30):
        x, ids = batches[pos // bs]
        ppm = os.path.join(tmp, "s%d.ppm" % pos)
        r = subprocess.run([dlctest.dlcachectl(), "sample", root, "--epoch",
                            str(epoch), "--pos", str(pos), "--seed", "5",
                            "--size", str(size), "-o", ppm, "--json"],
                           check=True, stdout=subprocess.PIPE, text=True)
        ref = json.loads(r.stdout)
        check(ref["id"] == int(ids[pos % bs]), "position %d: id %d, "
              "dlcachectl sample says %d" % (pos, ids[pos % bs], ref["id"]))
        w, h, rgb = read_ppm(ppm)
        mine = x[pos % bs].permute(1, 2, 0).contiguous().numpy().tobytes()
        check((w, h) == (size, size) and mine == rgb,
              "position %d (sample %d): pixels differ from dlcachectl sample"
              % (pos, ref["id"]))


def from_index_file(root, tmp, kw, args):
    """An index file from `dlcachectl index`, also moved: the same batches."""
    import shutil
    idx = os.path.join(tmp, "ds.idx")
    subprocess.run([dlctest.dlcachectl(), "index", root, "-o", idx],
                   check=True, stdout=subprocess.DEVNULL)
    ref = bench_digests(root, 1, args)
    mine = python_digests(idx, 1, **kw)
    check(mine == ref, "from the index file: %s, dlcachectl bench on the "
          "directory: %s" % (mine, ref))
    moved = os.path.join(tmp, "moved")
    shutil.copytree(root, moved)
    mine = python_digests(idx, 1, root=moved, **kw)
    check(mine == ref, "index file with root=moved: %s, want %s" % (mine, ref))


def main():
    tmp = dlctest.scratch("bytes")
    root = dlctest.gen_dataset(os.path.join(tmp, "ds"), images=150, classes=3)
    base = dict(batch_size=16, size=32, seed=7, drop_last=False)
    args = ["--batch-size", "16", "--size", "32", "--seed", "7"]
    dlctest.run("train_nchw", same_digests, root, base, args)
    dlctest.run("eval_nchw", same_digests, root, dict(base, train=False),
                args + ["--eval"])
    dlctest.run("train_channels_last", same_digests, root,
                dict(base, channels_last=True), args + ["--layout", "nhwc"])
    dlctest.run("rank1_of_3", same_digests, root,
                dict(base, rank=1, world_size=3),
                args + ["--rank", "1", "--world", "3"])
    dlctest.run("samples_vs_dlcachectl_sample", same_samples, root, tmp)
    dlctest.run("index_file_and_moved_root", from_index_file, root, tmp, base,
                args)
    dlctest.done()


if __name__ == "__main__":
    main()
