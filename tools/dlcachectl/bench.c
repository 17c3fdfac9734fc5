// SPDX-License-Identifier: MIT
/*
 * dlcachectl bench: run the loader as a training job would, epoch after
 * epoch, and report per epoch what a user tunes by: images/s, the cache
 * hit ratio, how long the consumer waited, the bytes read from storage, the
 * read rate and how busy the loader kept the storage.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>
#include <linux/futex.h>

#include "cfgopts.h"
#include "cli.h"
#include "dlcache.h"

static void help(void)
{
	printf("usage: dlcachectl bench INDEX|DIR [options]\n"
	       "\n"
	       "Run the loader for some epochs and report, per epoch, images/s,\n"
	       "the cache hit ratio, the consumer's wait, the bytes read, the read\n"
	       "rate and the storage's busy fraction.\n"
	       "\n"
	       "  --epochs N           epochs to run (default 3)\n"
	       "  --start-epoch N      the first epoch is N (default 0): a restarted job resumes\n"
	       "                       there, with epoch N's order and augmentation\n"
	       "  --resume SAMPLES     the first epoch runs only its rest after SAMPLES of its\n"
	       "                       global order were used, at any world size: k batches of\n"
	       "                       B on each of W ranks are k*B*W (dlc_loader_resume_epoch)\n"
	       "  --root DIR           the data set of INDEX is at DIR (moved since indexing)\n"
	       "  --batch-size B       samples per batch (default 64)\n"
	       "  --backend B          auto (default: dlcache.ko if loaded), inprocess or kernel\n"
	       "  --mode MODE          kernel backend: mode of a data set this creates (0600, 0640, 0660)\n"
	       "  --owner-uid UID      kernel backend: use the data set of owner UID, trusted (default\n"
	       "                       self: this user's own; DLCACHE_OWNER_UID overrides)\n"
	       "  --verify MODE        check samples against the index's crc32c: kernel (default:\n"
	       "                       bytes from dlcache.ko), off, or all (also reads from storage)\n"
	       "  --validate MODE      decode each sample's whole file to check it: once (default:\n"
	       "                       first decode per loader), always, or off\n"
	       "  --forms MODE         what the in-process cache keeps of a sample: off\n"
	       "                       (default: its encoded bytes), auto (its decoded\n"
	       "                       form where decode limits the loader), or decoded;\n"
	       "                       on, every sample is decoded as with --exact\n"
	       "  --verify-cost        measure what verification costs: epochs alternate between\n"
	       "                       --verify all and off (no cache, every sample read and\n"
	       "                       checked), after one warm-up epoch; prints the ratio\n"
	       "  --cache SIZE         in-process cache capacity, e.g. 256M (default: half the data set)\n"
	       "  --cache-fraction F   capacity as a fraction of the data set, 0..1\n"
	       "  --threads T          decode threads (default: CPUs - 1, plus the I/O thread)\n"
	       "  --queue-depth Q      io_uring reads in flight (default 64)\n"
	       "  --window W           look-ahead window in samples (default 256)\n"
	       "  --readahead BYTES|off  read-ahead budget, e.g. 64M (default 0: the library's,\n"
	       "                       64M at most 1/32 of memory); off: none past the window\n"
	       "  --staging-dir DIR    stage samples on local disk in DIR (the staging tier):\n"
	       "                       later epochs read the copies, not the data set's storage\n"
	       "  --staging-bytes SIZE what the copies may take, e.g. 200G (default: half the\n"
	       "                       free space in DIR)\n"
	       "  --cluster            cluster mode over MPI (a library built with MPI=1): the\n"
	       "                       ranks' caches (--cache each) are one; run under mpirun,\n"
	       "                       --rank/--world default to the MPI job's\n"
	       "  --peer-timeout MS    a peer silent this long is taken for dead (100..600000,\n"
	       "                       default 2000)\n"
	       "  --node-group NAME    node sharing: loaders of this user naming the same group\n"
	       "                       decode in the idle time of each other's CPUs\n"
	       "  --size S             output side in pixels (default 224)\n"
	       "  --layout nchw|nhwc   batch layout (default nchw)\n"
	       "  --eval               Resize + CenterCrop instead of the train transform\n"
	       "  --exact              decode at DCT scale 1: torchvision's pixels, slower\n"
	       "  --seed N             shuffle and augmentation seed (default 0)\n"
	       "  --rank R --world W   this process's shard, as DistributedSampler\n"
	       "  --step-ms MS         after each batch, wait MS ms: the time a training step\n"
	       "                       would take, to run jobs at different paces (default 0)\n"
	       "  --lockstep FILE      keep the ranks in step after every batch, as DDP's\n"
	       "                       gradient all-reduce does (FILE shared by the ranks,\n"
	       "                       absent or empty at the start)\n"
	       "  --on-error skip|substitute|fail   what a bad sample does (default skip)\n"
	       "  --no-direct          buffered reads instead of O_DIRECT\n"
	       "  --no-passthru        a pack on an NVMe namespace: O_DIRECT on its block\n"
	       "                       device, not io_uring NVMe passthrough on /dev/ngXnY\n"
	       "  --drop-caches        drop the page cache before the first epoch (root)\n"
	       "  --json               one JSON object on stdout instead of the table\n"
	       "  --digest             a hash per epoch of every batch's pixels, labels and IDs\n"
	       "                       in order: equal digests, equal batches\n"
	       "  -v, --verbose        library log lines on stderr\n");
}

static int drop_page_cache(void)
{
	FILE *f;

	sync();
	f = fopen("/proc/sys/vm/drop_caches", "w");
	if (!f)
		return -1;
	fputs("3\n", f);
	return fclose(f);
}

struct epoch_result {
	uint32_t epoch;
	uint64_t digest;
	uint64_t images;
	double seconds;
	double start_s;		/* CLOCK_MONOTONIC at the epoch's start */
	struct dlc_stats delta;
};

