/* e2b.c: E2B's control plane (spec/openapi.yml of e2b-dev/E2B) onto
 * sessions, and the in-VM plane's door: who asks, which sandbox.
 *
 *   POST   /sandboxes, /v2/sandboxes   al_sess_create (201 Sandbox)
 *   GET    /sandboxes, /v2/sandboxes   al_sess_list (state, metadata,
 *                                      limit, nextToken; X-Next-Token)
 *   GET    /sandboxes/{id}             al_sess_get
 *   DELETE /sandboxes/{id}             al_sess_delete (204)
 *   POST   /sandboxes/{id}/timeout     al_sess_extend (204)
 *   POST   /sandboxes/{id}/refreshes   al_sess_extend (204)
 *   POST   /sandboxes/{id}/connect     al_sess_get + extend (200 Sandbox)
 *   POST   /sandboxes/{id}/fork        al_sess_fork (201)
 *   POST   /sandboxes/{id}/pause       refused (409): see compat-e2b.md
 *
 * Errors are E2B's {"code": HTTP, "message": ...}: 404 a sandbox that is
 * unknown, ended or another key's (one answer for all three), 429 with
 * Retry-After when no host has room, 401 a missing or unknown key.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <jansson.h>

#include "e2b.h"
#include "principal.h"
#include "proto.h"
#include "results.h"
#include "sessions.h"

#define RETRY_AFTER_S 5
#define LIST_MAX      1000 /* sandboxes of one page, at most */
#define DEFAULT_TTL_S 300  /* E2B's default sandbox timeout */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned st, json_t *j,
			     const char *hname, const char *hval)
{
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	struct MHD_Response *r;
	enum MHD_Result ret;

	json_decref(j);
	if (st == 204) {
		free(s);
		s = NULL;
	} else if (!s) {
		return MHD_NO;
	}
	r = MHD_create_response_from_buffer(s ? strlen(s) : 0, s,
					    MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(s);
		return MHD_NO;
	}
	if (s)
		MHD_add_response_header(r, "Content-Type", "application/json");
	if (hname)
		MHD_add_response_header(r, hname, hval);
	ret = MHD_queue_response(c, st, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result err(struct MHD_Connection *c, unsigned st,
			   const char *msg)
{
	char ra[8];

	snprintf(ra, sizeof(ra), "%d", RETRY_AFTER_S);
	return reply(c, st, json_pack("{siss}", "code", st, "message", msg),
		     st == 429 ? "Retry-After" : NULL, ra);
}

/* The E2B status of a session operation's -errno. */
static unsigned status_of(int r)
{
	switch (r) {
	case -ENOENT:
	case -ESRCH:
		return 404;
	case -EINVAL:
	case -ERANGE:
		return 400;
	case -ETIMEDOUT:
	case -EBUSY:
	case -EAGAIN:
		return 429;
	default:
		return 500;
	}
}

bool al_e2b_claims(struct MHD_Connection *c, const char *url)
{
	static const char *const prefixes[] = {
	    "/sandboxes", "/v2/sandboxes", "/process.Process/",
	    "/filesystem.Filesystem/", "/files"};

	if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Id"))
		return true;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t n = strlen(prefixes[i]);

		if (!strncmp(url, prefixes[i], n) &&
		    (url[n] == '\0' || url[n] == '/' ||
		     prefixes[i][n - 1] == '/'))
			return true;
	}
	return false;
}

/* The principal name of API key `key` into name ("" = an operator). 0, or
 * the status to answer (401). */
static unsigned key_principal(const struct al_http_opts *o, const char *key,
			      char name[ALQ_PRINCIPAL_MAX + 1])
{
	const struct al_principal *who;
	uint8_t d[AL_SHA256_LEN];

	if (!al_e2b_key_valid(key))
		return 401;
	if (o->principals.n) {
		who = al_principals_find(&o->principals, key);
		if (!who)
			return 401;
		snprintf(name, ALQ_PRINCIPAL_MAX + 1, "%s",
			 al_principal_session_name(who));
		return 0;
	}
	al_sha256(key, strlen(key), d);
	memcpy(name, "e2b-", 4);
	for (size_t i = 0; i < 16; i++)
		snprintf(name + 4 + 2 * i, 3, "%02x", d[i]);
	return 0;
}

static int open_client(const struct al_http_opts *o, struct alq_client *cl,
		       const char *principal)
{
	int r = alq_client_open(cl, &o->url, o->cfg->queue.name,
				o->cfg->redis.command_timeout_ms);

	if (r == 0)
		snprintf(cl->principal, sizeof(cl->principal), "%s", principal);
	return r;
}

/* A session record (JSON text, consumed) as E2B's SandboxDetail. */
static json_t *sandbox_json(json_t *rec, bool with_token)
{
	json_t *meta = json_object(), *m = json_object_get(rec, "metadata");
	const char *state = json_string_value(json_object_get(rec, "state"));
	const char *k, *tok = NULL;
	json_t *v, *out;

	json_object_foreach(m, k, v)
	{
		if (!strcmp(k, AL_E2B_META_TOKEN))
			tok = json_string_value(v);
		else if (strncmp(k, "_e2b", 4) && json_is_string(v))
			json_object_set(meta, k, v);
	}
	out = json_pack(
	    "{s:O,s:O,s:s,s:s,s:o,s:O,s:O,s:i,s:i,s:i,s:s}", "sandboxID",
	    json_object_get(rec, "id"), "templateID",
	    json_object_get(rec, "template"), "clientID", "airlock",
	    "envdVersion", AL_E2B_ENVD_VERSION, "metadata", meta, "startedAt",
	    json_object_get(rec, "created_at") ?: json_null(), "endAt",
	    json_object_get(rec, "expires_at") ?: json_null(), "cpuCount", 1,
	    "memoryMB", 512, "diskSizeMB", 0, "state",
	    state && !strcmp(state, "hibernated") ? "paused" : "running");
	if (out && with_token && tok)
		json_object_set_new(out, "envdAccessToken", json_string(tok));
	if (out)
		json_object_set_new(out, "domain", json_null());
	return out;
}

static json_t *parse(const char *text)
{
	json_t *j = text ? json_loads(text, 0, NULL) : NULL;

	free((void *)text);
	return j;
}

static bool ended(json_t *rec)
{
	const char *s = json_string_value(json_object_get(rec, "state"));

	return !s || !strcmp(s, "ended");
}

/* The create body of a POST /sandboxes body b, or NULL with *why. */
static json_t *create_body(const struct al_http_opts *o, json_t *b,
			   const char *token, const char **why)
{
	const char *t = json_string_value(json_object_get(b, "templateID"));
	json_t *to = json_object_get(b, "timeout"), *env, *meta, *out, *v;
	const char *k;

	/* the SDKs' default templates: the configured default */
	if (!t || !strcmp(t, "base") || !strcmp(t, "code-interpreter-v1"))
		t = o->cfg->templates.default_;
	if (json_is_true(json_object_get(b, "allow_internet_access")) ||
	    json_is_object(json_object_get(b, "network"))) {
		*why = "internet access is not offered: sandboxes have no "
		       "network here";
		return NULL;
	}
	if (json_is_true(json_object_get(b, "autoPause"))) {
		*why =
		    "autoPause is not offered: a sandbox ends at its timeout";
		return NULL;
	}
	if (to && (!json_is_integer(to) || json_integer_value(to) < 1)) {
		*why = "timeout must be a positive integer of seconds";
		return NULL;
	}
	meta = json_object();
	json_object_foreach(json_object_get(b, "metadata"), k,
			    v) if (json_is_string(v) && strncmp(k, "_e2b", 4))
	    json_object_set(meta, k, v);
	json_object_set_new(meta, AL_E2B_META_TOKEN, json_string(token));
	out = json_pack(
	    "{s:s,s:o,s:I}", "template", t, "metadata", meta, "ttl_s",
	    (json_int_t)(to ? json_integer_value(to) : DEFAULT_TTL_S));
	env = json_object_get(b, "envVars");
	if (out && json_is_object(env) && json_object_size(env))
		json_object_set(out, "env", env);
	return out;
}

static enum MHD_Result do_create(const struct al_http_opts *o,
				 struct MHD_Connection *c,
				 struct alq_client *cl, const char *body)
{
	json_t *b = json_loads(body ? body : "{}", 0, NULL), *sb, *rec;
	const char *why = "the body must be a JSON object";
	uint8_t rnd[16];
	char token[33], *text = NULL, *req;
	int r;

	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		json_decref(b);
		return err(c, 500, "no entropy");
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(token + 2 * i, 3, "%02x", rnd[i]);
	sb = json_is_object(b) ? create_body(o, b, token, &why) : NULL;
	json_decref(b);
	if (!sb)
		return err(c, 400, why);
	req = json_dumps(sb, JSON_COMPACT);
	json_decref(sb);
	if (!req)
		return MHD_NO;
	r = al_sess_create(cl, req, o->cfg->sessions.create_timeout_ms, &text);
	free(req);
	if (r < 0) {
		free(text);
		return err(c, status_of(r), cl->err);
	}
	rec = parse(text);
	if (!rec)
		return err(c, 500, "a bad session record");
	sb = sandbox_json(rec, true);
	json_decref(rec);
	return reply(c, 201, sb, NULL, NULL);
}

/* metadata=k%3Dv%26k2%3Dv2 (MHD decoded it once: "k=v&k2=v2"). */
static json_t *meta_filter(const char *q)
{
	json_t *m = json_object();
	char *s = q ? strdup(q) : NULL, *save = NULL, *p;

	for (p = s ? strtok_r(s, "&", &save) : NULL; p;
	     p = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(p, '=');

		if (eq) {
			*eq = '\0';
			json_object_set_new(m, p, json_string(eq + 1));
		}
	}
	free(s);
	return m;
}

static int by_id(const void *a, const void *b)
{
	const char *x =
	    json_string_value(json_object_get(*(json_t *const *)a, "id"));
	const char *y =
	    json_string_value(json_object_get(*(json_t *const *)b, "id"));

	return strcmp(x ? x : "", y ? y : "");
}

/* The records of array a in id order: nextToken is the last id sent. */
static void sort_by_id(json_t *a)
{
	size_t n = json_array_size(a);
	json_t **v = n ? calloc(n, sizeof(*v)) : NULL;

	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(a, i));
	qsort(v, n, sizeof(*v), by_id);
	json_array_clear(a);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, v[i]);
	free(v);
}

