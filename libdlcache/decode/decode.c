// SPDX-License-Identifier: MIT
/*
 * JPEG decode with libjpeg-turbo's libjpeg API: full decode to RGB, and
 * crop-first decode of one training sample straight into its batch slot.
 *
 * Strictness. Like Pillow without LOAD_TRUNCATED_IMAGES, a file whose data
 * ends early or that libjpeg flags as corrupt (even by a mere warning) is a
 * failure, never a half-grey image. libjpeg reports errors through
 * error_exit(), which must not return: we longjmp back to the entry point,
 * abort the decompressor (it stays reusable) and return -errno with a kind
 * and a message. Nothing is ever printed.
 *
 * Crop-first. The savings come from skipping rows above the crop
 * (jpeg_skip_scanlines: entropy-decoded, no IDCT), running the IDCT only
 * for the crop's iMCU columns (jpeg_crop_scanline) and at the smallest 1/d
 * scale whose output still covers the output size. Checked (the default),
 * the rows below the crop are entropy-decoded too and the file read to
 * EOI, so it fails exactly where a full decode does; unchecked, it stops
 * after the crop's last row and damage below goes unseen (the loader uses
 * that only for bytes it has checked once). Only power-of-two scales are
 * used: libjpeg-turbo has SIMD IDCTs for 1/1, 1/2, 1/4 and 1/8 only, so
 * 3/8 or 6/8 cost more than a full decode here.
 *
 * MCU-exact (dlc_decoder_sample_rst). For a restart-indexed JPEG
 * (jpegrst.h), the same crop, scale and plan, but only the restart
 * intervals under the plan's pixels plus one MCU are spliced into a small
 * JPEG and decoded whole: no rows above or below, no columns beside.
 *
 * Budgets. max_pixels bounds the memory of one sample, not its time: a
 * progressive file may hold hundreds of scans, each a pass over the whole
 * coefficient buffer. libjpeg calls our progress monitor before each iMCU
 * row of each scan it absorbs (jpeg_start_decompress() of a multi-scan
 * file) and before each jpeg_read_scanlines(), whatever the method: there
 * the scan number is held to max_scans and the thread's CPU time to the
 * call's budget, and going over longjmps out as any libjpeg error does.
 * Scratch that one outsized sample grew is freed after it (scratch_settle()).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

#include "dlcache.h"
#include "decode.h"
#include "image.h"
#include "internal.h"
#include "jpegrst.h"
#include "resize.h"

struct dlc_decoder {
	struct jpeg_decompress_struct cinfo;
	struct jpeg_error_mgr jerr;
	struct jpeg_source_mgr src;
	struct jpeg_progress_mgr progress;
	jmp_buf jb;
	uint64_t max_pixels;
	uint32_t max_scans;		/* scans a file may have */
	uint32_t budget_ms;		/* CPU a call may take; 0: by pixels */
	uint64_t budget_ns;		/* this call's, set by read_header() */
	uint64_t wall_start_ns;		/* this call's start, CLOCK_MONOTONIC */
	uint64_t cpu_start_ns;		/* and the thread's CPU clock then */
	size_t len;			/* bytes of the current image */
	const char *phase;		/* what is being read, for messages */
	uint32_t kind;			/* enum dlc_error_kind of the last call */
	int err;			/* its negative errno */
	struct dlc_crop crop;		/* crop of the current sample */
	/*
	 * Eval: torchvision resizes the whole image to full_w x full_h and
	 * keeps the window at (win_x, win_y); train crops first.
	 */
	uint32_t eval;
	uint32_t full_w, full_h, win_x, win_y;
	uint32_t exact;			/* DLC_TRANSFORM_F_EXACT: scale 1 */
	uint32_t img_w, img_h;		/* the whole image (not a splice) */
	/*
	 * Images begun on cinfo since it was made (begin()), and whether
	 * making it anew failed (cinfo is then not usable until it is made).
	 */
	uint32_t images;
	int unmade;
	/*
	 * Scratch, grown on demand and kept: steady state allocates nothing.
	 * @need is what this call asked for, @typical a running mean of it
	 * (scratch_settle()).
	 */
	size_t need;
	size_t typical;
	uint8_t *region;		/* decoded RGB rows */
	size_t region_cap;
	uint8_t *row4;			/* one CMYK row before conversion */
	size_t row4_cap;
	uint8_t *pending;		/* a whole decode's buffer in flight */
	const struct dlc_rgb_alloc *pending_by;	/* and whose it is */
	uint8_t *splice;		/* MCU-exact: the spliced JPEG */
	size_t splice_cap;
	struct dlc_resize_ws ws;
	char msg[256];
};

static const char *const kind_names[DLC_ERR_KINDS] = {
	[DLC_ERR_NONE] = "none",
	[DLC_ERR_IO] = "io",
	[DLC_ERR_MISSING] = "missing",
	[DLC_ERR_EMPTY] = "empty",
	[DLC_ERR_NOT_JPEG] = "not_jpeg",
	[DLC_ERR_CORRUPT] = "corrupt",
	[DLC_ERR_TRUNCATED] = "truncated",
	[DLC_ERR_TOO_LARGE] = "too_large",
	[DLC_ERR_NOMEM] = "nomem",
};

const char *dlc_error_kind_name(uint32_t kind)
{
	return kind < DLC_ERR_KINDS ? kind_names[kind] : "unknown";
}

__attribute__((format(printf, 4, 5)))
static int set_error(struct dlc_decoder *d, uint32_t kind, int err,
		     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	va_end(ap);
	d->kind = kind;
	d->err = err;
	return err;
}

/* ---- libjpeg hooks: errors and corrupt-data warnings longjmp out ---- */

static struct dlc_decoder *to_dec(j_common_ptr c)
{
	return c->client_data;
}

static void jpeg_failed(j_common_ptr c, uint32_t kind, int err,
			const char *what)
{
	struct dlc_decoder *d = to_dec(c);
	char text[JMSG_LENGTH_MAX];

	c->err->format_message(c, text);
	set_error(d, kind, err, "%s: %s", what, text);
	longjmp(d->jb, 1);
}

static void on_error_exit(j_common_ptr c)
{
	switch (c->err->msg_code) {
	case JERR_OUT_OF_MEMORY:
		jpeg_failed(c, DLC_ERR_NOMEM, -ENOMEM, "out of memory");
		break;
	case JERR_IMAGE_TOO_BIG:
	case JERR_WIDTH_OVERFLOW:
		jpeg_failed(c, DLC_ERR_TOO_LARGE, -E2BIG, "image too large");
		break;
	case JERR_NO_SOI:
		jpeg_failed(c, DLC_ERR_NOT_JPEG, -EBADMSG, "not a JPEG");
		break;
	case JERR_INPUT_EOF:
	case JERR_INPUT_EMPTY:
		jpeg_failed(c, DLC_ERR_TRUNCATED, -EBADMSG, "truncated JPEG");
		break;
	default:
		jpeg_failed(c, DLC_ERR_CORRUPT, -EBADMSG, "corrupt JPEG");
		break;
	}
}

