// SPDX-License-Identifier: MIT
/*
 * The loader's pixels against torchvision itself, on real photographs
 * (Debian's mate-backgrounds and plasma-workspace-wallpapers, which no one
 * here generated) and on a generated set: every sample of several epochs,
 * train (RandomResizedCrop + RandomHorizontalFlip) and eval (Resize +
 * CenterCrop), with DLC_TRANSFORM_F_EXACT and without, and with decoded
 * forms (DLC_FORMS_DECODED, a cache that holds them all: every epoch
 * after the first is served from the forms).
 *
 * The reference is torchvision 0.14 on the PIL image, given the box that
 * dlc_transform_crop() (a pure function) draws for the sample:
 *   F.resized_crop(img, top, left, h, w, [out_h, out_w], antialias=True),
 *   then F.hflip() when the box says so; for eval
 *   F.center_crop(F.resize(img, resize), [out_h, out_w]).
 * One python process per data set and transform computes them all.
 *
 * F_EXACT (DCT scale 1): max |difference| <= 1 on every pixel; the forms'
 * samples too, and bit-identical to F_EXACT's. The default
 * path decodes large crops at 1/2, 1/4 or 1/8 scale: each sample's mean
 * |difference| and the 99.9th percentile of its |differences| must stay
 * within the bounds that dlcache.h and Documentation/library.md state.
 * DLC_TV_EPOCHS=N runs N train epochs over the photographs instead of 3
 * (how the bounds were measured: N = 12).
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlcache.h"

#include "helpers/testutil.h"

/* The stated tolerance of the reduced-scale path (dlcache.h). */
#define TOL_MEAN	3.0	/* per sample */
#define TOL_P999	40	/* per sample */
#define TOL_AVG		0.75	/* over all samples of a set */

#define SIDE		224
#define NCONF		3	/* default, F_EXACT, decoded forms */
#define CONF_FORMS	2

#if defined(__SANITIZE_ADDRESS__)
#define EPOCHS		1
#else
#define EPOCHS		3
#endif

/* Real photographs; a data set holds those of them that are installed. */
static const char *const photos[] = {
	/* mate-backgrounds */
	"/usr/share/backgrounds/mate/nature/Aqua.jpg",
	"/usr/share/backgrounds/mate/nature/Blinds.jpg",
	"/usr/share/backgrounds/mate/nature/Dune.jpg",
	"/usr/share/backgrounds/mate/nature/FreshFlower.jpg",
	"/usr/share/backgrounds/mate/nature/Garden.jpg",
	"/usr/share/backgrounds/mate/nature/GreenMeadow.jpg",
	"/usr/share/backgrounds/mate/nature/LadyBird.jpg",
	"/usr/share/backgrounds/mate/nature/RainDrops.jpg",
	"/usr/share/backgrounds/mate/nature/Storm.jpg",
	"/usr/share/backgrounds/mate/nature/TwoWings.jpg",
	"/usr/share/backgrounds/mate/nature/Wood.jpg",
	"/usr/share/backgrounds/mate/nature/YellowFlower.jpg",
	/* plasma-workspace-wallpapers (Grey is a grayscale JPEG) */
	"/usr/share/wallpapers/BytheWater/contents/images/2560x1600.jpg",
	"/usr/share/wallpapers/ColdRipple/contents/images/2560x1600.jpg",
	"/usr/share/wallpapers/ColorfulCups/contents/images/2560x1600.jpg",
	"/usr/share/wallpapers/DarkestHour/contents/images/2560x1600.jpg",
	"/usr/share/wallpapers/EveningGlow/contents/images/2560x1600.jpg",
	"/usr/share/wallpapers/FallenLeaf/contents/images/2560x1600.jpg",
	"/usr/share/wallpapers/Grey/contents/images/2560x1600.jpg",
	"/usr/share/wallpapers/Kite/contents/images/2560x1600.jpg",
	"/usr/share/wallpapers/OneStandsOut/contents/images/2560x1600.jpg",
	"/usr/share/wallpapers/Path/contents/images/2560x1600.jpg",
	"/usr/share/wallpapers/summer_1am/contents/images/2560x1600.jpg",
};
#define NPHOTOS (sizeof(photos) / sizeof(photos[0]))

