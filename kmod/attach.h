/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dlcache.ko's ioctls that take both a session and a data set (attach.c):
 * ATTACH, DETACH, SET_ORDER and GET_ORDER. They sit over the sessions
 * (session.c) and the data sets (dataset.c), which never call them.
 */
#ifndef DLC_ATTACH_H
#define DLC_ATTACH_H

#include <linux/compiler.h>

struct dlc_session;

/* main.c's dlc_iocs[] dispatches; each takes the session's ring_lock. */
long dlc_ioc_attach(struct dlc_session *sess, void __user *uarg);
long dlc_ioc_detach(struct dlc_session *sess, void __user *uarg);
long dlc_ioc_set_order(struct dlc_session *sess, void __user *uarg);
long dlc_ioc_get_order(struct dlc_session *sess, void __user *uarg);

#endif
