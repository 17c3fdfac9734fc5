// SPDX-License-Identifier: MIT
/*
 * An image's size from its header alone (image.h, dlc_image_dims()):
 * what its decoded form will hold, known before it is decoded (forms.c
 * sizes the form it is about to make by it).
 *
 * Only the header is read, and every offset is checked against the
 * bytes there are: the file may be truncated or hostile, and the answer
 * is an estimate's input, never a size anything is allocated by
 * unchecked (the decoders check the image again, against max_pixels).
 * Each format's fields are where its specification puts them: JPEG's
 * first SOFn frame header (ITU T.81 B.2.2), PNG's IHDR, WebP's VP8, VP8L
 * or VP8X chunk, BMP's info header, the PNM header's two numbers, and
 * TIFF's first IFD (ImageWidth 256, ImageLength 257), the frame Pillow
 * opens.
 */
#include <errno.h>
#include <string.h>

#include "image.h"

static uint32_t be16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static uint32_t le16(const uint8_t *p)
{
	return (uint32_t)p[1] << 8 | p[0];
}

static uint32_t le24(const uint8_t *p)
{
	return (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[1] << 8 | p[0];
}

/* The first frame header's; markers walked by their lengths. */
static int jpeg_dims(const uint8_t *b, size_t len, uint32_t *w, uint32_t *h)
{
	size_t i = 2;

	for (;;) {
		uint8_t m;

		while (i < len && b[i] == 0xff)	/* fill bytes */
			i++;
		if (i >= len || b[i - 1] != 0xff)
			return -EBADMSG;
		m = b[i++];
		if (m == 0x01 || (m >= 0xd0 && m <= 0xd7))
			continue;	/* TEM, RSTn: no length */
		/*
		 * EOI or a scan before any frame; and what libjpeg skips as
		 * garbage (FF 00) or refuses (reserved markers): not walked.
		 */
		if (m < 0xc0 || m == 0xd9 || m == 0xda || i + 2 > len ||
		    be16(b + i) < 2)
			return -EBADMSG;
		if (m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 &&
		    m != 0xcc) {
			/* SOFn: length, precision, Y, X */
			if (i + 7 > len)
				return -EBADMSG;
			*h = be16(b + i + 3);
			*w = be16(b + i + 5);
			/* Y 0: the height comes in a DNL, after the scan. */
			return *h && *w ? 0 : -EBADMSG;
		}
		i += be16(b + i);
	}
}

static int png_dims(const uint8_t *b, size_t len, uint32_t *w, uint32_t *h)
{
	if (len < 24 || memcmp(b + 12, "IHDR", 4))
		return -EBADMSG;
	*w = be32(b + 16);
	*h = be32(b + 20);
	return *w && *h ? 0 : -EBADMSG;
}

static int webp_dims(const uint8_t *b, size_t len, uint32_t *w, uint32_t *h)
{
	if (len >= 30 && !memcmp(b + 12, "VP8 ", 4)) {
		/* A key frame's start code, then 14-bit width and height. */
		if (b[23] != 0x9d || b[24] != 0x01 || b[25] != 0x2a)
			return -EBADMSG;
		*w = le16(b + 26) & 0x3fff;
		*h = le16(b + 28) & 0x3fff;
	} else if (len >= 25 && !memcmp(b + 12, "VP8L", 4)) {
		uint32_t v = le32(b + 21);

		if (b[20] != 0x2f)
			return -EBADMSG;
		*w = (v & 0x3fff) + 1;
		*h = ((v >> 14) & 0x3fff) + 1;
	} else if (len >= 30 && !memcmp(b + 12, "VP8X", 4)) {
		/* The canvas: 24-bit width - 1 and height - 1. */
		*w = le24(b + 24) + 1;
		*h = le24(b + 27) + 1;
	} else {
		return -EBADMSG;
	}
	return *w && *h ? 0 : -EBADMSG;
}

static int bmp_dims(const uint8_t *b, size_t len, uint32_t *w, uint32_t *h)
{
	int32_t sw, sh;

	if (len < 26)
		return -EBADMSG;
	if (le32(b + 14) == 12) {	/* OS/2 BITMAPCOREHEADER */
		*w = le16(b + 18);
		*h = le16(b + 20);
		return *w && *h ? 0 : -EBADMSG;
	}
	sw = (int32_t)le32(b + 18);
	sh = (int32_t)le32(b + 22);
	/* A negative height: rows top-down. */
	if (sw <= 0 || sh == 0 || sh == INT32_MIN)
		return -EBADMSG;
	*w = (uint32_t)sw;
	*h = (uint32_t)(sh < 0 ? -sh : sh);
	return 0;
}

/* The next decimal number of a PNM header at *@i, past blanks and comments. */
static int pnm_number(const uint8_t *b, size_t len, size_t *i, uint32_t *v)
{
	uint64_t n = 0;
	size_t start;

	for (;;) {
		while (*i < len && (b[*i] == ' ' ||
				    (b[*i] >= '\t' && b[*i] <= '\r')))
			(*i)++;
		if (*i < len && b[*i] == '#') {
			while (*i < len && b[*i] != '\n' && b[*i] != '\r')
				(*i)++;
			continue;
		}
		break;
	}
	start = *i;
	while (*i < len && b[*i] >= '0' && b[*i] <= '9' && n <= UINT32_MAX)
		n = n * 10 + (uint64_t)(b[(*i)++] - '0');
	/* Cut off where the number runs to the end: not yet its value. */
	if (*i == start || *i >= len || n > UINT32_MAX || !n)
		return -EBADMSG;
	*v = (uint32_t)n;
	return 0;
}

static int pnm_dims(const uint8_t *b, size_t len, uint32_t *w, uint32_t *h)
{
	size_t i = 2;

	if (pnm_number(b, len, &i, w) || pnm_number(b, len, &i, h))
		return -EBADMSG;
	return 0;
}

static int tiff_dims(const uint8_t *b, size_t len, uint32_t *w, uint32_t *h)
{
	int le = b[0] == 'I';
	uint32_t (*u16)(const uint8_t *) = le ? le16 : be16;
	uint32_t (*u32)(const uint8_t *) = le ? le32 : be32;
	uint64_t off;
	uint32_t n, k;

	*w = *h = 0;
	if (len < 8)
		return -EBADMSG;
	off = u32(b + 4);
	if (off + 2 > len)
		return -EBADMSG;
	n = u16(b + off);
	for (k = 0; k < n && off + 2 + 12 * (uint64_t)(k + 1) <= len; k++) {
		const uint8_t *e = b + off + 2 + 12 * k;
		uint32_t tag = u16(e), type = u16(e + 2), v;

		if (tag != 256 && tag != 257)
			continue;
		/* SHORT (3) or LONG (4), one value, in the entry itself. */
		if (type == 3)
			v = u16(e + 8);
		else if (type == 4)
			v = u32(e + 8);
		else
			return -EBADMSG;
		if (tag == 256)
			*w = v;
		else
			*h = v;
	}
	return *w && *h ? 0 : -EBADMSG;
}

int dlc_image_dims(const uint8_t *buf, size_t len, uint32_t *width,
		   uint32_t *height)
{
	uint32_t w = 0, h = 0;
	int ret;

	switch (dlc_image_sniff(buf, len)) {
	case DLC_IMG_JPEG:
		ret = jpeg_dims(buf, len, &w, &h);
		break;
	case DLC_IMG_PNG:
		ret = png_dims(buf, len, &w, &h);
		break;
	case DLC_IMG_WEBP:
		ret = webp_dims(buf, len, &w, &h);
		break;
	case DLC_IMG_BMP:
		ret = bmp_dims(buf, len, &w, &h);
		break;
	case DLC_IMG_PNM:
		ret = pnm_dims(buf, len, &w, &h);
		break;
	case DLC_IMG_TIFF:
		ret = tiff_dims(buf, len, &w, &h);
		break;
	default:
		return -ENOENT;
	}
	if (ret)
		return ret;
	*width = w;
	*height = h;
	return 0;
}
