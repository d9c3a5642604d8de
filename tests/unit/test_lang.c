/* test_lang.c: language lines and the `language` job field (results/lang.c,
 * its decoding in results/job.c, its policy check in results/policy.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "results.h"

static struct al_language langs[3];
static const char *const allowed[] = {"c", "python", NULL};
static struct al_policy pol;

static int setup(void **state)
{
	char why[128];

	(void)state;
	pol = *al_policy_default();
	assert_int_equal(al_language_parse("c",
					   "c main.c | gcc -O2 -o main "
					   "main.c | ./main",
					   &langs[0], why, sizeof(why)),
			 0);
	assert_int_equal(al_language_parse("python",
					   " python  main.py|-|"
					   "python3 main.py ",
					   &langs[1], why, sizeof(why)),
			 0);
	assert_int_equal(al_language_parse("java",
					   "java Main.java | javac "
					   "Main.java | java Main",
					   &langs[2], why, sizeof(why)),
			 0);
	pol.languages = langs;
	pol.n_languages = 3;
	pol.templates = allowed;
	return 0;
}

static void test_parse(void **state)
{
	struct al_language l;
	char why[128];

	(void)state;
	assert_string_equal(langs[0].name, "c");
	assert_string_equal(langs[0].template_, "c");
	assert_string_equal(langs[0].file, "main.c");
	assert_string_equal(langs[0].compile, "gcc -O2 -o main main.c");
	assert_string_equal(langs[0].run, "./main");
	assert_string_equal(langs[1].name, "python");
	assert_string_equal(langs[1].file, "main.py");
	assert_string_equal(langs[1].compile, ""); /* - */
	assert_string_equal(langs[1].run, "python3 main.py");
	/* every malformed line is refused, with a reason */
	const char *bad[] = {
	    "c main.c | gcc main.c",	 /* two fields */
	    "c main.c | a | b | c",	 /* four */
	    "C main.c | - | ./main",	 /* upper case name */
	    "c | - | ./main",		 /* no file */
	    "c main.c x.c | - | ./main", /* two files */
	    "c ../main.c | - | ./main",	 /* not a relative path */
	    "c /main.c | - | ./main",	 /* absolute */
	    "c main.c | | ./main",	 /* empty compile */
	    "c main.c | - | ",		 /* no run */
	    "c main.c | - | -",		 /* run `-` */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = 0;
		assert_int_equal(
		    al_language_parse("c", bad[i], &l, why, sizeof(why)),
		    -EINVAL);
		assert_true(why[0] != 0);
	}
	char big[400];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	char line[512];
	snprintf(line, sizeof(line), "c main.c | %s | ./main", big);
	assert_int_equal(al_language_parse("c", line, &l, why, sizeof(why)),
			 -EINVAL);
}

/* Decode `json`, expand it; the expanded job as JSON into *ret (NULL when
 * expansion failed: diags in *d). Returns the expansion's result. */
static int expand(const char *json, char **ret, struct al_diags *d)
{
	struct al_job job = {0};
	int r;

	al_diags_init(d);
	*ret = NULL;
	r = al_job_from_json(json, strlen(json), &job, d);
	assert_int_equal(r, 0);
	r = al_job_expand_language(&job, &pol, d);
	if (r == 0) {
		struct al_diags d2;

		al_diags_init(&d2);
		assert_int_equal(al_job_check_policy(&job, &pol, &d2), 0);
		assert_int_equal(al_job_to_json(&job, ret), 0);
	}
	al_job_release(&job);
	return r;
}

/* templates.time_scale (issue 37, item 5): a language job on a scaled
 * template gets N times its steps' timeouts (the policy's default where
 * it sets none) and cpu_ms, capped at their maxima; other templates and
 * template jobs keep theirs; the factor lookup refuses what is not
 * NAME:N with N 1..20. */
/* The NAME:N grammar of templates.time_scale and [pool] warm, read in
 * one place for the config's check, the worker and the time scale. */
static void test_name_count(void **state)
{
	unsigned long n = 99;

	(void)state;
	assert_int_equal(al_name_count("python:2 c:0", "c", 0, 8, &n), 1);
	assert_int_equal(n, 0);
	assert_int_equal(al_name_count("  python:2   c:3 ", "python", 0, 8, &n),
			 1);
	assert_int_equal(n, 2);
	assert_int_equal(al_name_count("python:2", "c", 0, 8, &n), 0);
	assert_int_equal(al_name_count("", "c", 0, 8, &n), 0);
	assert_int_equal(al_name_count(NULL, "c", 0, 8, &n), 0);
	assert_int_equal(al_name_count("python:2", NULL, 0, 8, &n), 0);
	/* malformed anywhere: -1, whatever is asked */
	assert_int_equal(al_name_count("python:9", "python", 0, 8, &n), -1);
	assert_int_equal(al_name_count("c:1 python:", "c", 0, 8, &n), -1);
	assert_int_equal(al_name_count("c:1 python:x", "c", 0, 8, &n), -1);
	assert_int_equal(al_name_count("c:1 python:-1", "c", 0, 8, &n), -1);
	assert_int_equal(al_name_count("c:1x", "c", 0, 8, &n), -1);
	assert_int_equal(al_name_count("Bad:1", NULL, 0, 8, &n), -1);
	assert_int_equal(al_name_count(":1", NULL, 0, 8, &n), -1);
	assert_int_equal(al_name_count("c:0", "c", 1, 8, &n), -1);
}

