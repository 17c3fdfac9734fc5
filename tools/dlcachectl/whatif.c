// SPDX-License-Identifier: MIT
/*
 * dlcachectl whatif: how much memory the cache should get. For a data set
 * (its real sample sizes) and a job's known epoch orders (dlc_order_fill:
 * seed, world), the hit ratio and bytes read per epoch at each cache size,
 * for dlcache's policy (the library's in-process cache, driven as the
 * loader drives it: hitsim.h) and for an LRU page cache, as a table, JSON
 * or a PNG drawn by gnuplot. With --jobs, several jobs (each its seed and
 * pace) share one cache ranked by the merged policy, as on dlcache.ko;
 * with --attached, the jobs attached to the data set on dlcache.ko now,
 * their orders and paces read back from the module (attached.h).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "admin.h"
#include "attached.h"
#include "cli.h"
#include "dlcache.h"
#include "hitsim.h"
#include "policy.h"

#define MAX_SIZES	32
/*
 * As many jobs as one data set on dlcache.ko can have consumers (the
 * shared policy's lines less its own), so that --attached reads any node.
 */
#define MAX_JOBS	(DLC_POLICY_MAX_CONSUMERS - 1)
/* Fractions of the data set's bytes, in percent, when --sizes is not given. */
static const uint32_t default_pct[] = { 10, 25, 50, 75, 90, 100, 125 };

struct whatif_args {
	const char *path;
	uint32_t epochs, world;
	uint64_t seed;
	uint32_t nsizes;
	uint64_t size[MAX_SIZES];	/* bytes; 0 with pct[] set */
	uint32_t pct[MAX_SIZES];	/* percent of the data set, or 0 */
	const char *png;
	int json;
	/* --jobs: a shared cache (hs_run_shared); else one job, in-process. */
	int shared;
	uint32_t njobs;
	uint64_t job_seed[MAX_JOBS];
	uint64_t job_step[MAX_JOBS];	/* time a position, relative */
	/* --attached: the jobs are these, read back from the module. */
	int attached;
	struct attached_job aj[MAX_JOBS];
	int explicit;		/* --epochs, --world, --seed or --jobs given */
};

/* One cache size's results: per policy, per job, per epoch. */
struct whatif_point {
	uint64_t capacity;
	struct hs_epoch_result *res[2][MAX_JOBS];	/* HS_DLCACHE, HS_LRU */
	int err;
};

static const enum hs_policy policies[2] = { HS_DLCACHE, HS_LRU };

static void whatif_help(void)
{
	printf("usage: dlcachectl whatif INDEX [--epochs E] [--world W] [--seed S]\n"
	       "                        [--jobs LIST] [--sizes LIST] [--png FILE] [--json]\n"
	       "       dlcachectl whatif INDEX --attached [--sizes LIST] [--png FILE] [--json]\n"
	       "\n"
	       "How much memory the cache should get: for the data set's real sample\n"
	       "sizes and the job's known epoch orders (the shuffles bench and the\n"
	       "DataLoader use for SEED and WORLD), the hit ratio and the bytes read\n"
	       "from storage per epoch at each cache size, for dlcache's policy (the\n"
	       "library's in-process cache, evicting by next use, run on the orders)\n"
	       "and for an LRU page cache. A steady epoch is the mean of epochs 1 to\n"
	       "E-1. With WORLD > 1 the cache serves every rank of the job on this\n"
	       "node, in step (dlcache.ko on a node of WORLD ranks).\n"
	       "\n"
	       "  INDEX          an index file (dlcachectl index) or an ImageFolder\n"
	       "  --epochs E     epochs to run, >= 2 (default 3)\n"
	       "  --world W      ranks of the job that share the cache (default 1)\n"
	       "  --seed S       the job's shuffle seed (default 0, as bench)\n"
	       "  --jobs LIST    jobs sharing one cache (dlcache.ko), comma separated,\n"
	       "                 each SEED[:STEP]: its seed, and its time a sample\n"
	       "                 relative to the others' (2: half the pace of 1;\n"
	       "                 default 1); at most %d, each of WORLD ranks\n"
	       "  --attached     the jobs attached to INDEX's data set on dlcache.ko\n"
	       "                 now, instead of --jobs: each job's orders as the\n"
	       "                 module holds them (its whole epochs, the first run\n"
	       "                 cold) at the pace it measured\n"
	       "  --sizes LIST   cache sizes, comma separated: SIZE (K, M, G) or a\n"
	       "                 percentage of the data set (default 10%%,25%%,50%%,\n"
	       "                 75%%,90%%,100%%,125%%); at most %d\n"
	       "  --png FILE     also draw the hit ratios against the size (gnuplot;\n"
	       "                 with --jobs, of every job's requests together)\n"
	       "  --json         one JSON object instead of the table\n"
	       "  -h, --help     show this help\n", MAX_JOBS, MAX_SIZES);
}

