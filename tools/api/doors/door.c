/* door.c: what the front doors share (door.h): their routes, their error
 * shapes, the submit of translated jobs through the engine, base64.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "door.h"
#include "e2b.h"

static const struct {
	const char
	    *prefix; /* a path equal to it, or below it when '/' ends it */
	enum al_door door;
	const char *methods; /* " GET POST " */
} door_routes[] = {
    {"/submissions", AL_DOOR_JUDGE0, " POST "},
    {"/submissions/", AL_DOOR_JUDGE0, " GET POST "},
    {"/languages", AL_DOOR_JUDGE0, " GET "},
    {"/languages/", AL_DOOR_JUDGE0, " GET "},
    {"/statuses", AL_DOOR_JUDGE0, " GET "},
    {"/config_info", AL_DOOR_JUDGE0, " GET "},
    {"/about", AL_DOOR_JUDGE0, " GET "},
    {"/version", AL_DOOR_JUDGE0, " GET "},
    {"/workers", AL_DOOR_JUDGE0, " GET "},
    {"/api/v2/runtimes", AL_DOOR_PISTON, " GET "},
    {"/api/v2/execute", AL_DOOR_PISTON, " POST "},
    {"/api/v2/piston/runtimes", AL_DOOR_PISTON, " GET "},
    {"/api/v2/piston/execute", AL_DOOR_PISTON, " POST "},
    {"/run_code", AL_DOOR_SF, " POST "},
    {"/submit", AL_DOOR_SF_SUBMIT, " POST "},
};

#define N_ROUTES (sizeof(door_routes) / sizeof(door_routes[0]))

static bool has_method(const char *list, const char *method)
{
	size_t n = strlen(method);
	const char *p = list;

	while (n && (p = strstr(p, method)))
		if (p[-1] == ' ' && p[n] == ' ')
			return true;
		else
			p += n;
	return false;
}

int al_door_route(const char *method, const char *path, int *ret)
{
	if (!method || !path)
		return -ENOENT;
	for (size_t i = 0; i < N_ROUTES; i++) {
		const char *pre = door_routes[i].prefix;
		size_t n = strlen(pre);
		bool below = pre[n - 1] == '/';

		if (below ? strncmp(path, pre, n) != 0 || !path[n] ||
				strchr(path + n, '/')
			  : strcmp(path, pre) != 0)
			continue;
		if (!has_method(door_routes[i].methods, method))
			return -EPERM;
		*ret = door_routes[i].door;
		return 0;
	}
	return -ENOENT;
}

static bool door_has_body(int d, const char *method)
{
	(void)d;
	return method && !strcmp(method, "POST");
}

typedef enum MHD_Result door_fn(const struct al_door_req *r);

static door_fn *const handlers[] = {
    [AL_DOOR_JUDGE0] = al_judge0_handle,
    [AL_DOOR_PISTON] = al_piston_handle,
    [AL_DOOR_SF] = al_sf_handle,
    [AL_DOOR_SF_SUBMIT] = al_sf_submit_handle,
};

static enum MHD_Result door_handle(const struct al_door_req *r)
{
	return handlers[r->door](r);
}

enum MHD_Result al_door_error(int d, struct MHD_Connection *c, unsigned status,
			      const char *msg)
{
	static const char *const key[] = {
	    [AL_DOOR_NONE] = "error",	    [AL_DOOR_JUDGE0] = "error",
	    [AL_DOOR_PISTON] = "message",   [AL_DOOR_SF] = "detail",
	    [AL_DOOR_SF_SUBMIT] = "detail",
	};

	return al_http_send_json_retry(c, status,
				       json_pack("{ss}", key[d], msg),
				       status == 503 ? AL_HTTP_RETRY_AFTER : 0);
}

/* Is template t one the policy lets jobs name? */
static bool template_allowed(const struct al_policy *p, const char *t)
{
	if (!p->templates)
		return true;
	for (const char *const *n = p->templates; *n; n++)
		if (!strcmp(*n, t))
			return true;
	return false;
}

const struct al_language *al_door_language(const struct al_policy *p,
					   const char *name)
{
	for (size_t i = 0; p && name && i < p->n_languages; i++)
		if (!strcmp(p->languages[i].name, name))
			return template_allowed(p, p->languages[i].template_)
				   ? &p->languages[i]
				   : NULL;
	return NULL;
}

/* Parse each body with POST /jobs's own decoder. */
static int parse_all(json_t *bodies, struct al_http_job *jobs,
		     struct al_diags *d)
{
	size_t i;
	json_t *b;

	json_array_foreach(bodies, i, b)
	{
		char *text = json_dumps(b, JSON_COMPACT);
		struct al_http_job *one = NULL;
		size_t n = 0;
		int r;

		if (!text)
			return -ENOMEM;
		r = al_http_parse_jobs(text, strlen(text), false, &one, &n, d);
		free(text);
		if (r < 0)
			return r;
		jobs[i] = one[0];
		free(one);
	}
	return 0;
}

