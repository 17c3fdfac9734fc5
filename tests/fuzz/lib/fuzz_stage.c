// SPDX-License-Identifier: MIT
/*
 * Fuzz harness: the staging tier's start-up scan (stage.c, scan() from
 * dlc_stage_open()). Each input is a small program that fills the data
 * set's staging directory, DIR/dlcache-UID/KEY, before the open: copies
 * of samples (an ID with leading zeros or a suffix, the index's size or
 * one byte off, the origin's mtime or another, a file, a symlink or a
 * directory), names of any bytes, temporary files of live and dead
 * processes, and the shared counters file. Then the stage opens (its
 * stager thread starts), its counters are checked and it closes.
 *
 * Invariant besides the sanitizers: the bytes the scan takes as staged
 * are at most one copy (whole 4 KiB blocks) of each sample that has a
 * valid one (a regular file whose name reads as its ID in decimal, of
 * the index's size and the origin's mtime): one sample is never taken
 * twice, whatever names its copies have ("7" and "07").
 *
 * The data set is made once per process: 12 small files in two classes.
 */
#include <sys/stat.h>
#include <inttypes.h>

#include "harness.h"

#include "dlcache.h"
#include "internal.h"
#include "source.h"
#include "stage.h"

#define SAMPLES		12
#define ID_SPACE	16	/* IDs drawn from 0..15: some past the index */

static struct dlc_index *idx;
static struct dlc_source *src;
static char root[128], stage_dir[128], key_dir[256];
static struct timespec mtime[SAMPLES];
static uint64_t size_of[SAMPLES];
/* This input made a valid copy of the sample: the scan may take it. */
static uint8_t may_stage[SAMPLES];

static int fill_order(void *arg, uint32_t epoch, uint32_t *ids, uint32_t len)
{
	uint32_t i;

	(void)arg;
	(void)epoch;
	for (i = 0; i < len; i++)
		ids[i] = i % SAMPLES;
	return 0;
}

static struct dlc_stage_opts opts(void)
{
	struct dlc_stage_opts o = {
		.dir = stage_dir, .budget = 1 << 20, .idx = idx, .src = src,
		.epoch_len = SAMPLES, .lead = 2, .epochs = 1,
		.fill_order = fill_order,
	};
	return o;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct dlc_stage_opts o;
	struct dlc_stage *st;
	char path[512];
	uint64_t key[2];
	uint8_t buf[SAMPLES * 97];
	struct stat sb;
	uint32_t i;

	(void)argc;
	(void)argv;
	atexit(fuzz_remove_dir_at_exit);
	snprintf(root, sizeof(root), "%s/data", fuzz_dir());
	snprintf(stage_dir, sizeof(stage_dir), "%s/stage", fuzz_dir());
	memset(buf, 0x5a, sizeof(buf));
	for (i = 0; i < SAMPLES; i++) {
		snprintf(path, sizeof(path), "%s/class_%u", root, i & 1);
		mkdir(root, 0700);
		mkdir(path, 0700);
		snprintf(path, sizeof(path), "%s/class_%u/img_%02u.jpg", root,
			 i & 1, i);
		fuzz_write(path, buf, 1 + i * 97);
	}
	if (dlc_index_build(root, &idx) || dlc_index_count(idx) != SAMPLES ||
	    dlc_source_open(idx, 0, &src))
		abort();
	for (i = 0; i < SAMPLES; i++) {
		dlc_source_name(src, i, path, sizeof(path));
		if (stat(path, &sb))
			abort();
		mtime[i] = sb.st_mtim;
		size_of[i] = dlc_index_size(idx, i);
	}
	/* The first open makes DIR/dlcache-UID/KEY. */
	o = opts();
	if (dlc_stage_open(&o, &st))
		abort();
	dlc_stage_close(st);
	dlc_index_key(idx, key);
	snprintf(key_dir, sizeof(key_dir), "%s/dlcache-%u/%016" PRIx64 "%016" PRIx64,
		 stage_dir, (unsigned int)getuid(), key[0], key[1]);
	return 0;
}

struct input {
	const uint8_t *p, *end;
};

static uint8_t next(struct input *in)
{
	return in->p < in->end ? *in->p++ : 0;
}

