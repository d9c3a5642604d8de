/* pkgfetch.h: one HTTP GET from an upstream registry for `airlock
 * packages fetch` (cmd_packages.c), over libcurl, into memory.
 *
 * The upstream is trusted to name files and hashes, not to be honest
 * about sizes or to stay where it was configured: the body is capped
 * (max) before it is allocated (a Content-Length over it is refused at
 * once, a body that grows past it is cut), a redirect is followed only
 * within the same origin (scheme, host, port) and at most 5 times, only
 * http and https are spoken, and a stalled transfer (under 1 byte/s for
 * 30 s) ends. Never used by the gateway, which has no upstream at all.
 */
#ifndef AL_CLI_PKGFETCH_H
#define AL_CLI_PKGFETCH_H

#include <stddef.h>

/* What one GET returned. */
struct al_fetch_body {
	char *data;	    /* malloc'd, NUL-ended; NULL on failure */
	size_t len;	    /* bytes, without the NUL */
	char ctype[128];    /* Content-Type, "" if none */
	char url[2048 + 1]; /* the URL finally answered (after redirects) */
};

/* GET URL with header Accept: ACCEPT (NULL for none), at most max bytes.
 * 0 and ret filled; else -errno with one line in err: -EFBIG (over max),
 * -EPERM (a redirect elsewhere), -ENOENT (HTTP 404/410), -EPROTO (another
 * HTTP status), -EHOSTUNREACH (connect or transfer failure), -EINVAL (a
 * URL curl refuses). */
int al_fetch_get(const char *url, const char *accept, size_t max,
		 struct al_fetch_body *ret, char *err, size_t errlen);
void al_fetch_body_release(struct al_fetch_body *b);

/* REL resolved against BASE (an absolute URL) into out. 0, -EINVAL,
 * -ENAMETOOLONG. Only http and https results are accepted. */
int al_fetch_resolve(const char *base, const char *rel, char *out, size_t size);

#endif
