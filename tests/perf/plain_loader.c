// SPDX-License-Identifier: MIT
/*
 * plain_loader: what a C user writes first, for `make bench`. Per sample:
 * read() the whole file, full TurboJPEG decode to RGB (tjDecompress2),
 * then the same RandomResizedCrop box, antialiased bilinear resize and
 * flip as dlcache (dlc_transform_crop + dlc_resize_rgb) into a batch
 * buffer. T threads share one work counter over the epoch's shuffled
 * order (dlc_order_fill, seed 0). No cache of its own: the page cache is
 * all it has. Prints images/s per epoch, as JSON with --json.
 *
 *   plain_loader INDEX [--threads T] [--epochs E] [--batch-size B] [--json]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <turbojpeg.h>
#include <unistd.h>

#include "dlcache.h"

struct shared {
	const struct dlc_index *idx;
	const uint32_t *order;
	uint32_t len, epoch, batch;
	struct dlc_transform t;
	uint32_t next;		/* work counter */
	uint64_t errors;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
	struct shared *s = arg;
	tjhandle tj = tjInitDecompress();
	size_t out = (size_t)s->t.out_w * s->t.out_h * 3, cap = 0, rcap = 0;
	uint8_t *batch = malloc(out * s->batch), *file = NULL, *rgb = NULL;
	char path[4096];

	if (!tj || !batch)
		abort();
	for (;;) {
		uint32_t pos = __atomic_fetch_add(&s->next, 1, __ATOMIC_RELAXED);
		uint32_t id;
		struct stat st;
		struct dlc_crop crop, box;
		int fd, w, h, sub, cs;
		size_t got = 0;
		ssize_t r;

		if (pos >= s->len)
			break;
		id = s->order[pos];
		snprintf(path, sizeof(path), "%s/%s", dlc_index_root(s->idx),
			 dlc_index_relpath(s->idx, id));
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st))
			goto bad;
		if ((size_t)st.st_size > cap) {
			cap = (size_t)st.st_size;
			file = realloc(file, cap);
			if (!file)
				abort();
		}
		while (got < (size_t)st.st_size &&
		       (r = read(fd, file + got, (size_t)st.st_size - got)) > 0)
			got += (size_t)r;
		close(fd);
		fd = -1;
		if (tjDecompressHeader3(tj, file, got, &w, &h, &sub, &cs))
			goto bad;
		if ((size_t)w * h * 3 > rcap) {
			rcap = (size_t)w * h * 3;
			rgb = realloc(rgb, rcap);
			if (!rgb)
				abort();
		}
		if (tjDecompress2(tj, file, got, rgb, w, w * 3, h, TJPF_RGB, 0))
			goto bad;
		if (dlc_transform_crop(&s->t, 0, s->epoch, id, (uint32_t)w,
				       (uint32_t)h, &crop))
			goto bad;
		/* torchvision crops, then resizes the crop: pass it as the image */
		box = (struct dlc_crop){ 0, 0, crop.w, crop.h, crop.flip, 0 };
		if (dlc_resize_rgb(rgb + ((size_t)crop.y * w + (size_t)crop.x) * 3,
				   (uint32_t)crop.w, (uint32_t)crop.h,
				   (size_t)w * 3, &box, s->t.out_w, s->t.out_h,
				   DLC_LAYOUT_NCHW, batch + out * (pos % s->batch)))
			goto bad;
		continue;
bad:
		if (fd >= 0)
			close(fd);
		__atomic_fetch_add(&s->errors, 1, __ATOMIC_RELAXED);
	}
	free(batch);
	free(file);
	free(rgb);
	tjDestroy(tj);
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "epochs", required_argument, NULL, 'e' },
		{ "batch-size", required_argument, NULL, 'b' },
		{ "json", no_argument, NULL, 'j' },
		{ 0 }
	};
	struct dlc_order_params op = { 0, 0, 0, 1, 1, 0, 0 };
	struct dlc_index *idx = NULL;
	struct shared s;
	uint32_t threads = (uint32_t)sysconf(_SC_NPROCESSORS_ONLN), epochs = 3;
	uint32_t e, i, n, *order;
	pthread_t *th;
	int c, json = 0, ret;

	memset(&s, 0, sizeof(s));
	s.batch = 64;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			threads = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'e':
			epochs = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'b':
			s.batch = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'j':
			json = 1;
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc - 1 || !threads || threads > 256 || !epochs || !s.batch)
		goto usage;
	ret = dlc_index_load(argv[optind], &idx);
	if (ret) {
		fprintf(stderr, "plain_loader: %s: %s\n", argv[optind], strerror(-ret));
		return 1;
	}
	n = dlc_index_count(idx);
	s.idx = idx;
	s.len = dlc_order_len(n, &op);
	order = malloc(sizeof(uint32_t) * s.len);
	th = calloc(threads, sizeof(*th));
	if (!order || !th)
		return 1;
	dlc_transform_default(&s.t, DLC_TRANSFORM_TRAIN);
	s.order = order;
	if (json)
		printf("{\"system\": \"plain_c\", \"threads\": %u, \"images\": %u, \"epochs\": [",
		       threads, n);
	for (e = 0; e < epochs; e++) {
		double t0;

		op.epoch = e;
		if (dlc_order_fill(n, &op, order, s.len))
			return 1;
		s.epoch = e;
		s.next = 0;
		s.errors = 0;
		t0 = now_s();
		for (i = 0; i < threads; i++)
			pthread_create(&th[i], NULL, worker, &s);
		for (i = 0; i < threads; i++)
			pthread_join(th[i], NULL);
		t0 = now_s() - t0;
		if (json)
			printf("%s{\"epoch\": %u, \"images_per_s\": %.2f, \"seconds\": %.4f, \"errors\": %llu}",
			       e ? ", " : "", e, s.len / t0, t0, (unsigned long long)s.errors);
		else
			printf("epoch %u: %u images in %.2f s: %.1f images/s, %llu errors\n",
			       e, s.len, t0, s.len / t0, (unsigned long long)s.errors);
		fflush(stdout);
	}
	if (json)
		printf("]}\n");
	free(order);
	free(th);
	dlc_index_free(idx);
	return 0;
usage:
	fprintf(stderr, "usage: plain_loader INDEX [--threads T] [--epochs E] [--batch-size B] [--json]\n");
	return 2;
}