static void on_emit_message(j_common_ptr c, int level)
{
	/* levels >= 0 are trace messages; -1 is a warning */
	if (level >= 0)
		return;
	switch (c->err->msg_code) {
	case JWRN_JPEG_EOF:
		jpeg_failed(c, DLC_ERR_TRUNCATED, -EBADMSG, "truncated JPEG");
		break;
	case JWRN_ARITH_BAD_CODE:
	case JWRN_BOGUS_PROGRESSION:
	case JWRN_EXTRANEOUS_DATA:
	case JWRN_HIT_MARKER:
	case JWRN_HUFF_BAD_CODE:
	case JWRN_MUST_RESYNC:
	case JWRN_NOT_SEQUENTIAL:
		jpeg_failed(c, DLC_ERR_CORRUPT, -EBADMSG, "corrupt JPEG");
		break;
	default:
		/* e.g. an unknown JFIF revision: harmless to the pixels */
		break;
	}
}

static void on_output_message(j_common_ptr c)
{
	(void)c;
}

/* ---- source: the whole file is in memory; running dry is truncation ---- */

static void src_init(j_decompress_ptr c)
{
	(void)c;
}

static boolean src_fill(j_decompress_ptr c)
{
	struct dlc_decoder *d = to_dec((j_common_ptr)c);

	set_error(d, DLC_ERR_TRUNCATED, -EBADMSG,
		  "truncated JPEG: the data ends after %zu bytes, inside the %s",
		  d->len, d->phase);
	longjmp(d->jb, 1);
}

static void src_skip(j_decompress_ptr c, long n)
{
	struct jpeg_source_mgr *s = c->src;

	if (n <= 0)
		return;
	if ((size_t)n > s->bytes_in_buffer)
		src_fill(c);
	s->next_input_byte += n;
	s->bytes_in_buffer -= (size_t)n;
}

static void src_term(j_decompress_ptr c)
{
	(void)c;
}

/* ---- budgets: scans and CPU time, checked from libjpeg's monitor ---- */

/* The start of a decode call: its CPU budget runs from here. */
static void start_call(struct dlc_decoder *d)
{
	d->need = 0;
	d->budget_ns = UINT64_MAX;	/* until read_header() knows the size */
	d->wall_start_ns = dlc_now_ns();
	d->cpu_start_ns = dlc_thread_cpu_ns();
}

/*
 * The call's CPU budget for an image of @pixels: decode_budget_ms, or by
 * default DLC_DEFAULT_DECODE_BUDGET_MS plus 1 ms per 16 Ki pixels: 6.1 s
 * at 64 Mpixels, where a dense progressive 4:4:4 image took 0.9 s of CPU
 * here, and more headroom below (a 1 Mpixel image takes about 15 ms).
 */
static uint64_t budget_for(const struct dlc_decoder *d, uint64_t pixels)
{
	uint64_t ms = d->budget_ms;

	if (!ms)
		ms = DLC_DEFAULT_DECODE_BUDGET_MS + (pixels >> 14);
	return ms * 1000000ULL;
}

/*
 * libjpeg's progress monitor. input_scan_number counts the SOS markers
 * read so far: past max_scans the next scan is refused before its data is
 * decoded; the CPU budget as dlc_over_cpu_budget() says.
 */
static void on_progress(j_common_ptr c)
{
	struct dlc_decoder *d = to_dec(c);
	j_decompress_ptr dc = (j_decompress_ptr)c;
	uint64_t cpu = 0;

	if (dc->input_scan_number > 0 &&
	    (uint32_t)dc->input_scan_number > d->max_scans) {
		set_error(d, DLC_ERR_TOO_LARGE, -E2BIG,
			  "too many scans: scan %d of the progressive JPEG is over max_scans %u",
			  dc->input_scan_number, d->max_scans);
		longjmp(d->jb, 1);
	}
	if (!dlc_over_cpu_budget(d->wall_start_ns, d->cpu_start_ns,
				 d->budget_ns, &cpu))
		return;
	set_error(d, DLC_ERR_TOO_LARGE, -E2BIG,
		  "decode over %llu ms of CPU (decode_budget_ms%s), stopped after %llu ms in scan %d",
		  (unsigned long long)(d->budget_ns / 1000000),
		  d->budget_ms ? "" : " default",
		  (unsigned long long)(cpu / 1000000), dc->input_scan_number);
	longjmp(d->jb, 1);
}

int dlc_decoder_set_budget(struct dlc_decoder *d, uint32_t max_scans,
			   uint32_t budget_ms)
{
	if (!d)
		return -EINVAL;
	d->max_scans = max_scans ? max_scans : DLC_DEFAULT_MAX_SCANS;
	d->budget_ms = budget_ms;
	return 0;
}

/*
 * Scratch kept between calls: all of it up to SCRATCH_KEEP, or up to 4x
 * the typical call's need. Past that it was grown by an outsized sample
 * (the exact transform of a 64 Mpixel image holds 192 MB of rows) and is
 * freed, so that one such sample does not pin its memory on every decode
 * thread for the loader's life. The typical need is a running mean (1/8
 * weight) of what the calls asked for (the resize's workspace counted at
 * its size: resize.c sizes it), updated after the check, so that an
 * outsized sample does not raise its own threshold, and a data set of
 * large images settles within a few samples.
 */
#define SCRATCH_KEEP	(16UL << 20)

static size_t scratch_bytes(const struct dlc_decoder *d)
{
	return d->region_cap + d->row4_cap + d->splice_cap + d->ws.cap;
}

size_t dlc_decoder_scratch_bytes(const struct dlc_decoder *d)
{
	return d ? scratch_bytes(d) : 0;
}

static void scratch_free(struct dlc_decoder *d)
{
	free(d->region);
	free(d->row4);
	free(d->splice);
	free(d->ws.mem);
	d->region = d->row4 = d->splice = NULL;
	d->ws.mem = NULL;
	d->region_cap = d->row4_cap = d->splice_cap = d->ws.cap = 0;
}

/* At the end of a decode call, whatever its result. Returns @ret. */
static int scratch_settle(struct dlc_decoder *d, int ret)
{
	size_t keep = d->typical > SCRATCH_KEEP / 4 ? d->typical * 4 :
		      SCRATCH_KEEP;
	size_t need = d->need + d->ws.cap;

	if (scratch_bytes(d) > keep)
		scratch_free(d);
	if (need >= d->typical)
		d->typical += (need - d->typical) / 8;
	else
		d->typical -= (d->typical - need) / 8;
	return ret;
}

/* ---- decoder object ---- */

int dlc_decoder_create(uint64_t max_pixels, struct dlc_decoder **out)
{
	struct dlc_decoder *d;

	if (!out)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->max_pixels = max_pixels ? max_pixels : DLC_DEFAULT_MAX_PIXELS;
	d->max_scans = DLC_DEFAULT_MAX_SCANS;
	d->budget_ns = UINT64_MAX;
	d->cinfo.err = jpeg_std_error(&d->jerr);
	d->jerr.error_exit = on_error_exit;
	d->jerr.emit_message = on_emit_message;
	d->jerr.output_message = on_output_message;
	d->cinfo.client_data = d;
	if (setjmp(d->jb)) {
		/* only an allocation can fail in here */
		jpeg_destroy_decompress(&d->cinfo);
		free(d);
		return -ENOMEM;
	}
	jpeg_create_decompress(&d->cinfo);
	d->src.init_source = src_init;
	d->src.fill_input_buffer = src_fill;
	d->src.skip_input_data = src_skip;
	d->src.resync_to_restart = jpeg_resync_to_restart;
	d->src.term_source = src_term;
	d->cinfo.src = &d->src;
	d->progress.progress_monitor = on_progress;
	d->cinfo.progress = &d->progress;
	*out = d;
	return 0;
}