static void test_time_scale(void **state)
{
	struct al_job job = {0};
	struct al_diags d;
	const char *json =
	    "{\"language\":\"java\",\"source_code\":\"class Main{}\","
	    "\"steps\":[{\"cpu_ms\":3000},{\"cpu_ms\":200000,"
	    "\"timeout_ms\":300000}]}";

	(void)state;
	assert_int_equal(al_time_scale("java:4 kotlin:3", "java"), 4);
	assert_int_equal(al_time_scale("java:4 kotlin:3", "kotlin"), 3);
	assert_int_equal(al_time_scale("java:4", "c"), 1);
	assert_int_equal(al_time_scale("java:4", "jav"), 1);
	assert_int_equal(al_time_scale("java:0", "java"), 1);
	assert_int_equal(al_time_scale("java:21", "java"), 1);
	assert_int_equal(al_time_scale("java", "java"), 1);
	assert_int_equal(al_time_scale(NULL, "java"), 1);
	static const char *const with_java[] = {"c", "python", "java", NULL};
	const char *const *was = pol.templates;

	pol.templates = with_java;
	pol.time_scale = "python:2 java:4";
	al_diags_init(&d);
	assert_int_equal(al_job_from_json(json, strlen(json), &job, &d), 0);
	assert_int_equal(al_job_expand_language(&job, &pol, &d), 0);
	/* compile (already the longest timeout, no cpu_ms), then the tests
	 * (the first with the policy's default timeout) */
	assert_int_equal(job.n_steps, 3);
	assert_int_equal(job.steps[0].timeout_ms, pol.step_timeout_max_ms);
	assert_int_equal(job.steps[0].cpu_ms, 0);
	assert_int_equal(job.steps[1].cpu_ms, 12000);
	assert_int_equal(job.steps[1].timeout_ms,
			 pol.step_timeout_max_ms < pol.step_timeout_ms * 4
			     ? pol.step_timeout_max_ms
			     : pol.step_timeout_ms * 4);
	assert_int_equal(job.steps[2].cpu_ms, AL_CPU_MS_MAX);
	assert_int_equal(job.steps[2].timeout_ms, pol.step_timeout_max_ms);
	al_job_release(&job);
	/* c is not scaled */
	memset(&job, 0, sizeof(job));
	json = "{\"language\":\"c\",\"source_code\":\"int main(){}\","
	       "\"steps\":[{\"cpu_ms\":3000,\"timeout_ms\":5000}]}";
	al_diags_init(&d);
	assert_int_equal(al_job_from_json(json, strlen(json), &job, &d), 0);
	assert_int_equal(al_job_expand_language(&job, &pol, &d), 0);
	assert_int_equal(job.steps[1].cpu_ms, 3000);
	assert_int_equal(job.steps[1].timeout_ms, 5000);
	al_job_release(&job);
	pol.time_scale = NULL;
	pol.templates = was;
}

static void test_expand_shorthand(void **state)
{
	struct al_diags d;
	char *out;

	(void)state;
	/* Judge0's shape: language, source_code, stdin, expected output */
	assert_int_equal(expand("{\"language\":\"c\",\"source_code\":\"int "
				"main(){}\",\"stdin\":\"1\\n\",\"expect\":"
				"{\"stdout\":\"2\\n\"},\"timeout_ms\":5000}",
				&out, &d),
			 0);
	assert_string_equal(
	    out, "{\"template\":\"c\",\"files\":{\"main.c\":\"int main(){}\"},"
		 "\"steps\":[{\"name\":\"compile\",\"cmd\":[\"gcc\",\"-O2\","
		 "\"-o\",\"main\",\"main.c\"],\"timeout_ms\":600000,"
		 "\"compile\":true},{\"cmd\":[\"./main\"],\"stdin\":\"1\\n\","
		 "\"timeout_ms\":5000,\"if\":\"setup_ok\",\"expect\":"
		 "{\"stdout\":\"2\\n\"}}]}");
	free(out);
	/* no compile step for an interpreter, no stdin given */
	assert_int_equal(expand("{\"id\":\"p\",\"language\":\"python\","
				"\"source_code\":\"print(1)\"}",
				&out, &d),
			 0);
	assert_string_equal(out, "{\"id\":\"p\",\"template\":\"python\","
				 "\"files\":{\"main.py\":\"print(1)\"},"
				 "\"steps\":[{\"cmd\":[\"python3\","
				 "\"main.py\"],\"if\":\"setup_ok\"}]}");
	free(out);
}