/* One item of --sizes, the @i-th: SIZE or N%. 0 or -1. */
static int size_item(char *tok, uint32_t i, struct whatif_args *a)
{
	size_t len = strlen(tok);

	a->size[i] = 0;
	a->pct[i] = 0;
	if (len > 1 && tok[len - 1] == '%') {
		tok[len - 1] = '\0';
		return parse_u32(tok, 1, 100000, &a->pct[i]);
	}
	return parse_size(tok, &a->size[i]);
}

/* One item of --jobs, the @i-th: SEED or SEED:STEP. 0 or -1. */
static int job_item(char *tok, uint32_t i, struct whatif_args *a)
{
	char *colon = strchr(tok, ':');

	uint32_t step = 1;

	if (colon) {
		*colon = '\0';
		if (parse_u32(colon + 1, 1, 1000, &step))
			return -1;
	}
	a->job_step[i] = step;
	return parse_u64(tok, 0, UINT64_MAX, &a->job_seed[i]);
}

/*
 * A comma-separated @list of 1 to @max items, each parsed by @item into
 * @a. Returns how many, or -1.
 */
static int parse_list(const char *list, uint32_t max,
		      int (*item)(char *tok, uint32_t i, struct whatif_args *a),
		      struct whatif_args *a)
{
	char *copy = strdup(list), *tok, *save = NULL;
	uint32_t n = 0;
	int ret = copy ? 0 : -1;

	for (tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && !ret;
	     tok = strtok_r(NULL, ",", &save))
		ret = n < max ? item(tok, n++, a) : -1;
	free(copy);
	return ret || !n ? -1 : (int)n;
}

