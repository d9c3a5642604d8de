/* test_eval.c: benchmark problems and samples, the program per sample,
 * verdict text, pass@k (tools/eval/eval.c). The problems file is the shipped
 * HumanEval (datasets/), read gzipped, plus MBPP-style lines.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <jansson.h>

#include "eval.h"

/* The estimator against the definition with exact binomials. */
static double binom(unsigned n, unsigned k)
{
	double r = 1;

	for (unsigned i = 1; i <= k; i++)
		r = r * (double)(n - k + i) / (double)i;
	return r;
}

static void test_pass_at_k(void **state)
{
	(void)state;
	/* 3 samples, 1 correct: 1/3, 2/3, 1 */
	assert_true(fabs(al_eval_pass_at_k(3, 1, 1) - 1.0 / 3) < 1e-15);
	assert_true(fabs(al_eval_pass_at_k(3, 1, 2) - 2.0 / 3) < 1e-15);
	assert_true(al_eval_pass_at_k(3, 1, 3) == 1.0);
	assert_true(al_eval_pass_at_k(5, 0, 1) == 0.0);
	assert_true(al_eval_pass_at_k(5, 5, 5) == 1.0);
	assert_true(isnan(al_eval_pass_at_k(3, 1, 4)));
	assert_true(isnan(al_eval_pass_at_k(3, 1, 0)));
	assert_true(isnan(al_eval_pass_at_k(3, 4, 1)));
	for (unsigned n = 1; n <= 40; n++)
		for (unsigned c = 0; c <= n; c++)
			for (unsigned k = 1; k <= n; k++) {
				double want =
				    n - c < k
					? 1.0
					: 1.0 - binom(n - c, k) / binom(n, k);

				assert_true(fabs(al_eval_pass_at_k(n, c, k) -
						 want) < 1e-9);
			}
	/* human-eval's usual 200 samples: a product stays finite */
	assert_true(fabs(al_eval_pass_at_k(200, 1, 1) - 0.005) < 1e-12);
	assert_true(fabs(al_eval_pass_at_k(200, 1, 100) - 0.5) < 1e-12);
	assert_true(al_eval_pass_at_k(200, 3, 100) > 0.87);
}

static void test_parse_ks(void **state)
{
	unsigned ks[4];

	(void)state;
	assert_int_equal(al_eval_parse_ks("1,10,100", ks, 4), 3);
	assert_int_equal(ks[2], 100);
	assert_int_equal(al_eval_parse_ks("5", ks, 4), 1);
	assert_int_equal(al_eval_parse_ks("", ks, 4), -EINVAL);
	assert_int_equal(al_eval_parse_ks("10,1", ks, 4), -EINVAL);
	assert_int_equal(al_eval_parse_ks("1,1", ks, 4), -EINVAL);
	assert_int_equal(al_eval_parse_ks("0", ks, 4), -EINVAL);
	assert_int_equal(al_eval_parse_ks("1,", ks, 4), -EINVAL);
	assert_int_equal(al_eval_parse_ks("1,x", ks, 4), -EINVAL);
	assert_int_equal(al_eval_parse_ks("1,2,3,4,5", ks, 4), -EINVAL);
}

static void test_humaneval_file(void **state)
{
	struct al_eval_problems ps;
	const struct al_eval_problem *p;
	struct al_eval_sample s;
	char err[256], *prog;
	const char *line = "{\"task_id\":\"HumanEval/0\",\"completion\":"
			   "\"    return True\\n\",\"x\":1}";

	(void)state;
	assert_int_equal(al_eval_problems_load(AL_SOURCE_DIR
					       "/datasets/HumanEval.jsonl.gz",
					       &ps, err, sizeof(err)),
			 0);
	assert_int_equal(ps.n, 164);
	p = al_eval_problem_find(&ps, "HumanEval/163");
	assert_non_null(p);
	assert_string_equal(p->entry_point, "generate_integers");
	assert_null(al_eval_problem_find(&ps, "HumanEval/164"));
	p = al_eval_problem_find(&ps, "HumanEval/0");
	assert_int_equal(
	    al_eval_sample_parse(line, strlen(line), &s, err, sizeof(err)), 0);
	assert_false(s.whole);
	prog = al_eval_program(p, &s);
	/* human-eval's: prompt + completion + "\n" + test + "\n" + check() */
	assert_true(!strncmp(prog, p->prompt, strlen(p->prompt)));
	assert_non_null(strstr(prog, "    return True\n\n"));
	assert_non_null(strstr(prog, "\ncheck(has_close_elements)\n"));
	free(prog);
	al_eval_sample_release(&s);
	/* evalplus: a solution is the whole program */
	line = "{\"task_id\":\"HumanEval/0\",\"solution\":\"def f(): pass\"}";
	assert_int_equal(
	    al_eval_sample_parse(line, strlen(line), &s, err, sizeof(err)), 0);
	assert_true(s.whole);
	prog = al_eval_program(p, &s);
	assert_true(!strncmp(prog, "def f(): pass\n", 14));
	free(prog);
	al_eval_sample_release(&s);
	al_eval_problems_release(&ps);
}