void dlc_decoder_destroy(struct dlc_decoder *d)
{
	if (!d)
		return;
	jpeg_destroy_decompress(&d->cinfo);
	scratch_free(d);
	free(d);
}

uint32_t dlc_decoder_error_kind(const struct dlc_decoder *d)
{
	return d ? d->kind : DLC_ERR_NONE;
}

const char *dlc_decoder_error(const struct dlc_decoder *d)
{
	if (!d)
		return "no decoder";
	return d->msg[0] ? d->msg : "no error";
}

/* Scratch buffer @buf of *@cap bytes to at least @need; counted in d->need. */
static int grow(struct dlc_decoder *d, uint8_t **buf, size_t *cap,
		size_t need)
{
	uint8_t *p;

	d->need += need;
	if (need <= *cap)
		return 0;
	p = realloc(*buf, need);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = need;
	return 0;
}

/*
 * Images a decompress object begins before it is made anew: see
 * forget_tables(). Each image may allocate its tables (about 1.4 kB for
 * a typical JPEG, 2.8 kB at most) from the object's permanent pool, in a
 * chunk of their own, and libjpeg's alloc_small() walks the pool's chunks
 * from the first for every table: at 256 images that walk took 3.4 % of
 * a pack's decode time (perf), at 16 it takes 0.2 %, and making the
 * object anew is a few small allocations.
 */
#define RENEW_IMAGES	16

/*
 * Make cinfo anew, its permanent pool (the tables of the images since)
 * given back: 0, or -ENOMEM with d->unmade set, when the next begin()
 * tries again.
 */
static int renew(struct dlc_decoder *d)
{
	jpeg_destroy_decompress(&d->cinfo);
	d->unmade = 1;
	if (setjmp(d->jb)) {
		/* only an allocation can fail in here */
		jpeg_destroy_decompress(&d->cinfo);
		return -ENOMEM;
	}
	/* It keeps cinfo.err and cinfo.client_data. */
	jpeg_create_decompress(&d->cinfo);
	d->cinfo.src = &d->src;
	d->cinfo.progress = &d->progress;
	d->unmade = 0;
	d->images = 0;
	return 0;
}

/*
 * libjpeg keeps the Huffman and quantization tables of one image for the
 * next in the same decompress object (for abbreviated streams). A file
 * that uses a table it never defines would then decode with the tables
 * of whatever this decoder decoded before: its pixels, or whether it is
 * corrupt at all, would depend on the thread's history (a fuzzed
 * progressive JPEG without its DHT decoded after another JPEG, where
 * alone it fails "Huffman table 0x00 was not defined"). Each image
 * starts without tables, as in a new object; what it defines is
 * allocated again, so the object is made anew every RENEW_IMAGES.
 */
static int forget_tables(struct dlc_decoder *d)
{
	struct jpeg_decompress_struct *c = &d->cinfo;
	int i;

	if ((d->unmade || ++d->images >= RENEW_IMAGES) && renew(d))
		return set_error(d, DLC_ERR_NOMEM, -ENOMEM,
				 "out of memory: making the JPEG decoder anew");
	for (i = 0; i < NUM_QUANT_TBLS; i++)
		c->quant_tbl_ptrs[i] = NULL;
	for (i = 0; i < NUM_HUFF_TBLS; i++) {
		c->dc_huff_tbl_ptrs[i] = NULL;
		c->ac_huff_tbl_ptrs[i] = NULL;
	}
	return 0;
}

/*
 * Checks that need no libjpeg, then points the source at @buf, with
 * cinfo holding no table of an earlier image.
 */
static int begin(struct dlc_decoder *d, const void *buf, size_t len)
{
	const uint8_t *b = buf;
	int ret;

	d->kind = DLC_ERR_NONE;
	d->err = 0;
	d->msg[0] = '\0';
	if (!len)
		return set_error(d, DLC_ERR_EMPTY, -EBADMSG,
				 "empty file: zero bytes");
	if (!buf)
		return set_error(d, DLC_ERR_NONE, -EINVAL,
				 "invalid argument: no buffer");
	if (len < 2)
		return set_error(d, DLC_ERR_NOT_JPEG, -EBADMSG,
				 "not a JPEG: only 1 byte (0x%02x)", b[0]);
	if (b[0] != 0xff || b[1] != 0xd8)
		return set_error(d, DLC_ERR_NOT_JPEG, -EBADMSG,
				 "not a JPEG: starts with 0x%02x 0x%02x, not the SOI marker 0xff 0xd8",
				 b[0], b[1]);
	ret = forget_tables(d);
	if (ret)
		return ret;
	d->len = len;
	d->phase = "header";
	d->src.next_input_byte = b;
	d->src.bytes_in_buffer = len;
	return 0;
}

/* After an error, wherever it came from: leave the decoder reusable. */
static int recover(struct dlc_decoder *d)
{
	jpeg_abort_decompress(&d->cinfo);
	if (d->pending)
		d->pending_by->release(d->pending_by->arg, d->pending);
	d->pending = NULL;
	return d->err ? d->err : -EBADMSG;
}

/*
 * Parse the header and apply the size cap before libjpeg allocates
 * anything image-sized (that happens in jpeg_start_decompress()).
 * Runs under the caller's setjmp.
 */
static int read_header(struct dlc_decoder *d)
{
	struct jpeg_decompress_struct *c = &d->cinfo;
	uint64_t pixels;

	jpeg_read_header(c, TRUE);
	d->phase = "image data";
	pixels = (uint64_t)c->image_width * c->image_height;
	if (pixels > d->max_pixels) {
		set_error(d, DLC_ERR_TOO_LARGE, -E2BIG,
			  "image too large: %ux%u is %llu pixels, over the cap of %llu",
			  c->image_width, c->image_height,
			  (unsigned long long)pixels,
			  (unsigned long long)d->max_pixels);
		jpeg_abort_decompress(c);
		return -E2BIG;
	}
	d->budget_ns = budget_for(d, pixels);
	/* libjpeg converts gray and YCbCr to RGB; CMYK and YCCK only to CMYK */
	if (c->jpeg_color_space == JCS_CMYK || c->jpeg_color_space == JCS_YCCK)
		c->out_color_space = JCS_CMYK;
	else
		c->out_color_space = JCS_RGB;
	c->dct_method = JDCT_ISLOW;
	c->do_fancy_upsampling = TRUE;
	c->scale_num = 1;
	c->scale_denom = 1;
	return 0;
}

static int no_memory(struct dlc_decoder *d, size_t bytes)
{
	set_error(d, DLC_ERR_NOMEM, -ENOMEM,
		  "out of memory: %zu bytes of decode buffer", bytes);
	jpeg_abort_decompress(&d->cinfo);
	return -ENOMEM;
}

