/* piston.c: the Piston v2 door (docs/compat.md, "Piston v2"): an execute
 * request is a `language` job; its compile and run steps answer as
 * Piston's `compile` and `run` stages.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "door.h"
#include "semver.h"

/* Piston's runtime names for the languages the templates run, the
 * version the image has (Debian bookworm's), Piston's aliases. */
static const struct pi_runtime {
	const char *name, *lang, *version;
	const char *aliases[5];
} runtimes[] = {
    {"python", "python", "3.11.2", {"py", "py3", "python3", "python3.11"}},
    {"c", "c", "12.2.0", {"gcc"}},
    {"c++", "cpp", "12.2.0", {"cpp", "g++"}},
    {"bash", "bash", "5.2.15", {"sh"}},
    {"javascript",
     "javascript",
     "18.19.0",
     {"node-javascript", "node-js", "js"}},
    {"typescript", "typescript", "4.8.4", {"ts", "node-ts", "tsc"}},
    {"java", "java", "17.0.0", {0}},
    {"go", "go", "1.19.8", {"go", "golang"}},
    {"rust", "rust", "1.63.0", {"rs"}},
    {"ruby", "ruby", "3.1.2", {"ruby3", "rb"}},
    {"php", "php", "8.2.0", {0}},
    {"csharp", "csharp", "6.8.0", {"mono", "mono-csharp", "cs", "c#"}},
    {"lua", "lua", "5.4.4", {0}},
    {"perl", "perl", "5.36.0", {"pl"}},
    {"pascal", "pascal", "3.2.2", {"freepascal", "pp", "pas"}},
    {"fortran", "fortran", "12.2.0", {"fortran", "f90"}},
    {"haskell", "haskell", "9.0.2", {"haskell", "hs"}},
    {"kotlin", "kotlin", "1.3.31", {"kt"}},
    {"scala", "scala", "2.11.12", {"sc"}},
    {"ocaml", "ocaml", "4.13.1", {"ml"}},
    {"rscript", "r", "4.2.2", {"r"}},
    {"elixir", "elixir", "1.14.0", {"elixir", "exs"}},
    {"erlang", "erlang", "25.2.0", {"erl", "escript"}},
    {"clojure", "clojure", "1.11.1", {"clojure", "clj"}},
    {"groovy", "groovy", "2.4.21", {"groovy", "gvy"}},
    {"d", "d", "12.2.0", {"dlang", "gdc"}},
    {"cobol", "cobol", "3.1.2", {"cob"}},
    {"nasm64", "nasm", "2.16.1", {"asm64", "nasm"}},
    {"lisp", "lisp", "2.2.9", {"lisp", "cl", "sbcl", "commonlisp"}},
    {"prolog", "prolog", "9.0.4", {"prolog", "plg", "swipl"}},
    {"octave", "octave", "7.3.0", {"matlab", "m"}},
    {"sqlite3", "sql", "3.40.1", {"sqlite", "sql"}},
};

#define N_RUNTIMES (sizeof(runtimes) / sizeof(runtimes[0]))

/* Does version v fit the selector sel? Piston matches with npm's
 * semver.satisfies (semver.h); an empty selector is "*". */
static bool version_fits(const char *sel, const char *v)
{
	return !sel || !sel[0] || al_semver_fits(sel, v);
}

static const struct pi_runtime *runtime_of(const char *name, const char *sel,
					   const struct al_policy *p)
{
	for (size_t i = 0; i < N_RUNTIMES; i++) {
		bool hit = !strcmp(runtimes[i].name, name);

		for (size_t k = 0; !hit && k < 5 && runtimes[i].aliases[k]; k++)
			hit = !strcmp(runtimes[i].aliases[k], name);
		if (hit && version_fits(sel, runtimes[i].version) &&
		    al_door_language(p, runtimes[i].lang))
			return &runtimes[i];
	}
	return NULL;
}

static unsigned bad(json_t **ret_err, const char *msg)
{
	*ret_err = json_pack("{ss}", "message", msg);
	return 400;
}

/* A file's content in its encoding, as a job blob. NULL when bad. */
static json_t *content(json_t *f)
{
	json_t *c = json_object_get(f, "content"),
	       *e = json_object_get(f, "encoding");
	const char *enc = json_is_string(e) ? json_string_value(e) : "utf8";
	uint8_t *bytes = NULL;
	size_t n = 0, len;
	json_t *j;

	if (!json_is_string(c) || json_string_length(c) > AL_DOOR_FIELD_MAX ||
	    (e && !json_is_string(e)))
		return NULL;
	len = json_string_length(c);
	if (!strcmp(enc, "utf8"))
		return json_stringn(json_string_value(c), len);
	if (!strcmp(enc, "base64")) {
		if (al_door_b64_decode(json_string_value(c), len, &bytes, &n) <
		    0)
			return NULL;
	} else if (!strcmp(enc, "hex") && len % 2 == 0) {
		const char *s = json_string_value(c);

		bytes = malloc(len / 2 + 1);
		for (size_t i = 0; bytes && i < len; i += 2) {
			int hi = al_hex_digit(s[i]),
			    lo = al_hex_digit(s[i + 1]);

			if (hi < 0 || lo < 0) {
				free(bytes);
				return NULL;
			}
			bytes[n++] = (uint8_t)(hi << 4 | lo);
		}
	}
	if (!bytes)
		return NULL;
	j = al_door_blob_json(bytes, n);
	free(bytes);
	return j;
}

