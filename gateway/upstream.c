/* upstream.c: the files of one version in an upstream registry's
 * documents (upstream.h). Untrusted bytes: every string length-checked
 * before it is copied, every file name validated.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <jansson.h>

#include "upstream.h"

static __attribute__((format(printf, 3, 4))) int
fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

static bool is_hex64(const char *s, size_t n)
{
	if (n != GW_SHA256_HEX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* A URL as a document may give it: 1..GW_UP_URL_MAX visible ASCII bytes
 * (no NUL that would cut it short, no space or control byte). */
static bool url_ok(const char *s, size_t n)
{
	if (n == 0 || n > GW_UP_URL_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

static void lower_copy(char *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = (char)tolower((unsigned char)s[i]);
	out[n] = '\0';
}

int gw_up_time_parse(const char *s, int64_t *ret)
{
	struct tm tm = {0};
	int y, mo, d, h, mi, sec, n = 0, oh = 0, om = 0;
	long off = 0;
	const char *p;
	time_t t;

	if (!s ||
	    sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec,
		   &n) != 6 ||
	    n != 19)
		return -EINVAL;
	if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > 31 ||
	    h > 23 || mi > 59 || sec > 60 || h < 0 || mi < 0 || sec < 0)
		return -EINVAL;
	p = s + n;
	if (*p == '.')
		for (p++; isdigit((unsigned char)*p); p++)
			;
	if (!strcmp(p, "Z") || !strcmp(p, "z"))
		off = 0;
	else if ((*p == '+' || *p == '-') && strlen(p) == 6 &&
		 isdigit((unsigned char)p[1]) && isdigit((unsigned char)p[2]) &&
		 p[3] == ':' && isdigit((unsigned char)p[4]) &&
		 isdigit((unsigned char)p[5])) {
		oh = (p[1] - '0') * 10 + (p[2] - '0');
		om = (p[4] - '0') * 10 + (p[5] - '0');
		if (oh > 23 || om > 59)
			return -EINVAL;
		off = (oh * 60L + om) * 60L * (*p == '-' ? -1 : 1);
	} else
		return -EINVAL;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	t = timegm(&tm);
	if (t == (time_t)-1)
		return -EINVAL;
	*ret = (int64_t)t - off;
	return 0;
}

/* Does python file FILE hold KEY at VERSION (PEP 427 wheel, PEP 625
 * sdist names)? */
static bool py_file_is(const char *file, const char *key, const char *version)
{
	char stem[GW_FILE_MAX + 1], name[GW_NAME_MAX + 1],
	    norm[GW_NAME_MAX + 1];
	size_t n = strlen(file);
	char *sep, *ver;

	if (n > 4 && !strcmp(file + n - 4, ".whl")) {
		memcpy(stem, file, n - 4);
		stem[n - 4] = '\0';
		sep = strchr(stem, '-');
		if (!sep)
			return false;
		*sep = '\0';
		ver = sep + 1;
		sep = strchr(ver, '-');
		if (!sep)
			return false;
		*sep = '\0';
	} else if (n > 7 && !strcmp(file + n - 7, ".tar.gz")) {
		memcpy(stem, file, n - 7);
		stem[n - 7] = '\0';
		sep = strrchr(stem, '-');
		if (!sep)
			return false;
		*sep = '\0';
		ver = sep + 1;
	} else
		return false;
	if (strlen(stem) > GW_NAME_MAX)
		return false;
	strcpy(name, stem);
	return gw_pep503_normalize(name, norm) == 0 && !strcmp(norm, key) &&
	       !strcmp(ver, version);
}

/* Take one candidate (file name, url, sha256 or NULL) into out[*n]. */
static int take(struct gw_up_file *out, size_t max, size_t *n, const char *file,
		size_t file_len, const char *url, size_t url_len,
		const char *sha, size_t sha_len, const char *key,
		const char *version, char *err, size_t errlen)
{
	struct gw_up_file *f;
	char name[GW_FILE_MAX + 1];

	if (file_len == 0 || file_len > GW_FILE_MAX ||
	    memchr(file, '\0', file_len))
		return 0;
	memcpy(name, file, file_len);
	name[file_len] = '\0';
	if (!gw_file_name_valid(name) || !py_file_is(name, key, version))
		return 0;
	if (!url_ok(url, url_len))
		return fail(err, errlen,
			    "%s: URL empty, over %u bytes or not visible ASCII",
			    name, GW_UP_URL_MAX);
	if (!sha || !is_hex64(sha, sha_len))
		return fail(err, errlen,
			    "%s: the index gives no sha256 for it: not "
			    "fetched unchecked",
			    name);
	if (*n == max)
		return fail(err, errlen, "more than %zu files of %s==%s", max,
			    key, version);
	f = &out[(*n)++];
	memset(f, 0, sizeof(*f));
	strcpy(f->file, name);
	memcpy(f->url, url, url_len);
	f->url[url_len] = '\0';
	lower_copy(f->sha256, sha, sha_len);
	return 0;
}

