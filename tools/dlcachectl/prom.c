// SPDX-License-Identifier: MIT
/* Prometheus's text format: prom.h. */
#include <string.h>

#include "prom.h"

void prom_head(FILE *f, const char *name, const char *type, const char *help)
{
	/* HELP escapes backslash and newline; ours have neither. */
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

const char *prom_field_head(FILE *f, char *name, size_t len,
			    const char *prefix, const struct prom_field *field)
{
	snprintf(name, len, "%s%s", prefix, field->name);
	prom_head(f, name, field->type, field->help);
	return name;
}

void prom_sample(FILE *f, const char *name, const char *labels, uint64_t v)
{
	if (labels && *labels)
		fprintf(f, "%s{%s} %llu\n", name, labels, (unsigned long long)v);
	else
		fprintf(f, "%s %llu\n", name, (unsigned long long)v);
}

/* Appends @s to @buf at *@at, escaped when @esc; -1 when it does not fit. */
static int put(char *buf, size_t len, size_t *at, const char *s, int esc)
{
	for (; *s; s++) {
		int two = esc && (*s == '\\' || *s == '"' || *s == '\n');

		if (*at + 1 + two >= len)
			return -1;
		if (two)
			buf[(*at)++] = '\\';
		buf[(*at)++] = two && *s == '\n' ? 'n' : *s;
	}
	return 0;
}

char *prom_labels(char *buf, size_t len, unsigned int n,
		  const char *const names[], const char *const values[])
{
	size_t at = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		if (put(buf, len, &at, i ? "," : "", 0) ||
		    put(buf, len, &at, names[i], 0) ||
		    put(buf, len, &at, "=\"", 0) ||
		    put(buf, len, &at, values[i], 1) ||
		    put(buf, len, &at, "\"", 0))
			return NULL;
	if (at >= len)
		return NULL;
	buf[at] = '\0';
	return buf;
}

uint64_t prom_value(const void *base, const struct prom_field *field)
{
	uint64_t v;

	memcpy(&v, (const char *)base + field->off, sizeof(v));
	return v;
}
