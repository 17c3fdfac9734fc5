# SPDX-License-Identifier: MIT
"""dlcache.torch against torchvision itself on real photographs (Debian's
mate-backgrounds and plasma-workspace-wallpapers, which `make deps`
installs): eval with exact=True is torchvision's Resize + CenterCrop of the
PIL image to within 1 level per pixel, in NCHW and channels_last, as uint8
and normalised float32; the default (reduced DCT scale) stays within the
library's documented tolerance (per sample: mean |diff| <= 3, 99.9th
percentile <= 40). The same photographs packed (`dlcachectl pack`, the
loader's MCU-exact decode of restart-indexed JPEGs) are held to the same
torchvision reference, and deliver the same train batches as the files,
pixel for pixel."""

import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlctest  # noqa: E402
from dlctest import check  # noqa: E402

import torch  # noqa: E402
from dlcache.torch import DataLoader  # noqa: E402

PHOTOS = sorted(glob.glob("/usr/share/backgrounds/mate/nature/*.jpg")) + \
    sorted(glob.glob("/usr/share/wallpapers/*/contents/images/2560x1600.jpg"))
SIZE = 160
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def photo_set(tmp):
    if len(PHOTOS) < 6:
        dlctest.skip_required("fewer than 6 photographs installed "
                              "(mate-backgrounds, plasma-workspace-wallpapers)")
    root = os.path.join(tmp, "photos")
    for i, p in enumerate(PHOTOS[:16]):
        d = os.path.join(root, "c%d" % (i % 3))
        os.makedirs(d, exist_ok=True)
        os.symlink(p, os.path.join(d, "%02d.jpg" % i))
    return root


def reference(root):
    try:
        import torchvision.transforms as T
        from torchvision.datasets import ImageFolder
    except ImportError as e:
        dlctest.skip_required("torchvision: %s" % e)
    resize = (SIZE * 256 + 112) // 224
    tf = T.Compose([T.Resize(resize), T.CenterCrop(SIZE), T.PILToTensor()])
    ds = ImageFolder(root, transform=tf)
    return ds, {i: ds[i] for i in range(len(ds))}


def compare(root, ref, exact, channels_last, normalize):
    ds, want = ref
    loader = DataLoader(root, batch_size=5, size=SIZE, train=False,
                        exact=exact, channels_last=channels_last,
                        normalize=(MEAN, STD) if normalize else None,
                        drop_last=False, return_ids=True, cache=0)
    mean = torch.tensor(MEAN).view(3, 1, 1)
    std = torch.tensor(STD).view(3, 1, 1)
    seen = 0
    for images, labels, ids in loader:
        check(images.shape[1:] == (3, SIZE, SIZE), "shape %s" % (images.shape,))
        if channels_last:
            check(images.is_contiguous(memory_format=torch.channels_last),
                  "not channels_last")
        for x, y, i in zip(images, labels.tolist(), ids.tolist()):
            img, label = want[i]
            check(y == label, "sample %d: label %d, torchvision %d"
                  % (i, y, label))
            if normalize:
                check(x.dtype == torch.float32, "dtype %s" % x.dtype)
                # back to levels: the normalisation is (x/255 - m) / s
                x = (x * std + mean) * 255
                d = (x - img.float()).abs()
                tol = 1.0 + 1e-3
            else:
                check(x.dtype == torch.uint8, "dtype %s" % x.dtype)
                d = (x.int() - img.int()).abs().float()
                tol = 1.0
            path = ds.samples[i][0]
            if exact:
                check(d.max().item() <= tol, "%s: differs from torchvision by "
                      "up to %.2f levels" % (path, d.max().item()))
            else:
                p999 = torch.quantile(d.flatten(), 0.999).item()
                check(d.mean().item() <= 3.0 and p999 <= 40,
                      "%s: mean |diff| %.2f, p99.9 %.1f (limits 3, 40)"
                      % (path, d.mean().item(), p999))
            seen += 1
    check(seen == len(ds), "%d samples, ImageFolder has %d" % (seen, len(ds)))


def pack(root, tmp):
    import subprocess
    out = os.path.join(tmp, "photos.dlp")
    subprocess.run([dlctest.dlcachectl(), "pack", root, "-o", out, "--force"],
                   check=True, stdout=subprocess.DEVNULL)
    return out


def same_train(root, packed):
    kw = dict(batch_size=4, size=SIZE, seed=5, return_ids=True, cache=0)
    n = 0
    for epoch in range(2):
        a, b = DataLoader(root, **kw), DataLoader(packed, **kw)
        a.set_epoch(epoch)
        b.set_epoch(epoch)
        for (x, y, i), (u, v, j) in zip(a, b):
            check(torch.equal(i, j) and torch.equal(y, v),
                  "epoch %d: ids %s vs %s" % (epoch, i.tolist(), j.tolist()))
            d = (x.int() - u.int()).abs()
            check(d.max().item() == 0, "epoch %d, samples %s: the pack's "
                  "pixels differ by up to %d levels" % (epoch, i.tolist(),
                                                      d.max().item()))
            n += 1
    check(n > 0, "no batches")


def main():
    tmp = dlctest.scratch("photos")
    root = dlctest.run("photo_set", photo_set, tmp)
    ref = dlctest.run("torchvision_reference", reference, root) \
        if root else None
    if ref is not None:
        dlctest.run("eval_exact_nchw", compare, root, ref, True, False, False)
        dlctest.run("eval_exact_channels_last_normalized", compare, root, ref,
                    True, True, True)
        dlctest.run("eval_default_within_tolerance", compare, root, ref,
                    False, False, False)
        packed = dlctest.run("pack", pack, root, tmp)
        if packed:
            dlctest.run("pack_eval_exact_nchw", compare, packed, ref, True,
                        False, False)
            dlctest.run("pack_eval_default_within_tolerance", compare, packed,
                        ref, False, False, False)
            dlctest.run("pack_train_same_as_files", same_train, root, packed)
    dlctest.done()


if __name__ == "__main__":
    main()
