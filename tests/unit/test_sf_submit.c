/* test_sf_submit.c: SandboxFusion's /submit translation
 * (tools/api/doors/sf_submit.c) against tests/compat/sf_extract_table.json,
 * the code SandboxFusion's own extraction and MBPPDataset extract from
 * each completion (computed by running its Python), and the job it makes:
 * one attested check-runner step in the python template.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "door.h"
#include "proto.h"

static const struct al_policy *policy(void)
{
	static struct al_language py;
	static struct al_policy p;
	char why[160];

	if (p.n_languages)
		return &p;
	p = *al_policy_default();
	assert_int_equal(al_language_parse("python",
					   "python main.py | python3 -m "
					   "py_compile main.py | python3 main.py",
					   &py, why, sizeof(why)),
			 0);
	p.languages = &py;
	p.n_languages = 1;
	p.templates = NULL;
	return &p;
}

/* One case of the table through al_sf_submit_jobs. */
static void one(json_t *c)
{
	const char *kind = json_string_value(json_object_get(c, "kind"));
	bool mbpp = !strcmp(kind, "mbpp");
	json_t *req, *jobs, *ctx, *err, *step;
	char *body;
	unsigned st;

	if (mbpp)
		req = json_pack("{ss si sO s{s{s{ss} s[s]}}}", "dataset", "mbpp",
				"id", 7, "completion",
				json_object_get(c, "completion"), "config",
				"provided_data", "labels", "test_setup_code",
				"import re", "test_list", "assert f(1) == 1");
	else
		req = json_pack("{ss ss sO s{s{sb} s{ss ss ss}}}", "dataset",
				"humaneval_python", "id", "HumanEval/9",
				"completion", json_object_get(c, "completion"),
				"config", "extra", "is_freeform", 1,
				"provided_data", "prompt", "def f():\n", "test",
				"def check(c):\n    assert c() == 1\n",
				"entry_point", "f");
	assert_non_null(req);
	body = json_dumps(req, JSON_COMPACT);
	st = al_sf_submit_jobs(body, strlen(body), policy(), &jobs, &ctx, &err);
	assert_int_equal(st, 0);
	assert_string_equal(
	    json_string_value(json_object_get(ctx, "extracted_code")),
	    json_string_value(json_object_get(c, "extracted_code")));
	if (mbpp)
		assert_string_equal(
		    json_string_value(json_object_get(ctx, "full_code")),
		    json_string_value(json_object_get(c, "full_code")));
	step = json_array_get(json_object_get(json_array_get(jobs, 0), "steps"),
			      0);
	assert_true(json_is_true(json_object_get(step, "attest")));
	assert_string_equal(
	    json_string_value(json_array_get(json_object_get(step, "cmd"), 1)),
	    AL_CHECK_PY);
	free(body);
	json_decref(req);
	json_decref(jobs);
	json_decref(ctx);
}

static void test_table(void **state)
{
	json_t *doc = json_load_file(
	    AL_SOURCE_DIR "/tests/compat/sf_extract_table.json", 0, NULL);
	json_t *c;
	size_t i;

	(void)state;
	assert_non_null(doc);
	assert_true(json_array_size(json_object_get(doc, "cases")) >= 15);
	json_array_foreach(json_object_get(doc, "cases"), i, c) one(c);
	json_decref(doc);
}

/* HumanEval, not freeform: the stop token, IMPORT_HELPER, check(). */
static void test_humaneval(void **state)
{
	const char *body =
	    "{\"dataset\":\"humaneval_python\",\"id\":1,\"completion\":"
	    "\"    return 1\\n\\n\\ndef g():\\n    pass\\n\",\"config\":"
	    "{\"provided_data\":{\"prompt\":\"def f():\\n\",\"test\":"
	    "\"def check(c):\\n    assert c() == 1\\n\",\"entry_point\":"
	    "\"f\"}}}";
	json_t *jobs, *ctx, *err;
	const char *full;

	(void)state;
	assert_int_equal(al_sf_submit_jobs(body, strlen(body), policy(), &jobs,
					   &ctx, &err),
			 0);
	assert_string_equal(
	    json_string_value(json_object_get(ctx, "extracted_code")),
	    "    return 1\n\n");
	full = json_string_value(json_object_get(ctx, "full_code"));
	assert_true(!strncmp(full, "import math\nimport re\n", 22));
	assert_non_null(strstr(full, "from collections import *\ndef f():\n\n"
				     "    return 1\n\n\ndef check(c):"));
	assert_true(strlen(full) > 9 &&
		    !strcmp(full + strlen(full) - 9, "\ncheck(f)"));
	json_decref(jobs);
	json_decref(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_humaneval),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
