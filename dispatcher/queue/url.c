/* url.c: a Redis server's address from a redis://, unix:// or
 * redis+sentinel:// URL (struct alq_url, url.h), and how it is shown. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "internal.h"
#include "queue.h"
#include "sentinel.h"

/* --- URLs ------------------------------------------------------------------
 */

/* Copy s[0..n) percent-decoded into dst; -EINVAL on a bad escape/overflow. */
static int decode(char *dst, size_t size, const char *s, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];

		if (c == '%') {
			if (i + 2 >= n || al_hex_digit(s[i + 1]) < 0 ||
			    al_hex_digit(s[i + 2]) < 0)
				return -EINVAL;
			c = al_hex_digit(s[i + 1]) * 16 +
			    al_hex_digit(s[i + 2]);
			i += 2;
		}
		if (c == 0 || o + 1 >= size)
			return -EINVAL;
		dst[o++] = (char)c;
	}
	dst[o] = '\0';
	return 0;
}

/* "[USER]:PASSWORD@" at the start of s (up to `end`), if any. */
static int parse_userinfo(const char **s, const char *end, struct alq_url *u)
{
	const char *at = memchr(*s, '@', (size_t)(end - *s));
	const char *colon;

	if (!at)
		return 0;
	colon = memchr(*s, ':', (size_t)(at - *s));
	if (!colon)
		return -EINVAL; /* "user@" without a password means nothing */
	if (decode(u->user, sizeof(u->user), *s, (size_t)(colon - *s)) < 0 ||
	    decode(u->pass, sizeof(u->pass), colon + 1,
		   (size_t)(at - colon - 1)) < 0)
		return -EINVAL;
	*s = at + 1;
	return 0;
}

static int parse_uint(const char *s, size_t n, unsigned long max,
		      unsigned long *ret)
{
	uint64_t v;

	if (al_decimal_parse(s, n, max, &v) < 0)
		return -EINVAL;
	*ret = (unsigned long)v;
	return 0;
}

static int parse_tcp(const char *s, struct alq_url *u)
{
	const char *end = s + strlen(s);
	const char *slash, *hend, *port = NULL;
	unsigned long v;

	slash = strchr(s, '/');
	if (slash)
		end = slash;
	if (parse_userinfo(&s, end, u) < 0)
		return -EINVAL;
	if (*s == '[') { /* [v6]:port */
		hend = memchr(s, ']', (size_t)(end - s));
		if (!hend)
			return -EINVAL;
		s++;
		if (hend + 1 < end) {
			if (hend[1] != ':')
				return -EINVAL;
			port = hend + 2;
		}
	} else {
		hend = memchr(s, ':', (size_t)(end - s));
		if (hend)
			port = hend + 1;
		else
			hend = end;
	}
	if (hend == s || (size_t)(hend - s) >= sizeof(u->host))
		return -EINVAL;
	memcpy(u->host, s, (size_t)(hend - s));
	u->host[hend - s] = '\0';
	u->port = 6379;
	if (port) {
		if (parse_uint(port, (size_t)(end - port), 65535, &v) < 0 ||
		    v == 0)
			return -EINVAL;
		u->port = (int)v;
	}
	if (slash && slash[1]) {
		if (parse_uint(slash + 1, strlen(slash + 1), 1u << 20, &v) < 0)
			return -EINVAL;
		u->db = (unsigned)v;
	}
	return 0;
}

static int parse_unix(const char *s, struct alq_url *u)
{
	const char *end = s + strlen(s);
	const char *q = strchr(s, '?');
	unsigned long v;

	if (q)
		end = q;
	if (parse_userinfo(&s, end, u) < 0 || *s != '/' ||
	    (size_t)(end - s) >= sizeof(u->path))
		return -EINVAL;
	memcpy(u->path, s, (size_t)(end - s));
	u->path[end - s] = '\0';
	if (q) {
		if (strncmp(q, "?db=", 4) ||
		    parse_uint(q + 4, strlen(q + 4), 1u << 20, &v) < 0)
			return -EINVAL;
		u->db = (unsigned)v;
	}
	u->unix_ = true;
	return 0;
}

static int parse_sentinel(const char *s, struct alq_url *u)
{
	const char *slash = strchr(s, '/');

	if (parse_userinfo(&s, slash ? slash : s + strlen(s), u) < 0)
		return -EINVAL;
	return alq_sentinel_parse(s, u);
}

int alq_url_parse(const char *url, struct alq_url *ret)
{
	struct alq_url u;
	int r;

	memset(&u, 0, sizeof(u));
	if (!strncmp(url, "redis://", 8))
		r = parse_tcp(url + 8, &u);
	else if (!strncmp(url, "unix://", 7))
		r = parse_unix(url + 7, &u);
	else if (!strncmp(url, "redis+sentinel://", 17))
		r = parse_sentinel(url + 17, &u);
	else
		r = -EINVAL;
	if (r == 0)
		*ret = u;
	return r;
}

void alq_url_display(const struct alq_url *u, char *buf, size_t len)
{
	if (u->unix_)
		snprintf(buf, len, "unix:%s", u->path);
	else if (u->sentinel_)
		snprintf(buf, len, "sentinel %s via %s:%d%s", u->master,
			 u->sentinel[0].host, u->sentinel[0].port,
			 u->n_sentinels > 1 ? " (and more)" : "");
	else
		snprintf(buf, len, "%s:%d", u->host, u->port);
}