/* Renders, for 5120x2880 sources (1/8 scale) and progressive files. */
static const char *const renders[] = {
	"/usr/share/wallpapers/Volna/contents/images/5120x2880.jpg",
	"/usr/share/wallpapers/Flow/contents/images/5120x2880.jpg",
	"/usr/share/wallpapers/SafeLanding/contents/images/5120x2880.jpg",
	"/usr/share/wallpapers/Autumn/contents/images/2560x1600.jpg",
};
#define NRENDERS (sizeof(renders) / sizeof(renders[0]))

/* One delivered sample: which, and its pixels under each configuration. */
struct got {
	uint32_t epoch, id;
	struct dlc_crop box;
	uint8_t *px[NCONF];
};

struct run {
	const char *root;
	const struct dlc_index *idx;
	uint32_t kind;
	uint32_t epochs;
	struct got *g;
	uint32_t n;
	uint64_t form_hits;
};

static struct got *find(struct run *r, uint32_t epoch, uint32_t id)
{
	uint32_t i;

	for (i = 0; i < r->n; i++)
		if (r->g[i].epoch == epoch && r->g[i].id == id)
			return &r->g[i];
	return NULL;
}

static void config(struct dlc_config *cfg, uint32_t kind, uint32_t conf)
{
	uint32_t flags = conf ? DLC_TRANSFORM_F_EXACT : 0;

	dlc_config_init(cfg);
	cfg->batch_size = 4;
	cfg->layout = DLC_LAYOUT_NHWC;
	dlc_transform_default(&cfg->transform, kind);
	cfg->transform.flags = flags;
	cfg->shuffle = kind == DLC_TRANSFORM_TRAIN;
	cfg->seed = 2024;
	cfg->decode_threads = 2;
	cfg->queue_depth = 8;
	cfg->window = 16;
	cfg->nbatches = 3;
	cfg->on_error = DLC_ON_ERROR_FAIL;
	cfg->backend = DLC_BACKEND_INPROCESS;
	cfg->cache_bytes = 256u << 20;
	if (conf == CONF_FORMS) {
		/* every form of the photographs, 30 of up to 12 MB */
		cfg->forms = DLC_FORMS_DECODED;
		cfg->cache_bytes = 1ULL << 30;
	}
	cfg->log = dlc_log_stderr;
	cfg->log_level = DLC_LOG_ERROR;
}

