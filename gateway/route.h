/* route.h: a gateway request's method, path and Accept header turned into
 * what is asked for. Pure, and the one place the gateway reads bytes a VM
 * chose before deciding anything: fuzzed (tests/fuzz/fuzz_gw.c).
 *
 * The path arrives raw (the server does not unescape it); it is capped at
 * GW_PATH_MAX, percent-decoded once (a bad escape, %00, a control byte or
 * a byte over 0x7e is refused), split on '/', and a segment that is empty
 * (but a trailing one), "." or ".." refuses the whole path. Names and file
 * names must then pass their ecosystem's checks (pkgfile.h): nothing a
 * client sends becomes a path on the host, only a key compared with pins.
 *
 * Routes (pip gets the prefix /pypi/; npm needs the registry at the root):
 *
 *   GET /pypi/simple/              the project list (PEP 503 / 691)
 *   GET /pypi/simple/NAME/         a project page; NAME PEP 503-normalised
 *   GET /pypi/files/FILE           a wheel or sdist
 *   GET /pypi/files/FILE.metadata  its core metadata (PEP 658 / 714)
 *   GET /NAME, /@SCOPE/NAME        an npm package document
 *   GET /NAME/-/FILE.tgz           an npm tarball (also scoped)
 *
 * HEAD is GET without the body. Everything else is an error.
 */
#ifndef AL_GW_ROUTE_H
#define AL_GW_ROUTE_H

#include <stddef.h>

#include "pkgfile.h"

#define GW_PATH_MAX   1024 /* bytes of a request path, raw */
#define GW_ACCEPT_MAX 1024 /* bytes of an Accept header considered */

enum gw_route_kind {
	GW_R_PY_INDEX,	 /* /pypi/simple/ */
	GW_R_PY_PROJECT, /* /pypi/simple/NAME/ */
	GW_R_PY_FILE,	 /* /pypi/files/FILE */
	GW_R_PY_META,	 /* /pypi/files/FILE.metadata */
	GW_R_NPM_DOC,	 /* /NAME */
	GW_R_NPM_TARBALL /* /NAME/-/FILE */
};

/* What a request asks for. */
struct gw_route {
	enum gw_route_kind kind;
	char name[GW_NAME_MAX + 1]; /* as asked (decoded); "" for files */
	char key[GW_NAME_MAX + 1];  /* python: PEP 503 normalised; npm: name */
	char file[GW_FILE_MAX + 1]; /* FILE routes; the dist file for META */
};

/* Parse one request. 0 and ret set; -EMSGSIZE (path too long), -EINVAL
 * (malformed: 400), -ENOENT (no such route: 404), -EOPNOTSUPP (a method
 * other than GET and HEAD: 405). */
int gw_route_parse(const char *method, const char *path, struct gw_route *ret);

/* Which simple-API format an Accept header prefers (PEP 691): the JSON,
 * the HTML, or neither (406). NULL or empty is HTML. */
enum gw_format {
	GW_FMT_HTML, /* application/vnd.pypi.simple.v1+html or text/html */
	GW_FMT_JSON, /* application/vnd.pypi.simple.v1+json */
	GW_FMT_NONE, /* nothing acceptable */
};
enum gw_format gw_accept(const char *accept);
/* Does an npm Accept header ask for the abbreviated document? */
int gw_accept_npm_abbreviated(const char *accept);

#endif
