/* lang.c: languages, and a job that names one made into a plain job.
 *
 * A template declares the languages it runs, one line each, in its
 * configs/templates/NAME.conf: `language = NAME FILE | COMPILE | RUN`
 * (docs/languages.md). The config loader (tools/config) reads those lines
 * through al_language_parse() into the policy; the worker (worker/proc.c)
 * expands a job's `language` with al_job_expand_language() before it
 * checks the job against the policy, so every front door (the CLI, the
 * HTTP API, a client writing to Redis itself) gets the same expansion and
 * the same RJ. Pure: no I/O.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static bool lang_name_valid(const char *s, size_t n)
{
	if (n == 0 || n > AL_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || strchr("_+-", s[i])))
			return false;
	return true;
}

/* Copy s[0..n) with its blanks trimmed into dst (size bytes); false when
 * it does not fit. */
static bool copy_trimmed(char *dst, size_t size, const char *s, size_t n)
{
	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (n >= size)
		return false;
	memcpy(dst, s, n);
	dst[n] = 0;
	return true;
}

int al_language_parse(const char *tmpl, const char *value,
		      struct al_language *ret, char *why, size_t why_len)
{
	struct al_language l = {0};
	char head[2 * AL_NAME_MAX + 2];
	const char *bar1 = strchr(value, '|');
	const char *bar2 = bar1 ? strchr(bar1 + 1, '|') : NULL;
	size_t n;

	snprintf(why, why_len, "not NAME FILE | COMPILE | RUN");
	if (!bar2 || strchr(bar2 + 1, '|') || strlen(tmpl) > AL_NAME_MAX)
		return -EINVAL;
	snprintf(l.template_, sizeof(l.template_), "%s", tmpl);
	if (!copy_trimmed(head, sizeof(head), value, (size_t)(bar1 - value)) ||
	    !copy_trimmed(l.compile, sizeof(l.compile), bar1 + 1,
			  (size_t)(bar2 - bar1 - 1)) ||
	    !copy_trimmed(l.run, sizeof(l.run), bar2 + 1, strlen(bar2 + 1))) {
		snprintf(why, why_len, "a field is over %d bytes",
			 AL_LANGUAGE_CMD_MAX);
		return -EINVAL;
	}
	n = strcspn(head, " \t");
	if (!lang_name_valid(head, n)) {
		snprintf(why, why_len, "name: [a-z0-9_+-]{1,%d}", AL_NAME_MAX);
		return -EINVAL;
	}
	memcpy(l.name, head, n);
	if (!copy_trimmed(l.file, sizeof(l.file), head + n, strlen(head + n)) ||
	    !l.file[0] || !al_relpath_valid(l.file, strlen(l.file)) ||
	    strpbrk(l.file, " \t")) {
		snprintf(why, why_len, "file: one relative path");
		return -EINVAL;
	}
	if (!l.compile[0] || !l.run[0] || l.run[0] == '-') {
		snprintf(why, why_len, "compile (or -) and run are required");
		return -EINVAL;
	}
	if (strcmp(l.compile, "-") == 0)
		l.compile[0] = 0;
	*ret = l;
	return 0;
}

/* --- expansion ------------------------------------------------------------ */

static bool allowed(const struct al_policy *p, const char *tmpl)
{
	if (!p->templates)
		return true;
	for (const char *const *t = p->templates; *t; t++)
		if (strcmp(*t, tmpl) == 0)
			return true;
	return false;
}

/* The language `name` among the allowed templates', or NULL. */
static const struct al_language *find(const struct al_policy *p,
				      const char *name)
{
	for (size_t i = 0; i < p->n_languages; i++)
		if (strcmp(p->languages[i].name, name) == 0 &&
		    allowed(p, p->languages[i].template_))
			return &p->languages[i];
	return NULL;
}

/* A diag's reason holds 159 bytes: a list of known languages that does
 * not fit after `why` follows in diags of its own, "known: ...". */
static void known_diags(struct al_diags *d, const char *why,
			const char *known)
{
	const size_t max = sizeof(d->items[0].reason) - 1;
	const size_t chunk = max - sizeof("known: ");

	if (strlen(why) + strlen(known) + sizeof(" (known: )") <= max + 1) {
		al_diags_add(d, "language", "%s (known: %s)", why,
			     known[0] ? known : "none");
		return;
	}
	al_diags_add(d, "language", "%s", why);
	while (*known) {
		size_t n = strlen(known);

		if (n > chunk) {
			n = chunk;
			while (n && known[n] != ' ')
				n--;
			if (!n)
				n = chunk;
		}
		al_diags_add(d, "language", "known: %.*s", (int)n, known);
		known += n;
		known += strspn(known, " ");
	}
}

