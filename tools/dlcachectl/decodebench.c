// SPDX-License-Identifier: MIT
/*
 * dlcachectl decodebench: the decode limit of Documentation/design.md,
 * "Performance model". The files are read into memory first, so only
 * decoding is timed: full decode, crop-first decode of epoch 0's train
 * crops (the loader's work: checked, reading the whole file, and
 * unchecked, stopping after the crop), and the full-decode-then-crop
 * reference, each on T threads; on a pack, also the MCU-exact decode of
 * its restart-indexed samples.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "decode.h"
#include "dlcache.h"
#include "internal.h"
#include "jpegrst.h"
#include "source.h"

static const char decodebench_usage[] =
	"usage: dlcachectl decodebench INDEX_FILE_OR_DIR [--threads T] [--images N]\n"
	"                              [--seconds S] [--json]\n"
	"\n"
	"Load the data set's files into memory, then decode them over and over\n"
	"on T threads for about S seconds per mode, the modes taking turns in\n"
	"three rounds (the median round counts): 'full' (whole image to RGB),\n"
	"'crop' (crop-first decode of the default train transform's epoch-0\n"
	"crops, seed 0, checking the rest of the file as dlc_decoder_sample()\n"
	"does), 'crop_unchecked' (the same, stopping after the crop's rows, as\n"
	"the loader's validate=once does after a sample's first decode),\n"
	"'full_then_crop' (full decode, then the same crop and resize) and\n"
	"'crop_exact' (checked crop-first at DCT scale 1: DLC_TRANSFORM_F_EXACT,\n"
	"torchvision's pixels) and, when INDEX is a pack (.dlp), 'mcu' (the\n"
	"loader's decode of a pack: only the MCUs under the crop, for samples\n"
	"the pack restart-indexed; crop_unchecked for the others). Prints\n"
	"images/s, crop/full, crop/crop_unchecked, crop_exact/crop and\n"
	"mcu/crop_unchecked.\n"
	"\n"
	"  --threads T    decode threads (default: online CPUs)\n"
	"  --images N     use only the first N samples (default: all)\n"
	"  --seconds S    seconds per mode (default 3)\n"
	"  --json         one JSON object on stdout\n"
	"  -h, --help     show this help\n";

enum mode {
	MODE_FULL, MODE_CROP, MODE_CROP_UNCHECKED, MODE_FULL_THEN_CROP,
	MODE_CROP_EXACT, MODE_MCU, MODES
};

static const char *const mode_names[MODES] = {
	"full", "crop", "crop_unchecked", "full_then_crop", "crop_exact", "mcu",
};

struct image {
	struct dlc_buf *bytes;	/* read through the data set's source */
	const uint8_t *buf;
	size_t len;
	uint32_t id;
	struct dlc_crop crop;	/* epoch 0's train crop, for full_then_crop */
	uint32_t *rows;		/* a pack's restart-indexed sample: its rows */
	struct dlc_rst_geom g;	/* and geometry */
};

struct run {
	const struct image *imgs;
	uint32_t n;
	enum mode mode;
	uint64_t deadline;
	struct dlc_transform t;
	struct dlc_transform t_exact;	/* t with DLC_TRANSFORM_F_EXACT */
};

struct worker {
	pthread_t th;
	const struct run *run;
	uint32_t first;
	uint64_t done;
	uint64_t errors;
	uint64_t end_ns;
	uint64_t cpu_ns;	/* the thread's CPU time */
	int err;
	char why[256];
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	const struct run *r = w->run;
	struct dlc_decoder *d;
	uint8_t *dst, *rgb;
	uint32_t i = w->first, iw, ih;
	size_t out = (size_t)r->t.out_w * r->t.out_h * 3;
	int ret;