/* Every batch of @epochs epochs, under configuration @conf. */
static void collect(struct run *r, uint32_t conf)
{
	struct dlc_config cfg;
	struct dlc_loader *l = NULL;
	struct dlc_batch *b;
	uint32_t e, i, n = dlc_index_count(r->idx);
	size_t bytes = (size_t)SIDE * SIDE * 3;
	int ret;

	config(&cfg, r->kind, conf);
	ret = dlc_loader_create(&cfg, r->idx, &l);
	CHECK(ret == 0, "loader: %d", ret);
	if (ret)
		return;
	for (e = 0; e < r->epochs; e++) {
		CHECK(dlc_loader_start_epoch(l, e, 0) == 0, "epoch %u", e);
		while ((ret = dlc_next_batch(l, &b)) == 0) {
			for (i = 0; i < b->count; i++) {
				uint32_t id = b->ids[i];
				struct got *g = find(r, e, id);
				char path[PATH_MAX];
				struct stat st;

				if (!g) {
					g = &r->g[r->n++];
					memset(g, 0, sizeof(*g));
					g->epoch = e;
					g->id = id;
				}
				CHECK(b->labels[i] == dlc_index_label(r->idx, id),
				      "label of sample %u", id);
				g->px[conf] = malloc(bytes);
				if (!g->px[conf])
					exit(1);
				memcpy(g->px[conf], b->data + i * bytes, bytes);
				/* the box the sample was drawn with: a pure function */
				snprintf(path, sizeof(path), "%s/%s", r->root,
					 dlc_index_relpath(r->idx, id));
				if (conf == 0) {
					struct dlc_decoder *dec;
					struct dlc_jpeg_info info;
					size_t len;
					uint8_t *jpg = t_read_file(path, &len);

					CHECK(jpg && !stat(path, &st), "read %s", path);
					if (!jpg || dlc_decoder_create(0, &dec))
						exit(1);
					CHECK(!dlc_decoder_header(dec, jpg, len, &info),
					      "header of %s", path);
					CHECK(!dlc_transform_crop(&cfg.transform,
								  cfg.seed, e, id,
								  info.width,
								  info.height,
								  &g->box), "crop");
					dlc_decoder_destroy(dec);
					free(jpg);
				}
			}
			dlc_release_batch(l, b);
		}
		CHECK(ret == -ENODATA, "epoch %u ended with %d", e, ret);
	}
	if (conf == CONF_FORMS) {
		struct dlc_stats st;

		CHECK_EQ(dlc_loader_stats(l, &st, sizeof(st)), 0);
		/* the first epoch makes them, every later one uses them */
		CHECK(st.form_hits >= (uint64_t)n * (r->epochs - 1) &&
		      st.forms_held == n,
		      "forms: %llu samples from forms, %llu held, of %u samples over %u epochs",
		      (unsigned long long)st.form_hits,
		      (unsigned long long)st.forms_held, n, r->epochs);
		r->form_hits = st.form_hits;
	}
	dlc_loader_destroy(l);
}

static const char tv_script[] =
	"import sys\n"
	"from PIL import Image\n"
	"import torchvision.transforms.functional as F\n"
	"jobs = [l.split('\\t') for l in open(sys.argv[1]).read().splitlines()]\n"
	"order = sorted(range(len(jobs)), key=lambda i: jobs[i][0])\n"
	"res = [None] * len(jobs)\n"
	"cur, img = None, None\n"
	"for i in order:\n"
	"    path, kind, top, left, h, w, flip, oh, ow, rs = jobs[i]\n"
	"    if path != cur:\n"
	"        img = Image.open(path).convert('RGB')\n"
	"        cur = path\n"
	"    if kind == 'train':\n"
	"        out = F.resized_crop(img, int(top), int(left), int(h), int(w),\n"
	"                             [int(oh), int(ow)], antialias=True)\n"
	"        if flip == '1':\n"
	"            out = F.hflip(out)\n"
	"    else:\n"
	"        out = F.center_crop(F.resize(img, int(rs)), [int(oh), int(ow)])\n"
	"    assert out.size == (int(ow), int(oh)) and out.mode == 'RGB'\n"
	"    res[i] = out.tobytes()\n"
	"with open(sys.argv[2], 'wb') as f:\n"
	"    for r in res:\n"
	"        f.write(r)\n";

static int have_torchvision(void)
{
	return !access("/usr/bin/python3", X_OK) &&
	       !system("/usr/bin/python3 -c 'import torchvision, PIL' >/dev/null 2>&1");
}