static void unknown(const struct al_policy *p, const char *name,
		    struct al_diags *d)
{
	char known[AL_LANGUAGES_MAX * (AL_NAME_MAX + 1) + 1] = "";
	char why[2 * AL_NAME_MAX + 64];
	size_t len = 0;

	for (size_t i = 0; i < p->n_languages && len < sizeof(known); i++) {
		if (!allowed(p, p->languages[i].template_))
			continue;
		len +=
		    (size_t)snprintf(known + len, sizeof(known) - len, "%s%s",
				     len ? " " : "", p->languages[i].name);
	}
	snprintf(why, sizeof(why), "unknown language \"%s\"", name);
	for (size_t i = 0; i < p->n_languages; i++)
		if (strcmp(p->languages[i].name, name) == 0) {
			snprintf(why, sizeof(why),
				 "\"%s\" runs in template \"%s\", which is "
				 "not allowed here",
				 name, p->languages[i].template_);
			break;
		}
	known_diags(d, why, known);
}

/* Split `cmd` on blanks into a NULL-terminated argv. */
static int split(const char *cmd, char ***ret_argv, size_t *ret_argc)
{
	char **argv = calloc(AL_LANGUAGE_CMD_MAX / 2 + 2, sizeof(*argv));
	size_t argc = 0;

	if (!argv)
		return -ENOMEM;
	for (const char *s = cmd; *s;) {
		size_t n;

		s += strspn(s, " \t");
		n = strcspn(s, " \t");
		if (!n)
			break;
		argv[argc] = al__str_dup_n(s, n);
		if (!argv[argc]) {
			while (argc)
				free(argv[--argc]);
			free(argv);
			return -ENOMEM;
		}
		argc++;
		s += n;
	}
	*ret_argv = argv;
	*ret_argc = argc;
	return 0;
}

/* The source file: `source_code`, or already in `files`. */
static int place_source(struct al_job *job, const struct al_language *l,
			struct al_diags *d)
{
	struct al_file *f;
	bool in_files = false;

	for (size_t i = 0; i < job->n_files; i++)
		in_files |= strcmp(job->files[i].path, l->file) == 0;
	if (!job->has_source) {
		if (!in_files)
			al_diags_add(d, "source_code",
				     "required (or files[\"%s\"]) for "
				     "language \"%s\"",
				     l->file, l->name);
		return 0;
	}
	if (in_files) {
		al_diags_add(d, "source_code",
			     "and files[\"%s\"] are both "
			     "given",
			     l->file);
		return 0;
	}
	if (job->n_files >= AL_FILES_MAX) {
		al_diags_add(d, "files",
			     "at most %d entries with "
			     "source_code",
			     AL_FILES_MAX - 1);
		return 0;
	}
	f = realloc(job->files, (job->n_files + 1) * sizeof(*f));
	if (!f)
		return -ENOMEM;
	job->files = f;
	f += job->n_files;
	f->path = strdup(l->file);
	if (!f->path)
		return -ENOMEM;
	f->content = job->source; /* hand-off */
	job->source = (struct al_blob){0};
	job->has_source = false;
	job->n_files++;
	return 0;
}

/* The compile step first, unless the job has one of its own. Its timeout
 * is the policy's largest step timeout: compilers under TCG take from
 * seconds (gcc) to minutes (kotlinc, ghc); the job's wall_ms bounds it. */
static int add_compile(struct al_job *job, const struct al_language *l,
		       const struct al_policy *p, struct al_diags *d)
{
	struct al_step *steps, c = {.compile = true};

	if (!l->compile[0])
		return 0;
	for (size_t i = 0; i < job->n_steps; i++)
		if (job->steps[i].compile)
			return 0;
	if (job->n_steps >= AL_STEPS_MAX) {
		al_diags_add(d, "steps",
			     "at most %d steps with language "
			     "\"%s\" (its compile step is one)",
			     AL_STEPS_MAX - 1, l->name);
		return 0;
	}
	c.timeout_ms = p->step_timeout_max_ms;
	c.name = strdup("compile");
	if (!c.name || split(l->compile, &c.argv, &c.argc) < 0) {
		free(c.name);
		return -ENOMEM;
	}
	steps = realloc(job->steps, (job->n_steps + 1) * sizeof(*steps));
	if (!steps) {
		al_step_release(&c);
		return -ENOMEM;
	}
	memmove(steps + 1, steps, job->n_steps * sizeof(*steps));
	steps[0] = c;
	job->steps = steps;
	job->n_steps++;
	return 0;
}

