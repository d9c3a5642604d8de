/* pkgfetch.c: capped GETs from an upstream registry (pkgfetch.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "pkgfetch.h"

#define REDIRECTS_MAX 5

struct sink {
	char *buf;
	size_t len, cap, max;
	bool over;
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	size_t add = size * n;

	if (add > s->max - s->len) {
		s->over = true;
		return 0;
	}
	if (s->len + add + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 65536;
		char *grown;

		while (cap < s->len + add + 1)
			cap *= 2;
		if (cap > s->max + 1)
			cap = s->max + 1;
		grown = realloc(s->buf, cap);
		if (!grown)
			return 0;
		s->buf = grown;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, p, add);
	s->len += add;
	return add;
}

static __attribute__((format(printf, 4, 5))) int
say(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

/* scheme://host:port of URL into out ("" when curl cannot parse it). */
static void origin(const char *url, char *out, size_t size)
{
	CURLU *h = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL;

	out[0] = '\0';
	if (h && curl_url_set(h, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(h, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
	    curl_url_get(h, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
	    curl_url_get(h, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) ==
		CURLUE_OK)
		snprintf(out, size, "%s://%s:%s", scheme, host, port);
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(h);
}

int al_fetch_resolve(const char *base, const char *rel, char *out, size_t size)
{
	CURLU *h = curl_url();
	char *u = NULL, *scheme = NULL;
	int rc = -EINVAL;

	if (h && curl_url_set(h, CURLUPART_URL, base, 0) == CURLUE_OK &&
	    curl_url_set(h, CURLUPART_URL, rel, 0) == CURLUE_OK &&
	    curl_url_get(h, CURLUPART_URL, &u, 0) == CURLUE_OK &&
	    curl_url_get(h, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
	    (!strcmp(scheme, "http") || !strcmp(scheme, "https")))
		rc = strlen(u) < size ? 0 : -ENAMETOOLONG;
	if (rc == 0)
		strcpy(out, u);
	curl_free(u);
	curl_free(scheme);
	curl_url_cleanup(h);
	return rc;
}

/* One request, no redirect followed: *ret_status, *ret_location. */
static int get_once(const char *url, const char *accept, struct sink *s,
		    struct al_fetch_body *ret, long *ret_status, char *location,
		    size_t loclen, char *err, size_t errlen)
{
	CURL *c = curl_easy_init();
	struct curl_slist *hdr = NULL;
	char ebuf[CURL_ERROR_SIZE] = "", hbuf[256];
	char *ct = NULL, *loc = NULL;
	CURLcode cr;
	int rc = 0;

	if (!c)
		return say(err, errlen, -ENOMEM, "curl: cannot start");
	if (accept) {
		snprintf(hbuf, sizeof(hbuf), "Accept: %s", accept);
		hdr = curl_slist_append(hdr, hbuf);
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 15L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 30L);
	curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)s->max);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "airlock-packages-fetch");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
	cr = curl_easy_perform(c);
	if (cr == CURLE_FILESIZE_EXCEEDED || s->over) {
		rc = say(err, errlen, -EFBIG,
			 "%s: larger than %zu bytes: refused", url, s->max);
		goto out;
	}
	if (cr != CURLE_OK) {
		rc =
		    say(err, errlen,
			cr == CURLE_URL_MALFORMAT ||
				cr == CURLE_UNSUPPORTED_PROTOCOL
			    ? -EINVAL
			    : -EHOSTUNREACH,
			"%s: %s", url, ebuf[0] ? ebuf : curl_easy_strerror(cr));
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, ret_status);
	if (curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
		snprintf(ret->ctype, sizeof(ret->ctype), "%s", ct);
	location[0] = '\0';
	if (curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &loc) == CURLE_OK &&
	    loc) {
		if (strlen(loc) >= loclen)
			rc = say(err, errlen, -EPROTO,
				 "%s: redirect URL too long", url);
		else
			strcpy(location, loc);
	}
out:
	curl_slist_free_all(hdr);
	curl_easy_cleanup(c);
	return rc;
}

int al_fetch_get(const char *url, const char *accept, size_t max,
		 struct al_fetch_body *ret, char *err, size_t errlen)
{
	struct sink s = {.max = max};
	char cur[sizeof(ret->url)], loc[sizeof(ret->url)], o1[512], o2[512];
	int rc;

	memset(ret, 0, sizeof(*ret));
	if (strlen(url) >= sizeof(cur))
		return say(err, errlen, -EINVAL, "URL too long");
	strcpy(cur, url);
	for (int hop = 0;; hop++) {
		long status = 0;

		s.len = 0;
		s.over = false;
		ret->ctype[0] = '\0';
		rc = get_once(cur, accept, &s, ret, &status, loc, sizeof(loc),
			      err, errlen);
		if (rc < 0)
			break;
		if (status >= 200 && status < 300) {
			snprintf(ret->url, sizeof(ret->url), "%s", cur);
			break;
		}
		if (status >= 300 && status < 400 && loc[0]) {
			origin(cur, o1, sizeof(o1));
			origin(loc, o2, sizeof(o2));
			if (!o1[0] || strcmp(o1, o2)) {
				rc = say(err, errlen, -EPERM,
					 "%s: redirected to %.300s, another "
					 "origin than the upstream's: refused",
					 cur, loc);
				break;
			}
			if (hop == REDIRECTS_MAX) {
				rc = say(err, errlen, -EPROTO,
					 "%s: more than %d redirects", url,
					 REDIRECTS_MAX);
				break;
			}
			strcpy(cur, loc);
			continue;
		}
		rc = say(err, errlen,
			 status == 404 || status == 410 ? -ENOENT : -EPROTO,
			 "%s: HTTP %ld", cur, status);
		break;
	}
	if (rc < 0) {
		free(s.buf);
		return rc;
	}
	if (!s.buf && !(s.buf = malloc(1)))
		return say(err, errlen, -ENOMEM, "out of memory");
	s.buf[s.len] = '\0';
	ret->data = s.buf;
	ret->len = s.len;
	return 0;
}

void al_fetch_body_release(struct al_fetch_body *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
}
