/* session_api.c: the /sessions resources (docs/sessions.md, "HTTP"): each
 * handler is one call of dispatcher/session/sessions.h on a connection of
 * its own, so the API reaches every session of the queue wherever its VM
 * runs. Exec is long-polled: POST .../exec?wait=S answers when the exec
 * ends or S seconds pass, with what it wrote so far and the offsets to go
 * on from; GET .../exec/N?offset=B&err_offset=B&wait=S reattaches from any
 * byte, while it runs or after. With ?stream=1 both answer with the
 * output as it comes instead (session_stream.c). A client that goes away
 * stops nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "clock.h"
#include "respond.h"
#include "session_api.h"
#include "session_stream.h"
#include "sessions.h"

#define READ_MAX (1u << 20) /* bytes of each stream per response */

/* Every answer through the API's one responder (respond.h): a 500 when
 * the body cannot be made. */
static enum MHD_Result reply(struct MHD_Connection *c, unsigned status,
			     json_t *j)
{
	return al_http_send_json(c, status, j);
}

static enum MHD_Result fail(struct MHD_Connection *c, int r, const char *msg)
{
	unsigned st = r == -ENOENT	? 404
		      : r == -EINVAL	? 422
		      : r == -ERANGE	? 409
		      : r == -ESRCH	? 410
		      : r == -ETIMEDOUT ? 504
		      : r == -E2BIG	? 413
		      : r == -EALREADY	? 409
					: 503;

	return reply(c, st, json_pack("{ss}", "error", msg));
}

static enum MHD_Result text_json(struct MHD_Connection *c, unsigned st,
				 char *text)
{
	json_t *j = json_loads(text, 0, NULL);

	free(text);
	return reply(c, st, j);
}

/* POST /sessions/{id}/fork {"n": N, "saveable": B} (201, the forks) and
 * /sessions/{id}/snapshot {"name": S} (201, the snapshot). */
static enum MHD_Result fork_or_snapshot(struct MHD_Connection *c,
					struct alq_client *cl,
					const struct al_http_opts *o,
					enum al_route rt, const char *id,
					const char *body)
{
	json_t *b = json_loads(body ? body : "{}", 0, NULL);
	json_t *n = json_object_get(b, "n");
	const char *name = json_string_value(json_object_get(b, "name"));
	char *text = NULL;
	int r;

	if (!json_is_object(b) ||
	    (rt == AL_ROUTE_SESS_FORK && n &&
	     (!json_is_integer(n) || json_integer_value(n) < 1 ||
	      json_integer_value(n) > AL_SESS_FORK_MAX)) ||
	    (rt == AL_ROUTE_SESS_SNAPSHOT && !name)) {
		json_decref(b);
		return fail(c, -EINVAL,
			    rt == AL_ROUTE_SESS_FORK
				? "fork: the body must be {\"n\": N}, N 1..16"
				: "snapshot: the body must be {\"name\": S}");
	}
	if (rt == AL_ROUTE_SESS_FORK)
		r = al_sess_fork(cl, id,
				 n ? (unsigned)json_integer_value(n) : 1,
				 json_is_true(json_object_get(b, "saveable")),
				 o->cfg->sessions.create_timeout_ms, &text);
	else
		r = al_sess_snapshot(cl, id, name, &text);
	json_decref(b);
	if (r < 0) {
		free(text);
		return fail(c, r, cl->err);
	}
	return text_json(c, 201, text);
}

static uint64_t query_u64(struct MHD_Connection *c, const char *k, uint64_t max)
{
	const char *v =
	    MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
	char *end;
	unsigned long long n;

	if (!v || !*v)
		return 0;
	n = strtoull(v, &end, 10);
	return *end || n > max ? max : n;
}

static json_t *stream(struct alq_client *cl, const char *id, uint64_t n, int fd,
		      uint64_t off)
{
	char *buf = NULL;
	size_t len = 0;
	json_t *j;

	if (al_sess_exec_read(cl, id, n, fd, off, READ_MAX, &buf, &len) < 0)
		return NULL;
	j = al_sess_blob_json(buf, len);
	free(buf);
	return j;
}