static int pypi_json(const char *doc, size_t len, const char *key,
		     const char *version, struct gw_up_file *out, size_t max,
		     char *err, size_t errlen)
{
	json_t *root = json_loadb(doc, len, JSON_REJECT_DUPLICATES, NULL);
	json_t *files = json_object_get(root, "files"), *f;
	size_t i, n = 0;
	int r = 0;

	if (!json_is_object(root) || !json_is_array(files)) {
		json_decref(root);
		return fail(err, errlen, "not a PEP 691 project page");
	}
	json_array_foreach(files, i, f)
	{
		json_t *fn = json_object_get(f, "filename");
		json_t *url = json_object_get(f, "url");
		json_t *sha =
		    json_object_get(json_object_get(f, "hashes"), "sha256");
		json_t *size = json_object_get(f, "size");
		size_t before = n;

		if (!json_is_string(fn) || !json_is_string(url))
			continue;
		r = take(out, max, &n, json_string_value(fn),
			 json_string_length(fn), json_string_value(url),
			 json_string_length(url),
			 json_is_string(sha) ? json_string_value(sha) : NULL,
			 json_is_string(sha) ? json_string_length(sha) : 0, key,
			 version, err, errlen);
		if (r < 0)
			break;
		if (n == before)
			continue;
		if (json_is_integer(size) && json_integer_value(size) > 0)
			out[n - 1].size = (uint64_t)json_integer_value(size);
		gw_up_time_parse(
		    json_string_value(json_object_get(f, "upload-time")),
		    &out[n - 1].time_s);
	}
	json_decref(root);
	return r < 0 ? r : (int)n;
}

/* The value of attribute ATTR in the tag text [p, end): *ret, *ret_len. */
static bool tag_attr(const char *p, const char *end, const char *attr,
		     const char **ret, size_t *ret_len)
{
	size_t al = strlen(attr);

	for (; p + al + 1 < end; p++) {
		char q;
		const char *v, *e;

		if (strncasecmp(p, attr, al) || p[al] != '=' ||
		    !isspace((unsigned char)p[-1]))
			continue;
		q = p[al + 1];
		if (q != '"' && q != '\'')
			continue;
		v = p + al + 2;
		e = memchr(v, q, (size_t)(end - v));
		if (!e)
			return false;
		*ret = v;
		*ret_len = (size_t)(e - v);
		return true;
	}
	return false;
}

/* HTML text between anchors: "&amp;" is the only entity an index needs
 * in a URL; decoded into out. */
static size_t unescape_amp(const char *s, size_t n, char *out, size_t size)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 1 < size; i++) {
		if (s[i] == '&' && n - i >= 5 && !memcmp(s + i, "&amp;", 5)) {
			out[o++] = '&';
			i += 4;
		} else
			out[o++] = s[i];
	}
	out[o] = '\0';
	return o;
}

static int pypi_html(const char *doc, size_t len, const char *key,
		     const char *version, struct gw_up_file *out, size_t max,
		     char *err, size_t errlen)
{
	const char *p = doc, *end = doc + len;
	char url[GW_UP_URL_MAX + 2];
	size_t n = 0, anchors = 0;

	while (p < end) {
		const char *a = NULL, *gt, *close, *href, *text, *hash;
		size_t href_len, text_len, ul;

		for (; p + 2 < end; p++)
			if (p[0] == '<' && (p[1] == 'a' || p[1] == 'A') &&
			    isspace((unsigned char)p[2])) {
				a = p;
				break;
			}
		if (!a)
			break;
		gt = memchr(a, '>', (size_t)(end - a));
		if (!gt)
			break;
		close = gt + 1;
		while (close + 4 <= end && strncasecmp(close, "</a>", 4))
			close++;
		if (close + 4 > end)
			break;
		p = close + 4;
		anchors++;
		if (!tag_attr(a + 2, gt, "href", &href, &href_len) ||
		    href_len > GW_UP_URL_MAX)
			continue;
		text = gt + 1;
		text_len = (size_t)(close - text);
		while (text_len && isspace((unsigned char)*text))
			text++, text_len--;
		while (text_len && isspace((unsigned char)text[text_len - 1]))
			text_len--;
		ul = unescape_amp(href, href_len, url, sizeof(url));
		hash = memchr(url, '#', ul);
		if (hash && !strncmp(hash, "#sha256=", 8)) {
			int r =
			    take(out, max, &n, text, text_len, url,
				 (size_t)(hash - url), hash + 8,
				 strlen(hash + 8), key, version, err, errlen);
			if (r < 0)
				return r;
		} else {
			int r = take(out, max, &n, text, text_len, url,
				     hash ? (size_t)(hash - url) : ul, NULL, 0,
				     key, version, err, errlen);
			if (r < 0)
				return r;
		}
	}
	if (!anchors && !memmem(doc, len, "<html", 5) &&
	    !memmem(doc, len, "<!DOCTYPE", 9))
		return fail(err, errlen, "not a PEP 503 project page");
	return (int)n;
}