static uint8_t muldiv255(uint32_t a, uint32_t b)
{
	uint32_t t = a * b + 128;

	return (uint8_t)(((t >> 8) + t) >> 8);
}

/*
 * CMYK to RGB as Pillow does (255 - k) * (255 - c) / 255 with its
 * rounding. Adobe's APP14 marker means the file stores inverted CMYK,
 * which is what Photoshop writes and libjpeg passes through untouched.
 */
static void cmyk_to_rgb(uint8_t *out, const uint8_t *in, uint32_t n,
			int inverted)
{
	uint32_t i, j;

	for (i = 0; i < n; i++, in += 4, out += 3) {
		uint32_t k = inverted ? in[3] : 255u - in[3];

		for (j = 0; j < 3; j++) {
			uint32_t v = inverted ? 255u - in[j] : in[j];

			out[j] = (uint8_t)(k - muldiv255(v, k));
		}
	}
}

/* Read @n output rows into @dst, @stride bytes apart, as RGB. */
static int read_rows(struct dlc_decoder *d, uint8_t *dst, size_t stride,
		     uint32_t n)
{
	struct jpeg_decompress_struct *c = &d->cinfo;
	int cmyk = c->out_color_space == JCS_CMYK;
	uint32_t i;

	if (cmyk && grow(d, &d->row4, &d->row4_cap, (size_t)c->output_width * 4))
		return no_memory(d, (size_t)c->output_width * 4);
	for (i = 0; i < n; i++) {
		JSAMPROW row = cmyk ? d->row4 : dst + i * stride;

		if (jpeg_read_scanlines(c, &row, 1) != 1) {
			/* cannot happen with an in-memory source: no suspension */
			set_error(d, DLC_ERR_CORRUPT, -EBADMSG,
				  "corrupt JPEG: no scanline %u of %u",
				  c->output_scanline, c->output_height);
			jpeg_abort_decompress(c);
			return -EBADMSG;
		}
		if (cmyk)
			cmyk_to_rgb(dst + i * stride, d->row4, c->output_width,
				    c->saw_Adobe_marker);
	}
	return 0;
}

int dlc_decoder_header(struct dlc_decoder *d, const void *buf, size_t len,
		       struct dlc_jpeg_info *info)
{
	struct jpeg_decompress_struct *c;
	int ret;

	if (!d || !info)
		return -EINVAL;
	c = &d->cinfo;
	ret = begin(d, buf, len);
	if (ret)
		return ret;
	if (setjmp(d->jb))
		return recover(d);
	jpeg_read_header(c, TRUE);
	memset(info, 0, sizeof(*info));
	info->width = c->image_width;
	info->height = c->image_height;
	info->components = (uint32_t)c->num_components;
	info->progressive = c->progressive_mode ? 1 : 0;
	info->h_samp = (uint32_t)c->comp_info[0].h_samp_factor;
	info->v_samp = (uint32_t)c->comp_info[0].v_samp_factor;
	jpeg_abort_decompress(c);
	return 0;
}

/*
 * Whether @buf is for image.c: not a JPEG by dlc_image_sniff(), and long
 * enough to tell (begin() names an empty or 1-byte file).
 */
static int other_format(const void *buf, size_t len)
{
	return buf && len >= 2 && dlc_image_sniff(buf, len) != DLC_IMG_JPEG;
}

/*
 * Decode a non-JPEG image whole into d->region (image.c), *@w x *@h,
 * 3 bytes a pixel, under the call's budget for max_pixels: its size is
 * only known once its format's header is read.
 */
static int decode_image(struct dlc_decoder *d, const void *buf, size_t len,
			uint32_t *w, uint32_t *h)
{
	struct dlc_image im = {
		.max_pixels = d->max_pixels,
		.budget_ns = budget_for(d, d->max_pixels),
		.wall_start_ns = d->wall_start_ns,
		.cpu_start_ns = d->cpu_start_ns,
		.rgb = d->region,
		.cap = d->region_cap,
	};
	int ret;

	d->kind = DLC_ERR_NONE;
	d->err = 0;
	d->msg[0] = '\0';
	ret = dlc_image_decode(&im, buf, len);
	d->region = im.rgb;
	d->region_cap = im.cap;
	d->need += (size_t)im.width * im.height * 3;
	if (ret)
		return set_error(d, im.kind, ret, "%s", im.msg);
	*w = im.width;
	*h = im.height;
	return 0;
}

/* full_call() of a non-JPEG: decoded into d->region, then copied to @a's. */
static int image_full(struct dlc_decoder *d, const void *buf, size_t len,
		      const struct dlc_rgb_alloc *a, uint8_t **rgb,
		      uint32_t *width, uint32_t *height)
{
	size_t bytes;
	int ret;

	ret = decode_image(d, buf, len, width, height);
	if (ret)
		return ret;
	bytes = (size_t)*width * *height * 3;
	*rgb = a->alloc(a->arg, bytes);
	if (!*rgb)
		return no_memory(d, bytes);
	memcpy(*rgb, d->region, bytes);
	return 0;
}

static int full_call(struct dlc_decoder *d, const void *buf, size_t len,
		     const struct dlc_rgb_alloc *a, uint8_t **rgb,
		     uint32_t *width, uint32_t *height)
{
	struct jpeg_decompress_struct *c = &d->cinfo;
	size_t stride, bytes;
	int ret;

	if (other_format(buf, len))
		return image_full(d, buf, len, a, rgb, width, height);
	ret = begin(d, buf, len);
	if (ret)
		return ret;
	if (setjmp(d->jb))
		return recover(d);
	ret = read_header(d);
	if (ret)
		return ret;
	jpeg_start_decompress(c);
	stride = (size_t)c->output_width * 3;
	bytes = stride * c->output_height;
	d->pending = a->alloc(a->arg, bytes);
	d->pending_by = a;
	if (!d->pending)
		return no_memory(d, bytes);
	ret = read_rows(d, d->pending, stride, c->output_height);
	if (ret) {
		a->release(a->arg, d->pending);
		d->pending = NULL;
		return ret;
	}
	/* reads on to EOI: a file cut short after the last row fails too */
	jpeg_finish_decompress(c);
	*rgb = d->pending;
	*width = c->output_width;
	*height = c->output_height;
	d->pending = NULL;
	return 0;
}

int dlc_decoder_full_to(struct dlc_decoder *d, const void *buf, size_t len,
			const struct dlc_rgb_alloc *a, uint8_t **rgb,
			uint32_t *width, uint32_t *height)
{
	if (!d || !a || !rgb || !width || !height)
		return -EINVAL;
	start_call(d);
	return scratch_settle(d, full_call(d, buf, len, a, rgb, width,
					   height));
}

static uint8_t *heap_alloc(void *arg, size_t bytes)
{
	(void)arg;
	return malloc(bytes);
}

static void heap_release(void *arg, uint8_t *mem)
{
	(void)arg;
	free(mem);
}

int dlc_decoder_full(struct dlc_decoder *d, const void *buf, size_t len,
		     uint8_t **rgb, uint32_t *width, uint32_t *height)
{
	static const struct dlc_rgb_alloc heap = { heap_alloc, heap_release,
						   NULL };

	return dlc_decoder_full_to(d, buf, len, &heap, rgb, width, height);
}

