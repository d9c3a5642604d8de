/* session_api.h: the /sessions handlers of the HTTP API (session_api.c),
 * called by http.c once a request is routed, authenticated and its body
 * read. The routes are in http_req.h (session_route.c). */
#ifndef AL_SESSION_API_H
#define AL_SESSION_API_H

#include <stddef.h>

#include <microhttpd.h>

#include "http.h"
#include "http_req.h"

/* `who`: the principal the request acts as (http.c's auth): sessions
 * it does not own are absent to it (docs/security.md "Principals"). */
enum MHD_Result al_http_session(const struct al_http_opts *o,
				struct MHD_Connection *c,
				const struct al_principal *who, enum al_route r,
				const char *id, const char *body, size_t len);

#endif