static void test_mbpp(void **state)
{
	struct al_eval_problem p;
	struct al_eval_sample s;
	char err[256], *prog;
	const char *line =
	    "{\"task_id\":11,\"text\":\"t\",\"code\":\"def f(x): return x\","
	    "\"test_list\":[\"assert f(1) == 1\",\"assert f(2) == 2\"],"
	    "\"test_setup_code\":\"import math\",\"challenge_test_list\":[]}";
	const char *smp = "{\"task_id\":11,\"completion\":\"def f(x): "
			  "return 1\"}";

	(void)state;
	assert_int_equal(
	    al_eval_problem_parse(line, strlen(line), &p, err, sizeof(err)), 0);
	assert_string_equal(p.task_id, "11");
	assert_null(p.entry_point);
	assert_string_equal(p.test, "import math\nassert f(1) == 1\n"
				    "assert f(2) == 2\n");
	prog = al_eval_program(&p, NULL); /* the reference `code` */
	assert_string_equal(prog, "def f(x): return x\nimport math\n"
				  "assert f(1) == 1\nassert f(2) == 2\n");
	free(prog);
	assert_int_equal(
	    al_eval_sample_parse(smp, strlen(smp), &s, err, sizeof(err)), 0);
	assert_string_equal(s.task_id, "11");
	prog = al_eval_program(&p, &s);
	assert_true(!strncmp(prog, "def f(x): return 1\n", 19));
	free(prog);
	al_eval_sample_release(&s);
	al_eval_problem_release(&p);
}

