# SPDX-License-Identifier: MIT
"""Every format torchvision's ImageFolder reads, against Pillow.

The files are real: Adwaita's icons (PNG, as Debian ships them) and the
photographs of mate-backgrounds and plasma-workspace-wallpapers, written
in each layout by Pillow (PNG, WebP lossy and lossless, TIFF raw, LZW,
deflate and JPEG, gray, 16-bit, palette, CMYK, BMP, PPM/PGM) or, for the PNG layouts Pillow does not write
(16-bit colour, 1/2/4-bit gray and palettes, Adam7 interlacing), by the
small PNG writer below on top of zlib. Each file goes through the
library's whole-image decode (`dlcachectl decode`) and must give exactly
Pillow's Image.open(f).convert("RGB"); through the loader (exact eval)
torchvision's Resize + CenterCrop of that image within 1 level, as
test_photos holds JPEGs to; cut short or damaged, a clear error naming
the format, never a crash; packed, the same batches as the files."""

import glob
import os
import random
import struct
import subprocess
import sys
import warnings
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlctest  # noqa: E402
from dlctest import check  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from dlcache.torch import DataLoader  # noqa: E402

PHOTOS = sorted(glob.glob("/usr/share/backgrounds/mate/nature/*.jpg")) + \
    sorted(glob.glob("/usr/share/wallpapers/*/contents/images/2560x1600.jpg"))
# Pillow's advice on converting palettes with tRNS; the test converts to RGB
warnings.filterwarnings("ignore", "Palette images with Transparency")
ICONS = sorted(glob.glob("/usr/share/icons/Adwaita/*/*/*.png"))
SIZE = 96


# ---- a PNG writer independent of Pillow and of the library ----

ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4),
         (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))


def _chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + \
        struct.pack(">I", zlib.crc32(body) & 0xffffffff)


def _row_bytes(row, depth):
    """Samples of one row (uint array, channels flattened) as PNG bytes."""
    if depth == 16:
        return row.astype(">u2").tobytes()
    if depth == 8:
        return row.astype(np.uint8).tobytes()
    per = 8 // depth
    pad = (-len(row)) % per
    r = np.concatenate([row, np.zeros(pad, row.dtype)]).reshape(-1, per)
    out = np.zeros(len(r), np.uint32)
    for k in range(per):
        out |= r[:, k].astype(np.uint32) << (8 - depth * (k + 1))
    return out.astype(np.uint8).tobytes()


def png_bytes(px, ctype, depth, palette=None, trns=None, interlace=False):
    """px: (h, w, channels) samples; filter 0 on every row."""
    h, w = px.shape[:2]
    raw = b""
    passes = ADAM7 if interlace else ((0, 0, 1, 1),)
    for x0, y0, dx, dy in passes:
        sub = px[y0::dy, x0::dx]
        if sub.shape[0] == 0 or sub.shape[1] == 0:
            continue
        for row in sub:
            raw += b"\0" + _row_bytes(row.reshape(-1), depth)
    out = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(
        ">IIBBBBB", w, h, depth, ctype, 0, 0, 1 if interlace else 0))
    if palette is not None:
        out += _chunk(b"PLTE", palette.astype(np.uint8).tobytes())
    if trns is not None:
        out += _chunk(b"tRNS", trns)
    return out + _chunk(b"IDAT", zlib.compress(raw, 6)) + _chunk(b"IEND", b"")


# ---- the corpus ----

def photo(i, size):
    from PIL import Image
    im = Image.open(PHOTOS[i % len(PHOTOS)]).convert("RGB")
    return im.resize(size, Image.BILINEAR)


def png_layouts(root):
    """The PNG layouts Pillow does not write, from photographs."""
    rgb = np.asarray(photo(0, (97, 61)))
    gray = np.asarray(photo(1, (83, 57)).convert("L"))
    wide = rgb.astype(np.uint16) * 257 + np.arange(97, dtype=np.uint16)[:, None]
    alpha = (np.arange(97 * 61) % 256).astype(np.uint8).reshape(61, 97, 1)
    pal = (np.arange(16 * 3) * 5 % 256).reshape(16, 3)
    out = {
        "rgb16": png_bytes(wide, 2, 16),
        "rgba16": png_bytes(np.dstack([wide, wide[:, :, :1]]), 6, 16),
        "rgb8-adam7": png_bytes(rgb, 2, 8, interlace=True),
        "rgba8-adam7": png_bytes(np.dstack([rgb, alpha]), 6, 8, interlace=True),
        "gray16": png_bytes((gray.astype(np.uint16) * 3)[:, :, None], 0, 16),
        "gray16-adam7": png_bytes((gray.astype(np.uint16) + 100)[:, :, None],
                                  0, 16, interlace=True),
        "gray16-alpha": png_bytes(np.dstack([gray.astype(np.uint16) * 257,
                                             gray.astype(np.uint16)]), 4, 16),
        "gray8-alpha-adam7": png_bytes(np.dstack([gray, gray[::-1]]), 4, 8,
                                       interlace=True),
        "gray8-trns": png_bytes(gray[:, :, None], 0, 8, trns=b"\0\x80"),
    }
    for depth in (1, 2, 4):
        g = (gray >> (8 - depth))[:, :, None]
        out["gray%d" % depth] = png_bytes(g, 0, depth)
        out["gray%d-adam7" % depth] = png_bytes(g, 0, depth, interlace=True)
        idx = (gray >> (8 - depth))[:, :, None]
        out["palette%d" % depth] = png_bytes(
            idx, 3, depth, palette=pal[:1 << depth],
            trns=bytes(range(0, 256, 256 >> depth)))
    for name, data in out.items():
        with open(os.path.join(root, "png-%s.png" % name), "wb") as f:
            f.write(data)


