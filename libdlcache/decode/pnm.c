// SPDX-License-Identifier: MIT
/*
 * PBM, PGM and PPM (P1 to P6), decoded whole to packed RGB: the pixels
 * of Pillow 9.4's PpmImagePlugin (Debian bookworm's python3-pil)
 * followed by convert("RGB"), rules read from PpmImagePlugin.py and
 * checked against it pixel for pixel:
 *
 *  - The magic is "P1".."P6" then whitespace (space, \t, \v, \f, \r or
 *    \n). Header tokens are at most 10 bytes, read as Python's int()
 *    does (a sign, '_' between digits); '#' skips to the next \r or \n,
 *    both consumed, without ending the token it interrupts. One
 *    whitespace byte ends the header. maxval: 1..65535.
 *  - Bits: 1 is black. Grey with maxval > 255 is Pillow's mode "I":
 *    round(v / maxval * 65535) (round half even, in doubles), which
 *    convert("RGB") clips at 255. Otherwise samples are
 *    round(v / maxval * 255); raw samples over maxval clip, 16-bit ones
 *    big-endian.
 *  - Plain (P1-P3) data is read, as Pillow does, in blocks of 1 MiB from
 *    the data's start, quirks kept: a comment running into a block that
 *    opens with \n (\r) ends at the block's first \r (\n) when there is
 *    one; the token a block's end cut is glued to the front of every
 *    later block until another block ends inside a token; the last
 *    block read fails if it ends inside a token of over 10 bytes or
 *    holds, anywhere, a P1 byte other than 0 and 1; P2/P3 samples over
 *    maxval fail, negative ones wrap (or fail in mode "I").
 *
 * Where Pillow pads data that ends early (repeating a plain image's last
 * token), this fails as truncated. PAM (P7), PFM and Pillow's own
 * extensions (P0CMYK, PyP...) are unsupported.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dlcache.h"
#include "image.h"

#define PNM_BLOCK	((size_t)1 << 20)	/* ImageFile.SAFEBLOCK */
#define PNM_TOKEN_MAX	10

struct pnm {
	struct dlc_image *im;
	const uint8_t *buf;
	size_t len;
	size_t p;		/* the next byte to read */
	int type;		/* 1 to 6 */
	const char *name;	/* PBM, PGM or PPM */
	uint32_t w, h, maxval;
	unsigned int bands;	/* 1 or 3 */
	int wide;		/* grey over 255: Pillow's mode "I" */
};

/* A plain image's token as it builds, byte by byte. */
struct pnm_tok {
	uint8_t s[PNM_TOKEN_MAX + 1];
	size_t n;		/* its length, up to PNM_TOKEN_MAX + 1 */
};

