// SPDX-License-Identifier: MIT
/*
 * BMP, decoded whole to packed RGB: the pixels of Pillow 9.4's
 * BmpImagePlugin (Debian bookworm's python3-pil) followed by
 * convert("RGB"), rules read from BmpImagePlugin.py and checked against
 * it pixel for pixel:
 *
 *  - "BM", then an info header of 12 (OS/2 1.x: 16-bit sides, 3-byte
 *    palette entries), 40, 64, 108 or 124 bytes; no other size.
 *  - Height is bottom-up unless the top byte of its 32 bits is 0xFF
 *    (then top-down, 2^32 - height rows); width is unsigned.
 *  - 1, 4 and 8 bits through a palette of `colors` entries (2^bits when
 *    0, at most 65536), read right after the header. A palette that is
 *    a grey ramp (i, i, i) for every entry, or black and white for two
 *    entries, is dropped: the rows are then read as 8-bit grey ("L") or
 *    1-bit ("1") whatever the header's bits (a Pillow quirk, kept). An
 *    index past the palette is grey (i, i, i); over 256 colours that
 *    are not grey Pillow refuses. A palette cut by the end of the file
 *    keeps the entries it holds.
 *  - 16 bits: 5-5-5, or 5-6-5 / 5-5-5 as BI_BITFIELDS masks; 24 bits
 *    BGR; 32 bits BGRX, or the BI_BITFIELDS masks Pillow lists (alpha
 *    dropped). Other masks, depths and compressions are unsupported.
 *  - Rows padded to 4 bytes; the data at bfOffBits (0: where the header
 *    and palette end; moved past the palette when it points at it).
 *  - RLE8 and RLE4 as Pillow's Python decoder walks them, quirks kept:
 *    a delta reads two bytes it ignores then right and up, an RLE4
 *    absolute run of n pixels reads n / 2 bytes (2 * (n / 2) pixels),
 *    absolute runs may spill past the row, words align on the offset in
 *    the file; the bitmap must yield every pixel (end of bitmap early is
 *    an error).
 *
 * A file Pillow reads only with LOAD_TRUNCATED_IMAGES, or whose last RLE
 * absolute run the file cuts short (Pillow keeps what it has), fails as
 * truncated.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "dlcache.h"
#include "image.h"

#define BMP_FILE_HEADER	14

enum {
	BMP_RAW = 0,
	BMP_RLE8 = 1,
	BMP_RLE4 = 2,
	BMP_BITFIELDS = 3,
};

/* How a row's pixels are stored, after Pillow's raw modes. */
enum bmp_pix {
	BMP_PIX_INDEX,		/* 1, 4 or 8 bits through lut */
	BMP_PIX_BGR15,		/* 16 bits, x-5-5-5 */
	BMP_PIX_BGR16,		/* 16 bits, 5-6-5 */
	BMP_PIX_BGR24,		/* B, G, R */
	BMP_PIX_32,		/* 4 bytes, R, G, B at off[] */
};

struct bmp {
	const uint8_t *buf;
	size_t len;
	uint32_t hsize;		/* info header size */
	uint32_t width, height;
	int topdown;
	uint32_t bits, comp;
	uint64_t colors;	/* palette entries (field, or 1 << bits) */
	uint32_t masks[4];	/* BI_BITFIELDS: R, G, B, A */
	uint64_t tell;		/* where Pillow's header reads end */
	uint64_t data;		/* where the pixels start */
	enum bmp_pix pix;
	unsigned int pix_bits;	/* bits per pixel as the rows are read */
	unsigned int off[3];	/* BMP_PIX_32: byte of R, G, B */
	char mode;		/* 'P', 'L', '1' (index), 0 (direct) */
	uint8_t lut[256][3];	/* index to RGB */
};

static uint32_t le16(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8;
}

static uint32_t le32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static int bmp_truncated(struct dlc_image *im, const char *what,
			 uint64_t end, size_t len)
{
	return dlc_image_fail(im, DLC_ERR_TRUNCATED, -EBADMSG,
			      "truncated BMP: %s ends at byte %llu of %zu",
			      what, (unsigned long long)end, len);
}

static int bmp_unsupported(struct dlc_image *im, const char *what,
			   uint32_t val)
{
	return dlc_image_fail(im, DLC_ERR_CORRUPT, -EBADMSG,
			      "unsupported BMP: %s %u", what, val);
}

