// SPDX-License-Identifier: MIT
/*
 * nvme.c without an NVMe device (tests/qemu/nvme has one): what is not a
 * namespace says so (0: a file, /dev/null, a directory, a loop device),
 * a bad or unknown "nvme:" identifier is a clean error with words, the
 * identifier string of a namespace, and the words of NVMe statuses (the
 * codes of the NVMe Base specification, 2.0, figures 102 and 106).
 * Exit 0 pass, 1 fail.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nvme.h"

#include "helpers/testutil.h"

static void test_not_a_namespace(const char *dir)
{
	struct dlc_nvme_ns ns;
	char path[600], why[256];

	snprintf(path, sizeof(path), "%s/file", dir);
	CHECK_EQ(t_write_file(path, "x", 1), 0);
	CHECK_EQ(dlc_nvme_probe(path, &ns, why, sizeof(why)), 0);
	CHECK_EQ(dlc_nvme_probe(dir, &ns, why, sizeof(why)), 0);
	CHECK_EQ(dlc_nvme_probe("/dev/null", &ns, why, sizeof(why)), 0);
	/* A path that does not exist: the caller's open says why. */
	snprintf(path, sizeof(path), "%s/none", dir);
	CHECK_EQ(dlc_nvme_probe(path, &ns, why, sizeof(why)), 0);
	/* A block device that is not NVMe (loop0 exists on most machines). */
	if (access("/dev/loop0", F_OK) == 0)
		CHECK_EQ(dlc_nvme_probe("/dev/loop0", &ns, why, sizeof(why)), 0);
}

static void test_bad_ids(void)
{
	struct dlc_nvme_ns ns;
	char why[256];

	why[0] = '\0';
	CHECK_EQ(dlc_nvme_probe("nvme:zz", &ns, why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "not an NGUID"), "why: %s", why);
	CHECK_EQ(dlc_nvme_probe("nvme:", &ns, why, sizeof(why)), -EINVAL);
	CHECK_EQ(dlc_nvme_probe("nvme:0011223344556", &ns, why, sizeof(why)),
		 -EINVAL);
	/* Well formed, and (surely) no namespace here has them. */
	CHECK_EQ(dlc_nvme_probe("nvme:f0e1d2c3b4a59687", &ns, why, sizeof(why)),
		 -ENOENT);
	CHECK(strstr(why, "no NVMe namespace has EUI-64 f0e1d2c3b4a59687"),
	      "why: %s", why);
	CHECK_EQ(dlc_nvme_probe("nvme:f0e1d2c3-b4a5-9687-f0e1-d2c3b4a59687",
				&ns, why, sizeof(why)), -ENOENT);
	CHECK(strstr(why, "NGUID"), "why: %s", why);
}

static void test_id_string(void)
{
	struct dlc_nvme_ns ns;
	char buf[64];

	memset(&ns, 0, sizeof(ns));
	dlc_nvme_id_string(ns.nguid, ns.eui64, buf, sizeof(buf));
	CHECK(!strcmp(buf, ""), "no IDs: \"%s\"", buf);
	memcpy(ns.eui64, "\x00\x11\x33\x44\x55\x66\x77\xa1", 8);
	dlc_nvme_id_string(ns.nguid, ns.eui64, buf, sizeof(buf));
	CHECK(!strcmp(buf, "nvme:00113344556677a1"), "EUI-64: \"%s\"", buf);
	/* The NGUID, when there is one, names it. */
	ns.nguid[15] = 0x42;
	dlc_nvme_id_string(ns.nguid, ns.eui64, buf, sizeof(buf));
	CHECK(!strcmp(buf, "nvme:00000000000000000000000000000042"),
	      "NGUID: \"%s\"", buf);
}

static void test_status(void)
{
	static const struct {
		uint32_t status;
		const char *want;
	} v[] = {
		{ 0x281, "status 0x281, unrecovered read error (media)" },
		{ 0x4281, "status 0x281, unrecovered read error" },	/* DNR */
		{ 0x2281, "status 0x281" },				/* More */
		{ 0x080, "status 0x080, LBA out of range" },
		{ 0x004, "status 0x004, data transfer error" },
		{ 0x287, "deallocated or unwritten" },
		{ 0x0ff, "a generic command status" },
		{ 0x1ff, "command specific" },
		{ 0x2ff, "media or data integrity" },
		{ 0x3ff, "path related" },
		{ 0x7ff, "vendor specific" },
	};
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		const char *s = dlc_nvme_status_str(v[i].status);

		CHECK(s && strstr(s, v[i].want), "status %#x: \"%s\", want \"%s\"",
		      v[i].status, s ? s : "(null)", v[i].want);
	}
}

int main(void)
{
	char *dir = t_mkdtemp(NULL);

	if (!dir) {
		printf("cannot make a temp dir\n");
		return 1;
	}
	T_RUN(test_not_a_namespace, dir);
	T_RUN(test_bad_ids);
	T_RUN(test_id_string);
	T_RUN(test_status);
	t_rmtree(dir);
	free(dir);
	return t_done("test_nvme");
}
