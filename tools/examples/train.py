# SPDX-License-Identifier: MIT
"""Train a small CNN on an ImageFolder data set, fed by dlcache or by torch.

    /usr/bin/python3 tools/examples/train.py DIR --loader dlcache
    /usr/bin/python3 tools/examples/train.py DIR --loader torch --workers 2

Both loaders deliver the same thing: RandomResizedCrop(size) and a random
horizontal flip of each image, uint8 [B, 3, H, W], and int64 labels. The
model sees float32 (x / 255 - mean) / std: dlcache normalises itself
(normalize=(mean, std)), on the torch side the training loop does it.

Per epoch it prints the loss, the train accuracy, images/s, and how long the
training step waited for data: the time spent blocked in next(iterator),
in all and per step. A data pipeline that keeps up shows a wait near zero.

--no-model only loads (iterates and touches every batch): the loader's own
speed. --shuffle-labels permutes the labels within each batch, a control: a
model can then learn nothing but the class frequencies, so its accuracy
stays at chance, and a loader that mixed up images and labels would look
just like it.

Run it with an interpreter that has torch and torchvision (Debian's
/usr/bin/python3 has torch 1.13; the code also runs on torch 2.x). The
dlcache package is found on PYTHONPATH.
"""

import argparse
import json
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# ImageNet's channel statistics, in 0..1 units.
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Train a small CNN with dlcache or torch's DataLoader")
    p.add_argument("dir", metavar="DIR",
                   help="ImageFolder root (dlcache also takes an index file)")
    p.add_argument("--loader", choices=("dlcache", "torch"), default="dlcache")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--size", type=int, default=64,
                   help="RandomResizedCrop output side (default 64)")
    p.add_argument("--workers", type=int, default=2,
                   help="torch: DataLoader worker processes (default 2)")
    p.add_argument("--threads", type=int, default=None,
                   help="dlcache: decode threads (default: the library's)")
    p.add_argument("--lr", type=float, default=0.05,
                   help="SGD learning rate, one-cycle schedule (default 0.05)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--staging-dir", metavar="DIR", default=None,
                   help="dlcache: copy samples to DIR on local disk as they "
                        "are used; later epochs read the copies")
    p.add_argument("--device", default="cpu",
                   help="where the model runs: cpu (default), cuda, cuda:N")
    p.add_argument("--no-model", action="store_true",
                   help="only load: iterate and touch each batch")
    p.add_argument("--shuffle-labels", action="store_true",
                   help="control: permute the labels within each batch")
    p.add_argument("--max-seconds", type=float, default=None,
                   help="stop after this many seconds of wall time")
    p.add_argument("--json", action="store_true",
                   help="one JSON object per epoch on stdout, nothing else")
    p.add_argument("--save", metavar="FILE",
                   help="save the trained model and its classes to FILE")
    a = p.parse_args(argv)
    for name in ("epochs", "batch_size", "size"):
        if getattr(a, name) < 1:
            p.error("--%s must be at least 1" % name.replace("_", "-"))
    if a.workers < 0:
        p.error("--workers must be 0 or more")
    if a.threads is not None and a.threads < 1:
        p.error("--threads must be at least 1")
    if a.save and a.no_model:
        p.error("--save needs a model: not with --no-model")
    return a


# ---------------------------------------------------------------------------
# The two loaders. Each yields (uint8 or float32 images, int64 labels).
# ---------------------------------------------------------------------------

def dlcache_loader(args):
    """dlcache: decode, crop, flip and normalise in the library."""
    from dlcache.torch import DataLoader
    loader = DataLoader(args.dir, batch_size=args.batch_size, train=True,
                        size=args.size, seed=args.seed, drop_last=True,
                        # --no-model: uint8, the same output as torch's side
                        normalize=None if args.no_model else (MEAN, STD),
                        threads=args.threads,
                        device=args.device,
                        staging_dir=args.staging_dir)
    return loader, loader.classes


def limit_threads(_worker_id):
    # Each worker decodes one image at a time; torch's own thread pool in
    # every worker would only compete with the others for the same cores.
    torch.set_num_threads(1)


def torch_loader(args):
    """torchvision's ImageFolder in a DataLoader, tuned for CPU."""
    import torchvision
    from torchvision import transforms
    tf = transforms.Compose([
        transforms.RandomResizedCrop(args.size),
        transforms.RandomHorizontalFlip(),
        transforms.PILToTensor(),
    ])
    ds = torchvision.datasets.ImageFolder(args.dir, transform=tf)
    loader = torch.utils.data.DataLoader(
        ds, batch_size=args.batch_size, shuffle=True, drop_last=True,
        num_workers=args.workers, persistent_workers=args.workers > 0,
        worker_init_fn=limit_threads,
        pin_memory=torch.device(args.device).type == "cuda")
    return loader, ds.classes


def normalize(images, device="cpu"):
    """uint8 [B, 3, H, W] to float32 (x / 255 - mean) / std on @device,
    as dlcache does with normalize=(mean, std)."""
    images = images.to(device, non_blocking=True)
    if images.dtype != torch.uint8:
        return images           # dlcache already normalised it
    mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=device).view(1, 3, 1, 1)
    return (images.float() / 255 - mean) / std


