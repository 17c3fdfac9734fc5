// SPDX-License-Identifier: MIT
/*
 * dlcachectl readbench: the read path alone, no decode, no cache. The
 * samples of a pack are read in a shuffled order through the loader's own
 * reader (reader.c, via source.c: io_uring NVMe passthrough for a pack on
 * an NVMe namespace, else O_DIRECT), queue-depth reads in flight, and
 * every read is checked against the pack's CRC-32C. It reports reads/s and
 * the process's CPU time per read (user + system, io_uring's workers
 * included: they are threads of this process), which is what passthrough
 * is meant to save.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "crc32c.h"
#include "dlcache.h"
#include "internal.h"
#include "pack.h"
#include "reader.h"
#include "source.h"

static const char readbench_usage[] =
	"usage: dlcachectl readbench PACK [--reads N] [--queue-depth Q]\n"
	"                            [--no-passthru] [--against FILE.dlp] [--json]\n"
	"\n"
	"Read the samples of PACK (a .dlp file, or a pack written onto a device\n"
	"with dlcachectl pack --to) in shuffled order until N reads, Q at a\n"
	"time, as the loader reads them, without decoding; check each against\n"
	"its CRC-32C; print reads/s, MB/s and the CPU time per read.\n"
	"\n"
	"  --reads N          reads in all (default: every sample once)\n"
	"  --queue-depth Q    reads in flight (default 32)\n"
	"  --no-passthru      a pack on an NVMe namespace: O_DIRECT on its block\n"
	"                     device, not io_uring NVMe passthrough\n"
	"  --against FILE     also compare every read, byte for byte, with the\n"
	"                     same sample of another pack of the same data set\n"
	"                     (read with pread: not the path under test)\n"
	"  --json             one JSON object on stdout\n"
	"  -h, --help         show this help\n";

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

struct rb {
	struct dlc_source *src;
	struct dlc_reader *r;
	const struct dlc_pack *pack;
	const struct dlc_index *idx;
	uint32_t *order, n;
	uint64_t reads, want, queued, bytes, bad;
	/* --against: the other pack, its fd, and reads that differ from it */
	struct dlc_pack *ref;
	int ref_fd;
	uint8_t *ref_buf;
	uint64_t differ;
	/* the reader's log and counts (which path the reads took) */
	struct dlc_logger log;
	struct dlc_stats st;
	double secs, cpu;	/* the reads' wall and CPU time */
};

/* Whether @buf is sample @id's bytes in the reference pack. */
static int same_as_ref(struct rb *b, uint32_t id, const struct dlc_buf *buf)
{
	struct dlc_pack_entry e;
	uint64_t done = 0;
	ssize_t n;

	if (dlc_pack_entry(b->ref, id, &e) || e.len != buf->len)
		return 0;
	while (done < e.len) {
		n = pread(b->ref_fd, b->ref_buf + done, e.len - done,
			  (off_t)(e.off + done));
		if (n <= 0)
			return 0;
		done += (uint64_t)n;
	}
	return !memcmp(b->ref_buf, buf->data, e.len);
}

/* Queue reads until the reader is full or every read is queued. */
static int fill(struct rb *b)
{
	char scratch[8];
	int ret;

	while (b->queued < b->want) {
		uint32_t id = b->order[b->queued % b->n];

		ret = dlc_source_queue(b->src, b->r, id, id, scratch,
				       sizeof(scratch));
		if (ret == -EBUSY)
			break;
		if (ret)
			return ret;
		b->queued++;
	}
	return dlc_reader_submit(b->r);
}

static int run(struct rb *b)
{
	struct dlc_read_done d[64];
	struct dlc_pack_entry e;
	int got, i, ret;

	while (b->reads < b->want) {
		ret = fill(b);
		if (ret)
			return ret;
		got = dlc_reader_reap(b->r, d, 64, 1);
		if (got < 0)
			return got;
		for (i = 0; i < got; i++) {
			uint32_t id = (uint32_t)d[i].tag;

			if (dlc_source_requeue(b->src, b->r, id, &d[i]))
				continue;
			if (d[i].err) {
				fprintf(stderr, "dlcachectl readbench: sample %u "
					"(%s): %s failed: %s\n", id,
					dlc_index_relpath(b->idx, id),
					d[i].why ? d[i].why : "read",
					strerror(-d[i].err));
				return d[i].err;
			}
			dlc_pack_entry(b->pack, id, &e);
			if (d[i].buf->len != e.len ||
			    dlc_crc32c(0, d[i].buf->data, e.len) != e.crc)
				b->bad++;
			if (b->ref && !same_as_ref(b, id, d[i].buf))
				b->differ++;
			b->bytes += d[i].buf->len;
			b->reads++;
			dlc_buf_put(d[i].buf);
		}
	}
	return 0;
}

