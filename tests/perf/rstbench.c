// SPDX-License-Identifier: MIT
/*
 * rstbench: what restart-indexed JPEGs cost and buy, one thread, files in
 * memory (no I/O):
 *
 *   size: the transcodes' bytes against the sources' at each interval
 *   rate: images/s of a full decode of the sources (dlc_decoder_full),
 *         crop-first on the sources (dlc_decoder_sample), crop-first
 *         unchecked on the transcodes, and the MCU-exact decode of the
 *         transcodes (dlc_decoder_sample_rst), train transform at 224
 *         (or --eval).
 *
 *   rstbench [--intervals 1,2,4,0] [--secs S] [--rounds R] [--eval] [--out N] FILE...
 *
 * Times are the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so that
 * other load on the machine counts less; images/s means per CPU second.
 * Interval 0 is one MCU row. Each rate is the best of --rounds (3) timed
 * passes over every file (at least --secs, 1, seconds each); a round runs
 * every system once, so that a busy machine slows them alike.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decode.h"
#include "dlcache.h"
#include "internal.h"
#include "jpegrst.h"

struct file {
	uint8_t *buf;
	size_t len;
};

struct rst {
	uint8_t *buf;
	size_t len;
	struct dlc_rst_geom g;
	uint32_t *rows;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int slurp(const char *path, struct file *f)
{
	FILE *fp = fopen(path, "rb");
	long n;

	if (!fp)
		return -errno;
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	f->buf = malloc(n > 0 ? (size_t)n : 1);
	f->len = f->buf ? fread(f->buf, 1, (size_t)n, fp) : 0;
	fclose(fp);
	return f->buf && f->len == (size_t)n ? 0 : -EIO;
}

enum mode { FULL, CROP_FIRST, CROP_FIRST_RST, MCU_EXACT };

static const char *const mode_names[] = {
	[FULL] = "full decode (sources)",
	[CROP_FIRST] = "crop-first (sources)",
	[CROP_FIRST_RST] = "crop-first unchecked (transcodes)",
	[MCU_EXACT] = "MCU-exact (transcodes)",
};

static int one(struct dlc_decoder *d, enum mode m, const struct file *f,
	       const struct rst *r, const struct dlc_transform *t,
	       uint32_t epoch, uint32_t i, uint8_t *dst)
{
	uint8_t *rgb;
	uint32_t w, h;
	int ret;

	switch (m) {
	case FULL:
		ret = dlc_decoder_full(d, f->buf, f->len, &rgb, &w, &h);
		if (!ret)
			free(rgb);
		return ret;
	case CROP_FIRST:
		return dlc_decoder_sample(d, f->buf, f->len, t, 1, epoch, i,
					  DLC_LAYOUT_NCHW, dst, NULL);
	case CROP_FIRST_RST:
		return dlc_decoder_sample_method(d, r->buf, r->len, t, 1,
						 epoch, i, DLC_LAYOUT_NCHW,
						 DLC_DECODE_CROP_FIRST_UNCHECKED,
						 dst, NULL);
	case MCU_EXACT:
		return dlc_decoder_sample_rst(d, r->buf, r->len, &r->g,
					      r->rows, t, 1, epoch, i,
					      DLC_LAYOUT_NCHW, dst, NULL);
	}
	return -EINVAL;
}

/* images/s of one timed pass of at least @secs. */
static double rate(struct dlc_decoder *d, enum mode m, const struct file *fs,
		   const struct rst *rs, uint32_t n,
		   const struct dlc_transform *t, double secs, uint8_t *dst,
		   uint32_t *epoch)
{
	uint32_t i, done = 0;
	double t0 = now(), dt;
	int ret;

	do {
		for (i = 0; i < n; i++, done++) {
			ret = one(d, m, &fs[i], rs ? &rs[i] : NULL, t, *epoch,
				  i, dst);
			if (ret) {
				fprintf(stderr, "rstbench: %s: file %u: %s\n",
					mode_names[m], i, dlc_decoder_error(d));
				exit(1);
			}
		}
		++*epoch;
		dt = now() - t0;
	} while (dt < secs);
	return done / dt;
}

static void best(double *b, double r)
{
	if (r > *b)
		*b = r;
}

