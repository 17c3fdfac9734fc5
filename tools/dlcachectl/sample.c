// SPDX-License-Identifier: MIT
/*
 * dlcachectl sample: one transformed sample, as the loader would deliver
 * it at position P of epoch E's order, with the sample's ID, path, label
 * and crop box, so that anyone can hold it against torchvision by hand:
 *
 *   img = PIL.Image.open(path).convert('RGB')
 *   out = F.resized_crop(img, top, left, height, width, [S, S],
 *                        antialias=True)      (then F.hflip if flip)
 *
 * The order (seed, rank, world, shuffle) and the transform are set up as
 * bench sets them; the pixels come from dlc_decoder_sample(), the call the
 * loader's decode threads make. For a pack (a .dlp, or one on a device)
 * the bytes are the sample's in the pack, checked against its CRC-32C.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfgopts.h"
#include "cli.h"
#include "crc32c.h"
#include "dlcache.h"
#include "internal.h"
#include "pack.h"

/* Sample @id's bytes in pack @p (malloc'd in *@out), its CRC checked. */
static int read_pack_sample(const struct dlc_pack *p, uint32_t id,
			    uint8_t **out, size_t *len, struct dlc_pack_entry *e)
{
	size_t done = 0;
	uint8_t *buf;
	int fd, ret = 0;

	if (dlc_pack_entry(p, id, e))
		return -EINVAL;
	buf = malloc(e->len ? e->len : 1);
	if (!buf)
		return -ENOMEM;
	fd = open(dlc_pack_path(p), O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		free(buf);
		return -errno;
	}
	while (done < e->len) {
		ssize_t n = pread(fd, buf + done, e->len - done,
				  (off_t)(e->off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EBADMSG;
			break;
		}
		done += (size_t)n;
	}
	close(fd);
	if (!ret && dlc_crc32c(0, buf, e->len) != e->crc)
		ret = -EBADMSG;
	if (ret) {
		free(buf);
		return ret;
	}
	*out = buf;
	*len = e->len;
	return 0;
}

static void help(void)
{
	printf("usage: dlcachectl sample INDEX|DIR --epoch E --pos P [options]\n"
	       "\n"
	       "Decode and transform the sample at position P of epoch E's order, as\n"
	       "the loader would deliver it, optionally write it as a PPM, and print\n"
	       "its sample ID, path, label and crop box (top, left, height, width,\n"
	       "flip): the arguments of torchvision's resized_crop for checking it.\n"
	       "INDEX may be a pack (dlcachectl pack): the bytes are then the\n"
	       "sample's in the pack (checked against its crc32c), and the output\n"
	       "names the pack, the offset and the length.\n"
	       "\n"
	       "  --epoch E            epoch number (default 0)\n"
	       "  --pos P              position in this rank's order of the epoch (default 0)\n"
	       "  -o, --output FILE    write the transformed sample as a binary PPM\n"
	       "  --json               one JSON object on stdout\n"
	       "  --size S             output side in pixels (default 224)\n"
	       "  --eval               Resize + CenterCrop, unshuffled, as bench --eval\n"
	       "  --exact              decode at DCT scale 1 (DLC_TRANSFORM_F_EXACT)\n"
	       "  --seed N             shuffle and augmentation seed (default 0)\n"
	       "  --rank R --world W   this process's shard, as DistributedSampler\n"
	       "  -v, --verbose        library log lines on stderr\n"
	       "  -h, --help           show this help\n");
}

/* What sample's command line asks for. */
struct sample_args {
	struct cfg_opts o;	/* the options that map onto dlc_config */
	const char *path;	/* INDEX|DIR */
	const char *out;	/* -o FILE.ppm, or NULL */
	uint32_t epoch, pos;
	int json;
};

/* The sample at the position, from its ID to its pixels. */
struct sample_run {
	struct dlc_index *idx;
	uint32_t id;
	const char *rel, *cls;		/* its path in the data set, class */
	const struct dlc_pack *pack;	/* the pack holding it, or NULL */
	struct dlc_pack_entry pe;	/* where in the pack */
	char path[PATH_MAX];		/* what the output calls it */
	uint8_t *jpg, *rgb;		/* its bytes; its pixels (NHWC) */
	size_t jlen;
	struct dlc_crop box;
};

/*
 * sample's own options and the shared ones it takes. Returns CMD_RUN, or
 * the exit status after --help or a usage error.
 */
static int sample_parse(int argc, char **argv, struct sample_args *a)
{
	static const struct option own[] = {
		{ "epoch", required_argument, NULL, 'e' },
		{ "pos", required_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct option opts[ARRAY_SIZE(own) + CFG_NR];
	int opt, ret;

	memset(a, 0, sizeof(*a));
	cfg_opts_init(&a->o);
	cfg_opts_longopts(opts, own, CFG_OPT(CFG_SIZE) | CFG_OPT(CFG_EVAL) |
			  CFG_OPT(CFG_EXACT) | CFG_OPT(CFG_SEED) |
			  CFG_OPT(CFG_RANK) | CFG_OPT(CFG_WORLD) |
			  CFG_OPT(CFG_VERBOSE));
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":o:vh", opts, NULL)) != -1) {
		switch (opt) {
		case 'e':
			if (parse_u32(optarg, 0, UINT32_MAX, &a->epoch))
				return usage_error("sample", "--epoch: want 0..%u, got '%s'",
						   UINT32_MAX, optarg);
			break;
		case 'p':
			if (parse_u32(optarg, 0, UINT32_MAX, &a->pos))
				return usage_error("sample", "--pos: want a position in the epoch, got '%s'",
						   optarg);
			break;
		case 'o':
			if (!*optarg)
				return usage_error("sample", "--output is empty");
			a->out = optarg;
			break;
		case 'j':
			a->json = 1;
			break;
		case 'h':
			help();
			return 0;
		case ':':
			return usage_error("sample", "%s needs an argument",
					   argv[optind - 1]);
		default:
			ret = cfg_opt_parse("sample", opt, optarg, &a->o);
			if (ret < 0)
				return EXIT_USAGE;
			if (!ret)
				return usage_error("sample", "unknown option '%s' (try --help)",
						   argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return usage_error("sample", "want exactly one INDEX file or data set DIR (try --help)");
	if (cfg_opts_check("sample", &a->o))
		return EXIT_USAGE;
	a->path = argv[optind];
	return CMD_RUN;
}

/*
 * The sample at a->pos of epoch a->epoch's order, as bench's loader
 * would deliver it, into r->id (and its name, class and pack). Returns 0,
 * or 1 or EXIT_USAGE after the line saying why.
 */
static int sample_pick(const struct sample_args *a, struct sample_run *r)
{
	const struct dlc_config *cfg = &a->o.cfg;
	struct dlc_order_params op = { 0 };
	uint32_t n, len, *order;
	int ret;

	n = dlc_index_count(r->idx);
	op.seed = cfg->seed;
	op.epoch = a->epoch;
	op.rank = cfg->rank;
	op.world = cfg->world;
	op.shuffle = cfg->shuffle;
	op.drop_last = cfg->drop_last;
	len = dlc_order_len(n, &op);
	if (a->pos >= len)
		return usage_error("sample", "--pos %u: rank %u's epoch has %u positions",
				   a->pos, cfg->rank, len);
	order = malloc((size_t)len * sizeof(*order));
	if (!order)
		return fail("sample", "%s", strerror(ENOMEM));
	ret = dlc_order_fill(n, &op, order, len);
	if (ret) {
		free(order);
		return fail("sample", "epoch %u order: %s", a->epoch,
			    strerror(-ret));
	}
	r->id = order[a->pos];
	free(order);
	r->rel = dlc_index_relpath(r->idx, r->id);
	r->cls = dlc_index_class_name(r->idx,
				      (uint32_t)dlc_index_label(r->idx, r->id));
	r->pack = dlc_index_pack(r->idx);
	return 0;
}

/*
 * Sample r->id's bytes into r->jpg: from the pack, checked against its
 * CRC-32C, or from its file. Returns 0, or 1 after the line saying why.
 */
static int sample_load(struct sample_run *r)
{
	const char *root = dlc_index_root(r->idx);
	int ret;

	/* A pack holds its samples: the root is the pack, not a directory. */
	if (r->pack) {
		snprintf(r->path, sizeof(r->path), "%s", r->rel);
		ret = read_pack_sample(r->pack, r->id, &r->jpg, &r->jlen, &r->pe);
		if (ret)
			return fail("sample", "%s: sample %u (%s): %s",
				    dlc_pack_path(r->pack), r->id, r->rel,
				    ret == -EBADMSG ?
				    "short, or its bytes fail their crc32c" :
				    strerror(-ret));
		return 0;
	}
	ret = snprintf(r->path, sizeof(r->path), "%s/%s", root, r->rel);
	if (ret < 0 || (size_t)ret >= sizeof(r->path))
		return fail("sample", "%s/%s: %s", root, r->rel,
			    strerror(ENAMETOOLONG));
	ret = read_whole_file(r->path, &r->jpg, &r->jlen);
	if (ret)
		return fail("sample", "%s: %s", r->path, strerror(-ret));
	return 0;
}

/*
 * Pick the sample, load its bytes and transform them as a decode thread
 * would (into r->rgb, and -o's file). Returns 0, or 1 or EXIT_USAGE
 * after the line saying why.
 */
static int sample_run(struct sample_args *a, struct sample_run *r)
{
	const struct dlc_config *cfg = &a->o.cfg;
	uint32_t size = a->o.size;
	struct dlc_decoder *dec;
	int ret;

	/* bench's transform and order: the loader's sample at this position */
	cfg_opts_transform(&a->o);
	ret = sample_pick(a, r);
	if (ret)
		return ret;
	r->rgb = malloc((size_t)size * size * 3);
	if (!r->rgb)
		return fail("sample", "%s", strerror(ENOMEM));
	if (sample_load(r))
		return 1;
	ret = dlc_decoder_create(cfg->max_pixels, &dec);
	if (ret)
		return fail("sample", "%s", strerror(-ret));
	ret = dlc_decoder_sample(dec, r->jpg, r->jlen, &cfg->transform,
				 cfg->seed, a->epoch, r->id, DLC_LAYOUT_NHWC,
				 r->rgb, &r->box);
	if (ret)
		fail("sample", "%s: %s", r->path, dlc_decoder_error(dec));
	dlc_decoder_destroy(dec);
	if (ret)
		return 1;
	if (a->out) {
		ret = write_ppm(a->out, r->rgb, size, size);
		if (ret)
			return fail("sample", "%s: %s", a->out, strerror(-ret));
	}
	return 0;
}

/* The sample, its crop box and torchvision's call for it; --json's object. */
static void sample_report(const struct sample_args *a,
			  const struct sample_run *r)
{
	const struct dlc_config *cfg = &a->o.cfg;
	const struct dlc_crop *box = &r->box;
	uint32_t size = a->o.size;
	int label = dlc_index_label(r->idx, r->id);

	if (a->json) {
		printf("{\"epoch\": %u, \"pos\": %u, \"id\": %u, \"path\": ",
		       a->epoch, a->pos, r->id);
		json_string(stdout, r->path);
		if (r->pack) {
			printf(", \"pack\": ");
			json_string(stdout, dlc_pack_path(r->pack));
			printf(", \"offset\": %llu, \"bytes\": %u",
			       (unsigned long long)r->pe.off, r->pe.len);
		}
		printf(", \"label\": %d, \"class\": ", label);
		json_string(stdout, r->cls ? r->cls : "");
		printf(", \"transform\": \"%s\", \"exact\": %s, \"seed\": %llu, \"rank\": %u, \"world\": %u, \"out_h\": %u, \"out_w\": %u",
		       a->o.eval ? "eval" : "train",
		       a->o.exact ? "true" : "false",
		       (unsigned long long)cfg->seed, cfg->rank, cfg->world,
		       size, size);
		if (a->o.eval)
			printf(", \"resize\": %u", cfg->transform.resize);
		printf(", \"box\": {\"top\": %.17g, \"left\": %.17g, \"height\": %.17g, \"width\": %.17g, \"flip\": %u}",
		       box->y, box->x, box->h, box->w, box->flip);
		printf(", \"output\": ");
		if (a->out)
			json_string(stdout, a->out);
		else
			printf("null");
		printf("}\n");
		return;
	}
	printf("epoch %u pos %u: sample %u, label %d (%s)\n", a->epoch,
	       a->pos, r->id, label, r->cls ? r->cls : "?");
	if (r->pack)
		printf("path %s in pack %s (%u bytes at %llu)\n", r->path,
		       dlc_pack_path(r->pack), r->pe.len,
		       (unsigned long long)r->pe.off);
	else
		printf("path %s\n", r->path);
	printf("box top %.17g left %.17g height %.17g width %.17g flip %u\n",
	       box->y, box->x, box->h, box->w, box->flip);
	if (a->o.eval)
		printf("torchvision: F.center_crop(F.resize(img, %u), [%u, %u])\n",
		       cfg->transform.resize, size, size);
	else
		printf("torchvision: F.resized_crop(img, %.0f, %.0f, %.0f, %.0f, [%u, %u], antialias=True)%s\n",
		       box->y, box->x, box->h, box->w, size, size,
		       box->flip ? ", then F.hflip" : "");
	if (a->out)
		printf("wrote %ux%u RGB to %s%s\n", size, size, a->out,
		       a->o.exact ? "" : " (DCT scale chosen for speed; --exact for scale 1)");
}

int cmd_sample(int argc, char **argv)
{
	struct sample_run r = { 0 };
	struct sample_args a;
	int ret, rc;

	rc = sample_parse(argc, argv, &a);
	if (rc != CMD_RUN)
		return rc;
	ret = open_index(a.path, &r.idx);
	if (ret)
		return fail("sample", "%s: %s", a.path, index_error(ret));
	rc = sample_run(&a, &r);
	if (!rc)
		sample_report(&a, &r);
	dlc_index_free(r.idx);
	free(r.rgb);
	free(r.jpg);
	return rc;
}
