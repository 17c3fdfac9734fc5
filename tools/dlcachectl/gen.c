// SPDX-License-Identifier: MIT
/*
 * dlcachectl gen: a synthetic ImageNet-like data set in ImageFolder layout.
 *
 * Benchmarks need JPEGs whose sizes, dimensions, format mix and decode cost
 * resemble ImageNet's, and tests need them without downloading anything.
 * The images are genimage.c's, and the directory's bookkeeping (the stamp,
 * leftovers of an earlier set) gendir.c's. This file is the command: its
 * arguments, the threads that render and encode the images, the order of
 * the steps that keeps a half-made set from looking made, and the summary.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jpeglib.h>

#include "cli.h"
#include "gen.h"

#define MAX_IMAGES	1000000U	/* img_%06u */
#define MAX_THREADS	64U

static const char gen_usage[] =
	"usage: dlcachectl gen DIR [--images N] [--classes C] [--seed S]\n"
	"                          [--quality Q] [--distinct] [--force]\n"
	"\n"
	"Generate an ImageNet-like JPEG data set in ImageFolder layout:\n"
	"DIR/class_XXX/img_XXXXXX.jpg, the same bytes for the same arguments.\n"
	"\n"
	"  --images N    number of images (default 1200, at most 1000000)\n"
	"  --classes C   number of classes, <= N (default 10, at most 1000)\n"
	"  --seed S      generator seed (default 0)\n"
	"  --quality Q   JPEG quality 1..100 (default 90)\n"
	"  --distinct    classes that differ visibly, even in a small crop:\n"
	"                hues spread evenly around the colour wheel, one\n"
	"                motif and texture scale a class, no grayscale\n"
	"                images (for training tests; clearest with up to\n"
	"                about 12 classes)\n"
	"  --force       generate into a non-empty DIR that gen did not make\n"
	"  -h, --help    show this help\n"
	"\n"
	"DIR/" STAMP_NAME " is written last and records the arguments; a\n"
	"second run with the same arguments does nothing.\n";

/* ------------------------------------------------------------------ */
/* JPEG encoding                                                       */
/* ------------------------------------------------------------------ */

/* libjpeg's default error_exit() calls exit(); unwind to the caller. */
struct jpeg_fail {
	struct jpeg_error_mgr pub;
	jmp_buf env;
	char msg[JMSG_LENGTH_MAX];
};

static void jpeg_fail_exit(j_common_ptr c)
{
	struct jpeg_fail *e = (struct jpeg_fail *)c->err;

	c->err->format_message(c, e->msg);
	longjmp(e->env, 1);
}

struct worker {
	pthread_t tid;
	struct gen_job *job;
	struct canvas cv;
	struct jpeg_compress_struct cinfo;
	struct jpeg_fail jerr;
};

/*
 * A fresh compressor per image: jpeg_set_defaults() does not replace
 * Huffman tables that are already allocated, so after a progressive image
 * (optimized tables) a reused object would code the next baseline image
 * with that image's tables, and emit symbols they have no code for.
 */