/* <0 help shown, >0 exit status, 0 parsed. */
static int parse_args(int argc, char **argv, struct whatif_args *a)
{
	static const struct option opts[] = {
		{ "epochs", required_argument, NULL, 'e' },
		{ "world", required_argument, NULL, 'w' },
		{ "seed", required_argument, NULL, 's' },
		{ "sizes", required_argument, NULL, 'z' },
		{ "jobs", required_argument, NULL, 'J' },
		{ "attached", no_argument, NULL, 'A' },
		{ "png", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	uint32_t i;
	int c, ret;

	memset(a, 0, sizeof(*a));
	a->epochs = 3;
	a->world = 1;
	a->nsizes = ARRAY_SIZE(default_pct);
	for (i = 0; i < a->nsizes; i++)
		a->pct[i] = default_pct[i];
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			a->explicit = 1;
			if (parse_u32(optarg, 2, 1000, &a->epochs))
				return usage_error("whatif", "--epochs: want 2 to 1000, got '%s'", optarg);
			break;
		case 'w':
			a->explicit = 1;
			if (parse_u32(optarg, 1, 65536, &a->world))
				return usage_error("whatif", "--world: want 1 to 65536, got '%s'", optarg);
			break;
		case 's':
			a->explicit = 1;
			if (parse_u64(optarg, 0, UINT64_MAX, &a->seed))
				return usage_error("whatif", "--seed: want an unsigned integer, got '%s'", optarg);
			break;
		case 'z':
			ret = parse_list(optarg, MAX_SIZES, size_item, a);
			if (ret < 0)
				return usage_error("whatif", "--sizes: want up to %d of SIZE or N%%, comma separated, got '%s'",
						   MAX_SIZES, optarg);
			a->nsizes = (uint32_t)ret;
			break;
		case 'J':
			a->explicit = 1;
			ret = parse_list(optarg, MAX_JOBS, job_item, a);
			if (ret < 0)
				return usage_error("whatif", "--jobs: want up to %d of SEED or SEED:STEP (STEP 1 to 1000), comma separated, got '%s'",
						   MAX_JOBS, optarg);
			a->njobs = (uint32_t)ret;
			a->shared = 1;
			break;
		case 'A':
			a->attached = 1;
			a->shared = 1;
			break;
		case 'p':
			a->png = optarg;
			break;
		case 'j':
			a->json = 1;
			break;
		case 'h':
			whatif_help();
			return -1;
		default:
			return usage_error("whatif", "unknown or incomplete option '%s' (try --help)",
					   argv[optind - 1]);
		}
	}
	if (a->attached && a->explicit)
		return usage_error("whatif", "--attached takes the jobs, their epochs and world from the module: not with --epochs, --world, --seed or --jobs");
	if (!a->shared) {
		a->njobs = 1;
		a->job_seed[0] = a->seed;
		a->job_step[0] = 1;
	}
	if (optind >= argc)
		return usage_error("whatif", "missing INDEX (try --help)");
	a->path = argv[optind++];
	if (optind < argc)
		return usage_error("whatif", "unexpected argument '%s' (try --help)", argv[optind]);
	return 0;
}

/*
 * The trace: each epoch's global order as the @world ranks read it in
 * step (position i of rank 0, of rank 1, ...), padded as
 * DistributedSampler pads. 0 or -errno.
 */
static int build_trace(uint32_t n, const struct whatif_args *a, uint64_t seed,
		       uint32_t **ids, uint32_t *epoch_len)
{
	struct dlc_order_params p = { .seed = seed, .world = a->world,
				      .shuffle = 1 };
	uint32_t len = dlc_order_len(n, &p), e, r, i, *rank;
	uint64_t total;

	if (!len)
		return -EINVAL;
	total = (uint64_t)len * a->world;
	/* The in-process cache's policy holds three epochs' positions. */
	if (n > DLC_POLICY_MAX_SAMPLES || 3 * total > DLC_POLICY_MAX_WINDOW)
		return -E2BIG;
	*ids = malloc(sizeof(uint32_t) * total * a->epochs);
	rank = malloc(sizeof(uint32_t) * len);
	if (!*ids || !rank) {
		free(*ids);
		free(rank);
		return -ENOMEM;
	}
	for (e = 0; e < a->epochs; e++) {
		uint32_t *o = *ids + (size_t)e * total;

		p.epoch = e;
		for (r = 0; r < a->world; r++) {
			p.rank = r;
			if (dlc_order_fill(n, &p, rank, len)) {
				free(rank);
				free(*ids);
				return -ENOMEM;
			}
			for (i = 0; i < len; i++)
				o[(size_t)i * a->world + r] = rank[i];
		}
	}
	free(rank);
	*epoch_len = (uint32_t)total;
	return 0;
}

/* The sizes are simulated on threads of their own, one point each. */
struct sim_job {
	const struct whatif_args *a;
	const struct hs_trace *t;	/* per job */
	struct whatif_point *pts;
	uint32_t npts;
	uint32_t next;		/* atomic: the next point to take */
};

static void *sim_thread(void *arg)
{
	struct sim_job *j = arg;
	struct hs_job jobs[MAX_JOBS];
	uint32_t k, p, i;

	for (i = 0; i < j->a->njobs; i++) {
		jobs[i].t = &j->t[i];
		jobs[i].dt = j->a->job_step[i];
	}
	while ((k = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED)) <
	       j->npts) {
		struct whatif_point *pt = &j->pts[k];

		for (p = 0; p < 2; p++)
			if (j->a->shared ?
			    hs_run_shared(policies[p], jobs, j->a->njobs,
					  pt->capacity, 0, pt->res[p], NULL,
					  NULL) :
			    hs_run(policies[p], j->t, pt->capacity,
				   pt->res[p][0]))
				pt->err = -ENOMEM;
	}
	return NULL;
}