/* What readbench's command line asks for. */
struct readbench_args {
	const char *path;	/* PACK */
	const char *against;	/* --against FILE.dlp, or NULL */
	uint32_t qd, nreads;	/* nreads 0: every sample once */
	int json, passthru;
};

/*
 * readbench's options. Returns CMD_RUN, or the exit status after --help
 * or a usage error.
 */
static int readbench_parse(int argc, char **argv, struct readbench_args *a)
{
	uint32_t i;

	memset(a, 0, sizeof(*a));
	a->qd = 32;
	a->passthru = 1;
	for (i = 1; i < (uint32_t)argc; i++) {
		const char *s = argv[i], *v = i + 1 < (uint32_t)argc ?
					      argv[i + 1] : NULL;

		if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
			fputs(readbench_usage, stdout);
			return 0;
		} else if (!strcmp(s, "--reads")) {
			if (parse_u32(v, 1, UINT32_MAX, &a->nreads))
				return usage_error("readbench", "--reads wants 1..2^32-1");
			i++;
		} else if (!strcmp(s, "--queue-depth")) {
			if (parse_u32(v, 1, 1024, &a->qd))
				return usage_error("readbench", "--queue-depth wants 1..1024");
			i++;
		} else if (!strcmp(s, "--no-passthru")) {
			a->passthru = 0;
		} else if (!strcmp(s, "--against")) {
			if (!v)
				return usage_error("readbench", "--against needs a pack");
			a->against = argv[++i];
		} else if (!strcmp(s, "--json")) {
			a->json = 1;
		} else if (s[0] == '-' && s[1]) {
			return usage_error("readbench", "unknown option '%s'", s);
		} else if (!a->path) {
			a->path = s;
		} else {
			return usage_error("readbench", "unexpected argument '%s'", s);
		}
	}
	if (!a->path)
		return usage_error("readbench", "missing PACK (try --help)");
	return CMD_RUN;
}

/*
 * --against: open the other pack, which must hold as many samples, and
 * a buffer for its largest. Returns 0, or 1 after the line saying why.
 */
static int open_against(struct rb *b, const char *against, const char *path)
{
	struct dlc_pack_entry e;
	uint32_t max = 0, i;
	char why[256];
	int ret;

	ret = dlc_pack_open(against, &b->ref, why, sizeof(why));
	if (ret)
		return fail("readbench", "%s: %s", against,
			    why[0] ? why : strerror(-ret));
	if (dlc_pack_count(b->ref) != b->n)
		return fail("readbench", "%s has %u samples, %s %u", against,
			    dlc_pack_count(b->ref), path, b->n);
	for (i = 0; i < b->n; i++)
		if (!dlc_pack_entry(b->ref, i, &e) && e.len > max)
			max = e.len;
	b->ref_fd = open(dlc_pack_path(b->ref), O_RDONLY | O_CLOEXEC);
	b->ref_buf = malloc(max ? max : 1);
	if (b->ref_fd < 0 || !b->ref_buf)
		return fail("readbench", "%s: %s", against,
			    strerror(b->ref_fd < 0 ? errno : ENOMEM));
	return 0;
}

/* A fixed shuffle (xorshift64, Fisher-Yates): runs compare. */
static void shuffle_order(uint32_t *order, uint32_t n)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	uint32_t i;

	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n - 1; i > 0; i--) {
		uint32_t j, t;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		j = (uint32_t)(x % (i + 1));
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
}

/*
 * Open the pack at a->path (and --against's) for b's reads. Returns 0,
 * or 1 after the line saying why.
 */
static int readbench_open(const struct readbench_args *a, struct rb *b)
{
	int ret;

	ret = dlc_source_open(b->idx, 1, &b->src);
	if (ret)
		return fail("readbench", "%s: %s", a->path, strerror(-ret));
	b->pack = dlc_source_pack(b->src);
	if (!b->pack || !dlc_index_count(b->idx))
		return fail("readbench", "%s: not a pack with samples", a->path);
	b->n = dlc_index_count(b->idx);
	b->want = a->nreads ? a->nreads : b->n;
	b->order = malloc(sizeof(*b->order) * b->n);
	if (!b->order)
		return fail("readbench", "%s", strerror(ENOMEM));
	if (a->against)
		return open_against(b, a->against, a->path);
	return 0;
}

