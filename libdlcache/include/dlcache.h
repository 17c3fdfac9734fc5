/* SPDX-License-Identifier: MIT */
/*
 * libdlcache: shuffled, cached, decoded mini-batches for training.
 *
 * Conventions, as in liburing: every function that can fail returns 0 (or
 * a count) on success and a negative errno on failure. The library never
 * calls exit() and never prints unless a log callback is set in the
 * config. Objects are not thread safe unless a function says so.
 */
#ifndef DLCACHE_H
#define DLCACHE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Logging                                                             */
/* ------------------------------------------------------------------ */

enum dlc_log_level {
	DLC_LOG_ERROR = 0,	/* a sample or the loader failed */
	DLC_LOG_WARN = 1,	/* degraded: fallback, unpinned memory, skip */
	DLC_LOG_INFO = 2,	/* one-off facts: backend chosen, sizes */
};

/*
 * Log callback. @msg is one line without a trailing newline. Called from
 * any library thread; the callee must be thread safe.
 */
typedef void (*dlc_log_fn)(void *arg, int level, const char *msg);

/* A ready-made callback that writes "dlcache: <msg>\n" to stderr. */
void dlc_log_stderr(void *arg, int level, const char *msg);

/* ------------------------------------------------------------------ */
/* Index: the samples of an ImageFolder data set                       */
/* ------------------------------------------------------------------ */

struct dlc_index;

/*
 * Build an index of @root in ImageFolder layout: each subdirectory is a
 * class, classes sorted by name and numbered from 0, files in each class
 * sorted by name, as torchvision does. Files are taken by torchvision's
 * image extensions (.jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp, any
 * case); the decoder reads each by its content (dlc_decoder_full()).
 * Returns 0, -ENOENT / -ENOTDIR / -EACCES for @root, -ENODATA when no
 * class holds a sample, -ENOMEM, the errno of an unreadable subdirectory,
 * -ELOOP for a symlink cycle, -ENAMETOOLONG for a path of PATH_MAX or
 * more, or -E2BIG past 2^28 samples. Every sample is read once to record
 * the CRC-32C of its bytes (a file that cannot be read gets none).
 */
int dlc_index_build(const char *root, struct dlc_index **out);

/* Most samples an index holds. */
#define DLC_INDEX_MAX_SAMPLES	(1U << 28)
/*
 * Largest index file dlc_index_load() reads: DLC_INDEX_MAX_SAMPLES lines
 * of a sample (a path of PATH_MAX, 4096, every byte escaped as 3, plus
 * 64 for the numbers) and as many class lines (a name of 255 bytes
 * escaped, plus 8), and 4 x 4096 for the header: about 3.2 TiB. A file
 * that says it is larger cannot be valid.
 */
#define DLC_INDEX_MAX_FILE_BYTES					\
	((uint64_t)DLC_INDEX_MAX_SAMPLES * (3 * 4096 + 64 + 3 * 255 + 8) + \
	 4 * 4096)

/*
 * Save to / load from an index file (text, versioned). Loading checks the
 * header, every field and the stored key. -EBADMSG for a malformed file,
 * -EISDIR for a directory, -EINVAL for anything else that is not a
 * regular file (a device such as /dev/zero, a FIFO), -EFBIG for a file
 * over DLC_INDEX_MAX_FILE_BYTES or over what its header's sample and
 * class counts allow (the same sum for those counts), -ENOMEM, or the
 * errno of open/read. The file is read in steps, its buffer grown with
 * the bytes read (never sized from the file's size alone), and a NUL
 * byte fails at once with -EBADMSG: a sparse file costs one step.
 * Format 2 holds the checksums; a format 1 file (older libdlcache) loads
 * with every checksum absent and saves as format 1 again.
 *
 * The path may name a pack (a .dlp written by `dlcachectl pack`,
 * Documentation/pack.md; recognised by its magic, not its name): the
 * index then lists the pack's samples (paths, labels, the sizes and
 * CRC-32C of the bytes as packed), its root is the pack's own path
 * (realpath), its key is the pack's (never the source index's), and
 * the loader reads the samples from the pack. A pack is checked whole on
 * load: -EBADMSG for any field out of place, -EPROTO for a pack version
 * this library does not read. dlc_index_save() of such an index is
 * -EINVAL (the pack is the file), as is dlc_index_load_at() of a pack
 * with a @root (a pack holds its bytes).
 */
int dlc_index_save(const struct dlc_index *idx, const char *path);
int dlc_index_load(const char *path, struct dlc_index **out);
/*
 * dlc_index_load() with the data set at @root instead of the root stored
 * in the file (a data set moved or mounted elsewhere); NULL keeps the
 * stored one. @root is resolved with realpath(): -ENOENT (or its errno)
 * when it does not exist, -ENOTDIR when not a directory, -ENAMETOOLONG
 * when a sample's path under it would reach PATH_MAX. The key does not
 * change: the root is not hashed. The files are not checked here; a
 * sample missing under @root fails when read, as any other.
 */
int dlc_index_load_at(const char *path, const char *root,
		      struct dlc_index **out);
void dlc_index_free(struct dlc_index *idx);

uint32_t dlc_index_count(const struct dlc_index *idx);
uint32_t dlc_index_num_classes(const struct dlc_index *idx);
/* Data set root directory. */
const char *dlc_index_root(const struct dlc_index *idx);
/* Class name of class @c, or NULL when out of range. */
const char *dlc_index_class_name(const struct dlc_index *idx, uint32_t c);
/* Path of sample @id relative to the root, or NULL when out of range. */
const char *dlc_index_relpath(const struct dlc_index *idx, uint32_t id);
/* Label (class number) of sample @id, or -1 when out of range. */
int32_t dlc_index_label(const struct dlc_index *idx, uint32_t id);
/*
 * File size recorded at indexing, or 0 when out of range. Kept for
 * compatibility: 0 is also an empty file's size; dlc_index_sample_size()
 * tells the two apart.
 */
uint64_t dlc_index_size(const struct dlc_index *idx, uint32_t id);
/*
 * Sample @id's file size recorded at indexing (the bytes as packed, for a
 * pack) in *@size: 0, or -ERANGE when @id is out of range (*@size then
 * untouched).
 */
int dlc_index_sample_size(const struct dlc_index *idx, uint32_t id,
			  uint64_t *size);
/* Sum of all sample sizes. */
uint64_t dlc_index_total_bytes(const struct dlc_index *idx);
/*
 * CRC-32C (Castagnoli, as iSCSI and ext4) of sample @id's bytes, recorded
 * at indexing. Returns 0 with *@crc set, -ENODATA when the index holds
 * none for it (a format 1 index, or a file unreadable at indexing), or
 * -EINVAL when @id is out of range.
 */
int dlc_index_crc32c(const struct dlc_index *idx, uint32_t id, uint32_t *crc);
/*
 * The data set key: 128 bits hashed over the index's content (paths,
 * labels, sizes) with the sample count in the low 32 bits of key[1].
 * The root is not hashed: the same files elsewhere have the same key.
 * Neither are the checksums: both index formats give the same key.
 */
void dlc_index_key(const struct dlc_index *idx, uint64_t key[2]);

/* ------------------------------------------------------------------ */
/* Order: deterministic shuffles, sharded like DistributedSampler      */
/* ------------------------------------------------------------------ */

