# SPDX-License-Identifier: MIT
"""Labels agree with torchvision's ImageFolder on the same root: its
class_to_idx, and every delivered sample's label and path, on a tree whose
names sort in tricky ways (case, digits, non-ASCII, extension case)."""

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlctest  # noqa: E402
from dlctest import check  # noqa: E402

from dlcache.torch import DataLoader  # noqa: E402


def tricky_tree(src, dst):
    """Copy gen's images into classes named to sort unlike a human would."""
    names = ["Zebra", "apple", "b10", "b9", "b_1", "\u00e9migr\u00e9", "B2"]
    exts = [".jpg", ".JPG", ".jpeg", ".JpEg"]
    imgs = sorted(os.path.join(d, f) for d, _, fs in os.walk(src)
                  for f in fs if f.endswith(".jpg"))
    for i, path in enumerate(imgs):
        c = names[i % len(names)]
        os.makedirs(os.path.join(dst, c), exist_ok=True)
        name = "%s%03d%s" % ("Img" if i % 3 else "img", (i * 37) % 101,
                             exts[i % len(exts)])
        shutil.copy(path, os.path.join(dst, c, name))
    return dst


def same_as_imagefolder(root):
    try:
        from torchvision.datasets import ImageFolder
    except ImportError as e:
        dlctest.skip_required("torchvision: %s" % e)
    ref = ImageFolder(root)
    loader = DataLoader(root, batch_size=10, size=16, drop_last=False,
                        return_ids=True, cache=0, train=False)
    check(loader.class_to_idx == ref.class_to_idx,
          "class_to_idx %r, ImageFolder %r" % (loader.class_to_idx,
                                               ref.class_to_idx))
    check(loader.classes == ref.classes, "classes differ")
    seen = 0
    for _, labels, ids in loader:
        for label, i in zip(labels.tolist(), ids.tolist()):
            path, want = ref.samples[i]
            mine = os.path.join(loader.index.root, loader.index.relpath(i))
            check(os.path.realpath(mine) == os.path.realpath(path),
                  "sample %d is %s here, %s in ImageFolder" % (i, mine, path))
            check(label == want, "sample %d (%s): label %d, ImageFolder %d"
                  % (i, path, label, want))
            seen += 1
    check(seen == len(ref.samples), "%d samples delivered, ImageFolder has %d"
          % (seen, len(ref.samples)))


def main():
    tmp = dlctest.scratch("labels")
    gen = dlctest.gen_dataset(os.path.join(tmp, "gen"), images=60, classes=3)
    dlctest.run("gen_set", same_as_imagefolder, gen)
    tree = tricky_tree(gen, os.path.join(tmp, "tricky"))
    dlctest.run("tricky_names", same_as_imagefolder, tree)
    dlctest.done()


if __name__ == "__main__":
    main()