def pillow_layouts(root):
    """What Pillow writes, from photographs and in every mode it saves."""
    from PIL import Image
    for i, (w, h) in enumerate(((101, 67), (64, 64), (150, 99))):
        im = photo(i, (w, h))
        rgba = im.copy()
        rgba.putalpha(im.convert("L"))
        im.save(os.path.join(root, "pil-%d-rgb.png" % i))
        im.convert("P").save(os.path.join(root, "pil-%d-p.png" % i))
        im.convert("L").save(os.path.join(root, "pil-%d-l.png" % i))
        im.convert("1").save(os.path.join(root, "pil-%d-1.png" % i))
        im.save(os.path.join(root, "pil-%d-lossy.webp" % i), quality=80)
        im.save(os.path.join(root, "pil-%d-lossless.webp" % i), lossless=True)
        rgba.save(os.path.join(root, "pil-%d-alpha-lossy.webp" % i), quality=70)
        rgba.save(os.path.join(root, "pil-%d-alpha-lossless.webp" % i),
                  lossless=True)
        for comp in ("raw", "tiff_lzw", "tiff_adobe_deflate"):
            im.save(os.path.join(root, "pil-%d-%s.tif" % (i, comp)),
                    compression=comp)
        rgba.save(os.path.join(root, "pil-%d-rgba.tiff" % i),
                  compression="tiff_lzw")
        im.convert("L").save(os.path.join(root, "pil-%d-l.tiff" % i))
        im.convert("1").save(os.path.join(root, "pil-%d-1.tiff" % i))
        im.convert("P").save(os.path.join(root, "pil-%d-p.tiff" % i))
        # libtiff's RGBA path: JPEG-in-TIFF (YCbCr) and CMYK
        im.save(os.path.join(root, "pil-%d-jpeg.tiff" % i), compression="jpeg")
        im.convert("CMYK").save(os.path.join(root, "pil-%d-cmyk.tiff" % i))
        wide = np.asarray(im.convert("L")).astype(np.uint16) * 3
        Image.fromarray(wide, "I;16").save(
            os.path.join(root, "pil-%d-i16.tiff" % i))
        im.save(os.path.join(root, "pil-%d.bmp" % i))
        im.convert("P").save(os.path.join(root, "pil-%d-p.bmp" % i))
        im.save(os.path.join(root, "pil-%d.ppm" % i))
        im.convert("L").save(os.path.join(root, "pil-%d.pgm" % i))


def corpus(tmp):
    if len(PHOTOS) < 3:
        dlctest.skip_required("fewer than 3 photographs installed "
                              "(mate-backgrounds, plasma-workspace-wallpapers)")
    if len(ICONS) < 20:
        dlctest.skip_required("fewer than 20 Adwaita icons installed "
                              "(adwaita-icon-theme)")
    try:
        import PIL  # noqa: F401
    except ImportError as e:
        dlctest.skip_required("Pillow: %s" % e)
    root = os.path.join(tmp, "formats")
    os.makedirs(root, exist_ok=True)
    png_layouts(root)
    pillow_layouts(root)
    rnd = random.Random(7)
    for i, p in enumerate(rnd.sample(ICONS, 40)):
        os.symlink(p, os.path.join(root, "icon-%02d.png" % i))
    return sorted(os.path.join(root, f) for f in os.listdir(root))


# ---- the checks ----

def decode(path, out):
    r = subprocess.run([dlctest.dlcachectl(), "decode", path, "-o", out],
                       capture_output=True, text=True)
    return r.returncode, r.stderr.strip()


def pillow_rgb(path):
    from PIL import Image
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def same_as_pillow(files, tmp):
    from PIL import Image
    out = os.path.join(tmp, "out.ppm")
    bad = []
    for f in files:
        rc, err = decode(f, out)
        if rc:
            bad.append("%s: dlcachectl decode failed: %s"
                       % (os.path.basename(f), err))
            continue
        got = np.asarray(Image.open(out).convert("RGB"))
        want = pillow_rgb(f)
        if got.shape != want.shape:
            bad.append("%s: %s, Pillow %s" % (os.path.basename(f), got.shape,
                                              want.shape))
            continue
        d = np.abs(got.astype(int) - want.astype(int))
        if d.max():
            bad.append("%s: %d pixels differ, by up to %d levels"
                       % (os.path.basename(f), (d.max(axis=2) > 0).sum(),
                          d.max()))
    check(not bad, "%d of %d files differ from Pillow:\n  %s"
          % (len(bad), len(files), "\n  ".join(bad)))
    print("# formats: %d files pixel for pixel as Pillow (%s)"
          % (len(files), ", ".join(sorted({os.path.splitext(f)[1]
                                           for f in files}))))


