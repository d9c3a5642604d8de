/* session_route.c: the /sessions paths of the HTTP API, matched on
 * untrusted bytes (fuzzed through al_http_route, tests/fuzz/fuzz_http.c).
 *
 *   POST   /sessions                create
 *   GET    /sessions                list: ?state=S&meta=K=V (repeatable)
 *   GET    /sessions/{id}           record
 *   DELETE /sessions/{id}           destroy
 *   POST   /sessions/{id}/extend    {"ttl_s": N}
 *   POST   /sessions/{id}/exec      run; ?wait=S waits for its end
 *   GET    /sessions/{id}/exec/{n}  reattach: ?offset=B&err_offset=B&wait=S
 *   DELETE /sessions/{id}/exec/{n}  cancel it (TERM, SIGKILL 2 s later)
 *   POST   /sessions/{id}/exec/{n}/signal  {"signal": "USR1", "grace_ms": N}
 *   POST   /sessions/{id}/files     a ustar body into ?path=D
 *   GET    /sessions/{id}/files     directory ?path=D as a ustar body
 *   POST   /sessions/{id}/fork      {"n": N}: N new sessions from it
 *   POST   /sessions/{id}/snapshot  {"name": S}: saved as snapshot S
 *
 * An id is "s-" and 24 lowercase hex digits; n is 1..10^12. Anything else
 * is 404 (no such path), 405 (the path with another method) or 400 (a bad
 * id).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "http_req.h"
#include "sess_id.h" /* dispatcher/session/: one rule for ids */

static bool sid_ok(const char *s, size_t n)
{
	return al_sess_id_ok(s, n, 's');
}

static int pick(const char *method, const char *want, enum al_route r,
		enum al_route *ret)
{
	if (strcmp(method, want))
		return -EPERM;
	*ret = r;
	return 0;
}

int al_http_session_route(const char *method, const char *path,
			  enum al_route *ret, char ret_id[AL_ID_MAX + 1])
{
	const char *p = path + 9, *slash;
	size_t n;

	if (!strcmp(p, "") || !strcmp(p, "/")) {
		if (!strcmp(method, "POST"))
			return pick(method, "POST", AL_ROUTE_SESS_CREATE, ret);
		return pick(method, "GET", AL_ROUTE_SESS_LIST, ret);
	}
	if (*p != '/')
		return -ENOENT;
	p++;
	slash = strchr(p, '/');
	n = slash ? (size_t)(slash - p) : strlen(p);
	if (!sid_ok(p, n))
		return -EINVAL;
	memcpy(ret_id, p, n);
	ret_id[n] = '\0';
	if (!slash) {
		if (!strcmp(method, "DELETE"))
			return pick(method, "DELETE", AL_ROUTE_SESS_DELETE,
				    ret);
		return pick(method, "GET", AL_ROUTE_SESS_GET, ret);
	}
	if (!strcmp(slash, "/extend"))
		return pick(method, "POST", AL_ROUTE_SESS_EXTEND, ret);
	if (!strcmp(slash, "/exec"))
		return pick(method, "POST", AL_ROUTE_SESS_EXEC, ret);
	if (!strcmp(slash, "/fork"))
		return pick(method, "POST", AL_ROUTE_SESS_FORK, ret);
	if (!strcmp(slash, "/snapshot"))
		return pick(method, "POST", AL_ROUTE_SESS_SNAPSHOT, ret);
	if (!strcmp(slash, "/files")) {
		if (!strcmp(method, "POST"))
			return pick(method, "POST", AL_ROUTE_SESS_PUT_TAR,
				    ret);
		return pick(method, "GET", AL_ROUTE_SESS_GET_TAR, ret);
	}
	if (!strncmp(slash, "/exec/", 6)) {
		const char *d = slash + 6;
		size_t k = strspn(d, "0123456789");

		if (k == 0 || k > 12 || d[0] == '0' ||
		    (d[k] && strcmp(d + k, "/signal")))
			return -ENOENT;
		ret_id[n] = '/';
		memcpy(ret_id + n + 1, d, k);
		ret_id[n + 1 + k] = '\0';
		if (d[k])
			return pick(method, "POST", AL_ROUTE_SESS_SIGNAL, ret);
		if (!strcmp(method, "DELETE"))
			return pick(method, "DELETE", AL_ROUTE_SESS_SIGNAL,
				    ret);
		return pick(method, "GET", AL_ROUTE_SESS_OUTPUT, ret);
	}
	return -ENOENT;
}