/* Every malformed line is refused with a reason. */
static void test_bad_lines(void **state)
{
	static const struct {
		bool problem;
		const char *line, *why;
	} bad[] = {
	    {false, "[1]", "not a JSON object"},
	    {false, "{\"task_id\":\"a\"", "invalid JSON"},
	    {false, "{\"completion\":\"x\"}", "task_id"},
	    {false, "{\"task_id\":\"\",\"completion\":\"x\"}", "task_id"},
	    {false, "{\"task_id\":\"a\"}", "completion or solution"},
	    {false, "{\"task_id\":\"a\",\"completion\":7}",
	     "completion or solution"},
	    {false, "{\"task_id\":\"a\",\"task_id\":\"b\",\"completion\":\"\"}",
	     "invalid JSON"},
	    {true, "{\"task_id\":\"a\",\"entry_point\":\"f\",\"test\":\"\"}",
	     "prompt, test and entry_point"},
	    {true, "{\"task_id\":\"a\"}", "test_list"},
	    {true, "{\"task_id\":\"a\",\"test_list\":[1]}", "test_list[0]"},
	    {true, "{\"task_id\":\"a\",\"test_list\":[]}", "test_list"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct al_eval_problem p;
		struct al_eval_sample s;
		char err[256] = "";
		int r =
		    bad[i].problem
			? al_eval_problem_parse(bad[i].line,
						strlen(bad[i].line), &p, err,
						sizeof(err))
			: al_eval_sample_parse(bad[i].line, strlen(bad[i].line),
					       &s, err, sizeof(err));

		if (r != -EINVAL || !strstr(err, bad[i].why))
			fprintf(stderr, "line %zu: %d %s\n", i, r, err);
		assert_int_equal(r, -EINVAL);
		assert_non_null(strstr(err, bad[i].why));
	}
}

/* A problems file with a repeated task_id, or none at all, is refused. */
static void test_problems_file_errors(void **state)
{
	char path[] = "/tmp/test_eval_XXXXXX", err[256];
	struct al_eval_problems ps;
	int fd = mkstemp(path);
	const char *two = "{\"task_id\":1,\"test_list\":[\"assert 1\"]}\n";

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(al_eval_problems_load(path, &ps, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "no problems"));
	assert_true(write(fd, two, strlen(two)) > 0);
	assert_true(write(fd, two, strlen(two)) > 0);
	close(fd);
	assert_int_equal(al_eval_problems_load(path, &ps, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "task_id 1 repeats"));
	unlink(path);
	assert_int_equal(al_eval_problems_load(path, &ps, err, sizeof(err)),
			 -EINVAL);
}

static void set_out(struct al_step_result *st, const char *out)
{
	st->stdout_.data = (uint8_t *)out;
	st->stdout_.len = strlen(out);
}

/* Only an attested report passes; an exit 0 with no report is not. */
static void test_judge(void **state)
{
	struct al_step_result st = {0};
	struct al_result r = {0};
	struct al_eval_verdict v;

	(void)state;
	r.steps = &st;
	r.n_steps = 1;
	r.status = st.status = AL_OK;
	st.has_exit_code = true;
	/* exit 0, the runner's words, but no host proof: not a pass */
	set_out(&st, "{\"result\": \"passed\", \"reason\": \"passed\"}\n");
	al_eval_judge(&r, &v);
	assert_false(v.passed);
	assert_string_equal(v.result, "timed out"); /* human-eval's word */
	assert_string_equal(v.reason, "failed: exited before check (OK: exit 0)");
	st.attested = AL_FALSE;
	al_eval_judge(&r, &v);
	assert_false(v.passed);
	st.attested = AL_TRUE;
	al_eval_judge(&r, &v);
	assert_true(v.passed);
	assert_string_equal(v.result, "passed");
	/* a proven pass in a step that then went wrong is not one */
	r.status = st.status = AL_ML;
	al_eval_judge(&r, &v);
	assert_false(v.passed);
	assert_string_equal(v.result, "failed: ML");
	r.status = st.status = AL_OK;
	set_out(&st, "{\"result\": \"failed: \", \"reason\": "
		     "\"failed: AssertionError\"}\n");
	al_eval_judge(&r, &v);
	assert_false(v.passed);
	assert_string_equal(v.result, "failed: ");
	assert_string_equal(v.reason, "failed: AssertionError");
	set_out(&st, "not json\n");
	al_eval_judge(&r, &v);
	assert_false(v.passed);
	st.attested = AL_UNSET;
	set_out(&st, "");
	r.status = st.status = AL_TL;
	al_eval_judge(&r, &v);
	assert_string_equal(v.result, "timed out");
	assert_string_equal(v.reason, "timed out: CPU-time limit");
	r.status = AL_XX;
	r.error = "vm died";
	al_eval_judge(&r, &v);
	assert_true(v.ours);
	assert_string_equal(v.result, "failed: XX: vm died");
}

/* The runner's spec: human-eval's program, or without the check call
 * when strict. */
static void test_check_spec(void **state)
{
	struct al_eval_problem p = {
	    .task_id = "T/0", .prompt = "def f(x):\n", .test =
	    "def check(c):\n    assert c(1) == 2\n", .entry_point = "f"};
	struct al_eval_sample s = {.task_id = "T/0",
				   .code = "    return x + 1\n"};
	struct al_eval_check c = {.guard = true, .timeout_ms = 3000,
				  .cpu_ms = 20000};
	char *t = al_eval_check_spec(&p, &s, &c);
	json_t *j;

	(void)state;
	assert_non_null(t);
	j = json_loads(t, 0, NULL);
	/* the sample process's program and the judge's test, apart */
	assert_string_equal(json_string_value(json_object_get(j, "program")),
			    "def f(x):\n    return x + 1\n");
	assert_string_equal(json_string_value(json_object_get(j, "test")),
			    "def check(c):\n    assert c(1) == 2\n");
	assert_string_equal(json_string_value(json_object_get(j, "check")),
			    "check");
	assert_string_equal(json_string_value(json_object_get(j, "candidate")),
			    "f");
	assert_true(json_is_false(json_object_get(j, "strict")));
	assert_true(json_is_true(json_object_get(j, "guard")));
	assert_int_equal(json_integer_value(json_object_get(j, "timeout_ms")),
			 3000);
	json_decref(j);
	free(t);
	c.strict = true;
	t = al_eval_check_spec(&p, &s, &c);
	j = json_loads(t, 0, NULL);
	assert_null(
	    strstr(json_string_value(json_object_get(j, "program")), "check"));
	assert_true(json_is_true(json_object_get(j, "strict")));
	json_decref(j);
	free(t);
}

/* evalplus: HumanEval+ and MBPP+ lines (tests/data/eval/plus_problems.jsonl,
 * written in evalplus's format), the program evalplus builds, the record
 * and plus specs. */
static void test_plus_file(void **state)
{
	struct al_eval_problems ps;
	const struct al_eval_problem *p;
	struct al_eval_sample s;
	struct al_eval_check c = {.guard = true, .timeout_ms = 3000,
				  .cpu_ms = 20000};
	char err[256], *t;
	const char *smp = "{\"task_id\":\"HumanEval/901\",\"completion\":"
			  "\"    return 3.14 * r * r\\n\"}";
	const char *rec_text =
	    "{\"base\":[0.1,0.2,0.0],\"plus\":[1.0,2.0,{\"float\":\"inf\"}],"
	    "\"base_time\":[0,0,0],\"plus_time\":[0,0,0.5]}";
	json_t *j, *rec;

	(void)state;
	assert_int_equal(al_eval_problems_load(AL_SOURCE_DIR
					       "/tests/data/eval/"
					       "plus_problems.jsonl",
					       &ps, err, sizeof(err)),
			 0);
	assert_int_equal(ps.n, 5);
	p = al_eval_problem_find(&ps, "Mbpp/2");
	assert_true(al_eval_problem_plus(p));
	assert_string_equal(al_eval_problem_dataset(p), "mbpp");
	assert_string_equal(p->entry_point, "similar_elements");
	p = al_eval_problem_find(&ps, "HumanEval/901");
	assert_true(al_eval_problem_plus(p));
	assert_string_equal(al_eval_problem_dataset(p), "humaneval");
	assert_true(p->atol == 1e-3);
	assert_int_equal(json_array_size(p->base_input), 3);
	assert_int_equal(json_array_size(p->plus_input), 3);
	/* the record spec: prompt + canonical, the inputs; no timing in the
	 * text the cache is keyed by */
	t = al_eval_record_spec(p, NULL);
	j = json_loads(t, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(j, "mode")),
			    "record");
	assert_null(json_object_get(j, "timeout_ms"));
	assert_non_null(strstr(json_string_value(json_object_get(j, "program")),
			       "return math.pi * r * r"));
	assert_true(json_equal(json_object_get(j, "plus_input"),
			       p->plus_input));
	json_decref(j);
	free(t);
	t = al_eval_record_spec(p, &c);
	j = json_loads(t, 0, NULL);
	assert_int_equal(json_integer_value(json_object_get(j, "timeout_ms")),
			 60000);
	assert_int_equal(json_integer_value(json_object_get(j, "cpu_ms")),
			 400000);
	json_decref(j);
	free(t);
	/* a plus spec needs the record */
	assert_int_equal(
	    al_eval_sample_parse(smp, strlen(smp), &s, err, sizeof(err)), 0);
	assert_null(al_eval_check_spec(p, &s, &c));
	assert_int_equal(al_eval_record_load(rec_text, strlen(rec_text), p,
					     &rec, err, sizeof(err)),
			 0);
	c.expected = rec;
	t = al_eval_check_spec(p, &s, &c);
	j = json_loads(t, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(j, "mode")),
			    "plus");
	/* evalplus's program for a completion: prompt + completion */
	assert_string_equal(json_string_value(json_object_get(j, "program")),
			    "import math\n\n\ndef circle_area(r: float) -> "
			    "float:\n    \"\"\"The area of a circle of radius "
			    "r.\"\"\"\n    return 3.14 * r * r\n");
	assert_true(json_real_value(json_object_get(j, "atol")) == 1e-3);
	assert_true(json_equal(json_object_get(j, "plus"),
			       json_object_get(rec, "plus")));
	assert_true(json_real_value(json_object_get(j, "min_time_limit")) ==
		    4.0);
	json_decref(j);
	free(t);
	json_decref(rec);
	al_eval_sample_release(&s);
	al_eval_problems_release(&ps);
}