static void stats_delta(const struct dlc_stats *a, const struct dlc_stats *b,
			struct dlc_stats *d)
{
	const uint64_t *pa = (const uint64_t *)a, *pb = (const uint64_t *)b;
	uint64_t *pd = (uint64_t *)d;
	size_t i;

	for (i = 0; i < sizeof(*d) / sizeof(uint64_t); i++)
		pd[i] = pb[i] - pa[i];
	/* Levels, not counters. */
	d->cache_used = b->cache_used;
	d->cache_capacity = b->cache_capacity;
	d->reads_inflight = b->reads_inflight;
	d->readahead_held = b->readahead_held;
	d->readahead_budget = b->readahead_budget;
	d->staging_used = b->staging_used;
	d->staging_budget = b->staging_budget;
	d->cluster_used = b->cluster_used;
	d->cluster_capacity = b->cluster_capacity;
	d->cluster_dead_peers = b->cluster_dead_peers;
	d->cluster_backup_used = b->cluster_backup_used;
	d->node_guest_threads = b->node_guest_threads;
	d->node_borrowed_cpus = b->node_borrowed_cpus;
	d->forms_held = b->forms_held;
	d->forms_bytes = b->forms_bytes;
	d->forms_regime = b->forms_regime;
}

/* Bytes read from storage per second of the epoch, in MB (10^6). */
static double read_mbs(const struct dlc_stats *d, double seconds)
{
	return seconds > 0 ? (double)d->bytes_read / 1e6 / seconds : 0.0;
}

/*
 * The share of the epoch with at least one read in flight: the storage's
 * busy fraction as the loader kept it (0 where the backend does not
 * count it).
 */
static double busy_fraction(const struct dlc_stats *d, double seconds)
{
	return seconds > 0 ? (double)d->io_busy_ns / 1e9 / seconds : 0.0;
}

/* FNV-1a over 8-byte words (and the tail bytes), chained through @h. */
static uint64_t digest_add(uint64_t h, const void *data, size_t n)
{
	const uint8_t *p = data;
	uint64_t w;

	for (; n >= 8; n -= 8, p += 8) {
		memcpy(&w, p, sizeof(w));
		h = (h ^ w) * 1099511628211ULL;
	}
	for (; n; n--)
		h = (h ^ *p++) * 1099511628211ULL;
	return h;
}

static uint64_t batch_digest(uint64_t h, const struct dlc_batch *b)
{
	h = digest_add(h, b->data, (size_t)b->count * 3 * b->out_w * b->out_h);
	h = digest_add(h, b->labels, b->count * sizeof(*b->labels));
	return digest_add(h, b->ids, b->count * sizeof(*b->ids));
}

static double hit_ratio(const struct dlc_stats *s)
{
	uint64_t all = s->hits + s->misses;

	return all ? (double)s->hits / (double)all : 0.0;
}

/*
 * DDP ranks move in step: every training step ends in a gradient
 * all-reduce. --lockstep does the same to bench processes through a small
 * shared file holding each rank's count of finished batches, so that a
 * benchmark of several ranks on one shared cache measures what a job
 * would see, not ranks drifting apart. A rank waiting for the others
 * sleeps on a futex in the file (a word bumped by every rank that
 * finishes a batch), as a rank blocked in the collective does; a rank
 * polling instead would take CPU from the loaders on its own core.
 */
struct lockstep {
	uint64_t *done;		/* world counters, shared */
	uint32_t *seq;		/* after them: bumped on every batch done */
	uint32_t world, rank;
	uint64_t batches;	/* this rank's count */
};

static size_t lockstep_len(uint32_t world)
{
	return sizeof(uint64_t) * ((size_t)world + 1);
}

static int lockstep_open(struct lockstep *ls, const char *path,
			 uint32_t world, uint32_t rank)
{
	size_t len = lockstep_len(world);
	void *m;
	int fd;

	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len)) {
		close(fd);
		return -errno;
	}
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -errno;
	ls->done = m;
	ls->seq = (uint32_t *)&ls->done[world];
	ls->world = world;
	ls->rank = rank;
	ls->batches = 0;
	return 0;
}