def folder(files, tmp):
    root = os.path.join(tmp, "folder")
    for i, f in enumerate(files):
        d = os.path.join(root, "c%d" % (i % 3))
        os.makedirs(d, exist_ok=True)
        os.symlink(f, os.path.join(d, os.path.basename(f)))
    return root


def loader_like_torchvision(root):
    try:
        import torchvision.transforms as T
        from torchvision.datasets import ImageFolder
    except ImportError as e:
        dlctest.skip_required("torchvision: %s" % e)
    resize = (SIZE * 256 + 112) // 224
    ds = ImageFolder(root, transform=T.Compose([
        T.Resize(resize), T.CenterCrop(SIZE), T.PILToTensor()]))
    loader = DataLoader(root, batch_size=8, size=SIZE, train=False,
                        exact=True, drop_last=False, return_ids=True, cache=0)
    seen = 0
    for images, labels, ids in loader:
        for x, y, i in zip(images, labels.tolist(), ids.tolist()):
            img, label = ds[i]
            check(y == label, "sample %d: label %d, torchvision %d"
                  % (i, y, label))
            d = (x.int() - img.int()).abs().max().item()
            check(d <= 1, "%s: differs from torchvision by up to %d levels"
                  % (ds.samples[i][0], d))
            seen += 1
    check(seen == len(ds), "%d samples, ImageFolder has %d" % (seen, len(ds)))


def pack_same_as_files(root, tmp):
    """A pack keeps them as plain samples and gives the files' batches."""
    out = os.path.join(tmp, "formats.dlp")
    r = subprocess.run([dlctest.dlcachectl(), "pack", root, "-o", out,
                        "--force"], capture_output=True, text=True)
    check(r.returncode == 0, "pack: exit %d: %s" % (r.returncode, r.stderr))
    check("only JPEGs are restart-indexed" in r.stdout,
          "pack did not say why it kept them: %s" % r.stdout[-400:])
    kw = dict(batch_size=8, size=SIZE, seed=5, return_ids=True, cache=0)
    a, b = DataLoader(root, **kw), DataLoader(out, **kw)
    n = 0
    for (x, y, i), (u, v, j) in zip(a, b):
        check(torch.equal(i, j) and torch.equal(y, v),
              "ids %s vs %s" % (i.tolist(), j.tolist()))
        check(torch.equal(x, u), "samples %s: the pack's pixels differ"
              % i.tolist())
        n += len(i)
    check(n > 0, "no batches")


def damaged(files, tmp):
    """Cut short or flipped: an error naming the format, or pixels."""
    out = os.path.join(tmp, "out.ppm")
    bad_path = os.path.join(tmp, "bad")
    rnd = random.Random(3)
    picks = [f for f in files if "pil-0" in f or "png-rgb8-adam7" in f]
    n = 0
    for f in picks:
        data = open(f, "rb").read()
        for cut in (len(data) // 3, len(data) - 5):
            with open(bad_path, "wb") as g:
                g.write(data[:cut])
            rc, err = decode(bad_path, out)
            check(rc != 0 and ("truncated" in err or "corrupt" in err),
                  "%s cut to %d bytes: exit %d, %r"
                  % (os.path.basename(f), cut, rc, err))
            n += 1
        for _ in range(4):
            b = bytearray(data)
            for _ in range(8):
                b[rnd.randrange(16, len(b))] ^= 1 << rnd.randrange(8)
            with open(bad_path, "wb") as g:
                g.write(b)
            rc, err = decode(bad_path, out)
            check(rc in (0, 1) and (rc == 0 or err),
                  "%s with flipped bits: exit %d, %r"
                  % (os.path.basename(f), rc, err))
            n += 1
    with open(bad_path, "wb") as g:
        g.write(b"GIF89a" + bytes(32))
    rc, err = decode(bad_path, out)
    check(rc == 1 and "not an image" in err, "a GIF: exit %d, %r" % (rc, err))
    print("# formats: %d damaged files, each an error or pixels" % (n + 1))


def main():
    tmp = dlctest.scratch("formats")
    files = dlctest.run("corpus", corpus, tmp)
    if files:
        dlctest.run("same_as_pillow", same_as_pillow, files, tmp)
        root = folder(files, tmp)
        dlctest.run("loader_like_torchvision", loader_like_torchvision, root)
        dlctest.run("pack_same_as_files", pack_same_as_files, root, tmp)
        dlctest.run("damaged", damaged, files, tmp)
    dlctest.done()


if __name__ == "__main__":
    main()