/* Records: every output one of check.py's tagged values, one output and
 * one time per input; anything else refused with a reason. */
static void test_plus_record(void **state)
{
	const char *line =
	    "{\"task_id\":\"HumanEval/7\",\"prompt\":\"def f(x):\\n\","
	    "\"entry_point\":\"f\",\"canonical_solution\":\"    return x\\n\","
	    "\"base_input\":[[1]],\"plus_input\":[[2],[3]],\"atol\":0}";
	static const struct {
		const char *outs, *why; /* base + plus outputs; NULL = ok */
	} cases[] = {
	    {"[1],[2,3]", NULL},
	    {"[{\"tuple\":[1,{\"set\":[2]}]}],[{\"frozenset\":[]},"
	     "{\"dict\":[[{\"tuple\":[1]},null]]}]",
	     NULL},
	    {"[{\"float\":\"nan\"}],[{\"float\":\"-inf\"},"
	     "{\"int\":\"-0x1234567890abcdef1234567890\"}]",
	     NULL},
	    {"[{\"complex\":[1.0,{\"float\":\"inf\"}]}],[{\"bytes\":\"00ff\"},"
	     "\"s\"]",
	     NULL},
	    {"[1],[2]", "plus: not one entry per input"},
	    {"[{\"list\":[1]}],[2,3]", "base[0]: not a tagged value"},
	    {"[{\"tuple\":[1],\"set\":[]}],[2,3]", "base[0]"},
	    {"[{\"float\":\"NaN\"}],[2,3]", "base[0]"},
	    {"[{\"int\":\"0x12g\"}],[2,3]", "base[0]"},
	    {"[{\"int\":\"-0x\"}],[2,3]", "base[0]"},
	    {"[{\"int\":\"123\"}],[2,3]", "base[0]"},
	    {"[{\"bytes\":\"abc\"}],[2,3]", "base[0]"},
	    {"[{\"complex\":[1]}],[2,3]", "base[0]"},
	    {"[{\"dict\":[[1]]}],[2,3]", "base[0]"},
	    {"[1],[2,{\"tuple\":{\"a\":1}}]", "plus[1]"},
	};
	struct al_eval_problem p;
	char err[256], doc[1024];
	json_t *rec;
	int n;

	(void)state;
	assert_int_equal(
	    al_eval_problem_parse(line, strlen(line), &p, err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *comma = strstr(cases[i].outs, "],[");
		int r;

		n = snprintf(doc, sizeof(doc),
			     "{\"base\":%.*s],\"plus\":%s,\"base_time\":[0],"
			     "\"plus_time\":[0,1e-6]}",
			     (int)(comma - cases[i].outs), cases[i].outs,
			     comma + 2);
		err[0] = '\0';
		r = al_eval_record_load(doc, (size_t)n, &p, &rec, err,
					sizeof(err));
		if ((r == 0) != !cases[i].why ||
		    (cases[i].why && !strstr(err, cases[i].why)))
			fprintf(stderr, "case %zu: %d %s\n", i, r, err);
		if (!cases[i].why) {
			assert_int_equal(r, 0);
			json_decref(rec);
		} else {
			assert_int_equal(r, -EINVAL);
			assert_non_null(strstr(err, cases[i].why));
		}
	}
	/* deeper than check.py ever writes */
	n = 0;
	n += snprintf(doc, sizeof(doc), "{\"base\":[");
	for (int i = 0; i < 120; i++)
		n += snprintf(doc + n, sizeof(doc) - (size_t)n, "[");
	for (int i = 0; i < 120; i++)
		n += snprintf(doc + n, sizeof(doc) - (size_t)n, "]");
	n += snprintf(doc + n, sizeof(doc) - (size_t)n,
		      "],\"plus\":[1,2],\"base_time\":[0],\"plus_time\":[0,0]}");
	assert_int_equal(al_eval_record_load(doc, (size_t)n, &p, &rec, err,
					     sizeof(err)),
			 -EINVAL);
	/* a negative time */
	n = snprintf(doc, sizeof(doc),
		     "{\"base\":[1],\"plus\":[1,2],\"base_time\":[-1],"
		     "\"plus_time\":[0,0]}");
	assert_int_equal(al_eval_record_load(doc, (size_t)n, &p, &rec, err,
					     sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "base_time[0]: not a time"));
	al_eval_problem_release(&p);
}

/* Malformed evalplus lines are refused with a reason; MBPP+ ids choose
 * MBPP's rules. */
static void test_plus_bad_lines(void **state)
{
	static const struct {
		const char *line, *why;
	} bad[] = {
	    {"{\"task_id\":\"a\",\"base_input\":[]}",
	     "prompt, entry_point and canonical_solution"},
	    {"{\"task_id\":\"a\",\"prompt\":\"\",\"entry_point\":\"f\","
	     "\"canonical_solution\":\"\",\"base_input\":{}}",
	     "base_input: must be an array"},
	    {"{\"task_id\":\"a\",\"prompt\":\"\",\"entry_point\":\"f\","
	     "\"canonical_solution\":\"\",\"base_input\":[1]}",
	     "base_input[0]: must be a list of arguments"},
	    {"{\"task_id\":\"a\",\"prompt\":\"\",\"entry_point\":\"f\","
	     "\"canonical_solution\":\"\",\"plus_input\":[[1]],\"atol\":\"x\"}",
	     "atol: must be a number"},
	    {"{\"task_id\":\"a\",\"prompt\":\"\",\"entry_point\":\"f\","
	     "\"canonical_solution\":\"\",\"plus_input\":[[1]],\"atol\":-1}",
	     "atol: must be 0 or more"},
	};
	const char *mbpp =
	    "{\"task_id\":\"Mbpp/7\",\"prompt\":\"\\\"\\\"\\\"doc\\\"\\\"\\\"\\n\","
	    "\"entry_point\":\"f\",\"code\":\"def f(a): return a\","
	    "\"canonical_solution\":\"def f(a): return a\\n\","
	    "\"test_list\":[\"assert f(1) == 1\"],"
	    "\"base_input\":[[1]],\"plus_input\":[],\"atol\":0}";
	const char *smp = "{\"task_id\":\"Mbpp/7\",\"solution\":\"def f(a): "
			  "return 2\\n\"}";
	struct al_eval_problem p;
	struct al_eval_sample s;
	char err[256], *prog;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = al_eval_problem_parse(bad[i].line, strlen(bad[i].line),
					      &p, err, sizeof(err));

		if (r != -EINVAL || !strstr(err, bad[i].why))
			fprintf(stderr, "line %zu: %d %s\n", i, r, err);
		assert_int_equal(r, -EINVAL);
		assert_non_null(strstr(err, bad[i].why));
	}
	/* an MBPP+ line has test_list too: its inputs make it evalplus's */
	assert_int_equal(
	    al_eval_problem_parse(mbpp, strlen(mbpp), &p, err, sizeof(err)), 0);
	assert_true(al_eval_problem_plus(&p));
	assert_string_equal(al_eval_problem_dataset(&p), "mbpp");
	assert_int_equal(json_array_size(p.plus_input), 0);
	prog = al_eval_program(&p, NULL); /* evalplus: prompt + canonical */
	assert_string_equal(prog, "\"\"\"doc\"\"\"\ndef f(a): return a\n");
	free(prog);
	assert_int_equal(
	    al_eval_sample_parse(smp, strlen(smp), &s, err, sizeof(err)), 0);
	prog = al_eval_program(&p, &s); /* a solution is the whole program */
	assert_string_equal(prog, "def f(a): return 2\n");
	free(prog);
	al_eval_sample_release(&s);
	al_eval_problem_release(&p);
}

