/* http.h: the HTTP API and metrics endpoint of `airlock serve`
 * (docs/http.md is the user's view).
 *
 * Theory of operation. libmicrohttpd runs the listener in threads of its
 * own, one per connection (at most http.max_connections), next to the
 * dispatcher's libuv loop in the main thread: a handler may block (on
 * Redis, on ?wait=) without holding up a worker, the dispatcher or another
 * client. Handlers talk to Redis through a blocking client of their own,
 * opened per request, exactly as the CLI does: the API adds no queue
 * protocol of its own, only the same submit/wait/result steps.
 *
 * Every request is, in order: routed (http_req.c; 404/405), with no token
 * its Host checked (a loopback name or the listen address: no DNS
 * rebinding; 403), authenticated (a bearer token compared in constant
 * time with every configured one, naming the principal the request acts
 * as, or, with no token configured, a loopback peer acting as the
 * operator; 401/403), a body's
 * type checked (application/json, else 415: no cross-site text/plain
 * POST), capped (a body over
 * http.max_body_bytes gets 413, headers over 16 KiB get 431 from
 * libmicrohttpd itself), read, then answered. A connection idle for
 * http.timeout_s is closed, so slow clients cannot hold threads for long.
 *
 * The metrics listener ([metrics] listen) is a second daemon serving only
 * GET /metrics and GET /health, without authentication: bind it where
 * the scraper can reach it and nobody else.
 */
#ifndef AL_HTTP_H
#define AL_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "callback.h"
#include "config.h"
#include "doorway.h"
#include "metrics.h"
#include "principal.h"
#include "queue.h"

struct al_http_opts {
	const char *listen;		/* HOST:PORT */
	bool metrics_only;		/* only /metrics and /health */
	struct al_config *cfg;		/* http.*, templates, state dir */
	const struct al_policy *policy; /* for submitted jobs */
	struct alq_url url;		/* Redis */
	struct al_metrics *metrics;	/* rendered at /metrics */
	struct al_callbacks *callbacks; /* NULL = callbacks off */
	/* the bearer tokens and whose they are (principal.h): n == 0 =
	 * loopback clients only, each acting as the operator */
	struct al_principals principals;
	/* the front doors (doorway.h; `airlock serve` hands &al_doors of
	 * doors/door.h), NULL = none */
	const struct al_http_doors *doors;
};

struct al_http;

/* Listen and serve; `o` and its pointees must outlive al_http_stop().
 * 0, or -errno with err set (-EPERM: no token and a listen address that
 * is not loopback; the metrics listener is exempt). */
int al_http_start(const struct al_http_opts *o, struct al_http **ret, char *err,
		  size_t errlen);
/* Close the listener and every connection (a handler blocked on ?wait=
 * ends at its Redis timeout), then free. */
void al_http_stop(struct al_http *h);

#endif
