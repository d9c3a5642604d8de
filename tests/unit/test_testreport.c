/* test_testreport.c: worker/testreport.c on reports the real tools wrote
 * (pytest, ctest, Test::More, node; tests/data/reports/README.md), the
 * surefire and jest-junit shapes, and hostile input: entity expansion,
 * external entities, deep nesting, huge attributes, invalid UTF-8, cut
 * files, too many tests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testreport.h"

static uint8_t *slurp(const char *name, size_t *len)
{
	char path[512];
	FILE *f;
	uint8_t *buf;
	long n;

	snprintf(path, sizeof(path), "%s/tests/data/reports/%s", AL_SOURCE_DIR,
		 name);
	f = fopen(path, "rbe");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void init(struct al_report_out *o)
{
	memset(o, 0, sizeof(*o));
	o->max_tests = AL_TESTS_MAX;
	o->max_bytes = 8u << 20;
}

static void parse_buf(enum al_report_format fmt, const void *p, size_t n,
		      struct al_report_out *o)
{
	init(o);
	assert_int_equal(al_report_parse(fmt, 0, p, n, o), 0);
}

static void parse_file(enum al_report_format fmt, const char *name,
		       struct al_report_out *o)
{
	size_t n;
	uint8_t *p = slurp(name, &n);

	parse_buf(fmt, p, n, o);
	free(p);
}

static void counts(const struct al_report_out *o, uint64_t total,
		   uint64_t passed, uint64_t failed, uint64_t error,
		   uint64_t skipped)
{
	assert_int_equal(o->counts.total, total);
	assert_int_equal(o->counts.passed, passed);
	assert_int_equal(o->counts.failed, failed);
	assert_int_equal(o->counts.error, error);
	assert_int_equal(o->counts.skipped, skipped);
}

static const struct al_test_case *find(const struct al_report_out *o,
				       const char *name)
{
	for (size_t i = 0; i < o->n_tests; i++)
		if (!strcmp(o->tests[i].name, name))
			return &o->tests[i];
	fail_msg("no test %s", name);
	return NULL;
}

/* pytest 7.2.1 said: 2 failed, 4 passed, 1 skipped, 1 xfailed, 1 error */
static void test_pytest(void **state)
{
	struct al_report_out o;
	const struct al_test_case *t;

	(void)state;
	parse_file(AL_REPORT_JUNIT, "pytest.xml", &o);
	counts(&o, 9, 4, 2, 1, 2);
	assert_int_equal(o.n_tests, 9);
	assert_string_equal(o.error, "");
	t = find(&o, "test_fail");
	assert_int_equal(t->status, AL_TEST_FAILED);
	assert_string_equal(t->suite, "test_sample");
	assert_string_equal(t->message, "AssertionError: arithmetic <is> & "
					"\"hard\"\nassert (2 * 2) == 5");
	t = find(&o, "test_error");
	assert_int_equal(t->status, AL_TEST_ERROR);
	assert_non_null(strstr(t->message, "fixture broke"));
	assert_int_equal(find(&o, "test_xfail")->status, AL_TEST_SKIPPED);
	assert_int_equal(find(&o, "test_param[3]")->status, AL_TEST_FAILED);
	assert_int_equal(
	    find(&o, "test_unicode_\xe5\x90\x8d\xe5\x89\x8d")->status,
	    AL_TEST_PASSED);
	assert_null(find(&o, "test_pass")->message);
	al_report_out_release(&o);
}

/* ctest 3.25.1: tests="6" failures="1" disabled="1" skipped="2" */
static void test_ctest(void **state)
{
	struct al_report_out o;

	(void)state;
	parse_file(AL_REPORT_JUNIT, "ctest.xml", &o);
	counts(&o, 6, 2, 1, 0, 3);
	assert_int_equal(find(&o, "passes")->time_ms, 3); /* 0.00281946 s */
	assert_int_equal(find(&o, "disabled_one")->status, AL_TEST_SKIPPED);
	assert_string_equal(find(&o, "not_found")->message,
			    "Unable to find executable");
	assert_int_equal(find(&o, "fails")->status, AL_TEST_FAILED);
	al_report_out_release(&o);
}

