// SPDX-License-Identifier: MIT
/*
 * dlcachectl pack DIR|INDEX -o FILE.dlp: the data set in one file, each
 * JPEG transcoded (losslessly) into a restart-indexed baseline JPEG so
 * that the loader decodes only a crop's MCUs (Documentation/pack.md).
 * Workers on every usable CPU read and transcode; the library's writer
 * appends their results in whatever order they finish.
 *
 * dlcachectl pack DIR|INDEX --to DEVICE writes the pack onto a block
 * device instead, typically a dedicated NVMe namespace, from its first
 * byte: no file system below it. libblkid looks for a file system or a
 * partition table there first, and finding one refuses the device unless
 * --force is given.
 */
#include <blkid/blkid.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "crc32c.h"
#include "dlcache.h"
#include "internal.h"
#include "nvme.h"
#include "packwrite.h"

static const char pack_usage[] =
	"usage: dlcachectl pack DIR|INDEX -o FILE.dlp | --to DEVICE [--threads N]\n"
	"                       [--interval MCUS|row] [--max-side N [--quality Q]]\n"
	"                       [--align BYTES] [--force] [--json]\n"
	"\n"
	"Pack the data set DIR (ImageFolder) or INDEX into one file that the\n"
	"loader reads wherever it reads an index. Each JPEG is transcoded\n"
	"losslessly (the same pixels) into a baseline JPEG with a restart\n"
	"marker every few MCUs and the table of its MCU rows, so a crop\n"
	"decodes only its own MCUs. Files that cannot be (CMYK, 12-bit, not a\n"
	"JPEG, corrupt) are kept as they are and listed. The source is never\n"
	"modified; FILE.dlp appears only once complete.\n"
	"\n"
	"  -o, --output FILE   pack to write (FILE.part while writing)\n"
	"  --to DEVICE         write the pack onto a block device or NVMe\n"
	"                      namespace (/dev/nvme0n1, /dev/ng0n1 or\n"
	"                      nvme:NGUID|EUI64), from its first byte; the\n"
	"                      loader reads it by that name\n"
	"  --threads N         workers (default: every usable CPU)\n"
	"  --interval MCUS     MCUs per restart interval, or 'row' (default 4)\n"
	"  --max-side N        resize images whose longer side is above N\n"
	"                      (lossy: re-encoded; default: never)\n"
	"  --quality Q         JPEG quality of those re-encodes (1..100, 90)\n"
	"  --align BYTES       alignment of each sample (power of 2, 1..4096;\n"
	"                      default 512)\n"
	"  --force             replace FILE if it exists; with --to, write over\n"
	"                      a file system or partition table found there\n"
	"  --json              the summary as one JSON object on stdout\n"
	"  -h, --help          show this help\n";

#define PACK_LIST_MAX	5	/* kept-as-is samples named in the summary */

static volatile sig_atomic_t pack_signal;

static void on_signal(int sig)
{
	pack_signal = sig;
}

/* A sample transcoded ahead of its turn (struct pack_job.parked). */
struct pack_parked {
	int used;
	uint32_t id;
	struct dlc_packw_sample s;
	uint8_t *buf;			/* its source: s.src points into it */
	size_t len;
	char why[256];
};

struct pack_job {
	struct dlc_index *idx;
	struct dlc_packw *w;
	atomic_uint next;
	atomic_uint done;
	atomic_uint rst;
	atomic_uint plain;
	atomic_ullong src_bytes;
	atomic_int failed;
	pthread_mutex_t lock;
	/*
	 * The next sample to add (under lock): samples are added in id
	 * order, whatever order their transcodes end in, so that a pack is
	 * the same file for any number of threads. turn_cv: it moved, or
	 * the job failed.
	 */
	uint32_t turn;
	pthread_cond_t turn_cv;
	/*
	 * Samples transcoded before their turn (under lock): parked until it
	 * comes, parked_max of them (4 a thread) at most; a worker whose
	 * sample finds the parking full waits.
	 */
	struct pack_parked *parked;
	uint32_t nparked, parked_max;
	char err[PATH_MAX + 256];	/* the first failure */
	unsigned int nlisted;
	char listed[PACK_LIST_MAX][PATH_MAX + 160];
};

