// SPDX-License-Identifier: MIT
/*
 * Restart-indexed JPEGs: the transcode (libjpeg's coefficient copy, as
 * jpegtran does, with a DRI marker and optimized Huffman tables), the
 * parse that walks and checks every restart marker, and the splice of an
 * MCU rectangle into a JPEG of its own. See jpegrst.h.
 *
 * Byte-level work only: nothing here decodes pixels except the lossy
 * --max-side re-encode, which decodes, resizes and encodes once, offline.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

#include "dlcache.h"
#include "jpegrst.h"
#include "resize.h"

/* ---- transcode ---------------------------------------------------------- */

struct tc {
	struct jpeg_error_mgr jerr;	/* shared by both objects */
	struct jpeg_progress_mgr progress;	/* the source's scan limit */
	struct jpeg_decompress_struct d;
	struct jpeg_compress_struct c;
	struct jpeg_destination_mgr dst;
	jmp_buf jb;
	int err;
	char *why;
	size_t why_len;
	uint8_t *buf;			/* the output, grown with realloc */
	size_t cap, used;
	uint8_t *rgb;			/* re-encode: decoded and resized */
	uint8_t *small;
	struct dlc_resize_ws ws;
};

__attribute__((format(printf, 3, 4)))
static int tc_fail(struct tc *t, int err, const char *fmt, ...)
{
	va_list ap;

	if (t->why && t->why_len) {
		va_start(ap, fmt);
		vsnprintf(t->why, t->why_len, fmt, ap);
		va_end(ap);
	}
	t->err = err;
	return err;
}

static void tc_error_exit(j_common_ptr c)
{
	struct tc *t = c->client_data;
	char text[JMSG_LENGTH_MAX];
	int err = -EBADMSG;

	c->err->format_message(c, text);
	if (c->err->msg_code == JERR_OUT_OF_MEMORY)
		err = -ENOMEM;
	else if (c->err->msg_code == JERR_IMAGE_TOO_BIG ||
		 c->err->msg_code == JERR_WIDTH_OVERFLOW)
		err = -E2BIG;
	tc_fail(t, err, "%s: %s", err == -EBADMSG ? "corrupt JPEG" :
		"cannot transcode", text);
	longjmp(t->jb, 1);
}

/* Warnings are errors: a damaged source must not become a good entry. */
static void tc_emit(j_common_ptr c, int level)
{
	if (level >= 0)
		return;
	switch (c->err->msg_code) {
	case JWRN_JFIF_MAJOR:		/* harmless to the coefficients */
	case JWRN_ADOBE_XFORM:
		return;
	default:
		tc_error_exit(c);
	}
}

static void tc_output(j_common_ptr c)
{
	(void)c;
}

/*
 * The decoder's scan limit (decode.c), at its default: the coefficients
 * of a source of hundreds of scans are not worth seconds of CPU each. It
 * fails as too large, and the pack keeps it as it is, for the loader's
 * decoder to refuse by its own max_scans.
 */
static void tc_progress(j_common_ptr c)
{
	struct tc *t = c->client_data;
	j_decompress_ptr d = (j_decompress_ptr)c;

	if (d->input_scan_number > DLC_DEFAULT_MAX_SCANS) {
		tc_fail(t, -E2BIG,
			"too many scans: scan %d of the progressive JPEG is over max_scans %d",
			d->input_scan_number, DLC_DEFAULT_MAX_SCANS);
		longjmp(t->jb, 1);
	}
}

static void dst_init(j_compress_ptr c)
{
	struct tc *t = c->client_data;

	c->dest->next_output_byte = t->buf;
	c->dest->free_in_buffer = t->cap;
}

static boolean dst_empty(j_compress_ptr c)
{
	struct tc *t = c->client_data;
	size_t ncap = t->cap * 2;
	uint8_t *p = realloc(t->buf, ncap);

	if (!p) {
		c->err->msg_code = JERR_OUT_OF_MEMORY;
		c->err->error_exit((j_common_ptr)c);
	}
	t->buf = p;
	c->dest->next_output_byte = p + t->cap;
	c->dest->free_in_buffer = ncap - t->cap;
	t->cap = ncap;
	return TRUE;
}

static void dst_term(j_compress_ptr c)
{
	struct tc *t = c->client_data;

	t->used = t->cap - c->dest->free_in_buffer;
}