	w->err = dlc_decoder_create(0, &d);
	if (w->err)
		return NULL;
	dst = malloc(out);
	if (!dst) {
		w->err = -ENOMEM;
		dlc_decoder_destroy(d);
		return NULL;
	}
	w->cpu_ns = thread_cpu_ns();
	while (now_ns() < r->deadline) {
		const struct image *img = &r->imgs[i];

		switch (r->mode) {
		case MODE_FULL:
			ret = dlc_decoder_full(d, img->buf, img->len, &rgb,
					       &iw, &ih);
			if (!ret)
				free(rgb);
			break;
		case MODE_MCU:
			if (img->rows) {
				ret = dlc_decoder_sample_rst(d, img->buf,
						img->len, &img->g, img->rows,
						&r->t, 0, 0, img->id,
						DLC_LAYOUT_NCHW, dst, NULL);
				break;
			}
			/* decoded as the loader would */
			/* fall through */
		case MODE_CROP:
		case MODE_CROP_UNCHECKED:
			ret = dlc_decoder_sample_method(d, img->buf, img->len,
					&r->t, 0, 0, img->id, DLC_LAYOUT_NCHW,
					r->mode == MODE_CROP ? DLC_DECODE_CROP_FIRST :
					DLC_DECODE_CROP_FIRST_UNCHECKED, dst,
					NULL);
			break;
		case MODE_CROP_EXACT:
			ret = dlc_decoder_sample(d, img->buf, img->len,
						 &r->t_exact, 0, 0, img->id,
						 DLC_LAYOUT_NCHW, dst, NULL);
			break;
		default:
			ret = dlc_decoder_crop(d, img->buf, img->len,
					       &img->crop, r->t.out_w,
					       r->t.out_h, DLC_LAYOUT_NCHW,
					       DLC_DECODE_FULL_THEN_CROP, dst);
			break;
		}
		if (ret && !w->errors++)
			snprintf(w->why, sizeof(w->why), "sample %u: %s",
				 img->id, dlc_decoder_error(d));
		w->done++;
		if (++i == r->n)
			i = 0;
	}
	w->end_ns = now_ns();
	w->cpu_ns = thread_cpu_ns() - w->cpu_ns;
	free(dst);
	dlc_decoder_destroy(d);
	return NULL;
}

/*
 * Images per second of one mode on @nthreads threads, and per second of
 * the threads' CPU time (steadier on a shared machine), or -errno.
 */
static int run_mode(struct run *r, struct worker *ws, uint32_t nthreads,
		    double seconds, double *rate, double *cpu_rate,
		    uint64_t *errors, char *why, size_t why_len)
{
	uint64_t start = now_ns(), end = start, done = 0, cpu = 0;
	uint32_t t, started;
	int err = 0;

	r->deadline = start + (uint64_t)(seconds * 1e9);
	*errors = 0;
	for (started = 0; started < nthreads; started++) {
		memset(&ws[started], 0, sizeof(ws[started]));
		ws[started].run = r;
		ws[started].first = (uint32_t)((uint64_t)started * r->n / nthreads);
		err = -pthread_create(&ws[started].th, NULL, worker_main,
				      &ws[started]);
		if (err)
			break;
	}
	for (t = 0; t < started; t++) {
		pthread_join(ws[t].th, NULL);
		if (ws[t].err && !err)
			err = ws[t].err;
		done += ws[t].done;
		if (ws[t].errors && !*errors)
			snprintf(why, why_len, "%s", ws[t].why);
		*errors += ws[t].errors;
		if (ws[t].end_ns > end)
			end = ws[t].end_ns;
		cpu += ws[t].cpu_ns;
	}
	if (err)
		return err;
	*rate = end > start ? done / ((end - start) / 1e9) : 0.0;
	*cpu_rate = cpu ? done / (cpu / 1e9) : 0.0;
	return 0;
}

#define ROUNDS 3

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double ratio(const double *r, int a, int b)
{
	return r[b] > 0 ? r[a] / r[b] : 0.0;
}

/* What decodebench's command line asks for. */
struct decodebench_args {
	const char *path;	/* INDEX_FILE_OR_DIR */
	uint32_t nthreads;	/* 0: the online CPUs */
	uint32_t nimages;	/* 0: every sample */
	double seconds;		/* per mode, all rounds together */
	int json;
};

