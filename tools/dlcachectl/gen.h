/* SPDX-License-Identifier: MIT */
/*
 * dlcachectl gen's parts, shared between its files: the command (gen.c:
 * arguments, the threads that make the images, encoding, the summary),
 * the images (genimage.c: each one's plan and pixels) and the directory
 * (gendir.c: the stamp, the class folders, leftovers). Not for the other
 * commands.
 */
#ifndef DLCACHECTL_GEN_H
#define DLCACHECTL_GEN_H

#include <stddef.h>
#include <stdint.h>

/* Bump when the output for a given seed changes, so stale sets regenerate. */
#define GEN_VERSION	1
#define STAMP_NAME	".dlcache-gen-done"
#define MAX_CLASSES	1000U		/* class_%03u: names sort as numbers */

struct gen_params {
	const char *dir;
	uint32_t images;
	uint32_t classes;
	uint32_t quality;
	uint64_t seed;
	int distinct;		/* --distinct: visibly different classes */
	int force;
};

/* ---- the images (genimage.c) ---- */

enum img_kind {
	KIND_420 = 0,	/* YCbCr 4:2:0, the camera and web default */
	KIND_444,	/* YCbCr 4:4:4 */
	KIND_GRAY,	/* one component */
	KIND_COUNT
};

/* What image @i is: its size and format (gen_plan_image()). */
struct img_plan {
	uint32_t w, h;
	uint32_t kind;		/* enum img_kind */
	uint32_t progressive;
};

#define PALETTE 5

/* What makes a class recognisable (gen_make_style()). */
struct class_style {
	float pal[PALETTE][3];	/* 0..255 */
	uint32_t motif;		/* enum shape_kind drawn most often */
	float motif_share;	/* share of the shapes drawn as the motif */
	float speck_share;	/* and of the specks */
	float angle;		/* dominant direction, radians */
	float period;		/* texture period, pixels */
	float rough;		/* scale of the lighting detail */
	float grain;		/* pixel noise sigma, 0..255 levels */
};

/* Per-thread scratch, grown to the largest image seen. */
struct canvas {
	uint32_t w, h;
	size_t cap;		/* pixels the planes hold */
	float *px;		/* RGB, interleaved, 0..255 */
	float *field;		/* low-frequency mix of background colours */
	float *detail;		/* lighting, multiplicative, around 0 */
	uint8_t *out;		/* RGB or gray, interleaved */
	float *lattice;		/* value-noise lattice */
	size_t lattice_cap;
	float *lattice_row;	/* one lattice row, interpolated in y */
	size_t row_cap;
	int32_t *col_idx;	/* value-noise column cell and weight */
	float *col_w;
	size_t col_cap;
};

/* Once, before the first gen_render(). */
void gen_sin_table_init(void);
void gen_plan_image(uint64_t seed, int distinct, uint32_t i,
		    struct img_plan *p);
void gen_make_style(uint64_t seed, uint32_t c, struct class_style *st);
/* --distinct: class @c of @classes. */
void gen_make_distinct_style(uint64_t seed, uint32_t c, uint32_t classes,
			     struct class_style *st);
/* Image @image, planned as @pl, into @cv->out; 0 or -ENOMEM. */
int gen_render(struct canvas *cv, const struct class_style *st,
	       uint64_t seed, uint32_t image, const struct img_plan *pl);
void gen_canvas_free(struct canvas *cv);

/* ---- the directory (gendir.c) ---- */

/* The stamp for @p's arguments. */
void gen_stamp_text(const struct gen_params *p, char *buf, size_t len);
int gen_stamp_read(const char *dir, char *buf, size_t len);
int gen_stamp_write(const char *dir, const char *text, char *path,
		    size_t plen);
int gen_mkdir_p(char *path);
int gen_dir_nonempty(const char *dir);
int gen_remove_stale(const struct gen_params *p, char *where, size_t wlen);
int gen_sync_fs(const char *dir);
/* @dir/class_NNN for class @c; -ENAMETOOLONG when it does not fit. */
int gen_class_dir(char *buf, size_t len, const char *dir, uint32_t c);

#endif /* DLCACHECTL_GEN_H */