/* The info header after its size: sides, depth, compression, masks. */
static int bmp_info(struct dlc_image *im, struct bmp *b)
{
	const uint8_t *h = b->buf + BMP_FILE_HEADER + 4;
	uint32_t field;
	int i;

	b->tell = BMP_FILE_HEADER + b->hsize;
	if (b->hsize == 12) {
		b->width = le16(h);
		b->height = le16(h + 2);
		b->bits = le16(h + 6);
		b->comp = BMP_RAW;
		b->colors = b->bits <= 8 ? 1u << b->bits : 0;
		return 0;
	}
	b->topdown = h[7] == 0xff;
	b->width = le32(h);
	b->height = b->topdown ? 0u - le32(h + 4) : le32(h + 4);
	b->bits = le16(h + 10);
	b->comp = le32(h + 12);
	field = le32(h + 28);
	b->colors = field ? field : b->bits <= 8 ? 1u << b->bits : 0;
	if (b->comp != BMP_BITFIELDS)
		return 0;
	if (b->hsize >= 56) {
		for (i = 0; i < 4; i++)
			b->masks[i] = le32(h + 36 + 4 * i);
		return 0;
	}
	/* A 40-byte header: three masks follow it, no alpha. */
	if (b->len < b->tell + 12)
		return bmp_truncated(im, "bit field masks", b->tell + 12,
				     b->len);
	for (i = 0; i < 3; i++)
		b->masks[i] = le32(b->buf + b->tell + 4 * i);
	b->tell += 12;
	return 0;
}

static int bmp_headers(struct dlc_image *im, struct bmp *b)
{
	uint32_t hs;
	int err;

	if (b->len < 2 || b->buf[0] != 'B' || b->buf[1] != 'M')
		return dlc_image_fail(im, DLC_ERR_NOT_JPEG, -EBADMSG,
				      "not a BMP file");
	if (b->len < BMP_FILE_HEADER + 4)
		return bmp_truncated(im, "file header", BMP_FILE_HEADER + 4,
				     b->len);
	hs = le32(b->buf + BMP_FILE_HEADER);
	if (hs != 12 && hs != 40 && hs != 64 && hs != 108 && hs != 124)
		return bmp_unsupported(im, "header size", hs);
	b->hsize = hs;
	if (b->len < BMP_FILE_HEADER + hs)
		return bmp_truncated(im, "info header", BMP_FILE_HEADER + hs,
				     b->len);
	err = bmp_info(im, b);
	if (err)
		return err;
	b->data = le32(b->buf + 10);
	if (b->data == BMP_FILE_HEADER + hs && b->bits <= 8)
		b->data += 4 * b->colors;	/* 4 even for OS/2's 3 */
	if (b->bits != 1 && b->bits != 4 && b->bits != 8 && b->bits != 16 &&
	    b->bits != 24 && b->bits != 32)
		return bmp_unsupported(im, "bit depth", b->bits);
	return 0;
}

/* A 32-bit BI_BITFIELDS layout Pillow knows: the bytes of R, G and B. */
static int bmp_masks32(struct bmp *b)
{
	static const struct {
		uint32_t m[4];
		unsigned int off[3];
	} known[] = {
		{ { 0xff0000, 0xff00, 0xff, 0 }, { 2, 1, 0 } },
		{ { 0xff000000, 0xff0000, 0xff00, 0 }, { 3, 2, 1 } },
		{ { 0xff000000, 0xff0000, 0xff00, 0xff }, { 3, 2, 1 } },
		{ { 0xff, 0xff00, 0xff0000, 0xff000000 }, { 0, 1, 2 } },
		{ { 0xff0000, 0xff00, 0xff, 0xff000000 }, { 2, 1, 0 } },
		{ { 0, 0, 0, 0 }, { 2, 1, 0 } },
	};
	size_t i;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		if (memcmp(b->masks, known[i].m, sizeof(b->masks)))
			continue;
		memcpy(b->off, known[i].off, sizeof(b->off));
		return 0;
	}
	return -1;
}