/*
 * A single-scan file is read only as far as the crop's last row, so its
 * end is never seen: check that an EOI marker follows the entropy data.
 * Entropy-coded bytes cannot contain 0xff 0xd9, so scanning back from the
 * end finds the EOI at once in a good file (past any trailing bytes) and
 * runs through to the header only in a truncated one.
 */
static int has_eoi(const uint8_t *buf, size_t len, size_t data_start)
{
	size_t i;

	for (i = len; i >= data_start + 2; i--)
		if (buf[i - 2] == 0xff && buf[i - 1] == 0xd9)
			return 1;
	return 0;
}

static uint32_t pick_denom(const struct dlc_crop *cr, uint32_t out_w,
			   uint32_t out_h)
{
	uint32_t den;

	for (den = 8; den > 1; den /= 2)
		if (cr->w / den >= out_w && cr->h / den >= out_h)
			break;
	return den;
}

/* Decoded pixels kept beyond the box for the filter: its reach, plus 1. */
static uint32_t margin(double span, uint32_t out)
{
	double support = span / out;

	return (uint32_t)ceil(support < 1.0 ? 1.0 : support) + 1;
}

/*
 * Entropy-decode the rows below the crop and read on to EOI, as a full
 * decode would, so that a file it rejects is rejected here too. A single
 * scan is read as the rows are, and jpeg_skip_scanlines() Huffman-decodes
 * the iMCU rows it skips (as it did those above the crop), except that a
 * skip reaching the bottom returns at once having decoded nothing: so skip
 * to the last row and read that one (its crop columns only). Multi-scan
 * files were read to EOI by jpeg_start_decompress(). d->region's rows are
 * scratch by now. Runs under the caller's setjmp.
 */
static int read_rest(struct dlc_decoder *d, size_t stride)
{
	struct jpeg_decompress_struct *c = &d->cinfo;
	JDIMENSION left = c->output_height - c->output_scanline;
	int ret;

	if (left > 1 && jpeg_skip_scanlines(c, left - 1) != left - 1) {
		set_error(d, DLC_ERR_CORRUPT, -EBADMSG,
			  "corrupt JPEG: cannot skip to row %u",
			  c->output_height - 1);
		jpeg_abort_decompress(c);
		return -EBADMSG;
	}
	if (left) {
		ret = read_rows(d, d->region, stride, 1);
		if (ret)
			return ret;
	}
	jpeg_finish_decompress(c);
	return 0;
}

/*
 * What the resize sees at DCT scale 1/@den (an image of @ow x @oh there),
 * and the decoded pixels [c0, c1) x [r0, r1) it needs. Train (and a given
 * crop): torchvision crops, then resizes the crop as an image of its own,
 * so the filter stops at the crop's edges; at a reduced scale the crop's
 * edges fall inside pixels, which are kept whole. Eval: the whole image
 * is resized and a window kept, so the filter reaches past the box.
 */
#define EDGE	2

struct plan {
	struct dlc_resize_geom g;	/* buffer fields: plan_buffer() */
	uint32_t ix, iy;		/* the image's corner, at the scale */
	uint32_t c0, c1, r0, r1;
};

static void plan_at(const struct dlc_decoder *d, uint32_t den, uint32_t ow,
		    uint32_t oh, uint32_t out_w, uint32_t out_h,
		    struct plan *p)
{
	const struct dlc_crop *cr = &d->crop;
	double bx0 = cr->x / den, by0 = cr->y / den;
	double bx1 = (cr->x + cr->w) / den, by1 = (cr->y + cr->h) / den;
	struct dlc_resize_geom *g = &p->g;
	uint32_t mx, my;

	memset(p, 0, sizeof(*p));
	g->box.flip = cr->flip;
	g->out_w = out_w;
	g->out_h = out_h;
	if (!d->eval) {
		p->ix = (uint32_t)floor(bx0);
		p->iy = (uint32_t)floor(by0);
		g->img_w = ((uint32_t)ceil(bx1) < ow ? (uint32_t)ceil(bx1) : ow) -
			   p->ix;
		g->img_h = ((uint32_t)ceil(by1) < oh ? (uint32_t)ceil(by1) : oh) -
			   p->iy;
		g->box.x = bx0 - p->ix;
		g->box.y = by0 - p->iy;
		g->box.w = bx1 - bx0;
		g->box.h = by1 - by0;
		g->full_w = out_w;
		g->full_h = out_h;
		/*
		 * libjpeg upsamples chroma at the edges of a cropped or
		 * skipped region as if they were the image's: decode
		 * EDGE pixels more on each side, unused by the filter.
		 */
		p->c0 = p->ix > EDGE ? p->ix - EDGE : 0;
		p->r0 = p->iy > EDGE ? p->iy - EDGE : 0;
		p->c1 = p->ix + g->img_w + EDGE < ow ?
			p->ix + g->img_w + EDGE : ow;
		p->r1 = p->iy + g->img_h + EDGE < oh ?
			p->iy + g->img_h + EDGE : oh;
		return;
	}
	g->img_w = ow;
	g->img_h = oh;
	g->box.w = (double)d->img_w / den;
	g->box.h = (double)d->img_h / den;
	g->full_w = d->full_w;
	g->full_h = d->full_h;
	g->win_x = d->win_x;
	g->win_y = d->win_y;
	mx = margin(bx1 - bx0, out_w);
	my = margin(by1 - by0, out_h);
	p->c0 = floor(bx0) > mx ? (uint32_t)floor(bx0) - mx : 0;
	p->c1 = (uint32_t)ceil(bx1) + mx < ow ? (uint32_t)ceil(bx1) + mx : ow;
	p->r0 = floor(by0) > my ? (uint32_t)floor(by0) - my : 0;
	p->r1 = (uint32_t)ceil(by1) + my < oh ? (uint32_t)ceil(by1) + my : oh;
}

/*
 * The decoded buffer: columns from @xoff, @cw wide, rows from @r0, @rows
 * high, at the scale. Returns where the image's part of it starts.
 */
static const uint8_t *plan_buffer(struct plan *p, const uint8_t *region,
				  uint32_t xoff, uint32_t cw, uint32_t r0,
				  uint32_t rows, size_t stride)
{
	struct dlc_resize_geom *g = &p->g;
	uint32_t dx = p->ix > xoff ? p->ix - xoff : 0;
	uint32_t dy = p->iy > r0 ? p->iy - r0 : 0;

	g->buf_x = xoff + dx - p->ix;
	g->buf_y = r0 + dy - p->iy;
	g->buf_w = cw - dx < g->img_w - g->buf_x ? cw - dx :
		   g->img_w - g->buf_x;
	g->buf_h = rows - dy < g->img_h - g->buf_y ? rows - dy :
		   g->img_h - g->buf_y;
	g->stride = stride;
	return region + (size_t)dy * stride + (size_t)dx * 3;
}

/* plan_buffer() of the decoded rows, then the planned resize into @dst. */
static int resize_planned(struct dlc_decoder *d, struct plan *p,
			  uint32_t xoff, uint32_t cw, uint32_t r0,
			  uint32_t rows, size_t stride, uint32_t layout,
			  uint8_t *dst)
{
	const uint8_t *src;

	src = plan_buffer(p, d->region, xoff, cw, r0, rows, stride);
	return dlc_resize_geom(&d->ws, src, &p->g, layout, dst,
			       DLC_RESIZE_BEST);
}