/* torchvision's outputs for every sample of @r, in order; NULL on failure. */
static uint8_t *reference(struct run *r, const char *tmp)
{
	char jobs[PATH_MAX], outp[PATH_MAX], script[PATH_MAX], cmd[4 * PATH_MAX];
	size_t bytes = (size_t)SIDE * SIDE * 3, len = 0;
	uint8_t *ref;
	uint32_t i;
	FILE *f;
	int st;

	snprintf(jobs, sizeof(jobs), "%s/jobs.tsv", tmp);
	snprintf(outp, sizeof(outp), "%s/ref.rgb", tmp);
	snprintf(script, sizeof(script), "%s/tv.py", tmp);
	if (t_write_file(script, tv_script, strlen(tv_script)))
		return NULL;
	f = fopen(jobs, "w");
	if (!f)
		return NULL;
	for (i = 0; i < r->n; i++) {
		const struct got *g = &r->g[i];
		char real[PATH_MAX], path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", r->root,
			 dlc_index_relpath(r->idx, g->id));
		if (!realpath(path, real))
			snprintf(real, sizeof(real), "%s", path);
		fprintf(f, "%s\t%s\t%.0f\t%.0f\t%.0f\t%.0f\t%u\t%u\t%u\t256\n",
			real, r->kind == DLC_TRANSFORM_TRAIN ? "train" : "eval",
			g->box.y, g->box.x, g->box.h, g->box.w, g->box.flip,
			SIDE, SIDE);
	}
	fclose(f);
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s %s %s", script, jobs,
		 outp);
	st = system(cmd);
	CHECK(st == 0, "torchvision script failed (%d)", st);
	if (st)
		return NULL;
	ref = t_read_file(outp, &len);
	CHECK(ref && len == bytes * r->n, "torchvision gave %zu bytes, want %zu",
	      len, bytes * r->n);
	if (ref && len != bytes * r->n) {
		free(ref);
		ref = NULL;
	}
	return ref;
}

/* Mean |a - b| and the 99.9th percentile of |a - b| over @n bytes. */
static void diff_stats(const uint8_t *a, const uint8_t *b, size_t n,
		       double *mean, int *p999, int *max)
{
	uint64_t hist[256] = { 0 }, sum = 0, acc = 0;
	size_t i;
	int v;

	for (i = 0; i < n; i++) {
		int d = abs((int)a[i] - (int)b[i]);

		hist[d]++;
		sum += (uint64_t)d;
	}
	*mean = (double)sum / (double)n;
	*max = 0;
	*p999 = -1;
	for (v = 0; v < 256; v++) {
		acc += hist[v];
		if (hist[v])
			*max = v;
		/* the smallest v with at least 99.9% of the bytes at or below it */
		if (*p999 < 0 && acc * 1000 >= (uint64_t)n * 999)
			*p999 = v;
	}
}

/*
 * Compare every sample of @r with torchvision: F_EXACT within 1 level,
 * the default path within the stated tolerance.
 */