/* Pillow's raw mode for the depth and compression: b->pix, b->off. */
static int bmp_layout(struct dlc_image *im, struct bmp *b)
{
	const uint32_t *m = b->masks;

	b->pix_bits = b->bits;
	b->off[0] = 2, b->off[1] = 1, b->off[2] = 0;
	if (b->bits <= 8)
		b->pix = BMP_PIX_INDEX;
	else if (b->bits == 16)
		b->pix = BMP_PIX_BGR15;
	else if (b->bits == 24)
		b->pix = BMP_PIX_BGR24;
	else
		b->pix = BMP_PIX_32;
	switch (b->comp) {
	case BMP_RAW:
		return 0;
	case BMP_RLE8:
	case BMP_RLE4:
		if (b->bits > 8)
			return bmp_unsupported(im, "RLE at bit depth", b->bits);
		return 0;
	case BMP_BITFIELDS:
		if (b->bits == 32 && !bmp_masks32(b))
			return 0;
		if (b->bits == 24 && m[0] == 0xff0000 && m[1] == 0xff00 &&
		    m[2] == 0xff)
			return 0;
		if (b->bits == 16 && m[0] == 0xf800 && m[1] == 0x7e0 &&
		    m[2] == 0x1f) {
			b->pix = BMP_PIX_BGR16;
			return 0;
		}
		if (b->bits == 16 && m[0] == 0x7c00 && m[1] == 0x3e0 &&
		    m[2] == 0x1f)
			return 0;
		return bmp_unsupported(im, "bit field layout at bit depth",
				       b->bits);
	}
	return bmp_unsupported(im, b->comp == 4 ? "JPEG compression" :
			       b->comp == 5 ? "PNG compression" :
			       "compression", b->comp);
}

/*
 * Whether Pillow drops the palette as grey: entries 0..n-1 (mod 256), or
 * 0 and 255 for two, of which the first @avail bytes are in the file.
 */
static int bmp_palette_grey(const uint8_t *pal, uint32_t n, unsigned int pad,
			    size_t avail)
{
	uint32_t i;
	uint8_t v;

	for (i = 0; i < n; i++) {
		v = n == 2 ? (i ? 255 : 0) : (uint8_t)i;
		if ((size_t)i * pad + 3 > avail || pal[i * pad] != v ||
		    pal[i * pad + 1] != v || pal[i * pad + 2] != v)
			return 0;
	}
	return 1;
}

/*
 * Read the palette into b->lut, or drop it as Pillow does: b->mode. As
 * Pillow, a palette the file's end cuts short has the entries it holds
 * (the pixels, found by bfOffBits, may still be whole).
 */
static int bmp_palette(struct dlc_image *im, struct bmp *b)
{
	unsigned int pad = b->hsize == 12 ? 3 : 4;
	const uint8_t *pal = b->buf + b->tell;	/* tell <= len */
	size_t avail = b->len - b->tell;
	uint32_t n, i;

	if (b->colors == 0 || b->colors > 65536)
		return bmp_unsupported(im, "palette size",
				       (uint32_t)b->colors);
	n = (uint32_t)b->colors;
	if (avail > (size_t)n * pad)
		avail = (size_t)n * pad;
	b->tell += avail;
	for (i = 0; i < 256; i++)
		memset(b->lut[i], i, 3);
	if (bmp_palette_grey(pal, n, pad, avail)) {
		b->mode = n == 2 ? '1' : 'L';
		b->pix_bits = n == 2 ? 1 : 8;
		if (b->mode == '1')
			memset(b->lut[1], 255, 3);
		return 0;
	}
	n = avail / pad;
	if (n > 256)
		return bmp_unsupported(im, "palette size", n);
	b->mode = 'P';
	for (i = 0; i < n; i++) {
		b->lut[i][0] = pal[i * pad + 2];
		b->lut[i][1] = pal[i * pad + 1];
		b->lut[i][2] = pal[i * pad];
	}
	return 0;
}

static void bmp_row_index(const struct bmp *b, const uint8_t *s, uint8_t *d)
{
	unsigned int bits = b->pix_bits, shift, idx;
	uint32_t x;

	for (x = 0; x < b->width; x++, d += 3) {
		if (bits == 8) {
			idx = s[x];
		} else if (bits == 4) {
			idx = x & 1 ? s[x >> 1] & 15 : s[x >> 1] >> 4;
		} else {
			shift = 7 - (x & 7);
			idx = s[x >> 3] >> shift & 1;
		}
		memcpy(d, b->lut[idx], 3);
	}
}

/* Pillow's BGR;15 and BGR;16 unpackers: each field * 255 / its max. */
static void bmp_row_16(const struct bmp *b, const uint8_t *s, uint8_t *d)
{
	uint32_t x, v;

	for (x = 0; x < b->width; x++, s += 2, d += 3) {
		v = le16(s);
		if (b->pix == BMP_PIX_BGR16) {
			d[0] = (v >> 11 & 31) * 255 / 31;
			d[1] = (v >> 5 & 63) * 255 / 63;
		} else {
			d[0] = (v >> 10 & 31) * 255 / 31;
			d[1] = (v >> 5 & 31) * 255 / 31;
		}
		d[2] = (v & 31) * 255 / 31;
	}
}