int main(int argc, char **argv)
{
	uint32_t intervals[8] = { 1, 2, 4, 0 }, nint = 4, n = 0, i, k;
	double secs = 1.0, r_full = 0, r_cf = 0, r_cfr[8] = { 0 };
	double r_mcu[8] = { 0 };
	uint64_t src_bytes = 0, bytes[8] = { 0 }, intv[8] = { 0 };
	uint32_t rounds = 3, round, epoch = 0;
	struct dlc_transform t;
	struct dlc_decoder *d;
	struct file *fs;
	struct rst *rs[8];
	uint32_t out = 224;
	int eval = 0, a;
	uint8_t *dst;
	char why[256];

	for (a = 1; a < argc && argv[a][0] == '-'; a++) {
		if (!strcmp(argv[a], "--intervals") && a + 1 < argc) {
			char *p = argv[++a];

			for (nint = 0; nint < 8 && *p; nint++) {
				intervals[nint] = (uint32_t)strtoul(p, &p, 10);
				if (*p == ',')
					p++;
			}
		} else if (!strcmp(argv[a], "--secs") && a + 1 < argc) {
			secs = atof(argv[++a]);
		} else if (!strcmp(argv[a], "--rounds") && a + 1 < argc) {
			rounds = (uint32_t)atoi(argv[++a]);
		} else if (!strcmp(argv[a], "--out") && a + 1 < argc) {
			out = (uint32_t)atoi(argv[++a]);
		} else if (!strcmp(argv[a], "--eval")) {
			eval = 1;
		} else {
			fprintf(stderr, "usage: rstbench [--intervals 1,2,4,0] [--secs S] [--rounds R] [--eval] [--out N] FILE...\n");
			return 2;
		}
	}
	fs = calloc((size_t)(argc - a) + 1, sizeof(*fs));
	for (; a < argc; a++) {
		if (slurp(argv[a], &fs[n])) {
			fprintf(stderr, "rstbench: cannot read %s\n", argv[a]);
			return 1;
		}
		src_bytes += fs[n].len;
		n++;
	}
	if (!n || dlc_decoder_create(0, &d))
		return 1;
	dlc_transform_default(&t, eval ? DLC_TRANSFORM_EVAL :
			      DLC_TRANSFORM_TRAIN);
	t.out_w = t.out_h = out;
	if (eval)
		t.resize = out * 8 / 7;
	dst = malloc((size_t)out * out * 3);
	printf("%u files, %.1f MB, %s %ux%u, 1 thread\n", n, src_bytes / 1e6,
	       eval ? "eval" : "train", out, out);
	for (k = 0; k < nint; k++) {
		struct dlc_rst_opts o = { .interval = intervals[k] };
		const char *w2;

		rs[k] = calloc(n, sizeof(*rs[k]));
		for (i = 0; i < n; i++) {
			struct rst *r = &rs[k][i];

			if (dlc_rst_transcode(fs[i].buf, fs[i].len, &o, 0,
					      &r->buf, &r->len, why,
					      sizeof(why))) {
				fprintf(stderr, "rstbench: transcode of file %u: %s\n",
					i, why);
				return 1;
			}
			r->rows = malloc((DLC_RST_MAX_ROWS + 1) *
					 sizeof(uint32_t));
			if (dlc_rst_parse(r->buf, r->len, &r->g, r->rows,
					  &w2)) {
				fprintf(stderr, "rstbench: parse of file %u: %s\n",
					i, w2);
				return 1;
			}
			bytes[k] += r->len;
			intv[k] += r->g.interval;
		}
	}
	/* dlc_rst_parse() of the first interval's transcodes */
	{
		uint32_t *rows = malloc((DLC_RST_MAX_ROWS + 1) *
					sizeof(uint32_t));
		struct dlc_rst_geom g;
		const char *w2;
		double t0 = now(), dt;
		uint64_t parsed = 0;

		do {
			for (i = 0; i < n; i++) {
				dlc_rst_parse(rs[0][i].buf, rs[0][i].len, &g,
					      rows, &w2);
				parsed += rs[0][i].len;
			}
			dt = now() - t0;
		} while (dt < 0.5);
		printf("dlc_rst_parse (interval %u): %.0f MB/s\n",
		       intervals[0], parsed / dt / 1e6);
		free(rows);
	}
	/* rounds: every system once a round, so that noise hits them alike */
	for (round = 0; round < rounds; round++) {
		best(&r_full, rate(d, FULL, fs, NULL, n, &t, secs, dst,
				   &epoch));
		best(&r_cf, rate(d, CROP_FIRST, fs, NULL, n, &t, secs, dst,
				 &epoch));
		for (k = 0; k < nint; k++) {
			best(&r_cfr[k], rate(d, CROP_FIRST_RST, fs, rs[k], n,
					     &t, secs, dst, &epoch));
			best(&r_mcu[k], rate(d, MCU_EXACT, fs, rs[k], n, &t,
					     secs, dst, &epoch));
		}
	}
	printf("best of %u rounds\n", rounds);
	printf("%-40s %9.1f images/s\n", mode_names[FULL], r_full);
	printf("%-40s %9.1f images/s\n", mode_names[CROP_FIRST], r_cf);
	for (k = 0; k < nint; k++) {
		printf("interval %u%s (mean %.1f MCUs): %.2f MB, %+.2f %% vs the sources\n",
		       intervals[k], intervals[k] ? " MCUs" : " (one MCU row)",
		       (double)intv[k] / n, bytes[k] / 1e6,
		       100.0 * ((double)bytes[k] - src_bytes) / src_bytes);
		printf("  %-38s %9.1f images/s\n", mode_names[CROP_FIRST_RST],
		       r_cfr[k]);
		printf("  %-38s %9.1f images/s (%.2fx crop-first on the sources)\n",
		       mode_names[MCU_EXACT], r_mcu[k], r_mcu[k] / r_cf);
	}
	for (k = 0; k < nint; k++) {
		for (i = 0; i < n; i++) {
			free(rs[k][i].buf);
			free(rs[k][i].rows);
		}
		free(rs[k]);
	}
	for (i = 0; i < n; i++)
		free(fs[i].buf);
	free(fs);
	free(dst);
	dlc_decoder_destroy(d);
	return 0;
}