/* Has every rank done @n batches? */
static int lockstep_all(const struct lockstep *ls, uint64_t n)
{
	uint32_t r;

	for (r = 0; r < ls->world; r++)
		if (__atomic_load_n(&ls->done[r], __ATOMIC_ACQUIRE) < n)
			return 0;
	return 1;
}

/* One batch done: wait until every rank has done as many (60 s at most). */
static int lockstep_step(struct lockstep *ls)
{
	uint64_t t0 = now_ns();

	if (!ls->done)
		return 0;
	ls->batches++;
	__atomic_store_n(&ls->done[ls->rank], ls->batches, __ATOMIC_RELEASE);
	__atomic_add_fetch(ls->seq, 1, __ATOMIC_ACQ_REL);
	/* A shared futex: the ranks are processes mapping one file. */
	syscall(SYS_futex, ls->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	for (;;) {
		uint32_t seq = __atomic_load_n(ls->seq, __ATOMIC_ACQUIRE);
		struct timespec ts = { 0, 100 * 1000000L };

		if (lockstep_all(ls, ls->batches))
			return 0;
		if (now_ns() - t0 > 60ULL * 1000000000ULL)
			return -ETIMEDOUT;
		/* Returns at once if a rank bumped seq since it was read. */
		syscall(SYS_futex, ls->seq, FUTEX_WAIT, seq, &ts, NULL, 0);
	}
}

/*
 * --step-ms: the pace of a training step, so that two jobs can read at
 * different speeds (a slow model is a slow consumer). Not a device
 * stand-in: nothing is computed in that time on purpose.
 */
static void step_wait(uint32_t ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void lockstep_close(struct lockstep *ls)
{
	if (ls->done)
		munmap(ls->done, lockstep_len(ls->world));
	ls->done = NULL;
}

/* One epoch of @l; images/s, or a negative errno. */
static double timed_epoch(struct dlc_loader *l, uint32_t epoch, int *err)
{
	struct dlc_batch *b;
	uint64_t t0 = now_ns(), images = 0;
	int ret;

	ret = dlc_loader_start_epoch(l, epoch, 0);
	while (!ret && (ret = dlc_next_batch(l, &b)) == 0) {
		images += b->count;
		ret = dlc_release_batch(l, b);
	}
	*err = ret == -ENODATA ? 0 : ret;
	return (double)images / ((double)(now_ns() - t0) / 1e9);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * --verify-cost: the same epochs with every sample checked (verify all,
 * no cache, so each sample is read and its crc32c computed on the I/O
 * thread as a dlcache.ko hit would be) and with nothing checked, taking
 * turns epoch by epoch so that drift hits both alike. Reports the median
 * images/s of each and their ratio, and the checksum time per sample
 * beside the decode time.
 */
static int run_verify_cost(const struct dlc_config *base,
			   const struct dlc_index *idx, uint32_t epochs,
			   int json)
{
	struct dlc_loader *l[2] = { NULL, NULL };
	struct dlc_stats st[2];
	double *ips[2] = { NULL, NULL }, med[2];
	struct dlc_config cfg;
	uint32_t e, m;
	int ret, rc = 1;

	for (m = 0; m < 2; m++) {
		cfg = *base;
		cfg.backend = DLC_BACKEND_INPROCESS;
		cfg.cache_bytes = 0;
		cfg.verify = m == 0 ? DLC_VERIFY_ALL : DLC_VERIFY_OFF;
		ret = dlc_loader_create(&cfg, idx, &l[m]);
		if (ret) {
			fail("bench", "cannot start the loader: %s", strerror(-ret));
			goto out;
		}
		ips[m] = calloc(epochs, sizeof(double));
		if (!ips[m]) {
			fail("bench", "out of memory");
			goto out;
		}
	}
	/* Warm-up: the page cache and both loaders' first touches. */
	for (m = 0; m < 2; m++) {
		timed_epoch(l[m], 0, &ret);
		if (ret) {
			fail("bench", "warm-up epoch: %s", strerror(-ret));
			goto out;
		}
		dlc_loader_stats(l[m], &st[m], sizeof(st[m]));
	}
	if (!st[0].verified) {
		fail("bench", "--verify-cost: the index has no checksums (rebuild it with dlcachectl index)");
		goto out;
	}
	if (!json)
		printf("%-5s %14s %14s %7s\n", "epoch", "verify images/s",
		       "off images/s", "ratio");
	for (e = 0; e < epochs; e++) {
		/* Alternate which goes first, too. */
		for (m = 0; m < 2; m++) {
			uint32_t k = (e & 1) ? 1 - m : m;

			ips[k][e] = timed_epoch(l[k], e + 1, &ret);
			if (ret) {
				fail("bench", "epoch %u: %s", e + 1, strerror(-ret));
				goto out;
			}
		}
		if (!json)
			printf("%-5u %14.1f %14.1f %7.4f\n", e + 1, ips[0][e],
			       ips[1][e], ips[0][e] / ips[1][e]);
	}
	for (m = 0; m < 2; m++) {
		dlc_loader_stats(l[m], &st[m], sizeof(st[m]));
		qsort(ips[m], epochs, sizeof(double), cmp_double);
		med[m] = epochs % 2 ? ips[m][epochs / 2] :
			 (ips[m][epochs / 2 - 1] + ips[m][epochs / 2]) / 2;
	}
	{
		double crc_us = st[0].verified ?
			(double)st[0].verify_ns / 1e3 / (double)st[0].verified : 0;
		double dec_us = st[0].decoded ?
			(double)st[0].decode_ns / 1e3 / (double)st[0].decoded : 0;
		double gbs = st[0].verify_ns ?
			(double)st[0].bytes_read / (double)st[0].verify_ns : 0;

		if (json)
			printf("{\"verify_images_per_s\": %.2f, \"off_images_per_s\": %.2f, "
			       "\"ratio\": %.4f, \"epochs\": %u, \"verified\": %llu, "
			       "\"checksum_errors\": %llu, \"crc_us_per_sample\": %.3f, "
			       "\"decode_us_per_sample\": %.1f, \"crc_share_of_decode\": %.5f}\n",
			       med[0], med[1], med[0] / med[1], epochs,
			       (unsigned long long)st[0].verified,
			       (unsigned long long)st[0].checksum_errors, crc_us,
			       dec_us, dec_us > 0 ? crc_us / dec_us : 0);
		else
			printf("median images/s: verify all %.1f, off %.1f: ratio %.4f (%+.2f%%)\n"
			       "crc32c: %llu samples checked, %llu mismatches, %.2f us a sample (%.2f GB/s);\n"
			       "decode: %.1f us a sample: checking is %.3f%% of the decode work\n",
			       med[0], med[1], med[0] / med[1],
			       (med[0] / med[1] - 1) * 100,
			       (unsigned long long)st[0].verified,
			       (unsigned long long)st[0].checksum_errors, crc_us,
			       gbs, dec_us, dec_us > 0 ? 100 * crc_us / dec_us : 0);
	}
	rc = 0;
out:
	for (m = 0; m < 2; m++) {
		dlc_loader_destroy(l[m]);
		free(ips[m]);
	}
	return rc;
}

/* What bench's command line asks for. */
struct bench_args {
	struct cfg_opts o;	/* the options that map onto dlc_config */
	const char *path;	/* INDEX|DIR */
	const char *root;	/* --root */
	const char *lockstep_path;
	uint32_t epochs, start, step_ms;
	int resume;			/* --resume: the first epoch's rest */
	uint64_t resume_done;
	uint64_t cache;		/* --cache, if have_cache */
	double fraction;	/* --cache-fraction */
	int have_cache, verify_cost, drop, json, digest;
};

/* A run in progress, and what report needs of it. */
struct bench_run {
	struct dlc_index *idx;
	struct dlc_loader *l;
	struct lockstep ls;
	struct epoch_result *res;	/* one an epoch */
	struct dlc_stats after;		/* at the end of the last epoch */
};

/*
 * bench's own options; the shared ones (cfgopts.h) are all bench's too.
 * Returns CMD_RUN, or the exit status after --help or a usage error.
 */
static int bench_parse(int argc, char **argv, struct bench_args *a)
{
	static const struct option own[] = {
		{ "epochs", required_argument, NULL, 'e' },
		{ "start-epoch", required_argument, NULL, 'P' },
		{ "resume", required_argument, NULL, 'U' },
		{ "cache", required_argument, NULL, 'c' },
		{ "verify-cost", no_argument, NULL, 'X' },
		{ "cache-fraction", required_argument, NULL, 'F' },
		{ "lockstep", required_argument, NULL, 'K' },
		{ "step-ms", required_argument, NULL, 'T' },
		{ "drop-caches", no_argument, NULL, 'C' },
		{ "json", no_argument, NULL, 'j' },
		{ "digest", no_argument, NULL, 'G' },
		{ "root", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct option opts[ARRAY_SIZE(own) + CFG_NR];
	char *end;
	int c, ret;

	memset(a, 0, sizeof(*a));
	cfg_opts_init(&a->o);
	a->o.cfg.log = dlc_log_stderr;
	a->o.cfg.log_level = DLC_LOG_WARN;
	a->epochs = 3;
	a->fraction = 0.5;
	cfg_opts_longopts(opts, own, CFG_ALL);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			if (parse_u32(optarg, 1, 1000, &a->epochs))
				return usage_error("bench", "--epochs: want 1..1000, got '%s'", optarg);
			break;
		case 'P':
			if (parse_u32(optarg, 0, 1000000, &a->start))
				return usage_error("bench", "--start-epoch: want 0..1000000, got '%s'", optarg);
			break;
		case 'U':
			a->resume_done = strtoull(optarg, &end, 10);
			if (!*optarg || *end || optarg[0] == '-')
				return usage_error("bench", "--resume: want a count of samples, got '%s'", optarg);
			a->resume = 1;
			break;
		case 'c':
			if (parse_size(optarg, &a->cache))
				return usage_error("bench", "--cache: want a size like 512M, got '%s'", optarg);
			a->have_cache = 1;
			break;
		case 'X':
			a->verify_cost = 1;
			break;
		case 'F':
			a->fraction = strtod(optarg, &end);
			if (*end || end == optarg || a->fraction < 0 ||
			    a->fraction > 1)
				return usage_error("bench", "--cache-fraction: want 0..1, got '%s'", optarg);
			break;
		case 'K':
			a->lockstep_path = optarg;
			break;
		case 'T':
			if (parse_u32(optarg, 0, 600000, &a->step_ms))
				return usage_error("bench", "--step-ms: want a number of ms, got '%s'", optarg);
			break;
		case 'R':
			a->root = optarg;
			break;
		case 'C':
			a->drop = 1;
			break;
		case 'j':
			a->json = 1;
			break;
		case 'G':
			a->digest = 1;
			break;
		case 'h':
			help();
			return 0;
		default:
			ret = cfg_opt_parse("bench", c, optarg, &a->o);
			if (ret < 0)
				return EXIT_USAGE;
			if (!ret)
				return usage_error("bench", "unknown or incomplete option '%s' (try --help)",
						   argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return usage_error("bench", "want exactly one INDEX file or data set DIR (try --help)");
	if (cfg_opts_check("bench", &a->o))
		return EXIT_USAGE;
	a->path = argv[optind];
	return CMD_RUN;
}

/* The table's lines for epoch result @r. */
static void print_epoch_row(const struct bench_args *a,
			    const struct epoch_result *r)
{
	const struct dlc_stats *d = &r->delta;

	printf("%-5u %8llu %10.1f %9.3f %9.3f %11.1f %9.1f %6.1f %7llu\n",
	       r->epoch, (unsigned long long)r->images,
	       (double)r->images / r->seconds, hit_ratio(d),
	       (double)d->wait_ns / 1e9,
	       (double)d->bytes_read / 1e6,
	       read_mbs(d, r->seconds),
	       100 * busy_fraction(d, r->seconds),
	       (unsigned long long)d->errors);
	if (a->o.cfg.staging_dir)
		printf("      staging: %llu of %llu misses from local copies, %llu written (%llu read ahead), %.1f MB held\n",
		       (unsigned long long)d->staging_hits,
		       (unsigned long long)d->misses,
		       (unsigned long long)d->staging_writes,
		       (unsigned long long)d->staging_prefetched,
		       (double)d->staging_used / 1e6);
	if (a->o.cfg.cluster)
		printf("      cluster: %llu of %llu misses from the own share, %llu from peers (%llu not held, %llu failed, %llu sent to storage as faster; %llu of %llu asked of a backup; %llu prepared), %llu peer requests answered (%llu prepared, %llu encoded though welcome), %.1f MB held, %.1f MB as backups\n",
		       (unsigned long long)d->cluster_local_hits,
		       (unsigned long long)d->misses,
		       (unsigned long long)d->cluster_peer_hits,
		       (unsigned long long)d->cluster_peer_misses,
		       (unsigned long long)d->cluster_peer_failures,
		       (unsigned long long)d->cluster_peer_diverted,
		       (unsigned long long)d->cluster_backup_hits,
		       (unsigned long long)d->cluster_backup_asked,
		       (unsigned long long)d->cluster_prepared,
		       (unsigned long long)d->cluster_served,
		       (unsigned long long)d->cluster_prepared_served,
		       (unsigned long long)d->cluster_prepare_late,
		       (double)d->cluster_used / 1e6,
		       (double)d->cluster_backup_used / 1e6);
	if (a->o.cfg.node_group)
		printf("      node sharing: %llu of %llu samples decoded by %llu guest threads on %llu borrowed CPUs, %llu reclaimed\n",
		       (unsigned long long)d->node_guest_decodes,
		       (unsigned long long)r->images,
		       (unsigned long long)d->node_guest_threads,
		       (unsigned long long)d->node_borrowed_cpus,
		       (unsigned long long)d->node_guest_reclaimed);
	if (a->o.cfg.forms)
		printf("      forms: %llu of %llu samples from decoded forms (%.1f s of decode saved), %llu made, %llu not kept, %llu displaced by denser ones; %llu held, %.1f MB; keeping %s\n",
		       (unsigned long long)d->form_hits,
		       (unsigned long long)r->images,
		       (double)d->form_saved_ns / 1e9,
		       (unsigned long long)d->forms_made,
		       (unsigned long long)d->forms_refused,
		       (unsigned long long)d->forms_displaced,
		       (unsigned long long)d->forms_held,
		       (double)d->forms_bytes / 1e6,
		       d->forms_regime == 2 ? "encoded bytes (storage-bound)" :
		       d->forms_regime == 1 ? "decoded forms (decode-bound)" :
		       d->cache_capacity ? "encoded bytes (not yet measured)" :
		       "nothing (no cache)");
	if (a->digest)
		printf("      digest %016llx\n", (unsigned long long)r->digest);
	fflush(stdout);
}

/*
 * Epoch number @e of the run (start + @e) into r->res[@e] and r->after,
 * its table row printed at once (the table is a progress report too).
 * Returns 0, or 1 after the line saying why it failed.
 */
static int bench_epoch(const struct bench_args *a, struct bench_run *r,
		       uint32_t e)
{
	struct epoch_result *res = &r->res[e];
	uint64_t t0, images = 0, dg = 14695981039346656037ULL;
	struct dlc_error_info ei;
	struct dlc_stats before;
	struct dlc_batch *b;
	int ret;

	dlc_loader_stats(r->l, &before, sizeof(before));
	t0 = now_ns();
	if (a->resume && e == 0)
		ret = dlc_loader_resume_epoch(r->l, a->start, a->resume_done);
	else
		ret = dlc_loader_start_epoch(r->l, a->start + e, 0);
	while (!ret && (ret = dlc_next_batch(r->l, &b)) == 0) {
		images += b->count;
		if (a->digest)
			dg = batch_digest(dg, b);
		ret = dlc_release_batch(r->l, b);
		if (ret)
			break;
		if (a->step_ms)
			step_wait(a->step_ms);
		if (lockstep_step(&r->ls))
			return fail("bench", "--lockstep: the other ranks stopped for 60 s at batch %llu",
				    (unsigned long long)r->ls.batches);
	}
	if (ret != -ENODATA) {
		if (dlc_loader_last_error(r->l, &ei) == 0)
			return fail("bench", "epoch %u: %s: %s: %s", a->start + e,
				    ei.path, dlc_error_kind_name(ei.kind), ei.msg);
		return fail("bench", "epoch %u: %s", a->start + e,
			    strerror(-ret));
	}
	res->epoch = a->start + e;
	res->digest = dg;
	res->images = images;
	res->seconds = (double)(now_ns() - t0) / 1e9;
	res->start_s = (double)t0 / 1e9;
	dlc_loader_stats(r->l, &r->after, sizeof(r->after));
	stats_delta(&before, &r->after, &res->delta);
	if (!a->json)
		print_epoch_row(a, res);
	return 0;
}

/*
 * Start the loader on r->idx with the config of @a and run its epochs.
 * Returns 0, or 1 after the line saying why it failed.
 */
static int bench_run(struct bench_args *a, struct bench_run *r)
{
	struct dlc_config *cfg = &a->o.cfg;
	uint32_t e;
	int ret;

	/* The run's last epoch is known: the read-ahead stops at its end. */
	cfg->epochs = a->start + a->epochs;
	ret = dlc_loader_create(cfg, r->idx, &r->l);
	if (ret)
		return fail("bench", "cannot start the loader: %s", strerror(-ret));
	if (a->lockstep_path) {
		ret = lockstep_open(&r->ls, a->lockstep_path, cfg->world,
				    cfg->rank);
		if (ret)
			return fail("bench", "--lockstep %s: %s",
				    a->lockstep_path, strerror(-ret));
	}
	r->res = calloc(a->epochs, sizeof(*r->res));
	if (!r->res)
		return fail("bench", "out of memory");
	if (a->drop && drop_page_cache())
		fprintf(stderr, "dlcachectl bench: cannot drop the page cache (not root?); epoch 0 may be warm\n");

	if (!a->json)
		printf("%-5s %8s %10s %9s %9s %11s %9s %6s %7s\n", "epoch",
		       "images", "images/s", "hit ratio", "wait s", "read MB",
		       "read MB/s", "busy %", "errors");
	for (e = 0; e < a->epochs; e++)
		if (bench_epoch(a, r, e))
			return 1;
	return 0;
}

/* Epoch result @r as a JSON object (@first: no comma before it). */
static void print_epoch_json(const struct bench_args *a,
			     const struct epoch_result *r, int first)
{
	const struct dlc_stats *d = &r->delta;

	printf("%s{\"epoch\": %u, \"images_per_s\": %.2f, \"hit_ratio\": %.4f, "
	       "\"wait_s\": %.4f, \"bytes_read\": %llu, \"errors\": %llu, "
	       "\"seconds\": %.4f, \"start_s\": %.4f, \"images\": %llu, "
	       "\"evictions\": %llu, "
	       "\"bypasses\": %llu, \"io_thread_decodes\": %llu, "
	       "\"hits\": %llu, \"misses\": %llu, \"hit_bytes\": %llu, "
	       "\"miss_bytes\": %llu, \"verified\": %llu, "
	       "\"checksum_errors\": %llu, \"validated\": %llu, "
	       "\"read_mb_per_s\": %.2f, \"io_busy_s\": %.4f, "
	       "\"io_busy_fraction\": %.4f, \"readahead_reads\": %llu, "
	       "\"readahead_used\": %llu, \"readahead_dropped\": %llu, "
	       "\"readahead_budget\": %llu, \"readahead_held\": %llu, "
	       "\"reads\": %llu, "
	       "\"direct_reads\": %llu, \"passthru_reads\": %llu, "
	       "\"read_ns\": %llu, \"staging_hits\": %llu, "
	       "\"staging_hit_bytes\": %llu, \"staging_writes\": %llu, "
	       "\"staging_prefetched\": %llu, "
	       "\"staging_prefetch_bytes\": %llu, "
	       "\"staging_evictions\": %llu, \"staging_invalid\": %llu, "
	       "\"staging_used\": %llu, \"staging_budget\": %llu, "
	       "\"node_guest_decodes\": %llu, \"node_guest_threads\": %llu, "
	       "\"node_borrowed_cpus\": %llu, \"node_guest_reclaimed\": %llu, "
	       "\"decode_starved_ns\": %llu, \"form_hits\": %llu, "
	       "\"forms_made\": %llu, \"forms_refused\": %llu, "
	       "\"forms_held\": %llu, \"forms_bytes\": %llu, "
	       "\"form_saved_ns\": %llu, \"forms_regime\": %llu, "
	       "\"forms_displaced\": %llu",
	       first ? "" : ", ", r->epoch,
	       (double)r->images / r->seconds, hit_ratio(d),
	       (double)d->wait_ns / 1e9,
	       (unsigned long long)d->bytes_read,
	       (unsigned long long)d->errors, r->seconds,
	       r->start_s, (unsigned long long)r->images,
	       (unsigned long long)d->evictions,
	       (unsigned long long)d->bypasses,
	       (unsigned long long)d->io_thread_decodes,
	       (unsigned long long)d->hits,
	       (unsigned long long)d->misses,
	       (unsigned long long)d->hit_bytes,
	       (unsigned long long)d->miss_bytes,
	       (unsigned long long)d->verified,
	       (unsigned long long)d->checksum_errors,
	       (unsigned long long)d->validated,
	       read_mbs(d, r->seconds),
	       (double)d->io_busy_ns / 1e9,
	       busy_fraction(d, r->seconds),
	       (unsigned long long)d->readahead_reads,
	       (unsigned long long)d->readahead_used,
	       (unsigned long long)d->readahead_dropped,
	       (unsigned long long)d->readahead_budget,
	       (unsigned long long)d->readahead_held,
	       (unsigned long long)d->reads,
	       (unsigned long long)d->direct_reads,
	       (unsigned long long)d->passthru_reads,
	       (unsigned long long)d->read_ns,
	       (unsigned long long)d->staging_hits,
	       (unsigned long long)d->staging_hit_bytes,
	       (unsigned long long)d->staging_writes,
	       (unsigned long long)d->staging_prefetched,
	       (unsigned long long)d->staging_prefetch_bytes,
	       (unsigned long long)d->staging_evictions,
	       (unsigned long long)d->staging_invalid,
	       (unsigned long long)d->staging_used,
	       (unsigned long long)d->staging_budget,
	       (unsigned long long)d->node_guest_decodes,
	       (unsigned long long)d->node_guest_threads,
	       (unsigned long long)d->node_borrowed_cpus,
	       (unsigned long long)d->node_guest_reclaimed,
	       (unsigned long long)d->decode_starved_ns,
	       (unsigned long long)d->form_hits,
	       (unsigned long long)d->forms_made,
	       (unsigned long long)d->forms_refused,
	       (unsigned long long)d->forms_held,
	       (unsigned long long)d->forms_bytes,
	       (unsigned long long)d->form_saved_ns,
	       (unsigned long long)d->forms_regime,
	       (unsigned long long)d->forms_displaced);
	if (a->o.cfg.cluster)
		printf(", \"cluster_local_hits\": %llu, "
		       "\"cluster_local_bytes\": %llu, "
		       "\"cluster_peer_hits\": %llu, "
		       "\"cluster_peer_bytes\": %llu, "
		       "\"cluster_peer_misses\": %llu, "
		       "\"cluster_peer_failures\": %llu, "
		       "\"cluster_peer_busy\": %llu, "
		       "\"cluster_served\": %llu, "
		       "\"cluster_served_hits\": %llu, "
		       "\"cluster_served_bytes\": %llu, "
		       "\"cluster_pushed\": %llu, "
		       "\"cluster_pushed_bytes\": %llu, "
		       "\"cluster_admitted\": %llu, "
		       "\"cluster_used\": %llu, "
		       "\"cluster_capacity\": %llu, "
		       "\"cluster_dead_peers\": %llu, "
		       "\"cluster_peer_diverted\": %llu, "
		       "\"cluster_backup_asked\": %llu, "
		       "\"cluster_backup_hits\": %llu, "
		       "\"cluster_backup_used\": %llu, "
		       "\"cluster_prepared\": %llu, "
		       "\"cluster_prepared_served\": %llu, "
		       "\"cluster_prepare_late\": %llu",
		       (unsigned long long)d->cluster_local_hits,
		       (unsigned long long)d->cluster_local_bytes,
		       (unsigned long long)d->cluster_peer_hits,
		       (unsigned long long)d->cluster_peer_bytes,
		       (unsigned long long)d->cluster_peer_misses,
		       (unsigned long long)d->cluster_peer_failures,
		       (unsigned long long)d->cluster_peer_busy,
		       (unsigned long long)d->cluster_served,
		       (unsigned long long)d->cluster_served_hits,
		       (unsigned long long)d->cluster_served_bytes,
		       (unsigned long long)d->cluster_pushed,
		       (unsigned long long)d->cluster_pushed_bytes,
		       (unsigned long long)d->cluster_admitted,
		       (unsigned long long)d->cluster_used,
		       (unsigned long long)d->cluster_capacity,
		       (unsigned long long)d->cluster_dead_peers,
		       (unsigned long long)d->cluster_peer_diverted,
		       (unsigned long long)d->cluster_backup_asked,
		       (unsigned long long)d->cluster_backup_hits,
		       (unsigned long long)d->cluster_backup_used,
		       (unsigned long long)d->cluster_prepared,
		       (unsigned long long)d->cluster_prepared_served,
		       (unsigned long long)d->cluster_prepare_late);
	if (a->digest)
		printf(", \"digest\": \"%016llx\"",
		       (unsigned long long)r->digest);
	printf("}");
}

/*
 * After a run: the JSON object (with --json), or the cache's line below
 * the table. Returns 0, or 1 if an epoch delivered no image at all.
 */
static int bench_report(const struct bench_args *a, const struct bench_run *r)
{
	uint64_t cap, total = dlc_index_total_bytes(r->idx);
	int kernel = dlc_loader_backend(r->l) == DLC_BACKEND_KERNEL;
	uint32_t e;

	cap = kernel ? r->after.cache_capacity : a->o.cfg.cache_bytes;
	if (a->json) {
		printf("{\"backend\": \"%s\", \"images\": %u, \"threads\": %u, "
		       "\"batch_size\": %u, \"cache_bytes\": %llu, \"dataset_bytes\": %llu, "
		       "\"pinned\": %s, \"kernel_fallbacks\": %llu, \"epochs\": [",
		       dlc_backend_name(dlc_loader_backend(r->l)),
		       dlc_index_count(r->idx), dlc_loader_decode_threads(r->l) + 1,
		       a->o.cfg.batch_size, (unsigned long long)cap,
		       (unsigned long long)total,
		       dlc_loader_pinned(r->l) ? "true" : "false",
		       (unsigned long long)r->after.kernel_fallbacks);
		for (e = 0; e < a->epochs; e++)
			print_epoch_json(a, &r->res[e], e == 0);
		printf("]}\n");
	} else {
		printf("%s cache %.1f MB of a %.1f MB data set: best steady hit ratio %.3f\n",
		       kernel ? "dlcache.ko" : "in-process", (double)cap / 1e6,
		       (double)total / 1e6,
		       total ? (double)cap / (double)total : 0.0);
		if (r->after.kernel_fallbacks)
			printf("fell back from dlcache.ko to the in-process cache during the run (kernel_fallbacks %llu)\n",
			       (unsigned long long)r->after.kernel_fallbacks);
	}
	/* A run that trained on nothing did not work, whatever the policy. */
	for (e = 0; e < a->epochs; e++)
		if (!r->res[e].images)
			return fail("bench", "%s: epoch %u delivered no image (%llu of %u samples failed)",
				    a->path, r->res[e].epoch,
				    (unsigned long long)r->res[e].delta.errors,
				    dlc_index_count(r->idx));
	return 0;
}

int cmd_bench(int argc, char **argv)
{
	struct bench_run r = { 0 };
	struct bench_args a;
	struct dlc_config *cfg = &a.o.cfg;
	int ret, rc;

	rc = bench_parse(argc, argv, &a);
	if (rc != CMD_RUN)
		return rc;
	ret = open_index_at(a.path, a.root, &r.idx);
	if (ret == -EINVAL && a.root)
		return usage_error("bench", "--root is for an INDEX file, not a data set DIR");
	if (ret)
		return fail("bench", "%s%s%s: %s", a.path,
			    a.root ? " at --root " : "", a.root ? a.root : "",
			    index_error(ret));

	cfg_opts_transform(&a.o);
	cfg->cache_bytes = a.have_cache ? a.cache :
		(uint64_t)(a.fraction * (double)dlc_index_total_bytes(r.idx));
	if (a.verify_cost && (a.start || a.resume)) {
		rc = usage_error("bench", "--start-epoch and --resume do not go with --verify-cost");
	} else if (a.verify_cost) {
		rc = run_verify_cost(cfg, r.idx, a.epochs, a.json);
	} else {
		rc = bench_run(&a, &r);
		if (!rc)
			rc = bench_report(&a, &r);
	}

	lockstep_close(&r.ls);
	dlc_loader_destroy(r.l);
	dlc_index_free(r.idx);
	free(r.res);
	return rc;
}