static int simulate(const struct whatif_args *a, const struct hs_trace *t,
		    struct whatif_point *pts, uint32_t npts)
{
	struct sim_job j = { a, t, pts, npts, 0 };
	pthread_t th[MAX_SIZES];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint32_t n = cpus < 1 ? 1 : (uint32_t)cpus, i, started = 0;

	if (n > npts)
		n = npts;
	for (i = 1; i < n; i++)
		if (!pthread_create(&th[started], NULL, sim_thread, &j))
			started++;
	sim_thread(&j);
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < npts; i++)
		if (pts[i].err)
			return pts[i].err;
	return 0;
}

/* A policy's epoch 0 and steady epochs (1 .. E-1, mean), over @njobs jobs. */
struct summary {
	double first, steady, steady_count;
	uint64_t first_read, steady_read;
};

static void summarise(struct hs_epoch_result *const *r, uint32_t njobs,
		      uint32_t epochs, struct summary *s)
{
	struct hs_epoch_result f = { 0 }, st = { 0 }, x;
	uint32_t j;

	for (j = 0; j < njobs; j++) {
		f.reqs += r[j][0].reqs;
		f.hits += r[j][0].hits;
		f.req_bytes += r[j][0].req_bytes;
		f.hit_bytes += r[j][0].hit_bytes;
		hs_sum(r[j], 1, epochs, &x);
		st.reqs += x.reqs;
		st.hits += x.hits;
		st.req_bytes += x.req_bytes;
		st.hit_bytes += x.hit_bytes;
	}
	s->first = hs_hit_ratio(&f, 1);
	s->first_read = f.req_bytes - f.hit_bytes;
	s->steady = hs_hit_ratio(&st, 1);
	s->steady_count = hs_hit_ratio(&st, 0);
	s->steady_read = (st.req_bytes - st.hit_bytes) / (epochs - 1);
}

/* "dlcache": {...}, "lru": {...} of @njobs jobs' results from @j. */
static void json_policies(const struct whatif_args *a,
			  const struct whatif_point *pt, uint32_t j,
			  uint32_t njobs)
{
	uint32_t p, e, i;

	for (p = 0; p < 2; p++) {
		struct summary s;

		summarise(&pt->res[p][j], njobs, a->epochs, &s);
		printf("%s\"%s\": {\"first_hit_ratio\": %.6f, "
		       "\"steady_hit_ratio\": %.6f, "
		       "\"steady_count_hit_ratio\": %.6f, "
		       "\"first_bytes_read\": %llu, "
		       "\"steady_bytes_read\": %llu, \"epochs\": [",
		       p ? ", " : "", hs_policy_names[policies[p]], s.first,
		       s.steady, s.steady_count,
		       (unsigned long long)s.first_read,
		       (unsigned long long)s.steady_read);
		for (e = 0; e < a->epochs; e++) {
			struct hs_epoch_result r = { 0 };

			for (i = j; i < j + njobs; i++) {
				r.hits += pt->res[p][i][e].hits;
				r.reqs += pt->res[p][i][e].reqs;
				r.hit_bytes += pt->res[p][i][e].hit_bytes;
				r.req_bytes += pt->res[p][i][e].req_bytes;
			}
			printf("%s{\"hits\": %llu, \"requests\": %llu, "
			       "\"hit_bytes\": %llu, \"request_bytes\": %llu}",
			       e ? ", " : "", (unsigned long long)r.hits,
			       (unsigned long long)r.reqs,
			       (unsigned long long)r.hit_bytes,
			       (unsigned long long)r.req_bytes);
		}
		printf("]}");
	}
}

