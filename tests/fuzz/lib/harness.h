/* SPDX-License-Identifier: MIT */
/*
 * What every libdlcache fuzz harness shares (tests/fuzz/lib/fuzz_*.c).
 *
 * A harness is one LLVMFuzzerTestOneInput(): libFuzzer drives it when
 * clang has it (fuzz.mk), else driver.c does, with the same flags and
 * the same per-input time and memory budgets. A harness must return to
 * the same state after every input: inputs run back to back in one
 * process, thousands a second.
 *
 * Inputs that reach the library through a path (packs, index files, the
 * staging directory) are written into a private directory made once per
 * process (fuzz_dir()), under $FUZZ_LIB_TMPDIR (run.sh's) or on tmpfs
 * when /dev/shm is there.
 */
#ifndef DLC_FUZZ_HARNESS_H
#define DLC_FUZZ_HARNESS_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A directory of this process's, made on first use; aborts when it cannot. */
static inline const char *fuzz_dir(void)
{
	static char dir[64];

	if (!dir[0]) {
		/* run.sh's, removed after the run even when the harness crashed */
		const char *base = getenv("FUZZ_LIB_TMPDIR");

		if (!base || strlen(base) > sizeof(dir) - 20)
			base = access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm";

		snprintf(dir, sizeof(dir), "%s/dlc-fuzz-XXXXXX", base);
		if (!mkdtemp(dir)) {
			perror("fuzz: mkdtemp");
			abort();
		}
	}
	return dir;
}

/* @path holds exactly @data; aborts when it cannot (the harness is broken). */
static inline void fuzz_write(const char *path, const uint8_t *data,
			      size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	size_t done = 0;

	if (fd < 0) {
		perror(path);
		abort();
	}
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			perror(path);
			abort();
		}
		done += (size_t)n;
	}
	close(fd);
}

/*
 * Empty directory @dir: every entry in it, directories depth first (not
 * @dir itself). Inputs make only a few levels, and no symlink is followed.
 */
static inline void fuzz_empty_dir(int dfd)
{
	char name[256];
	struct dirent *de;
	int fd = dup(dfd);
	DIR *d;

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	for (;;) {
		de = readdir(d);
		if (!de)
			break;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(name, sizeof(name), "%s", de->d_name);
		if (unlinkat(dfd, name, 0) && errno == EISDIR) {
			int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY |
					 O_NOFOLLOW | O_CLOEXEC);

			if (sub >= 0) {
				fuzz_empty_dir(sub);
				close(sub);
			}
			unlinkat(dfd, name, AT_REMOVEDIR);
		}
		rewinddir(d);
	}
	closedir(d);
}

static inline void fuzz_remove_dir_at_exit(void)
{
	int dfd = open(fuzz_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd >= 0) {
		fuzz_empty_dir(dfd);
		close(dfd);
	}
	rmdir(fuzz_dir());
}

#endif