static void compare(struct run *r, const char *name, const char *tmp)
{
	size_t bytes = (size_t)SIDE * SIDE * 3;
	uint32_t i, bitexact[NCONF] = { 0 }, scaled = 0, full = 0;
	double worst_mean = 0, sum_mean = 0;
	int worst_p999 = 0, worst_max[NCONF] = { 0 };
	uint8_t *ref = reference(r, tmp);

	if (!ref)
		return;
	for (i = 0; i < r->n; i++) {
		const struct got *g = &r->g[i];
		double mean;
		int p999, max, c;

		for (c = 0; c < NCONF; c++) {
			CHECK(g->px[c], "%s: sample %u of epoch %u not delivered under config %d",
			      name, g->id, g->epoch, c);
			if (!g->px[c])
				continue;
			diff_stats(g->px[c], ref + (size_t)i * bytes, bytes,
				   &mean, &p999, &max);
			bitexact[c] += max == 0;
			if (max > worst_max[c])
				worst_max[c] = max;
			/* a form serves F_EXACT's pixels, bit for bit */
			if (c == CONF_FORMS && g->px[1])
				CHECK(!memcmp(g->px[c], g->px[1], bytes),
				      "%s: sample %u (%s) epoch %u: the decoded form's pixels differ from F_EXACT's (max |diff| %d)",
				      name, g->id,
				      dlc_index_relpath(r->idx, g->id),
				      g->epoch, t_max_diff(g->px[c], g->px[1],
							   bytes));
			/*
			 * F_EXACT always, and the default path where the crop
			 * is under 2x the output (documented: scale 1 then)
			 */
			if (c || g->box.w < 2 * SIDE || g->box.h < 2 * SIDE) {
				CHECK(max <= 1,
				      "%s: %s sample %u (%s) epoch %u box (top %.0f left %.0f h %.0f w %.0f flip %u): max |diff| %d vs torchvision",
				      name, c == CONF_FORMS ? "forms" :
				      c ? "F_EXACT" : "scale-1", g->id,
				      dlc_index_relpath(r->idx, g->id), g->epoch,
				      g->box.y, g->box.x, g->box.h, g->box.w,
				      g->box.flip, max);
				if (c)
					continue;
				full++;
			}
			scaled += max > 1;
			sum_mean += mean;
			if (mean > worst_mean)
				worst_mean = mean;
			if (p999 > worst_p999)
				worst_p999 = p999;
			CHECK(mean <= TOL_MEAN && p999 <= TOL_P999,
			      "%s: sample %u (%s) epoch %u box (top %.0f left %.0f h %.0f w %.0f): mean |diff| %.3f, p99.9 %d vs torchvision (bounds %.1f, %d)",
			      name, g->id, dlc_index_relpath(r->idx, g->id),
			      g->epoch, g->box.y, g->box.x, g->box.h, g->box.w,
			      mean, p999, TOL_MEAN, TOL_P999);
		}
	}
	CHECK(!r->n || sum_mean / r->n <= TOL_AVG,
	      "%s: mean |diff| over all samples %.3f vs torchvision (bound %.2f)",
	      name, sum_mean / r->n, TOL_AVG);
	printf("torchvision %s: %u samples; F_EXACT %u bit-exact, max |diff| %d; decoded forms (%llu served from them) %u bit-exact, max |diff| %d; default %u bit-exact (%u at scale 1), %u off by more than 1, mean |diff| %.3f, worst sample mean %.3f, worst p99.9 %d, max %d\n",
	       name, r->n, bitexact[1], worst_max[1],
	       (unsigned long long)r->form_hits, bitexact[CONF_FORMS],
	       worst_max[CONF_FORMS], bitexact[0], full, scaled,
	       r->n ? sum_mean / r->n : 0.0, worst_mean, worst_p999,
	       worst_max[0]);
	free(ref);
}

static void run_set(const char *root, uint32_t kind, uint32_t epochs,
		    const char *name)
{
	struct dlc_index *idx = NULL;
	struct run r;
	char *tmp;
	uint32_t i, c;
	int ret;

	ret = dlc_index_build(root, &idx);
	CHECK(ret == 0, "index %s: %d", root, ret);
	if (ret)
		return;
	tmp = t_mkdtemp(NULL);
	memset(&r, 0, sizeof(r));
	r.root = root;
	r.idx = idx;
	r.kind = kind;
	/* eval: a second epoch, served from the decoded forms */
	r.epochs = kind == DLC_TRANSFORM_EVAL ? 2 : epochs;
	r.g = calloc((size_t)dlc_index_count(idx) * r.epochs, sizeof(*r.g));
	if (!r.g || !tmp)
		exit(1);
	for (c = 0; c < NCONF; c++)
		collect(&r, c);
	CHECK(r.n == dlc_index_count(idx) * r.epochs, "%s: %u samples, want %u",
	      name, r.n, dlc_index_count(idx) * r.epochs);
	compare(&r, name, tmp);
	for (i = 0; i < r.n; i++)
		for (c = 0; c < NCONF; c++)
			free(r.g[i].px[c]);
	free(r.g);
	t_rmtree(tmp);
	free(tmp);
	dlc_index_free(idx);
}