static enum MHD_Result do_list(struct MHD_Connection *c, struct alq_client *cl)
{
	const char *st =
	    MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "state");
	const char *lim =
	    MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
	const char *next =
	    MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "nextToken");
	json_t *meta = meta_filter(
	    MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "metadata"));
	json_t *all, *out = json_array(), *v;
	long limit = lim ? strtol(lim, NULL, 10) : LIST_MAX;
	char *text = NULL, last[AL_SESS_ID_MAX + 1] = "";
	size_t i;
	int r;

	if (limit < 1 || limit > LIST_MAX)
		limit = LIST_MAX;
	r = al_sess_list(cl, NULL, meta, &text);
	json_decref(meta);
	if (r < 0) {
		free(text);
		json_decref(out);
		return err(c, status_of(r), cl->err);
	}
	all = parse(text);
	sort_by_id(json_object_get(all, "sessions"));
	json_array_foreach(json_object_get(all, "sessions"), i, v)
	{
		json_t *sb;
		const char *id = json_string_value(json_object_get(v, "id"));

		if (ended(v) || !id || (next && strcmp(id, next) <= 0))
			continue;
		sb = sandbox_json(v, false);
		if (st && !strstr(st, json_string_value(
					  json_object_get(sb, "state")))) {
			json_decref(sb);
			continue;
		}
		if ((long)json_array_size(out) == limit) {
			json_decref(sb);
			break;
		}
		json_array_append_new(out, sb);
		snprintf(last, sizeof(last), "%s", id);
	}
	r = json_array_size(out) == (size_t)limit &&
	    i < json_array_size(json_object_get(all, "sessions"));
	json_decref(all);
	return reply(c, 200, out, r ? "X-Next-Token" : NULL, last);
}