static void test_expand_steps(void **state)
{
	struct al_diags d;
	char *out;

	(void)state;
	/* tests without a command run the language's; a step's own cmd or sh
	 * wins; `success` stays; the source may come in files; the named
	 * template may be the language's own */
	assert_int_equal(
	    expand("{\"language\":\"python\",\"template\":\"python\","
		   "\"files\":{\"main.py\":\"x\"},\"steps\":[{\"stdin\":\"1\","
		   "\"weight\":2},{\"sh\":\"ls\"},{\"stdin\":\"2\",\"if\":"
		   "\"success\"}]}",
		   &out, &d),
	    0);
	assert_string_equal(
	    out, "{\"template\":\"python\",\"files\":{\"main.py\":\"x\"},"
		 "\"steps\":[{\"cmd\":[\"python3\",\"main.py\"],\"stdin\":"
		 "\"1\",\"if\":\"setup_ok\",\"weight\":2},{\"sh\":"
		 "\"ls\"},{\"cmd\":[\"python3\",\"main.py\"],\"stdin\":"
		 "\"2\",\"if\":\"success\"}]}");
	free(out);
	/* a compile step of the job's own: the language's is not added */
	assert_int_equal(expand("{\"language\":\"c\",\"source_code\":\"x\","
				"\"steps\":[{\"cmd\":[\"gcc\",\"main.c\"],"
				"\"compile\":true},{\"cmd\":[\"./a.out\"]}]}",
				&out, &d),
			 0);
	assert_string_equal(
	    out, "{\"template\":\"c\",\"files\":{\"main.c\":\"x\"},"
		 "\"steps\":[{\"cmd\":[\"gcc\",\"main.c\"],\"compile\":"
		 "true},{\"cmd\":[\"./a.out\"]}]}");
	free(out);
}

static void test_expand_refused(void **state)
{
	struct al_diags d;
	char *out, buf[512];

	(void)state;
	assert_int_equal(expand("{\"language\":\"cobol\",\"source_code\":"
				"\"x\"}",
				&out, &d),
			 -EINVAL);
	al_diags_format(&d, buf, sizeof(buf));
	assert_string_equal(buf, "language: unknown language \"cobol\" "
				 "(known: c python)");
	/* declared, but its template is not allowed */
	assert_int_equal(expand("{\"language\":\"java\",\"source_code\":"
				"\"x\"}",
				&out, &d),
			 -EINVAL);
	al_diags_format(&d, buf, sizeof(buf));
	assert_string_equal(buf, "language: \"java\" runs in template "
				 "\"java\", which is not allowed here (known: "
				 "c python)");
	/* a template that does not declare it */
	assert_int_equal(expand("{\"language\":\"c\",\"template\":\"python\","
				"\"source_code\":\"x\"}",
				&out, &d),
			 -EINVAL);
	al_diags_format(&d, buf, sizeof(buf));
	assert_string_equal(buf, "template: \"python\" does not run language "
				 "\"c\" (template \"c\" does)");
	/* no source, or two */
	assert_int_equal(expand("{\"language\":\"c\"}", &out, &d), -EINVAL);
	al_diags_format(&d, buf, sizeof(buf));
	assert_string_equal(buf, "source_code: required (or "
				 "files[\"main.c\"]) for language \"c\"");
	assert_int_equal(expand("{\"language\":\"c\",\"source_code\":\"x\","
				"\"files\":{\"main.c\":\"y\"}}",
				&out, &d),
			 -EINVAL);
	al_diags_format(&d, buf, sizeof(buf));
	assert_string_equal(
	    buf, "source_code: and files[\"main.c\"] are both given");
	/* no languages at all */
	struct al_policy none = *al_policy_default();
	struct al_job job = {0};
	const char *j = "{\"language\":\"c\",\"source_code\":\"x\"}";

	al_diags_init(&d);
	assert_int_equal(al_job_from_json(j, strlen(j), &job, &d), 0);
	assert_int_equal(al_job_expand_language(&job, &none, &d), -EINVAL);
	al_diags_format(&d, buf, sizeof(buf));
	assert_string_equal(buf, "language: unknown language \"c\" (known: "
				 "none)");
	/* an unexpanded job is refused by the policy check (a session or a
	 * snapshot's setup job, which are not expanded) */
	al_diags_init(&d);
	assert_int_equal(al_job_check_policy(&job, &none, &d), -EINVAL);
	al_diags_format(&d, buf, sizeof(buf));
	assert_non_null(strstr(buf, "language: not expanded here"));
	al_job_release(&job);
}