/* Steps without a command run the language's: after a failed compile
 * none runs, after a failed test the next still does (`setup_ok`, unless
 * the step says `success`). */
static int fill_run(struct al_job *job, const struct al_language *l)
{
	for (size_t i = 0; i < job->n_steps; i++) {
		struct al_step *s = &job->steps[i];

		if (s->argc || s->sh)
			continue;
		if (split(l->run, &s->argv, &s->argc) < 0)
			return -ENOMEM;
		if (s->run_if == AL_RUN_ALWAYS)
			s->run_if = AL_RUN_SETUP_OK;
	}
	return 0;
}

int al_name_count(const char *spec, const char *name, unsigned long lo,
		  unsigned long hi, unsigned long *ret)
{
	int found = 0;

	for (const char *s = spec; s && *s;) {
		size_t len = strcspn(s, ": ");
		char part[AL_NAME_MAX + 1], *end;
		unsigned long n;

		if (*s == ' ') {
			s++;
			continue;
		}
		if (len == 0 || len > AL_NAME_MAX || s[len] != ':' ||
		    s[len + 1] < '0' || s[len + 1] > '9')
			return -1;
		memcpy(part, s, len);
		part[len] = 0;
		n = strtoul(s + len + 1, &end, 10);
		if (!al_name_valid(part) || n < lo || n > hi ||
		    (*end && *end != ' '))
			return -1;
		if (name && !strcmp(part, name)) {
			*ret = n;
			found = 1;
		}
		s = end;
	}
	return found;
}

uint32_t al_time_scale(const char *scales, const char *tmpl)
{
	unsigned long f;

	return al_name_count(scales, tmpl, 1, AL_TIME_SCALE_MAX, &f) == 1
		   ? (uint32_t)f
		   : 1;
}

/* The template's time scale on every step (issue 37: a JVM starts in
 * 2.5-10 s of CPU under TCG): a step's timeout (its own, else the
 * policy's default) and its cpu_ms, each capped at its maximum. The
 * job's wall time follows its steps unless the job sets one. */
static void scale_steps(struct al_job *job, const struct al_language *l,
			const struct al_policy *p)
{
	uint32_t f = al_time_scale(p->time_scale, l->template_);
	uint64_t v;

	if (f == 1)
		return;
	for (size_t i = 0; i < job->n_steps; i++) {
		struct al_step *s = &job->steps[i];

		v = (uint64_t)(s->timeout_ms ? s->timeout_ms
					     : p->step_timeout_ms) * f;
		s->timeout_ms = (uint32_t)(v < p->step_timeout_max_ms
						? v
						: p->step_timeout_max_ms);
		v = (uint64_t)s->cpu_ms * f;
		s->cpu_ms = (uint32_t)(v < AL_CPU_MS_MAX ? v : AL_CPU_MS_MAX);
	}
}

int al_job_expand_language(struct al_job *job, const struct al_policy *p,
			   struct al_diags *d)
{
	size_t before = d->n + d->dropped;
	const struct al_language *l;
	int r;

	if (!job->language)
		return 0;
	l = find(p, job->language);
	if (!l) {
		unknown(p, job->language, d);
		return -EINVAL;
	}
	if (job->template_ && strcmp(job->template_, l->template_) != 0) {
		al_diags_add(d, "template",
			     "\"%s\" does not run language "
			     "\"%s\" (template \"%s\" does)",
			     job->template_, l->name, l->template_);
		return -EINVAL;
	}
	r = place_source(job, l, d);
	if (r == 0)
		r = add_compile(job, l, p, d);
	if (r < 0 || d->n + d->dropped != before)
		return r < 0 ? r : -EINVAL;
	r = fill_run(job, l);
	if (r < 0)
		return r;
	scale_steps(job, l, p);
	if (!job->template_ && !(job->template_ = strdup(l->template_)))
		return -ENOMEM;
	free(job->language);
	job->language = NULL;
	return 0;
}
