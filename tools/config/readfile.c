/* readfile.c: a whole file (or stdin) into memory, capped: the job files,
 * stdin and file arguments of the CLI, the HTTP API's token file.
 *
 * Callers: tools/cli (run, submit, snapshot), tools/api (http.token_file).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "readfile.h"

int al_read_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rbe") : stdin;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int r = 0;

	if (!f)
		return -errno;
	for (;;) {
		size_t n;

		if (cap - len < 65536) {
			char *nb;

			cap = cap ? cap * 2 : 65536;
			if (cap > max + 65536)
				cap = max + 65536;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				r = -ENOMEM;
				break;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (len > max) {
			r = -E2BIG;
			break;
		}
		if (n == 0) {
			if (ferror(f))
				r = -EIO;
			break;
		}
	}
	if (f != stdin)
		fclose(f);
	if (r < 0) {
		free(buf);
		return r;
	}
	if (!buf && !(buf = malloc(1)))
		return -ENOMEM;
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
}
