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

static void test_tokens(void **state)
{
	(void)state;
	assert_true(match(AL_COMPARE_TOKENS, "1 2 3", "1\n2\t3\n"));
	assert_true(match(AL_COMPARE_TOKENS, "", " \n"));
	assert_true(match(AL_COMPARE_TOKENS, "héllo wörld", "héllo  wörld"));
	assert_false(match(AL_COMPARE_TOKENS, "1 2 3", "1 23"));
	assert_false(match(AL_COMPARE_TOKENS, "1 2", "1 2 3"));
	assert_false(match(AL_COMPARE_TOKENS, "1.0", "1"));
}

static bool near(const char *want, const char *got, double abs_tol,
		 double rel_tol)
{
	struct al_expect e = {.present = true,
			      .compare = AL_COMPARE_NUMBERS,
			      .abs_tol = abs_tol,
			      .rel_tol = rel_tol};
	struct al_blob out = {(uint8_t *)got, strlen(got)};

	e.stdout_.data = (uint8_t *)want;
	e.stdout_.len = strlen(want);
	return al_expect_match(&e, &out);
}

static void test_numbers(void **state)
{
	(void)state;
	/* numeric equality without a tolerance */
	assert_true(near("1", "1.000", 0, 0));
	assert_true(near("0.5 x", "5e-1 x", 0, 0));
	assert_false(near("1", "1.0001", 0, 0));
	/* absolute */
	assert_true(near("0.333333", "0.3333331", 1e-6, 0));
	assert_true(near("3.14159", "3.1416", 1e-4, 0));
	assert_false(near("3.14159", "3.15", 1e-4, 0));
	/* relative: 1e6 * 1e-6 = 1 */
	assert_true(near("1000000", "1000000.9", 0, 1e-6));
	assert_false(near("1000000", "1000002", 0, 1e-6));
	/* words still compare as bytes; NaN, inf and hex are no numbers */
	assert_true(near("YES 1.5", "YES 1.50", 0, 0));
	assert_false(near("YES 1.5", "NO 1.5", 1, 1));
	assert_false(near("1", "nan", 1e9, 1e9));
	assert_false(near("1", "inf", 1e9, 1e9));
	assert_false(near("16", "0x10", 0, 0));
	assert_false(near("1 2", "1", 1, 1));
	/* a token longer than any number compares as bytes */
	assert_false(near("1", "1.00000000000000000000000000000000000000000"
			       "0000000000000000000000000000000",
			  0, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact),
		cmocka_unit_test(test_trim),
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_tokens),
		cmocka_unit_test(test_numbers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
