# SPDX-License-Identifier: MIT
"""The PyTorch peer that dlcache is measured against.

torchvision's ImageFolder with RandomResizedCrop + RandomHorizontalFlip +
PILToTensor (uint8, no normalisation: the same work as dlcache, which hands
out uint8) in a DataLoader, timed per epoch. Images/s counts the images
delivered over the epoch's wall time, including the wait for the first
batch, since a training step waits for that too.

Tuned (the default) is the DataLoader at its best on CPU: persistent
workers and one intra-op thread per process, so that workers do not
oversubscribe the cores. --untuned restarts workers every epoch and leaves
torch's thread pools alone, as most training scripts do.

Run it with Debian's /usr/bin/python3, which has torch and torchvision.
"""

import argparse
import json
import os
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(
        description="PyTorch DataLoader baseline for dlcache benchmarks")
    p.add_argument("dir", metavar="DIR", help="ImageFolder data set root")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--size", type=int, default=224,
                   help="RandomResizedCrop output side (default 224)")
    p.add_argument("--seed", type=int, default=0,
                   help="torch seed for the shuffle and augmentations")
    p.add_argument("--json", action="store_true",
                   help="one JSON object on stdout instead of lines")
    p.add_argument("--untuned", action="store_true",
                   help="workers restarted each epoch, no thread limits")
    p.add_argument("--rank", type=int, default=0,
                   help="this process's shard (DistributedSampler)")
    p.add_argument("--world", type=int, default=1,
                   help="shards: the ranks of a job (default 1: all)")
    a = p.parse_args()
    if a.world < 1 or not 0 <= a.rank < a.world:
        p.error("--rank must be in 0 .. --world - 1")
    for name in ("epochs", "batch_size", "size"):
        if getattr(a, name) < 1:
            p.error("--%s must be at least 1" % name.replace("_", "-"))
    if a.workers < 0:
        p.error("--workers must be 0 or more")
    if not os.path.isdir(a.dir):
        p.error("%s is not a directory" % a.dir)
    return a


def limit_threads(_worker_id):
    # Each worker decodes one image at a time; torch's own pools would
    # only compete with the other workers for the same cores.
    import torch
    torch.set_num_threads(1)


def main():
    args = parse_args()
    try:
        import torch
        import torchvision
        from torchvision import transforms
    except ImportError as e:
        print("torch_baseline: torch/torchvision not importable by %s: %s "
              "(run it with /usr/bin/python3; apt-get install python3-torch "
              "python3-torchvision)" % (sys.executable, e), file=sys.stderr)
        return 2

    tuned = not args.untuned
    if tuned:
        torch.set_num_threads(1)
    torch.manual_seed(args.seed)

    tf = transforms.Compose([
        transforms.RandomResizedCrop(args.size),
        transforms.RandomHorizontalFlip(),
        transforms.PILToTensor(),
    ])
    try:
        ds = torchvision.datasets.ImageFolder(args.dir, transform=tf)
    except (FileNotFoundError, OSError) as e:
        print("torch_baseline: %s: %s" % (args.dir, e), file=sys.stderr)
        return 1

    sampler = None
    if args.world > 1:
        sampler = torch.utils.data.distributed.DistributedSampler(
            ds, num_replicas=args.world, rank=args.rank, shuffle=True,
            seed=args.seed)
    loader = torch.utils.data.DataLoader(
        ds, batch_size=args.batch_size, shuffle=sampler is None,
        sampler=sampler,
        num_workers=args.workers,
        persistent_workers=tuned and args.workers > 0,
        worker_init_fn=limit_threads if tuned else None)

    epochs = []
    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        n = 0
        t0 = time.perf_counter()
        for images, _labels in loader:
            n += images.shape[0]
        secs = time.perf_counter() - t0
        rate = n / secs if secs > 0 else 0.0
        epochs.append({"epoch": epoch, "images_per_s": round(rate, 1),
                       "seconds": round(secs, 3)})
        if not args.json:
            print("epoch %d: %d images in %.2f s: %.1f images/s"
                  % (epoch, n, secs, rate), flush=True)

    if args.json:
        print(json.dumps({"system": "pytorch", "workers": args.workers,
                          "batch_size": args.batch_size, "images": len(ds),
                          "tuned": tuned, "epochs": epochs}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
