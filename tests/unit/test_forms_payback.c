// SPDX-License-Identifier: MIT
/*
 * A pinned form that a denser one displaces is made again at its next
 * use, so a loader lets the in-process cache displace only while enough
 * of the job is left to pay that back (inproc.c: DLC_FORMS_PAYBACK
 * epochs after this one, or no known end). test_forms_opt checks the
 * policy on the cache itself; this checks the loader tells it, epoch by
 * epoch, from dlc_config.epochs.
 *
 * The data set is two kinds of sample of the same pixels, so that their
 * forms are the same bytes: raw PPMs, whose decode is a copy, and
 * JPEGs at quality 95, whose decode is many times dearer. The cache
 * holds the forms of 20 of the 48, pinned as they come (decoded forms,
 * one decoder). Once the cache is full of forms, a JPEG's is worth at
 * least twice a PPM's per byte, so it takes a PPM's room:
 *   - a job of 10 epochs displaces, and none in its last three;
 *   - a job of no known end displaces;
 *   - a job of 3 epochs displaces none, though its forms fill the cache.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dlcache.h"
#include "internal.h"
#include "helpers/testutil.h"

#define SIDE	128		/* the images' */
#define OUT	32		/* the batches' */
#define PER	24		/* of each kind */
#define FORM	(SIDE * SIDE * 3)
#define HELD	20		/* forms the cache holds */

static char *tmp;
static char root[1024];
static struct dlc_index *g_idx;

/* SIDE x SIDE RGB pixels of noise from @seed into @px. */
static void noise(uint8_t *px, uint32_t seed)
{
	uint64_t r = seed * 0x9e3779b97f4a7c15ULL + 1;
	size_t i;

	for (i = 0; i < FORM; i++) {
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		px[i] = (uint8_t)r;
	}
}

static int write_ppm(const char *path, uint32_t seed)
{
	uint8_t *p = malloc(FORM + 32);
	size_t hdr;
	int ret;

	if (!p)
		return -ENOMEM;
	hdr = (size_t)snprintf((char *)p, 32, "P6\n%d %d\n255\n", SIDE, SIDE);
	noise(p + hdr, seed);
	ret = t_write_file(path, p, hdr + FORM);
	free(p);
	return ret;
}

/*
 * Noise as a progressive JPEG at quality 100, no subsampling: about the
 * PPM's bytes (so that forms.c's one form-to-encoded ratio estimates
 * both kinds alike), and a decode many times dearer.
 */
static uint8_t *noise_jpeg(uint32_t seed, size_t *len)
{
	uint8_t *px = malloc(FORM), *out;

	if (!px)
		return NULL;
	noise(px, seed);
	out = t_encode_jpeg(px, SIDE, SIDE, 100,
			    T_JPEG_PROGRESSIVE | T_JPEG_444, len);
	free(px);
	return out;
}

static int setup(void)
{
	char path[1200];
	uint32_t i;

	tmp = t_mkdtemp(NULL);
	if (!tmp || strlen(tmp) > 900)
		return -1;
	snprintf(root, sizeof(root), "%s/set", tmp);
	snprintf(path, sizeof(path), "%s/ppm", root);
	if (mkdir(root, 0700) || mkdir(path, 0700))
		return -1;
	snprintf(path, sizeof(path), "%s/jpeg", root);
	if (mkdir(path, 0700))
		return -1;
	for (i = 0; i < PER; i++) {
		size_t len;
		uint8_t *j = noise_jpeg(100 + i, &len);

		snprintf(path, sizeof(path), "%s/jpeg/%02u.jpg", root, i);
		if (!j || t_write_file(path, j, len)) {
			free(j);
			return -1;
		}
		free(j);
		snprintf(path, sizeof(path), "%s/ppm/%02u.ppm", root, i);
		if (write_ppm(path, i))
			return -1;
	}
	return dlc_index_build(root, &g_idx);
}