static void job_fail(struct pack_job *job, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void job_fail(struct pack_job *job, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&job->lock);
	if (!atomic_load(&job->failed)) {
		va_start(ap, fmt);
		vsnprintf(job->err, sizeof(job->err), fmt, ap);
		va_end(ap);
	}
	atomic_store(&job->failed, 1);
	pthread_cond_broadcast(&job->turn_cv);
	pthread_mutex_unlock(&job->lock);
}

/*
 * Sample @id (its source @buf of @len bytes, transcoded as @s): added to
 * the pack and counted. 0, or -1 after job_fail(). Called only by the
 * thread whose turn it is; frees @s and @buf.
 */
static int add_one(struct pack_job *job, uint32_t id, uint8_t *buf,
		   size_t len, struct dlc_packw_sample *s, const char *why)
{
	const char *rel = dlc_index_relpath(job->idx, id);
	int ret = dlc_packw_add_sample(job->w, id, s);

	dlc_packw_sample_free(s);
	free(buf);
	if (ret == -ENOSPC && dlc_packw_device_bytes(job->w)) {
		job_fail(job, "the device holds %llu bytes: too few for this "
			 "pack (full at sample %u, %s)",
			 (unsigned long long)dlc_packw_device_bytes(job->w),
			 id, rel);
		return -1;
	}
	if (ret < 0) {
		job_fail(job, "%s/%s: %s", dlc_index_root(job->idx), rel,
			 strerror(-ret));
		return -1;
	}
	atomic_fetch_add(&job->src_bytes, len);
	if (ret == DLC_PACK_RST) {
		atomic_fetch_add(&job->rst, 1);
	} else {
		atomic_fetch_add(&job->plain, 1);
		pthread_mutex_lock(&job->lock);
		if (job->nlisted < PACK_LIST_MAX)
			snprintf(job->listed[job->nlisted++],
				 sizeof(job->listed[0]), "%s: %s", rel, why);
		pthread_mutex_unlock(&job->lock);
	}
	atomic_fetch_add(&job->done, 1);
	return 0;
}

/*
 * Called with job->lock held: wait for turn_cv at most 100 ms (a signal
 * handler cannot signal the condition, so pack_signal is polled).
 */
static void wait_turn_cv(struct pack_job *job)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 100 * 1000 * 1000;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&job->turn_cv, &job->lock, &until);
}

/*
 * Sample @id is transcoded. On its turn, add it, then every parked sample
 * that follows; before its turn, park it (waiting while the parking is
 * full) so that the worker goes on with another sample. 0, or -1 when
 * the job failed or a signal came. Takes @buf and @s.
 */
static int submit(struct pack_job *job, uint32_t id, uint8_t *buf, size_t len,
		  struct dlc_packw_sample *s, const char *why)
{
	struct pack_parked cur, *p;
	uint32_t k;
	int ret;