/* evalplus's statuses come from the attested report only. */
static void test_plus_judge(void **state)
{
	struct al_step_result st = {0};
	struct al_result r = {0};
	struct al_eval_verdict v;

	(void)state;
	r.steps = &st;
	r.n_steps = 1;
	r.status = st.status = AL_OK;
	st.attested = AL_TRUE;
	set_out(&st, "{\"result\": \"failed: plus input 0 of 3: wrong output\","
		     " \"reason\": \"failed: plus input 0 of 3: wrong output\","
		     " \"base_status\": \"pass\", \"plus_status\": \"fail\"}\n");
	al_eval_judge(&r, &v);
	assert_false(v.passed);
	assert_string_equal(v.base_status, "pass");
	assert_string_equal(v.plus_status, "fail");
	set_out(&st, "{\"result\": \"passed\", \"reason\": \"passed\", "
		     "\"base_status\": \"pass\", \"plus_status\": \"pass\"}\n");
	al_eval_judge(&r, &v);
	assert_true(v.passed);
	assert_string_equal(v.plus_status, "pass");
	/* a proven pass in a step that went wrong: neither stage passed */
	r.status = st.status = AL_OL;
	al_eval_judge(&r, &v);
	assert_false(v.passed);
	assert_string_equal(v.base_status, "fail");
	assert_string_equal(v.plus_status, "fail");
	/* statuses outside evalplus's three are not taken */
	r.status = st.status = AL_OK;
	set_out(&st, "{\"result\": \"failed: x\", \"reason\": \"x\", "
		     "\"base_status\": \"passed\", \"plus_status\": \"pass\"}\n");
	al_eval_judge(&r, &v);
	assert_string_equal(v.base_status, "");
	/* no proof, no status: the caller says "timeout" (evalplus's word
	 * for a check that left none) */
	st.attested = AL_FALSE;
	set_out(&st, "{\"result\": \"passed\", \"reason\": \"passed\", "
		     "\"base_status\": \"pass\", \"plus_status\": \"pass\"}\n");
	al_eval_judge(&r, &v);
	assert_false(v.passed);
	assert_string_equal(v.base_status, "");
}