/* files[1..]: the job's other files, by name. */
static const char *other_files(json_t *files, json_t *out)
{
	size_t i;
	json_t *f;

	json_array_foreach(files, i, f)
	{
		json_t *name = json_object_get(f, "name"), *c;

		if (i == 0)
			continue;
		if (!json_is_string(name))
			return "files[]: every file but the first needs a name";
		c = content(f);
		if (!c)
			return "files[]: bad content or encoding";
		json_object_set_new(out, json_string_value(name), c);
	}
	return NULL;
}

/* args: strings, at most 64. */
static bool args_ok(json_t *a)
{
	size_t i;
	json_t *x;

	if (!a || json_is_null(a))
		return true;
	if (!json_is_array(a) || json_array_size(a) > 64)
		return false;
	json_array_foreach(a, i,
			   x) if (!json_is_string(x) ||
				  json_string_length(x) > 4096) return false;
	return true;
}

unsigned al_piston_jobs(const char *body, size_t len, const struct al_policy *p,
			json_t **ret_jobs, json_t **ret_err)
{
	json_t *doc = json_loadb(body ? body : "", len, 0, NULL);
	json_t *lang, *ver, *files, *in, *args, *src = NULL, *others = NULL;
	const struct pi_runtime *rt;
	double ct, rt_ms, ccpu, rcpu, m1, m2;
	char msg[160];
	const char *why = NULL;
	unsigned st = 0;

	*ret_jobs = *ret_err = NULL;
	lang = json_object_get(doc, "language");
	ver = json_object_get(doc, "version");
	files = json_object_get(doc, "files");
	in = json_object_get(doc, "stdin");
	args = json_object_get(doc, "args");
	if (!json_is_object(doc))
		why = "body must be a JSON object";
	else if (!json_is_string(lang))
		why = "language is required as a string";
	else if (ver && !json_is_string(ver))
		why = "version is required as a string";
	else if (!json_is_array(files) || !json_array_size(files) ||
		 json_array_size(files) > AL_DOOR_FILES_MAX)
		why = "files is required as an array of 1 to 64 files";
	else if (in && !json_is_null(in) &&
		 (!json_is_string(in) ||
		  json_string_length(in) > AL_DOOR_FIELD_MAX))
		why = "stdin must be a string";
	else if (!args_ok(args))
		why = "args must be an array of strings";
	else if (!al_door_number(doc, "compile_timeout", 1, 600000, 10000,
				 &ct) ||
		 !al_door_number(doc, "run_timeout", 1, 600000, 3000, &rt_ms) ||
		 !al_door_number(doc, "compile_cpu_time", -1, 600000, -1,
				 &ccpu) ||
		 !al_door_number(doc, "run_cpu_time", -1, 600000, -1, &rcpu) ||
		 !al_door_number(doc, "compile_memory_limit", -1, 1e12, -1,
				 &m1) ||
		 !al_door_number(doc, "run_memory_limit", -1, 1e12, -1, &m2))
		why = "a timeout, cpu time or memory limit is not a number in "
		      "range";
	if (why) {
		st = bad(ret_err, why);
		goto out;
	}
	rt = runtime_of(json_string_value(lang),
			ver ? json_string_value(ver) : "*", p);
	if (!rt) {
		const char *l = json_string_value(lang),
			   *v = ver ? json_string_value(ver) : "*";

		/* cut on a character's boundary: the message must stay
		 * UTF-8 for json_pack (fuzz_doors found a cut one) */
		snprintf(msg, sizeof(msg), "%.*s-%.*s runtime is unknown",
			 al_door_utf8_cut(l, 60), l, al_door_utf8_cut(v, 40),
			 v);
		st = bad(ret_err, msg);
		goto out;
	}
	others = json_object();
	src = content(json_array_get(files, 0));
	why = src ? other_files(files, others)
		  : "files[0]: bad content or encoding";
	if (why) {
		st = bad(ret_err, why);
		goto out;
	}
	{
		const struct al_language *l = al_door_language(p, rt->lang);
		json_t *run =
		    json_pack("{sosi}", "stdin",
			      json_is_string(in) ? json_incref(in) : json_string(""),
			      "timeout_ms", (int)rt_ms);

		if (rcpu > 0)
			json_object_set_new(run, "cpu_ms",
					    json_integer((json_int_t)rcpu));
		json_t *job =
		    al_door_job(l, src, others, (uint32_t)ct, run, args);

		if (job)
			json_object_set_new(
			    job, "meta",
			    json_pack("{ssssss}", "door", "piston", "language",
				      rt->name, "version", rt->version));
		*ret_jobs = job ? json_pack("[o]", job) : NULL;
	}
out:
	json_decref(src);
	json_decref(others);
	json_decref(doc);
	return st;
}

