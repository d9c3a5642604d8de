/* pages.h: what the gateway answers for index routes, built from the
 * allowlist and the mirror only: the PEP 503 / 691 / 700 / 714 simple
 * pages for pip, the npm package documents. A file that is not pinned,
 * an sdist under python.wheels-only, an npm tarball with an install
 * script under npm.no-install-scripts, or a pinned file missing from the
 * mirror is in no listing. Pure but for reads through the mirror fds.
 */
#ifndef AL_GW_PAGES_H
#define AL_GW_PAGES_H

#include <stdbool.h>
#include <stddef.h>

#include "allow.h"
#include "route.h"

/* A response body being built (malloc'd). */
struct gw_buf {
	char *data; /* NUL-ended when not NULL */
	size_t len; /* bytes, without the NUL */
	size_t cap; /* bytes allocated */
};

int gw_buf_add(struct gw_buf *b, const char *s, size_t n);
int gw_buf_printf(struct gw_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void gw_buf_release(struct gw_buf *b);

/* Why a pin is not served even though it is pinned; NULL when it is. */
const char *gw_pin_excluded(const struct gw_allow *a, const struct gw_pin *p,
			    bool install_script);

/* Is a file released at MTIME (the mirror file's mtime: the upstream's
 * upload time when fetched, the time it was added otherwise) younger
 * than option min-age-days=N at NOW? Then true and why holds
 * "too_new: released DATE, younger than N days (option min-age-days)". */
bool gw_too_new(const struct gw_allow *a, int64_t mtime, int64_t now, char *why,
		size_t size);

/* /pypi/simple/: every python project with a pin. */
int gw_page_py_index(const struct gw_allow *a, enum gw_format fmt,
		     struct gw_buf *out);
/* /pypi/simple/KEY/: the pinned files of KEY found in the mirror's
 * python dir (PYDIR, a directory fd); *ret_files how many were listed. */
int gw_page_py_project(const struct gw_allow *a, int pydir, const char *key,
		       enum gw_format fmt, struct gw_buf *out,
		       size_t *ret_files);
/* /NAME for npm: the full document, or the abbreviated one; tarball URLs
 * are http://HOST/NAME/-/FILE. Only pins whose tarball in NPMDIR matches
 * its sha256 are listed; *ret_versions how many. */
int gw_page_npm(const struct gw_allow *a, int npmdir, const char *name,
		const char *host, bool abbreviated, struct gw_buf *out,
		size_t *ret_versions);

/* npm/semver order of two versions: <0, 0, >0. */
int gw_semver_cmp(const char *a, const char *b);

#endif