unsigned al_door_submit(struct al_http *h, json_t *bodies,
			const struct al_callback_shape *shape,
			char (*ret_ids)[AL_ID_MAX + 1], char *ret_msg,
			size_t msglen)
{
	size_t n = json_array_size(bodies);
	struct al_http_job *jobs = calloc(n ? n : 1, sizeof(*jobs));
	struct al_diags d;
	unsigned status = 0;
	int r;

	al_diags_init(&d);
	r = jobs ? parse_all(bodies, jobs, &d) : -ENOMEM;
	for (size_t i = 0; r == 0 && i < n; i++)
		jobs[i].shape = shape;
	if (r == 0)
		r = al_http_enqueue(h, jobs, n, ret_ids, &d);
	if (r == -EINVAL || r == -E2BIG) {
		status = 422;
		al_diags_format(&d, ret_msg, msglen);
	} else if (r < 0) {
		status = 503;
		snprintf(ret_msg, msglen, "%s",
			 r == -EBUSY	? "queue is full"
			 : r == -ENOMEM ? "out of memory"
					: "the queue is unavailable");
	}
	al_http_jobs_free(jobs, n);
	json_decref(bodies);
	return status;
}

enum MHD_Result
al_door_run_held(const struct al_door_req *r, int d, json_t *jobs,
		 unsigned status422,
		 json_t *(*answer)(const struct al_result *, void *), void *ctx)
{
	struct al_result res = {0};
	enum alq_state st;
	char ids[1][AL_ID_MAX + 1], why[512];
	unsigned code;
	json_t *j;

	code = al_door_submit(r->h, jobs, NULL, ids, why, sizeof(why));
	if (code)
		return al_door_error(d, r->c, code == 422 ? status422 : code,
				     why);
	/* held until the job is done: the door's client waits for it */
	do {
		al_result_release(&res);
		if (al_http_job_result(r->h, ids[0], AL_DOOR_HOLD_S, &st,
				       &res) < 0)
			return al_door_error(d, r->c, 503,
					     "the queue is unavailable");
	} while (st == ALQ_QUEUED || st == ALQ_RUNNING);
	if (st == ALQ_UNKNOWN)
		return al_door_error(d, r->c, 500, "the job's result expired");
	j = answer(&res, ctx);
	al_result_release(&res);
	return al_http_send_json_retry(r->c, 200, j, 0);
}

/* --- base64 ------------------------------------------------------------- */

/* results/blob.c's codec, as lax as Ruby's decode64 about line breaks */
int al_door_b64_decode(const char *s, size_t n, uint8_t **ret, size_t *ret_len)
{
	struct al_blob b = {0};
	int r = al_base64_decode(s, n, AL_BASE64_LAX, &b);

	if (r < 0)
		return r;
	*ret = b.data;
	*ret_len = b.len;
	return 0;
}

json_t *al_door_b64_json(const uint8_t *data, size_t len)
{
	char *out = malloc(al_base64_encoded_len(len) + 1);
	json_t *j;

	if (!out)
		return NULL;
	al_base64_encode(data, len, out);
	j = json_string(out);
	free(out);
	return j;
}

json_t *al_door_blob_json(const uint8_t *data, size_t len)
{
	if (al_utf8_valid(data, len))
		return json_stringn((const char *)data, len);
	return json_pack("{so}", "base64", al_door_b64_json(data, len));
}

json_t *al_door_seconds(uint64_t ms)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu.%03llu",
		 (unsigned long long)(ms / 1000),
		 (unsigned long long)(ms % 1000));
	return json_string(buf);
}

/* --- a result's meta ------------------------------------------------------ */

/* One msgpack scalar as JSON (NULL for anything else). */
static json_t *mp_scalar(const msgpack_object *o)
{
	switch (o->type) {
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		return o->via.u64 <= INT64_MAX
			   ? json_integer((json_int_t)o->via.u64)
			   : NULL;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		return json_integer(o->via.i64);
	case MSGPACK_OBJECT_BOOLEAN:
		return json_boolean(o->via.boolean);
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		return json_real(o->via.f64);
	case MSGPACK_OBJECT_STR:
		return json_stringn(o->via.str.ptr, o->via.str.size);
	default:
		return NULL;
	}
}

json_t *al_door_meta(const struct al_blob *meta)
{
	json_t *j = json_object();
	msgpack_zone zone;
	msgpack_object o;

	if (!j || !meta->len)
		return j;
	msgpack_zone_init(&zone, 2048);
	if (al_mp_unpack(meta->data, meta->len, 256, &zone, &o) == 0 &&
	    o.type == MSGPACK_OBJECT_MAP)
		for (uint32_t i = 0; i < o.via.map.size; i++) {
			const msgpack_object_kv *kv = &o.via.map.ptr[i];
			json_t *v;
			char key[64];

			if (kv->key.type != MSGPACK_OBJECT_STR ||
			    kv->key.via.str.size >= sizeof(key) ||
			    !(v = mp_scalar(&kv->val)))
				continue;
			memcpy(key, kv->key.via.str.ptr, kv->key.via.str.size);
			key[kv->key.via.str.size] = 0;
			json_object_set_new(j, key, v);
		}
	msgpack_zone_destroy(&zone);
	return j;
}