struct dlc_order_params {
	uint64_t seed;		/* shuffle seed, the same on every rank */
	uint32_t epoch;		/* epoch number; the permutation depends on it */
	uint32_t rank;		/* this process's rank, < world */
	uint32_t world;		/* number of ranks, >= 1 */
	uint32_t shuffle;	/* 0: identity order (eval) */
	uint32_t drop_last;	/* 1: drop the tail; 0: pad by wrapping */
	uint32_t pad;		/* must be zero */
};

/*
 * Samples per rank per epoch for @n samples, as DistributedSampler: with
 * drop_last, floor(n / world); otherwise ceil(n / world), the global order
 * padded by repeating its head. 0 for bad arguments.
 */
uint32_t dlc_order_len(uint32_t n, const struct dlc_order_params *p);

/*
 * Write this rank's order of the epoch into @out (@len must equal
 * dlc_order_len()). The global permutation is a Fisher-Yates shuffle
 * driven by a counter-based generator keyed by (seed, epoch); rank r takes
 * global positions r, r + world, r + 2 world, ... Returns 0, -EINVAL or
 * -ENOMEM (a shuffle needs 4 * @n bytes of scratch).
 */
int dlc_order_fill(uint32_t n, const struct dlc_order_params *p,
		   uint32_t *out, uint32_t len);

/*
 * Elastic resume: the rest of an epoch at another world size. After the
 * first @done positions of epoch p->epoch's global order were used (a job
 * whose @W ranks each took k samples used k * W of them), the rest, the
 * permutation's positions [@done, @n), is sharded over p->world ranks as a
 * whole order is: rank r takes its positions r, r + world, ..., padded by
 * repeating the rest's head (p->drop_last 0) or cut to an equal share
 * (p->drop_last 1). So every sample of the epoch is used once across the
 * two runs (the padding aside), whatever both world sizes are.
 *
 * dlc_order_rest_len() sets *@len to this rank's share (0 when @done >=
 * @n: the epoch is over); dlc_order_fill_rest() writes it into @out (@len
 * must equal it). 0, -EINVAL or -ENOMEM (4 * @n bytes of scratch).
 */
int dlc_order_rest_len(uint32_t n, const struct dlc_order_params *p,
		       uint64_t done, uint32_t *len);
int dlc_order_fill_rest(uint32_t n, const struct dlc_order_params *p,
			uint64_t done, uint32_t *out, uint32_t len);

/* ------------------------------------------------------------------ */
/* Transforms and decode                                               */
/* ------------------------------------------------------------------ */

enum dlc_transform_kind {
	/* RandomResizedCrop(out, scale, ratio) + RandomHorizontalFlip */
	DLC_TRANSFORM_TRAIN = 0,
	/* Resize(shorter side = resize) + CenterCrop(out) */
	DLC_TRANSFORM_EVAL = 1,
};

enum dlc_layout {
	DLC_LAYOUT_NCHW = 0,	/* planes R, G, B of out_h x out_w */
	DLC_LAYOUT_NHWC = 1,	/* rows of interleaved RGB */
};

/* Largest output side accepted. */
#define DLC_MAX_OUT_SIDE	4096
/* Default cap on source pixels (width x height), a decompression-bomb guard. */
#define DLC_DEFAULT_MAX_PIXELS	(64ULL * 1024 * 1024)
/*
 * Default cap on the scans of one JPEG (dlc_config.max_scans). Baseline
 * has 1, libjpeg's progressive script 6 (gray) or 10, the most any common
 * encoder writes about 20; each scan is a pass over the whole image
 * (about 20 ms at 64 Mpixels).
 */
#define DLC_DEFAULT_MAX_SCANS	64
/*
 * Default CPU budget of one sample's decode (dlc_config.decode_budget_ms):
 * this many ms plus 1 ms per 16 Ki pixels of the image (6.1 s at the
 * default max_pixels, 7x what a dense 64 Mpixel progressive image takes).
 */
#define DLC_DEFAULT_DECODE_BUDGET_MS	2000

struct dlc_transform {
	uint32_t kind;		/* enum dlc_transform_kind */
	uint32_t out_w;		/* output width, 1 .. DLC_MAX_OUT_SIDE */
	uint32_t out_h;		/* output height, 1 .. DLC_MAX_OUT_SIDE */
	uint32_t resize;	/* eval: shorter side before the crop, >= out */
	float scale_min;	/* train: area fraction range, 0 < min <= max <= 1 */
	float scale_max;
	float ratio_min;	/* train: aspect (w/h) range, 0 < min <= max */
	float ratio_max;
	uint32_t hflip;		/* train: 1 flips with probability 1/2 */
	uint32_t flags;		/* DLC_TRANSFORM_F_*; other bits: -EINVAL */
};

/*
 * Decode every sample at DCT scale 1, as torchvision on the PIL image
 * does: the output is then torchvision's resized_crop() + hflip() (train)
 * or Resize + CenterCrop (eval) of the same box to within 1 level per
 * pixel (measured: bit-exact). Without it, a crop at least twice the
 * output on both sides is decoded at 1/2, 1/4 or 1/8 scale, faster but
 * not equal: against torchvision at full scale, a sample's mean
 * |difference| stays within 3.0 levels and the 99.9th percentile of its
 * |differences| within 40 (about 0.5 on average over real photographs;
 * Documentation/library.md, "Exactness"). Smaller crops are exact anyway.
 */
#define DLC_TRANSFORM_F_EXACT	(1u << 0)
#define DLC_TRANSFORM_F_ALL	DLC_TRANSFORM_F_EXACT

/* Fill @t with torchvision's ImageNet defaults for @kind at 224 x 224. */
void dlc_transform_default(struct dlc_transform *t, uint32_t kind);

/* Check @t; -EINVAL with a reason in @why (if not NULL) when bad. */
int dlc_transform_check(const struct dlc_transform *t, const char **why);

/* A crop box in source pixel coordinates, and whether to flip. */
struct dlc_crop {
	double x, y;		/* top left corner */
	double w, h;		/* size, > 0, within the image */
	uint32_t flip;		/* 1: mirror the output horizontally */
	uint32_t pad;
};

/*
 * The crop of sample @sample in epoch @epoch for an image of @img_w x
 * @img_h, following torchvision's sampling rules (ten tries, then the
 * center-crop fallback). A pure function of its arguments.
 * Returns 0 or -EINVAL.
 */
int dlc_transform_crop(const struct dlc_transform *t, uint64_t seed,
		       uint32_t epoch, uint32_t sample, uint32_t img_w,
		       uint32_t img_h, struct dlc_crop *out);

/* What a JPEG header says. */
struct dlc_jpeg_info {
	uint32_t width;
	uint32_t height;
	uint32_t components;	/* 1 gray, 3 YCbCr/RGB, 4 CMYK/YCCK */
	uint32_t progressive;	/* 1 for progressive (SOF2) */
	uint32_t h_samp;	/* luma sampling factors: 2x2 is 4:2:0 */
	uint32_t v_samp;
};