static int pnm_ws(unsigned int c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

static void tok_add(struct pnm_tok *t, unsigned int c)
{
	if (t->n <= PNM_TOKEN_MAX)
		t->s[t->n++] = c;
}

/* Python's int() of a token: [+-]digits, single '_' between digits. */
static int pnm_int(const struct pnm_tok *t, int64_t *v)
{
	size_t i = 0;
	int64_t r = 0;
	int neg = 0, digit = 0;

	if (t->n && (t->s[0] == '+' || t->s[0] == '-')) {
		neg = t->s[0] == '-';
		i = 1;
	}
	if (i == t->n)
		return -1;
	for (; i < t->n; i++) {
		if (t->s[i] == '_') {
			if (!digit || i + 1 == t->n)
				return -1;
			digit = 0;
			continue;
		}
		if (t->s[i] < '0' || t->s[i] > '9')
			return -1;
		r = r * 10 + (t->s[i] - '0');	/* 10 digits at most */
		digit = 1;
	}
	*v = neg ? -r : r;
	return 0;
}

static int pnm_corrupt_token(struct pnm *n, const char *what, size_t at)
{
	return dlc_image_fail(n->im, DLC_ERR_CORRUPT, -EBADMSG,
			      "corrupt %s: the %s before byte %zu is %s",
			      n->name, what, at,
			      "not a number of at most 10 characters");
}

/* One header token, as Pillow's _read_token. */
static int pnm_header_token(struct pnm *n, const char *what, int64_t *v)
{
	struct pnm_tok t = { .n = 0 };
	unsigned int c;

	while (t.n <= PNM_TOKEN_MAX && n->p < n->len) {
		c = n->buf[n->p++];
		if (pnm_ws(c)) {
			if (t.n)
				break;
			continue;
		}
		if (c == '#') {
			while (n->p < n->len) {
				c = n->buf[n->p++];
				if (c == '\r' || c == '\n')
					break;
			}
			continue;
		}
		tok_add(&t, c);
	}
	if (!t.n)
		return dlc_image_fail(n->im, DLC_ERR_TRUNCATED, -EBADMSG,
				      "truncated %s: the header ends at byte %zu before the %s",
				      n->name, n->len, what);
	if (t.n > PNM_TOKEN_MAX || pnm_int(&t, v))
		return pnm_corrupt_token(n, what, n->p);
	return 0;
}

static int pnm_magic(struct pnm *n)
{
	static const char *const ext[] = { "P0CMYK", "PyP", "PyRGBA",
					   "PyCMYK" };
	static const char *const names[] = { "PBM", "PGM", "PPM" };
	const uint8_t *b = n->buf;
	size_t m = 0, i;

	if (n->len < 2 || b[0] != 'P')
		return dlc_image_fail(n->im, DLC_ERR_NOT_JPEG, -EBADMSG,
				      "not a PNM file");
	while (m < 6 && m < n->len && !pnm_ws(b[m]))
		m++;
	if (m == 2 && b[1] >= '1' && b[1] <= '6') {
		n->type = b[1] - '0';
		n->name = names[(n->type - 1) % 3];
		n->bands = n->type == 3 || n->type == 6 ? 3 : 1;
		n->p = m < n->len ? m + 1 : m;
		return 0;
	}
	for (i = 0; i < sizeof(ext) / sizeof(ext[0]); i++)
		if (m == strlen(ext[i]) && !memcmp(b, ext[i], m))
			return dlc_image_fail(n->im, DLC_ERR_CORRUPT, -EBADMSG,
					      "unsupported PNM: %s, a Pillow extension",
					      ext[i]);
	if (b[1] == '7' || b[1] == 'F' || b[1] == 'f')
		return dlc_image_fail(n->im, DLC_ERR_CORRUPT, -EBADMSG,
				      "unsupported PNM: %s (P%c)",
				      b[1] == '7' ? "PAM" : "PFM", b[1]);
	return dlc_image_fail(n->im, DLC_ERR_CORRUPT, -EBADMSG,
			      "corrupt PNM: unknown magic number");
}

static int pnm_side(struct pnm *n, const char *what, uint32_t *side)
{
	int64_t v;
	int err = pnm_header_token(n, what, &v);

	if (err)
		return err;
	if (v <= 0)
		return dlc_image_fail(n->im, DLC_ERR_CORRUPT, -EBADMSG,
				      "corrupt %s: %s %lld", n->name, what,
				      (long long)v);
	if (v > UINT32_MAX)
		return dlc_image_fail(n->im, DLC_ERR_TOO_LARGE, -E2BIG,
				      "%s too large: %s %lld", n->name, what,
				      (long long)v);
	*side = (uint32_t)v;
	return 0;
}

static int pnm_header(struct pnm *n)
{
	int64_t v;
	int err;

	err = pnm_magic(n);
	if (!err)
		err = pnm_side(n, "width", &n->w);
	if (!err)
		err = pnm_side(n, "height", &n->h);
	if (err || n->type == 1 || n->type == 4)
		return err;
	err = pnm_header_token(n, "maxval", &v);
	if (err)
		return err;
	if (v <= 0 || v > 65535)
		return dlc_image_fail(n->im, DLC_ERR_CORRUPT, -EBADMSG,
				      "corrupt %s: maxval %lld", n->name,
				      (long long)v);
	n->maxval = (uint32_t)v;
	n->wide = n->bands == 1 && n->maxval > 255;
	return 0;
}

/*
 * Pillow's round(v / maxval * out_max) (half to even: rint()), clipped
 * to out_max, then to 255 by convert("RGB") for mode "I". Raw grey at
 * maxval 65535 is read unscaled, which is the same number.
 */
static uint8_t pnm_scale(const struct pnm *n, uint32_t v)
{
	double s = rint((double)v / n->maxval * (n->wide ? 65535 : 255));

	return s >= 255 ? 255 : (uint8_t)s;
}

/* ---- raw: P4, P5, P6 ---- */

static void pnm_raw_row(const struct pnm *n, const uint8_t *s, uint8_t *d,
			const uint8_t *lut)
{
	uint32_t x, v;
	size_t i, m = (size_t)n->w * n->bands;

	if (n->type == 4) {
		for (x = 0; x < n->w; x++, d += 3)
			memset(d, s[x >> 3] >> (7 - (x & 7)) & 1 ? 0 : 255, 3);
		return;
	}
	for (i = 0; i < m; i++) {
		if (n->maxval < 256)
			v = lut[s[i]];
		else
			v = pnm_scale(n, (uint32_t)s[2 * i] << 8 |
					 s[2 * i + 1]);
		if (n->bands == 3)
			d[i] = v;
		else
			memset(d + 3 * i, v, 3);
	}
}

static int pnm_raw(struct pnm *n)
{
	uint8_t lut[256];
	uint64_t row;
	size_t left = n->len - n->p;
	uint32_t y, v;
	int err;

	if (n->type == 4)
		row = ((uint64_t)n->w + 7) / 8;
	else
		row = (uint64_t)n->w * n->bands * (n->maxval < 256 ? 1 : 2);
	if (n->h > left / row)
		return dlc_image_fail(n->im, DLC_ERR_TRUNCATED, -EBADMSG,
				      "truncated %s: %u rows of %llu bytes from byte %zu do not fit in %zu",
				      n->name, n->h, (unsigned long long)row,
				      n->p, n->len);
	err = dlc_image_alloc(n->im, n->name, n->w, n->h);
	if (err)
		return err;
	for (v = 0; v < 256 && n->type != 4; v++)
		lut[v] = n->maxval == 255 ? v : pnm_scale(n, v);
	for (y = 0; y < n->h; y++) {
		err = dlc_image_check_budget(n->im, n->name);
		if (err)
			return err;
		pnm_raw_row(n, n->buf + n->p + y * row,
			    n->im->rgb + (size_t)y * n->w * 3, lut);
	}
	return 0;
}

/* ---- plain: P1, P2, P3 ---- */

/* Reading a plain image's data as Pillow's PpmPlainDecoder does. */
struct pnm_plain {
	struct pnm *n;
	uint64_t i, total;	/* samples stored, wanted */
	uint64_t col;		/* samples into the row */
	int comment;		/* inside a comment */
	struct pnm_tok tok;	/* the token being read (P2, P3) */
	struct pnm_tok half;	/* the last token a block's end cut */
};

/*
 * Where scanning a block starts: past a comment the last block left open
 * that ends in this one by Pillow's _find_comment_end(), which, when the
 * block opens with \n (\r), takes the first \r (\n) after it if any.
 */
static size_t plain_block_start(struct pnm_plain *pl, size_t bs, size_t be)
{
	const uint8_t *b = pl->n->buf;
	const uint8_t *o;

	if (!pl->comment || (b[bs] != '\n' && b[bs] != '\r'))
		return bs;
	o = memchr(b + bs + 1, b[bs] == '\n' ? '\r' : '\n', be - bs - 1);
	if (!o)
		return bs;
	pl->comment = 0;
	return o - b + 1;
}

/* Store one sample; a budget check at each row's start. */
static int plain_store(struct pnm_plain *pl, uint8_t v)
{
	struct pnm *n = pl->n;

	if (pl->col == 0) {
		int err = dlc_image_check_budget(n->im, n->name);

		if (err)
			return err;
	}
	if (n->bands == 3)
		n->im->rgb[pl->i] = v;
	else
		memset(n->im->rgb + pl->i * 3, v, 3);
	pl->i++;
	if (++pl->col == (uint64_t)n->w * n->bands)
		pl->col = 0;
	return 0;
}

/* P1: each byte 0 or 1 outside whitespace and comments is a pixel. */
static int plain_bits(struct pnm_plain *pl)
{
	struct pnm *n = pl->n;
	size_t bs, be, q;
	unsigned int c;
	int err;

	for (bs = n->p; bs < n->len; bs += PNM_BLOCK) {
		be = n->len - bs < PNM_BLOCK ? n->len : bs + PNM_BLOCK;
		for (q = plain_block_start(pl, bs, be); q < be; q++) {
			c = n->buf[q];
			if (pl->comment) {
				pl->comment = c != '\r' && c != '\n';
				continue;
			}
			if (c == '#')
				pl->comment = 1;
			if (c == '#' || pnm_ws(c))
				continue;
			if (c != '0' && c != '1')
				return dlc_image_fail(n->im, DLC_ERR_CORRUPT,
						      -EBADMSG,
						      "corrupt PBM: byte %zu is %#x, not 0 or 1",
						      q, c);
			if (pl->i == pl->total)
				continue;	/* the block is still checked */
			err = plain_store(pl, c == '0' ? 255 : 0);
			if (err)
				return err;
		}
		if (pl->i == pl->total)
			return 0;
	}
	return dlc_image_fail(n->im, DLC_ERR_TRUNCATED, -EBADMSG,
			      "truncated PBM: the data ends at byte %zu after %llu of %llu pixels",
			      n->len, (unsigned long long)pl->i,
			      (unsigned long long)pl->total);
}

/* A P2/P3 token ended at byte @at: Pillow's checks, then the sample. */
static int plain_sample(struct pnm_plain *pl, size_t at)
{
	struct pnm *n = pl->n;
	int64_t v;
	double s;

	if (pl->tok.n > PNM_TOKEN_MAX || pnm_int(&pl->tok, &v))
		return pnm_corrupt_token(n, "sample", at);
	pl->tok.n = 0;
	if (v > n->maxval)
		return dlc_image_fail(n->im, DLC_ERR_CORRUPT, -EBADMSG,
				      "corrupt %s: sample %lld over maxval %u before byte %zu",
				      n->name, (long long)v, n->maxval, at);
	if (v >= 0)
		return plain_store(pl, pnm_scale(n, (uint32_t)v));
	if (n->wide)
		return dlc_image_fail(n->im, DLC_ERR_CORRUPT, -EBADMSG,
				      "corrupt %s: sample %lld before byte %zu",
				      n->name, (long long)v, at);
	/* Pillow stores round(v / maxval * 255) & 255 */
	s = rint((double)v / n->maxval * 255);
	return plain_store(pl, (uint8_t)((int64_t)s & 255));
}

/* One byte of a P2/P3 block: comments, tokens and samples. */
static int plain_byte(struct pnm_plain *pl, unsigned int c, size_t q)
{
	if (pl->comment) {
		pl->comment = c != '\r' && c != '\n';
		return 0;
	}
	if (c == '#') {
		pl->comment = 1;
		return 0;
	}
	if (!pnm_ws(c)) {
		tok_add(&pl->tok, c);
		return 0;
	}
	if (!pl->tok.n)
		return 0;
	if (pl->i == pl->total) {	/* past the image: not parsed */
		pl->tok.n = 0;
		return 0;
	}
	return plain_sample(pl, q);
}

/* Pillow's end of a block: the token it cuts, checked and kept. */
static int plain_block_end(struct pnm_plain *pl, size_t be)
{
	if (!pl->tok.n)
		return 0;
	if (pl->tok.n > PNM_TOKEN_MAX)
		return pnm_corrupt_token(pl->n, "sample", be);
	pl->half = pl->tok;
	return 0;
}

/* P2, P3: tokens, each a sample. */
static int plain_tokens(struct pnm_plain *pl)
{
	struct pnm *n = pl->n;
	size_t bs, be, q;
	int err = 0;

	for (bs = n->p; bs < n->len && !err; bs += PNM_BLOCK) {
		be = n->len - bs < PNM_BLOCK ? n->len : bs + PNM_BLOCK;
		if (!pl->tok.n)		/* Pillow glues the cut token on */
			pl->tok = pl->half;
		q = plain_block_start(pl, bs, be);
		for (; q < be && !err; q++)
			err = plain_byte(pl, n->buf[q], q);
		if (!err)
			err = plain_block_end(pl, be);
		if (!err && pl->i == pl->total)
			return 0;
	}
	if (!err && pl->tok.n)		/* the last token, at the end */
		err = plain_sample(pl, n->len);
	if (err || pl->i == pl->total)
		return err;
	return dlc_image_fail(n->im, DLC_ERR_TRUNCATED, -EBADMSG,
			      "truncated %s: the data ends at byte %zu after %llu of %llu samples",
			      n->name, n->len, (unsigned long long)pl->i,
			      (unsigned long long)pl->total);
}

static int pnm_plain(struct pnm *n)
{
	struct pnm_plain pl = { .n = n };
	uint64_t min;
	int err;

	/* a byte a sample, and (P2, P3) whitespace between */
	pl.total = (uint64_t)n->w * n->h;	/* < 2^64 */
	if (pl.total <= n->len - n->p) {
		pl.total *= n->bands;
		min = n->type == 1 ? pl.total : 2 * pl.total - 1;
	} else {
		min = UINT64_MAX;
	}
	if (min > n->len - n->p)
		return dlc_image_fail(n->im, DLC_ERR_TRUNCATED, -EBADMSG,
				      "truncated %s: %u x %u pixels cannot fit in the %zu bytes from byte %zu",
				      n->name, n->w, n->h, n->len - n->p,
				      n->p);
	err = dlc_image_alloc(n->im, n->name, n->w, n->h);
	if (err)
		return err;
	if (n->type == 1)
		return plain_bits(&pl);
	return plain_tokens(&pl);
}

int dlc_pnm_decode(struct dlc_image *im, const uint8_t *buf, size_t len)
{
	struct pnm n;
	int err;

	memset(&n, 0, sizeof(n));
	n.im = im;
	n.buf = buf;
	n.len = len;
	n.name = "PNM";
	err = pnm_header(&n);
	if (err)
		return err;
	if (n.type <= 3)
		return pnm_plain(&n);
	return pnm_raw(&n);
}