static void print_json(const struct whatif_args *a, uint32_t n, uint64_t bytes,
		       const struct whatif_point *pts)
{
	uint32_t k, j;

	printf("{\"samples\": %u, \"dataset_bytes\": %llu, \"epochs\": %u, "
	       "\"world\": %u, \"seed\": %llu, \"shared\": %s, "
	       "\"attached\": %s, \"jobs\": [", n,
	       (unsigned long long)bytes, a->epochs, a->world,
	       (unsigned long long)a->seed, a->shared ? "true" : "false",
	       a->attached ? "true" : "false");
	for (j = 0; j < a->njobs; j++) {
		const struct attached_job *aj = &a->aj[j];

		if (a->attached)
			printf("%s{\"consumer\": %u, \"owner_uid\": %u, "
			       "\"first_epoch\": %u, \"epoch_len\": %u, "
			       "\"ns_per_position\": %llu, \"measured\": %s}",
			       j ? ", " : "", aj->consumer, aj->owner_uid,
			       aj->first_epoch, aj->epoch_len,
			       (unsigned long long)a->job_step[j],
			       aj->ns_per_pos ? "true" : "false");
		else
			printf("%s{\"seed\": %llu, \"step\": %llu}", j ? ", " : "",
			       (unsigned long long)a->job_seed[j],
			       (unsigned long long)a->job_step[j]);
	}
	printf("], \"points\": [");
	for (k = 0; k < a->nsizes; k++) {
		printf("%s{\"capacity\": %llu, \"fraction\": %.4f, ", k ? ", " : "",
		       (unsigned long long)pts[k].capacity,
		       bytes ? (double)pts[k].capacity / (double)bytes : 0.0);
		/* Every job together, then (with --jobs) each. */
		json_policies(a, &pts[k], 0, a->njobs);
		if (a->shared) {
			printf(", \"per_job\": [");
			for (j = 0; j < a->njobs; j++) {
				printf("%s{", j ? ", " : "");
				json_policies(a, &pts[k], j, 1);
				printf("}");
			}
			printf("]");
		}
		printf("}");
	}
	printf("]}\n");
}

static void print_row(const char *what, uint64_t cap, uint64_t bytes,
		      const struct summary *s)
{
	char c[32], d[32], l[32];

	printf("%12s %7s %6.1f%%  %13.1f%% %14s  %13.1f%% %14s\n",
	       admin_bytes(cap, c, sizeof(c)), what,
	       bytes ? 100.0 * (double)cap / (double)bytes : 0.0,
	       100.0 * s[0].steady, admin_bytes(s[0].steady_read, d, sizeof(d)),
	       100.0 * s[1].steady, admin_bytes(s[1].steady_read, l, sizeof(l)));
}

static void print_table(const struct whatif_args *a, uint32_t n, uint64_t bytes,
			const struct whatif_point *pts)
{
	uint32_t k, j, p;
	char c[32], what[16];

	printf("%u samples, %s; %u epochs, world %u; a steady epoch is the mean of epochs 1-%u\n",
	       n, admin_bytes(bytes, c, sizeof(c)), a->epochs, a->world,
	       a->epochs - 1);
	if (a->attached) {
		printf("the %u job%s attached to it on dlcache.ko now, as the module holds their orders:\n",
		       a->njobs, a->njobs > 1 ? "s" : "");
		for (j = 0; j < a->njobs; j++) {
			const struct attached_job *aj = &a->aj[j];

			printf("  %u: consumer %u (owner uid %u), epochs %u-%u of %u positions, %.1f us a position%s\n",
			       j, aj->consumer, aj->owner_uid, aj->first_epoch,
			       aj->first_epoch + a->epochs - 1, aj->epoch_len,
			       (double)a->job_step[j] / 1e3,
			       aj->ns_per_pos ? "" : " (not measured yet: the slowest measured)");
		}
		printf("\"all\" is every request; the first of each job's epochs runs cold\n");
	} else if (a->shared) {
		printf("one cache (dlcache.ko) shared by %u jobs:", a->njobs);
		for (j = 0; j < a->njobs; j++)
			printf(" %u: seed %llu, step %llu;", j,
			       (unsigned long long)a->job_seed[j],
			       (unsigned long long)a->job_step[j]);
		printf(" \"all\" is every request\n");
	} else {
		printf("seed %llu; one process's cache\n",
		       (unsigned long long)a->seed);
	}
	printf("%12s %7s %7s  %14s %14s  %14s %14s\n", "cache", "job",
	       "of set", "dlcache hits", "read/epoch", "LRU hits", "read/epoch");
	for (k = 0; k < a->nsizes; k++) {
		struct summary s[2];

		for (p = 0; p < 2; p++)
			summarise(pts[k].res[p], a->njobs, a->epochs, &s[p]);
		print_row(a->shared ? "all" : "-", pts[k].capacity, bytes, s);
		for (j = 0; a->shared && j < a->njobs; j++) {
			for (p = 0; p < 2; p++)
				summarise(&pts[k].res[p][j], 1, a->epochs, &s[p]);
			snprintf(what, sizeof(what), "%u", j);
			print_row(what, pts[k].capacity, bytes, s);
		}
	}
}