/* The largest divisor of @mcus_x not above @want (0: the whole row). */
static uint32_t pick_interval(uint32_t mcus_x, uint32_t want)
{
	uint32_t i;

	if (!want || want >= mcus_x)
		return mcus_x;
	for (i = want; i > 1; i--)
		if (mcus_x % i == 0)
			return i;
	return 1;
}

/* MCUs per row of the single interleaved scan (one block for gray). */
static uint32_t mcus_per_row(uint32_t width, int ncomp, int max_h)
{
	uint32_t mw = ncomp == 1 ? 8 : 8 * (uint32_t)max_h;

	return (width + mw - 1) / mw;
}

static void tc_start_output(struct tc *t, size_t hint)
{
	t->c.client_data = t;
	t->dst.init_destination = dst_init;
	t->dst.empty_output_buffer = dst_empty;
	t->dst.term_destination = dst_term;
	t->cap = hint < 4096 ? 4096 : hint;
	t->buf = malloc(t->cap);
	if (!t->buf) {
		tc_fail(t, -ENOMEM, "out of memory: %zu bytes of output",
			t->cap);
		longjmp(t->jb, 1);
	}
	t->c.dest = &t->dst;
}

/* Lossy: decode, resize to fit @o->max_side, encode baseline 4:2:0. */
static void tc_reencode(struct tc *t, const struct dlc_rst_opts *o,
			size_t len)
{
	struct jpeg_decompress_struct *d = &t->d;
	uint32_t w = d->image_width, h = d->image_height, nw, nh, y, x;
	int gray = d->num_components == 1;
	struct dlc_crop box = { 0 };
	JSAMPROW row;
	int ret;

	d->out_color_space = JCS_RGB;
	d->dct_method = JDCT_ISLOW;
	d->do_fancy_upsampling = TRUE;
	jpeg_start_decompress(d);
	t->rgb = malloc((size_t)w * h * 3);
	if (!t->rgb) {
		tc_fail(t, -ENOMEM, "out of memory: %ux%u RGB", w, h);
		longjmp(t->jb, 1);
	}
	while (d->output_scanline < h) {
		row = t->rgb + (size_t)d->output_scanline * w * 3;
		jpeg_read_scanlines(d, &row, 1);
	}
	jpeg_finish_decompress(d);
	if (w >= h) {
		nw = o->max_side;
		nh = (uint32_t)(((uint64_t)h * o->max_side + w / 2) / w);
	} else {
		nh = o->max_side;
		nw = (uint32_t)(((uint64_t)w * o->max_side + h / 2) / h);
	}
	nw = nw ? nw : 1;
	nh = nh ? nh : 1;
	t->small = malloc((size_t)nw * nh * 3);
	if (!t->small) {
		tc_fail(t, -ENOMEM, "out of memory: %ux%u RGB", nw, nh);
		longjmp(t->jb, 1);
	}
	box.w = w;
	box.h = h;
	ret = dlc_resize_rgb_ws(&t->ws, t->rgb, w, h, (size_t)w * 3, &box, nw,
				nh, DLC_LAYOUT_NHWC, t->small);
	if (ret) {
		tc_fail(t, ret, "resize of %ux%u to %ux%u failed", w, h, nw,
			nh);
		longjmp(t->jb, 1);
	}
	if (gray)	/* R == G == B: keep one */
		for (x = 0; x < nw * nh; x++)
			t->small[x] = t->small[x * 3];
	jpeg_create_compress(&t->c);
	tc_start_output(t, len);
	t->c.image_width = nw;
	t->c.image_height = nh;
	t->c.input_components = gray ? 1 : 3;
	t->c.in_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;
	jpeg_set_defaults(&t->c);
	jpeg_set_quality(&t->c, o->quality ? (int)o->quality : 90, TRUE);
	t->c.dct_method = JDCT_ISLOW;
	t->c.optimize_coding = TRUE;
	t->c.restart_interval = pick_interval(mcus_per_row(nw,
				t->c.num_components,
				gray ? 1 : t->c.comp_info[0].h_samp_factor),
				o->interval);
	jpeg_start_compress(&t->c, TRUE);
	for (y = 0; y < nh; y++) {
		row = t->small + (size_t)y * nw * (gray ? 1 : 3);
		jpeg_write_scanlines(&t->c, &row, 1);
	}
	jpeg_finish_compress(&t->c);
}

