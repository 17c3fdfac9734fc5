// SPDX-License-Identifier: MIT
/*
 * The index's checks of a name read from a file (relpath.h), shared by the
 * index file's parser (indexfile.c) and the pack reader (pack.c).
 */
#include <string.h>

#include "relpath.h"

/* A class name: not empty, ".", ".." and no '/'. */
int dlc_index_class_name_ok(const char *s, size_t len)
{
	return len && !memchr(s, '/', len) && strcmp(s, ".") &&
	       strcmp(s, "..");
}

/*
 * A relpath must stay under the root: no absolute path, no empty, "." or
 * ".." component, and at least "class/file".
 */
int dlc_index_relpath_ok(const char *s)
{
	const char *comp = s;
	int ncomp = 0;

	for (;;) {
		const char *slash = strchr(comp, '/');
		size_t n = slash ? (size_t)(slash - comp) : strlen(comp);

		if (!n || (n == 1 && comp[0] == '.') ||
		    (n == 2 && comp[0] == '.' && comp[1] == '.'))
			return 0;
		ncomp++;
		if (!slash)
			break;
		comp = slash + 1;
	}
	return ncomp >= 2;
}