/* The data set in memory, the threads that decode it, and their rates. */
struct decodebench_run {
	struct dlc_index *idx;
	struct dlc_decoder *hdr;	/* reads headers, for the crop boxes */
	struct dlc_source *src;
	struct worker *ws;
	struct image *imgs;
	uint32_t n;		/* images loaded (imgs has room for n) */
	uint32_t nrst;		/* of which a pack restart-indexed */
	uint64_t bytes;
	struct run r;
	double rate[MODES];	/* each mode's median round */
	double cpu_rate[MODES];
};

/*
 * decodebench's options. Returns CMD_RUN, or the exit status after
 * --help or a usage error.
 */
static int decodebench_parse(int argc, char **argv,
			     struct decodebench_args *a)
{
	uint32_t seconds_u = 0;
	int opts = 1, i_arg;

	memset(a, 0, sizeof(*a));
	a->seconds = 3.0;
	for (i_arg = 1; i_arg < argc; i_arg++) {
		const char *s = argv[i_arg];
		const char *v = i_arg + 1 < argc ? argv[i_arg + 1] : NULL;

		if (opts && (!strcmp(s, "-h") || !strcmp(s, "--help"))) {
			fputs(decodebench_usage, stdout);
			return 0;
		} else if (opts && !strcmp(s, "--threads")) {
			if (!v || parse_u32(v, 1, 1024, &a->nthreads))
				return usage_error("decodebench",
						   "--threads needs a number in 1..1024");
			i_arg++;
		} else if (opts && !strcmp(s, "--images")) {
			if (!v || parse_u32(v, 1, UINT32_MAX, &a->nimages))
				return usage_error("decodebench",
						   "--images needs a positive number");
			i_arg++;
		} else if (opts && !strcmp(s, "--seconds")) {
			if (!v || parse_u32(v, 1, 3600, &seconds_u))
				return usage_error("decodebench",
						   "--seconds needs a number in 1..3600");
			a->seconds = seconds_u;
			i_arg++;
		} else if (opts && !strcmp(s, "--json")) {
			a->json = 1;
		} else if (opts && !strcmp(s, "--")) {
			opts = 0;
		} else if (opts && s[0] == '-' && s[1]) {
			return usage_error("decodebench", "unknown option '%s'", s);
		} else if (!a->path) {
			a->path = s;
		} else {
			return usage_error("decodebench", "unexpected argument '%s'", s);
		}
	}
	if (!a->path || !*a->path)
		return usage_error("decodebench",
				   "missing INDEX_FILE_OR_DIR (try --help)");
	if (!a->nthreads) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		a->nthreads = cpus > 0 ? (uint32_t)cpus : 1;
	}
	return CMD_RUN;
}

/*
 * Sample @i's bytes into d->imgs[i], with its rows when the pack
 * restart-indexed it, and epoch 0's crop box for full_then_crop.
 * Returns 0, or 1 after the line saying why.
 */
static int decodebench_load(struct decodebench_run *d, uint32_t i)
{
	struct image *img = &d->imgs[i];
	uint32_t rows[DLC_RST_MAX_ROWS + 1];
	struct dlc_jpeg_info info;
	int ret;

	ret = dlc_source_read(d->src, i, 0, &img->bytes);
	if (ret) {
		char name[4096];

		dlc_source_name(d->src, i, name, sizeof(name));
		return fail("decodebench", "%s: %s", name, strerror(-ret));
	}
	img->buf = img->bytes->data;
	img->len = img->bytes->len;
	img->id = i;
	if (dlc_source_rst(d->src, i, &img->g, rows)) {
		size_t sz = sizeof(*rows) * (img->g.mcus_y + 1);

		img->rows = malloc(sz);
		if (!img->rows)
			return fail("decodebench", "%s", strerror(ENOMEM));
		memcpy(img->rows, rows, sz);
		d->nrst++;
	}
	d->bytes += img->len;
	/* a box for the reference mode; unreadable files fail there too */
	img->crop.w = img->crop.h = 1;
	if (!dlc_decoder_header(d->hdr, img->buf, img->len, &info))
		dlc_transform_crop(&d->r.t, 0, 0, i, info.width, info.height,
				   &img->crop);
	return 0;
}