/* Why a decode failed; counted per kind in the stats. */
enum dlc_error_kind {
	DLC_ERR_NONE = 0,
	DLC_ERR_IO,		/* open or read failed (EIO, EACCES, ...) */
	DLC_ERR_MISSING,	/* the file vanished (ENOENT) */
	DLC_ERR_EMPTY,		/* zero bytes */
	DLC_ERR_NOT_JPEG,	/* not an image: no format's magic (not_jpeg) */
	DLC_ERR_CORRUPT,	/* libjpeg reported bad data */
	DLC_ERR_TRUNCATED,	/* the data ended early */
	DLC_ERR_TOO_LARGE,	/* over max_pixels, a decode budget, the size limit */
	DLC_ERR_NOMEM,		/* out of memory */
	DLC_ERR_KINDS		/* number of kinds */
};

/* Short name of @kind ("corrupt", "truncated", ...). */
const char *dlc_error_kind_name(uint32_t kind);

/* A per-thread JPEG decoder; reuse it, it holds libjpeg state. */
struct dlc_decoder;

/* @max_pixels: cap on width x height, 0 for DLC_DEFAULT_MAX_PIXELS. */
int dlc_decoder_create(uint64_t max_pixels, struct dlc_decoder **out);
void dlc_decoder_destroy(struct dlc_decoder *d);

/*
 * Reason for the decoder's last failure: its kind and a one-line message
 * (valid until the next call on @d).
 */
uint32_t dlc_decoder_error_kind(const struct dlc_decoder *d);
const char *dlc_decoder_error(const struct dlc_decoder *d);

/* Parse the header only. -EBADMSG (kind set) when it is not a good JPEG. */
int dlc_decoder_header(struct dlc_decoder *d, const void *buf, size_t len,
		       struct dlc_jpeg_info *info);

/*
 * Full decode to packed RGB (width * 3 bytes a row) in a malloc'd buffer
 * that the caller frees. Gray and CMYK/YCCK are converted to RGB. Besides
 * JPEG, PNG, WebP, BMP, PPM/PGM/PBM and TIFF (known by their first bytes,
 * not their names) decode to the pixels of Pillow's
 * Image.open(f).convert("RGB"); library.md, "Image formats".
 * dlc_decoder_sample() and dlc_decoder_crop() take them too, decoded
 * whole and then cropped as a JPEG at scale 1.
 * Returns 0, -EBADMSG (corrupt, truncated, empty, not an image), -E2BIG
 * (over max_pixels) or -ENOMEM.
 */
int dlc_decoder_full(struct dlc_decoder *d, const void *buf, size_t len,
		     uint8_t **rgb, uint32_t *width, uint32_t *height);

/*
 * Crop-first decode of one sample straight into its batch slot: parse the
 * header, draw the crop with dlc_transform_crop(), decode only that region
 * at the smallest DCT scale (1/8, 1/4, 1/2, 1) whose output still covers
 * out_w x out_h (always 1 with DLC_TRANSFORM_F_EXACT), resize with an
 * antialiased bilinear filter, flip, and write out_w x out_h x 3 bytes in
 * @layout to @dst. Train: the crop is resized as an image of its own
 * (torchvision's img.crop(box).resize()); eval: the window of the whole
 * image's resize. @crop_out, if not NULL, receives the crop used. Same
 * errors as dlc_decoder_full(): the rest of the file is entropy-decoded
 * (without IDCT) and read to EOI, so a file that dlc_decoder_full()
 * rejects fails here too, whatever the crop (DLC_DECODE_CROP_FIRST). On
 * failure @dst holds no useful pixels.
 */
int dlc_decoder_sample(struct dlc_decoder *d, const void *buf, size_t len,
		       const struct dlc_transform *t, uint64_t seed,
		       uint32_t epoch, uint32_t sample, uint32_t layout,
		       uint8_t *dst, struct dlc_crop *crop_out);

/*
 * The sample of dlc_decoder_sample() from an image already decoded whole
 * at full resolution: @rgb, @width x @height packed RGB as
 * dlc_decoder_full() gives it. The pixels are those dlc_decoder_sample()
 * gives with DLC_TRANSFORM_F_EXACT on the bytes @rgb was decoded from,
 * bit for bit (the resize sees the same scale-1 pixels), whatever @t's
 * flags; no decode is done. This is what a decoded form of a sample
 * serves (dlc_config.forms). Returns 0, or -EINVAL (no image, one over
 * the decoder's max_pixels, a bad transform or output).
 */
int dlc_decoder_sample_rgb(struct dlc_decoder *d, const uint8_t *rgb,
			   uint32_t width, uint32_t height,
			   const struct dlc_transform *t, uint64_t seed,
			   uint32_t epoch, uint32_t sample, uint32_t layout,
			   uint8_t *dst, struct dlc_crop *crop_out);

/*
 * How a sample is decoded (dlc_decoder_sample_method(), dlc_decoder_crop()).
 * dlc_decoder_crop() resizes its given crop as an image of its own, as in
 * train (for an integer box, Pillow's img.crop(box).resize((out_w, out_h),
 * BILINEAR); the pixels that a fractional box cuts through are taken
 * whole).
 */
enum dlc_decode_method {
	/* crop-first, checked: the path of dlc_decoder_sample() */
	DLC_DECODE_CROP_FIRST = 0,
	/* full decode at scale 1, then crop and resize: the reference */
	DLC_DECODE_FULL_THEN_CROP = 1,
	/*
	 * crop-first, unchecked: stops after the crop's last row. Damage
	 * below it (garbled entropy data, a bad marker, a tail cut off and
	 * an EOI appended) goes unseen and the sample decodes; only a file
	 * without an EOI marker still fails as truncated. Damage above or
	 * beside the crop, and anywhere in a multi-scan (progressive) file,
	 * is still caught. For bytes already checked once.
	 */
	DLC_DECODE_CROP_FIRST_UNCHECKED = 2,
};

/* dlc_decoder_sample() with a method of enum dlc_decode_method. */
int dlc_decoder_sample_method(struct dlc_decoder *d, const void *buf,
			      size_t len, const struct dlc_transform *t,
			      uint64_t seed, uint32_t epoch, uint32_t sample,
			      uint32_t layout, uint32_t method, uint8_t *dst,
			      struct dlc_crop *crop_out);

/* The same pipeline with a given crop, and a choice of method. */
int dlc_decoder_crop(struct dlc_decoder *d, const void *buf, size_t len,
		     const struct dlc_crop *crop, uint32_t out_w,
		     uint32_t out_h, uint32_t layout, uint32_t method,
		     uint8_t *dst);

/*
 * Antialiased bilinear resize (a triangle filter widened by the downscale
 * factor, as PIL and torchvision's antialias=True) of the box @box of a
 * packed RGB image @src (@src_w x @src_h, @src_stride bytes a row) to
 * @out_w x @out_h, mirrored when box->flip, written in @layout to @dst.
 * This is Pillow's Image.resize(size, BILINEAR, box=box): the filter
 * reaches past the box, up to the image's edges. For torchvision's
 * resized_crop (img.crop(box).resize(size)), pass the crop as the image:
 * @src at its first pixel, its size, and a box of all of it.
 * Returns 0, -EINVAL or -ENOMEM.
 */
int dlc_resize_rgb(const uint8_t *src, uint32_t src_w, uint32_t src_h,
		   size_t src_stride, const struct dlc_crop *box,
		   uint32_t out_w, uint32_t out_h, uint32_t layout,
		   uint8_t *dst);