int gw_up_pypi_files(const char *doc, size_t len, bool json, const char *key,
		     const char *version, struct gw_up_file *out, size_t max,
		     char *err, size_t errlen)
{
	if (len > GW_UP_DOC_MAX)
		return -EFBIG;
	if (max > GW_UP_FILES_MAX)
		max = GW_UP_FILES_MAX;
	return json ? pypi_json(doc, len, key, version, out, max, err, errlen)
		    : pypi_html(doc, len, key, version, out, max, err, errlen);
}

int gw_up_npm_file(const char *doc, size_t len, const char *name,
		   const char *version, struct gw_up_file *out, char *err,
		   size_t errlen)
{
	json_t *root, *v, *dist, *tb, *integ, *t;
	const char *url, *base, *q;
	size_t url_len, base_len;
	int r = 1;

	if (len > GW_UP_DOC_MAX)
		return -EFBIG;
	root = json_loadb(doc, len, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(root) ||
	    !json_is_object(json_object_get(root, "versions"))) {
		json_decref(root);
		return fail(err, errlen, "not an npm package document");
	}
	v = json_object_get(json_object_get(root, "versions"), version);
	if (!v) {
		json_decref(root);
		return 0;
	}
	dist = json_object_get(v, "dist");
	tb = json_object_get(dist, "tarball");
	integ = json_object_get(dist, "integrity");
	memset(out, 0, sizeof(*out));
	if (!json_is_string(tb) ||
	    !url_ok(json_string_value(tb), json_string_length(tb))) {
		r = fail(err, errlen, "%s@%s: no dist.tarball URL", name,
			 version);
		goto out;
	}
	if (!json_is_string(integ) ||
	    json_string_length(integ) != 7 + GW_SHA512_B64 ||
	    strncmp(json_string_value(integ), "sha512-", 7) ||
	    strspn(json_string_value(integ) + 7,
		   "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		   "0123456789+/=") != GW_SHA512_B64) {
		r = fail(err, errlen,
			 "%s@%s: the registry gives no sha512 integrity: not "
			 "fetched unchecked",
			 name, version);
		goto out;
	}
	url = json_string_value(tb);
	url_len = json_string_length(tb);
	q = memchr(url, '?', url_len);
	base_len = q ? (size_t)(q - url) : url_len;
	base = url;
	for (size_t i = 0; i < base_len; i++)
		if (url[i] == '/')
			base = url + i + 1;
	base_len -= (size_t)(base - url);
	if (base_len == 0 || base_len > GW_FILE_MAX) {
		r = fail(err, errlen, "%s@%s: no tarball file name", name,
			 version);
		goto out;
	}
	memcpy(out->file, base, base_len);
	out->file[base_len] = '\0';
	if (!gw_file_name_valid(out->file) || base_len < 5 ||
	    strcmp(out->file + base_len - 4, ".tgz")) {
		r = fail(err, errlen, "%s@%s: tarball name not a valid .tgz",
			 name, version);
		goto out;
	}
	memcpy(out->url, url, url_len);
	out->url[url_len] = '\0';
	memcpy(out->sha512, json_string_value(integ) + 7, GW_SHA512_B64);
	out->sha512[GW_SHA512_B64] = '\0';
	t = json_object_get(json_object_get(root, "time"), version);
	gw_up_time_parse(json_string_value(t), &out->time_s);
out:
	json_decref(root);
	return r;
}