/* Lossless: the coefficients as they are, a DRI, optimized tables. */
static void tc_lossless(struct tc *t, const struct dlc_rst_opts *o,
			size_t len)
{
	struct jpeg_decompress_struct *d = &t->d;
	jvirt_barray_ptr *coef;

	coef = jpeg_read_coefficients(d);
	jpeg_create_compress(&t->c);
	tc_start_output(t, len + len / 8);
	jpeg_copy_critical_parameters(d, &t->c);
	t->c.restart_interval = pick_interval(mcus_per_row(d->image_width,
				d->num_components, d->max_h_samp_factor),
				o->interval);
	t->c.optimize_coding = TRUE;
	jpeg_write_coefficients(&t->c, coef);
	jpeg_finish_compress(&t->c);
	jpeg_finish_decompress(d);
}

/* What the MCU-exact decode cannot serve: 0, or -ENOTSUP with @why. */
static int tc_check(struct tc *t, uint64_t max_pixels)
{
	struct jpeg_decompress_struct *d = &t->d;
	uint64_t px = (uint64_t)d->image_width * d->image_height;
	int i;

	if (px > max_pixels)
		return tc_fail(t, -E2BIG,
			       "image too large: %ux%u is over the cap of %llu pixels",
			       d->image_width, d->image_height,
			       (unsigned long long)max_pixels);
	if (d->jpeg_color_space == JCS_CMYK || d->jpeg_color_space == JCS_YCCK)
		return tc_fail(t, -ENOTSUP, "CMYK/YCCK JPEG: kept as it is");
	if (d->data_precision != 8)
		return tc_fail(t, -ENOTSUP, "%d-bit JPEG: kept as it is",
			       d->data_precision);
	if (d->num_components != 1 && d->num_components != 3)
		return tc_fail(t, -ENOTSUP, "%d components: kept as it is",
			       d->num_components);
	for (i = 0; i < d->num_components; i++)
		if (d->comp_info[i].h_samp_factor > 2 ||
		    d->comp_info[i].v_samp_factor > 2)
			return tc_fail(t, -ENOTSUP,
				       "sampling factor %dx%d of component %d is above 2: kept as it is",
				       d->comp_info[i].h_samp_factor,
				       d->comp_info[i].v_samp_factor, i);
	return 0;
}

