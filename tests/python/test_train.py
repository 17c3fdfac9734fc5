# SPDX-License-Identifier: MIT
"""A real training run: images and labels stay together.

tools/examples/train.py trains a small CNN on a `dlcachectl gen --distinct`
set (10 classes whose hue, motif and texture show even in a crop) at 32
pixels with RandomResizedCrop + flip, fed by torch's DataLoader and by
dlcache.torch.DataLoader. Each must reach 90% train accuracy in the last
epoch: only a loader that delivers each image with its own label, and
pixels that are the image's, gets there. Then the saved model is scored on
an independent view of the same images, torchvision's ImageFolder with
Resize + CenterCrop: a loader that kept the pairs together but got the
class order or the channel order wrong trains to 97% on its own data and
scores near 0% there (checked with a deliberately broken stand-in loader
that rolled labels in a batch, permuted the class numbers, or swapped RGB
to BGR: each failed).

The control shows that the bar means that: the same run with the labels
permuted within each batch (train.py --shuffle-labels, the batch's label
counts intact, the pairing gone) stays near chance, 10%. A loader that
mixed up images and labels across a batch would look like the control.

Lines starting with '#' give the measured accuracies and images/s.
"""

import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlctest  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "..", "..", "tools", "examples", "train.py")

CLASSES = 10
IMAGES = 800            # 80 an class: 90% is learning, not memorising
EPOCHS = 8              # ~97% at epoch 8 on 2 cores, ~15 s a run
BAR = 0.90
CHANCE_BAR = 0.30       # chance is 0.10; far from BAR either way
BUDGET_S = 120          # train.py --max-seconds: a run that does not
                        # finish its epochs in time fails the bar
COMMON = ["--size", "32", "--batch-size", "32", "--epochs", str(EPOCHS),
          "--lr", "0.05", "--workers", "2", "--json",
          "--max-seconds", str(BUDGET_S)]


def train(data, loader, *extra):
    """Run train.py; returns its per-epoch JSON records."""
    cmd = [sys.executable, TRAIN, data, "--loader", loader] + COMMON + \
        list(extra)
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=BUDGET_S + 60)
    secs = time.monotonic() - t0
    dlctest.check(p.returncode == 0, "%s: exit %d: %s"
                  % (" ".join(cmd), p.returncode, p.stderr.strip()))
    recs = [json.loads(line) for line in p.stdout.splitlines() if line]
    dlctest.check(recs, "%s printed no epochs" % " ".join(cmd))
    last = recs[-1]
    print("# %s%s: %d epochs in %.1f s, last: accuracy %.3f, loss %.3f, "
          "%.0f images/s, data wait %.2f s (%.1f ms/step)"
          % (loader, " " + " ".join(extra) if extra else "", len(recs), secs,
             last.get("accuracy", -1), last.get("loss", -1),
             last["images_per_s"], last["wait_s"], last["wait_ms_per_step"]),
          flush=True)
    return recs


def evaluate(data, model_file):
    """Accuracy of a saved model on torchvision's view of @data.

    An independent reference for what the loader under test delivered:
    ImageFolder's labels and PIL's pixels (Resize + CenterCrop), normalised
    as train.py does. A loader that trained the model on consistently
    wrong labels (another class order) or pixels (another channel order)
    passes its own train accuracy and fails here.
    """
    import importlib.util
    import torch
    import torchvision
    from torchvision import transforms
    spec = importlib.util.spec_from_file_location("train_example", TRAIN)
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    saved = torch.load(model_file, map_location="cpu")
    size = saved["size"]
    ds = torchvision.datasets.ImageFolder(data, transform=transforms.Compose([
        transforms.Resize(size), transforms.CenterCrop(size),
        transforms.PILToTensor()]))
    dlctest.check(saved["classes"] == ds.classes,
                  "the loader's classes %s are not ImageFolder's %s"
                  % (saved["classes"], ds.classes))
    model = ex.SmallCNN(len(ds.classes))
    model.load_state_dict(saved["model"])
    model.eval()
    correct = 0
    with torch.no_grad():
        for images, labels in torch.utils.data.DataLoader(
                ds, batch_size=100, num_workers=2):
            out = model(ex.normalize(images))
            correct += (out.argmax(1) == labels).sum().item()
    return correct / len(ds)


