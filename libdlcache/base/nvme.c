// SPDX-License-Identifier: MIT
/*
 * NVMe namespaces: which one a path names, its LBA format, size and
 * transfer limit, and its generic character device (nvme.h).
 *
 * sysfs names the device (/sys/dev/block/MAJ:MIN and /sys/dev/char/...
 * link to the kernel's object, whose last component is nvmeXnY or ngXnY),
 * and gives what anyone may read: the logical block size, the size, the
 * queue's limits and the namespace identifiers. libnvme then sends
 * Identify Controller (MDTS) and Identify Namespace (LBA format, metadata
 * size, NGUID, EUI-64) on the block device; a kernel that refuses them to
 * this caller (-EACCES, -EPERM) leaves the sysfs facts.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libnvme.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "nvme.h"

static int why_set(char *why, size_t wl, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int why_set(char *why, size_t wl, int err, const char *fmt, ...)
{
	va_list ap;

	if (why && wl) {
		va_start(ap, fmt);
		vsnprintf(why, wl, fmt, ap);
		va_end(ap);
	}
	return err;
}

/* The first line of sysfs file @dir/@attr, without its newline. */
static int sys_read(const char *dir, const char *attr, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, attr);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int sys_u64(const char *dir, const char *attr, uint64_t *v)
{
	char buf[64], *end;
	int ret = sys_read(dir, attr, buf, sizeof(buf));

	if (ret)
		return ret;
	errno = 0;
	*v = strtoull(buf, &end, 10);
	return errno || end == buf ? -EINVAL : 0;
}

/* The hex digits of @s (dashes, spaces and colons skipped) into @out. */
static int parse_hex(const char *s, uint8_t *out, size_t n)
{
	size_t got = 0;
	int hi = -1;

	for (; *s; s++) {
		int v;

		if (*s == '-' || *s == ' ' || *s == ':')
			continue;
		if (!isxdigit((unsigned char)*s))
			return -EINVAL;
		v = isdigit((unsigned char)*s) ? *s - '0' :
		    tolower((unsigned char)*s) - 'a' + 10;
		if (hi < 0) {
			hi = v;
			continue;
		}
		if (got == n)
			return -EINVAL;
		out[got++] = (uint8_t)(hi << 4 | v);
		hi = -1;
	}
	return hi < 0 && got == n ? 0 : -EINVAL;
}

static int all_zero(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return 0;
	return 1;
}

/* Whether @name is a namespace's block device: nvme<N>n<M>, nothing more. */
static int ns_name(const char *name)
{
	const char *p = name;

	if (strncmp(p, "nvme", 4))
		return 0;
	p += 4;
	if (!isdigit((unsigned char)*p))
		return 0;
	while (isdigit((unsigned char)*p))
		p++;
	if (*p++ != 'n' || !isdigit((unsigned char)*p))
		return 0;
	while (isdigit((unsigned char)*p))
		p++;
	return *p == '\0';
}

/*
 * Namespace @name's NGUID (@n 16) or EUI-64 (8) into @out: from sysfs,
 * else from Identify Namespace (a kernel with NVME_QUIRK_BOGUS_NID for the
 * controller, QEMU's among them, shows none in sysfs).
 */
