/* SPDX-License-Identifier: MIT */
/*
 * dlcachectl: one function per subcommand, and the few helpers they share
 * for argument errors and number parsing.
 *
 * Exit status: 0 success, 1 the work failed, 2 a bad argument (one line
 * on stderr: "dlcachectl CMD: what is wrong").
 */
#ifndef DLCACHECTL_CLI_H
#define DLCACHECTL_CLI_H

#include <pthread.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#define EXIT_USAGE 2

/*
 * A subcommand's parse step returns CMD_RUN to go on, or the exit status
 * to end with at once: 0 after --help, EXIT_USAGE after a usage error.
 */
#define CMD_RUN (-1)

/* Entries in array @a (an array, not a pointer). */
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

int cmd_gen(int argc, char **argv);
int cmd_index(int argc, char **argv);
int cmd_pack(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_decode(int argc, char **argv);
int cmd_preview(int argc, char **argv);
int cmd_sample(int argc, char **argv);
int cmd_decodebench(int argc, char **argv);
int cmd_readbench(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_whatif(int argc, char **argv);
/* @s as a JSON string on @f, quotes included (paths are not JSON-safe). */
void json_string(FILE *f, const char *s);
/* dlcachectl stats --staging DIR (staging.c): @json 0 the table, 1 JSON, 2 Prometheus. */
int cmd_stats_staging(const char *dir, int json);
int cmd_watch(int argc, char **argv);
int cmd_datasets(int argc, char **argv);
int cmd_capacity(int argc, char **argv);
int cmd_drop(int argc, char **argv);
int cmd_drain(int argc, char **argv);

/* Print "dlcachectl @cmd: <msg>" to stderr and return EXIT_USAGE. */
int usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Print "dlcachectl @cmd: <msg>" to stderr and return 1. */
int fail(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Parse an unsigned integer in [min, max]; 0 or -1 (nothing printed).
 * parse_size() also takes a K, M or G suffix (powers of 1024).
 */
int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
int parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out);
int parse_size(const char *s, uint64_t *out);

/*
 * Open a data set given as an index file or an ImageFolder directory.
 * Returns 0 or the library's -errno; index_error() words it for a user.
 */
struct dlc_index;
int open_index(const char *path, struct dlc_index **out);
/*
 * open_index() with the data set at @root (NULL: the index's own root);
 * @root needs an index file: -EINVAL for a directory.
 */
int open_index_at(const char *path, const char *root, struct dlc_index **out);
const char *index_error(int err);

/*
 * A library log callback (arg: a struct held_log) that holds lines back
 * while @hold is set, so that a usage error found after the loader started
 * is still the one line on stderr. held_log_release() prints the held
 * lines (@print) or drops them, and from then on passes lines straight to
 * dlc_log_stderr().
 */
struct held_log {
	pthread_mutex_t lock;
	int hold;
	unsigned int n;
	int level[16];
	char *msg[16];
};
#define HELD_LOG_INIT { PTHREAD_MUTEX_INITIALIZER, 1, 0, { 0 }, { NULL } }
void held_log_fn(void *arg, int level, const char *msg);
void held_log_release(struct held_log *h, int print);

/* A whole file into a malloc'd buffer (*@out, *@len); 0 or -errno. */
int read_whole_file(const char *path, uint8_t **out, size_t *len);

/* @w x @h packed RGB as a binary PPM at @path; 0 or -errno. */
int write_ppm(const char *path, const uint8_t *rgb, uint32_t w, uint32_t h);

/* Monotonic clock in nanoseconds. */
uint64_t now_ns(void);

#endif