/* The session record of `id` for cl's principal, live: 0 with *ret, or
 * the status to answer (404 for the ended too). */
static unsigned live_record(struct alq_client *cl, const char *id, json_t **ret)
{
	char *text = NULL;
	int r = al_sess_get(cl, id, &text);

	*ret = NULL;
	if (r < 0) {
		free(text);
		return status_of(r);
	}
	*ret = parse(text);
	if (!*ret || ended(*ret)) {
		json_decref(*ret);
		*ret = NULL;
		return 404;
	}
	return 0;
}

/* {"timeout": S} or {"duration": S} of a body: seconds, or 0 when bad. */
static uint32_t body_seconds(const char *body, const char *key)
{
	json_t *b = json_loads(body ? body : "{}", 0, NULL);
	json_t *v = json_object_get(b, key);
	json_int_t s = json_is_integer(v) ? json_integer_value(v) : 0;

	json_decref(b);
	return s > 0 && s < 86400 * 30 ? (uint32_t)s : 0;
}

static enum MHD_Result do_extend(struct MHD_Connection *c,
				 struct alq_client *cl, const char *id,
				 uint32_t s, json_t *rec, bool answer_sandbox)
{
	char *text = NULL;
	int r = s ? al_sess_extend(cl, id, s, &text) : 0;

	free(text);
	if (r < 0) {
		json_decref(rec);
		return err(c, status_of(r), cl->err);
	}
	if (!answer_sandbox) {
		json_decref(rec);
		return reply(c, 204, NULL, NULL, NULL);
	}
	{
		json_t *sb = sandbox_json(rec, true);

		json_decref(rec);
		return reply(c, 200, sb, NULL, NULL);
	}
}