/*
 * Whether libjpeg smooths the blocks of this file: progressive, with
 * coefficients still unknown or coarse once jpeg_start_decompress()
 * absorbed every scan (jdcoefct.c's smoothing_ok() reads the same
 * coef_bits, over the first 9 of them at most). A smoothed block takes
 * its neighbours' DC values, and libjpeg takes a cropped row's first
 * column for those left of it: a crop's edge would differ from a whole
 * decode's (torchvision's), so such a file is decoded full width.
 */
static int smoothed(const struct jpeg_decompress_struct *c)
{
	int ci, k;

	if (!c->progressive_mode || !c->do_block_smoothing || !c->coef_bits)
		return 0;
	for (ci = 0; ci < c->num_components; ci++)
		for (k = 1; k <= 9; k++)
			if (c->coef_bits[ci][k] != 0)
				return 1;
	return 0;
}

/*
 * Crop-first decode of d->crop; with @check_rest the rest of the image's
 * entropy data is decoded too (read_rest()). Runs under the caller's
 * setjmp.
 */
static int decode_crop_first(struct dlc_decoder *d, const uint8_t *buf,
			     uint32_t out_w, uint32_t out_h, uint32_t layout,
			     int check_rest, uint8_t *dst)
{
	struct jpeg_decompress_struct *c = &d->cinfo;
	size_t data_start = d->len - d->src.bytes_in_buffer;
	uint32_t den, ow, oh, r0, r1;
	JDIMENSION xoff, cw;
	struct plan p;
	size_t stride;
	int ret;

	den = d->exact ? 1 : pick_denom(&d->crop, out_w, out_h);
	c->scale_num = 1;
	c->scale_denom = den;
	jpeg_start_decompress(c);
	ow = c->output_width;
	oh = c->output_height;
	plan_at(d, den, ow, oh, out_w, out_h, &p);
	r0 = p.r0;
	r1 = p.r1;

	xoff = p.c0;
	cw = p.c1 - p.c0;
	/* widened to iMCU column boundaries: xoff moves left, cw grows */
	if (cw < ow && !smoothed(c)) {
		jpeg_crop_scanline(c, &xoff, &cw);
	} else {
		xoff = 0;
		cw = ow;
	}
	stride = (size_t)cw * 3;
	if (grow(d, &d->region, &d->region_cap, stride * (r1 - r0)))
		return no_memory(d, stride * (r1 - r0));
	if (r0 && jpeg_skip_scanlines(c, r0) != r0) {
		set_error(d, DLC_ERR_CORRUPT, -EBADMSG,
			  "corrupt JPEG: cannot skip to row %u", r0);
		jpeg_abort_decompress(c);
		return -EBADMSG;
	}
	ret = read_rows(d, d->region, stride, r1 - r0);
	if (ret)
		return ret;
	if (!check_rest && !jpeg_has_multiple_scans(c) &&
	    !has_eoi(buf, d->len, data_start)) {
		set_error(d, DLC_ERR_TRUNCATED, -EBADMSG,
			  "truncated JPEG: no EOI marker after the image data (%zu bytes)",
			  d->len);
		jpeg_abort_decompress(c);
		return -EBADMSG;
	}

	ret = resize_planned(d, &p, xoff, cw, r0, r1 - r0, stride, layout,
			     dst);
	if (ret || !check_rest) {
		/* unchecked: the rows below the crop are never decoded */
		jpeg_abort_decompress(c);
		return ret;
	}
	return read_rest(d, stride);
}

/*
 * Decode the whole image at the scale set into d->region, read to EOI.
 * Runs under the caller's setjmp. *@stride: bytes a row.
 */
static int decode_whole(struct dlc_decoder *d, size_t *stride)
{
	struct jpeg_decompress_struct *c = &d->cinfo;
	size_t bytes;
	int ret;

	jpeg_start_decompress(c);
	*stride = (size_t)c->output_width * 3;
	bytes = *stride * c->output_height;
	if (grow(d, &d->region, &d->region_cap, bytes))
		return no_memory(d, bytes);
	ret = read_rows(d, d->region, *stride, c->output_height);
	if (ret)
		return ret;
	jpeg_finish_decompress(c);
	return 0;
}

/* The reference: everything at scale 1, then the same resize. */
static int decode_full_then_crop(struct dlc_decoder *d, uint32_t out_w,
				 uint32_t out_h, uint32_t layout, uint8_t *dst)
{
	struct jpeg_decompress_struct *c = &d->cinfo;
	size_t stride;
	struct plan p;
	int ret;

	ret = decode_whole(d, &stride);
	if (ret)
		return ret;
	plan_at(d, 1, c->output_width, c->output_height, out_w, out_h, &p);
	return resize_planned(d, &p, 0, c->output_width, 0, c->output_height,
			      stride, layout, dst);
}

static int crop_inside(const struct dlc_crop *cr, uint32_t w, uint32_t h)
{
	const double slack = 1e-6;

	return isfinite(cr->x) && isfinite(cr->y) && isfinite(cr->w) &&
	       isfinite(cr->h) && cr->w > 0 && cr->h > 0 &&
	       cr->x >= -slack && cr->y >= -slack &&
	       cr->x + cr->w <= w + slack && cr->y + cr->h <= h + slack;
}

/*
 * d->crop (and the eval geometry) for an image of @w x @h: drawn by @t
 * when it is set, else @given, checked.
 */
static int setup_crop(struct dlc_decoder *d, const struct dlc_transform *t,
		      uint64_t seed, uint32_t epoch, uint32_t sample,
		      const struct dlc_crop *given, uint32_t w, uint32_t h)
{
	int ret;

	d->eval = 0;
	d->exact = 0;
	d->img_w = w;
	d->img_h = h;
	if (t) {
		ret = dlc_transform_crop(t, seed, epoch, sample, w, h,
					 &d->crop);
		if (ret)
			return set_error(d, DLC_ERR_NONE, ret,
					 "invalid argument: bad transform");
		d->exact = !!(t->flags & DLC_TRANSFORM_F_EXACT);
		d->eval = t->kind == DLC_TRANSFORM_EVAL;
		if (d->eval)
			dlc_eval_geometry(t, w, h, &d->full_w, &d->full_h,
					  &d->win_x, &d->win_y);
		return 0;
	}
	d->crop = *given;
	if (!crop_inside(&d->crop, w, h))
		return set_error(d, DLC_ERR_NONE, -EINVAL,
				 "invalid argument: crop box outside the %ux%u image",
				 w, h);
	return 0;
}

/* The message of a failed resize, when nothing said more. */
static int resize_failed(struct dlc_decoder *d, int ret, uint32_t out_w,
			 uint32_t out_h)
{
	if (ret == -ENOMEM && d->kind == DLC_ERR_NONE)
		set_error(d, DLC_ERR_NOMEM, -ENOMEM,
			  "out of memory: resize scratch");
	else if (ret && !d->msg[0])
		set_error(d, DLC_ERR_NONE, ret,
			  "resize of the %ux%u image's crop (%.1f,%.1f %.1fx%.1f) to %ux%u failed",
			  d->img_w, d->img_h, d->crop.x, d->crop.y,
			  d->crop.w, d->crop.h, out_w, out_h);
	return ret;
}