/*
 * The reads, timed, through the loader's reader, every one checked.
 * Returns 0, or 1 after the line saying why.
 */
static int readbench_run(const struct readbench_args *a, struct rb *b)
{
	struct dlc_reader_opts ro = { 0 };
	double t0, c0;
	int ret;

	shuffle_order(b->order, b->n);
	ro.queue_depth = a->qd;
	ro.direct = 1;
	ro.log = &b->log;
	ro.stats = &b->st;
	ro.passthru = a->passthru ?
		      (uint32_t)dlc_source_passthru(b->src, &b->log) : 0;
	ret = dlc_reader_create(&ro, &b->r);
	if (ret)
		return fail("readbench", "io_uring: %s", strerror(-ret));
	c0 = cpu_s();
	t0 = (double)now_ns() / 1e9;
	ret = run(b);
	b->secs = (double)now_ns() / 1e9 - t0;
	b->cpu = cpu_s() - c0;
	if (ret)
		return fail("readbench", "%s: %s", a->path, strerror(-ret));
	if (b->bad)
		return fail("readbench", "%s: %llu reads did not match their "
			    "crc32c", a->path, (unsigned long long)b->bad);
	if (b->differ)
		return fail("readbench", "%s: %llu of %llu reads differ from the "
			    "same samples of %s", a->path,
			    (unsigned long long)b->differ,
			    (unsigned long long)b->reads, a->against);
	return 0;
}

/* reads/s, MB/s and CPU time a read, and the path they took. */
static void readbench_report(const struct readbench_args *a,
			     const struct rb *b)
{
	const struct dlc_stats *st = &b->st;
	double secs = b->secs, cpu = b->cpu;

	if (a->json) {
		printf("{\"pack\": ");
		json_string(stdout, dlc_pack_path(b->pack));
		printf(", \"mode\": \"%s\", \"reads\": %llu, "
		       "\"bytes\": %llu, \"seconds\": %.4f, \"reads_per_s\": %.1f, "
		       "\"mb_per_s\": %.2f, \"cpu_us_per_read\": %.2f, "
		       "\"passthru_commands\": %llu, \"direct_reads\": %llu, "
		       "\"queue_depth\": %u, \"compared\": %s}\n",
		       st->passthru_reads ? "passthru" :
		       st->direct_reads ? "direct" : "buffered",
		       (unsigned long long)b->reads, (unsigned long long)b->bytes,
		       secs, b->reads / secs, b->bytes / secs / 1e6,
		       cpu * 1e6 / (double)b->reads,
		       (unsigned long long)st->passthru_reads,
		       (unsigned long long)st->direct_reads, a->qd,
		       b->ref ? "true" : "false");
	} else {
		printf("%s: %llu reads (%s) in %.2f s: %.0f reads/s, %.1f MB/s, "
		       "%.1f us of CPU a read, all matching their crc32c%s\n",
		       dlc_pack_path(b->pack), (unsigned long long)b->reads,
		       st->passthru_reads ? "NVMe passthrough" :
		       st->direct_reads ? "O_DIRECT" : "buffered", secs,
		       b->reads / secs, b->bytes / secs / 1e6,
		       cpu * 1e6 / (double)b->reads,
		       b->ref ? " and the other pack's bytes" : "");
	}
}

static void readbench_close(struct rb *b)
{
	dlc_reader_destroy(b->r);
	dlc_source_close(b->src);
	if (b->ref_fd >= 0)
		close(b->ref_fd);
	free(b->ref_buf);
	dlc_pack_close(b->ref);
	free(b->order);
}

int cmd_readbench(int argc, char **argv)
{
	struct readbench_args a;
	struct dlc_index *idx = NULL;
	struct rb b = { .ref_fd = -1 };	/* closed only once opened */
	int ret, rc;

	rc = readbench_parse(argc, argv, &a);
	if (rc != CMD_RUN)
		return rc;
	ret = open_index(a.path, &idx);
	if (ret)
		return fail("readbench", "%s: %s", a.path, index_error(ret));
	b.idx = idx;
	b.log = (struct dlc_logger){ dlc_log_stderr, NULL, DLC_LOG_WARN };
	rc = readbench_open(&a, &b);
	if (!rc)
		rc = readbench_run(&a, &b);
	if (!rc)
		readbench_report(&a, &b);
	readbench_close(&b);
	dlc_index_free(idx);
	return rc;
}