static enum MHD_Result do_fork(const struct al_http_opts *o,
			       struct MHD_Connection *c, struct alq_client *cl,
			       const char *id, const char *body)
{
	json_t *b = json_loads(body ? body : "{}", 0, NULL), *rep, *v, *out;
	json_t *n = json_object_get(b, "count");
	json_int_t k = json_is_integer(n) ? json_integer_value(n) : 1;
	char *text = NULL;
	size_t i;
	int r;

	json_decref(b);
	if (k < 1 || k > AL_SESS_FORK_MAX)
		return err(c, 400, "count must be 1..16");
	r = al_sess_fork(cl, id, (unsigned)k, false,
			 o->cfg->sessions.create_timeout_ms, &text);
	if (r < 0) {
		free(text);
		return err(c, status_of(r), cl->err);
	}
	rep = parse(text);
	out = json_array();
	json_array_foreach(json_object_get(rep, "forks"), i, v)
	    json_array_append_new(out, sandbox_json(v, true));
	json_decref(rep);
	return reply(c, 201, json_pack("{so}", "sandboxes", out), NULL, NULL);
}

/* /sandboxes/{id}[/verb] */
static enum MHD_Result do_one(const struct al_http_opts *o,
			      struct MHD_Connection *c, struct alq_client *cl,
			      const char *method, const char *rest,
			      const char *body)
{
	char id[AL_SESS_ID_MAX + 1];
	const char *slash = strchr(rest, '/'), *verb = slash ? slash + 1 : "";
	size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
	json_t *rec = NULL;
	unsigned st;
	char *text = NULL;

	if (n == 0 || n > AL_SESS_ID_MAX)
		return err(c, 404, "sandbox not found");
	memcpy(id, rest, n);
	id[n] = '\0';
	if ((st = live_record(cl, id, &rec)) != 0)
		return err(c, st, st == 404 ? "sandbox not found" : cl->err);
	if (!*verb && !strcmp(method, "GET")) {
		json_t *sb = sandbox_json(rec, true);

		json_decref(rec);
		return reply(c, 200, sb, NULL, NULL);
	}
	if (!*verb && !strcmp(method, "DELETE")) {
		int r = al_sess_delete(cl, id, &text);

		json_decref(rec);
		free(text);
		return r < 0 ? err(c, status_of(r), cl->err)
			     : reply(c, 204, NULL, NULL, NULL);
	}
	if (strcmp(method, "POST")) {
		json_decref(rec);
		return err(c, 405, "method not allowed");
	}
	if (!strcmp(verb, "timeout"))
		return do_extend(c, cl, id, body_seconds(body, "timeout") ?: 1,
				 rec, false);
	if (!strcmp(verb, "refreshes"))
		return do_extend(c, cl, id, body_seconds(body, "duration"), rec,
				 false);
	if (!strcmp(verb, "connect") || !strcmp(verb, "resume"))
		return do_extend(c, cl, id, body_seconds(body, "timeout"), rec,
				 true);
	json_decref(rec);
	if (!strcmp(verb, "fork"))
		return do_fork(o, c, cl, id, body);
	if (!strcmp(verb, "pause"))
		return err(c, 409,
			   "pause is not offered: an idle sandbox hibernates "
			   "by itself (sessions.hibernate_s) and resumes on "
			   "its next call");
	return err(c, 404, "no such path");
}