def learns(data, loader):
    model_file = os.path.join(os.path.dirname(data), loader + ".pt")
    recs = train(data, loader, "--save", model_file)
    last = recs[-1]
    dlctest.check(len(recs) == EPOCHS and last["complete"],
                  "stopped after %d of %d epochs (--max-seconds %d)"
                  % (len(recs), EPOCHS, BUDGET_S))
    dlctest.check(last["images"] == (IMAGES // 32) * 32,
                  "%d images in the last epoch, want %d"
                  % (last["images"], (IMAGES // 32) * 32))
    dlctest.check(last["accuracy"] >= BAR,
                  "%s: train accuracy %.3f after %d epochs, want >= %.2f"
                  % (loader, last["accuracy"], EPOCHS, BAR))
    acc = evaluate(data, model_file)
    print("# %s: the model's accuracy on torchvision's centre crops: %.3f"
          % (loader, acc), flush=True)
    dlctest.check(acc >= BAR, "%s: accuracy %.3f on torchvision's centre "
                  "crops, want >= %.2f" % (loader, acc, BAR))


def dlcache_importable():
    """None when `import dlcache.torch` works, else the reason."""
    p = subprocess.run([sys.executable, "-c", "import dlcache.torch"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    if p.returncode == 0:
        return None
    lines = p.stdout.strip().splitlines()
    return lines[-1] if lines else "exit %d" % p.returncode


def dlcache_learns(data, why):
    if why:
        dlctest.skip_required("import dlcache.torch: %s" % why)
    learns(data, "dlcache")


def control(data, loader):
    """Labels permuted within each batch: the model stays at chance."""
    recs = train(data, loader, "--shuffle-labels")
    last = recs[-1]
    dlctest.check(len(recs) == EPOCHS, "stopped after %d of %d epochs"
                  % (len(recs), EPOCHS))
    dlctest.check(last["accuracy"] < CHANCE_BAR,
                  "accuracy %.3f with the labels shuffled in each batch: "
                  "the task can be solved without the pairing, the bar "
                  "proves nothing" % last["accuracy"])


def no_model(data, loader):
    """--no-model: loading only, every batch delivered and counted."""
    cmd = [sys.executable, TRAIN, data, "--loader", loader, "--no-model",
           "--epochs", "1", "--size", "32", "--batch-size", "32", "--json"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=120)
    dlctest.check(p.returncode == 0, "%s: exit %d: %s"
                  % (" ".join(cmd), p.returncode, p.stderr.strip()))
    rec = json.loads(p.stdout.splitlines()[-1])
    dlctest.check(rec["steps"] == IMAGES // 32 and
                  rec["images"] == (IMAGES // 32) * 32 and
                  "accuracy" not in rec, "unexpected record %s" % rec)
    print("# %s --no-model: %.0f images/s" % (loader, rec["images_per_s"]),
          flush=True)


def main():
    try:
        import torch            # noqa: F401
        import torchvision      # noqa: F401
    except ImportError as e:
        dlctest.run("train", dlctest.skip_required,
                    "torch/torchvision not importable by %s: %s"
                    % (sys.executable, e))
        dlctest.done()
    tmp = dlctest.scratch("train")
    data = os.path.join(tmp, "distinct")
    try:
        if dlctest.run("gen-distinct", dlctest.gen_dataset, data,
                       images=IMAGES, classes=CLASSES,
                       extra=["--distinct"]):
            why = dlcache_importable()
            dlctest.run("no-model-torch", no_model, data, "torch")
            dlctest.run("torch-learns", learns, data, "torch")
            dlctest.run("dlcache-learns", dlcache_learns, data, why)
            # The control with the loader under test when there is one.
            dlctest.run("shuffled-labels-chance", control, data,
                        "torch" if why else "dlcache")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    dlctest.done()


if __name__ == "__main__":
    main()