static void put_file(int dfd, const char *name, size_t len,
		     const struct timespec *t, const uint8_t *fill)
{
	static const uint8_t zeros[4096];
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
			O_NOFOLLOW, 0600);
	struct timespec times[2];

	if (fd < 0)
		return;		/* a name made twice as a directory */
	if (len && write(fd, fill ? fill : zeros, len) < 0)
		abort();
	if (t) {
		times[0] = *t;
		times[1] = *t;
		futimens(fd, times);
	}
	close(fd);
}

/* A copy of sample ID: its name, size, mtime and kind from the input. */
static void put_copy(int dfd, struct input *in)
{
	static const char suffix[] = "\0x. +\n0";
	uint32_t id = next(in) % ID_SPACE, zeros = next(in) % 4;
	uint8_t flags = next(in), tail = next(in) % sizeof(suffix);
	struct timespec t;
	uint64_t size;
	char name[64];

	snprintf(name, sizeof(name), "%0*u%c", (int)zeros + 1, id,
		 suffix[tail]);
	size = id < SAMPLES ? size_of[id] : 100;
	if (flags & 1)
		size += flags & 2 ? 1 : -1;
	t = id < SAMPLES ? mtime[id] : (struct timespec){ 1, 0 };
	if (flags & 4)
		t.tv_nsec ^= 1;
	if (flags & 8) {
		mkdirat(dfd, name, 0700);
	} else if (flags & 16) {
		char target[32];

		snprintf(target, sizeof(target), "%u", (id + 1) % SAMPLES);
		symlinkat(target, dfd, name);
	} else {
		char *end;
		unsigned long v = strtoul(name, &end, 10);

		size = size > 4096 ? 4096 : size;
		put_file(dfd, name, size, &t, NULL);
		if (!*end && v < SAMPLES && size == size_of[v] &&
		    t.tv_sec == mtime[v].tv_sec && t.tv_nsec == mtime[v].tv_nsec)
			may_stage[v] = 1;
	}
}

/* A name of the input's bytes ('/' and NUL made '_'), of a few bytes. */
static void put_named(int dfd, struct input *in)
{
	uint32_t len = next(in) % 24 + 1, i;
	char name[32];

	for (i = 0; i < len; i++) {
		name[i] = (char)next(in);
		if (name[i] == '/' || !name[i])
			name[i] = '_';
	}
	name[len] = '\0';
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return;
	put_file(dfd, name, next(in), NULL, NULL);
}

/* A temporary file: of this process, of init, or of no process. */
static void put_tmp(int dfd, struct input *in)
{
	uint8_t who = next(in), id = next(in);
	long pid = who == 0 ? (long)getpid() : who == 1 ? 1 : 4000000 + who;
	char name[64];

	snprintf(name, sizeof(name), ".tmp.%ld.%u", pid, id % ID_SPACE);
	put_file(dfd, name, id, NULL, NULL);
}

/* The shared counters file, its first bytes the input's. */
static void put_counters(int dfd, struct input *in)
{
	uint8_t bytes[64];
	uint32_t len = next(in) % sizeof(bytes), i;

	for (i = 0; i < len; i++)
		bytes[i] = next(in);
	unlinkat(dfd, "counters", 0);
	put_file(dfd, "counters", len, NULL, bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, data + size };
	struct dlc_stage_counters c;
	struct dlc_stage_opts o;
	struct dlc_stage *st;
	uint64_t bound = 0;
	int dfd, ops = 0, i;

	dfd = open(key_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		abort();
	fuzz_empty_dir(dfd);
	memset(may_stage, 0, sizeof(may_stage));
	/* At most 64 entries: the scan's cost is per entry, not the point. */
	while (in.p < in.end && ops++ < 64) {
		switch (next(&in) % 4) {
		case 0: put_copy(dfd, &in); break;
		case 1: put_named(dfd, &in); break;
		case 2: put_tmp(dfd, &in); break;
		default: put_counters(dfd, &in); break;
		}
	}
	close(dfd);
	for (i = 0; i < SAMPLES; i++)
		if (may_stage[i])
			bound += (size_of[i] + 4095) & ~4095ULL;
	o = opts();
	if (!dlc_stage_open(&o, &st)) {
		dlc_stage_counters(st, &c);
		if (c.used > bound) {
			fprintf(stderr, "the scan took %" PRIu64 " bytes of "
				"copies, more than one of each valid (%" PRIu64
				")\n", c.used, bound);
			abort();
		}
		dlc_stage_close(st);
	}
	return 0;
}
