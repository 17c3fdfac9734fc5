// SPDX-License-Identifier: MIT
/*
 * An image's size from its header (dlc_image_dims(), decode/dims.c:
 * what forms.c sizes a decoded form by before making it), against
 * Pillow's Image.open(f).size:
 *   - pillow: Pillow writes every format and layout the loader reads
 *     (JPEG baseline, progressive, gray, CMYK and with 60 KB of APP
 *     segments before its frame; PNG RGB, palette and interlaced; WebP
 *     lossy, lossless and extended (VP8X); BMP; PPM, PGM, PBM with a comment;
 *     TIFF raw, LZW and big-endian 16-bit gray), at odd sizes and from the real
 *     photographs `make deps` installs; each must give Pillow's size;
 *   - cut: every prefix of each file's first 4 KB (in a buffer of just
 *     its length, so that ASan sees any read past it) gives an error or
 *     the same size, never another;
 *   - hostile: bytes of the headers flipped at random, and headers made
 *     by hand (a JPEG whose height comes after its scan, a scan before
 *     any frame, a BMP of height INT32_MIN, no format): an error or a
 *     size, never a read out of bounds.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image.h"

#include "helpers/testutil.h"

static const char pillow_script[] =
	"import glob, os, sys\n"
	"from PIL import Image\n"
	"out = sys.argv[1]\n"
	"photos = sorted(glob.glob('/usr/share/backgrounds/mate/nature/*.jpg'))[:2]\n"
	"imgs = [Image.effect_noise((333, 217), 60).convert('RGB'),\n"
	"        Image.linear_gradient('L').resize((17, 1025)).convert('RGB'),\n"
	"        Image.new('RGB', (1, 1), (200, 10, 30))]\n"
	"imgs += [Image.open(p).convert('RGB').crop((0, 0, 2001, 1499))\n"
	"         for p in photos]\n"
	"lines = []\n"
	"def put(name, im, fmt, **kw):\n"
	"    path = os.path.join(out, name)\n"
	"    im.save(path, fmt, **kw)\n"
	"    w, h = Image.open(path).size\n"
	"    lines.append('%s %d %d' % (name, w, h))\n"
	"for k, im in enumerate(imgs):\n"
	"    put('%d.jpg' % k, im, 'JPEG', quality=90)\n"
	"    put('%d-prog.jpg' % k, im, 'JPEG', progressive=True)\n"
	"    put('%d-gray.jpg' % k, im.convert('L'), 'JPEG')\n"
	"    put('%d-cmyk.jpg' % k, im.convert('CMYK'), 'JPEG')\n"
	"    put('%d-app.jpg' % k, im, 'JPEG', icc_profile=b'\\0' * 60000)\n"
	"    put('%d.png' % k, im, 'PNG')\n"
	"    put('%d-pal.png' % k, im.convert('P'), 'PNG')\n"
	"    put('%d-adam7.png' % k, im, 'PNG', interlace=1)\n"
	"    if im.width <= 16383 and im.height <= 16383:\n"
	"        put('%d.webp' % k, im, 'WEBP', quality=80)\n"
	"        put('%d-ll.webp' % k, im, 'WEBP', lossless=True)\n"
	"        put('%d-vp8x.webp' % k, im, 'WEBP', exif=b'Exif\\0\\0abc')\n"
	"        assert open(os.path.join(out, '%d-vp8x.webp' % k), 'rb').read(16)[12:] == b'VP8X'\n"
	"    put('%d.bmp' % k, im, 'BMP')\n"
	"    put('%d.ppm' % k, im, 'PPM')\n"
	"    put('%d.pgm' % k, im.convert('L'), 'PPM')\n"
	"    put('%d.pbm' % k, im.convert('1'), 'PPM')\n"
	"    put('%d.tif' % k, im, 'TIFF')\n"
	"    put('%d-lzw.tif' % k, im, 'TIFF', compression='tiff_lzw')\n"
	"    be = Image.frombytes('I;16B', im.size, bytes(2 * im.width * im.height))\n"
	"    put('%d-mm.tif' % k, be, 'TIFF')\n"
	"    assert open(os.path.join(out, '%d-mm.tif' % k), 'rb').read(2) == b'MM'\n"
	"with open(os.path.join(out, 'comment.ppm'), 'wb') as f:\n"
	"    f.write(b'P6\\n# a comment\\n 5\\t7\\n255\\n' + bytes(105))\n"
	"w, h = Image.open(os.path.join(out, 'comment.ppm')).size\n"
	"lines.append('comment.ppm %d %d' % (w, h))\n"
	"with open(os.path.join(out, 'manifest'), 'w') as f:\n"
	"    f.write('\\n'.join(lines) + '\\n')\n"
	"print(len(photos))\n";

static int have_pillow(void)
{
	return !access("/usr/bin/python3", X_OK) &&
	       !system("/usr/bin/python3 -c 'import PIL' >/dev/null 2>&1");
}

/* dlc_image_dims() of @len bytes copied to a buffer of just that size. */
static int dims_exact(const uint8_t *b, size_t len, uint32_t *w, uint32_t *h)
{
	uint8_t *copy = malloc(len ? len : 1);
	int ret;

	if (!copy)
		return -ENOMEM;
	if (len)
		memcpy(copy, b, len);
	ret = dlc_image_dims(copy, len, w, h);
	free(copy);
	return ret;
}

