/* SPDX-License-Identifier: MIT */
/*
 * Node sharing (dlc_config.node_group): the loaders of one job's ranks on
 * a node, each bound by its launcher to its own CPUs, lend each other
 * those CPUs' idle time. A rank whose loader runs ahead of its consumer
 * leaves its CPUs idle; a rank whose loader is behind runs guest decode
 * threads there, at SCHED_IDLE, so that they take only what the owner
 * does not use (loader.c). This file is the meeting point: a segment of
 * shared memory per (user, group), where each loader publishes the CPUs
 * it was given and reads the others'.
 *
 * The segment is /dev/shm/dlcache-node-EUID-GROUP, this user's own and
 * mode 0600 (refused otherwise: another user could have made it). It
 * holds DLC_NODE_SLOTS slots, one per loader: the process's pid and
 * start time (so that a reused pid is not taken for the loader), and its
 * CPUs. A slot whose process is gone is freed by whoever sees it, so a
 * rank that dies or leaves stops lending and borrowing.
 */
#ifndef DLC_NODESHARE_H
#define DLC_NODESHARE_H

#include <sched.h>
#include <stdint.h>

struct dlc_logger;

/* Loaders one group can hold on a node. */
#define DLC_NODE_SLOTS		64
/* The longest group name, in bytes. */
#define DLC_NODE_NAME_MAX	64

struct dlc_node_share;

/*
 * Whether @name may name a group: 1 to DLC_NODE_NAME_MAX bytes of
 * [A-Za-z0-9._-], not starting with '.'. 0 when it may, else -EINVAL.
 */
int dlc_node_name_check(const char *name);

/*
 * Join group @name with @cpus, the CPUs this loader was given: open (or
 * make) the group's segment and take a slot. 0 and *@out, or -errno with
 * a log line naming the path and what is wrong: -EPERM (the segment is
 * not this user's own 0600 file), -EINVAL (not a segment of this
 * format), -EUSERS (every slot taken by a live loader), -ENOMEM, or what
 * open or mmap said.
 */
int dlc_node_join(const char *name, const cpu_set_t *cpus,
		  const struct dlc_logger *log, struct dlc_node_share **out);

/*
 * The CPUs of the group's other live loaders that are not this one's,
 * into @set, and how many (0: nothing to borrow). Frees the slots of
 * processes that are gone. Thread safe; reads the segment.
 */
int dlc_node_borrowable(struct dlc_node_share *ns, cpu_set_t *set);

/* Free this loader's slot, unmap the segment and free @ns. NULL is fine. */
void dlc_node_leave(struct dlc_node_share *ns);

/* The segment's path, for log lines. */
const char *dlc_node_path(const struct dlc_node_share *ns);

#endif
