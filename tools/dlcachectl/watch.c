// SPDX-License-Identifier: MIT
/*
 * dlcachectl watch: a live view of /dev/dlcache. Every interval it takes a
 * snapshot of the counters and shows the rates since the previous one:
 * hits/s, misses/s, the hit ratio of the interval, MB/s read through the
 * cache from storage (bytes PUT to end fills), MB/s served from the cache,
 * evictions/s, globally and per data set. On a terminal the view is redrawn
 * in place (alternate screen, cursor hidden, both restored on exit); to a
 * pipe or file it prints one line per interval.
 *
 * The device is opened for each snapshot and closed again at once, so a
 * running watch never keeps the module from being removed.
 *
 * The terminal view also shows the node's loaders, from their status
 * files (watchloaders.h): what each one's controllers chose. --loaders
 * shows only those, one line per loader per interval, and needs no
 * module: loaders on the in-process cache publish theirs too.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "cli.h"
#include "watchloaders.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void help(void)
{
	printf("usage: dlcachectl watch [--interval S] [--count N] [--loaders]\n"
	       "\n"
	       "A live view of the node's cache (/dev/dlcache), refreshed every\n"
	       "interval until interrupted (Ctrl-C or SIGTERM: exit 0): hits/s,\n"
	       "misses/s, the interval's hit ratio, MB/s read through the cache\n"
	       "from storage (the bytes of fills), MB/s served from the cache,\n"
	       "evictions/s, cache use, globally and per data set. On a terminal\n"
	       "the view is redrawn in place; otherwise one line per interval.\n"
	       "The terminal view also lists this node's loaders (yours; root sees\n"
	       "everyone's) with what their controllers chose: decode threads and\n"
	       "guests, the I/O thread's decodes, the read-ahead budget, the forms\n"
	       "regime, cluster reads sent to storage; and their rates.\n"
	       "\n"
	       "  --interval S   seconds between refreshes, 0.1..3600 (default 1)\n"
	       "  --count N      stop after N refreshes (default: run until interrupted)\n"
	       "  --loaders      the loaders only, one line each per refresh; needs no\n"
	       "                 dlcache.ko (in-process loaders are listed too)\n"
	       "  -h, --help     show this help\n");
}

struct rates {
	double hits, misses, ratio, fill_mb, served_mb, evictions;
};

static void rates_of(const struct dlcache_counters *a, const struct dlcache_counters *b,
		     double dt, struct rates *r)
{
	uint64_t dh = b->hits - a->hits, dm = b->misses - a->misses;

	r->hits = (double)dh / dt;
	r->misses = (double)dm / dt;
	r->ratio = dh + dm ? (double)dh / (double)(dh + dm) : 0.0;
	r->fill_mb = (double)(b->miss_bytes - a->miss_bytes) / dt / 1e6;
	r->served_mb = (double)(b->hit_bytes - a->hit_bytes) / dt / 1e6;
	r->evictions = (double)(b->evictions - a->evictions) / dt;
}

static int snap(struct admin_snap *s)
{
	int fd = admin_open("watch"), ret;

	if (fd < 0)
		return -1;
	ret = admin_snap_take(fd, s);
	close(fd);
	if (ret) {
		fail("watch", "DLCACHE_IOC_STATS: %s", strerror(-ret));
		return -1;
	}
	return 0;
}

/* Sleeps @secs; false when a signal asked us to stop. */
static int nap(double secs)
{
	struct timespec ts, rem;

	ts.tv_sec = (time_t)secs;
	ts.tv_nsec = (long)((secs - (double)ts.tv_sec) * 1e9);
	while (!stop && nanosleep(&ts, &rem) && errno == EINTR)
		ts = rem;
	return !stop;
}

static void print_line_header(void)
{
	printf("%8s %10s %10s %7s %10s %10s %10s %10s %10s %4s %4s\n", "time_s",
	       "hits/s", "misses/s", "hit%", "fillMB/s", "servedMB/s",
	       "evict/s", "usedMiB", "capMiB", "ds", "fill");
}

