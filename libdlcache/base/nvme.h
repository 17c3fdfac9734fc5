/* SPDX-License-Identifier: MIT */
/*
 * NVMe namespaces (nvme.c): which namespace a path names, its geometry
 * and limits, and whether the kernel gives it a generic character device
 * (/dev/ngXnY) for io_uring passthrough. A pack written onto a namespace
 * (Documentation/pack.md, "On an NVMe namespace") is read through it.
 *
 * Identify Controller and Identify Namespace go through libnvme. Where
 * the kernel refuses them to an unprivileged caller (6.1 asks
 * CAP_SYS_ADMIN for every admin command), the same facts come from sysfs,
 * which anyone may read; @identified says which.
 */
#ifndef DLC_NVME_H
#define DLC_NVME_H

#include <stddef.h>
#include <stdint.h>

/* The prefix of a namespace named by its NGUID or EUI-64: "nvme:<hex>". */
#define DLC_NVME_PREFIX		"nvme:"

struct dlc_nvme_ns {
	char name[64];		/* "nvme0n1": the namespace's block device */
	char blk[80];		/* "/dev/nvme0n1" */
	char ng[80];		/* "/dev/ng0n1", "" when the kernel has none */
	uint32_t nsid;
	uint32_t lba_bytes;	/* the LBA format's data size: 512..65536 */
	uint64_t bytes;		/* the namespace's size */
	/*
	 * Bytes one Read command may move: the controller's MDTS, the
	 * queue's max_hw_sectors_kb and max_segments pages, whichever is
	 * least; a multiple of lba_bytes.
	 */
	uint32_t max_xfer;
	uint32_t meta_bytes;	/* metadata per LBA (0: none; else no passthru) */
	uint8_t nguid[16];	/* zeros: none reported */
	uint8_t eui64[8];	/* zeros: none reported */
	int identified;		/* 1: by Identify (libnvme), 0: from sysfs */
};

/*
 * Whether @path names an NVMe namespace: a block device nvmeXnY (not a
 * partition), its generic character device ngXnY, or DLC_NVME_PREFIX and
 * the NGUID (32 hex digits, dashes allowed) or EUI-64 (16) of one.
 * Returns 1 with its block device's name ("nvme0n1") in @name of @len,
 * 0 when @path is something else (a regular file, another device), or
 * -errno: -ENOENT when no namespace has the identifier, -ENOTBLK for a
 * partition. @why (may be NULL) words it. Only sysfs, and Identify
 * Namespace for an identifier that sysfs does not show.
 */
int dlc_nvme_name(const char *path, char *name, size_t len, char *why,
		  size_t why_len);

/*
 * dlc_nvme_name(), then all of the namespace into @ns: sysfs, Identify
 * Controller and Identify Namespace. The same returns.
 */
int dlc_nvme_probe(const char *path, struct dlc_nvme_ns *ns, char *why,
		   size_t why_len);

/* An identifier as DLC_NVME_PREFIX + hex (the NGUID, else the EUI-64; "":
 * both zero). */
void dlc_nvme_id_string(const uint8_t nguid[16], const uint8_t eui64[8],
			char *buf, size_t len);

/*
 * Words of an NVMe completion status (the 15-bit status field without the
 * phase bit: SC in bits 0-7, SCT in 8-10, DNR in 14): a static string
 * that names the code, e.g. "NVMe read: status 0x281, unrecovered read
 * error (media)".
 */
const char *dlc_nvme_status_str(uint32_t status);

#endif /* DLC_NVME_H */
