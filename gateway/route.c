/* route.c: request paths and Accept headers (route.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "results.h"
#include "route.h"

#define SEGS_MAX 8

/* Percent-decode in into out (at most GW_PATH_MAX + 1 bytes); only
 * printable ASCII survives. */
static int decode(const char *in, char *out)
{
	size_t n = 0;

	for (const char *p = in; *p; p++) {
		int c = (unsigned char)*p;

		if (c == '%') {
			int hi = al_hex_digit(p[1]),
			    lo = hi < 0 ? -1 : al_hex_digit(p[2]);

			if (hi < 0 || lo < 0)
				return -EINVAL;
			c = hi << 4 | lo;
			p += 2;
		}
		if (c < 0x21 || c > 0x7e)
			return -EINVAL;
		out[n++] = (char)c;
	}
	out[n] = '\0';
	return 0;
}

/* Split the decoded path into segments; a trailing '/' is noted, an
 * empty, "." or ".." segment refuses it. */
static int split(char *path, char **seg, size_t *n, bool *trailing)
{
	char *p = path + 1;

	*n = 0;
	*trailing = false;
	if (path[0] != '/')
		return -EINVAL;
	if (*p == '\0')
		return 0;
	for (;;) {
		char *slash = strchr(p, '/');

		if (slash)
			*slash = '\0';
		if (*p == '\0' || !strcmp(p, ".") || !strcmp(p, ".."))
			return -EINVAL;
		if (*n == SEGS_MAX)
			return -ENOENT;
		seg[(*n)++] = p;
		if (!slash)
			return 0;
		p = slash + 1;
		if (*p == '\0') {
			*trailing = true;
			return 0;
		}
	}
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && !strcmp(s + a - b, suffix);
}

static int python_route(char **seg, size_t n, struct gw_route *r)
{
	if (n >= 2 && !strcmp(seg[1], "simple")) {
		if (n == 2) {
			r->kind = GW_R_PY_INDEX;
			return 0;
		}
		if (n != 3 || strlen(seg[2]) > GW_NAME_MAX)
			return -ENOENT;
		if (gw_pep503_normalize(seg[2], r->key) < 0)
			return -EINVAL;
		strcpy(r->name, seg[2]);
		r->kind = GW_R_PY_PROJECT;
		return 0;
	}
	if (n == 3 && !strcmp(seg[1], "files")) {
		size_t len = strlen(seg[2]);

		if (len > GW_FILE_MAX + 9)
			return -EINVAL;
		r->kind = GW_R_PY_FILE;
		if (ends_with(seg[2], ".metadata")) {
			seg[2][len - 9] = '\0';
			r->kind = GW_R_PY_META;
		}
		if (!gw_file_name_valid(seg[2]))
			return -EINVAL;
		strcpy(r->file, seg[2]);
		return 0;
	}
	return -ENOENT;
}

static int npm_route(char **seg, size_t n, bool trailing, struct gw_route *r)
{
	size_t name_segs = seg[0][0] == '@' ? 2 : 1;
	char name[GW_NAME_MAX + 1];
	size_t len;

	if (n < name_segs || (n != name_segs && n != name_segs + 2))
		return -ENOENT;
	len = strlen(seg[0]) + (name_segs == 2 ? 1 + strlen(seg[1]) : 0);
	if (len > GW_NAME_MAX)
		return -EINVAL;
	strcpy(name, seg[0]);
	if (name_segs == 2) {
		strcat(name, "/");
		strcat(name, seg[1]);
	}
	if (!gw_npm_name_valid(name))
		return -EINVAL;
	strcpy(r->name, name);
	strcpy(r->key, name);
	if (n == name_segs) {
		if (trailing)
			return -ENOENT;
		r->kind = GW_R_NPM_DOC;
		return 0;
	}
	if (strcmp(seg[name_segs], "-") || trailing)
		return -ENOENT;
	if (!gw_file_name_valid(seg[name_segs + 1]) ||
	    !ends_with(seg[name_segs + 1], ".tgz"))
		return -EINVAL;
	strcpy(r->file, seg[name_segs + 1]);
	r->kind = GW_R_NPM_TARBALL;
	return 0;
}

