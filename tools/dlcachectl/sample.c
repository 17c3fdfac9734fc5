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

int cmd_sample(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "epoch", required_argument, NULL, 'e' },
		{ "pos", required_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'j' },
		{ "size", required_argument, NULL, 's' },
		{ "eval", no_argument, NULL, 'E' },
		{ "exact", no_argument, NULL, 'X' },
		{ "seed", required_argument, NULL, 'S' },
		{ "rank", required_argument, NULL, 'r' },
		{ "world", required_argument, NULL, 'W' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint32_t epoch = 0, pos = 0, size = 224, n, len, id;
	struct dlc_order_params op = { 0 };
	const struct dlc_pack *pack;
	struct dlc_pack_entry pe;
	struct dlc_decoder *dec = NULL;
	struct dlc_index *idx = NULL;
	const char *out = NULL, *rel, *cls;
	struct dlc_config cfg;
	struct dlc_crop box;
	uint32_t *order = NULL;
	uint8_t *jpg = NULL, *rgb = NULL;
	char path[PATH_MAX];
	int eval = 0, exact = 0, json = 0, opt, ret, rc = 1;
	size_t jlen = 0;

	dlc_config_init(&cfg);
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":o:vh", opts, NULL)) != -1) {
		switch (opt) {
		case 'e':
			if (parse_u32(optarg, 0, UINT32_MAX, &epoch))
				return usage_error("sample", "--epoch: want 0..%u, got '%s'",
						   UINT32_MAX, optarg);
			break;
		case 'p':
			if (parse_u32(optarg, 0, UINT32_MAX, &pos))
				return usage_error("sample", "--pos: want a position in the epoch, got '%s'",
						   optarg);
			break;
		case 'o':
			if (!*optarg)
				return usage_error("sample", "--output is empty");
			out = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 's':
			if (parse_u32(optarg, 1, DLC_MAX_OUT_SIDE, &size))
				return usage_error("sample", "--size: want 1..%d, got '%s'",
						   DLC_MAX_OUT_SIDE, optarg);
			break;
		case 'E':
			eval = 1;
			break;
		case 'X':
			exact = 1;
			break;
		case 'S':
		case 'r':
		case 'W':
			if (parse_order_opt("sample", opt, optarg, &cfg))
				return EXIT_USAGE;
			break;
		case 'v':
			cfg.log_level = DLC_LOG_INFO;
			break;
		case 'h':
			help();
			return 0;
		case ':':
			return usage_error("sample", "%s needs an argument",
					   argv[optind - 1]);
		default:
			return usage_error("sample", "unknown option '%s' (try --help)",
					   argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return usage_error("sample", "want exactly one INDEX file or data set DIR (try --help)");
	if (cfg.rank >= cfg.world)
		return usage_error("sample", "--rank %u must be below --world %u",
				   cfg.rank, cfg.world);

	ret = open_index(argv[optind], &idx);
	if (ret)
		return fail("sample", "%s: %s", argv[optind], index_error(ret));

	/* bench's transform and order: the loader's sample at this position */
	setup_transform(&cfg, eval, size);
	if (exact)
		cfg.transform.flags |= DLC_TRANSFORM_F_EXACT;
	n = dlc_index_count(idx);
	op.seed = cfg.seed;
	op.epoch = epoch;
	op.rank = cfg.rank;
	op.world = cfg.world;
	op.shuffle = cfg.shuffle;
	op.drop_last = cfg.drop_last;
	len = dlc_order_len(n, &op);
	if (pos >= len) {
		rc = usage_error("sample", "--pos %u: rank %u's epoch has %u positions",
				 pos, cfg.rank, len);
		goto out;
	}
	order = malloc((size_t)len * sizeof(*order));
	rgb = malloc((size_t)size * size * 3);
	if (!order || !rgb) {
		fail("sample", "%s", strerror(ENOMEM));
		goto out;
	}
	ret = dlc_order_fill(n, &op, order, len);
	if (ret) {
		fail("sample", "epoch %u order: %s", epoch, strerror(-ret));
		goto out;
	}
	id = order[pos];
	rel = dlc_index_relpath(idx, id);
	cls = dlc_index_class_name(idx, (uint32_t)dlc_index_label(idx, id));
	/* A pack holds its samples: the root is the pack, not a directory. */
	pack = dlc_index_pack(idx);
	if (pack) {
		snprintf(path, sizeof(path), "%s", rel);
		ret = read_pack_sample(pack, id, &jpg, &jlen, &pe);
		if (ret) {
			fail("sample", "%s: sample %u (%s): %s", dlc_pack_path(pack),
			     id, rel, ret == -EBADMSG ?
			     "short, or its bytes fail their crc32c" :
			     strerror(-ret));
			goto out;
		}
	} else {
		ret = snprintf(path, sizeof(path), "%s/%s", dlc_index_root(idx),
			       rel);
		if (ret < 0 || (size_t)ret >= sizeof(path)) {
			fail("sample", "%s/%s: %s", dlc_index_root(idx), rel,
			     strerror(ENAMETOOLONG));
			goto out;
		}
		ret = read_whole_file(path, &jpg, &jlen);
		if (ret) {
			fail("sample", "%s: %s", path, strerror(-ret));
			goto out;
		}
	}
	ret = dlc_decoder_create(cfg.max_pixels, &dec);
	if (ret) {
		fail("sample", "%s", strerror(-ret));
		goto out;
	}
	ret = dlc_decoder_sample(dec, jpg, jlen, &cfg.transform, cfg.seed,
				 epoch, id, DLC_LAYOUT_NHWC, rgb, &box);
	if (ret) {
		fail("sample", "%s: %s", path, dlc_decoder_error(dec));
		goto out;
	}
	if (out) {
		ret = write_ppm(out, rgb, size, size);
		if (ret) {
			fail("sample", "%s: %s", out, strerror(-ret));
			goto out;
		}
	}

	if (json) {
		printf("{\"epoch\": %u, \"pos\": %u, \"id\": %u, \"path\": ",
		       epoch, pos, id);
		json_string(stdout, path);
		if (pack) {
			printf(", \"pack\": ");
			json_string(stdout, dlc_pack_path(pack));
			printf(", \"offset\": %llu, \"bytes\": %u",
			       (unsigned long long)pe.off, pe.len);
		}
		printf(", \"label\": %d, \"class\": ", dlc_index_label(idx, id));
		json_string(stdout, cls ? cls : "");
		printf(", \"transform\": \"%s\", \"exact\": %s, \"seed\": %llu, \"rank\": %u, \"world\": %u, \"out_h\": %u, \"out_w\": %u",
		       eval ? "eval" : "train", exact ? "true" : "false",
		       (unsigned long long)cfg.seed, cfg.rank, cfg.world, size,
		       size);
		if (eval)
			printf(", \"resize\": %u", cfg.transform.resize);
		printf(", \"box\": {\"top\": %.17g, \"left\": %.17g, \"height\": %.17g, \"width\": %.17g, \"flip\": %u}",
		       box.y, box.x, box.h, box.w, box.flip);
		printf(", \"output\": ");
		if (out)
			json_string(stdout, out);
		else
			printf("null");
		printf("}\n");
	} else {
		printf("epoch %u pos %u: sample %u, label %d (%s)\n", epoch, pos,
		       id, dlc_index_label(idx, id), cls ? cls : "?");
		if (pack)
			printf("path %s in pack %s (%u bytes at %llu)\n", path,
			       dlc_pack_path(pack), pe.len,
			       (unsigned long long)pe.off);
		else
			printf("path %s\n", path);
		printf("box top %.17g left %.17g height %.17g width %.17g flip %u\n",
		       box.y, box.x, box.h, box.w, box.flip);
		if (eval)
			printf("torchvision: F.center_crop(F.resize(img, %u), [%u, %u])\n",
			       cfg.transform.resize, size, size);
		else
			printf("torchvision: F.resized_crop(img, %.0f, %.0f, %.0f, %.0f, [%u, %u], antialias=True)%s\n",
			       box.y, box.x, box.h, box.w, size, size,
			       box.flip ? ", then F.hflip" : "");
		if (out)
			printf("wrote %ux%u RGB to %s%s\n", size, size, out,
			       exact ? "" : " (DCT scale chosen for speed; --exact for scale 1)");
	}
	rc = 0;
out:
	dlc_decoder_destroy(dec);
	dlc_index_free(idx);
	free(order);
	free(rgb);
	free(jpg);
	return rc;
}