/* --- the result, read by every door -------------------------------------- */

const struct al_step_result *al_door_compile_step(const struct al_result *r)
{
	for (size_t i = 0; i < r->n_steps; i++)
		if (r->steps[i].status == AL_CE ||
		    (r->steps[i].name && !strcmp(r->steps[i].name, "compile")))
			return &r->steps[i];
	return NULL;
}

const struct al_step_result *al_door_run_step(const struct al_result *r)
{
	const struct al_step_result *c = al_door_compile_step(r);

	if (!r->n_steps || &r->steps[r->n_steps - 1] == c)
		return NULL;
	return &r->steps[r->n_steps - 1];
}

int al_door_utf8_cut(const char *s, size_t max)
{
	size_t n = strnlen(s, max + 1);

	if (n <= max)
		return (int)n;
	n = max;
	while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return (int)n;
}

bool al_door_has(const char *query_value)
{
	return query_value &&
	       (!strcmp(query_value, "true") || !strcmp(query_value, "1"));
}

void al_door_words(json_t *arr, const char *s)
{
	while (*s) {
		size_t n;

		s += strspn(s, " \t");
		n = strcspn(s, " \t");
		if (n)
			json_array_append_new(arr, json_stringn(s, n));
		s += n;
	}
}

json_t *al_door_steps(const struct al_language *lang, uint32_t compile_ms,
		      json_t *run, json_t *args)
{
	json_t *steps = json_array();

	if (lang->compile[0]) {
		json_t *cmd = json_array();

		al_door_words(cmd, lang->compile);
		json_array_append_new(steps,
				      json_pack("{sssosbsi}", "name", "compile",
						"cmd", cmd, "compile", 1,
						"timeout_ms", (int)compile_ms));
	}
	if (lang->compile[0])
		json_object_set_new(run, "if", json_string("success"));
	if (json_array_size(args)) {
		json_t *cmd = json_array();

		al_door_words(cmd, lang->run);
		json_array_extend(cmd, args);
		json_object_set_new(run, "cmd", cmd);
	}
	json_array_append_new(steps, run);
	return steps;
}

/* Languages whose compile line is only a syntax check, which Piston and
 * SandboxFusion do not run (no compile stage there): their jobs are
 * written out without `language`, the same job less that step. */
static const char *const check_only[] = {
    "python", "bash", "javascript", "ruby", "php", "lua", "perl", "r", NULL};

bool al_door_check_only(const struct al_language *lang)
{
	for (size_t i = 0; check_only[i]; i++)
		if (!strcmp(check_only[i], lang->name))
			return true;
	return false;
}

json_t *al_door_job(const struct al_language *lang, json_t *src, json_t *files,
		    uint32_t compile_ms, json_t *run, json_t *args)
{
	json_t *f = files ? json_deep_copy(files) : json_object(), *cmd;

	if (!al_door_check_only(lang))
		return json_pack("{sssOsoso}", "language", lang->name,
				 "source_code", src, "files", f, "steps",
				 al_door_steps(lang, compile_ms, run, args));
	json_object_set(f, lang->file, src);
	cmd = json_array();
	al_door_words(cmd, lang->run);
	if (args)
		json_array_extend(cmd, args);
	json_object_set_new(run, "cmd", cmd);
	return json_pack("{sssos[o]}", "template", lang->template_, "files", f,
			 "steps", run);
}

/* A number field in [lo, hi], or dflt when absent; false when bad. */
bool al_door_number(json_t *o, const char *key, double lo, double hi,
		    double dflt, double *ret)
{
	json_t *x = json_object_get(o, key);

	*ret = dflt;
	if (!x || json_is_null(x))
		return true;
	if (!json_is_number(x))
		return false;
	*ret = json_number_value(x);
	return *ret >= lo && *ret <= hi;
}

/* Judge0's clients send the token as X-Auth-Token (its AUTHN_HEADER). */
static const char *door_token_header(int d)
{
	return d == AL_DOOR_JUDGE0 ? "X-Auth-Token" : NULL;
}

/* The npm piston-client posts its JSON as text/plain (node-fetch's type
 * for a string body) and cannot be told otherwise; http.c still refuses
 * such a body when it carries Origin (a browser's cross-site POST). */
static bool door_text_plain(int d)
{
	return d == AL_DOOR_PISTON;
}

const struct al_http_doors al_doors = {
    .route = al_door_route,
    .has_body = door_has_body,
    .token_header = door_token_header,
    .text_plain = door_text_plain,
    .handle = door_handle,
    .error = al_door_error,
    .own_claims = al_e2b_claims,
    .own_max_body = AL_E2B_FILE_MAX,
    .own_handle = al_e2b_handle,
};