/* Does exec record text `t` say state "done"? (parsed, not searched) */
static bool done(const char *t)
{
	json_t *j = json_loads(t, 0, NULL);
	const char *st = json_string_value(json_object_get(j, "state"));
	bool d = !j || (st && !strcmp(st, "done"));

	json_decref(j);
	return d;
}

/* Exec n: wait up to wait_s for its end, then its record with the
 * streams from the offsets. */
static enum MHD_Result exec_view(struct MHD_Connection *c,
				 struct alq_client *cl, const char *id,
				 uint64_t n, uint64_t off1, uint64_t off2,
				 uint32_t wait_s, unsigned status)
{
	uint64_t end = al_now_ms() + (uint64_t)wait_s * 1000;
	char *text = NULL;
	json_t *x, *s1, *s2;
	int r;

	for (;;) {
		r = al_sess_exec_get(cl, id, n, &text);
		if (r < 0)
			return fail(c, r, cl->err);
		if (done(text) || al_now_ms() >= end)
			break;
		free(text);
		al_sess_exec_nap(cl, id, n, 50); /* the end wakes it */
	}
	x = json_loads(text, 0, NULL);
	free(text);
	s1 = stream(cl, id, n, 1, off1);
	s2 = stream(cl, id, n, 2, off2);
	if (!x || !s1 || !s2) {
		json_decref(x);
		json_decref(s1);
		json_decref(s2);
		return fail(c, -EIO, cl->err[0] ? cl->err : "read failed");
	}
	json_object_set_new(x, "stream",
			    json_pack("{s:o,s:o,s:I,s:I}", "stdout", s1,
				      "stderr", s2, "offset", (json_int_t)off1,
				      "err_offset", (json_int_t)off2));
	return reply(c, status, x);
}

/* Directories as ustar (dispatcher/session/files.c): ?path=D (default
 * "."), ?max_bytes=N, ?max_files=N within AL_TAR_*_MAX. */
static enum MHD_Result files(struct MHD_Connection *c, struct alq_client *cl,
			     enum al_route rt, const char *id,
			     const char *body, size_t len)
{
	const char *path =
	    MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "path");
	uint64_t mb = query_u64(c, "max_bytes", AL_TAR_BYTES_MAX);
	uint32_t mf = (uint32_t)query_u64(c, "max_files", AL_TAR_FILES_MAX);
	struct MHD_Response *r;
	enum MHD_Result ret;
	uint8_t *tar = NULL;
	size_t n = 0;
	int x;

	if (!path || !*path)
		path = ".";
	if (!mb)
		mb = AL_TAR_BYTES_DEFAULT;
	if (!mf)
		mf = AL_TAR_FILES_DEFAULT;
	if (rt == AL_ROUTE_SESS_PUT_TAR) {
		json_t *j;

		x = al_sess_put_tar(cl, id, path, body, len, mb, mf);
		if (x < 0)
			return fail(c, x, cl->err);
		j = json_pack("{s:s,s:I}", "path", path, "bytes",
			      (json_int_t)len);
		if (j)
			al_sess_expiry(cl, id, j);
		return reply(c, 200, j);
	}
	x = al_sess_get_tar(cl, id, path, mb, mf, &tar, &n);
	if (x < 0)
		return fail(c, x, cl->err);
	r = MHD_create_response_from_buffer(n, tar, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(tar);
		return MHD_NO;
	}
	{
		/* the body is the tar: its expires_at goes in headers */
		json_t *e = json_object();
		char v[24];

		if (e && al_sess_expiry(cl, id, e) == 0 &&
		    json_object_get(e, "expires_at")) {
			snprintf(v, sizeof(v), "%lld",
				 (long long)json_integer_value(
				     json_object_get(e, "expires_at_ms")));
			MHD_add_response_header(
			    r, "X-Airlock-Expires-At",
			    json_string_value(
				json_object_get(e, "expires_at")));
			MHD_add_response_header(r, "X-Airlock-Expires-At-Ms",
						v);
		}
		json_decref(e);
	}
	MHD_add_response_header(r, "Content-Type", "application/x-tar");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

/* POST .../exec/N/signal {"signal": NAME, "grace_ms": N} (both
 * optional) or DELETE .../exec/N (an empty body: TERM, the default
 * grace): 200 {exec, signal, cancelled, grace_ms}; 409 ended, 404 no
 * such exec, 422 a signal not taken. `idn` is "ID/N". */