/* ------------------------------------------------------------------ */
/* Loader: batches of decoded samples                                  */
/* ------------------------------------------------------------------ */

/*
 * What a failed sample does. Under DLC_ON_ERROR_SKIP an epoch delivers the
 * batch grid over the order (batch k is positions k * batch_size ..
 * (k + 1) * batch_size - 1) minus the samples that failed: a batch keeps
 * its seq and holds its surviving samples in order, so it may be short,
 * and a batch none of whose samples survived is not delivered at all
 * (dlc_next_batch() goes on to the next one; its seq is missing). A SKIP
 * epoch therefore never hands out an empty batch, the same seed gives the
 * same batches, and a resumed epoch gives those of an uninterrupted one.
 */
enum dlc_on_error {
	DLC_ON_ERROR_SKIP = 0,		/* drop the sample; the batch is shorter */
	DLC_ON_ERROR_SUBSTITUTE = 1,	/* decode another sample in its slot */
	DLC_ON_ERROR_FAIL = 2,		/* dlc_next_batch() returns the error */
};

/*
 * Where the cache lives. The environment variable DLCACHE_BACKEND
 * ("auto", "inprocess" or "kernel") overrides the config.
 */
enum dlc_backend {
	/* dlcache.ko when /dev/dlcache can be used, else in-process (logged) */
	DLC_BACKEND_AUTO = 0,
	/* a cache of cache_bytes in this process only */
	DLC_BACKEND_INPROCESS = 1,
	/* the node-wide cache of dlcache.ko, shared by every process; fail
	 * dlc_loader_create() with its errno when it cannot be used */
	DLC_BACKEND_KERNEL = 2,
};

/* "auto", "inprocess", "kernel", or "?" */
const char *dlc_backend_name(uint32_t backend);

/*
 * What the loader does when the kernel backend fails after
 * dlc_loader_create() chose it: dlcache.ko drained by an administrator
 * (DLCACHE_IOC_DRAIN: ENTER fails with ESHUTDOWN, poll() reports
 * POLLHUP), or any other failed ENTER. The environment variable
 * DLCACHE_KERNEL_FALLBACK ("inprocess" or "fail") overrides the config.
 * Whether the kernel backend is used at all is the backend's (enum
 * dlc_backend) choice, made at creation.
 */
enum dlc_kernel_fallback {
	/*
	 * Default, for DLC_BACKEND_AUTO and DLC_BACKEND_KERNEL alike: log
	 * one WARN line naming the cause ("dlcache.ko: ENTER failed: ...;
	 * continuing on the in-process cache (kernel_fallback)"), let go of
	 * the module (its fd closed, the ring unmapped, fills handed over),
	 * read directly every sample whose GET was in flight or whose fill
	 * this process owned, and go on with an in-process cache of
	 * cache_bytes. The batches are those of an uninterrupted run;
	 * dlc_loader_backend() says DLC_BACKEND_INPROCESS from then on and
	 * stats.kernel_fallbacks counts the switch.
	 */
	DLC_KERNEL_FALLBACK_INPROCESS = 0,
	/*
	 * Fail as before this field existed: an ERROR line, and
	 * dlc_next_batch() returns the error (-ESHUTDOWN for a drain) until
	 * the loader is destroyed, which lets go of the module.
	 */
	DLC_KERNEL_FALLBACK_FAIL = 1,
};

/* "inprocess", "fail", or "?" */
const char *dlc_kernel_fallback_name(uint32_t fallback);

/*
 * Which sample bytes are checked against the CRC-32C the index recorded,
 * before decode. The environment variable DLCACHE_VERIFY ("kernel", "off"
 * or "all") overrides the config. Indexes without checksums (format 1)
 * check nothing.
 */
enum dlc_verify {
	/*
	 * Bytes served by dlcache.ko (default): written by other processes,
	 * so checked; a mismatch counts in checksum_errors, is logged once
	 * per sample, and the sample is read from its file instead.
	 */
	DLC_VERIFY_KERNEL = 0,
	/* Nothing is checked. */
	DLC_VERIFY_OFF = 1,
	/*
	 * Also every read from storage: a file that no longer matches its
	 * index fails as "corrupt" (on_error applies) and is never offered
	 * to a cache.
	 */
	DLC_VERIFY_ALL = 2,
};

/* "kernel", "off", "all", or "?" */
const char *dlc_verify_name(uint32_t verify);

/*
 * Whether a sample's whole file is decoded to check it, beyond the rows
 * its crop needs. A file that dlc_decoder_full() rejects (garbled entropy
 * data, a bad marker, a cut-off tail) fails as corrupt or truncated and
 * on_error applies, whichever rows the crop takes. The environment
 * variable DLCACHE_VALIDATE ("once", "always" or "off") overrides it.
 * A checked decode costs 7-9% more CPU than an unchecked one, still no
 * more than a full decode; measurements in Documentation/library.md,
 * "Checking the whole file".
 */
enum dlc_validate {
	/*
	 * Default: each sample's first decode in this loader is checked
	 * (DLC_DECODE_CROP_FIRST); later ones stop after the crop
	 * (DLC_DECODE_CROP_FIRST_UNCHECKED) when the bytes are the same:
	 * their CRC-32C, computed on every decode, must equal the index's,
	 * as when the check passed. A sample without a recorded checksum,
	 * or whose bytes no longer match it, is checked every time. Costs
	 * the checked price in the first epoch, then a CRC-32C pass per
	 * decode (under 1% of decoding).
	 */
	DLC_VALIDATE_ONCE = 0,
	/* Every decode is checked. */
	DLC_VALIDATE_ALWAYS = 1,
	/*
	 * Never: damage below a crop's rows goes unseen (see
	 * DLC_DECODE_CROP_FIRST_UNCHECKED): a corrupt file may train.
	 */
	DLC_VALIDATE_OFF = 2,
};

/* "once", "always", "off", or "?" */
const char *dlc_validate_name(uint32_t validate);

/* kernel_owner_uid: the data set of this process's own uid. */
#define DLC_OWNER_SELF		UINT32_MAX

/*
 * The loader's configuration. Make it with dlc_config_init(), then change
 * fields. Extensible in the manner of clone3() and statx(): @size says
 * which version of the struct the caller was built with, and the loader
 * takes fields past it (a caller built against an older header) at their
 * dlc_config_init() defaults. The reserved space it had is spent: new
 * fields are appended (library.md, "How the structs grow from here"), and
 * a caller's bytes past this library's struct must be zero.
 */