static int out_ok(const uint8_t *dst, uint32_t out_w, uint32_t out_h,
		  uint32_t layout, uint32_t method)
{
	return dst && layout <= DLC_LAYOUT_NHWC &&
	       method <= DLC_DECODE_CROP_FIRST_UNCHECKED && out_w && out_h &&
	       out_w <= DLC_MAX_OUT_SIDE && out_h <= DLC_MAX_OUT_SIDE;
}

/* sample_call() of a non-JPEG: decoded whole, then cropped and resized. */
static int image_sample(struct dlc_decoder *d, const void *buf, size_t len,
			const struct dlc_transform *t, uint64_t seed,
			uint32_t epoch, uint32_t sample,
			const struct dlc_crop *given, uint32_t out_w,
			uint32_t out_h, uint32_t layout, uint8_t *dst,
			struct dlc_crop *crop_out)
{
	uint32_t w, h;
	struct plan p;
	int ret;

	ret = decode_image(d, buf, len, &w, &h);
	if (ret)
		return ret;
	ret = setup_crop(d, t, seed, epoch, sample, given, w, h);
	if (ret)
		return ret;
	if (crop_out)
		*crop_out = d->crop;
	plan_at(d, 1, w, h, out_w, out_h, &p);
	return resize_planned(d, &p, 0, w, 0, h, (size_t)w * 3, layout, dst);
}

/* dlc_decoder_sample() when @t is set, else dlc_decoder_crop() of @given. */
static int sample_call(struct dlc_decoder *d, const void *buf, size_t len,
			 const struct dlc_transform *t, uint64_t seed,
			 uint32_t epoch, uint32_t sample,
			 const struct dlc_crop *given, uint32_t out_w,
			 uint32_t out_h, uint32_t layout, uint32_t method,
			 uint8_t *dst, struct dlc_crop *crop_out)
{
	struct jpeg_decompress_struct *c = &d->cinfo;
	int ret;

	if (!out_ok(dst, out_w, out_h, layout, method))
		return set_error(d, DLC_ERR_NONE, -EINVAL,
				 "invalid argument: output, layout or method");
	if (other_format(buf, len))
		return resize_failed(d, image_sample(d, buf, len, t, seed,
						     epoch, sample, given,
						     out_w, out_h, layout,
						     dst, crop_out),
				     out_w, out_h);
	ret = begin(d, buf, len);
	if (ret)
		return ret;
	if (setjmp(d->jb))
		return recover(d);
	ret = read_header(d);
	if (ret)
		return ret;
	ret = setup_crop(d, t, seed, epoch, sample, given, c->image_width,
			 c->image_height);
	if (ret) {
		jpeg_abort_decompress(c);
		return ret;
	}
	if (crop_out)
		*crop_out = d->crop;
	if (method == DLC_DECODE_FULL_THEN_CROP)
		ret = decode_full_then_crop(d, out_w, out_h, layout, dst);
	else
		ret = decode_crop_first(d, buf, out_w, out_h, layout,
					method == DLC_DECODE_CROP_FIRST, dst);
	return resize_failed(d, ret, out_w, out_h);
}

static int decode_sample(struct dlc_decoder *d, const void *buf, size_t len,
			 const struct dlc_transform *t, uint64_t seed,
			 uint32_t epoch, uint32_t sample,
			 const struct dlc_crop *given, uint32_t out_w,
			 uint32_t out_h, uint32_t layout, uint32_t method,
			 uint8_t *dst, struct dlc_crop *crop_out)
{
	start_call(d);
	return scratch_settle(d, sample_call(d, buf, len, t, seed, epoch,
					     sample, given, out_w, out_h,
					     layout, method, dst, crop_out));
}

int dlc_decoder_sample_method(struct dlc_decoder *d, const void *buf,
			      size_t len, const struct dlc_transform *t,
			      uint64_t seed, uint32_t epoch, uint32_t sample,
			      uint32_t layout, uint32_t method, uint8_t *dst,
			      struct dlc_crop *crop_out)
{
	if (!d || !t)
		return -EINVAL;
	return decode_sample(d, buf, len, t, seed, epoch, sample, NULL,
			     t->out_w, t->out_h, layout, method, dst, crop_out);
}

int dlc_decoder_sample(struct dlc_decoder *d, const void *buf, size_t len,
		       const struct dlc_transform *t, uint64_t seed,
		       uint32_t epoch, uint32_t sample, uint32_t layout,
		       uint8_t *dst, struct dlc_crop *crop_out)
{
	return dlc_decoder_sample_method(d, buf, len, t, seed, epoch, sample,
					 layout, DLC_DECODE_CROP_FIRST, dst,
					 crop_out);
}

/*
 * dlc_decoder_sample_rgb(): the plan of a scale-1 decode of the whole
 * image (decode_full_then_crop()'s), over pixels decoded before.
 */
static int rgb_call(struct dlc_decoder *d, const uint8_t *rgb, uint32_t w,
		    uint32_t h, const struct dlc_transform *t, uint64_t seed,
		    uint32_t epoch, uint32_t sample, uint32_t layout,
		    uint8_t *dst, struct dlc_crop *crop_out)
{
	const uint8_t *src;
	struct plan p;
	int ret;

	if (!rgb || !w || !h || (uint64_t)w * h > d->max_pixels ||
	    !out_ok(dst, t->out_w, t->out_h, layout, DLC_DECODE_CROP_FIRST))
		return set_error(d, DLC_ERR_NONE, -EINVAL,
				 "invalid argument: image, output or layout");
	ret = setup_crop(d, t, seed, epoch, sample, NULL, w, h);
	if (ret)
		return ret;
	if (crop_out)
		*crop_out = d->crop;
	plan_at(d, 1, w, h, t->out_w, t->out_h, &p);
	src = plan_buffer(&p, rgb, 0, w, 0, h, (size_t)w * 3);
	return resize_failed(d, dlc_resize_geom(&d->ws, src, &p.g, layout, dst,
						DLC_RESIZE_BEST),
			     t->out_w, t->out_h);
}

int dlc_decoder_sample_rgb(struct dlc_decoder *d, const uint8_t *rgb,
			   uint32_t width, uint32_t height,
			   const struct dlc_transform *t, uint64_t seed,
			   uint32_t epoch, uint32_t sample, uint32_t layout,
			   uint8_t *dst, struct dlc_crop *crop_out)
{
	if (!d || !t)
		return -EINVAL;
	start_call(d);
	return scratch_settle(d, rgb_call(d, rgb, width, height, t, seed,
					  epoch, sample, layout, dst,
					  crop_out));
}

int dlc_decoder_crop(struct dlc_decoder *d, const void *buf, size_t len,
		     const struct dlc_crop *crop, uint32_t out_w,
		     uint32_t out_h, uint32_t layout, uint32_t method,
		     uint8_t *dst)
{
	if (!d || !crop)
		return -EINVAL;
	return decode_sample(d, buf, len, NULL, 0, 0, 0, crop, out_w, out_h,
			     layout, method, dst, NULL);
}

/* ---- MCU-exact decode of a restart-indexed JPEG ---- */