	pthread_mutex_lock(&job->lock);
	while (job->turn != id && job->nparked == job->parked_max &&
	       !atomic_load(&job->failed) && !pack_signal)
		wait_turn_cv(job);
	if (atomic_load(&job->failed) || pack_signal) {
		pthread_mutex_unlock(&job->lock);
		dlc_packw_sample_free(s);
		free(buf);
		return -1;
	}
	if (job->turn != id) {
		/* nparked < parked_max: a free place exists */
		for (p = job->parked; p->used; p++)
			;
		p->used = 1;
		p->id = id;
		p->s = *s;
		p->buf = buf;
		p->len = len;
		snprintf(p->why, sizeof(p->why), "%s", why);
		job->nparked++;
		pthread_mutex_unlock(&job->lock);
		return 0;
	}
	pthread_mutex_unlock(&job->lock);
	ret = add_one(job, id, buf, len, s, why);
	for (;;) {
		pthread_mutex_lock(&job->lock);
		job->turn++;
		pthread_cond_broadcast(&job->turn_cv);
		for (k = 0, p = NULL; !ret && k < job->parked_max; k++)
			if (job->parked[k].used &&
			    job->parked[k].id == job->turn) {
				p = &job->parked[k];
				break;
			}
		if (!p) {
			pthread_mutex_unlock(&job->lock);
			return ret;
		}
		cur = *p;
		p->used = 0;
		job->nparked--;
		pthread_mutex_unlock(&job->lock);
		ret = add_one(job, cur.id, cur.buf, cur.len, &cur.s, cur.why);
	}
}

/* After the workers: what a failure or a signal left parked, freed. */
static void pack_unpark(struct pack_job *job)
{
	uint32_t k;

	for (k = 0; job->parked && k < job->parked_max; k++)
		if (job->parked[k].used) {
			dlc_packw_sample_free(&job->parked[k].s);
			free(job->parked[k].buf);
		}
	free(job->parked);
	job->parked = NULL;
}

static int pack_one(struct pack_job *job, uint32_t id)
{
	const char *rel = dlc_index_relpath(job->idx, id);
	struct dlc_packw_sample sample;
	char path[PATH_MAX], why[256];
	uint8_t *buf = NULL;
	size_t len = 0;
	uint32_t want;
	int ret;

	if (snprintf(path, sizeof(path), "%s/%s", dlc_index_root(job->idx),
		     rel) >= (int)sizeof(path)) {
		job_fail(job, "%s/%s: %s", dlc_index_root(job->idx), rel,
			 strerror(ENAMETOOLONG));
		return -1;
	}
	ret = read_whole_file(path, &buf, &len);
	if (ret) {
		job_fail(job, "%s: %s", path, strerror(-ret));
		return -1;
	}
	/* What is packed is what was indexed, or nothing. */
	if (!dlc_index_crc32c(job->idx, id, &want) &&
	    dlc_crc32c(0, buf, len) != want) {
		free(buf);
		job_fail(job, "%s: changed since it was indexed (crc32c)", path);
		return -1;
	}
	if (!len) {
		free(buf);
		job_fail(job, "%s: empty file", path);
		return -1;
	}
	ret = dlc_packw_prepare(job->w, buf, len, &sample, why, sizeof(why));
	if (!ret)
		return submit(job, id, buf, len, &sample, why);
	free(buf);
	job_fail(job, "%s: %s", path, strerror(-ret));
	return -1;
}

static void *pack_worker(void *arg)
{
	struct pack_job *job = arg;
	uint32_t n = dlc_index_count(job->idx), id;

	while (!pack_signal && !atomic_load(&job->failed)) {
		id = atomic_fetch_add(&job->next, 1);
		if (id >= n || pack_one(job, id))
			break;
	}
	return NULL;
}

/* What pack's command line asks for. */
struct pack_args {
	const char *src, *out;
	uint32_t threads;
	int force;
	int json;
	struct dlc_packw_opts o;
};

/*
 * pack's options. Returns CMD_RUN, or the exit status after --help or a
 * usage error.
 */
