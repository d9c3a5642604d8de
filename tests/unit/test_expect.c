/* test_expect.c: output comparison modes (results/expect.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "results.h"

static bool match(enum al_compare mode, const char *want, const char *got)
{
	struct al_expect e = {.present = true, .compare = mode};
	struct al_blob out = {(uint8_t *)got, strlen(got)};

	e.stdout_.data = (uint8_t *)want;
	e.stdout_.len = strlen(want);
	return al_expect_match(&e, &out);
}

static void test_exact(void **state)
{
	(void)state;
	assert_true(match(AL_COMPARE_EXACT, "42\n", "42\n"));
	assert_true(match(AL_COMPARE_EXACT, "", ""));
	assert_false(match(AL_COMPARE_EXACT, "42\n", "42"));
	assert_false(match(AL_COMPARE_EXACT, "42", "42 "));
	assert_false(match(AL_COMPARE_EXACT, "a", "b"));
}

static void test_trim(void **state)
{
	(void)state;
	assert_true(match(AL_COMPARE_TRIM, "42", "  42\n\n"));
	assert_true(match(AL_COMPARE_TRIM, "\t42 \r\n", "42"));
	assert_true(match(AL_COMPARE_TRIM, "", " \n "));
	assert_false(match(AL_COMPARE_TRIM, "4 2", "42"));
	assert_false(match(AL_COMPARE_TRIM, "a\nb", "a\n\nb"));
}

static void test_lines(void **state)
{
	(void)state;
	assert_true(match(AL_COMPARE_LINES, "a\nb", "a  \nb\t\n"));
	assert_true(match(AL_COMPARE_LINES, "a\nb\n", "a\r\nb\r\n\n\n"));
	assert_true(match(AL_COMPARE_LINES, "", "\n\n"));
	assert_false(match(AL_COMPARE_LINES, "a\nb", "a\n\nb"));
	assert_false(match(AL_COMPARE_LINES, " a", "a"));
	assert_false(match(AL_COMPARE_LINES, "a\nb", "a"));
	assert_false(match(AL_COMPARE_LINES, "a", "a\nb"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact),
		cmocka_unit_test(test_trim),
		cmocka_unit_test(test_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
