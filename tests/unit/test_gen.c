// SPDX-License-Identifier: MIT
/*
 * dlcachectl gen, end to end: runs the built binary (path in $DLCACHECTL)
 * into a temporary directory and checks what benchmarks and the loader
 * rely on: the ImageFolder layout, every file a clean JPEG of plausible
 * size, the format mix, byte-identical output for a seed, the stamp that
 * makes a second run free, and the command-line contract.
 *
 * Exit 0 pass, 1 fail ("FAIL: ..." lines); without $DLCACHECTL one
 * "skip test_gen" line (a FAIL under CI=true).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jpeglib.h>

#include "helpers/testutil.h"

#define IMAGES	60
#define CLASSES	4

static int failures;
static const char *prog;
static char tmpdir[256];

static void failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void failf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("FAIL: ", stdout);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	va_end(ap);
	failures++;
}

/* Slurp a file; NULL when it cannot be read. */
static unsigned char *slurp(const char *path, size_t *len)
{
	unsigned char *buf = NULL;
	struct stat st;
	FILE *f = fopen(path, "rb");

	if (!f)
		return NULL;
	if (fstat(fileno(f), &st) == 0) {
		buf = malloc((size_t)st.st_size + 1);
		if (buf && fread(buf, 1, (size_t)st.st_size, f) !=
			   (size_t)st.st_size) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)st.st_size;
	}
	fclose(f);
	return buf;
}

/*
 * Run "$DLCACHECTL gen ARGS..." with stdout and stderr captured in files
 * under the temporary directory; returns the exit status, or -1.
 */
