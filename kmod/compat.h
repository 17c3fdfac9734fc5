/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dlcache.ko across kernel versions: 6.1 (Debian bookworm) to 6.12
 * (bookworm-backports) are built and tested; what lies between is covered
 * by the version tests below. Every difference between kernels lives
 * here, as a small helper chosen by LINUX_VERSION_CODE; the module's own
 * files call only the helpers.
 *
 *   dlc_import_ubuf()        an iov_iter over one user buffer
 *                            (import_single_range() until 6.7,
 *                            import_ubuf() from 6.8)
 *   struct dlc_shrinker      the shrinker: embedded and register_shrinker()
 *   dlc_shrinker_register()  until 6.6, shrinker_alloc() and
 *   dlc_shrinker_unregister() shrinker_register() from 6.7
 *
 * Not needed any more: no_llseek (gone in 6.12). Since 6.0 a file whose
 * operations have no llseek fails lseek() with -ESPIPE, as no_llseek did.
 */
#ifndef DLC_COMPAT_H
#define DLC_COMPAT_H

#include <linux/errno.h>
#include <linux/shrinker.h>
#include <linux/types.h>
#include <linux/uio.h>
#include <linux/version.h>

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 1, 0)
#error "dlcache.ko needs Linux 6.1 or later"
#endif

/* The direction names arrived in 6.2 (and in 6.1 stable updates). */
#ifndef ITER_SOURCE
#define ITER_SOURCE	WRITE	/* the iterator is read: copy from user */
#define ITER_DEST	READ	/* the iterator is written: copy to user */
#endif

/* ------------------------------------------------------------------ */
/* iov_iter over one user buffer                                       */
/* ------------------------------------------------------------------ */

/*
 * dlc_import_ubuf() - point @iter at the user buffer @buf of @len bytes.
 * @dir is ITER_DEST (the kernel copies into @buf) or ITER_SOURCE. @iov is
 * storage that must live as long as @iter; newer kernels do not use it.
 * Returns 0 or -EFAULT.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 8, 0)
static inline int dlc_import_ubuf(int dir, void __user *buf, size_t len,
				  struct iovec *iov, struct iov_iter *iter)
{
	return import_ubuf(dir, buf, len, iter);
}
#else
static inline int dlc_import_ubuf(int dir, void __user *buf, size_t len,
				  struct iovec *iov, struct iov_iter *iter)
{
	return import_single_range(dir, buf, len, iov, iter);
}
#endif

/* ------------------------------------------------------------------ */
/* Shrinker                                                            */
/* ------------------------------------------------------------------ */

typedef unsigned long (*dlc_shrink_fn)(struct shrinker *shrink,
				       struct shrink_control *sc);

/*
 * struct dlc_shrinker - a registered shrinker on any kernel. Until 6.6 the
 * struct shrinker is embedded here; from 6.7 the kernel allocates it.
 * Either way @shrinker points at it while registered.
 */
struct dlc_shrinker {
	struct shrinker *shrinker;
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 7, 0)
	struct shrinker embedded;
#endif
};

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 7, 0)
static inline int dlc_shrinker_register(struct dlc_shrinker *ds,
					const char *name, dlc_shrink_fn count,
					dlc_shrink_fn scan)
{
	struct shrinker *s = shrinker_alloc(0, "%s", name);

	if (!s)
		return -ENOMEM;
	s->count_objects = count;
	s->scan_objects = scan;
	s->seeks = DEFAULT_SEEKS;
	ds->shrinker = s;
	shrinker_register(s);
	return 0;
}

static inline void dlc_shrinker_unregister(struct dlc_shrinker *ds)
{
	shrinker_free(ds->shrinker);
	ds->shrinker = NULL;
}
#else
static inline int dlc_shrinker_register(struct dlc_shrinker *ds,
					const char *name, dlc_shrink_fn count,
					dlc_shrink_fn scan)
{
	struct shrinker *s = &ds->embedded;
	int ret;

	s->count_objects = count;
	s->scan_objects = scan;
	s->seeks = DEFAULT_SEEKS;
	ret = register_shrinker(s, "%s", name);
	if (!ret)
		ds->shrinker = s;
	return ret;
}

static inline void dlc_shrinker_unregister(struct dlc_shrinker *ds)
{
	unregister_shrinker(ds->shrinker);
	ds->shrinker = NULL;
}
#endif

#endif /* DLC_COMPAT_H */