static enum MHD_Result control(const struct al_http_opts *o,
			       struct MHD_Connection *c, const char *method,
			       const char *url, const char *body)
{
	const char *key =
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-API-KEY");
	char name[ALQ_PRINCIPAL_MAX + 1] = "";
	const char *p = !strncmp(url, "/v2", 3) ? url + 3 : url;
	struct alq_client cl;
	enum MHD_Result ret;
	unsigned st;

	if ((st = key_principal(o, key, name)) != 0)
		return err(c, st, "Invalid API key");
	if (open_client(o, &cl, name) < 0) {
		alq_client_close(&cl);
		return err(c, 503, "the queue is unavailable");
	}
	p += strlen("/sandboxes");
	if (!*p && !strcmp(method, "POST"))
		ret = do_create(o, c, &cl, body);
	else if (!*p && !strcmp(method, "GET"))
		ret = do_list(c, &cl);
	else if (*p == '/')
		ret = do_one(o, c, &cl, method, p + 1, body);
	else
		ret = err(c, 404, "no such path");
	alq_client_close(&cl);
	return ret;
}

/* The in-VM plane: E2b-Sandbox-Id names the session, X-Access-Token must
 * be its envdAccessToken (compared in constant time). */
static enum MHD_Result envd(const struct al_http_opts *o,
			    struct MHD_Connection *c, const char *method,
			    const char *url, const char *body, size_t len)
{
	const char *id =
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Id");
	const char *port =
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Port");
	const char *tok =
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Access-Token");
	struct alq_client cl;
	json_t *rec = NULL;
	const char *want;
	enum MHD_Result ret;
	unsigned diff = 0;
	size_t n;

	if (!id || !port ||
	    (strtoul(port, NULL, 10) != AL_E2B_ENVD_PORT &&
	     strtoul(port, NULL, 10) != AL_E2B_JUPYTER_PORT))
		return reply(c, 404,
			     al_connect_error(AL_CONNECT_NOT_FOUND,
					      "E2b-Sandbox-Id and E2b-Sandbox-"
					      "Port 49983 are required"),
			     NULL, NULL);
	/* the SDK sends /contexts without the token (E2B's proxy lets them
	 * through): the answer is a fresh id and touches no session */
	if (strtoul(port, NULL, 10) == AL_E2B_JUPYTER_PORT &&
	    !strncmp(url, "/contexts", 9))
		return al_e2b_jupyter(o, c, NULL, id, method, url, body, len);
	if (open_client(o, &cl, "") < 0) {
		alq_client_close(&cl);
		return reply(c, 503,
			     al_connect_error(AL_CONNECT_UNAVAILABLE,
					      "the queue is unavailable"),
			     NULL, NULL);
	}
	if (live_record(&cl, id, &rec) != 0) {
		alq_client_close(&cl);
		return reply(
		    c, 404,
		    al_connect_error(AL_CONNECT_NOT_FOUND, "sandbox not found"),
		    NULL, NULL);
	}
	want = json_string_value(json_object_get(
	    json_object_get(rec, "metadata"), AL_E2B_META_TOKEN));
	n = want ? strlen(want) : 0;
	if (!tok || !want || strlen(tok) != n)
		diff = 1;
	for (size_t i = 0; !diff && i < n; i++)
		diff |= (unsigned)(tok[i] ^ want[i]);
	if (diff)
		ret = reply(c, 401,
			    al_connect_error(AL_CONNECT_UNAUTHENTICATED,
					     "X-Access-Token is not this "
					     "sandbox's"),
			    NULL, NULL);
	else if (strtoul(port, NULL, 10) == AL_E2B_JUPYTER_PORT)
		ret = al_e2b_jupyter(o, c, &cl, id, method, url, body, len);
	else
		ret = al_e2b_envd(o, c, &cl, id, method, url, body, len);
	json_decref(rec);
	alq_client_close(&cl);
	return ret;
}

enum MHD_Result al_e2b_handle(const struct al_http_opts *o,
			      struct MHD_Connection *c, const char *method,
			      const char *url, const char *body, size_t len)
{
	if (!strncmp(url, "/sandboxes", 10) ||
	    !strncmp(url, "/v2/sandboxes", 13))
		return control(o, c, method, url, body);
	return envd(o, c, method, url, body, len);
}