struct dlc_config {
	/*
	 * sizeof(struct dlc_config) as the caller was built, set by
	 * dlc_config_init(). dlc_loader_create() accepts any size from
	 * DLC_CONFIG_SIZE_VER0 up; bytes past its own struct must be zero.
	 */
	uint32_t size;
	uint32_t batch_size;	/* samples per batch, 1 .. 65536 */
	uint32_t layout;	/* enum dlc_layout */
	struct dlc_transform transform;
	uint64_t seed;		/* shuffle and augmentation seed */
	uint32_t shuffle;	/* 1: shuffle each epoch (train) */
	/*
	 * 1: drop the last partial batch of the epoch, as DataLoader's
	 * drop_last. Shards are shard_drop_last's.
	 */
	uint32_t drop_last;
	uint32_t rank;		/* DDP rank, < world */
	uint32_t world;		/* DDP world size, >= 1 */
	/*
	 * 0: one per CPU this process may use (its sched_getaffinity() set,
	 * capped by the cgroup CPU quota rounded up), less the I/O thread,
	 * at least 1. dlc_loader_decode_threads() says what was chosen.
	 */
	uint32_t decode_threads;
	uint32_t queue_depth;	/* io_uring reads in flight, 1 .. 4096 */
	uint32_t window;	/* look-ahead window in samples, >= 1 */
	uint32_t nbatches;	/* batch buffers in the ring, 2 .. 64 */
	uint32_t on_error;	/* enum dlc_on_error */
	uint32_t backend;	/* enum dlc_backend */
	uint64_t cache_bytes;	/* in-process cache capacity, 0 disables it */
	uint64_t max_pixels;	/* decompression-bomb cap, 0: default */
	/*
	 * Larger samples fail as too large (-EFBIG). dlc_config_init() sets
	 * 64 MiB; 0 means no limit (a sample then takes as much memory as its
	 * file is long, 4 GiB and more included).
	 */
	uint64_t max_file_bytes;
	uint32_t direct_io;	/* 1: O_DIRECT where the file system allows */
	uint32_t max_read_bytes; /* split reads to at most this, 0: 1 GiB chunks */
	dlc_log_fn log;		/* NULL: silent */
	void *log_arg;
	uint32_t log_level;	/* highest level passed to @log */
	/*
	 * Kernel backend: permission bits of a data set this process creates
	 * in dlcache.ko (0600, 0640 or 0660 style; 0 means 0600). Processes
	 * of other users reach it only by naming this user as the owner they
	 * trust (kernel_owner_uid), and only as the mode allows.
	 */
	uint32_t kernel_mode;
	/*
	 * Kernel backend: whose data set of this key to use. dlcache.ko names
	 * data sets by (key, owner uid). DLC_OWNER_SELF (the default from
	 * dlc_config_init()) is this process's own: found or created. Any
	 * other uid is an owner this process trusts to have cached the right
	 * bytes: the loader attaches to that user's existing data set (never
	 * creating one), as far as its mode allows, and logs one line naming
	 * the uid. If the data set's owner is not the one expected, or it
	 * cannot be attached, the loader falls back (or fails) as for any
	 * other kernel-backend failure. The environment variable
	 * DLCACHE_OWNER_UID (a uid, or "self") overrides it. Note 0 is root:
	 * a config not made by dlc_config_init() must set this field.
	 */
	uint32_t kernel_owner_uid;
	uint32_t verify;	/* enum dlc_verify; default DLC_VERIFY_KERNEL */
	uint32_t pad;		/* must be zero */
	/* ---- end of DLC_CONFIG_SIZE_VER0 ---- */
	/*
	 * The shard of this rank, as DistributedSampler's drop_last: 0 (the
	 * default) pads every rank to ceil(n / world) samples by wrapping
	 * around the epoch's order; 1 drops the tail, floor(n / world) each.
	 * Independent of drop_last: DDP's usual "pad the shards, drop the
	 * last partial batch" is shard_drop_last 0, drop_last 1.
	 */
	uint32_t shard_drop_last;
	uint32_t validate;	/* enum dlc_validate; default DLC_VALIDATE_ONCE */
	/* enum dlc_kernel_fallback; default DLC_KERNEL_FALLBACK_INPROCESS */
	uint32_t kernel_fallback;
	/*
	 * Read-ahead: bytes of samples read from storage before the pipeline
	 * claims them, in the order's next positions and across the epoch's
	 * end into the next epoch's, held outside the batch ring. 0 (the
	 * default) is at most DLC_READAHEAD_DEFAULT, lowered to 1/32 of the
	 * memory this process may use (its memory cgroup's limit, or the
	 * machine's RAM), and sized online below that: the whole while
	 * storage sets the pace, down to what a full queue of reads holds
	 * while decode or the consumer does (library.md, "Read-ahead");
	 * DLC_READAHEAD_OFF turns it off; otherwise a fixed budget of at
	 * most DLC_READAHEAD_MAX. With dlcache.ko (DLCACHE_FEAT_GET_AHEAD) the
	 * module is asked first, and only its misses are read (library.md).
	 */
	uint64_t readahead_bytes;
	/*
	 * The epochs the job runs, 0 .. epochs - 1, when known; 0 (the
	 * default): not known. The read-ahead reads nothing for epoch
	 * @epochs or later, so that the last epoch's end reads no epoch that
	 * never comes, and dlcache.ko is not given the order of epoch
	 * @epochs, so that it holds no sample for uses that never come.
	 * Nothing else changes: later epochs still run.
	 */
	uint32_t epochs;
	/*
	 * A pack written onto an NVMe namespace (dlcachectl pack --to) is
	 * read with NVMe commands through io_uring passthrough on its
	 * generic character device (/dev/ngXnY) where the kernel allows it,
	 * else with O_DIRECT on its block device (one log line says why).
	 * DLC_PASSTHRU_AUTO (0): so; DLC_PASSTHRU_OFF: always O_DIRECT.
	 */
	uint32_t nvme_passthru;
	/*
	 * The staging tier: a directory on node-local disk (NULL, the
	 * default: none) where samples are copied from the data set's
	 * storage in the order they will be used, across epochs, and read
	 * from in later epochs (library.md, "Staging"). The loader stages
	 * under @staging_dir/dlcache-UID/KEY (made 0700; refused unless this
	 * user's and 0700), which any number of this user's processes share.
	 * The string is copied by dlc_loader_create().
	 */
	const char *staging_dir;
	/*
	 * The bytes the staging tier may hold, in whole 4 KiB blocks; 0 (the
	 * default): half of the free space in @staging_dir when the loader
	 * is created.
	 */
	uint64_t staging_bytes;
	/*
	 * Cluster mode (Documentation/cluster.md): DLC_CLUSTER_MPI makes
	 * the in-process caches of every rank of MPI_COMM_WORLD one cache.
	 * Each sample has one owner rank, a hash of its ID; a rank caches
	 * the samples it owns in its @cache_bytes, and reads the others
	 * from their owner over MPI before the data set's storage. @rank
	 * and @world must be the MPI rank and size, and every rank creates
	 * its loader at the same time (it is collective). Needs a library
	 * built with MPI=1 (else -EOPNOTSUPP) and the in-process backend.
	 * DLC_CLUSTER_OFF (0, the default): this rank's cache only.
	 */
	uint32_t cluster;
	/*
	 * Milliseconds a peer may take to answer a request or take a
	 * message before it is taken for dead and never asked again (its
	 * samples then come from storage); 0: 2000, else at least 100
	 * (-EINVAL below: the watchdog of the MPI service thread looks
	 * every quarter of it).
	 */
	uint32_t peer_timeout_ms;
	/*
	 * Decode budgets, per sample: a JPEG of more scans than @max_scans
	 * (0: DLC_DEFAULT_MAX_SCANS, at most 65535) fails before its next
	 * scan is decoded, and a decode that took more than
	 * @decode_budget_ms of its thread's CPU time (0: the default, by
	 * pixels; at most 3600000) stops there. Both fail as too large
	 * (DLC_ERR_TOO_LARGE, -E2BIG), named in the message, and are
	 * handled by on_error. library.md, "JPEG decode".
	 */
	uint32_t max_scans;
	uint32_t decode_budget_ms;
	/*
	 * Milliseconds one sample's read from the data set's storage may
	 * take, from the moment it is queued (open, statx and every read):
	 * past it the sample fails with -ETIMEDOUT, counted as DLC_ERR_IO
	 * and handled as on_error says, and the loader goes on (a hung NFS
	 * mount costs this long per sample, never a hung thread or destroy).
	 * Substitutes and the staging tier's copies read under the same
	 * deadline. 0: DLC_READ_TIMEOUT_DEFAULT_MS; at most
	 * DLC_READ_TIMEOUT_MAX_MS.
	 */
	uint32_t read_timeout_ms;
	uint32_t pad2;		/* must be zero */
	/* ---- end of DLC_CONFIG_SIZE_VER1 ---- */
	/*
	 * Node sharing (library.md, "Node sharing"): the name of this job
	 * on this node, 1 to 64 bytes of [A-Za-z0-9._-] (not starting with
	 * '.'), the same in every rank's loader; NULL (the default): none.
	 * The loaders of one user that name the same group publish the CPUs
	 * they were given (the creating thread's affinity), and each runs up
	 * to @decode_threads guest decode threads on the others' CPUs at
	 * SCHED_IDLE: a rank whose loader is behind decodes in the idle time
	 * of a rank whose loader is ahead, never in time the owner would
	 * use. Batches are unchanged. A segment that cannot be used (not
	 * this user's own, /dev/shm missing, 64 loaders in the group) is
	 * said in one warning and the loader runs without sharing. The
	 * string is copied by dlc_loader_create().
	 */
	const char *node_group;
	/* ---- end of DLC_CONFIG_SIZE_VER2 ---- */
	/*
	 * Decoded forms (library.md, "Decoded forms"): the in-process cache
	 * may hold a sample as its whole image decoded at full resolution
	 * (RGB, 3 bytes a pixel) instead of its encoded bytes, so that a hit
	 * is a resize and no decode. DLC_FORMS_OFF (0, the default): encoded
	 * bytes only. DLC_FORMS_AUTO: per sample, whichever saves the loader's
	 * bottleneck more per byte, as measured (decoded while decode limits
	 * the loader, encoded while storage does). DLC_FORMS_DECODED: a
	 * decoded form for every sample the cache keeps (for measurements).
	 * With forms on, every sample is decoded at scale 1, as with
	 * DLC_TRANSFORM_F_EXACT (set for you): a batch is the same whichever
	 * form served each sample and whatever the cache held. dlcache.ko's
	 * cache and cluster mode keep encoded bytes (the same pixels).
	 */
	uint32_t forms;
	uint32_t pad3;		/* must be zero */
};