/* --- the answer ----------------------------------------------------------- */

static const char *pi_status(const struct al_step_result *s)
{
	switch (s->status) {
	case AL_OK:
		return NULL;
	case AL_CE: /* killed by the agent at its timeout: SIGKILL */
		return s->signal == 9 ? "TO" : s->signal ? "SG" : "RE";
	case AL_RE:
		return "RE";
	case AL_SG:
	case AL_ML:
		return "SG";
	case AL_TO:
	case AL_TL:
		return "TO";
	case AL_OL:
		return s->stderr_truncated && !s->stdout_truncated ? "EL"
								   : "OL";
	default:
		return "XX";
	}
}

static json_t *text(const struct al_blob *b)
{
	return al_door_blob_json(b->data ? b->data : (const uint8_t *)"",
				 b->len);
}

/* A stage object from a step result. */
static json_t *stage(const struct al_step_result *s, bool compile)
{
	const struct al_blob *out =
	    compile && s->compile_output.len ? &s->compile_output : &s->stdout_;
	const struct al_blob *err =
	    compile && s->compile_output.len ? NULL : &s->stderr_;
	size_t n = out->len + (err ? err->len : 0);
	uint8_t *both = malloc(n + 1);
	const char *st = pi_status(s), *sig = al_signal_name(s->signal);
	char msg[160] = "";
	json_t *j;

	if (!both)
		return NULL;
	if (out->len)
		memcpy(both, out->data, out->len);
	if (err && err->len)
		memcpy(both + out->len, err->data, err->len);
	if (st && s->error)
		snprintf(msg, sizeof(msg), "%s", s->error);
	else if (st && !strcmp(st, "TO"))
		snprintf(msg, sizeof(msg), "Time limit exceeded");
	j = json_pack("{sosososo?so?so?so?sIsIsI}", "stdout", text(out),
		      "stderr", err ? text(err) : json_string(""), "output",
		      al_door_blob_json(both, n), "code",
		      s->has_exit_code ? json_integer(s->exit_code) : NULL,
		      "signal", sig ? json_string(sig) : NULL, "message",
		      msg[0] ? json_string(msg) : NULL, "status",
		      st ? json_string(st) : NULL, "cpu_time",
		      (json_int_t)s->cpu_ms, "wall_time",
		      (json_int_t)s->wall_ms, "memory",
		      (json_int_t)(s->max_rss_kb * 1024));
	free(both);
	return j;
}

static json_t *answer(const struct al_result *r, void *ctx)
{
	const struct al_step_result *c = al_door_compile_step(r),
				    *run = al_door_run_step(r);
	json_t *meta = al_door_meta(&r->meta);
	json_t *j =
	    json_pack("{sOsO}", "language", json_object_get(meta, "language"),
		      "version", json_object_get(meta, "version"));

	json_decref(meta);
	if (c)
		json_object_set_new(j, "compile", stage(c, true));
	if (run && run->status != AL_SK)
		json_object_set_new(j, "run", stage(run, false));
	(void)ctx;
	return j;
}

static enum MHD_Result list_runtimes(const struct al_door_req *r)
{
	const struct al_policy *p = al_http_options(r->h)->policy;
	json_t *arr = json_array();

	for (size_t i = 0; i < N_RUNTIMES; i++) {
		json_t *al = json_array();

		if (!al_door_language(p, runtimes[i].lang)) {
			json_decref(al);
			continue;
		}
		for (size_t k = 0; k < 5 && runtimes[i].aliases[k]; k++)
			json_array_append_new(
			    al, json_string(runtimes[i].aliases[k]));
		json_array_append_new(
		    arr, json_pack("{sssssoss}", "language", runtimes[i].name,
				   "version", runtimes[i].version, "aliases",
				   al, "runtime", runtimes[i].lang));
	}
	return al_http_send_json_retry(r->c, 200, arr, 0);
}

enum MHD_Result al_piston_handle(const struct al_door_req *r)
{
	const struct al_http_opts *o = al_http_options(r->h);
	json_t *jobs = NULL, *e = NULL;
	unsigned code;

	if (!strcmp(r->method, "GET"))
		return list_runtimes(r);
	code = al_piston_jobs(r->body, r->len, o->policy, &jobs, &e);
	if (code)
		return al_http_send_json_retry(r->c, code, e, 0);
	/* a Piston client waits for its answer; a refusal is its 400 */
	return al_door_run_held(r, AL_DOOR_PISTON, jobs, 400, answer, NULL);
}