int dlc_rst_transcode(const uint8_t *in, size_t len,
		      const struct dlc_rst_opts *o, uint64_t max_pixels,
		      uint8_t **out, size_t *out_len, char *why,
		      size_t why_len)
{
	struct tc *t;
	int ret;

	if (why && why_len)
		why[0] = '\0';
	if (!in || !len || !o || !out || !out_len ||
	    (o->quality > 100)) {
		if (why && why_len)
			snprintf(why, why_len, "invalid argument");
		return -EINVAL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->why = why;
	t->why_len = why_len;
	t->d.err = jpeg_std_error(&t->jerr);
	t->c.err = &t->jerr;
	t->jerr.error_exit = tc_error_exit;
	t->jerr.emit_message = tc_emit;
	t->jerr.output_message = tc_output;
	t->d.client_data = t;
	t->c.client_data = t;
	if (setjmp(t->jb)) {
		ret = t->err ? t->err : -EBADMSG;
		goto out;
	}
	jpeg_create_decompress(&t->d);
	t->progress.progress_monitor = tc_progress;
	t->d.progress = &t->progress;
	jpeg_mem_src(&t->d, in, (unsigned long)len);
	jpeg_read_header(&t->d, TRUE);
	ret = tc_check(t, max_pixels ? max_pixels : DLC_DEFAULT_MAX_PIXELS);
	if (ret)
		goto out;
	if (o->max_side && (t->d.image_width > o->max_side ||
			    t->d.image_height > o->max_side))
		tc_reencode(t, o, len);
	else
		tc_lossless(t, o, len);
	*out = t->buf;
	*out_len = t->used;
	t->buf = NULL;
	ret = 0;
out:
	jpeg_destroy_compress(&t->c);
	jpeg_destroy_decompress(&t->d);
	free(t->buf);
	free(t->rgb);
	free(t->small);
	free(t->ws.mem);
	free(t);
	return ret;
}

/* ---- parse -------------------------------------------------------------- */

static uint32_t be16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

#define BAD(msg)	do { if (why) *why = (msg); return -EBADMSG; } while (0)

/*
 * Walk the header segments from SOI to SOS. Calls @seg for each (marker,
 * its start, its length with the marker) when not NULL. Fills @g's
 * header fields. Bounds are checked against @len.
 */
struct hdr {
	uint32_t restart;
	uint32_t max_h, max_v;
	uint32_t sof_off, sof_len;
};

static int walk_header(const uint8_t *buf, size_t len, struct dlc_rst_geom *g,
		       struct hdr *h, const char **why)
{
	size_t p = 2;
	uint32_t i, n, seglen;
	uint8_t m;
	int sof = 0;

	memset(h, 0, sizeof(*h));
	if (len < 4 || buf[0] != 0xff || buf[1] != 0xd8)
		BAD("not a JPEG: no SOI marker");
	if (len > UINT32_MAX)
		BAD("JPEG over 4 GiB");
	for (;;) {
		if (p + 4 > len)
			BAD("truncated JPEG header: no SOS marker");
		if (buf[p] != 0xff)
			BAD("JPEG header: a segment does not start with a marker");
		m = buf[p + 1];
		if (m == 0xff) {	/* fill byte */
			p++;
			continue;
		}
		seglen = be16(buf + p + 2);
		if (seglen < 2 || p + 2 + seglen > len)
			BAD("JPEG header: a segment's length runs past the end");
		switch (m) {
		case 0xc0:	/* SOF0 baseline */
		case 0xc1:	/* SOF1 extended sequential, Huffman */
			if (sof)
				BAD("JPEG header: two SOF markers");
			sof = 1;
			if (seglen < 8 || buf[p + 4] != 8)
				BAD("JPEG SOF: not 8-bit");
			g->height = be16(buf + p + 5);
			g->width = be16(buf + p + 7);
			n = buf[p + 9];
			if ((n != 1 && n != 3) || seglen != 8 + 3 * n)
				BAD("JPEG SOF: not 1 or 3 components");
			if (!g->width || !g->height)
				BAD("JPEG SOF: zero width or height (DNL is not supported)");
			g->ncomp = n;
			for (i = 0; i < n; i++) {
				uint32_t hs = buf[p + 11 + 3 * i] >> 4;
				uint32_t vs = buf[p + 11 + 3 * i] & 15;

				if (hs < 1 || hs > 2 || vs < 1 || vs > 2)
					BAD("JPEG SOF: a sampling factor is not 1 or 2");
				h->max_h = hs > h->max_h ? hs : h->max_h;
				h->max_v = vs > h->max_v ? vs : h->max_v;
			}
			h->sof_off = (uint32_t)p;
			h->sof_len = seglen + 2;
			break;
		case 0xc4:	/* DHT */
		case 0xdb:	/* DQT */
			break;
		case 0xdd:	/* DRI */
			if (seglen != 4)
				BAD("JPEG DRI: bad length");
			h->restart = be16(buf + p + 4);
			break;
		case 0xda:	/* SOS */
			if (!sof)
				BAD("JPEG header: SOS before SOF");
			if (seglen < 6 || buf[p + 4] != g->ncomp ||
			    seglen != 6 + 2 * g->ncomp)
				BAD("JPEG SOS: the scan does not hold every component");
			g->scan_off = (uint32_t)(p + 2 + seglen);
			return 0;
		default:
			if ((m >= 0xe0 && m <= 0xef) || m == 0xfe)
				break;	/* APPn, COM */
			if (m >= 0xc2 && m <= 0xcf)
				BAD("JPEG: not baseline Huffman (progressive, lossless or arithmetic)");
			BAD("JPEG header: an unexpected marker");
		}
		p += 2 + seglen;
	}
}

/* Geometry from the header; checks the interval against the row. */
static int geometry(struct dlc_rst_geom *g, const struct hdr *h,
		    const char **why)
{
	if (!h->restart)
		BAD("JPEG: no restart interval (DRI)");
	if (g->ncomp == 1) {
		g->mcu_w = 8;
		g->mcu_h = 8;
	} else {
		g->mcu_w = 8 * h->max_h;
		g->mcu_h = 8 * h->max_v;
	}
	g->mcus_x = (g->width + g->mcu_w - 1) / g->mcu_w;
	g->mcus_y = (g->height + g->mcu_h - 1) / g->mcu_h;
	g->interval = h->restart;
	if (g->mcus_x % g->interval)
		BAD("JPEG: the restart interval does not divide an MCU row");
	if (g->mcus_y > DLC_RST_MAX_ROWS)
		BAD("JPEG: too many MCU rows");
	return 0;
}

int dlc_rst_parse(const uint8_t *buf, size_t len, struct dlc_rst_geom *g,
		  uint32_t *rows, const char **why)
{
	struct hdr h;
	uint64_t total, k = 0;
	uint32_t per_row;
	const uint8_t *p, *end, *ff;
	int ret;

	if (!buf || !g)
		BAD("invalid argument");
	memset(g, 0, sizeof(*g));
	ret = walk_header(buf, len, g, &h, why);
	if (ret)
		return ret;
	ret = geometry(g, &h, why);
	if (ret)
		return ret;
	per_row = g->mcus_x / g->interval;
	total = (uint64_t)per_row * g->mcus_y;
	if (rows)
		rows[0] = g->scan_off;
	p = buf + g->scan_off;
	end = buf + len;
	for (;;) {
		ff = memchr(p, 0xff, (size_t)(end - p));
		if (!ff || ff + 1 >= end)
			BAD("JPEG scan: no EOI marker");
		if (ff[1] == 0x00) {
			p = ff + 2;
			continue;
		}
		if (ff[1] >= 0xd0 && ff[1] <= 0xd7) {
			if (ff[1] != 0xd0 + (k & 7))
				BAD("JPEG scan: a restart marker out of sequence");
			if (++k >= total)
				BAD("JPEG scan: more restart intervals than MCUs");
			if (rows && k % per_row == 0)
				rows[k / per_row] = (uint32_t)(ff + 2 - buf);
			p = ff + 2;
			continue;
		}
		if (ff[1] == 0xd9) {
			if (k + 1 != total)
				BAD("JPEG scan: fewer restart intervals than MCUs");
			g->end_off = (uint32_t)(ff - buf);
			if (rows)
				rows[g->mcus_y] = g->end_off;
			return 0;
		}
		BAD("JPEG scan: a marker other than RSTm or EOI in the data");
	}
}

/* ---- splice ------------------------------------------------------------- */

size_t dlc_rst_splice_bound(const struct dlc_rst_geom *g,
			    const uint32_t *rows, uint32_t my0, uint32_t my1)
{
	uint64_t data, n;

	if (!g || !rows || my0 >= my1 || my1 > g->mcus_y || !g->interval)
		return 0;
	data = rows[my1] > rows[my0] ? rows[my1] - rows[my0] : 0;
	/* a table that lies must not ask for more than the scan */
	if (g->end_off > g->scan_off && data > g->end_off - g->scan_off)
		data = g->end_off - g->scan_off;
	n = (uint64_t)(my1 - my0) * (g->mcus_x / g->interval);
	/* header (SOF rewritten at its own size), data, markers, EOI */
	return (size_t)(g->scan_off + data + 2 * n + 2);
}

/*
 * The end of the interval starting at @s: the offset of the marker that
 * follows it (RSTm or EOI), or 0 when there is none before @lim.
 */
static size_t interval_end(const uint8_t *buf, size_t s, size_t lim)
{
	const uint8_t *p = buf + s, *end = buf + lim, *ff;

	for (;;) {
		ff = memchr(p, 0xff, (size_t)(end - p));
		if (!ff || ff + 1 >= end)
			return 0;
		if (ff[1] == 0x00) {
			p = ff + 2;
			continue;
		}
		if ((ff[1] >= 0xd0 && ff[1] <= 0xd7) || ff[1] == 0xd9)
			return (size_t)(ff - buf);
		return 0;
	}
}

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/*
 * The SOF at @sof sized to MCUs [@mx0, @mx1) x [@my0, @my1): to the
 * image's edge where the rectangle reaches it, so that partial MCUs
 * decode as in the whole image.
 */
static void sof_size(const struct dlc_rst_geom *g, uint32_t mx0, uint32_t my0,
		     uint32_t mx1, uint32_t my1, uint8_t *sof)
{
	put16(sof + 5, my1 == g->mcus_y ? g->height - my0 * g->mcu_h :
		       (my1 - my0) * g->mcu_h);
	put16(sof + 7, mx1 == g->mcus_x ? g->width - mx0 * g->mcu_w :
		       (mx1 - mx0) * g->mcu_w);
}

ssize_t dlc_rst_splice(const uint8_t *buf, size_t len,
		       const struct dlc_rst_geom *g, const uint32_t *rows,
		       uint32_t mx0, uint32_t my0, uint32_t mx1, uint32_t my1,
		       uint8_t *out, size_t cap, uint32_t *ox, uint32_t *oy,
		       const char **why)
{
	struct dlc_rst_geom hg;
	struct hdr h;
	size_t p, o = 0, s, e, lim;
	uint32_t per_row, i0, i1, r, i, n = 0, seglen;
	uint64_t j, total;
	int ret;

	if (!buf || !g || !rows || !out)
		return -EINVAL;
	if (!g->interval || !g->mcus_x || g->mcus_x % g->interval ||
	    mx0 >= mx1 || my0 >= my1 || mx1 > g->mcus_x || my1 > g->mcus_y) {
		if (why)
			*why = "splice: rectangle outside the image";
		return -EINVAL;
	}
	/* the header, checked again: @buf is not trusted to match @g */
	memset(&hg, 0, sizeof(hg));
	ret = walk_header(buf, len, &hg, &h, why);
	if (ret)
		return ret;
	if (hg.width != g->width || hg.height != g->height ||
	    hg.scan_off != g->scan_off || hg.ncomp != g->ncomp ||
	    h.restart != g->interval ||
	    (g->ncomp == 3 && (8 * h.max_h != g->mcu_w ||
			       8 * h.max_v != g->mcu_h)) ||
	    (g->ncomp == 1 && (g->mcu_w != 8 || g->mcu_h != 8)) ||
	    g->mcus_x != (g->width + g->mcu_w - 1) / g->mcu_w ||
	    g->mcus_y != (g->height + g->mcu_h - 1) / g->mcu_h)
		BAD("splice: the JPEG header does not match the geometry");
	if ((uint64_t)g->end_off + 2 > len || g->end_off < g->scan_off ||
	    buf[g->end_off] != 0xff || buf[g->end_off + 1] != 0xd9)
		BAD("splice: no EOI marker at the geometry's end offset");
	lim = (size_t)g->end_off + 2;
	per_row = g->mcus_x / g->interval;
	total = (uint64_t)per_row * g->mcus_y;
	i0 = mx0 / g->interval;
	i1 = (mx1 + g->interval - 1) / g->interval;
	mx0 = i0 * g->interval;
	mx1 = i1 * g->interval;
	if (cap < g->scan_off + 2)
		return -ENOSPC;
	/* SOI, the tables, DRI, SOF sized to the rectangle, SOS */
	out[o++] = 0xff;
	out[o++] = 0xd8;
	p = 2;
	while (p < g->scan_off) {	/* walk_header() checked the bounds */
		if (buf[p + 1] == 0xff) {	/* fill byte */
			p++;
			continue;
		}
		seglen = be16(buf + p + 2);
		if (!(buf[p + 1] >= 0xe0 && buf[p + 1] <= 0xef) &&
		    buf[p + 1] != 0xfe) {	/* not APPn, COM */
			memcpy(out + o, buf + p, 2 + seglen);
			if (p == h.sof_off)
				sof_size(g, mx0, my0, mx1, my1, out + o);
			o += 2 + seglen;
		}
		p += 2 + seglen;
	}
	for (r = my0; r < my1; r++) {
		j = (uint64_t)r * per_row;
		s = rows[r];
		if (s < g->scan_off || s >= g->end_off ||
		    (r == 0 && s != g->scan_off) ||
		    (r && (buf[s - 2] != 0xff ||
			   buf[s - 1] != 0xd0 + ((j - 1) & 7))))
			BAD("splice: a row offset is not at the start of its row's first interval");
		for (i = 0; i < i1; i++, j++) {
			e = interval_end(buf, s, lim);
			if (!e)
				BAD("splice: an interval does not end at a marker");
			if (buf[e + 1] == 0xd9 ? j + 1 != total :
			    buf[e + 1] != 0xd0 + (j & 7))
				BAD("splice: an interval is not followed by the next restart marker");
			if (i >= i0) {
				if (o + (e - s) + 4 > cap)
					return -ENOSPC;
				if (n) {
					out[o++] = 0xff;
					out[o++] = (uint8_t)(0xd0 + ((n - 1) & 7));
				}
				memcpy(out + o, buf + s, e - s);
				o += e - s;
				n++;
			}
			s = e + 2;
		}
	}
	if (o + 2 > cap)
		return -ENOSPC;
	out[o++] = 0xff;
	out[o++] = 0xd9;
	if (ox)
		*ox = mx0 * g->mcu_w;
	if (oy)
		*oy = my0 * g->mcu_h;
	return (ssize_t)o;
}
