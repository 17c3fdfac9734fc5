// SPDX-License-Identifier: MIT
/*
 * dlcachectl watch's loaders: the node's loaders as their status files
 * show them (libdlcache's status.h), with what each one's controllers
 * chose and the rates between two snapshots. A user sees their own
 * loaders; root sees everyone's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "internal.h"
#include "watchloaders.h"

static int take_one(const struct dlc_status_info *info, void *arg)
{
	struct loader_snap *s = arg;

	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 8;
		struct dlc_status_info *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -1;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = *info;
	return 0;
}

static int by_pid(const void *a, const void *b)
{
	const struct dlc_status_info *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->created_ns < y->created_ns ? -1 : x->created_ns > y->created_ns;
}

int loader_snap_take(const char *dir, struct loader_snap *s)
{
	int ret;

	s->n = 0;
	s->t_ns = dlc_now_ns();
	ret = dlc_status_scan(dir, take_one, s);
	if (ret > 0)
		ret = -ENOMEM;
	if (s->n > 1)
		qsort(s->v, s->n, sizeof(*s->v), by_pid);
	return ret;
}

void loader_snap_free(struct loader_snap *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* The same loader as @x in @s (pid and creation time), or NULL. */
static const struct dlc_status_info *same(const struct loader_snap *s,
					  const struct dlc_status_info *x)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->v[i].pid == x->pid && s->v[i].created_ns == x->created_ns)
			return &s->v[i];
	return NULL;
}

struct loader_rates {
	double img, wait, decode, io_decodes, diverted, age;
};

/*
 * @c's rates since @p (NULL: since @c was made), over the time between
 * their snapshots; none when the loader has not refreshed since.
 */
static void rates(const struct dlc_status_info *p,
		  const struct dlc_status_info *c, uint64_t now,
		  struct loader_rates *r)
{
	static const struct dlc_stats zero;
	const struct dlc_stats *a = p ? &p->stats : &zero, *b = &c->stats;
	uint64_t t0 = p ? p->t_ns : c->created_ns;
	double dt = c->t_ns > t0 ? (double)(c->t_ns - t0) / 1e9 : 0;

	memset(r, 0, sizeof(*r));
	r->age = c->t_ns && now > c->t_ns ? (double)(now - c->t_ns) / 1e9 : 0;
	if (dt <= 0)
		return;
	r->img = (double)(b->batches - a->batches) * c->batch_size / dt;
	r->wait = 100.0 * (double)(b->wait_ns - a->wait_ns) / 1e9 / dt;
	r->decode = (double)(b->decode_ns - a->decode_ns) / 1e9 / dt;
	r->io_decodes = (double)(b->io_thread_decodes - a->io_thread_decodes) / dt;
	r->diverted = (double)(b->cluster_peer_diverted -
			       a->cluster_peer_diverted) / dt;
}

static const char *regime(uint64_t r)
{
	return r == 1 ? "forms" : r == 2 ? "bytes" : "-";
}

static const char *backend(uint32_t b)
{
	return b == DLC_BACKEND_KERNEL ? "kernel" : "inproc";
}

static void shard(const struct dlc_status_info *c, char *buf, size_t len)
{
	snprintf(buf, len, "%u/%u%s", c->rank, c->world, c->cluster ? "c" : "");
}

/* The columns' names, as line() prints their values. */
static void columns(void)
{
	printf("%8s %7s %6s %9s %6s %7s %4s %5s %7s %7s %5s %5s %6s %7s %6s %s\n",
	       "pid", "rank", "cache", "img/s", "wait%", "decode", "thr",
	       "guest", "ioDec/s", "raMiB", "reads", "forms", "displ",
	       "divrt/s", "age_s", "source");
}

void loader_print_header(void)
{
	printf("%8s ", "time_s");
	columns();
}

static void line(const struct dlc_status_info *c, const struct loader_rates *r)
{
	char sh[24];

	shard(c, sh, sizeof(sh));
	printf("%8u %7s %6s %9.1f %5.1f%% %7.2f %4u %5llu %7.1f %7.1f %5llu %5s %6llu %7.1f %6.1f %s\n",
	       c->pid, sh, backend(c->backend), r->img, r->wait, r->decode,
	       c->decode_threads,
	       (unsigned long long)c->stats.node_guest_threads, r->io_decodes,
	       (double)c->stats.readahead_budget / 1048576.0,
	       (unsigned long long)c->stats.reads_inflight,
	       regime(c->stats.forms_regime),
	       (unsigned long long)c->stats.forms_displaced, r->diverted,
	       r->age, c->source);
}

void loader_print_lines(const struct loader_snap *prev,
			const struct loader_snap *cur, double t)
{
	size_t i;

	for (i = 0; i < cur->n; i++) {
		struct loader_rates r;

		rates(same(prev, &cur->v[i]), &cur->v[i], cur->t_ns, &r);
		printf("%8.1f ", t);
		line(&cur->v[i], &r);
	}
}

void loader_print_screen(const struct loader_snap *prev,
			 const struct loader_snap *cur)
{
	size_t i;

	printf("\n%zu loader%s on this node%s\n", cur->n, cur->n == 1 ? "" : "s",
	       cur->n ? ":" : " (yours; root sees every user's)");
	if (!cur->n)
		return;
	columns();
	for (i = 0; i < cur->n; i++) {
		struct loader_rates r;

		rates(same(prev, &cur->v[i]), &cur->v[i], cur->t_ns, &r);
		line(&cur->v[i], &r);
	}
}