static void test_surefire(void **state)
{
	struct al_report_out o;
	const struct al_test_case *t;

	(void)state;
	parse_file(AL_REPORT_JUNIT, "surefire.xml", &o);
	counts(&o, 4, 1, 1, 1, 1);
	t = find(&o, "testDiv");
	assert_int_equal(t->time_ms, 1234500);
	assert_string_equal(t->message, "expected:<2> but was:<3>");
	assert_string_equal(t->suite, "com.example.AppTest");
	assert_string_equal(find(&o, "testNull")->message, "null");
	al_report_out_release(&o);
}

static void test_jest(void **state)
{
	struct al_report_out o;
	const struct al_test_case *t;

	(void)state;
	parse_file(AL_REPORT_JUNIT, "jest-junit.xml", &o);
	counts(&o, 3, 1, 1, 0, 1);
	t = find(&o, "math divides");
	assert_int_equal(t->time_ms, 10);
	assert_non_null(strstr(t->message, "Object.<anonymous>"));
	al_report_out_release(&o);
}

/* Test::More: 1..6, ok 1, not ok 2, ok 3, ok 4 # skip, not ok 5 # TODO */
static void test_perl_tap(void **state)
{
	struct al_report_out o;

	(void)state;
	parse_file(AL_REPORT_TAP, "perl.tap", &o);
	counts(&o, 6, 3, 1, 0, 2);
	assert_string_equal(o.error, "");
	assert_int_equal(find(&o, "second fails")->status, AL_TEST_FAILED);
	assert_string_equal(find(&o, "test 4")->message, "skip no network");
	assert_int_equal(find(&o, "todo fails")->status, AL_TEST_SKIPPED);
	/* TAP's escapes: the source's '#' and "\\#" */
	assert_string_equal(o.tests[5].name, "name with # hash \\# escaped");
	al_report_out_release(&o);
}

/* node 20: five top-level tests (a subtest is summed up by its parent) */
static void test_node_tap(void **state)
{
	struct al_report_out o;
	const struct al_test_case *t;

	(void)state;
	parse_file(AL_REPORT_TAP, "node.tap", &o);
	counts(&o, 5, 2, 1, 0, 2);
	assert_string_equal(o.error, "");
	assert_int_equal(find(&o, "adds")->time_ms, 11);
	t = find(&o, "fails");
	assert_non_null(strstr(t->message, "strictly equal"));
	assert_int_equal(find(&o, "skipped")->status, AL_TEST_SKIPPED);
	assert_int_equal(find(&o, "outer")->status, AL_TEST_PASSED);
	al_report_out_release(&o);
}

static void expect_refused(const char *xml, const char *why)
{
	struct al_report_out o;

	parse_buf(AL_REPORT_JUNIT, xml, strlen(xml), &o);
	assert_int_equal(o.counts.total, 0);
	if (!strstr(o.error, why))
		fail_msg("error \"%s\" lacks \"%s\"", o.error, why);
	al_report_out_release(&o);
}

static void test_entities_refused(void **state)
{
	(void)state;
	expect_refused(
	    "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n"
	    " <!ENTITY lol \"lol\">\n"
	    " <!ENTITY lol1 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">\n"
	    " <!ENTITY lol2 \"&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;\">\n"
	    " <!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;\">\n"
	    "]>\n<testsuite><testcase name=\"&lol3;\"/></testsuite>\n",
	    "DOCTYPE");
	expect_refused("<!DOCTYPE t [<!ENTITY x SYSTEM \"file:///etc/passwd\">"
		       "]><testsuite><testcase name=\"&x;\"/></testsuite>",
		       "DOCTYPE");
	expect_refused("<!DOCTYPE testsuite SYSTEM \"http://127.0.0.1/x.dtd\">"
		       "<testsuite/>",
		       "DOCTYPE");
	/* an undeclared entity is an error, not a lookup */
	expect_refused("<testsuite><testcase name=\"&x;\"/></testsuite>",
		       "not well-formed");
	expect_refused("<html><body/></html>", "not JUnit XML");
	expect_refused("", "not well-formed");
}

