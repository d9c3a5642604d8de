/* doorway.h: what the HTTP API (this room) offers the front doors
 * (tools/api/doors/, one room up) and how it reaches them without
 * including them.
 *
 * The doors are handed in as a table (struct al_http_doors) in
 * al_http_opts by whoever starts the API (`airlock serve`: the CLI
 * passes &al_doors of doors/door.h). http.c routes each request
 * through the table first, then to its own routes; the doors call back
 * into the engine through the functions below. So the arrows run
 * cli -> doors -> api and cli -> api, never api -> doors: no circle.
 */
#ifndef AL_DOORWAY_H
#define AL_DOORWAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#include "http_req.h"
#include "queue.h"

struct al_http;
struct al_http_opts;

/* One request, for a door's handler. */
struct al_door_req {
	struct al_http *h;	   /* the engine: al_http_enqueue() ... */
	struct MHD_Connection *c;  /* to answer on */
	int door;		   /* which (the table's own numbers, > 0) */
	const char *method, *path; /* as routed */
	const char *body;	   /* the body (may be NULL), len bytes */
	size_t len;
};

/* The doors, as http.c sees them. Door numbers are > 0; 0 is none. */
struct al_http_doors {
	/* 0 with *ret the door of path+method; -ENOENT not a door's path;
	 * -EPERM a door's path with another method. */
	int (*route)(const char *method, const char *path, int *ret);
	/* Does a request with this method carry a body? */
	bool (*has_body)(int door, const char *method);
	/* A header that carries the bearer token besides Authorization
	 * (Judge0's X-Auth-Token), or NULL. */
	const char *(*token_header)(int door);
	/* May a body come as text/plain (a client that cannot set its type;
	 * http.c still refuses it with an Origin header)? */
	bool (*text_plain)(int door);
	/* Answer the request once its body is in. */
	enum MHD_Result (*handle)(const struct al_door_req *r);
	/* An error in the door's own shape, for http.c's refusals of a
	 * door's request (401, 403, 413, 415). */
	enum MHD_Result (*error)(int door, struct MHD_Connection *c,
				 unsigned status, const char *msg);

	/* A door that authenticates by its own keys and routes by its own
	 * headers (E2B: E2b-Sandbox-Id): does it claim this request? Then
	 * http.c checks only the Host rule and the body cap below, and hands
	 * the whole request to own_handle. NULL = no such door. */
	bool (*own_claims)(struct MHD_Connection *c, const char *url);
	size_t own_max_body; /* bytes of a claimed request's body */
	enum MHD_Result (*own_handle)(const struct al_http_opts *o,
				      struct MHD_Connection *c,
				      const char *method, const char *url,
				      const char *body, size_t len);
};

/* --- the engine, for the doors (http.c) ----------------------------------- */

#define AL_HTTP_RETRY_AFTER 5 /* s, with a 503 at the queue cap */

/* Submit n jobs, decoded by al_http_parse_jobs, the way POST /jobs/batch
 * does; ids into ret_ids. 0; -EINVAL with d (nothing enqueued); -EBUSY at
 * http.queue_cap (nothing enqueued); -ENOMEM; -EIO. */
int al_http_enqueue(struct al_http *h, struct al_http_job *jobs, size_t n,
		    char (*ret_ids)[AL_ID_MAX + 1], struct al_diags *d);
/* Wait up to wait_s (0 = not at all) for id's result; then its state,
 * and for a finished job (done, dead, cancelled) its result in *ret
 * (al_result_release). 0 or -EIO. */
int al_http_job_result(struct al_http *h, const char *id, uint32_t wait_s,
		       enum alq_state *ret_state, struct al_result *ret);
const struct al_http_opts *al_http_options(const struct al_http *h);
/* The queue's depth and more (alq_client_status) on the engine's client. */
int al_http_queue_status(struct al_http *h, struct alq_status *ret);

#endif