/*
 * Splice the MCUs under the decoded pixels [c0, c1) x [r0, r1) of the plan
 * at 1/@den, plus one MCU on each side (the chroma upsampling of the
 * splice's edges stays out of what is used), into d->splice. Returns its
 * length, the corner in *@ox, *@oy (full-resolution pixels).
 */
static ssize_t splice_plan(struct dlc_decoder *d, const uint8_t *buf,
			   size_t len, const struct dlc_rst_geom *g,
			   const uint32_t *rows, const struct plan *p,
			   uint32_t den, uint32_t *ox, uint32_t *oy)
{
	uint32_t x1 = p->c1 * den < g->width ? p->c1 * den : g->width;
	uint32_t y1 = p->r1 * den < g->height ? p->r1 * den : g->height;
	uint32_t mx0 = p->c0 * den / g->mcu_w, my0 = p->r0 * den / g->mcu_h;
	uint32_t mx1 = (x1 + g->mcu_w - 1) / g->mcu_w;
	uint32_t my1 = (y1 + g->mcu_h - 1) / g->mcu_h;
	const char *why = "bad geometry";
	size_t bound;
	ssize_t n;

	mx0 = mx0 ? mx0 - 1 : 0;
	my0 = my0 ? my0 - 1 : 0;
	mx1 = mx1 + 1 < g->mcus_x ? mx1 + 1 : g->mcus_x;
	my1 = my1 + 1 < g->mcus_y ? my1 + 1 : g->mcus_y;
	bound = dlc_rst_splice_bound(g, rows, my0, my1);
	if (!bound)
		return set_error(d, DLC_ERR_CORRUPT, -EBADMSG,
				 "corrupt restart-indexed JPEG: MCU rows %u..%u outside its geometry",
				 my0, my1);
	if (grow(d, &d->splice, &d->splice_cap, bound))
		return set_error(d, DLC_ERR_NOMEM, -ENOMEM,
				 "out of memory: %zu bytes of splice", bound);
	n = dlc_rst_splice(buf, len, g, rows, mx0, my0, mx1, my1, d->splice,
			   d->splice_cap, ox, oy, &why);
	if (n < 0)
		return set_error(d, DLC_ERR_CORRUPT,
				 n == -ENOMEM ? -ENOMEM : -EBADMSG,
				 "corrupt restart-indexed JPEG: %s (MCUs %u..%u x %u..%u, %zu bytes)",
				 n == -ENOSPC ? "the splice outgrows its bound" :
				 why, mx0, mx1, my0, my1, len);
	return n;
}

/* Decode the splice whole at 1/@den into d->region; resize as planned. */
static int decode_splice(struct dlc_decoder *d, size_t n, struct plan *p,
			 uint32_t den, uint32_t ox, uint32_t oy,
			 uint32_t layout, uint8_t *dst)
{
	struct jpeg_decompress_struct *c = &d->cinfo;
	size_t stride;
	int ret;

	ret = begin(d, d->splice, n);
	if (ret)
		return ret;
	if (setjmp(d->jb))
		return recover(d);
	ret = read_header(d);
	if (ret)
		return ret;
	c->scale_num = 1;
	c->scale_denom = den;
	ret = decode_whole(d, &stride);
	if (ret)
		return ret;
	return resize_planned(d, p, ox / den, c->output_width, oy / den,
			      c->output_height, stride, layout, dst);
}

static int rst_call(struct dlc_decoder *d, const void *buf, size_t len,
		      const struct dlc_rst_geom *g, const uint32_t *rows,
		      const struct dlc_transform *t, uint64_t seed,
		      uint32_t epoch, uint32_t sample,
		      const struct dlc_crop *given, uint32_t out_w,
		      uint32_t out_h, uint32_t layout, uint8_t *dst,
		      struct dlc_crop *crop_out)
{
	uint32_t den, ox = 0, oy = 0;
	struct plan p;
	ssize_t n;
	int ret;

	d->kind = DLC_ERR_NONE;
	d->err = 0;
	d->msg[0] = '\0';
	if (!buf || !g || !rows ||
	    !out_ok(dst, out_w, out_h, layout, DLC_DECODE_CROP_FIRST))
		return set_error(d, DLC_ERR_NONE, -EINVAL,
				 "invalid argument: buffer, geometry, output or layout");
	if (!g->width || !g->height || !g->mcu_w || !g->mcu_h)
		return set_error(d, DLC_ERR_CORRUPT, -EBADMSG,
				 "corrupt restart-indexed JPEG: empty geometry");
	if ((uint64_t)g->width * g->height > d->max_pixels)
		return set_error(d, DLC_ERR_TOO_LARGE, -E2BIG,
				 "image too large: %ux%u is over the cap of %llu pixels",
				 g->width, g->height,
				 (unsigned long long)d->max_pixels);
	ret = setup_crop(d, t, seed, epoch, sample, given, g->width,
			 g->height);
	if (ret)
		return ret;
	if (crop_out)
		*crop_out = d->crop;
	/* the scale and plan of decode_crop_first(), for the whole image */
	den = d->exact ? 1 : pick_denom(&d->crop, out_w, out_h);
	plan_at(d, den, (g->width + den - 1) / den,
		(g->height + den - 1) / den, out_w, out_h, &p);
	n = splice_plan(d, buf, len, g, rows, &p, den, &ox, &oy);
	if (n < 0)
		return (int)n;
	ret = decode_splice(d, (size_t)n, &p, den, ox, oy, layout, dst);
	return resize_failed(d, ret, out_w, out_h);
}

static int decode_rst(struct dlc_decoder *d, const void *buf, size_t len,
		      const struct dlc_rst_geom *g, const uint32_t *rows,
		      const struct dlc_transform *t, uint64_t seed,
		      uint32_t epoch, uint32_t sample,
		      const struct dlc_crop *given, uint32_t out_w,
		      uint32_t out_h, uint32_t layout, uint8_t *dst,
		      struct dlc_crop *crop_out)
{
	start_call(d);
	return scratch_settle(d, rst_call(d, buf, len, g, rows, t, seed, epoch,
					  sample, given, out_w, out_h, layout,
					  dst, crop_out));
}

int dlc_decoder_sample_rst(struct dlc_decoder *d, const void *buf,
			   size_t len, const struct dlc_rst_geom *g,
			   const uint32_t *rows, const struct dlc_transform *t,
			   uint64_t seed, uint32_t epoch, uint32_t sample,
			   uint32_t layout, uint8_t *dst,
			   struct dlc_crop *crop_out)
{
	if (!d || !t)
		return -EINVAL;
	return decode_rst(d, buf, len, g, rows, t, seed, epoch, sample, NULL,
			  t->out_w, t->out_h, layout, dst, crop_out);
}

int dlc_decoder_crop_rst(struct dlc_decoder *d, const void *buf, size_t len,
			 const struct dlc_rst_geom *g, const uint32_t *rows,
			 const struct dlc_crop *crop, uint32_t out_w,
			 uint32_t out_h, uint32_t layout, uint8_t *dst)
{
	if (!d || !crop)
		return -EINVAL;
	return decode_rst(d, buf, len, g, rows, NULL, 0, 0, 0, crop, out_w,
			  out_h, layout, dst, NULL);
}