static int encode(struct worker *wk, FILE *f, const struct img_plan *pl,
		  uint32_t quality)
{
	struct jpeg_compress_struct *c = &wk->cinfo;
	uint32_t comps = pl->kind == KIND_GRAY ? 1 : 3;
	JSAMPROW rows[16];

	c->err = jpeg_std_error(&wk->jerr.pub);
	wk->jerr.pub.error_exit = jpeg_fail_exit;
	if (setjmp(wk->jerr.env)) {
		jpeg_destroy_compress(c);
		return -1;
	}
	jpeg_create_compress(c);
	jpeg_stdio_dest(c, f);
	c->image_width = pl->w;
	c->image_height = pl->h;
	c->input_components = (int)comps;
	c->in_color_space = comps == 1 ? JCS_GRAYSCALE : JCS_RGB;
	jpeg_set_defaults(c);
	jpeg_set_quality(c, (int)quality, TRUE);
	/* Defaults are 2x2 luma sampling (4:2:0); 1x1 keeps full chroma. */
	if (pl->kind == KIND_444) {
		c->comp_info[0].h_samp_factor = 1;
		c->comp_info[0].v_samp_factor = 1;
	}
	if (pl->progressive)
		jpeg_simple_progression(c);
	jpeg_start_compress(c, TRUE);
	while (c->next_scanline < c->image_height) {
		uint32_t k, left = c->image_height - c->next_scanline;
		uint32_t take = left < 16 ? left : 16;

		for (k = 0; k < take; k++)
			rows[k] = wk->cv.out +
				  (size_t)(c->next_scanline + k) * pl->w * comps;
		jpeg_write_scanlines(c, rows, take);
	}
	jpeg_finish_compress(c);
	jpeg_destroy_compress(c);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The job: threads over images                                        */
/* ------------------------------------------------------------------ */

struct gen_job {
	const struct gen_params *p;
	const struct class_style *styles;
	uint64_t *bytes;		/* per image, for the summary */
	atomic_uint next;
	atomic_int failed;
	pthread_mutex_t lock;
	char err[PATH_MAX + 256];	/* first failure: path and reason */
};

static void job_fail(struct gen_job *job, const char *path, const char *why)
{
	pthread_mutex_lock(&job->lock);
	if (!atomic_load(&job->failed))
		snprintf(job->err, sizeof(job->err), "%s: %s", path, why);
	atomic_store(&job->failed, 1);
	pthread_mutex_unlock(&job->lock);
}

/* Render, encode to a temporary name, then rename: no reader sees half a file. */
static int make_image(struct worker *wk, uint32_t i)
{
	struct gen_job *job = wk->job;
	const struct gen_params *p = job->p;
	char final[PATH_MAX], tmp[PATH_MAX];
	struct img_plan pl;
	struct stat stt;
	uint32_t c = i % p->classes;
	FILE *f;
	int n, m, rc;

	n = snprintf(final, sizeof(final), "%s/class_%03u/img_%06u.jpg",
		     p->dir, c, i);
	m = snprintf(tmp, sizeof(tmp), "%s/class_%03u/.img_%06u.jpg.%d.tmp",
		     p->dir, c, i, (int)getpid());
	if (n < 0 || (size_t)n >= sizeof(final) || m < 0 ||
	    (size_t)m >= sizeof(tmp)) {
		job_fail(job, p->dir, strerror(ENAMETOOLONG));
		return -1;
	}
	gen_plan_image(p->seed, p->distinct, i, &pl);
	rc = gen_render(&wk->cv, &job->styles[c], p->seed, i, &pl);
	if (rc) {
		job_fail(job, final, strerror(-rc));
		return -1;
	}
	f = fopen(tmp, "wb");
	if (!f) {
		job_fail(job, tmp, strerror(errno));
		return -1;
	}
	if (encode(wk, f, &pl, p->quality)) {
		job_fail(job, tmp, wk->jerr.msg);
		fclose(f);
		unlink(tmp);
		return -1;
	}
	errno = 0;
	if (fflush(f) || ferror(f) || fstat(fileno(f), &stt)) {
		job_fail(job, tmp, strerror(errno ? errno : EIO));
		fclose(f);
		unlink(tmp);
		return -1;
	}
	if (fclose(f)) {
		job_fail(job, tmp, strerror(errno));
		unlink(tmp);
		return -1;
	}
	if (rename(tmp, final)) {
		job_fail(job, final, strerror(errno));
		unlink(tmp);
		return -1;
	}
	job->bytes[i] = (uint64_t)stt.st_size;
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct gen_job *job = wk->job;
	uint32_t i;

	while (!atomic_load(&job->failed)) {
		i = atomic_fetch_add(&job->next, 1);
		if (i >= job->p->images)
			break;
		if (make_image(wk, i))
			break;
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The command                                                         */
/* ------------------------------------------------------------------ */

static int run_threads(struct gen_job *job, uint32_t nthreads)
{
	struct worker *wk = calloc(nthreads, sizeof(*wk));
	uint32_t k, started = 0;
	int err = 0;

	if (!wk)
		return -ENOMEM;
	for (k = 0; k < nthreads; k++) {
		wk[k].job = job;
		err = pthread_create(&wk[k].tid, NULL, worker_main, &wk[k]);
		if (err) {
			job_fail(job, "pthread_create", strerror(err));
			break;
		}
		started++;
	}
	for (k = 0; k < started; k++) {
		pthread_join(wk[k].tid, NULL);
		gen_canvas_free(&wk[k].cv);
	}
	free(wk);
	return atomic_load(&job->failed) ? -1 : 0;
}

static int parse_args(int argc, char **argv, struct gen_params *p, int *help)
{
	static const struct option opts[] = {
		{ "images", required_argument, NULL, 'n' },
		{ "classes", required_argument, NULL, 'c' },
		{ "seed", required_argument, NULL, 's' },
		{ "quality", required_argument, NULL, 'q' },
		{ "distinct", no_argument, NULL, 'd' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	memset(p, 0, sizeof(*p));
	p->images = 1200;
	p->classes = 10;
	p->quality = 90;
	*help = 0;
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			if (parse_u32(optarg, 1, MAX_IMAGES, &p->images))
				return usage_error("gen", "--images: expected 1..%u, got '%s'",
						   MAX_IMAGES, optarg);
			break;
		case 'c':
			if (parse_u32(optarg, 1, MAX_CLASSES, &p->classes))
				return usage_error("gen", "--classes: expected 1..%u, got '%s'",
						   MAX_CLASSES, optarg);
			break;
		case 's':
			if (parse_u64(optarg, 0, UINT64_MAX, &p->seed))
				return usage_error("gen", "--seed: expected an unsigned 64-bit integer, got '%s'",
						   optarg);
			break;
		case 'q':
			if (parse_u32(optarg, 1, 100, &p->quality))
				return usage_error("gen", "--quality: expected 1..100, got '%s'",
						   optarg);
			break;
		case 'd':
			p->distinct = 1;
			break;
		case 'f':
			p->force = 1;
			break;
		case 'h':
			*help = 1;
			return 0;
		case ':':
			return usage_error("gen", "%s needs an argument",
					   argv[optind - 1]);
		default:
			return usage_error("gen", "unknown option '%s' (try --help)",
					   argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return usage_error("gen", "missing DIR (try --help)");
	if (optind + 1 < argc)
		return usage_error("gen", "unexpected argument '%s'",
				   argv[optind + 1]);
	p->dir = argv[optind];
	if (!*p->dir)
		return usage_error("gen", "DIR is empty");
	if (p->classes > p->images)
		return usage_error("gen", "--classes %u is more than --images %u: every class needs an image",
				   p->classes, p->images);
	return 0;
}

/* The summary: the set's size, its mean image and its format mix. */
static void report(const struct gen_params *p, const uint64_t *bytes,
		   double secs, uint32_t nthreads)
{
	uint64_t total = 0, sum_w = 0, sum_h = 0;
	uint32_t kinds[KIND_COUNT] = { 0 }, progressive = 0, i;
	struct img_plan pl;

	for (i = 0; i < p->images; i++) {
		gen_plan_image(p->seed, p->distinct, i, &pl);
		total += bytes[i];
		sum_w += pl.w;
		sum_h += pl.h;
		kinds[pl.kind]++;
		progressive += pl.progressive;
	}
	printf("generated %u images in %u%s classes in %s: %.1f MB in %.2f s (%u threads)\n",
	       p->images, p->classes, p->distinct ? " distinct" : "", p->dir,
	       (double)total / 1e6, secs, nthreads);
	printf("mean %.0fx%.0f, %.1f kB a file; 4:2:0 %u, 4:4:4 %u, gray %u, progressive %u\n",
	       (double)sum_w / p->images, (double)sum_h / p->images,
	       (double)total / p->images / 1e3, kinds[KIND_420],
	       kinds[KIND_444], kinds[KIND_GRAY], progressive);
}

int cmd_gen(int argc, char **argv)
{
	static pthread_once_t sin_once = PTHREAD_ONCE_INIT;
	char stamp[256], old[256], path[PATH_MAX], where[PATH_MAX];
	struct class_style *styles = NULL;
	uint32_t i, nthreads;
	struct gen_job job;
	struct gen_params p;
	struct stat st;
	uint64_t t0;
	int help, rc, ours;
	long ncpu;
	double secs;

	rc = parse_args(argc, argv, &p, &help);
	if (rc)
		return rc;
	if (help) {
		fputs(gen_usage, stdout);
		return 0;
	}
	gen_stamp_text(&p, stamp, sizeof(stamp));

	if (stat(p.dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			return fail("gen", "%s: %s", p.dir, strerror(ENOTDIR));
		rc = gen_stamp_read(p.dir, old, sizeof(old));
		if (rc < 0)
			return fail("gen", "%s/%s: %s", p.dir, STAMP_NAME,
				    strerror(-rc));
		ours = rc > 0;
		if (ours && !strcmp(old, stamp)) {
			printf("already generated: %s (%u images, %u classes, seed %llu, quality %u%s)\n",
			       p.dir, p.images, p.classes,
			       (unsigned long long)p.seed, p.quality,
			       p.distinct ? ", distinct" : "");
			return 0;
		}
		rc = gen_dir_nonempty(p.dir);
		if (rc < 0)
			return fail("gen", "%s: %s", p.dir, strerror(-rc));
		if (rc && !ours && !p.force)
			return fail("gen", "%s: not empty and not made by gen (no %s); use --force to generate into it",
				    p.dir, STAMP_NAME);
	} else if (errno == ENOENT) {
		ours = 0;
		snprintf(path, sizeof(path), "%s", p.dir);
		rc = gen_mkdir_p(path);
		if (rc)
			return fail("gen", "%s: %s", path, strerror(-rc));
	} else {
		return fail("gen", "%s: %s", p.dir, strerror(errno));
	}

	/*
	 * Mark the directory as gen's before touching it, with a stamp that
	 * matches no arguments: a run that dies half way is then redone,
	 * and its leftovers are known to be gen's to clean.
	 */
	rc = gen_stamp_write(p.dir, "dlcachectl gen: incomplete\n", path,
			 sizeof(path));
	if (rc)
		return fail("gen", "%s: %s", path, strerror(-rc));
	for (i = 0; i < p.classes; i++) {
		if (gen_class_dir(path, sizeof(path), p.dir, i))
			return fail("gen", "%s: %s", p.dir,
				    strerror(ENAMETOOLONG));
		if (mkdir(path, 0755) && errno != EEXIST)
			return fail("gen", "%s: %s", path, strerror(errno));
	}

	pthread_once(&sin_once, gen_sin_table_init);
	styles = calloc(p.classes, sizeof(*styles));
	memset(&job, 0, sizeof(job));
	job.bytes = calloc(p.images, sizeof(*job.bytes));
	if (!styles || !job.bytes) {
		free(styles);
		free(job.bytes);
		return fail("gen", "%s", strerror(ENOMEM));
	}
	for (i = 0; i < p.classes; i++) {
		if (p.distinct)
			gen_make_distinct_style(p.seed, i, p.classes, &styles[i]);
		else
			gen_make_style(p.seed, i, &styles[i]);
	}
	job.p = &p;
	job.styles = styles;
	pthread_mutex_init(&job.lock, NULL);
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	nthreads = ncpu < 1 ? 1 : ncpu > (long)MAX_THREADS ? MAX_THREADS
							  : (uint32_t)ncpu;
	if (nthreads > p.images)
		nthreads = p.images;

	t0 = now_ns();
	rc = run_threads(&job, nthreads);
	pthread_mutex_destroy(&job.lock);
	free(styles);
	if (rc) {
		free(job.bytes);
		return fail("gen", "%s", job.err[0] ? job.err : strerror(ENOMEM));
	}
	if (ours) {
		where[0] = 0;
		rc = gen_remove_stale(&p, where, sizeof(where));
		if (rc) {
			free(job.bytes);
			return fail("gen", "%s: %s", where, strerror(-rc));
		}
	}
	rc = gen_sync_fs(p.dir);
	if (rc) {
		free(job.bytes);
		return fail("gen", "%s: sync: %s", p.dir, strerror(-rc));
	}
	rc = gen_stamp_write(p.dir, stamp, path, sizeof(path));
	if (rc) {
		free(job.bytes);
		return fail("gen", "%s: %s", path, strerror(-rc));
	}
	secs = (double)(now_ns() - t0) / 1e9;
	report(&p, job.bytes, secs, nthreads);
	free(job.bytes);
	return 0;
}