/*
 * Every mode, ROUNDS times in turn, into d->rate and d->cpu_rate (the
 * median rounds). Returns 0, or 1 after the line saying why.
 */
static int decodebench_measure(const struct decodebench_args *a,
			       struct decodebench_run *d)
{
	double rounds[MODES][ROUNDS], cpu_rounds[MODES][ROUNDS];
	uint32_t m, k;
	int ret;

	/*
	 * The modes take turns, ROUNDS times, and each reports its median
	 * round: on a shared machine, load that comes and goes then hits
	 * every mode alike instead of whichever ran at the time.
	 */
	for (k = 0; k < ROUNDS; k++)
		for (m = 0; m < MODES; m++) {
			uint64_t errors;
			char why[256] = "";

			d->r.mode = (enum mode)m;
			if (m == MODE_MCU && !dlc_source_pack(d->src)) {
				rounds[m][k] = cpu_rounds[m][k] = 0;
				continue;
			}
			ret = run_mode(&d->r, d->ws, a->nthreads,
				       a->seconds / ROUNDS, &rounds[m][k],
				       &cpu_rounds[m][k], &errors, why,
				       sizeof(why));
			if (ret)
				return fail("decodebench", "%s: %s",
					    mode_names[m], strerror(-ret));
			if (errors && k == 0)
				fprintf(stderr, "dlcachectl decodebench: %s: %llu failed decodes, first %s\n",
					mode_names[m], (unsigned long long)errors, why);
		}
	for (m = 0; m < MODES; m++) {
		qsort(rounds[m], ROUNDS, sizeof(double), cmp_double);
		qsort(cpu_rounds[m], ROUNDS, sizeof(double), cmp_double);
		d->rate[m] = rounds[m][ROUNDS / 2];
		d->cpu_rate[m] = cpu_rounds[m][ROUNDS / 2];
	}
	return 0;
}

/*
 * Load the first n samples into memory and time each mode on them.
 * Returns 0, or 1 after the line saying why.
 */
static int decodebench_run(const struct decodebench_args *a,
			   struct decodebench_run *d)
{
	uint32_t i;
	int ret;

	d->n = dlc_index_count(d->idx);
	if (a->nimages && a->nimages < d->n)
		d->n = a->nimages;
	d->imgs = calloc(d->n, sizeof(*d->imgs));
	d->ws = calloc(a->nthreads, sizeof(*d->ws));
	ret = dlc_decoder_create(0, &d->hdr);
	if (!ret)
		ret = dlc_source_open(d->idx, 0, &d->src);
	if (!d->imgs || !d->ws || ret)
		return fail("decodebench", "%s",
			    strerror(ret ? -ret : ENOMEM));
	memset(&d->r, 0, sizeof(d->r));
	dlc_transform_default(&d->r.t, DLC_TRANSFORM_TRAIN);
	d->r.t_exact = d->r.t;
	d->r.t_exact.flags = DLC_TRANSFORM_F_EXACT;
	for (i = 0; i < d->n; i++)
		if (decodebench_load(d, i))
			return 1;
	d->r.imgs = d->imgs;
	d->r.n = d->n;

	if (!a->json)
		printf("decodebench: %u images (%u restart-indexed), %.1f MB in memory, %u threads, %.0f s per mode\n",
		       d->n, d->nrst, d->bytes / 1e6, a->nthreads, a->seconds);
	return decodebench_measure(a, d);
}

