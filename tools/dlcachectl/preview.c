// SPDX-License-Identifier: MIT
/*
 * dlcachectl preview: a contact sheet of one batch exactly as the model
 * gets it. It runs the real loader (order, crop, flip, resize, layout)
 * rather than re-implementing any of it, so what the sheet shows is what
 * a training step would have been fed: the way to see that augmentation,
 * labels and the tensor layout are right.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfgopts.h"
#include "cli.h"
#include "dlcache.h"

#define GAP	2	/* pixels between tiles */
#define GAP_GRAY 40	/* dark, so tiles' edges show */

static void help(void)
{
	printf("usage: dlcachectl preview INDEX|DIR -o GRID.png [options]\n"
	       "\n"
	       "Write a PNG contact sheet of one batch as the loader hands it to\n"
	       "the model, and print the batch's sample IDs and labels.\n"
	       "\n"
	       "  -o, --output FILE    the PNG to write (required)\n"
	       "  --epoch E            epoch number (default 0)\n"
	       "  --batch B            batch number within the epoch (default 0)\n"
	       "  --batch-size N       samples per batch (default 16)\n"
	       "  --size S             output side in pixels (default 224)\n"
	       "  --seed N             shuffle and augmentation seed (default 0)\n"
	       "  --layout nchw|nhwc   batch layout to read back (default nchw)\n"
	       "  --eval               Resize + CenterCrop, unshuffled, as bench --eval\n"
	       "  -v, --verbose        library log lines on stderr\n"
	       "  -h, --help           show this help\n");
}

/* Tile @k of the batch into the sheet, whatever the batch layout. */
static void draw_tile(uint8_t *sheet, size_t sheet_stride,
		      const struct dlc_batch *b, uint32_t k, uint32_t ox,
		      uint32_t oy)
{
	size_t plane = (size_t)b->out_w * b->out_h;
	const uint8_t *src = b->data + (size_t)k * plane * 3;
	uint32_t x, y;

	for (y = 0; y < b->out_h; y++) {
		uint8_t *d = sheet + (size_t)(oy + y) * sheet_stride +
			     (size_t)ox * 3;

		if (b->layout == DLC_LAYOUT_NHWC) {
			memcpy(d, src + (size_t)y * b->out_w * 3,
			       (size_t)b->out_w * 3);
			continue;
		}
		for (x = 0; x < b->out_w; x++) {
			size_t i = (size_t)y * b->out_w + x;

			d[x * 3 + 0] = src[i];
			d[x * 3 + 1] = src[plane + i];
			d[x * 3 + 2] = src[2 * plane + i];
		}
	}
}

/* libpng reports errors by longjmp; turn them into a message. */
static void png_fail(png_structp png, png_const_charp msg)
{
	char *buf = png_get_error_ptr(png);

	snprintf(buf, 256, "%s", msg);
	png_longjmp(png, 1);
}

static void png_warn(png_structp png, png_const_charp msg)
{
	(void)png;
	(void)msg;
}

/*
 * Write an 8-bit RGB PNG to a temporary name and rename it over @path, so
 * a viewer never sees a half-written sheet. Returns 0, or -1 with @why.
 */