/* Each prefix of the first 4 KB: an error or the whole file's size. */
static void check_prefixes(const char *name, const uint8_t *b, size_t len,
			   uint32_t w, uint32_t h)
{
	size_t n, top = len < 4096 ? len : 4096;
	uint32_t pw, ph;

	for (n = 0; n <= top; n++) {
		if (dims_exact(b, n, &pw, &ph))
			continue;
		CHECK(pw == w && ph == h,
		      "%s cut to %zu bytes: %ux%u, not %ux%u", name, n, pw, ph,
		      w, h);
	}
}

/* Random bytes of the first 256 flipped: whatever it says, in bounds. */
static void check_flips(const uint8_t *b, size_t len)
{
	size_t top = len < 256 ? len : 256;
	uint8_t *m = malloc(top);
	uint32_t i, w, h;

	if (!m)
		return;
	for (i = 0; i < 300; i++) {
		memcpy(m, b, top);
		m[rand() % top] ^= (uint8_t)(1 + rand() % 255);
		m[rand() % top] = (uint8_t)rand();
		(void)dims_exact(m, top, &w, &h);
	}
	free(m);
}

static void test_pillow(void)
{
	char *dir, cmd[PATH_MAX + 200], path[PATH_MAX], name[256];
	uint32_t files = 0, w, h, gw, gh;
	FILE *f, *p;
	int photos = 0;

	if (!have_pillow()) {
		t_skip_required("test_pillow", "no Pillow for /usr/bin/python3 (python3-pil)");
		return;
	}
	dir = t_mkdtemp(NULL);
	snprintf(path, sizeof(path), "%s/make.py", dir);
	CHECK(!t_write_file(path, pillow_script, strlen(pillow_script)),
	      "write %s", path);
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s %s", path, dir);
	p = popen(cmd, "r");
	CHECK(p && fscanf(p, "%d", &photos) == 1, "%s", cmd);
	CHECK(p && pclose(p) == 0, "%s failed", cmd);
	if (photos < 2)
		t_skip_required("test_pillow/photographs", "no mate-backgrounds photographs (make deps)");
	snprintf(path, sizeof(path), "%s/manifest", dir);
	f = fopen(path, "r");
	CHECK(f, "no manifest from Pillow");
	while (f && fscanf(f, "%255s %u %u", name, &w, &h) == 3) {
		size_t len;
		uint8_t *b;
		int ret;

		snprintf(path, sizeof(path), "%s/%s", dir, name);
		b = t_read_file(path, &len);
		CHECK(b, "read %s", path);
		if (!b)
			continue;
		gw = gh = 0;
		ret = dims_exact(b, len, &gw, &gh);
		CHECK(ret == 0 && gw == w && gh == h,
		      "%s: %d, %ux%u; Pillow says %ux%u", name, ret, gw, gh, w,
		      h);
		check_prefixes(name, b, len, w, h);
		check_flips(b, len);
		free(b);
		files++;
	}
	if (f)
		fclose(f);
	/* 3 or 5 images x 18 files, and the comment's */
	CHECK(files >= 3 * 18 + 1, "only %u files from Pillow", files);
	printf("# %u files, %d of them cut from photographs\n", files,
	       photos * 18);
	t_rmtree(dir);
	free(dir);
}

static void test_by_hand(void)
{
	/* SOI, SOF0 with height 0 (given by a DNL after the scan) */
	static const uint8_t dnl[] = {
		0xff, 0xd8, 0xff, 0xc0, 0x00, 0x0b, 0x08, 0x00, 0x00,
		0x00, 0x10, 0x01, 0x01, 0x11, 0x00,
	};
	/* SOI, fill bytes, APP0 of 4 bytes, SOS before any frame */
	static const uint8_t sos[] = {
		0xff, 0xd8, 0xff, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00,
		0xff, 0xda, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x3f, 0x00,
	};
	/* SOI, RST0 (no length), SOF2 of 640 x 480 */
	static const uint8_t sof2[] = {
		0xff, 0xd8, 0xff, 0xd0, 0xff, 0xc2, 0x00, 0x0b, 0x08, 0x01,
		0xe0, 0x02, 0x80, 0x01, 0x01, 0x11, 0x00,
	};
	uint8_t bmp[54] = { 'B', 'M' };
	uint32_t w = 0, h = 0;

	CHECK_EQ(dims_exact(dnl, sizeof(dnl), &w, &h), -EBADMSG);
	CHECK_EQ(dims_exact(sos, sizeof(sos), &w, &h), -EBADMSG);
	CHECK_EQ(dims_exact(sof2, sizeof(sof2), &w, &h), 0);
	CHECK(w == 640 && h == 480, "SOF2: %ux%u", w, h);
	CHECK_EQ(dims_exact((const uint8_t *)"GIF89a", 6, &w, &h), -ENOENT);
	CHECK_EQ(dims_exact(NULL, 0, &w, &h), -ENOENT);
	bmp[14] = 40;
	bmp[18] = 3;
	bmp[25] = 0x80;		/* height INT32_MIN */
	CHECK_EQ(dims_exact(bmp, sizeof(bmp), &w, &h), -EBADMSG);
	bmp[22] = 0xfe;		/* height -2: rows top-down */
	bmp[23] = bmp[24] = bmp[25] = 0xff;
	CHECK_EQ(dims_exact(bmp, sizeof(bmp), &w, &h), 0);
	CHECK(w == 3 && h == 2, "top-down BMP: %ux%u", w, h);
}

int main(void)
{
	srand(7);
	T_RUN(test_pillow);
	T_RUN(test_by_hand);
	return t_done("test_dims");
}