static int pack_parse(int argc, char **argv, struct pack_args *a)
{
	int i, opts = 1;

	memset(a, 0, sizeof(*a));
	a->o.rst.interval = 4;
	for (i = 1; i < argc; i++) {
		const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (opts && (!strcmp(s, "-h") || !strcmp(s, "--help"))) {
			fputs(pack_usage, stdout);
			return 0;
		} else if (opts && (!strcmp(s, "-o") || !strcmp(s, "--output"))) {
			if (!v)
				return usage_error("pack", "%s needs a file", s);
			if (a->out)
				return usage_error("pack", "more than one output");
			a->out = argv[++i];
		} else if (opts && !strcmp(s, "--to")) {
			if (!v)
				return usage_error("pack", "--to needs a device");
			if (a->out)
				return usage_error("pack", "more than one output");
			a->out = argv[++i];
			a->o.device = 1;
		} else if (opts && !strcmp(s, "--threads")) {
			if (parse_u32(v, 1, 1024, &a->threads))
				return usage_error("pack", "--threads wants 1..1024");
			i++;
		} else if (opts && !strcmp(s, "--interval")) {
			if (v && !strcmp(v, "row"))
				a->o.rst.interval = 0;
			else if (parse_u32(v, 1, 4096, &a->o.rst.interval))
				return usage_error("pack", "--interval wants "
						   "1..4096 MCUs or 'row'");
			i++;
		} else if (opts && !strcmp(s, "--max-side")) {
			if (parse_u32(v, 16, 65535, &a->o.rst.max_side))
				return usage_error("pack", "--max-side wants "
						   "16..65535");
			i++;
		} else if (opts && !strcmp(s, "--quality")) {
			if (parse_u32(v, 1, 100, &a->o.rst.quality))
				return usage_error("pack", "--quality wants 1..100");
			i++;
		} else if (opts && !strcmp(s, "--align")) {
			if (parse_u32(v, 1, 4096, &a->o.align) ||
			    (a->o.align & (a->o.align - 1)))
				return usage_error("pack", "--align wants a power "
						   "of two, 1..4096");
			i++;
		} else if (opts && !strcmp(s, "--force")) {
			a->force = 1;
		} else if (opts && !strcmp(s, "--json")) {
			a->json = 1;
		} else if (opts && !strcmp(s, "--")) {
			opts = 0;
		} else if (opts && s[0] == '-' && s[1]) {
			return usage_error("pack", "unknown option '%s'", s);
		} else if (!a->src) {
			a->src = s;
		} else {
			return usage_error("pack", "unexpected argument '%s'", s);
		}
	}
	if (!a->src || !*a->src)
		return usage_error("pack", "missing DIR or INDEX (try --help)");
	if (!a->out || !*a->out)
		return usage_error("pack", "missing -o FILE or --to DEVICE "
				   "(try --help)");
	if (a->o.rst.quality && !a->o.rst.max_side)
		return usage_error("pack", "--quality needs --max-side");
	return CMD_RUN;
}

/*
 * Whether @out would land inside the data set at @root or on the index
 * file @src: writing there would modify the source.
 */
static int out_in_source(const char *out, const char *src, const char *root)
{
	char *dir = strdup(out), *slash, *rdir, *rsrc, *rout = NULL;
	size_t rl = strlen(root);
	int in = 0;

	if (!dir)
		return 0;
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	rdir = realpath(slash ? dir : ".", NULL);
	if (rdir && (!strncmp(rdir, root, rl) &&
		     (rdir[rl] == '/' || !rdir[rl])))
		in = 1;
	rsrc = realpath(src, NULL);
	rout = realpath(out, NULL);
	if (rsrc && rout && !strcmp(rsrc, rout))
		in = 1;
	free(dir);
	free(rdir);
	free(rsrc);
	free(rout);
	return in;
}

/*
 * --to: @dev (resolved into @blk) must be a block device holding neither
 * a file system nor a partition table (unless @force), and large enough
 * for what the samples of @idx need at least.
 */