/* A record from a step's result: attested, "recorded", checked. */
static void test_plus_record_parse(void **state)
{
	const char *line =
	    "{\"task_id\":\"HumanEval/7\",\"prompt\":\"def f(x):\\n\","
	    "\"entry_point\":\"f\",\"canonical_solution\":\"    return x\\n\","
	    "\"base_input\":[[1]],\"plus_input\":[],\"atol\":0}";
	struct al_step_result st = {0};
	struct al_result r = {0};
	struct al_eval_problem p;
	char err[256];
	json_t *rec;

	(void)state;
	assert_int_equal(
	    al_eval_problem_parse(line, strlen(line), &p, err, sizeof(err)), 0);
	r.steps = &st;
	r.n_steps = 1;
	r.status = st.status = AL_OK;
	st.attested = AL_TRUE;
	set_out(&st, "{\"result\": \"recorded\", \"reason\": \"\", \"base\": "
		     "[{\"tuple\": [1]}], \"base_time\": [1e-06], \"plus\": [],"
		     " \"plus_time\": []}\n");
	assert_int_equal(al_eval_record_parse(&r, &p, &rec, err, sizeof(err)),
			 0);
	assert_int_equal(json_array_size(json_object_get(rec, "base")), 1);
	json_decref(rec);
	st.attested = AL_FALSE;
	assert_int_equal(al_eval_record_parse(&r, &p, &rec, err, sizeof(err)),
			 -EBADMSG);
	assert_non_null(strstr(err, "no report"));
	st.attested = AL_TRUE;
	set_out(&st, "{\"result\": \"failed: boom\", \"reason\": \"failed: "
		     "ZeroDivisionError: boom\"}\n");
	assert_int_equal(al_eval_record_parse(&r, &p, &rec, err, sizeof(err)),
			 -EBADMSG);
	assert_non_null(strstr(err, "canonical solution: failed: "
				    "ZeroDivisionError"));
	al_eval_problem_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pass_at_k),
	    cmocka_unit_test(test_parse_ks),
	    cmocka_unit_test(test_humaneval_file),
	    cmocka_unit_test(test_mbpp),
	    cmocka_unit_test(test_bad_lines),
	    cmocka_unit_test(test_problems_file_errors),
	    cmocka_unit_test(test_judge),
	    cmocka_unit_test(test_check_spec),
	    cmocka_unit_test(test_plus_file),
	    cmocka_unit_test(test_plus_record),
	    cmocka_unit_test(test_plus_bad_lines),
	    cmocka_unit_test(test_plus_judge),
	    cmocka_unit_test(test_plus_record_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
