// SPDX-License-Identifier: MIT
/*
 * Index: ImageFolder walk order and labels, sizes, the key, the file
 * format round trip, and rejection of malformed files and bad roots.
 * Exit 0 pass, 1 fail.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dlcache.h"

#include "helpers/testutil.h"

static char tmpdir[64];

static const char *at(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* tmpdir/<fmt>; a few rotating buffers so two can be live at once. */
static const char *at(const char *fmt, ...)
{
	static char bufs[4][4096];
	static int next;
	char *b = bufs[next++ & 3];
	int n;
	va_list ap;

	n = snprintf(b, 4096, "%s/", tmpdir);
	va_start(ap, fmt);
	vsnprintf(b + n, 4096 - (size_t)n, fmt, ap);
	va_end(ap);
	return b;
}

static void mkdirs(const char *path)
{
	char buf[4096];
	char *p;

	snprintf(buf, sizeof(buf), "%s", path);
	for (p = buf + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			mkdir(buf, 0755);
			*p = '/';
		}
	}
	mkdir(buf, 0755);
}

/* Create @path (and its directories) holding @size bytes. */
static void put_file(const char *path, size_t size)
{
	char dir[4096], *slash;
	FILE *f;
	size_t i;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	*slash = '\0';
	mkdirs(dir);
	f = fopen(path, "w");
	if (!f) {
		printf("FAIL: create %s: %s\n", path, strerror(errno));
		t_failures++;
		return;
	}
	for (i = 0; i < size; i++)
		putc('x', f);
	fclose(f);
}

static char *slurp(const char *path, size_t *len)
{
	char *buf = NULL;
	size_t cap = 0, n = 0, r;
	FILE *f = fopen(path, "r");

	if (!f)
		return NULL;
	do {
		if (n + 4096 > cap) {
			char *nb = realloc(buf, cap + 8192);

			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
			cap += 8192;
		}
		r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
	} while (r);
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
}