static int check_device(const char *dev, const struct dlc_index *idx,
			int force, char *blk, size_t blk_len)
{
	uint64_t need = 4096, size = 0, total = 0;
	const char *type = NULL, *what = "a file system";
	blkid_probe pr;
	char why[256], name[64];
	struct stat st;
	uint32_t i, n = dlc_index_count(idx);
	int ret;

	ret = dlc_nvme_name(dev, name, sizeof(name), why, sizeof(why));
	if (ret < 0)
		return fail("pack", "%s", why[0] ? why : strerror(-ret));
	if (ret)
		snprintf(blk, blk_len, "/dev/%s", name);
	else
		snprintf(blk, blk_len, "%s", dev);
	if (stat(blk, &st))
		return fail("pack", "%s: %s", blk, strerror(errno));
	if (!S_ISBLK(st.st_mode))
		return fail("pack", "%s: not a block device (-o writes a file)",
			    blk);
	pr = blkid_new_probe_from_filename(blk);
	if (!pr)
		return fail("pack", "%s: cannot probe it: %s", blk,
			    strerror(errno ? errno : EIO));
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
	size = (uint64_t)blkid_probe_get_size(pr);
	ret = blkid_do_safeprobe(pr);
	if (ret == 0 && blkid_probe_lookup_value(pr, "TYPE", &type, NULL) &&
	    !blkid_probe_lookup_value(pr, "PTTYPE", &type, NULL))
		what = "a partition table";
	if (ret == -2)
		type = "more than one signature";
	if (type && !force) {
		ret = fail("pack", "%s holds %s (%s): --force writes the pack "
			   "over it", blk, what, type);
		blkid_free_probe(pr);
		return ret;
	}
	blkid_free_probe(pr);
	/* Transcoding never shrinks a set by a fifth: it cannot fit. */
	for (i = 0; i < n; i++) {
		need += dlc_index_size(idx, i) / 5 * 4;
		total += dlc_index_size(idx, i);
	}
	if (size && need > size)
		return fail("pack", "%s holds %llu bytes; the %u samples hold "
			    "%llu, too many for it", blk,
			    (unsigned long long)size, n,
			    (unsigned long long)total);
	return 0;
}

static uint32_t default_threads(void)
{
	return dlc_cpu_usable(dlc_cpu_affinity(),
			      dlc_cpu_quota("/proc/self/cgroup",
					    "/sys/fs/cgroup"));
}

static void progress(const struct pack_job *job, uint32_t n, uint64_t t0)
{
	double s = (double)(now_ns() - t0) / 1e9;
	uint32_t done = atomic_load(&job->done);

	fprintf(stderr, "\r%u/%u images, %.0f images/s, %.1f MB read   ", done,
		n, s > 0 ? done / s : 0.0,
		(double)atomic_load(&job->src_bytes) / 1e6);
}

/* --to: read the pack back, as the loader will, and say what it records. */
static int device_summary(const char *blk, struct dlc_pack_device *dev,
			  char *id, size_t id_len)
{
	struct dlc_pack *p;
	char why[256];
	int ret;

	ret = dlc_pack_open(blk, &p, why, sizeof(why));
	if (ret)
		return fail("pack", "%s: the pack written does not read back: "
			    "%s", blk, why[0] ? why : strerror(-ret));
	dlc_pack_device(p, dev);
	dlc_pack_close(p);
	dlc_nvme_id_string(dev->nguid, dev->eui64, id, id_len);
	return 0;
}

/* The pack being written, and what the summary says of it. */
struct pack_run {
	struct pack_job job;
	uint64_t t0;		/* when it started: the index's opening counts */
	uint32_t n;		/* samples */
	char blk[PATH_MAX];	/* --to: the block device */
	struct dlc_pack_device dev;	/* --to: what the pack records of it */
	char id[64];		/* --to: the NVMe id that also names it */
	uint64_t packed;	/* the pack's bytes */
};

/*
 * The source's index, checked (not a pack, --to's device fit for it,
 * -o's file not inside it), and the pack's writer. Returns 0, or 1 after
 * the line saying why.
 */
