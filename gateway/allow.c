/* allow.c: the allowlist file, parsed strictly (allow.h). One pin per
 * line: ECOSYSTEM NAME VERSION FILE SHA256; options as `option WORD`;
 * `allow-scripts NAME VERSION` for an npm version approved with its
 * install script; whole-line comments with #. Lookups are linear: a few
 * thousand pins are microseconds, and the gateway looks up once per request. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allow.h"

static int fail(char *err, size_t errlen, const char *name, unsigned long line,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int fail(char *err, size_t errlen, const char *name, unsigned long line,
		const char *fmt, ...)
{
	int n = snprintf(err, errlen, "%s:%lu: ", name, line);
	va_list ap;

	if (n >= 0 && (size_t)n < errlen) { /* the reason after FILE:LINE */
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

int gw_allow_key(enum gw_eco eco, const char *name, char out[GW_NAME_MAX + 1])
{
	if (eco == GW_PYTHON)
		return gw_pep503_normalize(name, out);
	if (!gw_npm_name_valid(name))
		return -EINVAL;
	strcpy(out, name);
	return 0;
}

static bool is_hex64(const char *s)
{
	if (strlen(s) != GW_SHA256_HEX)
		return false;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

/* Split a line into at most max words separated by spaces or tabs. */
static size_t words(char *line, char **w, size_t max)
{
	size_t n = 0;
	char *save = NULL;

	for (char *t = strtok_r(line, " \t\r", &save); t;
	     t = strtok_r(NULL, " \t\r", &save)) {
		if (n == max)
			return max + 1;
		w[n++] = t;
	}
	return n;
}

/* allow-scripts NAME VERSION (npm): one more entry in a->scripts_ok. */
static int parse_scripts_ok(struct gw_allow *a, char **w, size_t n,
			    const char *name, unsigned long no, char *err,
			    size_t errlen)
{
	struct gw_scripts_ok e = {0}, *ne;

	if (n != 3)
		return fail(err, errlen, name, no,
			    "want allow-scripts NAME VERSION");
	if (strlen(w[1]) > GW_NAME_MAX ||
	    gw_allow_key(GW_NPMJS, w[1], e.key) < 0)
		return fail(err, errlen, name, no, "not a valid npm name");
	if (!gw_version_valid(w[2]))
		return fail(err, errlen, name, no, "not a valid version");
	if (gw_allow_scripts(a, e.key, w[2]))
		return 0;
	if (a->n_scripts_ok == GW_ALLOW_PINS_MAX)
		return fail(err, errlen, name, no,
			    "more than %u allow-scripts lines",
			    GW_ALLOW_PINS_MAX);
	strcpy(e.version, w[2]);
	ne = realloc(a->scripts_ok, (a->n_scripts_ok + 1) * sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	a->scripts_ok = ne;
	a->scripts_ok[a->n_scripts_ok++] = e;
	return 0;
}

static int parse_line(struct gw_allow *a, size_t *cap, char *line,
		      const char *name, unsigned long no, char *err,
		      size_t errlen)
{
	char *w[6];
	size_t n = words(line, w, 5);
	struct gw_pin p = {0};

	if (n == 0 || w[0][0] == '#')
		return 0;
	if (!strcmp(w[0], "option")) {
		if (n != 2)
			return fail(err, errlen, name, no,
				    "option takes one word");
		if (!strcmp(w[1], "python.wheels-only"))
			a->wheels_only = true;
		else if (!strcmp(w[1], "npm.no-install-scripts"))
			a->npm_scripts_denied = true;
		else if (!strncmp(w[1], "min-age-days=", 13)) {
			char *end;
			unsigned long d = strtoul(w[1] + 13, &end, 10);

			if (!isdigit((unsigned char)w[1][13]) || *end ||
			    d < 1 || d > 3650)
				return fail(err, errlen, name, no,
					    "min-age-days=N takes 1..3650");
			a->min_age_days = (unsigned)d;
		} else
			return fail(err, errlen, name, no, "unknown option");
		return 0;
	}
	if (!strcmp(w[0], "allow-scripts"))
		return parse_scripts_ok(a, w, n, name, no, err, errlen);
	if (n != 5)
		return fail(err, errlen, name, no,
			    "want ECOSYSTEM NAME VERSION FILE SHA256");
	if (gw_eco_parse(w[0], &p.eco) < 0)
		return fail(err, errlen, name, no,
			    "ecosystem is python or npm");
	if (strlen(w[1]) > GW_NAME_MAX || gw_allow_key(p.eco, w[1], p.key) < 0)
		return fail(err, errlen, name, no, "not a valid %s name", w[0]);
	if (!gw_version_valid(w[2]))
		return fail(err, errlen, name, no, "not a valid version");
	if (!gw_file_name_valid(w[3]))
		return fail(err, errlen, name, no, "not a valid file name");
	if (!is_hex64(w[4]))
		return fail(err, errlen, name, no,
			    "sha256 is 64 lowercase hex digits");
	if (gw_allow_file(a, p.eco, w[3]))
		return fail(err, errlen, name, no, "file pinned twice");
	if (a->n == GW_ALLOW_PINS_MAX)
		return fail(err, errlen, name, no, "more than %u pins",
			    GW_ALLOW_PINS_MAX);
	strcpy(p.name, w[1]);
	strcpy(p.version, w[2]);
	strcpy(p.file, w[3]);
	strcpy(p.sha256, w[4]);
	if (a->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		struct gw_pin *np = realloc(a->pins, ncap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		a->pins = np;
		*cap = ncap;
	}
	a->pins[a->n++] = p;
	return 0;
}

int gw_allow_parse(const char *name, const char *text, size_t len,
		   struct gw_allow *ret, char *err, size_t errlen)
{
	struct gw_allow a = {0};
	size_t cap = 0, pos = 0;
	unsigned long no = 0;
	char line[GW_ALLOW_LINE_MAX + 1];
	int rc = 0;

	while (pos < len && rc == 0) {
		const char *eol = memchr(text + pos, '\n', len - pos);
		size_t llen = eol ? (size_t)(eol - text - pos) : len - pos;

		no++;
		if (llen > GW_ALLOW_LINE_MAX)
			rc = fail(err, errlen, name, no, "line over %u bytes",
				  GW_ALLOW_LINE_MAX);
		else if (memchr(text + pos, '\0', llen))
			rc = fail(err, errlen, name, no, "NUL byte");
		else {
			memcpy(line, text + pos, llen);
			line[llen] = '\0';
			rc = parse_line(&a, &cap, line, name, no, err, errlen);
		}
		pos += llen + 1;
	}
	if (rc < 0) {
		gw_allow_release(&a);
		return rc;
	}
	*ret = a;
	return 0;
}

int gw_allow_load(const char *path, bool missing_ok, struct gw_allow *ret,
		  char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	ssize_t r;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		if (rc == -ENOENT && missing_ok) {
			*ret = (struct gw_allow){0};
			return 0;
		}
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	buf = malloc(GW_ALLOW_BYTES_MAX + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while ((r = read(fd, buf + len, GW_ALLOW_BYTES_MAX + 1 - len)) > 0) {
		len += (size_t)r;
		if (len > GW_ALLOW_BYTES_MAX)
			break;
	}
	rc = r < 0 ? -errno : 0;
	close(fd);
	if (rc == 0 && len > GW_ALLOW_BYTES_MAX)
		rc = -EFBIG;
	if (rc < 0)
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
	else
		rc = gw_allow_parse(path, buf, len, ret, err, errlen);
	free(buf);
	return rc;
}

void gw_allow_release(struct gw_allow *a)
{
	free(a->pins);
	free(a->scripts_ok);
	*a = (struct gw_allow){0};
}

const struct gw_pin *gw_allow_file(const struct gw_allow *a, enum gw_eco eco,
				   const char *file)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->pins[i].eco == eco && !strcmp(a->pins[i].file, file))
			return &a->pins[i];
	return NULL;
}

bool gw_allow_project(const struct gw_allow *a, enum gw_eco eco,
		      const char *key)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->pins[i].eco == eco && !strcmp(a->pins[i].key, key))
			return true;
	return false;
}

bool gw_allow_has(const struct gw_allow *a, enum gw_eco eco, const char *key,
		  const char *version)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->pins[i].eco == eco && !strcmp(a->pins[i].key, key) &&
		    !strcmp(a->pins[i].version, version))
			return true;
	return false;
}

int gw_allow_format(const struct gw_pin *p, char *out, size_t size)
{
	int n = snprintf(out, size, "%-6s %s %s %s %s\n", gw_eco_name(p->eco),
			 p->name, p->version, p->file, p->sha256);

	return n < 0 || (size_t)n >= size ? -ENOSPC : n;
}

bool gw_allow_scripts(const struct gw_allow *a, const char *key,
		      const char *version)
{
	for (size_t i = 0; i < a->n_scripts_ok; i++)
		if (!strcmp(a->scripts_ok[i].key, key) &&
		    !strcmp(a->scripts_ok[i].version, version))
			return true;
	return false;
}