/* More known languages than a reason holds: they follow in diags of their
 * own, every name once, none cut. */
static void test_many_known(void **state)
{
	static struct al_language many[AL_LANGUAGES_MAX];
	struct al_policy p = *al_policy_default();
	struct al_job job = {0};
	struct al_diags d;
	char why[64], line[128], all[4096] = "";
	const char *j = "{\"language\":\"cobol\",\"source_code\":\"x\"}";

	(void)state;
	for (int i = 0; i < AL_LANGUAGES_MAX; i++) {
		snprintf(line, sizeof(line), "language%02d main.x | - | ./x", i);
		assert_int_equal(al_language_parse("t", line, &many[i], why,
						   sizeof(why)),
				 0);
	}
	p.languages = many;
	p.n_languages = AL_LANGUAGES_MAX;
	al_diags_init(&d);
	assert_int_equal(al_job_from_json(j, strlen(j), &job, &d), 0);
	assert_int_equal(al_job_expand_language(&job, &p, &d), -EINVAL);
	assert_true(d.n > 2);
	assert_int_equal(d.dropped, 0);
	assert_string_equal(d.items[0].reason, "unknown language \"cobol\"");
	for (size_t i = 1; i < d.n; i++) {
		assert_string_equal(d.items[i].path, "language");
		assert_memory_equal(d.items[i].reason, "known: ", 7);
		strcat(all, d.items[i].reason + 7);
		strcat(all, " ");
	}
	for (int i = 0; i < AL_LANGUAGES_MAX; i++) {
		snprintf(line, sizeof(line), "language%02d ", i);
		assert_non_null(strstr(all, line));
	}
	al_job_release(&job);
}

static void test_decode(void **state)
{
	struct al_job job = {0}, back = {0};
	struct al_diags d;
	char *mp = NULL, buf[256];
	size_t len;
	const char *j;

	(void)state;
	/* without a language every step needs a command, as before */
	j = "{\"steps\":[{\"cmd\":[\"true\"]},{\"stdin\":\"x\"}]}";
	al_diags_init(&d);
	assert_int_equal(al_job_from_json(j, strlen(j), &job, &d), -EINVAL);
	al_diags_format(&d, buf, sizeof(buf));
	assert_string_equal(buf, "steps[1]: must have exactly one of cmd or "
				 "sh");
	j = "{\"stdin\":\"x\"}";
	al_diags_init(&d);
	assert_int_equal(al_job_from_json(j, strlen(j), &job, &d), -EINVAL);
	j = "{\"cmd\":[\"true\"],\"source_code\":\"x\"}";
	al_diags_init(&d);
	assert_int_equal(al_job_from_json(j, strlen(j), &job, &d), -EINVAL);
	al_diags_format(&d, buf, sizeof(buf));
	assert_string_equal(buf, "source_code: needs a language");
	j = "{\"language\":\"Bad Name\",\"source_code\":\"x\"}";
	al_diags_init(&d);
	assert_int_equal(al_job_from_json(j, strlen(j), &job, &d), -EINVAL);
	/* an unexpanded job goes through msgpack unchanged (a client writing
	 * to Redis itself; the worker expands it) */
	j = "{\"language\":\"c\",\"source_code\":{\"base64\":\"AP8=\"},"
	    "\"steps\":[{\"stdin\":\"1\"},{\"sh\":\"ls\"}]}";
	al_diags_init(&d);
	assert_int_equal(al_job_from_json(j, strlen(j), &job, &d), 0);
	assert_int_equal(al_job_to_msgpack(&job, &mp, &len), 0);
	assert_int_equal(al_job_from_msgpack(mp, len, &back, &d), 0);
	assert_string_equal(back.language, "c");
	assert_true(back.has_source);
	assert_int_equal(back.source.len, 2);
	assert_int_equal(back.source.data[1], 0xff);
	assert_int_equal(back.n_steps, 2);
	assert_int_equal(back.steps[0].argc, 0);
	assert_null(back.steps[0].sh);
	free(mp);
	al_job_release(&job);
	al_job_release(&back);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_expand_shorthand),
	    cmocka_unit_test(test_expand_steps),
	    cmocka_unit_test(test_expand_refused),
	    cmocka_unit_test(test_name_count),
	    cmocka_unit_test(test_time_scale),
	    cmocka_unit_test(test_many_known),
	    cmocka_unit_test(test_decode),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
