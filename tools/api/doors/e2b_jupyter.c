/* e2b_jupyter.c: @e2b/code-interpreter's API (E2b-Sandbox-Port 49999) as
 * execs of the session behind the sandbox.
 *
 *   POST /execute   {code, context_id, language, env_vars}: one exec of
 *                   e2b_kernel.py as the client (python3 -c, the request
 *                   on its stdin), its stdout streamed as the NDJSON the
 *                   SDK reads (stdout, stderr, result, error,
 *                   number_of_executions)
 *   POST /contexts  a new context id (the kernel makes it on first use)
 *   GET  /contexts  the default context
 *
 * The state lives in one kernel process per sandbox, started by the
 * first /execute in a session of its own (it outlives the exec, as a
 * session's background processes do) and reached over a unix socket in
 * the work dir: a context keeps its globals, imports and functions for
 * the sandbox's life, through hibernation too (the RAM is saved). Only
 * python is offered; charts need matplotlib in the template.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <jansson.h>

#include "e2b.h"
#include "e2b_kernel.h"
#include "sessions.h"

#define CODE_MAX (1u << 20) /* bytes of one cell */

static enum MHD_Result answer(struct MHD_Connection *c, unsigned st, json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	struct MHD_Response *r;
	enum MHD_Result ret;

	json_decref(j);
	if (!s)
		return MHD_NO;
	r = MHD_create_response_from_buffer(strlen(s), s,
					    MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(s);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, st, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result refuse(struct MHD_Connection *c, unsigned st,
			      const char *msg)
{
	return answer(c, st, json_pack("{siss}", "code", st, "message", msg));
}

/* The exec body of an /execute request b, or NULL with *why. */
static json_t *kernel_exec(json_t *b, const char **why)
{
	const char *code = json_string_value(json_object_get(b, "code"));
	const char *lang = json_string_value(json_object_get(b, "language"));
	json_t *ctx = json_object_get(b, "context_id"), *req, *env;
	char *in;

	if (!code || strlen(code) > CODE_MAX) {
		*why = "code (a string up to 1 MiB) is required";
		return NULL;
	}
	if (lang && strcmp(lang, "python")) {
		*why = "only python contexts are offered";
		return NULL;
	}
	req = json_pack("{sssO}", "code", code, "context_id",
			json_is_string(ctx) ? ctx : json_null());
	in = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (!in)
		return NULL;
	env = json_object_get(b, "env_vars");
	/* python3 -c KERNEL client KERNEL: the client starts the kernel */
	req =
	    json_pack("{s[sssss]sssosI}", "cmd", "python3", "-c", e2b_kernel_py,
		      "client", e2b_kernel_py, "stdin", in, "env",
		      json_is_object(env) ? json_incref(env) : json_object(),
		      "timeout_ms", (json_int_t)AL_TIMEOUT_MS_MAX);
	free(in);
	return req;
}

static enum MHD_Result execute(const struct al_http_opts *o,
			       struct MHD_Connection *c, struct alq_client *cl,
			       const char *id, const char *body)
{
	json_t *b = json_loads(body ? body : "", 0, NULL), *x;
	const char *why = "the body must be a JSON object";
	char *text;
	uint64_t n;
	int r;

	x = json_is_object(b) ? kernel_exec(b, &why) : NULL;
	json_decref(b);
	if (!x)
		return refuse(c, 400, why);
	text = json_dumps(x, JSON_COMPACT);
	json_decref(x);
	if (!text)
		return MHD_NO;
	r = al_sess_exec_start(cl, id, text, 0, &n);
	free(text);
	if (r < 0)
		return refuse(c, r == -ENOENT ? 404 : 502, cl->err);
	return al_e2b_stream(o, c, id, n, true, 0);
}

enum MHD_Result al_e2b_jupyter(const struct al_http_opts *o,
			       struct MHD_Connection *c, struct alq_client *cl,
			       const char *id, const char *method,
			       const char *url, const char *body, size_t len)
{
	uint8_t rnd[8];
	char cid[17];

	(void)len;
	if (!strcmp(url, "/execute") && !strcmp(method, "POST"))
		return execute(o, c, cl, id, body);
	if (!strcmp(url, "/contexts") && !strcmp(method, "GET"))
		return answer(c, 200,
			      json_pack("[{ssssss}]", "id", "default",
					"language", "python", "cwd", "/work"));
	if (!strcmp(url, "/contexts") && !strcmp(method, "POST")) {
		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
			return refuse(c, 500, "no entropy");
		for (size_t i = 0; i < sizeof(rnd); i++)
			snprintf(cid + 2 * i, 3, "%02x", rnd[i]);
		return answer(c, 200,
			      json_pack("{ssssss}", "id", cid, "language",
					"python", "cwd", "/work"));
	}
	return refuse(c, 404, "no such path");
}