/* Each mode's rate and the ratios between them; --json's object. */
static void decodebench_report(const struct decodebench_args *a,
			       const struct decodebench_run *d)
{
	const double *rate = d->rate, *cpu_rate = d->cpu_rate;
	uint32_t m;

	for (m = 0; m < MODES; m++)
		if (!a->json && (m != MODE_MCU || dlc_source_pack(d->src)))
			printf("  %-15s %9.1f images/s  (%.1f per thread, %.1f per CPU-second)\n",
			       mode_names[m], rate[m], rate[m] / a->nthreads,
			       cpu_rate[m]);
	if (a->json)
		printf("{\"threads\":%u,\"images\":%u,\"full_images_per_s\":%.1f,"
		       "\"crop_images_per_s\":%.1f,\"crop_unchecked_images_per_s\":%.1f,"
		       "\"full_then_crop_images_per_s\":%.1f,"
		       "\"crop_exact_images_per_s\":%.1f,"
		       "\"mcu_images_per_s\":%.1f,\"restart_indexed\":%u,"
		       "\"full_images_per_cpu_s\":%.1f,\"crop_images_per_cpu_s\":%.1f,"
		       "\"crop_unchecked_images_per_cpu_s\":%.1f,"
		       "\"full_then_crop_images_per_cpu_s\":%.1f,"
		       "\"crop_exact_images_per_cpu_s\":%.1f,"
		       "\"mcu_images_per_cpu_s\":%.1f}\n",
		       a->nthreads, d->n, rate[MODE_FULL], rate[MODE_CROP],
		       rate[MODE_CROP_UNCHECKED], rate[MODE_FULL_THEN_CROP],
		       rate[MODE_CROP_EXACT], rate[MODE_MCU], d->nrst,
		       cpu_rate[MODE_FULL], cpu_rate[MODE_CROP],
		       cpu_rate[MODE_CROP_UNCHECKED],
		       cpu_rate[MODE_FULL_THEN_CROP], cpu_rate[MODE_CROP_EXACT],
		       cpu_rate[MODE_MCU]);
	else
		printf("  %-15s %9.3f  (CPU time %.3f)\n"
		       "  %-15s %9.3f  (CPU time %.3f)\n"
		       "  %-15s %9.3f  (CPU time %.3f)\n"
		       "  %-15s %9.3f  (CPU time %.3f)\n",
		       "crop/full", ratio(rate, MODE_CROP, MODE_FULL),
		       ratio(cpu_rate, MODE_CROP, MODE_FULL),
		       "unchecked/full", ratio(rate, MODE_CROP_UNCHECKED, MODE_FULL),
		       ratio(cpu_rate, MODE_CROP_UNCHECKED, MODE_FULL),
		       "crop/unchecked", ratio(rate, MODE_CROP, MODE_CROP_UNCHECKED),
		       ratio(cpu_rate, MODE_CROP, MODE_CROP_UNCHECKED),
		       "crop_exact/crop", ratio(rate, MODE_CROP_EXACT, MODE_CROP),
		       ratio(cpu_rate, MODE_CROP_EXACT, MODE_CROP));
	if (!a->json && dlc_source_pack(d->src))
		printf("  %-15s %9.3f  (CPU time %.3f)\n", "mcu/unchecked",
		       ratio(rate, MODE_MCU, MODE_CROP_UNCHECKED),
		       ratio(cpu_rate, MODE_MCU, MODE_CROP_UNCHECKED));
}

static void decodebench_free(struct decodebench_run *d)
{
	uint32_t i;

	if (d->imgs)
		for (i = 0; i < d->n; i++) {
			dlc_buf_put(d->imgs[i].bytes);
			free(d->imgs[i].rows);
		}
	free(d->imgs);
	free(d->ws);
	dlc_decoder_destroy(d->hdr);
	dlc_source_close(d->src);
	dlc_index_free(d->idx);
}

int cmd_decodebench(int argc, char **argv)
{
	struct decodebench_run d = { 0 };
	struct decodebench_args a;
	int ret, rc;

	rc = decodebench_parse(argc, argv, &a);
	if (rc != CMD_RUN)
		return rc;
	ret = open_index(a.path, &d.idx);
	if (ret)
		return fail("decodebench", "%s: %s", a.path, strerror(-ret));
	rc = decodebench_run(&a, &d);
	if (!rc)
		decodebench_report(&a, &d);
	decodebench_free(&d);
	return rc;
}
