/* opts.c: getopt_long's two option tables from one (opts.h). */
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "opts.h"

int al_opts_long(const struct al_opt *t, struct option *ret, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; t && t[i].code; i++) {
		if (!t[i].name)
			continue;
		if (k + 1 >= n)
			return -E2BIG;
		ret[k++] = (struct option){
		    .name = t[i].name,
		    .has_arg = t[i].flags & AL_OPT_ARG ? required_argument
						       : no_argument,
		    .val = t[i].code,
		};
	}
	if (n == 0)
		return -E2BIG;
	memset(&ret[k], 0, sizeof(ret[k]));
	return (int)k;
}

int al_opts_short(const struct al_opt *t, char *ret, size_t len)
{
	size_t k = 0;

	for (size_t i = 0; t && t[i].code; i++) {
		if (!(t[i].flags & AL_OPT_SHORT))
			continue;
		if (t[i].code > 127 || !isalnum(t[i].code))
			return -EINVAL; /* a short option is a letter or digit */
		/* the letter, ':' when it takes an argument, the NUL */
		if (k + 2 + !!(t[i].flags & AL_OPT_ARG) > len)
			return -E2BIG;
		ret[k++] = (char)t[i].code;
		if (t[i].flags & AL_OPT_ARG)
			ret[k++] = ':';
	}
	if (len == 0)
		return -E2BIG;
	ret[k] = '\0';
	return 0;
}

int al_opts_next(int argc, char **argv, const struct al_opt *t)
{
	struct option lo[AL_OPTS_MAX + 1];
	char so[2 * AL_OPTS_MAX + 1];
	int r;

	r = al_opts_long(t, lo, AL_OPTS_MAX + 1);
	if (r >= 0)
		r = al_opts_short(t, so, sizeof(so));
	return r < 0 ? r : getopt_long(argc, argv, so, lo, NULL);
}