int gw_route_parse(const char *method, const char *path, struct gw_route *ret)
{
	char buf[GW_PATH_MAX + 1];
	char *seg[SEGS_MAX];
	struct gw_route r = {0};
	size_t n;
	bool trailing;
	int rc;

	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return -EOPNOTSUPP;
	if (strnlen(path, GW_PATH_MAX + 1) > GW_PATH_MAX)
		return -EMSGSIZE;
	rc = decode(path, buf);
	if (rc == 0)
		rc = split(buf, seg, &n, &trailing);
	if (rc < 0)
		return rc;
	if (n == 0)
		return -ENOENT;
	if (!strcmp(seg[0], "pypi"))
		rc = python_route(seg, n, &r);
	else if (seg[0][0] == '-')
		rc =
		    -ENOENT; /* npm's own /-/ endpoints: audit, search, login */
	else
		rc = npm_route(seg, n, trailing, &r);
	if (rc == 0)
		*ret = r;
	return rc;
}

/* The q of one media range's parameters ("; q=0.5"), 1000 = 1. */
static int qvalue(const char *params, size_t len)
{
	const char *p = params, *end = params + len;

	while (p < end) {
		while (p < end && (*p == ';' || *p == ' ' || *p == '\t'))
			p++;
		if (end - p >= 2 && (p[0] == 'q' || p[0] == 'Q') &&
		    p[1] == '=') {
			int q = 0, digits = 0;

			p += 2;
			if (p < end && *p == '1')
				return 1000;
			if (p < end && *p == '0')
				p++;
			if (p < end && *p == '.')
				for (p++; p < end && digits < 3 && *p >= '0' &&
					  *p <= '9';
				     p++, digits++)
					q = q * 10 + (*p - '0');
			while (digits++ < 3)
				q *= 10;
			return q;
		}
		while (p < end && *p != ';')
			p++;
	}
	return 1000;
}

enum gw_format gw_accept(const char *accept)
{
	int best_q[2] = {-1, -1}; /* html, json */
	const char *p = accept;
	size_t total;

	if (!accept || !*accept)
		return GW_FMT_HTML;
	total = strnlen(accept, GW_ACCEPT_MAX);
	while (p < accept + total) {
		const char *comma =
		    memchr(p, ',', (size_t)(accept + total - p));
		const char *end = comma ? comma : accept + total;
		const char *semi, *tend;
		size_t tlen;
		int fmt = -1, q;

		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		semi = p < end ? memchr(p, ';', (size_t)(end - p)) : NULL;
		tend = semi ? semi : end;
		while (tend > p && (tend[-1] == ' ' || tend[-1] == '\t'))
			tend--;
		tlen = (size_t)(tend - p);
#define IS(s) (tlen == sizeof(s) - 1 && !strncasecmp(p, s, tlen))
		if (IS("application/vnd.pypi.simple.v1+json") ||
		    IS("application/vnd.pypi.simple.latest+json"))
			fmt = 1;
		else if (IS("application/vnd.pypi.simple.v1+html") ||
			 IS("application/vnd.pypi.simple.latest+html") ||
			 IS("text/html") || IS("text/*") || IS("*/*"))
			fmt = 0;
#undef IS
		q = semi ? qvalue(semi, (size_t)(end - semi)) : 1000;
		if (fmt >= 0 && q > 0 && q > best_q[fmt])
			best_q[fmt] = q;
		p = comma ? comma + 1 : end;
	}
	if (best_q[0] < 0 && best_q[1] < 0)
		return GW_FMT_NONE;
	return best_q[1] > best_q[0] ? GW_FMT_JSON : GW_FMT_HTML;
}

int gw_accept_npm_abbreviated(const char *accept)
{
	return accept &&
	       strcasestr(accept, "application/vnd.npm.install-v1+json") !=
		   NULL;
}