# ---------------------------------------------------------------------------
# The model: four conv blocks, global average pooling, one linear layer.
# ---------------------------------------------------------------------------

class SmallCNN(nn.Module):
    def __init__(self, classes, width=32):
        super().__init__()
        chans = (3, width, width * 2, width * 4, width * 4)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                          nn.BatchNorm2d(cout), nn.ReLU(inplace=True))
            for cin, cout in zip(chans, chans[1:]))
        self.fc = nn.Linear(chans[-1], classes)

    def forward(self, x):
        for k, block in enumerate(self.blocks):
            x = block(x)
            if k < len(self.blocks) - 1:
                x = F.max_pool2d(x, 2)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


# ---------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------

def run_epoch(epoch, loader, model, opt, sched, args, deadline):
    """One pass over @loader; returns the epoch's numbers as a dict."""
    if hasattr(loader, "set_epoch"):
        loader.set_epoch(epoch)         # dlcache: this epoch's order
    if model is not None:
        model.train()
    images_seen = steps = correct = 0
    loss_sum = wait = 0.0
    complete = True
    t0 = time.perf_counter()
    it = iter(loader)
    while True:
        # The time the training step waits for data: blocked in next().
        tw = time.perf_counter()
        try:
            images, labels = next(it)
        except StopIteration:
            break
        wait += time.perf_counter() - tw

        if args.shuffle_labels:
            labels = labels[torch.randperm(labels.shape[0],
                                           device=labels.device)]
        if model is None:
            # Touch the batch so that a lazy loader does its work.
            images.reshape(-1)[0].item()
        else:
            labels = labels.to(args.device, non_blocking=True)
            out = model(normalize(images, args.device))
            loss = F.cross_entropy(out, labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            loss_sum += loss.item() * labels.shape[0]
            correct += (out.argmax(1) == labels).sum().item()
        images_seen += labels.shape[0]
        steps += 1
        if deadline is not None and time.perf_counter() > deadline:
            complete = False
            break
    secs = time.perf_counter() - t0
    n = max(images_seen, 1)
    rec = {"epoch": epoch, "images": images_seen, "steps": steps,
           "seconds": round(secs, 3),
           "images_per_s": round(images_seen / secs, 1) if secs > 0 else 0.0,
           "wait_s": round(wait, 3),
           "wait_ms_per_step": round(1e3 * wait / max(steps, 1), 2),
           "complete": complete}
    if model is not None:
        rec["loss"] = round(loss_sum / n, 4)
        rec["accuracy"] = round(correct / n, 4)
    return rec


def describe(rec):
    s = "epoch %d:" % rec["epoch"]
    if "loss" in rec:
        s += " loss %.3f, train accuracy %.1f%%," % (rec["loss"],
                                                   100 * rec["accuracy"])
    s += (" %d images in %.1f s: %.0f images/s; waited %.2f s for data"
          " (%.1f ms/step)" % (rec["images"], rec["seconds"],
                               rec["images_per_s"], rec["wait_s"],
                               rec["wait_ms_per_step"]))
    if not rec["complete"]:
        s += " (stopped: --max-seconds)"
    return s


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    try:
        if args.loader == "dlcache":
            loader, classes = dlcache_loader(args)
        else:
            loader, classes = torch_loader(args)
    except ImportError as e:
        print("train.py: cannot use --loader %s: %s" % (args.loader, e),
              file=sys.stderr)
        return 2
    except (OSError, ValueError, RuntimeError) as e:
        print("train.py: %s: %s" % (args.dir, e), file=sys.stderr)
        return 1
    steps_per_epoch = len(loader)
    if steps_per_epoch < 1:
        print("train.py: %s: fewer images than one batch of %d"
              % (args.dir, args.batch_size), file=sys.stderr)
        return 1

    model = opt = sched = None
    if not args.no_model:
        model = SmallCNN(len(classes)).to(args.device)
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9,
                              weight_decay=5e-4, nesterov=True)
        sched = torch.optim.lr_scheduler.OneCycleLR(
            opt, max_lr=args.lr, epochs=args.epochs,
            steps_per_epoch=steps_per_epoch)

    start = time.perf_counter()
    deadline = start + args.max_seconds if args.max_seconds else None
    if not args.json:
        print("%s: %d classes, %d steps of %d per epoch, loader %s"
              % (args.dir, len(classes), steps_per_epoch, args.batch_size,
                 args.loader), flush=True)
    for epoch in range(args.epochs):
        rec = run_epoch(epoch, loader, model, opt, sched, args, deadline)
        if args.json:
            rec["loader"] = args.loader
            print(json.dumps(rec), flush=True)
        else:
            print(describe(rec), flush=True)
        if not rec["complete"] or (deadline and time.perf_counter() > deadline):
            break
    if hasattr(loader, "stats") and not args.json:
        print("dlcache stats: %s" % loader.stats())
    if args.save and model is not None:
        # The class names give the label numbers their meaning.
        torch.save({"model": model.state_dict(), "classes": list(classes),
                    "size": args.size}, args.save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