static enum MHD_Result signal_exec(struct MHD_Connection *c,
				   struct alq_client *cl, const char *idn,
				   const char *body)
{
	char sid[AL_ID_MAX + 1], *text = NULL;
	json_t *b = body[0] ? json_loads(body, 0, NULL) : json_object();
	json_t *sig = json_object_get(b, "signal"),
	       *g = json_object_get(b, "grace_ms");
	int64_t grace = -1;
	uint64_t n;
	int r;

	snprintf(sid, sizeof(sid), "%s", idn);
	*strchr(sid, '/') = '\0';
	n = strtoull(strchr(idn, '/') + 1, NULL, 10);
	if (!json_is_object(b) || (sig && !json_is_string(sig)) ||
	    (g && (!json_is_integer(g) || json_integer_value(g) < 0))) {
		json_decref(b);
		return fail(c, -EINVAL,
			    "signal: the body must be {\"signal\": NAME, "
			    "\"grace_ms\": N} (both optional)");
	}
	if (g)
		grace = json_integer_value(g);
	r = al_sess_exec_signal(cl, sid, n, sig ? json_string_value(sig) : NULL,
				grace, &text);
	json_decref(b);
	return r < 0 ? fail(c, r == -ERANGE ? -EINVAL : r, cl->err)
		     : text_json(c, 200, text);
}

/* One ?meta=K=V of GET /sessions into the object cls (NULL when one is
 * not K=V: the request is refused). */
static enum MHD_Result meta_arg(void *cls, enum MHD_ValueKind kind,
				const char *key, const char *value)
{
	json_t **meta = cls;
	const char *eq = value ? strchr(value, '=') : NULL;
	char *k;

	(void)kind;
	if (!*meta || strcmp(key, "meta"))
		return MHD_YES;
	if (!eq || eq == value || json_object_size(*meta) >= 64 ||
	    !(k = strndup(value, (size_t)(eq - value)))) {
		json_decref(*meta);
		*meta = NULL;
		return MHD_NO;
	}
	json_object_set_new(*meta, k, json_string(eq + 1));
	free(k);
	return MHD_YES;
}

/* GET /sessions?state=S&meta=K=V...: the records in state S whose
 * metadata holds every K=V (`session list --state S --meta K=V`). */
static enum MHD_Result list(struct MHD_Connection *c, struct alq_client *cl)
{
	const char *state =
	    MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "state");
	json_t *meta = json_object();
	char *text = NULL;
	int r;

	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, meta_arg, &meta);
	if (!meta)
		return fail(c, -EINVAL,
			    "list: ?meta= takes K=V (at most 64 of them)");
	r = al_sess_list(cl, state && *state ? state : NULL, meta, &text);
	json_decref(meta);
	return r < 0 ? fail(c, r, cl->err) : text_json(c, 200, text);
}

static enum MHD_Result route(const struct al_http_opts *o,
			     struct MHD_Connection *c, struct alq_client *cl,
			     enum al_route rt, const char *id, const char *body)
{
	uint32_t wait_s =
	    (uint32_t)query_u64(c, "wait", o->cfg->http.max_wait_s);
	char *text = NULL, sid[AL_ID_MAX + 1];
	uint64_t n;
	json_t *b;
	int r;