/* An ImageFolder tree of symlinks: class "photos" and class "renders". */
static uint32_t link_set(const char *root)
{
	char path[PATH_MAX];
	uint32_t i, n = 0;

	for (i = 0; i < NPHOTOS + NRENDERS; i++) {
		const char *src = i < NPHOTOS ? photos[i] : renders[i - NPHOTOS];
		const char *cls = i < NPHOTOS ? "photos" : "renders";

		if (access(src, R_OK))
			continue;
		snprintf(path, sizeof(path), "%s/%s", root, cls);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/%s/%02u.jpg", root, cls, i);
		if (!symlink(src, path))
			n += i < NPHOTOS;
	}
	return n;
}

static void test_photos(uint32_t kind)
{
	const char *name = kind == DLC_TRANSFORM_TRAIN ? "photos/train" :
							 "photos/eval";
	uint32_t n, epochs = EPOCHS;
	char *root;

	if (!have_torchvision()) {
		t_skip_required(name, "no torchvision/Pillow for /usr/bin/python3 (python3-torchvision, python3-pil)");
		return;
	}
	root = t_mkdtemp(NULL);
	n = link_set(root);
	if (getenv("DLC_TV_EPOCHS"))	/* for measuring the tolerance */
		epochs = (uint32_t)atoi(getenv("DLC_TV_EPOCHS"));
	if (n < 20) {
		t_skip_required(name, "only %u of the %zu real photographs installed (Debian packages mate-backgrounds and plasma-workspace-wallpapers; make deps)",
				n, NPHOTOS);
		t_rmtree(root);
		free(root);
		return;
	}
	t_report_begin();
	run_set(root, kind, epochs, name);
	t_report(name);
	t_rmtree(root);
	free(root);
}

/*
 * A progressive JPEG whose scans leave coefficients out (every
 * component's DC, then the luma's first AC band): libjpeg smooths each
 * block of it from its neighbours', as truncated progressive files from
 * the web are, and a crop's edge must be smoothed as a whole decode's.
 */
static void add_smoothed(const char *root)
{
	static const jpeg_scan_info scans[] = {
		{ 3, { 0, 1, 2 }, 0, 0, 0, 0 },
		{ 1, { 0 }, 1, 5, 0, 0 },
	};
	char path[PATH_MAX];
	size_t len;
	uint8_t *j = t_make_jpeg_scans(1001, 777, 91, 0, 85, scans, 2, &len);

	snprintf(path, sizeof(path), "%s/large/smoothed.jpg", root);
	CHECK(j && !t_write_file(path, j, len), "write %s", path);
	free(j);
}

static void test_generated(uint32_t kind)
{
	const char *name = kind == DLC_TRANSFORM_TRAIN ? "generated/train" :
							 "generated/eval";
	uint32_t i;
	char *root;

	if (!have_torchvision()) {
		t_skip_required(name, "no torchvision/Pillow for /usr/bin/python3 (python3-torchvision, python3-pil)");
		return;
	}
	root = t_mkdtemp(NULL);
	t_report_begin();
	CHECK(t_make_dataset(root, 3, 6) == 0, "generated data set");
	/* and large ones, for the reduced DCT scales; one gray */
	for (i = 0; i < 4; i++) {
		static const uint32_t dims[4][2] = {
			{ 1600, 1200 }, { 1203, 1907 }, { 2900, 1650 },
			{ 1024, 1000 },
		};
		char path[PATH_MAX];
		size_t len;
		uint8_t *j = t_make_jpeg(dims[i][0], dims[i][1], 77 + i, i == 3,
					 90, &len);

		snprintf(path, sizeof(path), "%s/large/img%u.jpg", root, i);
		CHECK(j && !t_write_file(path, j, len), "write %s", path);
		free(j);
	}
	add_smoothed(root);
	run_set(root, kind, EPOCHS, name);
	t_report(name);
	t_rmtree(root);
	free(root);
}

int main(void)
{
	test_generated(DLC_TRANSFORM_TRAIN);
	test_generated(DLC_TRANSFORM_EVAL);
	test_photos(DLC_TRANSFORM_TRAIN);
	test_photos(DLC_TRANSFORM_EVAL);
	return t_done("test_torchvision");
}