static void spit(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return;
	fwrite(data, 1, len, f);
	fclose(f);
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

static void rm_rf(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* CRC-32C by its definition, bit by bit: independent of the library's. */
static uint32_t ref_crc32c(const uint8_t *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;
	int b;

	while (n--) {
		c ^= *p++;
		for (b = 0; b < 8; b++)
			c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
	}
	return ~c;
}

/* The crc of a file of @size 'x' bytes, as put_file() writes. */
static uint32_t crc_of_x(size_t size)
{
	uint8_t *b = malloc(size + 1);
	uint32_t c;

	memset(b, 'x', size);
	c = ref_crc32c(b, size);
	free(b);
	return c;
}

/* The index's crc of @id, or 0 with a failure when it has none. */
static uint32_t idx_crc(const struct dlc_index *idx, uint32_t id)
{
	uint32_t c = 0;
	int ret = dlc_index_crc32c(idx, id, &c);

	CHECK(ret == 0, "sample %u has no checksum (%d)", id, ret);
	return c;
}

static int build(const char *root, struct dlc_index **idx)
{
	*idx = NULL;
	return dlc_index_build(root, idx);
}

/* The expected walk of the main tree, in torchvision's order. */
static const struct {
	const char *path;
	int label;
	size_t size;
} expect[] = {
	{ ".hid/h.jpg", 0, 1 },
	{ "A/up.JPEG", 1, 2 },
	/* directory "a" first: "B.JPG" < "c.webp" < "x.jpg" bytewise */
	{ "a/B.JPG", 2, 3 },
	{ "a/c.webp", 2, 4 },
	{ "a/x.jpg", 2, 5 },
	/* then directories as whole strings: "a/sub" < "a/sub y" < "a/sub/d" */
	{ "a/sub/z.png", 2, 6 },
	{ "a/sub y/q.tif", 2, 7 },
	{ "a/sub/deeper/w.jpeg", 2, 8 },
	{ "b/100% sure.jpg", 3, 9 },
	{ "b/back\\slash.PnG", 3, 10 },
	{ "b/new\nline.bmp", 3, 11 },
	{ "b/tab\there.ppm", 3, 12 },
	/* "d.jpg" is a directory, walked like any other */
	{ "b/d.jpg/e.pgm", 3, 0 },
	/* class 4 "empty" has no sample */
};

static void make_tree(void)
{
	size_t i;

	mkdirs(at("data"));
	for (i = 0; i < sizeof(expect) / sizeof(expect[0]); i++)
		put_file(at("data/%s", expect[i].path), expect[i].size);
	put_file(at("data/a/readme.txt"), 13);
	put_file(at("data/a/jpg"), 13);
	put_file(at("data/a/x.jpg.bak"), 13);
	put_file(at("data/root.jpg"), 13);	/* not in a class */
	mkdirs(at("data/empty"));
	put_file(at("data/empty/notes.txt"), 3);
	mkdirs(at("data/empty/sub"));
}

static void check_tree(const struct dlc_index *idx)
{
	static const char *const classes[] = { ".hid", "A", "a", "b", "empty" };
	size_t n = sizeof(expect) / sizeof(expect[0]);
	uint64_t total = 0;
	uint32_t i;

	CHECK_EQ(dlc_index_count(idx), n);
	CHECK_EQ(dlc_index_num_classes(idx), 5);
	for (i = 0; i < 5 && i < dlc_index_num_classes(idx); i++) {
		const char *c = dlc_index_class_name(idx, i);

		if (!c || strcmp(c, classes[i]))
			printf("FAIL: class %u is '%s', want '%s'\n", i,
			       c ? c : "(null)", classes[i]), t_failures++;
	}
	for (i = 0; i < n && i < dlc_index_count(idx); i++) {
		const char *p = dlc_index_relpath(idx, i);

		if (!p || strcmp(p, expect[i].path))
			printf("FAIL: sample %u is '%s', want '%s'\n", i,
			       p ? p : "(null)", expect[i].path), t_failures++;
		CHECK_EQ(dlc_index_label(idx, i), expect[i].label);
		CHECK_EQ(dlc_index_size(idx, i), expect[i].size);
		/* The crc32c of the file's bytes, recorded at build. */
		CHECK_EQ(idx_crc(idx, i), crc_of_x(expect[i].size));
		total += expect[i].size;
	}
	CHECK_EQ(dlc_index_total_bytes(idx), total);
	/* Out of range is -ERANGE, never a size of 0. */
	for (i = 0; i < n && i < dlc_index_count(idx); i++) {
		uint64_t sz = 77;

		CHECK_EQ(dlc_index_sample_size(idx, i, &sz), 0);
		CHECK_EQ(sz, expect[i].size);
	}
	{
		uint64_t sz = 77;

		CHECK_EQ(dlc_index_sample_size(idx, (uint32_t)n, &sz), -ERANGE);
		CHECK_EQ(dlc_index_sample_size(idx, UINT32_MAX, &sz), -ERANGE);
		CHECK_EQ(sz, 77);
	}
	CHECK(dlc_index_class_name(idx, 5) == NULL);
	CHECK(dlc_index_relpath(idx, (uint32_t)n) == NULL);
	CHECK_EQ(dlc_index_label(idx, (uint32_t)n), -1);
	CHECK_EQ(dlc_index_size(idx, (uint32_t)n), 0);
	{
		uint32_t c = 7;

		CHECK_EQ(dlc_index_crc32c(idx, (uint32_t)n, &c), -EINVAL);
		CHECK_EQ(c, 7);
	}
	CHECK(dlc_index_root(idx) && dlc_index_root(idx)[0] == '/');
}

static void same_index(const struct dlc_index *a, const struct dlc_index *b)
{
	uint64_t ka[2], kb[2];
	uint32_t i;

	CHECK_EQ(dlc_index_count(a), dlc_index_count(b));
	CHECK_EQ(dlc_index_num_classes(a), dlc_index_num_classes(b));
	CHECK(!strcmp(dlc_index_root(a), dlc_index_root(b)));
	CHECK_EQ(dlc_index_total_bytes(a), dlc_index_total_bytes(b));
	for (i = 0; i < dlc_index_num_classes(a); i++)
		CHECK(!strcmp(dlc_index_class_name(a, i),
			      dlc_index_class_name(b, i) ?: ""));
	for (i = 0; i < dlc_index_count(a); i++) {
		CHECK(!strcmp(dlc_index_relpath(a, i),
			      dlc_index_relpath(b, i) ?: ""));
		CHECK_EQ(dlc_index_label(a, i), dlc_index_label(b, i));
		CHECK_EQ(dlc_index_size(a, i), dlc_index_size(b, i));
		{
			uint32_t ca = 1, cb = 2;
			int ra = dlc_index_crc32c(a, i, &ca);
			int rb = dlc_index_crc32c(b, i, &cb);

			CHECK_EQ(ra, rb);
			CHECK(ra || ca == cb, "sample %u crc %08x != %08x", i, ca, cb);
		}
	}
	dlc_index_key(a, ka);
	dlc_index_key(b, kb);
	CHECK(ka[0] == kb[0] && ka[1] == kb[1]);
}

static void test_build_and_roundtrip(void)
{
	struct dlc_index *idx, *again, *loaded;
	char *real;
	uint64_t k[2];

	make_tree();
	CHECK_EQ(build(at("data"), &idx), 0);
	if (!idx)
		return;
	check_tree(idx);
	real = realpath(at("data"), NULL);
	CHECK(real && !strcmp(real, dlc_index_root(idx)));
	free(real);

	dlc_index_key(idx, k);
	CHECK_EQ(k[1] & 0xffffffffu, dlc_index_count(idx));

	/* A relative root is stored absolute. */
	if (!chdir(tmpdir)) {
		CHECK_EQ(build("data/", &again), 0);
		if (again) {
			CHECK(!strcmp(dlc_index_root(again), dlc_index_root(idx)));
			same_index(idx, again);
			dlc_index_free(again);
		}
		CHECK(!chdir("/"));
	}

	CHECK_EQ(dlc_index_save(idx, at("idx")), 0);
	CHECK_EQ(dlc_index_load(at("idx"), &loaded), 0);
	if (loaded) {
		check_tree(loaded);
		same_index(idx, loaded);
		/* Saving what was loaded gives the same bytes. */
		CHECK_EQ(dlc_index_save(loaded, at("idx2")), 0);
		{
			size_t l1 = 0, l2 = 0;
			char *b1 = slurp(at("idx"), &l1);
			char *b2 = slurp(at("idx2"), &l2);

			char want[128];

			CHECK(b1 && b2 && l1 == l2 && !memcmp(b1, b2, l1));
			CHECK(b1 && !strncmp(b1, "dlcache-index 2\n", 16));
			/* Records stay one to a line despite the newline. */
			snprintf(want, sizeof(want), "\n3 11 %08x b/new%%0Aline.bmp\n",
				 crc_of_x(11));
			CHECK(b1 && strstr(b1, want), "no line '%s'", want + 1);
			snprintf(want, sizeof(want), "\n3 9 %08x b/100%%25 sure.jpg\n",
				 crc_of_x(9));
			CHECK(b1 && strstr(b1, want), "no line '%s'", want + 1);
			free(b1);
			free(b2);
		}
		dlc_index_free(loaded);
	}
	/* Saving over an existing file replaces it and leaves no temp. */
	CHECK_EQ(dlc_index_save(idx, at("idx")), 0);
	CHECK_EQ(dlc_index_save(idx, at("nodir/idx")), -ENOENT);
	dlc_index_free(idx);
	CHECK_EQ(dlc_index_load(at("missing"), &loaded), -ENOENT);
	CHECK(loaded == NULL);
}

static void key_of(const char *root, uint64_t k[2])
{
	struct dlc_index *idx;

	k[0] = k[1] = 0;
	if (build(root, &idx)) {
		printf("FAIL: build %s\n", root);
		t_failures++;
		return;
	}
	dlc_index_key(idx, k);
	dlc_index_free(idx);
}

#define KEY_DIFFERS(k, base) CHECK((k)[0] != (base)[0] || (k)[1] != (base)[1])

static void test_key(void)
{
	uint64_t base[2], k[2];

	put_file(at("k/cat/1.jpg"), 10);
	put_file(at("k/cat/2.jpg"), 20);
	put_file(at("k/dog/3.jpg"), 30);
	key_of(at("k"), base);
	key_of(at("k"), k);
	CHECK(k[0] == base[0] && k[1] == base[1]);
	CHECK_EQ(base[1] & 0xffffffffu, 3);

	/* The same files elsewhere: same key. */
	put_file(at("k2/cat/1.jpg"), 10);
	put_file(at("k2/cat/2.jpg"), 20);
	put_file(at("k2/dog/3.jpg"), 30);
	key_of(at("k2"), k);
	CHECK(k[0] == base[0] && k[1] == base[1]);

	/* Size. */
	put_file(at("k/cat/2.jpg"), 21);
	key_of(at("k"), k);
	KEY_DIFFERS(k, base);
	put_file(at("k/cat/2.jpg"), 20);
	key_of(at("k"), k);
	CHECK(k[0] == base[0] && k[1] == base[1]);

	/* Name. */
	CHECK(!rename(at("k/cat/2.jpg"), at("k/cat/4.jpg")));
	key_of(at("k"), k);
	KEY_DIFFERS(k, base);
	CHECK(!rename(at("k/cat/4.jpg"), at("k/cat/2.jpg")));

	/* Labels only: an empty class in front renumbers, paths stay. */
	mkdirs(at("k/0none"));
	key_of(at("k"), k);
	KEY_DIFFERS(k, base);
	CHECK(!rmdir(at("k/0none")));

	/* A class name only: an empty class at the end. */
	mkdirs(at("k/zzz"));
	key_of(at("k"), k);
	KEY_DIFFERS(k, base);
	CHECK(!rmdir(at("k/zzz")));

	/* One more sample. */
	put_file(at("k/dog/5.jpg"), 0);
	key_of(at("k"), k);
	KEY_DIFFERS(k, base);
	CHECK_EQ(k[1] & 0xffffffffu, 4);
}

/* Replace the first @old in @s (length *@len) with @new, in place. */
static char *edit(const char *s, size_t len, const char *old, const char *new,
		  size_t *out_len)
{
	const char *p = strstr(s, old);
	size_t ol = strlen(old), nl = strlen(new);
	char *r;

	if (!p) {
		printf("FAIL: edit: '%s' not found\n", old);
		t_failures++;
		return NULL;
	}
	r = malloc(len - ol + nl + 1);
	if (!r)
		return NULL;
	memcpy(r, s, (size_t)(p - s));
	memcpy(r + (p - s), new, nl);
	memcpy(r + (p - s) + nl, p + ol, len - (size_t)(p - s) - ol + 1);
	*out_len = len - ol + nl;
	return r;
}

static void expect_bad(const char *what, const char *data, size_t len)
{
	struct dlc_index *idx = (struct dlc_index *)1;
	int ret;

	if (!data)
		return;
	spit(at("bad"), data, len);
	ret = dlc_index_load(at("bad"), &idx);
	if (ret != -EBADMSG) {
		printf("FAIL: malformed index (%s) loads with %d\n", what, ret);
		t_failures++;
	}
	if (idx) {
		printf("FAIL: malformed index (%s) leaves *out set\n", what);
		t_failures++;
		if (!ret)
			dlc_index_free(idx);
	}
}

static void expect_bad_edit(const char *what, const char *good, size_t len,
			    const char *old, const char *new)
{
	size_t n = 0;
	char *d = edit(good, len, old, new, &n);

	expect_bad(what, d, n);
	free(d);
}

/*
 * Format 1 (an index file of an older libdlcache) still loads: the same
 * samples and key, every checksum absent, and it saves as format 1 again.
 * Format 2 specifics: the crc field's spelling, and "-" for none.
 */
static void test_formats(const char *good2, size_t len2, const char *good1,
			 size_t len1)
{
	struct dlc_index *i1 = NULL, *i2 = NULL;
	char line[128], bad[128];
	uint32_t c, id;
	size_t n = 0;
	char *d;

	spit(at("f2.idx"), good2, len2);
	spit(at("f1.idx"), good1, len1);
	CHECK_EQ(dlc_index_load(at("f2.idx"), &i2), 0);
	CHECK_EQ(dlc_index_load(at("f1.idx"), &i1), 0);
	if (!i1 || !i2)
		goto out;
	CHECK_EQ(dlc_index_count(i1), 3);
	for (id = 0; id < 3; id++) {
		c = 0;
		CHECK_EQ(dlc_index_crc32c(i1, id, &c), -ENODATA);
		CHECK_EQ(dlc_index_size(i1, id), dlc_index_size(i2, id));
		CHECK(!strcmp(dlc_index_relpath(i1, id), dlc_index_relpath(i2, id)));
		CHECK_EQ(idx_crc(i2, id), crc_of_x(5 + id));
	}
	{
		uint64_t k1[2], k2[2];

		dlc_index_key(i1, k1);
		dlc_index_key(i2, k2);
		CHECK(k1[0] == k2[0] && k1[1] == k2[1],
		      "format 1 and 2 give different keys");
	}
	CHECK_EQ(dlc_index_save(i1, at("f1b.idx")), 0);
	{
		size_t l = 0;
		char *b = slurp(at("f1b.idx"), &l);

		CHECK(b && l == len1 && !memcmp(b, good1, len1),
		      "format 1 does not save as itself");
		free(b);
	}

	/* Sample 1 is cat/c.jpg, 6 bytes. */
	snprintf(line, sizeof(line), "\n0 6 %08x cat/c.jpg\n", crc_of_x(6));
	CHECK(strstr(good2, line) != NULL, "no line '%s'", line + 1);

	/* "-": no checksum for that sample, the others kept. */
	d = edit(good2, len2, line, "\n0 6 - cat/c.jpg\n", &n);
	if (d) {
		struct dlc_index *i3 = NULL;

		spit(at("f3.idx"), d, n);
		CHECK_EQ(dlc_index_load(at("f3.idx"), &i3), 0);
		if (i3) {
			CHECK_EQ(dlc_index_crc32c(i3, 1, &c), -ENODATA);
			CHECK_EQ(idx_crc(i3, 0), crc_of_x(5));
			CHECK_EQ(idx_crc(i3, 2), crc_of_x(7));
			CHECK_EQ(dlc_index_save(i3, at("f3b.idx")), 0);
			{
				size_t l = 0;
				char *b = slurp(at("f3b.idx"), &l);

				CHECK(b && l == n && !memcmp(b, d, n));
				free(b);
			}
			dlc_index_free(i3);
		}
		free(d);
	}
	/* Spellings other than 8 lowercase hex digits or "-". */
	snprintf(bad, sizeof(bad), "\n0 6 %08X cat/c.jpg\n", crc_of_x(6));
	if (strcmp(bad, line))
		expect_bad_edit("crc upper case", good2, len2, line, bad);
	snprintf(bad, sizeof(bad), "\n0 6 %07x cat/c.jpg\n", crc_of_x(6) >> 4);
	expect_bad_edit("crc 7 digits", good2, len2, line, bad);
	snprintf(bad, sizeof(bad), "\n0 6 %08x0 cat/c.jpg\n", crc_of_x(6));
	expect_bad_edit("crc 9 digits", good2, len2, line, bad);
	snprintf(bad, sizeof(bad), "\n0 6 0x%06x cat/c.jpg\n", crc_of_x(6) & 0xffffff);
	expect_bad_edit("crc 0x", good2, len2, line, bad);
	expect_bad_edit("crc missing", good2, len2, line, "\n0 6 cat/c.jpg\n");
	expect_bad_edit("crc --", good2, len2, line, "\n0 6 -- cat/c.jpg\n");
	snprintf(bad, sizeof(bad), "\n0 6 %08x  cat/c.jpg\n", crc_of_x(6));
	expect_bad_edit("crc two spaces", good2, len2, line, bad);
	/* Format 2 lines under the format 1 magic, and the reverse. */
	expect_bad_edit("v2 lines, v1 magic", good2, len2, "dlcache-index 2",
			"dlcache-index 1");
	expect_bad_edit("v1 lines, v2 magic", good1, len1, "dlcache-index 1",
			"dlcache-index 2");
	expect_bad_edit("version 3", good2, len2, "dlcache-index 2",
			"dlcache-index 3");
out:
	dlc_index_free(i1);
	dlc_index_free(i2);
}

static void test_malformed(void)
{
	struct dlc_index *idx;
	char *good, *good2, *line;
	size_t len = 0, len2 = 0, cut;
	char keyline[64];

	put_file(at("m/cat/a b.jpg"), 5);
	put_file(at("m/cat/c.jpg"), 6);
	put_file(at("m/dog/d.jpg"), 7);
	if (build(at("m"), &idx))
		return;
	CHECK_EQ(dlc_index_save(idx, at("m.idx")), 0);
	dlc_index_free(idx);
	good2 = slurp(at("m.idx"), &len2);
	if (!good2)
		return;
	CHECK_EQ(dlc_index_load(at("m.idx"), &idx), 0);
	dlc_index_free(idx);
	/* The edits below are on format 1, whose lines are simpler. */
	good = t_index_format1(good2, &len);
	if (!good) {
		free(good2);
		return;
	}
	test_formats(good2, len2, good, len);

	/* Truncations: everywhere but the full length must fail. */
	for (cut = 0; cut < len; cut++)
		expect_bad("truncated", good, cut);
	for (cut = 0; cut < len2; cut++)
		expect_bad("truncated format 2", good2, cut);

	expect_bad_edit("version", good, len, "dlcache-index 1", "dlcache-index 0");
	expect_bad_edit("magic", good, len, "dlcache-index", "dlcache-indeks");
	expect_bad_edit("samples+1", good, len, "samples 3", "samples 4");
	expect_bad_edit("samples-1", good, len, "samples 3", "samples 2");
	expect_bad_edit("samples 0", good, len, "samples 3", "samples 0");
	expect_bad_edit("samples 03", good, len, "samples 3", "samples 03");
	expect_bad_edit("samples huge", good, len, "samples 3",
			"samples 99999999999999999999999");
	expect_bad_edit("classes+1", good, len, "classes 2", "classes 3");
	expect_bad_edit("classes-1", good, len, "classes 2", "classes 1");
	expect_bad_edit("label = C", good, len, "\n1 7 dog", "\n2 7 dog");
	expect_bad_edit("label negative", good, len, "\n1 7 dog", "\n-1 7 dog");
	expect_bad_edit("label changed", good, len, "\n0 6 cat", "\n1 6 cat");
	expect_bad_edit("size changed", good, len, "\n0 6 cat", "\n0 8 cat");
	expect_bad_edit("size junk", good, len, "\n0 6 cat", "\n0 6x cat");
	expect_bad_edit("size missing", good, len, "\n0 6 cat", "\n0 cat");
	expect_bad_edit("two spaces", good, len, "\n0 6 cat", "\n0  6 cat");
	expect_bad_edit("name changed", good, len, "cat/c.jpg", "cat/e.jpg");
	expect_bad_edit("path escapes", good, len, "cat/c.jpg", "cat/../c.jpg");
	expect_bad_edit("absolute path", good, len, "0 6 cat/c.jpg", "0 6 /cat/c.jpg");
	expect_bad_edit("wrong class dir", good, len, "dog/d.jpg", "cat/d.jpg");
	expect_bad_edit("bad escape", good, len, "a b.jpg", "a%2 .jpg");
	expect_bad_edit("nul escape", good, len, "a b.jpg", "a%00.jpg");
	expect_bad_edit("class renamed", good, len, "class dog", "class dof");
	expect_bad_edit("class order", good, len, "class cat\nclass dog",
			"class dog\nclass cat");
	expect_bad_edit("CRLF", good, len, "classes 2\n", "classes 2\r\n");
	expect_bad_edit("relative root", good, len, "root /", "root ");

	/* A key digit flipped. */
	line = strstr(good, "key ");
	if (line) {
		snprintf(keyline, sizeof(keyline), "%.36s", line);
		{
			char flipped[64];

			snprintf(flipped, sizeof(flipped), "%s", keyline);
			flipped[10] = flipped[10] == '0' ? '1' : '0';
			expect_bad_edit("key mismatch", good, len, keyline, flipped);
			/* The count half of the key too. */
			snprintf(flipped, sizeof(flipped), "%s", keyline);
			flipped[35] = flipped[35] == '3' ? '4' : '3';
			expect_bad_edit("key count", good, len, keyline, flipped);
			snprintf(flipped, sizeof(flipped), "%.35s", keyline);
			expect_bad_edit("key short", good, len, keyline,
					flipped);
		}
	}

	/* Trailing junk, with and without a newline; a blank line. */
	{
		char *d = malloc(len + 32);

		if (d) {
			memcpy(d, good, len);
			memcpy(d + len, "junk\n", 5);
			expect_bad("trailing line", d, len + 5);
			memcpy(d + len, "x", 1);
			expect_bad("trailing bytes", d, len + 1);
			memcpy(d + len, "\n", 1);
			expect_bad("trailing blank line", d, len + 1);
			memcpy(d, good, len);
			d[len - 3] = '\0';
			expect_bad("nul byte", d, len);
			free(d);
		}
	}
	/* A duplicated sample line (with a count to match). */
	{
		size_t n1 = 0, n2 = 0;
		char *d1 = edit(good, len, "samples 3", "samples 4", &n1);
		char *d2 = d1 ? edit(d1, n1, "0 6 cat/c.jpg\n",
				     "0 6 cat/c.jpg\n0 6 cat/c.jpg\n", &n2) : NULL;

		expect_bad("duplicate", d2, n2);
		free(d1);
		free(d2);
	}
	expect_bad("empty file", "", 0);
	free(good);
	free(good2);
}

static void test_errors(void)
{
	struct dlc_index *idx;
	int ret;

	CHECK_EQ(build(at("nope"), &idx), -ENOENT);
	CHECK(idx == NULL);
	put_file(at("plain"), 3);
	CHECK_EQ(build(at("plain"), &idx), -ENOTDIR);
	CHECK_EQ(build(at("plain/x"), &idx), -ENOTDIR);

	mkdirs(at("void"));
	CHECK_EQ(build(at("void"), &idx), -ENODATA);
	mkdirs(at("void/c1"));
	mkdirs(at("void/c2/sub"));
	put_file(at("void/c2/sub/readme.md"), 4);
	put_file(at("void/top.jpg"), 4);
	CHECK_EQ(build(at("void"), &idx), -ENODATA);
	CHECK(idx == NULL);

	/* A symlink cycle inside a class. */
	put_file(at("loop/c/a.jpg"), 1);
	CHECK(!symlink("..", at("loop/c/up")));
	CHECK_EQ(build(at("loop"), &idx), -ELOOP);

	/* Symlinked class and file are followed; dangling ones skipped. */
	put_file(at("links/real/a.jpg"), 2);
	CHECK(!symlink("real", at("links/sym")));
	CHECK(!symlink("a.jpg", at("links/real/b.jpg")));
	CHECK(!symlink("missing.jpg", at("links/real/c.jpg")));
	CHECK(!symlink("missing", at("links/dangling")));
	ret = build(at("links"), &idx);
	CHECK_EQ(ret, 0);
	if (!ret) {
		CHECK_EQ(dlc_index_num_classes(idx), 2);
		CHECK_EQ(dlc_index_count(idx), 4);
		CHECK(!strcmp(dlc_index_relpath(idx, 3) ?: "", "sym/b.jpg"));
		CHECK_EQ(dlc_index_size(idx, 3), 2);
		dlc_index_free(idx);
	}

	CHECK_EQ(dlc_index_save(NULL, at("x")), -EINVAL);
	CHECK_EQ(dlc_index_load(tmpdir, &idx), -EISDIR);
}

/*
 * Permission errors mean nothing to root: these run in a child that has
 * dropped to uid 65534, under a directory it owns.
 */
static void permission_cases(void *arg)
{
	struct dlc_index *idx;

	(void)arg;
	put_file(at("nobody/perm/ok/a.jpg"), 1);
	put_file(at("nobody/perm/locked/sub/b.jpg"), 1);
	CHECK(!chmod(at("nobody/perm/locked/sub"), 0));
	CHECK_EQ(build(at("nobody/perm"), &idx), -EACCES);
	CHECK(!chmod(at("nobody/perm/locked/sub"), 0755));
	CHECK(!chmod(at("nobody/perm"), 0));
	CHECK_EQ(build(at("nobody/perm"), &idx), -EACCES);
	CHECK(!chmod(at("nobody/perm"), 0755));
	/* An unreadable file is listed, without a checksum. */
	put_file(at("nobody/unread/c/a.jpg"), 3);
	put_file(at("nobody/unread/c/b.jpg"), 4);
	CHECK(!chmod(at("nobody/unread/c/b.jpg"), 0));
	CHECK_EQ(build(at("nobody/unread"), &idx), 0);
	if (idx) {
		uint32_t c;

		CHECK_EQ(dlc_index_count(idx), 2);
		CHECK_EQ(dlc_index_crc32c(idx, 1, &c), -ENODATA);
		CHECK_EQ(idx_crc(idx, 0), crc_of_x(3));
		dlc_index_free(idx);
	}
}

static void test_permissions(void)
{
	mkdirs(at("nobody"));
	CHECK(!chmod(tmpdir, 0711) &&
	      (geteuid() || !chown(at("nobody"), 65534, 65534)),
	      "making %s reachable by uid 65534: %s", at("nobody"),
	      strerror(errno));
	t_run_unprivileged(permission_cases, NULL);
}

/*
 * torchvision's own make_dataset() on the main tree, when /usr/bin/python3
 * has it. Names go through as hex so newlines and '%' survive. Versions
 * before allow_empty reject an empty class, so "empty" gets a file first.
 */
static const char tv_script[] =
	"import os, sys\n"
	"try:\n"
	"    from torchvision.datasets.folder import (find_classes,\n"
	"        make_dataset, IMG_EXTENSIONS)\n"
	"except Exception:\n"
	"    sys.exit(77)\n"
	"root = sys.argv[1]\n"
	"classes, c2i = find_classes(root)\n"
	"for c in classes:\n"
	"    print('class', os.fsencode(c).hex())\n"
	"for path, label in make_dataset(root, c2i, IMG_EXTENSIONS):\n"
	"    rel = os.path.relpath(path, root)\n"
	"    print(label, os.path.getsize(path), os.fsencode(rel).hex())\n";

static void hex_of(const char *s, char *out, size_t cap)
{
	size_t n = 0;

	for (; *s && n + 3 < cap; s++, n += 2)
		snprintf(out + n, 3, "%02x", (unsigned char)*s);
	out[n] = '\0';
}

static void test_torchvision(void)
{
	char line[8192], hex[8192], cmd[512];
	struct dlc_index *idx;
	uint32_t classes = 0, samples = 0;
	int status, mismatch = 0;
	FILE *f;

	if (access("/usr/bin/python3", X_OK)) {
		t_skip_required("test_torchvision", "no /usr/bin/python3 (make deps)");
		return;
	}
	put_file(at("data/empty/sub/late.jpg"), 14);
	spit(at("tv.py"), tv_script, sizeof(tv_script) - 1);
	if (build(at("data"), &idx))
		return;
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s %s 2>/dev/null",
		 at("tv.py"), at("data"));
	f = popen(cmd, "r");
	CHECK(f, "popen %s: %s", cmd, strerror(errno));
	if (!f) {
		dlc_index_free(idx);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char name[8192];
		unsigned long long size;
		unsigned int label;

		if (sscanf(line, "class %8191s", name) == 1) {
			const char *c = dlc_index_class_name(idx, classes++);

			hex_of(c ? c : "", hex, sizeof(hex));
			mismatch |= strcmp(hex, name) != 0;
		} else if (sscanf(line, "%u %llu %8191s", &label, &size,
				  name) == 3) {
			const char *p = dlc_index_relpath(idx, samples);

			hex_of(p ? p : "", hex, sizeof(hex));
			if (strcmp(hex, name) ||
			    dlc_index_label(idx, samples) != (int32_t)label ||
			    dlc_index_size(idx, samples) != size) {
				printf("FAIL: torchvision sample %u is %s, ours '%s'\n",
				       samples, name, p ? p : "(null)");
				t_failures++;
			}
			samples++;
		}
	}
	status = pclose(f);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
		t_skip_required("test_torchvision", "/usr/bin/python3 has no torchvision (make deps)");
	} else if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		printf("FAIL: torchvision comparison script failed\n");
		t_failures++;
	} else {
		if (mismatch || classes != dlc_index_num_classes(idx)) {
			printf("FAIL: classes differ from torchvision's\n");
			t_failures++;
		}
		CHECK_EQ(samples, dlc_index_count(idx));
		printf("note: %u samples compared with torchvision\n", samples);
	}
	dlc_index_free(idx);
}

