/* lookalike.c: near names (lookalike.h). Names are at most GW_NAME_MAX
 * bytes, so the quadratic edit check costs at most a few microseconds a
 * pair; it runs only for refused names. */
#include <stdio.h>
#include <string.h>

#include "lookalike.h"

static const char *const popular_python[] = {
    "requests",
    "numpy",
    "pandas",
    "urllib3",
    "setuptools",
    "boto3",
    "botocore",
    "six",
    "python-dateutil",
    "pyyaml",
    "typing-extensions",
    "certifi",
    "idna",
    "charset-normalizer",
    "cryptography",
    "pip",
    "wheel",
    "colorama",
    "jinja2",
    "markupsafe",
    "click",
    "attrs",
    "packaging",
    "pyjwt",
    "python-jwt",
    "pytest",
    "scipy",
    "matplotlib",
    "pillow",
    "flask",
    "django",
    "beautifulsoup4",
    "lxml",
    "sqlalchemy",
    "pydantic",
    "tensorflow",
    "torch",
    "scikit-learn",
    "openai",
    "httpx",
    "aiohttp",
    "protobuf",
    "grpcio",
    "psycopg2",
    "redis",
    "tqdm",
    "rich",
    NULL,
};

static const char *const popular_npm[] = {
    "lodash",	    "react",	  "react-dom",	 "express",    "axios",
    "chalk",	    "commander",  "debug",	 "moment",     "uuid",
    "typescript",   "webpack",	  "vue",	 "next",       "eslint",
    "jest",	    "dotenv",	  "cross-env",	 "request",    "colors",
    "async",	    "underscore", "jquery",	 "yargs",      "semver",
    "minimist",	    "glob",	  "rimraf",	 "mkdirp",     "ws",
    "socket.io",    "mongoose",	  "body-parser", "node-fetch", "event-stream",
    "ua-parser-js", "coa",	  "rc",		 NULL,
};

const char *const *gw_popular_names(enum gw_eco eco)
{
	return eco == GW_NPMJS ? popular_npm : popular_python;
}

/* Fold confusable letters into one spelling. */
static void fold(const char *in, char *out)
{
	size_t n = 0;

	for (const char *p = in; *p; p++) {
		if (p[0] == 'r' && p[1] == 'n') {
			out[n++] = 'm';
			p++;
		} else if (p[0] == 'v' && p[1] == 'v') {
			out[n++] = 'w';
			p++;
		} else if (*p == '1' || *p == 'i' || *p == 'l' || *p == '|') {
			out[n++] = 'l';
		} else if (*p == '0') {
			out[n++] = 'o';
		} else {
			out[n++] = *p;
		}
	}
	out[n] = '\0';
}

/* Exactly one insert, delete or replace apart. */
static bool one_edit(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i = 0;

	if (la + 1 < lb || lb + 1 < la)
		return false;
	if (la < lb) { /* make a the longer */
		const char *t = a;
		size_t tl = la;
		a = b, b = t, la = lb, lb = tl;
	}
	while (i < lb && a[i] == b[i])
		i++;
	if (la == lb)
		return i < la && !strcmp(a + i + 1, b + i + 1);
	return !strcmp(a + i + 1, b + i);
}

static bool swapped(const char *a, const char *b)
{
	size_t n = strlen(a), i = 0;

	if (n != strlen(b))
		return false;
	while (i < n && a[i] == b[i])
		i++;
	return i + 1 < n && a[i] == b[i + 1] && a[i + 1] == b[i] &&
	       !strcmp(a + i + 2, b + i + 2);
}

/* The -separated words of s, sorted, joined by -, into out. */
static void sorted_words(const char *s, char *out)
{
	char buf[GW_NAME_MAX + 1], *w[32], *save = NULL;
	size_t n = 0, len = 0;

	snprintf(buf, sizeof(buf), "%s", s);
	for (char *t = strtok_r(buf, "-", &save); t && n < 32;
	     t = strtok_r(NULL, "-", &save))
		w[n++] = t;
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(w[j - 1], w[j]) > 0; j--) {
			char *t = w[j];
			w[j] = w[j - 1], w[j - 1] = t;
		}
	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(out + len, GW_NAME_MAX + 1 - len,
					"%s%s", i ? "-" : "", w[i]);
}

static bool plus_suffix(const char *name, const char *ref)
{
	size_t lr = strlen(ref), ln = strlen(name);
	const char *rest = name + lr;
	bool digits = true;

	if (ln <= lr || strncmp(name, ref, lr) || lr < 4)
		return false;
	for (const char *p = rest; *p; p++)
		digits = digits && *p >= '0' && *p <= '9';
	return digits || (rest[0] == '-' && ln - lr <= 7);
}

bool gw_lookalike_pair(const char *name, const char *ref,
		       char why[GW_LOOKALIKE_WHY_MAX])
{
	char a[GW_NAME_MAX + 1], b[GW_NAME_MAX + 1];
	char fa[GW_NAME_MAX + 1], fb[GW_NAME_MAX + 1];
	const char *reason = NULL;

	/* npm names are normalised the PEP 503 way too for comparing:
	 * lo_dash and lo.dash are lo-dash to a reader */
	if (gw_pep503_normalize(name[0] == '@' ? name + 1 : name, a) < 0 ||
	    gw_pep503_normalize(ref[0] == '@' ? ref + 1 : ref, b) < 0)
		return false;
	if (!strcmp(name, ref))
		return false;
	fold(a, fa);
	fold(b, fb);
	if (!strcmp(a, b))
		reason = "same name once normalised";
	else if (!strcmp(fa, fb))
		reason = "confusable letters";
	else if (swapped(a, b))
		reason = "two letters swapped";
	else if (strlen(b) >= 4 && (one_edit(a, b) || one_edit(fa, fb)))
		reason = "one letter away";
	else {
		sorted_words(a, fa);
		sorted_words(b, fb);
		if (strchr(a, '-') && !strcmp(fa, fb))
			reason = "same words in another order";
		else if (plus_suffix(a, b))
			reason = "a known name plus a suffix";
	}
	if (!reason)
		return false;
	snprintf(why, GW_LOOKALIKE_WHY_MAX, "%s", reason);
	return true;
}

bool gw_lookalike(const struct gw_allow *a, enum gw_eco eco, const char *name,
		  char near[GW_NAME_MAX + 1], char why[GW_LOOKALIKE_WHY_MAX])
{
	const char *const *pop = gw_popular_names(eco);

	for (size_t i = 0; a && i < a->n; i++)
		if (a->pins[i].eco == eco &&
		    gw_lookalike_pair(name, a->pins[i].key, why)) {
			snprintf(near, GW_NAME_MAX + 1, "%s", a->pins[i].key);
			return true;
		}
	for (size_t i = 0; pop[i]; i++)
		if (gw_lookalike_pair(name, pop[i], why)) {
			snprintf(near, GW_NAME_MAX + 1, "%s", pop[i]);
			return true;
		}
	return false;
}
