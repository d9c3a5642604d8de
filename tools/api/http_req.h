/* http_req.h: the HTTP API's handling of untrusted request bytes: the
 * route and its id, the query (?wait=SECONDS), and JSON bodies turned into
 * jobs with the same decoder and policy check as the CLI. No I/O, no
 * sockets: tests/fuzz/fuzz_http.c feeds it arbitrary bytes.
 *
 * Bodies:
 *
 *   POST /jobs        one job object, as `airlock submit` takes, plus an
 *                     optional top-level "callback_url" string
 *   POST /jobs/batch  an array of such objects (at most AL_HTTP_BATCH_MAX)
 *
 * "callback_url" is taken out of each object before the job decoder sees
 * it (the job schema itself has no such field). Every problem of every job
 * is reported, as in `airlock validate`.
 */
#ifndef AL_HTTP_REQ_H
#define AL_HTTP_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "results.h"

#define AL_HTTP_BATCH_MAX 1000 /* jobs in one POST /jobs/batch */
#define AL_HTTP_URL_MAX	  2048 /* bytes of a callback_url */

enum al_route {
	AL_ROUTE_SUBMIT = 0, /* POST /jobs */
	AL_ROUTE_BATCH,	     /* POST /jobs/batch */
	AL_ROUTE_JOB,	     /* GET /jobs/{id} */
	AL_ROUTE_CANCEL,     /* DELETE /jobs/{id} */
	AL_ROUTE_TEMPLATES,  /* GET /templates */
	AL_ROUTE_HEALTH,     /* GET /health */
	AL_ROUTE_METRICS,    /* GET /metrics */
	/* sessions (session_route.c, docs/sessions.md); the id is the
	 * session's, "ID/N" for an exec */
	AL_ROUTE_SESS_CREATE, /* POST /sessions */
	AL_ROUTE_SESS_LIST,   /* GET /sessions */
	AL_ROUTE_SESS_GET,    /* GET /sessions/{id} */
	AL_ROUTE_SESS_DELETE, /* DELETE /sessions/{id} */
	AL_ROUTE_SESS_EXTEND, /* POST /sessions/{id}/extend */
	AL_ROUTE_SESS_EXEC,   /* POST /sessions/{id}/exec */
	AL_ROUTE_SESS_OUTPUT, /* GET /sessions/{id}/exec/{n} (reattach) */
	AL_ROUTE_SESS_SIGNAL, /* POST /sessions/{id}/exec/{n}/signal,
			       * DELETE /sessions/{id}/exec/{n} (cancel) */
	AL_ROUTE_SESS_PUT_TAR, /* POST /sessions/{id}/files?path=D (tar) */
	AL_ROUTE_SESS_GET_TAR, /* GET /sessions/{id}/files?path=D (tar) */
	AL_ROUTE_SESS_FORK,    /* POST /sessions/{id}/fork {"n": N} */
	AL_ROUTE_SESS_SNAPSHOT, /* POST /sessions/{id}/snapshot {"name": S} */
};

/* The /sessions routes (session_route.c), as al_http_route() answers. */
int al_http_session_route(const char *method, const char *path,
			  enum al_route *ret, char ret_id[AL_ID_MAX + 1]);

/* Match method and path (no query, percent-decoded). Returns 0 with *ret
 * and, for routes with one, the job id in ret_id: all of the path after
 * "/jobs/", slashes included; -ENOENT no such path (404), -EPERM the path
 * exists but not with this method (405), -EINVAL a bad job id. POST
 * "/jobs/batch" is the batch; GET or DELETE of it, the job "batch". */
int al_http_route(const char *method, const char *path, enum al_route *ret,
		  char ret_id[AL_ID_MAX + 1]);

/* Percent-decode s in place (libmicrohttpd's unescape callback, for the
 * path and the query): %XX becomes its byte, except %00, which is kept as
 * it is so that a NUL cannot cut the path short ("/jobs/a%00b" is a bad
 * id, not job "a"). Returns the new length. */
size_t al_http_unescape(char *s);

/* Does the route carry a body? (the others must come without one) */
bool al_http_route_has_body(enum al_route r);

/* The checks of a listener without a token (issue 23, finding 7). */

/* Is `host` (a Host header: NAME, NAME:PORT, IPV4:PORT, [IPV6]:PORT) one
 * a loopback client means: `localhost`, an address in 127.0.0.0/8, [::1],
 * or the host part of `listen` (HOST:PORT, [V6]:PORT; may be NULL)? A
 * browser sends the name it resolved, so a DNS-rebound name is refused.
 * NULL (no Host header) is refused too. The port is not compared. */
bool al_http_host_allowed(const char *host, const char *listen);
/* Is `type` (a Content-Type header, may be NULL) application/json, with
 * or without parameters (`; charset=utf-8`)? A browser's cross-site POST
 * without a preflight can only be text/plain, a form or multipart. */
bool al_http_json_type(const char *type);

/* ?wait=SECONDS: decimal, 0..max. 0 or -EINVAL. NULL = 0. */
int al_http_parse_wait(const char *s, uint32_t max, uint32_t *ret);

struct al_callback_shape;
struct al_http_job {
	struct al_job job; /* decoded */
	char *callback;	   /* callback_url, malloc'd, NULL = none */
	const struct al_callback_shape *shape; /* a door's (callback.h),
						  NULL = ours */
};

/* Decode a body: one job (batch false) or an array (batch true). On
 * success 0 with *ret (n entries, malloc'd; al_http_jobs_free()). On a bad
 * body -EINVAL with `d` naming every problem, paths prefixed with the
 * job's index for a batch ("[2].steps[0].sh: ..."); -E2BIG over a cap;
 * -ENOMEM. The policy check is the caller's (al_job_check_policy). */
int al_http_parse_jobs(const char *body, size_t len, bool batch,
		       struct al_http_job **ret, size_t *ret_n,
		       struct al_diags *d);
void al_http_jobs_free(struct al_http_job *jobs, size_t n);

#endif