static void bmp_row(const struct bmp *b, const uint8_t *s, uint8_t *d)
{
	uint32_t x;

	switch (b->pix) {
	case BMP_PIX_INDEX:
		bmp_row_index(b, s, d);
		break;
	case BMP_PIX_BGR15:
	case BMP_PIX_BGR16:
		bmp_row_16(b, s, d);
		break;
	case BMP_PIX_BGR24:
		for (x = 0; x < b->width; x++, s += 3, d += 3) {
			d[0] = s[2];
			d[1] = s[1];
			d[2] = s[0];
		}
		break;
	case BMP_PIX_32:
		for (x = 0; x < b->width; x++, s += 4, d += 3) {
			d[0] = s[b->off[0]];
			d[1] = s[b->off[1]];
			d[2] = s[b->off[2]];
		}
		break;
	}
}

/*
 * Uncompressed rows: Pillow's raw decoder needs (height - 1) strides
 * and then one row's bytes, at the depth it reads them (pix_bits), which
 * a dropped palette can make wider than the stride: Pillow fails those.
 */
static int bmp_raw(struct dlc_image *im, struct bmp *b)
{
	uint64_t stride, rowbytes, need;
	size_t rowlen;
	uint32_t y;
	uint8_t *d;
	int err;

	stride = (((uint64_t)b->width * b->bits + 31) >> 3) & ~(uint64_t)3;
	rowbytes = ((uint64_t)b->width * b->pix_bits + 7) >> 3;
	if (rowbytes > stride)
		return dlc_image_fail(im, DLC_ERR_CORRUPT, -EBADMSG,
				      "corrupt BMP: %u-bit grey palette read as %u-bit rows of %llu bytes, past the %llu-byte stride",
				      b->bits, b->pix_bits,
				      (unsigned long long)rowbytes,
				      (unsigned long long)stride);
	if (b->width && b->height) {
		if (b->data > b->len || (stride && b->height - 1 >
					 (b->len - b->data) / stride))
			return dlc_image_fail(im, DLC_ERR_TRUNCATED, -EBADMSG,
					      "truncated BMP: %u rows of %llu bytes from byte %llu do not fit in %zu",
					      b->height,
					      (unsigned long long)stride,
					      (unsigned long long)b->data,
					      b->len);
		/* now no more than len + rowbytes */
		need = b->data + (uint64_t)(b->height - 1) * stride + rowbytes;
		if (need > b->len)
			return bmp_truncated(im, "pixel data", need, b->len);
	}
	err = dlc_image_alloc(im, "BMP", b->width, b->height);
	if (err)
		return err;
	rowlen = (size_t)b->width * 3;
	for (y = 0; y < b->height; y++) {
		err = dlc_image_check_budget(im, "BMP");
		if (err)
			return err;
		d = im->rgb + (b->topdown ? y : b->height - 1 - y) * rowlen;
		bmp_row(b, b->buf + b->data + y * stride, d);
	}
	return 0;
}

/* ---- RLE8, RLE4 ---- */

/* Pillow's index stream (its len(data) is pos) laid into the image. */
struct bmp_rle {
	struct dlc_image *im;
	const struct bmp *b;
	uint64_t pos, total;
	uint32_t x;		/* column of pos while pos < total */
	uint8_t *row;		/* the row pos is in */
};

/* Past pos: the next row, and a budget check. */
static int rle_next_row(struct bmp_rle *r)
{
	ptrdiff_t step = (ptrdiff_t)r->b->width * 3;

	r->x = 0;
	if (r->pos >= r->total)
		return 0;
	r->row += r->b->topdown ? step : -step;
	return dlc_image_check_budget(r->im, "BMP");
}

/* Append @n indices: @a, @c, @a, @c... (@c is @a but in RLE4 runs). */
static int rle_put(struct bmp_rle *r, uint64_t n, unsigned int a,
		   unsigned int c)
{
	uint64_t i;
	int err;

	for (i = 0; i < n && r->pos < r->total; i++) {
		memcpy(r->row + (size_t)r->x * 3, r->b->lut[i & 1 ? c : a], 3);
		r->pos++;
		if (++r->x == r->b->width) {
			err = rle_next_row(r);
			if (err)
				return err;
		}
	}
	r->pos += n - i;	/* past the image: only counted */
	return 0;
}