/*
 * Loading is bounded: /dev/zero (a device: it would never end) and a
 * FIFO are refused at once with -EINVAL, a sparse file one byte over
 * DLC_INDEX_MAX_FILE_BYTES with -EFBIG, without reading it.
 */
static void test_load_bounds(void)
{
	struct dlc_index *idx = (struct dlc_index *)1;
	const char *fifo = at("fifo.idx"), *huge = at("huge.idx");
	int fd;

	CHECK_EQ(dlc_index_load("/dev/zero", &idx), -EINVAL);
	CHECK(idx == NULL);
	CHECK_EQ(dlc_index_load(tmpdir, &idx), -EISDIR);
	if (mkfifo(fifo, 0600) == 0) {
		/* O_NONBLOCK: no writer, yet no hang. */
		CHECK_EQ(dlc_index_load(fifo, &idx), -EINVAL);
		unlink(fifo);
	}
	fd = open(huge, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	if (ftruncate(fd, (off_t)DLC_INDEX_MAX_FILE_BYTES + 1)) {
		t_skip("test_load_bounds_huge", "ftruncate to %llu: %s",
		       (unsigned long long)DLC_INDEX_MAX_FILE_BYTES + 1,
		       strerror(errno));
	} else {
		CHECK_EQ(dlc_index_load(huge, &idx), -EFBIG);
		CHECK(idx == NULL);
	}
	close(fd);
	unlink(huge);
}

/* Peak RSS of this process, in KiB. */
static long maxrss_kib(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) ? 0 : ru.ru_maxrss;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/*
 * Loading is not sized by the file's size: a 4 GiB sparse file (a hole,
 * read as NULs) fails with -EBADMSG in well under a second and a few
 * MiB of peak RSS, bare or behind a valid header; a header of one class
 * and one sample before a MiB of text is -EFBIG as soon as the header
 * is read (such an index is at most a few tens of KiB).
 */
static void test_load_sparse(void)
{
	static const char hdr[] = "dlcache-index 2\nroot /data\nclasses 1\n"
		"samples 1\nkey 0123456789abcdef0123456789abcdef\n";
	const char *huge = at("sparse.idx");
	struct dlc_index *idx = NULL;
	long rss0, rss1;
	double t0, secs;
	char *fill;
	int fd, pass;

	for (pass = 0; pass < 2; pass++) {
		fd = open(huge, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		CHECK(fd >= 0);
		if (fd < 0)
			return;
		if (ftruncate(fd, (off_t)(4ULL << 30))) {
			t_skip("test_load_sparse", "ftruncate to 4 GiB: %s",
			       strerror(errno));
			close(fd);
			unlink(huge);
			return;
		}
		if (pass)
			CHECK(pwrite(fd, hdr, sizeof(hdr) - 1, 0) ==
			      (ssize_t)sizeof(hdr) - 1);
		close(fd);
		rss0 = maxrss_kib();
		t0 = now_s();
		CHECK_EQ(dlc_index_load(huge, &idx), -EBADMSG);
		secs = now_s() - t0;
		rss1 = maxrss_kib();
		CHECK(idx == NULL);
		CHECK(secs < 1.0, "pass %d: failing took %.2f s", pass, secs);
		CHECK(rss1 - rss0 < 64 * 1024, "pass %d: peak RSS grew by %ld KiB",
		      pass, rss1 - rss0);
	}

	/* Real bytes, more than the header's counts allow. */
	fill = malloc(1 << 20);
	CHECK(fill != NULL);
	if (!fill)
		return;
	memset(fill, 'x', 1 << 20);
	fd = open(huge, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK(pwrite(fd, hdr, sizeof(hdr) - 1, 0) == (ssize_t)sizeof(hdr) - 1);
		CHECK(pwrite(fd, fill, 1 << 20, sizeof(hdr) - 1) == 1 << 20);
		close(fd);
		CHECK_EQ(dlc_index_load(huge, &idx), -EFBIG);
		CHECK(idx == NULL);
	}
	free(fill);
	unlink(huge);
}

/*
 * A data set moved elsewhere: its index loads with the new root given,
 * keeps its key, and every sample reads back under the new root; the
 * stored root is kept when none is given. Bad roots fail precisely.
 */
static void test_load_at(void)
{
	struct dlc_index *a = NULL, *b = NULL;
	const char *old = at("moving"), *moved = at("moved"), *file;
	char ifile[4096], path[8192], longroot[4096];
	uint64_t ka[2], kb[2];
	uint32_t i, crc;
	size_t len, n;
	uint8_t *data;

	snprintf(ifile, sizeof(ifile), "%s", at("moving.idx"));
	CHECK_EQ(t_make_dataset(old, 2, 3), 0);
	CHECK_EQ(dlc_index_build(old, &a), 0);
	if (!a)
		return;
	CHECK_EQ(dlc_index_save(a, ifile), 0);
	dlc_index_key(a, ka);
	CHECK_EQ(rename(old, moved), 0);

	CHECK_EQ(dlc_index_load_at(ifile, moved, &b), 0);
	if (b) {
		CHECK(!strcmp(dlc_index_root(b), moved), "root %s", dlc_index_root(b));
		dlc_index_key(b, kb);
		CHECK(ka[0] == kb[0] && ka[1] == kb[1], "the key changed");
		CHECK_EQ(dlc_index_count(b), dlc_index_count(a));
		for (i = 0; i < dlc_index_count(b); i++) {
			snprintf(path, sizeof(path), "%s/%s", dlc_index_root(b),
				 dlc_index_relpath(b, i));
			data = t_read_file(path, &len);
			CHECK(data, "sample %u: %s unreadable", i, path);
			if (!data)
				continue;
			CHECK_EQ(len, dlc_index_size(b, i));
			CHECK_EQ(dlc_index_crc32c(b, i, &crc), 0);
			free(data);
		}
		dlc_index_free(b);
		b = NULL;
	}
	/* No override: the stored root, which no longer exists. */
	CHECK_EQ(dlc_index_load_at(ifile, NULL, &b), 0);
	if (b) {
		CHECK(!strcmp(dlc_index_root(b), dlc_index_root(a)));
		dlc_index_free(b);
		b = NULL;
	}
	CHECK_EQ(dlc_index_load_at(ifile, old, &b), -ENOENT);
	CHECK(b == NULL);
	file = at("moving.idx");
	CHECK_EQ(dlc_index_load_at(ifile, file, &b), -ENOTDIR);
	/* A root so deep that root/relpath reaches PATH_MAX. */
	n = (size_t)snprintf(longroot, sizeof(longroot), "%s", moved);
	len = 4096 - 1 - strlen(dlc_index_relpath(a, 0));	/* root length */
	while (n < len) {
		size_t c = len - n > 200 ? 200 : len - n;

		if (c < 2)	/* "/" and at least one byte */
			c = 2;
		longroot[n] = '/';
		memset(longroot + n + 1, 'd', c - 1);
		n += c;
		longroot[n] = '\0';
		if (mkdir(longroot, 0700) && errno != EEXIST)
			break;
	}
	CHECK(n >= len, "made %zu of %zu", n, len);
	CHECK_EQ(dlc_index_load_at(ifile, longroot, &b), -ENAMETOOLONG);
	dlc_index_free(a);
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_index.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		printf("FAIL: mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	/* First: its peak RSS check wants a process that is still small. */
	T_RUN(test_load_sparse);
	T_RUN(test_build_and_roundtrip);
	T_RUN(test_key);
	T_RUN(test_malformed);
	T_RUN(test_errors);
	T_RUN(test_permissions);
	T_RUN(test_torchvision);
	T_RUN(test_load_bounds);
	T_RUN(test_load_at);
	rm_rf(tmpdir);
	return t_done("test_index");
}
