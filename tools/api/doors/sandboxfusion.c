/* sandboxfusion.c: the SandboxFusion door (docs/compat.md,
 * "SandboxFusion"): POST /run_code as verl's sandbox_fusion client sends
 * it is a `language` job; its steps answer as compile_result and
 * run_result.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "door.h"

/* SandboxFusion's language names, ours. */
static const struct {
	const char *name, *lang;
} sf_langs[] = {
    {"python", "python"}, {"cpp", "cpp"},   {"nodejs", "javascript"},
    {"go", "go"},	  {"java", "java"}, {"php", "php"},
    {"csharp", "csharp"}, {"bash", "bash"}, {"typescript", "typescript"},
    {"rust", "rust"},	  {"lua", "lua"},   {"R", "r"},
    {"perl", "perl"},	  {"ruby", "ruby"}, {"scala", "scala"},
    {"sql", "sql"},	  {"c", "c"},
};

#define N_SF (sizeof(sf_langs) / sizeof(sf_langs[0]))

static unsigned bad(json_t **ret_err, const char *msg)
{
	/* FastAPI's validation error shape */
	*ret_err = json_pack("{s[{s[s]ssss}]}", "detail", "loc", "body", "msg",
			     msg, "type", "value_error");
	return 422;
}

static const char *sf_lang(json_t *name, const struct al_policy *p)
{
	for (size_t i = 0; json_is_string(name) && i < N_SF; i++)
		if (!strcmp(sf_langs[i].name, json_string_value(name)))
			return al_door_language(p, sf_langs[i].lang)
				   ? sf_langs[i].lang
				   : NULL;
	return NULL;
}

/* files: {path: base64}, into the job's files. NULL on success. */
static const char *files_of(json_t *files, json_t *out)
{
	const char *path;
	json_t *v;

	if (!files || json_is_null(files))
		return NULL;
	if (!json_is_object(files) ||
	    json_object_size(files) > AL_DOOR_FILES_MAX)
		return "files: must be an object of at most 64 path: base64";
	json_object_foreach(files, path, v)
	{
		uint8_t *bytes;
		size_t n;

		if (json_is_null(v))
			continue;
		if (!json_is_string(v) ||
		    json_string_length(v) > AL_DOOR_FIELD_MAX * 4 / 3 + 4 ||
		    al_door_b64_decode(json_string_value(v),
				       json_string_length(v), &bytes, &n) < 0)
			return "files: a value is not base64";
		json_object_set_new(out, path, al_door_blob_json(bytes, n));
		free(bytes);
	}
	return NULL;
}

/* fetch_files: paths, into the job's collect. */
static const char *collect_of(json_t *ff, json_t *out)
{
	size_t i;
	json_t *x;

	if (!ff || json_is_null(ff))
		return NULL;
	if (!json_is_array(ff) || json_array_size(ff) > AL_DOOR_FILES_MAX)
		return "fetch_files: must be an array of at most 64 paths";
	json_array_foreach(ff, i, x)
	{
		if (!json_is_string(x))
			return "fetch_files: must be strings";
		json_array_append(out, x);
	}
	return NULL;
}

