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
#include "dlcache.h"
#include "internal.h"
#include "jpegrst.h"

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

int cmd_decodebench(int argc, char **argv)
{
	const char *path = NULL;
	uint32_t nthreads = 0, nimages = 0, seconds_u = 0, n, i, m, k;
	double seconds = 3.0, rate[MODES], rounds[MODES][ROUNDS];
	double cpu_rate[MODES], cpu_rounds[MODES][ROUNDS];
	int json = 0, opts = 1, i_arg, ret, status = 1;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct dlc_decoder *hdr = NULL;
	struct dlc_source *src = NULL;
	struct worker *ws = NULL;
	struct image *imgs = NULL;
	struct dlc_index *idx;
	uint64_t bytes = 0;
	uint32_t nrst = 0;
	struct run r;

	for (i_arg = 1; i_arg < argc; i_arg++) {
		const char *a = argv[i_arg];
		const char *v = i_arg + 1 < argc ? argv[i_arg + 1] : NULL;

		if (opts && (!strcmp(a, "-h") || !strcmp(a, "--help"))) {
			fputs(decodebench_usage, stdout);
			return 0;
		} else if (opts && !strcmp(a, "--threads")) {
			if (!v || parse_u32(v, 1, 1024, &nthreads))
				return usage_error("decodebench",
						   "--threads needs a number in 1..1024");
			i_arg++;
		} else if (opts && !strcmp(a, "--images")) {
			if (!v || parse_u32(v, 1, UINT32_MAX, &nimages))
				return usage_error("decodebench",
						   "--images needs a positive number");
			i_arg++;
		} else if (opts && !strcmp(a, "--seconds")) {
			if (!v || parse_u32(v, 1, 3600, &seconds_u))
				return usage_error("decodebench",
						   "--seconds needs a number in 1..3600");
			seconds = seconds_u;
			i_arg++;
		} else if (opts && !strcmp(a, "--json")) {
			json = 1;
		} else if (opts && !strcmp(a, "--")) {
			opts = 0;
		} else if (opts && a[0] == '-' && a[1]) {
			return usage_error("decodebench", "unknown option '%s'", a);
		} else if (!path) {
			path = a;
		} else {
			return usage_error("decodebench", "unexpected argument '%s'", a);
		}
	}
	if (!path || !*path)
		return usage_error("decodebench",
				   "missing INDEX_FILE_OR_DIR (try --help)");
	if (!nthreads)
		nthreads = cpus > 0 ? (uint32_t)cpus : 1;

	ret = open_index(path, &idx);
	if (ret)
		return fail("decodebench", "%s: %s", path, strerror(-ret));
	n = dlc_index_count(idx);
	if (nimages && nimages < n)
		n = nimages;
	imgs = calloc(n, sizeof(*imgs));
	ws = calloc(nthreads, sizeof(*ws));
	ret = dlc_decoder_create(0, &hdr);
	if (!ret)
		ret = dlc_source_open(idx, 0, &src);
	if (!imgs || !ws || ret) {
		fail("decodebench", "%s", strerror(ret ? -ret : ENOMEM));
		goto out;
	}
	memset(&r, 0, sizeof(r));
	dlc_transform_default(&r.t, DLC_TRANSFORM_TRAIN);
	r.t_exact = r.t;
	r.t_exact.flags = DLC_TRANSFORM_F_EXACT;
	for (i = 0; i < n; i++) {
		uint32_t rows[DLC_RST_MAX_ROWS + 1];
		struct dlc_jpeg_info info;

		ret = dlc_source_read(src, i, 0, &imgs[i].bytes);
		if (ret) {
			char name[4096];

			dlc_source_name(src, i, name, sizeof(name));
			fail("decodebench", "%s: %s", name, strerror(-ret));
			goto out;
		}
		imgs[i].buf = imgs[i].bytes->data;
		imgs[i].len = imgs[i].bytes->len;
		imgs[i].id = i;
		if (dlc_source_rst(src, i, &imgs[i].g, rows)) {
			size_t sz = sizeof(*rows) * (imgs[i].g.mcus_y + 1);

			imgs[i].rows = malloc(sz);
			if (!imgs[i].rows) {
				fail("decodebench", "%s", strerror(ENOMEM));
				goto out;
			}
			memcpy(imgs[i].rows, rows, sz);
			nrst++;
		}
		bytes += imgs[i].len;
		/* a box for the reference mode; unreadable files fail there too */
		imgs[i].crop.w = imgs[i].crop.h = 1;
		if (!dlc_decoder_header(hdr, imgs[i].buf, imgs[i].len, &info))
			dlc_transform_crop(&r.t, 0, 0, i, info.width,
					   info.height, &imgs[i].crop);
	}
	r.imgs = imgs;
	r.n = n;

	if (!json)
		printf("decodebench: %u images (%u restart-indexed), %.1f MB in memory, %u threads, %.0f s per mode\n",
		       n, nrst, bytes / 1e6, nthreads, seconds);
	/*
	 * The modes take turns, ROUNDS times, and each reports its median
	 * round: on a shared machine, load that comes and goes then hits
	 * every mode alike instead of whichever ran at the time.
	 */
	for (k = 0; k < ROUNDS; k++)
		for (m = 0; m < MODES; m++) {
			uint64_t errors;
			char why[256] = "";

			r.mode = (enum mode)m;
			if (m == MODE_MCU && !dlc_source_pack(src)) {
				rounds[m][k] = cpu_rounds[m][k] = 0;
				continue;
			}
			ret = run_mode(&r, ws, nthreads, seconds / ROUNDS,
				       &rounds[m][k], &cpu_rounds[m][k],
				       &errors, why, sizeof(why));
			if (ret) {
				fail("decodebench", "%s: %s", mode_names[m],
				     strerror(-ret));
				goto out;
			}
			if (errors && k == 0)
				fprintf(stderr, "dlcachectl decodebench: %s: %llu failed decodes, first %s\n",
					mode_names[m], (unsigned long long)errors, why);
		}
	for (m = 0; m < MODES; m++) {
		qsort(rounds[m], ROUNDS, sizeof(double), cmp_double);
		qsort(cpu_rounds[m], ROUNDS, sizeof(double), cmp_double);
		rate[m] = rounds[m][ROUNDS / 2];
		cpu_rate[m] = cpu_rounds[m][ROUNDS / 2];
		if (!json && (m != MODE_MCU || dlc_source_pack(src)))
			printf("  %-15s %9.1f images/s  (%.1f per thread, %.1f per CPU-second)\n",
			       mode_names[m], rate[m], rate[m] / nthreads,
			       cpu_rate[m]);
	}
	if (json)
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
		       nthreads, n, rate[MODE_FULL], rate[MODE_CROP],
		       rate[MODE_CROP_UNCHECKED], rate[MODE_FULL_THEN_CROP],
		       rate[MODE_CROP_EXACT], rate[MODE_MCU], nrst,
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
	if (!json && dlc_source_pack(src))
		printf("  %-15s %9.3f  (CPU time %.3f)\n", "mcu/unchecked",
		       ratio(rate, MODE_MCU, MODE_CROP_UNCHECKED),
		       ratio(cpu_rate, MODE_MCU, MODE_CROP_UNCHECKED));
	status = 0;
out:
	if (imgs)
		for (i = 0; i < n; i++) {
			dlc_buf_put(imgs[i].bytes);
			free(imgs[i].rows);
		}
	free(imgs);
	free(ws);
	dlc_decoder_destroy(hdr);
	dlc_source_close(src);
	dlc_index_free(idx);
	return status;
}