/* dlc_config.forms */
#define DLC_FORMS_OFF		0U
#define DLC_FORMS_AUTO		1U
#define DLC_FORMS_DECODED	2U

/* "off", "auto", "decoded", or "?" */
const char *dlc_forms_name(uint32_t forms);

/* dlc_config.read_timeout_ms: 0 means this, 30 s. */
#define DLC_READ_TIMEOUT_DEFAULT_MS	30000U
/* dlc_config.read_timeout_ms: the longest accepted, 1 hour. */
#define DLC_READ_TIMEOUT_MAX_MS		3600000U

/* dlc_config.cluster */
#define DLC_CLUSTER_OFF		0U
#define DLC_CLUSTER_MPI		1U

/* dlc_config.nvme_passthru */
#define DLC_PASSTHRU_AUTO	0U
#define DLC_PASSTHRU_OFF	1U

/* dlc_config.readahead_bytes: 0 means this, or less on a small machine. */
#define DLC_READAHEAD_DEFAULT	(64ULL << 20)
/* dlc_config.readahead_bytes: no read-ahead past the batch window. */
#define DLC_READAHEAD_OFF	UINT64_MAX
/* dlc_config.readahead_bytes: the largest budget accepted, 1 TiB. */
#define DLC_READAHEAD_MAX	(1ULL << 40)

/* The size of struct dlc_config up to and including its field pad. */
#define DLC_CONFIG_SIZE_VER0	172
/*
 * Up to and including pad2, where the reserved space ran out: later
 * fields are appended past it (library.md, "How the structs grow").
 */
#define DLC_CONFIG_SIZE_VER1	240
/* Up to and including node_group. */
#define DLC_CONFIG_SIZE_VER2	248
/* Up to and including pad3. */
#define DLC_CONFIG_SIZE_VER3	256

/* Defaults: batch 64, NCHW, train transform at 224, depth 64, window 256. */
void dlc_config_init(struct dlc_config *cfg);

/*
 * One decoded batch. Always the loader's: callers never allocate one, they
 * get a pointer from dlc_next_batch() and give it back with
 * dlc_release_batch(), so fields may be added at the end. Each hand-out is
 * a new handle; after its release its pointers are NULL and count 0.
 */
struct dlc_batch {
	uint64_t seq;		/* batch number within the epoch */
	uint32_t epoch;
	uint32_t count;		/* valid samples, 1 .. batch_size */
	uint8_t *data;		/* count x 3 x out_h x out_w bytes (layout) */
	int32_t *labels;	/* count labels */
	uint32_t *ids;		/* count sample IDs (after substitution) */
	uint32_t layout;
	uint32_t out_w, out_h;
	uint32_t errors;	/* samples skipped or substituted in it */
	uint64_t reserved[4];	/* zero */
};

struct dlc_loader;

/*
 * Create a loader over @idx (which must outlive it). Checks every field of
 * @cfg: -EINVAL with a log line naming the field, -ENOMEM, or the error of
 * setting up io_uring. Starts the threads; no epoch runs yet.
 */
int dlc_loader_create(const struct dlc_config *cfg,
		      const struct dlc_index *idx, struct dlc_loader **out);

/*
 * Start epoch @epoch at sample position @start (0, or k * batch_size to
 * resume after k batches: the batches then equal those of an uninterrupted
 * epoch). Ends any epoch in progress. Batches the consumer still holds
 * stay valid, and count against the nbatches - 1 it may hold, until it
 * releases them (a training loop's variable keeps the last batch of an
 * epoch while the next one starts). -EINVAL (logged) when @start is not a
 * multiple of batch_size or is past the epoch's last batch.
 */
int dlc_loader_start_epoch(struct dlc_loader *l, uint32_t epoch,
			   uint32_t start);

/*
 * Start the rest of epoch @epoch after its first @done positions of the
 * global order were used, by a job of this world size or another
 * (dlc_order_fill_rest()): a job saved at world W after each rank took k
 * batches has done = k * batch_size * W, plus the @done of the run it was
 * in, if that was itself resumed. This rank gets its share of the rest,
 * batch_size at a time (the last batch partial, or dropped with
 * drop_last); dlc_batch.seq counts from 0 in this run. The pixels of a
 * sample are those of an uninterrupted epoch (its crop is keyed by seed,
 * epoch and sample); the epochs after it are whole, as for any world. A
 * @done at or past the data set's size runs no batch. Held batches stay
 * valid, as for dlc_loader_start_epoch(). -EINVAL (logged) or -ENOMEM.
 *
 * The caches' and the staging tier's plans follow this run's order when
 * it is the first epoch the loader starts; an epoch already uploaded to
 * dlcache.ko by another rank of the job keeps the order it had there
 * (eviction is then less exact for that epoch; what is read is not).
 */
