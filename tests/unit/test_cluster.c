// SPDX-License-Identifier: MIT
/*
 * Cluster mode's configuration (dlc_config.cluster, .peer_timeout_ms):
 * bad values are refused with the field named, and a library built
 * without MPI (this test's build; make MPI=1 builds peer.c instead)
 * refuses cluster mode with -EOPNOTSUPP in one log line that says how to
 * get it. Cluster mode itself runs under mpirun, four ranks in network
 * namespaces: tests/cli/test_cluster.sh.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dlcache.h"
#include "helpers/testutil.h"

static char *g_dir;
static struct dlc_index *g_idx;

static void config(struct dlc_config *cfg)
{
	dlc_config_init(cfg);
	cfg->batch_size = 4;
	cfg->transform.out_w = 32;
	cfg->transform.out_h = 32;
	cfg->cache_bytes = 1 << 20;
	cfg->log = t_log_capture;
}

/* @cfg refused with -EINVAL, the log naming @field. */
static void refused(struct dlc_config *cfg, const char *field)
{
	struct dlc_loader *l = NULL;

	t_log_clear();
	CHECK_EQ(dlc_loader_create(cfg, g_idx, &l), -EINVAL);
	CHECK(strstr(t_logbuf, field) != NULL, "%s: log: %s", field, t_logbuf);
	CHECK(l == NULL, "a loader after a failure");
}

static void bad_values(void)
{
	struct dlc_config cfg;

	config(&cfg);
	cfg.cluster = 2;
	refused(&cfg, "cluster");
	config(&cfg);
	cfg.cluster = DLC_CLUSTER_MPI;
	cfg.backend = DLC_BACKEND_KERNEL;
	refused(&cfg, "backend must be DLC_BACKEND_INPROCESS");
	config(&cfg);
	cfg.peer_timeout_ms = 100;
	refused(&cfg, "peer_timeout_ms");
	config(&cfg);
	cfg.cluster = DLC_CLUSTER_MPI;
	cfg.peer_timeout_ms = 600001;
	refused(&cfg, "peer_timeout_ms");
}

static void not_available(void)
{
#ifdef DLC_HAVE_MPI
	printf("skip not_available: this build has MPI (make MPI=1)\n");
#else
	struct dlc_loader *l = NULL;
	struct dlc_config cfg;

	config(&cfg);
	cfg.cluster = DLC_CLUSTER_MPI;
	t_log_clear();
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), -EOPNOTSUPP);
	CHECK(strstr(t_logbuf, "built without MPI (make MPI=1)") != NULL,
	      "log: %s", t_logbuf);
	CHECK(l == NULL, "a loader after a failure");
	/* The same config without cluster mode runs. */
	cfg.cluster = DLC_CLUSTER_OFF;
	CHECK_EQ(dlc_loader_create(&cfg, g_idx, &l), 0);
	dlc_loader_destroy(l);
#endif
}

int main(void)
{
	int ret;

	g_dir = t_mkdtemp(NULL);
	if (!g_dir || t_make_dataset(g_dir, 2, 8)) {
		printf("cannot make a data set\n");
		return 1;
	}
	CHECK(dlc_index_build(g_dir, &g_idx) == 0, "index");
	if (!g_idx)
		return t_done("test_cluster");
	T_RUN(bad_values);
	T_RUN(not_available);
	ret = t_done("test_cluster");
	dlc_index_free(g_idx);
	t_rmtree(g_dir);
	return ret;
}