	switch (rt) {
	case AL_ROUTE_SESS_CREATE:
		r = al_sess_create(cl, body, o->cfg->sessions.create_timeout_ms,
				   &text);
		return r < 0 ? fail(c, r, cl->err) : text_json(c, 201, text);
	case AL_ROUTE_SESS_LIST:
		return list(c, cl);
	case AL_ROUTE_SESS_GET:
		r = al_sess_get(cl, id, &text);
		return r < 0 ? fail(c, r, cl->err) : text_json(c, 200, text);
	case AL_ROUTE_SESS_DELETE:
		r = al_sess_delete(cl, id, &text);
		return r < 0 ? fail(c, r, cl->err) : text_json(c, 200, text);
	case AL_ROUTE_SESS_EXTEND:
		b = json_loads(body, 0, NULL);
		if (!json_is_integer(json_object_get(b, "ttl_s")) ||
		    json_integer_value(json_object_get(b, "ttl_s")) < 1 ||
		    json_integer_value(json_object_get(b, "ttl_s")) >
			UINT32_MAX) {
			json_decref(b);
			return fail(c, -EINVAL,
				    "extend: the body must be "
				    "{\"ttl_s\": N}, N >= 1");
		}
		r = al_sess_extend(
		    cl, id,
		    (uint32_t)json_integer_value(json_object_get(b, "ttl_s")),
		    &text);
		json_decref(b);
		return r < 0 ? fail(c, r, cl->err) : text_json(c, 200, text);
	case AL_ROUTE_SESS_EXEC:
		r = al_sess_exec_start(
		    cl, id, body, o->cfg->http.max_wait_s * 1000u + 1000, &n);
		if (r < 0)
			return fail(c, r, cl->err);
		if (al_http_session_stream_wanted(c))
			return al_http_session_stream(o, c, cl->principal, id,
						      n, 0, 0, 201);
		return exec_view(c, cl, id, n, 0, 0, wait_s, 201);
	case AL_ROUTE_SESS_FORK:
	case AL_ROUTE_SESS_SNAPSHOT:
		return fork_or_snapshot(c, cl, o, rt, id, body);
	case AL_ROUTE_SESS_OUTPUT:
		snprintf(sid, sizeof(sid), "%s", id);
		*strchr(sid, '/') = '\0';
		n = strtoull(strchr(id, '/') + 1, NULL, 10);
		if (al_http_session_stream_wanted(c)) {
			char *rec = NULL;

			/* a missing exec is a 404 here, not a broken stream */
			r = al_sess_exec_get(cl, sid, n, &rec);
			free(rec);
			if (r < 0)
				return fail(c, r, cl->err);
			return al_http_session_stream(
			    o, c, cl->principal, sid, n,
			    query_u64(c, "offset", UINT64_MAX / 2),
			    query_u64(c, "err_offset", UINT64_MAX / 2), 200);
		}
		return exec_view(
		    c, cl, sid, n, query_u64(c, "offset", UINT64_MAX / 2),
		    query_u64(c, "err_offset", UINT64_MAX / 2), wait_s, 200);
	case AL_ROUTE_SESS_SIGNAL:
		return signal_exec(c, cl, id, body);
	default:
		return fail(c, -ENOENT, "no such path");
	}
}

/* A Redis connection acting for `who`; -errno (503 to answer). */
static int open_as(const struct al_http_opts *o, const struct al_principal *who,
		   struct alq_client *cl)
{
	_Static_assert(ALQ_PRINCIPAL_MAX == AL_PRINCIPAL_NAME_MAX,
		       "one length for principal names");
	int r = alq_client_open(cl, &o->url, o->cfg->queue.name,
				o->cfg->redis.command_timeout_ms);

	if (r == 0)
		snprintf(cl->principal, sizeof(cl->principal), "%s",
			 al_principal_session_name(who));
	return r;
}

enum MHD_Result al_http_session(const struct al_http_opts *o,
				struct MHD_Connection *c,
				const struct al_principal *who,
				enum al_route rt, const char *id,
				const char *body, size_t len)
{
	struct alq_client cl;
	char *b = NULL;
	enum MHD_Result ret;

	if (rt == AL_ROUTE_SESS_PUT_TAR || rt == AL_ROUTE_SESS_GET_TAR) {
		/* the tar as it came: bytes, NULs and all */
		if (open_as(o, who, &cl) < 0) {
			alq_client_close(&cl);
			return reply(c, 503,
				     json_pack("{ss}", "error",
					       "the queue is unavailable"));
		}
		ret = files(c, &cl, rt, id, body ? body : "", len);
		alq_client_close(&cl);
		return ret;
	}
	if (al_http_route_has_body(rt)) {
		b = malloc(len + 1);
		if (!b)
			return MHD_NO;
		memcpy(b, body ? body : "", len);
		b[len] = '\0';
		if (strlen(b) != len) {
			free(b);
			return fail(c, -EINVAL, "the body holds a NUL byte");
		}
	}
	if (open_as(o, who, &cl) < 0) {
		alq_client_close(&cl);
		free(b);
		return reply(
		    c, 503,
		    json_pack("{ss}", "error", "the queue is unavailable"));
	}
	ret = route(o, c, &cl, rt, id, b ? b : "");
	alq_client_close(&cl);
	free(b);
	return ret;
}