static int write_png(const char *path, const uint8_t *rgb, uint32_t w,
		     uint32_t h, char *why, size_t why_len)
{
	char tmp[PATH_MAX], err[256] = "";
	png_structp png = NULL;
	png_infop info = NULL;
	FILE *volatile f = NULL;
	uint32_t y;
	int n;

	n = snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		snprintf(why, why_len, "%s", strerror(ENAMETOOLONG));
		return -1;
	}
	f = fopen(tmp, "wb");
	if (!f) {
		snprintf(why, why_len, "%s", strerror(errno));
		return -1;
	}
	png = png_create_write_struct(PNG_LIBPNG_VER_STRING, err, png_fail,
				      png_warn);
	if (png)
		info = png_create_info_struct(png);
	if (!png || !info) {
		snprintf(why, why_len, "%s", strerror(ENOMEM));
		goto fail;
	}
	if (setjmp(png_jmpbuf(png))) {
		snprintf(why, why_len, "png: %s", err);
		goto fail;
	}
	png_init_io(png, f);
	png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_write_info(png, info);
	for (y = 0; y < h; y++)
		png_write_row(png, rgb + (size_t)y * w * 3);
	png_write_end(png, info);
	png_destroy_write_struct(&png, &info);
	if (fflush(f) || ferror(f)) {
		snprintf(why, why_len, "%s", strerror(errno ? errno : EIO));
		fclose(f);
		unlink(tmp);
		return -1;
	}
	if (fclose(f)) {
		snprintf(why, why_len, "%s", strerror(errno));
		unlink(tmp);
		return -1;
	}
	if (rename(tmp, path)) {
		snprintf(why, why_len, "%s", strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
fail:
	png_destroy_write_struct(&png, &info);
	fclose(f);
	unlink(tmp);
	return -1;
}

/* What preview's command line asks for. */
struct preview_args {
	struct cfg_opts o;	/* the options that map onto dlc_config */
	const char *path;	/* INDEX|DIR */
	const char *out;	/* -o GRID.png */
	uint32_t epoch, batch;
};

/* The loader and the batch it gave, held until preview is done. */
struct preview_run {
	struct dlc_index *idx;
	struct dlc_loader *l;
	struct dlc_batch *b;
	/* the loader's start-up lines, dropped if a usage error follows */
	struct held_log held;
	size_t sheet_w, sheet_h;
};

/*
 * preview's own options and the shared ones it takes. --batch-size is its
 * own: a sheet of more than 1024 tiles is not a preview. Returns CMD_RUN,
 * or the exit status after --help or a usage error.
 */
static int preview_parse(int argc, char **argv, struct preview_args *a)
{
	static const struct option own[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "epoch", required_argument, NULL, 'e' },
		{ "batch", required_argument, NULL, 'B' },
		{ "batch-size", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct option opts[ARRAY_SIZE(own) + CFG_NR];
	struct dlc_config *cfg = &a->o.cfg;
	int opt, ret;

	memset(a, 0, sizeof(*a));
	cfg_opts_init(&a->o);
	cfg->batch_size = 16;
	cfg_opts_longopts(opts, own, CFG_OPT(CFG_SIZE) | CFG_OPT(CFG_SEED) |
			  CFG_OPT(CFG_LAYOUT) | CFG_OPT(CFG_EVAL) |
			  CFG_OPT(CFG_VERBOSE));
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":o:vh", opts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			if (!*optarg)
				return usage_error("preview", "--output is empty");
			a->out = optarg;
			break;
		case 'e':
			if (parse_u32(optarg, 0, UINT32_MAX, &a->epoch))
				return usage_error("preview", "--epoch: want 0..%u, got '%s'",
						   UINT32_MAX, optarg);
			break;
		case 'B':
			if (parse_u32(optarg, 0, UINT32_MAX, &a->batch))
				return usage_error("preview", "--batch: want a batch number, got '%s'",
						   optarg);
			break;
		case 'b':
			if (parse_u32(optarg, 1, 1024, &cfg->batch_size))
				return usage_error("preview", "--batch-size: want 1..1024, got '%s'",
						   optarg);
			break;
		case 'h':
			help();
			return 0;
		case ':':
			return usage_error("preview", "%s needs an argument",
					   argv[optind - 1]);
		default:
			ret = cfg_opt_parse("preview", opt, optarg, &a->o);
			if (ret < 0)
				return EXIT_USAGE;
			if (!ret)
				return usage_error("preview", "unknown option '%s' (try --help)",
						   argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return usage_error("preview", "want exactly one INDEX file or data set DIR (try --help)");
	if (!a->out)
		return usage_error("preview", "missing -o GRID.png (try --help)");
	if (cfg_opts_check("preview", &a->o))
		return EXIT_USAGE;
	/* The sheet is width * height * 3 bytes; keep it far from overflow. */
	if ((uint64_t)a->o.size * a->o.size * cfg->batch_size > (1ULL << 31))
		return usage_error("preview", "--size %u with --batch-size %u makes a sheet over 2 GiB",
				   a->o.size, cfg->batch_size);
	a->path = argv[optind];
	return CMD_RUN;
}

/*
 * Start the loader on r->idx and take batch a->batch of epoch a->epoch
 * into r->b. Returns 0, or 1 or EXIT_USAGE after the line saying why.
 */
static int preview_run(struct preview_args *a, struct preview_run *r)
{
	struct dlc_config *cfg = &a->o.cfg;
	struct dlc_error_info ei;
	uint32_t nb;
	int ret;

	/* The same transform set-up as bench, so the sheet shows its input. */
	cfg_opts_transform(&a->o);
	cfg->log = held_log_fn;
	cfg->log_arg = &r->held;
	/* One batch is read once: a cache would only cost memory. */
	cfg->cache_bytes = 0;

	ret = dlc_loader_create(cfg, r->idx, &r->l);
	if (ret) {
		held_log_release(&r->held, 1);
		return fail("preview", "%s: cannot start the loader: %s",
			    a->path, strerror(-ret));
	}
	nb = dlc_loader_epoch_batches(r->l);
	/* A usage error: one line, without the loader's start-up warnings. */
	if (a->batch >= nb)
		return usage_error("preview", "--batch %u: the epoch has %u batches of %u",
				   a->batch, nb, cfg->batch_size);
	held_log_release(&r->held, 1);
	ret = dlc_loader_start_epoch(r->l, a->epoch, a->batch * cfg->batch_size);
	if (ret)
		return fail("preview", "%s: cannot start epoch %u at batch %u: %s",
			    a->path, a->epoch, a->batch, strerror(-ret));
	ret = dlc_next_batch(r->l, &r->b);
	if (ret) {
		if (ret != -ENODATA && !dlc_loader_last_error(r->l, &ei))
			return fail("preview", "%s: %s", ei.path, ei.msg);
		return fail("preview", "%s: batch %u of epoch %u: %s",
			    a->path, a->batch, a->epoch, strerror(-ret));
	}
	if (!r->b->count)
		return fail("preview", "%s: batch %u of epoch %u: every sample failed",
			    a->path, a->batch, a->epoch);
	return 0;
}

/*
 * Batch r->b as a near-square sheet of tiles in a->out (its size into
 * r->sheet_w, r->sheet_h). Returns 0, or 1 after the line saying why.
 */
static int preview_sheet(const struct preview_args *a, struct preview_run *r)
{
	const struct dlc_batch *b = r->b;
	uint32_t cols, rows, k;
	uint8_t *sheet;
	char why[320];
	int ret;

	for (cols = 1; cols * cols < b->count; cols++)
		;
	rows = (b->count + cols - 1) / cols;
	r->sheet_w = (size_t)cols * b->out_w + (size_t)(cols - 1) * GAP;
	r->sheet_h = (size_t)rows * b->out_h + (size_t)(rows - 1) * GAP;
	sheet = malloc(r->sheet_w * r->sheet_h * 3);
	if (!sheet)
		return fail("preview", "%s: %s", a->out, strerror(ENOMEM));
	memset(sheet, GAP_GRAY, r->sheet_w * r->sheet_h * 3);
	for (k = 0; k < b->count; k++)
		draw_tile(sheet, r->sheet_w * 3, b, k,
			  (k % cols) * (b->out_w + GAP),
			  (k / cols) * (b->out_h + GAP));
	ret = write_png(a->out, sheet, (uint32_t)r->sheet_w,
			(uint32_t)r->sheet_h, why, sizeof(why));
	free(sheet);
	if (ret)
		return fail("preview", "%s: %s", a->out, why);
	return 0;
}

/* What the sheet shows: the batch, then each tile's sample. */
static void preview_report(const struct preview_args *a,
			   const struct preview_run *r)
{
	const struct dlc_batch *b = r->b;
	const struct dlc_config *cfg = &a->o.cfg;
	uint32_t k;

	printf("epoch %u batch %u (seq %llu): %u samples, %ux%u %s, seed %llu%s -> %s (%zux%zu)\n",
	       b->epoch, a->batch, (unsigned long long)b->seq, b->count,
	       b->out_w, b->out_h,
	       b->layout == DLC_LAYOUT_NHWC ? "NHWC" : "NCHW",
	       (unsigned long long)cfg->seed, a->o.eval ? ", eval" : "",
	       a->out, r->sheet_w, r->sheet_h);
	if (b->errors)
		printf("%u samples failed and were %s\n", b->errors,
		       cfg->on_error == DLC_ON_ERROR_SUBSTITUTE ? "substituted"
								: "skipped");
	printf("data set %s; tiles left to right, top to bottom:\n",
	       dlc_index_root(r->idx));
	printf("%-5s %-8s %-6s %-12s %s\n", "tile", "id", "label", "class",
	       "path");
	for (k = 0; k < b->count; k++) {
		const char *cls = dlc_index_class_name(r->idx,
						       (uint32_t)b->labels[k]);
		const char *rel = dlc_index_relpath(r->idx, b->ids[k]);

		printf("%-5u %-8u %-6d %-12s %s\n", k, b->ids[k], b->labels[k],
		       cls ? cls : "?", rel ? rel : "?");
	}
}

int cmd_preview(int argc, char **argv)
{
	struct preview_run r = { .held = HELD_LOG_INIT };
	struct preview_args a;
	int ret, rc;

	rc = preview_parse(argc, argv, &a);
	if (rc != CMD_RUN)
		return rc;
	ret = open_index(a.path, &r.idx);
	if (ret)
		return fail("preview", "%s: %s", a.path, index_error(ret));

	rc = preview_run(&a, &r);
	if (!rc)
		rc = preview_sheet(&a, &r);
	if (!rc)
		preview_report(&a, &r);
	if (r.b && dlc_release_batch(r.l, r.b))
		rc = 1;
	dlc_loader_destroy(r.l);
	held_log_release(&r.held, rc != EXIT_USAGE);
	dlc_index_free(r.idx);
	return rc;
}