static void test_deep_nesting(void **state)
{
	size_t depth = 100000, n = 0;
	char *x = malloc(depth * 11 + 64);
	struct al_report_out o;

	(void)state;
	assert_non_null(x);
	n += (size_t)sprintf(x, "<testsuites>");
	for (size_t i = 0; i < depth; i++)
		n += (size_t)sprintf(x + n, "<testsuite>");
	parse_buf(AL_REPORT_JUNIT, x, n, &o);
	assert_non_null(strstr(o.error, "nested deeper than"));
	al_report_out_release(&o);
	/* 31 deep is fine */
	n = (size_t)sprintf(x, "<testsuites>");
	for (size_t i = 0; i < 30; i++)
		n += (size_t)sprintf(x + n, "<testsuite>");
	n += (size_t)sprintf(x + n, "<testcase name=\"deep\"/>");
	for (size_t i = 0; i < 30; i++)
		n += (size_t)sprintf(x + n, "</testsuite>");
	n += (size_t)sprintf(x + n, "</testsuites>");
	parse_buf(AL_REPORT_JUNIT, x, n, &o);
	assert_string_equal(o.error, "");
	counts(&o, 1, 1, 0, 0, 0);
	al_report_out_release(&o);
	free(x);
}

/* A 4 MiB name and message: kept to their caps, cut at a character. */
static void test_huge_attribute(void **state)
{
	size_t big = 4u << 20, n = 0;
	char *x = malloc(2 * big + 256);
	struct al_report_out o;

	(void)state;
	assert_non_null(x);
	n += (size_t)sprintf(x, "<testsuite><testcase name=\"a");
	for (size_t i = 0; i < big / 2; i++, n += 2)
		memcpy(x + n, "\xc3\xa9", 2); /* é: a cap must not split it */
	n += (size_t)sprintf(x + n, "\"><failure message=\"");
	memset(x + n, 'm', big);
	n += big;
	n += (size_t)sprintf(x + n, "\"/></testcase></testsuite>");
	parse_buf(AL_REPORT_JUNIT, x, n, &o);
	assert_int_equal(o.n_tests, 1);
	assert_int_equal(strlen(o.tests[0].name), AL_TEST_NAME_MAX - 1);
	assert_int_equal(strlen(o.tests[0].message), AL_TEST_MESSAGE_MAX);
	assert_int_equal(o.tests[0].status, AL_TEST_FAILED);
	al_report_out_release(&o);
	free(x);
}

static void test_invalid_utf8(void **state)
{
	static const char xml[] =
	    "<testsuite><testcase name=\"ok\"/><testcase name=\"b\xff\"/>"
	    "</testsuite>";
	static const char tap[] =
	    "1..2\nok 1 - a\xff\xc0 b\nnot ok 2 - n\0ul\n";
	struct al_report_out o;

	(void)state;
	parse_buf(AL_REPORT_JUNIT, xml, sizeof(xml) - 1, &o);
	assert_non_null(strstr(o.error, "not well-formed"));
	counts(&o, 1, 1, 0, 0, 0); /* what came before the bad byte */
	al_report_out_release(&o);
	parse_buf(AL_REPORT_TAP, tap, sizeof(tap) - 1, &o);
	counts(&o, 2, 1, 1, 0, 0);
	assert_string_equal(o.tests[0].name, "a\xef\xbf\xbd\xef\xbf\xbd b");
	assert_string_equal(o.tests[1].name, "n\xef\xbf\xbdul");
	al_report_out_release(&o);
}

/* A report cut short (the step was killed while writing it). */
static void test_truncated(void **state)
{
	struct al_report_out o;
	size_t n;
	uint8_t *p = slurp("pytest.xml", &n);
	const char *cut =
	    strstr((const char *)p, "<testcase classname=\"test_"
				    "sample\" name=\"test_skip\"");

	(void)state;
	assert_non_null(cut);
	parse_buf(AL_REPORT_JUNIT, p, (size_t)((const uint8_t *)cut - p) + 20,
		  &o);
	assert_non_null(strstr(o.error, "not well-formed"));
	counts(&o, 3, 1, 1, 1, 0);
	al_report_out_release(&o);
	free(p);
	p = slurp("perl.tap", &n);
	parse_buf(AL_REPORT_TAP, p, 40, &o);
	assert_non_null(strstr(o.error, "planned 6 tests, read 2"));
	al_report_out_release(&o);
	free(p);
}

