/* SPDX-License-Identifier: MIT */
/*
 * Prometheus's text exposition format (0.0.4), as node_exporter's textfile
 * collector reads it: each family's "# HELP" and "# TYPE" lines, then its
 * samples, "name{label="value",...} value", every sample of a family
 * together. dlcachectl stats --prometheus writes the module's counters
 * and a staging directory's with these.
 */
#ifndef DLCACHECTL_PROM_H
#define DLCACHECTL_PROM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One uint64_t field of a struct as a metric: its name, type and help. */
struct prom_field {
	const char *name;	/* without the family's prefix */
	const char *type;	/* "counter" or "gauge" */
	const char *help;
	size_t off;		/* offsetof() in the struct */
};

/* The "# HELP" and "# TYPE" lines of family @name. */
void prom_head(FILE *f, const char *name, const char *type, const char *help);

/*
 * The head of family @prefix followed by @field's name, which is left in
 * @name (@len bytes) for its samples. Returns @name.
 */
const char *prom_field_head(FILE *f, char *name, size_t len,
			    const char *prefix, const struct prom_field *field);

/* One sample: @labels is NULL or what prom_labels() built. */
void prom_sample(FILE *f, const char *name, const char *labels, uint64_t v);

/*
 * Labels @n names and values as 'a="x",b="y"' into @buf of @len bytes,
 * each value escaped (backslash, double quote, newline). Returns @buf, or
 * NULL when it does not fit.
 */
char *prom_labels(char *buf, size_t len, unsigned int n,
		  const char *const names[], const char *const values[]);

/* The uint64_t at @field's offset in @base. */
uint64_t prom_value(const void *base, const struct prom_field *field);

#endif