static int run(char **out, char **err, const char *const *args)
{
	char opath[300], epath[300];
	const char *argv[16];
	size_t n = 0, len;
	int status;
	pid_t pid;

	argv[n++] = prog;
	argv[n++] = "gen";
	while (*args && n < 15)
		argv[n++] = *args++;
	argv[n] = NULL;
	snprintf(opath, sizeof(opath), "%s/stdout", tmpdir);
	snprintf(epath, sizeof(epath), "%s/stderr", tmpdir);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int o = open(opath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(epath, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(126);
		execv(prog, (char *const *)argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return -1;
	if (out) {
		*out = (char *)slurp(opath, &len);
		if (*out)
			(*out)[len] = 0;
	}
	if (err) {
		*err = (char *)slurp(epath, &len);
		if (*err)
			(*err)[len] = 0;
	}
	return WEXITSTATUS(status);
}

/* libjpeg would exit() on an error; jump back instead. */
struct jfail {
	struct jpeg_error_mgr pub;
	jmp_buf env;
};

static void jfail_exit(j_common_ptr c)
{
	longjmp(((struct jfail *)c->err)->env, 1);
}

/* Kinds seen, for the format mix. */
struct mix {
	unsigned gray, s444, s420, progressive;
	unsigned long long bytes;
};

/* Full decode with libjpeg; also no warnings (libjpeg's "corrupt data"). */
static int check_jpeg(const char *path, struct mix *mix)
{
	struct jpeg_decompress_struct d;
	struct jfail jerr;
	/* Assigned after setjmp() and freed after a longjmp(). */
	unsigned char *volatile row = NULL;
	unsigned char *buf;
	size_t len = 0;
	volatile int rc = -1;

	buf = slurp(path, &len);
	if (!buf) {
		failf("%s: cannot read", path);
		return -1;
	}
	if (len < 2000 || len > 600000)
		failf("%s: %zu bytes, outside 2000..600000", path, len);
	if (len < 4 || buf[0] != 0xff || buf[1] != 0xd8 ||
	    buf[len - 2] != 0xff || buf[len - 1] != 0xd9) {
		failf("%s: no SOI/EOI markers", path);
		free(buf);
		return -1;
	}
	mix->bytes += len;
	d.err = jpeg_std_error(&jerr.pub);
	jerr.pub.error_exit = jfail_exit;
	if (setjmp(jerr.env)) {
		failf("%s: libjpeg error", path);
		jpeg_destroy_decompress(&d);
		free(buf);
		free(row);
		return -1;
	}
	jpeg_create_decompress(&d);
	jpeg_mem_src(&d, buf, (unsigned long)len);
	jpeg_read_header(&d, TRUE);
	if (d.image_width < 150 || d.image_width > 1000 ||
	    d.image_height < 150 || d.image_height > 1000)
		failf("%s: %ux%u, outside 150..1000", path, d.image_width,
		      d.image_height);
	if (d.num_components == 1)
		mix->gray++;
	else if (d.comp_info[0].h_samp_factor == 1 &&
		 d.comp_info[0].v_samp_factor == 1)
		mix->s444++;
	else if (d.comp_info[0].h_samp_factor == 2 &&
		 d.comp_info[0].v_samp_factor == 2)
		mix->s420++;
	mix->progressive += d.progressive_mode ? 1 : 0;
	jpeg_start_decompress(&d);
	row = malloc((size_t)d.output_width * (size_t)d.output_components);
	while (row && d.output_scanline < d.output_height) {
		JSAMPROW r = (JSAMPROW)row;

		jpeg_read_scanlines(&d, &r, 1);
	}
	jpeg_finish_decompress(&d);
	if (!row)
		failf("%s: out of memory", path);
	else if (jerr.pub.num_warnings)
		failf("%s: %ld libjpeg warnings (corrupt data)", path,
		      jerr.pub.num_warnings);
	else
		rc = 0;
	jpeg_destroy_decompress(&d);
	free(row);
	free(buf);
	return rc;
}

/* The layout: exactly class_000..class_003 with images i % 4 == class. */
static void check_layout(const char *dir, struct mix *mix)
{
	char path[512];
	struct dirent *de;
	unsigned c, i, entries = 0, files = 0;
	DIR *d;

	d = opendir(dir);
	if (!d) {
		failf("%s: cannot open", dir);
		return;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		entries++;
		if (strcmp(de->d_name, ".dlcache-gen-done") &&
		    (strncmp(de->d_name, "class_", 6) ||
		     strlen(de->d_name) != 9))
			failf("%s: unexpected entry '%s'", dir, de->d_name);
	}
	closedir(d);
	if (entries != CLASSES + 1)
		failf("%s: %u entries, want %d classes and the stamp", dir,
		      entries, CLASSES);
	for (c = 0; c < CLASSES; c++) {
		unsigned in_class = 0;

		snprintf(path, sizeof(path), "%s/class_%03u", dir, c);
		d = opendir(path);
		if (!d) {
			failf("%s: missing", path);
			continue;
		}
		while ((de = readdir(d)))
			if (de->d_name[0] != '.')
				in_class++;
			else if (strcmp(de->d_name, ".") &&
				 strcmp(de->d_name, ".."))
				failf("%s: leftover '%s'", path, de->d_name);
		closedir(d);
		if (in_class != IMAGES / CLASSES)
			failf("%s: %u files, want %d", path, in_class,
			      IMAGES / CLASSES);
	}
	for (i = 0; i < IMAGES; i++) {
		snprintf(path, sizeof(path), "%s/class_%03u/img_%06u.jpg", dir,
			 i % CLASSES, i);
		if (!check_jpeg(path, mix))
			files++;
	}
	if (files != IMAGES)
		failf("%s: %u of %d images are good JPEGs", dir, files, IMAGES);
}

static int same_file(const char *a, const char *b)
{
	size_t la = 0, lb = 0;
	unsigned char *x = slurp(a, &la), *y = slurp(b, &lb);
	int same = x && y && la == lb && !memcmp(x, y, la);

	free(x);
	free(y);
	return same;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Exit 2 with exactly one line on stderr, "dlcachectl gen: ...". */
static void check_usage(const char *what, const char *const *args)
{
	char *err = NULL;
	int rc = run(NULL, &err, args);
	const char *nl;

	if (rc != 2)
		failf("%s: exit %d, want 2", what, rc);
	if (!err || strncmp(err, "dlcachectl gen: ", 16) ||
	    !(nl = strchr(err, '\n')) || nl[1])
		failf("%s: want one line 'dlcachectl gen: ...' on stderr, got '%s'",
		      what, err ? err : "(nothing)");
	free(err);
}

int main(void)
{
	char d1[300], d2[300], d3[300], d4[300], p1[400], p2[400];
	struct mix mix = { 0 };
	struct stat before, after;
	char *out = NULL, *err = NULL;
	const char *tmp = getenv("TMPDIR");
	unsigned i, differ = 0;
	int rc;

	prog = getenv("DLCACHECTL");
	if (!prog || access(prog, X_OK)) {
		t_skip_required("test_gen", "DLCACHECTL is not set to an executable dlcachectl");
		return t_done("test_gen");
	}
	snprintf(tmpdir, sizeof(tmpdir), "%s/test_gen.XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(tmpdir)) {
		printf("FAIL: mkdtemp %s: %s\n", tmpdir, strerror(errno));
		return 1;
	}
	snprintf(d1, sizeof(d1), "%s/a", tmpdir);
	snprintf(d2, sizeof(d2), "%s/b/nested", tmpdir);
	snprintf(d3, sizeof(d3), "%s/c", tmpdir);
	snprintf(d4, sizeof(d4), "%s/foreign", tmpdir);

	/* A set, and its layout, files and format mix. */
	rc = run(&out, &err, (const char *const[]){ d1, "--images", "60",
			"--classes", "4", "--seed", "7", NULL });
	if (rc != 0)
		failf("gen %s: exit %d: %s", d1, rc, err ? err : "");
	else if (!out || !strstr(out, "generated 60 images in 4 classes"))
		failf("gen: summary missing: '%s'", out ? out : "");
	free(out);
	free(err);
	check_layout(d1, &mix);
	if (!mix.gray || !mix.s444 || !mix.progressive || mix.s420 < 40)
		failf("format mix: gray %u, 4:4:4 %u, 4:2:0 %u, progressive %u; want each kind, mostly 4:2:0",
		      mix.gray, mix.s444, mix.s420, mix.progressive);
	if (mix.bytes / IMAGES < 30000 || mix.bytes / IMAGES > 150000)
		failf("mean size %llu bytes, want 30..150 kB",
		      mix.bytes / IMAGES);

	/* Determinism: same seed, same bytes (into a nested new path). */
	rc = run(NULL, NULL, (const char *const[]){ d2, "--images", "60",
			"--classes", "4", "--seed", "7", NULL });
	if (rc != 0)
		failf("gen %s: exit %d", d2, rc);
	for (i = 0; i < IMAGES; i++) {
		snprintf(p1, sizeof(p1), "%s/class_%03u/img_%06u.jpg", d1,
			 i % CLASSES, i);
		snprintf(p2, sizeof(p2), "%s/class_%03u/img_%06u.jpg", d2,
			 i % CLASSES, i);
		if (!same_file(p1, p2))
			failf("%s and %s differ: not deterministic", p1, p2);
	}

	/* Another seed, other images. */
	rc = run(NULL, NULL, (const char *const[]){ d3, "--images", "8",
			"--classes", "4", "--seed", "8", NULL });
	if (rc != 0)
		failf("gen %s: exit %d", d3, rc);
	for (i = 0; i < 8; i++) {
		snprintf(p1, sizeof(p1), "%s/class_%03u/img_%06u.jpg", d1,
			 i % CLASSES, i);
		snprintf(p2, sizeof(p2), "%s/class_%03u/img_%06u.jpg", d3,
			 i % CLASSES, i);
		differ += !same_file(p1, p2);
	}
	if (differ != 8)
		failf("seed 8 repeats %u of 8 images of seed 7", 8 - differ);

	/* The stamp: the same arguments again do nothing. */
	snprintf(p1, sizeof(p1), "%s/class_000/img_000000.jpg", d1);
	stat(p1, &before);
	rc = run(&out, NULL, (const char *const[]){ d1, "--images", "60",
			"--classes", "4", "--seed", "7", NULL });
	stat(p1, &after);
	if (rc != 0 || !out || !strstr(out, "already generated"))
		failf("second gen: exit %d, output '%s'; want 'already generated'",
		      rc, out ? out : "");
	if (before.st_ino != after.st_ino ||
	    before.st_mtim.tv_sec != after.st_mtim.tv_sec ||
	    before.st_mtim.tv_nsec != after.st_mtim.tv_nsec)
		failf("second gen rewrote %s", p1);
	free(out);

	/* Other arguments regenerate, and drop what the new set lacks. */
	rc = run(NULL, NULL, (const char *const[]){ d3, "--images", "6",
			"--classes", "3", "--seed", "8", NULL });
	snprintf(p1, sizeof(p1), "%s/class_003", d3);
	snprintf(p2, sizeof(p2), "%s/class_000/img_000004.jpg", d3);
	if (rc != 0 || !access(p1, F_OK) || !access(p2, F_OK))
		failf("regenerating %s with 6 images in 3 classes left stale files (exit %d)",
		      d3, rc);

	/* A non-empty directory that gen did not make is refused. */
	mkdir(d4, 0755);
	snprintf(p1, sizeof(p1), "%s/precious.txt", d4);
	fclose(fopen(p1, "w"));
	rc = run(NULL, &err, (const char *const[]){ d4, "--images", "4",
			"--classes", "2", NULL });
	if (rc != 1 || !err || !strstr(err, d4))
		failf("gen into a foreign non-empty dir: exit %d, '%s'; want 1 and the path",
		      rc, err ? err : "");
	free(err);

	/* The command line. */
	rc = run(&out, NULL, (const char *const[]){ "--help", NULL });
	if (rc != 0 || !out || strncmp(out, "usage: dlcachectl gen", 21))
		failf("--help: exit %d, want 0 and usage on stdout", rc);
	free(out);
	check_usage("no DIR", (const char *const[]){ NULL });
	check_usage("two DIRs", (const char *const[]){ d1, d2, NULL });
	check_usage("--images 0", (const char *const[]){ d1, "--images", "0", NULL });
	check_usage("--images x", (const char *const[]){ d1, "--images", "x", NULL });
	check_usage("--quality 101", (const char *const[]){ d1, "--quality", "101", NULL });
	check_usage("--seed -1", (const char *const[]){ d1, "--seed", "-1", NULL });
	check_usage("--classes > --images", (const char *const[]){ d1,
			"--images", "3", "--classes", "4", NULL });
	check_usage("unknown option", (const char *const[]){ d1, "--bogus", NULL });
	check_usage("missing value", (const char *const[]){ d1, "--images", NULL });

	nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	if (failures) {
		printf("test_gen: %d failures\n", failures);
		return 1;
	}
	printf("test_gen: ok\n");
	return 0;
}
