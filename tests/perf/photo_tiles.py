# SPDX-License-Identifier: MIT
"""Large photographs for the cluster section (tests/perf/cluster.sh): the
wallpapers `make deps` installs (mate-backgrounds,
plasma-workspace-wallpapers), cut into tiles of W x H (overlapping by
half, so that a wallpaper gives several) and saved as JPEGs of quality Q
in an ImageFolder of 4 classes under DIR. Prints the number of tiles;
exits 1 with a reason when fewer than 8 wallpapers are there.

Usage: photo_tiles.py DIR W H Q"""

import glob
import os
import sys

from PIL import Image

PHOTOS = sorted(glob.glob("/usr/share/backgrounds/mate/nature/*.jpg")) + \
    sorted(glob.glob("/usr/share/wallpapers/*/contents/images/2560x1600.jpg"))


def main():
    out, w, h, q = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
        int(sys.argv[4])
    if len(PHOTOS) < 8:
        sys.exit("photo_tiles: %d wallpapers installed, want 8 or more "
                 "(make deps installs them)" % len(PHOTOS))
    n = 0
    for path in PHOTOS:
        with Image.open(path) as im:
            im = im.convert("RGB")
            for y in range(0, im.height - h + 1, h // 2):
                for x in range(0, im.width - w + 1, w // 2):
                    d = os.path.join(out, "c%d" % (n % 4))
                    os.makedirs(d, exist_ok=True)
                    im.crop((x, y, x + w, y + h)).save(
                        os.path.join(d, "%04d.jpg" % n), quality=q)
                    n += 1
    print(n)


if __name__ == "__main__":
    main()
