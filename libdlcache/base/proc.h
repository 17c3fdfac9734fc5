/* SPDX-License-Identifier: MIT */
/*
 * Other processes of this node, as /proc shows them (proc.c): whether a
 * pid still names the process that published it. Node sharing's slots
 * and the loaders' status files (nodeshare.c, status.c) name a process
 * by its pid and its start time, so that a reused pid is not taken for
 * the one that wrote them.
 * Internal to libdlcache; the public face is dlcache.h.
 */
#ifndef DLC_PROC_H
#define DLC_PROC_H

#include <stdint.h>

/*
 * Process @pid's start time (field 22 of /proc/PID/stat, in clock ticks
 * after boot), or 0 when there is no such process.
 */
uint64_t dlc_proc_start(uint32_t pid);

/*
 * Whether process @pid, started at @start (dlc_proc_start()), is still
 * there: 0 when kill(pid, 0) says it is gone or its start time differs.
 */
int dlc_proc_live(uint32_t pid, uint64_t start);

#endif