/* An absolute run of @n bytes at @s: n indices, or 2n nibbles. */
static int rle_absolute(struct bmp_rle *r, const uint8_t *s, uint32_t n,
			int rle4)
{
	uint32_t i;
	int err;

	for (i = 0; i < n && r->pos < r->total; i++) {
		if (rle4)
			err = rle_put(r, 2, s[i] >> 4, s[i] & 15);
		else
			err = rle_put(r, 1, s[i], s[i]);
		if (err)
			return err;
	}
	return 0;
}

static int rle_short(struct bmp_rle *r, const char *what, size_t end)
{
	return dlc_image_fail(r->im, DLC_ERR_TRUNCATED, -EBADMSG,
			      "truncated BMP: RLE %s ends at byte %zu of %zu, %llu of %llu pixels read",
			      what, end, r->b->len, (unsigned long long)r->pos,
			      (unsigned long long)r->total);
}

/* One escape (a zero count): end of line, delta or an absolute run. */
static int rle_escape(struct bmp_rle *r, unsigned int c, size_t *pp,
		      uint64_t *x)
{
	const struct bmp *b = r->b;
	uint64_t w = b->width;
	size_t p = *pp, n;
	int err;

	if (c == 0) {				/* end of line */
		*x = 0;
		return rle_put(r, (w - r->pos % w) % w, 0, 0);
	}
	if (c == 2) {				/* delta: 2 bytes ignored */
		if (b->len - p < 4)
			return rle_short(r, "delta", p + 4);
		err = rle_put(r, b->buf[p + 2] + b->buf[p + 3] * w, 0, 0);
		*pp = p + 4;
		*x = r->pos % w;
		return err;
	}
	n = b->comp == BMP_RLE4 ? c / 2 : c;	/* absolute */
	if (b->len - p < n)
		return rle_short(r, "absolute run", p + n);
	err = rle_absolute(r, b->buf + p, n, b->comp == BMP_RLE4);
	p += n;
	*x += c;
	if (p & 1 && p < b->len)		/* word aligned in the file */
		p++;
	*pp = p;
	return err;
}

static int bmp_rle(struct dlc_image *im, struct bmp *b)
{
	struct bmp_rle r = { .im = im, .b = b };
	size_t p, len = b->len;
	uint64_t x = 0, n;
	unsigned int c;
	int err;

	if (b->mode == '1')
		return dlc_image_fail(im, DLC_ERR_CORRUPT, -EBADMSG,
				      "unsupported BMP: RLE with a black and white palette");
	err = dlc_image_alloc(im, "BMP", b->width, b->height);
	if (err)
		return err;
	r.total = (uint64_t)b->width * b->height;
	r.row = im->rgb + (b->topdown ? 0 : (size_t)(b->height - 1) *
			   b->width * 3);
	p = b->data < len ? (size_t)b->data : len;
	err = dlc_image_check_budget(im, "BMP");	/* the first row's */
	while (!err && r.pos < r.total) {
		if (len - p < 2)
			return rle_short(&r, "data", len);
		n = b->buf[p];
		c = b->buf[p + 1];
		p += 2;
		if (!n && c == 1)		/* end of bitmap */
			break;
		if (n) {			/* a run, cut at the row end */
			if (x + n > b->width)
				n = x < b->width ? b->width - x : 0;
			err = rle_put(&r, n, c >> (b->comp == BMP_RLE4 ? 4 : 0),
				      b->comp == BMP_RLE4 ? c & 15 : c);
			x += n;
		} else {
			err = rle_escape(&r, c, &p, &x);
		}
	}
	if (err)
		return err;
	if (r.pos < r.total)
		return dlc_image_fail(im, DLC_ERR_CORRUPT, -EBADMSG,
				      "corrupt BMP: RLE end of bitmap at byte %zu after %llu of %llu pixels",
				      p, (unsigned long long)r.pos,
				      (unsigned long long)r.total);
	return 0;
}

int dlc_bmp_decode(struct dlc_image *im, const uint8_t *buf, size_t len)
{
	struct bmp b;
	int err;

	memset(&b, 0, sizeof(b));
	b.buf = buf;
	b.len = len;
	err = bmp_headers(im, &b);
	if (!err)
		err = bmp_layout(im, &b);
	if (!err && b.bits <= 8)
		err = bmp_palette(im, &b);
	if (err)
		return err;
	if (!b.data)
		b.data = b.tell;
	if (b.comp == BMP_RLE8 || b.comp == BMP_RLE4)
		return bmp_rle(im, &b);
	return bmp_raw(im, &b);
}