static int ns_id(const char *name, int n, uint8_t *out)
{
	char dir[PATH_MAX], buf[128];
	struct nvme_id_ns id;
	uint32_t nsid;
	int fd, ret;

	snprintf(dir, sizeof(dir), "/sys/block/%s", name);
	if (!sys_read(dir, n == 16 ? "nguid" : "eui", buf, sizeof(buf)) &&
	    !parse_hex(buf, out, (size_t)n))
		return 0;
	snprintf(dir, sizeof(dir), "/dev/%s", name);
	fd = open(dir, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = nvme_get_nsid(fd, &nsid);
	if (!ret)
		ret = nvme_identify_ns(fd, nsid, &id);
	close(fd);
	if (ret)
		return ret < 0 ? -errno : -EIO;
	memcpy(out, n == 16 ? id.nguid : id.eui64, (size_t)n);
	return 0;
}

/* The namespace whose NGUID or EUI-64 is the hex @id, by its name. */
static int resolve_id(const char *id, char *name, size_t len, char *why,
		      size_t wl)
{
	uint8_t want[16], have[16];
	struct dirent *de;
	int idlen = 0;
	DIR *d;

	if (!parse_hex(id, want, 16))
		idlen = 16;
	else if (!parse_hex(id, want, 8))
		idlen = 8;
	else
		return why_set(why, wl, -EINVAL, "%s%s: not an NGUID (32 hex "
			       "digits) or EUI-64 (16)", DLC_NVME_PREFIX, id);
	d = opendir("/sys/block");
	if (!d)
		return why_set(why, wl, -errno, "/sys/block: %s",
			       strerror(errno));
	while ((de = readdir(d))) {
		if (!ns_name(de->d_name) || strlen(de->d_name) >= len ||
		    ns_id(de->d_name, idlen, have) ||
		    memcmp(have, want, (size_t)idlen))
			continue;
		memcpy(name, de->d_name, strlen(de->d_name) + 1);
		closedir(d);
		return 0;
	}
	closedir(d);
	return why_set(why, wl, -ENOENT, "no NVMe namespace has %s %s",
		       idlen == 16 ? "NGUID" : "EUI-64", id);
}

/* The kernel object's name for device @st (block or char). */
static int dev_name(const struct stat *st, char *name, size_t len)
{
	char link[PATH_MAX], target[PATH_MAX];
	const char *base;
	ssize_t n;

	snprintf(link, sizeof(link), "/sys/dev/%s/%u:%u",
		 S_ISBLK(st->st_mode) ? "block" : "char",
		 major(st->st_rdev), minor(st->st_rdev));
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = '\0';
	base = strrchr(target, '/');
	base = base ? base + 1 : target;
	if (strlen(base) >= len)
		return -ENAMETOOLONG;
	memcpy(name, base, strlen(base) + 1);
	return 0;
}

/* Identify through libnvme: what sysfs cannot say (MDTS, the format). */
static int identify(struct dlc_nvme_ns *ns)
{
	struct nvme_id_ctrl ctrl;
	struct nvme_id_ns id;
	uint32_t nsid, fmt;
	int fd, ret;

	fd = open(ns->blk, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = nvme_get_nsid(fd, &nsid);
	if (ret == 0)
		ret = nvme_identify_ns(fd, nsid, &id);
	if (ret == 0)
		ret = nvme_identify_ctrl(fd, &ctrl);
	close(fd);
	/* libnvme returns -1 and errno, or an NVMe status (> 0). */
	if (ret < 0)
		return -errno;
	if (ret > 0)
		return -EIO;
	fmt = id.flbas & 0xf;
	if (id.nlbaf >= 16)
		fmt |= (uint32_t)((id.flbas >> 5) & 0x3) << 4;
	if (fmt > id.nlbaf || id.lbaf[fmt].ds < 9 || id.lbaf[fmt].ds > 12)
		return -EOPNOTSUPP;
	ns->nsid = nsid;
	ns->lba_bytes = 1U << id.lbaf[fmt].ds;
	ns->meta_bytes = le16toh(id.lbaf[fmt].ms);
	ns->bytes = le64toh(id.nsze) << id.lbaf[fmt].ds;
	memcpy(ns->nguid, id.nguid, sizeof(ns->nguid));
	memcpy(ns->eui64, id.eui64, sizeof(ns->eui64));
	/* MDTS is in units of the minimum page size: 4 KiB on every drive. */
	if (ctrl.mdts && ctrl.mdts < 20 && (4096U << ctrl.mdts) < ns->max_xfer)
		ns->max_xfer = 4096U << ctrl.mdts;
	ns->identified = 1;
	return 0;
}

int dlc_nvme_name(const char *path, char *name, size_t len, char *why,
		  size_t why_len)
{
	char dir[PATH_MAX];
	struct stat st;
	int ret;

	if (why && why_len)
		why[0] = '\0';
	if (!strncmp(path, DLC_NVME_PREFIX, strlen(DLC_NVME_PREFIX))) {
		ret = resolve_id(path + strlen(DLC_NVME_PREFIX), name, len, why,
				 why_len);
		return ret ? ret : 1;
	}
	if (stat(path, &st))
		return 0;	/* the caller's open says why */
	if (!S_ISBLK(st.st_mode) && !S_ISCHR(st.st_mode))
		return 0;
	if (dev_name(&st, name, len))
		return 0;
	if (S_ISCHR(st.st_mode)) {
		/* ngXnY is the character device of nvmeXnY. */
		if (strncmp(name, "ng", 2) || strlen(name) + 2 >= len)
			return 0;
		memmove(name + 4, name + 2, strlen(name + 2) + 1);
		memcpy(name, "nvme", 4);
	}
	if (ns_name(name))
		return 1;
	snprintf(dir, sizeof(dir), "/sys/class/block/%s/partition", name);
	if (!strncmp(name, "nvme", 4) && !access(dir, F_OK))
		return why_set(why, why_len, -ENOTBLK,
			       "%s is a partition: a pack takes a whole namespace",
			       path);
	return 0;
}

int dlc_nvme_probe(const char *path, struct dlc_nvme_ns *ns, char *why,
		   size_t why_len)
{
	char name[64], dir[PATH_MAX], buf[128], ngdir[PATH_MAX];
	uint64_t v, sectors, lbs, kb, segs;
	int ret;

	memset(ns, 0, sizeof(*ns));
	ret = dlc_nvme_name(path, name, sizeof(name), why, why_len);
	if (ret <= 0)
		return ret;
	snprintf(ns->name, sizeof(ns->name), "%s", name);
	snprintf(ns->blk, sizeof(ns->blk), "/dev/%s", name);
	snprintf(dir, sizeof(dir), "/sys/block/%s", name);
	if (sys_u64(dir, "size", &sectors) ||
	    sys_u64(dir, "queue/logical_block_size", &lbs) ||
	    lbs < 512 || lbs > 65536 || (lbs & (lbs - 1)))
		return why_set(why, why_len, -ENODEV,
			       "%s: no size or block size in sysfs", ns->blk);
	ns->lba_bytes = (uint32_t)lbs;
	ns->bytes = sectors << 9;
	if (!sys_u64(dir, "nsid", &v))
		ns->nsid = (uint32_t)v;
	if (!sys_read(dir, "nguid", buf, sizeof(buf)))
		parse_hex(buf, ns->nguid, sizeof(ns->nguid));
	if (!sys_read(dir, "eui", buf, sizeof(buf)))
		parse_hex(buf, ns->eui64, sizeof(ns->eui64));
	ns->max_xfer = 128U << 10;
	if (!sys_u64(dir, "queue/max_hw_sectors_kb", &kb) && kb &&
	    kb < (1U << 21))
		ns->max_xfer = (uint32_t)(kb << 10);
	/* The buffer is page aligned: one segment a page at worst. */
	if (!sys_u64(dir, "queue/max_segments", &segs) && segs &&
	    segs < (1U << 19) && segs * 4096 < ns->max_xfer)
		ns->max_xfer = (uint32_t)(segs * 4096);
	identify(ns);
	ns->max_xfer &= ~(ns->lba_bytes - 1);
	if (ns->max_xfer < ns->lba_bytes)
		ns->max_xfer = ns->lba_bytes;
	snprintf(ngdir, sizeof(ngdir), "/sys/class/nvme-generic/ng%s",
		 name + 4);
	if (!access(ngdir, F_OK))
		snprintf(ns->ng, sizeof(ns->ng), "/dev/ng%s", name + 4);
	return 1;
}

void dlc_nvme_id_string(const uint8_t nguid[16], const uint8_t eui64[8],
			char *buf, size_t len)
{
	const uint8_t *id = nguid;
	size_t n = 16, i, at;

	if (all_zero(nguid, 16)) {
		id = eui64;
		n = 8;
	}
	if (!len)
		return;
	buf[0] = '\0';
	if (all_zero(id, n))
		return;
	at = (size_t)snprintf(buf, len, "%s", DLC_NVME_PREFIX);
	for (i = 0; i < n && at + 2 < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%02x", id[i]);
}

/* The statuses a Read can end with (NVMe Base 2.0, 4.1.3.2 and 4.1.3.4). */
static const struct {
	uint16_t code;		/* SCT << 8 | SC */
	const char *str;
} statuses[] = {
	{ 0x002, "NVMe read: status 0x002, invalid field in command" },
	{ 0x004, "NVMe read: status 0x004, data transfer error" },
	{ 0x006, "NVMe read: status 0x006, internal error" },
	{ 0x007, "NVMe read: status 0x007, command abort requested" },
	{ 0x008, "NVMe read: status 0x008, command aborted (SQ deleted)" },
	{ 0x00b, "NVMe read: status 0x00b, invalid namespace or format" },
	{ 0x080, "NVMe read: status 0x080, LBA out of range" },
	{ 0x081, "NVMe read: status 0x081, capacity exceeded" },
	{ 0x082, "NVMe read: status 0x082, namespace not ready" },
	{ 0x281, "NVMe read: status 0x281, unrecovered read error (media)" },
	{ 0x282, "NVMe read: status 0x282, end-to-end guard check error (media)" },
	{ 0x285, "NVMe read: status 0x285, compare failure (media)" },
	{ 0x286, "NVMe read: status 0x286, access denied (media)" },
	{ 0x287, "NVMe read: status 0x287, deallocated or unwritten logical block (media)" },
	{ 0x300, "NVMe read: status 0x300, internal path error" },
	{ 0x371, "NVMe read: status 0x371, controller pathing error" },
};

const char *dlc_nvme_status_str(uint32_t status)
{
	uint32_t code = status & 0x7ff;
	size_t i;

	for (i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++)
		if (statuses[i].code == code)
			return statuses[i].str;
	switch (code >> 8) {
	case 0:
		return "NVMe read: a generic command status (not one dlcache names)";
	case 1:
		return "NVMe read: a command specific status";
	case 2:
		return "NVMe read: a media or data integrity error";
	case 3:
		return "NVMe read: a path related status";
	default:
		return "NVMe read: a vendor specific status";
	}
}