static void test_caps(void **state)
{
	size_t n = 0, tests = 20000;
	char *x = malloc(tests * 40 + 64);
	struct al_report_out o;

	(void)state;
	assert_non_null(x);
	n += (size_t)sprintf(x, "1..%zu\n", tests);
	for (size_t i = 0; i < tests; i++)
		n += (size_t)sprintf(x + n, "%s %zu - t%zu\n",
				     i % 2 ? "ok" : "not ok", i + 1, i);
	parse_buf(AL_REPORT_TAP, x, n, &o);
	counts(&o, tests, tests / 2, tests / 2, 0, 0);
	assert_int_equal(o.n_tests, AL_TESTS_MAX);
	assert_non_null(strstr(o.error, "10000 test records not kept"));
	al_report_out_release(&o);
	/* the byte budget */
	init(&o);
	o.max_bytes = 1000;
	assert_int_equal(al_report_parse(AL_REPORT_TAP, 3, (uint8_t *)x, n, &o),
			 0);
	assert_true(o.n_tests > 5 && o.n_tests < 20);
	assert_true(o.bytes <= 1000);
	assert_non_null(strstr(o.error, "report[3]: "));
	al_report_out_release(&o);
	free(x);
	/* a YAML block comes after its record is kept: its message gets
	 * what the budget has left (fuzz_tap found it could pass it) */
	{
		static const char yaml[] =
		    "1..1\nnot ok 1 - x\n  ---\n  error: "
		    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"
		    "  ...\n";

		init(&o);
		o.max_bytes = 64 + 1 + 10;
		assert_int_equal(al_report_parse(AL_REPORT_TAP, 0,
						 (const uint8_t *)yaml,
						 sizeof(yaml) - 1, &o),
				 0);
		assert_int_equal(o.n_tests, 1);
		assert_int_equal(strlen(o.tests[0].message), 10);
		assert_true(o.bytes <= o.max_bytes);
		al_report_out_release(&o);
	}
}

static void test_tap_edges(void **state)
{
	static const char bail[] = "TAP version 13\n1..4\nok 1\nnot ok 2 - x"
				   "\nBail out! database gone\nok 3\n";
	static const char noplan[] = "ok 1 - a\nok 2 - b\n";
	static const char junk[] = "<html>\nhello\n";
	static const char yaml[] = "1..2\nok 1 - big\n  ---\n  duration_ms: "
				   "1e308\n  ...\nok 2 - neg\n  ---\n  "
				   "duration_ms: -5\n  ...\n";
	struct al_report_out o;

	(void)state;
	parse_buf(AL_REPORT_TAP, bail, sizeof(bail) - 1, &o);
	counts(&o, 3, 1, 1, 1, 0);
	assert_string_equal(o.tests[2].name, "Bail out!");
	assert_string_equal(o.tests[2].message, "database gone");
	assert_non_null(strstr(o.error, "bailed out after 2 tests"));
	al_report_out_release(&o);
	parse_buf(AL_REPORT_TAP, noplan, sizeof(noplan) - 1, &o);
	counts(&o, 2, 2, 0, 0, 0);
	assert_non_null(strstr(o.error, "no plan"));
	al_report_out_release(&o);
	/* a time no test takes is none (UBSan found 1e308's cast) */
	parse_buf(AL_REPORT_TAP, yaml, sizeof(yaml) - 1, &o);
	counts(&o, 2, 2, 0, 0, 0);
	assert_int_equal(o.tests[0].time_ms, 0);
	assert_int_equal(o.tests[1].time_ms, 0);
	al_report_out_release(&o);
	parse_buf(AL_REPORT_TAP, junk, sizeof(junk) - 1, &o);
	counts(&o, 0, 0, 0, 0, 0);
	assert_non_null(strstr(o.error, "no TAP plan or test line"));
	al_report_out_release(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pytest),
	    cmocka_unit_test(test_ctest),
	    cmocka_unit_test(test_surefire),
	    cmocka_unit_test(test_jest),
	    cmocka_unit_test(test_perl_tap),
	    cmocka_unit_test(test_node_tap),
	    cmocka_unit_test(test_entities_refused),
	    cmocka_unit_test(test_deep_nesting),
	    cmocka_unit_test(test_huge_attribute),
	    cmocka_unit_test(test_invalid_utf8),
	    cmocka_unit_test(test_truncated),
	    cmocka_unit_test(test_caps),
	    cmocka_unit_test(test_tap_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