/* The steady hit ratios against the size, drawn by gnuplot into @png. */
static int draw_png(const struct whatif_args *a, uint64_t bytes,
		    const struct whatif_point *pts)
{
	FILE *g = popen("gnuplot 2>&1", "w");
	uint32_t k, p;
	int st;

	if (!g)
		return fail("whatif", "--png: cannot run gnuplot: %s", strerror(errno));
	fprintf(g, "set terminal png size 900,560\nset output '");
	for (k = 0; a->png[k]; k++)	/* a gnuplot string: '' is a quote */
		fprintf(g, a->png[k] == '\'' ? "''" : "%c", a->png[k]);
	fprintf(g, "'\nset title 'steady-epoch hit ratio by bytes, %u epochs, world %u, %u job%s'\n"
		"set xlabel 'cache size, fraction of the data set (%.3g GB)'\n"
		"set ylabel 'hit ratio'\nset yrange [0:1.05]\nset grid\n"
		"set key left top\n"
		"plot '-' using 1:2 with linespoints title 'dlcache (next use)', "
		"'-' using 1:2 with linespoints title 'LRU page cache'\n",
		a->epochs, a->world, a->njobs, a->njobs > 1 ? "s" : "",
		(double)bytes / 1e9);
	for (p = 0; p < 2; p++) {
		for (k = 0; k < a->nsizes; k++) {
			struct summary s;

			summarise(pts[k].res[p], a->njobs, a->epochs, &s);
			fprintf(g, "%.6f %.6f\n", bytes ? (double)pts[k].capacity /
				(double)bytes : 0.0, s.steady);
		}
		fprintf(g, "e\n");
	}
	st = pclose(g);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st))
		return fail("whatif", "--png %s: gnuplot %s (Debian's gnuplot-nox draws it)",
			    a->png, st != -1 && WIFEXITED(st) &&
			    WEXITSTATUS(st) == 127 ? "not found" : "failed");
	return 0;
}

/*
 * --attached: the traces of the jobs attached to @idx's data set now,
 * each cut to the whole epochs every job holds (at least two: the first
 * runs cold), at its measured pace (an unmeasured job at the slowest
 * measured one's). 0, or an exit status after a line saying why.
 */