static int pack_open(struct pack_args *a, struct pack_run *r)
{
	struct pack_job *job = &r->job;
	char why[PATH_MAX + 256];
	struct stat st;
	int ret;

	if (!a->o.device && !a->force && !lstat(a->out, &st))
		return fail("pack", "%s exists (--force replaces it)", a->out);
	r->t0 = now_ns();
	ret = open_index(a->src, &job->idx);
	if (ret)
		return fail("pack", "%s: %s", a->src, index_error(ret));
	if (dlc_index_pack(job->idx)) {
		dlc_index_free(job->idx);
		return fail("pack", "%s is a pack already", a->src);
	}
	if (a->o.device) {
		ret = check_device(a->out, job->idx, a->force, r->blk,
				   sizeof(r->blk));
		if (ret) {
			dlc_index_free(job->idx);
			return ret;
		}
	} else if (out_in_source(a->out, a->src, dlc_index_root(job->idx))) {
		ret = fail("pack", "%s: inside the source data set %s (the "
			   "source is never modified)", a->out,
			   dlc_index_root(job->idx));
		dlc_index_free(job->idx);
		return ret;
	}
	r->n = dlc_index_count(job->idx);
	ret = dlc_packw_create(a->out, job->idx, &a->o, &job->w, why,
			       sizeof(why));
	if (ret) {
		dlc_index_free(job->idx);
		return fail("pack", "%s", why[0] ? why : strerror(-ret));
	}
	return 0;
}

/*
 * Run a->threads workers over the samples until they are all packed, one
 * fails or a signal comes; the progress line meanwhile on a terminal.
 */
static void pack_workers(const struct pack_args *a, struct pack_run *r)
{
	struct pack_job *job = &r->job;
	uint32_t k, started = 0;
	pthread_t *tid;
	int ret, tty;

	tty = isatty(STDERR_FILENO);
	tid = calloc(a->threads, sizeof(*tid));
	if (!tid)
		job_fail(job, "%s", strerror(ENOMEM));
	for (k = 0; tid && k < a->threads; k++) {
		ret = pthread_create(&tid[k], NULL, pack_worker, job);
		if (ret) {
			job_fail(job, "pthread_create: %s", strerror(ret));
			break;
		}
		started++;
	}
	/* The progress line, while the workers run. */
	while (tty && started && atomic_load(&job->done) < r->n &&
	       !atomic_load(&job->failed) && !pack_signal) {
		struct timespec ts = { 0, 250 * 1000 * 1000 };

		nanosleep(&ts, NULL);
		progress(job, r->n, r->t0);
	}
	for (k = 0; k < started; k++)
		pthread_join(tid[k], NULL);
	free(tid);
	if (tty)
		fputc('\n', stderr);
}

/*
 * Pack every sample, SIGINT and SIGTERM leaving no pack, and complete
 * the pack (--to: read back). Returns 0, or 1 after the line saying why;
 * after a signal, frees the index and raises it again.
 */
static int pack_run(struct pack_args *a, struct pack_run *r)
{
	struct pack_job *job = &r->job;
	struct sigaction sa = { 0 }, old_int, old_term;
	char why[PATH_MAX + 256];
	struct stat st;
	int ret;

	if (!a->threads)
		a->threads = default_threads();
	if (a->threads > r->n)
		a->threads = r->n ? r->n : 1;
	pthread_mutex_init(&job->lock, NULL);
	pthread_cond_init(&job->turn_cv, NULL);
	job->parked_max = 4 * a->threads;
	job->parked = calloc(job->parked_max, sizeof(*job->parked));
	if (!job->parked)
		job_fail(job, "%s", strerror(ENOMEM));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	pack_workers(a, r);
	if (pack_signal || atomic_load(&job->failed)) {
		dlc_packw_abort(job->w);
		job->w = NULL;
		ret = pack_signal;
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		if (ret) {
			fprintf(stderr, "dlcachectl pack: interrupted: %s not "
				"written\n", a->out);
			dlc_index_free(job->idx);
			job->idx = NULL;
			raise(ret);
			return 1;
		}
		return fail("pack", "%s (%s)", job->err, a->o.device ?
			    "no pack on the device: its header is invalid" :
			    "not written");
	}
	r->packed = dlc_packw_bytes(job->w);
	ret = dlc_packw_finish(job->w, why, sizeof(why));
	job->w = NULL;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (ret)
		return fail("pack", "%s", why[0] ? why : strerror(-ret));
	if (a->o.device) {
		ret = device_summary(r->blk, &r->dev, r->id, sizeof(r->id));
		if (ret)
			return ret;
		r->packed = r->dev.pack_bytes;
	} else if (!stat(a->out, &st)) {
		r->packed = (uint64_t)st.st_size;
	}
	return 0;
}