int dlc_loader_resume_epoch(struct dlc_loader *l, uint32_t epoch,
			    uint64_t done);

/*
 * Samples this rank sees per epoch, and batches per epoch (under
 * DLC_ON_ERROR_SKIP: at most, and samples less those that fail).
 */
uint32_t dlc_loader_epoch_samples(const struct dlc_loader *l);
uint32_t dlc_loader_epoch_batches(const struct dlc_loader *l);

/* Decode threads running (the I/O thread not counted). */
uint32_t dlc_loader_decode_threads(const struct dlc_loader *l);

/*
 * The next batch of the epoch, in order. Blocks until it is ready.
 * Returns 0 with *@out set, -ENODATA after the last batch (once the
 * decoded forms the run made are in their cache, waiting 2 s at most:
 * library.md, "Decoded forms"), or the error of
 * a failed sample under DLC_ON_ERROR_FAIL (the batch is lost; the epoch
 * must be restarted). At most nbatches - 1 batches may be held at once,
 * and a held batch's buffer is the one of the batch nbatches later:
 * asking for more, or for that one, returns -EBUSY (instead of waiting
 * for a release that cannot come from the blocked caller).
 */
int dlc_next_batch(struct dlc_loader *l, struct dlc_batch **out);

/*
 * dlc_next_batch() that waits at most @timeout_ns (0: not at all) for the
 * batch: -ETIMEDOUT when it is not ready by then. A timeout consumes
 * nothing and changes nothing: the next call returns the same batch. It
 * lets a caller stay responsive while it waits (Python checking for
 * Ctrl-C between short waits). Other returns as dlc_next_batch(); the
 * time waited counts in dlc_stats.wait_ns either way.
 */
int dlc_next_batch_timeout(struct dlc_loader *l, struct dlc_batch **out,
			   uint64_t timeout_ns);

/*
 * Give a batch's memory back for reuse. Every hand-out is a handle of its
 * own, checked here without touching any other batch: returns 0, -EINVAL
 * for NULL or a pointer this loader never handed out (another loader's,
 * or any other), or -EALREADY for a handle already released (a double
 * release, or a stale handle from earlier in the epoch or an earlier
 * epoch). Handles are recycled after 4096 hand-outs: a stale handle is
 * recognised as long as fewer batches have been handed out since.
 */
int dlc_release_batch(struct dlc_loader *l, struct dlc_batch *b);

/*
 * Release @b as dlc_release_batch() does, but its pixels stay: the buffer
 * b->data becomes the caller's, and the loader gives that ring slot a new
 * buffer (mapped, and pinned like the rest, best effort) and never reads
 * or writes the old one again, not even in dlc_loader_destroy(). For a
 * consumer whose references to a batch's memory (say a tensor aliasing
 * it) outlive the batch.
 *
 * *@mem and *@len receive the mapping that holds the pixels: b->data is
 * *@mem (offset 0), and its first count * 3 * out_w * out_h bytes are the
 * batch's pixels; *@len (a multiple of 2 MiB) is the mapping's whole
 * length. The kept mapping is munlock'ed (it no longer counts against
 * RLIMIT_MEMLOCK). Free it with dlc_batch_data_free(*@mem, *@len). The
 * labels and ids arrays are not kept: copy them first, as b->data,
 * b->labels and b->ids read NULL once this returns 0.
 *
 * Returns 0; -EINVAL (logged) for NULL @mem or @len, or a handle this
 * loader never handed out; -EALREADY (logged) for a released one (in both
 * cases nothing changes); or -ENOMEM (logged) when a new buffer cannot be
 * mapped: then the batch is NOT released and stays valid, and the caller
 * may copy it and dlc_release_batch() it.
 */
int dlc_release_batch_keep(struct dlc_loader *l, struct dlc_batch *b,
			   void **mem, size_t *len);

/*
 * Unmap a buffer that dlc_release_batch_keep() gave out, with the *mem and
 * *len it returned. NULL @mem does nothing. Needs no loader: it may run
 * after dlc_loader_destroy().
 */
void dlc_batch_data_free(void *mem, size_t len);

/* Stop the threads and free everything. Safe with batches unreleased. */
void dlc_loader_destroy(struct dlc_loader *l);

/*
 * The backend in use: DLC_BACKEND_INPROCESS or DLC_BACKEND_KERNEL; it
 * becomes DLC_BACKEND_INPROCESS when the loader falls back mid-run
 * (enum dlc_kernel_fallback). Thread safe.
 */
uint32_t dlc_loader_backend(const struct dlc_loader *l);

/*
 * Whether the batch buffers now in the ring are mlock'd (1: every one of
 * them), and huge-page backed (the least of them: 2 hugetlbfs pages, 1
 * transparent huge pages advised, 0 small pages). Each slot of the ring
 * has a buffer of its own, and a dlc_release_batch_keep() gives its slot
 * a new one (pinned best effort), so the answer can change after one.
 * Buffers given to the caller are not counted.
 */
int dlc_loader_pinned(const struct dlc_loader *l);
int dlc_loader_hugepages(const struct dlc_loader *l);

/* Last failed sample: its ID, path, kind and message. */
struct dlc_error_info {
	uint32_t sample;
	uint32_t kind;		/* enum dlc_error_kind */
	int err;		/* negative errno */
	uint32_t pad;
	char path[512];
	char msg[256];
};
/* Copy the last error into @out; -ENOENT when there was none. */
int dlc_loader_last_error(struct dlc_loader *l, struct dlc_error_info *out);

/* ------------------------------------------------------------------ */
/* Stats                                                               */
/* ------------------------------------------------------------------ */

