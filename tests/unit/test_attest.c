/* test_attest.c: attested steps (results/attest.c): the token line before
 * stdin, and the one last line the host believes. */
#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "results.h"

#define TOKEN "0123456789abcdef0123456789abcdef"

static void test_stdin(void **state)
{
	struct al_blob in = {(uint8_t *)"x\0y", 3}, out = {0};

	(void)state;
	assert_int_equal(al_attest_stdin(TOKEN, &in, &out), 0);
	assert_int_equal(out.len, 32 + 1 + 3);
	assert_memory_equal(out.data, TOKEN "\nx\0y", out.len);
	free(out.data);
	assert_int_equal(al_attest_stdin(TOKEN, NULL, &out), 0);
	assert_int_equal(out.len, 33);
	free(out.data);
	assert_int_equal(al_attest_stdin("", NULL, &out), -EINVAL);
}

/* Verify `out` as a step's stdout; returns the tristate, and the stdout
 * left in `left`. */
static enum al_tristate verify(const char *out, bool truncated,
			       char *left, size_t size)
{
	struct al_step_result sr = {0};
	enum al_tristate t;

	sr.stdout_.len = strlen(out);
	sr.stdout_.data = (uint8_t *)strdup(out);
	sr.stdout_truncated = truncated;
	al_attest_verify(TOKEN, &sr);
	snprintf(left, size, "%s", (char *)sr.stdout_.data);
	t = sr.attested;
	free(sr.stdout_.data);
	return t;
}

static void test_verify(void **state)
{
	char left[256];

	(void)state;
	assert_int_equal(verify(TOKEN " {\"result\": \"passed\"}\n", false,
				left, sizeof(left)),
			 AL_TRUE);
	assert_string_equal(left, "{\"result\": \"passed\"}\n");
	/* earlier lines are the job's; only the last is the runner's */
	assert_int_equal(verify("noise\n" TOKEN " ok", false, left,
				sizeof(left)),
			 AL_TRUE);
	assert_string_equal(left, "noise\nok");
	assert_int_equal(verify(TOKEN "\n", false, left, sizeof(left)),
			 AL_TRUE);
	/* a token line followed by anything is not the last line */
	assert_int_equal(verify(TOKEN " passed\nmore\n", false, left,
				sizeof(left)),
			 AL_FALSE);
	assert_string_equal(left, TOKEN " passed\nmore\n");
	/* a guess, a prefix, a longer word, a cut stdout: not attested */
	assert_int_equal(verify("passed\n", false, left, sizeof(left)),
			 AL_FALSE);
	assert_int_equal(verify("0123456789abcdef passed\n", false, left,
				sizeof(left)),
			 AL_FALSE);
	assert_int_equal(verify(TOKEN "0 passed\n", false, left,
				sizeof(left)),
			 AL_FALSE);
	assert_int_equal(verify(TOKEN " passed\n", true, left, sizeof(left)),
			 AL_FALSE);
	assert_int_equal(verify("", false, left, sizeof(left)), AL_FALSE);
}

/* The guest can never say a step was attested or matched. */
static void test_from_guest(void **state)
{
	struct al_step_result sr = {0};

	(void)state;
	sr.status = AL_OK;
	sr.attested = AL_TRUE;
	sr.expect_ok = AL_TRUE;
	assert_int_equal(al_step_result_from_guest(&sr), 0);
	assert_int_equal(sr.attested, AL_UNSET);
	assert_int_equal(sr.expect_ok, AL_UNSET);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stdin),
	    cmocka_unit_test(test_verify),
	    cmocka_unit_test(test_from_guest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