static void print_line(const struct admin_snap *s, const struct rates *r, double t)
{
	printf("%8.1f %10.1f %10.1f %6.1f%% %10.2f %10.2f %10.1f %10.1f %10.1f %4u %4llu\n",
	       t, r->hits, r->misses, 100.0 * r->ratio, r->fill_mb, r->served_mb,
	       r->evictions, (double)s->used_bytes / 1048576.0,
	       (double)s->capacity_bytes / 1048576.0, s->n,
	       (unsigned long long)s->global.fills_inflight);
}

static void print_screen(const struct admin_snap *prev, const struct admin_snap *s,
			 const struct rates *g, double interval)
{
	static const struct dlcache_counters zero;
	char a[32], b[32], key[36];
	time_t now = time(NULL);
	struct tm tm;
	uint32_t i;

	localtime_r(&now, &tm);
	/* Home, clear to the end of the screen. */
	printf("\033[H\033[J");
	printf("dlcachectl watch, every %.1f s    %02d:%02d:%02d    (Ctrl-C quits)\n\n",
	       interval, tm.tm_hour, tm.tm_min, tm.tm_sec);
	printf("capacity %s, used %s (%.1f%%), %u data sets, %u sessions\n",
	       admin_bytes(s->capacity_bytes, a, sizeof(a)),
	       admin_bytes(s->used_bytes, b, sizeof(b)),
	       s->capacity_bytes ? 100.0 * (double)s->used_bytes /
	       (double)s->capacity_bytes : 0.0, s->n, s->nsessions - 1);
	printf("since load: %llu hits, %llu misses (%.1f%% hits by count, %.1f%% by bytes), %llu evictions (%llu by the shrinker), %llu waits, %llu aborts, %llu errors\n\n",
	       (unsigned long long)s->global.hits, (unsigned long long)s->global.misses,
	       100.0 * admin_hit_ratio(&s->global), 100.0 * admin_byte_hit_ratio(&s->global),
	       (unsigned long long)s->global.evictions,
	       (unsigned long long)s->global.shrinker_evictions,
	       (unsigned long long)s->global.waits, (unsigned long long)s->global.aborts,
	       (unsigned long long)s->global.errors);
	printf("%-34s %10s %10s %7s %10s %10s %10s %10s %5s\n", "", "hits/s", "misses/s",
	       "hit%", "fillMB/s", "servedMB/s", "evict/s", "usedMiB", "fills");
	printf("%-34s %10.1f %10.1f %6.1f%% %10.2f %10.2f %10.1f %10.1f %5llu\n", "all",
	       g->hits, g->misses, 100.0 * g->ratio, g->fill_mb, g->served_mb,
	       g->evictions, (double)s->used_bytes / 1048576.0,
	       (unsigned long long)s->global.fills_inflight);
	for (i = 0; i < s->n; i++) {
		const struct dlcache_stats *d = &s->ds[i], *p;
		double dt = (double)(s->t_ns - prev->t_ns) / 1e9;
		struct rates r;

		p = admin_snap_same(prev, d);
		rates_of(p ? &p->dataset : &zero, &d->dataset, dt, &r);
		admin_key_str(d->ds_key, key);
		/* A form set: its encoded set's key, marked. */
		if (d->ds_flags & DLCACHE_DS_F_FORM)
			strcat(key, " f");
		printf("%-34s %10.1f %10.1f %6.1f%% %10.2f %10.2f %10.1f %10.1f %5llu\n",
		       key, r.hits, r.misses, 100.0 * r.ratio, r.fill_mb, r.served_mb,
		       r.evictions, (double)d->dataset.used_bytes / 1048576.0,
		       (unsigned long long)d->dataset.fills_inflight);
	}
	fflush(stdout);
}

/* The view: its settings and the last two snapshots of each kind. */
struct view {
	int tty, loaders_only;
	double interval;
	uint64_t t0;
	struct admin_snap prev, cur;
	struct loader_snap lprev, lcur;
};

