/* SPDX-License-Identifier: MIT */
/*
 * Decoded forms in dlcache.ko (kforms.c): the form set of the data set
 * (DLCACHE_FEAT_FORMS), this user's own, where the loader's kernel tier
 * (ktier.c) keeps the forms its decoders make and finds those any job of
 * this user made. Internal to libdlcache; library.md, "Decoded forms".
 */
#ifndef DLC_KFORMS_H
#define DLC_KFORMS_H

#include <pthread.h>
#include <stdint.h>

struct dlc_buf;
struct dlc_loader;
struct dlc_stats;
struct dlc_window_shares;
struct dlc_kforms;

/*
 * Open the form set of @key for loader @l on @dev (a session of its own,
 * joined to job @job when @joined, as the encoded set's is), with the
 * forms controller (forms.h) in @l->cfg.forms's mode, which becomes
 * @l->forms. 0, or -errno with *@why (-EOPNOTSUPP: a module without
 * forms).
 */
int dlc_kforms_open(struct dlc_loader *l, const char *dev,
		    const uint64_t key[2], uint32_t window, uint64_t job,
		    int joined, struct dlc_kforms **out, const char **why);
/* Close it; the forms controller is @l's until dlc_kforms_free(). */
void dlc_kforms_close(struct dlc_kforms *kf);
/* Free it, once no decoder runs (the loader's destroy). */
void dlc_kforms_free(struct dlc_kforms *kf);

/* Upload @epoch's order, as the encoded set's (@len IDs). */
int dlc_kforms_set_order(struct dlc_kforms *kf, uint32_t epoch,
			 const uint32_t *ids, uint32_t len);
/*
 * I/O thread: the use of sample @id at (@epoch, @index) of the time
 * line: its form, a reference to a buffer with form_w set, or NULL (not
 * held, or not usable). Never waits on another session.
 */
struct dlc_buf *dlc_kforms_get(struct dlc_kforms *kf, uint32_t id,
			       uint32_t epoch, uint32_t index);
/*
 * I/O thread, each round: PUT the forms the decoders made (refused once
 * the form set is closed), and measure the module's room. Whether any
 * queued form was taken off the queue.
 */
int dlc_kforms_round(struct dlc_kforms *kf, pthread_mutex_t *lock);
/* I/O thread: the loader's pace window @w ended (dlc_forms_window()). */
void dlc_kforms_window(struct dlc_kforms *kf,
		       const struct dlc_window_shares *w);
/* Under the loader's lock: whether sample @id's decode makes its form. */
int dlc_kforms_want(struct dlc_kforms *kf, uint32_t id,
		    const struct dlc_buf *enc, uint32_t *est);
/*
 * Whether sample @id's form is held, as far as this loader knows (it PUT
 * or found it, and no GET missed it since): its bytes need no read ahead.
 */
int dlc_kforms_known(const struct dlc_kforms *kf, uint32_t id);
/* Under the loader's lock: the forms' counters into @st. */
void dlc_kforms_stats(struct dlc_kforms *kf, struct dlc_stats *st);

#endif
