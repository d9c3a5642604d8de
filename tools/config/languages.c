/* languages.c: the languages the templates declare, for the policy.
 *
 * Each configs/templates/NAME.conf may carry `language = NAME FILE |
 * COMPILE | RUN` lines (docs/languages.md); results/lang.c parses one and
 * expands a job's `language` with the table read here. Read once per
 * config, by al_config_policy(): the worker processes a dispatcher forks
 * inherit the table, so a job's language means what the templates on
 * this host say.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "readfile.h"

#define TEMPLATE_FILE_MAX (64u << 10) /* a template conf, bytes */

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct al_language *)a)->name,
		      ((const struct al_language *)b)->name);
}

/* The value of a `language = ...` line, or NULL for any other line. */
static char *language_value(char *line)
{
	char *eq;
	size_t n;

	line += strspn(line, " \t");
	if (strncmp(line, "language", 8) != 0)
		return NULL;
	eq = line + 8;
	eq += strspn(eq, " \t");
	if (*eq != '=')
		return NULL;
	eq++;
	eq += strspn(eq, " \t");
	n = strlen(eq);
	while (n &&
	       (eq[n - 1] == ' ' || eq[n - 1] == '\t' || eq[n - 1] == '\r'))
		eq[--n] = 0;
	return eq;
}

/* Add one parsed line unless its name is taken; false when it is. */
static bool add(struct al_config *cfg, const struct al_language *l)
{
	for (size_t i = 0; i < cfg->languages.n; i++)
		if (strcmp(cfg->languages.list[i].name, l->name) == 0)
			return false;
	cfg->languages.list[cfg->languages.n++] = *l;
	return true;
}

/* The language lines of template `name` (its file's text, NUL-ended). */
static void read_template(struct al_config *cfg, const char *name, char *text,
			  char *err, size_t errlen, int *ret)
{
	unsigned lineno = 0;
	char why[160];

	for (char *line = text, *next; line; line = next) {
		struct al_language l;
		char *v;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		lineno++;
		v = language_value(line);
		if (!v)
			continue;
		if (cfg->languages.n == AL_LANGUAGES_MAX)
			snprintf(why, sizeof(why), "over %d languages",
				 AL_LANGUAGES_MAX);
		else if (al_language_parse(name, v, &l, why, sizeof(why)) < 0)
			;
		else if (!add(cfg, &l))
			snprintf(why, sizeof(why),
				 "language \"%s\" is another template's too",
				 l.name);
		else
			continue;
		if (*ret == 0)
			snprintf(err, errlen, "%s.conf:%u: %s", name, lineno,
				 why);
		*ret = -EINVAL;
	}
}

int al_config_languages(struct al_config *cfg, char *err, size_t errlen)
{
	char dir[PATH_MAX], path[PATH_MAX + AL_NAME_MAX + 8];
	char name[AL_NAME_MAX + 1];
	DIR *d = NULL;
	int ret = 0;

	if (errlen)
		err[0] = 0;
	if (cfg->languages.loaded)
		return 0;
	cfg->languages.loaded = true;
	cfg->languages.n = 0;
	if (al_config_templates_dir(cfg, dir, sizeof(dir)) < 0)
		return -ENAMETOOLONG;
	d = opendir(dir);
	if (!d)
		return -errno;
	while (al_config_template_next(d, name)) {
		char *text = NULL;
		size_t len;

		snprintf(path, sizeof(path), "%s/%s.conf", dir, name);
		if (al_read_file(path, TEMPLATE_FILE_MAX, &text, &len) < 0)
			continue; /* a dangling name: not a template */
		read_template(cfg, name, text, err, errlen, &ret);
		free(text);
	}
	closedir(d);
	qsort(cfg->languages.list, cfg->languages.n,
	      sizeof(cfg->languages.list[0]), by_name);
	return ret;
}