/* A snapshot of each kind the view shows: 0, or 1 after a failure (said). */
static int view_take(struct view *v, struct admin_snap *s, struct loader_snap *ls)
{
	if (!v->loaders_only && snap(s))
		return 1;
	/* The loaders are extra: a /dev/shm we cannot read shows none. */
	if (loader_snap_take(NULL, ls) && v->loaders_only) {
		fail("watch", "cannot read the loaders' status files in /dev/shm");
		return 1;
	}
	return 0;
}

/* What changed from v->prev to v->cur, in the view's form. */
static void view_show(struct view *v)
{
	uint64_t now = v->loaders_only ? v->lcur.t_ns : v->cur.t_ns;
	struct rates g;
	double dt;

	if (v->loaders_only) {
		if (v->tty) {
			printf("\033[H\033[J");
			printf("dlcachectl watch --loaders, every %.1f s    (Ctrl-C quits)\n",
			       v->interval);
			loader_print_screen(&v->lprev, &v->lcur);
		} else {
			loader_print_lines(&v->lprev, &v->lcur,
					   (double)(now - v->t0) / 1e9);
		}
		return;
	}
	dt = (double)(v->cur.t_ns - v->prev.t_ns) / 1e9;
	if (dt <= 0)
		dt = 1e-9;
	rates_of(&v->prev.global, &v->cur.global, dt, &g);
	if (v->tty) {
		print_screen(&v->prev, &v->cur, &g, v->interval);
		loader_print_screen(&v->lprev, &v->lcur);
	} else {
		print_line(&v->cur, &g, (double)(now - v->t0) / 1e9);
	}
}

int cmd_watch(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		{ "loaders", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c, tty, rc = 0, loaders_only = 0;
	struct sigaction sa;
	double interval = 1.0;
	uint64_t count = 0, n;
	struct view v;
	char *end;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			errno = 0;
			interval = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(interval >= 0.1 && interval <= 3600))
				return usage_error("watch", "--interval: want 0.1..3600 seconds, got '%s'",
						   optarg);
			break;
		case 'n':
			if (parse_u64(optarg, 1, UINT64_MAX, &count))
				return usage_error("watch", "--count: want a number >= 1, got '%s'",
						   optarg);
			break;
		case 'l':
			loaders_only = 1;
			break;
		case 'h':
			help();
			return 0;
		default:
			return usage_error("watch", "unknown or incomplete option '%s' (try --help)",
					   argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("watch", "unexpected argument '%s' (try --help)", argv[optind]);

	memset(&v, 0, sizeof(v));
	v.interval = interval;
	v.loaders_only = loaders_only;
	if (view_take(&v, &v.prev, &v.lprev))
		return 1;
	v.t0 = loaders_only ? v.lprev.t_ns : v.prev.t_ns;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: the sleep ends */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	tty = v.tty = isatty(STDOUT_FILENO);
	if (tty) {
		/* Alternate screen, cursor hidden: both undone below. */
		printf("\033[?1049h\033[?25l\033[H\033[J");
		printf("dlcachectl watch: first rates in %.1f s (Ctrl-C quits)\n", interval);
	} else if (loaders_only) {
		loader_print_header();
	} else {
		print_line_header();
	}
	fflush(stdout);

	for (n = 0; !count || n < count; n++) {
		struct loader_snap lt;

		if (!nap(interval))
			break;
		if (view_take(&v, &v.cur, &v.lcur)) {
			rc = 1;
			break;
		}
		view_show(&v);
		if (fflush(stdout) && errno == EPIPE)
			stop = 1;
		if (!loaders_only) {
			admin_snap_free(&v.prev);
			v.prev = v.cur;
			memset(&v.cur, 0, sizeof(v.cur));
		}
		/* Swapped: each keeps its array for the next snapshot. */
		lt = v.lprev;
		v.lprev = v.lcur;
		v.lcur = lt;
	}
	if (!loaders_only)
		admin_snap_free(&v.prev);
	loader_snap_free(&v.lprev);
	loader_snap_free(&v.lcur);
	if (tty) {
		printf("\033[?25h\033[?1049l");
		fflush(stdout);
	}
	return rc;
}