struct dlc_stats {
	/* cache */
	uint64_t hits;			/* samples served from the cache */
	uint64_t misses;		/* samples read from storage */
	uint64_t hit_bytes;		/* their encoded bytes (a form's too) */
	uint64_t miss_bytes;
	uint64_t evictions;		/* samples dropped to make room */
	uint64_t bypasses;		/* misses not admitted (next use too far) */
	uint64_t cache_used;		/* bytes held now (kernel: this data set) */
	uint64_t cache_capacity;	/* kernel backend: the module's capacity */
	/* I/O */
	uint64_t reads;			/* read requests completed */
	uint64_t bytes_read;		/* bytes read from storage */
	uint64_t short_reads;		/* reads resubmitted for the rest */
	uint64_t retries;		/* EINTR / EAGAIN resubmissions */
	uint64_t read_ns;		/* submit-to-complete time, summed */
	uint64_t direct_reads;		/* of reads, how many were O_DIRECT */
	/* decode */
	uint64_t decoded;		/* samples decoded */
	uint64_t decode_ns;		/* time in decode, summed over threads */
	uint64_t io_thread_decodes;	/* decodes the I/O thread took on */
	/* consumer */
	uint64_t batches;		/* batches handed out */
	uint64_t wait_ns;		/* time dlc_next_batch() and _timeout() waited */
	/* errors */
	uint64_t errors;		/* failed samples, all kinds */
	uint64_t errors_by_kind[DLC_ERR_KINDS];
	uint64_t substituted;
	uint64_t skipped;
	/* integrity (enum dlc_verify) */
	uint64_t verified;		/* samples checked against the index's crc32c */
	uint64_t verify_ns;		/* time computing those checksums, summed */
	uint64_t checksum_errors;	/* of those, how many did not match */
	/* decodes that checked the whole file (enum dlc_validate) */
	uint64_t validated;
	/* switches from dlcache.ko to the in-process cache (kernel_fallback) */
	uint64_t kernel_fallbacks;
	/*
	 * Storage: time with at least one read in flight, summed (the span
	 * open now included), and reads in flight now. io_busy_ns over the
	 * wall time is the storage's busy fraction as this loader keeps it.
	 */
	uint64_t io_busy_ns;
	uint64_t reads_inflight;
	/* read-ahead (dlc_config.readahead_bytes) */
	uint64_t readahead_reads;	/* samples read ahead of their claim */
	uint64_t readahead_used;	/* of those, claimed by the pipeline */
	uint64_t readahead_dropped;	/* dropped unused (a start_epoch elsewhere) */
	uint64_t readahead_held;	/* bytes read ahead or in flight now */
	uint64_t readahead_budget;	/* the budget now, bytes; 0 when off */
	/*
	 * NVMe Read commands sent through io_uring passthrough and
	 * completed (a pack on a namespace, dlc_config.nvme_passthru); a
	 * sample larger than one command's limit takes several.
	 */
	uint64_t passthru_reads;
	/*
	 * The staging tier (dlc_config.staging_dir). Its hits are also
	 * misses above: samples read from local disk, not the origin.
	 */
	uint64_t staging_hits;		/* samples read from a staged copy */
	uint64_t staging_hit_bytes;
	uint64_t staging_writes;	/* copies written */
	uint64_t staging_prefetched;	/* of those, read from the origin ahead */
	uint64_t staging_prefetch_bytes;
	uint64_t staging_evictions;	/* copies removed for a sooner use */
	uint64_t staging_invalid;	/* copies found stale, torn or corrupt */
	uint64_t staging_used;		/* bytes the copies hold now */
	uint64_t staging_budget;	/* dlc_config.staging_bytes, as taken */
	/*
	 * Cluster mode (dlc_config.cluster). Its reads are also misses
	 * above: samples not read from the data set's storage.
	 */
	uint64_t cluster_local_hits;	/* samples this rank owns, from its cache */
	uint64_t cluster_local_bytes;
	uint64_t cluster_peer_hits;	/* samples a peer sent */
	uint64_t cluster_peer_bytes;
	uint64_t cluster_peer_misses;	/* asked a peer that did not hold it */
	uint64_t cluster_peer_failures;	/* a peer timed out, or sent bad bytes */
	uint64_t cluster_peer_busy;	/* not asked: all request slots taken */
	uint64_t cluster_served;	/* requests of peers this rank answered */
	uint64_t cluster_served_hits;	/* of those, with the sample's bytes */
	uint64_t cluster_served_bytes;
	uint64_t cluster_pushed;	/* storage reads sent to their owner */
	uint64_t cluster_pushed_bytes;
	uint64_t cluster_admitted;	/* samples this rank's share took in */
	uint64_t cluster_used;		/* bytes this rank's share holds */
	uint64_t cluster_capacity;	/* dlc_config.cache_bytes */
	uint64_t cluster_dead_peers;	/* peers given up on */
	/*
	 * Not asked: the owner was measured a straggler (4x slower than
	 * storage, or than the other peers), and storage would complete this
	 * read sooner, by bytes queued over rate (Documentation/cluster.md).
	 */
	uint64_t cluster_peer_diverted;
	/*
	 * Node sharing (dlc_config.node_group): samples this loader's guest
	 * threads decoded on the group's other CPUs, the guest threads, and
	 * the CPUs they may run on now (the group's other loaders' that are
	 * not this one's; 0: nothing to borrow, or no group).
	 */
	uint64_t node_guest_decodes;
	uint64_t node_guest_threads;
	uint64_t node_borrowed_cpus;
	/*
	 * Samples a guest held past their due time (starved on the CPU it
	 * borrowed) that this loader's own decoders took back and decoded.
	 * The guest's decode of one, when it ends, counts in decoded too
	 * (decodes done); node_guest_decodes counts only the samples whose
	 * pixels a guest delivered.
	 */
	uint64_t node_guest_reclaimed;
	/*
	 * Decoders' time idle while samples they would decode were still
	 * being read, summed over threads: how much storage held decode up.
	 */
	uint64_t decode_starved_ns;
	/*
	 * Decoded forms (dlc_config.forms, in-process cache): samples served
	 * from a form (a resize, no decode); forms made (a whole decode at
	 * scale 1, for a sample the cache was expected to keep) and of those
	 * the ones it did not take; the forms held now and their bytes (of
	 * cache_used); the decode time the form hits saved (each sample's
	 * last crop-first decode, less its time from the form; for a sample
	 * only decoded whole, to make its form, the mean crop-first decode
	 * of the others where any was measured, else its whole decode);
	 * and the controller's choice now: 0 none (forms off, or the first
	 * quarter second not yet measured), 1 decoded forms (decode limits the
	 * loader), 2 encoded bytes (storage does).
	 */
	uint64_t form_hits;
	uint64_t forms_made;
	uint64_t forms_refused;
	uint64_t forms_held;
	uint64_t forms_bytes;
	uint64_t form_saved_ns;
	uint64_t forms_regime;
	/*
	 * Cluster mode's backups (Documentation/cluster.md): reads of a
	 * straggler's samples asked of the sample's backup rank instead, those
	 * it answered with the bytes, and the bytes this rank holds as the
	 * backup of others' samples (a level, in the room its cache_bytes has
	 * beyond the share it owns).
	 */
	uint64_t cluster_backup_asked;
	uint64_t cluster_backup_hits;
	uint64_t cluster_backup_used;
	/*
	 * Decoded forms the in-process cache let go for a form worth at least
	 * twice as much decode per byte (decode-bound, its forms full;
	 * library.md, "Decoded forms"): each is made again if it comes back.
	 * Also counted in evictions.
	 */
	uint64_t forms_displaced;
	/*
	 * Cluster mode with prepared answers (DLCACHE_CLUSTER_PREPARE=1,
	 * Documentation/cluster.md): samples that came from their owner
	 * prepared (cropped and resized there: no decode here); answers this
	 * rank prepared for peers; requests that welcomed one and were
	 * answered with encoded bytes (no idle CPU in time, a full queue, or
	 * a decode that failed).
	 */
	uint64_t cluster_prepared;
	uint64_t cluster_prepared_served;
	uint64_t cluster_prepare_late;
};

/*
 * Counters since the loader was created, copied into @out of @size bytes
 * (sizeof(struct dlc_stats) as the caller was built): the first
 * min(@size, ours) bytes are the counters, any bytes past ours are zeroed.
 * Returns 0, or -EINVAL when @out is NULL or @size is not a positive
 * multiple of 8. Thread safe.
 */
int dlc_loader_stats(struct dlc_loader *l, struct dlc_stats *out, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* DLCACHE_H */