static int attached_traces(struct whatif_args *a, const struct dlc_index *idx,
			   const uint64_t *size, struct hs_trace *t)
{
	uint32_t j, n = dlc_index_count(idx);
	uint64_t key[2], slow = 1;
	int nj;

	dlc_index_key(idx, key);
	nj = attached_read(key, n, a->aj, MAX_JOBS);
	if (nj < 0)
		return 1;
	a->njobs = (uint32_t)nj;
	a->epochs = UINT32_MAX;
	for (j = 0; j < a->njobs; j++) {
		if (a->aj[j].nepochs < a->epochs)
			a->epochs = a->aj[j].nepochs;
		if (a->aj[j].ns_per_pos > slow)
			slow = a->aj[j].ns_per_pos;
	}
	if (a->epochs < 2)
		return fail("whatif", "--attached: a job holds one whole epoch only (its next one is not uploaded yet, or the data set's window holds less than two of its epochs): no steady epoch to show yet");
	for (j = 0; j < a->njobs; j++) {
		a->job_step[j] = a->aj[j].ns_per_pos ? a->aj[j].ns_per_pos : slow;
		t[j].nsamples = n;
		t[j].size = size;
		t[j].nepochs = a->epochs;
		t[j].epoch_len = a->aj[j].epoch_len;
		t[j].ids = a->aj[j].ids;
	}
	return 0;
}

int cmd_whatif(int argc, char **argv)
{
	struct whatif_point pts[MAX_SIZES] = { 0 };
	struct hs_trace t[MAX_JOBS] = { 0 };
	uint32_t *ids[MAX_JOBS] = { NULL };
	struct dlc_index *idx = NULL;
	struct whatif_args a;
	uint32_t n, i, j, k, p;
	uint64_t *size = NULL, bytes = 0;
	int ret;

	ret = parse_args(argc, argv, &a);
	if (ret)
		return ret < 0 ? 0 : ret;
	ret = open_index(a.path, &idx);
	if (ret)
		return fail("whatif", "%s: %s", a.path, index_error(ret));
	n = dlc_index_count(idx);
	size = malloc(sizeof(*size) * (n ? n : 1));
	if (!size) {
		ret = fail("whatif", "%s", strerror(ENOMEM));
		goto out;
	}
	for (i = 0; i < n; i++) {
		size[i] = dlc_index_size(idx, i);
		bytes += size[i];
	}
	if (a.attached) {
		ret = attached_traces(&a, idx, size, t);
		if (ret)
			goto out;
	}
	for (j = 0; !a.attached && j < a.njobs; j++) {
		ret = build_trace(n, &a, a.job_seed[j], &ids[j], &t[j].epoch_len);
		if (ret) {
			ret = fail("whatif", "%s: %s", a.path, ret == -E2BIG ?
				   "too many samples an epoch for the policy's window (2^30 positions in three epochs)" :
				   strerror(-ret));
			goto out;
		}
		t[j].nsamples = n;
		t[j].size = size;
		t[j].nepochs = a.epochs;
		t[j].ids = ids[j];
	}
	for (k = 0; k < a.nsizes; k++) {
		/* In two parts: bytes * pct could pass 2^64. */
		pts[k].capacity = a.pct[k] ? bytes / 100 * a.pct[k] +
				  bytes % 100 * a.pct[k] / 100 : a.size[k];
		for (p = 0; p < 2; p++)
			for (j = 0; j < a.njobs; j++) {
				pts[k].res[p][j] = calloc(a.epochs,
							  sizeof(struct hs_epoch_result));
				if (!pts[k].res[p][j]) {
					ret = fail("whatif", "%s", strerror(ENOMEM));
					goto out;
				}
			}
	}
	ret = simulate(&a, t, pts, a.nsizes);
	if (ret) {
		ret = fail("whatif", "simulation: %s", strerror(-ret));
		goto out;
	}
	if (a.json)
		print_json(&a, n, bytes, pts);
	else
		print_table(&a, n, bytes, pts);
	ret = fflush(stdout) ? fail("whatif", "write error: %s", strerror(errno)) : 0;
	if (!ret && a.png)
		ret = draw_png(&a, bytes, pts);
out:
	for (k = 0; k < a.nsizes; k++)
		for (p = 0; p < 2; p++)
			for (j = 0; j < a.njobs; j++)
				free(pts[k].res[p][j]);
	for (j = 0; j < a.njobs; j++)
		free(ids[j]);
	if (a.attached)
		attached_free(a.aj, a.njobs);
	free(size);
	dlc_index_free(idx);
	return ret;
}