/*
 * Run @run epochs of a job that says it has @epochs (0: no known end);
 * its stats at the end in *@st. From epoch @quiet on, no form may be
 * displaced: the count once its first batch is out (so that its
 * prepare, which tells the cache, is done, and every form offered
 * before was counted) must be the count at the end.
 */
static void job(uint32_t epochs, uint32_t run, uint32_t quiet,
		struct dlc_stats *st)
{
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;
	struct dlc_stats at;
	struct dlc_batch *b;
	uint32_t e;
	int ret;

	memset(st, 0, sizeof(*st));
	dlc_config_init(&cfg);
	cfg.batch_size = 8;
	cfg.transform.out_w = OUT;
	cfg.transform.out_h = OUT;
	cfg.shuffle = 1;
	cfg.seed = 3;
	cfg.forms = DLC_FORMS_DECODED;
	cfg.epochs = epochs;
	cfg.window = 16;
	cfg.queue_depth = 8;
	cfg.nbatches = 3;
	cfg.decode_threads = 1;
	cfg.cache_bytes = (uint64_t)HELD * FORM;
	cfg.backend = DLC_BACKEND_INPROCESS;
	cfg.log = t_log_capture;
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), 0);
	if (!l)
		return;
	memset(&at, 0, sizeof(at));
	for (e = 0; e < run; e++) {
		uint32_t nb = 0;

		CHECK_EQ(dlc_loader_start_epoch(l, e, 0), 0);
		while (!(ret = dlc_next_batch(l, &b))) {
			if (e == quiet && !nb++)
				CHECK_EQ(dlc_loader_stats(l, &at, sizeof(at)),
					 0);
			dlc_release_batch(l, b);
		}
		CHECK(ret == -ENODATA, "epoch %u ends with %d", e, ret);
	}
	CHECK_EQ(dlc_loader_stats(l, st, sizeof(*st)), 0);
	CHECK_EQ(st->errors, 0);
	CHECK(quiet >= run || st->forms_displaced == at.forms_displaced,
	      "epochs %u: %llu forms displaced from epoch %u on",
	      epochs, (unsigned long long)(st->forms_displaced -
					   at.forms_displaced), quiet);
	printf("  epochs %u, ran %u: %llu forms made, %llu held (%llu bytes), %llu displaced, %llu from forms\n",
	       epochs, run, (unsigned long long)st->forms_made,
	       (unsigned long long)st->forms_held,
	       (unsigned long long)st->forms_bytes,
	       (unsigned long long)st->forms_displaced,
	       (unsigned long long)st->form_hits);
	dlc_loader_destroy(l);
}

static void test_long_job_displaces(void)
{
	struct dlc_stats st;

	/* epochs 0-6 may displace: 7, 8 and 9 are the last three */
	job(10, 10, 7, &st);
	CHECK(st.forms_displaced > 0,
	      "10 epochs: no form displaced (%llu held)",
	      (unsigned long long)st.forms_held);
}

static void test_open_ended_displaces(void)
{
	struct dlc_stats st;

	job(0, 6, 6, &st);
	CHECK(st.forms_displaced > 0,
	      "no known end: no form displaced (%llu held)",
	      (unsigned long long)st.forms_held);
}

static void test_short_job_keeps(void)
{
	struct dlc_stats st;

	job(3, 3, 0, &st);
	/* the cache full of forms: displacing was possible, not allowed */
	CHECK(st.forms_held >= HELD / 2,
	      "3 epochs: only %llu forms held", (unsigned long long)st.forms_held);
	CHECK(st.forms_displaced == 0, "3 epochs: %llu forms displaced",
	      (unsigned long long)st.forms_displaced);
}

int main(void)
{
	if (setup()) {
		fprintf(stderr, "test_forms_payback: setup failed\n");
		return 1;
	}
	T_RUN(test_long_job_displaces);
	T_RUN(test_open_ended_displaces);
	T_RUN(test_short_job_keeps);
	dlc_index_free(g_idx);
	t_rmtree(tmp);
	return t_done("test_forms_payback");
}