unsigned al_sf_jobs(const char *body, size_t len, const struct al_policy *p,
		    json_t **ret_jobs, json_t **ret_err)
{
	json_t *doc = json_loadb(body ? body : "", len, 0, NULL);
	json_t *code = json_object_get(doc, "code"),
	       *in = json_object_get(doc, "stdin"), *files = json_object(),
	       *collect = json_array(), *run, *job;
	const char *lang = sf_lang(json_object_get(doc, "language"), p);
	const char *why = NULL;
	double ct, rt, mem;
	unsigned st = 0;

	*ret_jobs = *ret_err = NULL;
	if (!json_is_object(doc))
		why = "body must be a JSON object";
	else if (!json_is_string(code) ||
		 json_string_length(code) > AL_DOOR_FIELD_MAX)
		why = "code: a string is required";
	else if (!lang)
		why = "language: not one this server runs";
	else if (in && !json_is_null(in) &&
		 (!json_is_string(in) ||
		  json_string_length(in) > AL_DOOR_FIELD_MAX))
		why = "stdin: must be a string";
	else if (!al_door_number(doc, "compile_timeout", 0, 600, 10, &ct) ||
		 !al_door_number(doc, "run_timeout", 0, 600, 10, &rt) ||
		 !al_door_number(doc, "memory_limit_MB", -1, 1e6, -1, &mem))
		why = "compile_timeout, run_timeout, memory_limit_MB: numbers "
		      "in range";
	if (!why)
		why = files_of(json_object_get(doc, "files"), files);
	if (!why)
		why = collect_of(json_object_get(doc, "fetch_files"), collect);
	if (why) {
		st = bad(ret_err, why);
		goto out;
	}
	run = json_pack("{sosi}", "stdin",
			json_is_string(in) ? json_incref(in) : json_string(""), "timeout_ms",
			(int)(rt * 1000) ?: 1);
	job = al_door_job(al_door_language(p, lang), code, files,
			  (uint32_t)(ct * 1000) ?: 1, run, NULL);
	if (job) {
		json_object_set_new(job, "meta",
				    json_pack("{ss}", "door", "sandboxfusion"));
		if (json_array_size(collect))
			json_object_set(job, "collect", collect);
		*ret_jobs = json_pack("[o]", job);
	}
out:
	json_decref(files);
	json_decref(collect);
	json_decref(doc);
	return st;
}

/* --- the answer ----------------------------------------------------------- */

static json_t *text(const struct al_blob *b)
{
	return al_door_blob_json(b->data ? b->data : (const uint8_t *)"",
				 b->len);
}

static json_t *result_of(const struct al_step_result *s, bool compile)
{
	/* a compile killed at its timeout is CE with SIGKILL (piston.c) */
	const char *st = s->status == AL_TO || s->status == AL_TL ||
				 (s->status == AL_CE && s->signal == 9)
			     ? "TimeLimitExceeded"
			 : s->status == AL_XX ? "Error"
					      : "Finished";
	json_t *rc = s->has_exit_code ? json_integer(s->exit_code)
		     : s->signal      ? json_integer(-s->signal)
				      : json_null();
	bool co = compile && s->compile_output.len;

	return json_pack("{sssfsososo}", "status", st, "execution_time",
			 (double)s->wall_ms / 1000.0, "return_code", rc,
			 "stdout",
			 co ? text(&s->compile_output) : text(&s->stdout_),
			 "stderr", co ? json_string("") : text(&s->stderr_));
}

static json_t *answer(const struct al_result *r, void *ctx)
{
	const struct al_step_result *c = al_door_compile_step(r),
				    *run = al_door_run_step(r);
	bool ok = r->status == AL_OK;
	const char *st = r->status == AL_XX || r->status == AL_RJ
			     ? "SandboxError"
			 : ok ? "Success"
			      : "Failed";
	json_t *files = json_object();

	for (size_t i = 0; i < r->n_files; i++)
		json_object_set_new(files, r->files[i].path,
				    al_door_b64_json(r->files[i].content.data,
						     r->files[i].content.len));
	(void)ctx;
	return json_pack("{sssssosososo}", "status", st, "message",
			 r->error ? r->error : "", "compile_result",
			 c ? result_of(c, true) : json_null(), "run_result",
			 run && run->status != AL_SK ? result_of(run, false)
						     : json_null(),
			 "executor_pod_name", json_null(), "files", files);
}

enum MHD_Result al_sf_handle(const struct al_door_req *r)
{
	const struct al_http_opts *o = al_http_options(r->h);
	json_t *jobs = NULL, *e = NULL;
	unsigned code;

	code = al_sf_jobs(r->body, r->len, o->policy, &jobs, &e);
	if (code)
		return al_http_send_json_retry(r->c, code, e, 0);
	/* verl waits for its answer */
	return al_door_run_held(r, AL_DOOR_SF, jobs, 422, answer, NULL);
}