/* The summary: sizes, speed and the samples kept as is; --json's object. */
static void pack_report(const struct pack_args *a, const struct pack_run *r)
{
	const struct pack_job *job = &r->job;
	double secs = (double)(now_ns() - r->t0) / 1e9;
	uint64_t src = atomic_load(&job->src_bytes), packed = r->packed;
	uint32_t n = r->n, k;

	if (a->json) {
		printf("{\"pack\":");
		json_string(stdout, a->o.device ? r->blk : a->out);
		printf(",\"samples\":%u,\"seconds\":%.3f,"
		       "\"images_per_s\":%.1f,\"threads\":%u,"
		       "\"source_bytes\":%llu,\"pack_bytes\":%llu,"
		       "\"overhead\":%.5f,\"transcoded\":%u,\"kept\":%u",
		       n, secs,
		       secs > 0 ? n / secs : 0.0, a->threads,
		       (unsigned long long)src, (unsigned long long)packed,
		       src ? ((double)packed - (double)src) / (double)src : 0.0,
		       atomic_load(&job->rst), atomic_load(&job->plain));
		if (a->o.device)
			printf(",\"device_bytes\":%llu,\"nsid\":%u,"
			       "\"nvme_id\":\"%s\"",
			       (unsigned long long)r->dev.dev_bytes, r->dev.nsid,
			       r->id);
		printf("}\n");
		return;
	}
	if (a->o.device)
		printf("%s: a pack of %llu bytes from its first byte (the device "
		       "holds %llu)%s%s\n", r->blk,
		       (unsigned long long)r->dev.pack_bytes,
		       (unsigned long long)r->dev.dev_bytes,
		       r->id[0] ? "; the loader also finds it as " : "", r->id);
	printf("%s: %u samples in %.2f s (%.0f images/s, %u thread%s): "
	       "source %llu bytes, pack %llu bytes (%+.2f %%); "
	       "%u transcoded, %u kept as is\n",
	       a->o.device ? r->blk : a->out, n, secs, secs > 0 ? n / secs : 0.0,
	       a->threads, a->threads == 1 ? "" : "s",
	       (unsigned long long)src, (unsigned long long)packed,
	       src ? 100.0 * ((double)packed - (double)src) / (double)src : 0.0,
	       atomic_load(&job->rst), atomic_load(&job->plain));
	for (k = 0; k < job->nlisted; k++)
		printf("  kept as is: %s\n", job->listed[k]);
	if (atomic_load(&job->plain) > job->nlisted)
		printf("  kept as is: ... and %u more\n",
		       atomic_load(&job->plain) - job->nlisted);
}

int cmd_pack(int argc, char **argv)
{
	struct pack_run r = { 0 };
	struct pack_args a;
	int rc;

	rc = pack_parse(argc, argv, &a);
	if (rc != CMD_RUN)
		return rc;
	rc = pack_open(&a, &r);
	if (rc)
		return rc;
	rc = pack_run(&a, &r);
	if (!rc)
		pack_report(&a, &r);
	pthread_mutex_destroy(&r.job.lock);
	pthread_cond_destroy(&r.job.turn_cv);
	pack_unpark(&r.job);
	dlc_index_free(r.job.idx);
	return rc;
}
